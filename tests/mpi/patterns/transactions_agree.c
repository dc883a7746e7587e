/*
 * Transactions closed by an agreement: all or nothing, on whoever is left.
 *
 * Transaction T is an MPI_Allreduce of (world rank + 1) * (T + 3), then an
 * exchange around the ring of the current communicator (MPI_Sendrecv of
 * COUNT ints to the right, from the left: world rank, T and words derived
 * from both, ftcheck_payload_fill; COUNT is FTCHECK_MESSAGE_BYTES / 4,
 * tests/mpi/ftcheck.h, 2 without it), on a dup of MPI_COMM_WORLD whose
 * errors are returned. Each rank's part succeeded when both calls returned
 * MPI_SUCCESS and the neighbour's message is, in all its COUNT ints, the one
 * of (left's world rank, T); a rank whose part failed revokes the
 * communicator, so that nobody stays blocked in the transaction. Then every
 * rank calls MPIX_Comm_agree with flag = "my part succeeded". If the
 * agreement returns MPI_SUCCESS
 * with flag 1, the transaction commits: its Allreduce result is recorded.
 * Otherwise (flag 0, or MPIX_ERR_PROC_FAILED) every survivor acknowledges
 * the failures (MPIX_Comm_failure_ack), revokes the communicator if it is
 * not revoked yet, shrinks it, and runs the same transaction again on the
 * shrunk communicator.
 *
 * Checks at every survivor: it committed exactly NTRANS transactions, each
 * once; each committed value is the sum for the members of the
 * communicator it committed on; after the last one, an MPI_Allreduce (MIN
 * and MAX) of the checksum of the committed values over the final
 * communicator shows they are the same at every survivor. The checksum
 * (FNV-1a over T and the value of every commit) is printed
 * as checksum=..., for the harness to compare across ranks; it depends on
 * when the failures landed, not on the rank.
 *
 * Keys: committed (how many transactions this rank committed, NTRANS),
 * retries (transactions run again), agree_failed (how many
 * agreements returned MPIX_ERR_PROC_FAILED), checksum, last (the last
 * committed value), survivors, outcome (why).
 *
 * Kill points: "iter=K" in transaction K (K in 0..NTRANS-1), after its
 * MPI_Allreduce and before its ring exchange, at every rank and on every
 * attempt of K (a victim dies at the first). The victim has given its
 * contribution, so some ranks may finish the Allreduce; its ring neighbours
 * cannot finish the exchange, and the agreement must turn that into a retry
 * everywhere.
 *
 * usage: transactions_agree [NTRANS]     (default 30)
 */
#include <stdint.h>
#include <stdlib.h>

#include "ftcheck.h"

static long long contribution(int world_rank, int t) { return (long long)(world_rank + 1) * (t + 3); }

/* The value transaction t must commit on comm: the sum over its members. */
static long long expected(MPI_Comm comm, int t)
{
    MPI_Group group, world_group;
    int size;
    long long sum = 0;
    MPI_Comm_size(comm, &size);
    MPI_Comm_group(comm, &group);
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    for (int i = 0; i < size; i++) {
        int w;
        MPI_Group_translate_ranks(group, 1, &i, world_group, &w);
        sum += contribution(w, t);
    }
    MPI_Group_free(&group);
    MPI_Group_free(&world_group);
    return sum;
}

static uint64_t fnv(uint64_t h, long long v)
{
    for (int b = 0; b < 8; b++) h = (h ^ (((uint64_t)v >> (8 * b)) & 0xff)) * 1099511628211ull;
    return h;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int ntrans = argc > 1 ? atoi(argv[1]) : 30;
    if (ntrans < 1) ntrans = 1;
    int me, rank, size;
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    const char *why = NULL;
    long long *committed = malloc(sizeof(long long) * (size_t)ntrans);
    int commits = 0, retries = 0, agree_failed = 0, attempts = 0;
    const int count = (int)(ftcheck_message_bytes(2 * sizeof(int)) / sizeof(int));
    int *out = malloc(sizeof(int) * (size_t)count), *in = malloc(sizeof(int) * (size_t)count);

    /* a rank leaves the loop only where every survivor does: at a decision of
     * the agreement (wrong data is noted in why and handled like a failed part) */
    for (int t = 0; t < ntrans;) {
        MPI_Comm_rank(comm, &rank);
        MPI_Comm_size(comm, &size);
        int right = (rank + 1) % size, left = (rank + size - 1) % size;
        int left_world;
        MPI_Group group, world_group;
        MPI_Comm_group(comm, &group);
        MPI_Comm_group(MPI_COMM_WORLD, &world_group);
        MPI_Group_translate_ranks(group, 1, &left, world_group, &left_world);
        MPI_Group_free(&group);
        MPI_Group_free(&world_group);

        /* the transaction */
        long long mine = contribution(me, t), value = 0;
        int ok = 1, data_ok = 1;
        int rc = MPI_Allreduce(&mine, &value, 1, MPI_LONG_LONG, MPI_SUM, comm);
        if (rc != MPI_SUCCESS) ok = 0;
        ftslide_killpointf(me, "iter=%d", t);
        if (ok) {
            ftcheck_payload_fill(out, count, me, t);
            in[0] = in[1] = -1;
            rc = MPI_Sendrecv(out, count, MPI_INT, right, t, in, count, MPI_INT, left, t, comm, MPI_STATUS_IGNORE);
            if (rc != MPI_SUCCESS) ok = 0;
            else if (!ftcheck_payload_ok(in, count, left_world, t)) data_ok = ok = 0;
        }
        if (rc != MPI_SUCCESS) {
            int eclass;
            MPI_Error_class(rc, &eclass);
            if (eclass != MPIX_ERR_PROC_FAILED && eclass != MPIX_ERR_REVOKED) {
                why = "an error that is not a failure";
            }
            if (eclass != MPIX_ERR_REVOKED) MPIX_Comm_revoke(comm); /* free the others */
        }
        if (!data_ok && why == NULL) why = "wrong data from the left neighbour";

        /* the decision */
        int flag = ok;
        rc = MPIX_Comm_agree(comm, &flag);
        if (rc == MPI_SUCCESS && flag == 1) {
            committed[t] = value;
            commits++;
            if (value != expected(comm, t) && why == NULL) why = "a committed value is wrong for its communicator";
            t++;
            continue;
        }
        int eclass = MPI_SUCCESS;
        if (rc != MPI_SUCCESS) MPI_Error_class(rc, &eclass);
        if (eclass == MPIX_ERR_PROC_FAILED) agree_failed++;
        else if (rc != MPI_SUCCESS) {
            FTCHECK_RC("agree", rc);
            why = "the agreement failed with an error that is not a failure";
            break;
        }
        if (++attempts > 4 * size + 4) { /* uniform: every survivor counts the same retries */
            why = "the transaction keeps failing";
            break;
        }
        /* roll back: acknowledge, revoke if needed, shrink, retry */
        retries++;
        MPIX_Comm_failure_ack(comm);
        int revoked = 0;
        MPIX_Comm_is_revoked(comm, &revoked);
        if (!revoked) MPIX_Comm_revoke(comm);
        MPI_Comm shrunk;
        rc = MPIX_Comm_shrink(comm, &shrunk);
        if (rc != MPI_SUCCESS) {
            FTCHECK_RC("shrink", rc);
            why = "the shrink failed";
            break;
        }
        MPI_Comm_free(&comm);
        comm = shrunk;
        MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    }

    uint64_t checksum = 1469598103934665603ull;
    MPI_Comm_size(comm, &size);
    for (int t = 0; t < commits && t < ntrans; t++) {
        checksum = fnv(checksum, t);
        checksum = fnv(checksum, committed[t]);
    }
    if (why == NULL && commits != ntrans) why = "not every transaction committed once";
    if (why == NULL) {
        uint64_t low = 0, high = 0;
        int rc = MPI_Allreduce(&checksum, &low, 1, MPI_UINT64_T, MPI_MIN, comm);
        if (rc == MPI_SUCCESS) rc = MPI_Allreduce(&checksum, &high, 1, MPI_UINT64_T, MPI_MAX, comm);
        if (rc != MPI_SUCCESS) why = "the closing comparison failed";
        else if (low != checksum || high != checksum) why = "the survivors committed different values";
    }
    FTCHECK("committed", "%d", commits);
    FTCHECK("retries", "%d", retries);
    FTCHECK("agree_failed", "%d", agree_failed);
    FTCHECK("checksum", "%016llx", (unsigned long long)checksum);
    FTCHECK("last", "%lld", commits > 0 ? committed[commits - 1] : -1);
    FTCHECK("survivors", "%d", size);
    ftcheck_outcome(why);
    free(out);
    free(in);
    free(committed);
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return 0;
}
