/*
 * MPI_Abort in a job run with --with-ft ulfm. Argument "world": np 3, rank 1
 * reports "aborting" and calls MPI_Abort(MPI_COMM_WORLD, 5) while the others
 * wait in a barrier with MPI_ERRORS_RETURN; the job must end with 5, and no
 * rank may report "finalized" (before patch prrte/21 the others saw no
 * failure, lived on and waited for ever in MPI_Finalize). Argument "spawned":
 * every rank of the job spawns one process that calls MPI_Abort(its world, 7);
 * the spawning job lives on (each rank reports "finalized") and mpirun
 * returns 7, the spawned job's code, as it does without --with-ft.
 */
#include <string.h>
#include <unistd.h>

#include "ftcheck.h"

int main(int argc, char **argv)
{
    MPI_Comm parent, spawned;
    int rank;

    MPI_Init(&argc, &argv);
    MPI_Comm_get_parent(&parent);
    if (parent != MPI_COMM_NULL) {
        MPI_Abort(MPI_COMM_WORLD, 7);
    }
    rank = ftcheck_rank();
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (argc > 1 && 0 == strcmp(argv[1], "spawned")) {
        char *child_argv[] = {"spawned", NULL};
        int rc = MPI_Comm_spawn(argv[0], child_argv, 1, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &spawned,
                                MPI_ERRCODES_IGNORE);
        FTCHECK_RC("spawn", rc);
        sleep(1);
    } else if (1 == rank) {
        FTCHECK("aborting", "%d", 1);
        MPI_Abort(MPI_COMM_WORLD, 5);
    } else {
        int rc = MPI_Barrier(MPI_COMM_WORLD);
        FTCHECK_RC("barrier", rc);
        sleep(5);
    }
    MPI_Finalize();
    printf("ftcheck rank=%d finalized=1\n", rank);
    fflush(stdout);
    return 0;
}
