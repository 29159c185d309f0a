/* A reference point for the GPU's tensor-core attention order's divergence (docs/KERNELS.md):
 * on the CPU, the int8 KV cache (`--kv int8`, a precision users already choose) against the f16
 * cache, on the same real chat prompts and with the same figures as test_gpu_attn_tc's
 * STRATA_TC_REAL run (tests/real_div.h: KL per position, argmax agreement, greedy ids).
 *   make build/libstrata.a
 *   cc -O2 -ffp-contract=off -fno-math-errno -pthread -D_GNU_SOURCE -Iinclude -Isrc -Itests -o build/kl_kv8 \
 *      bench/kl_kv8.c build/libstrata.a -lm -lpthread -lmicrohttpd -ljansson \
 *      -L/usr/local/cuda/lib64 -lcudart -lstdc++          (the last line where the library has CUDA)
 *   build/kl_kv8 ~/.cache/strata/SmolLM2-135M-Instruct.Q4_1.gguf */
#include "real_div.h"

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: kl_kv8 model.gguf\n"); return 2; }
    strata_model_params mp = strata_model_default_params();
    mp.path = argv[1]; mp.device = STRATA_DEVICE_CPU;
    strata_model *m = NULL;
    char err[512];
    if (strata_model_load(&mp, &m, err, sizeof err)) { fprintf(stderr, "load: %s\n", err); return 1; }
    div_result r;
    if (div_run(m, STRATA_KV_F16, m, STRATA_KV_INT8, &r, 1)) return 1;
    printf("CPU, int8 KV cache vs f16: %ld positions, mean KL %.3e, max KL %.3e, argmax agreement %.2f %%, "
           "greedy ids identical %d of %d\n", r.npos, r.kl_mean, r.kl_max, 100.0 * r.agree / (r.npos ? r.npos : 1),
           r.greedy_equal, r.greedy_total);
    strata_model_free(m);
    return 0;
}
