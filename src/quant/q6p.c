/* Q6P rows (q6p.h): the repack of Q6_K rows into planes and its inverse. */
#include "quant/q6p.h"
#include <string.h>
#include "quant/blocks.h"

size_t q6p_row_bytes(int64_t n) { return ((size_t)(n / QK_K) * sizeof(block_q6_K) + 15u) & ~(size_t)15u; }

int q6p_repack_row(const void *src, void *dst, int64_t n) {
    if (n <= 0 || n % QK_K) return -1;
    const int nb = (int)(n / QK_K);
    const block_q6_K *x = (const block_q6_K *)src;
    uint8_t *o = (uint8_t *)dst;
    memset(o + 210 * nb, 0, q6p_row_bytes(n) - 210 * (size_t)nb);
    for (int b = 0; b < nb; b++) {
        memcpy(o + q6p_ql(nb, b), x[b].ql, 128);
        memcpy(o + q6p_qh(nb, b), x[b].qh, 64);
        memcpy(o + q6p_sc(nb, b), x[b].scales, 16);
        memcpy(o + q6p_d(nb, b), &x[b].d, 2);
    }
    return 0;
}

int q6p_repack_rows(const void *src, void *dst, int64_t rows, int64_t n) {
    if (n <= 0 || n % QK_K) return -1;
    const size_t sb = (size_t)(n / QK_K) * sizeof(block_q6_K), db = q6p_row_bytes(n);
    for (int64_t r = 0; r < rows; r++)
        if (q6p_repack_row((const uint8_t *)src + (size_t)r * sb, (uint8_t *)dst + (size_t)r * db, n)) return -1;
    return 0;
}

int q6p_unpack_row(const void *src, void *dst, int64_t n) {
    if (n <= 0 || n % QK_K) return -1;
    const int nb = (int)(n / QK_K);
    const uint8_t *p = (const uint8_t *)src;
    block_q6_K *y = (block_q6_K *)dst;
    for (int b = 0; b < nb; b++) {
        memcpy(y[b].ql, p + q6p_ql(nb, b), 128);
        memcpy(y[b].qh, p + q6p_qh(nb, b), 64);
        memcpy(y[b].scales, p + q6p_sc(nb, b), 16);
        memcpy(&y[b].d, p + q6p_d(nb, b), 2);
    }
    return 0;
}
