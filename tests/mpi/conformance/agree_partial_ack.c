/*
 * Agreement after a failure that only some survivors acknowledged. np 4; the
 * test kills rank 2 at "after_first_agree".
 *
 * 1. No failure: an agreement, MPI_SUCCESS everywhere.
 * 2. Rank 2 is dead and nobody acknowledged it: MPIX_ERR_PROC_FAILED everywhere.
 * 3. Ranks 0 and 3 acknowledge it, rank 1 does not; rank 1 enters the next
 *    agreement first (the others spend half a second in MPI's progress engine), so its empty list of
 *    acknowledged failures is the first contribution its agreement sees. The
 *    failure is not acknowledged by every process, so the agreement must raise
 *    MPIX_ERR_PROC_FAILED at every survivor (ULFM: the error is not raised only
 *    if all processes acknowledged the failure before the call).
 * 4. Rank 1 acknowledges too: MPI_SUCCESS everywhere, with the survivors' AND.
 *
 * Upstream's coll/ftagree (5.0.7) keeps "no acknowledged failure" and "no
 * contribution seen yet" in the same NULL pointer (era_update_return_value):
 * at a process of its tree with children (rank 1, parent of rank 3, here) an
 * empty list of its own is replaced by the first child's, no mismatch is seen,
 * and step 3 succeeds everywhere. Found by the iagree pattern
 * (tests/mpi/patterns/iagree_get_failed.c), where a survivor that had not yet
 * heard of the failure acknowledged nothing.
 */
#include "ftcheck.h"

/* Half a second inside MPI (each MPI_Iprobe runs the progress engine), so that
 * messages of the next agreement that arrive meanwhile are handled before this
 * process contributes to it. */
static void progress_for(double seconds, MPI_Comm comm)
{
    int found;
    for (double end = MPI_Wtime() + seconds; MPI_Wtime() < end;)
        MPI_Iprobe(0, 999, comm, &found, MPI_STATUS_IGNORE);
}

/* Waits (in the progress engine, 10 s at most) until this process knows of a
 * failure in comm: the agreement may report it before the runtime's own
 * report reaches this process, and ack_failed acknowledges known failures only. */
static void known_failed(MPI_Comm comm)
{
    for (double end = MPI_Wtime() + 10; MPI_Wtime() < end;) {
        MPI_Group failed;
        int n;
        MPIX_Comm_get_failed(comm, &failed);
        MPI_Group_size(failed, &n);
        MPI_Group_free(&failed);
        if (n > 0) return;
        progress_for(0.01, comm);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = ftcheck_rank();
    MPI_Comm comm = ftcheck_dup_world();

    int flag = 0xF;
    FTCHECK_RC("first_rc", MPIX_Comm_agree(comm, &flag));
    ftslide_killpoint(rank, "after_first_agree");

    flag = 0xF;
    FTCHECK_RC("unacked_rc", MPIX_Comm_agree(comm, &flag));

    known_failed(comm); /* what each acknowledges is the failure, not a late report of it */
    int acked = 0;
    if (rank != 1) FTCHECK_RC("ack_failed", MPIX_Comm_ack_failed(comm, 4, &acked));
    if (rank != 1) progress_for(0.5, comm);
    flag = 0xF;
    FTCHECK_RC("partly_acked_rc", MPIX_Comm_agree(comm, &flag));

    if (rank == 1) FTCHECK_RC("ack_failed", MPIX_Comm_ack_failed(comm, 4, &acked));
    FTCHECK("acked", "%d", acked);
    flag = ~(1 << rank);
    FTCHECK_RC("all_acked_rc", MPIX_Comm_agree(comm, &flag));
    FTCHECK("all_acked_flag", "%#x", (unsigned)flag & 0xF);
    FTCHECK("finished", "%d", 1);
    MPI_Finalize();
    return 0;
}
