/*
 * MPIX_Comm_replace of the ULFM tutorials: replace the dead with new
 * processes that take their ranks, and retry the replacement when a process
 * dies in the middle of it.
 *
 * The work is ITERS iterations on a dup of MPI_COMM_WORLD whose errors are
 * returned: an MPI_Allreduce (SUM) of (rank + 1) * (K + 1) and a ring
 * exchange (MPI_Sendrecv of the rank and K to the right, from the left).
 * A rank whose call fails revokes the communicator; then everybody calls
 * MPIX_Comm_agree on "all my iterations worked", so that a rank that
 * finished and one that failed take the same branch. If the agreement
 * fails or says no, the survivors call replace(), written as users write
 * MPIX_Comm_replace; it tries again until one attempt works everywhere:
 *  1. MPIX_Comm_shrink of the broken communicator (the same broken one at
 *     every attempt: a survivor that died during an attempt is left out of
 *     the next); the dead are the ranks it lacks, and every survivor lists
 *     them in the same order;
 *  2. MPI_Comm_spawn of one new process per dead rank (this binary, with
 *     the argument "spawned" and the repair and attempt numbers), then
 *     MPIX_Comm_agree on the shrunk communicator that the spawn worked at
 *     every survivor; if not: revoke and free the intercommunicator, again;
 *  3. MPI_Intercomm_merge (survivors low, new processes high);
 *  4. on the merged communicator, an MPI_Bcast of the dead ranks from the
 *     survivors' first rank (the I-th new process takes the I-th dead rank)
 *     and MPI_Comm_split with key = the rank each process must hold, so that
 *     the survivors keep their ranks and the new processes take the dead
 *     ones'; a process whose step failed revokes the merged communicator;
 *  5. MPIX_Comm_agree on the merged communicator, new processes included,
 *     that steps 3-4 worked everywhere; if not, the survivors free what the
 *     attempt made and try again, and the new processes of that attempt
 *     leave (MPI_Finalize, a line on stderr).
 * After a replacement everybody checks that rank R is held by the process
 * that should hold R, agrees where to restart (MPI_Allreduce MIN of the
 * first unfinished iteration; a new process gives INT_MAX) and goes on from
 * there. A death in the middle of step 3 itself is not covered: the
 * processes whose merge failed could not join step 5 (the tutorial agrees
 * on the intercommunicator for that, which this program does not use).
 *
 * Checks at every process: each Allreduce gives np (np + 1) / 2 * (K + 1)
 * and each ring message holds the left neighbour's rank and K, which hold
 * only if all np ranks are there, each held by the right process; after a
 * replacement the communicator has np processes, rank R held by the process
 * that should hold R; a failed call failed with MPIX_ERR_PROC_FAILED,
 * MPIX_ERR_REVOKED or MPIX_ERR_PROC_FAILED_PENDING. A closing MPI_Allreduce
 * collects every process's own verdict, so the originals' outcome covers
 * the new processes' checks too, and counts originals (survivors=N) and
 * new processes (replacements).
 *
 * Reports: a new process's MPI_COMM_WORLD is its own spawned job, so it
 * reports as "ftcheck rank=R" with R the rank it took over, printed by
 * REPORT, not FTCHECK. Keys: role (original or replacement), repairs
 * (replacements this process took part in), attempts (replace attempts,
 * the same at every original: retries are agreed), restarts (iterations
 * redone), survivors, replacements, outcome (why).
 *
 * Kill points, each reached at most once by a process:
 *   "iter=K"           at the start of iteration K, originals only;
 *   "replace=R.spawn"  at an original, in repair R (from 1), just before
 *                      MPI_Comm_spawn of its first attempt that gets there;
 *   "replace=R.join"   at an original, in repair R, after the merge, before
 *                      step 4;
 *   "spawnee=R.A"      at every new process of attempt A of repair R, after
 *                      the merge, before step 4; it names itself as rank
 *                      np + I (I its rank in its own spawned job), a number
 *                      no original has.
 *
 * Spawning needs room for the new processes: run with oversubscription
 * allowed on one node (PRTE_MCA_rmaps_default_mapping_policy=:oversubscribe).
 *
 * usage: replace_respawn [ITERS]     (default 12; a new process is started as
 *        "replace_respawn ITERS spawned NP REPAIR ATTEMPT")
 */
#define _POSIX_C_SOURCE 200809L /* readlink */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ftcheck.h"

static int g_me = -1;      /* the rank this process holds in the application */
static int g_replacement;  /* 1 in a spawned process */
static char g_exe[4096];   /* this binary, for MPI_Comm_spawn */

/* FTCHECK, under the rank this process holds (a new process's world rank says nothing). */
#define REPORT(key, fmt, ...)                                                    \
    do {                                                                         \
        printf("ftcheck rank=%d " key "=" fmt "\n", g_me, __VA_ARGS__);          \
        fflush(stdout);                                                          \
    } while (0)

static int is_failure(int rc)
{
    int eclass;
    MPI_Error_class(rc, &eclass);
    return eclass == MPIX_ERR_PROC_FAILED || eclass == MPIX_ERR_REVOKED || eclass == MPIX_ERR_PROC_FAILED_PENDING;
}

/* Step 4, on the merged communicator: the new processes learn the ranks
 * they take (DEAD, ND entries, sent by the survivors' first rank), then the
 * split puts every process at its rank. */
static int join(MPI_Comm merged, int nd, int *dead, MPI_Comm *joined)
{
    int rc = MPI_Bcast(dead, nd, MPI_INT, 0, merged);
    if (rc != MPI_SUCCESS) return rc;
    if (g_replacement && g_me < 0) {
        int index;
        MPI_Comm_rank(MPI_COMM_WORLD, &index);
        g_me = dead[index];
    }
    /* a failed split leaves its output undefined (Open MPI hands back a
     * communicator it never finished): keep MPI_COMM_NULL then */
    MPI_Comm made;
    rc = MPI_Comm_split(merged, 0, g_me, &made);
    if (rc == MPI_SUCCESS) {
        MPI_Comm_set_errhandler(made, MPI_ERRORS_RETURN);
        *joined = made;
    }
    return rc;
}

/* The survivors' side of the replacement of COMM's dead (repair REPAIR):
 * returns MPI_SUCCESS with *replaced holding np processes, or the error of
 * a shrink (nothing else ends the retries but running out of them). */
static int replace(MPI_Comm comm, int iters, int repair, MPI_Comm *replaced, int *attempts)
{
    int nc, rc = MPI_ERR_OTHER;
    MPI_Comm_size(comm, &nc);
    int *dead = malloc(sizeof(int) * (size_t)nc);
    for (int attempt = 1; attempt <= nc + 1; attempt++) {
        (*attempts)++;
        MPI_Comm shrunk, inter, merged, joined = MPI_COMM_NULL;
        rc = MPIX_Comm_shrink(comm, &shrunk);
        if (rc != MPI_SUCCESS) break;
        MPI_Comm_set_errhandler(shrunk, MPI_ERRORS_RETURN);
        int ns, nd = 0;
        MPI_Comm_size(shrunk, &ns);
        if (ns == nc) { /* nobody dead: the shrunk copy will do */
            *replaced = shrunk;
            free(dead);
            return MPI_SUCCESS;
        }
        MPI_Group old_group, new_group;
        MPI_Comm_group(comm, &old_group);
        MPI_Comm_group(shrunk, &new_group);
        for (int r = 0; r < nc; r++) {
            int there;
            MPI_Group_translate_ranks(old_group, 1, &r, new_group, &there);
            if (there == MPI_UNDEFINED) dead[nd++] = r;
        }
        MPI_Group_free(&old_group);
        MPI_Group_free(&new_group);

        /* 2. spawn the missing processes; every survivor learns whether that worked everywhere */
        char iters_arg[16], np_arg[16], repair_arg[16], attempt_arg[16];
        snprintf(iters_arg, sizeof iters_arg, "%d", iters);
        snprintf(np_arg, sizeof np_arg, "%d", nc);
        snprintf(repair_arg, sizeof repair_arg, "%d", repair);
        snprintf(attempt_arg, sizeof attempt_arg, "%d", attempt);
        char *args[] = {iters_arg, "spawned", np_arg, repair_arg, attempt_arg, NULL};
        int *codes = malloc(sizeof(int) * (size_t)nd);
        if (!g_replacement) ftslide_killpointf(g_me, "replace=%d.spawn", repair);
        rc = MPI_Comm_spawn(g_exe, args, nd, MPI_INFO_NULL, 0, shrunk, &inter, codes);
        int spawned = rc == MPI_SUCCESS, flag = spawned;
        for (int i = 0; flag && i < nd; i++) flag = codes[i] == MPI_SUCCESS;
        free(codes);
        rc = MPIX_Comm_agree(shrunk, &flag);
        if (rc != MPI_SUCCESS || !flag) {
            if (spawned) {
                MPIX_Comm_revoke(inter);
                MPI_Comm_free(&inter);
            }
            MPI_Comm_free(&shrunk);
            continue;
        }
        MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);

        /* 3. merge, survivors first */
        rc = MPI_Intercomm_merge(inter, 0, &merged);
        if (rc != MPI_SUCCESS) {
            MPIX_Comm_revoke(inter);
            MPI_Comm_free(&inter);
            MPI_Comm_free(&shrunk);
            continue;
        }
        MPI_Comm_set_errhandler(merged, MPI_ERRORS_RETURN);
        if (!g_replacement) ftslide_killpointf(g_me, "replace=%d.join", repair);

        /* 4. the new processes take the dead ranks; 5. everyone learns whether that worked everywhere */
        rc = join(merged, nd, dead, &joined);
        flag = rc == MPI_SUCCESS;
        if (!flag) MPIX_Comm_revoke(merged);
        rc = MPIX_Comm_agree(merged, &flag);
        MPI_Comm_free(&merged);
        MPI_Comm_free(&inter);
        MPI_Comm_free(&shrunk);
        if (rc == MPI_SUCCESS && flag) {
            *replaced = joined;
            free(dead);
            return MPI_SUCCESS;
        }
        if (joined != MPI_COMM_NULL) MPI_Comm_free(&joined);
        rc = MPI_ERR_OTHER;
    }
    free(dead);
    return rc;
}

/* A new process's side of steps 3-5. Returns MPI_SUCCESS with *comm the
 * replaced communicator, or an error: this attempt was given up. */
static int arrive(int np, int repair, int attempt, MPI_Comm *comm)
{
    MPI_Comm parent, merged, joined = MPI_COMM_NULL;
    MPI_Comm_get_parent(&parent);
    if (parent == MPI_COMM_NULL) return MPI_ERR_OTHER;
    MPI_Comm_set_errhandler(parent, MPI_ERRORS_RETURN);
    int rc = MPI_Intercomm_merge(parent, 1, &merged);
    if (rc != MPI_SUCCESS) {
        MPI_Comm_free(&parent);
        return rc;
    }
    MPI_Comm_set_errhandler(merged, MPI_ERRORS_RETURN);
    int nd, index;
    MPI_Comm_size(MPI_COMM_WORLD, &nd);
    MPI_Comm_rank(MPI_COMM_WORLD, &index);
    ftslide_killpointf(np + index, "spawnee=%d.%d", repair, attempt);
    int *dead = malloc(sizeof(int) * (size_t)nd);
    rc = join(merged, nd, dead, &joined);
    free(dead);
    int flag = rc == MPI_SUCCESS;
    if (!flag) MPIX_Comm_revoke(merged);
    rc = MPIX_Comm_agree(merged, &flag);
    MPI_Comm_free(&merged);
    MPI_Comm_free(&parent);
    if (rc == MPI_SUCCESS && flag) {
        *comm = joined;
        return MPI_SUCCESS;
    }
    if (joined != MPI_COMM_NULL) MPI_Comm_free(&joined);
    return rc != MPI_SUCCESS ? rc : MPI_ERR_OTHER;
}

/* Rank R must be held by the process that should hold R: a table of
 * everyone's rank, reduced, seen alike by everyone. */
static int check_ranks(MPI_Comm comm, int np, const char **why)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int *table = malloc(sizeof(int) * (size_t)np), *all = malloc(sizeof(int) * (size_t)np);
    for (int i = 0; i < np; i++) table[i] = -1;
    if (rank < np) table[rank] = g_me;
    int rc = MPI_Allreduce(table, all, np, MPI_INT, MPI_MAX, comm);
    if (rc == MPI_SUCCESS) {
        if (size != np && *why == NULL) *why = "the replaced communicator does not have np processes";
        for (int i = 0; i < np; i++) {
            if (all[i] != i && *why == NULL)
                *why = "a rank is missing or held by the wrong process after the replacement";
        }
    }
    free(table);
    free(all);
    return rc;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int iters = argc > 1 ? atoi(argv[1]) : 12;
    if (iters < 1) iters = 1;
    g_replacement = argc > 5 && strcmp(argv[2], "spawned") == 0;
    ssize_t len = readlink("/proc/self/exe", g_exe, sizeof g_exe - 1);
    if (len > 0) g_exe[len] = '\0';
    else snprintf(g_exe, sizeof g_exe, "%s", argv[0]);

    const char *why = NULL;
    int np, next = 0, restarts = 0, repairs = 0, attempts = 0, rc = MPI_SUCCESS, synced = 1;
    MPI_Comm comm;
    if (!g_replacement) {
        comm = ftcheck_dup_world();
        MPI_Comm_rank(comm, &g_me);
        MPI_Comm_size(comm, &np);
        FTCHECK("role", "%s", "original");
    } else {
        np = atoi(argv[3]);
        rc = arrive(np, atoi(argv[4]), atoi(argv[5]), &comm);
        if (rc != MPI_SUCCESS) {
            /* this attempt was given up: nobody to report to as a rank */
            int index;
            MPI_Comm_rank(MPI_COMM_WORLD, &index);
            fprintf(stderr, "replace_respawn: new process %d of repair %s attempt %s left (%s)\n", index, argv[4],
                    argv[5], ftcheck_class(rc));
            MPI_Finalize();
            return 0;
        }
        REPORT("role", "%s", "replacement");
        repairs = atoi(argv[4]); /* it joined in that repair: the next one has the next number everywhere */
        next = INT_MAX;
        synced = 0;
    }

    int highest = 0, done = 0;
    const long long unit = (long long)np * (np + 1) / 2;
    while (!done) {
        rc = MPI_SUCCESS;
        if (!synced) { /* after a replacement: check the ranks, agree where to restart */
            rc = check_ranks(comm, np, &why);
            int restart = next;
            if (rc == MPI_SUCCESS) rc = MPI_Allreduce(&next, &restart, 1, MPI_INT, MPI_MIN, comm);
            if (rc == MPI_SUCCESS) {
                next = restart;
                synced = 1;
            }
        }
        for (; rc == MPI_SUCCESS && next < iters; next++) {
            if (!g_replacement) ftslide_killpointf(g_me, "iter=%d", next);
            if (next < highest) restarts++;
            else highest = next + 1;
            long long mine = (long long)(g_me + 1) * (next + 1), sum = 0;
            rc = MPI_Allreduce(&mine, &sum, 1, MPI_LONG_LONG, MPI_SUM, comm);
            if (rc != MPI_SUCCESS) break;
            if (sum != unit * (next + 1) && why == NULL)
                why = "wrong sum: a rank is missing or held by the wrong process";
            int out[2] = {g_me, next}, in[2] = {-1, -1};
            rc = MPI_Sendrecv(out, 2, MPI_INT, (g_me + 1) % np, next, in, 2, MPI_INT, (g_me + np - 1) % np, next, comm,
                              MPI_STATUS_IGNORE);
            if (rc != MPI_SUCCESS) break;
            if ((in[0] != (g_me + np - 1) % np || in[1] != next) && why == NULL)
                why = "a ring message not from the left neighbour's rank";
        }
        int flag = rc == MPI_SUCCESS;
        if (!flag) {
            if (!is_failure(rc) && why == NULL) why = "an error that is not a failure";
            MPIX_Comm_revoke(comm);
        }
        rc = MPIX_Comm_agree(comm, &flag);
        if (rc == MPI_SUCCESS && flag) {
            done = 1;
            break;
        }
        MPI_Comm replaced = MPI_COMM_NULL;
        rc = replace(comm, iters, repairs + 1, &replaced, &attempts);
        if (rc != MPI_SUCCESS) {
            REPORT("replace", "%s", ftcheck_class(rc));
            if (why == NULL) why = "the replacement failed";
            break;
        }
        MPI_Comm_free(&comm);
        comm = replaced;
        repairs++;
        synced = 0;
    }

    /* everyone's verdict and the counts, on the final communicator */
    int mine[3] = {why == NULL, !g_replacement, g_replacement}, all[3] = {0, 0, 0}, worst = 0;
    if (done) {
        rc = MPI_Allreduce(&mine[1], &all[1], 2, MPI_INT, MPI_SUM, comm);
        if (rc == MPI_SUCCESS) rc = MPI_Allreduce(&mine[0], &worst, 1, MPI_INT, MPI_MIN, comm);
        if (rc != MPI_SUCCESS && why == NULL) why = "the closing Allreduce failed";
        if (rc == MPI_SUCCESS && !worst && why == NULL) why = "another process found its run wrong";
        if (rc == MPI_SUCCESS && all[1] + all[2] != np && why == NULL)
            why = "the final communicator does not hold np processes";
    }
    REPORT("repairs", "%d", repairs);
    REPORT("attempts", "%d", attempts);
    REPORT("restarts", "%d", restarts);
    REPORT("survivors", "%d", all[1]);
    REPORT("replacements", "%d", all[2]);
    if (why != NULL) REPORT("why", "%s", why);
    REPORT("outcome", "%s", why == NULL ? "ok" : "wrong");
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return 0;
}
