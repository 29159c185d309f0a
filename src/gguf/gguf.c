/* GGUF v2/v3 reader: safe by construction.
 *
 * File layout (all little-endian; strings are u64 length + bytes, not NUL-terminated):
 *
 *   "GGUF"  u32 version  u64 n_tensors  u64 n_kv
 *   n_kv x      { string key, u32 vtype, value }          value of an array:
 *                                                         { u32 elem_type, u64 n, n x elem }
 *   n_tensors x { string name, u32 n_dims, u64 ne[n_dims], u32 ggml_type, u64 offset }
 *   zero padding up to a multiple of `alignment` (general.alignment, default 32)
 *   data section: tensor i at data_offset + offset_i (a multiple of alignment)
 *
 * Every read goes through the cursor (rd_need) which checks the bytes present first; every
 * count is checked against the bytes that remain before anything is allocated for it; every
 * product (elements, bytes) is overflow-checked. The reader never trusts a number it has not
 * bounded, so a malicious or truncated file yields a message, never a crash.
 * Errors read "<file>: <field>: <what is wrong>". */
#include "gguf.h"
#include "core/env.h"
#include "core/util.h"
#include "quant/blocks.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- format facts: ggml type geometry ---------------------------------------------
 * (weights per block, bytes per block) for every type id of src/quant/blocks.h. Kept here
 * so the reader depends on nothing but the block layouts. Checked against the gguf
 * package's GGML_QUANT_SIZES (gguf 0.19.0) except Q8_1, where the package still says 40
 * bytes (two float scales, an old ggml layout); ggml and blocks.h use two fp16 (36). */
typedef struct { const char *name; int blck; int bsize; } type_geom;
static const type_geom type_table[TYPE_COUNT] = {
    [TYPE_F32]     = { "F32", 1, 4 },
    [TYPE_F16]     = { "F16", 1, 2 },
    [TYPE_Q4_0]    = { "Q4_0", QK4_0, sizeof(block_q4_0) },
    [TYPE_Q4_1]    = { "Q4_1", QK4_1, sizeof(block_q4_1) },
    [TYPE_Q5_0]    = { "Q5_0", QK5_0, sizeof(block_q5_0) },
    [TYPE_Q5_1]    = { "Q5_1", QK5_1, sizeof(block_q5_1) },
    [TYPE_Q8_0]    = { "Q8_0", QK8_0, sizeof(block_q8_0) },
    [TYPE_Q8_1]    = { "Q8_1", QK8_1, sizeof(block_q8_1) },
    [TYPE_Q2_K]    = { "Q2_K", QK_K, sizeof(block_q2_K) },
    [TYPE_Q3_K]    = { "Q3_K", QK_K, sizeof(block_q3_K) },
    [TYPE_Q4_K]    = { "Q4_K", QK_K, sizeof(block_q4_K) },
    [TYPE_Q5_K]    = { "Q5_K", QK_K, sizeof(block_q5_K) },
    [TYPE_Q6_K]    = { "Q6_K", QK_K, sizeof(block_q6_K) },
    [TYPE_Q8_K]    = { "Q8_K", QK_K, sizeof(block_q8_K) },
    [TYPE_IQ2_XXS] = { "IQ2_XXS", QK_K, sizeof(block_iq2_xxs) },
    [TYPE_IQ2_XS]  = { "IQ2_XS", QK_K, sizeof(block_iq2_xs) },
    [TYPE_IQ3_XXS] = { "IQ3_XXS", QK_K, sizeof(block_iq3_xxs) },
    [TYPE_IQ1_S]   = { "IQ1_S", QK_K, sizeof(block_iq1_s) },
    [TYPE_IQ4_NL]  = { "IQ4_NL", QK4_NL, sizeof(block_iq4_nl) },
    [TYPE_IQ3_S]   = { "IQ3_S", QK_K, sizeof(block_iq3_s) },
    [TYPE_IQ2_S]   = { "IQ2_S", QK_K, sizeof(block_iq2_s) },
    [TYPE_IQ4_XS]  = { "IQ4_XS", QK_K, sizeof(block_iq4_xs) },
    [TYPE_I8]      = { "I8", 1, 1 },
    [TYPE_I16]     = { "I16", 1, 2 },
    [TYPE_I32]     = { "I32", 1, 4 },
    [TYPE_I64]     = { "I64", 1, 8 },
    [TYPE_F64]     = { "F64", 1, 8 },
    [TYPE_IQ1_M]   = { "IQ1_M", QK_K, sizeof(block_iq1_m) },
    [TYPE_BF16]    = { "BF16", 1, 2 },
    [TYPE_MXFP4]   = { "MXFP4", QK_MXFP4, sizeof(block_mxfp4) },
    [TYPE_Q2_0]    = { "Q2_0", QK2_0, sizeof(block_q2_0) },
};

int gguf_type_size(int type, int *blck, int *bsize) {
    if (type < 0 || type >= TYPE_COUNT || !type_table[type].blck) return -1;
    if (blck) *blck = type_table[type].blck;
    if (bsize) *bsize = type_table[type].bsize;
    return 0;
}

const char *gguf_type_name(int type) {
    if (type < 0 || type >= TYPE_COUNT || !type_table[type].name) return "?";
    return type_table[type].name;
}

int gguf_tensor_nbytes(int type, int n_dims, const int64_t *ne, uint64_t *nelem, uint64_t *nbytes) {
    int blck, bsize;
    if (gguf_type_size(type, &blck, &bsize)) return -1;
    if (n_dims < 1 || n_dims > GGUF_MAX_DIMS) return -1;
    uint64_t n = 1;
    for (int d = 0; d < n_dims; d++) {
        if (ne[d] < 0) return -1;
        if (mul_overflow_u64(n, (uint64_t)ne[d], &n)) return -1;
    }
    if (n > (uint64_t)INT64_MAX) return -1;
    if (ne[0] % blck) return -1;
    /* bytes = (elements / blck) * bsize; ne[0] % blck == 0 so the division is exact */
    uint64_t b;
    if (mul_overflow_u64(n / (uint64_t)blck, (uint64_t)bsize, &b)) return -1;
    if (nelem) *nelem = n;
    if (nbytes) *nbytes = b;
    return 0;
}

/* general.file_type (llama_ftype) names, as the gguf package's LlamaFileType spells them. */
const char *gguf_file_type_name(uint32_t ft) {
    static const char *const names[] = {
        [0] = "ALL_F32", [1] = "MOSTLY_F16", [2] = "MOSTLY_Q4_0", [3] = "MOSTLY_Q4_1",
        [4] = "MOSTLY_Q4_1_SOME_F16", [7] = "MOSTLY_Q8_0", [8] = "MOSTLY_Q5_0", [9] = "MOSTLY_Q5_1",
        [10] = "MOSTLY_Q2_K", [11] = "MOSTLY_Q3_K_S", [12] = "MOSTLY_Q3_K_M", [13] = "MOSTLY_Q3_K_L",
        [14] = "MOSTLY_Q4_K_S", [15] = "MOSTLY_Q4_K_M", [16] = "MOSTLY_Q5_K_S", [17] = "MOSTLY_Q5_K_M",
        [18] = "MOSTLY_Q6_K", [19] = "MOSTLY_IQ2_XXS", [20] = "MOSTLY_IQ2_XS", [21] = "MOSTLY_Q2_K_S",
        [22] = "MOSTLY_IQ3_XS", [23] = "MOSTLY_IQ3_XXS", [24] = "MOSTLY_IQ1_S", [25] = "MOSTLY_IQ4_NL",
        [26] = "MOSTLY_IQ3_S", [27] = "MOSTLY_IQ3_M", [28] = "MOSTLY_IQ2_S", [29] = "MOSTLY_IQ2_M",
        [30] = "MOSTLY_IQ4_XS", [31] = "MOSTLY_IQ1_M", [32] = "MOSTLY_BF16", [36] = "MOSTLY_TQ1_0",
        [37] = "MOSTLY_TQ2_0", [38] = "MOSTLY_MXFP4_MOE",
    };
    if (ft == 1024) return "GUESSED";
    if (ft >= sizeof names / sizeof names[0] || !names[ft]) return "?";
    return names[ft];
}

static const int vtype_size[GGUF_TYPE_COUNT] = {
    [GGUF_TYPE_UINT8] = 1, [GGUF_TYPE_INT8] = 1, [GGUF_TYPE_UINT16] = 2, [GGUF_TYPE_INT16] = 2,
    [GGUF_TYPE_UINT32] = 4, [GGUF_TYPE_INT32] = 4, [GGUF_TYPE_FLOAT32] = 4, [GGUF_TYPE_BOOL] = 1,
    [GGUF_TYPE_STRING] = 0, [GGUF_TYPE_ARRAY] = 0, [GGUF_TYPE_UINT64] = 8, [GGUF_TYPE_INT64] = 8,
    [GGUF_TYPE_FLOAT64] = 8,
};

int gguf_vtype_size(gguf_vtype t) {
    return (unsigned)t < GGUF_TYPE_COUNT ? vtype_size[t] : 0;
}

const char *gguf_vtype_name(gguf_vtype t) {
    static const char *const names[GGUF_TYPE_COUNT] = {
        "uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool",
        "string", "array", "uint64", "int64", "float64",
    };
    return (unsigned)t < GGUF_TYPE_COUNT ? names[t] : "unknown";
}

/* ---- cursor ------------------------------------------------------------------------ */
typedef struct {
    const uint8_t *base;
    uint64_t size, pos;          /* invariant: pos <= size */
    const char *name;            /* file name for messages */
    char *err; size_t errlen;
    char what[192];              /* the field being read, for messages */
} cursor;

/* Printable copy of file bytes for messages (keys and names are untrusted). */
static const char *printable(gguf_str s, char *buf, size_t cap) {
    size_t n = 0;
    for (uint64_t i = 0; i < s.len && n + 4 < cap; i++) {
        unsigned char c = (unsigned char)s.ptr[i];
        buf[n++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    if (s.len > n && n + 4 <= cap) { memcpy(buf + n, "...", 3); n += 3; }
    buf[n] = 0;
    return buf;
}

static int fail(cursor *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(cursor *c, const char *fmt, ...) {
    if (!c->err || !c->errlen) return -1;
    int n = snprintf(c->err, c->errlen, "%s: ", c->name);
    if (n < 0) n = 0;
    if ((size_t)n < c->errlen && c->what[0]) {
        int m = snprintf(c->err + n, c->errlen - (size_t)n, "%s: ", c->what);
        if (m > 0) n += m;
    }
    if ((size_t)n < c->errlen) {
        va_list ap; va_start(ap, fmt);
        vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static void set_what(cursor *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_what(cursor *c, const char *fmt, ...) {
    va_list ap; va_start(ap, fmt);
    vsnprintf(c->what, sizeof c->what, fmt, ap);
    va_end(ap);
}

/* Beyond this many bytes a length or count is called impossible rather than "truncated"
 * (1 PiB: no download is that large; a partial one reports the size it expected). */
#define GGUF_IMPOSSIBLE_BYTES (1ull << 50)

/* n more bytes must be present at pos. */
static int rd_need(cursor *c, uint64_t n) {
    if (n <= c->size - c->pos) return 0;
    if (n > GGUF_IMPOSSIBLE_BYTES)
        return fail(c, "length %llu at byte %llu is impossible (file of %llu bytes)",
                    (unsigned long long)n, (unsigned long long)c->pos, (unsigned long long)c->size);
    uint64_t end = c->pos + n;
    return fail(c, "truncated: expected %llu bytes, file has %llu",
                (unsigned long long)end, (unsigned long long)c->size);
}

/* A count of items each needing at least `min_each` bytes must fit in what remains:
 * bounds every allocation by the file size before it is made. */
static int rd_need_count(cursor *c, uint64_t count, uint64_t min_each, const char *items) {
    uint64_t need;
    if (mul_overflow_u64(count, min_each, &need) || need > GGUF_IMPOSSIBLE_BYTES)
        return fail(c, "count %llu of %s is impossible (file of %llu bytes)",
                    (unsigned long long)count, items, (unsigned long long)c->size);
    if (need > c->size - c->pos)
        return fail(c, "truncated: expected %llu bytes, file has %llu (%llu %s need at least %llu bytes)",
                    (unsigned long long)(c->pos + need), (unsigned long long)c->size,
                    (unsigned long long)count, items, (unsigned long long)need);
    return 0;
}

static int rd_u32(cursor *c, uint32_t *v) {
    if (rd_need(c, 4)) return -1;
    const uint8_t *p = c->base + c->pos;
    *v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    c->pos += 4;
    return 0;
}

static int rd_u64(cursor *c, uint64_t *v) {
    if (rd_need(c, 8)) return -1;
    const uint8_t *p = c->base + c->pos;
    uint64_t x = 0;
    for (int i = 7; i >= 0; i--) x = x << 8 | p[i];
    *v = x;
    c->pos += 8;
    return 0;
}

static int rd_str(cursor *c, gguf_str *s) {
    uint64_t len;
    if (rd_u64(c, &len) || rd_need(c, len)) return -1;
    s->ptr = (const char *)(c->base + c->pos);
    s->len = len;
    c->pos += len;
    return 0;
}

/* little-endian fixed-size scalar of vtype t at p (size checked by the caller) */
static void load_scalar(gguf_vtype t, const uint8_t *p, gguf_kv *kv) {
    uint64_t x = 0;
    int n = vtype_size[t];
    for (int i = n - 1; i >= 0; i--) x = x << 8 | p[i];
    switch (t) {
    case GGUF_TYPE_INT8:  kv->v.i64 = (int8_t)x; break;
    case GGUF_TYPE_INT16: kv->v.i64 = (int16_t)x; break;
    case GGUF_TYPE_INT32: kv->v.i64 = (int32_t)x; break;
    case GGUF_TYPE_INT64: kv->v.i64 = (int64_t)x; break;
    case GGUF_TYPE_FLOAT32: { uint32_t b = (uint32_t)x; float f; memcpy(&f, &b, 4); kv->v.f64 = f; break; }
    case GGUF_TYPE_FLOAT64: { double d; memcpy(&d, &x, 8); kv->v.f64 = d; break; }
    case GGUF_TYPE_BOOL:  kv->v.b = (int)x; break;
    default:              kv->v.u64 = x; break;   /* unsigned */
    }
}

/* ---- key/value section ------------------------------------------------------------- */
static int read_array(cursor *c, gguf_kv *kv) {
    uint32_t et; uint64_t n;
    if (rd_u32(c, &et)) return -1;
    if (et >= GGUF_TYPE_COUNT) return fail(c, "array element type %u is unknown", et);
    if (et == GGUF_TYPE_ARRAY) return fail(c, "nested arrays are not supported");
    if (rd_u64(c, &n)) return -1;
    kv->arr_type = (gguf_vtype)et;
    kv->arr_n = n;
    if (et == GGUF_TYPE_STRING) {
        /* each string needs at least its 8-byte length: bounds the table before allocating */
        if (rd_need_count(c, n, 8, "array strings")) return -1;
        if (n) {
            kv->arr_str = st_malloc((size_t)n * sizeof(gguf_str));
            if (!kv->arr_str) return fail(c, "out of memory for %llu strings", (unsigned long long)n);
        }
        for (uint64_t i = 0; i < n; i++)
            if (rd_str(c, &kv->arr_str[i])) {   /* say which string (not formatted per string) */
                size_t l = c->err ? strlen(c->err) : 0;
                if (c->err && l + 1 < c->errlen)
                    snprintf(c->err + l, c->errlen - l, " (string %llu of %llu)",
                             (unsigned long long)i, (unsigned long long)n);
                return -1;
            }
        kv->arr_data = kv->arr_str;
        return 0;
    }
    uint64_t bytes;
    if (mul_overflow_u64(n, (uint64_t)vtype_size[et], &bytes) || bytes > GGUF_IMPOSSIBLE_BYTES)
        return fail(c, "array of %llu %s is impossible (file of %llu bytes)",
                    (unsigned long long)n, gguf_vtype_name((gguf_vtype)et), (unsigned long long)c->size);
    if (rd_need(c, bytes)) return -1;
    const uint8_t *p = c->base + c->pos;
    if (et == GGUF_TYPE_BOOL)
        for (uint64_t i = 0; i < n; i++)
            if (p[i] > 1) return fail(c, "bool element %llu has value %u (must be 0 or 1)",
                                      (unsigned long long)i, p[i]);
    kv->arr_data = p;
    c->pos += bytes;
    return 0;
}

static int read_kv(cursor *c, gguf_kv *kv, uint64_t idx) {
    char kb[80];
    set_what(c, "key/value %llu: key", (unsigned long long)idx);
    if (rd_str(c, &kv->key)) return -1;
    if (kv->key.len == 0) return fail(c, "key is empty");
    set_what(c, "key '%s'", printable(kv->key, kb, sizeof kb));
    uint32_t t;
    if (rd_u32(c, &t)) return -1;
    if (t >= GGUF_TYPE_COUNT) return fail(c, "value type %u is unknown", t);
    kv->type = (gguf_vtype)t;
    if (t == GGUF_TYPE_ARRAY) return read_array(c, kv);
    if (t == GGUF_TYPE_STRING) return rd_str(c, &kv->v.str);
    if (rd_need(c, (uint64_t)vtype_size[t])) return -1;
    load_scalar(kv->type, c->base + c->pos, kv);
    if (t == GGUF_TYPE_BOOL && (unsigned)kv->v.b > 1)
        return fail(c, "bool has value %d (must be 0 or 1)", kv->v.b);
    c->pos += (uint64_t)vtype_size[t];
    return 0;
}

/* ---- lookups and typed getters ----------------------------------------------------- */
int gguf_str_eq(gguf_str s, const char *z) {
    size_t n = strlen(z);
    return s.len == n && (n == 0 || memcmp(s.ptr, z, n) == 0);
}

char *gguf_str_copy(gguf_str s, char *dst, size_t cap) {
    if (!cap) return dst;
    size_t n = s.len < cap - 1 ? (size_t)s.len : cap - 1;
    if (n) memcpy(dst, s.ptr, n);
    dst[n] = 0;
    return dst;
}

int64_t gguf_find_key(const gguf_file *f, const char *key) {
    if (!f || !key) return -1;
    for (uint64_t i = 0; i < f->n_kv; i++)
        if (gguf_str_eq(f->kv[i].key, key)) return (int64_t)i;
    return -1;
}

const gguf_kv *gguf_get_kv(const gguf_file *f, const char *key) {
    int64_t i = gguf_find_key(f, key);
    return i < 0 ? NULL : &f->kv[i];
}

const gguf_tensor *gguf_find_tensor(const gguf_file *f, const char *name) {
    if (!f || !name) return NULL;
    for (uint64_t i = 0; i < f->n_tensors; i++)
        if (gguf_str_eq(f->tensors[i].name, name)) return &f->tensors[i];
    return NULL;
}

static int vtype_is_unsigned(gguf_vtype t) {
    return t == GGUF_TYPE_UINT8 || t == GGUF_TYPE_UINT16 || t == GGUF_TYPE_UINT32 || t == GGUF_TYPE_UINT64;
}
static int vtype_is_signed(gguf_vtype t) {
    return t == GGUF_TYPE_INT8 || t == GGUF_TYPE_INT16 || t == GGUF_TYPE_INT32 || t == GGUF_TYPE_INT64;
}

int gguf_get_u32(const gguf_file *f, const char *key, uint32_t *out) {
    const gguf_kv *kv = gguf_get_kv(f, key);
    if (!kv) return -1;
    if (vtype_is_unsigned(kv->type)) {
        if (kv->v.u64 > UINT32_MAX) return -2;
        *out = (uint32_t)kv->v.u64; return 0;
    }
    if (vtype_is_signed(kv->type)) {
        if (kv->v.i64 < 0 || kv->v.i64 > (int64_t)UINT32_MAX) return -2;
        *out = (uint32_t)kv->v.i64; return 0;
    }
    return -2;
}

int gguf_get_i64(const gguf_file *f, const char *key, int64_t *out) {
    const gguf_kv *kv = gguf_get_kv(f, key);
    if (!kv) return -1;
    if (vtype_is_unsigned(kv->type)) {
        if (kv->v.u64 > (uint64_t)INT64_MAX) return -2;
        *out = (int64_t)kv->v.u64; return 0;
    }
    if (vtype_is_signed(kv->type)) { *out = kv->v.i64; return 0; }
    return -2;
}

int gguf_get_f32(const gguf_file *f, const char *key, float *out) {
    const gguf_kv *kv = gguf_get_kv(f, key);
    if (!kv) return -1;
    if (kv->type != GGUF_TYPE_FLOAT32 && kv->type != GGUF_TYPE_FLOAT64) return -2;
    *out = (float)kv->v.f64;
    return 0;
}

int gguf_get_bool(const gguf_file *f, const char *key, int *out) {
    const gguf_kv *kv = gguf_get_kv(f, key);
    if (!kv) return -1;
    if (kv->type != GGUF_TYPE_BOOL) return -2;
    *out = kv->v.b;
    return 0;
}

int gguf_get_str(const gguf_file *f, const char *key, gguf_str *out) {
    const gguf_kv *kv = gguf_get_kv(f, key);
    if (!kv) return -1;
    if (kv->type != GGUF_TYPE_STRING) return -2;
    *out = kv->v.str;
    return 0;
}

int gguf_get_arr(const gguf_file *f, const char *key, gguf_vtype elem, uint64_t *n, const void **data) {
    const gguf_kv *kv = gguf_get_kv(f, key);
    if (!kv) return -1;
    if (kv->type != GGUF_TYPE_ARRAY || kv->arr_type != elem) return -2;
    *n = kv->arr_n;
    *data = kv->arr_type == GGUF_TYPE_STRING ? (const void *)kv->arr_str : kv->arr_data;
    return 0;
}

/* ---- whole-file checks -------------------------------------------------------------- */
static int str_cmp(gguf_str a, gguf_str b) {
    uint64_t n = a.len < b.len ? a.len : b.len;
    int r = n ? memcmp(a.ptr, b.ptr, (size_t)n) : 0;
    if (r) return r;
    return a.len < b.len ? -1 : a.len > b.len;
}
static int cmp_str_ptr(const void *a, const void *b) {
    return str_cmp(**(const gguf_str *const *)a, **(const gguf_str *const *)b);
}
static int cmp_tensor_offset(const void *a, const void *b) {
    const gguf_tensor *x = *(const gguf_tensor *const *)a, *y = *(const gguf_tensor *const *)b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* Sort pointers to the names and look for equal neighbours: O(n log n) for fuzzing's sake. */
static int check_unique(cursor *c, gguf_str **names, uint64_t n, const char *what) {
    if (n < 2) return 0;
    qsort(names, (size_t)n, sizeof *names, cmp_str_ptr);
    for (uint64_t i = 1; i < n; i++)
        if (!str_cmp(*names[i - 1], *names[i])) {
            char b[80];
            c->what[0] = 0;
            return fail(c, "duplicate %s '%s'", what, printable(*names[i], b, sizeof b));
        }
    return 0;
}

/* Keys whose value type the format fixes: a wrong type is a corrupt file, said at load. */
static int check_known_keys(cursor *c, const gguf_file *f) {
    static const struct { const char *key; gguf_vtype type, elem; } known[] = {
        { "general.alignment",          GGUF_TYPE_UINT32, 0 },
        { "general.architecture",       GGUF_TYPE_STRING, 0 },
        { "tokenizer.ggml.model",       GGUF_TYPE_STRING, 0 },
        { "tokenizer.ggml.pre",         GGUF_TYPE_STRING, 0 },
        { "tokenizer.ggml.tokens",      GGUF_TYPE_ARRAY, GGUF_TYPE_STRING },
        { "tokenizer.ggml.merges",      GGUF_TYPE_ARRAY, GGUF_TYPE_STRING },
        { "tokenizer.ggml.token_type",  GGUF_TYPE_ARRAY, GGUF_TYPE_INT32 },
        { "tokenizer.ggml.scores",      GGUF_TYPE_ARRAY, GGUF_TYPE_FLOAT32 },
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        const gguf_kv *kv = gguf_get_kv(f, known[i].key);
        if (!kv) continue;
        set_what(c, "key '%s'", known[i].key);
        if (kv->type != known[i].type)
            return known[i].type == GGUF_TYPE_ARRAY
                ? fail(c, "must be an array of %s, found %s", gguf_vtype_name(known[i].elem), gguf_vtype_name(kv->type))
                : fail(c, "must be %s, found %s", gguf_vtype_name(known[i].type), gguf_vtype_name(kv->type));
        if (kv->type == GGUF_TYPE_ARRAY && kv->arr_type != known[i].elem)
            return fail(c, "must be an array of %s, found an array of %s",
                        gguf_vtype_name(known[i].elem), gguf_vtype_name(kv->arr_type));
    }
    return 0;
}

static int read_tensor_info(cursor *c, gguf_tensor *t, uint64_t idx) {
    char nb[80];
    set_what(c, "tensor info %llu: name", (unsigned long long)idx);
    if (rd_str(c, &t->name)) return -1;
    if (t->name.len == 0) return fail(c, "name is empty");
    set_what(c, "tensor '%s'", printable(t->name, nb, sizeof nb));
    uint32_t nd;
    if (rd_u32(c, &nd)) return -1;
    if (nd < 1 || nd > GGUF_MAX_DIMS) return fail(c, "n_dims = %u, must be 1..%d", nd, GGUF_MAX_DIMS);
    t->n_dims = (int)nd;
    for (int d = 0; d < GGUF_MAX_DIMS; d++) t->ne[d] = 1;
    uint64_t nelem = 1;
    for (int d = 0; d < t->n_dims; d++) {
        uint64_t x;
        if (rd_u64(c, &x)) return -1;
        if (x > (uint64_t)INT64_MAX) return fail(c, "dimension %d = %lld is negative", d, (long long)(int64_t)x);
        t->ne[d] = (int64_t)x;
        if (mul_overflow_u64(nelem, x, &nelem) || nelem > (uint64_t)INT64_MAX)
            return fail(c, "element count overflows (dimension %d = %llu)", d, (unsigned long long)x);
    }
    uint32_t type;
    if (rd_u32(c, &type)) return -1;
    int blck, bsize;
    if (type >= TYPE_COUNT || gguf_type_size((int)type, &blck, &bsize))
        return fail(c, "type id %u is unknown", type);
    t->type = (int)type;
    if (t->ne[0] % blck)
        return fail(c, "row length %lld is not a multiple of the %s block size %d",
                    (long long)t->ne[0], gguf_type_name(t->type), blck);
    if (mul_overflow_u64(nelem / (uint64_t)blck, (uint64_t)bsize, &t->nbytes))
        return fail(c, "byte size overflows (%llu elements of %s)", (unsigned long long)nelem, gguf_type_name(t->type));
    if (rd_u64(c, &t->offset)) return -1;
    return 0;
}

static void file_free(gguf_file *f) {
    if (!f) return;
    if (f->kv)
        for (uint64_t i = 0; i < f->n_kv; i++) st_free(f->kv[i].arr_str);
    st_free(f->kv);
    st_free(f->tensors);
    if (f->owns_map && f->base) munmap((void *)f->base, (size_t)f->size);
    st_free(f->path);
    st_free(f);
}

void gguf_close(gguf_file *f) { file_free(f); }

/* Text instead of GGUF: an HTML error page, JSON, a git-lfs pointer, "Not Found"... */
static int looks_like_text(const uint8_t *p, uint64_t n) {
    uint64_t m = n < 512 ? n : 512;
    if (m == 0) return 0;
    for (uint64_t i = 0; i < m; i++) {
        uint8_t b = p[i];
        if (b < 0x20 && b != '\t' && b != '\n' && b != '\r') return 0;
        if (b == 0x7f) return 0;
    }
    return 1;
}

static int parse(cursor *c, gguf_file *f) {
    /* ---- header ---- */
    static const uint8_t magic[4] = { 'G', 'G', 'U', 'F' };
    set_what(c, "%s", "");
    if (c->size == 0) return fail(c, "empty file (0 bytes), not a GGUF file");
    uint64_t mn = c->size < 4 ? c->size : 4;
    if (memcmp(c->base, magic, (size_t)mn)) {
        if (looks_like_text(c->base, c->size)) {
            char start[48]; gguf_str s = { (const char *)c->base, c->size < 40 ? c->size : 40 };
            return fail(c, "looks like a web page / text, not a GGUF file: download the file itself "
                           "(it starts with \"%s\")", printable(s, start, sizeof start));
        }
        set_what(c, "magic");
        uint8_t m[4] = { 0, 0, 0, 0 };
        memcpy(m, c->base, (size_t)mn);
        return fail(c, "not a GGUF file: expected \"GGUF\" (47 47 55 46), found %02x %02x %02x %02x",
                    m[0], m[1], m[2], m[3]);
    }
    set_what(c, "header: magic");
    if (rd_need(c, 4)) return -1;
    c->pos = 4;
    set_what(c, "header: version");
    if (rd_u32(c, &f->version)) return -1;
    if (f->version != 2 && f->version != 3) {
        uint32_t v = f->version;
        uint32_t swapped = (v >> 24) | ((v >> 8) & 0xff00) | ((v << 8) & 0xff0000) | (v << 24);
        if (swapped == 2 || swapped == 3)
            return fail(c, "version %u looks byte-swapped: big-endian GGUF files are not supported", v);
        if (v == 1) return fail(c, "version 1 (the first draft of GGUF) is not supported: convert the model again");
        return fail(c, "unsupported version %u (strata reads versions 2 and 3)", v);
    }
    set_what(c, "header: n_tensors");
    if (rd_u64(c, &f->n_tensors)) return -1;
    set_what(c, "header: n_kv");
    if (rd_u64(c, &f->n_kv)) return -1;
    /* Smallest possible key/value: 8-byte length, 1-byte key, u32 type, 1-byte value = 14.
     * Smallest tensor info: 8 + 1 (name) + 4 (n_dims) + 8 (ne[0]) + 4 (type) + 8 (offset) = 33. */
    uint64_t nkv = f->n_kv, nt = f->n_tensors;
    f->n_kv = 0; f->n_tensors = 0;            /* entries filled so far (for cleanup) */
    set_what(c, "header: n_kv");
    if (rd_need_count(c, nkv, 14, "key/values")) return -1;
    set_what(c, "header: n_tensors");
    if (rd_need_count(c, nt, 33, "tensor infos")) return -1;
    /* each product is <= size now, so the sum cannot overflow */
    uint64_t min_meta = nkv * 14 + nt * 33;
    if (min_meta > c->size - c->pos) {
        set_what(c, "header");
        return fail(c, "truncated: expected %llu bytes, file has %llu (%llu key/values and %llu tensor infos "
                       "need at least %llu bytes)", (unsigned long long)(c->pos + min_meta),
                    (unsigned long long)c->size, (unsigned long long)nkv, (unsigned long long)nt,
                    (unsigned long long)min_meta);
    }

    /* ---- key/values ---- */
    c->what[0] = 0;   /* out-of-memory messages below name no field */
    if (nkv) {
        f->kv = st_calloc((size_t)nkv, sizeof(gguf_kv));
        if (!f->kv) return fail(c, "out of memory for %llu key/values", (unsigned long long)nkv);
    }
    for (uint64_t i = 0; i < nkv; i++) {
        f->n_kv = i + 1;
        if (read_kv(c, &f->kv[i], i)) return -1;
    }
    c->what[0] = 0;
    if (f->n_kv) {
        gguf_str **names = st_malloc((size_t)f->n_kv * sizeof *names);
        if (!names) return fail(c, "out of memory");
        for (uint64_t i = 0; i < f->n_kv; i++) names[i] = &f->kv[i].key;
        int r = check_unique(c, names, f->n_kv, "key");
        st_free(names);
        if (r) return -1;
    }
    if (check_known_keys(c, f)) return -1;
    f->alignment = 32;
    const gguf_kv *al = gguf_get_kv(f, "general.alignment");
    if (al) {
        set_what(c, "key 'general.alignment'");
        uint64_t a = al->v.u64;
        if (a == 0) return fail(c, "alignment is 0 (must be a nonzero power of two)");
        if (a & (a - 1)) return fail(c, "alignment %llu is not a power of two", (unsigned long long)a);
        if (a > (1u << 20)) return fail(c, "alignment %llu is larger than 1 MiB", (unsigned long long)a);
        f->alignment = a;
    }

    /* ---- tensor infos ---- */
    c->what[0] = 0;
    if (nt) {
        f->tensors = st_calloc((size_t)nt, sizeof(gguf_tensor));
        if (!f->tensors) return fail(c, "out of memory for %llu tensor infos", (unsigned long long)nt);
    }
    for (uint64_t i = 0; i < nt; i++) {
        f->n_tensors = i + 1;
        if (read_tensor_info(c, &f->tensors[i], i)) return -1;
    }
    /* data section: the next multiple of the alignment (alignment <= 1 MiB: cannot overflow
     * since pos <= size) */
    f->data_offset = (c->pos + f->alignment - 1) / f->alignment * f->alignment;
    if (!f->n_tensors) return 0;

    c->what[0] = 0;
    gguf_tensor **byoff = st_malloc((size_t)f->n_tensors * sizeof *byoff);
    if (!byoff) return fail(c, "out of memory");
    int r = 0;
    {
        gguf_str **names = (gguf_str **)byoff;   /* same size: reuse for the name check */
        for (uint64_t i = 0; i < f->n_tensors; i++) names[i] = &f->tensors[i].name;
        r = check_unique(c, names, f->n_tensors, "tensor name");
    }
    char nb[80], nb2[80];
    for (uint64_t i = 0; !r && i < f->n_tensors; i++) {
        gguf_tensor *t = &f->tensors[i];
        byoff[i] = t;
        set_what(c, "tensor '%s'", printable(t->name, nb, sizeof nb));
        if (t->offset % f->alignment)
            r = fail(c, "data offset %llu is not a multiple of the alignment %llu",
                     (unsigned long long)t->offset, (unsigned long long)f->alignment);
    }
    uint64_t max_end = 0; const gguf_tensor *last = NULL;
    if (!r) {
        qsort(byoff, (size_t)f->n_tensors, sizeof *byoff, cmp_tensor_offset);
        for (uint64_t i = 0; !r && i < f->n_tensors; i++) {
            gguf_tensor *t = byoff[i];
            uint64_t end;
            if (add_overflow_u64(t->offset, t->nbytes, &end) || add_overflow_u64(end, f->data_offset, &end)
                || end > GGUF_IMPOSSIBLE_BYTES) {
                set_what(c, "tensor '%s'", printable(t->name, nb, sizeof nb));
                r = fail(c, "data offset %llu + size %llu is impossible (file of %llu bytes)",
                         (unsigned long long)t->offset, (unsigned long long)t->nbytes, (unsigned long long)c->size);
                break;
            }
            if (i && t->offset < byoff[i - 1]->offset + byoff[i - 1]->nbytes) {
                c->what[0] = 0;
                r = fail(c, "tensors '%s' (bytes %llu..%llu of the data section) and '%s' (from %llu) overlap",
                         printable(byoff[i - 1]->name, nb, sizeof nb), (unsigned long long)byoff[i - 1]->offset,
                         (unsigned long long)(byoff[i - 1]->offset + byoff[i - 1]->nbytes),
                         printable(t->name, nb2, sizeof nb2), (unsigned long long)t->offset);
                break;
            }
            if (end >= max_end) { max_end = end; last = t; }
        }
    }
    if (!r && max_end > c->size) {
        c->what[0] = 0;
        r = fail(c, "truncated: expected %llu bytes, file has %llu (data of tensor '%s' ends there)",
                 (unsigned long long)max_end, (unsigned long long)c->size, printable(last->name, nb, sizeof nb));
    }
    st_free(byoff);
    if (r) return -1;
    for (uint64_t i = 0; i < f->n_tensors; i++)
        f->tensors[i].data = c->base + f->data_offset + f->tensors[i].offset;
    return 0;
}

static int open_common(const uint8_t *base, uint64_t size, int owns_map, const char *name,
                       gguf_file **out, char *err, size_t errlen) {
    cursor c = { .base = base, .size = size, .pos = 0, .name = name, .err = err, .errlen = errlen };
    c.what[0] = 0;
    gguf_file *f = st_calloc(1, sizeof *f);
    if (!f) {
        if (owns_map) munmap((void *)base, (size_t)size);
        fail(&c, "out of memory");
        return -1;
    }
    f->base = base; f->size = size; f->owns_map = owns_map;
    f->path = st_strdup(name);
    if (!f->path) { fail(&c, "out of memory"); file_free(f); return -1; }
    if (parse(&c, f)) { file_free(f); return -1; }
    *out = f;
    return 0;
}

int gguf_open_memory(const void *buf, size_t n, const char *name, gguf_file **out, char *err, size_t errlen) {
    if (!out) return -1;
    *out = NULL;
    if (!name) name = "(memory)";
    static const uint8_t empty[1] = { 0 };
    if (!buf) { buf = empty; n = 0; }
    return open_common(buf, n, 0, name, out, err, errlen);
}

int gguf_open(const char *path, gguf_file **out, char *err, size_t errlen) {
    if (!out) return -1;
    *out = NULL;
    if (err && errlen) err[0] = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (err) snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st)) {
        if (err) snprintf(err, errlen, "%s: cannot stat: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        if (err) snprintf(err, errlen, "%s: not a regular file", path);
        close(fd);
        return -1;
    }
    uint64_t size = (uint64_t)st.st_size;
    if (size == 0) {
        close(fd);
        return gguf_open_memory(NULL, 0, path, out, err, errlen);
    }
    if (size > (uint64_t)SIZE_MAX) {
        if (err) snprintf(err, errlen, "%s: %llu bytes do not fit the address space", path, (unsigned long long)size);
        close(fd);
        return -1;
    }
    if (env_bool(ENV_MMAP)) {
        /* the file's pages themselves: a file truncated or rewritten in place under a running
         * process faults (SIGBUS) or changes the weights silently */
        void *m = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
        int e = errno;
        close(fd);
        if (m == MAP_FAILED) {
            if (err) snprintf(err, errlen, "%s: cannot map %llu bytes: %s", path, (unsigned long long)size, strerror(e));
            return -1;
        }
        return open_common(m, size, 1, path, out, err, errlen);
    }
    /* default: read into anonymous memory, so the model no longer depends on the file (users
     * update model files in place; docs/RELIABILITY.md has the load time and RSS of both) */
    void *m = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
        int e = errno;
        close(fd);
        if (err) snprintf(err, errlen, "%s: cannot allocate %llu bytes: %s", path, (unsigned long long)size, strerror(e));
        return -1;
    }
#ifdef MADV_HUGEPAGE
    madvise(m, (size_t)size, MADV_HUGEPAGE);   /* 2 MB pages: far fewer faults while reading */
#endif
    uint64_t got = 0;
    while (got < size) {
        size_t want = size - got < (64u << 20) ? (size_t)(size - got) : (64u << 20);
        ssize_t r = pread(fd, (uint8_t *)m + got, want, (off_t)got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            int e = errno;
            if (err) {
                if (r < 0) snprintf(err, errlen, "%s: cannot read: %s", path, strerror(e));
                else snprintf(err, errlen, "%s: the file shrank while it was read (%llu of %llu bytes)", path,
                              (unsigned long long)got, (unsigned long long)size);
            }
            munmap(m, (size_t)size);
            close(fd);
            return -1;
        }
        got += (uint64_t)r;
    }
    close(fd);
    mprotect(m, (size_t)size, PROT_READ);
    return open_common(m, size, 1, path, out, err, errlen);
}
