/*
 * A rendezvous send that the receiver refuses must fail
 * (ompi-ulfm/patches/ompi/06). np 2, no failure.
 *
 * Rank 1 revokes "comm", then both meet on a control communicator; rank 0
 * sends 4 MiB (above the eager limit: a rendezvous) to rank 1 on "comm"
 * while rank 1 waits on the control communicator. Rank 1 answers the
 * rendezvous with a NACK. Run with mpi_ft_reliable_bcast none (the revoke
 * stays at rank 1) rank 0 never learns of the revoke otherwise, so the
 * return of its MPI_Send (sent, MPIX_ERR_REVOKED expected) shows what the NACK
 * did; with a revoke that propagates, the send must fail all the same.
 */
#include "ftcheck.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = ftcheck_rank();
    MPI_Comm comm, control;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_dup(MPI_COMM_WORLD, &control);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    enum { COUNT = 1 << 20 };
    static int out[COUNT];
    if (rank == 1) {
        FTCHECK_RC("revoke", MPIX_Comm_revoke(comm));
    }
    MPI_Barrier(control);
    if (rank == 0) {
        FTCHECK_RC("sent", MPI_Send(out, COUNT, MPI_INT, 1, 7, comm));
    }
    MPI_Barrier(control);
    FTCHECK("finished", "%d", 1);
    MPI_Finalize();
    return 0;
}
