/*
 * ftslide-notify: tell a running job, as a PMIx tool connected to its
 * mpirun/prterun, that the job manager declared a process or a node dead.
 *
 *     ftslide-notify URI rank R [NSPACE]
 *     ftslide-notify URI node NAME[,NAME...]
 *
 * URI is the PMIx server URI of the job's mpirun/prterun (the first line of
 * its rendezvous file pmix.<host>.tool.<pid>; `ftslide notify` finds it).
 *
 *   rank: raise PMIX_ERR_PROC_ABORTED_BY_SIG for process R of the job, with
 *         the job as custom range: the event PRRTE itself sends when a
 *         process dies, so ULFM marks R failed at once. R itself is not
 *         killed. NSPACE is needed only when the server runs several jobs.
 *   node: PMIx_Job_control with the directive "prte.ftslide.nodedown" = the
 *         node's names (name, address, ...). Our PRRTE patch prrte/08 makes the
 *         HNP handle it as the loss of that node's daemon. (A tool's event does
 *         not reach PRRTE itself; a job-control request does.)
 *
 * Exit status 0 when the server accepted the request, 2 on bad input or an
 * unknown job, rank or node, 1 on any other failure; errors are one line on
 * stderr.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

#include <pmix_tool.h>

static int fail(int status, const char *what, const char *detail)
{
    fprintf(stderr, "ftslide-notify: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    return status;
}

static int parse_uint(const char *text, unsigned long max, unsigned long *out)
{
    char *end;
    errno = 0;
    unsigned long value = strtoul(text, &end, 10);
    if (errno || end == text || *end || text[0] == '-' || value > max) {
        return -1;
    }
    *out = value;
    return 0;
}

/* The application namespaces of the server's jobs (all but the DVM's "...@0"),
 * comma separated, into `out`. Returns their number, -1 on error. */
static int application_namespaces(char *out, size_t size)
{
    pmix_query_t query;
    pmix_info_t *results = NULL;
    size_t nresults = 0;
    int count = 0;

    pmix_status_t rc;
    PMIX_QUERY_CONSTRUCT(&query);
    PMIX_ARGV_APPEND(rc, query.keys, PMIX_QUERY_NAMESPACES);
    if (PMIX_SUCCESS != rc) {
        return -1;
    }
    if (PMIX_SUCCESS != PMIx_Query_info(&query, 1, &results, &nresults) || 0 == nresults ||
        PMIX_STRING != results[0].value.type || NULL == results[0].value.data.string) {
        PMIX_QUERY_DESTRUCT(&query);
        return -1;
    }
    out[0] = '\0';
    char *list = strdup(results[0].value.data.string), *save = NULL;
    for (char *ns = strtok_r(list, ",", &save); ns; ns = strtok_r(NULL, ",", &save)) {
        size_t len = strlen(ns);
        if (len >= 2 && 0 == strcmp(ns + len - 2, "@0")) {
            continue;
        }
        if (strlen(out) + len + 2 > size) {
            break;
        }
        if (count++) {
            strcat(out, ",");
        }
        strcat(out, ns);
    }
    free(list);
    PMIX_INFO_FREE(results, nresults);
    PMIX_QUERY_DESTRUCT(&query);
    return count;
}

/* A job-level value of `nspace` (PMIX_JOB_SIZE, PMIX_NODE_LIST, ...). */
static pmix_status_t job_value(const char *nspace, const char *key, pmix_value_t **value)
{
    pmix_proc_t job;
    PMIX_LOAD_PROCID(&job, nspace, PMIX_RANK_WILDCARD);
    return PMIx_Get(&job, key, NULL, 0, value);
}

static int any_name_in_list(const char *names, const char *list)
{
    char *copy = strdup(names), *save = NULL;
    int found = 0;
    for (char *name = strtok_r(copy, ",", &save); name && !found; name = strtok_r(NULL, ",", &save)) {
        char *items = strdup(list), *isave = NULL;
        for (char *item = strtok_r(items, ",", &isave); item; item = strtok_r(NULL, ",", &isave)) {
            if (0 == strcmp(item, name)) {
                found = 1;
                break;
            }
        }
        free(items);
    }
    free(copy);
    return found;
}

static void notified(pmix_status_t status, void *cbdata)
{
    pmix_status_t *result = (pmix_status_t *) cbdata;
    *result = status;
}

static int notify(pmix_status_t code, pmix_data_range_t range, pmix_info_t *info, size_t ninfo)
{
    volatile pmix_status_t result = PMIX_ERR_TIMEOUT + 1000;
    pmix_status_t rc = PMIx_Notify_event(code, NULL, range, info, ninfo, notified, (void *) &result);
    if (PMIX_OPERATION_SUCCEEDED == rc) {
        return 0;
    }
    if (PMIX_SUCCESS != rc) {
        return fail(1, "the server refused the event", PMIx_Error_string(rc));
    }
    for (int i = 0; i < 10000 && result == PMIX_ERR_TIMEOUT + 1000; i++) {
        struct timespec pause = {0, 1000000};
        nanosleep(&pause, NULL);
    }
    if (result == PMIX_ERR_TIMEOUT + 1000) {
        return fail(1, "no answer from the server within 10 s", NULL);
    }
    if (PMIX_SUCCESS != result && PMIX_OPERATION_SUCCEEDED != result) {
        return fail(1, "the server refused the event", PMIx_Error_string(result));
    }
    return 0;
}

/* PMIx_Job_control with our patch's node-down directive; the HNP answers
 * PMIX_ERR_NOT_FOUND for a name it does not know and PMIX_ERR_BAD_PARAM for
 * its own node. */
static int declare_node_dead(const char *names)
{
    pmix_info_t directive;
    pmix_info_t *results = NULL;
    size_t nresults = 0;
    pmix_status_t rc;

    PMIX_INFO_LOAD(&directive, "prte.ftslide.nodedown", names, PMIX_STRING);
    rc = PMIx_Job_control(NULL, 0, &directive, 1, &results, &nresults);
    PMIX_INFO_DESTRUCT(&directive);
    if (NULL != results) {
        PMIX_INFO_FREE(results, nresults);
    }
    if (PMIX_SUCCESS == rc || PMIX_OPERATION_SUCCEEDED == rc) {
        printf("%s\n", names);
        return 0;
    }
    if (PMIX_ERR_NOT_FOUND == rc) {
        return fail(2, "the job runs on no such node", names);
    }
    if (PMIX_ERR_BAD_PARAM == rc) {
        return fail(2, "that node runs mpirun itself: its loss ends the job", names);
    }
    return fail(1, "the server refused the request", PMIx_Error_string(rc));
}

int main(int argc, char **argv)
{
    unsigned long rank = 0;
    pmix_proc_t me;
    pmix_info_t init[2];
    char namespaces[4096];
    const char *nspace = NULL;
    int status;

    int by_node = argc == 4 && 0 == strcmp(argv[2], "node") && argv[3][0];
    if (!by_node && (argc < 4 || argc > 5 || !argv[1][0] || 0 != strcmp(argv[2], "rank") ||
                     parse_uint(argv[3], UINT32_MAX - 16, &rank))) {
        return fail(2, "usage: ftslide-notify URI rank R [NSPACE] | URI node NAME[,NAME...]", NULL);
    }

    PMIX_INFO_LOAD(&init[0], PMIX_SERVER_URI, argv[1], PMIX_STRING);
    PMIX_INFO_LOAD(&init[1], PMIX_TOOL_DO_NOT_CONNECT, NULL, PMIX_BOOL);
    init[1].value.data.flag = false;
    pmix_status_t rc = PMIx_tool_init(&me, init, 2);
    if (PMIX_SUCCESS != rc) {
        char detail[128];
        snprintf(detail, sizeof detail, "%s: %s", argv[1], PMIx_Error_string(rc));
        return fail(2, "cannot connect to the job's PMIx server", detail);
    }

    if (by_node) {
        status = declare_node_dead(argv[3]);
        goto done;
    }

    int napps = application_namespaces(namespaces, sizeof namespaces);
    if (argc == 5) {
        nspace = argv[4];
        if (napps < 0 || !any_name_in_list(nspace, namespaces)) {
            status = fail(2, "the server runs no such job", nspace);
            goto done;
        }
    } else if (napps == 1) {
        nspace = namespaces;
    } else {
        status = fail(2, napps < 1 ? "the server runs no application job"
                                   : "the server runs several jobs; name one", napps < 1 ? NULL : namespaces);
        goto done;
    }

    {
        pmix_value_t *size = NULL;
        if (PMIX_SUCCESS != job_value(nspace, PMIX_JOB_SIZE, &size)) {
            status = fail(1, "cannot read the job's size", nspace);
            goto done;
        }
        uint32_t nprocs = size->data.uint32;
        PMIX_VALUE_RELEASE(size);
        if (rank >= nprocs) {
            char detail[64];
            snprintf(detail, sizeof detail, "rank %lu (ranks are 0..%u)", rank, nprocs - 1);
            status = fail(2, "the job has no such process", detail);
            goto done;
        }
        pmix_proc_t affected, everyone;
        pmix_info_t info[2];
        PMIX_LOAD_PROCID(&affected, nspace, (pmix_rank_t) rank);
        PMIX_LOAD_PROCID(&everyone, nspace, PMIX_RANK_WILDCARD);
        PMIX_INFO_LOAD(&info[0], PMIX_EVENT_AFFECTED_PROC, &affected, PMIX_PROC);
        PMIX_INFO_LOAD(&info[1], PMIX_EVENT_CUSTOM_RANGE, &everyone, PMIX_PROC);
        status = notify(PMIX_ERR_PROC_ABORTED_BY_SIG, PMIX_RANGE_CUSTOM, info, 2);
        PMIX_INFO_DESTRUCT(&info[0]);
        PMIX_INFO_DESTRUCT(&info[1]);
    }
    if (0 == status) {
        printf("%s\n", nspace);
    }

done:
    PMIx_tool_finalize();
    return status;
}
