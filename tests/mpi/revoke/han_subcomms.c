/*
 * A collective of coll/han interrupted by a revoke or by a failure. np 4 on
 * 2 nodes x 2 ranks (ranks 0,1 on one node, 2,3 on the other), so that han
 * runs each collective on MPI_COMM_WORLD's copy "comm" as steps on its own
 * sub-communicators: a node-local one per node and one between the nodes'
 * leaders (ranks 0 and 2).
 *
 *     han_subcomms MODE MARKDIR     MODE: revoke | failure
 *
 * A first MPI_Allreduce on comm makes han build its sub-communicators
 * (first_allreduce, first_sum = 4). Then:
 *
 * revoke: ranks 1-3 enter a second MPI_Allreduce on comm that rank 0 never
 *   enters; once they are in it (MARKDIR/in_allreduce.R, then 200 ms), rank 0
 *   revokes comm. Ranks 1-3 must leave the allreduce with an error
 *   (allreduce_interrupted; MPIX_ERR_REVOKED is the class ULFM specifies).
 *   Open MPI 5.0.7 revokes comm but not han's sub-communicators, in which
 *   ranks 1-3 wait: rank 2 for rank 0 in the leaders' step, ranks 1 and 3 for
 *   their leader in the node-local one; they wait for ever.
 * failure: ranks 0-2 enter the second allreduce; once they are in it, rank 3
 *   is killed (kill point "in_allreduce"). Rank 2 learns that its node-local
 *   step cannot complete and leaves with MPIX_ERR_PROC_FAILED; ranks 0 and 1
 *   must leave too (allreduce_interrupted), though their own node-local
 *   sub-communicator and the leaders' one have no dead member.
 *
 * interrupted_sum is what the interrupted allreduce left in its buffer
 * (-1 before the call). Upstream's 5.0.11 no longer hangs (open-mpi/ompi#13642)
 * but returns MPI_SUCCESS there, with sums of -1, 1 or 2: han goes on after a
 * failed step and forwards what it has. Ours: patches ompi/16 (the
 * sub-communicators, han's outcome) and ompi/17 (no send on what this process
 * knows revoked).
 *
 * Then every survivor shrinks comm (shrink, shrunk_size) and runs an
 * allreduce on the result (shrunk_allreduce, shrunk_sum = number of
 * survivors): recovery works with han's new sub-communicators.
 */
#include "ftcheck.h"

#include <string.h>
#include <time.h>

static void pause_ms(long ms)
{
    struct timespec pause = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&pause, NULL);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = ftcheck_rank(), size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 3 || (strcmp(argv[1], "revoke") != 0 && strcmp(argv[1], "failure") != 0) || size != 4) {
        if (rank == 0) fprintf(stderr, "usage: han_subcomms revoke|failure MARKDIR (np 4, 2 nodes x 2)\n");
        MPI_Finalize();
        return 2;
    }
    int revoke_mode = strcmp(argv[1], "revoke") == 0;
    const char *dir = argv[2];
    /* the rank that stays out of the second allreduce: the revoker or the victim */
    int outsider = revoke_mode ? 0 : 3;
    MPI_Comm comm = ftcheck_dup_world();

    int one = 1, sum = 0;
    FTCHECK_RC("first_allreduce", MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, comm));
    FTCHECK("first_sum", "%d", sum);
    MPI_Barrier(MPI_COMM_WORLD);

    if (rank != outsider) {
        char name[32];
        snprintf(name, sizeof name, "in_allreduce.%d", rank);
        ftcheck_mark(dir, name);
        sum = -1;
        FTCHECK_RC("allreduce_interrupted", MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, comm));
        FTCHECK("interrupted_sum", "%d", sum);
    } else {
        for (int r = 0; r < size; r++) {
            char name[32];
            if (r == outsider) continue;
            snprintf(name, sizeof name, "in_allreduce.%d", r);
            ftcheck_await_mark(dir, name);
        }
        pause_ms(200); /* let the others get into the allreduce */
        if (revoke_mode) {
            FTCHECK_RC("revoke", MPIX_Comm_revoke(comm));
        } else {
            ftslide_killpoint(rank, "in_allreduce");
        }
    }

    MPI_Comm shrunk;
    FTCHECK_RC("shrink", MPIX_Comm_shrink(comm, &shrunk));
    int shrunk_size = 0;
    MPI_Comm_size(shrunk, &shrunk_size);
    FTCHECK("shrunk_size", "%d", shrunk_size);
    MPI_Comm_set_errhandler(shrunk, MPI_ERRORS_RETURN);
    sum = 0;
    FTCHECK_RC("shrunk_allreduce", MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, shrunk));
    FTCHECK("shrunk_sum", "%d", sum);
    MPI_Comm_free(&shrunk);
    FTCHECK("finished", "%d", 1);
    MPI_Finalize();
    return 0;
}
