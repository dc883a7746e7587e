/*
 * Several MPIX_Comm_iagree in flight on one communicator, for
 * tests/test_ftera.py: agreement k (k = 0..K-1) of iteration i gets from
 * rank r the flag with bit (r + k) % 31 cleared; they are started back to
 * back (a blocking MPIX_Comm_agree in the middle of the batch, on every rank),
 * then waited for in reverse order. Each result must be the AND of its own
 * contributions, whatever the order of completion.
 *
 *   iagree_many ITERATIONS K
 *
 * Reports "bad" (wrong flag or error) and "finished".
 */
#include <stdlib.h>

#include "ftcheck.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = ftcheck_rank(), size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int iterations = argc > 1 ? atoi(argv[1]) : 20;
    int k_max = argc > 2 ? atoi(argv[2]) : 4;
    MPI_Comm comm = ftcheck_dup_world();
    int *flags = malloc(k_max * sizeof(int));
    MPI_Request *reqs = malloc(k_max * sizeof(MPI_Request));
    int bad = 0;
    for (int i = 0; i < iterations; i++) {
        int middle = 0x7fffffff & ~(1 << ((rank + i) % 31));
        for (int k = 0; k < k_max; k++) {
            flags[k] = ~(1 << ((rank + k) % 31));
            if (MPIX_Comm_iagree(comm, &flags[k], &reqs[k]) != MPI_SUCCESS) {
                bad++;
                reqs[k] = MPI_REQUEST_NULL;
            }
            if (k == k_max / 2 && MPIX_Comm_agree(comm, &middle) != MPI_SUCCESS) {
                bad++;
            }
        }
        for (int k = k_max - 1; k >= 0; k--) {
            if (MPI_Wait(&reqs[k], MPI_STATUS_IGNORE) != MPI_SUCCESS) {
                bad++;
            }
            int expected = -1;
            for (int r = 0; r < size; r++) {
                expected &= ~(1 << ((r + k) % 31));
            }
            if (flags[k] != expected) {
                bad++;
            }
        }
        int expected_middle = 0x7fffffff;
        for (int r = 0; r < size; r++) {
            expected_middle &= ~(1 << ((r + i) % 31));
        }
        if (middle != expected_middle) {
            bad++;
        }
    }
    FTCHECK("bad", "%d", bad);
    FTCHECK("finished", "%d", 1);
    free(flags);
    free(reqs);
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return 0;
}
