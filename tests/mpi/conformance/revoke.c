/*
 * Revoke. np 4, no failure.
 * Every rank posts a receive from rank 0 on "comm" that is never matched;
 * after a barrier on another communicator rank 0 revokes "comm". The pending
 * receive returns MPIX_ERR_REVOKED on every rank (rank 0 included), and so do
 * later operations on "comm"; MPIX_Comm_is_revoked says so; shrink still works.
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

    int value = 0;
    MPI_Request req;
    MPI_Irecv(&value, 1, MPI_INT, (rank + 1) % 4, 11, comm, &req);
    MPI_Barrier(control);
    if (rank == 0) {
        FTCHECK_RC("revoke", MPIX_Comm_revoke(comm));
    }
    FTCHECK_RC("pending_recv", MPI_Wait(&req, MPI_STATUS_IGNORE));
    FTCHECK_RC("later_barrier", MPI_Barrier(comm));
    FTCHECK_RC("later_send", MPI_Send(&value, 1, MPI_INT, (rank + 1) % 4, 12, comm));
    /* Posting is local and may succeed; the request must complete with the error. */
    int rc = MPI_Irecv(&value, 1, MPI_INT, (rank + 3) % 4, 13, comm, &req);
    FTCHECK_RC("later_irecv", rc == MPI_SUCCESS ? MPI_Wait(&req, MPI_STATUS_IGNORE) : rc);
    int revoked = 0;
    MPIX_Comm_is_revoked(comm, &revoked);
    FTCHECK("is_revoked", "%d", revoked);

    MPI_Comm shrunk;
    FTCHECK_RC("shrink", MPIX_Comm_shrink(comm, &shrunk));
    int size;
    MPI_Comm_size(shrunk, &size);
    FTCHECK("shrunk_size", "%d", size);
    FTCHECK_RC("shrunk_barrier", MPI_Barrier(shrunk));
    FTCHECK("finished", "%d", 1);
    MPI_Finalize();
    return 0;
}
