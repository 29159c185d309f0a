/* Shared helpers of the CUDA files: error recording, exact float helpers, byte loads.
 *
 * Float rule (docs/KERNELS.md): every float operation whose bits matter is written with an
 * explicit round-to-nearest intrinsic (__fadd_rn, __fmul_rn, __fdiv_rn), which nvcc never
 * contracts into an FMA; the files are also compiled with --fmad=false. */
#ifndef STRATA_CUDA_COMMON_CUH
#define STRATA_CUDA_COMMON_CUH
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <stdint.h>
#include <stdio.h>

extern "C" {
#include "quant/blocks.h"
}

/* Programmatic dependent launch (sm_90). klaunch launches a kernel that may then start while
 * the stream's previous kernel is still draining; such a kernel begins with PDL_WAIT()
 * (griddepcontrol.wait: returns once the previous kernel has completed and its writes are
 * visible), so only launch latency and prologue overlap, never data. Since every kernel
 * launched this way waits before its first access, the order of all earlier kernels holds
 * transitively. Off (plain <<<>>> launches) until cuda_set_pdl(mode >= 1): the backend sets it
 * from the device class / STRATA_CUDA_PDL. Bits are unchanged either way. */
/* STRATA_CUDA_PDL=early (mode 2): once its wait has returned, every CTA also signals
 * griddepcontrol.launch_dependents, so the next kernel is launched (its CTAs made resident,
 * their prologue run, blocked at their own wait) while this one computes, instead of when its
 * CTAs exit. The wait still returns only after the whole predecessor has completed and its
 * writes are visible, so data never overlaps and the bits are the same; at most two grids are
 * in flight. The mode lives in a per-file constant (PDL_TU_STATE), read before the wait. */
#define PDL_TU_STATE(name)                                                                       \
    static __constant__ int c_pdl_early;                                                         \
    void cuda_pdl_early_##name(int on) { cudaMemcpyToSymbol(c_pdl_early, &on, sizeof on); }      \
    void cuda_pdl_early_##name##_async(const int *d_on, cudaStream_t st) {                       \
        cudaMemcpyToSymbolAsync(c_pdl_early, d_on, sizeof(int), 0, cudaMemcpyDeviceToDevice, st); \
    }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define PDL_WAIT()                                                                               \
    do {                                                                                         \
        const int pdl_early_ = c_pdl_early;                                                      \
        asm volatile("griddepcontrol.wait;" ::: "memory");                                       \
        if (pdl_early_) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");          \
    } while (0)
#else
#define PDL_WAIT() do { } while (0)
#endif
/* STRATA_CUDA_PREFETCH (set once per backend creation; a prefetch only moves bytes into L2
 * earlier, so no result changes): CUDA_PF_ROWS, a decode matvec's CTAs prefetch their weight
 * rows, and the decode attention's CTAs the K and V rows of their first chunk, before the
 * kernel's griddepcontrol.wait, i.e. while the kernel before it still runs (dependent launch
 * early); CUDA_PF_DOWN, the CTAs of the grouped gate/up kernel prefetch their expert's down
 * matrix (a slice each) for the down launch two kernels later. Per file: */
#define CUDA_PF_ROWS 1
#define CUDA_PF_DOWN 2
#define CUDA_PF_NORMW 4   /* the RMSNorm launches' weights into registers before the wait (ops.cu) */
#define PF_TU_STATE(name)                                                                        \
    static __constant__ int c_prefetch;                                                          \
    void cuda_prefetch_set_##name(int bits) { cudaMemcpyToSymbol(c_prefetch, &bits, sizeof bits); }
void cuda_prefetch_set_matvec(int bits);
void cuda_prefetch_set_moe(int bits);
void cuda_prefetch_set_ops(int bits);
/* the 128-byte lines of [p, p + bytes) into L2, line i by thread i % nt of nt (a hint) */
static __device__ __forceinline__ void l2_prefetch_lines(const void *p, size_t bytes, int i, int nt) {
    const uintptr_t a0 = (uintptr_t)p & ~(uintptr_t)127, end = (uintptr_t)p + bytes;
    for (uintptr_t a = a0 + (uintptr_t)i * 128; a < end; a += (uintptr_t)nt * 128)
        asm volatile("prefetch.global.L2 [%0];" ::"l"(a));
}
/* 0 off, 1 on (the next kernel launches as this one's CTAs exit), 2 early (see above) for the
 * passes of at most max_T columns (STRATA_CUDA_PDL_EARLY_T), on for wider ones */
void cuda_set_pdl(int mode, int max_T);
int cuda_pdl_on(void);
/* early mode: a pass of T columns about to be enqueued on st (never while capturing); switches
 * the files' constants by stream-ordered copies when the pass's class differs from the last */
void cuda_pdl_pass(int T, cudaStream_t st);
#define PDL_TU_DECL(name) void cuda_pdl_early_##name(int on); void cuda_pdl_early_##name##_async(const int *d_on, cudaStream_t st);
PDL_TU_DECL(ops) PDL_TU_DECL(matvec) PDL_TU_DECL(mm) PDL_TU_DECL(moe) PDL_TU_DECL(attn_prompt) PDL_TU_DECL(attn_tc)
template <typename... KArgs, typename... Args>
static inline void klaunch(void (*k)(KArgs...), dim3 grid, dim3 block, size_t shm, cudaStream_t st, Args... args) {
    if (!cuda_pdl_on()) { k<<<grid, block, shm, st>>>(args...); return; }
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid; cfg.blockDim = block; cfg.dynamicSmemBytes = shm; cfg.stream = st;
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = at; cfg.numAttrs = 1;
    cudaLaunchKernelEx(&cfg, k, args...);
}

/* First CUDA error seen by this process (message), and a setter used by CU_CHECK. */
extern "C" const char *cuda_last_error(void);
void cuda_record_error(const char *what, cudaError_t e, const char *file, int line);

#define CU_CHECK(call) ((call) == cudaSuccess ? 0 : (cuda_record_error(#call, cudaGetLastError(), __FILE__, __LINE__), -1))
#define CU_LAUNCHED() (cudaPeekAtLastError() == cudaSuccess ? 0 : (cuda_record_error("kernel launch", cudaGetLastError(), __FILE__, __LINE__), -1))

#define FULL_MASK 0xffffffffu

static __device__ __forceinline__ float h2f(uint16_t h) { return __half2float(__ushort_as_half(h)); }
static __device__ __forceinline__ float bf2f(uint16_t h) { return __uint_as_float((uint32_t)h << 16); }

/* little-endian loads at the alignment a block guarantees */
static __device__ __forceinline__ uint16_t ld_u16(const uint8_t *p) { return *(const uint16_t *)p; }
static __device__ __forceinline__ uint32_t ld_u32(const uint8_t *p) { return *(const uint32_t *)p; }
static __device__ __forceinline__ uint32_t ld_u32_a2(const uint8_t *p) {
    return (uint32_t)ld_u16(p) | (uint32_t)ld_u16(p + 2) << 16;
}
/* N consecutive 4-byte words at any alignment (MXFP4's 17-byte blocks): the N aligned words from the one
 * at or below p and, where p is k = 1..3 bytes past it, the run's missing k last bytes by a predicated
 * 2-byte load (k >= 2) and a predicated byte load (k odd), joined by funnel shifts: N to N + 2 loads
 * where the byte-wise form (ld_u32_a1, deleted) took four byte loads a word. No byte outside
 * [p - k, p + 4 N) is read (the word at or below p lies in the same allocation: allocations are
 * 256-byte aligned). The same values. */
template <int N>
static __device__ __forceinline__ void ld_run_any(uint32_t *dst, const uint8_t *p) {
    const uint32_t k = (uint32_t)(uintptr_t)p & 3u;
    const uint8_t *a = p - k;
    uint32_t w[N + 1];
#pragma unroll
    for (int i = 0; i < N; i++) w[i] = ((const uint32_t *)a)[i];
    w[N] = 0;
    if (k >= 2) w[N] = *(const uint16_t *)(a + 4 * N);
    if (k & 1) w[N] |= (uint32_t)a[4 * N + (k & 2)] << (8 * (k & 2));
#pragma unroll
    for (int i = 0; i < N; i++) dst[i] = __funnelshift_r(w[i], w[i + 1], 8 * k);
}
/* 16-byte global -> shared copy by cp.async (.cg: not kept in L1), n = 16 the piece copied, n = 0 zeros
 * written (the source size: no bytes read); both addresses 16-byte aligned (sm_80+) */
static __device__ __forceinline__ void cp_async16z(void *dst_smem, const void *src, unsigned n) {
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst_smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(d), "l"(src), "r"(n) : "memory");
}
static __device__ __forceinline__ float ld_f32(const uint8_t *p) { return *(const float *)p; }
static __device__ __forceinline__ int ld_i32(const uint8_t *p) { return *(const int *)p; }

/* the canonical order's lane combine (quant_canon.h): 1 the chain (default), 0 the tree
 * (STRATA_CANON=tree); per file, set by cuda_variants_apply / cuda_canon_apply */
static __constant__ int c_canon_serial = 1;
#define CANON_TU_STATE(name) \
    void cuda_canon_set_##name(int on) { cudaMemcpyToSymbol(c_canon_serial, &on, sizeof on); }
void cuda_canon_set_matvec(int on);
void cuda_canon_set_moe(int on);
/* The canonical lane combine of N values a lane (v[0..N): the rows and columns a warp holds);
 * lane 0 ends with each result, the bits of canon_finish in src/quant/quant_canon.h. With
 * STRATA_CANON=tree the tree s = 16, 8, 4, 2, 1 (lane i adds lane i + s); by default the chain
 * over lanes 0..31, the N chains side by side: every lane writes its N values to a shared-memory strip of
 * its warp (value j's 32 lane values at 36 j .. 36 j + 31: a float4 read of 8 lanes at once meets
 * 32 distinct banks), lane j chains value j's lane values in lane order from +0.0 (+0.0 + v0 =
 * v0: a lane value is never -0.0) with float4 reads, and lane 0 takes the results by shuffles;
 * 8 values a round. nl: the lanes that may hold a block (a row of nb < 32 blocks: nb); the
 * others are +0.0, and adding +0.0 to a chain that is never -0.0 changes no bit, so the chain
 * stops at the quad holding lane nl - 1. WARPS: the calling kernel's warps a CTA (its strips);
 * only lane 0's results are defined (the tree's rule), every lane of the warp takes part. */
#define CANON_SERIAL_ST 36
template <int N, int WARPS>
static __device__ __forceinline__ void warp_canon_finish_n(float *v, int nl = 32) {
    if (c_canon_serial) {
        constexpr int CW = N < 8 ? N : 8;
        __shared__ __align__(16) float canon_sc[WARPS * CW * CANON_SERIAL_ST];
        const int lane = threadIdx.x & 31;
        float *s = canon_sc + (threadIdx.x >> 5) * (CW * CANON_SERIAL_ST);
        const int nq = ((nl < 32 ? nl : 32) + 3) >> 2;
#pragma unroll
        for (int j0 = 0; j0 < N; j0 += CW) {
#pragma unroll
            for (int c = 0; c < CW; c++)
                if (j0 + c < N) s[c * CANON_SERIAL_ST + lane] = v[j0 + c];
            __syncwarp();
            float r = 0.0f;
            if (lane < CW) {
                const float4 *q = (const float4 *)(s + lane * CANON_SERIAL_ST);
#pragma unroll
                for (int i = 0; i < 8; i++) {
                    if (i >= nq) break;
                    const float4 x = q[i];
                    r = __fadd_rn(__fadd_rn(__fadd_rn(__fadd_rn(r, x.x), x.y), x.z), x.w);
                }
            }
            __syncwarp();   /* the reads before the next round's writes */
#pragma unroll
            for (int c = 0; c < CW; c++)
                if (j0 + c < N) v[j0 + c] = c == 0 ? r : __shfl_sync(FULL_MASK, r, c);
        }
        return;
    }
#pragma unroll
    for (int j = 0; j < N; j++)
#pragma unroll
        for (int s = 16; s >= 1; s >>= 1) v[j] = __fadd_rn(v[j], __shfl_down_sync(FULL_MASK, v[j], s));
}
/* one value a lane */
template <int WARPS>
static __device__ __forceinline__ float warp_canon_finish(float v, int nl = 32) {
    warp_canon_finish_n<1, WARPS>(&v, nl);
    return v;
}
#endif
