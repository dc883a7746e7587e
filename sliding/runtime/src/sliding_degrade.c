/*
 * sliding_degrade.c -- running on when spares run out (SLIDING_INFO_ON_NO_SPARE
 * "degrade"). The core's slide_map_degrade() gives a lost node rank to the
 * least loaded live node; where that node already runs a rank, it names a
 * GUEST: k new processes on that node, with a node id past the grid's
 * (nodes + g). The survivors start them with MPI_Comm_spawn_multiple on
 * their host, merge them into the runtime's communicators and hand them the
 * runtime's state; a guest's sliding_create joins instead of creating, and
 * its sliding_start joins the recovery the survivors then run again, in
 * which it takes its rank as a promoted spare would.
 *
 * The steps, at every survivor and every guest alike:
 *   spawn (survivors)   agreement over alive that every guest started
 *   merge               MPI_Intercomm_merge, survivors first
 *   state               the runtime's state, broadcast from merged rank 0
 *   tables              everyone's (node, lane, pid), gathered
 *   agreement           over the merged communicator: all of it worked;
 *                       then it is the new world and alive, else the
 *                       guests give up (their sliding_create fails) and
 *                       the survivors try again.
 */
#include "sliding_internal.h"

#include <mpi-ext.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NAME_BYTES MPI_MAX_PROCESSOR_NAME

/* The runtime's state a guest needs, as the survivors hold it. */
enum {
    H_K,
    H_BLOCK0,
    H_BLOCK1,
    H_BLOCK2,
    H_NFAILED,
    H_NGUESTS,
    H_VERSION,
    H_FILE_COMMITTED,
    H_CHECKPOINT_EVERY,
    H_DOMAINS,      /* 1: domain_of_node follows */
    H_REGISTRATION, /* REGISTRATION_FIELDS entries: registration_of */
    H_STARTING = H_REGISTRATION + REGISTRATION_FIELDS, /* how many guests this spawn starts (their ids follow) */
    H_COUNT
};

/* Node slots: the grid's nodes, then the guests. */
int node_slots(const sliding_t *s)
{
    return s->layout.nodes + s->max_guests;
}

/* The physical node that runs `node` (itself, or a guest's host). */
int host_of(const sliding_t *s, int node)
{
    return node < s->layout.nodes ? node : s->host[node - s->layout.nodes];
}

const int32_t *placed_map(sliding_t *s, const int32_t *map)
{
    if (s->max_guests == 0) {
        return map;
    }
    for (int32_t r = 0; r < s->layout.ranks; r++) {
        s->placed[r] = host_of(s, map[r]);
    }
    return s->placed;
}

/* The program as this process was started (/proc/self/cmdline): what a guest
 * runs. A relative path gets the working directory in front. */
static int read_command_line(sliding_t *s)
{
    FILE *f = fopen("/proc/self/cmdline", "rb");
    if (!f) {
        return SLIDING_ERR_MPI;
    }
    size_t cap = 4096, used = 0;
    char *text = malloc(cap);
    while (text) {
        used += fread(text + used, 1, cap - used, f);
        if (used < cap) {
            break;
        }
        char *more = realloc(text, cap * 2);
        if (!more) {
            free(text);
            text = NULL;
        }
        text = more;
        cap *= 2;
    }
    fclose(f);
    if (!text || used == 0) {
        free(text);
        return SLIDING_ERR_MPI;
    }
    int argc = 0;
    for (size_t i = 0; i < used; i++) {
        argc += text[i] == '\0';
    }
    s->spawn_argv = calloc((size_t)argc + 1, sizeof *s->spawn_argv);
    if (!s->spawn_argv) {
        free(text);
        return SLIDING_ERR_NOMEM;
    }
    for (size_t i = 0, a = 0; i < used && (int)a < argc; a++) {
        s->spawn_argv[a] = text + i;
        i += strlen(text + i) + 1;
    }
    s->spawn_text = text;
    char cwd[4096];
    const char *program = s->spawn_argv[0];
    if (program[0] != '/' && strchr(program, '/') && getcwd(cwd, sizeof cwd)) {
        size_t n = strlen(cwd) + strlen(program) + 2;
        s->spawn_command = malloc(n);
        if (s->spawn_command) {
            snprintf(s->spawn_command, n, "%s/%s", cwd, program);
        }
    } else {
        s->spawn_command = strdup(program);
    }
    return s->spawn_command ? SLIDING_OK : SLIDING_ERR_NOMEM;
}

int degrade_allocate(sliding_t *s)
{
    s->max_guests = slide_degrade_max_guests(&s->layout);
    s->host = calloc((size_t)s->max_guests, sizeof *s->host);
    s->placed = malloc(sizeof(int32_t) * (size_t)s->layout.ranks);
    s->hostnames = calloc((size_t)s->layout.nodes, NAME_BYTES);
    if (!s->host || !s->placed || !s->hostnames) {
        return SLIDING_ERR_NOMEM;
    }
    return read_command_line(s);
}

int degrade_hostnames(sliding_t *s, MPI_Comm comm, int size)
{
    char *all = calloc((size_t)size, NAME_BYTES), mine[NAME_BYTES] = {0};
    int len = 0, status = all ? SLIDING_OK : SLIDING_ERR_NOMEM;
    MPI_Allreduce(MPI_IN_PLACE, &status, 1, MPI_INT, MPI_MAX, comm);
    if (status == SLIDING_OK) {
        MPI_Get_processor_name(mine, &len);
        MPI_Allgather(mine, NAME_BYTES, MPI_CHAR, all, NAME_BYTES, MPI_CHAR, comm);
        for (int node = 0; node < s->layout.nodes; node++) {
            memcpy(s->hostnames + (size_t)node * NAME_BYTES, all + (size_t)s->procs[node * s->k] * NAME_BYTES,
                   NAME_BYTES);
        }
    }
    free(all);
    return status;
}

void degrade_free(sliding_t *s)
{
    free(s->host);
    free(s->placed);
    free(s->hostnames);
    free(s->spawn_argv);
    free(s->spawn_text);
    free(s->spawn_command);
}

int new_map_of(sliding_t *s)
{
    int32_t err_index;
    if (!s->degrade) {
        return slide_map(&s->layout, s->method, s->failed, s->nfailed, s->new_map, s->work, s->work_bytes,
                         &err_index);
    }
    return slide_map_degrade(&s->layout, s->method, s->failed, s->nfailed, s->new_map, s->host, s->max_guests,
                             &s->nguests, s->work, s->work_bytes, &err_index);
}

/* Everyone's node, lane and pid over `merged`: the tables of the merged
 * communicator, kept aside until everyone agreed to use it. */
typedef struct tables {
    int *procs, *pids;
    int32_t *node_of;
} tables_t;

static void tables_free(tables_t *t)
{
    free(t->procs);
    free(t->pids);
    free(t->node_of);
    *t = (tables_t){0};
}

static int gather_tables(const sliding_t *s, MPI_Comm merged, tables_t *t)
{
    int size;
    MPI_Comm_size(merged, &size);
    size_t entries = (size_t)node_slots(s) * (size_t)s->k;
    int mine[3] = {s->node, s->lane, (int)getpid()}, *all = malloc(sizeof(int) * 3 * (size_t)size);
    t->procs = malloc(sizeof(int) * entries);
    t->pids = calloc(entries, sizeof(int));
    t->node_of = malloc(sizeof(int32_t) * (size_t)size);
    int ok = all && t->procs && t->pids && t->node_of, rc = MPI_SUCCESS;
    if (!ok) {
        MPIX_Comm_revoke(merged); /* nobody waits for this process in the allgather */
    } else {
        rc = MPI_Allgather(mine, 3, MPI_INT, all, 3, MPI_INT, merged);
    }
    if (ok && rc == MPI_SUCCESS) {
        for (size_t i = 0; i < entries; i++) {
            t->procs[i] = -1;
        }
        for (int p = 0; p < size; p++) {
            int node = all[3 * p], lane = all[3 * p + 1];
            t->node_of[p] = node;
            t->procs[node * s->k + lane] = p;
            t->pids[node * s->k + lane] = all[3 * p + 2];
        }
    }
    free(all);
    return ok && rc == MPI_SUCCESS ? MPI_SUCCESS : MPI_ERR_OTHER;
}

/* Merged, and its tables, are the runtime's from now on. */
static int install(sliding_t *s, MPI_Comm merged, tables_t *t)
{
    MPI_Comm alive;
    if (MPI_Comm_dup(merged, &alive) != MPI_SUCCESS) {
        return MPI_ERR_OTHER;
    }
    free(s->procs);
    free(s->pids);
    free(s->node_of);
    s->procs = t->procs;
    s->pids = t->pids;
    s->node_of = t->node_of;
    *t = (tables_t){0};
    MPI_Comm_set_errhandler(alive, MPI_ERRORS_RETURN);
    if (s->world != MPI_COMM_NULL) {
        MPI_Comm_free(&s->world);
        MPI_Group_free(&s->world_group);
    }
    if (s->alive != MPI_COMM_NULL) {
        MPI_Comm_free(&s->alive);
    }
    s->world = merged;
    s->alive = alive;
    MPI_Comm_group(s->world, &s->world_group);
    return MPI_SUCCESS;
}

static int guest_allocate(sliding_t *s, const int64_t *header, int32_t **domains);

/* The state broadcast, the tables and the closing agreement, at survivors
 * and guests alike (header and arrays in place at the root). */
static int share(sliding_t *s, MPI_Comm merged, int64_t *header, int32_t *starting, int32_t **domains,
                 tables_t *t)
{
    int rc = MPI_Bcast(header, H_COUNT, MPI_INT64_T, 0, merged);
    int32_t guests[MAX_STARTING]; /* a guest's copy of the ids started */
    if (rc == MPI_SUCCESS && s->joined) {
        rc = header[H_STARTING] <= MAX_STARTING ? MPI_SUCCESS : MPI_ERR_COUNT;
        starting = guests;
    }
    if (rc == MPI_SUCCESS) {
        rc = MPI_Bcast(starting, (int)header[H_STARTING], MPI_INT32_T, 0, merged);
    }
    if (rc == MPI_SUCCESS && s->joined) { /* a guest allocates once it knows the sizes */
        s->node = s->layout.nodes + starting[s->join_index / header[H_K]];
        rc = guest_allocate(s, header, domains) == SLIDING_OK ? MPI_SUCCESS : MPI_ERR_NO_MEM;
        if (rc != MPI_SUCCESS) {
            MPIX_Comm_revoke(merged);
        }
    }
    if (rc == MPI_SUCCESS) {
        rc = MPI_Bcast(s->failed, (int)header[H_NFAILED], MPI_INT32_T, 0, merged);
    }
    if (rc == MPI_SUCCESS) {
        rc = MPI_Bcast(s->map, s->layout.ranks, MPI_INT32_T, 0, merged);
    }
    if (rc == MPI_SUCCESS && header[H_NGUESTS] > 0) {
        rc = MPI_Bcast(s->host, (int)header[H_NGUESTS], MPI_INT32_T, 0, merged);
    }
    if (rc == MPI_SUCCESS) {
        rc = MPI_Bcast(s->hostnames, s->layout.nodes * NAME_BYTES, MPI_CHAR, 0, merged);
    }
    if (rc == MPI_SUCCESS && header[H_DOMAINS]) {
        rc = MPI_Bcast(*domains, s->layout.nodes, MPI_INT32_T, 0, merged);
    }
    if (rc == MPI_SUCCESS) {
        rc = gather_tables(s, merged, t);
    }
    int flag = rc == MPI_SUCCESS;
    if (!flag) {
        MPIX_Comm_revoke(merged);
    }
    rc = MPIX_Comm_agree(merged, &flag);
    return rc == MPI_SUCCESS && flag ? MPI_SUCCESS : MPI_ERR_OTHER;
}

int spawn_guests(sliding_t *s)
{
    killpoint(s, SLIDING_POINT_RECOVERY_SPAWN);
    /* The guests made since the last spawn, but those whose host died meanwhile (the core has
     * moved their ranks on): they never start. At most MAX_STARTING at once. */
    int32_t starting[MAX_STARTING];
    int count = 0;
    for (int32_t g = s->nspawned; g < s->nguests && count < MAX_STARTING; g++) {
        if (!s->dead[s->host[g]]) {
            starting[count++] = g;
        }
    }
    if (count == 0) {
        s->nspawned = s->nguests;
        return 0;
    }
    char **commands = malloc(sizeof(char *) * (size_t)count);
    char ***argvs = malloc(sizeof(char **) * (size_t)count);
    int *maxprocs = malloc(sizeof(int) * (size_t)count), *codes = malloc(sizeof(int) * (size_t)count * s->k);
    MPI_Info *infos = malloc(sizeof(MPI_Info) * (size_t)count);
    int made = 0, ok = commands && argvs && maxprocs && codes && infos;
    for (; ok && made < count; made++) {
        commands[made] = s->spawn_command;
        argvs[made] = s->spawn_argv + 1;
        maxprocs[made] = s->k;
        MPI_Info_create(&infos[made]);
        MPI_Info_set(infos[made], "host", s->hostnames + (size_t)s->host[starting[made]] * NAME_BYTES);
    }
    /* Everyone ready, and nobody dead unnoticed: a parent that is dead when the guests' MPI_Init
     * connects to their parents fails that MPI_Init, which aborts the whole job. The agreement
     * notices a failure before the spawn (then the recovery starts again); one during the spawn
     * itself remains that risk. */
    int rc = MPIX_Comm_agree(s->alive, &ok), agreed = rc == MPI_SUCCESS;
    ok = ok && agreed;
    MPI_Comm inter = MPI_COMM_NULL;
    int spawned = 0, spawn_rc = MPI_SUCCESS;
    if (ok) {
        spawn_rc = MPI_Comm_spawn_multiple(count, commands, argvs, maxprocs, infos, 0, s->alive, &inter, codes);
        spawned = ok = spawn_rc == MPI_SUCCESS;
    }
    for (int i = 0; ok && i < count * s->k; i++) {
        ok = codes[i] == MPI_SUCCESS;
    }
    for (int i = 0; i < made; i++) {
        MPI_Info_free(&infos[i]);
    }
    free(commands);
    free(argvs);
    free(maxprocs);
    free(codes);
    free(infos);
    if (!agreed) {
        return 1; /* the agreement before failed (everywhere alike): nobody spawned */
    }
    rc = MPIX_Comm_agree(s->alive, &ok);
    if (rc != MPI_SUCCESS || !ok) {
        if (spawned) {
            MPIX_Comm_revoke(inter);
            MPI_Comm_free(&inter);
        }
        if (rc == MPI_SUCCESS && spawn_rc != MPI_SUCCESS) {
            /* Nobody died, and the spawn failed: the runtime refused it (no slot for the guests on
             * their host, a program it cannot start). Trying again would fail again. */
            int me = 0, len = 0;
            char why[MPI_MAX_ERROR_STRING] = "";
            MPI_Comm_rank(s->alive, &me);
            MPI_Error_string(spawn_rc, why, &len);
            if (me == 0) {
                fprintf(stderr, "sliding: out of spares and the guests could not be started on %s (MPI_Comm_spawn: "
                                "%s): allow oversubscription (mpirun --oversubscribe, or more slots per host)\n",
                        s->hostnames + (size_t)s->host[starting[0]] * NAME_BYTES, why);
                fflush(stderr);
            }
            return 2;
        }
        return 1;
    }
    MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
    MPI_Comm merged;
    rc = MPI_Intercomm_merge(inter, 0, &merged);
    if (rc != MPI_SUCCESS) {
        MPIX_Comm_revoke(inter);
        MPI_Comm_free(&inter);
        return 1;
    }
    MPI_Comm_set_errhandler(merged, MPI_ERRORS_RETURN);
    int64_t header[H_COUNT] = {
        [H_K] = s->k,
        [H_BLOCK0] = s->block[0],
        [H_BLOCK1] = s->block[1],
        [H_BLOCK2] = s->block[2],
        [H_NFAILED] = s->nfailed,
        [H_NGUESTS] = s->nguests,
        [H_VERSION] = s->version,
        [H_FILE_COMMITTED] = s->file_committed,
        [H_CHECKPOINT_EVERY] = s->checkpoint_every,
        [H_DOMAINS] = s->domain_of_node != NULL,
        [H_STARTING] = count,
    };
    registration_of(s, header + H_REGISTRATION);
    int32_t *domains = s->domain_of_node;
    tables_t tables = {0};
    rc = share(s, merged, header, starting, &domains, &tables);
    MPI_Comm_free(&inter);
    if (rc == MPI_SUCCESS) {
        rc = install(s, merged, &tables);
    } else {
        MPI_Comm_free(&merged);
    }
    tables_free(&tables);
    if (rc == MPI_SUCCESS && count == s->nguests - s->nspawned) {
        s->nspawned = s->nguests;
    } else if (rc == MPI_SUCCESS) {
        s->nspawned = starting[count - 1] + 1; /* more than MAX_STARTING: the rest next time */
    }
    return 1;
}

/* ---- a guest's side ------------------------------------------------------ */

/* A guest's tables, sized by the survivors' header; the failure domains, if
 * the survivors have them, go to *domains (for checkpoint_policy). */
static int guest_allocate(sliding_t *s, const int64_t *header, int32_t **domains)
{
    s->k = (int)header[H_K];
    for (int d = 0; d < SLIDE_MAX_DIMS; d++) {
        s->block[d] = (int32_t)header[H_BLOCK0 + d];
    }
    s->nfailed = (int)header[H_NFAILED];
    s->nguests = s->nspawned = (int32_t)header[H_NGUESTS];
    s->version = header[H_VERSION];
    s->file_committed = header[H_FILE_COMMITTED];
    s->checkpoint_every = header[H_CHECKPOINT_EVERY];
    memcpy(s->expected, header + H_REGISTRATION, sizeof s->expected);
    s->lane = s->join_index % s->k;
    size_t slots = (size_t)node_slots(s); /* procs, pids and node_of come with the tables (install) */
    s->map = malloc(sizeof(int32_t) * (size_t)s->layout.ranks);
    s->new_map = malloc(sizeof(int32_t) * (size_t)s->layout.ranks);
    s->failed = malloc(sizeof(int32_t) * slots);
    s->dead = calloc(slots, 1);
    s->batch = calloc(slots, 1);
    if (header[H_DOMAINS]) {
        *domains = malloc(sizeof(int32_t) * (size_t)s->layout.nodes);
    }
    if (!s->map || !s->new_map || !s->failed || !s->dead || !s->batch ||
        (header[H_DOMAINS] && !*domains)) {
        return SLIDING_ERR_NOMEM;
    }
    return SLIDING_OK;
}

int guest_join(sliding_t *s, MPI_Comm parent, int32_t **domains)
{
    MPI_Comm_set_errhandler(parent, MPI_ERRORS_RETURN);
    MPI_Comm merged;
    int rc = MPI_Intercomm_merge(parent, 1, &merged);
    if (rc != MPI_SUCCESS) {
        return SLIDING_ERR_MPI;
    }
    MPI_Comm_set_errhandler(merged, MPI_ERRORS_RETURN);
    int64_t header[H_COUNT] = {0};
    tables_t tables = {0};
    rc = share(s, merged, header, NULL, domains, &tables);
    if (rc != MPI_SUCCESS) {
        tables_free(&tables);
        MPI_Comm_free(&merged);
        return SLIDING_ERR_MPI;
    }
    for (int i = 0; i < s->nfailed; i++) {
        s->dead[s->failed[i]] = 1;
    }
    s->world = s->alive = MPI_COMM_NULL;
    rc = install(s, merged, &tables);
    tables_free(&tables);
    return rc == MPI_SUCCESS ? SLIDING_OK : SLIDING_ERR_MPI;
}
