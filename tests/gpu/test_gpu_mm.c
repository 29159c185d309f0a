/* Wide passes on the GPU (T > 8 columns): the tensor-core matmul (src/cuda/mm.cu) and the
 * matvec over slices of 8 give every column the bits of the CPU reference (act_quantize_row +
 * quant_traits.dot_ref), for every format mm.cu covers (all but Q2_0) and for Q2_0, which falls back, at
 * widths 9, 17, 64, 100 and 512, with rows that straddle tiles, rows of one block per lane,
 * of fewer blocks than lanes, of more than 32 blocks (two per lane) and of 6-7 blocks per lane,
 * columns of N(0,1) and columns whose activation codes are all +-127 (extreme bsums);
 * the 8-warp kernel also with its lane positions split over 2, 8 and 32 CTAs per tile (the split
 * of small grids); all of that again with the pipelined kernel (STRATA_CUDA_MM_PIPE=1); and the
 * grouped (MoE) matmul, two-tile and pipelined, on three experts' tiles.
 *
 *   test_gpu_mm                    the parity test
 *   test_gpu_mm bench [F1,F2..|all] [C1,C2..]
 *                                  the microbenchmark: 4096 rows of 14336 at 512, 64 and 16 columns
 *                                  per format (or only the listed ones), the two-tile kernel against
 *                                  the pipelined one and the default choice (STRATA_CUDA_MM_PIPE -1;
 *                                  codes C of the pipelined kernel: 1 its default,
 *                                  10 S + NB S stages of NB blocks), over four weight copies (132+ MB,
 *                                  more than the 60 MB L2; MM_BENCH_COPIES=1..4 sets the count: 1
 *                                  is L2-resident, as llama.cpp's test-backend-ops times it;
 *                                  MM_BENCH_WIDTHS=1 times n = 512 alone; MM_BENCH_K / MM_BENCH_M
 *                                  another shape: rows of K values, M rows); TFLOPS and a checksum
 *                                  (FNV-1a of the output bits) each
 *   test_gpu_mm bench-modes [F..]  at 512 columns: the 8- and 16-warp kernels and the matvec slices
 *   test_gpu_mm bench-order [F..|all] [K,M]
 *                                  at 512 and 64 columns, M rows of K values (default 14336,4096):
 *                                  the two-tile kernel (the canonical
 *                                  counter, one CTA per SM) against its walk-order instrument (one
 *                                  float per output, two CTAs per SM; Q4_0, Q8_0, Q4_K, Q6_K,
 *                                  IQ3_XXS): what the canonical order costs; the instrument's bits
 *                                  are not canonical, so its checksum differs and the largest
 *                                  difference (relative to the output's largest magnitude) is
 *                                  printed */
#include "test.h"
#include <stdint.h>
#include <time.h>
#include "quant/quant.h"
#include "quant/quant_canon.h"
#include "core/util.h"
#include "cuda/cuda_backend.h"

#define GPU_RAND_SEED 0x243F6A8885A308D3ull
#include "gpu_rand.h"
static uint64_t fnv(const void *p, size_t n) {
    const uint8_t *b = p;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) { h ^= b[i]; h *= 0x100000001b3ull; }
    return h;
}

/* xmode 0: N(0,1) columns (column 0 with a zero block); 1: columns of constant magnitude, the
 * activation codes all +-127 (the act_q8_K sums per 16 at their extremes +-2032, both signs in one
 * block: the min term's largest integers): column c is +1 everywhere (c % 3 == 0), -1 (c % 3 == 1),
 * or +-1000 alternating per 16 values (c % 3 == 2) */
static void check(int type, int64_t n_in, int64_t n_out, int T, int xmode) {
    const quant_traits *qt = quant_traits_get(type);
    size_t rb = quant_row_bytes(type, n_in), ab = act_row_bytes(qt->act, n_in);
    uint8_t *W = malloc(rb * n_out), *act = malloc(ab * T);
    float *src = malloc(sizeof(float) * n_in), *x = malloc(sizeof(float) * n_in * T);
    float *ref = malloc(sizeof(float) * n_out * T), *y = malloc(sizeof(float) * n_out * T);
    for (int64_t r = 0; r < n_out; r++) {
        for (int64_t i = 0; i < n_in; i++) src[i] = rnd_val();
        qt->quant_row(src, W + r * rb, n_in);
    }
    for (int64_t i = 0; i < n_in * T; i++) x[i] = rnd_val();
    for (int64_t i = 0; i < 32 && i < n_in; i++) x[i] = 0.0f;   /* a zero block in column 0 */
    if (xmode == 1)
        for (int c = 0; c < T; c++)
            for (int64_t i = 0; i < n_in; i++)
                x[(size_t)c * n_in + i] = c % 3 == 0 ? 1.0f : c % 3 == 1 ? -1.0f : (i / 16) % 2 ? 1000.0f : -1000.0f;
    for (int c = 0; c < T; c++) act_quantize_row(qt->act, x + (size_t)c * n_in, act + (size_t)c * ab, n_in);
    for (int c = 0; c < T; c++)
        for (int64_t r = 0; r < n_out; r++)
            ref[(size_t)c * n_out + r] = qt->dot_ref(W + r * rb, act + (size_t)c * ab, n_in);
    void *dW = cuda_malloc(rb * n_out), *dx = cuda_malloc(sizeof(float) * n_in * T), *dy = cuda_malloc(sizeof(float) * n_out * T);
    CHECK(dW && dx && dy);
    if (dW && dx && dy) {
        cuda_memcpy_h2d(dW, W, rb * n_out);
        cuda_memcpy_h2d(dx, x, sizeof(float) * n_in * T);
        /* tensor cores (16 warps, 8 warps), 8 warps with the lane positions split over 2, 8 and 32
         * CTAs per tile (STRATA_CUDA_MM_SPLIT; "auto" splits only grids smaller than the SMs), the
         * same with the pipelined kernel (STRATA_CUDA_MM_PIPE=1), the matvec slices */
        static const struct { int mm, split, pipe, wpre; const char *name; int one, serx; } cfg[] = {   /* one: STRATA_CUDA_MM_ONEB=1,
                                                                                                      * serx: STRATA_CUDA_MM_SERX=1 */
            { 3, -1, 0, 1, "tensor cores, 16 warps", 0, 0 },     { 2, -1, 0, 1, "tensor cores, 8 warps", 0, 0 },
            { 2, 2, 0, 1, "tensor cores, split 2", 0, 0 },       { 2, 8, 0, 1, "tensor cores, split 8", 0, 0 },
            { 2, 32, 0, 1, "tensor cores, split 32", 0, 0 },     { 2, -1, 1, 1, "pipelined", 0, 0 },
            { 3, -1, 1, 1, "pipelined (MM=3 set)", 0, 0 },       { 2, 2, 1, 1, "pipelined, split 2", 0, 0 },
            { 2, 8, 1, 1, "pipelined, split 8", 0, 0 },          { 2, 32, 1, 1, "pipelined, split 32", 0, 0 },
            { 2, -1, 22, 1, "pipelined, 2 stages of 2", 0, 0 },  { 2, 8, 63, 1, "pipelined, 6 stages of 3, split 8", 0, 0 },
            { 3, -1, 0, 0, "16 warps, first weight loads", 0, 0 }, { 2, 8, 0, 0, "8 warps, first weight loads, split 8", 0, 0 },
            { 2, -1, 0, 0, "8 warps, first weight loads", 0, 0 },  { 2, -1, -1, 1, "auto kernel (STRATA_CUDA_MM_PIPE -1)", 0, 0 },
            /* ONEB 1 unsplit (split 0: the auto split of these small grids would take ORD 2) */
            { 2, 0, 0, 3, "8 warps, one float an output (ONEB 1), activation copies by warps", 1, 0 },
            { 2, 0, 0, 7, "8 warps, ONEB 1, activation copies by warps, 16-byte K-quant code loads", 1, 0 },
            { 2, 0, 0, 1, "8 warps, one float an output (ONEB 1)", 1, 0 },
            { 2, 8, 0, 3, "8 warps, ONEB 1 and WPRE 3, split 8 (the lane values: ORD 2)", 1, 0 },
            /* SERX 1: four blocks a step (32-value formats; ORD 3 consecutive, ORD 2 a lane's, partial steps on
             * rows of 2, 18, 33 and 200 blocks), the biased conversion, the 256-value formats' 16-byte stores
             * of their decoded weights (ORD 3 and 2; WPRE 1: Q4_K / Q5_K keep the 4-byte ones), ORD 2 with
             * the WPRE bits 2 and 4 */
            { 2, 0, 0, 7, "SERX 1, ONEB 1, WPRE 7 (ORD 3 X)", 1, 1 },
            { 2, 0, 0, 7, "SERX 1, ONEB 0, WPRE 7 (ORD 2 X)", 0, 1 },
            { 2, 0, 0, 1, "SERX 1, ONEB 0, WPRE 1 (ORD 2 X, the first activation copies)", 0, 1 },
            { 2, 8, 0, 7, "SERX 1, WPRE 7, split 8 (ORD 2 X split)", 1, 1 },
            { 2, -1, 0, 7, "SERX 1, WPRE 7, auto split", 1, 1 },
            /* SERX 4: ORD 2 X on rows of at least 4096 values (the 32-value formats' rows of 200 blocks, the
             * 256-value ones' of 33 and 200), the instances without X on the others */
            { 2, -1, 0, 7, "SERX 4, WPRE 7, auto split (ORD 2 X on rows of >= 4096 values)", 1, 4 },
            /* WPRE bit 8: the 32-value formats' activations re-laid in ORD 2 X's step order by a pre-pass
             * (unsplit launches; rows of 2, 18, 33 and 200 blocks: partial steps, lanes without blocks;
             * columns past T zero) */
            { 2, 0, 0, 15, "SERX 1, ONEB 0, WPRE 15 (ORD 2 X, the activations re-laid in step order)", 0, 1 },
            { 2, -1, 0, 15, "SERX 4, WPRE 15, auto split", 1, 4 },
            { 0, -1, 0, 1, "matvec slices", 0, 0 },
        };
        for (size_t ci = 0; ci < sizeof cfg / sizeof cfg[0]; ci++) {
            /* the serial order (the default): every tensor-core configuration takes the one serial kernel (no
             * pipelined or 16-warp kernel; its own split, over the row's lanes), so the 8-warp
             * entries with their splits and the matvec slices */
            if (canon_serial && cfg[ci].mm != 0 && !(cfg[ci].mm == 2 && cfg[ci].pipe == 0 && cfg[ci].wpre))
                continue;
            cuda_mm_set(cfg[ci].mm);
            cuda_mm_split_set(cfg[ci].split);
            cuda_mm_pipe_set(cfg[ci].pipe);
            cuda_mm_wpre_set(cfg[ci].wpre);
            cuda_mm_oneb_set(cfg[ci].one ? 1 : 0);   /* explicit both ways: ONEB=1 is the default since 2026-12-05 */
            cuda_mm_serx_set(cfg[ci].serx);
            memset(y, 0xFF, sizeof(float) * n_out * T);
            cuda_memcpy_h2d(dy, y, sizeof(float) * n_out * T);
            const long atl0 = cuda_mm_atl_count();
            int rc = cuda_matvec(dW, type, n_in, n_out, dx, T, dy, NULL) || cuda_synchronize();
            CHECKF(rc == 0, "%s: cuda_matvec T=%d failed: %s", qt->name, T, cuda_last_error());
            if (rc) break;
            if (canon_serial && cfg[ci].wpre == 15 && cfg[ci].split == 0 && qt->blck == 32 && type != TYPE_Q2_0)
                CHECKF(cuda_mm_atl_count() == atl0 + 1, "%s (%s) n_in=%lld T=%d: the re-laid activations were not taken",
                       qt->name, cfg[ci].name, (long long)n_in, T);
            cuda_memcpy_d2h(y, dy, sizeof(float) * n_out * T);
            int bad = 0;
            for (size_t i = 0; i < (size_t)n_out * T; i++)
                if (memcmp(&y[i], &ref[i], 4) && bad++ < 3)
                    fprintf(stderr, "%s %s n_in=%lld T=%d col %zu row %zu: gpu %.9g ref %.9g\n", qt->name,
                            cfg[ci].name, (long long)n_in, T, i / n_out, i % n_out, y[i], ref[i]);
            CHECKF(bad == 0, "%s (%s) n_in=%lld n_out=%lld T=%d xmode %d: %d outputs differ from the CPU reference",
                   qt->name, cfg[ci].name, (long long)n_in, (long long)n_out, T, xmode, bad);
        }
        cuda_mm_set(2);
        cuda_mm_split_set(-1);
        cuda_mm_pipe_set(0);
        cuda_mm_wpre_set(-1);
        cuda_mm_oneb_set(-1);
        cuda_mm_serx_set(-1);
    }
    cuda_free(dW); cuda_free(dx); cuda_free(dy);
    free(W); free(act); free(src); free(x); free(ref); free(y);
}

/* The grouped (MoE) matmul against the CPU reference, two-tile and pipelined kernels: three
 * experts' weights, groups of 70 pairs (expert 1: two column tiles, the second ragged), 9 (expert
 * 0) and 33 (expert 2), launched with a grid bound of one tile more than the list holds. */
static void check_grouped(int type, int64_t n_in, int64_t n_out) {
    const quant_traits *qt = quant_traits_get(type);
    const int E = 3, P = 112;
    const int groups[] = { 3, 1, 0, 70, 0, 0, 70, 9, 0, 2, 79, 33, 0 };
    const int tiles[] = { 4, 0, 0, 0, 64, 1, 0, 2, 0 };
    const int expert_of[] = { 1, 0, 2 }, first[] = { 0, 70, 79 }, count[] = { 70, 9, 33 };
    size_t rb = quant_row_bytes(type, n_in), ab = act_row_bytes(qt->act, n_in), eb = rb * n_out;
    uint8_t *W = malloc(eb * E), *act = malloc(ab * P);
    float *src = malloc(sizeof(float) * n_in), *ref = malloc(sizeof(float) * n_out * P), *y = malloc(sizeof(float) * n_out * P);
    for (int64_t r = 0; r < n_out * E; r++) {
        for (int64_t i = 0; i < n_in; i++) src[i] = rnd_val();
        qt->quant_row(src, W + r * rb, n_in);
    }
    for (int p = 0; p < P; p++) {
        for (int64_t i = 0; i < n_in; i++) src[i] = rnd_val();
        act_quantize_row(qt->act, src, act + (size_t)p * ab, n_in);
    }
    for (int gi = 0; gi < 3; gi++)
        for (int c = 0; c < count[gi]; c++)
            for (int64_t r = 0; r < n_out; r++) {
                const size_t pr = (size_t)(first[gi] + c);
                ref[pr * n_out + r] = qt->dot_ref(W + expert_of[gi] * eb + r * rb, act + pr * ab, n_in);
            }
    void *dW = cuda_malloc(eb * E), *da = cuda_malloc(ab * P), *dy = cuda_malloc(sizeof(float) * n_out * P);
    CHECK(dW && da && dy);
    if (dW && da && dy) {
        cuda_memcpy_h2d(dW, W, eb * E);
        cuda_memcpy_h2d(da, act, ab * P);
        cuda_mm_set(2);
        /* two-tile, pipelined, pipelined with 2 stages of 2, two-tile with the first weight loads, then
         * the serial order's one float an output (STRATA_CUDA_MM_ONEB=1) with and without the
         * activation copies by warps (STRATA_CUDA_MM_WPRE bit 2), and with the 16-byte code loads (bit 4) */
        /* then STRATA_CUDA_MM_SERX=1 with ONEB 1 and 0 (ORD 3 and ORD 2 X) */
        static const int pipes[] = { 0, 1, 22, 0, 0, 0, 0, 0, 0 }, wpres[] = { 1, 1, 1, 0, 3, 1, 7, 7, 7 },
                         ones[] = { 0, 0, 0, 0, 1, 1, 1, 1, 0 }, serxs[] = { 0, 0, 0, 0, 0, 0, 0, 1, 1 };
        for (int pi = 0; pi < 9; pi++) {
            const int pipe = pipes[pi];
            cuda_mm_pipe_set(pipe);
            cuda_mm_wpre_set(wpres[pi]);
            cuda_mm_oneb_set(ones[pi] ? 1 : 0);
            cuda_mm_serx_set(serxs[pi]);
            memset(y, 0xFF, sizeof(float) * n_out * P);
            cuda_memcpy_h2d(dy, y, sizeof(float) * n_out * P);
            int rc = cuda_mm_grouped_test(type, dW, eb, rb, (int)n_out, n_in, da, groups, 13, tiles, 9, 5, dy);
            CHECKF(rc == 0, "%s: grouped matmul (pipe %d) failed: %s", qt->name, pipe, cuda_last_error());
            if (rc) break;
            cuda_memcpy_d2h(y, dy, sizeof(float) * n_out * P);
            int bad = 0;
            for (size_t i = 0; i < (size_t)n_out * P; i++)
                if (memcmp(&y[i], &ref[i], 4) && bad++ < 3)
                    fprintf(stderr, "%s grouped pipe %d n_in=%lld pair %zu row %zu: gpu %.9g ref %.9g\n", qt->name, pipe,
                            (long long)n_in, i / n_out, i % n_out, y[i], ref[i]);
            CHECKF(bad == 0, "%s grouped (STRATA_CUDA_MM_PIPE %d, WPRE %d, ONEB %d, SERX %d) n_in=%lld n_out=%lld: %d outputs "
                   "differ from the CPU reference", qt->name, pipe, wpres[pi], ones[pi], serxs[pi], (long long)n_in,
                   (long long)n_out, bad);
        }
        cuda_mm_pipe_set(0);
        cuda_mm_wpre_set(-1);
        cuda_mm_oneb_set(-1);
        cuda_mm_serx_set(-1);
    }
    cuda_free(dW); cuda_free(da); cuda_free(dy);
    free(W); free(act); free(src); free(ref); free(y);
}

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }

/* one configuration's time on the bench shape: TFLOPS over reps launches rotating the weight
 * copies (after one warm-up), and the FNV-1a checksum of the last output */
static double bench_one(void *const *dW, int copies, int type, int64_t n_in, int64_t n_out, const void *dx, int T, void *dy,
                        float *y, int reps, uint64_t *sum) {
    cuda_matvec(dW[0], type, n_in, n_out, dx, T, dy, NULL);
    cuda_synchronize();
    double t0 = now();
    for (int r = 0; r < reps; r++) cuda_matvec(dW[r % copies], type, n_in, n_out, dx, T, dy, NULL);
    cuda_synchronize();
    double dt = (now() - t0) / reps;
    cuda_memcpy_d2h(y, dy, sizeof(float) * n_out * T);
    *sum = fnv(y, sizeof(float) * n_out * T);
    return 2.0 * n_in * n_out * T / dt / 1e12;
}

/* llama.cpp's MUL_MAT perf shape m = 4096, k = 14336 (n_out 4096, n_in 14336), four weight
 * copies in rotation. modes = 0: the two-tile kernel (8 warps) against the pipelined one
 * (STRATA_CUDA_MM_PIPE) at n = 512, 64 and 16; modes = 1: at n = 512 the 8- and 16-warp two-tile
 * kernels against the matvec in slices of 8; modes = 2: at n = 512 and 64 the two-tile kernel
 * against its walk-order instrument (cuda_mm_set(4); the formats of mm.cu's mm_diag). */
static int64_t bench_k = 14336, bench_m = 4096;   /* bench-order's optional shape */
static void bench(int type, int modes, const int *codes, int n_codes) {
    const quant_traits *qt = quant_traits_get(type);
    const int TM = 512;
    /* MM_BENCH_COPIES=1: one weight matrix, L2-resident as llama.cpp's test-backend-ops times it
     * (22-33 MB at this shape: the like-for-like figure); default 4 copies, beyond the 60 MB L2 */
    const char *ce = getenv("MM_BENCH_COPIES");
    /* MM_BENCH_K / MM_BENCH_M: another shape for the default mode's lines (n_in, n_out) */
    const char *ke = getenv("MM_BENCH_K"), *me = getenv("MM_BENCH_M");
    if (!modes && ke && atoll(ke) >= qt->blck && atoll(ke) % qt->blck == 0) bench_k = atoll(ke);
    if (!modes && me && atoll(me) >= 1) bench_m = atoll(me);
    const int64_t n_in = bench_k, n_out = bench_m;
    const int copies = ce && atoi(ce) >= 1 && atoi(ce) <= 4 ? atoi(ce) : 4;
    size_t rb = quant_row_bytes(type, n_in);
    uint8_t *W = malloc(rb * n_out);
    float *src = malloc(sizeof(float) * n_in), *x = malloc(sizeof(float) * n_in * TM), *y = malloc(sizeof(float) * n_out * TM);
    for (int64_t r = 0; r < n_out; r++) {   /* 64 quantized rows, repeated: quantizing is the slow part here */
        if (r < 64) {
            for (int64_t i = 0; i < n_in; i++) src[i] = rnd_val();
            qt->quant_row(src, W + r * rb, n_in);
        } else memcpy(W + r * rb, W + (r % 64) * rb, rb);
    }
    for (int64_t i = 0; i < n_in * TM; i++) x[i] = rnd_val();
    void *dW[4], *dx = cuda_malloc(sizeof(float) * n_in * TM), *dy = cuda_malloc(sizeof(float) * n_out * TM);
    for (int i = 0; i < copies; i++) { dW[i] = cuda_malloc(rb * n_out); cuda_memcpy_h2d(dW[i], W, rb * n_out); }
    cuda_memcpy_h2d(dx, x, sizeof(float) * n_in * TM);
    if (modes == 1) {
        double tf[4] = { 0, 0, 0, 0 };
        uint64_t sum[4] = { 0, 0, 0, 0 };
        cuda_mm_pipe_set(0);
        for (int mm = 3; mm >= 0; mm -= mm == 2 ? 2 : 1) {
            cuda_mm_set(mm);
            tf[mm] = bench_one(dW, copies, type, n_in, n_out, dx, TM, dy, y, 8, &sum[mm]);
        }
        printf("mm %-8s m=4096 k=14336 n=512 TFLOPS: 8 warps (default) %6.2f | 16 warps %6.2f | matvec slices %6.2f  "
               "checksum %016llx%s\n", qt->name, tf[2], tf[3], tf[0], (unsigned long long)sum[2],
               sum[0] == sum[2] && sum[3] == sum[2] ? " (all three equal)" : "  CHECKSUMS DIFFER");
    } else if (!modes) {
        static const int widths[] = { 512, 64, 16 };
        const char *we = getenv("MM_BENCH_WIDTHS");   /* 1: n = 512 alone */
        const int nw = we && atoi(we) >= 1 && atoi(we) <= 3 ? atoi(we) : 3;
        cuda_mm_set(2);
        for (int wi = 0; wi < nw; wi++) {
            const int T = widths[wi], reps = T >= 512 ? 8 : 32;
            uint64_t sum0, sum;
            cuda_mm_pipe_set(0);
            const double tf0 = bench_one(dW, copies, type, n_in, n_out, dx, T, dy, y, reps, &sum0);
            printf("mm %-8s m=%lld k=%lld n=%-3d TFLOPS: two-tile %6.2f  checksum %016llx\n", qt->name, (long long)n_out,
                   (long long)n_in, T, tf0, (unsigned long long)sum0);
            for (int ci = 0; ci < n_codes; ci++) {
                cuda_mm_pipe_set(codes[ci]);
                const double tf = bench_one(dW, copies, type, n_in, n_out, dx, T, dy, y, reps, &sum);
                printf("mm %-8s m=%lld k=%lld n=%-3d TFLOPS: pipelined (STRATA_CUDA_MM_PIPE %2d) %6.2f (x%.2f)  checksum %016llx%s\n",
                       qt->name, (long long)n_out, (long long)n_in, T, codes[ci], tf, tf / tf0, (unsigned long long)sum, sum == sum0 ? " (equal)" : "  DIFFERS");
            }
            cuda_mm_pipe_set(-1);   /* what a pass gets by default (the automatic choice) */
            const double tfa = bench_one(dW, copies, type, n_in, n_out, dx, T, dy, y, reps, &sum);
            printf("mm %-8s m=%lld k=%lld n=%-3d TFLOPS: default (STRATA_CUDA_MM_PIPE -1) %6.2f (x%.2f)  checksum %016llx%s\n",
                   qt->name, (long long)n_out, (long long)n_in, T, tfa, tfa / tf0, (unsigned long long)sum, sum == sum0 ? " (equal)" : "  DIFFERS");
        }
    }
    if (modes == 2) {   /* bench-order */
        static const int widths[] = { 512, 64 };
        float *y2 = malloc(sizeof(float) * n_out * TM);
        cuda_mm_pipe_set(0);
        for (int wi = 0; wi < 2; wi++) {
            const int T = widths[wi], reps = T >= 512 ? 8 : 32;
            uint64_t s2, s4;
            double tf2[2], tf4[2];
            for (int round = 0; round < 2; round++) {   /* alternating, twice */
                cuda_mm_set(2);
                tf2[round] = bench_one(dW, copies, type, n_in, n_out, dx, T, dy, y2, reps, &s2);
                cuda_mm_set(4);
                tf4[round] = bench_one(dW, copies, type, n_in, n_out, dx, T, dy, y, reps, &s4);
            }
            double dmax = 0, ymax = 0;
            for (int64_t i = 0; i < n_out * T; i++) {
                const double d = fabs((double)y[i] - (double)y2[i]), a = fabs((double)y2[i]);
                if (d > dmax) dmax = d;
                if (a > ymax) ymax = a;
            }
            printf("mm %-8s m=%lld k=%lld n=%-3d TFLOPS: canonical two-tile %6.2f / %6.2f | walk order, 2 CTAs/SM "
                   "%6.2f / %6.2f (x%.2f)  checksums %016llx / %016llx, largest difference %.3g of max |y|\n",
                   qt->name, (long long)n_out, (long long)n_in, T, tf2[0], tf2[1], tf4[0], tf4[1], (tf4[0] + tf4[1]) / (tf2[0] + tf2[1]),
                   (unsigned long long)s2, (unsigned long long)s4, ymax > 0 ? dmax / ymax : dmax);
        }
        free(y2);
    }
    cuda_mm_set(2);
    cuda_mm_pipe_set(0);
    fflush(stdout);
    for (int i = 0; i < copies; i++) cuda_free(dW[i]);
    cuda_free(dx); cuda_free(dy);
    free(W); free(src); free(x); free(y);
}

/* is format NAME in the comma-separated LIST (NULL or "all": every format)? */
static int listed(const char *list, const char *name) {
    if (!list || !strcmp(list, "all")) return 1;
    char l[256], key[32];
    snprintf(l, sizeof l, ",%s,", list);
    snprintf(key, sizeof key, ",%s,", name);
    return strstr(l, key) != NULL;
}

int main(int argc, char **argv) {
    if (cuda_device_count() <= 0) SKIP_ALL("no-device", "no CUDA device");
    cuda_mm_ext_set(1);   /* every format mm.cu has, STRATA_CUDA_MM_EXT's too */
    cuda_canon_apply();   /* STRATA_CANON as read at startup (no backend is made here) */
    cuda_mm_atl_min_set(1);   /* WPRE bit 8 at every width here (default: passes of 128+ columns) */
    const int all[] = { TYPE_Q4_0, TYPE_Q4_1, TYPE_Q5_0, TYPE_Q5_1, TYPE_Q8_0, TYPE_Q4_K, TYPE_Q5_K, TYPE_Q6_K, TYPE_Q2_K,
                        TYPE_Q3_K, TYPE_IQ3_XXS, TYPE_IQ2_XXS, TYPE_IQ2_XS, TYPE_IQ2_S, TYPE_IQ3_S, TYPE_IQ1_S, TYPE_IQ1_M,
                        TYPE_IQ4_XS, TYPE_IQ4_NL, TYPE_MXFP4, TYPE_Q2_0 };
    const int n_all = (int)(sizeof all / sizeof all[0]);
    if (argc > 1 && !strcmp(argv[1], "bench-order")) {
        if (argc > 3) {   /* K,M: rows of K values, M rows (the 1.5B shape's 2048,2048 / 2048,16384 / 8192,2048) */
            long long k = 0, m = 0;
            if (sscanf(argv[3], "%lld,%lld", &k, &m) == 2 && k > 0 && m > 0 && k % 256 == 0 && m % 64 == 0) {
                bench_k = k;
                bench_m = m;
            } else {
                fprintf(stderr, "bench-order: shape %s: K,M with K a multiple of 256, M of 64\n", argv[3]);
                return 2;
            }
        }
        static const int diag[] = { TYPE_Q4_0, TYPE_Q8_0, TYPE_Q4_K, TYPE_Q6_K, TYPE_IQ3_XXS };
        for (int i = 0; i < 5; i++) {
            if (!listed(argc > 2 ? argv[2] : NULL, quant_traits_get(diag[i])->name)) continue;
            bench(diag[i], 2, NULL, 0);
        }
        return 0;
    }
    if (argc > 1 && (!strcmp(argv[1], "bench") || !strcmp(argv[1], "bench-modes"))) {
        /* optional: the formats to time (comma-separated names, or "all"), then the pipelined
         * kernel's shapes (STRATA_CUDA_MM_PIPE codes, comma-separated; default 1) */
        int codes[16], n_codes = 0;
        for (const char *c = argc > 3 ? argv[3] : "1"; *c && n_codes < 16;) {
            const int v = atoi(c);
            if (v > 0) codes[n_codes++] = v;
            while (*c && *c != ',') c++;
            if (*c == ',') c++;
        }
        for (int i = 0; i < n_all; i++) {
            if (!listed(argc > 2 ? argv[2] : NULL, quant_traits_get(all[i])->name)) continue;
            bench(all[i], !strcmp(argv[1], "bench-modes") ? 1 : 0, codes, n_codes);
        }
        return 0;
    }
    for (int i = 0; i < n_all; i++) {
        int type = all[i];
        const int64_t blck = quant_traits_get(type)->blck, big = blck == 256;
        /* rows: fewer blocks than lanes, one per lane, more than 32 (two per lane for some) */
        int64_t shapes[][2] = { { 2 * blck, 70 }, { (big ? 8 : 18) * blck, 130 }, { 33 * blck, 67 } };
        int widths[] = { 9, 17, 64, 100 };
        for (int s = 0; s < 3; s++)
            for (int w = 0; w < 4; w++) check(type, shapes[s][0], shapes[s][1], widths[w], 0);
        check(type, (big ? 8 : 18) * blck, 96, 512, 0);
        check(type, (big ? 8 : 18) * blck, 70, 17, 1);   /* the extreme activation sums */
        check(type, 33 * blck, 130, 64, 1);
        if (!big) {   /* lanes of 6-7 blocks: a full pipelined step of 4 blocks, then one of 2 or 3 */
            check(type, 200 * blck, 67, 9, 0);
            check(type, 200 * blck, 67, 100, 0);
        }
        check_grouped(type, (big ? 8 : 33) * blck, 70);
        check_grouped(type, (big ? 33 : 200) * blck, 64);
        if (!big) check_grouped(type, 18 * blck, 70);   /* one block a lane: the one-float instances (ONEB 1) */
    }
    /* The other canonical order (STRATA_CANON; the tree when the program runs the default chain):
     * the CPU reference and the matmul alike, every configuration above (the tree's kernels: the
     * counter, its split, the pipelined and 16-warp kernels; the chain's: ORD 2 unsplit and split
     * over the row's lanes, S 2, 8, 32 forced, clamped to the lanes, and auto) and the matvec
     * slices; rows of 3 blocks (S 2: lanes 0 | 1-2), fewer blocks than lanes, 33 blocks, plain and
     * grouped */
    const int was = canon_serial;
    canon_serial = !was;
    cuda_canon_apply();
    for (int i = 0; i < n_all; i++) {
        const int type = all[i];
        const int64_t blck = quant_traits_get(type)->blck, big = blck == 256;
        check(type, (big ? 8 : 18) * blck, 130, 64, 0);
        check(type, 3 * blck, 70, 20, 0);
        check(type, 33 * blck, 67, 17, 1);
        check(type, (big ? 8 : 18) * blck, 96, 512, 0);
        check_grouped(type, (big ? 8 : 33) * blck, 70);
    }
    canon_serial = was;
    cuda_canon_apply();
    TEST_DONE();
}
