/*
 * survive: an iterative MPI_Allreduce that keeps going when ranks die.
 *
 * Every iteration each live rank contributes (world rank + 1). On an error the
 * survivors revoke the communicator, shrink it, agree on the iteration to resume
 * from and redo it without the dead. Each iteration's sum is checked against the
 * sum over the communicator's members, and rank 0 prints one line per recovery
 * and a final summary:
 *
 *     survive: recovered at iteration 5: 3 survivors, 412.3 us
 *     survive: done: 20 iterations, 1 recoveries, 3 survivors, checksum 1234
 *
 * Usage: survive [ITERATIONS]. Fault injection: FTSLIDE_KILL (see
 * ftslide_killpoint.h), points "iter=N" at the start of iteration N.
 */
#include <mpi.h>
#include <mpi-ext.h>
#include <stdio.h>
#include <stdlib.h>

#include "ftslide_killpoint.h"

/* Sum of (world rank + 1) over the members of comm. */
static long expected_sum(MPI_Comm comm)
{
    MPI_Group group, world_group;
    int size;
    MPI_Comm_group(comm, &group);
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    MPI_Group_size(group, &size);
    int *ranks = malloc(sizeof(int) * (size_t)size);
    int *world = malloc(sizeof(int) * (size_t)size);
    for (int i = 0; i < size; i++) {
        ranks[i] = i;
    }
    MPI_Group_translate_ranks(group, size, ranks, world_group, world);
    long sum = 0;
    for (int i = 0; i < size; i++) {
        sum += world[i] + 1;
    }
    free(ranks);
    free(world);
    MPI_Group_free(&group);
    MPI_Group_free(&world_group);
    return sum;
}

/*
 * Replace *comm by a shrunk copy without the dead and return the iteration all
 * survivors resume from (the earliest one any of them failed in). A failure
 * during recovery starts it again.
 */
static int recover(MPI_Comm *comm, int failed_iteration)
{
    for (;;) {
        MPIX_Comm_revoke(*comm);
        MPI_Comm shrunk;
        if (MPIX_Comm_shrink(*comm, &shrunk) != MPI_SUCCESS) {
            continue;
        }
        MPI_Comm_free(comm);
        *comm = shrunk;
        MPI_Comm_set_errhandler(*comm, MPI_ERRORS_RETURN);
        int resume = failed_iteration;
        if (MPI_Allreduce(&failed_iteration, &resume, 1, MPI_INT, MPI_MIN, *comm) == MPI_SUCCESS) {
            return resume;
        }
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int iterations = argc > 1 ? atoi(argv[1]) : 20;
    int world_rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);

    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);

    /* Per-iteration results: an iteration redone after a recovery overwrites its slot. */
    long *sums = calloc((size_t)iterations, sizeof(long));
    long *expected = calloc((size_t)iterations, sizeof(long));
    int recoveries = 0;
    for (int it = 0; it < iterations; it++) {
        ftslide_killpointf(world_rank, "iter=%d", it);
        long mine = world_rank + 1, sum = 0;
        int rc = MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, comm);
        if (rc == MPI_SUCCESS) {
            sums[it] = sum;
            expected[it] = expected_sum(comm);
            continue;
        }
        int eclass;
        MPI_Error_class(rc, &eclass);
        if (eclass != MPIX_ERR_PROC_FAILED && eclass != MPIX_ERR_REVOKED) {
            fprintf(stderr, "survive: rank %d: unexpected error class %d\n", world_rank, eclass);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        double start = MPI_Wtime();
        it = recover(&comm, it) - 1;
        recoveries++;
        int rank;
        MPI_Comm_rank(comm, &rank);
        if (rank == 0) {
            int size;
            MPI_Comm_size(comm, &size);
            printf("survive: recovered at iteration %d: %d survivors, %.1f us\n", it + 1, size,
                   (MPI_Wtime() - start) * 1e6);
            fflush(stdout);
        }
    }

    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    long checksum = 0;
    int wrong = 0, all_wrong = 0;
    for (int it = 0; it < iterations; it++) {
        checksum += sums[it] * (it + 1);
        wrong += sums[it] != expected[it];
    }
    MPI_Reduce(&wrong, &all_wrong, 1, MPI_INT, MPI_SUM, 0, comm);
    if (rank == 0) {
        printf("survive: done: %d iterations, %d recoveries, %d survivors, checksum %ld, %s\n",
               iterations, recoveries, size, checksum, all_wrong ? "WRONG SUMS" : "all sums correct");
    }
    free(sums);
    free(expected);
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return all_wrong ? 1 : 0;
}
