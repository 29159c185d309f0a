/* src/quant/decode_fast.h (the decodes the CUDA kernels use behind STRATA_IQ_DECODE_FAST,
 * STRATA_Q2_WORD_EXPAND and STRATA_Q6_SWAR) against the reference decodes of src/quant, bit
 * for bit and exhaustively:
 *   IQ2_XXS / IQ2_XS / IQ2_S / IQ3_XXS / IQ3_S: every grid index with every sign pattern (in
 *     every sign position of its group), every scale nibble / scale byte value; each part k of
 *     every block against iq_decode_ref's w8 and m
 *   IQ4_XS / IQ4_NL: every 16-bit half of a 32-bit code word (so every code in every nibble
 *     position, next to every neighbour), every scales_h word and scales_l byte
 *   Q2_0: every 16-bit half of every code word against q2_0_unpack_ref
 *   Q6_K: every 32-bit word of four 6-bit codes through the SWAR offset, and every code in every
 *     weight position of a block (both kernels' layouts) against q6_K_unpack_ref
 * plus the tables (sign masks against ksigns_iq2xs, the IQ4 codebook words against
 * kvalues_iq4nl) and the precondition of the signed-byte trick (no grid byte is 0).
 * And the rules of STRATA_CUDA_ROUTE=parallel (src/cuda/moe.cu, moe_route_token_par) and of
 * STRATA_CUDA_MOE_FAST's routing by a CTA (moe_route1_body: ranks computed per expert), written
 * out lane by lane in C, against the CPU's routing (moe_route): same experts, same weight bits,
 * on random logits, ties, underflowing probabilities and expert counts that are not multiples
 * of 32 (the warp intrinsics themselves are checked on the GPU: tests/gpu/test_gpu_variants). */
#include "test.h"
#include <stdint.h>
#include "quant/blocks.h"
#include "quant/iq_tables.h"
#include "quant/ref.h"
#include "quant/ref_iq.h"
#include "quant/decode_fast.h"
#include "cpu/moe.h"

static uint64_t g_ksm[128], g_bsm[256];
static df_tables g_t;

static uint64_t rs = 0x2545F4914F6CDD1Dull;
static uint32_t rnd32(void) {
    rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17;
    return (uint32_t)(rs >> 32);
}
/* a bijection of 16-bit values (odd multiplier), so the other half of a word varies too */
static uint32_t mix16(uint32_t v) { return (v * 40503u + 12345u) & 0xFFFFu; }

static int byte_of(uint32_t w, int i) { return (int8_t)(uint8_t)(w >> (8 * i)); }

static void wr16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void wr32(uint8_t *p, uint32_t v) { wr16(p, v & 0xFFFF); wr16(p + 2, v >> 16); }

/* one super-block through df_<fmt>_part for k = 0..7 vs iq_decode_ref: returns mismatches */
typedef void (*part_fn)(const uint8_t *, int, const df_tables *, uint32_t *, int *);
static int check_iq_block(int type, const uint8_t *blk, part_fn part) {
    int8_t w8[256];
    int16_t m[16];
    iq_decode_ref(type, blk, w8, m);
    int bad = 0;
    for (int k = 0; k < 8; k++) {
        uint32_t w[8];
        int mm[2];
        if (part) part(blk, k, &g_t, w, mm);
        else df_iq4xs_part(blk, k, w, mm);
        for (int u = 0; u < 2; u++) {
            bad += mm[u] != m[2 * k + u];
            for (int i = 0; i < 16; i++) bad += byte_of(w[4 * u + i / 4], i % 4) != w8[32 * k + 16 * u + i];
        }
    }
    return bad;
}

static void test_tables(void) {
    int bad = 0;
    for (int i = 0; i < 128; i++)
        for (int j = 0; j < 8; j++) bad += (int)((g_ksm[i] >> (8 * j)) & 0xFF) != (((ksigns_iq2xs[i] >> j) & 1) ? 0xFF : 0);
    for (int i = 0; i < 256; i++)
        for (int j = 0; j < 8; j++) bad += (int)((g_bsm[i] >> (8 * j)) & 0xFF) != (((i >> j) & 1) ? 0xFF : 0);
    CHECKF(bad == 0, "sign mask tables: %d bytes wrong", bad);
    bad = 0;   /* the ALU form of the ksigns masks (STRATA_CUDA_MOE_FAST bit 512) */
    for (uint32_t i = 0; i < 128; i++) {
        const uint32_t s = df_ksign_bits(i);
        bad += s != ksigns_iq2xs[i];
        bad += ((uint64_t)(df_nib_bytes(s >> 4) * 0xFFu) << 32 | df_nib_bytes(s & 15) * 0xFFu) != g_ksm[i];
    }
    CHECKF(bad == 0, "ksigns by parity / nibble bytes: %d of 128 differ", bad);
    const uint32_t kw[4] = { DF_KV_W0, DF_KV_W1, DF_KV_W2, DF_KV_W3 };
    bad = 0;
    for (int c = 0; c < 16; c++) bad += byte_of(kw[c / 4], c % 4) != kvalues_iq4nl[c];
    CHECKF(bad == 0, "IQ4 codebook words: %d values differ from kvalues_iq4nl", bad);
    /* the signed-byte trick needs every grid byte nonzero (-g = (g ^ 0xFF) + 1 without a carry) */
    int zero = 0;
    for (int i = 0; i < 256 * 8; i++) zero += iq2xxs_grid[i / 8][i % 8] == 0;
    for (int i = 0; i < 512 * 8; i++) zero += iq2xs_grid[i / 8][i % 8] == 0;
    for (int i = 0; i < 1024 * 8; i++) zero += iq2s_grid[i / 8][i % 8] == 0;
    for (int i = 0; i < 256 * 4; i++) zero += iq3xxs_grid[i / 4][i % 4] == 0;
    for (int i = 0; i < 512 * 4; i++) zero += iq3s_grid[i / 4][i % 4] == 0;
    CHECKF(zero == 0, "%d grid bytes are 0", zero);
    /* df_sign on every byte value g (1..255) and both signs, in every byte position */
    bad = 0;
    for (int g = 1; g < 256; g++)
        for (int pos = 0; pos < 4; pos++)
            for (int neg = 0; neg < 2; neg++) {
                uint32_t gw = 0x2B192B08u & ~(0xFFu << (8 * pos));   /* grid-like neighbours */
                gw |= (uint32_t)g << (8 * pos);
                uint32_t mw = neg ? 0xFFu << (8 * pos) : 0;
                mw |= 0xFF000000u >> (8 * ((pos + 1) % 4)) & ~(0xFFu << (8 * pos));   /* a negated neighbour */
                uint32_t r = df_sign(gw, mw);
                for (int i = 0; i < 4; i++) {
                    int gi = (uint8_t)(gw >> (8 * i)), want = ((mw >> (8 * i)) & 0xFF) ? -gi : gi;
                    bad += byte_of(r, i) != (int8_t)want;
                }
            }
    CHECKF(bad == 0, "df_sign: %d bytes wrong", bad);
    printf("tables: 128 ksigns masks, 256 byte masks, 16 IQ4 values, every grid byte nonzero, df_sign on 255 x 4 x 2\n");
}

/* IQ2_XXS: group G = 32 n + 4 ib + l of block n: grid index G & 255, sign index G >> 8 */
static void test_iq2_xxs(void) {
    int bad = 0, blocks = 0;
    uint8_t blk[sizeof(block_iq2_xxs)];
    for (int n = 0; n < 1024; n++, blocks++) {
        wr16(blk, 0x3C00);
        for (int ib = 0; ib < 8; ib++) {
            uint32_t a0 = 0, a1 = (uint32_t)((n + 3 * ib) & 15) << 28;
            for (int l = 0; l < 4; l++) {
                uint32_t G = 32u * n + 4u * ib + l;
                a0 |= (G & 255) << (8 * l);
                a1 |= (G >> 8) << (7 * l);
            }
            wr32(blk + 2 + 8 * ib, a0);
            wr32(blk + 6 + 8 * ib, a1);
        }
        bad += check_iq_block(TYPE_IQ2_XXS, blk, df_iq2xxs_part);
        bad += check_iq_block(TYPE_IQ2_XXS, blk, df_iq2xxs_part_sa);   /* the signs by ALU */
    }
    CHECKF(bad == 0, "IQ2_XXS: %d values differ (256 grid x 128 sign indices, 16 scales)", bad);
    printf("IQ2_XXS: %d blocks, every grid index x sign index, every scale: %s\n", blocks, bad ? "DIFFER" : "equal");
}

/* IQ2_XS: group G: grid G & 511, sign index G >> 9; scale bytes (8 n + i) & 255 */
static void test_iq2_xs(void) {
    int bad = 0, blocks = 0;
    uint8_t blk[sizeof(block_iq2_xs)];
    for (int n = 0; n < 2048; n++, blocks++) {
        wr16(blk, 0x3C00);
        for (int g = 0; g < 32; g++) {
            uint32_t G = 32u * n + g;
            wr16(blk + offsetof(block_iq2_xs, qs) + 2 * g, (G & 511) | (G >> 9) << 9);
        }
        for (int i = 0; i < 8; i++) blk[offsetof(block_iq2_xs, scales) + i] = (uint8_t)(8 * n + i);
        bad += check_iq_block(TYPE_IQ2_XS, blk, df_iq2xs_part);
    }
    CHECKF(bad == 0, "IQ2_XS: %d values differ (512 grid x 128 sign indices, 256 scale bytes)", bad);
    printf("IQ2_XS: %d blocks, every grid index x sign index, every scale byte: %s\n", blocks, bad ? "DIFFER" : "equal");
}

/* IQ2_S: group G: grid G & 1023, sign byte G >> 10 */
static void test_iq2_s(void) {
    int bad = 0, blocks = 0;
    uint8_t blk[sizeof(block_iq2_s)];
    for (int n = 0; n < 8192; n++, blocks++) {
        memset(blk, 0, sizeof blk);
        wr16(blk, 0x3C00);
        for (int g = 0; g < 32; g++) {
            uint32_t G = 32u * n + g, idx = G & 1023;
            blk[offsetof(block_iq2_s, qs) + g] = (uint8_t)idx;
            blk[offsetof(block_iq2_s, qs) + 32 + g] = (uint8_t)(G >> 10);
            blk[offsetof(block_iq2_s, qh) + g / 4] |= (uint8_t)((idx >> 8) << (2 * (g % 4)));
        }
        for (int i = 0; i < 8; i++) blk[offsetof(block_iq2_s, scales) + i] = (uint8_t)(8 * n + 3 * i);
        bad += check_iq_block(TYPE_IQ2_S, blk, df_iq2s_part);
    }
    CHECKF(bad == 0, "IQ2_S: %d values differ (1024 grid x 256 sign bytes, 256 scale bytes)", bad);
    printf("IQ2_S: %d blocks, every grid index x sign byte, every scale byte: %s\n", blocks, bad ? "DIFFER" : "equal");
}

/* IQ3_XXS: group G: first entry G & 255, second (G & 255) ^ 0x5A, sign index (G >> 8) & 127 */
static void test_iq3_xxs(void) {
    int bad = 0, blocks = 0;
    uint8_t blk[sizeof(block_iq3_xxs)];
    for (int n = 0; n < 1024; n++, blocks++) {
        wr16(blk, 0x3C00);
        uint8_t *qs = blk + offsetof(block_iq3_xxs, qs);
        for (int ib = 0; ib < 8; ib++) {
            uint32_t a = (uint32_t)((n + 5 * ib) & 15) << 28;
            for (int l = 0; l < 4; l++) {
                uint32_t G = 32u * n + 4u * ib + l;
                qs[8 * ib + 2 * l] = (uint8_t)(G & 255);
                qs[8 * ib + 2 * l + 1] = (uint8_t)((G & 255) ^ 0x5A);
                a |= ((G >> 8) & 127) << (7 * l);
            }
            wr32(qs + QK_K / 4 + 4 * ib, a);
        }
        bad += check_iq_block(TYPE_IQ3_XXS, blk, df_iq3xxs_part);
        bad += check_iq_block(TYPE_IQ3_XXS, blk, df_iq3xxs_part_sa);   /* the signs by ALU */
    }
    CHECKF(bad == 0, "IQ3_XXS: %d values differ (256 grid x 128 sign indices in both halves, 16 scales)", bad);
    printf("IQ3_XXS: %d blocks, every grid index x sign index in both halves, every scale: %s\n", blocks,
           bad ? "DIFFER" : "equal");
}

/* IQ3_S: group G (8 weights): entries G & 511 and (G & 511) ^ 0x0A5, sign byte G >> 9 */
static void test_iq3_s(void) {
    int bad = 0, blocks = 0;
    uint8_t blk[sizeof(block_iq3_s)];
    for (int n = 0; n < 4096; n++, blocks++) {
        memset(blk, 0, sizeof blk);
        wr16(blk, 0x3C00);
        for (int g = 0; g < 32; g++) {
            uint32_t G = 32u * n + g, ia = G & 511, ib = ia ^ 0x0A5;
            int e0 = 2 * g, e1 = 2 * g + 1;
            blk[offsetof(block_iq3_s, qs) + e0] = (uint8_t)ia;
            blk[offsetof(block_iq3_s, qs) + e1] = (uint8_t)ib;
            blk[offsetof(block_iq3_s, qh) + e0 / 8] |= (uint8_t)((ia >> 8) << (e0 % 8));
            blk[offsetof(block_iq3_s, qh) + e1 / 8] |= (uint8_t)((ib >> 8) << (e1 % 8));
            blk[offsetof(block_iq3_s, signs) + g] = (uint8_t)(G >> 9);
        }
        for (int i = 0; i < 4; i++) blk[offsetof(block_iq3_s, scales) + i] = (uint8_t)(4 * n + i);
        bad += check_iq_block(TYPE_IQ3_S, blk, df_iq3s_part);
    }
    CHECKF(bad == 0, "IQ3_S: %d values differ (512 grid x 256 sign bytes, 256 scale bytes)", bad);
    printf("IQ3_S: %d blocks, every grid index x sign byte, every scale byte: %s\n", blocks, bad ? "DIFFER" : "equal");
}

/* IQ4: every 16-bit half of a code word; the other half a bijection of it */
static uint32_t code_word(uint32_t v) { return v & 0x10000u ? mix16(v & 0xFFFF) | (v & 0xFFFF) << 16 : (v & 0xFFFF) | mix16(v) << 16; }

static void test_iq4(void) {
    /* df_kv8 alone: the value of each code against the codebook */
    int bad = 0;
    for (uint32_t v = 0; v < 0x20000u; v++) {
        uint32_t q = code_word(v), lo, hi;
        df_kv8(q, &lo, &hi);
        for (int i = 0; i < 4; i++) {
            bad += byte_of(lo, i) != kvalues_iq4nl[(q >> (8 * i)) & 15];
            bad += byte_of(hi, i) != kvalues_iq4nl[(q >> (8 * i + 4)) & 15];
        }
    }
    CHECKF(bad == 0, "df_kv8: %d values differ from kvalues_iq4nl", bad);
    /* IQ4_XS blocks: 32 words each; every scales_h word, every scales_l byte */
    uint8_t blk[sizeof(block_iq4_xs)];
    int bad_xs = 0, blocks = 0;
    for (uint32_t n = 0; n < 65536; n++, blocks++) {
        wr16(blk, 0x3C00);
        wr16(blk + offsetof(block_iq4_xs, scales_h), mix16(n));
        for (int i = 0; i < 4; i++) blk[offsetof(block_iq4_xs, scales_l) + i] = (uint8_t)(n + 77 * i);
        for (int i = 0; i < 32; i++) wr32(blk + offsetof(block_iq4_xs, qs) + 4 * i, code_word((32 * n + i) & 0x1FFFF));
        bad_xs += check_iq_block(TYPE_IQ4_XS, blk, NULL);
    }
    CHECKF(bad_xs == 0, "IQ4_XS: %d values differ", bad_xs);
    /* IQ4_NL blocks against the reference dequantization at d = 1 (d * kv is kv exactly) */
    uint8_t nl[sizeof(block_iq4_nl)];
    int bad_nl = 0;
    float ref[32];
    for (uint32_t n = 0; n < 0x20000u / 4; n++) {
        wr16(nl, 0x3C00);
        for (int i = 0; i < 4; i++) wr32(nl + offsetof(block_iq4_nl, qs) + 4 * i, code_word(4 * n + i));
        iq4_nl_dequant_row_ref(nl, ref, 32);
        uint32_t lo[4], hi[4];
        df_iq4nl_block(nl, lo, hi);
        for (int j = 0; j < 16; j++) {
            bad_nl += (float)byte_of(lo[j / 4], j % 4) != ref[j];
            bad_nl += (float)byte_of(hi[j / 4], j % 4) != ref[16 + j];
        }
    }
    CHECKF(bad_nl == 0, "IQ4_NL: %d values differ", bad_nl);
    printf("IQ4: df_kv8 on every 16-bit half (2^17 words); IQ4_XS %d blocks (every scales_h word, scales_l byte); "
           "IQ4_NL 32768 blocks: %s\n", blocks, bad || bad_xs || bad_nl ? "DIFFER" : "equal");
}

static void test_q2_0(void) {
    uint8_t blk[sizeof(block_q2_0)];
    int8_t ref[QK2_0];
    int bad = 0;
    for (uint32_t n = 0; n < 0x20000u / 4; n++) {
        wr16(blk, (uint16_t)rnd32());
        for (int i = 0; i < 4; i++) wr32(blk + offsetof(block_q2_0, qs) + 4 * i, code_word(4 * n + i));
        q2_0_unpack_ref(blk, ref);
        uint32_t q[16];
        df_q2_0_block(blk, q);
        for (int j = 0; j < QK2_0; j++) bad += byte_of(q[j / 4], j % 4) != ref[j];
    }
    CHECKF(bad == 0, "Q2_0: %d codes differ from q2_0_unpack_ref", bad);
    printf("Q2_0: every 16-bit half of a code word (32768 blocks): %s\n", bad ? "DIFFER" : "equal");
}

static void test_q6_K(void) {
    /* the offset alone: every word of four 6-bit codes */
    int bad = 0;
    for (uint32_t v = 0; v < (1u << 24); v++) {
        uint32_t q = (v & 63) | ((v >> 6) & 63) << 8 | ((v >> 12) & 63) << 16 | ((v >> 18) & 63) << 24;
        uint32_t r = df_q6_offset(q);
        for (int i = 0; i < 4; i++) bad += byte_of(r, i) != (int)((q >> (8 * i)) & 63) - 32;
    }
    CHECKF(bad == 0, "df_q6_offset: %d bytes wrong over all 2^24 code words", bad);
    /* blocks: weight j of block n holds code (n + 7 j) & 63 (every code in every position), then
     * random blocks; both kernels' layouts against q6_K_unpack_ref */
    int bad_sub = 0, bad_part = 0, blocks = 0;
    uint8_t blk[sizeof(block_q6_K)];
    _Alignas(16) uint8_t buf[sizeof(block_q6_K) + 16];   /* the block again at 4 and 6 mod 16 */
    int8_t ref[QK_K];
    for (int n = 0; n < 64 + 256; n++, blocks++) {
        memset(blk, 0, sizeof blk);
        for (int j = 0; j < QK_K; j++) {
            int qv = n < 64 ? (n + 7 * j) & 63 : (int)(rnd32() & 63);
            blk[offsetof(block_q6_K, ql) + 64 * (j / 128) + j % 64] |= (uint8_t)((qv & 15) << (4 * ((j % 128) / 64)));
            blk[offsetof(block_q6_K, qh) + 32 * (j / 128) + j % 32] |= (uint8_t)((qv >> 4) << (2 * ((j % 128) / 32)));
        }
        for (int s = 0; s < 16; s++) blk[offsetof(block_q6_K, scales) + s] = (uint8_t)rnd32();
        q6_K_unpack_ref(blk, ref);
        for (int s = 0; s < 16; s++) {
            uint32_t w[4];
            df_q6_K_sub(blk, s, w);
            for (int i = 0; i < 16; i++) bad_sub += byte_of(w[i / 4], i % 4) != ref[16 * s + i];
        }
        /* the parts read 16 bytes by 4-byte loads at or just below the address (df_ld128_a2):
         * the block at a 4-aligned address and at one 2 mod 4, as rows of 210-byte blocks put them */
        for (int at = 0; at < 2; at++) {
            memset(buf, 0xA5, sizeof buf);
            uint8_t *b = buf + 4 + 2 * at;
            memcpy(b, blk, sizeof blk);
            for (int k = 0; k < 8; k++) {
                uint32_t wa[4], wb[4];
                int sA = 8 * (k / 4) + k % 4, sB = sA + 4;
                df_q6_K_part(b, k, wa, wb);
                for (int i = 0; i < 16; i++) {
                    bad_part += byte_of(wa[i / 4], i % 4) != ref[16 * sA + i];
                    bad_part += byte_of(wb[i / 4], i % 4) != ref[16 * sB + i];
                }
            }
        }
    }
    CHECKF(bad_sub == 0, "Q6_K sub-blocks (lane kernel layout): %d codes differ", bad_sub);
    CHECKF(bad_part == 0, "Q6_K parts (cooperative kernel layout): %d codes differ", bad_part);
    printf("Q6_K: offset on all 2^24 words; %d blocks (every code in every position) in both layouts, the parts at "
           "addresses 0 and 2 mod 4: %s\n", blocks,
           bad || bad_sub || bad_part ? "DIFFER" : "equal");
}


/* moe_route_token_par lane by lane: expert e in lane e % 32, slot e / 32 (X <= 256) */
static void route_par_emul(const float *l, int X, int k, int32_t *sel, float *w) {
    float v[32][8], mx[32];
    unsigned avail[32];
    for (int lane = 0; lane < 32; lane++) {
        mx[lane] = l[0];
        avail[lane] = 0;
        for (int i = 0; i < 8; i++) {
            int e = lane + 32 * i;
            v[lane][i] = e < X ? l[e] : 0.0f;
            if (e < X && v[lane][i] > mx[lane]) mx[lane] = v[lane][i];
        }
    }
    for (int o = 16; o; o >>= 1) {   /* __shfl_xor_sync: every lane reads the others' old values */
        float old[32];
        memcpy(old, mx, sizeof old);
        for (int lane = 0; lane < 32; lane++)
            if (old[lane ^ o] > mx[lane]) mx[lane] = old[lane ^ o];
    }
    for (int lane = 0; lane < 32; lane++)
        for (int i = 0; i < 8; i++)
            if (lane + 32 * i < X) v[lane][i] = expf(v[lane][i] - mx[lane]);
    float sum = 0.0f;
    for (int e = 0; e < X; e++) sum += v[e % 32][e / 32];
    for (int lane = 0; lane < 32; lane++)
        for (int i = 0; i < 8; i++)
            if (lane + 32 * i < X) { v[lane][i] = v[lane][i] / sum; avail[lane] |= 1u << i; }
    float ssel = 0.0f;
    for (int r = 0; r < k; r++) {
        uint32_t bb[32];
        int bi[32];
        for (int lane = 0; lane < 32; lane++) {
            bb[lane] = 0; bi[lane] = 0x7FFFFFFF;
            for (int i = 0; i < 8; i++) {
                uint32_t b;
                memcpy(&b, &v[lane][i], 4);
                if (((avail[lane] >> i) & 1) && (bi[lane] == 0x7FFFFFFF || b > bb[lane])) { bb[lane] = b; bi[lane] = lane + 32 * i; }
            }
        }
        uint32_t best = 0;   /* __reduce_max_sync */
        for (int lane = 0; lane < 32; lane++) if ((bi[lane] != 0x7FFFFFFF ? bb[lane] : 0u) > best) best = bb[lane];
        unsigned e = 0x7FFFFFFF;   /* __reduce_min_sync */
        for (int lane = 0; lane < 32; lane++)
            if (bi[lane] != 0x7FFFFFFF && bb[lane] == best && (unsigned)bi[lane] < e) e = (unsigned)bi[lane];
        avail[e & 31] &= ~(1u << (e >> 5));
        float wv;
        memcpy(&wv, &best, 4);
        ssel += wv;
        sel[r] = (int32_t)e; w[r] = wv;
    }
    for (int r = 0; r < k; r++) w[r] = w[r] / ssel;
}

/* moe_route1_body (STRATA_CUDA_MOE_FAST bit 1, T = 1) thread by thread: the max in any order,
 * e = expf(l - max), the sum in expert order, p = e / sum, expert i's rank = #{j : p_j > p_i or
 * (p_j == p_i and j < i)}, the experts of ranks < k in rank order, the sum in rank order */
static void route1_emul(const float *l, int X, int k, int32_t *sel, float *w) {
    float e[256], p[256], mx = -INFINITY;
    for (int i = X - 1; i >= 0; i--)   /* another order than the CPU's scan: the max is order-free */
        if (l[i] > mx) mx = l[i];
    for (int i = 0; i < X; i++) e[i] = expf(l[i] - mx);
    float sum = 0.0f;
    for (int i = 0; i < X; i++) sum += e[i];
    for (int i = 0; i < X; i++) p[i] = e[i] / sum;
    float pw[8];
    for (int i = 0; i < X; i++) {
        int rank = 0;
        for (int j = 0; j < X; j++) rank += (p[j] > p[i]) | ((p[j] == p[i]) & (j < i));
        if (rank < k) { sel[rank] = i; pw[rank] = p[i]; }
    }
    float ssel = 0.0f;
    for (int r = 0; r < k; r++) ssel += pw[r];
    for (int r = 0; r < k; r++) w[r] = pw[r] / ssel;
}

static void test_route_rule(void) {
    static const int xs[] = { 16, 33, 128, 200, 256 }, ks[] = { 1, 4, 8 };
    int cases = 0, bad = 0, bad1 = 0;
    float l[256];
    for (int kind = 0; kind < 5; kind++)
        for (size_t xi = 0; xi < sizeof xs / sizeof xs[0]; xi++)
            for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++)
                for (int rep = 0; rep < 40; rep++) {
                    int X = xs[xi], k = ks[ki];
                    for (int e = 0; e < X; e++) {
                        float u = (float)(rnd32() >> 8) / (float)(1 << 24) * 2.0f - 1.0f;
                        l[e] = kind == 0 ? 4.0f * u                                   /* random */
                             : kind == 1 ? 0.0f                                        /* all tied */
                             : kind == 2 ? (float)((int)(rnd32() % 5)) * 0.5f          /* few levels: many ties */
                             : kind == 3 ? (e % 7 == 3 ? 30.0f : -120.0f * (1 + u))    /* probabilities that underflow to 0 */
                                         : 1e-3f * u + (e % 9 == 0 ? 1.0f : 0.0f);     /* near-ties */
                    }
                    int32_t s_ref[8], s_par[8], s_1[8];
                    float w_ref[8], w_par[8], w_1[8];
                    moe_route(l, X, k, 1, s_ref, w_ref);
                    route_par_emul(l, X, k, s_par, w_par);
                    route1_emul(l, X, k, s_1, w_1);
                    bad += memcmp(s_ref, s_par, sizeof(int32_t) * k) != 0 || memcmp(w_ref, w_par, sizeof(float) * k) != 0;
                    bad1 += memcmp(s_ref, s_1, sizeof(int32_t) * k) != 0 || memcmp(w_ref, w_1, sizeof(float) * k) != 0;
                    cases++;
                }
    CHECKF(bad == 0, "parallel routing rule: %d of %d cases differ from moe_route", bad, cases);
    printf("routing rule (warp max of bits, min index, chained sums): %d cases vs moe_route: %s\n", cases, bad ? "DIFFER" : "equal");
    CHECKF(bad1 == 0, "CTA routing rule (ranks): %d of %d cases differ from moe_route", bad1, cases);
    printf("routing rule of the CTA (ranks, chained sums): %d cases vs moe_route: %s\n", cases, bad1 ? "DIFFER" : "equal");
}

int main(void) {
    df_sign_tables_fill(ksigns_iq2xs, g_ksm, g_bsm);
    g_t.iq2xxs = iq2xxs_grid; g_t.iq2xs = iq2xs_grid; g_t.iq2s = iq2s_grid;
    g_t.iq3xxs = iq3xxs_grid; g_t.iq3s = iq3s_grid;
    g_t.ksm = g_ksm; g_t.bsm = g_bsm;
    RUN(test_tables);
    RUN(test_iq2_xxs);
    RUN(test_iq2_xs);
    RUN(test_iq2_s);
    RUN(test_iq3_xxs);
    RUN(test_iq3_s);
    RUN(test_iq4);
    RUN(test_q2_0);
    RUN(test_q6_K);
    RUN(test_route_rule);
    TEST_DONE();
}
