/*
 * The values of two fault-tolerance parameters read through MPI_T after
 * MPI_Init: coll/ftagree's "agreement" (the algorithm of upstream's
 * agreement: 0 allreduce, not fault tolerant; 1 early returning; 2 early
 * terminating) and mpi_ft_verbose. np 1 or more, no failure; every rank
 * reports
 *
 *     agreement=V, agreement_twice=V    read before and after more MPI calls
 *                  (the value the test set, or 1, the default with FT on)
 *     ft_verbose=V, ft_verbose_twice=V  the same for mpi_ft_verbose (default 0)
 *     read_rc=...  MPI_T_cvar_read's return (MPI_SUCCESS)
 *
 * Open MPI 5.0.7 registers both with a local variable of the registering
 * function as their storage, which MPI_T (and ompi_info) read long after that
 * function returned: whatever the stack holds there by then. Upstream fixed
 * the first in 5.0.11 (open-mpi/ompi#13952), not the second; ours is patch
 * ompi/18, for both.
 */
#include "ftcheck.h"

#include <string.h>

/* "ftcheck rank=R KEY=VALUE" with KEY made of PREFIX and SUFFIX */
static void report(const char *prefix, const char *suffix, int value)
{
    printf("ftcheck rank=%d %s%s=%d\n", ftcheck_rank(), prefix, suffix, value);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int provided = 0, found = 1, read_ok = 1;
    const char *names[2] = {"coll_ftagree_agreement", "mpi_ft_verbose"};
    const char *keys[2] = {"agreement", "ft_verbose"};
    MPI_T_cvar_handle handles[2];

    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    for (int i = 0; i < 2; i++) {
        int index = -1, count = 0, value = -12345;
        if (MPI_T_cvar_get_index(names[i], &index) != MPI_SUCCESS ||
            MPI_T_cvar_handle_alloc(index, NULL, &handles[i], &count) != MPI_SUCCESS) {
            found = 0;
            handles[i] = MPI_T_CVAR_HANDLE_NULL;
            continue;
        }
        read_ok &= MPI_T_cvar_read(handles[i], &value) == MPI_SUCCESS;
        report(keys[i], "", value);
    }
    /* calls that use the stack between the two reads */
    MPI_Comm comm = ftcheck_dup_world();
    int flag = 1;
    MPIX_Comm_agree(comm, &flag);
    MPI_Barrier(comm);
    MPI_Comm_free(&comm);
    for (int i = 0; i < 2; i++) {
        int value = -12345;
        if (handles[i] == MPI_T_CVAR_HANDLE_NULL) continue;
        read_ok &= MPI_T_cvar_read(handles[i], &value) == MPI_SUCCESS;
        report(keys[i], "_twice", value);
        MPI_T_cvar_handle_free(&handles[i]);
    }
    FTCHECK("found", "%d", found);
    FTCHECK_RC("read_rc", read_ok ? MPI_SUCCESS : MPI_ERR_OTHER);
    MPI_T_finalize();
    FTCHECK("finished", "%d", 1);
    MPI_Finalize();
    return 0;
}
