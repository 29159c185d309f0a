/* libFuzzer target: constrained output (src/grammar) on arbitrary grammar text or JSON schemas,
 * and the matcher on arbitrary bytes.
 *
 * Input layout: the first byte picks the mode (even: GBNF text, odd: a JSON schema); the rest up
 * to the first NUL is the grammar or schema; what follows the NUL is fed to the matcher as bytes
 * (without a NUL, the grammar text itself is fed). The vocabulary is the 255 single bytes plus a
 * few multi-byte tokens, so masks are computed over a real trie.
 *
 * Oracles: no crash/leak/UB; a NULL result carries a message; the matcher either accepts each
 * byte or leaves its state unchanged; every token a mask allows is accepted by the matcher. The
 * parser's limits (nesting, size, reference chains) keep stack and memory bounded. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "grammar/grammar.h"
#include "core/util.h"

#define FUZZ_ASSERT(c) do { if (!(c)) { fprintf(stderr, "fuzz_grammar: assertion failed: %s (line %d)\n", #c, __LINE__); abort(); } } while (0)

static const char *const multi[] = { "{\"", "\":", "\"}", "true", "null", "\xc3\xa9", "\xe4\xb8", "ab", "  ", "\n" };
#define NV (256 + (int)(sizeof multi / sizeof multi[0]))

static const char *tok(void *u, int32_t id, size_t *len) {
    static char bytes[256];
    (void)u;
    if (id >= 256) { *len = strlen(multi[id - 256]); return multi[id - 256]; }
    bytes[id] = (char)id;
    *len = 1;
    return &bytes[id];
}
static int is_text(void *u, int32_t id) { (void)u; return id != 0; }
static int is_eog(void *u, int32_t id) { (void)u; return id == 0; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1 || size > 1 << 16) return 0;
    char *buf = malloc(size);
    memcpy(buf, data + 1, size - 1);
    buf[size - 1] = 0;
    const char *feed = buf;
    size_t feed_len = strlen(buf);
    if (feed_len < size - 1) { feed = buf + feed_len + 1; feed_len = size - 2 - feed_len; }   /* a NUL: bytes follow */
    char err[300] = "";
    grammar *g = NULL;
    if (data[0] & 1) {
        char *text = json_schema_to_grammar(buf, err, sizeof err);
        if (text) {
            g = grammar_parse(text, err, sizeof err);
            FUZZ_ASSERT(g != NULL);                 /* what the converter writes always parses */
            st_free(text);
        } else FUZZ_ASSERT(err[0]);
    } else {
        g = grammar_parse(buf, err, sizeof err);
        if (!g) FUZZ_ASSERT(err[0]);
    }
    if (g) {
        grammar_vocab_src src = { NV, tok, is_text, is_eog, NULL };
        grammar_vocab *v = grammar_vocab_new(&src);
        grammar_match *m = v ? grammar_match_new(g, v) : NULL;
        for (size_t i = 0; m && i < feed_len && i < 256; i++) {
            const uint8_t *mask = grammar_match_mask(m);
            if (mask && (i & 15) == 0) {
                /* every allowed token is accepted (checked on a fresh matcher fed the same prefix) */
                for (int id = 1; id < NV; id++) {
                    if (!(mask[id >> 3] >> (id & 7) & 1)) continue;
                    grammar_match *b = grammar_match_new(g, v);
                    FUZZ_ASSERT(b && grammar_match_bytes(b, feed, i) == 0 && grammar_match_token(b, id) == 0);
                    grammar_match_free(b);
                }
                FUZZ_ASSERT(((mask[0] & 1) != 0) == (grammar_match_can_end(m) != 0));
            }
            if (grammar_match_bytes(m, feed + i, 1) != 0) break;
        }
        grammar_match_free(m);
        grammar_vocab_free(v);
        grammar_free(g);
    }
    free(buf);
    return 0;
}
