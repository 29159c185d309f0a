/* GGUF v2/v3 reader (mmap, little-endian, safe by construction) and writer.
 * Every length, count, offset and size is checked against the bytes present before use;
 * a bad file yields an error that names the file, the field and what is wrong. */
#ifndef STRATA_GGUF_H
#define STRATA_GGUF_H
#include <stddef.h>
#include <stdint.h>

typedef enum {
    GGUF_TYPE_UINT8 = 0, GGUF_TYPE_INT8 = 1, GGUF_TYPE_UINT16 = 2, GGUF_TYPE_INT16 = 3,
    GGUF_TYPE_UINT32 = 4, GGUF_TYPE_INT32 = 5, GGUF_TYPE_FLOAT32 = 6, GGUF_TYPE_BOOL = 7,
    GGUF_TYPE_STRING = 8, GGUF_TYPE_ARRAY = 9, GGUF_TYPE_UINT64 = 10, GGUF_TYPE_INT64 = 11,
    GGUF_TYPE_FLOAT64 = 12, GGUF_TYPE_COUNT
} gguf_vtype;

/* A string inside the mapped file: not NUL-terminated. */
typedef struct { const char *ptr; uint64_t len; } gguf_str;

typedef struct gguf_kv {
    gguf_str key;
    gguf_vtype type;            /* value type; for arrays GGUF_TYPE_ARRAY */
    gguf_vtype arr_type;        /* element type of an array */
    uint64_t arr_n;             /* element count of an array */
    const void *arr_data;       /* first element (numeric arrays; unaligned: use memcpy) */
    gguf_str *arr_str;          /* string arrays: arr_n entries (owned by the reader) */
    union { uint64_t u64; int64_t i64; double f64; int b; gguf_str str; } v; /* scalars */
} gguf_kv;

#define GGUF_MAX_DIMS 4
typedef struct gguf_tensor {
    gguf_str name;
    int n_dims;
    int64_t ne[GGUF_MAX_DIMS];  /* ne[0] = row length (fastest); unused dims are 1 */
    int type;                   /* ggml type id (strata_type) */
    uint64_t offset;            /* relative to the data section */
    uint64_t nbytes;
    const void *data;           /* inside the mapping */
} gguf_tensor;

typedef struct gguf_file {
    char *path;
    const uint8_t *base;        /* whole file */
    uint64_t size;
    int owns_map;               /* 1: mmap'ed by gguf_open */
    uint32_t version;
    uint64_t n_kv, n_tensors;
    gguf_kv *kv;
    gguf_tensor *tensors;
    uint64_t alignment;
    uint64_t data_offset;       /* start of the tensor data section */
} gguf_file;

/* Open and validate. On failure returns -1, *out = NULL and err holds the message. */
int  gguf_open(const char *path, gguf_file **out, char *err, size_t errlen);
/* Same over a caller-owned buffer (tests, fuzzing); `name` is used in messages. */
int  gguf_open_memory(const void *buf, size_t n, const char *name, gguf_file **out, char *err, size_t errlen);
void gguf_close(gguf_file *f);

/* Lookups. Index or -1. */
int64_t gguf_find_key(const gguf_file *f, const char *key);
const gguf_kv *gguf_get_kv(const gguf_file *f, const char *key);
const gguf_tensor *gguf_find_tensor(const gguf_file *f, const char *name);

/* Typed getters: 0 ok, -1 missing, -2 wrong type or value out of range for the result.
 * Integer getters accept any integer type whose value fits. */
int gguf_get_u32(const gguf_file *f, const char *key, uint32_t *out);
int gguf_get_i64(const gguf_file *f, const char *key, int64_t *out);
int gguf_get_f32(const gguf_file *f, const char *key, float *out);   /* float32 or float64 */
int gguf_get_bool(const gguf_file *f, const char *key, int *out);
int gguf_get_str(const gguf_file *f, const char *key, gguf_str *out);
/* Array of `elem` type: n and pointer to the first element (string arrays: gguf_str*). */
int gguf_get_arr(const gguf_file *f, const char *key, gguf_vtype elem, uint64_t *n, const void **data);
int gguf_str_eq(gguf_str s, const char *c);
/* Copy into a NUL-terminated buffer (truncates); returns dst. */
char *gguf_str_copy(gguf_str s, char *dst, size_t cap);
const char *gguf_vtype_name(gguf_vtype t);
int gguf_vtype_size(gguf_vtype t);               /* bytes of a fixed-size scalar; 0 for string/array/unknown */

/* ggml type facts (ids of strata_type in quant/blocks.h), independent of the quant library.
 * gguf_type_size: 0 and (weights per block, bytes per block), or -1 for an unknown id. */
int gguf_type_size(int type, int *blck, int *bsize);
const char *gguf_type_name(int type);            /* "Q4_K"; "?" when unknown */
/* Elements and bytes of a tensor; -1 if the type is unknown, n_dims outside 1..4, a dim < 0,
 * ne[0] not a multiple of the block size, or a count overflows. Either out may be NULL. */
int gguf_tensor_nbytes(int type, int n_dims, const int64_t *ne, uint64_t *nelem, uint64_t *nbytes);
/* general.file_type (llama_ftype) as the gguf package names it: "MOSTLY_Q4_1"; "?" unknown. */
const char *gguf_file_type_name(uint32_t file_type);

/* ---- writer ------------------------------------------------------------------------ */
typedef struct gguf_writer gguf_writer;
gguf_writer *gguf_writer_new(void);                       /* version 3, alignment 32 */
void gguf_writer_free(gguf_writer *w);
int gguf_writer_set_alignment(gguf_writer *w, uint32_t alignment); /* also writes general.alignment */
int gguf_writer_add_u32(gguf_writer *w, const char *key, uint32_t v);
int gguf_writer_add_i32(gguf_writer *w, const char *key, int32_t v);
int gguf_writer_add_u64(gguf_writer *w, const char *key, uint64_t v);
int gguf_writer_add_f32(gguf_writer *w, const char *key, float v);
int gguf_writer_add_bool(gguf_writer *w, const char *key, int v);
int gguf_writer_add_str(gguf_writer *w, const char *key, const char *v);
/* Numeric array (elem any fixed-size type) or string array (elem STRING, data = const char **). */
int gguf_writer_add_arr(gguf_writer *w, const char *key, gguf_vtype elem, const void *data, uint64_t n);
/* Copy a key/value from a file being read (tokenizer copy in `strata synth`). */
int gguf_writer_copy_kv(gguf_writer *w, const gguf_kv *kv);
/* Tensor: data is referenced until gguf_writer_write returns (not copied). ne[0] fastest. */
int gguf_writer_add_tensor(gguf_writer *w, const char *name, int type, int n_dims, const int64_t *ne,
                           const void *data, uint64_t nbytes);
/* Write to path. 0 ok, -1 with err. */
int gguf_writer_write(gguf_writer *w, const char *path, char *err, size_t errlen);
/* Same into a buffer allocated with st_malloc (*out; free with st_free); *n its size. */
int gguf_writer_write_memory(gguf_writer *w, void **out, size_t *n, char *err, size_t errlen);
#endif
