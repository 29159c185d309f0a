/* Constrained output: a GBNF-like grammar compiled to a pushdown automaton over Unicode code
 * points (read from UTF-8 bytes), and token masks checked against every token's bytes.
 *
 *   grammar        the compiled rules (immutable; any number of matchers may share it)
 *   grammar_vocab  the vocabulary as a byte trie (immutable; one per model)
 *   grammar_match  one generation's matcher: the set of live stacks, the stack arena, and a
 *                  per-state cache of token masks
 *
 * Grammar text (llama.cpp's GBNF dialect, reimplemented):
 *   rule ::= alternative | alternative ...      one rule per line; "root" is the start
 *   "literal" (escapes \n \t \r \\ \" \xNN \uNNNN \UNNNNNNNN), [a-z0-9_] and [^...] classes,
 *   . (any character), rule names, ( groups ), postfix * + ? {m} {m,} {m,n}, # comments.
 * Newlines end a rule except inside parentheses and after '|'. Left recursion is refused.
 *
 * Stacks are interned cons cells (position, parent), so a state is a small set of ids and the
 * same state reached again has the same ids: the mask cache is keyed by them (after cutting each
 * stack below the depth one token can reach). A rule reference
 * in tail position does not grow the stack, so repetitions (x*) run in constant space. */
#ifndef STRATA_GRAMMAR_H
#define STRATA_GRAMMAR_H
#include <stddef.h>
#include <stdint.h>

typedef struct grammar grammar;
typedef struct grammar_vocab grammar_vocab;
typedef struct grammar_match grammar_match;

/* Parse grammar text; the start rule is `root`. NULL with a message (line number) in err. */
grammar *grammar_parse(const char *text, char *err, size_t errlen);
void grammar_free(grammar *g);
int grammar_n_rules(const grammar *g);

/* JSON schema (a JSON text) -> grammar text (malloc'ed), or NULL with err. schema NULL: any
 * JSON object (response_format json_object). Supported: type (string, number, integer,
 * boolean, null, object, array, or a list of them), properties / required /
 * additionalProperties (false or absent: only the listed properties; true or a schema: others
 * too), items, prefixItems, minItems / maxItems, enum, const, anyOf / oneOf, allOf of one,
 * $ref to #/$defs/... or #/definitions/..., minLength / maxLength of strings, format
 * (ignored). Properties come in the order the schema lists them: required ones always,
 * optional ones may be left out. */
char *json_schema_to_grammar(const char *schema_json, char *err, size_t errlen);
/* The rules that every schema's rules use (ws, string, number, value, object, ...). */
const char *json_grammar_common(void);
/* Only the schema's own rules, named PREFIX...; its start rule is PREFIXroot. Several schemas
 * (one per tool) then share one grammar with json_grammar_common() once. */
char *json_schema_to_rules(const char *schema_json, const char *prefix, char *err, size_t errlen);

/* The vocabulary: token i has bytes tok(i); allowed(i) = 0 for tokens that never appear in
 * constrained text (control tokens); eog(i) = 1 for end-of-generation tokens, allowed only
 * where the grammar is complete. */
typedef struct grammar_vocab_src {
    int n_vocab;
    const char *(*bytes)(void *user, int32_t id, size_t *len);
    int (*is_text)(void *user, int32_t id);
    int (*is_eog)(void *user, int32_t id);
    void *user;
} grammar_vocab_src;
grammar_vocab *grammar_vocab_new(const grammar_vocab_src *src);
void grammar_vocab_free(grammar_vocab *v);

grammar_match *grammar_match_new(const grammar *g, const grammar_vocab *v);
void grammar_match_free(grammar_match *m);
/* Feed the bytes of text (tests, prefilled output). 0, or -1 when they leave the grammar (the
 * state is then unchanged). */
int grammar_match_bytes(grammar_match *m, const char *s, size_t n);
/* Accept a generated token: 0, or -1 when the grammar does not allow it (state unchanged). */
int grammar_match_token(grammar_match *m, int32_t id);
/* The grammar is complete here (an end-of-generation token is allowed). */
int grammar_match_can_end(const grammar_match *m);
/* Nothing but the end can follow. */
int grammar_match_must_end(const grammar_match *m);
/* Allowed tokens in the current state as a bitmap (n_vocab bits, LSB first in each byte);
 * computed once per distinct state and cached. NULL when out of memory. */
const uint8_t *grammar_match_mask(grammar_match *m);
/* Compute the current state's mask now (counted as grammar_match_mask counts it) and keep it for
 * the next grammar_match_mask call, which then returns it without counting: the caller computes
 * it ahead, e.g. on another thread while nothing else touches m. Taking a token drops it.
 * Returns the mask (NULL out of memory). */
const uint8_t *grammar_match_prepare(grammar_match *m);
/* Masks are cached per canonical state (the stacks cut where one token's bytes cannot reach);
 * 0 keys them by the full state (tests: the masks must not differ). */
void grammar_match_set_canonical(grammar_match *m, int on);
/* logits[i] = -inf for every token the grammar does not allow now. 0, -1 out of memory. */
int grammar_match_apply(grammar_match *m, float *logits);
/* counters: masks computed, masks served from the cache, seconds spent computing */
void grammar_match_stats(const grammar_match *m, long *computed, long *cached, double *seconds);
#endif
