/*
 * The check-once style from C++ (sliding.hpp), as checkonce.c runs it in C,
 * on mesh:3x2 with spares x:1 (6 processes: nodes 0-3 run a 2x2 rank grid,
 * nodes 4 and 5 wait), written as sliding.hpp recommends: no per-call checks,
 * sliding::check(s) at the end of each iteration, one catch that recovers.
 * Usage: checkonce-cpp MODE
 *   run             20 iterations of a halo exchange (Irecv/Isend/Waitall),
 *                   a checkpoint every 4, sliding_finish; the recovery
 *                   callback notes old>new rank and runs an MPI_Allreduce on
 *                   the new cart
 *   callback-fails  the callback of logical rank 0 returns 1
 * Every process reports (ftcheck.h) what checkonce.c reports under the same
 * keys: "dims" and "coords" before sliding_start, "start", "recover" (the
 * last sliding_recover), "finish" (the last sliding_finish), "callback"
 * (old>new, each call), "sum" (the final value summed at logical rank 0);
 * and "status" (the status of the sliding::failure that ended the run, or
 * OK), "what" (its what(), at logical rank 0 of the callback's run).
 * Kill points: the runtime's and "iter=I" at the start of iteration I.
 */
#include <cstring>
#include <string>

#include "ftcheck.h"
#include "sliding.hpp"

namespace {

const int iterations = 20;

struct app {
    std::string mode;
    std::string calls;
};

int on_recovery(sliding_t *s, int old_rank, int new_rank, MPI_Comm cart, void *arg)
{
    app &state = *static_cast<app *>(arg);
    state.calls += (state.calls.empty() ? "" : ",") + std::to_string(old_rank) + ">" + std::to_string(new_rank);
    if (new_rank != sliding_rank(s)) {
        return 1;
    }
    if (state.mode == "callback-fails" && new_rank == 0) {
        return 1;
    }
    int one = 1, count = 0;
    MPI_Allreduce(&one, &count, 1, MPI_INT, MPI_SUM, cart);
    return count == 4 ? 0 : 1;
}

/* Every rank sends its value to its four neighbours (none beyond the edges)
 * and adds what it receives, in checkonce.c's order. No error checks. */
void step(MPI_Comm cart, double *value)
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
    *value = *value * 0.5 + (in[0] + in[1] + in[2] + in[3]) * 0.125;
}

} // namespace

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    app state{argc > 1 ? argv[1] : "run", ""};
    sliding_t *s = nullptr;
    if (sliding_create(MPI_COMM_WORLD, "mesh:3x2", "x:1", "hybrid", &s) != SLIDING_OK) {
        MPI_Finalize();
        return 1;
    }
    int ndims, dims[3], coords[3];
    sliding_dims(s, &ndims, dims);
    sliding_coords(s, coords);
    FTCHECK("dims", "%dx%dx%d", dims[0], dims[1], dims[2]);
    FTCHECK("coords", "%d,%d", coords[0], coords[1]);
    double value = 0;
    sliding_register(s, &value, sizeof value);
    sliding_on_recovery(s, on_recovery, &state);
    MPI_Comm cart = MPI_COMM_NULL;
    int role = SLIDING_FINISHED, it = 0, status = SLIDING_OK;
    const char *finish = nullptr;
    int64_t version = -1;
    auto resume = [&] {
        it = version < 0 ? 0 : static_cast<int>(version);
        value = version < 0 ? sliding_rank(s) : value;
    };
    try {
        int started = sliding_start(s, &cart, &role, &version);
        FTCHECK("start", "%s", sliding_status_name(started));
        sliding::check(started);
        if (role != SLIDING_FINISHED) {
            resume();
        }
        while (role != SLIDING_FINISHED) {
            try {
                while (it < iterations) {
                    sliding_killpoint(s, ("iter=" + std::to_string(it)).c_str());
                    step(cart, &value);
                    it++;
                    if (it % 4 == 0) {
                        sliding_checkpoint(s, it);
                    }
                    sliding::check(s);
                }
                finish = "OK";
                sliding::check(sliding_finish(s));
                break;
            } catch (const sliding::failure &failed) {
                finish = sliding_status_name(failed.status());
                int recovered = sliding_recover(s, &cart, &role, &version);
                FTCHECK("recover", "%s", sliding_status_name(recovered));
                sliding::check(recovered); /* out of the loop: the run ends */
                if (role != SLIDING_FINISHED) {
                    resume();
                }
            }
        }
    } catch (const sliding::failure &ended) {
        status = ended.status();
        if (sliding_rank(s) == 0) {
            FTCHECK("what", "%s", ended.what());
        }
    }
    FTCHECK("status", "%s", sliding_status_name(status));
    if (finish) {
        FTCHECK("finish", "%s", finish);
    }
    if (!state.calls.empty()) {
        FTCHECK("callback", "%s", state.calls.c_str());
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
