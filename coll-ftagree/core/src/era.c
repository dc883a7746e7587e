/*
 * era.c - Early Returning Agreement on a dynamic tree (see era.h and
 * docs/protocols.md for the protocol and the correctness argument).
 *
 * Tree. Instance s runs over the list L_s of ranks not in the failed set
 * agreed by instance s-1 (A, a sorted rank array), numbered by position:
 * pos(rank) = rank - #{a in A : a < rank}; the rank of a position is found
 * by binary search over A. Nothing of size P is tabulated. With a torus
 * order (era_set_torus), positions count in tree order instead of rank order:
 * the same formulas over the folded keys of the ranks (order_key). The tree
 * over positions is heap-ordered (parent < child): binomial (default), binary
 * heap or 4-nomial. Under the local dead set D (sorted rank array):
 *   - the root is the alive position with the smallest index (position 0 as
 *     long as it is alive; after that the smallest surviving one, which is
 *     always a descendant of 0 all of whose ancestors are dead);
 *   - the effective parent of a non-root is its nearest alive ancestor, or
 *     the root if all its ancestors are dead ("orphan");
 *   - the effective children are found by walking down from a position
 *     through dead positions; the root also adopts every orphan.
 * Messages (sparse: their size grows with failures, not with P):
 *   UP              first report of a subtree: AND of flags, intersection
 *                   of acknowledged sets (rank list), contributors (list of
 *                   position intervals), plus what the sender holds (nothing
 *                   / a proposal / the decision).
 *   RESULT_REQUEST  the same report sent again to a new parent after the
 *                   old one died: it asks for the result, re-carries the
 *                   contribution the dead parent may have lost, and tells a
 *                   new root what the sender holds.
 *   DOWN            PROPOSE(ballot, value) (uniform mode) or DECIDE(value).
 *   ACK(ballot)     uniform mode: the sender's subtree holds this proposal.
 * A value is (flag, error, kinds-conflict bit, the failures it adds to A as
 * a rank list).
 * Call kinds (era_start_kind): every report also carries its subtree's
 * combined kind (equal kinds stay, different ones become ERA_KIND_CONFLICT),
 * and a fresh value records whether the contributors' kinds conflicted, so
 * that bit is decided like the flag. Kinds never make a message ignored.
 * Header (32 bytes): magic, version, type, sub, n u32, instance u64,
 * ballot u32, the value's error, the value's conflict bit, the sender's
 * subtree kind (reports), one zero byte, view u64.
 * Every process ignores messages from processes it knows are dead.
 *
 * Mutants for the model checker (test binaries only):
 *   ERA_MUTANT_EARLY_DECIDE  the root proceeds once any child answered.
 *   ERA_MUTANT_NO_BYPASS     a process keeps its dead tree parent as parent.
 *   ERA_MUTANT_NO_ASK        a new root neither waits for the orphans nor
 *                            looks at held values: it decides on its own.
 *   ERA_MUTANT_GC_EARLY      a decision is dropped as soon as the next
 *                            instance starts, so late requests go unanswered.
 *   ERA_MUTANT_LOCAL_ERR     each process computes the error from its own
 *                            acknowledged set instead of the merged one.
 *   ERA_MUTANT_NO_ACK_WAIT   uniform mode: the root decides as soon as it
 *                            proposes, without waiting for the ACK wave.
 *   ERA_MUTANT_FIRST_INTERVAL a report's contributor list is merged only up
 *                            to its first interval (a sparse-encoding bug).
 *   ERA_MUTANT_INTER_SIDES    on an inter-communicator each side reads its own
 *                             group's AND instead of the other group's.
 *   ERA_MUTANT_ONE_HALF       the second group's flags land in the first
 *                             group's half of the 64-bit flag.
 *   ERA_MUTANT_LOCAL_KIND     the conflict bit a process reports is its own
 *                             merged kinds, not the decided value's.
 */
#include "era.h"

#include <stdlib.h>
#include <string.h>

#include "ftslide_corekit.h"

#define ERA_WIRE_MAGIC 0xEAu
#define ERA_WIRE_VERSION 3u /* 3: the header carries the call kinds */
#define ERA_HDR 32u

enum { MSG_UP = 1, MSG_RESULT_REQUEST = 2, MSG_DOWN = 3, MSG_ACK = 4 };
enum { DOWN_PROPOSE = 1, DOWN_DECIDE = 2 };
enum { HELD_NONE = 0, HELD_PROPOSAL = 1, HELD_DECIDED = 2 };
enum { EXP_DOWN, EXP_UP, EXP_ACK };

#define ERA_NREC 3 /* previous decision, current instance, next (buffered) */

/* A sorted set of uint32 (ranks). */
typedef struct uset {
    uint32_t *v;
    uint32_t n, cap;
} uset_t;

/* Sorted map rank -> ballot. */
typedef struct umap {
    uint32_t *k, *v;
    uint32_t n, cap;
} umap_t;

/* Sorted disjoint half-open intervals [v[2i], v[2i+1]) of positions. */
typedef struct ivl {
    uint32_t *v;
    uint32_t n, cap; /* intervals */
} ivl_t;

typedef struct era_val {
    uint64_t flag;
    int err;
    int conflict; /* the contributors started with different kinds */
    uset_t F; /* failures added to A (ranks) */
} era_val_t;

typedef struct era_buf {
    uint32_t from;
    size_t len;
    unsigned char *bytes;
} era_buf_t;

typedef struct era_rec {
    uint64_t id; /* 0: slot free */
    int started, decided;
    uint64_t view;      /* digest of the decision that built L (see view_of) */
    era_buf_t *pend;    /* messages received before the instance started */
    size_t npend, cappend;
    uint32_t n, my;     /* |L|, my position in L */
    uset_t A;           /* ranks not in L (agreed failed before this instance) */
    uset_t AK;          /* their tree-order keys (order_key), ascending */
    era_op_t op;        /* how flags combine (era_start_op) */
    uint64_t agg_flag;  /* combination of the flags merged so far */
    uint8_t agg_kind;   /* combination of the kinds merged so far (kind_combine) */
    int acks_all;       /* agg_acks is still "everything" (nothing merged) */
    uset_t agg_acks;    /* intersection of acknowledged sets */
    uset_t own_acks;
    ivl_t contrib;      /* positions whose contribution is merged */
    uset_t reported;    /* ranks that sent us an UP / RESULT_REQUEST */
    int64_t up_to;      /* rank our last report went to, -1: none */
    int up_sent;
    uint32_t hb;        /* held ballot (0: nothing held); the decision if decided */
    era_val_t held;
    uint32_t rb;        /* best proposal ballot reported by others (root use) */
    era_val_t rv;
    uset_t prop_sent;   /* PROPOSE(prop_b) sent to */
    uint32_t prop_b;
    uset_t dec_sent;    /* DECIDE sent to */
    umap_t ackb;        /* highest ballot each rank ACKed */
    int64_t ack_to;
    uint32_t ack_b;
    uset_t full;        /* decided: A plus held.F, the agreed failed set */
} era_rec_t;

struct era {
    uint32_t n, me;
    era_mode_t mode;
    era_tree_t tree;
    uint32_t dims[ERA_MAX_DIMS], ndims; /* torus order (era_set_torus); 0: rank order */
    era_callbacks_t cb;
    void *ctx;
    int oom;          /* an allocation failed (reported by the next call) */
    size_t bytes;     /* heap held (footprint) */
    uset_t dead;      /* reported crashed */
    uset_t agreed;    /* failed set of the last decision */
    uint64_t last_started, last_decided, gc_floor, nsent, nrejected;
    uint64_t agreed_view; /* digest of the last decision (or of the initial set) */
    era_rec_t rec[ERA_NREC];
    uint32_t *stack, *list; /* scratch (walks) */
    uint32_t capstack, caplist;
    era_val_t tmpv;         /* scratch for parsing */
    ivl_t tmpC;
    uset_t tmpA;
    unsigned char *buf;
    size_t bufsz;
};

/* ---- memory ------------------------------------------------------------------ */

/* Grows *p (elements of `size` bytes) to hold at least `need`; 0 on failure. */
static int grow(era_t *e, void **p, uint32_t *cap, uint32_t need, size_t size)
{
    if (need <= *cap) return 1;
    uint32_t nc = *cap ? *cap : 4;
    while (nc < need) nc = nc > UINT32_MAX / 2 ? need : 2 * nc;
    void *q = realloc(*p, (size_t)nc * size);
    if (!q) {
        e->oom = 1;
        return 0;
    }
    e->bytes += ((size_t)nc - *cap) * size;
    *p = q;
    *cap = nc;
    return 1;
}

static void us_free(era_t *e, uset_t *s)
{
    e->bytes -= (size_t)s->cap * sizeof(uint32_t);
    free(s->v);
    s->v = NULL;
    s->n = s->cap = 0;
}

static int us_has(const uset_t *s, uint32_t x) { return fck_has(s->v, s->n, x); }

/* Inserts x; 1 if it was new. */
static int us_add(era_t *e, uset_t *s, uint32_t x)
{
    uint32_t i;
    if (fck_find(s->v, s->n, x, &i) || !grow(e, (void **)&s->v, &s->cap, s->n + 1, sizeof(uint32_t))) return 0;
    fck_insert_at(s->v, s->n, i, x);
    s->n++;
    return 1;
}

static void us_copy(era_t *e, uset_t *dst, const uset_t *src)
{
    if (dst == src) return;
    if (!grow(e, (void **)&dst->v, &dst->cap, src->n, sizeof(uint32_t))) {
        dst->n = 0;
        return;
    }
    if (src->n) memcpy(dst->v, src->v, (size_t)src->n * sizeof(uint32_t));
    dst->n = src->n;
}

/* dst = dst intersect src (in place). */
static void us_intersect(uset_t *dst, const uset_t *src)
{
    uint32_t i = 0, j = 0, k = 0;
    while (i < dst->n && j < src->n) {
        if (dst->v[i] < src->v[j]) i++;
        else if (dst->v[i] > src->v[j]) j++;
        else {
            dst->v[k++] = dst->v[i];
            i++;
            j++;
        }
    }
    dst->n = k;
}

/* dst = a union b (dst distinct from a and b). */
static void us_union(era_t *e, uset_t *dst, const uset_t *a, const uset_t *b)
{
    dst->n = 0;
    if (!grow(e, (void **)&dst->v, &dst->cap, a->n + b->n, sizeof(uint32_t))) return;
    uint32_t i = 0, j = 0, k = 0;
    while (i < a->n || j < b->n) {
        uint32_t x;
        if (j >= b->n || (i < a->n && a->v[i] < b->v[j])) x = a->v[i++];
        else if (i >= a->n || b->v[j] < a->v[i]) x = b->v[j++];
        else x = a->v[i++], j++;
        dst->v[k++] = x;
    }
    dst->n = k;
}

static uint32_t um_get(const umap_t *m, uint32_t key)
{
    uint32_t i;
    return fck_find(m->k, m->n, key, &i) ? m->v[i] : 0;
}

static void um_set(era_t *e, umap_t *m, uint32_t key, uint32_t val)
{
    uint32_t i;
    if (fck_find(m->k, m->n, key, &i)) {
        m->v[i] = val;
        return;
    }
    uint32_t cap = m->cap;
    if (!grow(e, (void **)&m->k, &cap, m->n + 1, sizeof(uint32_t))) return;
    uint32_t cap2 = m->cap;
    if (!grow(e, (void **)&m->v, &cap2, m->n + 1, sizeof(uint32_t))) return;
    m->cap = cap < cap2 ? cap : cap2;
    fck_insert_at(m->k, m->n, i, key);
    fck_insert_at(m->v, m->n, i, val);
    m->n++;
}

/* Adds [lo, hi) to the interval list, merging overlapping and adjacent ones. */
static void ivl_add(era_t *e, ivl_t *s, uint32_t lo, uint32_t hi)
{
    if (lo >= hi) return;
    uint32_t i = 0;
    while (i < s->n && s->v[2 * i + 1] < lo) i++; /* first interval that may touch */
    uint32_t j = i;
    while (j < s->n && s->v[2 * j] <= hi) { /* all intervals that touch [lo, hi] */
        if (s->v[2 * j] < lo) lo = s->v[2 * j];
        if (s->v[2 * j + 1] > hi) hi = s->v[2 * j + 1];
        j++;
    }
    if (j == i) { /* insert at i */
        if (!grow(e, (void **)&s->v, &s->cap, s->n + 1, 2 * sizeof(uint32_t))) return;
        memmove(s->v + 2 * i + 2, s->v + 2 * i, (size_t)(s->n - i) * 2 * sizeof(uint32_t));
        s->n++;
    } else if (j > i + 1) { /* intervals i..j-1 collapse into i */
        memmove(s->v + 2 * i + 2, s->v + 2 * j, (size_t)(s->n - j) * 2 * sizeof(uint32_t));
        s->n -= j - i - 1;
    }
    s->v[2 * i] = lo;
    s->v[2 * i + 1] = hi;
}

static void val_clear(era_val_t *v)
{
    v->flag = 0;
    v->err = 0;
    v->conflict = 0;
    v->F.n = 0;
}

static void val_copy(era_t *e, era_val_t *dst, const era_val_t *src)
{
    if (dst == src) return;
    dst->flag = src->flag;
    dst->err = src->err;
    dst->conflict = src->conflict;
    us_copy(e, &dst->F, &src->F);
}

/* Digest of a decision (or of the initial failed set, with inst 0). Every
 * message carries the digest of the decision that built the sender's tree,
 * so a message from a process whose previous decision differs from ours is
 * recognised and ignored (in early mode such a process has crashed; in
 * uniform mode it cannot exist). */
static uint64_t view_of(uint64_t inst, uint64_t flag, int err, int conflict, const uset_t *F)
{
    uint64_t h = 0x243f6a8885a308d3ull ^ inst;
    uint64_t in[3] = {flag, (uint64_t)(err != 0) | (uint64_t)(conflict != 0) << 1, F->n};
    for (uint64_t i = 0; i < 3 + (uint64_t)F->n; i++) {
        h ^= i < 3 ? in[i] : F->v[i - 3];
        h *= 0x9e3779b97f4a7c15ull;
        h ^= h >> 29;
        h *= 0xbf58476d1ce4e5b9ull;
        h ^= h >> 32;
    }
    return h;
}

size_t era_max_msg_size(uint32_t n)
{
    /* intervals: at most ceil(n/2); acknowledged ranks and failures: n each */
    return ERA_HDR + 16 + 8 * (((size_t)n + 1) / 2) + 4 * (size_t)n + 12 + 4 * (size_t)n;
}

/* ---- tree over positions ------------------------------------------------------ */

static const char *const tree_names[] = {[ERA_TREE_BINOMIAL] = "binomial", [ERA_TREE_BINARY] = "binary",
                                          [ERA_TREE_KNOMIAL4] = "knomial4"};
#define NTREES (sizeof tree_names / sizeof tree_names[0])

const char *era_tree_name(era_tree_t tree) { return (unsigned)tree < NTREES ? tree_names[tree] : NULL; }

int era_tree_from_name(const char *name, era_tree_t *tree)
{
    for (unsigned t = 0; name && t < NTREES; t++) {
        if (!strcmp(name, tree_names[t])) {
            *tree = (era_tree_t)t;
            return ERA_OK;
        }
    }
    return ERA_EINVAL;
}

/* Radix of the k-nomial shapes: binomial 2, 4-nomial 4 (0: binary heap). */
static uint32_t tree_radix(era_tree_t tree) { return tree == ERA_TREE_KNOMIAL4 ? 4 : tree == ERA_TREE_BINARY ? 0 : 2; }

uint32_t era_tree_parent(era_tree_t tree, uint32_t i)
{
    if (i == 0) return UINT32_MAX;
    uint32_t k = tree_radix(tree);
    return k == 0 ? (i - 1) / 2 : fck_knomial_parent(k, i);
}

uint32_t era_tree_children(era_tree_t tree, uint32_t n, uint32_t i, uint32_t *out, uint32_t cap)
{
    uint32_t cnt = 0, k = tree_radix(tree);
    if (i >= n) return 0;
    if (k == 0) {
        for (uint64_t c = 2 * (uint64_t)i + 1; c <= 2 * (uint64_t)i + 2 && c < n; c++) {
            if (cnt < cap) out[cnt] = (uint32_t)c;
            cnt++;
        }
        return cnt;
    }
    fck_knomial_children(n, k, i, 0, out, cap, &cnt);
    return cnt;
}

/* Tree-order key of a rank: the rank itself, or with a torus order its
 * coordinates (first dimension fastest) each folded so that the upper half
 * of a ring of d runs backwards from d - 1: u = c below h = ceil(d/2),
 * u = d - 1 + h - c above. A step of 2^k in u is a step of 2^k on the ring
 * and u = h is one hop behind 0, so a binomial tree over the keys crosses a
 * ring of d in d/2 hops where rank order takes d - 1. The fold is its own
 * inverse, hence so is order_key. */
static uint32_t order_key(const era_t *e, uint32_t rank)
{
    uint32_t key = 0, stride = 1;
    if (!e->ndims) return rank;
    for (uint32_t i = 0; i < e->ndims; i++) {
        uint32_t d = e->dims[i], c = rank % d, h = (d + 1) / 2;
        rank /= d;
        key += (c < h ? c : d - 1 + h - c) * stride;
        stride *= d;
    }
    return key;
}

/* Mixed into every view: a process that numbers positions in another order
 * builds another tree, so its messages are ignored like those of another L
 * (0 for rank order, so rank-order views are unchanged). */
static uint64_t order_digest(const era_t *e)
{
    uint64_t h = 0;
    for (uint32_t i = 0; i < e->ndims; i++) h = (h ^ e->dims[i] ^ ((uint64_t)i << 32)) * 0x100000001b3ull + 0x9e37;
    return h;
}

/* Rank of position i in L (ranks not in A), in key space:
 * key = i + #{j : AK[j] - j <= i}. */
static uint32_t rank_of(const era_t *e, const era_rec_t *r, uint32_t i)
{
    uint32_t lo = 0, hi = r->AK.n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (r->AK.v[mid] - mid <= i) lo = mid + 1;
        else hi = mid;
    }
    return order_key(e, i + lo);
}

/* Position of a rank in L (the rank must not be in A). */
static uint32_t pos_of(const era_t *e, const era_rec_t *r, uint32_t rank)
{
    uint32_t k = order_key(e, rank);
    return k - fck_lower(r->AK.v, r->AK.n, k);
}

#ifndef ERA_MUTANT_NO_BYPASS
static int alive_pos(const era_t *e, const era_rec_t *r, uint32_t i) { return !us_has(&e->dead, rank_of(e, r, i)); }
#endif

/* Smallest alive position: the smallest key whose rank is in neither A nor
 * the dead set (always <= my position: we are alive). At most |A| + |dead|
 * keys are skipped. */
static uint32_t min_alive(const era_t *e, const era_rec_t *r)
{
    for (uint32_t k = 0; k < e->n; k++) {
        uint32_t rk = order_key(e, k);
        if (!us_has(&r->A, rk) && !us_has(&e->dead, rk)) return pos_of(e, r, rk);
    }
    return r->my;
}

/* Effective parent of a non-root, as a rank. */
static uint32_t eff_parent(const era_t *e, const era_rec_t *r, uint32_t root_pos)
{
#ifdef ERA_MUTANT_NO_BYPASS
    (void)root_pos;
    if (r->my > 0) return rank_of(e, r, era_tree_parent(e->tree, r->my));
    return rank_of(e, r, 0);
#else
    uint32_t j = r->my;
    while (j > 0) {
        j = era_tree_parent(e->tree, j);
        if (alive_pos(e, r, j)) return rank_of(e, r, j);
    }
    return rank_of(e, r, root_pos); /* orphan: all ancestors dead, attach to the root */
#endif
}

static void push(era_t *e, uint32_t *sp, uint32_t v)
{
    if (!grow(e, (void **)&e->stack, &e->capstack, *sp + 1, sizeof(uint32_t))) return;
    e->stack[(*sp)++] = v;
}

/* Pushes the children of position c, largest first (so the smallest pops first). */
static void push_children(era_t *e, const era_rec_t *r, uint32_t c, uint32_t *sp)
{
    uint32_t ch[ERA_MAX_CHILDREN];
    uint32_t k = era_tree_children(e->tree, r->n, c, ch, ERA_MAX_CHILDREN);
    for (uint32_t i = k < ERA_MAX_CHILDREN ? k : ERA_MAX_CHILDREN; i > 0; i--) push(e, sp, ch[i - 1]);
}

/* Walk down from position `from` (exclusive). A vertex stops the walk if it
 * is "covered" (EXP_UP: it reported to us; EXP_ACK: it ACKed ballot b) or
 * alive (then it is written to out: a target / a child we wait for); dead,
 * uncovered vertices are looked through. `skip` is never visited. */
static void walk(era_t *e, era_rec_t *r, uint32_t from, int kind, uint32_t b, uint32_t skip, uint32_t *cnt,
                 uint32_t *ncov)
{
    uint32_t sp = 0;
    push_children(e, r, from, &sp);
    while (sp > 0) {
        uint32_t c = e->stack[--sp];
        if (c == skip) continue;
        uint32_t rank = rank_of(e, r, c);
        if (kind == EXP_UP && us_has(&r->reported, rank)) {
            (*ncov)++;
            continue;
        }
        if (kind == EXP_ACK && um_get(&r->ackb, rank) >= b) {
            (*ncov)++;
            continue;
        }
        if (!us_has(&e->dead, rank)) {
            if (grow(e, (void **)&e->list, &e->caplist, *cnt + 1, sizeof(uint32_t))) e->list[(*cnt)++] = rank;
            continue;
        }
        push_children(e, r, c, &sp);
    }
}

/* Effective children (into e->list) that are not covered; returns how many.
 * A root that is not position 0 also adopts the orphans: the frontier below
 * position 0, minus its own position. */
static uint32_t frontier(era_t *e, era_rec_t *r, int root, int kind, uint32_t b, uint32_t *ncov)
{
    uint32_t cnt = 0;
    *ncov = 0;
    walk(e, r, r->my, kind, b, UINT32_MAX, &cnt, ncov);
#ifdef ERA_MUTANT_NO_ASK
    if (kind == EXP_UP) return cnt;
#endif
    if (root && r->my != 0) walk(e, r, 0, kind, b, r->my, &cnt, ncov);
    return cnt;
}

/* ---- instance records ------------------------------------------------------ */

static void rec_clear(era_t *e, era_rec_t *r, uint64_t id)
{
    (void)e;
    r->id = id;
    r->started = r->decided = 0;
    r->view = 0;
    for (size_t i = 0; i < r->npend; i++) free(r->pend[i].bytes);
    r->npend = 0;
    r->n = r->my = 0;
    r->A.n = 0;
    r->AK.n = 0;
    r->agg_flag = ~(uint64_t)0;
    r->agg_kind = 0;
    r->acks_all = 1;
    r->agg_acks.n = 0;
    r->own_acks.n = 0;
    r->contrib.n = 0;
    r->reported.n = 0;
    r->up_to = -1;
    r->up_sent = 0;
    r->hb = 0;
    val_clear(&r->held);
    r->rb = 0;
    val_clear(&r->rv);
    r->prop_sent.n = 0;
    r->prop_b = 0;
    r->dec_sent.n = 0;
    r->ackb.n = 0;
    r->ack_to = -1;
    r->ack_b = 0;
    r->full.n = 0;
}

static void rec_free_mem(era_t *e, era_rec_t *r)
{
    for (size_t i = 0; i < r->npend; i++) free(r->pend[i].bytes);
    free(r->pend);
    us_free(e, &r->A);
    us_free(e, &r->AK);
    us_free(e, &r->agg_acks);
    us_free(e, &r->own_acks);
    free(r->contrib.v);
    us_free(e, &r->reported);
    us_free(e, &r->held.F);
    us_free(e, &r->rv.F);
    us_free(e, &r->prop_sent);
    us_free(e, &r->dec_sent);
    free(r->ackb.k);
    free(r->ackb.v);
    us_free(e, &r->full);
}

static era_rec_t *find_rec(era_t *e, uint64_t id)
{
    for (int i = 0; i < ERA_NREC; i++)
        if (e->rec[i].id == id && id != 0) return &e->rec[i];
    return NULL;
}

static era_rec_t *alloc_rec(era_t *e, uint64_t id)
{
    for (int i = 0; i < ERA_NREC; i++)
        if (e->rec[i].id == 0) {
            rec_clear(e, &e->rec[i], id);
            return &e->rec[i];
        }
    return NULL;
}

/* Garbage-collect every instance <= upto. */
static void gc(era_t *e, uint64_t upto)
{
    for (int i = 0; i < ERA_NREC; i++)
        if (e->rec[i].id != 0 && e->rec[i].id <= upto) rec_clear(e, &e->rec[i], 0);
    if (upto > e->gc_floor) e->gc_floor = upto;
}

/* ---- messages -------------------------------------------------------------- */

static unsigned char *msgbuf(era_t *e, size_t len)
{
    if (len > e->bufsz) {
        unsigned char *nb = realloc(e->buf, len);
        if (!nb) {
            e->oom = 1;
            return NULL;
        }
        e->bytes += len - e->bufsz;
        e->buf = nb;
        e->bufsz = len;
    }
    return e->buf;
}

/* `v`: the value the message carries (its error and conflict bit travel
 * here), NULL for none. */
static unsigned char *hdr(era_t *e, era_rec_t *r, size_t len, int type, int sub, uint32_t ballot, const era_val_t *v)
{
    unsigned char *p = msgbuf(e, len);
    if (!p) return NULL;
    memset(p, 0, ERA_HDR);
    p[0] = ERA_WIRE_MAGIC;
    p[1] = ERA_WIRE_VERSION;
    p[2] = (unsigned char)type;
    p[3] = (unsigned char)sub;
    fck_put_u32(p + 4, e->n);
    fck_put_u64(p + 8, r->id);
    fck_put_u32(p + 16, ballot);
    p[20] = (unsigned char)(v && v->err ? 1 : 0);
    p[21] = (unsigned char)(v && v->conflict ? 1 : 0);
    p[22] = r->agg_kind; /* read from reports only */
    fck_put_u64(p + 24, r->view);
    return p;
}

static void emit(era_t *e, uint32_t dest, size_t len)
{
    e->nsent++;
    if (e->cb.send) e->cb.send(e->ctx, dest, e->buf, len);
}

static size_t put_list(unsigned char *p, const uset_t *s)
{
    for (uint32_t i = 0; i < s->n; i++) fck_put_u32(p + 4 * i, s->v[i]);
    return 4 * (size_t)s->n;
}

/* A value on the wire: flag u64, count u32, the failed ranks. Its size. */
static size_t put_value(unsigned char *p, const era_val_t *v)
{
    fck_put_u64(p, v->flag);
    fck_put_u32(p + 8, v->F.n);
    return 12 + put_list(p + 12, &v->F);
}

/* UP / RESULT_REQUEST: our subtree's aggregate plus what we hold. */
static void send_report(era_t *e, era_rec_t *r, uint32_t dest)
{
    int kind = r->decided ? HELD_DECIDED : (r->hb ? HELD_PROPOSAL : HELD_NONE);
    int type = r->up_sent ? MSG_RESULT_REQUEST : MSG_UP;
    uint32_t nack = r->acks_all ? 0 : r->agg_acks.n;
    size_t len = ERA_HDR + 16 + 8 * (size_t)r->contrib.n + 4 * (size_t)nack + (kind ? 12 + 4 * (size_t)r->held.F.n : 0);
    unsigned char *p = hdr(e, r, len, type, kind, kind ? r->hb : 0, kind ? &r->held : NULL);
    if (!p) return;
    size_t off = ERA_HDR;
    fck_put_u64(p + off, r->agg_flag);
    fck_put_u32(p + off + 8, r->contrib.n);
    fck_put_u32(p + off + 12, nack);
    off += 16;
    for (uint32_t i = 0; i < 2 * r->contrib.n; i++, off += 4) fck_put_u32(p + off, r->contrib.v[i]);
    if (nack) off += put_list(p + off, &r->agg_acks);
    if (kind) off += put_value(p + off, &r->held);
    r->up_sent = 1;
    emit(e, dest, off);
}

static void send_down(era_t *e, era_rec_t *r, uint32_t dest, int phase)
{
    size_t len = ERA_HDR + 12 + 4 * (size_t)r->held.F.n;
    unsigned char *p = hdr(e, r, len, MSG_DOWN, phase, r->hb, &r->held);
    if (!p) return;
    put_value(p + ERA_HDR, &r->held);
    emit(e, dest, len);
}

static void send_ack(era_t *e, era_rec_t *r, uint32_t dest, uint32_t ballot)
{
    if (!hdr(e, r, ERA_HDR, MSG_ACK, 0, ballot, NULL)) return;
    emit(e, dest, ERA_HDR);
}

/* ---- decisions ------------------------------------------------------------- */

/* Does some rank of A or F miss from the acknowledged set `acks`? */
static int unacked(const uset_t *A, const uset_t *F, const uset_t *acks)
{
    for (uint32_t i = 0; i < A->n; i++)
        if (!us_has(acks, A->v[i])) return 1;
    for (uint32_t i = 0; i < F->n; i++)
        if (!us_has(acks, F->v[i])) return 1;
    return 0;
}

/* The value computed from the merged contributions: every position that did
 * not contribute is failed (the previously agreed failures are in A, not in
 * L); the error is raised iff some failed rank is missing from the
 * intersection of the contributors' acknowledged sets. */
static void fresh_value(era_t *e, era_rec_t *r, era_val_t *v)
{
    v->flag = r->agg_flag;
    v->F.n = 0;
    uint32_t at = 0;
    for (uint32_t i = 0; i <= r->contrib.n; i++) {
        uint32_t lo = i < r->contrib.n ? r->contrib.v[2 * i] : r->n;
        if (lo > r->n) lo = r->n;
        for (uint32_t q = at; q < lo; q++) us_add(e, &v->F, rank_of(e, r, q));
        if (i < r->contrib.n) at = r->contrib.v[2 * i + 1];
    }
    v->err = r->acks_all ? 0 : unacked(&r->A, &v->F, &r->agg_acks);
    v->conflict = r->agg_kind == ERA_KIND_CONFLICT;
}

/* Whether the callers' kinds conflicted, as a decided instance reports it
 * (the decided value's bit; the mutant reports its own merged kinds). */
static int decided_conflict(const era_rec_t *r)
{
#ifdef ERA_MUTANT_LOCAL_KIND
    return r->agg_kind == ERA_KIND_CONFLICT;
#else
    return r->held.conflict;
#endif
}

static void decide_now(era_t *e, era_rec_t *r, uint32_t ballot, const era_val_t *v)
{
    val_copy(e, &r->held, v);
    r->hb = ballot;
    r->decided = 1;
    us_union(e, &r->full, &r->A, &r->held.F);
#ifdef ERA_MUTANT_LOCAL_ERR
    r->held.err = unacked(&r->A, &r->held.F, &r->own_acks);
#endif
    if (r->id > e->last_decided) e->last_decided = r->id;
    us_copy(e, &e->agreed, &r->full);
    e->agreed_view = view_of(r->id, r->held.flag, r->held.err, r->held.conflict, &r->full);
    /* GC rule: once instance s decides here, instance s-1 can never be asked
     * for again by a live process (see docs/protocols.md). */
    if (r->id > 1) gc(e, r->id - 1);
    if (e->cb.decide) {
        era_result_t res;
        res.inst = r->id;
        res.flag = r->held.flag;
        res.proc_failed = r->held.err;
        res.kind_conflict = decided_conflict(r);
        res.nfailed = r->full.n;
        res.failed = r->full.v;
        e->cb.decide(e->ctx, &res);
    }
}

static void propose(era_t *e, era_rec_t *r, uint32_t ballot, const era_val_t *v)
{
    val_copy(e, &r->held, v);
    r->hb = ballot;
    if (r->prop_b != ballot) {
        r->prop_sent.n = 0;
        r->prop_b = ballot;
    }
}

static void handle(era_t *e, era_rec_t *r, uint32_t from, const unsigned char *p);

/* ---- the step: everything an instance should do under current knowledge -- */

static void send_downs(era_t *e, era_rec_t *r, uset_t *sent, uint32_t cnt, int phase)
{
    for (uint32_t i = 0; i < cnt; i++) {
        uint32_t t = e->list[i];
        if (!us_add(e, sent, t)) continue;
        send_down(e, r, t, phase);
    }
}

static void step(era_t *e, era_rec_t *r)
{
    for (int round = 0; round < 3; round++) {
        if (r->id == 0 || !r->started) return;
        uint32_t rootpos = min_alive(e, r), cnt, ncov;
        int root = rootpos == r->my;
        uint32_t ep = root ? UINT32_MAX : eff_parent(e, r, rootpos);

        if (r->decided) {
            cnt = frontier(e, r, root, EXP_DOWN, 0, &ncov);
            send_downs(e, r, &r->dec_sent, cnt, DOWN_DECIDE);
            /* A new parent (or new root) learns the decision from us. */
            if (!root && r->up_to != (int64_t)ep) {
                send_report(e, r, ep);
                r->up_to = ep;
            }
            return;
        }

        cnt = frontier(e, r, root, EXP_UP, 0, &ncov);
        int up_complete = cnt == 0;
#ifdef ERA_MUTANT_EARLY_DECIDE
        if (root && ncov > 0) up_complete = 1;
#endif
        if (root) {
            uint32_t myb = r->my + 1;
            if (e->mode == ERA_MODE_EARLY) {
                if (!up_complete) return;
                fresh_value(e, r, &r->held);
                decide_now(e, r, myb, &r->held);
                continue; /* now forward the decision */
            }
            if (r->hb < myb) {
#ifdef ERA_MUTANT_NO_ASK
                if (up_complete) {
                    fresh_value(e, r, &r->held);
                    propose(e, r, myb, &r->held);
                }
#else
                if (r->hb > 0) {
                    propose(e, r, myb, &r->held); /* re-propose what we hold */
                } else if (up_complete) {
                    if (r->rb > 0) {
                        propose(e, r, myb, &r->rv);
                    } else {
                        fresh_value(e, r, &r->held);
                        propose(e, r, myb, &r->held);
                    }
                }
#endif
            }
            if (r->hb != myb) return;
            cnt = frontier(e, r, root, EXP_DOWN, 0, &ncov);
            send_downs(e, r, &r->prop_sent, cnt, DOWN_PROPOSE);
            cnt = frontier(e, r, root, EXP_ACK, myb, &ncov);
#ifdef ERA_MUTANT_NO_ACK_WAIT
            cnt = 0;
#endif
            if (cnt != 0) return;
            decide_now(e, r, myb, &r->held);
            continue;
        }

        /* non-root */
        if (up_complete && r->up_to != (int64_t)ep) {
            send_report(e, r, ep);
            r->up_to = ep;
        }
        if (e->mode == ERA_MODE_UNIFORM && r->hb > 0) {
            cnt = frontier(e, r, root, EXP_DOWN, 0, &ncov);
            send_downs(e, r, &r->prop_sent, cnt, DOWN_PROPOSE);
            if (r->up_to == (int64_t)ep) {
                cnt = frontier(e, r, root, EXP_ACK, r->hb, &ncov);
                if (cnt == 0 && (r->ack_to != (int64_t)ep || r->ack_b != r->hb)) {
                    send_ack(e, r, ep, r->hb);
                    r->ack_to = ep;
                    r->ack_b = r->hb;
                }
            }
        }
        return;
    }
}

static void step_all(era_t *e)
{
    uint64_t ids[ERA_NREC];
    int k = 0;
    for (int i = 0; i < ERA_NREC; i++)
        if (e->rec[i].id) ids[k++] = e->rec[i].id;
    for (int i = 1; i < k; i++) /* ascending */
        for (int j = i; j > 0 && ids[j - 1] > ids[j]; j--) {
            uint64_t t = ids[j];
            ids[j] = ids[j - 1];
            ids[j - 1] = t;
        }
    for (int i = 0; i < k; i++) {
        era_rec_t *r = find_rec(e, ids[i]);
        if (r) step(e, r);
    }
}

/* ---- public API -------------------------------------------------------------- */

era_t *era_create(uint32_t n, uint32_t me, era_mode_t mode, era_tree_t tree, const uint32_t *initial_failed,
                  uint32_t ninitial, const era_callbacks_t *cb, void *ctx)
{
    if (n == 0 || me >= n || (mode != ERA_MODE_UNIFORM && mode != ERA_MODE_EARLY) ||
        !era_tree_name(tree) || (ninitial && !initial_failed) || ninitial >= n)
        return NULL;
    for (uint32_t i = 0; i < ninitial; i++)
        if (initial_failed[i] >= n || initial_failed[i] == me || (i && initial_failed[i] <= initial_failed[i - 1]))
            return NULL;
    era_t *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    e->bytes = sizeof *e;
    e->n = n;
    e->me = me;
    e->mode = mode;
    e->tree = tree;
    if (cb) e->cb = *cb;
    e->ctx = ctx;
    if (ninitial) {
        if (grow(e, (void **)&e->agreed.v, &e->agreed.cap, ninitial, sizeof(uint32_t))) {
            memcpy(e->agreed.v, initial_failed, (size_t)ninitial * sizeof(uint32_t));
            e->agreed.n = ninitial;
        }
    }
    msgbuf(e, 64);
    if (e->oom) {
        era_destroy(e);
        return NULL;
    }
    e->agreed_view = view_of(0, 0, 0, 0, &e->agreed);
    return e;
}

int era_set_torus(era_t *e, const uint32_t *dims, uint32_t ndims)
{
    uint64_t prod = 1;
    if (!e || ndims > ERA_MAX_DIMS || (ndims && !dims) || e->last_started) return ERA_EINVAL;
    for (uint32_t i = 0; i < ndims; i++) {
        prod *= dims[i];
        if (!dims[i] || prod > e->n) return ERA_EINVAL;
    }
    if (ndims && prod != e->n) return ERA_EINVAL;
    if (ndims) memcpy(e->dims, dims, (size_t)ndims * sizeof *dims);
    e->ndims = ndims;
    return ERA_OK;
}

void era_destroy(era_t *e)
{
    if (!e) return;
    for (int i = 0; i < ERA_NREC; i++) rec_free_mem(e, &e->rec[i]);
    free(e->dead.v);
    free(e->agreed.v);
    free(e->tmpv.F.v);
    free(e->tmpC.v);
    free(e->tmpA.v);
    free(e->stack);
    free(e->list);
    free(e->buf);
    free(e);
}

static int finish(era_t *e)
{
    if (!e->oom) return ERA_OK;
    e->oom = 0;
    return ERA_ENOMEM;
}

/* The operations are idempotent as well as commutative and associative: a
 * contribution may be merged twice (a RESULT_REQUEST re-carries what a dead
 * parent may have lost) without changing the result. */
static uint64_t combine(era_op_t op, uint64_t a, uint64_t b)
{
    switch (op) {
    case ERA_OP_BOR: return a | b;
    case ERA_OP_MAX: return a > b ? a : b;
    case ERA_OP_MIN: return a < b ? a : b;
    case ERA_OP_BAND:
    default: return a & b;
    }
}

/* Kinds form a flat order with ERA_KIND_CONFLICT on top: equal kinds stay,
 * any two different ones (or anything with the top) give the top. Idempotent,
 * commutative and associative like the flag's operations, so a report merged
 * twice, or along another path, gives the same combination. */
static uint8_t kind_combine(uint8_t a, uint8_t b) { return a == b ? a : (uint8_t)ERA_KIND_CONFLICT; }

int era_start(era_t *e, uint64_t flag, const uint32_t *acked, uint32_t nacked, uint64_t *inst)
{
    return era_start_kind(e, ERA_OP_BAND, 0, flag, acked, nacked, inst);
}

int era_start_op(era_t *e, era_op_t op, uint64_t flag, const uint32_t *acked, uint32_t nacked, uint64_t *inst)
{
    return era_start_kind(e, op, 0, flag, acked, nacked, inst);
}

uint64_t era_flag_of_int(era_op_t op, era_side_t side, int32_t value)
{
    uint32_t v = (uint32_t)value;
    switch (op) {
    case ERA_OP_BAND:
#ifdef ERA_MUTANT_ONE_HALF
        (void)side;
        return 0xffffffff00000000ull | v;
#else
        return ERA_SIDE_SECOND == side ? ((uint64_t)v << 32) | 0xffffffffull : 0xffffffff00000000ull | v;
#endif
    case ERA_OP_MAX:
    case ERA_OP_MIN:
        return (uint64_t)(v ^ 0x80000000u);
    default:
        return (uint64_t)v;
    }
}

int32_t era_int_of_flag(era_op_t op, era_side_t side, uint64_t flag)
{
#ifdef ERA_MUTANT_INTER_SIDES
    uint32_t v = (uint32_t)(ERA_OP_BAND == op && ERA_SIDE_SECOND == side ? flag >> 32 : flag & 0xffffffffu);
#else
    uint32_t v = (uint32_t)(ERA_OP_BAND == op && ERA_SIDE_FIRST == side ? flag >> 32 : flag & 0xffffffffu);
#endif
    if (ERA_OP_MAX == op || ERA_OP_MIN == op) v ^= 0x80000000u;
    return (int32_t)v;
}

int era_start_kind(era_t *e, era_op_t op, uint32_t kind, uint64_t flag, const uint32_t *acked, uint32_t nacked,
                   uint64_t *inst)
{
    if (!e || (nacked && !acked) || op < ERA_OP_BAND || op > ERA_OP_MIN || kind > ERA_KIND_MAX) return ERA_EINVAL;
    for (uint32_t i = 0; i < nacked; i++)
        if (acked[i] >= e->n) return ERA_EINVAL;
    if (e->last_started != e->last_decided) return ERA_EBUSY;
    if (us_has(&e->agreed, e->me)) return ERA_EPROTO; /* agreed dead: cannot take part */
    uint64_t id = e->last_started + 1;
    era_rec_t *r = find_rec(e, id);
    if (!r) r = alloc_rec(e, id);
    if (!r) return ERA_ENOMEM;
    us_copy(e, &r->A, &e->agreed);
    r->AK.n = 0;
    for (uint32_t i = 0; i < r->A.n; i++) us_add(e, &r->AK, order_key(e, r->A.v[i]));
    r->n = e->n - r->A.n;
    r->my = pos_of(e, r, e->me);
    r->op = op;
    r->agg_flag = flag; /* nothing was merged before the start (early messages wait in pend) */
    r->agg_kind = (uint8_t)kind;
    r->own_acks.n = 0;
    for (uint32_t i = 0; i < nacked; i++) us_add(e, &r->own_acks, acked[i]);
    us_copy(e, &r->agg_acks, &r->own_acks);
    r->acks_all = 0;
    ivl_add(e, &r->contrib, r->my, r->my + 1);
    r->view = e->agreed_view ^ order_digest(e);
    r->started = 1;
    e->last_started = id;
    /* Messages that arrived before we started: apply those from processes
     * that share our view and are not known dead, in arrival order. */
    for (size_t i = 0; i < r->npend; i++) {
        if (!us_has(&e->dead, r->pend[i].from)) handle(e, r, r->pend[i].from, r->pend[i].bytes);
        free(r->pend[i].bytes);
    }
    r->npend = 0;
    if (inst) *inst = id;
#ifdef ERA_MUTANT_GC_EARLY
    gc(e, id - 1);
#endif
    step(e, r);
    return finish(e);
}

/* Checks a strictly ascending list of `cnt` u32 below `lim` at p. */
static int check_list(const unsigned char *p, uint32_t cnt, uint32_t lim)
{
    for (uint32_t i = 0; i < cnt; i++) {
        uint32_t x = fck_get_u32(p + 4 * (size_t)i);
        if (x >= lim || (i && x <= fck_get_u32(p + 4 * (size_t)(i - 1)))) return 0;
    }
    return 1;
}

/* Checks a value (flag u64, count u32, that many failed ranks) at p + *off
 * and moves *off past it. */
static int check_value(const unsigned char *p, size_t len, size_t *off, uint32_t n)
{
    if (len < *off + 12) return 0;
    uint32_t nf = fck_get_u32(p + *off + 8);
    *off += 12;
    if (nf > n || len < *off + 4 * (size_t)nf || !check_list(p + *off, nf, n)) return 0;
    *off += 4 * (size_t)nf;
    return 1;
}

/* Checks a message's framing and content (lists sorted, in range); fills
 * the header fields. */
static int parse_header(const era_t *e, const unsigned char *p, size_t len, int *type, int *sub, uint64_t *id)
{
    uint32_t n = e->n;
    if (len < ERA_HDR || p[0] != ERA_WIRE_MAGIC || p[1] != ERA_WIRE_VERSION || fck_get_u32(p + 4) != n)
        return ERA_EPROTO;
    *type = p[2];
    *sub = p[3];
    *id = fck_get_u64(p + 8);
    if (*id == 0 || p[20] > 1 || p[21] > 1) return ERA_EPROTO;
    size_t off = ERA_HDR;
    switch (*type) {
    case MSG_UP:
    case MSG_RESULT_REQUEST: {
        if (*sub != HELD_NONE && *sub != HELD_PROPOSAL && *sub != HELD_DECIDED) return ERA_EPROTO;
        if (len < off + 16) return ERA_EPROTO;
        uint32_t ni = fck_get_u32(p + off + 8), na = fck_get_u32(p + off + 12);
        if (ni == 0 || ni > n || na > n) return ERA_EPROTO;
        off += 16;
        if (len < off + 8 * (size_t)ni + 4 * (size_t)na) return ERA_EPROTO;
        uint32_t prev = 0;
        for (uint32_t i = 0; i < ni; i++, off += 8) {
            uint32_t lo = fck_get_u32(p + off), hi = fck_get_u32(p + off + 4);
            if (lo >= hi || hi > n || (i && lo <= prev)) return ERA_EPROTO;
            prev = hi;
        }
        if (!check_list(p + off, na, n)) return ERA_EPROTO;
        off += 4 * (size_t)na;
        if (*sub && !check_value(p, len, &off, n)) return ERA_EPROTO;
        break;
    }
    case MSG_DOWN:
        if (*sub != DOWN_PROPOSE && *sub != DOWN_DECIDE) return ERA_EPROTO;
        if (!check_value(p, len, &off, n)) return ERA_EPROTO;
        break;
    case MSG_ACK:
        break;
    default:
        return ERA_EPROTO;
    }
    if (len != off) return ERA_EPROTO;
    if (e->mode == ERA_MODE_EARLY &&
        (*type == MSG_ACK || (*type == MSG_DOWN && *sub == DOWN_PROPOSE) ||
         ((*type == MSG_UP || *type == MSG_RESULT_REQUEST) && *sub == HELD_PROPOSAL)))
        return ERA_EPROTO;
    return ERA_OK;
}

static void get_list(era_t *e, const unsigned char *p, uint32_t cnt, uset_t *out)
{
    out->n = 0;
    if (!grow(e, (void **)&out->v, &out->cap, cnt, sizeof(uint32_t))) return;
    for (uint32_t i = 0; i < cnt; i++) out->v[i] = fck_get_u32(p + 4 * (size_t)i);
    out->n = cnt;
}

/* Reads a value written by put_value (its error travels in the header). */
static void get_value(era_t *e, const unsigned char *p, era_val_t *v)
{
    v->flag = fck_get_u64(p);
    get_list(e, p + 12, fck_get_u32(p + 8), &v->F);
}

/* Applies a well-formed message for started instance r. */
static void handle(era_t *e, era_rec_t *r, uint32_t from, const unsigned char *p)
{
    int type = p[2], sub = p[3];
    uint32_t ballot = fck_get_u32(p + 16);
    era_val_t *v = &e->tmpv;
    v->flag = 0;
    v->err = p[20] != 0;
    v->conflict = p[21] != 0;
    v->F.n = 0;
    if (fck_get_u64(p + 24) != r->view) {
        e->nrejected++; /* sender built a different tree: ignore it */
        return;
    }
    switch (type) {
    case MSG_UP:
    case MSG_RESULT_REQUEST: {
        size_t off = ERA_HDR;
        uint64_t f = fck_get_u64(p + off);
        uint32_t ni = fck_get_u32(p + off + 8), na = fck_get_u32(p + off + 12);
        off += 16;
        /* Same view, so the same L: intervals must lie inside it. */
        if (fck_get_u32(p + off + 8 * (size_t)(ni - 1) + 4) > r->n) {
            e->nrejected++;
            return;
        }
        r->agg_flag = combine(r->op, r->agg_flag, f);
        r->agg_kind = kind_combine(r->agg_kind, p[22]); /* another kind: a conflict, never a reason to drop it */
        for (uint32_t i = 0; i < ni; i++, off += 8) {
#ifdef ERA_MUTANT_FIRST_INTERVAL
            if (i > 0) continue;
#endif
            ivl_add(e, &r->contrib, fck_get_u32(p + off), fck_get_u32(p + off + 4));
        }
        get_list(e, p + off, na, &e->tmpA);
        off += 4 * (size_t)na;
        if (r->acks_all) {
            us_copy(e, &r->agg_acks, &e->tmpA);
            r->acks_all = 0;
        } else {
            us_intersect(&r->agg_acks, &e->tmpA);
        }
        us_add(e, &r->reported, from);
        if (sub) get_value(e, p + off, v);
        if (sub == HELD_DECIDED) {
            if (!r->decided) decide_now(e, r, ballot, v);
        } else if (sub == HELD_PROPOSAL) {
            if (ballot > r->rb) {
                r->rb = ballot;
                val_copy(e, &r->rv, v);
            }
        }
        if (r->decided) {
            /* Late request: answer from the kept decision. */
            if (sub != HELD_DECIDED && us_add(e, &r->dec_sent, from)) send_down(e, r, from, DOWN_DECIDE);
        } else if (e->mode == ERA_MODE_UNIFORM && r->hb > 0 && r->prop_b == r->hb && us_add(e, &r->prop_sent, from)) {
            send_down(e, r, from, DOWN_PROPOSE);
        }
        break;
    }
    case MSG_DOWN:
        get_value(e, p + ERA_HDR, v);
        if (sub == DOWN_DECIDE) {
            if (!r->decided) decide_now(e, r, ballot, v);
        } else if (r->decided) {
            if (us_add(e, &r->dec_sent, from)) send_down(e, r, from, DOWN_DECIDE);
        } else if (ballot > r->hb) {
            propose(e, r, ballot, v);
        }
        break;
    case MSG_ACK:
        if (ballot > um_get(&r->ackb, from)) um_set(e, &r->ackb, from, ballot);
        break;
    }
}

int era_recv(era_t *e, uint32_t from, const void *msg, size_t len)
{
    if (!e || !msg || from >= e->n || from == e->me) return ERA_EINVAL;
    const unsigned char *p = msg;
    int type, sub;
    uint64_t id;
    int rc = parse_header(e, p, len, &type, &sub, &id);
    if (rc != ERA_OK) return rc;
    if (us_has(&e->dead, from)) return ERA_OK; /* fencing: never listen to the known dead */

    int holds_nothing = (type == MSG_UP || type == MSG_RESULT_REQUEST) && sub == HELD_NONE;
    era_rec_t *r = find_rec(e, id);
    if (!r) {
        if (id <= e->gc_floor) return ERA_OK; /* late message for a collected instance */
        /* Only the next instance can be ahead of us, and only with reports
         * holding nothing: nothing can be proposed or decided without us. */
        if (id != e->last_started + 1 || !holds_nothing) return ERA_EPROTO;
        r = alloc_rec(e, id);
        if (!r) return ERA_EPROTO;
    }
    if (!r->started) {
        if (!holds_nothing) return ERA_EPROTO;
        /* Keep it as is: whether it belongs to our tree is known only when
         * we start (its view must match the decision we will have taken). */
        if (r->npend == r->cappend) {
            size_t nc = r->cappend ? 2 * r->cappend : 4;
            era_buf_t *nb = realloc(r->pend, nc * sizeof *nb);
            if (!nb) return ERA_ENOMEM;
            r->pend = nb;
            r->cappend = nc;
        }
        unsigned char *copy = malloc(len);
        if (!copy) return ERA_ENOMEM;
        memcpy(copy, p, len);
        r->pend[r->npend].from = from;
        r->pend[r->npend].len = len;
        r->pend[r->npend].bytes = copy;
        r->npend++;
        return ERA_OK;
    }
    handle(e, r, from, p);
    step(e, r);
    return finish(e);
}

int era_failure(era_t *e, uint32_t rank)
{
    if (!e || rank >= e->n || rank == e->me) return ERA_EINVAL;
    if (!us_add(e, &e->dead, rank)) return finish(e);
    step_all(e);
    return finish(e);
}

int era_progress(era_t *e)
{
    if (!e) return ERA_EINVAL;
    step_all(e);
    return e->last_started != 0 && e->last_decided == e->last_started;
}

int era_test(const era_t *e, uint64_t inst, uint64_t *flag, int *proc_failed, const uint32_t **failed,
             uint32_t *nfailed, int *kind_conflict)
{
    if (!e || inst == 0) return ERA_EINVAL;
    for (int i = 0; i < ERA_NREC; i++) {
        const era_rec_t *r = &e->rec[i];
        if (r->id != inst) continue;
        if (!r->decided) return 0;
        if (flag) *flag = r->held.flag;
        if (proc_failed) *proc_failed = r->held.err;
        if (kind_conflict) *kind_conflict = decided_conflict(r);
        if (failed) *failed = r->full.v;
        if (nfailed) *nfailed = r->full.n;
        return 1;
    }
    if (inst <= e->gc_floor) return ERA_EGONE;
    if (inst <= e->last_started + 1) return 0;
    return ERA_EINVAL;
}

const uint32_t *era_agreed_failed(const era_t *e, uint32_t *n)
{
    if (n) *n = e ? e->agreed.n : 0;
    return e ? e->agreed.v : NULL;
}

uint32_t era_root(const era_t *e)
{
    if (!e || !e->last_started) return UINT32_MAX;
    for (int i = 0; i < ERA_NREC; i++) {
        const era_rec_t *r = &e->rec[i];
        if (r->id == e->last_started && r->started) return rank_of(e, r, min_alive(e, r));
    }
    return UINT32_MAX;
}

uint64_t era_last_started(const era_t *e) { return e ? e->last_started : 0; }

uint64_t era_last_decided(const era_t *e) { return e ? e->last_decided : 0; }

uint64_t era_sent(const era_t *e) { return e ? e->nsent : 0; }

uint64_t era_rejected(const era_t *e) { return e ? e->nrejected : 0; }

size_t era_footprint(const era_t *e)
{
    if (!e) return 0;
    size_t b = e->bytes;
    for (int i = 0; i < ERA_NREC; i++) {
        const era_rec_t *r = &e->rec[i];
        b += r->cappend * sizeof(era_buf_t);
        for (size_t j = 0; j < r->npend; j++) b += r->pend[j].len;
    }
    return b;
}
