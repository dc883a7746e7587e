/*
 * ftslide_ftnet.h - the transport plumbing of ftslide's two Open MPI modules,
 * written once: coll/ftera (coll-ftagree/ompi, the agreement) and our reliable
 * broadcast (revoke-bmg/ompi, the revoke) both use it.
 *
 *   ftslide_key_t       a communicator's name on the wire: extended CID + c_epoch
 *   ftslide_freed_t     ring of the names of communicators freed here (late
 *                       messages for them are dropped)
 *   ftslide_stash_t     messages for a communicator not set up here yet, replayed
 *                       in arrival order when it is
 *   ftslide_sendq_t     the send queue: a core's send() only queues (a BTL send
 *                       may run the progress engine, which may deliver one of
 *                       our messages into the same core); drained afterwards to
 *                       the first eager BTL of each peer: a whole message through
 *                       the sm BTL's inline send, else in descriptors (fragments
 *                       of at most a limit when the module fragments)
 *   ftslide_gate_t      the failure gate: a module chained into
 *                       ompi_rank_failure_cbfunc, and a clock that moves with
 *                       every reported failure (so a module rescans the known
 *                       failures only after one)
 *
 * Header-only (static functions; each module keeps its own queue, stash and
 * gate, as its messages go on its own BTL tag, both tags below), like
 * ftslide_killpoint.h. It is overlaid into ompi/communicator/ft/ftslide with
 * ompi-ulfm/include; no locking (both modules step aside under
 * MPI_THREAD_MULTIPLE).
 */
#ifndef FTSLIDE_FTNET_H
#define FTSLIDE_FTNET_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "opal/mca/btl/btl.h"
#include "opal/runtime/opal_progress.h"
#include "ompi/communicator/communicator.h"
#include "ompi/group/group.h"
#include "ompi/mca/bml/base/base.h"
#include "ompi/mca/bml/bml.h"
#include "ompi/proc/proc.h"

/* ---- BTL tags ---------------------------------------------------------------- */

/* Our active-message tags. 0x30 (reliable broadcast) and 0x31 (ftagree) are
 * upstream ULFM's; ours follow, below MCA_BTL_TAG_PML (0x40). */
#define FTSLIDE_RBCAST_BTL_TAG 0x32 /* our reliable broadcast (the revoke) */
#define FTSLIDE_ERA_BTL_TAG 0x33    /* coll/ftera (the agreement) */

/* ---- names ------------------------------------------------------------------ */

typedef struct ftslide_key {
    uint64_t cid_base, cid_sub; /* extended CID */
    uint32_t epoch;             /* c_epoch: another one when a CID is reused */
} ftslide_key_t;

static inline ftslide_key_t ftslide_key_of(const ompi_communicator_t *comm)
{
    ftslide_key_t k = {.cid_base = comm->c_contextid.cid_base, .cid_sub = comm->c_contextid.cid_sub.u64,
                       .epoch = (uint32_t) comm->c_epoch};
    return k;
}

static inline int ftslide_key_eq(const ftslide_key_t *a, const ftslide_key_t *b)
{
    return a->cid_base == b->cid_base && a->cid_sub == b->cid_sub && a->epoch == b->epoch;
}

/* ---- names of communicators freed here ---------------------------------------- */

/* Consulted only for a message that no live communicator claims, so a name
 * that is freed and later live again needs no forgetting. */

typedef struct ftslide_freed {
    ftslide_key_t *keys; /* n slots, caller's storage */
    unsigned char *used;
    unsigned n, next;
} ftslide_freed_t;

static inline void ftslide_freed_add(ftslide_freed_t *r, ftslide_key_t k)
{
    r->keys[r->next] = k;
    r->used[r->next] = 1;
    r->next = (r->next + 1) % r->n;
}

static inline int ftslide_freed_has(const ftslide_freed_t *r, const ftslide_key_t *k)
{
    for (unsigned i = 0; i < r->n; i++) {
        if (r->used[i] && ftslide_key_eq(&r->keys[i], k)) return 1;
    }
    return 0;
}

/* ---- early messages ------------------------------------------------------------ */

typedef struct ftslide_stash_item {
    struct ftslide_stash_item *next;
    ftslide_key_t key;
    size_t len;
    unsigned char bytes[];
} ftslide_stash_item_t;

typedef struct ftslide_stash {
    ftslide_stash_item_t *head, *tail; /* arrival order */
    unsigned n, max;                   /* max 0: no bound */
} ftslide_stash_t;

/* Keep a copy of bytes for the communicator named key. 0 kept, -1 full or out
 * of memory (dropped). */
static inline int ftslide_stash_put(ftslide_stash_t *s, ftslide_key_t key, const void *bytes, size_t len)
{
    if (s->max && s->n >= s->max) return -1;
    ftslide_stash_item_t *it = malloc(sizeof(*it) + len);
    if (NULL == it) return -1;
    it->next = NULL;
    it->key = key;
    it->len = len;
    memcpy(it->bytes, bytes, len);
    if (s->tail) s->tail->next = it; else s->head = it;
    s->tail = it;
    s->n++;
    return 0;
}

/* Hand every message kept for key to fn, in arrival order, and forget them.
 * Returns how many there were. fn may stash more (for other names). */
static inline unsigned ftslide_stash_replay(ftslide_stash_t *s, const ftslide_key_t *key,
                                            void (*fn)(void *ctx, const void *bytes, size_t len), void *ctx)
{
    ftslide_stash_item_t *mine = NULL, **mt = &mine, **pp = &s->head;
    unsigned count = 0;
    s->tail = NULL;
    while (NULL != *pp) { /* unlink first: fn may add to the stash */
        ftslide_stash_item_t *it = *pp;
        if (ftslide_key_eq(&it->key, key)) {
            *pp = it->next;
            it->next = NULL;
            *mt = it;
            mt = &it->next;
            s->n--;
        } else {
            s->tail = it;
            pp = &it->next;
        }
    }
    while (NULL != mine) {
        ftslide_stash_item_t *it = mine;
        mine = it->next;
        fn(ctx, it->bytes, it->len);
        free(it);
        count++;
    }
    return count;
}

static inline void ftslide_stash_clear(ftslide_stash_t *s)
{
    while (NULL != s->head) {
        ftslide_stash_item_t *it = s->head;
        s->head = it->next;
        free(it);
    }
    s->tail = NULL;
    s->n = 0;
}

/* ---- the send queue ---------------------------------------------------------------- */

typedef struct ftslide_out {
    struct ftslide_out *next;
    int pooled;          /* a node of FTSLIDE_OUT_SMALL bytes, kept for reuse when sent */
    ompi_proc_t *proc;   /* destination */
    void *owner;         /* the module's object (drop_owner) */
    uint32_t dest;       /* the destination as the owner numbers it */
    size_t hlen, len;    /* header (copied in front of every fragment), payload */
    size_t sent;         /* payload bytes handed to the BTL so far */
    unsigned char bytes[]; /* header, then payload */
} ftslide_out_t;

/* Header + payload of at most this many bytes go in a node that is kept for
 * the next message once sent (at most FTSLIDE_OUT_POOL of them), so that the
 * revoke and the agreement allocate nothing per message once warm. */
#define FTSLIDE_OUT_SMALL 128
#define FTSLIDE_OUT_POOL 64

typedef struct ftslide_sendq {
    ftslide_out_t *head, *tail;
    ftslide_out_t *spare; /* sent small nodes, for reuse */
    unsigned nspare;
    int draining;
    uint64_t inlined; /* messages the BTL took through its inline send */
    mca_btl_base_tag_t tag;
    /* fragments: at most this many bytes, header included (0: the BTL's eager
     * limit); set_offset writes a fragment's payload offset into its header
     * copy (NULL: the module never fragments, a message must fit the limit) */
    size_t fragment_limit;
    void (*set_offset)(unsigned char *hdr, size_t offset);
    /* the destination has no BTL endpoint: the message is dropped after this */
    void (*unreachable)(ftslide_out_t *o);
    /* the whole message went to the BTL in `fragments` fragments */
    void (*handed)(ftslide_out_t *o, size_t fragments);
} ftslide_sendq_t;

/* Queue header + payload for proc. NULL if memory runs out (nothing queued). */
static inline ftslide_out_t *ftslide_sendq_push(ftslide_sendq_t *q, ompi_proc_t *proc, void *owner, uint32_t dest,
                                                const void *hdr, size_t hlen, const void *payload, size_t len)
{
    ftslide_out_t *o;
    int small = hlen + len <= FTSLIDE_OUT_SMALL;
    if (small && NULL != q->spare) {
        o = q->spare;
        q->spare = o->next;
        q->nspare--;
    } else {
        o = malloc(sizeof(*o) + (small ? FTSLIDE_OUT_SMALL : hlen + len));
        if (NULL == o) return NULL;
    }
    o->pooled = small;
    o->next = NULL;
    o->proc = proc;
    o->owner = owner;
    o->dest = dest;
    o->hlen = hlen;
    o->len = len;
    o->sent = 0;
    memcpy(o->bytes, hdr, hlen);
    memcpy(o->bytes + hlen, payload, len);
    if (q->tail) q->tail->next = o; else q->head = o;
    q->tail = o;
    return o;
}

static inline void ftslide_sendq_sent_cb(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                                  struct mca_btl_base_descriptor_t *des, int status)
{
    (void) btl;
    (void) ep;
    (void) des;
    (void) status; /* a lost message is a failed peer: the failure detector tells the core */
}

/* The BTL takes a send of header bytes only, without a convertor, through
 * btl_sendi. 5.0.7's sm BTL looks at the convertor only when there is a
 * payload; self's and uct's sendi read it in any case, and we do not use the
 * others' on trust, so only sm. */
static inline int ftslide_btl_sends_inline(const mca_btl_base_module_t *btl)
{
    return NULL != btl->btl_sendi && NULL != btl->btl_component &&
           0 == strcmp(btl->btl_component->btl_version.mca_component_name, "sm");
}

/* Hand o to the BTL. 0: gone (sent, or dropped: the peer is failed or has no
 * endpoint); 1: the BTL has no descriptor now, try again after progress (the
 * fragments sent so far are not sent again). */
static inline int ftslide_sendq_transmit(ftslide_sendq_t *q, ftslide_out_t *o)
{
    if (NULL == o->proc || !ompi_proc_is_active(o->proc)) {
        return 0; /* ULFM declared it failed: the failure callback tells (or told) the core */
    }
    mca_bml_base_endpoint_t *ep = mca_bml_base_get_endpoint(o->proc);
    mca_bml_base_btl_t *bml_btl = NULL;
    if (NULL != ep && mca_bml_base_btl_array_get_size(&ep->btl_eager) > 0) {
        bml_btl = mca_bml_base_btl_array_get_index(&ep->btl_eager, 0);
    }
    if (NULL == bml_btl || NULL == bml_btl->btl || NULL == bml_btl->btl_endpoint) {
        if (q->unreachable) q->unreachable(o);
        return 0;
    }
    mca_btl_base_module_t *btl = bml_btl->btl;
    size_t limit = btl->btl_eager_limit;
    if (q->fragment_limit > 0 && q->fragment_limit < limit) limit = q->fragment_limit;
    if (0 == o->sent && o->hlen + o->len <= limit && ftslide_btl_sends_inline(btl)) {
        /* the whole message, no payload convertor: the shared-memory BTL
         * writes it into the peer's fast box when the pair has one (no
         * descriptor to allocate, none to return), else into a fragment */
        if (OPAL_SUCCESS == btl->btl_sendi(btl, bml_btl->btl_endpoint, NULL, o->bytes, o->hlen + o->len, 0,
                                           MCA_BTL_NO_ORDER, MCA_BTL_DES_FLAGS_PRIORITY, q->tag, NULL)) {
            q->inlined++;
            if (q->handed) q->handed(o, 1);
            return 0;
        }
        /* no room now: the descriptor path below queues it in the BTL */
    }
    size_t room = (NULL != q->set_offset && limit > o->hlen) ? limit - o->hlen : o->len;
    size_t fragments = 0;
    do {
        size_t chunk = o->len - o->sent < room ? o->len - o->sent : room;
        size_t size = o->hlen + chunk;
        mca_btl_base_descriptor_t *des = btl->btl_alloc(btl, bml_btl->btl_endpoint, MCA_BTL_NO_ORDER, size,
                                                        MCA_BTL_DES_FLAGS_PRIORITY | MCA_BTL_DES_FLAGS_BTL_OWNERSHIP);
        if (NULL == des) {
            return 1;
        }
        unsigned char *seg = des->des_segments[0].seg_addr.pval;
        memcpy(seg, o->bytes, o->hlen);
        if (NULL != q->set_offset) q->set_offset(seg, o->sent);
        memcpy(seg + o->hlen, o->bytes + o->hlen + o->sent, chunk);
        des->des_segments[0].seg_len = size;
        des->des_cbfunc = ftslide_sendq_sent_cb;
        des->des_cbdata = NULL;
        int rc = btl->btl_send(btl, bml_btl->btl_endpoint, des, q->tag);
        if (rc < 0 && OPAL_ERR_RESOURCE_BUSY != rc) {
            /* the BTL did not take it: the peer is gone or the link is down */
            btl->btl_free(btl, des);
        }
        o->sent += chunk;
        fragments++;
    } while (o->sent < o->len);
    if (q->handed) q->handed(o, fragments);
    return 0;
}

/* A node off the queue: kept for reuse (small ones, up to FTSLIDE_OUT_POOL)
 * or freed. */
static inline void ftslide_sendq_release(ftslide_sendq_t *q, ftslide_out_t *o)
{
    if (o->pooled && q->nspare < FTSLIDE_OUT_POOL) {
        o->next = q->spare;
        q->spare = o;
        q->nspare++;
    } else {
        free(o);
    }
}

/* Send everything queued, running the progress engine while the BTL has no
 * descriptor. Re-entrant calls (from a delivery inside that progress) return
 * at once: the outer call sends what they queued. */
static inline void ftslide_sendq_drain(ftslide_sendq_t *q)
{
    if (q->draining) return;
    q->draining = 1;
    while (NULL != q->head) {
        ftslide_out_t *o = q->head;
        if (ftslide_sendq_transmit(q, o)) {
            opal_progress();
            continue;
        }
        q->head = o->next;
        if (NULL == q->head) q->tail = NULL;
        ftslide_sendq_release(q, o);
    }
    q->draining = 0;
}

/* Forget the queued messages of owner (it goes away). */
static inline void ftslide_sendq_drop_owner(ftslide_sendq_t *q, const void *owner)
{
    ftslide_out_t **op = &q->head;
    q->tail = NULL;
    while (NULL != *op) {
        if ((*op)->owner == owner && !(q->draining && *op == q->head)) {
            ftslide_out_t *dead = *op;
            *op = dead->next;
            ftslide_sendq_release(q, dead);
        } else {
            q->tail = *op;
            op = &(*op)->next;
        }
    }
}

static inline void ftslide_sendq_clear(ftslide_sendq_t *q)
{
    while (NULL != q->head) {
        ftslide_out_t *o = q->head;
        q->head = o->next;
        free(o);
    }
    q->tail = NULL;
    while (NULL != q->spare) {
        ftslide_out_t *o = q->spare;
        q->spare = o->next;
        free(o);
    }
    q->nspare = 0;
}

/* ---- the failure gate ---------------------------------------------------------------- */

typedef struct ftslide_gate {
    ompi_comm_rank_failure_callback_t *prev, *mine;
    uint64_t events; /* failure callbacks received */
} ftslide_gate_t;

/* Chain fn into ompi_rank_failure_cbfunc (called once per communicator and
 * failed process); fn ends with ftslide_gate_pass(). */
static inline void ftslide_gate_open(ftslide_gate_t *g, ompi_comm_rank_failure_callback_t *fn)
{
    g->prev = ompi_rank_failure_cbfunc;
    g->mine = fn;
    ompi_rank_failure_cbfunc = fn;
}

/* Unchain, unless another module hooked after us and still calls us (then the
 * chain stays intact: both modules live in libmpi, never unloaded). */
static inline void ftslide_gate_close(ftslide_gate_t *g)
{
    if (NULL != g->mine && ompi_rank_failure_cbfunc == g->mine) {
        ompi_rank_failure_cbfunc = g->prev;
    }
    g->mine = NULL;
}

/* Call the next hook of the chain (the module counts g->events itself, first). */
static inline void ftslide_gate_pass(ftslide_gate_t *g, ompi_communicator_t *comm, int rank, bool remote)
{
    if (NULL != g->prev) g->prev(comm, rank, remote);
}

/* Moves whenever a failure is reported: the callback (which runs first) counts
 * in g->events, ULFM's group of all failed processes grows after it. */
static inline uint64_t ftslide_gate_clock(const ftslide_gate_t *g)
{
    opal_mutex_lock(&ompi_group_afp_mutex);
    uint64_t n = (uint64_t) ompi_group_size(ompi_group_all_failed_procs);
    opal_mutex_unlock(&ompi_group_afp_mutex);
    return n + g->events;
}

#endif /* FTSLIDE_FTNET_H */
