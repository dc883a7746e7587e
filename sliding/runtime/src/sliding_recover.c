/*
 * sliding_recover.c -- the recovery protocol of sliding.h, run by every
 * surviving process, and the spares' wait for work.
 */
#include "sliding_internal.h"

#include <mpi-ext.h>
#include <stdlib.h>
#include <string.h>

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
    memset(s->batch, 0, (size_t)node_slots(s));
    for (int i = 0; i < n; i++) {
        int in_after, world_rank;
        MPI_Group_translate_ranks(before, 1, &i, after, &in_after);
        if (in_after == MPI_UNDEFINED) {
            MPI_Group_translate_ranks(before, 1, &i, s->world_group, &world_rank);
            s->batch[s->node_of[world_rank]] = 1;
        }
    }
    for (int node = 0; node < node_slots(s); node++) {
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
    const int app_error = (s->cart != MPI_COMM_NULL && s->cart_error != MPI_SUCCESS && !is_failure(s->cart_error)) ||
                          s->join_error;
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
        /* Waiting processes missed the checkpoints (and manifests) taken since they started waiting. */
        int64_t mine[2] = {s->version, s->file_committed}, newest[2] = {s->version, s->file_committed};
        int rc = MPI_Allreduce(mine, newest, 2, MPI_INT64_T, MPI_MAX, s->alive);
        int64_t version = newest[0], file_version = newest[1];
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
        int map_rc = new_map_of(s);
        t.mapping += now() - phase;
        if (map_rc != SLIDE_OK) {
            status = SLIDING_ERR_NO_SPARE;
            break;
        }
        if (s->nguests > s->nspawned) {
            /* Out of spares, degrading: start the guests the map names, then
             * run the recovery again with them (a failure meanwhile: again). */
            phase = now();
            int spawned = spawn_guests(s);
            t.spawn += now() - phase;
            if (spawned == 2) {
                status = SLIDING_ERR_NO_SPARE;
                break;
            }
            if (spawned == 1) {
                continue;
            }
        }
        /* A checkpoint that no copy in memory can rebuild: every rank goes
         * back to the newest complete file checkpoint, if there is one. */
        int from_file = version >= 0 && checkpoint_lost(s, old_map);
        if (from_file && (!s->file || file_version < 0)) {
            status = SLIDING_ERR_DATA_LOST;
            break;
        }
        if (from_file) {
            version = file_version;
        }
        memcpy(s->map, s->new_map, sizeof(int32_t) * (size_t)s->layout.ranks);

        killpoint(s, SLIDING_POINT_RECOVERY_REBUILD);
        phase = now();
        rc = build_cart(s, 1);
        t.rebuild += now() - phase;
        killpoint(s, SLIDING_POINT_RECOVERY_STATE);
        phase = now();
        int file_status = SLIDING_OK;
        if (rc == MPI_SUCCESS && version >= 0) {
            s->version = version;
            if (from_file) {
                file_status = s->cart != MPI_COMM_NULL ? checkpoint_read_file(s, version) : SLIDING_OK;
                rc = file_status == SLIDING_OK ? MPI_SUCCESS : MPI_ERR_FILE;
            } else {
                rc = checkpoint_restore(s, old_map);
            }
            if (rc == MPI_SUCCESS && s->cart != MPI_COMM_NULL) {
                rc = checkpoint_encode(s, version);
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
        enum { STATE_OK = 1, FILE_READ = 2 };
        int done = (rc == MPI_SUCCESS ? STATE_OK : 0) | (file_status == SLIDING_OK ? FILE_READ : 0);
        rc = MPIX_Comm_agree(s->alive, &done);
        t.commit += now() - phase;
        if (rc == MPI_SUCCESS && !(done & FILE_READ)) {
            status = SLIDING_ERR_CHECKPOINT_DIR; /* a rank's file is damaged or gone: reading again won't help */
            break;
        }
        if (rc == MPI_SUCCESS && (done & STATE_OK)) {
            if (version >= 0) {
                checkpoint_commit(s);
                if (!from_file) {
                    checkpoint_count_bytes(s, old_map, &t);
                }
            }
            /* A write staged before the failure may miss the dead ranks' files:
             * no manifest for it; the workers count checkpoints afresh, together. */
            s->file_staged = -1;
            s->commits = 0;
            s->file_committed = file_version;
            status = SLIDING_OK;
            break;
        }
        /* A failure during recovery: start again (revoke, shrink) from the last
         * committed checkpoint, which was taken under old_map. */
    }
    free(old_map);
    t.total = now() - start;
    t.failed_nodes = s->nfailed;
    for (int32_t r = 0; r < s->layout.ranks; r++) {
        t.guests += s->map[r] >= s->layout.nodes;
    }
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
int recover_all(sliding_t *s)
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
int wait_for_work(sliding_t *s, int *role)
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
