/* Tool calls: template families, forcing grammars, output parsing (tools.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "server/tools.h"
#include "server/stream.h"
#include "grammar/grammar.h"
#include "core/util.h"

tool_format tool_format_of(const char *t) {
    if (!t) return TOOLFMT_NONE;
    /* JSON inside <tool_call> (Qwen 3 Coder's <function=...> and GLM's <arg_key> are other formats) */
    if (strstr(t, "<tool_call>") && strstr(t, "\"name\"") && !strstr(t, "<function=") && !strstr(t, "<arg_key>"))
        return TOOLFMT_HERMES;
    if (strstr(t, "[TOOL_CALLS]")) return TOOLFMT_MISTRAL;
    if (strstr(t, ">>>") && strstr(t, "tools")) return TOOLFMT_FUNCTIONARY;
    if (strstr(t, "<|start_header_id|>") && strstr(t, "tools") &&
        (strstr(t, "<|python_tag|>") || strstr(t, "\"parameters\"") || strstr(t, "parameters")))
        return TOOLFMT_LLAMA3;
    return TOOLFMT_NONE;
}

const char *tool_format_name(tool_format f) {
    static const char *const n[] = { "none", "hermes", "llama3", "mistral", "functionary" };
    return f >= TOOLFMT_NONE && f <= TOOLFMT_FUNCTIONARY ? n[f] : "none";
}

/* GBNF literal of raw text (quotes and backslashes escaped; newlines as \n). */
static void lit(sbuf *b, const char *s) {
    sbuf_puts(b, "\"");
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') { sbuf_append(b, "\\", 1); sbuf_append(b, s, 1); }
        else if (*s == '\n') sbuf_puts(b, "\\n");
        else sbuf_append(b, s, 1);
    }
    sbuf_puts(b, "\"");
}

/* The JSON text of a string (the name as it appears inside the call's JSON). */
static char *json_str(const char *s) {
    json_t *j = json_string(s);
    char *r = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
    json_decref(j);
    return r;
}

char *tool_call_grammar(tool_format f, json_t *tools, const char *only, int parallel, char *err, size_t errlen) {
    if (f == TOOLFMT_NONE) { snprintf(err, errlen, "the chat template has no tool format"); return NULL; }
    sbuf b; sbuf_init(&b);
    sbuf_puts(&b, json_grammar_common());
    sbuf alts; sbuf_init(&alts);
    int n = 0;
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t) {
        json_t *fn = json_object_get(t, "function");
        const char *name = json_string_value(json_object_get(fn, "name"));
        if (!name || (only && strcmp(name, only))) continue;
        json_t *params = json_object_get(fn, "parameters");
        char *pj = params ? json_dumps(params, JSON_COMPACT) : NULL;
        char prefix[32];
        snprintf(prefix, sizeof prefix, "t%zu-", i);
        char *rules = json_schema_to_rules(pj ? pj : "{\"type\":\"object\"}", prefix, err, errlen);
        free(pj);
        if (!rules) { sbuf_free(&b); sbuf_free(&alts); return NULL; }
        sbuf_puts(&b, rules);
        st_free(rules);
        char *js = json_str(name);
        char head[600];
        if (n++) sbuf_puts(&alts, " | ");
        switch (f) {
        case TOOLFMT_FUNCTIONARY:
            snprintf(head, sizeof head, "%s\n", name);
            break;
        case TOOLFMT_LLAMA3:
            snprintf(head, sizeof head, "{\"name\": %s, \"parameters\": ", js ? js : "\"\"");
            break;
        default:
            snprintf(head, sizeof head, "{\"name\": %s, \"arguments\": ", js ? js : "\"\"");
            break;
        }
        free(js);
        lit(&alts, head);
        sbuf_printf(&alts, " t%zu-root", i);
        if (f != TOOLFMT_FUNCTIONARY) sbuf_puts(&alts, " \"}\"");
    }
    if (!n) {
        sbuf_free(&b); sbuf_free(&alts);
        snprintf(err, errlen, only ? "no function named '%s' in 'tools'" : "'tools' holds no function", only ? only : "");
        return NULL;
    }
    sbuf_printf(&b, "call ::= %s\n", alts.p);
    sbuf_free(&alts);
    switch (f) {
    case TOOLFMT_HERMES:
        sbuf_printf(&b, "one ::= \"<tool_call>\\n\" call \"\\n</tool_call>\"\nroot ::= one%s\n", parallel ? " (\"\\n\" one)*" : "");
        break;
    case TOOLFMT_MISTRAL:
        sbuf_printf(&b, "root ::= \"[TOOL_CALLS][\" call%s \"]\"\n", parallel ? " (\", \" call)*" : "");
        break;
    case TOOLFMT_FUNCTIONARY:
        sbuf_printf(&b, "root ::= call%s\n", parallel ? " (\">>>\" call)*" : "");
        break;
    default:   /* Llama 3.x calls one function per turn */
        sbuf_puts(&b, "root ::= call\n");
        break;
    }
    if (b.oom) { sbuf_free(&b); snprintf(err, errlen, "out of memory"); return NULL; }
    return b.p;
}

/* ---- parsing ----------------------------------------------------------------------------------- */
static uint64_t mix(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void add_call(json_t *calls, const char *name, json_t *args, const char *args_text, uint64_t *seed) {
    static const char al[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    char id[32] = "call_";
    for (int k = 0; k < 24; k++) id[5 + k] = al[mix(seed) % (sizeof al - 1)];
    id[29] = 0;
    char *a = NULL;
    if (args_text) a = NULL;
    else if (json_is_string(args)) a = NULL;
    else a = json_dumps(args ? args : json_object(), JSON_COMPACT | JSON_ENCODE_ANY);
    const char *at = args_text ? args_text : json_is_string(args) ? json_string_value(args) : a ? a : "{}";
    json_array_append_new(calls, json_pack("{s:s, s:s, s:{s:s, s:s}}", "id", id, "type", "function", "function",
                                           "name", name, "arguments", at));
    free(a);
}

/* one JSON object {"name", "arguments"|"parameters"} -> a call; 0 ok */
static int call_from_object(json_t *calls, json_t *o, uint64_t *seed) {
    const char *name = json_string_value(json_object_get(o, "name"));
    if (!name) return -1;
    json_t *args = json_object_get(o, "arguments");
    if (!args) args = json_object_get(o, "parameters");
    add_call(calls, name, args, NULL, seed);
    return 0;
}

static const char *skip_ws(const char *p, const char *e) {
    while (p < e && (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')) p++;
    return p;
}

static void content_add(sbuf *c, const char *p, const char *e) {
    if (e > p) sbuf_append(c, p, (size_t)(e - p));
}

static const char *find(const char *p, const char *e, const char *needle) {
    size_t n = strlen(needle);
    for (; p + n <= e; p++) if (!memcmp(p, needle, n)) return p;
    return NULL;
}

json_t *tool_calls_parse(tool_format f, const char *text, size_t len, unsigned long long id_seed, char **content) {
    uint64_t seed = id_seed;
    json_t *calls = json_array();
    sbuf c; sbuf_init(&c);
    sbuf_append(&c, "", 0);
    const char *p = text, *e = text + len;
    if (f == TOOLFMT_HERMES) {
        for (;;) {
            const char *s = find(p, e, "<tool_call>");
            if (!s) { content_add(&c, p, e); break; }
            content_add(&c, p, s);
            const char *body = s + strlen("<tool_call>");
            const char *end = find(body, e, "</tool_call>");
            const char *be = end ? end : e;
            json_error_t je;
            json_t *o = json_loadb(body, (size_t)(be - body), 0, &je);
            if (!o || call_from_object(calls, o, &seed)) content_add(&c, s, end ? end + strlen("</tool_call>") : e);
            json_decref(o);
            if (!end) break;
            p = end + strlen("</tool_call>");
        }
    } else if (f == TOOLFMT_MISTRAL) {
        const char *s = find(p, e, "[TOOL_CALLS]");
        if (!s) content_add(&c, p, e);
        else {
            content_add(&c, p, s);
            const char *body = s + strlen("[TOOL_CALLS]");
            json_error_t je;
            json_t *a = json_loadb(body, (size_t)(e - body), JSON_DISABLE_EOF_CHECK, &je);
            size_t i;
            json_t *o;
            int ok = json_is_array(a);
            if (ok) json_array_foreach(a, i, o) ok &= call_from_object(calls, o, &seed) == 0;
            if (!ok) { json_array_clear(calls); content_add(&c, s, e); }
            else content_add(&c, body + je.position, e);
            json_decref(a);
        }
    } else if (f == TOOLFMT_LLAMA3) {
        const char *s = skip_ws(p, e);
        if ((size_t)(e - s) >= 14 && !memcmp(s, "<|python_tag|>", 14)) s = skip_ws(s + 14, e);
        json_t *o = NULL;
        json_error_t je;
        if (s < e && *s == '{') o = json_loadb(s, (size_t)(e - s), JSON_DISABLE_EOF_CHECK, &je);
        if (o && json_object_get(o, "name") && (json_object_get(o, "parameters") || json_object_get(o, "arguments")) &&
            call_from_object(calls, o, &seed) == 0)
            content_add(&c, s + je.position, e);
        else content_add(&c, p, e);
        json_decref(o);
    } else if (f == TOOLFMT_FUNCTIONARY) {
        /* segments "NAME\nBODY" separated by ">>>"; the first follows the prompt's ">>>" */
        while (p < e) {
            const char *next = find(p, e, ">>>");
            const char *se = next ? next : e;
            const char *nl = memchr(p, '\n', (size_t)(se - p));
            if (!nl) { content_add(&c, p, se); }
            else {
                char name[128];
                size_t nn = (size_t)(nl - p) < sizeof name - 1 ? (size_t)(nl - p) : sizeof name - 1;
                memcpy(name, p, nn);
                name[nn] = 0;
                const char *body = nl + 1;
                if (!strcmp(name, "all")) content_add(&c, body, se);
                else {
                    json_error_t je;
                    json_t *a = json_loadb(body, (size_t)(se - body), 0, &je);
                    if (a) add_call(calls, name, a, NULL, &seed);
                    else content_add(&c, p, se);
                    json_decref(a);
                }
            }
            p = next ? next + 3 : e;
        }
    } else content_add(&c, p, e);
    /* trim the content; none left: NULL */
    const char *cs = c.p ? c.p : "", *ce = cs + c.len;
    cs = skip_ws(cs, ce);
    while (ce > cs && (ce[-1] == ' ' || ce[-1] == '\n' || ce[-1] == '\t' || ce[-1] == '\r')) ce--;
    *content = NULL;
    if (ce > cs) {
        *content = st_malloc((size_t)(ce - cs) + 1);
        if (*content) { memcpy(*content, cs, (size_t)(ce - cs)); (*content)[ce - cs] = 0; }
    }
    sbuf_free(&c);
    return calls;
}

/* text[0..len) ends in a proper prefix of marker: its length (0 if not) */
static size_t marker_tail(const char *text, size_t len, const char *marker) {
    size_t ml = strlen(marker);
    for (size_t k = ml - 1; k > 0; k--)
        if (k <= len && !memcmp(text + len - k, marker, k)) return k;
    return 0;
}

static void window_before(const char *text, size_t len, size_t from, const char *marker, size_t *end) {
    const char *m = find(text + from, text + len, marker);
    if (m) *end = (size_t)(m - text);
    else *end = len - marker_tail(text + from, len - from, marker);
    if (*end < from) *end = from;
}

void tool_text_window(tool_format f, const char *text, size_t len, size_t *start, size_t *end) {
    *start = *end = 0;
    switch (f) {
    case TOOLFMT_HERMES: window_before(text, len, 0, "<tool_call>", end); break;
    case TOOLFMT_MISTRAL: window_before(text, len, 0, "[TOOL_CALLS]", end); break;
    case TOOLFMT_LLAMA3: {
        const char *p = skip_ws(text, text + len);
        size_t rest = (size_t)(text + len - p);
        if (!rest) return;                                     /* only whitespace so far */
        if (*p == '{') return;                                 /* a call, or a JSON answer: held */
        static const char tag[] = "<|python_tag|>";
        if (!memcmp(p, tag, rest < sizeof tag - 1 ? rest : sizeof tag - 1)) return;
        *end = len;
        break;
    }
    case TOOLFMT_FUNCTIONARY:
        if (len < 4) return;
        if (memcmp(text, "all\n", 4)) return;                 /* a call first: held */
        *start = 4;
        window_before(text, len, 4, ">>>", end);
        break;
    default:
        *end = len;
        break;
    }
}
