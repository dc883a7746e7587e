/*
 * sliding.h -- spare-node substitution for ULFM stencil applications.
 *
 * The processes of the communicator given to sliding_create() run on the
 * nodes of a Cartesian node grid, spares included (row-major, last dimension
 * fastest, see slide_core.h), the same number K on every node. Nodes that
 * are not spares run the application's ranks; spares wait inside the library
 * until a failure needs them. With one process per node (K = 1), the process
 * with rank n is node n, as before.
 *
 * Nodes. sliding_create_info() groups the processes into nodes: by default
 * the processes that share memory (MPI_COMM_TYPE_SHARED), or those that give
 * the same node key (info "sliding_node_key": several emulated nodes on one
 * machine); nodes are ordered by their lowest rank, or placed by a node
 * coordinate file (info "sliding_node_coords", sliding_nodes.h: a torus's
 * coordinates come from the job manager, not from the hostfile). Inside a node
 * the processes are lanes 0..K-1, by rank. Without a node key and coordinate
 * file, a communicator of exactly one process per node keeps process n on
 * node n whatever shares memory (sliding_create()'s behaviour).
 *
 * Ranks per node. Each node that holds ranks holds a block of the rank grid,
 * b[0] x b[1] (x b[2]) ranks, K in all (info "sliding_block", default the
 * most even split of K: 2 -> 2x1x1, 4 -> 2x2x1); the rank grid is the
 * node grid's logical grid times the block. The substitution core maps
 * nodes to nodes; the K ranks of a node follow it as a unit, lane k of the
 * new node taking lane k's rank (slide_core.h, "ranks per node"). A spare
 * node is K waiting processes, promoted together. A failure of any process of
 * a node is the failure of the whole node: its surviving processes hold no
 * rank from then on and wait, like idle spares, until sliding_finalize().
 *
 *     sliding_t *s;
 *     sliding_create(MPI_COMM_WORLD, "torus:3x2x2", "x:1", "hybrid", &s);
 *     // or, 4 ranks per node as 2x2x1 blocks (48 processes on 12 nodes):
 *     //   MPI_Info_create(&info); MPI_Info_set(info, SLIDING_INFO_BLOCK, "2x2x1");
 *     //   sliding_create_info(MPI_COMM_WORLD, "torus:3x2x2", "x:1", "hybrid", info, &s);
 *     int ndims, dims[3];
 *     sliding_dims(s, &ndims, dims);            // the rank grid, known before sliding_start
 *     size_t bytes = tile_bytes(dims);          // spares too: size for the largest tile
 *     double *u = malloc(bytes);
 *     sliding_register(s, u, bytes);            // every process, the same sizes
 *     MPI_Comm cart; int role; int64_t version;
 *     if (sliding_start(s, &cart, &role, &version) != SLIDING_OK) goto failed; // spares wait here
 *     if (role != SLIDING_FINISHED && version < 0) initialize(u, cart);
 *     int it = version < 0 ? 0 : (int)version;  // a promoted spare resumes at 'version'
 *     while (role != SLIDING_FINISHED) {
 *         while (it < n && sliding_ok(s)) {      // MPI calls go unchecked: see "Check once"
 *             step(cart, it, u);
 *             it++;
 *             if (it % 10 == 0) sliding_checkpoint(s, it); // labelled with the iteration to resume at
 *         }
 *         if (sliding_finish(s) == SLIDING_OK) break;      // every worker completed: spares released
 *         if (sliding_recover(s, &cart, &role, &version) != SLIDING_OK) goto failed;
 *         if (role == SLIDING_FINISHED) break;             // this process holds no rank any more
 *         if (version < 0) initialize(u, cart);            // no checkpoint yet: start over
 *         it = version < 0 ? 0 : (int)version;             // every worker resumes at 'version'
 *     }
 *     sliding_free(s); MPI_Finalize(); return 0;
 *   failed:                                      // the same status at every process
 *     sliding_free(s); MPI_Finalize(); return 1;
 *
 * Check once. The runtime installs an error handler on the Cartesian
 * communicator: the first error of a step (a failed neighbour, a revoke)
 * is recorded and the communicator revoked, so the step's later calls return
 * at once and the other workers' blocked calls are released; sliding_ok()
 * then says to recover. The application checks once per iteration instead of
 * after every MPI call (checking every call, as before, works too).
 * Communicators the application derives from it (dup, split, Cart_sub)
 * inherit the handler as MPI says: an error on one revokes that one. A
 * Waitall that meets a failure may leave requests active (MPI_ERR_PENDING);
 * the revoke completes them, so a second MPI_Waitall on the same array
 * returns at once and frees them (without it they leak, nothing blocks).
 * sliding_finish() is the last such check: an agreement that every worker
 * completed, after which no recovery happens.
 *
 * Communicators. After sliding_start, MPI_COMM_WORLD holds the spares and,
 * after a failure, dead processes: use it for nothing collective. The
 * Cartesian communicator is the application's to use, the runtime's to free:
 * a recovery frees it and returns a new one (sliding_free frees the last), so
 * communicators the application derives from it must be derived again (a
 * recovery callback is the place: sliding_on_recovery).
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
 * nodes of the failed processes as the next batch of the agreed failure list
 * (ascending node ids), computes the new node map with the sliding core (the
 * same map at every survivor, no messages), rebuilds the Cartesian
 * communicator (dims = the rank grid, cart rank = logical rank), moves every
 * registered buffer as of the last committed checkpoint to the new owner of
 * its rank, node to node and lane to lane -- from the previous owner if
 * alive, else from the buddy copy --
 * re-establishes the buddy copies under the new map, and commits all of it
 * with one agreement. A failure at any point restarts the recovery. After a
 * recovery every worker's registered buffers hold the last committed
 * checkpoint and *version is its version: the application resumes from there.
 *
 * After a recovery the buffers hold the last committed checkpoint; if none
 * was committed (*version -1) they are as the recovery found them, and the
 * application re-initialises them. Checkpoint labels are the application's:
 * the example labels a checkpoint with the iteration to resume at, so every
 * worker, survivor or promoted, resumes at *version.
 *
 * Checkpoints (sliding_checkpoint) keep, in memory, a copy of each rank's
 * registered buffers on its own node and on a buddy node, never its own: lane
 * k of the node holding node rank (n + B/2) mod B, for the rank of lane k of
 * node rank n, B = ranks / K node ranks (with one process per node: logical
 * rank (r + R/2) mod R). They are two-phase: the new copy
 * becomes the committed one only after an agreement, so a failure during a
 * checkpoint leaves the previous one in force.
 *
 * Errors are returned as SLIDING_ERR_* codes (sliding_names.h);
 * sliding_strerror() gives a one-line message. Every function must be called
 * by the same processes as described; none of them aborts the job.
 *
 * Fault injection: the runtime stops at the kill points of sliding_names.h
 * (ftslide_killpoint.h's FTSLIDE_KILL="NODE@POINT,..."), named by node
 * (sliding_node()); an application marks the start of its iteration I as the
 * point iter=I with sliding_killpoint(). "NODE@POINT#N" names the Nth time the
 * node reaches the point (checkpoint#3, recovery_map#2, iter=5#2 after a
 * rollback); "NODE@POINT" is its first time. The first process of a node to
 * reach a point named for its node writes the "killed at" line, which names
 * the node, its processes' ranks in the creation communicator and the logical
 * ranks they held:
 *     ftslide: node 4 killed at checkpoint#3 (world ranks 8,9; logical ranks 6,7)
 * then SIGKILLs the node's other processes and itself: the whole node dies at
 * once, as when it loses power.
 */
#ifndef SLIDING_H
#define SLIDING_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "sliding_names.h" /* enum sliding_status, sliding_strerror(), enum sliding_role, the kill points */
#include "sliding_nodes.h" /* the node coordinate file */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sliding_runtime sliding_t;

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
    int64_t moved_bytes; /* checkpointed state sent from one node to another to put ranks on their
                          * new nodes (every process, from the agreed maps) */
    int64_t buddy_bytes; /* state sent to re-establish the redundancy (buddy copies or a group's
                          * parity) under the new map, and to rebuild lost checkpoints from it */
    double spawn;        /* starting guests (SLIDING_INFO_ON_NO_SPARE "degrade"), 0 without */
    int guests;          /* node ranks run by guests after it (two blocks on a node) */
} sliding_recovery_times;

/* A recovery callback (sliding_on_recovery): called at every process that
 * holds a rank after a recovery, with the logical rank it held before (-1:
 * it was waiting) and the one it holds now, and the new Cartesian
 * communicator; the registered buffers already hold the checkpoint. Returns 0,
 * or non-zero to end the run (SLIDING_ERR_CALLBACK everywhere). It must not
 * free cart, and may use MPI on it and on its own communicators. */
typedef int (*sliding_recovery_callback)(sliding_t *s, int old_rank, int new_rank, MPI_Comm cart, void *arg);

/* Info keys of sliding_create_info(); every one is optional. */
#define SLIDING_INFO_BLOCK "sliding_block"             /* "AxB[xC]": the block each node runs */
#define SLIDING_INFO_NODE_KEY "sliding_node_key"       /* an integer: same key, same node */
#define SLIDING_INFO_NODE_COORDS "sliding_node_coords" /* a path: the node coordinate file */
#define SLIDING_INFO_CHECKPOINT_EVERY "sliding_checkpoint_every" /* an integer >= 1: sliding_checkpoint_due */
#define SLIDING_INFO_REDUNDANCY "sliding_redundancy" /* "buddy" | "parity:G" | "rs:G,M" */
#define SLIDING_INFO_DOMAINS "sliding_domains"       /* "AxB[xC]": failure domains as boxes of nodes */
#define SLIDING_INFO_CHECKPOINT_DIR "sliding_checkpoint_dir" /* a path: the file level's directory */
#define SLIDING_INFO_FILE_EVERY "sliding_file_every"         /* an integer >= 1: every Nth checkpoint to files */
#define SLIDING_INFO_ON_NO_SPARE "sliding_on_no_spare"       /* "fail" (the default) | "degrade" */

/* Validate the layout and method against comm, with one process per node
 * (process n is node n) or K per node grouped by shared memory:
 * sliding_create_info(comm, grid, spares, method, MPI_INFO_NULL, out).
 * Collective over comm; does not block beyond that. */
int sliding_create(MPI_Comm comm, const char *grid, const char *spares, const char *method,
                   sliding_t **out);

/* sliding_create() with options in `info` (MPI_INFO_NULL for none):
 *   sliding_block        "2x2x1": the block of the rank grid a node runs; its
 *                        sizes multiply to K (default: the most even split);
 *   sliding_node_key     an integer per process: processes with the same key
 *                        form a node (default: the processes that share memory;
 *                        or, with one process per node and no coordinate file,
 *                        process n as node n); give it on every process or none;
 *   sliding_node_coords  the path of a node coordinate file (sliding_nodes.h),
 *                        read by the process of rank 0; give it on every process
 *                        or none;
 *   sliding_checkpoint_every  N >= 1: sliding_checkpoint_due() says yes every
 *                        N iterations (default 5);
 *   sliding_redundancy   how a checkpoint survives its node (default "buddy"):
 *                        "buddy", a full copy on another node; "parity:G",
 *                        the node ranks in groups of G (G or G+1 when G does
 *                        not divide them), each group keeping erasure-coded
 *                        parity of its members' checkpoints, about 1/(G-1) of
 *                        a checkpoint per process: any one member of a group
 *                        may die; "rs:G,M", M parity chunks per group, about
 *                        M/(G-M): any M members may die (ISA-L's Reed-Solomon);
 *   sliding_domains      "AxB[xC]": nodes that fail together (a board, a
 *                        chassis), as boxes of that shape in the node grid;
 *                        buddies and groups are drawn across them so that
 *                        losing one whole box loses no checkpoint (default:
 *                        every node its own domain);
 *   sliding_checkpoint_dir  a directory every process can write (a shared
 *                        file system): every Nth committed checkpoint is also
 *                        written there, by a thread of each process, while the
 *                        run goes on (the step waits only for the copy into a
 *                        staging buffer, or for the previous write if it is
 *                        still running); a manifest names the newest complete
 *                        one. A recovery that cannot rebuild a checkpoint in
 *                        memory rolls every rank back to that one instead of
 *                        SLIDING_ERR_DATA_LOST, and a job started with the same
 *                        directory (same grid, K, block and buffer sizes)
 *                        resumes from it: sliding_start returns its version;
 *   sliding_file_every   N >= 1: which committed checkpoints go to files
 *                        (default 4: every fourth).
 * Every process returns the same status: SLIDING_ERR_SIZE (the size is not a
 * multiple of the grid's nodes), SLIDING_ERR_NODES (nodes with different
 * process counts), SLIDING_ERR_NODE_COUNT (another number of nodes than the
 * grid's, e.g. one node for all), SLIDING_ERR_BLOCK, SLIDING_ERR_COORDS,
 * SLIDING_ERR_INFO, SLIDING_ERR_REDUNDANCY (a policy or domain box that is
 * malformed, a group larger than the node ranks, M >= G, or domains so large
 * that no placement survives the loss of one), SLIDING_ERR_CHECKPOINT_DIR (a
 * checkpoint directory some process cannot create or write), and
 * sliding_create()'s.
 * Collective over comm. */
int sliding_create_info(MPI_Comm comm, const char *grid, const char *spares, const char *method,
                        MPI_Info info, sliding_t **out);

/* sliding_create_info() with the info built from the values given, NULL for
 * one not given: block (SLIDING_INFO_BLOCK), *node_key (SLIDING_INFO_NODE_KEY),
 * node_coords (SLIDING_INFO_NODE_COORDS), redundancy (SLIDING_INFO_REDUNDANCY),
 * domains (SLIDING_INFO_DOMAINS). What the Fortran module and the Python
 * binding call, so that no other language spells the keys. Returns
 * SLIDING_ERR_MPI if the info cannot be built. Collective over comm. */
int sliding_create_options(MPI_Comm comm, const char *grid, const char *spares, const char *method,
                           const char *block, const int *node_key, const char *node_coords,
                           const char *redundancy, const char *domains, sliding_t **out);

/* sliding_create_info() from the command line, as MPI_Init takes its own
 * arguments: the options --block AxB[xC], --emulate-nodes K (every K
 * consecutive processes of comm a node: node key rank / K), --node-coords
 * FILE, --checkpoint-every N, --redundancy POLICY, --domains AxB[xC],
 * --checkpoint-dir DIR and --file-every N (the info keys), then GRID SPARES
 * METHOD, are
 * taken out of *argv (*argc shrinks; the program's name and the arguments
 * after METHOD stay, in order). Returns SLIDING_ERR_ARG, with argv untouched,
 * if they are missing or an option is unknown or lacks its value; otherwise
 * sliding_create_info()'s status. Collective over comm; every process
 * returns the same status. */
int sliding_create_args(MPI_Comm comm, int *argc, char ***argv, sliding_t **out);

/* Register a buffer that checkpoints and recoveries carry. Every process,
 * spares included, registers the same sequence of sizes before sliding_start,
 * which returns SLIDING_ERR_REGISTER everywhere if they differ. */
int sliding_register(sliding_t *s, void *data, size_t bytes);

/* Register a callback the runtime calls after every successful recovery
 * (sliding_recovery_callback), in the order registered, before
 * sliding_recover() (or, for a promoted spare, sliding_start()) returns.
 * Every process, spares included, registers the same number before
 * sliding_start. A callback that returns non-zero or frees cart at any
 * process makes every process return SLIDING_ERR_CALLBACK; a process failure
 * during the callbacks is found by the next step, like any other. */
int sliding_on_recovery(sliding_t *s, sliding_recovery_callback fn, void *arg);

/* The rank grid before or after sliding_start: *ndims (2 or 3) and its
 * sizes (dims[2] = 1 in 2D). SLIDING_ERR_ARG if s is NULL. */
int sliding_dims(const sliding_t *s, int *ndims, int dims[3]);

/* This process's tile: its coordinates in the rank grid (MPI_Cart_coords of
 * its logical rank), or -1s if it holds no rank (a spare). Before or after
 * sliding_start. SLIDING_ERR_ARG if s is NULL. */
int sliding_coords(const sliding_t *s, int coords[3]);

/* Workers get the Cartesian communicator and SLIDING_INITIAL; spares wait
 * inside until promoted (a recovery needs them) or released at the end. A
 * promoted process's buffers then hold checkpoint *version (-1: none was
 * committed, start from initial values), as after sliding_recover(). */
int sliding_start(sliding_t *s, MPI_Comm *cart, int *role, int64_t *version);

/* Whether the application's checkpoint labelled `iteration` is due: every N
 * iterations (info "sliding_checkpoint_every", --checkpoint-every; default
 * 5), as SCR_Need_checkpoint answers for SCR. Local, O(1); 0 for a NULL s. */
int sliding_checkpoint_due(const sliding_t *s, int64_t iteration);

/* Take a checkpoint of the registered buffers labelled 'version'. Collective
 * over the workers (the current Cartesian communicator). On a failure during
 * it, or if sliding_ok() was 0 at any worker, returns an MPI error class
 * (MPIX_ERR_PROC_FAILED, MPIX_ERR_REVOKED) and the previous checkpoint stays
 * committed. */
int sliding_checkpoint(sliding_t *s, int64_t version);

/* Recover after an error on the Cartesian communicator (see above). *cart is
 * replaced (the old one is freed). On SLIDING_OK, *version is the checkpoint
 * the buffers now hold (-1 if none was ever committed: buffers unchanged). */
int sliding_recover(sliding_t *s, MPI_Comm *cart, int *role, int64_t *version);

/* Whether this worker's current step may go on: no error was recorded on the
 * Cartesian communicator since it was built, and it is not revoked. 0 means
 * call sliding_recover (or sliding_finish, which then fails). Local, O(1);
 * 0 for a NULL s or a process without a rank. */
int sliding_ok(const sliding_t *s);

/* The end of the run, collective over the workers: an agreement that every
 * worker completed (sliding_ok() everywhere, including the application's
 * final collectives before it). SLIDING_OK: the waiting processes are
 * released (sliding_finalize) and no recovery happens any more.
 * SLIDING_ERR_FAILED: call sliding_recover and run again from the checkpoint. */
int sliding_finish(sliding_t *s);

/* Releases the waiting processes without an agreement (sliding_finish does
 * both); every worker calls it at the end, in the per-call style. */
int sliding_finalize(sliding_t *s);

/* Free the library's communicators and memory (every process). */
void sliding_free(sliding_t *s);

/* Introspection for applications and tests. */
int sliding_rank(const sliding_t *s);             /* logical rank (Cartesian rank), -1 if none */
int sliding_node(const sliding_t *s);             /* this process's node: its grid node id */
int sliding_lane(const sliding_t *s);             /* its index among its node's processes, 0..K-1 */
int sliding_ranks(const sliding_t *s);            /* logical ranks R (the rank grid) */
int sliding_ranks_per_node(const sliding_t *s);   /* K */
void sliding_block(const sliding_t *s, int block[3]); /* the block a node runs; block[2] = 1 in 2D */
const int32_t *sliding_map(const sliding_t *s);   /* node rank -> node, R / K entries (the core's map;
                                                   * rank -> node with one process per node) */
int sliding_failed(const sliding_t *s, const int32_t **nodes); /* agreed failed nodes, in order */
void sliding_last_recovery(const sliding_t *s, sliding_recovery_times *out);
/* Bytes this process keeps for the committed checkpoint's redundancy (after
 * sliding_start): a whole copy for buddy, M chunks of its group's stripes for
 * parity:G and rs:G,M (about M / (G - M) of the registered bytes); its own
 * copy, the pending ones and the file level's staging buffer come on top. */
size_t sliding_redundancy_bytes(const sliding_t *s);
/* Logical rank 0 prints, on stdout, the line that says where the workers
 * resume after the last recovery (nothing if none happened yet):
 *   PROGRAM: recovered iteration=I failed=1,6 attempts=1 agree_ms=1.330
 *   map_ms=0.004 rebuild_ms=1.970 state_ms=0.300 commit_ms=0.360
 *   total_ms=3.970 moved_bytes=32000 buddy_bytes=64000
 * (one line; the examples' protocol, which ftslide/sliding/runtime.py reads). */
void sliding_report_recovery(const sliding_t *s, const char *program, int64_t iteration);

/* Print a status on stderr as "PROGRAM: error step=STEP status=NAME
 * message=...": at every process if s is a runtime (its statuses are the same
 * everywhere, and any process may be the one left), else (a failed creation)
 * at rank 0 of MPI_COMM_WORLD only. */
void sliding_report_error(const sliding_t *s, const char *program, const char *step, int status);

/* Fault injection: if FTSLIDE_KILL names this process's node at `point`
 * ("iter=12"), SIGKILL the node's other processes and this one (with
 * FTSLIDE_KILL_NODE=1, the node's daemon first: ftslide_killpoint.h). Costs a
 * test of a static variable when FTSLIDE_KILL is unset. */
void sliding_killpoint(const sliding_t *s, const char *point);

/* sliding_killpoint() with the point formatted as printf's: ("iter=%d", it). */
void sliding_killpointf(const sliding_t *s, const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#ifdef __cplusplus
}
#endif

#endif
