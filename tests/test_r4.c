/* R4 rows (src/quant/r4.h), the CUDA T = 1 expert kernels' copy of IQ2_XXS / IQ3_XXS experts:
 * the level sets are the grids' distinct bytes; every weight's code decodes to the format's
 * signed integer (iq_decode_ref) and every sub-block keeps its multiplier and every block its d;
 * the R4 dot equals the format's reference dot bit for bit (both canonical finishes, rows of 1 to
 * 36 super-blocks, quantized rows and random bytes, every sign pattern of a sub-block); the
 * threaded repack writes the same bytes as one thread, with zero padding. */
#include "test.h"
#include <stdint.h>
#include "core/util.h"
#include "quant/blocks.h"
#include "quant/formats.h"
#include "quant/iq_tables.h"
#include "quant/quant.h"
#include "quant/quant_canon.h"
#include "quant/r4.h"
#include "quant/ref_iq.h"

static uint64_t rs = 0x9e3779b97f4a7c15ull;
static uint32_t rnd32(void) { rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17; return (uint32_t)(rs >> 11); }
static float rndf(void) { return (float)(rnd32() % 2000001) / 1000000.0f - 1.0f; }

/* the distinct bytes of a grid, ascending, into lv[8] (zeros after them); returns their count */
static int grid_levels(const uint8_t *g, int n, uint8_t lv[8]) {
    int seen[256] = { 0 }, c = 0;
    for (int i = 0; i < n; i++) seen[g[i]] = 1;
    memset(lv, 0, 8);
    for (int v = 0; v < 256; v++)
        if (seen[v]) { if (c < 8) lv[c] = (uint8_t)v; c++; }
    return c;
}

static void test_levels(void) {
    uint8_t lv[8];
    CHECK_EQ_INT(grid_levels(&iq3xxs_grid[0][0], 256 * 4, lv), 8);
    CHECK(memcmp(lv, r4_levels(TYPE_IQ3_XXS), 8) == 0);
    CHECK_EQ_INT(grid_levels(&iq2xxs_grid[0][0], 256 * 8, lv), 3);
    CHECK(memcmp(lv, r4_levels(TYPE_IQ2_XXS), 8) == 0);
    CHECK(r4_supported(TYPE_IQ3_XXS) && r4_supported(TYPE_IQ2_XXS) && !r4_supported(TYPE_IQ3_S) && !r4_supported(TYPE_Q4_0));
    CHECK(r4_levels(TYPE_IQ2_XS) == NULL);
    CHECK_EQ_INT(r4_row_bytes(2048), 1104);   /* 8 x 138 = 1,104 */
    CHECK_EQ_INT(r4_row_bytes(768), 416);     /* 3 x 138 = 414 -> 416 */
    CHECK_EQ_INT(r4_row_bytes(256), 144);
}

/* a row of nb blocks: quantized from random floats (kind 0) or random bytes with a finite d (kind 1) */
static void make_row(int type, int kind, int64_t n, uint8_t *w) {
    const size_t bs = quant_row_bytes(type, QK_K);
    if (kind == 0) {
        static float x[36 * QK_K];
        for (int64_t i = 0; i < n; i++) x[i] = rndf() * (1.0f + (float)(i % 97) / 20.0f);
        if (type == TYPE_IQ3_XXS) iq3_xxs_quant_row_ref(x, w, n);
        else iq2_xxs_quant_row_ref(x, w, n);
        return;
    }
    for (size_t i = 0; i < (size_t)(n / QK_K) * bs; i++) w[i] = (uint8_t)rnd32();
    for (int64_t b = 0; b < n / QK_K; b++) {   /* d: a finite half of either sign (exponent 1..29) */
        uint16_t d = (uint16_t)(((rnd32() & 1) << 15) | ((1 + rnd32() % 29) << 10) | (rnd32() & 1023));
        memcpy(w + (size_t)b * bs, &d, 2);
    }
}

static void test_decode_and_dot(void) {
    static const int64_t ns[] = { 256, 768, 2048, 9216 };   /* 1, 3, 8 and 36 super-blocks (36: lanes 0-3 twice) */
    static uint8_t w[36 * 98], r[36 * 138 + 16], r2[36 * 138 + 16];
    static float x[36 * QK_K];
    static uint8_t a[36 * sizeof(act_q8_K)];
    const int types[2] = { TYPE_IQ3_XXS, TYPE_IQ2_XXS };
    for (int ti = 0; ti < 2; ti++) {
        const int type = types[ti];
        const size_t bs = quant_row_bytes(type, QK_K);
        int bad_code = 0, bad_m = 0, bad_d = 0, bad_dot = 0, bad_pad = 0, dots = 0;
        for (int ni = 0; ni < 4; ni++)
            for (int kind = 0; kind < 2; kind++)
                for (int rep = 0; rep < 6; rep++) {
                    const int64_t n = ns[ni], nb = n / QK_K;
                    make_row(type, kind, n, w);
                    memset(r, 0xAA, sizeof r);
                    CHECKF(r4_repack_row(type, w, r, n) == 0, "%s n %lld: repack", quant_type_name(type), (long long)n);
                    for (size_t i = (size_t)nb * 138; i < r4_row_bytes(n); i++) bad_pad += r[i] != 0;
                    for (int64_t b = 0; b < nb; b++) {
                        int8_t w8[QK_K];
                        int16_t m[16];
                        iq_decode_ref(type, w + (size_t)b * bs, w8, m);
                        for (int i = 0; i < QK_K; i++) {
                            const int c = (r[128 * b + i / 2] >> (4 * (i & 1))) & 15;
                            const int v = (c & 8 ? -1 : 1) * r4_levels(type)[c & 7];
                            bad_code += v != w8[i];
                        }
                        for (int j = 0; j < 8; j++) bad_m += r[128 * nb + 8 * b + j] != m[2 * j];
                        bad_d += memcmp(r + 136 * nb + 2 * b, w + (size_t)b * bs, 2) != 0;
                    }
                    for (int64_t i = 0; i < n; i++) x[i] = rndf() * (rep & 1 ? 100.0f : 0.01f);
                    act_quantize_row(ACT_Q8_K, x, a, n);
                    for (int serial = 0; serial <= 1; serial++) {
                        const int keep = canon_serial;
                        canon_serial = serial;
                        const float ref = type == TYPE_IQ3_XXS ? iq3_xxs_dot_ref(w, a, n) : iq2_xxs_dot_ref(w, a, n);
                        const float got = r4_dot_ref(type, r, a, n);
                        canon_serial = keep;
                        bad_dot += memcmp(&ref, &got, sizeof ref) != 0;
                        dots++;
                    }
                    (void)r2;
                }
        CHECKF(bad_code == 0, "%s: %d weights' codes decode to another value", quant_type_name(type), bad_code);
        CHECKF(bad_m == 0, "%s: %d sub-block multipliers differ", quant_type_name(type), bad_m);
        CHECKF(bad_d == 0, "%s: %d block scales differ", quant_type_name(type), bad_d);
        CHECKF(bad_pad == 0, "%s: %d padding bytes not zero", quant_type_name(type), bad_pad);
        CHECKF(bad_dot == 0, "%s: %d of %d R4 dots differ from the format's reference dot", quant_type_name(type), bad_dot, dots);
        printf("r4 %-8s rows of 1 / 3 / 8 / 36 super-blocks: codes, multipliers, scales == the format's; %d dots == its "
               "dot_ref bit for bit: %s\n", quant_type_name(type), dots, bad_code || bad_m || bad_d || bad_dot ? "NO" : "yes");
    }
}

/* every sign pattern a sub-block's code can carry: all 2^8 patterns of one group of 8, through the
 * 128 ksigns indices (IQ3_XXS and IQ2_XXS share ksigns_iq2xs: 7 bits and the parity) */
static void test_every_sign(void) {
    const int types[2] = { TYPE_IQ3_XXS, TYPE_IQ2_XXS };
    for (int ti = 0; ti < 2; ti++) {
        const int type = types[ti];
        const size_t bs = quant_row_bytes(type, QK_K);
        uint8_t w[98], r[144], a[sizeof(act_q8_K)];
        float x[QK_K];
        int bad = 0, bad_dot = 0;
        for (int s = 0; s < 128; s++) {
            for (size_t i = 0; i < bs; i++) w[i] = (uint8_t)rnd32();
            w[0] = 0x00; w[1] = 0x3c;   /* d = 1 */
            /* sign index s in every group of sub-block 0 (bits 7l: IQ3_XXS aux at 2 + 64, IQ2_XXS a1 at 2 + 4) */
            uint32_t aux = (uint32_t)s | ((uint32_t)s << 7) | ((uint32_t)s << 14) | ((uint32_t)s << 21) | (rnd32() & 0xF0000000u);
            memcpy(w + (type == TYPE_IQ3_XXS ? 2 + 64 : 2 + 4), &aux, 4);
            CHECKF(r4_repack_row(type, w, r, QK_K) == 0, "repack");
            int8_t w8[QK_K];
            int16_t m[16];
            iq_decode_ref(type, w, w8, m);
            for (int i = 0; i < 32; i++) {
                const int c = (r[i / 2] >> (4 * (i & 1))) & 15;
                bad += (c & 8 ? -1 : 1) * r4_levels(type)[c & 7] != w8[i];
            }
            for (int i = 0; i < QK_K; i++) x[i] = rndf();
            act_quantize_row(ACT_Q8_K, x, a, QK_K);
            const float ref = type == TYPE_IQ3_XXS ? iq3_xxs_dot_ref(w, a, QK_K) : iq2_xxs_dot_ref(w, a, QK_K);
            const float got = r4_dot_ref(type, r, a, QK_K);
            bad_dot += memcmp(&ref, &got, 4) != 0;
        }
        CHECKF(bad == 0 && bad_dot == 0, "%s: %d codes, %d dots differ over the 128 sign indices", quant_type_name(type), bad, bad_dot);
    }
}

static void test_threads(void) {
    enum { ROWS = 96, N = 2048 };
    const int types[2] = { TYPE_IQ3_XXS, TYPE_IQ2_XXS };
    for (int ti = 0; ti < 2; ti++) {
        const int type = types[ti];
        const size_t sb = quant_row_bytes(type, N), db = r4_row_bytes(N);
        uint8_t *w = (uint8_t *)malloc(ROWS * sb), *r1 = (uint8_t *)malloc(ROWS * db), *r3 = (uint8_t *)malloc(ROWS * db);
        REQUIRE(w && r1 && r3, "alloc");
        if (w && r1 && r3) {
            for (int i = 0; i < ROWS; i++) make_row(type, i & 1, N, w + (size_t)i * sb);
            memset(r1, 0x55, ROWS * db);
            memset(r3, 0xAA, ROWS * db);
            CHECK(r4_repack_rows(type, w, r1, ROWS, N, 1) == 0);
            CHECK(r4_repack_rows(type, w, r3, ROWS, N, 3) == 0);
            CHECKF(memcmp(r1, r3, ROWS * db) == 0, "%s: 3 threads wrote other bytes than 1", quant_type_name(type));
            int bad = 0;
            for (int i = 0; i < ROWS; i++) {
                uint8_t one[1104];
                r4_repack_row(type, w + (size_t)i * sb, one, N);
                bad += memcmp(one, r1 + (size_t)i * db, db) != 0;
            }
            CHECKF(bad == 0, "%s: %d rows differ from r4_repack_row", quant_type_name(type), bad);
        }
        free(w); free(r1); free(r3);
    }
    uint8_t junk[144] = { 0 };
    CHECK(r4_repack_row(TYPE_IQ3_S, junk, junk, 256) == -1);   /* unsupported type */
    CHECK(r4_repack_row(TYPE_IQ3_XXS, junk, junk, 100) == -1);  /* not whole super-blocks */
}

/* the upload's all-or-none budget: the weights and copies (need) plus a reserve of max(total / 8, 2 GiB) must fit
 * the free memory; the cases are the decisions the rule exists for */
static void test_budget(void) {
    const uint64_t G = (uint64_t)1 << 30;
    /* the 48-layer IQ3_XXS shape: 12 GB of weights + 15.6 GB of copies */
    const uint64_t moe48 = 12 * G + 156 * G / 10;
    CHECK_EQ_INT(r4_budget_fits(138 * G, 140 * G, moe48), 1);    /* H200: 27.6 + 17.5 reserve fit 138 */
    CHECK_EQ_INT(r4_budget_fits(78 * G, 80 * G, moe48), 1);      /* H100: 27.6 + 10 fit 78 */
    CHECK_EQ_INT(r4_budget_fits(23 * G, 24 * G, 12 * G + 17 * G), 0);   /* need alone above free: none */
    CHECK_EQ_INT(r4_budget_fits(23 * G, 24 * G, 12 * G + 8 * G), 1);    /* 20 + 3 (24 / 8) == 23: fits exactly */
    CHECK_EQ_INT(r4_budget_fits(23 * G, 24 * G, 12 * G + 8 * G + 1), 0);
    /* a small card: the reserve's floor of 2 GiB, not total / 8 = 1 GiB */
    CHECK_EQ_INT(r4_budget_fits(7 * G, 8 * G, 5 * G), 1);
    CHECK_EQ_INT(r4_budget_fits(7 * G, 8 * G, 5 * G + 1), 0);
    CHECK_EQ_INT(r4_budget_fits(G, 8 * G, 0), 0);                  /* less free than the reserve */
    CHECK_EQ_INT(r4_budget_fits(0, 0, 0), 0);
    /* no wrap-around: a need above the free memory never fits, however large */
    CHECK_EQ_INT(r4_budget_fits(64 * G, 80 * G, UINT64_MAX - G), 0);
}

int main(void) {
    RUN(test_levels);
    RUN(test_decode_and_dot);
    RUN(test_every_sign);
    RUN(test_threads);
    RUN(test_budget);
    TEST_DONE();
}
