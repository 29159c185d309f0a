/* The sampler on the GPU: src/sample/sample.c's sampler_sample in four launches (graph-capturable,
 * sizes fixed by the vocabulary): prep (one CTA), keys (grid), CUB's radix sort, draw (one CTA);
 * two (prep, draw) when the caller knows the temperature is 0 (greedy + repetition penalty).
 *
 * Same steps, same operation order as the CPU (docs/KERNELS.md, "Sampling"):
 *   1. repetition penalty on a copy of the logits (each distinct token of the window once:
 *      every thread recomputes the penalized value from the original logit, so duplicates
 *      write the same bits and need no de-duplication);
 *   2. the argmax (ties: lowest id), max logit mx; temperature <= 0 stops here;
 *   3. candidates: logit >= mx - 20.7 * temperature (float), sorted by logit descending, ties
 *      by id ascending: one 64-bit key per token (ordered float bits << 32 | ~id; 0 for the
 *      others), sorted descending by cub::DeviceRadixSort; then top-k;
 *   4. p_i = (float)exp((double)(l_i - mx) / temperature) (double exp);
 *   5. min-p: the first i >= 1 with p_i < min_p * p_0 ends the kept set;
 *   6. top-p: the first prefix whose double sum reaches top_p * (the kept sum);
 *   7. q_i = (float)(p_i / sum), u from the same xoshiro256** stream as the CPU sampler,
 *      the token is the first i with u < sum of q_0..q_i (in double).
 * The double sums run in a fixed order (each thread a contiguous segment in order, then a
 * scan over the 1024 segment sums), so the result is deterministic; it differs from the
 * CPU's sequential double sums by rounding only (about m * 2^-53 relative), and CUDA's
 * double exp from libm's by at most one double ulp, which changes a float p_i in about one
 * case in 2^29. So the GPU draws the CPU's token except when u lies within ~1e-6 of a
 * boundary of the cumulative distribution (the tolerance tests/gpu/test_gpu_sample.c uses). */
#include <cub/device/device_radix_sort.cuh>
#include "cuda_internal.h"
#include "cuda_common.cuh"
#include "sample_cuda.h"
#include <math.h>
extern "C" {
#include "strata.h"
}

#define SAMPLE_THREADS 1024     /* one CTA; the block reductions below assume 32 warps */

/* float -> uint32 whose unsigned order is the float order; -0 counts as +0 (the CPU's `>`
 * and `>=` compare them equal, and the tie then goes to the lower id) */
static __device__ __forceinline__ uint32_t f_order(float f) {
    uint32_t b = __float_as_uint(__fadd_rn(f, 0.0f));
    return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
/* descending key order = logit descending, then id ascending */
static __device__ __forceinline__ uint64_t cand_key(float l, int id) {
    return ((uint64_t)f_order(l) << 32) | (uint64_t)(0xffffffffu - (uint32_t)id);
}
static __device__ __forceinline__ int key_id(uint64_t k) { return (int)(0xffffffffu - (uint32_t)k); }

static __device__ __forceinline__ uint64_t rotl64(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
/* xoshiro256**: the CPU sampler's generator (src/sample/sample.c) */
static __device__ __forceinline__ uint64_t xoshiro_next(uint64_t *s) {
    uint64_t r = rotl64(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3]; s[2] ^= t; s[3] = rotl64(s[3], 45);
    return r;
}

static __device__ uint64_t block_max_u64(uint64_t v, uint64_t *sh) {
    for (int o = 16; o; o >>= 1) { uint64_t w = __shfl_xor_sync(FULL_MASK, v, o); v = w > v ? w : v; }
    __syncthreads();
    if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
    __syncthreads();
    v = sh[threadIdx.x & 31];
    for (int o = 16; o; o >>= 1) { uint64_t w = __shfl_xor_sync(FULL_MASK, v, o); v = w > v ? w : v; }
    return v;
}

/* element i of a sum: p_i, or the normalized (float)(p_i / div) when div > 0 */
static __device__ __forceinline__ double cum_elem(const float *pr, int i, double div) {
    return div > 0.0 ? (double)__double2float_rn(__ddiv_rn((double)pr[i], div)) : (double)pr[i];
}

/* Sum of elements 0..m-1 in a fixed order: thread t adds its contiguous segment in order, then
 * the segment sums are scanned (Hillis-Steele). Returns the total. With first != NULL, *first is
 * the smallest i whose running sum c_i has c_i >= target (ge) or target < c_i (!ge); m if none.
 * Every thread of the block must call it. */
static __device__ double block_cum(const float *pr, int m, double div, double target, int ge, int *first, double *sd,
                                   int *si) {
    const int t = threadIdx.x, seg = (m + SAMPLE_THREADS - 1) / SAMPLE_THREADS;
    const int b = min(t * seg, m), e = min(b + seg, m);
    double loc = 0.0;
    for (int i = b; i < e; i++) loc = __dadd_rn(loc, cum_elem(pr, i, div));
    sd[t] = loc;
    __syncthreads();
    for (int o = 1; o < SAMPLE_THREADS; o <<= 1) {
        double v = t >= o ? sd[t - o] : 0.0;
        __syncthreads();
        sd[t] = __dadd_rn(sd[t], v);
        __syncthreads();
    }
    const double total = sd[SAMPLE_THREADS - 1];
    double c = t ? sd[t - 1] : 0.0;
    if (first) {
        if (t == 0) *si = m;
        __syncthreads();
        for (int i = b; i < e; i++) {
            c = __dadd_rn(c, cum_elem(pr, i, div));
            if (ge ? c >= target : target < c) { atomicMin(si, i); break; }
        }
        __syncthreads();
        *first = *si;
    }
    __syncthreads();
    return total;
}

/* Shared between the launches of one draw (the first bytes of the scratch). */
typedef struct {
    int top, pos, n_hist, cnt, penalized;
    float mx;
} sample_state;

/* Launch 1 (one CTA): history update, repetition penalty, argmax. */
__global__ void __launch_bounds__(SAMPLE_THREADS)
sample_prep_kernel(const float *logits, int n, const cuda_sample_params *P, int32_t *hist, int n_hist_arg,
                   const int32_t *ids, const int *d_pos, float *work, sample_state *S) {
    __shared__ uint64_t s_u64[32];
    const int t = threadIdx.x;
    const cuda_sample_params p = *P;
    int n_hist = n_hist_arg, pos = 0;
    if (d_pos) {   /* graph decode: the evaluated token joins the history first */
        pos = *d_pos;
        n_hist = pos + 1;
        if (t == 0) hist[pos] = ids[0];
    }
    __syncthreads();
    /* 1. repetition penalty (sample.c apply_penalty) */
    const float *lg = logits;
    const int pen = p.repeat_penalty != 1.0f && p.repeat_penalty > 0.0f && hist;
    if (pen) {
        for (int i = t; i < n; i += SAMPLE_THREADS) work[i] = logits[i];
        __syncthreads();
        const int start = p.repeat_last_n > 0 && n_hist > p.repeat_last_n ? n_hist - p.repeat_last_n : 0;
        for (int i = start + t; i < n_hist; i += SAMPLE_THREADS) {
            const int id = hist[i];
            if (id < 0 || id >= n) continue;
            const float l = logits[id];
            work[id] = l > 0.0f ? __fdiv_rn(l, p.repeat_penalty) : __fmul_rn(l, p.repeat_penalty);
        }
        __syncthreads();
        lg = work;
    }
    /* 2. argmax, lowest id among equal maxima */
    uint64_t best = 0;
    for (int i = t; i < n; i += SAMPLE_THREADS) {
        const uint64_t k = cand_key(lg[i], i);
        best = k > best ? k : best;
    }
    best = block_max_u64(best, s_u64);
    if (t == 0) {
        S->top = key_id(best);
        S->mx = lg[S->top];
        S->pos = pos;
        S->n_hist = n_hist;
        S->cnt = 0;
        S->penalized = pen;
    }
}

/* Launch 2 (grid): 3a. the candidates' sort keys (0, below every real key, for the others). */
__global__ void sample_keys_kernel(const float *logits, const float *work, int n, const cuda_sample_params *P,
                                   sample_state *S, uint64_t *keys) {
    const float temp = P->temperature;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (temp <= 0.0f || i >= n) return;   /* greedy: nothing to sort */
    const float *lg = S->penalized ? work : logits;
    const float floor_l = __fsub_rn(S->mx, __fmul_rn(20.7f, temp));
    const float l = lg[i];
    const int c = l >= floor_l;
    keys[i] = c ? cand_key(l, i) : 0;
    /* the count: one atomic per warp */
    const unsigned m = __ballot_sync(FULL_MASK, c);
    if ((threadIdx.x & 31) == 0 && m) atomicAdd(&S->cnt, __popc(m));
}

/* Launch 4 (one CTA), after the keys are sorted descending: top-k, probabilities, min-p,
 * top-p, the draw; hands back the token (and, in graph decode, stores it for the next step). */
__global__ void __launch_bounds__(SAMPLE_THREADS)
sample_draw_kernel(const float *logits, const float *work, const cuda_sample_params *P, const sample_state *S,
                   const uint64_t *keys, float *pr, int32_t *ids, int *d_pos, cuda_sample_io *io) {
    __shared__ double s_dbl[SAMPLE_THREADS];
    __shared__ int s_first;
    const int t = threadIdx.x;
    const cuda_sample_params p = *P;
    const float *lg = S->penalized ? work : logits;
    const float mx = S->mx;
    int pick = S->top;
    if (p.temperature > 0.0f) {
        const float temp = p.temperature;
        int nc = S->cnt;
        if (p.top_k > 0 && nc > p.top_k) nc = p.top_k;
        /* 4. unnormalized probabilities in sorted order */
        for (int i = t; i < nc; i += SAMPLE_THREADS) {
            const float d = __fsub_rn(lg[key_id(keys[i])], mx);
            pr[i] = __double2float_rn(exp(__ddiv_rn((double)d, (double)temp)));
        }
        __syncthreads();
        /* 5. min-p */
        int keep = nc;
        if (p.min_p > 0.0f) {
            const float thr = __fmul_rn(p.min_p, pr[0]);
            if (t == 0) s_first = nc;
            __syncthreads();
            for (int i = 1 + t; i < nc; i += SAMPLE_THREADS)
                if (pr[i] < thr) atomicMin(&s_first, i);
            __syncthreads();
            keep = s_first;
            __syncthreads();
        }
        /* 6. top-p */
        if (p.top_p > 0.0f && p.top_p < 1.0f) {
            const double tot = block_cum(pr, keep, 0.0, 0.0, 1, NULL, s_dbl, &s_first);
            int f;
            block_cum(pr, keep, 0.0, __dmul_rn((double)p.top_p, tot), 1, &f, s_dbl, &s_first);
            if (f < keep) keep = f + 1;
        }
        /* 7. the draw */
        const double sum = block_cum(pr, keep, 0.0, 0.0, 1, NULL, s_dbl, &s_first);
        uint64_t rng[4] = { io->rng[0], io->rng[1], io->rng[2], io->rng[3] };
        const double u = (double)(xoshiro_next(rng) >> 11) * 0x1.0p-53;
        int f;
        block_cum(pr, keep, sum, u, 0, &f, s_dbl, &s_first);
        pick = key_id(keys[f < keep ? f : keep - 1]);
        if (t == 0) for (int i = 0; i < 4; i++) io->rng[i] = rng[i];
    }
    if (t == 0) {
        io->token = pick;
        if (d_pos) { ids[0] = pick; *d_pos = S->pos + 1; }
    }
}

/* scratch: [state 256 B][keys in][keys out][work f32][pr f32][CUB temporary storage] */
static size_t align256(size_t n) { return (n + 255) & ~(size_t)255; }
static size_t sort_temp_bytes(int n) {
    size_t b = 0;
    if (cub::DeviceRadixSort::SortKeysDescending(NULL, b, (const uint64_t *)NULL, (uint64_t *)NULL, n) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return b;
}

size_t cuda_sample_scratch_bytes(int n_vocab) {
    size_t tb = sort_temp_bytes(n_vocab);
    if (!tb) return 0;
    return 256 + 2 * align256((size_t)n_vocab * 8) + 2 * align256((size_t)n_vocab * 4) + align256(tb);
}

int cuda_sample(const float *logits, int n_vocab, const cuda_sample_params *d_params, int32_t *hist, int n_hist,
                int32_t *ids, int *d_pos, cuda_sample_io *io, void *scratch, int sort, cudaStream_t st) {
    if (n_vocab <= 0 || !scratch || !io || !d_params) return -1;
    size_t tb = sort_temp_bytes(n_vocab);
    if (!tb) return -1;
    char *b = (char *)scratch;
    sample_state *S = (sample_state *)b;
    uint64_t *kin = (uint64_t *)(b + 256);
    uint64_t *kout = (uint64_t *)((char *)kin + align256((size_t)n_vocab * 8));
    float *work = (float *)((char *)kout + align256((size_t)n_vocab * 8));
    float *pr = (float *)((char *)work + align256((size_t)n_vocab * 4));
    void *temp = (char *)pr + align256((size_t)n_vocab * 4);
    sample_prep_kernel<<<1, SAMPLE_THREADS, 0, st>>>(logits, n_vocab, d_params, hist, n_hist, ids, d_pos, work, S);
    if (CU_LAUNCHED()) return -1;
    if (sort) {   /* 0: the caller knows the temperature is <= 0 (the draw reads no keys) */
        sample_keys_kernel<<<(n_vocab + 255) / 256, 256, 0, st>>>(logits, work, n_vocab, d_params, S, kin);
        if (CU_LAUNCHED()) return -1;
        /* 3b. sort descending: logit, then id ascending (the keys are unique); not-candidates (0) last */
        if (CU_CHECK(cub::DeviceRadixSort::SortKeysDescending(temp, tb, kin, kout, n_vocab, 0, 64, st))) return -1;
    }
    sample_draw_kernel<<<1, SAMPLE_THREADS, 0, st>>>(logits, work, d_params, S, kout, pr, ids, d_pos, io);
    return CU_LAUNCHED();
}

/* ---- C interface ---------------------------------------------------------------------------- */
extern "C" void cuda_sample_params_set(void *dst, const struct strata_sampler_params *sp) {
    cuda_sample_params d;
    memset(&d, 0, sizeof d);
    d.temperature = sp->temperature; d.top_p = sp->top_p; d.min_p = sp->min_p;
    d.repeat_penalty = sp->repeat_penalty; d.top_k = sp->top_k; d.repeat_last_n = sp->repeat_last_n;
    memcpy(dst, &d, sizeof d);
}

extern "C" int32_t cuda_sample_logits(const float *d_logits, int n_vocab, const struct strata_sampler_params *sp,
                                      uint64_t rng[4], const int32_t *hist, int n_hist) {
    cuda_sample_params hp;
    cuda_sample_params_set(&hp, sp);
    cuda_sample_io io;
    memset(&io, 0, sizeof io);
    memcpy(io.rng, rng, sizeof io.rng);
    cuda_sample_params *dp = NULL;
    cuda_sample_io *dio = NULL;
    int32_t *dh = NULL;
    void *scratch = NULL;
    int32_t tok = -1;
    if (CU_CHECK(cudaMalloc((void **)&dp, sizeof hp)) || CU_CHECK(cudaMalloc((void **)&dio, sizeof io)) ||
        CU_CHECK(cudaMalloc((void **)&dh, (size_t)(n_hist > 0 ? n_hist : 1) * sizeof(int32_t))) ||
        CU_CHECK(cudaMalloc(&scratch, cuda_sample_scratch_bytes(n_vocab))))
        goto done;
    if (CU_CHECK(cudaMemcpy(dp, &hp, sizeof hp, cudaMemcpyHostToDevice)) ||
        CU_CHECK(cudaMemcpy(dio, &io, sizeof io, cudaMemcpyHostToDevice)) ||
        (n_hist > 0 && CU_CHECK(cudaMemcpy(dh, hist, (size_t)n_hist * sizeof(int32_t), cudaMemcpyHostToDevice))))
        goto done;
    if (cuda_sample(d_logits, n_vocab, dp, hist ? dh : NULL, n_hist, NULL, NULL, dio, scratch, sp->temperature > 0.0f, 0) ||
        CU_CHECK(cudaMemcpy(&io, dio, sizeof io, cudaMemcpyDeviceToHost)))
        goto done;
    memcpy(rng, io.rng, sizeof io.rng);
    tok = io.token;
done:
    cudaFree(dp); cudaFree(dio); cudaFree(dh); cudaFree(scratch);
    return tok;
}
