/* Streaming text for the HTTP server: a growable byte buffer, UTF-8 helpers, the stop-string
 * filter that holds back partial matches, and SSE framing. Pure code (no model, no sockets), so
 * tests/test_server.c covers it without a model.
 *
 * Data flow of one streamed reply:
 *   token id -> strata_detok_push (complete UTF-8 only) -> stop_filter_push (holds back a tail
 *   that could still become a stop string, or an incomplete UTF-8 sequence) -> text delta ->
 *   JSON chunk (openai.c) -> sse_append_event -> socket. */
#ifndef STRATA_SERVER_STREAM_H
#define STRATA_SERVER_STREAM_H
#include <stddef.h>
#include <stdarg.h>

/* ---- growable byte buffer ---------------------------------------------------------------
 * p[0..len) is the content, always NUL-terminated when p != NULL. An allocation failure sets
 * oom and later appends become no-ops, so callers check once at the end instead of per call. */
typedef struct sbuf { char *p; size_t len, cap; int oom; } sbuf;
void sbuf_init(sbuf *b);
void sbuf_free(sbuf *b);
void sbuf_clear(sbuf *b);                       /* len = 0, keeps the allocation */
void sbuf_append(sbuf *b, const char *s, size_t n);
void sbuf_puts(sbuf *b, const char *s);
void sbuf_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sbuf_consume(sbuf *b, size_t n);           /* drop the first n bytes */

/* ---- UTF-8 -------------------------------------------------------------------------------
 * Length of a trailing sequence that is a valid but incomplete start of a character
 * (e.g. "\xE2\x82" = the first two bytes of U+20AC): 0..3. Such a tail must be held back
 * until the next token completes it. */
size_t utf8_incomplete_tail(const char *s, size_t n);
/* Append s to out, replacing every invalid sequence with U+FFFD (EF BF BD), so that the
 * result is valid UTF-8 (jansson refuses invalid strings, and clients expect valid text). */
void utf8_append_sanitized(sbuf *out, const char *s, size_t n);
/* 1 if s[0..n) is valid UTF-8. */
int utf8_valid(const char *s, size_t n);

/* ---- stop strings ------------------------------------------------------------------------
 * Text arrives piece by piece (one token at a time). Emitted text never contains a stop
 * string nor anything after it; a tail that is a prefix of a stop string is held back until
 * it is either completed (stop) or contradicted (emitted). A stop string may be split across
 * any number of tokens. */
#define STOP_FILTER_MAX 8
typedef struct stop_filter {
    const char *stops[STOP_FILTER_MAX];     /* borrowed; non-empty strings */
    size_t stop_len[STOP_FILTER_MAX];
    int n_stops;
    sbuf hold;                              /* bytes received but not yet emitted */
    int stopped;                            /* a stop string matched: everything after is dropped */
} stop_filter;
void stop_filter_init(stop_filter *f, char *const *stops, int n_stops);
void stop_filter_free(stop_filter *f);
/* Feed bytes; appends the text that is now safe to emit to out (sanitized UTF-8).
 * Returns 1 once a stop string has matched (then and afterwards), else 0. */
int  stop_filter_push(stop_filter *f, const char *s, size_t n, sbuf *out);
/* End of generation: emit what is held back (an incomplete UTF-8 tail becomes U+FFFD). */
void stop_filter_flush(stop_filter *f, sbuf *out);

/* ---- server-sent events -------------------------------------------------------------------
 * One event: every line of data prefixed "data: ", closed by an empty line. OpenAI sends
 * compact JSON (one line), so a chunk is "data: {...}\n\n"; the stream ends "data: [DONE]\n\n". */
void sse_append_event(sbuf *out, const char *data, size_t n);
void sse_append_done(sbuf *out);
#endif
