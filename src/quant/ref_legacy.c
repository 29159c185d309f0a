/* Reference functions of the legacy block formats: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 (32 weights),
 * MXFP4 (32 weights, e8m0 scale) and strata's Q2_0 (64 weights).
 *
 * Dequantization reproduces the gguf package's numpy dequantizers bit for bit
 * (same float operations in the same order: e.g. Q4_1 is d * q + m, rounded twice).
 * Dots: the integer sum of one block is exact (int32); the block partial p_b is
 *   Q4_0, Q5_0, Q8_0, MXFP4 (act_q8_0):  p_b = (float)isum * (dw * a.d)
 *   Q4_1, Q5_1 (act_q8_1):               p_b = (float)isum * (dw * a.d) + mw * a.s
 *   Q2_0 (act_q8_2):                     p_b = (float)isum * (dw * a.d)
 * where isum sums the signed integer weight code times the int8 activation
 * (Q4_0: q - 8, Q5_0: q - 16, Q8_0: q, MXFP4: doubled e2m1 value, Q2_0: c - 1;
 * Q4_1/Q5_1: unsigned q, the min m enters through a.s = a.d * sum(a.qs)).
 * Partials then follow the canonical lane order (quant_canon.h). */
#include "ref.h"
#include "quant_canon.h"
#include "../core/util.h"
#include <math.h>
#include <string.h>

/* ---- shared helpers ----------------------------------------------------------------- */

/* Signed value of largest magnitude (first one on ties) */
static float signed_absmax(const float *x, int n) {
    float amax = 0.0f, v = 0.0f;
    for (int i = 0; i < n; i++)
        if (fabsf(x[i]) > amax) { amax = fabsf(x[i]); v = x[i]; }
    return v;
}
static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }
/* round half away from zero, NaN -> 0 (quantizers only; dots never round) */
static int round_int(float v) { return v == v ? (int)lroundf(v) : 0; }

/* ---- Q4_0: w = (q - 8) * d ---------------------------------------------------------- */
void q4_0_dequant_row_ref(const void *restrict src, float *restrict dst, int64_t n) {
    const block_q4_0 *b = src;
    for (int64_t i = 0; i < n / QK4_0; i++, dst += QK4_0) {
        float d = fp16_to_f32(b[i].d);
        for (int j = 0; j < QK4_0 / 2; j++) {
            dst[j]              = d * (float)((b[i].qs[j] & 0x0F) - 8);
            dst[j + QK4_0 / 2]  = d * (float)((b[i].qs[j] >> 4) - 8);
        }
    }
}
void q4_0_quant_row_ref(const float *restrict src, void *restrict dst, int64_t n) {
    block_q4_0 *b = dst;
    for (int64_t i = 0; i < n / QK4_0; i++, src += QK4_0) {
        /* the extreme value maps to code 0 (-8 * d), so the full range [-8, 7] is used */
        b[i].d = f32_to_fp16(signed_absmax(src, QK4_0) / -8.0f);
        float d = fp16_to_f32(b[i].d), id = d != 0.0f ? 1.0f / d : 0.0f;
        for (int j = 0; j < QK4_0 / 2; j++) {
            int q0 = clampi(round_int(src[j] * id) + 8, 0, 15);
            int q1 = clampi(round_int(src[j + QK4_0 / 2] * id) + 8, 0, 15);
            b[i].qs[j] = (uint8_t)(q0 | (q1 << 4));
        }
    }
}
float q4_0_dot_ref(const void *restrict w, const void *restrict a, int64_t n) {
    const block_q4_0 *b = w; const act_q8_0 *x = a;
    canon_acc acc; canon_init(&acc);
    for (int64_t i = 0; i < n / QK4_0; i++) {
        int32_t isum = 0;
        for (int j = 0; j < QK4_0 / 2; j++) {
            isum += ((b[i].qs[j] & 0x0F) - 8) * x[i].qs[j];
            isum += ((b[i].qs[j] >> 4) - 8) * x[i].qs[j + QK4_0 / 2];
        }
        canon_add(&acc, i, (float)isum * (fp16_to_f32(b[i].d) * x[i].d));
    }
    return canon_finish(&acc);
}

/* ---- Q4_1: w = q * d + m ------------------------------------------------------------ */
void q4_1_dequant_row_ref(const void *restrict src, float *restrict dst, int64_t n) {
    const block_q4_1 *b = src;
    for (int64_t i = 0; i < n / QK4_1; i++, dst += QK4_1) {
        float d = fp16_to_f32(b[i].d), m = fp16_to_f32(b[i].m);
        for (int j = 0; j < QK4_1 / 2; j++) {
            dst[j]             = d * (float)(b[i].qs[j] & 0x0F) + m;
            dst[j + QK4_1 / 2] = d * (float)(b[i].qs[j] >> 4) + m;
        }
    }
}
void q4_1_quant_row_ref(const float *restrict src, void *restrict dst, int64_t n) {
    block_q4_1 *b = dst;
    for (int64_t i = 0; i < n / QK4_1; i++, src += QK4_1) {
        float lo = src[0], hi = src[0];
        for (int j = 1; j < QK4_1; j++) { lo = fminf(lo, src[j]); hi = fmaxf(hi, src[j]); }
        b[i].d = f32_to_fp16((hi - lo) / 15.0f);
        b[i].m = f32_to_fp16(lo);
        float d = fp16_to_f32(b[i].d), m = fp16_to_f32(b[i].m), id = d != 0.0f ? 1.0f / d : 0.0f;
        for (int j = 0; j < QK4_1 / 2; j++) {
            int q0 = clampi(round_int((src[j] - m) * id), 0, 15);
            int q1 = clampi(round_int((src[j + QK4_1 / 2] - m) * id), 0, 15);
            b[i].qs[j] = (uint8_t)(q0 | (q1 << 4));
        }
    }
}
float q4_1_dot_ref(const void *restrict w, const void *restrict a, int64_t n) {
    const block_q4_1 *b = w; const act_q8_1 *x = a;
    canon_acc acc; canon_init(&acc);
    for (int64_t i = 0; i < n / QK4_1; i++) {
        int32_t isum = 0;
        for (int j = 0; j < QK4_1 / 2; j++) {
            isum += (b[i].qs[j] & 0x0F) * x[i].qs[j];
            isum += (b[i].qs[j] >> 4) * x[i].qs[j + QK4_1 / 2];
        }
        float t = (float)isum * (fp16_to_f32(b[i].d) * x[i].d);
        canon_add(&acc, i, t + fp16_to_f32(b[i].m) * x[i].s);
    }
    return canon_finish(&acc);
}

/* ---- Q5_0: w = (q - 16) * d, q = low nibble | (qh bit j) << 4 -------------------------- */
static uint32_t load_u32le(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static void store_u32le(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}
/* 5-bit code of weight j (0..31) of a Q5 block */
static inline int q5_code(const uint8_t *qs, uint32_t qh, int j) {
    int lo = j < 16 ? (qs[j] & 0x0F) : (qs[j - 16] >> 4);
    return lo | (int)((qh >> j) & 1) << 4;
}
void q5_0_dequant_row_ref(const void *restrict src, float *restrict dst, int64_t n) {
    const block_q5_0 *b = src;
    for (int64_t i = 0; i < n / QK5_0; i++, dst += QK5_0) {
        float d = fp16_to_f32(b[i].d); uint32_t qh = load_u32le(b[i].qh);
        for (int j = 0; j < QK5_0; j++) dst[j] = d * (float)(q5_code(b[i].qs, qh, j) - 16);
    }
}
static void q5_pack(uint8_t *qs, uint8_t *qhb, const int *q) {
    uint32_t qh = 0;
    for (int j = 0; j < 16; j++) qs[j] = (uint8_t)((q[j] & 0x0F) | (q[j + 16] & 0x0F) << 4);
    for (int j = 0; j < 32; j++) qh |= (uint32_t)(q[j] >> 4 & 1) << j;
    store_u32le(qhb, qh);
}
void q5_0_quant_row_ref(const float *restrict src, void *restrict dst, int64_t n) {
    block_q5_0 *b = dst;
    for (int64_t i = 0; i < n / QK5_0; i++, src += QK5_0) {
        b[i].d = f32_to_fp16(signed_absmax(src, QK5_0) / -16.0f);
        float d = fp16_to_f32(b[i].d), id = d != 0.0f ? 1.0f / d : 0.0f;
        int q[32];
        for (int j = 0; j < 32; j++) q[j] = clampi(round_int(src[j] * id) + 16, 0, 31);
        q5_pack(b[i].qs, b[i].qh, q);
    }
}
float q5_0_dot_ref(const void *restrict w, const void *restrict a, int64_t n) {
    const block_q5_0 *b = w; const act_q8_0 *x = a;
    canon_acc acc; canon_init(&acc);
    for (int64_t i = 0; i < n / QK5_0; i++) {
        uint32_t qh = load_u32le(b[i].qh);
        int32_t isum = 0;
        for (int j = 0; j < QK5_0; j++) isum += (q5_code(b[i].qs, qh, j) - 16) * x[i].qs[j];
        canon_add(&acc, i, (float)isum * (fp16_to_f32(b[i].d) * x[i].d));
    }
    return canon_finish(&acc);
}

/* ---- Q5_1: w = q * d + m --------------------------------------------------------------- */
void q5_1_dequant_row_ref(const void *restrict src, float *restrict dst, int64_t n) {
    const block_q5_1 *b = src;
    for (int64_t i = 0; i < n / QK5_1; i++, dst += QK5_1) {
        float d = fp16_to_f32(b[i].d), m = fp16_to_f32(b[i].m); uint32_t qh = load_u32le(b[i].qh);
        for (int j = 0; j < QK5_1; j++) dst[j] = d * (float)q5_code(b[i].qs, qh, j) + m;
    }
}
void q5_1_quant_row_ref(const float *restrict src, void *restrict dst, int64_t n) {
    block_q5_1 *b = dst;
    for (int64_t i = 0; i < n / QK5_1; i++, src += QK5_1) {
        float lo = src[0], hi = src[0];
        for (int j = 1; j < QK5_1; j++) { lo = fminf(lo, src[j]); hi = fmaxf(hi, src[j]); }
        b[i].d = f32_to_fp16((hi - lo) / 31.0f);
        b[i].m = f32_to_fp16(lo);
        float d = fp16_to_f32(b[i].d), m = fp16_to_f32(b[i].m), id = d != 0.0f ? 1.0f / d : 0.0f;
        int q[32];
        for (int j = 0; j < 32; j++) q[j] = clampi(round_int((src[j] - m) * id), 0, 31);
        q5_pack(b[i].qs, b[i].qh, q);
    }
}
float q5_1_dot_ref(const void *restrict w, const void *restrict a, int64_t n) {
    const block_q5_1 *b = w; const act_q8_1 *x = a;
    canon_acc acc; canon_init(&acc);
    for (int64_t i = 0; i < n / QK5_1; i++) {
        uint32_t qh = load_u32le(b[i].qh);
        int32_t isum = 0;
        for (int j = 0; j < QK5_1; j++) isum += q5_code(b[i].qs, qh, j) * x[i].qs[j];
        float t = (float)isum * (fp16_to_f32(b[i].d) * x[i].d);
        canon_add(&acc, i, t + fp16_to_f32(b[i].m) * x[i].s);
    }
    return canon_finish(&acc);
}

/* ---- Q8_0: w = q * d ----------------------------------------------------------------- */
void q8_0_dequant_row_ref(const void *restrict src, float *restrict dst, int64_t n) {
    const block_q8_0 *b = src;
    for (int64_t i = 0; i < n / QK8_0; i++, dst += QK8_0) {
        float d = fp16_to_f32(b[i].d);
        for (int j = 0; j < QK8_0; j++) dst[j] = (float)b[i].qs[j] * d;
    }
}
void q8_0_quant_row_ref(const float *restrict src, void *restrict dst, int64_t n) {
    block_q8_0 *b = dst;
    for (int64_t i = 0; i < n / QK8_0; i++, src += QK8_0) {
        b[i].d = f32_to_fp16(fabsf(signed_absmax(src, QK8_0)) / 127.0f);
        float d = fp16_to_f32(b[i].d), id = d != 0.0f ? 1.0f / d : 0.0f;
        for (int j = 0; j < QK8_0; j++) b[i].qs[j] = (int8_t)clampi(round_int(src[j] * id), -127, 127);
    }
}
float q8_0_dot_ref(const void *restrict w, const void *restrict a, int64_t n) {
    const block_q8_0 *b = w; const act_q8_0 *x = a;
    canon_acc acc; canon_init(&acc);
    for (int64_t i = 0; i < n / QK8_0; i++) {
        int32_t isum = 0;
        for (int j = 0; j < QK8_0; j++) isum += b[i].qs[j] * x[i].qs[j];
        canon_add(&acc, i, (float)isum * (fp16_to_f32(b[i].d) * x[i].d));
    }
    return canon_finish(&acc);
}

/* ---- Q2_0 (strata): 64 weights, code c of weight j = (qs[j/4] >> 2*(j%4)) & 3, w = (c-1)*d
 * Not in the gguf package; the test derives its expectation by hand. */
void q2_0_dequant_row_ref(const void *restrict src, float *restrict dst, int64_t n) {
    const block_q2_0 *b = src;
    for (int64_t i = 0; i < n / QK2_0; i++, dst += QK2_0) {
        float d = fp16_to_f32(b[i].d);
        for (int j = 0; j < QK2_0; j++) dst[j] = (float)(((b[i].qs[j / 4] >> (2 * (j % 4))) & 3) - 1) * d;
    }
}
void q2_0_quant_row_ref(const float *restrict src, void *restrict dst, int64_t n) {
    block_q2_0 *b = dst;
    /* Levels are {-1, 0, 1, 2} * d: the extreme value v maps to 2d (d = v / 2) or to a
     * level a bit inside it; try a few scales and keep the one of least squared error. */
    static const float div[] = { 2.0f, 1.75f, 1.5f, 1.25f, 1.0f };
    for (int64_t i = 0; i < n / QK2_0; i++, src += QK2_0) {
        float v = signed_absmax(src, QK2_0), best_err = INFINITY;
        uint16_t best_d = 0;
        for (int c = 0; c < (int)(sizeof div / sizeof div[0]); c++) {
            uint16_t dh = f32_to_fp16(v / div[c]);
            float d = fp16_to_f32(dh), id = d != 0.0f ? 1.0f / d : 0.0f, err = 0.0f;
            for (int j = 0; j < QK2_0; j++) {
                float e = src[j] - (float)(clampi(round_int(src[j] * id) + 1, 0, 3) - 1) * d;
                err += e * e;
            }
            if (err < best_err) { best_err = err; best_d = dh; }
        }
        b[i].d = best_d;
        float d = fp16_to_f32(best_d), id = d != 0.0f ? 1.0f / d : 0.0f;
        memset(b[i].qs, 0, sizeof b[i].qs);
        for (int j = 0; j < QK2_0; j++)
            b[i].qs[j / 4] |= (uint8_t)(clampi(round_int(src[j] * id) + 1, 0, 3) << (2 * (j % 4)));
    }
}
void q2_0_unpack_ref(const void *blk, int8_t q[QK2_0]) {
    const block_q2_0 *b = blk;
    for (int j = 0; j < QK2_0; j++) q[j] = (int8_t)(((b->qs[j / 4] >> (2 * (j % 4))) & 3) - 1);
}
float q2_0_dot_ref(const void *restrict w, const void *restrict a, int64_t n) {
    const block_q2_0 *b = w; const act_q8_2 *x = a;
    canon_acc acc; canon_init(&acc);
    int8_t q[QK2_0];
    for (int64_t i = 0; i < n / QK2_0; i++) {
        int32_t isum = 0;
        q2_0_unpack_ref(&b[i], q);
        for (int j = 0; j < QK2_0; j++) isum += q[j] * x[i].qs[j];
        canon_add(&acc, i, (float)isum * (fp16_to_f32(b[i].d) * x[i].d));
    }
    return canon_finish(&acc);
}

/* ---- MXFP4: 32 e2m1 codes (low nibbles = weights 0..15, high = 16..31), e8m0 scale.
 * Values are kept doubled as integers and the scale halved, so w = kvalue * 2^(e-128). */
const int8_t mxfp4_kvalues[16] = { 0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12 };
float mxfp4_e8m0_half(uint8_t e) {
    uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
    float f; memcpy(&f, &bits, 4); return f;
}
void mxfp4_dequant_row_ref(const void *restrict src, float *restrict dst, int64_t n) {
    const block_mxfp4 *b = src;
    for (int64_t i = 0; i < n / QK_MXFP4; i++, dst += QK_MXFP4) {
        float d = mxfp4_e8m0_half(b[i].e);
        for (int j = 0; j < QK_MXFP4 / 2; j++) {
            dst[j]                = d * (float)mxfp4_kvalues[b[i].qs[j] & 0x0F];
            dst[j + QK_MXFP4 / 2] = d * (float)mxfp4_kvalues[b[i].qs[j] >> 4];
        }
    }
}
void mxfp4_quant_row_ref(const float *restrict src, void *restrict dst, int64_t n) {
    block_mxfp4 *b = dst;
    for (int64_t i = 0; i < n / QK_MXFP4; i++, src += QK_MXFP4) {
        float amax = fabsf(signed_absmax(src, QK_MXFP4));
        int e = 0;
        if (amax > 0.0f && isfinite(amax)) {
            int ex; frexpf(amax, &ex);            /* amax = m * 2^ex, m in [0.5, 1) */
            e = clampi(ex - 1 - 2 + 127, 0, 254); /* largest value 6 = 1.5 * 2^2 covers amax */
        }
        b[i].e = (uint8_t)e;
        float d = mxfp4_e8m0_half((uint8_t)e);
        for (int j = 0; j < QK_MXFP4; j++) {
            int best = 0; float best_err = INFINITY;
            for (int c = 0; c < 16; c++) {
                float err = fabsf(d * (float)mxfp4_kvalues[c] - src[j]);
                if (err < best_err) { best_err = err; best = c; }
            }
            if (j < 16) b[i].qs[j] = (uint8_t)best;
            else b[i].qs[j - 16] |= (uint8_t)(best << 4);
        }
    }
}
float mxfp4_dot_ref(const void *restrict w, const void *restrict a, int64_t n) {
    const block_mxfp4 *b = w; const act_q8_0 *x = a;
    canon_acc acc; canon_init(&acc);
    for (int64_t i = 0; i < n / QK_MXFP4; i++) {
        int32_t isum = 0;
        for (int j = 0; j < QK_MXFP4 / 2; j++) {
            isum += mxfp4_kvalues[b[i].qs[j] & 0x0F] * x[i].qs[j];
            isum += mxfp4_kvalues[b[i].qs[j] >> 4] * x[i].qs[j + QK_MXFP4 / 2];
        }
        canon_add(&acc, i, (float)isum * (mxfp4_e8m0_half(b[i].e) * x[i].d));
    }
    return canon_finish(&acc);
}
