/*
 * MPIX_Comm_ishrink (patch ompi/09) and bad arguments to the ULFM calls.
 * np 5; rank 3 dies at "after_barrier" (the test names the victim).
 *
 * - The survivors start MPIX_Comm_ishrink on a dup of MPI_COMM_WORLD right
 *   after the death (the failure is discovered during the shrink's
 *   agreement) and complete it with MPI_Test: ishrink=, ishrunk_size=,
 *   ishrunk_order= (world ranks of its members), ishrunk_allreduce=.
 * - A second ishrink of the shrunk communicator, completed by MPI_Wait
 *   (no failure in it): ishrink2=, ishrunk2_size=.
 * - Bad input, with MPI_ERRORS_RETURN on MPI_COMM_WORLD: revoke of
 *   MPI_COMM_NULL (revoke_null=), ishrink of MPI_COMM_NULL (ishrink_null=),
 *   ishrink with a NULL request (ishrink_null_request=); then ishrink and
 *   shrink of an intercommunicator between the even and odd survivors
 *   (ishrink_inter=, shrink_inter=: MPI_SUCCESS, patch ompi/21; 5.0.7's
 *   never returned), and a barrier on the shrunk communicator
 *   (after_bad_input=): nothing above broke it.
 */
#include <string.h>

#include "ftcheck.h"

static const char *err_class(int rc)
{
    static char buf[64];
    int eclass = rc;
    if (rc == MPI_SUCCESS) return "MPI_SUCCESS";
    MPI_Error_class(rc, &eclass);
    if (eclass == MPI_ERR_COMM) return "MPI_ERR_COMM";
    if (eclass == MPI_ERR_REQUEST) return "MPI_ERR_REQUEST";
    if (eclass == MPI_ERR_ARG) return "MPI_ERR_ARG";
    if (eclass == MPI_ERR_UNSUPPORTED_OPERATION) return "MPI_ERR_UNSUPPORTED_OPERATION";
    snprintf(buf, sizeof buf, "%s", ftcheck_class(rc));
    return buf;
}

static void order_of(MPI_Comm comm, char *out, size_t len)
{
    MPI_Group group, world;
    int n;
    MPI_Comm_group(comm, &group);
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_size(group, &n);
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        int r;
        MPI_Group_translate_ranks(group, 1, &i, world, &r);
        snprintf(out + strlen(out), len - strlen(out), i ? ",%d" : "%d", r);
    }
    MPI_Group_free(&group);
    MPI_Group_free(&world);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = ftcheck_rank();
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm comm = ftcheck_dup_world();
    MPI_Barrier(comm);
    ftslide_killpoint(rank, "after_barrier");

    MPI_Comm shrunk, shrunk2;
    MPI_Request req;
    int done = 0, rc = MPIX_Comm_ishrink(comm, &shrunk, &req);
    while (rc == MPI_SUCCESS && !done) rc = MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    FTCHECK_RC("ishrink", rc);
    int size, sum = 0;
    char order[128];
    MPI_Comm_size(shrunk, &size);
    order_of(shrunk, order, sizeof order);
    FTCHECK("ishrunk_size", "%d", size);
    FTCHECK("ishrunk_order", "%s", order);
    FTCHECK_RC("ishrunk_allreduce", MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, shrunk));

    rc = MPIX_Comm_ishrink(shrunk, &shrunk2, &req);
    if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    FTCHECK_RC("ishrink2", rc);
    MPI_Comm_size(shrunk2, &size);
    FTCHECK("ishrunk2_size", "%d", size);

    MPI_Comm null_out;
    FTCHECK("revoke_null", "%s", err_class(MPIX_Comm_revoke(MPI_COMM_NULL)));
    FTCHECK("ishrink_null", "%s", err_class(MPIX_Comm_ishrink(MPI_COMM_NULL, &null_out, &req)));
    MPI_Comm_set_errhandler(shrunk2, MPI_ERRORS_RETURN);
    FTCHECK("ishrink_null_request", "%s", err_class(MPIX_Comm_ishrink(shrunk2, &null_out, NULL)));

    int srank;
    MPI_Comm half, inter, inter_shrunk;
    MPI_Comm_rank(shrunk2, &srank);
    MPI_Comm_split(shrunk2, srank % 2, srank, &half);
    MPI_Intercomm_create(half, 0, shrunk2, srank % 2 ? 0 : 1, 99, &inter);
    MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
    rc = MPIX_Comm_ishrink(inter, &inter_shrunk, &req);
    if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    FTCHECK("ishrink_inter", "%s", err_class(rc));
    if (rc == MPI_SUCCESS) MPI_Comm_free(&inter_shrunk);
    rc = MPIX_Comm_shrink(inter, &inter_shrunk);
    FTCHECK("shrink_inter", "%s", err_class(rc));
    if (rc == MPI_SUCCESS) MPI_Comm_free(&inter_shrunk);
    FTCHECK_RC("after_bad_input", MPI_Barrier(shrunk2));
    FTCHECK("finished", "%d", 1);

    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
    MPI_Comm_free(&shrunk2);
    MPI_Comm_free(&shrunk);
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return 0;
}
