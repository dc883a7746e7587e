/* Metrics of a rank-to-node map: neighbour hops and stencil link loads. */
#include "slide_internal.h"

#include <string.h>

#define LINKS_PER_NODE (2 * SLIDE_MAX_DIMS)

size_t slide_measure_workspace_bytes(const slide_layout *lay)
{
    if (lay == NULL)
        return 0;
    return ((size_t)lay->nodes * (LINKS_PER_NODE + 1) + 3 * (size_t)lay->ranks) *
           sizeof(uint32_t);
}

/* Route one message a -> b in dimension order and count it on every directed
 * link it uses. Link index: node * 6 + dim * 2 + (0 for +, 1 for -). */
static void route(const slide_layout *lay, uint32_t *load, int32_t a,
                  const int32_t *ca, const int32_t *cb)
{
    int32_t node = a;
    for (int d = 0; d < SLIDE_MAX_DIMS; d++) {
        const int32_t n = lay->grid.size[d];
        const int32_t from = ca[d], to = cb[d];
        if (from == to)
            continue;
        int dir;
        int32_t steps;
        if (lay->grid.periodic) {
            int32_t fwd = to - from < 0 ? to - from + n : to - from;
            dir = fwd <= n - fwd ? +1 : -1;
            steps = dir > 0 ? fwd : n - fwd;
        } else {
            dir = to > from ? +1 : -1;
            steps = dir > 0 ? to - from : from - to;
        }
        int32_t c = from;
        for (int32_t k = 0; k < steps; k++) {
            load[(size_t)node * LINKS_PER_NODE + (size_t)d * 2 + (dir < 0)]++;
            int32_t c2 = c + dir;
            if (c2 < 0)
                c2 += n;
            else if (c2 >= n)
                c2 -= n;
            node += (c2 - c) * lay->stride[d];
            c = c2;
        }
    }
}

static void count_pair(const slide_layout *lay, uint32_t *load, slide_metrics *m,
                       int32_t a, int32_t b, const int32_t *ca, const int32_t *cb)
{
    int32_t h = 0;
    for (int d = 0; d < SLIDE_MAX_DIMS; d++)
        h += slide_dist1_(ca[d], cb[d], lay->grid.size[d], lay->grid.periodic);
    m->pairs++;
    m->hops_sum += h;
    if (h > m->hops_max)
        m->hops_max = h;
    m->hops_hist[h < SLIDE_HOPS_HIST ? h : SLIDE_HOPS_HIST - 1]++;
    if (a != b) {
        route(lay, load, a, ca, cb);
        route(lay, load, b, cb, ca);
    }
}

int slide_measure(const slide_layout *lay, const int32_t *rank_to_node,
                  int stencil_periodic, slide_metrics *out, void *work,
                  size_t work_bytes)
{
    if (lay == NULL || rank_to_node == NULL || out == NULL || work == NULL ||
        stencil_periodic < -1 || stencil_periodic > 1)
        return SLIDE_EINVAL;
    if (work_bytes < slide_measure_workspace_bytes(lay) || ((uintptr_t)work % 8) != 0)
        return SLIDE_EWORKSPACE;
    const int periodic = stencil_periodic < 0 ? lay->grid.periodic : stencil_periodic;
    for (int32_t r = 0; r < lay->ranks; r++)
        if (rank_to_node[r] < 0 || rank_to_node[r] >= lay->nodes)
            return SLIDE_EMAP;

    uint32_t *load = (uint32_t *)work;
    uint32_t *per_node = load + (size_t)lay->nodes * LINKS_PER_NODE;
    int32_t *coords = (int32_t *)(per_node + lay->nodes); /* [3 * ranks] */
    memset(work, 0, (size_t)lay->nodes * (LINKS_PER_NODE + 1) * sizeof(uint32_t));
    for (int32_t r = 0; r < lay->ranks; r++)
        slide_node_coords(lay, rank_to_node[r], coords + 3 * (size_t)r);
    slide_metrics m;
    memset(&m, 0, sizeof m);

    const int32_t *L = lay->logical;
    const int32_t rs[3] = {L[1] * L[2], L[2], 1}; /* rank strides */
    int32_t r = 0;
    for (int32_t x = 0; x < L[0]; x++)
        for (int32_t y = 0; y < L[1]; y++)
            for (int32_t z = 0; z < L[2]; z++, r++) {
                const int32_t a = rank_to_node[r];
                const int32_t home = x * lay->stride[0] + y * lay->stride[1] + z;
                if (a != home)
                    m.ranks_moved++;
                per_node[a]++;
                const int32_t lc[3] = {x, y, z};
                for (int d = 0; d < SLIDE_MAX_DIMS; d++) {
                    int32_t other = -1;
                    if (lc[d] + 1 < L[d])
                        other = r + rs[d];
                    else if (periodic && L[d] >= 3)
                        other = r - lc[d] * rs[d];
                    if (other >= 0)
                        count_pair(lay, load, &m, a, rank_to_node[other], coords + 3 * (size_t)r,
                                   coords + 3 * (size_t)other);
                }
            }
    for (size_t i = 0; i < (size_t)lay->nodes * LINKS_PER_NODE; i++) {
        if (load[i] >= 1)
            m.links_used++;
        if (load[i] > 1)
            m.links_overloaded++;
        if ((int32_t)load[i] > m.link_load_max)
            m.link_load_max = (int32_t)load[i];
    }
    for (int32_t i = 0; i < lay->nodes; i++)
        if ((int32_t)per_node[i] > m.ranks_per_node_max)
            m.ranks_per_node_max = (int32_t)per_node[i];
    m.hops_mean = m.pairs > 0 ? (double)m.hops_sum / (double)m.pairs : 0.0;
    *out = m;
    return SLIDE_OK;
}
