/* GPU: the same bits whatever the pass width (tests/widths_common.h), with the tensor-core
 * matmul (STRATA_CUDA_MM, default) and with the matvec in slices, and the CPU's bits: prompts of
 * 600 tokens in passes of 1, 7, 8, 9, 64 and 512 columns on small synthetic models covering the
 * matmul's formats, one that falls back (Q6_K / Q2_K FFN) and a Mixture-of-Experts model; then with
 * STRATA_CUDA_MM_EXT / STRATA_CUDA_MOE_MM on: IQ and Q3_K weights on tensor cores and the MoE's
 * wide passes as grouped matmuls (IQ3_XXS experts, as the 48-layer MoE file); the tensor-core
 * runs also with the pipelined kernel (STRATA_CUDA_MM_PIPE=1, plain and grouped), and the automatic
 * kernel choice with the query-tile attention's general loops (STRATA_CUDA_ATTN_QVEC=0); and the
 * MoE's wide passes as chunks of 2, 4 or 8 pairs through the grouped decode kernels
 * (STRATA_CUDA_MOE_MV, STRATA_CUDA_MOE_MV_CHUNK), one of them with the wide router's automatic
 * tokens per CTA at 16 (STRATA_CUDA_MOE_ROUTER_TG=16; the others run the automatic choice, the
 * default). Two configurations run with STRATA_CUDA_PDL=early (every kernel signals its
 * dependents as soon as its own wait returns): one at every width (STRATA_CUDA_PDL_EARLY_T=512),
 * one with the default bound (passes of up to 8 columns early, wider ones on: the files'
 * constants switched between passes). Then the former defaults of the switches made default on 2026-12-05 (paths below)
 * on a dense and the 1024-wide MoE model. */
#include "test.h"
#include "gpu_order.h"
#include "widths_common.h"
#include "cuda/cuda_backend.h"
#include "core/env.h"

/* ext: STRATA_CUDA_MM_EXT and STRATA_CUDA_MOE_MM on (the formats added to the tensor-core
 * kernel and the wide MoE path, written without device time on 2026-12-01) */
/* mv: STRATA_CUDA_MOE_MV (the MoE FFN of passes of 9..mv tokens: each expert's pairs in chunks of
 * at most `chunk` pairs, STRATA_CUDA_MOE_MV_CHUNK, through the grouped decode kernels) */
static void widths_c(const char *name, int moe, int ta, int tf, int ext, int mv, int chunk) {
    char path[256], err[512], mvs[16];
    cuda_mm_ext_set(ext);
    setenv("STRATA_CUDA_MOE_MM", ext ? "1" : "0", 1);
    snprintf(mvs, sizeof mvs, "%d", mv);
    setenv("STRATA_CUDA_MOE_MV", mvs, 1);
    snprintf(mvs, sizeof mvs, "%d", chunk);
    setenv("STRATA_CUDA_MOE_MV_CHUNK", mvs, 1);
    env_reset_cache();
    snprintf(path, sizeof path, "/tmp/strata-gpu-widths-%s.gguf", name);
    REQUIRE(wid_synth(path, moe, ta, tf, err, sizeof err) == 0, "synth: %s", err);
    strata_model *mc = wid_load(path, STRATA_DEVICE_CPU), *mg = wid_load(path, STRATA_DEVICE_CUDA);
    REQUIRE(mc && mg, "load");
    const int V = strata_n_vocab(mc);
    size_t n = (size_t)(1 + WID_STEPS) * V;
    float *ref = malloc(n * sizeof(float)), *got = malloc(n * sizeof(float));
    CHECK(wid_run(mc, 64, ref) == 0);   /* the CPU (its widths are tests/test_widths.c's) */
    /* tensor cores (16 warps, 8 warps, the pipelined kernel: STRATA_CUDA_MM_PIPE), the matvec slices;
     * the query tiles' own instances (STRATA_CUDA_ATTN_QVEC=1, head_dim 64 here) and, in the last
     * configuration, their general loops */
    static const int cfg_mm[] = { 3, 2, 2, 0, 2 }, cfg_pipe[] = { 0, 0, 1, 0, -1 }, cfg_qv[] = { 1, 1, 1, 1, 0 };
    for (int ci = 0; ci < 5; ci++) {
        const int mm = cfg_mm[ci];
        cuda_mm_set(mm);
        cuda_mm_pipe_set(cfg_pipe[ci]);
        cuda_attention_qvec_set(cfg_qv[ci]);
        for (int i = 0; i < WID_NW; i++) {
            memset(got, 0, n * sizeof(float));
            CHECKF(wid_run(mg, wid_widths[i], got) == 0, "%s: width %d failed", name, wid_widths[i]);
            int bad = 0;
            for (size_t j = 0; j < n; j++) bad += memcmp(&ref[j], &got[j], 4) != 0;
            CHECKF(bad == 0, "%s (%s): passes of %d columns: %d of %zu logits differ from the CPU's", name,
                   !mm ? "matvec slices" : !cfg_qv[ci] ? "auto kernels, query tiles' general loops"
                   : cfg_pipe[ci] ? "tensor cores, pipelined" : "tensor cores", wid_widths[i], bad, n);
        }
    }
    cuda_mm_set(2);
    cuda_mm_pipe_set(-1);
    cuda_attention_qvec_set(1);
    free(ref); free(got);
    strata_model_free(mg); strata_model_free(mc);
}

static void widths(const char *name, int moe, int ta, int tf, int ext, int mv) { widths_c(name, moe, ta, tf, ext, mv, 8); }

/* STRATA_CUDA_PDL=early for the backends created next (read at their creation); on Hopper the
 * switch must take (the device table's choice otherwise) */
static void pdl_early(int on) {
    if (on) setenv("STRATA_CUDA_PDL", "early", 1); else unsetenv("STRATA_CUDA_PDL");
    if (on > 1) setenv("STRATA_CUDA_PDL_EARLY_T", "512", 1); else unsetenv("STRATA_CUDA_PDL_EARLY_T");
    env_reset_cache();
    cuda_variants v;
    cuda_device_choose(&v);
    const cuda_device_class *c = cuda_device_class_get();
    if (c && c->major >= 9)
        CHECKF(v.pdl == (on ? 2 : c->table_pdl) && v.pdl_early_T == (on > 1 ? 512 : 8), "STRATA_CUDA_PDL=%s: mode %d, T %d",
               on ? "early" : "auto", v.pdl, v.pdl_early_T);
}

/* The matmul, MoE and norm paths of the four switches made the default on 2026-12-05 (measured on
 * the H200 after this test passed over them as opt-in paths): the serial matmul's one float an
 * output (STRATA_CUDA_MM_ONEB), the activation copies by warps and 16-byte K-quant code loads
 * (STRATA_CUDA_MM_WPRE bits 2, 4), the wide MoE router's tokens side by side and the grouping's warp
 * scan (STRATA_CUDA_MOE_FAST bit 128), the q/k head norms a warp a row (STRATA_CUDA_NORM_WARP).
 * The default runs above take them; paths(1, ...) sets other values (the former defaults: ONEB 0,
 * WPRE 1, MOE_FAST 127, NORM_WARP 0; or single bits) for the backends created next, paths(0)
 * puts the caller's values back. */
static void paths(int on, const char *moe_fast, const char *norm_warp, int oneb, int wpre) {
    static char saved[2][64];
    static int had[2];
    static const char *const names[2] = { "STRATA_CUDA_MOE_FAST", "STRATA_CUDA_NORM_WARP" };
    cuda_mm_oneb_set(on ? oneb : -1);
    cuda_mm_wpre_set(on ? wpre : -1);
    for (int i = 0; i < 2; i++) {
        if (on) {
            if (!had[i] && getenv(names[i])) { snprintf(saved[i], sizeof saved[i], "%s", getenv(names[i])); had[i] = 2; }
            else if (!had[i]) had[i] = 1;
            setenv(names[i], i ? norm_warp : moe_fast, 1);
        } else {   /* the caller's values back */
            if (had[i] == 2) setenv(names[i], saved[i], 1); else unsetenv(names[i]);
            had[i] = 0;
        }
    }
    env_reset_cache();
}

int main(void) {
    if (cuda_device_count() <= 0) SKIP_ALL("no-device", "no CUDA device");
    gpu_pin_cpu_order();   /* CPU-identity checks: the CPU's attention order (gpu_order.h) */
    pdl_early(2);   /* the dense model's passes with every kernel signalling its dependents early (every width) */
    widths("q41-q4k", 0, TYPE_Q4_1, TYPE_Q4_K, 0, 0);
    pdl_early(0);
    widths("q80-q5k", 0, TYPE_Q8_0, TYPE_Q5_K, 0, 0);
    widths("q40-q6k", 0, TYPE_Q4_0, TYPE_Q6_K, 0, 0);
    widths("q51-q2k", 0, TYPE_Q5_1, TYPE_Q2_K, 0, 0);
    widths("moe", 1, TYPE_Q4_K, TYPE_Q4_0, 0, 0);
    /* the extended formats on tensor cores, and the wide MoE path (grouped matmuls) */
    widths("ext-q3k-iq3xxs", 0, TYPE_Q3_K, TYPE_IQ3_XXS, 1, 0);
    widths("ext-iq4xs-iq2xxs", 0, TYPE_IQ4_XS, TYPE_IQ2_XXS, 1, 0);
    widths("ext-moe-q40", 1, TYPE_Q4_K, TYPE_Q4_0, 1, 0);
    widths("ext-moe-iq3xxs", 1, TYPE_Q4_K, TYPE_IQ3_XXS, 1, 0);
    /* Q2_0 (64-value blocks against act_q8_2) on tensor cores: a dense FFN and MoE experts */
    widths("ext-q40-q20", 0, TYPE_Q4_0, TYPE_Q2_0, 1, 0);
    widths("ext-moe-q20", 1, TYPE_Q4_K, TYPE_Q2_0, 1, 0);
    /* n_embd 1024: the F32 router of the wide path in one launch (moe_router_wide_kernel) */
    widths("ext-moe-e1024", 2, TYPE_Q4_K, TYPE_IQ3_XXS, 1, 0);
    paths(1, "127", "0", 0, 1);   /* the former defaults: dense rows of <= 32 blocks, the 1024-wide MoE's wide passes */
    widths("former-q41-q4k", 0, TYPE_Q4_1, TYPE_Q4_K, 0, 0);
    widths("former-ext-q3k-iq3xxs", 0, TYPE_Q3_K, TYPE_IQ3_XXS, 1, 0);
    widths("former-ext-moe-e1024", 2, TYPE_Q4_K, TYPE_IQ3_XXS, 1, 0);
    paths(0, NULL, NULL, 0, 0);
    paths(1, "191", "1", 1, 7);   /* bit 128 without bit 64: the grouping's atomic counts, then the warp's scan */
    widths("moe191-e1024", 2, TYPE_Q4_K, TYPE_IQ3_XXS, 1, 0);
    paths(0, NULL, NULL, 0, 0);
    /* STRATA_CUDA_MM_SERX=1 (opt-in, 2026-12-05): the 32-value formats four blocks a step with the
     * biased conversion, the 256-value formats' 16-byte stores of their decoded weights, ORD 2 with
     * the WPRE bits, dense and MoE, against the CPU at every width */
    cuda_mm_serx_set(1);
    widths("serx-q40-q6k", 0, TYPE_Q4_0, TYPE_Q6_K, 0, 0);
    widths("serx-q51-q2k", 0, TYPE_Q5_1, TYPE_Q2_K, 0, 0);
    widths("serx-ext-moe-q40", 1, TYPE_Q4_K, TYPE_Q4_0, 1, 0);
    cuda_mm_serx_set(-1);
    /* the wide MoE path's chunks through the grouped decode kernels: every wide pass (no matmul:
     * MOE_MM off), and passes of 9..64 beside the grouped matmul of the 512-column passes */
    widths_c("mv-moe-q40", 1, TYPE_Q4_K, TYPE_Q4_0, 0, 512, 2);   /* chunks of 2 pairs (STRATA_CUDA_MOE_MV_CHUNK) */
    pdl_early(1);   /* early for passes of up to 8 columns (the default bound), on for the wider ones */
    widths("mv-moe-iq3xxs", 1, TYPE_Q4_K, TYPE_IQ3_XXS, 1, 64);
    pdl_early(0);
    setenv("STRATA_CUDA_MOE_ROUTER_TG", "16", 1);   /* the wide router's tokens per CTA at their most */
    widths_c("mv-moe-e1024", 2, TYPE_Q4_K, TYPE_IQ3_XXS, 1, 512, 4);
    unsetenv("STRATA_CUDA_MOE_ROUTER_TG");
    unsetenv("STRATA_CUDA_MOE_MV");
    unsetenv("STRATA_CUDA_MOE_MV_CHUNK");
    cuda_mm_ext_set(0);
    TEST_DONE();
}
