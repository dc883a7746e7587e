/*
 * sliding_internal.h -- what the runtime's source files share (not installed).
 *
 *   sliding.c             creation, options, start, finish, the public queries
 *   sliding_grouping.c    which processes share a node
 *   sliding_checkpoint.c  checkpoints: the copies, their exchange, the state
 *                         moves of a recovery
 *   sliding_recover.c     the recovery protocol and the spares' wait
 *   sliding_degrade.c     running on when spares run out: guests, spawned
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
#define TAG_PARITY 7400  /* + stripe: a data chunk sent to a parity keeper (stripes < 256) */
#define TAG_REBUILD 7700 /* + stripe: a chunk sent to the rebuilder of a lost checkpoint */
#define MAX_ATTEMPTS 64
#define REGISTRATION_FIELDS 4 /* registration_of: buffers, callbacks, bytes, a hash of the sizes */
#define MAX_STARTING 256      /* guests one spawn starts at most (sliding_degrade.c) */

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
    int node, lane;           /* this process's node (or guest: node_slots) and index in it */
    int *procs;               /* [slots * k]: world rank of lane l of node n at n * k + l, -1 gone */
    int *pids;                /* [slots * k]: process ids, as procs (fault injection) */
    int32_t *node_of;         /* [world size]: node of each process */
    int32_t *map, *new_map;   /* node rank -> node, or guest (slide_map_degrade's serving map) */
    int32_t *failed;          /* agreed failed nodes and guests, in order */
    int nfailed;
    unsigned char *dead;      /* per node slot */
    unsigned char *batch;     /* per node slot: scratch of append_failed_batch */
    /* running on when spares run out (sliding_degrade.c); max_guests is 0 without it */
    int degrade;              /* SLIDING_INFO_ON_NO_SPARE is "degrade" */
    int32_t max_guests;       /* guest ids run from layout.nodes to node_slots() - 1 */
    int32_t *host;            /* [max_guests]: the node each guest runs on */
    int32_t nguests;          /* guests the map of the agreed failures names */
    int32_t nspawned;         /* guests whose processes were started and joined */
    int32_t *placed;          /* [ranks]: scratch of placed_map */
    char *hostnames;          /* [nodes * MPI_MAX_PROCESSOR_NAME]: where each node runs */
    char *spawn_command, *spawn_text, **spawn_argv; /* the program as started: what guests run */
    int joined;               /* this process is a guest */
    int join_index;           /* a guest's rank in its spawned job, until it knows its node */
    int64_t expected[REGISTRATION_FIELDS]; /* a guest: the survivors' registration (registration_of) */
    int join_error;           /* a guest registered otherwise: the recovery ends everywhere */
    void *work;
    size_t work_bytes;
    int nbufs;
    void **bufs;
    size_t *sizes;
    size_t total_bytes;
    copy_t own, buddy, own_pending, buddy_pending; /* own: copy_bytes, buddy: total_bytes (buddy policy) */
    size_t copy_bytes;        /* an own copy: total_bytes, or k * chunk of the smallest k with zeros */
    char *scratch;            /* copy_bytes, receives during recovery */
    /* redundancy (sliding_checkpoint.c) */
    slide_redundancy redundancy;
    int32_t *domain_of_node;  /* [nodes]: failure domain of each node; NULL: every node its own */
    struct sliding_code **codes; /* [group size + 1]: erasure codes by group size, made when first used */
    int max_group;            /* the largest group size slide_groups can give (2G - 1) */
    char *parity, *parity_pending; /* m chunks of the largest chunk size: the parity this process keeps */
    char *erasure_scratch;    /* chunks in flight: (m k + m) chunks when encoding, k when rebuilding */
    size_t erasure_scratch_bytes;
    int32_t *group_of_rank, *member_of_rank, *group_size, *rank_by_member; /* [ranks]: one map's groups */
    int32_t *group_first;     /* [ranks]: where a group's members start in rank_by_member */
    int32_t ngroups;
    int32_t restore_shift;    /* buddy policy: node rank r's copy is at node rank r + shift in the map
                               * a recovery restores from (set by checkpoint_lost) */
    MPI_Request *requests;    /* erasure exchanges */
    /* the file level (sliding_file.h); file is NULL without a checkpoint directory */
    struct sliding_file *file;
    char *file_dir;
    char grid_text[64], spares_text[64]; /* as given to sliding_create: the manifest's shape */
    int64_t commits;          /* checkpoints committed since the start or the last recovery: the same
                               * count at every worker, which sliding_file_due reads */
    int64_t file_staged;      /* version handed to the writer and not yet in a manifest, -1 none */
    int64_t file_committed;   /* newest version a manifest names, -1 none */
    int file_failed;          /* this process's writes or manifest failed: it stops voting for manifests */
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
INTERNAL int lane_rank(const sliding_t *s, int node_rank);
INTERNAL int alive_rank(const sliding_t *s, int node, int lane);
INTERNAL void free_cart(sliding_t *s);
INTERNAL void registration_of(const sliding_t *s, int64_t out[REGISTRATION_FIELDS]);
INTERNAL int build_cart(sliding_t *s, int recovering);

/* sliding_grouping.c */
INTERNAL int group_nodes(const long long *keys, int size, int *job_node, int *lane, int *groups,
                         long long *group_key);
INTERNAL int node_names(MPI_Comm comm, int size, int by_key_option, const long long *group_key, int groups,
                        char ***out);

/* sliding_checkpoint.c */
INTERNAL int checkpoint_policy(sliding_t *s, const char *redundancy, const char *domains,
                               const int32_t *file_domains);
INTERNAL void checkpoint_free(sliding_t *s);
INTERNAL int checkpoint_allocate(sliding_t *s);
INTERNAL int checkpoint_encode(sliding_t *s, int64_t version);
INTERNAL void checkpoint_commit(sliding_t *s);
INTERNAL int checkpoint_lost(sliding_t *s, const int32_t *old_map);
INTERNAL int checkpoint_restore(sliding_t *s, const int32_t *old_map);
INTERNAL int checkpoint_files(sliding_t *s, const char *dir, long long every);
INTERNAL int checkpoint_read_file(sliding_t *s, int64_t version);
INTERNAL int checkpoint_resume(sliding_t *s, int64_t *version);
INTERNAL int checkpoint_file_wait(sliding_t *s);
INTERNAL void checkpoint_file_manifest(sliding_t *s, int all_written);
INTERNAL void checkpoint_count_bytes(const sliding_t *s, const int32_t *old_map, sliding_recovery_times *t);

/* sliding_degrade.c */
INTERNAL int node_slots(const sliding_t *s);
INTERNAL int host_of(const sliding_t *s, int node);
INTERNAL const int32_t *placed_map(sliding_t *s, const int32_t *map);
INTERNAL int degrade_allocate(sliding_t *s);
INTERNAL int degrade_hostnames(sliding_t *s, MPI_Comm comm, int size);
INTERNAL void degrade_free(sliding_t *s);
INTERNAL int new_map_of(sliding_t *s);
/* Start the guests the map names that have none yet (collective over alive):
 * 0 when none needs starting (their hosts died: the map moved on), 1 when
 * the recovery must start again (with them, or after a failure), 2 when the
 * spawn failed with nobody dead (the guests cannot be started: no spare). */
INTERNAL int spawn_guests(sliding_t *s);
INTERNAL int guest_join(sliding_t *s, MPI_Comm parent, int32_t **domains);

/* sliding_recover.c */
INTERNAL int recover_all(sliding_t *s);
INTERNAL int wait_for_work(sliding_t *s, int *role);

#endif
