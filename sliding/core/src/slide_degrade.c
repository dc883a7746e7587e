/* Running on when spares run out: slide_map_degrade() of slide_core.h. */
#include <string.h>

#include "slide_internal.h"

size_t slide_degrade_workspace_bytes(const slide_layout *lay, int32_t max_guests)
{
    if (lay == NULL || max_guests < 0)
        return 0;
    size_t extra = sizeof(int32_t) * (size_t)lay->nodes                 /* load of each node */
                   + 2 * ((size_t)lay->nodes + (size_t)max_guests); /* dead and listed, nodes then guests */
    return slide_map_workspace_bytes(lay) + ((extra + 7) & ~(size_t)7);
}

int32_t slide_degrade_max_guests(const slide_layout *lay)
{
    return lay ? 2 * lay->nodes : 0;
}

/* Logical coordinates of node rank r. */
static void rank_coords(const slide_layout *lay, int32_t r, int32_t c[SLIDE_MAX_DIMS])
{
    for (int d = SLIDE_MAX_DIMS - 1; d >= 0; d--) {
        c[d] = r % lay->logical[d];
        r /= lay->logical[d];
    }
}

/* The sum of hops from `node` to the hosts of rank r's stencil neighbours
 * that hold a live place (those still waiting for one are left out). */
static int64_t neighbour_hops(const slide_layout *lay, int32_t r, int32_t node, const int32_t *serving,
                              const int32_t *host, const unsigned char *dead)
{
    int32_t c[SLIDE_MAX_DIMS];
    rank_coords(lay, r, c);
    int64_t sum = 0;
    for (int d = 0; d < lay->grid.ndims; d++) {
        for (int s = -1; s <= 1; s += 2) {
            int32_t n[SLIDE_MAX_DIMS] = {c[0], c[1], c[2]};
            n[d] += s;
            if (n[d] < 0 || n[d] >= lay->logical[d]) {
                if (!lay->grid.periodic || lay->logical[d] < 2)
                    continue;
                n[d] = (n[d] + lay->logical[d]) % lay->logical[d];
            }
            int32_t q = (n[0] * lay->logical[1] + n[1]) * lay->logical[2] + n[2];
            if (q == r || dead[serving[q]])
                continue;
            int32_t where = serving[q] < lay->nodes ? serving[q] : host[serving[q] - lay->nodes];
            sum += slide_hops(lay, node, where);
        }
    }
    return sum;
}

/* A new place for rank r: the live node (spare or not, never an unused one)
 * with the fewest ranks, then the fewest hops to r's neighbours, then the
 * lowest id. Returns the node, or -1 when none is alive. */
static int32_t least_loaded(const slide_layout *lay, int32_t r, const int32_t *serving, const int32_t *host,
                            const unsigned char *dead, const int32_t *load)
{
    int32_t best = -1;
    int64_t best_hops = 0;
    for (int32_t node = 0; node < lay->nodes; node++) {
        if (dead[node] || slide_role_(lay, node) == SLIDE_ROLE_UNUSED)
            continue;
        if (best >= 0 && load[node] > load[best])
            continue;
        int64_t hops = neighbour_hops(lay, r, node, serving, host, dead);
        if (best < 0 || load[node] < load[best] || hops < best_hops) {
            best = node;
            best_hops = hops;
        }
    }
    return best;
}

int slide_map_degrade(const slide_layout *lay, int method, const int32_t *failed, int32_t nfailed,
                      int32_t *serving, int32_t *host, int32_t max_guests, int32_t *nguests, void *work,
                      size_t work_bytes, int32_t *err_index)
{
    if (err_index)
        *err_index = -1;
    if (lay == NULL || serving == NULL || nguests == NULL || work == NULL || nfailed < 0 || max_guests < 0 ||
        (failed == NULL && nfailed > 0) || (host == NULL && max_guests > 0))
        return SLIDE_EINVAL;
    if (work_bytes < slide_degrade_workspace_bytes(lay, max_guests) || ((uintptr_t)work % 8) != 0)
        return SLIDE_EWORKSPACE;
    *nguests = 0;
    /* The method's own map as far as it goes: up to the first failure it
     * cannot place, or the whole list. A guest id before that point cannot
     * have been made. */
    int32_t spent = nfailed, index = -1;
    for (int32_t i = 0; i < nfailed; i++) {
        if (failed[i] >= lay->nodes) {
            spent = i;
            break;
        }
    }
    int rc = slide_map(lay, method, failed, spent, serving, work, work_bytes, &index);
    if (rc == SLIDE_ENOSPARE || rc == SLIDE_ELINE || rc == SLIDE_EPLANE) {
        spent = index;
        rc = slide_map(lay, method, failed, spent, serving, work, work_bytes, &index);
    }
    if (rc != SLIDE_OK) {
        if (err_index)
            *err_index = index;
        return rc;
    }
    if (spent == nfailed)
        return SLIDE_OK;
    if (failed[spent] >= lay->nodes) {
        if (err_index)
            *err_index = spent;
        return SLIDE_ENODE;
    }
    /* From there on, one failure at a time: every rank whose processes died
     * (on the failed node, or guests of it) goes to the least loaded live node. */
    int32_t *load = (int32_t *)((char *)work + slide_map_workspace_bytes(lay));
    unsigned char *dead = (unsigned char *)(load + lay->nodes); /* nodes, then guests */
    unsigned char *listed = dead + lay->nodes + max_guests;
    memset(load, 0, sizeof(int32_t) * (size_t)lay->nodes);
    memset(dead, 0, (size_t)lay->nodes + (size_t)max_guests);
    memset(listed, 0, (size_t)lay->nodes + (size_t)max_guests);
    for (int32_t i = 0; i < spent; i++) {
        dead[failed[i]] = 1;
        listed[failed[i]] = 1;
    }
    for (int32_t r = 0; r < lay->ranks; r++)
        load[serving[r]]++;
    for (int32_t i = spent; i < nfailed; i++) {
        int32_t f = failed[i];
        rc = SLIDE_OK;
        if (f < 0 || f >= lay->nodes + *nguests)
            rc = SLIDE_ENODE;
        else if (listed[f])
            rc = SLIDE_EDUP;
        if (rc != SLIDE_OK) {
            if (err_index)
                *err_index = i;
            return rc;
        }
        listed[f] = 1;
        dead[f] = 1;
        for (int32_t g = 0; f < lay->nodes && g < *nguests; g++)
            if (host[g] == f)
                dead[lay->nodes + g] = 1; /* guests die with their host */
        for (int32_t r = 0; r < lay->ranks; r++) {
            if (!dead[serving[r]])
                continue;
            int32_t was = serving[r] < lay->nodes ? serving[r] : host[serving[r] - lay->nodes];
            load[was]--;
            int32_t node = least_loaded(lay, r, serving, host, dead, load);
            if (node < 0 || (load[node] > 0 && *nguests == max_guests)) {
                if (err_index)
                    *err_index = i;
                return node < 0 ? SLIDE_ENOSURVIVOR : SLIDE_ENOSPARE;
            }
            if (load[node] == 0) {
                serving[r] = node; /* a free node: the rank simply moves there */
            } else {
                host[*nguests] = node;
                serving[r] = lay->nodes + (*nguests)++;
            }
            load[node]++;
        }
    }
    return SLIDE_OK;
}
