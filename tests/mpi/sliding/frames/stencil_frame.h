/*
 * What the frames header.c and header.cpp give the usage example of sliding.h
 * and the C and C++ examples of docs/sliding-runtime.md that name them (C and
 * C++ alike; included after sliding.h or sliding.hpp, as "frames/stencil_frame.h":
 * tests/test_sliding_examples.py builds in a folder that links frames/ here):
 *
 *   n                    the number of iterations, 40;
 *   tile_bytes(dims)     the bytes of the largest tile, halo included, of a
 *                        DOMAIN_X x DOMAIN_Y x DOMAIN_Z domain split over the
 *                        rank grid dims (sizes that do not divide: tiles differ
 *                        by a cell; a 2D grid splits x and y, each tile keeps
 *                        all of z);
 *   initialize(u, cart)  this rank's tile at iteration 0, a function of the
 *                        global cell, zero halo;
 *   step(cart, it, u)    kill point "iter=IT", then one Jacobi sweep: a halo
 *                        exchange with the neighbours on cart (MPI_Sendrecv of
 *                        subarray faces, periodic as cart is, no error checks)
 *                        and a 7-point average plus a term that depends on it,
 *                        so that resuming at a wrong iteration shows in the sum.
 *
 * The examples declare their sliding_t locally and never hand it to step, so
 * macros wrap four calls to learn s, &cart and u: sliding_register,
 * sliding_start, sliding_recover (which also print one line per recovery and
 * per error at the process) and sliding_finish: when sliding_finish returns
 * SLIDING_OK, the workers gather their tiles' sums to logical rank 0, which
 * adds them in rank order and prints
 *     frame: checksum=0x<bits of the double> value=<the sum>
 * the same bits with or without failures when every recovery resumes right.
 */
#ifndef STENCIL_FRAME_H
#define STENCIL_FRAME_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DOMAIN_X 11
#define DOMAIN_Y 9
#define DOMAIN_Z 7

static const int n = 40;

static sliding_t *frame_s;        /* the example's s, from sliding_register */
static MPI_Comm *frame_cart;      /* where the example keeps cart, from sliding_start */
static double *frame_u;           /* the example's registered buffer */
static double *frame_next;        /* the sweep's output, not registered: recomputed every step */

/* The cells of coordinate c along a dimension of `cells` split over `parts`, and its first global cell. */
static int tile_cells(int cells, int parts, int c)
{
    return cells / parts + (c < cells % parts);
}

static int tile_first(int cells, int parts, int c)
{
    return c * (cells / parts) + (c < cells % parts ? c : cells % parts);
}

/* The rank grid of cart in 3 dimensions (1 in a missing third) and this rank's tile. */
typedef struct tile {
    int ndims, dims[3], periods[3], coords[3];
    int cells[3], first[3], extent[3]; /* extent: cells + the halo on both sides */
} tile_t;

static tile_t tile_of(MPI_Comm cart)
{
    static const int domain[3] = {DOMAIN_X, DOMAIN_Y, DOMAIN_Z};
    tile_t t;
    memset(&t, 0, sizeof t);
    for (int d = 0; d < 3; d++) {
        t.dims[d] = 1;
    }
    MPI_Cartdim_get(cart, &t.ndims);
    MPI_Cart_get(cart, t.ndims, t.dims, t.periods, t.coords);
    for (int d = 0; d < 3; d++) {
        t.cells[d] = tile_cells(domain[d], t.dims[d], t.coords[d]);
        t.first[d] = tile_first(domain[d], t.dims[d], t.coords[d]);
        t.extent[d] = t.cells[d] + 2;
    }
    return t;
}

static size_t cell(const tile_t *t, int x, int y, int z)
{
    return ((size_t)x * (size_t)t->extent[1] + (size_t)y) * (size_t)t->extent[2] + (size_t)z;
}

static size_t tile_bytes(const int dims[3])
{
    static const int domain[3] = {DOMAIN_X, DOMAIN_Y, DOMAIN_Z};
    size_t count = 1;
    for (int d = 0; d < 3; d++) {
        count *= (size_t)tile_cells(domain[d], dims[d], 0) + 2; /* coordinate 0 has the most cells */
    }
    return count * sizeof(double);
}

static void initialize(double *u, MPI_Comm cart)
{
    tile_t t = tile_of(cart);
    memset(u, 0, sizeof(double) * (size_t)t.extent[0] * (size_t)t.extent[1] * (size_t)t.extent[2]);
    for (int x = 1; x <= t.cells[0]; x++) {
        for (int y = 1; y <= t.cells[1]; y++) {
            for (int z = 1; z <= t.cells[2]; z++) {
                int gx = t.first[0] + x - 1, gy = t.first[1] + y - 1, gz = t.first[2] + z - 1;
                u[cell(&t, x, y, z)] = (double)((gx * 31 + gy * 17 + gz * 7) % 23) / 23.0;
            }
        }
    }
}

/* The face of the tile at `index` along dimension d (0 and cells+1: halos; 1 and cells: edges). */
static MPI_Datatype face(const tile_t *t, int d, int index)
{
    int start[3] = {1, 1, 1}, size[3] = {t->cells[0], t->cells[1], t->cells[2]};
    start[d] = index;
    size[d] = 1;
    MPI_Datatype type;
    MPI_Type_create_subarray(3, t->extent, size, start, MPI_ORDER_C, MPI_DOUBLE, &type);
    MPI_Type_commit(&type);
    return type;
}

static void exchange_halos(MPI_Comm cart, const tile_t *t, double *u)
{
    for (int d = 0; d < t->ndims; d++) {
        int low, high;
        MPI_Cart_shift(cart, d, 1, &low, &high);
        MPI_Datatype low_edge = face(t, d, 1), high_edge = face(t, d, t->cells[d]);
        MPI_Datatype low_halo = face(t, d, 0), high_halo = face(t, d, t->cells[d] + 1);
        MPI_Sendrecv(u, 1, high_edge, high, d, u, 1, low_halo, low, d, cart, MPI_STATUS_IGNORE);
        MPI_Sendrecv(u, 1, low_edge, low, 3 + d, u, 1, high_halo, high, 3 + d, cart, MPI_STATUS_IGNORE);
        MPI_Type_free(&low_edge);
        MPI_Type_free(&high_edge);
        MPI_Type_free(&low_halo);
        MPI_Type_free(&high_halo);
    }
}

static void step(MPI_Comm cart, int it, double *u)
{
    char point[32];
    snprintf(point, sizeof point, "iter=%d", it);
    sliding_killpoint(frame_s, point);
    tile_t t = tile_of(cart);
    exchange_halos(cart, &t, u);
    if (!frame_next) {
        frame_next = (double *)calloc(tile_bytes(t.dims) / sizeof(double), sizeof(double));
    }
    double source = 0.001 * (it % 7);
    for (int x = 1; x <= t.cells[0]; x++) {
        for (int y = 1; y <= t.cells[1]; y++) {
            for (int z = 1; z <= t.cells[2]; z++) {
                double sum = u[cell(&t, x - 1, y, z)] + u[cell(&t, x + 1, y, z)] + u[cell(&t, x, y - 1, z)] +
                             u[cell(&t, x, y + 1, z)] + u[cell(&t, x, y, z - 1)] + u[cell(&t, x, y, z + 1)];
                frame_next[cell(&t, x, y, z)] = 0.5 * u[cell(&t, x, y, z)] + sum / 12.0 + source;
            }
        }
    }
    for (int x = 1; x <= t.cells[0]; x++) {
        for (int y = 1; y <= t.cells[1]; y++) {
            size_t row = cell(&t, x, y, 1);
            memcpy(u + row, frame_next + row, sizeof(double) * (size_t)t.cells[2]);
        }
    }
}

/* The sum of this rank's cells in order; logical rank 0 adds the ranks' sums in rank order. */
static void print_checksum(MPI_Comm cart, const double *u)
{
    tile_t t = tile_of(cart);
    double sum = 0;
    for (int x = 1; x <= t.cells[0]; x++) {
        for (int y = 1; y <= t.cells[1]; y++) {
            for (int z = 1; z <= t.cells[2]; z++) {
                sum += u[cell(&t, x, y, z)];
            }
        }
    }
    int rank, size;
    MPI_Comm_rank(cart, &rank);
    MPI_Comm_size(cart, &size);
    double *sums = rank == 0 ? (double *)malloc(sizeof(double) * (size_t)size) : NULL;
    MPI_Gather(&sum, 1, MPI_DOUBLE, sums, 1, MPI_DOUBLE, 0, cart);
    if (rank == 0) {
        double total = 0;
        for (int r = 0; r < size; r++) {
            total += sums[r];
        }
        unsigned long long bits;
        memcpy(&bits, &total, sizeof bits);
        printf("frame: checksum=0x%016llx value=%.17g\n", bits, total);
        fflush(stdout);
        free(sums);
    }
}

static int frame_register(sliding_t *s, void *data, size_t bytes)
{
    frame_s = s;
    if (!frame_u) {
        frame_u = (double *)data;
    }
    return sliding_register(s, data, bytes);
}

static void report(sliding_t *s, const char *call, int status, int role, int64_t version)
{
    if (status != SLIDING_OK) {
        printf("frame: error node=%d call=%s status=%s\n", sliding_node(s), call, sliding_status_name(status));
    } else if (role == SLIDING_PROMOTED || strcmp(call, "sliding_recover") == 0) {
        printf("frame: recovered node=%d rank=%d role=%s version=%lld\n", sliding_node(s), sliding_rank(s),
               sliding_role_name(role), (long long)version);
    }
    fflush(stdout);
}

static int frame_start(sliding_t *s, MPI_Comm *cart, int *role, int64_t *version)
{
    frame_cart = cart;
    int status = sliding_start(s, cart, role, version);
    report(s, "sliding_start", status, *role, *version);
    return status;
}

static int frame_recover(sliding_t *s, MPI_Comm *cart, int *role, int64_t *version)
{
    frame_cart = cart;
    int status = sliding_recover(s, cart, role, version);
    report(s, "sliding_recover", status, *role, *version);
    return status;
}

static int frame_finish(sliding_t *s)
{
    int status = sliding_finish(s);
    if (status == SLIDING_OK) {
        print_checksum(*frame_cart, frame_u);
    }
    return status;
}

#define sliding_register(s, data, bytes) frame_register(s, data, bytes)
#define sliding_start(s, cart, role, version) frame_start(s, cart, role, version)
#define sliding_recover(s, cart, role, version) frame_recover(s, cart, role, version)
#define sliding_finish(s) frame_finish(s)

#endif
