/*
 * sliding_grouping.c -- which processes of the creation communicator share a
 * node, and the names a node coordinate file knows the nodes by.
 */
#include <stdio.h>
#include <stdlib.h>

#include "sliding_internal.h"

typedef struct keyed {
    long long key;
    int rank;
} keyed_t;

static int by_key(const void *a, const void *b)
{
    const keyed_t *x = a, *y = b;
    if (x->key != y->key) {
        return x->key < y->key ? -1 : 1;
    }
    return x->rank - y->rank;
}

static int by_rank(const void *a, const void *b)
{
    return ((const keyed_t *)a)->rank - ((const keyed_t *)b)->rank;
}

/* Group the processes by their keys[] into nodes ordered by lowest rank:
 * job_node[p] (0..groups-1) and lane[p]; the count of nodes in *groups.
 * SLIDING_ERR_NODES if they differ in size. */
int group_nodes(const long long *keys, int size, int *job_node, int *lane, int *groups,
                       long long *group_key)
{
    keyed_t *sorted = malloc(sizeof *sorted * (size_t)size), *first = malloc(sizeof *first * (size_t)size);
    if (!sorted || !first) {
        free(sorted);
        free(first);
        return SLIDING_ERR_NOMEM;
    }
    for (int p = 0; p < size; p++) {
        sorted[p] = (keyed_t){keys[p], p};
    }
    qsort(sorted, (size_t)size, sizeof *sorted, by_key);
    int n = 0; /* runs of one key: their first (lowest) rank */
    for (int i = 0; i < size; i++) {
        if (i == 0 || sorted[i].key != sorted[i - 1].key) {
            first[n++] = sorted[i];
        }
    }
    qsort(first, (size_t)n, sizeof *first, by_rank); /* nodes in order of their lowest rank */
    int status = SLIDING_OK, members = size / n;
    for (int g = 0; g < n; g++) {
        group_key[g] = first[g].key;
        int count = 0;
        const keyed_t probe = {first[g].key, first[g].rank};
        const keyed_t *at = bsearch(&probe, sorted, (size_t)size, sizeof *sorted, by_key);
        for (const keyed_t *q = at; q < sorted + size && q->key == first[g].key; q++) {
            job_node[q->rank] = g;
            lane[q->rank] = count++;
        }
        if (count != members || size % n != 0) {
            status = SLIDING_ERR_NODES;
        }
    }
    *groups = n;
    free(sorted);
    free(first);
    return status;
}

/* The node names a coordinate file uses: the decimal key, or the host name
 * of the node's lowest rank (every process sends its own). */
int node_names(MPI_Comm comm, int size, int by_key_option, const long long *group_key, int groups,
                      char ***out)
{
    char *all = by_key_option ? NULL : malloc((size_t)size * MPI_MAX_PROCESSOR_NAME);
    char **names = calloc((size_t)groups, sizeof *names), mine[MPI_MAX_PROCESSOR_NAME] = "";
    int length = 0, status = names && (by_key_option || all) ? SLIDING_OK : SLIDING_ERR_NOMEM;
    MPI_Allreduce(MPI_IN_PLACE, &status, 1, MPI_INT, MPI_MAX, comm);
    if (status == SLIDING_OK && !by_key_option) {
        MPI_Get_processor_name(mine, &length);
        MPI_Allgather(mine, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, comm);
    }
    for (int g = 0; status == SLIDING_OK && g < groups; g++) {
        names[g] = malloc(MPI_MAX_PROCESSOR_NAME + 24);
        if (!names[g]) {
            status = SLIDING_ERR_NOMEM;
        } else if (by_key_option) {
            snprintf(names[g], MPI_MAX_PROCESSOR_NAME + 24, "%lld", group_key[g]);
        } else { /* group_key is the node's lowest rank */
            snprintf(names[g], MPI_MAX_PROCESSOR_NAME + 24, "%.*s", MPI_MAX_PROCESSOR_NAME - 1,
                     all + (size_t)group_key[g] * MPI_MAX_PROCESSOR_NAME);
        }
    }
    free(all);
    *out = names;
    return status;
}
