/* Jinja values: arena, constructors, Python semantics (truthiness, equality, ordering),
 * Python str()/repr() printing, json.dumps formatting and JSON input (jansson). */
#include "template/jinja_int.h"
#include "core/util.h"
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- arena ----------------------------------------------------------------------------- */
void *ja_alloc(jctx *c, size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (n == 0) n = 16;
    jblock *b = c->arena.head;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > (size_t)60000 ? n : (size_t)60000;
        if (c->arena.total + cap > JINJA_ARENA_MAX)
            jfail(c, "template needs more than %zu MiB of memory (runaway loop or string growth?)",
                  JINJA_ARENA_MAX >> 20);
        jblock *nb = st_malloc(sizeof(jblock) + 16 + cap);
        if (!nb) jfail(c, "out of memory rendering template");
        nb->used = 0; nb->cap = cap;
        c->arena.total += cap;
        if (b && b->cap - b->used >= 4096 && n > 4096) { /* big one-off: keep the current block on top */
            nb->next = b->next; b->next = nb;
            nb->used = n;
            return (char *)(nb + 1) + 16 - ((uintptr_t)(nb + 1) & 15);
        }
        nb->next = b; c->arena.head = nb; b = nb;
    }
    char *base = (char *)(b + 1); base += 16 - ((uintptr_t)base & 15);
    void *p = base + b->used;
    b->used += n;
    return p;
}

void ja_free_all(jarena *a) {
    jblock *b = a->head;
    while (b) { jblock *nx = b->next; st_free(b); b = nx; }
    a->head = NULL; a->total = 0;
}

char *ja_strndup(jctx *c, const char *s, size_t n) {
    char *p = ja_alloc(c, n + 1);
    if (n) memcpy(p, s, n);
    p[n] = 0;
    return p;
}

void jfail(jctx *c, const char *fmt, ...) {
    va_list ap; va_start(ap, fmt);
    if (c->err && c->errlen) vsnprintf(c->err, c->errlen, fmt, ap);
    va_end(ap);
    longjmp(c->jb, 1);
}

void jstep(jctx *c, long long n) {
    c->steps += n;
    if (c->steps > JINJA_STEPS_MAX)
        jfail(c, "template exceeded %lld loop/call steps (runaway loop?)", (long long)JINJA_STEPS_MAX);
}

/* ---- buffers --------------------------------------------------------------------------- */
void jbuf_put(jctx *c, jbuf *b, const char *s, size_t n) {
    if (!n) return;
    if (b->n + n + 1 > b->cap) {
        if (b->n + n > JINJA_OUTPUT_MAX)
            jfail(c, "rendered text exceeds %zu MiB", JINJA_OUTPUT_MAX >> 20);
        size_t cap = b->cap ? b->cap * 2 : 256;
        while (cap < b->n + n + 1) cap *= 2;
        char *p = ja_alloc(c, cap);
        if (b->n) memcpy(p, b->p, b->n);
        b->p = p; b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}
void jbuf_puts(jctx *c, jbuf *b, const char *s) { jbuf_put(c, b, s, strlen(s)); }
void jbuf_putc(jctx *c, jbuf *b, char ch) { jbuf_put(c, b, &ch, 1); }
void jbuf_printf(jctx *c, jbuf *b, const char *fmt, ...) {
    char tmp[512];
    va_list ap; va_start(ap, fmt);
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (k < 0) return;
    jbuf_put(c, b, tmp, (size_t)k < sizeof tmp ? (size_t)k : sizeof tmp - 1);
}

/* ---- constructors ---------------------------------------------------------------------- */
jv jv_undef(const char *hint) { jv v = {0}; v.t = JV_UNDEF; v.u.s = hint; return v; }
jv jv_none(void) { jv v = {0}; v.t = JV_NONE; return v; }
jv jv_bool(int b) { jv v = {0}; v.t = JV_BOOL; v.u.b = b ? 1 : 0; return v; }
jv jv_int(int64_t i) { jv v = {0}; v.t = JV_INT; v.u.i = i; return v; }
jv jv_float(double f) { jv v = {0}; v.t = JV_FLOAT; v.u.f = f; return v; }
jv jv_str_ref(const char *s, size_t n) { jv v = {0}; v.t = JV_STR; v.u.s = s; v.n = n; return v; }
jv jv_str(jctx *c, const char *s, size_t n) { return jv_str_ref(ja_strndup(c, s, n), n); }
jv jv_cstr(jctx *c, const char *s) { return jv_str(c, s, strlen(s)); }
jv jv_list_new(jctx *c, size_t cap) {
    jv v = {0}; v.t = JV_LIST;
    v.u.l = ja_alloc(c, sizeof(jlist));
    v.u.l->n = 0; v.u.l->cap = cap; v.u.l->v = cap ? ja_alloc(c, cap * sizeof(jv)) : NULL;
    return v;
}
jv jv_dict_new(jctx *c, size_t cap) {
    jv v = {0}; v.t = JV_DICT;
    v.u.d = ja_alloc(c, sizeof(jdict));
    v.u.d->n = 0; v.u.d->cap = cap;
    v.u.d->k = cap ? ja_alloc(c, cap * sizeof(jv)) : NULL;
    v.u.d->v = cap ? ja_alloc(c, cap * sizeof(jv)) : NULL;
    return v;
}
void jlist_push(jctx *c, jlist *l, jv v) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 4;
        jv *nv = ja_alloc(c, cap * sizeof(jv));
        if (l->n) memcpy(nv, l->v, l->n * sizeof(jv));
        l->v = nv; l->cap = cap;
    }
    l->v[l->n++] = v;
}
void jdict_append(jctx *c, jdict *d, jv k, jv v) {
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 4;
        jv *nk = ja_alloc(c, cap * sizeof(jv)), *nv = ja_alloc(c, cap * sizeof(jv));
        if (d->n) { memcpy(nk, d->k, d->n * sizeof(jv)); memcpy(nv, d->v, d->n * sizeof(jv)); }
        d->k = nk; d->v = nv; d->cap = cap;
    }
    d->k[d->n] = k; d->v[d->n] = v; d->n++;
}
/* Dict keys follow Python hashing equality: 1 == 1.0 == True are one key. */
jv *jdict_get(const jdict *d, jv k) {
    for (size_t i = 0; i < d->n; i++)
        if (jv_equal(d->k[i], k)) return &d->v[i];
    return NULL;
}
jv *jdict_gets(const jdict *d, const char *key) {
    size_t n = strlen(key);
    for (size_t i = 0; i < d->n; i++)
        if (d->k[i].t == JV_STR && d->k[i].n == n && !memcmp(d->k[i].u.s, key, n)) return &d->v[i];
    return NULL;
}
void jdict_set(jctx *c, jdict *d, jv k, jv v) {
    jv *p = jdict_get(d, k);
    if (p) *p = v; else jdict_append(c, d, k, v);
}

/* ---- JSON input ------------------------------------------------------------------------ */
static jv from_json(jctx *c, json_t *j, int depth) {
    if (depth > 500) jfail(c, "JSON input nested deeper than 500 levels");
    switch (json_typeof(j)) {
    case JSON_NULL: return jv_none();
    case JSON_TRUE: return jv_bool(1);
    case JSON_FALSE: return jv_bool(0);
    case JSON_INTEGER: return jv_int((int64_t)json_integer_value(j));
    case JSON_REAL: return jv_float(json_real_value(j));
    case JSON_STRING: return jv_str(c, json_string_value(j), json_string_length(j));
    case JSON_ARRAY: {
        size_t n = json_array_size(j);
        jv l = jv_list_new(c, n);
        for (size_t i = 0; i < n; i++) jlist_push(c, l.u.l, from_json(c, json_array_get(j, i), depth + 1));
        return l;
    }
    case JSON_OBJECT: {
        jv d = jv_dict_new(c, json_object_size(j));
        const char *key; json_t *val;
        /* jansson keeps insertion order and rejects nothing: duplicate keys keep the last */
        json_object_foreach(j, key, val) {
            jv k = jv_cstr(c, key);
            jdict_append(c, d.u.d, k, from_json(c, val, depth + 1));
        }
        return d;
    }
    }
    return jv_none();
}

jv jv_from_json_text(jctx *c, const char *json, const char *what) {
    json_error_t je;
    json_t *j = json_loads(json, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    if (!j) jfail(c, "%s: invalid JSON at line %d column %d: %s", what, je.line, je.column, je.text);
    /* convert inside a nested jmp so the jansson tree is freed on error */
    jmp_buf saved; memcpy(&saved, &c->jb, sizeof saved);
    jv out = jv_none();
    if (setjmp(c->jb) == 0) {
        out = from_json(c, j, 0);
        memcpy(&c->jb, &saved, sizeof saved);
        json_decref(j);
        return out;
    }
    memcpy(&c->jb, &saved, sizeof saved);
    json_decref(j);
    longjmp(c->jb, 1);
}

/* ---- UTF-8 ----------------------------------------------------------------------------- */
/* Decode one code point at *pos; malformed bytes decode as themselves (0x80..0xFF) so
 * lengths and slices stay defined on any input. */
int jutf8_decode(const char *s, size_t n, size_t *pos) {
    const unsigned char *p = (const unsigned char *)s + *pos;
    size_t left = n - *pos;
    unsigned c0 = p[0];
    if (c0 < 0x80) { (*pos)++; return (int)c0; }
    int len = c0 >= 0xF0 && c0 < 0xF8 ? 4 : c0 >= 0xE0 ? 3 : c0 >= 0xC0 ? 2 : 0;
    if (len && (size_t)len <= left) {
        uint32_t cp = c0 & (0x7F >> len);
        int ok = 1;
        for (int i = 1; i < len; i++) {
            if ((p[i] & 0xC0) != 0x80) { ok = 0; break; }
            cp = (cp << 6) | (p[i] & 0x3F);
        }
        if (ok) { *pos += (size_t)len; return (int)cp; }
    }
    (*pos)++;
    return (int)c0;
}
size_t jutf8_len(const char *s, size_t n) {
    size_t k = 0, pos = 0;
    while (pos < n) { jutf8_decode(s, n, &pos); k++; }
    return k;
}
size_t jutf8_offset(const char *s, size_t n, size_t cp) {
    size_t pos = 0;
    while (cp-- && pos < n) jutf8_decode(s, n, &pos);
    return pos;
}
void jutf8_put(jctx *c, jbuf *b, uint32_t cp) {
    char t[4]; size_t k;
    if (cp < 0x80) { t[0] = (char)cp; k = 1; }
    else if (cp < 0x800) { t[0] = (char)(0xC0 | (cp >> 6)); t[1] = (char)(0x80 | (cp & 0x3F)); k = 2; }
    else if (cp < 0x10000) { t[0] = (char)(0xE0 | (cp >> 12)); t[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        t[2] = (char)(0x80 | (cp & 0x3F)); k = 3; }
    else { t[0] = (char)(0xF0 | (cp >> 18)); t[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        t[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); t[3] = (char)(0x80 | (cp & 0x3F)); k = 4; }
    jbuf_put(c, b, t, k);
}
/* Python's str.isspace() / \s set. */
int jis_py_space(uint32_t cp) {
    return (cp >= 9 && cp <= 13) || cp == 32 || (cp >= 0x1c && cp <= 0x1f) || cp == 0x85 || cp == 0xa0 ||
           cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 ||
           cp == 0x202f || cp == 0x205f || cp == 0x3000;
}

/* ---- semantics ------------------------------------------------------------------------- */
/* Items a for loop (and the sequence filters) walk: lists/tuples, dict keys, string
 * characters; undefined is empty. */
jv jv_iter_items(jctx *c, jv v) {
    switch (v.t) {
    case JV_LIST: return v;
    case JV_UNDEF: return jv_list_new(c, 0);
    case JV_DICT: {
        jv l = jv_list_new(c, v.u.d->n);
        for (size_t i = 0; i < v.u.d->n; i++) jlist_push(c, l.u.l, v.u.d->k[i]);
        return l;
    }
    case JV_STR: {
        jv l = jv_list_new(c, v.n);
        size_t pos = 0;
        while (pos < v.n) { size_t st = pos; jutf8_decode(v.u.s, v.n, &pos); jlist_push(c, l.u.l, jv_str_ref(v.u.s + st, pos - st)); }
        return l;
    }
    default: jfail(c, "'%s' object is not iterable", jv_type_name(v));
    }
}

const char *jv_type_name(jv v) {
    switch (v.t) {
    case JV_UNDEF: return "Undefined";
    case JV_NONE: return "NoneType";
    case JV_BOOL: return "bool";
    case JV_INT: return "int";
    case JV_FLOAT: return "float";
    case JV_STR: return "str";
    case JV_LIST: return v.flags & JV_F_TUPLE ? "tuple" : "list";
    case JV_DICT: return "dict";
    case JV_NS: return "Namespace";
    case JV_MACRO: return "Macro";
    case JV_FUNC: return "builtin_function_or_method";
    }
    return "object";
}

int jv_truthy(jv v) {
    switch (v.t) {
    case JV_UNDEF: case JV_NONE: return 0;
    case JV_BOOL: return v.u.b;
    case JV_INT: return v.u.i != 0;
    case JV_FLOAT: return v.u.f != 0.0;
    case JV_STR: return v.n != 0;
    case JV_LIST: return v.u.l->n != 0;
    case JV_DICT: return v.u.d->n != 0;
    default: return 1;
    }
}

static int is_num(jv v) { return v.t == JV_INT || v.t == JV_FLOAT || v.t == JV_BOOL; }
static double num_f(jv v) { return v.t == JV_FLOAT ? v.u.f : v.t == JV_INT ? (double)v.u.i : (double)v.u.b; }
static int64_t num_i(jv v) { return v.t == JV_INT ? v.u.i : v.u.b; }

static int equal_depth(jv a, jv b, int depth);
int jv_equal(jv a, jv b) { return equal_depth(a, b, 0); }
/* Values nested beyond 1000 levels compare unequal instead of overflowing the stack. */
static int equal_depth(jv a, jv b, int depth) {
    if (depth > 1000) return 0;
    if (is_num(a) && is_num(b)) {
        if (a.t == JV_FLOAT || b.t == JV_FLOAT) return num_f(a) == num_f(b);
        return num_i(a) == num_i(b);
    }
    if (a.t != b.t) return 0;
    switch (a.t) {
    case JV_UNDEF: case JV_NONE: return 1;
    case JV_STR: return a.n == b.n && !memcmp(a.u.s, b.u.s, a.n);
    case JV_LIST:
        if ((a.flags & JV_F_TUPLE) != (b.flags & JV_F_TUPLE)) return 0;
        if (a.u.l->n != b.u.l->n) return 0;
        for (size_t i = 0; i < a.u.l->n; i++) if (!equal_depth(a.u.l->v[i], b.u.l->v[i], depth + 1)) return 0;
        return 1;
    case JV_DICT:
        if (a.u.d->n != b.u.d->n) return 0;
        for (size_t i = 0; i < a.u.d->n; i++) {
            jv *o = jdict_get(b.u.d, a.u.d->k[i]);
            if (!o || !equal_depth(a.u.d->v[i], *o, depth + 1)) return 0;
        }
        return 1;
    case JV_NS: return a.u.d == b.u.d;
    case JV_MACRO: return a.u.m == b.u.m;
    case JV_FUNC: return a.u.fn == b.u.fn;
    }
    return 0;
}

static int compare_depth(jctx *c, jv a, jv b, const char *opname, int depth);
int jv_compare(jctx *c, jv a, jv b, const char *opname) { return compare_depth(c, a, b, opname, 0); }
static int compare_depth(jctx *c, jv a, jv b, const char *opname, int depth) {
    if (depth > 1000) jfail(c, "values nested too deeply to compare");
    if (is_num(a) && is_num(b)) {
        if (a.t == JV_FLOAT || b.t == JV_FLOAT) {
            double x = num_f(a), y = num_f(b);
            return x < y ? -1 : x > y ? 1 : 0;
        }
        int64_t x = num_i(a), y = num_i(b);
        return x < y ? -1 : x > y ? 1 : 0;
    }
    if (a.t == JV_STR && b.t == JV_STR) { /* UTF-8 byte order == code point order */
        size_t m = a.n < b.n ? a.n : b.n;
        int r = memcmp(a.u.s, b.u.s, m);
        if (r) return r < 0 ? -1 : 1;
        return a.n < b.n ? -1 : a.n > b.n ? 1 : 0;
    }
    if (a.t == JV_LIST && b.t == JV_LIST && (a.flags & JV_F_TUPLE) == (b.flags & JV_F_TUPLE)) {
        size_t m = a.u.l->n < b.u.l->n ? a.u.l->n : b.u.l->n;
        for (size_t i = 0; i < m; i++) {
            if (jv_equal(a.u.l->v[i], b.u.l->v[i])) continue;
            return compare_depth(c, a.u.l->v[i], b.u.l->v[i], opname, depth + 1);
        }
        return a.u.l->n < b.u.l->n ? -1 : a.u.l->n > b.u.l->n ? 1 : 0;
    }
    jfail(c, "'%s' not supported between instances of '%s' and '%s'", opname, jv_type_name(a), jv_type_name(b));
}

int jv_is_str(jv v, const char *s) { return v.t == JV_STR && v.n == strlen(s) && !memcmp(v.u.s, s, v.n); }

/* ---- printing -------------------------------------------------------------------------- */
/* Python float repr: the shortest digits that read back to the same double, shown in fixed
 * notation when -4 <= exponent < 16, else as d.ddde+XX. */
void jv_fmt_float(char *buf, size_t cap, double f) {
    if (isnan(f)) { snprintf(buf, cap, "nan"); return; }
    if (isinf(f)) { snprintf(buf, cap, f < 0 ? "-inf" : "inf"); return; }
    if (f == 0) { snprintf(buf, cap, signbit(f) ? "-0.0" : "0.0"); return; }
    char e[40];
    int prec;
    for (prec = 1; prec <= 17; prec++) {
        snprintf(e, sizeof e, "%.*e", prec - 1, f);
        if (strtod(e, NULL) == f) break;
    }
    /* e = [-]d.ddde[+-]XX: split into digits and exponent */
    char digits[24]; int nd = 0, neg = 0;
    const char *p = e;
    if (*p == '-') { neg = 1; p++; }
    for (; *p && *p != 'e'; p++) if (*p >= '0' && *p <= '9') digits[nd++] = *p;
    int ex = atoi(p + 1);
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    digits[nd] = 0;
    char out[64]; int k = 0;
    if (neg) out[k++] = '-';
    if (ex >= -4 && ex < 16) {
        if (ex < 0) {
            out[k++] = '0'; out[k++] = '.';
            for (int i = 0; i < -ex - 1; i++) out[k++] = '0';
            for (int i = 0; i < nd; i++) out[k++] = digits[i];
        } else {
            for (int i = 0; i <= ex; i++) out[k++] = i < nd ? digits[i] : '0';
            out[k++] = '.';
            if (nd > ex + 1) for (int i = ex + 1; i < nd; i++) out[k++] = digits[i];
            else out[k++] = '0';
        }
    } else {
        out[k++] = digits[0];
        if (nd > 1) { out[k++] = '.'; for (int i = 1; i < nd; i++) out[k++] = digits[i]; }
        k += snprintf(out + k, sizeof out - (size_t)k, "e%c%02d", ex < 0 ? '-' : '+', ex < 0 ? -ex : ex);
    }
    out[k] = 0;
    snprintf(buf, cap, "%s", out);
}

/* Python's str.isprintable() approximated: controls and C1 controls, surrogates and a few
 * format characters are escaped by repr. */
static int py_printable(uint32_t cp) {
    if (cp < 0x20 || (cp >= 0x7f && cp <= 0xa0) || cp == 0xad) return 0;
    if (cp >= 0xd800 && cp <= 0xdfff) return 0;
    if ((cp >= 0x200b && cp <= 0x200f) || (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2060 && cp <= 0x2064) ||
        cp == 0xfeff || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x205f || cp == 0x3000 ||
        cp == 0x202f || (cp >= 0xe000 && cp <= 0xf8ff))
        return 0;
    return 1;
}

static void repr_str(jctx *c, jbuf *b, const char *s, size_t n) {
    int has_sq = memchr(s, '\'', n) != NULL, has_dq = memchr(s, '"', n) != NULL;
    char q = has_sq && !has_dq ? '"' : '\'';
    jbuf_putc(c, b, q);
    size_t pos = 0;
    while (pos < n) {
        size_t st = pos;
        uint32_t cp = (uint32_t)jutf8_decode(s, n, &pos);
        if (cp == (uint32_t)q || cp == '\\') { jbuf_putc(c, b, '\\'); jbuf_putc(c, b, (char)cp); }
        else if (cp == '\n') jbuf_puts(c, b, "\\n");
        else if (cp == '\r') jbuf_puts(c, b, "\\r");
        else if (cp == '\t') jbuf_puts(c, b, "\\t");
        else if (cp < 0x80 && py_printable(cp)) jbuf_putc(c, b, (char)cp);
        else if (!py_printable(cp)) {
            if (cp < 0x100) jbuf_printf(c, b, "\\x%02x", cp);
            else if (cp < 0x10000) jbuf_printf(c, b, "\\u%04x", cp);
            else jbuf_printf(c, b, "\\U%08x", cp);
        } else jbuf_put(c, b, s + st, pos - st);
    }
    jbuf_putc(c, b, q);
}

static void print_any(jctx *c, jbuf *b, jv v, int repr, int depth) {
    if (depth > 200) jfail(c, "value nested too deeply to print");
    char t[64];
    switch (v.t) {
    case JV_UNDEF: if (repr) jbuf_puts(c, b, "Undefined"); return;
    case JV_NONE: jbuf_puts(c, b, "None"); return;
    case JV_BOOL: jbuf_puts(c, b, v.u.b ? "True" : "False"); return;
    case JV_INT: jbuf_printf(c, b, "%lld", (long long)v.u.i); return;
    case JV_FLOAT: jv_fmt_float(t, sizeof t, v.u.f); jbuf_puts(c, b, t); return;
    case JV_STR: if (repr) repr_str(c, b, v.u.s, v.n); else jbuf_put(c, b, v.u.s, v.n); return;
    case JV_LIST: {
        int tup = v.flags & JV_F_TUPLE;
        jbuf_putc(c, b, tup ? '(' : '[');
        for (size_t i = 0; i < v.u.l->n; i++) {
            if (i) jbuf_puts(c, b, ", ");
            print_any(c, b, v.u.l->v[i], 1, depth + 1);
        }
        if (tup && v.u.l->n == 1) jbuf_putc(c, b, ',');
        jbuf_putc(c, b, tup ? ')' : ']');
        return;
    }
    case JV_DICT: case JV_NS: {
        if (v.t == JV_NS) jbuf_puts(c, b, "<Namespace ");
        jbuf_putc(c, b, '{');
        for (size_t i = 0; i < v.u.d->n; i++) {
            if (i) jbuf_puts(c, b, ", ");
            print_any(c, b, v.u.d->k[i], 1, depth + 1);
            jbuf_puts(c, b, ": ");
            print_any(c, b, v.u.d->v[i], 1, depth + 1);
        }
        jbuf_putc(c, b, '}');
        if (v.t == JV_NS) jbuf_putc(c, b, '>');
        return;
    }
    case JV_MACRO: jbuf_printf(c, b, "<Macro '%s'>", v.u.m->name ? v.u.m->name : "caller"); return;
    case JV_FUNC: jbuf_printf(c, b, "<built-in method %s>", v.u.fn->name); return;
    }
}
void jv_to_str(jctx *c, jbuf *b, jv v) { print_any(c, b, v, 0, 0); }
void jv_repr(jctx *c, jbuf *b, jv v) { print_any(c, b, v, 1, 0); }
jv jv_stringify(jctx *c, jv v) {
    if (v.t == JV_STR) return v;
    jbuf b = {0};
    jv_to_str(c, &b, v);
    return jv_str_ref(b.p ? b.p : "", b.n);
}

/* ---- json.dumps ------------------------------------------------------------------------ */
static void json_str(jctx *c, jbuf *b, const char *s, size_t n) {
    jbuf_putc(c, b, '"');
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        const char *esc = NULL; char u[8];
        if (ch == '"') esc = "\\\"";
        else if (ch == '\\') esc = "\\\\";
        else if (ch == '\n') esc = "\\n";
        else if (ch == '\r') esc = "\\r";
        else if (ch == '\t') esc = "\\t";
        else if (ch == '\b') esc = "\\b";
        else if (ch == '\f') esc = "\\f";
        else if (ch < 0x20) { snprintf(u, sizeof u, "\\u%04x", ch); esc = u; }
        if (esc) {
            jbuf_put(c, b, s + run, i - run);
            jbuf_puts(c, b, esc);
            run = i + 1;
        }
    }
    jbuf_put(c, b, s + run, n - run);
    jbuf_putc(c, b, '"');
}

static void json_newline(jctx *c, jbuf *b, const char *indent, int level) {
    jbuf_putc(c, b, '\n');
    for (int i = 0; i < level; i++) jbuf_puts(c, b, indent);
}

/* Python json.dumps: dict keys must be str/int/float/bool/None (converted to strings);
 * tuples print as arrays; other values raise TypeError as json does. */
void jv_tojson(jctx *c, jbuf *b, jv v, const char *indent, const char *item_sep, const char *key_sep,
               int sort_keys, int level) {
    if (level > 200) jfail(c, "value nested too deeply for tojson");
    char t[64];
    switch (v.t) {
    case JV_NONE: jbuf_puts(c, b, "null"); return;
    case JV_BOOL: jbuf_puts(c, b, v.u.b ? "true" : "false"); return;
    case JV_INT: jbuf_printf(c, b, "%lld", (long long)v.u.i); return;
    case JV_FLOAT:
        if (isnan(v.u.f)) jbuf_puts(c, b, "NaN");
        else if (isinf(v.u.f)) jbuf_puts(c, b, v.u.f < 0 ? "-Infinity" : "Infinity");
        else { jv_fmt_float(t, sizeof t, v.u.f); jbuf_puts(c, b, t); }
        return;
    case JV_STR: json_str(c, b, v.u.s, v.n); return;
    case JV_LIST: {
        if (!v.u.l->n) { jbuf_puts(c, b, "[]"); return; }
        jbuf_putc(c, b, '[');
        for (size_t i = 0; i < v.u.l->n; i++) {
            if (i) jbuf_puts(c, b, item_sep);
            if (indent) json_newline(c, b, indent, level + 1);
            jv_tojson(c, b, v.u.l->v[i], indent, item_sep, key_sep, sort_keys, level + 1);
        }
        if (indent) json_newline(c, b, indent, level);
        jbuf_putc(c, b, ']');
        return;
    }
    case JV_DICT: {
        jdict *d = v.u.d;
        if (!d->n) { jbuf_puts(c, b, "{}"); return; }
        size_t *order = ja_alloc(c, d->n * sizeof(size_t));
        for (size_t i = 0; i < d->n; i++) order[i] = i;
        if (sort_keys) /* insertion sort: stable, keys are strings in practice */
            for (size_t i = 1; i < d->n; i++)
                for (size_t j = i; j > 0 && jv_compare(c, d->k[order[j - 1]], d->k[order[j]], "<") > 0; j--) {
                    size_t tmp = order[j]; order[j] = order[j - 1]; order[j - 1] = tmp;
                }
        jbuf_putc(c, b, '{');
        for (size_t ii = 0; ii < d->n; ii++) {
            size_t i = order[ii];
            if (ii) jbuf_puts(c, b, item_sep);
            if (indent) json_newline(c, b, indent, level + 1);
            jv k = d->k[i];
            if (k.t == JV_STR) json_str(c, b, k.u.s, k.n);
            else if (k.t == JV_INT || k.t == JV_FLOAT || k.t == JV_BOOL || k.t == JV_NONE) {
                jbuf kb = {0};
                jv_tojson(c, &kb, k, NULL, ", ", ": ", 0, level + 1);
                json_str(c, b, kb.p, kb.n);
            } else jfail(c, "keys must be str, int, float, bool or None, not %s", jv_type_name(k));
            jbuf_puts(c, b, key_sep);
            jv_tojson(c, b, d->v[i], indent, item_sep, key_sep, sort_keys, level + 1);
        }
        if (indent) json_newline(c, b, indent, level);
        jbuf_putc(c, b, '}');
        return;
    }
    default:
        jfail(c, "Object of type %s is not JSON serializable", jv_type_name(v));
    }
}
