/* Attention scores of 8 cache positions at once (AVX2; dispatched at run time by
 * src/cpu/backend_cpu.c). Lane j of the vector is position j's score: the dot product of q
 * with its K row accumulated in d order — product rounded, then added, from 0.0f — and then
 * multiplied by scale: exactly the scalar loop's operations, so the bits do not change; the
 * eight positions' dependency chains just run side by side instead of one after another. */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include "kernels.h"
#include "quant/blocks.h"
#include "transpose_avx2.h"


/* Four chains of eight floats side by side (32 consecutive values): a[g] = a[g] + x * r[8g..8g+8),
 * the product rounded, then added. Every 32-wide loop below is this step in its own order. */
/* (the loops over g unrolled by pragma: GCC -O2 otherwise keeps a[] on the stack, and every
 * chain then waits for store forwarding) */
static inline void load32(__m256 a[4], const float *p) {
#pragma GCC unroll 4
    for (int g = 0; g < 4; g++) a[g] = _mm256_loadu_ps(p + 8 * g);
}
static inline void store32(float *p, const __m256 a[4]) {
#pragma GCC unroll 4
    for (int g = 0; g < 4; g++) _mm256_storeu_ps(p + 8 * g, a[g]);
}
static inline void madd32(__m256 a[4], float x, const float *r) {
    const __m256 xv = _mm256_set1_ps(x);
#pragma GCC unroll 4
    for (int g = 0; g < 4; g++) a[g] = _mm256_add_ps(a[g], _mm256_mul_ps(xv, _mm256_loadu_ps(r + 8 * g)));
}

/* o[d] = o[d] + w[i] * rows[i][d] for i = 0..n-1 in order (product rounded, then added): the
 * scalar V loop's operations, eight d at a time. hd % 8 == 0. Four blocks of eight d side by
 * side where hd allows (independent chains: the adds' latencies overlap; each d's chain is
 * unchanged). */
void attn_vacc_avx2(float *o, const float *const *rows, const float *w, int n, int hd) {
    int d0 = 0;
    for (; d0 + 32 <= hd; d0 += 32) {
        __m256 a[4];
        load32(a, o + d0);
        for (int i = 0; i < n; i++) madd32(a, w[i], rows[i] + d0);
        store32(o + d0, a);
    }
    for (; d0 < hd; d0 += 8) {
        __m256 acc = _mm256_loadu_ps(o + d0);
        for (int i = 0; i < n; i++) acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_set1_ps(w[i]), _mm256_loadu_ps(rows[i] + d0)));
        _mm256_storeu_ps(o + d0, acc);
    }
}

void attn_scores8_avx2(const float *q, const float *const *rows, int hd, float scale, float *out) {
    __m256 s = _mm256_setzero_ps();
    for (int d0 = 0; d0 < hd; d0 += 8) {
        __m256 r[8], c[8];
        for (int j = 0; j < 8; j++) r[j] = _mm256_loadu_ps(rows[j] + d0);
        avx2_transpose8(r, c);
        for (int i = 0; i < 8; i++) s = _mm256_add_ps(s, _mm256_mul_ps(_mm256_set1_ps(q[d0 + i]), c[i]));
    }
    _mm256_storeu_ps(out, _mm256_mul_ps(s, _mm256_set1_ps(scale)));
}

/* 32 positions: four groups of eight, their chains side by side (each position's chain is the
 * one of attn_scores8_avx2). */
void attn_scores32_avx2(const float *q, const float *const *rows, int hd, float scale, float *out) {
    __m256 s[4] = { _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps() };
    for (int d0 = 0; d0 < hd; d0 += 8) {
        __m256 c[4][8];
        for (int g = 0; g < 4; g++) {
            __m256 r[8];
            for (int j = 0; j < 8; j++) r[j] = _mm256_loadu_ps(rows[g * 8 + j] + d0);
            avx2_transpose8(r, c[g]);
        }
        for (int i = 0; i < 8; i++) {
            const __m256 qi = _mm256_set1_ps(q[d0 + i]);
            for (int g = 0; g < 4; g++) s[g] = _mm256_add_ps(s[g], _mm256_mul_ps(qi, c[g][i]));
        }
    }
    const __m256 sc = _mm256_set1_ps(scale);
    for (int g = 0; g < 4; g++) _mm256_storeu_ps(out + g * 8, _mm256_mul_ps(s[g], sc));
}

/* ---- decode steps grouped by KV head (backend_cpu.c, attn_dec_*): a block of 32 positions'
 * K rows is converted and transposed once and serves every query head of the group. ---- */

/* kt[d][0..32) = the values d of 32 positions' K rows of one head, converted to f32 and
 * transposed: rows[j] (j < n) points at position j's head_dim values in the cache, f16
 * (int8 = 0) or act_q8_0 blocks (int8 = 1); rows n..31 give zeros. The conversions are those
 * of f16_to_f32_row_f16c and q8_to_f32_row_avx2 (vcvtph2ps; d * q rounded once), the same
 * values. hd % 32 == 0. */
void attn_kt32_avx2(const void *const *rows, int n, int int8, int hd, float *kt) {
    for (int g = 0; g < 4; g++)
        for (int d0 = 0; d0 < hd; d0 += 8) {
            __m256 r[8], c[8];
            for (int jj = 0; jj < 8; jj++) {
                const int j = g * 8 + jj;
                if (j >= n) r[jj] = _mm256_setzero_ps();
                else if (int8) {
                    const act_q8_0 *b = (const act_q8_0 *)rows[j] + d0 / 32;
                    __m256i q = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(b->qs + d0 % 32)));
                    r[jj] = _mm256_mul_ps(_mm256_set1_ps(b->d), _mm256_cvtepi32_ps(q));
                } else r[jj] = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)rows[j] + d0)));
            }
            avx2_transpose8(r, c);
            for (int i = 0; i < 8; i++) _mm256_storeu_ps(kt + (size_t)(d0 + i) * 32 + g * 8, c[i]);
        }
}

/* out[j] = (0.0f + q[0] * kt[0][j] + q[1] * kt[1][j] + ... in d order) * scale for the 32
 * positions j of a transposed block: the scalar loop's operations per position, four groups
 * of eight positions' chains side by side. */
void attn_scores32t_avx2(const float *q, const float *kt, int hd, float scale, float *out) {
    __m256 s[4] = { _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps() };
    for (int d = 0; d < hd; d++) madd32(s, q[d], kt + (size_t)d * 32);
    const __m256 sc = _mm256_set1_ps(scale);
    for (int g = 0; g < 4; g++) s[g] = _mm256_mul_ps(s[g], sc);
    store32(out, s);
}

/* o[d] = o[d] + w[i] * vb[i][d] for i = 0..n-1 in order, d = 0..32 (vb: n rows of 32 floats):
 * the scalar V loop's operations for 32 d, four chains of eight d side by side. */
void attn_vacc32_avx2(float *o, const float *vb, const float *w, int n) {
    __m256 a[4];
    load32(a, o);
    for (int i = 0; i < n; i++) madd32(a, w[i], vb + (size_t)i * 32);
    store32(o, a);
}

/* ---- prompt passes in query tiles grouped by KV head (backend_cpu.c, attn_pt_*): a block of
 * 32 positions' K rows (transposed) or V rows (f32) serves every query row of the tile; two
 * rows at a time share the block's loads. Each row's chains are those of the one-row kernels
 * above (the same operations in the same order), side by side. ---- */

/* attn_scores32t_avx2 for two query rows q0, q1 against the same transposed block kt (the eight
 * chains in named registers: GCC -O2 keeps an array of vectors on the stack, and a chain through
 * memory waits for store forwarding) */
void attn_scores32t2_avx2(const float *q0, const float *q1, const float *kt, int hd, float scale, float *out0,
                          float *out1) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
    for (int d = 0; d < hd; d++) {
        const float *k = kt + (size_t)d * 32;
        const __m256 x = _mm256_set1_ps(q0[d]), y = _mm256_set1_ps(q1[d]);
        const __m256 k0 = _mm256_loadu_ps(k), k1 = _mm256_loadu_ps(k + 8), k2 = _mm256_loadu_ps(k + 16),
                     k3 = _mm256_loadu_ps(k + 24);
        a0 = _mm256_add_ps(a0, _mm256_mul_ps(x, k0)); b0 = _mm256_add_ps(b0, _mm256_mul_ps(y, k0));
        a1 = _mm256_add_ps(a1, _mm256_mul_ps(x, k1)); b1 = _mm256_add_ps(b1, _mm256_mul_ps(y, k1));
        a2 = _mm256_add_ps(a2, _mm256_mul_ps(x, k2)); b2 = _mm256_add_ps(b2, _mm256_mul_ps(y, k2));
        a3 = _mm256_add_ps(a3, _mm256_mul_ps(x, k3)); b3 = _mm256_add_ps(b3, _mm256_mul_ps(y, k3));
    }
    const __m256 sc = _mm256_set1_ps(scale);
    _mm256_storeu_ps(out0, _mm256_mul_ps(a0, sc)); _mm256_storeu_ps(out0 + 8, _mm256_mul_ps(a1, sc));
    _mm256_storeu_ps(out0 + 16, _mm256_mul_ps(a2, sc)); _mm256_storeu_ps(out0 + 24, _mm256_mul_ps(a3, sc));
    _mm256_storeu_ps(out1, _mm256_mul_ps(b0, sc)); _mm256_storeu_ps(out1 + 8, _mm256_mul_ps(b1, sc));
    _mm256_storeu_ps(out1 + 16, _mm256_mul_ps(b2, sc)); _mm256_storeu_ps(out1 + 24, _mm256_mul_ps(b3, sc));
}

/* o[d] = o[d] + w[i] * vb[i][d] for i = 0..n-1 in order, d = 0..hd (vb: n rows of hd floats):
 * per d the scalar V loop's chain; 32 d at a time. hd % 32 == 0. */
void attn_vaccrow_avx2(float *o, const float *vb, int hd, const float *w, int n) {
    for (int d0 = 0; d0 < hd; d0 += 32) {
        __m256 a0 = _mm256_loadu_ps(o + d0), a1 = _mm256_loadu_ps(o + d0 + 8), a2 = _mm256_loadu_ps(o + d0 + 16),
               a3 = _mm256_loadu_ps(o + d0 + 24);
        for (int i = 0; i < n; i++) {
            const float *v = vb + (size_t)i * hd + d0;
            const __m256 x = _mm256_set1_ps(w[i]);
            a0 = _mm256_add_ps(a0, _mm256_mul_ps(x, _mm256_loadu_ps(v)));
            a1 = _mm256_add_ps(a1, _mm256_mul_ps(x, _mm256_loadu_ps(v + 8)));
            a2 = _mm256_add_ps(a2, _mm256_mul_ps(x, _mm256_loadu_ps(v + 16)));
            a3 = _mm256_add_ps(a3, _mm256_mul_ps(x, _mm256_loadu_ps(v + 24)));
        }
        _mm256_storeu_ps(o + d0, a0); _mm256_storeu_ps(o + d0 + 8, a1);
        _mm256_storeu_ps(o + d0 + 16, a2); _mm256_storeu_ps(o + d0 + 24, a3);
    }
}

/* the same for two rows o0 (weights w0) and o1 (weights w1) over the same n V rows */
void attn_vaccrow2_avx2(float *o0, float *o1, const float *vb, int hd, const float *w0, const float *w1, int n) {
    for (int d0 = 0; d0 < hd; d0 += 32) {
        __m256 a0 = _mm256_loadu_ps(o0 + d0), a1 = _mm256_loadu_ps(o0 + d0 + 8), a2 = _mm256_loadu_ps(o0 + d0 + 16),
               a3 = _mm256_loadu_ps(o0 + d0 + 24);
        __m256 b0 = _mm256_loadu_ps(o1 + d0), b1 = _mm256_loadu_ps(o1 + d0 + 8), b2 = _mm256_loadu_ps(o1 + d0 + 16),
               b3 = _mm256_loadu_ps(o1 + d0 + 24);
        for (int i = 0; i < n; i++) {
            const float *v = vb + (size_t)i * hd + d0;
            const __m256 x = _mm256_set1_ps(w0[i]), y = _mm256_set1_ps(w1[i]);
            const __m256 v0 = _mm256_loadu_ps(v), v1 = _mm256_loadu_ps(v + 8), v2 = _mm256_loadu_ps(v + 16),
                         v3 = _mm256_loadu_ps(v + 24);
            a0 = _mm256_add_ps(a0, _mm256_mul_ps(x, v0)); b0 = _mm256_add_ps(b0, _mm256_mul_ps(y, v0));
            a1 = _mm256_add_ps(a1, _mm256_mul_ps(x, v1)); b1 = _mm256_add_ps(b1, _mm256_mul_ps(y, v1));
            a2 = _mm256_add_ps(a2, _mm256_mul_ps(x, v2)); b2 = _mm256_add_ps(b2, _mm256_mul_ps(y, v2));
            a3 = _mm256_add_ps(a3, _mm256_mul_ps(x, v3)); b3 = _mm256_add_ps(b3, _mm256_mul_ps(y, v3));
        }
        _mm256_storeu_ps(o0 + d0, a0); _mm256_storeu_ps(o0 + d0 + 8, a1);
        _mm256_storeu_ps(o0 + d0 + 16, a2); _mm256_storeu_ps(o0 + d0 + 24, a3);
        _mm256_storeu_ps(o1 + d0, b0); _mm256_storeu_ps(o1 + d0 + 8, b1);
        _mm256_storeu_ps(o1 + d0 + 16, b2); _mm256_storeu_ps(o1 + d0 + 24, b3);
    }
}

/* One chunk's softmax pieces for one row of n scores s[0..n): *m = the max (`s > m` from -inf,
 * lane by lane, then over the lanes: the sequential loop's value, NaNs skipped alike; only the
 * sign of a zero maximum may differ, which cannot change s - m's value unless s is zero, nor
 * expf of it), s[p] = expf(s[p] - m) (expf_sub_avx2: the host's bits), *l = 0.0f + s[0] + s[1]
 * + ... in order, then s[p] = s[p] * (1.0f / l) when weights (the V sums' weights). */
void attn_softmax_chunk_avx2(float *s, int n, int weights, float *m_out, float *l_out) {
    __m256 mv = _mm256_set1_ps(-INFINITY);
    int p = 0;
    for (; p + 8 <= n; p += 8) mv = _mm256_max_ps(_mm256_loadu_ps(s + p), mv);   /* s > m ? s : m */
    float lanes[8], m = -INFINITY;
    _mm256_storeu_ps(lanes, mv);
    for (int i = 0; i < 8; i++) if (lanes[i] > m) m = lanes[i];
    for (; p < n; p++) if (s[p] > m) m = s[p];
    expf_sub_avx2(s, n, m);
    float l = 0.0f;
    for (p = 0; p < n; p++) l += s[p];
    if (weights) {
        const float r = 1.0f / l;
        const __m256 rv = _mm256_set1_ps(r);
        for (p = 0; p + 8 <= n; p += 8) _mm256_storeu_ps(s + p, _mm256_mul_ps(_mm256_loadu_ps(s + p), rv));
        for (; p < n; p++) s[p] = s[p] * r;
    }
    *m_out = m;
    *l_out = l;
}
