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

#define DOMAIN_PREFIX "domain="

/* The label of a `domain=LABEL` field, or NULL if the field is not one. */
static const char *domain_label(const char *field)
{
    return strncmp(field, DOMAIN_PREFIX, sizeof DOMAIN_PREFIX - 1) == 0 ? field + sizeof DOMAIN_PREFIX - 1 : NULL;
}

/* The number of `label` among labels[0..*count-1], adding it if new; -1 when out of memory. */
static int32_t domain_number(char **labels, int32_t *count, const char *label)
{
    for (int32_t k = 0; k < *count; k++)
        if (strcmp(labels[k], label) == 0)
            return k;
    size_t len = strlen(label) + 1;
    char *copy = malloc(len);
    if (!copy)
        return -1;
    memcpy(copy, label, len);
    labels[*count] = copy;
    return (*count)++;
}

int sliding_nodes_read(const char *path, int ndims, const int32_t sizes[3], int32_t nnodes,
                       const char *const *names, int32_t *grid_node, int32_t *where)
{
    return sliding_nodes_read_domains(path, ndims, sizes, nnodes, names, grid_node, NULL, NULL, where);
}

int sliding_nodes_read_domains(const char *path, int ndims, const int32_t sizes[3], int32_t nnodes,
                               const char *const *names, int32_t *grid_node, int32_t *domain_of_node,
                               int32_t *ndomains, int32_t *where)
{
    if (!path || !sizes || !names || !grid_node || !where || ndims < 2 || ndims > 3 || nnodes < 1)
        return SLIDING_ERR_ARG;
    *where = 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return SLIDING_ERR_COORDS;
    unsigned char *taken = calloc((size_t)nnodes, 1); /* grid node ids given */
    char **labels = calloc((size_t)nnodes, sizeof *labels); /* a label per domain, at most one per node line */
    int32_t nlabels = 0;
    for (int32_t j = 0; j < nnodes; j++) {
        grid_node[j] = -1;
        if (domain_of_node)
            domain_of_node[j] = -1;
    }
    char line[LINE_MAX_CHARS];
    int32_t lineno = 0, listed = 0;
    int form = 0;       /* 1: names only, 1 + ndims: names and coordinates (without the domain field) */
    int with_domain = -1; /* whether node lines end with domain=LABEL: -1 until the first node line */
    int status = taken && labels ? SLIDING_OK : SLIDING_ERR_NOMEM;
    while (status == SLIDING_OK && fgets(line, sizeof line, f)) {
        lineno++;
        char *field[5];
        int n = fields(line, field, 5);
        if (n == 0 || field[0][0] == '#')
            continue;
        const char *label = n > 1 && n <= 5 ? domain_label(field[n - 1]) : NULL;
        if (label)
            n--;
        if (strlen(line) == sizeof line - 1 || n > 4 || (form && n != form) || (n != 1 && n != 1 + ndims) ||
            (label && !*label) || (with_domain >= 0 && with_domain != (label != NULL))) {
            status = SLIDING_ERR_COORDS;
            break;
        }
        form = n;
        with_domain = label != NULL;
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
        if (label) {
            int32_t k = domain_number(labels, &nlabels, label);
            if (k < 0) {
                status = SLIDING_ERR_NOMEM;
                break;
            }
            if (domain_of_node)
                domain_of_node[id] = k;
        }
    }
    if (status == SLIDING_OK && ferror(f)) {
        lineno = 0;
        status = SLIDING_ERR_COORDS;
    }
    fclose(f);
    free(taken);
    for (int32_t k = 0; k < nlabels; k++)
        free(labels[k]);
    free(labels);
    if (status != SLIDING_OK) {
        *where = status == SLIDING_ERR_NOMEM ? 0 : lineno;
        return status;
    }
    for (int32_t j = 0; j < nnodes; j++) {
        if (grid_node[j] < 0) {
            *where = -(j + 1);
            return SLIDING_ERR_COORDS;
        }
    }
    if (ndomains)
        *ndomains = nlabels;
    return SLIDING_OK;
}
