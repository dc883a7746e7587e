/* The erasure code and stripe layout of sliding_erasure.h, on ISA-L. No MPI. */
#include "sliding_erasure.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <isa-l/erasure_code.h>

/* ISA-L takes lengths as int: longer chunks go through it in pieces of this
 * many bytes (a multiple of 64, so every piece but the last stays aligned as
 * the buffers are). The unit test builds with small pieces to cover the loop. */
#ifndef SLIDING_ERASURE_PIECE_BYTES
#define SLIDING_ERASURE_PIECE_BYTES ((size_t)INT_MAX & ~(size_t)63)
#endif
#define PIECE_BYTES ((size_t)(SLIDING_ERASURE_PIECE_BYTES))

struct sliding_code {
    int k, m;
    unsigned char *matrix; /* (k + m) x k, row-major: identity rows, then the m Cauchy rows */
    unsigned char *tables; /* ec_init_tables() of the m parity rows: 32 k m bytes */
};

int sliding_code_new(int k, int m, sliding_code **out)
{
    if (!out || k < 1 || m < 1 || k > SLIDING_CODE_MAX_CHUNKS - m)
        return SLIDING_ERR_ARG;
    size_t rows = (size_t)(k + m);
    sliding_code *c = malloc(sizeof *c + rows * (size_t)k + 32 * (size_t)k * (size_t)m);
    if (!c)
        return SLIDING_ERR_NOMEM;
    c->k = k;
    c->m = m;
    c->matrix = (unsigned char *)(c + 1);
    c->tables = c->matrix + rows * (size_t)k;
    gf_gen_cauchy1_matrix(c->matrix, k + m, k);
    ec_init_tables(k, m, c->matrix + (size_t)k * (size_t)k, c->tables);
    *out = c;
    return SLIDING_OK;
}

void sliding_code_free(sliding_code *c)
{
    free(c);
}

int sliding_code_data_chunks(const sliding_code *c)
{
    return c ? c->k : 0;
}

int sliding_code_parity_chunks(const sliding_code *c)
{
    return c ? c->m : 0;
}

/* Whether n buffers are all given. */
static int buffers_given(int n, unsigned char *const *buf)
{
    if (!buf)
        return 0;
    for (int i = 0; i < n; i++)
        if (!buf[i])
            return 0;
    return 1;
}

/* ec_encode_data() over len bytes, however long: `rows` outputs of the
 * k inputs through `tables`, PIECE_BYTES at a time. */
static void encode_pieces(int k, int rows, unsigned char *tables, size_t len, unsigned char *const *in,
                          unsigned char *const *out)
{
    unsigned char *src[SLIDING_CODE_MAX_CHUNKS], *dst[SLIDING_CODE_MAX_CHUNKS];
    for (size_t done = 0; done < len;) {
        size_t piece = len - done < PIECE_BYTES ? len - done : PIECE_BYTES;
        for (int j = 0; j < k; j++)
            src[j] = in[j] + done;
        for (int j = 0; j < rows; j++)
            dst[j] = out[j] + done;
        ec_encode_data((int)piece, k, rows, tables, src, dst);
        done += piece;
    }
}

int sliding_code_encode(const sliding_code *c, size_t len, unsigned char *const *data,
                        unsigned char *const *parity)
{
    if (!c || !buffers_given(c->k, data) || !buffers_given(c->m, parity))
        return SLIDING_ERR_ARG;
    encode_pieces(c->k, c->m, c->tables, len, data, parity);
    return SLIDING_OK;
}

int sliding_code_decode(const sliding_code *c, size_t len, const int *have, unsigned char *const *have_buf,
                        int nwant, const int *want, unsigned char *const *want_buf)
{
    if (!c || !have || !buffers_given(c->k, have_buf) || nwant < 0 || nwant > c->k + c->m)
        return SLIDING_ERR_ARG;
    if (nwant > 0 && (!want || !buffers_given(nwant, want_buf)))
        return SLIDING_ERR_ARG;
    int k = c->k, n = c->k + c->m;
    unsigned char seen[SLIDING_CODE_MAX_CHUNKS] = {0};
    for (int i = 0; i < k; i++) {
        if (have[i] < 0 || have[i] >= n || seen[have[i]])
            return SLIDING_ERR_ARG;
        seen[have[i]] = 1;
    }
    for (int w = 0; w < nwant; w++)
        if (want[w] < 0 || want[w] >= n)
            return SLIDING_ERR_ARG;
    if (nwant == 0 || len == 0)
        return SLIDING_OK;

    /* The present chunks are S d, S the rows `have` of the encoding matrix
     * and d the data; so d = S^-1 (present), and chunk w, row A_w of the
     * matrix, is A_w S^-1 (present): one decoding row per wanted chunk. */
    size_t kk = (size_t)k * (size_t)k;
    unsigned char *work = malloc(2 * kk + (size_t)nwant * (size_t)k * 33);
    if (!work)
        return SLIDING_ERR_NOMEM;
    unsigned char *present = work, *inverse = work + kk, *rows = work + 2 * kk;
    unsigned char *tables = rows + (size_t)nwant * (size_t)k;
    for (int i = 0; i < k; i++)
        memcpy(present + (size_t)i * (size_t)k, c->matrix + (size_t)have[i] * (size_t)k, (size_t)k);
    /* Any k rows of a Cauchy-based matrix are independent: with distinct
     * positions, checked above, the inversion cannot fail. */
    if (gf_invert_matrix(present, inverse, k) != 0) {
        free(work);
        return SLIDING_ERR_ARG;
    }
    for (int w = 0; w < nwant; w++) {
        unsigned char *row = rows + (size_t)w * (size_t)k;
        const unsigned char *a = c->matrix + (size_t)want[w] * (size_t)k;
        for (int j = 0; j < k; j++) {
            unsigned char sum = 0;
            for (int l = 0; l < k; l++)
                sum ^= gf_mul(a[l], inverse[(size_t)l * (size_t)k + (size_t)j]);
            row[j] = sum;
        }
    }
    ec_init_tables(k, nwant, rows, tables);
    encode_pieces(k, nwant, tables, len, have_buf, want_buf);
    free(work);
    return SLIDING_OK;
}

int sliding_stripe_chunk_bytes(size_t bytes, int k, size_t *chunk)
{
    if (!chunk || k < 1)
        return SLIDING_ERR_ARG;
    *chunk = bytes / (size_t)k + (bytes % (size_t)k != 0);
    return SLIDING_OK;
}

int sliding_stripe_chunk_extent(size_t bytes, int k, int d, size_t *offset, size_t *length)
{
    size_t c;
    if (!offset || !length || d < 0 || d >= k || sliding_stripe_chunk_bytes(bytes, k, &c) != SLIDING_OK)
        return SLIDING_ERR_ARG;
    size_t start = (size_t)d * c < bytes ? (size_t)d * c : bytes;
    *offset = start;
    *length = bytes - start < c ? bytes - start : c;
    return SLIDING_OK;
}

/* A group of g members with m parity chunks per stripe: 1 <= m < g, and a
 * code word of g chunks that sliding_code_new() can build. */
static int group_valid(int g, int m)
{
    return m >= 1 && m < g && g <= SLIDING_CODE_MAX_CHUNKS;
}

/* Among 0..g-1, the values outside the window of m consecutive values that
 * starts at `start` and wraps around past g-1, in ascending order: the n-th
 * of them, and the rank of x (outside the window) among them. When the
 * window wraps, the values outside are one run; otherwise two, around it. */
static int nth_outside(int g, int m, int start, int n)
{
    int wrapped = start + m - g; /* window values at 0..wrapped-1 */
    if (wrapped > 0)
        return wrapped + n;
    return n < start ? n : n + m;
}

static int rank_outside(int g, int m, int start, int x)
{
    int wrapped = start + m - g;
    if (wrapped > 0)
        return x - wrapped;
    return x < start ? x : x - m;
}

int sliding_stripe_member(int g, int m, int s, int p, int *member)
{
    if (!member || !group_valid(g, m) || s < 0 || s >= g || p < 0 || p >= g)
        return SLIDING_ERR_ARG;
    int k = g - m;
    *member = p < k ? nth_outside(g, m, s, p) : (s + p - k) % g;
    return SLIDING_OK;
}

int sliding_stripe_position(int g, int m, int s, int i, int *position)
{
    if (!position || !group_valid(g, m) || s < 0 || s >= g || i < 0 || i >= g)
        return SLIDING_ERR_ARG;
    int t = (i - s + g) % g; /* parity t of stripe s if t < m */
    *position = t < m ? g - m + t : rank_outside(g, m, s, i);
    return SLIDING_OK;
}

int sliding_stripe_data_place(int g, int m, int i, int d, int *s, int *p)
{
    if (!s || !p || !group_valid(g, m) || i < 0 || i >= g || d < 0 || d >= g - m)
        return SLIDING_ERR_ARG;
    /* Member i keeps parity of the stripes i-m+1 .. i (mod g): a window too. */
    int stripe = nth_outside(g, m, (i - m + 1 + g) % g, d);
    *s = stripe;
    *p = rank_outside(g, m, stripe, i);
    return SLIDING_OK;
}

int sliding_stripe_parity_kept(int g, int m, int i, int *stripes)
{
    if (!stripes || !group_valid(g, m) || i < 0 || i >= g)
        return SLIDING_ERR_ARG;
    for (int t = 0; t < m; t++)
        stripes[t] = (i - t + g) % g;
    return SLIDING_OK;
}
