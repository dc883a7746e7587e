/*
 * Agreement: MPIX_Comm_agree, or MPIX_Comm_iagree + MPI_Wait when compiled with
 * -DFTCHECK_IAGREE. np 4; the test kills rank 3 at "after_first_agree".
 *
 * 1. No failure: the flag is the AND of all flags (0x6), MPI_SUCCESS everywhere.
 * 2. Rank 3 is dead and nobody acknowledged it: every survivor gets
 *    MPIX_ERR_PROC_FAILED, twice in a row, with the AND of the survivors' flags.
 * 3. After MPIX_Comm_ack_failed: MPI_SUCCESS and the AND (0x3).
 */
#include "ftcheck.h"

static int agree(MPI_Comm comm, int *flag)
{
#ifdef FTCHECK_IAGREE
    MPI_Request req;
    int rc = MPIX_Comm_iagree(comm, flag, &req);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    return MPI_Wait(&req, MPI_STATUS_IGNORE);
#else
    return MPIX_Comm_agree(comm, flag);
#endif
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = ftcheck_rank();
    MPI_Comm comm = ftcheck_dup_world();

    int flag = rank == 2 ? 0x6 : rank == 1 ? 0xE : 0xF;
    FTCHECK_RC("first_rc", agree(comm, &flag));
    FTCHECK("first_flag", "%#x", (unsigned)flag);
    ftslide_killpoint(rank, "after_first_agree");

    flag = rank == 0 ? 0x5 : 0xF;
    FTCHECK_RC("unacked_rc", agree(comm, &flag));
    FTCHECK("unacked_flag", "%#x", (unsigned)flag);
    flag = 0xF;
    FTCHECK_RC("unacked_again_rc", agree(comm, &flag));

    int acked = 0;
    FTCHECK_RC("ack_failed", MPIX_Comm_ack_failed(comm, 4, &acked));
    FTCHECK("acked", "%d", acked);
    flag = rank == 1 ? 0x3 : 0xF;
    FTCHECK_RC("acked_rc", agree(comm, &flag));
    FTCHECK("acked_flag", "%#x", (unsigned)flag);
    FTCHECK("finished", "%d", 1);
    MPI_Finalize();
    return 0;
}
