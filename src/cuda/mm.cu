/* The matmul of wide passes (T > 8 columns) on tensor cores, with the matvec's bits.
 *
 *   y[t * n_out + r] = W[r] . x_t      (and the matvec's epilogue: add_to[.] += y)
 *
 * Why the bits are the matvec's (docs/KERNELS.md, "Wide passes"): a column's result is the
 * canonical sum of its block partials p_b (lane b % 32, then the 16-8-4-2-1 tree). Inside a
 * block the integer sums are exact whatever instruction forms them, so the int8 MMA
 * (mma.sync m16n8k32, s8 x s8 -> s32) gives the same isum as __dp4a; p_b then follows with the
 * reference formula in fp32. What remains is the order of the float adds, and this kernel
 * walks it exactly: the 32 lanes are visited in bit-reversed order (k = 0..31, lane =
 * bitrev5(k)), each lane's blocks b = lane, lane + 32, ... in increasing b into a fresh +0.0
 * accumulator (the lane's value), and the lane values are combined as a binary counter:
 *
 *   r0 = v(k even) + v(k + 1), r1 = r0(k/2 even) + r0(next), ... r4 = the result
 *
 * Lanes l and l + 16 are k and k + 1 (bit 4 of the lane is bit 0 of k), lanes l and l + 8 the
 * pairs k and k + 2, and so on: exactly the tree s = 16, 8, 4, 2, 1 (a float add is
 * commutative, so which operand comes first does not matter). Per output a thread keeps six
 * floats (v, r0..r4) instead of 32 lanes.
 *
 * Tiles: a CTA computes 64 rows x 64 columns with 8 warps (2 x 4), each warp 32 rows x 16
 * columns (2 x 2 MMA fragments, 16 outputs per thread). One block of every row and column of
 * the tile at a time is decoded into shared memory as int8 (weights) and copied (activation
 * codes), with the block's scales; then every warp runs its MMAs over the block's 32-value
 * slices and forms p_b.
 *
 * Formats: those whose block scales cover 32 values (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, MXFP4,
 * IQ4_NL, Q4_K, Q5_K, IQ2_XXS, IQ3_XXS, IQ3_S, IQ1_S, IQ4_XS), and those with a scale per 16
 * values (Q6_K, Q2_K, Q3_K, IQ2_XS, IQ2_S, IQ1_M: one m16n8k16 MMA per sub-block). An IQ
 * block is decoded into int8 weights w8 and integer multipliers m as the matvec does
 * (iq_blocks.cuh: iq_group8, iq_mult), so its isum = sum_j m_j * (w8 . a)_j is the matvec's
 * and p_b = ((float)isum * k) * (h(d) * a.d) follows. Q2_0 (64-value blocks against act_q8_2,
 * since 2026-12-06): a tile row holds a block's 64 codes c - 1, two m16n8k32 MMAs add into the
 * block's one isum, p_b = (float)isum * (h(d) * a.d); the two-tile kernel only. mm_kernel3 (STRATA_CUDA_MM_PIPE:
 * by default where it measured faster, mm_pipe_code) brings the same steps' bytes in by cp.async
 * in 3-4 shared-memory stages. */
#include "cuda_internal.h"
#include "cuda_common.cuh"
#include "formats.cuh"
#include "quant_blocks.cuh"
#include "iq_blocks.cuh"
extern "C" {
#include "core/env.h"
}
PDL_TU_STATE(mm)

#define MM_BM 64
#define MM_BN CUDA_MM_BN
#define MM_PAD 16   /* bytes after each row of int8 codes in shared memory: conflict-free fragment loads */

IQ_TABLES_INIT_FN(cuda_mm_tables_init, "mm")

template <int FMT> struct mmf { static constexpr int ok = 0; };
/* QK: values per block. kind: 0 p = isum * (dw * da); 1 a min per 32 values against the
 * activation's bsums (Q4_K / Q5_K); 2 a min per block against a.s (Q4_1 / Q5_1); 3 an IQ
 * format (p = (isum * k) * (dw * da)); 4 a min per 16 values (Q2_K). SUB: values per integer
 * scale (32: m16n8k32 MMAs, 16: m16n8k16). IQ: QK=256 formats whose scale unit is 32 or 16. */
#define MMF(F, QKV, KIND, SUBV) template <> struct mmf<F> { static constexpr int ok = 1, QK = QKV, kind = KIND, SUB = SUBV; };
MMF(TYPE_Q4_0, 32, 0, 32)
MMF(TYPE_Q5_0, 32, 0, 32)
MMF(TYPE_Q8_0, 32, 0, 32)
MMF(TYPE_MXFP4, 32, 0, 32)
MMF(TYPE_IQ4_NL, 32, 0, 32)
MMF(TYPE_Q4_1, 32, 2, 32)
MMF(TYPE_Q5_1, 32, 2, 32)
MMF(TYPE_Q4_K, 256, 1, 32)
MMF(TYPE_Q5_K, 256, 1, 32)
MMF(TYPE_Q6_K, 256, 0, 16)   /* int8 scales per 16 values */
MMF(TYPE_Q3_K, 256, 0, 16)
MMF(TYPE_Q2_K, 256, 4, 16)
MMF(TYPE_IQ2_XXS, 256, 3, 32)
MMF(TYPE_IQ3_XXS, 256, 3, 32)
MMF(TYPE_IQ3_S, 256, 3, 32)
MMF(TYPE_IQ1_S, 256, 3, 32)
MMF(TYPE_IQ4_XS, 256, 3, 32)
MMF(TYPE_IQ2_XS, 256, 3, 16)
MMF(TYPE_IQ2_S, 256, 3, 16)
MMF(TYPE_IQ1_M, 256, 3, 16)
MMF(TYPE_Q2_0, 64, 0, 32)     /* 64-value blocks against act_q8_2: two k32 MMAs into one isum */
#undef MMF
/* the formats of the first kernel (8 and 16 warps); the others are built with 8 warps only */
template <int FMT> struct mm_both { static constexpr bool v = FMT == TYPE_Q4_0 || FMT == TYPE_Q4_1 || FMT == TYPE_Q5_0 ||
    FMT == TYPE_Q5_1 || FMT == TYPE_Q8_0 || FMT == TYPE_Q4_K || FMT == TYPE_Q5_K || FMT == TYPE_Q6_K; };

static __device__ __forceinline__ void st_w(int8_t *p, uint32_t v) { *(uint32_t *)p = v; }

static __device__ __forceinline__ void mma_s8_16x8x32(int *d, const uint32_t *a, const uint32_t *b) {
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%10,%11,%12,%13};\n"
                 : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(0), "r"(0), "r"(0), "r"(0));
}

/* the same with every accumulator input c (the bias of STRATA_CUDA_MM_SERX's conversion, mm_i2f) */
static __device__ __forceinline__ void mma_s8_16x8x32_c(int *d, const uint32_t *a, const uint32_t *b, int c) {
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%10,%10,%10,%10};\n"
                 : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(c));
}
/* A block's integer sum as a float. MB (STRATA_CUDA_MM_SERX, the 32-value formats): the MMA added
 * MM_I2F_BIAS to it, so its bits are the float 1.5 * 2^23 + s (exact: |s| < 2^22, a float of
 * [2^23, 2^24) has unit spacing), and one exact subtraction gives s: the value __int2float_rn
 * gives (+0.0 for 0 in both), by an add on the FP32 pipe instead of a conversion. Every 32-value
 * format's |s| <= 32 x 128 x 128 = 2^19. */
#define MM_I2F_BIAS 0x4B400000
/* Q4_0 in the MB instances (mm_sc): the tile holds its codes scaled, 16 (q - 8) = (q ^ 8) << 4 as s8
 * (store_w's SC: an xor, a shift and two ands a code word where the offset took a per-byte subtract),
 * so the MMA's sum is 16 s. The bias is then a float of [2^19, 2^20), whose spacing is 1/16: its bits
 * plus 16 s are the float 1.5 * 2^19 + s, exact for |s| < 2^18 (|s| <= 32 x 8 x 128 = 2^15), and the
 * subtraction gives the same s. */
template <int FMT> struct mm_sc {
    static constexpr int mul = FMT == TYPE_Q4_0 ? 16 : 1;   /* Q5_0's 8 (q - 16): calls 3-4, 1-3 % slower */
    static constexpr int bias = mul == 16 ? 0x49400000 : MM_I2F_BIAS;
    static constexpr float fbias = mul == 16 ? 786432.0f : 12582912.0f;
};
template <bool MB, int FMT = 0>
static __device__ __forceinline__ float mm_i2f(int s) {
    if constexpr (MB) return __fsub_rn(__int_as_float(s), mm_sc<FMT>::fbias);
    else return __int2float_rn(s);
}

static __device__ __forceinline__ void mma_s8_16x8x16(int *d, const uint32_t *a, uint32_t b) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%8,%9,%10};\n"
                 : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(b), "r"(0), "r"(0), "r"(0), "r"(0));
}

/* ---- the kernel: one barrier per block step ------------------------------------------------------
 * Two tiles in shared memory: while the warps run the MMAs of step i on one, the next step's
 * weight bytes are in registers (decoded into the other tile after the MMAs) and its activation
 * codes are on their way by cp.async. (A first kernel that loaded, synchronized, computed and
 * synchronized again per step measured 5-35 % slower (H200, m 4096 k 14336 n 512) and was removed; BENCHMARKS.md.) */
template <int QK> struct alignas(16) mm_tile2 {
    int8_t w[MM_BM][QK + MM_PAD];   /* rows of 16-byte multiples: ldmatrix rows (block_step2) */
    int8_t a[MM_BN][QK + MM_PAD];
    float dw[MM_BM], mw[MM_BM];
    float da[MM_BN], sa[MM_BN];
    /* per row, as int8 (every format's values fit: K-quant scales and mins 0..63, Q6_K int8, Q3_K and
     * IQ4_XS -32..31, the other IQ multipliers 1..31): the integer scale per 32 values (bytes 0..7) or
     * per 16 (SUB 16: bytes 0..15); the min per 32 (Q4_K / Q5_K: bytes 0..7) or per 16 (Q2_K). A row
     * is one 16-byte line: one vector load per row, and mn an ldmatrix operand (Q2_K). */
    alignas(16) int8_t sc[MM_BM][QK == 256 ? 16 : 4];
    alignas(16) int8_t mn[MM_BM][QK == 256 ? 16 : 4];
    int16_t bsum[MM_BN][QK == 256 ? 16 : 2];   /* act_q8_K's sums per 16 values, as stored */
};

/* one thread's bytes of a weight block (its part), before decoding; IQ formats keep the
 * block's address (blk) and decode from it after the MMAs */
/* q / h hold a run's words, or (the 32-value formats with 2-byte aligned blocks, ld_run_raw) its raw
 * form: the N aligned words and a 2-byte half, one more slot; sh: that form's shift */
struct mm_wraw { uint32_t q[16], h[8], dd, s[3], sh; const uint8_t *blk; };

/* wco (Q4_K / Q5_K, STRATA_CUDA_MM_WPRE): part p takes code words 4 w + p (w = 0..7)
 * instead of 8 p + w, so the four parts of a row read 16 consecutive bytes per load (one
 * sector) instead of four words 32 bytes apart; store_w puts each word where its values go. */
/* v16 (Q4_K / Q5_K, STRATA_CUDA_MM_WPRE bit 4, the one-float instances; blocks 16-byte aligned,
 * which the host checks): part p's 32 code bytes (words 8 p .. 8 p + 7, wco's other layout) and
 * Q5_K's 32 high-bit bytes by 16-byte loads, two (four) a part instead of eight (sixteen) 4-byte
 * ones; store_w then runs with wco off. The same words. */
/* N consecutive 4-byte words from a 2-byte aligned address (the blocks of Q4_0, Q5_0, Q8_0, Q6_K, Q3_K,
 * IQ4_NL and the IQ formats are 2-byte multiples), in two halves. ld_run_raw (fetch_w, before the
 * step's MMAs): the N aligned words from the one at or below p and one 2-byte half (where p is 2 mod 4
 * the run's last half, else a half inside the run), N + 1 loads where ld_u32_a2 took 2 N, no byte
 * outside [p - 2, p + 4 N) (p - 2 lies in the same weight: every weight is its own allocation). run_finish
 * (store_w, after them): the words joined by funnel shifts of sh = 0 or 16 bits, each raw word first
 * passed through an empty volatile asm, so no consumer of a load is scheduled before the MMAs (the SASS
 * of ld_run_a2 and of ld_u32_a2 before it put a shift / PRMT right after each block's loads, inside the
 * block's branch region: the warp waited for the weights before its MMAs, four times a step for the
 * 32-value formats; ncu's source page: ~23 % of Q4_0's stall samples on those PRMTs). The same values. */
template <int N>
static __device__ __forceinline__ void ld_run_raw(uint32_t *raw, const uint8_t *p) {
    const int odd = (int)((uintptr_t)p & 2u);
    const uint32_t *q = (const uint32_t *)(p - odd);   /* pointer arithmetic: the global loads stay LDG */
#pragma unroll
    for (int i = 0; i < N; i++) raw[i] = q[i];
    raw[N] = ld_u16(p + (odd ? 4 * N - 2 : 0));
}
static __device__ __forceinline__ uint32_t run_sh(const uint8_t *p) { return ((uint32_t)(uintptr_t)p & 2u) * 8u; }
template <int N>
static __device__ __forceinline__ void run_finish(uint32_t *raw, uint32_t sh) {
    uint32_t x[N + 1];
#pragma unroll
    for (int i = 0; i <= N; i++) {
        x[i] = raw[i];
        asm volatile("" : "+r"(x[i]));
    }
#pragma unroll
    for (int i = 0; i < N; i++) raw[i] = __funnelshift_r(x[i], x[i + 1], sh);
}

/* the 256-value formats' runs (Q6_K, Q3_K, IQ3_XXS / IQ2_XXS): N aligned words joined at once, and where
 * p is 2 mod 4 a predicated 2-byte load of the last half (main's form since 05fc73e; their raw form
 * held across the MMAs spilled at the two-CTA cap: Q6_K ORD 2 X 16 -> 84 bytes); a block's loads are
 * one region, so its one wait comes after all of them */
template <int N>
static __device__ __forceinline__ void ld_run_a2(uint32_t *dst, const uint8_t *p) {
    const uint32_t sh = ((uint32_t)(uintptr_t)p & 2u) * 8u;   /* 0 or 16 */
    const uint32_t *q = (const uint32_t *)((uintptr_t)p & ~(uintptr_t)3);
    uint32_t prev = q[0];
#pragma unroll
    for (int i = 0; i < N - 1; i++) {
        const uint32_t nx = q[i + 1];
        dst[i] = __funnelshift_r(prev, nx, sh);
        prev = nx;
    }
    const uint32_t hi = sh ? (uint32_t)ld_u16(p + 4 * N - 2) : 0u;
    dst[N - 1] = sh ? (prev >> 16) | (hi << 16) : prev;
}

template <int FMT>
static __device__ __forceinline__ void fetch_w(mm_wraw &r, int part, const uint8_t *wr, int b, bool wco = false,
                                               bool v16 = false) {
    if constexpr (FMT == TYPE_Q4_0 || FMT == TYPE_Q4_1 || FMT == TYPE_Q5_0 || FMT == TYPE_Q5_1) {
        constexpr bool ONE = FMT == TYPE_Q4_1 || FMT == TYPE_Q5_1;
        const uint8_t *blk = wr + (size_t)b * wfmt<FMT>::bsize;
        int qoff = FMT == TYPE_Q4_0 ? offsetof_i(block_q4_0, qs) : FMT == TYPE_Q4_1 ? offsetof_i(block_q4_1, qs)
                 : FMT == TYPE_Q5_0 ? offsetof_i(block_q5_0, qs) : offsetof_i(block_q5_1, qs);
        if (ONE) r.q[0] = ld_u32(blk + qoff + 4 * part);
        else {   /* raw halves (run_finish in store_w); Q5_0's qh and qs lie alike mod 4 */
            ld_run_raw<1>(r.q, blk + qoff + 4 * part);
            r.sh = run_sh(blk + qoff);
        }
        if (FMT == TYPE_Q5_0) ld_run_raw<1>(r.h, blk + offsetof_i(block_q5_0, qh));
        if (FMT == TYPE_Q5_1) r.h[0] = ld_u32(blk + offsetof_i(block_q5_1, qh));
        r.dd = ONE ? ld_u32(blk) : (uint32_t)ld_u16(blk);
    } else if constexpr (FMT == TYPE_Q2_0) {   /* part p: code word p (weights 16 p .. 16 p + 15), raw halves */
        const uint8_t *blk = wr + (size_t)b * sizeof_i(block_q2_0);
        ld_run_raw<1>(r.q, blk + offsetof_i(block_q2_0, qs) + 4 * part);
        r.sh = run_sh(blk + offsetof_i(block_q2_0, qs));
        r.dd = ld_u16(blk);
    } else if constexpr (FMT == TYPE_Q8_0) {
        const uint8_t *blk = wr + (size_t)b * sizeof_i(block_q8_0);
        ld_run_raw<2>(r.q, blk + offsetof_i(block_q8_0, qs) + 8 * part);
        r.sh = run_sh(blk + offsetof_i(block_q8_0, qs));
        r.dd = ld_u16(blk);
    } else if constexpr (FMT == TYPE_Q6_K) {
        /* part p: values 64p .. 64p + 63: ql[64 (p / 2) + i] (nibble p % 2), qh[32 (p / 2) + i % 32] */
        const uint8_t *blk = wr + (size_t)b * sizeof_i(block_q6_K);
        ld_run_a2<16>(r.q, blk + offsetof_i(block_q6_K, ql) + 64 * (part / 2));
        ld_run_a2<8>(r.h, blk + offsetof_i(block_q6_K, qh) + 32 * (part / 2));
        r.dd = ld_u16(blk + offsetof_i(block_q6_K, d));
        if (part < 2)
            ld_run_a2<2>(r.s, blk + offsetof_i(block_q6_K, scales) + 8 * part);
    } else if constexpr (FMT == TYPE_IQ4_NL) {
        const uint8_t *blk = wr + (size_t)b * sizeof_i(block_iq4_nl);
        ld_run_raw<1>(r.q, blk + offsetof_i(block_iq4_nl, qs) + 4 * part);
        r.sh = run_sh(blk + offsetof_i(block_iq4_nl, qs));
        r.dd = ld_u16(blk);
    } else if constexpr (FMT == TYPE_MXFP4) {
        const uint8_t *blk = wr + (size_t)b * sizeof_i(block_mxfp4);
        ld_run_any<1>(r.q, blk + offsetof_i(block_mxfp4, qs) + 4 * part);
        r.dd = blk[offsetof_i(block_mxfp4, e)];
    } else if constexpr (FMT == TYPE_Q2_K || FMT == TYPE_Q3_K) {
        /* part p: values 64p .. 64p + 63: qs[32 (p / 2) + i % 32] at shifts 4 (p % 2) and
         * 4 (p % 2) + 2; Q3_K: hmask[i % 32] bits 2p and 2p + 1 */
        constexpr bool Q3 = FMT == TYPE_Q3_K;
        const uint8_t *blk = wr + (size_t)b * (Q3 ? sizeof_i(block_q3_K) : sizeof_i(block_q2_K));
        const int qoff = Q3 ? offsetof_i(block_q3_K, qs) : offsetof_i(block_q2_K, qs);
        if (Q3) ld_run_a2<8>(r.q, blk + qoff + 32 * (part / 2));
        else
#pragma unroll
            for (int w = 0; w < 8; w++) r.q[w] = ld_u32(blk + qoff + 32 * (part / 2) + 4 * w);
        if (Q3) {
            ld_run_a2<8>(r.h, blk + offsetof_i(block_q3_K, hmask));
            ld_run_a2<3>(r.s, blk + offsetof_i(block_q3_K, scales));
            r.dd = ld_u16(blk + offsetof_i(block_q3_K, d));
        } else {
            r.s[0] = ld_u32(blk + offsetof_i(block_q2_K, scales) + 4 * part);
            r.dd = ld_u32(blk + offsetof_i(block_q2_K, d));
        }
    } else if constexpr (mmf<FMT>::kind == 3) {
        r.blk = wr + (size_t)b * wfmt<FMT>::bsize;   /* decoded from global memory in store_w */
        if constexpr (FMT == TYPE_IQ3_XXS || FMT == TYPE_IQ2_XXS) {
            if (wco) {   /* part p's bytes in registers a step ahead: groups 8p .. 8p + 7 (ib 2p, 2p + 1) */
                const uint8_t *qs = r.blk + (FMT == TYPE_IQ3_XXS ? offsetof_i(block_iq3_xxs, qs) : offsetof_i(block_iq2_xxs, qs));
                ld_run_a2<4>(r.q, qs + 16 * part);
                if (FMT == TYPE_IQ3_XXS) ld_run_a2<2>(r.h, qs + QK_K / 4 + 8 * part);   /* the scale-and-sign words of ib 2p, 2p + 1 */
                r.dd = ld_u16(r.blk);
            }
        }
    } else {
        static_assert(FMT == TYPE_Q4_K || FMT == TYPE_Q5_K, "mm: a format without its fetch");
        constexpr bool Q5 = FMT == TYPE_Q5_K;
        const int bsz = Q5 ? sizeof_i(block_q5_K) : sizeof_i(block_q4_K);
        const int qoff = Q5 ? offsetof_i(block_q5_K, qs) : offsetof_i(block_q4_K, qs);
        const uint8_t *blk = wr + (size_t)b * bsz;
        if (v16) {
            static_assert(offsetof_i(block_q4_K, qs) % 16 == 0 && offsetof_i(block_q5_K, qs) % 16 == 0 &&
                          offsetof_i(block_q5_K, qh) % 16 == 0 && sizeof_i(block_q4_K) % 16 == 0 &&
                          sizeof_i(block_q5_K) % 16 == 0, "mm: 16-byte code words");
            const uint4 a0 = *(const uint4 *)(blk + qoff + 32 * part), a1 = *(const uint4 *)(blk + qoff + 32 * part + 16);
            r.q[0] = a0.x; r.q[1] = a0.y; r.q[2] = a0.z; r.q[3] = a0.w;
            r.q[4] = a1.x; r.q[5] = a1.y; r.q[6] = a1.z; r.q[7] = a1.w;
            if (Q5) {
                const uint4 h0 = *(const uint4 *)(blk + offsetof_i(block_q5_K, qh)),
                            h1 = *(const uint4 *)(blk + offsetof_i(block_q5_K, qh) + 16);
                r.h[0] = h0.x; r.h[1] = h0.y; r.h[2] = h0.z; r.h[3] = h0.w;
                r.h[4] = h1.x; r.h[5] = h1.y; r.h[6] = h1.z; r.h[7] = h1.w;
            }
        } else {
#pragma unroll
            for (int w = 0; w < 8; w++) r.q[w] = ld_u32(blk + qoff + (wco ? 16 * w + 4 * part : 32 * part + 4 * w));
            if (Q5 && wco) {   /* the high bits of code words 4 w + p: qh words p and 4 + p */
                r.h[0] = ld_u32(blk + offsetof_i(block_q5_K, qh) + 4 * part);
                r.h[1] = ld_u32(blk + offsetof_i(block_q5_K, qh) + 16 + 4 * part);
            } else if (Q5)
#pragma unroll
                for (int w = 0; w < 8; w++) r.h[w] = ld_u32(blk + offsetof_i(block_q5_K, qh) + 4 * w);
        }
        r.dd = ld_u32(blk);
        if (part < 2)
#pragma unroll
            for (int w = 0; w < 3; w++) r.s[w] = ld_u32(blk + offsetof_i(block_q4_K, scales) + 4 * w);
    }
}

/* R16 (the serial order's X instances, 256-value formats): part p's 16 decoded words W[0..15] (its
 * row's bytes 64 p .. 64 p + 63) by four 16-byte stores instead of sixteen 4-byte ones. The four
 * parts of a row are lanes 4 r' .. 4 r' + 3 of a warp and rows lie 272 bytes (68 words) apart, so
 * sixteen 4-byte stores at word 16 p + k hit banks 4 r' + 16 p + k: parts 0 and 2 (1 and 3) on the
 * same banks, 4-way conflicts. A 16-byte store serves 8 lanes (two rows) a phase; chunk c of part
 * p's region starts at 16-byte group (r' + 4 p + c) mod 8, so parts 2 and 3 store their chunks in
 * the order 2, 3, 0, 1 (c = j ^ 2 at store j) and the eight lanes of a phase meet eight distinct
 * groups at every store. The same bytes in the same places. */
static __device__ __forceinline__ void st_region16(int8_t *base, const uint32_t *W, int part) {
    const bool rot = (part & 2) != 0;
#pragma unroll
    for (int j = 0; j < 4; j++) {
        const int c = rot ? j ^ 2 : j;
        /* the words chosen by selects on constant indices, not W[4 * c]: part (so c) is known only at
         * run time, and that run-time index moves W to local memory (nvcc -ptx of the W[4 * c] form,
         * 2026-12-05: 1,168 ld/st.local in the 52 R16 instances, none in this one) */
        uint4 d;
        d.x = rot ? W[4 * (j ^ 2)] : W[4 * j];
        d.y = rot ? W[4 * (j ^ 2) + 1] : W[4 * j + 1];
        d.z = rot ? W[4 * (j ^ 2) + 2] : W[4 * j + 2];
        d.w = rot ? W[4 * (j ^ 2) + 3] : W[4 * j + 3];
        *(uint4 *)(base + 16 * c) = d;
    }
}

/* A whole step of PINF's formats (Q4_0, IQ4_NL: ld_run_raw<1>'s words) from one base: block u of the
 * step at blk0 + uu * BSTR * bsize, uu = u where u <= ub (the blocks below nb), else 0 (the step's
 * first block, as the clamped fetch_w reads; CTA-uniform), so the NBS blocks' loads are three base
 * pointers (the block, its aligned code words, its 2-byte half) with selected constant offsets
 * instead of a clamped index, a product and two 64-bit sums a block. The same
 * words as fetch_w<FMT>(r[u], part, wr, b + BSTR u) (ld_run_raw's halves, run_sh's shift): a step of
 * BSTR * bsize bytes keeps the alignment mod 4 where it is a multiple of 4 (ORD 2: 32 blocks), else
 * (ORD 3, 18-byte blocks) flips it with u's parity, a constant per u. */
template <int FMT, int NBS, int BSTR>
static __device__ __forceinline__ void fetch_step_pin(mm_wraw *r, int part, const uint8_t *blk0, int ub) {
    static_assert(FMT == TYPE_Q4_0 || FMT == TYPE_IQ4_NL, "mm: PINF's formats (one code word a part)");
    static_assert(offsetof_i(block_q4_0, qs) == offsetof_i(block_iq4_nl, qs), "mm: Q4_0 / IQ4_NL: qs after d");
    constexpr int ST = BSTR * wfmt<FMT>::bsize;
    const uint8_t *p0 = blk0 + offsetof_i(block_q4_0, qs) + 4 * part;
    const int odd0 = (int)((uintptr_t)p0 & 2u);   /* the part's 4 bytes keep it: as run_sh(blk + qoff) */
#pragma unroll
    for (int u = 0; u < NBS; u++) {
        const int uu = u <= ub ? u : 0;   /* CTA-uniform */
        const int odd = ST % 4 == 0 ? odd0 : odd0 ^ ((uu * ST) & 2);
        const uint8_t *p = p0 + uu * ST;
        r[u].q[0] = *(const uint32_t *)(p - odd);
        r[u].q[1] = ld_u16(p + (odd ? 2 : 0));
        r[u].sh = (uint32_t)odd * 8u;
        r[u].dd = (uint32_t)ld_u16(blk0 + uu * ST);
    }
}

/* fetch_w's raw halves joined (run_finish), as each format's fetch_w loaded them */
template <int FMT>
static __device__ __forceinline__ void wraw_finish(mm_wraw &r) {
    if constexpr (FMT == TYPE_Q4_0 || FMT == TYPE_Q5_0 || FMT == TYPE_IQ4_NL || FMT == TYPE_Q2_0) {
        run_finish<1>(r.q, r.sh);
        if constexpr (FMT == TYPE_Q5_0) run_finish<1>(r.h, r.sh);
    } else if constexpr (FMT == TYPE_Q8_0) {
        run_finish<2>(r.q, r.sh);
    }
    (void)r;
}
template <int FMT, bool R16 = false, bool SC = false>   /* SC: Q4_0's codes scaled (mm_sc) */
static __device__ __forceinline__ void store_w(mm_tile2<mmf<FMT>::QK> &s, int i, int part, mm_wraw &r, bool valid,
                                               bool wco = false) {
    constexpr int QK = mmf<FMT>::QK;
    static_assert(!R16 || QK == 256, "mm: R16 is for the 256-value formats");
    int8_t *dst = s.w[i];
    [[maybe_unused]] uint32_t W[R16 ? 16 : 1];   /* R16: the part's words, stored by st_region16 */
    if (!valid) {
        for (int k = part * 4; k < QK; k += 16) st_w(dst + k, 0);
        if (part == 0) { s.dw[i] = 0.0f; s.mw[i] = 0.0f; }
        if (QK == 256)
            for (int j = part * 4; j < part * 4 + 4; j++) { s.sc[i][j] = 0; s.mn[i][j] = 0; }
        return;
    }
    wraw_finish<FMT>(r);   /* the raw halves joined here, after the step's MMAs */
    if constexpr (FMT == TYPE_Q4_0 || FMT == TYPE_Q4_1 || FMT == TYPE_Q5_0 || FMT == TYPE_Q5_1) {
        constexpr bool Q5 = FMT == TYPE_Q5_0 || FMT == TYPE_Q5_1;
        constexpr bool ONE = FMT == TYPE_Q4_1 || FMT == TYPE_Q5_1;
        uint32_t lo, hi;
        if constexpr (SC && FMT == TYPE_Q4_0) {   /* byte 16 (q - 8) = (q ^ 8) << 4 as s8 */
            const uint32_t y = r.q[0] ^ 0x88888888u;
            lo = (y << 4) & 0xF0F0F0F0u; hi = y & 0xF0F0F0F0u;
        } else {
            lo = r.q[0] & 0x0F0F0F0Fu; hi = (r.q[0] >> 4) & 0x0F0F0F0Fu;
            if (Q5) {
                lo |= spread4(r.h[0] >> (4 * part)) << 4;
                hi |= spread4(r.h[0] >> (16 + 4 * part)) << 4;
            }
            if (!ONE) {
                const uint32_t off = Q5 ? 0x10101010u : 0x08080808u;
                lo = __vsub4(lo, off); hi = __vsub4(hi, off);
            }
        }
        st_w(dst + 4 * part, lo);
        st_w(dst + 16 + 4 * part, hi);
        if (part == 0) {
            if (ONE) { s.dw[i] = h2f((uint16_t)r.dd); s.mw[i] = h2f((uint16_t)(r.dd >> 16)); }
            else { s.dw[i] = h2f((uint16_t)r.dd); s.mw[i] = 0.0f; }
        }
    } else if constexpr (FMT == TYPE_Q2_0) {   /* the word's 16 codes c - 1 in weight order (df_q2_0_word) */
        uint32_t q[4];
        df_q2_0_word(r.q[0], q);
#pragma unroll
        for (int k = 0; k < 4; k++) st_w(dst + 16 * part + 4 * k, q[k]);
        if (part == 0) { s.dw[i] = h2f((uint16_t)r.dd); s.mw[i] = 0.0f; }
    } else if constexpr (FMT == TYPE_Q8_0) {
        st_w(dst + 8 * part, r.q[0]);
        st_w(dst + 8 * part + 4, r.q[1]);
        if (part == 0) { s.dw[i] = h2f((uint16_t)r.dd); s.mw[i] = 0.0f; }
    } else if constexpr (FMT == TYPE_Q6_K) {
        const int nib = 4 * (part % 2);
#pragma unroll
        for (int w = 0; w < 16; w++) {
            /* values 64p + 4w .. + 3: high bits from qh[(4w) % 32 ..] at shift 2 (2 (p % 2) + w / 8) */
            const int sh = 2 * (2 * (part % 2) + w / 8);
            uint32_t q = ((r.q[w] >> nib) & 0x0F0F0F0Fu) | ((r.h[w % 8] >> sh) & 0x03030303u) << 4;
            if constexpr (R16) W[w] = __vsub4(q, 0x20202020u);
            else st_w(dst + 64 * part + 4 * w, __vsub4(q, 0x20202020u));
        }
        if constexpr (R16) st_region16(dst + 64 * part, W, part);
        if (part == 0) { s.dw[i] = h2f((uint16_t)r.dd); s.mw[i] = 0.0f; }
        if (part < 2)
#pragma unroll
            for (int jj = 0; jj < 8; jj++) s.sc[i][part * 8 + jj] = (int8_t)(r.s[jj / 4] >> (8 * (jj % 4)));
    } else if constexpr (FMT == TYPE_IQ4_NL || FMT == TYPE_MXFP4) {
        const uint32_t q = r.q[0];
        uint32_t lo, hi;
        if (FMT == TYPE_IQ4_NL) { lo = lut16<LUT_IQ4NL>(q); hi = lut16<LUT_IQ4NL>(q >> 4); }
        else { lo = lut16<LUT_MXFP4>(q); hi = lut16<LUT_MXFP4>(q >> 4); }
        st_w(dst + 4 * part, lo);
        st_w(dst + 16 + 4 * part, hi);
        if (part == 0) { s.dw[i] = FMT == TYPE_IQ4_NL ? h2f((uint16_t)r.dd) : mxfp4_e8m0_half_dev(r.dd); s.mw[i] = 0.0f; }
    } else if constexpr (FMT == TYPE_Q2_K || FMT == TYPE_Q3_K) {
        constexpr bool Q3 = FMT == TYPE_Q3_K;
        const int sh = 4 * (part % 2);
#pragma unroll
        for (int w = 0; w < 8; w++) {
            uint32_t lo = (r.q[w] >> sh) & 0x03030303u, hi = (r.q[w] >> (sh + 2)) & 0x03030303u;
            if (Q3) {   /* hmask bit set: +0, clear: -4 */
                lo = __vsub4(lo | ((r.h[w] >> (2 * part)) & 0x01010101u) << 2, 0x04040404u);
                hi = __vsub4(hi | ((r.h[w] >> (2 * part + 1)) & 0x01010101u) << 2, 0x04040404u);
            }
            if constexpr (R16) { W[w] = lo; W[8 + w] = hi; }
            else {
                st_w(dst + 64 * part + 4 * w, lo);
                st_w(dst + 64 * part + 32 + 4 * w, hi);
            }
        }
        if constexpr (R16) st_region16(dst + 64 * part, W, part);
        if (Q3) {
            if (part == 0) { s.dw[i] = h2f((uint16_t)r.dd); s.mw[i] = 0.0f; }
#define SB(q) ((int)((((q) < 4 ? r.s[0] : (q) < 8 ? r.s[1] : r.s[2]) >> (8 * ((q) & 3))) & 255u))
#pragma unroll
            for (int jj = 0; jj < 4; jj++) {   /* 6-bit scales: low nibbles in bytes 0..7, high pairs in 8..11 */
                const int j = part * 4 + jj;
                const int lo = j < 8 ? SB(j) & 15 : SB(j - 8) >> 4, hi = (SB(8 + j % 4) >> (2 * (j / 4))) & 3;
                s.sc[i][j] = (int8_t)((lo | hi << 4) - 32);
                s.mn[i][j] = 0;
            }
#undef SB
        } else {
            if (part == 0) { s.dw[i] = h2f((uint16_t)r.dd); s.mw[i] = h2f((uint16_t)(r.dd >> 16)); }
#pragma unroll
            for (int jj = 0; jj < 4; jj++) {   /* scale byte: low nibble scale, high nibble min */
                const int b8 = (int)((r.s[0] >> (8 * jj)) & 255u);
                s.sc[i][part * 4 + jj] = (int8_t)(b8 & 15);
                s.mn[i][part * 4 + jj] = (int8_t)(b8 >> 4);
            }
        }
    } else if constexpr (mmf<FMT>::kind == 3) {
        if constexpr (FMT == TYPE_IQ3_XXS || FMT == TYPE_IQ2_XXS) {
            if (wco) {   /* iq_group8's and iq_mult's operations on the words fetch_w kept */
#pragma unroll
                for (int gg = 0; gg < 8; gg++) {
                    const int l = gg & 3;
                    uint32_t w0, w1;
                    if (FMT == TYPE_IQ3_XXS) {
                        const uint32_t sg = d_ksigns[(r.h[gg >> 2] >> (7 * l)) & 127], q = r.q[gg >> 1] >> (16 * (gg & 1));
                        w0 = apply_signs4(ld_u32(d_iq3xxs_grid[q & 255]), sg);
                        w1 = apply_signs4(ld_u32(d_iq3xxs_grid[(q >> 8) & 255]), sg >> 4);
                    } else {
                        const uint8_t *row = d_iq2xxs_grid[(r.q[2 * (gg >> 2)] >> (8 * l)) & 255];
                        const uint32_t sg = d_ksigns[(r.q[2 * (gg >> 2) + 1] >> (7 * l)) & 127];
                        w0 = apply_signs4(grid8_lo(row), sg);
                        w1 = apply_signs4(grid8_hi(row), sg >> 4);
                    }
                    if constexpr (R16) { W[2 * gg] = w0; W[2 * gg + 1] = w1; }
                    else {
                        st_w(dst + 64 * part + 8 * gg, w0);
                        st_w(dst + 64 * part + 8 * gg + 4, w1);
                    }
                }
                if constexpr (R16) st_region16(dst + 64 * part, W, part);
                if (part == 0) { s.dw[i] = h2f((uint16_t)r.dd); s.mw[i] = 0.0f; }
#pragma unroll
                for (int jj = 0; jj < 2; jj++)
                    s.sc[i][2 * part + jj] = (int8_t)(2 * (int)((FMT == TYPE_IQ3_XXS ? r.h[jj] : r.q[2 * jj + 1]) >> 28) + 1);
                return;
            }
        }
        /* part p: groups of 8 weights 8p .. 8p + 7 (values 64p .. 64p + 63), the matvec's decode */
#pragma unroll
        for (int gg = 0; gg < 8; gg++) {
            uint32_t w0, w1;
            iq_group8<FMT>(r.blk, 8 * part + gg, &w0, &w1);
            if constexpr (R16) { W[2 * gg] = w0; W[2 * gg + 1] = w1; }
            else {
                st_w(dst + 64 * part + 8 * gg, w0);
                st_w(dst + 64 * part + 8 * gg + 4, w1);
            }
        }
        if constexpr (R16) st_region16(dst + 64 * part, W, part);
        if (part == 0) { s.dw[i] = iq_d<FMT>(r.blk); s.mw[i] = 0.0f; }
        if (mmf<FMT>::SUB == 32) {   /* the multiplier of 16-value unit 2 j (= that of 2 j + 1) */
#pragma unroll
            for (int jj = 0; jj < 2; jj++) s.sc[i][2 * part + jj] = (int8_t)iq_mult<FMT>(r.blk, 2 * (2 * part + jj));
        } else {
#pragma unroll
            for (int jj = 0; jj < 4; jj++) s.sc[i][4 * part + jj] = (int8_t)iq_mult<FMT>(r.blk, 4 * part + jj);
        }
    } else {
        constexpr bool Q5 = FMT == TYPE_Q5_K;
#pragma unroll
        for (int w = 0; w < 8; w++) {
            uint32_t lo = r.q[w] & 0x0F0F0F0Fu, hi = (r.q[w] >> 4) & 0x0F0F0F0Fu;
            /* code word c = 8 p + w (or, wco, 4 w + p): values 64 (c / 8) + 4 (c % 8) .., high bits at 2 (c / 8) */
            const int c = wco ? 4 * w + part : 8 * part + w, g = c >> 3, o = 64 * g + 4 * (c & 7);
            if (Q5) {
                const uint32_t h = wco ? r.h[w & 1] : r.h[w];
                lo |= ((h >> (2 * g)) & 0x01010101u) << 4;
                hi |= ((h >> (2 * g + 1)) & 0x01010101u) << 4;
            }
            if (R16 && !wco) { W[w] = lo; W[8 + w] = hi; }   /* o = 64 p + 4 w */
            else {
                st_w(dst + o, lo);
                st_w(dst + o + 32, hi);
            }
        }
        if (R16 && !wco) st_region16(dst + 64 * part, W, part);
        if (part == 0) { s.dw[i] = h2f((uint16_t)r.dd); s.mw[i] = h2f((uint16_t)(r.dd >> 16)); }
        if (part < 2) {
            /* byte q of the 12 packed scale bytes (kq_scale_min's layout) from the three words; part 0
             * takes scales 0..3, part 1 scales 4..7, each as one 4-byte store of scales and one of mins
             * (the per-j test on a run-time part compiled to a branch per scale) */
#define SB(q) ((uint32_t)((((q) < 4 ? r.s[0] : (q) < 8 ? r.s[1] : r.s[2]) >> (8 * ((q) & 3))) & 255u))
            uint32_t scw = 0, mnw = 0;
            if (part == 0) {
#pragma unroll
                for (int j = 0; j < 4; j++) { scw |= (SB(j) & 63u) << (8 * j); mnw |= (SB(j + 4) & 63u) << (8 * j); }
            } else {
#pragma unroll
                for (int j = 4; j < 8; j++) {
                    scw |= ((SB(j + 4) & 15u) | (SB(j - 4) >> 6) << 4) << (8 * (j - 4));
                    mnw |= ((SB(j + 4) >> 4) | (SB(j) >> 6) << 4) << (8 * (j - 4));
                }
            }
            *(uint32_t *)&s.sc[i][4 * part] = scw;
            *(uint32_t *)&s.mn[i][4 * part] = mnw;
#undef SB
        }
    }
}

static __device__ __forceinline__ void cp4(void *dst_smem, const void *src) {
    unsigned d = (unsigned)__cvta_generic_to_shared(dst_smem);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(d), "l"(src) : "memory");
}
static __device__ __forceinline__ void cp_wait(void) { asm volatile("cp.async.wait_all;" ::: "memory"); }
/* n = 4: the word copied; n = 0: zeros written (cp.async's source size: no bytes read) */
static __device__ __forceinline__ void cp4z(uint32_t d, const void *src, uint32_t n) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(d), "l"(src), "r"(n) : "memory");
}
/* the same, 8 bytes (n = 8 or 0) */
static __device__ __forceinline__ void cp8z(uint32_t d, const void *src, uint32_t n) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;" ::"r"(d), "l"(src), "r"(n) : "memory");
}

/* activation block b of column row ar into tile column j, by cp.async (zeros when invalid).
 * aco (STRATA_CUDA_MM_WPRE bit 2, QK 32; QK 256 takes issue_a_warp instead): the four parts of a
 * column copy code words 4 w + p (16 consecutive bytes a column and copy) instead of words 2 p,
 * 2 p + 1 (pieces 8 bytes apart). The same bytes to the same places. */
template <int FMT>
static __device__ __forceinline__ void issue_a(mm_tile2<mmf<FMT>::QK> &s, int j, int part, const uint8_t *ar, int b, bool valid,
                                               bool aco = false) {
    constexpr int QK = mmf<FMT>::QK;
    int8_t *dst = s.a[j];
    if constexpr (QK == 32) {   /* one run of copies, no branch: a column past T zero-filled by the source size */
        constexpr bool ONE = mmf<FMT>::kind == 2;
        const uint32_t n = valid ? 4u : 0u, d = (uint32_t)__cvta_generic_to_shared(dst);
        const uint8_t *a = ar + (size_t)b * (ONE ? sizeof_i(act_q8_1) : sizeof_i(act_q8_0));
        const int qoff = ONE ? offsetof_i(act_q8_1, qs) : offsetof_i(act_q8_0, qs);
        const int o0 = aco ? 4 * part : 8 * part, o1 = aco ? 16 + 4 * part : 8 * part + 4;
        cp4z(d + o0, a + qoff + o0, n);
        cp4z(d + o1, a + qoff + o1, n);
        if (part == 0 || (ONE && part == 1))   /* d (part 0), s (part 1, Q4_1 / Q5_1) */
            cp4z((uint32_t)__cvta_generic_to_shared(part == 0 ? &s.da[j] : &s.sa[j]),
                 part == 0 ? a : a + (ONE ? offsetof_i(act_q8_1, s) : 0), n);
        if (!ONE && part == 1) s.sa[j] = 0.0f;
        return;
    }
    if constexpr (QK == 64) {   /* act_q8_2: part p's 16 codes by two 8-byte copies (the blocks are 8-byte aligned) */
        const uint32_t n = valid ? 8u : 0u, d = (uint32_t)__cvta_generic_to_shared(dst);
        const uint8_t *a = ar + (size_t)b * sizeof_i(act_q8_2) + offsetof_i(act_q8_2, qs) + 16 * part;
        cp8z(d + 16 * part, a, n);
        cp8z(d + 16 * part + 8, a + 8, n);
        if (part == 0) cp4z((uint32_t)__cvta_generic_to_shared(&s.da[j]), ar + (size_t)b * sizeof_i(act_q8_2), valid ? 4u : 0u);
        if (part == 1) s.sa[j] = 0.0f;
        return;
    }
    if (!valid) {
        for (int k = part * 4; k < QK; k += 16) st_w(dst + k, 0);
        if (part == 0) { s.da[j] = 0.0f; s.sa[j] = 0.0f; }
        if (part < 2) st_w((int8_t *)&s.bsum[j][part * 8], 0), st_w((int8_t *)&s.bsum[j][part * 8 + 2], 0),
                                   st_w((int8_t *)&s.bsum[j][part * 8 + 4], 0), st_w((int8_t *)&s.bsum[j][part * 8 + 6], 0);
        return;
    }
    {   /* QK 256 (issue_a_warp takes these copies with WPRE bit 2) */
        const uint8_t *a = ar + (size_t)b * sizeof_i(act_q8_K);
#pragma unroll
        for (int w = 0; w < 16; w++) cp4(dst + 64 * part + 4 * w, a + offsetof_i(act_q8_K, qs) + 64 * part + 4 * w);
        if (part == 0) cp4(&s.da[j], a);
        if (part < 2)
#pragma unroll
            for (int w = 0; w < 4; w++) cp4(&s.bsum[j][part * 8 + 2 * w], a + offsetof_i(act_q8_K, bsums) + 16 * part + 4 * w);
    }
}

/* STRATA_CUDA_MM_WPRE bit 8 (ORD 2 X, the 32-value formats, plain launches that are not split): the
 * activations re-laid before the matmul by mm_act_tile_kernel in the kernel's step order, so that a
 * step's copies read one contiguous chunk by 16-byte copies (ncu 2026-12-05, Q4_0 m 4096 k 14336 n
 * 512: the L1 data pipe 85 % busy, issue_a's 4-byte copies eight wavefronts each, 768 of a step's
 * ~2,200). The steps of ORD 2 X: lane l's blocks l + 128 q + 32 u (u = 0..3); chunk 32 q + l of a
 * column tile holds them: qs [u][h][j] 16-byte halves (j the tile column), then d [u][j], then (Q4_1
 * / Q5_1) s [u][j]. Blocks past nb and columns past T are zeros (issue_a's zero-fill). The same bytes
 * into the same tile places, so the same bits. */
#define MM_ATL_NCH(nb) ((((nb) + 127) / 128) * 32)   /* chunks a column tile */
template <bool ONE> struct mm_atl {
    static constexpr int BS = ONE ? sizeof_i(act_q8_1) : sizeof_i(act_q8_0);   /* an activation block */
    static constexpr int QO = ONE ? offsetof_i(act_q8_1, qs) : offsetof_i(act_q8_0, qs);
    static constexpr int DO = MM_BN * 4 * 32, SO = DO + MM_BN * 4 * 4;         /* a chunk's d, s */
    static constexpr int CH = ONE ? SO + MM_BN * 4 * 4 : SO;                   /* a chunk's bytes */
};
template <bool ONE>
__global__ void __launch_bounds__(256)
mm_act_tile_kernel(const uint8_t *__restrict__ act, size_t as, int T, int nb, uint8_t *__restrict__ out) {
    PDL_WAIT();
    constexpr int CH = mm_atl<ONE>::CH, QO = mm_atl<ONE>::QO, DO = mm_atl<ONE>::DO, SO = mm_atl<ONE>::SO;
    const int c = blockIdx.x, j = threadIdx.x & 63, u = threadIdx.x >> 6;
    const int b = (c / 32) * 128 + (c % 32) + 32 * u, col = (int)blockIdx.y * MM_BN + j;
    uint8_t *ch = out + ((size_t)blockIdx.y * gridDim.x + c) * CH;
    uint32_t w[8 + 2] = { 0 };   /* the 32 codes, d, s */
    if (b < nb && col < T) {
        const uint32_t *a = (const uint32_t *)(act + (size_t)col * as + (size_t)b * mm_atl<ONE>::BS);
#pragma unroll
        for (int i = 0; i < 8; i++) w[i] = a[QO / 4 + i];
        w[8] = a[0];
        if (ONE) w[9] = a[1];
    }
#pragma unroll
    for (int h = 0; h < 2; h++)
        *(uint4 *)(ch + 16 * ((u * 2 + h) * 64 + j)) = make_uint4(w[4 * h], w[4 * h + 1], w[4 * h + 2], w[4 * h + 3]);
    *(uint32_t *)(ch + DO + 4 * (u * 64 + j)) = w[8];
    if (ONE) *(uint32_t *)(ch + SO + 4 * (u * 64 + j)) = w[9];
}
/* the step at block bb (lane bb % 32, quarter bb / 128): its chunk into tiles t0 .. t0 + 3, by the
 * CTA's 256 threads; eight lanes of a phase meet eight consecutive tile rows of one half (48-byte
 * rows: 16-byte slots 3 j + h, distinct mod 8) */
template <bool ONE>
static __device__ __forceinline__ void mm_atl_copy(mm_tile2<32> *tiles, int t0, const uint8_t *act, int nb, int bb, int tid) {
    const uint8_t *ch = act + ((size_t)blockIdx.y * MM_ATL_NCH(nb) + (bb / 128) * 32 + bb % 32) * mm_atl<ONE>::CH;
#pragma unroll
    for (int i = 0; i < 2; i++) {
        const int p = tid + 256 * i;
        cp_async16z(&tiles[t0 + (p >> 7)].a[p & 63][16 * ((p >> 6) & 1)], ch + 16 * p, 16);
    }
    if (tid < 64) cp_async16z(&tiles[t0 + (tid >> 4)].da[4 * (tid & 15)], ch + mm_atl<ONE>::DO + 16 * tid, 16);
    else if (ONE && tid < 128) cp_async16z(&tiles[t0 + ((tid - 64) >> 4)].sa[4 * (tid & 15)], ch + mm_atl<ONE>::SO + 16 * (tid - 64), 16);
}

/* aco for the 256-value formats: warp w copies the act_q8_K blocks of tile columns 8 w .. 8 w + 7,
 * a column's 73 words (d, the 256 codes, the 16 sums: one 292-byte block) by three copies of up to
 * 32 consecutive words, so a warp's copy reads 128 consecutive bytes (two or three sectors' lines)
 * instead of 8 columns' scattered pieces (issue_a's 4-byte pieces: ~8 L1 wavefronts a copy, ncu
 * 2026-12-04). Lane l's three destinations (word 32 i + l of the block: d, a code word, a sums
 * word, or none): dsto[i] for column 0 of the tile, dsts[i] the step per column. The same bytes
 * to the same places as issue_a. */
struct mm_acw { uint32_t dsto[3], dsts[3]; };
static __device__ __forceinline__ mm_acw mm_acw_setup(const mm_tile2<256> &s, int lane) {
    mm_acw w;
#pragma unroll
    for (int i = 0; i < 3; i++) {
        const int wd = 32 * i + lane;
        if (wd == 0) { w.dsto[i] = (uint32_t)__cvta_generic_to_shared(&s.da[0]); w.dsts[i] = 4; }
        else if (wd <= 64) { w.dsto[i] = (uint32_t)__cvta_generic_to_shared(&s.a[0][4 * (wd - 1)]); w.dsts[i] = 256 + MM_PAD; }
        else { w.dsto[i] = (uint32_t)__cvta_generic_to_shared(&s.bsum[0][2 * (wd - 65)]); w.dsts[i] = 2 * 16; }
    }
    return w;
}
/* into tile s; the destinations are recomputed per call (the lane's value hidden from the
 * compiler, so they are not hoisted into registers held across the kernel's step loop). A column
 * past T is zero-filled by the copies' source size instead of a branch to stores, and the 24 copies
 * of a warp's 8 columns run unrolled: ptxas puts three never-executed `@!PT LDS RZ, [RZ]` before
 * each run of consecutive LDGSTS, and with a branch around every copy that was nine a column (ncu
 * 2026-12-05, Q4_K 16384 x 2048 x 512: 8.3 M of the kernel's 156 M warp instructions). */
static __device__ __forceinline__ void issue_a_warp(const mm_tile2<256> &s, int warp, int lane, const uint8_t *act,
                                                    size_t as, int colbase, int col0, int T, int b) {
    static_assert(sizeof(act_q8_K) == 292 && offsetof_i(act_q8_K, qs) == 4 && offsetof_i(act_q8_K, bsums) == 260,
                  "act_q8_K: 73 words");
    int l = lane;
    asm volatile("" : "+r"(l));
    const mm_acw w = mm_acw_setup(s, l);
#pragma unroll
    for (int cc = 0; cc < 8; cc++) {
        const int j = 8 * warp + cc, c = col0 + j;
        const bool valid = c < T;
        const uint32_t n = valid ? 4u : 0u;
        const uint8_t *a = act + (size_t)(colbase + (valid ? c : 0)) * as + (size_t)b * sizeof(act_q8_K) + 4 * lane;
        cp4z(w.dsto[0] + (uint32_t)j * w.dsts[0], a, n);
        cp4z(w.dsto[1] + (uint32_t)j * w.dsts[1], a + 128, n);
        if (lane <= 8) cp4z(w.dsto[2] + (uint32_t)j * w.dsts[2], a + 256, n);   /* words 64 .. 72 */
    }
}

/* STRATA_CUDA_MM_WPRE, bits: 1 the two-tile kernel's Q4_K / Q5_K code words four parts to 16
 * consecutive bytes (fetch_w's wco; else four words 32 bytes apart) and its IQ3_XXS / IQ2_XXS
 * bytes fetched into registers a step ahead (else decoded from global memory after the MMAs);
 * 2 its activation codes copied four parts to 16 consecutive bytes (issue_a's aco); 0 the first
 * loads; 4 in the same instances Q4_K / Q5_K code words by 16-byte loads (fetch_w's v16) where the
 * blocks are 16-byte aligned. Same values in the same places: same bits. */
static int mm_wpre = -1;
extern "C" void cuda_mm_wpre_set(int bits) { mm_wpre = bits < 0 ? -1 : bits & 15; }   /* -1: the switch's again */

#define MM_O2(mi, ni, e) (((mi) * NI + (ni)) * 4 + (e))

/* ---- the compute of one block step ---------------------------------------------------------------
 * Fragments by ldmatrix (m8n8.x4.b16): four 8 x 8 matrices of 16-bit elements, for int8 data four
 * matrices of 8 rows x 16 bytes. Lanes 8m .. 8m + 7 give the shared addresses of matrix m's rows 0..7
 * (16-byte aligned); lane l receives in register m row l / 4, bytes 4 (l % 4) .. 4 (l % 4) + 3, of
 * matrix m. With g = l / 4 and tq = l % 4 these are the MMAs' fragments (PTX ISA, mma .s8 row.col):
 *   m16n8k32  A (16 rows x 32 k): a0 = A[g][4tq..+3], a1 = A[g+8][4tq..], a2 = A[g][16+4tq..], a3 = A[g+8][16+4tq..]
 *             B (32 k x 8 cols):  b0 = B[4tq..+3][g], b1 = B[16+4tq..][g]   (B[k][col] = s.a[col][k])
 *   m16n8k16  A: a0 = A[g][4tq..+3], a1 = A[g+8][4tq..];  B: b0 = B[4tq..+3][g]
 *   D (both)  d0, d1 = (row g, cols 2tq, 2tq+1); d2, d3 = (row g+8, the same cols)
 * So one x4 whose matrix m holds the 8 rows (or columns) and 16 bytes that register m of a fragment
 * names replaces four 32-bit loads. Row address of lane l, and what the four registers are
 * (R, C: the warp's first row and column; j: the 32-value slice, or the 16-value sub-block):
 *   k32 A, rows R..R+15:      row R + (l & 15), byte 32j + 16 (l >> 4)              -> a0 a1 a2 a3
 *   k32 B, NI 2, cols C..C+15: col C + 8 (l >> 4) + (l & 7), byte 32j + 16 ((l >> 3) & 1)
 *                                                                  -> (ni 0: b0 b1) (ni 1: b0 b1)
 *   k32 B, NI 1, slices j, j+1: col C + (l & 7), byte 32j + 16 (l >> 3)  -> (j: b0 b1) (j+1: b0 b1)
 *                               (QK 32, one slice: .x2, lanes 0..15's addresses)
 *   k16 A, rows R..R+31:      row R + l, byte 16j                   -> (mi 0: a0 a1) (mi 1: a0 a1)
 *   k16 B, NI 2, j and j+1:   col C + (l & 15), byte 16j + 16 (l >> 4)   -> (j: ni 0, ni 1) (j+1: ..)
 *   k16 B, NI 1, j .. j+3:    col C + (l & 7), byte 16j + 16 (l >> 3)    -> j, j+1, j+2, j+3
 * Rows of w and a are QK + MM_PAD = 48 or 272 bytes apart: 8 consecutive rows fall on 8 distinct
 * groups of 4 banks, so every matrix is one conflict-free wavefront.
 *
 * Per thread the outputs are rows R + g + 8i (i = 2 mi + h, h = e >> 1) and columns
 * C + 8 ni + 2 tq + (e & 1): the integer scales of its 4 rows are read once per step (a 32-bit
 * word of s.sc per row and 4 scales, each byte taken out by one prmt), the rows' d, m and the
 * columns' d, s once per step too (float2 for the column pairs). The min term of Q4_K / Q5_K / Q2_K,
 *   M(r, c) = sum_k mn'(r, k) * bsum(c, k)   over the 16 bsums of the block
 * (mn'(r, k) = mn[r][k / 2] for Q4_K / Q5_K, whose mins are per 32 values: the reference's
 * sum_j mn_j (bsum_2j + bsum_2j+1); mn[r][k] for Q2_K), is a 16 x 16 by 16 x 8 integer product:
 * two m16n8k16 MMAs per fragment, the bsums (int16) split exactly into 256 hi + lo (hi = the high
 * byte, signed: s8; lo = the low byte, unsigned: u8), M = lo-MMA with the accumulator 256 * hi-MMA.
 * Every value is an integer far inside int32 (|mn| <= 63, |bsum| <= 32767: 16 * 63 * 32767 < 2^25),
 * so M is the reference's integer. The float operations per output are the reference's, unchanged. */
static __device__ __forceinline__ uint32_t smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }
static __device__ __forceinline__ void ldsm_x4(uint32_t *d, uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3]) : "r"(addr));
}
static __device__ __forceinline__ void ldsm_x2(uint32_t *d, uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n" : "=r"(d[0]), "=r"(d[1]) : "r"(addr));
}
/* d = a (s8) x b (u8 when BU8, else s8) + c, m16n8k16 */
template <bool BU8>
static __device__ __forceinline__ void mma_k16_acc(int *d, const uint32_t *a, uint32_t b, const int *c) {
    if constexpr (BU8)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.s32.s8.u8.s32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%8,%9,%10};\n"
                     : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(b), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]));
    else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%8,%9,%10};\n"
                     : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(b), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]));
}
/* byte k of w, sign-extended (an int8 scale): one prmt (selector nibbles 8 + k: byte k's sign) */
static __device__ __forceinline__ int sbyte(uint32_t w, int k) {
    int r;
    if (k == 0) asm("prmt.b32 %0, %1, 0, 0x8880;" : "=r"(r) : "r"(w));
    else if (k == 1) asm("prmt.b32 %0, %1, 0, 0x9991;" : "=r"(r) : "r"(w));
    else if (k == 2) asm("prmt.b32 %0, %1, 0, 0xAAA2;" : "=r"(r) : "r"(w));
    else asm("prmt.b32 %0, %1, 0, 0xBBB3;" : "=r"(r) : "r"(w));
    return r;
}

template <int FMT, int NI, bool MB = false>
static __device__ __forceinline__ void block_step2(const mm_tile2<mmf<FMT>::QK> &s, int wm, int wn, int g, int tq, float *v) {
    constexpr int QK = mmf<FMT>::QK, NS = QK / 32, NO = 8 * NI, KIND = mmf<FMT>::kind, RB = QK + MM_PAD;
    static_assert(!MB || (QK == 32 && (KIND == 0 || KIND == 2)), "mm: the biased conversion is for the 32-value formats");
    const int lane = 4 * g + tq, R = wm * 32, C = wn * 8 * NI;
    const uint32_t wbase = smem_u32(&s.w[0][0]), abase = smem_u32(&s.a[0][0]);
    int S[NO];
#pragma unroll
    for (int o = 0; o < NO; o++) S[o] = 0;
    if constexpr (mmf<FMT>::SUB == 16) {   /* a scale per 16 values: one m16n8k16 per sub-block */
#pragma unroll 1
        for (int q = 0; q < QK / 64; q++) {   /* sub-blocks j = 4q .. 4q + 3 */
            int l = lane;
            asm volatile("" : "+r"(l));   /* the addresses recomputed per iteration, not kept live (or spilled) across the loop */
            const uint32_t pa = wbase + (R + l) * RB;
            const uint32_t pb = NI == 2 ? abase + (C + (l & 15)) * RB + 16 * (l >> 4) : abase + (C + (l & 7)) * RB + 16 * (l >> 3);
            uint32_t scw[4], bf[4][NI];   /* scw[i]: the 4 scales of row R + g + 8i; bf[j - 4q][ni] */
#pragma unroll
            for (int i = 0; i < 4; i++) scw[i] = *(const uint32_t *)&s.sc[R + g + 8 * i][4 * q];
            if constexpr (NI == 2) {
                uint32_t t[4];
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    ldsm_x4(t, pb + 64 * q + 32 * h);
                    bf[2 * h][0] = t[0]; bf[2 * h][1] = t[1]; bf[2 * h + 1][0] = t[2]; bf[2 * h + 1][1] = t[3];
                }
            } else {
                uint32_t t[4];
                ldsm_x4(t, pb + 64 * q);
#pragma unroll
                for (int jj = 0; jj < 4; jj++) bf[jj][0] = t[jj];
            }
#pragma unroll
            for (int jj = 0; jj < 4; jj++) {
                uint32_t af[4];   /* (mi 0: a0 a1) (mi 1: a0 a1) */
                ldsm_x4(af, pa + 16 * (4 * q + jj));
#pragma unroll
                for (int mi = 0; mi < 2; mi++)
#pragma unroll
                    for (int ni = 0; ni < NI; ni++) {
                        int d[4];
                        mma_s8_16x8x16(d, af + 2 * mi, bf[jj][ni]);
#pragma unroll
                        for (int e = 0; e < 4; e++) S[MM_O2(mi, ni, e)] += sbyte(scw[2 * mi + (e >> 1)], jj) * d[e];
                    }
            }
        }
    } else {
        constexpr int JG = NS < 4 ? NS : 4;   /* slices per group: one group for QK 32, two for QK 256 */
#pragma unroll 1
        for (int q = 0; q < NS / JG; q++) {   /* slices j = JG q .. JG q + JG - 1 */
            int l = lane;
            if (NS > 1) asm volatile("" : "+r"(l));   /* as above */
            const uint32_t pa = wbase + (R + (l & 15)) * RB + 16 * (l >> 4) + 32 * JG * q;
            const uint32_t pb = (NI == 2 ? abase + (C + 8 * (l >> 4) + (l & 7)) * RB + 16 * ((l >> 3) & 1)
                                         : abase + (C + (l & 7)) * RB + 16 * (l >> 3)) + 32 * JG * q;
            uint32_t scw[4], bp[4];   /* scw[i]: the scales of slices JG q .. of row R + g + 8i; bp: NI 1, two slices */
            if constexpr (NS > 1 && QK != 64)
#pragma unroll
                for (int i = 0; i < 4; i++) scw[i] = *(const uint32_t *)&s.sc[R + g + 8 * i][JG * q];
#pragma unroll
            for (int jj = 0; jj < JG; jj++) {
                uint32_t bf[NI][2], af[2][4];
                if constexpr (NI == 2) {
                    uint32_t t[4];
                    ldsm_x4(t, pb + 32 * jj);
                    bf[0][0] = t[0]; bf[0][1] = t[1]; bf[NI - 1][0] = t[2]; bf[NI - 1][1] = t[3];
                } else if constexpr (NS == 1) {
                    ldsm_x2(bf[0], pb);
                } else {
                    if (jj % 2 == 0) ldsm_x4(bp, pb + 32 * jj);
                    bf[0][0] = bp[2 * (jj % 2)]; bf[0][1] = bp[2 * (jj % 2) + 1];
                }
#pragma unroll
                for (int mi = 0; mi < 2; mi++) ldsm_x4(af[mi], pa + mi * 16 * RB + 32 * jj);
#pragma unroll
                for (int mi = 0; mi < 2; mi++)
#pragma unroll
                    for (int ni = 0; ni < NI; ni++) {
                        int d[4];
                        if constexpr (MB) mma_s8_16x8x32_c(d, af[mi], bf[ni], mm_sc<FMT>::bias);
                        else mma_s8_16x8x32(d, af[mi], bf[ni]);
#pragma unroll
                        for (int e = 0; e < 4; e++) {
                            const int o = MM_O2(mi, ni, e);
                            if constexpr (NS == 1) S[o] = d[e];
                            else if constexpr (QK == 64) S[o] += d[e];   /* Q2_0: the block's one isum */
                            else S[o] += sbyte(scw[2 * mi + (e >> 1)], jj) * d[e];
                        }
                    }
            }
        }
    }
    constexpr bool MINS = KIND == 1 || KIND == 4;
    uint32_t am[4];   /* the mins: A of the min MMAs, rows R + g + 8i: (mi 0: a0 a1) (mi 1: a0 a1) */
    if constexpr (KIND == 4)
        ldsm_x4(am, smem_u32(&s.mn[R + lane][0]));   /* a0 = mn[row][4tq .. 4tq + 3] */
    else if constexpr (KIND == 1)
#pragma unroll
        for (int i = 0; i < 4; i++)   /* a0 = mn[row][2tq], mn[row][2tq], mn[row][2tq + 1], mn[row][2tq + 1] */
            am[i] = __byte_perm((uint32_t)*(const uint16_t *)&s.mn[R + g + 8 * i][2 * tq], 0u, 0x1100u);
    float dwr[4], mwr[4];
#pragma unroll
    for (int i = 0; i < 4; i++) {
        dwr[i] = s.dw[R + g + 8 * i];
        mwr[i] = MINS || KIND == 2 ? s.mw[R + g + 8 * i] : 0.0f;
    }
#pragma unroll
    for (int ni = 0; ni < NI; ni++) {
        const float2 dac = *(const float2 *)&s.da[C + 8 * ni + 2 * tq];
        const float2 sac = KIND == 2 ? *(const float2 *)&s.sa[C + 8 * ni + 2 * tq] : make_float2(0.0f, 0.0f);
        uint32_t lo = 0, hi = 0;
        if constexpr (MINS) {   /* B of the min MMAs: bsum[col][4tq .. 4tq + 3], low bytes (u8) and high bytes (s8) */
            const uint2 x = *(const uint2 *)&s.bsum[C + 8 * ni + g][4 * tq];
            lo = __byte_perm(x.x, x.y, 0x6420u);
            hi = __byte_perm(x.x, x.y, 0x7531u);
        }
#pragma unroll
        for (int mi = 0; mi < 2; mi++) {
            int M[4];
            if constexpr (MINS) {   /* M = 256 * (mins x hi) + mins x lo */
                const int z[4] = { 0, 0, 0, 0 };
                int h[4];
                mma_k16_acc<false>(h, am + 2 * mi, hi, z);
#pragma unroll
                for (int e = 0; e < 4; e++) h[e] *= 256;
                mma_k16_acc<true>(M, am + 2 * mi, lo, h);
            }
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int o = MM_O2(mi, ni, e), i = 2 * mi + (e >> 1);
                const float dw = dwr[i], da = (e & 1) ? dac.y : dac.x;
                float p;
                if constexpr (MINS)   /* Q4_K / Q5_K: mins per 32 values; Q2_K: per 16 */
                    p = __fsub_rn(__fmul_rn(__int2float_rn(S[o]), __fmul_rn(dw, da)),
                                  __fmul_rn(__int2float_rn(M[e]), __fmul_rn(mwr[i], da)));
                else if constexpr (KIND == 3)
                    p = __fmul_rn(__fmul_rn(__int2float_rn(S[o]), iq_fmt<FMT>::k()), __fmul_rn(dw, da));
                else if constexpr (KIND == 2)
                    p = __fadd_rn(__fmul_rn(mm_i2f<MB, FMT>(S[o]), __fmul_rn(dw, da)), __fmul_rn(mwr[i], (e & 1) ? sac.y : sac.x));
                else
                    p = __fmul_rn(mm_i2f<MB, FMT>(S[o]), __fmul_rn(dw, da));
                v[o] = __fadd_rn(v[o], p);
            }
        }
    }
}

/* position k's lane value c into the binary counter r0..r4 (r4 ends as the result); c NULL: a
 * lane without a block (+0.0). The level (k's trailing ones) is decided once per push, outside the
 * outputs' loop: each output then runs straight-line adds into the register it ends in (the
 * per-output form with a test per level compiled to ~6 instructions a level an output, and a
 * row of 8 super-blocks pushes 4 positions a step). The same adds in the same order as the
 * per-level form: x = c; x = r0 + x; x = r1 + x; ... */
#define CP_CASE(EXPR0)                                                                                        \
    switch (__ffs(~k) - 1) {                                                                                  \
    case 0:                                                                                                   \
        _Pragma("unroll") for (int o = 0; o < NO; o++) r0[o] = EXPR0;                                          \
        break;                                                                                                \
    case 1:                                                                                                   \
        _Pragma("unroll") for (int o = 0; o < NO; o++) r1[o] = __fadd_rn(r0[o], EXPR0);                        \
        break;                                                                                                \
    case 2:                                                                                                   \
        _Pragma("unroll") for (int o = 0; o < NO; o++) r2[o] = __fadd_rn(r1[o], __fadd_rn(r0[o], EXPR0));      \
        break;                                                                                                \
    case 3:                                                                                                   \
        _Pragma("unroll") for (int o = 0; o < NO; o++)                                                        \
            r3[o] = __fadd_rn(r2[o], __fadd_rn(r1[o], __fadd_rn(r0[o], EXPR0)));                              \
        break;                                                                                                \
    case 4:                                                                                                   \
        _Pragma("unroll") for (int o = 0; o < NO; o++)                                                        \
            r4[o] = __fadd_rn(r3[o], __fadd_rn(r2[o], __fadd_rn(r1[o], __fadd_rn(r0[o], EXPR0))));            \
        break;                                                                                                \
    default: /* k = 31 */                                                                                     \
        _Pragma("unroll") for (int o = 0; o < NO; o++)                                                        \
            r4[o] = __fadd_rn(r4[o], __fadd_rn(r3[o], __fadd_rn(r2[o], __fadd_rn(r1[o], __fadd_rn(r0[o], EXPR0))))); \
        break;                                                                                                \
    }
template <int NO>
static __device__ __forceinline__ void canon_push(int k, const float *c, float *r0, float *r1, float *r2, float *r3,
                                                  float *r4) {
    if (c) { CP_CASE(c[o]) }
    else { CP_CASE(0.0f) }
}
#undef CP_CASE

/* position k is complete (the walk moved on to nk): its value v into the counter, +0.0 for the
 * positions between k and nk (their lanes hold no block), and v zeroed for the next position;
 * positions count from the CTA's first one, kb */
template <int NO>
static __device__ __forceinline__ void mm_position_done(int k, int nk, int kb, float *v, float *r0, float *r1, float *r2,
                                                        float *r3, float *r4) {
    canon_push<NO>(k - kb, v, r0, r1, r2, r3, r4);
    for (int kk = k + 1; kk < nk; kk++) canon_push<NO>(kk - kb, NULL, r0, r1, r2, r3, r4);
#pragma unroll
    for (int o = 0; o < NO; o++) v[o] = 0.0f;
}

/* Grouped (MoE) launches: the CTA column blockIdx.y is tile ti of the list `tiles` ([0] the
 * count, then (group, first column) per tile); group gi of `groups` (moe.cu's layout: expert,
 * first pair, pairs, source row) has its pairs' activation rows at act + (first pair + c) * as
 * and its outputs at y + (first pair + c) * n_out; its weights are expert e's of W. */
struct mm_grouped {
    const int *tiles, *groups;
    const uint8_t *W;
    size_t expert_bytes, row_bytes;
    int n_out;
    float *y;
};

/* the next step after (k, b) for steps of nbs blocks of a lane: the lane's block b + 32 nbs,
 * else the next position whose lane has one */
static __device__ __forceinline__ void mm_next(int &k, int &b, int ke, int nb, int nbs) {
    b += 32 * nbs;
    if (b < nb) return;
    k++;
    while (k < ke && (int)(__brev((unsigned)k) >> 27) >= nb) k++;
    b = k < ke ? (int)(__brev((unsigned)k) >> 27) : 0;
}
/* STRATA_CANON=serial (ORD 2): positions are the lanes in order (k = lane); past the last lane
 * with a block the walk ends (the untouched lanes are +0.0: adding them changes no bit) */
static __device__ __forceinline__ void mm_next_serial(int &k, int &b, int ke, int nb, int step = 32) {
    b += step;
    if (b < nb) return;
    k++;
    if (k >= nb) k = ke;
    b = k < ke ? k : 0;
}

/* a CTA's tile: rows, first column, the group's first pair and its expert's weights (grouped
 * launches: false for a CTA past the tile list's count) */
template <int GR>
static __device__ __forceinline__ bool mm_tile_setup(const mv_group &g, const mm_grouped &gr, int &T, int &rows, int &col0,
                                                     int &colbase, const uint8_t *&wexp) {
    col0 = blockIdx.y * MM_BN;
    colbase = 0;
    wexp = NULL;
    if constexpr (GR != 0) {
        const int ti = blockIdx.y;
        if (ti >= gr.tiles[0]) return false;
        const int *grp = gr.groups + 1 + MOE_GROUP_INTS * gr.tiles[1 + 2 * ti];
        rows = gr.n_out;
        col0 = gr.tiles[2 + 2 * ti];
        colbase = grp[1];
        T = grp[2];                                     /* the group's pairs are its columns */
        wexp = gr.W + (size_t)grp[0] * gr.expert_bytes;
    } else
        rows = g.row_start[g.n];
    return true;
}

/* weight row lrow (< rows) of the tile's weights */
template <int GR>
static __device__ __forceinline__ const uint8_t *mm_row_ptr(const mv_group &g, const mm_grouped &gr, const uint8_t *wexp,
                                                            int lrow) {
    if constexpr (GR != 0) return wexp + (size_t)lrow * gr.row_bytes;
    int wi = 0;
    while (wi + 1 < g.n && lrow >= g.row_start[wi + 1]) wi++;
    return g.W[wi] + (size_t)(lrow - g.row_start[wi]) * g.row_bytes;
}

/* The thread's outputs in the fragments' order: the statements after NI run with row, t and
 * o = MM_O2(mi, ni, e) (the output's register) for each (row0, col0, wm, wn, gq, tq in scope);
 * they check the tile's bounds (rows, T) themselves. */
#define MM_FOR_OUTPUTS(NI, ...)                                                               \
    _Pragma("unroll") for (int mi = 0; mi < 2; mi++)                                          \
    _Pragma("unroll") for (int ni = 0; ni < (NI); ni++)                                       \
    _Pragma("unroll") for (int e = 0; e < 4; e++) {                                           \
        const int row = row0 + wm * 32 + mi * 16 + gq + 8 * (e >> 1);                        \
        const int t = col0 + wn * 8 * (NI) + ni * 8 + 2 * tq + (e & 1);                      \
        const int o = MM_O2(mi, ni, e);                                                       \
        __VA_ARGS__                                                                           \
    }

/* the range's value (its counter's top: 32 or 16 positions r4; 8 r3; 4 r2; 2 r1; 1 r0) to y
 * (and add_to), to the group's rows, or to the split's partials */
template <int NI, int GR>
static __device__ __forceinline__ void mm_epilogue(const mv_group &g, const mm_grouped &gr, const float *r0, const float *r1,
                                                   const float *r2, const float *r3, float *r4, int npos, int row0, int col0,
                                                   int colbase, int rows, int T, int ks, float *ws, int wm, int wn, int gq,
                                                   int tq) {
    constexpr int NO = 8 * NI;
    if (npos < 16) {
#pragma unroll
        for (int o = 0; o < NO; o++) r4[o] = npos == 8 ? r3[o] : npos == 4 ? r2[o] : npos == 2 ? r1[o] : r0[o];
    }
    MM_FOR_OUTPUTS(NI,
        if (row >= rows || t >= T) continue;
        if (ks) {   /* a split: the partial; mm_split_combine finishes */
            ws[((size_t)blockIdx.z * T + t) * rows + row] = r4[o];
            continue;
        }
        if constexpr (GR != 0) {
            gr.y[(size_t)(colbase + t) * gr.n_out + row] = r4[o];
            continue;
        }
        int wi = 0;
        while (wi + 1 < g.n && row >= g.row_start[wi + 1]) wi++;
        const int r = row - g.row_start[wi];
        const int64_t no = g.n_out[wi];
        const float y = r4[o];
        g.y[wi][(size_t)t * no + r] = y;
        if (g.add_to[wi]) g.add_to[wi][(size_t)t * no + r] = __fadd_rn(g.add_to[wi][(size_t)t * no + r], y);)
}

/* ORD 2 split (STRATA_CANON=serial): lane k's value of every output of the tile to the partials,
 * ws[k][t][row] (the chain cannot be cut: mm_serial_combine chains the lanes in order) */
template <int NI>
static __device__ __forceinline__ void mm_lane_store(float *ws, int k, const float *v, int row0, int col0, int rows, int T,
                                                     int wm, int wn, int gq, int tq) {
    MM_FOR_OUTPUTS(NI, if (row < rows && t < T) ws[((size_t)k * T + t) * rows + row] = v[o];)
}

/* Split over the lane positions (blockIdx.z, gridDim.z = S = 1 << ks, ks > 0: grids of fewer
 * tiles than SMs): CTA z walks positions k in [32z/S, 32(z+1)/S) only. Those positions form a
 * complete subtree of the binary counter (an aligned range of 32/S), so the CTA's counter ends
 * with exactly the subtree value the whole walk forms there, and mm_split_combine adds the S
 * values pairwise (adjacent ranges first): the 16-8-4-2-1 tree's remaining levels. Same bits
 * for every S. The partials go to ws[z][t][row]; the combine writes y and add_to. */
/* ORD 1 (a measuring instrument, never launched by a pass: `test_gpu_mm bench-order` alone, through
 * cuda_mm_set(4)): every block partial added into one float per output in the walk's order, no
 * counter, two CTAs per SM: what the canonical order costs this kernel (docs/KERNELS.md, "What
 * the canonical counter costs"). Its outputs are not the canonical bits; no split.
 * ORD 2 (STRATA_CANON=serial): the lanes walked in order 0, 1, ..., each lane's blocks in
 * increasing b into v, and v chained into the output (t = v0, then t + v_l): two floats an
 * output, two CTAs per SM, no split.
 * ORD 3 (STRATA_CANON=serial, rows of nb <= 32 blocks, no split): each lane holds one block, so
 * its value is that block's p (+0.0 + p = p; for p = -0.0 the chain's +0.0 adds the same bits,
 * the chain being never -0.0) and the chain is t = t + p_b in b order: block_step2 adds p into
 * the output itself, one float an output (ORD 2 needs v beside the chain: 128 registers with
 * spills at two CTAs an SM, ncu 2026-12-04). */
/* X 1 (STRATA_CUDA_MM_SERX; ORD 2 and 3 only): the 32-value formats take NBS = 4 blocks a step, each
 * with its own tile (two sets of NBS tiles): ORD 2 the blocks b, b + 32, b + 64, b + 96 of one lane
 * (those below nb: a step never crosses a lane's end, so the chain's add stays at a step's end), ORD
 * 3 the blocks b .. b + 3 (one a lane); block_step2 runs on the tiles in increasing b, so v receives
 * the same p_b in the same order as with one block a step. Their integer sums convert by the
 * MMA's bias (mm_i2f). ORD 2 also takes STRATA_CUDA_MM_WPRE's bits 2 and 4 as ORD 3 does (the
 * activation copies by warps, the 16-byte K-quant code loads). The 256-value formats (ORD 2 and 3)
 * store their decoded weights by 16-byte stores without bank conflicts (store_w's R16). Same bits. */
template <int FMT, int NI, int GR, int ORD = 0, int X = 0>
__global__ void __launch_bounds__(512 / NI, ORD ? 2 : 1)
mm_kernel2(mv_group g, mm_grouped gr, int nb, const uint8_t *__restrict__ act, size_t as, int T, int ks, float *ws, int wco) {
    PDL_WAIT();
    constexpr int QK = mmf<FMT>::QK, NO = 8 * NI, WNC = 8 / NI;   /* outputs a thread, warp columns */
    static_assert(!X || ORD >= 2, "mm: X is an instance of the serial order");
    constexpr int NBS = X && QK == 32 ? 4 : 1, BSTR = ORD == 3 ? 1 : 32;   /* blocks a step, their stride */
    constexpr bool MB = X && QK == 32, WX = ORD == 3 || X;   /* WX: the WPRE bits 2 and 4 */
    constexpr bool R16 = X && QK == 256;   /* the decoded weights by 16-byte stores (st_region16) */
    extern __shared__ __align__(16) uint8_t mm_smem[];
    mm_tile2<QK> *tiles = (mm_tile2<QK> *)mm_smem;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int wm = warp / WNC, wn = warp % WNC, gq = lane >> 2, tq = lane & 3;
    int rows, col0, colbase;   /* colbase: the group's first pair */
    const uint8_t *wexp;
    if (!mm_tile_setup<GR>(g, gr, T, rows, col0, colbase, wexp)) return;   /* fewer tiles than the grid's bound */
    const int row0 = blockIdx.x * MM_BM;
    /* the first 256 threads load: 4 per tile row and column */
    const bool loader = tid < 256;
    const int li = (tid & 255) >> 2, part = tid & 3;
    const int lrow = row0 + li, lcol = col0 + li;
    const bool wvalid = lrow < rows, avalid = lcol < T;
    /* a warp whose columns all lie past T (a grouped tile of a few pairs, a pass's last tile)
     * skips its MMAs: its outputs are never stored (the epilogue keeps t < T) */
    const bool live = col0 + wn * 8 * NI < T;
    const uint8_t *wr = wvalid ? mm_row_ptr<GR>(g, gr, wexp, lrow) : NULL;
    /* PIN: the steps of NBS > 1 blocks of the formats whose words fetch_w loads raw (Q4_0, Q5_0, Q8_0,
     * IQ4_NL) load every block of the step unconditionally (a row past rows reads the tile's first row,
     * a block past nb the step's first block; store_w and block_step2 skip them), so the four blocks'
     * loads issue back to back with no branch region around each. Q4_1 and MXFP4 keep the branches:
     * unconditional loads without the raw words measured 1-4 % slower for them (2026-12-05, 17:38
     * session, call 1) */
    constexpr bool PIN = NBS > 1 && (FMT == TYPE_Q4_0 || FMT == TYPE_Q5_0 || FMT == TYPE_Q8_0 || FMT == TYPE_IQ4_NL);
    /* PINF (Q4_0, IQ4_NL; 2026-12-05 17:38 session, calls 3-4: Q4_0 +3 %, IQ4_NL +1-3 %, Q5_0 / Q8_0 1-3 %
     * slower with it): a step's words from one base (fetch_step_pin), and a row past rows stored as the
     * row0 words it holds (outputs never stored) instead of a branch region around each block's store */
    constexpr bool PINF = PIN && (FMT == TYPE_Q4_0 || FMT == TYPE_IQ4_NL);
    const uint8_t *wrs = PIN && !wvalid ? mm_row_ptr<GR>(g, gr, wexp, row0) : wr;
    const uint8_t *ar = act + (size_t)(colbase + (avalid ? lcol : 0)) * as;
    constexpr bool SER = ORD >= 2;
    float v[NO], r0[NO], r1[NO], r2[NO], r3[NO], r4[NO];
    mm_wraw raw, rawx[NBS > 1 ? NBS : 1];   /* rawx: the steps of NBS > 1 blocks */
    /* STRATA_CUDA_MM_WPRE bit 2 in the one-float instances (ORD 3) and the X ones only, so the other
     * instances compile as before it: the activation copies by warps (QK 256: warps 0..7, each its 8
     * columns) or four parts to 16 consecutive bytes (QK 32) */
    const bool aco = WX && (wco & 2), acw = QK == 256 && aco;
    /* bit 4 (ORD 3 / X, Q4_K / Q5_K, blocks 16-byte aligned: the host clears it otherwise): 16-byte code loads */
    constexpr bool KQ = FMT == TYPE_Q4_K || FMT == TYPE_Q5_K;
    const bool v16 = WX && KQ && (wco & 4);
    /* bit 8 (ORD 2 X, QK 32, plain launches; the host sets it only where mm_act_tile_kernel ran): act
     * is the re-laid activations, a step's copies one chunk (mm_atl_copy) */
    const bool atl = MB && ORD == 2 && GR == 0 && (wco & 8);
    const int wq = WX ? (v16 ? 0 : wco & 1) : wco;   /* the weight loads' switch (bit 1: the host passes the
                                                       * other instances that bit alone) */
    /* this CTA's positions [kb, ke) (all 32 unless split); the first one whose lane has a block.
     * ORD 2: the lanes [z nl / S, (z + 1) nl / S) of the row's nl = min(nb, 32) lanes */
    const int nl = nb < 32 ? nb : 32;
    const int npos = 32 >> ks;
    const int kb = SER ? (int)blockIdx.z * nl >> ks : (int)blockIdx.z * npos;
    const int ke = SER ? ((int)blockIdx.z + 1) * nl >> ks : kb + npos;
    int k = kb;
    if constexpr (!SER)
        while (k < ke && (int)(__brev((unsigned)k) >> 27) >= nb) k++;
    if constexpr (!ORD)
        for (int kk = kb; kk < k; kk++) canon_push<NO>(kk - kb, NULL, r0, r1, r2, r3, r4);   /* +0.0 lanes */
#pragma unroll
    for (int o = 0; o < NO; o++) v[o] = 0.0f;
    if constexpr (ORD == 2) {
#pragma unroll
        for (int o = 0; o < NO; o++) r4[o] = 0.0f;
    }
    if (k < ke) {
    int b = SER ? k : (int)(__brev((unsigned)k) >> 27), buf = 0;
    /* block u of the step at b: b + BSTR u, where it lies below nb (u 0 always: the walk's own block) */
#define MM_STEP_HAS(bb, u) ((u) == 0 || (bb) + BSTR * (u) < nb)
    /* NBS > 1: the step at bb's weight words into rawx and its activation copies into tiles t0 ..,
     * then (after the MMAs of the step before) its weights decoded into those tiles */
    auto mm_steps_load = [&](int bb, int t0) {
#pragma unroll
        for (int u = 0; u < NBS; u++)
            if constexpr (!PIN)
                if (MM_STEP_HAS(bb, u) && wvalid) fetch_w<FMT>(rawx[u], part, wr, bb + BSTR * u, wq, v16);
        if constexpr (PINF)   /* the step from one base; blocks past nb read the step's first (uniform offsets) */
            fetch_step_pin<FMT, NBS, BSTR>(rawx, part, wrs + (size_t)bb * wfmt<FMT>::bsize, (nb - 1 - bb) / BSTR);
        else if constexpr (PIN) {
#pragma unroll
            for (int u = 0; u < NBS; u++)
                fetch_w<FMT>(rawx[u], part, wrs, MM_STEP_HAS(bb, u) ? bb + BSTR * u : bb, wq, v16);   /* no branch */
        }
        if constexpr (MB && ORD == 2 && GR == 0)
            if (atl) {
                mm_atl_copy<mmf<FMT>::kind == 2>((mm_tile2<32> *)tiles, t0, act, nb, bb, tid);
                return;
            }
        if (!acw)
#pragma unroll
            for (int u = 0; u < NBS; u++)
                if (MM_STEP_HAS(bb, u)) issue_a<FMT>(tiles[t0 + u], li, part, ar, bb + BSTR * u, avalid, aco);
    };
    auto mm_steps_store = [&](int bb, int t0) {
#pragma unroll
        for (int u = 0; u < NBS; u++)
            if (MM_STEP_HAS(bb, u)) store_w<FMT, false, MB>(tiles[t0 + u], li, part, rawx[u], PINF || wvalid, wq);   /* PINF: a
                                                     * row past rows holds row0's words (outputs never stored) */
    };
    if (loader) {
        if constexpr (NBS > 1) {
            mm_steps_load(b, 0);
            mm_steps_store(b, 0);
        } else {   /* (the statements of the instances before X, unchanged: their code stays as it was) */
            if (wvalid) fetch_w<FMT>(raw, part, wr, b, wq, v16);
            if constexpr (QK == 256 && WX)
                if (acw) issue_a_warp(tiles[0], warp, lane, act, as, colbase, col0, T, b);
            if (!acw)
                issue_a<FMT>(tiles[0], li, part, ar, b, avalid, aco);
            store_w<FMT, R16>(tiles[0], li, part, raw, wvalid, wq);
        }
    }
    cp_wait();
    __syncthreads();
    for (;;) {
        /* the next step: the lane's next block, else the next position whose lane has one */
        int nk = k, nbb = b;
        if constexpr (ORD == 3 && NBS > 1) {   /* one block a lane: the next NBS lanes */
            nbb = b + NBS;
            nk = nbb < ke ? nbb : ke;
        } else if constexpr (SER) mm_next_serial(nk, nbb, ke, nb, 32 * NBS);
        else mm_next(nk, nbb, ke, nb, 1);
        const bool more = nk < ke;
        if constexpr (NBS > 1) {
            const int nt = (buf ^ 1) * NBS;   /* the next step's tiles */
            if (more && loader) mm_steps_load(nbb, nt);
            if (live) {
                if (FMT == TYPE_MXFP4 && GR == 0 && b + BSTR * (NBS - 1) < nb) {   /* MXFP4 (plain launches; the grouped
                                                    * instance spilled 4 bytes with it): a full step (CTA-uniform) as
                                                    * one region, so the next block's fragment loads and MMAs
                                                    * issue during this one's epilogue (call 4: MXFP4 +2-5 %;
                                                    * Q5_0 / Q8_0 / IQ4_NL 0-3 % slower, Q4_0 / Q4_1 even) */
#pragma unroll
                    for (int u = 0; u < NBS; u++) block_step2<FMT, NI, MB>(tiles[buf * NBS + u], wm, wn, gq, tq, v);
                } else {
#pragma unroll
                    for (int u = 0; u < NBS; u++)   /* in increasing b */
                        if (MM_STEP_HAS(b, u)) block_step2<FMT, NI, MB>(tiles[buf * NBS + u], wm, wn, gq, tq, v);
                }
            }
            if (more && loader) mm_steps_store(nbb, nt);
        } else {   /* (unchanged, as above) */
            if (more && loader) {
                if (wvalid) fetch_w<FMT>(raw, part, wr, nbb, wq, v16);
                if constexpr (QK == 256 && WX)
                    if (acw) issue_a_warp(tiles[buf ^ 1], warp, lane, act, as, colbase, col0, T, nbb);
                if (!acw) issue_a<FMT>(tiles[buf ^ 1], li, part, ar, nbb, avalid, aco);
            }
            if (live) block_step2<FMT, NI>(tiles[buf], wm, wn, gq, tq, v);
            if (more && loader) store_w<FMT, R16>(tiles[buf ^ 1], li, part, raw, wvalid, wq);
        }
#undef MM_STEP_HAS
        if constexpr (!ORD)
            if (nk != k) mm_position_done<NO>(k, nk, kb, v, r0, r1, r2, r3, r4);
        if constexpr (ORD == 2)
            if (nk != k) {   /* lane k complete: the chain (from +0.0: +0.0 + v0 = v0, a lane value is never -0.0) */
                if (ks) mm_lane_store<NI>(ws, k, v, row0, col0, rows, T, wm, wn, gq, tq);   /* split: mm_serial_combine chains */
#pragma unroll
                for (int o = 0; o < NO; o++) { r4[o] = __fadd_rn(r4[o], v[o]); v[o] = 0.0f; }
            }
        if (!more) break;
        cp_wait();
        __syncthreads();
        buf ^= 1; k = nk; b = nbb;
    }
    }
    if constexpr (ORD == 1 || ORD == 3)   /* ORD 3: v is the chain */
        mm_epilogue<NI, GR>(g, gr, v, v, v, v, v, 32, row0, col0, colbase, rows, T, 0, ws, wm, wn, gq, tq);
    else if constexpr (ORD == 2) {
        if (!ks) mm_epilogue<NI, GR>(g, gr, r4, r4, r4, r4, r4, 32, row0, col0, colbase, rows, T, 0, ws, wm, wn, gq, tq);
    }
    else
        mm_epilogue<NI, GR>(g, gr, r0, r1, r2, r3, r4, npos, row0, col0, colbase, rows, T, ks, ws, wm, wn, gq, tq);
}

/* STRATA_CANON=serial's split: the nl lane values of every output chained in lane order from +0.0
 * (mm_kernel2 ORD 2's chain, the same bits), then y (and add_to) as the epilogue writes them */
__global__ void mm_serial_combine(mv_group g, const float *__restrict__ ws, int nl, int T) {
    PDL_WAIT();
    const int rows = g.row_start[g.n];
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (int64_t)rows * T) return;
    const int t = (int)(i / rows), row = (int)(i % rows);
    float r = 0.0f;
#pragma unroll 8
    for (int l = 0; l < nl; l++) r = __fadd_rn(r, ws[((size_t)l * T + t) * rows + row]);
    int wi = 0;
    while (wi + 1 < g.n && row >= g.row_start[wi + 1]) wi++;
    const int rr = row - g.row_start[wi];
    const int64_t no = g.n_out[wi];
    g.y[wi][(size_t)t * no + rr] = r;
    if (g.add_to[wi]) g.add_to[wi][(size_t)t * no + rr] = __fadd_rn(g.add_to[wi][(size_t)t * no + rr], r);
}

/* the S = 1 << ks partials of every output, pairwise (adjacent ranges, then pairs of pairs, ...),
 * then y (and add_to) as mm_kernel2's epilogue writes them */
__global__ void mm_split_combine(mv_group g, const float *__restrict__ ws, int ks, int T) {
    PDL_WAIT();
    const int rows = g.row_start[g.n];
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (int64_t)rows * T) return;
    const int t = (int)(i / rows), row = (int)(i % rows), S = 1 << ks;
    float p[32];
#pragma unroll
    for (int z = 0; z < 32; z++)
        if (z < S) p[z] = ws[((size_t)z * T + t) * rows + row];
#pragma unroll
    for (int s = 1; s < 32; s <<= 1)
#pragma unroll
        for (int z = 0; z + s < 32; z += 2 * s)
            if (z + s < S) p[z] = __fadd_rn(p[z], p[z + s]);
    int wi = 0;
    while (wi + 1 < g.n && row >= g.row_start[wi + 1]) wi++;
    const int r = row - g.row_start[wi];
    const int64_t no = g.n_out[wi];
    g.y[wi][(size_t)t * no + r] = p[0];
    if (g.add_to[wi]) g.add_to[wi][(size_t)t * no + r] = __fadd_rn(g.add_to[wi][(size_t)t * no + r], p[0]);
}

/* ---- the pipelined kernel (STRATA_CUDA_MM_PIPE=1): S stages of raw bytes in flight ------------
 * mm_kernel2 keeps one step of global loads in flight per SM (the next step's weight words in
 * registers while the MMAs run), and a step of a 32-value format is 64 rows of 18-34 bytes: its
 * time is a memory round trip, not the MMAs. Here a step's weight bytes are copied RAW into
 * shared memory by cp.async (16-byte copies of the aligned 16-byte chunks that cover each row's
 * block; the last chunk zero-filled past the block's end, so nothing past a block is read, and
 * the bytes before it in its first chunk share its aligned 16 bytes, inside the allocation), its
 * activation codes as mm_kernel2 copies them, and S - 1 steps of copies are in flight while a
 * step's MMAs run. After the MMAs of step i a thread decodes step i + 1's weights from shared
 * memory (fetch_w and store_w, the same functions, on a pointer into shared memory that keeps the
 * block's address modulo 16, so every aligned word load stays aligned); the four threads of a
 * row are lanes of one warp, so their own cp.async waits and a __syncwarp make the row's chunks
 * visible to each other; one __syncthreads per step, as mm_kernel2.
 *
 * Steps and order: a step is NB blocks b, b + 32, ..., b + 32 (NB - 1) of ONE lane (those below
 * nb), each with its own tile (mm_tile2) and block_step2 in increasing b, so v receives the same
 * p_b in the same order as mm_kernel2's one-block steps; positions, the counter, the split and
 * the epilogue are mm_kernel2's. S and NB are launch arguments (mm_pipe_shape): by default NB = 4
 * for the 32-value formats (one barrier per 128 values of a row), 1 for the 256-value ones, and
 * S = 4 where four stages fit, else 3. */
template <int FMT> struct mm_pcfg {
    static constexpr int QK = mmf<FMT>::QK, NBMAX = QK == 32 ? 4 : 1;
    /* bytes of raw chunks per row and block: the 16-byte chunks covering bsize bytes at any offset */
    static constexpr int RB = (15 + wfmt<FMT>::bsize + 15) / 16 * 16;
    static constexpr int TILE = (int)sizeof(mm_tile2<QK>);
    /* a stage of NB blocks: NB tiles, then NB x 64 rows of RB raw bytes (all 16-byte multiples) */
    __host__ __device__ static constexpr int stage_bytes(int nbs) { return nbs * (TILE + MM_BM * RB); }
};
static_assert(sizeof(mm_tile2<32>) % 16 == 0 && sizeof(mm_tile2<64>) % 16 == 0 && sizeof(mm_tile2<256>) % 16 == 0,
              "mm: stage alignment");
#define MM_PIPE_SMEM (227 * 1024)   /* the most dynamic shared memory a CTA may have (sm_90) */
#define MM_PIPE_SMAX 8              /* stages at most */

/* stage si of a CTA's shared memory (stages of nbs blocks) */
template <int FMT> struct mm_stg {
    uint8_t *base;
    int nbs;
    __device__ __forceinline__ mm_tile2<mm_pcfg<FMT>::QK> &t(int u) const { return ((mm_tile2<mm_pcfg<FMT>::QK> *)base)[u]; }
    __device__ __forceinline__ uint8_t *raw(int u, int li) const {
        return base + nbs * mm_pcfg<FMT>::TILE + (u * MM_BM + li) * mm_pcfg<FMT>::RB;
    }
};

static __device__ __forceinline__ void cp_commit(void) { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N> static __device__ __forceinline__ void cp_wait_n(void) { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }
/* at most n groups pending (n = S - 2; a smaller immediate only waits longer) */
static __device__ __forceinline__ void cp_wait_dyn(int n) {
    switch (n) {
    case 0: cp_wait_n<0>(); break;
    case 1: cp_wait_n<1>(); break;
    case 2: cp_wait_n<2>(); break;
    case 3: cp_wait_n<3>(); break;
    case 4: cp_wait_n<4>(); break;
    case 5: cp_wait_n<5>(); break;
    default: cp_wait_n<6>(); break;
    }
}

/* step (b)'s copies into stage s: row li's raw block chunks (parts split the chunks), column li's
 * activation blocks (issue_a) */
template <int FMT>
static __device__ __forceinline__ void issue3(const mm_stg<FMT> &s, int li, int part, const uint8_t *wr, bool wvalid,
                                              const uint8_t *ar, bool avalid, int b, int nb) {
    constexpr int BS = wfmt<FMT>::bsize;
#pragma unroll
    for (int u = 0; u < mm_pcfg<FMT>::NBMAX; u++) {
        const int bu = b + 32 * u;
        if (u >= s.nbs || bu >= nb) break;
        if (wvalid) {
            const uint8_t *g = wr + (size_t)bu * BS;
            const int off = (int)((uintptr_t)g & 15), end = off + BS, nch = (end + 15) >> 4;
            const uint8_t *g0 = g - off;
            uint8_t *d = s.raw(u, li);
            for (int c = part; c < nch; c += 4) cp_async16z(d + 16 * c, g0 + 16 * c, (unsigned)min(16, end - 16 * c));
        }
        issue_a<FMT>(s.t(u), li, part, ar, bu, avalid);
    }
}

/* step (b)'s weights of row li from stage s's raw bytes into its tiles */
template <int FMT>
static __device__ __forceinline__ void decode3(const mm_stg<FMT> &s, int li, int part, const uint8_t *wr, bool wvalid, int b,
                                               int nb) {
    constexpr int BS = wfmt<FMT>::bsize;
#pragma unroll
    for (int u = 0; u < mm_pcfg<FMT>::NBMAX; u++) {
        const int bu = b + 32 * u;
        if (u >= s.nbs || bu >= nb) break;
        mm_wraw raw;
        if (wvalid) {
            const int off = (int)((uintptr_t)(wr + (size_t)bu * BS) & 15);
            fetch_w<FMT>(raw, part, s.raw(u, li) + off, 0);
        }
        store_w<FMT>(s.t(u), li, part, raw, wvalid);
    }
}

/* S stages (2..MM_PIPE_SMAX) of nbs blocks a step (1..NBMAX), both chosen by the host */
template <int FMT, int GR>
__global__ void __launch_bounds__(256, 1)
mm_kernel3(mv_group g, mm_grouped gr, int nb, const uint8_t *__restrict__ act, size_t as, int T, int ks, float *ws, int S,
           int nbs) {
    PDL_WAIT();
    constexpr int NI = 2, NO = 8 * NI, WNC = 8 / NI;
    extern __shared__ __align__(16) uint8_t mm_smem[];
    const int sbytes = mm_pcfg<FMT>::stage_bytes(nbs);
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int wm = warp / WNC, wn = warp % WNC, gq = lane >> 2, tq = lane & 3;
    int rows, col0, colbase;   /* colbase: the group's first pair */
    const uint8_t *wexp;
    if (!mm_tile_setup<GR>(g, gr, T, rows, col0, colbase, wexp)) return;   /* fewer tiles than the grid's bound */
    const int row0 = blockIdx.x * MM_BM;
    /* every thread loads and decodes: 4 per tile row (lanes of one warp) and column */
    const int li = tid >> 2, part = tid & 3;
    const int lrow = row0 + li, lcol = col0 + li;
    const bool wvalid = lrow < rows, avalid = lcol < T;
    /* a warp whose columns all lie past T (a grouped tile of a few pairs, a pass's last tile)
     * skips its MMAs: its outputs are never stored (the epilogue keeps t < T) */
    const bool live = col0 + wn * 8 * NI < T;
    const uint8_t *wr = wvalid ? mm_row_ptr<GR>(g, gr, wexp, lrow) : NULL;
    const uint8_t *ar = act + (size_t)(colbase + (avalid ? lcol : 0)) * as;
    float v[NO], r0[NO], r1[NO], r2[NO], r3[NO], r4[NO];
    const int npos = 32 >> ks, kb = (int)blockIdx.z * npos, ke = kb + npos;
    int k = kb;
    while (k < ke && (int)(__brev((unsigned)k) >> 27) >= nb) k++;
    for (int kk = kb; kk < k; kk++) canon_push<NO>(kk - kb, NULL, r0, r1, r2, r3, r4);   /* +0.0 lanes */
    if (k < ke) {
    int b = (int)(__brev((unsigned)k) >> 27);
    /* the load cursor (lk, lb) runs S - 1 steps ahead of (k, b); one commit group per step */
    int lk = k, lb = b;
    for (int s = 0; s < S - 1; s++) {
        if (lk < ke) issue3<FMT>(mm_stg<FMT>{mm_smem + s * sbytes, nbs}, li, part, wr, wvalid, ar, avalid, lb, nb);
        cp_commit();
        if (lk < ke) mm_next(lk, lb, ke, nb, nbs);
    }
    cp_wait_dyn(S - 2);
    __syncwarp();
    decode3<FMT>(mm_stg<FMT>{mm_smem, nbs}, li, part, wr, wvalid, b, nb);
    __syncthreads();
#pragma unroll
    for (int o = 0; o < NO; o++) v[o] = 0.0f;
    int cur = 0;   /* the stage of step (k, b) */
    for (;;) {
        {   /* the copies of the step S - 1 ahead, into the stage the previous step used */
            const int ls = cur == 0 ? S - 1 : cur - 1;
            if (lk < ke) issue3<FMT>(mm_stg<FMT>{mm_smem + ls * sbytes, nbs}, li, part, wr, wvalid, ar, avalid, lb, nb);
            cp_commit();
            if (lk < ke) mm_next(lk, lb, ke, nb, nbs);
        }
        const mm_stg<FMT> sc{mm_smem + cur * sbytes, nbs};
#pragma unroll
        for (int u = 0; u < mm_pcfg<FMT>::NBMAX; u++)   /* blocks b, b + 32, ... in increasing b */
            if (live && u < nbs && b + 32 * u < nb) block_step2<FMT, NI>(sc.t(u), wm, wn, gq, tq, v);
        int nk = k, nbb = b;
        mm_next(nk, nbb, ke, nb, nbs);
        const bool more = nk < ke;
        const int nxt = cur + 1 == S ? 0 : cur + 1;
        if (more) {   /* step (nk, nbb)'s copies (this thread's) have landed: decode its weights */
            cp_wait_dyn(S - 2);
            __syncwarp();
            decode3<FMT>(mm_stg<FMT>{mm_smem + nxt * sbytes, nbs}, li, part, wr, wvalid, nbb, nb);
        }
        if (nk != k) mm_position_done<NO>(k, nk, kb, v, r0, r1, r2, r3, r4);
        if (!more) break;
        __syncthreads();
        cur = nxt; k = nk; b = nbb;
    }
    cp_wait_n<0>();   /* no copy outlives the CTA */
    }
    mm_epilogue<NI, GR>(g, gr, r0, r1, r2, r3, r4, npos, row0, col0, colbase, rows, T, ks, ws, wm, wn, gq, tq);
}

/* ---- host ------------------------------------------------------------------------------------ */
/* STRATA_CUDA_MM: 2 the kernel with 8 warps of 32 x 16 outputs (default), 3 the same with 16
 * warps of 32 x 8 outputs, 0 the matvec in slices of 8 */
static int mm_mode = -1;

/* 4: mm_kernel2's walk-order instrument (ORD 1) for the formats of mm_diag, the default kernel
 * for the others; tests only (`test_gpu_mm bench-order`): the environment never selects it */
extern "C" void cuda_mm_set(int mode) { mm_mode = mode >= 2 && mode <= 4 ? mode : 0; }
template <int FMT> struct mm_diag {
    static constexpr bool v = FMT == TYPE_Q4_0 || FMT == TYPE_Q8_0 || FMT == TYPE_Q4_K || FMT == TYPE_Q6_K ||
                              FMT == TYPE_IQ3_XXS;
};

/* STRATA_CUDA_MM_PIPE: -1 (default) auto, by format and row length (mm_pipe_code); 0 mm_kernel2;
 * else the pipelined kernel (mm_kernel3, 8 warps) for every tensor-core pass, plain and grouped,
 * whatever STRATA_CUDA_MM's 2 / 3: 1 its default stages
 * (mm_pipe_shape), 10 S + NB (S 2..8, NB 1..4) S stages of NB blocks a step (tuning; NB is 1
 * for the 256-value formats, and S shrinks to what fits the shared memory) */
static int mm_pipe = -2;   /* -2 not read yet, -1 auto */
extern "C" void cuda_mm_pipe_set(int code) { mm_pipe = code > 0 ? code : code == -1 ? -1 : 0; }
/* auto (-1, the default): the pipelined kernel where it measured faster (H200, 2026-12-02, m 4096
 * k 14336, n 512, TFLOPS two-tile -> pipelined: Q4_0 35.3 -> 53.7, Q4_1 42.7 -> 49.2, Q5_0 31.6 ->
 * 49.6, Q5_1 40.8 -> 46.3, Q8_0 29.3 -> 49.9, IQ4_NL 33.9 -> 48.4, MXFP4 32.3 -> 38.9, Q6_K 59.2 ->
 * 67.3; every 256-value format but Q6_K slower pipelined) and on rows like that one: the 32-value
 * formats from 128 blocks a row (four blocks a lane: the kernel's full step; SmolLM2's rows of
 * 18-48 blocks measured 16 % slower pipelined end to end), Q6_K from 32 */
template <int FMT>
static int mm_pipe_code(int nb) {
    if (mm_pipe == -2) {
        const long v = env_int(ENV_CUDA_MM_PIPE);
        mm_pipe = v > 0 && v < 100 ? (int)v : v == -1 ? -1 : 0;
    }
    if constexpr (mmf<FMT>::QK == 64) return 0;   /* Q2_0: the two-tile kernel only */
    if (mm_pipe >= 0) return mm_pipe;
    if (mmf<FMT>::QK == 32) return nb >= 128 ? 1 : 0;
    return FMT == TYPE_Q6_K && nb >= 32 ? 1 : 0;
}
/* the stages S and blocks a step nbs of code for FMT: default 4 stages of 4 blocks (32-value
 * formats) or of 1 (256-value ones), fewer stages where they do not fit */
template <int FMT>
static void mm_pipe_shape(int code, int *S, int *nbs) {
    int sv = code >= 20 ? code / 10 : 4, nv = code >= 20 ? code % 10 : mm_pcfg<FMT>::NBMAX;
    if (nv < 1) nv = 1;
    if (nv > mm_pcfg<FMT>::NBMAX) nv = mm_pcfg<FMT>::NBMAX;
    if (sv > MM_PIPE_SMAX) sv = MM_PIPE_SMAX;
    while (sv > 2 && sv * mm_pcfg<FMT>::stage_bytes(nv) > MM_PIPE_SMEM) sv--;
    while (nv > 1 && sv * mm_pcfg<FMT>::stage_bytes(nv) > MM_PIPE_SMEM) nv--;
    *S = sv;
    *nbs = nv;
}

static long mm_atl_n;   /* launches that took WPRE bit 8 (tests) */
extern "C" long cuda_mm_atl_count(void) { return mm_atl_n; }
/* the narrowest pass that takes WPRE bit 8: two column tiles (2026-12-05, H100: +11-31 % at n 512; even
 * at n 64 and 16, one column tile, where the pre-pass is one more launch for no gain) */
static int mm_atl_min = 2 * MM_BN;
extern "C" void cuda_mm_atl_min_set(int t) { mm_atl_min = t < 1 ? 2 * MM_BN : t; }

static int mm_wpre_on(void) {
    if (mm_wpre < 0) {
        const long v = env_int(ENV_CUDA_MM_WPRE);
        mm_wpre = v < 0 ? 1 : (int)(v & 15);   /* bits 1, 2, 4, 8 (a negative value: the default 1) */
    }
    return mm_wpre;
}

/* STRATA_CUDA_MM_EXT: the formats beyond the first kernel's (mm_both) on tensor cores too */
static int mm_ext = -1;
extern "C" void cuda_mm_ext_set(int on) { mm_ext = on ? 1 : 0; }

/* The narrowest pass on the matmul (STRATA_CUDA_MM_MIN). Without the split of small grids the
 * matvec slices won below 32 columns (H200, 2026-12-01: at 16 columns slices 6,348 / 2,679 tok/s
 * against the matmul's 3,742 / 2,509, SmolLM2 / 1.5B batches); with it, 9 is fastest (2026-12-02:
 * the 1.5B batch of 16 2,787 tok/s at 32, 3,482 at 16, 3,620 at 9; SmolLM2 within the spread).
 * Same bits either way. */
int cuda_mm_min_cols(void) {
    static int v = -1;
    if (v < 0) { long e = env_int(ENV_CUDA_MM_MIN); v = e >= 9 && e <= 4096 ? (int)e : 9; }
    return v;
}

/* STRATA_CUDA_MM_SPLIT: -1 auto (split grids of fewer tiles than SMs), 0 never, S (2..32, a
 * power of two) always S where the rows have the blocks for it (tests) */
static int mm_split = -2;
extern "C" void cuda_mm_split_set(int s) { mm_split = s; }
/* log2 of the split of a grid of `tiles` tiles over rows of nb blocks (0: none) */
static int mm_split_ks(const mv_group *g, int tiles, int nb, int rows, int T) {
    if (mm_split == -2) {
        const char *e = env_str(ENV_CUDA_MM_SPLIT);
        mm_split = !strcmp(e, "auto") ? -1 : atoi(e);
    }
    if (!g->ws || mm_split == 0) return 0;
    int ks = 0;
    if (mm_split > 1) {   /* forced */
        while ((2 << ks) <= mm_split && ks < 5) ks++;
    } else {
        /* the largest S whose CTAs still fit one wave (one CTA per SM): a grid that already
         * fills the SMs gains nothing from a second wave of half-length CTAs (H200, 2026-12-02:
         * splitting the SmolLM2 prompt's 120-tile grids in two cost 8 %) */
        int sms = cuda_sm_count();   /* device_class.cu's reading; an H200's 132 without a device */
        if (sms < 1) sms = 132;
        while (ks < 5 && (tiles << (ks + 1)) <= sms) ks++;
    }
    /* every range of 32 >> ks positions holds a block when S <= nb (lanes 0..nb-1 by bit reversal),
     * and the partials must fit the workspace */
    const size_t wsf = g->ws_floats < CUDA_MM_WS_TREE_FLOATS ? g->ws_floats : CUDA_MM_WS_TREE_FLOATS;
    while (ks > 0 && ((1 << ks) > nb || (size_t)(1 << ks) * (size_t)T * (size_t)rows > wsf)) ks--;
    return ks;
}

/* STRATA_CANON=serial's split (mm_kernel2 ORD 2): the largest S whose CTAs fit one wave of two
 * CTAs an SM (the kernel's occupancy; the tree's kernel runs one), or the forced S; at most the
 * row's lanes nl = min(nb, 32) (every CTA then has one); the partials are nl an output whatever S */
static int mm_split_ks_serial(const mv_group *g, int tiles, int nb, int rows, int T) {
    const int nl = nb < 32 ? nb : 32;
    if (!g->ws || (size_t)nl * (size_t)T * (size_t)rows > g->ws_floats) return 0;
    int ks = mm_split_ks(g, tiles, 32, rows, 1);   /* reads the switch; the forced S, or the one-CTA wave */
    if (mm_split == -1) {
        int sms = cuda_sm_count();
        if (sms < 1) sms = 132;
        while (ks < 5 && (tiles << (ks + 1)) <= 2 * sms) ks++;
    }
    while (ks > 0 && (1 << ks) > nl) ks--;
    return ks;
}

#define MM_FORMATS(F) F(TYPE_Q4_0) F(TYPE_Q4_1) F(TYPE_Q5_0) F(TYPE_Q5_1) F(TYPE_Q8_0) F(TYPE_MXFP4) F(TYPE_IQ4_NL) \
    F(TYPE_Q2_K) F(TYPE_Q3_K) F(TYPE_Q4_K) F(TYPE_Q5_K) F(TYPE_Q6_K) F(TYPE_IQ2_XXS) F(TYPE_IQ2_XS) F(TYPE_IQ2_S)   \
    F(TYPE_IQ3_XXS) F(TYPE_IQ3_S) F(TYPE_IQ1_S) F(TYPE_IQ1_M) F(TYPE_IQ4_XS) F(TYPE_Q2_0)

int cuda_mm_supported(int type, int64_t n_in) {
    if (mm_mode < 0) { long v = env_int(ENV_CUDA_MM); mm_mode = v == 2 || v == 3 ? (int)v : 0; }
    if (!mm_mode) return 0;
    if (mm_ext < 0) mm_ext = env_int(ENV_CUDA_MM_EXT) == 1;
    switch (type) {
#define F(FM) case FM: return (mm_both<FM>::v || mm_ext) && n_in % mmf<FM>::QK == 0;
    MM_FORMATS(F)
#undef F
    default: return 0;
    }
}

/* the pipelined kernel's launches: the most shared memory a CTA may have, once per instantiation */
template <int FMT, int GR>
static int mm_attr3(void) {
    static int attr;
    if (!attr) {
        if (CU_CHECK(cudaFuncSetAttribute(mm_kernel3<FMT, GR>, cudaFuncAttributeMaxDynamicSharedMemorySize, MM_PIPE_SMEM)))
            return -1;
        attr = 1;
    }
    return 0;
}

/* the walk-order instrument: the two-tile kernel's tiles and steps, one float per output, two
 * CTAs per SM, no split */
template <int FMT>
static int mm_launch_order_diag(const mv_group *g, int64_t n_in, const void *act, int T, cudaStream_t st) {
    static int attr;
    const size_t smem = 2 * sizeof(mm_tile2<mmf<FMT>::QK>);
    if (!attr) {
        if (CU_CHECK(cudaFuncSetAttribute(mm_kernel2<FMT, 2, 0, 1>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem)))
            return -1;
        attr = 1;
    }
    const int nb = (int)(n_in / mmf<FMT>::QK);
    const size_t as = cuda_act_row_bytes(wfmt<FMT>::act, n_in);
    const int rows = g->row_start[g->n];
    const dim3 grid((unsigned)((rows + MM_BM - 1) / MM_BM), (unsigned)((T + MM_BN - 1) / MM_BN));
    klaunch(mm_kernel2<FMT, 2, 0, 1>, grid, 256, smem, st, *g, mm_grouped{}, nb, (const uint8_t *)act, as, T, 0, g->ws,
            mm_wpre_on() & 1);
    return CU_LAUNCHED();
}

/* STRATA_CANON=serial: the two-tile kernel's ORD 2 (the chain over the lanes), plain (GR 0) or
 * grouped (GR 1), no pipelined kernel; ORD 3 (one float an output) where the rows have at most 32
 * blocks and the launch is not split (STRATA_CUDA_MM_ONEB=1, opt-in until measured; 0: ORD 2 always) */
extern "C" int canon_serial;
static int mm_oneb = -1;
extern "C" void cuda_mm_oneb_set(int on) { mm_oneb = on < 0 ? -1 : on ? 1 : 0; }
static int mm_oneb_on(void) {
    if (mm_oneb < 0) mm_oneb = env_int(ENV_CUDA_MM_ONEB) != 0;
    return mm_oneb;
}
/* STRATA_CUDA_MM_SERX: the serial order's X instances (mm_kernel2's X 1: four blocks a step and
 * the biased conversion for the 32-value formats, the conflict-free 16-byte stores of the 256-value
 * ones' decoded weights, ORD 2 with the WPRE bits 2 and 4) for ORD 2 and ORD 3 (1), ORD 2 alone (2),
 * ORD 3 alone (3), ORD 2 on rows of at least MM_SERX_K values (4), or neither (0).
 * mm_serx_on(ord, k): whether a launch of that ORD on rows of k values takes them. */
#define MM_SERX_K 4096
static int mm_serx = -1;
extern "C" void cuda_mm_serx_set(int on) { mm_serx = on < 0 ? -1 : on > 4 ? 1 : on; }
static bool mm_serx_on(int ord, int64_t k) {
    if (mm_serx < 0) {
        const int v = env_int(ENV_CUDA_MM_SERX);
        mm_serx = v < 0 || v > 4 ? 1 : v;
    }
    return mm_serx == 1 || mm_serx == ord || (mm_serx == 4 && ord == 2 && k >= MM_SERX_K);
}
template <int FMT, int GR, int ORD, int X>
static int mm_attr_serial(size_t smem) {
    static int attr;
    if (!attr) {
        if (CU_CHECK(cudaFuncSetAttribute(mm_kernel2<FMT, 2, GR, ORD, X>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem)))
            return -1;
        attr = 1;
    }
    return 0;
}
/* one serial launch: instance (ORD, X) with its shared memory (X 1 and QK 32: two sets of 4 tiles) */
template <int FMT, int GR, int ORD, int X>
static int mm_go_serial(dim3 grid, cudaStream_t st, const mv_group &g, const mm_grouped &gr, int nb, const void *act, size_t as,
                        int T, int ks, float *ws, int wp) {
    const size_t smem = (X && mmf<FMT>::QK == 32 ? 8 : 2) * sizeof(mm_tile2<mmf<FMT>::QK>);
    if (mm_attr_serial<FMT, GR, ORD, X>(smem)) return -1;
    klaunch(mm_kernel2<FMT, 2, GR, ORD, X>, grid, 256, smem, st, g, gr, nb, (const uint8_t *)act, as, T, ks, ws, wp);
    return CU_LAUNCHED();
}
/* instance ORD with X = x; wp: the WPRE bits, which the ORD 2 instances without X take bit 1 of alone */
template <int FMT, int GR, int ORD>
static int mm_go_serial_x(bool x, dim3 grid, cudaStream_t st, const mv_group &g, const mm_grouped &gr, int nb, const void *act,
                          size_t as, int T, int ks, float *ws, int wp) {
    if (x) return mm_go_serial<FMT, GR, ORD, 1>(grid, st, g, gr, nb, act, as, T, ks, ws, wp);
    return mm_go_serial<FMT, GR, ORD, 0>(grid, st, g, gr, nb, act, as, T, ks, ws, ORD == 3 ? wp : wp & 1);
}
template <int FMT, int GR>
static int mm_launch_serial(const mv_group *g, const mm_grouped *gr, int64_t n_in, const void *act, int T, int max_tiles,
                            cudaStream_t st) {
    const int nb = (int)(n_in / mmf<FMT>::QK);
    const size_t as = cuda_act_row_bytes(wfmt<FMT>::act, n_in);
    const bool one = nb <= 32 && mm_oneb_on();
    const bool x2 = mm_serx_on(2, n_in), x3 = mm_serx_on(3, n_in);   /* the X instances, every format */
    /* bit 4 (16-byte code loads) only where every block is 16-byte aligned */
    int wp = mm_wpre_on();
    if (wp & 4) {
        bool al = true;
        if constexpr (GR != 0) al = (uintptr_t)gr->W % 16 == 0 && gr->expert_bytes % 16 == 0 && gr->row_bytes % 16 == 0;
        else {
            al = g->row_bytes % 16 == 0;
            for (int wi = 0; wi < g->n; wi++) al = al && (uintptr_t)g->W[wi] % 16 == 0;
        }
        if (!al) wp &= ~4;
    }
    if constexpr (GR != 0) {
        mv_group g0;
        memset(&g0, 0, sizeof g0);
        const dim3 grid((unsigned)((gr->n_out + MM_BM - 1) / MM_BM), (unsigned)max_tiles);
        if (one) return mm_go_serial_x<FMT, GR, 3>(x3, grid, st, g0, *gr, nb, act, as, 0, 0, NULL, wp);
        return mm_go_serial_x<FMT, GR, 2>(x2, grid, st, g0, *gr, nb, act, as, 0, 0, NULL, wp);
    } else {
        const int rows = g->row_start[g->n];
        dim3 grid((unsigned)((rows + MM_BM - 1) / MM_BM), (unsigned)((T + MM_BN - 1) / MM_BN));
        const int ks = mm_split_ks_serial(g, (int)(grid.x * grid.y), nb, rows, T);
        grid.z = 1u << ks;
        if (one && !ks) return mm_go_serial_x<FMT, GR, 3>(x3, grid, st, *g, mm_grouped{}, nb, act, as, T, 0, g->ws, wp);
        if constexpr (mmf<FMT>::QK == 32) {   /* bit 8: the activations re-laid in ORD 2 X's step order into ws (unsplit) */
            constexpr bool ONE = mmf<FMT>::kind == 2;
            const size_t need = (size_t)grid.y * MM_ATL_NCH(nb) * mm_atl<ONE>::CH;
            if ((wp & 8) && x2 && !ks && T >= mm_atl_min && g->ws && need <= g->ws_floats * sizeof(float) &&
                as == (size_t)nb * mm_atl<ONE>::BS) {
                mm_atl_n++;
                klaunch(mm_act_tile_kernel<ONE>, dim3((unsigned)MM_ATL_NCH(nb), grid.y), 256, 0, st, (const uint8_t *)act, as, T,
                        nb, (uint8_t *)g->ws);
                if (CU_LAUNCHED()) return -1;
                return mm_go_serial_x<FMT, GR, 2>(true, grid, st, *g, mm_grouped{}, nb, g->ws, as, T, 0, g->ws, wp);
            }
        }
        wp &= ~8;
        const int rc = mm_go_serial_x<FMT, GR, 2>(x2, grid, st, *g, mm_grouped{}, nb, act, as, T, ks, g->ws, wp);
        if (rc || !ks) return rc;
        const int64_t n = (int64_t)rows * T;
        klaunch(mm_serial_combine, dim3((unsigned)((n + 255) / 256)), 256, 0, st, *g, (const float *)g->ws, nb < 32 ? nb : 32, T);
    }
    return CU_LAUNCHED();
}

template <int FMT>
static int mm_launch(const mv_group *g, int64_t n_in, const void *act, int T, cudaStream_t st) {
    if (canon_serial) return mm_launch_serial<FMT, 0>(g, NULL, n_in, act, T, 0, st);
    if constexpr (mm_diag<FMT>::v)
        if (mm_mode == 4) return mm_launch_order_diag<FMT>(g, n_in, act, T, st);
    static int attr[4];
    const int mode = mm_both<FMT>::v && mm_mode == 3 ? 3 : 2;   /* 16 warps: the first kernel's formats only */
    const size_t smem = 2 * sizeof(mm_tile2<mmf<FMT>::QK>);
    if (!attr[mode]) {
        cudaError_t e;
        if constexpr (mm_both<FMT>::v)
            e = mode == 3 ? cudaFuncSetAttribute(mm_kernel2<FMT, 1, 0>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem)
                          : cudaFuncSetAttribute(mm_kernel2<FMT, 2, 0>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
        else
            e = cudaFuncSetAttribute(mm_kernel2<FMT, 2, 0>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
        if (CU_CHECK(e)) return -1;
        attr[mode] = 1;
    }
    const int nb = (int)(n_in / mmf<FMT>::QK);
    const size_t as = cuda_act_row_bytes(wfmt<FMT>::act, n_in);
    const int rows = g->row_start[g->n];
    dim3 grid((unsigned)((rows + MM_BM - 1) / MM_BM), (unsigned)((T + MM_BN - 1) / MM_BN));
    const int ks = mm_split_ks(g, (int)(grid.x * grid.y), nb, rows, T);
    grid.z = 1u << ks;
    int rc = 0;
    if (const int pc = mm_pipe_code<FMT>(nb)) {
        int S, nbs;
        mm_pipe_shape<FMT>(pc, &S, &nbs);
        if (mm_attr3<FMT, 0>()) return -1;
        klaunch(mm_kernel3<FMT, 0>, grid, 256, (size_t)S * mm_pcfg<FMT>::stage_bytes(nbs), st, *g, mm_grouped{}, nb,
                (const uint8_t *)act, as, T, ks, g->ws, S, nbs);
    } else if (mm_both<FMT>::v && mode == 3) {
        if constexpr (mm_both<FMT>::v)
            klaunch(mm_kernel2<FMT, 1, 0>, grid, 512, smem, st, *g, mm_grouped{}, nb, (const uint8_t *)act, as, T, ks, g->ws,
                    mm_wpre_on() & 1);
    } else
        klaunch(mm_kernel2<FMT, 2, 0>, grid, 256, smem, st, *g, mm_grouped{}, nb, (const uint8_t *)act, as, T, ks, g->ws,
                mm_wpre_on() & 1);
    rc = CU_LAUNCHED();
    if (rc || !ks) return rc;
    const int64_t n = (int64_t)rows * T;
    klaunch(mm_split_combine, dim3((unsigned)((n + 255) / 256)), 256, 0, st, *g, (const float *)g->ws, ks, T);
    return CU_LAUNCHED();
}

/* the grouped launch: grid (row tiles of n_out, max_tiles); CTAs past the list's count exit */
template <int FMT>
static int mm_launch_grouped(const mm_grouped *gr, int64_t n_in, const void *act, int max_tiles, cudaStream_t st) {
    if (canon_serial) return mm_launch_serial<FMT, 1>(NULL, gr, n_in, act, 0, max_tiles, st);
    static int attr;
    const size_t smem = 2 * sizeof(mm_tile2<mmf<FMT>::QK>);
    if (!attr) {   /* once per kernel launched */
        if (CU_CHECK(cudaFuncSetAttribute(mm_kernel2<FMT, 2, 1>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem)))
            return -1;
        attr = 1;
    }
    const int nb = (int)(n_in / mmf<FMT>::QK);
    const size_t as = cuda_act_row_bytes(wfmt<FMT>::act, n_in);
    mv_group g;
    memset(&g, 0, sizeof g);
    dim3 grid((unsigned)((gr->n_out + MM_BM - 1) / MM_BM), (unsigned)max_tiles);
    if (const int pc = mm_pipe_code<FMT>(nb)) {
        int S, nbs;
        mm_pipe_shape<FMT>(pc, &S, &nbs);
        if (mm_attr3<FMT, 1>()) return -1;
        klaunch(mm_kernel3<FMT, 1>, grid, 256, (size_t)S * mm_pcfg<FMT>::stage_bytes(nbs), st, g, *gr, nb,
                (const uint8_t *)act, as, 0, 0, (float *)NULL, S, nbs);
        return CU_LAUNCHED();
    }
    klaunch(mm_kernel2<FMT, 2, 1>, grid, 256, smem, st, g, *gr, nb, (const uint8_t *)act, as, 0, 0, (float *)NULL,
            mm_wpre_on() & 1);
    return CU_LAUNCHED();
}

int cuda_mm_grouped(int type, const void *W, size_t expert_bytes, size_t row_bytes, int n_out, int64_t n_in,
                    const void *act, const int *groups, const int *tiles, int max_tiles, float *y, cudaStream_t st) {
    if (max_tiles < 1 || n_out < 1 || !cuda_mm_supported(type, n_in)) return -1;
    if (cuda_mm_tables_init()) return -1;
    mm_grouped gr;
    gr.tiles = tiles; gr.groups = groups; gr.W = (const uint8_t *)W;
    gr.expert_bytes = expert_bytes; gr.row_bytes = row_bytes; gr.n_out = n_out; gr.y = y;
    switch (type) {
#define F(FM) case FM: return mm_launch_grouped<FM>(&gr, n_in, act, max_tiles, st);
    MM_FORMATS(F)
#undef F
    default: return -1;
    }
}

int cuda_mm_group(int type, const mv_group *g, int64_t n_in, const void *act, int T, cudaStream_t st) {
    if (g->swiglu || T < 1 || !cuda_mm_supported(type, n_in)) return -1;
    if (cuda_mm_tables_init()) return -1;   /* the IQ codebooks of this file (once) */
    switch (type) {
#define F(FM) case FM: return mm_launch<FM>(g, n_in, act, T, st);
    MM_FORMATS(F)
#undef F
    default: return -1;
    }
}

/* tests: a grouped launch from host lists (groups and tiles as moe.cu builds them), synchronous */
extern "C" int cuda_mm_grouped_test(int type, const void *W, size_t expert_bytes, size_t row_bytes, int n_out, int64_t n_in,
                                    const void *act, const int *groups, int n_groups_ints, const int *tiles,
                                    int n_tiles_ints, int max_tiles, float *y) {
    int *dg = NULL, *dt = NULL, rc = -1;
    if (cudaMalloc((void **)&dg, sizeof(int) * n_groups_ints) == cudaSuccess &&
        cudaMalloc((void **)&dt, sizeof(int) * n_tiles_ints) == cudaSuccess &&
        cudaMemcpy(dg, groups, sizeof(int) * n_groups_ints, cudaMemcpyHostToDevice) == cudaSuccess &&
        cudaMemcpy(dt, tiles, sizeof(int) * n_tiles_ints, cudaMemcpyHostToDevice) == cudaSuccess)
        rc = cuda_mm_grouped(type, W, expert_bytes, row_bytes, n_out, n_in, act, dg, dt, max_tiles, y, 0);
    if (!rc && cudaDeviceSynchronize() != cudaSuccess) rc = -1;
    if (rc) cudaGetLastError();
    cudaFree(dg);
    cudaFree(dt);
    return rc;
}
