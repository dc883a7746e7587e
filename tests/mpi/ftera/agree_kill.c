/*
 * Repeated agreements with fault injection, for tests/test_ftera.py.
 *
 *   agree_kill ROUNDS [iagree]
 *
 * Round i (1..ROUNDS), on a dup of MPI_COMM_WORLD with errors returned:
 *   kill point "before_agree_<i>"   (the victim dies before contributing)
 *   MPIX_Comm_agree, or with "iagree": MPIX_Comm_iagree, then kill point
 *   "in_agree_<i>" (the victim dies with its agreement started), then MPI_Wait
 *   report rc_<i> (error class) and flag_<i>; after MPIX_ERR_PROC_FAILED the
 *   rank acknowledges every failure it knows of, so later rounds can succeed.
 * Every rank contributes all bits set except bit (rank): the agreed flag has
 * the bit of every contributor cleared and bits >= size set.
 *
 * The component's own kill point "ftera_sent_<n>" (coll/ftera) kills a rank
 * right after its n-th agreement message, i.e. in the middle of the protocol.
 *
 * At the end: MPIX_Comm_shrink (its agreement decides the failed set), report
 * the world ranks of the shrunk communicator ("members") and one more
 * agreement on it ("final_rc", "final_flag"), then "finished".
 */
#include <stdlib.h>
#include <string.h>

#include "ftcheck.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = ftcheck_rank();
    int rounds = argc > 1 ? atoi(argv[1]) : 3;
    int use_iagree = argc > 2 && strcmp(argv[2], "iagree") == 0;
    MPI_Comm comm = ftcheck_dup_world();
    int size;
    MPI_Comm_size(comm, &size);

    for (int i = 1; i <= rounds; i++) {
        ftslide_killpointf(rank, "before_agree_%d", i);
        int flag = ~(1 << rank);
        int rc;
        if (use_iagree) {
            MPI_Request req;
            rc = MPIX_Comm_iagree(comm, &flag, &req);
            ftslide_killpointf(rank, "in_agree_%d", i);
            if (rc == MPI_SUCCESS) {
                rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
            }
        } else {
            rc = MPIX_Comm_agree(comm, &flag);
        }
        /* keys with the round number: FTCHECK takes literal keys only */
        printf("ftcheck rank=%d rc_%d=%s\n", rank, i, ftcheck_class(rc));
        printf("ftcheck rank=%d flag_%d=%#x\n", rank, i, (unsigned)flag);
        fflush(stdout);
        int eclass = rc;
        if (rc != MPI_SUCCESS) {
            MPI_Error_class(rc, &eclass);
        }
        if (eclass == MPIX_ERR_PROC_FAILED) {
            int n = 0;
            MPIX_Comm_ack_failed(comm, size, &n);
        }
    }

    MPI_Comm shrunk;
    int rc = MPIX_Comm_shrink(comm, &shrunk);
    FTCHECK_RC("shrink", rc);
    if (rc == MPI_SUCCESS) {
        int n;
        MPI_Comm_size(shrunk, &n);
        MPI_Comm_set_errhandler(shrunk, MPI_ERRORS_RETURN);
        int *members = malloc(n * sizeof(int));
        MPI_Allgather(&rank, 1, MPI_INT, members, 1, MPI_INT, shrunk);
        char list[1024] = "";
        for (int i = 0; i < n; i++) {
            size_t len = strlen(list);
            snprintf(list + len, sizeof list - len, "%s%d", i ? "," : "", members[i]);
        }
        FTCHECK("members", "%s", list);
        free(members);
        int flag = ~(1 << rank);
        FTCHECK_RC("final_rc", MPIX_Comm_agree(shrunk, &flag));
        FTCHECK("final_flag", "%#x", (unsigned)flag);
        MPI_Comm_free(&shrunk);
    }
    FTCHECK("finished", "%d", 1);
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return 0;
}
