/* The names of sliding_names.h: each status, role and kill point once. No MPI. */
#include "sliding_names.h"

#include <stddef.h>

/* A status: its name (the enumerator without "SLIDING_") and its message. */
#define STATUS(code, message) [code] = {#code + sizeof "SLIDING_" - 1, message}
static const struct {
    const char *name, *message;
} statuses[] = {
    STATUS(SLIDING_OK, "success"),
    STATUS(SLIDING_ERR_ARG, "invalid or missing grid, spare layout or method, or an unknown runtime option (a "
                            "process per node cannot run a method that puts several ranks on one node)"),
    STATUS(SLIDING_ERR_SIZE, "the communicator must have one process per node of the grid, spares included, or "
                             "the same number K on every node (a multiple of the node count)"),
    STATUS(SLIDING_ERR_NO_SPARE, "out of spares: the failures exceed what the method can absorb "
                                 "(sliding_on_no_spare=degrade runs on)"),
    STATUS(SLIDING_ERR_DATA_LOST, "a checkpoint died with every node that kept it or its redundancy (a rank's node "
                                  "and its buddy's, or more than M members of a group): it is lost"),
    STATUS(SLIDING_ERR_STATE, "call out of order (register before start; checkpoint and recover after it)"),
    STATUS(SLIDING_ERR_MPI, "an MPI call failed for a reason other than a process failure"),
    STATUS(SLIDING_ERR_NOMEM, "out of memory"),
    STATUS(SLIDING_ERR_NODES, "the nodes hold different numbers of processes: every node must run the same "
                              "number (check the job's placement or the node key)"),
    STATUS(SLIDING_ERR_NODE_COUNT, "the processes form another number of nodes than the grid has, spares "
                                   "included (a node key or machine that puts them all on one node?)"),
    STATUS(SLIDING_ERR_BLOCK, "the block of ranks per node must be AxB (2D grid) or AxBxC (3D) with sizes that "
                              "multiply to the processes per node"),
    STATUS(SLIDING_ERR_COORDS, "the node coordinate file must name every node of the job once, one per line "
                               "(NAME, or NAME and its grid coordinates, each node at its own)"),
    STATUS(SLIDING_ERR_INFO, "an info value or runtime option is malformed (the node key must be an integer, the "
                             "checkpoint interval one of at least 1) or given by some processes only"),
    STATUS(SLIDING_ERR_NOT_CONTIGUOUS, "a registered array must be contiguous: register a whole array, not a "
                                       "strided section or view (numpy: numpy.ascontiguousarray, then compute in "
                                       "that array)"),
    STATUS(SLIDING_ERR_READ_ONLY, "a registered array must be writeable, since a recovery writes the checkpoint "
                                  "back into it (numpy: a writeable array, not a read-only view)"),
    STATUS(SLIDING_ERR_REGISTER, "every process, spares included, must register the same sequence of buffer "
                                 "sizes and the same number of recovery callbacks before sliding_start (size "
                                 "buffers for the largest tile)"),
    STATUS(SLIDING_ERR_FAILED, "a process failed during this step (or the Cartesian communicator was revoked): "
                               "call sliding_recover"),
    STATUS(SLIDING_ERR_CALLBACK, "a recovery callback returned non-zero or freed the Cartesian communicator at "
                                 "some process: the run cannot go on"),
    STATUS(SLIDING_ERR_REDUNDANCY, "give a redundancy policy buddy, parity:G or rs:G,M with 1 <= M < G and G at "
                                   "most the node ranks, and failure domains (a box AxB[xC] of the node grid, or "
                                   "the coordinate file's domain= field) small enough that every domain's loss "
                                   "is survivable"),
    STATUS(SLIDING_ERR_CHECKPOINT_DIR, "the checkpoint directory must be creatable and writable by every process, "
                                       "and to resume it must hold a complete checkpoint of the same grid, K, "
                                       "block, rank count and registered bytes (its manifest and rank files "
                                       "intact)"),
};
#undef STATUS
#define NSTATUSES (int)(sizeof statuses / sizeof statuses[0])

#define ROLE(code) [code] = #code + sizeof "SLIDING_" - 1
static const char *const roles[] = {
    ROLE(SLIDING_INITIAL),
    ROLE(SLIDING_SURVIVOR),
    ROLE(SLIDING_PROMOTED),
    ROLE(SLIDING_FINISHED),
};
#undef ROLE
#define NROLES (int)(sizeof roles / sizeof roles[0])

static const char *const points[] = {
    [SLIDING_POINT_ITER] = "iter",
    [SLIDING_POINT_CHECKPOINT] = "checkpoint",
    [SLIDING_POINT_WAITING] = "waiting",
    [SLIDING_POINT_RECOVERY_START] = "recovery_start",
    [SLIDING_POINT_RECOVERY_AGREE] = "recovery_agree",
    [SLIDING_POINT_RECOVERY_MAP] = "recovery_map",
    [SLIDING_POINT_RECOVERY_REBUILD] = "recovery_rebuild",
    [SLIDING_POINT_RECOVERY_CART] = "recovery_cart",
    [SLIDING_POINT_RECOVERY_STATE] = "recovery_state",
    [SLIDING_POINT_RECOVERY_COMMIT] = "recovery_commit",
    [SLIDING_POINT_PROMOTED] = "promoted",
    [SLIDING_POINT_CHECKPOINT_FILE] = "checkpoint_file",
    [SLIDING_POINT_RECOVERY_SPAWN] = "recovery_spawn",
};
#define NPOINTS (int)(sizeof points / sizeof points[0])

const char *sliding_strerror(int status)
{
    return status < 0 || status >= NSTATUSES ? "unknown sliding status" : statuses[status].message;
}

const char *sliding_status_name(int status)
{
    return status < 0 || status >= NSTATUSES ? NULL : statuses[status].name;
}

const char *sliding_role_name(int role)
{
    return role < 0 || role >= NROLES ? NULL : roles[role];
}

const char *sliding_point_name(int point)
{
    return point < 0 || point >= NPOINTS ? NULL : points[point];
}
