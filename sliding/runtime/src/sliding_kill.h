/*
 * sliding_kill.h -- fault injection for the sliding runtime (internal).
 *
 * sliding_killpoint() (sliding.h) describes the node of the calling process
 * and hands it here: if FTSLIDE_KILL names the node at this point and at this
 * occurrence of it (NODE@POINT: the first; NODE@POINT#N: the Nth), the node
 * dies whole, after its "killed at" line (sliding.h, "Fault injection").
 */
#ifndef SLIDING_KILL_H
#define SLIDING_KILL_H

/* The processes that die together: the lanes of one node. */
typedef struct sliding_victims {
    int node;                  /* grid node id (sliding_node()) */
    int lane;                  /* the calling process's lane */
    int k;                     /* processes on the node */
    const int *pids;           /* [k] process ids, by lane */
    const int *world_ranks;    /* [k] ranks in the creation communicator, by lane */
    const int *logical_ranks;  /* [k] logical ranks held now, by lane; -1: none */
} sliding_victims;

/* Counts this arrival at `point` and dies here, with the whole node, if
 * FTSLIDE_KILL names v->node at this occurrence of `point`. With FTSLIDE_KILL
 * unset it counts nothing and returns at once (sliding_killpoint() does not
 * even call it then). */
void sliding_kill_node_at(const sliding_victims *v, const char *point);

#endif
