/*
 * MPI_ANY_SOURCE receives after a failure. np 3; the test kills rank 2 at
 * "after_barrier".
 * Rank 0 waits on an MPI_ANY_SOURCE receive: it returns
 * MPIX_ERR_PROC_FAILED_PENDING and the request stays pending. After
 * MPIX_Comm_failure_ack, rank 0 tells rank 1 to send, and the same request
 * completes with rank 1's message. A new ANY_SOURCE receive then works too.
 */
#include "ftcheck.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm comm = ftcheck_dup_world();
    int rank = ftcheck_rank();
    MPI_Barrier(comm);
    ftslide_killpoint(rank, "after_barrier");

    if (rank == 0) {
        int value = -1, go = 1;
        MPI_Request req;
        MPI_Status status;
        MPI_Irecv(&value, 1, MPI_INT, MPI_ANY_SOURCE, 1, comm, &req);
        FTCHECK_RC("first_wait", MPI_Wait(&req, &status));
        FTCHECK("still_pending", "%d", req != MPI_REQUEST_NULL);
        FTCHECK_RC("failure_ack", MPIX_Comm_failure_ack(comm));
        MPI_Send(&go, 1, MPI_INT, 1, 2, comm);
        FTCHECK_RC("second_wait", MPI_Wait(&req, &status));
        FTCHECK("value", "%d", value);
        FTCHECK("source", "%d", status.MPI_SOURCE);
        FTCHECK_RC("new_any_source_recv", MPI_Recv(&value, 1, MPI_INT, MPI_ANY_SOURCE, 3, comm, &status));
        FTCHECK("second_value", "%d", value);
    } else if (rank == 1) {
        int go = 0, value = 42;
        MPI_Recv(&go, 1, MPI_INT, 0, 2, comm, MPI_STATUS_IGNORE);
        MPI_Send(&value, 1, MPI_INT, 0, 1, comm);
        value = 43;
        MPI_Send(&value, 1, MPI_INT, 0, 3, comm);
    }
    FTCHECK("finished", "%d", 1);
    MPI_Finalize();
    return 0;
}
