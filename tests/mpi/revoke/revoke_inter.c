/*
 * Revoke of an inter-communicator, for tests/test_revoke_bmg.py.
 *
 * Usage: revoke_inter ORIGIN   (np >= 2)
 *
 * The even and the odd world ranks form two groups joined by an
 * inter-communicator. Every rank posts on it a receive from remote rank 0 that
 * is never matched; after a barrier world rank ORIGIN revokes it. Reports
 * rc (MPIX_ERR_REVOKED expected in both groups), is_revoked, sent (messages
 * our reliable broadcast sent here, pvar mpi_ft_ftslide_messages_sent, -1 if
 * missing) and finished=1.
 */
#include <stdlib.h>

#include "ftcheck.h"
#include "ftslide_pvar.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = ftcheck_rank(), size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int origin = argc > 1 ? atoi(argv[1]) : 0;
    if (size < 2 || origin < 0 || origin >= size) {
        fprintf(stderr, "usage: revoke_inter ORIGIN (a world rank; np at least 2)\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    ftslide_pvar_t sent;
    int have_pvar = ftslide_pvar_open(&sent, "mpi_ft_ftslide_messages_sent") == 0;
    MPI_Comm local, inter;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &local);
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, rank % 2 ? 0 : 1, 5, &inter);
    MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
    int value;
    MPI_Request req;
    MPI_Irecv(&value, 1, MPI_INT, 0, 9, inter, &req);
    unsigned long long before = have_pvar ? ftslide_pvar_read(&sent) : 0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == origin) {
        MPIX_Comm_revoke(inter);
    }
    FTCHECK_RC("rc", MPI_Wait(&req, MPI_STATUS_IGNORE));
    int revoked = 0;
    MPIX_Comm_is_revoked(inter, &revoked);
    FTCHECK("is_revoked", "%d", revoked);
    MPI_Barrier(MPI_COMM_WORLD);
    FTCHECK("sent", "%lld", have_pvar ? (long long) (ftslide_pvar_read(&sent) - before) : -1LL);
    if (have_pvar) {
        ftslide_pvar_close(&sent);
    }
    MPI_Comm_free(&inter);
    MPI_Comm_free(&local);
    FTCHECK("finished", "%d", 1);
    MPI_Finalize();
    return 0;
}
