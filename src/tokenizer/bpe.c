/* Byte-level BPE of one pre-tokenized piece.
 *
 * Start from one symbol per byte (the byte's token), then repeatedly merge the adjacent pair
 * with the lowest rank in tokenizer.ggml.merges (leftmost first among equal ranks), as the
 * reference does. Symbols live in a doubly linked list over an array; candidate pairs sit in
 * a binary min-heap keyed by (rank, left position). A popped pair is stale when either side
 * has changed since it was pushed; it is then skipped. O(n log n) per piece, so a long run
 * without spaces (base64, a row of dashes) stays fast. */
#include <string.h>
#include "tokenizer/tok_internal.h"
#include "core/util.h"

int32_t bpe_merge_find(const tokenizer *t, int32_t left, int32_t right, int32_t *result) {
    if (!t->merges) return -1;
    uint64_t key = (uint64_t)(uint32_t)left << 32 | (uint32_t)right;
    uint32_t h = (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & t->merge_mask;
    for (;;) {
        const bpe_merge *m = &t->merges[h];
        if (m->rank < 0) return -1;
        if (m->key == key) { *result = m->result; return m->rank; }
        h = (h + 1) & t->merge_mask;
    }
}

typedef struct { int32_t id; int prev, next; } bpe_sym;
typedef struct { int32_t rank; int left; int32_t left_id, right_id; } bpe_pair;

static int pair_less(const bpe_pair *a, const bpe_pair *b) {
    return a->rank < b->rank || (a->rank == b->rank && a->left < b->left);
}

static void heap_push(bpe_pair *h, int *n, bpe_pair p) {
    int i = (*n)++;
    while (i > 0) {
        int parent = (i - 1) / 2;
        if (!pair_less(&p, &h[parent])) break;
        h[i] = h[parent];
        i = parent;
    }
    h[i] = p;
}

static bpe_pair heap_pop(bpe_pair *h, int *n) {
    bpe_pair top = h[0], last = h[--(*n)];
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && pair_less(&h[c + 1], &h[c])) c++;
        if (!pair_less(&h[c], &last)) break;
        h[i] = h[c];
        i = c;
    }
    if (*n > 0) h[i] = last;
    return top;
}

static void try_pair(const tokenizer *t, const bpe_sym *sym, int left, bpe_pair *heap, int *nheap) {
    if (left < 0 || sym[left].next < 0) return;
    int right = sym[left].next;
    int32_t result;
    int32_t rank = bpe_merge_find(t, sym[left].id, sym[right].id, &result);
    if (rank < 0) return;
    heap_push(heap, nheap, (bpe_pair){ rank, left, sym[left].id, sym[right].id });
}

void bpe_encode_piece(const tokenizer *t, const uint8_t *p, size_t n, tok_ids *out) {
    if (n == 0) return;
    if (n == 1) {                     /* common for digits and punctuation */
        if (t->byte_id[p[0]] >= 0) tok_ids_push(out, t->byte_id[p[0]]);
        return;
    }
    if (t->ignore_merges) {           /* the piece is a token: taken whole, merges not consulted */
        int32_t id = tok_lookup(t, p, n);
        if (id >= 0) { tok_ids_push(out, id); return; }
    }
    /* every merge removes one symbol and pushes at most two pairs: heap <= 3n */
    bpe_sym *sym = st_malloc(n * sizeof *sym);
    bpe_pair *heap = st_malloc(3 * n * sizeof *heap);
    if (!sym || !heap) { st_free(sym); st_free(heap); out->oom = 1; return; }
    /* a byte without a token is dropped, as the reference BPE does without an unk token */
    int m = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t id = t->byte_id[p[i]];
        if (id < 0) continue;
        sym[m] = (bpe_sym){ id, m - 1, -1 };
        if (m > 0) sym[m - 1].next = m;
        m++;
    }
    int nheap = 0;
    for (int i = 0; i + 1 < m; i++) try_pair(t, sym, i, heap, &nheap);
    while (nheap > 0) {
        bpe_pair pr = heap_pop(heap, &nheap);
        int l = pr.left, r = sym[l].next;
        if (sym[l].id != pr.left_id || r < 0 || sym[r].id != pr.right_id) continue;  /* stale */
        if (sym[l].id < 0) continue;                                                  /* merged away */
        int32_t result;
        bpe_merge_find(t, sym[l].id, sym[r].id, &result);
        sym[l].id = result;
        sym[l].next = sym[r].next;
        if (sym[r].next >= 0) sym[sym[r].next].prev = l;
        sym[r].id = -1;
        sym[r].prev = sym[r].next = -1;
        try_pair(t, sym, sym[l].prev, heap, &nheap);
        try_pair(t, sym, l, heap, &nheap);
    }
    for (int i = 0; i >= 0 && m > 0; i = sym[i].next) tok_ids_push(out, sym[i].id);
    st_free(sym);
    st_free(heap);
}
