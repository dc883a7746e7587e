/*
 * era.c - Early Returning Agreement on a dynamic tree (see era.h and
 * docs/protocols.md for the protocol and the correctness argument).
 *
 * Tree. Instance s runs over the list L_s of ranks not in the failed set
 * agreed by instance s-1, in binary-heap order over list positions: the
 * parent of position i is (i-1)/2. Under the local dead set D:
 *   - the root is the alive position with the smallest index (position 0 as
 *     long as it is alive; after that the smallest surviving one, which is
 *     always a descendant of 0 all of whose ancestors are dead);
 *   - the effective parent of a non-root is its nearest alive ancestor, or
 *     the root if all its ancestors are dead ("orphan");
 *   - the effective children are found by walking down from a position
 *     through dead positions; the root also adopts every orphan.
 * Messages:
 *   UP              first report of a subtree: AND of flags, intersection
 *                   of acknowledged sets, union of contributors, plus what
 *                   the sender holds (nothing / a proposal / the decision).
 *   RESULT_REQUEST  the same report sent again to a new parent after the
 *                   old one died: it asks for the result, re-carries the
 *                   contribution the dead parent may have lost, and tells a
 *                   new root what the sender holds.
 *   DOWN            PROPOSE(ballot, value) (uniform mode) or DECIDE(value).
 *   ACK(ballot)     uniform mode: the sender's subtree holds this proposal.
 * Every process ignores messages from processes it knows are dead.
 *
 * Mutants for the model checker (test binaries only):
 *   ERA_MUTANT_EARLY_DECIDE  the root proceeds once any child answered.
 *   ERA_MUTANT_NO_BYPASS     a process keeps its dead heap parent as parent.
 *   ERA_MUTANT_NO_ASK        a new root neither waits for the orphans nor
 *                            looks at held values: it decides on its own.
 *   ERA_MUTANT_GC_EARLY      a decision is dropped as soon as the next
 *                            instance starts, so late requests go unanswered.
 *   ERA_MUTANT_LOCAL_ERR     each process computes the error from its own
 *                            acknowledged set instead of the merged one.
 *   ERA_MUTANT_NO_ACK_WAIT   uniform mode: the root decides as soon as it
 *                            proposes, without waiting for the ACK wave.
 */
#include "era.h"

#include <stdlib.h>
#include <string.h>

#define ERA_WIRE_MAGIC 0xEAu
#define ERA_WIRE_VERSION 1u
#define ERA_HDR 32u

enum { MSG_UP = 1, MSG_RESULT_REQUEST = 2, MSG_DOWN = 3, MSG_ACK = 4 };
enum { DOWN_PROPOSE = 1, DOWN_DECIDE = 2 };
enum { HELD_NONE = 0, HELD_PROPOSAL = 1, HELD_DECIDED = 2 };
enum { EXP_DOWN, EXP_UP, EXP_ACK };

#define ERA_NREC 3 /* previous decision, current instance, next (buffered) */

typedef struct era_val {
    uint64_t flag;
    int err;
    uint64_t *F; /* failed set bitmap */
} era_val_t;

typedef struct era_rec {
    uint64_t id; /* 0: slot free */
    int started, decided;
    uint64_t view;      /* digest of the decision that built L (see view_of) */
    struct era_buf *pend; /* messages received before the instance started */
    size_t npend, cappend;
    uint32_t n, my;     /* |L|, my position in L */
    uint32_t *L;        /* position -> rank */
    int32_t *pos;       /* rank -> position, -1 if not in L */
    uint64_t agg_flag;  /* AND of flags merged so far */
    uint64_t *agg_acks; /* intersection of acknowledged sets */
    uint64_t *agg_contrib;
    uint64_t *own_acks;
    uint64_t *reported; /* ranks that sent us an UP / RESULT_REQUEST */
    int64_t up_to;      /* rank our last report went to, -1: none */
    int up_sent;
    uint32_t hb;        /* held ballot (0: nothing held); the decision if decided */
    era_val_t held;
    uint32_t rb;        /* best proposal ballot reported by others (root use) */
    era_val_t rv;
    uint64_t *prop_sent; /* PROPOSE(prop_b) sent to */
    uint32_t prop_b;
    uint64_t *dec_sent; /* DECIDE sent to */
    uint32_t *ackb;     /* highest ballot each rank ACKed */
    int64_t ack_to;
    uint32_t ack_b;
} era_rec_t;

typedef struct era_buf {
    uint32_t from;
    size_t len;
    unsigned char *bytes;
} era_buf_t;

struct era {
    uint32_t n, me;
    size_t W;
    era_mode_t mode;
    era_callbacks_t cb;
    void *ctx;
    uint64_t *dead;   /* reported crashed */
    uint64_t *agreed; /* failed set of the last decision */
    uint64_t last_started, last_decided, gc_floor, nsent, nrejected;
    uint64_t agreed_view; /* digest of the last decision (or of the initial set) */
    era_rec_t rec[ERA_NREC];
    uint32_t *stack, *list; /* scratch */
    uint64_t *tmpF, *tmpC, *tmpA; /* scratch bitmaps for parsing */
    unsigned char *buf;
    size_t bufsz;
};

/* ---- helpers ------------------------------------------------------------- */

static int bit_get(const uint64_t *b, uint32_t i) { return (int)((b[i >> 6] >> (i & 63u)) & 1u); }

static void bit_set(uint64_t *b, uint32_t i) { b[i >> 6] |= (uint64_t)1 << (i & 63u); }

static void put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static void put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_u32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
    return v;
}

static uint64_t get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static void put_bitmap(unsigned char *p, const uint64_t *b, size_t W)
{
    for (size_t i = 0; i < W; i++) put_u64(p + 8 * i, b[i]);
}

/* Reads W words, clearing bits at positions >= n. */
static void get_bitmap(const unsigned char *p, uint64_t *b, size_t W, uint32_t n)
{
    for (size_t i = 0; i < W; i++) b[i] = get_u64(p + 8 * i);
    if (n % 64u) b[W - 1] &= ((uint64_t)1 << (n % 64u)) - 1u;
}

static uint32_t popcount_bits(const uint64_t *b, size_t W)
{
    uint32_t c = 0;
    for (size_t i = 0; i < W; i++)
        for (uint64_t x = b[i]; x; x &= x - 1) c++;
    return c;
}

/* Digest of a decision (or of the initial failed set, with inst 0). Every
 * message carries the digest of the decision that built the sender's tree,
 * so a message from a process whose previous decision differs from ours is
 * recognised and ignored (in early mode such a process has crashed; in
 * uniform mode it cannot exist). */
static uint64_t view_of(uint64_t inst, uint64_t flag, int err, const uint64_t *F, size_t W)
{
    uint64_t h = 0x243f6a8885a308d3ull ^ inst;
    uint64_t in[3] = {flag, (uint64_t)(err != 0), W};
    for (size_t i = 0; i < 3 + W; i++) {
        h ^= i < 3 ? in[i] : F[i - 3];
        h *= 0x9e3779b97f4a7c15ull;
        h ^= h >> 29;
        h *= 0xbf58476d1ce4e5b9ull;
        h ^= h >> 32;
    }
    return h;
}

size_t era_bitmap_words(uint32_t n) { return ((size_t)n + 63u) / 64u; }

size_t era_max_msg_size(uint32_t n)
{
    size_t W = era_bitmap_words(n);
    return ERA_HDR + 8 + 16 * W + 8 + 8 * W;
}

/* ---- instance records ------------------------------------------------------ */

static void rec_clear(era_t *e, era_rec_t *r, uint64_t id)
{
    size_t W = e->W, bytes = W * sizeof(uint64_t);
    r->id = id;
    r->started = r->decided = 0;
    r->view = 0;
    for (size_t i = 0; i < r->npend; i++) free(r->pend[i].bytes);
    r->npend = 0;
    r->n = r->my = 0;
    r->agg_flag = ~(uint64_t)0;
    memset(r->agg_acks, 0xff, bytes);
    memset(r->agg_contrib, 0, bytes);
    memset(r->own_acks, 0, bytes);
    memset(r->reported, 0, bytes);
    r->up_to = -1;
    r->up_sent = 0;
    r->hb = 0;
    r->held.flag = 0;
    r->held.err = 0;
    memset(r->held.F, 0, bytes);
    r->rb = 0;
    r->rv.flag = 0;
    r->rv.err = 0;
    memset(r->rv.F, 0, bytes);
    memset(r->prop_sent, 0, bytes);
    r->prop_b = 0;
    memset(r->dec_sent, 0, bytes);
    memset(r->ackb, 0, (size_t)e->n * sizeof *r->ackb);
    r->ack_to = -1;
    r->ack_b = 0;
}

static int rec_alloc_mem(era_t *e, era_rec_t *r)
{
    size_t W = e->W;
    r->L = calloc(e->n, sizeof *r->L);
    r->pos = calloc(e->n, sizeof *r->pos);
    r->ackb = calloc(e->n, sizeof *r->ackb);
    r->agg_acks = calloc(W, sizeof(uint64_t));
    r->agg_contrib = calloc(W, sizeof(uint64_t));
    r->own_acks = calloc(W, sizeof(uint64_t));
    r->reported = calloc(W, sizeof(uint64_t));
    r->held.F = calloc(W, sizeof(uint64_t));
    r->rv.F = calloc(W, sizeof(uint64_t));
    r->prop_sent = calloc(W, sizeof(uint64_t));
    r->dec_sent = calloc(W, sizeof(uint64_t));
    return r->L && r->pos && r->ackb && r->agg_acks && r->agg_contrib && r->own_acks && r->reported &&
           r->held.F && r->rv.F && r->prop_sent && r->dec_sent;
}

static void rec_free_mem(era_rec_t *r)
{
    for (size_t i = 0; i < r->npend; i++) free(r->pend[i].bytes);
    free(r->pend);
    free(r->L);
    free(r->pos);
    free(r->ackb);
    free(r->agg_acks);
    free(r->agg_contrib);
    free(r->own_acks);
    free(r->reported);
    free(r->held.F);
    free(r->rv.F);
    free(r->prop_sent);
    free(r->dec_sent);
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

static void val_copy(era_t *e, era_val_t *dst, const era_val_t *src)
{
    if (dst == src) return;
    dst->flag = src->flag;
    dst->err = src->err;
    memcpy(dst->F, src->F, e->W * sizeof(uint64_t));
}

/* ---- tree ------------------------------------------------------------------ */

static int alive_pos(const era_t *e, const era_rec_t *r, uint32_t i) { return !bit_get(e->dead, r->L[i]); }

/* Smallest alive position (always <= my position: we are alive). */
static uint32_t min_alive(const era_t *e, const era_rec_t *r)
{
    for (uint32_t i = 0; i < r->n; i++)
        if (alive_pos(e, r, i)) return i;
    return r->my;
}

/* Effective parent of a non-root, as a rank. */
static uint32_t eff_parent(const era_t *e, const era_rec_t *r, uint32_t root_pos)
{
#ifdef ERA_MUTANT_NO_BYPASS
    (void)e;
    (void)root_pos;
    if (r->my > 0) return r->L[(r->my - 1) / 2];
    return r->L[0];
#else
    uint32_t j = r->my;
    while (j > 0) {
        j = (j - 1) / 2;
        if (alive_pos(e, r, j)) return r->L[j];
    }
    return r->L[root_pos]; /* orphan: all ancestors dead, attach to the root */
#endif
}

/* Walk down from position `from` (exclusive). A vertex stops the walk if it
 * is "covered" (EXP_UP: it reported to us; EXP_ACK: it ACKed ballot b) or
 * alive (then it is written to out: a target / a child we wait for); dead,
 * uncovered vertices are looked through. `skip` is never visited. */
static void walk(era_t *e, era_rec_t *r, uint32_t from, int kind, uint32_t b, uint32_t skip, uint32_t *cnt,
                 uint32_t *ncov)
{
    uint32_t sp = 0;
    uint64_t c2 = 2 * (uint64_t)from + 2, c1 = c2 - 1;
    if (c2 < r->n) e->stack[sp++] = (uint32_t)c2;
    if (c1 < r->n) e->stack[sp++] = (uint32_t)c1;
    while (sp > 0) {
        uint32_t c = e->stack[--sp];
        if (c == skip) continue;
        uint32_t rank = r->L[c];
        if (kind == EXP_UP && bit_get(r->reported, rank)) {
            (*ncov)++;
            continue;
        }
        if (kind == EXP_ACK && r->ackb[rank] >= b) {
            (*ncov)++;
            continue;
        }
        if (alive_pos(e, r, c)) {
            e->list[(*cnt)++] = rank;
            continue;
        }
        c2 = 2 * (uint64_t)c + 2;
        c1 = c2 - 1;
        if (c2 < r->n) e->stack[sp++] = (uint32_t)c2;
        if (c1 < r->n) e->stack[sp++] = (uint32_t)c1;
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

/* ---- messages -------------------------------------------------------------- */

static unsigned char *hdr(era_t *e, era_rec_t *r, int type, int sub, uint32_t ballot, int err)
{
    unsigned char *p = e->buf;
    memset(p, 0, ERA_HDR);
    p[0] = ERA_WIRE_MAGIC;
    p[1] = ERA_WIRE_VERSION;
    p[2] = (unsigned char)type;
    p[3] = (unsigned char)sub;
    put_u32(p + 4, e->n);
    put_u64(p + 8, r->id);
    put_u32(p + 16, ballot);
    p[20] = (unsigned char)(err ? 1 : 0);
    put_u64(p + 24, r->view);
    return p;
}

static void emit(era_t *e, uint32_t dest, size_t len)
{
    e->nsent++;
    if (e->cb.send) e->cb.send(e->ctx, dest, e->buf, len);
}

/* UP / RESULT_REQUEST: our subtree's aggregate plus what we hold. */
static void send_report(era_t *e, era_rec_t *r, uint32_t dest)
{
    int kind = r->decided ? HELD_DECIDED : (r->hb ? HELD_PROPOSAL : HELD_NONE);
    int type = r->up_sent ? MSG_RESULT_REQUEST : MSG_UP;
    size_t W = e->W, off = ERA_HDR;
    unsigned char *p = hdr(e, r, type, kind, kind ? r->hb : 0, kind ? r->held.err : 0);
    put_u64(p + off, r->agg_flag);
    off += 8;
    put_bitmap(p + off, r->agg_contrib, W);
    off += 8 * W;
    put_bitmap(p + off, r->agg_acks, W);
    off += 8 * W;
    if (kind) {
        put_u64(p + off, r->held.flag);
        off += 8;
        put_bitmap(p + off, r->held.F, W);
        off += 8 * W;
    }
    r->up_sent = 1;
    emit(e, dest, off);
}

static void send_down(era_t *e, era_rec_t *r, uint32_t dest, int phase)
{
    unsigned char *p = hdr(e, r, MSG_DOWN, phase, r->hb, r->held.err);
    put_u64(p + ERA_HDR, r->held.flag);
    put_bitmap(p + ERA_HDR + 8, r->held.F, e->W);
    emit(e, dest, ERA_HDR + 8 + 8 * e->W);
}

static void send_ack(era_t *e, era_rec_t *r, uint32_t dest, uint32_t ballot)
{
    hdr(e, r, MSG_ACK, 0, ballot, 0);
    emit(e, dest, ERA_HDR);
}

/* ---- decisions ------------------------------------------------------------- */

/* The value computed from the merged contributions: every rank that did not
 * contribute is failed (this includes the previously agreed failures, which
 * are not in L); the error is raised iff some failed rank is missing from
 * the intersection of the contributors' acknowledged sets. */
static void fresh_value(era_t *e, era_rec_t *r, era_val_t *v)
{
    v->flag = r->agg_flag;
    v->err = 0;
    for (size_t i = 0; i < e->W; i++) v->F[i] = ~r->agg_contrib[i];
    if (e->n % 64u) v->F[e->W - 1] &= ((uint64_t)1 << (e->n % 64u)) - 1u;
    for (size_t i = 0; i < e->W; i++)
        if (v->F[i] & ~r->agg_acks[i]) v->err = 1;
}

static void decide_now(era_t *e, era_rec_t *r, uint32_t ballot, const era_val_t *v)
{
    val_copy(e, &r->held, v);
    r->hb = ballot;
    r->decided = 1;
#ifdef ERA_MUTANT_LOCAL_ERR
    r->held.err = 0;
    for (size_t i = 0; i < e->W; i++)
        if (r->held.F[i] & ~r->own_acks[i]) r->held.err = 1;
#endif
    if (r->id > e->last_decided) e->last_decided = r->id;
    memcpy(e->agreed, r->held.F, e->W * sizeof(uint64_t));
    e->agreed_view = view_of(r->id, r->held.flag, r->held.err, r->held.F, e->W);
    /* GC rule: once instance s decides here, instance s-1 can never be asked
     * for again by a live process (see docs/protocols.md). */
    if (r->id > 1) gc(e, r->id - 1);
    if (e->cb.decide) {
        era_result_t res;
        res.inst = r->id;
        res.flag = r->held.flag;
        res.proc_failed = r->held.err;
        res.nfailed = popcount_bits(r->held.F, e->W);
        res.failed = r->held.F;
        e->cb.decide(e->ctx, &res);
    }
}

static void propose(era_t *e, era_rec_t *r, uint32_t ballot, const era_val_t *v)
{
    val_copy(e, &r->held, v);
    r->hb = ballot;
    if (r->prop_b != ballot) {
        memset(r->prop_sent, 0, e->W * sizeof(uint64_t));
        r->prop_b = ballot;
    }
}

static void handle(era_t *e, era_rec_t *r, uint32_t from, const unsigned char *p);

/* ---- the step: everything an instance should do under current knowledge -- */

static void step(era_t *e, era_rec_t *r)
{
    for (int round = 0; round < 3; round++) {
        if (r->id == 0 || !r->started) return;
        uint32_t rootpos = min_alive(e, r), cnt, ncov;
        int root = rootpos == r->my;
        uint32_t ep = root ? UINT32_MAX : eff_parent(e, r, rootpos);

        if (r->decided) {
            cnt = frontier(e, r, root, EXP_DOWN, 0, &ncov);
            for (uint32_t i = 0; i < cnt; i++) {
                uint32_t t = e->list[i];
                if (bit_get(r->dec_sent, t)) continue;
                bit_set(r->dec_sent, t);
                send_down(e, r, t, DOWN_DECIDE);
            }
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
            for (uint32_t i = 0; i < cnt; i++) {
                uint32_t t = e->list[i];
                if (bit_get(r->prop_sent, t)) continue;
                bit_set(r->prop_sent, t);
                send_down(e, r, t, DOWN_PROPOSE);
            }
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
            for (uint32_t i = 0; i < cnt; i++) {
                uint32_t t = e->list[i];
                if (bit_get(r->prop_sent, t)) continue;
                bit_set(r->prop_sent, t);
                send_down(e, r, t, DOWN_PROPOSE);
            }
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

era_t *era_create(uint32_t n, uint32_t me, era_mode_t mode, const uint64_t *initial_failed,
                  const era_callbacks_t *cb, void *ctx)
{
    if (n == 0 || me >= n || (mode != ERA_MODE_UNIFORM && mode != ERA_MODE_EARLY)) return NULL;
    if (initial_failed && bit_get(initial_failed, me)) return NULL;
    era_t *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    e->n = n;
    e->me = me;
    e->W = era_bitmap_words(n);
    e->mode = mode;
    if (cb) e->cb = *cb;
    e->ctx = ctx;
    e->dead = calloc(e->W, sizeof(uint64_t));
    e->agreed = calloc(e->W, sizeof(uint64_t));
    e->tmpF = calloc(e->W, sizeof(uint64_t));
    e->tmpC = calloc(e->W, sizeof(uint64_t));
    e->tmpA = calloc(e->W, sizeof(uint64_t));
    e->stack = calloc(n, sizeof *e->stack);
    e->list = calloc(n, sizeof *e->list);
    e->bufsz = era_max_msg_size(n);
    e->buf = calloc(e->bufsz, 1);
    int ok = e->dead && e->agreed && e->tmpF && e->tmpC && e->tmpA && e->stack && e->list && e->buf;
    for (int i = 0; i < ERA_NREC; i++) ok = ok && rec_alloc_mem(e, &e->rec[i]);
    if (!ok) {
        era_destroy(e);
        return NULL;
    }
    if (initial_failed) {
        memcpy(e->agreed, initial_failed, e->W * sizeof(uint64_t));
        if (n % 64u) e->agreed[e->W - 1] &= ((uint64_t)1 << (n % 64u)) - 1u;
    }
    e->agreed_view = view_of(0, 0, 0, e->agreed, e->W);
    return e;
}

void era_destroy(era_t *e)
{
    if (!e) return;
    for (int i = 0; i < ERA_NREC; i++) rec_free_mem(&e->rec[i]);
    free(e->dead);
    free(e->agreed);
    free(e->tmpF);
    free(e->tmpC);
    free(e->tmpA);
    free(e->stack);
    free(e->list);
    free(e->buf);
    free(e);
}

int era_start(era_t *e, uint64_t flag, const uint64_t *acked, uint64_t *inst)
{
    if (!e) return ERA_EINVAL;
    if (e->last_started != e->last_decided) return ERA_EBUSY;
    if (bit_get(e->agreed, e->me)) return ERA_EPROTO; /* agreed dead: cannot take part */
    uint64_t id = e->last_started + 1;
    era_rec_t *r = find_rec(e, id);
    if (!r) r = alloc_rec(e, id);
    if (!r) return ERA_ENOMEM;
    r->n = 0;
    for (uint32_t k = 0; k < e->n; k++) {
        if (bit_get(e->agreed, k)) {
            r->pos[k] = -1;
        } else {
            r->pos[k] = (int32_t)r->n;
            r->L[r->n++] = k;
        }
    }
    r->my = (uint32_t)r->pos[e->me];
    r->agg_flag &= flag;
    for (size_t i = 0; i < e->W; i++) {
        uint64_t a = acked ? acked[i] : 0;
        r->own_acks[i] = a;
        r->agg_acks[i] &= a;
    }
    bit_set(r->agg_contrib, e->me);
    r->view = e->agreed_view;
    r->started = 1;
    e->last_started = id;
    /* Messages that arrived before we started: apply those from processes
     * that share our view and are not known dead, in arrival order. */
    for (size_t i = 0; i < r->npend; i++) {
        if (!bit_get(e->dead, r->pend[i].from)) handle(e, r, r->pend[i].from, r->pend[i].bytes);
        free(r->pend[i].bytes);
    }
    r->npend = 0;
    if (inst) *inst = id;
#ifdef ERA_MUTANT_GC_EARLY
    gc(e, id - 1);
#endif
    step(e, r);
    return ERA_OK;
}

/* Checks a message's framing; fills the header fields. */
static int parse_header(const era_t *e, const unsigned char *p, size_t len, int *type, int *sub, uint64_t *id,
                        uint32_t *ballot, uint64_t *view)
{
    size_t W = e->W, need;
    if (len < ERA_HDR || p[0] != ERA_WIRE_MAGIC || p[1] != ERA_WIRE_VERSION || get_u32(p + 4) != e->n)
        return ERA_EPROTO;
    *type = p[2];
    *sub = p[3];
    *id = get_u64(p + 8);
    *ballot = get_u32(p + 16);
    *view = get_u64(p + 24);
    switch (*type) {
    case MSG_UP:
    case MSG_RESULT_REQUEST:
        if (*sub != HELD_NONE && *sub != HELD_PROPOSAL && *sub != HELD_DECIDED) return ERA_EPROTO;
        need = ERA_HDR + 8 + 16 * W + (*sub ? 8 + 8 * W : 0);
        break;
    case MSG_DOWN:
        if (*sub != DOWN_PROPOSE && *sub != DOWN_DECIDE) return ERA_EPROTO;
        need = ERA_HDR + 8 + 8 * W;
        break;
    case MSG_ACK:
        need = ERA_HDR;
        break;
    default:
        return ERA_EPROTO;
    }
    if (len != need || *id == 0) return ERA_EPROTO;
    if (e->mode == ERA_MODE_EARLY &&
        (*type == MSG_ACK || (*type == MSG_DOWN && *sub == DOWN_PROPOSE) ||
         ((*type == MSG_UP || *type == MSG_RESULT_REQUEST) && *sub == HELD_PROPOSAL)))
        return ERA_EPROTO;
    return ERA_OK;
}

/* Applies a well-formed message for started instance r. */
static void handle(era_t *e, era_rec_t *r, uint32_t from, const unsigned char *p)
{
    size_t W = e->W;
    int type = p[2], sub = p[3];
    uint32_t ballot = get_u32(p + 16);
    era_val_t v = {0, p[20] != 0, e->tmpF};
    if (get_u64(p + 24) != r->view) {
        e->nrejected++; /* sender built a different tree: ignore it */
        return;
    }
    switch (type) {
    case MSG_UP:
    case MSG_RESULT_REQUEST: {
        size_t off = ERA_HDR;
        uint64_t f = get_u64(p + off);
        off += 8;
        get_bitmap(p + off, e->tmpC, W, e->n);
        off += 8 * W;
        get_bitmap(p + off, e->tmpA, W, e->n);
        off += 8 * W;
        r->agg_flag &= f;
        for (size_t i = 0; i < W; i++) {
            r->agg_contrib[i] |= e->tmpC[i];
            r->agg_acks[i] &= e->tmpA[i];
        }
        bit_set(r->reported, from);
        if (sub) {
            v.flag = get_u64(p + off);
            off += 8;
            get_bitmap(p + off, v.F, W, e->n);
        }
        if (sub == HELD_DECIDED) {
            if (!r->decided) decide_now(e, r, ballot, &v);
        } else if (sub == HELD_PROPOSAL) {
            if (ballot > r->rb) {
                r->rb = ballot;
                val_copy(e, &r->rv, &v);
            }
        }
        if (r->decided) {
            /* Late request: answer from the kept decision. */
            if (sub != HELD_DECIDED && !bit_get(r->dec_sent, from)) {
                bit_set(r->dec_sent, from);
                send_down(e, r, from, DOWN_DECIDE);
            }
        } else if (e->mode == ERA_MODE_UNIFORM && r->hb > 0 && r->prop_b == r->hb && !bit_get(r->prop_sent, from)) {
            bit_set(r->prop_sent, from);
            send_down(e, r, from, DOWN_PROPOSE);
        }
        break;
    }
    case MSG_DOWN:
        v.flag = get_u64(p + ERA_HDR);
        get_bitmap(p + ERA_HDR + 8, v.F, W, e->n);
        if (sub == DOWN_DECIDE) {
            if (!r->decided) decide_now(e, r, ballot, &v);
        } else if (r->decided) {
            if (!bit_get(r->dec_sent, from)) {
                bit_set(r->dec_sent, from);
                send_down(e, r, from, DOWN_DECIDE);
            }
        } else if (ballot > r->hb) {
            propose(e, r, ballot, &v);
        }
        break;
    case MSG_ACK:
        if (ballot > r->ackb[from]) r->ackb[from] = ballot;
        break;
    }
}

int era_recv(era_t *e, uint32_t from, const void *msg, size_t len)
{
    if (!e || !msg || from >= e->n || from == e->me) return ERA_EINVAL;
    const unsigned char *p = msg;
    int type, sub;
    uint64_t id, view;
    uint32_t ballot;
    int rc = parse_header(e, p, len, &type, &sub, &id, &ballot, &view);
    if (rc != ERA_OK) return rc;
    if (bit_get(e->dead, from)) return ERA_OK; /* fencing: never listen to the known dead */

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
    return ERA_OK;
}

int era_failure(era_t *e, uint32_t rank)
{
    if (!e || rank >= e->n || rank == e->me) return ERA_EINVAL;
    if (bit_get(e->dead, rank)) return ERA_OK;
    bit_set(e->dead, rank);
    step_all(e);
    return ERA_OK;
}

int era_progress(era_t *e)
{
    if (!e) return ERA_EINVAL;
    step_all(e);
    return e->last_started != 0 && e->last_decided == e->last_started;
}

int era_test(const era_t *e, uint64_t inst, uint64_t *flag, int *proc_failed, uint64_t *failed)
{
    if (!e || inst == 0) return ERA_EINVAL;
    for (int i = 0; i < ERA_NREC; i++) {
        const era_rec_t *r = &e->rec[i];
        if (r->id != inst) continue;
        if (!r->decided) return 0;
        if (flag) *flag = r->held.flag;
        if (proc_failed) *proc_failed = r->held.err;
        if (failed) memcpy(failed, r->held.F, e->W * sizeof(uint64_t));
        return 1;
    }
    if (inst <= e->gc_floor) return ERA_EGONE;
    if (inst <= e->last_started + 1) return 0;
    return ERA_EINVAL;
}

const uint64_t *era_agreed_failed(const era_t *e) { return e ? e->agreed : NULL; }

uint64_t era_last_started(const era_t *e) { return e ? e->last_started : 0; }

uint64_t era_last_decided(const era_t *e) { return e ? e->last_decided : 0; }

uint64_t era_sent(const era_t *e) { return e ? e->nsent : 0; }

uint64_t era_rejected(const era_t *e) { return e ? e->nrejected : 0; }
