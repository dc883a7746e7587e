/*
 * Non-blocking agreement with the MPI-4 style failure queries: every round,
 * each rank starts MPIX_Comm_iagree on a flag with one bit per world rank set
 * (all bits but its own are 1, so the AND shows who contributed), does local
 * work while it tests the request, and looks at the outcome. When the
 * agreement returns MPIX_ERR_PROC_FAILED, the rank asks who failed
 * (MPIX_Comm_get_failed), acknowledges them (MPIX_Comm_ack_failed) and runs
 * the round again: with the failures acknowledged everywhere the next
 * agreement succeeds. No revoke, no shrink: the communicator keeps its dead
 * members.
 *
 * Checks: an agreed flag has this rank's own bit cleared (its contribution
 * counted) and no bit of a rank acknowledged failed before the round began
 * cleared; every survivor completes ROUNDS rounds and prints the
 * same digest of the agreed flags (digest=...), which the harness compares
 * across ranks, and the same count of acknowledged failures (acked=N, at most
 * the kills that landed, at least the kills that landed before the last
 * round).
 *
 * Kill points: "round=K" at the start of round K (K in 0..ROUNDS-1).
 *
 * usage: iagree_get_failed [ROUNDS]     (default 30)
 */
#include <stdint.h>
#include <stdlib.h>

#include "ftcheck.h"

/* World ranks of the processes in `group` marked in `mask` (bit r = world rank r). */
static uint32_t mask_of(MPI_Group group, MPI_Comm comm)
{
    MPI_Group comm_group;
    int n;
    uint32_t mask = 0;
    MPI_Group_size(group, &n);
    MPI_Comm_group(comm, &comm_group);
    for (int i = 0; i < n; i++) {
        int r;
        MPI_Group_translate_ranks(group, 1, &i, comm_group, &r);
        if (r >= 0 && r < 32) mask |= 1u << r;
    }
    MPI_Group_free(&comm_group);
    return mask;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rounds = argc > 1 ? atoi(argv[1]) : 30;
    int rank, size;
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    const char *why = size > 32 ? "more than 32 ranks" : NULL;
    uint32_t all = size >= 32 ? UINT32_MAX : (1u << size) - 1, acked_mask = 0;
    uint64_t digest = 1469598103934665603ull; /* FNV-1a over the agreed flags */
    int acked = 0, retries = 0;
    for (int round = 0; round < rounds && why == NULL; round++) {
        ftslide_killpointf(rank, "round=%d", round);
        uint32_t dead_before = acked_mask; /* acknowledged failed before this round: cannot contribute */
        double started = MPI_Wtime();
        for (;;) {
            int flag = (int)(all & ~(1u << rank));
            MPI_Request req;
            int done = 0, rc = MPIX_Comm_iagree(comm, &flag, &req);
            volatile double local = 0;
            while (rc == MPI_SUCCESS && !done) {
                for (int i = 0; i < 200; i++) local += i * 0.5; /* work overlapped with the agreement */
                rc = MPI_Test(&req, &done, MPI_STATUS_IGNORE);
            }
            int eclass = MPI_SUCCESS;
            if (rc != MPI_SUCCESS) MPI_Error_class(rc, &eclass);
            if (eclass == MPIX_ERR_PROC_FAILED) {
                MPI_Group failed;
                int nfailed;
                MPIX_Comm_get_failed(comm, &failed);
                MPI_Group_size(failed, &nfailed);
                MPIX_Comm_ack_failed(comm, nfailed, &acked);
                acked_mask = mask_of(failed, comm);
                MPI_Group_free(&failed);
                retries++;
                /* the next agreement succeeds once every survivor has
                 * acknowledged; that waits only for the failure reports */
                if (MPI_Wtime() - started > 20) {
                    why = "the agreement still fails 20 s after the failures were acknowledged";
                    break;
                }
                continue;
            }
            if (rc != MPI_SUCCESS) {
                why = "unexpected error from the agreement";
                break;
            }
            uint32_t contributed = ~(uint32_t)flag & all;
            if ((contributed & (1u << rank)) == 0) why = "this rank's own contribution is missing";
            else if (contributed & dead_before) why = "a rank acknowledged failed before the round contributed";
            for (int b = 0; b < 4; b++) digest = (digest ^ ((uint32_t)flag >> (8 * b) & 0xff)) * 1099511628211ull;
            break;
        }
    }
    FTCHECK("acked", "%d", acked);
    FTCHECK("retries", "%d", retries);
    FTCHECK("digest", "%016llx", (unsigned long long)digest);
    ftcheck_outcome(why);
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return 0;
}
