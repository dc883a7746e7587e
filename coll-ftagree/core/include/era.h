/*
 * era.h - transport-free Early Returning Agreement (ERA).
 *
 * One era_t per process and per communicator. It runs a sequence of
 * agreements (instances 1, 2, 3, ...); each decides
 *   - flag:        the bitwise AND (or another era_op_t) of the flags
 *                  contributed by the contributors (every process not in
 *                  `failed`),
 *   - failed:      the agreed set of failed processes (cumulative: it
 *                  contains the previous instance's set),
 *   - proc_failed: the uniform error: 1 iff some process in `failed` was not
 *                  acknowledged by every contributor (the acknowledged sets
 *                  are contributed and intersected), the same at every process.
 *   - kind_conflict: 1 iff the contributors started the instance with
 *                  different call kinds (era_start_kind), the same at every
 *                  process: callers that disagree on what they called get
 *                  told so everywhere instead of one side waiting for ever.
 *
 * Like bmg.h this is a pure state machine (no I/O, no MPI, no globals):
 *
 *   events in                          actions out (era_callbacks_t)
 *   ---------                          -----------
 *   era_start()    local call          send(dest, bytes)
 *   era_recv()     message             decide(result)
 *   era_failure()  peer crashed
 *
 * Non-blocking use (MPIX_Comm_iagree): era_start() returns at once; the
 * driver keeps feeding era_recv()/era_failure() ("progress") and polls
 * era_test() or waits for the decide() callback. Callbacks run synchronously
 * and must not call back into the same era_t; buffers passed to them are
 * valid only during the call.
 *
 * Modes:
 *   ERA_MODE_UNIFORM (default)  uniform agreement: no two processes, even ones
 *                   that crash right after deciding, decide differently. The
 *                   root proposes, waits until every live process holds the
 *                   proposal (ACK wave), then decides and broadcasts. Four
 *                   tree traversals per agreement, 4(P-1) messages.
 *   ERA_MODE_EARLY  the classic two-traversal early-returning agreement
 *                   (UP then DOWN, 2(P-1) messages): all processes that stay
 *                   alive decide the same value and the same error, which is
 *                   what MPIX_Comm_agree specifies; a process that decides and
 *                   then crashes may have decided a value that the survivors
 *                   do not (see docs/protocols.md for the counterexample).
 *
 * Both modes: termination, validity and irrevocability under any number of
 * crashes, given a failure detector that eventually reports every crash to
 * every live process and never reports a live one.
 */
#ifndef FTSLIDE_ERA_H
#define FTSLIDE_ERA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ERA_OK 0
#define ERA_EINVAL (-1) /* bad argument */
#define ERA_ENOMEM (-2) /* allocation failed */
#define ERA_EPROTO (-3) /* malformed message or one that breaks the protocol */
#define ERA_EBUSY (-4)  /* era_start() while the previous instance is undecided */
#define ERA_EGONE (-5)  /* era_test() on an instance already garbage-collected */

typedef enum era_mode {
    ERA_MODE_UNIFORM = 0,
    ERA_MODE_EARLY = 1
} era_mode_t;

/* Shape of the tree over the positions 0..n-1 of the processes not yet
 * agreed failed (position = rank minus the agreed-failed ranks below it).
 * All are heap-ordered (a parent's position is smaller than its children's),
 * which is all the dynamic tree needs: the smallest alive position is the
 * root and all its ancestors are dead.
 *   ERA_TREE_BINOMIAL (default)  parent(i) = i with its lowest set bit
 *                    cleared; subtrees are contiguous position ranges and,
 *                    without failures, the edges join ranks 2^k apart (the
 *                    tree of a binomial allreduce), so failure-free reports
 *                    carry one interval. Depth ceil(log2 n).
 *   ERA_TREE_BINARY  binary heap, parent(i) = (i-1)/2.
 *   ERA_TREE_KNOMIAL4  the same in base 4: parent(i) = i with its lowest
 *                    nonzero base-4 digit cleared; up to 3 children per digit
 *                    below it (the root has 3 per digit of n-1), contiguous
 *                    subtrees, depth ceil(log4 n): half the binomial's. */
typedef enum era_tree {
    ERA_TREE_BINOMIAL = 0,
    ERA_TREE_BINARY = 1,
    ERA_TREE_KNOMIAL4 = 2
} era_tree_t;

/* Name of a shape ("binomial", "binary", "knomial4"); NULL for a value that
 * is not a shape. era_tree_from_name() is the inverse: ERA_OK and *tree, or
 * ERA_EINVAL for an unknown name. */
const char *era_tree_name(era_tree_t tree);
int era_tree_from_name(const char *name, era_tree_t *tree);

/* Most children a position can have in any shape (4-nomial, n < 2^32). */
#define ERA_MAX_CHILDREN 48

typedef struct era_result {
    uint64_t inst;          /* instance number, 1-based */
    uint64_t flag;          /* AND of the contributors' flags */
    int proc_failed;        /* uniform error (see above) */
    int kind_conflict;      /* the contributors' call kinds differed (see above) */
    uint32_t nfailed;       /* number of ranks in `failed` */
    const uint32_t *failed; /* the agreed failed set: nfailed ranks, ascending */
} era_result_t;

typedef struct era_callbacks {
    void (*send)(void *ctx, uint32_t dest, const void *msg, size_t len);
    void (*decide)(void *ctx, const era_result_t *res);
} era_callbacks_t;

typedef struct era era_t;

/* Upper bound of the size of any message for nprocs ranks (a failure-free
 * message is at most 56 bytes whatever nprocs; the size grows with the number
 * of failures, never with nprocs). The call kinds cost nothing: they ride in
 * two bytes of the fixed 32-byte header. */
size_t era_max_msg_size(uint32_t nprocs);

/* Tree topology (pure functions over positions 0..n-1). Parent of pos > 0
 * (pos 0 has none: returns UINT32_MAX); children of pos written to
 * out[0..cap), ascending, returns how many there are (may exceed cap). */
uint32_t era_tree_parent(era_tree_t tree, uint32_t pos);
uint32_t era_tree_children(era_tree_t tree, uint32_t n, uint32_t pos, uint32_t *out, uint32_t cap);

/* Create the agreement state of process `me` among `nprocs`.
 * `initial_failed` (ninitial ranks, strictly ascending; NULL/0: none) is a
 * failed set every process agrees on beforehand (e.g. the failures already
 * known when the communicator was created, as an MPI group would list them);
 * it must not contain `me`. The state is O(1) words plus O(failures): no
 * array of nprocs entries. NULL on bad arguments or out of memory. */
era_t *era_create(uint32_t nprocs, uint32_t me, era_mode_t mode, era_tree_t tree, const uint32_t *initial_failed,
                  uint32_t ninitial, const era_callbacks_t *cb, void *ctx);
void era_destroy(era_t *e);

/* Torus order: the ranks sit on a torus of dims[0] x ... x dims[ndims-1]
 * processes in rank order, first dimension fastest (their product must be
 * nprocs, ndims <= ERA_MAX_DIMS; ndims = 0 restores rank order). Positions
 * then count in an order that folds every ring at its middle, so that the
 * tree's edges follow the rings and reach the far half of a ring backwards:
 * a binomial tree crosses a ring of d processes in d/2 hops instead of d - 1.
 * Every process of the communicator must set the same order, before its
 * first era_start() (ERA_EINVAL after it, or for bad dimensions); the order
 * is part of the view, so messages of a process with another order are
 * ignored (era_rejected()) rather than merged into a different tree. */
#define ERA_MAX_DIMS 8
int era_set_torus(era_t *e, const uint32_t *dims, uint32_t ndims);

/* How the contributed flags combine: bitwise AND (what MPIX_Comm_agree
 * specifies, era_start's), bitwise OR, or the maximum / minimum as unsigned
 * 64-bit integers (Open MPI's context-id allocation runs its fault-tolerant
 * allreduces with MAX and MIN). Only idempotent operations: a contribution
 * may be merged twice on the way to the root. Every process must start an
 * instance with the same operation. */
typedef enum era_op {
    ERA_OP_BAND = 0,
    ERA_OP_BOR = 1,
    ERA_OP_MAX = 2,
    ERA_OP_MIN = 3
} era_op_t;

/* How a 32-bit int contribution travels in the 64-bit flag, so that the op
 * gives the int the caller expects: AND with the unused half set to ones, OR
 * as is, MAX and MIN with the sign bit flipped (signed order becomes
 * unsigned order). On an inter-communicator the members of both groups take
 * part in one agreement, and AND is per group, as ULFM defines it: the first
 * group's ints in the low half (ERA_SIDE_FIRST), the second group's in the
 * high half (ERA_SIDE_SECOND), ones in the other half, and each side reads
 * the other's half (the AND of the remote group). Every other op combines
 * over both groups and reads the low half. */
typedef enum era_side {
    ERA_SIDE_ALL = 0,    /* an intra-communicator: everyone in one group */
    ERA_SIDE_FIRST = 1,  /* inter-communicator, the group taking the first positions */
    ERA_SIDE_SECOND = 2  /* inter-communicator, the other group */
} era_side_t;
uint64_t era_flag_of_int(era_op_t op, era_side_t side, int32_t value);
/* the int a member of `side` gets from the decided flag */
int32_t era_int_of_flag(era_op_t op, era_side_t side, uint64_t flag);

/* Start the next instance with this process's `flag` and its acknowledged-
 * failure set `acked` (nacked ranks in any order, duplicates allowed;
 * NULL/0 = nothing acknowledged). Writes the instance number to *inst (if
 * non-NULL). ERA_EBUSY if the previous instance has not decided here yet;
 * ERA_EINVAL if a rank is out of range. May decide at once (nprocs == 1). */
int era_start(era_t *e, uint64_t flag, const uint32_t *acked, uint32_t nacked, uint64_t *inst);
/* The same with `flag` combined by `op` instead of AND (the decided flag is
 * then the op over the contributors' flags; ERA_EINVAL for an unknown op). */
int era_start_op(era_t *e, era_op_t op, uint64_t flag, const uint32_t *acked, uint32_t nacked, uint64_t *inst);
/* The same, with this process's call kind: a small integer (0 to
 * ERA_KIND_MAX) naming what the caller asked for, so that processes that
 * entered the same instance from different calls (one agreeing, one
 * shrinking) are told apart. Kinds combine along the tree like the flag:
 * equal kinds stay, different ones give ERA_KIND_CONFLICT; the decided
 * kind_conflict (era_result_t, era_test) is 1 at every deciding process iff
 * some two contributors differed. The flag, error and failed set are decided
 * as usual either way; with a conflict the flag mixes callers' values and
 * means nothing. era_start and era_start_op start with kind 0. */
#define ERA_KIND_MAX 254u
#define ERA_KIND_CONFLICT 255u
int era_start_kind(era_t *e, era_op_t op, uint32_t kind, uint64_t flag, const uint32_t *acked, uint32_t nacked,
                   uint64_t *inst);
/* A message from `from` arrived. ERA_EPROTO means a malformed message or one
 * no correct peer could have sent; the state is unchanged then. */
int era_recv(era_t *e, uint32_t from, const void *msg, size_t len);
/* The failure detector reports that `rank` crashed. Idempotent. */
int era_failure(era_t *e, uint32_t rank);
/* Re-evaluate the pending work (idempotent; never needed after the calls
 * above, which progress by themselves). Returns 1 if the last started
 * instance has decided, else 0. */
int era_progress(era_t *e);
/* 1 and the result if instance `inst` has decided here, 0 if it has not,
 * ERA_EGONE if it was garbage-collected, ERA_EINVAL otherwise. *failed (may
 * be NULL) points to the agreed failed set (ascending ranks, *nfailed of
 * them), valid until the next call on `e`. Every output pointer may be NULL. */
int era_test(const era_t *e, uint64_t inst, uint64_t *flag, int *proc_failed, const uint32_t **failed,
             uint32_t *nfailed, int *kind_conflict);

/* The agreed failed set of the last decided instance (initial set before):
 * ascending ranks, *n of them; valid until the next call on `e`. */
const uint32_t *era_agreed_failed(const era_t *e, uint32_t *n);
/* The rank this process takes as the root of its last started instance:
 * the first alive one in tree order under its dead set (UINT32_MAX: no
 * instance started). */
uint32_t era_root(const era_t *e);
/* Last instance started / decided here (0: none). */
uint64_t era_last_started(const era_t *e);
uint64_t era_last_decided(const era_t *e);
/* Number of messages this process has emitted so far. */
uint64_t era_sent(const era_t *e);
/* Number of messages ignored because their sender's previous decision
 * differs from ours. Always 0 in uniform mode (and with the same
 * initial_failed everywhere); in early mode only messages sent by processes
 * that decided differently and crashed. */
uint64_t era_rejected(const era_t *e);
/* Bytes of heap this object holds now (its struct, sets, buffers). */
size_t era_footprint(const era_t *e);

#ifdef __cplusplus
}
#endif

#endif /* FTSLIDE_ERA_H */
