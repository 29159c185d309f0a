/* Pre-tokenizers: the reference regexes (see tok_internal.h) matched by hand.
 *
 * The segment is decoded once into code points (invalid UTF-8 bytes become pseudo code
 * points that are neither letter, number nor space, so they group like punctuation and keep
 * their bytes). Each matcher tries the pattern's alternatives in order at position i and
 * returns the end of the first that matches, as a backtracking regex engine would; every
 * pattern ends in \s+ or a class that covers the remaining characters, so some alternative
 * always matches and every piece is non-empty. */
#include <string.h>
#include "tokenizer/tok_internal.h"
#include "tokenizer/unicode.h"
#include "core/util.h"

typedef struct {
    const uint32_t *c;      /* code points */
    int n;                  /* end of the current sub-range (a regex sees it as end of text) */
} cps;

static int is_l(uint32_t c) { return unicode_is_letter(c); }
static int is_n(uint32_t c) { return unicode_is_number(c); }
static int is_s(uint32_t c) { return unicode_is_space(c); }
static int is_crlf(uint32_t c) { return c == '\r' || c == '\n'; }

/* 's 't 're 've 'm 'll 'd; ci: case-insensitive as (?i:...) with Unicode simple case folding,
 * where U+017F LATIN SMALL LETTER LONG S folds to s. Returns the length or 0. */
static int match_contraction(const cps *s, int i, int ci) {
    if (s->c[i] != '\'' || i + 1 >= s->n) return 0;
    uint32_t a = s->c[i + 1], b = i + 2 < s->n ? s->c[i + 2] : 0;
    if (ci) {
        if (a == 0x17F) a = 's';
        if (a < 0x80) a |= (a >= 'A' && a <= 'Z') ? 0x20 : 0;
        if (b == 0x17F) b = 's';
        if (b < 0x80) b |= (b >= 'A' && b <= 'Z') ? 0x20 : 0;
    }
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    return 0;
}

/* \s+(?!\S) then \s+ : the run of spaces at i, minus its last space when a non-space follows
 * and the run is longer than one (the lookahead backtracks one). Returns the end or -1. */
static int match_space_run(const cps *s, int i) {
    int e = i;
    while (e < s->n && is_s(s->c[e])) e++;
    if (e == i) return -1;
    if (e == s->n || e - i == 1) return e;   /* (?!\S) holds at the end; \s+ takes a lone one */
    return e - 1;
}

/* GPT-2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
static int match_gpt2(const cps *s, int i) {
    int k = match_contraction(s, i, 0);
    if (k) return i + k;
    int j = i + (s->c[i] == ' ' && i + 1 < s->n);
    uint32_t c = s->c[j];
    if (is_l(c)) { while (j < s->n && is_l(s->c[j])) j++; return j; }
    if (is_n(c)) { while (j < s->n && is_n(s->c[j])) j++; return j; }
    if (!is_s(c)) { while (j < s->n && !is_s(s->c[j]) && !is_l(s->c[j]) && !is_n(s->c[j])) j++; return j; }
    /* c is a space here: either c[i] is a space not followed by L/N/other, or j == i */
    return match_space_run(s, i);
}

/* Llama 3 / Qwen 2:
 * (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,max_digits}
 * | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+ */
static int match_llama3(const cps *s, int i, int max_digits) {
    int k = match_contraction(s, i, 1);
    if (k) return i + k;
    uint32_t c = s->c[i];
    /* [^\r\n\p{L}\p{N}]?\p{L}+ */
    int j = i;
    if (!is_crlf(c) && !is_l(c) && !is_n(c) && i + 1 < s->n && is_l(s->c[i + 1])) j = i + 1;
    if (is_l(s->c[j])) { while (j < s->n && is_l(s->c[j])) j++; return j; }
    /* \p{N}{1,3} */
    if (is_n(c)) {
        j = i;
        while (j < s->n && j - i < max_digits && is_n(s->c[j])) j++;
        return j;
    }
    /*  ?[^\s\p{L}\p{N}]+[\r\n]* */
    j = i + (c == ' ' && i + 1 < s->n);
    if (!is_s(s->c[j]) && !is_l(s->c[j]) && !is_n(s->c[j])) {
        while (j < s->n && !is_s(s->c[j]) && !is_l(s->c[j]) && !is_n(s->c[j])) j++;
        while (j < s->n && is_crlf(s->c[j])) j++;
        return j;
    }
    /* \s*[\r\n]+ : the space run up to and including its last CR/LF */
    int e = i, last = -1;
    while (e < s->n && is_s(s->c[e])) { if (is_crlf(s->c[e])) last = e; e++; }
    if (last >= 0) return last + 1;
    return match_space_run(s, i);
}

static int match_next(pretok_kind k, const cps *s, int i) {
    switch (k) {
    case PRETOK_LLAMA3: return match_llama3(s, i, 3);
    case PRETOK_QWEN2:  return match_llama3(s, i, 1);
    default:            return match_gpt2(s, i);
    }
}

pretok_kind pretok_from_name(const char *name, int *known) {
    static const struct { const char *name; pretok_kind kind; } names[] = {
        { "gpt2", PRETOK_GPT2 }, { "default", PRETOK_GPT2 },
        { "llama3", PRETOK_LLAMA3 }, { "llama-v3", PRETOK_LLAMA3 }, { "llama-bpe", PRETOK_LLAMA3 },
        { "falcon3", PRETOK_LLAMA3 }, { "smaug-bpe", PRETOK_LLAMA3 }, { "dbrx", PRETOK_LLAMA3 },
        { "pixtral", PRETOK_LLAMA3 },
        { "qwen2", PRETOK_QWEN2 }, { "deepseek-r1-qwen", PRETOK_QWEN2 }, { "megrez", PRETOK_QWEN2 },
        { "smollm", PRETOK_DIGITS_GPT2 }, { "starcoder", PRETOK_DIGITS_GPT2 }, { "refact", PRETOK_DIGITS_GPT2 },
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(name, names[i].name)) { *known = 1; return names[i].kind; }
    *known = 0;
    return PRETOK_GPT2;
}

/* Run the regex over code points [a, b) and hand each piece's bytes to fn. */
static void split_range(const tokenizer *t, pretok_kind k, const uint8_t *bytes, const uint32_t *c,
                        const size_t *off, int a, int b, pretok_piece_fn fn, tok_ids *out) {
    cps s = { c, b };
    int i = a;
    while (i < b) {
        int e = match_next(k, &s, i);
        if (e <= i) e = i + 1;      /* cannot happen (see top); keeps the loop finite anyway */
        fn(t, bytes + off[i], off[e] - off[i], out);
        i = e;
    }
}

int pretok_split(const tokenizer *t, const uint8_t *s, size_t n, pretok_piece_fn fn, tok_ids *out) {
    if (n == 0) return 0;
    if (t->pre == PRETOK_NONE) { fn(t, s, n, out); return 0; }
    /* code points and their byte offsets: at most n of each, off has one more */
    uint32_t *c = st_malloc(n * sizeof *c);
    size_t *off = st_malloc((n + 1) * sizeof *off);
    if (!c || !off) { st_free(c); st_free(off); out->oom = 1; return -1; }
    int m = 0;
    for (size_t p = 0; p < n;) {
        int len;
        c[m] = utf8_decode(s + p, n - p, &len);
        off[m++] = p;
        p += (size_t)len;
    }
    off[m] = n;
    if (t->pre == PRETOK_DIGITS_GPT2) {
        /* Digits(individual_digits=True): each \p{N} alone; runs between them go to GPT-2 */
        int a = 0;
        for (int i = 0; i <= m; i++) {
            if (i < m && !is_n(c[i])) continue;
            if (i > a) split_range(t, PRETOK_GPT2, s, c, off, a, i, fn, out);
            if (i < m) fn(t, s + off[i], off[i + 1] - off[i], out);
            a = i + 1;
        }
    } else {
        split_range(t, t->pre, s, c, off, 0, m, fn, out);
    }
    st_free(c);
    st_free(off);
    return out->oom ? -1 : 0;
}
