/*
 * sliding_erasure.h -- erasure-coded checkpoints of a group of nodes
 * (internal, no MPI).
 *
 * Two parts: a Reed-Solomon code over GF(2^8) from ISA-L (libisal, Debian's
 * libisal-dev), which turns k data chunks into m parity chunks and rebuilds
 * any m lost chunks from any k that remain; and the stripe layout of a group,
 * pure arithmetic that says which member sends which chunk to whom. The
 * runtime's checkpoint code moves the chunks with MPI; nothing here
 * communicates.
 *
 * The code. A code word is k + m chunks of the same length: positions
 * 0..k-1 are the data, k..k+m-1 the parity. The encoding matrix is ISA-L's
 * Cauchy matrix (identity on top, so the data chunks are stored as they are):
 * every k of its k + m rows are independent, so any k chunks of a word, data
 * or parity, determine the other m. Bytes are independent of one another:
 * byte b of a parity chunk depends only on byte b of the data chunks.
 *
 * The stripe layout. A group has g members, 0..g-1, and keeps m parity
 * chunks per stripe (1 <= m < g); k = g - m. A member's checkpoint of B
 * bytes is cut into k data chunks of c = ceil(B / k) bytes each, the last
 * one padded with zeros (sliding_stripe_chunk_bytes, _chunk_extent). The
 * group has g stripes, 0..g-1, each one code word of k data and m parity
 * chunks of c bytes:
 *   - parity t (0..m-1) of stripe s is kept by member (s + t) mod g: the m
 *     parity keepers of a stripe are a window of m consecutive members,
 *     wrapping around, that starts at member s;
 *   - the data chunks of stripe s come from the g - m = k other members, one
 *     chunk each: data position j is the j-th of them in ascending member
 *     order;
 *   - member i, keeper of parity in the m stripes i, i-1, ..., i-m+1 (mod g),
 *     gives its data chunk d (0..k-1) to the d-th of the other k stripes in
 *     ascending stripe order.
 * So every member holds exactly one chunk of every stripe, either data it
 * gives or parity it keeps: losing any m members loses at most m chunks of
 * each stripe, and the k chunks left rebuild the rest. Each member keeps m
 * parity chunks, m * c bytes, about m / k of its own checkpoint (a buddy
 * copy keeps 1x); its data chunks are its own copy of its checkpoint, which
 * it keeps anyway, and enter the parity of their stripes without being
 * stored elsewhere.
 * Example, g = 4, m = 1 (k = 3): stripe 0's parity is at member 0, its data
 * chunks come from members 1, 2, 3; member 0 gives its chunks 0, 1, 2 to
 * stripes 1, 2, 3.
 *
 * Every function returns SLIDING_OK or SLIDING_ERR_ARG (bad sizes, indices or
 * NULL pointers; outputs untouched then); sliding_code_new and
 * sliding_code_decode (its work space) also SLIDING_ERR_NOMEM. The layout
 * functions cost O(1) (_parity_kept O(m)).
 */
#ifndef SLIDING_ERASURE_H
#define SLIDING_ERASURE_H

#include <stddef.h>

#include "sliding_names.h" /* enum sliding_status */

/* Internal to libsliding: not exported, like sliding_internal.h's. */
#pragma GCC visibility push(hidden)

/* The largest code word ISA-L's Cauchy matrices keep every k of k + m rows
 * independent for (GF(2^8) has 256 elements). */
#define SLIDING_CODE_MAX_CHUNKS 255

/* A Reed-Solomon code of k data and m parity chunks: the encoding matrix and
 * ISA-L's expanded tables for the parity rows. Read-only once built: threads
 * may share one. */
typedef struct sliding_code sliding_code;

/* A code of k data and m parity chunks, 1 <= k, 1 <= m, k + m <= 255
 * (SLIDING_CODE_MAX_CHUNKS). Cost O((k + m) k) time and memory (32 k m bytes
 * of tables). */
int sliding_code_new(int k, int m, sliding_code **out);

/* Frees c (NULL: nothing). */
void sliding_code_free(sliding_code *c);

/* k and m of c (0 for a NULL c). */
int sliding_code_data_chunks(const sliding_code *c);
int sliding_code_parity_chunks(const sliding_code *c);

/* Computes the m parity chunks parity[0..m-1] of the k data chunks
 * data[0..k-1], len bytes each (len 0: nothing). The parity buffers must not
 * overlap the data. Cost O(len k m) byte operations, ISA-L's SIMD code. */
int sliding_code_encode(const sliding_code *c, size_t len, unsigned char *const *data,
                        unsigned char *const *parity);

/* Rebuilds chunks want[0..nwant-1] of a code word into want_buf[...] from k
 * chunks that are there: have[0..k-1], distinct positions (0..k+m-1, any
 * order), whose bytes are have_buf[0..k-1]; len bytes each. A wanted
 * position may be one of have (it is copied) or appear twice; 0 <= nwant <=
 * k + m. The wanted buffers must not overlap the present ones.
 * SLIDING_ERR_ARG for a position out of range, a repeated position in have,
 * or NULL buffers. The decoding matrix is computed on each call: a k x k
 * inversion, O(k^3 + nwant k^2) field operations and 32 k nwant bytes of
 * tables, small beside the O(len k nwant) of the data once len is a few
 * hundred bytes. */
int sliding_code_decode(const sliding_code *c, size_t len, const int *have, unsigned char *const *have_buf,
                        int nwant, const int *want, unsigned char *const *want_buf);

/* c = ceil(bytes / k): the size of each of the k data chunks a checkpoint of
 * `bytes` bytes is cut into (0 for 0 bytes). k >= 1. */
int sliding_stripe_chunk_bytes(size_t bytes, int k, size_t *chunk);

/* The part of a checkpoint of `bytes` bytes in data chunk d (0..k-1): it
 * starts at *offset and holds *length bytes, length <= c; the remaining
 * c - length bytes of the chunk are zeros (only the last chunks hold fewer,
 * possibly none when bytes < k). */
int sliding_stripe_chunk_extent(size_t bytes, int k, int d, size_t *offset, size_t *length);

/* The member holding position p (0..g-1) of stripe s (0..g-1) in a group of
 * g members keeping m parity chunks per stripe: for p < k the member giving
 * data chunk p, for p >= k the keeper of parity p - k. */
int sliding_stripe_member(int g, int m, int s, int p, int *member);

/* The inverse: the position (0..g-1) member i holds in stripe s. Every
 * member holds exactly one position of every stripe. */
int sliding_stripe_position(int g, int m, int s, int i, int *position);

/* Where member i's data chunk d (0..k-1) goes: stripe *s, at data position
 * *p (0..k-1) of it. */
int sliding_stripe_data_place(int g, int m, int i, int d, int *s, int *p);

/* The stripes member i keeps parity of: stripes[t] is the stripe whose parity
 * t (code word position k + t) it keeps, t = 0..m-1; stripes has room for m. */
int sliding_stripe_parity_kept(int g, int m, int i, int *stripes);

#pragma GCC visibility pop

#endif
