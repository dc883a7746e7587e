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
 * outside. FTSLIDE_KILL is read once; with it unset a
 * kill point costs a test of a static variable.
 *
 * Two more variables, read only when a kill point fires:
 *   FTSLIDE_KILL_NODE=1   the whole node goes: the rank SIGKILLs its parent first,
 *                         the node's PRRTE daemon on a multi-node run with one rank
 *                         per node (never set it where mpirun itself is the parent);
 *   FTSLIDE_KILL_LOG=FILE the "killed at" line is also appended to FILE, since a
 *                         line on stderr travels through the daemon and is lost
 *                         with the node.
 */
#ifndef FTSLIDE_KILLPOINT_H
#define FTSLIDE_KILLPOINT_H

#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* FTSLIDE_KILL, read once per compilation unit (a process's environment does
 * not change while it runs; a getenv() walks the whole environment, which in
 * an MPI process is long, and the Open MPI modules pass a kill point with
 * every message they send). NULL when no kill point is set. */
static inline const char *ftslide_killspec(void)
{
    static int looked = 0;
    static const char *spec = NULL;
    if (!looked) {
        spec = getenv("FTSLIDE_KILL");
        if (spec != NULL && *spec == '\0') {
            spec = NULL;
        }
        looked = 1;
    }
    return spec;
}

/* Writes a "killed at" line (len bytes, newline included) to stderr and
 * appends it to FTSLIDE_KILL_LOG, in one write, so that the lines of two
 * processes dying together do not mix: a process killed with its node's
 * daemon may lose what it wrote to stderr. */
static inline void ftslide_announce_kill(const char *line, size_t len)
{
    fputs(line, stderr);
    fflush(NULL);
    const char *log = getenv("FTSLIDE_KILL_LOG");
    if (log != NULL && *log != '\0') {
        int fd = open(log, O_WRONLY | O_APPEND | O_CREAT, 0644);
        if (fd >= 0) {
            if (write(fd, line, len) < 0) {
                /* nothing more to do: the process dies next */
            }
            close(fd);
        }
    }
}

/* With FTSLIDE_KILL_NODE=1 the whole node goes: kill the parent (the node's
 * PRRTE daemon) before the process itself. */
static inline void ftslide_kill_daemon_if_asked(void)
{
    const char *node = getenv("FTSLIDE_KILL_NODE");
    if (node != NULL && strcmp(node, "1") == 0) {
        kill(getppid(), SIGKILL);
    }
}

static inline void ftslide_killpoint(int rank, const char *point)
{
    const char *spec = ftslide_killspec();
    if (spec == NULL) {
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
            char line[300];
            int m = snprintf(line, sizeof line, "ftslide: rank %d killed at %s\n", rank, point);
            if (m > 0 && (size_t)m < sizeof line) {
                ftslide_announce_kill(line, (size_t)m);
            }
            ftslide_kill_daemon_if_asked();
            kill(getpid(), SIGKILL);
        }
        entry = comma ? comma + 1 : NULL;
    }
}

static inline void ftslide_killpointf(int rank, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

static inline void ftslide_killpointf(int rank, const char *format, ...)
{
    if (ftslide_killspec() == NULL) {
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
