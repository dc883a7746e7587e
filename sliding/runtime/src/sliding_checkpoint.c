/*
 * sliding_checkpoint.c -- checkpoints in memory: this worker's own copy and
 * its buddy's, taken two-phase (pending copies, committed when every worker
 * agrees), and the state moves of a recovery.
 */
#include "sliding_internal.h"

#include <mpi-ext.h>
#include <stdlib.h>
#include <string.h>

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

void checkpoint_commit(sliding_t *s)
{
    copy_t own = s->own, buddy = s->buddy;
    s->own = s->own_pending;
    s->buddy = s->buddy_pending;
    s->own_pending = own;
    s->buddy_pending = buddy;
    s->own_pending.rank = s->buddy_pending.rank = -1;
}

/* Pack this worker's buffers as pending copy 'version' and swap copies with the
 * buddy partners on s->cart: the same lane of the node ranks half the node
 * ranks away, which are on other nodes. Collective over the workers. */
int checkpoint_encode(sliding_t *s, int64_t version)
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

/* Whether some rank's committed checkpoint died with every node that held it. */
int checkpoint_lost(const sliding_t *s, const int32_t *old_map)
{
    for (int r = 0; r < s->layout.ranks; r++) {
        int from_buddy;
        if (state_source(s, old_map, r, &from_buddy) < 0) {
            return 1;
        }
    }
    return 0;
}

/* Move every rank's committed checkpoint to its new node: node rank by node
 * rank, each lane of the old node to the same lane of the new one. */
int checkpoint_restore(sliding_t *s, const int32_t *old_map)
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
void checkpoint_count_bytes(const sliding_t *s, const int32_t *old_map, sliding_recovery_times *t)
{
    int64_t per_node_rank = (int64_t)s->k * (int64_t)s->total_bytes;
    t->moved_bytes = 0;
    for (int r = 0; r < s->layout.ranks; r++) {
        int from_buddy;
        t->moved_bytes += state_source(s, old_map, r, &from_buddy) != s->map[r] ? per_node_rank : 0;
    }
    t->buddy_bytes = s->layout.ranks / 2 > 0 ? per_node_rank * s->layout.ranks : 0;
}

int checkpoint_allocate(sliding_t *s)
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
    int rc = sliding_ok(s) ? checkpoint_encode(s, version) : MPIX_ERR_REVOKED;
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
    checkpoint_commit(s);
    s->version = version;
    return MPI_SUCCESS;
}

int sliding_checkpoint_due(const sliding_t *s, int64_t iteration)
{
    return s != NULL && iteration > 0 && iteration % s->checkpoint_every == 0;
}
