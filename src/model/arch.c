/* Architectures as data: each row names the hyperparameter keys' prefix and which per-layer
 * tensors it uses (required / optional) with their expected shapes. The forward pass reads
 * the bound weights and a few hyperparameters; an architecture adds a row here, not a copy
 * of the forward pass. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <math.h>
#include "model.h"
#include "quant/quant.h"
#include "core/util.h"

/* Symbolic dimensions resolved from the hyperparameters. */
typedef enum { D_1, D_EMBD, D_Q, D_KV, D_FF, D_HEAD, D_EXPERTS, D_FF_EXP, D_VOCAB } dim_sym;

typedef struct {
    const char *name;       /* blk.N.<name>.weight */
    size_t offset;          /* in layer_weights */
    dim_sym n_in, n_out;    /* expected ne0, ne1 */
    int three_d;            /* [n_expert, n_out, n_in] */
} tensor_slot;

#define SLOT(nm, field, i, o) { nm, offsetof(layer_weights, field), i, o, 0 }
#define SLOT3(nm, field, i, o) { nm, offsetof(layer_weights, field), i, o, 1 }
enum {
    S_ATTN_NORM, S_Q, S_K, S_V, S_O, S_Q_NORM, S_K_NORM, S_POST_ATTN_NORM, S_POST_FFN_NORM,
    S_FFN_NORM, S_GATE, S_UP, S_DOWN, S_GATE_INP, S_GATE_EXPS, S_UP_EXPS, S_DOWN_EXPS, S_COUNT
};
static const tensor_slot slots[S_COUNT] = {
    [S_ATTN_NORM]      = SLOT("attn_norm", attn_norm, D_EMBD, D_1),
    [S_Q]              = SLOT("attn_q", wq, D_EMBD, D_Q),
    [S_K]              = SLOT("attn_k", wk, D_EMBD, D_KV),
    [S_V]              = SLOT("attn_v", wv, D_EMBD, D_KV),
    [S_O]              = SLOT("attn_output", wo, D_Q, D_EMBD),
    [S_Q_NORM]         = SLOT("attn_q_norm", q_norm, D_HEAD, D_1),
    [S_K_NORM]         = SLOT("attn_k_norm", k_norm, D_HEAD, D_1),
    [S_POST_ATTN_NORM] = SLOT("post_attention_norm", post_attn_norm, D_EMBD, D_1),
    [S_POST_FFN_NORM]  = SLOT("post_ffw_norm", post_ffn_norm, D_EMBD, D_1),
    [S_FFN_NORM]       = SLOT("ffn_norm", ffn_norm, D_EMBD, D_1),
    [S_GATE]           = SLOT("ffn_gate", gate, D_EMBD, D_FF),
    [S_UP]             = SLOT("ffn_up", up, D_EMBD, D_FF),
    [S_DOWN]           = SLOT("ffn_down", down, D_FF, D_EMBD),
    [S_GATE_INP]       = SLOT("ffn_gate_inp", gate_inp, D_EMBD, D_EXPERTS),
    [S_GATE_EXPS]      = SLOT3("ffn_gate_exps", gate_exps, D_EMBD, D_FF_EXP),
    [S_UP_EXPS]        = SLOT3("ffn_up_exps", up_exps, D_EMBD, D_FF_EXP),
    [S_DOWN_EXPS]      = SLOT3("ffn_down_exps", down_exps, D_FF_EXP, D_EMBD),
};
#define BIT(s) (1u << (s))

typedef struct {
    const char *name;
    arch_id id;
    unsigned required, optional;   /* slot bit masks */
} arch_desc;

static const arch_desc archs[ARCH_COUNT] = {
    [ARCH_LLAMA] = { "llama", ARCH_LLAMA,
        BIT(S_ATTN_NORM) | BIT(S_Q) | BIT(S_K) | BIT(S_V) | BIT(S_O) | BIT(S_FFN_NORM) | BIT(S_GATE) | BIT(S_UP) | BIT(S_DOWN),
        0 },
    [ARCH_QWEN3MOE] = { "qwen3moe", ARCH_QWEN3MOE,
        BIT(S_ATTN_NORM) | BIT(S_Q) | BIT(S_K) | BIT(S_V) | BIT(S_O) | BIT(S_Q_NORM) | BIT(S_K_NORM) | BIT(S_FFN_NORM) |
        BIT(S_GATE_INP) | BIT(S_GATE_EXPS) | BIT(S_UP_EXPS) | BIT(S_DOWN_EXPS),
        0 },
    [ARCH_GEMMA3] = { "gemma3", ARCH_GEMMA3,
        BIT(S_ATTN_NORM) | BIT(S_Q) | BIT(S_K) | BIT(S_V) | BIT(S_O) | BIT(S_Q_NORM) | BIT(S_K_NORM) |
        BIT(S_POST_ATTN_NORM) | BIT(S_POST_FFN_NORM) | BIT(S_FFN_NORM) | BIT(S_GATE) | BIT(S_UP) | BIT(S_DOWN),
        0 },
};

const char *arch_name(arch_id a) { return (unsigned)a < ARCH_COUNT ? archs[a].name : "?"; }

static int64_t dim_value(const hparams *hp, dim_sym d) {
    switch (d) {
    case D_1: return 1;
    case D_EMBD: return hp->n_embd;
    case D_Q: return (int64_t)hp->n_heads * hp->head_dim;
    case D_KV: return (int64_t)hp->n_kv_heads * hp->head_dim;
    case D_FF: return hp->n_ff;
    case D_HEAD: return hp->head_dim;
    case D_EXPERTS: return hp->n_experts;
    case D_FF_EXP: return hp->n_ff_exp;
    case D_VOCAB: return hp->n_vocab;
    }
    return -1;
}

/* ---- hyperparameters -------------------------------------------------------------- */
static int get_u32_key(const gguf_file *f, const char *arch, const char *suffix, int required, uint32_t def,
                       uint32_t lo, uint32_t hi, int *out, char *err, size_t errlen) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    uint32_t v;
    int rc = gguf_get_u32(f, key, &v);
    if (rc == -1) {
        if (required) { snprintf(err, errlen, "%s: missing key %s", f->path, key); return -1; }
        v = def;
    } else if (rc != 0) {
        snprintf(err, errlen, "%s: key %s has the wrong type (expected an unsigned integer)", f->path, key);
        return -1;
    }
    if (v < lo || v > hi) {
        snprintf(err, errlen, "%s: %s = %u is out of range [%u, %u]", f->path, key, v, lo, hi);
        return -1;
    }
    *out = (int)v;
    return 0;
}

static int get_f32_key(const gguf_file *f, const char *arch, const char *suffix, float def, float *out,
                       char *err, size_t errlen) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    int rc = gguf_get_f32(f, key, out);
    if (rc == -1) { *out = def; return 0; }
    if (rc != 0 || !isfinite(*out)) {
        snprintf(err, errlen, "%s: key %s must be a finite float", f->path, key);
        return -1;
    }
    return 0;
}

static int bind_weight(const gguf_file *f, const char *name, int64_t n_in, int64_t n_out, int64_t n_expert,
                       int required, weight *w, char *err, size_t errlen) {
    memset(w, 0, sizeof *w);
    const gguf_tensor *t = gguf_find_tensor(f, name);
    if (!t) {
        if (required) { snprintf(err, errlen, "%s: missing tensor %s", f->path, name); return -1; }
        return 0;
    }
    int nd_expected = n_expert > 1 ? 3 : (n_out > 1 ? 2 : 1);
    int64_t ne1 = t->n_dims >= 2 ? t->ne[1] : 1, ne2 = t->n_dims >= 3 ? t->ne[2] : 1;
    if (t->ne[0] != n_in || ne1 != n_out || ne2 != n_expert || t->n_dims > nd_expected) {
        snprintf(err, errlen, "%s: tensor %s has shape [%lld, %lld, %lld], expected [%lld, %lld, %lld]",
                 f->path, name, (long long)t->ne[0], (long long)ne1, (long long)ne2,
                 (long long)n_in, (long long)n_out, (long long)n_expert);
        return -1;
    }
    const quant_traits *qt = quant_traits_get(t->type);
    if (!qt || !qt->dequant_row) {
        snprintf(err, errlen, "%s: tensor %s has type %s (id %d), which strata cannot compute with", f->path, name,
                 gguf_type_name(t->type), t->type);
        return -1;
    }
    w->data = t->data; w->type = t->type; w->n_in = n_in; w->n_out = n_out; w->n_expert = n_expert;
    w->nbytes = t->nbytes;
    return 0;
}

int model_bind(const gguf_file *f, hparams *hp, model_weights *w, char *err, size_t errlen) {
    memset(hp, 0, sizeof *hp);
    memset(w, 0, sizeof *w);
    gguf_str as;
    if (gguf_get_str(f, "general.architecture", &as) != 0) {
        snprintf(err, errlen, "%s: missing or non-string general.architecture", f->path);
        return -1;
    }
    const arch_desc *ad = NULL;
    for (int i = 0; i < ARCH_COUNT; i++)
        if (gguf_str_eq(as, archs[i].name)) ad = &archs[i];
    char an[64];
    gguf_str_copy(as, an, sizeof an);
    if (!ad) {
        snprintf(err, errlen, "%s: architecture '%s' is not supported (strata runs: llama, qwen3moe, gemma3)", f->path, an);
        return -1;
    }
    hp->arch = ad->id;
    const char *a = ad->name;
    if (get_u32_key(f, a, "block_count", 1, 0, 1, 4096, &hp->n_layers, err, errlen) ||
        get_u32_key(f, a, "embedding_length", 1, 0, 1, 1 << 17, &hp->n_embd, err, errlen) ||
        get_u32_key(f, a, "attention.head_count", 1, 0, 1, 4096, &hp->n_heads, err, errlen) ||
        get_u32_key(f, a, "attention.head_count_kv", 0, (uint32_t)hp->n_heads, 1, 4096, &hp->n_kv_heads, err, errlen) ||
        get_u32_key(f, a, "context_length", 0, 4096, 1, 1 << 24, &hp->n_ctx_train, err, errlen))
        return -1;
    if (hp->n_heads % hp->n_kv_heads) {
        snprintf(err, errlen, "%s: head_count %d is not a multiple of head_count_kv %d", f->path, hp->n_heads, hp->n_kv_heads);
        return -1;
    }
    if (get_u32_key(f, a, "attention.key_length", 0, (uint32_t)(hp->n_embd / hp->n_heads), 1, 4096, &hp->head_dim, err, errlen) ||
        get_u32_key(f, a, "feed_forward_length", ad->id != ARCH_QWEN3MOE, 0, 0, 1 << 20, &hp->n_ff, err, errlen) ||
        get_u32_key(f, a, "rope.dimension_count", 0, (uint32_t)hp->head_dim, 2, (uint32_t)hp->head_dim, &hp->n_rot, err, errlen))
        return -1;
    if (hp->head_dim % 2 || hp->n_rot % 2) {
        snprintf(err, errlen, "%s: head dimension %d / rope dimension %d must be even", f->path, hp->head_dim, hp->n_rot);
        return -1;
    }
    float rope_factor;
    if (get_f32_key(f, a, "rope.freq_base", 10000.0f, &hp->rope_base, err, errlen) ||
        get_f32_key(f, a, "attention.layer_norm_rms_epsilon", 1e-5f, &hp->rms_eps, err, errlen) ||
        get_f32_key(f, a, "rope.scaling.factor", 1.0f, &rope_factor, err, errlen))
        return -1;
    hp->rope_scale = rope_factor > 0 ? rope_factor : 1.0f;
    {
        char key[128];
        gguf_str st;
        snprintf(key, sizeof key, "%s.rope.scaling.type", a);
        if (gguf_get_str(f, key, &st) == 0 && !gguf_str_eq(st, "linear") && !gguf_str_eq(st, "none")) {
            char tn[32];
            snprintf(err, errlen, "%s: rope scaling type '%s' is not supported (linear or none)", f->path,
                     gguf_str_copy(st, tn, sizeof tn));
            return -1;
        }
        if (gguf_get_str(f, key, &st) != 0 || gguf_str_eq(st, "none")) hp->rope_scale = 1.0f;
    }
    hp->rope_base_local = hp->rope_base;
    hp->attn_scale = 1.0f / sqrtf((float)hp->head_dim);
    hp->embd_scale = 1.0f;
    if (ad->id == ARCH_QWEN3MOE) {
        if (get_u32_key(f, a, "expert_count", 1, 0, 1, 4096, &hp->n_experts, err, errlen) ||
            get_u32_key(f, a, "expert_used_count", 1, 0, 1, (uint32_t)hp->n_experts, &hp->n_experts_used, err, errlen) ||
            get_u32_key(f, a, "expert_feed_forward_length", 1, 0, 1, 1 << 20, &hp->n_ff_exp, err, errlen))
            return -1;
        /* Qwen3's Q/K rows are stored in HF order (the converter permutes only llama), so RoPE
         * rotates the halves of each head (NEOX style), as transformers' rotate_half. */
        hp->rope_neox = 1;
    }
    if (ad->id == ARCH_GEMMA3) {
        if (get_u32_key(f, a, "attention.sliding_window", 0, 512, 1, 1 << 24, &hp->sliding_window, err, errlen) ||
            get_f32_key(f, a, "rope.local.freq_base", 10000.0f, &hp->rope_base_local, err, errlen))
            return -1;
        /* Gemma 3 alternates five sliding-window layers with one global layer; the GGUF
         * carries no key for the pattern (a fact of the architecture). */
        hp->sliding_pattern = 6;
        hp->embd_scale = sqrtf((float)hp->n_embd);
        hp->ffn_gelu = 1;
        hp->rope_neox = 1;
    }

    /* vocabulary size: the embedding table decides; the tokenizer must agree (engine checks) */
    const gguf_tensor *te = gguf_find_tensor(f, "token_embd.weight");
    if (!te || te->n_dims != 2) {
        snprintf(err, errlen, "%s: missing 2-D tensor token_embd.weight", f->path);
        return -1;
    }
    if (te->ne[1] < 1 || te->ne[1] > (1 << 24)) {
        snprintf(err, errlen, "%s: token_embd.weight has %lld rows", f->path, (long long)te->ne[1]);
        return -1;
    }
    hp->n_vocab = (int)te->ne[1];
    if (bind_weight(f, "token_embd.weight", hp->n_embd, hp->n_vocab, 1, 1, &w->tok_embd, err, errlen) ||
        bind_weight(f, "output_norm.weight", hp->n_embd, 1, 1, 1, &w->output_norm, err, errlen) ||
        bind_weight(f, "output.weight", hp->n_embd, hp->n_vocab, 1, 0, &w->output, err, errlen))
        return -1;
    if (!w->output.data) w->output = w->tok_embd;   /* tied embeddings */

    /* block_count must not promise more layers than the file holds */
    char name[96];
    snprintf(name, sizeof name, "blk.%d.attn_norm.weight", hp->n_layers - 1);
    if (!gguf_find_tensor(f, name)) {
        snprintf(err, errlen, "%s: block_count is %d but tensor %s is missing", f->path, hp->n_layers, name);
        return -1;
    }
    w->layers = st_calloc((size_t)hp->n_layers, sizeof(layer_weights));
    if (!w->layers) { snprintf(err, errlen, "%s: out of memory binding %d layers", f->path, hp->n_layers); return -1; }
    for (int l = 0; l < hp->n_layers; l++) {
        layer_weights *L = &w->layers[l];
        for (int s = 0; s < S_COUNT; s++) {
            unsigned bit = BIT(s);
            if (!((ad->required | ad->optional) & bit)) continue;
            const tensor_slot *ts = &slots[s];
            snprintf(name, sizeof name, "blk.%d.%s.weight", l, ts->name);
            weight *dst = (weight *)((char *)L + ts->offset);
            if (bind_weight(f, name, dim_value(hp, ts->n_in), dim_value(hp, ts->n_out),
                            ts->three_d ? hp->n_experts : 1, (ad->required & bit) != 0, dst, err, errlen)) {
                model_weights_free(w);
                return -1;
            }
        }
        L->sliding = hparams_layer_sliding(hp, l);
    }
    return 0;
}

void model_weights_free(model_weights *w) {
    st_free(w->layers);
    w->layers = NULL;
}

/* Bytes a decode step reads: every layer weight once, the output head, one embedding row. */
uint64_t model_weight_bytes_per_token(const hparams *hp, const model_weights *w) {
    uint64_t total = w->output.nbytes + w->output_norm.nbytes + w->tok_embd.nbytes / (uint64_t)hp->n_vocab;
    for (int l = 0; l < hp->n_layers; l++) {
        const layer_weights *L = &w->layers[l];
        const weight *ws[] = { &L->attn_norm, &L->wq, &L->wk, &L->wv, &L->wo, &L->q_norm, &L->k_norm,
                               &L->post_attn_norm, &L->post_ffn_norm, &L->ffn_norm, &L->gate, &L->up, &L->down,
                               &L->gate_inp };
        for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++) total += ws[i]->nbytes;
        if (hp->n_experts > 0) {  /* only the used experts are read */
            uint64_t per = (L->gate_exps.nbytes + L->up_exps.nbytes + L->down_exps.nbytes) / (uint64_t)hp->n_experts;
            total += per * (uint64_t)hp->n_experts_used;
        }
    }
    return total;
}
