/*
 * Respawn: replace the dead and keep every rank where it was.
 *
 * The work is ITERS iterations of an MPI_Allreduce of (rank + 1) * (K + 1)
 * on a dup of MPI_COMM_WORLD whose errors are returned, followed by one
 * closing MPI_Allreduce. When a call fails, the rank revokes the
 * communicator; every rank then meets the others in the repair:
 *  1. MPIX_Comm_shrink; the dead ranks are those of the old communicator
 *     that the shrunk one lacks (every survivor computes the same list);
 *  2. an MPI_Allreduce (MIN) on the shrunk communicator: the iteration to
 *     restart from is the lowest one a survivor had not finished;
 *  3. MPI_Comm_spawn of one process per dead rank, this same binary with the
 *     argument "spawned", then MPI_Intercomm_merge (survivors low, new
 *     processes high);
 *  4. an MPI_Bcast on the merged communicator tells the new processes which
 *     ranks they replace and where to restart: the I-th new process takes
 *     the I-th dead rank;
 *  5. MPI_Comm_split with key = the rank each process should hold, so the
 *     survivors keep their ranks and each new process takes its dead rank's;
 *  6. an MPI_Allreduce (MAX) of a table where each process writes its key
 *     at its new rank checks that ranks 0..np-1 are all there, in order.
 * Then everybody goes on from the restart iteration on the repaired
 * communicator; a later failure is repaired the same way.
 *
 * Checks at every process: each Allreduce gives the sum for ranks 1..np,
 * which holds only if every rank is present and contributes as the rank it
 * holds; after each repair the communicator has np processes and process R
 * holds rank R; the closing Allreduce counts the original processes
 * (survivors=N, np minus the kills that landed) and the replacements.
 *
 * Reports: a replacement's MPI_COMM_WORLD is its own spawned job, so it
 * reports as "ftcheck rank=R" with R the rank it took over (the dead
 * process's world rank), not through FTCHECK; it prints role=replacement,
 * the originals role=original. Keys: role, repairs (repairs this process
 * took part in), restarts (iterations redone, at originals), shrinks (more
 * than repairs when a shrink had to be redone), size (final
 * communicator size, np), survivors (originals in it), replacements,
 * outcome (why).
 *
 * Kill points: "iter=K" at the start of iteration K (K in 0..ITERS-1) at
 * every original process (replacements have none, so a point is never
 * reached twice by the same rank number). Any rank may die, several may, at
 * the same or different iterations. Two more, for a death in the middle of
 * a repair: "spawn=N" at the process that holds rank R (an original or an
 * earlier replacement), just before its MPI_Comm_spawn of repair N (N from
 * 1), and "spawned" at the I-th process of every spawned job (I its rank in
 * MPI_COMM_WORLD, the spawned job's own) right after its MPI_Init, before
 * it merges. Such a death is not repaired: every survivor reports the step
 * that failed and its error class (repair_failed_in, repair).
 *
 * Spawning needs room for the new processes: run with oversubscription
 * allowed on one node (PRTE_MCA_rmaps_default_mapping_policy=:oversubscribe).
 *
 * usage: respawn [ITERS]     (default 20; a replacement is started as
 *        "respawn ITERS spawned")
 */
#define _POSIX_C_SOURCE 200809L /* readlink */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ftcheck.h"

static int g_me;         /* the rank this process holds in the application */
static int g_replacement; /* 1 in a spawned process */
static int g_shrinks;     /* shrinks this process took part in */
static int g_repairs;     /* repairs this process took part in that succeeded */

/* FTCHECK, under the rank this process holds (a replacement's world rank says nothing). */
#define REPORT(key, fmt, ...)                                                    \
    do {                                                                         \
        printf("ftcheck rank=%d " key "=" fmt "\n", g_me, __VA_ARGS__);          \
        fflush(stdout);                                                          \
    } while (0)

static void outcome(const char *why)
{
    if (!g_replacement) {
        ftcheck_outcome(why);
        return;
    }
    if (why != NULL) REPORT("why", "%s", why);
    REPORT("outcome", "%s", why == NULL ? "ok" : "wrong");
}

/* After a repair: rank R must be held by the process that should hold R.
 * Everyone sees the same table, so everyone reaches the same verdict. */
static int check_ranks(MPI_Comm comm, int np, const char **why)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int *table = malloc(sizeof(int) * (size_t)np), *all = malloc(sizeof(int) * (size_t)np);
    for (int i = 0; i < np; i++) table[i] = -1;
    if (rank < np) table[rank] = g_me;
    int rc = MPI_Allreduce(table, all, np, MPI_INT, MPI_MAX, comm);
    if (rc == MPI_SUCCESS) {
        if (size != np) *why = "the repaired communicator does not have np processes";
        for (int i = 0; i < np; i++) {
            if (all[i] != i && *why == NULL) *why = "a rank is missing or out of order after the repair";
        }
    }
    free(table);
    free(all);
    return rc;
}

/* The join of the new processes and the survivors, on the merged communicator:
 * the survivors' rank 0 says where to restart and whom the new ones replace,
 * then the split puts everyone at its rank. A replacement that survives a
 * later failure joins that repair as a survivor (is_new = 0). */
static int join(MPI_Comm merged, int np, int is_new, int *info, MPI_Comm *repaired)
{
    int rc = MPI_Bcast(info, np + 2, MPI_INT, 0, merged);
    if (rc != MPI_SUCCESS) return rc;
    if (is_new) {
        int mrank, ndead = info[1];
        MPI_Comm_rank(merged, &mrank);
        int index = mrank - (np - ndead);
        if (index < 0 || index >= ndead) return MPI_ERR_OTHER;
        g_me = info[2 + index];
    }
    rc = MPI_Comm_split(merged, 0, g_me, repaired);
    if (rc == MPI_SUCCESS) MPI_Comm_set_errhandler(*repaired, MPI_ERRORS_RETURN);
    return rc;
}

/* The survivors' side of a repair. *next is this rank's next iteration on
 * entry, the agreed restart iteration on return. The shrink may keep a
 * process whose death was not known yet (two deaths close together): then
 * the restart MPI_Allreduce fails somewhere, MPIX_Comm_agree tells every
 * survivor so, and the shrunk communicator is revoked and shrunk again. Only
 * when the agreement says every member of the shrunk communicator took part
 * do the survivors spawn. A failure after that (during the spawn, merge or
 * join: no kill point is there) is reported, not repaired; the communicators
 * in use are revoked first so that nobody stays blocked in them. */
static int repair(MPI_Comm *comm, int np, int iters, int *next, const char *exe, const char **step)
{
    MPI_Comm current = *comm, shrunk, inter, merged, repaired;
    int *info = malloc(sizeof(int) * (size_t)(np + 2)), rc;
    for (int attempt = 0;; attempt++) {
        MPIX_Comm_revoke(current);
        *step = "shrink";
        g_shrinks++;
        rc = MPIX_Comm_shrink(current, &shrunk);
        if (current != *comm) MPI_Comm_free(&current);
        if (rc != MPI_SUCCESS) {
            free(info);
            return rc;
        }
        MPI_Comm_set_errhandler(shrunk, MPI_ERRORS_RETURN);
        *step = "restart_allreduce";
        rc = MPI_Allreduce(next, &info[0], 1, MPI_INT, MPI_MIN, shrunk);
        int flag = rc == MPI_SUCCESS;
        if (!flag) MPIX_Comm_revoke(shrunk);
        *step = "agree";
        rc = MPIX_Comm_agree(shrunk, &flag);
        if (rc == MPI_SUCCESS && flag) break;
        current = shrunk; /* somebody in it has died too: again */
        if (attempt >= np) {
            MPI_Comm_free(&shrunk);
            free(info);
            return rc != MPI_SUCCESS ? rc : MPI_ERR_OTHER;
        }
    }

    /* the dead: ranks of the old communicator missing from the shrunk one */
    int ndead = 0;
    MPI_Group old_group, new_group;
    MPI_Comm_group(*comm, &old_group);
    MPI_Comm_group(shrunk, &new_group);
    for (int r = 0; r < np; r++) {
        int there;
        MPI_Group_translate_ranks(old_group, 1, &r, new_group, &there);
        if (there == MPI_UNDEFINED) info[2 + ndead++] = r;
    }
    MPI_Group_free(&old_group);
    MPI_Group_free(&new_group);
    info[1] = ndead;
    if (ndead == 0) { /* revoked without a death: nothing to replace (not expected here) */
        *step = "count_dead";
        MPI_Comm_free(&shrunk);
        free(info);
        return MPI_ERR_OTHER;
    }

    char count[32];
    snprintf(count, sizeof count, "%d", iters);
    char *args[] = {count, "spawned", NULL};
    int *codes = malloc(sizeof(int) * (size_t)ndead);
    *step = "spawn";
    ftslide_killpointf(g_me, "spawn=%d", g_repairs + 1);
    rc = MPI_Comm_spawn(exe, args, ndead, MPI_INFO_NULL, 0, shrunk, &inter, codes);
    for (int i = 0; rc == MPI_SUCCESS && i < ndead; i++) {
        if (codes[i] != MPI_SUCCESS) rc = codes[i];
    }
    free(codes);
    if (rc == MPI_SUCCESS) {
        MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
        *step = "merge";
        rc = MPI_Intercomm_merge(inter, 0, &merged);
        if (rc == MPI_SUCCESS) {
            MPI_Comm_set_errhandler(merged, MPI_ERRORS_RETURN);
            *step = "join";
            rc = join(merged, np, 0, info, &repaired);
            if (rc != MPI_SUCCESS) MPIX_Comm_revoke(merged);
            MPI_Comm_free(&merged);
        } else {
            MPIX_Comm_revoke(inter);
        }
        MPI_Comm_free(&inter);
    }
    if (rc == MPI_SUCCESS) {
        *next = info[0];
        MPI_Comm_free(comm);
        *comm = repaired;
    } else {
        MPIX_Comm_revoke(shrunk);
    }
    MPI_Comm_free(&shrunk);
    free(info);
    return rc;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int iters = argc > 1 ? atoi(argv[1]) : 20;
    if (iters < 1) iters = 1;
    g_replacement = argc > 2 && strcmp(argv[2], "spawned") == 0;
    const char *why = NULL, *odd = NULL;
    int np, next = 0, restarts = 0, rc = MPI_SUCCESS;
    MPI_Comm comm;

    char exe[4096]; /* this binary, for MPI_Comm_spawn */
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len > 0) exe[len] = '\0';
    else snprintf(exe, sizeof exe, "%s", argv[0]);

    if (!g_replacement) {
        MPI_Comm_dup(MPI_COMM_WORLD, &comm);
        MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
        MPI_Comm_rank(comm, &g_me);
        MPI_Comm_size(comm, &np);
    } else {
        /* a replacement: merge with the survivors, learn its rank and where to start */
        MPI_Comm parent, merged;
        MPI_Comm_get_parent(&parent);
        if (parent == MPI_COMM_NULL) {
            fprintf(stderr, "respawn: started with \"spawned\" but has no parent\n");
            MPI_Finalize();
            return 1;
        }
        MPI_Comm_set_errhandler(parent, MPI_ERRORS_RETURN);
        g_me = -1;
        ftslide_killpoint(ftcheck_rank(), "spawned");
        rc = MPI_Intercomm_merge(parent, 1, &merged);
        if (rc == MPI_SUCCESS) {
            MPI_Comm_set_errhandler(merged, MPI_ERRORS_RETURN);
            MPI_Comm_size(merged, &np);
            int *info = malloc(sizeof(int) * (size_t)(np + 2));
            rc = join(merged, np, 1, info, &comm);
            next = info[0];
            free(info);
            MPI_Comm_free(&merged);
        }
        MPI_Comm_free(&parent);
        if (rc != MPI_SUCCESS) {
            /* nobody to report to as a rank: say it on stderr and leave */
            fprintf(stderr, "respawn: a replacement could not join (%s)\n", ftcheck_class(rc));
            MPI_Finalize();
            return 0;
        }
        REPORT("role", "%s", "replacement");
        g_repairs = 1;
        rc = check_ranks(comm, np, &why);
    }
    if (!g_replacement) FTCHECK("role", "%s", "original");

    long long expect_unit = (long long)np * (np + 1) / 2;
    int counts[2] = {0, 0}, done = 0, highest = next;
    while (!done && why == NULL) {
        if (rc == MPI_SUCCESS) {
            for (; next < iters; next++) {
                if (!g_replacement) ftslide_killpointf(g_me, "iter=%d", next);
                if (next < highest) restarts++;
                else highest = next + 1;
                long long mine = (long long)(g_me + 1) * (next + 1), sum = 0;
                rc = MPI_Allreduce(&mine, &sum, 1, MPI_LONG_LONG, MPI_SUM, comm);
                if (rc != MPI_SUCCESS) break;
                if (sum != expect_unit * (next + 1)) {
                    why = "wrong sum: a rank is missing or holds the wrong rank";
                    break;
                }
            }
        }
        if (rc == MPI_SUCCESS && why == NULL) {
            /* closing count: how many originals and replacements the communicator holds */
            int mine[2] = {!g_replacement, g_replacement};
            rc = MPI_Allreduce(mine, counts, 2, MPI_INT, MPI_SUM, comm);
            if (rc == MPI_SUCCESS) done = 1;
        }
        if (rc != MPI_SUCCESS && why == NULL) {
            int eclass;
            MPI_Error_class(rc, &eclass);
            if (eclass != MPIX_ERR_PROC_FAILED && eclass != MPIX_ERR_REVOKED &&
                eclass != MPIX_ERR_PROC_FAILED_PENDING && odd == NULL) {
                odd = "an error that is not a failure"; /* noted; the repair goes on with the others */
            }
            const char *step = "";
            rc = repair(&comm, np, iters, &next, exe, &step);
            if (rc != MPI_SUCCESS) {
                char text[MPI_MAX_ERROR_STRING];
                int tlen = 0;
                MPI_Error_string(rc, text, &tlen);
                REPORT("repair_failed_in", "%s", step);
                REPORT("repair", "%s (%s)", ftcheck_class(rc), text);
                why = "the repair failed";
                break;
            }
            g_repairs++;
            rc = check_ranks(comm, np, &why);
        }
    }
    int size;
    MPI_Comm_size(comm, &size);
    REPORT("repairs", "%d", g_repairs);
    REPORT("restarts", "%d", restarts);
    REPORT("shrinks", "%d", g_shrinks);
    REPORT("size", "%d", size);
    REPORT("survivors", "%d", counts[0]);
    REPORT("replacements", "%d", counts[1]);
    if (why == NULL) why = odd;
    if (why == NULL && counts[0] + counts[1] != np) why = "the final communicator does not hold np processes";
    outcome(why);
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return 0;
}
