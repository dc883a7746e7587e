/*
 * Two coupled halves: agreement and shrink on an intercommunicator.
 *
 * MPI_COMM_WORLD (a dup whose errors are returned) is split into a low half
 * (world ranks below np / 2) and a high half, joined by
 * MPI_Intercomm_create (local leaders: each half's rank 0). The halves work
 * together for ROUNDS rounds: an MPI_Allreduce (SUM) of the world rank on
 * the intercommunicator, which gives each process the sum over the OTHER
 * half. A process whose round fails revokes the intercommunicator and
 * leaves the loop; the others leave with MPIX_ERR_REVOKED. Then every
 * survivor, failure or not:
 *  1. acknowledges the failures it knows of (MPIX_Comm_failure_ack) and
 *     calls MPIX_Comm_agree on the intercommunicator. On an
 *     intercommunicator each half receives the bitwise AND of the REMOTE
 *     half's flags: every process gives its half's tag (low 0x1, high 0x2)
 *     plus all the bits 8..31 but bit 8 + its world rank, so the agreed
 *     flag names the remote half (its tag alone) and which of its
 *     processes took part (their bits cleared; a dead one's bit stays set);
 *  2. MPIX_Comm_shrink of the intercommunicator: a new intercommunicator
 *     between the live processes of each half;
 *  3. a message across it: each process sends its world rank to remote
 *     rank (its rank % remote size) and receives one from every remote
 *     rank r with r % local size == its rank;
 *  4. MPIX_Comm_iagree on the shrunk intercommunicator with the same kind
 *     of flag (MPI_Wait completes it): no failure there, so it must return
 *     MPI_SUCCESS and the remote half's AND again;
 *  5. an MPI_Allreduce (SUM) of the world rank on it: the remote half's sum.
 *
 * Checks at every survivor: each round's Allreduce gives the remote half's
 * sum; a failed round failed with MPIX_ERR_PROC_FAILED or MPIX_ERR_REVOKED;
 * the agreement returned MPI_SUCCESS or MPIX_ERR_PROC_FAILED and its flag
 * is the remote half's tag plus the bits of every process NOT in the shrunk
 * intercommunicator's remote group; the shrunk intercommunicator's local
 * group is this half's survivors, in order, and its remote group the other
 * half's; each message holds its sender's world rank; the iagree as step 1
 * with MPI_SUCCESS; the last Allreduce is the remote group's sum. It prints
 * agree (error class), agree_flag, shrunk (local/remote sizes), survivors=N
 * (both halves of the shrunk intercommunicator) and sum=S (the world ranks
 * of all survivors, the same everywhere).
 *
 * Kill points: "round=K" at the start of round K (K in 0..ROUNDS-1), at
 * every rank. One victim: each half keeps at least one process (np >= 4).
 *
 * usage: intercomm_agree [ROUNDS]     (default 10)
 */
#include <stdlib.h>

#include "ftcheck.h"

#define LOW_TAG 0x1
#define HIGH_TAG 0x2
#define RANK_BITS 0xffffff00u /* bit 8 + world rank: at most 24 processes */

static int error_class(int rc)
{
    int eclass = rc;
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &eclass);
    return eclass;
}

/* world ranks of a group's members, in group order (caller frees) */
static int *world_ranks(MPI_Group group, int *n)
{
    MPI_Group world_group;
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    MPI_Group_size(group, n);
    int *in = malloc(sizeof(int) * (size_t)(*n + 1)), *out = malloc(sizeof(int) * (size_t)(*n + 1));
    for (int i = 0; i < *n; i++) in[i] = i;
    MPI_Group_translate_ranks(group, *n, in, world_group, out);
    MPI_Group_free(&world_group);
    free(in);
    return out;
}

/* this process's contribution to an agreement on the intercommunicator */
static int contribution(int me, int low)
{
    return (int)((low ? LOW_TAG : HIGH_TAG) | (RANK_BITS & ~(1u << (8 + me))));
}

/* the flag a process must get: the remote half's tag, and the bits of all
 * but the remote group's members set */
static int expected_flag(const int *remote, int nremote, int low)
{
    unsigned flag = (low ? HIGH_TAG : LOW_TAG) | RANK_BITS;
    for (int i = 0; i < nremote; i++) flag &= ~(1u << (8 + remote[i]));
    return (int)flag;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rounds = argc > 1 ? atoi(argv[1]) : 10;
    if (rounds < 1) rounds = 1;
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    const char *why = np < 2 ? "fewer than two processes" : np > 24 ? "more than 24 processes" : NULL;
    if (why != NULL) {
        ftcheck_outcome(why);
        MPI_Finalize();
        return 0;
    }
    MPI_Comm world = ftcheck_dup_world(), half, inter;
    int low = me < np / 2;
    MPI_Comm_split(world, low ? 0 : 1, me, &half);
    MPI_Intercomm_create(half, 0, world, low ? np / 2 : 0, 36, &inter);
    MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);

    /* the sum over the other half, as the rounds must find it */
    long long remote_sum = 0;
    for (int r = low ? np / 2 : 0; r < (low ? np : np / 2); r++) remote_sum += r;
    int rc = MPI_SUCCESS, round;
    for (round = 0; round < rounds; round++) {
        ftslide_killpointf(me, "round=%d", round);
        long long mine = me, sum = -1;
        rc = MPI_Allreduce(&mine, &sum, 1, MPI_LONG_LONG, MPI_SUM, inter);
        if (rc != MPI_SUCCESS) {
            MPIX_Comm_revoke(inter);
            break;
        }
        if (sum != remote_sum && why == NULL) why = "a round's Allreduce is not the other half's sum";
    }
    FTCHECK("left", "%d", round);
    FTCHECK_RC("rounds", rc);
    if (rc != MPI_SUCCESS && error_class(rc) != MPIX_ERR_PROC_FAILED && error_class(rc) != MPIX_ERR_REVOKED &&
        why == NULL)
        why = "a round failed with an error that is not a failure";

    /* 1. agree on the intercommunicator, the known failures acknowledged */
    MPIX_Comm_failure_ack(inter);
    int flag = contribution(me, low);
    int agree_rc = MPIX_Comm_agree(inter, &flag);
    FTCHECK_RC("agree", agree_rc);
    FTCHECK("agree_flag", "0x%x", (unsigned)flag);
    if (error_class(agree_rc) != MPI_SUCCESS && error_class(agree_rc) != MPIX_ERR_PROC_FAILED && why == NULL)
        why = "the agreement on the intercommunicator failed";

    /* 2. shrink it */
    MPI_Comm shrunk;
    rc = MPIX_Comm_shrink(inter, &shrunk);
    FTCHECK_RC("shrink", rc);
    if (rc != MPI_SUCCESS) {
        ftcheck_outcome(why != NULL ? why : "the shrink of the intercommunicator failed");
        MPI_Finalize();
        return 0;
    }
    MPI_Comm_set_errhandler(shrunk, MPI_ERRORS_RETURN);
    int is_inter = 0, lsize, rsize, srank;
    MPI_Comm_test_inter(shrunk, &is_inter);
    if (!is_inter) {
        ftcheck_outcome(why != NULL ? why : "the shrunk communicator is not an intercommunicator");
        MPI_Finalize();
        return 0;
    }
    MPI_Comm_size(shrunk, &lsize);
    MPI_Comm_remote_size(shrunk, &rsize);
    MPI_Comm_rank(shrunk, &srank);
    FTCHECK("shrunk", "%d/%d", lsize, rsize);
    MPI_Group local_group, remote_group;
    MPI_Comm_group(shrunk, &local_group);
    MPI_Comm_remote_group(shrunk, &remote_group);
    int nlocal, nremote;
    int *local = world_ranks(local_group, &nlocal), *remote = world_ranks(remote_group, &nremote);
    MPI_Group_free(&local_group);
    MPI_Group_free(&remote_group);
    for (int i = 0; i < nlocal && why == NULL; i++) {
        if ((local[i] < np / 2) != low || (i > 0 && local[i] <= local[i - 1]))
            why = "the shrunk local group is not this half's survivors in order";
    }
    for (int i = 0; i < nremote && why == NULL; i++) {
        if ((remote[i] < np / 2) == low || (i > 0 && remote[i] <= remote[i - 1]))
            why = "the shrunk remote group is not the other half's survivors in order";
    }
    if (why == NULL && (local[srank] != me || rsize < 1))
        why = "the shrunk intercommunicator does not hold this process or any remote one";
    if (why == NULL && flag != expected_flag(remote, nremote, low))
        why = "the agreed flag is not the AND of the remote half's survivors";

    /* 3. a message across the shrunk intercommunicator */
    MPI_Request send;
    rc = MPI_Isend(&me, 1, MPI_INT, srank % rsize, 7, shrunk, &send);
    for (int r = 0; r < rsize && rc == MPI_SUCCESS; r++) {
        if (r % lsize != srank) continue;
        int got = -1;
        rc = MPI_Recv(&got, 1, MPI_INT, r, 7, shrunk, MPI_STATUS_IGNORE);
        if (rc == MPI_SUCCESS && got != remote[r] && why == NULL)
            why = "a message across the shrunk intercommunicator not from its sender";
    }
    if (rc == MPI_SUCCESS) rc = MPI_Wait(&send, MPI_STATUS_IGNORE);
    FTCHECK_RC("exchange", rc);
    if (rc != MPI_SUCCESS && why == NULL) why = "a message across the shrunk intercommunicator failed";

    /* 4. a non-blocking agreement on it */
    MPI_Request req;
    int iflag = contribution(me, low);
    rc = MPIX_Comm_iagree(shrunk, &iflag, &req);
    if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    FTCHECK_RC("iagree", rc);
    FTCHECK("iagree_flag", "0x%x", (unsigned)iflag);
    if (rc != MPI_SUCCESS && why == NULL) why = "the iagree on the shrunk intercommunicator failed";
    if (rc == MPI_SUCCESS && iflag != expected_flag(remote, nremote, low) && why == NULL)
        why = "the iagree's flag is not the AND of the remote half's survivors";

    /* 5. the remote group's sum, and everybody's */
    long long mine = me, sum = -1, local_sum = 0, expect = 0;
    for (int i = 0; i < nremote; i++) expect += remote[i];
    for (int i = 0; i < nlocal; i++) local_sum += local[i];
    rc = MPI_Allreduce(&mine, &sum, 1, MPI_LONG_LONG, MPI_SUM, shrunk);
    if (rc != MPI_SUCCESS && why == NULL) why = "the Allreduce on the shrunk intercommunicator failed";
    if (rc == MPI_SUCCESS && sum != expect && why == NULL)
        why = "the Allreduce on the shrunk intercommunicator is not the remote group's sum";
    FTCHECK("survivors", "%d", lsize + rsize);
    FTCHECK("sum", "%lld", local_sum + sum);
    ftcheck_outcome(why);
    free(local);
    free(remote);
    MPI_Comm_free(&shrunk);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
    MPI_Comm_free(&world);
    MPI_Finalize();
    return 0;
}
