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
#include "sliding_internal.h"
#include "sliding_kill.h"

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
void killpoint(const sliding_t *s, enum sliding_point point)
{
    sliding_killpoint(s, sliding_point_name(point));
}

/* Node rank held by a node, -1 if none. */
int rank_of_node(const sliding_t *s, int node)
{
    for (int32_t r = 0; r < s->layout.ranks; r++) {
        if (s->map[r] == node) {
            return r;
        }
    }
    return -1;
}

/* Logical rank (Cartesian rank) of this process's lane in a node rank. */
int lane_rank(const sliding_t *s, int node_rank)
{
    return slide_block_rank(&s->layout, s->block, node_rank, s->lane);
}

/* Rank in s->alive of this process's lane on 'node' (MPI_UNDEFINED if gone). */
int alive_rank(const sliding_t *s, int node, int lane)
{
    MPI_Group group;
    int out, world_rank = s->procs[node * s->k + lane];
    if (world_rank < 0) {
        return MPI_UNDEFINED;
    }
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
    char redundancy[64];      /* "" if not given: buddy */
    char domains[64];         /* "" if not given: every node its own domain */
    char dir[4096];           /* "" if not given: no file level */
    long long file_every;     /* 0 if not given */
    int degrade;              /* SLIDING_INFO_ON_NO_SPARE is "degrade" */
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
    MPI_Info_get(info, SLIDING_INFO_REDUNDANCY, (int)sizeof o->redundancy - 1, o->redundancy, &flag);
    if (!flag) {
        o->redundancy[0] = '\0';
    }
    MPI_Info_get(info, SLIDING_INFO_DOMAINS, (int)sizeof o->domains - 1, o->domains, &flag);
    if (!flag) {
        o->domains[0] = '\0';
    }
    MPI_Info_get(info, SLIDING_INFO_CHECKPOINT_DIR, (int)sizeof o->dir - 1, o->dir, &flag);
    if (!flag) {
        o->dir[0] = '\0';
    }
    MPI_Info_get(info, SLIDING_INFO_ON_NO_SPARE, (int)sizeof value - 1, value, &flag);
    if (flag && strcmp(value, "degrade") != 0 && strcmp(value, "fail") != 0) {
        return SLIDING_ERR_INFO;
    }
    o->degrade = flag && strcmp(value, "degrade") == 0;
    MPI_Info_get(info, SLIDING_INFO_FILE_EVERY, (int)sizeof value - 1, value, &flag);
    if (flag) {
        char *end;
        o->file_every = strtoll(value, &end, 10);
        if (end == value || *end != '\0' || o->file_every < 1 || o->file_every > INT32_MAX) {
            return SLIDING_ERR_INFO;
        }
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

void sliding_killpoint(const sliding_t *s, const char *point)
{
    if (ftslide_killspec() == NULL || s == NULL || point == NULL) {
        return;
    }
    /* The node's processes, and those of the guests it runs: they die with it. */
    int n = 0, slots = node_slots(s), *nodes = malloc(sizeof(int) * (size_t)slots);
    for (int node = s->node; nodes && node < slots; node++) {
        if (node == s->node || (s->node < s->layout.nodes && node >= s->layout.nodes && !s->dead[node] &&
                                node - s->layout.nodes < s->nspawned && host_of(s, node) == s->node)) {
            nodes[n++] = node;
        }
    }
    int *logical_ranks = malloc(sizeof(int) * (size_t)(n * s->k)), *pids = malloc(sizeof(int) * (size_t)(n * s->k));
    int *world_ranks = malloc(sizeof(int) * (size_t)(n * s->k));
    if (nodes && logical_ranks && pids && world_ranks) {
        for (int i = 0; i < n; i++) {
            int node_rank = rank_of_node(s, nodes[i]);
            for (int l = 0; l < s->k; l++) {
                logical_ranks[i * s->k + l] =
                    node_rank >= 0 ? slide_block_rank(&s->layout, s->block, node_rank, l) : -1;
                pids[i * s->k + l] = s->pids[nodes[i] * s->k + l];
                world_ranks[i * s->k + l] = s->procs[nodes[i] * s->k + l];
            }
        }
        const sliding_victims victims = {s->node, s->lane, n * s->k, pids, world_ranks, logical_ranks};
        sliding_kill_node_at(&victims, point);
    }
    free(nodes);
    free(logical_ranks);
    free(pids);
    free(world_ranks);
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

/* A guest's sliding_create (sliding_degrade.c): the survivors that spawned
 * it hand it the runtime's state; the options are its own (the same command
 * line). Its sliding_start joins the recovery under way. */
static int join_as_guest(MPI_Comm comm, MPI_Comm parent, const slide_layout *layout, slide_method m,
                         const char *grid, const char *spares, const options_t *opt, sliding_t **out)
{
    sliding_t *s = calloc(1, sizeof *s);
    if (!s) {
        return SLIDING_ERR_NOMEM;
    }
    s->layout = *layout;
    s->method = m;
    s->degrade = 1;
    s->joined = 1;
    s->cart = MPI_COMM_NULL;
    s->own.rank = s->buddy.rank = s->own_pending.rank = s->buddy_pending.rank = -1;
    s->file_staged = -1;
    MPI_Comm_rank(comm, &s->join_index);
    int32_t *domains = NULL;
    int status = degrade_allocate(s);
    if (status == SLIDING_OK) {
        s->work_bytes = slide_degrade_workspace_bytes(layout, s->max_guests);
        s->work = malloc(s->work_bytes);
        status = s->work ? guest_join(s, parent, &domains) : SLIDING_ERR_NOMEM;
    }
    if (status == SLIDING_OK) {
        snprintf(s->grid_text, sizeof s->grid_text, "%s", grid);
        snprintf(s->spares_text, sizeof s->spares_text, "%s", spares);
        status = checkpoint_policy(s, opt->redundancy, opt->domains, opt->domains[0] ? NULL : domains);
    }
    free(domains);
    if (status == SLIDING_OK) {
        int64_t file_committed = s->file_committed; /* the survivors', which checkpoint_files resets */
        status = checkpoint_files(s, opt->dir, opt->file_every);
        s->file_committed = file_committed;
    }
    if (status == SLIDING_OK) {
        s->holds_hooks = 1;
        status = keep_cart_hooks() == MPI_SUCCESS ? SLIDING_OK : SLIDING_ERR_MPI;
    }
    if (status != SLIDING_OK) {
        sliding_free(s);
        return status;
    }
    *out = s;
    return SLIDING_OK;
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
    MPI_Comm parent = MPI_COMM_NULL;
    MPI_Comm_get_parent(&parent);
    if (slide_grid_parse(grid, &g) || slide_spares_parse(spares, &sp) ||
        slide_method_parse(method, &m) || slide_method_one_rank_per_node(m) != 1 ||
        slide_layout_init(&layout, &g, &sp)) {
        status = SLIDING_ERR_ARG;
    } else if ((status = read_options(info, &opt)) == SLIDING_OK && opt.degrade && parent != MPI_COMM_NULL) {
        return join_as_guest(comm, parent, &layout, m, grid, spares, &opt, out);
    } else if (status == SLIDING_OK && size % layout.nodes != 0) {
        status = SLIDING_ERR_SIZE;
    } else if (status == SLIDING_OK) {
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
    int32_t *file_domains = NULL, file_ndomains = 0; /* the coordinate file's domain= fields, by grid node */
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
        file_domains = malloc(sizeof(int32_t) * (size_t)groups);
        if (status == SLIDING_OK && !file_domains) {
            status = SLIDING_ERR_NOMEM;
        }
        if (status == SLIDING_OK && me == 0) {
            status = sliding_nodes_read_domains(opt.coords, layout.grid.ndims, layout.grid.size, groups,
                                                (const char *const *)names, grid_node, file_domains,
                                                &file_ndomains, &where);
        }
        for (int j = 0; names && j < groups; j++) {
            free(names[j]);
        }
        free(names);
        MPI_Allreduce(MPI_IN_PLACE, &status, 1, MPI_INT, MPI_MAX, comm);
        if (status == SLIDING_OK) {
            MPI_Bcast(grid_node, groups, MPI_INT32_T, 0, comm);
            MPI_Bcast(file_domains, groups, MPI_INT32_T, 0, comm);
            MPI_Bcast(&file_ndomains, 1, MPI_INT32_T, 0, comm);
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
        s->degrade = opt.degrade;
        status = s->degrade ? degrade_allocate(s) : SLIDING_OK;
        size_t slots = (size_t)node_slots(s);
        s->work_bytes = slide_degrade_workspace_bytes(&layout, s->max_guests);
        s->procs = malloc(sizeof(int) * slots * (size_t)k);
        s->node_of = malloc(sizeof(int32_t) * (size_t)size);
        s->pids = calloc(slots * (size_t)k, sizeof(int));
        s->map = malloc(sizeof(int32_t) * (size_t)layout.ranks);
        s->new_map = malloc(sizeof(int32_t) * (size_t)layout.ranks);
        s->failed = malloc(sizeof(int32_t) * slots);
        s->dead = calloc(slots, 1);
        s->batch = calloc(slots, 1);
        s->work = malloc(s->work_bytes);
        if (status != SLIDING_OK || !s->procs || !s->node_of || !s->pids || !s->map || !s->new_map || !s->failed ||
            !s->dead || !s->batch || !s->work) {
            status = status != SLIDING_OK ? status : SLIDING_ERR_NOMEM;
        } else {
            for (size_t i = 0; i < slots * (size_t)k; i++) {
                s->procs[i] = -1;
            }
            for (int p = 0; p < size; p++) {
                int node = grid_node[job_node[p]];
                s->procs[node * k + lane[p]] = p;
                s->pids[node * k + lane[p]] = pids[p];
                s->node_of[p] = node;
            }
            s->node = grid_node[job_node[me]];
            s->lane = lane[me];
            slide_initial_map(&layout, s->map);
            snprintf(s->grid_text, sizeof s->grid_text, "%s", grid);
            snprintf(s->spares_text, sizeof s->spares_text, "%s", spares);
            status = checkpoint_policy(s, opt.redundancy, opt.domains, file_ndomains > 0 ? file_domains : NULL);
            if (status == SLIDING_OK) {
                status = checkpoint_files(s, opt.dir, opt.file_every);
            }
        }
    }
    /* The same policy everywhere: its status and a hash of its text. */
    uint32_t policy_hash = 2166136261u; /* FNV-1a over "redundancy;domains" */
    for (const char *texts[] = {opt.redundancy, ";", opt.domains, ";", opt.dir, ";", opt.degrade ? "degrade" : "", NULL},
                    **t = texts;
         *t; t++) {
        for (const char *c = *t; *c; c++) {
            policy_hash = (policy_hash ^ (unsigned char)*c) * 16777619u;
        }
    }
    int policy[3] = {status, (int)(policy_hash >> 1), -(int)(policy_hash >> 1)};
    MPI_Allreduce(MPI_IN_PLACE, policy, 3, MPI_INT, MPI_MAX, comm);
    status = policy[0] != SLIDING_OK ? policy[0] : policy[1] != -policy[2] ? SLIDING_ERR_INFO : SLIDING_OK;
    free(keys);
    free(job_node);
    free(lane);
    free(pids);
    free(group_key);
    free(grid_node);
    free(file_domains);
    if (status == SLIDING_OK && s->degrade) {
        status = degrade_hostnames(s, comm, size);
    }
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
                           const char *block, const int *node_key, const char *node_coords,
                           const char *redundancy, const char *domains, sliding_t **out)
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
    if (rc == MPI_SUCCESS && redundancy) {
        rc = MPI_Info_set(info, SLIDING_INFO_REDUNDANCY, redundancy);
    }
    if (rc == MPI_SUCCESS && domains) {
        rc = MPI_Info_set(info, SLIDING_INFO_DOMAINS, domains);
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
                                             {"--redundancy", SLIDING_INFO_REDUNDANCY},
                                             {"--domains", SLIDING_INFO_DOMAINS},
                                             {"--checkpoint-dir", SLIDING_INFO_CHECKPOINT_DIR},
                                             {"--file-every", SLIDING_INFO_FILE_EVERY},
                                             {"--on-no-spare", SLIDING_INFO_ON_NO_SPARE},
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

/* Free cart unless the application did. */
void free_cart(sliding_t *s)
{
    if (s->cart != MPI_COMM_NULL && !s->cart_freed_by_app) {
        s->freeing_cart = 1;
        MPI_Comm_free(&s->cart);
        s->freeing_cart = 0;
    }
    s->cart = MPI_COMM_NULL;
}

/* Whether every process of s->alive got through a step: an agreement, so
 * that all of them take the next collective or none does. */
static int all_succeeded(sliding_t *s, int rc)
{
    int ok = rc == MPI_SUCCESS;
    return MPIX_Comm_agree(s->alive, &ok) == MPI_SUCCESS && ok;
}

/* Split s->alive into the workers' Cartesian communicator, in logical rank
 * order. Collective over alive, with one outcome everywhere. Neither step is
 * uniform under a failure (the split starts with a plain allgather, and both
 * allocate the context id with a plain allreduce): a process can fail one
 * while its peers are still in it, or already past it. Whoever fails revokes
 * the step's communicator, which frees the peers still inside, and an
 * agreement after each step tells everyone; without them, the peers past the
 * split would wait in the Cartesian creation for a process that never comes.
 * On failure s->cart may still hold the created communicator, which the
 * caller revokes and frees. A recovery's (``recovering``) has a kill point
 * between the two steps. */
int build_cart(sliding_t *s, int recovering)
{
    int node_rank = rank_of_node(s, s->node), rank = node_rank >= 0 ? lane_rank(s, node_rank) : -1;
    MPI_Comm split = MPI_COMM_NULL;
    s->cart = MPI_COMM_NULL;
    s->cart_closed = 0;
    s->cart_error = MPI_SUCCESS;
    s->cart_freed_by_app = 0;
    int rc = MPI_Comm_split(s->alive, rank >= 0 ? 0 : MPI_UNDEFINED, rank, &split);
    if (rc != MPI_SUCCESS) {
        MPIX_Comm_revoke(s->alive); /* peers still inside the split wait for us */
    }
    if (!all_succeeded(s, rc)) {
        if (rc == MPI_SUCCESS && split != MPI_COMM_NULL) { /* a failed split's handle is no communicator */
            MPI_Comm_free(&split);
        }
        return rc != MPI_SUCCESS ? rc : MPIX_ERR_PROC_FAILED;
    }
    if (recovering) {
        killpoint(s, SLIDING_POINT_RECOVERY_CART);
    }
    rc = MPI_SUCCESS;
    if (rank >= 0) {
        int ndims = s->layout.grid.ndims, dims[SLIDE_MAX_DIMS], periods[SLIDE_MAX_DIMS];
        for (int d = 0; d < ndims; d++) {
            dims[d] = s->layout.logical[d] * s->block[d];
            periods[d] = s->layout.grid.periodic;
        }
        rc = MPI_Cart_create(split, ndims, dims, periods, 0, &s->cart);
        if (rc != MPI_SUCCESS) {
            MPIX_Comm_revoke(split); /* peers still inside the creation wait for us */
            s->cart = MPI_COMM_NULL;  /* no communicator came out */
        }
        MPI_Comm_free(&split);
        if (rc == MPI_SUCCESS) {
            MPI_Comm_set_attr(s->cart, cart_keyval, s);
            MPI_Comm_set_errhandler(s->cart, cart_errhandler);
        }
    }
    if (!all_succeeded(s, rc)) {
        return rc != MPI_SUCCESS ? rc : MPIX_ERR_PROC_FAILED;
    }
    return MPI_SUCCESS;
}

/* What every process must have registered alike (sliding_start compares it,
 * a guest against the survivors'): buffer and callback counts, total bytes
 * and a hash of the sizes in order (FNV-1a). */
void registration_of(const sliding_t *s, int64_t out[REGISTRATION_FIELDS])
{
    uint64_t hash = 1469598103934665603ull;
    for (int i = 0; i < s->nbufs; i++) {
        hash = (hash ^ (uint64_t)s->sizes[i]) * 1099511628211ull;
    }
    out[0] = s->nbufs;
    out[1] = s->ncallbacks;
    out[2] = (int64_t)(s->total_bytes & INT64_MAX);
    out[3] = (int64_t)(hash >> 2);
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
    int status = checkpoint_allocate(s);
    int64_t mine[REGISTRATION_FIELDS];
    registration_of(s, mine);
    if (s->joined) {
        /* A guest: the survivors' recovery is under way; it joins it, and a
         * registration unlike theirs ends that recovery everywhere. */
        s->join_error = status != SLIDING_OK || memcmp(mine, s->expected, sizeof mine) != 0;
        status = recover_all(s);
        if (status == SLIDING_OK && s->cart == MPI_COMM_NULL) {
            status = wait_for_work(s, role);
        } else if (status == SLIDING_OK) {
            killpoint(s, SLIDING_POINT_PROMOTED);
            *role = SLIDING_PROMOTED;
        }
        *cart = s->cart;
        *version = s->version;
        return status != SLIDING_OK && s->join_error ? SLIDING_ERR_REGISTER : status;
    }
    /* Every process must carry the same state and run the same number of
     * callbacks (run_callbacks' agreement): compare counts, total and a hash
     * of the sizes, as maxima of the values and of their negations. */
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
    if (build_cart(s, 0) != MPI_SUCCESS) {
        return SLIDING_ERR_MPI;
    }
    int64_t resumed; /* s->version, when a checkpoint directory held one */
    if ((status = checkpoint_resume(s, &resumed)) != SLIDING_OK) {
        return status;
    }
    *role = SLIDING_INITIAL;
    if (s->cart == MPI_COMM_NULL) {
        status = wait_for_work(s, role);
    }
    *cart = s->cart;
    *version = s->version;
    return status;
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
    enum { DONE = 1, FILE_WRITTEN = 2 };
    int flags = (sliding_ok(s) ? DONE : 0) | (checkpoint_file_wait(s) ? FILE_WRITTEN : 0);
    int rc = MPIX_Comm_agree(s->cart, &flags);
    if (rc != MPI_SUCCESS || !(flags & DONE)) {
        s->cart_closed = 1;
        if (s->cart_error == MPI_SUCCESS) {
            s->cart_error = rc != MPI_SUCCESS ? rc : MPIX_ERR_REVOKED;
        }
        return SLIDING_ERR_FAILED;
    }
    checkpoint_file_manifest(s, (flags & FILE_WRITTEN) != 0);
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
    unsigned char *has_rank = calloc((size_t)node_slots(s), 1);
    if (!has_rank) {
        return SLIDING_ERR_NOMEM;
    }
    for (int32_t r = 0; r < s->layout.ranks; r++) {
        has_rank[s->map[r]] = 1;
    }
    char token = 1;
    for (int node = 0; node < node_slots(s); node++) {
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
    checkpoint_free(s);
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
    degrade_free(s);
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
           " moved_bytes=%" PRId64 " buddy_bytes=%" PRId64 " guests=%d\n",
           t->attempts, t->agree * 1e3, t->mapping * 1e3, t->rebuild * 1e3, t->state * 1e3, t->commit * 1e3,
           t->total * 1e3, t->moved_bytes, t->buddy_bytes, t->guests);
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
