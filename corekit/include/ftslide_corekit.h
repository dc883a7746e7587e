/*
 * ftslide_corekit.h - the small pure helpers of the protocol cores, written
 * once: the BMG broadcast (revoke-bmg/core/src/bmg.c) and the ERA agreement
 * (coll-ftagree/core/src/era.c) both include it.
 *
 *   - little-endian wire fields (u32, u64);
 *   - sorted uint32 arrays (ranks): search and insertion into an array that
 *     already has room; allocation and memory accounting stay in each core;
 *   - the k-nomial tree over 0..n-1 rooted at 0: parent and children.
 *
 * Static inline functions only: no I/O, no MPI, no globals, no allocation.
 */
#ifndef FTSLIDE_COREKIT_H
#define FTSLIDE_COREKIT_H

#include <stdint.h>
#include <string.h>

/* ---- wire fields (little-endian) ------------------------------------------ */

static inline void fck_put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static inline void fck_put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static inline uint32_t fck_get_u32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
    return v;
}

static inline uint64_t fck_get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* ---- sorted uint32 arrays --------------------------------------------------- */

/* Index of the first element >= x in the ascending v[0..n). */
static inline uint32_t fck_lower(const uint32_t *v, uint32_t n, uint32_t x)
{
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (v[mid] < x) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* 1 if x is in the ascending v[0..n); *at: its index, or where it would go. */
static inline int fck_find(const uint32_t *v, uint32_t n, uint32_t x, uint32_t *at)
{
    *at = fck_lower(v, n, x);
    return *at < n && v[*at] == x;
}

static inline int fck_has(const uint32_t *v, uint32_t n, uint32_t x)
{
    uint32_t i;
    return fck_find(v, n, x, &i);
}

/* Shifts v[i..n) up by one and writes x at i. v must have room for n + 1
 * elements; the caller counts the new one. */
static inline void fck_insert_at(uint32_t *v, uint32_t n, uint32_t i, uint32_t x)
{
    memmove(v + i + 1, v + i, (size_t)(n - i) * sizeof *v);
    v[i] = x;
}

/* ---- k-nomial tree ---------------------------------------------------------- */
/* Over 0..n-1, rooted at 0: the parent of v > 0 is v with its lowest nonzero
 * base-k digit cleared. Heap-ordered (parent < child). k >= 2. */

/* Weight of the lowest nonzero base-k digit of v > 0. */
static inline uint64_t fck_low_digit(uint32_t k, uint32_t v)
{
    uint64_t w = 1;
    while ((v / w) % k == 0) w *= k;
    return w;
}

static inline uint32_t fck_knomial_parent(uint32_t k, uint32_t v)
{
    uint64_t w = fck_low_digit(k, v);
    return (uint32_t)(v - (v / w) % k * w); /* that digit cleared */
}

/* Appends the children of v (< n) to out[*cnt..cap), each written as
 * (child + shift) % n (shift < n: the same tree rooted at `shift`). They are
 * v + m*w for m = 1..k-1 and every power w of k below v's lowest nonzero
 * digit (every power for the root), below n, in that order (w, then m), all
 * distinct. *cnt counts them all, also those beyond cap. */
static inline void fck_knomial_children(uint32_t n, uint32_t k, uint32_t v, uint32_t shift, uint32_t *out,
                                        uint32_t cap, uint32_t *cnt)
{
    uint64_t low = v ? fck_low_digit(k, v) : UINT64_MAX;
    /* w < n <= UINT32_MAX and m < k: no product below overflows */
    for (uint64_t w = 1; w < low && (uint64_t)v + w < n; w *= k) {
        for (uint64_t m = 1; m < k && (uint64_t)v + m * w < n; m++) {
            if (*cnt < cap) out[*cnt] = (uint32_t)(((uint64_t)v + m * w + shift) % n);
            (*cnt)++;
        }
    }
}

#endif /* FTSLIDE_COREKIT_H */
