/* JSON schema -> grammar text (grammar.h: json_schema_to_grammar).
 *
 * Every schema node becomes a rule; the fixed rules below spell JSON itself. Whitespace
 * between tokens is bounded (a space or a newline and up to 8 spaces of indentation), so a
 * small model cannot run away in whitespace, and numbers have at most 16 integer and 16
 * fraction digits. Keywords that would need more than a context-free grammar of this kind
 * (pattern, numeric bounds, uniqueItems, not, ...) are refused with a message rather than
 * silently ignored, so what comes back always validates against the schema it was given. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "grammar/grammar.h"
#include "core/util.h"

typedef struct { char *p; size_t n, cap; int oom; } gbuf;

static void gb_add(gbuf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t c = b->cap ? b->cap : 1024;
        while (c < b->n + n + 1) c *= 2;
        char *q = st_realloc(b->p, c);
        if (!q) { b->oom = 1; return; }
        b->p = q;
        b->cap = c;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}
static void gb_str(gbuf *b, const char *s) { gb_add(b, s, strlen(s)); }
static void gb_fmt(gbuf *b, const char *fmt, ...) {
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n >= (int)sizeof tmp) n = (int)sizeof tmp - 1;
    if (n > 0) gb_add(b, tmp, (size_t)n);
}

static const char JSON_RULES[] =
    "ws ::= ([ \\n] [ ]{0,8})?\n"
    "string ::= \"\\\"\" char* \"\\\"\"\n"
    "char ::= [^\"\\\\\\x00-\\x1f] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4})\n"
    "integer ::= \"-\"? int\n"
    "int ::= \"0\" | [1-9] [0-9]{0,15}\n"
    "number ::= \"-\"? int (\".\" [0-9]{1,16})? ([eE] [-+]? [0-9]{1,2})?\n"
    "boolean ::= \"true\" | \"false\"\n"
    "null ::= \"null\"\n"
    "value ::= object | array | string | number | boolean | null\n"
    "object ::= \"{\" ws (member (\",\" ws member)*)? \"}\"\n"
    "member ::= string ws \":\" ws value ws\n"
    "array ::= \"[\" ws (value ws (\",\" ws value ws)*)? \"]\"\n";

typedef struct {
    gbuf out;
    json_t *root;
    int n_rules;
    char err[256];
    int failed;
    /* $ref targets already given a rule: pointer string -> rule number */
    char **ref_name; int *ref_rule; int n_ref;
    int depth;
} sconv;

static int sc_fail(sconv *c, const char *fmt, ...) {
    if (!c->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err, sizeof c->err, fmt, ap);
        va_end(ap);
    }
    c->failed = 1;
    return -1;
}

/* A GBNF literal for the JSON text of v (a string, number, bool or null; or any value). */
static void literal_json(sconv *c, gbuf *b, json_t *v) {
    char *txt = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!txt) { c->out.oom = 1; return; }
    gb_str(b, "\"");
    for (const char *p = txt; *p; p++) {
        if (*p == '"' || *p == '\\') gb_add(b, "\\", 1);
        gb_add(b, p, 1);
    }
    gb_str(b, "\"");
    free(txt);
}

static int gen(sconv *c, json_t *s);

static json_t *resolve_ref(sconv *c, const char *ref) {
    const char *p;
    if (!strncmp(ref, "#/$defs/", 8)) p = ref + 8;
    else if (!strncmp(ref, "#/definitions/", 14)) p = ref + 14;
    else if (!strcmp(ref, "#")) return c->root;
    else { sc_fail(c, "$ref '%s' is not supported (only #/$defs/NAME and #/definitions/NAME)", ref); return NULL; }
    json_t *defs = json_object_get(c->root, ref[2] == '$' ? "$defs" : "definitions");
    json_t *t = defs ? json_object_get(defs, p) : NULL;
    if (!t) sc_fail(c, "$ref '%s' points nowhere", ref);
    return t;
}

static const char *const REFUSED[] = { "pattern", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                                       "multipleOf", "uniqueItems", "not", "if", "patternProperties",
                                       "minProperties", "maxProperties", "contains", "propertyNames",
                                       "dependentRequired", "dependentSchemas", "unevaluatedProperties" };

/* object with properties: R(i, first) rules in order (see the file comment of grammar.h) */
static int gen_object(sconv *c, json_t *s, int self) {
    json_t *props = json_object_get(s, "properties"), *req = json_object_get(s, "required");
    json_t *addl = json_object_get(s, "additionalProperties");
    if (props && !json_is_object(props)) return sc_fail(c, "'properties' must be an object");
    if (req && !json_is_array(req)) return sc_fail(c, "'required' must be an array");
    size_t np = props ? json_object_size(props) : 0;
    if (np == 0) {
        if (addl && json_is_false(addl)) { gb_fmt(&c->out, "r%d ::= \"{\" ws \"}\"\n", self); return 0; }
        if (addl && json_is_object(addl)) {
            int v = gen(c, addl);
            if (v < 0) return -1;
            gb_fmt(&c->out, "r%d ::= \"{\" ws (string ws \":\" ws r%d ws (\",\" ws string ws \":\" ws r%d ws)*)? \"}\"\n",
                   self, v, v);
            return 0;
        }
        gb_fmt(&c->out, "r%d ::= object\n", self);
        return 0;
    }
    if (addl && !json_is_boolean(addl)) return sc_fail(c, "'additionalProperties' with properties must be true or false");
    const char **keys = st_malloc(np * sizeof *keys);
    int *vals = st_malloc(np * sizeof *vals), *isreq = st_calloc(np, sizeof *isreq);
    if (!keys || !vals || !isreq) { st_free(keys); st_free(vals); st_free(isreq); return sc_fail(c, "out of memory"); }
    size_t i = 0;
    const char *k;
    json_t *v;
    json_object_foreach(props, k, v) {
        keys[i] = k;
        vals[i] = gen(c, v);
        if (vals[i] < 0) { st_free(keys); st_free(vals); st_free(isreq); return -1; }
        i++;
    }
    size_t ri;
    json_t *rv;
    json_array_foreach(req, ri, rv) {
        if (!json_is_string(rv)) { st_free(keys); st_free(vals); st_free(isreq); return sc_fail(c, "'required' must hold strings"); }
        int found = 0;
        for (size_t j = 0; j < np; j++) if (!strcmp(keys[j], json_string_value(rv))) { isreq[j] = 1; found = 1; }
        if (!found) { st_free(keys); st_free(vals); st_free(isreq); return sc_fail(c, "required property '%s' is not in 'properties'", json_string_value(rv)); }
    }
    /* rule numbers: R(i, first) = base + 2 * i + first, i = 0..np (np: the end) */
    int base = c->n_rules;
    c->n_rules += 2 * ((int)np + 1);
    int extra = addl && json_is_true(addl);
    for (size_t j = 0; j <= np; j++)
        for (int first = 0; first < 2; first++) {
            gb_fmt(&c->out, "r%d ::= ", base + 2 * (int)j + first);
            if (j == np) {
                if (extra) gb_str(&c->out, first ? "(member (\",\" ws member)*)?" : "(\",\" ws member)*");
                else gb_str(&c->out, "\"\"");
                gb_str(&c->out, "\n");
                continue;
            }
            gb_str(&c->out, first ? "" : "\",\" ws ");
            json_t *ks = json_string(keys[j]);
            literal_json(c, &c->out, ks);
            json_decref(ks);
            gb_fmt(&c->out, " ws \":\" ws r%d ws r%d", vals[j], base + 2 * (int)(j + 1));
            if (!isreq[j]) gb_fmt(&c->out, " | r%d", base + 2 * (int)(j + 1) + first);
            gb_str(&c->out, "\n");
        }
    gb_fmt(&c->out, "r%d ::= \"{\" ws r%d \"}\"\n", self, base + 1);
    st_free(keys); st_free(vals); st_free(isreq);
    return 0;
}

static int get_count(sconv *c, json_t *s, const char *key, int dflt) {
    json_t *v = json_object_get(s, key);
    if (!v) return dflt;
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 1000)
        return sc_fail(c, "'%s' must be an integer 0..1000", key), -2;
    return (int)json_integer_value(v);
}

static int gen_array(sconv *c, json_t *s, int self) {
    json_t *items = json_object_get(s, "items"), *prefix = json_object_get(s, "prefixItems");
    int mn = get_count(c, s, "minItems", 0), mx = get_count(c, s, "maxItems", -1);
    if (mn == -2 || mx == -2) return -1;
    if (mx >= 0 && mx < mn) return sc_fail(c, "maxItems < minItems");
    if (prefix) {
        if (!json_is_array(prefix) || json_array_size(prefix) == 0) return sc_fail(c, "'prefixItems' must be a non-empty array");
        if (items && !json_is_false(items)) return sc_fail(c, "'prefixItems' with 'items' other than false is not supported");
        size_t n = json_array_size(prefix);
        int *r = st_malloc(n * sizeof *r);
        if (!r) return sc_fail(c, "out of memory");
        for (size_t i = 0; i < n; i++) if ((r[i] = gen(c, json_array_get(prefix, i))) < 0) { st_free(r); return -1; }
        gb_fmt(&c->out, "r%d ::= \"[\" ws", self);
        for (size_t i = 0; i < n; i++) gb_fmt(&c->out, "%s r%d ws", i ? " \",\" ws" : "", r[i]);
        gb_str(&c->out, " \"]\"\n");
        st_free(r);
        return 0;
    }
    int it;
    if (!items || json_is_true(items)) it = -1;
    else if (json_is_object(items)) { if ((it = gen(c, items)) < 0) return -1; }
    else return sc_fail(c, "'items' must be a schema");
    char item[32];
    if (it < 0) snprintf(item, sizeof item, "value"); else snprintf(item, sizeof item, "r%d", it);
    if (mx == 0) { gb_fmt(&c->out, "r%d ::= \"[\" ws \"]\"\n", self); return 0; }
    /* item ("," item){max(mn,1)-1, mx-1}, the whole optional when mn == 0 */
    int lo = mn > 0 ? mn - 1 : 0;
    gb_fmt(&c->out, "r%d ::= \"[\" ws %s%s ws (\",\" ws %s ws)", self, mn == 0 ? "(" : "", item, item);
    if (mx < 0) gb_fmt(&c->out, "{%d,}", lo);
    else gb_fmt(&c->out, "{%d,%d}", lo, mx - 1);
    gb_fmt(&c->out, "%s \"]\"\n", mn == 0 ? ")?" : "");
    return 0;
}

static int gen_string(sconv *c, json_t *s, int self) {
    int mn = get_count(c, s, "minLength", 0), mx = get_count(c, s, "maxLength", -1);
    if (mn == -2 || mx == -2) return -1;
    if (mx >= 0 && mx < mn) return sc_fail(c, "maxLength < minLength");
    if (mn == 0 && mx < 0) { gb_fmt(&c->out, "r%d ::= string\n", self); return 0; }
    if (mx < 0) gb_fmt(&c->out, "r%d ::= \"\\\"\" char{%d,} \"\\\"\"\n", self, mn);
    else gb_fmt(&c->out, "r%d ::= \"\\\"\" char{%d,%d} \"\\\"\"\n", self, mn, mx);
    return 0;
}

/* The rule for one type name. */
static int gen_type(sconv *c, json_t *s, const char *t, int self) {
    if (!strcmp(t, "object")) return gen_object(c, s, self);
    if (!strcmp(t, "array")) return gen_array(c, s, self);
    if (!strcmp(t, "string")) return gen_string(c, s, self);
    if (!strcmp(t, "number") || !strcmp(t, "integer") || !strcmp(t, "boolean") || !strcmp(t, "null")) {
        gb_fmt(&c->out, "r%d ::= %s\n", self, t);
        return 0;
    }
    return sc_fail(c, "unknown type '%s'", t);
}

/* Returns the rule number of schema s (a new rule), or -1. */
static int gen(sconv *c, json_t *s) {
    if (c->failed) return -1;
    if (++c->depth > 64) return sc_fail(c, "the schema nests too deeply");
    int self = c->n_rules++;
    int rc = 0;
    if (json_is_true(s) || (json_is_object(s) && json_object_size(s) == 0)) { gb_fmt(&c->out, "r%d ::= value\n", self); goto done; }
    if (!json_is_object(s)) { rc = sc_fail(c, "a schema must be an object or true"); goto done; }
    for (size_t i = 0; i < sizeof REFUSED / sizeof REFUSED[0]; i++)
        if (json_object_get(s, REFUSED[i])) { rc = sc_fail(c, "'%s' is not supported in a JSON schema here", REFUSED[i]); goto done; }
    json_t *ref = json_object_get(s, "$ref");
    if (ref) {
        if (!json_is_string(ref)) { rc = sc_fail(c, "'$ref' must be a string"); goto done; }
        const char *r = json_string_value(ref);
        for (int i = 0; i < c->n_ref; i++)
            if (!strcmp(c->ref_name[i], r)) { gb_fmt(&c->out, "r%d ::= r%d\n", self, c->ref_rule[i]); goto done; }
        json_t *t = resolve_ref(c, r);
        if (!t) { rc = -1; goto done; }
        char **nn = st_realloc(c->ref_name, (size_t)(c->n_ref + 1) * sizeof *nn);
        int *nr = nn ? st_realloc(c->ref_rule, (size_t)(c->n_ref + 1) * sizeof *nr) : NULL;
        if (nn) c->ref_name = nn;
        if (!nn || !nr) { rc = sc_fail(c, "out of memory"); goto done; }
        c->ref_rule = nr;
        c->ref_name[c->n_ref] = st_malloc(strlen(r) + 1);
        if (!c->ref_name[c->n_ref]) { rc = sc_fail(c, "out of memory"); goto done; }
        strcpy(c->ref_name[c->n_ref], r);
        c->ref_rule[c->n_ref++] = self;   /* recursion through the ref lands on this rule */
        int target = gen(c, t);
        if (target < 0) { rc = -1; goto done; }
        gb_fmt(&c->out, "r%d ::= r%d\n", self, target);
        goto done;
    }
    json_t *cst = json_object_get(s, "const");
    if (cst) { gb_fmt(&c->out, "r%d ::= ", self); literal_json(c, &c->out, cst); gb_str(&c->out, "\n"); goto done; }
    json_t *en = json_object_get(s, "enum");
    if (en) {
        if (!json_is_array(en) || json_array_size(en) == 0) { rc = sc_fail(c, "'enum' must be a non-empty array"); goto done; }
        gb_fmt(&c->out, "r%d ::= ", self);
        size_t i;
        json_t *e;
        json_array_foreach(en, i, e) { if (i) gb_str(&c->out, " | "); literal_json(c, &c->out, e); }
        gb_str(&c->out, "\n");
        goto done;
    }
    json_t *any = json_object_get(s, "anyOf");
    if (!any) any = json_object_get(s, "oneOf");
    json_t *all = json_object_get(s, "allOf");
    if (all) {
        if (!json_is_array(all) || json_array_size(all) != 1) { rc = sc_fail(c, "'allOf' is supported with one schema only"); goto done; }
        int r = gen(c, json_array_get(all, 0));
        if (r < 0) { rc = -1; goto done; }
        gb_fmt(&c->out, "r%d ::= r%d\n", self, r);
        goto done;
    }
    if (any) {
        if (!json_is_array(any) || json_array_size(any) == 0) { rc = sc_fail(c, "'anyOf' / 'oneOf' must be a non-empty array"); goto done; }
        size_t n = json_array_size(any);
        int *r = st_malloc(n * sizeof *r);
        if (!r) { rc = sc_fail(c, "out of memory"); goto done; }
        for (size_t i = 0; i < n; i++) if ((r[i] = gen(c, json_array_get(any, i))) < 0) { st_free(r); rc = -1; goto done; }
        gb_fmt(&c->out, "r%d ::= ", self);
        for (size_t i = 0; i < n; i++) gb_fmt(&c->out, "%sr%d", i ? " | " : "", r[i]);
        gb_str(&c->out, "\n");
        st_free(r);
        goto done;
    }
    json_t *type = json_object_get(s, "type");
    if (!type) {
        if (json_object_get(s, "properties")) rc = gen_type(c, s, "object", self);
        else if (json_object_get(s, "items") || json_object_get(s, "prefixItems")) rc = gen_type(c, s, "array", self);
        else gb_fmt(&c->out, "r%d ::= value\n", self);
        goto done;
    }
    if (json_is_string(type)) { rc = gen_type(c, s, json_string_value(type), self); goto done; }
    if (json_is_array(type) && json_array_size(type) > 0) {
        size_t n = json_array_size(type);
        int first = c->n_rules;
        c->n_rules += (int)n;
        for (size_t i = 0; i < n && !c->failed; i++) {
            json_t *t = json_array_get(type, i);
            if (!json_is_string(t)) { rc = sc_fail(c, "'type' must name types"); goto done; }
            if (gen_type(c, s, json_string_value(t), first + (int)i)) { rc = -1; goto done; }
        }
        gb_fmt(&c->out, "r%d ::= ", self);
        for (size_t i = 0; i < n; i++) gb_fmt(&c->out, "%sr%d", i ? " | " : "", first + (int)i);
        gb_str(&c->out, "\n");
        goto done;
    }
    rc = sc_fail(c, "'type' must be a string or an array of strings");
done:
    c->depth--;
    return rc < 0 || c->failed ? -1 : self;
}

char *json_schema_to_grammar(const char *schema_json, char *err, size_t errlen) {
    sconv c = { 0 };
    json_t *root = NULL;
    if (schema_json) {
        json_error_t je;
        root = json_loads(schema_json, JSON_DECODE_ANY, &je);
        if (!root) { snprintf(err, errlen, "json_schema: invalid JSON: %s", je.text); return NULL; }
    }
    c.root = root;
    gb_str(&c.out, JSON_RULES);
    if (!root) gb_str(&c.out, "root ::= object\n");
    else {
        int r = gen(&c, root);
        if (r >= 0) gb_fmt(&c.out, "root ::= r%d\n", r);
    }
    for (int i = 0; i < c.n_ref; i++) st_free(c.ref_name[i]);
    st_free(c.ref_name);
    st_free(c.ref_rule);
    json_decref(root);
    if (c.failed || c.out.oom) {
        snprintf(err, errlen, "json_schema: %s", c.out.oom ? "out of memory" : c.err);
        st_free(c.out.p);
        return NULL;
    }
    return c.out.p;
}

const char *json_grammar_common(void) { return JSON_RULES; }

/* The schema's own rules (without the common JSON rules), with its rule names (rN, root)
 * prefixed so several schemas can live in one grammar; the start rule is PREFIXroot. */
char *json_schema_to_rules(const char *schema_json, const char *prefix, char *err, size_t errlen) {
    char *full = json_schema_to_grammar(schema_json, err, errlen);
    if (!full) return NULL;
    const char *p = full + strlen(JSON_RULES);
    gbuf b = { 0 };
    size_t pl = strlen(prefix);
    while (*p) {
        char c = *p;
        if (c == '"' || c == '[') {            /* a literal or a class: copied as is */
            char close = c == '"' ? '"' : ']';
            const char *q = p + 1;
            while (*q && *q != close) q += *q == '\\' && q[1] ? 2 : 1;
            if (*q) q++;
            gb_add(&b, p, (size_t)(q - p));
            p = q;
            continue;
        }
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') {
            const char *q = p;
            while ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9') || *q == '_' || *q == '-') q++;
            size_t n = (size_t)(q - p);
            int own = (n == 4 && !memcmp(p, "root", 4)) || (p[0] == 'r' && n > 1 && strspn(p + 1, "0123456789") == n - 1);
            if (own) gb_add(&b, prefix, pl);
            gb_add(&b, p, n);
            p = q;
            continue;
        }
        gb_add(&b, p, 1);
        p++;
    }
    st_free(full);
    if (b.oom) { st_free(b.p); snprintf(err, errlen, "out of memory"); return NULL; }
    return b.p;
}
