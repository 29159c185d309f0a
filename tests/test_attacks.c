/* Hostile model files (issue 9): every file of the regression corpus tests/data/gguf_attacks
 * (made by tools/gen_gguf_attacks.py, one per attack class) is rejected by strata_model_load
 * with its expected message; every proper prefix of a valid model is rejected as truncated;
 * a host allocation failure at every allocation site of model loading (k = 1, 2, ... until
 * the load succeeds) is a clean error. Under `make test-asan` LeakSanitizer checks that no
 * rejected load leaks. */
#include "test.h"
#include "strata.h"
#include "core/util.h"
#include "model/synth.h"
#include "quant/blocks.h"
#include "template/jinja.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <unistd.h>

#define ATTACK_DIR "tests/data/gguf_attacks"
static char err[1024];

static int load(const char *path, strata_model **m, int vocab_only) {
    strata_model_params p = strata_model_default_params();
    p.path = path;
    p.n_threads = 1;
    p.device = STRATA_DEVICE_CPU;
    p.vocab_only = vocab_only;
    err[0] = 0;
    *m = (strata_model *)err;   /* must be overwritten */
    return strata_model_load(&p, m, err, sizeof err);
}

static long file_size(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fclose(f);
    return n;
}

static unsigned char *read_file(const char *path, long *n) {
    *n = file_size(path);
    if (*n < 0) return NULL;
    unsigned char *b = malloc((size_t)*n + 1);
    FILE *f = fopen(path, "rb");
    if (!b || !f || fread(b, 1, (size_t)*n, f) != (size_t)*n) { free(b); if (f) fclose(f); return NULL; }
    fclose(f);
    return b;
}

/* The unmodified base models load and work: each attack file is then one change away
 * from a file that loads, so its rejection is the reader's doing, not a side effect. */
static void test_base_models_load(void) {
    static const char *bases[] = { ATTACK_DIR "/base.gguf", ATTACK_DIR "/base-spm.gguf" };
    for (int i = 0; i < 2; i++) {
        strata_model *m;
        int r = load(bases[i], &m, 0);
        CHECKF(r == 0, "%s", err);
        if (r) continue;
        strata_model_info info;
        strata_model_get_info(m, &info);
        CHECK_EQ_INT(info.n_layers, 1);
        CHECK_EQ_INT(info.n_embd, 8);
        CHECK_EQ_INT(info.n_vocab, 12);
        int32_t ids[16];
        /* base.gguf: merges a+b -> ab, ab+c -> abc; base-spm.gguf: "A" only by byte fallback */
        int n = strata_tokenize(m, i == 0 ? "abc" : "A", 1 + 2 * (i == 0), 0, 0, ids, 16);
        CHECK_EQ_INT(n, 1);
        CHECK_EQ_INT(ids[0], i == 0 ? 4 : 5);
        strata_session_params sp = strata_session_default_params();
        strata_session *s = strata_session_new(m, &sp, err, sizeof err);
        CHECKF(s != NULL, "%s", err);
        if (s) {
            CHECK(strata_session_eval(s, ids, 1) == 0);
            const float *lg = strata_session_logits(s);
            int finite = 1;
            for (int k = 0; k < 12; k++) finite &= isfinite(lg[k]) != 0;
            CHECK(finite);
            strata_session_free(s);
        }
        strata_model_free(m);
    }
}

/* expected.tsv: file \t substring. Every file in the directory must have a line. */
static void test_attack_corpus(void) {
    FILE *tsv = fopen(ATTACK_DIR "/expected.tsv", "r");
    CHECKF(tsv != NULL, "%s/expected.tsv: %s", ATTACK_DIR, strerror(errno));
    if (!tsv) return;
    char line[1024], listed[4096] = "";
    int n = 0, rejected = 0;
    size_t used = 0;
    while (fgets(line, sizeof line, tsv)) {
        if (line[0] == '#' || line[0] == '\n') continue;
        line[strcspn(line, "\n")] = 0;
        char *tab = strchr(line, '\t');
        CHECKF(tab != NULL, "expected.tsv: no tab in \"%s\"", line);
        if (!tab) continue;
        *tab = 0;
        const char *file = line, *want = tab + 1;
        char path[1100];
        snprintf(path, sizeof path, "%s/%s", ATTACK_DIR, file);
        used += (size_t)snprintf(listed + used, sizeof listed - used, "|%s|", file);
        n++;
        strata_model *m;
        int r = load(path, &m, 0);
        CHECKF(r == -1 && m == NULL, "%s: accepted", file);
        if (r == 0) { strata_model_free(m); continue; }
        rejected++;
        CHECKF(strstr(err, path) != NULL, "%s: message does not name the file: %s", file, err);
        CHECKF(strstr(err, want) != NULL, "%s: message \"%s\" lacks \"%s\"", file, err, want);
        /* vocab-only loading (strata tokenize) reads the same file: also no crash; header,
         * key and vocabulary attacks must still be refused */
        r = load(path, &m, 1);
        if (r == 0) strata_model_free(m);
        else CHECKF(m == NULL && err[0], "%s: vocab-only rejection without a message", file);
    }
    fclose(tsv);
    CHECKF(n >= 60, "only %d attack files", n);
    CHECK_EQ_INT(rejected, n);
    fprintf(stderr, "  %d attack files rejected with their expected messages\n", rejected);

    DIR *d = opendir(ATTACK_DIR);
    CHECK(d != NULL);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.' || !strcmp(e->d_name, "expected.tsv") || !strncmp(e->d_name, "base", 4)) continue;
        char key[300];
        snprintf(key, sizeof key, "|%s|", e->d_name);
        CHECKF(strstr(listed, key) != NULL, "%s has no line in expected.tsv", e->d_name);
    }
    if (d) closedir(d);
}

/* Every proper prefix of base.gguf (whose last tensor ends at the last byte) is refused as
 * truncated (prefix 0: empty file), through the file system like a partial download. */
static void test_every_prefix(void) {
    long n;
    unsigned char *b = read_file(ATTACK_DIR "/base.gguf", &n);
    CHECK(b != NULL && n > 1000);
    if (!b) return;
    char path[64];
    snprintf(path, sizeof path, "/tmp/strata-attack-prefix-%d.gguf", (int)getpid());
    int bad = 0;
    for (long k = 0; k < n; k++) {
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(b, 1, (size_t)k, f) != (size_t)k) { bad++; if (f) fclose(f); continue; }
        fclose(f);
        strata_model *m;
        int r = load(path, &m, 0);
        if (r == 0) { strata_model_free(m); bad++; continue; }
        const char *want = k == 0 ? "empty file" : "truncated: expected ";
        if (!strstr(err, want) || !strstr(err, path)) {
            if (bad < 5) fprintf(stderr, "prefix %ld: %s\n", k, err);
            bad++;
        }
    }
    unlink(path);
    CHECKF(bad == 0, "%d of %ld prefixes not refused as truncated", bad, n);
    free(b);
}

/* Host allocation failure at every allocation site of model loading: st_alloc_fail_after(k)
 * for k = 1, 2, ... until a load meets no injected failure (st_alloc_fail_pending() > 0
 * afterwards: the k-th allocation never came). Each injected failure must end in a clean
 * error (a message, no model) or be tolerated (an optional allocation such as
 * general.name): then the model must still work. LeakSanitizer (make test-asan) sees every
 * failed path. */
static void alloc_fail_every_site(const char *path, int vocab_only, const char *what) {
    int fails = 0, tolerated = 0, done = 0;
    for (long k = 1; k < 100000 && !done; k++) {
        strata_model *m;
        strata_model_params p = strata_model_default_params();
        p.path = path; p.n_threads = 1; p.device = STRATA_DEVICE_CPU; p.vocab_only = vocab_only;
        err[0] = 0;
        m = (strata_model *)err;
        st_alloc_fail_after(k);
        int r = strata_model_load(&p, &m, err, sizeof err);
        int injected = st_alloc_fail_pending() == 0;
        st_alloc_fail_after(0);
        if (r == 0) {
            /* the model works after the load (tolerated failure or none) */
            int32_t ids[8];
            CHECKF(strata_tokenize(m, "a", 1, 0, 0, ids, 8) >= 1, "%s: allocation %ld tolerated, model broken", what, k);
            strata_model_free(m);
            if (injected) tolerated++;
            else done = 1;
            continue;
        }
        CHECKF(injected, "%s: load failed without an injected failure: %s", what, err);
        fails++;
        CHECKF(m == NULL && err[0], "%s: allocation %ld: failed without a message (or left a model)", what, k);
        CHECKF(strstr(err, "out of memory") || strstr(err, "cannot start"), "%s: allocation %ld: %s", what, k, err);
    }
    CHECKF(done, "%s: never loaded", what);
    CHECKF(fails >= 5, "%s: only %d allocation sites", what, fails);
    fprintf(stderr, "  %s: %d allocation sites fail cleanly, %d tolerated\n", what, fails, tolerated);
}

static void test_alloc_failure(void) {
    alloc_fail_every_site(ATTACK_DIR "/base.gguf", 0, "base.gguf");
    alloc_fail_every_site(ATTACK_DIR "/base-spm.gguf", 0, "base-spm.gguf");
    alloc_fail_every_site(ATTACK_DIR "/base.gguf", 1, "base.gguf (vocab only)");

    /* a synthetic llama from the library's own generator: quantized weights, 2 layers, the
     * built-in byte-level vocabulary */
    synth_params sp;
    synth_default_params(&sp, ARCH_LLAMA);
    sp.n_layers = 2; sp.n_embd = 64; sp.n_ff = 128; sp.n_heads = 4; sp.n_kv_heads = 2; sp.head_dim = 16;
    sp.n_vocab = 320; sp.n_ctx = 128;
    sp.type_attn = TYPE_Q4_0; sp.type_ffn = TYPE_Q8_0; sp.type_output = TYPE_Q8_0; sp.type_embd = TYPE_Q8_0;
    sp.n_threads = 1;
    char path[64];
    snprintf(path, sizeof path, "/tmp/strata-attack-synth-%d.gguf", (int)getpid());
    int r = synth_write(&sp, path, err, sizeof err);
    CHECKF(r == 0, "synth_write: %s", err);
    if (r == 0) alloc_fail_every_site(path, 0, "synthetic llama (Q4_0/Q8_0, 2 layers)");
    unlink(path);
}

/* Hostile chat templates (a GGUF's tokenizer.chat_template is as untrusted as the rest of
 * the file): a macro that recurses through a deeply nested expression or block structure
 * overflowed the C stack (SIGSEGV) before the evaluator bounded its total depth
 * (JINJA_EVAL_DEPTH_MAX; found by fuzz/fuzz_template). Each must now be a clean error. */
static void test_hostile_templates(void) {
    static const char *files[] = {
        "tests/data/template_attacks/fuzz-crash-macro-negation-chain.jinja",
        "tests/data/template_attacks/recursive-macro-deep-expression.jinja",
        "tests/data/template_attacks/recursive-macro-deep-blocks.jinja",
        "tests/data/template_attacks/recursive-macro-long-filter-chain.jinja",
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        long n;
        unsigned char *src = read_file(files[i], &n);
        CHECKF(src != NULL, "%s unreadable", files[i]);
        if (!src) continue;
        src[n] = 0;   /* the fuzzer's input: template, then (after a NUL) the conversation */
        const char *msgs = "[{\"role\":\"user\",\"content\":\"x\"}]";
        char *out = jinja_render_chat_at((const char *)src, msgs, NULL, 1, "<s>", "</s>", NULL, 1700000000, err, sizeof err);
        CHECKF(out == NULL, "%s rendered", files[i]);
        CHECKF(strstr(err, "maximum recursion depth exceeded") != NULL, "%s: %s", files[i], err);
        st_free(out);
        free(src);
    }
}

int main(void) {
    if (access(ATTACK_DIR "/expected.tsv", R_OK))
        SKIP_ALL("attack-dir", "%s not found: run from the repository root (make test)", ATTACK_DIR);
    RUN(test_base_models_load);
    RUN(test_attack_corpus);
    RUN(test_every_prefix);
    RUN(test_alloc_failure);
    RUN(test_hostile_templates);
    TEST_DONE();
}
