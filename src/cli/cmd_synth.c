/* strata synth OUT.gguf: write a synthetic model of a real shape (src/model/synth.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "core/env.h"
#include "core/util.h"
#include "model/synth.h"
#include "quant/quant.h"

static void synth_usage(FILE *o) {
    fprintf(o,
        "usage: strata synth OUT.gguf [--arch llama|qwen3moe|gemma3] [shape] [types] [--tokenizer FROM.gguf|builtin]\n"
        "                    [--seed S] [-t N]\n\n"
        "Writes a model with random weights of a real shape: valid blocks of any format, norms of one,\n"
        "complete metadata and a tokenizer. The same arguments give the same bytes on any machine and\n"
        "for any -t. Defaults: qwen3moe = Qwen3-30B-A3B (48 layers, dim 2048, 32/4 heads of 128,\n"
        "128 experts top-8 of ffn 768, vocab 151936), llama = SmolLM2-135M, gemma3 = Gemma 3 270m\n"
        "(18 layers, dim 640, 4/1 heads of 256, ffn 2048, vocab 262144, five sliding-window layers of\n"
        "512 positions to one global; the output tied to token_embd).\n\n"
        "shape:  --layers N --dim N --ffn N --heads N --kv-heads N --head-dim N --experts N\n"
        "        --experts-used N --expert-ffn N --vocab N --ctx N --window N (gemma3)\n"
        "types:  --type-attn T --type-experts T --type-ffn T --type-output T --type-embd T --type-router T\n"
        "        (T: F32 F16 BF16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_0 MXFP4 Q2_K..Q6_K IQ1_S IQ1_M IQ2_XXS\n"
        "        IQ2_XS IQ2_S IQ3_XXS IQ3_S IQ4_NL IQ4_XS; rows must be a multiple of the block)\n"
        "        --type-all T sets every matrix type (later --type-X options override it)\n"
        "other:  --std X       weight standard deviation (default 0.02)\n"
        "        --rope-base X --rope-base-local X (gemma3) --rms-eps X --name S\n"
        "        --tokenizer P copy the tokenizer of P (default: the default model's if it exists,\n"
        "                      else the built-in byte-level one; 'builtin' forces it)\n");
}

static int parse_int(const char *opt, const char *v, int lo, long long hi, int *out) {
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || *end || end == v || x < lo || x > hi) {
        fprintf(stderr, "strata synth: %s '%s': expected an integer in [%d, %lld]\n", opt, v, lo, hi);
        return -1;
    }
    *out = (int)x;
    return 0;
}

static int parse_type(const char *opt, const char *v, int *out) {
    int t = quant_type_from_name(v);
    if (t < 0 || !quant_traits_get(t)) {
        fprintf(stderr, "strata synth: %s '%s': not a weight format of this build (e.g. Q4_K, IQ3_XXS, F32)\n", opt, v);
        return -1;
    }
    *out = t;
    return 0;
}

int cmd_synth(int argc, char **argv) {
    const char *out = NULL, *arch = "qwen3moe";
    /* the architecture decides the defaults: find it first */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { synth_usage(stdout); return 0; }
        if (!strcmp(argv[i], "--arch") && i + 1 < argc) arch = argv[i + 1];
    }
    synth_params p;
    if (!strcmp(arch, "qwen3moe")) synth_default_params(&p, ARCH_QWEN3MOE);
    else if (!strcmp(arch, "llama")) synth_default_params(&p, ARCH_LLAMA);
    else if (!strcmp(arch, "gemma3")) synth_default_params(&p, ARCH_GEMMA3);
    else { fprintf(stderr, "strata synth: --arch '%s': expected llama, qwen3moe or gemma3\n", arch); return 2; }
    int tok_set = 0, all_type = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] != '-') {
            if (out) { fprintf(stderr, "strata synth: two output files given ('%s', '%s')\n", out, a); return 2; }
            out = a;
            continue;
        }
        if (i + 1 >= argc) { fprintf(stderr, "strata synth: %s needs a value\n", a); return 2; }
        const char *v = argv[++i];
        int rc = 0;
        if (!strcmp(a, "--arch")) continue;
        else if (!strcmp(a, "--layers")) rc = parse_int(a, v, 1, 4096, &p.n_layers);
        else if (!strcmp(a, "--dim")) rc = parse_int(a, v, 1, 1 << 17, &p.n_embd);
        else if (!strcmp(a, "--ffn")) rc = parse_int(a, v, 1, 1 << 20, &p.n_ff);
        else if (!strcmp(a, "--heads")) rc = parse_int(a, v, 1, 4096, &p.n_heads);
        else if (!strcmp(a, "--kv-heads")) rc = parse_int(a, v, 1, 4096, &p.n_kv_heads);
        else if (!strcmp(a, "--head-dim")) rc = parse_int(a, v, 2, 4096, &p.head_dim);
        else if (!strcmp(a, "--experts")) rc = parse_int(a, v, 1, 4096, &p.n_experts);
        else if (!strcmp(a, "--experts-used")) rc = parse_int(a, v, 1, 64, &p.n_experts_used);
        else if (!strcmp(a, "--expert-ffn")) rc = parse_int(a, v, 1, 1 << 20, &p.n_ff_exp);
        else if (!strcmp(a, "--vocab")) rc = parse_int(a, v, 1, 1 << 24, &p.n_vocab);
        else if (!strcmp(a, "--ctx")) rc = parse_int(a, v, 1, 1 << 24, &p.n_ctx);
        else if (!strcmp(a, "--window")) rc = parse_int(a, v, 1, 1 << 24, &p.sliding_window);
        else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) rc = parse_int(a, v, 1, 4096, &p.n_threads);
        else if (!strcmp(a, "--type-attn")) rc = parse_type(a, v, &p.type_attn);
        else if (!strcmp(a, "--type-experts")) rc = parse_type(a, v, &p.type_experts);
        else if (!strcmp(a, "--type-ffn")) rc = parse_type(a, v, &p.type_ffn);
        else if (!strcmp(a, "--type-output")) rc = parse_type(a, v, &p.type_output);
        else if (!strcmp(a, "--type-embd")) rc = parse_type(a, v, &p.type_embd);
        else if (!strcmp(a, "--type-router")) rc = parse_type(a, v, &p.type_router);
        else if (!strcmp(a, "--type-all")) {   /* in order: a later --type-X overrides it */
            rc = parse_type(a, v, &all_type);
            if (!rc) p.type_attn = p.type_experts = p.type_ffn = p.type_output = p.type_embd = p.type_router = all_type;
        }
        else if (!strcmp(a, "--tokenizer")) { p.tokenizer_path = v; tok_set = 1; }
        else if (!strcmp(a, "--name")) p.name = v;
        else if (!strcmp(a, "--seed") || !strcmp(a, "--std") || !strcmp(a, "--rope-base") || !strcmp(a, "--rope-base-local") ||
                 !strcmp(a, "--rms-eps")) {
            char *end;
            errno = 0;
            if (!strcmp(a, "--seed")) {
                unsigned long long s = strtoull(v, &end, 10);
                p.seed = s;
            } else {
                float f = strtof(v, &end);
                if (!strcmp(a, "--std")) p.weight_std = f;
                else if (!strcmp(a, "--rope-base")) p.rope_base = f;
                else if (!strcmp(a, "--rope-base-local")) p.rope_base_local = f;
                else p.rms_eps = f;
            }
            if (errno || *end || end == v) { fprintf(stderr, "strata synth: %s '%s': not a number\n", a, v); rc = -1; }
        } else {
            fprintf(stderr, "strata synth: unknown option '%s' (see strata synth --help)\n", a);
            return 2;
        }
        if (rc) return 2;
    }
    if (!out) { fprintf(stderr, "strata synth: no output file given (strata synth --help)\n"); return 2; }
    if (!tok_set) {
        const char *def = env_default_model_path();
        if (def && access(def, R_OK) == 0) p.tokenizer_path = def;
    }
    char err[512];
    int64_t bytes = synth_data_bytes(&p, err, sizeof err);
    if (bytes < 0) { fprintf(stderr, "strata synth: %s\n", err); return 1; }
    fprintf(stderr, "strata synth: %s %s, %d layers, %.2f GiB of weights, tokenizer %s\n", out, arch, p.n_layers,
            (double)bytes / (1u << 30), p.tokenizer_path && strcmp(p.tokenizer_path, "builtin") ? p.tokenizer_path : "built-in");
    double t0 = now_seconds();
    if (synth_write(&p, out, err, sizeof err) != 0) {
        fprintf(stderr, "strata synth: %s\n", err);
        return 1;
    }
    double dt = now_seconds() - t0;
    fprintf(stderr, "strata synth: wrote %s in %.2f s (%.0f MB/s)\n", out, dt, bytes / 1e6 / (dt > 0 ? dt : 1));
    return 0;
}
