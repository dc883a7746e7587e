/*
 * bmg.h - transport-free reliable broadcast over a binomial graph (BMG).
 *
 * This is the algorithm behind our revoke: one bmg_t per process and per
 * broadcast channel (for MPIX_Comm_revoke: per communicator). It is a pure
 * state machine: no I/O, no MPI, no globals, no threads. The driver (Open MPI
 * BTL active messages, the SimGrid s4u driver, the in-process model checker)
 * feeds it three kinds of events and carries out the actions it emits:
 *
 *   events in                         actions out (bmg_callbacks_t)
 *   ---------                         -----------
 *   bmg_broadcast()   local call      send(dest, bytes)   hand bytes to dest
 *   bmg_recv()        message         deliver(origin, epoch)
 *   bmg_failure()     peer crashed
 *
 * Callbacks run synchronously inside the event call; they must not call back
 * into the same bmg_t (queue the work instead). A message buffer passed to
 * send() is only valid during the callback.
 *
 * Semantics. A broadcast is identified by its epoch (uint64, > 0). Epochs are
 * monotone: a process keeps the highest epoch it has delivered, delivers a
 * message only if its epoch is higher, and filters duplicates and stale
 * (lower) epochs. Concurrent broadcasts of the same epoch by several origins
 * (two ranks revoking the same communicator) are one broadcast. Guarantee,
 * under any number of crashes and a failure detector that eventually reports
 * every crash and never reports a live process: if a process that stays alive
 * delivers epoch e, every process that stays alive delivers e or a higher
 * epoch. See docs/protocols.md for the argument.
 *
 * Variants:
 *   BMG_VARIANT_FLOOD  every process forwards to all its BMG neighbours
 *                      (+-2^k mod P); a dead +-1 neighbour is walked past.
 *   BMG_VARIANT_LEAN   every process forwards along the k-nomial spanning
 *                      tree rooted at the broadcast's origin (k = the
 *                      origin's radix, 4 by default: depth ceil(log4 P),
 *                      about the BMG's diameter); dead tree vertices are
 *                      bypassed (contracted), so failures cost messages only
 *                      near the failed vertex. P-1 messages instead of
 *                      ~P*(deg-1) when nothing fails. Several origins of one
 *                      epoch (processes revoking at once) each run along
 *                      their own tree: k origins, at most k(P-1) messages.
 */
#ifndef FTSLIDE_BMG_H
#define FTSLIDE_BMG_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BMG_OK 0
#define BMG_EINVAL (-1) /* bad argument */
#define BMG_ENOMEM (-2) /* allocation failed */
#define BMG_EPROTO (-3) /* malformed or mismatched message */
/* (an allocation failure inside an event returns BMG_ENOMEM; the event was
 * applied but some sends may be missing) */

/* Size in bytes of every message this core emits. */
#define BMG_MSG_SIZE 20u

typedef enum bmg_variant {
    BMG_VARIANT_FLOOD = 0,
    BMG_VARIANT_LEAN = 1
} bmg_variant_t;

typedef struct bmg_callbacks {
    /* Send `len` bytes to rank `dest`. */
    void (*send)(void *ctx, uint32_t dest, const void *msg, size_t len);
    /* Epoch `epoch` (first started by `origin`) is delivered at this process. */
    void (*deliver)(void *ctx, uint32_t origin, uint64_t epoch);
} bmg_callbacks_t;

typedef struct bmg bmg_t;

/* ---- topology (pure functions) ------------------------------------------ */

/* Number of distinct BMG neighbours of any rank (the graph is circulant). */
uint32_t bmg_degree(uint32_t nprocs);
/* Writes the neighbours of `rank` (+1, -1, +2, -2, +4, ... deduplicated, in
 * that order) to out[0..cap) and returns how many there are (may exceed cap). */
uint32_t bmg_neighbors(uint32_t nprocs, uint32_t rank, uint32_t *out, uint32_t cap);
/* Diameter of the BMG over nprocs ranks (BFS; O(P log P) time, O(P) memory).
 * Returns 0 for nprocs <= 1 and UINT32_MAX if memory runs out. */
uint32_t bmg_diameter(uint32_t nprocs);
/* Neighbours of `rank` in the 4-nomial tree
 * rooted at rank 0 (the lean tree of a broadcast from rank 0): parent(v) = v with its lowest nonzero base-4 digit
 * cleared; children v + m*4^j, m = 1..3, for every 4^j below that digit).
 * Same conventions as bmg_neighbors(); the parent comes first. */
uint32_t bmg_tree_neighbors(uint32_t nprocs, uint32_t rank, uint32_t *out, uint32_t cap);
/* The same tree rooted at `origin` (ranks shifted by origin mod nprocs): the
 * lean variant's tree for a broadcast that `origin` started. */
uint32_t bmg_lean_neighbors(uint32_t nprocs, uint32_t origin, uint32_t rank, uint32_t *out, uint32_t cap);
/* The k-nomial tree over nprocs ranks rooted at `origin` (k >= 2): with
 * positions v = rank - origin mod nprocs, parent(v) = v with its lowest
 * nonzero base-k digit cleared, children v + m*k^j (m = 1..k-1) for every k^j
 * below that digit; depth ceil(log_k nprocs). k = 4 gives the two functions
 * above; k >= nprocs a star around the origin. Same conventions (parent
 * first; the count may exceed cap). */
uint32_t bmg_knomial_neighbors(uint32_t nprocs, uint32_t k, uint32_t origin, uint32_t rank, uint32_t *out,
                               uint32_t cap);

/* ---- state machine -------------------------------------------------------- */

/* Create the state of process `me` among `nprocs`. `cb` is copied. NULL on
 * bad arguments or out of memory. */
bmg_t *bmg_create(uint32_t nprocs, uint32_t me, bmg_variant_t variant,
                  const bmg_callbacks_t *cb, void *ctx);
void bmg_destroy(bmg_t *b);
/* Lean variant: broadcasts this process starts run along the k-nomial tree
 * with k = radix (>= 2; default 4) instead of the 4-nomial one. Set it before
 * the first broadcast or message (BMG_EINVAL after, or for radix < 2). A
 * broadcast's messages carry its origin's radix and every process forwards it
 * along that tree, so processes that set different radices still deliver to
 * every survivor (bmg_msg_radix() lets a driver notice the difference). */
int bmg_set_radix(bmg_t *b, uint32_t radix);
/* The radix a well-formed message of this wire version carries (its origin's;
 * 0 for the flooding variant or a malformed message). Pure function. */
uint32_t bmg_msg_radix(const void *msg, size_t len);

/* Local call: start broadcasting `epoch` (> 0). Delivers locally and sends.
 * A no-op (BMG_OK) if an equal or higher epoch was already delivered. */
int bmg_broadcast(bmg_t *b, uint64_t epoch);
/* A message from `from` arrived. */
int bmg_recv(bmg_t *b, uint32_t from, const void *msg, size_t len);
/* The failure detector reports that `rank` crashed. Idempotent. */
int bmg_failure(bmg_t *b, uint32_t rank);

/* Highest delivered epoch (0: none yet) and the origin it came from. */
uint64_t bmg_epoch(const bmg_t *b);
uint32_t bmg_origin(const bmg_t *b);
/* Number of messages this process has emitted so far. */
uint64_t bmg_sent(const bmg_t *b);
/* Bytes of heap this object holds now: O(degree + known failures), no
 * array of nprocs entries. */
size_t bmg_footprint(const bmg_t *b);

#ifdef __cplusplus
}
#endif

#endif /* FTSLIDE_BMG_H */
