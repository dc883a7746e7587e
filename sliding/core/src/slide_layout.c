/* Messages and names (statuses, methods, choices), grid / spare parsing and layout arithmetic. */
#include "slide_internal.h"

#include <string.h>

/* Each status once: its name (the enumerator without "SLIDE_") and its message. */
#define STATUS(code, message) [code] = {#code + sizeof "SLIDE_" - 1, message}
static const struct {
    const char *name, *message;
} statuses[] = {
    STATUS(SLIDE_OK, "success"),
    STATUS(SLIDE_EINVAL, "invalid argument (NULL pointer or value out of range)"),
    STATUS(SLIDE_EGRID_SYNTAX, "bad grid string: expected [torus:|mesh:]AxB or AxBxC, e.g. 'mesh:6x6x6'"),
    STATUS(SLIDE_EGRID_DIMS, "grid must have 2 or 3 dimensions"),
    STATUS(SLIDE_EGRID_SIZE, "grid sizes must be >= 1 and the node count at most 16777216 (2^24)"),
    STATUS(SLIDE_ESPARES_SYNTAX, "bad spare layout: expected 'none', 'D:K' or 'D:K,E:K' with D,E in x,y,z, "
                                 "optionally '/M:K' (K spares per block of M node ids), e.g. 'x:1', 'x:1,y:1' "
                                 "or 'z:1/16:1'"),
    STATUS(SLIDE_ESPARES_DIM, "spare dimension repeated, more than two, or not in the grid"),
    STATUS(SLIDE_ESPARES_COUNT, "spare count must be >= 1 and leave at least one non-spare node per dimension; "
                                "a spare set '/M:K' needs 1 <= K <= M and at least one spare node"),
    STATUS(SLIDE_EMETHOD, "unknown method"),
    STATUS(SLIDE_ENODE, "failed node id is outside the grid"),
    STATUS(SLIDE_EDUP, "a node appears twice in the failed list"),
    STATUS(SLIDE_ENOSPARE, "out of spares: no free spare node is left for the failed rank (add spares, or use "
                           "shrink)"),
    STATUS(SLIDE_ELINE, "no free spare left on the failed node's lines (hybrid or simple can use spares "
                        "elsewhere)"),
    STATUS(SLIDE_EPLANE, "no whole usable spare plane left (hybrid or simple can use the remaining spares, "
                         "or add spare planes)"),
    STATUS(SLIDE_ENOSURVIVOR, "every non-spare node has failed: none is left to adopt the ranks"),
    STATUS(SLIDE_EWORKSPACE, "workspace too small or not 8-byte aligned"),
    STATUS(SLIDE_EMAP, "rank-to-node map has an entry outside the grid"),
    STATUS(SLIDE_ETOPO_SYNTAX, "bad topology: use torus:AxB[xC..], mesh:AxB[xC..], ring:N, star:N, fattree:K, "
                               "fattree:L;D,..;U,..;P,.., kary:K,N or dragonfly:G,L;C,L;R,L;N"),
    STATUS(SLIDE_ETOPO_SIZE, "topology too large or with a size of 0: at most 16777216 hosts and 2^31 - 1 links"),
    STATUS(SLIDE_EORDER, "routing order must be a permutation of the topology's dimensions, e.g. xyz or zyx "
                         "(torus and mesh only)"),
    STATUS(SLIDE_ETOPO_FIT, "the grid has more nodes than the topology has hosts"),
    STATUS(SLIDE_EBLOCK, "bad block of ranks per node: expected AxB (2D grid) or AxBxC (3D), sizes >= 1, "
                         "e.g. '2x2x1'"),
    STATUS(SLIDE_EDOMAIN_SHAPE, "bad failure-domain box: expected AxB (2D grid) or AxBxC (3D), each size from 1 "
                                "to the grid's size along that dimension, e.g. '2x2x1'"),
    STATUS(SLIDE_EREDUNDANCY, "bad redundancy policy: expected buddy, parity:G or rs:G,M, e.g. 'parity:4' or "
                              "'rs:8,2'"),
    STATUS(SLIDE_EGROUP, "bad redundancy group: the group size G must be at least 2 and the members a group "
                         "may lose M from 1 to G-1"),
    STATUS(SLIDE_EGROUP_RANKS, "group size larger than the node ranks: choose a group size of at most the "
                               "number of nodes that hold ranks"),
    STATUS(SLIDE_ENOPLACEMENT, "no placement survives the loss of a failure domain: one domain holds too many "
                               "of the nodes that hold ranks for the groups to spread them (give more, smaller "
                               "domains, smaller groups, or rs:G,M to lose more members per group)"),
};
#undef STATUS
#define NSTATUSES (int)(sizeof statuses / sizeof statuses[0])

const char *slide_strerror(int status)
{
    return status < 0 || status >= NSTATUSES ? "unknown status" : statuses[status].message;
}

const char *slide_status_name(int status)
{
    return status < 0 || status >= NSTATUSES ? NULL : statuses[status].name;
}

/* Each method once: its name and what callers need to know of it. */
static const struct {
    const char *name;
    int one_rank_per_node, chooses;
} methods[SLIDE_NMETHODS] = {
    [SLIDE_SIMPLE] = {"simple", 1, 0},   [SLIDE_SLIDE1D] = {"slide1d", 1, 0},
    [SLIDE_SLIDE2D] = {"slide2d", 1, 0}, [SLIDE_HYBRID] = {"hybrid", 1, 0},
    [SLIDE_SHRINK] = {"shrink", 0, 0},   [SLIDE_ROUTED] = {"routed", 1, 1},
};

const char *slide_method_name(int method)
{
    return method < 0 || method >= SLIDE_NMETHODS ? NULL : methods[method].name;
}

int slide_method_one_rank_per_node(int method)
{
    return method < 0 || method >= SLIDE_NMETHODS ? -1 : methods[method].one_rank_per_node;
}

int slide_method_chooses(int method)
{
    return method < 0 || method >= SLIDE_NMETHODS ? -1 : methods[method].chooses;
}

int slide_method_parse(const char *name, slide_method *out)
{
    if (name == NULL || out == NULL)
        return SLIDE_EINVAL;
    for (int m = 0; m < SLIDE_NMETHODS; m++) {
        if (strcmp(name, methods[m].name) == 0) {
            *out = (slide_method)m;
            return SLIDE_OK;
        }
    }
    return SLIDE_EMETHOD;
}

const char *slide_choice_kind_name(int kind)
{
    static const char *const kinds[] = {
        [SLIDE_CHOICE_NONE] = "none",     [SLIDE_CHOICE_BLOCK] = "block", [SLIDE_CHOICE_DIRECT] = "direct",
        [SLIDE_CHOICE_HYBRID] = "hybrid", [SLIDE_CHOICE_CROSS] = "cross", [SLIDE_CHOICE_SURFACE] = "surface",
    };
    return kind < 0 || kind >= (int)(sizeof kinds / sizeof kinds[0]) ? NULL : kinds[kind];
}

/* Parse a decimal number at *p (no sign); advance *p. Returns 0 if no digit,
 * -1 on overflow past INT32_MAX, 1 on success. */
static int parse_uint(const char **p, int64_t *value)
{
    const char *s = *p;
    int64_t v = 0;
    if (*s < '0' || *s > '9')
        return 0;
    while (*s >= '0' && *s <= '9') {
        v = v * 10 + (*s - '0');
        if (v > INT32_MAX) {
            while (*s >= '0' && *s <= '9')
                s++;
            *p = s;
            return -1;
        }
        s++;
    }
    *p = s;
    *value = v;
    return 1;
}

int slide_grid_parse(const char *text, slide_grid *out)
{
    if (text == NULL || out == NULL)
        return SLIDE_EINVAL;
    slide_topo t;
    int rc = slide_topo_parse(text, &t);
    if (rc == SLIDE_ETOPO_SIZE)
        return SLIDE_EGRID_SIZE;
    if (rc != SLIDE_OK || (t.kind != SLIDE_TOPO_TORUS && t.kind != SLIDE_TOPO_MESH))
        return SLIDE_EGRID_SYNTAX;
    if (t.ndims < 2 || t.ndims > 3)
        return SLIDE_EGRID_DIMS;
    slide_grid g = {.ndims = t.ndims, .size = {1, 1, 1}, .periodic = t.kind == SLIDE_TOPO_TORUS};
    for (int d = 0; d < t.ndims; d++)
        g.size[d] = t.size[d];
    *out = g;
    return SLIDE_OK;
}

int slide_spares_parse(const char *text, slide_spares *out)
{
    if (text == NULL || out == NULL)
        return SLIDE_EINVAL;
    slide_spares s = {.ndims = 0, .dim = {-1, -1}, .count = {0, 0}, .block = 0, .per_block = 0};
    if (text[0] == '\0' || strcmp(text, "none") == 0) {
        *out = s;
        return SLIDE_OK;
    }
    const char *p = text;
    for (;;) {
        int d;
        switch (*p) {
        case 'x': d = 0; break;
        case 'y': d = 1; break;
        case 'z': d = 2; break;
        default: return SLIDE_ESPARES_SYNTAX;
        }
        p++;
        if (*p != ':')
            return SLIDE_ESPARES_SYNTAX;
        p++;
        int64_t v = 0;
        int r = parse_uint(&p, &v);
        if (r == 0)
            return SLIDE_ESPARES_SYNTAX;
        if (*p != '\0' && *p != ',' && *p != '/')
            return SLIDE_ESPARES_SYNTAX;
        if (s.ndims == 2)
            return SLIDE_ESPARES_DIM;
        if (s.ndims == 1 && s.dim[0] == d)
            return SLIDE_ESPARES_DIM;
        if (r < 0 || v < 1)
            return SLIDE_ESPARES_COUNT;
        s.dim[s.ndims] = d;
        s.count[s.ndims] = (int32_t)v;
        s.ndims++;
        if (*p == '\0' || *p == '/')
            break;
        p++; /* ',' */
    }
    if (*p == '/') { /* a spare set: "/M:K" */
        int64_t m = 0, k = 0;
        p++;
        int rm = parse_uint(&p, &m);
        if (rm == 0 || *p != ':')
            return SLIDE_ESPARES_SYNTAX;
        p++;
        int rk = parse_uint(&p, &k);
        if (rk == 0 || *p != '\0')
            return SLIDE_ESPARES_SYNTAX;
        if (rm < 0 || rk < 0 || m < 1 || k < 1 || k > m)
            return SLIDE_ESPARES_COUNT;
        s.block = (int32_t)m;
        s.per_block = (int32_t)k;
    }
    *out = s;
    return SLIDE_OK;
}

int slide_layout_init(slide_layout *out, const slide_grid *grid,
                      const slide_spares *spares)
{
    if (out == NULL || grid == NULL || spares == NULL)
        return SLIDE_EINVAL;
    if (grid->ndims != 2 && grid->ndims != 3)
        return SLIDE_EGRID_DIMS;
    if (grid->periodic != 0 && grid->periodic != 1)
        return SLIDE_EINVAL;
    slide_layout l;
    memset(&l, 0, sizeof l);
    l.grid = *grid;
    if (grid->ndims == 2)
        l.grid.size[2] = 1;
    int64_t nodes = 1;
    for (int d = 0; d < SLIDE_MAX_DIMS; d++) {
        if (l.grid.size[d] < 1)
            return SLIDE_EGRID_SIZE;
        nodes *= l.grid.size[d];
        if (nodes > SLIDE_TOPO_MAX_HOSTS)
            return SLIDE_EGRID_SIZE;
    }
    if (spares->ndims < 0 || spares->ndims > 2)
        return SLIDE_ESPARES_DIM;
    if (spares->block < 0 || spares->per_block < 0 || spares->per_block > spares->block ||
        (spares->block > 0 && (spares->per_block < 1 || spares->ndims == 0)))
        return SLIDE_ESPARES_COUNT;
    l.spares.block = spares->block;
    l.spares.per_block = spares->per_block;
    l.spares.ndims = spares->ndims;
    l.spares.dim[0] = l.spares.dim[1] = -1;
    for (int i = 0; i < spares->ndims; i++) {
        int d = spares->dim[i];
        if (d < 0 || d >= grid->ndims || (i == 1 && d == spares->dim[0]))
            return SLIDE_ESPARES_DIM;
        if (spares->count[i] < 1 || spares->count[i] >= l.grid.size[d])
            return SLIDE_ESPARES_COUNT;
        l.spares.dim[i] = d;
        l.spares.count[i] = spares->count[i];
        l.spare_count[d] = spares->count[i];
    }
    int64_t ranks = 1;
    for (int d = 0; d < SLIDE_MAX_DIMS; d++) {
        l.logical[d] = l.grid.size[d] - l.spare_count[d];
        ranks *= l.logical[d];
    }
    l.stride[2] = 1;
    l.stride[1] = l.grid.size[2];
    l.stride[0] = l.grid.size[1] * l.grid.size[2];
    l.nodes = (int32_t)nodes;
    l.ranks = (int32_t)ranks;
    l.spare_nodes = l.nodes - l.ranks;
    if (l.spares.block > 0) {
        l.spare_nodes = 0;
        for (int32_t node = 0; node < l.nodes; node++)
            l.spare_nodes += slide_role_(&l, node) == SLIDE_ROLE_SPARE;
        if (l.spare_nodes == 0)
            return SLIDE_ESPARES_COUNT;
    }
    slide_topo_grid_(&l.net, l.grid.periodic, l.grid.ndims, l.grid.size);
    *out = l;
    return SLIDE_OK;
}

int slide_layout_set_expect(slide_layout *lay, int32_t expect)
{
    if (lay == NULL || expect < 0 || expect > lay->spare_nodes)
        return SLIDE_EINVAL;
    lay->expect = expect;
    return SLIDE_OK;
}

int slide_layout_place(slide_layout *lay, const slide_topo *net)
{
    if (lay == NULL || net == NULL)
        return SLIDE_EINVAL;
    if (net->hosts < lay->nodes)
        return SLIDE_ETOPO_FIT;
    lay->net = *net;
    return SLIDE_OK;
}

void slide_node_coords(const slide_layout *lay, int32_t node,
                       int32_t coords[SLIDE_MAX_DIMS])
{
    int32_t x = node / lay->stride[0];
    int32_t rest = node - x * lay->stride[0];
    int32_t y = rest / lay->stride[1];
    coords[0] = x;
    coords[1] = y;
    coords[2] = rest - y * lay->stride[1];
}

int32_t slide_node_index(const slide_layout *lay,
                         const int32_t coords[SLIDE_MAX_DIMS])
{
    int32_t node = 0;
    for (int d = 0; d < SLIDE_MAX_DIMS; d++) {
        if (coords[d] < 0 || coords[d] >= lay->grid.size[d])
            return -1;
        node += coords[d] * lay->stride[d];
    }
    return node;
}

/* 1 if the node lies in the spare planes. */
static int in_planes(const slide_layout *lay, int32_t node)
{
    int32_t c[3];
    slide_node_coords(lay, node, c);
    return slide_in_planes_c_(lay, c);
}

int slide_role_(const slide_layout *lay, int32_t node)
{
    if (!in_planes(lay, node))
        return SLIDE_ROLE_RANK;
    const int32_t m = lay->spares.block;
    if (m == 0)
        return SLIDE_ROLE_SPARE;
    /* a spare iff fewer than per_block plane nodes above it in its block */
    const int64_t end = ((int64_t)node / m + 1) * m;
    int32_t above = 0;
    for (int64_t id = node + 1; id < end && id < lay->nodes && above < lay->spares.per_block; id++)
        above += in_planes(lay, (int32_t)id);
    return above < lay->spares.per_block ? SLIDE_ROLE_SPARE : SLIDE_ROLE_UNUSED;
}

int slide_node_role(const slide_layout *lay, int32_t node)
{
    if (lay == NULL || node < 0 || node >= lay->nodes)
        return -1;
    return slide_role_(lay, node);
}

int slide_is_spare(const slide_layout *lay, int32_t node)
{
    const int role = slide_node_role(lay, node);
    return role < 0 ? -1 : role == SLIDE_ROLE_SPARE;
}

const char *slide_node_role_name(int role)
{
    static const char *const roles[] = {
        [SLIDE_ROLE_RANK] = "rank", [SLIDE_ROLE_SPARE] = "spare", [SLIDE_ROLE_UNUSED] = "unused"};
    return role < 0 || role >= (int)(sizeof roles / sizeof roles[0]) ? NULL : roles[role];
}

int32_t slide_hops(const slide_layout *lay, int32_t a, int32_t b)
{
    if (a < 0 || b < 0 || a >= lay->nodes || b >= lay->nodes)
        return -1;
    int32_t h = 0;
    for (int d = 0; d < SLIDE_MAX_DIMS; d++)
        h += slide_dist1_(slide_coord_(lay, a, d), slide_coord_(lay, b, d),
                          lay->grid.size[d], lay->grid.periodic);
    return h;
}

void slide_initial_map(const slide_layout *lay, int32_t *rank_to_node)
{
    int32_t r = 0;
    for (int32_t x = 0; x < lay->logical[0]; x++)
        for (int32_t y = 0; y < lay->logical[1]; y++) {
            int32_t base = x * lay->stride[0] + y * lay->stride[1];
            for (int32_t z = 0; z < lay->logical[2]; z++)
                rank_to_node[r++] = base + z;
        }
}

size_t slide_struct_size(int which)
{
    switch (which) {
    case 0: return sizeof(slide_grid);
    case 1: return sizeof(slide_spares);
    case 2: return sizeof(slide_layout);
    case 3: return sizeof(slide_metrics);
    case 4: return sizeof(slide_topo);
    case 5: return sizeof(slide_topo_round_stats);
    case 6: return sizeof(slide_choice);
    case 7: return sizeof(slide_redundancy);
    default: return 0;
    }
}
