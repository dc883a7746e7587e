/* The node coordinate file of sliding_nodes.h. No MPI. */
#include "sliding_nodes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sliding_names.h"

#define LINE_MAX_CHARS 4096

/* Split line into blank-separated fields (in place); returns how many, up to max. */
static int fields(char *line, char **out, int max)
{
    int n = 0;
    for (char *p = line; *p;) {
        while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
            *p++ = '\0';
        if (!*p)
            break;
        if (n == max)
            return max + 1;
        out[n++] = p;
        while (*p && *p != ' ' && *p != '\t' && *p != '\r' && *p != '\n')
            p++;
    }
    return n;
}

/* A coordinate: decimal digits in 0..size-1, else -1. */
static int32_t coordinate(const char *text, int32_t size)
{
    int64_t v = 0;
    if (!*text)
        return -1;
    for (const char *p = text; *p; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        v = v * 10 + (*p - '0');
        if (v >= size)
            return -1;
    }
    return (int32_t)v;
}

int sliding_nodes_read(const char *path, int ndims, const int32_t sizes[3], int32_t nnodes,
                       const char *const *names, int32_t *grid_node, int32_t *where)
{
    if (!path || !sizes || !names || !grid_node || !where || ndims < 2 || ndims > 3 || nnodes < 1)
        return SLIDING_ERR_ARG;
    *where = 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return SLIDING_ERR_COORDS;
    unsigned char *taken = calloc((size_t)nnodes, 1); /* grid node ids given */
    for (int32_t j = 0; j < nnodes; j++)
        grid_node[j] = -1;
    char line[LINE_MAX_CHARS];
    int32_t lineno = 0, listed = 0;
    int form = 0; /* 1: names only, 1 + ndims: names and coordinates */
    int status = taken ? SLIDING_OK : SLIDING_ERR_NOMEM;
    while (status == SLIDING_OK && fgets(line, sizeof line, f)) {
        lineno++;
        char *field[4];
        int n = fields(line, field, 4);
        if (n == 0 || field[0][0] == '#')
            continue;
        if (strlen(line) == sizeof line - 1 || (form && n != form) || (n != 1 && n != 1 + ndims)) {
            status = SLIDING_ERR_COORDS;
            break;
        }
        form = n;
        int32_t j = 0;
        while (j < nnodes && strcmp(names[j], field[0]) != 0)
            j++;
        int32_t id = listed;
        if (n > 1) {
            id = 0;
            for (int d = 0; d < ndims; d++) {
                int32_t c = coordinate(field[1 + d], sizes[d]);
                id = c < 0 || id < 0 ? -1 : id * sizes[d] + c;
            }
        }
        if (j == nnodes || grid_node[j] >= 0 || id < 0 || id >= nnodes || taken[id]) {
            status = SLIDING_ERR_COORDS;
            break;
        }
        grid_node[j] = id;
        taken[id] = 1;
        listed++;
    }
    if (status == SLIDING_OK && ferror(f)) {
        lineno = 0;
        status = SLIDING_ERR_COORDS;
    }
    fclose(f);
    free(taken);
    if (status != SLIDING_OK) {
        *where = lineno;
        return status;
    }
    for (int32_t j = 0; j < nnodes; j++) {
        if (grid_node[j] < 0) {
            *where = -(j + 1);
            return SLIDING_ERR_COORDS;
        }
    }
    return SLIDING_OK;
}
