/*
 * An error handler that acknowledges and carries on: no revoke, no shrink
 * while the work runs.
 *
 * A user error handler (MPI_Comm_create_errhandler) sits on a dup of
 * MPI_COMM_WORLD. When an MPI call on it reports a process failure, the
 * handler acknowledges every failure known so far (MPIX_Comm_failure_ack),
 * reads the acknowledged group (MPIX_Comm_failure_get_acked) and marks those
 * ranks dead in a table the program keeps; then the call returns its error
 * code and the program goes on.
 *
 * The work is a ring of the ranks not known dead: in iteration K every rank
 * sends (rank, K, a payload) to the next live rank and receives from the
 * previous live one, tag K. The send is synchronous (MPI_Issend) although the
 * message is small: a standard send of an eager-size message completes at
 * once even when its receiver is dead, so the sender would never learn that
 * the message was lost, while the receiver, having moved on to the sender,
 * would wait for it for ever. With a synchronous send, completion means the
 * receiver matched it. When the receive fails, the rank recomputes its left
 * neighbour from the table and receives again from it; when the send fails,
 * it recomputes its right neighbour and sends again; the half that
 * succeeded is not redone. Since a victim dies at the start of an iteration,
 * its right neighbour then expects message K from the victim's left
 * neighbour, whose synchronous send of K to the victim can only fail.
 *
 * At the end the survivors shrink the communicator (no revoke was ever
 * needed) and check, on the shrunk communicator, what they exchanged.
 *
 * Checks at every survivor: each message received holds the rank the
 * receiver believed was its left neighbour when it posted the receive, the
 * iteration and the payload that rank computes for it; every error the
 * handler saw was a process failure; after the shrink (an MPI_Allgather of
 * the send and receive logs) for every iteration, a survivor that received
 * from survivor S is the rank S's send went to, and the rank a survivor's
 * send went to, if it survived, received that message from it; the shrunk
 * communicator keeps world order. It prints survivors=N, which the harness
 * compares with the kills that landed, and sum=S (sum of the survivors'
 * world ranks).
 *
 * Keys: handler_calls, acked (failures this rank acknowledged), redone (sends
 * and receives posted again), survivors, sum, outcome (why).
 *
 * Kill points: "iter=K" at the start of iteration K (K in 0..ITERS-1), at
 * every rank. Any rank may die, and any number as long as two remain.
 *
 * usage: errhandler_ack [ITERS]     (default 40)
 */
#include <stdlib.h>

#include "ftcheck.h"

/* What the error handler learns, shared with the main loop. */
static int g_size;
static char *g_dead;       /* g_dead[r]: rank r is acknowledged failed */
static int g_acked;        /* how many failures are acknowledged */
static int g_calls;        /* how many times the handler ran */
static const char *g_why;  /* the first thing found wrong */

static void on_error(MPI_Comm *comm, int *code, ...)
{
    int eclass;
    MPI_Error_class(*code, &eclass);
    g_calls++;
    if (eclass != MPIX_ERR_PROC_FAILED && eclass != MPIX_ERR_PROC_FAILED_PENDING) {
        if (g_why == NULL) g_why = "an error that is not a process failure";
        return;
    }
    MPIX_Comm_failure_ack(*comm);
    MPI_Group acked, group;
    MPIX_Comm_failure_get_acked(*comm, &acked);
    MPI_Comm_group(*comm, &group);
    int n;
    MPI_Group_size(acked, &n);
    for (int i = 0; i < n; i++) {
        int r;
        MPI_Group_translate_ranks(acked, 1, &i, group, &r);
        if (r >= 0 && r < g_size) g_dead[r] = 1;
    }
    g_acked = n;
    MPI_Group_free(&acked);
    MPI_Group_free(&group);
}

static int next_live(int rank)
{
    for (int step = 1; step < g_size; step++) {
        int r = (rank + step) % g_size;
        if (!g_dead[r]) return r;
    }
    return rank;
}

static int prev_live(int rank)
{
    for (int step = 1; step < g_size; step++) {
        int r = (rank - step + g_size) % g_size;
        if (!g_dead[r]) return r;
    }
    return rank;
}

static int payload(int rank, int iter) { return (rank + 1) * 1000 + iter * 7; }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int iters = argc > 1 ? atoi(argv[1]) : 40;
    if (iters < 1) iters = 1;
    int rank, size;
    MPI_Comm comm;
    MPI_Errhandler handler;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_create_errhandler(on_error, &handler);
    MPI_Comm_set_errhandler(comm, handler);
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    g_size = size;
    g_dead = calloc((size_t)size, 1);

    /* per iteration: the rank this one received from and the rank it sent to */
    int *got_from = malloc(sizeof(int) * (size_t)iters), *sent_to = malloc(sizeof(int) * (size_t)iters);
    for (int k = 0; k < iters; k++) got_from[k] = sent_to[k] = -1;
    int redone = 0;
    for (int iter = 0; iter < iters; iter++) {
        ftslide_killpointf(rank, "iter=%d", iter);
        int out[3] = {rank, iter, payload(rank, iter)}, in[3] = {-1, -1, -1};
        int left = prev_live(rank), right = next_live(rank);
        MPI_Request rreq, sreq;
        int rc_recv = MPI_Irecv(in, 3, MPI_INT, left, iter, comm, &rreq);
        int rc_send = MPI_Issend(out, 3, MPI_INT, right, iter, comm, &sreq);
        int received = 0, sent = 0, tries = 0;
        while (!(received && sent)) {
            if (++tries > 4 * size) { /* every try marks one more rank dead: cannot happen */
                if (g_why == NULL) g_why = "the exchange keeps failing";
                break;
            }
            if (!received) {
                if (rc_recv == MPI_SUCCESS) rc_recv = MPI_Wait(&rreq, MPI_STATUS_IGNORE);
                if (rc_recv == MPI_SUCCESS) {
                    received = 1;
                    got_from[iter] = left;
                    if (in[0] != left || in[1] != iter || in[2] != payload(left, iter)) {
                        if (g_why == NULL) g_why = "a message not from the left neighbour of that moment";
                    }
                } else { /* the handler has marked the dead: receive from the new left neighbour */
                    left = prev_live(rank);
                    redone++;
                    rc_recv = MPI_Irecv(in, 3, MPI_INT, left, iter, comm, &rreq);
                }
            }
            if (!sent) {
                if (rc_send == MPI_SUCCESS) rc_send = MPI_Wait(&sreq, MPI_STATUS_IGNORE);
                if (rc_send == MPI_SUCCESS) {
                    sent = 1;
                    sent_to[iter] = right;
                } else {
                    right = next_live(rank);
                    redone++;
                    rc_send = MPI_Issend(out, 3, MPI_INT, right, iter, comm, &sreq);
                }
            }
        }
        if (!(received && sent)) break;
    }
    FTCHECK("handler_calls", "%d", g_calls);
    FTCHECK("acked", "%d", g_acked);
    FTCHECK("redone", "%d", redone);
    const char *why = g_why;

    MPI_Comm shrunk;
    int rc = MPIX_Comm_shrink(comm, &shrunk);
    if (rc != MPI_SUCCESS) {
        FTCHECK_RC("shrink", rc);
        ftcheck_outcome(why != NULL ? why : "the shrink failed");
        MPI_Finalize();
        return 0;
    }
    MPI_Comm_set_errhandler(shrunk, MPI_ERRORS_RETURN);

    /* the survivors' world ranks, in the shrunk communicator's order */
    int nsurv;
    MPI_Comm_size(shrunk, &nsurv);
    MPI_Group world_group, shrunk_group;
    MPI_Comm_group(comm, &world_group);
    MPI_Comm_group(shrunk, &shrunk_group);
    int *members = malloc(sizeof(int) * (size_t)nsurv), *world_of = malloc(sizeof(int) * (size_t)nsurv);
    for (int i = 0; i < nsurv; i++) members[i] = i;
    MPI_Group_translate_ranks(shrunk_group, nsurv, members, world_group, world_of);
    int *slot = malloc(sizeof(int) * (size_t)size); /* world rank -> shrunk rank, or -1 */
    for (int r = 0; r < size; r++) slot[r] = -1;
    int expect_sum = 0;
    for (int i = 0; i < nsurv; i++) {
        slot[world_of[i]] = i;
        expect_sum += world_of[i];
        if (i > 0 && world_of[i] <= world_of[i - 1] && why == NULL) why = "the shrunk communicator is not in world order";
    }

    /* everyone's logs: log[i] = (got_from[0..iters), sent_to[0..iters)) of shrunk rank i */
    int *mine = malloc(sizeof(int) * 2 * (size_t)iters), *logs = malloc(sizeof(int) * 2 * (size_t)iters * (size_t)nsurv);
    for (int k = 0; k < iters; k++) {
        mine[k] = got_from[k];
        mine[iters + k] = sent_to[k];
    }
    int sum = -1;
    rc = MPI_Allgather(mine, 2 * iters, MPI_INT, logs, 2 * iters, MPI_INT, shrunk);
    if (rc == MPI_SUCCESS) rc = MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, shrunk);
    if (rc != MPI_SUCCESS) {
        if (why == NULL) why = "a collective on the shrunk communicator failed";
    } else if (why == NULL) {
        if (sum != expect_sum) why = "wrong sum on the shrunk communicator";
        for (int k = 0; k < iters && why == NULL; k++) {
            int from = got_from[k], to = sent_to[k];
            if (from < 0 || to < 0) why = "an iteration was not completed";
            else if (slot[from] >= 0 && logs[(size_t)slot[from] * 2 * (size_t)iters + (size_t)iters + (size_t)k] != rank)
                why = "a survivor's send log does not name this rank as its receiver";
            else if (slot[to] >= 0 && logs[(size_t)slot[to] * 2 * (size_t)iters + (size_t)k] != rank)
                why = "the receiver of this rank's message does not name this rank as its sender";
        }
    }
    FTCHECK("survivors", "%d", nsurv);
    FTCHECK("sum", "%d", sum);
    ftcheck_outcome(why);

    free(members);
    free(world_of);
    free(slot);
    free(mine);
    free(logs);
    free(got_from);
    free(sent_to);
    free(g_dead);
    MPI_Group_free(&world_group);
    MPI_Group_free(&shrunk_group);
    MPI_Comm_free(&shrunk);
    MPI_Comm_free(&comm);
    MPI_Errhandler_free(&handler);
    MPI_Finalize();
    return 0;
}
