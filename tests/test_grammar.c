/* Constrained output (src/grammar): the GBNF parser and its errors, acceptance of byte strings,
 * token masks against a brute-force check of every token, and JSON schemas: random sampling
 * under the mask (random logits over a synthetic vocabulary that splits UTF-8 characters and
 * holds multi-character tokens) must always end in JSON that jansson parses and that a small
 * validator written here (independently of the grammar generator) accepts. No model needed. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "test.h"
#include "core/util.h"
#include "grammar/grammar.h"
#include "grammar/grammar_model.h"
#include <time.h>

/* CPU seconds of the calling thread: what a parse costs, whatever else the machine runs */
static double thread_cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- a synthetic vocabulary ---------------------------------------------------------------- */
#define MAXV 512
static char *g_tok[MAXV];
static int g_nv, g_eog;

static void add_tok(const char *s, size_t n) {
    g_tok[g_nv] = malloc(n + 1);
    memcpy(g_tok[g_nv], s, n);
    g_tok[g_nv][n] = 0;
    g_nv++;
}
static const char *vb(void *u, int32_t id, size_t *len) { (void)u; *len = id == g_eog ? 0 : strlen(g_tok[id]); return g_tok[id]; }
static int vtext(void *u, int32_t id) { (void)u; return id != g_eog; }
static int veog(void *u, int32_t id) { (void)u; return id == g_eog; }

static grammar_vocab *make_vocab(void) {
    if (g_nv) goto built;
    for (int c = 1; c < 128; c++) { char b = (char)c; add_tok(&b, 1); }
    static const char *multi[] = { "\"", "\":", "\": ", "{\"", "\"}", "\",", "\", \"", "true", "false", "null", "nu",
                                   "ll", "na", "name", "age", "tags", "\"name\"", "\"age\"", " {", "[\"", "\"]", "12",
                                   "345", "0.", "-1", "e+", "\\n", "\\\"", "\\u00", "  ", "\n  ", ",\n", "}\n",
                                   "Par", "is", "caf\xc3\xa9", "\xc3", "\xa9", "\xe4\xb8\xad", "\xe4\xb8", "\xad",
                                   "\xf0\x9f\x98\x80", "\xf0\x9f", "\x98\x80", "ok", "yes", "no", "red", "green", "blue",
                                   "\"red\"", "\"green\"", "id", "items", "}}", "]]", "},{", "],", ":[", ":{", "\t" };
    for (size_t i = 0; i < sizeof multi / sizeof multi[0]; i++) add_tok(multi[i], strlen(multi[i]));
    add_tok("a", 1);                       /* a duplicate of an existing token's bytes */
    g_eog = g_nv;
    add_tok("<eos>", 5);
built:;
    grammar_vocab_src src = { g_nv, vb, vtext, veog, NULL };
    return grammar_vocab_new(&src);
}

/* ---- grammar text ------------------------------------------------------------------------------ */
static int accepts(const char *gtext, const char *s, int complete) {
    char err[256];
    grammar *g = grammar_parse(gtext, err, sizeof err);
    if (!g) { fprintf(stderr, "  parse: %s\n", err); return -1; }
    grammar_vocab_src src = { g_nv, vb, vtext, veog, NULL };
    grammar_vocab *v = grammar_vocab_new(&src);
    grammar_match *m = grammar_match_new(g, v);
    int ok = grammar_match_bytes(m, s, strlen(s)) == 0 && (!complete || grammar_match_can_end(m));
    grammar_match_free(m);
    grammar_vocab_free(v);
    grammar_free(g);
    return ok;
}

static void test_parse_errors(void) {
    static const struct { const char *text, *msg; } bad[] = {
        { "root ::= foo", "rule 'foo' is used but not defined" },
        { "root ::= \"a", "unterminated string literal" },
        { "root ::= [a-", "unexpected end of grammar" },
        { "root ::= [ab", "unterminated character class" },
        { "root ::= [z-a]", "character range out of order" },
        { "root ::= (\"a\"", "expected ')'" },
        { "root ::= \"a\")", "unbalanced ')'" },
        { "root ::= * \"a\"", "repetition without an item" },
        { "root ::= \"a\"{3,1}", "n < m" },
        { "root ::= root \"a\" | \"b\"", "left-recursive" },
        { "root ::= x\nx ::= y? x \"a\"\ny ::= \"b\"", "left-recursive" },
        { "a ::= \"x\"", "no 'root' rule" },
        { "root ::= \"a\"\nroot ::= \"b\"", "defined twice" },
        { "root ::= \"\\q\"", "unknown escape" },
        { "root := \"a\"", "expected '::='" },
    };
    /* limits a grammar from a request must respect: nesting, size, reference chains */
    char *deep = malloc(400000);
    strcpy(deep, "root ::= ");
    memset(deep + 9, '(', 50000);
    strcpy(deep + 50009, "\"a\"");
    char err[256] = "";
    grammar *gd = grammar_parse(deep, err, sizeof err);
    CHECKF(!gd && strstr(err, "groups nest too deeply"), "%s", err);
    grammar_free(gd);
    size_t o = (size_t)sprintf(deep, "root ::=");
    for (int i = 0; i < 200; i++) o += (size_t)sprintf(deep + o, " [a]{0,10000}");
    gd = grammar_parse(deep, err, sizeof err);
    CHECKF(!gd && strstr(err, "grammar too large"), "%s", err);
    grammar_free(gd);
    o = (size_t)sprintf(deep, "root ::= r0 \"x\"\n");
    for (int i = 0; i < 3000; i++) o += (size_t)sprintf(deep + o, "r%d ::= r%d\n", i, i + 1);
    sprintf(deep + o, "r3000 ::= \"y\"\n");
    gd = grammar_parse(deep, err, sizeof err);
    CHECKF(!gd && strstr(err, "too deeply"), "%s", err);
    grammar_free(gd);
    /* many named rules parse quickly (names are hashed). The time is this thread's CPU time, which
     * other processes' load does not inflate (wall time did), over 50,000 rules: hashed lookups take
     * 25 ms (-O2; 2026-12-01), a linear scan of the names (1.25e9 comparisons) takes seconds, so
     * the 0.5 s bound is 20x above the one and far below the other (4,000 rules took 2 ms, and a
     * linear scan of them about as long as the old wall-clock bound allowed) */
    free(deep);
    deep = malloc(50000 * 32 + 64);
    o = (size_t)sprintf(deep, "root ::= r0\n");
    for (int i = 0; i < 50000; i++) o += (size_t)sprintf(deep + o, "r%d ::= \"a\" r%d | \"b\"\n", i, i + 1);
    sprintf(deep + o, "r50000 ::= \"c\"\n");
    double c0 = thread_cpu_seconds();
    gd = grammar_parse(deep, err, sizeof err);
    double dc = thread_cpu_seconds() - c0;
    CHECKF(gd && grammar_n_rules(gd) == 50002 && dc < 0.5, "%s (%.3f s of CPU)", gd ? "slow" : err, dc);
    grammar_free(gd);
    free(deep);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char err[256] = "";
        grammar *g = grammar_parse(bad[i].text, err, sizeof err);
        CHECKF(!g && strstr(err, bad[i].msg), "\"%s\": got \"%s\"", bad[i].text, err);
        grammar_free(g);
    }
}

static void test_accept(void) {
    const char *abc = "root ::= \"a\" b* (\"c\" | \"d\")+ e? # comment\nb ::= [0-9]\ne ::= [^x-z] \"!\"";
    CHECK(accepts(abc, "ac", 1) == 1);
    CHECK(accepts(abc, "a123cdc", 1) == 1);
    CHECK(accepts(abc, "a1c?!", 1) == 1);
    CHECK(accepts(abc, "a1cy!", 1) == 0);
    CHECK(accepts(abc, "a", 1) == 0);
    CHECK(accepts(abc, "a", 0) == 1);             /* a live prefix */
    CHECK(accepts(abc, "b", 0) == 0);
    CHECK(accepts("root ::= \"ab\"{2,3}", "abab", 1) == 1);
    CHECK(accepts("root ::= \"ab\"{2,3}", "ababab", 1) == 1);
    CHECK(accepts("root ::= \"ab\"{2,3}", "abababab", 0) == 0);
    CHECK(accepts("root ::= \"ab\"{2,3}", "ab", 1) == 0);
    CHECK(accepts("root ::= [a]{2,}", "aaaaaaa", 1) == 1);
    CHECK(accepts("root ::= x\nx ::= \"(\" x \")\" | \"\"", "((()))", 1) == 1);   /* nesting */
    CHECK(accepts("root ::= x\nx ::= \"(\" x \")\" | \"\"", "(()", 1) == 0);
    CHECK(accepts("root ::= \"a\"\n  | \"b\"", "b", 1) == 1);                      /* continued rule */
    CHECK(accepts("root ::= (\n  \"a\"\n  \"b\"\n)", "ab", 1) == 1);
    CHECK(accepts("root ::= [\\u00e0-\\u00ff]+ \"\\x21\"", "caf", 0) == 0);
    CHECK(accepts("root ::= [\\u00e0-\\u00ff]+ \"\\x21\"", "\xc3\xa9\xc3\xa0!", 1) == 1);
    CHECK(accepts("root ::= .+", "\xe4\xb8\xad\xf0\x9f\x98\x80", 1) == 1);
    CHECK(accepts("root ::= \"\xe4\xb8\xad\"", "\xe4\xb8", 0) == 1);                 /* partial character */
    CHECK(accepts("root ::= \"\xe4\xb8\xad\"", "\xe4\xb9", 0) == 0);
    CHECK(accepts("root ::= [a-z]", "\xff", 0) == 0);                                /* invalid UTF-8 */
    /* overlong forms, surrogates and code points past U+10FFFF never match (a byte-level model
     * could spell 'c' as C1 A3 or E0 81 A3, which decodes to U+FFFD, not 'c') */
    CHECK(accepts("root ::= \"c\"", "\xc1\xa3", 0) == 0);
    CHECK(accepts("root ::= \"c\"", "\xe0\x81\xa3", 0) == 0);
    CHECK(accepts("root ::= .", "\xe0\x81", 0) == 0);
    CHECK(accepts("root ::= .", "\xed\xa0\x80", 0) == 0);
    CHECK(accepts("root ::= .", "\xf4\x90\x80\x80", 0) == 0);
    CHECK(accepts("root ::= .", "\xf4\x8f\xbf\xbf", 1) == 1);
    CHECK(accepts("root ::= .", "\xe0\xa0\x80", 1) == 1);
    /* a lead byte alone is alive only if a character of its length can follow */
    CHECK(accepts("root ::= \"{\"", "\xf0", 0) == 0);
    CHECK(accepts("root ::= \"{\"", "\xe0", 0) == 0);
    CHECK(accepts("root ::= [\\u0800-\\u0fff]", "\xe0", 0) == 1);
    CHECK(accepts("root ::= [\\u0800-\\u0fff]", "\xf0", 0) == 0);
    /* long repetition runs in constant space: the same state again and again */
    char *big = malloc(200001);
    memset(big, 'a', 200000);
    big[200000] = 0;
    CHECK(accepts("root ::= [a]*", big, 1) == 1);
    free(big);
}

/* ---- masks ---------------------------------------------------------------------------------------- */
static uint64_t rng_state = 0x1234;
static double urand(void) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) * 0x1.0p-53;
}

/* Sample under the mask: random "logits", the best allowed token each step; checks the mask of
 * every step against a brute-force try of every token on a fresh matcher fed the same prefix
 * (every check_every steps). Returns the text (malloc'ed) or NULL when generation got stuck. */
static char *sample_text(const grammar *g, const grammar_vocab *v, int max_steps, int check_every, int *mask_bad) {
    grammar_match *m = grammar_match_new(g, v);
    size_t cap = 4096, n = 0;
    char *out = malloc(cap);
    out[0] = 0;
    float logits[MAXV];
    for (int step = 0; step < max_steps; step++) {
        /* later steps favour closing tokens, so every sample ends within the budget */
        for (int i = 0; i < g_nv; i++)
            logits[i] = (float)urand() + (i == g_eog ? 0.3f : 0) +
                        (step > 30 && strpbrk(g_tok[i], "\"}]") ? (float)(step - 30) / 20 : 0);
        const uint8_t *mask = grammar_match_mask(m);
        if (check_every && step % check_every == 0) {
            for (int i = 0; i < g_nv; i++) {
                grammar_match *b = grammar_match_new(g, v);
                int ok = grammar_match_bytes(b, out, n) == 0 && grammar_match_token(b, i) == 0;
                if (ok != ((mask[i >> 3] >> (i & 7)) & 1)) {
                    (*mask_bad)++;
                    if (*mask_bad < 5) fprintf(stderr, "  mask differs at \"%s\" token %d \"%s\": brute %d\n", out, i, g_tok[i], ok);
                }
                grammar_match_free(b);
            }
        }
        grammar_match_apply(m, logits);
        int best = -1;
        for (int i = 0; i < g_nv; i++) if (logits[i] > -1e30f && (best < 0 || logits[i] > logits[best])) best = i;
        if (best < 0) { free(out); grammar_match_free(m); return NULL; }
        if (grammar_match_token(m, best) != 0) { free(out); grammar_match_free(m); return NULL; }
        if (best == g_eog) break;
        size_t l = strlen(g_tok[best]);
        if (n + l + 1 > cap) { cap *= 2; out = realloc(out, cap); }
        memcpy(out + n, g_tok[best], l + 1);
        n += l;
    }
    int done = grammar_match_can_end(m);
    grammar_match_free(m);
    if (!done) { free(out); return NULL; }
    return out;
}

/* ---- an independent validator for the schema subset ------------------------------------------ */
static int validate(json_t *x, json_t *s, json_t *root);

static int type_ok(json_t *x, const char *t) {
    if (!strcmp(t, "object")) return json_is_object(x);
    if (!strcmp(t, "array")) return json_is_array(x);
    if (!strcmp(t, "string")) return json_is_string(x);
    if (!strcmp(t, "integer")) return json_is_integer(x);
    if (!strcmp(t, "number")) return json_is_number(x);
    if (!strcmp(t, "boolean")) return json_is_boolean(x);
    if (!strcmp(t, "null")) return json_is_null(x);
    return 0;
}

static size_t utf8_chars(const char *s) {
    size_t n = 0;
    for (; *s; s++) n += ((unsigned char)*s & 0xc0) != 0x80;
    return n;
}

static int validate(json_t *x, json_t *s, json_t *root) {
    json_t *ref = json_object_get(s, "$ref");
    if (ref) return validate(x, json_object_get(json_object_get(root, "$defs"), json_string_value(ref) + 8), root);
    json_t *e = json_object_get(s, "enum");
    if (e) {
        size_t i; json_t *v; int found = 0;
        json_array_foreach(e, i, v) found |= json_equal(v, x);
        if (!found) return 0;
    }
    if (json_object_get(s, "const") && !json_equal(json_object_get(s, "const"), x)) return 0;
    json_t *any = json_object_get(s, "anyOf");
    if (any) {
        size_t i; json_t *v; int ok = 0;
        json_array_foreach(any, i, v) ok |= validate(x, v, root);
        if (!ok) return 0;
    }
    json_t *t = json_object_get(s, "type");
    if (json_is_string(t) && !type_ok(x, json_string_value(t))) return 0;
    if (json_is_array(t)) {
        size_t i; json_t *v; int ok = 0;
        json_array_foreach(t, i, v) ok |= type_ok(x, json_string_value(v));
        if (!ok) return 0;
    }
    if (json_is_object(x)) {
        json_t *props = json_object_get(s, "properties"), *req = json_object_get(s, "required");
        json_t *addl = json_object_get(s, "additionalProperties");
        size_t i; json_t *v;
        json_array_foreach(req, i, v) if (!json_object_get(x, json_string_value(v))) return 0;
        const char *k;
        json_object_foreach(x, k, v) {
            json_t *ps = props ? json_object_get(props, k) : NULL;
            if (ps) { if (!validate(v, ps, root)) return 0; }
            else if (addl && json_is_false(addl)) return 0;
            else if (props && !addl) return 0;     /* the grammar's reading: only listed properties */
        }
    }
    if (json_is_array(x)) {
        json_t *items = json_object_get(s, "items"), *mn = json_object_get(s, "minItems"), *mx = json_object_get(s, "maxItems");
        if (mn && (long long)json_array_size(x) < json_integer_value(mn)) return 0;
        if (mx && (long long)json_array_size(x) > json_integer_value(mx)) return 0;
        size_t i; json_t *v;
        if (json_is_object(items)) json_array_foreach(x, i, v) if (!validate(v, items, root)) return 0;
    }
    if (json_is_string(x)) {
        json_t *mn = json_object_get(s, "minLength"), *mx = json_object_get(s, "maxLength");
        size_t n = utf8_chars(json_string_value(x));
        if (mn && (long long)n < json_integer_value(mn)) return 0;
        if (mx && (long long)n > json_integer_value(mx)) return 0;
    }
    return 1;
}

static const char *const SCHEMAS[] = {
    "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},\"age\":{\"type\":\"integer\"}},"
    "\"required\":[\"name\",\"age\"]}",
    "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\",\"maxLength\":12},\"unit\":{\"enum\":[\"c\",\"f\"]},"
    "\"days\":{\"type\":\"integer\"}},\"required\":[\"city\"],\"additionalProperties\":false}",
    "{\"type\":\"array\",\"items\":{\"type\":\"number\"},\"minItems\":2,\"maxItems\":4}",
    "{\"type\":\"object\",\"properties\":{\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"minLength\":1}}, "
    "\"ok\":{\"type\":\"boolean\"},\"note\":{\"type\":[\"string\",\"null\"]}},\"required\":[\"ok\"]}",
    "{\"anyOf\":[{\"type\":\"object\",\"properties\":{\"red\":{\"const\":1}},\"required\":[\"red\"]},{\"type\":\"array\","
    "\"items\":{\"$ref\":\"#/$defs/color\"},\"maxItems\":3}],\"$defs\":{\"color\":{\"enum\":[\"red\",\"green\",\"blue\"]}}}",
    "{\"type\":\"object\",\"properties\":{\"node\":{\"$ref\":\"#/$defs/tree\"}},\"required\":[\"node\"],"
    "\"$defs\":{\"tree\":{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"integer\"},\"items\":{\"type\":\"array\","
    "\"items\":{\"$ref\":\"#/$defs/tree\"},\"maxItems\":2}},\"required\":[\"id\"]}}}",
    NULL /* json_object: any object */
};

static void test_schemas(void) {
    grammar_vocab *v = make_vocab();
    CHECK(v != NULL);
    int total = 0, parsed = 0, valid = 0, stuck = 0, mask_bad = 0, n_schemas = (int)(sizeof SCHEMAS / sizeof SCHEMAS[0]);
    long computed = 0, cached = 0;
    for (int si = 0; si < n_schemas; si++) {
        char err[256];
        char *gt = json_schema_to_grammar(SCHEMAS[si], err, sizeof err);
        CHECKF(gt != NULL, "schema %d: %s", si, err);
        if (!gt) continue;
        grammar *g = grammar_parse(gt, err, sizeof err);
        CHECKF(g != NULL, "schema %d grammar: %s\n%s", si, err, gt);
        if (!g) { st_free(gt); continue; }
        json_t *schema = SCHEMAS[si] ? json_loads(SCHEMAS[si], 0, NULL) : json_pack("{s:s}", "type", "object");
        for (int k = 0; k < 40; k++) {
            char *txt = sample_text(g, v, 400, k < 3 ? 7 : 0, &mask_bad);
            total++;
            if (!txt) { stuck++; continue; }
            json_error_t je;
            json_t *x = json_loads(txt, 0, &je);
            if (x) {
                parsed++;
                if (validate(x, schema, schema)) valid++;
                else fprintf(stderr, "  schema %d: invalid instance %s\n", si, txt);
            } else fprintf(stderr, "  schema %d: not JSON (%s): %s\n", si, je.text, txt);
            if (k == 0) fprintf(stderr, "  schema %d sample: %.160s\n", si, txt);
            json_decref(x);
            free(txt);
        }
        json_decref(schema);
        grammar_free(g);
        st_free(gt);
    }
    (void)computed; (void)cached;
    fprintf(stderr, "  %d samples: %d parsed, %d valid, %d stuck; mask mismatches %d\n", total, parsed, valid, stuck, mask_bad);
    CHECK_EQ_INT(mask_bad, 0);
    CHECK_EQ_INT(stuck, 0);
    CHECK_EQ_INT(parsed, total);
    CHECK_EQ_INT(valid, total);
    grammar_vocab_free(v);
}

static void test_schema_errors(void) {
    static const struct { const char *s, *msg; } bad[] = {
        { "{\"type\":\"string\",\"pattern\":\"^a$\"}", "'pattern' is not supported" },
        { "{\"type\":\"integer\",\"minimum\":3}", "'minimum' is not supported" },
        { "{\"type\":\"strnig\"}", "unknown type 'strnig'" },
        { "{\"$ref\":\"#/$defs/missing\"}", "points nowhere" },
        { "{\"$ref\":\"http://x/y\"}", "is not supported" },
        { "{\"type\":\"object\",\"properties\":{\"a\":{}},\"required\":[\"b\"]}", "required property 'b'" },
        { "{\"type\":\"array\",\"minItems\":3,\"maxItems\":1}", "maxItems < minItems" },
        { "[1,2]", "must be an object" },
        { "{\"type\":", "invalid JSON" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char err[256] = "";
        char *g = json_schema_to_grammar(bad[i].s, err, sizeof err);
        CHECKF(!g && strstr(err, bad[i].msg), "%s: got \"%s\"", bad[i].s, err);
        st_free(g);
    }
    /* a few exact acceptances of the generated grammar */
    char err[256];
    char *gt = json_schema_to_grammar(SCHEMAS[0], err, sizeof err);
    CHECK(accepts(gt, "{\"name\": \"Ann\", \"age\": 31}", 1) == 1);
    CHECK(accepts(gt, "{\"name\":\"A\\u00e9\\n\",\"age\":-0}", 1) == 1);
    CHECK(accepts(gt, "{\n  \"name\": \"x\",\n  \"age\": 1\n}", 1) == 1);
    CHECK(accepts(gt, "{\"age\": 31, \"name\": \"Ann\"}", 0) == 0);      /* order of properties */
    CHECK(accepts(gt, "{\"name\": \"Ann\"}", 1) == 0);                     /* required age */
    CHECK(accepts(gt, "{\"name\": \"Ann\", \"age\": 3.5}", 0) == 0);       /* integer */
    CHECK(accepts(gt, "{\"name\": \"A\x01\"", 0) == 0);                    /* control character */
    CHECK(accepts(gt, "{\"name\": \"Ann\", \"age\": 31, \"x\": 1}", 0) == 0);
    st_free(gt);
    gt = json_schema_to_grammar(NULL, err, sizeof err);
    CHECK(accepts(gt, "{\"a\": [1, 2.5e-3, true, null, {\"b\": \"c\"}], \"d\": {}}", 1) == 1);
    CHECK(accepts(gt, "[1]", 0) == 0);                                    /* json_object: an object */
    CHECK(accepts(gt, "{\"a\": 01}", 0) == 0);
    CHECK(accepts(gt, "{\"a\": 1,}", 0) == 0);
    st_free(gt);
}

/* the mask cache: a long string keeps one state, so masks are served from the cache */
static void test_mask_cache(void) {
    grammar_vocab *v = make_vocab();
    char err[256];
    grammar *g = grammar_parse("root ::= \"\\\"\" [a-z ]* \"\\\"\"", err, sizeof err);
    grammar_match *m = grammar_match_new(g, v);
    int ok = 1;
    for (int i = 0; i < 200 && ok; i++) {
        ok = grammar_match_mask(m) != NULL;
        ok = ok && grammar_match_bytes(m, i == 0 ? "\"" : "a", 1) == 0;
    }
    long computed, cached;
    grammar_match_stats(m, &computed, &cached, NULL);
    CHECK(ok);
    CHECKF(computed == 2 && cached == 198, "computed %ld cached %ld", computed, cached);
    grammar_match_free(m);
    grammar_free(g);
    grammar_vocab_free(v);
}

/* The real vocabulary (SmolLM2's byte-level BPE: single bytes, partial UTF-8 characters, long
 * tokens): random walks through the mask must never find it empty before the grammar can end,
 * every token the mask allows must be accepted, and every document that reaches the end must
 * parse and validate. Caught a lead byte alone (F0) counted as viable before '{'. */
static strata_model *load_vocab(const char *model) {
    strata_model_params mp = strata_model_default_params();
    mp.path = model;
    mp.vocab_only = 1;
    strata_model *m;
    char err[512];
    if (strata_model_load(&mp, &m, err, sizeof err)) { CHECKF(0, "%s", err); return NULL; }
    return m;
}

static void test_real_vocab(const char *model) {
    strata_model *m = load_vocab(model);
    if (!m) return;
    char err[512];
    const char *schema = "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"maxLength\":12},"
                         "\"age\":{\"type\":\"integer\"},\"tags\":{\"type\":\"array\",\"items\":{\"enum\":[\"a\",\"b\\u00e9\"]},"
                         "\"maxItems\":3},\"note\":{\"type\":[\"string\",\"null\"],\"maxLength\":8}},\"required\":[\"name\",\"age\"]}";
    grammar *g = grammar_from_options(NULL, schema, 0, err, sizeof err);
    grammar_vocab *v = grammar_vocab_for_model(m);
    CHECK(g && v);
    json_t *js = json_loads(schema, 0, NULL);
    int nv = strata_n_vocab(m), empty = 0, rejected = 0, ended = 0, valid = 0;
    uint32_t *allowed = malloc((size_t)nv * sizeof *allowed);
    double t0 = now_seconds();
    for (int run = 0; run < 60 && g && v; run++) {
        grammar_match *gm = grammar_match_new(g, v);
        char text[4096];
        size_t tl = 0;
        for (int step = 0; step < 300; step++) {
            const uint8_t *mask = grammar_match_mask(gm);
            int cnt = 0;
            for (int i = 0; i < nv; i++) if (mask[i >> 3] >> (i & 7) & 1) allowed[cnt++] = (uint32_t)i;
            if (cnt == 0) { empty++; break; }
            /* random picks, leaning to the end (end-of-generation tokens and closers) after a while */
            int id = (int)allowed[(int)(urand() * cnt)];
            if (step > 40)
                for (int k = 0; k < cnt; k++) {
                    size_t l;
                    const char *b = strata_token_text(m, (int32_t)allowed[k], &l);
                    if (strata_token_is_eog(m, (int32_t)allowed[k]) || (l == 1 && strchr("\"]}", b[0]))) { id = (int)allowed[k]; break; }
                }
            if (strata_token_is_eog(m, id)) {
                ended++;
                text[tl] = 0;
                json_t *x = json_loads(text, 0, NULL);
                if (x && validate(x, js, js)) valid++;
                else fprintf(stderr, "  real vocabulary: invalid document %s\n", text);
                json_decref(x);
                break;
            }
            if (grammar_match_token(gm, id)) { rejected++; break; }
            size_t l;
            const char *b = strata_token_text(m, id, &l);
            if (tl + l < sizeof text) { memcpy(text + tl, b, l); tl += l; }
        }
        grammar_match_free(gm);
    }
    fprintf(stderr, "  real vocabulary: %d documents ended, %d valid, %d empty masks, %d rejected tokens (%.2f s)\n",
            ended, valid, empty, rejected, now_seconds() - t0);
    CHECK_EQ_INT(empty, 0);
    CHECK_EQ_INT(rejected, 0);
    CHECK(ended >= 50);
    CHECK_EQ_INT(valid, ended);
    free(allowed);
    json_decref(js);
    grammar_vocab_free(v);
    grammar_free(g);
    strata_model_free(m);
}

/* Masks keyed by canonical states (stacks cut below the reach of one token) are the masks of the
 * full states: random walks through the bench schema of bench/grammar_bench.sh (an array of
 * eight objects with length-bounded strings) and a GBNF grammar with nesting, two matchers fed
 * the same tokens, one with canonical keys and one without, masks compared at every step; the
 * canonical one must serve masks from its cache where the other cannot. */
static void test_canonical_masks(const char *model) {
    strata_model *m = load_vocab(model);
    if (!m) return;
    char err[512];
    const char *schema = "{\"type\":\"object\",\"properties\":{\"scientists\":{\"type\":\"array\",\"minItems\":8,\"maxItems\":8,"
        "\"items\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"maxLength\":40},\"field\":{\"type\":\"string\","
        "\"maxLength\":40},\"born\":{\"type\":\"integer\"}},\"required\":[\"name\",\"field\",\"born\"]}}},\"required\":[\"scientists\"]}";
    const char *gbnf = "root ::= item (\",\" item){5}\nitem ::= \"(\" [a-z]{0,12} (\" \" item)? \")\" | [0-9]+\n";
    grammar *gs[2] = { grammar_from_options(NULL, schema, 0, err, sizeof err), grammar_parse(gbnf, err, sizeof err) };
    grammar_vocab *v = grammar_vocab_for_model(m);
    CHECK(gs[0] && gs[1] && v);
    int nv = strata_n_vocab(m), differ = 0, steps = 0;
    uint32_t *allowed = malloc((size_t)nv * sizeof *allowed);
    long hits = 0, plain_hits = 0;
    for (int run = 0; run < 8 && gs[0] && gs[1] && v; run++) {
        grammar_match *a = grammar_match_new(gs[run & 1], v), *b = grammar_match_new(gs[run & 1], v);
        grammar_match_set_canonical(b, 0);
        for (int step = 0; step < 150; step++) {
            const uint8_t *ma = grammar_match_mask(a), *mb = grammar_match_mask(b);
            if (!ma || !mb) { differ++; break; }
            steps++;
            if (memcmp(ma, mb, ((size_t)nv + 7) / 8)) { differ++; break; }
            int cnt = 0;
            for (int i = 0; i < nv; i++) if (ma[i >> 3] >> (i & 7) & 1) allowed[cnt++] = (uint32_t)i;
            if (cnt == 0) break;
            int id = (int)allowed[(int)(urand() * cnt)];
            if (strata_token_is_eog(m, id)) break;
            if (grammar_match_token(a, id) || grammar_match_token(b, id)) { differ++; break; }
        }
        long c, h;
        grammar_match_stats(a, &c, &h, NULL);
        hits += h;
        grammar_match_stats(b, &c, &h, NULL);
        plain_hits += h;
        grammar_match_free(a);
        grammar_match_free(b);
    }
    /* deep stacks: k frames that each end with one '-', then 'x'; SmolLM2's 64-dash token is
     * allowed exactly when k >= 64, and frames below the 81 bytes of its longest token are cut */
    grammar *gd = grammar_parse("root ::= unit \"x\"\nunit ::= \"(\" unit? \"-\"\n", err, sizeof err);
    CHECK(gd != NULL);
    for (int k = 40; k <= 100 && gd && v; k += 3) {
        grammar_match *a = grammar_match_new(gd, v), *b = grammar_match_new(gd, v);
        grammar_match_set_canonical(b, 0);
        for (int i = 0; i < k; i++) { grammar_match_bytes(a, "(", 1); grammar_match_bytes(b, "(", 1); }
        const uint8_t *ma = grammar_match_mask(a), *mb = grammar_match_mask(b);
        steps++;
        if (!ma || !mb || memcmp(ma, mb, ((size_t)nv + 7) / 8)) { differ++; fprintf(stderr, "  %d frames: masks differ\n", k); }
        grammar_match_free(a);
        grammar_match_free(b);
    }
    grammar_free(gd);
    fprintf(stderr, "  canonical masks: %d steps, %ld from the cache (full-state keys: %ld)\n", steps, hits, plain_hits);
    CHECK_EQ_INT(differ, 0);
    CHECK(steps >= 600);
    CHECKF(hits > plain_hits, "canonical cache hits %ld, full-state %ld", hits, plain_hits);
    free(allowed);
    grammar_vocab_free(v);
    grammar_free(gs[0]);
    grammar_free(gs[1]);
    strata_model_free(m);
}

int main(void) {
    grammar_vocab *v = make_vocab();   /* fills g_tok for accepts() */
    grammar_vocab_free(v);
    RUN(test_parse_errors);
    RUN(test_accept);
    RUN(test_schema_errors);
    RUN(test_mask_cache);
    RUN(test_schemas);
    const char *model = getenv("STRATA_MODEL");
    if (model && *model) {
        RUN_ARG(test_real_vocab, model);
        RUN_ARG(test_canonical_masks, model);
    } else SKIP("model", "test_real_vocab, test_canonical_masks: STRATA_MODEL is not set");
    for (int i = 0; i < g_nv; i++) free(g_tok[i]);
    TEST_DONE();
}
