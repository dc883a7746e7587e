/*
 * Failures in a row, then an intercommunicator between the survivors.
 *
 * The run has F = min(5, np - 2) stages (np 4: 2, np 6: 4, np 8: 5), on a
 * dup of MPI_COMM_WORLD whose errors are returned; the harness kills one
 * rank in each, any rank, rank 0 included. In each stage every rank does
 * the stage's work, an MPI_Allreduce of its world rank and a ring exchange
 * (MPI_Sendrecv of COUNT ints to the right, from the left: its world rank,
 * the round and words derived from both, ftcheck_payload_fill; COUNT is
 * FTCHECK_MESSAGE_BYTES / 4, tests/mpi/ftcheck.h, 2 without it); a rank
 * whose part failed revokes the communicator. Then MPIX_Comm_agree on
 * "my part succeeded" decides for everyone: if a process failed, the
 * survivors acknowledge, revoke, shrink and do the work again on the
 * shrunk communicator, until it succeeds there. After the last stage one
 * more round of the work runs (no kill point there), then the survivors split the final communicator into two halves (the lower half
 * of the ranks and the upper half), build an intercommunicator between them
 * with MPI_Intercomm_create (local leader: each half's rank 0; peer
 * communicator: the final shrunk one, where the remote leader is rank 0 or
 * rank size/2) and merge it with MPI_Intercomm_merge (lower half first).
 *
 * Checks at every survivor: each stage's Allreduce and ring message (all
 * its COUNT ints) match the members of the communicator they ran on; the
 * intercommunicator's remote group is the other half; on the merged
 * communicator an MPI_Allreduce of (1, world rank, bit of world rank) gives
 * exactly the survivors (count, sum and set) and each process holds its rank
 * of the final communicator. It prints survivors=N (np minus the kills that
 * landed), shrinks (how many times this rank shrank), stages=F, merged=M
 * (merged size, equal to N) and sum=S (sum of the survivors' world ranks).
 *
 * Kill points: "stage=K" at the start of stage K (K in 0..F-1), at every
 * rank. One distinct victim per stage is the intended use; fewer victims,
 * or several in one stage, work too as long as two ranks survive.
 *
 * usage: five_failures_intercomm [ROUNDS]     (default 4: exchanges per stage)
 */
#include <stdint.h>
#include <stdlib.h>

#include "ftcheck.h"

/* count, sum of world ranks and set of world ranks of comm's members */
static void members(MPI_Comm comm, long long out[3])
{
    int size;
    MPI_Comm_size(comm, &size);
    out[0] = size;
    out[1] = 0;
    out[2] = 0;
    for (int i = 0; i < size; i++) {
        int w = ftcheck_world_rank(comm, i);
        out[1] += w;
        out[2] |= 1ll << w;
    }
}

/* One stage's work: ROUNDS of an Allreduce plus a ring exchange. Returns the
 * first MPI error, or MPI_SUCCESS; wrong data sets *why. */
static int work(MPI_Comm comm, int me, int rounds, int count, const char **why)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int left_world = ftcheck_world_rank(comm, left);
    long long expect[3];
    members(comm, expect);
    int *out = malloc(sizeof(int) * (size_t)count), *in = malloc(sizeof(int) * (size_t)count);
    int rc = MPI_SUCCESS;
    for (int r = 0; r < rounds && rc == MPI_SUCCESS; r++) {
        long long sum = 0, mine = me;
        rc = MPI_Allreduce(&mine, &sum, 1, MPI_LONG_LONG, MPI_SUM, comm);
        if (rc != MPI_SUCCESS) break;
        if (sum != expect[1] && *why == NULL) *why = "a stage's Allreduce does not match its communicator";
        ftcheck_payload_fill(out, count, me, r);
        in[0] = in[1] = -1;
        rc = MPI_Sendrecv(out, count, MPI_INT, right, r, in, count, MPI_INT, left, r, comm, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) break;
        if (!ftcheck_payload_ok(in, count, left_world, r) && *why == NULL)
            *why = "a ring message not from the left neighbour";
    }
    free(out);
    free(in);
    return rc;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rounds = argc > 1 ? atoi(argv[1]) : 4;
    if (rounds < 1) rounds = 1;
    const int count = (int)(ftcheck_message_bytes(2 * sizeof(int)) / sizeof(int));
    int me, np;
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    const char *why = np > 62 ? "more than 62 ranks" : NULL;
    int stages = np - 2 < 5 ? np - 2 : 5;
    if (stages < 0) stages = 0;
    int shrinks = 0, failed = 0;

    /* the stages, and one more round of work on what is left (stage F, no kill point) */
    for (int stage = 0; stage <= stages && !failed; stage++) {
        if (stage < stages) ftslide_killpointf(me, "stage=%d", stage);
        for (int attempt = 0;; attempt++) {
            int rc = work(comm, me, rounds, count, &why);
            int flag = rc == MPI_SUCCESS;
            if (!flag) {
                int eclass;
                MPI_Error_class(rc, &eclass);
                if (eclass != MPIX_ERR_PROC_FAILED && eclass != MPIX_ERR_REVOKED && why == NULL)
                    why = "an error that is not a failure";
                MPIX_Comm_revoke(comm);
            }
            rc = MPIX_Comm_agree(comm, &flag);
            if (rc == MPI_SUCCESS && flag) break;
            if (attempt > np) { /* uniform: every survivor counts the same attempts */
                why = "the work keeps failing";
                failed = 1;
                break;
            }
            MPIX_Comm_failure_ack(comm);
            MPIX_Comm_revoke(comm);
            MPI_Comm shrunk;
            rc = MPIX_Comm_shrink(comm, &shrunk);
            if (rc != MPI_SUCCESS) {
                FTCHECK_RC("shrink", rc);
                why = "the shrink failed";
                failed = 1;
                break;
            }
            shrinks++;
            MPI_Comm_free(&comm);
            comm = shrunk;
            MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
        }
    }
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    FTCHECK("stages", "%d", stages);
    FTCHECK("shrinks", "%d", shrinks);
    FTCHECK("survivors", "%d", size);
    if (failed || size < 2) {
        ftcheck_outcome(why != NULL ? why : "fewer than two survivors");
        MPI_Comm_free(&comm);
        MPI_Finalize();
        return 0;
    }

    /* two halves, an intercommunicator between them, merged back */
    int upper = rank >= size / 2;
    MPI_Comm half, inter, merged;
    long long expect[3], got[3] = {0, 0, 0};
    members(comm, expect);
    int merged_size = 0, rc = MPI_Comm_split(comm, upper, rank, &half);
    if (rc == MPI_SUCCESS) {
        MPI_Comm_set_errhandler(half, MPI_ERRORS_RETURN);
        rc = MPI_Intercomm_create(half, 0, comm, upper ? 0 : size / 2, 77, &inter);
        if (rc == MPI_SUCCESS) {
            MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
            int remote;
            MPI_Comm_remote_size(inter, &remote);
            if (remote != (upper ? size / 2 : size - size / 2) && why == NULL)
                why = "the intercommunicator's remote group is not the other half";
            rc = MPI_Intercomm_merge(inter, upper, &merged);
            if (rc == MPI_SUCCESS) {
                MPI_Comm_set_errhandler(merged, MPI_ERRORS_RETURN);
                int mrank;
                MPI_Comm_rank(merged, &mrank);
                MPI_Comm_size(merged, &merged_size);
                if (mrank != rank && why == NULL) why = "the merged communicator is not in the survivors' order";
                long long mine[3] = {1, me, 1ll << me};
                rc = MPI_Allreduce(mine, got, 2, MPI_LONG_LONG, MPI_SUM, merged);
                if (rc == MPI_SUCCESS) rc = MPI_Allreduce(&mine[2], &got[2], 1, MPI_LONG_LONG, MPI_BOR, merged);
                MPI_Comm_free(&merged);
            }
            MPI_Comm_free(&inter);
        }
        MPI_Comm_free(&half);
    }
    FTCHECK("merged", "%d", merged_size);
    FTCHECK("sum", "%lld", got[1]);
    if (rc != MPI_SUCCESS) {
        FTCHECK_RC("intercomm", rc);
        if (why == NULL) why = "building or using the merged intercommunicator failed";
    } else if (why == NULL && (got[0] != expect[0] || got[1] != expect[1] || got[2] != expect[2])) {
        why = "the merged communicator does not hold exactly the survivors";
    }
    ftcheck_outcome(why);
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return 0;
}
