/* strata synth: deterministic bytes (any thread count, golden hashes), files other readers
 * accept (python gguf's GGUFReader), files strata loads and runs, the tokenizer copied and
 * padded, weight statistics, and errors that name the tensor and the option. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "test.h"
#include "strata.h"
#include "model/synth.h"
#include "quant/quant.h"
#include "core/util.h"

static char tmpdir_path[256];
static const char *model_path;   /* the default model (STRATA_MODEL), may be absent */

static const char *tmp_path(const char *name) {
    static char buf[4][512];
    static int i;
    i = (i + 1) % 4;
    snprintf(buf[i], sizeof buf[i], "%s/%s", tmpdir_path, name);
    return buf[i];
}

static void *read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *b = malloc(sz > 0 ? (size_t)sz : 1);
    *n = b ? fread(b, 1, (size_t)sz, f) : 0;
    fclose(f);
    return b;
}

static uint64_t file_hash(const char *path, size_t *n) {
    void *b = read_file(path, n);
    uint64_t h = b ? fnv1a64(b, *n) : 0;
    free(b);
    return h;
}

/* small qwen3moe with every kind of weight generation: quantized K-quant / legacy formats,
 * directly drawn IQ blocks, F32 router and norms */
static void small_moe(synth_params *p) {
    synth_default_params(p, ARCH_QWEN3MOE);
    p->n_layers = 2; p->n_embd = 256; p->n_heads = 4; p->n_kv_heads = 2; p->head_dim = 64;
    p->n_ff = 512; p->n_experts = 8; p->n_experts_used = 2; p->n_ff_exp = 256; p->n_vocab = 320; p->n_ctx = 128;
    p->type_attn = TYPE_Q8_0; p->type_experts = TYPE_IQ3_XXS; p->type_output = TYPE_Q6_K; p->type_embd = TYPE_Q4_0;
    p->tokenizer_path = "builtin";
}

static void test_gauss(void) {
    double s = 0, ss = 0, mx = 0;
    const int n = 200000;
    for (int i = 0; i < n; i++) {
        double z = synth_gauss(0x1234, (uint64_t)i);
        s += z; ss += z * z;
        if (fabs(z) > mx) mx = fabs(z);
    }
    double mean = s / n, sd = sqrt(ss / n - mean * mean);
    CHECKF(fabs(mean) < 0.01 && fabs(sd - 1.0) < 0.01, "mean %g sd %g", mean, sd);
    CHECKF(mx > 3.0 && mx <= 2 * 1.7320508 + 1e-6, "max |z| %g", mx);
    CHECK(synth_gauss(1, 5) != synth_gauss(2, 5));    /* keyed */
    CHECK(synth_gauss(1, 5) == synth_gauss(1, 5));
}

static void test_determinism(void) {
    synth_params p;
    small_moe(&p);
    char err[512];
    const char *a = tmp_path("a.gguf"), *b = tmp_path("b.gguf"), *c = tmp_path("c.gguf");
    p.n_threads = 1;
    CHECKF(synth_write(&p, a, err, sizeof err) == 0, "%s", err);
    p.n_threads = 2;
    CHECKF(synth_write(&p, b, err, sizeof err) == 0, "%s", err);
    p.n_threads = 7;   /* more threads than rows of some tensors */
    CHECKF(synth_write(&p, c, err, sizeof err) == 0, "%s", err);
    size_t na = 0, nb = 0, nc = 0;
    void *ba = read_file(a, &na), *bb = read_file(b, &nb), *bc = read_file(c, &nc);
    CHECK(ba && bb && bc && na > 100000);
    CHECKF(na == nb && nb == nc && !memcmp(ba, bb, na) && !memcmp(ba, bc, na), "-t 1, 2, 7 give different files");
    int64_t want = synth_data_bytes(&p, err, sizeof err);
    CHECKF(want > 0 && (size_t)want < na && na - (size_t)want < 64 * 1024, "data %lld of file %zu", (long long)want, na);
    free(ba); free(bb); free(bc);
    /* another seed changes the weights */
    p.seed = 2;
    CHECKF(synth_write(&p, b, err, sizeof err) == 0, "%s", err);
    size_t n2;
    uint64_t h1 = file_hash(a, &na), h2 = file_hash(b, &n2);
    CHECK(na == n2 && h1 != h2);
    /* golden: the same bytes on any machine. Formats whose generation is the library's own
     * stable reference (F32, Q8_0, Q4_0, drawn IQ3_XXS/IQ2_XXS blocks) */
    synth_params g;
    small_moe(&g);
    g.type_output = TYPE_Q8_0;
    CHECKF(synth_write(&g, c, err, sizeof err) == 0, "%s", err);
    uint64_t hg = file_hash(c, &nc);
    fprintf(stderr, "golden file hash %016llx (%zu bytes)\n", (unsigned long long)hg, nc);
    /* This hash was produced by the generator itself: it is a change detector (any change of
     * the bytes must be deliberate), not evidence that the bytes are right. That evidence is
     * test_reader_layout: an independent reader (python gguf) reads every tensor of this same
     * file back with the names, shapes and types asked for. */
    CHECKF(hg == 0xc8bc820c8f5d2b8dull, "synth bytes changed: %016llx (a change of the generator must be deliberate)",
           (unsigned long long)hg);
    unlink(a); unlink(b); unlink(c);
}

static void test_python_reader(void) {
    if (system("python3 -c 'import gguf, numpy' >/dev/null 2>&1") != 0) {
        SKIP("python-gguf", "GGUFReader check: python3 with gguf and numpy not found");
        return;
    }
    /* (Q2_0 is strata's own format, id 42: other readers refuse it by design) */
    static const int expert_types[] = { TYPE_IQ3_XXS, TYPE_IQ2_XXS, TYPE_IQ1_M, TYPE_IQ4_XS, TYPE_IQ2_S, TYPE_Q2_K, TYPE_Q3_K };
    for (size_t i = 0; i < sizeof expert_types / sizeof expert_types[0]; i++) {
        if (!quant_traits_get(expert_types[i])) continue;
        synth_params p;
        small_moe(&p);
        p.type_experts = expert_types[i];
        p.n_layers = 1;
        char err[512];
        const char *path = tmp_path("py.gguf");
        CHECKF(synth_write(&p, path, err, sizeof err) == 0, "%s", err);
        /* every tensor: shape, and the std of its dequantized values (0.02 for matrices, norms 1) */
        char cmd[4096];
        snprintf(cmd, sizeof cmd,
                 "python3 -c \"\n"
                 "import numpy as np\n"
                 "from gguf import GGUFReader\n"
                 "from gguf.quants import dequantize\n"
                 "r = GGUFReader('%s')\n"
                 "f = r.fields\n"
                 "print('arch', bytes(f['general.architecture'].parts[-1]).decode())\n"
                 "print('tokens', len(f['tokenizer.ggml.tokens'].data))\n"
                 "print('experts', int(f['qwen3moe.expert_count'].parts[-1][0]))\n"
                 "bad = []\n"
                 "for t in r.tensors:\n"
                 "    v = dequantize(t.data, t.tensor_type).astype(np.float64).ravel()\n"
                 "    if 'norm' in t.name:\n"
                 "        ok = np.all(v == 1.0)\n"
                 "    else:\n"
                 "        ok = 0.014 < v.std() < 0.026 and abs(v.mean()) < 0.004\n"
                 "    if not ok: bad.append('%%s %%s std %%.4f mean %%.4f' %% (t.name, t.tensor_type.name, v.std(), v.mean()))\n"
                 "print('tensors', len(r.tensors))\n"
                 "print('shape_down', list(int(x) for x in r.tensors[[t.name for t in r.tensors].index('blk.0.ffn_down_exps.weight')].shape))\n"
                 "print('bad', len(bad), bad[:3])\n"
                 "\" 2>&1", path);
        FILE *pp = popen(cmd, "r");
        char out[8192] = "";
        size_t got = pp ? fread(out, 1, sizeof out - 1, pp) : 0;
        out[got] = 0;
        if (pp) pclose(pp);
        const char *type = quant_type_name(expert_types[i]);
        CHECKF(strstr(out, "arch qwen3moe\n") != NULL, "%s: %s", type, out);
        CHECKF(strstr(out, "tokens 320\n") != NULL, "%s: %s", type, out);
        CHECKF(strstr(out, "experts 8\n") != NULL, "%s: %s", type, out);
        CHECKF(strstr(out, "tensors 15\n") != NULL, "%s: %s", type, out);
        CHECKF(strstr(out, "shape_down [256, 256, 8]") != NULL, "%s: %s", type, out);
        CHECKF(strstr(out, "bad 0 []") != NULL, "%s: weights out of range: %s", type, out);
        unlink(path);
    }
}

/* ---- an independent reader: every tensor with the name, shape and type asked for ---------
 * The expected list is written here from the GGUF layout of llama / qwen3moe files (names,
 * ne order: the row length first) and the ggml type ids as numbers, not from synth.c's tables.
 * python gguf's GGUFReader lists what the file holds; gguf's own block sizes check each
 * tensor's byte count and its dequantizer reads every tensor's data (norms must be 1). */
typedef struct { const char *name; int type; int64_t ne[3]; } want_tensor;

static int expected_layout(int moe, int L, int E, int H, int KVH, int HD, int F, int X, int FX, int V,
                           int t_embd, int t_attn, int t_ffn, int t_exp, int t_router, int t_out,
                           want_tensor *w, char (*names)[64]) {
    int n = 0;
#define ADD(nm_fmt, l, ty, a, b, c) do { snprintf(names[n], 64, nm_fmt, l); w[n].name = names[n]; w[n].type = ty; \
        w[n].ne[0] = a; w[n].ne[1] = b; w[n].ne[2] = c; n++; } while (0)
    ADD("token_embd.weight%.0d", 0, t_embd, E, V, 0);
    ADD("output_norm.weight%.0d", 0, 0, E, 0, 0);
    ADD("output.weight%.0d", 0, t_out, E, V, 0);
    for (int l = 0; l < L; l++) {
        ADD("blk.%d.attn_norm.weight", l, 0, E, 0, 0);
        ADD("blk.%d.ffn_norm.weight", l, 0, E, 0, 0);
        ADD("blk.%d.attn_q.weight", l, t_attn, E, H * HD, 0);
        ADD("blk.%d.attn_k.weight", l, t_attn, E, KVH * HD, 0);
        ADD("blk.%d.attn_v.weight", l, t_attn, E, KVH * HD, 0);
        ADD("blk.%d.attn_output.weight", l, t_attn, H * HD, E, 0);
        if (moe) {
            ADD("blk.%d.attn_q_norm.weight", l, 0, HD, 0, 0);
            ADD("blk.%d.attn_k_norm.weight", l, 0, HD, 0, 0);
            ADD("blk.%d.ffn_gate_inp.weight", l, t_router, E, X, 0);
            ADD("blk.%d.ffn_gate_exps.weight", l, t_exp, E, FX, X);
            ADD("blk.%d.ffn_up_exps.weight", l, t_exp, E, FX, X);
            ADD("blk.%d.ffn_down_exps.weight", l, t_exp, FX, E, X);
        } else {
            ADD("blk.%d.ffn_gate.weight", l, t_ffn, E, F, 0);
            ADD("blk.%d.ffn_up.weight", l, t_ffn, E, F, 0);
            ADD("blk.%d.ffn_down.weight", l, t_ffn, F, E, 0);
        }
    }
#undef ADD
    return n;
}

static void check_with_reader(const char *what, const synth_params *p, const want_tensor *w, int n) {
    char err[512];
    const char *path = tmp_path("layout.gguf");
    CHECKF(synth_write(p, path, err, sizeof err) == 0, "%s: %s", what, err);
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "python3 -c \"\n"
             "import numpy as np\n"
             "from gguf import GGUFReader\n"
             "from gguf.constants import GGML_QUANT_SIZES\n"
             "from gguf.quants import dequantize\n"
             "r = GGUFReader('%s')\n"
             "for t in r.tensors:\n"
             "    bs, ts = GGML_QUANT_SIZES[t.tensor_type]\n"
             "    v = dequantize(t.data, t.tensor_type)\n"
             "    ok = int(t.n_bytes) == int(t.n_elements) // bs * ts and v.size == int(t.n_elements) and np.isfinite(v).all()\n"
             "    if 'norm' in t.name: ok = ok and bool(np.all(v == 1.0))\n"
             "    print('T %%s %%d %%s %%s' %% (t.name, int(t.tensor_type), ','.join(str(int(x)) for x in t.shape), 'ok' if ok else 'BAD'))\n"
             "print('count', len(r.tensors))\n"
             "\" 2>&1", path);
    FILE *pp = popen(cmd, "r");
    static char out[32768];
    size_t got = pp ? fread(out, 1, sizeof out - 1, pp) : 0;
    out[got] = 0;
    if (pp) pclose(pp);
    char want_count[32];
    snprintf(want_count, sizeof want_count, "count %d\n", n);
    CHECKF(strstr(out, want_count) != NULL, "%s: gguf reads another number of tensors than %d:\n%.2000s", what, n, out);
    for (int i = 0; i < n; i++) {   /* one check per tensor: name, type, shape, bytes, data */
        char line[256];
        int k = snprintf(line, sizeof line, "T %s %d %lld", w[i].name, w[i].type, (long long)w[i].ne[0]);
        for (int d = 1; d < 3 && w[i].ne[d]; d++) k += snprintf(line + k, sizeof line - (size_t)k, ",%lld", (long long)w[i].ne[d]);
        snprintf(line + k, sizeof line - (size_t)k, " ok\n");
        CHECKF(strstr(out, line) != NULL, "%s: gguf does not read \"%.*s\":\n%.3000s", what, k, line, out);
    }
    unlink(path);
}

static void test_reader_layout(void) {
    if (system("python3 -c 'import gguf, numpy' >/dev/null 2>&1") != 0) {
        SKIP("python-gguf", "layout check: python3 with gguf and numpy not found");
        return;
    }
    static want_tensor w[64];
    static char names[64][64];
    /* the golden file of test_determinism: qwen3moe, Q4_0 embeddings, Q8_0 attention and
     * output, IQ3_XXS experts, F32 router and norms (ggml ids 2, 8, 18, 0) */
    synth_params g;
    small_moe(&g);
    g.type_output = TYPE_Q8_0;
    int n = expected_layout(1, 2, 256, 4, 2, 64, 0, 8, 256, 320, 2, 8, -1, 18, 0, 8, w, names);
    check_with_reader("golden qwen3moe", &g, w, n);
    /* llama with a different type for every role: Q5_0 embeddings, Q4_K attention, Q6_K ffn,
     * Q4_1 output (ggml ids 6, 12, 14, 3) */
    synth_params p;
    synth_default_params(&p, ARCH_LLAMA);
    p.n_layers = 2; p.n_embd = 256; p.n_ff = 512; p.n_heads = 4; p.n_kv_heads = 2; p.head_dim = 64;
    p.n_vocab = 300; p.n_ctx = 64; p.tokenizer_path = "builtin";
    p.type_embd = TYPE_Q5_0; p.type_attn = TYPE_Q4_K; p.type_ffn = TYPE_Q6_K; p.type_output = TYPE_Q4_1;
    n = expected_layout(0, 2, 256, 4, 2, 64, 512, 0, 0, 300, 6, 12, 14, -1, -1, 3, w, names);
    check_with_reader("llama, a type per role", &p, w, n);
}

static strata_model *load(const char *path) {
    strata_model_params mp = strata_model_default_params();
    mp.path = path; mp.n_threads = 2; mp.device = STRATA_DEVICE_CPU;
    strata_model *m = NULL;
    char err[512];
    if (strata_model_load(&mp, &m, err, sizeof err)) { fprintf(stderr, "load: %s\n", err); return NULL; }
    return m;
}

/* strata loads and runs the three architectures; greedy output is not one token forever */
static void test_strata_loads(void) {
    for (int arch = 0; arch < 3; arch++) {
        synth_params p;
        if (arch == 1) small_moe(&p);
        else if (arch == 2) {   /* gemma3: layers 0-4 a window of 16, layer 5 global */
            synth_default_params(&p, ARCH_GEMMA3);
            p.n_layers = 6; p.n_embd = 128; p.n_ff = 256; p.n_heads = 2; p.n_kv_heads = 1; p.head_dim = 64;
            p.n_vocab = 400; p.n_ctx = 128; p.sliding_window = 16; p.tokenizer_path = "builtin";
        } else {
            synth_default_params(&p, ARCH_LLAMA);
            p.n_layers = 2; p.n_embd = 128; p.n_ff = 256; p.n_heads = 4; p.n_kv_heads = 2; p.head_dim = 32;
            p.n_vocab = 400; p.n_ctx = 128; p.tokenizer_path = "builtin";
        }
        char err[512];
        const char *path = tmp_path("load.gguf");
        CHECKF(synth_write(&p, path, err, sizeof err) == 0, "%s", err);
        strata_model *m = load(path);
        CHECK(m != NULL);
        if (!m) continue;
        strata_model_info info;
        strata_model_get_info(m, &info);
        CHECK_STR(info.arch, arch == 2 ? "gemma3" : arch ? "qwen3moe" : "llama");
        CHECK_EQ_INT(info.n_vocab, p.n_vocab);
        CHECK_EQ_INT(info.n_layers, p.n_layers);
        CHECK(strata_model_chat_template(m) != NULL);
        int32_t ids[16];
        int n = strata_tokenize(m, "hi <|im_start|>", 15, 0, 1, ids, 16);
        CHECK_EQ_INT(n, 4);   /* 'h' 'i' ' ' and the special token */
        if (n == 4) { CHECK_EQ_INT(ids[0], 'h'); CHECK_EQ_INT(ids[3], 257); }
        strata_session_params sp = strata_session_default_params();
        sp.n_ctx = 64;
        strata_session *s = strata_session_new(m, &sp, err, sizeof err);
        CHECK(s != NULL);
        if (s) {
            int32_t gen[24];
            int ng = 0;
            if (strata_session_eval(s, ids, 3) == 0)
                for (; ng < 24; ng++) {
                    gen[ng] = strata_session_sample(s);
                    if (strata_session_eval(s, &gen[ng], 1)) break;
                }
            CHECK_EQ_INT(ng, 24);
            int distinct = 0;
            for (int i = 0; i < ng; i++) {
                int seen = 0;
                for (int j = 0; j < i; j++) seen |= gen[j] == gen[i];
                distinct += !seen;
            }
            CHECKF(distinct >= 5, "%s: greedy output has %d distinct tokens in 24", info.arch, distinct);
            const float *lg = strata_session_logits(s);
            float lo = lg[0], hi = lg[0];
            for (int i = 0; i < p.n_vocab; i++) { if (lg[i] < lo) lo = lg[i]; if (lg[i] > hi) hi = lg[i]; }
            CHECKF(hi - lo > 0.5f && hi - lo < 100.0f, "%s: logit range %g", info.arch, hi - lo);
            strata_session_free(s);
        }
        if (arch == 2) {   /* the window reached the model: five layers keep a ring of 16 + 513 positions */
            sp.n_ctx = 1024;
            s = strata_session_new(m, &sp, err, sizeof err);
            size_t pp = 0, total = s ? strata_session_kv_bytes(s, &pp) : 0;
            CHECKF(pp == 6 * 2 * 128 && total == 2 * 128 * (size_t)(5 * (16 + 513) + 1024),
                   "gemma3 KV cache %zu bytes per position, %zu in all", pp, total);
            strata_session_free(s);
        }
        strata_model_free(m);
        unlink(path);
    }
}

/* --tokenizer: copied from the default model and padded to --vocab with UNUSED tokens */
static void test_tokenizer_copy(void) {
    if (!model_path || access(model_path, R_OK)) { SKIP("model", "tokenizer copy: no default model"); return; }
    synth_params p;
    small_moe(&p);
    p.n_layers = 1;
    p.tokenizer_path = model_path;
    char err[512];
    const char *path = tmp_path("tok.gguf");
    /* the vocabulary as is (every tokenizer.* key copied byte for byte) */
    p.n_vocab = 49152;
    CHECKF(synth_write(&p, path, err, sizeof err) == 0, "%s", err);
    strata_model *m0 = load(path);
    CHECK(m0 != NULL);
    if (m0) {
        int32_t ids[16];
        int n = strata_tokenize(m0, "Hello world", 11, 0, 0, ids, 16);
        CHECK(n == 2 && strata_n_vocab(m0) == 49152);
        strata_model_free(m0);
    }
    /* padded with UNUSED tokens */
    p.n_vocab = 49152 + 64;
    CHECKF(synth_write(&p, path, err, sizeof err) == 0, "%s", err);
    strata_model *m = load(path), *ref = NULL;
    strata_model_params mp = strata_model_default_params();
    mp.path = model_path; mp.vocab_only = 1;
    CHECK(strata_model_load(&mp, &ref, err, sizeof err) == 0);
    CHECK(m != NULL);
    if (m && ref) {
        const char *text = "Hello, world! 12345 <|im_start|>user\nWie geht's?";
        int32_t a[64], b[64];
        int na = strata_tokenize(m, text, strlen(text), 1, 1, a, 64), nb = strata_tokenize(ref, text, strlen(text), 1, 1, b, 64);
        CHECK(na > 5 && na == nb && !memcmp(a, b, sizeof(int32_t) * (size_t)na));
        CHECK_EQ_INT(strata_n_vocab(m), 49152 + 64);
        CHECK_EQ_INT(strata_token_eos(m), strata_token_eos(ref));
        CHECK(strata_model_chat_template(m) && strata_model_chat_template(ref) &&
              !strcmp(strata_model_chat_template(m), strata_model_chat_template(ref)));
        size_t len;
        const char *pad = strata_token_text(m, 49152 + 3, &len);
        CHECK(pad && len == strlen("<|synth_pad_49155|>") && !memcmp(pad, "<|synth_pad_49155|>", len));
    }
    strata_model_free(m);
    strata_model_free(ref);
    /* a vocabulary smaller than the tokenizer's is refused with a message */
    p.n_vocab = 1000;
    CHECK(synth_write(&p, path, err, sizeof err) != 0);
    CHECKF(strstr(err, "49152") && strstr(err, "--vocab"), "%s", err);
    unlink(path);
}

static void test_errors(void) {
    synth_params p;
    small_moe(&p);
    char err[512] = "";
    p.n_embd = 192;   /* not a multiple of Q4_K's 256 */
    p.type_attn = TYPE_Q4_K;
    CHECK(synth_write(&p, tmp_path("e.gguf"), err, sizeof err) != 0);
    CHECKF(strstr(err, "blk.0.attn_q.weight") && strstr(err, "--type-attn") && strstr(err, "256"), "%s", err);
    small_moe(&p);
    p.n_experts_used = 9;
    CHECK(synth_write(&p, tmp_path("e.gguf"), err, sizeof err) != 0);
    CHECKF(strstr(err, "--experts-used") != NULL, "%s", err);
    small_moe(&p);
    p.n_vocab = 100;   /* built-in tokenizer needs 259 */
    CHECK(synth_write(&p, tmp_path("e.gguf"), err, sizeof err) != 0);
    CHECKF(strstr(err, "259") != NULL, "%s", err);
    small_moe(&p);
    p.tokenizer_path = "/nonexistent/model.gguf";
    CHECK(synth_write(&p, tmp_path("e.gguf"), err, sizeof err) != 0);
    CHECKF(strstr(err, "/nonexistent/model.gguf") != NULL, "%s", err);
    CHECK(access(tmp_path("e.gguf"), F_OK) != 0);   /* nothing written on failure */
}

/* the CLI (`strata synth`, when the binary is built: tests/run.sh passes BUILD) writes the
 * same bytes as the library call with the same parameters, for any -t */
static void test_cli(void) {
    const char *build = getenv("BUILD");
    char bin[512];
    snprintf(bin, sizeof bin, "%s/strata", build && *build ? build : "build");
    if (access(bin, X_OK)) { SKIP("cli", "CLI check: %s not built", bin); return; }
    const char *shape = "--arch qwen3moe --layers 2 --dim 256 --heads 4 --kv-heads 2 --head-dim 64 --ffn 512 "
                        "--experts 8 --experts-used 2 --expert-ffn 256 --vocab 320 --ctx 128 --type-attn Q8_0 "
                        "--type-experts IQ3_XXS --type-output Q6_K --type-embd Q4_0 --tokenizer builtin";
    char cmd[2048];
    const char *a = tmp_path("cli1.gguf"), *b = tmp_path("cli2.gguf"), *c = tmp_path("lib.gguf");
    snprintf(cmd, sizeof cmd, "%s synth %s %s -t 1 2>/dev/null && %s synth %s %s -t 3 2>/dev/null", bin, a, shape, bin, b, shape);
    CHECK(system(cmd) == 0);
    synth_params p;
    small_moe(&p);
    char err[512];
    CHECKF(synth_write(&p, c, err, sizeof err) == 0, "%s", err);
    size_t na = 0, nb = 0, nc = 0;
    uint64_t ha = file_hash(a, &na), hb = file_hash(b, &nb), hc = file_hash(c, &nc);
    CHECKF(na > 0 && na == nb && nb == nc && ha == hb && hb == hc, "CLI -t 1 %016llx, -t 3 %016llx, library %016llx",
           (unsigned long long)ha, (unsigned long long)hb, (unsigned long long)hc);
    /* bad options fail with a message, never a crash */
    snprintf(cmd, sizeof cmd, "%s synth %s --arch qwen3moe --dim 192 --type-attn Q4_K 2>&1", bin, a);
    FILE *pp = popen(cmd, "r");
    char out[1024] = "";
    size_t got = pp ? fread(out, 1, sizeof out - 1, pp) : 0;
    out[got] = 0;
    int rc = pp ? pclose(pp) : -1;
    CHECKF(rc != 0 && strstr(out, "not a multiple") && strstr(out, "256"), "rc %d: %s", rc, out);
    snprintf(cmd, sizeof cmd, "%s synth %s --type-experts Q9_Z 2>/dev/null", bin, a);
    CHECK(system(cmd) != 0);
    unlink(a); unlink(b); unlink(c);
}

int main(void) {
    model_path = getenv("STRATA_MODEL");
    snprintf(tmpdir_path, sizeof tmpdir_path, "/tmp/strata-test-synth-%d", (int)getpid());
    char cmd[300];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", tmpdir_path);
    if (system(cmd)) SKIP_ALL("tmpdir", "cannot create %s", tmpdir_path);
    RUN(test_gauss);
    RUN(test_determinism);
    RUN(test_python_reader);
    RUN(test_reader_layout);
    RUN(test_strata_loads);
    RUN(test_tokenizer_copy);
    RUN(test_errors);
    RUN(test_cli);
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir_path);
    if (system(cmd)) fprintf(stderr, "could not remove %s\n", tmpdir_path);
    TEST_DONE();
}
