/*
 * Survive the loss of a whole node. Ranks whose host name is FTSLIDE_DOOMED_HOST report
 * "ready" after a first barrier and then wait in pause() until the test kills their node
 * from outside (every process of it at once). The other ranks report "ready" too and
 * block in a second barrier until the failure reaches them; then they revoke, shrink,
 * sum over the survivors and report the new size, the sum and "finished".
 */
#include <string.h>
#include <unistd.h>

#include "ftcheck.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = ftcheck_rank();
    const char *doomed = getenv("FTSLIDE_DOOMED_HOST");
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    MPI_Comm comm = ftcheck_dup_world(), shrunk;
    MPI_Barrier(comm);
    FTCHECK("ready", "%s", host);
    if (doomed != NULL && strcmp(doomed, host) == 0) {
        for (;;) {
            pause();
        }
    }
    FTCHECK_RC("barrier", MPI_Barrier(comm));
    FTCHECK_RC("revoke", MPIX_Comm_revoke(comm));
    FTCHECK_RC("shrink", MPIX_Comm_shrink(comm, &shrunk));
    int size, one = 1, sum = 0;
    MPI_Comm_size(shrunk, &size);
    FTCHECK_RC("allreduce", MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, shrunk));
    FTCHECK("size", "%d", size);
    FTCHECK("sum", "%d", sum);
    FTCHECK("finished", "%d", 1);
    MPI_Finalize();
    return 0;
}
