/* Unit tests of sliding_file.c (the persistent level of the checkpoints).
 * Usage: test_sliding_file GROUP DIR, GROUP one of roundtrip, manifest,
 * shape, malformed, dirs, damaged, nonblocking, free, args; DIR an empty
 * directory the group may fill (tests/test_sliding_file.py gives each group
 * its own and then looks at the files). Prints "CHECKS checks FAILURES
 * failed" last; exit 1 when a check failed, 2 on bad usage. */
#define _POSIX_C_SOURCE 200809L

#include "sliding_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../../core/tests/unit_check.h"

/* ---- helpers -------------------------------------------------------------- */

static const char *root; /* the group's directory (argv[2]) */



static unsigned char *random_bytes(size_t n)
{
    unsigned char *p = alloc_or_die(n);
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)rng_next();
    return p;
}

/* root/name into a static buffer (one at a time). */
static const char *under(const char *format, ...) __attribute__((format(printf, 1, 2)));
static const char *under(const char *format, ...)
{
    static char path[PATH_MAX];
    char name[PATH_MAX - 256];
    va_list args;
    va_start(args, format);
    vsnprintf(name, sizeof name, format, args);
    va_end(args);
    snprintf(path, sizeof path, "%s/%s", root, name);
    return path;
}

static double now_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static long long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

static void write_text(const char *path, const char *text, size_t n)
{
    FILE *out = fopen(path, "wb");
    if (!out || fwrite(text, 1, n, out) != n || fclose(out) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(2);
    }
}

/* The whole text of a file (NUL-terminated; caller frees), NULL if unreadable. */
static char *read_text(const char *path)
{
    FILE *in = fopen(path, "rb");
    if (!in)
        return NULL;
    char *text = alloc_or_die(65536);
    size_t n = fread(text, 1, 65535, in);
    text[n] = '\0';
    fclose(in);
    return text;
}

/* Whether a directory holds an entry whose name contains `part`. */
static int dir_has(const char *dir, const char *part)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    struct dirent *e;
    int found = 0;
    while ((e = readdir(d)) != NULL)
        found |= strstr(e->d_name, part) != NULL;
    closedir(d);
    return found;
}

/* The number of threads of this process (/proc/self/task). */
static int thread_count(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* The count once a thread joined just before has left /proc/self/task: it
 * lingers there after pthread_join returns (the kernel wakes the joiner before
 * it removes the thread), long enough to be counted on a busy machine. The
 * count when it has not changed for 50 ms (at most 2 s). */
static int settled_thread_count(void)
{
    int last = thread_count(), same = 0;
    for (int tries = 0; same < 5 && tries < 200; tries++) {
        struct timespec pause = {0, 10 * 1000 * 1000};
        nanosleep(&pause, NULL);
        int now = thread_count();
        same = now == last ? same + 1 : 0;
        last = now;
    }
    return last;
}

static const sliding_file_shape SHAPE = {"torus:4x2x2", "x:1", 2, "2x1x1", 8, 1000};

/* Writes logical rank `rank`'s checkpoint of `version` through a level of its
 * own (one per simulated process) and waits for it; returns the bytes. */
static unsigned char *write_one(const char *dir, int64_t version, int64_t rank, size_t n)
{
    sliding_file *f = NULL;
    unsigned char *bytes = random_bytes(n);
    CHECK(sliding_file_new(dir, 1, &f) == SLIDING_OK, "new");
    if (!f)
        return bytes;
    int rc = sliding_file_stage(f, version, rank, bytes, n);
    CHECK(rc == SLIDING_OK, "stage v%" PRId64 " r%" PRId64 ": %d %s", version, rank, rc, sliding_file_error(f));
    int64_t v = -2;
    rc = sliding_file_wait(f, &v);
    CHECK(rc == SLIDING_OK && v == version, "wait v%" PRId64 ": %d v=%" PRId64 " %s", version, rc, v,
          sliding_file_error(f));
    sliding_file_free(f);
    return bytes;
}

/* ---- groups ----------------------------------------------------------------- */

/* Several ranks and versions written and read back bit-identical; each rank
 * keeps one level across versions, as a process does. */
static void group_roundtrip(void)
{
    enum { RANKS = 4, VERSIONS = 3 };
    const size_t sizes[RANKS] = {1000, 1, 0, 100000};
    sliding_file *level[RANKS];
    unsigned char *kept[VERSIONS][RANKS];
    for (int r = 0; r < RANKS; r++) {
        int rc = sliding_file_new(root, 3, &level[r]);
        CHECK(rc == SLIDING_OK, "new: %d", rc);
        int64_t v = 5;
        int finished = 0;
        rc = sliding_file_done(level[r], &v, &finished);
        CHECK(rc == SLIDING_OK && v == -1 && finished == 1, "done before any stage: %d v=%" PRId64 " %d", rc, v,
              finished);
    }
    for (int k = 0; k < VERSIONS; k++) {
        int64_t version = 3 * (k + 1);
        for (int r = 0; r < RANKS; r++) {
            kept[k][r] = random_bytes(sizes[r]);
            int rc = sliding_file_stage(level[r], version, r, kept[k][r], sizes[r]);
            CHECK(rc == SLIDING_OK, "stage v%" PRId64 " r%d: %d", version, r, rc);
        }
        /* The next stage waits for this write: no wait/done here on purpose. */
    }
    for (int r = 0; r < RANKS; r++) {
        int64_t v = -2;
        int rc = sliding_file_wait(level[r], &v);
        CHECK(rc == SLIDING_OK && v == 9, "wait r%d: %d v=%" PRId64 " %s", r, rc, v, sliding_file_error(level[r]));
        int finished = 0;
        rc = sliding_file_done(level[r], &v, &finished);
        CHECK(rc == SLIDING_OK && v == 9 && finished == 1, "done r%d: %d v=%" PRId64 " finished=%d", r, rc, v,
              finished);
        sliding_file_stats stats;
        sliding_file_stats_get(level[r], &stats);
        CHECK(stats.staged == VERSIONS && stats.written == VERSIONS && stats.failed == 0,
              "stats r%d: staged %" PRId64 " written %" PRId64 " failed %" PRId64, r, stats.staged, stats.written,
              stats.failed);
        CHECK(sliding_file_error(level[r])[0] == '\0', "no error r%d: %s", r, sliding_file_error(level[r]));
    }
    for (int k = 0; k < VERSIONS; k++) {
        int64_t version = 3 * (k + 1);
        CHECK(!dir_has(under("v%" PRId64, version), ".partial"), "no partial file left in v%" PRId64, version);
        for (int r = 0; r < RANKS; r++) {
            const char *path = under("v%" PRId64 "/r%d.bin", version, r);
            CHECK(file_size(path) == (long long)(SLIDING_FILE_HEADER_BYTES + sizes[r]), "size of %s: %lld", path,
                  file_size(path));
            unsigned char *back = alloc_or_die(sizes[r]);
            char why[512];
            int rc = sliding_file_read(root, version, r, back, sizes[r], why, sizeof why);
            CHECK(rc == SLIDING_OK, "read v%" PRId64 " r%d: %d %s", version, r, rc, why);
            CHECK(sizes[r] == 0 || memcmp(back, kept[k][r], sizes[r]) == 0, "bytes of v%" PRId64 " r%d differ",
                  version, r);
            free(back);
            free(kept[k][r]);
        }
    }
    /* Every 3rd commit: due at 3, 6, 9, not at 0, 1, 2, 4. */
    CHECK(sliding_file_due(level[0], 3) && sliding_file_due(level[0], 6) && sliding_file_due(level[0], 9), "due");
    CHECK(!sliding_file_due(level[0], 0) && !sliding_file_due(level[0], 1) && !sliding_file_due(level[0], 2) &&
              !sliding_file_due(level[0], 4) && !sliding_file_due(level[0], -3),
          "not due");
    for (int r = 0; r < RANKS; r++)
        sliding_file_free(level[r]);
    /* Left in place for the Python side, which checks the header and CRC with zlib:
     * v9/r3.bin holds 100000 bytes of rank 3 version 9. */
    CHECK(!exists(under("manifest")), "no manifest without a commit");
}

/* The manifest appears only when committed, names the version, and removes
 * older versions but no newer ones. */
static void group_manifest(void)
{
    char why[512];
    int64_t version = 7;
    free(write_one(root, 0, 0, 1000));
    free(write_one(root, 0, 1, 1000));
    int rc = sliding_file_latest(root, &SHAPE, &version, why, sizeof why);
    CHECK(rc == SLIDING_OK && version == -1 && strstr(why, "no manifest"), "latest before commit: %d %" PRId64
          " %s", rc, version, why);

    sliding_file *f = NULL;
    CHECK(sliding_file_new(root, 1, &f) == SLIDING_OK, "new");
    rc = sliding_file_commit_manifest(f, 0, &SHAPE);
    CHECK(rc == SLIDING_OK, "commit v0: %d %s", rc, sliding_file_error(f));
    rc = sliding_file_latest(root, &SHAPE, &version, why, sizeof why);
    CHECK(rc == SLIDING_OK && version == 0, "latest after commit v0: %d %" PRId64 " %s", rc, version, why);
    char *text = read_text(under("manifest"));
    const char *expected = "ftslide-sliding-checkpoint 1\nversion 0\ngrid torus:4x2x2\nspares x:1\n"
                           "ranks_per_node 2\nblock 2x1x1\nlogical_ranks 8\nbytes_per_rank 1000\nend\n";
    CHECK(text && strcmp(text, expected) == 0, "manifest text:\n%s", text ? text : "(unreadable)");
    free(text);
    CHECK(!dir_has(root, ".partial"), "no .manifest.partial left");

    /* v1 complete, v2 being written: committing v1 removes v0, keeps v2. */
    free(write_one(root, 1, 0, 1000));
    free(write_one(root, 1, 1, 1000));
    free(write_one(root, 2, 0, 1000));
    write_text(under("v1/.r1.bin.partial"), "left by a killed writer", 23);
    CHECK(sliding_file_latest(root, &SHAPE, &version, why, sizeof why) == SLIDING_OK && version == 0,
          "latest still v0 until the commit: %" PRId64, version);
    rc = sliding_file_commit_manifest(f, 1, &SHAPE);
    CHECK(rc == SLIDING_OK, "commit v1: %d %s", rc, sliding_file_error(f));
    rc = sliding_file_latest(root, &SHAPE, &version, why, sizeof why);
    CHECK(rc == SLIDING_OK && version == 1, "latest after commit v1: %d %" PRId64 " %s", rc, version, why);
    CHECK(!exists(under("v0")), "v0 removed after v1's commit");
    CHECK(exists(under("v1/r0.bin")) && exists(under("v1/r1.bin")), "v1 kept");
    CHECK(exists(under("v2/r0.bin")), "v2 (newer, being written) kept");

    /* A block NULL is written "-" and matches "" and NULL, not "1x1". */
    sliding_file_shape no_block = SHAPE;
    no_block.block = NULL;
    rc = sliding_file_commit_manifest(f, 2, &no_block);
    CHECK(rc == SLIDING_OK, "commit v2: %d %s", rc, sliding_file_error(f));
    text = read_text(under("manifest"));
    CHECK(text && strstr(text, "\nblock -\n") && strstr(text, "\nversion 2\n"), "manifest v2:\n%s", text);
    free(text);
    no_block.block = "";
    CHECK(sliding_file_latest(root, &no_block, &version, why, sizeof why) == SLIDING_OK && version == 2,
          "latest block \"\": %s", why);
    CHECK(!exists(under("v1")), "v1 removed after v2's commit");
    no_block.block = "1x1x1";
    CHECK(sliding_file_latest(root, &no_block, &version, why, sizeof why) == SLIDING_ERR_CHECKPOINT_DIR,
          "block 1x1x1 against none: %s", why);
    sliding_file_free(f);
}

/* latest() against a shape that differs in each compared field, and in spares
 * (not compared). */
static void group_shape(void)
{
    char why[512];
    int64_t version = -5;
    free(write_one(root, 4, 0, 1000));
    sliding_file *f = NULL;
    CHECK(sliding_file_new(root, 1, &f) == SLIDING_OK, "new");
    CHECK(sliding_file_commit_manifest(f, 4, &SHAPE) == SLIDING_OK, "commit: %s", sliding_file_error(f));
    sliding_file_free(f);
    int rc = sliding_file_latest(root, &SHAPE, &version, why, sizeof why);
    CHECK(rc == SLIDING_OK && version == 4, "matching shape: %d %" PRId64 " %s", rc, version, why);

    struct {
        const char *field, *mention;
        sliding_file_shape shape;
    } cases[] = {
        {"grid", "grid torus:4x2x2, this job runs grid torus:4x4x2", SHAPE},
        {"grid kind", "grid torus:4x2x2", SHAPE},
        {"K", "K=2 processes per node, this job runs K=1", SHAPE},
        {"block", "block 2x1x1, this job runs block 1x2x1", SHAPE},
        {"ranks", "8 logical ranks, this job has 16", SHAPE},
        {"bytes", "1000 bytes per rank, this job registers 1008", SHAPE},
    };
    cases[0].shape.grid = "torus:4x4x2";
    cases[1].shape.grid = "mesh:4x2x2";
    cases[2].shape.ranks_per_node = 1;
    cases[3].shape.block = "1x2x1";
    cases[4].shape.logical_ranks = 16;
    cases[5].shape.bytes_per_rank = 1008;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        version = 3;
        why[0] = '\0';
        rc = sliding_file_latest(root, &cases[c].shape, &version, why, sizeof why);
        printf("%s differs: %s\n", cases[c].field, why);
        CHECK(rc == SLIDING_ERR_CHECKPOINT_DIR && version == -1, "%s differs: %d %" PRId64, cases[c].field, rc,
              version);
        CHECK(strstr(why, cases[c].mention) && !strchr(why, '\n'), "%s: reason '%s' lacks '%s'", cases[c].field,
              why, cases[c].mention);
    }
    sliding_file_shape other_spares = SHAPE;
    other_spares.spares = "y:2";
    rc = sliding_file_latest(root, &other_spares, &version, why, sizeof why);
    CHECK(rc == SLIDING_OK && version == 4, "spares are not compared: %d %s", rc, why);

    /* A reason cut to a small buffer stays a terminated string. */
    char tiny[12];
    rc = sliding_file_latest(root, &cases[0].shape, &version, tiny, sizeof tiny);
    CHECK(rc == SLIDING_ERR_CHECKPOINT_DIR && strlen(tiny) == sizeof tiny - 1, "tiny reason '%s'", tiny);
}

/* A missing manifest, a missing DIR, and manifests malformed in each way. */
static void group_malformed(void)
{
    char why[512];
    int64_t version = 9;
    int rc = sliding_file_latest(under("never-created"), &SHAPE, &version, why, sizeof why);
    CHECK(rc == SLIDING_OK && version == -1 && strstr(why, "nothing to resume"), "no DIR: %d %" PRId64 " %s", rc,
          version, why);
    version = 9;
    rc = sliding_file_latest(root, &SHAPE, &version, why, sizeof why);
    CHECK(rc == SLIDING_OK && version == -1, "no manifest: %d %" PRId64 " %s", rc, version, why);

    free(write_one(root, 12, 0, 1000));
    const char *good = "ftslide-sliding-checkpoint 1\nversion 12\ngrid torus:4x2x2\nspares x:1\n"
                       "ranks_per_node 2\nblock 2x1x1\nlogical_ranks 8\nbytes_per_rank 1000\nend\n";
    write_text(under("manifest"), good, strlen(good));
    rc = sliding_file_latest(root, &SHAPE, &version, why, sizeof why);
    CHECK(rc == SLIDING_OK && version == 12, "hand-written manifest: %d %s", rc, why);

    struct {
        const char *what, *text, *mention;
    } bad[] = {
        {"empty", "", "line 1"},
        {"other format", "ftslide-sliding-checkpoint 2\nversion 12\n", "format 2"},
        {"no end", "ftslide-sliding-checkpoint 1\nversion 12\ngrid torus:4x2x2\nspares x:1\nranks_per_node 2\n"
                   "block 2x1x1\nlogical_ranks 8\nbytes_per_rank 1000\n", "line 9"},
        {"cut mid-line", "ftslide-sliding-checkpoint 1\nversion 12\ngrid torus:4x2x2\nspares x:1\nranks_per_no",
         "line 5"},
        {"keys swapped", "ftslide-sliding-checkpoint 1\ngrid torus:4x2x2\nversion 12\n", "line 2"},
        {"not a number", "ftslide-sliding-checkpoint 1\nversion twelve\n", "not a count"},
        {"negative", "ftslide-sliding-checkpoint 1\nversion -1\n", "not a count"},
        {"overflow", "ftslide-sliding-checkpoint 1\nversion 99999999999999999999\n", "not a count"},
        {"K too big", "ftslide-sliding-checkpoint 1\nversion 12\ngrid torus:4x2x2\nspares x:1\n"
                      "ranks_per_node 4294967296\n", "not a count"},
        {"two words", "ftslide-sliding-checkpoint 1\nversion 12\ngrid torus:4x2x2 extra\n", "line 3"},
        {"text after end", "ftslide-sliding-checkpoint 1\nversion 12\ngrid torus:4x2x2\nspares x:1\n"
                           "ranks_per_node 2\nblock 2x1x1\nlogical_ranks 8\nbytes_per_rank 1000\nend\nmore\n",
         "after the end"},
        {"CRLF", "ftslide-sliding-checkpoint 1\r\nversion 12\r\n", "line 1"},
    };
    for (size_t c = 0; c < sizeof bad / sizeof bad[0]; c++) {
        write_text(under("manifest"), bad[c].text, strlen(bad[c].text));
        version = 3;
        why[0] = '\0';
        rc = sliding_file_latest(root, &SHAPE, &version, why, sizeof why);
        printf("%s: %s\n", bad[c].what, why);
        CHECK(rc == SLIDING_ERR_CHECKPOINT_DIR && version == -1, "%s: %d %" PRId64, bad[c].what, rc, version);
        CHECK(strstr(why, "malformed") && strstr(why, bad[c].mention), "%s: reason '%s' lacks '%s'", bad[c].what,
              why, bad[c].mention);
    }
    /* Binary bytes. */
    write_text(under("manifest"), "ftslide\0sliding", 15);
    rc = sliding_file_latest(root, &SHAPE, &version, why, sizeof why);
    CHECK(rc == SLIDING_ERR_CHECKPOINT_DIR && strstr(why, "not a manifest"), "binary: %d %s", rc, why);
    /* The version it names has no directory. */
    const char *gone = "ftslide-sliding-checkpoint 1\nversion 13\ngrid torus:4x2x2\nspares x:1\n"
                       "ranks_per_node 2\nblock 2x1x1\nlogical_ranks 8\nbytes_per_rank 1000\nend\n";
    write_text(under("manifest"), gone, strlen(gone));
    rc = sliding_file_latest(root, &SHAPE, &version, why, sizeof why);
    printf("version directory missing: %s\n", why);
    CHECK(rc == SLIDING_ERR_CHECKPOINT_DIR && strstr(why, "v13") && strstr(why, "missing"), "v13 missing: %d %s",
          rc, why);
    /* A manifest that cannot be read (a directory of that name). */
    unlink(under("manifest"));
    mkdir(under("manifest"), 0755);
    rc = sliding_file_latest(root, &SHAPE, &version, why, sizeof why);
    printf("manifest is a directory: %s\n", why);
    CHECK(rc == SLIDING_ERR_CHECKPOINT_DIR && strstr(why, "cannot read"), "manifest a directory: %d %s", rc, why);
}

/* check_dir, writes and commits where nothing can be written, as root too:
 * under a regular file (ENOTDIR) and in /proc. */
static void group_dirs(void)
{
    char why[512];
    int rc = sliding_file_check_dir(under("a/b/c"), why, sizeof why);
    CHECK(rc == SLIDING_OK && why[0] == '\0', "nested new dir: %d %s", rc, why);
    CHECK(exists(under("a/b/c")) && !dir_has(under("a/b/c"), ".probe"), "created, probe removed");
    rc = sliding_file_check_dir(under("a/b/c"), why, sizeof why);
    CHECK(rc == SLIDING_OK, "existing dir: %d %s", rc, why);

    write_text(under("plain"), "x", 1);
    char beneath[PATH_MAX];
    snprintf(beneath, sizeof beneath, "%s", under("plain/sub"));
    rc = sliding_file_check_dir(beneath, why, sizeof why);
    printf("under a file: %s\n", why);
    CHECK(rc == SLIDING_ERR_CHECKPOINT_DIR && strstr(why, "cannot create") && strstr(why, "Not a directory"),
          "under a file: %d %s", rc, why);
    rc = sliding_file_check_dir(under("plain"), why, sizeof why);
    printf("a file: %s\n", why);
    CHECK(rc == SLIDING_ERR_CHECKPOINT_DIR && strstr(why, "Not a directory"), "a file: %d %s", rc, why);
    rc = sliding_file_check_dir("/proc", why, sizeof why);
    printf("/proc: %s\n", why);
    CHECK(rc == SLIDING_ERR_CHECKPOINT_DIR && strstr(why, "/proc is not writable: "), "/proc: %d %s", rc, why);
    rc = sliding_file_check_dir("", why, sizeof why);
    CHECK(rc == SLIDING_ERR_ARG, "empty dir name: %d", rc);

    /* A write that fails: done and wait report it with the errno text, and the
     * next write to a good place succeeds. */
    sliding_file *f = NULL;
    CHECK(sliding_file_new(beneath, 1, &f) == SLIDING_OK, "new");
    unsigned char bytes[100] = {1, 2, 3};
    rc = sliding_file_stage(f, 5, 0, bytes, sizeof bytes);
    CHECK(rc == SLIDING_OK, "stage where it cannot be written: %d", rc);
    int64_t version = -2;
    rc = sliding_file_wait(f, &version);
    printf("failed write: %s\n", sliding_file_error(f));
    CHECK(rc == SLIDING_ERR_CHECKPOINT_DIR && version == 5 && strstr(sliding_file_error(f), "Not a directory"),
          "failed write: %d v=%" PRId64 " %s", rc, version, sliding_file_error(f));
    int finished = 0;
    rc = sliding_file_done(f, &version, &finished);
    CHECK(rc == SLIDING_ERR_CHECKPOINT_DIR && finished == 1 && strstr(sliding_file_error(f), "cannot create"),
          "done after a failed write: %d %s", rc, sliding_file_error(f));
    rc = sliding_file_commit_manifest(f, 5, &SHAPE);
    printf("failed commit: %s\n", sliding_file_error(f));
    CHECK(rc == SLIDING_ERR_CHECKPOINT_DIR && strstr(sliding_file_error(f), "Not a directory"),
          "commit where it cannot be written: %d %s", rc, sliding_file_error(f));
    sliding_file_stats stats;
    sliding_file_stats_get(f, &stats);
    CHECK(stats.failed == 1 && stats.written == 0, "stats: failed %" PRId64, stats.failed);
    sliding_file_free(f);

    /* The version directory already exists (another rank made it): fine. */
    CHECK(mkdir(under("v3"), 0755) == 0, "mkdir v3");
    free(write_one(root, 3, 1, 10));
    CHECK(exists(under("v3/r1.bin")), "written into an existing v3");
}

/* Damaged rank files: read says which and how. */
static void group_damaged(void)
{
    char why[512];
    const size_t n = 4096;
    unsigned char *bytes = write_one(root, 2, 0, n);
    free(write_one(root, 2, 1, n));
    unsigned char *back = alloc_or_die(n + 16);
    int rc = sliding_file_read(root, 2, 0, back, n, why, sizeof why);
    CHECK(rc == SLIDING_OK && memcmp(back, bytes, n) == 0, "intact: %d %s", rc, why);

    struct {
        const char *what, *mention;
        int64_t rank;
        size_t bytes;
    } wrong[] = {
        {"missing rank", "No such file or directory", 5, n},
        {"other size", "holds 4096 bytes, this rank registers 4000", 0, 4000},
    };
    for (size_t c = 0; c < sizeof wrong / sizeof wrong[0]; c++) {
        rc = sliding_file_read(root, 2, wrong[c].rank, back, wrong[c].bytes, why, sizeof why);
        printf("%s: %s\n", wrong[c].what, why);
        CHECK(rc == SLIDING_ERR_CHECKPOINT_DIR && strstr(why, wrong[c].mention), "%s: %d %s", wrong[c].what, rc,
              why);
    }
    rc = sliding_file_read(root, 3, 0, back, n, why, sizeof why);
    CHECK(rc == SLIDING_ERR_CHECKPOINT_DIR && strstr(why, "v3/r0.bin"), "missing version: %s", why);

    /* Rank 1's file copied over rank 0's. */
    char *one = NULL;
    {
        FILE *in = fopen(under("v2/r1.bin"), "rb");
        one = alloc_or_die(SLIDING_FILE_HEADER_BYTES + n);
        CHECK(in && fread(one, 1, SLIDING_FILE_HEADER_BYTES + n, in) == SLIDING_FILE_HEADER_BYTES + n, "read r1");
        if (in)
            fclose(in);
    }
    const char *r0 = strdup(under("v2/r0.bin"));
    write_text(r0, one, SLIDING_FILE_HEADER_BYTES + n);
    rc = sliding_file_read(root, 2, 0, back, n, why, sizeof why);
    printf("another rank's file: %s\n", why);
    CHECK(rc == SLIDING_ERR_CHECKPOINT_DIR && strstr(why, "holds rank 1's checkpoint of version 2"),
          "another rank's file: %d %s", rc, why);

    /* Partial writes: cut in the payload, cut in the header, one byte too many. */
    unsigned char head[SLIDING_FILE_HEADER_BYTES];
    free(bytes);
    bytes = write_one(root, 2, 0, n);
    FILE *in = fopen(r0, "rb");
    CHECK(in && fread(head, 1, sizeof head, in) == sizeof head, "header");
    if (in)
        fclose(in);
    CHECK(truncate(r0, SLIDING_FILE_HEADER_BYTES + n / 2) == 0, "truncate");
    rc = sliding_file_read(root, 2, 0, back, n, why, sizeof why);
    printf("cut in the payload: %s\n", why);
    CHECK(rc == SLIDING_ERR_CHECKPOINT_DIR && strstr(why, "cut short: 2112 bytes, its header says 4160"),
          "cut in the payload: %d %s", rc, why);
    CHECK(truncate(r0, 10) == 0, "truncate");
    rc = sliding_file_read(root, 2, 0, back, n, why, sizeof why);
    printf("cut in the header: %s\n", why);
    CHECK(rc == SLIDING_ERR_CHECKPOINT_DIR && strstr(why, "cut short: 10 bytes, not even"), "cut in the header: %s",
          why);
    CHECK(truncate(r0, 0) == 0, "truncate");
    rc = sliding_file_read(root, 2, 0, back, n, why, sizeof why);
    CHECK(rc == SLIDING_ERR_CHECKPOINT_DIR && strstr(why, "cut short: 0 bytes"), "empty file: %s", why);

    /* Whole again, then one payload bit flipped, then a header bit flipped, then one byte appended. */
    unsigned char *whole = alloc_or_die(SLIDING_FILE_HEADER_BYTES + n + 1);
    memcpy(whole, head, sizeof head);
    memcpy(whole + sizeof head, bytes, n);
    write_text(r0, (char *)whole, SLIDING_FILE_HEADER_BYTES + n);
    rc = sliding_file_read(root, 2, 0, back, n, why, sizeof why);
    CHECK(rc == SLIDING_OK && memcmp(back, bytes, n) == 0, "restored: %d %s", rc, why);
    whole[SLIDING_FILE_HEADER_BYTES + 1234] ^= 0x10;
    write_text(r0, (char *)whole, SLIDING_FILE_HEADER_BYTES + n);
    rc = sliding_file_read(root, 2, 0, back, n, why, sizeof why);
    printf("payload bit flipped: %s\n", why);
    CHECK(rc == SLIDING_ERR_CHECKPOINT_DIR && strstr(why, "CRC-32"), "payload bit flipped: %d %s", rc, why);
    whole[SLIDING_FILE_HEADER_BYTES + 1234] ^= 0x10;
    whole[25] ^= 0x01; /* the payload size */
    write_text(r0, (char *)whole, SLIDING_FILE_HEADER_BYTES + n);
    rc = sliding_file_read(root, 2, 0, back, n, why, sizeof why);
    printf("header bit flipped: %s\n", why);
    CHECK(rc == SLIDING_ERR_CHECKPOINT_DIR && strstr(why, "header CRC"), "header bit flipped: %d %s", rc, why);
    whole[25] ^= 0x01;
    whole[SLIDING_FILE_HEADER_BYTES + n] = 0;
    write_text(r0, (char *)whole, SLIDING_FILE_HEADER_BYTES + n + 1);
    rc = sliding_file_read(root, 2, 0, back, n, why, sizeof why);
    printf("one byte too many: %s\n", why);
    CHECK(rc == SLIDING_ERR_CHECKPOINT_DIR && strstr(why, "too long"), "one byte too many: %d %s", rc, why);
    free(whole);
    free(one);
    free(bytes);
    free(back);
    free((void *)r0);
}

/* A reader for the FIFO of group_nonblocking: opens it after a delay and
 * drains it. */
typedef struct late_reader {
    const char *path;
    double delay;
    long long drained;
} late_reader;

static void *read_late(void *arg)
{
    late_reader *r = arg;
    struct timespec pause = {(time_t)r->delay, (long)((r->delay - (time_t)r->delay) * 1e9)};
    nanosleep(&pause, NULL);
    int fd = open(r->path, O_RDONLY);
    if (fd < 0)
        return NULL;
    char buf[65536];
    ssize_t got;
    while ((got = read(fd, buf, sizeof buf)) > 0)
        r->drained += got;
    close(fd);
    return NULL;
}

/* stage returns while the write cannot progress; the next stage waits for it.
 * The write is held deterministically: its .partial name is a FIFO, whose
 * open blocks until a reader comes. Then a large checkpoint: the copy and the
 * write timed (printed, not asserted: the machine is shared). */
static void group_nonblocking(void)
{
    enum { BYTES = 1 << 20 };
    unsigned char *bytes = random_bytes(BYTES);
    CHECK(mkdir(under("v1"), 0755) == 0, "mkdir v1");
    const char *fifo = strdup(under("v1/.r0.bin.partial"));
    CHECK(mkfifo(fifo, 0600) == 0, "mkfifo %s: %s", fifo, strerror(errno));

    sliding_file *f = NULL;
    CHECK(sliding_file_new(root, 1, &f) == SLIDING_OK, "new");
    double start = now_seconds();
    int rc = sliding_file_stage(f, 1, 0, bytes, BYTES);
    double staged = now_seconds() - start;
    CHECK(rc == SLIDING_OK, "stage: %d", rc);
    struct timespec settle = {0, 100 * 1000 * 1000};
    nanosleep(&settle, NULL);
    int64_t version = -2;
    int finished = 1;
    rc = sliding_file_done(f, &version, &finished);
    CHECK(rc == SLIDING_OK && finished == 0 && version == 1, "done while the write is held: %d finished=%d", rc,
          finished);
    printf("stage returned in %.6f s while its write was held\n", staged);

    /* The next stage must wait until the reader opens the FIFO (0.5 s from now). */
    late_reader reader = {fifo, 0.5, 0};
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, read_late, &reader) == 0, "reader thread");
    start = now_seconds();
    rc = sliding_file_stage(f, 2, 0, bytes, BYTES);
    double waited = now_seconds() - start;
    CHECK(rc == SLIDING_OK, "second stage: %d", rc);
    sliding_file_stats stats;
    sliding_file_stats_get(f, &stats);
    printf("second stage waited %.3f s for the held write (its own measure %.3f s)\n", waited,
           stats.last_wait_seconds);
    CHECK(waited >= 0.45 && stats.last_wait_seconds >= 0.45 && stats.last_wait_seconds <= waited,
          "the second stage waited for the first write: %.3f s, measured %.3f s", waited, stats.last_wait_seconds);
    pthread_join(thread, NULL);
    CHECK(reader.drained == SLIDING_FILE_HEADER_BYTES + BYTES, "the held write went through the FIFO: %lld",
          reader.drained);
    CHECK(stats.failed == 1, "the write into a FIFO fails at its fsync: failed=%" PRId64, stats.failed);
    rc = sliding_file_wait(f, &version);
    CHECK(rc == SLIDING_OK && version == 2, "second write: %d %s", rc, sliding_file_error(f));
    free(bytes);
    free((void *)fifo);

    /* A large checkpoint: stage costs the copy, not the write. */
    size_t large = (size_t)128 << 20;
    const char *env = getenv("SLIDING_FILE_TEST_MIB");
    if (env && atoi(env) > 0)
        large = (size_t)atoi(env) << 20;
    bytes = alloc_or_die(large);
    memset(bytes, 0x5a, large);
    for (int round = 0; round < 2; round++) { /* the first grows the staging buffer (page faults) */
        start = now_seconds();
        rc = sliding_file_stage(f, 10 + round, 0, bytes, large);
        staged = now_seconds() - start;
        CHECK(rc == SLIDING_OK, "large stage: %d", rc);
        double returned = now_seconds();
        rc = sliding_file_wait(f, &version);
        double written = now_seconds() - returned;
        sliding_file_stats_get(f, &stats);
        CHECK(rc == SLIDING_OK, "large write: %d %s", rc, sliding_file_error(f));
        printf("large checkpoint %zu MiB, round %d: stage returned after %.3f s (copy %.3f s, wait %.3f s); the "
               "write took %.3f s more (writer's measure %.3f s)\n",
               large >> 20, round + 1, staged, stats.last_copy_seconds, stats.last_wait_seconds, written,
               stats.last_write_seconds);
    }
    sliding_file_free(f);
    free(bytes);
    unlink(under("v10/r0.bin"));
    unlink(under("v11/r0.bin"));
}

/* free waits for a pending write and joins the writer thread. */
static void group_free(void)
{
    sliding_file_free(NULL);
    /* A first write and free, so that threads a sanitizer starts with the
     * first thread of the process are there before counting. */
    free(write_one(root, 7, 3, 10));
    int threads = settled_thread_count(); /* that first writer gone */
    sliding_file *f = NULL;
    CHECK(sliding_file_new(root, 1, &f) == SLIDING_OK, "new");
    CHECK(thread_count() == threads, "new starts no thread");
    sliding_file_free(f); /* never staged: no thread to join */

    size_t n = (size_t)32 << 20;
    unsigned char *bytes = random_bytes(n);
    CHECK(sliding_file_new(root, 1, &f) == SLIDING_OK, "new");
    CHECK(sliding_file_stage(f, 8, 3, bytes, n) == SLIDING_OK, "stage");
    CHECK(thread_count() == threads + 1, "stage started the writer: %d threads, %d before", thread_count(), threads);
    sliding_file_free(f); /* at once: the write must still complete */
    int after = settled_thread_count();
    CHECK(after == threads, "free joined the writer: %d threads, %d before", after, threads);
    unsigned char *back = alloc_or_die(n);
    char why[512];
    int rc = sliding_file_read(root, 8, 3, back, n, why, sizeof why);
    CHECK(rc == SLIDING_OK && memcmp(back, bytes, n) == 0, "the write pending at free completed: %d %s", rc, why);
    free(back);
    free(bytes);
}

/* Bad arguments and the status's name and message. */
static void group_args(void)
{
    sliding_file *f = (sliding_file *)&checks;
    CHECK(sliding_file_new(root, 0, &f) == SLIDING_ERR_ARG && f == (sliding_file *)&checks, "every 0");
    CHECK(sliding_file_new(NULL, 1, &f) == SLIDING_ERR_ARG, "NULL dir");
    CHECK(sliding_file_new("", 1, &f) == SLIDING_ERR_ARG, "empty dir");
    CHECK(sliding_file_new(root, 1, NULL) == SLIDING_ERR_ARG, "NULL out");
    CHECK(sliding_file_new(root, 2, &f) == SLIDING_OK, "new");
    CHECK(sliding_file_stage(f, 1, 0, NULL, 10) == SLIDING_ERR_ARG, "NULL bytes");
    CHECK(sliding_file_stage(f, -1, 0, "x", 1) == SLIDING_ERR_ARG, "negative version");
    CHECK(sliding_file_stage(f, 1, -1, "x", 1) == SLIDING_ERR_ARG, "negative rank");
    CHECK(sliding_file_done(NULL, NULL, NULL) == SLIDING_ERR_ARG, "done NULL");
    CHECK(!sliding_file_due(NULL, 2), "due NULL");
    sliding_file_shape bad = SHAPE;
    bad.grid = "torus 4x4";
    CHECK(sliding_file_commit_manifest(f, 1, &bad) == SLIDING_ERR_ARG && strstr(sliding_file_error(f), "grid"),
          "grid with a blank: %s", sliding_file_error(f));
    bad = SHAPE;
    bad.spares = "";
    CHECK(sliding_file_commit_manifest(f, 1, &bad) == SLIDING_ERR_ARG, "empty spares");
    bad = SHAPE;
    bad.ranks_per_node = 0;
    CHECK(sliding_file_commit_manifest(f, 1, &bad) == SLIDING_ERR_ARG, "K 0");
    bad = SHAPE;
    bad.logical_ranks = 0;
    CHECK(sliding_file_commit_manifest(f, 1, &bad) == SLIDING_ERR_ARG, "no ranks");
    CHECK(sliding_file_commit_manifest(f, -1, &SHAPE) == SLIDING_ERR_ARG, "negative version");
    CHECK(sliding_file_commit_manifest(f, 1, NULL) == SLIDING_ERR_ARG, "NULL shape");
    CHECK(!exists(under("manifest")), "no manifest written by a refused commit");
    sliding_file_free(f);
    int64_t version = 0;
    char why[256];
    CHECK(sliding_file_latest(NULL, &SHAPE, &version, why, sizeof why) == SLIDING_ERR_ARG, "latest NULL dir");
    CHECK(sliding_file_latest(root, NULL, &version, why, sizeof why) == SLIDING_ERR_ARG, "latest NULL shape");
    CHECK(sliding_file_latest(root, &SHAPE, &version, NULL, 0) == SLIDING_OK && version == -1, "no why buffer");
    CHECK(sliding_file_read(root, 0, 0, NULL, 5, why, sizeof why) == SLIDING_ERR_ARG, "read NULL buffer");
    CHECK(sliding_file_read(root, -1, 0, why, 5, why, sizeof why) == SLIDING_ERR_ARG, "read negative version");
    const char *name = sliding_status_name(SLIDING_ERR_CHECKPOINT_DIR);
    CHECK(name && strcmp(name, "ERR_CHECKPOINT_DIR") == 0, "status name %s", name ? name : "(null)");
    CHECK(strstr(sliding_strerror(SLIDING_ERR_CHECKPOINT_DIR), "checkpoint directory"), "message %s",
          sliding_strerror(SLIDING_ERR_CHECKPOINT_DIR));
    CHECK(SLIDING_ERR_CHECKPOINT_DIR == SLIDING_ERR_REDUNDANCY + 1, "right after ERR_REDUNDANCY");
}

static const struct {
    const char *name;
    void (*run)(void);
} groups[] = {
    {"roundtrip", group_roundtrip}, {"manifest", group_manifest},       {"shape", group_shape},
    {"malformed", group_malformed}, {"dirs", group_dirs},               {"damaged", group_damaged},
    {"nonblocking", group_nonblocking}, {"free", group_free},           {"args", group_args},
};

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s GROUP DIR (an empty directory)\n", argv[0]);
        return 2;
    }
    root = argv[2];
    for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
        if (strcmp(argv[1], groups[g].name) == 0) {
            groups[g].run();
            printf("%ld checks %ld failed\n", checks, failures);
            return failures ? 1 : 0;
        }
    }
    fprintf(stderr, "unknown group '%s'\n", argv[1]);
    return 2;
}
