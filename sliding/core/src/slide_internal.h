/* Helpers shared by the slide_core sources; not part of the public API. */
#ifndef SLIDE_INTERNAL_H
#define SLIDE_INTERNAL_H

#include "slide_core.h"

/* Coordinate of node id along dimension d. */
static inline int32_t slide_coord_(const slide_layout *lay, int32_t node, int d)
{
    return (node / lay->stride[d]) % lay->grid.size[d];
}

/* Distance between coordinates a and b on a ring/segment of n nodes. */
static inline int32_t slide_dist1_(int32_t a, int32_t b, int32_t n, int periodic)
{
    int32_t d = a > b ? a - b : b - a;
    if (periodic && n - d < d)
        d = n - d;
    return d;
}

/* 1 if node (given coordinates) lies in the spare planes (holds no rank
 * before any failure): a spare, or an unused node of a spare set. */
static inline int slide_in_planes_c_(const slide_layout *lay, const int32_t c[3])
{
    return c[0] >= lay->logical[0] || c[1] >= lay->logical[1] ||
           c[2] >= lay->logical[2];
}

/* Parse "AxB" / "AxBxC": exactly ndims decimal sizes >= 1 joined by 'x',
 * their product at most max_product; sizes[] = them, 1 past ndims. Returns 0,
 * or -1 (sizes untouched) for anything else. */
int slide_sizes_parse_(const char *text, int32_t ndims, int64_t max_product, int32_t sizes[SLIDE_MAX_DIMS]);

/* The node's slide_role (node in range). */
int slide_role_(const slide_layout *lay, int32_t node);

#define NODE_FREE (-1)   /* node state: alive, no rank */
#define NODE_DEAD (-2)   /* node state: failed */
#define NODE_UNUSED (-3) /* node state: not in the job (a spare set's other plane nodes) */

/* Node one step from `node` along d in direction s (+1/-1), wrapping on a
 * torus; -1 past a mesh edge. */
static inline int32_t slide_step_(const slide_layout *lay, int32_t node, int d, int s)
{
    const int32_t n = lay->grid.size[d], c = slide_coord_(lay, node, d);
    int32_t c2 = c + s;
    if (c2 < 0 || c2 >= n) {
        if (!lay->grid.periodic)
            return -1;
        c2 = (c2 + n) % n;
    }
    return node + (c2 - c) * lay->stride[d];
}

/* Steps from `start` along d toward s to the first free node of n2r (dead
 * nodes are passed), or -1 if the line has none before coming back to start. */
static inline int32_t slide_steps_to_free_(const slide_layout *lay, const int32_t *n2r, int32_t start,
                                           int d, int s)
{
    int32_t node = start;
    for (int32_t k = 1; k < lay->grid.size[d]; k++) {
        node = slide_step_(lay, node, d, s);
        if (node < 0)
            return -1;
        if (n2r[node] == NODE_FREE)
            return k;
    }
    return -1;
}

/* A method's left fold over failures (slide_fold.c): simple, slide1d and
 * hybrid's 1D phase work on node states, slide2d and hybrid's 2D phase on
 * plane maps. r2n is the map after the failures so far. */
typedef struct slide_fold {
    const slide_layout *lay;
    int method;
    int planes;          /* 1: plane maps (slide2d, hybrid until its 2D phase ends) */
    int32_t *r2n;        /* [ranks] node of each rank */
    int32_t *dead;       /* [nodes] 1 if failed */
    int32_t ndead;
    /* node states */
    int32_t *n2r;        /* [nodes] rank on the node, NODE_FREE or NODE_DEAD */
    int32_t *spare;      /* [nspare] nodes free when the node phase began, ascending */
    int32_t *spare_c;    /* [3 * nspare] their coordinates */
    int32_t nspare;
    int32_t *line_free;  /* [nodes / size[d1]] free nodes per line along d1 */
    int32_t *path;       /* [path capacity] */
    int32_t nfree;       /* free nodes in the grid */
    int d1;              /* primary spare dimension */
    /* plane maps */
    int32_t *inv[SLIDE_MAX_DIMS]; /* [size[d]] logical plane on it, or NODE_FREE */
    int32_t *fwd[SLIDE_MAX_DIMS]; /* [logical[d]] physical plane of it */
} slide_fold;

/* Workspace words of one fold. */
int64_t slide_fold_words_(const slide_layout *lay);
/* Start a fold of `method` (not shrink, not routed) in workspace w (at least
 * slide_fold_words_ words); r2n receives the failure-free map. */
void slide_fold_init_(slide_fold *f, const slide_layout *lay, int method, int32_t *w,
                      int32_t *r2n);
/* Handle failed node `node`; on an error nothing changes. */
int slide_fold_step_(slide_fold *f, int32_t node);

/* The routed method (slide_routed.c): words of workspace, and the map after
 * failed[0..nfailed-1], with one record per failure in choices (may be NULL). */
int64_t slide_routed_words_(const slide_layout *lay);
int slide_routed_(const slide_layout *lay, const int32_t *failed, int32_t nfailed,
                  int32_t *r2n, slide_choice *choices, int32_t *w, int32_t *err_index);

/* Fill *t as the torus (periodic) or mesh of the given sizes, routed in
 * dimension order; sizes are valid (checked by the caller). */
void slide_topo_grid_(slide_topo *t, int periodic, int ndims, const int32_t *size);

#endif
