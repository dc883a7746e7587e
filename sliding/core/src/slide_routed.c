/* The routed method: for each failure, compare candidate substitutions by the
 * link loads the stencil puts on the layout's network under its actual
 * routing, and take the best. Rules in include/slide_core.h ("routed").
 *
 * State: the current map (r2n, n2r), dead flags, and the stencil's load on
 * every link with a histogram of the loads, so that the max load and the
 * count of links above 1 are known at any time; the same per dimension of the
 * stencil (the messages of the pairs along it), for the phased exchange. A
 * candidate is a list of rank moves; it is scored by applying the moves to
 * the loads, reading the histograms and taking them back: only the messages of
 * moved ranks are routed again. */
#include "slide_internal.h"

#include <string.h>

/* ---- workspace ---------------------------------------------------------------- */

/* Histogram length: a link cannot carry more than every message. */
static int64_t hist_len(const slide_layout *lay)
{
    return 2 * (int64_t)lay->grid.ndims * lay->ranks + 2;
}

/* Load tables: every message (layer 0), then the messages of the pairs along
 * each dimension of the stencil (layer 1 + d). */
#define LAYERS (1 + SLIDE_MAX_DIMS)

int64_t slide_routed_words_(const slide_layout *lay)
{
    return slide_fold_words_(lay) + 2 * (int64_t)lay->ranks /* hybrid's map, a surface */ +
           2 * (int64_t)lay->nodes /* a surface's holes and tiles */ +
           7 * (int64_t)lay->nodes /* a labelled surface's search */ +
           (LAYERS + 1) * (int64_t)lay->net.links /* loads, scratch loads */ +
           LAYERS * hist_len(lay) +
           (int64_t)lay->nodes /* n2r */ + 2 * (int64_t)lay->ranks /* moves */ +
           lay->net.route_max + 16;
}

/* One load table: messages per link, links per load, the max, links above 1. */
typedef struct layer {
    uint32_t *load; /* [links] */
    int32_t *hist;  /* [hist_len] */
    int32_t max;
    int32_t overloaded;
} layer;

typedef struct routed {
    const slide_layout *lay;
    const slide_topo *net;
    int32_t *r2n;          /* [ranks] the current map (the caller's output) */
    int32_t *n2r;          /* [nodes] rank, NODE_FREE or NODE_DEAD */
    layer ly[LAYERS];      /* the current map's loads: all, then per dimension */
    int nlayers;           /* 1 + the stencil's dimensions */
    uint32_t *scratch;     /* [links] loads of a whole other map */
    int32_t *newnode;      /* [ranks] candidate node of a moved rank, -1 if not moved */
    int32_t *moved;        /* [ranks] the moved ranks, in move order */
    int32_t nmoved;
    int32_t *route;        /* [route_max] */
    int32_t free_spares;   /* spare-layout nodes that are free */
    int32_t *surf_map;     /* [ranks] a surface candidate's map */
    int32_t *surf_hole;    /* [lines] the failed or unused node's coordinate on each line, -1 */
    int32_t *surf_tile;    /* [lines] the coordinate a tile's lines skip, -1 */
    int32_t *surf_label;   /* [lines] a labelled surface: the coordinate each line skips */
    int32_t *surf_try;     /* [lines] the search's position in each line's values */
    int32_t *surf_count;   /* [4 x lines] per line and group: neighbours above, below */
    int32_t *surf_stack;   /* [lines] the labelled lines in the order labelled */
    int64_t surf_work;     /* the label search's place_label() calls so far */
} routed;

/* A candidate's score, compared in this order (lower is better). phased is
 * the sum over the stencil's dimensions of the max load of that dimension's
 * messages: the cost of exchanging the halos one dimension at a time. */
typedef struct score {
    int32_t load_max, phased, overloaded, spares, moved;
} score;

static int better(const score *a, const score *b)
{
    if (a->load_max != b->load_max)
        return a->load_max < b->load_max;
    if (a->phased != b->phased)
        return a->phased < b->phased;
    if (a->overloaded != b->overloaded)
        return a->overloaded < b->overloaded;
    if (a->spares != b->spares)
        return a->spares < b->spares;
    return a->moved < b->moved;
}

/* ---- loads ---------------------------------------------------------------------- */

static void load_change(layer *ly, int32_t link, int delta)
{
    const uint32_t before = ly->load[link], after = before + (uint32_t)delta;
    ly->load[link] = after;
    ly->hist[before]--;
    ly->hist[after]++;
    if (before == 1 && after == 2)
        ly->overloaded++;
    else if (before == 2 && after == 1)
        ly->overloaded--;
    if ((int32_t)after > ly->max)
        ly->max = (int32_t)after;
    while (ly->max > 0 && ly->hist[ly->max] == 0)
        ly->max--;
}

/* Add delta to the load of the messages a -> b and b -> a (hosts) of a pair
 * along dimension d. */
static void pair_change(routed *rt, int32_t a, int32_t b, int d, int delta)
{
    if (a == b)
        return;
    for (int way = 0; way < 2; way++) {
        const int32_t n = slide_topo_route(rt->net, way ? b : a, way ? a : b, rt->route,
                                           rt->net->route_max);
        for (int32_t i = 0; i < n; i++) {
            load_change(&rt->ly[0], rt->route[i], delta);
            load_change(&rt->ly[1 + d], rt->route[i], delta);
        }
    }
}

static int32_t phased_cost(const routed *rt)
{
    int32_t sum = 0;
    for (int k = 1; k < rt->nlayers; k++)
        sum += rt->ly[k].max;
    return sum;
}

/* Logical neighbours of rank r in the stencil (the pairs of slide_measure),
 * and the dimension of each pair. */
static int neighbours(const slide_layout *lay, int32_t r, int32_t out[2 * SLIDE_MAX_DIMS],
                      int dim[2 * SLIDE_MAX_DIMS])
{
    const int32_t *L = lay->logical;
    const int32_t rs[3] = {L[1] * L[2], L[2], 1};
    const int32_t lc[3] = {r / rs[0], r / rs[1] % L[1], r % L[2]};
    int n = 0;
    for (int d = 0; d < SLIDE_MAX_DIMS; d++) {
        const int wrap = lay->grid.periodic && L[d] >= 3, first = n;
        if (lc[d] + 1 < L[d])
            out[n++] = r + rs[d];
        else if (wrap)
            out[n++] = r - lc[d] * rs[d];
        if (lc[d] > 0)
            out[n++] = r - rs[d];
        else if (wrap)
            out[n++] = r + (L[d] - 1) * rs[d];
        for (int k = first; k < n; k++)
            dim[k] = d;
    }
    return n;
}

/* Move the pending candidate (newnode/moved) into the loads (delta +1) or
 * back out (delta -1). Each pair of neighbours is changed once. */
static void apply_loads(routed *rt, int delta)
{
    int32_t nb[2 * SLIDE_MAX_DIMS];
    int dim[2 * SLIDE_MAX_DIMS];
    for (int32_t i = 0; i < rt->nmoved; i++) {
        const int32_t r = rt->moved[i];
        const int n = neighbours(rt->lay, r, nb, dim);
        for (int k = 0; k < n; k++) {
            const int32_t q = nb[k];
            if (rt->newnode[q] >= 0 && q < r)
                continue; /* both moved: changed from q's side */
            const int32_t old_r = rt->r2n[r], old_q = rt->r2n[q];
            const int32_t new_r = rt->newnode[r];
            const int32_t new_q = rt->newnode[q] >= 0 ? rt->newnode[q] : old_q;
            pair_change(rt, delta > 0 ? old_r : new_r, delta > 0 ? old_q : new_q, dim[k], -1);
            pair_change(rt, delta > 0 ? new_r : old_r, delta > 0 ? new_q : old_q, dim[k], +1);
        }
    }
}

/* Stencil loads of map r2n into load[], from nothing (the pairs along
 * dimension only_dim, or all pairs if it is -1); max and overloaded. */
static void map_loads(const routed *rt, const int32_t *r2n, int only_dim, uint32_t *load,
                      int32_t *load_max, int32_t *overloaded)
{
    memset(load, 0, sizeof *load * (size_t)rt->net->links);
    int32_t nb[2 * SLIDE_MAX_DIMS];
    int dim[2 * SLIDE_MAX_DIMS];
    for (int32_t r = 0; r < rt->lay->ranks; r++) {
        const int n = neighbours(rt->lay, r, nb, dim);
        for (int k = 0; k < n; k++) {
            if (nb[k] < r || r2n[r] == r2n[nb[k]] || (only_dim >= 0 && dim[k] != only_dim))
                continue;
            slide_topo_add_route(rt->net, load, r2n[r], r2n[nb[k]], +1);
            slide_topo_add_route(rt->net, load, r2n[nb[k]], r2n[r], +1);
        }
    }
    *load_max = 0;
    *overloaded = 0;
    for (int32_t l = 0; l < rt->net->links; l++) {
        if ((int32_t)load[l] > *load_max)
            *load_max = (int32_t)load[l];
        *overloaded += load[l] > 1;
    }
}

/* The current map's loads and histograms, from nothing. */
static void reset_loads(routed *rt)
{
    for (int k = 0; k < rt->nlayers; k++) {
        layer *ly = &rt->ly[k];
        map_loads(rt, rt->r2n, k - 1, ly->load, &ly->max, &ly->overloaded);
        memset(ly->hist, 0, sizeof *ly->hist * (size_t)hist_len(rt->lay));
        for (int32_t l = 0; l < rt->net->links; l++)
            ly->hist[ly->load[l]]++;
    }
}

/* The load figures of a whole map (scratch loads, the current ones untouched). */
static void whole_map_score(routed *rt, const int32_t *m, score *sc)
{
    int32_t max, overloaded;
    sc->phased = 0;
    for (int k = rt->nlayers - 1; k >= 0; k--) {
        map_loads(rt, m, k - 1, rt->scratch, &max, &overloaded);
        if (k > 0)
            sc->phased += max;
    }
    sc->load_max = max;
    sc->overloaded = overloaded;
}

/* ---- candidates ------------------------------------------------------------------- */

static int is_spare_node(const slide_layout *lay, int32_t node)
{
    return slide_is_spare(lay, node) == 1;
}

/* Change in occupied spare-layout nodes when a rank moves from `from` to `to`
 * (a dead node left behind does not become free). */
static int32_t spare_change(const routed *rt, int32_t from, int32_t to)
{
    return is_spare_node(rt->lay, to) -
           (rt->n2r[from] != NODE_DEAD && is_spare_node(rt->lay, from));
}

static void clear_moves(routed *rt)
{
    for (int32_t i = 0; i < rt->nmoved; i++)
        rt->newnode[rt->moved[i]] = -1;
    rt->nmoved = 0;
}

/* Queue rank's move to node; 0 if the rank is queued already (a path that
 * comes back on itself is no candidate). */
static int add_move(routed *rt, int32_t rank, int32_t node)
{
    if (rt->newnode[rank] >= 0)
        return 0;
    rt->newnode[rank] = node;
    rt->moved[rt->nmoved++] = rank;
    return 1;
}

/* Score of the pending moves: loads with them applied (then taken back). */
static score pending_score(routed *rt)
{
    score sc;
    apply_loads(rt, +1);
    sc.load_max = rt->ly[0].max;
    sc.phased = phased_cost(rt);
    sc.overloaded = rt->ly[0].overloaded;
    apply_loads(rt, -1);
    sc.spares = 0;
    for (int32_t i = 0; i < rt->nmoved; i++) {
        const int32_t r = rt->moved[i];
        sc.spares += spare_change(rt, rt->r2n[r], rt->newnode[r]);
    }
    sc.moved = rt->nmoved;
    return sc;
}

static int32_t steps_to_free(const routed *rt, int32_t start, int d, int s)
{
    return slide_steps_to_free_(rt->lay, rt->n2r, start, d, s);
}

/* Queue the shift of one line: `carry` (the rank leaving `start`) and every
 * rank after it on the way to the free node `steps` away move one alive node
 * further (dead nodes are jumped over). 0 if a rank was queued already. */
static int queue_shift(routed *rt, int32_t start, int d, int s, int32_t steps, int32_t carry)
{
    int32_t node = start;
    for (int32_t k = 0; k < steps; k++) {
        node = slide_step_(rt->lay, node, d, s);
        const int32_t v = rt->n2r[node];
        if (v <= NODE_DEAD) /* dead or unused */
            continue;
        if (!add_move(rt, carry, node))
            return 0;
        carry = v;
    }
    return 1;
}

/* The lines of a block: along d, through the points (a, b) of the other two
 * dimensions e[0], e[1] with a in [lo0, lo0 + w0) and b in [lo1, lo1 + w1)
 * (mod the size on a torus). */
typedef struct block {
    int d, s;
    int32_t lo[2], w[2];
} block;

/* A crossing: pre steps along d toward s, k steps along e toward sign, then
 * along d toward s. */
typedef struct cross {
    int d, s, e, sign;
    int32_t k, pre;
} cross;

static void other_dims(int d, int e[2])
{
    e[0] = d == 0 ? 1 : 0;
    e[1] = d == 2 ? 1 : 2;
}

/* Queue the moves of a block slide for the failure at node f (rank v): in the
 * failed line v and the ranks after it move one node toward the line's first
 * free node; in every other line of the block the rank on the failed node's
 * coordinate and the ones after it do (a line without a rank there has
 * shifted before and stays). Returns 0 if a line that should shift has no
 * free node: then nothing is queued. */
static int queue_block(routed *rt, int32_t f, int32_t v, const block *b)
{
    const slide_layout *lay = rt->lay;
    int e[2];
    other_dims(b->d, e);
    const int32_t n0 = lay->grid.size[e[0]], n1 = lay->grid.size[e[1]];
    const int32_t c0 = slide_coord_(lay, f, e[0]), c1 = slide_coord_(lay, f, e[1]);
    clear_moves(rt);
    for (int32_t i = 0; i < b->w[0]; i++)
        for (int32_t j = 0; j < b->w[1]; j++) {
            const int32_t a = (b->lo[0] + i) % n0, bb = (b->lo[1] + j) % n1;
            const int32_t start = f + (a - c0) * lay->stride[e[0]] + (bb - c1) * lay->stride[e[1]];
            const int32_t carry = start == f ? v : rt->n2r[start];
            if (carry < 0)
                continue; /* no rank at the start: the line has shifted already */
            const int32_t steps = steps_to_free(rt, start, b->d, b->s);
            if (steps < 0 || !queue_shift(rt, start, b->d, b->s, steps, carry)) {
                clear_moves(rt);
                return 0;
            }
        }
    return 1;
}

/* Queue a crossing: the ranks on the path from f, first `pre` steps along d
 * toward s, then k steps along e toward sign, then along d toward s to the
 * first free node of that line, each move one alive node along the path (the
 * failed rank v first), as hybrid's cross step does. Returns 0 (nothing
 * queued) if there is no such path (a mesh edge, a dead node where the path
 * turns, no free node). */
static int queue_cross(routed *rt, int32_t f, int32_t v, const cross *c)
{
    const slide_layout *lay = rt->lay;
    if (c->k % lay->grid.size[c->e] == 0)
        return 0; /* around a short ring and back to f's line: no crossing */
    int32_t turn = f;
    for (int32_t i = 0; i < c->pre + c->k; i++) {
        turn = slide_step_(lay, turn, i < c->pre ? c->d : c->e, i < c->pre ? c->s : c->sign);
        if (turn < 0 || turn == f || (i + 1 == c->pre && rt->n2r[turn] <= NODE_DEAD))
            return 0;
    }
    const int32_t along = rt->n2r[turn] == NODE_FREE ? 0 : steps_to_free(rt, turn, c->d, c->s);
    if (along < 0)
        return 0;
    clear_moves(rt);
    int32_t node = f, carry = v;
    for (int32_t i = 0; i < c->pre + c->k + along; i++) {
        const int across = i >= c->pre && i < c->pre + c->k;
        node = slide_step_(lay, node, across ? c->e : c->d, across ? c->sign : c->s);
        const int32_t r = rt->n2r[node];
        if (r <= NODE_DEAD)
            continue;
        if (!add_move(rt, carry, node))
            break;
        if (r == NODE_FREE)
            return 1;
        carry = r;
    }
    clear_moves(rt);
    return 0;
}

/* Alive rank-holding steps from f along d toward s before the first node
 * that holds none (0 if the very next does not hold one). */
static int32_t run_of_ranks(const routed *rt, int32_t f, int d, int s)
{
    int32_t node = f, k = 0;
    for (; k + 1 < rt->lay->grid.size[d]; k++) {
        node = slide_step_(rt->lay, node, d, s);
        if (node < 0 || rt->n2r[node] < 0)
            break;
    }
    return k;
}

/* Intervals of one of the other dimensions for the blocks: the failed line's
 * coordinate c alone, with one neighbour on either side, with both, and the
 * whole dimension; then the longest interval around c whose lines all reach
 * their free node in the same number of steps as the failed line (aligned). */
#define MAX_INTERVALS 6

static int intervals(int32_t c, int32_t n, int periodic, int32_t aligned_lo, int32_t aligned_w,
                     int32_t lo[MAX_INTERVALS], int32_t w[MAX_INTERVALS])
{
    int k = 0;
    const int32_t cand[5][2] = {{c, 1}, {c - 1, 2}, {c, 2}, {c - 1, 3}, {0, n}};
    for (int i = 0; i < 5; i++) {
        int32_t l = cand[i][0], width = cand[i][1];
        if (width > n)
            continue;
        if (l < 0) {
            if (!periodic)
                continue;
            l += n;
        }
        if (!periodic && l + width > n)
            continue;
        int dup = 0;
        for (int j = 0; j < k; j++)
            dup |= (w[j] == width && (lo[j] == l || width == n));
        if (!dup) {
            lo[k] = l;
            w[k] = width;
            k++;
        }
    }
    int dup = 0;
    for (int j = 0; j < k; j++)
        dup |= w[j] == aligned_w && (lo[j] == aligned_lo || aligned_w == n);
    if (!dup && aligned_w > 0) {
        lo[k] = aligned_lo;
        w[k] = aligned_w;
        k++;
    }
    return k;
}

/* Longest run of lines around coordinate c along e (the other coordinate
 * fixed at the failed line's) whose steps to the free node equal `want`. */
static void aligned_run(const routed *rt, int32_t f, int d, int s, int e, int32_t want,
                        int32_t *lo, int32_t *w)
{
    const slide_layout *lay = rt->lay;
    const int32_t n = lay->grid.size[e], c = slide_coord_(lay, f, e);
    int32_t below = 0, above = 0;
    while (below + above + 1 < n) {
        int32_t node = slide_step_(lay, f, e, -1);
        for (int32_t k = 1; k <= below && node >= 0; k++)
            node = slide_step_(lay, node, e, -1);
        if (node < 0 || rt->n2r[node] < 0 || steps_to_free(rt, node, d, s) != want)
            break;
        below++;
    }
    while (below + above + 1 < n) {
        int32_t node = slide_step_(lay, f, e, +1);
        for (int32_t k = 1; k <= above && node >= 0; k++)
            node = slide_step_(lay, node, e, +1);
        if (node < 0 || rt->n2r[node] < 0 || steps_to_free(rt, node, d, s) != want)
            break;
        above++;
    }
    *lo = ((c - below) % n + n) % n;
    *w = below + above + 1;
}

/* The free node nearest to f by grid hops (ties: lowest id), or -1. */
static int32_t nearest_free(const routed *rt, int32_t f)
{
    int32_t best = -1, best_hops = 0;
    for (int32_t node = 0; node < rt->lay->nodes; node++) {
        if (rt->n2r[node] != NODE_FREE)
            continue;
        const int32_t h = slide_hops(rt->lay, f, node);
        if (best < 0 || h < best_hops) {
            best = node;
            best_hops = h;
        }
    }
    return best;
}

/* Admissible under the spare budget: after the candidate, as many free
 * spare-layout nodes remain as failures are still expected. */
static int within_budget(const routed *rt, const score *sc, int32_t handled)
{
    const int32_t still = rt->lay->expect - handled;
    return still <= 0 || rt->free_spares - sc->spares >= still;
}

/* Commit the pending moves into the map, node states and loads. */
static void commit_moves(routed *rt)
{
    apply_loads(rt, +1);
    for (int32_t i = 0; i < rt->nmoved; i++) {
        const int32_t r = rt->moved[i], from = rt->r2n[r];
        if (rt->n2r[from] == r)
            rt->n2r[from] = NODE_FREE;
        rt->free_spares += is_spare_node(rt->lay, from) && rt->n2r[from] == NODE_FREE;
    }
    for (int32_t i = 0; i < rt->nmoved; i++) {
        const int32_t r = rt->moved[i], to = rt->newnode[r];
        rt->free_spares -= is_spare_node(rt->lay, to) && rt->n2r[to] == NODE_FREE;
        rt->n2r[to] = r;
        rt->r2n[r] = to;
    }
    clear_moves(rt);
}

/* ---- surfaces: whole maps with one skipped node per line ----------------------------- */

/* Sides longer than this get rigid surfaces only (a side's cuts are one 64-bit mask). */
#define SURFACE_SIDE_MAX 64
/* Sides up to this are cut in every way into pieces of 2 and 3; longer ones evenly. */
#define SURFACE_SIDE_ALL 16
/* Failed lines above this are too many to separate pair by pair: rigid surfaces only. */
#define SURFACE_FORCED_MAX 11

/* A re-embedding (SLIDE_CHOICE_SURFACE): logical dimension d laid along the lines of physical
 * dimension e, one node of every line skipped, the same one on all lines of a tile. Tiles are
 * the products of the pieces of the two other dimensions: cut[k] has bit c set where a piece
 * starts (0: one piece, the whole side). */
typedef struct surface {
    int e, d;
    uint64_t cut[2];
    int labelled; /* lines skip rt->surf_label (surface_labels()), not per tile */
    int product;  /* a product map instead (e, d, cut unused): logical dimension k on physical
                   * perm[k], skipping the coordinates set in skip[perm[k]] */
    int perm[SLIDE_MAX_DIMS];
    uint64_t skip[SLIDE_MAX_DIMS];
} surface;

/* Whether logical dimension d can be laid along physical e with one node to skip per line, the
 * other logical dimensions on the other physical ones in order. */
static int surface_fits(const slide_layout *lay, int e, int d)
{
    int p[2], q[2];
    other_dims(e, p);
    other_dims(d, q);
    return lay->logical[d] == lay->grid.size[e] - 1 && lay->logical[q[0]] == lay->grid.size[p[0]] &&
           lay->logical[q[1]] == lay->grid.size[p[1]];
}

/* Piece of coordinate c: the last piece start at or before c (cyclically: the pieces before the
 * first start belong to the last piece on a torus; on a mesh bit 0 is always a start). */
static int32_t piece_of(uint64_t cut, int32_t c, int32_t n)
{
    if (cut == 0)
        return 0;
    for (int32_t k = c; k >= 0; k--)
        if (cut >> k & 1)
            return k;
    for (int32_t k = n - 1; k > c; k--)
        if (cut >> k & 1)
            return k;
    return 0;
}

/* rt->surf_hole for lines along e (the failed or unused node's coordinate along e, -1); 0 if a
 * line holds two. */
static int surface_holes(routed *rt, int e)
{
    const slide_layout *lay = rt->lay;
    int p[2];
    other_dims(e, p);
    const int32_t n1 = lay->grid.size[p[1]];
    for (int32_t i = 0; i < lay->nodes / lay->grid.size[e]; i++)
        rt->surf_hole[i] = -1;
    for (int32_t node = 0; node < lay->nodes; node++) {
        if (rt->n2r[node] > NODE_DEAD)
            continue;
        const int32_t line = slide_coord_(lay, node, p[0]) * n1 + slide_coord_(lay, node, p[1]);
        if (rt->surf_hole[line] >= 0)
            return 0;
        rt->surf_hole[line] = slide_coord_(lay, node, e);
    }
    return 1;
}

/* The map of surface sf into out (surface_holes(sf->e) done): every line skips the coordinate of
 * its tile's failed or unused node, or the last. Cost O(lines x side + ranks). */
static void surface_map(routed *rt, const surface *sf, int32_t *out)
{
    const slide_layout *lay = rt->lay;
    int p[2], q[2];
    other_dims(sf->e, p);
    other_dims(sf->d, q);
    const int32_t n0 = lay->grid.size[p[0]], n1 = lay->grid.size[p[1]], ne = lay->grid.size[sf->e];
    int32_t *skip = rt->surf_tile; /* by tile: piece along 0 x n1 + piece along 1 */
    for (int32_t i = 0; i < n0 * n1; i++)
        skip[i] = -1;
    for (int32_t a = 0; a < n0; a++)
        for (int32_t b = 0; b < n1; b++)
            if (rt->surf_hole[a * n1 + b] >= 0)
                skip[piece_of(sf->cut[0], a, n0) * n1 + piece_of(sf->cut[1], b, n1)] = rt->surf_hole[a * n1 + b];
    const int32_t *L = lay->logical;
    for (int32_t r = 0; r < lay->ranks; r++) {
        const int32_t lc[3] = {r / (L[1] * L[2]), r / L[2] % L[1], r % L[2]};
        const int32_t a = lc[q[0]], b = lc[q[1]], i = lc[sf->d];
        const int32_t t = sf->labelled ? rt->surf_label[a * n1 + b]
                                       : skip[piece_of(sf->cut[0], a, n0) * n1 + piece_of(sf->cut[1], b, n1)];
        const int32_t h = t >= 0 ? t : ne - 1;
        out[r] = (i + (i >= h)) * lay->stride[sf->e] + a * lay->stride[p[0]] + b * lay->stride[p[1]];
    }
}

/* The label search backtracks: it gives up (no candidate) past this many place_label() calls
 * (a few ms), and on surfaces of more lines than SURFACE_LABEL_LINES (each step scans them). */
#define SURFACE_LABEL_WORK 50000
#define SURFACE_LABEL_LINES 1024

/* One neighbour line of line (a, b) along side k toward dir, or -1 (off a mesh, or a side of
 * one line; a side of two lines has one neighbour). */
static int32_t side_neighbour(const routed *rt, int32_t a, int32_t b, const int32_t n[2], int k, int dir)
{
    if (n[k] < 2 || (n[k] == 2 && dir < 0))
        return -1;
    int32_t c = (k ? b : a) + dir;
    if (c < 0 || c >= n[k]) {
        if (!rt->lay->grid.periodic)
            return -1;
        c = (c + n[k]) % n[k];
    }
    return k ? a * n[1] + c : c * n[1] + b;
}

/* Place label v on line i = (a, b) if the lines labelled so far allow it: a neighbour line
 * with another label shifts part of the line's ranks by one node against this line's, and
 * their messages run along one of the two lines (the line of whichever end is routed along e
 * later). The messages from neighbours labelled above reach the node after the hole, those from
 * neighbours below the node before it: two of one kind on one line, from sides routed on the
 * same side of e, share a link with the line's own message (load 3). So per line and group
 * (sides routed before e, after e) at most one neighbour above and one below. Returns 0 (and
 * changes nothing) if v breaks that. */
static int place_label(routed *rt, int32_t a, int32_t b, const int32_t n[2], const int group[2], int32_t v)
{
    const int32_t i = a * n[1] + b;
    rt->surf_work++;
    int32_t *cnt = rt->surf_count; /* [line * 4 + group * 2 + (0 above, 1 below)] */
    int32_t mine[4] = {0, 0, 0, 0};
    for (int pass = 0; pass < 2; pass++)
        for (int k = 0; k < 2; k++)
            for (int dir = -1; dir <= 1; dir += 2) {
                const int32_t m = side_neighbour(rt, a, b, n, k, dir);
                if (m < 0 || rt->surf_label[m] < 0 || rt->surf_label[m] == v)
                    continue;
                const int above = rt->surf_label[m] > v; /* m above this line */
                const int32_t g = group[k] * 2;
                if (pass == 0) {
                    if (++mine[g + !above] > 1 || cnt[m * 4 + g + above] > 0)
                        return 0;
                } else {
                    cnt[i * 4 + g + !above]++;
                    cnt[m * 4 + g + above]++;
                }
            }
    rt->surf_label[i] = v;
    return 1;
}

/* Take line (a, b)'s label back (it was the last placed). */
static void lift_label(routed *rt, int32_t a, int32_t b, const int32_t n[2], const int group[2])
{
    const int32_t i = a * n[1] + b, v = rt->surf_label[i];
    rt->surf_label[i] = -1;
    for (int k = 0; k < 2; k++)
        for (int dir = -1; dir <= 1; dir += 2) {
            const int32_t m = side_neighbour(rt, a, b, n, k, dir);
            if (m < 0 || rt->surf_label[m] < 0 || rt->surf_label[m] == v)
                continue;
            const int above = rt->surf_label[m] > v;
            rt->surf_count[i * 4 + group[k] * 2 + !above]--;
            rt->surf_count[m * 4 + group[k] * 2 + above]--;
        }
}

/* The k-th value line i = (a, b) tries: its hole's coordinate if it has one; else the labels of
 * its labelled neighbours (sides and directions in order), then one coordinate of each run
 * between the holes' ones (vals); -2 for a repeat to skip, -1 past the end. */
static int32_t label_value(const routed *rt, int32_t a, int32_t b, const int32_t n[2], int32_t k,
                           const int32_t *vals, int32_t nv)
{
    const int32_t i = a * n[1] + b;
    if (rt->surf_hole[i] >= 0)
        return k == 0 ? rt->surf_hole[i] : -1;
    int32_t seen[4], ns = 0;
    for (int side = 0; side < 2; side++)
        for (int dir = -1; dir <= 1; dir += 2) {
            const int32_t m = side_neighbour(rt, a, b, n, side, dir);
            const int32_t v = m >= 0 ? rt->surf_label[m] : -1;
            int dup = v < 0;
            for (int32_t j = 0; j < ns && !dup; j++)
                dup = seen[j] == v;
            if (ns == k)
                return dup ? -2 : v;
            seen[ns++] = dup ? -1 : v;
        }
    if (k - 4 >= nv)
        return -1;
    for (int32_t j = 0; j < 4; j++)
        if (seen[j] == vals[k - 4])
            return -2;
    return vals[k - 4];
}

/* Take the top line of the search's stack back; 0 if the stack is empty. */
static int pop_label(routed *rt, int32_t *depth, const int32_t n[2], const int group[2])
{
    if (--*depth < 0)
        return 0;
    const int32_t i = rt->surf_stack[*depth];
    lift_label(rt, i / n[1], i % n[1], n, group);
    return 1;
}

/* The unlabelled line to label next: of those with a hole or a labelled neighbour, the first
 * with at most one value place_label() accepts, else the one with the fewest; with none such,
 * the first unlabelled line (any value fits it). *fewest: its count of values. */
static int32_t next_line(routed *rt, const int32_t n[2], const int group[2], const int32_t *vals, int32_t nv,
                         int32_t *fewest)
{
    int32_t pick = -1;
    *fewest = 0x7fffffff;
    for (int32_t i = 0; i < n[0] * n[1] && *fewest > 1; i++) {
        if (rt->surf_label[i] >= 0)
            continue;
        const int32_t a = i / n[1], b = i % n[1];
        int near = rt->surf_hole[i] >= 0;
        for (int k = 0; k < 4 && !near; k++) {
            const int32_t m = side_neighbour(rt, a, b, n, k / 2, k % 2 ? 1 : -1);
            near = m >= 0 && rt->surf_label[m] >= 0;
        }
        if (!near) {
            pick = pick < 0 ? i : pick;
            continue;
        }
        int32_t count = 0;
        for (int32_t k = 0, v; count < *fewest && (v = label_value(rt, a, b, n, k, vals, nv)) != -1; k++)
            if (v >= 0 && place_label(rt, a, b, n, group, v)) {
                lift_label(rt, a, b, n, group);
                count++;
            }
        if (count < *fewest) {
            *fewest = count;
            pick = i;
        }
    }
    return pick;
}

/* rt->surf_label for a surface along e (surface_holes(e) done): the coordinate each line skips,
 * its hole's where it has one, such that place_label()'s rule holds on every line (then the
 * stencil's max load is 2 on a torus or mesh routed in dimension order). A backtracking search
 * that labels next_line() with each value label_value() lists in turn; 0 when there is no such
 * labelling, or none found within SURFACE_LABEL_WORK, or the surface has more than
 * SURFACE_LABEL_LINES lines or lines longer than 64 nodes. Deterministic. */
static int surface_labels(routed *rt, int e)
{
    const slide_layout *lay = rt->lay;
    int p[2];
    other_dims(e, p);
    const int32_t n[2] = {lay->grid.size[p[0]], lay->grid.size[p[1]]}, ne = lay->grid.size[e];
    const int32_t lines = n[0] * n[1];
    if (ne > 64 || lines > SURFACE_LABEL_LINES)
        return 0;
    int pos[SLIDE_MAX_DIMS] = {0, 0, 0};
    for (int k = 0; k < lay->grid.ndims; k++)
        pos[rt->net->order[k]] = k;
    const int group[2] = {pos[p[0]] > pos[e], pos[p[1]] > pos[e]};
    uint64_t holes = 0;
    for (int32_t i = 0; i < lines; i++) {
        rt->surf_label[i] = rt->surf_try[i] = -1;
        for (int k = 0; k < 4; k++)
            rt->surf_count[4 * i + k] = 0;
        if (rt->surf_hole[i] >= 0)
            holes |= 1ull << rt->surf_hole[i];
    }
    int32_t vals[64], nv = 0;
    for (int32_t v = 0; v < ne; v++)
        if (holes >> v & 1 || v == 0 || holes >> (v - 1) & 1)
            vals[nv++] = v;
    int32_t depth = 0;
    rt->surf_work = 0;
    while (depth < lines) {
        if (rt->surf_work > SURFACE_LABEL_WORK)
            return 0;
        int32_t fewest, i = next_line(rt, n, group, vals, nv, &fewest);
        if (fewest > 0) {
            rt->surf_stack[depth] = i;
            rt->surf_try[i] = -1;
        } else if (!pop_label(rt, &depth, n, group)) {
            return 0;
        }
        /* the top line's next accepted value, else back to the line below it */
        for (;;) {
            i = rt->surf_stack[depth];
            const int32_t v = label_value(rt, i / n[1], i % n[1], n, ++rt->surf_try[i], vals, nv);
            if (v >= 0 && place_label(rt, i / n[1], i % n[1], n, group, v)) {
                depth++;
                break;
            }
            if (v == -1 && (!pop_label(rt, &depth, n, group) || rt->surf_work > SURFACE_LABEL_WORK))
                return 0;
        }
    }
    return 1;
}

/* Ways to cut a side of n lines into pieces of at least 2: every cut into pieces of 2 and 3
 * (n <= SURFACE_SIDE_ALL), or even cuts every 2 and 3 (longer sides), at every rotation on a
 * torus; then the whole side (mask 0) last. Writes at most `cap` masks, returns the count. */
static int side_cuts(int32_t n, int periodic, uint64_t *out, int cap)
{
    int count = 0;
    if (n >= 4 && n <= SURFACE_SIDE_MAX) {
        /* pieces as a sequence of 2s and 3s summing to n: bit k of `seq` = piece k is a 3 */
        for (uint32_t seq = 0; seq < (1u << (n / 2)); seq++) {
            int32_t pos = 0, k = 0;
            uint64_t mask = 0;
            while (pos < n) {
                mask |= 1ull << pos;
                pos += (seq >> k & 1) ? 3 : 2;
                k++;
            }
            if (pos != n || (seq >> k) != 0)
                continue; /* does not end on n, or bits beyond the pieces: a duplicate */
            if (n > SURFACE_SIDE_ALL && seq != 0 && seq != (1u << k) - 1)
                continue; /* long sides: even cuts only */
            for (int32_t rot = 0; rot < (periodic ? 3 : 1); rot++) {
                const uint64_t full = n == 64 ? ~0ull : (1ull << n) - 1;
                const uint64_t m = rot ? ((mask << rot) | (mask >> (n - rot))) & full : mask;
                int dup = 0;
                for (int j = 0; j < count && !dup; j++)
                    dup = out[j] == m;
                if (!dup && count < cap - 1)
                    out[count++] = m;
            }
            if (n > SURFACE_SIDE_ALL && seq == 0 && (n / 2) > 20)
                break;
        }
    }
    out[count++] = 0;
    return count;
}

/* ---- the method ---------------------------------------------------------------------- */

/* A candidate: enough to queue its moves again, and its score. */
typedef struct candidate {
    int kind;              /* slide_choice_kind */
    block blk;             /* BLOCK */
    cross crs;             /* CROSS */
    int32_t node;          /* DIRECT: the free node */
    surface srf;           /* SURFACE */
    score sc;
} candidate;

/* The best candidate within the spare budget, and the best outside it (taken
 * only when none is within it). */
typedef struct pick {
    candidate in, out;
    int have_in, have_out;
} pick;

static void consider(pick *p, const routed *rt, int32_t handled, const candidate *c)
{
    if (within_budget(rt, &c->sc, handled)) {
        if (!p->have_in || better(&c->sc, &p->in.sc)) {
            p->in = *c;
            p->have_in = 1;
        }
    } else if (!p->have_out || better(&c->sc, &p->out.sc)) {
        p->out = *c;
        p->have_out = 1;
    }
}

/* Queue the moves of a block, crossing or direct candidate; 0 if it has none. */
static int queue_candidate(routed *rt, int32_t f, int32_t v, const candidate *c)
{
    switch (c->kind) {
    case SLIDE_CHOICE_BLOCK: return queue_block(rt, f, v, &c->blk);
    case SLIDE_CHOICE_CROSS: return queue_cross(rt, f, v, &c->crs);
    case SLIDE_CHOICE_DIRECT:
        clear_moves(rt);
        add_move(rt, v, c->node);
        return 1;
    default: return 0;
    }
}

/* Score c's moves if it has any and consider it. */
static void try_candidate(routed *rt, pick *p, int32_t f, int32_t v, int32_t handled,
                          candidate *c, slide_choice *ch)
{
    if (!queue_candidate(rt, f, v, c))
        return;
    c->sc = pending_score(rt);
    clear_moves(rt);
    ch->candidates++;
    if (c->kind == SLIDE_CHOICE_DIRECT)
        ch->direct_load_max = c->sc.load_max;
    consider(p, rt, handled, c);
}

/* Every local candidate for the failure of node f, which held rank v. */
static void local_candidates(routed *rt, pick *p, int32_t f, int32_t v, int32_t handled,
                             slide_choice *ch)
{
    const slide_layout *lay = rt->lay;
    candidate c;
    memset(&c, 0, sizeof c);
    for (int d = 0; d < lay->grid.ndims; d++) {
        if (lay->grid.size[d] < 2)
            continue;
        int e[2];
        other_dims(d, e);
        for (int s = +1; s >= -1; s -= 2) {
            /* 1. blocks of lines along d toward s */
            const int32_t want = steps_to_free(rt, f, d, s);
            if (want >= 0) {
                int32_t lo[2][MAX_INTERVALS], wd[2][MAX_INTERVALS], nint[2];
                for (int k = 0; k < 2; k++) {
                    int32_t alo, aw;
                    aligned_run(rt, f, d, s, e[k], want, &alo, &aw);
                    nint[k] = intervals(slide_coord_(lay, f, e[k]), lay->grid.size[e[k]],
                                        lay->grid.periodic, alo, aw, lo[k], wd[k]);
                }
                c.kind = SLIDE_CHOICE_BLOCK;
                for (int32_t a = 0; a < nint[0]; a++)
                    for (int32_t b = 0; b < nint[1]; b++) {
                        c.blk = (block){d, s, {lo[0][a], lo[1][b]}, {wd[0][a], wd[1][b]}};
                        try_candidate(rt, p, f, v, handled, &c, ch);
                    }
            }
            /* 2. crossings to the lines along d one or two steps away, turning at
             * once or where the failed line's run of ranks ends */
            const int32_t pres[2] = {0, run_of_ranks(rt, f, d, s)};
            c.kind = SLIDE_CHOICE_CROSS;
            for (int pi = 0; pi < 2; pi++)
                for (int k = 0; k < 2 && (pi == 0 || pres[1] > 0); k++)
                    for (int32_t dist = 1; dist <= 2 && lay->grid.size[e[k]] > 1; dist++)
                        for (int sign = +1; sign >= -1; sign -= 2) {
                            c.crs = (cross){d, s, e[k], sign, dist, pres[pi]};
                            try_candidate(rt, p, f, v, handled, &c, ch);
                        }
        }
    }
    /* 3. the direct replacement */
    c.kind = SLIDE_CHOICE_DIRECT;
    c.node = nearest_free(rt, f);
    if (c.node >= 0)
        try_candidate(rt, p, f, v, handled, &c, ch);
}

/* The candidate routed would take now, or NULL. */
static const candidate *chosen(const pick *p)
{
    return p->have_in ? &p->in : p->have_out ? &p->out : NULL;
}

/* Score the whole map m as candidate c (its load first, from nothing; the rest only if it can
 * compete) and consider it. */
static void try_whole_map(routed *rt, pick *p, int32_t handled, candidate *c, const int32_t *m,
                          slide_choice *ch)
{
    const candidate *best = chosen(p);
    int32_t max, overloaded;
    ch->candidates++;
    map_loads(rt, m, -1, rt->scratch, &max, &overloaded);
    if (best != NULL && max > best->sc.load_max)
        return;
    whole_map_score(rt, m, &c->sc);
    c->sc.spares = c->sc.moved = 0;
    for (int32_t r = 0; r < rt->lay->ranks; r++) {
        if (m[r] != rt->r2n[r]) {
            c->sc.spares += spare_change(rt, rt->r2n[r], m[r]);
            c->sc.moved++;
        }
    }
    consider(p, rt, handled, c);
}

/* The tiling (side_cuts() on each side) of the surface along e that keeps apart every two of the
 * nf failed lines (fa, fb) skipping different coordinates with the fewest lines in tiles holding a
 * failure, stripes (one side whole) before any other if stripes_first; scored and considered. */
static void try_tiling(routed *rt, pick *p, int32_t handled, candidate *c, slide_choice *ch, int e, int d,
                       const int32_t *fa, const int32_t *fb, int32_t nf, const int32_t n[2], int stripes_first)
{
    enum { CAP = 512 };
    uint64_t cuts[2][CAP];

    uint64_t clash = 0; /* bit i*nf+j: failed lines i < j skip different coordinates */
    for (int32_t i = 0; i < nf; i++)
        for (int32_t j = i + 1; j < nf; j++)
            if (rt->surf_hole[fa[i] * n[1] + fb[i]] != rt->surf_hole[fa[j] * n[1] + fb[j]])
                clash |= 1ull << (i * nf + j);
    const int nc[2] = {side_cuts(n[0], rt->lay->grid.periodic, cuts[0], CAP),
                       side_cuts(n[1], rt->lay->grid.periodic, cuts[1], CAP)};
    uint64_t together[2][CAP]; /* pairs in one piece along each side */
    for (int k = 0; k < 2; k++)
        for (int m = 0; m < nc[k]; m++) {
            together[k][m] = 0;
            for (int32_t i = 0; i < nf; i++)
                for (int32_t j = i + 1; j < nf; j++) {
                    const int32_t *f = k ? fb : fa;
                    if (piece_of(cuts[k][m], f[i], n[k]) == piece_of(cuts[k][m], f[j], n[k]))
                        together[k][m] |= 1ull << (i * nf + j);
                }
        }
    int64_t best_cost = -1;
    for (int m0 = 0; m0 < nc[0]; m0++)
        for (int m1 = 0; m1 < nc[1]; m1++) {
            if ((together[0][m0] & together[1][m1] & clash) != 0 ||
                (cuts[0][m0] == 0 && cuts[1][m1] == 0))
                continue;
            /* lines in tiles that hold a failed line (each such tile once), after
             * stripes where they matter */
            int64_t cost = stripes_first && cuts[0][m0] != 0 && cuts[1][m1] != 0 ? (int64_t)n[0] * n[1] : 0;
            for (int32_t i = 0; i < nf; i++) {
                int seen = 0;
                for (int32_t j = 0; j < i && !seen; j++)
                    seen = piece_of(cuts[0][m0], fa[i], n[0]) == piece_of(cuts[0][m0], fa[j], n[0]) &&
                           piece_of(cuts[1][m1], fb[i], n[1]) == piece_of(cuts[1][m1], fb[j], n[1]);
                if (seen)
                    continue;
                int64_t size = 1;
                for (int k = 0; k < 2; k++) {
                    const uint64_t cut = cuts[k][m0 * (1 - k) + m1 * k];
                    const int32_t at = piece_of(cut, k ? fb[i] : fa[i], n[k]);
                    int32_t len = 0;
                    for (int32_t x = 0; x < n[k]; x++)
                        len += piece_of(cut, x, n[k]) == at;
                    size *= len;
                }
                cost += size;
            }
            if (best_cost < 0 || cost < best_cost) {
                best_cost = cost;
                c->srf = (surface){.e = e, .d = d, .cut = {cuts[0][m0], cuts[1][m1]}};
            }
        }
    if (best_cost >= 0) {
        surface_map(rt, &c->srf, rt->surf_map);
        try_whole_map(rt, p, handled, c, rt->surf_map, ch);
    }
}

/* Product maps with more than one skipped coordinate in all (one is a rigid surface): at most
 * this many skipped, and this many skip sets checked per assignment of dimensions. */
#define PRODUCT_SKIPS_MAX 4
#define PRODUCT_SETS_MAX 4096

/* Whether ranks on the coordinates kept by `skip` (a ring of n) reach their two ring neighbours
 * through skipped coordinates only, each message the short way: every gap between consecutive
 * kept coordinates under half the ring, or exactly half from 0 to n/2 (the tie rule sends the
 * message from 0 the + way). Always on a mesh. */
static int ring_whole(uint64_t skip, int32_t n, int periodic)
{
    if (!periodic)
        return 1;
    int32_t first = -1, prev = -1;
    for (int32_t c = 0; c <= n; c++) {
        if (c < n && (skip >> c & 1))
            continue;
        const int32_t at = c < n ? c : first + n;
        if (c == n && first < 0)
            return 0;
        if (prev >= 0) {
            const int32_t gap = at - prev;
            if (2 * gap > n || (2 * gap == n && !(prev == 0 && at == n / 2)))
                return 0;
        }
        if (c < n && first < 0)
            first = c;
        prev = at;
    }
    return 1;
}

/* The map of product surface sf into out. Cost O(ranks x side). */
static void product_map(const routed *rt, const surface *sf, int32_t *out)
{
    const slide_layout *lay = rt->lay;
    const int32_t *L = lay->logical;
    for (int32_t r = 0; r < lay->ranks; r++) {
        const int32_t lc[3] = {r / (L[1] * L[2]), r / L[2] % L[1], r % L[2]};
        int32_t node = 0;
        for (int k = 0; k < lay->grid.ndims; k++) {
            const int e = sf->perm[k];
            int32_t c = -1;
            for (int32_t kept = -1; kept < lc[k];)
                kept += !(sf->skip[e] >> ++c & 1);
            node += c * lay->stride[e];
        }
        out[r] = node;
    }
}

/* Product surfaces (slide_core.h, SLIDE_ROUTED (e)): for each assignment of logical dimensions to
 * physical ones that skips 2 to PRODUCT_SKIPS_MAX coordinates in all (one per count of skips per
 * dimension), the first set of skipped
 * coordinates (each dimension's sets in increasing order) that holds every failed and unused node
 * and keeps every ring whole (ring_whole()): a map of max load 1; scored and considered. */
static void try_products(routed *rt, pick *p, int32_t handled, slide_choice *ch)
{
    const slide_layout *lay = rt->lay;
    const int nd = lay->grid.ndims;
    static const int perms[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    candidate c;
    memset(&c, 0, sizeof c);
    c.kind = SLIDE_CHOICE_SURFACE;
    int32_t *holes = rt->surf_stack, nholes = 0; /* the failed and unused nodes (the stack is free here) */
    for (int32_t node = 0; node < lay->nodes; node++)
        if (rt->n2r[node] <= NODE_DEAD)
            holes[nholes++] = node;
    int32_t done[6][SLIDE_MAX_DIMS], ndone = 0; /* skips per dimension already tried */
    for (int pi = 0; pi < 6; pi++) {
        const int *perm = perms[pi];
        int32_t k[SLIDE_MAX_DIMS] = {0, 0, 0}, total = 0, fits = nd == 3 || perm[2] == 2;
        for (int d = 0; d < nd && fits; d++) {
            k[perm[d]] = lay->grid.size[perm[d]] - lay->logical[d];
            fits = k[perm[d]] >= 0 && lay->grid.size[perm[d]] < 64;
            total += k[perm[d]];
        }
        int seen = 0; /* the same skips as an earlier assignment: the same sets, the same loads */
        for (int j = 0; j < ndone && !seen; j++)
            seen = done[j][0] == k[0] && done[j][1] == k[1] && done[j][2] == k[2];
        if (!fits || seen || total < 2 || total > PRODUCT_SKIPS_MAX)
            continue;
        memcpy(done[ndone++], k, sizeof k);
        /* each dimension's skip sets of k[e] coordinates, in increasing order (next_set) */
        uint64_t set[SLIDE_MAX_DIMS], first[SLIDE_MAX_DIMS];
        for (int e = 0; e < nd; e++)
            set[e] = first[e] = k[e] ? (1ull << k[e]) - 1 : 0;
        for (int32_t tried = 0; tried < PRODUCT_SETS_MAX; tried++) {
            int ok = 1;
            for (int e = 0; e < nd && ok; e++)
                ok = ring_whole(set[e], lay->grid.size[e], lay->grid.periodic);
            for (int32_t h = 0; h < nholes && ok; h++) {
                ok = 0;
                for (int e = 0; e < nd && !ok; e++)
                    ok = set[e] >> slide_coord_(lay, holes[h], e) & 1;
            }
            if (ok) {
                c.srf = (surface){.product = 1};
                for (int e = 0; e < SLIDE_MAX_DIMS; e++) {
                    c.srf.perm[e] = perm[e];
                    c.srf.skip[e] = set[e];
                }
                product_map(rt, &c.srf, rt->surf_map);
                try_whole_map(rt, p, handled, &c, rt->surf_map, ch);
                break;
            }
            /* the next combination: advance the lowest dimension whose set can grow, reset the ones below */
            int e = 0;
            for (; e < nd; e++) {
                const uint64_t x = set[e];
                if (x == 0)
                    continue;
                const uint64_t low = x & -x, ripple = x + low, next = ripple | (((x ^ ripple) >> 2) / low);
                if ((next >> lay->grid.size[e]) == 0 && ripple != 0) {
                    set[e] = next;
                    break;
                }
                set[e] = first[e];
            }
            if (e == nd)
                break;
        }
    }
}

/* Surface candidates (slide_core.h, SLIDE_ROUTED (e)) while the best load is above 1: per
 * fitting orientation, the rigid one (one tile) if the failed and unused nodes allow it, and while
 * the best load is above 2 the tiling (side_cuts() on each side) that keeps apart every two failed
 * lines skipping different coordinates with the fewest lines in tiles holding a failure; on a 3D
 * grid's dimensions routed first and last, stripes (one side whole) before any other. */
static void try_surfaces(routed *rt, pick *p, int32_t handled, slide_choice *ch)
{
    const slide_layout *lay = rt->lay;
    const int nd = lay->grid.ndims;
    candidate c;
    memset(&c, 0, sizeof c);
    c.kind = SLIDE_CHOICE_SURFACE;
    if (chosen(p) == NULL || chosen(p)->sc.load_max > 1)
        try_products(rt, p, handled, ch);
    for (int e = 0; e < nd; e++)
        for (int d = 0; d < nd; d++) {
            const candidate *best = chosen(p);
            if (!surface_fits(lay, e, d) || (best != NULL && best->sc.load_max <= 1) || !surface_holes(rt, e))
                continue;
            int q[2];
            other_dims(e, q);
            const int32_t n[2] = {lay->grid.size[q[0]], lay->grid.size[q[1]]};
            /* the failed lines and the pairs of them that must not share a tile */
            int32_t fa[SURFACE_FORCED_MAX], fb[SURFACE_FORCED_MAX], nf = 0, first = -1;
            int rigid = 1;
            for (int32_t a = 0; a < n[0]; a++)
                for (int32_t b = 0; b < n[1]; b++) {
                    const int32_t h = rt->surf_hole[a * n[1] + b];
                    if (h < 0)
                        continue;
                    rigid &= first < 0 || h == first;
                    first = h;
                    if (nf < SURFACE_FORCED_MAX) {
                        fa[nf] = a;
                        fb[nf] = b;
                    }
                    nf++;
                }
            if (rigid) {
                c.srf = (surface){.e = e, .d = d};
                surface_map(rt, &c.srf, rt->surf_map);
                try_whole_map(rt, p, handled, &c, rt->surf_map, ch);
            }
            if (rigid || chosen(p)->sc.load_max <= 2)
                continue;
            if (nf <= SURFACE_FORCED_MAX && n[0] <= SURFACE_SIDE_MAX && n[1] <= SURFACE_SIDE_MAX)
                try_tiling(rt, p, handled, &c, ch, e, d, fa, fb, nf, n, nd == 3 && e != rt->net->order[1]);
            if (chosen(p)->sc.load_max > 2 && surface_labels(rt, e)) {
                c.srf = (surface){.e = e, .d = d, .labelled = 1};
                surface_map(rt, &c.srf, rt->surf_map);
                try_whole_map(rt, p, handled, &c, rt->surf_map, ch);
            }
        }
}

/* Take the map m whole: node states, spare count and loads from it. */
static void adopt_map(routed *rt, const int32_t *m)
{
    const slide_layout *lay = rt->lay;
    memcpy(rt->r2n, m, sizeof *m * (size_t)lay->ranks);
    rt->free_spares = 0;
    for (int32_t node = 0; node < lay->nodes; node++)
        if (rt->n2r[node] >= NODE_FREE) /* not dead, not unused */
            rt->n2r[node] = NODE_FREE;
    for (int32_t r = 0; r < lay->ranks; r++)
        rt->n2r[m[r]] = r;
    for (int32_t node = 0; node < lay->nodes; node++)
        rt->free_spares += rt->n2r[node] == NODE_FREE && is_spare_node(lay, node);
    reset_loads(rt);
}

/* The next n words of the workspace. */
static int32_t *take(int32_t **p, int64_t n)
{
    int32_t *at = *p;
    *p += n;
    return at;
}

int slide_routed_(const slide_layout *lay, const int32_t *failed, int32_t nfailed,
                  int32_t *r2n, slide_choice *choices, int32_t *w, int32_t *err_index)
{
    /* hybrid's fold, whose map is a candidate at every failure */
    slide_fold hybrid;
    int32_t *hybrid_map = w + slide_fold_words_(lay);
    slide_fold_init_(&hybrid, lay, SLIDE_HYBRID, w, hybrid_map);
    int hybrid_alive = 1;

    routed rt;
    memset(&rt, 0, sizeof rt);
    rt.lay = lay;
    rt.net = &lay->net;
    rt.r2n = r2n;
    int32_t *p = hybrid_map + lay->ranks; /* the rest: what slide_routed_words_() counts */
    rt.nlayers = 1 + lay->grid.ndims;
    for (int k = 0; k < rt.nlayers; k++) {
        rt.ly[k].load = (uint32_t *)take(&p, lay->net.links);
        rt.ly[k].hist = take(&p, hist_len(lay));
    }
    rt.scratch = (uint32_t *)take(&p, lay->net.links);
    rt.n2r = take(&p, lay->nodes);
    rt.newnode = take(&p, lay->ranks);
    rt.moved = take(&p, lay->ranks);
    rt.route = take(&p, lay->net.route_max);
    rt.surf_map = take(&p, lay->ranks);
    rt.surf_hole = take(&p, lay->nodes);
    rt.surf_tile = take(&p, lay->nodes);
    rt.surf_label = take(&p, lay->nodes);
    rt.surf_try = take(&p, lay->nodes);
    rt.surf_count = take(&p, 4 * (int64_t)lay->nodes);
    rt.surf_stack = take(&p, lay->nodes);

    slide_initial_map(lay, r2n);
    for (int32_t node = 0; node < lay->nodes; node++)
        rt.n2r[node] = lay->spares.block > 0 && slide_role_(lay, node) == SLIDE_ROLE_UNUSED ? NODE_UNUSED
                                                                                          : NODE_FREE;
    for (int32_t r = 0; r < lay->ranks; r++) {
        rt.n2r[r2n[r]] = r;
        rt.newnode[r] = -1;
    }
    rt.free_spares = lay->spare_nodes;
    reset_loads(&rt);

    for (int32_t i = 0; i < nfailed; i++) {
        const int32_t f = failed[i];
        if (f < 0 || f >= lay->nodes || rt.n2r[f] == NODE_DEAD) {
            if (err_index)
                *err_index = i;
            return f < 0 || f >= lay->nodes ? SLIDE_ENODE : SLIDE_EDUP;
        }
        if (hybrid_alive)
            hybrid_alive = slide_fold_step_(&hybrid, f) == SLIDE_OK;
        const int32_t v = rt.n2r[f];
        if (v == NODE_FREE)
            rt.free_spares -= is_spare_node(lay, f);
        rt.n2r[f] = NODE_DEAD;

        slide_choice ch;
        memset(&ch, 0, sizeof ch);
        ch.hybrid_load_max = ch.direct_load_max = -1;
        pick pk;
        memset(&pk, 0, sizeof pk);
        if (v < 0) { /* the node held no rank: the map may stay */
            candidate none;
            memset(&none, 0, sizeof none);
            none.kind = SLIDE_CHOICE_NONE;
            none.node = -1;
            none.sc = (score){rt.ly[0].max, phased_cost(&rt), rt.ly[0].overloaded, 0, 0};
            consider(&pk, &rt, i + 1, &none);
        } else {
            local_candidates(&rt, &pk, f, v, i + 1, &ch);
        }
        if (hybrid_alive) { /* hybrid's map for the same failures, whole */
            candidate h;
            memset(&h, 0, sizeof h);
            h.kind = SLIDE_CHOICE_HYBRID;
            whole_map_score(&rt, hybrid_map, &h.sc);
            for (int32_t r = 0; r < lay->ranks; r++) {
                if (hybrid_map[r] != r2n[r]) {
                    h.sc.spares += spare_change(&rt, r2n[r], hybrid_map[r]);
                    h.sc.moved++;
                }
            }
            ch.candidates++;
            ch.hybrid_load_max = h.sc.load_max;
            ch.hybrid_overloaded = h.sc.overloaded;
            consider(&pk, &rt, i + 1, &h);
        }
        if (v >= 0)
            try_surfaces(&rt, &pk, i + 1, &ch);
        if (!pk.have_in && !pk.have_out) {
            rt.n2r[f] = v;
            rt.free_spares += v == NODE_FREE && is_spare_node(lay, f);
            if (err_index)
                *err_index = i;
            return SLIDE_ENOSPARE;
        }
        const candidate *c = pk.have_in ? &pk.in : &pk.out;
        if (c->kind == SLIDE_CHOICE_HYBRID) {
            adopt_map(&rt, hybrid_map);
        } else if (c->kind == SLIDE_CHOICE_SURFACE) {
            if (c->srf.product) {
                product_map(&rt, &c->srf, rt.surf_map);
            } else {
                surface_holes(&rt, c->srf.e);
                if (c->srf.labelled)
                    surface_labels(&rt, c->srf.e); /* deterministic: the labels it was scored with */
                surface_map(&rt, &c->srf, rt.surf_map);
            }
            adopt_map(&rt, rt.surf_map);
        } else if (c->kind != SLIDE_CHOICE_NONE) {
            queue_candidate(&rt, f, v, c);
            commit_moves(&rt);
        }
        ch.kind = c->kind;
        if (c->kind == SLIDE_CHOICE_BLOCK) {
            ch.dim = c->blk.d;
            ch.dir = c->blk.s;
            for (int k = 0; k < 2; k++) {
                ch.lo[k] = c->blk.lo[k];
                ch.width[k] = c->blk.w[k];
            }
        } else if (c->kind == SLIDE_CHOICE_SURFACE) {
            ch.dim = c->srf.product ? -1 : c->srf.e; /* a product map: dim, dir -1, no tiles */
            ch.dir = c->srf.product ? -1 : c->srf.d;
            int q[2];
            other_dims(c->srf.e, q);
            for (int k = 0; k < 2 && !c->srf.product; k++) { /* pieces per side (labelled: one per line) */
                int32_t pieces = 0;
                for (int bit = 0; bit < 64; bit++)
                    pieces += (int32_t)(c->srf.cut[k] >> bit & 1);
                ch.width[k] = c->srf.labelled ? lay->grid.size[q[k]] : pieces > 0 ? pieces : 1;
            }
        } else if (c->kind == SLIDE_CHOICE_CROSS) {
            ch.dim = c->crs.d;
            ch.dir = c->crs.s;
            ch.lo[0] = c->crs.e;
            ch.width[0] = c->crs.sign * c->crs.k;
        }
        ch.load_max = rt.ly[0].max;
        ch.overloaded = rt.ly[0].overloaded;
        ch.spares = c->sc.spares;
        ch.moved = c->sc.moved;
        if (choices)
            choices[i] = ch;
    }
    return SLIDE_OK;
}
