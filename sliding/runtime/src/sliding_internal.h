/*
 * sliding_internal.h -- what the runtime's source files share (not installed).
 *
 *   sliding.c             creation, options, start, finish, the public queries
 *   sliding_grouping.c    which processes share a node
 *   sliding_checkpoint.c  checkpoints: the copies, their exchange, the state
 *                         moves of a recovery
 *   sliding_recover.c     the recovery protocol and the spares' wait
 *   sliding_kill.c        fault injection
 */
#ifndef SLIDING_INTERNAL_H
#define SLIDING_INTERNAL_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "slide_core.h"
#include "sliding.h"

#define INTERNAL __attribute__((visibility("hidden")))

#define TAG_RELEASE 7301
#define TAG_STATE 7302
#define MAX_ATTEMPTS 64

/* A recovery callback and its argument (sliding_on_recovery). */
typedef struct callback {
    sliding_recovery_callback fn;
    void *arg;
} callback_t;

/* A checkpoint copy of one rank's registered buffers. */
typedef struct copy {
    int32_t rank;     /* -1: holds nothing */
    int64_t version;
    char *data;       /* total_bytes */
} copy_t;

struct sliding_runtime {
    MPI_Comm world, alive, cart;
    MPI_Group world_group;
    slide_layout layout;
    int32_t block[SLIDE_MAX_DIMS]; /* the ranks of a node rank (slide_core.h, ranks per node) */
    int k;                    /* processes per node */
    int method;
    int node, lane;           /* this process's node and index in it */
    int *procs;               /* [nodes * k]: world rank of lane l of node n at n * k + l */
    int *pids;                /* [k]: process ids of this node's lanes (fault injection) */
    int32_t *node_of;         /* [world size]: node of each process */
    int32_t *map, *new_map;   /* node rank -> node */
    int32_t *failed;          /* agreed failed nodes, in order */
    int nfailed;
    unsigned char *dead;      /* per node */
    unsigned char *batch;     /* per node: scratch of append_failed_batch */
    void *work;
    size_t work_bytes;
    int nbufs;
    void **bufs;
    size_t *sizes;
    size_t total_bytes;
    copy_t own, buddy, own_pending, buddy_pending;
    char *scratch;            /* total_bytes, receives during recovery */
    int64_t version;          /* committed checkpoint version, -1 none */
    int cart_closed;          /* every member is done with cart: its last agreement failed */
    int cart_error;           /* the first MPI error recorded on cart since it was built */
    int cart_freed_by_app;    /* the application freed cart (seen by the attribute's delete callback) */
    int freeing_cart;         /* the runtime is freeing cart itself */
    int ncallbacks;
    callback_t *callbacks;
    int holds_hooks;          /* counted in runtimes_alive */
    int started, recovered;
    int64_t checkpoint_every; /* sliding_checkpoint_due's interval */
    sliding_recovery_times last;
};

/* sliding.c */
INTERNAL void killpoint(const sliding_t *s, enum sliding_point point);
INTERNAL int rank_of_node(const sliding_t *s, int node);
INTERNAL int buddy_of(const sliding_t *s, int node_rank);
INTERNAL int lane_rank(const sliding_t *s, int node_rank);
INTERNAL int alive_rank(const sliding_t *s, int node, int lane);
INTERNAL void free_cart(sliding_t *s);
INTERNAL int build_cart(sliding_t *s);

/* sliding_grouping.c */
INTERNAL int group_nodes(const long long *keys, int size, int *job_node, int *lane, int *groups,
                         long long *group_key);
INTERNAL int node_names(MPI_Comm comm, int size, int by_key_option, const long long *group_key, int groups,
                        char ***out);

/* sliding_checkpoint.c */
INTERNAL int checkpoint_allocate(sliding_t *s);
INTERNAL int checkpoint_encode(sliding_t *s, int64_t version);
INTERNAL void checkpoint_commit(sliding_t *s);
INTERNAL int checkpoint_lost(const sliding_t *s, const int32_t *old_map);
INTERNAL int checkpoint_restore(sliding_t *s, const int32_t *old_map);
INTERNAL void checkpoint_count_bytes(const sliding_t *s, const int32_t *old_map, sliding_recovery_times *t);

/* sliding_recover.c */
INTERNAL int recover_all(sliding_t *s);
INTERNAL int wait_for_work(sliding_t *s, int *role);

#endif
