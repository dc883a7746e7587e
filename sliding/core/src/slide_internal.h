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

/* 1 if node (given coordinates) is a spare. */
static inline int slide_is_spare_c_(const slide_layout *lay, const int32_t c[3])
{
    return c[0] >= lay->logical[0] || c[1] >= lay->logical[1] ||
           c[2] >= lay->logical[2];
}

/* Fill *t as the torus (periodic) or mesh of the given sizes, routed in
 * dimension order; sizes are valid (checked by the caller). */
void slide_topo_grid_(slide_topo *t, int periodic, int ndims, const int32_t *size);

#endif
