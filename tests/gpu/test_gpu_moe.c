/* The CUDA Mixture-of-Experts FFN (src/cuda/moe.cu) against the CPU's (src/cpu/moe.c), bit for
 * bit, through each backend's FFN block (RMSNorm, the MoE FFN, the residual add) on the same
 * layer of a synthetic qwen3moe model made
 * here (src/model/synth.h: same parameters, same bytes as on any machine), for every expert
 * format with a CUDA kernel and T = 1..8 tokens:
 *   random inputs (distinct routes), all tokens equal (every expert shared by all T tokens:
 *   groups of T columns), zero input (all router logits equal: the tie rule picks experts
 *   0..k-1), and batch invariance (token t of a T-token call == the same token alone).
 * Then whole models on the GPU vs the CPU: greedy ids equal, teacher-forced logits equal. */
#include "test.h"
#include "gpu_order.h"
#include <stdint.h>
#include <unistd.h>
#include "strata.h"
#include "engine/engine.h"
#include "model/synth.h"
#include "quant/quant.h"
#include "cuda/cuda_backend.h"
#include "cpu/backend_cpu.h"
#include "core/env.h"
#include "moe_harness.h"

static uint64_t rs = 99;
static float rnd(void) {
    rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17;
    return (float)(rs >> 40) / (float)(1 << 24) * 2.0f - 1.0f;
}

static int g_dim = 256;   /* model width of the next make_moe (2048 / 1024: the fused F32 router) */
static int make_moe(const char *path, int layers, int type_experts, int type_attn, int type_out, int vocab) {
    return moe_synth(path, layers, type_experts, type_attn, type_out, vocab, g_dim, 16, 4, 11);
}
static uint64_t fnv(const void *p, size_t n, uint64_t h) {
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) { h ^= b[i]; h *= 1099511628211ull; }
    return h;
}

static void kernel_parity(int type) {
    char path[256];
    snprintf(path, sizeof path, "/tmp/strata-gpu-moe-%s.gguf", quant_type_name(type));
    if (make_moe(path, 1, type, TYPE_Q8_0, TYPE_Q8_0, 512)) { CHECKF(0, "synth %s", quant_type_name(type)); return; }
    strata_model *mc = moe_load(path, STRATA_DEVICE_CPU), *mg = moe_load(path, STRATA_DEVICE_CUDA);
    CHECKF(mc && mg, "%s: load", quant_type_name(type));
    strata_session *sc = mc ? moe_session(mc) : NULL, *sg = mg ? moe_session(mg) : NULL;
    CHECKF(sc && sg, "%s: sessions", quant_type_name(type));
    if (!sc || !sg) goto done;
    {
        const int E = mc->hp.n_embd;
        static float x[8 * 2048], oc[8 * 2048], og[8 * 2048], o1[2048];
        int ok_rand = 1, ok_same = 1, ok_zero = 1, ok_inv = 1;
        uint64_t h = 14695981039346656037ull;
        for (int T = 1; T <= 8; T++) {
            for (int i = 0; i < T * E; i++) x[i] = rnd() * 2.0f;
            moe_ffn_cpu(sc, x, T, oc);
            if (moe_ffn_gpu(sg, x, T, og)) { ok_rand = 0; break; }
            if (memcmp(oc, og, sizeof(float) * (size_t)(T * E))) ok_rand = 0;
            h = fnv(og, sizeof(float) * (size_t)(T * E), h);
            /* batch invariance on the GPU: each token alone */
            for (int t = 0; t < T; t++) {
                if (moe_ffn_gpu(sg, x + (size_t)t * E, 1, o1)) { ok_inv = 0; break; }
                if (memcmp(o1, og + (size_t)t * E, sizeof(float) * (size_t)E)) ok_inv = 0;
            }
            /* every token the same: one group of T columns per expert */
            for (int t = 1; t < T; t++) memcpy(x + (size_t)t * E, x, sizeof(float) * (size_t)E);
            moe_ffn_cpu(sc, x, T, oc);
            if (moe_ffn_gpu(sg, x, T, og) || memcmp(oc, og, sizeof(float) * (size_t)(T * E))) ok_same = 0;
            /* zero input: equal logits, experts 0..k-1 by the tie rule */
            memset(x, 0, sizeof(float) * (size_t)(T * E));
            moe_ffn_cpu(sc, x, T, oc);
            if (moe_ffn_gpu(sg, x, T, og) || memcmp(oc, og, sizeof(float) * (size_t)(T * E))) ok_zero = 0;
        }
        CHECKF(ok_rand, "%s: GPU MoE != CPU MoE (random inputs, T = 1..8)", quant_type_name(type));
        CHECKF(ok_same, "%s: GPU MoE != CPU MoE (shared experts)", quant_type_name(type));
        CHECKF(ok_zero, "%s: GPU MoE != CPU MoE (router ties)", quant_type_name(type));
        CHECKF(ok_inv, "%s: GPU MoE not batch invariant", quant_type_name(type));
        printf("moe %-8s dim %4d T=1..8 bit-identical to the CPU: %s, checksum %016llx\n", quant_type_name(type), E,
               ok_rand && ok_same && ok_zero && ok_inv ? "yes" : "NO", (unsigned long long)h);
    }
done:
    strata_session_free(sc); strata_session_free(sg);
    strata_model_free(mc); strata_model_free(mg);
    unlink(path);
}

static void model_parity(const char *label, int layers, int te, int ta, int to) {
    char path[256];
    snprintf(path, sizeof path, "/tmp/strata-gpu-moe-model-%d.gguf", te);
    if (make_moe(path, layers, te, ta, to, 3000)) { CHECKF(0, "%s: synth", label); return; }
    strata_model *mc = moe_load(path, STRATA_DEVICE_CPU), *mg = moe_load(path, STRATA_DEVICE_CUDA);
    CHECKF(mc && mg, "%s: load", label);
    if (mc && mg) {
        strata_model_info info;
        strata_model_get_info(mg, &info);
        CHECK_STR(info.device, "cuda");
        int steps, d, nc, ng;
        int rc = moe_model_compare(mc, mg, &steps, &d, &nc, &ng);
        CHECKF(rc == 0 && steps == 16, "%s: teacher-forced logits GPU != CPU (after %d steps)", label, steps);
        CHECKF(nc > 0 && nc == ng && d == nc, "%s: greedy ids GPU != CPU from step %d", label, d);
        printf("%-34s teacher-forced logits bit-identical %d/16, greedy ids equal %d/%d\n", label, steps, d, nc);
    }
    strata_model_free(mc); strata_model_free(mg);
    unlink(path);
}

int main(void) {
    if (cuda_device_count() <= 0) SKIP_ALL("no-device", "no CUDA device");
    gpu_pin_cpu_order();   /* CPU-identity checks: the CPU's attention order (gpu_order.h) */
    static const int types[] = { TYPE_F32, TYPE_F16, TYPE_BF16, TYPE_Q4_0, TYPE_Q4_1, TYPE_Q5_0, TYPE_Q5_1, TYPE_Q8_0,
                                 TYPE_Q2_0, TYPE_MXFP4, TYPE_Q2_K, TYPE_Q3_K, TYPE_Q4_K, TYPE_Q5_K, TYPE_Q6_K,
                                 TYPE_IQ2_XXS, TYPE_IQ2_XS, TYPE_IQ2_S, TYPE_IQ3_XXS, TYPE_IQ3_S, TYPE_IQ1_S, TYPE_IQ1_M,
                                 TYPE_IQ4_NL, TYPE_IQ4_XS };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        t_current = quant_type_name(types[i]);
        kernel_parity(types[i]);
    }
    /* widths whose F32 router runs fused with the routing (cuda_moe_router_fusable) */
    static const int wide[] = { TYPE_IQ3_XXS, TYPE_Q4_K, TYPE_Q8_0 };
    for (int d = 1024; d <= 2048; d *= 2) {
        g_dim = d;
        for (size_t i = 0; i < sizeof wide / sizeof wide[0]; i++) {
            t_current = quant_type_name(wide[i]);
            kernel_parity(wide[i]);
        }
    }
    g_dim = 256;
    t_current = "models";
    model_parity("qwen3moe IQ3_XXS / Q4_K / Q6_K", 3, TYPE_IQ3_XXS, TYPE_Q4_K, TYPE_Q6_K);
    model_parity("qwen3moe Q2_0 / Q8_0 / Q8_0", 2, TYPE_Q2_0, TYPE_Q8_0, TYPE_Q8_0);
    model_parity("qwen3moe IQ2_XXS / Q4_K / Q6_K", 2, TYPE_IQ2_XXS, TYPE_Q4_K, TYPE_Q6_K);
    g_dim = 2048;
    model_parity("qwen3moe dim 2048 IQ3_XXS / Q4_K / Q6_K", 2, TYPE_IQ3_XXS, TYPE_Q4_K, TYPE_Q6_K);
    g_dim = 256;
    TEST_DONE();
}
