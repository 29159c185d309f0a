/* GBNF-like grammars: parser, pushdown matcher over code points, token masks (grammar.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "grammar/grammar.h"
#include "core/util.h"

/* ---- compiled grammar -------------------------------------------------------------------
 * Elements in one flat array; each alternative is a run of elements ended by G_END. */
enum { G_END = 0, G_CHARS = 1, G_REF = 2 };
typedef struct { int32_t kind, v; } gel;
typedef struct { uint32_t *r; int n; int neg; } gcharset;   /* ranges lo, hi pairs (inclusive) */

struct grammar {
    gel *el; int n_el, cap_el;
    gcharset *cs; int n_cs, cap_cs;
    /* rule r: alternatives alt[ralt[r] .. ralt[r + 1]) hold element indices; rules are built
     * one at a time (nested groups first), so they are kept as lists and flattened at the end */
    int32_t *alt; int n_alt;
    int32_t *ralt;                 /* n_rules + 1 */
    /* per element: the fewest bytes that finish its alternative from it (itself included; a
     * character is at least one byte), capped at MINREST_INF: how far below the top of a stack
     * the bytes of one token can reach (canonical states, grammar_match_mask) */
    int32_t *minrest;
    int32_t *rmin;                 /* per rule: its shortest length in bytes (MINREST_INF: none) */
    char **names; int n_rules, cap_rules;
    int32_t **ralts; int *nralts;  /* while parsing: per rule its alternative starts */
    int root;
};

static void *grow(void *p, int *cap, int need, size_t elsz) {
    if (need <= *cap) return p;
    int c = *cap ? *cap : 16;
    while (c < need) c *= 2;
    void *q = st_realloc(p, (size_t)c * elsz);
    if (!q) return NULL;
    *cap = c;
    return q;
}

typedef struct {
    grammar *g;
    const char *s, *p;
    char *err; size_t errlen;
    int failed;
    /* the elements of the sequences being parsed (nested groups stack on top) */
    gel *tmp; int n_tmp, cap_tmp;
    int nest;                      /* open parentheses (bounded: the parser recurses) */
    int32_t *names; uint32_t nmask; int n_named;   /* named rules: hash of their names -> id */
} gparser;

/* Limits: a grammar from a request must not take the server's stack or memory. */
#define GRAMMAR_MAX_NEST 200       /* nested groups */
#define GRAMMAR_MAX_ELEMENTS (1 << 20)   /* elements after {m,n} expansion */
#define MATCH_MAX_STACKS 4096      /* live stacks in one state (a highly ambiguous grammar) */
#define MINREST_INF (1 << 24)

static int gp_fail(gparser *P, const char *msg) {
    if (!P->failed) {
        int line = 1;
        for (const char *q = P->s; q < P->p && *q; q++) line += *q == '\n';
        snprintf(P->err, P->errlen, "grammar line %d: %s", line, msg);
    }
    P->failed = 1;
    return -1;
}

static uint32_t name_hash(const char *s, size_t n) { return (uint32_t)fnv1a64(s, n); }

/* The rule called name (created on first use); named: look it up (the generated rules of groups
 * and repetitions are always new and never looked up). */
static int rule_id_ex(gparser *P, const char *name, size_t n, int named) {
    grammar *g = P->g;
    if (named) {
        if ((uint32_t)P->n_named * 2 >= P->nmask) {    /* grow the name table */
            uint32_t nm = P->nmask ? P->nmask * 2 + 1 : 255;
            int32_t *t = st_malloc(((size_t)nm + 1) * sizeof *t);
            if (!t) return gp_fail(P, "out of memory");
            for (uint32_t i = 0; i <= nm; i++) t[i] = -1;
            for (uint32_t i = 0; P->names && i <= P->nmask; i++) {
                if (P->names[i] < 0) continue;
                const char *q = g->names[P->names[i]];
                uint32_t h = name_hash(q, strlen(q)) & nm;
                while (t[h] >= 0) h = (h + 1) & nm;
                t[h] = P->names[i];
            }
            st_free(P->names);
            P->names = t;
            P->nmask = nm;
        }
        uint32_t h = name_hash(name, n) & P->nmask;
        for (; P->names[h] >= 0; h = (h + 1) & P->nmask) {
            const char *q = g->names[P->names[h]];
            if (strlen(q) == n && !memcmp(q, name, n)) return P->names[h];
        }
        P->names[h] = g->n_rules;      /* the id the rule gets below */
        P->n_named++;
    }
    int cap = g->cap_rules;
    char **nm = grow(g->names, &cap, g->n_rules + 1, sizeof *nm);
    if (!nm) return gp_fail(P, "out of memory");
    g->names = nm;
    cap = g->cap_rules;
    int32_t **ra = grow(g->ralts, &cap, g->n_rules + 1, sizeof *ra);
    if (!ra) return gp_fail(P, "out of memory");
    g->ralts = ra;
    cap = g->cap_rules;
    int *nr = grow(g->nralts, &cap, g->n_rules + 1, sizeof *nr);
    if (!nr) return gp_fail(P, "out of memory");
    g->nralts = nr;
    g->cap_rules = cap;
    char *c = st_malloc(n + 1);
    if (!c) return gp_fail(P, "out of memory");
    memcpy(c, name, n);
    c[n] = 0;
    g->names[g->n_rules] = c;
    g->ralts[g->n_rules] = NULL;
    g->nralts[g->n_rules] = -1;     /* -1: referenced, not defined yet */
    return g->n_rules++;
}

static int rule_id(gparser *P, const char *name, size_t n) { return rule_id_ex(P, name, n, 1); }

static int new_rule(gparser *P) {
    char nm[32];
    snprintf(nm, sizeof nm, "(group %d)", P->g->n_rules);
    return rule_id_ex(P, nm, strlen(nm), 0);
}

/* Store a sequence (elements tmp[from..n_tmp)) as a new alternative of rule r. */
static int add_alt(gparser *P, int r, int from) {
    grammar *g = P->g;
    if (g->n_el + (P->n_tmp - from) + 1 > GRAMMAR_MAX_ELEMENTS) return gp_fail(P, "grammar too large");
    int start = g->n_el, need = g->n_el + (P->n_tmp - from) + 1;
    gel *e = grow(g->el, &g->cap_el, need, sizeof *e);
    if (!e) return gp_fail(P, "out of memory");
    g->el = e;
    for (int i = from; i < P->n_tmp; i++) g->el[g->n_el++] = P->tmp[i];
    g->el[g->n_el++] = (gel){ G_END, 0 };
    int k = g->nralts[r] < 0 ? 0 : g->nralts[r];
    int32_t *a = st_realloc(g->ralts[r], (size_t)(k + 1) * sizeof *a);
    if (!a) return gp_fail(P, "out of memory");
    a[k] = start;
    g->ralts[r] = a;
    g->nralts[r] = k + 1;
    P->n_tmp = from;
    return 0;
}

static int push_tmp(gparser *P, gel e) {
    if (P->n_tmp >= GRAMMAR_MAX_ELEMENTS) return gp_fail(P, "grammar too large");
    gel *t = grow(P->tmp, &P->cap_tmp, P->n_tmp + 1, sizeof *t);
    if (!t) return gp_fail(P, "out of memory");
    P->tmp = t;
    P->tmp[P->n_tmp++] = e;
    return 0;
}

static int new_charset(gparser *P, const uint32_t *r, int n, int neg) {
    grammar *g = P->g;
    gcharset *c = grow(g->cs, &g->cap_cs, g->n_cs + 1, sizeof *c);
    if (!c) return gp_fail(P, "out of memory");
    g->cs = c;
    uint32_t *rr = st_malloc((size_t)(n ? n : 1) * 2 * sizeof *rr);
    if (!rr) return gp_fail(P, "out of memory");
    if (n) memcpy(rr, r, (size_t)n * 2 * sizeof *rr);
    g->cs[g->n_cs] = (gcharset){ rr, n, neg };
    return g->n_cs++;
}

static void skip_space(gparser *P, int newlines) {
    for (;;) {
        char c = *P->p;
        if (c == ' ' || c == '\t' || c == '\r' || (newlines && c == '\n')) P->p++;
        else if (c == '#') { while (*P->p && *P->p != '\n') P->p++; }
        else break;
    }
}

static int is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

static int hexv(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* One character of a literal or class: an escape or one UTF-8 character. -1 on error. */
static int64_t parse_char(gparser *P) {
    const unsigned char *p = (const unsigned char *)P->p;
    if (!*p) return gp_fail(P, "unexpected end of grammar");
    if (*p == '\\') {
        p++;
        int nhex = 0;
        uint32_t v;
        switch (*p) {
        case 'n': v = '\n'; break;
        case 't': v = '\t'; break;
        case 'r': v = '\r'; break;
        case '\\': case '"': case '[': case ']': case '-': case '^': case '/': case '\'': v = *p; break;
        case 'x': nhex = 2; break;
        case 'u': nhex = 4; break;
        case 'U': nhex = 8; break;
        default: return gp_fail(P, "unknown escape");
        }
        p++;
        if (nhex) {
            v = 0;
            for (int i = 0; i < nhex; i++, p++) {
                int h = hexv((char)*p);
                if (h < 0) return gp_fail(P, "bad hex escape");
                v = v * 16 + (uint32_t)h;
            }
        }
        P->p = (const char *)p;
        return v;
    }
    int len = *p < 0x80 ? 1 : (*p >> 5) == 6 ? 2 : (*p >> 4) == 14 ? 3 : (*p >> 3) == 30 ? 4 : 0;
    if (!len) return gp_fail(P, "invalid UTF-8 in grammar");
    uint32_t v = len == 1 ? *p : *p & (0x7f >> len);
    for (int i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80) return gp_fail(P, "invalid UTF-8 in grammar");
        v = v << 6 | (p[i] & 0x3f);
    }
    P->p += len;
    return v;
}

static int parse_alternates(gparser *P, int rule, int nested);

/* The element just pushed (tmp[n_tmp - 1]) repeated: * + ? {m,n} */
static int apply_repeat(gparser *P, int min, int max /* -1: unbounded */) {
    gel x = P->tmp[--P->n_tmp];
    for (int i = 0; i < min; i++) if (push_tmp(P, x)) return -1;
    if (max == min) return 0;
    int base = P->n_tmp;
    if (max < 0) {                      /* R ::= x R | (empty) */
        int r = new_rule(P);
        if (r < 0) return -1;
        if (push_tmp(P, x) || push_tmp(P, (gel){ G_REF, r }) || add_alt(P, r, base) || add_alt(P, r, base)) return -1;
        return push_tmp(P, (gel){ G_REF, r });
    }
    /* up to k more: R_k ::= x R_{k-1} | (empty), R_1 ::= x | (empty): no ambiguity */
    int prev = -1;
    for (int k = 1; k <= max - min; k++) {
        int r = new_rule(P);
        if (r < 0) return -1;
        if (push_tmp(P, x)) return -1;
        if (prev >= 0 && push_tmp(P, (gel){ G_REF, prev })) return -1;
        if (add_alt(P, r, base) || add_alt(P, r, base)) return -1;
        prev = r;
    }
    return push_tmp(P, (gel){ G_REF, prev });
}

static int parse_int(gparser *P) {
    int v = 0, any = 0;
    while (*P->p >= '0' && *P->p <= '9') { v = v * 10 + (*P->p++ - '0'); any = 1; if (v > 10000) return gp_fail(P, "repetition count too large"); }
    return any ? v : -2;
}

/* A sequence of items up to '|', ')' or the end of the rule. */
static int parse_sequence(gparser *P, int nested) {
    int last_start = -1;
    for (;;) {
        skip_space(P, nested);
        char c = *P->p;
        int start = P->n_tmp;
        if (c == '"') {
            P->p++;
            while (*P->p != '"') {
                if (!*P->p) return gp_fail(P, "unterminated string literal");
                int64_t ch = parse_char(P);
                if (ch < 0) return -1;
                uint32_t r[2] = { (uint32_t)ch, (uint32_t)ch };
                int cs = new_charset(P, r, 1, 0);
                if (cs < 0 || push_tmp(P, (gel){ G_CHARS, cs })) return -1;
            }
            P->p++;
            if (P->n_tmp == start) { last_start = -1; continue; }   /* "" */
            if (P->n_tmp - start > 1) {
                /* a repeat applies to the whole literal: make it a rule */
                const char *q = P->p;
                while (*q == ' ' || *q == '\t') q++;
                if (*q == '*' || *q == '+' || *q == '?' || *q == '{') {
                    int r = new_rule(P);
                    if (r < 0 || add_alt(P, r, start) || push_tmp(P, (gel){ G_REF, r })) return -1;
                }
            }
        } else if (c == '[') {
            P->p++;
            int neg = 0;
            if (*P->p == '^') { neg = 1; P->p++; }
            uint32_t *r = NULL;
            int nr = 0, cap = 0;
            while (*P->p != ']') {
                if (!*P->p) { st_free(r); return gp_fail(P, "unterminated character class"); }
                int64_t lo = parse_char(P), hi = lo;
                if (lo < 0) { st_free(r); return -1; }
                if (*P->p == '-' && P->p[1] != ']') {
                    P->p++;
                    hi = parse_char(P);
                    if (hi < 0) { st_free(r); return -1; }
                    if (hi < lo) { st_free(r); return gp_fail(P, "character range out of order"); }
                }
                uint32_t *nrr = grow(r, &cap, 2 * nr + 2, sizeof *r);
                if (!nrr) { st_free(r); return gp_fail(P, "out of memory"); }
                r = nrr;
                r[2 * nr] = (uint32_t)lo;
                r[2 * nr + 1] = (uint32_t)hi;
                nr++;
            }
            P->p++;
            int cs = new_charset(P, r, nr, neg);
            st_free(r);
            if (cs < 0 || push_tmp(P, (gel){ G_CHARS, cs })) return -1;
        } else if (c == '.') {
            P->p++;
            int cs = new_charset(P, NULL, 0, 1);
            if (cs < 0 || push_tmp(P, (gel){ G_CHARS, cs })) return -1;
        } else if (c == '(') {
            P->p++;
            if (++P->nest > GRAMMAR_MAX_NEST) return gp_fail(P, "groups nest too deeply");
            int r = new_rule(P);
            if (r < 0 || parse_alternates(P, r, 1)) return -1;
            P->nest--;
            skip_space(P, 1);
            if (*P->p != ')') return gp_fail(P, "expected ')'");
            P->p++;
            if (push_tmp(P, (gel){ G_REF, r })) return -1;
        } else if (is_name_char(c)) {
            const char *n0 = P->p;
            while (is_name_char(*P->p)) P->p++;
            /* a name followed by ::= starts the next rule */
            const char *q = P->p;
            while (*q == ' ' || *q == '\t') q++;
            if (!strncmp(q, "::=", 3)) { P->p = n0; return 0; }
            int r = rule_id(P, n0, (size_t)(P->p - n0));
            if (r < 0 || push_tmp(P, (gel){ G_REF, r })) return -1;
        } else if (c == '*' || c == '+' || c == '?' || c == '{') {
            if (last_start < 0 || P->n_tmp == 0) return gp_fail(P, "repetition without an item before it");
            P->p++;
            int mn = 0, mx = -1;
            if (c == '+') mn = 1;
            else if (c == '?') mx = 1;
            else if (c == '{') {
                skip_space(P, 0);
                mn = parse_int(P);
                if (mn < 0) return gp_fail(P, "expected a count after '{'");
                skip_space(P, 0);
                mx = mn;
                if (*P->p == ',') {
                    P->p++;
                    skip_space(P, 0);
                    mx = parse_int(P);
                    if (mx == -2) mx = -1;
                    else if (mx < mn) return gp_fail(P, "repetition {m,n} with n < m");
                }
                skip_space(P, 0);
                if (*P->p != '}') return gp_fail(P, "expected '}'");
                P->p++;
            }
            if (apply_repeat(P, mn, mx)) return -1;
            last_start = -1;
            continue;
        } else {
            return 0;   /* '|', ')', newline, end */
        }
        if (P->failed) return -1;
        last_start = start;
    }
}

static int parse_alternates(gparser *P, int rule, int nested) {
    for (;;) {
        int from = P->n_tmp;
        if (parse_sequence(P, nested) || add_alt(P, rule, from)) return -1;
        skip_space(P, nested);
        if (*P->p == '|') { P->p++; skip_space(P, 1); continue; }
        if (!nested && *P->p == '\n') {
            /* a following line that starts with '|' continues the rule */
            const char *save = P->p;
            skip_space(P, 1);
            if (*P->p == '|') { P->p++; skip_space(P, 1); continue; }
            P->p = save;
        }
        return 0;
    }
}

/* left recursion: a rule that can reach itself without consuming a character */
static int nullable_fix(const grammar *g, uint8_t *nullable) {
    int changed = 1;
    memset(nullable, 0, (size_t)g->n_rules);
    while (changed) {
        changed = 0;
        for (int r = 0; r < g->n_rules; r++) {
            if (nullable[r]) continue;
            for (int a = g->ralt[r]; a < g->ralt[r + 1] && !nullable[r]; a++) {
                int ok = 1;
                for (int e = g->alt[a]; g->el[e].kind != G_END && ok; e++)
                    ok = g->el[e].kind == G_REF && nullable[g->el[e].v];
                if (ok) { nullable[r] = 1; changed = 1; }
            }
        }
    }
    return 0;
}

/* g->minrest: the rules' shortest lengths by relaxation (from "infinite": a rule with no finite
 * derivation keeps it), then each alternative's suffix sums, back to front. */
static int min_lengths(grammar *g) {
    int32_t *rmin = g->rmin = st_malloc((size_t)(g->n_rules ? g->n_rules : 1) * sizeof *rmin);
    g->minrest = st_malloc((size_t)(g->n_el ? g->n_el : 1) * sizeof *g->minrest);
    if (!rmin || !g->minrest) return -1;
    for (int r = 0; r < g->n_rules; r++) rmin[r] = MINREST_INF;
    for (int changed = 1; changed;) {
        changed = 0;
        for (int r = 0; r < g->n_rules; r++)
            for (int a = g->ralt[r]; a < g->ralt[r + 1]; a++) {
                int32_t len = 0;
                for (int e = g->alt[a]; g->el[e].kind != G_END && len < MINREST_INF; e++)
                    len += g->el[e].kind == G_CHARS ? 1 : rmin[g->el[e].v];
                if (len > MINREST_INF) len = MINREST_INF;
                if (len < rmin[r]) { rmin[r] = len; changed = 1; }
            }
    }
    int32_t acc = 0;
    for (int e = g->n_el - 1; e >= 0; e--) {
        if (g->el[e].kind == G_END) acc = 0;
        else {
            acc += g->el[e].kind == G_CHARS ? 1 : rmin[g->el[e].v];
            if (acc > MINREST_INF) acc = MINREST_INF;
        }
        g->minrest[e] = acc;
    }
    return 0;
}

/* 1: rule r can reach itself without consuming a character; 2: the chain of leading references
 * is too deep to follow (refused too: the check recurses). */
static int left_recursive(const grammar *g, int r, const uint8_t *nullable, uint8_t *state, int depth) {
    if (state[r] == 1) return 1;
    if (state[r] == 2) return 0;
    if (depth > 2000) return 2;
    state[r] = 1;
    for (int a = g->ralt[r]; a < g->ralt[r + 1]; a++)
        for (int e = g->alt[a]; g->el[e].kind == G_REF; e++) {
            int x = left_recursive(g, g->el[e].v, nullable, state, depth + 1);
            if (x) return x;
            if (!nullable[g->el[e].v]) break;
        }
    state[r] = 2;
    return 0;
}

grammar *grammar_parse(const char *text, char *err, size_t errlen) {
    gparser P = { 0 };
    P.g = st_calloc(1, sizeof *P.g);
    P.s = P.p = text ? text : "";
    P.err = err; P.errlen = errlen;
    if (!P.g) { snprintf(err, errlen, "out of memory"); return NULL; }
    grammar *g = P.g;
    for (;;) {
        skip_space(&P, 1);
        if (!*P.p) break;
        const char *n0 = P.p;
        while (is_name_char(*P.p)) P.p++;
        if (P.p == n0) { gp_fail(&P, "expected a rule name"); break; }
        size_t nl = (size_t)(P.p - n0);
        skip_space(&P, 0);
        if (strncmp(P.p, "::=", 3)) { gp_fail(&P, "expected '::='"); break; }
        P.p += 3;
        int r = rule_id(&P, n0, nl);
        if (r < 0) break;
        if (g->nralts[r] >= 0) { gp_fail(&P, "rule defined twice"); break; }
        g->nralts[r] = 0;
        skip_space(&P, 0);
        if (parse_alternates(&P, r, 0)) break;
        skip_space(&P, 0);
        if (*P.p && *P.p != '\n') { gp_fail(&P, *P.p == ')' ? "unbalanced ')'" : "unexpected character"); break; }
    }
    st_free(P.tmp);
    st_free(P.names);
    if (!P.failed) {
        g->root = -1;
        for (int i = 0; i < g->n_rules; i++) {
            if (g->nralts[i] < 0) { snprintf(err, errlen, "grammar: rule '%s' is used but not defined", g->names[i]); P.failed = 1; break; }
            if (!strcmp(g->names[i], "root")) g->root = i;
        }
        if (!P.failed && g->root < 0) { snprintf(err, errlen, "grammar: no 'root' rule"); P.failed = 1; }
    }
    if (!P.failed) {
        int total = 0;
        for (int i = 0; i < g->n_rules; i++) total += g->nralts[i];
        g->alt = st_malloc((size_t)(total ? total : 1) * sizeof *g->alt);
        g->ralt = st_malloc((size_t)(g->n_rules + 1) * sizeof *g->ralt);
        uint8_t *nullable = st_malloc((size_t)g->n_rules), *state = st_calloc((size_t)g->n_rules, 1);
        if (!g->alt || !g->ralt || !nullable || !state) { snprintf(err, errlen, "out of memory"); P.failed = 1; }
        else {
            int k = 0;
            for (int i = 0; i < g->n_rules; i++) {
                g->ralt[i] = k;
                for (int a = 0; a < g->nralts[i]; a++) g->alt[k++] = g->ralts[i][a];
            }
            g->ralt[g->n_rules] = k;
            g->n_alt = k;
            nullable_fix(g, nullable);
            if (min_lengths(g)) { snprintf(err, errlen, "out of memory"); P.failed = 1; }
            for (int i = 0; i < g->n_rules && !P.failed; i++) {
                int x = left_recursive(g, i, nullable, state, 0);
                if (x) {
                    if (x == 1) snprintf(err, errlen, "grammar: rule '%s' is left-recursive", g->names[i]);
                    else snprintf(err, errlen, "grammar: rules refer to each other too deeply before a character");
                    P.failed = 1;
                }
            }
        }
        st_free(nullable);
        st_free(state);
    }
    for (int i = 0; i < g->n_rules; i++) st_free(g->ralts[i]);
    st_free(g->ralts); st_free(g->nralts);
    g->ralts = NULL; g->nralts = NULL;
    if (P.failed) { grammar_free(g); return NULL; }
    return g;
}

void grammar_free(grammar *g) {
    if (!g) return;
    for (int i = 0; i < g->n_cs; i++) st_free(g->cs[i].r);
    for (int i = 0; i < g->n_rules; i++) st_free(g->names[i]);
    if (g->ralts) for (int i = 0; i < g->n_rules; i++) st_free(g->ralts[i]);
    st_free(g->ralts); st_free(g->nralts);
    st_free(g->el); st_free(g->cs); st_free(g->alt); st_free(g->ralt); st_free(g->names); st_free(g->minrest); st_free(g->rmin);
    st_free(g);
}

int grammar_n_rules(const grammar *g) { return g->n_rules; }

static int cs_match(const gcharset *c, uint32_t cp) {
    int in = 0;
    for (int i = 0; i < c->n && !in; i++) in = cp >= c->r[2 * i] && cp <= c->r[2 * i + 1];
    return in != c->neg;
}

/* Some code point in [lo, hi] matches (for a pending partial UTF-8 character). */
static int cs_intersects(const gcharset *c, uint32_t lo, uint32_t hi) {
    if (c->neg) {
        /* the complement of the ranges meets [lo, hi] unless the ranges cover it */
        uint32_t x = lo;
        for (int guard = 0; guard <= c->n; guard++) {
            int moved = 0;
            for (int i = 0; i < c->n; i++)
                if (x >= c->r[2 * i] && x <= c->r[2 * i + 1]) { if (c->r[2 * i + 1] >= hi) return 0; x = c->r[2 * i + 1] + 1; moved = 1; }
            if (!moved) return 1;
        }
        return 1;
    }
    for (int i = 0; i < c->n; i++)
        if (c->r[2 * i] <= hi && c->r[2 * i + 1] >= lo) return 1;
    return 0;
}

/* ---- vocabulary trie ----------------------------------------------------------------------- */
typedef struct { int32_t child, sibling, token; uint8_t byte; } tnode;
struct grammar_vocab {
    int n_vocab;
    tnode *node; int n_node;
    char **tok; uint32_t *tok_len;    /* bytes of each text token (NULL: not text) */
    int32_t *same;                    /* next id with the same bytes as this one (the trie keeps one), -1 */
    uint8_t *eog;
    int max_len;
    /* the trie in depth-first order without its root (what the mask walks): node i's byte, its
     * first token (-1: none; the rest through same), its depth (1 = a first byte) and the index
     * past its subtree */
    uint8_t *fbyte; int32_t *ftok, *fskip; uint16_t *fdepth; int n_flat;
};

/* v->f*: the linked trie flattened, children in byte order. */
static int flatten_trie(grammar_vocab *v) {
    int n = v->n_node - 1;
    v->fbyte = st_malloc((size_t)(n ? n : 1));
    v->ftok = st_malloc((size_t)(n ? n : 1) * sizeof *v->ftok);
    v->fskip = st_malloc((size_t)(n ? n : 1) * sizeof *v->fskip);
    v->fdepth = st_malloc((size_t)(n ? n : 1) * sizeof *v->fdepth);
    int32_t *stk = st_malloc((size_t)(v->max_len + 2) * sizeof *stk), *at = st_malloc((size_t)(v->max_len + 2) * sizeof *at);
    if (!v->fbyte || !v->ftok || !v->fskip || !v->fdepth || !stk || !at) { st_free(stk); st_free(at); return -1; }
    /* stk[d]: the node being visited at depth d (its children next), at[d]: its flat index */
    int d = 0, k = 0;
    stk[0] = v->node[0].child;
    while (d >= 0) {
        int t = stk[d];
        if (t < 0) {                  /* depth d done: close the parent's subtree */
            if (--d >= 0) { v->fskip[at[d]] = k; stk[d] = v->node[stk[d]].sibling; }
            continue;
        }
        v->fbyte[k] = v->node[t].byte;
        v->ftok[k] = v->node[t].token;
        v->fdepth[k] = (uint16_t)(d + 1);
        at[d] = k++;
        stk[++d] = v->node[t].child;
    }
    v->n_flat = k;
    st_free(stk); st_free(at);
    return 0;
}

grammar_vocab *grammar_vocab_new(const grammar_vocab_src *src) {
    grammar_vocab *v = st_calloc(1, sizeof *v);
    if (!v) return NULL;
    int n = src->n_vocab;
    v->n_vocab = n;
    v->tok = st_calloc((size_t)n, sizeof *v->tok);
    v->tok_len = st_calloc((size_t)n, sizeof *v->tok_len);
    v->eog = st_calloc((size_t)n, 1);
    v->same = st_malloc((size_t)n * sizeof *v->same);
    int cap = 1024;
    v->node = st_malloc((size_t)cap * sizeof *v->node);
    if (!v->tok || !v->tok_len || !v->eog || !v->same || !v->node) { grammar_vocab_free(v); return NULL; }
    for (int i = 0; i < n; i++) v->same[i] = -1;
    v->node[0] = (tnode){ -1, -1, -1, 0 };
    v->n_node = 1;
    for (int32_t id = 0; id < n; id++) {
        v->eog[id] = src->is_eog && src->is_eog(src->user, id);
        if (v->eog[id] || (src->is_text && !src->is_text(src->user, id))) continue;
        size_t len = 0;
        const char *b = src->bytes(src->user, id, &len);
        if (!b || len == 0 || len > 4096) continue;
        v->tok[id] = st_malloc(len);
        if (!v->tok[id]) { grammar_vocab_free(v); return NULL; }
        memcpy(v->tok[id], b, len);
        v->tok_len[id] = (uint32_t)len;
        if ((int)len > v->max_len) v->max_len = (int)len;
        int cur = 0;
        for (size_t i = 0; i < len; i++) {
            uint8_t c = (uint8_t)b[i];
            int k = v->node[cur].child, prev = -1;
            while (k >= 0 && v->node[k].byte < c) { prev = k; k = v->node[k].sibling; }
            if (k < 0 || v->node[k].byte != c) {
                if (v->n_node == cap) {
                    tnode *nn = st_realloc(v->node, (size_t)cap * 2 * sizeof *nn);
                    if (!nn) { grammar_vocab_free(v); return NULL; }
                    v->node = nn;
                    cap *= 2;
                }
                int nk = v->n_node++;
                v->node[nk] = (tnode){ -1, k, -1, c };
                if (prev < 0) v->node[cur].child = nk; else v->node[prev].sibling = nk;
                k = nk;
            }
            cur = k;
        }
        if (v->node[cur].token >= 0) v->same[id] = v->node[cur].token;   /* same bytes: chained */
        v->node[cur].token = id;
    }
    if (flatten_trie(v)) { grammar_vocab_free(v); return NULL; }
    return v;
}

void grammar_vocab_free(grammar_vocab *v) {
    if (!v) return;
    if (v->tok) for (int i = 0; i < v->n_vocab; i++) st_free(v->tok[i]);
    st_free(v->tok); st_free(v->tok_len); st_free(v->eog); st_free(v->same); st_free(v->node);
    st_free(v->fbyte); st_free(v->ftok); st_free(v->fskip); st_free(v->fdepth);
    st_free(v);
}

/* ---- matcher -------------------------------------------------------------------------------
 * A state: a set of stack ids (each the interned node of its top position) and whether the
 * grammar may be complete here (the empty stack). States are interned too, each with its
 * transitions by code point filled in lazily (a table for ASCII, a small hash map above) and its
 * token mask once computed: walking the vocabulary trie is then one lookup per character of a
 * trie path, and a state met again (inside a string, after each array element) costs nothing.
 * UTF-8 is assembled by the callers (the byte feed, the trie walk), so a character split over
 * tokens or trie levels creates no states; a pending partial character is "alive" when some
 * stack's class can still take a character of that prefix. */
typedef struct { int32_t *ids; int n, cap; int accept, beyond; } gstate;

/* The parent of a stack cut by canonical_state: whatever lies below is out of reach of one token's
 * bytes; reaching it (only ever at the last byte of the longest token) keeps a state alive. */
#define STACK_BEYOND (-3)

typedef struct { uint64_t sig; int32_t next; } cpent;   /* signature (0 = empty slot) -> state */

typedef struct {
    int32_t *ids; int n;
    int accept, beyond;
    uint64_t hash;
    int32_t canon;                 /* the canonical state for masks (canonical_state), -1 not yet */
    int32_t *next;                 /* [128] ASCII: -2 not computed, -1 dead, else a state */
    cpent *umap; uint32_t umask; int un;   /* above ASCII: by signature (cp_signature) */
    uint8_t *mask;                 /* allowed tokens, or NULL until asked for */
} gsrec;

/* A partial UTF-8 character: the bits so far, the bytes still to come, and what the next byte
 * may be (the second byte of E0, ED, F0, F4 is restricted: no overlong forms, surrogates or code
 * points past U+10FFFF). rem == 0: none pending. */
typedef struct { uint32_t cp; int rem, len; uint8_t lo, hi; } upend;

#define MASKS_MAX 1024             /* masks kept at once (n_vocab bits each); more start over */
#define STATES_MAX 200000          /* interned states; past this the transition tables start over */

struct grammar_match {
    const grammar *g;
    const grammar_vocab *v;
    /* interned stack nodes: (pos, parent) -> id */
    int32_t *npos, *npar; int n_nodes, cap_nodes;
    int32_t *hslot; uint32_t hmask;
    /* interned states */
    gsrec *st; int n_st, cap_st;
    int32_t *sslot; uint32_t smask;
    int32_t cur;
    upend pend;                    /* a character the last token left unfinished */
    uint8_t *pend_mask;            /* the mask computed with a character pending (not cached) */
    const uint8_t *prep_mask;      /* grammar_match_prepare's mask of the current state, or NULL */
    gstate tmp_a;
    int32_t *chain; int cap_chain; /* canonical_state's scratch: one stack's nodes */
    int32_t *wsid; upend *wpend;   /* the walk's state per trie depth (max_len + 1) */
    int canon_off;                 /* grammar_match_set_canonical(m, 0) */
    /* canonical positions (canon_pos): entries (signature hash, budget, position) */
    struct cpos { uint64_t h; int32_t b, pos; } *cpos; uint32_t cpmask; int n_cpos;
    int n_masks;
    long computed, cached;
    double t_mask;                 /* seconds spent computing masks */
    int oom;
    int depth;
};

static void gs_free(gstate *s) { st_free(s->ids); memset(s, 0, sizeof *s); }

static int gs_add(grammar_match *m, gstate *s, int32_t id) {
    for (int i = 0; i < s->n; i++) if (s->ids[i] == id) return 0;
    if (s->n >= MATCH_MAX_STACKS) { m->oom = 1; return -1; }   /* treated as out of memory */
    if (s->n == s->cap) {
        int c = s->cap ? s->cap * 2 : 8;
        int32_t *p = st_realloc(s->ids, (size_t)c * sizeof *p);
        if (!p) { m->oom = 1; return -1; }
        s->ids = p;
        s->cap = c;
    }
    s->ids[s->n++] = id;
    return 0;
}

static uint32_t node_hash(int32_t pos, int32_t par) {
    uint64_t k = (uint64_t)(uint32_t)pos << 32 | (uint32_t)par;
    return (uint32_t)((k * 0x9E3779B97F4A7C15ull) >> 32);
}

static int32_t intern(grammar_match *m, int32_t pos, int32_t par) {
    uint32_t h = node_hash(pos, par) & m->hmask;
    for (;;) {
        int32_t s = m->hslot[h];
        if (s < 0) break;
        if (m->npos[s] == pos && m->npar[s] == par) return s;
        h = (h + 1) & m->hmask;
    }
    if (m->n_nodes == m->cap_nodes) {
        int c = m->cap_nodes * 2;
        int32_t *a = st_realloc(m->npos, (size_t)c * sizeof *a);
        if (!a) { m->oom = 1; return -2; }
        m->npos = a;
        int32_t *b = st_realloc(m->npar, (size_t)c * sizeof *b);
        if (!b) { m->oom = 1; return -2; }
        m->npar = b;
        m->cap_nodes = c;
    }
    if ((uint32_t)m->n_nodes * 2 >= m->hmask) {   /* rehash at half load */
        uint32_t nm = m->hmask * 2 + 1;
        int32_t *hs = st_malloc(((size_t)nm + 1) * sizeof *hs);
        if (!hs) { m->oom = 1; return -2; }
        for (uint32_t i = 0; i <= nm; i++) hs[i] = -1;
        for (int32_t i = 0; i < m->n_nodes; i++) {
            uint32_t k = node_hash(m->npos[i], m->npar[i]) & nm;
            while (hs[k] >= 0) k = (k + 1) & nm;
            hs[k] = i;
        }
        st_free(m->hslot);
        m->hslot = hs;
        m->hmask = nm;
        h = node_hash(pos, par) & m->hmask;
        while (m->hslot[h] >= 0) h = (h + 1) & m->hmask;
    }
    int32_t id = m->n_nodes++;
    m->npos[id] = pos;
    m->npar[id] = par;
    m->hslot[h] = id;
    return id;
}

/* The stack "pos on top of par": an alternative's end pops to the parent (-1: empty stack). */
static int32_t norm(grammar_match *m, int32_t pos, int32_t par) {
    if (m->g->el[pos].kind == G_END) return par;
    return intern(m, pos, par);
}

/* Add stack `id` to s with its top expanded down to character classes. */
static void expand(grammar_match *m, gstate *s, int32_t id) {
    if (id == -1) { s->accept = 1; return; }
    if (id == STACK_BEYOND) { s->beyond = 1; return; }
    if (id < -1 || m->oom) return;
    const gel *e = &m->g->el[m->npos[id]];
    if (e->kind == G_CHARS) { gs_add(m, s, id); return; }
    /* G_REF: the continuation, then every alternative of the rule on top of it */
    if (++m->depth > 2000) { m->depth--; return; }   /* cannot happen without left recursion */
    int32_t cont = norm(m, m->npos[id] + 1, m->npar[id]);
    if (cont == -2) { m->depth--; return; }
    const grammar *g = m->g;
    for (int a = g->ralt[e->v]; a < g->ralt[e->v + 1] && !m->oom; a++) {
        int32_t n = norm(m, g->alt[a], cont);
        if (n == -2) break;
        expand(m, s, n);
    }
    m->depth--;
}

/* dst = the stacks of src advanced by one code point. */
static void advance_cp(grammar_match *m, const gsrec *src, uint32_t cp, gstate *dst) {
    dst->n = 0;
    dst->accept = 0;
    dst->beyond = src->beyond;     /* past the horizon anything goes */
    for (int i = 0; i < src->n; i++) {
        int32_t id = src->ids[i];
        const gel *e = &m->g->el[m->npos[id]];
        if (!cs_match(&m->g->cs[e->v], cp)) continue;
        int32_t nx = norm(m, m->npos[id] + 1, m->npar[id]);
        if (nx == -2) return;
        expand(m, dst, nx);
    }
}

static uint64_t gs_hash(gstate *s) {
    for (int i = 1; i < s->n; i++) {       /* sort: sets are small */
        int32_t x = s->ids[i];
        int j = i - 1;
        while (j >= 0 && s->ids[j] > x) { s->ids[j + 1] = s->ids[j]; j--; }
        s->ids[j + 1] = x;
    }
    return fnv1a64(s->ids, (size_t)s->n * sizeof *s->ids) * 31 + (uint64_t)s->accept + 2 * (uint64_t)s->beyond;
}

static int gs_same(const gsrec *r, const gstate *s, uint64_t h) {
    return r->hash == h && r->n == s->n && r->accept == s->accept && r->beyond == s->beyond &&
           (s->n == 0 || !memcmp(r->ids, s->ids, (size_t)s->n * sizeof *s->ids));
}

/* The id of state s (sorted in place), interned when new; -2 out of memory. */
static int32_t intern_state(grammar_match *m, gstate *s) {
    uint64_t h = gs_hash(s);
    uint32_t k = (uint32_t)h & m->smask;
    for (;;) {
        int32_t i = m->sslot[k];
        if (i < 0) break;
        if (gs_same(&m->st[i], s, h)) return i;
        k = (k + 1) & m->smask;
    }
    if (m->n_st == m->cap_st) {
        int c = m->cap_st ? m->cap_st * 2 : 64;
        gsrec *r = st_realloc(m->st, (size_t)c * sizeof *r);
        if (!r) { m->oom = 1; return -2; }
        m->st = r;
        m->cap_st = c;
    }
    if ((uint32_t)m->n_st * 2 >= m->smask) {
        uint32_t nm = m->smask * 2 + 1;
        int32_t *ss = st_malloc(((size_t)nm + 1) * sizeof *ss);
        if (!ss) { m->oom = 1; return -2; }
        for (uint32_t i = 0; i <= nm; i++) ss[i] = -1;
        for (int32_t i = 0; i < m->n_st; i++) {
            uint32_t q = (uint32_t)m->st[i].hash & nm;
            while (ss[q] >= 0) q = (q + 1) & nm;
            ss[q] = i;
        }
        st_free(m->sslot);
        m->sslot = ss;
        m->smask = nm;
        k = (uint32_t)h & m->smask;
        while (m->sslot[k] >= 0) k = (k + 1) & m->smask;
    }
    gsrec *r = &m->st[m->n_st];
    memset(r, 0, sizeof *r);
    r->ids = st_malloc((size_t)(s->n ? s->n : 1) * sizeof *r->ids);
    if (!r->ids) { m->oom = 1; return -2; }
    if (s->n) memcpy(r->ids, s->ids, (size_t)s->n * sizeof *s->ids);
    r->n = s->n;
    r->accept = s->accept;
    r->beyond = s->beyond;
    r->hash = h;
    r->canon = -1;
    m->sslot[k] = m->n_st;
    return m->n_st++;
}

/* Which of sid's stacks take cp, as bits: code points with the same answer lead to the same
 * state, so transitions above ASCII are cached by this signature, not per code point. */
static uint64_t cp_signature(const grammar_match *m, const gsrec *r, uint32_t cp) {
    uint64_t sig = r->beyond ? 1ull << 63 : 0;
    for (int i = 0; i < r->n; i++)
        if (cs_match(&m->g->cs[m->g->el[m->npos[r->ids[i]]].v], cp)) sig |= 1ull << i;
    return sig;
}

static int32_t *sig_slot(grammar_match *m, int32_t sid, uint64_t sig) {
    gsrec *r = &m->st[sid];
    if ((uint32_t)(r->un + 1) * 2 > r->umask) {   /* grow the map (also the first time) */
        uint32_t nm = r->umask ? r->umask * 2 + 1 : 7;
        cpent *t = st_calloc((size_t)nm + 1, sizeof *t);
        if (!t) { m->oom = 1; return NULL; }
        for (uint32_t i = 0; r->umap && i <= r->umask; i++) {
            if (!r->umap[i].sig) continue;
            uint32_t q = (uint32_t)((r->umap[i].sig * 0x9E3779B97F4A7C15ull) >> 40) & nm;
            while (t[q].sig) q = (q + 1) & nm;
            t[q] = r->umap[i];
        }
        st_free(r->umap);
        r->umap = t;
        r->umask = nm;
    }
    uint32_t q = (uint32_t)((sig * 0x9E3779B97F4A7C15ull) >> 40) & r->umask;
    while (r->umap[q].sig && r->umap[q].sig != sig) q = (q + 1) & r->umask;
    if (!r->umap[q].sig) { r->umap[q].sig = sig; r->umap[q].next = -2; r->un++; }
    return &r->umap[q].next;
}

/* The state after code point cp from state sid: -1 dead, -2 out of memory. */
static int32_t step_cp(grammar_match *m, int32_t sid, uint32_t cp) {
    gsrec *r = &m->st[sid];
    int32_t *slot = NULL;
    uint64_t sig = 0;
    if (cp < 128) {
        if (!r->next) {
            r->next = st_malloc(128 * sizeof *r->next);
            if (!r->next) { m->oom = 1; return -2; }
            for (int i = 0; i < 128; i++) r->next[i] = -2;
        }
        slot = &r->next[cp];
    } else if (r->n <= 63) {
        sig = cp_signature(m, r, cp);
        if (!sig) return -1;                         /* no stack takes it */
        slot = sig_slot(m, sid, sig);
        if (!slot) return -2;
    }
    if (slot && *slot != -2) return *slot;
    gstate *d = &m->tmp_a;
    advance_cp(m, &m->st[sid], cp, d);
    if (m->oom) return -2;
    int32_t nx = d->n > 0 || d->accept || d->beyond ? intern_state(m, d) : -1;
    if (nx < -1) return -2;
    /* m->st (and its tables) may have moved */
    if (cp < 128) m->st[sid].next[cp] = nx;
    else if (sig) *sig_slot(m, sid, sig) = nx;
    return nx;
}

/* Can some stack of sid take a character in [lo, hi]? (a pending partial character) */
static int viable_range(const grammar_match *m, int32_t sid, uint32_t lo, uint32_t hi) {
    const gsrec *r = &m->st[sid];
    if (r->beyond) return 1;
    for (int i = 0; i < r->n; i++)
        if (cs_intersects(&m->g->cs[m->g->el[m->npos[r->ids[i]]].v], lo, hi)) return 1;
    return 0;
}

static int pend_viable(const grammar_match *m, int32_t sid, const upend *p) {
    uint32_t lo = p->cp << (6 * p->rem), hi = lo | ((1u << (6 * p->rem)) - 1);
    static const uint32_t min_cp[5] = { 0, 0, 0x80, 0x800, 0x10000 };
    if (lo < min_cp[p->len]) lo = min_cp[p->len];
    if (hi > 0x10FFFF) hi = 0x10FFFF;
    return lo <= hi && viable_range(m, sid, lo, hi);
}

/* One byte: *sid / *p advance. Returns 1 alive, 0 dead, -1 out of memory. */
static int feed_byte(grammar_match *m, int32_t *sid, upend *p, uint8_t b) {
    if (p->rem == 0) {
        if (b < 0x80) {
            int32_t nx = step_cp(m, *sid, b);
            if (nx < -1) return -1;
            if (nx < 0) return 0;
            *sid = nx;
            return 1;
        }
        int len = (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
        if (!len || b < 0xC2 || b > 0xF4) return 0;
        p->len = len;
        p->rem = len - 1;
        p->cp = b & (0x7f >> len);
        p->lo = b == 0xE0 ? 0xA0 : b == 0xF0 ? 0x90 : 0x80;
        p->hi = b == 0xED ? 0x9F : b == 0xF4 ? 0x8F : 0xBF;
        return pend_viable(m, *sid, p);
    }
    if (b < p->lo || b > p->hi) return 0;
    p->cp = p->cp << 6 | (b & 0x3f);
    p->lo = 0x80;
    p->hi = 0xBF;
    if (--p->rem > 0) return pend_viable(m, *sid, p);
    int32_t nx = step_cp(m, *sid, p->cp);
    if (nx < -1) return -1;
    if (nx < 0) return 0;
    *sid = nx;
    return 1;
}

static void free_states(grammar_match *m) {
    for (int i = 0; i < m->n_st; i++) {
        st_free(m->st[i].ids); st_free(m->st[i].next); st_free(m->st[i].umap); st_free(m->st[i].mask);
    }
    m->n_st = 0;
    m->n_masks = 0;
    if (m->sslot) for (uint32_t i = 0; i <= m->smask; i++) m->sslot[i] = -1;
}

grammar_match *grammar_match_new(const grammar *g, const grammar_vocab *v) {
    grammar_match *m = st_calloc(1, sizeof *m);
    if (!m) return NULL;
    m->g = g;
    m->v = v;
    m->cap_nodes = 256;
    m->npos = st_malloc((size_t)m->cap_nodes * sizeof *m->npos);
    m->npar = st_malloc((size_t)m->cap_nodes * sizeof *m->npar);
    m->hmask = 1023;
    m->hslot = st_malloc(((size_t)m->hmask + 1) * sizeof *m->hslot);
    m->smask = 255;
    m->sslot = st_malloc(((size_t)m->smask + 1) * sizeof *m->sslot);
    m->wsid = st_malloc(((size_t)v->max_len + 1) * sizeof *m->wsid);
    m->wpend = st_malloc(((size_t)v->max_len + 1) * sizeof *m->wpend);
    if (!m->npos || !m->npar || !m->hslot || !m->sslot || !m->wsid || !m->wpend) { grammar_match_free(m); return NULL; }
    for (uint32_t i = 0; i <= m->hmask; i++) m->hslot[i] = -1;
    for (uint32_t i = 0; i <= m->smask; i++) m->sslot[i] = -1;
    /* the start: root's alternatives on the empty stack */
    gstate s0 = { 0 };
    for (int a = g->ralt[g->root]; a < g->ralt[g->root + 1]; a++) expand(m, &s0, norm(m, g->alt[a], -1));
    m->cur = m->oom ? -2 : intern_state(m, &s0);
    gs_free(&s0);
    if (m->cur < 0) { grammar_match_free(m); return NULL; }
    return m;
}

void grammar_match_free(grammar_match *m) {
    if (!m) return;
    free_states(m);
    st_free(m->st); st_free(m->sslot);
    gs_free(&m->tmp_a);
    st_free(m->pend_mask);
    st_free(m->chain); st_free(m->wsid); st_free(m->wpend); st_free(m->cpos);
    st_free(m->npos); st_free(m->npar); st_free(m->hslot);
    st_free(m);
}

/* Too many interned states (a very long generation through distinct states): keep only the
 * current one. Node ids stay valid. */
static int compact(grammar_match *m) {
    if (m->n_st < STATES_MAX) return 0;
    gsrec *r = &m->st[m->cur];
    gstate s = { 0 };
    for (int i = 0; i < r->n; i++) if (gs_add(m, &s, r->ids[i])) { gs_free(&s); return -1; }
    s.accept = r->accept;
    s.beyond = r->beyond;
    free_states(m);
    m->cur = intern_state(m, &s);
    gs_free(&s);
    return m->cur < 0 ? -1 : 0;
}

static int advance_bytes(grammar_match *m, const uint8_t *s, size_t n) {
    if (compact(m)) return -1;
    int32_t c = m->cur;
    upend p = m->pend;
    for (size_t i = 0; i < n; i++)
        if (feed_byte(m, &c, &p, s[i]) != 1) return -1;
    m->cur = c;
    m->pend = p;
    m->prep_mask = NULL;
    return 0;
}

int grammar_match_bytes(grammar_match *m, const char *s, size_t n) { return advance_bytes(m, (const uint8_t *)s, n); }

int grammar_match_token(grammar_match *m, int32_t id) {
    const grammar_vocab *v = m->v;
    if (id < 0 || id >= v->n_vocab) return -1;
    if (v->eog[id]) return grammar_match_can_end(m) ? 0 : -1;
    if (!v->tok[id]) return -1;
    return advance_bytes(m, (const uint8_t *)v->tok[id], v->tok_len[id]);
}

int grammar_match_can_end(const grammar_match *m) { return m->st[m->cur].accept && m->pend.rem == 0; }
int grammar_match_must_end(const grammar_match *m) { return grammar_match_can_end(m) && m->st[m->cur].n == 0; }

/* ---- masks ------------------------------------------------------------------------------------
 * A token is allowed when its bytes are a viable prefix from the current state: only what the
 * state accepts within max_len bytes (the longest token) matters. Below a stack's top, a frame
 * is entered only after the frames above it are finished, which takes at least their minrest
 * bytes: where those add up to max_len or more, the rest of the stack is cut (STACK_BEYOND). The
 * canonical state (stacks cut so) has the same mask, and states that differ only deep down (the
 * n-th element of an array, the same string inside another object) share one cached mask. */

/* Positions alike within a budget: where a frame can take at most b more bytes (those above it
 * need the rest of the token), two positions whose alternatives read the same for b bytes (the
 * same character classes; references to rules alike within the budget left, alternative by
 * alternative) lead to the same masks, whatever follows further on: length-bounded strings
 * (char{0,40} is 40 rules, one per length left) and repeated elements (x{8}) then share one
 * canonical position. Structural and conservative: "different" is always safe (a mask less
 * shared), so a comparison that takes too long answers it. */
static int cs_equal(const gcharset *a, const gcharset *b) {
    return a->n == b->n && a->neg == b->neg && (a->n == 0 || !memcmp(a->r, b->r, (size_t)a->n * 2 * sizeof *a->r));
}

static int rule_alike(const grammar *g, int r1, int r2, int32_t b, int *work);

static int seq_alike(const grammar *g, int p, int q, int32_t b, int *work) {
    for (;; p++, q++) {
        if (b <= 0 || p == q) return 1;
        if (++*work > 20000) return 0;
        gel x = g->el[p], y = g->el[q];
        if (x.kind != y.kind) return 0;
        if (x.kind == G_END) return 1;
        if (x.kind == G_CHARS) {
            if (x.v != y.v && !cs_equal(&g->cs[x.v], &g->cs[y.v])) return 0;
            b -= 1;
            continue;
        }
        int32_t m1 = g->rmin[x.v], m2 = g->rmin[y.v];
        if (m1 != m2 && (m1 < b || m2 < b)) return 0;
        if (!rule_alike(g, x.v, y.v, b, work)) return 0;
        b -= m1;
    }
}

static int rule_alike(const grammar *g, int r1, int r2, int32_t b, int *work) {
    if (r1 == r2 || b <= 0) return 1;
    int n = g->ralt[r1 + 1] - g->ralt[r1];
    if (n != g->ralt[r2 + 1] - g->ralt[r2]) return 0;
    for (int a = 0; a < n; a++)
        if (!seq_alike(g, g->alt[g->ralt[r1] + a], g->alt[g->ralt[r2] + a], b, work)) return 0;
    return 1;
}

static uint64_t mix64(uint64_t h, uint64_t x) { return (h ^ x) * 0x100000001B3ull + (h >> 29); }

/* What seq_alike compares, hashed (alike positions hash alike). */
static uint64_t pos_signature(const grammar *g, int p, int32_t b) {
    uint64_t h = mix64(0xcbf29ce484222325ull, (uint64_t)b);
    for (; b > 0; p++) {
        gel x = g->el[p];
        h = mix64(h, (uint64_t)x.kind);
        if (x.kind == G_END) break;
        if (x.kind == G_CHARS) {
            const gcharset *c = &g->cs[x.v];
            h = mix64(h, (uint64_t)c->neg << 32 | (uint32_t)c->n);
            for (int i = 0; i < 2 * c->n; i++) h = mix64(h, c->r[i]);
            b -= 1;
        } else {
            int32_t mn = g->rmin[x.v];
            h = mix64(h, (uint64_t)(g->ralt[x.v + 1] - g->ralt[x.v]) << 32 | (uint32_t)(mn < b ? mn : b));
            b -= mn;
        }
    }
    return h;
}

/* The canonical position for p within budget b (the first alike one seen); -2 out of memory. */
static int32_t canon_pos(grammar_match *m, int32_t p, int32_t b) {
    if ((uint32_t)(m->n_cpos + 1) * 2 > m->cpmask) {
        uint32_t nm = m->cpmask ? m->cpmask * 2 + 1 : 255;
        struct cpos *t = st_malloc(((size_t)nm + 1) * sizeof *t);
        if (!t) { m->oom = 1; return -2; }
        for (uint32_t i = 0; i <= nm; i++) t[i].pos = -1;
        for (uint32_t i = 0; m->cpos && i <= m->cpmask; i++) {
            if (m->cpos[i].pos < 0) continue;
            uint32_t q = (uint32_t)m->cpos[i].h & nm;
            while (t[q].pos >= 0) q = (q + 1) & nm;
            t[q] = m->cpos[i];
        }
        st_free(m->cpos);
        m->cpos = t;
        m->cpmask = nm;
    }
    uint64_t h = pos_signature(m->g, p, b);
    uint32_t q = (uint32_t)h & m->cpmask;
    for (; m->cpos[q].pos >= 0; q = (q + 1) & m->cpmask) {
        int work = 0;
        if (m->cpos[q].h == h && m->cpos[q].b == b && seq_alike(m->g, p, m->cpos[q].pos, b, &work)) return m->cpos[q].pos;
    }
    m->cpos[q] = (struct cpos){ h, b, p };
    m->n_cpos++;
    return p;
}

/* The stack id cut at the horizon, its positions canonical (itself when nothing changes); -2 out
 * of memory. */
static int32_t cut_stack(grammar_match *m, int32_t id, int32_t budget) {
    int k = 0, changed = 0;
    int32_t x = id;
    while (x >= 0) {
        if (k == m->cap_chain) {
            int c = m->cap_chain ? m->cap_chain * 2 : 64;
            int32_t *p = st_realloc(m->chain, (size_t)c * sizeof *p);
            if (!p) { m->oom = 1; return -2; }
            m->chain = p;
            m->cap_chain = c;
        }
        int32_t cp = canon_pos(m, m->npos[x], budget);
        if (cp < 0) return -2;
        changed |= cp != m->npos[x];
        m->chain[k++] = cp;
        int32_t mr = m->g->minrest[m->npos[x]];
        if (mr >= budget) { x = STACK_BEYOND; break; }
        budget -= mr;
        x = m->npar[x];
    }
    if (x != STACK_BEYOND && !changed) return id;
    int32_t par = x;
    for (int i = k - 1; i >= 0 && par != -2; i--) par = intern(m, m->chain[i], par);
    return par;
}

/* The canonical state of sid (memoized); -2 out of memory. */
static int32_t canonical_state(grammar_match *m, int32_t sid) {
    if (m->canon_off) return sid;
    if (m->st[sid].canon >= 0) return m->st[sid].canon;
    gstate c = { 0 };
    int cut = 0;
    for (int i = 0; i < m->st[sid].n; i++) {
        int32_t id = m->st[sid].ids[i];
        int32_t x = cut_stack(m, id, m->v->max_len);
        if (x == -2 || gs_add(m, &c, x)) { gs_free(&c); return -2; }
        cut |= x != id;
    }
    c.accept = m->st[sid].accept;
    c.beyond = m->st[sid].beyond;
    int32_t cs = cut ? intern_state(m, &c) : sid;
    gs_free(&c);
    if (cs >= 0) m->st[sid].canon = cs;
    return cs;
}

/* Tokens whose bytes keep the grammar alive from state sid with p pending: the flattened trie in
 * order, a subtree skipped where its first byte is refused. */
static void mask_walk(grammar_match *m, int32_t sid, upend p, uint8_t *mask) {
    const grammar_vocab *v = m->v;
    int32_t *wsid = m->wsid;
    upend *wp = m->wpend;
    wsid[0] = sid;
    wp[0] = p;
    for (int i = 0; i < v->n_flat && !m->oom;) {
        int d = v->fdepth[i];
        int32_t s = wsid[d - 1];
        uint8_t b = v->fbyte[i];
        if (wp[d - 1].rem == 0 && b < 0x80) {      /* ASCII: the state's table (filled once) */
            const int32_t *nx = m->st[s].next;
            int32_t t = nx ? nx[b] : -2;
            if (t == -2) t = step_cp(m, s, b);
            if (t < 0) { i = v->fskip[i]; continue; }
            wp[d].rem = 0;
            s = t;
        } else {
            upend q = wp[d - 1];
            if (feed_byte(m, &s, &q, b) != 1) { i = v->fskip[i]; continue; }
            wp[d] = q;
        }
        wsid[d] = s;
        for (int32_t id = v->ftok[i]; id >= 0; id = v->same[id]) mask[id >> 3] |= (uint8_t)(1u << (id & 7));
        i++;
    }
}

static const uint8_t *compute_mask(grammar_match *m) {
    const grammar_vocab *v = m->v;
    int pending = m->pend.rem > 0;       /* the last token ended inside a character: not cached */
    int32_t key = pending ? m->cur : canonical_state(m, m->cur);
    if (key < 0) return NULL;
    if (!pending && m->st[key].mask) { m->cached++; return m->st[key].mask; }
    if (m->n_masks >= MASKS_MAX) {    /* bounded memory: drop every mask and start over */
        for (int i = 0; i < m->n_st; i++) { st_free(m->st[i].mask); m->st[i].mask = NULL; }
        m->n_masks = 0;
    }
    uint8_t *mask = st_calloc(((size_t)v->n_vocab + 7) / 8, 1);
    if (!mask) return NULL;
    double t0 = now_seconds();
    mask_walk(m, key, m->pend, mask);
    m->t_mask += now_seconds() - t0;
    if (m->oom) { st_free(mask); return NULL; }
    if (grammar_match_can_end(m))
        for (int i = 0; i < v->n_vocab; i++) if (v->eog[i]) mask[i >> 3] |= (uint8_t)(1u << (i & 7));
    m->computed++;
    if (pending) {                    /* kept until the next call (owned by the matcher) */
        st_free(m->pend_mask);
        m->pend_mask = mask;
        return mask;
    }
    m->n_masks++;
    m->st[key].mask = mask;
    return mask;
}

const uint8_t *grammar_match_mask(grammar_match *m) {
    const uint8_t *p = m->prep_mask;
    if (p) { m->prep_mask = NULL; return p; }   /* prepared for this state: counted then */
    return compute_mask(m);
}

const uint8_t *grammar_match_prepare(grammar_match *m) {
    m->prep_mask = NULL;
    return m->prep_mask = compute_mask(m);
}

void grammar_match_set_canonical(grammar_match *m, int on) { m->canon_off = !on; }

int grammar_match_apply(grammar_match *m, float *logits) {
    const uint8_t *mask = grammar_match_mask(m);
    if (!mask) return -1;
    for (int i = 0; i < m->v->n_vocab; i++)
        if (!(mask[i >> 3] >> (i & 7) & 1)) logits[i] = -INFINITY;
    return 0;
}

void grammar_match_stats(const grammar_match *m, long *computed, long *cached, double *seconds) {
    if (computed) *computed = m->computed;
    if (cached) *cached = m->cached;
    if (seconds) *seconds = m->t_mask;
}
