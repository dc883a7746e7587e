/*
 * coll/ftera - ftslide's agreement component for Open MPI with ULFM.
 *
 * MPIX_Comm_agree, MPIX_Comm_iagree and the agreement inside
 * MPIX_Comm_shrink run on the Early Returning Agreement state machine of
 * coll-ftagree/core (era.h). This component is the adapter around it:
 *
 *   - transport: BTL active messages on a tag of our own
 *     (FTSLIDE_ERA_BTL_TAG, ftslide_ftnet.h), sent through the BML endpoint
 *     of the peer;
 *   - failures: Open MPI's per-communicator failure callback
 *     (ompi_rank_failure_cbfunc) feeds era_failure(); the ranks already
 *     known failed are fed when the communicator is set up and before each
 *     agreement;
 *   - results: the decided flag, the uniform error (MPI_ERR_PROC_FAILED)
 *     and the agreed failed set, returned as a group when the caller asks
 *     for it (the shrink does).
 *
 * On an inter-communicator the agreement runs over both groups as one set of
 * members: the group ompi_comm_determine_first_auto() puts first takes
 * positions 0..n1-1, the other n1..n1+n2-1, at every member alike (the same
 * numbering as the ftslide revoke's channels). MPIX_Comm_agree's bitwise AND
 * gives each side the AND of the remote group's flags, as ULFM defines it,
 * and MAX and MIN (Open MPI's context-id allocation, for the shrink of an
 * inter-communicator) combine over both groups: era_flag_of_int() and
 * era_int_of_flag() (era.h) carry the ints that way in the core's flag.
 */
#ifndef MCA_COLL_FTERA_H
#define MCA_COLL_FTERA_H

#include "ompi_config.h"

#include "mpi.h"
#include "ompi/mca/coll/coll.h"
#include "ompi/communicator/communicator.h"
#include "ompi/request/request.h"

#include "era.h"

BEGIN_C_DECLS

/* Header in front of every fragment on the wire: which communicator
 * (extended CID and epoch, identical at every member), the sender's rank in
 * it, and where the fragment's bytes go in the core message (the sender's
 * message number, the offset and the whole length). A message that fits in
 * one BTL fragment travels whole (offset 0, length = total). */
typedef struct mca_coll_ftera_wire_hdr_t {
    uint64_t cid_base;
    uint64_t cid_sub;
    uint32_t epoch;
    uint32_t src;
    uint32_t msg_id;
    uint32_t offset;
    uint32_t total;
    uint32_t reserved;
} mca_coll_ftera_wire_hdr_t;

/* Smallest coll_ftera_fragment_size accepted */
#define MCA_COLL_FTERA_MIN_FRAGMENT 48

typedef struct mca_coll_ftera_request_t mca_coll_ftera_request_t;

typedef struct mca_coll_ftera_module_t {
    mca_coll_base_module_t super;

    ompi_communicator_t *comm;     /* not retained: the module lives as long as comm */
    /* members: the local group's size, the remote group's (0: an
     * intra-communicator) and whether the local group takes the first
     * positions (inter-communicators; coll_ftera_module.c, member_pos()) */
    uint32_t lsize, rsize;
    int local_first;
    era_t *era;                    /* the core: NULL until the first agreement or message (core_of()) */
    uint64_t cid_base, cid_sub;
    uint32_t epoch;
    int registered;                /* on the list of live modules */
    struct mca_coll_ftera_module_t *next;

    /* The agreement of the next lower-priority component (upstream's
     * ftagree), found in the communicator when we are enabled: it serves the
     * calls our core cannot (anything but one int with AND, OR, MAX or MIN;
     * Open MPI itself makes none). Retained. */
    mca_coll_base_module_agree_fn_t fallback_agree;
    mca_coll_base_module_t *fallback_agree_module;
    mca_coll_base_module_iagree_fn_t fallback_iagree;
    mca_coll_base_module_t *fallback_iagree_module;

    /* the agreement in progress (the core runs one at a time); agreements
     * started while one is in progress wait in a FIFO and start, in call
     * order, as soon as the previous one has decided here */
    mca_coll_ftera_request_t *req;
    mca_coll_ftera_request_t *qhead, *qtail;
    uint64_t req_inst;
    int decided;                   /* the core called decide() since the last check */
    uint64_t failures_seen;        /* ftslide_gate_clock() at the last scan (0: no failure anywhere yet) */
    uint64_t t_start_ns;           /* the current instance's start (breakdown counters) */
    uint64_t t_failure_ns;         /* first failure fed while it runs (0: none yet) */
} mca_coll_ftera_module_t;
OBJ_CLASS_DECLARATION(mca_coll_ftera_module_t);

struct mca_coll_ftera_request_t {
    ompi_request_t super;
    mca_coll_ftera_module_t *module; /* NULL once completed */
    int *contrib;                    /* where the decided flag goes */
    ompi_group_t **outgroup;         /* NULL, or where the agreed failed group goes */
    uint64_t flag;                   /* contribution, read at the call, encoded for op */
    era_op_t op;                     /* how contributions combine */
    uint32_t kind;                   /* the call kind (era_start_kind; coll_ftera_module.c, ftera_kind()) */
    uint32_t *acked;                 /* acknowledged ranks, read at the call (freed at start) */
    uint32_t nacked;
    uint32_t acked_inline[8];        /* acked's storage for up to 8 ranks (no allocation) */
    mca_coll_ftera_request_t *qnext; /* FIFO of agreements waiting to start */
};
OBJ_CLASS_DECLARATION(mca_coll_ftera_request_t);

/* coll_ftera_tree: an era_tree_t, or this (the default): the 4-nomial tree when
 * the job runs on one node, the binomial one otherwise (coll_ftera_module.c,
 * ftera_tree_for()) */
#define MCA_COLL_FTERA_TREE_AUTO 3

/* MCA parameters */
extern int mca_coll_ftera_priority;
extern int mca_coll_ftera_tree;
extern int mca_coll_ftera_mode;
extern int mca_coll_ftera_verbose;
extern int mca_coll_ftera_fragment_size;
extern int mca_coll_ftera_output;

OMPI_DECLSPEC extern const mca_coll_base_component_2_4_0_t mca_coll_ftera_component;

int mca_coll_ftera_init_query(bool enable_progress_threads, bool enable_mpi_threads);
mca_coll_base_module_t *mca_coll_ftera_comm_query(struct ompi_communicator_t *comm, int *priority);
int mca_coll_ftera_finalize(void);

/* counters, printed at verbose >= 1 when the component closes */
extern uint64_t mca_coll_ftera_nagree, mca_coll_ftera_nsent, mca_coll_ftera_nrecv,
    mca_coll_ftera_nfailures, mca_coll_ftera_nstashed, mca_coll_ftera_nfragments;

/* breakdown counters, MPI_T performance variables coll_ftera_<name> (registered
 * in coll_ftera_component.c; bench/ft_primitives/phases.py reads them):
 * instances started with another op than AND (Open MPI's internal MAX/MIN
 * allreduces), calls handed to the next agreement module, instances decided
 * with MPI_ERR_PROC_FAILED, nanoseconds from each instance's start to its
 * decision here, and from its start to the first failure reported to it while
 * it ran (the wait for the failure detector) */
extern unsigned long long mca_coll_ftera_pv_minmax, mca_coll_ftera_pv_fallbacks, mca_coll_ftera_pv_proc_failed,
    mca_coll_ftera_pv_agree_ns, mca_coll_ftera_pv_detect_ns;

END_C_DECLS

#endif /* MCA_COLL_FTERA_H */
