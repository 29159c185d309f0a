/* Loading a tokenizer from GGUF metadata (validated), special-token splitting, encode
 * dispatch and accessors. See tokenizer.h for the pipeline. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <float.h>
#include "tokenizer/tok_internal.h"
#include "tokenizer/unicode.h"
#include "core/util.h"

/* ---- small helpers ------------------------------------------------------------------ */

void tok_ids_push(tok_ids *o, int32_t id) {
    if (o->oom) return;
    if (o->n == o->cap) {
        int cap = o->cap ? o->cap * 2 : 64;
        int32_t *v = st_realloc(o->v, (size_t)cap * sizeof *v);
        if (!v) { o->oom = 1; return; }
        o->v = v;
        o->cap = cap;
    }
    o->v[o->n++] = id;
}

uint32_t tok_hash_bytes(const void *p, size_t n) {
    uint64_t h = fnv1a64(p, n);
    return (uint32_t)(h ^ (h >> 32));
}

int32_t tok_hash_find(const tokenizer *t, const tok_hash *hs, const void *p, size_t n) {
    if (!hs->slots || n == 0) return -1;
    uint32_t h = tok_hash_bytes(p, n) & hs->mask;
    for (;;) {
        int32_t s = hs->slots[h];
        if (s == 0) return -1;
        int32_t id = s - 1;
        if (t->len[id] == n && !memcmp(t->blob + t->off[id], p, n)) return id;
        h = (h + 1) & hs->mask;
    }
}

int32_t tok_lookup(const tokenizer *t, const void *p, size_t n) { return tok_hash_find(t, &t->vocab, p, n); }

/* Insert id; an existing token with the same bytes is replaced (the later id wins, as in the
 * reference's vocabulary dictionary). The table has at least twice as many slots as ids. */
static void tok_hash_insert(tokenizer *t, tok_hash *hs, int32_t id) {
    uint32_t n = t->len[id];
    uint32_t h = tok_hash_bytes(t->blob + t->off[id], n) & hs->mask;
    for (;;) {
        int32_t s = hs->slots[h];
        if (s == 0) { hs->slots[h] = id + 1; return; }
        int32_t o = s - 1;
        if (t->len[o] == n && !memcmp(t->blob + t->off[o], t->blob + t->off[id], n)) {
            hs->slots[h] = id + 1;
            return;
        }
        h = (h + 1) & hs->mask;
    }
}

static uint32_t pow2_at_least(uint64_t n) {
    uint32_t c = 16;
    while (c < n) c <<= 1;
    return c;
}

/* GPT-2 byte-to-unicode alphabet: bytes 33..126, 161..172, 174..255 stand for themselves;
 * the other 68 bytes (controls, space, DEL, NBSP, soft hyphen) are U+0100.. in byte order.
 * Fills cp -> byte for cp < 324; -1 elsewhere. */
static void gpt2_alphabet_inverse(int16_t inv[324]) {
    for (int i = 0; i < 324; i++) inv[i] = -1;
    int k = 0;
    for (int b = 0; b < 256; b++) {
        int self = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
        inv[self ? b : 256 + k++] = (int16_t)b;
    }
}

/* Decode a byte-level spelling into raw bytes (dst has room for n bytes: each code point of
 * the alphabet takes >= 1 byte in UTF-8 and gives one byte). Returns the length, or -1 when
 * some character is outside the alphabet. */
static long gpt2_unspell(const int16_t inv[324], const uint8_t *s, size_t n, uint8_t *dst) {
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        int len;
        uint32_t cp = utf8_decode(s + i, n - i, &len);
        if (cp >= 324 || inv[cp] < 0) return -1;
        dst[o++] = (uint8_t)inv[cp];
        i += (size_t)len;
    }
    return (long)o;
}

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* ---- loading ------------------------------------------------------------------------- */

#define TOK_ERR(...) do { snprintf(err, errlen, __VA_ARGS__); goto fail; } while (0)

static int get_token_id(const gguf_file *f, const char *key, int n_vocab, int *out, char *err, size_t errlen) {
    int64_t v;
    int r = gguf_get_i64(f, key, &v);
    *out = -1;
    if (r == -1) return 0;
    if (r != 0) { snprintf(err, errlen, "%s: %s is not an integer", f->path ? f->path : "gguf", key); return -1; }
    if (v < 0 || v >= n_vocab) {
        snprintf(err, errlen, "%s: %s = %lld is outside the vocabulary (%d tokens)", f->path ? f->path : "gguf",
                 key, (long long)v, n_vocab);
        return -1;
    }
    *out = (int)v;
    return 0;
}

static int get_flag(const gguf_file *f, const char *key, int def, int *out, char *err, size_t errlen) {
    int r = gguf_get_bool(f, key, out);
    if (r == -1) { *out = def; return 0; }
    if (r != 0) { snprintf(err, errlen, "%s: %s is not a bool", f->path ? f->path : "gguf", key); return -1; }
    return 0;
}

/* sort keys first_byte << 24 | length: by byte ascending, then length descending */
static int cmp_key_desc_len(const void *x, const void *y) {
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    if ((a >> 24) != (b >> 24)) return (a >> 24) < (b >> 24) ? -1 : 1;
    return (a & 0xffffff) > (b & 0xffffff) ? -1 : (a & 0xffffff) < (b & 0xffffff);
}

static int build_merges(tokenizer *t, const gguf_file *f, const char *path, char *err, size_t errlen) {
    const gguf_kv *kv = gguf_get_kv(f, "tokenizer.ggml.merges");
    if (!kv) { snprintf(err, errlen, "%s: tokenizer.ggml.merges is missing (needed by a gpt2 tokenizer)", path); return -1; }
    if (kv->type != GGUF_TYPE_ARRAY || kv->arr_type != GGUF_TYPE_STRING) {
        snprintf(err, errlen, "%s: tokenizer.ggml.merges must be an array of strings", path);
        return -1;
    }
    uint64_t n = kv->arr_n;
    if (n > 0x7fffffff / 2) { snprintf(err, errlen, "%s: tokenizer.ggml.merges has %llu entries (too many)", path,
                                       (unsigned long long)n); return -1; }
    uint32_t cap = pow2_at_least(n * 2 + 1);
    t->merges = st_malloc((size_t)cap * sizeof *t->merges);
    if (!t->merges) { snprintf(err, errlen, "%s: out of memory for %llu merges", path, (unsigned long long)n); return -1; }
    for (uint32_t i = 0; i < cap; i++) t->merges[i].rank = -1;
    t->merge_mask = cap - 1;
    int16_t inv[324];
    gpt2_alphabet_inverse(inv);
    uint8_t *buf = NULL;
    size_t bufcap = 0;
    for (uint64_t i = 0; i < n; i++) {
        gguf_str s = kv->arr_str[i];
        /* "LEFT RIGHT": split at the first space (the alphabet has no space character) */
        const char *sp = memchr(s.ptr, ' ', s.len);
        if (!sp) continue;                         /* malformed: no pair, skipped */
        if (s.len > bufcap) {
            uint8_t *nb = st_realloc(buf, s.len);
            if (!nb) { st_free(buf); snprintf(err, errlen, "%s: out of memory", path); return -1; }
            buf = nb; bufcap = s.len;
        }
        size_t ln = (size_t)(sp - s.ptr), rn = s.len - ln - 1;
        long l = gpt2_unspell(inv, (const uint8_t *)s.ptr, ln, buf);
        long r = l < 0 ? -1 : gpt2_unspell(inv, (const uint8_t *)sp + 1, rn, buf + l);
        if (l <= 0 || r <= 0) continue;            /* outside the alphabet: no token can match */
        int32_t a = tok_lookup(t, buf, (size_t)l), b = tok_lookup(t, buf + l, (size_t)r);
        int32_t c = tok_lookup(t, buf, (size_t)(l + r));
        if (a < 0 || b < 0 || c < 0) continue;     /* references an unknown token: skipped */
        uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
        uint32_t h = (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & t->merge_mask;
        while (t->merges[h].rank >= 0 && t->merges[h].key != key) h = (h + 1) & t->merge_mask;
        if (t->merges[h].rank >= 0) continue;      /* duplicate pair: the first rank stays */
        t->merges[h] = (bpe_merge){ key, (int32_t)i, c };
        t->n_merges++;
    }
    st_free(buf);
    return 0;
}

/* The prefix set of the tokens i with member[i] != 0. 0 ok, -1 out of memory. */
static int build_prefix_set(tokenizer *t, tok_prefix_set *ps, const uint8_t *member) {
    int n = t->n_vocab, cnt = 0;
    for (int i = 0; i < n; i++) cnt += member[i] != 0;
    ps->n = cnt;
    ps->index.mask = pow2_at_least((uint64_t)cnt * 2) - 1;
    ps->index.slots = st_calloc((size_t)ps->index.mask + 1, sizeof *ps->index.slots);
    /* (first byte, length) of every member, sorted by byte then length descending */
    uint32_t *lens = st_malloc((size_t)(cnt ? cnt : 1) * sizeof *lens);
    ps->lens = st_malloc((size_t)(cnt ? cnt : 1) * sizeof *ps->lens);
    if (!ps->index.slots || !lens || !ps->lens) { st_free(lens); return -1; }
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (!member[i]) continue;
        tok_hash_insert(t, &ps->index, i);
        lens[k++] = (uint32_t)(uint8_t)t->blob[t->off[i]] << 24 | (t->len[i] > 0xffffff ? 0xffffff : t->len[i]);
    }
    qsort(lens, (size_t)k, sizeof *lens, cmp_key_desc_len);
    int nl = 0;
    for (int b = 0, j = 0; b < 256; b++) {
        ps->bucket[b] = nl;
        uint32_t last = 0;
        for (; j < k && (lens[j] >> 24) == (uint32_t)b; j++) {
            uint32_t l = lens[j] & 0xffffff;
            if (l != last) ps->lens[nl++] = l;
            last = l;
        }
    }
    ps->bucket[256] = nl;
    st_free(lens);
    return 0;
}

int tokenizer_load_gguf(const gguf_file *f, tokenizer **out, char *err, size_t errlen) {
    const char *path = f && f->path ? f->path : "gguf";
    tokenizer *t = NULL;
    uint8_t *respelled = NULL;
    *out = NULL;
    if (!f) { snprintf(err, errlen, "tokenizer: no file"); return -1; }
    t = st_calloc(1, sizeof *t);
    if (!t) TOK_ERR("%s: out of memory", path);

    /* model */
    gguf_str model;
    int r = gguf_get_str(f, "tokenizer.ggml.model", &model);
    if (r == -1) TOK_ERR("%s: tokenizer.ggml.model is missing: the file has no tokenizer", path);
    if (r != 0) TOK_ERR("%s: tokenizer.ggml.model is not a string", path);
    if (gguf_str_eq(model, "gpt2")) t->model = TOKENIZER_MODEL_BPE;
    else if (gguf_str_eq(model, "llama")) t->model = TOKENIZER_MODEL_SPM;
    else if (gguf_str_eq(model, "t5")) t->model = TOKENIZER_MODEL_UGM;
    else {
        char m[64];
        TOK_ERR("%s: tokenizer.ggml.model '%s' is not supported (supported: gpt2, llama, t5)", path,
                gguf_str_copy(model, m, sizeof m));
    }

    /* tokens */
    const gguf_kv *ktok = gguf_get_kv(f, "tokenizer.ggml.tokens");
    if (!ktok) TOK_ERR("%s: tokenizer.ggml.tokens is missing", path);
    if (ktok->type != GGUF_TYPE_ARRAY || ktok->arr_type != GGUF_TYPE_STRING)
        TOK_ERR("%s: tokenizer.ggml.tokens must be an array of strings", path);
    if (ktok->arr_n == 0) TOK_ERR("%s: tokenizer.ggml.tokens is empty", path);
    if (ktok->arr_n > (1u << 24)) TOK_ERR("%s: tokenizer.ggml.tokens has %llu entries (at most %u supported)", path,
                                          (unsigned long long)ktok->arr_n, 1u << 24);
    int n = (int)ktok->arr_n;
    t->n_vocab = n;
    uint64_t total = 0;
    for (int i = 0; i < n; i++) {
        if (ktok->arr_str[i].len > (1u << 20))
            TOK_ERR("%s: tokenizer.ggml.tokens[%d] is %llu bytes long (at most 1 MiB)", path, i,
                    (unsigned long long)ktok->arr_str[i].len);
        total += ktok->arr_str[i].len;
    }
    if (total > 0x7fffffffu) TOK_ERR("%s: tokenizer.ggml.tokens holds %llu bytes (too many)", path, (unsigned long long)total);

    /* token types: int32 array of the same length (optional) */
    const gguf_kv *ktype = gguf_get_kv(f, "tokenizer.ggml.token_type");
    if (ktype) {
        if (ktype->type != GGUF_TYPE_ARRAY || ktype->arr_type != GGUF_TYPE_INT32)
            TOK_ERR("%s: tokenizer.ggml.token_type must be an array of int32", path);
        if (ktype->arr_n != (uint64_t)n)
            TOK_ERR("%s: tokenizer.ggml.token_type has %llu entries but tokenizer.ggml.tokens has %d", path,
                    (unsigned long long)ktype->arr_n, n);
    }
    /* scores: float32 array of the same length (optional; SentencePiece files carry them) */
    const gguf_kv *kscore = gguf_get_kv(f, "tokenizer.ggml.scores");
    if (kscore) {
        if (kscore->type != GGUF_TYPE_ARRAY || kscore->arr_type != GGUF_TYPE_FLOAT32)
            TOK_ERR("%s: tokenizer.ggml.scores must be an array of float32", path);
        if (kscore->arr_n != (uint64_t)n)
            TOK_ERR("%s: tokenizer.ggml.scores has %llu entries but tokenizer.ggml.tokens has %d", path,
                    (unsigned long long)kscore->arr_n, n);
    }

    t->blob = st_malloc(total ? total : 1);
    t->off = st_malloc((size_t)n * sizeof *t->off);
    t->len = st_malloc((size_t)n * sizeof *t->len);
    t->type = st_malloc((size_t)n);
    t->eog = st_calloc((size_t)n, 1);
    respelled = st_calloc((size_t)n, 1);
    if (kscore) t->scores = st_malloc((size_t)n * sizeof *t->scores);
    if (!t->blob || !t->off || !t->len || !t->type || !t->eog || !respelled || (kscore && !t->scores))
        TOK_ERR("%s: out of memory for a vocabulary of %d tokens", path, n);

    for (int i = 0; i < n; i++) {
        int32_t ty = TOKEN_TYPE_NORMAL;
        if (ktype) memcpy(&ty, (const uint8_t *)ktype->arr_data + 4 * (size_t)i, 4);
        if (ty < TOKEN_TYPE_UNDEFINED || ty > TOKEN_TYPE_BYTE)
            TOK_ERR("%s: tokenizer.ggml.token_type[%d] = %d is not a token type (0..6)", path, i, ty);
        t->type[i] = (uint8_t)ty;
        if (kscore) {
            float s;
            memcpy(&s, (const uint8_t *)kscore->arr_data + 4 * (size_t)i, 4);
            if (isnan(s)) TOK_ERR("%s: tokenizer.ggml.scores[%d] is NaN", path, i);
            t->scores[i] = s;
        }
    }

    /* raw bytes of every token */
    int16_t inv[324];
    gpt2_alphabet_inverse(inv);
    uint32_t pos = 0;
    for (int i = 0; i < n; i++) {
        gguf_str s = ktok->arr_str[i];
        uint8_t *dst = (uint8_t *)t->blob + pos;
        long len = -1;
        t->off[i] = pos;
        if (t->model == TOKENIZER_MODEL_BPE) {
            len = gpt2_unspell(inv, (const uint8_t *)s.ptr, s.len, dst);
            if (len < 0) {            /* not in the byte alphabet: the text is its own bytes */
                memcpy(dst, s.ptr, s.len);
                len = (long)s.len;
                respelled[i] = 1;
            }
        } else if (t->type[i] == TOKEN_TYPE_BYTE) {
            if (s.len != 6 || memcmp(s.ptr, "<0x", 3) || s.ptr[5] != '>' || hexval(s.ptr[3]) < 0 || hexval(s.ptr[4]) < 0) {
                char b[32];
                TOK_ERR("%s: byte token %d is spelled '%s', not <0xNN>", path, i, gguf_str_copy(s, b, sizeof b));
            }
            dst[0] = (uint8_t)(hexval(s.ptr[3]) * 16 + hexval(s.ptr[4]));
            len = 1;
        } else {
            /* SentencePiece: U+2581 is the space. A token made only of real spaces is the same
             * as its U+2581 spelling (the reference respells those); one that mixes real spaces
             * with other characters can never match normalized text and stays out of lookup. */
            int all_space = s.len > 0, has_space = 0;
            size_t o = 0;
            for (size_t k = 0; k < s.len;) {
                if (k + 3 <= s.len && !memcmp(s.ptr + k, "\xE2\x96\x81", 3)) { dst[o++] = ' '; k += 3; all_space = 0; continue; }
                if (s.ptr[k] == ' ') has_space = 1; else all_space = 0;
                dst[o++] = (uint8_t)s.ptr[k++];
            }
            if (has_space) respelled[i] = all_space ? 1 : 2;
            len = (long)o;
        }
        t->len[i] = (uint32_t)len;
        pos += (uint32_t)len;
    }

    /* bytes -> id */
    t->vocab.mask = pow2_at_least((uint64_t)n * 2) - 1;
    t->vocab.slots = st_calloc((size_t)t->vocab.mask + 1, sizeof *t->vocab.slots);
    if (!t->vocab.slots) TOK_ERR("%s: out of memory for the vocabulary index", path);
    for (int i = 0; i < n; i++) {
        if (t->len[i] == 0 || respelled[i] == 2) continue;
        if (t->model != TOKENIZER_MODEL_BPE && t->type[i] == TOKEN_TYPE_BYTE) continue;
        tok_hash_insert(t, &t->vocab, i);
    }
    for (int b = 0; b < 256; b++) t->byte_id[b] = -1;
    if (t->model == TOKENIZER_MODEL_BPE) {
        for (int b = 0; b < 256; b++) { uint8_t c = (uint8_t)b; t->byte_id[b] = tok_lookup(t, &c, 1); }
    } else {
        for (int i = 0; i < n; i++)
            if (t->type[i] == TOKEN_TYPE_BYTE) t->byte_id[(uint8_t)t->blob[t->off[i]]] = i;
    }

    /* pre-tokenizer */
    gguf_str pre;
    r = gguf_get_str(f, "tokenizer.ggml.pre", &pre);
    if (r == -2) TOK_ERR("%s: tokenizer.ggml.pre is not a string", path);
    gguf_str_copy(r == 0 ? pre : (gguf_str){ "default", 7 }, t->pre_name, sizeof t->pre_name);
    if (t->model != TOKENIZER_MODEL_BPE) t->pre = PRETOK_NONE;
    else {
        int known;
        t->pre = pretok_from_name(t->pre_name, &known);
        /* an unknown name falls back to the GPT-2 pattern, as the reference converter does */
        if (!known) {
            char nm[32];
            snprintf(nm, sizeof nm, "%.20s?gpt2", t->pre_name);
            memcpy(t->pre_name, nm, sizeof nm);
        }
        if (build_merges(t, f, path, err, errlen)) goto fail;
        /* Llama 3's tokenizer.json sets ignore_merges (llama.cpp: the LLAMA3 pre type) */
        static const char *const ignore_merges_pre[] = { "llama3", "llama-v3", "llama-bpe", "falcon3" };
        for (size_t k = 0; k < sizeof ignore_merges_pre / sizeof ignore_merges_pre[0]; k++)
            if (!strcmp(t->pre_name, ignore_merges_pre[k])) t->ignore_merges = 1;
    }

    /* special ids */
    if (get_token_id(f, "tokenizer.ggml.bos_token_id", n, &t->bos, err, errlen) ||
        get_token_id(f, "tokenizer.ggml.eos_token_id", n, &t->eos, err, errlen) ||
        get_token_id(f, "tokenizer.ggml.unknown_token_id", n, &t->unk, err, errlen) ||
        get_token_id(f, "tokenizer.ggml.padding_token_id", n, &t->pad, err, errlen) ||
        get_token_id(f, "tokenizer.ggml.eot_token_id", n, &t->eot, err, errlen))
        goto fail;
    int eom, sep;
    if (get_token_id(f, "tokenizer.ggml.eom_token_id", n, &eom, err, errlen) ||
        get_token_id(f, "tokenizer.ggml.seperator_token_id", n, &sep, err, errlen))
        goto fail;
    if (get_flag(f, "tokenizer.ggml.add_bos_token", t->model == TOKENIZER_MODEL_SPM, &t->add_bos, err, errlen) ||
        get_flag(f, "tokenizer.ggml.add_eos_token", 0, &t->add_eos, err, errlen) ||
        get_flag(f, "tokenizer.ggml.add_space_prefix", t->model != TOKENIZER_MODEL_BPE, &t->add_space_prefix, err, errlen))
        goto fail;
    if (t->model == TOKENIZER_MODEL_UGM) {
        /* the text is used as it is: a normalization table or whitespace folding is refused */
        int rew = 0;
        if (get_flag(f, "tokenizer.ggml.remove_extra_whitespaces", 0, &rew, err, errlen)) goto fail;
        if (rew) TOK_ERR("%s: tokenizer.ggml.remove_extra_whitespaces = true is not supported for the unigram model", path);
        const gguf_kv *cm = gguf_get_kv(f, "tokenizer.ggml.precompiled_charsmap");
        if (cm && !(cm->type == GGUF_TYPE_ARRAY && cm->arr_n == 0))
            TOK_ERR("%s: tokenizer.ggml.precompiled_charsmap (a normalization table) is not supported for the unigram model",
                    path);
        if (!t->scores) TOK_ERR("%s: the unigram model needs tokenizer.ggml.scores", path);
        if (t->unk < 0)
            for (int i = 0; i < n && t->unk < 0; i++) if (t->type[i] == TOKEN_TYPE_UNKNOWN) t->unk = i;
        if (t->unk < 0) TOK_ERR("%s: the unigram model needs an unknown token (tokenizer.ggml.unknown_token_id)", path);
    }

    /* end of turn: the key, else the chat-format marker the vocabulary has */
    static const char *const eot_names[] = { "<|im_end|>", "<|eot_id|>", "<end_of_turn>", "<|end|>" };
    for (size_t k = 0; k < sizeof eot_names / sizeof eot_names[0] && t->eot < 0; k++)
        t->eot = tokenizer_find_token(t, eot_names[k]);
    static const char *const eog_names[] = { "<|im_end|>", "<|eot_id|>", "<end_of_turn>", "<|end|>",
                                             "<|endoftext|>", "<|eom_id|>", "<|end_of_text|>" };
    for (size_t k = 0; k < sizeof eog_names / sizeof eog_names[0]; k++) {
        int32_t id = tokenizer_find_token(t, eog_names[k]);
        if (id >= 0 && (t->type[id] == TOKEN_TYPE_CONTROL || t->type[id] == TOKEN_TYPE_USER_DEFINED)) t->eog[id] = 1;
    }
    if (t->eos >= 0) t->eog[t->eos] = 1;
    if (t->eot >= 0) t->eog[t->eot] = 1;
    if (eom >= 0) t->eog[eom] = 1;

    /* added tokens, matched in the text before the model: CONTROL (only with parse_special)
     * and USER_DEFINED, except those whose spelling had to be changed above (the reference
     * cannot find those in its vocabulary either) */
    t->added_kind = st_calloc((size_t)n, 1);
    if (!t->added_kind) TOK_ERR("%s: out of memory", path);
    for (int i = 0; i < n; i++)
        if ((t->type[i] == TOKEN_TYPE_CONTROL || t->type[i] == TOKEN_TYPE_USER_DEFINED) && t->len[i] > 0 && !respelled[i])
            t->added_kind[i] = t->type[i] == TOKEN_TYPE_CONTROL ? 2 : 1;
    if (build_prefix_set(t, &t->added, t->added_kind)) TOK_ERR("%s: out of memory", path);
    if (t->model == TOKENIZER_MODEL_UGM) {
        /* reuse respelled[] as the member flags: the NORMAL and USER_DEFINED pieces that text can
         * match (not those mixing real spaces with other characters) */
        t->ugm_min_score = FLT_MAX;
        t->ugm_max_score = FLT_MIN;
        for (int i = 0; i < n; i++) {
            if (t->type[i] == TOKEN_TYPE_NORMAL) {
                if (t->scores[i] < t->ugm_min_score) t->ugm_min_score = t->scores[i];
                if (t->scores[i] > t->ugm_max_score) t->ugm_max_score = t->scores[i];
            }
            respelled[i] = (t->type[i] == TOKEN_TYPE_NORMAL || t->type[i] == TOKEN_TYPE_USER_DEFINED) && t->len[i] > 0 &&
                           respelled[i] != 2;
        }
        if (build_prefix_set(t, &t->ugm_pieces, respelled)) TOK_ERR("%s: out of memory", path);
    }
    if (t->model == TOKENIZER_MODEL_SPM) {
        /* reuse respelled[] as the member flags: every USER_DEFINED token with bytes */
        for (int i = 0; i < n; i++) respelled[i] = t->type[i] == TOKEN_TYPE_USER_DEFINED && t->len[i] > 0;
        if (build_prefix_set(t, &t->spm_user, respelled)) TOK_ERR("%s: out of memory", path);
    }
    st_free(respelled);
    *out = t;
    return 0;
fail:
    st_free(respelled);
    tokenizer_free(t);
    return -1;
}

void tokenizer_free(tokenizer *t) {
    if (!t) return;
    st_free(t->blob); st_free(t->off); st_free(t->len); st_free(t->type); st_free(t->scores);
    st_free(t->vocab.slots); st_free(t->merges); st_free(t->added_kind);
    st_free(t->added.index.slots); st_free(t->added.lens);
    st_free(t->spm_user.index.slots); st_free(t->spm_user.lens);
    st_free(t->ugm_pieces.index.slots); st_free(t->ugm_pieces.lens);
    st_free(t->eog);
    st_free(t);
}

/* ---- encode -------------------------------------------------------------------------- */

int32_t tok_prefix_match(const tokenizer *t, const tok_prefix_set *ps, const uint8_t *s, size_t n,
                         int (*accept)(const tokenizer *t, int32_t id, int arg), int arg) {
    if (!ps->n || n == 0) return -1;
    for (int k = ps->bucket[s[0]]; k < ps->bucket[s[0] + 1]; k++) {
        uint32_t l = ps->lens[k];
        if (l > n) continue;
        int32_t id = tok_hash_find(t, &ps->index, s, l);
        if (id >= 0 && (!accept || accept(t, id, arg))) return id;
    }
    return -1;
}

static int added_accept(const tokenizer *t, int32_t id, int parse_special) {
    return parse_special || t->added_kind[id] == 1;
}

/* Longest added token starting at s[0..n) (leftmost-longest, as the reference matches added
 * tokens); -1 if none. */
static int32_t match_added(const tokenizer *t, const uint8_t *s, size_t n, int parse_special) {
    return tok_prefix_match(t, &t->added, s, n, added_accept, parse_special);
}

static void encode_text(const tokenizer *t, const uint8_t *s, size_t n, int at_start, tok_ids *out) {
    if (n == 0) return;
    if (t->model == TOKENIZER_MODEL_BPE) { pretok_split(t, s, n, bpe_encode_piece, out); return; }
    void (*seg)(const tokenizer *, const uint8_t *, size_t, tok_ids *) =
        t->model == TOKENIZER_MODEL_UGM ? ugm_encode_segment : spm_encode_segment;
    if (at_start && t->add_space_prefix) {
        uint8_t *buf = st_malloc(n + 1);
        if (!buf) { out->oom = 1; return; }
        buf[0] = ' ';
        memcpy(buf + 1, s, n);
        seg(t, buf, n + 1, out);
        st_free(buf);
        return;
    }
    seg(t, s, n, out);
}

size_t tokenizer_special_len(const tokenizer *t, const char *s, size_t n) {
    if (!t || !t->added.n || n == 0) return 0;
    int32_t id = match_added(t, (const uint8_t *)s, n, 1);
    return id >= 0 && t->added_kind[id] != 1 ? t->len[id] : 0;
}

int tokenizer_encode(const tokenizer *t, const char *text, size_t len, int add_bos, int parse_special,
                     int32_t *ids, int cap) {
    return tokenizer_encode_breaks(t, text, len, add_bos, parse_special, NULL, 0, ids, cap);
}

int tokenizer_encode_breaks(const tokenizer *t, const char *text, size_t len, int add_bos, int parse_special,
                            const size_t *breaks, int n_breaks, int32_t *ids, int cap) {
    if (!t || (!text && len) || n_breaks < 0 || (n_breaks && !breaks)) return -1;
    tok_ids out = { 0 };
    const uint8_t *s = (const uint8_t *)text;
    if (add_bos && t->bos >= 0) tok_ids_push(&out, t->bos);
    size_t seg = 0;
    /* SentencePiece adds its space marker to the start of the text even when a user-defined
     * piece comes first ("<tool>x" -> "\u2581", "<tool>", "x") */
    if (t->model != TOKENIZER_MODEL_BPE && t->add_space_prefix && len > 0 && t->added.n) {
        int32_t id = match_added(t, s, len, parse_special);
        if (id >= 0 && t->added_kind[id] == 1)
            (t->model == TOKENIZER_MODEL_UGM ? ugm_encode_segment : spm_encode_segment)(t, (const uint8_t *)" ", 1, &out);
    }
    int b = 0;   /* breaks[b] is the first break >= i */
    for (size_t i = 0; i < len;) {
        while (b < n_breaks && breaks[b] < i) b++;
        int32_t id = t->added.n ? match_added(t, s + i, len - i, parse_special) : -1;
        /* a control token that covers a break (its text came from message content) is text here;
         * USER_DEFINED tokens match as they do in plain text */
        if (id >= 0 && b < n_breaks && breaks[b] < i + t->len[id] && t->added_kind[id] != 1)
            id = match_added(t, s + i, len - i, 0);
        if (id < 0) { i++; continue; }
        encode_text(t, s + seg, i - seg, seg == 0, &out);
        tok_ids_push(&out, id);
        i += t->len[id];
        seg = i;
    }
    encode_text(t, s + seg, len - seg, seg == 0, &out);
    if (out.oom || out.n > 0x7fffffff / 2) { st_free(out.v); return -1; }
    int k = out.n < cap ? out.n : cap;
    if (k > 0 && ids) memcpy(ids, out.v, (size_t)k * sizeof *ids);
    st_free(out.v);
    return out.n;
}

/* ---- accessors ----------------------------------------------------------------------- */

const char *tokenizer_token_bytes(const tokenizer *t, int32_t id, size_t *len) {
    if (!t || id < 0 || id >= t->n_vocab) { if (len) *len = 0; return NULL; }
    if (len) *len = t->len[id];
    return t->blob + t->off[id];
}

int tokenizer_decode(const tokenizer *t, const int32_t *ids, int n, char *out, int cap) {
    long total = 0;
    for (int i = 0; i < n; i++) {
        size_t l;
        const char *p = tokenizer_token_bytes(t, ids[i], &l);
        if (!p) continue;
        if (total + (long)l < cap) memcpy(out + total, p, l);
        total += (long)l;
        if (total > 0x7fffffff / 2) return -1;
    }
    if (total < cap) out[total] = 0;
    else if (cap > 0) out[cap - 1] = 0;
    return (int)total;
}

int tokenizer_n_vocab(const tokenizer *t) { return t->n_vocab; }
int tokenizer_bos(const tokenizer *t) { return t->bos; }
int tokenizer_eos(const tokenizer *t) { return t->eos; }
int tokenizer_eot(const tokenizer *t) { return t->eot; }
int tokenizer_add_bos(const tokenizer *t) { return t->add_bos; }
int tokenizer_is_eog(const tokenizer *t, int32_t id) { return id >= 0 && id < t->n_vocab && t->eog[id]; }
int tokenizer_token_type(const tokenizer *t, int32_t id) { return id >= 0 && id < t->n_vocab ? t->type[id] : -1; }
const char *tokenizer_model_name(const tokenizer *t) {
    return t->model == TOKENIZER_MODEL_BPE ? "gpt2" : t->model == TOKENIZER_MODEL_UGM ? "t5" : "llama";
}
const char *tokenizer_pre_name(const tokenizer *t) { return t->pre_name; }

int32_t tokenizer_find_token(const tokenizer *t, const char *s) {
    if (!t || !s) return -1;
    size_t n = strlen(s);
    int32_t id = tok_lookup(t, s, n);
    if (id >= 0) return id;
    /* tokens kept out of the lookup index (mixed real spaces; SentencePiece byte tokens are
     * found by their <0xNN> bytes only through byte fallback) */
    for (int i = 0; i < t->n_vocab; i++)
        if (t->len[i] == n && n > 0 && !memcmp(t->blob + t->off[i], s, n) && t->type[i] != TOKEN_TYPE_BYTE) return i;
    return -1;
}
