/*
 * test_protocols_unit.c - unit tests of the BMG and ERA cores: topology
 * facts, API edge cases, wire robustness, and small deterministic runs
 * through a FIFO driver. (The schedule exploration lives in protocheck.)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bmg.h"
#include "era.h"

static int failures;

#define CHECK(cond)                                                                 \
    do {                                                                            \
        if (!(cond)) {                                                              \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            failures++;                                                             \
        }                                                                           \
    } while (0)

/* ---- a tiny FIFO network shared by both cores -------------------------------- */

#define NETMAX 20000
#define MSGMAX 512

typedef struct netmsg {
    uint32_t from, to;
    size_t len;
    unsigned char b[MSGMAX];
} netmsg_t;

static netmsg_t *q;
static size_t qh, qt, nsent;

typedef struct node {
    uint32_t rank;
    int ndeliv;
    uint64_t last_epoch;
    int ndecide;
    era_result_t res;
    uint32_t F[8];
} node_t;

static void net_send(void *ctx, uint32_t dest, const void *msg, size_t len)
{
    node_t *n = ctx;
    if (qt >= NETMAX || len > MSGMAX) {
        failures++;
        return;
    }
    q[qt].from = n->rank;
    q[qt].to = dest;
    q[qt].len = len;
    memcpy(q[qt].b, msg, len);
    qt++;
    nsent++;
}

static void on_deliver(void *ctx, uint32_t origin, uint64_t epoch)
{
    node_t *n = ctx;
    (void)origin;
    n->ndeliv++;
    n->last_epoch = epoch;
}

static void on_decide(void *ctx, const era_result_t *res)
{
    node_t *n = ctx;
    n->ndecide++;
    n->res = *res;
    memset(n->F, 0xff, sizeof n->F);
    for (uint32_t i = 0; i < res->nfailed && i < 8; i++) n->F[i] = res->failed[i];
    n->res.failed = n->F;
}

static void net_reset(void) { qh = qt = nsent = 0; }

/* ---- BMG topology ----------------------------------------------------------------- */

static uint32_t brute_diameter(uint32_t P)
{
    uint32_t best = 0, nb[80];
    uint32_t *dist = malloc(P * sizeof *dist), *qu = malloc(P * sizeof *qu);
    for (uint32_t s = 0; s < P; s++) {
        for (uint32_t i = 0; i < P; i++) dist[i] = UINT32_MAX;
        uint32_t h = 0, t = 0;
        dist[s] = 0;
        qu[t++] = s;
        while (h < t) {
            uint32_t u = qu[h++];
            uint32_t k = bmg_neighbors(P, u, nb, 80);
            for (uint32_t i = 0; i < k; i++)
                if (dist[nb[i]] == UINT32_MAX) dist[nb[i]] = dist[u] + 1, qu[t++] = nb[i];
        }
        for (uint32_t i = 0; i < P; i++)
            if (dist[i] > best) best = dist[i];
    }
    free(dist);
    free(qu);
    return best;
}

static void test_topology(void)
{
    uint32_t nb[80], nb2[80];
    CHECK(bmg_degree(1) == 0);
    CHECK(bmg_degree(2) == 1);
    CHECK(bmg_degree(4) == 3);
    CHECK(bmg_degree(5) == 4);
    CHECK(bmg_degree(1024) == 19); /* +-1..+-256 and 512 once */
    CHECK(bmg_degree(1000) == 20);
    CHECK(bmg_diameter(1) == 0);
    CHECK(bmg_diameter(2) == 1);
    for (uint32_t P = 2; P <= 70; P++) {
        CHECK(bmg_diameter(P) == brute_diameter(P));
        for (uint32_t r = 0; r < P; r++) {
            uint32_t k = bmg_neighbors(P, r, nb, 80);
            CHECK(k == bmg_degree(P));
            for (uint32_t i = 0; i < k; i++) {
                CHECK(nb[i] != r && nb[i] < P);
                for (uint32_t j = 0; j < i; j++) CHECK(nb[i] != nb[j]);
                /* symmetric */
                uint32_t k2 = bmg_neighbors(P, nb[i], nb2, 80);
                int found = 0;
                for (uint32_t j = 0; j < k2; j++) found |= nb2[j] == r;
                CHECK(found);
            }
        }
        /* lean tree: P-1 edges joining ranks m*4^j apart (m = 1..3), symmetric,
         * parent first and smaller, so connected to 0 */
        uint32_t edges = 0;
        for (uint32_t r = 0; r < P; r++) {
            uint32_t k = bmg_tree_neighbors(P, r, nb, 80);
            edges += k;
            for (uint32_t i = 0; i < k; i++) {
                uint32_t d = nb[i] > r ? nb[i] - r : r - nb[i];
                while (d % 4 == 0) d /= 4;
                CHECK(d >= 1 && d <= 3);
                uint32_t k2 = bmg_tree_neighbors(P, nb[i], nb2, 80);
                int found = 0;
                for (uint32_t j = 0; j < k2; j++) found |= nb2[j] == r;
                CHECK(found);
            }
            if (r) CHECK(k >= 1 && nb[0] < r && bmg_tree_neighbors(P, nb[0], nb2, 80) >= 1);
        }
        CHECK(edges == 2 * (P - 1));
    }
    /* depth from rank 0: 0 -> 4 -> 5, 6, 7 at P = 8; ceil(log4 1024) = 5 levels */
    uint32_t nb8[80];
    CHECK(bmg_tree_neighbors(8, 0, nb8, 80) == 4 && nb8[3] == 4);
    CHECK(bmg_tree_neighbors(8, 4, nb8, 80) == 4 && nb8[0] == 0 && nb8[3] == 7);
    CHECK(bmg_tree_neighbors(1024, 1023, nb8, 80) == 1 && nb8[0] == 1020);
    CHECK(bmg_tree_neighbors(UINT32_MAX, 0, nb8, 80) == 48);
    /* rooted at the origin: over 8 from origin 6, 6 has the root's neighbours
     * 7, 0, 1 (= 6 + 1, 2, 3) and 2 (= 6 + 4); 2 is the parent of 3, 4, 5 */
    CHECK(bmg_lean_neighbors(8, 6, 6, nb8, 80) == 4 && nb8[0] == 7 && nb8[1] == 0 && nb8[2] == 1 && nb8[3] == 2);
    CHECK(bmg_lean_neighbors(8, 6, 2, nb8, 80) == 4 && nb8[0] == 6 && nb8[1] == 3 && nb8[3] == 5);
    CHECK(bmg_lean_neighbors(8, 8, 2, nb8, 80) == 0);
    /* k-nomial: k = 4 is the tree above; k >= P a star around the origin */
    for (uint32_t P = 2; P <= 40; P++)
        for (uint32_t o = 0; o < P; o++)
            for (uint32_t r = 0; r < P; r++) {
                uint32_t x[80], y[80];
                uint32_t kx = bmg_knomial_neighbors(P, 4, o, r, x, 80), ky = bmg_lean_neighbors(P, o, r, y, 80);
                CHECK(kx == ky && memcmp(x, y, kx * sizeof *x) == 0);
                uint32_t ks = bmg_knomial_neighbors(P, P, o, r, x, 80);
                CHECK(r == o ? ks == P - 1 : (ks == 1 && x[0] == o));
            }
    CHECK(bmg_knomial_neighbors(8, 1, 0, 0, nb8, 80) == 0);
    CHECK(bmg_diameter(1024) == 5);
}

/* ---- BMG state machine --------------------------------------------------------------- */

static void bmg_run(bmg_t **b, uint32_t P)
{
    while (qh < qt) {
        netmsg_t *m = &q[qh++];
        if (m->to < P && b[m->to]) CHECK(bmg_recv(b[m->to], m->from, m->b, m->len) == BMG_OK);
    }
}

static void test_bmg_api(void)
{
    bmg_callbacks_t cb = {net_send, on_deliver};
    node_t nd[16];
    memset(nd, 0, sizeof nd);
    CHECK(bmg_create(0, 0, BMG_VARIANT_FLOOD, &cb, NULL) == NULL);
    CHECK(bmg_create(4, 4, BMG_VARIANT_FLOOD, &cb, NULL) == NULL);
    CHECK(bmg_create(4, 0, (bmg_variant_t)7, &cb, NULL) == NULL);

    /* the footprint does not grow with P (sorted rank arrays, no P-entry array) */
    for (int v = 0; v < 2; v++) {
        net_reset();
        bmg_t *big = bmg_create(1000000, 5, v ? BMG_VARIANT_LEAN : BMG_VARIANT_FLOOD, &cb, &nd[0]);
        CHECK(big && bmg_footprint(big) < 512);
        CHECK(bmg_failure(big, 6) == BMG_OK && bmg_failure(big, 9) == BMG_OK);
        CHECK(bmg_broadcast(big, 1) == BMG_OK);
        CHECK(bmg_footprint(big) < 2048);
        /* lean: the tree is rooted at the origin 5: its children are 5 + m*4^j
         * (m = 1..3, j = 0..9: 30 of them); 6 (= 5 + 1, a leaf) is dead and
         * skipped, 9 (= 5 + 4, inner) is dead and contracted into its
         * children 10, 11, 12 */
        if (v) {
            uint32_t to6 = 0, to9 = 0, tokids = 0;
            for (size_t i = 0; i < qt; i++) {
                to6 |= q[i].to == 6;
                to9 |= q[i].to == 9;
                tokids += q[i].to >= 10 && q[i].to <= 12;
            }
            CHECK(nsent == 31 && !to6 && !to9 && tokids == 3);
        }
        bmg_destroy(big);
    }
    net_reset();
    memset(nd, 0, sizeof nd);

    /* P = 1: delivers locally, sends nothing */
    net_reset();
    bmg_t *one = bmg_create(1, 0, BMG_VARIANT_FLOOD, &cb, &nd[0]);
    CHECK(bmg_broadcast(one, 0) == BMG_EINVAL);
    CHECK(bmg_broadcast(one, 3) == BMG_OK && nd[0].ndeliv == 1 && nsent == 0);
    CHECK(bmg_broadcast(one, 2) == BMG_OK && nd[0].ndeliv == 1); /* stale */
    bmg_destroy(one);

    /* malformed messages */
    bmg_t *b = bmg_create(8, 0, BMG_VARIANT_FLOOD, &cb, &nd[0]);
    unsigned char junk[BMG_MSG_SIZE];
    memset(junk, 0, sizeof junk);
    CHECK(bmg_recv(b, 1, junk, sizeof junk) == BMG_EPROTO);
    CHECK(bmg_recv(b, 1, junk, 3) == BMG_EPROTO);
    CHECK(bmg_recv(b, 9, junk, sizeof junk) == BMG_EINVAL);
    CHECK(bmg_failure(b, 8) == BMG_EINVAL);
    bmg_destroy(b);

    /* flooding: dead +1 / +2 neighbours are walked past */
    memset(nd, 0, sizeof nd);
    net_reset();
    b = bmg_create(8, 0, BMG_VARIANT_FLOOD, &cb, &nd[0]);
    nd[0].rank = 0;
    bmg_failure(b, 1);
    bmg_failure(b, 2);
    bmg_broadcast(b, 1);
    int to3 = 0, to1 = 0;
    for (size_t i = 0; i < qt; i++) to3 |= q[i].to == 3, to1 |= q[i].to == 1;
    CHECK(to3 && !to1);
    /* a failure learned later: forward to the replacement of the dead one */
    size_t before = qt;
    bmg_failure(b, 3); /* 3 was the walk-past successor: now 4 (already a +4 neighbour) */
    bmg_failure(b, 7); /* -1 neighbour dies: walk to 6 (already -2), nothing new */
    bmg_failure(b, 6);
    int to5 = 0;
    for (size_t i = before; i < qt; i++) to5 |= q[i].to == 5;
    CHECK(to5); /* counter-clockwise walk past 7 and 6 reaches 5 */
    bmg_destroy(b);

    /* lean: a dead tree vertex is contracted (0's tree neighbours are 1,2,3,4;
     * 4 dead -> its children 5, 6 and 7 become targets) */
    net_reset();
    b = bmg_create(8, 0, BMG_VARIANT_LEAN, &cb, &nd[0]);
    bmg_failure(b, 4);
    bmg_broadcast(b, 1);
    uint32_t seen = 0;
    for (size_t i = 0; i < qt; i++) seen |= 1u << q[i].to;
    CHECK(seen == ((1u << 1) | (1u << 2) | (1u << 3) | (1u << 5) | (1u << 6) | (1u << 7)));
    bmg_destroy(b);

    /* radix: a star around the origin (radix 16 over 16); the origin dies
     * after its first three messages: those three contract through it and
     * reach every other survivor; the radix is refused once a broadcast began */
    {
        bmg_t *bs[16];
        uint8_t dead[16] = {0};
        memset(nd, 0, sizeof nd);
        net_reset();
        for (uint32_t r = 0; r < 16; r++) {
            nd[r].rank = r;
            bs[r] = bmg_create(16, r, BMG_VARIANT_LEAN, &cb, &nd[r]);
            CHECK(bmg_set_radix(bs[r], 1) == BMG_EINVAL && bmg_set_radix(bs[r], 16) == BMG_OK);
        }
        bmg_broadcast(bs[5], 1);
        CHECK(nsent == 15 && bmg_set_radix(bs[5], 4) == BMG_EINVAL);
        qt = 3; /* the rest was never sent */
        dead[5] = 1;
        while (qh < qt) {
            netmsg_t *m = &q[qh++];
            if (!dead[m->to]) CHECK(bmg_recv(bs[m->to], m->from, m->b, m->len) == BMG_OK);
        }
        for (uint32_t r = 0; r < 16; r++)
            if (!dead[r]) bmg_failure(bs[r], 5);
        while (qh < qt) {
            netmsg_t *m = &q[qh++];
            if (!dead[m->to]) CHECK(bmg_recv(bs[m->to], m->from, m->b, m->len) == BMG_OK);
        }
        for (uint32_t r = 0; r < 16; r++)
            if (!dead[r]) CHECK(nd[r].ndeliv == 1);
        for (uint32_t r = 0; r < 16; r++) bmg_destroy(bs[r]);
    }

    /* full runs: everybody delivers exactly once; message counts */
    for (int v = 0; v < 2; v++) {
        bmg_t *bs[16];
        memset(nd, 0, sizeof nd);
        net_reset();
        for (uint32_t r = 0; r < 16; r++) {
            nd[r].rank = r;
            bs[r] = bmg_create(16, r, v ? BMG_VARIANT_LEAN : BMG_VARIANT_FLOOD, &cb, &nd[r]);
        }
        bmg_broadcast(bs[5], 2);
        bmg_broadcast(bs[9], 2); /* concurrent, same epoch */
        bmg_run(bs, 16);
        for (uint32_t r = 0; r < 16; r++) CHECK(nd[r].ndeliv == 1 && bmg_epoch(bs[r]) == 2);
        bmg_broadcast(bs[0], 1); /* stale */
        bmg_broadcast(bs[3], 4);
        bmg_run(bs, 16);
        for (uint32_t r = 0; r < 16; r++) CHECK(nd[r].ndeliv == 2 && nd[r].last_epoch == 4 && bmg_origin(bs[r]) == 3);
        for (uint32_t r = 0; r < 16; r++) bmg_destroy(bs[r]);
    }
}

/* ---- ERA ---------------------------------------------------------------------------- */

static void era_run(era_t **e, uint32_t P, const uint8_t *dead)
{
    while (qh < qt) {
        netmsg_t *m = &q[qh++];
        if (m->to < P && e[m->to] && !(dead && dead[m->to])) CHECK(era_recv(e[m->to], m->from, m->b, m->len) == ERA_OK);
    }
}

static void test_era_api(void)
{
    era_callbacks_t cb = {net_send, on_decide};
    node_t nd[16];
    memset(nd, 0, sizeof nd);
    uint32_t bad[1] = {0}, unsorted[2] = {2, 1};
    CHECK(era_create(0, 0, ERA_MODE_UNIFORM, ERA_TREE_BINOMIAL, NULL, 0, &cb, NULL) == NULL);
    CHECK(era_create(3, 3, ERA_MODE_UNIFORM, ERA_TREE_BINOMIAL, NULL, 0, &cb, NULL) == NULL);
    CHECK(era_create(3, 0, ERA_MODE_UNIFORM, ERA_TREE_BINOMIAL, bad, 1, &cb, NULL) == NULL); /* me initially failed */
    CHECK(era_create(4, 0, ERA_MODE_UNIFORM, ERA_TREE_BINOMIAL, unsorted, 2, &cb, NULL) == NULL);
    CHECK(era_create(4, 0, ERA_MODE_UNIFORM, (era_tree_t)7, NULL, 0, &cb, NULL) == NULL);

    /* tree shapes: heap-ordered; binomial and 4-nomial subtrees are contiguous ranges */
    uint32_t ch[ERA_MAX_CHILDREN];
    CHECK(era_tree_parent(ERA_TREE_BINOMIAL, 0) == UINT32_MAX && era_tree_parent(ERA_TREE_BINOMIAL, 6) == 4 &&
          era_tree_parent(ERA_TREE_BINOMIAL, 8) == 0 && era_tree_parent(ERA_TREE_BINARY, 6) == 2);
    CHECK(era_tree_children(ERA_TREE_BINOMIAL, 11, 0, ch, 40) == 4 && ch[0] == 1 && ch[3] == 8);
    CHECK(era_tree_children(ERA_TREE_BINOMIAL, 11, 8, ch, 40) == 2 && ch[0] == 9 && ch[1] == 10);
    CHECK(era_tree_children(ERA_TREE_BINARY, 11, 4, ch, 40) == 2 && ch[0] == 9 && ch[1] == 10);
    CHECK(era_tree_children(ERA_TREE_BINARY, 11, 5, ch, 40) == 0);
    /* 4-nomial: 0 -> 1 2 3 4 8 12 16 32 ..., 4 -> 5 6 7, 16 -> 17 18 19 20 24 28 */
    CHECK(era_tree_parent(ERA_TREE_KNOMIAL4, 7) == 4 && era_tree_parent(ERA_TREE_KNOMIAL4, 12) == 0 &&
          era_tree_parent(ERA_TREE_KNOMIAL4, 28) == 16 && era_tree_parent(ERA_TREE_KNOMIAL4, 30) == 28);
    CHECK(era_tree_children(ERA_TREE_KNOMIAL4, 16, 0, ch, 40) == 6 && ch[0] == 1 && ch[3] == 4 && ch[5] == 12);
    CHECK(era_tree_children(ERA_TREE_KNOMIAL4, 30, 16, ch, 40) == 6 && ch[3] == 20 && ch[5] == 28);
    CHECK(era_tree_children(ERA_TREE_KNOMIAL4, 8, 4, ch, 40) == 3 && ch[2] == 7);
    CHECK(era_tree_children(ERA_TREE_KNOMIAL4, 100, 7, ch, 40) == 0);
    CHECK(era_tree_children(ERA_TREE_KNOMIAL4, UINT32_MAX, 0, ch, ERA_MAX_CHILDREN) == ERA_MAX_CHILDREN);
    for (int t = 0; t < 3; t++)
        for (uint32_t i = 1; i < 1000; i++) {
            uint32_t par = era_tree_parent((era_tree_t)t, i), k = era_tree_children((era_tree_t)t, 1000, par, ch, 40);
            int found = 0;
            for (uint32_t j = 0; j < k && j < 40; j++) found |= ch[j] == i;
            CHECK(par < i && found);
            if (t == ERA_TREE_BINARY) continue;
            /* contiguous: i's subtree is [i, i + w) where w is the weight of
             * its lowest nonzero digit; every vertex in it descends from i */
            uint32_t radix = t == ERA_TREE_BINOMIAL ? 2 : 4, w = 1;
            while ((i / w) % radix == 0) w *= radix;
            for (uint32_t j = i + 1; j < i + w && j < 1000; j++) {
                uint32_t a = j;
                while (a > i) a = era_tree_parent((era_tree_t)t, a);
                CHECK(a == i);
            }
        }

    /* P = 1 decides at once */
    net_reset();
    era_t *one = era_create(1, 0, ERA_MODE_UNIFORM, ERA_TREE_BINOMIAL, NULL, 0, &cb, &nd[0]);
    uint64_t inst = 0, flag = 0;
    int err = -1;
    const uint32_t *fl = NULL;
    uint32_t nf = 99, acked[2] = {0, 5};
    CHECK(era_start(one, 0xf0, NULL, 0, &inst) == ERA_OK && inst == 1);
    CHECK(nd[0].ndecide == 1 && nd[0].res.flag == 0xf0 && nd[0].res.proc_failed == 0 && nd[0].res.nfailed == 0);
    CHECK(era_test(one, 1, &flag, &err, &fl, &nf, NULL) == 1 && flag == 0xf0 && err == 0 && nf == 0);
    CHECK(era_start(one, 1, acked, 2, &inst) == ERA_EINVAL); /* rank 5 out of range */
    CHECK(era_start(one, 1, NULL, 0, &inst) == ERA_OK && inst == 2);
    CHECK(era_start(one, 1, NULL, 0, &inst) == ERA_OK && inst == 3);
    CHECK(era_test(one, 1, &flag, &err, NULL, NULL, NULL) == ERA_EGONE); /* collected after instance 2 decided */
    CHECK(era_test(one, 3, &flag, &err, NULL, NULL, NULL) == 1);
    CHECK(era_test(one, 9, &flag, &err, NULL, NULL, NULL) == ERA_EINVAL);
    era_destroy(one);

    /* wire robustness and EBUSY */
    net_reset();
    era_t *e = era_create(4, 0, ERA_MODE_EARLY, ERA_TREE_BINOMIAL, NULL, 0, &cb, &nd[0]);
    unsigned char junk[64];
    memset(junk, 0, sizeof junk);
    CHECK(era_recv(e, 1, junk, sizeof junk) == ERA_EPROTO);
    CHECK(era_recv(e, 1, junk, 0) == ERA_EPROTO);
    CHECK(era_recv(e, 0, junk, sizeof junk) == ERA_EINVAL);
    CHECK(era_failure(e, 0) == ERA_EINVAL);
    CHECK(era_start(e, 1, NULL, 0, &inst) == ERA_OK);
    CHECK(era_start(e, 1, NULL, 0, &inst) == ERA_EBUSY);
    CHECK(era_progress(e) == 0);
    era_destroy(e);

    /* failure-free runs, every tree: 2(P-1) messages (early) and 4(P-1)
     * (uniform), each at most 56 bytes */
    for (int t = 0; t < 3; t++)
        for (int mode = 0; mode < 2; mode++) {
            era_t *es[16];
            memset(nd, 0, sizeof nd);
            net_reset();
            for (uint32_t r = 0; r < 11; r++) {
                nd[r].rank = r;
                es[r] = era_create(11, r, mode ? ERA_MODE_EARLY : ERA_MODE_UNIFORM, (era_tree_t)t, NULL, 0, &cb, &nd[r]);
            }
            for (uint32_t r = 0; r < 11; r++) era_start(es[r], ~((uint64_t)1 << r), NULL, 0, NULL);
            size_t longest = 0;
            for (size_t i = 0; i < qt; i++)
                if (q[i].len > longest) longest = q[i].len;
            era_run(es, 11, NULL);
            for (size_t i = 0; i < qt; i++)
                if (q[i].len > longest) longest = q[i].len;
            CHECK(nsent == (mode ? 2u : 4u) * 10u);
            CHECK(longest <= 56 || t == ERA_TREE_BINARY);
            for (uint32_t r = 0; r < 11; r++) {
                CHECK(nd[r].ndecide == 1 && nd[r].res.flag == ~(uint64_t)0x7ff && nd[r].res.nfailed == 0 &&
                      !nd[r].res.proc_failed);
                /* root of 11: binomial 4 children, binary 2, 4-nomial 5 (1 2 3 4 8) */
                CHECK(era_sent(es[r]) <= (t == ERA_TREE_BINARY ? 6u : t == ERA_TREE_KNOMIAL4 ? 10u : 8u));
                era_destroy(es[r]);
            }
        }

    /* the footprint does not grow with P: a process of a 1,000,000-rank
     * communicator holds a few hundred bytes before it starts */
    {
        era_t *big = era_create(1000000, 123456, ERA_MODE_EARLY, ERA_TREE_BINOMIAL, NULL, 0, &cb, &nd[0]);
        CHECK(big && era_footprint(big) < 2048);
        net_reset();
        CHECK(era_start(big, 1, NULL, 0, NULL) == ERA_OK);
        CHECK(era_footprint(big) < 4096);
        era_destroy(big);
        net_reset();
    }

    /* the uniform error rule: 5 ranks, rank 4 failed beforehand; the error
     * is raised everywhere unless every contributor acknowledged rank 4 */
    for (int all_acked = 0; all_acked < 2; all_acked++) {
        era_t *es[5];
        uint32_t init[1] = {4}, ack[2] = {4, 4};
        memset(nd, 0, sizeof nd);
        net_reset();
        for (uint32_t r = 0; r < 4; r++) {
            nd[r].rank = r;
            es[r] = era_create(5, r, ERA_MODE_UNIFORM, ERA_TREE_BINOMIAL, init, 1, &cb, &nd[r]);
        }
        for (uint32_t r = 0; r < 4; r++) era_start(es[r], 1, ack, (all_acked || r != 2) ? 2 : 0, NULL);
        era_run(es, 4, NULL);
        for (uint32_t r = 0; r < 4; r++) {
            CHECK(nd[r].ndecide == 1 && nd[r].res.nfailed == 1 && nd[r].F[0] == 4);
            CHECK(nd[r].res.proc_failed == !all_acked);
            era_destroy(es[r]);
        }
    }

    /* a crash: rank 1 dies before contributing (binary heap: an inner vertex;
     * binomial: a leaf); everybody else decides F = {1} with the error */
    for (int t = 0; t < 2; t++)
        for (int mode = 0; mode < 2; mode++) {
            era_t *es[7];
            uint8_t dead[7] = {0, 1, 0, 0, 0, 0, 0};
            memset(nd, 0, sizeof nd);
            net_reset();
            for (uint32_t r = 0; r < 7; r++) {
                nd[r].rank = r;
                es[r] = era_create(7, r, mode ? ERA_MODE_EARLY : ERA_MODE_UNIFORM, (era_tree_t)t, NULL, 0, &cb, &nd[r]);
            }
            for (uint32_t r = 0; r < 7; r++)
                if (!dead[r]) era_start(es[r], 3, NULL, 0, NULL);
            era_run(es, 7, dead);
            for (uint32_t r = 0; r < 7; r++)
                if (!dead[r]) era_failure(es[r], 1);
            era_run(es, 7, dead);
            for (uint32_t r = 0; r < 7; r++) {
                if (dead[r]) continue;
                uint32_t na = 0;
                const uint32_t *ag = era_agreed_failed(es[r], &na);
                CHECK(nd[r].ndecide == 1 && nd[r].res.nfailed == 1 && nd[r].F[0] == 1 && nd[r].res.proc_failed == 1 &&
                      nd[r].res.flag == 3);
                CHECK(na == 1 && ag[0] == 1 && era_last_decided(es[r]) == 1);
            }
            for (uint32_t r = 0; r < 7; r++) era_destroy(es[r]);
        }

    /* torus order: a ring of 8 folds to keys 0 1 2 3 7 6 5 4, so the binomial
     * tree's position 4 (an inner vertex, parent of 5 and 6) is rank 7: its
     * death before it contributes is agreed failed, and once ranks 0-3 are
     * dead too the root is position 5, rank 6 */
    {
        era_t *es[8];
        uint32_t ring[1] = {8}, two[2] = {2, 4}, bad3[1] = {3}, dims9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 8};
        uint8_t dead[8] = {0, 0, 0, 0, 0, 0, 0, 1};
        memset(nd, 0, sizeof nd);
        net_reset();
        for (uint32_t r = 0; r < 8; r++) {
            nd[r].rank = r;
            es[r] = era_create(8, r, ERA_MODE_UNIFORM, ERA_TREE_BINOMIAL, NULL, 0, &cb, &nd[r]);
        }
        CHECK(era_set_torus(es[0], bad3, 1) == ERA_EINVAL && era_set_torus(es[0], dims9, 9) == ERA_EINVAL &&
              era_set_torus(es[0], NULL, 1) == ERA_EINVAL && era_set_torus(es[0], two, 2) == ERA_OK);
        CHECK(era_root(es[0]) == UINT32_MAX);
        for (uint32_t r = 0; r < 8; r++) CHECK(era_set_torus(es[r], ring, 1) == ERA_OK);
        for (uint32_t r = 0; r < 7; r++) era_start(es[r], 3, NULL, 0, NULL);
        CHECK(era_set_torus(es[0], ring, 1) == ERA_EINVAL); /* started */
        CHECK(era_root(es[5]) == 0);
        era_run(es, 8, dead);
        for (uint32_t r = 0; r < 7; r++) era_failure(es[r], 7);
        era_run(es, 8, dead);
        for (uint32_t r = 0; r < 7; r++)
            CHECK(nd[r].ndecide == 1 && nd[r].res.nfailed == 1 && nd[r].F[0] == 7 && nd[r].res.proc_failed == 1);
        for (uint32_t d = 0; d < 4; d++) era_failure(es[5], d);
        CHECK(era_root(es[5]) == 6); /* instance 1's tree: positions 0-4 (ranks 0-3, 7) dead, 5 is rank 6 */
        for (uint32_t r = 0; r < 8; r++) era_destroy(es[r]);
    }

    /* era_start_op: OR, MAX and MIN decide the op over the contributors, also
     * when the root (0) and an inner vertex (4 on the 4-nomial tree over 9)
     * die before contributing; an unknown op is refused */
    for (int op = ERA_OP_BAND; op <= ERA_OP_MIN; op++)
        for (int mode = 0; mode < 2; mode++) {
            era_t *es[9];
            uint8_t dead[9] = {1, 0, 0, 0, 1, 0, 0, 0, 0};
            const uint64_t in[9] = {1000, 7, 12, 9, 2000, 5, 40, 6, 3};
            uint64_t want = op == ERA_OP_MIN ? ~(uint64_t)0 : op == ERA_OP_BAND ? ~(uint64_t)0 : 0;
            for (uint32_t r = 0; r < 9; r++) {
                if (dead[r]) continue;
                want = op == ERA_OP_BAND ? (want & in[r]) : op == ERA_OP_BOR ? (want | in[r])
                       : op == ERA_OP_MAX ? (in[r] > want ? in[r] : want) : (in[r] < want ? in[r] : want);
            }
            memset(nd, 0, sizeof nd);
            net_reset();
            for (uint32_t r = 0; r < 9; r++) {
                nd[r].rank = r;
                es[r] = era_create(9, r, mode ? ERA_MODE_EARLY : ERA_MODE_UNIFORM, ERA_TREE_KNOMIAL4, NULL, 0, &cb,
                                   &nd[r]);
            }
            CHECK(era_start_op(es[1], (era_op_t)7, 1, NULL, 0, NULL) == ERA_EINVAL);
            for (uint32_t r = 0; r < 9; r++)
                if (!dead[r]) CHECK(era_start_op(es[r], (era_op_t)op, in[r], NULL, 0, NULL) == ERA_OK);
            era_run(es, 9, dead);
            for (uint32_t r = 0; r < 9; r++)
                if (!dead[r]) {
                    era_failure(es[r], 4);
                    era_failure(es[r], 0);
                }
            era_run(es, 9, dead);
            for (uint32_t r = 0; r < 9; r++) {
                if (dead[r]) continue;
                CHECK(nd[r].ndecide == 1 && nd[r].res.flag == want && nd[r].res.nfailed == 2 && nd[r].F[0] == 0 &&
                      nd[r].F[1] == 4);
            }
            /* the next instance, with AND again, on the survivors that acknowledge both */
            const uint32_t both[2] = {0, 4};
            for (uint32_t r = 0; r < 9; r++)
                if (!dead[r]) CHECK(era_start(es[r], 6, both, 2, NULL) == ERA_OK);
            era_run(es, 9, dead);
            for (uint32_t r = 0; r < 9; r++)
                if (!dead[r]) CHECK(nd[r].ndecide == 2 && nd[r].res.flag == 6 && nd[r].res.proc_failed == 0);
            for (uint32_t r = 0; r < 9; r++) era_destroy(es[r]);
        }

    /* a process with another order is not merged: its messages are rejected
     * and nobody decides a value built on two different trees */
    {
        era_t *es[4];
        uint32_t ring[1] = {4};
        memset(nd, 0, sizeof nd);
        net_reset();
        for (uint32_t r = 0; r < 4; r++) {
            nd[r].rank = r;
            es[r] = era_create(4, r, ERA_MODE_EARLY, ERA_TREE_BINOMIAL, NULL, 0, &cb, &nd[r]);
        }
        CHECK(era_set_torus(es[0], ring, 1) == ERA_OK); /* the root: rank 1's UP reaches it */
        for (uint32_t r = 0; r < 4; r++) era_start(es[r], 1, NULL, 0, NULL);
        era_run(es, 4, NULL);
        uint64_t rejected = 0;
        for (uint32_t r = 0; r < 4; r++) {
            rejected += era_rejected(es[r]);
            CHECK(nd[r].ndecide == 0);
        }
        CHECK(rejected > 0);
        for (uint32_t r = 0; r < 4; r++) era_destroy(es[r]);
    }
}

/* ---- the 32-bit int contributions (era_flag_of_int / era_int_of_flag) ----------------- */

static const int32_t int_samples[] = {0, 1, -1, 2, -2, 0x5a5a5a5a, -0x5a5a5a5b, INT32_MAX, INT32_MIN, 77, -77};
#define NSAMPLES (sizeof int_samples / sizeof int_samples[0])

/* The op as the core combines flags (unsigned 64-bit), for the pure checks. */
static uint64_t combine(era_op_t op, uint64_t a, uint64_t b)
{
    switch (op) {
    case ERA_OP_BAND: return a & b;
    case ERA_OP_BOR: return a | b;
    case ERA_OP_MAX: return a > b ? a : b;
    default: return a < b ? a : b;
    }
}

static int32_t int_combine(era_op_t op, int32_t a, int32_t b)
{
    switch (op) {
    case ERA_OP_BAND: return (int32_t)((uint32_t)a & (uint32_t)b);
    case ERA_OP_BOR: return (int32_t)((uint32_t)a | (uint32_t)b);
    case ERA_OP_MAX: return a > b ? a : b;
    default: return a < b ? a : b;
    }
}

/* Runs one agreement over the contributions `in` of the P processes (the
 * first n1 one group, the others the second; n1 = 0: an intra-communicator)
 * with `dead` crashed before contributing; each survivor's decided int goes
 * to out[]. Returns how many survivors decided. */
static uint32_t agree_ints(uint32_t P, uint32_t n1, era_op_t op, era_mode_t mode, era_tree_t tree, const int32_t *in,
                           const uint8_t *dead, int32_t *out, int *proc_failed)
{
    era_callbacks_t cb = {net_send, on_decide};
    era_t *es[8];
    node_t nd[8];
    uint32_t ndecided = 0;
    memset(nd, 0, sizeof nd);
    net_reset();
    for (uint32_t r = 0; r < P; r++) {
        nd[r].rank = r;
        es[r] = era_create(P, r, mode, tree, NULL, 0, &cb, &nd[r]);
    }
    for (uint32_t r = 0; r < P; r++) {
        era_side_t side = !n1 ? ERA_SIDE_ALL : r < n1 ? ERA_SIDE_FIRST : ERA_SIDE_SECOND;
        if (!dead[r]) CHECK(era_start_op(es[r], op, era_flag_of_int(op, side, in[r]), NULL, 0, NULL) == ERA_OK);
    }
    era_run(es, P, dead);
    for (uint32_t r = 0; r < P; r++)
        for (uint32_t d = 0; d < P; d++)
            if (!dead[r] && dead[d]) era_failure(es[r], d);
    era_run(es, P, dead);
    for (uint32_t r = 0; r < P; r++) {
        era_side_t side = !n1 ? ERA_SIDE_ALL : r < n1 ? ERA_SIDE_FIRST : ERA_SIDE_SECOND;
        if (dead[r] || nd[r].ndecide != 1) continue;
        out[r] = era_int_of_flag(op, side, nd[r].res.flag);
        *proc_failed = nd[r].res.proc_failed;
        ndecided++;
    }
    for (uint32_t r = 0; r < P; r++) era_destroy(es[r]);
    return ndecided;
}

static void test_era_int_encoding(void)
{
    const era_side_t sides[3] = {ERA_SIDE_ALL, ERA_SIDE_FIRST, ERA_SIDE_SECOND};
    for (size_t i = 0; i < NSAMPLES; i++) {
        int32_t v = int_samples[i];
        uint32_t u = (uint32_t)v;
        /* AND: the other half all ones, the second group in the high half */
        CHECK(era_flag_of_int(ERA_OP_BAND, ERA_SIDE_ALL, v) == (0xffffffff00000000ull | u));
        CHECK(era_flag_of_int(ERA_OP_BAND, ERA_SIDE_FIRST, v) == (0xffffffff00000000ull | u));
        CHECK(era_flag_of_int(ERA_OP_BAND, ERA_SIDE_SECOND, v) == (((uint64_t)u << 32) | 0xffffffffull));
        for (int op = ERA_OP_BAND; op <= ERA_OP_MIN; op++) {
            /* an intra-communicator gets its own int back */
            CHECK(era_int_of_flag((era_op_t)op, ERA_SIDE_ALL, era_flag_of_int((era_op_t)op, ERA_SIDE_ALL, v)) == v);
            if (op == ERA_OP_BAND) continue;
            /* every other op ignores the side */
            for (int sd = 1; sd < 3; sd++) {
                CHECK(era_flag_of_int((era_op_t)op, sides[sd], v) == era_flag_of_int((era_op_t)op, ERA_SIDE_ALL, v));
                CHECK(era_int_of_flag((era_op_t)op, sides[sd], era_flag_of_int((era_op_t)op, sides[sd], v)) == v);
            }
        }
        /* an inter-communicator's AND gives each side the other's half */
        CHECK(era_int_of_flag(ERA_OP_BAND, ERA_SIDE_FIRST, era_flag_of_int(ERA_OP_BAND, ERA_SIDE_SECOND, v)) == v);
        CHECK(era_int_of_flag(ERA_OP_BAND, ERA_SIDE_SECOND, era_flag_of_int(ERA_OP_BAND, ERA_SIDE_FIRST, v)) == v);
        CHECK(era_int_of_flag(ERA_OP_BAND, ERA_SIDE_FIRST, era_flag_of_int(ERA_OP_BAND, ERA_SIDE_FIRST, v)) == -1);
        CHECK(era_int_of_flag(ERA_OP_BAND, ERA_SIDE_SECOND, era_flag_of_int(ERA_OP_BAND, ERA_SIDE_SECOND, v)) == -1);
    }
    /* combining two encoded ints with the core's op is the op on the ints
     * (MAX and MIN: signed order); on an inter-communicator AND combines
     * each group apart */
    for (size_t i = 0; i < NSAMPLES; i++)
        for (size_t j = 0; j < NSAMPLES; j++) {
            int32_t a = int_samples[i], b = int_samples[j];
            for (int op = ERA_OP_BAND; op <= ERA_OP_MIN; op++) {
                uint64_t f = combine((era_op_t)op, era_flag_of_int((era_op_t)op, ERA_SIDE_ALL, a),
                                     era_flag_of_int((era_op_t)op, ERA_SIDE_ALL, b));
                CHECK(era_int_of_flag((era_op_t)op, ERA_SIDE_ALL, f) == int_combine((era_op_t)op, a, b));
            }
            int32_t c = int_samples[(i + j) % NSAMPLES];
            uint64_t f = era_flag_of_int(ERA_OP_BAND, ERA_SIDE_FIRST, a) & era_flag_of_int(ERA_OP_BAND, ERA_SIDE_FIRST, b) &
                         era_flag_of_int(ERA_OP_BAND, ERA_SIDE_SECOND, c);
            CHECK(era_int_of_flag(ERA_OP_BAND, ERA_SIDE_FIRST, f) == c);
            CHECK(era_int_of_flag(ERA_OP_BAND, ERA_SIDE_SECOND, f) == (int32_t)((uint32_t)a & (uint32_t)b));
        }

    /* Through the core: an inter-communicator of 2 + 3 members, both modes,
     * the binomial and the 4-nomial tree. */
    const int32_t in[5] = {0x0ff0f00f, -0x100, 0x7ffffff3, -5, 0x3c3c3c3f};
    const int32_t and_first = 0x0ff0f00f & -0x100, and_second = 0x7ffffff3 & -5 & 0x3c3c3c3f;
    const era_tree_t trees[2] = {ERA_TREE_BINOMIAL, ERA_TREE_KNOMIAL4};
    for (int mode = 0; mode < 2; mode++)
        for (int ti = 0; ti < 2; ti++) {
            era_tree_t t = trees[ti];
            int32_t out[5];
            int pf = -1;
            const uint8_t none[5] = {0}, first_gone[5] = {1, 1, 0, 0, 0}, second_gone[5] = {0, 0, 1, 1, 1};
            const uint8_t one_each[5] = {1, 0, 0, 1, 0};
            CHECK(agree_ints(5, 2, ERA_OP_BAND, (era_mode_t)mode, t, in, none, out, &pf) == 5);
            CHECK(out[0] == and_second && out[1] == and_second && pf == 0);
            CHECK(out[2] == and_first && out[3] == and_first && out[4] == and_first);
            /* one member of each group dies before contributing */
            CHECK(agree_ints(5, 2, ERA_OP_BAND, (era_mode_t)mode, t, in, one_each, out, &pf) == 3);
            CHECK(out[1] == (0x7ffffff3 & 0x3c3c3c3f) && out[2] == -0x100 && out[4] == -0x100 && pf == 1);
            /* a whole group dies: the other side gets all ones (no remote int) */
            CHECK(agree_ints(5, 2, ERA_OP_BAND, (era_mode_t)mode, t, in, first_gone, out, &pf) == 3);
            CHECK(out[2] == -1 && out[3] == -1 && out[4] == -1 && pf == 1);
            CHECK(agree_ints(5, 2, ERA_OP_BAND, (era_mode_t)mode, t, in, second_gone, out, &pf) == 2);
            CHECK(out[0] == -1 && out[1] == -1 && pf == 1);
            /* MAX and MIN combine over both groups, in signed order */
            CHECK(agree_ints(5, 2, ERA_OP_MAX, (era_mode_t)mode, t, in, none, out, &pf) == 5);
            CHECK(out[0] == 0x7ffffff3 && out[4] == 0x7ffffff3);
            CHECK(agree_ints(5, 2, ERA_OP_MIN, (era_mode_t)mode, t, in, none, out, &pf) == 5);
            CHECK(out[1] == -0x100 && out[3] == -0x100);
            /* the same ints on an intra-communicator: AND over everyone */
            CHECK(agree_ints(5, 0, ERA_OP_BAND, (era_mode_t)mode, t, in, none, out, &pf) == 5);
            CHECK(out[0] == (and_first & and_second) && out[3] == (and_first & and_second));
        }
}

/* Call kinds (era_start_kind): processes that entered one instance from
 * different calls decide kind_conflict = 1, all of them, in both modes and
 * every shape; equal kinds decide 0 and the usual flag; a crash before
 * contributing takes the crashed process's kind out of the combination. */
static void test_era_kinds(void)
{
    era_callbacks_t cb = {net_send, on_decide};
    node_t nd[5];
    uint64_t inst;
    era_t *one = era_create(1, 0, ERA_MODE_UNIFORM, ERA_TREE_BINOMIAL, NULL, 0, &cb, &nd[0]);
    memset(nd, 0, sizeof nd);
    CHECK(era_start_kind(one, ERA_OP_BAND, ERA_KIND_CONFLICT, 1, NULL, 0, &inst) == ERA_EINVAL);
    CHECK(era_start_kind(one, ERA_OP_BAND, ERA_KIND_MAX, 1, NULL, 0, &inst) == ERA_OK && inst == 1);
    CHECK(nd[0].ndecide == 1 && nd[0].res.kind_conflict == 0); /* one process: nothing to disagree with */
    era_destroy(one);

    /* scenario: 0 all kind 0; 1 all kind 3; 2 rank 3 kind 1; 3 rank 0 (the
     * root) kind 1; 4 rank 3 kind 1 and rank 1 crashed before contributing;
     * 5 rank 1 (the only other kind) crashed before contributing */
    for (int sc = 0; sc < 6; sc++)
        for (int t = 0; t < 3; t++)
            for (int mode = 0; mode < 2; mode++) {
                era_t *es[5];
                uint8_t dead[5] = {0};
                uint32_t kind[5] = {0};
                if (sc == 1)
                    for (int r = 0; r < 5; r++) kind[r] = 3;
                if (sc == 2 || sc == 4) kind[3] = 1;
                if (sc == 3) kind[0] = 1;
                if (sc == 5) kind[1] = 1;
                if (sc >= 4) dead[1] = 1;
                int conflict = sc >= 2 && sc <= 4;
                memset(nd, 0, sizeof nd);
                net_reset();
                for (uint32_t r = 0; r < 5; r++) {
                    nd[r].rank = r;
                    es[r] = era_create(5, r, mode ? ERA_MODE_EARLY : ERA_MODE_UNIFORM, (era_tree_t)t, NULL, 0, &cb,
                                       &nd[r]);
                }
                for (uint32_t r = 0; r < 5; r++)
                    if (!dead[r]) CHECK(era_start_kind(es[r], ERA_OP_BAND, kind[r], ~((uint64_t)1 << r), NULL, 0, NULL) == ERA_OK);
                era_run(es, 5, dead);
                for (uint32_t r = 0; r < 5; r++)
                    if (!dead[r] && dead[1]) era_failure(es[r], 1);
                era_run(es, 5, dead);
                for (uint32_t r = 0; r < 5; r++) {
                    if (dead[r]) continue;
                    uint64_t flag = 0;
                    int err = -1, kc = -1;
                    uint32_t nf = 9;
                    CHECK(nd[r].ndecide == 1 && nd[r].res.kind_conflict == conflict);
                    CHECK(era_test(es[r], 1, &flag, &err, NULL, &nf, &kc) == 1 && kc == conflict);
                    CHECK(era_rejected(es[r]) == 0); /* another kind is merged, never ignored */
                    if (dead[1]) {
                        CHECK(nf == 1 && nd[r].F[0] == 1 && err == 1 && flag == ~(uint64_t)0x1d);
                    } else {
                        CHECK(nf == 0 && err == 0 && flag == ~(uint64_t)0x1f);
                    }
                }
                /* the next instance, every kind equal again: no conflict left over */
                for (uint32_t r = 0; r < 5; r++)
                    if (!dead[r]) CHECK(era_start_kind(es[r], ERA_OP_MAX, 2, r, NULL, 0, NULL) == ERA_OK);
                era_run(es, 5, dead);
                for (uint32_t r = 0; r < 5; r++) {
                    if (dead[r]) continue;
                    CHECK(nd[r].ndecide == 2 && nd[r].res.inst == 2 && nd[r].res.kind_conflict == 0 &&
                          nd[r].res.flag == 4);
                }
                for (uint32_t r = 0; r < 5; r++) era_destroy(es[r]);
            }
    net_reset();
}

int main(void)
{
    q = calloc(NETMAX, sizeof *q);
    if (!q) return 2;
    test_topology();
    test_bmg_api();
    test_era_api();
    test_era_int_encoding();
    test_era_kinds();
    free(q);
    if (failures) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    printf("protocols unit tests: all checks passed\n");
    return 0;
}
