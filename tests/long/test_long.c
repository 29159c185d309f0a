/* Long contexts end to end on the CPU (issue 19 item 2): `make test-long`, not part of `make
 * test` (each model evaluates its long prompt twice: minutes of CPU time).
 *
 * For SmolLM2 at 8k positions (its training context) and Gemma 3 270m at 12k (five of its six
 * layers attend to a sliding window of 512 positions, kept in a ring):
 *   - SmolLM2: a pass key planted early in a long haystack (~6400 positions before the
 *     question) is retrieved: greedy decoding after "The pass key is" gives its digits. Gemma 3
 *     270m does not retrieve one ~10000 positions back (measured 2026-12-01: " the pass key.
 *     The pass key is the pass"), so for it the greedy text is printed, not asserted;
 *   - the logits at the end of the prompt are equal bit for bit whether the prompt is evaluated
 *     in one call, or its last 500 tokens again in another session (the rows before copied from
 *     the first: strata_session_copy_prefix) as a call of 460 tokens and 40 decode steps (the
 *     decode steps at depth take the attention grouped by KV head, the one call the
 *     per-(token, head) tasks);
 *   - the KV cache's size is what the layout says: 2 x layers x kv_dim x 2 bytes per position,
 *     the sliding-window layers a ring of window + FWD_MAX_T + 1 positions.
 * STRATA_MODEL and STRATA_GEMMA_MODEL name the models (make test-long sets them); an argument
 * (smollm2 or gemma3) runs one of the two. */
#include "test.h"
#include <stdint.h>
#include <unistd.h>
#include <time.h>
#include "strata.h"
#include "model/backend.h"

static const char *pre = "There is an important info hidden inside a lot of irrelevant text. Find it and memorize it. "
                         "I will quiz you about the important information there.\n";
static const char *fill = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again. ";
static const char *question = "\nWhat is the pass key? The pass key is";

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* The haystack of n_fill filler sentences with the key after key_at of them. */
static char *haystack(int n_fill, int key_at, const char *key) {
    size_t cap = strlen(pre) + (size_t)n_fill * strlen(fill) + 256;
    char *s = malloc(cap), *p = s;
    if (!s) return NULL;
    p += sprintf(p, "%s", pre);
    for (int i = 0; i < n_fill; i++) {
        if (i == key_at) p += sprintf(p, "The pass key is %s. Remember it. %s is the pass key. ", key, key);
        p += sprintf(p, "%s", fill);
    }
    sprintf(p, "%s", question);
    return s;
}

static strata_session *session(strata_model *m, int n_ctx) {
    strata_session_params sp = strata_session_default_params();   /* greedy */
    sp.n_ctx = n_ctx;
    char err[256];
    strata_session *s = strata_session_new(m, &sp, err, sizeof err);
    if (!s) fprintf(stderr, "session: %s\n", err);
    return s;
}

static void long_context(const char *path, int n_ctx, int n_fill, int key_at, const char *key, int assert_key) {
    strata_model_params mp = strata_model_default_params();
    mp.path = path;
    mp.device = STRATA_DEVICE_CPU;
    strata_model *m = NULL;
    char err[256];
    if (strata_model_load(&mp, &m, err, sizeof err)) { REQUIRE(0, "%s: %s", path, err); return; }
    strata_model_info info;
    strata_model_get_info(m, &info);
    const int V = strata_n_vocab(m);
    char *text = haystack(n_fill, key_at, key);
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)n_ctx);
    REQUIRE(text && ids, "allocation");
    int n = text && ids ? strata_tokenize(m, text, strlen(text), 1, 0, ids, n_ctx) : 0;
    /* the prompt fills most of the context and the key sits thousands of positions back */
    REQUIRE(n > n_ctx * 9 / 10 && n < n_ctx - 16, "%s: %d prompt tokens for a context of %d", path, n, n_ctx);
    strata_session *a = session(m, n_ctx), *b = session(m, n_ctx);
    REQUIRE(a && b, "sessions");
    if (n > n_ctx * 9 / 10 && n < n_ctx - 16 && a && b) {
        /* the KV cache's size */
        size_t pp = 0, total = strata_session_kv_bytes(a, &pp);
        const size_t row = (size_t)info.n_kv_heads * info.head_dim * 2;
        int rings = 0;
        size_t want = 0;
        for (int l = 0; l < info.n_layers; l++) {
            /* Gemma 3: every sixth layer global, the others a ring of the window (512 in this
             * file) + FWD_MAX_T + 1 positions */
            int ring = !strcmp(info.arch, "gemma3") && (l + 1) % 6 != 0;
            rings += ring;
            want += 2 * row * (size_t)(ring ? 512 + FWD_MAX_T + 1 : n_ctx);
        }
        CHECKF(pp == 2 * (size_t)info.n_layers * row && total == want,
               "%s: KV cache %zu bytes per position, %zu in all; the layout says %zu and %zu (%d ring layers)", path, pp,
               total, 2 * (size_t)info.n_layers * row, want, rings);
        fprintf(stderr, "%s: KV cache %zu bytes per position, %.1f MiB at %d positions (%d of %d layers a ring)\n", path,
                pp, total / 1048576.0, n_ctx, rings, info.n_layers);

        /* one call, then the last 500 tokens again as a call of 460 and 40 decode steps (500:
         * within what a sliding-window ring still holds after the prompt) */
        double t0 = now();
        int ok = strata_session_eval(a, ids, n) == 0;
        double t1 = now();
        float *la = malloc(sizeof(float) * (size_t)V);
        REQUIRE(ok && la, "%s: the one-call evaluation of %d tokens", path, n);
        if (ok && la) memcpy(la, strata_session_logits(a), sizeof(float) * (size_t)V);
        int steps = 0;
        ok = ok && strata_session_copy_prefix(b, a, n - 500) == 0 && strata_session_eval(b, ids + n - 500, 460) == 0;
        for (int p = n - 40; ok && p < n; p++, steps++) ok = strata_session_eval(b, ids + p, 1) == 0;
        double t2 = now();
        CHECKF(ok && la && steps == 40 && !memcmp(la, strata_session_logits(b), sizeof(float) * (size_t)V),
               "%s: the logits after %d tokens differ between one call and the last 500 as 460 + 40 decode steps", path, n);
        fprintf(stderr, "%s: %d tokens in one call %.1f s; the last 500 as 460 + 40 steps %.1f s (wall)\n", path, n,
                t1 - t0, t2 - t1);

        /* greedy decoding after the question: the key's digits */
        char out[256] = "";
        int len = 0;
        strata_detok dt;
        strata_detok_init(&dt);
        for (int i = 0; ok && i < 10; i++) {
            int32_t id = strata_session_sample(a);
            if (id == strata_token_eos(m)) break;
            int k = strata_detok_push(m, &dt, id, out + len, (int)sizeof out - 1 - len);
            if (k > 0) len += k;
            out[len] = 0;
            ok = strata_session_eval(a, &id, 1) == 0;
        }
        fprintf(stderr, "%s: after %d tokens (the key at token ~%d): \"%s\"\n", path, n,
                (int)((double)key_at / n_fill * n), out);
        if (assert_key)
            CHECKF(strstr(out, key) != NULL, "%s: the pass key %s planted ~%d tokens before the question: greedy gives \"%s\"",
                   path, key, (int)((double)(n_fill - key_at) / n_fill * n), out);
        else
            fprintf(stderr, "%s: the pass key %s (not asserted) %s\n", path, key, strstr(out, key) ? "retrieved" : "not retrieved");
        free(la);
    }
    strata_session_free(a);
    strata_session_free(b);
    free(ids);
    free(text);
    strata_model_free(m);
}

static void test_smollm2_8k(const char *path) { long_context(path, 8192, 325, 60, "68419", 1); }
static void test_gemma3_12k(const char *path) { long_context(path, 12288, 500, 80, "40273", 0); }

int main(int argc, char **argv) {
    const char *smol = getenv("STRATA_MODEL"), *gemma = getenv("STRATA_GEMMA_MODEL"), *only = argc > 1 ? argv[1] : "";
    if (*only && strcmp(only, "smollm2") && strcmp(only, "gemma3")) {
        fprintf(stderr, "usage: test_long [smollm2|gemma3]\n");
        return 2;
    }
    if (strcmp(only, "gemma3")) {
        if (smol && !access(smol, R_OK)) RUN_ARG(test_smollm2_8k, smol);
        else SKIP("model", "STRATA_MODEL not set or unreadable");
    }
    if (strcmp(only, "smollm2")) {
        if (gemma && !access(gemma, R_OK)) RUN_ARG(test_gemma3_12k, gemma);
        else SKIP("gemma-model", "STRATA_GEMMA_MODEL not set or unreadable");
    }
    TEST_DONE();
}
