/* Streaming text helpers of the HTTP server: see stream.h. */
#include "server/stream.h"
#include <stdio.h>
#include <string.h>
#include "core/util.h"

/* ---- sbuf ---------------------------------------------------------------------------------- */
void sbuf_init(sbuf *b) { b->p = NULL; b->len = b->cap = 0; b->oom = 0; }
void sbuf_free(sbuf *b) { st_free(b->p); sbuf_init(b); }
void sbuf_clear(sbuf *b) { b->len = 0; if (b->p) b->p[0] = 0; }

static int sbuf_reserve(sbuf *b, size_t extra) {
    if (b->oom) return -1;
    if (b->len + extra + 1 <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + extra + 1) {
        if (cap > ((size_t)-1) / 2) { b->oom = 1; return -1; }
        cap *= 2;
    }
    char *p = st_realloc(b->p, cap);
    if (!p) { b->oom = 1; return -1; }
    b->p = p; b->cap = cap;
    return 0;
}

void sbuf_append(sbuf *b, const char *s, size_t n) {
    if (sbuf_reserve(b, n)) return;
    if (n) memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}
void sbuf_puts(sbuf *b, const char *s) { sbuf_append(b, s, strlen(s)); }

void sbuf_printf(sbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof small) { sbuf_append(b, small, (size_t)n); return; }
    if (sbuf_reserve(b, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void sbuf_consume(sbuf *b, size_t n) {
    if (n >= b->len) { sbuf_clear(b); return; }
    memmove(b->p, b->p + n, b->len - n);
    b->len -= n;
    b->p[b->len] = 0;
}

/* ---- UTF-8 --------------------------------------------------------------------------------
 * Well-formed sequences (Unicode table 3-7):
 *   00..7F
 *   C2..DF 80..BF
 *   E0 A0..BF 80..BF | E1..EC 80..BF x2 | ED 80..9F 80..BF | EE..EF 80..BF x2
 *   F0 90..BF 80..BF x2 | F1..F3 80..BF x3 | F4 80..8F 80..BF x2
 * utf8_seq_len: total length announced by a lead byte (0: not a lead byte). */
static int utf8_seq_len(unsigned char c) {
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) return 2;
    if (c >= 0xE0 && c <= 0xEF) return 3;
    if (c >= 0xF0 && c <= 0xF4) return 4;
    return 0;
}
/* Is b a valid byte at position i (1..3) of the sequence led by lead? */
static int utf8_cont_ok(unsigned char lead, int i, unsigned char b) {
    if ((b & 0xC0) != 0x80) return 0;
    if (i != 1) return 1;
    if (lead == 0xE0) return b >= 0xA0;
    if (lead == 0xED) return b <= 0x9F;
    if (lead == 0xF0) return b >= 0x90;
    if (lead == 0xF4) return b <= 0x8F;
    return 1;
}
/* Length of the valid sequence at s (<= n), or 0 if invalid; *incomplete = 1 when the bytes
 * are a valid prefix that runs past n. */
static int utf8_seq_at(const unsigned char *s, size_t n, int *incomplete) {
    *incomplete = 0;
    int len = utf8_seq_len(s[0]);
    if (len == 0) return 0;
    for (int i = 1; i < len; i++) {
        if ((size_t)i >= n) { *incomplete = 1; return 0; }
        if (!utf8_cont_ok(s[0], i, s[i])) return 0;
    }
    return len;
}

size_t utf8_incomplete_tail(const char *str, size_t n) {
    const unsigned char *s = (const unsigned char *)str;
    /* the last lead byte is at most 3 bytes back */
    for (size_t back = 1; back <= 3 && back <= n; back++) {
        unsigned char c = s[n - back];
        if ((c & 0xC0) == 0x80) continue;           /* continuation: keep looking */
        int inc;
        int len = utf8_seq_at(s + n - back, back, &inc);
        (void)len;
        return inc ? back : 0;
    }
    return 0;
}

void utf8_append_sanitized(sbuf *out, const char *str, size_t n) {
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0, run = 0;   /* s[run..i) is valid and not yet copied */
    while (i < n) {
        int inc, len = utf8_seq_at(s + i, n - i, &inc);
        if (len > 0) { i += (size_t)len; continue; }
        sbuf_append(out, str + run, i - run);
        sbuf_append(out, "\xEF\xBF\xBD", 3);
        i++;
        /* skip the continuation bytes of a broken sequence: one U+FFFD per maximal subpart */
        while (i < n && (s[i] & 0xC0) == 0x80 && !inc) i++;
        if (inc) i = n;
        run = i;
    }
    sbuf_append(out, str + run, n - run);
}

int utf8_valid(const char *str, size_t n) {
    const unsigned char *s = (const unsigned char *)str;
    for (size_t i = 0; i < n;) {
        int inc, len = utf8_seq_at(s + i, n - i, &inc);
        if (len <= 0) return 0;
        i += (size_t)len;
    }
    return 1;
}

/* ---- stop filter --------------------------------------------------------------------------- */
void stop_filter_init(stop_filter *f, char *const *stops, int n_stops) {
    memset(f, 0, sizeof *f);
    sbuf_init(&f->hold);
    for (int i = 0; i < n_stops && f->n_stops < STOP_FILTER_MAX; i++) {
        if (!stops[i] || !stops[i][0]) continue;   /* an empty stop string would match at once */
        f->stops[f->n_stops] = stops[i];
        f->stop_len[f->n_stops] = strlen(stops[i]);
        f->n_stops++;
    }
}
void stop_filter_free(stop_filter *f) { sbuf_free(&f->hold); }

/* Longest k < stop length such that the last k bytes of h are the first k bytes of a stop. */
static size_t stop_partial_tail(const stop_filter *f, const char *h, size_t n) {
    size_t best = 0;
    for (int s = 0; s < f->n_stops; s++) {
        size_t max = f->stop_len[s] - 1;
        if (max > n) max = n;
        for (size_t k = max; k > best; k--)
            if (!memcmp(h + n - k, f->stops[s], k)) { best = k; break; }
    }
    return best;
}

int stop_filter_push(stop_filter *f, const char *s, size_t n, sbuf *out) {
    if (f->stopped) return 1;
    sbuf_append(&f->hold, s, n);
    if (f->hold.oom) return 0;
    const char *h = f->hold.p ? f->hold.p : "";
    size_t len = f->hold.len;
    /* earliest complete match of any stop string */
    size_t cut = len + 1;
    for (int i = 0; i < f->n_stops; i++) {
        const char *m = memmem(h, len, f->stops[i], f->stop_len[i]);
        if (m && (size_t)(m - h) < cut) cut = (size_t)(m - h);
    }
    if (cut <= len) {
        utf8_append_sanitized(out, h, cut);
        sbuf_clear(&f->hold);
        f->stopped = 1;
        return 1;
    }
    size_t keep = stop_partial_tail(f, h, len);
    size_t tail = utf8_incomplete_tail(h, len);
    if (tail > keep) keep = tail;
    utf8_append_sanitized(out, h, len - keep);
    sbuf_consume(&f->hold, len - keep);
    return 0;
}

void stop_filter_flush(stop_filter *f, sbuf *out) {
    if (!f->stopped && f->hold.len) utf8_append_sanitized(out, f->hold.p, f->hold.len);
    sbuf_clear(&f->hold);
}

/* ---- SSE ------------------------------------------------------------------------------------ */
void sse_append_event(sbuf *out, const char *data, size_t n) {
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || data[i] == '\n') {
            size_t e = i;
            if (e > start && data[e - 1] == '\r') e--;
            sbuf_puts(out, "data: ");
            sbuf_append(out, data + start, e - start);
            sbuf_puts(out, "\n");
            start = i + 1;
        }
    }
    sbuf_puts(out, "\n");
}
void sse_append_done(sbuf *out) { sbuf_puts(out, "data: [DONE]\n\n"); }
