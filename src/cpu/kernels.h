/* The fast-kernel interface of the CPU matvec (src/cpu/matvec.c dispatches to these).
 *
 * One function per weight format computes, for rows r in [r0, r1) and columns c < T:
 *   y[c * n_out + r] = dot(W row r, activation row c)
 * with exactly the bits of the format's reference dot (quant_traits.dot_ref), i.e. the
 * canonical order of docs/KERNELS.md. Shapes:
 *   W    n_out rows, row r at (const char *)W + r * row_bytes, n_in weights each
 *   act  T activation rows in the format's activation layout (quant_traits.act),
 *        row c at (const char *)act + c * act_stride; for ACT_F32 formats: T f32 rows
 *   y    T output columns of n_out floats, column-major by c (y[c * n_out + r])
 * Kernels read each weight block once for all T columns (rows outer, columns inner),
 * so column c's bits never depend on T (batch invariance). T is 1..MATVEC_MAX_COLS. */
#ifndef STRATA_CPU_KERNELS_H
#define STRATA_CPU_KERNELS_H
#include <stddef.h>
#include <stdint.h>

typedef void (*matvec_rows_fn)(const void *W, size_t row_bytes, int64_t n_in,
                               const void *act, size_t act_stride, int T,
                               float *y, int64_t n_out, int64_t r0, int64_t r1);

/* Wide kernels (T > MATVEC_MAX_COLS, src/cpu/matmul_avx2.h): rows [r0, r1) (r0 a multiple of
 * MATMUL_ROWS) for all T columns, with the bits of the matvec kernels above. A strip of
 * MATMUL_ROWS rows is decoded once into `scratch` (scratch_bytes(n_in) bytes, any alignment)
 * and every column runs against it. asum: for formats with asum_blck != 0, the integer sum of
 * each activation block's codes, asum[c * (n_in / asum_blck) + b]; NULL otherwise. */
#define MATMUL_ROWS 8
typedef void (*matmul_rows_fn)(const void *W, size_t row_bytes, int64_t n_in, const void *act,
                               size_t act_stride, const int32_t *asum, int T, float *y, int64_t n_out,
                               int64_t r0, int64_t r1, void *scratch);
typedef struct {
    matmul_rows_fn rows;
    size_t (*scratch_bytes)(int64_t n_in);
    int asum_blck;     /* 0, or the activation block (32, 64) whose code sums the kernel needs */
    int asum_qs;       /* byte offset of the codes in an activation block */
    int asum_bytes;    /* bytes per activation block */
} matmul_kernel;
/* AVX2 wide kernels: matmul_avx2 for the legacy and K-quant formats, matmul_avx2_iq for the
 * IQ formats; NULL where a type has none (float formats use the matvec kernels in tiles).
 * vnni != 0: the AVX-VNNI twin (vpdpbusd for maddubs + madd; the same integers, so the same
 * bits), to be run only where cpu_has_avx_vnni(). */
const matmul_kernel *matmul_avx2(int type, int vnni);
const matmul_kernel *matmul_avx2_iq(int type, int vnni);
/* The wide kernel a pass of this type takes on this CPU (src/cpu/matvec.c): the AVX-VNNI twin
 * where the CPU has AVX-VNNI and STRATA_CPU_VNNI is on (the default), else the AVX2 one; NULL
 * without AVX2 or without a wide kernel for the type. */
const matmul_kernel *matmul_wide(int type);
/* Tests: -1 back to the default (STRATA_CPU_VNNI and the CPU), 0 the AVX2 kernels, 1 the
 * AVX-VNNI twins where the CPU has them. Returns 1 when the twins are now in use. */
int matmul_vnni_override(int v);
/* The code sums a wide kernel with asum_blck != 0 takes: sums[c * (n_in / asum_blck) + b] for the
 * T activation rows at act (stride bytes apart). src/cpu/matvec.c. */
void matmul_act_sums(const matmul_kernel *mk, const void *act, size_t stride, int64_t n_in, int T, int32_t *sums);

/* AVX2+FMA+F16C kernels (callers check cpu_has_avx2_fma() first). NULL: no fast kernel
 * for this type. matvec_rows_avx2 covers the float, legacy and K-quant formats
 * (src/cpu/matvec_avx2.c); matvec_rows_avx2_iq covers the IQ codebook formats
 * (src/cpu/matvec_iq_avx2.c) and returns NULL for every other type. */
matvec_rows_fn matvec_rows_avx2(int type);
matvec_rows_fn matvec_rows_avx2_iq(int type);
/* AVX-VNNI twins of the T <= 8 kernels (src/cpu/matvec_avx2.c), NULL for a type without one:
 * Q8_0 and IQ4_NL, whose AVX2 kernels take the sign trick (|w| * sign(a, w) and a madd per
 * block), enter vpdpbusd as code + 128 with 128 * sum(a) subtracted: the same integers, so the
 * same bits. Run only where cpu_has_avx_vnni(). */
matvec_rows_fn matvec_rows_vnni(int type);
/* The T <= 8 kernel of a type on this CPU (AVX-VNNI twin where matmul_wide would take one, else
 * AVX2 or AVX2 IQ), NULL without AVX2 or without a kernel for the type. src/cpu/matvec.c. */
matvec_rows_fn matvec_rows_cpu(int type);
/* IQ4_NL's T <= 8 kernel (the 32-weight block skeleton of matvec_avx2.c; matvec_rows_avx2_iq
 * returns it for TYPE_IQ4_NL) */
matvec_rows_fn matvec_rows_avx2_iq4_nl(void);

/* Float dot of n elements in the canonical per-element lane order (exact mode and the
 * F32/F16/BF16 rows): lane k % 32 gets w[k] * x[k]. AVX2 version; bits equal
 * f32_dot_canon_ref in matvec.c. */
float f32_dot_canon_avx2(const float *w, const float *x, int64_t n);
/* Attention scores of 8 positions (src/cpu/attn_avx2.c): out[j] = (sum over d in order of
 * q[d] * rows[j][d], from 0.0f) * scale, the scalar loop's bits. hd % 8 == 0. */
void attn_scores8_avx2(const float *q, const float *const *rows, int hd, float scale, float *out);
/* the same for 32 positions (four groups of eight side by side: the same bits per position) */
void attn_scores32_avx2(const float *q, const float *const *rows, int hd, float scale, float *out);
/* o[d] += w[i] * rows[i][d] for i = 0..n-1 in order, eight d at a time (the scalar V loop's bits). */
void attn_vacc_avx2(float *o, const float *const *rows, const float *w, int n, int hd);
/* Decode steps grouped by KV head: kt[d][j] = row j's value d as f32 for a block of 32 cache
 * rows of hd values (f16, or act_q8_0 blocks when int8; rows n..31: zeros); the 32 positions'
 * scores from such a block (the scalar chain per position); o[0..32) += w[i] * vb[i][0..32) in
 * i order (vb: n rows of 32 floats). hd % 32 == 0. */
void attn_kt32_avx2(const void *const *rows, int n, int int8, int hd, float *kt);
void attn_scores32t_avx2(const float *q, const float *kt, int hd, float scale, float *out);
void attn_vacc32_avx2(float *o, const float *vb, const float *w, int n);
/* Prompt passes in query tiles: the 32 scores of two query rows from one transposed block
 * (each row's chains those of attn_scores32t_avx2); o[d] += w[i] * vb[i][d] for i = 0..n-1 in
 * order, all hd d of one row or of two rows over the same V rows (vb: n rows of hd floats;
 * per d the scalar chain). hd % 32 == 0. */
void attn_scores32t2_avx2(const float *q0, const float *q1, const float *kt, int hd, float scale, float *out0,
                          float *out1);
void attn_vaccrow_avx2(float *o, const float *vb, int hd, const float *w, int n);
void attn_vaccrow2_avx2(float *o0, float *o1, const float *vb, int hd, const float *w0, const float *w1, int n);
/* A chunk's max m, e = expf(s - m) in place, l = their sum in order, then (weights) s * (1 / l):
 * the attention order's operations (src/cpu/attn_avx2.c). */
void attn_softmax_chunk_avx2(float *s, int n, int weights, float *m_out, float *l_out);
/* expf with the host libm's bits, eight at a time (src/cpu/expf_avx2.c: glibc's algorithm written
 * out, checked against the host's expf at first use). expf_avx2_mode(): 1 (the FMA build of the
 * algorithm matches the host), 0 (the plain one), -1 (neither: expf_sub_avx2 calls expf).
 * expf_sub_avx2: s[i] = expf(s[i] - m), i < n. expf_avx2_variant: y = one variant's expf(x). */
int expf_avx2_mode(void);
void expf_sub_avx2(float *s, int n, float m);
void expf_avx2_variant(const float *x, float *y, int n, int fma);
/* AVX2 twin of act_quantize_row (src/quant/act.c): the same bits for every input. */
void act_quantize_row_avx2(int act_format, const float *x, void *dst, int64_t n);
#endif
