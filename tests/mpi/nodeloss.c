/*
 * nodeloss: a loop of collectives that survives the loss of whole nodes.
 *
 *     nodeloss ITERATIONS_AFTER_RECOVERY
 *
 * Every rank runs MPI_Allreduce in a loop on a dup of MPI_COMM_WORLD. Rank 0
 * reports "loop=running" once the loop is going (the test kills nodes after
 * that line). The first error ends the loop: the rank reports its error class,
 * revokes, shrinks, and reports which world ranks the shrink left out. The
 * survivors then run ITERATIONS_AFTER_RECOVERY more allreduces on the shrunk
 * communicator, check the sum, and finalize. "error_at" is the wall-clock time
 * (CLOCK_REALTIME) at which the first error returned, for the kill-to-error
 * benchmark (bench/nodeloss). Without a failure the loop gives
 * up after 60 s and reports "error=NONE".
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ftcheck.h"

static double clock_seconds(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* World ranks of `comm` that are not in `survivors`, as "1,5" (or "none"). */
static void report_left_out(MPI_Comm comm, MPI_Comm survivors)
{
    MPI_Group all, alive, gone;
    int n, ranks[4096], world[4096];
    char text[8192] = "";
    MPI_Group world_group;

    MPI_Comm_group(comm, &all);
    MPI_Comm_group(survivors, &alive);
    MPI_Group_difference(all, alive, &gone);
    MPI_Group_size(gone, &n);
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    for (int i = 0; i < n && i < 4096; i++) {
        ranks[i] = i;
    }
    MPI_Group_translate_ranks(gone, n, ranks, world_group, world);
    for (int i = 0; i < n && i < 4096; i++) {
        size_t len = strlen(text);
        snprintf(text + len, sizeof text - len, "%s%d", i ? "," : "", world[i]);
    }
    FTCHECK("left_out", "%s", n ? text : "none");
    MPI_Group_free(&all);
    MPI_Group_free(&alive);
    MPI_Group_free(&gone);
    MPI_Group_free(&world_group);
}

int main(int argc, char **argv)
{
    int after = argc > 1 ? atoi(argv[1]) : 20;
    int rank, rc = MPI_SUCCESS, iteration = 0, value, sum, size;
    MPI_Comm comm, survivors;
    double start;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    comm = ftcheck_dup_world();

    start = clock_seconds(CLOCK_MONOTONIC);
    while (clock_seconds(CLOCK_MONOTONIC) - start < 60.0) {
        value = 1;
        rc = MPI_Allreduce(&value, &sum, 1, MPI_INT, MPI_SUM, comm);
        if (rc != MPI_SUCCESS) {
            break;
        }
        if (++iteration == 50 && rank == 0) {
            FTCHECK("loop", "%s", "running");
        }
        usleep(2000);
    }
    if (rc == MPI_SUCCESS) {
        FTCHECK("error", "%s", "NONE");
        MPI_Finalize();
        return 1;
    }
    FTCHECK("error_at", "%.6f", clock_seconds(CLOCK_REALTIME)); /* wall clock: same host as the killer */
    FTCHECK_RC("error", rc);
    MPIX_Comm_revoke(comm);
    rc = MPIX_Comm_shrink(comm, &survivors);
    FTCHECK_RC("shrink", rc);
    if (rc != MPI_SUCCESS) {
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm_set_errhandler(survivors, MPI_ERRORS_RETURN);
    MPI_Comm_size(survivors, &size);
    FTCHECK("survivors", "%d", size);
    report_left_out(comm, survivors);

    for (int i = 0; i < after; i++) {
        value = 1;
        rc = MPI_Allreduce(&value, &sum, 1, MPI_INT, MPI_SUM, survivors);
        if (rc != MPI_SUCCESS || sum != size) {
            FTCHECK_RC("after", rc);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
    }
    FTCHECK("after", "%s", "ok");
    MPI_Comm_free(&survivors);
    MPI_Comm_free(&comm);
    MPI_Finalize();
    printf("ftcheck rank=%d finalized=1\n", rank); /* no MPI call after finalize */
    fflush(stdout);
    return 0;
}
