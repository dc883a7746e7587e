/* Redundancy across failure domains (slide_core.h, "redundancy across failure
 * domains"): policy parsing, domains as boxes of the grid, groups dealt
 * across domains, and the buddy shift that avoids pairing inside a domain. */
#include "slide_internal.h"

#include <string.h>

#define POLICY_NUMBER_MAX (1 << 30)

/* Parse decimal digits at *p into *value (<= POLICY_NUMBER_MAX); advance *p.
 * Returns 0, or -1 if there is no digit or the number is too large. */
static int policy_number(const char **p, int32_t *value)
{
    const char *s = *p;
    int64_t v = 0;
    if (*s < '0' || *s > '9')
        return -1;
    while (*s >= '0' && *s <= '9') {
        v = v * 10 + (*s++ - '0');
        if (v > POLICY_NUMBER_MAX)
            return -1;
    }
    *p = s;
    *value = (int32_t)v;
    return 0;
}

int slide_redundancy_parse(const char *text, slide_redundancy *out)
{
    if (text == NULL || out == NULL)
        return SLIDE_EINVAL;
    slide_redundancy r = {SLIDE_REDUNDANCY_BUDDY, 2, 1};
    const char *p = text;
    if (strcmp(text, "buddy") == 0) {
        *out = r;
        return SLIDE_OK;
    }
    if (strncmp(p, "parity:", 7) == 0) {
        p += 7;
        r.kind = SLIDE_REDUNDANCY_PARITY;
        if (policy_number(&p, &r.group) != 0 || *p != '\0')
            return SLIDE_EREDUNDANCY;
        r.lose = 1;
    } else if (strncmp(p, "rs:", 3) == 0) {
        p += 3;
        r.kind = SLIDE_REDUNDANCY_RS;
        if (policy_number(&p, &r.group) != 0 || *p++ != ',' || policy_number(&p, &r.lose) != 0 || *p != '\0')
            return SLIDE_EREDUNDANCY;
    } else {
        return SLIDE_EREDUNDANCY;
    }
    if (r.group < 2 || r.lose < 1 || r.lose >= r.group)
        return SLIDE_EGROUP;
    *out = r;
    return SLIDE_OK;
}

const char *slide_redundancy_kind_name(int kind)
{
    static const char *const kinds[] = {
        [SLIDE_REDUNDANCY_BUDDY] = "buddy", [SLIDE_REDUNDANCY_PARITY] = "parity", [SLIDE_REDUNDANCY_RS] = "rs"};
    return kind < 0 || kind >= (int)(sizeof kinds / sizeof kinds[0]) ? NULL : kinds[kind];
}

/* 1 if shape[] is a box of the layout's grid: 1 <= shape[d] <= size[d], and 1 past its dimensions. */
static int shape_fits(const slide_layout *lay, const int32_t shape[SLIDE_MAX_DIMS])
{
    for (int d = 0; d < SLIDE_MAX_DIMS; d++) {
        if (shape[d] < 1 || shape[d] > lay->grid.size[d] || (d >= lay->grid.ndims && shape[d] != 1))
            return 0;
    }
    return 1;
}

int slide_domain_shape_parse(const slide_layout *lay, const char *text, int32_t shape[SLIDE_MAX_DIMS])
{
    if (lay == NULL || text == NULL || shape == NULL)
        return SLIDE_EINVAL;
    int32_t s[SLIDE_MAX_DIMS];
    if (slide_sizes_parse_(text, lay->grid.ndims, lay->nodes, s) != 0 || !shape_fits(lay, s))
        return SLIDE_EDOMAIN_SHAPE;
    memcpy(shape, s, sizeof s);
    return SLIDE_OK;
}

int slide_domains_block(const slide_layout *lay, const int32_t shape[SLIDE_MAX_DIMS],
                        int32_t *domain_of_node, int32_t *ndomains)
{
    if (lay == NULL || shape == NULL || domain_of_node == NULL || ndomains == NULL)
        return SLIDE_EINVAL;
    if (!shape_fits(lay, shape))
        return SLIDE_EDOMAIN_SHAPE;
    int32_t boxes[SLIDE_MAX_DIMS];
    for (int d = 0; d < SLIDE_MAX_DIMS; d++)
        boxes[d] = (lay->grid.size[d] + shape[d] - 1) / shape[d];
    for (int32_t n = 0; n < lay->nodes; n++) {
        int32_t id = 0;
        for (int d = 0; d < SLIDE_MAX_DIMS; d++)
            id = id * boxes[d] + slide_coord_(lay, n, d) / shape[d];
        domain_of_node[n] = id;
    }
    *ndomains = boxes[0] * boxes[1] * boxes[2];
    return SLIDE_OK;
}

/* Checks map[] (entries in 0..nodes-1) and the domains of its nodes (>= 0):
 * SLIDE_OK, SLIDE_EMAP or SLIDE_EINVAL. */
static int check_map_domains(const slide_layout *lay, const int32_t *map, const int32_t *domain_of_node)
{
    for (int32_t r = 0; r < lay->ranks; r++) {
        if (map[r] < 0 || map[r] >= lay->nodes)
            return SLIDE_EMAP;
        if (domain_of_node != NULL && domain_of_node[map[r]] < 0)
            return SLIDE_EINVAL;
    }
    return SLIDE_OK;
}

/* The domain of node rank r's node (the node itself without a domain assignment). */
static inline int32_t domain_of_rank(const int32_t *map, const int32_t *domain_of_node, int32_t r)
{
    return domain_of_node != NULL ? domain_of_node[map[r]] : map[r];
}

/* Order by (key[a], a): 1 if node rank a comes before node rank b. */
static inline int before(const int32_t *key, int32_t a, int32_t b)
{
    return key[a] < key[b] || (key[a] == key[b] && a < b);
}

/* Heap sort order[0..n-1] (node ranks) by (key, node rank), in place. */
static void sort_by_key(int32_t *order, int32_t n, const int32_t *key)
{
    for (int32_t start = n / 2 - 1, end = n; end > 1;) {
        int32_t root;
        if (start >= 0) {
            root = start--; /* building the heap */
        } else {
            end--; /* the largest to the end, then restore the heap on the rest */
            int32_t t = order[0];
            order[0] = order[end];
            order[end] = t;
            root = 0;
        }
        for (;;) {
            int32_t child = 2 * root + 1;
            if (child >= end)
                break;
            if (child + 1 < end && before(key, order[child], order[child + 1]))
                child++;
            if (!before(key, order[root], order[child]))
                break;
            int32_t t = order[root];
            order[root] = order[child];
            order[child] = t;
            root = child;
        }
    }
}

int slide_groups(const slide_layout *lay, const int32_t *map, const int32_t *domain_of_node,
                 int32_t g, int32_t m, int32_t *group_of_rank, int32_t *member_of_rank,
                 int32_t *group_size, int32_t *ngroups)
{
    if (lay == NULL || map == NULL || group_of_rank == NULL || member_of_rank == NULL || group_size == NULL ||
        ngroups == NULL)
        return SLIDE_EINVAL;
    if (g < 2 || m < 1 || m >= g)
        return SLIDE_EGROUP;
    const int32_t ranks = lay->ranks;
    if (g > ranks)
        return SLIDE_EGROUP_RANKS;
    int status = check_map_domains(lay, map, domain_of_node);
    if (status != SLIDE_OK)
        return status;
    const int32_t groups = ranks / g;

    /* group_of_rank holds the sort keys, member_of_rank the order, until the dealing. */
    int32_t *key = group_of_rank, *order = member_of_rank;
    for (int32_t r = 0; r < ranks; r++) {
        key[r] = domain_of_rank(map, domain_of_node, r);
        order[r] = r;
    }
    sort_by_key(order, ranks, key);
    /* A domain's node ranks are consecutive in the order: round-robin puts
     * ceil(run / groups) of them into some group. */
    for (int32_t i = 0; i < ranks;) {
        int32_t j = i + 1;
        while (j < ranks && key[order[j]] == key[order[i]])
            j++;
        if ((int64_t)(j - i) > (int64_t)m * groups)
            return SLIDE_ENOPLACEMENT;
        i = j;
    }
    for (int32_t i = 0; i < ranks; i++)
        group_of_rank[order[i]] = i % groups; /* key[] is read no more */
    for (int32_t k = 0; k < groups; k++)
        group_size[k] = 0;
    for (int32_t r = 0; r < ranks; r++) /* order[] is read no more */
        member_of_rank[r] = group_size[group_of_rank[r]]++;
    *ngroups = groups;
    return SLIDE_OK;
}

/* 1 if no node rank shares a domain with the one h after it (mod ranks). */
static int shift_works(const slide_layout *lay, const int32_t *map, const int32_t *domain_of_node, int32_t h)
{
    const int32_t ranks = lay->ranks;
    for (int32_t r = 0; r < ranks; r++) {
        int32_t buddy = r + h < ranks ? r + h : r + h - ranks;
        if (domain_of_rank(map, domain_of_node, r) == domain_of_rank(map, domain_of_node, buddy))
            return 0;
    }
    return 1;
}

int slide_buddy_shift(const slide_layout *lay, const int32_t *map, const int32_t *domain_of_node,
                      int32_t *shift)
{
    if (lay == NULL || map == NULL || shift == NULL)
        return SLIDE_EINVAL;
    const int32_t ranks = lay->ranks;
    if (ranks < 2)
        return SLIDE_EGROUP_RANKS;
    int status = check_map_domains(lay, map, domain_of_node);
    if (status != SLIDE_OK)
        return status;
    if (shift_works(lay, map, domain_of_node, ranks / 2)) {
        *shift = ranks / 2;
        return SLIDE_OK;
    }
    for (int32_t h = 1; h < ranks; h++) {
        if (h != ranks / 2 && shift_works(lay, map, domain_of_node, h)) {
            *shift = h;
            return SLIDE_OK;
        }
    }
    return SLIDE_ENOPLACEMENT;
}
