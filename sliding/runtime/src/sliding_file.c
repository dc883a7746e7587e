/* The persistent level of sliding_file.h: rank files written by a background
 * thread, a manifest committed last. No MPI. */
#define _POSIX_C_SOURCE 200809L

#include "sliding_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <isa-l/crc.h> /* crc32_gzip_refl: libsliding links ISA-L for its erasure code already */

#define MANIFEST_NAME "manifest"
#define MANIFEST_FORMAT_KEY "ftslide-sliding-checkpoint"
#define MANIFEST_FORMAT 1
#define MANIFEST_MAX_BYTES 65536 /* far above any manifest this unit writes (~400 bytes) */
#define PARTIAL_SUFFIX ".partial"
#define RANK_MAGIC "SLDRANK1"
#define REASON_BYTES 512
/* Longest write(2) asked for at once: Linux moves at most about 2 GiB per call anyway. */
#define WRITE_PIECE_BYTES ((size_t)1 << 30)

struct sliding_file {
    char *dir;
    int64_t every;

    /* Shared with the writer thread, under `lock`. */
    pthread_mutex_t lock;
    pthread_cond_t changed; /* a write was handed over, ended, or the writer is told to stop */
    pthread_t writer;
    int writer_started;
    int stop;               /* free: the writer ends once idle */
    int pending;            /* a staged write the writer has not finished */
    int64_t staged_version; /* -1: nothing staged yet */
    int64_t staged_rank;
    unsigned char *staging;
    size_t staging_bytes;   /* the staged checkpoint's size */
    size_t staging_capacity;
    int write_failed;       /* the outcome of the last finished write */
    char write_reason[REASON_BYTES];
    double last_write_seconds;
    int64_t written, failed;

    /* The application thread's own. */
    char reason[REASON_BYTES];
    double last_copy_seconds, last_wait_seconds, total_wait_seconds;
    int64_t staged;
};

/* ---- small helpers ------------------------------------------------------- */

static double now_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* printf into why[0..len-1] when there is room (why may be NULL). */
static void say(char *why, size_t len, const char *format, ...) __attribute__((format(printf, 3, 4)));
static void say(char *why, size_t len, const char *format, ...)
{
    if (!why || len == 0)
        return;
    va_list args;
    va_start(args, format);
    vsnprintf(why, len, format, args);
    va_end(args);
}

/* The text of errno value `error`, thread-safe (the XSI strerror_r). */
static const char *error_text(int error, char *buf, size_t len)
{
    if (strerror_r(error, buf, len) != 0)
        snprintf(buf, len, "error %d", error);
    return buf;
}

/* say() with ": <errno text>" appended. */
#define SAY_ERRNO(why, len, error, format, ...)                                           \
    do {                                                                                  \
        char text_[128];                                                                  \
        say(why, len, format ": %s", __VA_ARGS__, error_text(error, text_, sizeof text_)); \
    } while (0)

static void put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static uint32_t get_u32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* CRC-32 of a buffer of any length (ISA-L takes a 64-bit length). */
static uint32_t crc32_of(const void *bytes, size_t n)
{
    return n ? crc32_gzip_refl(0, bytes, n) : 0;
}

/* path = dir + "/" + name, or 0 when it does not fit PATH_MAX. */
static int join(char *path, const char *dir, const char *name)
{
    int n = snprintf(path, PATH_MAX, "%s/%s", dir, name);
    return n > 0 && n < PATH_MAX;
}

/* mkdir -p: creates path and its missing parents; an existing directory is
 * fine (so is a race with another process creating it). 0, or -1 with errno. */
static int make_dirs(const char *path)
{
    char copy[PATH_MAX];
    size_t len = strlen(path);
    if (len == 0 || len >= sizeof copy) {
        errno = len ? ENAMETOOLONG : ENOENT;
        return -1;
    }
    memcpy(copy, path, len + 1);
    for (char *p = copy + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char end = *p;
        *p = '\0';
        if (mkdir(copy, 0777) != 0 && errno != EEXIST)
            return -1;
        *p = end;
        if (end == '\0')
            break;
    }
    struct stat st;
    if (stat(path, &st) != 0)
        return -1;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

/* fsync of a directory, which makes the names created or renamed in it durable. */
static int sync_dir(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    int error = errno;
    close(fd);
    errno = error;
    return rc;
}

/* Writes all of bytes[0..n-1] to fd, through short writes and EINTR. */
static int write_all(int fd, const unsigned char *bytes, size_t n)
{
    while (n > 0) {
        ssize_t done = write(fd, bytes, n < WRITE_PIECE_BYTES ? n : WRITE_PIECE_BYTES);
        if (done < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        bytes += done;
        n -= (size_t)done;
    }
    return 0;
}

/* Reads up to n bytes, fewer only at the end of the file; the count, or -1. */
static ssize_t read_all(int fd, unsigned char *bytes, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, bytes + got, n - got < WRITE_PIECE_BYTES ? n - got : WRITE_PIECE_BYTES);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

/* Writes the file `final` atomically: bytes go to `partial` (same directory),
 * which is fsync'd and renamed to `final`. The directory is not synced here.
 * 0, or -1 with the reason (the step and errno text) in why. */
static int write_atomically(const char *partial, const char *final, const unsigned char *head, size_t head_n,
                            const unsigned char *body, size_t body_n, char *why, size_t why_len)
{
    int fd = open(partial, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) {
        SAY_ERRNO(why, why_len, errno, "cannot create %s", partial);
        return -1;
    }
    const char *step = NULL, *what = partial;
    if (write_all(fd, head, head_n) != 0 || write_all(fd, body, body_n) != 0)
        step = "cannot write";
    else if (fsync(fd) != 0)
        step = "cannot fsync";
    int error = errno;
    if (close(fd) != 0 && !step) { /* NFS reports some write errors only at close */
        step = "cannot close";
        error = errno;
    }
    if (!step && rename(partial, final) != 0) {
        step = "cannot rename it to";
        what = final;
        error = errno;
    }
    if (step) {
        SAY_ERRNO(why, why_len, error, "%s %s", step, what);
        unlink(partial);
        return -1;
    }
    return 0;
}

/* Whether text can be one word of a manifest line. */
static int word_ok(const char *text)
{
    if (!text || !*text || strlen(text) > SLIDING_FILE_TEXT_MAX)
        return 0;
    for (const char *p = text; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == 0x7f)
            return 0;
    return 1;
}

static const char *block_word(const char *block)
{
    return block && *block ? block : "-";
}

static int shape_ok(const sliding_file_shape *shape, char *why, size_t why_len)
{
    if (!shape) {
        say(why, why_len, "no shape given");
        return 0;
    }
    const char *bad = !word_ok(shape->grid)                                  ? "grid"
                      : !word_ok(shape->spares)                              ? "spares"
                      : shape->block && *shape->block && !word_ok(shape->block) ? "block"
                      : shape->ranks_per_node < 1                            ? "ranks_per_node"
                      : shape->logical_ranks < 1                             ? "logical_ranks"
                                                                             : NULL;
    if (bad)
        say(why, why_len, "the shape's %s is missing, empty, holds a blank or is out of range", bad);
    return bad == NULL;
}

/* DIR/v<version> and DIR/v<version>/[.]r<rank>.bin[.partial]. */
static int version_dir(char *path, const char *dir, int64_t version)
{
    int n = snprintf(path, PATH_MAX, "%s/v%" PRId64, dir, version);
    return n > 0 && n < PATH_MAX;
}

static int rank_paths(char *final, char *partial, const char *dir, int64_t version, int64_t rank)
{
    int a = snprintf(final, PATH_MAX, "%s/v%" PRId64 "/r%" PRId64 ".bin", dir, version, rank);
    int b = snprintf(partial, PATH_MAX, "%s/v%" PRId64 "/.r%" PRId64 ".bin" PARTIAL_SUFFIX, dir, version, rank);
    return a > 0 && a < PATH_MAX && b > 0 && b < PATH_MAX;
}

/* ---- the writer ------------------------------------------------------------ */

/* Writes the staged checkpoint (the caller does not hold the lock; the staging
 * buffer is the writer's while `pending`). 0, or -1 with the reason. */
static int write_rank_file(const char *dir, int64_t version, int64_t rank, const unsigned char *bytes, size_t n,
                           char *why, size_t why_len)
{
    char vdir[PATH_MAX], final[PATH_MAX], partial[PATH_MAX];
    if (!version_dir(vdir, dir, version) || !rank_paths(final, partial, dir, version, rank)) {
        say(why, why_len, "path of rank %" PRId64 "'s file under %s is too long", rank, dir);
        return -1;
    }
    if (make_dirs(vdir) != 0) {
        SAY_ERRNO(why, why_len, errno, "cannot create %s", vdir);
        return -1;
    }
    unsigned char head[SLIDING_FILE_HEADER_BYTES] = {0};
    memcpy(head, RANK_MAGIC, 8);
    put_u64(head + 8, (uint64_t)version);
    put_u64(head + 16, (uint64_t)rank);
    put_u64(head + 24, (uint64_t)n);
    put_u32(head + 32, crc32_of(bytes, n));
    put_u32(head + 36, crc32_of(head, 36));
    if (write_atomically(partial, final, head, sizeof head, bytes, n, why, why_len) != 0)
        return -1;
    if (sync_dir(vdir) != 0) {
        SAY_ERRNO(why, why_len, errno, "cannot fsync %s", vdir);
        return -1;
    }
    return 0;
}

static void *writer_main(void *arg)
{
    sliding_file *f = arg;
    pthread_mutex_lock(&f->lock);
    for (;;) {
        while (!f->pending && !f->stop)
            pthread_cond_wait(&f->changed, &f->lock);
        if (!f->pending) /* stop, and nothing left to write */
            break;
        int64_t version = f->staged_version, rank = f->staged_rank;
        const unsigned char *bytes = f->staging;
        size_t n = f->staging_bytes;
        pthread_mutex_unlock(&f->lock);

        char reason[REASON_BYTES] = "";
        double start = now_seconds();
        int rc = write_rank_file(f->dir, version, rank, bytes, n, reason, sizeof reason);
        double seconds = now_seconds() - start;

        pthread_mutex_lock(&f->lock);
        f->write_failed = rc != 0;
        memcpy(f->write_reason, reason, sizeof reason);
        f->last_write_seconds = seconds;
        if (rc == 0)
            f->written++;
        else
            f->failed++;
        f->pending = 0;
        pthread_cond_broadcast(&f->changed);
    }
    pthread_mutex_unlock(&f->lock);
    return NULL;
}

/* Starts the writer with every signal blocked (the mask is inherited). */
static int start_writer(sliding_file *f)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&f->writer, NULL, writer_main, f);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        SAY_ERRNO(f->reason, sizeof f->reason, rc, "cannot start the checkpoint writer thread%s", "");
        return SLIDING_ERR_STATE;
    }
    f->writer_started = 1;
    return SLIDING_OK;
}

/* ---- the API --------------------------------------------------------------- */

int sliding_file_check_dir(const char *dir, char *why, size_t why_len)
{
    say(why, why_len, "%s", "");
    if (!dir || !*dir) {
        say(why, why_len, "no checkpoint directory given");
        return SLIDING_ERR_ARG;
    }
    if (make_dirs(dir) != 0) {
        SAY_ERRNO(why, why_len, errno, "cannot create %s", dir);
        return SLIDING_ERR_CHECKPOINT_DIR;
    }
    /* A probe named after the host and process: the processes of a job probe at once. */
    char host[256] = "host", name[512], probe[PATH_MAX];
    gethostname(host, sizeof host - 1);
    host[sizeof host - 1] = '\0';
    snprintf(name, sizeof name, ".probe-%s-%ld", host, (long)getpid());
    if (!join(probe, dir, name)) {
        say(why, why_len, "path of %s is too long", dir);
        return SLIDING_ERR_CHECKPOINT_DIR;
    }
    int fd = open(probe, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) {
        SAY_ERRNO(why, why_len, errno, "%s is not writable", dir);
        return SLIDING_ERR_CHECKPOINT_DIR;
    }
    int bad = write_all(fd, (const unsigned char *)"x", 1) != 0;
    int error = errno;
    if (close(fd) != 0 && !bad) {
        bad = 1;
        error = errno;
    }
    unlink(probe);
    if (bad) {
        SAY_ERRNO(why, why_len, error, "%s is not writable", dir);
        return SLIDING_ERR_CHECKPOINT_DIR;
    }
    return SLIDING_OK;
}

int sliding_file_new(const char *dir, int64_t every, sliding_file **out)
{
    if (!dir || !*dir || strlen(dir) >= PATH_MAX - 64 || every < 1 || !out)
        return SLIDING_ERR_ARG;
    sliding_file *f = calloc(1, sizeof *f);
    char *copy = f ? strdup(dir) : NULL;
    if (!copy) {
        free(f);
        return SLIDING_ERR_NOMEM;
    }
    f->dir = copy;
    f->every = every;
    f->staged_version = -1;
    pthread_mutex_init(&f->lock, NULL);
    pthread_cond_init(&f->changed, NULL);
    *out = f;
    return SLIDING_OK;
}

void sliding_file_free(sliding_file *f)
{
    if (!f)
        return;
    if (f->writer_started) {
        pthread_mutex_lock(&f->lock);
        f->stop = 1;
        pthread_cond_broadcast(&f->changed);
        pthread_mutex_unlock(&f->lock);
        pthread_join(f->writer, NULL); /* it finishes a pending write first */
    }
    pthread_cond_destroy(&f->changed);
    pthread_mutex_destroy(&f->lock);
    free(f->staging);
    free(f->dir);
    free(f);
}

int sliding_file_due(const sliding_file *f, int64_t committed_count)
{
    return f && committed_count > 0 && committed_count % f->every == 0;
}

int sliding_file_stage(sliding_file *f, int64_t version, int64_t logical_rank, const void *bytes, size_t n)
{
    if (!f || version < 0 || logical_rank < 0 || (n > 0 && !bytes))
        return SLIDING_ERR_ARG;
    f->reason[0] = '\0';
    if (!f->writer_started) {
        int rc = start_writer(f);
        if (rc != SLIDING_OK)
            return rc;
    }
    double start = now_seconds();
    pthread_mutex_lock(&f->lock);
    while (f->pending)
        pthread_cond_wait(&f->changed, &f->lock);
    pthread_mutex_unlock(&f->lock);
    double copy_start = now_seconds();

    /* The writer is idle: the staging buffer is ours until `pending` is set. */
    if (n > f->staging_capacity) {
        unsigned char *grown = malloc(n);
        if (!grown) {
            say(f->reason, sizeof f->reason, "cannot allocate a staging buffer of %zu bytes", n);
            return SLIDING_ERR_NOMEM;
        }
        free(f->staging);
        f->staging = grown;
        f->staging_capacity = n;
    }
    if (n > 0)
        memcpy(f->staging, bytes, n);
    double end = now_seconds();

    pthread_mutex_lock(&f->lock);
    f->staging_bytes = n;
    f->staged_version = version;
    f->staged_rank = logical_rank;
    f->write_failed = 0;
    f->write_reason[0] = '\0';
    f->pending = 1;
    pthread_cond_broadcast(&f->changed);
    pthread_mutex_unlock(&f->lock);

    f->last_wait_seconds = copy_start - start;
    f->total_wait_seconds += f->last_wait_seconds;
    f->last_copy_seconds = end - copy_start;
    f->staged++;
    return SLIDING_OK;
}

/* The outcome of the last staged write, under the lock; waits for it if told. */
static int outcome(sliding_file *f, int64_t *version, int *finished, int wait)
{
    if (!f)
        return SLIDING_ERR_ARG;
    pthread_mutex_lock(&f->lock);
    while (wait && f->pending)
        pthread_cond_wait(&f->changed, &f->lock);
    int over = !f->pending, failed = over && f->write_failed;
    if (failed)
        memcpy(f->reason, f->write_reason, sizeof f->reason);
    if (version)
        *version = f->staged_version;
    pthread_mutex_unlock(&f->lock);
    if (finished)
        *finished = over;
    if (!failed)
        f->reason[0] = '\0';
    return failed ? SLIDING_ERR_CHECKPOINT_DIR : SLIDING_OK;
}

int sliding_file_done(sliding_file *f, int64_t *version, int *finished)
{
    return outcome(f, version, finished, 0);
}

int sliding_file_wait(sliding_file *f, int64_t *version)
{
    return outcome(f, version, NULL, 1);
}

const char *sliding_file_error(const sliding_file *f)
{
    return f ? f->reason : "no persistent level";
}

void sliding_file_stats_get(sliding_file *f, sliding_file_stats *out)
{
    if (!f || !out)
        return;
    out->last_copy_seconds = f->last_copy_seconds;
    out->last_wait_seconds = f->last_wait_seconds;
    out->total_wait_seconds = f->total_wait_seconds;
    out->staged = f->staged;
    pthread_mutex_lock(&f->lock);
    out->last_write_seconds = f->last_write_seconds;
    out->written = f->written;
    out->failed = f->failed;
    pthread_mutex_unlock(&f->lock);
}

/* The version N of a directory entry named v<N> (decimal, no sign, no leading
 * zero but "v0"), or -1. */
static int64_t version_of_entry(const char *name)
{
    if (name[0] != 'v' || name[1] < '0' || name[1] > '9' || (name[1] == '0' && name[2]))
        return -1;
    int64_t v = 0;
    for (const char *p = name + 1; *p; p++) {
        if (*p < '0' || *p > '9' || v > (INT64_MAX - 9) / 10)
            return -1;
        v = v * 10 + (*p - '0');
    }
    return v;
}

/* Removes DIR/v<N> for every N < keep_from: the files in it, then it. Best
 * effort: what cannot be removed stays (a reader ignores it). */
static void remove_older_versions(const char *dir, int64_t keep_from)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        int64_t v = version_of_entry(e->d_name);
        char vdir[PATH_MAX];
        if (v < 0 || v >= keep_from || !join(vdir, dir, e->d_name))
            continue;
        DIR *inner = opendir(vdir);
        if (!inner)
            continue;
        struct dirent *file;
        while ((file = readdir(inner)) != NULL) {
            char path[PATH_MAX];
            if (strcmp(file->d_name, ".") != 0 && strcmp(file->d_name, "..") != 0 && join(path, vdir, file->d_name))
                unlink(path);
        }
        closedir(inner);
        rmdir(vdir);
    }
    closedir(d);
}

int sliding_file_commit_manifest(sliding_file *f, int64_t version, const sliding_file_shape *shape)
{
    if (!f || version < 0)
        return SLIDING_ERR_ARG;
    f->reason[0] = '\0';
    if (!shape_ok(shape, f->reason, sizeof f->reason))
        return SLIDING_ERR_ARG;
    char text[2048];
    int n = snprintf(text, sizeof text,
                     MANIFEST_FORMAT_KEY " %d\nversion %" PRId64 "\ngrid %s\nspares %s\nranks_per_node %" PRId32
                     "\nblock %s\nlogical_ranks %" PRId64 "\nbytes_per_rank %" PRIu64 "\nend\n",
                     MANIFEST_FORMAT, version, shape->grid, shape->spares, shape->ranks_per_node,
                     block_word(shape->block), shape->logical_ranks, shape->bytes_per_rank);
    char final[PATH_MAX], partial[PATH_MAX];
    if (n <= 0 || (size_t)n >= sizeof text || !join(final, f->dir, MANIFEST_NAME) ||
        !join(partial, f->dir, "." MANIFEST_NAME PARTIAL_SUFFIX)) {
        say(f->reason, sizeof f->reason, "the manifest of %s does not fit", f->dir);
        return SLIDING_ERR_CHECKPOINT_DIR;
    }
    if (write_atomically(partial, final, (const unsigned char *)text, (size_t)n, NULL, 0, f->reason,
                         sizeof f->reason) != 0)
        return SLIDING_ERR_CHECKPOINT_DIR;
    if (sync_dir(f->dir) != 0) {
        SAY_ERRNO(f->reason, sizeof f->reason, errno, "cannot fsync %s", f->dir);
        return SLIDING_ERR_CHECKPOINT_DIR;
    }
    remove_older_versions(f->dir, version);
    return SLIDING_OK;
}

/* ---- reading ----------------------------------------------------------------- */

/* A decimal integer filling all of text, 0 <= value <= max; 0 if not one. */
static int parse_count(const char *text, uint64_t max, uint64_t *value)
{
    if (!*text || (text[0] == '0' && text[1]))
        return 0;
    uint64_t v = 0;
    for (const char *p = text; *p; p++) {
        if (*p < '0' || *p > '9' || v > (max - (uint64_t)(*p - '0')) / 10)
            return 0;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    *value = v;
    return 1;
}

/* The manifest's fields, pointing into its text. */
typedef struct manifest {
    int64_t version;
    const char *grid, *spares, *block;
    int64_t ranks_per_node, logical_ranks;
    uint64_t bytes_per_rank;
} manifest;

/* Parses text (NUL-terminated, modified in place). 0, or -1 with why. */
static int parse_manifest(char *text, manifest *m, char *why, size_t why_len)
{
    static const char *const keys[] = {MANIFEST_FORMAT_KEY, "version", "grid", "spares", "ranks_per_node",
                                       "block", "logical_ranks", "bytes_per_rank", "end"};
    enum { NKEYS = sizeof keys / sizeof keys[0] };
    char *line = text;
    for (int k = 0; k < NKEYS; k++) {
        int number = k + 1;
        char *eol = strchr(line, '\n');
        if (!eol) {
            say(why, why_len, "line %d: ends early (expected the %s line, ending in a newline)", number, keys[k]);
            return -1;
        }
        *eol = '\0';
        char *value = strchr(line, ' ');
        if (value)
            *value++ = '\0';
        if (strcmp(line, keys[k]) != 0 || (k == NKEYS - 1) != (value == NULL) || (value && !word_ok(value))) {
            say(why, why_len, "line %d: expected \"%s%s\"", number, keys[k], k == NKEYS - 1 ? "" : " VALUE");
            return -1;
        }
        uint64_t v = 0;
        int is_number = k == 0 || k == 1 || k == 4 || k == 6 || k == 7;
        if (is_number && !parse_count(value, k == 4 ? INT32_MAX : k == 7 ? UINT64_MAX : INT64_MAX, &v)) {
            say(why, why_len, "line %d: %s is not a count: %s", number, keys[k], value);
            return -1;
        }
        switch (k) {
        case 0:
            if (v != MANIFEST_FORMAT) {
                say(why, why_len, "format %" PRIu64 ", this runtime reads format %d", v, MANIFEST_FORMAT);
                return -1;
            }
            break;
        case 1: m->version = (int64_t)v; break;
        case 2: m->grid = value; break;
        case 3: m->spares = value; break;
        case 4: m->ranks_per_node = (int64_t)v; break;
        case 5: m->block = value; break;
        case 6: m->logical_ranks = (int64_t)v; break;
        case 7: m->bytes_per_rank = v; break;
        default: break;
        }
        line = eol + 1;
    }
    if (*line) {
        say(why, why_len, "text after the end line");
        return -1;
    }
    return 0;
}

int sliding_file_latest(const char *dir, const sliding_file_shape *expected, int64_t *version, char *why,
                        size_t why_len)
{
    say(why, why_len, "%s", "");
    if (!dir || !*dir || !version) {
        say(why, why_len, "no checkpoint directory or version given");
        return SLIDING_ERR_ARG;
    }
    *version = -1;
    if (!shape_ok(expected, why, why_len))
        return SLIDING_ERR_ARG;
    char path[PATH_MAX];
    if (!join(path, dir, MANIFEST_NAME)) {
        say(why, why_len, "path of %s is too long", dir);
        return SLIDING_ERR_CHECKPOINT_DIR;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) {
            say(why, why_len, "no manifest in %s: nothing to resume", dir);
            return SLIDING_OK;
        }
        SAY_ERRNO(why, why_len, errno, "cannot open %s", path);
        return SLIDING_ERR_CHECKPOINT_DIR;
    }
    char *text = malloc(MANIFEST_MAX_BYTES + 1);
    if (!text) {
        close(fd);
        return SLIDING_ERR_NOMEM;
    }
    ssize_t got = read_all(fd, (unsigned char *)text, MANIFEST_MAX_BYTES + 1);
    int error = errno;
    close(fd);
    int rc = SLIDING_ERR_CHECKPOINT_DIR;
    manifest m = {0};
    char reason[REASON_BYTES];
    if (got < 0) {
        SAY_ERRNO(why, why_len, error, "cannot read %s", path);
    } else if (got > MANIFEST_MAX_BYTES || memchr(text, '\0', (size_t)got)) {
        say(why, why_len, "%s is not a manifest (binary or over %d bytes)", path, MANIFEST_MAX_BYTES);
    } else if ((text[got] = '\0', parse_manifest(text, &m, reason, sizeof reason)) != 0) {
        say(why, why_len, "%s is malformed: %s", path, reason);
    } else if (strcmp(m.grid, expected->grid) != 0) {
        say(why, why_len, "%s holds a checkpoint of grid %s, this job runs grid %s", dir, m.grid, expected->grid);
    } else if (m.ranks_per_node != expected->ranks_per_node) {
        say(why, why_len, "%s holds a checkpoint of K=%" PRId64 " processes per node, this job runs K=%" PRId32,
            dir, m.ranks_per_node, expected->ranks_per_node);
    } else if (strcmp(m.block, block_word(expected->block)) != 0) {
        say(why, why_len, "%s holds a checkpoint of block %s, this job runs block %s", dir, m.block,
            block_word(expected->block));
    } else if (m.logical_ranks != expected->logical_ranks) {
        say(why, why_len, "%s holds a checkpoint of %" PRId64 " logical ranks, this job has %" PRId64, dir,
            m.logical_ranks, expected->logical_ranks);
    } else if (m.bytes_per_rank != expected->bytes_per_rank) {
        say(why, why_len, "%s holds a checkpoint of %" PRIu64 " bytes per rank, this job registers %" PRIu64,
            dir, m.bytes_per_rank, expected->bytes_per_rank);
    } else {
        char vdir[PATH_MAX];
        struct stat st;
        if (!version_dir(vdir, dir, m.version) || stat(vdir, &st) != 0 || !S_ISDIR(st.st_mode)) {
            say(why, why_len, "%s names version %" PRId64 " but its directory %s is missing", path, m.version,
                vdir);
        } else {
            *version = m.version;
            rc = SLIDING_OK;
        }
    }
    free(text);
    return rc;
}

int sliding_file_read(const char *dir, int64_t version, int64_t logical_rank, void *buf, size_t bytes, char *why,
                      size_t why_len)
{
    say(why, why_len, "%s", "");
    if (!dir || !*dir || version < 0 || logical_rank < 0 || (bytes > 0 && !buf)) {
        say(why, why_len, "bad arguments to read a rank file");
        return SLIDING_ERR_ARG;
    }
    char final[PATH_MAX], partial[PATH_MAX];
    if (!rank_paths(final, partial, dir, version, logical_rank)) {
        say(why, why_len, "path of rank %" PRId64 "'s file under %s is too long", logical_rank, dir);
        return SLIDING_ERR_CHECKPOINT_DIR;
    }
    int fd = open(final, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        SAY_ERRNO(why, why_len, errno, "cannot open %s", final);
        return SLIDING_ERR_CHECKPOINT_DIR;
    }
    int rc = SLIDING_ERR_CHECKPOINT_DIR;
    unsigned char head[SLIDING_FILE_HEADER_BYTES];
    struct stat st;
    ssize_t got_head = read_all(fd, head, sizeof head);
    if (got_head < 0 || fstat(fd, &st) != 0) {
        SAY_ERRNO(why, why_len, errno, "cannot read %s", final);
        goto out;
    }
    uint64_t want_size = SLIDING_FILE_HEADER_BYTES + (uint64_t)bytes;
    if ((size_t)got_head < sizeof head) {
        say(why, why_len, "%s is cut short: %zd bytes, not even its %d-byte header", final, got_head,
            SLIDING_FILE_HEADER_BYTES);
        goto out;
    }
    if (memcmp(head, RANK_MAGIC, 8) != 0 || get_u32(head + 36) != crc32_of(head, 36)) {
        say(why, why_len, "%s is not a rank checkpoint file (bad magic or header CRC)", final);
        goto out;
    }
    uint64_t in_version = get_u64(head + 8), in_rank = get_u64(head + 16), in_bytes = get_u64(head + 24);
    if (in_version != (uint64_t)version || in_rank != (uint64_t)logical_rank) {
        say(why, why_len, "%s holds rank %" PRIu64 "'s checkpoint of version %" PRIu64, final, in_rank,
            in_version);
        goto out;
    }
    if (in_bytes != (uint64_t)bytes) {
        say(why, why_len, "%s holds %" PRIu64 " bytes, this rank registers %zu", final, in_bytes, bytes);
        goto out;
    }
    if ((uint64_t)st.st_size != want_size) {
        say(why, why_len, "%s is %s: %jd bytes, its header says %" PRIu64, final,
            (uint64_t)st.st_size < want_size ? "cut short" : "too long", (intmax_t)st.st_size, want_size);
        goto out;
    }
    ssize_t got = read_all(fd, buf, bytes);
    if (got < 0) {
        SAY_ERRNO(why, why_len, errno, "cannot read %s", final);
        goto out;
    }
    if ((size_t)got != bytes) {
        say(why, why_len, "%s is cut short: %zd of %zu payload bytes", final, got, bytes);
        goto out;
    }
    if (crc32_of(buf, bytes) != get_u32(head + 32)) {
        say(why, why_len, "%s is corrupt: its payload fails its CRC-32", final);
        goto out;
    }
    rc = SLIDING_OK;
out:
    close(fd);
    return rc;
}
