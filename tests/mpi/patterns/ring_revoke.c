/*
 * Ring with revoke-and-leave: the most common ULFM pattern in the wild.
 *
 * Every rank sends COUNT doubles to its right neighbour and receives from its
 * left one with MPI_Sendrecv, ITERS times, on a dup of MPI_COMM_WORLD whose
 * errors are returned. A rank whose MPI_Sendrecv fails revokes the
 * communicator (unless the error already says it is revoked) and leaves the
 * loop; every other rank must leave its next MPI_Sendrecv with
 * MPIX_ERR_REVOKED. The survivors then shrink (MPIX_Comm_shrink, or
 * MPIX_Comm_ishrink overlapped with a test loop when the second argument is
 * "ishrink"; an MPI without it, such as upstream's release 5.0.11, reports
 * outcome=wrong there), sum their world ranks on the shrunk communicator and
 * finalize.
 *
 * COUNT is FTCHECK_MESSAGE_BYTES / 8 (tests/mpi/ftcheck.h), 1,024 without it
 * (8 KiB: a rendezvous send on shared memory and TCP).
 *
 * Checks at every survivor: element i of each received buffer holds the left
 * neighbour's rank + iteration + i, all COUNT of them; the loop ended with
 * MPIX_ERR_PROC_FAILED or MPIX_ERR_REVOKED (or ran to its end when the
 * failure came after this rank's last exchange); the shrunk communicator
 * keeps world order and the sum over it is its members' world ranks. It
 * prints survivors=N and sum=S, which the driver compares across ranks and
 * with the kills that landed.
 *
 * Kill points: "iter=K" at the start of iteration K (K in 0..ITERS-1).
 *
 * usage: ring_revoke [ITERS [shrink|ishrink]]     (default 10 shrink)
 */
#include <stdlib.h>
#include <string.h>

#include "ftcheck.h"

#define DEFAULT_COUNT 1024

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int iters = argc > 1 ? atoi(argv[1]) : 10;
    int nonblocking = argc > 2 && strcmp(argv[2], "ishrink") == 0;
    int rank, size;
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    const char *why = NULL;

    const int count = (int)(ftcheck_message_bytes(DEFAULT_COUNT * sizeof(double)) / sizeof(double));
    double *out = malloc(sizeof(double) * (size_t)count), *in = malloc(sizeof(double) * (size_t)count);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int iter, rc = MPI_SUCCESS, eclass = MPI_SUCCESS;
    for (iter = 0; iter < iters; iter++) {
        ftslide_killpointf(rank, "iter=%d", iter);
        for (int i = 0; i < count; i++) out[i] = (double)(rank + iter + i);
        rc = MPI_Sendrecv(out, count, MPI_DOUBLE, right, 0, in, count, MPI_DOUBLE, left, 0, comm,
                          MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) {
            MPI_Error_class(rc, &eclass);
            if (eclass != MPIX_ERR_REVOKED) MPIX_Comm_revoke(comm);
            break;
        }
        for (int i = 0; i < count && why == NULL; i++) {
            if (in[i] != (double)(left + iter + i)) why = "wrong data from the left neighbour";
        }
    }
    free(out);
    free(in);
    FTCHECK("left", "%d", iter);
    FTCHECK_RC("how", rc);
    if (rc != MPI_SUCCESS && eclass != MPIX_ERR_PROC_FAILED && eclass != MPIX_ERR_REVOKED) why = "unexpected error";

    MPI_Comm shrunk;
    if (nonblocking) {
#ifdef OMPI_HAVE_MPIX_COMM_ISHRINK
        MPI_Request req;
        int done = 0, polls = 0;
        rc = MPIX_Comm_ishrink(comm, &shrunk, &req);
        while (rc == MPI_SUCCESS && !done) {
            rc = MPI_Test(&req, &done, MPI_STATUS_IGNORE);
            polls++;
        }
        FTCHECK("ishrink_polls", "%d", polls);
#else /* an Open MPI without patch ompi/09, e.g. upstream's release 5.0.11: no MPIX_Comm_ishrink */
        ftcheck_outcome("this MPI has no MPIX_Comm_ishrink");
        MPI_Finalize();
        return 0;
#endif
    } else {
        rc = MPIX_Comm_shrink(comm, &shrunk);
    }
    FTCHECK_RC("shrink", rc);
    if (rc != MPI_SUCCESS) {
        ftcheck_outcome("the shrink failed");
        MPI_Finalize();
        return 0;
    }

    /* the members in world order; which processes they are, the driver checks
     * (every survivor prints the same count and sum, those of the live ones) */
    MPI_Group world_group, shrunk_group;
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    MPI_Comm_group(shrunk, &shrunk_group);
    int nsurv, sum = 0, expect = 0, me_world;
    MPI_Comm_size(shrunk, &nsurv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me_world);
    int *members = malloc(sizeof(int) * (size_t)nsurv), *world_ranks = malloc(sizeof(int) * (size_t)nsurv);
    for (int i = 0; i < nsurv; i++) members[i] = i;
    MPI_Group_translate_ranks(shrunk_group, nsurv, members, world_group, world_ranks);
    for (int i = 0; i < nsurv; i++) {
        expect += world_ranks[i];
        if (i > 0 && world_ranks[i] <= world_ranks[i - 1]) why = "the shrunk communicator is not in world order";
    }
    rc = MPI_Allreduce(&me_world, &sum, 1, MPI_INT, MPI_SUM, shrunk);
    if (rc != MPI_SUCCESS) why = "the allreduce on the shrunk communicator failed";
    else if (sum != expect) why = "wrong sum on the shrunk communicator";
    FTCHECK("survivors", "%d", nsurv);
    FTCHECK("sum", "%d", sum);
    ftcheck_outcome(why);

    free(members);
    free(world_ranks);
    MPI_Group_free(&world_group);
    MPI_Group_free(&shrunk_group);
    MPI_Comm_free(&shrunk);
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return 0;
}
