/* Cheaper integer decodes of the weight blocks, shared by C and CUDA (issue 20): the same
 * int8 weights and integer multipliers as the reference decodes of src/quant (ref_iq.c's
 * iq_decode_ref, q2_0_unpack_ref, q6_K_unpack_ref), produced with fewer instructions. The
 * CUDA kernels use them behind switches (docs/KERNELS.md, "Decode variants"); they change how
 * the integers are formed, never which integers, so the dot products keep their bits.
 * tests/test_decode_fast.c checks every function here against the reference exhaustively
 * (every grid index with every sign pattern, every code in every position, every scale byte).
 *
 * Techniques:
 *   sign masks by table   a sign index (IQ2_XXS/IQ2_XS/IQ3_XXS: 7-bit ksigns index; IQ2_S /
 *                         IQ3_S: the sign byte itself) selects a 64-bit mask, byte j 0xFF where
 *                         weight j is negative: one load instead of unpacking bits to bytes
 *   signed grid bytes     -g = (g ^ 0xFF) + 1 per byte; as a 32-bit word (g ^ m) + (m & 0x01..)
 *                         with no carry between bytes, since no grid byte is 0 (every grid's
 *                         magnitudes are >= 1: asserted by the test for every row)
 *   IQ4_NL codebook       the 16 int8 values kept as 4 words; byte_perm picks by the low 3 bits
 *                         of each code from words 0-1 and 2-3, and a third byte_perm chooses by
 *                         bit 3: 8 codes per 3 x 2 + 2 byte_perms, no memory lookups
 *   one IQ2_XXS sub-block the 8 bytes of a 32-weight sub-block read once: 4 grid rows (one
 *                         64-bit load each), 4 sign masks and the multiplier from them
 *   Q2_0 word expansion   the 4 crumb planes of a 32-bit word (shift + mask) transposed into
 *                         weight order by byte_perm, then c - 1 per byte as (c + 0x7F) ^ 0x80
 *   Q6_K SWAR offset      q - 32 per byte (q in 0..63) as (q + 0x60) ^ 0x80: no per-byte
 *                         subtract (no byte can carry or borrow); a cooperative part's 16 ql
 *                         and 16 qh bytes (2-aligned) by five 4-byte loads and funnel shifts
 *                         each (df_ld128_a2) instead of eight 2-byte loads
 *
 * On the device the loads assume the block alignments of src/cuda/quant_blocks.cuh (a block
 * is aligned to gcd(block bytes, row bytes): 2 for the IQ formats, Q2_0 and Q6_K, 8 for IQ4_XS)
 * and 8-byte aligned grid rows; on the host they are memcpy. Plain C with no globals. */
#ifndef STRATA_DECODE_FAST_H
#define STRATA_DECODE_FAST_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "blocks.h"

#if defined(__CUDACC__)
#define DF_FN static __host__ __device__ __forceinline__
#else
#define DF_FN static inline
#endif

/* ---- loads (little-endian) ------------------------------------------------------------- */
DF_FN uint32_t df_ld16(const uint8_t *p) {
#ifdef __CUDA_ARCH__
    return *(const uint16_t *)p;
#else
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
#endif
}
/* 32 bits from a 2-aligned address */
DF_FN uint32_t df_ld32_a2(const uint8_t *p) { return df_ld16(p) | df_ld16(p + 2) << 16; }
/* 32 bits from a 4-aligned address */
DF_FN uint32_t df_ld32(const uint8_t *p) {
#ifdef __CUDA_ARCH__
    return *(const uint32_t *)p;
#else
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
#endif
}
/* 16 bytes from a 2-aligned address as four 32-bit words: five 4-byte loads from the 4-aligned
 * address at or just below p, joined by funnel shifts (a Q6_K part's ql or qh bytes: 5 loads
 * where df_ld32_a2 takes 8 two-byte ones). Reads the 2 bytes before p when p is 2 mod 4 and up to
 * 4 bytes after p + 16: the caller guarantees they are readable (inside the same Q6_K block for
 * every part, and a 2 mod 4 block never starts an allocation); the words are p's bytes whatever
 * the alignment. */
DF_FN void df_ld128_a2(const uint8_t *p, uint32_t *w) {
    const unsigned m = (unsigned)((uintptr_t)p & 2u);   /* 0 or 2 */
    const uint8_t *b = p - m;
    uint32_t x[5];
    for (int i = 0; i < 5; i++) x[i] = df_ld32(b + 4 * i);
    for (int i = 0; i < 4; i++) {
#ifdef __CUDA_ARCH__
        w[i] = __funnelshift_r(x[i], x[i + 1], 8 * m);
#else
        w[i] = m ? (x[i] >> 16 | x[i + 1] << 16) : x[i];
#endif
    }
}
/* 64 bits from an 8-aligned address (grid rows, mask tables) */
DF_FN uint64_t df_ld64(const void *p) {
#ifdef __CUDA_ARCH__
    return *(const uint64_t *)p;
#else
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
#endif
}

/* byte_perm: byte n of the result = byte ((s >> 4n) & 7) of the 8 bytes b:a (a = bytes 0..3).
 * Every selector passed here has bit 3 of its four low nibbles clear (the one place where
 * PTX's prmt and the documented __byte_perm could read a selector differently); the host
 * version returns a poison word for any other selector, so the CPU test would catch it. */
DF_FN uint32_t df_prmt(uint32_t a, uint32_t b, uint32_t s) {
#ifdef __CUDA_ARCH__
    return __byte_perm(a, b, s);
#else
    if (s & 0x8888u) return 0xA5A5A5A5u;
    uint64_t v = (uint64_t)b << 32 | a;
    uint32_t r = 0;
    for (int n = 0; n < 4; n++) r |= (uint32_t)((v >> (8 * ((s >> (4 * n)) & 7))) & 0xFFu) << (8 * n);
    return r;
#endif
}

/* ---- signs ------------------------------------------------------------------------------ */
/* byte j = 0xFF where bit j of s is set (s: 8 sign bits) */
DF_FN uint64_t df_byte_mask(uint32_t s) {
    uint64_t m = 0;
    for (int j = 0; j < 8; j++)
        if ((s >> j) & 1) m |= (uint64_t)0xFF << (8 * j);
    return m;
}
/* the tables the decodes read: ksm[i] = df_byte_mask(ksigns[i]) (7-bit sign index), bsm[s] =
 * df_byte_mask(s) (a sign byte itself) */
DF_FN void df_sign_tables_fill(const uint8_t *ksigns, uint64_t *ksm, uint64_t *bsm) {
    for (int i = 0; i < 128; i++) ksm[i] = df_byte_mask(ksigns[i]);
    for (int i = 0; i < 256; i++) bsm[i] = df_byte_mask((uint32_t)i);
}
/* the 4 bytes of g negated where m's byte is 0xFF (each byte of g nonzero where negated) */
DF_FN uint32_t df_sign(uint32_t g, uint32_t m) { return (g ^ m) + (m & 0x01010101u); }

/* The sign masks by ALU (STRATA_CUDA_MOE_FAST bit 512, the T = 1 expert kernels): ksigns_iq2xs[i] =
 * i | parity(i) << 7 (a fact of the table; test_decode_fast checks all 128), and 4 sign bits
 * spread to bytes of 0 / 1 by one multiply (the four shifted copies 0-3, 7-10, 14-17, 21-24 never
 * overlap, so no carry); df_sign_b(g, b) = df_sign(g, b * 0xFF). */
DF_FN uint32_t df_ksign_bits(uint32_t i7) {
#ifdef __CUDA_ARCH__
    return i7 | (uint32_t)(__popc(i7) & 1) << 7;
#else
    return i7 | (uint32_t)(__builtin_popcount(i7) & 1) << 7;
#endif
}
DF_FN uint32_t df_nib_bytes(uint32_t nib) { return (nib * 0x00204081u) & 0x01010101u; }
DF_FN uint32_t df_sign_b(uint32_t g, uint32_t b) { return (g ^ (b * 0xFFu)) + b; }

/* ---- the codebooks the IQ decodes read (device or host copies) --------------------------- */
typedef struct df_tables {
    const uint8_t (*iq2xxs)[8];   /* [256] */
    const uint8_t (*iq2xs)[8];    /* [512] */
    const uint8_t (*iq2s)[8];     /* [1024] */
    const uint8_t (*iq3xxs)[4];   /* [256] */
    const uint8_t (*iq3s)[4];     /* [512] */
    const uint64_t *ksm;          /* [128] */
    const uint64_t *bsm;          /* [256] */
} df_tables;

/* 8 weights from a 8-value grid row and a sign mask: words w[0], w[1] */
DF_FN void df_grid8(const uint8_t *row, uint64_t s, uint32_t *w) {
    uint64_t g = df_ld64(row);
    w[0] = df_sign((uint32_t)g, (uint32_t)s);
    w[1] = df_sign((uint32_t)(g >> 32), (uint32_t)(s >> 32));
}

/* ---- IQ super-blocks by parts ------------------------------------------------------------
 * df_<fmt>_part(blk, k, t, w, m), k = 0..7: the 32 weights 32k..32k+31 of the super-block as
 * 8 words of 4 int8 (w[0..3]: 16-weight sub-block 2k in weight order; w[4..7]: sub-block
 * 2k + 1) and the two sub-blocks' multipliers m[0], m[1] (iq_decode_ref's m[2k], m[2k+1]). */
/* 8 weights from a grid row's two words g0, g1 and their signs i: a 7-bit ksigns index (byte 0) or a sign
 * byte itself (byte 1, IQ3_S); the masks from the table tab (ksm for an index, bsm for a byte: alu 0) or by
 * ALU (alu 1: df_ksign_bits, df_nib_bytes; STRATA_CUDA_MOE_FAST bit 512, STRATA_CUDA_MV_KQI bit 16). Both
 * give the same w; alu and byte are constants where the callers inline this (the CUDA kq steps pass their
 * shared-memory copy of the table). */
DF_FN void df_signs8(uint32_t g0, uint32_t g1, uint32_t i, int alu, int byte, const uint64_t *tab, uint32_t *w) {
    if (alu) {
        const uint32_t s = byte ? i : df_ksign_bits(i);
        w[0] = df_sign_b(g0, df_nib_bytes(s & 15));
        w[1] = df_sign_b(g1, df_nib_bytes(s >> 4));
    } else {
        const uint64_t s = tab[i];
        w[0] = df_sign(g0, (uint32_t)s);
        w[1] = df_sign(g1, (uint32_t)(s >> 32));
    }
}

/* IQ2_XXS part k, the sign masks as df_signs8's alu says */
DF_FN void df_iq2xxs_part_s(const uint8_t *blk, int k, const df_tables *t, uint32_t *w, int *m, int alu) {
    const uint8_t *q = blk + offsetof(block_iq2_xxs, qs) + 8 * k;   /* u32 grid indices, u32 signs | ls */
    uint32_t a0 = df_ld32_a2(q), a1 = df_ld32_a2(q + 4);
    m[0] = m[1] = 2 * (int)(a1 >> 28) + 1;
    for (int l = 0; l < 4; l++) {
        const uint64_t g = df_ld64(t->iq2xxs[(a0 >> (8 * l)) & 255]);
        df_signs8((uint32_t)g, (uint32_t)(g >> 32), (a1 >> (7 * l)) & 127, alu, 0, t->ksm, w + 2 * l);
    }
}
DF_FN void df_iq2xxs_part(const uint8_t *blk, int k, const df_tables *t, uint32_t *w, int *m) { df_iq2xxs_part_s(blk, k, t, w, m, 0); }
/* df_iq2xxs_part with the sign masks by ALU (t->ksm unread): the same w and m */
DF_FN void df_iq2xxs_part_sa(const uint8_t *blk, int k, const df_tables *t, uint32_t *w, int *m) { df_iq2xxs_part_s(blk, k, t, w, m, 1); }

DF_FN void df_iq2xs_part(const uint8_t *blk, int k, const df_tables *t, uint32_t *w, int *m) {
    const uint8_t *q = blk + offsetof(block_iq2_xs, qs) + 8 * k;   /* 4 u16: 9-bit index, 7-bit sign index */
    uint32_t v01 = df_ld32_a2(q), v23 = df_ld32_a2(q + 4);
    uint32_t sc = blk[offsetof(block_iq2_xs, scales) + k];
    m[0] = 2 * (int)(sc & 15) + 1;
    m[1] = 2 * (int)(sc >> 4) + 1;
    for (int l = 0; l < 4; l++) {
        uint32_t v = ((l < 2 ? v01 : v23) >> (16 * (l & 1))) & 0xFFFFu;
        df_grid8(t->iq2xs[v & 511], t->ksm[v >> 9], w + 2 * l);
    }
}

DF_FN void df_iq2s_part(const uint8_t *blk, int k, const df_tables *t, uint32_t *w, int *m) {
    const uint8_t *qs = blk + offsetof(block_iq2_s, qs);
    uint32_t lo = df_ld32_a2(qs + 4 * k), sg = df_ld32_a2(qs + QK_K / 8 + 4 * k);   /* index bits 0..7, sign bytes */
    uint32_t h = blk[offsetof(block_iq2_s, qh) + k];                                 /* index bits 8..9 of 4 groups */
    uint32_t sc = blk[offsetof(block_iq2_s, scales) + k];
    m[0] = 2 * (int)(sc & 15) + 1;
    m[1] = 2 * (int)(sc >> 4) + 1;
    for (int l = 0; l < 4; l++) {
        uint32_t idx = ((lo >> (8 * l)) & 255) | ((h >> (2 * l)) & 3) << 8;
        df_grid8(t->iq2s[idx], t->bsm[(sg >> (8 * l)) & 255], w + 2 * l);
    }
}

/* IQ3_XXS part k, the sign masks as df_signs8's alu says */
DF_FN void df_iq3xxs_part_s(const uint8_t *blk, int k, const df_tables *t, uint32_t *w, int *m, int alu) {
    const uint8_t *qs = blk + offsetof(block_iq3_xxs, qs);
    uint32_t i03 = df_ld32_a2(qs + 8 * k), i47 = df_ld32_a2(qs + 8 * k + 4);   /* 8 grid indices of 4 */
    uint32_t a = df_ld32_a2(qs + QK_K / 4 + 4 * k);                            /* 4 sign indices | ls */
    m[0] = m[1] = 2 * (int)(a >> 28) + 1;
    for (int l = 0; l < 4; l++) {
        uint32_t ix = l < 2 ? i03 : i47, sh = 16 * (l & 1);
        df_signs8(df_ld32(t->iq3xxs[(ix >> sh) & 255]), df_ld32(t->iq3xxs[(ix >> (sh + 8)) & 255]), (a >> (7 * l)) & 127,
                  alu, 0, t->ksm, w + 2 * l);
    }
}
DF_FN void df_iq3xxs_part(const uint8_t *blk, int k, const df_tables *t, uint32_t *w, int *m) { df_iq3xxs_part_s(blk, k, t, w, m, 0); }
/* df_iq3xxs_part with the sign masks by ALU (t->ksm unread): the same w and m */
DF_FN void df_iq3xxs_part_sa(const uint8_t *blk, int k, const df_tables *t, uint32_t *w, int *m) { df_iq3xxs_part_s(blk, k, t, w, m, 1); }

DF_FN void df_iq3s_part(const uint8_t *blk, int k, const df_tables *t, uint32_t *w, int *m) {
    const uint8_t *qs = blk + offsetof(block_iq3_s, qs);
    uint32_t i03 = df_ld32_a2(qs + 8 * k), i47 = df_ld32_a2(qs + 8 * k + 4);   /* index bits 0..7 of 8 entries */
    uint32_t h = blk[offsetof(block_iq3_s, qh) + k];                             /* bit 8 of the same 8 */
    uint32_t sg = df_ld32_a2(blk + offsetof(block_iq3_s, signs) + 4 * k);        /* a sign byte per 8 weights */
    m[0] = m[1] = 2 * (int)((blk[offsetof(block_iq3_s, scales) + k / 2] >> (4 * (k & 1))) & 15) + 1;
    for (int l = 0; l < 4; l++) {
        uint32_t ix = l < 2 ? i03 : i47, sh = 16 * (l & 1);
        uint32_t ia = ((ix >> sh) & 255) | ((h >> (2 * l)) & 1) << 8;
        uint32_t ib = ((ix >> (sh + 8)) & 255) | ((h >> (2 * l + 1)) & 1) << 8;
        uint64_t s = t->bsm[(sg >> (8 * l)) & 255];
        w[2 * l] = df_sign(df_ld32(t->iq3s[ia]), (uint32_t)s);
        w[2 * l + 1] = df_sign(df_ld32(t->iq3s[ib]), (uint32_t)(s >> 32));
    }
}

/* ---- IQ4_NL / IQ4_XS codebook ------------------------------------------------------------
 * The 16 values of kvalues_iq4nl (a fact of the format) as 4 little-endian words; the test
 * checks them against src/quant/iq_tables.c. */
#define DF_KV_W0 0xBFAD9881u   /* -127 -104  -83  -65 */
#define DF_KV_W1 0xF6EADDCFu   /*  -49  -35  -22  -10 */
#define DF_KV_W2 0x26190D01u   /*    1   13   25   38 */
#define DF_KV_W3 0x71594535u   /*   53   69   89  113 */
/* q: 4 bytes of two 4-bit codes each; lo = the values of the 4 low nibbles, hi = of the 4 high */
DF_FN void df_kv8(uint32_t q, uint32_t *lo, uint32_t *hi) {
    uint32_t s7 = q & 0x77777777u;                            /* low 3 bits of every code */
    uint32_t pick = 0x32103210u | ((q & 0x88888888u) >> 1);   /* code n: byte n of the first or (+4) second pick */
    /* codes 0..3 = bytes 0, 1 (low, high nibble each), codes 4..7 = bytes 2, 3 */
    uint32_t a = df_prmt(df_prmt(DF_KV_W0, DF_KV_W1, s7 & 0x7777u), df_prmt(DF_KV_W2, DF_KV_W3, s7 & 0x7777u),
                         pick & 0x7777u);
    uint32_t b = df_prmt(df_prmt(DF_KV_W0, DF_KV_W1, s7 >> 16), df_prmt(DF_KV_W2, DF_KV_W3, s7 >> 16), pick >> 16);
    *lo = df_prmt(a, b, 0x6420u);
    *hi = df_prmt(a, b, 0x7531u);
}
/* IQ4_XS part k: weights 32k.. (w[0..3] low nibbles of qs[16k..16k+15], w[4..7] high) and
 * m[0] = m[1] = ls - 32 */
DF_FN void df_iq4xs_part(const uint8_t *blk, int k, uint32_t *w, int *m) {
    int ls = (int)((blk[offsetof(block_iq4_xs, scales_l) + k / 2] >> (4 * (k & 1))) & 15) |
             (int)((df_ld16(blk + offsetof(block_iq4_xs, scales_h)) >> (2 * k)) & 3) << 4;
    m[0] = m[1] = ls - 32;
    const uint8_t *q = blk + offsetof(block_iq4_xs, qs) + 16 * k;
    for (int i = 0; i < 4; i++) df_kv8(df_ld32(q + 4 * i), &w[i], &w[4 + i]);
}
/* IQ4_NL block (32 weights): lo[i] = weights 4i..4i+3, hi[i] = weights 16 + 4i.. */
DF_FN void df_iq4nl_block(const uint8_t *blk, uint32_t *lo, uint32_t *hi) {
    for (int i = 0; i < 4; i++) df_kv8(df_ld32_a2(blk + offsetof(block_iq4_nl, qs) + 4 * i), &lo[i], &hi[i]);
}

/* ---- Q2_0 --------------------------------------------------------------------------------
 * a 32-bit word of codes (16 weights, four 2-bit codes per byte from the low bits up) into
 * out[k] = the int8 values c - 1 of byte k's four codes, in weight order */
DF_FN void df_q2_0_word(uint32_t w, uint32_t *out) {
    uint32_t c0 = w & 0x03030303u, c1 = (w >> 2) & 0x03030303u;   /* c_j: code j of bytes 0..3 */
    uint32_t c2 = (w >> 4) & 0x03030303u, c3 = (w >> 6) & 0x03030303u;
    uint32_t p01l = df_prmt(c0, c1, 0x5140u), p01h = df_prmt(c0, c1, 0x7362u);   /* c0.0 c1.0 c0.1 c1.1 | .2 .3 */
    uint32_t p23l = df_prmt(c2, c3, 0x5140u), p23h = df_prmt(c2, c3, 0x7362u);
    out[0] = (df_prmt(p01l, p23l, 0x5410u) + 0x7F7F7F7Fu) ^ 0x80808080u;
    out[1] = (df_prmt(p01l, p23l, 0x7632u) + 0x7F7F7F7Fu) ^ 0x80808080u;
    out[2] = (df_prmt(p01h, p23h, 0x5410u) + 0x7F7F7F7Fu) ^ 0x80808080u;
    out[3] = (df_prmt(p01h, p23h, 0x7632u) + 0x7F7F7F7Fu) ^ 0x80808080u;
}
/* a Q2_0 block: q[4i + k] = weights 16i + 4k .. 16i + 4k + 3 */
DF_FN void df_q2_0_block(const uint8_t *blk, uint32_t *q) {
    for (int i = 0; i < 4; i++) df_q2_0_word(df_ld32_a2(blk + offsetof(block_q2_0, qs) + 4 * i), q + 4 * i);
}

/* ---- Q6_K -------------------------------------------------------------------------------- */
/* bytes q - 32 of 4 six-bit codes q (bytes 0..63) */
DF_FN uint32_t df_q6_offset(uint32_t q) { return (q + 0x60606060u) ^ 0x80808080u; }
/* sub-block s (16 weights): w[i] = weights 16 s + 4 i.. (bp_q6_K's layout) */
DF_FN void df_q6_K_sub(const uint8_t *blk, int s, uint32_t *w) {
    const uint8_t *ql = blk + offsetof(block_q6_K, ql) + 64 * (s / 8) + 16 * (s % 4);
    const uint8_t *qh = blk + offsetof(block_q6_K, qh) + 32 * (s / 8) + 16 * (s % 2);
    int sl = 4 * ((s % 8) / 4), shh = 2 * ((s % 8) / 2);
    for (int i = 0; i < 4; i++)
        w[i] = df_q6_offset(((df_ld32_a2(ql + 4 * i) >> sl) & 0x0F0F0F0Fu) | ((df_ld32_a2(qh + 4 * i) >> shh) & 0x03030303u) << 4);
}
/* the cooperative kernel's part k (src/cuda/kquant_coop.cuh): sub-blocks sA = 8 (k / 4) + k % 4
 * (wa) and sA + 4 (wb) */
DF_FN void df_q6_K_part(const uint8_t *blk, int k, uint32_t *wa, uint32_t *wb) {
    int half = k >> 2, q = k & 3, hs = 2 * (q >> 1);
    const uint8_t *ql = blk + offsetof(block_q6_K, ql) + 64 * half + 16 * q;
    const uint8_t *qh = blk + offsetof(block_q6_K, qh) + 32 * half + 16 * (q & 1);
    uint32_t lw[4], hw[4];   /* ql ends at byte 128 (qh follows), qh at 192 (scales follow) */
    df_ld128_a2(ql, lw);
    df_ld128_a2(qh, hw);
    for (int i = 0; i < 4; i++) {
        uint32_t l = lw[i], hh = hw[i];
        wa[i] = df_q6_offset((l & 0x0F0F0F0Fu) | ((hh >> hs) & 0x03030303u) << 4);
        wb[i] = df_q6_offset(((l >> 4) & 0x0F0F0F0Fu) | ((hh >> (hs + 4)) & 0x03030303u) << 4);
    }
}
#endif
