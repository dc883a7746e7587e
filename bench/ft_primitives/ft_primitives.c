/*
 * Latency of the ULFM primitives, failure-free: MPIX_Comm_agree, MPI_Allreduce
 * of one int (reference), revoke-to-error and MPIX_Comm_shrink.
 *
 * agree / allreduce / shrink: each iteration starts after a barrier; its time is
 * the maximum over ranks; the median over iterations is reported.
 * revoke: every rank posts a receive that is never matched, rank 0 revokes; the
 * time runs from the revoke call to the last rank's receive returning
 * MPIX_ERR_REVOKED, measured with CLOCK_MONOTONIC, which all processes on one
 * machine share. msgs_per_revoke: messages all ranks handed to the BTL for the
 * revokes (MPI_T counters of ours and of upstream's reliable broadcast, patch
 * 0008), divided by the number of revokes; -1 where neither counter exists (an
 * Open MPI without our patches, such as upstream's release).
 *
 * Usage: ft_primitives [ITERATIONS [REVOKES]]; rank 0 prints one line
 *     ft_primitives np=N agree_us=.. allreduce_us=.. revoke_us=.. shrink_us=.. msgs_per_revoke=..
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <mpi-ext.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ftslide_pvar.h"

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int compare(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *values, int n)
{
    qsort(values, (size_t)n, sizeof(double), compare);
    return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

enum op { AGREE, ALLREDUCE, SHRINK };

/* Median over iterations of the slowest rank's time for one operation. */
static double time_op(MPI_Comm comm, enum op op, int iterations)
{
    double *times = malloc(sizeof(double) * (size_t)iterations);
    for (int i = -iterations / 10 - 1; i < iterations; i++) { /* negative i: warm-up */
        int flag = 1, out = 0;
        MPI_Comm shrunk;
        MPI_Barrier(comm);
        double start = now_us();
        switch (op) {
        case AGREE: MPIX_Comm_agree(comm, &flag); break;
        case ALLREDUCE: MPI_Allreduce(&flag, &out, 1, MPI_INT, MPI_BAND, comm); break;
        case SHRINK: MPIX_Comm_shrink(comm, &shrunk); break;
        }
        double mine = now_us() - start, slowest;
        if (op == SHRINK) {
            MPI_Comm_free(&shrunk);
        }
        MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm);
        if (i >= 0) {
            times[i] = slowest;
        }
    }
    double result = median(times, iterations);
    free(times);
    return result;
}

/* Messages sent so far by this process for reliable broadcasts, ours and upstream's. */
static unsigned long long rbcast_messages(ftslide_pvar_t *ours, ftslide_pvar_t *upstream)
{
    return (ours ? ftslide_pvar_read(ours) : 0) + (upstream ? ftslide_pvar_read(upstream) : 0);
}

/* Median over repetitions of revoke call to the last rank's MPIX_ERR_REVOKED;
 * *messages gets the messages per revoke summed over ranks (at rank 0). */
static double time_revoke(int repetitions, double *messages)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    ftslide_pvar_t ours, upstream;
    ftslide_pvar_t *o = ftslide_pvar_open(&ours, "mpi_ft_ftslide_messages_sent") == 0 ? &ours : NULL;
    ftslide_pvar_t *u = ftslide_pvar_open(&upstream, "mpi_ft_rbcast_messages_sent") == 0 ? &upstream : NULL;
    unsigned long long before = rbcast_messages(o, u);
    double *times = malloc(sizeof(double) * (size_t)repetitions);
    for (int i = 0; i < repetitions; i++) {
        MPI_Comm victim;
        MPI_Comm_dup(MPI_COMM_WORLD, &victim);
        MPI_Comm_set_errhandler(victim, MPI_ERRORS_RETURN);
        int value;
        MPI_Request req;
        MPI_Irecv(&value, 1, MPI_INT, (rank + 1) % size, 1, victim, &req);
        MPI_Barrier(MPI_COMM_WORLD);
        double start = now_us();
        if (rank == 0) {
            MPIX_Comm_revoke(victim);
        }
        int rc = MPI_Wait(&req, MPI_STATUS_IGNORE), eclass;
        double done = now_us(), last;
        MPI_Error_class(rc, &eclass);
        if (eclass != MPIX_ERR_REVOKED) {
            fprintf(stderr, "ft_primitives: rank %d: the receive did not return MPIX_ERR_REVOKED\n", rank);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        MPI_Bcast(&start, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        MPI_Reduce(&done, &last, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        times[i] = last - start;
        MPI_Comm_free(&victim);
    }
    /* a rank forwards inside the progress call that ends its wait: its count is complete */
    double mine = (double)(rbcast_messages(o, u) - before), total = 0;
    MPI_Reduce(&mine, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    *messages = o || u ? total / repetitions : -1;
    if (o) {
        ftslide_pvar_close(o);
    }
    if (u) {
        ftslide_pvar_close(u);
    }
    double result = median(times, repetitions);
    free(times);
    return result;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int iterations = argc > 1 ? atoi(argv[1]) : 200;
    int revokes = argc > 2 ? atoi(argv[2]) : 50;
    if (iterations < 1 || revokes < 1) {
        fprintf(stderr, "usage: ft_primitives [ITERATIONS [REVOKES]] (both at least 1)\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    double agree = time_op(comm, AGREE, iterations);
    double allreduce = time_op(comm, ALLREDUCE, iterations);
    double shrink = time_op(comm, SHRINK, iterations / 10 + 1);
    double messages = 0;
    double revoke = time_revoke(revokes, &messages);
    if (rank == 0) {
        printf("ft_primitives np=%d agree_us=%.2f allreduce_us=%.2f revoke_us=%.2f shrink_us=%.2f "
               "msgs_per_revoke=%.1f\n", size, agree, allreduce, revoke, shrink, messages);
    }
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return 0;
}
