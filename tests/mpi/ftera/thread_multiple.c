/*
 * MPIX_Comm_agree under MPI_THREAD_MULTIPLE, for tests/test_ftera.py: coll/ftera
 * has no locking and declines (upstream's ftagree runs the agreement); the
 * result must be right either way. Reports "rc", "flag" and "finished".
 */
#include "ftcheck.h"

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    int rank = ftcheck_rank();
    MPI_Comm comm = ftcheck_dup_world();
    int flag = ~(1 << rank);
    FTCHECK_RC("rc", MPIX_Comm_agree(comm, &flag));
    FTCHECK("flag", "%#x", (unsigned)flag);
    FTCHECK("provided_multiple", "%d", provided == MPI_THREAD_MULTIPLE);
    FTCHECK("finished", "%d", 1);
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return 0;
}
