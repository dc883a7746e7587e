/*
 * sliding_kill.c -- a whole node dies at a kill point (sliding_kill.h).
 *
 * FTSLIDE_KILL is a comma-separated list of entries NODE@POINT or
 * NODE@POINT#N. NODE@POINT names the first time the node reaches POINT,
 * NODE@POINT#N its Nth time (N >= 1): checkpoint#3 is the third checkpoint,
 * recovery_map#2 the second recovery's map, iter=5#2 the second start of
 * iteration 5 (after a rollback). NODE is matched as written by "%d" (no sign,
 * no leading zero), as in ftslide_killpoint.h.
 *
 * Each process counts how many times it has reached each point that some
 * entry names; the counts live in a table built from FTSLIDE_KILL the first
 * time a kill point is passed with it set (sliding_killpoint() returns before
 * calling here when it is unset, so then nothing is counted or allocated).
 * The K processes of a node pass the same points in the same order, so their
 * counts agree; a spare counts from its promotion on, as its node does.
 */
#include "sliding_kill.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ftslide_killpoint.h"

/* One entry of FTSLIDE_KILL. */
typedef struct kill_entry {
    const char *node;      /* the NODE text, node_len characters */
    size_t node_len;
    const char *label;     /* POINT or POINT#N as written: the "killed at" line names it so */
    size_t label_len;
    int point;             /* index of POINT in the counted points */
    long occurrence;       /* N (1 without #N); 0 for a malformed #N: never matches */
} kill_entry;

/* A point some entry names, and how many times this process has reached it. */
typedef struct counted_point {
    const char *name;      /* points into FTSLIDE_KILL, len characters */
    size_t len;
    long reached;
} counted_point;

typedef struct kill_table {
    int nentries, npoints;
    kill_entry *entries;
    counted_point *points;
} kill_table;

/* N of a "#N" suffix: a positive decimal integer, digits only (at most 19,
 * leading zeros allowed) up to LONG_MAX. Anything else is malformed ("#",
 * "#0", "#-1", "#+3", "#3x", "# 3", an overflow) and gives 0, which no count
 * equals: a malformed entry never matches, and never fires at the first
 * occurrence either. */
static long occurrence_of(const char *digits, size_t len)
{
    if (len == 0 || len > 19) {
        return 0;
    }
    long n = 0;
    for (size_t i = 0; i < len; i++) {
        if (digits[i] < '0' || digits[i] > '9') {
            return 0;
        }
        int d = digits[i] - '0';
        if (n > (LONG_MAX - d) / 10) {
            return 0;
        }
        n = n * 10 + d;
    }
    return n;
}

/* The index of the counted point `name` (len characters), -1 if no entry names it. */
static int find_point(const kill_table *t, const char *name, size_t len)
{
    for (int p = 0; p < t->npoints; p++) {
        if (t->points[p].len == len && strncmp(t->points[p].name, name, len) == 0) {
            return p;
        }
    }
    return -1;
}

/* The index of the counted point `name` (len characters), added if new. */
static int point_index(kill_table *t, const char *name, size_t len)
{
    int p = find_point(t, name, len);
    if (p >= 0) {
        return p;
    }
    t->points[t->npoints] = (counted_point){name, len, 0};
    return t->npoints++;
}

/* The entries of `spec`, parsed once for the life of the process (the
 * environment does not change while it runs). An entry without '@' names no
 * node and is skipped. A point name cannot hold '#': the last '#' of an
 * entry always starts its occurrence. NULL when out of memory: then no kill
 * fires. */
static kill_table *kill_table_of(const char *spec)
{
    static int built = 0;
    static kill_table table;
    if (built) {
        return table.entries != NULL ? &table : NULL;
    }
    built = 1;
    int most = 1;
    for (const char *c = spec; *c != '\0'; c++) {
        most += *c == ',';
    }
    table.entries = calloc((size_t)most, sizeof *table.entries);
    table.points = calloc((size_t)most, sizeof *table.points);
    if (table.entries == NULL || table.points == NULL) {
        free(table.entries);
        free(table.points);
        table.entries = NULL;
        return NULL;
    }
    for (const char *entry = spec; *entry != '\0';) {
        const char *comma = strchr(entry, ',');
        size_t len = comma ? (size_t)(comma - entry) : strlen(entry);
        const char *at = memchr(entry, '@', len);
        if (at != NULL) {
            kill_entry *e = &table.entries[table.nentries++];
            e->node = entry;
            e->node_len = (size_t)(at - entry);
            e->label = at + 1;
            e->label_len = len - e->node_len - 1;
            const char *hash = NULL;
            for (const char *c = e->label; c < e->label + e->label_len; c++) {
                hash = *c == '#' ? c : hash;
            }
            size_t point_len = hash ? (size_t)(hash - e->label) : e->label_len;
            e->occurrence = hash ? occurrence_of(hash + 1, e->label_len - point_len - 1) : 1;
            e->point = point_index(&table, e->label, point_len);
        }
        entry = comma ? comma + 1 : entry + len;
    }
    return &table;
}

/* Appends `text` to the line being built in buf (size bytes, at *used),
 * keeping room for the closing ")\n"; returns 0 when it does not fit. */
static int append(char *buf, size_t size, size_t *used, const char *text)
{
    size_t len = strlen(text);
    if (*used + len + 3 > size) {
        return 0;
    }
    memcpy(buf + *used, text, len + 1);
    *used += len;
    return 1;
}

/* Appends the ranks of `ranks` that are >= 0, comma-separated, or "none". */
static void append_ranks(char *buf, size_t size, size_t *used, const int *ranks, int k)
{
    int any = 0;
    char one[16];
    for (int l = 0; l < k; l++) {
        if (ranks[l] < 0) {
            continue;
        }
        snprintf(one, sizeof one, any ? ",%d" : "%d", ranks[l]);
        if (!append(buf, size, used, one)) {
            append(buf, size, used, ",...");
            return;
        }
        any = 1;
    }
    if (!any) {
        append(buf, size, used, "none");
    }
}

/* The "killed at" line, which the Python driver (ftslide/sliding/runtime.py)
 * reads (written as ftslide_killpoint.h writes its own):
 *     ftslide: node 4 killed at checkpoint#3 (world ranks 8,9; logical ranks 6,7) */
static void announce_kill(const sliding_victims *v, const kill_entry *e)
{
    char line[4096];
    size_t used = 0;
    int m = snprintf(line, sizeof line, "ftslide: node %d killed at %.*s (world ranks ", v->node,
                     (int)(e->label_len < 256 ? e->label_len : 256), e->label);
    if (m <= 0 || (size_t)m >= sizeof line) {
        return;
    }
    used = (size_t)m;
    append_ranks(line, sizeof line, &used, v->world_ranks, v->k);
    append(line, sizeof line, &used, "; logical ranks ");
    append_ranks(line, sizeof line, &used, v->logical_ranks, v->k);
    memcpy(line + used, ")\n", 3); /* append() kept room for it */
    ftslide_announce_kill(line, used + 2);
}

/* The entry that fires now for node `node` reaching `point` for the
 * `reached`th time, or NULL. */
static const kill_entry *firing_entry(const kill_table *t, int p, long reached, int node)
{
    char node_text[16];
    int n = snprintf(node_text, sizeof node_text, "%d", node);
    for (int i = 0; i < t->nentries; i++) {
        const kill_entry *e = &t->entries[i];
        if (e->point == p && e->occurrence == reached && e->node_len == (size_t)n &&
            strncmp(e->node, node_text, (size_t)n) == 0) {
            return e;
        }
    }
    return NULL;
}

void sliding_kill_node_at(const sliding_victims *v, const char *point)
{
    const char *spec = ftslide_killspec();
    if (spec == NULL) {
        return;
    }
    kill_table *t = kill_table_of(spec);
    if (t == NULL) {
        return;
    }
    int p = find_point(t, point, strlen(point));
    if (p < 0) {
        return; /* no entry names this point: nothing to count */
    }
    long reached = t->points[p].reached < LONG_MAX ? ++t->points[p].reached : LONG_MAX;
    const kill_entry *e = firing_entry(t, p, reached, v->node);
    if (e == NULL) {
        return;
    }
    /* Announce first: two processes of the node can reach the point at once
     * and kill each other before either would get to a line of its own. */
    announce_kill(v, e);
    /* The node's daemon first (FTSLIDE_KILL_NODE=1, as ftslide_killpoint): two
     * processes of the node that reach the point together kill each other, and
     * whichever goes first must not leave the daemon behind (the node would
     * then be a node whose processes died, not a lost node). */
    ftslide_kill_daemon_if_asked();
    for (int l = 0; l < v->k; l++) { /* the node's other processes, then this one */
        if (l != v->lane && v->pids[l] > 0) {
            kill((pid_t)v->pids[l], SIGKILL);
        }
    }
    kill(getpid(), SIGKILL);
}
