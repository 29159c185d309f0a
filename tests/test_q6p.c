/* Q6P rows (src/quant/q6p.h), the CUDA one-column head kernel's copy of a Q6_K output head
 * (STRATA_Q6_PLANAR): every plane holds its field's bytes at the documented offset, the padding is
 * zero, the inverse gives the row back byte for byte, the rows' repack equals the row's, rows that
 * are not whole super-blocks are refused, and the CUDA kernel's part (kq_row.cuh, KQ_Q6P: its loads at
 * q6p.h's offsets, its decode) gives every part's 32 codes and two scales that the cooperative Q6_K
 * part (decode_fast.h's df_q6_K_part, the scales sA and sA + 4) gives on the original block. The kernel's bits are test_gpu_variants' (the head
 * with and without the switch against the CPU reference). */
#include "test.h"
#include <stdint.h>
#include "quant/blocks.h"
#include "quant/decode_fast.h"
#include "quant/q6p.h"
#include "quant/ref.h"

static uint64_t rs = 0x2545f4914f6cdd1dull;
static uint32_t rnd32(void) { rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17; return (uint32_t)(rs >> 11); }

#define MAXNB 20
static void test_sizes(void) {
    CHECK_EQ_INT(sizeof(block_q6_K), 210);
    CHECK_EQ_INT(q6p_row_bytes(256), 224);      /* 210 -> 224 */
    CHECK_EQ_INT(q6p_row_bytes(768), 640);      /* 630 -> 640 */
    CHECK_EQ_INT(q6p_row_bytes(2048), 1680);    /* 8 x 210, already a multiple of 16 */
    CHECK_EQ_INT(q6p_row_bytes(4096), 3360);
    uint8_t a[2 * 224], b[2 * 224];
    CHECK_EQ_INT(q6p_repack_row(a, b, 255), -1);
    CHECK_EQ_INT(q6p_repack_row(a, b, 0), -1);
    CHECK_EQ_INT(q6p_repack_rows(a, b, 1, 300), -1);
    CHECK_EQ_INT(q6p_unpack_row(a, b, 128), -1);
}

static void test_planes(void) {
    static const int nbs[] = { 1, 3, 7, 8, 9, MAXNB };
    static uint8_t src[MAXNB * 210], dst[MAXNB * 210 + 16], back[MAXNB * 210];
    for (size_t t = 0; t < sizeof nbs / sizeof nbs[0]; t++) {
        const int nb = nbs[t];
        const int64_t n = (int64_t)nb * 256;
        const size_t rb = q6p_row_bytes(n);
        for (size_t i = 0; i < (size_t)nb * 210; i++) src[i] = (uint8_t)rnd32();
        memset(dst, 0xA5, sizeof dst);   /* the padding must be written as zeros */
        CHECK_EQ_INT(q6p_repack_row(src, dst, n), 0);
        const block_q6_K *x = (const block_q6_K *)src;
        int ok = 1;
        for (int b = 0; b < nb; b++) {
            ok &= memcmp(dst + 128 * b, x[b].ql, 128) == 0;
            ok &= memcmp(dst + 128 * nb + 64 * b, x[b].qh, 64) == 0;
            ok &= memcmp(dst + 192 * nb + 16 * b, x[b].scales, 16) == 0;
            ok &= memcmp(dst + 208 * nb + 2 * b, &x[b].d, 2) == 0;
        }
        CHECKF(ok, "nb %d: a plane's bytes", nb);
        int pad0 = 1;
        for (size_t i = (size_t)nb * 210; i < rb; i++) pad0 &= dst[i] == 0;
        CHECKF(pad0, "nb %d: padding", nb);
        CHECK_EQ_INT(rb % 16, 0);
        CHECK_EQ_INT(rb - (size_t)nb * 210 < 16, 1);
        memset(back, 0, sizeof back);
        CHECK_EQ_INT(q6p_unpack_row(dst, back, n), 0);
        CHECKF(memcmp(back, src, (size_t)nb * 210) == 0, "nb %d: the inverse", nb);
    }
}

/* three rows of 3 blocks: rows of q6p_row_bytes apart, each the row's own repack */
static void test_rows(void) {
    enum { NB = 3, R = 3 };
    static uint8_t src[R * NB * 210], dst[R * 640], one[640];
    for (size_t i = 0; i < sizeof src; i++) src[i] = (uint8_t)rnd32();
    memset(dst, 0xA5, sizeof dst);
    CHECK_EQ_INT(q6p_repack_rows(src, dst, R, NB * 256), 0);
    for (int r = 0; r < R; r++) {
        CHECK_EQ_INT(q6p_repack_row(src + (size_t)r * NB * 210, one, NB * 256), 0);
        CHECKF(memcmp(one, dst + (size_t)r * 640, 640) == 0, "row %d", r);
    }
}

/* kq_step_p's KQ_Q6P part k of block b, on the host: 16 + 16 bytes and 8 scales at q6p.h's part offsets */
static void kernel_part(const uint8_t *row, int nb, int b, int k, uint32_t wa[4], uint32_t wb[4], int *scA, int *scB, uint16_t *d) {
    uint32_t lw[4], hw[4], sc[2];
    memcpy(lw, row + q6p_part_ql(nb, b, k), 16);
    memcpy(hw, row + q6p_part_qh(nb, b, k), 16);
    memcpy(sc, row + q6p_part_sc(nb, b, k), 8);
    memcpy(d, row + q6p_d(nb, b), 2);
    const int q = k & 3, hs = 2 * (q >> 1);
    for (int i = 0; i < 4; i++) {
        wa[i] = df_q6_offset((lw[i] & 0x0F0F0F0Fu) | ((hw[i] >> hs) & 0x03030303u) << 4);
        wb[i] = df_q6_offset(((lw[i] >> 4) & 0x0F0F0F0Fu) | ((hw[i] >> (hs + 4)) & 0x03030303u) << 4);
    }
    *scA = (int)(int8_t)(sc[0] >> (8 * q));
    *scB = (int)(int8_t)(sc[1] >> (8 * q));
}

static void test_kernel_parts(void) {
    static const int nbs[] = { 1, 2, 8, 9 };
    static uint8_t src[9 * 210], dst[9 * 210 + 16];
    for (size_t t = 0; t < sizeof nbs / sizeof nbs[0]; t++) {
        const int nb = nbs[t];
        for (size_t i = 0; i < (size_t)nb * 210; i++) src[i] = (uint8_t)rnd32();
        CHECK_EQ_INT(q6p_repack_row(src, dst, (int64_t)nb * 256), 0);
        const block_q6_K *x = (const block_q6_K *)src;
        int bad_codes = 0, bad_sc = 0, bad_d = 0, bad_each = 0;
        for (int b = 0; b < nb; b++)
            for (int k = 0; k < 8; k++) {
                uint32_t wa[4], wb[4], ra[4], rb[4];
                int scA, scB;
                uint16_t d;
                kernel_part(dst, nb, b, k, wa, wb, &scA, &scB, &d);
                df_q6_K_part((const uint8_t *)&x[b], k, ra, rb);
                bad_codes += memcmp(wa, ra, 16) != 0 || memcmp(wb, rb, 16) != 0;
                const int sA = 8 * (k >> 2) + (k & 3);
                bad_sc += scA != x[b].scales[sA] || scB != x[b].scales[sA + 4];
                bad_d += d != x[b].d;
                /* and against q6_K_unpack_ref's codes - 32: weights 32 (k / 4) * 4 ... of sub-blocks sA, sA + 4 */
                int8_t qv[QK_K];
                q6_K_unpack_ref(&x[b], qv);
                for (int i = 0; i < 16; i++) {
                    bad_each += (int8_t)(wa[i / 4] >> (8 * (i % 4))) != qv[16 * sA + i];
                    bad_each += (int8_t)(wb[i / 4] >> (8 * (i % 4))) != qv[16 * (sA + 4) + i];
                }
            }
        CHECKF(bad_codes == 0, "nb %d: %d parts' codes differ from df_q6_K_part's", nb, bad_codes);
        CHECKF(bad_sc == 0, "nb %d: %d parts' scales differ", nb, bad_sc);
        CHECKF(bad_d == 0, "nb %d: %d parts' d differ", nb, bad_d);
        CHECKF(bad_each == 0, "nb %d: %d codes differ from q6_K_unpack_ref's", nb, bad_each);
    }
}

int main(void) {
    RUN(test_sizes);
    RUN(test_planes);
    RUN(test_rows);
    RUN(test_kernel_parts);
    TEST_DONE();
}
