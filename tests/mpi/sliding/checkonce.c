/*
 * The check-once style of sliding.h and its bad inputs, on mesh:3x2 with
 * spares x:1 (6 processes: nodes 0-3 run a 2x2 rank grid, nodes 4 and 5 wait).
 * Usage: checkonce MODE
 *   run               ITERATIONS iterations of a halo exchange with
 *                     Irecv/Isend/Waitall and no error checks, sliding_ok
 *                     once per iteration, a checkpoint every 4, sliding_finish;
 *                     a callback reports old and new rank and runs an
 *                     MPI_Allreduce on the new communicator
 *   run-slow          run, and at the start of iteration 6 logical rank 1
 *                     sleeps 1 s (its neighbours 0 and 3 are waiting for it
 *                     when it reaches its kill point), logical rank 2 3 s
 *   register          world rank 3 registers one byte more
 *   callback-fails    the callback of logical rank 0 returns 1
 *   callback-frees    the callback of logical rank 1 frees cart
 *   callback-kill     the callbacks pass the kill point "callback" before
 *                     their MPI_Allreduce
 *   app-error         logical rank 2 sends with a negative tag at iteration
 *                     5 (an error of the application's, not a failure)
 * Every process reports (ftcheck.h): "dims" and "coords" before sliding_start,
 * "null" (sliding_dims(NULL)), "start" (the status of sliding_start),
 * "pending" (requests a failed Waitall left active, MPI_ERR_PENDING as MPI
 * allows, the largest count seen), "leaked" (requests still active after a
 * second Waitall on them, which the revoke must have completed), "recover"
 * (the status of the last sliding_recover), "callback" (old>new ranks, each
 * call), "sum" (the final value at
 * logical rank 0), "finish" (the status of the last sliding_finish).
 * Kill points: the runtime's and "iter=I" at the start of iteration I.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ftcheck.h"
#include "sliding.h"

#define ITERATIONS 20

typedef struct app {
    const char *mode;
    char calls[256];
} app_t;

static int on_recovery(sliding_t *s, int old_rank, int new_rank, MPI_Comm cart, void *arg)
{
    app_t *app = arg;
    size_t used = strlen(app->calls);
    snprintf(app->calls + used, sizeof app->calls - used, "%s%d>%d", used ? "," : "", old_rank, new_rank);
    if (strcmp(app->mode, "callback-fails") == 0 && new_rank == 0) {
        return 1;
    }
    if (strcmp(app->mode, "callback-frees") == 0 && new_rank == 1) {
        MPI_Comm_free(&cart);
        return 0;
    }
    sliding_killpoint(s, "callback");
    int one = 1, count = 0;
    MPI_Allreduce(&one, &count, 1, MPI_INT, MPI_SUM, cart);
    return count == 4 ? 0 : 1;
}

static int active(const MPI_Request *reqs, int n)
{
    int left = 0;
    for (int i = 0; i < n; i++) {
        left += reqs[i] != MPI_REQUEST_NULL;
    }
    return left;
}

/* One iteration: every rank sends its value to its four neighbours (no
 * periods: fewer at the edges) and adds what it receives. No error checks,
 * but the requests a failure left active are waited for again: the error
 * handler revoked cart, which completes them. */
static void step(MPI_Comm cart, double *value, int *pending, int *leaked)
{
    MPI_Request reqs[8];
    double in[4] = {0, 0, 0, 0};
    int n = 0;
    for (int dim = 0; dim < 2; dim++) {
        int low, high;
        MPI_Cart_shift(cart, dim, 1, &low, &high);
        MPI_Irecv(&in[dim * 2], 1, MPI_DOUBLE, low, dim, cart, &reqs[n++]);
        MPI_Irecv(&in[dim * 2 + 1], 1, MPI_DOUBLE, high, dim, cart, &reqs[n++]);
        MPI_Isend(value, 1, MPI_DOUBLE, high, dim, cart, &reqs[n++]);
        MPI_Isend(value, 1, MPI_DOUBLE, low, dim, cart, &reqs[n++]);
    }
    MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
    int left = active(reqs, n);
    if (left > 0) {
        MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
    }
    int still = active(reqs, n);
    *pending = left > *pending ? left : *pending;
    *leaked = still > *leaked ? still : *leaked;
    *value = *value * 0.5 + (in[0] + in[1] + in[2] + in[3]) * 0.125;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    app_t app = {argc > 1 ? argv[1] : "run", ""};
    int world_rank = ftcheck_rank(), ndims, dims[3], coords[3];
    sliding_t *s = NULL;
    FTCHECK("null", "%s", sliding_status_name(sliding_dims(s, &ndims, dims)));
    if (sliding_create(MPI_COMM_WORLD, "mesh:3x2", "x:1", "hybrid", &s) != SLIDING_OK) {
        MPI_Finalize();
        return 1;
    }
    sliding_dims(s, &ndims, dims);
    sliding_coords(s, coords);
    FTCHECK("dims", "%dx%dx%d", dims[0], dims[1], dims[2]);
    FTCHECK("coords", "%d,%d", coords[0], coords[1]);
    double value = 0;
    char extra = 0;
    sliding_register(s, &value, sizeof value);
    if (strcmp(app.mode, "register") == 0 && world_rank == 3) {
        sliding_register(s, &extra, 1);
    }
    sliding_on_recovery(s, on_recovery, &app);
    MPI_Comm cart;
    int role, pending = 0, leaked = 0, it = 0, status = SLIDING_OK, finish = -1;
    int64_t version;
    status = sliding_start(s, &cart, &role, &version);
    FTCHECK("start", "%s", sliding_status_name(status));
    if (status == SLIDING_OK && role != SLIDING_FINISHED) {
        it = version < 0 ? 0 : (int)version;
        value = version < 0 ? sliding_rank(s) : value;
    }
    while (status == SLIDING_OK && role != SLIDING_FINISHED) {
        while (it < ITERATIONS && sliding_ok(s)) {
            char point[32];
            snprintf(point, sizeof point, "iter=%d", it);
            if (strcmp(app.mode, "run-slow") == 0 && it == 6) {
                sleep(sliding_rank(s) == 1 ? 1 : sliding_rank(s) == 2 ? 3 : 0);
            }
            sliding_killpoint(s, point);
            step(cart, &value, &pending, &leaked);
            if (strcmp(app.mode, "app-error") == 0 && it == 5 && sliding_rank(s) == 2) {
                MPI_Send(&value, 1, MPI_DOUBLE, 0, -5, cart); /* a negative tag: MPI_ERR_TAG */
            }
            it++;
            if (it % 4 == 0) {
                sliding_checkpoint(s, it);
            }
        }
        if ((finish = sliding_finish(s)) == SLIDING_OK) {
            break;
        }
        status = sliding_recover(s, &cart, &role, &version);
        FTCHECK("recover", "%s", sliding_status_name(status));
        if (status == SLIDING_OK && role != SLIDING_FINISHED) {
            it = version < 0 ? 0 : (int)version;
            value = version < 0 ? sliding_rank(s) : value;
        }
    }
    if (finish >= 0) {
        FTCHECK("finish", "%s", sliding_status_name(finish));
    }
    FTCHECK("pending", "%d", pending);
    FTCHECK("leaked", "%d", leaked);
    if (app.calls[0] != '\0') {
        FTCHECK("callback", "%s", app.calls);
    }
    if (status == SLIDING_OK && role != SLIDING_FINISHED) {
        double total = 0;
        MPI_Reduce(&value, &total, 1, MPI_DOUBLE, MPI_SUM, 0, cart);
        if (sliding_rank(s) == 0) {
            FTCHECK("sum", "%.17g", total);
        }
    }
    sliding_free(s);
    MPI_Finalize();
    return 0;
}
