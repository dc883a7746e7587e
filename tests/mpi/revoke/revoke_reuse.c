/*
 * Revoke and CID reuse, for tests/test_revoke_bmg.py.
 *
 * Usage: revoke_reuse ITERATIONS
 *
 * Each iteration: dup MPI_COMM_WORLD into d, post on d a receive from oneself,
 * barrier, rank (iteration % size) revokes d, wait (MPIX_ERR_REVOKED expected),
 * free d and at once dup MPI_COMM_WORLD into e while messages of d's revoke
 * may still be on their way. A revoked communicator keeps its CID for the
 * next 64 revoked ones freed (patch ompi/13), so e and the later d's reuse the
 * CIDs of communicators freed before (with another epoch), those of
 * unrevoked e's at once, those of revoked d's after 64 iterations. e must not
 * be revoked: an allreduce on it succeeds with the sum of the ranks and
 * MPIX_Comm_is_revoked says 0. Reports bad=<number of
 * iterations where anything differed> and finished=1.
 */
#include <stdlib.h>

#include "ftcheck.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int iterations = argc > 1 ? atoi(argv[1]) : 10;
    if (iterations < 1) {
        fprintf(stderr, "usage: revoke_reuse ITERATIONS (at least 1)\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int rank = ftcheck_rank(), size, bad = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 0; i < iterations; i++) {
        MPI_Comm d = ftcheck_dup_world(), e;
        int value, revoked = 1, sum = -1;
        MPI_Request req;
        MPI_Irecv(&value, 1, MPI_INT, rank, 3, d, &req);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == i % size) {
            MPIX_Comm_revoke(d);
        }
        int rc = MPI_Wait(&req, MPI_STATUS_IGNORE), eclass = rc;
        if (rc != MPI_SUCCESS) {
            MPI_Error_class(rc, &eclass);
        }
        MPI_Comm_free(&d);
        e = ftcheck_dup_world();
        rc = MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, e);
        MPIX_Comm_is_revoked(e, &revoked);
        if (eclass != MPIX_ERR_REVOKED || rc != MPI_SUCCESS || sum != size * (size - 1) / 2 || revoked) {
            bad++;
            fprintf(stderr, "revoke_reuse: rank %d iteration %d: receive %s, allreduce %s sum %d, revoked %d\n",
                    rank, i, ftcheck_class(eclass), ftcheck_class(rc), sum, revoked);
        }
        MPI_Comm_free(&e);
    }
    FTCHECK("bad", "%d", bad);
    FTCHECK("finished", "%d", 1);
    MPI_Finalize();
    return 0;
}
