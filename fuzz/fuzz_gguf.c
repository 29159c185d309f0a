/* libFuzzer target: the GGUF reader (src/gguf/gguf.c) on arbitrary bytes.
 *
 * Oracles beyond "no crash, no leak, no UB" (ASan + UBSan):
 *   - a rejected file leaves *out NULL and a message that starts with the file name;
 *   - an accepted file satisfies the reader's promises: every tensor's bytes lie inside the
 *     buffer, its offset is a multiple of the alignment, nbytes agrees with
 *     gguf_tensor_nbytes, tensors do not overlap (checked pairwise on small files);
 *   - every typed getter runs on every key (whatever type it holds);
 *   - an accepted file whose keys and names hold no NUL byte survives a round trip through
 *     the writer: the rewrite opens again with the same keys, tensors and tensor bytes;
 *   - an accepted file opened again with an allocation failing is a clean "out of memory". */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gguf/gguf.h"
#include "core/util.h"

#define FUZZ_ASSERT(c) do { if (!(c)) { fprintf(stderr, "fuzz_gguf: assertion failed: %s (line %d)\n", #c, __LINE__); abort(); } } while (0)

static int has_nul(gguf_str s) { return s.len && memchr(s.ptr, 0, (size_t)s.len) != NULL; }

static void exercise_getters(const gguf_file *f) {
    for (uint64_t i = 0; i < f->n_kv; i++) {
        char key[256];
        const gguf_kv *kv = &f->kv[i];
        if (has_nul(kv->key) || kv->key.len >= sizeof key) continue;
        gguf_str_copy(kv->key, key, sizeof key);
        uint32_t u; int64_t v; float x; int b; gguf_str s; uint64_t n; const void *p;
        FUZZ_ASSERT(gguf_find_key(f, key) >= 0);
        (void)gguf_get_u32(f, key, &u);
        (void)gguf_get_i64(f, key, &v);
        (void)gguf_get_f32(f, key, &x);
        (void)gguf_get_bool(f, key, &b);
        if (gguf_get_str(f, key, &s) == 0) FUZZ_ASSERT(s.ptr >= (const char *)f->base && s.len <= f->size);
        if (kv->type == GGUF_TYPE_ARRAY) {
            FUZZ_ASSERT(gguf_get_arr(f, key, kv->arr_type, &n, &p) == 0 && n == kv->arr_n);
            if (kv->arr_type == GGUF_TYPE_STRING) {
                const gguf_str *ss = p;
                for (uint64_t k = 0; k < n; k++) {   /* every string inside the buffer */
                    FUZZ_ASSERT((const uint8_t *)ss[k].ptr >= f->base);
                    FUZZ_ASSERT((const uint8_t *)ss[k].ptr + ss[k].len <= f->base + f->size);
                }
            } else {
                uint64_t bytes = n * (uint64_t)gguf_vtype_size(kv->arr_type);
                FUZZ_ASSERT((const uint8_t *)p >= f->base && (const uint8_t *)p + bytes <= f->base + f->size);
            }
        }
    }
}

static void check_tensors(const gguf_file *f) {
    FUZZ_ASSERT(f->alignment && !(f->alignment & (f->alignment - 1)));
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const gguf_tensor *t = &f->tensors[i];
        uint64_t ne, nb;
        FUZZ_ASSERT(gguf_tensor_nbytes(t->type, t->n_dims, t->ne, &ne, &nb) == 0 && nb == t->nbytes);
        FUZZ_ASSERT(t->offset % f->alignment == 0);
        FUZZ_ASSERT((const uint8_t *)t->data == f->base + f->data_offset + t->offset);
        FUZZ_ASSERT(f->data_offset + t->offset + t->nbytes <= f->size);
        FUZZ_ASSERT(gguf_find_tensor(f, "") == NULL);
        if (f->n_tensors <= 64)
            for (uint64_t j = i + 1; j < f->n_tensors; j++) {
                const gguf_tensor *u = &f->tensors[j];
                int disjoint = t->offset + t->nbytes <= u->offset || u->offset + u->nbytes <= t->offset
                               || !t->nbytes || !u->nbytes;
                FUZZ_ASSERT(disjoint);
            }
    }
}

/* Rewrite through the writer and read back. */
static void round_trip(const gguf_file *f) {
    for (uint64_t i = 0; i < f->n_kv; i++) if (has_nul(f->kv[i].key)) return;
    for (uint64_t i = 0; i < f->n_tensors; i++) if (has_nul(f->tensors[i].name) || f->tensors[i].name.len > 255) return;
    gguf_writer *w = gguf_writer_new();
    if (!w) return;
    int has_align = gguf_get_kv(f, "general.alignment") != NULL;
    if (has_align) FUZZ_ASSERT(gguf_writer_set_alignment(w, (uint32_t)f->alignment) == 0);
    for (uint64_t i = 0; i < f->n_kv; i++)
        if (!gguf_str_eq(f->kv[i].key, "general.alignment")) FUZZ_ASSERT(gguf_writer_copy_kv(w, &f->kv[i]) == 0);
    char name[256];
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const gguf_tensor *t = &f->tensors[i];
        FUZZ_ASSERT(gguf_writer_add_tensor(w, gguf_str_copy(t->name, name, sizeof name), t->type, t->n_dims, t->ne,
                                           t->data, t->nbytes) == 0);
    }
    void *mem = NULL; size_t n = 0; char err[512];
    int r = gguf_writer_write_memory(w, &mem, &n, err, sizeof err);
    gguf_writer_free(w);
    FUZZ_ASSERT(r == 0);
    gguf_file *g = NULL;
    r = gguf_open_memory(mem, n, "rewrite.gguf", &g, err, sizeof err);
    if (r) fprintf(stderr, "fuzz_gguf: rewrite rejected: %s\n", err);
    FUZZ_ASSERT(r == 0);
    FUZZ_ASSERT(g->n_kv == f->n_kv && g->n_tensors == f->n_tensors && g->alignment == f->alignment);
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const gguf_tensor *t = &f->tensors[i];
        const gguf_tensor *u = &g->tensors[i];
        FUZZ_ASSERT(u->type == t->type && u->n_dims == t->n_dims && u->nbytes == t->nbytes);
        FUZZ_ASSERT(!memcmp(u->ne, t->ne, sizeof t->ne));
        FUZZ_ASSERT(!t->nbytes || !memcmp(u->data, t->data, (size_t)t->nbytes));
    }
    gguf_close(g);
    st_free(mem);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char err[512] = "";
    gguf_file *f = (gguf_file *)&err;   /* must be overwritten */
    int r = gguf_open_memory(data, size, "fuzz.gguf", &f, err, sizeof err);
    if (r != 0) {
        FUZZ_ASSERT(r == -1 && f == NULL);
        FUZZ_ASSERT(!strncmp(err, "fuzz.gguf: ", 11));
        return 0;
    }
    FUZZ_ASSERT(f != NULL && f->base == data && f->size == size);
    FUZZ_ASSERT(f->version == 2 || f->version == 3);
    exercise_getters(f);
    check_tensors(f);
    round_trip(f);
    gguf_close(f);

    /* the same file with the k-th allocation failing (k from the input): a clean error that
     * says "out of memory", or success when the reader needs fewer allocations; no leak */
    long k = 1 + (long)(size % 13);
    f = NULL;
    st_alloc_fail_after(k);
    r = gguf_open_memory(data, size, "fuzz.gguf", &f, err, sizeof err);
    int injected = st_alloc_fail_pending() == 0;
    st_alloc_fail_after(0);
    if (r == 0) { FUZZ_ASSERT(!injected); gguf_close(f); }
    else FUZZ_ASSERT(injected && f == NULL && strstr(err, "out of memory"));
    return 0;
}
