/*
 * Revoke under fault injection, for tests/test_revoke_bmg.py.
 *
 * Usage: revoke_kill ROUNDS ORIGIN
 *
 * Each round i (1..ROUNDS) works on a communicator c (MPI_COMM_WORLD's dup at
 * first, afterwards the result of the previous round's shrink): dup c into d,
 * post on d a receive from oneself that is never matched, barrier on c, the
 * rank ORIGIN of c (modulo its size) revokes d, every rank waits for its
 * receive. Then free d and shrink c. Reports, per round:
 *   rc_i       error class of the pending receive (MPIX_ERR_REVOKED expected), or
 *              NOT_REVOKED when the round's origin died and the revoke had not
 *              come GRACE_S seconds after this rank saw it dead (an origin that
 *              dies after sending only to dead peers revokes nobody; then no
 *              survivor may see the revoke)
 *   shrink_i   return of the shrink, members_i the members of c after it (and
 *              after the reshrinks below) as world ranks
 *   sent_i     messages our reliable broadcast sent here during round i (pvar
 *              mpi_ft_ftslide_messages_sent; -1 if the variable is missing)
 *   usent_i    the same for upstream's (pvar mpi_ft_rbcast_messages_sent)
 * and finished=1. Victims die at kill points inside the broadcast (FTSLIDE_KILL
 * R@bmg_sent_N / R@bmg_deliver_N, counted over the whole run) or at
 * before_revoke_i here (never the origin of round i: nobody would revoke).
 *
 * A kill point may fire late: a victim that forwards a revoke after the
 * round's shrink decided it alive dies during that shrink or in the next
 * round, so c may hold a dead process. The program then recovers as ULFM asks of an application:
 *  - the dup of c is made uniform: a rank whose dup failed revokes c (ranks
 *    still inside the dup's context-id allocation wait for it otherwise), all
 *    agree on the outcome, and on failure free what they got, shrink c and
 *    dup again (dups_i counts the attempts);
 *  - a rank whose barrier on c failed revokes c, so that nobody stays in it;
 *  - after the shrink all agree that every member of the result is alive,
 *    and shrink again while that agreement reports a failure (reshrinks_i):
 *    members_i is the membership after that.
 * The revoke under test is the one of d; c is only ever shrunk.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <time.h>

#include "ftcheck.h"
#include "ftslide_pvar.h"

#define GRACE_S 3.0

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* Is rank r of comm known failed here? */
static int is_failed(MPI_Comm comm, int r)
{
    MPI_Group failed, group;
    int n, found = 0;
    MPIX_Comm_get_failed(comm, &failed);
    MPI_Comm_group(comm, &group);
    MPI_Group_size(failed, &n);
    for (int k = 0; k < n && !found; k++) {
        int g;
        MPI_Group_translate_ranks(failed, 1, &k, group, &g);
        found = g == r;
    }
    MPI_Group_free(&failed);
    MPI_Group_free(&group);
    return found;
}

/* Wait for the receive; give up GRACE_S after the origin is seen dead. */
static const char *wait_revoked(MPI_Request *req, MPI_Comm comm, int origin)
{
    double dead_since = -1;
    for (;;) {
        int done = 0;
        int rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (done || rc != MPI_SUCCESS) {
            return ftcheck_class(rc);
        }
        if (dead_since < 0 && is_failed(comm, origin)) {
            dead_since = now_s();
        }
        if (dead_since >= 0 && now_s() - dead_since > GRACE_S) {
            MPI_Cancel(req);
            MPI_Wait(req, MPI_STATUS_IGNORE);
            return "NOT_REVOKED";
        }
    }
}

/* Replace *c by its shrink (errors returned). */
static void shrink_into(MPI_Comm *c)
{
    MPI_Comm shrunk;
    MPIX_Comm_shrink(*c, &shrunk);
    MPI_Comm_free(c);
    *c = shrunk;
    MPI_Comm_set_errhandler(*c, MPI_ERRORS_RETURN);
}

/* A dup of *c that succeeded at every rank still there; after a failed
 * attempt *c is shrunk and the dup tried again. */
static MPI_Comm dup_uniform(MPI_Comm *c, int world_rank, int round)
{
    for (int attempt = 1;; attempt++) {
        MPI_Comm d = MPI_COMM_NULL;
        int ok = MPI_SUCCESS == MPI_Comm_dup(*c, &d);
        if (!ok) {
            MPIX_Comm_revoke(*c); /* peers may still wait in the dup */
        }
        int all_ok = ok;
        MPIX_Comm_agree(*c, &all_ok); /* the flag is agreed even when this reports a failure */
        if (all_ok) {
            printf("ftcheck rank=%d dups_%d=%d\n", world_rank, round, attempt);
            MPI_Comm_set_errhandler(d, MPI_ERRORS_RETURN);
            return d;
        }
        if (ok) {
            MPI_Comm_free(&d);
        }
        shrink_into(c);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int world_rank = ftcheck_rank();
    int rounds = argc > 1 ? atoi(argv[1]) : 1;
    int origin = argc > 2 ? atoi(argv[2]) : 0;
    if (rounds < 1 || origin < 0) {
        fprintf(stderr, "usage: revoke_kill ROUNDS ORIGIN (ROUNDS >= 1, ORIGIN >= 0)\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    ftslide_pvar_t sent, usent;
    int have_pvar = ftslide_pvar_open(&sent, "mpi_ft_ftslide_messages_sent") == 0;
    int have_upvar = ftslide_pvar_open(&usent, "mpi_ft_rbcast_messages_sent") == 0;
    MPI_Comm c = ftcheck_dup_world();
    for (int i = 1; i <= rounds; i++) {
        int rank, size;
        MPI_Comm d = dup_uniform(&c, world_rank, i);
        MPI_Comm_rank(c, &rank);
        MPI_Comm_size(c, &size);
        int value;
        MPI_Request req;
        MPI_Irecv(&value, 1, MPI_INT, rank, 7, d, &req);
        /* read before the barrier: a peer may revoke while we are still in it */
        unsigned long long before = have_pvar ? ftslide_pvar_read(&sent) : 0;
        unsigned long long ubefore = have_upvar ? ftslide_pvar_read(&usent) : 0;
        if (MPI_SUCCESS != MPI_Barrier(c)) {
            MPIX_Comm_revoke(c); /* peers may still wait in the barrier */
        }
        if (rank != origin % size) { /* if the origin died here, nobody would revoke */
            ftslide_killpointf(world_rank, "before_revoke_%d", i);
        }
        if (rank == origin % size) {
            MPIX_Comm_revoke(d);
        }
        printf("ftcheck rank=%d rc_%d=%s\n", world_rank, i, wait_revoked(&req, c, origin % size));
        fflush(stdout);
        MPI_Comm_free(&d);
        MPI_Comm shrunk;
        int rc = MPIX_Comm_shrink(c, &shrunk);
        printf("ftcheck rank=%d shrink_%d=%s\n", world_rank, i, ftcheck_class(rc));
        /* everybody is past the wait of this round: the count is complete */
        printf("ftcheck rank=%d sent_%d=%lld\n", world_rank, i,
               have_pvar ? (long long) (ftslide_pvar_read(&sent) - before) : -1LL);
        printf("ftcheck rank=%d usent_%d=%lld\n", world_rank, i,
               have_upvar ? (long long) (ftslide_pvar_read(&usent) - ubefore) : -1LL);
        MPI_Comm_free(&c);
        c = shrunk;
        MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
        /* a process may die after the shrink decided it alive: agree that every
         * member is, shrink again while that reports a failure */
        int reshrinks = 0;
        for (int flag = 1; MPI_SUCCESS != MPIX_Comm_agree(c, &flag); flag = 1) {
            shrink_into(&c);
            reshrinks++;
        }
        printf("ftcheck rank=%d reshrinks_%d=%d\n", world_rank, i, reshrinks);
        MPI_Comm_size(c, &size);
        MPI_Group group, world_group;
        MPI_Comm_group(c, &group);
        MPI_Comm_group(MPI_COMM_WORLD, &world_group);
        printf("ftcheck rank=%d members_%d=", world_rank, i);
        for (int r = 0; r < size; r++) {
            int w;
            MPI_Group_translate_ranks(group, 1, &r, world_group, &w);
            printf(r ? ",%d" : "%d", w);
        }
        printf("\n");
        fflush(stdout);
        MPI_Group_free(&group);
        MPI_Group_free(&world_group);
    }
    if (have_pvar) {
        ftslide_pvar_close(&sent);
    }
    if (have_upvar) {
        ftslide_pvar_close(&usent);
    }
    MPI_Comm_free(&c);
    FTCHECK("finished", "%d", 1);
    MPI_Finalize();
    return 0;
}
