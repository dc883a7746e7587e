/*
 * Named kill points for fault injection.
 *
 * A program marks the places where a test may kill it:
 *
 *     ftslide_killpoint(world_rank, "before_agree");
 *     ftslide_killpointf(world_rank, "iter=%d", iteration);
 *
 * and the test names the victims in the environment, as a comma-separated list
 * of RANK@POINT:
 *
 *     FTSLIDE_KILL="2@iter=5,3@before_agree"
 *
 * A rank that reaches a point named for it sends itself SIGKILL: it dies at once,
 * with no chance to clean up or flush, exactly as if the process were killed from
 * outside. With FTSLIDE_KILL unset a
 * kill point costs one getenv().
 */
#ifndef FTSLIDE_KILLPOINT_H
#define FTSLIDE_KILLPOINT_H

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static inline void ftslide_killpoint(int rank, const char *point)
{
    const char *spec = getenv("FTSLIDE_KILL");
    if (spec == NULL || *spec == '\0') {
        return;
    }
    char wanted[256];
    int n = snprintf(wanted, sizeof wanted, "%d@%s", rank, point);
    if (n < 0 || (size_t)n >= sizeof wanted) {
        return;
    }
    for (const char *entry = spec; entry != NULL && *entry != '\0';) {
        const char *comma = strchr(entry, ',');
        size_t len = comma ? (size_t)(comma - entry) : strlen(entry);
        if (len == (size_t)n && strncmp(entry, wanted, len) == 0) {
            fprintf(stderr, "ftslide: rank %d killed at %s\n", rank, point);
            fflush(NULL);
            kill(getpid(), SIGKILL);
        }
        entry = comma ? comma + 1 : NULL;
    }
}

static inline void ftslide_killpointf(int rank, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

static inline void ftslide_killpointf(int rank, const char *format, ...)
{
    if (getenv("FTSLIDE_KILL") == NULL) {
        return;
    }
    char point[200];
    va_list args;
    va_start(args, format);
    vsnprintf(point, sizeof point, format, args);
    va_end(args);
    ftslide_killpoint(rank, point);
}

#endif
