/*
 * ULFM on an intercommunicator (issue 36): agree, shrink, ishrink, iagree
 * and revoke, after a failure in one of its groups.
 *
 * World ranks split into a low half (color 0) and a high half (color 1),
 * joined by MPI_Intercomm_create. The test names the victim, killed at
 * "after_intercomm" (none: the failure-free run). Every survivor reports:
 *   agree=       class of MPIX_Comm_agree on the intercommunicator: the
 *                victim gave nothing, so MPI_ERR_PROC_FAILED everywhere
 *                (MPI_SUCCESS without a victim)
 *   agree_flag=  the flag it got: ULFM gives each group the bitwise AND of
 *                the REMOTE group's flags. Low-half processes give 0x3
 *                (0x1 at their local rank 0), high-half ones 0xc (0x4 at
 *                local rank 0), so the low half must read 0x4 and the
 *                high half 0x1 (the victim is never a local rank 0)
 *   shrink=, shrunk_sizes=  MPIX_Comm_shrink of it and the local/remote
 *                sizes of the result
 *   exchange=    a message to and from the remote group of the shrunk one
 *   agree2=, agree2_flag=, iagree2=  agree and iagree on the shrunk one:
 *                no failure there, MPI_SUCCESS and the remote AND again
 *   ishrink=, ishrunk_sizes=  MPIX_Comm_ishrink of the shrunk one ("unavailable"
 *                where the MPI has none: upstream's releases)
 *   revoked=     after world rank 0 revokes the shrunk intercommunicator,
 *                a receive from the remote group fails with MPI_ERR_REVOKED
 */
#include <stdlib.h>

#include "ftcheck.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = ftcheck_rank(), np;
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int color = rank < np / 2 ? 0 : 1;
    MPI_Comm half, inter;
    MPI_Comm_split(MPI_COMM_WORLD, color, rank, &half);
    int lrank;
    MPI_Comm_rank(half, &lrank);
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, color ? 0 : np / 2, 36, &inter);
    MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
    MPI_Barrier(MPI_COMM_WORLD);
    ftslide_killpoint(rank, "after_intercomm");

    int mine = color ? (0 == lrank ? 0x4 : 0xc) : (0 == lrank ? 0x1 : 0x3);
    int flag = mine;
    FTCHECK_RC("agree", MPIX_Comm_agree(inter, &flag));
    FTCHECK("agree_flag", "0x%x", flag);

    MPI_Comm shrunk;
    int rc = MPIX_Comm_shrink(inter, &shrunk);
    FTCHECK_RC("shrink", rc);
    if (MPI_SUCCESS != rc) {
        MPI_Finalize();
        return 0;
    }
    MPI_Comm_set_errhandler(shrunk, MPI_ERRORS_RETURN);
    int lsize, rsize, srank;
    MPI_Comm_size(shrunk, &lsize);
    MPI_Comm_remote_size(shrunk, &rsize);
    MPI_Comm_rank(shrunk, &srank);
    FTCHECK("shrunk_sizes", "%d/%d", lsize, rsize);

    /* every process sends its world rank to remote rank (srank % rsize) and
     * receives from each remote process that sends to it */
    int peer = srank % rsize, sent = rank, got_ok = 1;
    MPI_Request sreq;
    rc = MPI_Isend(&sent, 1, MPI_INT, peer, 7, shrunk, &sreq);
    for (int r = 0; MPI_SUCCESS == rc && r < rsize; r++) {
        if (r % lsize != srank) continue;
        int v = -1;
        rc = MPI_Recv(&v, 1, MPI_INT, r, 7, shrunk, MPI_STATUS_IGNORE);
        if (MPI_SUCCESS == rc && (v < 0 || v >= np || (v < np / 2) == (color == 0))) got_ok = 0;
    }
    if (MPI_SUCCESS == rc) rc = MPI_Wait(&sreq, MPI_STATUS_IGNORE);
    FTCHECK("exchange", "%s", MPI_SUCCESS != rc ? ftcheck_class(rc) : got_ok ? "MPI_SUCCESS" : "wrong-sender");

    flag = mine;
    FTCHECK_RC("agree2", MPIX_Comm_agree(shrunk, &flag));
    FTCHECK("agree2_flag", "0x%x", flag);
    MPI_Request req;
    flag = mine;
    rc = MPIX_Comm_iagree(shrunk, &flag, &req);
    if (MPI_SUCCESS == rc) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    FTCHECK("iagree2", "%s/0x%x", ftcheck_class(rc), flag);

#ifdef OMPI_HAVE_MPIX_COMM_ISHRINK
    MPI_Comm shrunk2;
    rc = MPIX_Comm_ishrink(shrunk, &shrunk2, &req);
    if (MPI_SUCCESS == rc) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    FTCHECK_RC("ishrink", rc);
    if (MPI_SUCCESS == rc) {
        MPI_Comm_size(shrunk2, &lsize);
        MPI_Comm_remote_size(shrunk2, &rsize);
        FTCHECK("ishrunk_sizes", "%d/%d", lsize, rsize);
        MPI_Comm_free(&shrunk2);
    }
#else
    FTCHECK("ishrink", "%s", "unavailable"); /* upstream's releases have no MPIX_Comm_ishrink */
#endif

    /* world rank 0 revokes; everyone else waits in a receive nobody matches */
    if (0 == rank) {
        FTCHECK_RC("revoke", MPIX_Comm_revoke(shrunk));
    } else {
        int v;
        rc = MPI_Recv(&v, 1, MPI_INT, 0, 99, shrunk, MPI_STATUS_IGNORE);
        FTCHECK_RC("revoked", rc);
    }
    FTCHECK("finished", "%d", 1);
    MPI_Comm_free(&shrunk);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
    MPI_Finalize();
    return 0;
}
