/*
 * One ULFM operation timed in the three phases of a failure (bench/ft_primitives/phases.py):
 *
 *   before  ITER calls on a communicator of all ranks, nobody failed;
 *   first   the first call after VICTIM SIGKILLed itself: the victim dies right
 *           after a barrier and the survivors call the operation at once, so the
 *           time includes the discovery of the failure;
 *   later   ITER calls on the same communicator, the dead rank still a member
 *           (agree/iagree after MPIX_Comm_failure_ack; shrink/ishrink of the same
 *           communicator; revoke of communicators created before the failure).
 *
 * OP is agree, iagree, shrink, ishrink (MPIX_Comm_ishrink, patch ompi/09, then
 * MPI_Wait; built with an Open MPI that lacks it, such as upstream's 5.0.11,
 * the program refuses ishrink with one line and exit status 2), revoke, or
 * detect: the failure detection alone (first, later: a receive from the
 * victim, until it fails with MPIX_ERR_PROC_FAILED; before: a barrier), the
 * reference for the first calls. A call's time is that of the
 * slowest rank (survivors after the failure), from a common start (the end of a
 * barrier; revoke: the origin's revoke call, CLOCK_MONOTONIC is shared on one
 * machine) to its return (revoke: to the last rank's receive ending with
 * MPIX_ERR_REVOKED). The revoke origin is rank (VICTIM + 1) % size.
 *
 * Counters (MPI_T, read around each phase when FT_PHASES_COUNTERS is set in the
 * environment; otherwise, or when absent, they print as -1):
 *   ours   coll_ftera_{instances,minmax,fallbacks,proc_failed,agree_ns,detect_ns}
 *          (our agreements started; of them with MAX/MIN/BOR, i.e. Open MPI's
 *          internal allreduces; calls handed to another module; decided with
 *          MPI_ERR_PROC_FAILED; time from start to decision; time from start to
 *          the first failure fed during the instance);
 *   revoke mpi_ft_ftslide_messages_sent + mpi_ft_rbcast_messages_sent (ours + upstream's).
 * Per phase: max over ranks of each ftera counter per call (ns as us), sum over
 * ranks of the broadcast messages per call. Output, first rank of the survivors:
 *
 *   ft_phases op=OP np=N phase=P us=.. q1=.. q3=.. inst=.. minmax=.. fallbacks=.. proc_failed=..
 *       agree_us=.. detect_us=.. rbmsgs=..
 *
 * (us: median over the phase's calls; q1/q3 its quartiles; one line per phase),
 * then "ft_phases finalized=1" once MPI_Finalize has returned (finalize_guard.h:
 * a finalize longer than FINALIZE_GRACE_S seconds ends the process instead).
 * Usage: ft_phases agree|iagree|shrink|ishrink|revoke|detect [ITER [VICTIM]]
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <mpi-ext.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "finalize_guard.h"
#include "ftslide_pvar.h"

enum op { AGREE, IAGREE, SHRINK, ISHRINK, REVOKE, DETECT };
static const char *op_names[] = {"agree", "iagree", "shrink", "ishrink", "revoke", "detect"};
static int victim_rank = -1;

enum { C_INST, C_MINMAX, C_FALLBACK, C_PROC_FAILED, C_AGREE_NS, C_DETECT_NS, C_BMG, C_RBCAST, NCOUNTERS };
static const char *counter_names[NCOUNTERS] = {
    "coll_ftera_instances", "coll_ftera_minmax", "coll_ftera_fallbacks", "coll_ftera_proc_failed",
    "coll_ftera_agree_ns", "coll_ftera_detect_ns", "mpi_ft_ftslide_messages_sent", "mpi_ft_rbcast_messages_sent"};
static ftslide_pvar_t counters[NCOUNTERS];
static int have[NCOUNTERS];

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int compare(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* value at quantile q (0..1) of sorted v[0..n), linear interpolation */
static double quantile(const double *v, int n, double q)
{
    double pos = q * (n - 1);
    int lo = (int)pos;
    return lo + 1 < n ? v[lo] + (pos - lo) * (v[lo + 1] - v[lo]) : v[lo];
}

static void read_counters(double *out)
{
    for (int i = 0; i < NCOUNTERS; i++) {
        out[i] = have[i] ? (double)ftslide_pvar_read(&counters[i]) : 0;
    }
}

static void fail(const char *what, int rc)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    fprintf(stderr, "ft_phases: %s: %s\n", what, text);
    MPI_Abort(MPI_COMM_WORLD, 3);
}

/* One call of op on comm (not revoke). */
static void call(enum op op, MPI_Comm comm)
{
    int flag = 1, rc = MPI_SUCCESS;
    MPI_Comm shrunk = MPI_COMM_NULL;
    MPI_Request req;
    switch (op) {
    case AGREE: rc = MPIX_Comm_agree(comm, &flag); break;
    case IAGREE:
        rc = MPIX_Comm_iagree(comm, &flag, &req);
        if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
        break;
    case SHRINK: rc = MPIX_Comm_shrink(comm, &shrunk); break;
    case ISHRINK:
#ifdef OMPI_HAVE_MPIX_COMM_ISHRINK
        rc = MPIX_Comm_ishrink(comm, &shrunk, &req);
        if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
#else
        rc = MPI_ERR_UNSUPPORTED_OPERATION; /* refused in main() */
#endif
        break;
    case DETECT: { /* a receive from the victim: ends when its failure is reported (before: a barrier) */
        int value;
        if (victim_rank < 0) {
            rc = MPI_Barrier(comm);
        } else {
            rc = MPI_Recv(&value, 1, MPI_INT, victim_rank, 78, comm, MPI_STATUS_IGNORE);
            int c = MPI_SUCCESS;
            if (rc != MPI_SUCCESS) MPI_Error_class(rc, &c);
            if (c != MPIX_ERR_PROC_FAILED) fail("detect: the receive from the victim did not fail", rc);
            rc = MPI_SUCCESS;
        }
        break;
    }
    case REVOKE: break;
    }
    int eclass = MPI_SUCCESS;
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &eclass);
    /* the first agreement after a failure reports it; anything else is wrong */
    if (rc != MPI_SUCCESS && !((op == AGREE || op == IAGREE) && eclass == MPIX_ERR_PROC_FAILED)) {
        fail(op_names[op], rc);
    }
    if (shrunk != MPI_COMM_NULL) MPI_Comm_free(&shrunk);
}

/* Survivors: a live peer to post a never-matched receive from. */
static int live_peer(int rank, int size, int victim)
{
    int peer = (rank + 1) % size;
    if (peer == victim) peer = (peer + 1) % size;
    return peer;
}

/* One revoke of victim_comm by origin; returns this rank's completion time
 * (origin: also its start in *start). */
static double revoke_once(MPI_Comm victim_comm, int rank, int size, int origin, int dead, double *start)
{
    int value;
    MPI_Request req;
    int peer = live_peer(rank, size, dead);
    MPI_Irecv(&value, 1, MPI_INT, peer == rank ? MPI_ANY_SOURCE : peer, 77, victim_comm, &req);
    *start = now_us();
    if (rank == origin) MPIX_Comm_revoke(victim_comm);
    int rc = MPI_Wait(&req, MPI_STATUS_IGNORE), eclass = MPI_SUCCESS;
    double done = now_us();
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &eclass);
    if (eclass != MPIX_ERR_REVOKED) fail("the pending receive did not end with MPIX_ERR_REVOKED", rc);
    return done;
}

/* Report one phase: times[n] (slowest rank per call), counter deltas of this
 * process (summed over the phase's calls). */
static void report(MPI_Comm alive, enum op op, int np, const char *phase, double *times, int n,
                   const double *delta)
{
    double maxed[NCOUNTERS], summed[NCOUNTERS];
    MPI_Reduce(delta, maxed, NCOUNTERS, MPI_DOUBLE, MPI_MAX, 0, alive);
    MPI_Reduce(delta, summed, NCOUNTERS, MPI_DOUBLE, MPI_SUM, 0, alive);
    int rank;
    MPI_Comm_rank(alive, &rank);
    if (rank != 0) return;
    qsort(times, (size_t)n, sizeof(double), compare);
    double per[NCOUNTERS];
    for (int i = 0; i < NCOUNTERS; i++) per[i] = have[i] ? maxed[i] / n : -1;
    double rb = (have[C_BMG] || have[C_RBCAST]) ? (summed[C_BMG] + summed[C_RBCAST]) / n : -1;
    printf("ft_phases op=%s np=%d phase=%s us=%.2f q1=%.2f q3=%.2f inst=%.2f minmax=%.2f fallbacks=%.2f "
           "proc_failed=%.2f agree_us=%.2f detect_us=%.2f rbmsgs=%.2f\n",
           op_names[op], np, phase, quantile(times, n, 0.5), quantile(times, n, 0.25), quantile(times, n, 0.75),
           per[C_INST], per[C_MINMAX], per[C_FALLBACK], per[C_PROC_FAILED],
           have[C_AGREE_NS] ? per[C_AGREE_NS] / 1e3 : -1, have[C_DETECT_NS] ? per[C_DETECT_NS] / 1e3 : -1, rb);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    enum op op = AGREE;
    int known = 0;
    for (int i = 0; argc > 1 && i < 6; i++) {
        if (strcmp(argv[1], op_names[i]) == 0) {
            op = (enum op)i;
            known = 1;
        }
    }
    int iterations = argc > 2 ? atoi(argv[2]) : 20;
    int victim = argc > 3 ? atoi(argv[3]) : 0;
    if (!known || iterations < 1 || victim < 0 || victim >= size || size < 3) {
        if (rank == 0) {
            fprintf(stderr, "usage: ft_phases agree|iagree|shrink|ishrink|revoke|detect [ITER [VICTIM]] "
                            "(ITER >= 1, 0 <= VICTIM < np, np >= 3)\n");
        }
        MPI_Finalize();
        return 2;
    }
#ifndef OMPI_HAVE_MPIX_COMM_ISHRINK
    if (op == ISHRINK) {
        if (rank == 0) {
            fprintf(stderr, "ft_phases: ishrink: this MPI has no MPIX_Comm_ishrink (ftslide's patch ompi/09 adds "
                            "it to Open MPI 5.0.7)\n");
        }
        MPI_Finalize();
        return 2;
    }
#endif
    /* MPI_T only when asked (FT_PHASES_COUNTERS set): with pvar sessions open, the failure was reported
     * sooner to some module sets than to others, so the timed runs go without */
    for (int i = 0; i < NCOUNTERS && getenv("FT_PHASES_COUNTERS"); i++) {
        have[i] = ftslide_pvar_open(&counters[i], counter_names[i]) == 0;
    }
    int origin = (victim + 1) % size;

    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    /* revoke: communicators for the first and the later phase, made before the failure */
    MPI_Comm *pre = calloc((size_t)iterations + 1, sizeof(MPI_Comm));
    if (op == REVOKE) {
        for (int i = 0; i <= iterations; i++) {
            MPI_Comm_dup(MPI_COMM_WORLD, &pre[i]);
            MPI_Comm_set_errhandler(pre[i], MPI_ERRORS_RETURN);
        }
    }
    double *times = malloc(sizeof(double) * (size_t)iterations);
    double c0[NCOUNTERS], c1[NCOUNTERS], delta[NCOUNTERS];

    /* before: warm-up, then ITER calls */
    for (int i = -2; i < iterations; i++) {
        double mine, slowest;
        if (i == 0) read_counters(c0);
        if (op == REVOKE) {
            MPI_Comm c;
            MPI_Comm_dup(MPI_COMM_WORLD, &c);
            MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
            MPI_Barrier(MPI_COMM_WORLD);
            double start;
            double done = revoke_once(c, rank, size, origin, -1, &start);
            MPI_Bcast(&start, 1, MPI_DOUBLE, origin, MPI_COMM_WORLD);
            mine = done - start;
            MPI_Comm_free(&c);
        } else {
            MPI_Barrier(MPI_COMM_WORLD);
            double start = now_us();
            call(op, comm);
            mine = now_us() - start;
        }
        MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (i >= 0) times[i] = slowest;
    }
    read_counters(c1);
    for (int i = 0; i < NCOUNTERS; i++) delta[i] = c1[i] - c0[i];
    report(MPI_COMM_WORLD, op, size, "before", times, iterations, delta);

    /* first: the victim dies at the end of a barrier, the others call at once */
    read_counters(c0); /* before the barrier: a revoke may reach a rank still inside it */
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == victim) kill(getpid(), SIGKILL);
    victim_rank = victim;
    double start = now_us(), mine;
    if (op == REVOKE) {
        double done = revoke_once(pre[iterations], rank, size, origin, victim, &start);
        mine = done; /* start: the origin's, sent below */
    } else {
        call(op, comm);
        mine = now_us() - start;
    }
    read_counters(c1);
    for (int i = 0; i < NCOUNTERS; i++) delta[i] = c1[i] - c0[i];
    /* the survivors' communicator, for the reports (not timed) */
    MPI_Comm alive;
    int rc = MPIX_Comm_shrink(MPI_COMM_WORLD, &alive);
    if (rc != MPI_SUCCESS) fail("shrink of MPI_COMM_WORLD", rc);
    int arank;
    MPI_Comm_rank(alive, &arank);
    int aorigin = origin < victim ? origin : origin - 1; /* origin's rank in alive */
    if (op == REVOKE) {
        MPI_Bcast(&start, 1, MPI_DOUBLE, aorigin, alive);
        mine -= start;
    }
    double slowest;
    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, alive);
    times[0] = slowest;
    report(alive, op, size, "first", times, 1, delta);

    /* later: the dead rank is still a member of comm (and of the pre-made communicators) */
    if (op == AGREE || op == IAGREE) {
        MPIX_Comm_failure_ack(comm);
    }
    for (int i = -1; i < iterations; i++) {
        if (i == 0) read_counters(c0);
        if (op == REVOKE) {
            MPI_Comm c = pre[i < 0 ? 0 : i];
            if (i < 0) { /* no warm-up revoke: every pre-made communicator is timed once */
                continue;
            }
            MPI_Barrier(alive);
            double done = revoke_once(c, rank, size, origin, victim, &start);
            MPI_Bcast(&start, 1, MPI_DOUBLE, aorigin, alive);
            mine = done - start;
        } else {
            MPI_Barrier(alive);
            start = now_us();
            call(op, comm);
            mine = now_us() - start;
        }
        MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, alive);
        if (i >= 0) times[i] = slowest;
    }
    read_counters(c1);
    for (int i = 0; i < NCOUNTERS; i++) delta[i] = c1[i] - c0[i];
    report(alive, op, size, "later", times, iterations, delta);

    for (int i = 0; i < NCOUNTERS; i++) {
        if (have[i]) ftslide_pvar_close(&counters[i]);
    }
    if (op == REVOKE) {
        for (int i = 0; i <= iterations; i++) MPI_Comm_free(&pre[i]);
    }
    free(pre);
    free(times);
    MPI_Comm_free(&alive);
    MPI_Comm_free(&comm);
    finalize_within_grace("ft_phases", arank == 0);
    return 0;
}
