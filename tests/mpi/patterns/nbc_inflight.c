/*
 * Non-blocking collectives in flight when a process dies.
 *
 * ITERS iterations on a dup of MPI_COMM_WORLD whose errors are returned. In
 * iteration K every process starts three collectives, then completes them
 * with one MPI_Waitall:
 *   MPI_Iallreduce (SUM) of (world rank + 1) * (K + 1),
 *   MPI_Ibcast of COUNT ints from rank K % size (its world rank, K and words
 *     derived from both, ftcheck_payload_fill),
 *   MPI_Ibarrier.
 * The victim dies between starting its three and waiting for them, so its
 * first messages may be out while the rest never comes. A process whose
 * MPI_Waitall fails (MPI_ERR_IN_STATUS; each status says
 * MPIX_ERR_PROC_FAILED, MPIX_ERR_REVOKED, MPI_ERR_PENDING for one still
 * running, or MPI_SUCCESS) revokes the communicator and waits for the
 * requests still pending: the revoke must complete them. A collective may
 * also succeed at some processes and fail at others; whoever finished the
 * iteration goes on and meets the revoke in a later one. Then the
 * survivors shrink, agree where to restart (MPI_Allreduce MIN of the first
 * unfinished iteration on the shrunk communicator, MPIX_Comm_agree on its
 * success; again with another shrink if somebody died in between) and redo
 * the collectives from there on the shrunk communicator. After the last
 * iteration MPIX_Comm_agree on "all my iterations worked" decides for
 * everyone whether a repair is still needed.
 *
 * COUNT is FTCHECK_MESSAGE_BYTES / 4 (tests/mpi/ftcheck.h), 2,048 without it
 * (8 KiB: more than shared memory's eager limit).
 *
 * Checks at every survivor: a completed Iallreduce gives (K + 1) times the
 * sum of (world rank + 1) over the communicator it ran on (the victim's
 * share included if it ran on the one the victim was in: the victim gave it
 * before dying); a completed Ibcast holds the root's whole payload; every
 * status of a failed MPI_Waitall is one of the four above (a status that
 * holds no valid error code at all, such as Open MPI's internal -1, is
 * reported as invalid_code=COLLECTIVE:CODE); the second MPI_Waitall
 * returns. A rank that found something wrong goes on with the others and
 * reports it at the end. It prints survivors=N, repairs, sum=S (the
 * Iallreduce results of all iterations, the last time each was done) and
 * pending (requests found still running after a failed MPI_Waitall).
 *
 * Kill points: "posted=K" after the three collectives of iteration K are
 * started (K in 0..ITERS-1).
 *
 * usage: nbc_inflight [ITERS]     (default 10)
 */
#include <stdlib.h>

#include "ftcheck.h"

/* An invalid error code (below 0: Open MPI's internal codes) gives INVALID_CODE
 * instead of MPI_Error_class's own error, which MPI_COMM_WORLD's handler makes fatal. */
#define INVALID_CODE (-1)

static int error_class(int rc)
{
    int eclass = rc;
    if (rc < 0) return INVALID_CODE;
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &eclass);
    return eclass;
}

static int is_failure(int eclass)
{
    return eclass == MPIX_ERR_PROC_FAILED || eclass == MPIX_ERR_REVOKED || eclass == MPIX_ERR_PROC_FAILED_PENDING;
}

/* Revoke, shrink, agree on where to restart; again while somebody in the
 * shrunk communicator turns out to be dead. */
static int repair(MPI_Comm *comm, int *next, int np)
{
    for (int attempt = 0; attempt <= np; attempt++) {
        MPIX_Comm_revoke(*comm);
        MPI_Comm shrunk;
        int rc = MPIX_Comm_shrink(*comm, &shrunk);
        if (rc != MPI_SUCCESS) return rc;
        MPI_Comm_free(comm);
        *comm = shrunk;
        MPI_Comm_set_errhandler(*comm, MPI_ERRORS_RETURN);
        int restart = *next;
        rc = MPI_Allreduce(next, &restart, 1, MPI_INT, MPI_MIN, *comm);
        int flag = rc == MPI_SUCCESS;
        if (!flag) MPIX_Comm_revoke(*comm);
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
    int iters = argc > 1 ? atoi(argv[1]) : 10;
    if (iters < 1) iters = 1;
    const int count = (int)(ftcheck_message_bytes(2048 * sizeof(int)) / sizeof(int));
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    MPI_Comm comm = ftcheck_dup_world();
    const char *why = count < 2 ? "a message of fewer than two ints" : NULL;
    int *buf = malloc(sizeof(int) * (size_t)(count < 2 ? 2 : count));
    long long *result = calloc((size_t)iters, sizeof(long long));
    int next = 0, repairs = 0, pending = 0, done = 0;

    /* a rank that found something wrong goes on with the others (leaving would
     * leave them waiting for it), and reports at the end */
    while (!done) {
        int rc = MPI_SUCCESS;
        for (; next < iters; next++) {
            int rank, size;
            MPI_Comm_rank(comm, &rank);
            MPI_Comm_size(comm, &size);
            int root = next % size;
            long long weight = 0;
            for (int i = 0; i < size; i++) weight += ftcheck_world_rank(comm, i) + 1;
            long long mine = (long long)(me + 1) * (next + 1), sum = -1;
            if (rank == root) ftcheck_payload_fill(buf, count, me, next);
            else buf[0] = buf[1] = -1;

            MPI_Request req[3] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
            MPI_Status status[3];
            rc = MPI_Iallreduce(&mine, &sum, 1, MPI_LONG_LONG, MPI_SUM, comm, &req[0]);
            if (rc == MPI_SUCCESS) rc = MPI_Ibcast(buf, count, MPI_INT, root, comm, &req[1]);
            if (rc == MPI_SUCCESS) rc = MPI_Ibarrier(comm, &req[2]);
            ftslide_killpointf(me, "posted=%d", next);
            if (rc == MPI_SUCCESS) {
                rc = MPI_Waitall(3, req, status);
                if (rc != MPI_SUCCESS && error_class(rc) == MPI_ERR_IN_STATUS) {
                    for (int i = 0; i < 3; i++) {
                        int eclass = error_class(status[i].MPI_ERROR);
                        if (eclass == MPI_ERR_PENDING) {
                            pending++;
                        } else if (eclass == INVALID_CODE && why == NULL) {
                            FTCHECK("invalid_code", "%s:%d", i == 0 ? "Iallreduce" : i == 1 ? "Ibcast" : "Ibarrier",
                                    status[i].MPI_ERROR);
                            why = "a collective's status holds an invalid error code";
                        } else if (eclass != MPI_SUCCESS && !is_failure(eclass) && why == NULL) {
                            why = "a collective failed with an error that is not a failure";
                        }
                    }
                } else if (rc != MPI_SUCCESS && !is_failure(error_class(rc)) && why == NULL) {
                    why = "MPI_Waitall failed with an error that is not a failure";
                }
            } else if (!is_failure(error_class(rc)) && why == NULL) {
                why = "starting a collective failed with an error that is not a failure";
            }
            if (rc != MPI_SUCCESS) {
                /* the revoke completes whatever is still running, here and everywhere */
                MPIX_Comm_revoke(comm);
                MPI_Waitall(3, req, MPI_STATUSES_IGNORE);
                break;
            }
            if (sum != weight * (next + 1) && why == NULL)
                why = "an Iallreduce does not match the members of its communicator";
            if (!ftcheck_payload_ok(buf, count, ftcheck_world_rank(comm, root), next) && why == NULL)
                why = "an Ibcast did not deliver the root's payload";
            result[next] = sum;
        }
        int flag = rc == MPI_SUCCESS;
        rc = MPIX_Comm_agree(comm, &flag);
        if (rc == MPI_SUCCESS && flag) {
            done = 1;
            break;
        }
        rc = repair(&comm, &next, np);
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
    FTCHECK("pending", "%d", pending);
    FTCHECK("survivors", "%d", size);
    FTCHECK("sum", "%lld", total);
    ftcheck_outcome(why);
    free(buf);
    free(result);
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return 0;
}
