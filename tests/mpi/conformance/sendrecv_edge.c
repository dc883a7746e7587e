/*
 * MPI_Sendrecv at a mesh edge on a revoked communicator. np 2, no failure.
 * Rank 0 revokes "comm", then calls MPI_Sendrecv sending to rank 1 and
 * receiving from MPI_PROC_NULL (the edge of a halo exchange); rank 1 does not
 * take part. The send fails (MPIX_ERR_REVOKED) and MPI_Sendrecv must return it;
 * Open MPI 5.0.7 cancelled the receive it never posted and crashed
 * (ompi-ulfm/patches/ompi/05).
 */
#include "ftcheck.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = ftcheck_rank();
    MPI_Comm comm, control;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_dup(MPI_COMM_WORLD, &control);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    /* A message above the eager limit: the send needs the peer and sees the revoke. */
    enum { COUNT = 1 << 20 };
    static int out[COUNT], in[1];
    if (rank == 0) {
        FTCHECK_RC("revoke", MPIX_Comm_revoke(comm));
        FTCHECK_RC("sendrecv_edge", MPI_Sendrecv(out, COUNT, MPI_INT, 1, 7, in, 1, MPI_INT, MPI_PROC_NULL, 7,
                                                 comm, MPI_STATUS_IGNORE));
    }
    MPI_Barrier(control);
    FTCHECK("finished", "%d", 1);
    MPI_Finalize();
    return 0;
}
