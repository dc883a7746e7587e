/*
 * sliding.c -- the recovery runtime of sliding.h on ULFM.
 *
 * Communicators owned by the library:
 *   world  a dup of the creation communicator: node id = rank in it;
 *   alive  the surviving processes (workers and waiting ones), shrunk at each
 *          recovery; waiting processes block in a receive on it, so a revoke
 *          of it wakes them;
 *   cart   the workers' Cartesian communicator (the application's handle).
 */
#include "sliding.h"

#include <mpi-ext.h>
#include <stdlib.h>
#include <string.h>

#include "ftslide_killpoint.h"
#include "slide_core.h"

#define TAG_RELEASE 7301
#define TAG_STATE 7302
#define MAX_ATTEMPTS 64

/* A checkpoint copy of one rank's registered buffers. */
typedef struct copy {
    int32_t rank;     /* -1: holds nothing */
    int64_t version;
    char *data;       /* total_bytes */
} copy_t;

struct sliding {
    MPI_Comm world, alive, cart;
    MPI_Group world_group;
    slide_layout layout;
    int method;
    int node;
    int32_t *map, *new_map;   /* rank -> node */
    int32_t *failed;          /* agreed failed nodes, in order */
    int nfailed;
    unsigned char *dead;      /* per node */
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
    int started, recovered;
    sliding_recovery_times last;
};

/* Dies here if fault injection names this node and point (FTSLIDE_KILL). */
static void killpoint(const sliding_t *s, enum sliding_point point)
{
    ftslide_killpoint(s->node, sliding_point_name(point));
}

static int rank_of_node(const sliding_t *s, int node)
{
    for (int32_t r = 0; r < s->layout.ranks; r++) {
        if (s->map[r] == node) {
            return r;
        }
    }
    return -1;
}

static int buddy_of(const sliding_t *s, int rank)
{
    return (rank + s->layout.ranks / 2) % s->layout.ranks;
}

/* Rank in s->alive of world rank 'node' (MPI_UNDEFINED if gone). */
static int alive_rank(const sliding_t *s, int node)
{
    MPI_Group group;
    int out;
    MPI_Comm_group(s->alive, &group);
    MPI_Group_translate_ranks(s->world_group, 1, &node, group, &out);
    MPI_Group_free(&group);
    return out;
}

int sliding_create(MPI_Comm comm, const char *grid, const char *spares, const char *method,
                   sliding_t **out)
{
    if (!grid || !spares || !method || !out) {
        return SLIDING_ERR_ARG;
    }
    slide_grid g;
    slide_spares sp;
    slide_method m;
    slide_layout layout;
    if (slide_grid_parse(grid, &g) || slide_spares_parse(spares, &sp) ||
        slide_method_parse(method, &m) || slide_method_one_rank_per_node(m) != 1 ||
        slide_layout_init(&layout, &g, &sp)) {
        return SLIDING_ERR_ARG;
    }
    int size;
    MPI_Comm_size(comm, &size);
    if (size != layout.nodes) {
        return SLIDING_ERR_SIZE;
    }
    sliding_t *s = calloc(1, sizeof *s);
    if (!s) {
        return SLIDING_ERR_NOMEM;
    }
    s->layout = layout;
    s->method = m;
    s->version = -1;
    s->cart = MPI_COMM_NULL;
    s->own.rank = s->buddy.rank = s->own_pending.rank = s->buddy_pending.rank = -1;
    s->work_bytes = slide_map_workspace_bytes(&layout);
    s->map = malloc(sizeof(int32_t) * (size_t)layout.ranks);
    s->new_map = malloc(sizeof(int32_t) * (size_t)layout.ranks);
    s->failed = malloc(sizeof(int32_t) * (size_t)layout.nodes);
    s->dead = calloc((size_t)layout.nodes, 1);
    s->work = malloc(s->work_bytes);
    if (!s->map || !s->new_map || !s->failed || !s->dead || !s->work) {
        sliding_free(s);
        return SLIDING_ERR_NOMEM;
    }
    slide_initial_map(&layout, s->map);
    if (MPI_Comm_dup(comm, &s->world) != MPI_SUCCESS || MPI_Comm_dup(comm, &s->alive) != MPI_SUCCESS) {
        sliding_free(s);
        return SLIDING_ERR_MPI;
    }
    MPI_Comm_set_errhandler(s->world, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(s->alive, MPI_ERRORS_RETURN);
    MPI_Comm_group(s->world, &s->world_group);
    MPI_Comm_rank(s->world, &s->node);
    *out = s;
    return SLIDING_OK;
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

/* Split s->alive into the workers' Cartesian communicator, in logical rank order. */
static int build_cart(sliding_t *s)
{
    int rank = rank_of_node(s, s->node);
    MPI_Comm split;
    s->cart_closed = 0;
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
        dims[d] = s->layout.logical[d];
        periods[d] = s->layout.grid.periodic;
    }
    rc = MPI_Cart_create(split, ndims, dims, periods, 0, &s->cart);
    MPI_Comm_free(&split);
    if (rc == MPI_SUCCESS) {
        MPI_Comm_set_errhandler(s->cart, MPI_ERRORS_RETURN);
    }
    return rc;
}

/* Pack this worker's buffers as pending copy 'version' and swap copies with the
 * buddy partners on s->cart. Collective over the workers. */
static int exchange_checkpoint(sliding_t *s, int64_t version)
{
    int rank = rank_of_node(s, s->node), ranks = s->layout.ranks, half = ranks / 2;
    s->own_pending.rank = rank;
    s->own_pending.version = version;
    pack(s, s->own_pending.data);
    s->buddy_pending.rank = (rank - half + ranks) % ranks;
    s->buddy_pending.version = version;
    if (half == 0) {
        memcpy(s->buddy_pending.data, s->own_pending.data, s->total_bytes);
        return MPI_SUCCESS;
    }
    /* Cart rank = logical rank: send mine to rank + half, receive rank - half's. */
    return MPI_Sendrecv(s->own_pending.data, (int)s->total_bytes, MPI_BYTE, (rank + half) % ranks,
                        TAG_STATE, s->buddy_pending.data, (int)s->total_bytes, MPI_BYTE,
                        s->buddy_pending.rank, TAG_STATE, s->cart, MPI_STATUS_IGNORE);
}

/* Where rank r's committed checkpoint can be read: node and whether it is the
 * buddy copy; -1 if both holders are dead. */
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

/* Move every rank's committed checkpoint to its new node. */
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
            rc = MPI_Isend(copy->data, count, MPI_BYTE, alive_rank(s, dst), TAG_STATE, s->alive, &reqs[nreq]);
            nreq += rc == MPI_SUCCESS;
        } else if (dst == s->node) {
            rc = MPI_Irecv(s->scratch, count, MPI_BYTE, alive_rank(s, src), TAG_STATE, s->alive, &reqs[nreq]);
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

/* The next batch of failures: members of s->alive missing from 'shrunk', as
 * node ids in ascending order (the order the sliding core expects). */
static void append_failed_batch(sliding_t *s, MPI_Comm shrunk)
{
    MPI_Group before, after;
    MPI_Comm_group(s->alive, &before);
    MPI_Comm_group(shrunk, &after);
    int n;
    MPI_Group_size(before, &n);
    for (int i = 0; i < n; i++) {
        int in_after, node;
        MPI_Group_translate_ranks(before, 1, &i, after, &in_after);
        if (in_after == MPI_UNDEFINED) {
            MPI_Group_translate_ranks(before, 1, &i, s->world_group, &node);
            s->failed[s->nfailed++] = node; /* i ascends, and so do node ids */
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

/* The recovery protocol of sliding.h, run by every surviving process. */
static int recover_all(sliding_t *s)
{
    sliding_recovery_times t = {0};
    double start = now();
    int32_t *old_map = malloc(sizeof(int32_t) * (size_t)s->layout.ranks);
    if (!old_map) {
        return SLIDING_ERR_NOMEM;
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
            MPI_Comm_free(&s->cart);
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
        int all_ok = rc == MPI_SUCCESS;
        if (!all_ok) {
            MPIX_Comm_revoke(s->alive);
        }
        rc = MPIX_Comm_agree(s->alive, &all_ok);
        t.agree += now() - phase;
        if (rc != MPI_SUCCESS || !all_ok) {
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
    int rc = allocate_copies(s);
    if (rc != SLIDING_OK) {
        return rc;
    }
    if (build_cart(s) != MPI_SUCCESS) {
        return SLIDING_ERR_MPI;
    }
    int status = SLIDING_OK;
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
    if (!s || !s->started || s->cart == MPI_COMM_NULL) {
        return SLIDING_ERR_STATE;
    }
    int rc = exchange_checkpoint(s, version);
    killpoint(s, SLIDING_POINT_CHECKPOINT);
    int ok = rc == MPI_SUCCESS;
    int agree_rc = MPIX_Comm_agree(s->cart, &ok);
    s->cart_closed = agree_rc != MPI_SUCCESS || !ok;
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
    /* Release every living process that holds no rank. Best effort: a process
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
        if (!s->dead[node] && !has_rank[node]) {
            int peer = alive_rank(s, node);
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
    if (s->cart != MPI_COMM_NULL) {
        MPI_Comm_free(&s->cart);
    }
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
    free(s->work);
    free(s);
}

int sliding_rank(const sliding_t *s)
{
    return rank_of_node(s, s->node);
}

int sliding_node(const sliding_t *s)
{
    return s->node;
}

int sliding_ranks(const sliding_t *s)
{
    return s->layout.ranks;
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
