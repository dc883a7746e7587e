/*
 * ftsim_kernels.c -- SMPI communication kernels for ftslide's slowdown
 * simulations. Built with smpicc and run under smpirun; every rank is a
 * simulated process placed on a host by the hostfile, so the rank-to-node
 * mapping under test is entirely in the hostfile.
 *
 * Ranks form a logical Cartesian grid, row-major with the last dimension
 * fastest (the same numbering as the sliding core's logical grid).
 *
 * Usage: ftsim_kernels DIMS PERIODIC ITERS PATTERN[:BYTES] ...
 *   DIMS      logical grid sizes "AxB" or "AxBxC" (product = number of ranks)
 *   PERIODIC  1: the stencil wraps around (dimensions of size >= 3 only)
 *   ITERS     repetitions of each kernel (the time reported is per repetition)
 *   PATTERN   stencil:BYTES   5-point (2D) / 7-point (3D) halo exchange, one
 *                             message of BYTES each way per neighbour pair,
 *                             all dimensions at once
 *             phased:BYTES    the same messages one dimension at a time (x,
 *                             then y, then z), each completed before the next
 *             sendrecv:BYTES  the exchange of sliding/examples/jacobi3d.c: per
 *                             dimension of a Cartesian communicator, an
 *                             MPI_Sendrecv up, then one down (wrapping as
 *                             MPI_Cart_shift does, also at size 2)
 *             barrier         MPI_Barrier
 *             allreduce:BYTES MPI_Allreduce (MPI_SUM) of BYTES of doubles
 *             compute:FLOPS   every rank at once computes FLOPS floating-point
 *                             operations (a chain of multiply-adds; in SMPI,
 *                             smpi_execute_flops on the rank's host, which
 *                             the host's ranks share): ftslide validate's
 *                             calibration of the host speed
 *
 * Under SMPI, every message the halo patterns send first costs its sender
 * W flops per byte on its host (shared by the ranks of that host), W being the
 * host property FTSIM_SEND_WORK_PROPERTY (a <prop> of the platform's cluster,
 * which SimGrid gives every host of it; 0 without it; its name comes from the
 * build, ftslide/simulation/smpi.py, as the platform generator spells it):
 * the CPU time a real MPI library spends per message, calibrated on the real
 * run (ftslide validate) and kept in the platform. A real run spends it itself.
 *
 * Rank 0 prints one line per kernel:
 *   ftsim pattern=NAME bytes=B iters=N time=SECONDS
 * where SECONDS is the largest simulated time any rank spent in one
 * repetition (all ranks start together after a barrier). Outside SMPI the
 * stencil runs one untimed repetition first: a real MPI library opens its
 * connections on first use, which is not the halo exchange being measured.
 *
 * No mutable global state, so it runs without SMPI's privatization. The
 * same source runs as a real MPI program (ftslide validate, built with the
 * project's mpicc): only the shared payload buffers are SMPI's.
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FTSIM_MAX_DIMS 3

#ifdef SMPI_SHARED_MALLOC
#include <simgrid/host.h>
/* Payload contents do not matter: one shared buffer, no copies in SMPI. */
#define FTSIM_ALLOC(n) SMPI_SHARED_MALLOC(n)
#define FTSIM_FREE(p) SMPI_SHARED_FREE(p)
#else
#define FTSIM_ALLOC(n) malloc(n)
#define FTSIM_FREE(p) free(p)
#endif

/* The CPU work of sending `bytes` (see the header): SMPI only. */
static void ftsim_send_work(long bytes)
{
#ifdef SMPI_SHARED_MALLOC
    const char *value = sg_host_get_property_value(sg_host_self(), FTSIM_SEND_WORK_PROPERTY);
    double per_byte = value ? atof(value) : 0.0;
    if (per_byte > 0.0 && bytes > 0)
        smpi_execute_flops(per_byte * (double)bytes);
#else
    (void)bytes;
#endif
}

/* compute:FLOPS: a chain of multiply-adds (2 flops each) that the compiler
 * cannot drop; SMPI executes the flops on the rank's host instead. */
static double ftsim_compute(long flops, int iters)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime(), x = 1.0;
    for (int it = 0; it < iters; it++) {
#ifdef SMPI_SHARED_MALLOC
        smpi_execute_flops((double)flops);
#else
        volatile double a = 0.999999, b = 1e-7;
        for (long i = 0; i < flops / 2; i++)
            x = x * a + b;
#endif
    }
    double t = MPI_Wtime() - t0;
    if (x < 0.0) /* never: keeps x alive */
        printf("%g\n", x);
    return t;
}

/* Wait for requests. A real run (ftslide validate) puts many ranks on few cores: a rank that
 * spins in MPI_Waitall keeps the CPU from the ranks whose halos it waits for, so there it polls
 * and sleeps 2 ms in between. SMPI has no such contention. */
static void ftsim_waitall(int n, MPI_Request *req)
{
#ifdef SMPI_SHARED_MALLOC
    MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
#else
    const struct timespec pause = {0, 2000000};
    int done = 0;
    MPI_Testall(n, req, &done, MPI_STATUSES_IGNORE);
    while (!done) {
        nanosleep(&pause, NULL);
        MPI_Testall(n, req, &done, MPI_STATUSES_IGNORE);
    }
#endif
}

typedef struct ftsim_grid {
    int ndims;
    int size[FTSIM_MAX_DIMS];
    int periodic;
} ftsim_grid;

static int ftsim_parse_dims(const char *text, ftsim_grid *g)
{
    const char *p = text;
    g->ndims = 0;
    while (*p != '\0') {
        char *end = NULL;
        long v = strtol(p, &end, 10);
        if (end == p || v < 1 || g->ndims == FTSIM_MAX_DIMS)
            return -1;
        g->size[g->ndims++] = (int)v;
        if (*end == 'x')
            end++;
        else if (*end != '\0')
            return -1;
        p = end;
    }
    return g->ndims >= 2 ? 0 : -1;
}

/* Neighbour ranks of `rank` and the side each one is on (2*dim + 0 for the
 * low side, + 1 for the high side); returns how many. */
static int ftsim_neighbours(const ftsim_grid *g, int rank, int out[2 * FTSIM_MAX_DIMS],
                            int side[2 * FTSIM_MAX_DIMS])
{
    int coords[FTSIM_MAX_DIMS];
    int stride[FTSIM_MAX_DIMS];
    int n = 0;
    int rest = rank;
    for (int d = g->ndims - 1; d >= 0; d--) {
        coords[d] = rest % g->size[d];
        rest /= g->size[d];
    }
    stride[g->ndims - 1] = 1;
    for (int d = g->ndims - 2; d >= 0; d--)
        stride[d] = stride[d + 1] * g->size[d + 1];
    for (int d = 0; d < g->ndims; d++) {
        int wrap = g->periodic && g->size[d] >= 3;
        for (int step = -1; step <= 1; step += 2) {
            int c = coords[d] + step;
            if (c < 0 || c >= g->size[d]) {
                if (!wrap)
                    continue;
                c = (c + g->size[d]) % g->size[d];
            }
            side[n] = 2 * d + (step > 0);
            out[n++] = rank + (c - coords[d]) * stride[d];
        }
    }
    return n;
}

/* Exchange halos with the neighbours nb[first..last-1]. */
static void ftsim_exchange(const int *nb, const int *side, int first, int last, char *sendbuf,
                           char *recvbuf, long bytes)
{
    MPI_Request req[4 * FTSIM_MAX_DIMS];
    const size_t len = (size_t)(bytes > 0 ? bytes : 1);
    int k = 0;
    for (int i = first; i < last; i++)
        MPI_Irecv(recvbuf + (size_t)i * len, (int)bytes, MPI_BYTE, nb[i], side[i], MPI_COMM_WORLD, &req[k++]);
    for (int i = first; i < last; i++) {
        /* the neighbour on our low side sees us on its high side: the tag
         * is the side of the receiver that faces the sender */
        ftsim_send_work(bytes);
        MPI_Isend(sendbuf, (int)bytes, MPI_BYTE, nb[i], side[i] ^ 1, MPI_COMM_WORLD, &req[k++]);
    }
    ftsim_waitall(k, req);
}

/* The halo exchange, all dimensions at once, or one after the other (phased). */
static double ftsim_stencil(const ftsim_grid *g, int rank, long bytes, int iters, int phased)
{
    int nb[2 * FTSIM_MAX_DIMS];
    int side[2 * FTSIM_MAX_DIMS];
    int n = ftsim_neighbours(g, rank, nb, side);
    size_t len = (size_t)(bytes > 0 ? bytes : 1);
    char *sendbuf = FTSIM_ALLOC(len);
    char *recvbuf = FTSIM_ALLOC(len * (size_t)n + 1);
#ifdef SMPI_SHARED_MALLOC
    MPI_Barrier(MPI_COMM_WORLD);
#else
    /* A real run: one untimed exchange opens the connections, and the barrier is polled (spinning
     * ranks on few cores would leave a blocking barrier far apart). */
    ftsim_exchange(nb, side, 0, n, sendbuf, recvbuf, bytes);
    MPI_Request start;
    MPI_Ibarrier(MPI_COMM_WORLD, &start);
    ftsim_waitall(1, &start);
#endif
    double t0 = MPI_Wtime();
    for (int it = 0; it < iters; it++) {
        if (!phased) {
            ftsim_exchange(nb, side, 0, n, sendbuf, recvbuf, bytes);
            continue;
        }
        for (int d = 0, first = 0; d < g->ndims; d++) {
            int last = first;
            while (last < n && side[last] / 2 == d)
                last++;
            ftsim_exchange(nb, side, first, last, sendbuf, recvbuf, bytes);
            first = last;
        }
    }
    double t = MPI_Wtime() - t0;
    FTSIM_FREE(recvbuf);
    FTSIM_FREE(sendbuf);
    return t;
}

/* The halo exchange of sliding/examples/jacobi3d.c: per dimension of a Cartesian communicator
 * (periodic or not, as the grid), MPI_Sendrecv up then down, one direction at a time. */
static double ftsim_sendrecv(const ftsim_grid *g, long bytes, int iters)
{
    int dims[FTSIM_MAX_DIMS], periods[FTSIM_MAX_DIMS];
    for (int d = 0; d < g->ndims; d++) {
        dims[d] = g->size[d];
        periods[d] = g->periodic;
    }
    MPI_Comm cart;
    MPI_Cart_create(MPI_COMM_WORLD, g->ndims, dims, periods, 0, &cart);
    size_t len = (size_t)(bytes > 0 ? bytes : 1);
    char *sendbuf = FTSIM_ALLOC(len);
    char *recvbuf = FTSIM_ALLOC(len);
    double t0 = 0.0;
    for (int it = -1; it < iters; it++) { /* iteration -1 opens the connections, untimed */
        if (it == 0) {
            MPI_Barrier(cart);
            t0 = MPI_Wtime();
        }
        for (int d = 0; d < g->ndims; d++) {
            int low, high;
            MPI_Cart_shift(cart, d, 1, &low, &high);
            for (int dir = 0; dir < 2; dir++) {
                ftsim_send_work(bytes);
                MPI_Sendrecv(sendbuf, (int)bytes, MPI_BYTE, dir == 0 ? high : low, d * 2 + dir, recvbuf,
                             (int)bytes, MPI_BYTE, dir == 0 ? low : high, d * 2 + dir, cart, MPI_STATUS_IGNORE);
            }
        }
    }
    double t = MPI_Wtime() - t0;
    FTSIM_FREE(recvbuf);
    FTSIM_FREE(sendbuf);
    MPI_Comm_free(&cart);
    return t;
}

static double ftsim_barrier(int iters)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int it = 0; it < iters; it++)
        MPI_Barrier(MPI_COMM_WORLD);
    return MPI_Wtime() - t0;
}

static double ftsim_allreduce(long bytes, int iters)
{
    int count = (int)(bytes / (long)sizeof(double));
    if (count < 1)
        count = 1;
    double *in = FTSIM_ALLOC((size_t)count * sizeof(double));
    double *out = FTSIM_ALLOC((size_t)count * sizeof(double));
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int it = 0; it < iters; it++)
        MPI_Allreduce(in, out, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    double t = MPI_Wtime() - t0;
    FTSIM_FREE(out);
    FTSIM_FREE(in);
    return t;
}

int main(int argc, char **argv)
{
    int rank = 0;
    int size = 0;
    ftsim_grid g;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 5 || ftsim_parse_dims(argv[1], &g) != 0) {
        if (rank == 0)
            fprintf(stderr, "usage: ftsim_kernels AxB[xC] PERIODIC ITERS PATTERN[:BYTES]...\n");
        MPI_Finalize();
        return 2;
    }
    g.periodic = atoi(argv[2]) != 0;
    int iters = atoi(argv[3]);
    long ranks = 1;
    for (int d = 0; d < g.ndims; d++)
        ranks *= g.size[d];
    if (ranks != size || iters < 1) {
        if (rank == 0)
            fprintf(stderr, "ftsim_kernels: grid %s has %ld ranks but %d were started (iters %d)\n",
                    argv[1], ranks, size, iters);
        MPI_Finalize();
        return 2;
    }
    int status = 0;
    for (int a = 4; a < argc; a++) {
        char name[32];
        long bytes = 0;
        const char *colon = strchr(argv[a], ':');
        size_t nlen = colon ? (size_t)(colon - argv[a]) : strlen(argv[a]);
        if (nlen >= sizeof name) {
            status = 2;
            break;
        }
        memcpy(name, argv[a], nlen);
        name[nlen] = '\0';
        if (colon)
            bytes = atol(colon + 1);
        double t;
        if (strcmp(name, "stencil") == 0 || strcmp(name, "phased") == 0)
            t = ftsim_stencil(&g, rank, bytes, iters, name[0] == 'p');
        else if (strcmp(name, "sendrecv") == 0)
            t = ftsim_sendrecv(&g, bytes, iters);
        else if (strcmp(name, "barrier") == 0)
            t = ftsim_barrier(iters);
        else if (strcmp(name, "allreduce") == 0)
            t = ftsim_allreduce(bytes, iters);
        else if (strcmp(name, "compute") == 0)
            t = ftsim_compute(bytes, iters);
        else {
            if (rank == 0)
                fprintf(stderr, "ftsim_kernels: unknown pattern '%s'\n", name);
            status = 2;
            break;
        }
        double tmax = 0.0;
        MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (rank == 0)
            printf("ftsim pattern=%s bytes=%ld iters=%d time=%.12e\n", name, bytes, iters, tmax / iters);
    }
    fflush(stdout);
    MPI_Finalize();
    return status;
}
