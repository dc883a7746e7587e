/*
 * Two threads on one communicator: a receive blocked on a live peer is
 * released by a revoke that another thread calls.
 *
 * MPI_THREAD_MULTIPLE; a dup of MPI_COMM_WORLD whose errors are returned.
 * Every process runs two threads on it:
 *  - the listener posts MPI_Recv of one int from its right neighbour, tag
 *    LISTEN_TAG, and blocks there: the neighbour sends that message only
 *    once its worker has finished every iteration;
 *  - the worker runs ITERS iterations of a ring exchange (MPI_Sendrecv of
 *    two ints to the right, from the left: the sender's world rank and the
 *    iteration). When an exchange fails, the worker acknowledges the
 *    failures it knows of (MPIX_Comm_failure_ack, _get_acked) and revokes
 *    the communicator. Then MPIX_Comm_agree on "my ring finished" (a ring
 *    far from the death may finish: eager sends run ahead of the failure):
 *    only if every ring finished does the worker send the listener's
 *    message to its left neighbour; otherwise it revokes too.
 * After a death nobody sends a listener's message: each listener is
 * released by the revoke alone and must return
 * MPIX_ERR_REVOKED (its peer is alive: no other error is right), or, if its
 * right neighbour is the one that died, MPIX_ERR_PROC_FAILED or
 * MPIX_ERR_REVOKED. The main thread joins both and shrinks the
 * communicator, then runs the two threads once more on the shrunk one (3
 * iterations; every listener must get its neighbour's message) and sums the
 * survivors' world ranks with MPI_Allreduce.
 *
 * Checks at every survivor: MPI_THREAD_MULTIPLE was provided; each ring
 * message comes from the left neighbour and holds the iteration; a failed
 * exchange failed with MPIX_ERR_PROC_FAILED or MPIX_ERR_REVOKED; the
 * listener's result as above (a value only without a failure, and then its
 * neighbour's world rank); no process acknowledged as failed is in the
 * shrunk communicator; on the shrunk one, both threads succeed and the
 * listener gets its new right neighbour's world rank; the sum is the shrunk
 * communicator's members'. It prints listener (error class of the blocked
 * receive), worker (error class that ended the ring), all_done (what the
 * agreement said), acked, survivors=N and sum=S.
 *
 * Kill points: "iter=K" at the start of the worker's iteration K (K in
 * 0..ITERS-1).
 *
 * usage: thread_recv_revoke [ITERS]     (default 10)
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "ftcheck.h"

#define LISTEN_TAG 99

struct threads {
    MPI_Comm comm;
    int iters;
    int first_iter;          /* for the kill point names: 0, then ITERS on the shrunk communicator */
    atomic_int posted;       /* the listener is about to call MPI_Recv */
    /* the listener's result */
    int listen_rc, listen_value;
    /* the worker's result: its ring, then the agreement on whether every ring finished */
    int work_rc, acked, agree_rc, all_done;
    MPI_Group acked_group;
    const char *why;
};

static void *listener(void *arg)
{
    struct threads *t = arg;
    int rank, size;
    MPI_Comm_rank(t->comm, &rank);
    MPI_Comm_size(t->comm, &size);
    t->listen_value = -1;
    atomic_store(&t->posted, 1);
    t->listen_rc = MPI_Recv(&t->listen_value, 1, MPI_INT, (rank + 1) % size, LISTEN_TAG, t->comm,
                            MPI_STATUS_IGNORE);
    return NULL;
}

static void *worker(void *arg)
{
    struct threads *t = arg;
    int me = ftcheck_rank(), rank, size;
    MPI_Comm_rank(t->comm, &rank);
    MPI_Comm_size(t->comm, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size, left_world = ftcheck_world_rank(t->comm, left);
    /* start the ring once the listener is (nearly) inside its receive */
    struct timespec pause = {0, 1000000};
    while (!atomic_load(&t->posted)) nanosleep(&pause, NULL);
    nanosleep(&pause, NULL);
    t->work_rc = MPI_SUCCESS;
    t->acked_group = MPI_GROUP_EMPTY;
    for (int k = 0; k < t->iters; k++) {
        ftslide_killpointf(me, "iter=%d", t->first_iter + k);
        int out[2] = {me, k}, in[2] = {-1, -1};
        t->work_rc = MPI_Sendrecv(out, 2, MPI_INT, right, k, in, 2, MPI_INT, left, k, t->comm, MPI_STATUS_IGNORE);
        if (t->work_rc != MPI_SUCCESS) break;
        if ((in[0] != left_world || in[1] != k) && t->why == NULL)
            t->why = "a ring message not from the left neighbour";
    }
    if (t->work_rc != MPI_SUCCESS) {
        MPIX_Comm_failure_ack(t->comm);
        MPIX_Comm_failure_get_acked(t->comm, &t->acked_group);
        MPI_Group_size(t->acked_group, &t->acked);
        MPIX_Comm_revoke(t->comm);
    }
    /* A ring far enough from a death may finish (eager sends run ahead of the
     * failure): whether every ring finished is for the agreement to say. */
    int flag = t->work_rc == MPI_SUCCESS;
    t->agree_rc = MPIX_Comm_agree(t->comm, &flag);
    t->all_done = t->agree_rc == MPI_SUCCESS && flag;
    if (t->all_done) {
        /* everything worked everywhere: release the left neighbour's listener with its message */
        t->work_rc = MPI_Send(&me, 1, MPI_INT, left, LISTEN_TAG, t->comm);
    } else {
        MPIX_Comm_revoke(t->comm);
    }
    return NULL;
}

/* Both threads on COMM; returns 0 if they could not be started. */
static int run_threads(struct threads *t)
{
    pthread_t a, b;
    atomic_store(&t->posted, 0);
    if (pthread_create(&a, NULL, listener, t) != 0) return 0;
    if (pthread_create(&b, NULL, worker, t) != 0) {
        MPIX_Comm_revoke(t->comm); /* releases the listener */
        pthread_join(a, NULL);
        return 0;
    }
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    return 1;
}

static int error_class(int rc)
{
    int eclass = rc;
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &eclass);
    return eclass;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    int iters = argc > 1 ? atoi(argv[1]) : 10;
    if (iters < 1) iters = 1;
    int me = ftcheck_rank();
    const char *why = provided == MPI_THREAD_MULTIPLE ? NULL : "MPI_THREAD_MULTIPLE not provided";
    if (why != NULL) {
        ftcheck_outcome(why);
        MPI_Finalize();
        return 0;
    }

    struct threads first = {.comm = ftcheck_dup_world(), .iters = iters, .first_iter = 0};
    if (!run_threads(&first)) why = "could not start the threads";
    int right_world;
    {
        int rank, size;
        MPI_Comm_rank(first.comm, &rank);
        MPI_Comm_size(first.comm, &size);
        right_world = ftcheck_world_rank(first.comm, (rank + 1) % size);
    }
    int work_class = error_class(first.work_rc), listen_class = error_class(first.listen_rc);
    FTCHECK_RC("worker", first.work_rc);
    FTCHECK_RC("listener", first.listen_rc);
    FTCHECK("acked", "%d", first.acked);
    FTCHECK("all_done", "%d", first.all_done);
    int agree_class = error_class(first.agree_rc);
    if (why == NULL && agree_class != MPI_SUCCESS && agree_class != MPIX_ERR_PROC_FAILED)
        why = "the agreement failed with an error that is not a failure";
    if (why == NULL) why = first.why;
    if (why == NULL && work_class != MPI_SUCCESS && work_class != MPIX_ERR_PROC_FAILED &&
        work_class != MPIX_ERR_REVOKED)
        why = "the ring failed with an error that is not a failure";

    /* shrink, whether or not anything failed: without a failure it is a copy */
    MPI_Comm shrunk;
    int rc = MPIX_Comm_shrink(first.comm, &shrunk);
    if (rc != MPI_SUCCESS) {
        FTCHECK_RC("shrink", rc);
        ftcheck_outcome(why != NULL ? why : "the shrink failed");
        MPI_Finalize();
        return 0;
    }
    MPI_Comm_set_errhandler(shrunk, MPI_ERRORS_RETURN);

    /* the listener's verdict, now that the shrunk communicator says whether its peer lived */
    MPI_Group world_group, shrunk_group;
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    MPI_Comm_group(shrunk, &shrunk_group);
    int peer_alive;
    MPI_Group_translate_ranks(world_group, 1, &right_world, shrunk_group, &peer_alive);
    peer_alive = peer_alive != MPI_UNDEFINED;
    if (why == NULL) {
        if (first.all_done) {
            if (listen_class != MPI_SUCCESS) why = "every ring finished, yet the listener got no message";
            else if (first.listen_value != right_world) why = "the listener got a message not from its right neighbour";
        } else if (listen_class == MPI_SUCCESS) {
            why = "the listener got a message although a ring failed";
        } else if (peer_alive && listen_class != MPIX_ERR_REVOKED) {
            why = "the blocked receive from a live peer did not end with MPIX_ERR_REVOKED";
        } else if (!peer_alive && listen_class != MPIX_ERR_REVOKED && listen_class != MPIX_ERR_PROC_FAILED) {
            why = "the blocked receive from the dead peer ended with an error that is not a failure";
        }
    }
    /* no process acknowledged as failed may be in the shrunk communicator */
    int nacked;
    MPI_Group_size(first.acked_group, &nacked);
    for (int i = 0; i < nacked && why == NULL; i++) {
        int there;
        MPI_Group_translate_ranks(first.acked_group, 1, &i, shrunk_group, &there);
        if (there != MPI_UNDEFINED) why = "a process acknowledged as failed is in the shrunk communicator";
    }
    if (first.acked_group != MPI_GROUP_EMPTY) MPI_Group_free(&first.acked_group);
    MPI_Group_free(&world_group);
    MPI_Group_free(&shrunk_group);
    MPI_Comm_free(&first.comm);

    /* the two threads again, on the shrunk communicator: no failure there */
    struct threads again = {.comm = shrunk, .iters = 3, .first_iter = iters};
    if (!run_threads(&again) && why == NULL) why = "could not start the threads again";
    int rank, size;
    MPI_Comm_rank(shrunk, &rank);
    MPI_Comm_size(shrunk, &size);
    if (why == NULL) why = again.why;
    if (why == NULL && (again.work_rc != MPI_SUCCESS || !again.all_done || again.listen_rc != MPI_SUCCESS)) {
        FTCHECK_RC("again_worker", again.work_rc);
        FTCHECK_RC("again_listener", again.listen_rc);
        FTCHECK_RC("again_agree", again.agree_rc);
        FTCHECK("again_all_done", "%d", again.all_done);
        why = "the threads failed on the shrunk communicator";
    }
    if (why == NULL && again.listen_value != ftcheck_world_rank(shrunk, (rank + 1) % size))
        why = "on the shrunk communicator the listener got a message not from its right neighbour";
    if (again.acked_group != MPI_GROUP_EMPTY) MPI_Group_free(&again.acked_group);

    long long mine = me, sum = -1, expect = 0;
    for (int i = 0; i < size; i++) expect += ftcheck_world_rank(shrunk, i);
    rc = MPI_Allreduce(&mine, &sum, 1, MPI_LONG_LONG, MPI_SUM, shrunk);
    if (why == NULL && rc != MPI_SUCCESS) why = "the Allreduce on the shrunk communicator failed";
    if (why == NULL && sum != expect) why = "the sum on the shrunk communicator is not its members'";
    FTCHECK("survivors", "%d", size);
    FTCHECK("sum", "%lld", sum);
    ftcheck_outcome(why);
    MPI_Comm_free(&shrunk);
    MPI_Finalize();
    return 0;
}
