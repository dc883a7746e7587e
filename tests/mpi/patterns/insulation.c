/*
 * Insulation between communicators: a failure, and the revoke that follows
 * it, stay on the communicators that hold the dead process.
 *
 * The ranks split into two halves (even and odd world ranks); each iteration
 * sums a vector of COUNT ints over its half with MPI_Allreduce (element i of
 * a rank's vector: its world rank + i mod 65536), and every 4th iteration
 * over everybody (a dup of MPI_COMM_WORLD). COUNT is FTCHECK_MESSAGE_BYTES /
 * 4 (tests/mpi/ftcheck.h), 1 without it. After a death, the dead process's
 * half gets an error on its half communicator, revokes it, shrinks it and
 * goes on with the survivors of the half; the other half must
 * see no error at all on its own half communicator, in any iteration, and
 * its sums stay those of all its members. On the communicator of everybody,
 * all recover, revoke and shrink.
 *
 * A collective can end well at some ranks and fail at others when a member
 * dies during it (a rank that got its result before the failure was
 * reported); a rank that went on while the others recover would then wait for
 * them forever on another communicator. So every MPI_Allreduce is followed by
 * MPIX_Comm_agree on its success, and all members act on the agreed outcome
 * (the agreement itself reports MPIX_ERR_PROC_FAILED alike at every survivor).
 *
 * Checks: every element of every sum is that of the members of the
 * communicator it ran on (their world ranks, from the communicator's group,
 * plus the member count times i mod 65536); no error on a half communicator
 * without a dead member (half_errors=0, which the harness checks for the half
 * without a victim); survivors=N is the size of a last shrink of the
 * communicator of everybody.
 *
 * Kill points: "iter=K" at the start of iteration K (K in 0..ITERS-1).
 *
 * usage: insulation [ITERS]     (default 24)
 */
#include <stdlib.h>

#include "ftcheck.h"

/* Sum of the world ranks of comm's members. */
static int member_sum(MPI_Comm comm)
{
    MPI_Group group, world;
    int n, sum = 0;
    MPI_Comm_group(comm, &group);
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_size(group, &n);
    for (int i = 0; i < n; i++) {
        int r;
        MPI_Group_translate_ranks(group, 1, &i, world, &r);
        sum += r;
    }
    MPI_Group_free(&group);
    MPI_Group_free(&world);
    return sum;
}

/* Element i of a rank's vector. */
static int element(int world_rank, int i) { return world_rank + (i & 0xffff); }

/* Whether all count elements of sum are those of comm's members. */
static int sum_ok(const int *sum, int count, MPI_Comm comm)
{
    int members, ranks = member_sum(comm);
    MPI_Comm_size(comm, &members);
    for (int i = 0; i < count; i++) {
        if (sum[i] != ranks + members * (i & 0xffff)) return 0;
    }
    return 1;
}

/* MPI_Allreduce (sum) of count ints whose outcome every member agrees on:
 * MPI_SUCCESS at all of them, or an error at all of them. */
static int agreed_allreduce(const int *in, int *out, int count, MPI_Comm comm)
{
    for (int i = 0; i < count; i++) out[i] = -1; /* nothing left from the last call */
    int rc = MPI_Allreduce(in, out, count, MPI_INT, MPI_SUM, comm);
    int ok = rc == MPI_SUCCESS;
    int arc = MPIX_Comm_agree(comm, &ok);
    if (arc != MPI_SUCCESS) return arc;
    return ok ? MPI_SUCCESS : (rc != MPI_SUCCESS ? rc : MPIX_ERR_PROC_FAILED);
}

/* Revoke (unless the error says it is revoked), shrink, replace *comm. */
static int recover(MPI_Comm *comm, int rc)
{
    int eclass;
    MPI_Error_class(rc, &eclass);
    if (eclass != MPIX_ERR_REVOKED) MPIX_Comm_revoke(*comm);
    MPI_Comm shrunk;
    rc = MPIX_Comm_shrink(*comm, &shrunk);
    if (rc != MPI_SUCCESS) return rc;
    MPI_Comm_free(comm);
    *comm = shrunk;
    return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int iters = argc > 1 ? atoi(argv[1]) : 24;
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm all, half;
    MPI_Comm_dup(MPI_COMM_WORLD, &all);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    MPI_Comm_set_errhandler(all, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(half, MPI_ERRORS_RETURN);
    const char *why = NULL;
    int half_errors = 0, half_recoveries = 0, all_recoveries = 0;
    const int count = (int)(ftcheck_message_bytes(sizeof(int)) / sizeof(int));
    int *mine = malloc(sizeof(int) * (size_t)count), *sum = malloc(sizeof(int) * (size_t)count);
    for (int i = 0; i < count; i++) mine[i] = element(rank, i);

    for (int iter = 0; iter < iters && why == NULL; iter++) {
        ftslide_killpointf(rank, "iter=%d", iter);
        int rc = agreed_allreduce(mine, sum, count, half);
        while (rc != MPI_SUCCESS && why == NULL) {
            /* only a half with a dead member may get here */
            half_errors++;
            if (recover(&half, rc) != MPI_SUCCESS) why = "could not shrink the half communicator";
            half_recoveries++;
            rc = agreed_allreduce(mine, sum, count, half);
        }
        if (why == NULL && !sum_ok(sum, count, half)) why = "wrong sum over the half";
        if (iter % 4 == 3) {
            rc = agreed_allreduce(mine, sum, count, all);
            while (rc != MPI_SUCCESS && why == NULL) {
                if (recover(&all, rc) != MPI_SUCCESS) why = "could not shrink the communicator of everybody";
                all_recoveries++;
                rc = agreed_allreduce(mine, sum, count, all);
            }
            if (why == NULL && !sum_ok(sum, count, all)) why = "wrong sum over everybody";
        }
    }
    /* a half whose members are all alive never saw an error: the harness
     * compares half_errors with the halves of the kills that landed */
    int nall = -1, nhalf;
    MPI_Comm final;
    if (MPIX_Comm_shrink(all, &final) == MPI_SUCCESS) { /* whoever is alive now, for the count */
        MPI_Comm_size(final, &nall);
        MPI_Comm_free(&final);
    } else if (why == NULL) {
        why = "the final shrink failed";
    }
    MPI_Comm_size(half, &nhalf);
    FTCHECK("half_errors", "%d", half_errors);
    FTCHECK("half_size", "%d", nhalf);
    FTCHECK("all_recoveries", "%d", all_recoveries);
    FTCHECK("survivors", "%d", nall);
    ftcheck_outcome(why);
    free(mine);
    free(sum);
    MPI_Comm_free(&half);
    MPI_Comm_free(&all);
    MPI_Finalize();
    return 0;
}
