/*
 * Reporting for the ULFM conformance programs: each observation is one line
 *
 *     ftcheck rank=R KEY=VALUE
 *
 * on stdout (R is the MPI_COMM_WORLD rank), which the pytest harness collects
 * per rank and asserts on. Error codes are reported by class name.
 */
#ifndef FTCHECK_H
#define FTCHECK_H

#include <mpi.h>
#include <mpi-ext.h>
#include <stdio.h>

#include "ftslide_killpoint.h"

static inline int ftcheck_rank(void)
{
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return rank;
}

static inline const char *ftcheck_class(int rc)
{
    int eclass = rc;
    if (rc != MPI_SUCCESS) {
        MPI_Error_class(rc, &eclass);
    }
    switch (eclass) {
    case MPI_SUCCESS: return "MPI_SUCCESS";
    case MPIX_ERR_PROC_FAILED: return "MPIX_ERR_PROC_FAILED";
    case MPIX_ERR_PROC_FAILED_PENDING: return "MPIX_ERR_PROC_FAILED_PENDING";
    case MPIX_ERR_REVOKED: return "MPIX_ERR_REVOKED";
    case MPI_ERR_PENDING: return "MPI_ERR_PENDING";
    case MPI_ERR_COMM: return "MPI_ERR_COMM";
    case MPI_ERR_IN_STATUS: return "MPI_ERR_IN_STATUS";
    default: return "OTHER_ERROR";
    }
}

/* A dup of MPI_COMM_WORLD whose errors are returned, not fatal. */
static inline MPI_Comm ftcheck_dup_world(void)
{
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    return comm;
}

#define FTCHECK(key, fmt, ...)                                                                 \
    do {                                                                                       \
        printf("ftcheck rank=%d " key "=" fmt "\n", ftcheck_rank(), __VA_ARGS__);              \
        fflush(stdout);                                                                        \
    } while (0)

/* Report the error class of an MPI return code under KEY. */
#define FTCHECK_RC(key, rc) FTCHECK(key, "%s", ftcheck_class(rc))

/* The verdict of a pattern program (tests/mpi/patterns) on its own run, one
 * per surviving rank, printed just before MPI_Finalize: "outcome=ok", or
 * "outcome=wrong" preceded by "why=WHY" (the first thing found wrong). */
static inline void ftcheck_outcome(const char *why)
{
    if (why != NULL) FTCHECK("why", "%s", why);
    FTCHECK("outcome", "%s", why == NULL ? "ok" : "wrong");
}

#endif
