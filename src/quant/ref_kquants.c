/* Reference functions of the K-quants Q2_K, Q3_K, Q4_K, Q5_K, Q6_K (256-weight super-blocks).
 *
 * Each format first unpacks a block into integer codes and integer sub-block scales
 * (kq_unpack_*: the bit layout lives there, once), then:
 *  - dequantization does the gguf package's float operations in its order, e.g. Q4_K:
 *    w = (h(d) * sc) * q - (h(dmin) * m), each product rounded;
 *  - the dot with an act_q8_K block sums exactly in int32 and forms one partial per
 *    super-block (docs/KERNELS.md section 4):
 *      Q2_K, Q4_K, Q5_K: p = ((float)S * (h(d) * a.d)) - ((float)M * (h(dmin) * a.d))
 *      Q3_K, Q6_K:       p =  (float)S * (h(d) * a.d)
 *    S = sum over sub-blocks of scale * sum(code * a), M = sum of min * (sum of a) using
 *    the activation's bsums (per 16 values).
 * Quantizers are plain round-to-nearest with min/max sub-block scales (test data and
 * synthetic models; no importance matrix). */
#include "ref.h"
#include "quant_canon.h"
#include "../core/util.h"
#include <math.h>
#include <string.h>

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }
static int round_int(float v) { return v == v ? (int)lroundf(v) : 0; }

/* ---- unpacking: codes and sub-block scales ------------------------------------------- */

/* Q2_K: q[j] in 0..3 = qs[32*(j/128) + j%32] >> 2*((j%128)/32); scales[j/16]: low nibble
 * scale, high nibble min (16 sub-blocks of 16). */
static void kq_unpack_q2_K(const block_q2_K *b, int8_t q[QK_K]) {
    for (int j = 0; j < QK_K; j++) q[j] = (int8_t)((b->qs[32 * (j / 128) + j % 32] >> (2 * ((j % 128) / 32))) & 3);
}
/* Q3_K: low 2 bits as Q2_K; hmask[j%32] bit j/32 clear subtracts 4: q in -4..3.
 * 16 6-bit scales: low nibble from scales[i%8] (>> 4 for i >= 8), high 2 bits from
 * scales[8 + i%4] >> 2*(i/4); value minus 32. */
static void kq_unpack_q3_K(const block_q3_K *b, int8_t q[QK_K], int sc[16]) {
    for (int j = 0; j < QK_K; j++) {
        int lo = (b->qs[32 * (j / 128) + j % 32] >> (2 * ((j % 128) / 32))) & 3;
        int hb = (b->hmask[j % 32] >> (j / 32)) & 1;
        q[j] = (int8_t)(lo - (hb ? 0 : 4));
    }
    for (int i = 0; i < 16; i++) {
        int lo = i < 8 ? b->scales[i] & 0x0F : b->scales[i - 8] >> 4;
        int hi = (b->scales[8 + i % 4] >> (2 * (i / 4))) & 3;
        sc[i] = (lo | hi << 4) - 32;
    }
}
/* Q4_K/Q5_K 6-bit scales and mins of the 8 sub-blocks of 32, packed in 12 bytes:
 *   j < 4:  sc = s[j] & 63,                          m = s[j+4] & 63
 *   j >= 4: sc = (s[j+4] & 15) | (s[j-4] >> 6) << 4,  m = (s[j+4] >> 4) | (s[j] >> 6) << 4 */
static void kq_unpack_scale_min(const uint8_t s[12], int sc[8], int m[8]) {
    for (int j = 0; j < 8; j++) {
        if (j < 4) { sc[j] = s[j] & 63; m[j] = s[j + 4] & 63; }
        else { sc[j] = (s[j + 4] & 15) | (s[j - 4] >> 6) << 4; m[j] = (s[j + 4] >> 4) | (s[j] >> 6) << 4; }
    }
}
static void kq_pack_scale_min(uint8_t s[12], const int sc[8], const int m[8]) {
    memset(s, 0, 12);
    for (int j = 0; j < 8; j++) {
        if (j < 4) { s[j] |= (uint8_t)(sc[j] & 63); s[j + 4] |= (uint8_t)(m[j] & 63); }
        else {
            s[j + 4] = (uint8_t)((sc[j] & 15) | (m[j] & 15) << 4);
            s[j - 4] |= (uint8_t)((sc[j] >> 4) << 6);
            s[j] |= (uint8_t)((m[j] >> 4) << 6);
        }
    }
}
/* Q4_K: q[j] = qs[32*(j/64) + j%32] low nibble if (j%64) < 32 else high; Q5_K adds
 * qh[j%32] bit j/32 as bit 4. */
static void kq_unpack_q45_K(const uint8_t *qs, const uint8_t *qh, int8_t q[QK_K]) {
    for (int j = 0; j < QK_K; j++) {
        int v = (qs[32 * (j / 64) + j % 32] >> (4 * ((j % 64) / 32))) & 15;
        if (qh) v |= ((qh[j % 32] >> (j / 32)) & 1) << 4;
        q[j] = (int8_t)v;
    }
}
/* Q6_K: low 4 bits ql[64*(j/128) + j%64] >> 4*((j%128)/64); high 2 bits
 * qh[32*(j/128) + j%32] >> 2*((j%128)/32); value q - 32 in -32..31; int8 scale per 16. */
static void kq_unpack_q6_K(const block_q6_K *b, int8_t q[QK_K]) {
    for (int j = 0; j < QK_K; j++) {
        int lo = (b->ql[64 * (j / 128) + j % 64] >> (4 * ((j % 128) / 64))) & 15;
        int hi = (b->qh[32 * (j / 128) + j % 32] >> (2 * ((j % 128) / 32))) & 3;
        q[j] = (int8_t)((lo | hi << 4) - 32);
    }
}

void q6_K_unpack_ref(const void *blk, int8_t q[QK_K]) { kq_unpack_q6_K((const block_q6_K *)blk, q); }

/* ---- Q2_K ------------------------------------------------------------------------- */
void q2_K_dequant_row_ref(const void *restrict src, float *restrict dst, int64_t n) {
    const block_q2_K *b = src; int8_t q[QK_K];
    for (int64_t i = 0; i < n / QK_K; i++, dst += QK_K) {
        float d = fp16_to_f32(b[i].d), dmin = fp16_to_f32(b[i].dmin);
        kq_unpack_q2_K(&b[i], q);
        for (int j = 0; j < QK_K; j++) {
            float dl = d * (float)(b[i].scales[j / 16] & 15), ml = dmin * (float)(b[i].scales[j / 16] >> 4);
            dst[j] = dl * (float)q[j] - ml;
        }
    }
}
void q2_K_quant_row_ref(const float *restrict src, void *restrict dst, int64_t n) {
    block_q2_K *b = dst;
    for (int64_t i = 0; i < n / QK_K; i++, src += QK_K) {
        float scale[16], mins[16], smax = 0, mmax = 0;
        for (int s = 0; s < 16; s++) {
            float lo = 0.0f, hi = src[16 * s];
            for (int k = 0; k < 16; k++) { lo = fminf(lo, src[16 * s + k]); hi = fmaxf(hi, src[16 * s + k]); }
            scale[s] = (hi - lo) / 3.0f; mins[s] = -lo;
            smax = fmaxf(smax, scale[s]); mmax = fmaxf(mmax, mins[s]);
        }
        b[i].d = f32_to_fp16(smax / 15.0f); b[i].dmin = f32_to_fp16(mmax / 15.0f);
        float d = fp16_to_f32(b[i].d), dmin = fp16_to_f32(b[i].dmin);
        memset(b[i].qs, 0, sizeof b[i].qs);
        for (int s = 0; s < 16; s++) {
            int sc = d > 0 ? clampi(round_int(scale[s] / d), 0, 15) : 0;
            int m = dmin > 0 ? clampi(round_int(mins[s] / dmin), 0, 15) : 0;
            b[i].scales[s] = (uint8_t)(sc | m << 4);
            float dl = d * (float)sc, ml = dmin * (float)m, idl = dl > 0 ? 1.0f / dl : 0.0f;
            for (int k = 0; k < 16; k++) {
                int j = 16 * s + k, qv = clampi(round_int((src[j] + ml) * idl), 0, 3);
                b[i].qs[32 * (j / 128) + j % 32] |= (uint8_t)(qv << (2 * ((j % 128) / 32)));
            }
        }
    }
}
float q2_K_dot_ref(const void *restrict w, const void *restrict a, int64_t n) {
    const block_q2_K *b = w; const act_q8_K *x = a; int8_t q[QK_K];
    canon_acc acc; canon_init(&acc);
    for (int64_t i = 0; i < n / QK_K; i++) {
        kq_unpack_q2_K(&b[i], q);
        int32_t S = 0, M = 0;
        for (int s = 0; s < 16; s++) {
            int32_t t = 0;
            for (int k = 0; k < 16; k++) t += q[16 * s + k] * x[i].qs[16 * s + k];
            S += (b[i].scales[s] & 15) * t;
            M += (b[i].scales[s] >> 4) * x[i].bsums[s];
        }
        float t1 = (float)S * (fp16_to_f32(b[i].d) * x[i].d);
        float t2 = (float)M * (fp16_to_f32(b[i].dmin) * x[i].d);
        canon_add(&acc, i, t1 - t2);
    }
    return canon_finish(&acc);
}

/* ---- Q3_K ------------------------------------------------------------------------- */
void q3_K_dequant_row_ref(const void *restrict src, float *restrict dst, int64_t n) {
    const block_q3_K *b = src; int8_t q[QK_K]; int sc[16];
    for (int64_t i = 0; i < n / QK_K; i++, dst += QK_K) {
        float d = fp16_to_f32(b[i].d);
        kq_unpack_q3_K(&b[i], q, sc);
        for (int j = 0; j < QK_K; j++) dst[j] = (d * (float)sc[j / 16]) * (float)q[j];
    }
}
void q3_K_quant_row_ref(const float *restrict src, void *restrict dst, int64_t n) {
    block_q3_K *b = dst;
    for (int64_t i = 0; i < n / QK_K; i++, src += QK_K) {
        /* sub-block scale: signed extreme / -4 so the extreme uses code -4; super-block d maps
         * the scale of largest magnitude to -32 */
        float scale[16], big = 0.0f;
        for (int s = 0; s < 16; s++) {
            float v = 0.0f;
            for (int k = 0; k < 16; k++) if (fabsf(src[16 * s + k]) > fabsf(v)) v = src[16 * s + k];
            scale[s] = v / -4.0f;
            if (fabsf(scale[s]) > fabsf(big)) big = scale[s];
        }
        b[i].d = f32_to_fp16(big / -32.0f);
        float d = fp16_to_f32(b[i].d), id = d != 0.0f ? 1.0f / d : 0.0f;
        memset(b[i].scales, 0, sizeof b[i].scales);
        memset(b[i].qs, 0, sizeof b[i].qs);
        memset(b[i].hmask, 0, sizeof b[i].hmask);
        for (int s = 0; s < 16; s++) {
            int sc = clampi(round_int(scale[s] * id), -32, 31), u = sc + 32;
            if (s < 8) b[i].scales[s] |= (uint8_t)(u & 15); else b[i].scales[s - 8] |= (uint8_t)((u & 15) << 4);
            b[i].scales[8 + s % 4] |= (uint8_t)((u >> 4) << (2 * (s / 4)));
            float dl = d * (float)sc, idl = dl != 0.0f ? 1.0f / dl : 0.0f;
            for (int k = 0; k < 16; k++) {
                int j = 16 * s + k, qv = clampi(round_int(src[j] * idl), -4, 3) + 4;   /* 0..7 */
                b[i].qs[32 * (j / 128) + j % 32] |= (uint8_t)((qv & 3) << (2 * ((j % 128) / 32)));
                if (qv & 4) b[i].hmask[j % 32] |= (uint8_t)(1 << (j / 32));
            }
        }
    }
}
float q3_K_dot_ref(const void *restrict w, const void *restrict a, int64_t n) {
    const block_q3_K *b = w; const act_q8_K *x = a; int8_t q[QK_K]; int sc[16];
    canon_acc acc; canon_init(&acc);
    for (int64_t i = 0; i < n / QK_K; i++) {
        kq_unpack_q3_K(&b[i], q, sc);
        int32_t S = 0;
        for (int s = 0; s < 16; s++) {
            int32_t t = 0;
            for (int k = 0; k < 16; k++) t += q[16 * s + k] * x[i].qs[16 * s + k];
            S += sc[s] * t;
        }
        canon_add(&acc, i, (float)S * (fp16_to_f32(b[i].d) * x[i].d));
    }
    return canon_finish(&acc);
}

/* ---- Q4_K and Q5_K (shared: 8 sub-blocks of 32, 6-bit scales and mins) ---------------- */
static void q45_K_dequant(const uint8_t *scales, uint16_t dh, uint16_t dminh, const int8_t *q, float *dst) {
    int sc[8], m[8];
    kq_unpack_scale_min(scales, sc, m);
    float d = fp16_to_f32(dh), dmin = fp16_to_f32(dminh);
    for (int j = 0; j < QK_K; j++) {
        float ds = d * (float)sc[j / 32], dm = dmin * (float)m[j / 32];
        dst[j] = ds * (float)q[j] - dm;
    }
}
/* Quantize one super-block to codes 0..qmax with 6-bit scales and mins */
static void q45_K_quant(const float *src, int qmax, uint8_t scales[12], uint16_t *dh, uint16_t *dminh, int8_t q[QK_K]) {
    float scale[8], mins[8], smax = 0, mmax = 0;
    for (int s = 0; s < 8; s++) {
        float lo = 0.0f, hi = src[32 * s];
        for (int k = 0; k < 32; k++) { lo = fminf(lo, src[32 * s + k]); hi = fmaxf(hi, src[32 * s + k]); }
        scale[s] = (hi - lo) / (float)qmax; mins[s] = -lo;
        smax = fmaxf(smax, scale[s]); mmax = fmaxf(mmax, mins[s]);
    }
    *dh = f32_to_fp16(smax / 63.0f); *dminh = f32_to_fp16(mmax / 63.0f);
    float d = fp16_to_f32(*dh), dmin = fp16_to_f32(*dminh);
    int sc[8], m[8];
    for (int s = 0; s < 8; s++) {
        sc[s] = d > 0 ? clampi(round_int(scale[s] / d), 0, 63) : 0;
        m[s] = dmin > 0 ? clampi(round_int(mins[s] / dmin), 0, 63) : 0;
        float ds = d * (float)sc[s], dm = dmin * (float)m[s], ids = ds > 0 ? 1.0f / ds : 0.0f;
        for (int k = 0; k < 32; k++) q[32 * s + k] = (int8_t)clampi(round_int((src[32 * s + k] + dm) * ids), 0, qmax);
    }
    kq_pack_scale_min(scales, sc, m);
}
static float q45_K_partial(const uint8_t *scales, uint16_t dh, uint16_t dminh, const int8_t *q, const act_q8_K *x) {
    int sc[8], m[8];
    kq_unpack_scale_min(scales, sc, m);
    int32_t S = 0, M = 0;
    for (int s = 0; s < 8; s++) {
        int32_t t = 0;
        for (int k = 0; k < 32; k++) t += q[32 * s + k] * x->qs[32 * s + k];
        S += sc[s] * t;
        M += m[s] * (x->bsums[2 * s] + x->bsums[2 * s + 1]);
    }
    float t1 = (float)S * (fp16_to_f32(dh) * x->d);
    float t2 = (float)M * (fp16_to_f32(dminh) * x->d);
    return t1 - t2;
}

void q4_K_dequant_row_ref(const void *restrict src, float *restrict dst, int64_t n) {
    const block_q4_K *b = src; int8_t q[QK_K];
    for (int64_t i = 0; i < n / QK_K; i++, dst += QK_K) {
        kq_unpack_q45_K(b[i].qs, NULL, q);
        q45_K_dequant(b[i].scales, b[i].d, b[i].dmin, q, dst);
    }
}
void q4_K_quant_row_ref(const float *restrict src, void *restrict dst, int64_t n) {
    block_q4_K *b = dst; int8_t q[QK_K];
    for (int64_t i = 0; i < n / QK_K; i++, src += QK_K) {
        q45_K_quant(src, 15, b[i].scales, &b[i].d, &b[i].dmin, q);
        memset(b[i].qs, 0, sizeof b[i].qs);
        for (int j = 0; j < QK_K; j++) b[i].qs[32 * (j / 64) + j % 32] |= (uint8_t)(q[j] << (4 * ((j % 64) / 32)));
    }
}
float q4_K_dot_ref(const void *restrict w, const void *restrict a, int64_t n) {
    const block_q4_K *b = w; const act_q8_K *x = a; int8_t q[QK_K];
    canon_acc acc; canon_init(&acc);
    for (int64_t i = 0; i < n / QK_K; i++) {
        kq_unpack_q45_K(b[i].qs, NULL, q);
        canon_add(&acc, i, q45_K_partial(b[i].scales, b[i].d, b[i].dmin, q, &x[i]));
    }
    return canon_finish(&acc);
}

void q5_K_dequant_row_ref(const void *restrict src, float *restrict dst, int64_t n) {
    const block_q5_K *b = src; int8_t q[QK_K];
    for (int64_t i = 0; i < n / QK_K; i++, dst += QK_K) {
        kq_unpack_q45_K(b[i].qs, b[i].qh, q);
        q45_K_dequant(b[i].scales, b[i].d, b[i].dmin, q, dst);
    }
}
void q5_K_quant_row_ref(const float *restrict src, void *restrict dst, int64_t n) {
    block_q5_K *b = dst; int8_t q[QK_K];
    for (int64_t i = 0; i < n / QK_K; i++, src += QK_K) {
        q45_K_quant(src, 31, b[i].scales, &b[i].d, &b[i].dmin, q);
        memset(b[i].qs, 0, sizeof b[i].qs);
        memset(b[i].qh, 0, sizeof b[i].qh);
        for (int j = 0; j < QK_K; j++) {
            b[i].qs[32 * (j / 64) + j % 32] |= (uint8_t)((q[j] & 15) << (4 * ((j % 64) / 32)));
            if (q[j] & 16) b[i].qh[j % 32] |= (uint8_t)(1 << (j / 32));
        }
    }
}
float q5_K_dot_ref(const void *restrict w, const void *restrict a, int64_t n) {
    const block_q5_K *b = w; const act_q8_K *x = a; int8_t q[QK_K];
    canon_acc acc; canon_init(&acc);
    for (int64_t i = 0; i < n / QK_K; i++) {
        kq_unpack_q45_K(b[i].qs, b[i].qh, q);
        canon_add(&acc, i, q45_K_partial(b[i].scales, b[i].d, b[i].dmin, q, &x[i]));
    }
    return canon_finish(&acc);
}

/* ---- Q6_K ------------------------------------------------------------------------- */
void q6_K_dequant_row_ref(const void *restrict src, float *restrict dst, int64_t n) {
    const block_q6_K *b = src; int8_t q[QK_K];
    for (int64_t i = 0; i < n / QK_K; i++, dst += QK_K) {
        float d = fp16_to_f32(b[i].d);
        kq_unpack_q6_K(&b[i], q);
        for (int j = 0; j < QK_K; j++) dst[j] = (d * (float)b[i].scales[j / 16]) * (float)q[j];
    }
}
void q6_K_quant_row_ref(const float *restrict src, void *restrict dst, int64_t n) {
    block_q6_K *b = dst;
    for (int64_t i = 0; i < n / QK_K; i++, src += QK_K) {
        float scale[16], big = 0.0f;
        for (int s = 0; s < 16; s++) {
            float v = 0.0f;
            for (int k = 0; k < 16; k++) if (fabsf(src[16 * s + k]) > fabsf(v)) v = src[16 * s + k];
            scale[s] = v / -32.0f;                       /* extreme value uses code -32 */
            if (fabsf(scale[s]) > big) big = fabsf(scale[s]);
        }
        b[i].d = f32_to_fp16(big / 127.0f);
        float d = fp16_to_f32(b[i].d), id = d != 0.0f ? 1.0f / d : 0.0f;
        memset(b[i].ql, 0, sizeof b[i].ql);
        memset(b[i].qh, 0, sizeof b[i].qh);
        for (int s = 0; s < 16; s++) {
            int sc = clampi(round_int(scale[s] * id), -127, 127);
            b[i].scales[s] = (int8_t)sc;
            float dl = d * (float)sc, idl = dl != 0.0f ? 1.0f / dl : 0.0f;
            for (int k = 0; k < 16; k++) {
                int j = 16 * s + k, qv = clampi(round_int(src[j] * idl), -32, 31) + 32;   /* 0..63 */
                b[i].ql[64 * (j / 128) + j % 64] |= (uint8_t)((qv & 15) << (4 * ((j % 128) / 64)));
                b[i].qh[32 * (j / 128) + j % 32] |= (uint8_t)((qv >> 4) << (2 * ((j % 128) / 32)));
            }
        }
    }
}
float q6_K_dot_ref(const void *restrict w, const void *restrict a, int64_t n) {
    const block_q6_K *b = w; const act_q8_K *x = a; int8_t q[QK_K];
    canon_acc acc; canon_init(&acc);
    for (int64_t i = 0; i < n / QK_K; i++) {
        kq_unpack_q6_K(&b[i], q);
        int32_t S = 0;
        for (int s = 0; s < 16; s++) {
            int32_t t = 0;
            for (int k = 0; k < 16; k++) t += q[16 * s + k] * x[i].qs[16 * s + k];
            S += b[i].scales[s] * t;
        }
        canon_add(&acc, i, (float)S * (fp16_to_f32(b[i].d) * x[i].d));
    }
    return canon_finish(&acc);
}
