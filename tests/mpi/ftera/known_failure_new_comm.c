/*
 * A communicator created here after one of its members was reported dead here
 * must still count that failure (ompi-ulfm/patches/ompi/07). np 3.
 *
 * Rank 2 dies at one of its own agreement messages inside MPIX_Comm_shrink
 * (FTSLIDE_KILL=2@ftera_sent_K), after the shrink's failed set was decided
 * without it: the shrunk communicator s holds rank 2, and ranks 0 and 1 knew it
 * dead before s existed (a later agreement of the same shrink waited for it).
 * Ranks 0 and 1 report:
 *   shrink, members         the shrink's return and s's members (world ranks)
 *   any_source              an MPI_ANY_SOURCE receive on s that nobody matches:
 *                           MPIX_ERR_PROC_FAILED_PENDING expected
 *   ibarrier                an MPI_Ibarrier on s, posted beside it: an error
 *                           (MPIX_ERR_PROC_FAILED) expected
 * each within WAIT_S seconds, else TIMEOUT; then, once both have looked (an
 * agreement on c: a revoke reaching a survivor that has not tested its
 * requests yet turns them into MPIX_ERR_REVOKED, which takes precedence), s is
 * revoked, which ends whatever is still pending.
 */
#define _POSIX_C_SOURCE 200809L
#include <time.h>

#include "ftcheck.h"

#define WAIT_S 10.0

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* Test req until it completes or fails, at most WAIT_S seconds; "TIMEOUT"
 * leaves it pending. */
static const char *wait_bounded(MPI_Request *req)
{
    double end = now_s() + WAIT_S;
    while (now_s() < end) {
        int done = 0;
        int rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (done || rc != MPI_SUCCESS) {
            return ftcheck_class(rc);
        }
    }
    return "TIMEOUT";
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm c = ftcheck_dup_world(), s;
    FTCHECK_RC("shrink", MPIX_Comm_shrink(c, &s));
    MPI_Comm_set_errhandler(s, MPI_ERRORS_RETURN);
    MPI_Group group, world_group;
    int size;
    MPI_Comm_size(s, &size);
    MPI_Comm_group(s, &group);
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    char members[64] = "";
    for (int r = 0, len = 0; r < size && len < 60; r++) {
        int w;
        MPI_Group_translate_ranks(group, 1, &r, world_group, &w);
        len += snprintf(members + len, sizeof members - (size_t) len, r ? ",%d" : "%d", w);
    }
    FTCHECK("members", "%s", members);
    MPI_Group_free(&group);
    MPI_Group_free(&world_group);

    int value;
    MPI_Request recv, barrier;
    MPI_Irecv(&value, 1, MPI_INT, MPI_ANY_SOURCE, 5, s, &recv);
    MPI_Ibarrier(s, &barrier);
    const char *any_source = wait_bounded(&recv), *ibarrier = wait_bounded(&barrier);
    FTCHECK("any_source", "%s", any_source);
    FTCHECK("ibarrier", "%s", ibarrier);
    /* get out, once the other survivor has looked too: a revoke ends whatever
     * is still pending */
    int flag = 1;
    MPIX_Comm_agree(c, &flag);
    MPIX_Comm_revoke(s);
    MPI_Wait(&recv, MPI_STATUS_IGNORE);
    MPI_Wait(&barrier, MPI_STATUS_IGNORE);

    MPI_Comm_free(&s);
    MPI_Comm_free(&c);
    FTCHECK("finished", "%d", 1);
    MPI_Finalize();
    return 0;
}
