/*
 * sliding.c -- the recovery runtime of sliding.h on ULFM.
 *
 * Communicators owned by the library:
 *   world  a dup of the creation communicator; procs[] names the process of
 *          every (node, lane), node_of[] the node of every process;
 *   alive  the surviving processes (workers and waiting ones), shrunk at each
 *          recovery; waiting processes block in a receive on it, so a revoke
 *          of it wakes them;
 *   cart   the workers' Cartesian communicator (the application's handle),
 *          with the runtime's error handler (record the first error, revoke:
 *          the check-once style of sliding.h) and an attribute pointing back
 *          to the runtime, whose delete callback tells whether the
 *          application freed it.
 */
#include "sliding.h"

#include <inttypes.h>
#include <mpi-ext.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ftslide_killpoint.h"
#include "slide_core.h"
#include "sliding_kill.h"

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

/* The attribute that leads cart's error handler to its runtime; created with
 * the first runtime, freed with the last. */
static int cart_keyval = MPI_KEYVAL_INVALID, runtimes_alive = 0;
static MPI_Errhandler cart_errhandler = MPI_ERRHANDLER_NULL;

/* Cart's error handler: record the first error, revoke cart so that the
 * step's later calls return at once here and the other workers' blocked
 * calls are released, and return the error to the caller. */
static void record_cart_error(MPI_Comm *comm, int *code, ...)
{
    sliding_t *s;
    int found = 0;
    if (MPI_Comm_get_attr(*comm, cart_keyval, &s, &found) == MPI_SUCCESS && found && s->cart_error == MPI_SUCCESS) {
        s->cart_error = *code;
    }
    MPIX_Comm_revoke(*comm);
}

/* Cart's attribute is deleted when cart is freed: by the runtime, or by the
 * application, whose peers may be blocked on cart in their own callbacks or
 * steps: revoke it while it still exists, to release them. */
static int cart_deleted(MPI_Comm comm, int keyval, void *attribute, void *extra)
{
    (void)keyval;
    (void)extra;
    sliding_t *s = attribute;
    if (!s->freeing_cart) {
        s->cart_freed_by_app = 1;
        MPIX_Comm_revoke(comm);
    }
    return MPI_SUCCESS;
}

static int keep_cart_hooks(void)
{
    if (runtimes_alive++ > 0) {
        return MPI_SUCCESS;
    }
    int rc = MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, cart_deleted, &cart_keyval, NULL);
    return rc == MPI_SUCCESS ? MPI_Comm_create_errhandler(record_cart_error, &cart_errhandler) : rc;
}

static void release_cart_hooks(void)
{
    if (--runtimes_alive > 0) {
        return;
    }
    if (cart_keyval != MPI_KEYVAL_INVALID) {
        MPI_Comm_free_keyval(&cart_keyval);
    }
    if (cart_errhandler != MPI_ERRHANDLER_NULL) {
        MPI_Errhandler_free(&cart_errhandler);
    }
}

/* Dies here, with its whole node, if fault injection names this node and point (FTSLIDE_KILL). */
static void killpoint(const sliding_t *s, enum sliding_point point)
{
    sliding_killpoint(s, sliding_point_name(point));
}

/* Node rank held by a node, -1 if none. */
static int rank_of_node(const sliding_t *s, int node)
{
    for (int32_t r = 0; r < s->layout.ranks; r++) {
        if (s->map[r] == node) {
            return r;
        }
    }
    return -1;
}

/* The node rank whose buddy copies a node rank's node holds, and back. */
static int buddy_of(const sliding_t *s, int node_rank)
{
    return (node_rank + s->layout.ranks / 2) % s->layout.ranks;
}

/* Logical rank (Cartesian rank) of this process's lane in a node rank. */
static int lane_rank(const sliding_t *s, int node_rank)
{
    return slide_block_rank(&s->layout, s->block, node_rank, s->lane);
}

/* Rank in s->alive of this process's lane on 'node' (MPI_UNDEFINED if gone). */
static int alive_rank(const sliding_t *s, int node, int lane)
{
    MPI_Group group;
    int out, world_rank = s->procs[node * s->k + lane];
    MPI_Comm_group(s->alive, &group);
    MPI_Group_translate_ranks(s->world_group, 1, &world_rank, group, &out);
    MPI_Group_free(&group);
    return out;
}

/* The options of sliding_create_info() as this process got them. */
typedef struct options {
    char block[64];           /* "" if not given */
    int has_key;
    long long key;
    char coords[4096];        /* "" if not given */
    long long every;          /* checkpoint interval; 0 if not given */
} options_t;

/* Read the info keys; SLIDING_ERR_INFO for a malformed value. */
static int read_options(MPI_Info info, options_t *o)
{
    memset(o, 0, sizeof *o);
    if (info == MPI_INFO_NULL) {
        return SLIDING_OK;
    }
    int flag;
    char value[4096];
    MPI_Info_get(info, SLIDING_INFO_BLOCK, (int)sizeof o->block - 1, o->block, &flag);
    if (!flag) {
        o->block[0] = '\0';
    }
    MPI_Info_get(info, SLIDING_INFO_NODE_COORDS, (int)sizeof o->coords - 1, o->coords, &flag);
    if (!flag) {
        o->coords[0] = '\0';
    }
    MPI_Info_get(info, SLIDING_INFO_CHECKPOINT_EVERY, (int)sizeof value - 1, value, &flag);
    if (flag) {
        char *end;
        o->every = strtoll(value, &end, 10);
        if (end == value || *end != '\0' || o->every < 1 || o->every > INT32_MAX) {
            return SLIDING_ERR_INFO;
        }
    }
    MPI_Info_get(info, SLIDING_INFO_NODE_KEY, (int)sizeof value - 1, value, &flag);
    if (flag) {
        char *end;
        o->key = strtoll(value, &end, 10);
        if (end == value || *end != '\0') {
            return SLIDING_ERR_INFO;
        }
        o->has_key = 1;
    }
    return SLIDING_OK;
}

/* The block of k ranks per node: given or the core's default. */
static int choose_block(const slide_layout *layout, const char *text, int k, int32_t block[SLIDE_MAX_DIMS])
{
    if (text[0] == '\0') {
        return slide_block_default(k, layout->grid.ndims, block) == SLIDE_OK ? SLIDING_OK : SLIDING_ERR_BLOCK;
    }
    if (slide_block_parse(text, layout->grid.ndims, block) != SLIDE_OK ||
        block[0] * block[1] * block[2] != k || slide_block_ranks(layout, block) < 0) {
        return SLIDING_ERR_BLOCK;
    }
    return SLIDING_OK;
}

typedef struct keyed {
    long long key;
    int rank;
} keyed_t;

static int by_key(const void *a, const void *b)
{
    const keyed_t *x = a, *y = b;
    if (x->key != y->key) {
        return x->key < y->key ? -1 : 1;
    }
    return x->rank - y->rank;
}

static int by_rank(const void *a, const void *b)
{
    return ((const keyed_t *)a)->rank - ((const keyed_t *)b)->rank;
}

/* Group the processes by their keys[] into nodes ordered by lowest rank:
 * job_node[p] (0..groups-1) and lane[p]; the count of nodes in *groups.
 * SLIDING_ERR_NODES if they differ in size. */
static int group_nodes(const long long *keys, int size, int *job_node, int *lane, int *groups,
                       long long *group_key)
{
    keyed_t *sorted = malloc(sizeof *sorted * (size_t)size), *first = malloc(sizeof *first * (size_t)size);
    if (!sorted || !first) {
        free(sorted);
        free(first);
        return SLIDING_ERR_NOMEM;
    }
    for (int p = 0; p < size; p++) {
        sorted[p] = (keyed_t){keys[p], p};
    }
    qsort(sorted, (size_t)size, sizeof *sorted, by_key);
    int n = 0; /* runs of one key: their first (lowest) rank */
    for (int i = 0; i < size; i++) {
        if (i == 0 || sorted[i].key != sorted[i - 1].key) {
            first[n++] = sorted[i];
        }
    }
    qsort(first, (size_t)n, sizeof *first, by_rank); /* nodes in order of their lowest rank */
    int status = SLIDING_OK, members = size / n;
    for (int g = 0; g < n; g++) {
        group_key[g] = first[g].key;
        int count = 0;
        const keyed_t probe = {first[g].key, first[g].rank};
        const keyed_t *at = bsearch(&probe, sorted, (size_t)size, sizeof *sorted, by_key);
        for (const keyed_t *q = at; q < sorted + size && q->key == first[g].key; q++) {
            job_node[q->rank] = g;
            lane[q->rank] = count++;
        }
        if (count != members || size % n != 0) {
            status = SLIDING_ERR_NODES;
        }
    }
    *groups = n;
    free(sorted);
    free(first);
    return status;
}

/* The node names a coordinate file uses: the decimal key, or the host name
 * of the node's lowest rank (every process sends its own). */
static int node_names(MPI_Comm comm, int size, int by_key_option, const long long *group_key, int groups,
                      char ***out)
{
    char *all = by_key_option ? NULL : malloc((size_t)size * MPI_MAX_PROCESSOR_NAME);
    char **names = calloc((size_t)groups, sizeof *names), mine[MPI_MAX_PROCESSOR_NAME] = "";
    int length = 0, status = names && (by_key_option || all) ? SLIDING_OK : SLIDING_ERR_NOMEM;
    MPI_Allreduce(MPI_IN_PLACE, &status, 1, MPI_INT, MPI_MAX, comm);
    if (status == SLIDING_OK && !by_key_option) {
        MPI_Get_processor_name(mine, &length);
        MPI_Allgather(mine, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, comm);
    }
    for (int g = 0; status == SLIDING_OK && g < groups; g++) {
        names[g] = malloc(MPI_MAX_PROCESSOR_NAME + 24);
        if (!names[g]) {
            status = SLIDING_ERR_NOMEM;
        } else if (by_key_option) {
            snprintf(names[g], MPI_MAX_PROCESSOR_NAME + 24, "%lld", group_key[g]);
        } else { /* group_key is the node's lowest rank */
            snprintf(names[g], MPI_MAX_PROCESSOR_NAME + 24, "%.*s", MPI_MAX_PROCESSOR_NAME - 1,
                     all + (size_t)group_key[g] * MPI_MAX_PROCESSOR_NAME);
        }
    }
    free(all);
    *out = names;
    return status;
}

void sliding_killpoint(const sliding_t *s, const char *point)
{
    if (ftslide_killspec() == NULL || s == NULL || point == NULL) {
        return;
    }
    int *logical_ranks = malloc(sizeof(int) * (size_t)s->k), node_rank = rank_of_node(s, s->node);
    if (logical_ranks == NULL) {
        return;
    }
    for (int l = 0; l < s->k; l++) {
        logical_ranks[l] = node_rank >= 0 ? slide_block_rank(&s->layout, s->block, node_rank, l) : -1;
    }
    const sliding_victims victims = {s->node, s->lane, s->k, s->pids, &s->procs[s->node * s->k], logical_ranks};
    sliding_kill_node_at(&victims, point);
    free(logical_ranks);
}

void sliding_killpointf(const sliding_t *s, const char *format, ...)
{
    if (ftslide_killspec() == NULL || format == NULL) {
        return;
    }
    char point[256];
    va_list args;
    va_start(args, format);
    int n = vsnprintf(point, sizeof point, format, args);
    va_end(args);
    if (n > 0 && (size_t)n < sizeof point) {
        sliding_killpoint(s, point);
    }
}

int sliding_create(MPI_Comm comm, const char *grid, const char *spares, const char *method,
                   sliding_t **out)
{
    return sliding_create_info(comm, grid, spares, method, MPI_INFO_NULL, out);
}

int sliding_create_info(MPI_Comm comm, const char *grid, const char *spares, const char *method,
                        MPI_Info info, sliding_t **out)
{
    if (!grid || !spares || !method || !out) {
        return SLIDING_ERR_ARG;
    }
    slide_grid g;
    slide_spares sp;
    slide_method m;
    slide_layout layout;
    int size, me, status = SLIDING_OK;
    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(comm, &me);
    options_t opt = {0};
    int32_t block[SLIDE_MAX_DIMS] = {1, 1, 1};
    if (slide_grid_parse(grid, &g) || slide_spares_parse(spares, &sp) ||
        slide_method_parse(method, &m) || slide_method_one_rank_per_node(m) != 1 ||
        slide_layout_init(&layout, &g, &sp)) {
        status = SLIDING_ERR_ARG;
    } else if (size % layout.nodes != 0) {
        status = SLIDING_ERR_SIZE;
    } else if ((status = read_options(info, &opt)) == SLIDING_OK) {
        status = choose_block(&layout, opt.block, size / layout.nodes, block);
    }
    /* The same status everywhere, and the same choice of options: a key or
     * coordinate file given by some processes only is an error. */
    int flags[5] = {status, status == SLIDING_OK && opt.has_key, status == SLIDING_OK && opt.coords[0],
                    -(status == SLIDING_OK && opt.has_key), -(status == SLIDING_OK && opt.coords[0] != '\0')};
    MPI_Allreduce(MPI_IN_PLACE, flags, 5, MPI_INT, MPI_MAX, comm);
    if (flags[0] != SLIDING_OK) {
        return flags[0];
    }
    if (flags[1] != -flags[3] || flags[2] != -flags[4]) {
        return SLIDING_ERR_INFO;
    }
    const int k = size / layout.nodes, use_key = opt.has_key, use_coords = opt.coords[0] != '\0';

    /* The node of every process: by key, one per process, or by shared memory. */
    long long mine = opt.key, *keys = malloc(sizeof *keys * (size_t)size);
    int *job_node = malloc(sizeof(int) * (size_t)size), *lane = malloc(sizeof(int) * (size_t)size);
    int *pids = malloc(sizeof(int) * (size_t)size), pid = (int)getpid();
    long long *group_key = malloc(sizeof *group_key * (size_t)size);
    int32_t *grid_node = malloc(sizeof *grid_node * (size_t)size);
    if (!use_key && k == 1 && !use_coords) {
        mine = me;
    } else if (!use_key) {
        MPI_Comm local;
        MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, me, MPI_INFO_NULL, &local);
        int lowest = me;
        MPI_Allreduce(&me, &lowest, 1, MPI_INT, MPI_MIN, local);
        MPI_Comm_free(&local);
        mine = lowest;
    }
    status = keys && job_node && lane && pids && group_key && grid_node ? SLIDING_OK : SLIDING_ERR_NOMEM;
    MPI_Allreduce(MPI_IN_PLACE, &status, 1, MPI_INT, MPI_MAX, comm);
    int groups = 0;
    if (status == SLIDING_OK) {
        MPI_Allgather(&mine, 1, MPI_LONG_LONG, keys, 1, MPI_LONG_LONG, comm);
        MPI_Allgather(&pid, 1, MPI_INT, pids, 1, MPI_INT, comm);
        status = group_nodes(keys, size, job_node, lane, &groups, group_key);
        if (status == SLIDING_OK && groups != layout.nodes) {
            status = SLIDING_ERR_NODE_COUNT;
        }
    }
    /* Where each node sits in the grid: the job's order, or the coordinate file's. */
    for (int j = 0; status == SLIDING_OK && j < groups; j++) {
        grid_node[j] = j;
    }
    if (status == SLIDING_OK && use_coords) {
        char **names = NULL;
        status = node_names(comm, size, use_key, group_key, groups, &names);
        int32_t where = 0;
        if (status == SLIDING_OK && me == 0) {
            status = sliding_nodes_read(opt.coords, layout.grid.ndims, layout.grid.size, groups,
                                        (const char *const *)names, grid_node, &where);
        }
        for (int j = 0; names && j < groups; j++) {
            free(names[j]);
        }
        free(names);
        MPI_Allreduce(MPI_IN_PLACE, &status, 1, MPI_INT, MPI_MAX, comm);
        if (status == SLIDING_OK) {
            MPI_Bcast(grid_node, groups, MPI_INT32_T, 0, comm);
        }
    }
    sliding_t *s = status == SLIDING_OK ? calloc(1, sizeof *s) : NULL;
    if (status == SLIDING_OK && !s) {
        status = SLIDING_ERR_NOMEM;
    }
    if (s) {
        s->layout = layout;
        memcpy(s->block, block, sizeof s->block);
        s->k = k;
        s->method = m;
        s->version = -1;
        s->checkpoint_every = opt.every > 0 ? opt.every : 5;
        s->cart = MPI_COMM_NULL;
        s->own.rank = s->buddy.rank = s->own_pending.rank = s->buddy_pending.rank = -1;
        s->work_bytes = slide_map_workspace_bytes(&layout);
        s->procs = malloc(sizeof(int) * (size_t)size);
        s->node_of = malloc(sizeof(int32_t) * (size_t)size);
        s->pids = malloc(sizeof(int) * (size_t)k);
        s->map = malloc(sizeof(int32_t) * (size_t)layout.ranks);
        s->new_map = malloc(sizeof(int32_t) * (size_t)layout.ranks);
        s->failed = malloc(sizeof(int32_t) * (size_t)layout.nodes);
        s->dead = calloc((size_t)layout.nodes, 1);
        s->batch = calloc((size_t)layout.nodes, 1);
        s->work = malloc(s->work_bytes);
        if (!s->procs || !s->node_of || !s->pids || !s->map || !s->new_map || !s->failed || !s->dead || !s->batch ||
            !s->work) {
            status = SLIDING_ERR_NOMEM;
        } else {
            for (int p = 0; p < size; p++) {
                int node = grid_node[job_node[p]];
                s->procs[node * k + lane[p]] = p;
                s->node_of[p] = node;
            }
            s->node = grid_node[job_node[me]];
            s->lane = lane[me];
            for (int l = 0; l < k; l++) {
                s->pids[l] = pids[s->procs[s->node * k + l]];
            }
            slide_initial_map(&layout, s->map);
        }
    }
    free(keys);
    free(job_node);
    free(lane);
    free(pids);
    free(group_key);
    free(grid_node);
    if (status == SLIDING_OK && (MPI_Comm_dup(comm, &s->world) != MPI_SUCCESS ||
                                 MPI_Comm_dup(comm, &s->alive) != MPI_SUCCESS)) {
        status = SLIDING_ERR_MPI;
    }
    if (status == SLIDING_OK) {
        s->holds_hooks = 1;
        if (keep_cart_hooks() != MPI_SUCCESS) {
            status = SLIDING_ERR_MPI;
        }
    }
    if (status != SLIDING_OK) {
        sliding_free(s);
        return status;
    }
    MPI_Comm_set_errhandler(s->world, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(s->alive, MPI_ERRORS_RETURN);
    MPI_Comm_group(s->world, &s->world_group);
    *out = s;
    return SLIDING_OK;
}

int sliding_create_options(MPI_Comm comm, const char *grid, const char *spares, const char *method,
                           const char *block, const int *node_key, const char *node_coords, sliding_t **out)
{
    MPI_Info info;
    if (MPI_Info_create(&info) != MPI_SUCCESS) {
        return SLIDING_ERR_MPI;
    }
    char key[24];
    snprintf(key, sizeof key, "%d", node_key ? *node_key : 0);
    int rc = MPI_SUCCESS;
    if (block) {
        rc = MPI_Info_set(info, SLIDING_INFO_BLOCK, block);
    }
    if (rc == MPI_SUCCESS && node_key) {
        rc = MPI_Info_set(info, SLIDING_INFO_NODE_KEY, key);
    }
    if (rc == MPI_SUCCESS && node_coords) {
        rc = MPI_Info_set(info, SLIDING_INFO_NODE_COORDS, node_coords);
    }
    int status = rc == MPI_SUCCESS ? sliding_create_info(comm, grid, spares, method, info, out) : SLIDING_ERR_MPI;
    MPI_Info_free(&info);
    return status;
}

int sliding_create_args(MPI_Comm comm, int *argc, char ***argv, sliding_t **out)
{
    static const char *const options[][2] = {{"--block", SLIDING_INFO_BLOCK},
                                             {"--node-coords", SLIDING_INFO_NODE_COORDS},
                                             {"--checkpoint-every", SLIDING_INFO_CHECKPOINT_EVERY},
                                             {"--emulate-nodes", SLIDING_INFO_NODE_KEY}};
    const int noptions = (int)(sizeof options / sizeof options[0]);
    int rank, size, first = 1, bad = !argc || !argv || !*argv || !out;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Info info;
    if (MPI_Info_create(&info) != MPI_SUCCESS) {
        return SLIDING_ERR_MPI;
    }
    for (; !bad && first + 1 < *argc && strncmp((*argv)[first], "--", 2) == 0; first += 2) {
        const char *option = (*argv)[first], *value = (*argv)[first + 1];
        int o = 0;
        while (o < noptions && strcmp(option, options[o][0]) != 0) {
            o++;
        }
        char key[24], *end;
        long k = strtol(value, &end, 10);
        if (o == noptions) {
            bad = 1;
        } else if (strcmp(option, "--emulate-nodes") != 0) {
            MPI_Info_set(info, options[o][1], value);
        } else if (*end == '\0' && k >= 1 && k <= size) { /* every k consecutive processes a node */
            snprintf(key, sizeof key, "%ld", rank / k);
            MPI_Info_set(info, options[o][1], key);
        } else {
            bad = 1;
        }
    }
    bad = bad || first + 3 > *argc;
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, comm);
    char **arg = bad ? NULL : *argv;
    int status = bad ? SLIDING_ERR_ARG : sliding_create_info(comm, arg[first], arg[first + 1], arg[first + 2], info, out);
    MPI_Info_free(&info);
    if (status == SLIDING_OK) { /* keep the program's name and what follows METHOD */
        memmove(arg + 1, arg + first + 3, sizeof *arg * (size_t)(*argc - first - 3 + 1)); /* argv[argc] is NULL */
        *argc -= first + 2;
    }
    return status;
}

int sliding_register(sliding_t *s, void *data, size_t bytes)
{
    if (!s || (!data && bytes)) {
        return SLIDING_ERR_ARG;
    }
    if (s->started) {
        return SLIDING_ERR_STATE;
    }
    void **bufs = realloc(s->bufs, sizeof(void *) * (size_t)(s->nbufs + 1));
    if (bufs) {
        s->bufs = bufs;
    }
    size_t *sizes = realloc(s->sizes, sizeof(size_t) * (size_t)(s->nbufs + 1));
    if (sizes) {
        s->sizes = sizes;
    }
    if (!bufs || !sizes) {
        return SLIDING_ERR_NOMEM;
    }
    s->bufs[s->nbufs] = data;
    s->sizes[s->nbufs] = bytes;
    s->nbufs++;
    s->total_bytes += bytes;
    return SLIDING_OK;
}

static void pack(const sliding_t *s, char *out)
{
    for (int i = 0; i < s->nbufs; i++) {
        memcpy(out, s->bufs[i], s->sizes[i]);
        out += s->sizes[i];
    }
}

static void unpack(const sliding_t *s, const char *in)
{
    for (int i = 0; i < s->nbufs; i++) {
        memcpy(s->bufs[i], in, s->sizes[i]);
        in += s->sizes[i];
    }
}

static void commit_pending(sliding_t *s)
{
    copy_t own = s->own, buddy = s->buddy;
    s->own = s->own_pending;
    s->buddy = s->buddy_pending;
    s->own_pending = own;
    s->buddy_pending = buddy;
    s->own_pending.rank = s->buddy_pending.rank = -1;
}

/* Free cart unless the application did. */
static void free_cart(sliding_t *s)
{
    if (s->cart != MPI_COMM_NULL && !s->cart_freed_by_app) {
        s->freeing_cart = 1;
        MPI_Comm_free(&s->cart);
        s->freeing_cart = 0;
    }
    s->cart = MPI_COMM_NULL;
}

/* Split s->alive into the workers' Cartesian communicator, in logical rank order. */
static int build_cart(sliding_t *s)
{
    int node_rank = rank_of_node(s, s->node), rank = node_rank >= 0 ? lane_rank(s, node_rank) : -1;
    MPI_Comm split;
    s->cart_closed = 0;
    s->cart_error = MPI_SUCCESS;
    s->cart_freed_by_app = 0;
    int rc = MPI_Comm_split(s->alive, rank >= 0 ? 0 : MPI_UNDEFINED, rank, &split);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    s->cart = MPI_COMM_NULL;
    if (rank < 0) {
        return MPI_SUCCESS;
    }
    int ndims = s->layout.grid.ndims, dims[SLIDE_MAX_DIMS], periods[SLIDE_MAX_DIMS];
    for (int d = 0; d < ndims; d++) {
        dims[d] = s->layout.logical[d] * s->block[d];
        periods[d] = s->layout.grid.periodic;
    }
    rc = MPI_Cart_create(split, ndims, dims, periods, 0, &s->cart);
    MPI_Comm_free(&split);
    if (rc == MPI_SUCCESS) {
        MPI_Comm_set_attr(s->cart, cart_keyval, s);
        MPI_Comm_set_errhandler(s->cart, cart_errhandler);
    }
    return rc;
}

/* Pack this worker's buffers as pending copy 'version' and swap copies with the
 * buddy partners on s->cart: the same lane of the node ranks half the node
 * ranks away, which are on other nodes. Collective over the workers. */
static int exchange_checkpoint(sliding_t *s, int64_t version)
{
    int node_rank = rank_of_node(s, s->node), ranks = s->layout.ranks, half = ranks / 2;
    s->own_pending.rank = lane_rank(s, node_rank);
    s->own_pending.version = version;
    pack(s, s->own_pending.data);
    s->buddy_pending.rank = lane_rank(s, (node_rank - half + ranks) % ranks);
    s->buddy_pending.version = version;
    if (half == 0) {
        memcpy(s->buddy_pending.data, s->own_pending.data, s->total_bytes);
        return MPI_SUCCESS;
    }
    /* Cart rank = logical rank: send mine to node rank + half's, receive node rank - half's. */
    return MPI_Sendrecv(s->own_pending.data, (int)s->total_bytes, MPI_BYTE, lane_rank(s, buddy_of(s, node_rank)),
                        TAG_STATE, s->buddy_pending.data, (int)s->total_bytes, MPI_BYTE,
                        s->buddy_pending.rank, TAG_STATE, s->cart, MPI_STATUS_IGNORE);
}

/* Where node rank r's committed checkpoints can be read (each lane's from
 * the same lane): node and whether it is the buddy copy; -1 if both holders
 * are dead. */
static int state_source(const sliding_t *s, const int32_t *old_map, int r, int *from_buddy)
{
    if (!s->dead[old_map[r]]) {
        *from_buddy = 0;
        return old_map[r];
    }
    *from_buddy = 1;
    int holder = old_map[buddy_of(s, r)];
    return s->dead[holder] ? -1 : holder;
}

/* Move every rank's committed checkpoint to its new node: node rank by node
 * rank, each lane of the old node to the same lane of the new one. */
static int move_state(sliding_t *s, const int32_t *old_map)
{
    int ranks = s->layout.ranks, count = (int)s->total_bytes, nreq = 0, rc = MPI_SUCCESS;
    MPI_Request reqs[3];
    int mine = rank_of_node(s, s->node), received = 0;
    for (int r = 0; r < ranks; r++) {
        int from_buddy, src = state_source(s, old_map, r, &from_buddy), dst = s->map[r];
        const copy_t *copy = from_buddy ? &s->buddy : &s->own;
        if (src == s->node && dst == s->node) {
            unpack(s, copy->data);
        } else if (src == s->node) {
            rc = MPI_Isend(copy->data, count, MPI_BYTE, alive_rank(s, dst, s->lane), TAG_STATE, s->alive,
                           &reqs[nreq]);
            nreq += rc == MPI_SUCCESS;
        } else if (dst == s->node) {
            rc = MPI_Irecv(s->scratch, count, MPI_BYTE, alive_rank(s, src, s->lane), TAG_STATE, s->alive,
                           &reqs[nreq]);
            nreq += rc == MPI_SUCCESS;
            received = rc == MPI_SUCCESS;
        }
        if (rc != MPI_SUCCESS) {
            break;
        }
    }
    int wait_rc = nreq ? MPI_Waitall(nreq, reqs, MPI_STATUSES_IGNORE) : MPI_SUCCESS;
    if (rc == MPI_SUCCESS && wait_rc == MPI_SUCCESS && received && mine >= 0) {
        unpack(s, s->scratch);
    }
    return rc != MPI_SUCCESS ? rc : wait_rc;
}

/* Bytes of state a recovery sends between processes, from the agreed maps
 * (the same at every survivor): moves to new nodes, and the new buddy copies. */
static void count_state_bytes(const sliding_t *s, const int32_t *old_map, sliding_recovery_times *t)
{
    int64_t per_node_rank = (int64_t)s->k * (int64_t)s->total_bytes;
    t->moved_bytes = 0;
    for (int r = 0; r < s->layout.ranks; r++) {
        int from_buddy;
        t->moved_bytes += state_source(s, old_map, r, &from_buddy) != s->map[r] ? per_node_rank : 0;
    }
    t->buddy_bytes = s->layout.ranks / 2 > 0 ? per_node_rank * s->layout.ranks : 0;
}

/* The next batch of failures: the nodes of the members of s->alive missing
 * from 'shrunk' that were not dead yet, in ascending node order (the order
 * the sliding core expects). A node is dead as soon as one of its processes
 * is: its other processes keep no rank. */
static void append_failed_batch(sliding_t *s, MPI_Comm shrunk)
{
    MPI_Group before, after;
    MPI_Comm_group(s->alive, &before);
    MPI_Comm_group(shrunk, &after);
    int n;
    MPI_Group_size(before, &n);
    memset(s->batch, 0, (size_t)s->layout.nodes);
    for (int i = 0; i < n; i++) {
        int in_after, world_rank;
        MPI_Group_translate_ranks(before, 1, &i, after, &in_after);
        if (in_after == MPI_UNDEFINED) {
            MPI_Group_translate_ranks(before, 1, &i, s->world_group, &world_rank);
            s->batch[s->node_of[world_rank]] = 1;
        }
    }
    for (int node = 0; node < s->layout.nodes; node++) {
        if (s->batch[node] && !s->dead[node]) {
            s->failed[s->nfailed++] = node;
            s->dead[node] = 1;
        }
    }
    MPI_Group_free(&before);
    MPI_Group_free(&after);
}

static double now(void)
{
    return MPI_Wtime();
}

/* Whether an MPI error may be a process failure's or the revoke that spreads
 * one (a multiple completion's error hides which: take it as one). */
static int is_failure(int code)
{
    int eclass = MPI_SUCCESS;
    if (code != MPI_SUCCESS) {
        MPI_Error_class(code, &eclass);
    }
    return eclass == MPIX_ERR_PROC_FAILED || eclass == MPIX_ERR_PROC_FAILED_PENDING || eclass == MPIX_ERR_REVOKED ||
           eclass == MPI_ERR_IN_STATUS || eclass == MPI_ERR_PENDING;
}

/* The recovery protocol of sliding.h, run by every surviving process. */
static int recover_once(sliding_t *s)
{
    sliding_recovery_times t = {0};
    double start = now();
    int32_t *old_map = malloc(sizeof(int32_t) * (size_t)s->layout.ranks);
    if (!old_map) {
        return SLIDING_ERR_NOMEM;
    }
    /* An error of the application's own on cart (not a failure's): every
     * survivor learns of it in the first agreement and gives up. */
    const int app_error = s->cart != MPI_COMM_NULL && s->cart_error != MPI_SUCCESS && !is_failure(s->cart_error);
    if (s->cart_freed_by_app) { /* its handle is gone: never touch it */
        s->cart = MPI_COMM_NULL;
    }
    /* The map the committed checkpoint was taken under: the current one. */
    memcpy(old_map, s->map, sizeof(int32_t) * (size_t)s->layout.ranks);
    int status = SLIDING_ERR_MPI;
    /* Every member of cart leaves it after the same number of agreements on
     * it. A member that saw no failure may be in sliding_checkpoint's
     * agreement, which the revoke does not interrupt: it would wait there for
     * us for ever. Our agreement meets it and fails the checkpoint, whose
     * caller comes here in turn. A checkpoint whose agreement failed has
     * already ended cart at every member. */
    if (s->cart != MPI_COMM_NULL && !s->cart_closed) {
        MPIX_Comm_revoke(s->alive);
        MPIX_Comm_revoke(s->cart);
        int none = 0;
        (void)MPIX_Comm_agree(s->cart, &none);
    }
    for (t.attempts = 1; t.attempts <= MAX_ATTEMPTS; t.attempts++) {
        killpoint(s, SLIDING_POINT_RECOVERY_START);
        double phase = now();
        MPIX_Comm_revoke(s->alive);
        if (s->cart != MPI_COMM_NULL) {
            MPIX_Comm_revoke(s->cart);
            free_cart(s);
        }
        MPI_Comm shrunk;
        if (MPIX_Comm_shrink(s->alive, &shrunk) != MPI_SUCCESS) {
            continue;
        }
        MPI_Comm_set_errhandler(shrunk, MPI_ERRORS_RETURN);
        append_failed_batch(s, shrunk);
        MPI_Comm_free(&s->alive);
        s->alive = shrunk;
        killpoint(s, SLIDING_POINT_RECOVERY_AGREE);
        /* Waiting processes missed the checkpoints taken since they started waiting. */
        int64_t version = s->version;
        int rc = MPI_Allreduce(&s->version, &version, 1, MPI_INT64_T, MPI_MAX, s->alive);
        /* The allreduce can fail at some survivors and succeed at others (a
         * process that dies inside it). Whoever fails revokes, so that nobody
         * stays blocked in it, and all of them agree whether to go on: every
         * survivor must run the same agreements on alive in the same order,
         * or one process's commit agreement meets another's next shrink (an
         * agreement of another kind: its context id came out as garbage). */
        enum { STEP_OK = 1, NO_APP_ERROR = 2 };
        int flags = (rc == MPI_SUCCESS ? STEP_OK : 0) | (app_error ? 0 : NO_APP_ERROR);
        if (rc != MPI_SUCCESS) {
            MPIX_Comm_revoke(s->alive);
        }
        rc = MPIX_Comm_agree(s->alive, &flags);
        t.agree += now() - phase;
        if (rc == MPI_SUCCESS && !(flags & NO_APP_ERROR)) {
            /* Recovering would only meet the same error again, for ever. */
            status = SLIDING_ERR_MPI;
            break;
        }
        if (rc != MPI_SUCCESS || !(flags & STEP_OK)) {
            continue;
        }

        killpoint(s, SLIDING_POINT_RECOVERY_MAP);
        phase = now();
        int32_t err_index;
        int map_rc = slide_map(&s->layout, s->method, s->failed, s->nfailed, s->new_map, s->work,
                               s->work_bytes, &err_index);
        t.mapping += now() - phase;
        if (map_rc != SLIDE_OK) {
            status = SLIDING_ERR_NO_SPARE;
            break;
        }
        int lost = 0;
        for (int r = 0; version >= 0 && r < s->layout.ranks; r++) {
            int from_buddy;
            lost |= state_source(s, old_map, r, &from_buddy) < 0;
        }
        if (lost) {
            status = SLIDING_ERR_DATA_LOST;
            break;
        }
        memcpy(s->map, s->new_map, sizeof(int32_t) * (size_t)s->layout.ranks);

        killpoint(s, SLIDING_POINT_RECOVERY_REBUILD);
        phase = now();
        rc = build_cart(s);
        t.rebuild += now() - phase;
        killpoint(s, SLIDING_POINT_RECOVERY_STATE);
        phase = now();
        if (rc == MPI_SUCCESS && version >= 0) {
            s->version = version;
            rc = move_state(s, old_map);
            if (rc == MPI_SUCCESS && s->cart != MPI_COMM_NULL) {
                rc = exchange_checkpoint(s, version);
            }
        }
        t.state += now() - phase;
        if (rc != MPI_SUCCESS) {
            /* Wake the peers still blocked on us in the state moves or the
             * checkpoint exchange: a failure only some of them can see (an
             * idle node that held a checkpoint) would leave the rest waiting.
             * The agreement below works on revoked communicators. */
            if (s->cart != MPI_COMM_NULL) {
                MPIX_Comm_revoke(s->cart);
            }
            MPIX_Comm_revoke(s->alive);
        }

        killpoint(s, SLIDING_POINT_RECOVERY_COMMIT);
        phase = now();
        int ok = rc == MPI_SUCCESS;
        rc = MPIX_Comm_agree(s->alive, &ok);
        t.commit += now() - phase;
        if (rc == MPI_SUCCESS && ok) {
            if (version >= 0) {
                commit_pending(s);
                count_state_bytes(s, old_map, &t);
            }
            status = SLIDING_OK;
            break;
        }
        /* A failure during recovery: start again (revoke, shrink) from the last
         * committed checkpoint, which was taken under old_map. */
    }
    free(old_map);
    t.total = now() - start;
    t.failed_nodes = s->nfailed;
    s->last = t;
    s->recovered = 1;
    return status;
}

/* Run this process's recovery callbacks (if it holds a rank) and agree over
 * alive, at every survivor, on how they went: SLIDING_OK, SLIDING_ERR_CALLBACK
 * (one returned non-zero or freed cart), or SLIDING_ERR_FAILED (a process
 * failed meanwhile: recover again). Skipped, everywhere alike, when no
 * callback is registered (sliding_start checked that every process has the
 * same number). */
static int run_callbacks(sliding_t *s, int old_rank)
{
    if (s->ncallbacks == 0) {
        return SLIDING_OK;
    }
    enum { CALLBACKS_OK = 1, NO_FAILURE = 2 };
    int callbacks_ok = 1;
    for (int i = 0; s->cart != MPI_COMM_NULL && callbacks_ok && i < s->ncallbacks; i++) {
        callbacks_ok = s->callbacks[i].fn(s, old_rank, sliding_rank(s), s->cart, s->callbacks[i].arg) == 0 &&
                       !s->cart_freed_by_app;
    }
    int no_failure = s->cart == MPI_COMM_NULL || !is_failure(s->cart_error);
    if (s->cart_freed_by_app) {
        s->cart = MPI_COMM_NULL; /* the application's free took it (and revoked it) */
    } else if (s->cart != MPI_COMM_NULL && (!callbacks_ok || !no_failure)) {
        MPIX_Comm_revoke(s->cart); /* peers may wait for this process in their callbacks' MPI calls */
    }
    /* A callback that fails because a process failed under it is that
     * failure, not its own; freeing cart is always its own. */
    int flags = ((callbacks_ok || !no_failure) && !s->cart_freed_by_app ? CALLBACKS_OK : 0) |
                (no_failure ? NO_FAILURE : 0);
    int rc = MPIX_Comm_agree(s->alive, &flags);
    if (rc == MPI_SUCCESS && !(flags & CALLBACKS_OK)) {
        return SLIDING_ERR_CALLBACK;
    }
    return rc == MPI_SUCCESS && (flags & NO_FAILURE) ? SLIDING_OK : SLIDING_ERR_FAILED;
}

/* Recover, then run the callbacks; a failure during the callbacks starts
 * another recovery. The callbacks get the rank held before the first. */
static int recover_all(sliding_t *s)
{
    int old_rank = sliding_rank(s), status = SLIDING_ERR_MPI;
    for (int attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        status = recover_once(s);
        if (status == SLIDING_OK) {
            status = run_callbacks(s, old_rank);
        }
        if (status != SLIDING_ERR_FAILED) {
            return status;
        }
    }
    return SLIDING_ERR_MPI;
}

/* Wait until released (SLIDING_FINISHED) or given a rank (SLIDING_PROMOTED). */
static int wait_for_work(sliding_t *s, int *role)
{
    for (;;) {
        killpoint(s, SLIDING_POINT_WAITING);
        char token;
        MPI_Request req;
        MPI_Status status;
        MPI_Irecv(&token, 1, MPI_CHAR, MPI_ANY_SOURCE, TAG_RELEASE, s->alive, &req);
        int rc = MPI_Wait(&req, &status), eclass = MPI_SUCCESS;
        if (rc == MPI_SUCCESS) {
            *role = SLIDING_FINISHED;
            return SLIDING_OK;
        }
        MPI_Error_class(rc, &eclass);
        if (eclass == MPIX_ERR_PROC_FAILED_PENDING) {
            /* Another process died (a spare, or a worker whose peers have not
             * noticed yet): keep waiting; the workers' recovery will wake us. */
            MPIX_Comm_failure_ack(s->alive);
            MPI_Cancel(&req);
            MPI_Request_free(&req);
            continue;
        }
        if (eclass != MPIX_ERR_REVOKED && eclass != MPIX_ERR_PROC_FAILED) {
            return SLIDING_ERR_MPI;
        }
        int result = recover_all(s);
        if (result != SLIDING_OK) {
            return result;
        }
        if (rank_of_node(s, s->node) >= 0) {
            killpoint(s, SLIDING_POINT_PROMOTED);
            *role = SLIDING_PROMOTED;
            return SLIDING_OK;
        }
    }
}

static int allocate_copies(sliding_t *s)
{
    copy_t *copies[] = {&s->own, &s->buddy, &s->own_pending, &s->buddy_pending};
    for (size_t i = 0; i < sizeof copies / sizeof *copies; i++) {
        copies[i]->data = malloc(s->total_bytes ? s->total_bytes : 1);
        if (!copies[i]->data) {
            return SLIDING_ERR_NOMEM;
        }
    }
    s->scratch = malloc(s->total_bytes ? s->total_bytes : 1);
    return s->scratch ? SLIDING_OK : SLIDING_ERR_NOMEM;
}

int sliding_start(sliding_t *s, MPI_Comm *cart, int *role, int64_t *version)
{
    if (!s || !cart || !role || !version) {
        return SLIDING_ERR_ARG;
    }
    if (s->started) {
        return SLIDING_ERR_STATE;
    }
    s->started = 1;
    int status = allocate_copies(s);
    /* Every process must carry the same state and run the same number of
     * callbacks (run_callbacks' agreement): compare counts, total and a hash
     * of the sizes, as maxima of the values and of their negations. */
    uint64_t hash = 1469598103934665603ull; /* FNV-1a over the sizes, in order */
    for (int i = 0; i < s->nbufs; i++) {
        hash = (hash ^ (uint64_t)s->sizes[i]) * 1099511628211ull;
    }
    int64_t mine[4] = {s->nbufs, s->ncallbacks, (int64_t)(s->total_bytes & INT64_MAX), (int64_t)(hash >> 2)};
    int64_t seen[9] = {mine[0], mine[1], mine[2], mine[3], -mine[0], -mine[1], -mine[2], -mine[3], status};
    if (MPI_Allreduce(MPI_IN_PLACE, seen, 9, MPI_INT64_T, MPI_MAX, s->alive) != MPI_SUCCESS) {
        return SLIDING_ERR_MPI;
    }
    if (seen[8] != SLIDING_OK) {
        return (int)seen[8];
    }
    for (int i = 0; i < 4; i++) {
        if (seen[i] != -seen[4 + i]) {
            return SLIDING_ERR_REGISTER;
        }
    }
    if (build_cart(s) != MPI_SUCCESS) {
        return SLIDING_ERR_MPI;
    }
    *role = SLIDING_INITIAL;
    if (s->cart == MPI_COMM_NULL) {
        status = wait_for_work(s, role);
    }
    *cart = s->cart;
    *version = s->version;
    return status;
}

int sliding_checkpoint(sliding_t *s, int64_t version)
{
    if (!s || !s->started || s->cart == MPI_COMM_NULL || s->cart_freed_by_app) {
        return SLIDING_ERR_STATE;
    }
    if (s->cart_closed) { /* an earlier agreement on cart failed: nobody takes part in another */
        return s->cart_error != MPI_SUCCESS ? s->cart_error : MPIX_ERR_REVOKED;
    }
    /* A worker whose step failed still takes part in the agreement, with
     * "no": every worker runs the same agreements on cart (recover_once). */
    int rc = sliding_ok(s) ? exchange_checkpoint(s, version) : MPIX_ERR_REVOKED;
    killpoint(s, SLIDING_POINT_CHECKPOINT);
    int ok = rc == MPI_SUCCESS;
    int agree_rc = MPIX_Comm_agree(s->cart, &ok);
    s->cart_closed = agree_rc != MPI_SUCCESS || !ok;
    if (s->cart_closed && s->cart_error == MPI_SUCCESS) {
        s->cart_error = agree_rc != MPI_SUCCESS ? agree_rc : rc != MPI_SUCCESS ? rc : MPIX_ERR_PROC_FAILED;
    }
    if (agree_rc != MPI_SUCCESS) {
        return agree_rc;
    }
    if (!ok) {
        return rc != MPI_SUCCESS ? rc : MPIX_ERR_PROC_FAILED;
    }
    commit_pending(s);
    s->version = version;
    return MPI_SUCCESS;
}

int sliding_recover(sliding_t *s, MPI_Comm *cart, int *role, int64_t *version)
{
    if (!s || !cart || !role || !version) {
        return SLIDING_ERR_ARG;
    }
    if (!s->started) {
        return SLIDING_ERR_STATE;
    }
    int status = recover_all(s);
    if (status == SLIDING_OK && s->cart == MPI_COMM_NULL) {
        status = wait_for_work(s, role); /* this process lost its rank (slide2d) */
    } else {
        *role = SLIDING_SURVIVOR;
    }
    *cart = s->cart;
    *version = s->version;
    return status;
}

int sliding_checkpoint_due(const sliding_t *s, int64_t iteration)
{
    return s != NULL && iteration > 0 && iteration % s->checkpoint_every == 0;
}

int sliding_ok(const sliding_t *s)
{
    if (!s || s->cart == MPI_COMM_NULL || s->cart_freed_by_app || s->cart_closed || s->cart_error != MPI_SUCCESS) {
        return 0;
    }
    int revoked = 0;
    MPIX_Comm_is_revoked(s->cart, &revoked);
    return !revoked;
}

int sliding_finish(sliding_t *s)
{
    if (!s || !s->started || s->cart == MPI_COMM_NULL || s->cart_freed_by_app) {
        return s ? SLIDING_ERR_STATE : SLIDING_ERR_ARG;
    }
    if (s->cart_closed) {
        return SLIDING_ERR_FAILED;
    }
    int ok = sliding_ok(s);
    int rc = MPIX_Comm_agree(s->cart, &ok);
    if (rc != MPI_SUCCESS || !ok) {
        s->cart_closed = 1;
        if (s->cart_error == MPI_SUCCESS) {
            s->cart_error = rc != MPI_SUCCESS ? rc : MPIX_ERR_REVOKED;
        }
        return SLIDING_ERR_FAILED;
    }
    return sliding_finalize(s);
}

int sliding_finalize(sliding_t *s)
{
    if (!s || !s->started) {
        return SLIDING_ERR_STATE;
    }
    int cart_rank = -1;
    if (s->cart != MPI_COMM_NULL) {
        MPI_Comm_rank(s->cart, &cart_rank);
    }
    if (cart_rank != 0) {
        return SLIDING_OK;
    }
    /* Release every living process that holds no rank: spares, idle nodes,
     * and the surviving processes of a failed node. Best effort: a process
     * that died meanwhile is skipped by MPI_Finalize's own failure drain. */
    unsigned char *has_rank = calloc((size_t)s->layout.nodes, 1);
    if (!has_rank) {
        return SLIDING_ERR_NOMEM;
    }
    for (int32_t r = 0; r < s->layout.ranks; r++) {
        has_rank[s->map[r]] = 1;
    }
    char token = 1;
    for (int node = 0; node < s->layout.nodes; node++) {
        for (int lane = 0; lane < s->k && !has_rank[node]; lane++) {
            int peer = alive_rank(s, node, lane);
            if (peer != MPI_UNDEFINED) {
                MPI_Send(&token, 1, MPI_CHAR, peer, TAG_RELEASE, s->alive);
            }
        }
    }
    free(has_rank);
    return SLIDING_OK;
}

void sliding_free(sliding_t *s)
{
    if (!s) {
        return;
    }
    free_cart(s);
    if (s->alive != MPI_COMM_NULL && s->alive) {
        MPI_Comm_free(&s->alive);
    }
    if (s->world != MPI_COMM_NULL && s->world) {
        MPI_Comm_free(&s->world);
        MPI_Group_free(&s->world_group);
    }
    free(s->own.data);
    free(s->buddy.data);
    free(s->own_pending.data);
    free(s->buddy_pending.data);
    free(s->scratch);
    free(s->bufs);
    free(s->sizes);
    free(s->map);
    free(s->new_map);
    free(s->failed);
    free(s->dead);
    free(s->batch);
    free(s->procs);
    free(s->node_of);
    free(s->pids);
    free(s->work);
    free(s->callbacks);
    if (s->holds_hooks) {
        release_cart_hooks();
    }
    free(s);
}

int sliding_on_recovery(sliding_t *s, sliding_recovery_callback fn, void *arg)
{
    if (!s || !fn) {
        return SLIDING_ERR_ARG;
    }
    if (s->started) {
        return SLIDING_ERR_STATE;
    }
    callback_t *callbacks = realloc(s->callbacks, sizeof *callbacks * (size_t)(s->ncallbacks + 1));
    if (!callbacks) {
        return SLIDING_ERR_NOMEM;
    }
    s->callbacks = callbacks;
    s->callbacks[s->ncallbacks++] = (callback_t){fn, arg};
    return SLIDING_OK;
}

int sliding_dims(const sliding_t *s, int *ndims, int dims[3])
{
    if (!s || !ndims || !dims) {
        return SLIDING_ERR_ARG;
    }
    *ndims = s->layout.grid.ndims;
    for (int d = 0; d < 3; d++) {
        dims[d] = d < *ndims ? s->layout.logical[d] * s->block[d] : 1;
    }
    return SLIDING_OK;
}

int sliding_coords(const sliding_t *s, int coords[3])
{
    int ndims, dims[3];
    if (!coords || sliding_dims(s, &ndims, dims) != SLIDING_OK) {
        return SLIDING_ERR_ARG;
    }
    int rank = sliding_rank(s);
    for (int d = 2; d >= 0; d--) { /* MPI_Cart_coords: the last dimension varies fastest */
        coords[d] = rank < 0 ? -1 : d < ndims ? rank % dims[d] : 0;
        rank = rank < 0 || d >= ndims ? rank : rank / dims[d];
    }
    return SLIDING_OK;
}

int sliding_rank(const sliding_t *s)
{
    int node_rank = rank_of_node(s, s->node);
    return node_rank >= 0 ? lane_rank(s, node_rank) : -1;
}

int sliding_node(const sliding_t *s)
{
    return s->node;
}

int sliding_lane(const sliding_t *s)
{
    return s->lane;
}

int sliding_ranks(const sliding_t *s)
{
    return s->layout.ranks * s->k;
}

int sliding_ranks_per_node(const sliding_t *s)
{
    return s->k;
}

void sliding_block(const sliding_t *s, int block[3])
{
    for (int d = 0; d < SLIDE_MAX_DIMS; d++) {
        block[d] = s->block[d];
    }
}

const int32_t *sliding_map(const sliding_t *s)
{
    return s->map;
}

int sliding_failed(const sliding_t *s, const int32_t **nodes)
{
    *nodes = s->failed;
    return s->nfailed;
}

void sliding_last_recovery(const sliding_t *s, sliding_recovery_times *out)
{
    *out = s->last;
}

void sliding_report_recovery(const sliding_t *s, const char *program, int64_t iteration)
{
    if (!s || !s->recovered || sliding_rank(s) != 0) {
        return;
    }
    const sliding_recovery_times *t = &s->last;
    printf("%s: recovered iteration=%" PRId64 " failed=", program, iteration);
    for (int i = 0; i < s->nfailed; i++) {
        printf("%s%d", i ? "," : "", (int)s->failed[i]);
    }
    printf(" attempts=%d agree_ms=%.3f map_ms=%.3f rebuild_ms=%.3f state_ms=%.3f commit_ms=%.3f total_ms=%.3f"
           " moved_bytes=%" PRId64 " buddy_bytes=%" PRId64 "\n",
           t->attempts, t->agree * 1e3, t->mapping * 1e3, t->rebuild * 1e3, t->state * 1e3, t->commit * 1e3,
           t->total * 1e3, t->moved_bytes, t->buddy_bytes);
    fflush(stdout);
}

void sliding_report_error(const sliding_t *s, const char *program, const char *step, int status)
{
    int world_rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    if (s || world_rank == 0) {
        fprintf(stderr, "%s: error step=%s status=%s message=%s\n", program, step,
                sliding_status_name(status) ? sliding_status_name(status) : "?", sliding_strerror(status));
        fflush(stderr);
    }
}
