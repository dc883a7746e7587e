/*
 * Latency of MPIX_Comm_agree when K ranks die at its start: the victims (ranks
 * (i + 1) * N / (K + 1), i < K) SIGKILL themselves right after a barrier, the
 * others call MPIX_Comm_agree at once; the time runs from the end of the
 * barrier to the return of the agreement (which must report
 * MPIX_ERR_PROC_FAILED and leave the victims out). It includes the time for
 * the runtime to report the deaths. One measurement per run (the victims are
 * gone); the slowest survivor's time is printed by the first survivor:
 *
 *     agree_failures np=N k=K us=.. rc=MPIX_ERR_PROC_FAILED
 *
 * then "agree_failures finalized=1" once MPI_Finalize has returned
 * (finalize_guard.h: a finalize longer than FINALIZE_GRACE_S seconds ends the
 * process instead).
 *
 * Usage: agree_failures K
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <mpi-ext.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "finalize_guard.h"

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int k = argc > 1 ? atoi(argv[1]) : 1;
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    int victim = 0;
    for (int i = 0; i < k; i++) {
        victim |= rank == (i + 1) * size / (k + 1);
    }
    /* warm-up: one agreement with everybody */
    int flag = 1;
    MPIX_Comm_agree(comm, &flag);
    MPI_Barrier(comm);
    if (victim) {
        kill(getpid(), SIGKILL);
    }
    double start = now_us();
    flag = 1;
    int rc = MPIX_Comm_agree(comm, &flag);
    double mine = now_us() - start;
    int eclass = rc;
    if (rc != MPI_SUCCESS) {
        MPI_Error_class(rc, &eclass);
    }
    MPI_Comm shrunk;
    MPIX_Comm_shrink(comm, &shrunk);
    double slowest = 0;
    MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, shrunk);
    int worst = eclass == MPIX_ERR_PROC_FAILED ? 0 : 1, any_wrong = 0;
    MPI_Reduce(&worst, &any_wrong, 1, MPI_INT, MPI_MAX, 0, shrunk);
    int shrunk_rank, shrunk_size;
    MPI_Comm_rank(shrunk, &shrunk_rank);
    MPI_Comm_size(shrunk, &shrunk_size);
    if (shrunk_rank == 0) {
        printf("agree_failures np=%d k=%d us=%.1f rc=%s survivors=%d\n", size, k, slowest,
               any_wrong ? "WRONG" : "MPIX_ERR_PROC_FAILED", shrunk_size);
        fflush(stdout);
    }
    MPI_Comm_free(&shrunk);
    MPI_Comm_free(&comm);
    finalize_within_grace("agree_failures", shrunk_rank == 0);
    return 0;
}
