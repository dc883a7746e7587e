/*
 * Errors after a failure. np 3; the test kills rank 2 at "after_barrier".
 * Rank 0: a receive from the dead rank 2 returns MPIX_ERR_PROC_FAILED, and
 * point-to-point with the live rank 1 still works afterwards.
 */
#include "ftcheck.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm comm = ftcheck_dup_world();
    int rank = ftcheck_rank();
    MPI_Barrier(comm);
    ftslide_killpoint(rank, "after_barrier");

    int value = 0;
    if (rank == 0) {
        FTCHECK_RC("recv_from_dead", MPI_Recv(&value, 1, MPI_INT, 2, 7, comm, MPI_STATUS_IGNORE));
        value = 99;
        FTCHECK_RC("send_to_live", MPI_Send(&value, 1, MPI_INT, 1, 8, comm));
    } else if (rank == 1) {
        int rc = MPI_Recv(&value, 1, MPI_INT, 0, 8, comm, MPI_STATUS_IGNORE);
        FTCHECK_RC("recv_from_live", rc);
        FTCHECK("value", "%d", value);
    }
    FTCHECK("finished", "%d", 1);
    MPI_Finalize();
    return 0;
}
