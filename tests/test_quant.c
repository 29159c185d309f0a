/* Quantization library and CPU matvec (issue 3), every format except the IQ family
 * (tests/test_quant_iq.c). What is asserted:
 *  - the table: names, ids, block sizes, row bytes; matvec argument errors
 *  - dequantization bit-identical to the gguf package's numpy dequantizers
 *    (tests/quant_oracle.py) on random blocks and edge cases: extreme codes, zero,
 *    negative, subnormal and infinite scales; every F16 and BF16 bit pattern; every MXFP4
 *    exponent. Q2_0 is not in gguf: a hand-derived expectation instead.
 *  - round trip quantize -> dequantize on Gaussian rows within per-format RMSE bounds
 *  - reference dot within the error bound implied by activation quantization
 *  - AVX2 == reference bit for bit, batch invariance T = 1..8, 1/odd/non-divisible row
 *    counts on a 3-thread pool, the smallest legal row, exact mode
 *  - all 65,536 16-bit words of Q2_0 codes through the reference and the fast path. */
#include "test.h"
#include "quant/quant.h"
#include "quant/ref.h"
#include "quant/quant_canon.h"
#include "cpu/matvec.h"
#include "cpu/kernels.h"
#include "core/util.h"
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

static const int OWNED[] = {
    TYPE_F32, TYPE_F16, TYPE_BF16, TYPE_Q4_0, TYPE_Q4_1, TYPE_Q5_0, TYPE_Q5_1, TYPE_Q8_0,
    TYPE_Q2_K, TYPE_Q3_K, TYPE_Q4_K, TYPE_Q5_K, TYPE_Q6_K, TYPE_MXFP4, TYPE_Q2_0,
};
#define N_OWNED ((int)(sizeof OWNED / sizeof OWNED[0]))

/* ---- random numbers (xorshift64*, deterministic) ----------------------------------- */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) {
    rng_state ^= rng_state >> 12; rng_state ^= rng_state << 25; rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1Dull;
}
static float rnd_unit(void) { return (float)((rnd() >> 40) / 16777216.0); }          /* [0,1) */
static float rnd_gauss(void) {
    float u = rnd_unit() + 1e-7f, v = rnd_unit();
    return sqrtf(-2.0f * logf(u)) * cosf(6.2831853f * v);
}

/* ---- block generation ---------------------------------------------------------------- */

/* Offsets of the fp16 scale fields of each block type (d, and m/dmin when present; -1 none) */
static void scale_fields(int type, int *off_d, int *off_m) {
    *off_d = -1; *off_m = -1;
    switch (type) {
    case TYPE_Q4_0: *off_d = offsetof(block_q4_0, d); break;
    case TYPE_Q4_1: *off_d = offsetof(block_q4_1, d); *off_m = offsetof(block_q4_1, m); break;
    case TYPE_Q5_0: *off_d = offsetof(block_q5_0, d); break;
    case TYPE_Q5_1: *off_d = offsetof(block_q5_1, d); *off_m = offsetof(block_q5_1, m); break;
    case TYPE_Q8_0: *off_d = offsetof(block_q8_0, d); break;
    case TYPE_Q2_0: *off_d = offsetof(block_q2_0, d); break;
    case TYPE_Q2_K: *off_d = offsetof(block_q2_K, d); *off_m = offsetof(block_q2_K, dmin); break;
    case TYPE_Q3_K: *off_d = offsetof(block_q3_K, d); break;
    case TYPE_Q4_K: *off_d = offsetof(block_q4_K, d); *off_m = offsetof(block_q4_K, dmin); break;
    case TYPE_Q5_K: *off_d = offsetof(block_q5_K, d); *off_m = offsetof(block_q5_K, dmin); break;
    case TYPE_Q6_K: *off_d = offsetof(block_q6_K, d); break;
    default: break;
    }
}

/* Edge-case halves: zeros, smallest/largest subnormals, 1, -1, largest finite, +-inf */
static const uint16_t EDGE_HALVES[] = { 0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x83ff, 0x0400,
                                        0x3c00, 0xbc00, 0x7bff, 0xfbff, 0x7c00, 0xfc00 };
#define N_EDGE_HALVES ((int)(sizeof EDGE_HALVES / sizeof EDGE_HALVES[0]))
static const uint8_t EDGE_BYTES[] = { 0x00, 0xFF, 0x55, 0xAA, 0x0F, 0xF0, 0x88, 0x77, 0x80 };
#define N_EDGE_BYTES ((int)(sizeof EDGE_BYTES / sizeof EDGE_BYTES[0]))

/* A random finite half of moderate magnitude (2^-14 .. 2^0, either sign; sometimes subnormal) */
static uint16_t rnd_half_finite(void) {
    uint16_t sign = (uint16_t)((rnd() & 1) << 15);
    if (rnd() % 16 == 0) return (uint16_t)(sign | (rnd() & 0x3ff));   /* subnormal or zero */
    return (uint16_t)(sign | (uint16_t)((1 + rnd() % 15) << 10) | (rnd() & 0x3ff));
}

static void put16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }

/* nb random blocks of `type`: random code bytes, finite scales. Float types: finite values. */
static void fill_random(int type, uint8_t *buf, int64_t nb) {
    const quant_traits *t = quant_traits_get(type);
    size_t bs = (size_t)t->bsize;
    for (size_t i = 0; i < bs * (size_t)nb; i++) buf[i] = (uint8_t)rnd();
    int od, om; scale_fields(type, &od, &om);
    for (int64_t b = 0; b < nb; b++) {
        uint8_t *blk = buf + (size_t)b * bs;
        if (type == TYPE_F32) { float f = rnd_gauss(); memcpy(blk, &f, 4); }
        else if (type == TYPE_F16) put16(blk, rnd_half_finite());
        else if (type == TYPE_BF16) put16(blk, f32_to_bf16(rnd_gauss()));
        else if (type == TYPE_MXFP4) blk[0] = (uint8_t)(100 + rnd() % 50);   /* 2^-28 .. 2^21 */
        if (od >= 0) put16(blk + od, rnd_half_finite());
        if (om >= 0) put16(blk + om, rnd_half_finite());
    }
}

/* Edge blocks: every edge half as d (and m) crossed with every edge code byte */
static int64_t fill_edge(int type, uint8_t *buf) {
    const quant_traits *t = quant_traits_get(type);
    size_t bs = (size_t)t->bsize; int64_t nb = 0;
    int od, om; scale_fields(type, &od, &om);
    for (int h = 0; h < N_EDGE_HALVES; h++)
        for (int c = 0; c < N_EDGE_BYTES; c++, nb++) {
            uint8_t *blk = buf + (size_t)nb * bs;
            memset(blk, EDGE_BYTES[c], bs);
            if (type == TYPE_MXFP4) blk[0] = (uint8_t)(h * 20 + c);
            if (od >= 0) put16(blk + od, EDGE_HALVES[h]);
            if (om >= 0) put16(blk + om, EDGE_HALVES[(h + c) % N_EDGE_HALVES]);
        }
    return nb;
}

/* ---- table ------------------------------------------------------------------------- */

static void test_table(void) {
    struct { int type; const char *name; int blck, bsize; act_format act; } want[] = {
        { TYPE_F32, "F32", 1, 4, ACT_F32 },   { TYPE_F16, "F16", 1, 2, ACT_F32 },
        { TYPE_BF16, "BF16", 1, 2, ACT_F32 }, { TYPE_Q4_0, "Q4_0", 32, 18, ACT_Q8_0 },
        { TYPE_Q4_1, "Q4_1", 32, 20, ACT_Q8_1 }, { TYPE_Q5_0, "Q5_0", 32, 22, ACT_Q8_0 },
        { TYPE_Q5_1, "Q5_1", 32, 24, ACT_Q8_1 }, { TYPE_Q8_0, "Q8_0", 32, 34, ACT_Q8_0 },
        { TYPE_Q2_K, "Q2_K", 256, 84, ACT_Q8_K }, { TYPE_Q3_K, "Q3_K", 256, 110, ACT_Q8_K },
        { TYPE_Q4_K, "Q4_K", 256, 144, ACT_Q8_K }, { TYPE_Q5_K, "Q5_K", 256, 176, ACT_Q8_K },
        { TYPE_Q6_K, "Q6_K", 256, 210, ACT_Q8_K }, { TYPE_MXFP4, "MXFP4", 32, 17, ACT_Q8_0 },
        { TYPE_Q2_0, "Q2_0", 64, 18, ACT_Q8_2 },
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const quant_traits *t = quant_traits_get(want[i].type);
        CHECKF(t != NULL, "type %d missing", want[i].type);
        if (!t) continue;
        CHECK_STR(t->name, want[i].name);
        CHECK_EQ_INT(t->type, want[i].type);
        CHECK_EQ_INT(t->blck, want[i].blck);
        CHECK_EQ_INT(t->bsize, want[i].bsize);
        CHECK_EQ_INT(t->act, want[i].act);
        CHECK(t->quant_row != NULL);
        CHECK_EQ_INT(quant_type_from_name(want[i].name), want[i].type);
        CHECK_STR(quant_type_name(want[i].type), want[i].name);
        CHECK_EQ_INT(quant_row_bytes(want[i].type, 4096), 4096 / want[i].blck * want[i].bsize);
        if (want[i].blck > 1) CHECK_EQ_INT(quant_row_bytes(want[i].type, want[i].blck + 1), 0);
    }
    CHECK_EQ_INT(quant_type_from_name("q4_k"), TYPE_Q4_K);
    CHECK_EQ_INT(quant_type_from_name("Q9_9"), -1);
    CHECK(quant_traits_get(TYPE_Q8_K) == NULL);     /* activation-only ggml type */
    CHECK(quant_traits_get(TYPE_I32) == NULL);
    CHECK(quant_traits_get(-1) == NULL && quant_traits_get(TYPE_COUNT) == NULL);
    CHECK_STR(quant_type_name(999), "?");
    CHECK_EQ_INT(act_row_bytes(ACT_Q8_K, 512), 2 * sizeof(act_q8_K));
    CHECK_EQ_INT(act_row_bytes(ACT_Q8_2, 96), 0);
    /* the activation rows of src/quant/formats.h: values and bytes per block (the layouts of
     * docs/KERNELS.md section 2) */
    struct { act_format f; int blck, bytes; } act_want[] = {
        { ACT_F32, 1, 4 }, { ACT_Q8_0, 32, 36 }, { ACT_Q8_1, 32, 40 }, { ACT_Q8_2, 64, 72 }, { ACT_Q8_K, 256, 292 },
    };
    for (size_t i = 0; i < sizeof act_want / sizeof act_want[0]; i++) {
        CHECK_EQ_INT(act_blck(act_want[i].f), act_want[i].blck);
        CHECK_EQ_INT(act_row_bytes(act_want[i].f, 3 * act_want[i].blck), 3 * act_want[i].bytes);
    }
    CHECK_EQ_INT(act_blck(ACT_COUNT), 0);
    CHECK_EQ_INT(act_row_bytes(ACT_COUNT, 256), 0);
}

static void test_matvec_errors(void) {
    float W[64] = { 0 }, x[64 * 9] = { 0 }, y[9 * 2];
    CHECK_EQ_INT(matvec(NULL, W, TYPE_F32, 32, 2, x, 0, y, MATVEC_DEFAULT), -1);
    {   /* T > 8 is a wide pass (passes of 8): column 8's values are those of the column alone */
        float W2[64], x9[32 * 9], y9[9 * 2], y1[2];
        for (int i = 0; i < 64; i++) W2[i] = 0.25f * (float)(i % 9) - 1.0f;
        for (int i = 0; i < 32 * 9; i++) x9[i] = (float)(i % 5) - 2.0f + 0.125f * (float)(i % 3);
        CHECK_EQ_INT(matvec(NULL, W2, TYPE_F32, 32, 2, x9, 9, y9, MATVEC_DEFAULT), 0);
        CHECK_EQ_INT(matvec(NULL, W2, TYPE_F32, 32, 2, x9 + 32 * 8, 1, y1, MATVEC_DEFAULT), 0);
        CHECK(!memcmp(y9 + 16, y1, sizeof y1) && y1[0] != 0.0f);
    }
    CHECK_EQ_INT(matvec(NULL, W, TYPE_F32, 32, 2, x, MATVEC_MAX_T + 1, y, MATVEC_DEFAULT), -1);   /* wider passes: tests/test_matmul.c */
    CHECK_EQ_INT(matvec(NULL, W, TYPE_Q8_K, 256, 1, x, 1, y, MATVEC_DEFAULT), -1);
    CHECK_EQ_INT(matvec(NULL, W, 77, 32, 1, x, 1, y, MATVEC_DEFAULT), -1);
    CHECK_EQ_INT(matvec(NULL, W, TYPE_Q4_0, 48, 1, x, 1, y, MATVEC_DEFAULT), -1); /* 48 % 32 */
    CHECK_EQ_INT(matvec(NULL, W, TYPE_F32, 32, 2, x, 1, y, MATVEC_DEFAULT), 0);
    CHECK_STR(matvec_kernel_name(77), "none");
    CHECK_STR(matvec_kernel_name(TYPE_Q4_1), cpu_has_avx2_fma() ? "avx2" : "ref");
}

/* ---- dequantization against gguf --------------------------------------------------- */

typedef struct { int type; uint8_t *blocks; int64_t nbytes; float *mine; int64_t n; char in[64], out[64]; } oracle_case;

static void test_dequant_oracle(void) {
    const char *script = "tests/quant_oracle.py";
    if (access(script, R_OK) != 0) { SKIP("oracle-script", "dequant oracle: %s not found (run from the repo root)", script); return; }
    const char *py = getenv("PY"); if (!py || !*py) py = "python3";
    oracle_case cs[N_OWNED]; int nc = 0;
    char cmd[8192]; int len = snprintf(cmd, sizeof cmd, "%s %s", py, script);
    for (int i = 0; i < N_OWNED; i++) {
        int type = OWNED[i];
        if (type == TYPE_Q2_0) continue;             /* not in gguf: test_q2_0_words */
        const quant_traits *t = quant_traits_get(type);
        if (!t) { CHECKF(0, "type %d missing from the table", type); continue; }
        oracle_case *c = &cs[nc];
        int64_t nb_rand = 256, nb_max;
        if (type == TYPE_F16 || type == TYPE_BF16) nb_max = 65536;
        else nb_max = nb_rand + N_EDGE_HALVES * N_EDGE_BYTES + 256;
        c->type = type;
        c->blocks = calloc((size_t)nb_max, (size_t)t->bsize);
        int64_t nb;
        if (type == TYPE_F16 || type == TYPE_BF16) {  /* every bit pattern */
            for (int64_t k = 0; k < 65536; k++) put16(c->blocks + 2 * k, (uint16_t)k);
            nb = 65536;
        } else {
            fill_random(type, c->blocks, nb_rand);
            nb = nb_rand + fill_edge(type, c->blocks + (size_t)nb_rand * (size_t)t->bsize);
            if (type == TYPE_MXFP4)                 /* every exponent */
                for (int e = 0; e < 256; e++, nb++) {
                    uint8_t *blk = c->blocks + (size_t)nb * (size_t)t->bsize;
                    for (int j = 0; j < t->bsize; j++) blk[j] = (uint8_t)(e * 7 + j * 17);
                    blk[0] = (uint8_t)e;
                }
            if (type == TYPE_F32) {                  /* any bits, NaN and inf included */
                for (int64_t k = 0; k < nb; k++) { uint32_t v = (uint32_t)rnd(); memcpy(c->blocks + 4 * k, &v, 4); }
            }
        }
        c->n = nb * t->blck; c->nbytes = nb * t->bsize;
        c->mine = malloc((size_t)c->n * sizeof(float));
        t->dequant_row(c->blocks, c->mine, c->n);
        snprintf(c->in, sizeof c->in, "/tmp/strata-tq-%d-%d.in", (int)getpid(), type);
        snprintf(c->out, sizeof c->out, "/tmp/strata-tq-%d-%d.out", (int)getpid(), type);
        FILE *f = fopen(c->in, "wb");
        if (!f || fwrite(c->blocks, 1, (size_t)c->nbytes, f) != (size_t)c->nbytes) { CHECKF(0, "cannot write %s", c->in); if (f) fclose(f); continue; }
        fclose(f);
        len += snprintf(cmd + len, sizeof cmd - (size_t)len, " %d:%s:%s", type, c->in, c->out);
        nc++;
    }
    int rc = system(cmd);
    if (rc != 0) {
        if (WIFEXITED(rc) && WEXITSTATUS(rc) == 2)
            SKIP("python-gguf", "dequant oracle: python3 with gguf+numpy is not available");
        else CHECKF(0, "oracle failed (status %d): %s", rc, cmd);
    } else {
        for (int i = 0; i < nc; i++) {
            oracle_case *c = &cs[i];
            float *ref = malloc((size_t)c->n * sizeof(float));
            FILE *f = fopen(c->out, "rb");
            size_t got = f ? fread(ref, sizeof(float), (size_t)c->n, f) : 0;
            if (f) fclose(f);
            CHECKF(got == (size_t)c->n, "%s: oracle gave %zu values, want %lld", quant_type_name(c->type), got, (long long)c->n);
            int64_t bad = 0, first = -1;
            for (int64_t k = 0; k < (int64_t)got; k++)
                if (memcmp(&ref[k], &c->mine[k], 4)) { if (first < 0) first = k; bad++; }
            CHECKF(bad == 0, "%s: %lld of %lld values differ from gguf; first at %lld: %a vs gguf %a",
                   quant_type_name(c->type), (long long)bad, (long long)c->n, (long long)first,
                   first >= 0 ? (double)c->mine[first] : 0.0, first >= 0 ? (double)ref[first] : 0.0);
            free(ref);
        }
    }
    for (int i = 0; i < nc; i++) { unlink(cs[i].in); unlink(cs[i].out); free(cs[i].blocks); free(cs[i].mine); }
}

/* ---- Q2_0: every 16-bit word of codes --------------------------------------------- */

static void test_q2_0_words(void) {
    const int64_t nb = 65536 / 8, n = nb * QK2_0;     /* 8 words per block */
    block_q2_0 *b = malloc((size_t)nb * sizeof *b);
    for (int64_t i = 0; i < nb; i++) {
        b[i].d = (i % 3 == 0) ? 0x3c00 : (uint16_t)(0x3000 + (i % 977));   /* 1.0 or 0.125.. */
        for (int k = 0; k < 8; k++) { uint16_t w = (uint16_t)(i * 8 + k); memcpy(&b[i].qs[2 * k], &w, 2); }
    }
    /* reference dequant == hand derivation: word k of block i holds weights 8k..8k+7, two bits
     * each from the low bits up; value (code - 1) * d */
    float *deq = malloc((size_t)n * sizeof(float));
    quant_traits_get(TYPE_Q2_0)->dequant_row(b, deq, n);
    int64_t bad = 0;
    for (int64_t i = 0; i < nb; i++)
        for (int k = 0; k < 8; k++) {
            uint16_t w = (uint16_t)(i * 8 + k);
            for (int j = 0; j < 8; j++) {
                float want = (float)((int)((w >> (2 * j)) & 3) - 1) * fp16_to_f32(b[i].d);
                if (memcmp(&want, &deq[i * 64 + k * 8 + j], 4)) bad++;
            }
        }
    CHECKF(bad == 0, "Q2_0 dequant: %lld weights differ from the hand derivation", (long long)bad);

    /* Through the dot paths with integer activations: with d = 1 and x integers in
     * [-127, 127] where every 64-block holds a +-127, activation quantization is exact (d = 1,
     * q = x), every partial is an integer and the float sums are exact, so y must equal the
     * integer dot computed here by hand, in the reference and the fast kernel alike. */
    for (int64_t i = 0; i < nb; i++) b[i].d = 0x3c00;
    const int64_t n_in = 4096, n_out = n / n_in;       /* 128 rows of 64 blocks */
    const int T = 4;
    float *x = malloc((size_t)(n_in * T) * sizeof(float));
    for (int64_t k = 0; k < n_in * T; k++) x[k] = (k % 64 == 5) ? ((k / 64) % 2 ? 127.0f : -127.0f) : (float)((int)(rnd() % 255) - 127);
    float *y = malloc((size_t)(n_out * T) * sizeof(float));
    threadpool *tp = threadpool_create(3);
    for (int kern = 0; kern < 2; kern++) {
        if (kern == 1 && !matvec_rows_avx2(TYPE_Q2_0)) break;
        if (kern == 1 && !cpu_has_avx2_fma()) { SKIP("q2_0-avx2", "Q2_0 fast path: no AVX2"); break; }
        int rc = matvec_with(tp, b, TYPE_Q2_0, n_in, n_out, x, T, y, MATVEC_DEFAULT,
                             kern ? MATVEC_KERNEL_AVX2 : MATVEC_KERNEL_REF);
        CHECK_EQ_INT(rc, 0);
        bad = 0;
        for (int c = 0; c < T; c++)
            for (int64_t r = 0; r < n_out; r++) {
                int64_t want = 0;
                for (int64_t k = 0; k < n_in; k++) {
                    int64_t j = r * n_in + k;  /* global weight index: word j/8, bits 2*(j%8) */
                    int code = (int)((uint16_t)(j / 8) >> (2 * (j % 8))) & 3;
                    want += (int64_t)(code - 1) * (int64_t)x[c * n_in + k];
                }
                if (y[c * n_out + r] != (float)want) bad++;
            }
        CHECKF(bad == 0, "Q2_0 %s path: %lld outputs differ from the exact integer dot", kern ? "avx2" : "ref", (long long)bad);
    }
    threadpool_free(tp);
    free(b); free(deq); free(x); free(y);
}

/* ---- activation quantization: documented formula, and the AVX2 twin's bits ---------- */

static void test_act_quant(void) {
    /* hand-checked block: amax 127 -> d = 1, id = 1, codes round half to even */
    float x[256];
    for (int i = 0; i < 32; i++) x[i] = (float)i - 16.0f + 0.5f;   /* ties: -15.5 .. 15.5 */
    x[31] = 127.0f;
    act_q8_0 b;
    act_quantize_row(ACT_Q8_0, x, &b, 32);
    CHECK(b.d == 1.0f);
    CHECK_EQ_INT(b.qs[0], -16);    /* -15.5 -> -16 (even) */
    CHECK_EQ_INT(b.qs[1], -14);    /* -14.5 -> -14 */
    CHECK_EQ_INT(b.qs[16], 0);     /* 0.5 -> 0 */
    CHECK_EQ_INT(b.qs[17], 2);     /* 1.5 -> 2 */
    CHECK_EQ_INT(b.qs[31], 127);
    /* q8_1: s = d * sum(q); q8_K: bsums per 16 */
    act_q8_1 b1; act_quantize_row(ACT_Q8_1, x, &b1, 32);
    int sum = 0; for (int i = 0; i < 32; i++) sum += b1.qs[i];
    CHECK(b1.s == b1.d * (float)sum);
    for (int i = 0; i < 256; i++) x[i] = rnd_gauss();
    act_q8_K bk; act_quantize_row(ACT_Q8_K, x, &bk, 256);
    int ok = 1;
    for (int j = 0; j < 16; j++) { int s16 = 0; for (int k = 0; k < 16; k++) s16 += bk.qs[16 * j + k]; ok &= s16 == bk.bsums[j]; }
    CHECK(ok);
    /* AVX2 twin: same bytes for every format, on random, tie, zero, tiny, huge, inf, NaN blocks */
    if (!cpu_has_avx2_fma()) { SKIP("act-quant-avx2", "act_quantize_row_avx2: no AVX2"); return; }
    const int n = 4096;
    float *v = malloc(n * sizeof(float));
    uint8_t *r = malloc((size_t)n * 2), *f = malloc((size_t)n * 2);
    for (int rep = 0; rep < 8; rep++) {
        for (int i = 0; i < n; i++) {
            int kind = (int)(rnd() % 16), blk = i / 256;
            float g = rnd_gauss();
            v[i] = blk == 0 ? 0.0f : blk == 1 ? g * 1e-30f : blk == 2 ? g * 1e30f
                 : blk == 3 ? (float)((int)(rnd() % 255) - 127) + 0.5f
                 : kind == 0 && rep > 3 ? INFINITY : kind == 1 && rep > 5 ? NAN : g;
        }
        for (int a = ACT_Q8_0; a < ACT_COUNT; a++) {
            size_t bytes = act_row_bytes((act_format)a, n);
            memset(r, 0x5A, bytes); memset(f, 0xA5, bytes);
            act_quantize_row((act_format)a, v, r, n);
            act_quantize_row_avx2(a, v, f, n);
            CHECKF(memcmp(r, f, bytes) == 0, "act format %d rep %d: AVX2 quantization differs", a, rep);
        }
    }
    free(v); free(r); free(f);
}

/* ---- round trip ------------------------------------------------------------------- */

/* Largest allowed RMSE of quantize -> dequantize relative to the RMS of N(0,1) rows of 4096.
 * Bounds are about 1.1x the measured values (in the comments) of these simple round-to-nearest
 * quantizers: a layout or rounding bug moves them far more than 10%. */
static double rt_bound(int type) {
    switch (type) {
    case TYPE_F32: return 0.0;
    case TYPE_F16: return 2.4e-4;      /* measured 2.1e-4 */
    case TYPE_BF16: return 1.9e-3;     /* 1.67e-3 */
    case TYPE_Q8_0: return 0.006;      /* 0.0054 */
    case TYPE_Q5_0: return 0.048;      /* 0.043 */
    case TYPE_Q5_1: return 0.042;      /* 0.038 */
    case TYPE_Q4_0: return 0.095;      /* 0.086 */
    case TYPE_Q4_1: return 0.087;      /* 0.078 */
    case TYPE_Q6_K: return 0.021;      /* 0.0188 */
    case TYPE_Q5_K: return 0.043;      /* 0.038 */
    case TYPE_Q4_K: return 0.087;      /* 0.078 */
    case TYPE_Q3_K: return 0.17;       /* 0.153 */
    case TYPE_Q2_K: return 0.37;       /* 0.331 */
    case TYPE_MXFP4: return 0.13;      /* 0.116 */
    case TYPE_Q2_0: return 0.43;       /* 0.39 */
    default: return 0.0;
    }
}

static void test_round_trip(void) {
    const int64_t n = 4096;
    float *x = malloc(n * sizeof(float)), *d = malloc(n * sizeof(float));
    uint8_t *q = malloc(n * 8);
    for (int i = 0; i < N_OWNED; i++) {
        const quant_traits *t = quant_traits_get(OWNED[i]);
        if (!t || !t->quant_row) { CHECKF(0, "type %d: no quantizer", OWNED[i]); continue; }
        double se = 0, ss = 0;
        for (int rep = 0; rep < 4; rep++) {
            for (int64_t k = 0; k < n; k++) x[k] = rnd_gauss();
            t->quant_row(x, q, n);
            t->dequant_row(q, d, n);
            for (int64_t k = 0; k < n; k++) { se += (double)(d[k] - x[k]) * (d[k] - x[k]); ss += (double)x[k] * x[k]; }
        }
        double rel = sqrt(se / ss);
        if (getenv("STRATA_TEST_VERBOSE")) fprintf(stderr, "round trip %-6s rel rmse %.5f (bound %.5f)\n", t->name, rel, rt_bound(OWNED[i]));
        CHECKF(rel <= rt_bound(OWNED[i]), "%s: round-trip relative RMSE %.5f > %.5f", t->name, rel, rt_bound(OWNED[i]));
        /* a zero row quantizes to zeros (no NaN from 0/0) */
        memset(x, 0, n * sizeof(float));
        t->quant_row(x, q, n); t->dequant_row(q, d, n);
        int nz = 0; for (int64_t k = 0; k < n; k++) nz += d[k] != 0.0f;
        CHECKF(nz == 0, "%s: zero row dequantizes to %d nonzeros", t->name, nz);
    }
    free(x); free(d); free(q);
}

/* ---- reference dot vs the float dot of dequantized values ------------------------------
 * Activation quantization moves x_k by at most d_b / 2 (d_b = amax_b / 127 of its block), so
 * |dot_ref - sum w_k x_k| <= sum_b (d_b / 2) * sum_{k in b} |w_k| plus float rounding
 * (bounded by 1e-5 * sum |w_k x_k| + the same term again for the scaled partials). */
static void test_dot_bound(void) {
    const int64_t n = 2048;
    float *x = malloc(n * sizeof(float)), *w = malloc(n * sizeof(float));
    uint8_t *q = malloc(n * 8), *a = malloc(n * 4 + 4096);
    for (int i = 0; i < N_OWNED; i++) {
        const quant_traits *t = quant_traits_get(OWNED[i]);
        if (!t) continue;
        int ab = act_blck(t->act), worst_ok = 1; double worst = 0;
        for (int rep = 0; rep < 20; rep++) {
            fill_random(OWNED[i], q, n / t->blck);
            t->dequant_row(q, w, n);
            for (int64_t k = 0; k < n; k++) x[k] = rnd_gauss() * (rep % 2 ? 100.0f : 0.01f);
            act_quantize_row(t->act, x, a, n);
            double exact = 0, mag = 0, bound = 0;
            for (int64_t k = 0; k < n; k++) { exact += (double)w[k] * x[k]; mag += fabs((double)w[k] * x[k]); }
            if (ab > 1)
                for (int64_t b0 = 0; b0 < n; b0 += ab) {
                    double amax = 0, sw = 0;
                    for (int k = 0; k < ab; k++) { amax = fmax(amax, fabs(x[b0 + k])); sw += fabs(w[b0 + k]); }
                    bound += amax / 127.0 / 2.0 * sw;
                }
            bound = bound * 1.0001 + 1e-5 * mag;
            double got = t->dot_ref(q, a, n), err = fabs(got - exact);
            if (!(err <= bound)) worst_ok = 0;
            if (err / (bound + 1e-30) > worst) worst = err / (bound + 1e-30);
        }
        CHECKF(worst_ok, "%s: reference dot error reaches %.3f x its bound", t->name, worst);
    }
    free(x); free(w); free(q); free(a);
}

/* ---- AVX2 == reference, batch invariance, shapes ----------------------------------- */

static int64_t count_diff(const float *a, const float *b, int64_t n) {
    int64_t d = 0; for (int64_t i = 0; i < n; i++) d += memcmp(&a[i], &b[i], 4) != 0; return d;
}

static void parity_case(threadpool *tp, int type, int64_t n_in, int64_t n_out) {
    const quant_traits *t = quant_traits_get(type);
    const int TMAX = MATVEC_MAX_COLS;
    size_t rb = quant_row_bytes(type, n_in);
    uint8_t *W = malloc(rb * (size_t)n_out);
    fill_random(type, W, (int64_t)(rb * (size_t)n_out) / t->bsize);
    float *x = malloc((size_t)(n_in * TMAX) * sizeof(float));
    for (int64_t k = 0; k < n_in * TMAX; k++) {
        int c = (int)(k / n_in);
        x[k] = c == 3 ? 0.0f : rnd_gauss() * (c == 5 ? 1000.0f : 1.0f);   /* a zero and a large column */
    }
    size_t ny = (size_t)(n_out * TMAX);
    float *yr = malloc(ny * 4), *y = malloc(ny * 4), *y1 = malloc((size_t)n_out * 4);
    int has_fast = cpu_has_avx2_fma() && matvec_rows_avx2(type) != NULL;
    /* one check per compared output: each 1-column reference call against its column of the
     * TMAX-column call, the row dots against the reference (default mode), and each AVX2 call
     * (T = 1..TMAX) against the reference; a call that fails (non-zero) fails its check */
    for (int mode = 0; mode < 2; mode++) {
        matvec_mode m = mode ? MATVEC_EXACT : MATVEC_DEFAULT;
        const char *mn = mode ? "exact" : "default";
        int rc_ref = matvec_with(tp, W, type, n_in, n_out, x, TMAX, yr, m, MATVEC_KERNEL_REF);
        REQUIRE(rc_ref == 0, "%s %lldx%lld %s: reference matvec returned %d", t->name, (long long)n_out, (long long)n_in, mn, rc_ref);
        if (rc_ref) continue;
        /* reference: every column equals a 1-column call, and (default mode) the row dot */
        for (int c = 0; c < TMAX; c++) {
            int rc = matvec_with(tp, W, type, n_in, n_out, x + c * n_in, 1, y1, m, MATVEC_KERNEL_REF);
            int64_t d = count_diff(y1, yr + c * n_out, n_out);
            CHECKF(rc == 0 && d == 0, "%s %lldx%lld %s ref: column %d: %lld outputs depend on T (rc %d)", t->name,
                   (long long)n_out, (long long)n_in, mn, c, (long long)d, rc);
        }
        if (m == MATVEC_DEFAULT) {
            int64_t bad_dot = 0;
            uint8_t *a = malloc(act_row_bytes(t->act, n_in) + 64);
            act_quantize_row(t->act, x, a, n_in);
            for (int64_t r = 0; r < n_out; r++) {
                float d = t->dot_ref(W + (size_t)r * rb, a, n_in);
                bad_dot += memcmp(&d, &yr[r], 4) != 0;
            }
            free(a);
            CHECKF(bad_dot == 0, "%s %lldx%lld ref matvec != dot_ref in %lld rows", t->name, (long long)n_out, (long long)n_in, (long long)bad_dot);
        }
        if (has_fast) {
            for (int T = 1; T <= TMAX; T++) {
                memset(y, 0xFF, ny * 4);
                int rc = matvec_with(tp, W, type, n_in, n_out, x, T, y, m, MATVEC_KERNEL_AVX2);
                int64_t d = count_diff(y, yr, (int64_t)T * n_out);
                CHECKF(rc == 0 && d == 0, "%s %lldx%lld %s: AVX2 T=%d differs from ref in %lld of %lld outputs (rc %d)",
                       t->name, (long long)n_out, (long long)n_in, mn, T, (long long)d, (long long)T * n_out, rc);
            }
        }
    }
    free(W); free(x); free(yr); free(y); free(y1);
}

static void parity_types(const int *types, int ntypes) {
    threadpool *tp = threadpool_create(3);
    if (!cpu_has_avx2_fma()) SKIP("avx2-parity", "AVX2 parity: CPU lacks AVX2+FMA+F16C (reference checks still run)");
    for (int i = 0; i < ntypes; i++) {
        int type = types[i];
        const quant_traits *t = quant_traits_get(type);
        if (!t) continue;
        if (cpu_has_avx2_fma() && !matvec_rows_avx2(type)) CHECKF(0, "%s has no AVX2 kernel", t->name);
        int B = t->blck;
        /* rows: 1 (smallest legal), 3 (odd), 8 lanes + tail, 33 (lane wrap + tail), many */
        int64_t lens_blk[] = { 1, 3, 9, 33, 128 };
        int64_t lens_f[] = { 1, 7, 33, 100, 1000 };
        for (int l = 0; l < 5; l++) {
            int64_t n_in = B == 1 ? lens_f[l] : lens_blk[l] * B;
            if (B == QK_K && l == 4) n_in = 40 * B;      /* keep K-quant runtime small */
            int64_t outs[] = { 1, 7, 37 };
            for (int o = 0; o < 3; o++) parity_case(tp, type, n_in, outs[o]);
        }
    }
    /* rows so long that T x blocks exceeds the kernels' per-call scale copies (8192): the
     * groups then read scales and activation sums from the blocks */
    {
        int longs[] = { TYPE_Q4_0, TYPE_Q4_1, TYPE_Q8_0, TYPE_Q2_0 };
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < ntypes; j++)
                if (types[j] == longs[i]) parity_case(tp, longs[i], (int64_t)1100 * quant_traits_get(longs[i])->blck, 3);
    }
    /* the pool size never changes bits: NULL pool (1 thread) == 3 threads */
    {
        const int64_t n_in = 1024, n_out = 29;
        size_t rb = quant_row_bytes(TYPE_Q4_1, n_in);
        uint8_t *W = malloc(rb * n_out); fill_random(TYPE_Q4_1, W, (int64_t)(rb * n_out) / 20);
        float x[1024 * 2], y1[29 * 2], y3[29 * 2];
        for (int k = 0; k < 2048; k++) x[k] = rnd_gauss();
        matvec(NULL, W, TYPE_Q4_1, n_in, n_out, x, 2, y1, MATVEC_DEFAULT);
        matvec(tp, W, TYPE_Q4_1, n_in, n_out, x, 2, y3, MATVEC_DEFAULT);
        CHECK(count_diff(y1, y3, 58) == 0);
        free(W);
    }
    threadpool_free(tp);
}
static void test_parity(void) { parity_types(OWNED, N_OWNED); }

/* The other canonical order than the one the program runs (STRATA_CANON, docs/KERNELS.md: the
 * serial chain by default, so the tree here): the reference and every AVX2 kernel alike; and the
 * switch takes effect: rows of 40 blocks (lanes of two) give other bits in the tree than in the
 * chain for some rows, within rounding of each other */
static void parity_serial_types(const int *types, int ntypes) {
    threadpool *tp = threadpool_create(3);
    const int was = canon_serial;
    canon_serial = !was;
    if (cpu_has_avx2_fma())
        for (int i = 0; i < ntypes; i++) {
            const quant_traits *t = quant_traits_get(types[i]);
            if (!t) continue;
            const int64_t B = t->blck == 1 ? 1 : t->blck;
            parity_case(tp, types[i], (B == 1 ? 100 : 3 * B), 7);
            parity_case(tp, types[i], (B == 1 ? 1000 : 33 * B), 7);
        }
    /* the switch changes the combine: Q4_0 rows of 40 blocks, tree against serial */
    const quant_traits *t = quant_traits_get(TYPE_Q4_0);
    const int64_t n_in = 40 * 32;
    uint8_t *W = malloc(quant_row_bytes(TYPE_Q4_0, n_in) * 64), *a = malloc(act_row_bytes(t->act, n_in));
    float *x = malloc(sizeof(float) * n_in);
    for (int64_t k = 0; k < n_in; k++) x[k] = rnd_gauss();
    act_quantize_row(t->act, x, a, n_in);
    int differ = 0;
    double worst = 0;
    for (int r = 0; r < 64; r++) {
        float row[40 * 32];
        for (int64_t k = 0; k < n_in; k++) row[k] = rnd_gauss();
        uint8_t *wr = W + (size_t)r * quant_row_bytes(TYPE_Q4_0, n_in);
        t->quant_row(row, wr, n_in);
        canon_serial = 0;
        const float ytree = t->dot_ref(wr, a, n_in);
        canon_serial = 1;
        const float yser = t->dot_ref(wr, a, n_in);
        if (memcmp(&ytree, &yser, 4)) differ++;
        const double d = fabs((double)ytree - (double)yser) / (fabs((double)ytree) + 1e-3);
        if (d > worst) worst = d;
    }
    CHECKF(differ > 0, "STRATA_CANON (tree / serial) changed no bit of 64 rows of 40 blocks (does it take effect?)");
    CHECKF(worst < 1e-4, "tree and serial differ by %.3g (relative): more than rounding", worst);
    free(W); free(a); free(x);
    canon_serial = was;
    threadpool_free(tp);
}
static void test_parity_serial(void) { parity_serial_types(OWNED, N_OWNED); }

/* STRATA_CANON=serial in the T <= 8 AVX2 kernels: rows in groups of 8 whose chains run side by
 * side (canon_chain8 in src/cpu/matmul_avx2.h). Row counts 1..9, 15, 16, 17 and 23 (whole groups
 * and tails of 1..7 rows), rows of 1, 3, 18, 32, 33 and 45 blocks or elements (the chain stopped
 * at nb < 32, exactly 32, lanes wrapped), T = 1..8, one call for all rows (NULL pool) and the
 * 3-thread pool (groups that start at row 4): each output memcmp'ed against the reference dot in
 * serial mode (canon_finish's chain). The tree's reference differs from it in some outputs of
 * every format, so the comparison is not the tree's bits twice. */
static void serial_rows_types(const int *types, int ntypes) {
    if (!cpu_has_avx2_fma()) { SKIP("avx2-serial-rows", "AVX2 serial rows: CPU lacks AVX2+FMA+F16C"); return; }
    threadpool *tp = threadpool_create(3);
    const int was = canon_serial;
    static const int64_t nbs[] = { 1, 3, 18, 32, 33, 45 };
    static const int64_t outs[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 23 };
    enum { NOUT_MAX = 23, TMAX = MATVEC_MAX_COLS };
    for (int i = 0; i < ntypes; i++) {
        const int type = types[i];
        const quant_traits *t = quant_traits_get(type);
        if (!t) continue;
        int64_t bad = 0, outputs = 0, tree_differs = 0, calls_failed = 0;
        for (size_t ni = 0; ni < sizeof nbs / sizeof nbs[0]; ni++) {
            const int64_t n_in = nbs[ni] * t->blck;
            const size_t rb = quant_row_bytes(type, n_in), as = act_row_bytes(t->act, n_in) + 64;
            uint8_t *W = malloc(rb * NOUT_MAX), *a = malloc(as * TMAX);
            fill_random(type, W, (int64_t)(rb * NOUT_MAX) / t->bsize);
            float *x = malloc(sizeof(float) * (size_t)(n_in * TMAX));
            for (int64_t k = 0; k < n_in * TMAX; k++) x[k] = rnd_gauss();
            for (int c = 0; c < TMAX; c++) act_quantize_row(t->act, x + c * n_in, a + (size_t)c * as, n_in);
            float yr[TMAX * NOUT_MAX], y[TMAX * NOUT_MAX];
            for (int c = 0; c < TMAX; c++)
                for (int r = 0; r < NOUT_MAX; r++) {
                    canon_serial = 0;
                    const float ytree = t->dot_ref(W + (size_t)r * rb, a + (size_t)c * as, n_in);
                    canon_serial = 1;
                    yr[c * NOUT_MAX + r] = t->dot_ref(W + (size_t)r * rb, a + (size_t)c * as, n_in);
                    tree_differs += memcmp(&ytree, &yr[c * NOUT_MAX + r], 4) != 0;
                }
            for (size_t oi = 0; oi < sizeof outs / sizeof outs[0]; oi++)
                for (int T = 1; T <= TMAX; T++)
                    for (int p = 0; p < 2; p++) {
                        const int64_t n_out = outs[oi];
                        memset(y, 0xFF, sizeof y);
                        int rc = matvec_with(p ? tp : NULL, W, type, n_in, n_out, x, T, y, MATVEC_DEFAULT, MATVEC_KERNEL_AVX2);
                        calls_failed += rc != 0;
                        for (int c = 0; c < T; c++)
                            for (int64_t r = 0; r < n_out; r++)
                                bad += memcmp(&y[c * n_out + r], &yr[c * NOUT_MAX + r], 4) != 0;
                        outputs += T * n_out;
                    }
            free(W); free(a); free(x);
        }
        CHECKF(calls_failed == 0, "%s: %lld AVX2 serial calls failed", t->name, (long long)calls_failed);
        CHECKF(bad == 0, "%s: AVX2 serial differs from the reference in %lld of %lld outputs", t->name,
               (long long)bad, (long long)outputs);
        CHECKF(tree_differs > 0, "%s: the serial reference equals the tree's everywhere (is it on?)", t->name);
    }
    canon_serial = was;
    threadpool_free(tp);
}
static void test_parity_serial_rows(void) { serial_rows_types(OWNED, N_OWNED); }

/* The T <= 8 kernels' AVX-VNNI twins (Q8_0: code + 128 in vpdpbusd) and the AVX2 kernels they
 * stand in for: the tests above ran whichever the CPU takes by default; here the other one, for
 * the types that have a twin, through the same three suites, so both are held to the reference
 * on a CPU with AVX-VNNI. And the switch takes effect: the dispatch hands out the twin exactly
 * when the override asks for it. */
static void test_parity_vnni_twins(void) {
    if (!cpu_has_avx2_fma() || !cpu_has_avx_vnni()) {
        SKIP("avx2-vnni-twins", "T <= 8 AVX-VNNI twins: CPU lacks AVX-VNNI (the AVX2 kernels ran)");
        return;
    }
    const int def = matmul_vnni_override(-1);
    int twins[N_OWNED], n = 0;
    for (int i = 0; i < N_OWNED; i++)
        if (matvec_rows_vnni(OWNED[i])) twins[n++] = OWNED[i];
    CHECKF(n >= 1 && twins[0] == TYPE_Q8_0, "Q8_0 has no AVX-VNNI twin (%d twins)", n);
    for (int v = 0; v < 2; v++) {
        CHECK_EQ_INT(matmul_vnni_override(v), v);
        for (int i = 0; i < n; i++)
            CHECKF((matvec_rows_cpu(twins[i]) == matvec_rows_vnni(twins[i])) == v &&
                   (matvec_rows_cpu(twins[i]) == matvec_rows_avx2(twins[i])) == !v,
                   "%s: VNNI override %d does not pick the %s kernel", quant_traits_get(twins[i])->name, v, v ? "VNNI" : "AVX2");
    }
    matmul_vnni_override(!def);
    parity_types(twins, n);
    parity_serial_types(twins, n);
    serial_rows_types(twins, n);
    matmul_vnni_override(-1);
}

int main(void) {
    RUN(test_table);
    RUN(test_matvec_errors);
    RUN(test_dequant_oracle);
    RUN(test_q2_0_words);
    RUN(test_act_quant);
    RUN(test_round_trip);
    RUN(test_dot_bound);
    RUN(test_parity);
    RUN(test_parity_serial);
    RUN(test_parity_serial_rows);
    RUN(test_parity_vnni_twins);
    TEST_DONE();
}
