/* Synthetic models of real shapes (src/model/synth.h).
 *
 *   tensors    token_embd [E, V], output_norm [E], output [E, V], and per layer
 *              attn_norm [E], attn_q [E, H*HD], attn_k/attn_v [E, KVH*HD], attn_output [H*HD, E],
 *              ffn_norm [E], then
 *                llama:    ffn_gate/ffn_up [E, F], ffn_down [F, E]
 *                qwen3moe: attn_q_norm/attn_k_norm [HD], ffn_gate_inp [E, X],
 *                          ffn_gate_exps/ffn_up_exps [E, FX, X], ffn_down_exps [FX, E, X]
 *                gemma3:   attn_q_norm/attn_k_norm [HD], post_attention_norm [E], ffn_gate/
 *                          ffn_up [E, F], ffn_down [F, E], post_ffw_norm [E]; no output
 *                          (tied to token_embd, as in Google's files)
 *              (GGUF order: ne[0] = the row length n_in; X experts of FX rows)
 *   metadata   general.*, <arch>.* hyperparameters, tokenizer.* (copied or built in)
 *
 * Random numbers are addressed, not drawn in sequence: row r of tensor t uses the stream
 * key = mix(seed, t, r), element i of it hash(key, i). Threads take rows in any split. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include "synth.h"
#include "gguf/gguf.h"
#include "quant/quant.h"
#include "cpu/threadpool.h"
#include "core/util.h"

/* ---- counter-based random numbers ------------------------------------------------------ */

/* splitmix64's finalizer: a bijective 64-bit mixer with full avalanche. */
static inline uint64_t mix64(uint64_t z) {
    z ^= z >> 30; z *= 0xbf58476d1ce4e5b9ull;
    z ^= z >> 27; z *= 0x94d049bb133111ebull;
    z ^= z >> 31;
    return z;
}

static inline uint64_t stream_key(uint64_t seed, uint64_t tensor, uint64_t row) {
    return mix64(mix64(seed ^ 0x5EEDull) ^ mix64(tensor * 0x9E3779B97F4A7C15ull + 1) ^ (row * 0xD1B54A32D192ED03ull));
}

static inline uint64_t stream_u64(uint64_t key, uint64_t i) { return mix64(key + (i + 1) * 0x9E3779B97F4A7C15ull); }

/* Irwin-Hall of four 16-bit uniforms, centred and scaled to variance 1: only integer adds
 * and exactly rounded float operations, so every machine computes the same bits. */
float synth_gauss(uint64_t key, uint64_t i) {
    uint64_t h = stream_u64(key, i);
    uint32_t s = (uint32_t)(h & 0xffff) + (uint32_t)((h >> 16) & 0xffff) + (uint32_t)((h >> 32) & 0xffff) +
                 (uint32_t)(h >> 48);
    /* (s + 2) / 65536 is the sum of four uniforms in (0, 1) (mean 2, variance 1/3) */
    float u = (float)(s + 2) * (1.0f / 65536.0f) - 2.0f;
    return u * 1.7320508f;
}

/* ---- tensor list ---------------------------------------------------------------------------- */
typedef enum { TK_NORM, TK_MATRIX } tensor_kind;

typedef struct {
    char name[64];
    const char *opt;            /* option that chose the type (for messages) */
    tensor_kind kind;
    int type, n_dims;
    int64_t ne[3];              /* n_in, n_out, n_expert */
    uint64_t nbytes;
    void *data;
} synth_tensor;

typedef struct {
    synth_tensor *t;
    int n, cap;
} tensor_list;

static int add_tensor(tensor_list *L, const char *name, const char *opt, tensor_kind k, int type, int n_dims,
                      int64_t n_in, int64_t n_out, int64_t n_exp) {
    if (L->n == L->cap) {
        int cap = L->cap ? L->cap * 2 : 64;
        synth_tensor *p = st_realloc(L->t, (size_t)cap * sizeof *p);
        if (!p) return -1;
        L->t = p; L->cap = cap;
    }
    synth_tensor *t = &L->t[L->n++];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->opt = opt; t->kind = k; t->type = type; t->n_dims = n_dims;
    t->ne[0] = n_in; t->ne[1] = n_out; t->ne[2] = n_exp;
    return 0;
}

static void free_list(tensor_list *L) {
    for (int i = 0; i < L->n; i++) st_free(L->t[i].data);
    st_free(L->t);
    memset(L, 0, sizeof *L);
}

static int build_list(const synth_params *p, tensor_list *L, char *err, size_t errlen) {
    const int64_t E = p->n_embd, Q = (int64_t)p->n_heads * p->head_dim, KV = (int64_t)p->n_kv_heads * p->head_dim;
    char nm[64];
    int moe = p->arch == ARCH_QWEN3MOE, gemma = p->arch == ARCH_GEMMA3, rc = 0;
    rc |= add_tensor(L, "token_embd.weight", "--type-embd", TK_MATRIX, p->type_embd, 2, E, p->n_vocab, 1);
    for (int l = 0; l < p->n_layers && !rc; l++) {
#define T2(suffix, opt, kind, type, nd, i, o) \
        (snprintf(nm, sizeof nm, "blk.%d." suffix ".weight", l), add_tensor(L, nm, opt, kind, type, nd, i, o, 1))
        rc |= T2("attn_norm", "", TK_NORM, TYPE_F32, 1, E, 1);
        rc |= T2("attn_q", "--type-attn", TK_MATRIX, p->type_attn, 2, E, Q);
        rc |= T2("attn_k", "--type-attn", TK_MATRIX, p->type_attn, 2, E, KV);
        rc |= T2("attn_v", "--type-attn", TK_MATRIX, p->type_attn, 2, E, KV);
        rc |= T2("attn_output", "--type-attn", TK_MATRIX, p->type_attn, 2, Q, E);
        if (moe || gemma) {
            rc |= T2("attn_q_norm", "", TK_NORM, TYPE_F32, 1, p->head_dim, 1);
            rc |= T2("attn_k_norm", "", TK_NORM, TYPE_F32, 1, p->head_dim, 1);
        }
        if (gemma) rc |= T2("post_attention_norm", "", TK_NORM, TYPE_F32, 1, E, 1);
        rc |= T2("ffn_norm", "", TK_NORM, TYPE_F32, 1, E, 1);
        if (moe) {
            const int64_t X = p->n_experts, FX = p->n_ff_exp;
            rc |= T2("ffn_gate_inp", "--type-router", TK_MATRIX, p->type_router, 2, E, X);
            snprintf(nm, sizeof nm, "blk.%d.ffn_gate_exps.weight", l);
            rc |= add_tensor(L, nm, "--type-experts", TK_MATRIX, p->type_experts, 3, E, FX, X);
            snprintf(nm, sizeof nm, "blk.%d.ffn_up_exps.weight", l);
            rc |= add_tensor(L, nm, "--type-experts", TK_MATRIX, p->type_experts, 3, E, FX, X);
            snprintf(nm, sizeof nm, "blk.%d.ffn_down_exps.weight", l);
            rc |= add_tensor(L, nm, "--type-experts", TK_MATRIX, p->type_experts, 3, FX, E, X);
        } else {
            rc |= T2("ffn_gate", "--type-ffn", TK_MATRIX, p->type_ffn, 2, E, p->n_ff);
            rc |= T2("ffn_up", "--type-ffn", TK_MATRIX, p->type_ffn, 2, E, p->n_ff);
            rc |= T2("ffn_down", "--type-ffn", TK_MATRIX, p->type_ffn, 2, p->n_ff, E);
            if (gemma) rc |= T2("post_ffw_norm", "", TK_NORM, TYPE_F32, 1, E, 1);
        }
#undef T2
    }
    rc |= add_tensor(L, "output_norm.weight", "", TK_NORM, TYPE_F32, 1, E, 1, 1);
    if (!gemma) rc |= add_tensor(L, "output.weight", "--type-output", TK_MATRIX, p->type_output, 2, E, p->n_vocab, 1);
    if (rc) { snprintf(err, errlen, "out of memory listing tensors"); return -1; }

    for (int i = 0; i < L->n; i++) {
        synth_tensor *t = &L->t[i];
        const quant_traits *qt = quant_traits_get(t->type);
        if (!qt) {
            snprintf(err, errlen, "%s: %s %s is not a weight format of this build", t->name, t->opt,
                     quant_type_name(t->type));
            return -1;
        }
        size_t rb = quant_row_bytes(t->type, t->ne[0]);
        if (!rb) {
            snprintf(err, errlen, "%s: rows of %lld weights are not a multiple of %s's block of %d (%s): "
                     "choose a format with smaller blocks or a multiple of %d", t->name, (long long)t->ne[0],
                     qt->name, qt->blck, t->opt, qt->blck);
            return -1;
        }
        t->nbytes = (uint64_t)rb * (uint64_t)t->ne[1] * (uint64_t)t->ne[2];
    }
    return 0;
}

static int check_params(const synth_params *p, char *err, size_t errlen) {
#define NEED(c, ...) do { if (!(c)) { snprintf(err, errlen, __VA_ARGS__); return -1; } } while (0)
    NEED(p->arch == ARCH_LLAMA || p->arch == ARCH_QWEN3MOE || p->arch == ARCH_GEMMA3,
         "--arch: synth writes llama, qwen3moe or gemma3");
    NEED(p->n_layers >= 1 && p->n_layers <= 4096, "--layers %d: must be 1..4096", p->n_layers);
    NEED(p->n_embd >= 1, "--dim %d: must be positive", p->n_embd);
    NEED(p->n_heads >= 1 && p->n_kv_heads >= 1 && p->n_heads % p->n_kv_heads == 0,
         "--heads %d / --kv-heads %d: heads must be a positive multiple of kv-heads", p->n_heads, p->n_kv_heads);
    NEED(p->head_dim >= 2 && p->head_dim % 2 == 0 && p->head_dim <= 4096, "--head-dim %d: must be even, 2..4096",
         p->head_dim);
    NEED(p->n_vocab >= 1 && p->n_vocab <= (1 << 24), "--vocab %d: must be 1..16777216", p->n_vocab);
    NEED(p->n_ctx >= 1, "--ctx %d: must be positive", p->n_ctx);
    NEED(p->weight_std > 0 && p->weight_std < 100, "weight std %g: must be in (0, 100)", (double)p->weight_std);
    if (p->arch == ARCH_QWEN3MOE) {
        NEED(p->n_experts >= 1 && p->n_experts <= 4096, "--experts %d: must be 1..4096", p->n_experts);
        NEED(p->n_experts_used >= 1 && p->n_experts_used <= p->n_experts && p->n_experts_used <= 64,
             "--experts-used %d: must be 1..min(64, --experts %d)", p->n_experts_used, p->n_experts);
        NEED(p->n_ff_exp >= 1, "--expert-ffn %d: must be positive", p->n_ff_exp);
    } else {
        NEED(p->n_ff >= 1, "--ffn %d: must be positive", p->n_ff);
    }
    if (p->arch == ARCH_GEMMA3)
        NEED(p->sliding_window >= 1, "--window %d: must be positive", p->sliding_window);
    return 0;
#undef NEED
}

/* ---- weight generation ------------------------------------------------------------------ */

/* Formats whose blocks are drawn directly: the codebook formats (their quantizers search a
 * grid) and Q2_0 (its reference quantizer searches the scale: 11.6 M weights/s per core, so
 * the 29 G expert weights of the full Qwen3-30B-A3B shape took minutes). */
static int drawn_directly(int type) {
    switch (type) {
    case TYPE_IQ2_XXS: case TYPE_IQ2_XS: case TYPE_IQ2_S: case TYPE_IQ3_XXS: case TYPE_IQ3_S:
    case TYPE_IQ1_S: case TYPE_IQ1_M: case TYPE_IQ4_NL: case TYPE_IQ4_XS: case TYPE_Q2_0:
        return 1;
    default:
        return 0;
    }
}

/* The fp16 super-scale d of a block: the first 16 bits, except IQ1_M, which spreads it over
 * the top nibbles of its four 16-bit scale words (bits 12..15 of word w = bits 4w..4w+3 of d). */
static void block_set_d(int type, uint8_t *blk, uint16_t d) {
    if (type == TYPE_IQ1_M) {
        uint8_t *sc = blk + offsetof(block_iq1_m, scales);
        for (int w = 0; w < 4; w++) {
            uint16_t v = (uint16_t)(sc[2 * w] | (sc[2 * w + 1] << 8));
            v = (uint16_t)((v & 0x0fff) | (((d >> (4 * w)) & 0xf) << 12));
            sc[2 * w] = (uint8_t)v; sc[2 * w + 1] = (uint8_t)(v >> 8);
        }
        return;
    }
    blk[0] = (uint8_t)d; blk[1] = (uint8_t)(d >> 8);
}

/* One block of random codes: bytes from the stream, then d chosen so that the block's
 * dequantized RMS is `std` (dequantization is linear in d). fbuf: blck floats. */
static void draw_block(const quant_traits *qt, uint64_t key, uint8_t *blk, float std, float *fbuf) {
    for (int i = 0; i < qt->bsize; i += 8) {
        uint64_t r = stream_u64(key, (uint64_t)i);
        for (int j = 0; j < 8 && i + j < qt->bsize; j++) blk[i + j] = (uint8_t)(r >> (8 * j));
    }
    block_set_d(qt->type, blk, 0x3C00);   /* d = 1.0 */
    qt->dequant_row(blk, fbuf, qt->blck);
    double ss = 0;
    for (int i = 0; i < qt->blck; i++) ss += (double)fbuf[i] * fbuf[i];
    /* sqrt is exactly rounded (IEEE), so this is machine-independent too */
    float rms = (float)__builtin_sqrt(ss / qt->blck);
    block_set_d(qt->type, blk, rms > 0 ? f32_to_fp16(std / rms) : 0);
}

typedef struct {
    const synth_params *p;
    synth_tensor *t;
    int tensor_index;
    float *scratch;             /* per worker: max_row floats */
    int64_t max_row;
} gen_job;

static void gen_worker(void *ctx, int ith, int nth) {
    gen_job *j = ctx;
    synth_tensor *t = j->t;
    const quant_traits *qt = quant_traits_get(t->type);
    const int64_t n_in = t->ne[0], rows = t->ne[1] * t->ne[2];
    const size_t rb = quant_row_bytes(t->type, n_in);
    float *row = j->scratch + (size_t)ith * (size_t)j->max_row;
    long lo, hi;
    threadpool_split((long)rows, ith, nth, 1, &lo, &hi);
    for (long r = lo; r < hi; r++) {
        uint8_t *dst = (uint8_t *)t->data + (size_t)r * rb;
        uint64_t key = stream_key(j->p->seed, (uint64_t)j->tensor_index, (uint64_t)r);
        if (drawn_directly(t->type)) {
            for (int64_t b = 0; b < n_in / qt->blck; b++)
                draw_block(qt, stream_u64(key, (uint64_t)b) ^ 0xB10Cull, dst + (size_t)b * (size_t)qt->bsize,
                           j->p->weight_std, row);
        } else {
            for (int64_t i = 0; i < n_in; i++) row[i] = synth_gauss(key, (uint64_t)i) * j->p->weight_std;
            qt->quant_row(row, dst, n_in);
        }
    }
}

static int generate(const synth_params *p, tensor_list *L, char *err, size_t errlen) {
    int64_t max_row = 256;
    for (int i = 0; i < L->n; i++)
        if (L->t[i].ne[0] > max_row) max_row = L->t[i].ne[0];
    for (int i = 0; i < L->n; i++) {
        synth_tensor *t = &L->t[i];
        if (t->kind == TK_MATRIX && !drawn_directly(t->type) && !quant_traits_get(t->type)->quant_row) {
            snprintf(err, errlen, "%s: %s %s: this build cannot quantize to that format", t->name, t->opt,
                     quant_type_name(t->type));
            return -1;
        }
    }
    int nth = p->n_threads > 0 ? p->n_threads : cpu_count();
    threadpool *tp = nth > 1 ? threadpool_create(nth) : NULL;
    if (nth > 1 && !tp) nth = 1;
    float *scratch = st_malloc((size_t)nth * (size_t)max_row * sizeof(float));
    if (!scratch) { threadpool_free(tp); snprintf(err, errlen, "out of memory"); return -1; }
    int rc = 0;
    for (int i = 0; i < L->n && !rc; i++) {
        synth_tensor *t = &L->t[i];
        t->data = st_malloc(t->nbytes ? (size_t)t->nbytes : 1);
        if (!t->data) {
            snprintf(err, errlen, "%s: out of memory for %.1f MiB of weights", t->name, t->nbytes / 1048576.0);
            rc = -1;
            break;
        }
        if (t->kind == TK_NORM) {   /* norms of one */
            float *f = t->data;
            for (int64_t k = 0; k < t->ne[0]; k++) f[k] = 1.0f;
            continue;
        }
        gen_job j = { p, t, i, scratch, max_row };
        threadpool_run(tp, gen_worker, &j);
    }
    st_free(scratch);
    threadpool_free(tp);
    return rc;
}

/* ---- tokenizer -------------------------------------------------------------------------- */

/* GPT-2's byte-to-unicode spelling: printable bytes stand for themselves, the others map
 * to U+0100 upward in byte order (a fact of the byte-level BPE format). UTF-8 into out. */
static void gpt2_byte_spelling(int byte, char out[4]) {
    int cp;
    if ((byte >= 33 && byte <= 126) || (byte >= 161 && byte <= 172) || (byte >= 174 && byte <= 255)) cp = byte;
    else {
        int n = 0;
        for (int b = 0; b < byte; b++)
            if (!((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255))) n++;
        cp = 256 + n;
    }
    if (cp < 0x80) { out[0] = (char)cp; out[1] = 0; }
    else { out[0] = (char)(0xC0 | (cp >> 6)); out[1] = (char)(0x80 | (cp & 0x3F)); out[2] = 0; }
}

static const char chatml_template[] =
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

/* Token list to write: strings (owned), types, scores (or NULL). */
typedef struct { char **tok; int32_t *type; float *score; int n; } vocab_out;

static void vocab_free(vocab_out *v) {
    for (int i = 0; v->tok && i < v->n; i++) st_free(v->tok[i]);
    st_free(v->tok); st_free(v->type); st_free(v->score);
    memset(v, 0, sizeof *v);
}

static int vocab_alloc(vocab_out *v, int n, int with_scores) {
    v->n = n;
    v->tok = st_calloc((size_t)n, sizeof *v->tok);
    v->type = st_calloc((size_t)n, sizeof *v->type);
    v->score = with_scores ? st_calloc((size_t)n, sizeof *v->score) : NULL;
    return v->tok && v->type && (!with_scores || v->score) ? 0 : -1;
}

/* Pad entries [from, n) with distinct UNUSED tokens. */
static int vocab_pad(vocab_out *v, int from) {
    for (int i = from; i < v->n; i++) {
        char b[40];
        snprintf(b, sizeof b, "<|synth_pad_%d|>", i);
        v->tok[i] = st_strdup(b);
        if (!v->tok[i]) return -1;
        v->type[i] = 5;   /* UNUSED: never produced by the tokenizer */
    }
    return 0;
}

static int write_vocab(gguf_writer *w, const vocab_out *v) {
    int rc = gguf_writer_add_arr(w, "tokenizer.ggml.tokens", GGUF_TYPE_STRING, (const char *const *)v->tok, (uint64_t)v->n);
    rc |= gguf_writer_add_arr(w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, v->type, (uint64_t)v->n);
    if (v->score) rc |= gguf_writer_add_arr(w, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, v->score, (uint64_t)v->n);
    return rc;
}

static int builtin_tokenizer(gguf_writer *w, int n_vocab, char *err, size_t errlen) {
    static const char *specials[] = { "<|endoftext|>", "<|im_start|>", "<|im_end|>" };
    const int n_base = 256 + 3;
    if (n_vocab < n_base) {
        snprintf(err, errlen, "--vocab %d: the built-in tokenizer has %d tokens (256 bytes + 3 specials); "
                 "use --vocab %d or more, or --tokenizer FROM.gguf", n_vocab, n_base, n_base);
        return -1;
    }
    vocab_out v = { 0 };
    int rc = vocab_alloc(&v, n_vocab, 0);
    for (int b = 0; b < 256 && !rc; b++) {
        char s[4];
        gpt2_byte_spelling(b, s);
        v.tok[b] = st_strdup(s);
        v.type[b] = 1;   /* NORMAL */
        if (!v.tok[b]) rc = -1;
    }
    for (int i = 0; i < 3 && !rc; i++) {
        v.tok[256 + i] = st_strdup(specials[i]);
        v.type[256 + i] = 3;   /* CONTROL */
        if (!v.tok[256 + i]) rc = -1;
    }
    if (!rc) rc = vocab_pad(&v, n_base);
    const char *no_merges[1] = { "" };
    if (!rc) rc = gguf_writer_add_str(w, "tokenizer.ggml.model", "gpt2") |
                  gguf_writer_add_str(w, "tokenizer.ggml.pre", "default") | write_vocab(w, &v) |
                  gguf_writer_add_arr(w, "tokenizer.ggml.merges", GGUF_TYPE_STRING, no_merges, 0) |
                  gguf_writer_add_u32(w, "tokenizer.ggml.bos_token_id", 256) |
                  gguf_writer_add_u32(w, "tokenizer.ggml.eos_token_id", 258) |
                  gguf_writer_add_u32(w, "tokenizer.ggml.padding_token_id", 256) |
                  gguf_writer_add_bool(w, "tokenizer.ggml.add_bos_token", 0) |
                  gguf_writer_add_str(w, "tokenizer.chat_template", chatml_template);
    vocab_free(&v);
    if (rc) snprintf(err, errlen, "out of memory building the built-in tokenizer");
    return rc ? -1 : 0;
}

static int copied_tokenizer(gguf_writer *w, const char *path, int n_vocab, char *err, size_t errlen) {
    gguf_file *f;
    if (gguf_open(path, &f, err, errlen) != 0) return -1;
    int rc = 0;
    const gguf_kv *kt = gguf_get_kv(f, "tokenizer.ggml.tokens");
    if (!kt || kt->type != GGUF_TYPE_ARRAY || kt->arr_type != GGUF_TYPE_STRING) {
        snprintf(err, errlen, "%s: no tokenizer.ggml.tokens array: --tokenizer needs a GGUF with a tokenizer", path);
        gguf_close(f);
        return -1;
    }
    int n_tok = (int)kt->arr_n;
    if (kt->arr_n > (uint64_t)n_vocab) {
        snprintf(err, errlen, "%s: its tokenizer has %d tokens but --vocab is %d: use --vocab %d or more", path,
                 n_tok, n_vocab, n_tok);
        gguf_close(f);
        return -1;
    }
    /* every tokenizer.* key copied as is, except the per-token arrays when padding is needed */
    for (uint64_t i = 0; i < f->n_kv && !rc; i++) {
        const gguf_kv *kv = &f->kv[i];
        if (kv->key.len < 10 || memcmp(kv->key.ptr, "tokenizer.", 10)) continue;
        if (n_tok < n_vocab && (gguf_str_eq(kv->key, "tokenizer.ggml.tokens") ||
                                gguf_str_eq(kv->key, "tokenizer.ggml.token_type") ||
                                gguf_str_eq(kv->key, "tokenizer.ggml.scores")))
            continue;
        rc = gguf_writer_copy_kv(w, kv);
    }
    if (!rc && n_tok < n_vocab) {
        const void *types = NULL, *scores = NULL;
        uint64_t nt = 0, ns = 0;
        int has_types = gguf_get_arr(f, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, &nt, &types) == 0 && nt == (uint64_t)n_tok;
        int has_scores = gguf_get_arr(f, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, &ns, &scores) == 0 && ns == (uint64_t)n_tok;
        vocab_out v = { 0 };
        rc = vocab_alloc(&v, n_vocab, has_scores);
        for (int i = 0; i < n_tok && !rc; i++) {
            gguf_str s = kt->arr_str[i];
            v.tok[i] = st_malloc(s.len + 1);
            if (!v.tok[i]) { rc = -1; break; }
            memcpy(v.tok[i], s.ptr, s.len);
            v.tok[i][s.len] = 0;
            v.type[i] = 1;
            if (has_types) memcpy(&v.type[i], (const char *)types + 4 * (size_t)i, 4);
            if (has_scores) memcpy(&v.score[i], (const char *)scores + 4 * (size_t)i, 4);
        }
        if (!rc) rc = vocab_pad(&v, n_tok);
        if (!rc) rc = write_vocab(w, &v);
        vocab_free(&v);
    }
    gguf_close(f);
    if (rc) snprintf(err, errlen, "%s: copying the tokenizer failed (out of memory or a malformed key)", path);
    return rc ? -1 : 0;
}

/* ---- metadata ---------------------------------------------------------------------------- */

/* general.file_type (llama_ftype) for the format of the bulk of the weights; -1: none fits. */
static int file_type_of(int type) {
    switch (type) {
    case TYPE_F32: return 0;      case TYPE_F16: return 1;      case TYPE_Q4_0: return 2;
    case TYPE_Q4_1: return 3;     case TYPE_Q8_0: return 7;     case TYPE_Q5_0: return 8;
    case TYPE_Q5_1: return 9;     case TYPE_Q2_K: return 10;    case TYPE_Q3_K: return 12;
    case TYPE_Q4_K: return 15;    case TYPE_Q5_K: return 17;    case TYPE_Q6_K: return 18;
    case TYPE_IQ2_XXS: return 19; case TYPE_IQ2_XS: return 20;  case TYPE_IQ3_XXS: return 23;
    case TYPE_IQ1_S: return 24;   case TYPE_IQ4_NL: return 25;  case TYPE_IQ3_S: return 26;
    case TYPE_IQ2_S: return 28;   case TYPE_IQ4_XS: return 30;  case TYPE_IQ1_M: return 31;
    case TYPE_BF16: return 32;
    default: return -1;
    }
}

static int write_metadata(gguf_writer *w, const synth_params *p) {
    const char *a = arch_name(p->arch);
    char key[96], name[128];
    int rc = 0;
#define KEY(suffix) (snprintf(key, sizeof key, "%s." suffix, a), key)
    if (p->name) snprintf(name, sizeof name, "%s", p->name);
    else snprintf(name, sizeof name, "strata-synth %s %dL d%d", a, p->n_layers, p->n_embd);
    rc |= gguf_writer_add_str(w, "general.architecture", a);
    rc |= gguf_writer_add_str(w, "general.name", name);
    rc |= gguf_writer_add_u32(w, "general.quantization_version", 2);
    int ft = file_type_of(p->arch == ARCH_QWEN3MOE ? p->type_experts : p->type_ffn);
    if (ft >= 0) rc |= gguf_writer_add_u32(w, "general.file_type", (uint32_t)ft);
    rc |= gguf_writer_add_u32(w, KEY("block_count"), (uint32_t)p->n_layers);
    rc |= gguf_writer_add_u32(w, KEY("context_length"), (uint32_t)p->n_ctx);
    rc |= gguf_writer_add_u32(w, KEY("embedding_length"), (uint32_t)p->n_embd);
    rc |= gguf_writer_add_u32(w, KEY("feed_forward_length"), (uint32_t)(p->n_ff > 0 ? p->n_ff : p->n_ff_exp));
    rc |= gguf_writer_add_u32(w, KEY("attention.head_count"), (uint32_t)p->n_heads);
    rc |= gguf_writer_add_u32(w, KEY("attention.head_count_kv"), (uint32_t)p->n_kv_heads);
    rc |= gguf_writer_add_u32(w, KEY("attention.key_length"), (uint32_t)p->head_dim);
    rc |= gguf_writer_add_u32(w, KEY("attention.value_length"), (uint32_t)p->head_dim);
    rc |= gguf_writer_add_f32(w, KEY("rope.freq_base"), p->rope_base);
    rc |= gguf_writer_add_f32(w, KEY("attention.layer_norm_rms_epsilon"), p->rms_eps);
    rc |= gguf_writer_add_u32(w, KEY("vocab_size"), (uint32_t)p->n_vocab);
    if (p->arch == ARCH_LLAMA) rc |= gguf_writer_add_u32(w, KEY("rope.dimension_count"), (uint32_t)p->head_dim);
    if (p->arch == ARCH_QWEN3MOE) {
        rc |= gguf_writer_add_u32(w, KEY("expert_count"), (uint32_t)p->n_experts);
        rc |= gguf_writer_add_u32(w, KEY("expert_used_count"), (uint32_t)p->n_experts_used);
        rc |= gguf_writer_add_u32(w, KEY("expert_feed_forward_length"), (uint32_t)p->n_ff_exp);
    }
    if (p->arch == ARCH_GEMMA3) {
        rc |= gguf_writer_add_u32(w, KEY("attention.sliding_window"), (uint32_t)p->sliding_window);
        rc |= gguf_writer_add_f32(w, KEY("rope.local.freq_base"), p->rope_base_local);
    }
#undef KEY
    return rc;
}

/* ---- public ------------------------------------------------------------------------------- */
void synth_default_params(synth_params *p, arch_id arch) {
    memset(p, 0, sizeof *p);
    p->arch = arch;
    p->seed = 1;
    p->weight_std = 0.02f;
    p->rms_eps = 1e-6f;
    p->type_router = TYPE_F32;
    if (arch == ARCH_QWEN3MOE) {      /* Qwen3-30B-A3B */
        p->n_layers = 48; p->n_embd = 2048; p->n_heads = 32; p->n_kv_heads = 4; p->head_dim = 128;
        p->n_ff = 6144; p->n_experts = 128; p->n_experts_used = 8; p->n_ff_exp = 768;
        p->n_vocab = 151936; p->n_ctx = 40960; p->rope_base = 1e6f;
        p->type_attn = TYPE_Q4_K; p->type_ffn = TYPE_Q4_K; p->type_experts = TYPE_IQ3_XXS;
        p->type_output = TYPE_Q6_K; p->type_embd = TYPE_Q4_K;
    } else if (arch == ARCH_GEMMA3) { /* Gemma 3 270m: five sliding-window layers to one global */
        p->n_layers = 18; p->n_embd = 640; p->n_heads = 4; p->n_kv_heads = 1; p->head_dim = 256;
        p->n_ff = 2048; p->n_vocab = 262144; p->n_ctx = 32768; p->rope_base = 1e6f;
        p->sliding_window = 512; p->rope_base_local = 10000.0f;
        p->type_attn = TYPE_Q8_0; p->type_ffn = TYPE_Q8_0; p->type_experts = TYPE_Q8_0;
        p->type_output = TYPE_Q8_0; p->type_embd = TYPE_Q8_0;
    } else {                          /* SmolLM2-135M */
        p->n_layers = 30; p->n_embd = 576; p->n_heads = 9; p->n_kv_heads = 3; p->head_dim = 64;
        p->n_ff = 1536; p->n_vocab = 49152; p->n_ctx = 8192; p->rope_base = 100000.0f; p->rms_eps = 1e-5f;
        p->type_attn = TYPE_Q8_0; p->type_ffn = TYPE_Q8_0; p->type_experts = TYPE_Q8_0;
        p->type_output = TYPE_Q8_0; p->type_embd = TYPE_Q8_0;
    }
}

int64_t synth_data_bytes(const synth_params *p, char *err, size_t errlen) {
    if (check_params(p, err, errlen)) return -1;
    tensor_list L = { 0 };
    if (build_list(p, &L, err, errlen)) { free_list(&L); return -1; }
    uint64_t n = 0;
    for (int i = 0; i < L.n; i++) n += L.t[i].nbytes;
    free_list(&L);
    return (int64_t)n;
}

int synth_write(const synth_params *p, const char *path, char *err, size_t errlen) {
    if (check_params(p, err, errlen)) return -1;
    tensor_list L = { 0 };
    gguf_writer *w = NULL;
    int rc = -1;
    if (build_list(p, &L, err, errlen)) goto done;
    w = gguf_writer_new();
    if (!w) { snprintf(err, errlen, "out of memory"); goto done; }
    if (write_metadata(w, p)) { snprintf(err, errlen, "out of memory writing metadata"); goto done; }
    int builtin = !p->tokenizer_path || !*p->tokenizer_path || !strcmp(p->tokenizer_path, "builtin");
    if (builtin ? builtin_tokenizer(w, p->n_vocab, err, errlen)
                : copied_tokenizer(w, p->tokenizer_path, p->n_vocab, err, errlen))
        goto done;
    if (generate(p, &L, err, errlen)) goto done;
    for (int i = 0; i < L.n; i++) {
        synth_tensor *t = &L.t[i];
        if (gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, t->nbytes)) {
            snprintf(err, errlen, "%s: the GGUF writer refused the tensor", t->name);
            goto done;
        }
    }
    if (gguf_writer_write(w, path, err, errlen)) goto done;
    rc = 0;
done:
    gguf_writer_free(w);
    free_list(&L);
    return rc;
}
