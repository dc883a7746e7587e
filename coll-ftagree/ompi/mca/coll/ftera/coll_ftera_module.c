/*
 * coll/ftera: the adapter between Open MPI and the ERA core.
 *
 * Flow of one agreement on communicator C (module m, core state m->era):
 *
 *   agree/iagree --> core_of(): the core, made at the communicator's first
 *                    agreement or first message (most communicators never
 *                    agree, and pay nothing for it)
 *                --> feed locally known failures --> era_start()
 *   BTL active message (our tag) --> era_recv()
 *   Open MPI failure callback for C --> era_failure()
 *   core send() action --> queued, then sent by drive() after the core call
 *   core decide() action --> m->decided; drive() completes the request
 *
 * The core must not be re-entered from its own callbacks, and sending a BTL
 * fragment may run the progress engine (which may deliver one of our
 * messages). So the core's send() only queues a copy; drive() sends the
 * queue outside any core call, and a nested drive() returns at once (the
 * outer one empties the queue and completes requests).
 *
 * A message longer than a BTL fragment (the eager limit, or
 * coll_ftera_fragment_size) travels in fragments that the receiver puts
 * together, in any order, before the core sees the message.
 *
 * Messages for a communicator this process has not set up yet (a peer
 * entered the agreement before we finished creating the communicator) are
 * stashed and replayed when the module is enabled; messages for a
 * communicator freed here are dropped.
 *
 * No locking: with MPI_THREAD_MULTIPLE (or progress threads) the component
 * declines every communicator and upstream's ftagree runs the agreements.
 */
#include "ompi_config.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <time.h>

#include "opal/class/opal_object.h"
#include "opal/mca/btl/btl.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"

#include "ompi/communicator/communicator.h"
#include "ompi/communicator/ft/ftslide/ftslide_ftnet.h"
#include "ompi/communicator/ft/ftslide/ftslide_killpoint.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/errhandler/errhandler.h"
#include "ompi/group/group.h"
#include "ompi/mca/bml/base/base.h"
#include "ompi/mca/bml/bml.h"
#include "ompi/mca/coll/base/base.h"
#include "ompi/mca/coll/coll.h"
#include "ompi/op/op.h"
#include "ompi/proc/proc.h"
#include "ompi/request/request.h"
#include "ompi/runtime/ompi_rte.h"
#include "ompi/runtime/params.h"

#include "coll_ftera.h"

#define FTERA_OUT(lvl, ...)                                                   \
    do {                                                                      \
        if (mca_coll_ftera_verbose >= (lvl) && mca_coll_ftera_output >= 0) {  \
            opal_output_verbose((lvl), mca_coll_ftera_output, __VA_ARGS__);   \
        }                                                                     \
    } while (0)

uint64_t mca_coll_ftera_nagree = 0, mca_coll_ftera_nsent = 0, mca_coll_ftera_nrecv = 0,
         mca_coll_ftera_nfailures = 0, mca_coll_ftera_nstashed = 0, mca_coll_ftera_nfragments = 0;
unsigned long long mca_coll_ftera_pv_minmax = 0, mca_coll_ftera_pv_fallbacks = 0, mca_coll_ftera_pv_proc_failed = 0,
                   mca_coll_ftera_pv_agree_ns = 0, mca_coll_ftera_pv_detect_ns = 0;

/* ------------------------------------------------------------------------ */
/* global state                                                             */

static int ftera_inited = 0;
static mca_coll_ftera_module_t *ftera_modules = NULL; /* live modules */
static ftslide_gate_t ftera_gate; /* our place in ompi_rank_failure_cbfunc (ftslide_ftnet.h) */

/* outgoing queue (ftslide_ftnet.h): filled by the core's send(), emptied by
 * drive(); each message is the wire header (msg_id and total set, offset per
 * fragment) and the core's bytes */
static void ftera_set_offset(unsigned char *hdr, size_t offset);
static void ftera_unreachable(ftslide_out_t *o);
static void ftera_handed(ftslide_out_t *o, size_t fragments);
static ftslide_sendq_t ftera_q = {.tag = FTSLIDE_ERA_BTL_TAG, .set_offset = ftera_set_offset,
                                  .unreachable = ftera_unreachable, .handed = ftera_handed};
static uint32_t next_msg_id = 0;

/* fragments of messages not complete yet, by (communicator, sender, msg_id) */
typedef struct ftera_partial {
    struct ftera_partial *next;
    mca_coll_ftera_wire_hdr_t hdr;
    size_t got;
    unsigned char bytes[]; /* hdr.total bytes */
} ftera_partial_t;
static ftera_partial_t *partials = NULL;
/* a message announcing more than this is malformed (a core message grows
 * with the failures: 60 + 12n bytes at most for n ranks) */
#define FTERA_MAX_MESSAGE (64u << 20)
static int in_drive = 0;

/* messages for communicators not set up here yet (wire header + core
 * message), and the names of the last communicators freed here */
static ftslide_stash_t stash = {.max = 0};
#define FTERA_FREED_RING 64
static ftslide_key_t freed_keys[FTERA_FREED_RING];
static unsigned char freed_used[FTERA_FREED_RING];
static ftslide_freed_t freed = {.keys = freed_keys, .used = freed_used, .n = FTERA_FREED_RING};

static ftslide_key_t key_of_hdr(const mca_coll_ftera_wire_hdr_t *h)
{
    ftslide_key_t k = {.cid_base = h->cid_base, .cid_sub = h->cid_sub, .epoch = h->epoch};
    return k;
}

static ftslide_key_t key_of_module(const mca_coll_ftera_module_t *m)
{
    ftslide_key_t k = {.cid_base = m->cid_base, .cid_sub = m->cid_sub, .epoch = m->epoch};
    return k;
}

static void drive(void);

/* The communicator a header names (extended CID and epoch) is m's. */
static int hdr_is_for(const mca_coll_ftera_wire_hdr_t *hdr, const mca_coll_ftera_module_t *m)
{
    return hdr->cid_base == m->cid_base && hdr->cid_sub == m->cid_sub && hdr->epoch == m->epoch;
}

/* ------------------------------------------------------------------------ */
/* members of an agreement                                                  */

/* An intra-communicator's members are its ranks. An inter-communicator's are
 * both groups: the first group (ompi_comm_determine_first_auto()) at
 * positions 0..n1-1, the other after it, numbered alike at every member. */
static uint32_t member_count(const mca_coll_ftera_module_t *m)
{
    return m->lsize + m->rsize;
}

/* the position of rank `rank` of the local (remote = 0) or remote group */
static uint32_t member_pos(const mca_coll_ftera_module_t *m, int rank, int remote)
{
    if (0 == m->rsize) return (uint32_t) rank;
    int in_first = remote ? !m->local_first : m->local_first;
    uint32_t nfirst = m->local_first ? m->lsize : m->rsize;
    return in_first ? (uint32_t) rank : nfirst + (uint32_t) rank;
}

/* the group holding position pos, and pos's rank in it */
static ompi_group_t *member_group(const mca_coll_ftera_module_t *m, uint32_t pos, int *rank)
{
    if (0 == m->rsize) {
        *rank = (int) pos;
        return m->comm->c_local_group;
    }
    uint32_t nfirst = m->local_first ? m->lsize : m->rsize;
    int in_first = pos < nfirst;
    *rank = (int) (in_first ? pos : pos - nfirst);
    return (in_first == m->local_first) ? m->comm->c_local_group : m->comm->c_remote_group;
}

static ompi_proc_t *member_proc(const mca_coll_ftera_module_t *m, uint32_t pos, bool create)
{
    int rank;
    ompi_group_t *g = member_group(m, pos, &rank);
    return ompi_group_get_proc_ptr(g, rank, create);
}

/* the position of a process given by its rank in group g, or -1 if it is
 * not a member */
static int member_pos_of(const mca_coll_ftera_module_t *m, ompi_group_t *g, int rank)
{
    int rk = MPI_UNDEFINED;
    ompi_group_translate_ranks(g, 1, &rank, m->comm->c_local_group, &rk);
    if (MPI_UNDEFINED != rk && rk >= 0) return (int) member_pos(m, rk, 0);
    if (0 == m->rsize) return -1;
    ompi_group_translate_ranks(g, 1, &rank, m->comm->c_remote_group, &rk);
    if (MPI_UNDEFINED != rk && rk >= 0) return (int) member_pos(m, rk, 1);
    return -1;
}

/* the group of the given positions (the agreed failed set), numbered as
 * the members are */
static int member_subgroup(const mca_coll_ftera_module_t *m, int n, int *pos, ompi_group_t **out)
{
    if (0 == m->rsize) return ompi_group_incl(m->comm->c_local_group, n, pos, out);
    ompi_group_t *all = NULL;
    ompi_group_t *first = m->local_first ? m->comm->c_local_group : m->comm->c_remote_group;
    ompi_group_t *second = m->local_first ? m->comm->c_remote_group : m->comm->c_local_group;
    int rc = ompi_group_union(first, second, &all); /* disjoint groups: union positions are member positions */
    if (OMPI_SUCCESS != rc) return rc;
    rc = ompi_group_incl(all, n, pos, out);
    OBJ_RELEASE(all);
    return rc;
}

static uint64_t ftera_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

/* A failure was fed to m's core: the first one during an agreement ends the
 * wait for the failure detector (breakdown counter detect_ns). */
static void note_failure(mca_coll_ftera_module_t *m)
{
    if (NULL != m->req && 0 == m->t_failure_ns) {
        m->t_failure_ns = ftera_now_ns();
    }
}

/* MPI ops the core decides on one int (era_flag_of_int() says how the int
 * travels in the core's 64-bit flag) */
static int ftera_op_of(const ompi_op_t *op, era_op_t *out)
{
    if (&ompi_mpi_op_band.op == op) *out = ERA_OP_BAND;
    else if (&ompi_mpi_op_bor.op == op) *out = ERA_OP_BOR;
    else if (&ompi_mpi_op_max.op == op) *out = ERA_OP_MAX;
    else if (&ompi_mpi_op_min.op == op) *out = ERA_OP_MIN;
    else return 0;
    return 1;
}

/* which side of the agreement this process is on (era_side_t) */
static era_side_t ftera_side(const mca_coll_ftera_module_t *m)
{
    if (0 == m->rsize) return ERA_SIDE_ALL;
    return m->local_first ? ERA_SIDE_FIRST : ERA_SIDE_SECOND;
}

static double ftera_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec * 1e3 + (double) ts.tv_nsec / 1e6;
}

/* Test hook for the replay of early messages: FTSLIDE_FTERA_LATE_ENABLE="R:MS"
 * makes world rank R run the progress engine for MS milliseconds before it
 * sets up each new communicator's agreement, so that the peers' first
 * messages arrive before the module exists and are stashed. */
static int ftera_late_rank = -1;
static long ftera_late_ms = 0;

static void ftera_parse_late_enable(void)
{
    const char *spec = getenv("FTSLIDE_FTERA_LATE_ENABLE");
    int r;
    long ms;
    if (NULL != spec && 2 == sscanf(spec, "%d:%ld", &r, &ms) && ms > 0) {
        ftera_late_rank = r;
        ftera_late_ms = ms;
    }
}

/* ------------------------------------------------------------------------ */
/* module and request classes                                               */

static void ftera_module_construct(mca_coll_ftera_module_t *m)
{
    m->comm = NULL;
    m->lsize = m->rsize = 0;
    m->local_first = 1;
    m->era = NULL;
    m->cid_base = m->cid_sub = 0;
    m->epoch = 0;
    m->registered = 0;
    m->next = NULL;
    m->req = NULL;
    m->qhead = m->qtail = NULL;
    m->req_inst = 0;
    m->decided = 0;
    m->fallback_agree = NULL;
    m->fallback_agree_module = NULL;
    m->fallback_iagree = NULL;
    m->fallback_iagree_module = NULL;
    m->failures_seen = 0; /* the clock is 0 until a failure is reported: nothing to scan before */
}

static void ftera_complete(mca_coll_ftera_module_t *m, int force_error);
static void ftera_fail_request(mca_coll_ftera_request_t *r, int err);

static void ftera_module_destruct(mca_coll_ftera_module_t *m)
{
    while (NULL != m->qhead) {
        mca_coll_ftera_request_t *q = m->qhead;
        m->qhead = q->qnext;
        ftera_fail_request(q, MPI_ERR_COMM);
    }
    m->qtail = NULL;
    if (NULL != m->req) {
        /* communicator freed with an agreement pending: it cannot complete */
        ftera_complete(m, MPI_ERR_COMM);
    }
    if (m->registered) {
        mca_coll_ftera_module_t **pp = &ftera_modules;
        while (*pp && *pp != m) pp = &(*pp)->next;
        if (*pp) *pp = m->next;
        m->registered = 0;
        ftslide_freed_add(&freed, key_of_module(m));
    }
    /* drop partly received messages for this communicator */
    ftera_partial_t **pp = &partials;
    while (*pp) {
        if (hdr_is_for(&(*pp)->hdr, m)) {
            ftera_partial_t *dead = *pp;
            *pp = dead->next;
            free(dead);
        } else {
            pp = &(*pp)->next;
        }
    }
    /* drop queued messages of this module */
    ftslide_sendq_drop_owner(&ftera_q, m);
    if (NULL != m->era) {
        era_destroy(m->era);
        m->era = NULL;
    }
    if (NULL != m->fallback_agree_module) {
        OBJ_RELEASE(m->fallback_agree_module);
    }
    if (NULL != m->fallback_iagree_module) {
        OBJ_RELEASE(m->fallback_iagree_module);
    }
}

OBJ_CLASS_INSTANCE(mca_coll_ftera_module_t, mca_coll_base_module_t, ftera_module_construct,
                   ftera_module_destruct);

static void ftera_request_construct(mca_coll_ftera_request_t *r)
{
    r->module = NULL;
    r->contrib = NULL;
    r->outgroup = NULL;
    r->flag = 0;
    r->kind = 0;
    r->acked = NULL;
    r->nacked = 0;
    r->qnext = NULL;
}

OBJ_CLASS_INSTANCE(mca_coll_ftera_request_t, ompi_request_t, ftera_request_construct, NULL);

static int ftera_request_free(ompi_request_t **rptr)
{
    mca_coll_ftera_request_t *r = (mca_coll_ftera_request_t *) *rptr;
    /* The module holds its own reference while the agreement is pending, so
     * freeing an active request (MPI_Request_free) is safe. */
    if (NULL == r->module) {
        OMPI_REQUEST_FINI(&r->super);
    }
    OBJ_RELEASE(r);
    *rptr = MPI_REQUEST_NULL;
    return OMPI_SUCCESS;
}

static int ftera_request_cancel(ompi_request_t *req, int complete)
{
    (void) req;
    (void) complete;
    return OMPI_SUCCESS; /* an agreement cannot be cancelled: no effect */
}

/* ------------------------------------------------------------------------ */
/* core callbacks                                                            */

static void core_send(void *ctx, uint32_t dest, const void *msg, size_t len)
{
    mca_coll_ftera_module_t *m = (mca_coll_ftera_module_t *) ctx;
    mca_coll_ftera_wire_hdr_t hdr = {.cid_base = m->cid_base, .cid_sub = m->cid_sub, .epoch = m->epoch,
                                     .src = member_pos(m, ompi_comm_rank(m->comm), 0), .msg_id = next_msg_id++,
                                     .total = (uint32_t) len};
    ompi_proc_t *peer = member_proc(m, dest, true);
    if (NULL == ftslide_sendq_push(&ftera_q, peer, m, dest, &hdr, sizeof(hdr), msg, len)) {
        opal_output(0, "coll:ftera: out of memory queueing a message to rank %u; it is lost", dest);
    }
}

static void core_decide(void *ctx, const era_result_t *res)
{
    mca_coll_ftera_module_t *m = (mca_coll_ftera_module_t *) ctx;
    m->decided = 1;
    FTERA_OUT(10, "coll:ftera: comm %s rank %d decided instance %" PRIu64 ": flag 0x%08x, %s, %u failed%s",
              ompi_comm_print_cid(m->comm), ompi_comm_rank(m->comm), res->inst,
              (unsigned) (res->flag & 0xffffffffu), res->proc_failed ? "PROC_FAILED" : "success",
              res->nfailed, res->kind_conflict ? ", callers' kinds conflict" : "");
}

static const era_callbacks_t core_callbacks = {.send = core_send, .decide = core_decide};

/* ------------------------------------------------------------------------ */
/* transport                                                                 */

/* Transport (ftslide_ftnet.h's send queue): a fragment's header carries its
 * offset; a peer without an endpoint is reported to the core as failed. */
static void ftera_set_offset(unsigned char *hdr, size_t offset)
{
    uint32_t off = (uint32_t) offset;
    memcpy(hdr + offsetof(mca_coll_ftera_wire_hdr_t, offset), &off, sizeof(off));
}

static void ftera_unreachable(ftslide_out_t *o)
{
    mca_coll_ftera_module_t *m = (mca_coll_ftera_module_t *) o->owner;
    FTERA_OUT(20, "coll:ftera: comm %s: no endpoint for rank %u, taken as failed", ompi_comm_print_cid(m->comm),
              o->dest);
    mca_coll_ftera_nfailures++;
    era_failure(m->era, o->dest);
    note_failure(m);
}

static void ftera_handed(ftslide_out_t *o, size_t fragments)
{
    mca_coll_ftera_nfragments += fragments;
    mca_coll_ftera_nsent++;
    FTERA_OUT(30, "coll:ftera: sent %zu bytes to rank %u", o->len, o->dest);
    /* Fault injection for the tests: FTSLIDE_KILL="R@ftera_sent_N" kills world
     * rank R right after its N-th agreement message went to the BTL. */
    ftslide_killpointf((int) OMPI_PROC_MY_NAME->vpid, "ftera_sent_%" PRIu64, mca_coll_ftera_nsent);
}

/* Start r's agreement in the core; r becomes m's current request. */
static void feed_known_failures(mca_coll_ftera_module_t *m);

/* r's acknowledged ranks are no longer needed (the core copied them) */
static void release_acked(mca_coll_ftera_request_t *r)
{
    if (r->acked != r->acked_inline) free(r->acked);
    r->acked = NULL;
}

/* The call kind of an agreement (era_start_kind): what the caller asked
 * for, so that processes that entered the same instance from different calls
 * are told apart. MPIX_Comm_agree/iagree pass no group to update; Open MPI's
 * internal callers (the shrink, the context-id allocation, the
 * inter-communicator merge) do; and the op separates the shrink's AND from
 * the context-id allocation's MAX and MIN. An agree on one side of an
 * inter-communicator and a shrink on the other thus have kinds 0 and 1. */
static uint32_t ftera_kind(era_op_t op, bool grp_update)
{
    return (uint32_t) op * 2u + (grp_update ? 1u : 0u);
}

static int ftera_start(mca_coll_ftera_module_t *m, mca_coll_ftera_request_t *r)
{
    feed_known_failures(m);
    uint64_t inst = 0;
    m->t_start_ns = ftera_now_ns();
    m->t_failure_ns = 0;
    int rc = era_start_kind(m->era, r->op, r->kind, r->flag, r->acked, r->nacked, &inst);
    uint32_t nacked = r->nacked;
    release_acked(r);
    if (ERA_OK != rc) {
        return (ERA_EBUSY == rc) ? MPI_ERR_PENDING : MPI_ERR_INTERN;
    }
    mca_coll_ftera_nagree++;
    if (ERA_OP_BAND != r->op) mca_coll_ftera_pv_minmax++;
    FTERA_OUT(10, "coll:ftera: comm %s rank %d starts instance %" PRIu64 " with 0x%08x, %u acked",
              ompi_comm_print_cid(m->comm), ompi_comm_rank(m->comm), inst, (unsigned) (r->flag & 0xffffffffu),
              nacked);
    m->req = r;
    m->req_inst = inst;
    m->decided = (era_last_decided(m->era) >= inst);
    return MPI_SUCCESS;
}

/* Complete the pending request of m from the core's decision (or with
 * force_error when the communicator goes away). */
static void ftera_complete(mca_coll_ftera_module_t *m, int force_error)
{
    mca_coll_ftera_request_t *r = m->req;
    int err = MPI_SUCCESS;

    m->req = NULL;
    if (force_error) {
        err = force_error;
    } else {
        uint64_t flag = 0;
        int proc_failed = 0;
        const uint32_t *failed = NULL;
        uint32_t nfailed = 0;
        int kind_conflict = 0;
        int rc = era_test(m->era, m->req_inst, &flag, &proc_failed, &failed, &nfailed, &kind_conflict);
        if (1 != rc) {
            err = MPI_ERR_INTERN;
        } else {
            /* The uniform error tells MPIX_Comm_agree's caller that a failure it did
             * not acknowledge was agreed. Open MPI's internal callers (the shrink,
             * the context-id allocation) ask for the agreed failed set instead
             * (outgroup) and, on MPI_ERR_PROC_FAILED, only run the agreement again
             * with that set to get a success: they get the set and the value now,
             * the same at every survivor, without that extra round. */
            err = (proc_failed && NULL == r->outgroup) ? MPI_ERR_PROC_FAILED : MPI_SUCCESS;
            if (kind_conflict) {
                /* The callers disagree on the call (an agree here, a shrink
                 * there): every process of the instance learns it alike and
                 * completes with MPI_ERR_OTHER, its int and failed group left
                 * as they were, so that a shrink stops before its context-id
                 * allocation instead of waiting there for partners that never
                 * come. Not MPI_ERR_ARG: a process whose own call was valid
                 * gets it too; what is wrong is the collective as a whole.
                 * The agreed failures hold all the same (below). */
                err = MPI_ERR_OTHER;
                FTERA_OUT(1, "coll:ftera: comm %s rank %d: the members entered agreement %" PRIu64
                          " from different calls (agree, shrink, ...): MPI_ERR_OTHER everywhere",
                          ompi_comm_print_cid(m->comm), ompi_comm_rank(m->comm), m->req_inst);
            } else if (NULL != r->contrib) {
                *r->contrib = era_int_of_flag(r->op, ftera_side(m), flag);
            }
            uint64_t now = ftera_now_ns();
            mca_coll_ftera_pv_agree_ns += now - m->t_start_ns;
            if (0 != m->t_failure_ns) mca_coll_ftera_pv_detect_ns += m->t_failure_ns - m->t_start_ns;
            if (proc_failed) mca_coll_ftera_pv_proc_failed++;
            int *ranks = NULL;
            if (nfailed > 0) {
                ranks = malloc(nfailed * sizeof(int));
                if (NULL == ranks) {
                    err = MPI_ERR_NO_MEM;
                    nfailed = 0;
                }
                for (uint32_t i = 0; i < nfailed; i++) ranks[i] = (int) failed[i];
            }
            /* a rank the others saw fail is failed here too (the shrink's
             * new group and later operations must not wait for it) */
            for (uint32_t i = 0; i < nfailed; i++) {
                ompi_proc_t *p = member_proc(m, (uint32_t) ranks[i], true);
                if (NULL != p && ompi_proc_is_active(p)) {
                    ompi_errhandler_proc_failed(p);
                }
            }
            if (NULL != r->outgroup && !kind_conflict) {
                ompi_group_t *g = NULL;
                if (NULL != *r->outgroup) {
                    OBJ_RELEASE(*r->outgroup);
                }
                if (nfailed > 0) {
                    member_subgroup(m, (int) nfailed, ranks, &g);
                } else {
                    g = MPI_GROUP_EMPTY;
                    OBJ_RETAIN(g);
                }
                *r->outgroup = g;
            }
            free(ranks);
        }
    }
    r->module = NULL;
    r->super.req_status.MPI_ERROR = err;
    ompi_request_complete(&r->super, true);
    OBJ_RELEASE(r); /* the module's reference */

    /* the next agreement called on this communicator, if any */
    while (!force_error && NULL == m->req && NULL != m->qhead) {
        mca_coll_ftera_request_t *q = m->qhead;
        m->qhead = q->qnext;
        if (NULL == m->qhead) m->qtail = NULL;
        q->qnext = NULL;
        int rc = ftera_start(m, q);
        if (MPI_SUCCESS != rc) ftera_fail_request(q, rc);
    }
}

/* Complete a request that never reached the core (or cannot finish). */
static void ftera_fail_request(mca_coll_ftera_request_t *r, int err)
{
    release_acked(r);
    r->module = NULL;
    r->super.req_status.MPI_ERROR = err;
    ompi_request_complete(&r->super, true);
    OBJ_RELEASE(r); /* the module's reference */
}

static void drive(void)
{
    if (in_drive) return;
    in_drive = 1;
    for (;;) {
        ftslide_sendq_drain(&ftera_q);
        int completed = 0;
        for (mca_coll_ftera_module_t *m = ftera_modules; NULL != m; m = m->next) {
            if (m->decided) {
                m->decided = 0;
                if (NULL != m->req && era_last_decided(m->era) >= m->req_inst) {
                    ftera_complete(m, 0);
                    completed = 1;
                    break; /* completion may have changed the list */
                }
            }
        }
        if (!completed && NULL == ftera_q.head) break;
    }
    in_drive = 0;
}

static mca_coll_ftera_module_t *find_module(const mca_coll_ftera_wire_hdr_t *hdr)
{
    for (mca_coll_ftera_module_t *m = ftera_modules; NULL != m; m = m->next) {
        if (hdr_is_for(hdr, m)) return m;
    }
    return NULL;
}

static era_t *core_of(mca_coll_ftera_module_t *m);

static void deliver(mca_coll_ftera_module_t *m, uint32_t src, const void *msg, size_t len)
{
    if (src >= member_count(m)) return;
    if (NULL == core_of(m)) {
        opal_output(0, "coll:ftera: out of memory setting up the agreement of comm %s; a message from rank %u is lost",
                    ompi_comm_print_cid(m->comm), src);
        return;
    }
    int rc = era_recv(m->era, src, msg, len);
    if (ERA_OK != rc) {
        FTERA_OUT(20, "coll:ftera: comm %s: message from rank %u rejected by the core (%d)",
                  ompi_comm_print_cid(m->comm), src, rc);
    }
}

/* A whole core message from hdr->src: to its module, kept for a module not
 * set up yet, or dropped for a communicator freed here. */
static void accept_message(const mca_coll_ftera_wire_hdr_t *hdr, const unsigned char *msg, size_t len)
{
    mca_coll_ftera_nrecv++;
    mca_coll_ftera_module_t *m = find_module(hdr);
    if (NULL != m) {
        FTERA_OUT(30, "coll:ftera: comm %s: received %zu bytes from rank %u", ompi_comm_print_cid(m->comm), len,
                  hdr->src);
        deliver(m, hdr->src, msg, len);
        drive();
        return;
    }
    ftslide_key_t key = key_of_hdr(hdr);
    if (ftslide_freed_has(&freed, &key)) {
        return;
    }
    unsigned char *both = malloc(sizeof(*hdr) + len);
    if (NULL == both) return;
    memcpy(both, hdr, sizeof(*hdr));
    memcpy(both + sizeof(*hdr), msg, len);
    int kept = ftslide_stash_put(&stash, key, both, sizeof(*hdr) + len);
    free(both);
    if (0 != kept) return;
    mca_coll_ftera_nstashed++;
    FTERA_OUT(20, "coll:ftera: stashed a message from rank %u for a communicator not set up yet", hdr->src);
}

/* A fragment of a longer message: put it in place; accept the message once
 * every byte is there. Fragments may come in any order. */
static void add_fragment(const mca_coll_ftera_wire_hdr_t *hdr, const unsigned char *data, size_t len)
{
    if (hdr->total > FTERA_MAX_MESSAGE || hdr->offset > hdr->total || len > hdr->total - hdr->offset) {
        FTERA_OUT(20, "coll:ftera: malformed fragment from rank %u dropped", hdr->src);
        return;
    }
    ftera_partial_t **pp = &partials;
    while (*pp && !((*pp)->hdr.cid_base == hdr->cid_base && (*pp)->hdr.cid_sub == hdr->cid_sub &&
                    (*pp)->hdr.epoch == hdr->epoch && (*pp)->hdr.src == hdr->src && (*pp)->hdr.msg_id == hdr->msg_id)) {
        pp = &(*pp)->next;
    }
    ftera_partial_t *p = *pp;
    if (NULL == p) {
        p = malloc(sizeof(*p) + hdr->total);
        if (NULL == p) return;
        p->hdr = *hdr;
        p->got = 0;
        p->next = NULL;
        *pp = p;
    } else if (p->hdr.total != hdr->total) {
        FTERA_OUT(20, "coll:ftera: fragment from rank %u disagrees on the length, dropped", hdr->src);
        return;
    }
    memcpy(p->bytes + hdr->offset, data, len);
    p->got += len;
    if (p->got < p->hdr.total) return;
    *pp = p->next;
    accept_message(&p->hdr, p->bytes, p->hdr.total);
    free(p);
}

static void ftera_recv_cb(struct mca_btl_base_module_t *btl, const mca_btl_base_receive_descriptor_t *des)
{
    (void) btl;
    size_t total = 0;
    for (size_t i = 0; i < des->des_segment_count; i++) total += des->des_segments[i].seg_len;
    if (total < sizeof(mca_coll_ftera_wire_hdr_t)) return;

    unsigned char *buf;
    unsigned char *copy = NULL;
    if (1 == des->des_segment_count) {
        buf = (unsigned char *) des->des_segments[0].seg_addr.pval;
    } else {
        copy = malloc(total);
        if (NULL == copy) return;
        size_t off = 0;
        for (size_t i = 0; i < des->des_segment_count; i++) {
            memcpy(copy + off, des->des_segments[i].seg_addr.pval, des->des_segments[i].seg_len);
            off += des->des_segments[i].seg_len;
        }
        buf = copy;
    }
    mca_coll_ftera_wire_hdr_t hdr;
    memcpy(&hdr, buf, sizeof(hdr));
    const unsigned char *data = buf + sizeof(hdr);
    size_t len = total - sizeof(hdr);
    if (0 == hdr.offset && len == hdr.total) {
        accept_message(&hdr, data, len); /* whole: the usual case */
    } else {
        add_fragment(&hdr, data, len);
    }
    free(copy);
}

/* ------------------------------------------------------------------------ */
/* failures                                                                  */

static void ftera_rank_failure(ompi_communicator_t *comm, int rank, bool remote)
{
    ftera_gate.events++;
    for (mca_coll_ftera_module_t *m = ftera_modules; NULL != m; m = m->next) {
        if (m->comm != comm) continue;
        int size = remote ? ompi_comm_remote_size(comm) : ompi_comm_size(comm);
        if (NULL != m->era && rank >= 0 && rank < size && (remote || rank != ompi_comm_rank(comm))) {
            /* (a module without its core yet learns the failure when the core is made) */
            FTERA_OUT(20, "coll:ftera: comm %s: %s rank %d failed", ompi_comm_print_cid(comm),
                      remote ? "remote" : "local", rank);
            mca_coll_ftera_nfailures++;
            era_failure(m->era, member_pos(m, rank, remote));
            note_failure(m);
            drive();
        }
        break;
    }
    ftslide_gate_pass(&ftera_gate, comm, rank, remote);
}

/* Tell the core about every rank of comm already known failed here. The scan
 * is O(size of comm); it runs only when a failure was reported since the
 * last one (the failure callback feeds the failures of communicators with a
 * core one by one), so a failure-free agreement, and the first agreement of
 * a communicator in a job that has seen no failure, cost O(1) here. */
static void feed_known_failures(mca_coll_ftera_module_t *m)
{
    uint64_t now = ftslide_gate_clock(&ftera_gate);
    if (now == m->failures_seen) return;
    m->failures_seen = now;
    int me = ompi_comm_rank(m->comm);
    for (int remote = 0; remote <= (0 != m->rsize); remote++) {
        int n = remote ? (int) m->rsize : (int) m->lsize;
        for (int r = 0; r < n; r++) {
            if ((remote || r != me) && !ompi_comm_is_proc_active(m->comm, r, remote)) {
                era_failure(m->era, member_pos(m, r, remote));
                note_failure(m);
            }
        }
    }
}

/* ------------------------------------------------------------------------ */
/* agree / iagree                                                            */

static int ftera_iagree(void *contrib, int dt_count, ompi_datatype_t *dt, ompi_op_t *op, ompi_group_t **group,
                        bool grp_update, ompi_communicator_t *comm, ompi_request_t **request,
                        mca_coll_base_module_t *module)
{
    mca_coll_ftera_module_t *m = (mca_coll_ftera_module_t *) module;

    /* MPIX_Comm_agree/iagree and the shrink agree on one int with bitwise
     * AND, Open MPI's context-id allocation (the shrink's, MPI_Finalize's)
     * on one int with MAX and MIN: the core decides all of them. Anything
     * else goes to the next component. */
    era_op_t eop = ERA_OP_BAND;
    if (1 != dt_count || &ompi_mpi_int.dt != dt || !ftera_op_of(op, &eop)) {
        if (NULL == m->fallback_iagree) return MPI_ERR_UNSUPPORTED_OPERATION;
        mca_coll_ftera_pv_fallbacks++;
        FTERA_OUT(10, "coll:ftera: comm %s: %d ints with op %s handed to the next agreement component",
                  ompi_comm_print_cid(comm), dt_count, op->o_name);
        return m->fallback_iagree(contrib, dt_count, dt, op, group, grp_update, comm, request,
                                  m->fallback_iagree_module);
    }
    if (NULL == m->comm) {
        return MPI_ERR_INTERN;
    }
    if (NULL == core_of(m)) {
        return MPI_ERR_NO_MEM;
    }
    mca_coll_ftera_request_t *r = OBJ_NEW(mca_coll_ftera_request_t);
    if (NULL == r) {
        return MPI_ERR_NO_MEM;
    }
    /* the failures this caller acknowledges (agree) or knows of (shrink), as
     * member positions; a few of them need no allocation */
    int gsize = (NULL != group && NULL != *group) ? ompi_group_size(*group) : 0;
    if (gsize > 0) {
        r->acked = gsize <= 8 ? r->acked_inline : malloc((size_t) gsize * sizeof(uint32_t));
        if (NULL == r->acked) {
            OBJ_RELEASE(r);
            return MPI_ERR_NO_MEM;
        }
        if (0 == m->rsize) {
            /* one translation for the whole group (the common case) */
            int in_small[32];
            int *in = gsize <= 16 ? in_small : malloc(2 * (size_t) gsize * sizeof(int));
            if (NULL == in) {
                release_acked(r);
                OBJ_RELEASE(r);
                return MPI_ERR_NO_MEM;
            }
            for (int i = 0; i < gsize; i++) in[i] = i;
            ompi_group_translate_ranks(*group, gsize, in, comm->c_local_group, in + gsize);
            for (int i = 0; i < gsize; i++) {
                int rk = in[gsize + i];
                if (MPI_UNDEFINED != rk && rk >= 0 && rk < ompi_comm_size(comm)) r->acked[r->nacked++] = (uint32_t) rk;
            }
            if (in != in_small) free(in);
        } else {
            for (int i = 0; i < gsize; i++) {
                int pos = member_pos_of(m, *group, i);
                if (pos >= 0) r->acked[r->nacked++] = (uint32_t) pos;
            }
        }
    }

    OMPI_REQUEST_INIT(&r->super, false);
    r->super.req_state = OMPI_REQUEST_ACTIVE;
    r->super.req_type = OMPI_REQUEST_COLL;
    r->super.req_status.MPI_SOURCE = MPI_ANY_SOURCE;
    r->super.req_status.MPI_TAG = MPI_ANY_TAG;
    r->super.req_status.MPI_ERROR = MPI_SUCCESS;
    r->super.req_status._ucount = 0;
    r->super.req_status._cancelled = 0;
    r->super.req_mpi_object.comm = comm;
    r->super.req_free = ftera_request_free;
    r->super.req_cancel = ftera_request_cancel;
    r->module = m;
    r->contrib = (int *) contrib;
    r->outgroup = grp_update ? group : NULL;
    r->op = eop;
    r->kind = ftera_kind(eop, grp_update);
    r->flag = era_flag_of_int(eop, ftera_side(m), *(int32_t *) contrib);

    OBJ_RETAIN(r); /* the module's reference, dropped at completion */
    if (NULL != m->req) {
        /* an agreement is in progress on this communicator: this one starts
         * when it has decided here (every process starts them in call order) */
        if (m->qtail) m->qtail->qnext = r; else m->qhead = r;
        m->qtail = r;
        FTERA_OUT(10, "coll:ftera: comm %s: agreement queued behind instance %" PRIu64, ompi_comm_print_cid(comm),
                  m->req_inst);
    } else {
        int rc = ftera_start(m, r);
        if (MPI_SUCCESS != rc) {
            r->module = NULL;
            OBJ_RELEASE(r);
            OMPI_REQUEST_FINI(&r->super);
            OBJ_RELEASE(r);
            return rc;
        }
    }
    *request = &r->super;
    drive();
    return MPI_SUCCESS;
}

static int ftera_agree(void *contrib, int dt_count, ompi_datatype_t *dt, ompi_op_t *op, ompi_group_t **group,
                       bool grp_update, ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_ftera_module_t *m = (mca_coll_ftera_module_t *) module;
    era_op_t eop;
    if ((1 != dt_count || &ompi_mpi_int.dt != dt || !ftera_op_of(op, &eop)) && NULL != m->fallback_agree) {
        mca_coll_ftera_pv_fallbacks++;
        return m->fallback_agree(contrib, dt_count, dt, op, group, grp_update, comm, m->fallback_agree_module);
    }
    ompi_request_t *req = NULL;
    int rc = ftera_iagree(contrib, dt_count, dt, op, group, grp_update, comm, &req, module);
    if (MPI_SUCCESS != rc) return rc;
    ompi_request_wait_completion(req);
    rc = req->req_status.MPI_ERROR;
    ompi_request_free(&req);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* component / module set-up                                                 */

static bool ftera_threads = false;

int mca_coll_ftera_init_query(bool enable_progress_threads, bool enable_mpi_threads)
{
    /* The adapter has no locking (see the top of this file): with
     * MPI_THREAD_MULTIPLE or progress threads it steps aside and upstream's
     * ftagree provides the agreement. */
    ftera_threads = enable_progress_threads || enable_mpi_threads;
    if (!ompi_ftmpi_enabled) {
        return OMPI_SUCCESS; /* comm_query declines: nothing to hook */
    }
    if (ftera_inited) return OMPI_SUCCESS;
    int rc = mca_bml.bml_register(FTSLIDE_ERA_BTL_TAG, ftera_recv_cb, NULL);
    if (OMPI_SUCCESS != rc) {
        opal_output(0, "coll:ftera: cannot register BTL tag 0x%x (%d); the component disables itself",
                    FTSLIDE_ERA_BTL_TAG, rc);
        return rc;
    }
    ftslide_gate_open(&ftera_gate, ftera_rank_failure);
    ftera_q.fragment_limit = mca_coll_ftera_fragment_size > 0 ? (size_t) mca_coll_ftera_fragment_size : 0;
    ftera_parse_late_enable();
    ftera_inited = 1;
    return OMPI_SUCCESS;
}

int mca_coll_ftera_finalize(void)
{
    if (mca_coll_ftera_verbose >= 1 && mca_coll_ftera_output >= 0 && ftera_inited) {
        opal_output(mca_coll_ftera_output,
                    "coll:ftera: %" PRIu64 " agreements, %" PRIu64 " messages sent in %" PRIu64 " fragments (%"
                    PRIu64 " inline), %" PRIu64 " received, %" PRIu64 " failures fed, %" PRIu64 " stashed",
                    mca_coll_ftera_nagree, mca_coll_ftera_nsent, mca_coll_ftera_nfragments, ftera_q.inlined,
                    mca_coll_ftera_nrecv,
                    mca_coll_ftera_nfailures, mca_coll_ftera_nstashed);
    }
    ftslide_gate_close(&ftera_gate);
    /* else another component hooked after us and still calls us: leave the
     * chain intact (the component is linked into libmpi, never unloaded) */
    ftslide_stash_clear(&stash);
    ftslide_sendq_clear(&ftera_q);
    while (NULL != partials) {
        ftera_partial_t *p = partials;
        partials = p->next;
        free(p);
    }
    return OMPI_SUCCESS;
}

/* The tree of comm's agreements. Every member must pick the same: with "auto"
 * the answer depends only on facts every member sees alike (whether the
 * communicator holds processes of other jobs, and whether this job runs on
 * one node, which is the same at all its processes). */
static era_tree_t ftera_tree_for(ompi_communicator_t *comm)
{
    if (MCA_COLL_FTERA_TREE_AUTO != mca_coll_ftera_tree) {
        return (era_tree_t) mca_coll_ftera_tree;
    }
    if (ompi_process_info.num_local_peers + 1 != ompi_process_info.num_procs) {
        return ERA_TREE_BINOMIAL;
    }
    if (OMPI_COMM_IS_INTER(comm)) {
        for (int r = 0; r < ompi_comm_remote_size(comm); r++) {
            if (ompi_group_get_proc_name(comm->c_remote_group, r).jobid != OMPI_PROC_MY_NAME->jobid) {
                return ERA_TREE_BINOMIAL;
            }
        }
    }
    for (int r = 0; r < ompi_comm_size(comm); r++) {
        if (ompi_group_get_proc_name(comm->c_local_group, r).jobid != OMPI_PROC_MY_NAME->jobid) {
            return ERA_TREE_BINOMIAL;
        }
    }
    return ERA_TREE_KNOMIAL4;
}

/* a stashed message (wire header + core message) for m, which is set up now */
static void replay_one(void *ctx, const void *bytes, size_t len)
{
    mca_coll_ftera_wire_hdr_t hdr;
    memcpy(&hdr, bytes, sizeof(hdr));
    deliver((mca_coll_ftera_module_t *) ctx, hdr.src, (const unsigned char *) bytes + sizeof(hdr),
            len - sizeof(hdr));
}

/* m's core, made at the first call (an agreement, or a message for it): the
 * tree, the state, and the failures this process already knows of. NULL if
 * memory runs out. */
static era_t *core_of(mca_coll_ftera_module_t *m)
{
    if (NULL != m->era) return m->era;
    uint32_t n = member_count(m), me = member_pos(m, ompi_comm_rank(m->comm), 0);
    era_tree_t tree = ftera_tree_for(m->comm);
    m->era = era_create(n, me, (era_mode_t) mca_coll_ftera_mode, tree, NULL, 0,
                        &core_callbacks, m);
    if (NULL == m->era) return NULL;
    FTERA_OUT(10, "coll:ftera: comm %s: %u members%s, %s tree, here position %u", ompi_comm_print_cid(m->comm), n,
              0 != m->rsize ? " (both groups of an inter-communicator)" : "", era_tree_name(tree), me);
    feed_known_failures(m);
    return m->era;
}

static int ftera_module_enable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm)
{
    mca_coll_ftera_module_t *m = (mca_coll_ftera_module_t *) module;
    int n = ompi_comm_size(comm) + (OMPI_COMM_IS_INTER(comm) ? ompi_comm_remote_size(comm) : 0);

    /* modules are enabled in increasing priority: what the communicator has
     * now is the next lower-priority agreement */
    if (NULL != comm->c_coll && NULL != comm->c_coll->coll_iagree && NULL != comm->c_coll->coll_iagree_module &&
        (mca_coll_base_module_t *) m != comm->c_coll->coll_iagree_module) {
        m->fallback_iagree = comm->c_coll->coll_iagree;
        m->fallback_iagree_module = comm->c_coll->coll_iagree_module;
        OBJ_RETAIN(m->fallback_iagree_module);
    }
    if (NULL != comm->c_coll && NULL != comm->c_coll->coll_agree && NULL != comm->c_coll->coll_agree_module &&
        (mca_coll_base_module_t *) m != comm->c_coll->coll_agree_module) {
        m->fallback_agree = comm->c_coll->coll_agree;
        m->fallback_agree_module = comm->c_coll->coll_agree_module;
        OBJ_RETAIN(m->fallback_agree_module);
    }

    if (ftera_late_ms > 0 && (int) OMPI_PROC_MY_NAME->vpid == ftera_late_rank && n > 1) {
        double until = ftera_now_ms() + (double) ftera_late_ms;
        while (ftera_now_ms() < until) opal_progress();
    }

    m->comm = comm;
    m->lsize = (uint32_t) ompi_comm_size(comm);
    m->rsize = OMPI_COMM_IS_INTER(comm) ? (uint32_t) ompi_comm_remote_size(comm) : 0;
    m->local_first = OMPI_COMM_IS_INTER(comm) ? ompi_comm_determine_first_auto(comm) : 1;
    m->cid_base = comm->c_contextid.cid_base;
    m->cid_sub = comm->c_contextid.cid_sub.u64;
    m->epoch = comm->c_epoch;
    ftslide_key_t key = key_of_module(m);
    m->next = ftera_modules;
    ftera_modules = m;
    m->registered = 1;

    /* replay what peers sent before we got here (which makes the core) */
    unsigned replayed = ftslide_stash_replay(&stash, &key, replay_one, m);
    if (replayed) drive();
    return OMPI_SUCCESS;
}

mca_coll_base_module_t *mca_coll_ftera_comm_query(struct ompi_communicator_t *comm, int *priority)
{
    if (!ompi_ftmpi_enabled || !ftera_inited) {
        return NULL;
    }
    if (ftera_threads) {
        FTERA_OUT(10, "coll:ftera: MPI_THREAD_MULTIPLE or progress threads: not used on comm %s",
                  ompi_comm_print_cid(comm));
        return NULL;
    }
    if (mca_coll_ftera_priority <= 0) {
        return NULL;
    }
    mca_coll_ftera_module_t *m = OBJ_NEW(mca_coll_ftera_module_t);
    if (NULL == m) return NULL;
    *priority = mca_coll_ftera_priority;
    m->super.coll_module_enable = ftera_module_enable;
    m->super.coll_agree = ftera_agree;
    m->super.coll_iagree = ftera_iagree;
    return &m->super;
}
