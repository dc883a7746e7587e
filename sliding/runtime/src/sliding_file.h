/*
 * sliding_file.h -- the persistent level of the sliding runtime's checkpoints
 * (internal, no MPI: POSIX files and one pthread).
 *
 * Every k-th committed in-memory checkpoint is also written to a directory
 * DIR that every process of the job sees, so that a recovery the in-memory
 * levels cannot make rolls back to it, and a new job given the same DIR
 * resumes from it. The unit writes and reads files; the MPI side (sliding.c)
 * decides when, and agrees on what every rank has written.
 *
 * Writing. sliding_file_stage() copies a rank's packed checkpoint into a
 * staging buffer the unit owns and returns: a writer thread of the process
 * (started at the first stage, joined by sliding_file_free) then writes it
 * behind the application's back. The iteration pays the copy, O(bytes) of
 * memcpy, and nothing else, unless the previous write is still running: then
 * stage WAITS for it rather than skip. Skipping is a local decision: ranks
 * that skip and ranks that do not would leave every version incomplete
 * somewhere, and the manifest could never move. Waiting keeps the ranks in
 * step, costs only when a write takes longer than k iterations, and is
 * measured (sliding_file_stats: stage_wait_seconds) so that an interval too
 * short for the file system shows in the numbers. One write is in flight at a
 * time; the staging buffer is the size of the largest checkpoint staged.
 *
 * Committing. A version is complete once every rank's file of it is written,
 * which only an agreement can tell (sliding_file_done at each rank, then the
 * MPI side). One process then calls sliding_file_commit_manifest: DIR/manifest
 * names that version, and it is the only thing a reader trusts. Files of
 * versions not (yet) in the manifest are ignored by readers.
 *
 * Layout of DIR:
 *   DIR/manifest             the committed version and the job's shape (text)
 *   DIR/v<VERSION>/r<R>.bin  logical rank R's checkpoint of VERSION (decimal,
 *                            no padding: v12/r3.bin)
 *   DIR/v<VERSION>/.r<R>.bin.partial  a write in progress (or killed)
 *
 * A rank file: a 64-byte header, then the checkpoint's bytes as packed.
 * Header integers are little-endian, whatever the machine:
 *   0  8 bytes  magic "SLDRANK1"
 *   8  u64      VERSION
 *   16 u64      logical rank R
 *   24 u64      payload bytes (the checkpoint's size)
 *   32 u32      CRC-32 of the payload (the gzip/zlib CRC, ISA-L's
 *               crc32_gzip_refl: Python's zlib.crc32 gives the same)
 *   36 u32      CRC-32 of header bytes 0..35
 *   40 24 bytes zero
 * Each file is written under its .partial name, fsync'd, renamed to its own
 * name and its directory fsync'd: a rank file that exists is whole unless
 * something outside the runtime cut it, which the sizes and the CRC catch.
 *
 * The manifest: lines "KEY VALUE", in this order, and nothing else:
 *   ftslide-sliding-checkpoint 1     (the format; readers refuse others)
 *   version 12
 *   grid torus:4x4x4
 *   spares x:1
 *   ranks_per_node 2
 *   block 2x2x1                      ("-": none given)
 *   logical_ranks 64
 *   bytes_per_rank 4096
 *   end
 * Written to DIR/.manifest.partial, fsync'd, renamed, then DIR fsync'd: a
 * reader sees the old manifest or the new one, never a mixture; that fsync
 * of DIR also makes the version directories created in it durable. The
 * spares are recorded but not compared: a job may resume with other spares.
 * The rank files carry their own CRC, so the manifest lists none.
 *
 * Statuses: SLIDING_OK, SLIDING_ERR_ARG (NULL pointers, sizes, a shape field
 * empty or holding a blank), SLIDING_ERR_NOMEM, SLIDING_ERR_STATE (staging
 * after a failed thread start), SLIDING_ERR_CHECKPOINT_DIR (the directory, a
 * file or the manifest is unusable: a one-line reason says which and why, the
 * errno text included). Reasons are truncated to the buffer given; 256 bytes
 * is plenty for paths of ordinary length.
 *
 * Threads: one application thread uses a sliding_file (the runtime's); the
 * writer thread touches only the staged bytes and the result of their write,
 * under the unit's mutex. The writer blocks every signal, so that the
 * application's handlers run on its own threads, and calls no MPI.
 */
#ifndef SLIDING_FILE_H
#define SLIDING_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "sliding_names.h" /* enum sliding_status */

/* Internal to libsliding: not exported, like sliding_internal.h's. */
#pragma GCC visibility push(hidden)

/* The job a checkpoint belongs to: what the manifest records and what
 * sliding_file_latest compares. Strings are the runtime's own texts, without
 * blanks (they are one word of a manifest line), at most
 * SLIDING_FILE_TEXT_MAX characters. */
typedef struct sliding_file_shape {
    const char *grid;        /* "torus:4x4x4" (compared) */
    const char *spares;      /* "x:1" (recorded only: spares may change) */
    int32_t ranks_per_node;  /* K >= 1 (compared) */
    const char *block;       /* "2x2x1"; NULL or "" for none, written "-" (compared) */
    int64_t logical_ranks;   /* >= 1 (compared) */
    uint64_t bytes_per_rank; /* every rank's registered bytes, packed (compared) */
} sliding_file_shape;

#define SLIDING_FILE_TEXT_MAX 255

/* Size of the header before a rank file's payload. */
#define SLIDING_FILE_HEADER_BYTES 64

/* What staging and writing have cost so far (sliding_file_stats). */
typedef struct sliding_file_stats {
    double last_copy_seconds;    /* the last stage's copy into the staging buffer */
    double last_wait_seconds;    /* the last stage's wait for the write before it */
    double total_wait_seconds;   /* every stage's wait, summed */
    double last_write_seconds;   /* the last finished write: CRC, write, fsync, rename */
    int64_t staged;              /* stages so far */
    int64_t written;             /* writes that succeeded */
    int64_t failed;              /* writes that failed */
} sliding_file_stats;

typedef struct sliding_file sliding_file;

/* Whether dir exists or can be created (mkdir -p, mode 0777 less the umask)
 * and is writable: creates a probe file in it, unique to this host and
 * process, and removes it. SLIDING_ERR_CHECKPOINT_DIR with the reason in why
 * ("cannot create /a/b: Not a directory", "/a/b is not writable: Permission
 * denied"). Cost: a few metadata operations on dir's file system. */
int sliding_file_check_dir(const char *dir, char *why, size_t why_len);

/* A persistent level writing into dir every `every`-th commit (every >= 1).
 * Starts no thread and touches no file (sliding_file_check_dir does). */
int sliding_file_new(const char *dir, int64_t every, sliding_file **out);

/* Waits for a write in flight to end, joins the writer and frees f and its
 * staging buffer (NULL: nothing). Cost: at most the rest of one write. */
void sliding_file_free(sliding_file *f);

/* 1 when the committed_count-th commit (counted from 1) is one to write,
 * i.e. a positive multiple of `every`; else 0. O(1). */
int sliding_file_due(const sliding_file *f, int64_t committed_count);

/* Copies bytes[0..n-1], logical rank `logical_rank`'s packed checkpoint of
 * `version` (>= 0), into the staging buffer and hands it to the writer;
 * returns once copied. Waits first if the previous write still runs (see
 * above). n may be 0 (an empty file of header only). SLIDING_ERR_NOMEM when
 * the buffer cannot grow, SLIDING_ERR_STATE when the writer thread cannot be
 * started (reason in sliding_file_error). The outcome of the previous write
 * is replaced: read it with sliding_file_done first. Cost: O(n) memcpy (plus
 * the page faults of a buffer grown) and the wait, if any. */
int sliding_file_stage(sliding_file *f, int64_t version, int64_t logical_rank, const void *bytes, size_t n);

/* Non-blocking: the outcome of the last staged write. *version is its version
 * (-1 if nothing was staged), *finished 1 once it is over (or nothing was
 * staged), 0 while it runs. SLIDING_OK unless it finished and failed:
 * SLIDING_ERR_CHECKPOINT_DIR, with the reason (errno text included) in
 * sliding_file_error. O(1): one mutex. */
int sliding_file_done(sliding_file *f, int64_t *version, int *finished);

/* As sliding_file_done, but waits for the write to end (*finished is then
 * always 1). For the end of a run, before the last manifest, and for tests. */
int sliding_file_wait(sliding_file *f, int64_t *version);

/* Writes DIR/manifest naming `version`, which every rank must have written
 * (the caller knows it from an agreement; this does not look), with `shape`.
 * Then removes the directories of older versions (v<N>, N < version), best
 * effort: a failure there changes nothing a reader sees and is not reported.
 * Newer directories stay: ranks may be writing the next version. Call from
 * one process. SLIDING_ERR_CHECKPOINT_DIR (reason in sliding_file_error) when
 * the manifest cannot be written: the previous one then still holds. Cost:
 * two fsyncs, plus one unlink per rank file of each version removed. */
int sliding_file_commit_manifest(sliding_file *f, int64_t version, const sliding_file_shape *shape);

/* The reason of the last failure of stage, done, wait or commit_manifest on
 * f ("" if none): one line, valid until the next of those calls. */
const char *sliding_file_error(const sliding_file *f);

/* Costs of staging and writing so far (out must not be NULL). */
void sliding_file_stats_get(sliding_file *f, sliding_file_stats *out);

/* The version to resume from: reads DIR/manifest and compares its shape with
 * `expected`. SLIDING_OK with *version the committed version; SLIDING_OK with
 * *version -1 and why "no manifest ..." when DIR or its manifest does not
 * exist (nothing to resume); SLIDING_ERR_CHECKPOINT_DIR when the manifest
 * cannot be read, is malformed, names a version whose directory is missing,
 * or records another grid, K, block, rank count or byte count than expected
 * (why names the field and both values). The rank files are not opened:
 * sliding_file_read checks each. Cost: one small file read and one stat. */
int sliding_file_latest(const char *dir, const sliding_file_shape *expected, int64_t *version, char *why,
                        size_t why_len);

/* Reads logical rank `logical_rank`'s checkpoint of `version` from DIR into
 * buf, exactly `bytes` bytes. SLIDING_ERR_CHECKPOINT_DIR with the reason when
 * the file is missing or unreadable, is shorter or longer than its header
 * says, holds another version, rank or size, or fails its CRC. buf may have
 * been written to then. Cost: one read of the file, O(bytes) CRC. */
int sliding_file_read(const char *dir, int64_t version, int64_t logical_rank, void *buf, size_t bytes,
                      char *why, size_t why_len);

#pragma GCC visibility pop

#endif
