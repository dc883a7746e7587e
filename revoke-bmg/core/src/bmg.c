/*
 * bmg.c - binomial-graph reliable broadcast, flooding and lean variants.
 *
 * State per process: the highest delivered epoch, per origin of it seen here
 * the set of ranks known to hold it ("have": ranks we sent it to or received
 * it from; flooding keeps one such set), and the set of
 * ranks the failure detector reported dead, both as sorted rank arrays (so
 * the state is O(degree + failures), never O(P)). Every event ends with the same
 * idempotent step: compute the effective neighbours under the current dead
 * set and send the current epoch to those not in "have". Because effective
 * neighbour sets only grow (minus dead ranks) as the dead set grows, this one
 * rule covers first receipt, duplicates, and failures learned while a
 * broadcast is in flight.
 *
 * Mutants for the model checker (compiled only into test binaries):
 *   BMG_MUTANT_PLUS1_ONLY    flooding forwards to rank+1 only, never walks
 *                            past a dead successor.
 *   BMG_MUTANT_NO_REFORWARD  failures learned after delivery trigger nothing.
 *   BMG_MUTANT_LEAN_NO_BYPASS lean variant skips dead tree neighbours instead
 *                            of contracting them.
 *   BMG_MUTANT_OWN_RADIX     lean variant forwards every broadcast along its
 *                            own radix's tree instead of the origin's.
 */
#include "bmg.h"

#include <stdlib.h>
#include <string.h>

#include "ftslide_corekit.h"

#define BMG_WIRE_MAGIC 0xB6u
#define BMG_WIRE_VERSION 3u /* 2: the lean tree is rooted at each message's origin; 3: and has its radix */
#define BMG_MSG_BCAST 1u
#define BMG_INLINE 16u /* entries of the rank arrays kept inside the object */

struct bmg {
    uint32_t n, me;
    bmg_variant_t variant;
    bmg_callbacks_t cb;
    void *ctx;
    uint64_t epoch;   /* highest delivered epoch, 0 = none */
    uint32_t origin;  /* origin of the first message carrying `epoch` */
    uint64_t nsent;
    int oom;          /* an allocation failed */
    size_t bytes;     /* heap held (footprint) */
    /* Sorted rank arrays: no array of P entries anywhere. */
    uint32_t *dead, ndead, capdead;   /* reported crashed */
    /* Per origin of `epoch` seen here (lean: each origin's broadcast runs
     * along the tree rooted at that origin; flooding: one entry), the ranks
     * known to hold `epoch` from it: sent to or received from. */
    struct bmg_src {
        uint32_t origin;
        uint32_t radix;  /* lean: the radix of the origin's tree, as its messages carry it */
        uint32_t *have, nhave, caphave;
    } *src;
    uint32_t nsrc, capsrc;
    uint32_t *targets, ntg, captg;    /* scratch: effective neighbours */
    uint32_t *stack, capstack;        /* scratch: contraction walk (lean), (vertex, from) pairs */
    uint32_t *nb, capnb;              /* scratch: tree neighbours of one vertex (lean) */
    uint32_t radix;                   /* lean: broadcasts started here run along the k-nomial tree
                                       * with k = radix (default 4); others along their origin's */
    /* First storage of the arrays above, inside the object: a revoke among
     * up to 17 ranks (every rank a neighbour of the origin on one node, one
     * origin) allocates nothing more than the object itself. grow() moves an
     * array to the heap when it outgrows its slot. */
    uint32_t in_targets[BMG_INLINE], in_stack[16], in_nb[BMG_INLINE], in_have[BMG_INLINE];
    struct bmg_src in_src[2];
};

/* ---- small helpers -------------------------------------------------------- */

/* 1 if p is storage inside the object (never freed). */
static int is_inline(const bmg_t *b, const void *p)
{
    return (const char *)p >= (const char *)b && (const char *)p < (const char *)(b + 1);
}

/* Grows *p (uint32 elements) to hold at least `need`; 0 on failure. */
static int grow(bmg_t *b, uint32_t **p, uint32_t *cap, uint32_t need)
{
    if (need <= *cap) return 1;
    uint32_t nc = *cap ? *cap : 8;
    while (nc < need) nc = nc > UINT32_MAX / 2 ? need : 2 * nc;
    uint32_t *q;
    int moved = *p && is_inline(b, *p);
    if (moved) {
        q = malloc((size_t)nc * sizeof *q);
        if (q) memcpy(q, *p, (size_t)*cap * sizeof *q);
    } else {
        q = realloc(*p, (size_t)nc * sizeof *q);
    }
    if (!q) {
        b->oom = 1;
        return 0;
    }
    b->bytes += ((size_t)nc - (moved ? 0 : *cap)) * sizeof *q;
    *p = q;
    *cap = nc;
    return 1;
}

/* Inserts x into the sorted array; 1 if it was new. */
static int set_add(bmg_t *b, uint32_t **v, uint32_t *n, uint32_t *cap, uint32_t x)
{
    uint32_t i;
    if (fck_find(*v, *n, x, &i) || !grow(b, v, cap, *n + 1)) return 0;
    fck_insert_at(*v, *n, i, x);
    (*n)++;
    return 1;
}

static int is_dead(const bmg_t *b, uint32_t r) { return fck_has(b->dead, b->ndead, r); }

/* Appends r to out[0..*cnt) unless present; cap-checked. */
static void add_unique(uint32_t *out, uint32_t *cnt, uint32_t cap, uint32_t r)
{
    for (uint32_t i = 0; i < *cnt && i < cap; i++)
        if (out[i] == r) return;
    if (*cnt < cap) out[*cnt] = r;
    (*cnt)++;
}

/* ---- topology ------------------------------------------------------------- */

uint32_t bmg_neighbors(uint32_t n, uint32_t rank, uint32_t *out, uint32_t cap)
{
    uint32_t cnt = 0;
    if (n < 2 || rank >= n) return 0;
    for (uint64_t d = 1; d < n; d <<= 1) {
        uint32_t up = (uint32_t)((rank + d) % n);
        uint32_t down = (uint32_t)((rank + n - d) % n);
        if (up != rank) add_unique(out, &cnt, cap, up);
        if (down != rank) add_unique(out, &cnt, cap, down);
    }
    return cnt;
}

uint32_t bmg_degree(uint32_t n)
{
    uint32_t tmp[80];
    return bmg_neighbors(n, 0, tmp, 80);
}

uint32_t bmg_diameter(uint32_t n)
{
    if (n <= 1) return 0;
    uint32_t *dist = malloc((size_t)n * sizeof *dist);
    uint32_t *queue = malloc((size_t)n * sizeof *queue);
    if (!dist || !queue) {
        free(dist);
        free(queue);
        return UINT32_MAX;
    }
    for (uint32_t i = 0; i < n; i++) dist[i] = UINT32_MAX;
    uint32_t head = 0, tail = 0, far = 0, nb[80];
    dist[0] = 0;
    queue[tail++] = 0;
    while (head < tail) {
        uint32_t u = queue[head++];
        uint32_t k = bmg_neighbors(n, u, nb, 80);
        for (uint32_t i = 0; i < k && i < 80; i++) {
            if (dist[nb[i]] != UINT32_MAX) continue;
            dist[nb[i]] = dist[u] + 1;
            if (dist[nb[i]] > far) far = dist[nb[i]];
            queue[tail++] = nb[i];
        }
    }
    free(dist);
    free(queue);
    return far; /* circulant graph: the eccentricity of 0 is the diameter */
}

uint32_t bmg_knomial_neighbors(uint32_t n, uint32_t k, uint32_t origin, uint32_t rank, uint32_t *out, uint32_t cap)
{
    uint32_t cnt = 0;
    if (n < 2 || k < 2 || rank >= n || origin >= n) return 0;
    uint32_t v = (uint32_t)(((uint64_t)rank + n - origin) % n); /* position in the tree rooted at origin */
    if (v) {
        if (cnt < cap) out[cnt] = (uint32_t)(((uint64_t)fck_knomial_parent(k, v) + origin) % n);
        cnt++;
    }
    fck_knomial_children(n, k, v, origin, out, cap, &cnt);
    return cnt;
}

uint32_t bmg_tree_neighbors(uint32_t n, uint32_t v, uint32_t *out, uint32_t cap)
{
    return bmg_knomial_neighbors(n, 4, 0, v, out, cap);
}

/* ---- effective neighbours -------------------------------------------------- */


/* Appends r to the target list unless present. */
static void add_target(bmg_t *b, uint32_t r)
{
    for (uint32_t i = 0; i < b->ntg; i++)
        if (b->targets[i] == r) return;
    if (grow(b, &b->targets, &b->captg, b->ntg + 1)) b->targets[b->ntg++] = r;
}

/* Flooding: alive +-2^k neighbours, plus the nearest alive rank clockwise and
 * counter-clockwise (walking past dead +-1 neighbours keeps the ring of alive
 * ranks connected). */
static uint32_t flood_targets(bmg_t *b)
{
    uint32_t n = b->n, me = b->me;
    b->ntg = 0;
    if (n < 2) return 0;
#ifdef BMG_MUTANT_PLUS1_ONLY
    add_target(b, (me + 1) % n);
    return b->ntg;
#else
    for (uint32_t d = 1; d < n; d++) {
        uint32_t r = (uint32_t)(((uint64_t)me + d) % n);
        if (!is_dead(b, r)) {
            add_target(b, r);
            break;
        }
    }
    for (uint32_t d = 1; d < n; d++) {
        uint32_t r = (uint32_t)(((uint64_t)me + n - d) % n);
        if (!is_dead(b, r)) {
            add_target(b, r);
            break;
        }
    }
    for (uint64_t d = 2; d < n; d <<= 1) {
        uint32_t up = (uint32_t)((me + d) % n), down = (uint32_t)((me + n - d) % n);
        if (up != me && !is_dead(b, up)) add_target(b, up);
        if (down != me && !is_dead(b, down)) add_target(b, down);
    }
    return b->ntg;
#endif
}

uint32_t bmg_lean_neighbors(uint32_t n, uint32_t origin, uint32_t rank, uint32_t *out, uint32_t cap)
{
    return bmg_knomial_neighbors(n, 4, origin, rank, out, cap);
}

/* The neighbours of u in the lean tree of radix `radix` rooted at origin,
 * into b->nb; their count (0 if memory runs out). */
static uint32_t tree_nb(bmg_t *b, uint32_t origin, uint32_t radix, uint32_t u)
{
    uint32_t k = bmg_knomial_neighbors(b->n, radix, origin, u, b->nb, b->capnb);
    if (k > b->capnb) {
        if (!grow(b, &b->nb, &b->capnb, k)) return 0;
        k = bmg_knomial_neighbors(b->n, radix, origin, u, b->nb, b->capnb);
    }
    return k;
}

/* Lean: the spanning tree of radix `radix` rooted at `origin` with every dead vertex
 * contracted into its neighbours: the targets are the alive vertices
 * reachable from `me` along tree paths whose inner vertices are all dead. A
 * tree has no cycles, so the walk needs no visit marks: it never goes back to
 * the vertex it came from. */
static uint32_t lean_targets(bmg_t *b, uint32_t origin, uint32_t radix)
{
    uint32_t n = b->n, sp = 0;
    b->ntg = 0;
    if (n < 2) return 0;
    if (!grow(b, &b->stack, &b->capstack, 2)) return 0;
    b->stack[sp++] = b->me;
    b->stack[sp++] = b->me; /* "came from itself": nothing excluded */
    while (sp > 0) {
        uint32_t from = b->stack[--sp], u = b->stack[--sp];
        uint32_t k = tree_nb(b, origin, radix, u);
        for (uint32_t i = 0; i < k; i++) {
            uint32_t w = b->nb[i];
            if (w == from || w == b->me) continue;
            if (!is_dead(b, w)) {
                add_target(b, w);
            } else {
#ifndef BMG_MUTANT_LEAN_NO_BYPASS
                if (grow(b, &b->stack, &b->capstack, sp + 2)) { /* dead: look through it */
                    b->stack[sp++] = w;
                    b->stack[sp++] = u;
                }
#endif
            }
        }
    }
    return b->ntg;
}

/* The entry of `origin` (flooding: the only one); created (with nothing
 * known, and the radix its message carries) when missing; NULL if memory
 * runs out. */
static struct bmg_src *src_of(bmg_t *b, uint32_t origin, uint32_t radix)
{
    if (b->variant != BMG_VARIANT_LEAN) origin = b->nsrc ? b->src[0].origin : origin;
    for (uint32_t i = 0; i < b->nsrc; i++)
        if (b->src[i].origin == origin) return &b->src[i];
    if (b->nsrc == b->capsrc) {
        uint32_t nc = b->capsrc ? 2 * b->capsrc : 2;
        int moved = is_inline(b, b->src);
        struct bmg_src *q = moved ? malloc((size_t)nc * sizeof *q) : realloc(b->src, (size_t)nc * sizeof *q);
        if (!q) {
            b->oom = 1;
            return NULL;
        }
        if (moved) memcpy(q, b->src, (size_t)b->capsrc * sizeof *q);
        b->bytes += ((size_t)nc - (moved ? 0 : b->capsrc)) * sizeof *q;
        b->src = q;
        b->capsrc = nc;
    }
    struct bmg_src *e = &b->src[b->nsrc++];
    memset(e, 0, sizeof *e);
    e->origin = origin;
    e->radix = radix;
    if (b->nsrc == 1) { /* the first origin keeps the object's own slot */
        e->have = b->in_have;
        e->caphave = BMG_INLINE;
    }
    return e;
}

/* Send the current epoch to every effective neighbour not known to hold it,
 * along the tree of every origin seen (lean) or to the BMG neighbours
 * (flooding). */
static void forward(bmg_t *b)
{
    unsigned char msg[BMG_MSG_SIZE];
    memset(msg, 0, sizeof msg);
    msg[0] = BMG_WIRE_MAGIC;
    msg[1] = BMG_WIRE_VERSION;
    msg[2] = BMG_MSG_BCAST;
    msg[3] = (unsigned char)b->variant;
    fck_put_u64(msg + 8, b->epoch);
    for (uint32_t j = 0; j < b->nsrc; j++) {
        uint32_t origin = b->src[j].origin, radix = b->src[j].radix;
#ifdef BMG_MUTANT_OWN_RADIX
        if (b->variant == BMG_VARIANT_LEAN) radix = b->radix;
#endif
        uint32_t cnt = b->variant == BMG_VARIANT_LEAN ? lean_targets(b, origin, radix) : flood_targets(b);
        fck_put_u32(msg + 4, origin);
        fck_put_u32(msg + 16, radix);
        for (uint32_t i = 0; i < cnt; i++) {
            uint32_t t = b->targets[i];
            struct bmg_src *e = &b->src[j]; /* (targets never reallocates src) */
            if (t == b->me || !set_add(b, &e->have, &e->nhave, &e->caphave, t)) continue;
            b->nsent++;
            if (b->cb.send) b->cb.send(b->ctx, t, msg, sizeof msg);
        }
    }
}

/* Adopt a higher epoch: forward first, then deliver (so a process that has
 * delivered has already handed the message to all its current targets). */
static void adopt(bmg_t *b, uint64_t epoch, uint32_t origin, uint32_t radix, int64_t from)
{
    b->epoch = epoch;
    b->origin = origin;
    for (uint32_t i = 0; i < b->nsrc; i++) {
        if (b->src[i].have && !is_inline(b, b->src[i].have)) {
            b->bytes -= (size_t)b->src[i].caphave * sizeof(uint32_t);
            free(b->src[i].have);
        }
    }
    b->nsrc = 0;
    struct bmg_src *e = src_of(b, origin, radix);
    if (e && from >= 0) set_add(b, &e->have, &e->nhave, &e->caphave, (uint32_t)from);
    forward(b);
    if (b->cb.deliver) b->cb.deliver(b->ctx, origin, epoch);
}

static int finish(bmg_t *b)
{
    if (!b->oom) return BMG_OK;
    b->oom = 0;
    return BMG_ENOMEM;
}

/* ---- public state machine -------------------------------------------------- */

bmg_t *bmg_create(uint32_t n, uint32_t me, bmg_variant_t variant, const bmg_callbacks_t *cb, void *ctx)
{
    if (n == 0 || me >= n || (variant != BMG_VARIANT_FLOOD && variant != BMG_VARIANT_LEAN)) return NULL;
    bmg_t *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    b->n = n;
    b->me = me;
    b->variant = variant;
    b->radix = 4;
    b->targets = b->in_targets;
    b->captg = BMG_INLINE;
    b->stack = b->in_stack;
    b->capstack = 16;
    b->nb = b->in_nb;
    b->capnb = BMG_INLINE;
    b->src = b->in_src;
    b->capsrc = 2;
    if (cb) b->cb = *cb;
    b->ctx = ctx;
    b->bytes = sizeof *b;
    return b;
}

void bmg_destroy(bmg_t *b)
{
    if (!b) return;
    free(b->dead);
    for (uint32_t i = 0; i < b->nsrc; i++)
        if (!is_inline(b, b->src[i].have)) free(b->src[i].have);
    if (!is_inline(b, b->src)) free(b->src);
    if (!is_inline(b, b->targets)) free(b->targets);
    if (!is_inline(b, b->stack)) free(b->stack);
    if (!is_inline(b, b->nb)) free(b->nb);
    free(b);
}

int bmg_set_radix(bmg_t *b, uint32_t radix)
{
    if (!b || radix < 2 || b->epoch != 0) return BMG_EINVAL;
    b->radix = radix;
    return BMG_OK;
}

int bmg_broadcast(bmg_t *b, uint64_t epoch)
{
    if (!b || epoch == 0) return BMG_EINVAL;
    if (epoch <= b->epoch) return BMG_OK;
    adopt(b, epoch, b->me, b->variant == BMG_VARIANT_LEAN ? b->radix : 0, -1);
    return finish(b);
}

int bmg_recv(bmg_t *b, uint32_t from, const void *msg, size_t len)
{
    if (!b || !msg || from >= b->n || from == b->me) return BMG_EINVAL;
    const unsigned char *p = msg;
    if (len != BMG_MSG_SIZE || p[0] != BMG_WIRE_MAGIC || p[1] != BMG_WIRE_VERSION || p[2] != BMG_MSG_BCAST ||
        p[3] != (unsigned char)b->variant)
        return BMG_EPROTO;
    uint32_t origin = fck_get_u32(p + 4), radix = fck_get_u32(p + 16);
    uint64_t epoch = fck_get_u64(p + 8);
    if (origin >= b->n || epoch == 0 || (b->variant == BMG_VARIANT_LEAN ? radix < 2 : radix != 0)) return BMG_EPROTO;
    if (epoch > b->epoch) {
        adopt(b, epoch, origin, radix, from);
    } else if (epoch == b->epoch) {
        /* duplicate: the sender holds it, never send it back; a new origin of
         * the same epoch (several processes revoke at once) is forwarded along
         * its own tree too (lean), so each origin's broadcast is complete */
        uint32_t known = b->nsrc;
        struct bmg_src *e = src_of(b, origin, radix);
        if (e) set_add(b, &e->have, &e->nhave, &e->caphave, from);
        if (b->nsrc > known) forward(b);
    }
    /* epoch < b->epoch: stale, superseded by what we already forwarded */
    return finish(b);
}

int bmg_failure(bmg_t *b, uint32_t rank)
{
    if (!b || rank >= b->n) return BMG_EINVAL;
    if (rank == b->me || is_dead(b, rank)) return BMG_OK;
    set_add(b, &b->dead, &b->ndead, &b->capdead, rank);
#ifndef BMG_MUTANT_NO_REFORWARD
    if (b->epoch) forward(b); /* replacement neighbours, if the dead one was on our path */
#endif
    return finish(b);
}

uint32_t bmg_msg_radix(const void *msg, size_t len)
{
    const unsigned char *p = msg;
    if (!msg || len != BMG_MSG_SIZE || p[0] != BMG_WIRE_MAGIC || p[1] != BMG_WIRE_VERSION) return 0;
    return fck_get_u32(p + 16);
}

size_t bmg_footprint(const bmg_t *b) { return b ? b->bytes : 0; }

uint64_t bmg_epoch(const bmg_t *b) { return b ? b->epoch : 0; }

uint32_t bmg_origin(const bmg_t *b) { return b ? b->origin : 0; }

uint64_t bmg_sent(const bmg_t *b) { return b ? b->nsent : 0; }
