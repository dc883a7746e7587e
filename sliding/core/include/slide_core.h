/*
 * slide_core.h -- spare-node substitution for stencil codes on a Cartesian
 * grid of nodes: layouts, substitution methods and mapping metrics.
 *
 * Pure C11. No MPI, no I/O, no global state, no allocation: every function
 * works on caller-provided memory, is reentrant and thread-safe as long as
 * callers do not share output buffers. Every name starts with slide_ / SLIDE_.
 *
 * ---------------------------------------------------------------------------
 * Model
 * ---------------------------------------------------------------------------
 * Node grid. A 2D or 3D grid of nodes, sizes n[0] x n[1] (x n[2]); the
 * dimensions are called x, y, z in that order. The grid is a torus (every
 * dimension wraps around) or a mesh (no dimension wraps). A 2D grid is
 * handled as a 3D grid with n[2] = 1. The node grid INCLUDES the spares.
 *
 * Row-major numbering (same convention as MPI_Cart_rank): the LAST dimension
 * varies fastest.
 *     node id = (x * n[1] + y) * n[2] + z        (2D: x * n[1] + y)
 *
 * Spares. Spare lines (2D) or planes (3D) sit at the high end of one or two
 * chosen dimensions: with "x:2" the nodes with x >= n[0] - 2 are spares; with
 * "x:1,y:1" the nodes with x == n[0]-1 OR y == n[1]-1 are spares. The first
 * dimension written is the PRIMARY spare dimension (the one slides try
 * first), the second one the SECONDARY.
 *
 * Spare sets. A suffix "/M:K" keeps only some of the planes' nodes as spares:
 * the node ids are cut into blocks of M consecutive ids (a leaf switch of M
 * hosts, a dragonfly group), and in each block the K highest-numbered nodes
 * of the planes are spares; the other nodes of the planes are UNUSED: not
 * part of the job, never given a rank, and a failure on one changes nothing.
 * "z:1/16:1" on torus:8x8x8 (leaf switches of 16 hosts): one spare per leaf
 * switch, 32 spares, 32 unused nodes. slide_node_role() tells the three kinds
 * of node apart.
 *
 * Logical grid and ranks. The application's logical grid is the node grid
 * minus the spares: L[d] = n[d] - spares[d]. Rank numbering is row-major on
 * the logical grid, last dimension fastest:
 *     rank = (lx * L[1] + ly) * L[2] + lz
 * and before any failure rank (lx,ly,lz) runs on node (lx,ly,lz). Because
 * both numberings are row-major in the same dimension order, ranks increase
 * with node ids on the non-spare nodes.
 *
 * Hops. The hop distance of two nodes is the sum over dimensions of the
 * distance along that dimension: |a - b| on a mesh, min(|a-b|, n-|a-b|) on a
 * torus.
 *
 * Failures. A method is a pure function of (layout, ordered list of failed
 * node ids) -> rank-to-node map. The list is processed as a left fold, one
 * failure at a time in list order, each step knowing only the failures before
 * it; so the map after failures F1 then F2 is the map after F1 updated for
 * F2, and a survivor that knows the agreed ordered list computes the same map
 * as every other survivor with no messages. For a batch of simultaneous
 * failures callers should append the batch in ascending node id order (the
 * convention the sliding runtime uses). A failed node may be a spare (used or
 * not) or a node that earlier slides moved a rank onto. A failure on a node
 * that holds no rank only marks it dead. A node listed twice is an error.
 * A failure on an UNUSED node (spare sets, above) changes nothing either.
 *
 * ---------------------------------------------------------------------------
 * Methods (the exact rules; docs/sliding-methods.md explains why)
 * ---------------------------------------------------------------------------
 * "Free" node: alive and holding no rank. "Nearest" ties are broken as
 * stated per method; "direction rule" for a walk along a line from a node:
 * walk both ways (on a mesh a walk stops at the grid edge, on a torus it
 * wraps but never passes its start), take the side whose first free node is
 * fewer steps away, and on a tie the + (high) side.
 *
 * SLIDE_SIMPLE  The failed node's rank moves straight to the free node
 *               nearest to the failed node by hops; ties -> lowest node id.
 *               Nobody else moves. Only error: SLIDE_ENOSPARE.
 *
 * SLIDE_SLIDE1D Along the line through the failed node parallel to the
 *               primary spare dimension, pick the first free node by the
 *               direction rule; the ranks between the failed node and that
 *               free node each move one alive node toward it (dead nodes on
 *               the way are jumped over), so the failed rank lands on the
 *               next alive node of the line. If that line has no free node
 *               and there is a secondary spare dimension, the same is done
 *               on the line parallel to it. Promise: if no line parallel to
 *               the primary spare dimension contains more than one dead node,
 *               every neighbour pair is at most one hop farther apart than
 *               before any failure (so at most 2 hops on a mesh).
 *               Errors: SLIDE_ELINE (those lines have no free node left, but
 *               free nodes exist elsewhere), SLIDE_ENOSPARE (no free node).
 *
 * SLIDE_SLIDE2D The mapping stays a product of one-dimensional maps: logical
 *               plane i along dimension d runs on physical plane P_d[i]
 *               (identity for dimensions without spares). A failure on a
 *               rank's node removes the physical plane (3D) / line (2D)
 *               containing it along the primary spare dimension: by the
 *               direction rule applied to planes, the logical planes between
 *               it and the nearest usable free plane each move one usable
 *               plane toward it. A plane is usable if it holds no logical
 *               plane and every node of it that the product map would use is
 *               alive; unusable planes are jumped over. If no usable plane
 *               exists along the primary dimension, the same is done along
 *               the secondary one. Consumes a whole plane of spares per
 *               failure, but every logical neighbour pair still talks along
 *               one straight line, so the 5/7-point stencil never puts two
 *               messages on one directed link (max link load 1; the one
 *               exception is a pair exactly half an even torus ring apart,
 *               whose route is a tie-break and may overlap another), and one
 *               removed plane adds at most one hop to any pair.
 *               Errors: SLIDE_EPLANE (no usable plane but free nodes exist),
 *               SLIDE_ENOSPARE.
 *
 * SLIDE_HYBRID  2D sliding while whole spare planes allow, 1D after: each
 *               failure is handled by slide2d's rule as long as slide2d can
 *               (the map is slide2d's map); at the first failure slide2d
 *               cannot place (no usable plane left) hybrid switches for good
 *               to its 1D phase, which starts from the map it has and handles
 *               that failure and every later one by: 1. slide1d along the
 *               primary spare dimension's line if that line has a free node
 *               (vacated nodes of the 2D phase count); 2. else slide1d along
 *               the secondary dimension's line if it has one; 3. else CROSS:
 *               among all lines parallel to the primary spare dimension that
 *               have a free node, choose the one nearest to the failed node's
 *               line (fewest hops in the other dimensions), ties -> fewest
 *               steps along the line from the entry node to its nearest free
 *               node (direction rule), ties -> lowest line index (row-major
 *               over the other dimensions). The path goes from the failed
 *               node through the other dimensions in increasing dimension
 *               order (shortest way round on a torus, + on a tie) to the
 *               entry node on that line, then along the line to its free
 *               node; the ranks on the path each move one alive node along
 *               it. slide2d's promise holds during the 2D phase; the 1D phase
 *               never fails while a free node exists.
 *               Only error: SLIDE_ENOSPARE.
 *
 * SLIDE_SHRINK  No spare is used; the logical grid cannot keep one rank per
 *               node. Every rank whose original node is alive stays there;
 *               the rank of a dead node is adopted by the alive NON-spare
 *               node nearest to its original node (hops; ties -> lowest node
 *               id), which then hosts two or more ranks. The result depends
 *               only on the SET of failed nodes. Only error:
 *               SLIDE_ENOSURVIVOR (every non-spare node is dead).
 *
 * SLIDE_ROUTED  Compares candidates for each failure by the loads the 5/7-
 *               point stencil (slide_measure()'s messages) puts on the
 *               layout's network under its routing (lay->net), and takes the
 *               best. Candidates, for the failed node f holding rank v, from
 *               the current map: (a) BLOCK: for every dimension d and both
 *               directions s whose line through f has a free node, the lines
 *               along d through the points (a, b) of the other two dimensions
 *               in an interval around f's coordinates; each interval is f's
 *               coordinate alone, with one neighbour below, one above, both,
 *               the whole dimension, or the longest run of lines whose free
 *               node is as many steps away as f's line's; in each line the
 *               rank on f's coordinate along d (v on f's line) and every rank
 *               after it move one alive node toward s, up to the line's first
 *               free node (dead nodes jumped over; a line with no rank on
 *               that coordinate has shifted before and stays; a block with a
 *               line that should shift but has no free node is no candidate);
 *               (b) CROSS: for every d, s, every other dimension e, one or two
 *               steps either way along e, turning at f or where f's line's
 *               run of ranks toward s ends: the path along d (to the turn),
 *               across along e, then along d toward s to that line's first
 *               free node, every rank on it moving one alive node along it;
 *               (c) DIRECT: v to the free node nearest f (grid hops, ties ->
 *               lowest id); (d) HYBRID: hybrid's map for the same failures,
 *               taken whole; (e) SURFACE, only when the best of (a)-(d) has a
 *               max load above 1: the whole map laid out again with exactly
 *               one free or dead node on every line along a dimension e
 *               where a logical dimension one shorter than e lies (in order
 *               along the line, skipping that node) and the other logical
 *               dimensions lie in order on the other dimensions (of equal
 *               sizes). The lines are cut into tiles of w0 x w1 lines (offsets
 *               o0, o1; the last tile of a row takes a remainder) and all
 *               lines of a tile skip one coordinate: that of the failed or
 *               unused node the tile holds, else the last (a tile holding two
 *               at different coordinates, or a line holding two, is no
 *               candidate). Tilings: one tile of all lines (a rigid product
 *               map, load 1) for every such e; when the best load is still
 *               above 2 and the network is the grid's own torus or mesh, also
 *               stripes (2 lines wide, whole in the other dimension, both
 *               offsets) for every e, and 2 x 2 tiles (every offset) for the
 *               e routed in the middle of a 3D grid and for both e of a 2D
 *               grid: there a line whose two neighbours along each other
 *               dimension are not both in other tiles never takes two extra
 *               messages on one link (docs/sliding-methods.md); when the
 *               best load is still above 2, a *labelled* surface: every
 *               line its own skipped coordinate (its hole's where it has
 *               one), found by a backtracking search (capped at 50,000
 *               checks and 1,024 lines) such that no line has two
 *               neighbours, along dimensions routed on the same side of e,
 *               both skipping a higher coordinate or both a lower one (the
 *               rule for load 2). Also, while the best load is above 1,
 *               *product* maps (SURFACE with dim = dir = -1): logical
 *               dimensions on physical ones in any assignment that skips 2
 *               to 4 whole planes in all, the first set of skipped planes
 *               holding every failed and unused node whose rings stay whole
 *               (every gap under half a torus ring): load 1.
 *               Score, lower first: the max directed-link load,
 *               then the phased cost (the sum over the stencil's dimensions of
 *               the max load of the messages of the pairs along that
 *               dimension: what a halo exchange one dimension at a time
 *               waits for), then the links with load > 1, then the spare-layout nodes the
 *               candidate newly occupies, then the ranks it moves; ties -> the
 *               first in the order listed (dimensions ascending, + before -,
 *               intervals as listed). Budget (lay->expect, default 0): after
 *               failure k (counting from 1) at least expect - k spare-layout
 *               nodes must stay free; a candidate that leaves fewer is taken
 *               only if no candidate meets the budget. A failure on a node
 *               with no rank keeps the map unless hybrid's map scores better.
 *               With expect 0, routed's max link load is never above
 *               hybrid's for the same failures (hybrid's map is a candidate
 *               at every failure). Only error: SLIDE_ENOSPARE.
 *
 * Every method also returns SLIDE_ENODE (failed id outside 0..nodes-1) and
 * SLIDE_EDUP (node listed twice) for bad input.
 */
#ifndef SLIDE_CORE_H
#define SLIDE_CORE_H

#include <stddef.h>
#include <stdint.h>

#include "slide_topo.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SLIDE_MAX_DIMS 3
/* Buckets of the hop histogram; the last one counts pairs of >= 15 hops. */
#define SLIDE_HOPS_HIST 16

/* Status codes. 0 is success; every other value has a message from
 * slide_strerror() and a name from slide_status_name(), which is how the
 * Python binding knows them. */
typedef enum slide_status {
    SLIDE_OK = 0,
    SLIDE_EINVAL = 1,          /* NULL pointer or argument out of range */
    SLIDE_EGRID_SYNTAX = 2,    /* grid string is not [torus:|mesh:]AxB[xC] */
    SLIDE_EGRID_DIMS = 3,      /* grid is not 2D or 3D */
    SLIDE_EGRID_SIZE = 4,      /* a size is 0, or the node count >= 2^31 */
    SLIDE_ESPARES_SYNTAX = 5,  /* spare string is not none | D:K[,D:K] */
    SLIDE_ESPARES_DIM = 6,     /* spare dimension repeated or not in the grid */
    SLIDE_ESPARES_COUNT = 7,   /* spare count 0, or leaves no logical node */
    SLIDE_EMETHOD = 8,         /* unknown method name / value */
    SLIDE_ENODE = 9,           /* failed node id outside the grid */
    SLIDE_EDUP = 10,           /* a node appears twice in the failed list */
    SLIDE_ENOSPARE = 11,       /* no free spare node left */
    SLIDE_ELINE = 12,          /* slide1d: the failed node's lines are full */
    SLIDE_EPLANE = 13,         /* slide2d: no usable spare plane left */
    SLIDE_ENOSURVIVOR = 14,    /* shrink: every non-spare node is dead */
    SLIDE_EWORKSPACE = 15,     /* workspace too small or misaligned */
    SLIDE_EMAP = 16,           /* a rank-to-node map entry is outside the grid */
    SLIDE_ETOPO_SYNTAX = 17,   /* topology spec not of the grammar (slide_topo.h) */
    SLIDE_ETOPO_SIZE = 18,     /* a size of 0, or too many hosts or links */
    SLIDE_EORDER = 19,         /* routing order is not a permutation of the dimensions */
    SLIDE_ETOPO_FIT = 20,      /* the grid has more nodes than the topology has hosts */
    SLIDE_EBLOCK = 21,         /* a block of ranks per node that is not AxB[xC] for the grid */
    SLIDE_EDOMAIN_SHAPE = 22,  /* a failure-domain box that is not AxB[xC] within the grid */
    SLIDE_EREDUNDANCY = 23,    /* a redundancy policy that is not buddy | parity:G | rs:G,M */
    SLIDE_EGROUP = 24,         /* group size G < 2, or M (members a group may lose) not in 1..G-1 */
    SLIDE_EGROUP_RANKS = 25,   /* group size larger than the node ranks */
    SLIDE_ENOPLACEMENT = 26    /* a failure domain holds too many node ranks: no placement survives its loss */
} slide_status;

typedef enum slide_method {
    SLIDE_SIMPLE = 0,
    SLIDE_SLIDE1D = 1,
    SLIDE_SLIDE2D = 2,
    SLIDE_HYBRID = 3,
    SLIDE_SHRINK = 4,
    SLIDE_ROUTED = 5
} slide_method;
#define SLIDE_NMETHODS 6

/* Node grid. size[2] == 1 when ndims == 2. */
typedef struct slide_grid {
    int32_t ndims;                 /* 2 or 3 */
    int32_t size[SLIDE_MAX_DIMS];  /* nodes per dimension, spares included */
    int32_t periodic;              /* 1 torus, 0 mesh */
} slide_grid;

/* Spare layout, in the order written: dim[0] is the primary spare dimension. */
typedef struct slide_spares {
    int32_t ndims;     /* 0 (no spares), 1 or 2 */
    int32_t dim[2];    /* 0 = x, 1 = y, 2 = z */
    int32_t count[2];  /* spare lines/planes at the high end of dim[i], >= 1 */
    int32_t block;     /* 0: every node of the planes is a spare; else a spare set: */
    int32_t per_block; /* the per_block highest plane nodes of each block of `block` ids */
} slide_spares;

/* What a node is to a layout (slide_node_role()). */
typedef enum slide_role {
    SLIDE_ROLE_RANK = 0,   /* holds a rank before any failure */
    SLIDE_ROLE_SPARE = 1,  /* a spare node */
    SLIDE_ROLE_UNUSED = 2  /* in the spare planes but not in the spare set: not in the job */
} slide_role;

/* A validated grid + spare layout with derived sizes, and the network it
 * runs on: node i of the grid runs on host i of `net`. Fill it with
 * slide_layout_init() (net = the grid itself) and slide_layout_place() only;
 * treat it as read-only. */
typedef struct slide_layout {
    slide_grid grid;
    slide_spares spares;
    int32_t spare_count[SLIDE_MAX_DIMS]; /* spares per dimension (0 if none) */
    int32_t logical[SLIDE_MAX_DIMS];     /* L[d] = size[d] - spare_count[d] */
    int32_t stride[SLIDE_MAX_DIMS];      /* node id = sum coord[d]*stride[d] */
    int32_t nodes;                       /* product of size[] */
    int32_t ranks;                       /* product of logical[] */
    slide_topo net;                      /* where the nodes run; routes messages */
    int32_t expect;                      /* routed: failures to keep spare nodes for */
    int32_t spare_nodes;                 /* spare nodes (nodes - ranks without a spare set) */
} slide_layout;

/* What routed did for one failure (slide_map_explain()). */
typedef enum slide_choice_kind {
    SLIDE_CHOICE_NONE = 0,    /* the node held no rank: only marked dead */
    SLIDE_CHOICE_BLOCK = 1,   /* a block of lines along `dim` shifted one node toward `dir` */
    SLIDE_CHOICE_DIRECT = 2,  /* the failed rank moved straight to the nearest free node */
    SLIDE_CHOICE_HYBRID = 3,  /* hybrid's map for the same failures was taken whole */
    SLIDE_CHOICE_CROSS = 4,   /* the ranks on a path across to a nearby line along `dim`, then
                               * along it toward `dir`, moved one node along it */
    SLIDE_CHOICE_SURFACE = 5  /* the whole map laid out again with one node free or dead on every
                               * line along `dim`, or (dim -1) a product map skipping whole
                               * planes (a re-embedding; see SLIDE_ROUTED) */
} slide_choice_kind;

typedef struct slide_choice {
    int32_t kind;              /* slide_choice_kind */
    int32_t dim, dir;          /* BLOCK: slide dimension (0 = x), direction +1/-1 */
    int32_t lo[2], width[2];   /* BLOCK: the lines, as an interval (first coordinate, count)
                                * in each of the other two dimensions, lower dimension first;
                                * CROSS: lo[0] the dimension crossed, width[0] the signed steps;
                                * SURFACE: the tiles' offsets and widths in the other two
                                * dimensions (labelled: width = the sides' sizes, a tile per
                                * line); dir: the logical dimension laid along `dim` */
    int32_t load_max;          /* the chosen map's max directed-link load (stencil) */
    int32_t overloaded;        /* its links with load > 1 */
    int32_t spares;            /* spare-layout nodes it newly occupies (net) */
    int32_t moved;             /* ranks it moves */
    int32_t candidates;        /* candidates compared */
    int32_t hybrid_load_max;   /* hybrid's map for the same failures: max load, -1 if none */
    int32_t hybrid_overloaded; /* and its overloaded links */
    int32_t direct_load_max;   /* the direct replacement from the same map, -1 if none */
} slide_choice;

/* Metrics of one rank-to-node map (see slide_measure()). */
typedef struct slide_metrics {
    int64_t pairs;                     /* logical neighbour pairs, each once */
    int64_t hops_sum;                  /* sum of hops over the pairs */
    int32_t hops_max;                  /* largest hops of a pair (0 if none) */
    double hops_mean;                  /* hops_sum / pairs (0 if no pair) */
    int64_t hops_hist[SLIDE_HOPS_HIST]; /* pairs with h hops; last: >= 15 */
    int32_t link_load_max;             /* most messages on one directed link */
    int64_t links_used;                /* directed links with load >= 1 */
    int64_t links_overloaded;          /* directed links with load > 1 */
    int32_t ranks_per_node_max;        /* >1 only for shrink */
    int32_t ranks_moved;               /* ranks not on their initial node */
} slide_metrics;

/* ---- messages and names ------------------------------------------------ */

/* The names below are the one spelling of each method, status and choice:
 * the Python binding lists them by calling a name function with 0, 1, 2, ...
 * until it returns NULL. Every string is static. Cost O(1) each. */

/* One-line English message for a status code ("unknown status" for others).
 * Never NULL. */
const char *slide_strerror(int status);

/* Name of a status code, its enumerator without the SLIDE_ prefix
 * ("ENOSPARE"), or NULL for a value outside slide_status. */
const char *slide_status_name(int status);

/* Method name, lower case ("simple", "slide1d", ..., "routed" in the order of
 * slide_method), or NULL for a value outside the enum. */
const char *slide_method_name(int method);

/* Parse a method name (exact, lower case) into *out.
 * Errors: SLIDE_EINVAL (NULL), SLIDE_EMETHOD (unknown name). */
int slide_method_parse(const char *name, slide_method *out);

/* 1 if every rank of the method's maps has a node of its own (it places
 * failed ranks on spares), 0 if it puts several ranks on one node (shrink: a
 * process per node cannot run it, and it needs no spare), -1 outside the
 * enum. */
int slide_method_one_rank_per_node(int method);

/* 1 if the method chooses among candidates at each failure and
 * slide_map_explain() reports its choices (routed), 0 for the fixed rules,
 * -1 outside the enum. */
int slide_method_chooses(int method);

/* Name of a slide_choice_kind, lower case ("none", "block", "direct",
 * "hybrid", "cross"), or NULL outside the enum. */
const char *slide_choice_kind_name(int kind);

/* ---- parsing and layouts ----------------------------------------------- */

/* Parse a grid string: a 2D or 3D torus or mesh in the topology grammar of
 * slide_topo.h, "[torus:|mesh:]AxB" or "[torus:|mesh:]AxBxC" (without a
 * prefix the grid is a torus). Example: "mesh:4x4", "6x6x6", "torus:48x47x47".
 * Output: *out (untouched on error). Cost O(strlen).
 * Errors: SLIDE_EINVAL (NULL), SLIDE_EGRID_SYNTAX (not a torus or mesh of the
 * grammar), SLIDE_EGRID_DIMS (1 or > 3 sizes), SLIDE_EGRID_SIZE (a size of 0,
 * or more than SLIDE_TOPO_MAX_HOSTS nodes). */
int slide_grid_parse(const char *text, slide_grid *out);

/* Parse a spare layout "D:K" or "D:K,E:K" with D,E in {x,y,z} distinct and
 * K >= 1 decimal, optionally followed by a spare set "/M:K" (1 <= K <= M),
 * or "none" / "" for no spares. Example: "x:1", "x:2", "x:1,y:1",
 * "z:1/16:1". Whether the dimensions exist in a grid is checked by
 * slide_layout_init(). Output: *out (untouched on error). Cost O(strlen).
 * Errors: SLIDE_EINVAL (NULL), SLIDE_ESPARES_SYNTAX, SLIDE_ESPARES_DIM
 * (repeated dimension), SLIDE_ESPARES_COUNT (K == 0 or K >= 2^31, or a spare
 * set with K > M). */
int slide_spares_parse(const char *text, slide_spares *out);

/* Validate grid + spares and fill *out; the layout runs on the grid itself
 * (out->net is the grid as a torus or mesh, routed x first). Cost O(1), O(nodes)
 * with a spare set (it counts the spares).
 * Errors: SLIDE_EINVAL (NULL), SLIDE_EGRID_DIMS, SLIDE_EGRID_SIZE,
 * SLIDE_ESPARES_DIM (spare dimension >= ndims, or repeated, or ndims > 2),
 * SLIDE_ESPARES_COUNT (count < 1, or count >= size of its dimension, or a
 * spare set without any spare node). */
int slide_layout_init(slide_layout *out, const slide_grid *grid,
                      const slide_spares *spares);

/* Routed's spare budget: keep, after each failure k (counting from 1), at
 * least expect - k spare-layout nodes free, so that each failure still
 * expected can take one (0, the default: no reservation). Cost O(1).
 * Errors: SLIDE_EINVAL (NULL lay, expect < 0 or above the spare nodes). */
int slide_layout_set_expect(slide_layout *lay, int32_t expect);

/* Run the layout on another network: node i on host i of *net (for a torus
 * or mesh of the grid's shape, node and host numbering agree, so every node
 * runs on the host at its own coordinates). Cost O(1).
 * Errors: SLIDE_EINVAL (NULL), SLIDE_ETOPO_FIT (more nodes than hosts). */
int slide_layout_place(slide_layout *lay, const slide_topo *net);

/* Coordinates of a node (coords[2] = 0 in 2D). Cost O(1). No check: node
 * must be in 0..nodes-1. */
void slide_node_coords(const slide_layout *lay, int32_t node,
                       int32_t coords[SLIDE_MAX_DIMS]);

/* Node id of coordinates, or -1 if outside the grid. Cost O(1). */
int32_t slide_node_index(const slide_layout *lay,
                         const int32_t coords[SLIDE_MAX_DIMS]);

/* 1 if the node is a spare of the layout, 0 if not, -1 if out of range.
 * Cost O(1), O(block) with a spare set. */
int slide_is_spare(const slide_layout *lay, int32_t node);

/* The node's slide_role, or -1 if out of range. Cost as slide_is_spare(). */
int slide_node_role(const slide_layout *lay, int32_t node);

/* Name of a slide_role, lower case ("rank", "spare", "unused"), or NULL
 * outside the enum. Cost O(1). */
const char *slide_node_role_name(int role);

/* Hop distance between two nodes of the GRID (see Model; the methods'
 * notion of near), -1 if either is out of range. Cost O(1). */
int32_t slide_hops(const slide_layout *lay, int32_t a, int32_t b);

/* Failure-free map: rank_to_node[r] for r in 0..ranks-1 (caller's array of
 * `ranks` entries). Cost O(ranks). No error case. */
void slide_initial_map(const slide_layout *lay, int32_t *rank_to_node);

/* ---- mappings ---------------------------------------------------------- */

/* Bytes of workspace slide_map() needs for this layout (any method):
 * about 4*nodes + 16*spare nodes + 4*(nodes/size of primary spare dim) plus a
 * few hundred bytes. Cost O(1). */
size_t slide_map_workspace_bytes(const slide_layout *lay);

/* New rank-to-node map after the ordered failures failed[0..nfailed-1].
 *
 * Inputs: lay from slide_layout_init(); method; failed node ids (may be NULL
 * when nfailed == 0); work: at least slide_map_workspace_bytes(lay) bytes,
 * 8-byte aligned, contents ignored (it is scratch).
 * Output: rank_to_node[0..ranks-1]. *err_index (may be NULL) is -1 on success
 * and on argument errors, else the index in failed[] of the failure that
 * could not be handled; then rank_to_node holds the map for the failures
 * before it (failed[0..*err_index-1]), so callers can report the last good
 * state.
 *
 * Cost: O(nodes) to set up, plus per failure: simple O(spare nodes);
 * slide1d O(line length); slide2d O(nodes / plane count) per plane visited
 * and O(ranks) once at the end; hybrid as slide2d, then as slide1d plus
 * O(nodes/line length + path) when it crosses; shrink O(k^2 .. k^3) for a
 * nearest survivor k hops away: about 0.05-0.2 ms for 100k nodes. routed:
 * O(ranks x route length) for the hybrid candidate plus, per candidate, the
 * messages of the ranks it moves (loads are updated, not recounted): about
 * 20 ms for 8 failures at 1,728 nodes, 0.5 s at 100,000 (bench/sliding_map).
 *
 * Errors: SLIDE_EINVAL (NULL lay/rank_to_node/work, nfailed < 0, failed NULL
 * with nfailed > 0), SLIDE_EMETHOD, SLIDE_EWORKSPACE, SLIDE_ENODE, SLIDE_EDUP,
 * and the method errors listed at the top of this file. */
int slide_map(const slide_layout *lay, int method, const int32_t *failed,
              int32_t nfailed, int32_t *rank_to_node, void *work,
              size_t work_bytes, int32_t *err_index);

/* The routed map after failed[0..nfailed-1], as slide_map(lay, SLIDE_ROUTED,
 * ...), with one record per failure in choices[0..nfailed-1] (may be NULL):
 * what routed did and the scores it compared. Same workspace, errors and
 * err_index as slide_map(). */
int slide_map_explain(const slide_layout *lay, const int32_t *failed, int32_t nfailed,
                      int32_t *rank_to_node, slide_choice *choices, void *work,
                      size_t work_bytes, int32_t *err_index);

/* Running on when spares run out ("on-no-spare degrade"). Where the method
 * stops for want of a free node (SLIDE_ENOSPARE, SLIDE_ELINE, SLIDE_EPLANE),
 * its map for the failures before that point is kept, and from that failure
 * on, one at a time in list order, every rank whose node died goes to the
 * live node (a spare or a rank's node; never an unused one) holding the
 * fewest ranks, ties -> the fewest hops summed to the hosts of its live
 * stencil neighbours (logical grid, wrapping on a torus), ties -> lowest id.
 * A node that holds no rank takes it as slide_map would (the rank moves
 * there); a node that holds ranks already takes it as a GUEST: a new set of
 * processes on that node, given id nodes + g for the g-th guest made
 * (host[g] = the node), so the same node runs two blocks. Failed ids may name
 * guests (nodes + g, g below the guests made by the failures before it): the
 * guest's processes died alone; a failed node takes its guests with it. Each
 * step knows only the failures before it, so earlier placements never move.
 *
 * Inputs: as slide_map(), failed ids in 0..nodes + max_guests - 1; host has
 * max_guests entries; work: at least slide_degrade_workspace_bytes(lay,
 * max_guests) bytes, 8-byte aligned.
 * Output: serving[0..ranks-1]: the node or guest id that runs each node rank
 * (slide_map()'s map while no failure is degraded); host[0..*nguests-1].
 * Cost: slide_map()'s, plus O(nodes x ranks per degraded node) per failure.
 * Errors: slide_map()'s argument errors, SLIDE_ENODE, SLIDE_EDUP, method
 * errors other than those three, SLIDE_ENOSPARE (a guest is needed and
 * max_guests are made), SLIDE_ENOSURVIVOR (no live node); *err_index as in
 * slide_map(), serving then undefined. */
size_t slide_degrade_workspace_bytes(const slide_layout *lay, int32_t max_guests);
/* The guests the sliding runtime allows a run (max_guests): two per node, for
 * guests of guests that died. Cost O(1); 0 for a NULL lay. */
int32_t slide_degrade_max_guests(const slide_layout *lay);
int slide_map_degrade(const slide_layout *lay, int method, const int32_t *failed, int32_t nfailed,
                      int32_t *serving, int32_t *host, int32_t max_guests, int32_t *nguests, void *work,
                      size_t work_bytes, int32_t *err_index);

/* ---- metrics ----------------------------------------------------------- */

/* Bytes of workspace slide_measure() needs: 4 * (net links + nodes) +
 * 12 * stencil messages (at most 2 * ndims * ranks). Cost O(1). */
size_t slide_measure_workspace_bytes(const slide_layout *lay);

/* The stencil's messages, as (source rank, destination rank) pairs: every
 * neighbour pair (see slide_measure()) both ways, in rank order; only the
 * pairs along logical dimension `dim` (0 = x) unless dim is -1 (a phased
 * exchange sends one dimension at a time). Writes at most `cap` pairs into
 * src[], dst[] (either may be NULL with cap 0) and returns how many there
 * are; -1 for NULL lay, stencil_periodic not in -1..1 or dim not in
 * -1..ndims-1. Cost O(ranks). */
int64_t slide_stencil_messages(const slide_layout *lay, int stencil_periodic, int dim,
                               int32_t *src, int32_t *dst, int64_t cap);

/* slide_measure: metrics of a rank-to-node map.
 *
 * Neighbour pairs: ranks whose logical coordinates differ by one in one
 * dimension, each unordered pair once; if stencil_periodic is 1, also the
 * wrap-around pairs (coordinate L-1 with 0) of every logical dimension with
 * L >= 3. stencil_periodic -1 means "same as the grid" (torus -> 1).
 * Messages: the 5-point (2D) / 7-point (3D) stencil sends one message each
 * way over every pair, routed on lay->net by slide_topo_round() (the one
 * routing of slide_topo.h). A pair's hops are the links of its route from the
 * lower rank to the higher. A message between ranks on the same node uses no
 * link. Failed nodes still route.
 *
 * Output: *out. Cost O(nodes + ranks * average hops).
 * Errors: SLIDE_EINVAL (NULL, stencil_periodic not in -1..1),
 * SLIDE_EWORKSPACE, SLIDE_EMAP (an entry outside 0..nodes-1). */
int slide_measure(const slide_layout *lay, const int32_t *rank_to_node,
                  int stencil_periodic, slide_metrics *out, void *work,
                  size_t work_bytes);

/* ---- ranks per node: a block of the rank grid on every node ----------- *
 *
 * Production codes run K processes per node. The methods above map NODE
 * RANKS (one per node, the logical grid L of the layout) to nodes; with K
 * ranks per node each node rank stands for a BLOCK of b[0] x b[1] (x b[2])
 * ranks of the application's rank grid, which is then L[d] * b[d] ranks along
 * dimension d. A block moves as a unit: its ranks follow their node rank.
 *
 * Numbering (row-major, last dimension fastest, like everything here): rank
 * (f0, f1, f2) of the rank grid is rank (f0 * F1 + f1) * F2 + f2 with
 * F[d] = L[d] * b[d]; it belongs to node rank (f0 / b0, f1 / b1, f2 / b2) of
 * the logical grid and is LANE (f0 % b0, f1 % b1, f2 % b2), row-major in the
 * block, of that node rank: the lane-th process of the node runs it. With the
 * block 1x1x1 a rank is its node rank, lane 0, and every function below
 * equals its one-rank-per-node counterpart (slide_stencil_messages,
 * slide_measure). A block is passed as int32_t b[3], b[2] = 1 in 2D. */

/* Parse a block "AxB" (2D grid) or "AxBxC" (3D): one size >= 1 per dimension
 * of a grid of `ndims` dimensions; block[2] = 1 in 2D. Output: block
 * (untouched on error). Cost O(strlen).
 * Errors: SLIDE_EINVAL (NULL, ndims not 2 or 3), SLIDE_EBLOCK (syntax, a
 * size of 0, another number of sizes, more than 2^20 ranks per node). */
int slide_block_parse(const char *text, int32_t ndims, int32_t block[SLIDE_MAX_DIMS]);

/* The default block of k ranks per node on a grid of `ndims` dimensions: k
 * split into ndims factors as evenly as possible, the larger ones first
 * (x, then y), like MPI_Dims_create: 2 -> 2x1x1, 4 -> 2x2x1, 8 -> 2x2x2,
 * 6 -> 3x2x1, 12 -> 3x2x2. The most even split has the smallest faces
 * between nodes. Cost O(k). Errors: SLIDE_EINVAL (NULL, k < 1, k > 2^20, ndims
 * not 2 or 3). */
int slide_block_default(int32_t k, int32_t ndims, int32_t block[SLIDE_MAX_DIMS]);

/* Ranks of the rank grid with this block on the layout (ranks x block), or
 * -1 if the block is invalid (a size < 1, b[2] != 1 on a 2D grid) or the
 * total is above 2^28. Cost O(1). */
int64_t slide_block_ranks(const slide_layout *lay, const int32_t block[SLIDE_MAX_DIMS]);

/* Rank of the rank grid that lane `lane` of node rank `node_rank` runs, and
 * back. No checks: the block must be valid and the arguments in range.
 * Cost O(1). */
int32_t slide_block_rank(const slide_layout *lay, const int32_t block[SLIDE_MAX_DIMS],
                         int32_t node_rank, int32_t lane);
void slide_block_locate(const slide_layout *lay, const int32_t block[SLIDE_MAX_DIMS], int32_t rank,
                        int32_t *node_rank, int32_t *lane);

/* The node of every rank of the rank grid: rank_node[f] =
 * rank_to_node[node rank of f] for the slide_block_ranks() ranks (what a
 * hostfile lists: one line per rank). Cost O(ranks). Errors: SLIDE_EINVAL
 * (NULL, an invalid block). */
int slide_block_rank_nodes(const slide_layout *lay, const int32_t block[SLIDE_MAX_DIMS],
                           const int32_t *rank_to_node, int32_t *rank_node);

/* slide_stencil_messages() on the rank grid: every neighbour pair of ranks
 * (wrap-around pairs along rank-grid dimensions of >= 3 ranks when periodic),
 * both ways, as ranks of the rank grid. Pairs inside a block are listed too
 * (they cost no link). Same arguments and result as slide_stencil_messages();
 * also -1 for an invalid block. Cost O(ranks). */
int64_t slide_block_stencil_messages(const slide_layout *lay, const int32_t block[SLIDE_MAX_DIMS],
                                     int stencil_periodic, int dim, int32_t *src, int32_t *dst,
                                     int64_t cap);

/* Workspace of slide_block_measure(): slide_measure_workspace_bytes() with
 * the rank grid's messages (0 for an invalid block). Cost O(1). */
size_t slide_block_measure_workspace_bytes(const slide_layout *lay, const int32_t block[SLIDE_MAX_DIMS]);

/* slide_measure() of a node-rank map (rank_to_node: lay->ranks entries, as
 * slide_map() gives) with every node rank running a block: the messages are
 * the rank grid's (slide_block_stencil_messages), so a link between two nodes
 * carries one message per rank of the face between their blocks, and a pair
 * inside a node uses no link (0 hops). Pairs, hops, ranks_moved and
 * ranks_per_node_max count ranks of the rank grid (K per node for a method
 * that keeps one node rank per node). Errors: those of slide_measure(), and
 * SLIDE_EBLOCK for an invalid block. */
int slide_block_measure(const slide_layout *lay, const int32_t block[SLIDE_MAX_DIMS],
                        const int32_t *rank_to_node, int stencil_periodic, slide_metrics *out,
                        void *work, size_t work_bytes);

/* ---- redundancy across failure domains ----------------------------------- *
 *
 * A checkpoint kept in memory survives a node's loss only if its redundancy
 * (a buddy's copy, a group's parity) sits on other nodes; nodes that fail
 * together (a board, a chassis, a leaf switch) form a FAILURE DOMAIN, and the
 * redundancy is placed so that losing any one whole domain loses no data.
 * A domain assignment is domain_of_node[n] in 0..ndomains-1 for every node n
 * of the grid, spares included (spares are physical nodes too); NULL where a
 * function accepts it means every node is a domain of its own. Everything
 * below works on NODE RANKS and a rank-to-node map (slide_map()'s), so the
 * placement follows the map after every slide; it is a pure function of its
 * arguments: every process computes the same from the same map. */

/* Redundancy policies (slide_redundancy_parse()). */
typedef enum slide_redundancy_kind {
    SLIDE_REDUNDANCY_BUDDY = 0,  /* "buddy": a full copy on one other node */
    SLIDE_REDUNDANCY_PARITY = 1, /* "parity:G": groups of G, any 1 member may be lost */
    SLIDE_REDUNDANCY_RS = 2      /* "rs:G,M": groups of G, any M members may be lost */
} slide_redundancy_kind;

typedef struct slide_redundancy {
    int32_t kind;   /* slide_redundancy_kind */
    int32_t group;  /* G: nodes per group (2 for buddy) */
    int32_t lose;   /* M: members of a group that may be lost (1 for buddy and parity) */
} slide_redundancy;

/* Parse a redundancy policy: "buddy", "parity:G" or "rs:G,M" (decimal,
 * exact, lower case). Checks G >= 2 and 1 <= M < G; whether G fits the node
 * ranks is slide_groups()'s check. Output: *out (untouched on error). Cost
 * O(strlen). Errors: SLIDE_EINVAL (NULL), SLIDE_EREDUNDANCY (syntax, a number
 * above 2^30), SLIDE_EGROUP (G < 2, M < 1 or M >= G). */
int slide_redundancy_parse(const char *text, slide_redundancy *out);

/* Name of a slide_redundancy_kind ("buddy", "parity", "rs"), or NULL outside
 * the enum. Cost O(1). */
const char *slide_redundancy_kind_name(int kind);

/* Parse a failure-domain box "AxB" (2D grid) or "AxBxC" (3D) for the layout's
 * grid: one size per grid dimension, each in 1..size of the grid along it
 * (shape[2] = 1 in 2D). Output: shape (untouched on error). Cost O(strlen).
 * Errors: SLIDE_EINVAL (NULL), SLIDE_EDOMAIN_SHAPE (syntax, a size of 0 or
 * above the grid's, another number of sizes than the grid's dimensions). */
int slide_domain_shape_parse(const slide_layout *lay, const char *text, int32_t shape[SLIDE_MAX_DIMS]);

/* Domains as boxes of the node grid: node n with coordinates c is in the box
 * b[d] = c[d] / shape[d]; boxes are numbered row-major (last dimension
 * fastest) over the B[d] = ceil(size[d] / shape[d]) boxes per dimension, so
 * *ndomains = B[0] * B[1] * B[2] and every number is used. Boxes do not wrap
 * on a torus: where shape[d] does not divide size[d] the last box along d is
 * thinner. Spare and unused nodes get their box like every other node.
 * Output: domain_of_node[0..nodes-1], *ndomains. Cost O(nodes).
 * Errors: SLIDE_EINVAL (NULL), SLIDE_EDOMAIN_SHAPE (a size < 1, above the
 * grid's, or shape[2] != 1 on a 2D grid). */
int slide_domains_block(const slide_layout *lay, const int32_t shape[SLIDE_MAX_DIMS],
                        int32_t *domain_of_node, int32_t *ndomains);

/* Redundancy groups: partition the node ranks 0..ranks-1 into
 * ngroups = floor(ranks / g) groups so that no group has more than m members
 * whose nodes (map[r]) are in one domain; then the loss of any one whole
 * domain costs every group at most m members, which rs:g,m (parity: m = 1)
 * rebuilds.
 *
 * Dealing rule (exact): sort the node ranks by the key (domain of map[r], r)
 * ascending; the i-th node rank of that order goes to group i mod ngroups.
 * Group k thus has ceil((ranks - k) / ngroups) members: floor(ranks /
 * ngroups) or one more, the larger groups first; that is g or g + 1 whenever
 * ranks mod g <= ngroups (e.g. 10 node ranks at g = 4: groups of 5 and 5;
 * 7 at g = 4: one group of 7). A member's index in its group is its place
 * among the group's node ranks in ascending order.
 *
 * Condition for success (exact for this rule, and also necessary for any
 * rule): every domain holds at most m * ngroups node ranks. A domain's node
 * ranks are consecutive in the order, so round-robin deals a domain of c
 * node ranks ceil(c / ngroups) into some group; that is <= m iff
 * c <= m * ngroups. With domain_of_node NULL every node is its own domain
 * (a node holding several node ranks, as shrink leaves them, is still one
 * domain).
 *
 * Inputs: map[0..ranks-1] (slide_map()'s), domain_of_node[0..nodes-1] with
 * entries >= 0 (or NULL), g >= 2, 1 <= m < g.
 * Outputs: group_of_rank[0..ranks-1] in 0..ngroups-1, member_of_rank
 * [0..ranks-1], group_size[0..ngroups-1] (room for ranks / g entries),
 * *ngroups. group_of_rank and member_of_rank serve as scratch: after an
 * SLIDE_ENOPLACEMENT their contents are unspecified; on every other error
 * nothing is written. No allocation. Cost O(ranks log ranks) (heap sort).
 * Errors: SLIDE_EINVAL (NULL, other than domain_of_node; a negative domain),
 * SLIDE_EGROUP (g < 2, m < 1 or m >= g), SLIDE_EGROUP_RANKS (g > ranks),
 * SLIDE_EMAP (a map entry outside 0..nodes-1), SLIDE_ENOPLACEMENT (a domain
 * holds more than m * ngroups node ranks: e.g. every node in one domain). */
int slide_groups(const slide_layout *lay, const int32_t *map, const int32_t *domain_of_node,
                 int32_t g, int32_t m, int32_t *group_of_rank, int32_t *member_of_rank,
                 int32_t *group_size, int32_t *ngroups);

/* Buddy pairing across domains: node rank r keeps its copy on the node of
 * node rank (r + h) mod ranks. *shift = ranks / 2 if no r has map[r] and
 * map[(r + h) mod ranks] in one domain for h = ranks / 2 (today's pairing),
 * else the smallest such h in 1..ranks-1. domain_of_node NULL: every node its
 * own domain. Cost O(ranks) per shift tried: O(ranks) when ranks / 2 works,
 * O(ranks^2) at worst. Errors: SLIDE_EINVAL (NULL lay/map/shift, a negative
 * domain), SLIDE_EGROUP_RANKS (fewer than 2 node ranks), SLIDE_EMAP,
 * SLIDE_ENOPLACEMENT (no shift works; certain when a domain holds more than
 * half the node ranks). *shift is untouched on error. */
int slide_buddy_shift(const slide_layout *lay, const int32_t *map, const int32_t *domain_of_node,
                      int32_t *shift);

/* sizeof of the public structs, so bindings can check their mirrors:
 * which = 0 slide_grid, 1 slide_spares, 2 slide_layout, 3 slide_metrics,
 * 4 slide_topo, 5 slide_topo_round_stats, 6 slide_choice, 7 slide_redundancy;
 * 0 for anything else. */
size_t slide_struct_size(int which);

#ifdef __cplusplus
}
#endif

#endif /* SLIDE_CORE_H */
