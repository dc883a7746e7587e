/*
 * sliding_checkpoint.c -- checkpoints in memory: this worker's own copy and
 * its redundancy, taken two-phase (pending copies, committed when every
 * worker agrees), and the state moves of a recovery.
 *
 * Redundancy policies (SLIDING_INFO_REDUNDANCY): buddy, a full copy of each
 * worker's checkpoint on the node rank a shift away; parity:G and rs:G,M,
 * the node ranks in groups (slide_groups, across failure domains) whose
 * members keep erasure-coded parity of one another's checkpoints in stripes
 * (sliding_erasure.h, ISA-L). Each lane of a node works with the same lane
 * of the others: the groups are groups of node ranks.
 */
#include "sliding_internal.h"

#include <mpi-ext.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sliding_erasure.h"
#include "sliding_file.h"

static int groups_of(sliding_t *s, const int32_t *map);

static void pack(const sliding_t *s, char *out)
{
    for (int i = 0; i < s->nbufs; i++) {
        memcpy(out, s->bufs[i], s->sizes[i]);
        out += s->sizes[i];
    }
}

static void unpack(const sliding_t *s, const char *in)
{
    for (int i = 0; i < s->nbufs; i++) {
        memcpy(s->bufs[i], in, s->sizes[i]);
        in += s->sizes[i];
    }
}

/* ---- the policy ------------------------------------------------------- */

/* The policy `redundancy` with the failure domains of the coordinate file
 * (file_domains, by grid node; NULL if it names none) or of the box shape
 * `domains` ("": none), checked on the first map. One of the two at most. */
int checkpoint_policy(sliding_t *s, const char *redundancy, const char *domains, const int32_t *file_domains)
{
    const slide_layout *lay = &s->layout;
    if (slide_redundancy_parse(redundancy[0] ? redundancy : "buddy", &s->redundancy) != SLIDE_OK ||
        (domains[0] && file_domains)) {
        return SLIDING_ERR_REDUNDANCY;
    }
    if (file_domains) {
        s->domain_of_node = malloc(sizeof(int32_t) * (size_t)lay->nodes);
        if (!s->domain_of_node) {
            return SLIDING_ERR_NOMEM;
        }
        memcpy(s->domain_of_node, file_domains, sizeof(int32_t) * (size_t)lay->nodes);
    } else if (domains[0]) {
        int32_t shape[SLIDE_MAX_DIMS], ndomains;
        s->domain_of_node = malloc(sizeof(int32_t) * (size_t)lay->nodes);
        if (!s->domain_of_node) {
            return SLIDING_ERR_NOMEM;
        }
        if (slide_domain_shape_parse(lay, domains, shape) != SLIDE_OK ||
            slide_domains_block(lay, shape, s->domain_of_node, &ndomains) != SLIDE_OK) {
            return SLIDING_ERR_REDUNDANCY;
        }
    }
    size_t n = (size_t)lay->ranks;
    s->group_of_rank = malloc(sizeof(int32_t) * n);
    s->member_of_rank = malloc(sizeof(int32_t) * n);
    s->group_size = malloc(sizeof(int32_t) * n);
    s->rank_by_member = malloc(sizeof(int32_t) * n);
    s->group_first = malloc(sizeof(int32_t) * (n + 1));
    if (!s->group_of_rank || !s->member_of_rank || !s->group_size || !s->rank_by_member || !s->group_first) {
        return SLIDING_ERR_NOMEM;
    }
    if (s->redundancy.kind == SLIDE_REDUNDANCY_BUDDY) {
        /* Today's pairing without domains; with them it must exist for the first map. */
        int32_t shift;
        if (s->domain_of_node && lay->ranks > 1 &&
            slide_buddy_shift(lay, placed_map(s, s->map), s->domain_of_node, &shift) != SLIDE_OK) {
            return SLIDING_ERR_REDUNDANCY;
        }
        return SLIDING_OK;
    }
    /* Group sizes run from G to 2G - 1 (slide_groups), at most the node
     * ranks; ISA-L's code words hold 255 chunks. */
    s->max_group = 2 * s->redundancy.group - 1 < lay->ranks ? 2 * s->redundancy.group - 1 : lay->ranks;
    if (2 * s->redundancy.group - 1 > SLIDING_CODE_MAX_CHUNKS || groups_of(s, s->map) != SLIDE_OK) {
        return SLIDING_ERR_REDUNDANCY;
    }
    s->codes = calloc((size_t)s->max_group + 1, sizeof *s->codes);
    s->requests = malloc(sizeof(MPI_Request) * (size_t)(4 + 3 * s->max_group * s->max_group));
    return s->codes && s->requests ? SLIDING_OK : SLIDING_ERR_NOMEM;
}

void checkpoint_free(sliding_t *s)
{
    free(s->own.data);
    free(s->buddy.data);
    free(s->own_pending.data);
    free(s->buddy_pending.data);
    free(s->scratch);
    free(s->parity);
    free(s->parity_pending);
    free(s->erasure_scratch);
    for (int g = 0; s->codes && g <= s->max_group; g++) {
        sliding_code_free(s->codes[g]);
    }
    free(s->codes);
    free(s->requests);
    sliding_file_free(s->file); /* waits for a write still running */
    free(s->file_dir);
    free(s->domain_of_node);
    free(s->group_of_rank);
    free(s->member_of_rank);
    free(s->group_size);
    free(s->rank_by_member);
    free(s->group_first);
}

static int erasure(const sliding_t *s)
{
    return s->redundancy.kind != SLIDE_REDUNDANCY_BUDDY;
}

/* The groups of `map` into s->group_of_rank, ... (slide_groups), with each
 * group's node ranks by member: rank_by_member[group_first[grp] + member].
 * Slides can crowd a domain (ranks moved onto the spares of one box) until no
 * placement survives its loss: then the groups are drawn as if every node
 * were its own domain, which still survives any M nodes of a group (as
 * buddy_shift_for falls back). Every process decides alike, from the map. */
static int groups_of(sliding_t *s, const int32_t *map)
{
    map = placed_map(s, map); /* guests are where their host is */
    int rc = slide_groups(&s->layout, map, s->domain_of_node, s->redundancy.group, s->redundancy.lose,
                          s->group_of_rank, s->member_of_rank, s->group_size, &s->ngroups);
    if (rc == SLIDE_ENOPLACEMENT && s->started) {
        rc = slide_groups(&s->layout, map, NULL, s->redundancy.group, s->redundancy.lose, s->group_of_rank,
                          s->member_of_rank, s->group_size, &s->ngroups);
    }
    if (rc != SLIDE_OK) {
        return rc;
    }
    s->group_first[0] = 0;
    for (int32_t grp = 0; grp < s->ngroups; grp++) {
        s->group_first[grp + 1] = s->group_first[grp] + s->group_size[grp];
    }
    for (int32_t r = 0; r < s->layout.ranks; r++) {
        s->rank_by_member[s->group_first[s->group_of_rank[r]] + s->member_of_rank[r]] = r;
    }
    return SLIDE_OK;
}

/* The erasure code of a group of `size` members (made when first used). */
static const sliding_code *code_of(sliding_t *s, int size)
{
    if (!s->codes[size]) {
        sliding_code_new(size - s->redundancy.lose, s->redundancy.lose, &s->codes[size]);
    }
    return s->codes[size];
}

/* Chunk bytes of a group of `size` members: the checkpoint cut in size - M. */
static size_t chunk_of(const sliding_t *s, int size)
{
    size_t chunk = 0;
    sliding_stripe_chunk_bytes(s->total_bytes, size - s->redundancy.lose, &chunk);
    return chunk;
}

/* Node rank r's buddy (the node rank that keeps its copy) under a shift. */
static int buddy_at(const sliding_t *s, int r, int32_t shift)
{
    return (r + shift) % s->layout.ranks;
}

/* The shift of the buddy pairing for `map`: half the node ranks, or with
 * domains the one slide_buddy_shift finds (half again if a slide left none). */
static int32_t buddy_shift_for(sliding_t *s, const int32_t *map)
{
    map = placed_map(s, map);
    int32_t shift = s->layout.ranks / 2;
    if (s->domain_of_node && s->layout.ranks > 1 &&
        slide_buddy_shift(&s->layout, map, s->domain_of_node, &shift) != SLIDE_OK) {
        shift = s->layout.ranks / 2;
    }
    return shift;
}

void checkpoint_commit(sliding_t *s)
{
    copy_t own = s->own, buddy = s->buddy;
    s->own = s->own_pending;
    s->buddy = s->buddy_pending;
    s->own_pending = own;
    s->buddy_pending = buddy;
    s->own_pending.rank = s->buddy_pending.rank = -1;
    char *parity = s->parity;
    s->parity = s->parity_pending;
    s->parity_pending = parity;
}

/* ---- the file level ---------------------------------------------------- */

/* The manifest's description of this run: a resumed job must match it. */
static sliding_file_shape file_shape(const sliding_t *s, char block[64])
{
    snprintf(block, 64, "%dx%dx%d", (int)s->block[0], (int)s->block[1], (int)s->block[2]);
    return (sliding_file_shape){.grid = s->grid_text, .spares = s->spares_text, .ranks_per_node = s->k,
                                .block = block, .logical_ranks = (int64_t)s->layout.ranks * s->k,
                                .bytes_per_rank = s->total_bytes};
}

int checkpoint_files(sliding_t *s, const char *dir, long long every)
{
    s->file_staged = s->file_committed = -1;
    if (!dir[0]) {
        return SLIDING_OK;
    }
    char why[512];
    if (sliding_file_check_dir(dir, why, sizeof why) != SLIDING_OK) {
        if (s->node == 0 && s->lane == 0) {
            fprintf(stderr, "sliding: checkpoint directory %s: %s\n", dir, why);
        }
        return SLIDING_ERR_CHECKPOINT_DIR;
    }
    s->file_dir = strdup(dir);
    if (!s->file_dir) {
        return SLIDING_ERR_NOMEM;
    }
    return sliding_file_new(dir, every > 0 ? every : 4, &s->file);
}

/* Read this worker's rank of file checkpoint `version` into its buffers. */
int checkpoint_read_file(sliding_t *s, int64_t version)
{
    char why[512];
    int rank = lane_rank(s, rank_of_node(s, s->node));
    if (sliding_file_read(s->file_dir, version, rank, s->scratch, s->total_bytes, why, sizeof why) != SLIDING_OK) {
        fprintf(stderr, "sliding: logical rank %d: %s\n", rank, why);
        return SLIDING_ERR_CHECKPOINT_DIR;
    }
    unpack(s, s->scratch);
    return SLIDING_OK;
}

/* A job started with a checkpoint directory: the newest complete file
 * checkpoint, read by every worker and committed in memory as a checkpoint
 * of that version (*version; -1 when the directory holds none). One status at
 * every process: SLIDING_ERR_CHECKPOINT_DIR for a manifest of another shape
 * or a file that cannot be read. A process may still be here when the
 * workers have gone on and one of them dies (a slow spare): every decision is
 * an agreement over alive, so a failure meanwhile makes everyone start
 * without the files (version -1) alike, and the recovery that follows takes
 * over. Collective over alive, after build_cart. */
int checkpoint_resume(sliding_t *s, int64_t *version)
{
    *version = -1;
    if (!s->file) {
        return SLIDING_OK;
    }
    int me;
    MPI_Comm_rank(s->alive, &me);
    int64_t found[2] = {SLIDING_OK, -1};
    if (me == 0) {
        char block[64], why[512];
        sliding_file_shape shape = file_shape(s, block);
        found[0] = sliding_file_latest(s->file_dir, &shape, &found[1], why, sizeof why);
        if (found[0] != SLIDING_OK) {
            fprintf(stderr, "sliding: checkpoint directory %s: %s\n", s->file_dir, why);
        }
    }
    enum { HEARD = 1, SHAPE_OK = 2, READ_OK = 4 };
    int heard = MPI_Bcast(found, 2, MPI_INT64_T, 0, s->alive) == MPI_SUCCESS;
    int read = heard && found[0] == SLIDING_OK && found[1] >= 0 && s->cart != MPI_COMM_NULL
                   ? checkpoint_read_file(s, found[1])
                   : SLIDING_OK;
    int flags = (heard ? HEARD : 0) | (!heard || found[0] == SLIDING_OK ? SHAPE_OK : 0) |
                (read == SLIDING_OK ? READ_OK : 0);
    if (MPIX_Comm_agree(s->alive, &flags) != MPI_SUCCESS || !(flags & HEARD)) {
        return SLIDING_OK; /* a failure meanwhile: nobody resumes; the recovery will see it */
    }
    if (!(flags & SHAPE_OK) || !(flags & READ_OK)) {
        return SLIDING_ERR_CHECKPOINT_DIR;
    }
    if (found[1] < 0) {
        return SLIDING_OK;
    }
    /* Every worker holds the version: commit it in memory as a checkpoint. */
    int committed = 1;
    if (s->cart != MPI_COMM_NULL) {
        committed = checkpoint_encode(s, found[1]) == MPI_SUCCESS;
        committed = MPIX_Comm_agree(s->cart, &committed) == MPI_SUCCESS && committed;
        if (committed) {
            checkpoint_commit(s);
        }
    }
    /* The spares learn it (and the workers that it was committed everywhere) here. */
    if (MPIX_Comm_agree(s->alive, &committed) != MPI_SUCCESS || !committed) {
        return SLIDING_OK; /* a worker died meanwhile: start over (version -1) at every process */
    }
    s->version = s->file_committed = *version = found[1];
    return SLIDING_OK;
}

/* Whether this process's last staged write is on disk, as its vote for the
 * manifest of that version (1 when nothing is waiting for one). */
static int file_written(sliding_t *s)
{
    if (!s->file || s->file_staged < 0) {
        return 1;
    }
    int64_t version;
    int finished = 0;
    if (sliding_file_done(s->file, &version, &finished) != SLIDING_OK) {
        if (!s->file_failed) {
            fprintf(stderr, "sliding: the file level stops: %s\n", sliding_file_error(s->file));
        }
        s->file_failed = 1;
    }
    return finished && !s->file_failed;
}

/* The manifest of the staged version, written by logical rank 0, when every
 * worker wrote its file (`all_written`, an agreement's). */
void checkpoint_file_manifest(sliding_t *s, int all_written)
{
    if (!s->file || s->file_staged < 0 || !all_written) {
        return;
    }
    char block[64];
    sliding_file_shape shape = file_shape(s, block);
    if (lane_rank(s, rank_of_node(s, s->node)) == 0 &&
        sliding_file_commit_manifest(s->file, s->file_staged, &shape) != SLIDING_OK) {
        fprintf(stderr, "sliding: the file level stops: %s\n", sliding_file_error(s->file));
        s->file_failed = 1;
    }
    s->file_committed = s->file_staged;
    s->file_staged = -1;
}

/* file_written() once the write ends: the end of a run waits for it. */
int checkpoint_file_wait(sliding_t *s)
{
    int64_t version;
    if (s->file && s->file_staged >= 0 && sliding_file_wait(s->file, &version) != SLIDING_OK) {
        s->file_failed = 1;
    }
    return file_written(s);
}

/* After a committed checkpoint: the manifest of the staged version if every
 * worker wrote it; then, if it is due and no staged version still waits for
 * its manifest, this version to the writer. Every worker takes the same
 * decisions (from agreed facts only: the commits counted since the start or
 * the last recovery, the agreements' votes), so a version is staged by all
 * or by none; a process whose stage fails still counts it staged, and its
 * vote keeps the manifest from naming it. */
static void file_level(sliding_t *s, int64_t version, int all_written)
{
    if (!s->file) {
        return;
    }
    checkpoint_file_manifest(s, all_written);
    int due = sliding_file_due(s->file, ++s->commits);
    if (!due || s->file_staged >= 0) {
        return; /* a slow write delays the next one: checkpoints go to files at most every Nth */
    }
    killpoint(s, SLIDING_POINT_CHECKPOINT_FILE);
    int rank = lane_rank(s, rank_of_node(s, s->node));
    if (!s->file_failed && sliding_file_stage(s->file, version, rank, s->own.data, s->total_bytes) != SLIDING_OK) {
        fprintf(stderr, "sliding: the file level stops: %s\n", sliding_file_error(s->file));
        s->file_failed = 1;
    }
    s->file_staged = version;
    s->commits = 0;
}

/* ---- taking a checkpoint ---------------------------------------------- */

/* Buddy: swap copies with the buddy partners on s->cart (the same lane of
 * the node ranks a shift away, on other nodes and, with domains, in other
 * domains). */
static int encode_buddy(sliding_t *s, int node_rank)
{
    int ranks = s->layout.ranks;
    int32_t shift = buddy_shift_for(s, s->map);
    s->buddy_pending.rank = lane_rank(s, (node_rank - shift + ranks) % ranks);
    s->buddy_pending.version = s->own_pending.version;
    if (shift == 0) {
        memcpy(s->buddy_pending.data, s->own_pending.data, s->total_bytes);
        return MPI_SUCCESS;
    }
    /* Cart rank = logical rank: send mine to node rank + shift's, receive node rank - shift's. */
    return MPI_Sendrecv(s->own_pending.data, (int)s->total_bytes, MPI_BYTE, lane_rank(s, buddy_at(s, node_rank, shift)),
                        TAG_STATE, s->buddy_pending.data, (int)s->total_bytes, MPI_BYTE,
                        s->buddy_pending.rank, TAG_STATE, s->cart, MPI_STATUS_IGNORE);
}

/* Erasure: this process's data chunks go to the parity keepers of their
 * stripes (sliding_erasure.h), and it computes the parity it keeps from the
 * k chunks of each of its m stripes, all on its lane. Sends and receives
 * k M chunks. (ISA-L computes the m parity chunks of a stripe together; this
 * process keeps one of them: m times the needed arithmetic, small beside the
 * transfers at M <= 2.) */
static int encode_erasure(sliding_t *s, int node_rank)
{
    if (groups_of(s, s->map) != SLIDE_OK) {
        return MPI_ERR_OTHER; /* a map that no longer admits the placement: not committed */
    }
    int grp = s->group_of_rank[node_rank], g = s->group_size[grp], m = s->redundancy.lose, k = g - m;
    int me = s->member_of_rank[node_rank], nreq = 0, rc = MPI_SUCCESS;
    const int32_t *members = s->rank_by_member + s->group_first[grp];
    size_t c = chunk_of(s, g);
    const sliding_code *code = code_of(s, g);
    if (!code || (size_t)k * c > s->copy_bytes) {
        return MPI_ERR_NO_MEM;
    }
    memset(s->own_pending.data + s->total_bytes, 0, (size_t)k * c - s->total_bytes);
    unsigned char *in = (unsigned char *)s->erasure_scratch, *out = in + (size_t)m * k * c;
    int kept[SLIDING_CODE_MAX_CHUNKS];
    sliding_stripe_parity_kept(g, m, me, kept);
    for (int t = 0; rc == MPI_SUCCESS && t < m; t++) {
        for (int p = 0; rc == MPI_SUCCESS && p < k; p++) {
            int from;
            sliding_stripe_member(g, m, kept[t], p, &from);
            rc = MPI_Irecv(in + ((size_t)t * k + p) * c, (int)c, MPI_BYTE, lane_rank(s, members[from]),
                           TAG_PARITY + kept[t], s->cart, &s->requests[nreq]);
            nreq += rc == MPI_SUCCESS;
        }
    }
    for (int d = 0; rc == MPI_SUCCESS && d < k; d++) {
        int stripe, position;
        sliding_stripe_data_place(g, m, me, d, &stripe, &position);
        for (int t = 0; rc == MPI_SUCCESS && t < m; t++) {
            rc = MPI_Isend(s->own_pending.data + (size_t)d * c, (int)c, MPI_BYTE,
                           lane_rank(s, members[(stripe + t) % g]), TAG_PARITY + stripe, s->cart, &s->requests[nreq]);
            nreq += rc == MPI_SUCCESS;
        }
    }
    int wait_rc = nreq ? MPI_Waitall(nreq, s->requests, MPI_STATUSES_IGNORE) : MPI_SUCCESS;
    rc = rc != MPI_SUCCESS ? rc : wait_rc;
    for (int t = 0; rc == MPI_SUCCESS && t < m; t++) {
        unsigned char *data[SLIDING_CODE_MAX_CHUNKS], *parity[SLIDING_CODE_MAX_CHUNKS];
        for (int p = 0; p < k; p++) {
            data[p] = in + ((size_t)t * k + p) * c;
        }
        for (int q = 0; q < m; q++) {
            parity[q] = out + (size_t)q * c;
        }
        if (sliding_code_encode(code, c, data, parity) != SLIDING_OK) {
            rc = MPI_ERR_OTHER;
        } else {
            memcpy(s->parity_pending + (size_t)t * c, parity[t], c);
        }
    }
    return rc;
}

/* Pack this worker's buffers as pending copy 'version' and build the pending
 * redundancy for it. Collective over the workers (cart). */
int checkpoint_encode(sliding_t *s, int64_t version)
{
    int node_rank = rank_of_node(s, s->node);
    s->own_pending.rank = lane_rank(s, node_rank);
    s->own_pending.version = version;
    pack(s, s->own_pending.data);
    return erasure(s) ? encode_erasure(s, node_rank) : encode_buddy(s, node_rank);
}

/* ---- a recovery's state ----------------------------------------------- */

/* Whether node rank r's node at the checkpoint (old_map) is dead. */
static int lost_rank(const sliding_t *s, const int32_t *old_map, int r)
{
    return s->dead[old_map[r]];
}

/* Buddy: where node rank r's committed checkpoints can be read (each lane's
 * from the same lane): node and whether it is the buddy copy; -1 if both
 * holders are dead. */
static int buddy_source(const sliding_t *s, const int32_t *old_map, int r, int *from_buddy)
{
    if (!s->dead[old_map[r]]) {
        *from_buddy = 0;
        return old_map[r];
    }
    *from_buddy = 1;
    int holder = old_map[buddy_at(s, r, s->restore_shift)];
    return s->dead[holder] ? -1 : holder;
}

/* Whether some rank's committed checkpoint died with every node that held it
 * or its redundancy. Afterwards s->restore_shift (buddy) or s->group_*
 * (erasure) describe old_map's placement, for checkpoint_restore and
 * checkpoint_count_bytes: every survivor computes them alike from the agreed
 * map, spares included, which took no part in the checkpoint. */
int checkpoint_lost(sliding_t *s, const int32_t *old_map)
{
    if (!erasure(s)) {
        s->restore_shift = buddy_shift_for(s, old_map);
        for (int r = 0; r < s->layout.ranks; r++) {
            int from_buddy;
            if (buddy_source(s, old_map, r, &from_buddy) < 0) {
                return 1;
            }
        }
        return 0;
    }
    if (groups_of(s, old_map) != SLIDE_OK) {
        return 1; /* cannot happen: the map was placed when the checkpoint was taken */
    }
    for (int32_t grp = 0; grp < s->ngroups; grp++) {
        int dead = 0;
        for (int32_t j = 0; j < s->group_size[grp]; j++) {
            dead += lost_rank(s, old_map, s->rank_by_member[s->group_first[grp] + j]);
        }
        if (dead > s->redundancy.lose) {
            return 1;
        }
    }
    return 0;
}

/* Erasure: rebuild the lost checkpoints of old_map's groups (s->group_*,
 * set by checkpoint_lost) at their new holders. For each data chunk of a lost
 * member, the first k living members of its stripe (in code-word order) send
 * their chunk of it (data from their own copy, or the parity they keep) to
 * the lost rank's new holder, which decodes it into s->scratch. Posts this
 * process's sends into reqs (returns how many in *nreq); decodes
 * synchronously where this process is a new holder (*rebuilt = 1). */
static int rebuild_lost(sliding_t *s, const int32_t *old_map, MPI_Request *reqs, int *nreq, int *rebuilt)
{
    int m = s->redundancy.lose, rc = MPI_SUCCESS;
    int position_of[SLIDING_CODE_MAX_CHUNKS];
    /* 1. sends of this process's chunks (all posted before any wait) */
    for (int r = 0; rc == MPI_SUCCESS && r < s->layout.ranks; r++) {
        if (!lost_rank(s, old_map, r)) {
            continue;
        }
        int grp = s->group_of_rank[r], g = s->group_size[grp], k = g - m, lost_member = s->member_of_rank[r];
        const int32_t *members = s->rank_by_member + s->group_first[grp];
        size_t c = chunk_of(s, g);
        int to = alive_rank(s, s->map[r], s->lane);
        for (int d = 0; rc == MPI_SUCCESS && d < k; d++) {
            int stripe, position, taken = 0;
            sliding_stripe_data_place(g, m, lost_member, d, &stripe, &position);
            for (int p = 0; taken < k && p < g; p++) {
                int j;
                sliding_stripe_member(g, m, stripe, p, &j);
                if (lost_rank(s, old_map, members[j])) {
                    continue;
                }
                taken++;
                if (old_map[members[j]] != s->node) {
                    continue;
                }
                const char *chunk = NULL; /* this process's chunk of the stripe */
                if (p < k) {
                    for (int dj = 0; dj < k && !chunk; dj++) {
                        int sj, pj;
                        sliding_stripe_data_place(g, m, j, dj, &sj, &pj);
                        chunk = sj == stripe ? s->own.data + (size_t)dj * c : NULL;
                    }
                } else {
                    chunk = s->parity + (size_t)(p - k) * c;
                }
                rc = MPI_Isend(chunk, (int)c, MPI_BYTE, to, TAG_REBUILD + stripe, s->alive, &reqs[*nreq]);
                *nreq += rc == MPI_SUCCESS;
            }
        }
    }
    /* 2. the rank this process now holds, if its checkpoint died */
    int mine = rank_of_node(s, s->node);
    if (rc != MPI_SUCCESS || mine < 0 || !lost_rank(s, old_map, mine)) {
        return rc;
    }
    int grp = s->group_of_rank[mine], g = s->group_size[grp], k = g - m, lost_member = s->member_of_rank[mine];
    const int32_t *members = s->rank_by_member + s->group_first[grp];
    size_t c = chunk_of(s, g);
    const sliding_code *code = code_of(s, g);
    unsigned char *in = (unsigned char *)s->erasure_scratch;
    if (!code) {
        return MPI_ERR_NO_MEM;
    }
    for (int d = 0; rc == MPI_SUCCESS && d < k; d++) {
        int stripe, position, taken = 0;
        MPI_Request recv[SLIDING_CODE_MAX_CHUNKS];
        sliding_stripe_data_place(g, m, lost_member, d, &stripe, &position);
        for (int p = 0; rc == MPI_SUCCESS && taken < k && p < g; p++) {
            int j;
            sliding_stripe_member(g, m, stripe, p, &j);
            if (lost_rank(s, old_map, members[j])) {
                continue;
            }
            position_of[taken] = p;
            rc = MPI_Irecv(in + (size_t)taken * c, (int)c, MPI_BYTE, alive_rank(s, old_map[members[j]], s->lane),
                           TAG_REBUILD + stripe, s->alive, &recv[taken]);
            taken += rc == MPI_SUCCESS;
        }
        int wait_rc = taken ? MPI_Waitall(taken, recv, MPI_STATUSES_IGNORE) : MPI_SUCCESS;
        rc = rc != MPI_SUCCESS ? rc : wait_rc;
        if (rc == MPI_SUCCESS) {
            unsigned char *have[SLIDING_CODE_MAX_CHUNKS], *want = (unsigned char *)s->scratch + (size_t)d * c;
            for (int q = 0; q < k; q++) {
                have[q] = in + (size_t)q * c;
            }
            rc = sliding_code_decode(code, c, position_of, have, 1, &position, &want) == SLIDING_OK ? MPI_SUCCESS
                                                                                                   : MPI_ERR_OTHER;
        }
    }
    *rebuilt = rc == MPI_SUCCESS;
    return rc;
}

/* Move every rank's committed checkpoint to its new node: node rank by node
 * rank, each lane of the old node to the same lane of the new one; a
 * checkpoint whose node died comes from the buddy's copy, or is rebuilt from
 * its group (erasure). */
int checkpoint_restore(sliding_t *s, const int32_t *old_map)
{
    int ranks = s->layout.ranks, count = (int)s->total_bytes, nreq = 0, rc = MPI_SUCCESS;
    MPI_Request *reqs = s->requests, buddy_reqs[3];
    if (!erasure(s)) {
        reqs = buddy_reqs;
    }
    int mine = rank_of_node(s, s->node), received = 0;
    for (int r = 0; r < ranks; r++) {
        int from_buddy = 0, src = erasure(s) ? (lost_rank(s, old_map, r) ? -1 : old_map[r])
                                             : buddy_source(s, old_map, r, &from_buddy);
        int dst = s->map[r];
        const copy_t *copy = from_buddy ? &s->buddy : &s->own;
        if (src < 0) {
            continue; /* rebuilt below */
        }
        if (src == s->node && dst == s->node) {
            unpack(s, copy->data);
        } else if (src == s->node) {
            rc = MPI_Isend(copy->data, count, MPI_BYTE, alive_rank(s, dst, s->lane), TAG_STATE, s->alive,
                           &reqs[nreq]);
            nreq += rc == MPI_SUCCESS;
        } else if (dst == s->node) {
            rc = MPI_Irecv(s->scratch, count, MPI_BYTE, alive_rank(s, src, s->lane), TAG_STATE, s->alive,
                           &reqs[nreq]);
            nreq += rc == MPI_SUCCESS;
            received = rc == MPI_SUCCESS;
        }
        if (rc != MPI_SUCCESS) {
            break;
        }
    }
    if (rc == MPI_SUCCESS && erasure(s)) {
        rc = rebuild_lost(s, old_map, reqs, &nreq, &received);
    }
    int wait_rc = nreq ? MPI_Waitall(nreq, reqs, MPI_STATUSES_IGNORE) : MPI_SUCCESS;
    if (rc == MPI_SUCCESS && wait_rc == MPI_SUCCESS && received && mine >= 0) {
        unpack(s, s->scratch);
    }
    return rc != MPI_SUCCESS ? rc : wait_rc;
}

/* Bytes of state a recovery sends between processes, from the agreed maps
 * (the same at every survivor): moves to new nodes and rebuilds (moved), and
 * the new redundancy (buddy copies, or every member's k chunks to M keepers). */
void checkpoint_count_bytes(const sliding_t *s, const int32_t *old_map, sliding_recovery_times *t)
{
    int64_t per_node_rank = (int64_t)s->k * (int64_t)s->total_bytes;
    t->moved_bytes = 0;
    t->buddy_bytes = 0;
    for (int r = 0; r < s->layout.ranks; r++) {
        if (!erasure(s)) {
            int from_buddy;
            t->moved_bytes += buddy_source(s, old_map, r, &from_buddy) != s->map[r] ? per_node_rank : 0;
            continue;
        }
        int g = s->group_size[s->group_of_rank[r]], k = g - s->redundancy.lose;
        int64_t chunk = (int64_t)chunk_of(s, g) * s->k;
        t->moved_bytes += lost_rank(s, old_map, r) ? chunk * k * k : old_map[r] != s->map[r] ? per_node_rank : 0;
        t->buddy_bytes += chunk * k * s->redundancy.lose;
    }
    if (!erasure(s)) {
        t->buddy_bytes = s->layout.ranks / 2 > 0 ? per_node_rank * s->layout.ranks : 0;
    }
}

int checkpoint_allocate(sliding_t *s)
{
    size_t bytes = s->total_bytes ? s->total_bytes : 1;
    s->copy_bytes = bytes;
    if (erasure(s)) {
        /* Groups hold G to max_group members; the smallest has the largest
         * chunks, c. A copy cut in k chunks takes k ceil(B / k) < B + k
         * bytes. Encoding holds m (k + 1) chunks, rebuilding k. */
        int m = s->redundancy.lose;
        size_t c = chunk_of(s, s->redundancy.group);
        s->copy_bytes = bytes + (size_t)s->max_group;
        s->parity = calloc((size_t)m, c);
        s->parity_pending = calloc((size_t)m, c);
        s->erasure_scratch_bytes = (size_t)(m + 1) * (size_t)(s->max_group + 1) * c;
        s->erasure_scratch = malloc(s->erasure_scratch_bytes);
        if (!s->parity || !s->parity_pending || !s->erasure_scratch) {
            return SLIDING_ERR_NOMEM;
        }
    } else {
        s->buddy.data = malloc(bytes);
        s->buddy_pending.data = malloc(bytes);
        if (!s->buddy.data || !s->buddy_pending.data) {
            return SLIDING_ERR_NOMEM;
        }
    }
    s->own.data = calloc(1, s->copy_bytes);
    s->own_pending.data = calloc(1, s->copy_bytes);
    s->scratch = calloc(1, s->copy_bytes);
    return s->own.data && s->own_pending.data && s->scratch ? SLIDING_OK : SLIDING_ERR_NOMEM;
}

int sliding_checkpoint(sliding_t *s, int64_t version)
{
    if (!s || !s->started || s->cart == MPI_COMM_NULL || s->cart_freed_by_app) {
        return SLIDING_ERR_STATE;
    }
    if (s->cart_closed) { /* an earlier agreement on cart failed: nobody takes part in another */
        return s->cart_error != MPI_SUCCESS ? s->cart_error : MPIX_ERR_REVOKED;
    }
    /* A worker whose step failed still takes part in the agreement, with
     * "no": every worker runs the same agreements on cart (recover_once). */
    int rc = sliding_ok(s) ? checkpoint_encode(s, version) : MPIX_ERR_REVOKED;
    killpoint(s, SLIDING_POINT_CHECKPOINT);
    enum { COPIES_OK = 1, FILE_WRITTEN = 2 };
    int flags = (rc == MPI_SUCCESS ? COPIES_OK : 0) | (file_written(s) ? FILE_WRITTEN : 0);
    int agree_rc = MPIX_Comm_agree(s->cart, &flags);
    int ok = (flags & COPIES_OK) != 0;
    s->cart_closed = agree_rc != MPI_SUCCESS || !ok;
    if (s->cart_closed && s->cart_error == MPI_SUCCESS) {
        s->cart_error = agree_rc != MPI_SUCCESS ? agree_rc : rc != MPI_SUCCESS ? rc : MPIX_ERR_PROC_FAILED;
    }
    if (agree_rc != MPI_SUCCESS) {
        return agree_rc;
    }
    if (!ok) {
        return rc != MPI_SUCCESS ? rc : MPIX_ERR_PROC_FAILED;
    }
    checkpoint_commit(s);
    s->version = version;
    file_level(s, version, (flags & FILE_WRITTEN) != 0);
    return MPI_SUCCESS;
}

size_t sliding_redundancy_bytes(const sliding_t *s)
{
    if (!s || !s->started) {
        return 0;
    }
    if (!erasure(s)) {
        return s->total_bytes;
    }
    int node_rank = rank_of_node(s, s->node);
    int size = node_rank >= 0 ? s->group_size[s->group_of_rank[node_rank]] : s->redundancy.group;
    return (size_t)s->redundancy.lose * chunk_of(s, size);
}

int sliding_checkpoint_due(const sliding_t *s, int64_t iteration)
{
    return s != NULL && iteration > 0 && iteration % s->checkpoint_every == 0;
}
