/* Ranks per node: the block of the rank grid that each node rank stands for
 * (slide_core.h, "ranks per node"): parsing, the default block, numbering. */
#include "slide_internal.h"

#define BLOCK_MAX (1 << 20)   /* ranks per node */
#define RANKS_MAX (1 << 28)   /* ranks of the rank grid */

int slide_sizes_parse_(const char *text, int32_t ndims, int64_t max_product, int32_t sizes[SLIDE_MAX_DIMS])
{
    int32_t b[SLIDE_MAX_DIMS] = {1, 1, 1};
    int32_t n = 0;
    int64_t product = 1;
    const char *p = text;
    for (;;) {
        int64_t v = 0;
        if (*p < '0' || *p > '9')
            return -1;
        while (*p >= '0' && *p <= '9') {
            v = v * 10 + (*p++ - '0');
            if (v > max_product)
                return -1;
        }
        if (v < 1 || n == ndims)
            return -1;
        product *= v;
        if (product > max_product)
            return -1;
        b[n++] = (int32_t)v;
        if (*p == '\0')
            break;
        if (*p++ != 'x')
            return -1;
    }
    if (n != ndims)
        return -1;
    for (int d = 0; d < SLIDE_MAX_DIMS; d++)
        sizes[d] = b[d];
    return 0;
}

int slide_block_parse(const char *text, int32_t ndims, int32_t block[SLIDE_MAX_DIMS])
{
    if (text == NULL || block == NULL || (ndims != 2 && ndims != 3))
        return SLIDE_EINVAL;
    return slide_sizes_parse_(text, ndims, BLOCK_MAX, block) == 0 ? SLIDE_OK : SLIDE_EBLOCK;
}

int slide_block_default(int32_t k, int32_t ndims, int32_t block[SLIDE_MAX_DIMS])
{
    if (block == NULL || k < 1 || k > BLOCK_MAX || (ndims != 2 && ndims != 3))
        return SLIDE_EINVAL;
    /* Prime factors largest first, each to the dimension with the smallest
     * product so far (the first such): the most even split, sorted down. */
    int32_t b[SLIDE_MAX_DIMS] = {1, 1, 1}, primes[32], nprimes = 0, rest = k;
    for (int32_t f = 2; f * f <= rest; f++)
        while (rest % f == 0) {
            primes[nprimes++] = f;
            rest /= f;
        }
    if (rest > 1)
        primes[nprimes++] = rest;
    for (int32_t i = nprimes - 1; i >= 0; i--) {
        int smallest = 0;
        for (int d = 1; d < ndims; d++)
            if (b[d] < b[smallest])
                smallest = d;
        b[smallest] *= primes[i];
    }
    for (int i = 0; i < ndims; i++) /* larger sizes first */
        for (int j = i + 1; j < ndims; j++)
            if (b[j] > b[i]) {
                int32_t t = b[i];
                b[i] = b[j];
                b[j] = t;
            }
    for (int d = 0; d < SLIDE_MAX_DIMS; d++)
        block[d] = b[d];
    return SLIDE_OK;
}

int64_t slide_block_ranks(const slide_layout *lay, const int32_t block[SLIDE_MAX_DIMS])
{
    if (lay == NULL || block == NULL)
        return -1;
    int64_t ranks = lay->ranks;
    for (int d = 0; d < SLIDE_MAX_DIMS; d++) {
        if (block[d] < 1 || block[d] > BLOCK_MAX || (d >= lay->grid.ndims && block[d] != 1))
            return -1;
        ranks *= block[d];
        if (ranks > RANKS_MAX)
            return -1;
    }
    return ranks;
}

int32_t slide_block_rank(const slide_layout *lay, const int32_t block[SLIDE_MAX_DIMS],
                         int32_t node_rank, int32_t lane)
{
    const int32_t *L = lay->logical, *b = block;
    const int32_t c[3] = {node_rank / (L[1] * L[2]), node_rank / L[2] % L[1], node_rank % L[2]};
    const int32_t o[3] = {lane / (b[1] * b[2]), lane / b[2] % b[1], lane % b[2]};
    int32_t rank = 0;
    for (int d = 0; d < SLIDE_MAX_DIMS; d++)
        rank = rank * (L[d] * b[d]) + c[d] * b[d] + o[d];
    return rank;
}

void slide_block_locate(const slide_layout *lay, const int32_t block[SLIDE_MAX_DIMS], int32_t rank,
                        int32_t *node_rank, int32_t *lane)
{
    const int32_t *L = lay->logical, *b = block;
    int32_t f[3], rest = rank;
    for (int d = SLIDE_MAX_DIMS - 1; d >= 0; d--) {
        f[d] = rest % (L[d] * b[d]);
        rest /= L[d] * b[d];
    }
    int32_t n = 0, k = 0;
    for (int d = 0; d < SLIDE_MAX_DIMS; d++) {
        n = n * L[d] + f[d] / b[d];
        k = k * b[d] + f[d] % b[d];
    }
    *node_rank = n;
    *lane = k;
}

int slide_block_rank_nodes(const slide_layout *lay, const int32_t block[SLIDE_MAX_DIMS],
                           const int32_t *rank_to_node, int32_t *rank_node)
{
    const int64_t ranks = slide_block_ranks(lay, block);
    if (ranks < 0 || rank_to_node == NULL || rank_node == NULL)
        return SLIDE_EINVAL;
    for (int32_t f = 0; f < ranks; f++) {
        int32_t n, k;
        slide_block_locate(lay, block, f, &n, &k);
        rank_node[f] = rank_to_node[n];
    }
    return SLIDE_OK;
}
