/*
 * Error insulation between communicators. np 4; the test kills rank 3 at
 * "after_barrier".
 * "all" is a dup of MPI_COMM_WORLD; "half" splits the world into {0,1} and
 * {2,3}. The failure of rank 3 shows on "all" and on {2,3}, never on {0,1};
 * revoking "all" does not revoke {0,1} either.
 */
#include "ftcheck.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = ftcheck_rank();
    MPI_Comm all, half;
    MPI_Comm_dup(MPI_COMM_WORLD, &all);
    MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : 1, rank, &half);
    MPI_Comm_set_errhandler(all, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(half, MPI_ERRORS_RETURN);
    MPI_Barrier(all);
    ftslide_killpoint(rank, "after_barrier");

    int one = 1, sum = 0;
    if (rank < 2) {
        /* The failure is visible on "all"... */
        int value;
        FTCHECK_RC("all_recv_from_dead", MPI_Recv(&value, 1, MPI_INT, 3, 5, all, MPI_STATUS_IGNORE));
        /* ...but not on {0,1}, before or after "all" is revoked. */
        int rc = MPI_SUCCESS;
        for (int i = 0; i < 10 && rc == MPI_SUCCESS; i++) {
            rc = MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, half);
        }
        FTCHECK_RC("half_allreduce", rc);
        FTCHECK("half_sum", "%d", sum);
        if (rank == 0) {
            MPIX_Comm_revoke(all);
        }
        MPI_Barrier(half);
        int revoked = 0;
        MPIX_Comm_is_revoked(half, &revoked);
        FTCHECK("half_revoked", "%d", revoked);
        FTCHECK_RC("half_allreduce_after_revoke", MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, half));
        FTCHECK_RC("all_barrier_after_revoke", MPI_Barrier(all));
    } else {
        FTCHECK_RC("half_allreduce_with_dead", MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, half));
        FTCHECK_RC("all_barrier_after_revoke", MPI_Barrier(all));
    }
    FTCHECK("finished", "%d", 1);
    MPI_Finalize();
    return 0;
}
