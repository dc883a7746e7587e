/* Metrics of a rank-to-node map: the stencil's messages routed on the
 * layout's network (slide_topo_round), neighbour hops and link loads. */
#include "slide_internal.h"

#include <string.h>

static const int32_t UNIT_BLOCK[SLIDE_MAX_DIMS] = {1, 1, 1};

/* Upper bound of the stencil's messages: two per pair, ndims pairs per rank. */
static int64_t stencil_capacity(const slide_layout *lay, int64_t ranks)
{
    return 2 * (int64_t)lay->grid.ndims * ranks;
}

int64_t slide_stencil_messages(const slide_layout *lay, int stencil_periodic, int dim,
                               int32_t *src, int32_t *dst, int64_t cap)
{
    return slide_block_stencil_messages(lay, UNIT_BLOCK, stencil_periodic, dim, src, dst, cap);
}

int64_t slide_block_stencil_messages(const slide_layout *lay, const int32_t block[SLIDE_MAX_DIMS],
                                     int stencil_periodic, int dim, int32_t *src, int32_t *dst,
                                     int64_t cap)
{
    if (lay == NULL || stencil_periodic < -1 || stencil_periodic > 1 || dim < -1 ||
        dim >= lay->grid.ndims || slide_block_ranks(lay, block) < 0)
        return -1;
    const int periodic = stencil_periodic < 0 ? lay->grid.periodic : stencil_periodic;
    const int32_t F[3] = {lay->logical[0] * block[0], lay->logical[1] * block[1],
                          lay->logical[2] * block[2]}; /* the rank grid */
    const int32_t rs[3] = {F[1] * F[2], F[2], 1};     /* rank strides */
    int64_t n = 0;
    int32_t r = 0;
    for (int32_t x = 0; x < F[0]; x++)
        for (int32_t y = 0; y < F[1]; y++)
            for (int32_t z = 0; z < F[2]; z++, r++) {
                const int32_t lc[3] = {x, y, z};
                for (int d = 0; d < SLIDE_MAX_DIMS; d++) {
                    int32_t other = -1;
                    if (dim >= 0 && d != dim)
                        continue;
                    if (lc[d] + 1 < F[d])
                        other = r + rs[d];
                    else if (periodic && F[d] >= 3)
                        other = r - lc[d] * rs[d];
                    if (other < 0)
                        continue;
                    /* the pair's two messages side by side: lower rank first */
                    const int32_t lo = r < other ? r : other, hi = r < other ? other : r;
                    if (n + 2 <= cap) {
                        src[n] = lo, dst[n] = hi;
                        src[n + 1] = hi, dst[n + 1] = lo;
                    }
                    n += 2;
                }
            }
    return n;
}

size_t slide_measure_workspace_bytes(const slide_layout *lay)
{
    return slide_block_measure_workspace_bytes(lay, UNIT_BLOCK);
}

size_t slide_block_measure_workspace_bytes(const slide_layout *lay, const int32_t block[SLIDE_MAX_DIMS])
{
    const int64_t ranks = slide_block_ranks(lay, block);
    if (ranks < 0)
        return 0;
    return ((size_t)lay->net.links + (size_t)lay->nodes) * sizeof(uint32_t) +
           (size_t)stencil_capacity(lay, ranks) * 3 * sizeof(int32_t);
}

int slide_measure(const slide_layout *lay, const int32_t *rank_to_node,
                  int stencil_periodic, slide_metrics *out, void *work,
                  size_t work_bytes)
{
    return slide_block_measure(lay, UNIT_BLOCK, rank_to_node, stencil_periodic, out, work, work_bytes);
}

int slide_block_measure(const slide_layout *lay, const int32_t block[SLIDE_MAX_DIMS],
                        const int32_t *rank_to_node, int stencil_periodic, slide_metrics *out,
                        void *work, size_t work_bytes)
{
    if (lay == NULL || block == NULL || rank_to_node == NULL || out == NULL || work == NULL ||
        stencil_periodic < -1 || stencil_periodic > 1)
        return SLIDE_EINVAL;
    const int64_t ranks = slide_block_ranks(lay, block);
    if (ranks < 0)
        return SLIDE_EBLOCK;
    if (work_bytes < slide_block_measure_workspace_bytes(lay, block) || ((uintptr_t)work % 8) != 0)
        return SLIDE_EWORKSPACE;
    for (int32_t r = 0; r < lay->ranks; r++)
        if (rank_to_node[r] < 0 || rank_to_node[r] >= lay->nodes)
            return SLIDE_EMAP;

    const int64_t cap = stencil_capacity(lay, ranks);
    uint32_t *load = (uint32_t *)work;
    uint32_t *per_node = load + lay->net.links;
    int32_t *src = (int32_t *)(per_node + lay->nodes);
    int32_t *dst = src + cap;
    int32_t *hops = dst + cap;
    const int64_t n = slide_block_stencil_messages(lay, block, stencil_periodic, -1, src, dst, cap);
    for (int64_t i = 0; i < n; i++) { /* ranks -> hosts (node i runs on host i) */
        int32_t node_rank, lane;
        slide_block_locate(lay, block, src[i], &node_rank, &lane);
        src[i] = rank_to_node[node_rank];
        slide_block_locate(lay, block, dst[i], &node_rank, &lane);
        dst[i] = rank_to_node[node_rank];
    }
    slide_topo_round_stats st;
    int rc = slide_topo_round(&lay->net, src, dst, n, load, hops, NULL, &st);
    if (rc != SLIDE_OK)
        return rc;

    slide_metrics m;
    memset(&m, 0, sizeof m);
    for (int64_t i = 0; i < n; i += 2) { /* one pair per two messages, lower rank first */
        const int32_t h = hops[i];
        m.pairs++;
        m.hops_sum += h;
        if (h > m.hops_max)
            m.hops_max = h;
        m.hops_hist[h < SLIDE_HOPS_HIST ? h : SLIDE_HOPS_HIST - 1]++;
    }
    m.link_load_max = st.load_max;
    m.links_used = st.links_used;
    m.links_overloaded = st.links_overloaded;

    memset(per_node, 0, sizeof *per_node * (size_t)lay->nodes);
    const int32_t per_block = (int32_t)(ranks / lay->ranks);
    int32_t initial = 0;
    for (int32_t x = 0; x < lay->logical[0]; x++)
        for (int32_t y = 0; y < lay->logical[1]; y++)
            for (int32_t z = 0; z < lay->logical[2]; z++, initial++) {
                const int32_t node = rank_to_node[initial];
                if (node != x * lay->stride[0] + y * lay->stride[1] + z)
                    m.ranks_moved += per_block;
                per_node[node] += (uint32_t)per_block;
            }
    for (int32_t i = 0; i < lay->nodes; i++)
        if ((int32_t)per_node[i] > m.ranks_per_node_max)
            m.ranks_per_node_max = (int32_t)per_node[i];
    m.hops_mean = m.pairs > 0 ? (double)m.hops_sum / (double)m.pairs : 0.0;
    *out = m;
    return SLIDE_OK;
}
