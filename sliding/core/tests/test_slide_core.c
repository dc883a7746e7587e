/* Unit tests of the slide_core library. Usage: test_slide_core GROUP
 * where GROUP is parse, layout, examples, properties, promises, metrics,
 * metrics_reference, blocks, errors, spare_sets or redundancy (ctest runs each group as its own test). */
#include "slide_core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit_check.h"

/* ---- helpers -------------------------------------------------------------- */

static slide_layout make_layout(const char *grid, const char *spares)
{
    slide_grid g;
    slide_spares s;
    slide_layout l;
    memset(&l, 0, sizeof l);
    int rc = slide_grid_parse(grid, &g);
    if (rc == SLIDE_OK)
        rc = slide_spares_parse(spares, &s);
    if (rc == SLIDE_OK)
        rc = slide_layout_init(&l, &g, &s);
    if (rc != SLIDE_OK) {
        fprintf(stderr, "layout %s %s: %s\n", grid, spares, slide_strerror(rc));
        exit(2);
    }
    return l;
}

static int32_t rng_below(int32_t n) { return (int32_t)(rng_next() % (uint64_t)n); }

/* slide_map with a freshly allocated workspace full of the given garbage
 * byte, so determinism checks see different scratch contents. */
static int run_map(const slide_layout *lay, int method, const int32_t *failed,
                   int32_t n, int32_t *out, int32_t *err_index, unsigned char garbage)
{
    size_t bytes = slide_map_workspace_bytes(lay);
    void *work = malloc(bytes);
    memset(work, garbage, bytes);
    int rc = slide_map(lay, method, failed, n, out, work, bytes, err_index);
    free(work);
    return rc;
}

static int run_metrics(const slide_layout *lay, const int32_t *map, int periodic,
                       slide_metrics *m)
{
    size_t bytes = slide_measure_workspace_bytes(lay);
    void *work = malloc(bytes);
    int rc = slide_measure(lay, map, periodic, m, work, bytes);
    free(work);
    return rc;
}

static int same_map(const int32_t *a, const int32_t *b, int32_t n)
{
    return memcmp(a, b, (size_t)n * sizeof *a) == 0;
}

static int32_t node_of(const slide_layout *lay, int32_t x, int32_t y, int32_t z)
{
    int32_t c[3] = {x, y, z};
    return slide_node_index(lay, c);
}

static void check_map_literal(const char *what, const int32_t *got, const int32_t *want, int32_t n)
{
    int ok = same_map(got, want, n);
    CHECK(ok, "%s: map differs from the hand-computed one", what);
    if (!ok) {
        fprintf(stderr, "  got :");
        for (int32_t i = 0; i < n; i++)
            fprintf(stderr, " %d", got[i]);
        fprintf(stderr, "\n  want:");
        for (int32_t i = 0; i < n; i++)
            fprintf(stderr, " %d", want[i]);
        fputc('\n', stderr);
    }
}

/* ---- parse ---------------------------------------------------------------- */

static void test_parse(void)
{
    slide_grid g;
    CHECK(slide_grid_parse("6x6x6", &g) == SLIDE_OK, "6x6x6");
    CHECK(g.ndims == 3 && g.size[0] == 6 && g.size[1] == 6 && g.size[2] == 6 && g.periodic == 1,
          "6x6x6 fields");
    CHECK(slide_grid_parse("mesh:4x5", &g) == SLIDE_OK && g.ndims == 2 && g.size[0] == 4 &&
              g.size[1] == 5 && g.size[2] == 1 && g.periodic == 0,
          "mesh:4x5");
    CHECK(slide_grid_parse("torus:48x47x47", &g) == SLIDE_OK && g.periodic == 1 && g.size[0] == 48,
          "torus prefix");
    struct { const char *text; int rc; } bad_grids[] = {
        {"", SLIDE_EGRID_SYNTAX},        {"6", SLIDE_EGRID_DIMS},
        {"6x", SLIDE_EGRID_SYNTAX},      {"x6", SLIDE_EGRID_SYNTAX},
        {"6x6x6x6", SLIDE_EGRID_DIMS},   {"0x4", SLIDE_EGRID_SIZE},
        {"6X6", SLIDE_EGRID_SYNTAX},     {"mesh:", SLIDE_EGRID_SYNTAX},
        {"ring:4x4", SLIDE_EGRID_SYNTAX}, {"4x4 ", SLIDE_EGRID_SYNTAX},
        {"-4x4", SLIDE_EGRID_SYNTAX},    {"99999x99999x99999", SLIDE_EGRID_SIZE},
        {"4x99999999999", SLIDE_EGRID_SIZE}, {"4x4x", SLIDE_EGRID_SYNTAX},
    };
    for (size_t i = 0; i < sizeof bad_grids / sizeof bad_grids[0]; i++) {
        slide_grid before = {.ndims = 7};
        int rc = slide_grid_parse(bad_grids[i].text, &before);
        CHECK(rc == bad_grids[i].rc, "grid '%s': got %d want %d", bad_grids[i].text, rc,
              bad_grids[i].rc);
        CHECK(before.ndims == 7, "grid '%s': output written on error", bad_grids[i].text);
    }
    CHECK(slide_grid_parse(NULL, &g) == SLIDE_EINVAL, "NULL grid text");

    slide_spares s;
    CHECK(slide_spares_parse("x:1", &s) == SLIDE_OK && s.ndims == 1 && s.dim[0] == 0 &&
              s.count[0] == 1,
          "x:1");
    CHECK(slide_spares_parse("y:2,x:1", &s) == SLIDE_OK && s.ndims == 2 && s.dim[0] == 1 &&
              s.count[0] == 2 && s.dim[1] == 0 && s.count[1] == 1,
          "y:2,x:1 keeps the written order (primary y)");
    CHECK(slide_spares_parse("none", &s) == SLIDE_OK && s.ndims == 0, "none");
    CHECK(slide_spares_parse("", &s) == SLIDE_OK && s.ndims == 0, "empty");
    CHECK(slide_spares_parse("z:1/16:1", &s) == SLIDE_OK && s.ndims == 1 && s.dim[0] == 2 && s.block == 16 &&
              s.per_block == 1,
          "z:1/16:1");
    CHECK(slide_spares_parse("x:1,y:1/8:3", &s) == SLIDE_OK && s.ndims == 2 && s.block == 8 && s.per_block == 3,
          "x:1,y:1/8:3");
    CHECK(slide_spares_parse("x:1", &s) == SLIDE_OK && s.block == 0 && s.per_block == 0, "whole planes");
    struct { const char *text; int rc; } bad_spares[] = {
        {"x", SLIDE_ESPARES_SYNTAX},         {"x:", SLIDE_ESPARES_SYNTAX},
        {"x:0", SLIDE_ESPARES_COUNT},        {"w:1", SLIDE_ESPARES_SYNTAX},
        {"x:1,x:2", SLIDE_ESPARES_DIM},      {"x:1,y:1,z:1", SLIDE_ESPARES_DIM},
        {"x:1;y:1", SLIDE_ESPARES_SYNTAX},   {"x:1,", SLIDE_ESPARES_SYNTAX},
        {"X:1", SLIDE_ESPARES_SYNTAX},       {"x:99999999999", SLIDE_ESPARES_COUNT},
        {"x:-1", SLIDE_ESPARES_SYNTAX},      {"x1", SLIDE_ESPARES_SYNTAX},
        {"z:1/16", SLIDE_ESPARES_SYNTAX},    {"z:1/16:", SLIDE_ESPARES_SYNTAX},
        {"z:1/16:2x", SLIDE_ESPARES_SYNTAX}, {"z:1/0:1", SLIDE_ESPARES_COUNT},
        {"z:1/16:0", SLIDE_ESPARES_COUNT},   {"z:1/4:5", SLIDE_ESPARES_COUNT},
        {"/16:1", SLIDE_ESPARES_SYNTAX},     {"z:1,/16:1", SLIDE_ESPARES_SYNTAX},
    };
    for (size_t i = 0; i < sizeof bad_spares / sizeof bad_spares[0]; i++) {
        int rc = slide_spares_parse(bad_spares[i].text, &s);
        CHECK(rc == bad_spares[i].rc, "spares '%s': got %d want %d", bad_spares[i].text, rc,
              bad_spares[i].rc);
    }

    slide_method m;
    const char *names[] = {"simple", "slide1d", "slide2d", "hybrid", "shrink", "routed"};
    for (int i = 0; i < SLIDE_NMETHODS; i++) {
        CHECK(slide_method_parse(names[i], &m) == SLIDE_OK && (int)m == i, "method %s", names[i]);
        CHECK(strcmp(slide_method_name(i), names[i]) == 0, "name of %d", i);
    }
    CHECK(slide_method_parse("foo", &m) == SLIDE_EMETHOD, "unknown method");
    CHECK(slide_method_parse("Simple", &m) == SLIDE_EMETHOD, "method names are exact");
    CHECK(slide_method_name(SLIDE_NMETHODS) == NULL && slide_method_name(-1) == NULL, "name out of range");
    for (int code = 0; code <= SLIDE_ENOPLACEMENT; code++)
        CHECK(slide_strerror(code) != NULL && strlen(slide_strerror(code)) > 5 &&
                  strcmp(slide_strerror(code), "unknown status") != 0,
              "message for %d", code);
    CHECK(strcmp(slide_strerror(999), "unknown status") == 0, "unknown code");
    CHECK(strcmp(slide_status_name(SLIDE_OK), "OK") == 0 && strcmp(slide_status_name(SLIDE_ENOSPARE), "ENOSPARE") == 0 &&
              strcmp(slide_status_name(SLIDE_ETOPO_FIT), "ETOPO_FIT") == 0 &&
              strcmp(slide_status_name(SLIDE_EBLOCK), "EBLOCK") == 0 && slide_status_name(SLIDE_ENOPLACEMENT + 1) == NULL &&
              slide_status_name(-1) == NULL,
          "status names");
    for (int i = 0; i < SLIDE_NMETHODS; i++)
        CHECK(slide_method_one_rank_per_node(i) == (i != SLIDE_SHRINK) && slide_method_chooses(i) == (i == SLIDE_ROUTED),
              "traits of %s", names[i]);
    CHECK(slide_method_one_rank_per_node(SLIDE_NMETHODS) == -1 && slide_method_chooses(-1) == -1, "traits out of range");
    CHECK(strcmp(slide_choice_kind_name(SLIDE_CHOICE_HYBRID), "hybrid") == 0 &&
              strcmp(slide_choice_kind_name(SLIDE_CHOICE_CROSS), "cross") == 0 &&
              strcmp(slide_choice_kind_name(SLIDE_CHOICE_SURFACE), "surface") == 0 &&
              slide_choice_kind_name(SLIDE_CHOICE_SURFACE + 1) == NULL,
          "choice kind names");
}

/* ---- layout --------------------------------------------------------------- */

static void test_layout(void)
{
    slide_layout l = make_layout("mesh:4x4", "x:1");
    CHECK(l.nodes == 16 && l.ranks == 12 && l.logical[0] == 3 && l.logical[1] == 4 &&
              l.logical[2] == 1,
          "4x4 x:1 sizes");
    /* Row-major, last dimension fastest: node (x,y) = x*4 + y. */
    CHECK(node_of(&l, 1, 2, 0) == 6, "node (1,2) of 4x4 is 6");
    int32_t c[3];
    slide_node_coords(&l, 13, c);
    CHECK(c[0] == 3 && c[1] == 1 && c[2] == 0, "coords of 13");
    CHECK(slide_is_spare(&l, 12) == 1 && slide_is_spare(&l, 11) == 0 && slide_is_spare(&l, 16) == -1,
          "spares of 4x4 x:1");
    CHECK(slide_hops(&l, 0, 15) == 6, "mesh hops corner to corner");
    int32_t init[12];
    slide_initial_map(&l, init);
    for (int32_t r = 0; r < 12; r++)
        CHECK(init[r] == r, "initial map 4x4 x:1 rank %d", r);

    slide_layout t = make_layout("torus:5x4x3", "y:1,x:2");
    CHECK(t.logical[0] == 3 && t.logical[1] == 3 && t.logical[2] == 3 && t.ranks == 27 &&
              t.nodes == 60 && t.spares.dim[0] == 1,
          "5x4x3 y:1,x:2");
    CHECK(slide_hops(&t, node_of(&t, 0, 0, 0), node_of(&t, 4, 3, 2)) == 3, "torus hops wrap");
    int32_t init27[27];
    slide_initial_map(&t, init27);
    /* rank (1,2,1) = (1*3+2)*3+1 = 16 runs on node (1*4+2)*3+1 = 19 */
    CHECK(init27[16] == 19, "initial map 3D rank 16 -> node 19, got %d", init27[16]);
    CHECK(slide_is_spare(&t, node_of(&t, 2, 3, 0)) == 1 && slide_is_spare(&t, node_of(&t, 3, 0, 0)) == 1 &&
              slide_is_spare(&t, node_of(&t, 2, 2, 2)) == 0,
          "two spare dims");

    slide_grid g2, g3;
    slide_spares s;
    slide_layout out;
    slide_grid_parse("4x4", &g2);
    slide_grid_parse("4x4x4", &g3);
    slide_spares_parse("z:1", &s);
    CHECK(slide_layout_init(&out, &g2, &s) == SLIDE_ESPARES_DIM, "z spares on a 2D grid");
    CHECK(slide_layout_init(&out, &g3, &s) == SLIDE_OK, "z spares on a 3D grid");
    slide_spares_parse("x:4", &s);
    CHECK(slide_layout_init(&out, &g2, &s) == SLIDE_ESPARES_COUNT, "all of x spare");
    slide_spares_parse("x:3", &s);
    CHECK(slide_layout_init(&out, &g2, &s) == SLIDE_OK && out.logical[0] == 1, "x:3 leaves one plane");
    CHECK(slide_layout_init(NULL, &g2, &s) == SLIDE_EINVAL, "NULL layout");
    slide_grid bad = g2;
    bad.ndims = 4;
    CHECK(slide_layout_init(&out, &bad, &s) == SLIDE_EGRID_DIMS, "4D grid struct");
    CHECK(slide_struct_size(2) == sizeof(slide_layout) && slide_struct_size(9) == 0, "struct sizes");

    /* A spare set: torus 8x8x8, plane z = 7, one spare per block of 16 ids (ids 16k+15; 16k+7 unused). */
    slide_layout b = make_layout("torus:8x8x8", "z:1/16:1");
    CHECK(b.ranks == 448 && b.spare_nodes == 32, "z:1/16:1: %d ranks, %d spares", b.ranks, b.spare_nodes);
    CHECK(slide_node_role(&b, 15) == SLIDE_ROLE_SPARE && slide_node_role(&b, 7) == SLIDE_ROLE_UNUSED &&
              slide_node_role(&b, 6) == SLIDE_ROLE_RANK && slide_node_role(&b, 512) == -1 &&
              slide_is_spare(&b, 7) == 0 && slide_is_spare(&b, 31) == 1,
          "roles of a spare set");
    CHECK(make_layout("torus:8x8x8", "z:1/16:2").spare_nodes == 64, "two per block: the whole plane");
    CHECK(make_layout("torus:8x8x8", "z:1").spare_nodes == 64, "whole planes: nodes - ranks");
    CHECK(strcmp(slide_node_role_name(SLIDE_ROLE_UNUSED), "unused") == 0 && slide_node_role_name(3) == NULL,
          "role names");
    slide_spares_parse("x:1/4:1", &s);
    CHECK(slide_layout_init(&out, &g2, &s) == SLIDE_OK && out.spare_nodes == 1, "4x4 x:1/4:1: node 15");
    CHECK(slide_layout_set_expect(&out, 2) == SLIDE_EINVAL && slide_layout_set_expect(&out, 1) == SLIDE_OK,
          "the budget counts the spare set's spares");
}

/* ---- hand-computed examples ----------------------------------------------- */

static void test_examples(void)
{
    /* 4x4 mesh, spare column x = 3 (nodes 12..15); rank r on node r. Node 5
     * = (1,1) holds rank 5. */
    slide_layout l = make_layout("mesh:4x4", "x:1");
    int32_t map[12], e;
    int32_t f5[] = {5};
    CHECK(run_map(&l, SLIDE_SIMPLE, f5, 1, map, &e, 0) == SLIDE_OK && e == -1, "simple 5");
    check_map_literal("simple [5]", map, (int32_t[]){0, 1, 2, 3, 4, 13, 6, 7, 8, 9, 10, 11}, 12);
    CHECK(run_map(&l, SLIDE_SLIDE1D, f5, 1, map, &e, 0) == SLIDE_OK, "slide1d 5");
    check_map_literal("slide1d [5]", map, (int32_t[]){0, 1, 2, 3, 4, 9, 6, 7, 8, 13, 10, 11}, 12);
    CHECK(run_map(&l, SLIDE_HYBRID, f5, 1, map, &e, 0) == SLIDE_OK, "hybrid 5");
    /* the 2D phase: the plane x=1 goes, as with slide2d */
    check_map_literal("hybrid [5]", map, (int32_t[]){0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15}, 12);
    CHECK(run_map(&l, SLIDE_SLIDE2D, f5, 1, map, &e, 0) == SLIDE_OK, "slide2d 5");
    check_map_literal("slide2d [5]", map, (int32_t[]){0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15}, 12);
    CHECK(run_map(&l, SLIDE_SHRINK, f5, 1, map, &e, 0) == SLIDE_OK, "shrink 5");
    check_map_literal("shrink [5]", map, (int32_t[]){0, 1, 2, 3, 4, 1, 6, 7, 8, 9, 10, 11}, 12);

    /* Second failure on node 9, which slide1d moved rank 5 onto. */
    int32_t f59[] = {5, 9};
    CHECK(run_map(&l, SLIDE_SLIDE1D, f59, 2, map, &e, 0) == SLIDE_ELINE && e == 1,
          "slide1d: line y=1 is full");
    check_map_literal("slide1d [5,9] keeps the map of [5]", map,
                      (int32_t[]){0, 1, 2, 3, 4, 9, 6, 7, 8, 13, 10, 11}, 12);
    CHECK(run_map(&l, SLIDE_HYBRID, f59, 2, map, &e, 0) == SLIDE_OK, "hybrid [5,9]");
    /* No whole plane left for 9 (rank 5 after the 2D slide): the 1D phase.
     * Line y=1 has no free node (5 dead), so it crosses to line y=0 (tie with
     * y=2, lowest index), whose free node is the vacated 4: 9 -> 8 -> 4. A
     * map slide1d never gives. */
    check_map_literal("hybrid [5,9]", map, (int32_t[]){0, 1, 2, 3, 4, 8, 10, 11, 12, 13, 14, 15}, 12);
    int32_t f513[] = {5, 13};
    CHECK(run_map(&l, SLIDE_SIMPLE, f513, 2, map, &e, 0) == SLIDE_OK, "simple [5,13]");
    /* rank 5 on spare 13 fails again: 12 and 14 are 1 hop away -> 12 */
    check_map_literal("simple [5,13]", map, (int32_t[]){0, 1, 2, 3, 4, 12, 6, 7, 8, 9, 10, 11}, 12);
    int32_t f50[] = {5, 0};
    CHECK(run_map(&l, SLIDE_SLIDE2D, f50, 2, map, &e, 0) == SLIDE_EPLANE && e == 1,
          "slide2d: the only spare plane is used");
    check_map_literal("slide2d [5,0] keeps [5]", map,
                      (int32_t[]){0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15}, 12);
    int32_t f56[] = {5, 6};
    CHECK(run_map(&l, SLIDE_SHRINK, f56, 2, map, &e, 0) == SLIDE_OK, "shrink [5,6]");
    /* 6 = (1,2): neighbours 2, 10, 7 alive (5 dead) -> 2 */
    check_map_literal("shrink [5,6]", map, (int32_t[]){0, 1, 2, 3, 4, 1, 2, 7, 8, 9, 10, 11}, 12);

    /* A spare fails first (13), then node 5 on its line. */
    int32_t f135[] = {13, 5};
    CHECK(run_map(&l, SLIDE_SLIDE1D, f135, 2, map, &e, 0) == SLIDE_ELINE && e == 1,
          "slide1d after its line's spare died");
    CHECK(run_map(&l, SLIDE_HYBRID, f135, 2, map, &e, 0) == SLIDE_OK, "hybrid [13,5]");
    check_map_literal("hybrid [13,5]", map, (int32_t[]){0, 1, 2, 3, 8, 4, 6, 7, 12, 9, 10, 11}, 12);
    CHECK(run_map(&l, SLIDE_SIMPLE, f135, 2, map, &e, 0) == SLIDE_OK, "simple [13,5]");
    check_map_literal("simple [13,5]", map, (int32_t[]){0, 1, 2, 3, 4, 12, 6, 7, 8, 9, 10, 11}, 12);
    int32_t f125[] = {12, 5};
    CHECK(run_map(&l, SLIDE_SLIDE2D, f125, 2, map, &e, 0) == SLIDE_EPLANE && e == 1,
          "slide2d after a spare of the plane died");

    /* Torus: the slide goes the short way round. 4x4 torus x:1, node 1 = (0,1). */
    slide_layout t = make_layout("torus:4x4", "x:1");
    int32_t f1[] = {1};
    CHECK(run_map(&t, SLIDE_SLIDE1D, f1, 1, map, &e, 0) == SLIDE_OK, "torus slide1d");
    check_map_literal("torus slide1d [1]", map, (int32_t[]){0, 13, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 12);
    CHECK(run_map(&t, SLIDE_SLIDE2D, f1, 1, map, &e, 0) == SLIDE_OK, "torus slide2d");
    check_map_literal("torus slide2d [1]", map,
                      (int32_t[]){12, 13, 14, 15, 4, 5, 6, 7, 8, 9, 10, 11}, 12);
    int32_t f9[] = {9}; /* (2,1): + side is 1 step */
    CHECK(run_map(&t, SLIDE_SLIDE1D, f9, 1, map, &e, 0) == SLIDE_OK, "torus slide1d 9");
    check_map_literal("torus slide1d [9]", map, (int32_t[]){0, 1, 2, 3, 4, 5, 6, 7, 8, 13, 10, 11}, 12);

    int32_t f5t[] = {5}; /* (1,1): 2 steps either way round -> the + side */
    CHECK(run_map(&t, SLIDE_SLIDE1D, f5t, 1, map, &e, 0) == SLIDE_OK, "torus slide1d tie");
    check_map_literal("torus slide1d [5] tie goes +", map,
                      (int32_t[]){0, 1, 2, 3, 4, 9, 6, 7, 8, 13, 10, 11}, 12);

    /* Two spare dimensions: 4x4 mesh x:1,y:1, logical 3x3, rank r = (x,y)
     * with r = 3x+y on node 4x+y. Node 5 = (1,1) holds rank 4. */
    slide_layout two = make_layout("mesh:4x4", "x:1,y:1");
    int32_t map2[9];
    int32_t f59b[] = {5, 9};
    CHECK(run_map(&two, SLIDE_SLIDE1D, f59b, 1, map2, &e, 0) == SLIDE_OK, "two dims [5]");
    check_map_literal("two dims slide1d [5]", map2, (int32_t[]){0, 1, 2, 4, 9, 6, 8, 13, 10}, 9);
    /* node 9 (now rank 4): line y=1 along x is full -> secondary line x=2
     * along y: rank 4 -> 10, rank 8 -> 11 */
    CHECK(run_map(&two, SLIDE_SLIDE1D, f59b, 2, map2, &e, 0) == SLIDE_OK, "two dims [5,9]");
    check_map_literal("two dims slide1d [5,9]", map2, (int32_t[]){0, 1, 2, 4, 10, 6, 8, 13, 11}, 9);
    CHECK(run_map(&two, SLIDE_SLIDE2D, f59b, 2, map2, &e, 0) == SLIDE_OK, "two dims slide2d [5,9]");
    /* [5]: plane x=1 out, x planes 0,2,3; [9] = (2,1) is x plane 2 (logical
     * 1) row y=1: x has no usable plane left -> y: row 1 out, rows 0,2,3. */
    check_map_literal("two dims slide2d [5,9]", map2, (int32_t[]){0, 2, 3, 8, 10, 11, 12, 14, 15}, 9);

    /* 3D mesh 3x3x3 with a spare plane z = 2: rank (x,y,z) = (3x+y)*2+z. */
    slide_layout c = make_layout("mesh:3x3x3", "z:1");
    int32_t map3[18];
    int32_t f12[] = {12}; /* node (1,1,0), rank 8 */
    CHECK(run_map(&c, SLIDE_SLIDE1D, f12, 1, map3, &e, 0) == SLIDE_OK, "3D slide1d");
    int32_t want3[18];
    slide_initial_map(&c, want3);
    want3[8] = 13;
    want3[9] = 14;
    check_map_literal("3D slide1d [12]", map3, want3, 18);

    /* Hybrid crossing two dimensions: 3x3x3 mesh x:1, rank r on node r.
     * The spares of line (y,z)=(1,1) and of its four side neighbours die,
     * then node 13 = (1,1,1) fails. The nearest lines with a free spare are
     * the four corners (2 hops away, 1 step along x); the lowest index is
     * (0,0). The path goes y first, then z: 13 -> 10 -> 9 -> spare 18. */
    slide_layout h = make_layout("mesh:3x3x3", "x:1");
    int32_t maph[18], wanth[18];
    int32_t fh[] = {22, 19, 25, 21, 23, 13};
    CHECK(run_map(&h, SLIDE_HYBRID, fh, 6, maph, &e, 0) == SLIDE_OK, "hybrid cross 2 dims");
    slide_initial_map(&h, wanth);
    wanth[13] = 10;
    wanth[10] = 9;
    wanth[9] = 18;
    check_map_literal("hybrid cross y then z", maph, wanth, 18);
    CHECK(run_map(&h, SLIDE_SLIDE1D, fh, 6, maph, &e, 0) == SLIDE_ELINE && e == 5, "slide1d ELINE");
    CHECK(run_map(&h, SLIDE_SIMPLE, fh, 6, maph, &e, 0) == SLIDE_OK && maph[13] == 18,
          "simple picks the lowest of the 3-hop corners");

    /* No spares at all: every method but shrink is out of spares. */
    slide_layout n = make_layout("mesh:3x3", "none");
    int32_t map9[9];
    int32_t f4[] = {4};
    for (int m = 0; m < 4; m++)
        CHECK(run_map(&n, m, f4, 1, map9, &e, 0) == SLIDE_ENOSPARE && e == 0, "no spares, %s",
              slide_method_name(m));
    CHECK(run_map(&n, SLIDE_SHRINK, f4, 1, map9, &e, 0) == SLIDE_OK && map9[4] == 1,
          "shrink without spares: rank 4 -> node 1 (got %d)", map9[4]);
}

/* ---- properties over random failure sequences ------------------------------ */

static const char *const prop_grids[][2] = {
    {"mesh:6x5", "x:1"},       {"torus:7x6", "y:2"},       {"torus:9x9", "x:1,y:1"},
    {"mesh:8x4", "y:1,x:2"},   {"torus:6x5x4", "x:1"},     {"mesh:5x6x5", "x:1,y:1"},
    {"torus:5x5x6", "z:2,x:1"}, {"mesh:4x4x7", "z:2"},     {"torus:2x3", "x:1"},
    {"mesh:3x2x2", "y:1,z:1"}, {"torus:4x4x4", "y:1,z:1"}, {"mesh:12x3", "x:3"},
};
#define NPROP (sizeof prop_grids / sizeof prop_grids[0])

static int allowed_error(int method, int rc)
{
    switch (method) {
    case SLIDE_SIMPLE:
    case SLIDE_HYBRID:
    case SLIDE_ROUTED: return rc == SLIDE_ENOSPARE;
    case SLIDE_SLIDE1D: return rc == SLIDE_ENOSPARE || rc == SLIDE_ELINE;
    case SLIDE_SLIDE2D: return rc == SLIDE_ENOSPARE || rc == SLIDE_EPLANE;
    default: return rc == SLIDE_ENOSURVIVOR;
    }
}

/* Validity of a successful map after failures failed[0..k-1]. */
static void check_valid(const slide_layout *lay, int method, const int32_t *map,
                        const int32_t *init, const unsigned char *dead, const char *tag)
{
    int32_t *owner = malloc((size_t)lay->nodes * sizeof *owner);
    for (int32_t i = 0; i < lay->nodes; i++)
        owner[i] = -1;
    int in_grid = 1, alive = 1, distinct = 1, shrink_ok = 1;
    for (int32_t r = 0; r < lay->ranks; r++) {
        int32_t node = map[r];
        if (node < 0 || node >= lay->nodes) {
            in_grid = 0;
            continue;
        }
        if (dead[node])
            alive = 0;
        if (owner[node] >= 0)
            distinct = 0;
        owner[node] = r;
        if (method == SLIDE_SHRINK &&
            (slide_is_spare(lay, node) || (!dead[init[r]] && node != init[r])))
            shrink_ok = 0;
    }
    CHECK(in_grid, "%s: rank on a node outside the grid", tag);
    CHECK(alive, "%s: rank on a dead node", tag);
    if (method == SLIDE_SHRINK)
        CHECK(shrink_ok, "%s: shrink moved a survivor or used a spare", tag);
    else
        CHECK(distinct, "%s: two ranks on one node", tag);
    free(owner);
}

static void test_properties(void)
{
    for (size_t gi = 0; gi < NPROP; gi++) {
        slide_layout lay = make_layout(prop_grids[gi][0], prop_grids[gi][1]);
        const int32_t N = lay.nodes, R = lay.ranks;
        int32_t *init = malloc((size_t)R * sizeof *init);
        int32_t *prev = malloc((size_t)R * sizeof *prev);
        int32_t *cur = malloc((size_t)R * sizeof *cur);
        int32_t *again = malloc((size_t)R * sizeof *again);
        int32_t *s1d = malloc((size_t)R * sizeof *s1d);
        int32_t *failed = malloc((size_t)N * sizeof *failed);
        unsigned char *dead = malloc((size_t)N);
        slide_initial_map(&lay, init);
        int hit_moved = 0, hit_spare = 0, out_of_spares = 0;
        for (int method = 0; method < SLIDE_NMETHODS; method++) {
            /* routed recomputes every prefix with its candidate search: fewer
             * sequences here; tests/test_sliding_core.py runs thousands */
            const int seeds = method == SLIDE_ROUTED ? 6 : 40;
            for (int seed = 0; seed < seeds; seed++) {
                char tag[128];
                rng_state = 1000003u * gi + 7919u * (unsigned)method + (unsigned)seed;
                memcpy(prev, init, (size_t)R * sizeof *prev);
                memset(dead, 0, (size_t)N);
                int32_t k = 0, nonspare_dead = 0;
                while (k < N) {
                    /* Choose the next failure: a node holding a moved rank,
                     * an alive spare, or any alive node. */
                    int32_t f = -1;
                    int pick = rng_below(10);
                    if (pick < 4) {
                        int32_t r0 = rng_below(R);
                        for (int32_t j = 0; j < R && f < 0; j++) {
                            int32_t r = (r0 + j) % R;
                            if (prev[r] != init[r] && !dead[prev[r]])
                                f = prev[r];
                        }
                    } else if (pick < 6) {
                        int32_t n0 = rng_below(N);
                        for (int32_t j = 0; j < N && f < 0; j++) {
                            int32_t n = (n0 + j) % N;
                            if (!dead[n] && slide_is_spare(&lay, n) == 1)
                                f = n;
                        }
                    }
                    if (f < 0) {
                        int32_t n0 = rng_below(N);
                        for (int32_t j = 0; j < N && f < 0; j++)
                            if (!dead[(n0 + j) % N])
                                f = (n0 + j) % N;
                    }
                    int held_rank = 0, moved = 0;
                    for (int32_t r = 0; r < R; r++)
                        if (prev[r] == f) {
                            held_rank = 1;
                            moved = f != init[r];
                        }
                    if (moved)
                        hit_moved++;
                    if (slide_is_spare(&lay, f))
                        hit_spare++;
                    failed[k++] = f;
                    dead[f] = 1;
                    if (!slide_is_spare(&lay, f))
                        nonspare_dead++;
                    snprintf(tag, sizeof tag, "%s %s %s seed %d k %d", prop_grids[gi][0],
                             prop_grids[gi][1], slide_method_name(method), seed, k);
                    int32_t e = 7;
                    int rc = run_map(&lay, method, failed, k, cur, &e, 0x00);
                    /* Out-of-spares is exact: spare methods fail with
                     * ENOSPARE iff fewer alive nodes than ranks remain. */
                    int no_room = N - k < R;
                    if (method == SLIDE_SIMPLE || method == SLIDE_HYBRID || method == SLIDE_ROUTED)
                        CHECK(rc == (no_room ? SLIDE_ENOSPARE : SLIDE_OK), "%s: rc %d", tag, rc);
                    else if (method != SLIDE_SHRINK)
                        CHECK((rc == SLIDE_ENOSPARE) == no_room, "%s: rc %d", tag, rc);
                    else
                        CHECK((rc == SLIDE_ENOSURVIVOR) == (nonspare_dead == R), "%s: rc %d", tag, rc);
                    if (rc != SLIDE_OK) {
                        if (rc == SLIDE_ENOSPARE)
                            out_of_spares++;
                        CHECK(allowed_error(method, rc), "%s: unexpected error %d", tag, rc);
                        CHECK(e == k - 1, "%s: err_index %d", tag, e);
                        CHECK(same_map(cur, prev, R), "%s: error must leave the previous map", tag);
                        break;
                    }
                    CHECK(e == -1, "%s: err_index on success", tag);
                    check_valid(&lay, method, cur, init, dead, tag);
                    /* Determinism: other scratch contents, same answer. */
                    CHECK(run_map(&lay, method, failed, k, again, &e, 0xA5) == SLIDE_OK &&
                              same_map(cur, again, R),
                          "%s: not deterministic", tag);
                    /* Incremental: a failure that held no rank changes nothing
                     * (shrink: nothing at all may change but adoptions). */
                    if (!held_rank && method != SLIDE_ROUTED)
                        CHECK(same_map(cur, prev, R), "%s: rankless failure moved ranks", tag);
                    if (method == SLIDE_SIMPLE) {
                        int32_t changed = 0;
                        for (int32_t r = 0; r < R; r++)
                            changed += cur[r] != prev[r];
                        CHECK(changed == held_rank, "%s: simple moved %d ranks", tag, changed);
                    }
                    /* hybrid's 2D phase is slide2d: equal whenever slide2d succeeds. */
                    if (method == SLIDE_HYBRID &&
                        run_map(&lay, SLIDE_SLIDE2D, failed, k, s1d, &e, 0) == SLIDE_OK)
                        CHECK(same_map(cur, s1d, R), "%s: hybrid differs from slide2d", tag);
                    /* routed compares hybrid's map at every failure: never a
                     * higher max link load than hybrid's. */
                    if (method == SLIDE_ROUTED &&
                        run_map(&lay, SLIDE_HYBRID, failed, k, s1d, &e, 0) == SLIDE_OK) {
                        slide_metrics mr, mh;
                        CHECK(run_metrics(&lay, cur, -1, &mr) == SLIDE_OK &&
                                  run_metrics(&lay, s1d, -1, &mh) == SLIDE_OK &&
                                  mr.link_load_max <= mh.link_load_max,
                              "%s: routed load %d above hybrid's %d", tag, mr.link_load_max,
                              mh.link_load_max);
                    }
                    memcpy(prev, cur, (size_t)R * sizeof *prev);
                }
            }
        }
        CHECK(hit_moved > 0 && hit_spare > 0 && out_of_spares > 0,
              "%s %s: sequences must cover moved ranks (%d), spares (%d), out of spares (%d)",
              prop_grids[gi][0], prop_grids[gi][1], hit_moved, hit_spare, out_of_spares);
        free(init), free(prev), free(cur), free(again), free(s1d), free(failed), free(dead);
    }
}

/* ---- promises: hop bounds and link loads ------------------------------------ */

/* The stencil's neighbour pairs in the core's order (slide_stencil_messages():
 * the two messages of pair k are 2k and 2k + 1, lower rank first): src and dst
 * of at least 6 * ranks entries. Returns the number of pairs. */
static int64_t stencil_pairs(const slide_layout *lay, int periodic, int32_t *src, int32_t *dst)
{
    return slide_stencil_messages(lay, periodic, -1, src, dst, 6 * (int64_t)lay->ranks) / 2;
}

/* Hops of each neighbour pair under map, in stencil_pairs() order; 0 past the last. */
static void pair_hops(const slide_layout *lay, const int32_t *map, int periodic,
                      int32_t *hops /* [ranks * 3] */)
{
    int32_t *src = malloc((size_t)lay->ranks * 6 * sizeof *src), *dst = malloc((size_t)lay->ranks * 6 * sizeof *dst);
    int64_t n = stencil_pairs(lay, periodic, src, dst);
    for (int64_t k = 0; k < 3 * (int64_t)lay->ranks; k++)
        hops[k] = k < n ? slide_hops(lay, map[src[2 * k]], map[dst[2 * k]]) : 0;
    free(src), free(dst);
}

/* 1 if some neighbour pair sits exactly half an even torus ring apart in a
 * dimension: its route direction is then a tie-break and may overlap other
 * messages, so "link load 1" is not promised for such maps. */
static int has_tie_pair(const slide_layout *lay, const int32_t *map, int periodic)
{
    if (!lay->grid.periodic)
        return 0;
    int32_t *src = malloc((size_t)lay->ranks * 6 * sizeof *src), *dst = malloc((size_t)lay->ranks * 6 * sizeof *dst);
    int64_t n = stencil_pairs(lay, periodic, src, dst);
    int tie = 0;
    for (int64_t k = 0; k < n && !tie; k++) {
        int32_t a[3], b[3];
        slide_node_coords(lay, map[src[2 * k]], a);
        slide_node_coords(lay, map[dst[2 * k]], b);
        for (int e = 0; e < 3; e++) {
            int32_t dd = a[e] > b[e] ? a[e] - b[e] : b[e] - a[e];
            tie |= dd != 0 && 2 * dd == lay->grid.size[e];
        }
    }
    free(src), free(dst);
    return tie;
}

/* Spare sets: no method ever puts a rank on an unused node, a failure on one
 * changes no fixed rule's map, and the spare methods run out exactly when
 * fewer alive job nodes than ranks remain. */
static void test_spare_sets(void)
{
    static const char *const grids[][2] = {
        {"torus:8x8x8", "z:1/16:1"}, {"mesh:6x5", "x:1/5:2"}, {"torus:6x6x4", "x:1,y:1/12:3"},
    };
    for (size_t gi = 0; gi < sizeof grids / sizeof grids[0]; gi++) {
        slide_layout lay = make_layout(grids[gi][0], grids[gi][1]);
        const int32_t N = lay.nodes, R = lay.ranks;
        int32_t *init = malloc((size_t)R * sizeof *init), *cur = malloc((size_t)R * sizeof *cur);
        int32_t *prev = malloc((size_t)R * sizeof *prev), *failed = malloc((size_t)N * sizeof *failed);
        unsigned char *dead = calloc((size_t)N, 1);
        slide_initial_map(&lay, init);
        for (int method = 0; method < SLIDE_NMETHODS; method++) {
            for (int seed = 0; seed < (method == SLIDE_ROUTED ? 3 : 10); seed++) {
                rng_state = 4242u * gi + 31u * (unsigned)method + (unsigned)seed;
                memset(dead, 0, (size_t)N);
                memcpy(prev, init, (size_t)R * sizeof *prev);
                int32_t k = 0, job_dead = 0;
                for (; k < N; k++) {
                    int32_t f = rng_below(N);
                    while (dead[f])
                        f = (f + 1) % N;
                    failed[k] = f;
                    dead[f] = 1;
                    const int unused = slide_node_role(&lay, f) == SLIDE_ROLE_UNUSED;
                    job_dead += !unused;
                    char tag[128];
                    snprintf(tag, sizeof tag, "%s %s %s seed %d k %d", grids[gi][0], grids[gi][1],
                             slide_method_name(method), seed, k + 1);
                    int32_t e;
                    int rc = run_map(&lay, method, failed, k + 1, cur, &e, 0x5a);
                    if (method != SLIDE_SHRINK && R + lay.spare_nodes - job_dead < R) {
                        CHECK(rc == SLIDE_ENOSPARE, "%s: rc %d, out of spares expected", tag, rc);
                        break;
                    }
                    if (rc != SLIDE_OK) {
                        CHECK(allowed_error(method, rc) && rc != SLIDE_ENOSPARE, "%s: rc %d", tag, rc);
                        break;
                    }
                    for (int32_t r = 0; r < R; r++)
                        CHECK(!dead[cur[r]] && (method == SLIDE_SHRINK ||
                                                slide_node_role(&lay, cur[r]) != SLIDE_ROLE_UNUSED),
                              "%s: rank %d on node %d", tag, r, cur[r]);
                    if (unused && method != SLIDE_ROUTED)
                        CHECK(same_map(cur, prev, R), "%s: a failure on an unused node moved ranks", tag);
                    memcpy(prev, cur, (size_t)R * sizeof *prev);
                }
            }
        }
        free(init), free(cur), free(prev), free(failed), free(dead);
    }
}

static void test_promises(void)
{
    for (size_t gi = 0; gi < NPROP; gi++) {
        slide_layout lay = make_layout(prop_grids[gi][0], prop_grids[gi][1]);
        const int32_t N = lay.nodes, R = lay.ranks;
        const int d1 = lay.spares.dim[0];
        const int32_t nlines = N / lay.grid.size[d1];
        int32_t *init = malloc((size_t)R * sizeof *init);
        int32_t *map = malloc((size_t)R * sizeof *map);
        int32_t *h0 = malloc((size_t)R * 3 * sizeof *h0);
        int32_t *h = malloc((size_t)R * 3 * sizeof *h);
        int32_t *failed = malloc((size_t)nlines * sizeof *failed);
        int32_t *lines = malloc((size_t)nlines * sizeof *lines);
        slide_initial_map(&lay, init);
        slide_metrics m;
        for (int periodic = 0; periodic <= lay.grid.periodic; periodic++) {
            pair_hops(&lay, init, periodic, h0);
            CHECK(run_metrics(&lay, init, periodic, &m) == SLIDE_OK &&
                      (m.link_load_max == 1 || has_tie_pair(&lay, init, periodic)),
                  "%s: failure-free map has link load %d", prop_grids[gi][0], m.link_load_max);
            /* slide1d: failures on distinct lines along d1 (at most one dead
             * node per line) keep every pair within +1 hop. */
            for (int method = SLIDE_SLIDE1D; method == SLIDE_SLIDE1D; method++) {
                for (int seed = 0; seed < 30; seed++) {
                    rng_state = 77u * gi + (unsigned)seed + 1000u * (unsigned)method;
                    for (int32_t i = 0; i < nlines; i++)
                        lines[i] = i;
                    for (int32_t i = nlines - 1; i > 0; i--) {
                        int32_t j = rng_below(i + 1), t = lines[i];
                        lines[i] = lines[j];
                        lines[j] = t;
                    }
                    for (int32_t k = 0; k < nlines; k++) {
                        /* a random node on line lines[k] */
                        int32_t c[3], idx = lines[k], pos = rng_below(lay.grid.size[d1]);
                        for (int e = 2; e >= 0; e--) {
                            if (e == d1)
                                continue;
                            c[e] = idx % lay.grid.size[e];
                            idx /= lay.grid.size[e];
                        }
                        c[d1] = pos;
                        failed[k] = slide_node_index(&lay, c);
                        int32_t e;
                        int rc = run_map(&lay, method, failed, k + 1, map, &e, 0);
                        CHECK(rc == SLIDE_OK, "%s %s %s seed %d: rc %d with one failure per line",
                              prop_grids[gi][0], prop_grids[gi][1], slide_method_name(method),
                              seed, rc);
                        if (rc != SLIDE_OK)
                            break;
                        pair_hops(&lay, map, periodic, h);
                        int ok = 1;
                        for (int32_t i = 0; i < R * 3; i++)
                            if (h[i] > h0[i] + 1)
                                ok = 0;
                        CHECK(ok, "%s %s %s seed %d k %d: a pair grew by more than one hop",
                              prop_grids[gi][0], prop_grids[gi][1], slide_method_name(method),
                              seed, k + 1);
                        if (!lay.grid.periodic) {
                            CHECK(run_metrics(&lay, map, periodic, &m) == SLIDE_OK && m.hops_max <= 2,
                                  "%s: mesh slide max hops %d", prop_grids[gi][0], m.hops_max);
                        }
                    }
                }
            }
            /* slide2d: link load stays 1 on every successful map; one failure
             * adds at most one hop to any pair. */
            for (int seed = 0; seed < 40; seed++) {
                rng_state = 31u * gi + (unsigned)seed;
                int32_t seq[8];
                for (int k = 0; k < 8 && k < N; k++) {
                    int32_t f;
                    int fresh;
                    do {
                        f = rng_below(N);
                        fresh = 1;
                        for (int j = 0; j < k; j++)
                            fresh &= seq[j] != f;
                    } while (!fresh);
                    seq[k] = f;
                    int32_t e;
                    int rc = run_map(&lay, SLIDE_SLIDE2D, seq, k + 1, map, &e, 0);
                    if (rc != SLIDE_OK)
                        break;
                    CHECK(run_metrics(&lay, map, periodic, &m) == SLIDE_OK &&
                              (m.link_load_max == 1 || has_tie_pair(&lay, map, periodic)),
                          "%s %s slide2d seed %d k %d: link load %d", prop_grids[gi][0],
                          prop_grids[gi][1], seed, k + 1, (int)m.link_load_max);
                    if (k == 0) {
                        pair_hops(&lay, map, periodic, h);
                        int ok = 1;
                        for (int32_t i = 0; i < R * 3; i++)
                            if (h[i] > h0[i] + 1)
                                ok = 0;
                        CHECK(ok, "%s slide2d seed %d: one failure added more than one hop",
                              prop_grids[gi][0], seed);
                    }
                }
            }
        }
        free(init), free(map), free(h0), free(h), free(failed), free(lines);
    }
}

/* ---- metrics -------------------------------------------------------------- */

static void test_metrics(void)
{
    slide_layout l = make_layout("mesh:4x4", "x:1");
    slide_metrics m;
    int32_t init[12];
    slide_initial_map(&l, init);
    CHECK(run_metrics(&l, init, -1, &m) == SLIDE_OK, "metrics initial");
    CHECK(m.pairs == 17 && m.hops_sum == 17 && m.hops_max == 1 && m.hops_hist[1] == 17 &&
              m.link_load_max == 1 && m.links_used == 34 && m.links_overloaded == 0 &&
              m.ranks_moved == 0 && m.ranks_per_node_max == 1,
          "4x4 x:1 initial metrics: pairs %lld sum %lld max %d used %lld",
          (long long)m.pairs, (long long)m.hops_sum, m.hops_max, (long long)m.links_used);
    /* slide1d after node 5 fails (computed by hand in the test comments):
     * six pairs change; link (9,-x) carries 3 messages (9->4, 9->6, 9->1),
     * links (13,-x), (4,+x), (6,+x) carry 2 each. */
    int32_t s1[12] = {0, 1, 2, 3, 4, 9, 6, 7, 8, 13, 10, 11};
    CHECK(run_metrics(&l, s1, -1, &m) == SLIDE_OK, "metrics slide1d");
    CHECK(m.pairs == 17 && m.hops_sum == 22 && m.hops_max == 2 && m.hops_hist[1] == 12 &&
              m.hops_hist[2] == 5 && m.link_load_max == 3 && m.links_overloaded == 4 &&
              m.ranks_moved == 2,
          "4x4 slide1d metrics: sum %lld max %d load %d over %lld moved %d",
          (long long)m.hops_sum, m.hops_max, m.link_load_max, (long long)m.links_overloaded,
          m.ranks_moved);
    CHECK(m.hops_mean > 1.29 && m.hops_mean < 1.30, "mean %f", m.hops_mean);
    /* shrink: two ranks on node 1 */
    int32_t sh[12] = {0, 1, 2, 3, 4, 1, 6, 7, 8, 9, 10, 11};
    CHECK(run_metrics(&l, sh, -1, &m) == SLIDE_OK && m.ranks_per_node_max == 2 &&
              m.hops_hist[0] == 1,
          "shrink co-located pair is 0 hops");

    /* Torus ring of 4: ties go the + way except from position 2 (SimGrid's
     * rule). Map ranks 0..3 -> nodes 0,2,1,3: 0->2 goes +, 2->0 goes -. */
    slide_layout ring = make_layout("torus:4x1", "none");
    int32_t rm[4] = {0, 2, 1, 3};
    CHECK(run_metrics(&ring, rm, -1, &m) == SLIDE_OK, "ring metrics");
    CHECK(m.pairs == 4 && m.hops_sum == 6 && m.link_load_max == 3 && m.links_used == 7 &&
              m.links_overloaded == 4,
          "ring: pairs %lld sum %lld load %d used %lld over %lld", (long long)m.pairs,
          (long long)m.hops_sum, m.link_load_max, (long long)m.links_used,
          (long long)m.links_overloaded);
    CHECK(run_metrics(&ring, rm, 0, &m) == SLIDE_OK && m.pairs == 3, "non-periodic stencil");

    /* 3D torus, no failure, periodic stencil: 2 spare planes make the wrap
     * pairs along x 3 hops. */
    slide_layout t = make_layout("torus:6x4x4", "x:2");
    int32_t *ti = malloc((size_t)t.ranks * sizeof *ti);
    slide_initial_map(&t, ti);
    /* The wrap pair (x=3, x=0) is exactly half the 6-ring apart: 0->3 goes +
     * over links 0+,1+,2+ and 3->0 (from position n/2) goes - over 3-,2-,1-,
     * all used by the pairs (0,1), (1,2), (2,3) already: load 2 on 6 links in
     * each of the 16 x-lines. */
    CHECK(run_metrics(&t, ti, -1, &m) == SLIDE_OK && m.hops_max == 3 && m.hops_hist[3] == 16 &&
              m.pairs == 3 * 64 && m.link_load_max == 2 && m.links_overloaded == 96,
          "6x4x4 x:2 initial: max %d hist3 %lld pairs %lld load %d over %lld", m.hops_max,
          (long long)m.hops_hist[3], (long long)m.pairs, m.link_load_max,
          (long long)m.links_overloaded);
    free(ti);

    /* errors */
    int32_t badmap[12] = {0, 1, 2, 3, 4, 16, 6, 7, 8, 9, 10, 11};
    CHECK(run_metrics(&l, badmap, -1, &m) == SLIDE_EMAP, "map entry outside grid");
    CHECK(run_metrics(&l, init, 2, &m) == SLIDE_EINVAL, "stencil_periodic 2");
    char small[16];
    CHECK(slide_measure(&l, init, -1, &m, small, sizeof small) == SLIDE_EWORKSPACE, "small workspace");
}

/* Reference metrics for the tests: a plain second implementation (explicit
 * coordinates, one step at a time) of hops and dimension-order routing. */
static void reference_metrics(const slide_layout *lay, const int32_t *map, int periodic,
                              int64_t *hops_sum, int32_t *load_max, int64_t *over)
{
    const int32_t *n = lay->grid.size, *L = lay->logical;
    int32_t *load = calloc((size_t)lay->nodes * 6, sizeof *load);
    *hops_sum = 0;
    for (int32_t r = 0; r < lay->ranks; r++) {
        int32_t lc[3] = {r / (L[1] * L[2]), (r / L[2]) % L[1], r % L[2]};
        for (int d = 0; d < 3; d++) {
            int32_t oc[3] = {lc[0], lc[1], lc[2]};
            oc[d]++;
            if (oc[d] == L[d]) {
                if (!periodic || L[d] < 3)
                    continue;
                oc[d] = 0;
            }
            int32_t other = (oc[0] * L[1] + oc[1]) * L[2] + oc[2];
            int32_t ends[2] = {map[r], map[other]};
            *hops_sum += slide_hops(lay, ends[0], ends[1]);
            for (int way = 0; way < 2; way++) {
                int32_t cur[3], dst[3];
                slide_node_coords(lay, ends[way], cur);
                slide_node_coords(lay, ends[1 - way], dst);
                for (int e = 0; e < 3; e++) {
                    while (cur[e] != dst[e]) {
                        int up;
                        if (!lay->grid.periodic) {
                            up = dst[e] > cur[e];
                        } else {
                            int32_t plus = 0, c = cur[e];
                            while (c != dst[e]) {
                                c = (c + 1) % n[e];
                                plus++;
                            }
                            /* tie: +, except from position n/2 */
                            up = plus < n[e] - plus ||
                                 (plus == n[e] - plus && cur[e] != n[e] / 2);
                        }
                        int32_t node = slide_node_index(lay, cur);
                        load[node * 6 + e * 2 + (up ? 0 : 1)]++;
                        cur[e] = up ? (cur[e] + 1) % n[e] : (cur[e] - 1 + n[e]) % n[e];
                    }
                }
            }
        }
    }
    *load_max = 0;
    *over = 0;
    for (int32_t i = 0; i < lay->nodes * 6; i++) {
        if (load[i] > *load_max)
            *load_max = load[i];
        *over += load[i] > 1;
    }
    free(load);
}

static void test_metrics_reference(void)
{
    const char *grids[][2] = {{"torus:4x4", "none"}, {"torus:6x4", "x:2"}, {"mesh:5x4", "y:1"},
                              {"torus:4x6x4", "z:2"}, {"mesh:3x4x5", "x:1,z:1"},
                              {"torus:6x6x6", "x:1,y:1"}};
    for (size_t gi = 0; gi < sizeof grids / sizeof grids[0]; gi++) {
        slide_layout lay = make_layout(grids[gi][0], grids[gi][1]);
        int32_t *perm = malloc((size_t)lay.nodes * sizeof *perm);
        rng_state = 4242u + gi;
        for (int trial = 0; trial < 20; trial++) {
            for (int32_t i = 0; i < lay.nodes; i++)
                perm[i] = i;
            for (int32_t i = lay.nodes - 1; i > 0; i--) {
                int32_t j = rng_below(i + 1), t = perm[i];
                perm[i] = perm[j];
                perm[j] = t;
            }
            for (int periodic = 0; periodic <= 1; periodic++) {
                slide_metrics m;
                int64_t sum, over;
                int32_t lmax;
                reference_metrics(&lay, perm, periodic, &sum, &lmax, &over);
                CHECK(run_metrics(&lay, perm, periodic, &m) == SLIDE_OK && m.hops_sum == sum &&
                          m.link_load_max == lmax && m.links_overloaded == over,
                      "%s %s trial %d: metrics (%lld, %d, %lld) vs reference (%lld, %d, %lld)",
                      grids[gi][0], grids[gi][1], trial, (long long)m.hops_sum, m.link_load_max,
                      (long long)m.links_overloaded, (long long)sum, lmax, (long long)over);
            }
        }
        free(perm);
    }
}

/* ---- errors ---------------------------------------------------------------- */

static void test_errors(void)
{
    slide_layout l = make_layout("mesh:4x4", "x:1");
    size_t bytes = slide_map_workspace_bytes(&l);
    uint64_t *work = malloc(bytes + 16);
    int32_t map[12], e;
    int32_t f[] = {5, 3, 5};
    CHECK(slide_map(&l, 9, f, 1, map, work, bytes, &e) == SLIDE_EMETHOD && e == -1, "method 9");
    CHECK(slide_map(&l, -1, f, 1, map, work, bytes, &e) == SLIDE_EMETHOD, "method -1");
    CHECK(slide_map(&l, 0, f, 1, map, work, bytes - 4, &e) == SLIDE_EWORKSPACE, "workspace short");
    CHECK(slide_map(&l, 0, f, 1, map, (char *)work + 4, bytes, &e) == SLIDE_EWORKSPACE,
          "workspace misaligned");
    CHECK(slide_map(NULL, 0, f, 1, map, work, bytes, &e) == SLIDE_EINVAL, "NULL layout");
    CHECK(slide_map(&l, 0, NULL, 1, map, work, bytes, &e) == SLIDE_EINVAL, "NULL failed");
    CHECK(slide_map(&l, 0, f, -1, map, work, bytes, &e) == SLIDE_EINVAL, "negative count");
    CHECK(slide_map(&l, 0, NULL, 0, map, work, bytes, NULL) == SLIDE_OK && map[11] == 11,
          "no failure, NULL err_index");
    for (int m = 0; m < SLIDE_NMETHODS; m++) {
        int32_t dup[] = {5, 5};
        CHECK(slide_map(&l, m, dup, 2, map, work, bytes, &e) == SLIDE_EDUP && e == 1,
              "%s: duplicate", slide_method_name(m));
        int32_t out[] = {5, 16};
        CHECK(slide_map(&l, m, out, 2, map, work, bytes, &e) == SLIDE_ENODE && e == 1,
              "%s: node 16 outside", slide_method_name(m));
        int32_t neg[] = {-1};
        CHECK(slide_map(&l, m, neg, 1, map, work, bytes, &e) == SLIDE_ENODE && e == 0,
              "%s: node -1", slide_method_name(m));
    }
    /* shrink: all 12 non-spare nodes die -> error at the 12th */
    int32_t all[13] = {12, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
    CHECK(slide_map(&l, SLIDE_SHRINK, all, 13, map, work, bytes, &e) == SLIDE_ENOSURVIVOR &&
              e == 12 && map[11] == 11 && map[0] == 11,
          "shrink: no survivor (e %d, map[0] %d)", e, map[0]);
    /* simple: 4 spares -> the 5th rank failure is out of spares */
    int32_t five[] = {0, 1, 2, 3, 4};
    CHECK(slide_map(&l, SLIDE_SIMPLE, five, 5, map, work, bytes, &e) == SLIDE_ENOSPARE && e == 4,
          "simple: out of spares at the 5th failure");
    CHECK(slide_map(&l, SLIDE_HYBRID, five, 5, map, work, bytes, &e) == SLIDE_ENOSPARE && e == 4,
          "hybrid: out of spares at the 5th failure");
    free(work);
}

/* ---- ranks per node: blocks ------------------------------------------------- */

static void test_blocks(void)
{
    int32_t b[3];
    CHECK(slide_block_parse("2x2x1", 3, b) == SLIDE_OK && b[0] == 2 && b[1] == 2 && b[2] == 1, "parse 2x2x1");
    CHECK(slide_block_parse("4x1", 2, b) == SLIDE_OK && b[0] == 4 && b[1] == 1 && b[2] == 1, "parse 2D");
    const char *bad[] = {"", "2x2", "0x1x1", "2x", "x2x1", "2x2x2x1", "2*2*1", "-1x1x1", "2x2x1 ", "99999999x1x1"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        b[0] = 7;
        CHECK(slide_block_parse(bad[i], 3, b) == SLIDE_EBLOCK && b[0] == 7, "'%s' is refused, nothing written", bad[i]);
    }
    CHECK(slide_block_parse("2x2x1", 4, b) == SLIDE_EINVAL && slide_block_parse(NULL, 3, b) == SLIDE_EINVAL,
          "parse arguments");
    const struct { int32_t k, ndims, b[3]; } defaults[] = {
        {1, 3, {1, 1, 1}}, {2, 3, {2, 1, 1}}, {4, 3, {2, 2, 1}}, {6, 3, {3, 2, 1}}, {8, 3, {2, 2, 2}},
        {12, 3, {3, 2, 2}}, {16, 3, {4, 2, 2}}, {7, 3, {7, 1, 1}}, {4, 2, {2, 2, 1}}, {8, 2, {4, 2, 1}},
    };
    for (size_t i = 0; i < sizeof defaults / sizeof *defaults; i++) {
        CHECK(slide_block_default(defaults[i].k, defaults[i].ndims, b) == SLIDE_OK && b[0] == defaults[i].b[0] &&
                  b[1] == defaults[i].b[1] && b[2] == defaults[i].b[2],
              "default block of %d in %dD: %dx%dx%d", defaults[i].k, defaults[i].ndims, b[0], b[1], b[2]);
    }
    CHECK(slide_block_default(0, 3, b) == SLIDE_EINVAL, "default of 0 ranks");

    /* numbering: a bijection, and the ranks of a block are its node rank's */
    slide_layout lay = make_layout("torus:3x2x2", "x:1");
    const int32_t blocks[][3] = {{1, 1, 1}, {2, 1, 1}, {2, 2, 1}, {1, 3, 2}};
    for (size_t i = 0; i < sizeof blocks / sizeof *blocks; i++) {
        const int32_t *bl = blocks[i], K = bl[0] * bl[1] * bl[2];
        CHECK(slide_block_ranks(&lay, bl) == (int64_t)lay.ranks * K, "rank count");
        int seen[96] = {0}, ok = 1;
        for (int32_t n = 0; n < lay.ranks; n++)
            for (int32_t k = 0; k < K; k++) {
                int32_t f = slide_block_rank(&lay, bl, n, k), n2, k2;
                slide_block_locate(&lay, bl, f, &n2, &k2);
                ok &= f >= 0 && f < lay.ranks * K && !seen[f] && n2 == n && k2 == k;
                if (f >= 0 && f < 96)
                    seen[f] = 1;
            }
        CHECK(ok, "block %dx%dx%d: numbering is a bijection", bl[0], bl[1], bl[2]);
    }
    int32_t unit[3] = {1, 1, 1}, twod[3] = {2, 2, 2};
    CHECK(slide_block_rank(&lay, unit, 5, 0) == 5, "a unit block's rank is its node rank");
    slide_layout flat = make_layout("mesh:3x2", "none");
    CHECK(slide_block_ranks(&flat, twod) == -1, "a 2D grid takes no block along z");

    /* mesh:3x2, blocks of 2x1: the rank grid is 6x2; a link along x carries
     * one rank's face, a link along y two; three pairs per row stay inside. */
    int32_t map[6], pairs_b[3] = {2, 1, 1};
    slide_initial_map(&flat, map);
    int32_t nodes_of[12];
    CHECK(slide_block_rank_nodes(&flat, pairs_b, map, nodes_of) == SLIDE_OK && nodes_of[0] == 0 &&
              nodes_of[1] == 1 && nodes_of[2] == 0 && nodes_of[3] == 1 && nodes_of[4] == 2 && nodes_of[11] == 5,
          "rank nodes: rank (x, y) on node (x / 2, y)");
    size_t bytes = slide_block_measure_workspace_bytes(&flat, pairs_b);
    void *work = malloc(bytes);
    slide_metrics m;
    CHECK(slide_block_measure(&flat, pairs_b, map, -1, &m, work, bytes) == SLIDE_OK && m.pairs == 16 &&
              m.hops_hist[0] == 6 && m.hops_sum == 10 && m.link_load_max == 2 && m.ranks_per_node_max == 2 &&
              m.ranks_moved == 0,
          "faces: pairs %lld, inside %lld, hops %lld, load %d, per node %d", (long long)m.pairs,
          (long long)m.hops_hist[0], (long long)m.hops_sum, m.link_load_max, m.ranks_per_node_max);
    int32_t moved[6] = {0, 1, 2, 3, 5, 4}; /* the last two node ranks swap nodes: 4 ranks moved */
    CHECK(slide_block_measure(&flat, pairs_b, moved, -1, &m, work, bytes) == SLIDE_OK && m.ranks_moved == 4,
          "ranks moved count ranks");
    CHECK(slide_block_measure(&flat, twod, map, -1, &m, work, bytes) == SLIDE_EBLOCK, "an invalid block");
    free(work);
    /* the unit block is slide_measure */
    slide_metrics a, c;
    int32_t init[8];
    slide_initial_map(&lay, init);
    bytes = slide_measure_workspace_bytes(&lay);
    work = malloc(bytes);
    CHECK(slide_measure(&lay, init, -1, &a, work, bytes) == SLIDE_OK &&
              slide_block_measure(&lay, unit, init, -1, &c, work, bytes) == SLIDE_OK && memcmp(&a, &c, sizeof a) == 0,
          "unit block = slide_measure");
    free(work);
}

/* ---- redundancy across failure domains ----------------------------------- */

/* Checks one slide_groups() answer against its contract; returns 1 if it holds. */
static int groups_hold(const slide_layout *lay, const int32_t *map, const int32_t *dom, int32_t g, int32_t m,
                       const int32_t *group_of, const int32_t *member_of, const int32_t *size, int32_t ngroups)
{
    const int32_t R = lay->ranks;
    if (ngroups != R / g)
        return 0;
    int32_t *seen = calloc((size_t)ngroups, sizeof *seen);
    int ok = 1;
    for (int32_t r = 0; r < R && ok; r++) {
        if (group_of[r] < 0 || group_of[r] >= ngroups)
            ok = 0;
        else if (member_of[r] != seen[group_of[r]]++) /* members numbered in ascending node rank */
            ok = 0;
    }
    for (int32_t k = 0; k < ngroups && ok; k++) /* sizes ceil((R - k) / ngroups), the larger first */
        ok = size[k] == seen[k] && size[k] == (R - k + ngroups - 1) / ngroups && size[k] >= g;
    /* no group holds more than m members of one domain */
    for (int32_t r = 0; r < R && ok; r++) {
        int32_t same = 0;
        for (int32_t q = 0; q < R; q++) {
            int32_t dr = dom ? dom[map[r]] : map[r], dq = dom ? dom[map[q]] : map[q];
            same += group_of[q] == group_of[r] && dr == dq;
        }
        ok = same <= m;
    }
    free(seen);
    return ok;
}

/* The largest number of node ranks on one domain. */
static int32_t crowded_domain(const slide_layout *lay, const int32_t *map, const int32_t *dom)
{
    int32_t most = 0;
    for (int32_t r = 0; r < lay->ranks; r++) {
        int32_t c = 0;
        for (int32_t q = 0; q < lay->ranks; q++)
            c += (dom ? dom[map[q]] == dom[map[r]] : map[q] == map[r]);
        if (c > most)
            most = c;
    }
    return most;
}

/* Reference buddy shift: ranks/2 if it works, else the smallest that works, else -1. */
static int32_t reference_shift(const slide_layout *lay, const int32_t *map, const int32_t *dom)
{
    const int32_t R = lay->ranks;
    for (int32_t i = 0; i < R; i++) {
        int32_t h = i == 0 ? R / 2 : i;
        if (h == 0 || (i > 0 && h == R / 2))
            continue;
        int ok = 1;
        for (int32_t r = 0; r < R && ok; r++) {
            int32_t b = (r + h) % R;
            ok = dom ? dom[map[r]] != dom[map[b]] : map[r] != map[b];
        }
        if (ok)
            return h;
    }
    return -1;
}

static void test_redundancy(void)
{
    /* policies */
    slide_redundancy p = {9, 9, 9};
    CHECK(slide_redundancy_parse("buddy", &p) == SLIDE_OK && p.kind == SLIDE_REDUNDANCY_BUDDY && p.group == 2 &&
              p.lose == 1, "buddy");
    CHECK(slide_redundancy_parse("parity:4", &p) == SLIDE_OK && p.kind == SLIDE_REDUNDANCY_PARITY && p.group == 4 &&
              p.lose == 1, "parity:4");
    CHECK(slide_redundancy_parse("rs:8,2", &p) == SLIDE_OK && p.kind == SLIDE_REDUNDANCY_RS && p.group == 8 &&
              p.lose == 2, "rs:8,2");
    const struct { const char *text; int rc; } bad_policies[] = {
        {"", SLIDE_EREDUNDANCY},         {"Buddy", SLIDE_EREDUNDANCY},     {"parity", SLIDE_EREDUNDANCY},
        {"parity:", SLIDE_EREDUNDANCY},  {"parity:4x", SLIDE_EREDUNDANCY}, {"parity:-4", SLIDE_EREDUNDANCY},
        {"rs:8", SLIDE_EREDUNDANCY},     {"rs:8,", SLIDE_EREDUNDANCY},     {"rs:8,2,1", SLIDE_EREDUNDANCY},
        {"rs:8;2", SLIDE_EREDUNDANCY},   {"parity:4 ", SLIDE_EREDUNDANCY},
        {"parity:99999999999", SLIDE_EREDUNDANCY},
        {"parity:1", SLIDE_EGROUP},      {"parity:0", SLIDE_EGROUP},       {"rs:4,4", SLIDE_EGROUP},
        {"rs:4,5", SLIDE_EGROUP},        {"rs:4,0", SLIDE_EGROUP},         {"rs:1,1", SLIDE_EGROUP},
    };
    for (size_t i = 0; i < sizeof bad_policies / sizeof bad_policies[0]; i++) {
        slide_redundancy before = {7, 7, 7};
        int rc = slide_redundancy_parse(bad_policies[i].text, &before);
        CHECK(rc == bad_policies[i].rc && before.kind == 7 && before.group == 7,
              "policy '%s': got %d want %d, or output written", bad_policies[i].text, rc, bad_policies[i].rc);
    }
    CHECK(slide_redundancy_parse(NULL, &p) == SLIDE_EINVAL && slide_redundancy_parse("buddy", NULL) == SLIDE_EINVAL,
          "NULL policy");
    CHECK(strcmp(slide_redundancy_kind_name(SLIDE_REDUNDANCY_RS), "rs") == 0 && slide_redundancy_kind_name(3) == NULL &&
              slide_redundancy_kind_name(-1) == NULL, "kind names");
    CHECK(slide_struct_size(7) == sizeof(slide_redundancy), "struct size of slide_redundancy");
    for (int code = SLIDE_EDOMAIN_SHAPE; code <= SLIDE_ENOPLACEMENT; code++)
        CHECK(slide_status_name(code) != NULL && strlen(slide_strerror(code)) > 20, "status %d has a name", code);
    CHECK(strcmp(slide_status_name(SLIDE_ENOPLACEMENT), "ENOPLACEMENT") == 0 &&
              strstr(slide_strerror(SLIDE_EGROUP_RANKS), "group size larger than the node ranks") != NULL,
          "status names");

    /* domain boxes */
    slide_layout t = make_layout("torus:4x4x2", "x:1"), f = make_layout("mesh:5x4", "x:1");
    int32_t shape[3] = {9, 9, 9}, dom[64], nd = -1;
    CHECK(slide_domain_shape_parse(&t, "2x2x1", shape) == SLIDE_OK && shape[0] == 2 && shape[1] == 2 && shape[2] == 1,
          "2x2x1");
    CHECK(slide_domain_shape_parse(&f, "2x2", shape) == SLIDE_OK && shape[2] == 1, "2x2 on a 2D grid");
    CHECK(slide_domain_shape_parse(&t, "4x4x2", shape) == SLIDE_OK, "the whole grid is a box");
    const char *bad_shapes[] = {"2x2", "2x2x1x1", "0x2x1", "5x1x1", "1x1x3", "2x2x", "x2x1", "2*2*1", "", "2x2x-1"};
    for (size_t i = 0; i < sizeof bad_shapes / sizeof bad_shapes[0]; i++) {
        int32_t keep[3] = {7, 7, 7};
        CHECK(slide_domain_shape_parse(&t, bad_shapes[i], keep) == SLIDE_EDOMAIN_SHAPE && keep[0] == 7,
              "shape '%s' on torus:4x4x2", bad_shapes[i]);
    }
    CHECK(slide_domain_shape_parse(&f, "2x2x1", shape) == SLIDE_EDOMAIN_SHAPE, "three sizes on a 2D grid");
    CHECK(slide_domain_shape_parse(NULL, "2x2", shape) == SLIDE_EINVAL, "NULL layout");
    int32_t s221[3] = {2, 2, 1};
    CHECK(slide_domains_block(&t, s221, dom, &nd) == SLIDE_OK && nd == 8, "4x4x2 in 2x2x1 boxes: 8, got %d", nd);
    int ok = 1;
    for (int32_t n = 0; n < t.nodes; n++) {
        int32_t c[3];
        slide_node_coords(&t, n, c);
        ok &= dom[n] == ((c[0] / 2) * 2 + c[1] / 2) * 2 + c[2];
    }
    CHECK(ok, "box numbering row-major over the boxes, spares included");
    int32_t s22[3] = {2, 2, 1};
    CHECK(slide_domains_block(&f, s22, dom, &nd) == SLIDE_OK && nd == 6 && dom[node_of(&f, 4, 3, 0)] == 5 &&
              dom[node_of(&f, 4, 0, 0)] == 4 && dom[node_of(&f, 1, 3, 0)] == 1,
          "5x4 in 2x2 boxes: a thinner last row of boxes");
    int32_t used[6] = {0};
    for (int32_t n = 0; n < f.nodes; n++)
        used[dom[n]]++;
    CHECK(used[0] == 4 && used[4] == 2 && used[5] == 2, "every box number used, edge boxes thinner");
    int32_t s_bad[][3] = {{0, 1, 1}, {6, 1, 1}, {1, 1, 2}, {2, 5, 1}};
    for (size_t i = 0; i < 4; i++)
        CHECK(slide_domains_block(&f, s_bad[i], dom, &nd) == SLIDE_EDOMAIN_SHAPE, "bad box %zu", i);
    CHECK(slide_domains_block(&f, s22, NULL, &nd) == SLIDE_EINVAL, "NULL output");

    /* groups: the worked example of mesh:4x4 x:1 (12 node ranks) in 2x2 boxes, parity:3 */
    slide_layout l = make_layout("mesh:4x4", "x:1");
    int32_t map[64], gof[64], mof[64], size[64], ng = -1;
    slide_initial_map(&l, map);
    CHECK(slide_domains_block(&l, s22, dom, &nd) == SLIDE_OK && nd == 4, "4x4 in 2x2 boxes");
    CHECK(slide_groups(&l, map, dom, 3, 1, gof, mof, size, &ng) == SLIDE_OK && ng == 4, "parity:3 on 12: 4 groups");
    const int32_t want_g[12] = {0, 1, 0, 1, 2, 3, 2, 3, 0, 1, 2, 3}, want_m[12] = {0, 0, 1, 1, 0, 0, 1, 1, 2, 2, 2, 2};
    check_map_literal("groups of the worked example", gof, want_g, 12);
    check_map_literal("members of the worked example", mof, want_m, 12);
    CHECK(size[0] == 3 && size[3] == 3, "groups of 3");
    /* parity:4 there: 3 groups but a box holds 4 node ranks > 1 * 3 */
    CHECK(slide_groups(&l, map, dom, 4, 1, gof, mof, size, &ng) == SLIDE_ENOPLACEMENT, "4 in a box > 3 groups");
    CHECK(slide_groups(&l, map, dom, 4, 2, gof, mof, size, &ng) == SLIDE_OK && ng == 3 &&
              groups_hold(&l, map, dom, 4, 2, gof, mof, size, ng), "rs:4,2 fits");
    /* argument errors write nothing */
    int32_t one[64];
    for (int32_t n = 0; n < l.nodes; n++)
        one[n] = 0;
    int32_t bad_map[64];
    memcpy(bad_map, map, sizeof bad_map);
    bad_map[5] = l.nodes;
    int32_t neg[64];
    memcpy(neg, dom, sizeof neg);
    neg[7] = -1;
    const struct { int32_t g, m; const int32_t *map, *dom; int rc; const char *what; } errs[] = {
        {1, 1, map, dom, SLIDE_EGROUP, "g < 2"},           {2, 0, map, dom, SLIDE_EGROUP, "m < 1"},
        {3, 3, map, dom, SLIDE_EGROUP, "m == g"},          {3, 4, map, dom, SLIDE_EGROUP, "m > g"},
        {13, 1, map, dom, SLIDE_EGROUP_RANKS, "g > ranks"}, {3, 1, bad_map, dom, SLIDE_EMAP, "map outside"},
        {3, 1, map, neg, SLIDE_EINVAL, "negative domain"},
    };
    for (size_t i = 0; i < sizeof errs / sizeof errs[0]; i++) {
        for (int k = 0; k < 12; k++)
            gof[k] = mof[k] = size[k] = -7;
        ng = -7;
        int rc = slide_groups(&l, errs[i].map, errs[i].dom, errs[i].g, errs[i].m, gof, mof, size, &ng);
        CHECK(rc == errs[i].rc && gof[0] == -7 && mof[0] == -7 && size[0] == -7 && ng == -7,
              "groups, %s: got %d want %d, or output written", errs[i].what, rc, errs[i].rc);
    }
    CHECK(slide_groups(&l, map, one, 2, 1, gof, mof, size, &ng) == SLIDE_ENOPLACEMENT, "every node in one domain");
    CHECK(slide_groups(&l, map, one, 12, 11, gof, mof, size, &ng) == SLIDE_ENOPLACEMENT, "one domain of 12 > 11 * 1");
    CHECK(slide_groups(&l, NULL, dom, 3, 1, gof, mof, size, &ng) == SLIDE_EINVAL &&
              slide_groups(NULL, map, dom, 3, 1, gof, mof, size, &ng) == SLIDE_EINVAL &&
              slide_groups(&l, map, dom, 3, 1, gof, mof, NULL, &ng) == SLIDE_EINVAL, "NULL arguments");
    /* uneven: 14 node ranks at g = 4: 3 groups of 5, 5, 4; 7 at g = 4: one group of 7 */
    slide_layout u = make_layout("mesh:8x2", "x:1"), v = make_layout("mesh:8x2", "x:1,y:1");
    slide_initial_map(&u, map);
    CHECK(slide_groups(&u, map, NULL, 4, 1, gof, mof, size, &ng) == SLIDE_OK && ng == 3 && size[0] == 5 &&
              size[1] == 5 && size[2] == 4 && groups_hold(&u, map, NULL, 4, 1, gof, mof, size, ng), "14 at g = 4");
    slide_initial_map(&v, map);
    CHECK(slide_groups(&v, map, NULL, 4, 1, gof, mof, size, &ng) == SLIDE_OK && ng == 1 && size[0] == 7, "7 at g = 4");

    /* random layouts, maps after failures and domain assignments: the contract, determinism, and
     * ENOPLACEMENT exactly when a domain holds more than m * ngroups node ranks */
    const char *grids[][2] = {{"torus:6x5x3", "x:1"}, {"mesh:7x6", "x:2"}, {"torus:5x5x4", "z:1/5:2"},
                              {"mesh:6x6", "x:1,y:1"}, {"torus:4x4x4", "x:1"}};
    rng_state = 38;
    int cases = 0, placed = 0, refused = 0;
    for (size_t gi = 0; gi < sizeof grids / sizeof grids[0]; gi++) {
        slide_layout a = make_layout(grids[gi][0], grids[gi][1]);
        int32_t *m1 = malloc(sizeof(int32_t) * (size_t)a.ranks), *d = malloc(sizeof(int32_t) * (size_t)a.nodes);
        int32_t *g1 = malloc(sizeof(int32_t) * (size_t)a.ranks), *g2 = malloc(sizeof(int32_t) * (size_t)a.ranks);
        int32_t *e1 = malloc(sizeof(int32_t) * (size_t)a.ranks), *e2 = malloc(sizeof(int32_t) * (size_t)a.ranks);
        int32_t *z1 = malloc(sizeof(int32_t) * (size_t)a.ranks), *z2 = malloc(sizeof(int32_t) * (size_t)a.ranks);
        for (int trial = 0; trial < 60; trial++) {
            int32_t failed[3], nf = rng_below(4), err;
            for (int32_t k = 0; k < nf; k++) {
                failed[k] = rng_below(a.nodes);
                for (int32_t q = 0; q < k; q++)
                    if (failed[q] == failed[k])
                        failed[k] = -1;
                if (failed[k] < 0)
                    nf = k;
            }
            if (run_map(&a, SLIDE_HYBRID, failed, nf, m1, &err, 0x5a) != SLIDE_OK)
                continue;
            int32_t ndom = 1 + rng_below(a.nodes), *dd = d;
            if (trial % 10 == 9) {
                dd = NULL;
            } else if (trial % 3 == 0) { /* boxes */
                int32_t box[3] = {1 + rng_below(a.grid.size[0]), 1 + rng_below(a.grid.size[1]),
                                  1 + rng_below(a.grid.size[2])};
                CHECK(slide_domains_block(&a, box, d, &ndom) == SLIDE_OK, "random box");
            } else {
                for (int32_t n = 0; n < a.nodes; n++)
                    d[n] = rng_below(ndom);
            }
            int32_t gsz = 2 + rng_below(a.ranks < 9 ? a.ranks - 1 : 8), mm = 1 + rng_below(gsz - 1);
            int32_t n1 = -1, n2 = -1;
            for (int32_t r = 0; r < a.ranks; r++) {
                g2[r] = (int32_t)rng_next(); /* garbage in the outputs of the second call */
                e2[r] = (int32_t)rng_next();
            }
            int rc1 = slide_groups(&a, m1, dd, gsz, mm, g1, e1, z1, &n1);
            int rc2 = slide_groups(&a, m1, dd, gsz, mm, g2, e2, z2, &n2);
            const int crowded = crowded_domain(&a, m1, dd) > mm * (a.ranks / gsz);
            cases++;
            CHECK(rc1 == (crowded ? SLIDE_ENOPLACEMENT : SLIDE_OK),
                  "%s %s g=%d m=%d: rc %d, crowded %d", grids[gi][0], grids[gi][1], gsz, mm, rc1, crowded);
            CHECK(rc1 == rc2, "same status twice");
            if (rc1 == SLIDE_OK) {
                placed++;
                CHECK(groups_hold(&a, m1, dd, gsz, mm, g1, e1, z1, n1), "%s g=%d m=%d: contract", grids[gi][0], gsz,
                      mm);
                CHECK(n1 == n2 && same_map(g1, g2, a.ranks) && same_map(e1, e2, a.ranks) && same_map(z1, z2, n1),
                      "deterministic");
            } else {
                refused++;
            }
            /* buddy against the reference */
            int32_t h = -5, want = reference_shift(&a, m1, dd);
            int rc = slide_buddy_shift(&a, m1, dd, &h);
            CHECK(want < 0 ? rc == SLIDE_ENOPLACEMENT && h == -5 : rc == SLIDE_OK && h == want,
                  "%s buddy: rc %d shift %d, reference %d", grids[gi][0], rc, h, want);
            if (crowded_domain(&a, m1, dd) * 2 > a.ranks)
                CHECK(rc == SLIDE_ENOPLACEMENT, "a domain with more than half the node ranks has no buddy shift");
        }
        free(m1), free(d), free(g1), free(g2), free(e1), free(e2), free(z1), free(z2);
    }
    CHECK(placed > 50 && refused > 20, "random cases cover both outcomes: %d placed, %d refused of %d", placed, refused,
          cases);

    /* buddy: today's pairing when it crosses domains, else the smallest shift that does */
    int32_t h = -1;
    slide_initial_map(&l, map);
    CHECK(slide_domains_block(&l, s22, dom, &nd) == SLIDE_OK, "boxes");
    CHECK(slide_buddy_shift(&l, map, dom, &h) == SLIDE_OK && h == 6, "12 node ranks in 2x2 boxes: 6, got %d", h);
    CHECK(slide_buddy_shift(&l, map, NULL, &h) == SLIDE_OK && h == 6, "no domains: ranks / 2");
    slide_layout q = make_layout("mesh:3x2", "x:1"); /* 4 node ranks on nodes 0..3 */
    int32_t qmap[4], qdom[6] = {0, 1, 0, 1, 2, 2};
    slide_initial_map(&q, qmap);
    CHECK(slide_buddy_shift(&q, qmap, qdom, &h) == SLIDE_OK && h == 1, "ranks / 2 pairs inside a domain: 1, got %d", h);
    int32_t qone[6] = {0, 0, 0, 0, 1, 1};
    h = -3;
    CHECK(slide_buddy_shift(&q, qmap, qone, &h) == SLIDE_ENOPLACEMENT && h == -3, "one domain: no shift");
    slide_layout solo = make_layout("mesh:2x2", "x:1,y:1"); /* one node rank */
    int32_t solo_map[1] = {0};
    CHECK(slide_buddy_shift(&solo, solo_map, NULL, &h) == SLIDE_EGROUP_RANKS, "one node rank has no buddy");
    qmap[2] = 6;
    CHECK(slide_buddy_shift(&q, qmap, NULL, &h) == SLIDE_EMAP, "map outside");
    qmap[2] = 2;
    qdom[3] = -1;
    CHECK(slide_buddy_shift(&q, qmap, qdom, &h) == SLIDE_EINVAL && slide_buddy_shift(&q, NULL, NULL, &h) == SLIDE_EINVAL,
          "negative domain, NULL map");
}

/* Running on when spares run out: slide_map_degrade() over random failure
 * sequences (nodes, and guests once they exist), against its promises. */
static void test_degrade(void)
{
    const char *cases[][3] = {{"mesh:3x2", "x:1", "hybrid"},   {"torus:4x4", "x:1", "slide1d"},
                              {"torus:4x3x2", "x:1", "routed"}, {"mesh:4x4", "x:1,y:1", "simple"},
                              {"torus:4x4", "x:1", "slide2d"}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        slide_grid g;
        slide_spares sp;
        slide_layout lay;
        slide_method m;
        slide_grid_parse(cases[c][0], &g);
        slide_spares_parse(cases[c][1], &sp);
        slide_layout_init(&lay, &g, &sp);
        slide_method_parse(cases[c][2], &m);
        const int32_t max_guests = 4 * lay.ranks;
        size_t bytes = slide_degrade_workspace_bytes(&lay, max_guests);
        void *work = alloc_or_die(bytes);
        int32_t *serving = alloc_or_die(sizeof(int32_t) * (size_t)lay.ranks);
        int32_t *before = alloc_or_die(sizeof(int32_t) * (size_t)lay.ranks);
        int32_t *plain = alloc_or_die(sizeof(int32_t) * (size_t)lay.ranks);
        int32_t *host = alloc_or_die(sizeof(int32_t) * (size_t)max_guests);
        int32_t *host_before = alloc_or_die(sizeof(int32_t) * (size_t)max_guests);
        int32_t *failed = alloc_or_die(sizeof(int32_t) * (size_t)(lay.nodes + max_guests));
        int32_t *load = alloc_or_die(sizeof(int32_t) * (size_t)lay.nodes);
        unsigned char *dead = alloc_or_die((size_t)(lay.nodes + max_guests));
        for (int trial = 0; trial < 60; trial++) {
            int32_t nfailed = 0, nguests = 0, nguests_before = 0, err = 0;
            memset(dead, 0, (size_t)(lay.nodes + max_guests));
            slide_initial_map(&lay, before);
            int degraded = 0;
            for (;;) {
                /* the next failure: a live node, or now and then a live guest */
                int32_t f = -1, live_guests = 0;
                for (int32_t q = 0; q < nguests; q++)
                    live_guests += !dead[lay.nodes + q];
                if (live_guests && rng_next() % 4 == 0) {
                    int32_t pick = (int32_t)(rng_next() % (uint64_t)live_guests);
                    for (int32_t q = 0; q < nguests && f < 0; q++)
                        if (!dead[lay.nodes + q] && pick-- == 0)
                            f = lay.nodes + q;
                } else {
                    int32_t alive = 0;
                    for (int32_t n = 0; n < lay.nodes; n++)
                        alive += !dead[n] && slide_node_role(&lay, n) != SLIDE_ROLE_UNUSED;
                    if (alive <= 1)
                        break;
                    int32_t pick = (int32_t)(rng_next() % (uint64_t)alive);
                    for (int32_t n = 0; n < lay.nodes && f < 0; n++)
                        if (!dead[n] && slide_node_role(&lay, n) != SLIDE_ROLE_UNUSED && pick-- == 0)
                            f = n;
                }
                failed[nfailed++] = f;
                dead[f] = 1;
                for (int32_t q = 0; f < lay.nodes && q < nguests; q++)
                    if (host[q] == f)
                        dead[lay.nodes + q] = 1;
                int rc = slide_map_degrade(&lay, m, failed, nfailed, serving, host, max_guests, &nguests, work,
                                           bytes, &err);
                CHECK(rc == SLIDE_OK, "%s %s %s trial %d: %d failures: status %d at %d", cases[c][0], cases[c][1],
                      cases[c][2], trial, nfailed, rc, err);
                if (rc != SLIDE_OK)
                    break;
                /* while the method copes, its own map */
                int32_t plain_err;
                int plain_rc = slide_map(&lay, m, failed, nfailed, plain, work, bytes, &plain_err);
                degraded = degraded || plain_rc != SLIDE_OK || f >= lay.nodes;
                if (!degraded)
                    CHECK(memcmp(plain, serving, sizeof(int32_t) * (size_t)lay.ranks) == 0 && nguests == 0,
                          "%s %s: the method's map while it copes", cases[c][0], cases[c][2]);
                /* earlier guests keep their host; ranks whose place lived keep it */
                CHECK(nguests >= nguests_before && memcmp(host, host_before, sizeof(int32_t) * (size_t)nguests_before) == 0,
                      "%s: guests made before keep their ids and hosts", cases[c][0]);
                memset(load, 0, sizeof(int32_t) * (size_t)lay.nodes);
                for (int32_t r = 0; r < lay.ranks; r++) {
                    int32_t at = serving[r], where = at < lay.nodes ? at : host[at - lay.nodes];
                    CHECK(at >= 0 && at < lay.nodes + nguests && !dead[at] && !dead[where] &&
                              slide_node_role(&lay, where) != SLIDE_ROLE_UNUSED,
                          "%s: rank %d on %d: a live place", cases[c][0], r, at);
                    if (degraded && !dead[before[r]])
                        CHECK(serving[r] == before[r], "%s: rank %d moved from a live place %d to %d", cases[c][0],
                              r, before[r], serving[r]);
                    load[where]++;
                    for (int32_t q = 0; q < r; q++)
                        CHECK(serving[q] != at, "%s: ranks %d and %d on one place %d", cases[c][0], q, r, at);
                }
                if (degraded) {
                    int32_t lo = INT32_MAX, hi = 0;
                    for (int32_t n = 0; n < lay.nodes; n++) {
                        if (dead[n] || slide_node_role(&lay, n) == SLIDE_ROLE_UNUSED)
                            continue;
                        lo = load[n] < lo ? load[n] : lo;
                        hi = load[n] > hi ? load[n] : hi;
                    }
                    CHECK(hi - lo <= 1, "%s %s: loads %d..%d after degrading", cases[c][0], cases[c][2], lo, hi);
                }
                for (int32_t q = 0; q < nguests; q++)
                    if (!dead[lay.nodes + q])
                        CHECK(load[host[q]] >= 2, "%s: guest %d on a node of load %d", cases[c][0], q, load[host[q]]);
                memcpy(before, serving, sizeof(int32_t) * (size_t)lay.ranks);
                memcpy(host_before, host, sizeof(int32_t) * (size_t)nguests);
                nguests_before = nguests;
                if (nguests + lay.ranks > max_guests)
                    break;
            }
        }
        free(work);
        free(serving);
        free(before);
        free(plain);
        free(host);
        free(host_before);
        free(failed);
        free(load);
        free(dead);
    }
    /* bad input */
    slide_grid g;
    slide_spares sp;
    slide_layout lay;
    slide_grid_parse("mesh:3x2", &g);
    slide_spares_parse("x:1", &sp);
    slide_layout_init(&lay, &g, &sp); /* nodes 0..5, spares 4 and 5 */
    size_t bytes = slide_degrade_workspace_bytes(&lay, 16);
    void *work = alloc_or_die(bytes);
    int32_t serving[4], host[16], nguests = 0, err = 0;
    const int32_t guest_first[] = {6}, twice[] = {0, 1, 2, 2}, all[] = {0, 1, 2, 3, 4, 5}, three[] = {0, 1, 2};
    CHECK(slide_map_degrade(&lay, SLIDE_HYBRID, guest_first, 1, serving, host, 16, &nguests, work, bytes, &err) ==
              SLIDE_ENODE && err == 0, "a guest that was never made");
    CHECK(slide_map_degrade(&lay, SLIDE_HYBRID, twice, 4, serving, host, 16, &nguests, work, bytes, &err) ==
              SLIDE_EDUP && err == 3, "a node listed twice after degrading");
    int rc = slide_map_degrade(&lay, SLIDE_HYBRID, all, 6, serving, host, 16, &nguests, work, bytes, &err);
    CHECK(rc == SLIDE_ENOSURVIVOR && err == 5, "every node dead: %d at %d", rc, err);
    CHECK(slide_map_degrade(&lay, SLIDE_HYBRID, three, 3, serving, host, 0, &nguests, work, bytes, &err) ==
              SLIDE_ENOSPARE && err == 2, "a guest needed, none allowed");
    CHECK(slide_map_degrade(&lay, SLIDE_HYBRID, three, 3, serving, host, 16, &nguests, work, bytes - 8, &err) ==
              SLIDE_EWORKSPACE, "workspace too small");
    CHECK(slide_map_degrade(&lay, SLIDE_HYBRID, three, 3, serving, host, 16, &nguests, work, bytes, &err) == SLIDE_OK &&
              nguests == 1, "three failures on two spares: one guest (%d)", nguests);
    free(work);
}

int main(int argc, char **argv)
{
    struct { const char *name; void (*fn)(void); } groups[] = {
        {"parse", test_parse},         {"layout", test_layout},
        {"examples", test_examples},   {"properties", test_properties},
        {"promises", test_promises},   {"metrics", test_metrics},
        {"errors", test_errors},       {"metrics_reference", test_metrics_reference},
        {"blocks", test_blocks},
        {"spare_sets", test_spare_sets}, {"redundancy", test_redundancy},
        {"degrade", test_degrade},
    };
    int ran = 0;
    for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++) {
        if (argc > 1 && strcmp(argv[1], groups[i].name) != 0)
            continue;
        groups[i].fn();
        ran++;
    }
    if (!ran) {
        fprintf(stderr, "unknown group '%s'\n", argv[1]);
        return 2;
    }
    printf("%ld checks, %ld failed\n", checks, failures);
    return failures == 0 ? 0 : 1;
}
