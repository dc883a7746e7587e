/*
 * MPI_Finalize after a failure, without any repair: stop cleanly, the
 * program many users write first. Ranks exchange halos with their ring
 * neighbours (MPI_Isend / MPI_Irecv / MPI_Waitall, eager size) on a dup of
 * MPI_COMM_WORLD for ITERS iterations; one dies. A rank that gets an error
 * revokes the communicator (so that the others, who wait for it, stop too)
 * and stops; every survivor then prints what it saw and calls MPI_Finalize
 * straight away, with requests still pending: no shrink, no agree.
 * MPI_Finalize must return at every survivor (with ULFM it fences only the
 * processes still alive, ompi-ulfm/patches/ompi/01). (Without the revoke a
 * survivor would wait forever for a neighbour that stopped: that is the
 * program's deadlock, not MPI's.)
 *
 * Checks: each received halo holds the neighbour's rank and the iteration; an
 * error, if any, is a failure or revoke class. The line "finalized=1" after
 * MPI_Finalize is what the harness looks for (outcome=ok comes before it).
 *
 * Kill points: "iter=K" at the start of iteration K (K in 0..ITERS-1).
 *
 * usage: finalize_after_failure [ITERS]     (default 20)
 */
#include <stdlib.h>

#include "ftcheck.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int iters = argc > 1 ? atoi(argv[1]) : 20;
    int rank, size;
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    const char *why = NULL;
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    int iter, rc = MPI_SUCCESS;
    for (iter = 0; iter < iters && rc == MPI_SUCCESS; iter++) {
        ftslide_killpointf(rank, "iter=%d", iter);
        int out[2] = {rank, iter}, from_left[2] = {-1, -1}, from_right[2] = {-1, -1};
        MPI_Request reqs[4];
        MPI_Irecv(from_left, 2, MPI_INT, left, iter, comm, &reqs[0]);
        MPI_Irecv(from_right, 2, MPI_INT, right, iter, comm, &reqs[1]);
        MPI_Isend(out, 2, MPI_INT, right, iter, comm, &reqs[2]);
        MPI_Isend(out, 2, MPI_INT, left, iter, comm, &reqs[3]);
        rc = MPI_Waitall(4, reqs, MPI_STATUSES_IGNORE);
        if (rc == MPI_SUCCESS && (from_left[0] != left || from_left[1] != iter || from_right[0] != right ||
                                  from_right[1] != iter)) {
            why = "wrong halo";
        }
        if (rc != MPI_SUCCESS) {
            /* the requests that did not complete are left to MPI_Finalize */
            int eclass;
            MPI_Error_class(rc, &eclass);
            if (eclass != MPI_ERR_IN_STATUS && eclass != MPIX_ERR_PROC_FAILED && eclass != MPIX_ERR_REVOKED) {
                why = "unexpected error";
            }
            MPIX_Comm_revoke(comm);
        }
    }
    FTCHECK("stopped_at", "%d", iter);
    FTCHECK_RC("error", rc);
    ftcheck_outcome(why);
    MPI_Finalize();
    printf("ftcheck rank=%d finalized=1\n", rank); /* (FTCHECK asks MPI for the rank) */
    fflush(stdout);
    return 0;
}
