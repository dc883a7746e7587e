/*
 * Reading one MPI_T performance variable of this process by name, for the
 * tests and benchmarks (for instance mpi_ft_ftslide_messages_sent, the messages
 * our reliable broadcast has sent):
 *
 *     ftslide_pvar_t sent;
 *     if (ftslide_pvar_open(&sent, "mpi_ft_ftslide_messages_sent") == 0) {
 *         unsigned long long before = ftslide_pvar_read(&sent);
 *         ... MPIX_Comm_revoke(...) ...
 *         unsigned long long n = ftslide_pvar_read(&sent) - before;
 *         ftslide_pvar_close(&sent);
 *     }
 *
 * Only differences between two reads of one open variable are meaningful
 * (Open MPI counts a counter from the moment its handle starts).
 */
#ifndef FTSLIDE_PVAR_H
#define FTSLIDE_PVAR_H

#include <mpi.h>

typedef struct ftslide_pvar {
    MPI_T_pvar_session session;
    MPI_T_pvar_handle handle;
} ftslide_pvar_t;

/* 0 on success; -1 if MPI_T or the variable (a counter) is not there. */
static inline int ftslide_pvar_open(ftslide_pvar_t *v, const char *name)
{
    int provided, index, count;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) {
        return -1;
    }
    if (MPI_T_pvar_get_index(name, MPI_T_PVAR_CLASS_COUNTER, &index) != MPI_SUCCESS ||
        MPI_T_pvar_session_create(&v->session) != MPI_SUCCESS) {
        MPI_T_finalize();
        return -1;
    }
    if (MPI_T_pvar_handle_alloc(v->session, index, NULL, &v->handle, &count) != MPI_SUCCESS || count != 1) {
        MPI_T_pvar_session_free(&v->session);
        MPI_T_finalize();
        return -1;
    }
    return 0;
}

static inline unsigned long long ftslide_pvar_read(ftslide_pvar_t *v)
{
    unsigned long long value = 0;
    MPI_T_pvar_read(v->session, v->handle, &value);
    return value;
}

static inline void ftslide_pvar_close(ftslide_pvar_t *v)
{
    MPI_T_pvar_handle_free(v->session, &v->handle);
    MPI_T_pvar_session_free(&v->session);
    MPI_T_finalize();
}

#endif /* FTSLIDE_PVAR_H */
