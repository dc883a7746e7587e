/*
 * redundancy.c -- the program bench/sliding_recovery/redundancy.py runs: the sliding runtime used the way
 * an application uses it, with a state whose every word is checkable, to time checkpoints and
 * recoveries under each redundancy policy.
 *
 * Usage: redundancy [RUNTIME OPTIONS] GRID SPARES METHOD BYTES ITERATIONS PASSES
 * RUNTIME OPTIONS are sliding_create_args's (--emulate-nodes K, --checkpoint-every N, --redundancy
 * POLICY, --checkpoint-dir DIR, --file-every N, ...). Every process registers BYTES bytes (a multiple
 * of 8: 64-bit words) of state. An iteration adds, PASSES times over, a term to every word that
 * depends only on the logical rank, the word's index, the iteration and the pass: no halo, no
 * message, so that the final value of every word has a closed form (expected()) and a recovery that
 * restores a wrong checkpoint, or none, shows as words that differ. A checkpoint is taken whenever
 * sliding_checkpoint_due() says so, labelled with the iteration to resume at; the workers meet at a
 * barrier first (not timed) so that the time measured is the checkpoint's, not the wait for the
 * slowest worker's iterations. Kill points: FTSLIDE_KILL="NODE@iter=I" at the start of iteration I.
 *
 * Output on stdout, by logical rank 0 (one line each; fields KEY=VALUE):
 *   redundancy: checkpoint version=V seconds=S bytes_max=X bytes_min=Y state=B
 *       every committed checkpoint: the longest time any worker spent in sliding_checkpoint, and
 *       the most and least sliding_redundancy_bytes over the workers after it
 *   redundancy: recovered iteration=I ... total_ms=...  sliding_report_recovery's line (rank 0's view)
 *   redundancy: recovery_max total_ms=T state_ms=S     the longest recovery and state phase over the
 *                                                      workers (sliding_last_recovery)
 *   redundancy: loop iterations=N seconds=S            failure-free runs: wall time of the whole loop,
 *                                                      barrier to barrier, checkpoints included
 *   redundancy: done iterations=N checksum=0x... wrong=W valid=yes|no
 * (checksum: the sum of every word of every rank, mod 2^64; wrong: words that differ from the
 * closed form). Errors on stderr: "redundancy: error step=... status=... message=...".
 * With REDUNDANCY_FILE_PAIRS=N and REDUNDANCY_FILE_DIR=DIR in the environment the program runs 2N
 * failure-free jobs in a row in the same processes (file_pairs()), without and with --checkpoint-dir
 * DIR/job-J, and the loop lines say which: "redundancy: loop arm=off|on iterations=N seconds=S".
 * Exit status: 0 valid, 4 not valid, 3 a runtime error, 2 bad arguments.
 */
#include <inttypes.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sliding.h"

#define PROGRAM "redundancy"
#define RANK_FACTOR UINT64_C(0x9E3779B97F4A7C15)
#define INDEX_FACTOR UINT64_C(0xBF58476D1CE4E5B9)
#define ITERATION_FACTOR UINT64_C(0x94D049BB133111EB)

/* Word i of logical rank r before the first iteration. */
static uint64_t initial(int rank, size_t i)
{
    return ((uint64_t)rank << 40) ^ (uint64_t)i;
}

/* What iteration `it` adds to word i of rank r in pass p. */
static uint64_t term(int rank, size_t i, int it, int p)
{
    return (uint64_t)rank * RANK_FACTOR + (uint64_t)i * INDEX_FACTOR + (uint64_t)it * ITERATION_FACTOR + (uint64_t)p;
}

/* Word i of rank r after n iterations of `passes` passes: the sum of term() over it < n and p < passes,
 * in closed form (unsigned arithmetic wraps mod 2^64 the same way the additions do). */
static uint64_t expected(int rank, size_t i, int n, int passes)
{
    uint64_t nn = (uint64_t)n, pp = (uint64_t)passes;
    uint64_t base = (uint64_t)rank * RANK_FACTOR + (uint64_t)i * INDEX_FACTOR;
    uint64_t iterations_sum = nn % 2 == 0 ? nn / 2 * (nn - 1) : (nn - 1) / 2 * nn; /* n(n-1)/2 */
    uint64_t passes_sum = pp % 2 == 0 ? pp / 2 * (pp - 1) : (pp - 1) / 2 * pp;
    return initial(rank, i) + nn * pp * base + pp * ITERATION_FACTOR * iterations_sum + nn * passes_sum;
}

static void iterate(uint64_t *x, size_t words, int rank, int it, int passes)
{
    for (int p = 0; p < passes; p++) {
        for (size_t i = 0; i < words; i++) {
            x[i] += term(rank, i, it, p);
        }
    }
}

/* A whole number from 1 to `most`, else -1. */
static long number(const char *text, long most)
{
    char *end;
    long value = strtol(text, &end, 10);
    return end != text && *end == '\0' && value >= 1 && value <= most ? value : -1;
}

static void refuse(const char *message)
{
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) fprintf(stderr, PROGRAM ": error step=arguments message=%s\n", message);
    MPI_Finalize();
    exit(2);
}

static void fail(sliding_t *s, const char *step, int status)
{
    sliding_report_error(s, PROGRAM, step, status);
    sliding_free(s);
    MPI_Finalize();
    exit(s ? 3 : 2);
}

/* One job: create the runtime from argv, run the iterations (recovering as often as needed), validate,
 * free. `arm` labels the loop line (NULL: none). Returns the exit status (0 valid, 4 not). */
static int run_job(int argc, char **argv, const char *arm)
{
    sliding_t *s = NULL;
    int rc = sliding_create_args(MPI_COMM_WORLD, &argc, &argv, &s);
    if (rc != SLIDING_OK) fail(s, rc == SLIDING_ERR_ARG ? "arguments" : "create", rc);
    if (argc != 4) refuse("usage: redundancy [OPTIONS] GRID SPARES METHOD BYTES ITERATIONS PASSES");
    long bytes = number(argv[1], 1L << 30), iterations = number(argv[2], 1000000), passes = number(argv[3], 1000);
    if (bytes < 0 || bytes % 8 != 0 || iterations < 0 || passes < 0) {
        refuse("BYTES (a multiple of 8 up to 1 GiB), ITERATIONS and PASSES must be whole numbers of at least 1");
    }
    size_t words = (size_t)bytes / 8;
    uint64_t *x = malloc((size_t)bytes);
    if (!x) refuse("cannot allocate BYTES");
    memset(x, 0, (size_t)bytes);
    sliding_register(s, x, (size_t)bytes);

    MPI_Comm cart;
    int role, status = 0;
    int recovered; /* whether this worker comes from a recovery (INITIAL also means a survivor never moved) */
    int64_t version;
    if ((rc = sliding_start(s, &cart, &role, &version)) != SLIDING_OK) fail(s, "start", rc);
    recovered = role == SLIDING_PROMOTED;
resume: /* and after every recovery: x holds checkpoint 'version' of the rank held now */
    if (role == SLIDING_FINISHED) goto finished;
    int rank = sliding_rank(s), it = version < 0 ? 0 : (int)version;
    if (version < 0) {
        for (size_t i = 0; i < words; i++) x[i] = initial(rank, i);
    }
    sliding_report_recovery(s, PROGRAM, it);
    if (recovered) { /* every worker after a recovery: the longest one */
        sliding_recovery_times times;
        sliding_last_recovery(s, &times);
        double local[2] = {times.total, times.state}, longest[2];
        if (MPI_Allreduce(local, longest, 2, MPI_DOUBLE, MPI_MAX, cart) == MPI_SUCCESS && rank == 0) {
            printf(PROGRAM ": recovery_max total_ms=%.3f state_ms=%.3f\n", longest[0] * 1e3, longest[1] * 1e3);
            fflush(stdout);
        }
    }
    MPI_Barrier(cart);
    double loop_start = MPI_Wtime();
    while (it < iterations && sliding_ok(s)) {
        sliding_killpointf(s, "iter=%d", it);
        iterate(x, words, rank, it, (int)passes);
        it++;
        if (!sliding_checkpoint_due(s, it)) continue;
        MPI_Barrier(cart);
        double start = MPI_Wtime();
        rc = sliding_checkpoint(s, it);
        double local = MPI_Wtime() - start;
        if (rc != SLIDING_OK) break; /* sliding_ok() is 0 now: recover below */
        /* the longest time and the most and least redundancy bytes (below 2^53: exact as doubles) */
        double mine[3] = {local, (double)sliding_redundancy_bytes(s), -(double)sliding_redundancy_bytes(s)}, most[3];
        int reduced = MPI_Allreduce(mine, most, 3, MPI_DOUBLE, MPI_MAX, cart);
        if (rank == 0 && reduced == MPI_SUCCESS) {
            printf(PROGRAM ": checkpoint version=%d seconds=%.6f bytes_max=%.0f bytes_min=%.0f state=%ld\n", it, most[0],
                   most[1], -most[2], bytes);
            fflush(stdout);
        }
        /* No worker passes this barrier before rank 0 has its reduction: a victim killed a few iterations
         * later cannot revoke that reduction at a slow rank 0 (np 20 on 2 cores) and lose the line. */
        MPI_Barrier(cart);
    }
    MPI_Barrier(cart);
    if (!recovered && rank == 0 && sliding_ok(s)) {
        printf(PROGRAM ": loop%s%s iterations=%ld seconds=%.6f\n", arm ? " arm=" : "", arm ? arm : "", iterations,
               MPI_Wtime() - loop_start);
        fflush(stdout);
    }
    /* Every word against its closed form; the sums of every rank's words and wrong words at rank 0. */
    unsigned long long local[2] = {0, 0}, total[2] = {0, 0};
    for (size_t i = 0; i < words; i++) {
        local[0] += x[i];
        local[1] += x[i] != expected(rank, i, (int)iterations, (int)passes);
    }
    MPI_Reduce(local, total, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, cart);
    if (sliding_finish(s) != SLIDING_OK) {
        if ((rc = sliding_recover(s, &cart, &role, &version)) != SLIDING_OK) fail(s, "recovery", rc);
        recovered = 1;
        goto resume;
    }
    if (rank == 0) {
        printf(PROGRAM ": done iterations=%ld checksum=0x%016llx wrong=%llu valid=%s\n", iterations, total[0], total[1],
               total[1] ? "no" : "yes");
        fflush(stdout);
        status = total[1] ? 4 : 0;
    }
finished:
    sliding_free(s);
    free(x);
    return status;
}

/* REDUNDANCY_FILE_PAIRS=N and REDUNDANCY_FILE_DIR=DIR: 2N failure-free jobs one after the other in the
 * same processes, alternately without and with the file level (--checkpoint-dir DIR/job-J, a fresh
 * directory each), the order swapped every other pair: the pairs meet the same load. */
static int file_pairs(int argc, char **argv, int pairs, const char *dir)
{
    char **args = malloc(sizeof(char *) * (size_t)(argc + 3)), option[] = "--checkpoint-dir", path[4096];
    int status = 0;
    for (int job = 0; job < 2 * pairs && status == 0; job++) {
        int with_dir = (job / 2) % 2 == 0 ? job % 2 == 1 : job % 2 == 0, n = 0;
        args[n++] = argv[0];
        if (with_dir) {
            snprintf(path, sizeof path, "%s/job-%d", dir, job);
            args[n++] = option;
            args[n++] = path;
        }
        for (int i = 1; i < argc; i++) args[n++] = argv[i];
        args[n] = NULL;
        status = run_job(n, args, with_dir ? "on" : "off");
    }
    free(args);
    return status;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    const char *pairs = getenv("REDUNDANCY_FILE_PAIRS"), *dir = getenv("REDUNDANCY_FILE_DIR");
    int status;
    if (pairs && dir) {
        long count = number(pairs, 1000);
        if (count < 0) refuse("REDUNDANCY_FILE_PAIRS must be a whole number from 1 to 1000");
        status = file_pairs(argc, argv, (int)count, dir);
    } else {
        status = run_job(argc, argv, NULL);
    }
    MPI_Finalize();
    return status;
}
