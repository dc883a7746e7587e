/*
 * Non-zero exits. np 6, no failure.
 * Every rank finalizes and exits with status 3; ranks 0-2 at once, ranks 3-5
 * one second later, after reporting "late_exit". mpirun must wait for all six
 * exits (and so print the three reports) and return 3. PRRTE 3.0.x counted each
 * non-zero exit twice, ended the job after the first three and tore it down
 * under the late ranks (ompi-ulfm patch prrte/06).
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Finalize();
    if (rank >= size / 2) {
        sleep(1);
        printf("ftcheck rank=%d late_exit=1\n", rank);
        fflush(stdout);
    }
    return 3;
}
