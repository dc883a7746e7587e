/*
 * A send whose receiver has revoked the communicator and moved on before the
 * message arrives: it must end with MPIX_ERR_REVOKED, never wait for ever.
 *
 * Rank 1 (the receiver) revokes c, a dup of MPI_COMM_WORLD, and then does
 * what NEXT says; rank 0 (the sender) stays out of MPI meanwhile, so the
 * revoke is still unread in its queue when it sends COUNT bytes to rank 1 on
 * c. The send's first message (the header of a rendezvous, or the whole of an
 * eager message) reaches a receiver that no longer expects anything on c:
 *
 *   free      rank 1 has freed c (its header finds no communicator there);
 *   leave     rank 1 waits in a barrier on another communicator, c kept;
 *   finalize  rank 1 has freed c and is in MPI_Finalize.
 *
 * The two ranks order their steps through files in DIR (not MPI calls, which
 * would read the revoke first): rank 0 creates DIR/ready once c exists and
 * waits for DIR/moved; rank 1 waits for DIR/ready, revokes, does NEXT's first
 * step and creates DIR/moved. MODE is send (MPI_Send), isend (MPI_Isend +
 * MPI_Wait) or ssend (MPI_Ssend). Other ranks (np > 2) only take part in
 * the collectives.
 *
 * Reports: rank 0 send=CLASS (MPIX_ERR_REVOKED expected); every rank
 * finalized=1 after MPI_Finalize.
 *
 * usage: send_after_free DIR COUNT free|leave|finalize [send|isend|ssend]
 */
#include <stdlib.h>
#include <string.h>

#include "ftcheck.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    if (argc < 4) {
        fprintf(stderr, "usage: send_after_free DIR COUNT free|leave|finalize [send|isend|ssend]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *dir = argv[1], *next = argv[3], *mode = argc > 4 ? argv[4] : "send";
    int count = atoi(argv[2]), rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm c = ftcheck_dup_world(), other;
    MPI_Comm_dup(MPI_COMM_WORLD, &other);
    char *buf = calloc((size_t)count + 1, 1);

    if (rank == 0) {
        ftcheck_mark(dir, "ready");
        ftcheck_await_mark(dir, "moved");
        int rc;
        if (strcmp(mode, "isend") == 0) {
            MPI_Request req;
            rc = MPI_Isend(buf, count, MPI_BYTE, 1, 0, c, &req);
            if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else if (strcmp(mode, "ssend") == 0) {
            rc = MPI_Ssend(buf, count, MPI_BYTE, 1, 0, c);
        } else {
            rc = MPI_Send(buf, count, MPI_BYTE, 1, 0, c);
        }
        FTCHECK_RC("send", rc);
        MPI_Comm_free(&c);
    } else if (rank == 1) {
        ftcheck_await_mark(dir, "ready");
        MPIX_Comm_revoke(c);
        if (strcmp(next, "leave") != 0) MPI_Comm_free(&c);
        ftcheck_mark(dir, "moved");
    } else {
        MPI_Comm_free(&c);
    }
    if (strcmp(next, "finalize") != 0) MPI_Barrier(other);
    if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
    MPI_Comm_free(&other);
    free(buf);
    MPI_Finalize();
    printf("ftcheck rank=%d finalized=1\n", rank);
    fflush(stdout);
    return 0;
}
