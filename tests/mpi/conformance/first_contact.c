/*
 * First contact with peers after a failure. np 4; the test kills rank 3 at
 * "before_first_contact", before any process has sent it anything. With
 * `--mca mpi_add_procs_cutoff 0` (5.0.7's default) a process of another node
 * is added at the first message to it, and its address is looked up then, by
 * a direct-modex request through the daemons (patches prrte/20, ompi/30).
 *
 * Order, kept without MPI calls (files in the directory given as argv[1];
 * an MPI call would run the progress engine, and with it the failure report):
 *   1. rank 0 asks PMIx for a key rank 3 never posts (PMIx_Get_nb): that
 *      request waits in the daemons for rank 3, and is still waiting when
 *      rank 3 dies; then rank 0 marks "asked";
 *   2. rank 3 waits for "asked", lets the request reach its daemon, writes
 *      its pid to "victim.pid" and is killed;
 *   3. ranks 0-2 wait until that pid is gone (reaped by its daemon), then let
 *      the daemon finish with it (it releases the job's data when the last
 *      process of the job on its node has ended) before their first contact.
 *
 * Then (the MPI layer of ranks 0-2 has not yet processed the failure report,
 * so every first message below looks the peer's address up):
 *   rank 0: send to and receive from rank 1 (live, never talked to) - both
 *           succeed; the parked PMIx request ends with an error (reported
 *           as parked_get=error|ok|timeout, and parked_seconds); a receive
 *           from rank 3 returns MPIX_ERR_PROC_FAILED;
 *   rank 2: send to rank 3 (MPIX_ERR_PROC_FAILED, or MPI_SUCCESS if it was
 *           buffered: either way no hang and no other error), receive from
 *           rank 3 (MPIX_ERR_PROC_FAILED), then send to rank 1 (succeeds);
 *   rank 1: receives from 0, sends to 0, receives from 2.
 * Before the patches rank 2 waited for ever in PMIx_Get under its send to
 * rank 3, and rank 0's request never ended.
 */
#define _POSIX_C_SOURCE 200809L
#include <pmix.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "ftcheck.h"

/* How long a survivor leaves the victim's daemon to finish with it after the
 * victim was reaped, and the victim leaves rank 0's request to reach its
 * daemon: both make the old failure deterministic, neither is needed for
 * the right answer. */
#define SETTLE_NS 500000000L
/* How long rank 0 waits for the parked request to end. */
#define PARKED_WAIT_S 20

static atomic_int parked_done = 0;
static atomic_int parked_status = 0;

static void parked_answer(pmix_status_t status, pmix_value_t *kv, void *cbdata)
{
    (void)kv;
    (void)cbdata;
    atomic_store(&parked_status, (int)status);
    atomic_store(&parked_done, 1);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void settle(void)
{
    struct timespec pause = {0, SETTLE_NS};
    nanosleep(&pause, NULL);
}

/* Wait until the victim's pid file exists and that process is gone. */
static void await_victim_gone(const char *dir)
{
    char path[512], proc[64];
    struct timespec pause = {0, 1000000};
    int pid = 0;
    ftcheck_await_mark(dir, "victim.pid");
    snprintf(path, sizeof path, "%s/victim.pid", dir);
    FILE *f = fopen(path, "r");
    if (f == NULL || fscanf(f, "%d", &pid) != 1) {
        fprintf(stderr, "first_contact: cannot read %s\n", path);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    fclose(f);
    snprintf(proc, sizeof proc, "/proc/%d", pid);
    for (int i = 0; i < 30000; i++) {
        if (access(proc, F_OK) != 0) return;
        nanosleep(&pause, NULL);
    }
    fprintf(stderr, "first_contact: victim %d still there after 30 s\n", pid);
    MPI_Abort(MPI_COMM_WORLD, 3);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rank = ftcheck_rank(), size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 2 || size != 4) {
        if (rank == 0) fprintf(stderr, "usage: mpirun -np 4 first_contact DIR\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *dir = argv[1];
    const int live = 1, victim = 3;

    pmix_proc_t me, target;
    if (rank == 0) {
        if (PMIx_Init(&me, NULL, 0) != PMIX_SUCCESS) {
            fprintf(stderr, "first_contact: PMIx_Init failed\n");
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
        PMIX_LOAD_PROCID(&target, me.nspace, victim);
        pmix_status_t rc = PMIx_Get_nb(&target, "ftcheck.never.posted", NULL, 0, parked_answer, NULL);
        FTCHECK("parked_get_issued", "%s", rc == PMIX_SUCCESS ? "1" : PMIx_Error_string(rc));
        ftcheck_mark(dir, "asked");
    }
    if (rank == victim) {
        char tmp[512], path[512];
        ftcheck_await_mark(dir, "asked");
        settle();
        snprintf(tmp, sizeof tmp, "%s/victim.tmp", dir);
        snprintf(path, sizeof path, "%s/victim.pid", dir);
        FILE *f = fopen(tmp, "w");
        if (f == NULL) MPI_Abort(MPI_COMM_WORLD, 3);
        fprintf(f, "%d\n", (int)getpid());
        fclose(f);
        rename(tmp, path);
        ftslide_killpoint(rank, "before_first_contact");
    } else {
        await_victim_gone(dir);
        settle();
    }

    int out = 100 + rank, in = -1;
    if (rank == 0) {
        FTCHECK_RC("send_to_live", MPI_Send(&out, 1, MPI_INT, live, 1, MPI_COMM_WORLD));
        FTCHECK_RC("recv_from_live", MPI_Recv(&in, 1, MPI_INT, live, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        FTCHECK("live_value", "%d", in);
        double start = now();
        struct timespec pause = {0, 1000000};
        while (!atomic_load(&parked_done) && now() - start < PARKED_WAIT_S) nanosleep(&pause, NULL);
        if (!atomic_load(&parked_done)) {
            FTCHECK("parked_get", "%s", "timeout");
        } else {
            FTCHECK("parked_get", "%s", atomic_load(&parked_status) == PMIX_SUCCESS ? "ok" : "error");
            FTCHECK("parked_status", "%s", PMIx_Error_string(atomic_load(&parked_status)));
        }
        FTCHECK("parked_seconds", "%.3f", now() - start);
        FTCHECK_RC("recv_from_dead", MPI_Recv(&in, 1, MPI_INT, victim, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    } else if (rank == live) {
        FTCHECK_RC("recv_from_0", MPI_Recv(&in, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        FTCHECK("value_from_0", "%d", in);
        FTCHECK_RC("send_to_0", MPI_Send(&out, 1, MPI_INT, 0, 2, MPI_COMM_WORLD));
        FTCHECK_RC("recv_from_2", MPI_Recv(&in, 1, MPI_INT, 2, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        FTCHECK("value_from_2", "%d", in);
    } else if (rank == 2) {
        double start = now();
        FTCHECK_RC("send_to_dead", MPI_Send(&out, 1, MPI_INT, victim, 4, MPI_COMM_WORLD));
        FTCHECK("send_to_dead_seconds", "%.3f", now() - start);
        FTCHECK_RC("recv_from_dead", MPI_Recv(&in, 1, MPI_INT, victim, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        FTCHECK_RC("send_to_live", MPI_Send(&out, 1, MPI_INT, live, 5, MPI_COMM_WORLD));
    }
    if (rank == 0) PMIx_Finalize(NULL, 0);
    FTCHECK("finished", "%d", 1);
    MPI_Finalize();
    return 0;
}
