/* libFuzzer target: GGUF bytes -> gguf_open_memory -> tokenizer_load_gguf + model_bind,
 * the load path of strata_model_load without the file system and threads.
 *
 * Oracles: rejections carry a message that names the file; a bound model's weights lie
 * inside the buffer with the shape the hyperparameters ask for; a loaded tokenizer encodes a
 * fixed text and the input's own bytes into ids inside the vocabulary, and decodes them
 * again without reading outside its tables; loading it again with an allocation failing is a
 * clean "out of memory". */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gguf/gguf.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "core/util.h"

#define FUZZ_ASSERT(c) do { if (!(c)) { fprintf(stderr, "fuzz_model_bind: assertion failed: %s (line %d)\n", #c, __LINE__); abort(); } } while (0)

static void check_weight(const gguf_file *f, const weight *w) {
    if (!w->data) return;
    FUZZ_ASSERT((const uint8_t *)w->data >= f->base);
    FUZZ_ASSERT((const uint8_t *)w->data + w->nbytes <= f->base + f->size);
    uint64_t ne, nb;
    int64_t dims[4] = { w->n_in, w->n_out, w->n_expert, 1 };
    FUZZ_ASSERT(gguf_tensor_nbytes(w->type, 3, dims, &ne, &nb) == 0 && nb == w->nbytes);
}

static void exercise_tokenizer(const tokenizer *t, const uint8_t *data, size_t size) {
    static const char text[] = "Hello world! <|im_start|>user\n123 caf\xc3\xa9 \xf0\x9f\x98\x80\xff";
    int32_t ids[512];
    char out[2048];
    const int nv = tokenizer_n_vocab(t);
    for (int pass = 0; pass < 2; pass++) {
        const char *s = pass ? (const char *)data : text;
        size_t n = pass ? (size < 256 ? size : 256) : sizeof text - 1;
        int k = tokenizer_encode(t, s, n, 1, pass, ids, 512);
        FUZZ_ASSERT(k >= -1);
        if (k < 0) continue;
        if (k > 512) k = 512;
        for (int i = 0; i < k; i++) FUZZ_ASSERT(ids[i] >= 0 && ids[i] < nv);
        (void)tokenizer_decode(t, ids, k, out, (int)sizeof out);
        detok_state d; detok_init(&d);
        for (int i = 0; i < k; i++) {
            int m = detok_max_out(t, ids[i]);
            FUZZ_ASSERT(m >= 0);
            char *buf = malloc((size_t)m + 1);
            FUZZ_ASSERT(detok_push(t, &d, ids[i], buf, m) >= 0);
            free(buf);
        }
        FUZZ_ASSERT(detok_flush(&d, out, (int)sizeof out) >= 0);
    }
    (void)tokenizer_is_eog(t, tokenizer_eos(t));
    FUZZ_ASSERT(tokenizer_token_bytes(t, nv, NULL) == NULL && tokenizer_token_bytes(t, -1, NULL) == NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char err[512] = "";
    gguf_file *f = NULL;
    if (gguf_open_memory(data, size, "fuzz.gguf", &f, err, sizeof err) != 0) return 0;

    tokenizer *t = NULL;
    err[0] = 0;
    if (tokenizer_load_gguf(f, &t, err, sizeof err) == 0) {
        FUZZ_ASSERT(t != NULL && tokenizer_n_vocab(t) > 0);
        exercise_tokenizer(t, data, size);
        tokenizer_free(t);
        /* again with the k-th allocation failing (k from the input): clean error, no leak */
        st_alloc_fail_after(1 + (long)(size % 23));
        t = NULL;
        int r = tokenizer_load_gguf(f, &t, err, sizeof err);
        int injected = st_alloc_fail_pending() == 0;
        st_alloc_fail_after(0);
        if (r == 0) { FUZZ_ASSERT(!injected); tokenizer_free(t); }
        else FUZZ_ASSERT(injected && t == NULL && strstr(err, "out of memory"));
    } else {
        FUZZ_ASSERT(t == NULL && !strncmp(err, "fuzz.gguf: ", 11));
    }

    hparams hp; model_weights w;
    err[0] = 0;
    if (model_bind(f, &hp, &w, err, sizeof err) == 0) {
        FUZZ_ASSERT(hp.n_layers >= 1 && hp.n_embd >= 1 && hp.n_vocab >= 1 && w.layers != NULL);
        FUZZ_ASSERT(hp.n_heads % hp.n_kv_heads == 0 && hp.head_dim % 2 == 0);
        check_weight(f, &w.tok_embd);
        check_weight(f, &w.output);
        check_weight(f, &w.output_norm);
        FUZZ_ASSERT(w.tok_embd.n_in == hp.n_embd && w.tok_embd.n_out == hp.n_vocab);
        for (int l = 0; l < hp.n_layers; l++) {
            const layer_weights *L = &w.layers[l];
            const weight *ws[] = { &L->attn_norm, &L->wq, &L->wk, &L->wv, &L->wo, &L->q_norm, &L->k_norm,
                                   &L->post_attn_norm, &L->post_ffn_norm, &L->ffn_norm, &L->gate, &L->up,
                                   &L->down, &L->gate_inp, &L->gate_exps, &L->up_exps, &L->down_exps };
            for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++) check_weight(f, ws[i]);
            FUZZ_ASSERT(L->wq.data && L->wq.n_out == (int64_t)hp.n_heads * hp.head_dim);
        }
        (void)model_weight_bytes_per_token(&hp, &w);
        model_weights_free(&w);
    } else {
        FUZZ_ASSERT(!strncmp(err, "fuzz.gguf: ", 11) && w.layers == NULL);
    }
    gguf_close(f);
    return 0;
}
