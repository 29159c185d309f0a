/* SentencePiece unigram model (tokenizer.ggml.model "t5", the name GGUF files give it).
 *
 * The segmentation of highest total score, as SentencePiece's unigram encoder finds it
 * (checked against the sentencepiece package on a trained vocabulary, tests/data/oracle):
 * walk the segment one UTF-8 character at a time (a lead byte gives the length, 1 for a byte
 * that cannot start a character); from each position reached, every vocabulary piece that
 * the text continues with (NORMAL and USER_DEFINED pieces; control, unknown, unused and byte
 * pieces take no part) offers a path ending after it, scored by the sum of piece scores in
 * single-precision floats; a USER_DEFINED piece scores length x max_score - 0.1, where
 * max_score is the largest NORMAL score but at least FLT_MIN, so it is nearly always taken.
 * When no piece spans exactly the next character, that character is an unknown piece scored
 * min_score - 10. A path replaces the best one ending at the same place only when strictly
 * better, so ties go to the one found first (the earlier start). Unknown pieces become their
 * <0xNN> byte tokens when the vocabulary has all of them (byte fallback), else the unknown id.
 * Spaces are U+2581 in the vocabulary, which our raw token bytes already hold as ' '; a U+2581
 * in the text is a space too. */
#include <float.h>
#include <string.h>
#include "tokenizer/tok_internal.h"
#include "core/util.h"

#define UGM_UNK_PENALTY 10.0f

typedef struct { float score; int start; int32_t id; } ugm_node;

static int utf8_lead_len(uint8_t c) {
    static const uint8_t len[16] = { 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4 };
    return len[c >> 4];
}

void ugm_encode_segment(const tokenizer *t, const uint8_t *in, size_t n, tok_ids *out) {
    if (n == 0) return;
    /* a literal U+2581 in the text is the space marker to the reference too: make it ' ' */
    uint8_t *s = st_malloc(n);
    ugm_node *best = st_malloc((n + 1) * sizeof *best);
    if (!s || !best) { st_free(s); st_free(best); out->oom = 1; return; }
    size_t m = 0;
    for (size_t i = 0; i < n;) {
        if (i + 3 <= n && in[i] == 0xE2 && in[i + 1] == 0x96 && in[i + 2] == 0x81) { s[m++] = ' '; i += 3; }
        else s[m++] = in[i++];
    }
    n = m;
    for (size_t i = 0; i <= n; i++) { best[i].score = 0; best[i].start = -1; best[i].id = -1; }
    const tok_prefix_set *ps = &t->ugm_pieces;
    const float unk_score = t->ugm_min_score - UGM_UNK_PENALTY;
    for (size_t at = 0; at < n;) {
        size_t mb = (size_t)utf8_lead_len(s[at]);
        if (mb > n - at) mb = n - at;
        float here = best[at].score;
        int single = 0;
        /* every piece starting here: the lengths of the pieces with this first byte */
        if (ps->n)
            for (int k = ps->bucket[s[at]]; k < ps->bucket[s[at] + 1]; k++) {
                size_t l = ps->lens[k];
                if (l > n - at) continue;
                int32_t id = tok_hash_find(t, &ps->index, s + at, l);
                if (id < 0) continue;
                float sc = t->type[id] == TOKEN_TYPE_USER_DEFINED ? (float)l * t->ugm_max_score - 0.1f : t->scores[id];
                float cand = sc + here;
                ugm_node *e = &best[at + l];
                if (e->start < 0 || cand > e->score) { e->score = cand; e->start = (int)at; e->id = id; }
                if (l == mb) single = 1;
            }
        if (!single) {
            float cand = unk_score + here;
            ugm_node *e = &best[at + mb];
            if (e->start < 0 || cand > e->score) { e->score = cand; e->start = (int)at; e->id = -1; }
        }
        at += mb;
    }
    /* the best path, back from the end: collect the node ends, then emit in order */
    int cnt = 0;
    for (size_t e = n; e > 0; e = (size_t)best[e].start) cnt++;
    size_t *ends = st_malloc((size_t)cnt * sizeof *ends);
    if (!ends) { st_free(s); st_free(best); out->oom = 1; return; }
    int k = cnt;
    for (size_t e = n; e > 0; e = (size_t)best[e].start) ends[--k] = e;
    for (int i = 0; i < cnt; i++) {
        const ugm_node *nd = &best[ends[i]];
        if (nd->id >= 0) { tok_ids_push(out, nd->id); continue; }
        size_t a = (size_t)nd->start, b = ends[i];
        int all = 1;
        for (size_t j = a; j < b; j++) all = all && t->byte_id[s[j]] >= 0;
        if (all) for (size_t j = a; j < b; j++) tok_ids_push(out, t->byte_id[s[j]]);
        else if (t->unk >= 0) tok_ids_push(out, t->unk);
    }
    st_free(ends);
    st_free(best);
    st_free(s);
}
