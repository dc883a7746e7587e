/* The network model: spec parsing, numbering of hosts, switches and links,
 * routing, link loads and the SimGrid view. Rules in include/slide_topo.h. */
#include "slide_internal.h"

#include <stdio.h>
#include <string.h>

/* ---- parsing ------------------------------------------------------------- */

static const char HELP_KINDS[] =
    "use torus:AxB[xC..], mesh:AxB[xC..], ring:N, star:N, fattree:K, "
    "fattree:L;D,..;U,..;P,.., kary:K,N or dragonfly:G,L;C,L;R,L;N";

/* Parse up to `max` decimal integers >= 1 separated by `sep` from s[0..len-1].
 * Returns the count; -1 if malformed (empty item, other character, more than
 * max items); -2 if well-formed but a value is 0 or above INT32_MAX. */
static int parse_list(const char *s, size_t len, char sep, int32_t *out, int max)
{
    int n = 0, range = 0;
    size_t i = 0;
    if (len == 0)
        return -1;
    for (;;) {
        int64_t v = 0;
        size_t start = i;
        while (i < len && s[i] >= '0' && s[i] <= '9') {
            if (v <= INT32_MAX)
                v = v * 10 + (s[i] - '0');
            i++;
        }
        if (i == start || n == max)
            return -1;
        if (v < 1 || v > INT32_MAX)
            range = 1;
        out[n++] = (int32_t)(range ? 1 : v);
        if (i == len)
            return range ? -2 : n;
        if (s[i] != sep)
            return -1;
        i++;
    }
}

/* Split s at ';' into at most `max` fields (start, length); returns the count. */
static int split_fields(const char *s, const char **start, size_t *len, int max)
{
    int n = 0;
    for (;;) {
        const char *end = strchr(s, ';');
        size_t l = end ? (size_t)(end - s) : strlen(s);
        if (n < max) {
            start[n] = s;
            len[n] = l;
        }
        n++;
        if (end == NULL)
            return n;
        s = end + 1;
    }
}

static int kind_is(const char *spec, size_t len, const char *name)
{
    if (strlen(name) != len)
        return 0;
    for (size_t i = 0; i < len; i++) {
        char c = spec[i];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (c != name[i])
            return 0;
    }
    return 1;
}

static int grid_derive(slide_topo *t)
{
    int64_t hosts = 1;
    for (int d = t->ndims - 1; d >= 0; d--) {
        t->stride[d] = (int32_t)hosts;
        hosts *= t->size[d];
        if (hosts > SLIDE_TOPO_MAX_HOSTS)
            return SLIDE_ETOPO_SIZE;
    }
    int32_t longest = 0;
    for (int d = 0; d < t->ndims; d++) {
        t->order[d] = d;
        longest += t->kind == SLIDE_TOPO_MESH ? t->size[d] - 1 : t->size[d] / 2;
    }
    t->hosts = t->vertices = (int32_t)hosts;
    t->links = (int32_t)(hosts * 2 * t->ndims);
    t->route_max = longest;
    return SLIDE_OK;
}

/* Positions per level of a fat-tree: level 0 hosts, level l >= 1 switches. */
static int64_t fattree_level_size(const slide_topo *t, int level)
{
    int64_t n = 1;
    for (int j = 0; j < t->levels; j++)
        n *= j < level ? t->up[j] : t->down[j];
    return n;
}

static int fattree_derive(slide_topo *t)
{
    int64_t vertex = 0, link = 0;
    for (int l = 0; l <= t->levels; l++) {
        int64_t n = fattree_level_size(t, l);
        if (l == 0 && n > SLIDE_TOPO_MAX_HOSTS)
            return SLIDE_ETOPO_SIZE;
        t->level_first[l] = (int32_t)vertex;
        vertex += n;
        if (vertex > INT32_MAX)
            return SLIDE_ETOPO_SIZE;
        if (l < t->levels) {
            t->link_first[l] = (int32_t)link;
            link += n * t->up[l] * t->count[l] * 2;
            if (link > INT32_MAX)
                return SLIDE_ETOPO_SIZE;
        }
    }
    t->level_first[t->levels + 1] = (int32_t)vertex;
    t->link_first[t->levels] = (int32_t)link;
    t->hosts = (int32_t)fattree_level_size(t, 0);
    t->vertices = (int32_t)vertex;
    t->links = (int32_t)link;
    t->route_max = 2 * t->levels;
    return SLIDE_OK;
}

/* Dragonfly links are numbered by kind: host links from link_first[0], green
 * from link_first[1], black from link_first[2], blue from link_first[3]. */
static int dragonfly_derive(slide_topo *t)
{
    const int64_t G = t->dragonfly[0], C = t->dragonfly[2], R = t->dragonfly[4];
    const int64_t hosts = G * C * R * t->dragonfly[6], routers = G * C * R;
    if (hosts > SLIDE_TOPO_MAX_HOSTS)
        return SLIDE_ETOPO_SIZE;
    int64_t base[5] = {0, 2 * hosts, 0, 0, 0};
    base[2] = base[1] + routers * R;
    base[3] = base[2] + routers * C;
    base[4] = base[3] + G * G;
    if (base[4] > INT32_MAX || hosts + routers > INT32_MAX)
        return SLIDE_ETOPO_SIZE;
    for (int i = 0; i < 5; i++)
        t->link_first[i] = (int32_t)base[i];
    t->hosts = (int32_t)hosts;
    t->vertices = (int32_t)(hosts + routers);
    t->links = (int32_t)base[4];
    t->route_max = 7;
    return SLIDE_OK;
}

void slide_topo_grid_(slide_topo *t, int periodic, int ndims, const int32_t *size)
{
    memset(t, 0, sizeof *t);
    t->kind = periodic ? SLIDE_TOPO_TORUS : SLIDE_TOPO_MESH;
    t->ndims = ndims;
    memcpy(t->size, size, sizeof size[0] * (size_t)ndims);
    grid_derive(t);
}

/* The parser proper: status, and *detail says why a spec is malformed. */
static int parse_spec(const char *spec, slide_topo *out, const char **detail)
{
    slide_topo t;
    memset(&t, 0, sizeof t);
    const char *colon = strchr(spec, ':');
    const char *rest = colon ? colon + 1 : spec;
    size_t klen = colon ? (size_t)(colon - spec) : 0;
    size_t rlen = strlen(rest);
    int32_t v[3 * SLIDE_TOPO_MAX_LEVELS];
    *detail = "";

    if (colon == NULL || kind_is(spec, klen, "torus") || kind_is(spec, klen, "mesh")) {
        t.kind = colon != NULL && kind_is(spec, klen, "mesh") ? SLIDE_TOPO_MESH : SLIDE_TOPO_TORUS;
        int n = parse_list(rest, rlen, 'x', t.size, SLIDE_TOPO_MAX_DIMS);
        if (n == -2) {
            *detail = "sizes must be at least 1 and the topology at most 16777216 hosts";
            return SLIDE_ETOPO_SIZE;
        }
        if (n < 0) {
            *detail = colon ? "sizes must be 1 to 6 positive integers separated by 'x', "
                              "e.g. torus:12x12x12"
                            : "missing kind or size: write kind:parameters, e.g. torus:12x12x12, "
                              "ring:8, fattree:4";
            return SLIDE_ETOPO_SYNTAX;
        }
        t.ndims = n;
        int rc = grid_derive(&t);
        if (rc != SLIDE_OK)
            return rc;
    } else if (kind_is(spec, klen, "ring") || kind_is(spec, klen, "star")) {
        int32_t n;
        if (parse_list(rest, rlen, ',', &n, 1) != 1) {
            *detail = "give the host count as one positive integer, e.g. ring:8 or star:16";
            return SLIDE_ETOPO_SYNTAX;
        }
        if (kind_is(spec, klen, "ring")) {
            t.kind = SLIDE_TOPO_RING;
            t.ndims = 1;
            t.size[0] = n;
            int rc = grid_derive(&t);
            if (rc != SLIDE_OK)
                return rc;
        } else {
            t.kind = SLIDE_TOPO_STAR;
            t.levels = 1;
            t.down[0] = n;
            t.up[0] = t.count[0] = 1;
            int rc = fattree_derive(&t);
            if (rc != SLIDE_OK)
                return rc;
        }
    } else if (kind_is(spec, klen, "fattree") || kind_is(spec, klen, "fat-tree") ||
               kind_is(spec, klen, "fat_tree") || kind_is(spec, klen, "kary") ||
               kind_is(spec, klen, "k-ary")) {
        t.kind = SLIDE_TOPO_FATTREE;
        const char *f[4];
        size_t fl[4];
        int nf = split_fields(rest, f, fl, 4);
        if (kind_is(spec, klen, "kary") || kind_is(spec, klen, "k-ary")) {
            if (nf != 1 || parse_list(rest, rlen, ',', v, 2) != 2 || v[0] < 2 ||
                v[1] > SLIDE_TOPO_MAX_LEVELS) {
                *detail = "write kary:K,N with K >= 2 ports down/up and 1 <= N <= 8 levels, "
                          "e.g. kary:4,3";
                return SLIDE_ETOPO_SYNTAX;
            }
            t.levels = v[1];
            for (int l = 0; l < t.levels; l++) {
                t.down[l] = v[0];
                t.up[l] = l == 0 ? 1 : v[0];
                t.count[l] = 1;
            }
        } else if (nf == 1) {
            int32_t k;
            if (parse_list(rest, rlen, ',', &k, 1) != 1 || k % 2 != 0) {
                *detail = "fattree:K needs an even K >= 2 (the ports of a switch), e.g. "
                          "fattree:4, or SimGrid's 4 fields, e.g. fattree:2;16,16;1,16;1,1";
                return SLIDE_ETOPO_SYNTAX;
            }
            t.fattree_k = k;
            t.levels = 3;
            t.down[0] = t.down[1] = k / 2;
            t.down[2] = k;
            t.up[0] = 1;
            t.up[1] = t.up[2] = k / 2;
            t.count[0] = t.count[1] = t.count[2] = 1;
        } else {
            int32_t levels;
            if (nf != 4 || parse_list(f[0], fl[0], ',', &levels, 1) != 1) {
                *detail = "a fat-tree is fattree:K or SimGrid's 4 ';'-separated fields "
                          "(levels;down;up;count), e.g. fattree:2;16,16;1,16;1,1";
                return SLIDE_ETOPO_SYNTAX;
            }
            if (levels > SLIDE_TOPO_MAX_LEVELS) {
                *detail = "a fat-tree has at most 8 levels";
                return SLIDE_ETOPO_SYNTAX;
            }
            int32_t *dst[3] = {t.down, t.up, t.count};
            for (int i = 0; i < 3; i++) {
                if (parse_list(f[i + 1], fl[i + 1], ',', dst[i], SLIDE_TOPO_MAX_LEVELS) != levels) {
                    *detail = "each of down, up and count needs one positive integer per level";
                    return SLIDE_ETOPO_SYNTAX;
                }
            }
            t.levels = levels;
        }
        int rc = fattree_derive(&t);
        if (rc != SLIDE_OK)
            return rc;
    } else if (kind_is(spec, klen, "dragonfly")) {
        t.kind = SLIDE_TOPO_DRAGONFLY;
        const char *f[4];
        size_t fl[4];
        int nf = split_fields(rest, f, fl, 4);
        if (nf != 4 || parse_list(f[0], fl[0], ',', v, 2) != 2 ||
            parse_list(f[1], fl[1], ',', v + 2, 2) != 2 ||
            parse_list(f[2], fl[2], ',', v + 4, 2) != 2 || parse_list(f[3], fl[3], ',', v + 6, 1) != 1) {
            *detail = "a dragonfly is groups,links;chassis,links;routers,links;hosts "
                      "(SimGrid DRAGONFLY), e.g. dragonfly:4,1;2,1;4,1;2";
            return SLIDE_ETOPO_SYNTAX;
        }
        if (v[0] > v[4]) {
            *detail = "SimGrid's dragonfly links group i through router i of each group, so it "
                      "needs groups <= routers per chassis";
            return SLIDE_ETOPO_SYNTAX;
        }
        memcpy(t.dragonfly, v, sizeof t.dragonfly);
        int rc = dragonfly_derive(&t);
        if (rc != SLIDE_OK)
            return rc;
    } else {
        *detail = HELP_KINDS;
        return SLIDE_ETOPO_SYNTAX;
    }
    *out = t;
    return SLIDE_OK;
}

int slide_topo_parse(const char *spec, slide_topo *out)
{
    if (spec == NULL || out == NULL)
        return SLIDE_EINVAL;
    const char *detail;
    return parse_spec(spec, out, &detail);
}

const char *slide_topo_parse_detail(const char *spec)
{
    if (spec == NULL)
        return "no spec";
    slide_topo t;
    const char *detail;
    int rc = parse_spec(spec, &t, &detail);
    if (rc == SLIDE_ETOPO_SIZE && detail[0] == '\0')
        return "more than 16777216 hosts or 2^31 - 1 links";
    return detail;
}

static int is_grid_kind(const slide_topo *t)
{
    return t->kind == SLIDE_TOPO_TORUS || t->kind == SLIDE_TOPO_MESH || t->kind == SLIDE_TOPO_RING;
}

static int is_periodic(const slide_topo *t)
{
    return t->kind != SLIDE_TOPO_MESH;
}

int slide_topo_set_order(slide_topo *t, const char *order)
{
    if (t == NULL)
        return SLIDE_EINVAL;
    if (order == NULL || order[0] == '\0') {
        for (int d = 0; d < t->ndims; d++)
            t->order[d] = d;
        return SLIDE_OK;
    }
    if (!is_grid_kind(t) || (int)strlen(order) != t->ndims)
        return SLIDE_EORDER;
    int32_t out[SLIDE_TOPO_MAX_DIMS];
    int seen = 0;
    for (int k = 0; k < t->ndims; k++) {
        char c = order[k];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'x' && c <= 'z' && t->ndims <= 3 ? c - 'x' : -1;
        if (d < 0 || d >= t->ndims || (seen & (1 << d)))
            return SLIDE_EORDER;
        seen |= 1 << d;
        out[k] = d;
    }
    memcpy(t->order, out, sizeof out[0] * (size_t)t->ndims);
    return SLIDE_OK;
}

/* snprintf-style appending: *used grows by what was wanted, buf stays
 * NUL-terminated within size. */
static void append(char *buf, size_t size, int *used, const char *fmt, int32_t value)
{
    size_t at = (size_t)*used < size ? (size_t)*used : size;
    int n = snprintf(size > at ? buf + at : NULL, size > at ? size - at : 0, fmt, value);
    if (n > 0)
        *used += n;
}

static void append_list(char *buf, size_t size, int *used, const int32_t *v, int n, const char *sep)
{
    for (int i = 0; i < n; i++) {
        append(buf, size, used, i ? sep : "", 0);
        append(buf, size, used, "%d", v[i]);
    }
}

/* A fat-tree's SimGrid parameters: "L;down,..;up,..;count,..". */
static void append_fattree(char *buf, size_t size, int *used, const slide_topo *t)
{
    append(buf, size, used, "%d;", t->levels);
    append_list(buf, size, used, t->down, t->levels, ",");
    append(buf, size, used, ";", 0);
    append_list(buf, size, used, t->up, t->levels, ",");
    append(buf, size, used, ";", 0);
    append_list(buf, size, used, t->count, t->levels, ",");
}

int slide_topo_format(const slide_topo *t, char *buf, size_t size)
{
    int used = 0;
    if (size > 0)
        buf[0] = '\0';
    switch (t->kind) {
    case SLIDE_TOPO_TORUS:
    case SLIDE_TOPO_MESH:
        append(buf, size, &used, t->kind == SLIDE_TOPO_MESH ? "mesh:" : "torus:", 0);
        append_list(buf, size, &used, t->size, t->ndims, "x");
        break;
    case SLIDE_TOPO_RING:
        append(buf, size, &used, "ring:%d", t->size[0]);
        break;
    case SLIDE_TOPO_STAR:
        append(buf, size, &used, "star:%d", t->down[0]);
        break;
    case SLIDE_TOPO_FATTREE:
        if (t->fattree_k) {
            append(buf, size, &used, "fattree:%d", t->fattree_k);
            break;
        }
        append(buf, size, &used, "fattree:", 0);
        append_fattree(buf, size, &used, t);
        break;
    default:
        append(buf, size, &used, "dragonfly:", 0);
        used += slide_topo_sim_parameters(t, buf && (size_t)used < size ? buf + used : NULL,
                                          (size_t)used < size ? size - (size_t)used : 0);
        break;
    }
    return used;
}

int slide_topo_format_order(const slide_topo *t, char *buf, size_t size)
{
    int used = 0;
    if (size > 0)
        buf[0] = '\0';
    if (!is_grid_kind(t))
        return 0;
    for (int k = 0; k < t->ndims; k++) {
        char name[2] = {(char)(t->ndims <= 3 ? 'x' + t->order[k] : '0' + t->order[k]), '\0'};
        append(buf, size, &used, name, 0);
    }
    return used;
}

/* ---- hosts and links ------------------------------------------------------ */

void slide_topo_coords(const slide_topo *t, int32_t host, int32_t *coords)
{
    for (int d = 0; d < t->ndims; d++)
        coords[d] = (host / t->stride[d]) % t->size[d];
}

/* Fat-tree label of (level, position): digit j counts parents below `level`
 * and children from it on, first digit fastest, as SimGrid labels nodes. */
static void ft_label(const slide_topo *t, int level, int64_t pos, int32_t *label)
{
    for (int j = 0; j < t->levels; j++) {
        int32_t radix = j < level ? t->up[j] : t->down[j];
        label[j] = (int32_t)(pos % radix);
        pos /= radix;
    }
}

static int64_t ft_position(const slide_topo *t, int level, const int32_t *label)
{
    int64_t pos = 0, mult = 1;
    for (int j = 0; j < t->levels; j++) {
        pos += label[j] * mult;
        mult *= j < level ? t->up[j] : t->down[j];
    }
    return pos;
}

static int ft_level_of(const slide_topo *t, int32_t vertex)
{
    int l = 0;
    while (vertex >= t->level_first[l + 1])
        l++;
    return l;
}

/* Dragonfly router vertex of (group, chassis, router). */
static int32_t df_router(const slide_topo *t, int32_t g, int32_t c, int32_t r)
{
    return t->hosts + (g * t->dragonfly[2] + c) * t->dragonfly[4] + r;
}

int slide_topo_link(const slide_topo *t, int32_t link, int32_t *tail, int32_t *head,
                    int32_t *dim, int32_t *capacity)
{
    if (t == NULL || link < 0 || link >= t->links)
        return SLIDE_LINK_NONE;
    int32_t a, b, k = 0, cap = 1;
    int kind;
    if (is_grid_kind(t)) {
        const int per = 2 * t->ndims;
        a = link / per;
        int d = (link % per) / 2, minus = link % 2;
        int32_t n = t->size[d], c = (a / t->stride[d]) % n;
        if (n == 1 || (!is_periodic(t) && (minus ? c == 0 : c == n - 1)) ||
            (n == 2 && c != minus))
            return SLIDE_LINK_NONE;
        int32_t c2 = minus ? (c == 0 ? n - 1 : c - 1) : (c == n - 1 ? 0 : c + 1);
        b = a + (c2 - c) * t->stride[d];
        k = d;
        kind = SLIDE_LINK_DIM;
    } else if (t->kind == SLIDE_TOPO_FATTREE || t->kind == SLIDE_TOPO_STAR) {
        int l = 0;
        while (link >= t->link_first[l + 1])
            l++;
        int64_t rel = link - t->link_first[l], ports = (int64_t)t->up[l] * t->count[l];
        int64_t pos = rel / 2 / ports, port = rel / 2 % ports;
        int32_t label[SLIDE_TOPO_MAX_LEVELS];
        ft_label(t, l, pos, label);
        int32_t child = t->level_first[l] + (int32_t)pos;
        label[l] = (int32_t)(port % t->up[l]);
        int32_t parent = t->level_first[l + 1] + (int32_t)ft_position(t, l + 1, label);
        int down = (int)(rel % 2);
        a = down ? parent : child;
        b = down ? child : parent;
        k = l;
        kind = down ? SLIDE_LINK_DOWN : SLIDE_LINK_UP;
    } else {
        const int32_t *base = t->link_first;
        const int32_t C = t->dragonfly[2], R = t->dragonfly[4], G = t->dragonfly[0];
        if (link < base[1]) {
            int32_t host = link / 2, router = t->hosts + host / t->dragonfly[6];
            a = link % 2 ? router : host;
            b = link % 2 ? host : router;
            kind = SLIDE_LINK_HOST;
        } else if (link < base[2]) {
            int32_t rho = (int32_t)((link - base[1]) / R), r2 = (int32_t)((link - base[1]) % R);
            if (rho % R == r2)
                return SLIDE_LINK_NONE;
            a = t->hosts + rho;
            b = t->hosts + rho - rho % R + r2;
            kind = SLIDE_LINK_GREEN;
            cap = t->dragonfly[5];
        } else if (link < base[3]) {
            int32_t rho = (int32_t)((link - base[2]) / C), c2 = (int32_t)((link - base[2]) % C);
            int32_t c = rho / R % C;
            if (c == c2)
                return SLIDE_LINK_NONE;
            a = t->hosts + rho;
            b = a + (c2 - c) * R;
            kind = SLIDE_LINK_BLACK;
            cap = t->dragonfly[3];
        } else {
            int32_t g = (int32_t)((link - base[3]) / G), g2 = (int32_t)((link - base[3]) % G);
            if (g == g2)
                return SLIDE_LINK_NONE;
            a = df_router(t, g, 0, g2);
            b = df_router(t, g2, 0, g);
            kind = SLIDE_LINK_BLUE;
            cap = t->dragonfly[1];
        }
    }
    if (tail)
        *tail = a;
    if (head)
        *head = b;
    if (dim)
        *dim = k;
    if (capacity)
        *capacity = cap;
    return kind;
}

/* ---- routing --------------------------------------------------------------- */

/* What a route walk does with each link: count it, store it while there is
 * room, add `delta` to its load, and track the largest load / capacity. */
typedef struct route_out {
    const slide_topo *t;
    int32_t *links;
    int32_t cap;
    int32_t n;
    uint32_t *load;
    int delta;
    const uint32_t *seen;
    double worst;
} route_out;

static int32_t link_capacity(const slide_topo *t, int32_t link)
{
    if (t->kind != SLIDE_TOPO_DRAGONFLY || link < t->link_first[1])
        return 1;
    if (link < t->link_first[2])
        return t->dragonfly[5];
    return link < t->link_first[3] ? t->dragonfly[3] : t->dragonfly[1];
}

static void put(route_out *r, int32_t link)
{
    if (r->links != NULL && r->n < r->cap)
        r->links[r->n] = link;
    if (r->load != NULL)
        r->load[link] += (uint32_t)r->delta;
    if (r->seen != NULL) {
        double w = (double)r->seen[link] / link_capacity(r->t, link);
        if (w > r->worst)
            r->worst = w;
    }
    r->n++;
}

static void grid_route(const slide_topo *t, int32_t a, int32_t b, route_out *r)
{
    const int per = 2 * t->ndims;
    int32_t cur = a;
    for (int k = 0; k < t->ndims; k++) {
        const int d = t->order[k];
        const int32_t n = t->size[d], stride = t->stride[d];
        const int32_t my = (a / stride) % n, target = (b / stride) % n;
        if (my == target)
            continue;
        int plus;
        if (!is_periodic(t)) {
            plus = target > my;
        } else {
            /* SimGrid's rule: the shorter way; on a tie +, except from n/2 */
            const int32_t half = n / 2;
            plus = (target > my && target <= my + half) || (my > half && (my + half) % n >= target);
        }
        for (int32_t c = my; c != target;) {
            put(r, cur * per + 2 * d + !plus);
            int32_t c2 = plus ? (c == n - 1 ? 0 : c + 1) : (c == 0 ? n - 1 : c - 1);
            cur += (c2 - c) * stride;
            c = c2;
        }
    }
}

static void fattree_route(const slide_topo *t, int32_t from, int32_t b, route_out *r)
{
    int level = ft_level_of(t, from);
    int64_t pos = from - t->level_first[level];
    const int64_t source = level == 0 ? pos : 0; /* picks the parallel link downwards */
    int32_t label[SLIDE_TOPO_MAX_LEVELS], target[SLIDE_TOPO_MAX_LEVELS];
    ft_label(t, level, pos, label);
    ft_label(t, 0, b, target);
    for (;;) { /* up until the subtree holds the target */
        int above = level > 0;
        for (int i = level; above && i < t->levels; i++)
            above = label[i] == target[i];
        if (above)
            break;
        int64_t d = b; /* d-mod-k over the parents (SimGrid 3.32 divides by parents only) */
        for (int i = 0; i < level; i++)
            d /= t->up[i];
        const int64_t ports = (int64_t)t->up[level] * t->count[level];
        const int64_t port = d % ports;
        put(r, t->link_first[level] + (int32_t)((pos * ports + port) * 2));
        label[level] = (int32_t)(port % t->up[level]);
        level++;
        pos = ft_position(t, level, label);
    }
    /* Down, walking the children's ports as SimGrid does: from the first port
     * of parallel link (source mod links), the first port leading to the
     * target's digit; after a step the walk goes on from the next port number
     * at the level below, and starts again from a switch only when it ran out
     * of ports. Child port i is digit i mod children over parallel link
     * i div children. */
    while (level > 0) {
        int64_t i = (source % t->count[level - 1]) * t->down[level - 1];
        while (level > 0 && i < (int64_t)t->down[level - 1] * t->count[level - 1]) {
            const int l = level - 1;
            if (i % t->down[l] == target[l]) {
                const int64_t ports = (int64_t)t->up[l] * t->count[l];
                const int64_t port = label[l] + (i / t->down[l]) * t->up[l];
                label[l] = target[l];
                level = l;
                pos = ft_position(t, level, label);
                put(r, t->link_first[l] + (int32_t)((pos * ports + port) * 2 + 1));
            }
            i++;
        }
    }
}

static void dragonfly_route(const slide_topo *t, int32_t a, int32_t b, route_out *r)
{
    const int32_t *base = t->link_first;
    const int32_t N = t->dragonfly[6], R = t->dragonfly[4], C = t->dragonfly[2];
    const int32_t G = t->dragonfly[0];
    /* coordinates (group, chassis, router) of both ends */
    const int32_t sg = a / N / R / C, sc = a / N / R % C, sr = a / N % R;
    const int32_t tg = b / N / R / C, tc = b / N / R % C, tr = b / N % R;
#define RHO(g, c, rr) (((g) * C + (c)) * R + (rr))
#define GREEN(g, c, rr, r2) (base[1] + RHO(g, c, rr) * R + (r2))
#define BLACK(g, c, rr, c2) (base[2] + RHO(g, c, rr) * C + (c2))
    put(r, 2 * a);
    int32_t g = sg, c = sc, rr = sr;
    if (tg != sg || tc != sc || tr != sr) {
        if (tg != sg) {
            if (rr != tg) {
                put(r, GREEN(g, c, rr, tg));
                rr = tg;
            }
            if (c != 0) {
                put(r, BLACK(g, c, rr, 0));
                c = 0;
            }
            put(r, base[3] + sg * G + tg);
            g = tg;
            c = 0;
            rr = sg;
        }
        if (tr != rr) {
            put(r, GREEN(g, c, rr, tr));
            c = 0; /* as SimGrid: it goes on from chassis 0 of the group */
            rr = tr;
        }
        if (tc != c)
            put(r, BLACK(g, c, rr, tc));
    }
    put(r, 2 * b + 1);
#undef RHO
#undef GREEN
#undef BLACK
}

/* Walk the route from vertex `from` to host `to` through r; -1 if there is
 * no such route. */
static int walk(const slide_topo *t, int32_t from, int32_t to, route_out *r)
{
    if (from < 0 || from >= t->vertices || to < 0 || to >= t->hosts)
        return -1;
    if (from == to)
        return 0;
    if (is_grid_kind(t)) {
        grid_route(t, from, to, r);
    } else if (t->kind == SLIDE_TOPO_DRAGONFLY) {
        if (from >= t->hosts)
            return -1;
        dragonfly_route(t, from, to, r);
    } else {
        fattree_route(t, from, to, r);
    }
    return 0;
}

int32_t slide_topo_route(const slide_topo *t, int32_t from, int32_t to, int32_t *links, int32_t cap)
{
    if (t == NULL || cap < 0)
        return -1;
    route_out r = {.t = t, .links = links, .cap = cap};
    if (walk(t, from, to, &r) != 0)
        return -1;
    return links != NULL && r.n > cap ? -2 : r.n;
}

int32_t slide_topo_hops(const slide_topo *t, int32_t a, int32_t b)
{
    if (t == NULL || a < 0 || b < 0 || a >= t->hosts || b >= t->hosts)
        return -1;
    if (!is_grid_kind(t))
        return slide_topo_route(t, a, b, NULL, 0);
    int32_t h = 0;
    for (int d = 0; d < t->ndims; d++)
        h += slide_dist1_((a / t->stride[d]) % t->size[d], (b / t->stride[d]) % t->size[d],
                          t->size[d], is_periodic(t));
    return h;
}

int32_t slide_topo_add_route(const slide_topo *t, uint32_t *load, int32_t a, int32_t b, int delta)
{
    if (t == NULL || load == NULL || a < 0 || a >= t->hosts)
        return -1;
    route_out r = {.t = t, .load = load, .delta = delta};
    return walk(t, a, b, &r) == 0 ? r.n : -1;
}

int slide_topo_round(const slide_topo *t, const int32_t *src_hosts, const int32_t *dst_hosts,
                     int64_t n, uint32_t *load, int32_t *hops, double *worst,
                     slide_topo_round_stats *stats)
{
    if (t == NULL || load == NULL || n < 0 || (n > 0 && (src_hosts == NULL || dst_hosts == NULL)))
        return SLIDE_EINVAL;
    for (int64_t i = 0; i < n; i++)
        if (src_hosts[i] < 0 || src_hosts[i] >= t->hosts || dst_hosts[i] < 0 ||
            dst_hosts[i] >= t->hosts)
            return SLIDE_ENODE;
    memset(load, 0, sizeof *load * (size_t)t->links);
    slide_topo_round_stats s;
    memset(&s, 0, sizeof s);
    s.messages = n;
    for (int64_t i = 0; i < n; i++) {
        route_out r = {.t = t, .load = load, .delta = 1};
        walk(t, src_hosts[i], dst_hosts[i], &r);
        s.hops_sum += r.n;
        if (r.n > s.hops_max)
            s.hops_max = r.n;
        if (hops != NULL)
            hops[i] = r.n;
    }
    if (worst != NULL) {
        for (int64_t i = 0; i < n; i++) {
            route_out r = {.t = t, .seen = load};
            walk(t, src_hosts[i], dst_hosts[i], &r);
            worst[i] = r.worst;
        }
    }
    for (int32_t l = 0; l < t->links; l++) {
        if (load[l] >= 1)
            s.links_used++;
        if (load[l] > 1)
            s.links_overloaded++;
        if ((int32_t)load[l] > s.load_max)
            s.load_max = (int32_t)load[l];
    }
    if (stats != NULL)
        *stats = s;
    return SLIDE_OK;
}

/* ---- SimGrid ---------------------------------------------------------------- */

const char *slide_topo_sim_kind(const slide_topo *t)
{
    if (is_grid_kind(t))
        return "TORUS";
    return t->kind == SLIDE_TOPO_DRAGONFLY ? "DRAGONFLY" : "FAT_TREE";
}

/* Size SimGrid's torus gets for dimension d: a mesh of n >= 3 is embedded in
 * a ring of 2n - 1 positions, so that no shortest route between used
 * positions wraps. */
static int32_t sim_size(const slide_topo *t, int d)
{
    return !is_periodic(t) && t->size[d] >= 3 ? 2 * t->size[d] - 1 : t->size[d];
}

int slide_topo_sim_parameters(const slide_topo *t, char *buf, size_t size)
{
    int used = 0;
    if (size > 0)
        buf[0] = '\0';
    if (is_grid_kind(t)) {
        for (int k = 0; k < t->ndims; k++)
            append(buf, size, &used, k ? ",%d" : "%d", sim_size(t, t->order[k]));
    } else if (t->kind == SLIDE_TOPO_DRAGONFLY) {
        const int32_t *v = t->dragonfly;
        append(buf, size, &used, "%d", v[0]);
        append(buf, size, &used, ",%d;", v[1]);
        append(buf, size, &used, "%d", v[2]);
        append(buf, size, &used, ",%d;", v[3]);
        append(buf, size, &used, "%d", v[4]);
        append(buf, size, &used, ",%d;", v[5]);
        append(buf, size, &used, "%d", v[6]);
    } else {
        append_fattree(buf, size, &used, t);
    }
    return used;
}

int64_t slide_topo_sim_hosts(const slide_topo *t)
{
    if (!is_grid_kind(t))
        return t->hosts;
    int64_t n = 1;
    for (int d = 0; d < t->ndims; d++)
        n *= sim_size(t, d);
    return n;
}

int64_t slide_topo_sim_host(const slide_topo *t, int32_t host)
{
    if (!is_grid_kind(t))
        return host;
    /* SimGrid numbers its first dimension fastest; its first dimension is the
     * first one routed. */
    int64_t id = 0, mult = 1;
    for (int k = 0; k < t->ndims; k++) {
        const int d = t->order[k];
        id += (int64_t)((host / t->stride[d]) % t->size[d]) * mult;
        mult *= sim_size(t, d);
    }
    return id;
}
