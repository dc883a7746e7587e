/*
 * Failure introspection: MPIX_Comm_get_failed, MPIX_Comm_ack_failed,
 * MPIX_Comm_failure_get_acked. np 4; the test kills rank 2 at "after_barrier".
 * Each survivor first learns of the failure from a receive from rank 2, then
 * checks: the failed group is {2}; nothing is acknowledged yet; acknowledging
 * one failure acknowledges rank 2; MPIX_Comm_failure_ack acknowledges all.
 */
#include <stdlib.h>

#include "ftcheck.h"

/* World ranks of the members of group, comma-separated. */
static void group_ranks(MPI_Group group, char *out, size_t room)
{
    int size;
    MPI_Group world;
    MPI_Group_size(group, &size);
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int *ranks = malloc(sizeof(int) * (size_t)(size + 1)), *in_world = malloc(sizeof(int) * (size_t)(size + 1));
    for (int i = 0; i < size; i++) {
        ranks[i] = i;
    }
    MPI_Group_translate_ranks(group, size, ranks, world, in_world);
    size_t len = 0;
    out[0] = '\0';
    for (int i = 0; i < size && len + 16 < room; i++) {
        len += (size_t)snprintf(out + len, room - len, "%s%d", i ? "," : "", in_world[i]);
    }
    if (size == 0) {
        snprintf(out, room, "none");
    }
    free(ranks);
    free(in_world);
    MPI_Group_free(&world);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = ftcheck_rank();
    MPI_Comm comm = ftcheck_dup_world();
    MPI_Barrier(comm);
    ftslide_killpoint(rank, "after_barrier");

    int value;
    FTCHECK_RC("recv_from_dead", MPI_Recv(&value, 1, MPI_INT, 2, 3, comm, MPI_STATUS_IGNORE));
    char text[256];
    MPI_Group group;
    FTCHECK_RC("get_failed", MPIX_Comm_get_failed(comm, &group));
    group_ranks(group, text, sizeof text);
    FTCHECK("failed", "%s", text);
    MPI_Group_free(&group);

    FTCHECK_RC("get_acked", MPIX_Comm_failure_get_acked(comm, &group));
    group_ranks(group, text, sizeof text);
    FTCHECK("acked_before", "%s", text);
    MPI_Group_free(&group);

    int acked = -1;
    FTCHECK_RC("ack_none", MPIX_Comm_ack_failed(comm, 0, &acked));
    FTCHECK("acked_count_before", "%d", acked);
    FTCHECK_RC("ack_one", MPIX_Comm_ack_failed(comm, 1, &acked));
    FTCHECK("acked_count_after", "%d", acked);
    MPIX_Comm_failure_get_acked(comm, &group);
    group_ranks(group, text, sizeof text);
    FTCHECK("acked_after", "%s", text);
    MPI_Group_free(&group);

    FTCHECK_RC("failure_ack", MPIX_Comm_failure_ack(comm));
    MPIX_Comm_failure_get_acked(comm, &group);
    group_ranks(group, text, sizeof text);
    FTCHECK("acked_after_failure_ack", "%s", text);
    MPI_Group_free(&group);
    FTCHECK("finished", "%d", 1);
    MPI_Finalize();
    return 0;
}
