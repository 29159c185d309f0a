/* SentencePiece BPE (tokenizer.ggml.model "llama": Llama 2, Mistral, Gemma 3).
 *
 * As SentencePiece's BPE model encodes (checked against the sentencepiece package on trained
 * vocabularies, tests/data/oracle): the whole text between added tokens is one word; spaces
 * are U+2581, which our raw token bytes already hold as ' '. Start from one symbol per
 * character, except that a USER_DEFINED piece (Gemma's runs of spaces and tabs) is matched
 * first, longest at each position, as one symbol that never merges; a character with no token
 * falls back to its <0xNN> byte tokens, which never merge either. Then repeatedly merge the
 * adjacent pair whose concatenation is a piece of the model (not control, unknown or unused),
 * best first: the higher SCORE of the merged piece, ties to the leftmost pair. Scores and ids
 * need not agree (Llama 2 keeps "\u2581\u2581" at id 259 with a very low score, so ' Hello' is
 * [29871, 15043]); without scores in the file the lower id counts as the higher score.
 *
 * Symbols are byte ranges of the segment, so the concatenation of two neighbours is a
 * contiguous range and the pair lookup is one hash probe without copying. */
#include <string.h>
#include "tokenizer/tok_internal.h"
#include "tokenizer/unicode.h"
#include "core/util.h"

typedef struct { int32_t id; uint32_t start, end; int prev, next; int fixed; } spm_sym;
typedef struct { float score; int32_t result; uint32_t left_len; int left; int32_t left_id, right_id; } spm_pair;

/* better pair first: higher score of the merged token, then (equal scores) the leftmost pair */
static int spm_less(const spm_pair *a, const spm_pair *b) {
    if (a->score != b->score) return a->score > b->score;
    return a->left < b->left;
}

static void spm_push(spm_pair *h, int *n, spm_pair p) {
    int i = (*n)++;
    while (i > 0) {
        int parent = (i - 1) / 2;
        if (!spm_less(&p, &h[parent])) break;
        h[i] = h[parent];
        i = parent;
    }
    h[i] = p;
}

static spm_pair spm_pop(spm_pair *h, int *n) {
    spm_pair top = h[0], last = h[--(*n)];
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && spm_less(&h[c + 1], &h[c])) c++;
        if (!spm_less(&h[c], &last)) break;
        h[i] = h[c];
        i = c;
    }
    if (*n > 0) h[i] = last;
    return top;
}

static void spm_try(const tokenizer *t, const uint8_t *s, const spm_sym *sym, int l, spm_pair *h, int *nh) {
    if (l < 0) return;
    int r = sym[l].next;
    if (r < 0 || sym[l].fixed || sym[r].fixed) return;
    int32_t c = tok_lookup(t, s + sym[l].start, sym[r].end - sym[l].start);
    if (c < 0) return;
    /* only pieces of the model: SentencePiece never merges into control, unknown or unused */
    int ty = t->type[c];
    if (ty == TOKEN_TYPE_CONTROL || ty == TOKEN_TYPE_UNKNOWN || ty == TOKEN_TYPE_UNUSED) return;
    float score = t->scores ? t->scores[c] : -(float)c;
    spm_push(h, nh, (spm_pair){ score, c, sym[l].end - sym[l].start, l, sym[l].id, sym[r].id });
}

void spm_encode_segment(const tokenizer *t, const uint8_t *in, size_t n, tok_ids *out) {
    if (n == 0) return;
    /* a literal U+2581 in the text is the space marker to the reference too: make it ' ' */
    uint8_t *s = st_malloc(n);
    spm_sym *sym = st_malloc(n * sizeof *sym);
    spm_pair *heap = st_malloc(3 * n * sizeof *heap);
    if (!s || !sym || !heap) { st_free(s); st_free(sym); st_free(heap); out->oom = 1; return; }
    size_t m = 0;
    for (size_t i = 0; i < n;) {
        if (i + 3 <= n && in[i] == 0xE2 && in[i + 1] == 0x96 && in[i + 2] == 0x81) { s[m++] = ' '; i += 3; }
        else s[m++] = in[i++];
    }
    n = m;
    int ns = 0;
    for (size_t i = 0; i < n;) {
        int32_t u = tok_prefix_match(t, &t->spm_user, s + i, n - i, NULL, 0);
        if (u >= 0) {               /* a user-defined piece: one symbol that never merges */
            sym[ns] = (spm_sym){ u, (uint32_t)i, (uint32_t)(i + t->len[u]), ns - 1, -1, 1 };
            if (ns > 0) sym[ns - 1].next = ns;
            ns++;
            i += t->len[u];
            continue;
        }
        int len;
        utf8_decode(s + i, n - i, &len);
        int32_t id = tok_lookup(t, s + i, (size_t)len);
        if (id >= 0) {
            sym[ns] = (spm_sym){ id, (uint32_t)i, (uint32_t)(i + len), ns - 1, -1, 0 };
            if (ns > 0) sym[ns - 1].next = ns;
            ns++;
        } else {
            /* byte fallback: every byte its <0xNN> token, or unk when one is missing */
            int all = 1;
            for (int k = 0; k < len; k++) all &= t->byte_id[s[i + k]] >= 0;
            for (int k = 0; k < (all ? len : 1); k++) {
                int32_t b = all ? t->byte_id[s[i + k]] : t->unk;
                if (b < 0) continue;
                sym[ns] = (spm_sym){ b, (uint32_t)(i + k), (uint32_t)(i + k + 1), ns - 1, -1, 1 };
                if (!all) sym[ns].end = (uint32_t)(i + len);
                if (ns > 0) sym[ns - 1].next = ns;
                ns++;
            }
        }
        i += (size_t)len;
    }
    int nh = 0;
    for (int i = 0; i + 1 < ns; i++) spm_try(t, s, sym, i, heap, &nh);
    while (nh > 0) {
        spm_pair p = spm_pop(heap, &nh);
        int l = p.left, r = sym[l].next;
        if (sym[l].id != p.left_id || r < 0 || sym[r].id != p.right_id) continue;   /* stale */
        if (sym[l].end - sym[l].start != p.left_len) continue;
        sym[l].id = p.result;
        sym[l].end = sym[r].end;
        sym[l].next = sym[r].next;
        if (sym[r].next >= 0) sym[sym[r].next].prev = l;
        sym[r].id = -1;
        sym[r].prev = sym[r].next = -1;
        spm_try(t, s, sym, sym[l].prev, heap, &nh);
        spm_try(t, s, sym, l, heap, &nh);
    }
    for (int i = 0; i >= 0 && ns > 0; i = sym[i].next) tok_ids_push(out, sym[i].id);
    st_free(s);
    st_free(sym);
    st_free(heap);
}
