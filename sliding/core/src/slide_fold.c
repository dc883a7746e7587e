/* The fixed-rule substitution methods, simple, slide1d, slide2d and hybrid,
 * each a left fold over the failures (slide_fold: one failure at a time).
 * slide_map() (slide_map.c) runs them; routed (slide_routed.c) runs hybrid's
 * fold beside its own search. The rules are stated in include/slide_core.h;
 * this file follows them. */
#include "slide_internal.h"

#include <string.h>

/* ---- workspace ----------------------------------------------------------- */

static int32_t primary_dim(const slide_layout *lay)
{
    return lay->spares.ndims > 0 ? lay->spares.dim[0] : 0;
}

static int64_t line_count(const slide_layout *lay, int d)
{
    return (int64_t)lay->nodes / lay->grid.size[d];
}

static int64_t path_capacity(const slide_layout *lay)
{
    return (int64_t)lay->grid.size[0] + lay->grid.size[1] + lay->grid.size[2] + 4;
}

/* Words of one fold: node states, the free-at-start list (id + coordinates),
 * free count per line of the primary spare dimension, a path, and slide2d's
 * dead flags and plane maps. */
int64_t slide_fold_words_(const slide_layout *lay)
{
    int64_t sum = lay->grid.size[0] + lay->grid.size[1] + lay->grid.size[2];
    return 2 * (int64_t)lay->nodes + 4 * (int64_t)(lay->nodes - lay->ranks) +
           line_count(lay, primary_dim(lay)) + path_capacity(lay) + 2 * sum + 8;
}

/* ---- node-level methods (simple, slide1d, hybrid's 1D phase) --------------- */

typedef slide_fold node_ctx;

/* Index of the line parallel to dimension d through node: row-major over
 * the other dimensions. */
static int32_t line_index(const slide_layout *lay, int d, int32_t node)
{
    int32_t idx = 0;
    for (int e = 0; e < SLIDE_MAX_DIMS; e++)
        if (e != d)
            idx = idx * lay->grid.size[e] + slide_coord_(lay, node, e);
    return idx;
}

/* Direction rule: nearest free node along the line through start parallel to
 * d, ties to +. Sets *dir and returns the steps, or -1 if the line (start
 * excluded) has no free node. */
static int32_t nearest_on_line(const node_ctx *cx, int32_t start, int d, int *dir)
{
    int32_t up = slide_steps_to_free_(cx->lay, cx->n2r, start, d, +1);
    int32_t down = slide_steps_to_free_(cx->lay, cx->n2r, start, d, -1);
    if (up < 0 && down < 0)
        return -1;
    if (down < 0 || (up >= 0 && up <= down)) {
        *dir = +1;
        return up;
    }
    *dir = -1;
    return down;
}

/* Append the nodes of a walk of `steps` steps along d in direction dir. */
static int32_t append_walk(const node_ctx *cx, int32_t len, int32_t from, int d,
                           int dir, int32_t steps)
{
    int32_t node = from;
    for (int32_t k = 0; k < steps; k++) {
        node = slide_step_(cx->lay, node, d, dir);
        cx->path[len++] = node;
    }
    return len;
}

/* A free node gets a rank or dies: keep the free counters right. */
static void free_node_taken(node_ctx *cx, int32_t node)
{
    cx->nfree--;
    cx->line_free[line_index(cx->lay, cx->d1, node)]--;
}

/* Move `carry` (the rank of a dead node) along path[0..len-1]: every rank on
 * an alive node moves to the next alive node of the path, dead nodes are
 * jumped over, and the walk ends on the first free node. */
static void shift_along_path(node_ctx *cx, int32_t len, int32_t carry)
{
    for (int32_t i = 0; i < len; i++) {
        int32_t node = cx->path[i];
        int32_t v = cx->n2r[node];
        if (v <= NODE_DEAD) /* dead or unused */
            continue;
        cx->n2r[node] = carry;
        cx->r2n[carry] = node;
        if (v == NODE_FREE) {
            free_node_taken(cx, node);
            return;
        }
        carry = v;
    }
}

static int method_simple(node_ctx *cx, int32_t f, int32_t rank)
{
    const slide_layout *lay = cx->lay;
    const int32_t *n = lay->grid.size;
    const int per = lay->grid.periodic;
    int32_t c[3];
    slide_node_coords(lay, f, c);
    int32_t best = -1, best_hops = 0;
    for (int32_t i = 0; i < cx->nspare; i++) {
        int32_t g = cx->spare[i];
        if (cx->n2r[g] != NODE_FREE)
            continue;
        const int32_t *sc = cx->spare_c + 3 * (size_t)i;
        int32_t h = slide_dist1_(c[0], sc[0], n[0], per) + slide_dist1_(c[1], sc[1], n[1], per) +
                    slide_dist1_(c[2], sc[2], n[2], per);
        if (best < 0 || h < best_hops) {
            best = g;
            best_hops = h;
        }
    }
    if (best < 0)
        return SLIDE_ENOSPARE;
    cx->path[0] = best;
    shift_along_path(cx, 1, rank);
    return SLIDE_OK;
}

static int method_slide1d(node_ctx *cx, int32_t f, int32_t rank)
{
    if (cx->nfree == 0)
        return SLIDE_ENOSPARE;
    const slide_spares *sp = &cx->lay->spares;
    for (int i = 0; i < sp->ndims; i++) {
        int d = sp->dim[i], dir = 0;
        int32_t steps = nearest_on_line(cx, f, d, &dir);
        if (steps < 0)
            continue;
        int32_t len = append_walk(cx, 0, f, d, dir, steps);
        shift_along_path(cx, len, rank);
        return SLIDE_OK;
    }
    return SLIDE_ELINE;
}

/* Hybrid step 3: cross the other dimensions to the nearest line along d1
 * that has a free node, then slide along it. */
static int hybrid_cross(node_ctx *cx, int32_t f, int32_t rank)
{
    const slide_layout *lay = cx->lay;
    const int d = cx->d1;
    int e[2], ne = 0;
    for (int k = 0; k < SLIDE_MAX_DIMS; k++)
        if (k != d)
            e[ne++] = k;
    int32_t c[3];
    slide_node_coords(lay, f, c);
    const int32_t n0 = lay->grid.size[e[0]], n1 = lay->grid.size[e[1]];
    const int per = lay->grid.periodic;
    int32_t best_line = -1, best_perp = 0, best_along = 0, best_entry = -1;
    int best_dir = +1;
    for (int32_t a = 0; a < n0; a++) {
        int32_t pa = slide_dist1_(c[e[0]], a, n0, per);
        if (best_line >= 0 && pa > best_perp)
            continue;
        for (int32_t b = 0; b < n1; b++) {
            int32_t idx = a * n1 + b;
            if (cx->line_free[idx] <= 0)
                continue;
            int32_t perp = pa + slide_dist1_(c[e[1]], b, n1, per);
            if (best_line >= 0 && perp > best_perp)
                continue;
            int32_t entry = c[d] * lay->stride[d] + a * lay->stride[e[0]] +
                            b * lay->stride[e[1]];
            int dir = +1;
            int32_t along = cx->n2r[entry] == NODE_FREE ? 0
                                                         : nearest_on_line(cx, entry, d, &dir);
            if (along < 0)
                continue; /* cannot happen: the line has a free node */
            if (best_line < 0 || perp < best_perp ||
                (perp == best_perp && along < best_along)) {
                best_line = idx;
                best_perp = perp;
                best_along = along;
                best_entry = entry;
                best_dir = dir;
            }
        }
    }
    if (best_line < 0)
        return SLIDE_ENOSPARE;
    /* Perpendicular legs in increasing dimension order, shortest way round. */
    int32_t len = 0, node = f;
    const int32_t target[2] = {slide_coord_(lay, best_entry, e[0]),
                               slide_coord_(lay, best_entry, e[1])};
    for (int k = 0; k < 2; k++) {
        int32_t n = lay->grid.size[e[k]];
        int32_t from = slide_coord_(lay, node, e[k]);
        int32_t fwd = ((target[k] - from) % n + n) % n;
        int dir = +1;
        int32_t steps = fwd;
        if (per) {
            if (n - fwd < fwd) {
                dir = -1;
                steps = n - fwd;
            }
        } else if (target[k] < from) {
            dir = -1;
            steps = from - target[k];
        }
        len = append_walk(cx, len, node, e[k], dir, steps);
        if (steps > 0)
            node = cx->path[len - 1];
    }
    len = append_walk(cx, len, node, d, best_dir, best_along);
    shift_along_path(cx, len, rank);
    return SLIDE_OK;
}

static int method_hybrid(node_ctx *cx, int32_t f, int32_t rank)
{
    int rc = method_slide1d(cx, f, rank);
    if (rc != SLIDE_ELINE)
        return rc;
    return hybrid_cross(cx, f, rank);
}

/* Node states, free list and line counts from the fold's map (r2n) and dead
 * flags: every alive node without a rank is free. */
static void nodes_from_map(node_ctx *cx)
{
    const slide_layout *lay = cx->lay;
    cx->nspare = 0;
    memset(cx->line_free, 0, (size_t)line_count(lay, cx->d1) * sizeof(int32_t));
    for (int32_t node = 0; node < lay->nodes; node++)
        cx->n2r[node] = cx->dead[node]                                           ? NODE_DEAD
                        : lay->spares.block > 0 && slide_role_(lay, node) == SLIDE_ROLE_UNUSED ? NODE_UNUSED
                                                                                 : NODE_FREE;
    for (int32_t r = 0; r < lay->ranks; r++)
        cx->n2r[cx->r2n[r]] = r;
    for (int32_t node = 0; node < lay->nodes; node++) {
        if (cx->n2r[node] != NODE_FREE)
            continue;
        slide_node_coords(lay, node, cx->spare_c + 3 * (size_t)cx->nspare);
        cx->spare[cx->nspare++] = node;
        cx->line_free[line_index(lay, cx->d1, node)]++;
    }
    cx->nfree = cx->nspare;
}

/* One failure for simple, slide1d and hybrid's 1D phase. */
static int nodes_step(node_ctx *cx, int32_t f)
{
    int32_t v = cx->n2r[f];
    cx->n2r[f] = NODE_DEAD;
    cx->dead[f] = 1;
    if (v < 0) { /* free or unused: no rank to place */
        if (v == NODE_FREE)
            free_node_taken(cx, f);
        return SLIDE_OK;
    }
    int rc;
    switch (cx->method) {
    case SLIDE_SIMPLE: rc = method_simple(cx, f, v); break;
    case SLIDE_SLIDE1D: rc = method_slide1d(cx, f, v); break;
    default: rc = method_hybrid(cx, f, v); break;
    }
    if (rc != SLIDE_OK) { /* methods fail before moving anything */
        cx->n2r[f] = v;
        cx->dead[f] = 0;
    }
    return rc;
}

/* ---- slide2d ------------------------------------------------------------- */

typedef slide_fold plane_ctx;

/* Plane g along d is usable: no logical plane on it, and every node of it
 * that the product map would use (other coordinates in use) is alive and in
 * the job (not an unused node of a spare set). */
static int plane_usable(const plane_ctx *px, int d, int32_t g)
{
    const slide_layout *lay = px->lay;
    if (px->inv[d][g] != NODE_FREE)
        return 0;
    int e0 = d == 0 ? 1 : 0, e1 = d == 2 ? 1 : 2;
    for (int32_t a = 0; a < lay->grid.size[e0]; a++) {
        if (px->inv[e0][a] < 0)
            continue;
        int32_t base = g * lay->stride[d] + a * lay->stride[e0];
        for (int32_t b = 0; b < lay->grid.size[e1]; b++)
            if (px->inv[e1][b] >= 0 &&
                (px->dead[base + b * lay->stride[e1]] ||
                 (lay->spares.block > 0 &&
                  slide_role_(lay, base + b * lay->stride[e1]) == SLIDE_ROLE_UNUSED)))
                return 0;
    }
    return 1;
}

/* Steps from plane a along d in direction s to the first usable plane. */
static int32_t plane_steps(const plane_ctx *px, int d, int32_t a, int s, int32_t *goal)
{
    int32_t n = px->lay->grid.size[d];
    int32_t p = a;
    for (int32_t k = 1; k < n; k++) {
        p += s;
        if (p < 0 || p >= n) {
            if (!px->lay->grid.periodic)
                return -1;
            p = (p + n) % n;
        }
        if (plane_usable(px, d, p)) {
            *goal = p;
            return k;
        }
    }
    return -1;
}

/* Remove physical plane a along d; logical planes slide toward the nearest
 * usable plane. Returns 0 if there is none (nothing changed). */
static int plane_slide(plane_ctx *px, int d, int32_t a)
{
    int32_t gu = -1, gd = -1;
    int32_t up = plane_steps(px, d, a, +1, &gu);
    int32_t down = plane_steps(px, d, a, -1, &gd);
    if (up < 0 && down < 0)
        return 0;
    int s = +1;
    int32_t goal = gu;
    if (up < 0 || (down >= 0 && down < up)) {
        s = -1;
        goal = gd;
    }
    int32_t n = px->lay->grid.size[d];
    int32_t carry = px->inv[d][a];
    px->inv[d][a] = NODE_FREE;
    for (int32_t p = (a + s + n) % n;; p = (p + s + n) % n) {
        int32_t v = px->inv[d][p];
        if (v == NODE_FREE && p != goal)
            continue; /* unusable plane: jump over it */
        px->inv[d][p] = carry;
        px->fwd[d][carry] = p;
        if (p == goal)
            break;
        carry = v;
    }
    return 1;
}

static void plane_write_map(const plane_ctx *px, int32_t *r2n)
{
    const slide_layout *lay = px->lay;
    int32_t r = 0;
    for (int32_t x = 0; x < lay->logical[0]; x++)
        for (int32_t y = 0; y < lay->logical[1]; y++) {
            int32_t base = px->fwd[0][x] * lay->stride[0] + px->fwd[1][y] * lay->stride[1];
            for (int32_t z = 0; z < lay->logical[2]; z++)
                r2n[r++] = base + px->fwd[2][z];
        }
}

static void planes_init(plane_ctx *px)
{
    const slide_layout *lay = px->lay;
    for (int d = 0; d < SLIDE_MAX_DIMS; d++) {
        for (int32_t i = 0; i < lay->grid.size[d]; i++)
            px->inv[d][i] = i < lay->logical[d] ? i : NODE_FREE;
        for (int32_t i = 0; i < lay->logical[d]; i++)
            px->fwd[d][i] = i;
    }
}

/* One failure for slide2d (and hybrid's 2D phase); the map is rewritten on
 * success. On an error nothing changes. */
static int planes_step(plane_ctx *px, int32_t f)
{
    const slide_layout *lay = px->lay;
    const int in_job = lay->spares.block == 0 || slide_role_(lay, f) != SLIDE_ROLE_UNUSED;
    px->dead[f] = 1;
    px->ndead += in_job;
    int holds = 1;
    for (int d = 0; d < SLIDE_MAX_DIMS; d++)
        if (px->inv[d][slide_coord_(lay, f, d)] < 0)
            holds = 0;
    if (!holds)
        return SLIDE_OK;
    for (int k = 0; k < lay->spares.ndims; k++) {
        int d = lay->spares.dim[k];
        if (plane_slide(px, d, slide_coord_(lay, f, d))) {
            plane_write_map(px, px->r2n);
            return SLIDE_OK;
        }
    }
    int64_t free_alive = (int64_t)lay->spare_nodes + lay->ranks - px->ndead - (lay->ranks - 1);
    px->dead[f] = 0;
    px->ndead -= in_job;
    return free_alive > 0 ? SLIDE_EPLANE : SLIDE_ENOSPARE;
}

/* ---- folds ----------------------------------------------------------------- */

void slide_fold_init_(slide_fold *cx, const slide_layout *lay, int method, int32_t *w,
                      int32_t *r2n)
{
    const int64_t spares = lay->nodes - lay->ranks;
    memset(cx, 0, sizeof *cx);
    cx->lay = lay;
    cx->method = method;
    cx->d1 = primary_dim(lay);
    cx->r2n = r2n;
    cx->n2r = w;
    cx->dead = cx->n2r + lay->nodes;
    cx->spare = cx->dead + lay->nodes;
    cx->spare_c = cx->spare + spares;
    cx->line_free = cx->spare_c + 3 * spares;
    cx->path = cx->line_free + line_count(lay, cx->d1);
    int32_t *p = cx->path + path_capacity(lay);
    for (int d = 0; d < SLIDE_MAX_DIMS; d++) {
        cx->inv[d] = p;
        p += lay->grid.size[d];
        cx->fwd[d] = p;
        p += lay->grid.size[d];
    }
    memset(cx->dead, 0, (size_t)lay->nodes * sizeof(int32_t));
    slide_initial_map(lay, r2n);
    /* hybrid starts in its 2D phase */
    cx->planes = method == SLIDE_SLIDE2D || method == SLIDE_HYBRID;
    if (cx->planes)
        planes_init(cx);
    else
        nodes_from_map(cx);
}

int slide_fold_step_(slide_fold *cx, int32_t f)
{
    if (f < 0 || f >= cx->lay->nodes)
        return SLIDE_ENODE;
    if (cx->dead[f])
        return SLIDE_EDUP;
    if (!cx->planes)
        return nodes_step(cx, f);
    int rc = planes_step(cx, f);
    if (rc == SLIDE_OK || cx->method != SLIDE_HYBRID)
        return rc;
    /* hybrid: no whole usable plane is left, so sliding goes on in 1D for
     * this failure and every later one, from the current map */
    cx->planes = 0;
    nodes_from_map(cx);
    return nodes_step(cx, f);
}
