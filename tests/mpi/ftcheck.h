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
#include <sys/stat.h>
#include <time.h>
#include <stdlib.h>

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

/* The MPI_COMM_WORLD rank of rank `rank` of comm (kill plans and reports
 * name processes by their world rank). */
static inline int ftcheck_world_rank(MPI_Comm comm, int rank)
{
    MPI_Group group, world_group;
    int w;
    MPI_Comm_group(comm, &group);
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    MPI_Group_translate_ranks(group, 1, &rank, world_group, &w);
    MPI_Group_free(&group);
    MPI_Group_free(&world_group);
    return w;
}

/* The verdict of a pattern program (tests/mpi/patterns) on its own run, one
 * per surviving rank, printed just before MPI_Finalize: "outcome=ok", or
 * "outcome=wrong" preceded by "why=WHY" (the first thing found wrong). */
static inline void ftcheck_outcome(const char *why)
{
    if (why != NULL) FTCHECK("why", "%s", why);
    FTCHECK("outcome", "%s", why == NULL ? "ok" : "wrong");
}

/* The size in bytes of the messages a pattern program checks its data in:
 * FTCHECK_MESSAGE_BYTES from the environment (the campaign's --message-size,
 * tests/harness/ulfm_patterns.py), else FALLBACK, the program's own size.
 * A set value must be a multiple of 8 from 8 to FTCHECK_MESSAGE_MAX (whole
 * words of any type the programs send); anything else ends the job with one
 * line from rank 0 and exit status 2. Every rank reports the size it uses as
 * message_bytes=N, which the harness compares with the size it asked for. */
#define FTCHECK_MESSAGE_MAX (64ull << 20)

static inline size_t ftcheck_message_bytes(size_t fallback)
{
    const char *text = getenv("FTCHECK_MESSAGE_BYTES");
    size_t bytes = fallback;
    if (text != NULL && *text != '\0') {
        unsigned long long value = 0;
        const char *c = text;
        while (*c >= '0' && *c <= '9' && value <= FTCHECK_MESSAGE_MAX) value = value * 10 + (unsigned long long)(*c++ - '0');
        if (*c != '\0' || value < 8 || value % 8 != 0 || value > FTCHECK_MESSAGE_MAX) {
            if (ftcheck_rank() == 0) {
                fprintf(stderr, "FTCHECK_MESSAGE_BYTES=%s: give a multiple of 8 from 8 to %llu\n", text,
                        FTCHECK_MESSAGE_MAX);
            }
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        bytes = (size_t)value;
    }
    FTCHECK("message_bytes", "%zu", bytes);
    return bytes;
}

/* A payload of COUNT ints (COUNT >= 2) that says who sent it and when: A and
 * B first, then words that depend on A, B and their place, so that a message
 * cut short, shifted or from another sender or round fails the check. */
static inline int ftcheck_payload_word(int a, int b, int i)
{
    return (int)(((unsigned)a * 2654435761u + (unsigned)b * 40503u + (unsigned)i * 97u) & 0x7fffffff);
}

static inline void ftcheck_payload_fill(int *buf, int count, int a, int b)
{
    buf[0] = a;
    buf[1] = b;
    for (int i = 2; i < count; i++) buf[i] = ftcheck_payload_word(a, b, i);
}

/* Whether BUF holds the payload of (A, B) in all its COUNT ints. */
static inline int ftcheck_payload_ok(const int *buf, int count, int a, int b)
{
    if (buf[0] != a || buf[1] != b) return 0;
    for (int i = 2; i < count; i++) {
        if (buf[i] != ftcheck_payload_word(a, b, i)) return 0;
    }
    return 1;
}

/* Steps ordered between ranks without MPI (an MPI call would read messages,
 * such as a revoke, that a test wants left unread): DIR/NAME is created by
 * one rank and awaited by another, polling every millisecond. */
static inline void ftcheck_mark(const char *dir, const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (f != NULL) fclose(f);
}

/* Wait for DIR/NAME outside MPI; the job aborts after 30 s. */
static inline void ftcheck_await_mark(const char *dir, const char *name)
{
    char path[512];
    struct stat st;
    struct timespec pause = {0, 1000000};
    snprintf(path, sizeof path, "%s/%s", dir, name);
    for (int i = 0; i < 30000; i++) {
        if (stat(path, &st) == 0) return;
        nanosleep(&pause, NULL);
    }
    fprintf(stderr, "ftcheck: %s never appeared\n", path);
    MPI_Abort(MPI_COMM_WORLD, 3);
}

#endif
