/* Time per new rank-to-node mapping of every substitution method, side by
 * side, with the ratio to its target: 1 ms for the fixed rules (simple,
 * slide1d, slide2d, hybrid, shrink); for routed, which scores candidates
 * against the link loads, 100 ms up to 2,000 nodes and 5 s beyond.
 *
 * Usage: slide_bench [GRID SPARES FAILURES ...]
 * FAILURES is a count of random rank-holding nodes (fixed seed), or COUNTline
 * for that many nodes on one line along the primary spare dimension (slide1d
 * then runs out of line spares and hybrid crosses to other lines).
 * Default cases: the K preset, torus 12x12x12 x:1 with 8 failures; torus
 * 48x47x47 with one spare plane (x:1), 47^3 = 103,823
 * ranks, 1 and 8 failures; the same with 8 failures on one line; torus
 * 49x47x47 x:2; mesh 48x48x47 x:1,y:1. A method that cannot handle all the
 * failures (slide2d with one spare plane) is timed on as many as it can.
 * Each time is the best of 5 batches of >= 50 ms (the machine may be busy). */
#define _POSIX_C_SOURCE 199309L
#include "slide_core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t rng = 12345;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static int run_case(const char *grid_text, const char *spares_text, const char *failures)
{
    int nfail = atoi(failures);
    int on_line = strstr(failures, "line") != NULL;
    slide_grid g;
    slide_spares s;
    slide_layout lay;
    int rc = slide_grid_parse(grid_text, &g);
    if (rc == SLIDE_OK)
        rc = slide_spares_parse(spares_text, &s);
    if (rc == SLIDE_OK)
        rc = slide_layout_init(&lay, &g, &s);
    if (rc != SLIDE_OK) {
        fprintf(stderr, "slide_bench: %s %s: %s\n", grid_text, spares_text, slide_strerror(rc));
        return 1;
    }
    int32_t *failed = malloc(sizeof(int32_t) * (size_t)(nfail > 0 ? nfail : 1));
    int32_t *map = malloc(sizeof(int32_t) * (size_t)lay.ranks);
    size_t wbytes = slide_map_workspace_bytes(&lay);
    size_t mbytes = slide_measure_workspace_bytes(&lay);
    void *work = malloc(wbytes > mbytes ? wbytes : mbytes);
    slide_initial_map(&lay, map);
    int d1 = lay.spares.ndims > 0 ? lay.spares.dim[0] : 0;
    for (int i = 0; i < nfail && on_line; i++) {
        int32_t c[3] = {0, lay.logical[1] / 2, lay.logical[2] / 2};
        c[d1] = i % lay.logical[d1];
        failed[i] = slide_node_index(&lay, c);
    }
    for (int i = 0; i < nfail && !on_line; i++) {
        int32_t f;
        int fresh;
        do { /* distinct random non-spare nodes */
            f = map[next_rand() % (uint64_t)lay.ranks];
            fresh = 1;
            for (int j = 0; j < i; j++)
                fresh &= failed[j] != f;
        } while (!fresh);
        failed[i] = f;
    }
    printf("\n%s %s: %d nodes, %d ranks, %d failures requested%s\n", grid_text, spares_text,
           lay.nodes, lay.ranks, nfail, on_line ? " (all on one line)" : "");
    printf("  %-8s %9s %14s %10s %9s %9s %9s\n", "method", "failures", "us/mapping", "target ms",
           "ratio", "max hops", "max load");
    for (int m = 0; m < SLIDE_NMETHODS; m++) {
        int32_t n = nfail, e = -1;
        rc = slide_map(&lay, m, failed, n, map, work, wbytes, &e);
        if (rc != SLIDE_OK && e >= 0)
            n = e; /* time the longest prefix the method handles */
        rc = slide_map(&lay, m, failed, n, map, work, wbytes, &e);
        if (rc != SLIDE_OK) {
            printf("  %-8s error: %s\n", slide_method_name(m), slide_strerror(rc));
            continue;
        }
        double us = 1e30;
        for (int batch = 0; batch < 5; batch++) {
            int reps = 0;
            double t0 = now_s(), t;
            do {
                slide_map(&lay, m, failed, n, map, work, wbytes, &e);
                reps++;
                t = now_s() - t0;
            } while (t < 0.05 && reps < 1000);
            if (t / reps * 1e6 < us)
                us = t / reps * 1e6;
        }
        slide_metrics met;
        slide_measure(&lay, map, -1, &met, work, mbytes);
        const double target_ms = m != SLIDE_ROUTED ? 1.0 : lay.nodes <= 2000 ? 100.0 : 5000.0;
        printf("  %-8s %9d %14.1f %10.0f %9.3f %9d %9d\n", slide_method_name(m), n, us, target_ms,
               us / 1000.0 / target_ms, met.hops_max, met.link_load_max);
    }
    slide_metrics met;
    int reps = 0;
    double t0 = now_s(), t;
    do {
        slide_measure(&lay, map, -1, &met, work, mbytes);
        reps++;
        t = now_s() - t0;
    } while (t < 0.25 && reps < 500);
    printf("  (metrics of one map: %.1f us)\n", t / reps * 1e6);
    free(failed);
    free(map);
    free(work);
    return 0;
}

int main(int argc, char **argv)
{
    printf("slide_bench: time per new mapping (ratio < 1 meets the method's target)\n");
    int status = 0;
    if (argc > 1) {
        if ((argc - 1) % 3 != 0) {
            fprintf(stderr, "usage: slide_bench [GRID SPARES FAILURES ...] (FAILURES: N or Nline)\n");
            return 2;
        }
        for (int i = 1; i + 2 < argc; i += 3)
            status |= run_case(argv[i], argv[i + 1], argv[i + 2]);
        return status;
    }
    status |= run_case("torus:12x12x12", "x:1", "8");
    status |= run_case("torus:48x47x47", "x:1", "1");
    status |= run_case("torus:48x47x47", "x:1", "8");
    status |= run_case("torus:48x47x47", "x:1", "8line");
    status |= run_case("torus:49x47x47", "x:2", "8");
    status |= run_case("mesh:48x48x47", "x:1,y:1", "8");
    return status;
}
