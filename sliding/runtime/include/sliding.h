/*
 * sliding.h -- spare-node substitution for ULFM stencil applications.
 *
 * One MPI process per node of a Cartesian node grid, spares included: the
 * process with rank n in the communicator given to sliding_create() is node n
 * of the grid (row-major, last dimension fastest, see slide_core.h). Nodes
 * that are not spares run the application's ranks; spares wait inside the
 * library until a failure needs them.
 *
 *     sliding_t *s;
 *     sliding_create(MPI_COMM_WORLD, "torus:3x2x2", "x:1", "hybrid", &s);
 *     sliding_register(s, u, bytes);            // every process, spares too
 *     MPI_Comm cart; int role; int64_t version;
 *     sliding_start(s, &cart, &role, &version); // spares wait here
 *     if (role == SLIDING_FINISHED) goto done;  // a spare never needed
 *     it = version < 0 ? 0 : version;           // a promoted spare resumes
 *     for (; it < n; it++) {
 *         int rc = step(cart, ...);             // returns the MPI error
 *         if (rc != MPI_SUCCESS) {
 *             if (sliding_recover(s, &cart, &role, &version) != SLIDING_OK) abort...;
 *             if (role == SLIDING_FINISHED) goto done;
 *             it = version;                     // buffers hold checkpoint 'version'
 *             continue;
 *         }
 *         if (it % 10 == 0) sliding_checkpoint(s, it + 1);
 *     }
 *     sliding_finalize(s);                      // releases waiting processes
 *   done:
 *     sliding_free(s); MPI_Finalize();
 *
 * Roles returned to the application:
 *   SLIDING_INITIAL   a worker since the start, never moved;
 *   SLIDING_SURVIVOR  a worker that went through at least one recovery;
 *   SLIDING_PROMOTED  a process that had no rank (spare) and now has one;
 *   SLIDING_FINISHED  a process that had no rank when the workers finished:
 *                     it should only call sliding_free() and MPI_Finalize().
 *
 * Recovery (sliding_recover) is collective over all surviving processes,
 * workers and waiting ones: the first worker to call it revokes the library's
 * communicators, which wakes the waiting processes. It shrinks, takes the
 * failed processes as the next batch of the agreed failure list (ascending
 * node ids), computes the new rank-to-node map with the sliding core (the
 * same map at every survivor, no messages), rebuilds the Cartesian
 * communicator (dims = logical grid, cart rank = logical rank), moves every
 * registered buffer as of the last committed checkpoint to the new owner of
 * its rank -- from the previous owner if alive, else from the buddy copy --
 * re-establishes the buddy copies under the new map, and commits all of it
 * with one agreement. A failure at any point restarts the recovery. After a
 * recovery every worker's registered buffers hold the last committed
 * checkpoint and *version is its version: the application resumes from there.
 *
 * Checkpoints (sliding_checkpoint) keep, in memory, a copy of each rank's
 * registered buffers on its own node and on a buddy node: the node of logical
 * rank (r + R/2) mod R, R = number of ranks. They are two-phase: the new copy
 * becomes the committed one only after an agreement, so a failure during a
 * checkpoint leaves the previous one in force.
 *
 * Errors are returned as SLIDING_ERR_* codes (sliding_names.h);
 * sliding_strerror() gives a one-line message. Every function must be called
 * by the same processes as described; none of them aborts the job.
 *
 * Fault injection: the runtime stops at the kill points of sliding_names.h
 * (ftslide_killpoint.h); an application marks the start of its iteration I
 * as the point iter=I.
 */
#ifndef SLIDING_H
#define SLIDING_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "sliding_names.h" /* enum sliding_status, sliding_strerror(), the kill points */

#ifdef __cplusplus
extern "C" {
#endif

enum sliding_role {
    SLIDING_INITIAL = 0,
    SLIDING_SURVIVOR = 1,
    SLIDING_PROMOTED = 2,
    SLIDING_FINISHED = 3,
};

typedef struct sliding sliding_t;

/* Timing of the last successful recovery, in seconds (see sliding_last_recovery). */
typedef struct sliding_recovery_times {
    double agree;        /* revoke + shrink (the agreement on the failed set) */
    double mapping;      /* computing the new map with the sliding core */
    double rebuild;      /* splitting and creating the Cartesian communicator */
    double state;        /* moving checkpointed buffers and re-establishing buddies */
    double commit;       /* the final agreement */
    double total;
    int attempts;        /* recoveries started (more than 1: a failure during recovery) */
    int failed_nodes;    /* failed nodes known after it */
} sliding_recovery_times;

/* Validate the layout and method against comm (one process per node).
 * Collective over comm; does not block beyond that. */
int sliding_create(MPI_Comm comm, const char *grid, const char *spares, const char *method,
                   sliding_t **out);

/* Register a buffer that checkpoints and recoveries carry. Every process,
 * spares included, registers the same sequence of sizes before sliding_start. */
int sliding_register(sliding_t *s, void *data, size_t bytes);

/* Workers get the Cartesian communicator and SLIDING_INITIAL; spares wait
 * inside until promoted (a recovery needs them) or released at the end. A
 * promoted process's buffers then hold checkpoint *version (-1: none was
 * committed, start from initial values), as after sliding_recover(). */
int sliding_start(sliding_t *s, MPI_Comm *cart, int *role, int64_t *version);

/* Take a checkpoint of the registered buffers labelled 'version'. Collective
 * over the workers (the current Cartesian communicator). On a failure during
 * it, returns the MPI error; the previous checkpoint stays committed. */
int sliding_checkpoint(sliding_t *s, int64_t version);

/* Recover after an error on the Cartesian communicator (see above). *cart is
 * replaced (the old one is freed). On SLIDING_OK, *version is the checkpoint
 * the buffers now hold (-1 if none was ever committed: buffers unchanged). */
int sliding_recover(sliding_t *s, MPI_Comm *cart, int *role, int64_t *version);

/* Called by every worker at the end: releases the waiting processes. */
int sliding_finalize(sliding_t *s);

/* Free the library's communicators and memory (every process). */
void sliding_free(sliding_t *s);

/* Introspection for applications and tests. */
int sliding_rank(const sliding_t *s);             /* logical rank, -1 if none */
int sliding_node(const sliding_t *s);             /* this process's node id */
int sliding_ranks(const sliding_t *s);            /* logical ranks R */
const int32_t *sliding_map(const sliding_t *s);   /* rank -> node, R entries */
int sliding_failed(const sliding_t *s, const int32_t **nodes); /* agreed failed list */
void sliding_last_recovery(const sliding_t *s, sliding_recovery_times *out);

#ifdef __cplusplus
}
#endif

#endif
