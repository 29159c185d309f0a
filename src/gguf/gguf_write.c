/* GGUF v3 writer (little-endian). Layout as in gguf.c:
 *   header, key/values (each serialized when added), tensor infos, zero padding to the
 *   alignment, then each tensor's data at an aligned offset, zero-padded after each.
 * Key/values are serialized into their own byte strings when added, so the metadata of a
 * file is small and built in memory; tensor data is streamed from the caller's buffers
 * (synthetic models can be many GB) and never copied. The first error is sticky:
 * gguf_writer_write reports it, so a caller may add everything and check once. */
#include "gguf.h"
#include "core/util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the GGUF writer copies numeric arrays as they lie in memory: little-endian hosts only"
#endif

typedef struct { uint8_t *p; size_t n, cap; int oom; } bytes;

static void b_put(bytes *b, const void *src, size_t n) {
    if (b->oom) return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n) cap *= 2;
        uint8_t *p = st_realloc(b->p, cap);
        if (!p) { b->oom = 1; return; }
        b->p = p; b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, src, n);
    b->n += n;
}
static void b_u32(bytes *b, uint32_t v) {
    uint8_t x[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };
    b_put(b, x, 4);
}
static void b_u64(bytes *b, uint64_t v) {
    uint8_t x[8];
    for (int i = 0; i < 8; i++) x[i] = (uint8_t)(v >> (8 * i));
    b_put(b, x, 8);
}
static void b_str(bytes *b, const char *s, uint64_t n) { b_u64(b, n); b_put(b, s, (size_t)n); }

typedef struct { char *key; bytes ser; } wkv;          /* ser: key, vtype, value as in the file */
typedef struct {
    char *name; int type, n_dims; int64_t ne[GGUF_MAX_DIMS];
    const void *data; uint64_t nbytes, offset;
} wtensor;

struct gguf_writer {
    uint32_t alignment;
    wkv *kv; size_t n_kv, cap_kv;
    wtensor *t; size_t n_t, cap_t;
    char error[256];               /* first error, reported by gguf_writer_write */
};

static int w_fail(gguf_writer *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int w_fail(gguf_writer *w, const char *fmt, ...) {
    if (!w->error[0]) {
        va_list ap; va_start(ap, fmt);
        vsnprintf(w->error, sizeof w->error, fmt, ap);
        va_end(ap);
    }
    return -1;
}

gguf_writer *gguf_writer_new(void) {
    gguf_writer *w = st_calloc(1, sizeof *w);
    if (w) w->alignment = 32;
    return w;
}

void gguf_writer_free(gguf_writer *w) {
    if (!w) return;
    for (size_t i = 0; i < w->n_kv; i++) { st_free(w->kv[i].key); st_free(w->kv[i].ser.p); }
    for (size_t i = 0; i < w->n_t; i++) st_free(w->t[i].name);
    st_free(w->kv);
    st_free(w->t);
    st_free(w);
}

static wkv *find_kv(gguf_writer *w, const char *key) {
    for (size_t i = 0; i < w->n_kv; i++)
        if (!strcmp(w->kv[i].key, key)) return &w->kv[i];
    return NULL;
}

/* Start a key/value: checks the key and returns the entry whose `ser` holds key and vtype. */
static wkv *kv_begin(gguf_writer *w, const char *key, gguf_vtype t) {
    if (!w) return NULL;
    if (!key || !key[0]) { w_fail(w, "key/value: empty key"); return NULL; }
    if (find_kv(w, key)) { w_fail(w, "key '%s' added twice", key); return NULL; }
    if (w->n_kv == w->cap_kv) {
        size_t cap = w->cap_kv ? 2 * w->cap_kv : 16;
        wkv *p = st_realloc(w->kv, cap * sizeof *p);
        if (!p) { w_fail(w, "out of memory"); return NULL; }
        w->kv = p; w->cap_kv = cap;
    }
    wkv *kv = &w->kv[w->n_kv];
    memset(kv, 0, sizeof *kv);
    kv->key = st_strdup(key);
    if (!kv->key) { w_fail(w, "out of memory"); return NULL; }
    b_str(&kv->ser, key, strlen(key));
    b_u32(&kv->ser, (uint32_t)t);
    w->n_kv++;
    return kv;
}
static int kv_end(gguf_writer *w, wkv *kv) {
    if (kv->ser.oom) {
        w->n_kv--;
        st_free(kv->key); st_free(kv->ser.p);
        return w_fail(w, "out of memory");
    }
    return 0;
}

static int add_scalar(gguf_writer *w, const char *key, gguf_vtype t, const void *v) {
    wkv *kv = kv_begin(w, key, t);
    if (!kv) return -1;
    b_put(&kv->ser, v, (size_t)gguf_vtype_size(t));   /* little-endian host (checked above) */
    return kv_end(w, kv);
}

int gguf_writer_add_u32(gguf_writer *w, const char *key, uint32_t v) { return add_scalar(w, key, GGUF_TYPE_UINT32, &v); }
int gguf_writer_add_i32(gguf_writer *w, const char *key, int32_t v) { return add_scalar(w, key, GGUF_TYPE_INT32, &v); }
int gguf_writer_add_u64(gguf_writer *w, const char *key, uint64_t v) { return add_scalar(w, key, GGUF_TYPE_UINT64, &v); }
int gguf_writer_add_f32(gguf_writer *w, const char *key, float v) { return add_scalar(w, key, GGUF_TYPE_FLOAT32, &v); }
int gguf_writer_add_bool(gguf_writer *w, const char *key, int v) {
    uint8_t b = v ? 1 : 0;
    return add_scalar(w, key, GGUF_TYPE_BOOL, &b);
}
int gguf_writer_add_str(gguf_writer *w, const char *key, const char *v) {
    if (!v) return w ? w_fail(w, "key '%s': NULL string", key ? key : "") : -1;
    wkv *kv = kv_begin(w, key, GGUF_TYPE_STRING);
    if (!kv) return -1;
    b_str(&kv->ser, v, strlen(v));
    return kv_end(w, kv);
}

int gguf_writer_add_arr(gguf_writer *w, const char *key, gguf_vtype elem, const void *data, uint64_t n) {
    if (!w) return -1;
    if ((unsigned)elem >= GGUF_TYPE_COUNT || elem == GGUF_TYPE_ARRAY)
        return w_fail(w, "key '%s': array element type %d is not supported", key ? key : "", (int)elem);
    if (n && !data) return w_fail(w, "key '%s': NULL array data", key ? key : "");
    uint64_t bytes_n = 0;
    if (elem != GGUF_TYPE_STRING && mul_overflow_u64(n, (uint64_t)gguf_vtype_size(elem), &bytes_n))
        return w_fail(w, "key '%s': array of %llu elements is too large", key ? key : "", (unsigned long long)n);
    if (elem == GGUF_TYPE_STRING)
        for (uint64_t i = 0; i < n; i++)
            if (!((const char *const *)data)[i])
                return w_fail(w, "key '%s': string %llu of the array is NULL", key ? key : "", (unsigned long long)i);
    wkv *kv = kv_begin(w, key, GGUF_TYPE_ARRAY);
    if (!kv) return -1;
    b_u32(&kv->ser, (uint32_t)elem);
    b_u64(&kv->ser, n);
    if (elem == GGUF_TYPE_STRING) {
        const char *const *s = data;
        for (uint64_t i = 0; i < n; i++) b_str(&kv->ser, s[i], strlen(s[i]));
    } else {
        b_put(&kv->ser, data, (size_t)bytes_n);
    }
    return kv_end(w, kv);
}

int gguf_writer_copy_kv(gguf_writer *w, const gguf_kv *src) {
    if (!w) return -1;
    if (!src) return w_fail(w, "copy_kv: NULL key/value");
    char key[512];
    if (src->key.len >= sizeof key) return w_fail(w, "copy_kv: key of %llu bytes is too long", (unsigned long long)src->key.len);
    gguf_str_copy(src->key, key, sizeof key);
    if (strlen(key) != src->key.len) return w_fail(w, "copy_kv: key holds a NUL byte");
    if ((unsigned)src->type >= GGUF_TYPE_COUNT) return w_fail(w, "key '%s': unknown value type %d", key, (int)src->type);
    wkv *kv = kv_begin(w, key, src->type);
    if (!kv) return -1;
    gguf_vtype t = src->type;
    if (t == GGUF_TYPE_STRING) {
        b_str(&kv->ser, src->v.str.ptr, src->v.str.len);
    } else if (t == GGUF_TYPE_ARRAY) {
        b_u32(&kv->ser, (uint32_t)src->arr_type);
        b_u64(&kv->ser, src->arr_n);
        if (src->arr_type == GGUF_TYPE_STRING) {
            for (uint64_t i = 0; i < src->arr_n; i++) b_str(&kv->ser, src->arr_str[i].ptr, src->arr_str[i].len);
        } else {
            uint64_t nb;
            int es = gguf_vtype_size(src->arr_type);
            if (!es || mul_overflow_u64(src->arr_n, (uint64_t)es, &nb) || (nb && !src->arr_data)) {
                w->n_kv--; st_free(kv->key); st_free(kv->ser.p);
                return w_fail(w, "key '%s': array of %s cannot be copied", key, gguf_vtype_name(src->arr_type));
            }
            b_put(&kv->ser, src->arr_data, (size_t)nb);
        }
    } else {
        /* scalars are held widened in the reader's union: narrow back to the file's width */
        uint8_t x[8]; int n = gguf_vtype_size(t);
        if (t == GGUF_TYPE_FLOAT32) { float f = (float)src->v.f64; memcpy(x, &f, 4); }
        else if (t == GGUF_TYPE_FLOAT64) memcpy(x, &src->v.f64, 8);
        else if (t == GGUF_TYPE_BOOL) x[0] = src->v.b ? 1 : 0;
        else { uint64_t u = src->v.u64; for (int i = 0; i < 8; i++) x[i] = (uint8_t)(u >> (8 * i)); }
        b_put(&kv->ser, x, (size_t)n);
    }
    return kv_end(w, kv);
}

int gguf_writer_set_alignment(gguf_writer *w, uint32_t alignment) {
    if (!w) return -1;
    if (alignment == 0 || (alignment & (alignment - 1)) || alignment > (1u << 20))
        return w_fail(w, "alignment %u: must be a power of two, at most 1 MiB", alignment);
    w->alignment = alignment;
    wkv *kv = find_kv(w, "general.alignment");
    if (kv) {   /* rewrite the value in place: the last 4 bytes of its serialization */
        uint8_t x[4] = { (uint8_t)alignment, (uint8_t)(alignment >> 8), (uint8_t)(alignment >> 16), (uint8_t)(alignment >> 24) };
        if (kv->ser.n < 4) return w_fail(w, "general.alignment: corrupt entry");
        memcpy(kv->ser.p + kv->ser.n - 4, x, 4);
        return 0;
    }
    return gguf_writer_add_u32(w, "general.alignment", alignment);
}

int gguf_writer_add_tensor(gguf_writer *w, const char *name, int type, int n_dims, const int64_t *ne,
                           const void *data, uint64_t nbytes) {
    if (!w) return -1;
    if (!name || !name[0]) return w_fail(w, "tensor: empty name");
    for (size_t i = 0; i < w->n_t; i++)
        if (!strcmp(w->t[i].name, name)) return w_fail(w, "tensor '%s' added twice", name);
    if (n_dims < 1 || n_dims > GGUF_MAX_DIMS || !ne)
        return w_fail(w, "tensor '%s': n_dims = %d, must be 1..%d", name, n_dims, GGUF_MAX_DIMS);
    uint64_t want;
    if (gguf_tensor_nbytes(type, n_dims, ne, NULL, &want))
        return w_fail(w, "tensor '%s': type %s (%d) with row length %lld: unknown type, negative or "
                         "overflowing shape, or a row that is not a whole number of blocks",
                      name, gguf_type_name(type), type, (long long)ne[0]);
    if (want != nbytes)
        return w_fail(w, "tensor '%s': %llu bytes given, its shape and type need %llu",
                      name, (unsigned long long)nbytes, (unsigned long long)want);
    if (nbytes && !data) return w_fail(w, "tensor '%s': NULL data", name);
    if (w->n_t == w->cap_t) {
        size_t cap = w->cap_t ? 2 * w->cap_t : 16;
        wtensor *p = st_realloc(w->t, cap * sizeof *p);
        if (!p) return w_fail(w, "out of memory");
        w->t = p; w->cap_t = cap;
    }
    wtensor *t = &w->t[w->n_t];
    memset(t, 0, sizeof *t);
    t->name = st_strdup(name);
    if (!t->name) return w_fail(w, "out of memory");
    t->type = type; t->n_dims = n_dims;
    for (int d = 0; d < GGUF_MAX_DIMS; d++) t->ne[d] = d < n_dims ? ne[d] : 1;
    t->data = data; t->nbytes = nbytes;
    w->n_t++;
    return 0;
}

static uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

/* Header, key/values, tensor infos and the padding before the data section. Assigns each
 * tensor its offset; *total = size of the whole file. */
static int build_meta(gguf_writer *w, bytes *m, uint64_t *total) {
    b_put(m, "GGUF", 4);
    b_u32(m, 3);
    b_u64(m, w->n_t);
    b_u64(m, w->n_kv);
    for (size_t i = 0; i < w->n_kv; i++) b_put(m, w->kv[i].ser.p, w->kv[i].ser.n);
    uint64_t off = 0;
    for (size_t i = 0; i < w->n_t; i++) {
        wtensor *t = &w->t[i];
        b_str(m, t->name, strlen(t->name));
        b_u32(m, (uint32_t)t->n_dims);
        for (int d = 0; d < t->n_dims; d++) b_u64(m, (uint64_t)t->ne[d]);
        b_u32(m, (uint32_t)t->type);
        t->offset = off;
        b_u64(m, off);
        if (add_overflow_u64(off, align_up(t->nbytes, w->alignment), &off))
            return w_fail(w, "tensor data exceeds 2^64 bytes");
    }
    uint64_t pad = align_up(m->n, w->alignment) - m->n;
    static const uint8_t zeros[64];
    while (pad) { size_t k = pad < sizeof zeros ? (size_t)pad : sizeof zeros; b_put(m, zeros, k); pad -= k; }
    if (m->oom) return w_fail(w, "out of memory");
    if (add_overflow_u64(m->n, off, total)) return w_fail(w, "file exceeds 2^64 bytes");
    return 0;
}

/* Destination: a FILE or a memory buffer of the exact size. */
typedef struct { FILE *fp; uint8_t *mem; uint64_t pos; } sink;
static int sink_put(sink *s, const void *p, uint64_t n) {
    if (!n) return 0;
    if (s->fp) { if (fwrite(p, 1, (size_t)n, s->fp) != n) return -1; }
    else memcpy(s->mem + s->pos, p, (size_t)n);
    s->pos += n;
    return 0;
}
static int sink_zeros(sink *s, uint64_t n) {
    static const uint8_t zeros[4096];
    while (n) {
        uint64_t k = n < sizeof zeros ? n : sizeof zeros;
        if (sink_put(s, zeros, k)) return -1;
        n -= k;
    }
    return 0;
}

static int emit(gguf_writer *w, const bytes *meta, sink *s) {
    if (sink_put(s, meta->p, meta->n)) return -1;
    for (size_t i = 0; i < w->n_t; i++) {
        const wtensor *t = &w->t[i];
        if (sink_put(s, t->data, t->nbytes)) return -1;
        if (sink_zeros(s, align_up(t->nbytes, w->alignment) - t->nbytes)) return -1;
    }
    return 0;
}

static int report(gguf_writer *w, const char *dest, char *err, size_t errlen) {
    if (err && errlen) snprintf(err, errlen, "%s: %s", dest, w->error);
    return -1;
}

int gguf_writer_write_memory(gguf_writer *w, void **out, size_t *n, char *err, size_t errlen) {
    if (!w || !out || !n) return -1;
    *out = NULL; *n = 0;
    if (w->error[0]) return report(w, "(memory)", err, errlen);
    bytes meta = { 0 };
    uint64_t total;
    if (build_meta(w, &meta, &total)) { st_free(meta.p); return report(w, "(memory)", err, errlen); }
    if (total > SIZE_MAX) { st_free(meta.p); w_fail(w, "file too large for memory"); return report(w, "(memory)", err, errlen); }
    sink s = { .fp = NULL, .mem = st_malloc((size_t)total), .pos = 0 };
    if (!s.mem) { st_free(meta.p); w_fail(w, "out of memory for %llu bytes", (unsigned long long)total); return report(w, "(memory)", err, errlen); }
    emit(w, &meta, &s);
    st_free(meta.p);
    *out = s.mem; *n = (size_t)total;
    return 0;
}

/* Written to "<path>.tmp" and renamed: a failed or interrupted write never leaves a
 * truncated file under the final name. */
int gguf_writer_write(gguf_writer *w, const char *path, char *err, size_t errlen) {
    if (!w || !path) return -1;
    if (w->error[0]) return report(w, path, err, errlen);
    bytes meta = { 0 };
    uint64_t total;
    if (build_meta(w, &meta, &total)) { st_free(meta.p); return report(w, path, err, errlen); }
    size_t pl = strlen(path);
    char *tmp = st_malloc(pl + 5);
    if (!tmp) { st_free(meta.p); w_fail(w, "out of memory"); return report(w, path, err, errlen); }
    memcpy(tmp, path, pl); memcpy(tmp + pl, ".tmp", 5);
    FILE *fp = fopen(tmp, "wb");
    if (!fp) {
        if (err && errlen) snprintf(err, errlen, "%s: cannot create: %s", tmp, strerror(errno));
        st_free(tmp); st_free(meta.p);
        return -1;
    }
    sink s = { .fp = fp, .mem = NULL, .pos = 0 };
    int r = emit(w, &meta, &s);
    int e = errno;
    st_free(meta.p);
    if (fclose(fp)) { if (!r) e = errno; r = -1; }
    if (!r && rename(tmp, path)) { e = errno; r = -1; }
    if (r) {
        if (err && errlen) snprintf(err, errlen, "%s: write failed: %s", path, strerror(e));
        unlink(tmp);
    }
    st_free(tmp);
    return r;
}
