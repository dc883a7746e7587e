/*
 * heat2d.c and heat2d_plain.c (this comment is the same in both): a 2D heat
 * equation in the shape real stencil codes have, with and without fault
 * tolerance. heat2d survives node failures with the sliding runtime
 * (sliding.h); heat2d_plain is the program it was made from, and `diff
 * heat2d_plain.c heat2d.c` is everything the runtime asks of an application
 * (tests/test_sliding_heat2d.py counts its lines).
 *
 * Usage: heat2d [OPTIONS] GRID SPARES METHOD [NX [NY [ITERATIONS]]]
 *        heat2d_plain [NX [NY [ITERATIONS]]]
 * (defaults 50, 37, 40). GRID is a 2D node grid (mesh:4x3, or torus:4x3:
 * the field is not periodic either way); SPARES, METHOD and the OPTIONS
 * --block AxB, --emulate-nodes K, --node-coords FILE and --checkpoint-every N
 * (default 5) are the runtime's (sliding_create_args, sliding-runtime.md).
 * heat2d's rank grid is the runtime's (sliding_dims), heat2d_plain's
 * MPI_Dims_create's.
 *
 * The field: Jacobi's 5-point stencil on an NX x NY grid of points whose edges
 * are held at fixed values: the edge before the first row is hot (1), the
 * three others cold (0); the interior starts from a pattern that tells every
 * point apart. The grid is split over the rank grid, not periodic, and tiles
 * need not divide it: the first NX % rows tiles get one row more, the first
 * NY % columns one column more. Each tile keeps a halo ring of one point. An
 * iteration exchanges the halos with the four neighbours (Irecv/Isend/Waitall;
 * rows as they lie, columns as a vector datatype), averages u's four
 * neighbours into unew and swaps the two pointers.
 *
 * Validation: at the end rank 0 gathers the field, adds it up in row-major
 * order and recomputes the whole grid serially with the same sweep. Every
 * point's value comes from the same additions in the same order whatever the
 * tiles, so the check is exact equality, point by point, and the sum is the
 * same for any rank grid, with or without failures: heat2d and heat2d_plain
 * print the same checksum, bit for bit.
 *
 * Output (as jacobi3d's, sliding/examples/jacobi3d.c): rank 0 prints on stdout
 *   heat2d: recovered iteration=I failed=N,... attempts=.. agree_ms=.. map_ms=.. rebuild_ms=.. state_ms=..
 *           commit_ms=.. total_ms=.. moved_bytes=.. buddy_bytes=..      (heat2d, on one line per recovery)
 *   heat2d: done iterations=I nx=NX ny=NY checksum=0x... value=... valid=yes|no
 * (checksum: the bits of the sum, value: the sum), and on stderr
 *   heat2d: error step=arguments|create|start|recovery|validation [status=ERR_...] message=...
 * Exit status: 0 done and valid, 4 not valid, 3 a runtime error (every
 * survivor says it: fail()), 2 bad arguments or a layout the runtime refuses
 * (one line).
 *
 * Fault tolerance (heat2d): both fields are registered, sized for the largest
 * tile (spares size theirs before they know their tile), and checkpointed as
 * they are when sliding_checkpoint_due() says so, labelled with the iteration to
 * resume at; after the swap the current field is either buffer, so the
 * iteration's parity says which. No MPI call is checked: the runtime's error
 * handler revokes the Cartesian communicator at the first error and
 * sliding_ok() ends the iteration loop; sliding_finish() agrees that every
 * worker got through the final gather. After a recovery every worker comes
 * back to "resume:" with the checkpoint's buffers, perhaps as another rank, and
 * sets up its tile again; with no checkpoint yet (version -1) it starts over.
 * Kill points (FTSLIDE_KILL="NODE@iter=I"): the start of iteration I.
 */
#include <inttypes.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct tile {
    int gnx, gny;               /* the whole grid's interior points */
    int nx, ny;                 /* this tile's interior points */
    int x0, y0;                 /* the global index of its first interior point (1: the grid's first) */
    int up, down, left, right;  /* neighbours in the Cartesian communicator, MPI_PROC_NULL at an edge */
    MPI_Datatype column;        /* an interior column (nx points, one row apart) */
    MPI_Datatype interior;      /* the interior within the halo ring */
} tile_t;

/* Point (i, j) of a tile's field, halo included: i = 0..nx+1, j = 0..ny+1. */
#define AT(t, a, i, j) (a)[(size_t)(i) * (size_t)((t)->ny + 2) + (size_t)(j)]

/* Part `coord` of `parts` of n points: its size and its first point (1-based); the first n % parts get one more. */
static void split(int n, int parts, int coord, int *size, int *first)
{
    *size = n / parts + (coord < n % parts);
    *first = 1 + coord * (n / parts) + (coord < n % parts ? coord : n % parts);
}

/* The part of the grid that `rank` of cart holds: its size and first point in each dimension. */
static void place(tile_t *t, MPI_Comm cart, int rank)
{
    int dims[2], periods[2], coords[2];
    MPI_Cart_get(cart, 2, dims, periods, coords);
    MPI_Cart_coords(cart, rank, 2, coords);
    split(t->gnx, dims[0], coords[0], &t->nx, &t->x0);
    split(t->gny, dims[1], coords[1], &t->ny, &t->y0);
}

/* This process's tile of the gnx x gny grid, its neighbours and its datatypes. */
static void tile_setup(tile_t *t, MPI_Comm cart, int gnx, int gny)
{
    int rank;
    MPI_Comm_rank(cart, &rank);
    t->gnx = gnx;
    t->gny = gny;
    place(t, cart, rank);
    MPI_Cart_shift(cart, 0, 1, &t->up, &t->down);
    MPI_Cart_shift(cart, 1, 1, &t->left, &t->right);
    if (t->x0 == 1) t->up = MPI_PROC_NULL; /* the field is not periodic, even where the machine is */
    if (t->x0 + t->nx - 1 == t->gnx) t->down = MPI_PROC_NULL;
    if (t->y0 == 1) t->left = MPI_PROC_NULL;
    if (t->y0 + t->ny - 1 == t->gny) t->right = MPI_PROC_NULL;
    MPI_Type_vector(t->nx, 1, t->ny + 2, MPI_DOUBLE, &t->column);
    MPI_Type_commit(&t->column);
    int sizes[2] = {t->nx + 2, t->ny + 2}, interior[2] = {t->nx, t->ny}, start[2] = {1, 1};
    MPI_Type_create_subarray(2, sizes, interior, start, MPI_ORDER_C, MPI_DOUBLE, &t->interior);
    MPI_Type_commit(&t->interior);
}

static void tile_free(tile_t *t)
{
    MPI_Type_free(&t->column);
    MPI_Type_free(&t->interior);
}

/* Global point (i, j), 0..gnx+1 x 0..gny+1, before the first iteration: the fixed edges, or the starting pattern. */
static double initial(const tile_t *t, int i, int j)
{
    if (i == 0) return 1.0;
    if (i == t->gnx + 1 || j == 0 || j == t->gny + 1) return 0.0;
    return (double)((i * 7 + j * 13) % 101) / 101.0;
}

/* Both fields, halos included: a halo on the grid's edge holds the edge's value for good. */
static void initial_values(const tile_t *t, double *u, double *unew)
{
    for (int i = 0; i <= t->nx + 1; i++) {
        for (int j = 0; j <= t->ny + 1; j++) {
            AT(t, u, i, j) = AT(t, unew, i, j) = initial(t, t->x0 - 1 + i, t->y0 - 1 + j);
        }
    }
}

/* Fill the four halos from the neighbours; a halo on the grid's edge (MPI_PROC_NULL) keeps its value.
 * Tags name the way the data goes: 0 down, 1 up, 2 right, 3 left. */
static void exchange_halos(const tile_t *t, double *u, MPI_Comm cart)
{
    MPI_Request requests[8];
    MPI_Irecv(&AT(t, u, 0, 1), t->ny, MPI_DOUBLE, t->up, 0, cart, &requests[0]);
    MPI_Irecv(&AT(t, u, t->nx + 1, 1), t->ny, MPI_DOUBLE, t->down, 1, cart, &requests[1]);
    MPI_Irecv(&AT(t, u, 1, 0), 1, t->column, t->left, 2, cart, &requests[2]);
    MPI_Irecv(&AT(t, u, 1, t->ny + 1), 1, t->column, t->right, 3, cart, &requests[3]);
    MPI_Isend(&AT(t, u, t->nx, 1), t->ny, MPI_DOUBLE, t->down, 0, cart, &requests[4]);
    MPI_Isend(&AT(t, u, 1, 1), t->ny, MPI_DOUBLE, t->up, 1, cart, &requests[5]);
    MPI_Isend(&AT(t, u, 1, t->ny), 1, t->column, t->right, 2, cart, &requests[6]);
    MPI_Isend(&AT(t, u, 1, 1), 1, t->column, t->left, 3, cart, &requests[7]);
    MPI_Waitall(8, requests, MPI_STATUSES_IGNORE);
}

static void sweep(const tile_t *t, const double *u, double *unew)
{
    for (int i = 1; i <= t->nx; i++) {
        for (int j = 1; j <= t->ny; j++) {
            AT(t, unew, i, j) =
                (AT(t, u, i - 1, j) + AT(t, u, i + 1, j) + AT(t, u, i, j - 1) + AT(t, u, i, j + 1)) * 0.25;
        }
    }
}

/* The interior of every tile, at rank 0 of cart, as one gnx x gny row-major field; NULL at the other ranks. */
static double *gather_field(const tile_t *t, const double *u, MPI_Comm cart)
{
    int rank, size;
    MPI_Comm_rank(cart, &rank);
    MPI_Comm_size(cart, &size);
    size_t points = (size_t)t->gnx * (size_t)t->gny;
    int *counts = NULL, *displs = NULL;
    double *tiles = NULL, *field = NULL;
    tile_t other = *t;
    if (rank == 0) {
        counts = malloc(sizeof(int) * (size_t)size);
        displs = malloc(sizeof(int) * (size_t)size);
        tiles = malloc(sizeof(double) * points);
        field = malloc(sizeof(double) * points);
        for (int r = 0, at = 0; r < size; r++) {
            place(&other, cart, r);
            counts[r] = other.nx * other.ny;
            displs[r] = at;
            at += counts[r];
        }
    }
    MPI_Gatherv(u, 1, t->interior, tiles, counts, displs, MPI_DOUBLE, 0, cart);
    for (int r = 0; rank == 0 && r < size; r++) { /* tile r's rows to their place */
        place(&other, cart, r);
        for (int i = 0; i < other.nx; i++) {
            memcpy(&field[(size_t)(other.x0 - 1 + i) * (size_t)t->gny + (size_t)(other.y0 - 1)],
                   &tiles[displs[r] + i * other.ny], sizeof(double) * (size_t)other.ny);
        }
    }
    free(counts);
    free(displs);
    free(tiles);
    return field;
}

/* Rank 0: recompute the grid serially, compare, print the done line; the exit status (0 valid, 4 not). */
static int validate(const double *field, int gnx, int gny, int iterations)
{
    tile_t whole = {.gnx = gnx, .gny = gny, .nx = gnx, .ny = gny, .x0 = 1, .y0 = 1};
    size_t cells = (size_t)(gnx + 2) * (size_t)(gny + 2);
    double *u = malloc(sizeof(double) * cells), *unew = malloc(sizeof(double) * cells);
    initial_values(&whole, u, unew);
    for (int it = 0; it < iterations; it++) {
        sweep(&whole, u, unew);
        double *swap = u;
        u = unew;
        unew = swap;
    }
    double sum = 0, worst = 0;
    long differ = 0;
    for (int i = 1; i <= gnx; i++) {
        for (int j = 1; j <= gny; j++) {
            double got = field[(size_t)(i - 1) * (size_t)gny + (size_t)(j - 1)], want = AT(&whole, u, i, j);
            sum += got;
            if (got != want) { /* NaN too */
                differ++;
                worst = got - want > worst ? got - want : want - got > worst ? want - got : worst;
            }
        }
    }
    uint64_t bits;
    memcpy(&bits, &sum, sizeof bits);
    printf("heat2d: done iterations=%d nx=%d ny=%d checksum=0x%016" PRIx64 " value=%.17g valid=%s\n", iterations, gnx,
           gny, bits, sum, differ ? "no" : "yes");
    fflush(stdout);
    if (differ) {
        fprintf(stderr, "heat2d: error step=validation message=%ld of %d x %d points differ from the serial "
                        "computation, by up to %.3g\n", differ, gnx, gny, worst);
    }
    free(u);
    free(unew);
    return differ ? 4 : 0;
}

/* HEAT2D_TIMES=N: logical rank 0 says how long every N iterations took (bench/sliding_checkonce). */
static void report_time(MPI_Comm cart, int iterations, double *since)
{
    int rank;
    double now = MPI_Wtime();
    MPI_Comm_rank(cart, &rank);
    if (rank == 0) {
        printf("heat2d: timing iterations=%d seconds=%.6f\n", iterations, now - *since);
        fflush(stdout);
    }
    *since = now;
}

/* A whole number of at least 1, else -1. */
static int count(const char *text)
{
    char *end;
    long value = strtol(text, &end, 10);
    return end != text && *end == '\0' && value >= 1 && value <= 1000000 ? (int)value : -1;
}

/* Bad arguments: world rank 0 says so in one line; every process exits with status 2. */
static void refuse(const char *message)
{
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) fprintf(stderr, "heat2d: error step=arguments message=%s\n", message);
    MPI_Finalize();
    exit(2);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int nargs = argc - 1, status = 0;
    char **arg = argv + 1;
    int nx = nargs > 0 ? count(arg[0]) : 50, ny = nargs > 1 ? count(arg[1]) : 37;
    int iterations = nargs > 2 ? count(arg[2]) : 40;
    if (nargs > 3 || nx < 1 || ny < 1 || iterations < 1) {
        refuse("usage: heat2d_plain [NX [NY [ITERATIONS]]], whole numbers of at least 1");
    }
    int size, dims[2] = {0, 0}, periods[2] = {0, 0};
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Dims_create(size, 2, dims);
    if (nx < dims[0] || ny < dims[1]) refuse("NX and NY must be at least the rank grid's sizes");
    size_t cells = (size_t)(nx / dims[0] + 3) * (size_t)(ny / dims[1] + 3); /* the largest tile */
    double *u = malloc(sizeof(double) * cells), *unew = malloc(sizeof(double) * cells);

    MPI_Comm cart;
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
    tile_t t;
    tile_setup(&t, cart, nx, ny);
    const char *times_text = getenv("HEAT2D_TIMES");
    int times = times_text ? atoi(times_text) : 0;
    double since = MPI_Wtime();
    initial_values(&t, u, unew);
    for (int it = 0; it < iterations; it++) {
        exchange_halos(&t, u, cart);
        sweep(&t, u, unew);
        double *swap = u;
        u = unew;
        unew = swap;
        if (times > 0 && (it + 1) % times == 0) report_time(cart, times, &since);
    }
    double *whole = gather_field(&t, u, cart); /* at rank 0 */
    tile_free(&t);
    if (whole) status = validate(whole, nx, ny, iterations);
    free(whole);
    MPI_Comm_free(&cart);
    free(u);
    free(unew);
    MPI_Finalize();
    return status;
}
