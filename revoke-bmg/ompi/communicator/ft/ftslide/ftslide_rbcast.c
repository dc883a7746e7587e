/*
 * ftslide_rbcast.c - the adapter between ULFM's FT layer and our BMG core.
 *
 * One channel per (communicator, broadcast type): a bmg_t over the members of
 * the communicator (for an inter-communicator: both groups, the group that
 * ompi_comm_determine_first_auto() puts first taking positions 0..n1-1). A
 * revoke is epoch 1 of its channel; the communicator itself is named on the
 * wire by its extended CID, its local index and its c_epoch, which together
 * differ between two communicators that reuse a CID.
 *
 *   ftslide_rbcast_bcast()           --> bmg_broadcast()
 *   BTL active message on our tag    --> bmg_recv()
 *   Open MPI's rank-failure callback --> bmg_failure()
 *   core send()    --> queued; drive() hands the queue to the BTL
 *   core deliver() --> noted; the FT layer's callback runs after the core call
 *
 * A channel is set up when its communicator is activated (intra-communicators;
 * its first broadcast gives it its type), else at the first message; it is
 * found through the communicator's c_index in O(1).
 *
 * The core must not be re-entered from its own callbacks, and a BTL send may
 * run the progress engine, which may bring in one of our messages: send()
 * only queues, and a nested drive() returns at once.
 *
 * A message for a communicator this process does not have: if one with that
 * name was freed here, its detached channel (the last RBCAST_DETACHED_MAX
 * freed) forwards it without delivering, or it is dropped once that channel
 * is gone; otherwise it is kept (bounded) and replayed when the communicator
 * is activated here.
 *
 * Fault injection for the tests: FTSLIDE_KILL="R@bmg_sent_N" kills world rank R
 * right after it handed its N-th message to the BTL, "R@bmg_deliver_N" right
 * after its N-th delivery, before it forwards anything (ftslide_killpoint.h).
 */
#include "ompi_config.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "opal/mca/base/mca_base_pvar.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/base/mca_base_var_enum.h"
#include "opal/mca/btl/btl.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"

#include "ompi/communicator/communicator.h"
#include "ompi/group/group.h"
#include "ompi/mca/bml/base/base.h"
#include "ompi/mca/bml/bml.h"
#include "ompi/proc/proc.h"
#include "ompi/runtime/mpiruntime.h"
#include "ompi/runtime/ompi_rte.h"
#include "ompi/runtime/params.h"

#include "bmg.h"
#include "ftslide_rbcast.h"
#include "ftslide_ftnet.h"
#include "ftslide_killpoint.h"

/* the arguments (ompi_comm_print_cid() formats a string) are evaluated only
 * when the output is on: the revoke path runs this at every process */
#define RBCAST_OUT(lvl, ...)                                                                        \
    do {                                                                                            \
        if (opal_output_check_verbosity((lvl), ompi_ftmpi_output_handle)) {                         \
            opal_output_verbose((lvl), ompi_ftmpi_output_handle, "ftslide_rbcast: " __VA_ARGS__);   \
        }                                                                                           \
    } while (0)

/* on the wire, in front of the core's message */
typedef struct rbcast_hdr {
    uint64_t cid_base, cid_sub; /* extended CID */
    uint32_t epoch;             /* c_epoch */
    uint32_t index;             /* sender's c_index (everybody's, for a global-index communicator) */
    uint32_t type;              /* FT-layer broadcast type */
    uint32_t src;               /* sender's position in the channel */
} rbcast_hdr_t;

typedef ftslide_key_t rbcast_key_t; /* extended CID + c_epoch (ftslide_ftnet.h) */

typedef struct rbcast_chan {
    struct rbcast_chan *sib;   /* next channel of the same live communicator (by_index) */
    ompi_communicator_t *comm; /* not retained; NULL once freed here (detached) */
    ompi_group_t *lgrp, *rgrp; /* retained: a detached channel still sends */
    uint32_t index;            /* the communicator's c_index */
    rbcast_key_t key;
    uint32_t type;
    uint32_t n, me;
    uint32_t radix;            /* lean: the radix of the revokes started here */
    uint32_t lsize, rsize;     /* local and remote group sizes (intra: rsize = 0) */
    int first;                 /* inter: our group takes positions 0..lsize-1 */
    int delivered;             /* the core delivered; the FT callback is due */
    bmg_t *b;
} rbcast_chan_t;

#define RBCAST_STASH_MAX 4096
#define RBCAST_FREED_RING 256
#define RBCAST_DETACHED_MAX 64

static int rbcast_inited = 0;
static int rbcast_lean = 1;
static int rbcast_radix = 0; /* mpi_ft_ftslide_radix: 0 = auto (rbcast_radix_for) */
static int rbcast_radix_differs_told = 0;
static ftslide_rbcast_deliver_fn_t rbcast_deliver_fn = NULL;
/* the type of a channel set up before its first broadcast: the first
 * broadcast of any type claims it (the FT layer sends one payload-less type,
 * the revoke) */
#define RBCAST_TYPE_UNSET UINT32_MAX
static ftslide_gate_t rbcast_gate; /* our place in ompi_rank_failure_cbfunc (ftslide_ftnet.h) */
/* channels of live communicators, by the communicator's c_index (its first
 * channel; others through sib), so that a message, a revoke, a failure or a
 * free finds a communicator's channels in O(1) however many have one */
static rbcast_chan_t **by_index = NULL;
static uint32_t by_index_cap = 0;
/* channels whose communicator was freed here: the last RBCAST_DETACHED_MAX, a ring */
static rbcast_chan_t *detached[RBCAST_DETACHED_MAX];
static unsigned detached_next = 0;
/* the send queue, early messages (header + core message) and freed names
 * (ftslide_ftnet.h, shared with coll/ftera) */
static void rbcast_unreachable(ftslide_out_t *o);
static void rbcast_handed(ftslide_out_t *o, size_t fragments);
static ftslide_sendq_t rbcast_q = {.tag = FTSLIDE_RBCAST_BTL_TAG, .unreachable = rbcast_unreachable,
                                   .handed = rbcast_handed};
static ftslide_stash_t stash = {.max = RBCAST_STASH_MAX};
static ftslide_key_t freed_keys[RBCAST_FREED_RING];
static unsigned char freed_used[RBCAST_FREED_RING];
static ftslide_freed_t freed = {.keys = freed_keys, .used = freed_used, .n = RBCAST_FREED_RING};

/* counters; messages_sent is the MPI_T performance variable */
static unsigned long long rbcast_nsent = 0;
unsigned long long ompi_comm_rbcast_upstream_sent = 0;
static unsigned long rbcast_ndelivered = 0, rbcast_nstashed = 0, rbcast_ndropped = 0;

/* ------------------------------------------------------------------------ */
/* parameters                                                                */

static const mca_base_var_enum_value_t algorithms[] = {
    {OMPI_COMM_RBCAST_NONE, "none"},
    {OMPI_COMM_RBCAST_BMG, "bmg"},
    {OMPI_COMM_RBCAST_FULL, "full"},
    {OMPI_COMM_RBCAST_FTSLIDE_FLOOD, "ftslide_flood"},
    {OMPI_COMM_RBCAST_FTSLIDE_LEAN, "ftslide_lean"},
    {0, NULL}
};

int ftslide_rbcast_register_params(int *algorithm)
{
    mca_base_var_enum_t *values = NULL;
    int rc = mca_base_var_enum_create("mpi_ft_reliable_bcast", algorithms, &values);
    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    *algorithm = OMPI_COMM_RBCAST_DEFAULT;
    (void) mca_base_var_register("ompi", "mpi", "ft", "reliable_bcast",
        "Reliable broadcast that carries MPIX_Comm_revoke: 0|none (revoke stays local), 1|bmg (upstream's "
        "binomial-graph diffusion), 2|full (upstream's all-to-all diffusion), 3|ftslide_flood (ftslide's BMG "
        "core, every process forwards to all its binomial-graph neighbours), 4|ftslide_lean (ftslide's BMG "
        "core, forwarding along a 4-nomial spanning tree that bypasses failed vertices; the default)",
        MCA_BASE_VAR_TYPE_INT, values, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_READONLY, algorithm);
    OBJ_RELEASE(values);
    (void) mca_base_var_register("ompi", "mpi", "ft", "ftslide_radix",
        "Lean reliable broadcast (ftslide_lean): each revoke runs along a k-nomial tree rooted at the revoking "
        "process, k = this radix (at least 2); 0 (the default): auto, the whole communicator in one level (a "
        "star around the origin) when the job runs on one node and the communicator holds only its processes "
        "(a level costs a process wake-up there, a message a memory copy), the 4-nomial tree otherwise. Every "
        "process should use the same value (a revoke runs along its origin's tree; a process that sees another "
        "radix says so once)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_READONLY, &rbcast_radix);
    (void) mca_base_pvar_register("ompi", "mpi", "ft", "ftslide_messages_sent",
        "Messages this process has handed to the BTL for ftslide's reliable broadcast (revoke)",
        OPAL_INFO_LVL_4, MCA_BASE_PVAR_CLASS_COUNTER, MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL,
        MCA_BASE_VAR_BIND_NO_OBJECT, MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS,
        NULL, NULL, NULL, &rbcast_nsent);
    (void) mca_base_pvar_register("ompi", "mpi", "ft", "rbcast_messages_sent",
        "Messages this process has handed to the BTL for upstream's reliable broadcast (algorithms 1 and 2)",
        OPAL_INFO_LVL_4, MCA_BASE_PVAR_CLASS_COUNTER, MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL,
        MCA_BASE_VAR_BIND_NO_OBJECT, MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS,
        NULL, NULL, NULL, &ompi_comm_rbcast_upstream_sent);
    return OMPI_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* channels                                                                  */

static rbcast_key_t key_of(ompi_communicator_t *comm)
{
    return ftslide_key_of(comm);
}

static rbcast_key_t key_of_hdr(const rbcast_hdr_t *h)
{
    rbcast_key_t k = {.cid_base = h->cid_base, .cid_sub = h->cid_sub, .epoch = h->epoch};
    return k;
}

/* group and rank in it of channel position pos */
static ompi_group_t *chan_group(const rbcast_chan_t *c, uint32_t pos, int *idx)
{
    if (0 == c->rsize) {
        *idx = (int) pos;
        return c->lgrp;
    }
    uint32_t nfirst = c->first ? c->lsize : c->rsize;
    int in_first = pos < nfirst;
    *idx = (int) (in_first ? pos : pos - nfirst);
    return (in_first == c->first) ? c->lgrp : c->rgrp;
}

/* process at channel position pos (set up if it was not yet) */
static ompi_proc_t *chan_proc(const rbcast_chan_t *c, uint32_t pos)
{
    int idx;
    ompi_group_t *g = chan_group(c, pos, &idx);
    return ompi_group_peer_lookup(g, idx);
}

/* channel position of rank `rank` of the local (remote = 0) or remote group */
static uint32_t chan_pos(const rbcast_chan_t *c, int rank, int remote)
{
    if (0 == c->rsize) {
        return (uint32_t) rank;
    }
    int in_first = remote ? !c->first : c->first;
    uint32_t nfirst = c->first ? c->lsize : c->rsize;
    return in_first ? (uint32_t) rank : nfirst + (uint32_t) rank;
}

static void core_send(void *ctx, uint32_t dest, const void *msg, size_t len)
{
    rbcast_chan_t *c = (rbcast_chan_t *) ctx;
    rbcast_hdr_t hdr = {.cid_base = c->key.cid_base, .cid_sub = c->key.cid_sub, .epoch = c->key.epoch,
                       .index = c->index, .type = c->type, .src = c->me};
    if (len > BMG_MSG_SIZE || NULL == ftslide_sendq_push(&rbcast_q, chan_proc(c, dest), c, dest, &hdr, sizeof(hdr),
                                                         msg, len)) {
        opal_output(0, "ftslide_rbcast: cannot queue a message to position %u (out of memory); it is lost", dest);
    }
}

static void core_deliver(void *ctx, uint32_t origin, uint64_t epoch)
{
    rbcast_chan_t *c = (rbcast_chan_t *) ctx;
    (void) origin;
    (void) epoch;
    c->delivered = 1;
}

static const bmg_callbacks_t core_callbacks = {.send = core_send, .deliver = core_deliver};

/* The process at channel position pos if this process has ever set it up,
 * else NULL (a process ULFM declared failed always has one). Unlike
 * chan_proc() it never creates one: a scan over a large communicator does not
 * set up every peer. */
static ompi_proc_t *chan_proc_known(const rbcast_chan_t *c, uint32_t pos)
{
    int idx;
    ompi_group_t *g = chan_group(c, pos, &idx);
    ompi_proc_t *p = ompi_group_get_proc_ptr_raw(g, idx);
    if (ompi_proc_is_sentinel(p)) {
        p = (ompi_proc_t *) ompi_proc_lookup(ompi_proc_sentinel_to_name((intptr_t) p));
    }
    return p;
}

/* Tell the core about every process of the channel known failed here. */
static void scan_failures(rbcast_chan_t *c)
{
    for (uint32_t pos = 0; pos < c->n; pos++) {
        ompi_proc_t *p = chan_proc_known(c, pos);
        if (pos != c->me && NULL != p && !ompi_proc_is_active(p)) {
            (void) bmg_failure(c->b, pos);
        }
    }
}

/* The same for a new channel, skipped while no failure was reported at all:
 * neither through the failure callback (which runs first) nor in ULFM's group
 * of failed processes (which grows after the callbacks ran). */
static void feed_known_failures(rbcast_chan_t *c)
{
    opal_mutex_lock(&ompi_group_afp_mutex);
    int any = ompi_group_size(ompi_group_all_failed_procs) > 0;
    opal_mutex_unlock(&ompi_group_afp_mutex);
    if (any || rbcast_gate.events > 0) scan_failures(c);
}

static void destroy_chan(rbcast_chan_t *c)
{
    if (NULL != c->b) bmg_destroy(c->b);
    OBJ_RELEASE(c->lgrp);
    OBJ_RELEASE(c->rgrp);
    free(c);
}

/* The lean tree's radix for channel c. Every member must pick the same: auto
 * decides from facts all members see alike, whether this job runs on one node
 * (the same at all its processes) and whether the channel holds processes of
 * another job (then, or across nodes: the 4-nomial tree). */
static uint32_t rbcast_radix_for(const rbcast_chan_t *c)
{
    if (rbcast_radix >= 2) return (uint32_t) rbcast_radix;
    if (rbcast_radix != 0 || c->rsize > 0 || ompi_process_info.num_local_peers + 1 != ompi_process_info.num_procs) {
        return 4;
    }
    for (uint32_t r = 0; r < c->lsize; r++) {
        if (ompi_group_get_proc_name(c->lgrp, (int) r).jobid != OMPI_PROC_MY_NAME->jobid) return 4;
    }
    return c->n < 2 ? 2 : c->n;
}

/* the first channel of comm, if it has one */
static rbcast_chan_t *first_chan(const ompi_communicator_t *comm)
{
    uint32_t i = (uint32_t) comm->c_index;
    if (i >= by_index_cap || NULL == by_index[i] || by_index[i]->comm != comm) return NULL;
    return by_index[i];
}

static rbcast_chan_t *find_chan(ompi_communicator_t *comm, uint32_t type)
{
    for (rbcast_chan_t *c = first_chan(comm); NULL != c; c = c->sib) {
        if (c->type == type) return c;
    }
    for (rbcast_chan_t *c = first_chan(comm); NULL != c; c = c->sib) {
        if (c->type == RBCAST_TYPE_UNSET) {
            c->type = type;
            return c;
        }
    }
    return NULL;
}

/* enter c (a channel of a live communicator) in by_index; -1 out of memory */
static int index_chan(rbcast_chan_t *c)
{
    uint32_t i = c->index;
    if (i >= by_index_cap) {
        uint32_t cap = by_index_cap ? by_index_cap : 64;
        while (cap <= i) cap *= 2;
        rbcast_chan_t **grown = realloc(by_index, cap * sizeof(*grown));
        if (NULL == grown) return -1;
        memset(grown + by_index_cap, 0, (cap - by_index_cap) * sizeof(*grown));
        by_index = grown;
        by_index_cap = cap;
    }
    c->sib = first_chan(c->comm);
    by_index[i] = c;
    return 0;
}

static rbcast_chan_t *get_chan(ompi_communicator_t *comm, uint32_t type)
{
    rbcast_chan_t *c = find_chan(comm, type);
    if (NULL != c) return c;
    c = calloc(1, sizeof(*c));
    if (NULL == c) return NULL;
    c->comm = comm;
    c->lgrp = comm->c_local_group;
    c->rgrp = comm->c_remote_group;
    OBJ_RETAIN(c->lgrp);
    OBJ_RETAIN(c->rgrp);
    c->index = comm->c_index;
    c->key = key_of(comm);
    c->type = type;
    c->lsize = (uint32_t) ompi_comm_size(comm);
    if (OMPI_COMM_IS_INTER(comm)) {
        c->rsize = (uint32_t) ompi_comm_remote_size(comm);
        c->first = ompi_comm_determine_first_auto(comm);
    }
    c->n = c->lsize + c->rsize;
    c->me = chan_pos(c, ompi_comm_rank(comm), 0);
    c->b = bmg_create(c->n, c->me, rbcast_lean ? BMG_VARIANT_LEAN : BMG_VARIANT_FLOOD, &core_callbacks, c);
    if (NULL == c->b) {
        destroy_chan(c);
        return NULL;
    }
    if (rbcast_lean) {
        c->radix = rbcast_radix_for(c);
        (void) bmg_set_radix(c->b, c->radix);
    }
    if (0 != index_chan(c)) {
        destroy_chan(c);
        return NULL;
    }
    feed_known_failures(c);
    return c;
}

/* ------------------------------------------------------------------------ */
/* transport                                                                 */

/* Transport: ftslide_ftnet.h's send queue (a message is one fragment). */
static void rbcast_unreachable(ftslide_out_t *o)
{
    RBCAST_OUT(20, "no endpoint for %s, message dropped", OMPI_NAME_PRINT(&o->proc->super.proc_name));
}

static void rbcast_handed(ftslide_out_t *o, size_t fragments)
{
    (void) o;
    (void) fragments;
    rbcast_nsent++;
    ftslide_killpointf((int) OMPI_PROC_MY_NAME->vpid, "bmg_sent_%llu", rbcast_nsent);
}

/* Runs the FT layer's callback of a channel whose core delivered. */
static void hand_over(rbcast_chan_t *c)
{
    if (!c->delivered || NULL == c->comm) return;
    c->delivered = 0;
    rbcast_ndelivered++;
    RBCAST_OUT(10, "comm %s: broadcast of type %u delivered", ompi_comm_print_cid(c->comm), c->type);
    ompi_comm_rbcast_message_t msg = {.cid = ompi_comm_get_local_cid(c->comm), .epoch = c->comm->c_epoch,
                                      .type = (uint8_t) c->type};
    (void) rbcast_deliver_fn(c->comm, &msg);
    ftslide_killpointf((int) OMPI_PROC_MY_NAME->vpid, "bmg_deliver_%lu", rbcast_ndelivered);
}

static void drive(void)
{
    ftslide_sendq_drain(&rbcast_q);
}

static void on_message(rbcast_chan_t *c, uint32_t src, const void *msg)
{
    if (src >= c->n) return;
    uint32_t their_radix = bmg_msg_radix(msg, BMG_MSG_SIZE);
    if (rbcast_lean && their_radix >= 2 && their_radix != c->radix && !rbcast_radix_differs_told) {
        /* harmless for delivery (each revoke runs along its origin's tree),
         * but not what the user set up: say it once */
        rbcast_radix_differs_told = 1;
        opal_output(0, "ftslide_rbcast: mpi_ft_ftslide_radix differs between processes: a revoke came with radix %u, "
                       "this process uses %u; every process should set the same value (each revoke still reaches "
                       "every survivor along its origin's tree)", their_radix, c->radix);
    }
    int rc = bmg_recv(c->b, src, msg, BMG_MSG_SIZE);
    if (BMG_OK != rc) {
        RBCAST_OUT(20, "comm %s: message from position %u refused by the core (%d)",
                  NULL == c->comm ? "(freed)" : ompi_comm_print_cid(c->comm), src, rc);
    }
    /* forward first: the FT callback (the local revoke) would delay the
     * processes below us by its own cost */
    drive();
    hand_over(c);
}

/* the communicator the header names, if this process has it */
static ompi_communicator_t *lookup(const rbcast_hdr_t *h)
{
    ompi_comm_extended_cid_t excid = {.cid_base = h->cid_base, .cid_sub = {.u64 = h->cid_sub}};
    /* the sender's c_index is ours too in the common case (an array lookup);
     * the extended CID's hash table finds the others */
    ompi_communicator_t *comm = ompi_comm_lookup(h->index);
    if (NULL == comm || !ompi_comm_cid_compare(comm, excid)) {
        comm = ompi_comm_lookup_cid(excid);
    }
    if (NULL == comm || !ompi_comm_cid_compare(comm, excid) || comm->c_epoch != h->epoch) {
        return NULL;
    }
    return comm;
}

static int was_freed(const rbcast_key_t *k)
{
    return ftslide_freed_has(&freed, k);
}

/* the detached channel of type TYPE of the communicator named K, freed here
 * (a channel set up at activation and never used takes the type), or NULL */
static rbcast_chan_t *detached_chan(const rbcast_key_t *k, uint32_t type)
{
    for (unsigned i = 0; i < RBCAST_DETACHED_MAX; i++) {
        rbcast_chan_t *c = detached[i];
        if (NULL != c && ftslide_key_eq(&c->key, k) && (c->type == type || c->type == RBCAST_TYPE_UNSET)) {
            c->type = type;
            return c;
        }
    }
    return NULL;
}

static void recv_cb(struct mca_btl_base_module_t *btl, const mca_btl_base_receive_descriptor_t *des)
{
    (void) btl;
    unsigned char buf[sizeof(rbcast_hdr_t) + BMG_MSG_SIZE];
    size_t total = 0;
    if (!rbcast_inited) {
        return; /* after finalize (the BML keeps the tag registered) */
    }
    for (size_t i = 0; i < des->des_segment_count; i++) {
        size_t l = des->des_segments[i].seg_len;
        if (total + l > sizeof(buf)) return;
        memcpy(buf + total, des->des_segments[i].seg_addr.pval, l);
        total += l;
    }
    if (total != sizeof(buf)) return;
    rbcast_hdr_t hdr;
    memcpy(&hdr, buf, sizeof(hdr));

    ompi_communicator_t *comm = lookup(&hdr);
    if (NULL != comm) {
        rbcast_chan_t *c = get_chan(comm, hdr.type);
        if (NULL != c) on_message(c, hdr.src, buf + sizeof(hdr));
        drive();
        return;
    }
    rbcast_key_t k = key_of_hdr(&hdr);
    rbcast_chan_t *d = detached_chan(&k, hdr.type);
    if (NULL != d) { /* freed here: forward it all the same, deliver to nobody */
        on_message(d, hdr.src, buf + sizeof(hdr));
        drive();
        return;
    }
    if (was_freed(&k) || 0 != ftslide_stash_put(&stash, k, buf, sizeof(buf))) {
        rbcast_ndropped++;
        RBCAST_OUT(20, "dropped a message for a communicator %s (epoch %u)",
                  was_freed(&k) ? "freed here" : "not here (stash full)", hdr.epoch);
        return;
    }
    rbcast_nstashed++;
    RBCAST_OUT(20, "kept a message for a communicator not here yet (epoch %u)", hdr.epoch);
}

/* ------------------------------------------------------------------------ */
/* failures                                                                  */

static void rank_failure(ompi_communicator_t *comm, int rank, bool remote)
{
    rbcast_gate.events++;
    for (rbcast_chan_t *c = first_chan(comm); NULL != c; c = c->sib) {
        (void) bmg_failure(c->b, chan_pos(c, rank, remote));
    }
    if (&ompi_mpi_comm_world.comm == comm) {
        /* detached channels: their communicator is gone, MPI_COMM_WORLD tells */
        for (unsigned i = 0; i < RBCAST_DETACHED_MAX; i++) {
            if (NULL != detached[i]) scan_failures(detached[i]);
        }
    }
    drive();
    ftslide_gate_pass(&rbcast_gate, comm, rank, remote);
}

/* ------------------------------------------------------------------------ */
/* entry points                                                              */

int ftslide_rbcast_init(int lean, ftslide_rbcast_deliver_fn_t deliver)
{
    if (ompi_mpi_thread_multiple) {
        RBCAST_OUT(1, "MPI_THREAD_MULTIPLE: upstream's binomial-graph diffusion carries the revoke");
        return OMPI_ERR_NOT_SUPPORTED;
    }
    rbcast_lean = lean;
    if (0 != rbcast_radix && rbcast_radix < 2) {
        opal_output(0, "ftslide_rbcast: mpi_ft_ftslide_radix %d is neither 0 (auto) nor a radix of at least 2; "
                       "using 0 (auto)", rbcast_radix);
        rbcast_radix = 0;
    }
    rbcast_deliver_fn = deliver;
    if (rbcast_inited) return OMPI_SUCCESS;
    int rc = mca_bml.bml_register(FTSLIDE_RBCAST_BTL_TAG, recv_cb, NULL);
    if (OMPI_SUCCESS != rc) {
        opal_output(0, "ftslide_rbcast: cannot register BTL tag 0x%x (%d)", FTSLIDE_RBCAST_BTL_TAG, rc);
        return rc;
    }
    ftslide_gate_open(&rbcast_gate, rank_failure);
    rbcast_inited = 1;
    return OMPI_SUCCESS;
}

int ftslide_rbcast_finalize(void)
{
    if (!rbcast_inited) return OMPI_SUCCESS;
    RBCAST_OUT(1, "%llu messages sent, %lu broadcasts delivered, %lu kept for later, %lu dropped", rbcast_nsent,
              rbcast_ndelivered, rbcast_nstashed, rbcast_ndropped);
    ftslide_gate_close(&rbcast_gate);
    /* else someone hooked after us and still calls us: leave the chain */
    for (uint32_t i = 0; i < by_index_cap; i++) {
        while (NULL != by_index[i]) {
            rbcast_chan_t *c = by_index[i];
            by_index[i] = c->sib;
            destroy_chan(c);
        }
    }
    for (unsigned i = 0; i < RBCAST_DETACHED_MAX; i++) {
        if (NULL != detached[i]) destroy_chan(detached[i]);
        detached[i] = NULL;
    }
    free(by_index);
    by_index = NULL;
    by_index_cap = 0;
    ftslide_stash_clear(&stash);
    ftslide_sendq_clear(&rbcast_q);
    rbcast_inited = 0;
    return OMPI_SUCCESS;
}

int ftslide_rbcast_bcast(ompi_communicator_t *comm, ompi_comm_rbcast_message_t *msg)
{
    rbcast_chan_t *c = get_chan(comm, msg->type);
    if (NULL == c) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    RBCAST_OUT(10, "comm %s: broadcasting type %u over %u processes (%s)", ompi_comm_print_cid(comm), c->type, c->n,
              rbcast_lean ? "lean" : "flooding");
    int rc = bmg_broadcast(c->b, 1);
    c->delivered = 0; /* the caller has delivered here already */
    drive();
    return BMG_OK == rc ? OMPI_SUCCESS : OMPI_ERR_OUT_OF_RESOURCE;
}

/* a stashed message (header + core message) for comm, which exists now */
static void replay_one(void *ctx, const void *bytes, size_t len)
{
    ompi_communicator_t *comm = (ompi_communicator_t *) ctx;
    rbcast_hdr_t hdr;
    (void) len;
    memcpy(&hdr, bytes, sizeof(hdr));
    rbcast_chan_t *c = get_chan(comm, hdr.type);
    RBCAST_OUT(20, "comm %s: replaying a message that arrived before it existed", ompi_comm_print_cid(comm));
    if (NULL != c) on_message(c, hdr.src, (const unsigned char *) bytes + sizeof(hdr));
}

void ftslide_rbcast_comm_ready(ompi_communicator_t *comm)
{
    if (!rbcast_inited) return;
    /* Set the channel up now, while the communicator is being created (which
     * costs collectives anyway), rather than on the revoke's path: the
     * revoking process would pay it before its first message and every other
     * process before it forwards and delivers. Intra-communicators; the first
     * broadcast claims it (RBCAST_TYPE_UNSET); a channel never used goes when
     * the communicator does. */
    if (!OMPI_COMM_IS_INTER(comm) && NULL == first_chan(comm)) (void) get_chan(comm, RBCAST_TYPE_UNSET);
    if (NULL == stash.head) return;
    rbcast_key_t k = key_of(comm);
    (void) ftslide_stash_replay(&stash, &k, replay_one, comm);
    drive();
}

void ftslide_rbcast_comm_freed(ompi_communicator_t *comm)
{
    if (!rbcast_inited) return;
    if (NULL == first_chan(comm)) { /* no channel (never broadcast on, not set up): only its name to keep */
        ftslide_freed_add(&freed, key_of(comm));
        return;
    }
    rbcast_chan_t *c = by_index[comm->c_index];
    by_index[comm->c_index] = NULL;
    while (NULL != c) {
        /* Peers may still need this process to forward a broadcast on the
         * communicator, whether it delivered here or not: the lean variant's
         * tree runs through it (a subtree would never hear of a revoke that
         * arrives after the free), and it bypasses a vertex that dies later.
         * Detach the channel from the communicator and keep it, the last
         * RBCAST_DETACHED_MAX of them (the oldest goes): it forwards what
         * arrives and takes failures from MPI_COMM_WORLD, and delivers to
         * nobody. */
        rbcast_chan_t *next = c->sib;
        c->sib = NULL;
        c->comm = NULL;
        if (NULL != detached[detached_next]) destroy_chan(detached[detached_next]);
        detached[detached_next] = c;
        detached_next = (detached_next + 1) % RBCAST_DETACHED_MAX;
        c = next;
    }
    ftslide_freed_add(&freed, key_of(comm));
}
