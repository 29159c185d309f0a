/* Streaming decode: tokens -> UTF-8 text that never ends inside a character.
 *
 * Token bytes are appended to what is pending from the previous token. Complete, valid
 * characters are written out; a valid but incomplete character at the end (at most 3 bytes)
 * stays pending; bytes that cannot form a character are written as one U+FFFD (EF BF BD) per
 * maximal invalid subpart (as Python's errors="replace" does), so the output is always valid
 * UTF-8. */
#include <string.h>
#include "tokenizer/tok_internal.h"
#include "tokenizer/unicode.h"

void detok_init(detok_state *d) { memset(d, 0, sizeof *d); }

int detok_max_out(const tokenizer *t, int32_t id) {
    size_t len = 0;
    tokenizer_token_bytes(t, id, &len);
    return (int)(3 * (len + 4) + 1);
}

/* Length of the longest prefix of p[0..n) that a valid UTF-8 sequence could start with,
 * when that sequence is not complete within it (1 when p[0] cannot start anything, or when
 * the sequence is broken after its lead byte). */
static int utf8_partial_len(const uint8_t *p, int n) {
    int k = utf8_seq_len(p[0]);
    if (k <= 1) return 1;
    int i = 1;
    for (; i < n && i < k; i++) {
        if ((p[i] & 0xC0) != 0x80) break;
        /* second-byte limits that rule out overlongs, surrogates and values > U+10FFFF */
        if (i == 1 && ((p[0] == 0xE0 && p[1] < 0xA0) || (p[0] == 0xED && p[1] > 0x9F) ||
                       (p[0] == 0xF0 && p[1] < 0x90) || (p[0] == 0xF4 && p[1] > 0x8F))) break;
    }
    return i;
}

/* Is p[0..n) a valid UTF-8 sequence that is only missing its last bytes? */
static int utf8_incomplete(const uint8_t *p, int n) {
    int k = utf8_seq_len(p[0]);
    return k > n && utf8_partial_len(p, n) == n;
}

/* Write p[from..n) (out NULL: only count) as valid UTF-8, starting at from and stopping at `stop` (characters that
 * start before stop). With keep_tail, an incomplete character reaching the end of p is left
 * unwritten; the return value is bytes written and *next the first byte not consumed. */
static int emit(const uint8_t *p, int n, int from, int stop, int keep_tail, char *out, int *next) {
    int o = 0, i = from;
    while (i < stop) {
        int len;
        uint32_t cp = utf8_decode(p + i, (size_t)(n - i), &len);
        if (cp < UNICODE_INVALID_BASE) { if (out) memcpy(out + o, p + i, (size_t)len); o += len; i += len; continue; }
        if (keep_tail && utf8_incomplete(p + i, n - i)) break;
        if (out) memcpy(out + o, "\xEF\xBF\xBD", 3);
        o += 3;
        i += utf8_partial_len(p + i, n - i);
    }
    *next = i;
    return o;
}

/* out NULL: count the bytes only (d is still updated: callers pass a copy) */
static int push(const uint8_t *tok, size_t len, detok_state *d, char *out) {
    int np = d->n_pending, o = 0, next;
    size_t used = 0;
    if (np > 0) {
        /* the pending character needs at most 3 more bytes: decide it on a small buffer */
        uint8_t head[8];
        int extra = len < 3 ? (int)len : 3;
        memcpy(head, d->pending, (size_t)np);
        memcpy(head + np, tok, (size_t)extra);
        int hn = np + extra;
        o = emit(head, hn, 0, np, (size_t)extra == len, out, &next);
        if (next < np) {                 /* still incomplete and the token is used up */
            memmove(d->pending, head + next, (size_t)(hn - next));
            d->n_pending = hn - next;
            return o;
        }
        used = (size_t)(next - np);
    }
    o += emit(tok, (int)len, (int)used, (int)len, 1, out ? out + o : NULL, &next);
    d->n_pending = (int)len - next;
    memcpy(d->pending, tok + next, (size_t)d->n_pending);
    return o;
}

int detok_push(const tokenizer *t, detok_state *d, int32_t id, char *out, int cap) {
    size_t len = 0;
    const uint8_t *tok = (const uint8_t *)tokenizer_token_bytes(t, id, &len);
    if (!tok) return 0;
    if (d->n_pending < 0 || d->n_pending > 3) d->n_pending = 0;   /* foreign state: start over */
    if (cap < detok_max_out(t, id)) {     /* a small buffer may still do: count exactly first */
        detok_state copy = *d;
        if (push(tok, len, &copy, NULL) > cap) return -1;
    }
    return push(tok, len, d, out);
}

int detok_flush(detok_state *d, char *out, int cap) {
    if (d->n_pending < 0 || d->n_pending > 3) d->n_pending = 0;
    if (cap < 3 * d->n_pending) return -1;
    int next;
    int o = emit((const uint8_t *)d->pending, d->n_pending, 0, d->n_pending, 0, out, &next);
    d->n_pending = 0;
    return o;
}
