/*
 * MPI_Comm_spawn of a program that does not exist, after a failure.
 *
 * The test kills one rank at "before_spawn". The others shrink a dup of
 * MPI_COMM_WORLD (errors returned) and, from the shrunk communicator
 * (errors returned, root 0), spawn one process of a program that is not
 * there: this binary's path with ".missing" appended. Every survivor must
 * get an error back from MPI_Comm_spawn, none may hang, and the job must go
 * on: the survivors agree that all of them saw the error, check the shrunk
 * communicator with an MPI_Allreduce, then spawn this binary for real (the
 * child, started with the argument "child", merges with them and joins one
 * MPI_Allreduce) to show that the failed spawn left spawning usable.
 *
 * Reports, per survivor: size (of the shrunk communicator), spawn (class of
 * MPI_Comm_spawn's return code; anything but MPI_SUCCESS is right), agreed (1 when every survivor saw the spawn fail), sum (of an MPI_Allreduce
 * of 1 on the shrunk communicator), respawn (class of the real spawn),
 * merged_sum (of an MPI_Allreduce of 1 with the child: survivors + 1), then
 * finalized=1 after MPI_Finalize. The child prints nothing as a rank (its
 * MPI_COMM_WORLD rank 0 would clash with the survivors' rank 0); it exits 0
 * when its allreduce gave the expected sum.
 *
 * usage: spawn_missing         (the child: spawn_missing child)
 */
#define _POSIX_C_SOURCE 200809L /* readlink */
#include <string.h>
#include <unistd.h>

#include "ftcheck.h"

static int child(void)
{
    MPI_Comm parent, merged;
    MPI_Comm_get_parent(&parent);
    if (parent == MPI_COMM_NULL) {
        fprintf(stderr, "spawn_missing: started as a child but has no parent\n");
        MPI_Finalize();
        return 1;
    }
    MPI_Comm_set_errhandler(parent, MPI_ERRORS_RETURN);
    int one = 1, sum = 0, size = 0;
    int rc = MPI_Intercomm_merge(parent, 1, &merged);
    if (rc == MPI_SUCCESS) {
        MPI_Comm_set_errhandler(merged, MPI_ERRORS_RETURN);
        MPI_Comm_size(merged, &size);
        rc = MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, merged);
        MPI_Comm_free(&merged);
    }
    MPI_Comm_free(&parent);
    MPI_Finalize();
    return rc == MPI_SUCCESS && sum == size ? 0 : 1;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    if (argc > 1 && strcmp(argv[1], "child") == 0) {
        return child();
    }
    int rank = ftcheck_rank();

    char exe[4096], missing[4120];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) {
        fprintf(stderr, "spawn_missing: cannot read /proc/self/exe\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    exe[len] = '\0';
    snprintf(missing, sizeof missing, "%s.missing", exe);
    if (access(missing, F_OK) == 0) {
        fprintf(stderr, "spawn_missing: %s exists; it must not\n", missing);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    MPI_Comm comm = ftcheck_dup_world(), shrunk, inter, merged;
    MPI_Barrier(comm);
    ftslide_killpoint(rank, "before_spawn");

    int rc = MPIX_Comm_shrink(comm, &shrunk);
    if (rc != MPI_SUCCESS) {
        FTCHECK_RC("shrink", rc);
        MPI_Finalize();
        return 0;
    }
    MPI_Comm_set_errhandler(shrunk, MPI_ERRORS_RETURN);
    int size;
    MPI_Comm_size(shrunk, &size);
    FTCHECK("size", "%d", size);

    char *child_args[] = {"child", NULL};
    rc = MPI_Comm_spawn(missing, child_args, 1, MPI_INFO_NULL, 0, shrunk, &inter, MPI_ERRCODES_IGNORE);
    FTCHECK_RC("spawn", rc);
    if (rc == MPI_SUCCESS) {
        MPI_Comm_free(&inter); /* not expected: the program is not there */
    }

    int flag = rc != MPI_SUCCESS;
    int arc = MPIX_Comm_agree(shrunk, &flag);
    FTCHECK("agreed", "%d", arc == MPI_SUCCESS ? flag : -1);

    int one = 1, sum = 0;
    rc = MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, shrunk);
    FTCHECK("sum", "%d", rc == MPI_SUCCESS ? sum : -1);

    rc = MPI_Comm_spawn(exe, child_args, 1, MPI_INFO_NULL, 0, shrunk, &inter, MPI_ERRCODES_IGNORE);
    FTCHECK_RC("respawn", rc);
    sum = -1;
    if (rc == MPI_SUCCESS) {
        MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
        rc = MPI_Intercomm_merge(inter, 0, &merged);
        if (rc == MPI_SUCCESS) {
            MPI_Comm_set_errhandler(merged, MPI_ERRORS_RETURN);
            if (MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, merged) != MPI_SUCCESS) sum = -1;
            MPI_Comm_free(&merged);
        }
        MPI_Comm_free(&inter);
    }
    FTCHECK("merged_sum", "%d", sum);

    MPI_Comm_free(&shrunk);
    MPI_Comm_free(&comm);
    MPI_Finalize();
    printf("ftcheck rank=%d finalized=1\n", rank);
    fflush(stdout);
    return 0;
}
