/* Reference dequantize / quantize / dot of the IQ codebook formats.
 *
 * Layouts (blocks.h; "group" = the weights one grid index covers):
 *   IQ2_XXS  66 B / 256: d; per 32-weight sub-block 8 bytes = u32 a0 (4 grid indices, one per
 *            group of 8) + u32 a1 (bits 7l..7l+6: sign index of group l; bits 28..31: ls).
 *            w = d * (0.5 + ls) * 0.25 * grid * sign
 *   IQ2_XS   74 B: d; qs[32] u16 (bits 0..8 grid index of group g, bits 9..15 sign index);
 *            scales[8]: nibble j = ls of weights 16j..16j+15. w = d * (0.5 + ls) * 0.25 * grid * sign
 *   IQ2_S    82 B: d; qs[0..31] low 8 bits of group g's index, qs[32..63] sign byte of group g;
 *            qh[g/4] bits 2(g%4).. = index bits 8..9; scales as IQ2_XS. Signs have no parity.
 *   IQ3_XXS  98 B: d; qs[0..63] grid index of 4-weight group g; qs[64..95] = u32 per 32-weight
 *            sub-block (4 sign indices of 7 bits for 8 weights each, ls in bits 28..31).
 *            w = d * (0.5 + ls) * 0.5 * grid * sign
 *   IQ3_S   110 B: d; qs[g] low 8 bits, qh bit g = bit 8 (groups of 4); signs[i/8] bit i%8;
 *            scales[4]: nibble ib = ls of sub-block ib (32). w = d * (1 + 2 ls) * grid * sign
 *   IQ1_S    50 B: d; qs[g] low 8 bits (groups of 8); qh[ib] u16: bits 3l..3l+2 index bits
 *            8..10 of group 4ib+l, bits 12..14 ls, bit 15 delta sign.
 *            w = d * (2 ls + 1) * (grid + delta), delta = +-1/8
 *   IQ1_M    56 B: qs[g]; qh[g/2] nibble g%2: bits 0..2 index bits 8..10, bit 3 delta sign
 *            (per group of 8); scales = 4 u16: 3-bit ls at 3f of word w for 16 weights
 *            16(4w+f).., and the fp16 d in the words' top nibbles (word w -> d bits 4w..4w+3).
 *   IQ4_NL   18 B / 32: d; qs[j] low nibble = code of weight j, high = weight j+16. w = d * kv
 *   IQ4_XS  136 B / 256: d; ls (6 bits) of sub-block ib = scales_l nibble ib | scales_h bits
 *            2ib..2ib+1 << 4; qs[16ib + j] low / high nibble = weight 32ib + j / + 16 + j.
 *            w = d * (ls - 32) * kv
 *
 * Dequantize mirrors gguf's numpy dequantizers operation for operation (bit-identical).
 * Dot: each super-block is decoded to integer weights w8[256] (grid * sign; for IQ1 the
 * exact 8 * (grid + delta) = 8 grid +- 1) and integer multipliers m[16] (one per 16 weights:
 * 2 ls + 1, or ls - 32 for IQ4_XS), then
 *     isum = sum_i m[i / 16] * w8[i] * q8[i]            (exact int32)
 *     p_b  = ((float)isum * k) * (fp16(d) * a.d)        k = 1/8 IQ2 and IQ1, 1/4 IQ3_XXS, 1 else
 * and p_b goes through the canonical accumulator (quant_canon.h). IQ4_NL: 32-weight blocks
 * with act_q8_0, isum = sum kv * q8, k = 1. */
#include <math.h>
#include <pthread.h>
#include <string.h>
#include "ref_iq.h"
#include "blocks.h"
#include "iq_tables.h"
#include "quant_canon.h"
#include "core/util.h"

static inline uint32_t rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline uint16_t rd16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static inline void wr32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static inline void wr16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }
static inline float sgnf(unsigned bits, int j) { return (bits >> j) & 1 ? -1.0f : 1.0f; }

/* ==== dequantize (mirrors gguf.quants, same float operations in the same order) ======== */

void iq2_xxs_dequant_row_ref(const void *restrict src, float *restrict dst, int64_t n) {
    const block_iq2_xxs *b = (const block_iq2_xxs *)src;
    for (int64_t i = 0; i < n / QK_K; i++, b++) {
        const uint8_t *q = (const uint8_t *)b->qs;
        float d = fp16_to_f32(b->d);
        for (int ib = 0; ib < 8; ib++) {
            uint32_t a0 = rd32(q + 8 * ib), a1 = rd32(q + 8 * ib + 4);
            float db = d * (0.5f + (float)(a1 >> 28)) * 0.25f;
            for (int l = 0; l < 4; l++) {
                const uint8_t *g = iq2xxs_grid[(a0 >> 8 * l) & 255];
                unsigned s = ksigns_iq2xs[(a1 >> 7 * l) & 127];
                for (int j = 0; j < 8; j++) *dst++ = db * (float)g[j] * sgnf(s, j);
            }
        }
    }
}

void iq2_xs_dequant_row_ref(const void *restrict src, float *restrict dst, int64_t n) {
    const block_iq2_xs *b = (const block_iq2_xs *)src;
    for (int64_t i = 0; i < n / QK_K; i++, b++) {
        float d = fp16_to_f32(b->d);
        for (int g = 0; g < 32; g++) {
            unsigned ls = (b->scales[g / 4] >> (4 * ((g / 2) & 1))) & 15;
            float db = d * (0.5f + (float)ls) * 0.25f;
            const uint8_t *gr = iq2xs_grid[b->qs[g] & 511];
            unsigned s = ksigns_iq2xs[b->qs[g] >> 9];
            for (int j = 0; j < 8; j++) *dst++ = db * (float)gr[j] * sgnf(s, j);
        }
    }
}

void iq2_s_dequant_row_ref(const void *restrict src, float *restrict dst, int64_t n) {
    const block_iq2_s *b = (const block_iq2_s *)src;
    for (int64_t i = 0; i < n / QK_K; i++, b++) {
        float d = fp16_to_f32(b->d);
        for (int g = 0; g < 32; g++) {
            unsigned ls = (b->scales[g / 4] >> (4 * ((g / 2) & 1))) & 15;
            float db = d * (0.5f + (float)ls) * 0.25f;
            unsigned idx = b->qs[g] | (((b->qh[g / 4] >> (2 * (g % 4))) & 3u) << 8);
            const uint8_t *gr = iq2s_grid[idx];
            unsigned s = b->qs[32 + g];
            for (int j = 0; j < 8; j++) *dst++ = db * (float)gr[j] * sgnf(s, j);
        }
    }
}

void iq3_xxs_dequant_row_ref(const void *restrict src, float *restrict dst, int64_t n) {
    const block_iq3_xxs *b = (const block_iq3_xxs *)src;
    for (int64_t i = 0; i < n / QK_K; i++, b++) {
        float d = fp16_to_f32(b->d);
        for (int ib = 0; ib < 8; ib++) {
            uint32_t a = rd32(b->qs + 64 + 4 * ib);
            float db = d * (0.5f + (float)(a >> 28)) * 0.5f;
            for (int l = 0; l < 4; l++) {
                unsigned s = ksigns_iq2xs[(a >> 7 * l) & 127];
                const uint8_t *g1 = iq3xxs_grid[b->qs[8 * ib + 2 * l]];
                const uint8_t *g2 = iq3xxs_grid[b->qs[8 * ib + 2 * l + 1]];
                for (int j = 0; j < 4; j++) *dst++ = db * (float)g1[j] * sgnf(s, j);
                for (int j = 0; j < 4; j++) *dst++ = db * (float)g2[j] * sgnf(s, j + 4);
            }
        }
    }
}

void iq3_s_dequant_row_ref(const void *restrict src, float *restrict dst, int64_t n) {
    const block_iq3_s *b = (const block_iq3_s *)src;
    for (int64_t i = 0; i < n / QK_K; i++, b++) {
        float d = fp16_to_f32(b->d);
        for (int g = 0; g < 64; g++) {
            unsigned ls = (b->scales[g / 16] >> (4 * ((g / 8) & 1))) & 15;
            float db = d * (float)(1 + 2 * ls);
            unsigned idx = b->qs[g] | (((b->qh[g / 8] >> (g % 8)) & 1u) << 8);
            const uint8_t *gr = iq3s_grid[idx];
            unsigned s = b->signs[g / 2] >> (4 * (g & 1));
            for (int j = 0; j < 4; j++) *dst++ = db * (float)gr[j] * sgnf(s, j);
        }
    }
}

void iq1_s_dequant_row_ref(const void *restrict src, float *restrict dst, int64_t n) {
    const block_iq1_s *b = (const block_iq1_s *)src;
    for (int64_t i = 0; i < n / QK_K; i++, b++) {
        float d = fp16_to_f32(b->d);
        for (int ib = 0; ib < 8; ib++) {
            unsigned qh = b->qh[ib];
            float dl = d * (float)(2 * ((qh >> 12) & 7) + 1);
            float delta = (qh & 0x8000) ? -0.125f : 0.125f;
            for (int l = 0; l < 4; l++) {
                const int8_t *gr = iq1s_grid[b->qs[4 * ib + l] | (((qh >> 3 * l) & 7u) << 8)];
                for (int j = 0; j < 8; j++) *dst++ = dl * ((float)gr[j] + delta);
            }
        }
    }
}

static inline float iq1_m_d(const block_iq1_m *b, uint16_t sc[4]) {
    for (int w = 0; w < 4; w++) sc[w] = rd16(b->scales + 2 * w);
    uint16_t dbits = (uint16_t)((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000));
    return fp16_to_f32(dbits);
}

void iq1_m_dequant_row_ref(const void *restrict src, float *restrict dst, int64_t n) {
    const block_iq1_m *b = (const block_iq1_m *)src;
    for (int64_t i = 0; i < n / QK_K; i++, b++) {
        uint16_t sc[4];
        float d = iq1_m_d(b, sc);
        for (int g = 0; g < 32; g++) {
            unsigned ls = (sc[g / 8] >> (3 * ((g / 2) % 4))) & 7;
            float dl = d * (float)(2 * ls + 1);
            unsigned nib = (b->qh[g / 2] >> (4 * (g & 1))) & 15;
            float delta = (nib & 8) ? -0.125f : 0.125f;
            const int8_t *gr = iq1s_grid[b->qs[g] | ((nib & 7u) << 8)];
            for (int j = 0; j < 8; j++) *dst++ = dl * ((float)gr[j] + delta);
        }
    }
}

void iq4_nl_dequant_row_ref(const void *restrict src, float *restrict dst, int64_t n) {
    const block_iq4_nl *b = (const block_iq4_nl *)src;
    for (int64_t i = 0; i < n / QK4_NL; i++, b++) {
        float d = fp16_to_f32(b->d);
        for (int j = 0; j < 16; j++) dst[j] = d * (float)kvalues_iq4nl[b->qs[j] & 15];
        for (int j = 0; j < 16; j++) dst[16 + j] = d * (float)kvalues_iq4nl[b->qs[j] >> 4];
        dst += 32;
    }
}

static inline int iq4_xs_ls(const block_iq4_xs *b, int ib) {
    return (int)(((b->scales_l[ib / 2] >> (4 * (ib & 1))) & 15) | (((b->scales_h >> (2 * ib)) & 3) << 4));
}

void iq4_xs_dequant_row_ref(const void *restrict src, float *restrict dst, int64_t n) {
    const block_iq4_xs *b = (const block_iq4_xs *)src;
    for (int64_t i = 0; i < n / QK_K; i++, b++) {
        float d = fp16_to_f32(b->d);
        for (int ib = 0; ib < 8; ib++) {
            float dl = d * (float)(iq4_xs_ls(b, ib) - 32);
            const uint8_t *q = b->qs + 16 * ib;
            for (int j = 0; j < 16; j++) dst[j] = dl * (float)kvalues_iq4nl[q[j] & 15];
            for (int j = 0; j < 16; j++) dst[16 + j] = dl * (float)kvalues_iq4nl[q[j] >> 4];
            dst += 32;
        }
    }
}

/* ==== integer decode for the dot: w8[256] and m[16] per super-block; returns fp16(d) ====== */

typedef float (*iq_decode_fn)(const void *blk, int8_t *w8, int16_t *m);

static inline void put_signed8(int8_t *w, const uint8_t *g, unsigned s, int count) {
    for (int j = 0; j < count; j++) w[j] = (int8_t)((s >> j) & 1 ? -(int)g[j] : (int)g[j]);
}

static float iq2_xxs_decode(const void *blk, int8_t *w8, int16_t *m) {
    const block_iq2_xxs *b = (const block_iq2_xxs *)blk;
    const uint8_t *q = (const uint8_t *)b->qs;
    for (int ib = 0; ib < 8; ib++) {
        uint32_t a0 = rd32(q + 8 * ib), a1 = rd32(q + 8 * ib + 4);
        m[2 * ib] = m[2 * ib + 1] = (int16_t)(2 * (a1 >> 28) + 1);
        for (int l = 0; l < 4; l++)
            put_signed8(w8 + 32 * ib + 8 * l, iq2xxs_grid[(a0 >> 8 * l) & 255], ksigns_iq2xs[(a1 >> 7 * l) & 127], 8);
    }
    return fp16_to_f32(b->d);
}

static float iq2_xs_decode(const void *blk, int8_t *w8, int16_t *m) {
    const block_iq2_xs *b = (const block_iq2_xs *)blk;
    for (int j = 0; j < 16; j++) m[j] = (int16_t)(2 * ((b->scales[j / 2] >> (4 * (j & 1))) & 15) + 1);
    for (int g = 0; g < 32; g++) put_signed8(w8 + 8 * g, iq2xs_grid[b->qs[g] & 511], ksigns_iq2xs[b->qs[g] >> 9], 8);
    return fp16_to_f32(b->d);
}

static float iq2_s_decode(const void *blk, int8_t *w8, int16_t *m) {
    const block_iq2_s *b = (const block_iq2_s *)blk;
    for (int j = 0; j < 16; j++) m[j] = (int16_t)(2 * ((b->scales[j / 2] >> (4 * (j & 1))) & 15) + 1);
    for (int g = 0; g < 32; g++) {
        unsigned idx = b->qs[g] | (((b->qh[g / 4] >> (2 * (g % 4))) & 3u) << 8);
        put_signed8(w8 + 8 * g, iq2s_grid[idx], b->qs[32 + g], 8);
    }
    return fp16_to_f32(b->d);
}

static float iq3_xxs_decode(const void *blk, int8_t *w8, int16_t *m) {
    const block_iq3_xxs *b = (const block_iq3_xxs *)blk;
    for (int ib = 0; ib < 8; ib++) {
        uint32_t a = rd32(b->qs + 64 + 4 * ib);
        m[2 * ib] = m[2 * ib + 1] = (int16_t)(2 * (a >> 28) + 1);
        for (int l = 0; l < 4; l++) {
            unsigned s = ksigns_iq2xs[(a >> 7 * l) & 127];
            put_signed8(w8 + 32 * ib + 8 * l, iq3xxs_grid[b->qs[8 * ib + 2 * l]], s, 4);
            put_signed8(w8 + 32 * ib + 8 * l + 4, iq3xxs_grid[b->qs[8 * ib + 2 * l + 1]], s >> 4, 4);
        }
    }
    return fp16_to_f32(b->d);
}

static float iq3_s_decode(const void *blk, int8_t *w8, int16_t *m) {
    const block_iq3_s *b = (const block_iq3_s *)blk;
    for (int j = 0; j < 16; j++) m[j] = (int16_t)(2 * ((b->scales[j / 4] >> (4 * ((j / 2) & 1))) & 15) + 1);
    for (int g = 0; g < 64; g++) {
        unsigned idx = b->qs[g] | (((b->qh[g / 8] >> (g % 8)) & 1u) << 8);
        put_signed8(w8 + 4 * g, iq3s_grid[idx], b->signs[g / 2] >> (4 * (g & 1)), 4);
    }
    return fp16_to_f32(b->d);
}

static float iq1_s_decode(const void *blk, int8_t *w8, int16_t *m) {
    const block_iq1_s *b = (const block_iq1_s *)blk;
    for (int ib = 0; ib < 8; ib++) {
        unsigned qh = b->qh[ib];
        int delta = (qh & 0x8000) ? -1 : 1;
        m[2 * ib] = m[2 * ib + 1] = (int16_t)(2 * ((qh >> 12) & 7) + 1);
        for (int l = 0; l < 4; l++) {
            const int8_t *gr = iq1s_grid[b->qs[4 * ib + l] | (((qh >> 3 * l) & 7u) << 8)];
            for (int j = 0; j < 8; j++) w8[32 * ib + 8 * l + j] = (int8_t)(8 * gr[j] + delta);
        }
    }
    return fp16_to_f32(b->d);
}

static float iq1_m_decode(const void *blk, int8_t *w8, int16_t *m) {
    const block_iq1_m *b = (const block_iq1_m *)blk;
    uint16_t sc[4];
    float d = iq1_m_d(b, sc);
    for (int j = 0; j < 16; j++) m[j] = (int16_t)(2 * ((sc[j / 4] >> (3 * (j % 4))) & 7) + 1);
    for (int g = 0; g < 32; g++) {
        unsigned nib = (b->qh[g / 2] >> (4 * (g & 1))) & 15;
        int delta = (nib & 8) ? -1 : 1;
        const int8_t *gr = iq1s_grid[b->qs[g] | ((nib & 7u) << 8)];
        for (int j = 0; j < 8; j++) w8[8 * g + j] = (int8_t)(8 * gr[j] + delta);
    }
    return d;
}

static float iq4_xs_decode(const void *blk, int8_t *w8, int16_t *m) {
    const block_iq4_xs *b = (const block_iq4_xs *)blk;
    for (int ib = 0; ib < 8; ib++) {
        m[2 * ib] = m[2 * ib + 1] = (int16_t)(iq4_xs_ls(b, ib) - 32);
        const uint8_t *q = b->qs + 16 * ib;
        for (int j = 0; j < 16; j++) {
            w8[32 * ib + j] = kvalues_iq4nl[q[j] & 15];
            w8[32 * ib + 16 + j] = kvalues_iq4nl[q[j] >> 4];
        }
    }
    return fp16_to_f32(b->d);
}

static float iq_dot_k(const void *w, const void *a, int64_t n, size_t bsize, iq_decode_fn dec, float k) {
    const uint8_t *wb = (const uint8_t *)w;
    const act_q8_K *ab = (const act_q8_K *)a;
    canon_acc acc;
    canon_init(&acc);
    int8_t w8[QK_K];
    int16_t m[16];
    for (int64_t b = 0; b < n / QK_K; b++) {
        float dw = dec(wb + (size_t)b * bsize, w8, m);
        const int8_t *q = ab[b].qs;
        int32_t isum = 0;
        for (int j = 0; j < 16; j++) {
            int32_t s = 0;
            for (int i = 0; i < 16; i++) s += (int32_t)w8[16 * j + i] * q[16 * j + i];
            isum += (int32_t)m[j] * s;
        }
        canon_add(&acc, b, ((float)isum * k) * (dw * ab[b].d));
    }
    return canon_finish(&acc);
}

float iq_decode_ref(int type, const void *blk, int8_t w8[256], int16_t m[16]) {
    switch (type) {
    case TYPE_IQ2_XXS: return iq2_xxs_decode(blk, w8, m);
    case TYPE_IQ2_XS: return iq2_xs_decode(blk, w8, m);
    case TYPE_IQ2_S: return iq2_s_decode(blk, w8, m);
    case TYPE_IQ3_XXS: return iq3_xxs_decode(blk, w8, m);
    case TYPE_IQ3_S: return iq3_s_decode(blk, w8, m);
    case TYPE_IQ1_S: return iq1_s_decode(blk, w8, m);
    case TYPE_IQ1_M: return iq1_m_decode(blk, w8, m);
    case TYPE_IQ4_XS: return iq4_xs_decode(blk, w8, m);
    default: return NAN;
    }
}

float iq2_xxs_dot_ref(const void *restrict w, const void *restrict a, int64_t n) { return iq_dot_k(w, a, n, sizeof(block_iq2_xxs), iq2_xxs_decode, 0.125f); }
float iq2_xs_dot_ref(const void *restrict w, const void *restrict a, int64_t n) { return iq_dot_k(w, a, n, sizeof(block_iq2_xs), iq2_xs_decode, 0.125f); }
float iq2_s_dot_ref(const void *restrict w, const void *restrict a, int64_t n) { return iq_dot_k(w, a, n, sizeof(block_iq2_s), iq2_s_decode, 0.125f); }
float iq3_xxs_dot_ref(const void *restrict w, const void *restrict a, int64_t n) { return iq_dot_k(w, a, n, sizeof(block_iq3_xxs), iq3_xxs_decode, 0.25f); }
float iq3_s_dot_ref(const void *restrict w, const void *restrict a, int64_t n) { return iq_dot_k(w, a, n, sizeof(block_iq3_s), iq3_s_decode, 1.0f); }
float iq1_s_dot_ref(const void *restrict w, const void *restrict a, int64_t n) { return iq_dot_k(w, a, n, sizeof(block_iq1_s), iq1_s_decode, 0.125f); }
float iq1_m_dot_ref(const void *restrict w, const void *restrict a, int64_t n) { return iq_dot_k(w, a, n, sizeof(block_iq1_m), iq1_m_decode, 0.125f); }
float iq4_xs_dot_ref(const void *restrict w, const void *restrict a, int64_t n) { return iq_dot_k(w, a, n, sizeof(block_iq4_xs), iq4_xs_decode, 1.0f); }

float iq4_nl_dot_ref(const void *restrict w, const void *restrict a, int64_t n) {
    const block_iq4_nl *wb = (const block_iq4_nl *)w;
    const act_q8_0 *ab = (const act_q8_0 *)a;
    canon_acc acc;
    canon_init(&acc);
    for (int64_t b = 0; b < n / QK4_NL; b++) {
        int32_t isum = 0;
        for (int j = 0; j < 16; j++)
            isum += (int32_t)kvalues_iq4nl[wb[b].qs[j] & 15] * ab[b].qs[j]
                  + (int32_t)kvalues_iq4nl[wb[b].qs[j] >> 4] * ab[b].qs[j + 16];
        canon_add(&acc, b, (float)isum * (fp16_to_f32(wb[b].d) * ab[b].d));
    }
    return canon_finish(&acc);
}

/* ==== quantize (round to nearest over the codebook; no importance matrix) ===============
 * A grid's per-weight levels are few (3 or 8), so the nearest grid entry to a target vector
 * is looked up: round each element to its nearest level, and a table built once maps that
 * level code (base nlev, element j = digit j) to the grid entry closest to it in level space.
 * Scales: each scale unit (sub-block) tries a few float scales and keeps the lowest squared
 * error; the super-block d is the largest unit scale over the largest multiplier, rounded to
 * fp16; each unit then takes the best integer scale code among round(s/d) and its neighbours. */

typedef struct {
    int elems, nlev, n;
    float lev[8];
    float gv[2048 * 8];     /* grid values as floats, n x elems */
    uint16_t lut[6561];     /* level code -> nearest grid index */
} grid_q;

enum { GQ_IQ2XXS, GQ_IQ2XS, GQ_IQ2S, GQ_IQ3XXS, GQ_IQ3S, GQ_IQ1S, GQ_COUNT };
static grid_q g_gq[GQ_COUNT];
static pthread_once_t g_gq_once = PTHREAD_ONCE_INIT;

static void grid_q_build(grid_q *g, const void *grid, int n, int elems, int is_signed, int nlev, const float *lev) {
    g->n = n; g->elems = elems; g->nlev = nlev;
    for (int l = 0; l < nlev; l++) g->lev[l] = lev[l];
    for (int i = 0; i < n * elems; i++)
        g->gv[i] = is_signed ? (float)((const int8_t *)grid)[i] : (float)((const uint8_t *)grid)[i];
    int codes = 1;
    for (int j = 0; j < elems; j++) codes *= nlev;
    for (int c = 0; c < codes; c++) {
        float v[8];
        for (int j = 0, cc = c; j < elems; j++, cc /= nlev) v[j] = lev[cc % nlev];
        float best = INFINITY; int bi = 0;
        for (int i = 0; i < n; i++) {
            float e = 0;
            for (int j = 0; j < elems; j++) { float t = g->gv[i * elems + j] - v[j]; e += t * t; }
            if (e < best) { best = e; bi = i; }
        }
        g->lut[c] = (uint16_t)bi;
    }
}

static void grid_q_init(void) {
    static const float l2[3] = {8, 25, 43}, l1[3] = {-1, 0, 1};
    static const float l3x[8] = {4, 12, 20, 28, 36, 44, 52, 62}, l3s[8] = {1, 3, 5, 7, 9, 11, 13, 15};
    grid_q_build(&g_gq[GQ_IQ2XXS], iq2xxs_grid, 256, 8, 0, 3, l2);
    grid_q_build(&g_gq[GQ_IQ2XS], iq2xs_grid, 512, 8, 0, 3, l2);
    grid_q_build(&g_gq[GQ_IQ2S], iq2s_grid, 1024, 8, 0, 3, l2);
    grid_q_build(&g_gq[GQ_IQ3XXS], iq3xxs_grid, 256, 4, 0, 8, l3x);
    grid_q_build(&g_gq[GQ_IQ3S], iq3s_grid, 512, 4, 0, 8, l3s);
    grid_q_build(&g_gq[GQ_IQ1S], iq1s_grid, 2048, 8, 1, 3, l1);
}

static const grid_q *gq(int which) { pthread_once(&g_gq_once, grid_q_init); return &g_gq[which]; }

/* nearest grid entry to target t[elems] (in units of the scale) */
static int grid_nearest(const grid_q *g, const float *t) {
    int code = 0, mul = 1;
    for (int j = 0; j < g->elems; j++, mul *= g->nlev) {
        int li = 0;
        for (int l = 1; l < g->nlev; l++)
            if (t[j] > 0.5f * (g->lev[l - 1] + g->lev[l])) li = l;
        code += li * mul;
    }
    return g->lut[code];
}

/* Sign bits of a group of 8 (bit j: x[j] < 0). With `parity`, an odd count is made even by
 * flipping the weight of smallest magnitude (it costs least). */
static unsigned group_signs(const float *x, int parity) {
    unsigned s = 0;
    for (int j = 0; j < 8; j++) if (x[j] < 0) s |= 1u << j;
    if (parity && (__builtin_popcount(s) & 1)) {
        int jm = 0;
        for (int j = 1; j < 8; j++) if (fabsf(x[j]) < fabsf(x[jm])) jm = j;
        s ^= 1u << jm;
    }
    return s;
}

/* Quantize a unit of `len` weights (multiple of 8) with magnitude grid `g` and float scale
 * `s` > 0: signs per 8, grid entries per g->elems. Writes idx[len / elems] and sbits[len / 8]
 * (when non-NULL) and returns the squared error. */
static float unit_quant_signed(const grid_q *g, const float *x, int len, float s, int parity,
                               uint16_t *idx, uint8_t *sbits) {
    float err = 0;
    for (int o = 0; o < len; o += 8) {
        unsigned sb = group_signs(x + o, parity);
        float t[8];
        for (int j = 0; j < 8; j++) t[j] = ((sb >> j) & 1 ? -x[o + j] : x[o + j]) / s;
        for (int h = 0; h < 8; h += g->elems) {
            int i = grid_nearest(g, t + h);
            for (int j = 0; j < g->elems; j++) {
                float v = s * g->gv[i * g->elems + j];
                float e = (sb >> (h + j)) & 1 ? x[o + h + j] + v : x[o + h + j] - v;
                err += e * e;
            }
            if (idx) idx[(o + h) / g->elems] = (uint16_t)i;
        }
        if (sbits) sbits[o / 8] = (uint8_t)sb;
    }
    return err;
}

/* IQ1: values s * (grid + delta), delta = +-1/8 per `dgroup` weights (8 or 32): the best
 * delta per delta group. Writes idx[len / 8] and dneg[len / dgroup] (1: delta negative). */
static float unit_quant_iq1(const float *x, int len, int dgroup, float s, uint16_t *idx, uint8_t *dneg) {
    const grid_q *g = gq(GQ_IQ1S);
    float err = 0;
    for (int o = 0; o < len; o += dgroup) {
        float best = INFINITY; int bd = 0; uint16_t bidx[4] = {0, 0, 0, 0};
        for (int dn = 0; dn < 2; dn++) {
            float delta = dn ? -0.125f : 0.125f, e = 0; uint16_t ii[4];
            for (int h = 0; h < dgroup; h += 8) {
                float t[8];
                for (int j = 0; j < 8; j++) t[j] = x[o + h + j] / s - delta;
                int i = grid_nearest(g, t);
                ii[h / 8] = (uint16_t)i;
                for (int j = 0; j < 8; j++) { float r = x[o + h + j] - s * (g->gv[i * 8 + j] + delta); e += r * r; }
            }
            if (e < best) { best = e; bd = dn; memcpy(bidx, ii, sizeof ii); }
        }
        err += best;
        if (idx) for (int h = 0; h < dgroup; h += 8) idx[(o + h) / 8] = bidx[h / 8];
        if (dneg) dneg[o / dgroup] = (uint8_t)bd;
    }
    return err;
}

typedef enum { UQ_SIGNED, UQ_IQ1 } uq_kind;
typedef struct {
    uq_kind kind;
    const grid_q *g;      /* UQ_SIGNED */
    int parity;           /* UQ_SIGNED: sign bytes must have even parity */
    int dgroup;           /* UQ_IQ1: delta group */
    float vmax;           /* largest magnitude the unit can represent, in units of s */
} unit_spec;

static float unit_quant(const unit_spec *u, const float *x, int len, float s, uint16_t *idx, uint8_t *aux) {
    if (!(s > 0)) {  /* zero unit */
        float e = 0;
        for (int i = 0; i < len; i++) e += x[i] * x[i];
        if (idx) memset(idx, 0, sizeof(uint16_t) * (size_t)(len / (u->kind == UQ_IQ1 ? 8 : u->g->elems)));
        if (aux) memset(aux, 0, (size_t)(u->kind == UQ_IQ1 ? len / u->dgroup : len / 8));
        return e;
    }
    if (u->kind == UQ_IQ1) return unit_quant_iq1(x, len, u->dgroup, s, idx, aux);
    return unit_quant_signed(u->g, x, len, s, u->parity, idx, aux);
}

/* best float scale of one unit among a few fractions of amax / vmax */
static float unit_best_scale(const unit_spec *u, const float *x, int len) {
    float amax = 0;
    for (int i = 0; i < len; i++) amax = fmaxf(amax, fabsf(x[i]));
    if (amax == 0) return 0;
    static const float fr[] = {0.55f, 0.65f, 0.75f, 0.85f, 0.95f, 1.05f};
    float best = INFINITY, bs = amax / u->vmax;
    for (size_t k = 0; k < sizeof fr / sizeof fr[0]; k++) {
        float s = amax / u->vmax * fr[k];
        float e = unit_quant(u, x, len, s, NULL, NULL);
        if (e < best) { best = e; bs = s; }
    }
    return bs;
}

/* Super-block with nu units of len weights; unit scale = d * mult(code) * k where
 * mult(code) = 2 code + 1, code in [0, cmax]. Chooses d (fp16 bits) and codes; fills
 * idx / aux per unit (strides idx_stride / aux_stride). */
static uint16_t superblock_quant(const unit_spec *u, const float *x, int nu, int len, float k, int cmax,
                                 int *codes, uint16_t *idx, int idx_stride, uint8_t *aux, int aux_stride) {
    float s[16], smax = 0;
    for (int j = 0; j < nu; j++) { s[j] = unit_best_scale(u, x + j * len, len); smax = fmaxf(smax, s[j]); }
    uint16_t dh = f32_to_fp16(smax / ((float)(2 * cmax + 1) * k));
    float d = fp16_to_f32(dh);
    for (int j = 0; j < nu; j++) {
        int c0 = d > 0 ? (int)lrintf((s[j] / (d * k) - 1) / 2) : 0;
        float best = INFINITY; int bc = 0;
        for (int c = c0 - 1; c <= c0 + 1; c++) {
            if (c < 0 || c > cmax) continue;
            float e = unit_quant(u, x + j * len, len, d * (float)(2 * c + 1) * k, NULL, NULL);
            if (e < best) { best = e; bc = c; }
        }
        codes[j] = bc;
        unit_quant(u, x + j * len, len, d * (float)(2 * bc + 1) * k, idx + j * idx_stride, aux ? aux + j * aux_stride : NULL);
    }
    return dh;
}

void iq2_xxs_quant_row_ref(const float *restrict src, void *restrict dst, int64_t n) {
    const unit_spec u = {UQ_SIGNED, gq(GQ_IQ2XXS), 1, 0, 43};
    block_iq2_xxs *b = (block_iq2_xxs *)dst;
    for (int64_t i = 0; i < n / QK_K; i++, b++, src += QK_K) {
        int codes[8]; uint16_t idx[32]; uint8_t sb[32];
        b->d = superblock_quant(&u, src, 8, 32, 0.125f, 15, codes, idx, 4, sb, 4);
        uint8_t *q = (uint8_t *)b->qs;
        for (int ib = 0; ib < 8; ib++) {
            uint32_t a0 = 0, a1 = (uint32_t)codes[ib] << 28;
            for (int l = 0; l < 4; l++) {
                a0 |= (uint32_t)idx[4 * ib + l] << 8 * l;
                a1 |= (uint32_t)(sb[4 * ib + l] & 127) << 7 * l;
            }
            wr32(q + 8 * ib, a0); wr32(q + 8 * ib + 4, a1);
        }
    }
}

void iq2_xs_quant_row_ref(const float *restrict src, void *restrict dst, int64_t n) {
    const unit_spec u = {UQ_SIGNED, gq(GQ_IQ2XS), 1, 0, 43};
    block_iq2_xs *b = (block_iq2_xs *)dst;
    for (int64_t i = 0; i < n / QK_K; i++, b++, src += QK_K) {
        int codes[16]; uint16_t idx[32]; uint8_t sb[32];
        b->d = superblock_quant(&u, src, 16, 16, 0.125f, 15, codes, idx, 2, sb, 2);
        for (int g = 0; g < 32; g++) b->qs[g] = (uint16_t)(idx[g] | ((sb[g] & 127u) << 9));
        for (int j = 0; j < 8; j++) b->scales[j] = (uint8_t)(codes[2 * j] | (codes[2 * j + 1] << 4));
    }
}

void iq2_s_quant_row_ref(const float *restrict src, void *restrict dst, int64_t n) {
    const unit_spec u = {UQ_SIGNED, gq(GQ_IQ2S), 0, 0, 43};
    block_iq2_s *b = (block_iq2_s *)dst;
    for (int64_t i = 0; i < n / QK_K; i++, b++, src += QK_K) {
        int codes[16]; uint16_t idx[32]; uint8_t sb[32];
        b->d = superblock_quant(&u, src, 16, 16, 0.125f, 15, codes, idx, 2, sb, 2);
        memset(b->qh, 0, sizeof b->qh);
        for (int g = 0; g < 32; g++) {
            b->qs[g] = (uint8_t)(idx[g] & 255);
            b->qs[32 + g] = sb[g];
            b->qh[g / 4] |= (uint8_t)((idx[g] >> 8) << (2 * (g % 4)));
        }
        for (int j = 0; j < 8; j++) b->scales[j] = (uint8_t)(codes[2 * j] | (codes[2 * j + 1] << 4));
    }
}

void iq3_xxs_quant_row_ref(const float *restrict src, void *restrict dst, int64_t n) {
    const unit_spec u = {UQ_SIGNED, gq(GQ_IQ3XXS), 1, 0, 62};
    block_iq3_xxs *b = (block_iq3_xxs *)dst;
    for (int64_t i = 0; i < n / QK_K; i++, b++, src += QK_K) {
        int codes[8]; uint16_t idx[64]; uint8_t sb[32];
        b->d = superblock_quant(&u, src, 8, 32, 0.25f, 15, codes, idx, 8, sb, 4);
        for (int g = 0; g < 64; g++) b->qs[g] = (uint8_t)idx[g];
        for (int ib = 0; ib < 8; ib++) {
            uint32_t a = (uint32_t)codes[ib] << 28;
            for (int l = 0; l < 4; l++) a |= (uint32_t)(sb[4 * ib + l] & 127) << 7 * l;
            wr32(b->qs + 64 + 4 * ib, a);
        }
    }
}

void iq3_s_quant_row_ref(const float *restrict src, void *restrict dst, int64_t n) {
    const unit_spec u = {UQ_SIGNED, gq(GQ_IQ3S), 0, 0, 15};
    block_iq3_s *b = (block_iq3_s *)dst;
    for (int64_t i = 0; i < n / QK_K; i++, b++, src += QK_K) {
        int codes[8]; uint16_t idx[64]; uint8_t sb[32];
        b->d = superblock_quant(&u, src, 8, 32, 1.0f, 15, codes, idx, 8, sb, 4);
        memset(b->qh, 0, sizeof b->qh);
        for (int g = 0; g < 64; g++) {
            b->qs[g] = (uint8_t)(idx[g] & 255);
            b->qh[g / 8] |= (uint8_t)((idx[g] >> 8) << (g % 8));
        }
        memcpy(b->signs, sb, 32);
        for (int j = 0; j < 4; j++) b->scales[j] = (uint8_t)(codes[2 * j] | (codes[2 * j + 1] << 4));
    }
}

void iq1_s_quant_row_ref(const float *restrict src, void *restrict dst, int64_t n) {
    const unit_spec u = {UQ_IQ1, NULL, 0, 32, 1.125f};
    block_iq1_s *b = (block_iq1_s *)dst;
    for (int64_t i = 0; i < n / QK_K; i++, b++, src += QK_K) {
        int codes[8]; uint16_t idx[32]; uint8_t dn[8];
        b->d = superblock_quant(&u, src, 8, 32, 1.0f, 7, codes, idx, 4, dn, 1);
        for (int ib = 0; ib < 8; ib++) {
            unsigned qh = ((unsigned)codes[ib] << 12) | ((unsigned)dn[ib] << 15);
            for (int l = 0; l < 4; l++) {
                b->qs[4 * ib + l] = (uint8_t)(idx[4 * ib + l] & 255);
                qh |= (unsigned)(idx[4 * ib + l] >> 8) << 3 * l;
            }
            b->qh[ib] = (uint16_t)qh;
        }
    }
}

void iq1_m_quant_row_ref(const float *restrict src, void *restrict dst, int64_t n) {
    const unit_spec u = {UQ_IQ1, NULL, 0, 8, 1.125f};
    block_iq1_m *b = (block_iq1_m *)dst;
    for (int64_t i = 0; i < n / QK_K; i++, b++, src += QK_K) {
        int codes[16]; uint16_t idx[32]; uint8_t dn[32];
        uint16_t dh = superblock_quant(&u, src, 16, 16, 1.0f, 7, codes, idx, 2, dn, 2);
        memset(b->qh, 0, sizeof b->qh);
        for (int g = 0; g < 32; g++) {
            b->qs[g] = (uint8_t)(idx[g] & 255);
            b->qh[g / 2] |= (uint8_t)(((idx[g] >> 8) | (dn[g] << 3)) << (4 * (g & 1)));
        }
        for (int w = 0; w < 4; w++) {
            unsigned v = 0;
            for (int f = 0; f < 4; f++) v |= (unsigned)codes[4 * w + f] << 3 * f;
            v |= (unsigned)((dh >> (4 * w)) & 15) << 12;
            wr16(b->scales + 2 * w, (uint16_t)v);
        }
    }
}

/* IQ4: nearest of the 16 sorted kvalues to t */
static int kv_nearest(float t) {
    int best = 0; float be = INFINITY;
    for (int k = 0; k < 16; k++) { float e = fabsf(t - (float)kvalues_iq4nl[k]); if (e < be) { be = e; best = k; } }
    return best;
}
static float iq4_unit_err(const float *x, int len, float s, uint8_t *codes) {
    float err = 0;
    for (int i = 0; i < len; i++) {
        int k = s != 0 ? kv_nearest(x[i] / s) : 8;
        float r = x[i] - s * (float)kvalues_iq4nl[k];
        err += r * r;
        if (codes) codes[i] = (uint8_t)k;
    }
    return err;
}
/* best signed scale for 32 weights: the largest-magnitude weight maps near -127 */
static float iq4_best_scale(const float *x, int len) {
    float xm = 0;
    for (int i = 0; i < len; i++) if (fabsf(x[i]) > fabsf(xm)) xm = x[i];
    if (xm == 0) return 0;
    static const float fr[] = {0.85f, 0.9f, 0.95f, 1.0f, 1.05f};
    float best = INFINITY, bs = xm / -127.0f;
    for (size_t k = 0; k < sizeof fr / sizeof fr[0]; k++) {
        float s = xm / -127.0f * fr[k];
        float e = iq4_unit_err(x, len, s, NULL);
        if (e < best) { best = e; bs = s; }
    }
    return bs;
}

void iq4_nl_quant_row_ref(const float *restrict src, void *restrict dst, int64_t n) {
    block_iq4_nl *b = (block_iq4_nl *)dst;
    for (int64_t i = 0; i < n / QK4_NL; i++, b++, src += QK4_NL) {
        b->d = f32_to_fp16(iq4_best_scale(src, 32));
        uint8_t c[32];
        iq4_unit_err(src, 32, fp16_to_f32(b->d), c);
        for (int j = 0; j < 16; j++) b->qs[j] = (uint8_t)(c[j] | (c[j + 16] << 4));
    }
}

void iq4_xs_quant_row_ref(const float *restrict src, void *restrict dst, int64_t n) {
    block_iq4_xs *b = (block_iq4_xs *)dst;
    for (int64_t i = 0; i < n / QK_K; i++, b++, src += QK_K) {
        float s[8], sm = 0;
        for (int ib = 0; ib < 8; ib++) { s[ib] = iq4_best_scale(src + 32 * ib, 32); if (fabsf(s[ib]) > fabsf(sm)) sm = s[ib]; }
        b->d = f32_to_fp16(sm / -32.0f);  /* the largest unit scale gets ls - 32 = -32 */
        float d = fp16_to_f32(b->d);
        b->scales_h = 0;
        memset(b->scales_l, 0, sizeof b->scales_l);
        for (int ib = 0; ib < 8; ib++) {
            int l0 = d != 0 ? (int)lrintf(s[ib] / d) : 0, bl = 0;
            float best = INFINITY;
            for (int l = l0 - 1; l <= l0 + 1; l++) {
                if (l < -32 || l > 31) continue;
                float e = iq4_unit_err(src + 32 * ib, 32, d * (float)l, NULL);
                if (e < best) { best = e; bl = l; }
            }
            uint8_t c[32];
            iq4_unit_err(src + 32 * ib, 32, d * (float)bl, c);
            for (int j = 0; j < 16; j++) b->qs[16 * ib + j] = (uint8_t)(c[j] | (c[j + 16] << 4));
            unsigned ls = (unsigned)(bl + 32);
            b->scales_l[ib / 2] |= (uint8_t)((ls & 15) << (4 * (ib & 1)));
            b->scales_h |= (uint16_t)((ls >> 4) << (2 * ib));
        }
    }
}
