/*
 * In-memory buddy checkpoint with roll-back recovery.
 *
 * The state is np blocks of LEN 64-bit integers below the prime P (LEN is
 * FTCHECK_MESSAGE_BYTES / 8, tests/mpi/ftcheck.h, 256 without it: a block's
 * copy in the checkpoint exchange is a message of that size); block B starts
 * owned by world rank B. In iteration K every rank advances the blocks it
 * owns (x <- (x * MUL + (B + 1) * (i + 1) + K) mod P, exact in uint64) and
 * an MPI_Allreduce sums all values of all blocks. Every C iterations (at
 * iterations 0, C, 2C, ...) the ranks take a checkpoint: each keeps a copy
 * of its own blocks and sends them to its buddy, the next rank of the
 * current communicator, which keeps them beside the copy it received at the
 * checkpoint before (two generations: a checkpoint cut short by a failure
 * leaves the previous one whole).
 *
 * On a failure (any error from the checkpoint exchange or the MPI_Allreduce)
 * the rank revokes the communicator and shrinks it; the survivors agree on
 * the checkpoint to roll back to, the last one every survivor completed (an
 * MPI_Allreduce (MIN) on the shrunk communicator, confirmed by
 * MPIX_Comm_agree: if somebody in the shrunk communicator has died too, it
 * is shrunk again). Every survivor then computes the same new owners: a
 * block stays with its owner if alive, else it goes to the buddy that holds
 * its copy (a survivor may own several blocks). Everyone restores its blocks
 * from that checkpoint, takes a fresh checkpoint on the new communicator
 * (so the adopted blocks have a buddy again) and recomputes from there. A
 * failure before the first checkpoint rolls back to the initial state, which
 * anyone can rebuild. The run ends with a closing MPI_Allreduce that counts
 * the blocks owned; a failure that ends it early is recovered the same way.
 *
 * If a rank and the buddy holding its blocks both die before a newer
 * checkpoint gives those blocks another holder, a block is lost: every
 * survivor sees it from the agreed failed set alone, reports outcome=wrong
 * with why="lost a block and its buddy copy" and finalizes (no hang). With
 * the two killed at the same point "iter=K" this is what usually happens,
 * but not always: when the buddy was still finishing iteration K-1 as the
 * first death was found, it takes part in that recovery (adopting the
 * blocks and checkpointing them at its own buddy), dies at K on the way
 * back, and the run ends outcome=ok with rollbacks=2.
 *
 * Checks at every survivor: each iteration's sum, and the final one after
 * ITERS iterations, equal the failure-free values, which every rank
 * computes locally from all np blocks at the start; all np blocks are owned
 * at the end, each by one survivor. It prints sum=S (the final sum, the same
 * at every survivor and in every run of the same np and ITERS), checksum
 * (FNV-1a over the ITERS sums as last computed, the same everywhere too),
 * survivors=N, blocks (blocks this rank owns at the end), rollbacks (how many
 * times this rank restored a checkpoint), redone (iterations recomputed).
 *
 * Kill points: "iter=K" at the start of iteration K (K in 0..ITERS-1),
 * before that iteration's checkpoint; reached again by the survivors when
 * they recompute K after a roll-back (a victim is gone by then). One
 * failure per run is the case this pattern is for; more work as long as no
 * rank dies with the buddy that holds its blocks.
 *
 * usage: buddy_checkpoint [ITERS [C]]     (default 60 5)
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ftcheck.h"

#define DEFAULT_LEN 256
#define P 4294967291ull /* the largest prime below 2^32: x * MUL stays below 2^64 */
#define MUL 2147483629ull

/* One checkpoint generation. */
struct checkpoint {
    int seq;         /* -1: empty or cut short */
    int iter;        /* the iteration it restarts */
    int *owner;      /* owner[b]: world rank that owned block b when it was taken */
    int *holder;     /* holder[b]: world rank that received its copy (the owner's buddy) */
    uint64_t *own;   /* copies of the blocks this rank owned */
    uint64_t *buddy; /* copies this rank received for its left neighbour's blocks */
};

static int np;
static size_t len; /* LEN: 64-bit words per block */

static void init_block(int b, uint64_t *x)
{
    for (size_t i = 0; i < len; i++) x[i] = ((uint64_t)b * 1000003u + (uint64_t)i * 7919u + 1u) % P;
}

static void step_block(int b, int iter, uint64_t *x)
{
    for (size_t i = 0; i < len; i++) x[i] = (x[i] * MUL + (uint64_t)(b + 1) * (uint64_t)(i + 1) + (uint64_t)iter) % P;
}

static uint64_t sum_block(const uint64_t *x)
{
    uint64_t s = 0;
    for (size_t i = 0; i < len; i++) s += x[i];
    return s;
}

/* The current communicator's members in world ranks and back. */
struct members {
    int size, rank;
    int *world;   /* world[i]: world rank of member i */
    int *member;  /* member[w]: member index of world rank w, or -1 */
};

static void read_members(MPI_Comm comm, struct members *m)
{
    MPI_Group group, world_group;
    MPI_Comm_size(comm, &m->size);
    MPI_Comm_rank(comm, &m->rank);
    MPI_Comm_group(comm, &group);
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    for (int w = 0; w < np; w++) m->member[w] = -1;
    for (int i = 0; i < m->size; i++) {
        MPI_Group_translate_ranks(group, 1, &i, world_group, &m->world[i]);
        m->member[m->world[i]] = i;
    }
    MPI_Group_free(&group);
    MPI_Group_free(&world_group);
}

/* Take checkpoint seq into ck: own copies, then the exchange with the buddies.
 * Returns the MPI code of the exchange; ck->seq is set only on success. */
static int take_checkpoint(MPI_Comm comm, const struct members *m, const int *owner, const uint64_t *state,
                           int seq, int iter, struct checkpoint *ck)
{
    int me = m->world[m->rank];
    int right = (m->rank + 1) % m->size, left = (m->rank + m->size - 1) % m->size;
    ck->seq = -1;
    ck->iter = iter;
    int nout = 0, nin = 0;
    for (int b = 0; b < np; b++) {
        ck->owner[b] = owner[b];
        ck->holder[b] = m->world[(m->member[owner[b]] + 1) % m->size];
        if (owner[b] == me) {
            memcpy(&ck->own[(size_t)b * len], &state[(size_t)b * len], sizeof(uint64_t) * len);
            nout++;
        }
        if (owner[b] == m->world[left]) nin++;
    }
    /* blocks travel in block order: the receiver knows which ones from the owner table */
    uint64_t *out = malloc(sizeof(uint64_t) * len * (size_t)(nout + 1));
    uint64_t *in = malloc(sizeof(uint64_t) * len * (size_t)(nin + 1));
    int n = 0;
    for (int b = 0; b < np; b++) {
        if (owner[b] == me) memcpy(&out[(size_t)n++ * len], &state[(size_t)b * len], sizeof(uint64_t) * len);
    }
    int rc = MPI_Sendrecv(out, nout * (int)len, MPI_UINT64_T, right, seq & 0x7fff, in, nin * (int)len, MPI_UINT64_T,
                          left, seq & 0x7fff, comm, MPI_STATUS_IGNORE);
    if (rc == MPI_SUCCESS) {
        n = 0;
        for (int b = 0; b < np; b++) {
            if (owner[b] == m->world[left])
                memcpy(&ck->buddy[(size_t)b * len], &in[(size_t)n++ * len], sizeof(uint64_t) * len);
        }
        ck->seq = seq;
    }
    free(out);
    free(in);
    return rc;
}

/* Revoke, shrink and agree on the checkpoint to go back to. On return *comm
 * is the shrunk communicator and *agreed the sequence number (-1: the initial
 * state). Shrinks again while somebody in the shrunk communicator has died
 * (or, which cannot happen, somebody lacks the agreed checkpoint). */
static int shrink_and_agree(MPI_Comm *comm, int last_seq, const struct checkpoint ck[2], int *agreed)
{
    for (int attempt = 0; attempt <= np; attempt++) {
        MPI_Comm shrunk;
        MPIX_Comm_revoke(*comm);
        int rc = MPIX_Comm_shrink(*comm, &shrunk);
        if (rc != MPI_SUCCESS) return rc;
        MPI_Comm_free(comm);
        *comm = shrunk;
        MPI_Comm_set_errhandler(shrunk, MPI_ERRORS_RETURN);
        rc = MPI_Allreduce(&last_seq, agreed, 1, MPI_INT, MPI_MIN, shrunk);
        int flag = rc == MPI_SUCCESS && (*agreed == -1 || ck[*agreed % 2].seq == *agreed);
        if (rc != MPI_SUCCESS) MPIX_Comm_revoke(shrunk);
        rc = MPIX_Comm_agree(shrunk, &flag);
        if (rc == MPI_SUCCESS && flag) return MPI_SUCCESS;
    }
    return MPI_ERR_OTHER;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int iters = argc > 1 ? atoi(argv[1]) : 60;
    int every = argc > 2 ? atoi(argv[2]) : 5;
    if (iters < 1) iters = 1;
    if (every < 1) every = 1;
    len = ftcheck_message_bytes(DEFAULT_LEN * sizeof(uint64_t)) / sizeof(uint64_t);
    int me;
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &np);
    const char *why = NULL, *odd = NULL;

    /* the failure-free sums, from all blocks */
    uint64_t *expect = malloc(sizeof(uint64_t) * (size_t)iters);
    uint64_t *state = malloc(sizeof(uint64_t) * len * (size_t)np); /* block b at state[b * len], if owned */
    uint64_t *sums = malloc(sizeof(uint64_t) * (size_t)iters); /* what the Allreduce gave, per iteration */
    for (int k = 0; k < iters; k++) expect[k] = sums[k] = 0;
    for (int b = 0; b < np; b++) {
        init_block(b, &state[(size_t)b * len]);
        for (int k = 0; k < iters; k++) {
            step_block(b, k, &state[(size_t)b * len]);
            expect[k] += sum_block(&state[(size_t)b * len]);
        }
    }
    int *owner = malloc(sizeof(int) * (size_t)np);
    for (int b = 0; b < np; b++) {
        owner[b] = b;
        init_block(b, &state[(size_t)b * len]);
    }
    struct checkpoint ck[2];
    for (int g = 0; g < 2; g++) {
        ck[g].seq = -1;
        ck[g].owner = malloc(sizeof(int) * (size_t)np);
        ck[g].holder = malloc(sizeof(int) * (size_t)np);
        ck[g].own = malloc(sizeof(uint64_t) * len * (size_t)np);
        ck[g].buddy = malloc(sizeof(uint64_t) * len * (size_t)np);
    }
    struct members m;
    m.world = malloc(sizeof(int) * (size_t)np);
    m.member = malloc(sizeof(int) * (size_t)np);
    read_members(comm, &m);

    int k = 0, last_seq = -1, need_checkpoint = 1, rollbacks = 0, redone = 0, highest = 0, done = 0, rc;
    uint64_t sum = 0;
    int counts[2] = {0, 0}; /* blocks owned, ranks: over the final communicator */
    while (!done && why == NULL) {
        rc = MPI_SUCCESS;
        for (; k < iters && why == NULL; k++) {
            ftslide_killpointf(me, "iter=%d", k);
            if (k < highest) redone++;
            else highest = k + 1;
            if (need_checkpoint || k % every == 0) {
                rc = take_checkpoint(comm, &m, owner, state, last_seq + 1, k, &ck[(last_seq + 1) % 2]);
                if (rc != MPI_SUCCESS) break;
                last_seq++;
                need_checkpoint = 0;
            }
            uint64_t mine = 0;
            for (int b = 0; b < np; b++) {
                if (owner[b] != me) continue;
                step_block(b, k, &state[(size_t)b * len]);
                mine += sum_block(&state[(size_t)b * len]);
            }
            rc = MPI_Allreduce(&mine, &sum, 1, MPI_UINT64_T, MPI_SUM, comm);
            if (rc != MPI_SUCCESS) break;
            sums[k] = sum;
            if (sum != expect[k]) why = "an iteration's sum differs from the failure-free one";
        }
        if (rc == MPI_SUCCESS && why == NULL) {
            int mine[2] = {0, 1};
            for (int b = 0; b < np; b++) mine[0] += owner[b] == me;
            rc = MPI_Allreduce(mine, counts, 2, MPI_INT, MPI_SUM, comm);
            if (rc == MPI_SUCCESS) done = 1;
        }
        if (rc == MPI_SUCCESS || why != NULL) break;

        /* recovery */
        int eclass;
        MPI_Error_class(rc, &eclass);
        if (eclass != MPIX_ERR_PROC_FAILED && eclass != MPIX_ERR_REVOKED && eclass != MPIX_ERR_PROC_FAILED_PENDING &&
            odd == NULL) {
            odd = "an error that is not a failure"; /* noted; the recovery goes on with the others */
        }
        int agreed;
        rc = shrink_and_agree(&comm, last_seq, ck, &agreed);
        if (rc != MPI_SUCCESS) {
            FTCHECK_RC("shrink", rc);
            why = "the shrink or the agreement failed";
            break;
        }
        read_members(comm, &m);
        const struct checkpoint *from = agreed >= 0 ? &ck[agreed % 2] : NULL; /* every survivor has it */
        /* new owners, the same at every survivor: the owner if alive, else the holder of its copy */
        for (int b = 0; b < np && why == NULL; b++) {
            int was = from ? from->owner[b] : b;
            int holder = from ? from->holder[b] : -1;
            if (m.member[was] >= 0) owner[b] = was;
            else if (holder >= 0 && m.member[holder] >= 0) owner[b] = holder;
            else if (from == NULL) { /* the initial state: anyone can rebuild it, the next live rank does */
                int w = was;
                while (m.member[w] < 0) w = (w + 1) % np;
                owner[b] = w;
            } else why = "lost a block and its buddy copy";
            if (why != NULL) break;
            if (owner[b] != me) continue;
            if (from == NULL) init_block(b, &state[(size_t)b * len]);
            else memcpy(&state[(size_t)b * len], was == me ? &from->own[(size_t)b * len] : &from->buddy[(size_t)b * len],
                        sizeof(uint64_t) * len);
        }
        k = from ? from->iter : 0;
        last_seq = agreed;
        need_checkpoint = 1;
        rollbacks++;
    }
    int blocks = 0;
    for (int b = 0; b < np; b++) blocks += owner[b] == me;
    FTCHECK("rollbacks", "%d", rollbacks);
    FTCHECK("redone", "%d", redone);
    FTCHECK("blocks", "%d", blocks);
    FTCHECK("survivors", "%d", m.size);
    FTCHECK("sum", "%llu", (unsigned long long)sum);
    uint64_t checksum = 1469598103934665603ull;
    for (int i = 0; i < iters; i++) {
        for (int b = 0; b < 8; b++) checksum = (checksum ^ ((sums[i] >> (8 * b)) & 0xff)) * 1099511628211ull;
    }
    FTCHECK("checksum", "%016llx", (unsigned long long)checksum);
    if (why == NULL) why = odd;
    if (why == NULL && sum != expect[iters - 1]) why = "the final sum differs from the failure-free one";
    if (why == NULL && (counts[0] != np || counts[1] != m.size)) why = "the blocks are not all owned once";
    ftcheck_outcome(why);

    for (int g = 0; g < 2; g++) {
        free(ck[g].owner);
        free(ck[g].holder);
        free(ck[g].own);
        free(ck[g].buddy);
    }
    free(m.world);
    free(m.member);
    free(owner);
    free(state);
    free(expect);
    free(sums);
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return 0;
}
