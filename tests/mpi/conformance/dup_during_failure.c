/*
 * A communicator creation that a failure interrupts must not block the next
 * ones. np 4; the test kills rank 3 at "after_tokens".
 * Every rank first makes a (a dup of MPI_COMM_WORLD) and then b (ranks 0-2
 * only), so b's context id is above a's. Ranks 0-2 each send rank 3 a token
 * and call MPI_Comm_dup(a) at once; rank 3 takes the three tokens and dies, so
 * that dup's context-id allocation starts before anyone knows of the failure
 * and fails inside it (dup_a_failed). MPI_Comm_dup(b), which no failure
 * touches, must then succeed (dup_b) and work (an allreduce summing 3).
 * Open MPI 5.0.7 left its context-id allocator claimed by the failed dup of a,
 * and every later allocation from a communicator with a higher context id,
 * such as b, waited for that claim for ever (patch ompi/10).
 */
#include "ftcheck.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = ftcheck_rank(), token = 1, sum = 0, one = 1;
    MPI_Comm a, b, c, x;
    MPI_Comm_dup(MPI_COMM_WORLD, &a);
    MPI_Comm_set_errhandler(a, MPI_ERRORS_RETURN);
    MPI_Comm_split(MPI_COMM_WORLD, rank < 3 ? 0 : MPI_UNDEFINED, rank, &b);
    if (rank == 3) {
        for (int i = 0; i < 3; i++) {
            MPI_Recv(&token, 1, MPI_INT, MPI_ANY_SOURCE, 1, a, MPI_STATUS_IGNORE);
        }
        ftslide_killpoint(rank, "after_tokens");
    }
    MPI_Send(&token, 1, MPI_INT, 3, 1, a);
    int rc = MPI_Comm_dup(a, &x);
    FTCHECK("dup_a_failed", "%d", rc != MPI_SUCCESS);
    MPI_Comm_set_errhandler(b, MPI_ERRORS_RETURN);
    FTCHECK_RC("dup_b", MPI_Comm_dup(b, &c));
    FTCHECK_RC("allreduce_c", MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, c));
    FTCHECK("sum", "%d", sum);
    FTCHECK("finished", "%d", 1);
    MPI_Finalize();
    return 0;
}
