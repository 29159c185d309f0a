/* Online suffix automaton over token ids (alphabet: any int32).
 * Transitions live in one open-addressing hash table keyed by (state, token) whose values
 * index an edge array; each state also chains its edges so a clone can copy them. */
#include <stdlib.h>
#include <string.h>
#include "suffix.h"
#include "core/util.h"

typedef struct { int32_t len, link, first_end, edges; } sa_state;   /* edges: head of chain, -1 */
typedef struct { int32_t tok, target, next; } sa_edge;

struct suffix_drafter {
    sa_state *st; int n_st, cap_st;
    sa_edge *ed; int n_ed, cap_ed;
    int64_t *hkey; int32_t *hval; size_t hcap, hused;   /* key: state << 32 | (uint32)tok */
    int32_t *seq; int n_seq, cap_seq;
    int last;
    int oom;
};

static inline uint64_t mix(uint64_t k) {
    k ^= k >> 33; k *= 0xff51afd7ed558ccdull; k ^= k >> 33; k *= 0xc4ceb9fe1a85ec53ull; k ^= k >> 33;
    return k;
}

static int h_grow(suffix_drafter *d) {
    size_t nc = d->hcap ? d->hcap * 2 : 1024;
    int64_t *nk = st_malloc(nc * sizeof(int64_t));
    int32_t *nv = st_malloc(nc * sizeof(int32_t));
    if (!nk || !nv) { st_free(nk); st_free(nv); return -1; }
    for (size_t i = 0; i < nc; i++) nk[i] = -1;
    for (size_t i = 0; i < d->hcap; i++) {
        if (d->hkey[i] < 0) continue;
        size_t j = mix((uint64_t)d->hkey[i]) & (nc - 1);
        while (nk[j] >= 0) j = (j + 1) & (nc - 1);
        nk[j] = d->hkey[i]; nv[j] = d->hval[i];
    }
    st_free(d->hkey); st_free(d->hval);
    d->hkey = nk; d->hval = nv; d->hcap = nc;
    return 0;
}

static inline int64_t h_key(int state, int32_t tok) { return ((int64_t)state << 32) | (uint32_t)tok; }

/* edge index of (state, tok) or -1 */
static int h_find(const suffix_drafter *d, int state, int32_t tok) {
    if (!d->hcap) return -1;
    int64_t k = h_key(state, tok);
    size_t j = mix((uint64_t)k) & (d->hcap - 1);
    while (d->hkey[j] >= 0) {
        if (d->hkey[j] == k) return d->hval[j];
        j = (j + 1) & (d->hcap - 1);
    }
    return -1;
}

static int add_edge(suffix_drafter *d, int state, int32_t tok, int target) {
    if ((d->hused + 1) * 2 > d->hcap && h_grow(d)) return -1;
    if (d->n_ed == d->cap_ed) {
        int nc = d->cap_ed ? d->cap_ed * 2 : 1024;
        sa_edge *ne = st_realloc(d->ed, (size_t)nc * sizeof(sa_edge));
        if (!ne) return -1;
        d->ed = ne; d->cap_ed = nc;
    }
    int e = d->n_ed++;
    d->ed[e] = (sa_edge){ tok, target, d->st[state].edges };
    d->st[state].edges = e;
    int64_t k = h_key(state, tok);
    size_t j = mix((uint64_t)k) & (d->hcap - 1);
    while (d->hkey[j] >= 0) j = (j + 1) & (d->hcap - 1);
    d->hkey[j] = k; d->hval[j] = e; d->hused++;
    return 0;
}

static int new_state(suffix_drafter *d, int len, int link, int first_end) {
    if (d->n_st == d->cap_st) {
        int nc = d->cap_st ? d->cap_st * 2 : 1024;
        sa_state *ns = st_realloc(d->st, (size_t)nc * sizeof(sa_state));
        if (!ns) return -1;
        d->st = ns; d->cap_st = nc;
    }
    d->st[d->n_st] = (sa_state){ len, link, first_end, -1 };
    return d->n_st++;
}

suffix_drafter *suffix_drafter_new(void) {
    suffix_drafter *d = st_calloc(1, sizeof *d);
    if (!d) return NULL;
    suffix_drafter_reset(d);
    if (d->oom) { suffix_drafter_free(d); return NULL; }
    return d;
}

void suffix_drafter_free(suffix_drafter *d) {
    if (!d) return;
    st_free(d->st); st_free(d->ed); st_free(d->hkey); st_free(d->hval); st_free(d->seq);
    st_free(d);
}

void suffix_drafter_reset(suffix_drafter *d) {
    d->n_st = 0; d->n_ed = 0; d->n_seq = 0; d->hused = 0; d->oom = 0;
    for (size_t i = 0; i < d->hcap; i++) d->hkey[i] = -1;
    d->last = new_state(d, 0, -1, -1);
    if (d->last < 0) d->oom = 1;
}

int suffix_drafter_len(const suffix_drafter *d) { return d->n_seq; }

int suffix_drafter_push(suffix_drafter *d, int32_t tok) {
    if (d->oom) return -1;
    if (d->n_seq == d->cap_seq) {
        int nc = d->cap_seq ? d->cap_seq * 2 : 1024;
        int32_t *ns = st_realloc(d->seq, (size_t)nc * sizeof(int32_t));
        if (!ns) goto oom;
        d->seq = ns; d->cap_seq = nc;
    }
    int pos = d->n_seq;
    d->seq[d->n_seq++] = tok;
    int cur = new_state(d, d->st[d->last].len + 1, 0, pos);
    if (cur < 0) goto oom;
    int p = d->last, e;
    while (p >= 0 && (e = h_find(d, p, tok)) < 0) {
        if (add_edge(d, p, tok, cur)) goto oom;
        p = d->st[p].link;
    }
    if (p < 0) d->st[cur].link = 0;
    else {
        int q = d->ed[e].target;
        if (d->st[p].len + 1 == d->st[q].len) d->st[cur].link = q;
        else {
            int cl = new_state(d, d->st[p].len + 1, d->st[q].link, d->st[q].first_end);
            if (cl < 0) goto oom;
            for (int qe = d->st[q].edges; qe >= 0; qe = d->ed[qe].next)
                if (add_edge(d, cl, d->ed[qe].tok, d->ed[qe].target)) goto oom;
            while (p >= 0 && (e = h_find(d, p, tok)) >= 0 && d->ed[e].target == q) {
                d->ed[e].target = cl;
                p = d->st[p].link;
            }
            d->st[q].link = cl;
            d->st[cur].link = cl;
        }
    }
    d->last = cur;
    return 0;
oom:
    d->oom = 1;
    return -1;
}

int suffix_drafter_match(const suffix_drafter *d, int *first_end) {
    *first_end = -1;
    if (d->oom || d->n_seq == 0) return 0;
    int l = d->st[d->last].link;
    if (l <= 0) return 0;
    *first_end = d->st[l].first_end;
    return d->st[l].len;
}

int suffix_drafter_draft(const suffix_drafter *d, int min_match, int max_n, int32_t *out) {
    int fe;
    int len = suffix_drafter_match(d, &fe);
    if (len < (min_match > 1 ? min_match : 1)) return 0;
    /* the tokens after the first occurrence; where they run into the end of the sequence the
     * match overlaps its own continuation (a repeating stretch of period n_seq - 1 - fe), and
     * the draft goes on repeating that period */
    const int period = d->n_seq - 1 - fe;
    int n = 0;
    for (; n < max_n; n++) out[n] = fe + 1 + n < d->n_seq ? d->seq[fe + 1 + n] : out[n - period];
    return n;
}
