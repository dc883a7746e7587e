/*
 * slide_topo.h -- the network a job runs on: one spec grammar, one numbering
 * of hosts, switches and links, and one routing, used by everything in
 * ftslide that needs to know which links a message crosses (the mapping
 * metrics and the routed substitution here, the analytic model and the
 * SimGrid platforms of the simulations, the emulated cluster's routes).
 *
 * Pure C11. No I/O, no global state, no allocation. Every name starts with
 * slide_topo_ / SLIDE_TOPO_.
 *
 * ---------------------------------------------------------------------------
 * Spec grammar (kind names are case-insensitive)
 * ---------------------------------------------------------------------------
 *   torus:AxB[xC...]    torus of 1 to 6 dimensions; a bare AxB[xC...] is a torus
 *   mesh:AxB[xC...]     mesh (no wrap-around), 1 to 6 dimensions
 *   ring:N              = torus:N
 *   star:N              N hosts on one switch (= fattree:1;N;1;1)
 *   fattree:K           3-level fat-tree of K-port switches (K even): K^3/4
 *                       hosts, K^2/2 edge, K^2/2 aggregation and K^2/4 core
 *                       switches (= fattree:3;K/2,K/2,K;1,K/2,K/2;1,1,1)
 *   fattree:L;D1,..;U1,..;P1,..
 *                       SimGrid's FAT_TREE: L levels; children per switch,
 *                       parents per node and parallel links, per level
 *   kary:K,N            k-ary n-tree (= fattree:N;K,..,K;1,K,..,K;1,..,1)
 *   dragonfly:G,L;C,L;R,L;N
 *                       SimGrid's DRAGONFLY: groups, chassis per group,
 *                       routers per chassis (each with its link count), hosts
 *                       per router; G <= R
 * Sizes are decimal integers >= 1. At most SLIDE_TOPO_MAX_HOSTS hosts.
 *
 * ---------------------------------------------------------------------------
 * Numbering
 * ---------------------------------------------------------------------------
 * Vertices are hosts 0..hosts-1 first, then switches (fat-tree) or routers
 * (dragonfly). Torus/mesh hosts are numbered row-major, the LAST dimension
 * fastest, as MPI_Cart_rank and the sliding core's node grid do:
 *     host = (x * size[1] + y) * size[2] + z
 * so node i of a sliding layout of the same shape is host i. Fat-tree host i
 * is SimGrid's host i; switch (level l >= 1, position p) is vertex
 * level_first[l] + p, positions and labels as SimGrid builds them. Dragonfly
 * host (group, chassis, router, slot) is numbered group slowest, router
 * (g, c, r) is vertex hosts + (g * C + c) * R + r.
 *
 * Links are directed and numbered 0..links-1; some numbers name no link
 * (slide_topo_link() says which do). Torus/mesh: link = host * 2 * ndims +
 * 2 * d + (0 for the + direction, 1 for -). A ring of two has one link each
 * way (0 -> 1 is host 0's +, 1 -> 0 host 1's -), as SimGrid builds it.
 *
 * ---------------------------------------------------------------------------
 * Routing (exactly SimGrid's, so that a hot link is the same link everywhere)
 * ---------------------------------------------------------------------------
 * Torus/mesh: dimension order. The dimensions are routed in the topology's
 * routing order (default 0, 1, 2, ...: x first); each dimension takes the
 * shorter way round; on an even ring with the target exactly half-way the +
 * way, except from position n/2, which goes -. A mesh never wraps. The
 * platform file gives SimGrid the dimensions in routing order, and a mesh of
 * size n >= 3 as a torus of 2n - 1 positions of which the first n are used,
 * so that SimGrid's torus routing is this routing exactly.
 * Fat-tree (SimGrid 3.32's rules): up until the switch whose subtree holds
 * the target, over parent port (target / product of the parents per node of
 * the levels below) mod (parents * parallel links), the port numbering the
 * parent's digit first (d-mod-k); down towards the target, walking child port
 * numbers from (source mod parallel links) * children as SimGrid does (the
 * walk goes on at the next port number one level down, see slide_topo.c). A
 * route from a switch walks as from source 0.
 * Dragonfly: SimGrid's minimal routing, link for link as SimGrid lists it
 * (which, when the source chassis is not chassis 0, is not a connected path:
 * SimGrid continues from chassis 0 after a green hop within the target
 * group). Routes start at hosts only.
 * Every route of a torus, mesh or fat-tree is a connected path, and the rest
 * of a route after any of its vertices is the route from that vertex (on a
 * fat-tree with parallel links: through the same switches, the parallel link
 * downwards depending on the source): so next-hop forwarding tables (the
 * emulated cluster) follow the same paths.
 */
#ifndef SLIDE_TOPO_H
#define SLIDE_TOPO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SLIDE_TOPO_MAX_DIMS 6
#define SLIDE_TOPO_MAX_LEVELS 8
#define SLIDE_TOPO_MAX_HOSTS (1 << 24)
/* Longest route of any supported topology: sum of half sizes on a torus,
 * 2 * levels on a fat-tree, 7 on a dragonfly. Callers may size route buffers
 * with slide_topo_route_max() instead. */

typedef enum slide_topo_kind {
    SLIDE_TOPO_TORUS = 0,
    SLIDE_TOPO_MESH = 1,
    SLIDE_TOPO_RING = 2,     /* a torus of one dimension, written ring:N */
    SLIDE_TOPO_STAR = 3,     /* a fat-tree of one level, written star:N */
    SLIDE_TOPO_FATTREE = 4,
    SLIDE_TOPO_DRAGONFLY = 5
} slide_topo_kind;

/* Link kinds (slide_topo_link()). */
typedef enum slide_topo_link_kind {
    SLIDE_LINK_NONE = -1,     /* the number names no link */
    SLIDE_LINK_DIM = 0,       /* torus/mesh: along dimension `dim` */
    SLIDE_LINK_UP = 1,        /* fat-tree: towards the root */
    SLIDE_LINK_DOWN = 2,      /* fat-tree: towards the hosts */
    SLIDE_LINK_HOST = 3,      /* dragonfly: host <-> router */
    SLIDE_LINK_GREEN = 4,     /* dragonfly: routers of one chassis */
    SLIDE_LINK_BLACK = 5,     /* dragonfly: same router position, chassis of one group */
    SLIDE_LINK_BLUE = 6       /* dragonfly: between groups */
} slide_topo_link_kind;

/* A parsed topology. Fill it with slide_topo_parse() (and optionally
 * slide_topo_set_order()) only; treat it as read-only. */
typedef struct slide_topo {
    int32_t kind;                            /* slide_topo_kind */
    /* torus, mesh, ring */
    int32_t ndims;
    int32_t size[SLIDE_TOPO_MAX_DIMS];
    int32_t stride[SLIDE_TOPO_MAX_DIMS];     /* host = sum coord[d] * stride[d] */
    int32_t order[SLIDE_TOPO_MAX_DIMS];      /* order[k]: the k-th dimension routed */
    /* fat-tree, star */
    int32_t levels;
    int32_t down[SLIDE_TOPO_MAX_LEVELS];     /* children per switch of level l+1 */
    int32_t up[SLIDE_TOPO_MAX_LEVELS];       /* parents per node of level l */
    int32_t count[SLIDE_TOPO_MAX_LEVELS];    /* parallel links between them */
    int32_t level_first[SLIDE_TOPO_MAX_LEVELS + 2]; /* first vertex of level l */
    int32_t link_first[SLIDE_TOPO_MAX_LEVELS + 1];  /* first link above level l */
    int32_t fattree_k;                       /* K of fattree:K, else 0 (for printing) */
    /* dragonfly: groups, blue links, chassis, black links, routers, green links, hosts/router */
    int32_t dragonfly[7];
    /* all kinds */
    int32_t hosts;                           /* hosts 0..hosts-1 */
    int32_t vertices;                        /* hosts + switches or routers */
    int32_t links;                           /* link numbers 0..links-1 */
    int32_t route_max;                       /* longest route, in links */
} slide_topo;

/* ---- parsing and printing -------------------------------------------- */

/* Parse a spec (grammar above) into *out with the default routing order.
 * Output untouched on error. Cost O(strlen + levels).
 * Errors (slide_core.h status codes): SLIDE_EINVAL (NULL),
 * SLIDE_ETOPO_SYNTAX (not of the grammar; slide_topo_parse_detail() says
 * which part), SLIDE_ETOPO_SIZE (more than SLIDE_TOPO_MAX_HOSTS hosts, or
 * more than 2^31 - 1 links). */
int slide_topo_parse(const char *spec, slide_topo *out);

/* Why a spec is not of the grammar: a static one-line English text for the
 * spec (for example "a fat-tree needs 4 ';'-separated fields"), or "" when it
 * parses. Cost O(strlen). Never NULL. */
const char *slide_topo_parse_detail(const char *spec);

/* Set the routing order of a torus or mesh: a permutation of the dimension
 * names, "xyz" style for up to three dimensions (x, y, z) or digits "0".."5"
 * for any count (for example "zyx", "yx", "102"). NULL or "" keeps the
 * default (0, 1, 2, ...). Errors: SLIDE_EINVAL (t NULL), SLIDE_EORDER (not a
 * permutation of the topology's dimensions, or the topology is not a torus,
 * mesh or ring). Cost O(ndims). */
int slide_topo_set_order(slide_topo *t, const char *order);

/* Canonical spec of t into buf (always NUL-terminated when size > 0);
 * returns the length it needs (excluding the NUL), like snprintf. The
 * routing order is not part of the spec (slide_topo_format_order()). */
int slide_topo_format(const slide_topo *t, char *buf, size_t size);

/* Routing order as dimension names ("xyz", "zyx", or digits past three
 * dimensions); "" for kinds without one. Same return as slide_topo_format. */
int slide_topo_format_order(const slide_topo *t, char *buf, size_t size);

/* ---- hosts and links -------------------------------------------------- */

/* Torus/mesh coordinates of a host (ndims entries). Cost O(ndims). No check. */
void slide_topo_coords(const slide_topo *t, int32_t host, int32_t *coords);

/* Kind of link number `link` and its ends (vertices); *dim is the dimension
 * (torus/mesh), the level below the link (fat-tree) or 0; *capacity is the
 * number of physical links it bundles (dragonfly green/black/blue links: the
 * link counts of the spec; else 1). Any output pointer may be NULL. Returns
 * SLIDE_LINK_NONE (and leaves the outputs alone) for a number that names no
 * link or is out of range. Cost O(levels). */
int slide_topo_link(const slide_topo *t, int32_t link, int32_t *tail, int32_t *head,
                    int32_t *dim, int32_t *capacity);

/* ---- routing ---------------------------------------------------------- */

/* The route from vertex `from` to host `to`: its link numbers into
 * links[0..cap-1] (links may be NULL to only count). Returns the number of
 * links of the route (0 when from == to), or -1 when `from` is not a vertex
 * from which routes start (out of range, a dragonfly router) or `to` is not a
 * host, or -2 when cap is too small (slide_topo_route_max() always is large
 * enough). Cost O(route length + levels). */
int32_t slide_topo_route(const slide_topo *t, int32_t from, int32_t to, int32_t *links,
                         int32_t cap);

/* Length in links of the route from host a to host b; -1 if out of range.
 * Cost O(ndims) on a torus/mesh, O(levels) on a fat-tree. */
int32_t slide_topo_hops(const slide_topo *t, int32_t a, int32_t b);

/* Totals of one round of messages (slide_topo_round()). */
typedef struct slide_topo_round_stats {
    int64_t messages;
    int64_t hops_sum;         /* links crossed, over all messages */
    int32_t hops_max;         /* longest route */
    int32_t load_max;         /* most messages on one link */
    int64_t links_used;       /* links with load >= 1 */
    int64_t links_overloaded; /* links with load > 1 */
} slide_topo_round_stats;

/* Route n messages src_hosts[i] -> dst_hosts[i] (a message to the same host
 * uses no link) and count them on every link they cross: load[0..links-1]
 * is set (not added to). If hops is not NULL, hops[i] is message i's route
 * length; if worst is not NULL, worst[i] is the largest load / capacity over
 * message i's route (0 for no link). Totals in *stats (may be NULL).
 * Errors: SLIDE_EINVAL (NULL arrays, n < 0), SLIDE_ENODE (a host out of
 * range). Cost O(n * route length + links). */
int slide_topo_round(const slide_topo *t, const int32_t *src_hosts, const int32_t *dst_hosts,
                     int64_t n, uint32_t *load, int32_t *hops, double *worst,
                     slide_topo_round_stats *stats);

/* Add `delta` (+1 or -1) to the load of every link of the route a -> b.
 * Returns the route length, or -1 for hosts out of range. For incremental
 * load tables (the routed substitution). Cost O(route length). */
int32_t slide_topo_add_route(const slide_topo *t, uint32_t *load, int32_t a, int32_t b,
                             int delta);

/* ---- SimGrid ---------------------------------------------------------- */

/* SimGrid cluster topology keyword: "TORUS", "FAT_TREE" or "DRAGONFLY". */
const char *slide_topo_sim_kind(const slide_topo *t);

/* SimGrid's topo_parameters for t (torus/mesh: the dimensions in routing
 * order, a mesh embedded as stated above). Same return as slide_topo_format. */
int slide_topo_sim_parameters(const slide_topo *t, char *buf, size_t size);

/* Hosts SimGrid creates (more than t->hosts for an embedded mesh). */
int64_t slide_topo_sim_hosts(const slide_topo *t);

/* SimGrid's host number (radical) of host `host`. Cost O(ndims). */
int64_t slide_topo_sim_host(const slide_topo *t, int32_t host);

#ifdef __cplusplus
}
#endif

#endif /* SLIDE_TOPO_H */
