/* R4 rows (r4.h): the repack from IQ2_XXS / IQ3_XXS and the reference dot. */
#include "quant/r4.h"
#include <pthread.h>
#include <string.h>
#include "core/util.h"
#include "quant/blocks.h"
#include "quant/formats.h"
#include "quant/quant.h"
#include "quant/quant_canon.h"
#include "quant/ref_iq.h"

/* the distinct bytes of each grid (iq_tables.c), ascending; tests/test_r4.c derives them from the grids */
static const uint8_t k_lv_iq3_xxs[8] = { 4, 12, 20, 28, 36, 44, 52, 62 };
static const uint8_t k_lv_iq2_xxs[8] = { 8, 25, 43, 0, 0, 0, 0, 0 };

int r4_supported(int type) { return type == TYPE_IQ3_XXS || type == TYPE_IQ2_XXS; }
const uint8_t *r4_levels(int type) {
    return type == TYPE_IQ3_XXS ? k_lv_iq3_xxs : type == TYPE_IQ2_XXS ? k_lv_iq2_xxs : NULL;
}
float r4_k(int type) { return type == TYPE_IQ3_XXS ? 0.25f : 0.125f; }
size_t r4_row_bytes(int64_t n) { return ((size_t)(n / QK_K) * 138u + 15u) & ~(size_t)15u; }

int r4_budget_fits(uint64_t free_bytes, uint64_t total, uint64_t need) {
    const uint64_t floor = (uint64_t)2 << 30, reserve = total / 8 > floor ? total / 8 : floor;
    return need <= free_bytes && free_bytes - need >= reserve;
}

int r4_repack_row(int type, const void *src, void *dst, int64_t n) {
    const uint8_t *lv = r4_levels(type);
    if (!lv || n % QK_K) return -1;
    const int64_t nb = n / QK_K;
    const size_t bs = quant_row_bytes(type, QK_K);
    uint8_t *o = (uint8_t *)dst, *om = o + 128 * nb, *od = o + 136 * nb;
    memset(o, 0, r4_row_bytes(n));
    int8_t inv[128];   /* magnitude -> level index, -1 for a magnitude no level has */
    memset(inv, -1, sizeof inv);
    for (int i = 0; i < 8; i++)
        if (lv[i]) inv[lv[i]] = (int8_t)i;
    int8_t w8[QK_K];
    int16_t m[16];
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *blk = (const uint8_t *)src + (size_t)b * bs;
        iq_decode_ref(type, blk, w8, m);
        for (int i = 0; i < QK_K; i++) {
            const int neg = w8[i] < 0, g = neg ? -w8[i] : w8[i], idx = inv[g & 127];
            if (idx < 0) return -1;
            o[128 * b + i / 2] |= (uint8_t)(((neg << 3) | idx) << (4 * (i & 1)));
        }
        for (int j = 0; j < 8; j++) {
            if (m[2 * j] != m[2 * j + 1] || m[2 * j] < 0 || m[2 * j] > 255) return -1;
            om[8 * b + j] = (uint8_t)m[2 * j];
        }
        memcpy(od + 2 * b, blk, 2);   /* fp16 d: the first two bytes of both formats' blocks */
    }
    return 0;
}

typedef struct { int type; const uint8_t *src; uint8_t *dst; int64_t r0, r1, n; int rc; } r4_job;
static void *r4_worker(void *p) {
    r4_job *j = (r4_job *)p;
    const size_t sb = quant_row_bytes(j->type, j->n), db = r4_row_bytes(j->n);
    for (int64_t r = j->r0; r < j->r1 && !j->rc; r++) j->rc = r4_repack_row(j->type, j->src + (size_t)r * sb, j->dst + (size_t)r * db, j->n);
    return NULL;
}
int r4_repack_rows(int type, const void *src, void *dst, int64_t rows, int64_t n, int threads) {
    enum { MAXT = 64 };
    if (threads > MAXT) threads = MAXT;
    if (threads < 1 || rows < 4 * (int64_t)threads) threads = 1;
    r4_job jobs[MAXT];
    pthread_t th[MAXT];
    int on[MAXT] = { 0 }, rc = 0;
    for (int t = 0; t < threads; t++) {
        jobs[t] = (r4_job){ type, (const uint8_t *)src, (uint8_t *)dst, rows * t / threads, rows * (t + 1) / threads, n, 0 };
        if (t > 0) on[t] = pthread_create(&th[t], NULL, r4_worker, &jobs[t]) == 0;
    }
    r4_worker(&jobs[0]);
    for (int t = 0; t < threads; t++) {
        if (on[t]) pthread_join(th[t], NULL);
        else if (t > 0) r4_worker(&jobs[t]);   /* a thread that did not start: its rows here */
        rc |= jobs[t].rc;
    }
    return rc ? -1 : 0;
}

float r4_dot_ref(int type, const void *row, const void *act, int64_t n) {
    const uint8_t *lv = r4_levels(type), *o = (const uint8_t *)row;
    const int64_t nb = n / QK_K;
    const act_q8_K *ab = (const act_q8_K *)act;
    const float k = r4_k(type);
    canon_acc acc;
    canon_init(&acc);
    for (int64_t b = 0; b < nb; b++) {
        int32_t isum = 0;
        for (int j = 0; j < 8; j++) {
            int32_t s = 0;
            for (int i = 32 * j; i < 32 * j + 32; i++) {
                const int c = (o[128 * b + i / 2] >> (4 * (i & 1))) & 15;
                s += (c & 8 ? -(int32_t)lv[c & 7] : (int32_t)lv[c & 7]) * ab[b].qs[i];
            }
            isum += (int32_t)o[128 * nb + 8 * b + j] * s;
        }
        uint16_t d;
        memcpy(&d, o + 136 * nb + 2 * b, 2);
        canon_add(&acc, b, ((float)isum * k) * (fp16_to_f32(d) * ab[b].d));
    }
    return canon_finish(&acc);
}
