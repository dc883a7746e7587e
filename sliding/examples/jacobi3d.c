/*
 * jacobi3d: a 3D Jacobi 7-point stencil that survives node failures with the
 * sliding runtime (sliding.h).
 *
 * Usage: jacobi3d [RUNTIME OPTIONS] GRID SPARES METHOD [N [ITERATIONS [INTERVAL]]]
 *   GRID     node grid with spares, 3D (torus:3x2x2) or 2D (mesh:4x3: the
 *            nodes form one layer, as in AxBx1)
 *   SPARES   spare layout, e.g. x:1
 *   METHOD   simple, slide1d, slide2d, hybrid or routed
 *   N        points per rank and dimension (default 8)
 *   ITERATIONS  default 40
 *   INTERVAL a checkpoint every INTERVAL iterations (default: the runtime's
 *            --checkpoint-every, itself 5 by default)
 * The runtime takes GRID SPARES METHOD and its options off the command line
 * (sliding_create_args, sliding.h): --block AxB[xC], --emulate-nodes K,
 * --node-coords FILE, --checkpoint-every N, --redundancy POLICY,
 * --domains AxB[xC], --checkpoint-dir DIR, --file-every N. With K processes
 * per node the process count is K times the grid's nodes.
 *
 * Each rank owns an N^3 block of a global field, periodic on a torus and with
 * zero boundaries on a mesh. On a 2D node grid the third dimension is the
 * block's own: periodic onto itself on a torus, zero boundaries on a mesh.
 * Every iteration exchanges the six faces with the Cartesian neighbours and
 * averages them. A checkpoint is taken every INTERVAL iterations;
 * after a recovery every rank resumes from it.
 * At the end the blocks' sums are gathered to rank 0 and added in rank
 * order, so a run with failures must print the same checksum, bit for bit, as
 * one without.
 *
 * Output: one line per event, "jacobi3d: EVENT KEY=VALUE ...", for people
 * and for programs (ftslide/sliding/runtime.py reads them): no value holds a
 * blank, except the last, "message", which runs to the end of the line.
 * Logical rank 0 prints on stdout
 *   jacobi3d: recovered iteration=I failed=2,5 attempts=1 agree_ms=.. map_ms=.. rebuild_ms=.. state_ms=.. commit_ms=.. total_ms=.. moved_bytes=.. buddy_bytes=..
 *   jacobi3d: done iterations=ITERATIONS n=N checksum=0x... value=...
 * and, with JACOBI3D_TIMES=1 in the environment, after every iteration
 *   jacobi3d: iteration number=I time=T     (T: MPI_Wtime of logical rank 0)
 * (bench/validate/nodekill.py times the iterations before and after a recovery);
 * a process that gives up prints on stderr
 *   jacobi3d: error step=arguments|create|start|recovery [status=ERR_...] message=...
 * (status: a name of sliding_names.h).
 *
 * Fault injection (ftslide_killpoint.h), by node id (sliding_node(): the
 * MPI_COMM_WORLD rank with one process per node): "iter=I" at the start of
 * iteration I; the runtime's own points (checkpoint, waiting, the steps of a
 * recovery, promoted: sliding_names.h). The whole node dies at its point.
 */
#include <inttypes.h>
#include <mpi.h>
#include <mpi-ext.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sliding.h"

typedef struct field {
    int n;          /* interior points per dimension */
    double *u, *v;  /* (n+2)^3 with a halo layer */
    double *send, *recv;
} field_t;

#define AT(f, a, i, j, k) (a)[((size_t)(i) * (size_t)((f)->n + 2) + (size_t)(j)) * (size_t)((f)->n + 2) + (size_t)(k)]

static void initial_values(field_t *f, MPI_Comm cart)
{
    int rank, ndims, coords[3] = {0, 0, 0};
    MPI_Comm_rank(cart, &rank);
    MPI_Cartdim_get(cart, &ndims);
    MPI_Cart_coords(cart, rank, ndims, coords);
    memset(f->u, 0, sizeof(double) * (size_t)(f->n + 2) * (size_t)(f->n + 2) * (size_t)(f->n + 2));
    for (int i = 1; i <= f->n; i++) {
        for (int j = 1; j <= f->n; j++) {
            for (int k = 1; k <= f->n; k++) {
                long gx = (long)coords[0] * f->n + i, gy = (long)coords[1] * f->n + j,
                     gz = (long)coords[2] * f->n + k;
                AT(f, f->u, i, j, k) = (double)((gx * 7 + gy * 13 + gz * 29) % 101) / 101.0;
            }
        }
    }
}

/* Copy face 'side' (0 low, 1 high) of dimension 'dim' of u into or out of buf. */
static void face(field_t *f, int dim, int plane, double *buf, int to_buffer)
{
    size_t idx = 0;
    for (int a = 1; a <= f->n; a++) {
        for (int b = 1; b <= f->n; b++) {
            double *cell = dim == 0   ? &AT(f, f->u, plane, a, b)
                           : dim == 1 ? &AT(f, f->u, a, plane, b)
                                      : &AT(f, f->u, a, b, plane);
            if (to_buffer) {
                buf[idx++] = *cell;
            } else {
                *cell = buf[idx++];
            }
        }
    }
}

/* Exchange the six faces; a missing neighbour (mesh edge) gives a zero halo. The
 * halo is written either way: after a recovery this process may hold another
 * rank than before, and its old halos must not leak into the new rank's edge.
 * A dimension the node grid does not have (2D grids) is one node wide: the
 * neighbour is this process itself on a torus, none on a mesh. */
static int exchange_halos(field_t *f, MPI_Comm cart)
{
    int count = f->n * f->n, self, ndims, dims[3], periods[3], coords[3];
    MPI_Comm_rank(cart, &self);
    MPI_Cartdim_get(cart, &ndims);
    MPI_Cart_get(cart, ndims, dims, periods, coords);
    for (int dim = 0; dim < 3; dim++) {
        int low, high;
        if (dim < ndims) {
            MPI_Cart_shift(cart, dim, 1, &low, &high);
        } else {
            low = high = periods[0] ? self : MPI_PROC_NULL;
        }
        /* Send the high face up, receive the low halo from below; then the reverse. */
        for (int dir = 0; dir < 2; dir++) {
            int to = dir == 0 ? high : low, from = dir == 0 ? low : high;
            face(f, dim, dir == 0 ? f->n : 1, f->send, 1);
            int rc = MPI_Sendrecv(f->send, count, MPI_DOUBLE, to, dim * 2 + dir, f->recv, count, MPI_DOUBLE,
                                  from, dim * 2 + dir, cart, MPI_STATUS_IGNORE);
            if (rc != MPI_SUCCESS) {
                return rc;
            }
            if (from == MPI_PROC_NULL) {
                memset(f->recv, 0, sizeof(double) * (size_t)count);
            }
            face(f, dim, dir == 0 ? 0 : f->n + 1, f->recv, 0);
        }
    }
    return MPI_SUCCESS;
}

static void sweep(field_t *f)
{
    for (int i = 1; i <= f->n; i++) {
        for (int j = 1; j <= f->n; j++) {
            for (int k = 1; k <= f->n; k++) {
                AT(f, f->v, i, j, k) = (AT(f, f->u, i - 1, j, k) + AT(f, f->u, i + 1, j, k) +
                                        AT(f, f->u, i, j - 1, k) + AT(f, f->u, i, j + 1, k) +
                                        AT(f, f->u, i, j, k - 1) + AT(f, f->u, i, j, k + 1)) / 6.0;
            }
        }
    }
    double *t = f->u;
    f->u = f->v;
    f->v = t;
}

/* Sum of the block, then of all blocks in rank order at rank 0. */
static int checksum(field_t *f, MPI_Comm cart, double *total)
{
    double mine = 0;
    for (int i = 1; i <= f->n; i++) {
        for (int j = 1; j <= f->n; j++) {
            for (int k = 1; k <= f->n; k++) {
                mine += AT(f, f->u, i, j, k);
            }
        }
    }
    int rank, size;
    MPI_Comm_rank(cart, &rank);
    MPI_Comm_size(cart, &size);
    double *all = rank == 0 ? malloc(sizeof(double) * (size_t)size) : NULL;
    int rc = MPI_Gather(&mine, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, cart);
    if (rc == MPI_SUCCESS && rank == 0) {
        *total = 0;
        for (int r = 0; r < size; r++) {
            *total += all[r];
        }
    }
    free(all);
    return rc;
}

/* A runtime error. Every survivor gets the same one (it derives from agreed
 * state), so all of them leave cleanly with exit status 3. */
static void fail(sliding_t *s, const char *what, int status)
{
    sliding_report_error(s, "jacobi3d", what, status);
    sliding_free(s);
    MPI_Finalize();
    exit(3);
}

#define USAGE                                                                                           \
    "usage: jacobi3d [RUNTIME OPTIONS] GRID SPARES METHOD [N [ITERATIONS [INTERVAL]]]; runtime options " \
    "(sliding.h): --block AxB[xC] --emulate-nodes K --node-coords FILE --checkpoint-every N "            \
    "--redundancy POLICY --domains AxB[xC] --checkpoint-dir DIR --file-every N"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    sliding_t *s = NULL;
    int rc = sliding_create_args(MPI_COMM_WORLD, &argc, &argv, &s); /* leaves N ITERATIONS INTERVAL */
    int world_rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    if (rc != SLIDING_OK) { /* bad arguments, or a layout the runtime refuses: one line, exit 2 */
        if (rc != SLIDING_ERR_ARG) {
            sliding_report_error(NULL, "jacobi3d", "create", rc);
        } else if (world_rank == 0) {
            fprintf(stderr, "jacobi3d: error step=arguments status=ERR_ARG message=" USAGE "\n");
        }
        MPI_Finalize();
        return 2;
    }
    char **arg = argv + 1;
    int nargs = argc - 1;
    field_t f = {.n = nargs > 0 ? atoi(arg[0]) : 8};
    int iterations = nargs > 1 ? atoi(arg[1]) : 40, every = nargs > 2 ? atoi(arg[2]) : 0;
    if (f.n < 1 || iterations < 1 || (nargs > 2 && every < 1)) {
        if (world_rank == 0) {
            fprintf(stderr, "jacobi3d: error step=arguments message=N, ITERATIONS and INTERVAL must be at least 1\n");
        }
        sliding_free(s);
        MPI_Finalize();
        return 2;
    }
    size_t cells = (size_t)(f.n + 2) * (size_t)(f.n + 2) * (size_t)(f.n + 2);
    f.u = calloc(cells, sizeof(double));
    f.v = calloc(cells, sizeof(double));
    f.send = malloc(sizeof(double) * (size_t)f.n * (size_t)f.n);
    f.recv = malloc(sizeof(double) * (size_t)f.n * (size_t)f.n);
    /* u changes identity at every sweep (swap): register a stable buffer and
     * copy into it around checkpoints and recoveries. */
    double *saved = calloc(cells, sizeof(double));
    sliding_register(s, saved, cells * sizeof(double));

    MPI_Comm cart;
    int role, it = 0;
    int64_t version;
    if ((rc = sliding_start(s, &cart, &role, &version)) != SLIDING_OK) {
        fail(s, "start", rc);
    }
    if (role != SLIDING_FINISHED && version >= 0) { /* a spare promoted after a checkpoint */
        memcpy(f.u, saved, cells * sizeof(double));
        it = (int)version;
    } else if (role != SLIDING_FINISHED) {
        initial_values(&f, cart);
    }
    if (role == SLIDING_PROMOTED) {
        sliding_report_recovery(s, "jacobi3d", it);
    }
    const char *times = getenv("JACOBI3D_TIMES");
    int report_times = times != NULL && strcmp(times, "1") == 0;
    double total = 0;
    while (role != SLIDING_FINISHED) {
        if (it < iterations) {
            char point[32];
            snprintf(point, sizeof point, "%s=%d", sliding_point_name(SLIDING_POINT_ITER), it);
            sliding_killpoint(s, point);
            rc = exchange_halos(&f, cart);
            if (rc == MPI_SUCCESS) {
                sweep(&f);
                it++;
                if (report_times) {
                    int rank;
                    MPI_Comm_rank(cart, &rank);
                    if (rank == 0) {
                        printf("jacobi3d: iteration number=%d time=%.6f\n", it, MPI_Wtime());
                        fflush(stdout);
                    }
                }
                if ((every ? it % every == 0 : sliding_checkpoint_due(s, it)) && it < iterations) {
                    memcpy(saved, f.u, cells * sizeof(double));
                    rc = sliding_checkpoint(s, it);
                }
            }
            if (rc == MPI_SUCCESS) {
                continue;
            }
        } else {
            /* The gather is the run's last step: sliding_finish agrees that every
             * worker got through it, or the run goes back to the checkpoint. */
            checksum(&f, cart, &total);
            if (sliding_finish(s) == SLIDING_OK) {
                break;
            }
        }
        int status = sliding_recover(s, &cart, &role, &version);
        if (status != SLIDING_OK) {
            fail(s, "recovery", status);
        }
        if (role == SLIDING_FINISHED) {
            break;
        }
        if (version >= 0) {
            memcpy(f.u, saved, cells * sizeof(double));
            it = (int)version;
        } else {
            initial_values(&f, cart);
            it = 0;
        }
        sliding_report_recovery(s, "jacobi3d", it);
    }

    int rank = -1;
    if (role != SLIDING_FINISHED) {
        MPI_Comm_rank(cart, &rank);
    }
    if (rank == 0) {
        uint64_t bits;
        memcpy(&bits, &total, sizeof bits);
        printf("jacobi3d: done iterations=%d n=%d checksum=0x%016" PRIx64 " value=%.17g\n", iterations, f.n, bits,
               total);
        fflush(stdout);
    }
    sliding_free(s);
    free(f.u);
    free(f.v);
    free(f.send);
    free(f.recv);
    free(saved);
    MPI_Finalize();
    return 0;
}
