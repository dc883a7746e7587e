/* The entry points of the substitution core: slide_map() for every method
 * (the fixed-rule folds of slide_fold.c, routed of slide_routed.c, and shrink,
 * here), slide_map_explain() for routed's decisions, and the workspace they
 * share. The rules are stated in include/slide_core.h. */
#include "slide_internal.h"

#include <string.h>

/* ---- workspace ----------------------------------------------------------- */

size_t slide_map_workspace_bytes(const slide_layout *lay)
{
    if (lay == NULL)
        return 0;
    int64_t words = slide_fold_words_(lay);
    int64_t routed = slide_routed_words_(lay);
    return (size_t)(words > routed ? words : routed) * sizeof(int32_t);
}

/* ---- shrink -------------------------------------------------------------- */

/* Alive non-spare node nearest to node (hops), ties to the lowest id, or -1.
 * Searches shells of growing hop distance. */
static int32_t nearest_survivor(const slide_layout *lay, const int32_t *dead, int32_t node)
{
    int32_t c[3];
    slide_node_coords(lay, node, c);
    const int32_t *n = lay->grid.size;
    const int per = lay->grid.periodic;
    int32_t maxk = 0;
    for (int d = 0; d < SLIDE_MAX_DIMS; d++)
        maxk += per ? n[d] / 2 : n[d] - 1;
    for (int32_t k = 1; k <= maxk; k++) {
        int32_t best = -1;
        int32_t rx = n[0] > 1 ? k : 0;
        for (int32_t dx = -rx; dx <= rx; dx++) {
            int32_t rem = k - (dx < 0 ? -dx : dx);
            int32_t ry = n[1] > 1 ? rem : 0;
            for (int32_t dy = -ry; dy <= ry; dy++) {
                int32_t dz = rem - (dy < 0 ? -dy : dy);
                if (dz != 0 && n[2] == 1)
                    continue;
                for (int sgn = 0; sgn < (dz == 0 ? 1 : 2); sgn++) {
                    int32_t off[3] = {dx, dy, sgn ? -dz : dz};
                    int32_t t[3], ok = 1;
                    for (int d = 0; d < 3 && ok; d++) {
                        t[d] = c[d] + off[d];
                        if (t[d] < 0 || t[d] >= n[d]) {
                            if (!per)
                                ok = 0;
                            else
                                t[d] = ((t[d] % n[d]) + n[d]) % n[d];
                        }
                    }
                    if (!ok || slide_in_planes_c_(lay, t))
                        continue;
                    int32_t id = t[0] * lay->stride[0] + t[1] * lay->stride[1] + t[2];
                    if (!dead[id] && (best < 0 || id < best))
                        best = id;
                }
            }
        }
        if (best >= 0)
            return best;
    }
    return -1;
}

static void shrink_write_map(const slide_layout *lay, const int32_t *dead, int32_t *r2n)
{
    slide_initial_map(lay, r2n);
    for (int32_t r = 0; r < lay->ranks; r++)
        if (dead[r2n[r]])
            r2n[r] = nearest_survivor(lay, dead, r2n[r]);
}

static int map_shrink(const slide_layout *lay, const int32_t *failed,
                      int32_t nfailed, int32_t *r2n, int32_t *w, int32_t *err_index)
{
    int32_t *dead = w;
    memset(dead, 0, (size_t)lay->nodes * sizeof(int32_t));
    int32_t lost = 0;
    for (int32_t i = 0; i < nfailed; i++) {
        int32_t f = failed[i];
        int rc = SLIDE_OK;
        if (f < 0 || f >= lay->nodes) {
            rc = SLIDE_ENODE;
        } else if (dead[f]) {
            rc = SLIDE_EDUP;
        } else if (slide_role_(lay, f) == SLIDE_ROLE_RANK && lost + 1 == lay->ranks) {
            rc = SLIDE_ENOSURVIVOR;
        } else {
            dead[f] = 1;
            if (slide_role_(lay, f) == SLIDE_ROLE_RANK)
                lost++;
        }
        if (rc != SLIDE_OK) {
            if (err_index)
                *err_index = i;
            shrink_write_map(lay, dead, r2n);
            return rc;
        }
    }
    shrink_write_map(lay, dead, r2n);
    return SLIDE_OK;
}

/* ---- entry point --------------------------------------------------------- */

int slide_map(const slide_layout *lay, int method, const int32_t *failed,
              int32_t nfailed, int32_t *rank_to_node, void *work,
              size_t work_bytes, int32_t *err_index)
{
    if (err_index)
        *err_index = -1;
    if (lay == NULL || rank_to_node == NULL || work == NULL || nfailed < 0 ||
        (failed == NULL && nfailed > 0))
        return SLIDE_EINVAL;
    if (method < 0 || method >= SLIDE_NMETHODS)
        return SLIDE_EMETHOD;
    if (work_bytes < slide_map_workspace_bytes(lay) || ((uintptr_t)work % 8) != 0)
        return SLIDE_EWORKSPACE;
    int32_t *w = (int32_t *)work;
    if (method == SLIDE_SHRINK)
        return map_shrink(lay, failed, nfailed, rank_to_node, w, err_index);
    if (method == SLIDE_ROUTED)
        return slide_routed_(lay, failed, nfailed, rank_to_node, NULL, w, err_index);
    slide_fold fold;
    slide_fold_init_(&fold, lay, method, w, rank_to_node);
    for (int32_t i = 0; i < nfailed; i++) {
        int rc = slide_fold_step_(&fold, failed[i]);
        if (rc != SLIDE_OK) {
            if (err_index)
                *err_index = i;
            return rc;
        }
    }
    return SLIDE_OK;
}

int slide_map_explain(const slide_layout *lay, const int32_t *failed, int32_t nfailed,
                      int32_t *rank_to_node, slide_choice *choices, void *work, size_t work_bytes,
                      int32_t *err_index)
{
    if (err_index)
        *err_index = -1;
    if (lay == NULL || rank_to_node == NULL || work == NULL || nfailed < 0 ||
        (failed == NULL && nfailed > 0))
        return SLIDE_EINVAL;
    if (work_bytes < slide_map_workspace_bytes(lay) || ((uintptr_t)work % 8) != 0)
        return SLIDE_EWORKSPACE;
    return slide_routed_(lay, failed, nfailed, rank_to_node, choices, (int32_t *)work, err_index);
}
