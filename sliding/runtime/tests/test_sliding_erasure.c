/* Unit tests of sliding_erasure.c (the erasure code and the stripe layout).
 * Usage: test_sliding_erasure GROUP, GROUP one of code, layout, errors,
 * mislabelled (no GROUP: all). tests/test_sliding_erasure.py builds it with
 * the system cc and runs each group as its own test. */
#include "sliding_erasure.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/tests/unit_check.h"

/* ---- helpers -------------------------------------------------------------- */



/* A code word of k + m chunks of len bytes: random data, parity encoded. */
typedef struct word {
    int k, m;
    size_t len;
    unsigned char *chunk[SLIDING_CODE_MAX_CHUNKS];
} word;

static word make_word(const sliding_code *code, int k, int m, size_t len)
{
    word w = {k, m, len, {0}};
    for (int i = 0; i < k + m; i++) {
        w.chunk[i] = alloc_or_die(len);
        for (size_t b = 0; b < len; b++)
            w.chunk[i][b] = i < k ? (unsigned char)rng_next() : 0xA5; /* parity: garbage to overwrite */
    }
    int rc = sliding_code_encode(code, len, w.chunk, w.chunk + k);
    CHECK(rc == SLIDING_OK, "encode k=%d m=%d len=%zu: %d", k, m, len, rc);
    return w;
}

static void free_word(word *w)
{
    for (int i = 0; i < w->k + w->m; i++)
        free(w->chunk[i]);
}

/* Erases the chunks of `lost` (a bit per position; positions 0..31),
 * rebuilds them from the first k present ones, listed in a shuffled order,
 * and returns whether each came back bit-identical. */
static int rebuilds(const sliding_code *code, const word *w, uint32_t lost)
{
    int n = w->k + w->m, have[SLIDING_CODE_MAX_CHUNKS], want[SLIDING_CODE_MAX_CHUNKS], nhave = 0, nwant = 0;
    unsigned char *have_buf[SLIDING_CODE_MAX_CHUNKS] = {0}, *want_buf[SLIDING_CODE_MAX_CHUNKS] = {0};
    for (int i = 0; i < n; i++) {
        if (i < 32 && (lost >> i & 1))
            want[nwant++] = i;
        else if (nhave < w->k)
            have[nhave++] = i;
    }
    for (int i = nhave - 1; i > 0; i--) { /* any order: shuffle */
        int j = (int)(rng_next() % (uint64_t)(i + 1)), t = have[i];
        have[i] = have[j];
        have[j] = t;
    }
    for (int i = 0; i < nhave; i++)
        have_buf[i] = w->chunk[have[i]];
    for (int i = 0; i < nwant; i++) {
        want_buf[i] = alloc_or_die(w->len);
        memset(want_buf[i], 0x5A, w->len);
    }
    int rc = sliding_code_decode(code, w->len, have, have_buf, nwant, want, want_buf);
    int same = rc == SLIDING_OK;
    for (int i = 0; i < nwant; i++) {
        same = same && memcmp(want_buf[i], w->chunk[want[i]], w->len) == 0;
        free(want_buf[i]);
    }
    return same;
}

static int popcount(uint32_t x)
{
    int n = 0;
    for (; x; x &= x - 1)
        n++;
    return n;
}

/* ---- the code --------------------------------------------------------------- */

/* Every erasure of up to m chunks, data and parity, of random words of
 * several lengths (1, below ISA-L's SIMD width, not multiples of 32) comes
 * back bit-identical. */
static void test_code(void)
{
    static const int km[][2] = {{3, 1}, {7, 1}, {6, 2}, {1, 1}, {4, 3}};
    static const size_t lengths[] = {1, 2, 15, 31, 32, 33, 64, 100, 1000, 4097, 65537};
    for (size_t c = 0; c < sizeof km / sizeof km[0]; c++) {
        int k = km[c][0], m = km[c][1], n = k + m;
        sliding_code *code = NULL;
        int rc = sliding_code_new(k, m, &code);
        CHECK(rc == SLIDING_OK && code, "new k=%d m=%d: %d", k, m, rc);
        if (!code)
            continue;
        CHECK(sliding_code_data_chunks(code) == k && sliding_code_parity_chunks(code) == m, "k=%d m=%d", k, m);
        for (size_t l = 0; l < sizeof lengths / sizeof lengths[0]; l++) {
            word w = make_word(code, k, m, lengths[l]);
            int tried = 0;
            for (uint32_t lost = 0; lost < (1u << n); lost++) {
                if (popcount(lost) > m)
                    continue;
                tried++;
                CHECK(rebuilds(code, &w, lost), "k=%d m=%d len=%zu lost mask 0x%x not rebuilt", k, m,
                      lengths[l], lost);
            }
            CHECK(tried > n, "k=%d m=%d: only %d erasures tried", k, m, tried);
            /* Encoding is deterministic: the same data gives the same parity. */
            unsigned char *again[SLIDING_CODE_MAX_CHUNKS];
            for (int t = 0; t < m; t++)
                again[t] = alloc_or_die(w.len);
            CHECK(sliding_code_encode(code, w.len, w.chunk, again) == SLIDING_OK, "re-encode");
            for (int t = 0; t < m; t++) {
                CHECK(memcmp(again[t], w.chunk[k + t], w.len) == 0, "k=%d m=%d parity %d differs", k, m, t);
                free(again[t]);
            }
            free_word(&w);
        }
        /* Length 0: nothing to do, nothing touched. */
        unsigned char byte = 7, *one[SLIDING_CODE_MAX_CHUNKS];
        for (int i = 0; i < n; i++)
            one[i] = &byte;
        CHECK(sliding_code_encode(code, 0, one, one) == SLIDING_OK && byte == 7, "len 0");
        sliding_code_free(code);
    }
    /* The widest code word: any m of 255 chunks. */
    sliding_code *wide = NULL;
    CHECK(sliding_code_new(250, 5, &wide) == SLIDING_OK, "k=250 m=5");
    if (wide) {
        word w = make_word(wide, 250, 5, 77);
        CHECK(rebuilds(wide, &w, 0x1Fu), "first 5 data chunks");
        free_word(&w);
        sliding_code_free(wide);
    }
    sliding_code_free(NULL);
}

/* ---- the stripe layout ------------------------------------------------------ */

/* For every group of up to 12 members and every m: each member gives each of
 * its k data chunks to one stripe, at a data position that names it back;
 * keeps exactly m parity chunks; no stripe takes two chunks of one member;
 * and losing any m members leaves at least k chunks of every stripe. */
static void test_layout(void)
{
    for (int g = 2; g <= 12; g++) {
        for (int m = 1; m < g; m++) {
            int k = g - m;
            int holder[12][12];   /* [stripe][position] -> member */
            int data_from[12][12]; /* [stripe][position] -> member whose data_place names it, -1 */
            int parity_kept[12] = {0};
            for (int s = 0; s < g; s++) {
                int from_member[12] = {0};
                for (int p = 0; p < g; p++) {
                    int i = -1, back = -1;
                    CHECK(sliding_stripe_member(g, m, s, p, &i) == SLIDING_OK && i >= 0 && i < g,
                          "g=%d m=%d s=%d p=%d", g, m, s, p);
                    if (i < 0 || i >= g)
                        continue;
                    holder[s][p] = i;
                    data_from[s][p] = -1;
                    from_member[i]++;
                    CHECK(sliding_stripe_position(g, m, s, i, &back) == SLIDING_OK && back == p,
                          "g=%d m=%d s=%d: member %d holds position %d, position() says %d", g, m, s, i, p, back);
                    if (p >= k)
                        CHECK(i == (s + p - k) % g, "g=%d m=%d s=%d parity %d at member %d", g, m, s, p - k, i);
                    if (p > 0 && p < k)
                        CHECK(holder[s][p - 1] < i, "g=%d m=%d s=%d: data positions not in member order", g, m, s);
                }
                for (int i = 0; i < g; i++)
                    CHECK(from_member[i] == 1, "g=%d m=%d: stripe %d holds %d chunks of member %d", g, m, s,
                          from_member[i], i);
            }
            for (int i = 0; i < g; i++) {
                int last = -1;
                for (int d = 0; d < k; d++) {
                    int s = -1, p = -1;
                    CHECK(sliding_stripe_data_place(g, m, i, d, &s, &p) == SLIDING_OK && s >= 0 && s < g && p >= 0
                              && p < k, "g=%d m=%d member %d chunk %d: stripe %d position %d", g, m, i, d, s, p);
                    if (s < 0 || s >= g || p < 0 || p >= k)
                        continue;
                    CHECK(s > last, "g=%d m=%d member %d: chunk %d's stripe %d not ascending", g, m, i, d, s);
                    last = s;
                    CHECK(holder[s][p] == i, "g=%d m=%d member %d chunk %d at stripe %d position %d held by %d",
                          g, m, i, d, s, p, holder[s][p]);
                    CHECK(data_from[s][p] == -1, "g=%d m=%d stripe %d position %d given twice", g, m, s, p);
                    data_from[s][p] = i;
                }
                int stripes[12];
                CHECK(sliding_stripe_parity_kept(g, m, i, stripes) == SLIDING_OK, "g=%d m=%d i=%d", g, m, i);
                for (int t = 0; t < m; t++) {
                    CHECK(holder[stripes[t]][k + t] == i, "g=%d m=%d member %d: parity %d of stripe %d is at %d",
                          g, m, i, t, stripes[t], holder[stripes[t]][k + t]);
                    parity_kept[i]++;
                    for (int u = 0; u < t; u++)
                        CHECK(stripes[u] != stripes[t], "g=%d m=%d member %d keeps two parities of stripe %d",
                              g, m, i, stripes[t]);
                }
            }
            for (int s = 0; s < g; s++)
                for (int p = 0; p < k; p++)
                    CHECK(data_from[s][p] == holder[s][p], "g=%d m=%d stripe %d data %d: no member gives it",
                          g, m, s, p);
            int kept = 0;
            for (int s = 0; s < g; s++)
                for (int p = k; p < g; p++)
                    kept += holder[s][p] >= 0 && holder[s][p] < g;
            for (int i = 0; i < g; i++)
                CHECK(parity_kept[i] == m, "g=%d m=%d member %d keeps %d parity chunks", g, m, i, parity_kept[i]);
            CHECK(kept == g * m, "g=%d m=%d: %d parity chunks kept", g, m, kept);
            /* Every set of m lost members: each stripe keeps at least k chunks. */
            for (uint32_t lost = 0; lost < (1u << g); lost++) {
                if (popcount(lost) != m)
                    continue;
                for (int s = 0; s < g; s++) {
                    int left = 0;
                    for (int p = 0; p < g; p++)
                        left += !(lost >> holder[s][p] & 1);
                    CHECK(left >= k, "g=%d m=%d lost 0x%x: stripe %d keeps %d chunks", g, m, lost, s, left);
                }
            }
        }
    }
    /* The header's example, g = 4, m = 1. */
    int s = -1, p = -1, i = -1;
    CHECK(sliding_stripe_member(4, 1, 0, 3, &i) == SLIDING_OK && i == 0, "parity of stripe 0 at %d", i);
    CHECK(sliding_stripe_data_place(4, 1, 0, 2, &s, &p) == SLIDING_OK && s == 3 && p == 0, "stripe %d pos %d", s, p);
    /* Chunk sizes and extents: the k chunks cover the checkpoint once, in order. */
    static const size_t sizes[] = {0, 1, 2, 3, 5, 6, 7, 100, 1000003};
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
        for (int k = 1; k <= 9; k++) {
            size_t c = 0, next = 0;
            CHECK(sliding_stripe_chunk_bytes(sizes[z], k, &c) == SLIDING_OK, "B=%zu k=%d", sizes[z], k);
            CHECK(c * (size_t)k >= sizes[z] && (c == 0 || (c - 1) * (size_t)k < sizes[z]), "B=%zu k=%d: c=%zu",
                  sizes[z], k, c);
            for (int d = 0; d < k; d++) {
                size_t off = 1, len = 1;
                CHECK(sliding_stripe_chunk_extent(sizes[z], k, d, &off, &len) == SLIDING_OK, "extent");
                CHECK(len <= c && (len == 0 || off == next) && off <= sizes[z], "B=%zu k=%d d=%d: %zu+%zu",
                      sizes[z], k, d, off, len);
                next += len;
            }
            CHECK(next == sizes[z], "B=%zu k=%d: chunks cover %zu bytes", sizes[z], k, next);
        }
    }
}

/* ---- bad arguments ---------------------------------------------------------- */

static void test_errors(void)
{
    sliding_code *code = NULL;
    CHECK(sliding_code_new(0, 1, &code) == SLIDING_ERR_ARG && !code, "k=0");
    CHECK(sliding_code_new(3, 0, &code) == SLIDING_ERR_ARG && !code, "m=0");
    CHECK(sliding_code_new(-1, 2, &code) == SLIDING_ERR_ARG && !code, "k<0");
    CHECK(sliding_code_new(250, 6, &code) == SLIDING_ERR_ARG && !code, "k+m=256");
    CHECK(sliding_code_new(3, 1, NULL) == SLIDING_ERR_ARG, "out NULL");
    CHECK(sliding_code_new(6, 2, &code) == SLIDING_OK && code, "6+2");
    if (!code)
        return;
    unsigned char bytes[8][16];
    unsigned char *buf[8], *half[8] = {bytes[0], bytes[1], NULL};
    for (int i = 0; i < 8; i++)
        buf[i] = bytes[i];
    CHECK(sliding_code_encode(NULL, 16, buf, buf + 6) == SLIDING_ERR_ARG, "encode NULL code");
    CHECK(sliding_code_encode(code, 16, NULL, buf + 6) == SLIDING_ERR_ARG, "encode NULL data");
    CHECK(sliding_code_encode(code, 16, half, buf + 6) == SLIDING_ERR_ARG, "encode a NULL data chunk");
    CHECK(sliding_code_encode(code, 16, buf, NULL) == SLIDING_ERR_ARG, "encode NULL parity");
    int good[6] = {0, 1, 2, 3, 4, 6}, want[1] = {5};
    unsigned char out[16], *outp[1] = {out};
    CHECK(sliding_code_encode(code, 16, buf, buf + 6) == SLIDING_OK, "encode");
    CHECK(sliding_code_decode(code, 16, good, buf, 1, want, outp) == SLIDING_OK, "decode");
    int repeated[6] = {0, 1, 2, 3, 4, 4}, high[6] = {0, 1, 2, 3, 4, 8}, low[6] = {-1, 1, 2, 3, 4, 5};
    CHECK(sliding_code_decode(code, 16, repeated, buf, 1, want, outp) == SLIDING_ERR_ARG, "repeated have");
    CHECK(sliding_code_decode(code, 16, high, buf, 1, want, outp) == SLIDING_ERR_ARG, "have out of range");
    CHECK(sliding_code_decode(code, 16, low, buf, 1, want, outp) == SLIDING_ERR_ARG, "negative have");
    int want_high[1] = {8}, want_low[1] = {-1};
    CHECK(sliding_code_decode(code, 16, good, buf, 1, want_high, outp) == SLIDING_ERR_ARG, "want out of range");
    CHECK(sliding_code_decode(code, 16, good, buf, 1, want_low, outp) == SLIDING_ERR_ARG, "negative want");
    CHECK(sliding_code_decode(code, 16, good, buf, -1, want, outp) == SLIDING_ERR_ARG, "nwant < 0");
    CHECK(sliding_code_decode(code, 16, good, buf, 9, want, outp) == SLIDING_ERR_ARG, "nwant > k + m");
    CHECK(sliding_code_decode(code, 16, good, buf, 1, NULL, outp) == SLIDING_ERR_ARG, "want NULL");
    CHECK(sliding_code_decode(code, 16, good, buf, 1, want, NULL) == SLIDING_ERR_ARG, "want_buf NULL");
    CHECK(sliding_code_decode(code, 16, NULL, buf, 1, want, outp) == SLIDING_ERR_ARG, "have NULL");
    CHECK(sliding_code_decode(code, 16, good, half, 1, want, outp) == SLIDING_ERR_ARG, "a NULL have_buf");
    CHECK(sliding_code_decode(NULL, 16, good, buf, 1, want, outp) == SLIDING_ERR_ARG, "decode NULL code");
    sliding_code_free(code);

    int x = -7, y = -7, st[4] = {-7, -7, -7, -7};
    size_t z = 9, o = 9;
    CHECK(sliding_stripe_chunk_bytes(10, 0, &z) == SLIDING_ERR_ARG && z == 9, "chunk k=0");
    CHECK(sliding_stripe_chunk_bytes(10, 3, NULL) == SLIDING_ERR_ARG, "chunk NULL");
    CHECK(sliding_stripe_chunk_extent(10, 3, 3, &o, &z) == SLIDING_ERR_ARG && o == 9, "extent d=k");
    CHECK(sliding_stripe_chunk_extent(10, 3, -1, &o, &z) == SLIDING_ERR_ARG, "extent d<0");
    CHECK(sliding_stripe_member(4, 0, 0, 0, &x) == SLIDING_ERR_ARG && x == -7, "member m=0");
    CHECK(sliding_stripe_member(4, 4, 0, 0, &x) == SLIDING_ERR_ARG, "member m=g");
    CHECK(sliding_stripe_member(1, 1, 0, 0, &x) == SLIDING_ERR_ARG, "member g=1");
    CHECK(sliding_stripe_member(256, 1, 0, 0, &x) == SLIDING_ERR_ARG, "member g=256");
    CHECK(sliding_stripe_member(4, 1, 4, 0, &x) == SLIDING_ERR_ARG, "member s=g");
    CHECK(sliding_stripe_member(4, 1, 0, 4, &x) == SLIDING_ERR_ARG, "member p=g");
    CHECK(sliding_stripe_member(4, 1, -1, 0, &x) == SLIDING_ERR_ARG, "member s<0");
    CHECK(sliding_stripe_member(4, 1, 0, 0, NULL) == SLIDING_ERR_ARG, "member NULL");
    CHECK(sliding_stripe_position(4, 1, 0, 4, &x) == SLIDING_ERR_ARG && x == -7, "position i=g");
    CHECK(sliding_stripe_position(4, 1, 4, 0, &x) == SLIDING_ERR_ARG, "position s=g");
    CHECK(sliding_stripe_data_place(4, 1, 0, 3, &x, &y) == SLIDING_ERR_ARG && x == -7 && y == -7, "data d=k");
    CHECK(sliding_stripe_data_place(4, 1, 4, 0, &x, &y) == SLIDING_ERR_ARG, "data i=g");
    CHECK(sliding_stripe_data_place(4, 1, 0, 0, NULL, &y) == SLIDING_ERR_ARG, "data NULL");
    CHECK(sliding_stripe_parity_kept(4, 2, 4, st) == SLIDING_ERR_ARG && st[0] == -7, "parity i=g");
    CHECK(sliding_stripe_parity_kept(4, 4, 0, st) == SLIDING_ERR_ARG, "parity m=g");
    CHECK(sliding_stripe_parity_kept(4, 2, 0, NULL) == SLIDING_ERR_ARG, "parity NULL");
}

/* ---- the checks can fail ---------------------------------------------------- */

/* Chunks handed to decode under wrong positions rebuild wrong bytes, and the
 * comparison the code group relies on sees it: a decoder that ignored the
 * positions, or a test that compared nothing, would pass here. (k >= 2: with
 * k = 1 the Cauchy parity row is 1 and the parity a plain copy.) */
static void test_mislabelled(void)
{
    static const int km[][2] = {{3, 1}, {7, 1}, {6, 2}};
    for (size_t c = 0; c < sizeof km / sizeof km[0]; c++) {
        int k = km[c][0], m = km[c][1];
        sliding_code *code = NULL;
        CHECK(sliding_code_new(k, m, &code) == SLIDING_OK, "new");
        if (!code)
            continue;
        word w = make_word(code, k, m, 333);
        int have[SLIDING_CODE_MAX_CHUNKS], want[1] = {0};
        unsigned char *have_buf[SLIDING_CODE_MAX_CHUNKS], out[333], *outp[1] = {out};
        for (int i = 0; i < k; i++) { /* chunks 1..k: data 1..k-1 and parity 0 */
            have[i] = i + 1;
            have_buf[i] = w.chunk[i + 1];
        }
        CHECK(sliding_code_decode(code, w.len, have, have_buf, 1, want, outp) == SLIDING_OK
                  && memcmp(out, w.chunk[0], w.len) == 0, "k=%d m=%d: chunk 0 from its right positions", k, m);
        have[0] = k; /* data chunk 1 called parity 0, and parity 0 called data 1 */
        have[k - 1] = 1;
        int rc = sliding_code_decode(code, w.len, have, have_buf, 1, want, outp);
        CHECK(rc == SLIDING_OK && memcmp(out, w.chunk[0], w.len) != 0,
              "k=%d m=%d: swapped positions still rebuilt chunk 0 (rc %d)", k, m, rc);
        /* A corrupted present chunk shows up as a wrong rebuild too. */
        word bad = w;
        unsigned char *copy = alloc_or_die(w.len);
        memcpy(copy, w.chunk[k], w.len);
        copy[100] ^= 1;
        bad.chunk[k] = copy;
        CHECK(rebuilds(code, &w, 1u) && !rebuilds(code, &bad, 1u),
              "k=%d m=%d: a flipped parity bit still rebuilt chunk 0", k, m);
        free(copy);
        free_word(&w);
        sliding_code_free(code);
    }
}

int main(int argc, char **argv)
{
    struct { const char *name; void (*fn)(void); } groups[] = {
        {"code", test_code},
        {"layout", test_layout},
        {"errors", test_errors},
        {"mislabelled", test_mislabelled},
    };
    int ran = 0;
    for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++) {
        if (argc > 1 && strcmp(argv[1], groups[i].name) != 0)
            continue;
        groups[i].fn();
        ran++;
    }
    if (!ran) {
        fprintf(stderr, "unknown group '%s'\n", argv[1]);
        return 2;
    }
    printf("%ld checks, %ld failed\n", checks, failures);
    return failures == 0 ? 0 : 1;
}
