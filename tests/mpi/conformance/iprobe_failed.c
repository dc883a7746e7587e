/*
 * Non-blocking probes after a failure and after a revoke. np 3; the test
 * kills rank 2 at "after_barrier".
 *
 * A probe that can never match because its source is dead must say so: a
 * program that polls MPI_Iprobe or MPI_Improbe for a message of a dead rank
 * (or of MPI_ANY_SOURCE, before acknowledging the failure) otherwise spins
 * for ever. Each poll below gives up after POLL_SECONDS and then reports
 * "flag0_forever": the answer Open MPI 5.0.7 gives (upstream fixed it in
 * 5.0.11, open-mpi/ompi#13792; ours is patch ompi/15).
 *
 * Rank 0, after a receive from rank 2 has reported the failure:
 *   iprobe_dead, improbe_dead    source 2                  MPIX_ERR_PROC_FAILED
 *   iprobe_any, improbe_any      MPI_ANY_SOURCE, unacked   MPIX_ERR_PROC_FAILED
 *   probe_dead, mprobe_dead      the blocking ones         MPIX_ERR_PROC_FAILED
 *   iprobe_live_empty            source 1, nothing sent    MPI_SUCCESS, flag 0
 * then acknowledges the failure, asks rank 1 for a message and polls for it
 * with MPI_ANY_SOURCE (iprobe_any_acked: MPI_SUCCESS, from rank 1, value 42),
 * and last revokes the communicator: iprobe_revoked_here (MPIX_ERR_REVOKED).
 * Rank 1 polls for a message of rank 0 that never comes until the revoke
 * reaches it: iprobe_revoked_remote (MPIX_ERR_REVOKED).
 */
#include "ftcheck.h"

#include <string.h>

#define POLL_SECONDS 3.0

enum probe_kind { USE_IPROBE, USE_IMPROBE };

/* Poll until a message matches, an error is returned or POLL_SECONDS pass;
 * report the error class, "flag0_forever" if nothing happened, or the class
 * with *matched set (the message of an improbe is received into *value). */
static const char *poll_probe(enum probe_kind kind, int source, int tag, MPI_Comm comm, int *matched,
                              MPI_Status *status, int *value)
{
    double give_up = MPI_Wtime() + POLL_SECONDS;
    *matched = 0;
    do {
        int flag = 0, rc;
        if (kind == USE_IPROBE) {
            rc = MPI_Iprobe(source, tag, comm, &flag, status);
        } else {
            MPI_Message message = MPI_MESSAGE_NULL;
            rc = MPI_Improbe(source, tag, comm, &flag, &message, status);
            if (rc == MPI_SUCCESS && flag) {
                rc = MPI_Mrecv(value, 1, MPI_INT, &message, status);
            }
        }
        if (rc != MPI_SUCCESS || flag) {
            *matched = flag;
            return ftcheck_class(rc);
        }
    } while (MPI_Wtime() < give_up);
    return "flag0_forever";
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm comm = ftcheck_dup_world();
    int rank = ftcheck_rank();
    MPI_Barrier(comm);
    ftslide_killpoint(rank, "after_barrier");

    int value = -1, matched = 0;
    MPI_Status status;
    if (rank == 0) {
        FTCHECK_RC("recv_from_dead", MPI_Recv(&value, 1, MPI_INT, 2, 7, comm, MPI_STATUS_IGNORE));
        FTCHECK("iprobe_dead", "%s", poll_probe(USE_IPROBE, 2, 7, comm, &matched, &status, &value));
        FTCHECK("improbe_dead", "%s", poll_probe(USE_IMPROBE, 2, 7, comm, &matched, &status, &value));
        FTCHECK("iprobe_any", "%s", poll_probe(USE_IPROBE, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &matched, &status,
                                               &value));
        FTCHECK("improbe_any", "%s", poll_probe(USE_IMPROBE, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &matched,
                                                &status, &value));
        FTCHECK_RC("probe_dead", MPI_Probe(2, 7, comm, &status));
        MPI_Message message = MPI_MESSAGE_NULL;
        FTCHECK_RC("mprobe_dead", MPI_Mprobe(2, 7, comm, &message, &status));
        int flag = -1;
        FTCHECK_RC("iprobe_live_empty", MPI_Iprobe(1, 8, comm, &flag, &status));
        FTCHECK("iprobe_live_empty_flag", "%d", flag);

        FTCHECK_RC("failure_ack", MPIX_Comm_failure_ack(comm));
        int go = 1;
        MPI_Send(&go, 1, MPI_INT, 1, 2, comm);
        FTCHECK("iprobe_any_acked", "%s", poll_probe(USE_IPROBE, MPI_ANY_SOURCE, 3, comm, &matched, &status,
                                                     &value));
        FTCHECK("iprobe_any_acked_source", "%d", matched ? status.MPI_SOURCE : -1);
        if (matched) {
            MPI_Recv(&value, 1, MPI_INT, status.MPI_SOURCE, 3, comm, MPI_STATUS_IGNORE);
        }
        FTCHECK("iprobe_any_acked_value", "%d", value);

        FTCHECK_RC("revoke", MPIX_Comm_revoke(comm));
        FTCHECK("iprobe_revoked_here", "%s", poll_probe(USE_IPROBE, 1, 4, comm, &matched, &status, &value));
    } else if (rank == 1) {
        int go = 0;
        MPI_Recv(&go, 1, MPI_INT, 0, 2, comm, MPI_STATUS_IGNORE);
        value = 42;
        MPI_Send(&value, 1, MPI_INT, 0, 3, comm);
        /* Rank 0 revokes as soon as it has the message; give the revoke the
         * time of a full poll to arrive (the poll progresses it). */
        const char *seen = "flag0_forever";
        for (int round = 0; round < 3 && strcmp(seen, "flag0_forever") == 0; round++) {
            seen = poll_probe(USE_IPROBE, 0, 4, comm, &matched, &status, &value);
        }
        FTCHECK("iprobe_revoked_remote", "%s", seen);
    }
    FTCHECK("finished", "%d", 1);
    MPI_Finalize();
    return 0;
}
