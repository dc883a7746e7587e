/*
 * The ULFM tutorial's ring, in the shape users copy (issue 35).
 *
 * 1. scomm: MPI_COMM_WORLD split without the last rank (the victim, known in
 *    advance); fcomm: a dup of MPI_COMM_WORLD whose errors are returned; a
 *    barrier on fcomm.
 * 2. ITERS iterations of MPI_Sendrecv of COUNT doubles to the right and from the
 *    left neighbour on fcomm (1,024 doubles = 8 KiB: a rendezvous send on shared
 *    memory and on TCP; 16 doubles go eagerly). The victim raises SIGKILL at the
 *    kill point the test names ("iter=K").
 * 3. A rank whose MPI_Sendrecv fails calls MPIX_Comm_revoke(fcomm) and leaves
 *    the loop. After the loop every survivor does two MPI_Reduce to rank 0 over
 *    scomm, frees fcomm and scomm, and calls MPI_Finalize.
 *
 * No rank waits for the others before it leaves: a survivor still inside
 * MPI_Sendrecv when its neighbours have left must be released by the revoke
 * alone (ULFM: every pending operation on a revoked communicator completes).
 *
 * Checks at every survivor: each received buffer holds the left neighbour's
 * rank + iteration; a failed MPI_Sendrecv failed with MPIX_ERR_PROC_FAILED or
 * MPIX_ERR_REVOKED; at rank 0, the reduced sum and maximum are the survivors'.
 * Rank 0 prints survivors=N; every survivor prints finalized=1 after MPI_Finalize.
 *
 * usage: ring_tutorial [COUNT [ITERS]]     (default 1024 10)
 */
#include <stdio.h>
#include <stdlib.h>

#include "ftcheck.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int count = argc > 1 ? atoi(argv[1]) : 1024;
    int iters = argc > 2 ? atoi(argv[2]) : 10;

    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int victim = size - 1;
    const char *why = NULL;

    MPI_Comm scomm, fcomm;
    MPI_Comm_split(MPI_COMM_WORLD, rank == victim ? MPI_UNDEFINED : 0, rank, &scomm);
    MPI_Comm_dup(MPI_COMM_WORLD, &fcomm);
    MPI_Comm_set_errhandler(fcomm, MPI_ERRORS_RETURN);
    MPI_Barrier(fcomm);

    double *out = malloc(sizeof(double) * (size_t)count), *in = malloc(sizeof(double) * (size_t)count);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int iter, rc = MPI_SUCCESS, eclass = MPI_SUCCESS;
    for (iter = 0; iter < iters; iter++) {
        ftslide_killpointf(rank, "iter=%d", iter);
        for (int i = 0; i < count; i++) out[i] = rank + iter;
        rc = MPI_Sendrecv(out, count, MPI_DOUBLE, right, 0, in, count, MPI_DOUBLE, left, 0, fcomm,
                          MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) {
            MPI_Error_class(rc, &eclass);
            MPIX_Comm_revoke(fcomm);
            break;
        }
        for (int i = 0; i < count; i++) {
            if (in[i] != left + iter) why = "wrong data from the left neighbour";
        }
    }
    FTCHECK("left", "%d", iter);
    FTCHECK_RC("how", rc);
    if (rc != MPI_SUCCESS && eclass != MPIX_ERR_PROC_FAILED && eclass != MPIX_ERR_REVOKED) why = "unexpected error";

    int survivors = 0, top = -1;
    if (scomm != MPI_COMM_NULL) {
        int one = 1;
        MPI_Reduce(&one, &survivors, 1, MPI_INT, MPI_SUM, 0, scomm);
        MPI_Reduce(&rank, &top, 1, MPI_INT, MPI_MAX, 0, scomm);
        if (rank == 0 && (survivors != size - 1 || top != size - 2)) why = "wrong reduction over scomm";
    }
    MPI_Comm_free(&fcomm);
    if (scomm != MPI_COMM_NULL) MPI_Comm_free(&scomm);

    if (rank == 0) FTCHECK("survivors", "%d", survivors);
    ftcheck_outcome(why);
    free(out);
    free(in);
    MPI_Finalize();
    printf("ftcheck rank=%d finalized=1\n", rank);
    fflush(stdout);
    return 0;
}
