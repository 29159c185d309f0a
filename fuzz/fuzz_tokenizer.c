/* libFuzzer target: tokenizer_encode on arbitrary bytes with real vocabularies.
 *
 * The vocabularies are loaded once in LLVMFuzzerInitialize: SmolLM2 (byte-level BPE, the
 * default model, path from STRATA_MODEL or ~/.cache/strata/...) and, when present, Gemma 3
 * (SentencePiece-style BPE, STRATA_GEMMA_MODEL). Like tests/, a fuzzer is a program of its
 * own and may read the environment; the library never does outside src/core/env.c.
 *
 * Input: byte 0 chooses the vocabulary (bit 0), add_bos (bit 1) and parse_special (bit 2);
 * the rest is the text. Oracles:
 *   - every id is inside the vocabulary;
 *   - byte-level BPE is lossless: decode(encode(text)) == text for ANY bytes (BOS aside),
 *     except bytes the vocabulary has no token for, which are dropped (has_byte);
 *   - SentencePiece: the same for valid UTF-8 without U+2581 (the vocabulary spells a space
 *     as U+2581, so a literal U+2581 in the text encodes like a space and decodes as one);
 *   - streaming decode (detok_push/flush) emits valid UTF-8, equal to the text when the
 *     text is valid UTF-8 (and the tokenizer lossless on it). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"
#include "core/util.h"

#define FUZZ_ASSERT(c) do { if (!(c)) { fprintf(stderr, "fuzz_tokenizer: assertion failed: %s (line %d)\n", #c, __LINE__); abort(); } } while (0)

static tokenizer *toks[2];
static int n_toks;
/* has_byte[v][b]: byte b alone encodes to something. SmolLM2's vocabulary lacks 21 of the
 * 256 byte-level tokens (0x04 0x06 0x13 0x14 0x16 0x1d 0xc0 0xc1 0xf1 0xf2 0xf5..0xff):
 * like the reference (Hugging Face tokenizers, no unk token) such a byte is dropped. */
static unsigned char has_byte[2][256];

static tokenizer *load(const char *path) {
    char err[512];
    gguf_file *f = NULL;
    tokenizer *t = NULL;
    if (gguf_open(path, &f, err, sizeof err) || tokenizer_load_gguf(f, &t, err, sizeof err)) {
        fprintf(stderr, "fuzz_tokenizer: %s\n", err);
        gguf_close(f);
        return NULL;
    }
    gguf_close(f);   /* the tokenizer copies what it needs */
    return t;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc; (void)argv;
    char def[1024];
    const char *smol = getenv("STRATA_MODEL");
    if (!smol || !*smol) {
        const char *home = getenv("HOME");
        snprintf(def, sizeof def, "%s/.cache/strata/SmolLM2-135M-Instruct.Q4_1.gguf", home ? home : "");
        smol = def;
    }
    toks[0] = load(smol);
    if (!toks[0]) { fprintf(stderr, "fuzz_tokenizer: set STRATA_MODEL to the SmolLM2 GGUF (make model)\n"); exit(1); }
    n_toks = 1;
    const char *gemma = getenv("STRATA_GEMMA_MODEL");
    if (gemma && *gemma && (toks[1] = load(gemma)) != NULL) n_toks = 2;
    for (int v = 0; v < n_toks; v++)
        for (int b = 0; b < 256; b++) {
            char c = (char)b;
            has_byte[v][b] = tokenizer_encode(toks[v], &c, 1, 0, 0, NULL, 0) > 0;
        }
    fprintf(stderr, "fuzz_tokenizer: %d vocabularies (%s%s)\n", n_toks, tokenizer_pre_name(toks[0]),
            n_toks > 1 ? ", gemma" : "");
    return 0;
}

/* Valid UTF-8 as detok understands it: shortest forms, no surrogates, <= U+10FFFF. */
static int utf8_valid(const uint8_t *s, size_t n) {
    for (size_t i = 0; i < n;) {
        uint8_t c = s[i];
        size_t k; uint32_t cp;
        if (c < 0x80) { i++; continue; }
        else if ((c & 0xe0) == 0xc0) { k = 2; cp = c & 0x1f; }
        else if ((c & 0xf0) == 0xe0) { k = 3; cp = c & 0x0f; }
        else if ((c & 0xf8) == 0xf0) { k = 4; cp = c & 0x07; }
        else return 0;
        if (i + k > n) return 0;
        for (size_t j = 1; j < k; j++) {
            if ((s[i + j] & 0xc0) != 0x80) return 0;
            cp = cp << 6 | (s[i + j] & 0x3f);
        }
        if ((k == 2 && cp < 0x80) || (k == 3 && cp < 0x800) || (k == 4 && cp < 0x10000)) return 0;
        if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
        i += k;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    const int which = (data[0] & 1) % n_toks, add_bos = (data[0] >> 1) & 1, special = (data[0] >> 2) & 1;
    const tokenizer *t = toks[which];
    const char *text = (const char *)data + 1;
    const size_t n = size - 1;
    const int nv = tokenizer_n_vocab(t);

    int cap = (int)n + 2;
    int32_t *ids = malloc((size_t)cap * sizeof *ids);
    int k = tokenizer_encode(t, text, n, add_bos, special, ids, cap);
    FUZZ_ASSERT(k >= 0 && k <= cap);   /* at most one token per byte (+ BOS) */
    for (int i = 0; i < k; i++) FUZZ_ASSERT(ids[i] >= 0 && ids[i] < nv);
    const int skip = add_bos && tokenizer_bos(t) >= 0;   /* encode prepends BOS when asked and known */
    if (skip) FUZZ_ASSERT(k > 0 && ids[0] == tokenizer_bos(t));

    /* decode */
    int dn = tokenizer_decode(t, ids + skip, k - skip, NULL, 0);
    FUZZ_ASSERT(dn >= 0);
    char *dec = malloc((size_t)dn + 1);
    FUZZ_ASSERT(tokenizer_decode(t, ids + skip, k - skip, dec, dn + 1) == dn);
    /* the text without the bytes the vocabulary cannot represent */
    char *want = malloc(n + 1);
    size_t wn = 0;
    for (size_t i = 0; i < n; i++)
        if (which != 0 || has_byte[which][(uint8_t)text[i]]) want[wn++] = text[i];
    const int valid = utf8_valid((const uint8_t *)want, wn);
    int lossless = 0;
    if (which == 0) lossless = 1;                     /* byte-level BPE: every byte has a token */
    else                                              /* SentencePiece: byte fallback for the rest, */
        lossless = valid && !memmem(want, wn, "\xE2\x96\x81", 3);   /* but U+2581 IS its space */
    if (lossless && !(dn == (int)wn && !memcmp(dec, want, wn))) {
        fprintf(stderr, "fuzz_tokenizer: decode(encode(text)) != text (vocabulary %d, %zu bytes -> %d ids -> %d bytes)\n",
                which, n, k, dn);
        abort();
    }

    /* streaming decode */
    size_t cap_out = 3 * (size_t)dn + 64, o = 0;
    char *stream = malloc(cap_out);
    detok_state d; detok_init(&d);
    for (int i = skip; i < k; i++) {
        int m = detok_push(t, &d, ids[i], stream + o, (int)(cap_out - o));
        FUZZ_ASSERT(m >= 0);
        o += (size_t)m;
    }
    int m = detok_flush(&d, stream + o, (int)(cap_out - o));
    FUZZ_ASSERT(m >= 0);
    o += (size_t)m;
    FUZZ_ASSERT(utf8_valid((const uint8_t *)stream, o));
    if (lossless && valid) FUZZ_ASSERT(o == wn && !memcmp(stream, want, wn));
    free(want);
    free(stream);
    free(dec);
    free(ids);
    return 0;
}
