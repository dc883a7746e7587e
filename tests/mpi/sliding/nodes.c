/*
 * How sliding_create_info() groups a job's processes into nodes, and what a
 * node's kill point takes with it. Usage (every option a sliding_create_info
 * info key, sliding.h):
 *   nodes [--block AxBxC] [--emulate-nodes K | --key-constant N] [--node-coords FILE] GRID SPARES
 * Every process reports its status (a name of sliding_names.h) and, when the
 * creation worked, its node, lane, logical rank, K and block; then every
 * process passes the kill point "probe" (sliding_killpoint: FTSLIDE_KILL names
 * NODE@probe), the survivors shrink MPI_COMM_WORLD and report how many they
 * are: a node's kill takes all K of its processes, and no other.
 */
#include <stdlib.h>
#include <string.h>

#include "ftcheck.h"
#include "sliding.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = ftcheck_rank(), size, i = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Info info;
    MPI_Info_create(&info);
    char key[32];
    for (; i + 1 < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
        if (strcmp(argv[i], "--block") == 0) {
            MPI_Info_set(info, SLIDING_INFO_BLOCK, argv[i + 1]);
        } else if (strcmp(argv[i], "--node-coords") == 0) {
            MPI_Info_set(info, SLIDING_INFO_NODE_COORDS, argv[i + 1]);
        } else if (strcmp(argv[i], "--emulate-nodes") == 0) {
            snprintf(key, sizeof key, "%d", rank / atoi(argv[i + 1]));
            MPI_Info_set(info, SLIDING_INFO_NODE_KEY, key);
        } else if (strcmp(argv[i], "--key-constant") == 0) {
            MPI_Info_set(info, SLIDING_INFO_NODE_KEY, argv[i + 1]);
        }
    }
    sliding_t *s = NULL;
    int rc = i + 2 <= argc ? sliding_create_info(MPI_COMM_WORLD, argv[i], argv[i + 1], "hybrid", info, &s)
                           : SLIDING_ERR_ARG;
    MPI_Info_free(&info);
    FTCHECK("status", "%s", sliding_status_name(rc));
    if (rc != SLIDING_OK) {
        MPI_Finalize();
        return 0;
    }
    int block[3];
    sliding_block(s, block);
    FTCHECK("node", "%d", sliding_node(s));
    FTCHECK("lane", "%d", sliding_lane(s));
    FTCHECK("logical", "%d", sliding_rank(s));
    FTCHECK("k", "%d", sliding_ranks_per_node(s));
    FTCHECK("ranks", "%d", sliding_ranks(s));
    FTCHECK("block", "%dx%dx%d", block[0], block[1], block[2]);
    MPI_Comm world, shrunk;
    MPI_Comm_dup(MPI_COMM_WORLD, &world);
    MPI_Comm_set_errhandler(world, MPI_ERRORS_RETURN);
    MPI_Barrier(world);
    sliding_killpoint(s, "probe");
    MPI_Barrier(world); /* fails once the node is gone */
    MPIX_Comm_revoke(world);
    MPIX_Comm_shrink(world, &shrunk);
    int alive;
    MPI_Comm_size(shrunk, &alive);
    FTCHECK("alive", "%d", alive);
    FTCHECK("finished", "%d", 1);
    sliding_free(s);
    MPI_Finalize();
    return 0;
}
