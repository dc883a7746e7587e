/*
 * Communicators created and freed in a loop, each with agreements, for
 * tests/test_ftera.py: CIDs are reused (the adapter tells communicators apart
 * by extended CID and epoch), split communicators share a CID across
 * disjoint groups, and a rank may start an agreement on a new communicator
 * while a peer is still setting it up.
 *
 *   agree_churn ITERATIONS
 *
 * Reports "bad" (the number of agreements that returned an error or a wrong
 * flag) and "finished".
 */
#include <stdlib.h>

#include "ftcheck.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = ftcheck_rank(), size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int iterations = argc > 1 ? atoi(argv[1]) : 50;
    int bad = 0;
    for (int i = 0; i < iterations; i++) {
        MPI_Comm dup, half;
        MPI_Comm_dup(MPI_COMM_WORLD, &dup);
        MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
        int flag = ~(1 << rank);
        if (MPIX_Comm_agree(dup, &flag) != MPI_SUCCESS || flag != (int)(0xFFFFFFFFu << size)) {
            bad++;
        }
        MPI_Comm_split(dup, rank % 2, rank, &half);
        MPI_Comm_set_errhandler(half, MPI_ERRORS_RETURN);
        int hsize, expected = -1;
        MPI_Comm_size(half, &hsize);
        for (int r = rank % 2; r < size; r += 2) {
            expected &= ~(1 << r);
        }
        for (int k = 0; k < 3; k++) {
            flag = ~(1 << rank);
            if (MPIX_Comm_agree(half, &flag) != MPI_SUCCESS || flag != expected) {
                bad++;
            }
        }
        MPI_Comm_free(&half);
        if (i % 2) {
            MPI_Comm_free(&dup);
        } else {
            /* one more agreement before freeing, the rank order of the free varying */
            flag = 1;
            if (MPIX_Comm_agree(dup, &flag) != MPI_SUCCESS || flag != 1) {
                bad++;
            }
            MPI_Comm_free(&dup);
        }
    }
    FTCHECK("bad", "%d", bad);
    FTCHECK("finished", "%d", 1);
    MPI_Finalize();
    return 0;
}
