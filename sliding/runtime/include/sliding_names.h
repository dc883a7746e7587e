/*
 * sliding_names.h -- the names of the sliding runtime, without MPI: its
 * status codes with their messages, the roles of a process, and the kill
 * points where fault injection may stop a process (ftslide_killpoint.h).
 *
 * C spells each name once, here and in sliding_names.c. libsliding carries
 * them, and the Python binding (sliding/python/sliding.py) reads them from it;
 * CMake also builds them alone into libslidenames.so, from which the Python
 * driver (ftslide/sliding/runtime.py) reads them: a name function called
 * with 0, 1, 2, ... returns each name, then NULL. Every string is static;
 * every function is O(1).
 */
#ifndef SLIDING_NAMES_H
#define SLIDING_NAMES_H

#ifdef __cplusplus
extern "C" {
#endif

enum sliding_status {
    SLIDING_OK = 0,
    SLIDING_ERR_ARG,         /* bad argument: grid, spares or method string, NULL pointer */
    SLIDING_ERR_SIZE,        /* communicator size differs from the node count */
    SLIDING_ERR_NO_SPARE,    /* the failures exceed what the method can absorb */
    SLIDING_ERR_DATA_LOST,   /* a checkpoint died with every node that kept it or its redundancy */
    SLIDING_ERR_STATE,       /* call out of order (e.g. register after start) */
    SLIDING_ERR_MPI,         /* an MPI call failed for a reason other than a failure */
    SLIDING_ERR_NOMEM,
    /* sliding_create_info: the nodes of the job (sliding.h, "Nodes") */
    SLIDING_ERR_NODES,       /* nodes hold different numbers of processes */
    SLIDING_ERR_NODE_COUNT,  /* the processes form another number of nodes than the grid has */
    SLIDING_ERR_BLOCK,       /* the block is not AxB[xC] for the grid or does not hold K ranks */
    SLIDING_ERR_COORDS,      /* the node coordinate file misses a node, names one twice, or is malformed */
    SLIDING_ERR_INFO,        /* an info value is malformed or differs between processes where it must not */
    /* sliding_register from Fortran and Python (sliding/fortran, sliding/python) */
    SLIDING_ERR_NOT_CONTIGUOUS, /* the array is not one contiguous block (a strided section or view) */
    SLIDING_ERR_READ_ONLY,      /* the array is not writeable (Python: a recovery writes into it) */
    /* the check-once style and the end of a run (sliding.h) */
    SLIDING_ERR_REGISTER,    /* processes registered different buffer sizes or callback counts */
    SLIDING_ERR_FAILED,      /* a process failed or the Cartesian communicator was revoked: recover */
    SLIDING_ERR_CALLBACK,    /* a recovery callback failed or freed the Cartesian communicator */
    /* redundancy policies */
    SLIDING_ERR_REDUNDANCY,  /* a redundancy policy or failure-domain box that cannot be placed */
    SLIDING_ERR_CHECKPOINT_DIR, /* checkpoint directory unwritable, or holding another job's or a damaged checkpoint */
};

/* The role of a process, returned by sliding_start and sliding_recover (sliding.h). */
enum sliding_role {
    SLIDING_INITIAL = 0,
    SLIDING_SURVIVOR = 1,
    SLIDING_PROMOTED = 2,
    SLIDING_FINISHED = 3,
};

/* Kill points, in the order a run meets them. A process dies at point P when
 * FTSLIDE_KILL names "NODE@P" for its node (sliding_node(): the world rank
 * with one process per node); the other processes of the node die with it
 * (sliding.h, "Fault injection"). */
enum sliding_point {
    SLIDING_POINT_ITER,             /* the application's: the start of iteration I, written iter=I */
    SLIDING_POINT_CHECKPOINT,       /* in sliding_checkpoint, copies exchanged, not committed */
    SLIDING_POINT_WAITING,          /* a process without a rank, each time it starts waiting */
    SLIDING_POINT_RECOVERY_START,   /* each attempt of a recovery, before its revoke and shrink */
    SLIDING_POINT_RECOVERY_AGREE,   /* after the shrink, before the agreement on the checkpoint */
    SLIDING_POINT_RECOVERY_MAP,     /* before the new map */
    SLIDING_POINT_RECOVERY_REBUILD, /* before the Cartesian communicator is rebuilt */
    SLIDING_POINT_RECOVERY_CART,    /* between the split of the survivors and the Cartesian creation */
    SLIDING_POINT_RECOVERY_STATE,   /* before the state moves */
    SLIDING_POINT_RECOVERY_COMMIT,  /* before the commit agreement */
    SLIDING_POINT_PROMOTED,         /* a spare that has just been given a rank */
    SLIDING_POINT_CHECKPOINT_FILE,  /* in sliding_checkpoint, a committed copy about to go to the file level */
    SLIDING_POINT_RECOVERY_SPAWN,   /* out of spares, degrading: before guest processes are started */
};

/* One-line message of a status ("unknown sliding status" for others). */
const char *sliding_strerror(int status);

/* Name of a status, its enumerator without the SLIDING_ prefix ("ERR_NO_SPARE"),
 * or NULL outside enum sliding_status. */
const char *sliding_status_name(int status);

/* Name of a role, its enumerator without the SLIDING_ prefix ("PROMOTED"), or
 * NULL outside enum sliding_role. */
const char *sliding_role_name(int role);

/* Name of a kill point ("iter", "checkpoint", ..., "promoted"), or NULL outside
 * enum sliding_point. */
const char *sliding_point_name(int point);

#ifdef __cplusplus
}
#endif

#endif
