/* Tensor-core attention: the GPU's own attention order (STRATA_CUDA_ATTN_TC: the default on
 * Hopper; f16 caches, and int8 ones (STRATA_CUDA_ATTN_TC_KV8) whose values enter the tiles as
 * f16(d * q); head_dim 64 or 128). It is NOT the CPU's order (src/model/attn_order.h): its bits differ
 * from the CPU's (docs/KERNELS.md "The tensor-core attention order", with the divergence
 * measured), but a token's bits still never depend on the pass width, the prompt's chunking or
 * the other rows of a launch, because every row (a query and one head of its KV group) is
 * computed by the same operations wherever it sits:
 *
 *   chunks j of TC_C = 128 ABSOLUTE positions [128 j, 128 j + 127]; a row at position `last`
 *   (window: first = max(0, last - window + 1), else 0) takes chunks first / 128 .. last / 128,
 *   positions outside [first, last] masked. Per chunk, in 16-position steps s = 0..7:
 *     S = mma.m16n8k16 (f32 accumulate) of q (f16, round to nearest) against the K rows, over d
 *         in steps of 16 in order, from 0;  t = S * c  (c = scale * log2(e) rounded to float, fp32)
 *     m_j = the maximum of the row's unmasked t over the chunk (order-free)
 *     p = f16(ex2.approx.ftz(t - m_j)), 0 where masked
 *     l_j = the lane's p (as f32) summed step by step (n-tile 0 then 1, column 0 then 1) from 0,
 *           then the quad's partials: l += shfl_xor(l, 1); l += shfl_xor(l, 2)
 *     u_j = mma.m16n8k16 of p against the V rows (k = the 16 positions of a step), the steps
 *           in order, from 0
 *   merge: M = max_j m_j;  b_j = ex2(m_j - M);  L = sum_j l_j b_j and O[d] = sum_j u_j[d] b_j in
 *   chunk order from 0 (__fmul_rn / __fadd_rn);  o[d] = O[d] / L (__fdiv_rn).
 *
 * A row's result depends only on its q, the chunks' K / V rows and its own mask: an MMA's output
 * row i is a function of A's row i and B alone, and a masked position enters as p = 0 against a
 * finite V value (positions past the launch's last are zero-filled), i.e. an exact zero product.
 * The widths test (tests/gpu/test_gpu_attn_tc.c) checks it across pass widths, memcmp.
 *
 * Two launches compute that order, with the same device functions for a chunk:
 *   loop  (passes of more than TC_SPLIT_T columns): a CTA of 4 warps takes 64 rows of one KV
 *         head (16 a warp) and walks their chunks twice: the maxima m_j (K tiles), then per chunk
 *         (K and V tiles) p, l_j, u_j folded at once into L and O, M being known.
 *   split (decode, verify windows: at most TC_SPLIT_T columns): a CTA per (chunk, 64 rows, KV
 *         head) writes m_j, l_j, u_j to a scratch; attn_tc_fold_kernel merges them per row.
 * Both write o and, when asked, the row's blocks of wo's activation (act_quant_block). */
#include "cuda_internal.h"
#include "cuda_common.cuh"
#include "formats.cuh"
#include "act_quant.cuh"
#include "rope_dev.cuh"
#include "norm_dev.cuh"   /* norm_row_warp: the q / k head norms (bit 512) */
#include <cuda_fp16.h>

PDL_TU_STATE(attn_tc)

#define TC_C 128                  /* positions per chunk */
#define TC_WARPS 4
#define TC_ROWS (16 * TC_WARPS)   /* rows (query, head of the group) per CTA */
#define TC_PAD 8                  /* halves of padding per tile row: ldmatrix rows stay 16-byte aligned, banks spread */
#define TC_SPLIT_T 8              /* passes of at most this many columns take the split launch */

static __device__ __forceinline__ void mma16816(float *c, const uint32_t *a, uint32_t b0, uint32_t b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
static __device__ __forceinline__ void ldsm_x4(uint32_t *r, const void *p) {
    const unsigned s = (unsigned)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(s));
}
static __device__ __forceinline__ void ldsm_x4_t(uint32_t *r, const void *p) {
    const unsigned s = (unsigned)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(s));
}
static __device__ __forceinline__ void tc_cp_wait(void) { asm volatile("cp.async.wait_all;" ::: "memory"); }
static __device__ __forceinline__ float tc_ex2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
static __device__ __forceinline__ uint32_t tc_pack(float lo, float hi) {
    return (uint32_t)__half_as_ushort(__float2half_rn(lo)) | ((uint32_t)__half_as_ushort(__float2half_rn(hi)) << 16);
}

/* the rows of a launch: row r of KV head kvh is query t = r / G, head kvh G + r % G */
typedef struct tc_args {
    const float *q;
    const void *kc, *vc;  /* f16 rows, or int8 rows of act_q8_0 blocks (kv8) */
    int kv8;
    int kv8_stage;        /* STRATA_CUDA_ATTN_TC_DEC: 1 (bit 8) the deep decode launch's int8 rows staged by cp.async;
                             2 (bit 32) the codes by tc_q8f */
    int T, n_heads, n_kv_heads, pos0;
    const int *d_pos;     /* graph: the position of column 0 on the device, else NULL */
    float c;              /* scale * log2(e), rounded to float on the host */
    int window;
    float *out;
    uint8_t *act;
    size_t arb;
    int act_fmt;
    float *part;          /* split: [T * n_heads][nchp][HD + 2] (m, l, u) */
    int nchp;
} tc_args;

static __device__ __forceinline__ int tc_first(int last, int window) {
    return window > 0 && last - window + 1 > 0 ? last - window + 1 : 0;
}

/* STRATA_CUDA_ATTN_TC_DEC bit 32 (tc_q8_block's CVT): a code q to float without I2F (a
 * conversion-pipe instruction, an eighth of the FP32 rate on sm_90): the byte q + 128 (the code
 * xor 0x80) as the low mantissa byte of 2^23 (one PRMT), minus 2^23 + 128, which is exact (both
 * in [2^23, 2^24), the difference an integer below 2^8): the same float q, so the same products
 * and halves. x: the codes xor 0x80808080; i: the byte. */
static __device__ __forceinline__ float tc_q8f(uint32_t x, int i) {
    return __fsub_rn(__uint_as_float(__byte_perm(x, 0x4B000000u, 0x7540u | (unsigned)i)), 8388736.0f);
}
/* An int8 cache's block of 32 values (act_q8_0 words: d, then the codes four a word) into 32
 * halves of a tile row: f16(d * (float)q), the product rounded to float (the CPU's
 * q8_to_f32_row value), then to f16 (nearest even): the values the order's MMAs take from an
 * int8 cache, as an f16 cache gives them its stored halves. blk: global or shared memory.
 * CVT: the codes to float by tc_q8f instead of I2F (the same floats). */
template <int CVT = 0>
static __device__ __forceinline__ void tc_q8_block(__half *dst, const uint32_t *blk) {
    const float d = __uint_as_float(blk[0]);
#pragma unroll
    for (int w = 0; w < 8; w += 2) {
        const uint32_t c0 = blk[1 + w], c1 = blk[2 + w];
        float v[8];
#pragma unroll
        for (int i = 0; i < 4; i++) {
            if constexpr (CVT != 0) {
                v[i] = __fmul_rn(d, tc_q8f(c0 ^ 0x80808080u, i));
                v[4 + i] = __fmul_rn(d, tc_q8f(c1 ^ 0x80808080u, i));
            } else {
                v[i] = __fmul_rn(d, (float)(int8_t)(c0 >> (8 * i)));
                v[4 + i] = __fmul_rn(d, (float)(int8_t)(c1 >> (8 * i)));
            }
        }
        *(uint4 *)(dst + 4 * w) = make_uint4(tc_pack(v[0], v[1]), tc_pack(v[2], v[3]), tc_pack(v[4], v[5]), tc_pack(v[6], v[7]));
    }
}
/* The deep decode launch's int8 rows, staged (STRATA_CUDA_ATTN_TC_DEC bit 8): a row's act_q8_0 words
 * are copied (cp.async, 4 bytes at a time, every copy of the CTA in flight at once) into the END
 * of its tile row (ROFF bytes in), then converted in place, still before the dependent-launch
 * wait, blocks in order, by one thread: block b's halves [64 b, 64 b + 64)
 * never reach the words of a later block (ROFF + 36 b' >= 64 (b + 1) for b' > b, as ROFF =
 * 0.875 HD + 16 >= 28 (NB - 1)), and each block's nine words are read before any is written. */
template <int HD>
struct tc_q8_row {
    static constexpr int NB = HD / 32;
    static constexpr int ROFF = 2 * (HD + TC_PAD) - NB * 36;   /* bytes */
    static_assert(ROFF % 4 == 0 && ROFF >= 28 * (NB - 1), "the staged words fit behind the converted halves");
};
static __device__ __forceinline__ void tc_cp4(void *dst_smem, const void *src) {
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst_smem);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(d), "l"(src) : "memory");
}
template <int HD, int CVT = 0>
static __device__ __forceinline__ void tc_q8_row_convert(__half *row) {
    const uint32_t *raw = (const uint32_t *)((const uint8_t *)row + tc_q8_row<HD>::ROFF);
#pragma unroll
    for (int b = 0; b < tc_q8_row<HD>::NB; b++) {
        uint32_t w[9];
#pragma unroll
        for (int i = 0; i < 9; i++) w[i] = raw[9 * b + i];
        asm volatile("" ::: "memory");   /* the block's words read before its halves are written */
        tc_q8_block<CVT>(row + 32 * b, w);
        asm volatile("" ::: "memory");
    }
}
static __device__ __forceinline__ void tc_zero32(__half *dst) {
#pragma unroll
    for (int i = 0; i < 4; i++) *(uint4 *)(dst + 8 * i) = make_uint4(0, 0, 0, 0);
}

/* a chunk's K or V rows of one KV head into a tile [TC_C][HD + TC_PAD] (halves); positions past
 * pmax zero-filled. f16 rows by cp.async (tc_cp_wait before use), int8 rows (kv8) converted by
 * tc_q8_block (kv8 & 2: the codes by tc_q8f, STRATA_CUDA_ATTN_TC_DEC bit 32). No barrier. */
template <int HD>
static __device__ __forceinline__ void tc_tile_load(__half *tile, const void *cache, int kv8, int j, int pmax, int kvh,
                                                    int n_kv_heads) {
    if (kv8) {
        constexpr int NB = HD / 32, W = NB * KV_Q8_WORDS;   /* blocks, words a row */
        const uint32_t *cw = (const uint32_t *)cache;
        for (int i = threadIdx.x; i < TC_C * NB; i += TC_WARPS * 32) {
            const int r = i / NB, b = i % NB, p = j * TC_C + r;
            __half *dst = tile + r * (HD + TC_PAD) + b * 32;
            if (p > pmax) tc_zero32(dst);
            else if (kv8 & 2) tc_q8_block<1>(dst, cw + ((size_t)p * n_kv_heads + kvh) * W + b * KV_Q8_WORDS);
            else tc_q8_block(dst, cw + ((size_t)p * n_kv_heads + kvh) * W + b * KV_Q8_WORDS);
        }
        return;
    }
    constexpr int PR = HD / 8, NT = TC_WARPS * 32;   /* 16-byte pieces a row, threads */
    static_assert(TC_C * PR % NT == 0, "tc_tile_load: whole rounds");
    const uint16_t *ch = (const uint16_t *)cache;
    /* one run of copies, no branch: a position past pmax zero-filled by the source size (ptxas puts
     * three never-executed LDS before each run of LDGSTS; a branch around each copy made every copy
     * a run of its own) */
#pragma unroll
    for (int i0 = 0; i0 < TC_C * PR; i0 += NT) {
        const int i = i0 + threadIdx.x, r = i / PR, pc = i % PR, p = j * TC_C + r;
        const bool ok = p <= pmax;
        cp_async16z(tile + r * (HD + TC_PAD) + pc * 8, ch + ((size_t)(ok ? p : 0) * n_kv_heads + kvh) * HD + pc * 8,
                 ok ? 16u : 0u);
    }
}

/* S of one 16-position step (positions j C + 16 s + 0..15) for the warp's 16 rows: acc[n][0..1]
 * row g, positions 8 n + 2 tig + {0, 1}; acc[n][2..3] the same for row g + 8 */
template <int HD>
static __device__ __forceinline__ void tc_scores(float (*acc)[4], const uint32_t (*qa)[4], const __half *kt, int s,
                                                 int lane) {
    const int mi = lane >> 3, rr = lane & 7;
#pragma unroll
    for (int n = 0; n < 2; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) acc[n][e] = 0.0f;
    const __half *kr = kt + (s * 16 + rr + ((mi & 2) ? 8 : 0)) * (HD + TC_PAD) + ((mi & 1) ? 8 : 0);
#pragma unroll
    for (int ks = 0; ks < HD / 16; ks++) {
        uint32_t b[4];
        ldsm_x4(b, kr + ks * 16);
        mma16816(acc[0], qa[ks], b[0], b[1]);
        mma16816(acc[1], qa[ks], b[2], b[3]);
    }
}

/* a value of the lanes 4 g .. 4 g + 3 (a row's quad) combined: max (order-free), and the sum in
 * the order's tree (l += shfl_xor(l, 1); l += shfl_xor(l, 2): every lane gets the same bits) */
static __device__ __forceinline__ float tc_quad_max(float v) {
    v = fmaxf(v, __shfl_xor_sync(FULL_MASK, v, 1));
    return fmaxf(v, __shfl_xor_sync(FULL_MASK, v, 2));
}
static __device__ __forceinline__ float tc_quad_sum(float v) {
    v = __fadd_rn(v, __shfl_xor_sync(FULL_MASK, v, 1));
    return __fadd_rn(v, __shfl_xor_sync(FULL_MASK, v, 2));
}

/* is position p unmasked for the row [f, la] (la < 0: no row)? */
static __device__ __forceinline__ bool tc_in(int p, int f, int la) { return la >= 0 && p >= f && p <= la; }

/* pass 1: the chunk's maxima of the thread's rows (g: mx[0], g + 8: mx[1]), quad-reduced;
 * -inf for a row with no unmasked position in the chunk */
template <int HD>
static __device__ __forceinline__ void tc_chunk_max(const uint32_t (*qa)[4], const __half *kt, int j, const int *f,
                                                    const int *la, float c, float *mx, int lane) {
    const int tig = lane & 3;
    float m0 = -INFINITY, m1 = -INFINITY;
#pragma unroll 2
    for (int s = 0; s < TC_C / 16; s++) {
        float acc[2][4];
        tc_scores<HD>(acc, qa, kt, s, lane);
#pragma unroll
        for (int n = 0; n < 2; n++)
#pragma unroll
            for (int e = 0; e < 2; e++) {
                const int p = j * TC_C + s * 16 + n * 8 + 2 * tig + e;
                if (tc_in(p, f[0], la[0])) m0 = fmaxf(m0, __fmul_rn(acc[n][e], c));
                if (tc_in(p, f[1], la[1])) m1 = fmaxf(m1, __fmul_rn(acc[n][2 + e], c));
            }
    }
    mx[0] = tc_quad_max(m0); mx[1] = tc_quad_max(m1);
}

/* pass 2: p, l_j (quad-reduced, l[0] row g, l[1] row g + 8) and u_j (u[n][0..1] row g, d = 8 n +
 * 2 tig + {0, 1}; u[n][2..3] row g + 8) of a chunk, given the rows' maxima m (-inf: no row) */
template <int HD>
static __device__ __forceinline__ void tc_chunk_pv(const uint32_t (*qa)[4], const __half *kt, const __half *vt, int j,
                                                   const int *f, const int *la, float c, const float *m,
                                                   float (*u)[4], float *l, int lane) {
    const int tig = lane & 3, mi = lane >> 3, rr = lane & 7;
#pragma unroll
    for (int n = 0; n < HD / 8; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) u[n][e] = 0.0f;
    float l0 = 0.0f, l1 = 0.0f;
    for (int s = 0; s < TC_C / 16; s++) {
        float acc[2][4];
        tc_scores<HD>(acc, qa, kt, s, lane);
#pragma unroll
        for (int n = 0; n < 2; n++)
#pragma unroll
            for (int e = 0; e < 2; e++) {
                const int p = j * TC_C + s * 16 + n * 8 + 2 * tig + e;
                float p0 = tc_in(p, f[0], la[0]) ? tc_ex2(__fsub_rn(__fmul_rn(acc[n][e], c), m[0])) : 0.0f;
                float p1 = tc_in(p, f[1], la[1]) ? tc_ex2(__fsub_rn(__fmul_rn(acc[n][2 + e], c), m[1])) : 0.0f;
                p0 = __half2float(__float2half_rn(p0));
                p1 = __half2float(__float2half_rn(p1));
                l0 = __fadd_rn(l0, p0);
                l1 = __fadd_rn(l1, p1);
                acc[n][e] = p0; acc[n][2 + e] = p1;
            }
        uint32_t pa[4];   /* the A fragment of p: (row g, k 2 tig), (g + 8, 2 tig), (g, 8 + 2 tig), (g + 8, 8 + 2 tig) */
        pa[0] = tc_pack(acc[0][0], acc[0][1]);
        pa[1] = tc_pack(acc[0][2], acc[0][3]);
        pa[2] = tc_pack(acc[1][0], acc[1][1]);
        pa[3] = tc_pack(acc[1][2], acc[1][3]);
        const __half *vr = vt + (s * 16 + rr + ((mi & 1) ? 8 : 0)) * (HD + TC_PAD) + ((mi & 2) ? 8 : 0);
#pragma unroll
        for (int np = 0; np < HD / 16; np++) {
            uint32_t b[4];
            ldsm_x4_t(b, vr + np * 16);
            mma16816(u[2 * np], pa, b[0], b[1]);
            mma16816(u[2 * np + 1], pa, b[2], b[3]);
        }
    }
    l[0] = tc_quad_sum(l0); l[1] = tc_quad_sum(l1);
}

/* the thread's rows (g, g + 8 of the warp's 16) and their q fragments */
template <int HD>
static __device__ __forceinline__ void tc_rows(const tc_args &a, int kvh, int rbase, int P0, int *rt, int *rh, int *f,
                                               int *la, uint32_t (*qa)[4], int lane) {
    const int G = a.n_heads / a.n_kv_heads, g = lane >> 2, tig = lane & 3;
    const float *qr[2];
    for (int i = 0; i < 2; i++) {
        const int r = rbase + g + 8 * i;
        if (r < a.T * G) {
            rt[i] = r / G; rh[i] = kvh * G + r % G;
            la[i] = P0 + rt[i];
            f[i] = tc_first(la[i], a.window);
            qr[i] = a.q + ((size_t)rt[i] * a.n_heads + rh[i]) * HD;
        } else {
            rt[i] = -1; rh[i] = 0; la[i] = -1; f[i] = 0; qr[i] = NULL;
        }
    }
#pragma unroll
    for (int ks = 0; ks < HD / 16; ks++)
#pragma unroll
        for (int k = 0; k < 4; k++) {   /* (g, 2 tig), (g + 8, 2 tig), (g, 8 + 2 tig), (g + 8, 8 + 2 tig) */
            const float *qrow = qr[k & 1];
            const int d = ks * 16 + ((k & 2) ? 8 : 0) + 2 * tig;
            qa[ks][k] = qrow ? tc_pack(qrow[d], qrow[d + 1]) : 0u;
        }
}

/* the blocks of wo's activation rows of the rows [r0, r1) of KV head kvh (o already in out) */
template <int HD>
static __device__ __forceinline__ void tc_act(const tc_args &a, int kvh, int r0, int r1) {
    const int G = a.n_heads / a.n_kv_heads;
    const int B = a.act_fmt == ACT_Q8_2 ? afmt<ACT_Q8_2>::blck : afmt<ACT_Q8_0>::blck;
    const size_t bb = act_block_bytes_dev(a.act_fmt);
    const int per = HD / B, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    for (int i = warp; i < (r1 - r0) * per; i += nw) {
        const int r = r0 + i / per, jb = i % per, t = r / G, h = kvh * G + r % G;
        const float *orow = a.out + ((size_t)t * a.n_heads + h) * HD;
        const size_t bi = ((size_t)h * HD) / B + jb;
        if (B == 32) act_quant_block<32>(orow + jb * B, a.act + (size_t)t * a.arb + bi * bb, a.act_fmt);
        else act_quant_block<64>(orow + jb * B, a.act + (size_t)t * a.arb + bi * bb, a.act_fmt);
    }
}

/* STRATA_CUDA_ATTN_TC_DEC bit 1024: the one-launch decode's wo activation as act_q8_K (256-value
 * blocks: the host asks for it only where the CTA's G heads hold whole blocks, G HD % 256 == 0): a
 * warp a block, act_quantize_kernel's act_quant_block<256> on the o values the CTA just wrote (one
 * column) */
static __device__ __forceinline__ void tc_act_k(const tc_args &a, int kvh, int G, int HD) {
    const int per = G * HD / 256, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    for (int i = warp; i < per; i += nw) {
        const size_t bi = (size_t)kvh * per + i;
        act_quant_block<256>(a.out + bi * 256, a.act + bi * sizeof(act_q8_K), ACT_Q8_K);
    }
}

/* the split launch's merge: a CTA (HD threads) per row (t, h), thread d. (The merge by the last
 * of a row group's chunk CTAs instead, without this launch, measured slower: a thread per row
 * walking the partials' chunks with L2 latency per step; docs/KERNELS.md "Variants deleted".)
 * STAGE 0: each thread walks the chunks, M first, then L and O, a load from L2 per step; STAGE 1
 * (STRATA_CUDA_ATTN_TC_DEC bit 4): the same operations in the same order with the loads issued
 * at once: the chunks' m and l into shared memory by all threads, a thread's first TC_FOLD_U
 * u[d] into registers before anything waits on them, M by warp reductions (a max, order-free),
 * the b_j by all threads, then each thread's L and O chains over the chunks in order. STAGE 2
 * (bit 16, default): STAGE 1 with the first 64 chunks' u (depth 8,192) in flight at once, so a
 * row of 33 chunks (depth 4,096) waits on one batch instead of three (measured +0.5-4 %, 2026-12-04
 * 04:24 session call 2; the same operations in the same order). */
#define TC_FOLD_MAXC 1024   /* chunks staged (131,072 positions); a longer row walks */
#define TC_FOLD_U 16        /* u values a thread loads at once (STAGE 1) */
#define TC_FOLD_U2 64       /* STAGE 2 (bit 16): the first 64 chunks' u (depth 8,192) at once */
template <int HD, int STAGE>
__global__ void __launch_bounds__(HD) attn_tc_fold_kernel(tc_args a) {
    constexpr int U = STAGE == 2 ? TC_FOLD_U2 : TC_FOLD_U;
    __shared__ float sm[STAGE ? TC_FOLD_MAXC : 1], sl[STAGE ? TC_FOLD_MAXC : 1], sb[STAGE ? TC_FOLD_MAXC : 1];
    PDL_WAIT();
    const int row = blockIdx.x, t = row / a.n_heads, h = row % a.n_heads, d = threadIdx.x;
    const int P0 = a.d_pos ? a.d_pos[0] : a.pos0, la = P0 + t, j0 = tc_first(la, a.window) / TC_C, j1 = la / TC_C;
    const int n = j1 - j0 + 1;
    const float *pr = a.part + ((size_t)row * a.nchp + j0) * (HD + 2);   /* chunk j0's m, l, u */
    float L = 0.0f, O = 0.0f;
    if (!STAGE || n > TC_FOLD_MAXC) {
        float M = -INFINITY;
        for (int i = 0; i < n; i++) M = fmaxf(M, pr[(size_t)i * (HD + 2)]);
        for (int i = 0; i < n; i++) {
            const float *pj = pr + (size_t)i * (HD + 2);
            const float b = tc_ex2(__fsub_rn(pj[0], M));
            L = __fadd_rn(L, __fmul_rn(pj[1], b));
            O = __fadd_rn(O, __fmul_rn(pj[2 + d], b));
        }
    } else {
        float u[U];
#pragma unroll
        for (int i = 0; i < U; i++) u[i] = i < n ? pr[(size_t)i * (HD + 2) + 2 + d] : 0.0f;
        for (int i = d; i < n; i += HD) { sm[i] = pr[(size_t)i * (HD + 2)]; sl[i] = pr[(size_t)i * (HD + 2) + 1]; }
        __syncthreads();
        float M = -INFINITY;
        for (int i = d & 31; i < n; i += 32) M = fmaxf(M, sm[i]);
        for (int o = 16; o; o >>= 1) M = fmaxf(M, __shfl_xor_sync(FULL_MASK, M, o));
        for (int i = d; i < n; i += HD) sb[i] = tc_ex2(__fsub_rn(sm[i], M));
        __syncthreads();
#pragma unroll 8
        for (int i = 0; i < n; i++) L = __fadd_rn(L, __fmul_rn(sl[i], sb[i]));
#pragma unroll
        for (int i = 0; i < U; i++)
            if (i < n) O = __fadd_rn(O, __fmul_rn(u[i], sb[i]));
        for (int i0 = U; i0 < n; i0 += U) {
#pragma unroll
            for (int i = 0; i < U; i++) u[i] = i0 + i < n ? pr[(size_t)(i0 + i) * (HD + 2) + 2 + d] : 0.0f;
#pragma unroll
            for (int i = 0; i < U; i++)
                if (i0 + i < n) O = __fadd_rn(O, __fmul_rn(u[i], sb[i0 + i]));
        }
    }
    a.out[((size_t)t * a.n_heads + h) * HD + d] = __fdiv_rn(O, L);
    if (a.act) {
        __syncthreads();
        const int B = a.act_fmt == ACT_Q8_2 ? afmt<ACT_Q8_2>::blck : afmt<ACT_Q8_0>::blck;
        const size_t bb = act_block_bytes_dev(a.act_fmt);
        const float *orow = a.out + ((size_t)t * a.n_heads + h) * HD;
        for (int jb = threadIdx.x >> 5; jb < HD / B; jb += HD / 32) {
            const size_t bi = ((size_t)h * HD) / B + jb;
            if (B == 32) act_quant_block<32>(orow + jb * B, a.act + (size_t)t * a.arb + bi * bb, a.act_fmt);
            else act_quant_block<64>(orow + jb * B, a.act + (size_t)t * a.arb + bi * bb, a.act_fmt);
        }
    }
}

/* the merge launch of T rows' partials (staged: STRATA_CUDA_ATTN_TC_DEC's bits 4 and 16, STAGE 1 / 2) */
template <int HD>
static void tc_fold_launch(const tc_args &a, int staged, cudaStream_t st) {
    if (staged & 16) klaunch(attn_tc_fold_kernel<HD, 2>, dim3((unsigned)(a.T * a.n_heads)), HD, 0, st, a);
    else if (staged & 4) klaunch(attn_tc_fold_kernel<HD, 1>, dim3((unsigned)(a.T * a.n_heads)), HD, 0, st, a);
    else klaunch(attn_tc_fold_kernel<HD, 0>, dim3((unsigned)(a.T * a.n_heads)), HD, 0, st, a);
}

/* SPLIT 0: the loop launch (grid: row groups of 64, KV heads); 1: the split launch (grid: chunks,
 * row groups, KV heads). Dynamic shared memory: the K and V tiles, then (loop) the maxima
 * [chunks of the CTA][64 rows]. */
template <int HD, int SPLIT>
__global__ void __launch_bounds__(TC_WARPS * 32) attn_tc_kernel(tc_args a) {
    PDL_WAIT();
    extern __shared__ __align__(16) uint8_t tc_dyn[];
    __half *kt = (__half *)tc_dyn, *vt = kt + TC_C * (HD + TC_PAD);
    float *ms = (float *)(vt + TC_C * (HD + TC_PAD));
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, tig = lane & 3, g = lane >> 2;
    const int G = a.n_heads / a.n_kv_heads, nrows = a.T * G;
    const int rg = SPLIT ? blockIdx.y : blockIdx.x, kvh = SPLIT ? blockIdx.z : blockIdx.y;
    const int P0 = a.d_pos ? a.d_pos[0] : a.pos0, pmax = P0 + a.T - 1;
    const int r0 = rg * TC_ROWS, r1 = r0 + TC_ROWS < nrows ? r0 + TC_ROWS : nrows;
    /* the CTA's chunks: from its first row's first position to its last row's position */
    const int jlo = tc_first(P0 + r0 / G, a.window) / TC_C, jhi = (P0 + (r1 - 1) / G) / TC_C;
    if (SPLIT && ((int)blockIdx.x < jlo || (int)blockIdx.x > jhi)) return;
    int rt[2], rh[2], f[2], la[2];
    uint32_t qa[HD / 16][4];
    tc_rows<HD>(a, kvh, r0 + warp * 16, P0, rt, rh, f, la, qa, lane);
    /* the warp's chunk range (none: rows past the launch's) */
    int wlo = 1 << 30, whi = -1;
    for (int i = 0; i < 2; i++)
        if (la[i] >= 0) { wlo = min(wlo, f[i] / TC_C); whi = max(whi, la[i] / TC_C); }
    for (int o = 4; o <= 16; o <<= 1) {
        wlo = min(wlo, __shfl_xor_sync(FULL_MASK, wlo, o));
        whi = max(whi, __shfl_xor_sync(FULL_MASK, whi, o));
    }
    const int j0 = SPLIT ? blockIdx.x : jlo, j1 = SPLIT ? blockIdx.x : jhi;
    const int lmode = a.kv8 ? 1 | (a.kv8_stage & 2) : 0;   /* tc_tile_load: f16, or int8 (2: by tc_q8f) */
    /* pass 1: the maxima */
    for (int j = j0; j <= j1; j++) {
        tc_tile_load<HD>(kt, a.kc, lmode, j, pmax, kvh, a.n_kv_heads);
        tc_cp_wait();
        __syncthreads();
        float mx[2] = { -INFINITY, -INFINITY };
        if (j >= wlo && j <= whi) tc_chunk_max<HD>(qa, kt, j, f, la, a.c, mx, lane);
        if (tig == 0) {
            ms[(j - j0) * TC_ROWS + warp * 16 + g] = mx[0];
            ms[(j - j0) * TC_ROWS + warp * 16 + g + 8] = mx[1];
        }
        __syncthreads();
    }
    /* the rows' M (loop) */
    float M[2] = { -INFINITY, -INFINITY };
    if (!SPLIT)
        for (int i = 0; i < 2; i++)
            if (la[i] >= 0)
                for (int j = f[i] / TC_C; j <= la[i] / TC_C; j++) M[i] = fmaxf(M[i], ms[(j - j0) * TC_ROWS + warp * 16 + g + 8 * i]);
    float O[HD / 8][4], L[2] = { 0.0f, 0.0f };
#pragma unroll
    for (int n = 0; n < HD / 8; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) O[n][e] = 0.0f;
    /* pass 2 */
    for (int j = j0; j <= j1; j++) {
        tc_tile_load<HD>(kt, a.kc, lmode, j, pmax, kvh, a.n_kv_heads);
        tc_tile_load<HD>(vt, a.vc, lmode, j, pmax, kvh, a.n_kv_heads);
        tc_cp_wait();
        __syncthreads();
        if (j >= wlo && j <= whi) {
            float m[2], l[2], u[HD / 8][4];
            bool in[2];
            for (int i = 0; i < 2; i++) {
                in[i] = la[i] >= 0 && j >= f[i] / TC_C && j <= la[i] / TC_C;
                m[i] = in[i] ? ms[(j - j0) * TC_ROWS + warp * 16 + g + 8 * i] : -INFINITY;
            }
            const int lm[2] = { in[0] ? la[0] : -1, in[1] ? la[1] : -1 };
            tc_chunk_pv<HD>(qa, kt, vt, j, f, lm, a.c, m, u, l, lane);
            if (SPLIT) {
                for (int i = 0; i < 2; i++) {
                    if (!in[i]) continue;
                    float *pr = a.part + (((size_t)rt[i] * a.n_heads + rh[i]) * a.nchp + j) * (HD + 2);
                    if (tig == 0) { pr[0] = m[i]; pr[1] = l[i]; }
#pragma unroll
                    for (int n = 0; n < HD / 8; n++) {
                        pr[2 + n * 8 + 2 * tig] = u[n][2 * i];
                        pr[2 + n * 8 + 2 * tig + 1] = u[n][2 * i + 1];
                    }
                }
            } else {
#pragma unroll
                for (int i = 0; i < 2; i++) {
                    if (!in[i]) continue;
                    const float b = tc_ex2(__fsub_rn(m[i], M[i]));
                    L[i] = __fadd_rn(L[i], __fmul_rn(l[i], b));
#pragma unroll
                    for (int n = 0; n < HD / 8; n++) {
                        O[n][2 * i] = __fadd_rn(O[n][2 * i], __fmul_rn(u[n][2 * i], b));
                        O[n][2 * i + 1] = __fadd_rn(O[n][2 * i + 1], __fmul_rn(u[n][2 * i + 1], b));
                    }
                }
            }
        }
        __syncthreads();
    }
    if constexpr (SPLIT) return;
    else {
    for (int i = 0; i < 2; i++) {
        if (la[i] < 0) continue;
        float *orow = a.out + ((size_t)rt[i] * a.n_heads + rh[i]) * HD;
#pragma unroll
        for (int n = 0; n < HD / 8; n++) {
            orow[n * 8 + 2 * tig] = __fdiv_rn(O[n][2 * i], L[i]);
            orow[n * 8 + 2 * tig + 1] = __fdiv_rn(O[n][2 * i + 1], L[i]);
        }
    }
    if (a.act) {
        __syncthreads();
        tc_act<HD>(a, kvh, r0, r1);
    }
    }
}


/* ---- the decode launch (STRATA_CUDA_ATTN_TC_DEC bit 1; T = 1, a launch whose chunks are
 * at most TC_DEC_NCH, i.e. positions below 256: the graph class of a short context) ----
 * One CTA per KV head walks the row's (at most two) chunks and merges them itself, with the RoPE
 * of q and the position's K / V rows folded in: one launch where the split path has three
 * (rope_qk_store, the split launch, the fold). The same order, so the same bits:
 *   - the cache rows before the position are copied into the tiles BEFORE the dependent-launch
 *     wait (they were written by launches that completed before the one ahead of this: at most
 *     two grids are in flight, cuda_common.cuh), so the copies overlap the kernel ahead; after
 *     the wait q (the G heads) and k are rotated by rope_pair as rope_qk_store_kernel does, k and
 *     v rounded to f16 into the tile row of the position and stored in the cache (this CTA is
 *     the only reader of its KV head's rows in the launch);
 *   - a chunk's 16-position steps are shared by the four warps: each computes the scores t of
 *     its steps (the same MMAs, so the same values) into shared memory; every warp takes the
 *     row maxima m_j over all of them (order-free) and rounds p of its own steps to f16, stored
 *     in the MMA's A-fragment layout; then warp w runs the PV MMAs of the steps in order for its
 *     quarter of d (each output's chain over the steps is the split path's), and every warp sums
 *     its lanes' p in the split path's order into l_j (the same values in the same order);
 *   - steps with no unmasked position are skipped: their p are 0 against finite V (exact zero
 *     products: u and l, never -0.0, do not change), and they hold no maximum;
 *   - the merge: M = max m_j, then L = sum l_j b_j and O = sum u_j b_j in chunk order from 0,
 *     o = O / L: attn_tc_fold_kernel's operations. */
#define TC_DEC_NCH 2

typedef struct tc_rope {
    const float *k, *v;   /* the column's k and v rows (all KV heads), not rotated */
    const float *cs;      /* [n_ctx][n_rot / 2][cos, sin] (q's and k's: the same table) */
    int n_rot, neox;
    /* STRATA_CUDA_ATTN_TC_DEC bit 512: the q / k head norms' weights (NULL: q and k come normed, or
     * have no norm) and eps; the launch then norms the group's q heads and its k row itself */
    const float *qnw, *knw;
    float eps;
} tc_rope;

/* KV: 0 the cache kind read from a.kv8 (one instantiation for both kinds: its f16 kernel carries
 * the int8 paths, 7,096 SASS instructions and 72 registers at head_dim 64 where the f16 code
 * alone is 4,128 and 64); 1 f16, 2 int8 with the codes by tc_q8f (bit 32) and 3 int8 by I2F,
 * compiled in (STRATA_CUDA_ATTN_TC_DEC bit 256) */
template <int HD, int SPLIT, int KV = 0>
__global__ void __launch_bounds__(TC_WARPS * 32) attn_tc_dec_kernel(tc_args a, tc_rope rp) {
    const int kv8 = KV == 0 ? a.kv8 : KV >= 2;
    const int q8f = KV == 0 ? (a.kv8_stage & 2) : KV == 2;   /* an int8 cache's codes by tc_q8f (bit 32) */
    extern __shared__ __align__(16) uint8_t tc_dyn[];
    constexpr int TR = TC_C * (HD + TC_PAD);   /* halves a tile */
    constexpr int NPW = HD / 16 / TC_WARPS;    /* 16-wide d slices of V a warp */
    constexpr int NCH = SPLIT ? 1 : TC_DEC_NCH;   /* chunks a CTA */
    __half *tiles = (__half *)tc_dyn;          /* chunk c: K at 2 c TR, V at (2 c + 1) TR */
    float *sc = (float *)(tiles + 2 * NCH * TR);   /* [step][8 values][lane] */
    uint4 *pf = (uint4 *)(sc + (TC_C / 16) * 8 * 32);      /* [step][lane]: p's A fragment */
    float *qs = (float *)(pf + (TC_C / 16) * 32);           /* [G][HD]: q rotated */
    uint16_t *kl = (uint16_t *)(qs + 16 * HD), *vl = kl + HD;   /* the position's rows (f16; int8: 2 W8 words from kl) */
    float *kn = (float *)(vl + HD);                            /* bit 512: the position's k row normed */
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, tig = lane & 3, g = lane >> 2;
    const int G = a.n_heads / a.n_kv_heads, kvh = SPLIT ? blockIdx.y : blockIdx.x;
    const int P0 = a.d_pos ? a.d_pos[0] : a.pos0, f0 = tc_first(P0, a.window);
    const int jf = f0 / TC_C, jl = P0 / TC_C;   /* the row's chunks */
    /* SPLIT: the CTA's one chunk (blockIdx.x; none past the row's: exit after the wait) */
    const int j0 = SPLIT ? (int)blockIdx.x : jf, j1 = SPLIT ? (int)blockIdx.x : jl;
    const bool idle = SPLIT && (j0 < jf || j0 > jl);
    uint16_t *kc = (uint16_t *)a.kc, *vc = (uint16_t *)a.vc;
    constexpr int NB = HD / 32, W8 = NB * KV_Q8_WORDS;   /* an int8 row: blocks, words */
    /* the tiles' rows before the position (complete before the launch ahead of this one): f16
     * rows by cp.async, int8 rows converted (tc_q8_block) */
    constexpr int PR = HD / 8;
    for (int j = j0; j <= j1 && !idle; j++) {
        __half *kt = tiles + 2 * (j - j0) * TR, *vt = kt + TR;
        if (kv8 && (a.kv8_stage & 1)) {   /* the words staged (tc_q8_row), all copies in flight at once */
            for (int i = threadIdx.x; i < TC_C * W8; i += TC_WARPS * 32) {
                const int r = i / W8, w = i % W8, p = j * TC_C + r;
                if (p >= P0) continue;
                const size_t off = ((size_t)p * a.n_kv_heads + kvh) * W8 + w;
                const int o = r * (HD + TC_PAD) * 2 + tc_q8_row<HD>::ROFF + 4 * w;
                tc_cp4((uint8_t *)kt + o, (const uint32_t *)a.kc + off);
                tc_cp4((uint8_t *)vt + o, (const uint32_t *)a.vc + off);
            }
            for (int i = threadIdx.x; i < TC_C * PR; i += TC_WARPS * 32) {
                const int r = i / PR, pc = i % PR, p = j * TC_C + r;
                if (p > P0) {
                    *(uint4 *)(kt + r * (HD + TC_PAD) + pc * 8) = make_uint4(0, 0, 0, 0);
                    *(uint4 *)(vt + r * (HD + TC_PAD) + pc * 8) = make_uint4(0, 0, 0, 0);
                }
            }
            continue;
        }
        if (kv8) {   /* loaded and converted block by block */
            for (int i = threadIdx.x; i < TC_C * NB; i += TC_WARPS * 32) {
                const int r = i / NB, b = i % NB, p = j * TC_C + r;
                const size_t off = ((size_t)p * a.n_kv_heads + kvh) * W8 + b * KV_Q8_WORDS;
                __half *dk = kt + r * (HD + TC_PAD) + b * 32, *dv = vt + r * (HD + TC_PAD) + b * 32;
                if (p < P0) {
                    if (q8f) { tc_q8_block<1>(dk, (const uint32_t *)a.kc + off); tc_q8_block<1>(dv, (const uint32_t *)a.vc + off); }
                    else { tc_q8_block(dk, (const uint32_t *)a.kc + off); tc_q8_block(dv, (const uint32_t *)a.vc + off); }
                }
                else if (p > P0) { tc_zero32(dk); tc_zero32(dv); }
            }
        } else
        for (int i = threadIdx.x; i < TC_C * PR; i += TC_WARPS * 32) {
            const int r = i / PR, pc = i % PR, p = j * TC_C + r;
            const size_t off = ((size_t)p * a.n_kv_heads + kvh) * HD + pc * 8;
            __half *dk = kt + r * (HD + TC_PAD) + pc * 8, *dv = vt + r * (HD + TC_PAD) + pc * 8;
            if (p < P0) { cp_async16z(dk, kc + off, 16u); cp_async16z(dv, vc + off, 16u); }
            else if (p > P0) { *(uint4 *)dk = make_uint4(0, 0, 0, 0); *(uint4 *)dv = make_uint4(0, 0, 0, 0); }
        }
    }
    if (kv8 && (a.kv8_stage & 1) && !idle) {   /* the staged int8 rows, converted in place (a thread a row), still before the wait */
        tc_cp_wait();
        __syncthreads();
        for (int j = j0; j <= j1; j++) {
            __half *kt = tiles + 2 * (j - j0) * TR, *vt = kt + TR;
            for (int r = threadIdx.x; r < TC_C && j * TC_C + r < P0; r += TC_WARPS * 32) {
                if (q8f) {
                    tc_q8_row_convert<HD, 1>(kt + r * (HD + TC_PAD));
                    tc_q8_row_convert<HD, 1>(vt + r * (HD + TC_PAD));
                } else {
                    tc_q8_row_convert<HD>(kt + r * (HD + TC_PAD));
                    tc_q8_row_convert<HD>(vt + r * (HD + TC_PAD));
                }
            }
        }
    }
    PDL_WAIT();
    if (idle) return;
    /* RoPE: q of the group's G heads into qs, k and v of the KV head into kl / vl (f16; SPLIT:
     * only the CTA of the position's chunk needs them) */
    const bool holds = j1 == jl;
    const float *qg = a.q + (size_t)kvh * G * HD, *ks = rp.k + (size_t)kvh * HD;
    if (rp.qnw) {   /* bit 512: rmsnorm2_warp_kernel's rows here (norm_row_warp), q heads into qs, k into kn */
        for (int r = warp; r <= G; r += TC_WARPS) {
            if (r < G) norm_row_warp(qg + (size_t)r * HD, rp.qnw, NULL, qs + r * HD, HD, rp.eps, lane);
            else if (holds) norm_row_warp(ks, rp.knw, NULL, kn, HD, rp.eps, lane);
        }
        __syncthreads();
        qg = qs;   /* RoPE in place: each thread reads and writes only its own pair */
        ks = kn;
    }
    {
        const int half = rp.n_rot / 2;
        const float *cs = rp.cs + (size_t)P0 * half * 2;
        const float *vs = rp.v + (size_t)kvh * HD;
        for (int idx = threadIdx.x; idx < G * half; idx += TC_WARPS * 32) {
            const int h = idx / half, i = idx % half;
            float o1, o2;
            int ia, ib;
            rope_pair(qg + (size_t)h * HD, i, rp.n_rot, rp.neox, cs[2 * i], cs[2 * i + 1], &o1, &o2, &ia, &ib);
            qs[h * HD + ia] = o1; qs[h * HD + ib] = o2;
        }
        const int rest = HD - rp.n_rot;
        for (int idx = threadIdx.x; idx < G * rest; idx += TC_WARPS * 32) {
            const int h = idx / rest, jd = rp.n_rot + idx % rest;
            qs[h * HD + jd] = qg[(size_t)h * HD + jd];
        }
        if (kv8) {   /* int8: k rotated and v quantized (kv8_rows: rope_qk_store_q8_kernel's bytes) */
            if (holds) kv8_rows(ks, vs, cs, rp.n_rot, rp.neox, HD, (uint32_t *)kl, (uint32_t *)kl + W8);
        } else {
            for (int i = threadIdx.x; holds && i < half; i += TC_WARPS * 32) {
                float o1, o2;
                int ia, ib;
                rope_pair(ks, i, rp.n_rot, rp.neox, cs[2 * i], cs[2 * i + 1], &o1, &o2, &ia, &ib);
                kl[ia] = __half_as_ushort(__float2half_rn(o1));
                kl[ib] = __half_as_ushort(__float2half_rn(o2));
            }
            for (int jd = rp.n_rot + threadIdx.x; holds && jd < HD; jd += TC_WARPS * 32) kl[jd] = __half_as_ushort(__float2half_rn(ks[jd]));
            for (int jd = threadIdx.x; holds && jd < HD; jd += TC_WARPS * 32) vl[jd] = __half_as_ushort(__float2half_rn(vs[jd]));
        }
    }
    __syncthreads();
    if (holds && kv8) {   /* the position's int8 rows: into the cache (words) and, converted, into the tiles */
        const uint32_t *klw = (const uint32_t *)kl, *vlw = klw + W8;
        const size_t off = ((size_t)P0 * a.n_kv_heads + kvh) * W8;
        __half *kt = tiles + 2 * (j1 - j0) * TR, *vt = kt + TR;
        const int r = P0 - j1 * TC_C;
        for (int i = threadIdx.x; i < W8; i += TC_WARPS * 32) {
            ((uint32_t *)a.kc)[off + i] = klw[i];
            ((uint32_t *)a.vc)[off + i] = vlw[i];
        }
        for (int b = threadIdx.x; b < 2 * NB; b += TC_WARPS * 32)
            tc_q8_block((b < NB ? kt : vt) + r * (HD + TC_PAD) + (b % NB) * 32, (b < NB ? klw : vlw) + (b % NB) * KV_Q8_WORDS);
    } else if (holds) {   /* the position's rows: into the cache and into its chunk's tiles */
        const size_t off = ((size_t)P0 * a.n_kv_heads + kvh) * HD;
        __half *kt = tiles + 2 * (j1 - j0) * TR, *vt = kt + TR;
        const int r = P0 - j1 * TC_C;
        for (int pc = threadIdx.x; pc < PR; pc += TC_WARPS * 32) {
            const uint4 kw = *(const uint4 *)(kl + pc * 8), vw = *(const uint4 *)(vl + pc * 8);
            *(uint4 *)(kc + off + pc * 8) = kw; *(uint4 *)(vc + off + pc * 8) = vw;
            *(uint4 *)(kt + r * (HD + TC_PAD) + pc * 8) = kw; *(uint4 *)(vt + r * (HD + TC_PAD) + pc * 8) = vw;
        }
    }
    /* the thread's rows g, g + 8 (heads kvh G + row) and their q fragments */
    bool live[2];
    uint32_t qa[HD / 16][4];
    for (int i = 0; i < 2; i++) live[i] = g + 8 * i < G;
#pragma unroll
    for (int ks = 0; ks < HD / 16; ks++)
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const int row = g + ((k & 1) ? 8 : 0), d = ks * 16 + ((k & 2) ? 8 : 0) + 2 * tig;
            qa[ks][k] = live[k & 1] ? tc_pack(qs[row * HD + d], qs[row * HD + d + 1]) : 0u;
        }
    tc_cp_wait();
    __syncthreads();
    const int la[2] = { live[0] ? P0 : -1, live[1] ? P0 : -1 }, f[2] = { f0, f0 };
    float mj[NCH][2], lj[NCH][2], uj[NCH][2 * NPW][4];
    const int mi = lane >> 3, rr = lane & 7;
#pragma unroll
    for (int c = 0; c < NCH; c++) {
        const int j = j0 + c;
        if (j > j1) break;
        const __half *kt = tiles + 2 * c * TR, *vt = kt + TR;
        const int jc = j * TC_C;
        const int slo = f0 > jc ? (f0 - jc) / 16 : 0, shi = P0 - jc < TC_C ? (P0 - jc) / 16 : TC_C / 16 - 1;
        /* the scores of the warp's steps */
        for (int s = slo + warp; s <= shi; s += TC_WARPS) {
            float acc[2][4];
            tc_scores<HD>(acc, qa, kt, s, lane);
#pragma unroll
            for (int n = 0; n < 2; n++)
#pragma unroll
                for (int e = 0; e < 4; e++) sc[(s * 8 + n * 4 + e) * 32 + lane] = __fmul_rn(acc[n][e], a.c);
        }
        __syncthreads();
        /* the rows' maxima over every step (tc_chunk_max's values, order-free) */
        float m0 = -INFINITY, m1 = -INFINITY;
        for (int s = slo; s <= shi; s++)
#pragma unroll
            for (int n = 0; n < 2; n++)
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    const int p = jc + s * 16 + n * 8 + 2 * tig + e;
                    if (tc_in(p, f[0], la[0])) m0 = fmaxf(m0, sc[(s * 8 + n * 4 + e) * 32 + lane]);
                    if (tc_in(p, f[1], la[1])) m1 = fmaxf(m1, sc[(s * 8 + n * 4 + 2 + e) * 32 + lane]);
                }
        const float m[2] = { tc_quad_max(m0), tc_quad_max(m1) };
        mj[c][0] = m[0]; mj[c][1] = m[1];
        /* p of the warp's steps (tc_chunk_pv's operations), as the A fragment */
        for (int s = slo + warp; s <= shi; s += TC_WARPS) {
            float pv[2][4];
#pragma unroll
            for (int n = 0; n < 2; n++)
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    const int p = jc + s * 16 + n * 8 + 2 * tig + e;
                    float p0 = tc_in(p, f[0], la[0]) ? tc_ex2(__fsub_rn(sc[(s * 8 + n * 4 + e) * 32 + lane], m[0])) : 0.0f;
                    float p1 = tc_in(p, f[1], la[1]) ? tc_ex2(__fsub_rn(sc[(s * 8 + n * 4 + 2 + e) * 32 + lane], m[1])) : 0.0f;
                    pv[n][e] = p0; pv[n][2 + e] = p1;
                }
            pf[s * 32 + lane] = make_uint4(tc_pack(pv[0][0], pv[0][1]), tc_pack(pv[0][2], pv[0][3]),
                                           tc_pack(pv[1][0], pv[1][1]), tc_pack(pv[1][2], pv[1][3]));
        }
        __syncthreads();
        /* l_j (every warp, the split path's order) and the warp's d slices of u_j, steps in order */
        float l0 = 0.0f, l1 = 0.0f;
#pragma unroll
        for (int n = 0; n < 2 * NPW; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) uj[c][n][e] = 0.0f;
        for (int s = slo; s <= shi; s++) {
            const uint4 w = pf[s * 32 + lane];
            const uint32_t pa[4] = { w.x, w.y, w.z, w.w };
            const __half2 h0 = *(const __half2 *)&w.x, h1 = *(const __half2 *)&w.y;
            const __half2 h2 = *(const __half2 *)&w.z, h3 = *(const __half2 *)&w.w;
            l0 = __fadd_rn(l0, __low2float(h0)); l1 = __fadd_rn(l1, __low2float(h1));
            l0 = __fadd_rn(l0, __high2float(h0)); l1 = __fadd_rn(l1, __high2float(h1));
            l0 = __fadd_rn(l0, __low2float(h2)); l1 = __fadd_rn(l1, __low2float(h3));
            l0 = __fadd_rn(l0, __high2float(h2)); l1 = __fadd_rn(l1, __high2float(h3));
            const __half *vr = vt + (s * 16 + rr + ((mi & 1) ? 8 : 0)) * (HD + TC_PAD) + ((mi & 2) ? 8 : 0);
#pragma unroll
            for (int q = 0; q < NPW; q++) {
                uint32_t b[4];
                ldsm_x4_t(b, vr + (warp * NPW + q) * 16);
                mma16816(uj[c][2 * q], pa, b[0], b[1]);
                mma16816(uj[c][2 * q + 1], pa, b[2], b[3]);
            }
        }
        lj[c][0] = tc_quad_sum(l0); lj[c][1] = tc_quad_sum(l1);
    }
    if constexpr (SPLIT) {   /* the chunk's m, l, u for attn_tc_fold_kernel (the split launch's layout) */
        for (int i = 0; i < 2; i++) {
            if (!live[i]) continue;
            float *pr = a.part + ((size_t)(kvh * G + g + 8 * i) * a.nchp + j0) * (HD + 2);
            if (warp == 0 && tig == 0) { pr[0] = mj[0][i]; pr[1] = lj[0][i]; }
#pragma unroll
            for (int n = 0; n < 2 * NPW; n++) {
                pr[2 + warp * NPW * 16 + n * 8 + 2 * tig] = uj[0][n][2 * i];
                pr[2 + warp * NPW * 16 + n * 8 + 2 * tig + 1] = uj[0][n][2 * i + 1];
            }
        }
        return;
    }
    /* the merge (attn_tc_fold_kernel's operations) and o */
    const int nc = j1 - j0 + 1;
    for (int i = 0; i < 2; i++) {
        if (!live[i]) continue;
        float M = -INFINITY;
#pragma unroll
        for (int c = 0; c < NCH; c++)
            if (c < nc) M = fmaxf(M, mj[c][i]);
        float L = 0.0f, O[2 * NPW][2];
#pragma unroll
        for (int n = 0; n < 2 * NPW; n++) O[n][0] = O[n][1] = 0.0f;
#pragma unroll
        for (int c = 0; c < NCH; c++) {
            if (c >= nc) break;
            const float b = tc_ex2(__fsub_rn(mj[c][i], M));
            L = __fadd_rn(L, __fmul_rn(lj[c][i], b));
#pragma unroll
            for (int n = 0; n < 2 * NPW; n++) {
                O[n][0] = __fadd_rn(O[n][0], __fmul_rn(uj[c][n][2 * i], b));
                O[n][1] = __fadd_rn(O[n][1], __fmul_rn(uj[c][n][2 * i + 1], b));
            }
        }
        float *orow = a.out + ((size_t)kvh * G + g + 8 * i) * HD + warp * NPW * 16;
#pragma unroll
        for (int n = 0; n < 2 * NPW; n++) {
            orow[n * 8 + 2 * tig] = __fdiv_rn(O[n][0], L);
            orow[n * 8 + 2 * tig + 1] = __fdiv_rn(O[n][1], L);
        }
    }
    if (a.act) {
        __syncthreads();
        if (a.act_fmt == ACT_Q8_K) tc_act_k(a, kvh, G, HD);
        else tc_act<HD>(a, kvh, 0, G);
    }
}

static size_t tc_dec_smem(int head_dim, int nch) {
    return (size_t)2 * nch * TC_C * (head_dim + TC_PAD) * 2 + (size_t)(TC_C / 16) * 8 * 32 * sizeof(float) +
           (size_t)(TC_C / 16) * 32 * 16 + (size_t)16 * head_dim * sizeof(float) + (size_t)2 * head_dim * 2 +
           (size_t)head_dim * sizeof(float);   /* kn (bit 512) */
}

static int tc_nch(int n_ctx) { return (n_ctx + TC_C - 1) / TC_C; }

/* a launch's arguments (both entry points) */
static tc_args tc_args_make(const float *q, const void *kc, const void *vc, int kv8, int T, int n_heads, int n_kv_heads,
                            int head_dim, int pos0, const int *d_pos, float scale, int window, int n_ctx, float *part,
                            float *out, void *act, int act_fmt) {
    tc_args a;
    memset(&a, 0, sizeof a);
    a.q = q; a.kc = kc; a.vc = vc; a.kv8 = kv8 ? 1 : 0;
    a.T = T; a.n_heads = n_heads; a.n_kv_heads = n_kv_heads; a.pos0 = pos0; a.d_pos = d_pos;
    a.c = scale * 1.44269504088896341f;   /* scale * log2(e), rounded to float here */
    a.window = window;
    a.out = out; a.act = (uint8_t *)act;
    a.arb = act ? cuda_act_row_bytes(act_fmt, (int64_t)n_heads * head_dim) : 0;
    a.act_fmt = act_fmt;
    a.part = part; a.nchp = tc_nch(n_ctx);
    return a;
}

int cuda_attention_tc_dec_split(int max_last) { return max_last >= TC_DEC_NCH * TC_C; }

int cuda_attention_tc_dec_ok(int n_heads, int n_kv_heads, int head_dim, int max_last, int bits, int have_part) {
    if (!cuda_attention_tc_ok(head_dim) || n_heads % n_kv_heads || n_heads / n_kv_heads > 16 || max_last < 0) return 0;
    return max_last < TC_DEC_NCH * TC_C ? (bits & 1) != 0 : (bits & 2) && have_part;
}

/* STRATA_CUDA_TWICE bits 2 and 4 (an instrument): the decode launch, the merge launch twice. Both
 * are idempotent: the decode launch reads the rows before the position (which it never writes)
 * and writes the position's row from k and v (the same values again), its partials or o; the
 * merge reads the partials and writes o. */
static int tc_twice = 0;
void cuda_attention_tc_set_twice(int bits) { tc_twice = bits; }

template <int HD>
static int tc_dec_launch(const tc_args &a, const tc_rope &rp, int nch, int split, int staged, int per_kind, cudaStream_t st) {
    static int attr = 0;
    if (!attr) {
#define TC_DEC_ATTR(KV) (CU_CHECK(cudaFuncSetAttribute(attn_tc_dec_kernel<HD, 0, KV>, cudaFuncAttributeMaxDynamicSharedMemorySize, \
                                                       (int)tc_dec_smem(HD, TC_DEC_NCH))) ||                                  \
                         CU_CHECK(cudaFuncSetAttribute(attn_tc_dec_kernel<HD, 1, KV>, cudaFuncAttributeMaxDynamicSharedMemorySize, \
                                                       (int)tc_dec_smem(HD, 1))))
        if (TC_DEC_ATTR(0) || TC_DEC_ATTR(1) || TC_DEC_ATTR(2) || TC_DEC_ATTR(3)) return -1;
#undef TC_DEC_ATTR
        attr = 1;
    }
    /* bit 256: the instantiation of the cache's kind (int8: and of its code conversion, bit 32) */
#define TC_DEC_GO(S, G, SM) do { if (!per_kind) klaunch(attn_tc_dec_kernel<HD, S, 0>, G, TC_WARPS * 32, SM, st, a, rp);     \
                                 else if (a.kv8 && (a.kv8_stage & 2)) klaunch(attn_tc_dec_kernel<HD, S, 2>, G, TC_WARPS * 32, SM, st, a, rp); \
                                 else if (a.kv8) klaunch(attn_tc_dec_kernel<HD, S, 3>, G, TC_WARPS * 32, SM, st, a, rp); \
                                 else klaunch(attn_tc_dec_kernel<HD, S, 1>, G, TC_WARPS * 32, SM, st, a, rp); } while (0)
    const int reps = tc_twice & CUDA_TWICE_ATTN_DEC ? 2 : 1;
    if (!split) {
        for (int r = 0; r < reps; r++) TC_DEC_GO(0, dim3((unsigned)a.n_kv_heads), tc_dec_smem(HD, TC_DEC_NCH));
        return CU_LAUNCHED();
    }
    for (int r = 0; r < reps; r++) TC_DEC_GO(1, dim3((unsigned)nch, (unsigned)a.n_kv_heads), tc_dec_smem(HD, 1));
#undef TC_DEC_GO
    if (CU_LAUNCHED()) return -1;
    tc_fold_launch<HD>(a, staged, st);
    if (tc_twice & CUDA_TWICE_ATTN_FOLD) tc_fold_launch<HD>(a, staged, st);
    return CU_LAUNCHED();
}

/* launches of the decode kernel that took the q / k head norms (bit 512) and that wrote act_q8_K rows
 * (bit 1024): tests assert that the folded paths ran (cuda_attention_tc_dec_folds) */
static unsigned long tc_dec_norm_launches, tc_dec_actk_launches;
extern "C" void cuda_attention_tc_dec_folds(unsigned long *norms, unsigned long *actk) {
    *norms = tc_dec_norm_launches;
    *actk = tc_dec_actk_launches;
}

int cuda_attention_tc_dec(const float *q, const float *k, const float *v, void *kc, void *vc, int kv8, int n_heads,
                          int n_kv_heads, int head_dim, int pos0, const int *d_pos, int max_last, float scale,
                          int window, const float *cs, int n_rot, int neox, int n_ctx, float *part, float *out,
                          void *act, int act_fmt, const float *q_norm, const float *k_norm, float eps, int bits,
                          cudaStream_t st) {
    if (!cuda_attention_tc_dec_ok(n_heads, n_kv_heads, head_dim, max_last, bits, part != NULL) || max_last >= n_ctx) return -1;
    if (act && act_fmt == ACT_Q8_K &&   /* bit 1024: the one launch only, whole blocks a CTA */
        (!(bits & 1024) || cuda_attention_tc_dec_split(max_last) || (n_heads / n_kv_heads * head_dim) % 256))
        return -1;
    tc_args a = tc_args_make(q, kc, vc, kv8, 1, n_heads, n_kv_heads, head_dim, pos0, d_pos, scale, window, n_ctx, part,
                             out, act, act_fmt);
    tc_rope rp;
    memset(&rp, 0, sizeof rp);
    rp.k = k; rp.v = v; rp.cs = cs; rp.n_rot = n_rot; rp.neox = neox;
    if ((bits & 512) && q_norm && k_norm && head_dim <= 256) { rp.qnw = q_norm; rp.knw = k_norm; rp.eps = eps; }
    const int split = cuda_attention_tc_dec_split(max_last), nch = max_last / TC_C + 1;
    /* bit 8: the deep launch's int8 rows staged (measured: +3-5 % at 4,096 / 16,384 on the
     * head_dim-64 shapes; at depth 16 the one-launch path lost 1-2.5 % with it, so not there) */
    a.kv8_stage = ((bits & 8) != 0 && split) | ((bits & 32) != 0 ? 2 : 0);   /* 2: bit 32, the codes by tc_q8f */
    const int staged = bits & 20;
    const int per_kind = (bits & 256) != 0;
    tc_dec_norm_launches += rp.qnw != NULL;
    tc_dec_actk_launches += act != NULL && act_fmt == ACT_Q8_K;
    return head_dim == 64 ? tc_dec_launch<64>(a, rp, nch, split, staged, per_kind, st)
                          : tc_dec_launch<128>(a, rp, nch, split, staged, per_kind, st);
}

/* f16 or int8 caches alike (an int8 row's blocks of 32 never straddle a head at these sizes) */
int cuda_attention_tc_ok(int head_dim) { return head_dim == 64 || head_dim == 128; }

size_t cuda_attention_tc_scratch_floats(int n_heads, int head_dim, int n_ctx) {
    return (size_t)TC_SPLIT_T * n_heads * tc_nch(n_ctx) * (head_dim + 2);
}

static size_t tc_smem(int head_dim, int nch) {
    return (size_t)2 * TC_C * (head_dim + TC_PAD) * 2 + (size_t)nch * TC_ROWS * sizeof(float);
}

template <int HD>
static int tc_launch(const tc_args &a, int max_last, int split, int staged, cudaStream_t st) {
    static int attr = 0;
    if (!attr) {
        if (CU_CHECK(cudaFuncSetAttribute(attn_tc_kernel<HD, 0>, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024)) ||
            CU_CHECK(cudaFuncSetAttribute(attn_tc_kernel<HD, 1>, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024)))
            return -1;
        attr = 1;
    }
    const int G = a.n_heads / a.n_kv_heads, groups = (a.T * G + TC_ROWS - 1) / TC_ROWS;
    const int nch = max_last / TC_C + 1;   /* chunks 0 .. the launch's last position's */
    if (split) {
        klaunch(attn_tc_kernel<HD, 1>, dim3((unsigned)nch, (unsigned)groups, (unsigned)a.n_kv_heads), TC_WARPS * 32,
                tc_smem(HD, 1), st, a);
        if (CU_LAUNCHED()) return -1;
        tc_fold_launch<HD>(a, staged, st);
        return CU_LAUNCHED();
    }
    /* the loop: a CTA's maxima for the chunks its rows span (at most those of max_last + 1
     * positions); past 200 KB of shared memory: not served */
    const size_t smem = tc_smem(HD, nch);
    if (smem > 200 * 1024) return -1;
    klaunch(attn_tc_kernel<HD, 0>, dim3((unsigned)groups, (unsigned)a.n_kv_heads), TC_WARPS * 32, smem, st, a);
    return CU_LAUNCHED();
}

int cuda_attention_tc(const float *q, const void *kc, const void *vc, int kv8, int T, int n_heads, int n_kv_heads,
                      int head_dim, int pos0, const int *d_pos, int max_last, float scale, int window, int n_ctx,
                      float *part, float *out, void *act, int act_fmt, int fold_staged, cudaStream_t st) {
    if (!cuda_attention_tc_ok(head_dim) || n_heads % n_kv_heads) return -1;
    tc_args a = tc_args_make(q, kc, vc, kv8, T, n_heads, n_kv_heads, head_dim, pos0, d_pos, scale, window, n_ctx, part,
                             out, act, act_fmt);
    a.kv8_stage = kv8 && (fold_staged & 32) ? 2 : 0;   /* bit 32: an int8 cache's codes by tc_q8f */
    const int ml = max_last >= 0 ? max_last : pos0 + T - 1;
    if (ml >= n_ctx) return -1;
    const int split = T <= TC_SPLIT_T && part != NULL;   /* either launch gives the same bits */
    return head_dim == 64 ? tc_launch<64>(a, ml, split, fold_staged, st) : tc_launch<128>(a, ml, split, fold_staged, st);
}
