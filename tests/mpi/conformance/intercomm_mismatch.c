/*
 * Callers that disagree on the call (issue 36, bad input): one part of a
 * communicator calls MPIX_Comm_agree while the other calls MPIX_Comm_shrink
 * on it. Both calls enter the same agreement; without a way to tell them
 * apart the agree returns and the shrink goes on into its context-id
 * allocation and waits for ever. Every process must get an MPI error class
 * instead, and the communicator must stay usable.
 *
 * Argument: "inter" (default) or "intra".
 *   inter  world split in a low half (color 0) and a high half (color 1),
 *          joined by MPI_Intercomm_create; the low half agrees on the
 *          intercommunicator, the high half shrinks it.
 *   intra  a dup of MPI_COMM_WORLD; even world ranks agree, odd ones shrink.
 * The test may kill a rank at "before_mismatch" (after the communicator is
 * made, before the mismatched calls), so that the mismatch is decided
 * together with a failure. Every survivor reports:
 *   mismatch_call=   agree or shrink (what this rank called)
 *   mismatch=        the class it got (MPI_ERR_OTHER expected everywhere)
 *   mismatch_flag=   agree side: its int after the call (the contribution
 *                    stays as it was on an error)
 *   mismatch_newcomm= shrink side: "null" when no communicator came back
 *   ack=             MPIX_Comm_failure_ack on the communicator (so that the
 *                    next agreement does not report the victim again)
 *   agree_after=, agree_after_flag=  a matched MPIX_Comm_agree by everyone:
 *                    MPI_SUCCESS (with a victim on the intercommunicator
 *                    MPIX_ERR_PROC_FAILED everywhere: the ack there covers
 *                    the local group's failures only, so the victim's
 *                    remote group never acknowledges it) and, on the
 *                    intercommunicator, the AND of
 *                    the remote group's flags (low half 0x4, high half 0x1;
 *                    the victim is never a local rank 0), on the
 *                    intra-communicator the AND of all (0x1)
 *   finalized=1      after MPI_Finalize
 */
#include <string.h>

#include "ftcheck.h"

/* The class name, with the two plain classes ftcheck_class() lumps together
 * as OTHER_ERROR told apart. */
static const char *class_name(int rc)
{
    int eclass = rc;
    if (MPI_SUCCESS != rc) MPI_Error_class(rc, &eclass);
    if (MPI_ERR_OTHER == eclass) return "MPI_ERR_OTHER";
    if (MPI_ERR_ARG == eclass) return "MPI_ERR_ARG";
    return ftcheck_class(rc);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = ftcheck_rank(), np;
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int inter_mode = argc < 2 || 0 == strcmp(argv[1], "inter");
    if (argc >= 2 && !inter_mode && 0 != strcmp(argv[1], "intra")) {
        if (0 == rank) fprintf(stderr, "intercomm_mismatch: unknown mode '%s' (inter or intra)\n", argv[1]);
        MPI_Finalize();
        return 2;
    }

    MPI_Comm comm, half = MPI_COMM_NULL;
    int agrees, mine;
    if (inter_mode) {
        int color = rank < np / 2 ? 0 : 1, lrank;
        MPI_Comm_split(MPI_COMM_WORLD, color, rank, &half);
        MPI_Comm_rank(half, &lrank);
        MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, color ? 0 : np / 2, 37, &comm);
        agrees = 0 == color;
        mine = color ? (0 == lrank ? 0x4 : 0xc) : (0 == lrank ? 0x1 : 0x3);
    } else {
        MPI_Comm_dup(MPI_COMM_WORLD, &comm);
        agrees = 0 == rank % 2;
        mine = 0 == rank ? 0x1 : 0x3;
    }
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Barrier(MPI_COMM_WORLD);
    ftslide_killpoint(rank, "before_mismatch");

    int rc;
    if (agrees) {
        int flag = mine;
        rc = MPIX_Comm_agree(comm, &flag);
        FTCHECK("mismatch_call", "%s", "agree");
        FTCHECK("mismatch", "%s", class_name(rc));
        FTCHECK("mismatch_flag", "0x%x", flag);
    } else {
        MPI_Comm shrunk = MPI_COMM_NULL;
        rc = MPIX_Comm_shrink(comm, &shrunk);
        FTCHECK("mismatch_call", "%s", "shrink");
        FTCHECK("mismatch", "%s", class_name(rc));
        FTCHECK("mismatch_newcomm", "%s", MPI_COMM_NULL == shrunk ? "null" : "comm");
        if (MPI_COMM_NULL != shrunk) MPI_Comm_free(&shrunk);
    }

    FTCHECK("ack", "%s", class_name(MPIX_Comm_failure_ack(comm)));
    int flag = mine;
    rc = MPIX_Comm_agree(comm, &flag);
    FTCHECK("agree_after", "%s", class_name(rc));
    FTCHECK("agree_after_flag", "0x%x", flag);

    MPI_Comm_free(&comm);
    if (MPI_COMM_NULL != half) MPI_Comm_free(&half);
    MPI_Finalize();
    printf("ftcheck rank=%d finalized=1\n", rank);
    fflush(stdout);
    return 0;
}
