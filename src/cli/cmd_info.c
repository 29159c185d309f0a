/* strata info MODEL.gguf [--ctx N]: what a GGUF file holds and what a session of it needs.
 * Reads the file with the GGUF reader only (no model binding), so it also describes files
 * strata cannot run: unknown architectures, vocabulary-only files. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_common.h"
#include "core/env.h"
#include "engine/chat_builtin.h"
#include "gguf/gguf.h"
#include "strata.h"
#include "quant/blocks.h"
#include "model/backend.h"   /* FWD_MAX_T: the CPU ring's slack */

static const cli_command info_cmd = {
    CMD_INFO, "info", "[MODEL.gguf | -m MODEL.gguf] [-c N]",
    "Describes a GGUF model file: architecture, parameters, file and tensor types, context\n"
    "length, tokenizer, chat template, bytes per tensor type, and the memory of an f16 KV cache\n"
    "for a session of N tokens (default: the training context and 4096).\n", 1 };

static const char *mib(uint64_t bytes, char *buf, size_t cap) {
    if (bytes >= (1ull << 30)) snprintf(buf, cap, "%.2f GiB", (double)bytes / (1ull << 30));
    else if (bytes >= (1ull << 20)) snprintf(buf, cap, "%.1f MiB", (double)bytes / (1ull << 20));
    else if (bytes >= 1024) snprintf(buf, cap, "%.1f KiB", (double)bytes / 1024);
    else snprintf(buf, cap, "%llu bytes", (unsigned long long)bytes);
    return buf;
}

/* "{arch}.suffix" lookups; arch may be empty (then nothing is found). */
static int arch_u32(const gguf_file *f, const char *arch, const char *suffix, uint32_t *out) {
    char key[256];
    if (!arch[0]) return -1;
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    return gguf_get_u32(f, key, out);
}
static int arch_f32(const gguf_file *f, const char *arch, const char *suffix, float *out) {
    char key[256];
    if (!arch[0]) return -1;
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    return gguf_get_f32(f, key, out);
}

static void print_str_key(const gguf_file *f, const char *label, const char *key) {
    gguf_str s; char buf[256];
    int r = gguf_get_str(f, key, &s);
    printf("%-15s %s\n", label, r == 0 ? gguf_str_copy(s, buf, sizeof buf) : r == -1 ? "(not set)" : "(not a string)");
}

int cmd_info(int argc, char **argv) {
    cli_opts o;
    int rc = cli_parse(&info_cmd, argc, argv, &o);
    if (rc >= 0) return rc;
    if (o.n_args && o.model != env_default_model_path())
        return cli_usage_error("info", "one model file at a time ('%s' and '%s')", o.model, o.args[0]);
    const char *path = o.n_args ? o.args[0] : o.model;
    long long ctx_arg = o.n_ctx;

    char err[512];
    gguf_file *f = NULL;
    if (gguf_open(path, &f, err, sizeof err)) {
        fprintf(stderr, "strata info: %s\n", err);
        return 1;
    }

    char arch[64] = "", b1[32], b2[32];
    gguf_str s;
    if (gguf_get_str(f, "general.architecture", &s) == 0) gguf_str_copy(s, arch, sizeof arch);

    /* ---- totals per tensor type ---- */
    uint64_t params = 0, total_bytes = 0, bytes_by_type[TYPE_COUNT] = { 0 };
    int count_by_type[TYPE_COUNT] = { 0 };
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const gguf_tensor *t = &f->tensors[i];
        uint64_t ne = 1;   /* the reader bounded the product: no overflow */
        for (int d = 0; d < GGUF_MAX_DIMS; d++) ne *= (uint64_t)t->ne[d];
        params += ne;
        total_bytes += t->nbytes;
        bytes_by_type[t->type] += t->nbytes;   /* type < TYPE_COUNT: checked by the reader */
        count_by_type[t->type]++;
    }
    int dominant = -1;
    for (int ty = 0; ty < TYPE_COUNT; ty++)
        if (count_by_type[ty] && (dominant < 0 || bytes_by_type[ty] > bytes_by_type[dominant])) dominant = ty;

    printf("%-15s %s (%s, GGUF v%u, %" PRIu64 " key/values, %" PRIu64 " tensors)\n", "file:", path,
           mib(f->size, b1, sizeof b1), f->version, f->n_kv, f->n_tensors);
    printf("%-15s %s\n", "architecture:", arch[0] ? arch : "(not set)");
    print_str_key(f, "name:", "general.name");
    printf("%-15s %.2f M (%" PRIu64 ")\n", "parameters:", (double)params / 1e6, params);
    uint32_t ft;
    if (gguf_get_u32(f, "general.file_type", &ft) == 0)
        printf("%-15s %s (%u)", "file type:", gguf_file_type_name(ft), ft);
    else
        printf("%-15s (not set)", "file type:");
    if (dominant >= 0)
        printf("; most bytes in %s (%s of %s)\n", gguf_type_name(dominant),
               mib(bytes_by_type[dominant], b1, sizeof b1), mib(total_bytes, b2, sizeof b2));
    else
        printf("; no tensors (vocabulary-only file)\n");

    uint32_t n_ctx_train = 0;
    if (arch_u32(f, arch, "context_length", &n_ctx_train) == 0) printf("%-15s %u tokens (training)\n", "context:", n_ctx_train);
    else printf("%-15s (not set)\n", "context:");

    uint64_t n_vocab = 0; const void *p;
    uint32_t v32;
    char tok_model[64] = "(not set)", tok_pre[64] = "(not set)";
    if (gguf_get_str(f, "tokenizer.ggml.model", &s) == 0) gguf_str_copy(s, tok_model, sizeof tok_model);
    if (gguf_get_str(f, "tokenizer.ggml.pre", &s) == 0) gguf_str_copy(s, tok_pre, sizeof tok_pre);
    if (gguf_get_arr(f, "tokenizer.ggml.tokens", GGUF_TYPE_STRING, &n_vocab, &p) == 0)
        printf("%-15s %" PRIu64 " tokens", "vocabulary:", n_vocab);
    else if (arch_u32(f, arch, "vocab_size", &v32) == 0)
        printf("%-15s %u tokens (%s.vocab_size; no token list)", "vocabulary:", v32, arch);
    else
        printf("%-15s (no token list)", "vocabulary:");
    printf(", tokenizer %s, pre-tokenizer %s\n", tok_model, tok_pre);
    if (gguf_get_str(f, "tokenizer.chat_template", &s) == 0)
        printf("%-15s present (%" PRIu64 " bytes)\n", "chat template:", s.len);
    else if (chat_builtin_template(arch))
        printf("%-15s none in the file; strata uses its built-in %s template\n",
               "chat template:", arch);
    else
        printf("%-15s none (chat requests fall back to ChatML in serve; --chat-template FILE|NAME sets one)\n", "chat template:");

    /* ---- hyperparameters ---- */
    uint32_t n_layer = 0, n_embd = 0, n_ff = 0, n_head = 0, n_head_kv = 0, k_len = 0, v_len = 0, rope_dim = 0;
    int have_layer = arch_u32(f, arch, "block_count", &n_layer) == 0;
    int have_embd = arch_u32(f, arch, "embedding_length", &n_embd) == 0;
    int have_ff = arch_u32(f, arch, "feed_forward_length", &n_ff) == 0;
    int have_head = arch_u32(f, arch, "attention.head_count", &n_head) == 0 && n_head > 0;
    int have_head_kv = arch_u32(f, arch, "attention.head_count_kv", &n_head_kv) == 0;
    if (!have_head_kv && have_head) { n_head_kv = n_head; have_head_kv = 1; }   /* no GQA: as many */
    const char *hd_from = "attention.key_length";
    if (arch_u32(f, arch, "attention.key_length", &k_len) != 0) {
        hd_from = "embedding_length / head_count";
        k_len = have_embd && have_head ? n_embd / n_head : 0;
    }
    if (arch_u32(f, arch, "attention.value_length", &v_len) != 0) v_len = k_len;
    if (have_layer || have_embd) {
        printf("%-15s %u, embedding %u, feed-forward ", "layers:", n_layer, n_embd);
        if (have_ff) printf("%u\n", n_ff); else printf("(not set)\n");
        printf("%-15s ", "heads:");
        if (have_head) printf("%u query, %u key/value, head_dim %u (%s)", n_head, n_head_kv, k_len, hd_from);
        else printf("(not set)");
        if (v_len != k_len) printf(", value head_dim %u", v_len);
        printf("\n");
        float rope_base, eps;
        if (arch_f32(f, arch, "rope.freq_base", &rope_base) == 0) {
            printf("%-15s freq_base %g", "rope:", rope_base);
            if (arch_u32(f, arch, "rope.dimension_count", &rope_dim) == 0) printf(", dimensions %u", rope_dim);
            printf("\n");
        }
        if (arch_f32(f, arch, "attention.layer_norm_rms_epsilon", &eps) == 0) printf("%-15s %g\n", "rms_norm_eps:", eps);
    }

    /* ---- bytes per tensor type, largest first ---- */
    if (f->n_tensors) {
        printf("\n%-10s %8s %16s %12s\n", "type", "tensors", "bytes", "");
        int done[TYPE_COUNT] = { 0 };
        for (;;) {
            int best = -1;
            for (int ty = 0; ty < TYPE_COUNT; ty++)
                if (count_by_type[ty] && !done[ty] && (best < 0 || bytes_by_type[ty] > bytes_by_type[best])) best = ty;
            if (best < 0) break;
            done[best] = 1;
            printf("%-10s %8d %16" PRIu64 " %12s\n", gguf_type_name(best), count_by_type[best], bytes_by_type[best],
                   mib(bytes_by_type[best], b1, sizeof b1));
        }
        printf("%-10s %8" PRIu64 " %16" PRIu64 " %12s\n", "total", f->n_tensors, total_bytes, mib(total_bytes, b1, sizeof b1));
    }

    /* ---- session memory: f16 K and V for every layer, position and KV head ----
     * bytes = n_layer * n_ctx * n_head_kv * (key_length + value_length) * 2
     *       = 2 * n_layer * n_ctx * n_head_kv * head_dim * 2 when key and value lengths agree */
    if (have_layer && have_head_kv && k_len) {
        printf("\nKV cache, f16: %u layers x %u KV heads x (%u + %u) dims x 2 bytes = %.1f KiB per token\n",
               n_layer, n_head_kv, k_len, v_len, (double)n_layer * n_head_kv * (k_len + v_len) * 2 / 1024);
        uint64_t ctxs[2]; int n_ctxs = 0;
        if (ctx_arg) ctxs[n_ctxs++] = (uint64_t)ctx_arg;
        else {
            if (n_ctx_train) ctxs[n_ctxs++] = n_ctx_train;
            if (n_ctx_train != 4096) ctxs[n_ctxs++] = 4096;
        }
        /* Gemma 3's sliding-window layers (five of every six) keep a ring of window + FWD_MAX_T + 1
         * positions on the CPU (src/cpu/backend_cpu.c, KV_RING_SLACK); the CUDA cache holds every
         * position. tests/cli/test_cli.py compares the CPU figure with what `strata run` reports. */
        uint32_t swa = 0;
        const int ring_pattern = !strcmp(arch, "gemma3") && arch_u32(f, arch, "attention.sliding_window", &swa) == 0 && swa > 0
                                     ? 6 : 0;
        if (ring_pattern)
            printf("  (%u of %u layers slide over %u positions: on the CPU they keep a ring of %u)\n",
                   n_layer - n_layer / ring_pattern, n_layer, swa, swa + FWD_MAX_T + 1);
        for (int i = 0; i < n_ctxs; i++) {
            const uint64_t per_pos = (uint64_t)n_head_kv * (uint64_t)(k_len + v_len) * 2;
            uint64_t kv = (uint64_t)n_layer * ctxs[i] * per_pos;
            printf("  ctx %7" PRIu64 ": KV cache %10s; with the weights %s\n", ctxs[i], mib(kv, b1, sizeof b1),
                   mib(kv + total_bytes, b2, sizeof b2));
            if (ring_pattern) {
                uint64_t cpu = 0;
                for (uint32_t l = 0; l < n_layer; l++) {
                    const uint64_t ring = (uint64_t)swa + FWD_MAX_T + 1;
                    cpu += ((l + 1) % ring_pattern != 0 && ring < ctxs[i] ? ring : ctxs[i]) * per_pos;
                }
                printf("  ctx %7" PRIu64 ": KV cache on the CPU %.1f MiB (%" PRIu64 " bytes: the rings; CUDA keeps every position: as above)\n",
                       ctxs[i], cpu / 1048576.0, cpu);
            }
        }
    } else if (f->n_tensors) {
        printf("\nKV cache: unknown (%s.block_count or attention.head_count missing or not a single number)\n",
               arch[0] ? arch : "{arch}");
    }
    /* the GPU this build would run the model on: its class and the kernel variants chosen */
    char dev[512];
    int have_cuda = strata_cuda_describe(dev, sizeof dev) == 0;
    printf("\n%-15s %s\n", have_cuda ? "CUDA device:" : "CUDA:", dev);
    gguf_close(f);
    return 0;
}
