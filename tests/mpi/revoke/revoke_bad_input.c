/*
 * Revokes and sends that an application gets wrong must end in an error class,
 * never a hang.
 *
 *   null       MPIX_Comm_revoke(MPI_COMM_NULL)
 *   freed      MPIX_Comm_revoke of a handle after MPI_Comm_free (MPI_COMM_NULL)
 *   twice      MPIX_Comm_revoke twice on one communicator (the second succeeds)
 *   finalizing rank 1 calls MPI_Finalize at once; rank 0, once rank 1 is in it
 *              (DIR/finalizing), sends it COUNT bytes on MPI_COMM_WORLD
 *
 * MPI_COMM_WORLD returns errors. Reports: rank 0 rc=CLASS; every rank
 * finalized=1 after MPI_Finalize.
 *
 * usage: revoke_bad_input null|freed|twice|finalizing [DIR COUNT]
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ftcheck.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const char *what = argc > 1 ? argv[1] : "null";
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);

    if (strcmp(what, "finalizing") == 0) {
        if (argc < 4) MPI_Abort(MPI_COMM_WORLD, 2);
        if (rank == 1) {
            ftcheck_mark(argv[2], "finalizing");
        } else if (rank == 0) {
            ftcheck_await_mark(argv[2], "finalizing");
            nanosleep(&(struct timespec){0, 100000000}, NULL); /* rank 1 is inside MPI_Finalize by now */
            int count = atoi(argv[3]);
            char *buf = calloc((size_t)count + 1, 1);
            FTCHECK_RC("rc", MPI_Send(buf, count, MPI_BYTE, 1, 0, MPI_COMM_WORLD));
            free(buf);
        }
    } else if (rank == 0) {
        MPI_Comm c = ftcheck_dup_world();
        int rc;
        if (strcmp(what, "freed") == 0) {
            MPI_Comm_free(&c);
            rc = MPIX_Comm_revoke(c);
        } else if (strcmp(what, "twice") == 0) {
            MPIX_Comm_revoke(c);
            rc = MPIX_Comm_revoke(c);
            MPI_Comm_free(&c);
        } else {
            rc = MPIX_Comm_revoke(MPI_COMM_NULL);
            MPI_Comm_free(&c);
        }
        FTCHECK_RC("rc", rc);
    } else {
        MPI_Comm c = ftcheck_dup_world();
        MPI_Comm_free(&c);
    }
    MPI_Finalize();
    printf("ftcheck rank=%d finalized=1\n", rank);
    fflush(stdout);
    return 0;
}
