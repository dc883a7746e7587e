/*
 * Master/worker with MPI_ANY_SOURCE: the master (rank 0) hands out NTASKS
 * tasks and collects results with a receive from MPI_ANY_SOURCE; workers ask
 * for nothing, they take a task, compute, send the result back and wait for
 * the next one. When a worker dies, the master's pending ANY_SOURCE receive
 * reports MPIX_ERR_PROC_FAILED_PENDING: it acknowledges the failures
 * (MPIX_Comm_failure_ack), reads who failed (MPIX_Comm_failure_get_acked),
 * hands the dead workers' tasks to others and waits on the same request
 * again. Without workers left it computes the rest itself. At the end it
 * tells every live worker to stop.
 *
 * Checks (master): every task's result is right and counted once; the sum of
 * results equals the sum the master computes itself. Workers check that
 * every task they got was in range. Only the master prints survivors=N (the
 * workers it saw alive at the end, plus itself).
 *
 * Kill points: "task=K" at a worker, right after it received its K-th task
 * (K from 1) and before it answers, so the master loses that task. The master
 * is not a victim (its death ends the computation in this pattern).
 *
 * usage: master_worker [NTASKS]     (default 60)
 */
#include <stdint.h>
#include <stdlib.h>

#include "ftcheck.h"

#define TAG_TASK 1
#define TAG_RESULT 2
#define TAG_STOP 3

static int64_t work(int64_t task) { return task * task + 7; }

/* Ranks of comm in the acknowledged failed group, marked in dead[]. */
static void mark_acked(MPI_Comm comm, int *dead, int size)
{
    MPI_Group acked, group;
    int n;
    MPIX_Comm_failure_get_acked(comm, &acked);
    MPI_Group_size(acked, &n);
    MPI_Comm_group(comm, &group);
    int *in = malloc(sizeof(int) * (size_t)(n + 1)), *out = malloc(sizeof(int) * (size_t)(n + 1));
    for (int i = 0; i < n; i++) in[i] = i;
    MPI_Group_translate_ranks(acked, n, in, group, out);
    for (int i = 0; i < n; i++) {
        if (out[i] >= 0 && out[i] < size) dead[out[i]] = 1;
    }
    free(in);
    free(out);
    MPI_Group_free(&acked);
    MPI_Group_free(&group);
}

static const char *master(MPI_Comm comm, int size, int ntasks)
{
    int *dead = calloc((size_t)size, sizeof(int));
    int *assigned = malloc(sizeof(int) * (size_t)size); /* task a worker holds, or -1 */
    int *queue = malloc(sizeof(int) * (size_t)(ntasks + size)), qhead = 0, qtail = 0;
    char *done = calloc((size_t)ntasks, 1);
    int *was_dead = malloc(sizeof(int) * (size_t)size);
    int ndone = 0;
    int64_t sum = 0, expect = 0, result[2];
    const char *why = NULL;
    for (int t = 0; t < ntasks; t++) {
        queue[qtail++] = t;
        expect += work(t);
    }
    for (int w = 0; w < size; w++) assigned[w] = -1;

    /* hand a task to worker w if one is queued; a send that fails means w is dead */
    for (int w = 1; w < size; w++) {
        int64_t task = queue[qhead];
        if (MPI_Send(&task, 1, MPI_INT64_T, w, TAG_TASK, comm) == MPI_SUCCESS) {
            assigned[w] = queue[qhead++];
        } else {
            dead[w] = 1;
        }
    }
    MPI_Request req;
    MPI_Status st;
    MPI_Irecv(result, 2, MPI_INT64_T, MPI_ANY_SOURCE, TAG_RESULT, comm, &req);
    while (ndone < ntasks) {
        int busy = 0;
        for (int w = 1; w < size; w++) busy += !dead[w] && assigned[w] >= 0;
        if (busy == 0) { /* nobody left to wait for: do the queue here */
            while (qhead < qtail) {
                int t = queue[qhead++];
                if (!done[t]) {
                    done[t] = 1;
                    ndone++;
                    sum += work(t);
                }
            }
            break;
        }
        int rc = MPI_Wait(&req, &st);
        int eclass = MPI_SUCCESS;
        if (rc != MPI_SUCCESS) MPI_Error_class(rc, &eclass);
        if (eclass == MPIX_ERR_PROC_FAILED_PENDING || eclass == MPIX_ERR_PROC_FAILED) {
            MPIX_Comm_failure_ack(comm);
            for (int w = 0; w < size; w++) was_dead[w] = dead[w];
            mark_acked(comm, dead, size);
            for (int w = 1; w < size; w++) {
                if (dead[w] && !was_dead[w] && assigned[w] >= 0) {
                    queue[qtail++] = assigned[w]; /* its task goes to someone else */
                    assigned[w] = -1;
                }
            }
            if (eclass == MPIX_ERR_PROC_FAILED) { /* the request is gone: post a new one */
                MPI_Irecv(result, 2, MPI_INT64_T, MPI_ANY_SOURCE, TAG_RESULT, comm, &req);
            }
            /* idle live workers take requeued tasks */
            for (int w = 1; w < size && qhead < qtail; w++) {
                if (!dead[w] && assigned[w] < 0) {
                    int64_t task = queue[qhead];
                    if (MPI_Send(&task, 1, MPI_INT64_T, w, TAG_TASK, comm) == MPI_SUCCESS) {
                        assigned[w] = queue[qhead++];
                    } else {
                        dead[w] = 1;
                    }
                }
            }
            continue;
        }
        if (rc != MPI_SUCCESS) {
            why = "unexpected error in the ANY_SOURCE wait";
            break;
        }
        int w = st.MPI_SOURCE;
        int t = (int)result[0];
        if (t < 0 || t >= ntasks || assigned[w] != t || result[1] != work(t)) {
            why = "wrong or unexpected result";
        } else if (!done[t]) {
            done[t] = 1;
            ndone++;
            sum += result[1];
        }
        assigned[w] = -1;
        if (qhead < qtail) {
            int64_t task = queue[qhead];
            if (MPI_Send(&task, 1, MPI_INT64_T, w, TAG_TASK, comm) == MPI_SUCCESS) {
                assigned[w] = queue[qhead++];
            } else {
                dead[w] = 1;
            }
        }
        if (ndone < ntasks) MPI_Irecv(result, 2, MPI_INT64_T, MPI_ANY_SOURCE, TAG_RESULT, comm, &req);
    }
    if (ndone >= ntasks && req != MPI_REQUEST_NULL) {
        /* nothing more to receive: cancel the posted receive */
        int flag = 0;
        MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
        if (!flag) {
            MPI_Cancel(&req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        }
    }
    int alive = 1;
    int64_t stop = -1;
    for (int w = 1; w < size; w++) {
        if (!dead[w] && MPI_Send(&stop, 1, MPI_INT64_T, w, TAG_STOP, comm) == MPI_SUCCESS) alive++;
    }
    if (why == NULL && (ndone != ntasks || sum != expect)) why = "the results do not add up";
    FTCHECK("tasks_done", "%d", ndone);
    FTCHECK("sum", "%lld", (long long)sum);
    FTCHECK("survivors", "%d", alive);
    free(dead);
    free(was_dead);
    free(assigned);
    free(queue);
    free(done);
    return why;
}

static const char *worker(MPI_Comm comm, int rank, int ntasks)
{
    int got = 0;
    for (;;) {
        int64_t task, answer[2];
        MPI_Status st;
        int rc = MPI_Recv(&task, 1, MPI_INT64_T, 0, MPI_ANY_TAG, comm, &st);
        if (rc != MPI_SUCCESS) return "lost the master";
        if (st.MPI_TAG == TAG_STOP) break;
        got++;
        ftslide_killpointf(rank, "task=%d", got);
        if (task < 0 || task >= ntasks) return "task out of range";
        answer[0] = task;
        answer[1] = work(task);
        if (MPI_Send(answer, 2, MPI_INT64_T, 0, TAG_RESULT, comm) != MPI_SUCCESS) return "lost the master";
    }
    FTCHECK("tasks_taken", "%d", got);
    return NULL;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int ntasks = argc > 1 ? atoi(argv[1]) : 60;
    int rank, size;
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    const char *why = rank == 0 ? master(comm, size, ntasks) : worker(comm, rank, ntasks);
    ftcheck_outcome(why);
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return 0;
}
