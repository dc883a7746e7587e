/*
 * Several processes die at the same moment, twice: two rounds of failures,
 * each repaired with revoke and shrink.
 *
 * The work is ITERS iterations on a dup of MPI_COMM_WORLD whose errors are
 * returned. Iteration K is an MPI_Allreduce (SUM) of (world rank + 1) * (K + 1)
 * followed by a ring exchange (MPI_Sendrecv of two ints to the right, from the
 * left: the sender's world rank and K). A rank whose call fails revokes the
 * communicator and leaves the loop; every rank then calls MPIX_Comm_agree on
 * "I finished every iteration", so that one that finished and one that
 * failed take the same branch. If the agreement fails or says no, all of
 * them repair:
 *  1. MPIX_Comm_shrink of the revoked communicator;
 *  2. an MPI_Allreduce (MIN) on the shrunk one: the iteration to restart
 *     from is the lowest one a survivor had not finished;
 *  3. MPIX_Comm_agree on "step 2 worked here": a process that died during
 *     the repair (the second victim of a pair may be seen late) makes it
 *     fail, and the survivors revoke the shrunk communicator and shrink
 *     again, until a shrunk communicator works everywhere.
 * Then every survivor goes on from the restart iteration. The harness kills
 * the victims of a round at the same kill point ("iter=K", the same K), so
 * they die within microseconds of each other, and the second round's
 * victims at a later iteration, after the first repair.
 *
 * Checks at every survivor: each Allreduce gives (K + 1) times the sum of
 * (world rank + 1) over the members of the communicator it ran on; each ring
 * message comes from the left neighbour of that communicator and holds K; a
 * failed call failed with MPIX_ERR_PROC_FAILED, MPIX_ERR_REVOKED or
 * MPIX_ERR_PROC_FAILED_PENDING. The global sum is the sum of the Allreduce
 * results of all iterations (the last time each was done), the same at every
 * survivor: it prints sum=S, survivors=N (size of the final communicator),
 * repairs (repairs it took part in) and shrinks (shrinks, more than repairs
 * when a repair had to be redone).
 *
 * Kill points: "iter=K" at the start of iteration K (K in 0..ITERS-1), at
 * every rank. Any number of victims at any iterations work as long as one
 * rank survives.
 *
 * usage: simultaneous_twice [ITERS]     (default 12)
 */
#include <stdlib.h>

#include "ftcheck.h"

/* sum of (world rank + 1) over comm's members */
static long long member_weight(MPI_Comm comm)
{
    int size;
    long long total = 0;
    MPI_Comm_size(comm, &size);
    for (int i = 0; i < size; i++) total += ftcheck_world_rank(comm, i) + 1;
    return total;
}

static int is_failure(int rc)
{
    int eclass;
    MPI_Error_class(rc, &eclass);
    return eclass == MPIX_ERR_PROC_FAILED || eclass == MPIX_ERR_REVOKED || eclass == MPIX_ERR_PROC_FAILED_PENDING;
}

/* Revoke, shrink, agree on where to restart; again while somebody in the
 * shrunk communicator turns out to be dead. *next: this rank's first
 * unfinished iteration on entry, the agreed restart on return. */
static int repair(MPI_Comm *comm, int *next, int np, int *shrinks)
{
    for (int attempt = 0; attempt <= np; attempt++) {
        MPIX_Comm_revoke(*comm);
        MPI_Comm shrunk;
        int rc = MPIX_Comm_shrink(*comm, &shrunk);
        if (rc != MPI_SUCCESS) return rc;
        (*shrinks)++;
        MPI_Comm_free(comm);
        *comm = shrunk;
        MPI_Comm_set_errhandler(*comm, MPI_ERRORS_RETURN);
        int restart = *next;
        rc = MPI_Allreduce(next, &restart, 1, MPI_INT, MPI_MIN, *comm);
        int flag = rc == MPI_SUCCESS;
        if (!flag) MPIX_Comm_revoke(*comm); /* release those still inside the Allreduce */
        rc = MPIX_Comm_agree(*comm, &flag);
        if (rc == MPI_SUCCESS && flag) {
            *next = restart;
            return MPI_SUCCESS;
        }
    }
    return MPI_ERR_OTHER;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int iters = argc > 1 ? atoi(argv[1]) : 12;
    if (iters < 1) iters = 1;
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    MPI_Comm comm = ftcheck_dup_world();
    const char *why = NULL;
    long long *result = calloc((size_t)iters, sizeof(long long));
    int next = 0, repairs = 0, shrinks = 0, done = 0;

    /* a rank that found something wrong goes on with the others (leaving would
     * leave them waiting for it), and reports at the end */
    while (!done) {
        int rc = MPI_SUCCESS;
        for (; next < iters; next++) {
            ftslide_killpointf(me, "iter=%d", next);
            int rank, size;
            MPI_Comm_rank(comm, &rank);
            MPI_Comm_size(comm, &size);
            long long mine = (long long)(me + 1) * (next + 1), sum = 0;
            rc = MPI_Allreduce(&mine, &sum, 1, MPI_LONG_LONG, MPI_SUM, comm);
            if (rc != MPI_SUCCESS) break;
            if (sum != member_weight(comm) * (next + 1) && why == NULL)
                why = "an Allreduce does not match the members of its communicator";
            int out[2] = {me, next}, in[2] = {-1, -1};
            int right = (rank + 1) % size, left = (rank + size - 1) % size;
            rc = MPI_Sendrecv(out, 2, MPI_INT, right, next, in, 2, MPI_INT, left, next, comm, MPI_STATUS_IGNORE);
            if (rc != MPI_SUCCESS) break;
            if ((in[0] != ftcheck_world_rank(comm, left) || in[1] != next) && why == NULL)
                why = "a ring message not from the left neighbour";
            result[next] = sum;
        }
        /* everyone, done or not, learns whether everyone is done */
        int flag = rc == MPI_SUCCESS;
        if (!flag) {
            if (!is_failure(rc) && why == NULL) why = "an error that is not a failure";
            MPIX_Comm_revoke(comm);
        }
        rc = MPIX_Comm_agree(comm, &flag);
        if (rc == MPI_SUCCESS && flag) {
            done = 1;
            break;
        }
        rc = repair(&comm, &next, np, &shrinks);
        if (rc != MPI_SUCCESS) {
            FTCHECK_RC("repair", rc);
            if (why == NULL) why = "the repair failed";
            break;
        }
        repairs++;
    }

    long long total = 0;
    for (int k = 0; k < iters; k++) total += result[k];
    int size;
    MPI_Comm_size(comm, &size);
    FTCHECK("repairs", "%d", repairs);
    FTCHECK("shrinks", "%d", shrinks);
    FTCHECK("survivors", "%d", size);
    FTCHECK("sum", "%lld", total);
    ftcheck_outcome(why);
    free(result);
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return 0;
}
