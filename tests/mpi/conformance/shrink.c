/*
 * Shrink after a failure and after revoke. np 5; the test kills ranks 1 and 3
 * at "after_barrier".
 * "a" is shrunk without revoke, "b" after a revoke by every survivor. Both new
 * communicators have 3 members, keep the survivors' relative order (world
 * ranks 0, 2, 4), and work.
 */
#include <stdlib.h>

#include "ftcheck.h"

static void report(const char *name, MPI_Comm comm)
{
    int size, rank, one = 1, sum = 0;
    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(comm, &rank);
    MPI_Group group, world;
    MPI_Comm_group(comm, &group);
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int *ranks = malloc(sizeof(int) * (size_t)size), *in_world = malloc(sizeof(int) * (size_t)size);
    for (int i = 0; i < size; i++) {
        ranks[i] = i;
    }
    MPI_Group_translate_ranks(group, size, ranks, world, in_world);
    char order[128] = "";
    int len = 0;
    for (int i = 0; i < size && len < 100; i++) {
        len += snprintf(order + len, sizeof order - (size_t)len, "%s%d", i ? "," : "", in_world[i]);
    }
    int rc = MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, comm);
    printf("ftcheck rank=%d %s_size=%d\nftcheck rank=%d %s_order=%s\nftcheck rank=%d %s_new_rank=%d\n"
           "ftcheck rank=%d %s_allreduce=%s\nftcheck rank=%d %s_sum=%d\n",
           ftcheck_rank(), name, size, ftcheck_rank(), name, order, ftcheck_rank(), name, rank,
           ftcheck_rank(), name, ftcheck_class(rc), ftcheck_rank(), name, sum);
    fflush(stdout);
    free(ranks);
    free(in_world);
    MPI_Group_free(&group);
    MPI_Group_free(&world);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = ftcheck_rank();
    MPI_Comm a, b, a2, b2;
    MPI_Comm_dup(MPI_COMM_WORLD, &a);
    MPI_Comm_dup(MPI_COMM_WORLD, &b);
    MPI_Comm_set_errhandler(a, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(b, MPI_ERRORS_RETURN);
    MPI_Barrier(a);
    ftslide_killpoint(rank, "after_barrier");

    FTCHECK_RC("shrink_a", MPIX_Comm_shrink(a, &a2));
    report("a", a2);
    FTCHECK_RC("revoke_b", MPIX_Comm_revoke(b));
    FTCHECK_RC("shrink_b", MPIX_Comm_shrink(b, &b2));
    report("b", b2);
    FTCHECK("finished", "%d", 1);
    MPI_Finalize();
    return 0;
}
