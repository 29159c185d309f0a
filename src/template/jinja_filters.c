/* Jinja filters, tests, the str/dict/list methods the sandbox allows, and the globals
 * (range, namespace, dict, raise_exception, strftime_now). Each follows the Python function
 * it stands for in jinja2/filters.py, jinja2/tests.py, CPython's str methods and
 * transformers' chat-template environment. */
#include "template/jinja_int.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- argument binding ------------------------------------------------------------------ */
/* Bind positional + keyword arguments to `names` (NULL-terminated); unset slots stay
 * JV_UNDEF with a NULL hint so callers can tell "not given". */
static void bind(jctx *c, const char *what, const char *const *names, jv *out, int maxn,
                 jv *args, int nargs, const char **kw, jv *kwv, int nkw) {
    int n = 0;
    while (names[n]) n++;
    if (n > maxn) n = maxn;
    for (int i = 0; i < n; i++) out[i] = jv_undef(NULL);
    if (nargs > n) jfail(c, "%s() takes at most %d argument(s) (%d given)", what, n, nargs);
    for (int i = 0; i < nargs; i++) out[i] = args[i];
    for (int k = 0; k < nkw; k++) {
        int found = 0;
        for (int i = 0; i < n; i++)
            if (!strcmp(names[i], kw[k])) { out[i] = kwv[k]; found = 1; break; }
        if (!found) jfail(c, "%s() got an unexpected keyword argument '%s'", what, kw[k]);
    }
}
static int given(jv v) { return !(v.t == JV_UNDEF && v.u.s == NULL); }

static void need_str(jctx *c, jv v, const char *what) {
    if (v.t != JV_STR) jfail(c, "%s must be str, not %s", what, jv_type_name(v));
}
static jv str_of(jctx *c, jv v) { return jv_stringify(c, v); }
static jv mkstr(jbuf *b) { return jv_str_ref(b->p ? b->p : "", b->n); }

static int64_t to_int_arg(jctx *c, jv v, const char *what) {
    if (v.t == JV_INT) return v.u.i;
    if (v.t == JV_BOOL) return v.u.b;
    jfail(c, "%s: '%s' object cannot be interpreted as an integer", what, jv_type_name(v));
}

/* ---- case mapping (ASCII, Latin-1, Latin Extended-A, Greek, Cyrillic) ------------------ */
static uint32_t cp_upper(uint32_t cp) {
    if (cp >= 'a' && cp <= 'z') return cp - 32;
    if (cp < 0x80) return cp;
    if ((cp >= 0xe0 && cp <= 0xfe && cp != 0xf7)) return cp - 32;
    if (cp == 0xff) return 0x178;
    if (cp == 0xb5) return 0x39c;
    if (cp >= 0x100 && cp <= 0x17f) {
        if ((cp >= 0x139 && cp <= 0x148) || (cp >= 0x179 && cp <= 0x17e)) return (cp & 1) ? cp : cp - 1;
        if (cp == 0x131) return 'I';
        if (cp == 0x17f) return 'S';
        if (cp != 0x138 && cp != 0x149) return (cp & 1) ? cp - 1 : cp;
        return cp;
    }
    if (cp >= 0x3b1 && cp <= 0x3c9 && cp != 0x3c2) return cp - 32;
    if (cp == 0x3c2) return 0x3a3;
    if (cp >= 0x430 && cp <= 0x44f) return cp - 32;
    if (cp >= 0x450 && cp <= 0x45f) return cp - 80;
    return cp;
}
static uint32_t cp_lower(uint32_t cp) {
    if (cp >= 'A' && cp <= 'Z') return cp + 32;
    if (cp < 0x80) return cp;
    if (cp >= 0xc0 && cp <= 0xde && cp != 0xd7) return cp + 32;
    if (cp == 0x178) return 0xff;
    if (cp >= 0x100 && cp <= 0x17f) {
        if ((cp >= 0x139 && cp <= 0x148) || (cp >= 0x179 && cp <= 0x17e)) return (cp & 1) ? cp + 1 : cp;
        if (cp == 0x130) return 'i';
        if (cp != 0x138 && cp != 0x149 && cp != 0x131 && cp != 0x17f) return (cp & 1) ? cp : cp + 1;
        return cp;
    }
    if (cp >= 0x391 && cp <= 0x3a9 && cp != 0x3a2) return cp + 32;
    if (cp >= 0x410 && cp <= 0x42f) return cp + 32;
    if (cp >= 0x400 && cp <= 0x40f) return cp + 80;
    return cp;
}
static int cp_cased(uint32_t cp) { return cp_upper(cp) != cp || cp_lower(cp) != cp; }
static int cp_is_upper(uint32_t cp) { return cp_lower(cp) != cp; }
static int cp_is_lower(uint32_t cp) { return cp_upper(cp) != cp; }

/* mode: 0 upper, 1 lower, 2 Python title, 3 capitalize */
static jv map_case(jctx *c, jv s, int mode) {
    jbuf b = {0};
    size_t pos = 0; int prev_cased = 0, first = 1;
    while (pos < s.n) {
        uint32_t cp = (uint32_t)jutf8_decode(s.u.s, s.n, &pos), o;
        switch (mode) {
        case 0: o = cp_upper(cp); break;
        case 1: o = cp_lower(cp); break;
        case 2: o = prev_cased ? cp_lower(cp) : cp_upper(cp); prev_cased = cp_cased(cp); break;
        default: o = first ? cp_upper(cp) : cp_lower(cp); break;
        }
        first = 0;
        jutf8_put(c, &b, o);
    }
    return mkstr(&b);
}

/* jinja2's do_title: split on runs of [-\s({[<], upper-case each piece's first character and
 * lower-case the rest. */
static jv jinja_title(jctx *c, jv s) {
    jbuf b = {0};
    size_t pos = 0; int at_start = 1;
    while (pos < s.n) {
        uint32_t cp = (uint32_t)jutf8_decode(s.u.s, s.n, &pos);
        int sep = cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<' || jis_py_space(cp);
        if (sep) { jutf8_put(c, &b, cp); at_start = 1; continue; }
        jutf8_put(c, &b, at_start ? cp_upper(cp) : cp_lower(cp));
        at_start = 0;
    }
    return mkstr(&b);
}

/* ---- string helpers -------------------------------------------------------------------- */
static int in_chars(uint32_t cp, jv chars) {
    if (chars.t != JV_STR) return jis_py_space(cp);
    size_t p = 0;
    while (p < chars.n) if ((uint32_t)jutf8_decode(chars.u.s, chars.n, &p) == cp) return 1;
    return 0;
}
/* which: 1 left, 2 right, 3 both */
static jv do_strip(jctx *c, jv s, jv chars, int which) {
    if (given(chars) && chars.t != JV_NONE && chars.t != JV_STR) jfail(c, "strip arg must be None or str");
    size_t a = 0, e = s.n;
    if (which & 1) {
        while (a < e) { size_t p = a; uint32_t cp = (uint32_t)jutf8_decode(s.u.s, s.n, &p); if (!in_chars(cp, chars)) break; a = p; }
    }
    if (which & 2) {
        size_t p = a, keep = a;
        while (p < e) { uint32_t cp = (uint32_t)jutf8_decode(s.u.s, s.n, &p); if (!in_chars(cp, chars)) keep = p; }
        e = keep;
    }
    return jv_str_ref(s.u.s + a, e - a);
}

static const char *find_sub(const char *h, size_t hn, const char *nd, size_t nn) {
    if (nn == 0) return h;
    if (nn > hn) return NULL;
    for (size_t i = 0; i + nn <= hn; i++) if (h[i] == nd[0] && !memcmp(h + i, nd, nn)) return h + i;
    return NULL;
}

static jv do_replace(jctx *c, jv s, jv old, jv nw, int64_t count) {
    need_str(c, old, "replace() argument 1"); need_str(c, nw, "replace() argument 2");
    jbuf b = {0};
    if (old.n == 0) { /* Python inserts `new` before every character and at the end */
        size_t pos = 0; int64_t k = 0;
        for (;;) {
            if (count < 0 || k < count) { jbuf_put(c, &b, nw.u.s, nw.n); k++; }
            if (pos >= s.n) break;
            size_t st = pos; jutf8_decode(s.u.s, s.n, &pos);
            jbuf_put(c, &b, s.u.s + st, pos - st);
        }
        return mkstr(&b);
    }
    size_t pos = 0; int64_t k = 0;
    while (pos <= s.n) {
        const char *hit = (count < 0 || k < count) ? find_sub(s.u.s + pos, s.n - pos, old.u.s, old.n) : NULL;
        if (!hit) { jbuf_put(c, &b, s.u.s + pos, s.n - pos); break; }
        size_t at = (size_t)(hit - s.u.s);
        jbuf_put(c, &b, s.u.s + pos, at - pos);
        jbuf_put(c, &b, nw.u.s, nw.n);
        pos = at + old.n; k++;
    }
    return mkstr(&b);
}

static jv do_split(jctx *c, jv s, jv sep, int64_t maxsplit, int from_right) {
    jv out = jv_list_new(c, 0);
    if (!given(sep) || sep.t == JV_NONE) {
        /* whitespace runs; leading/trailing ignored */
        size_t n = s.n;
        if (!from_right) {
            size_t pos = 0; int64_t k = 0;
            for (;;) {
                while (pos < n) { size_t p = pos; if (!jis_py_space((uint32_t)jutf8_decode(s.u.s, n, &p))) break; pos = p; }
                if (pos >= n) break;
                if (maxsplit >= 0 && k >= maxsplit) {
                    /* the rest keeps its trailing whitespace, as CPython does */
                    jlist_push(c, out.u.l, jv_str_ref(s.u.s + pos, n - pos));
                    break;
                }
                size_t st = pos;
                while (pos < n) { size_t p = pos; if (jis_py_space((uint32_t)jutf8_decode(s.u.s, n, &p))) break; pos = p; }
                jlist_push(c, out.u.l, jv_str_ref(s.u.s + st, pos - st));
                k++;
            }
            return out;
        }
        /* rsplit(): split all, then rejoin the head if maxsplit limits it */
        jv all = do_split(c, s, sep, -1, 0);
        if (maxsplit < 0 || (int64_t)all.u.l->n <= maxsplit + 1) return all;
        size_t keep = (size_t)maxsplit, head = all.u.l->n - keep;
        /* head piece spans from first word start to the end of word head-1 */
        jv first = all.u.l->v[0], last = all.u.l->v[head - 1];
        jlist_push(c, out.u.l, jv_str_ref(first.u.s, (size_t)(last.u.s + last.n - first.u.s)));
        for (size_t i = head; i < all.u.l->n; i++) jlist_push(c, out.u.l, all.u.l->v[i]);
        return out;
    }
    need_str(c, sep, "split() separator");
    if (!sep.n) jfail(c, "empty separator");
    if (!from_right) {
        size_t pos = 0; int64_t k = 0;
        for (;;) {
            const char *hit = (maxsplit < 0 || k < maxsplit) ? find_sub(s.u.s + pos, s.n - pos, sep.u.s, sep.n) : NULL;
            if (!hit) { jlist_push(c, out.u.l, jv_str_ref(s.u.s + pos, s.n - pos)); break; }
            size_t at = (size_t)(hit - s.u.s);
            jlist_push(c, out.u.l, jv_str_ref(s.u.s + pos, at - pos));
            pos = at + sep.n; k++;
        }
        return out;
    }
    /* rsplit with separator: collect from the right */
    jv rev = jv_list_new(c, 0);
    size_t end = s.n; int64_t k = 0;
    for (;;) {
        size_t found = (size_t)-1;
        if ((maxsplit < 0 || k < maxsplit) && end >= sep.n)
            for (size_t i = end - sep.n + 1; i-- > 0;) if (!memcmp(s.u.s + i, sep.u.s, sep.n)) { found = i; break; }
        if (found == (size_t)-1) { jlist_push(c, rev.u.l, jv_str_ref(s.u.s, end)); break; }
        jlist_push(c, rev.u.l, jv_str_ref(s.u.s + found + sep.n, end - found - sep.n));
        end = found; k++;
    }
    for (size_t i = rev.u.l->n; i-- > 0;) jlist_push(c, out.u.l, rev.u.l->v[i]);
    return out;
}

/* str.splitlines(keepends=False) */
static jv do_splitlines(jctx *c, jv s) {
    jv out = jv_list_new(c, 0);
    size_t pos = 0, st = 0;
    while (pos < s.n) {
        size_t p = pos;
        uint32_t cp = (uint32_t)jutf8_decode(s.u.s, s.n, &p);
        int brk = cp == '\n' || cp == '\r' || cp == 0x0b || cp == 0x0c || cp == 0x1c || cp == 0x1d || cp == 0x1e ||
                  cp == 0x85 || cp == 0x2028 || cp == 0x2029;
        if (brk) {
            jlist_push(c, out.u.l, jv_str_ref(s.u.s + st, pos - st));
            if (cp == '\r' && p < s.n && s.u.s[p] == '\n') p++;
            st = p;
        }
        pos = p;
    }
    if (st < s.n) jlist_push(c, out.u.l, jv_str_ref(s.u.s + st, s.n - st));
    return out;
}

static int prefix_match(jctx *c, jv s, jv pre, int suffix) {
    if (pre.t == JV_LIST && (pre.flags & JV_F_TUPLE)) {
        for (size_t i = 0; i < pre.u.l->n; i++) if (prefix_match(c, s, pre.u.l->v[i], suffix)) return 1;
        return 0;
    }
    if (pre.t != JV_STR)
        jfail(c, "%s first arg must be str or a tuple of str, not %s", suffix ? "endswith" : "startswith", jv_type_name(pre));
    if (pre.n > s.n) return 0;
    return !memcmp(suffix ? s.u.s + s.n - pre.n : s.u.s, pre.u.s, pre.n);
}

static int64_t count_sub(jv s, jv sub) {
    if (!sub.n) return (int64_t)jutf8_len(s.u.s, s.n) + 1;
    int64_t k = 0; size_t pos = 0;
    const char *h;
    while ((h = find_sub(s.u.s + pos, s.n - pos, sub.u.s, sub.n))) { k++; pos = (size_t)(h - s.u.s) + sub.n; }
    return k;
}

/* str.format: {} {0} {name} {{ }} with optional !r/!s; format specs are not supported. */
static jv do_format(jctx *c, jv s, jv *args, int nargs, const char **kw, jv *kwv, int nkw) {
    jbuf b = {0};
    int auto_idx = 0;
    for (size_t i = 0; i < s.n; i++) {
        char ch = s.u.s[i];
        if (ch == '{' && i + 1 < s.n && s.u.s[i + 1] == '{') { jbuf_putc(c, &b, '{'); i++; continue; }
        if (ch == '}' && i + 1 < s.n && s.u.s[i + 1] == '}') { jbuf_putc(c, &b, '}'); i++; continue; }
        if (ch == '}') jfail(c, "Single '}' encountered in format string");
        if (ch != '{') { jbuf_putc(c, &b, ch); continue; }
        size_t j = i + 1;
        while (j < s.n && s.u.s[j] != '}') j++;
        if (j >= s.n) jfail(c, "Single '{' encountered in format string");
        const char *f = s.u.s + i + 1; size_t fn = j - i - 1;
        char conv = 0;
        const char *bang = memchr(f, '!', fn), *colon = memchr(f, ':', fn);
        if (colon && colon[1] != '}' && (size_t)(colon - f) + 1 < fn) jfail(c, "format specs in str.format are not supported");
        size_t namelen = bang ? (size_t)(bang - f) : colon ? (size_t)(colon - f) : fn;
        if (bang) conv = bang[1];
        jv v;
        if (namelen == 0) {
            if (auto_idx >= nargs) jfail(c, "Replacement index %d out of range for positional args tuple", auto_idx);
            v = args[auto_idx++];
        } else if (f[0] >= '0' && f[0] <= '9') {
            int idx = atoi(f);
            if (idx >= nargs) jfail(c, "Replacement index %d out of range for positional args tuple", idx);
            v = args[idx];
        } else {
            int found = 0;
            for (int k = 0; k < nkw; k++)
                if (strlen(kw[k]) == namelen && !memcmp(kw[k], f, namelen)) { v = kwv[k]; found = 1; break; }
            if (!found) jfail(c, "KeyError: '%.*s'", (int)namelen, f);
        }
        if (conv == 'r') jv_repr(c, &b, v); else jv_to_str(c, &b, v);
        i = j;
    }
    return mkstr(&b);
}

/* ---- sequences ------------------------------------------------------------------------- */
static jv items_of(jctx *c, jv d) {
    jv l = jv_list_new(c, d.u.d->n);
    for (size_t i = 0; i < d.u.d->n; i++) {
        jv t = jv_list_new(c, 2);
        t.flags |= JV_F_TUPLE;
        jlist_push(c, t.u.l, d.u.d->k[i]);
        jlist_push(c, t.u.l, d.u.d->v[i]);
        jlist_push(c, l.u.l, t);
    }
    return l;
}

/* environment.getitem over a dotted path "a.b.0" (jinja2's make_attrgetter) */
static jv attr_path(jctx *c, jv v, jv attr) {
    if (attr.t == JV_INT) return jgetitem(c, v, attr);
    if (attr.t != JV_STR) return jgetitem(c, v, attr);
    size_t st = 0;
    for (size_t i = 0; i <= attr.n; i++) {
        if (i < attr.n && attr.u.s[i] != '.') continue;
        const char *part = attr.u.s + st; size_t pn = i - st;
        int digits = pn > 0;
        for (size_t k = 0; k < pn; k++) if (part[k] < '0' || part[k] > '9') digits = 0;
        if (digits) v = jgetitem(c, v, jv_int(strtoll(ja_strndup(c, part, pn), NULL, 10)));
        else {
            jv key = jv_str_ref(part, pn);
            if (v.t == JV_UNDEF) jfail(c, "%s", v.u.s ? v.u.s : "undefined value");
            v = jgetitem(c, v, key);
        }
        st = i + 1;
    }
    return v;
}

/* sort key for sort/unique/min/max/dictsort: strings lower-cased unless case_sensitive */
static jv sort_key(jctx *c, jv v, int case_sensitive) {
    if (!case_sensitive && v.t == JV_STR) return map_case(c, v, 1);
    return v;
}
typedef struct { jv key; jv val; } kvpair;
static void stable_sort(jctx *c, kvpair *a, size_t n, int reverse) {
    /* merge sort: stable, O(n log n) */
    if (n < 2) return;
    kvpair *tmp = ja_alloc(c, n * sizeof(kvpair));
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) {
                int cmp = jv_compare(c, a[j].key, a[i].key, "<");
                int take_right = reverse ? cmp > 0 : cmp < 0;
                tmp[k++] = take_right ? a[j++] : a[i++];
            }
            while (i < mid) tmp[k++] = a[i++];
            while (j < hi) tmp[k++] = a[j++];
        }
        memcpy(a, tmp, n * sizeof(kvpair));
        jstep(c, (long long)n / 64 + 1);
    }
}

/* ---- tests ----------------------------------------------------------------------------- */
static const char *const test_names[] = {
    "defined", "undefined", "none", "string", "number", "mapping", "iterable", "sequence", "boolean",
    "true", "false", "integer", "float", "odd", "even", "divisibleby", "eq", "equalto", "==", "ne", "!=",
    "lt", "lessthan", "<", "le", "<=", "gt", "greaterthan", ">", "ge", ">=", "in", "callable", "lower",
    "upper", "sameas", "escaped", NULL
};
int jtest_known(const char *name) {
    for (int i = 0; test_names[i]; i++) if (!strcmp(test_names[i], name)) return 1;
    return 0;
}

int jtest_apply(jctx *c, const char *t, jv v, jv *args, int nargs) {
    jv a0 = nargs > 0 ? args[0] : jv_undef(NULL);
    if (!strcmp(t, "defined")) return v.t != JV_UNDEF;
    if (!strcmp(t, "undefined")) return v.t == JV_UNDEF;
    if (!strcmp(t, "none")) return v.t == JV_NONE;
    if (!strcmp(t, "string")) return v.t == JV_STR;
    if (!strcmp(t, "number")) return v.t == JV_INT || v.t == JV_FLOAT || v.t == JV_BOOL;
    if (!strcmp(t, "mapping")) return v.t == JV_DICT;
    if (!strcmp(t, "iterable")) return v.t == JV_STR || v.t == JV_LIST || v.t == JV_DICT || v.t == JV_UNDEF;
    if (!strcmp(t, "sequence")) return v.t == JV_STR || v.t == JV_LIST || v.t == JV_DICT || v.t == JV_UNDEF;
    if (!strcmp(t, "boolean")) return v.t == JV_BOOL;
    if (!strcmp(t, "true")) return v.t == JV_BOOL && v.u.b;
    if (!strcmp(t, "false")) return v.t == JV_BOOL && !v.u.b;
    if (!strcmp(t, "integer")) return v.t == JV_INT;
    if (!strcmp(t, "float")) return v.t == JV_FLOAT;
    if (!strcmp(t, "callable")) return v.t == JV_MACRO || v.t == JV_FUNC;
    if (!strcmp(t, "escaped")) return 0;
    if (!strcmp(t, "odd") || !strcmp(t, "even")) { /* value % 2 == 1 / == 0, Python modulo */
        if (v.t == JV_UNDEF) jfail(c, "%s", v.u.s ? v.u.s : "undefined value");
        double m;
        if (v.t == JV_INT || v.t == JV_BOOL) { int64_t x = v.t == JV_INT ? v.u.i : v.u.b; m = (double)(((x % 2) + 2) % 2); }
        else if (v.t == JV_FLOAT) { m = fmod(v.u.f, 2.0); if (m < 0) m += 2.0; }
        else jfail(c, "unsupported operand type(s) for %%: '%s' and 'int'", jv_type_name(v));
        return t[0] == 'o' ? m == 1.0 : m == 0.0;
    }
    if (!strcmp(t, "divisibleby")) { /* value % num == 0 with Python's int/float modulo */
        jv r = jv_none();
        int isnum_v = v.t == JV_INT || v.t == JV_BOOL || v.t == JV_FLOAT, isnum_a = a0.t == JV_INT || a0.t == JV_BOOL || a0.t == JV_FLOAT;
        if (v.t == JV_UNDEF) jfail(c, "%s", v.u.s ? v.u.s : "undefined value");
        if (!isnum_v || !isnum_a) jfail(c, "unsupported operand type(s) for %%: '%s' and '%s'", jv_type_name(v), jv_type_name(a0));
        if (v.t != JV_FLOAT && a0.t != JV_FLOAT) {
            int64_t x = v.t == JV_INT ? v.u.i : v.u.b, d = a0.t == JV_INT ? a0.u.i : a0.u.b;
            if (d == 0) jfail(c, "integer division or modulo by zero");
            return d == -1 || x % d == 0;
        }
        double x = v.t == JV_FLOAT ? v.u.f : v.t == JV_INT ? (double)v.u.i : v.u.b;
        double d = a0.t == JV_FLOAT ? a0.u.f : a0.t == JV_INT ? (double)a0.u.i : a0.u.b;
        if (d == 0) jfail(c, "float modulo");
        (void)r;
        return fmod(x, d) == 0;
    }
    if (!strcmp(t, "lower") || !strcmp(t, "upper")) {
        jv s = str_of(c, v);
        size_t pos = 0; int cased = 0;
        while (pos < s.n) {
            uint32_t cp = (uint32_t)jutf8_decode(s.u.s, s.n, &pos);
            if (t[0] == 'l' ? cp_is_upper(cp) : cp_is_lower(cp)) return 0;
            if (cp_cased(cp)) cased = 1;
        }
        return cased;
    }
    if (!strcmp(t, "sameas")) {
        if (v.t != a0.t) return 0;
        if (v.t == JV_NONE || v.t == JV_UNDEF) return 1;
        if (v.t == JV_BOOL || v.t == JV_INT) return jv_equal(v, a0);
        if (v.t == JV_STR) return v.u.s == a0.u.s && v.n == a0.n;
        return v.u.l == a0.u.l;
    }
    if (nargs < 1 && strcmp(t, "in") != 0) jfail(c, "test '%s' needs an argument", t);
    if (!strcmp(t, "eq") || !strcmp(t, "equalto") || !strcmp(t, "==")) return jv_equal(v, a0);
    if (!strcmp(t, "ne") || !strcmp(t, "!=")) return !jv_equal(v, a0);
    if (!strcmp(t, "in")) {
        if (nargs < 1) jfail(c, "test 'in' needs an argument");
        if (a0.t == JV_STR) {
            if (v.t != JV_STR) jfail(c, "'in <string>' requires string as left operand, not %s", jv_type_name(v));
            return find_sub(a0.u.s, a0.n, v.u.s, v.n) != NULL;
        }
        if (a0.t == JV_LIST) { for (size_t i = 0; i < a0.u.l->n; i++) if (jv_equal(a0.u.l->v[i], v)) return 1; return 0; }
        if (a0.t == JV_DICT) return jdict_get(a0.u.d, v) != NULL;
        if (a0.t == JV_UNDEF) return 0;
        jfail(c, "argument of type '%s' is not iterable", jv_type_name(a0));
    }
    const char *op = NULL; int want = 0;
    if (!strcmp(t, "lt") || !strcmp(t, "lessthan") || !strcmp(t, "<")) { op = "<"; want = 0; }
    else if (!strcmp(t, "le") || !strcmp(t, "<=")) { op = "<="; want = 1; }
    else if (!strcmp(t, "gt") || !strcmp(t, "greaterthan") || !strcmp(t, ">")) { op = ">"; want = 2; }
    else if (!strcmp(t, "ge") || !strcmp(t, ">=")) { op = ">="; want = 3; }
    if (op) {
        if (v.t == JV_UNDEF) jfail(c, "%s", v.u.s ? v.u.s : "undefined value");
        int k = jv_compare(c, v, a0, op);
        return want == 0 ? k < 0 : want == 1 ? k <= 0 : want == 2 ? k > 0 : k >= 0;
    }
    jfail(c, "No test named '%s' found.", t);
}

/* ---- filters --------------------------------------------------------------------------- */
static const char *const filter_names[] = {
    "tojson", "length", "count", "trim", "upper", "lower", "title", "capitalize", "default", "d", "join",
    "replace", "items", "first", "last", "list", "string", "int", "float", "safe", "indent", "map",
    "select", "reject", "selectattr", "rejectattr", "unique", "abs", "round", "sort", "reverse", "e",
    "escape", "forceescape", "dictsort", "min", "max", "sum", "attr", "wordcount", "center", "batch", NULL
};
int jfilter_known(const char *name) {
    for (int i = 0; filter_names[i]; i++) if (!strcmp(filter_names[i], name)) return 1;
    return 0;
}

static int64_t length_of(jctx *c, jv v) {
    switch (v.t) {
    case JV_STR: return (int64_t)jutf8_len(v.u.s, v.n);
    case JV_LIST: return (int64_t)v.u.l->n;
    case JV_DICT: return (int64_t)v.u.d->n;
    case JV_UNDEF: return 0;
    default: jfail(c, "object of type '%s' has no len()", jv_type_name(v));
    }
}

static jv html_escape(jctx *c, jv s) {
    jbuf b = {0};
    for (size_t i = 0; i < s.n; i++) {
        switch (s.u.s[i]) {
        case '&': jbuf_puts(c, &b, "&amp;"); break;
        case '<': jbuf_puts(c, &b, "&lt;"); break;
        case '>': jbuf_puts(c, &b, "&gt;"); break;
        case '"': jbuf_puts(c, &b, "&#34;"); break;
        case '\'': jbuf_puts(c, &b, "&#39;"); break;
        default: jbuf_putc(c, &b, s.u.s[i]);
        }
    }
    return mkstr(&b);
}

/* json.dumps with ensure_ascii=True: non-ASCII code points as \uXXXX (surrogate pairs). */
static jv ascii_escape(jctx *c, jv s) {
    jbuf b = {0};
    size_t pos = 0;
    while (pos < s.n) {
        size_t st = pos;
        uint32_t cp = (uint32_t)jutf8_decode(s.u.s, s.n, &pos);
        if (cp < 0x80) { jbuf_put(c, &b, s.u.s + st, pos - st); continue; }
        if (cp >= 0x10000) {
            cp -= 0x10000;
            jbuf_printf(c, &b, "\\u%04x\\u%04x", 0xd800 + (cp >> 10), 0xdc00 + (cp & 0x3ff));
        } else jbuf_printf(c, &b, "\\u%04x", cp);
    }
    return mkstr(&b);
}

static jv filter_tojson(jctx *c, jv v, jv *args, int nargs, const char **kw, jv *kwv, int nkw) {
    static const char *const names[] = { "ensure_ascii", "indent", "separators", "sort_keys", NULL };
    jv p[4];
    bind(c, "tojson", names, p, 4, args, nargs, kw, kwv, nkw);
    const char *indent = NULL;
    if (given(p[1]) && p[1].t != JV_NONE) {
        if (p[1].t == JV_STR) indent = ja_strndup(c, p[1].u.s, p[1].n);
        else {
            int64_t k = to_int_arg(c, p[1], "indent");
            if (k > 1000) jfail(c, "tojson indent too large");
            char *sp = ja_alloc(c, (size_t)(k > 0 ? k : 0) + 1);
            for (int64_t i = 0; i < k; i++) sp[i] = ' ';
            sp[k > 0 ? k : 0] = 0;
            indent = sp;
        }
    }
    const char *item_sep = indent ? "," : ", ", *key_sep = ": ";
    if (given(p[2]) && p[2].t != JV_NONE) {
        if (p[2].t != JV_LIST || p[2].u.l->n != 2 || p[2].u.l->v[0].t != JV_STR || p[2].u.l->v[1].t != JV_STR)
            jfail(c, "tojson separators must be a pair of strings");
        item_sep = ja_strndup(c, p[2].u.l->v[0].u.s, p[2].u.l->v[0].n);
        key_sep = ja_strndup(c, p[2].u.l->v[1].u.s, p[2].u.l->v[1].n);
    }
    jbuf b = {0};
    jv_tojson(c, &b, v, indent, item_sep, key_sep, given(p[3]) && jv_truthy(p[3]), 0);
    jv out = mkstr(&b);
    if (given(p[0]) && jv_truthy(p[0])) out = ascii_escape(c, out);
    return out;
}

static jv filter_indent(jctx *c, jv v, jv *args, int nargs, const char **kw, jv *kwv, int nkw) {
    static const char *const names[] = { "width", "first", "blank", NULL };
    jv p[3];
    bind(c, "indent", names, p, 3, args, nargs, kw, kwv, nkw);
    jbuf ind = {0};
    if (p[0].t == JV_STR) jbuf_put(c, &ind, p[0].u.s, p[0].n);
    else {
        int64_t w = given(p[0]) ? to_int_arg(c, p[0], "indent") : 4;
        if (w > 10000) jfail(c, "indent width too large");
        for (int64_t i = 0; i < w; i++) jbuf_putc(c, &ind, ' ');
    }
    /* jinja2 does `s += "\n"` on the value itself: only strings are accepted */
    if (v.t == JV_UNDEF) jfail(c, "%s", v.u.s ? v.u.s : "undefined value");
    if (v.t != JV_STR) jfail(c, "unsupported operand type(s) for +=: '%s' and 'str'", jv_type_name(v));
    jv s = v;
    jbuf t = {0};
    jbuf_put(c, &t, s.u.s, s.n); jbuf_putc(c, &t, '\n');
    jv lines = do_splitlines(c, mkstr(&t));
    jbuf b = {0};
    int blank = given(p[2]) && jv_truthy(p[2]);
    for (size_t i = 0; i < lines.u.l->n; i++) {
        jv ln = lines.u.l->v[i];
        if (i) {
            jbuf_putc(c, &b, '\n');
            if (blank || ln.n) jbuf_put(c, &b, ind.p, ind.n);
        }
        jbuf_put(c, &b, ln.u.s, ln.n);
    }
    if (given(p[1]) && jv_truthy(p[1])) {
        jbuf r = {0};
        jbuf_put(c, &r, ind.p, ind.n); jbuf_put(c, &r, b.p, b.n);
        return mkstr(&r);
    }
    return mkstr(&b);
}

static jv filter_int(jctx *c, jv v, jv dflt, int64_t base) {
    if (v.t == JV_UNDEF) jfail(c, "%s", v.u.s ? v.u.s : "undefined value"); /* Undefined.__int__ raises */
    if (v.t == JV_INT) return v;
    if (v.t == JV_BOOL) return jv_int(v.u.b);
    if (v.t == JV_FLOAT) {
        if (!isfinite(v.u.f) || fabs(v.u.f) >= 9.2e18) return dflt;
        return jv_int((int64_t)v.u.f);
    }
    if (v.t == JV_STR) {
        jv t = do_strip(c, v, jv_none(), 3);
        char *s = ja_alloc(c, t.n + 1); size_t k = 0;
        for (size_t i = 0; i < t.n; i++) if (t.u.s[i] != '_') s[k++] = t.u.s[i];
        s[k] = 0;
        if (k) {
            char *end; 
            long long r = strtoll(s, &end, (int)base);
            if (*end == 0) return jv_int(r);
            double f = strtod(s, &end);
            if (*end == 0 && isfinite(f) && fabs(f) < 9.2e18) return jv_int((int64_t)f);
        }
    }
    return dflt;
}
static jv filter_float(jctx *c, jv v, jv dflt) {
    if (v.t == JV_UNDEF) jfail(c, "%s", v.u.s ? v.u.s : "undefined value");
    if (v.t == JV_FLOAT) return v;
    if (v.t == JV_INT) return jv_float((double)v.u.i);
    if (v.t == JV_BOOL) return jv_float(v.u.b);
    if (v.t == JV_STR) {
        jv t = do_strip(c, v, jv_none(), 3);
        char *s = ja_strndup(c, t.u.s, t.n), *end;
        if (t.n) {
            double f = strtod(s, &end);
            if (*end == 0 && !(t.n >= 2 && (s[1] == 'x' || s[1] == 'X' || (s[0] == '-' && (s[2] == 'x' || s[2] == 'X')))))
                return jv_float(f);
        }
    }
    return dflt;
}

/* select/reject/selectattr/rejectattr: apply a test (or truthiness) to each item */
static jv filter_select(jctx *c, jv v, jv *args, int nargs, int by_attr, int keep) {
    /* jinja2 yields nothing for a falsy value (none, undefined, false, 0, ''): `if value:` */
    if (!jv_truthy(v)) return jv_list_new(c, 0);
    jv seq = jv_iter_items(c, v);
    jv out = jv_list_new(c, seq.u.l->n);
    int k = 0;
    jv attr = jv_none();
    if (by_attr) {
        if (nargs < 1) jfail(c, "selectattr/rejectattr need an attribute name");
        attr = args[k++];
    }
    const char *test = NULL;
    if (k < nargs) {
        if (args[k].t != JV_STR) jfail(c, "test name must be a string");
        test = ja_strndup(c, args[k].u.s, args[k].n);
        if (!jtest_known(test)) jfail(c, "No test named '%s'.", test);
        k++;
    }
    for (size_t i = 0; i < seq.u.l->n; i++) {
        jstep(c, 1);
        jv item = seq.u.l->v[i];
        jv x = by_attr ? attr_path(c, item, attr) : item;
        int r = test ? jtest_apply(c, test, x, args + k, nargs - k) : jv_truthy(x);
        if (r == keep) jlist_push(c, out.u.l, item);
    }
    return out;
}

jv jfilter_apply(jctx *c, const char *f, jv v, jv *args, int nargs, const char **kw, jv *kwv, int nkw,
                 jscope *sc) {
    (void)sc;
    jv p[6];
    if (!strcmp(f, "tojson")) return filter_tojson(c, v, args, nargs, kw, kwv, nkw);
    if (!strcmp(f, "length") || !strcmp(f, "count")) return jv_int(length_of(c, v));
    if (!strcmp(f, "safe")) return str_of(c, v); /* Markup(value): a string */
    if (!strcmp(f, "string")) return str_of(c, v);
    if (!strcmp(f, "trim")) {
        static const char *const n[] = { "chars", NULL };
        bind(c, "trim", n, p, 1, args, nargs, kw, kwv, nkw);
        return do_strip(c, str_of(c, v), p[0], 3);
    }
    if (!strcmp(f, "upper")) return map_case(c, str_of(c, v), 0);
    if (!strcmp(f, "lower")) return map_case(c, str_of(c, v), 1);
    if (!strcmp(f, "capitalize")) return map_case(c, str_of(c, v), 3);
    if (!strcmp(f, "title")) return jinja_title(c, str_of(c, v));
    if (!strcmp(f, "default") || !strcmp(f, "d")) {
        static const char *const n[] = { "default_value", "boolean", NULL };
        bind(c, "default", n, p, 2, args, nargs, kw, kwv, nkw);
        jv dv = given(p[0]) ? p[0] : jv_str_ref("", 0);
        if (v.t == JV_UNDEF || (given(p[1]) && jv_truthy(p[1]) && !jv_truthy(v))) return dv;
        return v;
    }
    if (!strcmp(f, "join")) {
        static const char *const n[] = { "d", "attribute", NULL };
        bind(c, "join", n, p, 2, args, nargs, kw, kwv, nkw);
        jv seq = jv_iter_items(c, v);
        jv sep = given(p[0]) ? str_of(c, p[0]) : jv_str_ref("", 0);
        jbuf b = {0};
        for (size_t i = 0; i < seq.u.l->n; i++) {
            if (i) jbuf_put(c, &b, sep.u.s, sep.n);
            jv x = seq.u.l->v[i];
            if (given(p[1])) x = attr_path(c, x, p[1]);
            jv_to_str(c, &b, x);
        }
        return mkstr(&b);
    }
    if (!strcmp(f, "replace")) {
        static const char *const n[] = { "old", "new", "count", NULL };
        bind(c, "replace", n, p, 3, args, nargs, kw, kwv, nkw);
        if (!given(p[0]) || !given(p[1])) jfail(c, "replace() needs old and new");
        int64_t cnt = given(p[2]) && p[2].t != JV_NONE ? to_int_arg(c, p[2], "replace") : -1;
        return do_replace(c, str_of(c, v), str_of(c, p[0]), str_of(c, p[1]), cnt);
    }
    if (!strcmp(f, "items")) {
        if (v.t == JV_UNDEF) return jv_list_new(c, 0);
        if (v.t != JV_DICT) jfail(c, "Can only get item pairs from a mapping.");
        return items_of(c, v);
    }
    if (!strcmp(f, "dictsort")) {
        static const char *const n[] = { "case_sensitive", "by", "reverse", NULL };
        bind(c, "dictsort", n, p, 3, args, nargs, kw, kwv, nkw);
        if (v.t != JV_DICT) jfail(c, "dictsort: '%s' object has no attribute 'items'", jv_type_name(v));
        int by_value = given(p[1]) && jv_is_str(p[1], "value");
        if (given(p[1]) && !by_value && !jv_is_str(p[1], "key")) jfail(c, "You can only sort by either \"key\" or \"value\"");
        jv its = items_of(c, v);
        size_t n2 = its.u.l->n;
        kvpair *a = ja_alloc(c, (n2 + 1) * sizeof(kvpair));
        for (size_t i = 0; i < n2; i++) {
            a[i].val = its.u.l->v[i];
            a[i].key = sort_key(c, its.u.l->v[i].u.l->v[by_value ? 1 : 0], given(p[0]) && jv_truthy(p[0]));
        }
        stable_sort(c, a, n2, given(p[2]) && jv_truthy(p[2]));
        jv out = jv_list_new(c, n2);
        for (size_t i = 0; i < n2; i++) jlist_push(c, out.u.l, a[i].val);
        return out;
    }
    if (!strcmp(f, "first") || !strcmp(f, "last")) {
        jv seq = jv_iter_items(c, v);
        if (!seq.u.l->n) return jv_undef(f[0] == 'f' ? "No first item, sequence was empty." : "No last item, sequence was empty.");
        return seq.u.l->v[f[0] == 'f' ? 0 : seq.u.l->n - 1];
    }
    if (!strcmp(f, "list")) {
        jv seq = jv_iter_items(c, v);
        if (seq.t == JV_LIST && v.t == JV_LIST) { /* copy: a tuple becomes a list */
            jv out = jv_list_new(c, seq.u.l->n);
            for (size_t i = 0; i < seq.u.l->n; i++) jlist_push(c, out.u.l, seq.u.l->v[i]);
            return out;
        }
        return seq;
    }
    if (!strcmp(f, "int")) {
        static const char *const n[] = { "default", "base", NULL };
        bind(c, "int", n, p, 2, args, nargs, kw, kwv, nkw);
        return filter_int(c, v, given(p[0]) ? p[0] : jv_int(0), given(p[1]) ? to_int_arg(c, p[1], "int") : 10);
    }
    if (!strcmp(f, "float")) {
        static const char *const n[] = { "default", NULL };
        bind(c, "float", n, p, 1, args, nargs, kw, kwv, nkw);
        return filter_float(c, v, given(p[0]) ? p[0] : jv_float(0.0));
    }
    if (!strcmp(f, "indent")) return filter_indent(c, v, args, nargs, kw, kwv, nkw);
    if (!strcmp(f, "map")) {
        if (!jv_truthy(v)) return jv_list_new(c, 0);    /* as select: jinja2's `if value:` */
        jv seq = jv_iter_items(c, v);
        jv out = jv_list_new(c, seq.u.l->n);
        jv attr = jv_undef(NULL), dflt = jv_undef(NULL);
        int has_attr = 0, has_default = 0;
        for (int k = 0; k < nkw; k++) {
            if (!strcmp(kw[k], "attribute")) { attr = kwv[k]; has_attr = 1; }
            else if (!strcmp(kw[k], "default")) { dflt = kwv[k]; has_default = 1; }
        }
        if (has_attr) {
            for (size_t i = 0; i < seq.u.l->n; i++) {
                jstep(c, 1);
                jv x = attr_path(c, seq.u.l->v[i], attr);
                if (x.t == JV_UNDEF && has_default) x = dflt;
                jlist_push(c, out.u.l, x);
            }
            return out;
        }
        if (nargs < 1 || args[0].t != JV_STR) jfail(c, "map: expected a filter name or attribute=");
        const char *name = ja_strndup(c, args[0].u.s, args[0].n);
        if (!jfilter_known(name)) jfail(c, "No filter named '%s'.", name);
        for (size_t i = 0; i < seq.u.l->n; i++) {
            jstep(c, 1);
            jlist_push(c, out.u.l, jfilter_apply(c, name, seq.u.l->v[i], args + 1, nargs - 1, kw, kwv, nkw, sc));
        }
        return out;
    }
    if (!strcmp(f, "select")) return filter_select(c, v, args, nargs, 0, 1);
    if (!strcmp(f, "reject")) return filter_select(c, v, args, nargs, 0, 0);
    if (!strcmp(f, "selectattr")) return filter_select(c, v, args, nargs, 1, 1);
    if (!strcmp(f, "rejectattr")) return filter_select(c, v, args, nargs, 1, 0);
    if (!strcmp(f, "unique") || !strcmp(f, "min") || !strcmp(f, "max") || !strcmp(f, "sort")) {
        int is_sort = f[0] == 's';
        static const char *const nu[] = { "case_sensitive", "attribute", NULL };
        static const char *const ns[] = { "reverse", "case_sensitive", "attribute", NULL };
        bind(c, f, is_sort ? ns : nu, p, is_sort ? 3 : 2, args, nargs, kw, kwv, nkw);
        jv cs = is_sort ? p[1] : p[0], attr = is_sort ? p[2] : p[1];
        int case_sensitive = given(cs) && jv_truthy(cs);
        jv seq = jv_iter_items(c, v);
        size_t n2 = seq.u.l->n;
        kvpair *a = ja_alloc(c, (n2 + 1) * sizeof(kvpair));
        for (size_t i = 0; i < n2; i++) {
            jv x = seq.u.l->v[i];
            a[i].val = x;
            a[i].key = sort_key(c, given(attr) && attr.t != JV_NONE ? attr_path(c, x, attr) : x, case_sensitive);
        }
        if (f[0] == 'u') {
            jv out = jv_list_new(c, n2);
            for (size_t i = 0; i < n2; i++) {
                jstep(c, (long long)out.u.l->n / 64 + 1);
                int seen = 0;
                for (size_t j = 0; j < i && !seen; j++) {
                    int dup = jv_equal(a[j].key, a[i].key);
                    if (dup) { /* only if j itself was kept (first occurrence) */
                        seen = 1;
                    }
                }
                if (!seen) jlist_push(c, out.u.l, a[i].val);
            }
            return out;
        }
        if (is_sort) {
            stable_sort(c, a, n2, given(p[0]) && jv_truthy(p[0]));
            jv out = jv_list_new(c, n2);
            for (size_t i = 0; i < n2; i++) jlist_push(c, out.u.l, a[i].val);
            return out;
        }
        if (!n2) return jv_undef("No aggregated item, sequence was empty.");
        size_t best = 0;
        for (size_t i = 1; i < n2; i++) {
            int k = jv_compare(c, a[i].key, a[best].key, "<");
            if (f[1] == 'i' ? k < 0 : k > 0) best = i;
        }
        return a[best].val;
    }
    if (!strcmp(f, "sum")) {
        static const char *const n[] = { "attribute", "start", NULL };
        bind(c, "sum", n, p, 2, args, nargs, kw, kwv, nkw);
        jv seq = jv_iter_items(c, v);
        jv acc = given(p[1]) ? p[1] : jv_int(0);
        for (size_t i = 0; i < seq.u.l->n; i++) {
            jv x = given(p[0]) ? attr_path(c, seq.u.l->v[i], p[0]) : seq.u.l->v[i];
            if ((acc.t == JV_INT || acc.t == JV_BOOL) && (x.t == JV_INT || x.t == JV_BOOL)) {
                int64_t r;
                if (__builtin_add_overflow(acc.t == JV_INT ? acc.u.i : acc.u.b, x.t == JV_INT ? x.u.i : x.u.b, &r))
                    jfail(c, "integer overflow");
                acc = jv_int(r);
            } else if ((acc.t == JV_INT || acc.t == JV_FLOAT || acc.t == JV_BOOL) &&
                       (x.t == JV_INT || x.t == JV_FLOAT || x.t == JV_BOOL)) {
                double A = acc.t == JV_FLOAT ? acc.u.f : acc.t == JV_INT ? (double)acc.u.i : acc.u.b;
                double X = x.t == JV_FLOAT ? x.u.f : x.t == JV_INT ? (double)x.u.i : x.u.b;
                acc = jv_float(A + X);
            } else jfail(c, "unsupported operand type(s) for +: '%s' and '%s'", jv_type_name(acc), jv_type_name(x));
        }
        return acc;
    }
    if (!strcmp(f, "abs")) {
        if (v.t == JV_INT) { if (v.u.i == INT64_MIN) jfail(c, "integer overflow"); return jv_int(v.u.i < 0 ? -v.u.i : v.u.i); }
        if (v.t == JV_BOOL) return jv_int(v.u.b);
        if (v.t == JV_FLOAT) return jv_float(fabs(v.u.f));
        jfail(c, "bad operand type for abs(): '%s'", jv_type_name(v));
    }
    if (!strcmp(f, "round")) {
        static const char *const n[] = { "precision", "method", NULL };
        bind(c, "round", n, p, 2, args, nargs, kw, kwv, nkw);
        int64_t prec = given(p[0]) ? to_int_arg(c, p[0], "round") : 0;
        if (prec < -300 || prec > 300) jfail(c, "round precision out of range");
        jv m = given(p[1]) ? p[1] : jv_str_ref("common", 6);
        if (v.t != JV_INT && v.t != JV_FLOAT && v.t != JV_BOOL) jfail(c, "type %s doesn't define __round__ method", jv_type_name(v));
        double x = v.t == JV_FLOAT ? v.u.f : v.t == JV_INT ? (double)v.u.i : v.u.b;
        if (jv_is_str(m, "common")) {
            if (v.t != JV_FLOAT) return v.t == JV_BOOL ? jv_int(v.u.b) : v;
            if (!isfinite(x) || prec < 0) return jv_float(prec < 0 ? round(x / pow(10, (double)-prec)) * pow(10, (double)-prec) : x);
            char buf[400];
            snprintf(buf, sizeof buf, "%.*f", (int)prec, x); /* correctly rounded, ties to even: Python round() */
            return jv_float(strtod(buf, NULL));
        }
        double sc10 = pow(10, (double)prec);
        if (jv_is_str(m, "floor")) return jv_float(floor(x * sc10) / sc10);
        if (jv_is_str(m, "ceil")) return jv_float(ceil(x * sc10) / sc10);
        jfail(c, "method must be common, ceil or floor");
    }
    if (!strcmp(f, "reverse")) {
        if (v.t == JV_STR) {
            jv chars = jv_iter_items(c, v);
            jbuf b = {0};
            for (size_t i = chars.u.l->n; i-- > 0;) jbuf_put(c, &b, chars.u.l->v[i].u.s, chars.u.l->v[i].n);
            return mkstr(&b);
        }
        jv seq = jv_iter_items(c, v);
        jv out = jv_list_new(c, seq.u.l->n);
        for (size_t i = seq.u.l->n; i-- > 0;) jlist_push(c, out.u.l, seq.u.l->v[i]);
        return out;
    }
    if (!strcmp(f, "e") || !strcmp(f, "escape") || !strcmp(f, "forceescape")) return html_escape(c, str_of(c, v));
    if (!strcmp(f, "attr")) {
        if (nargs < 1 || args[0].t != JV_STR) jfail(c, "attr: expected an attribute name");
        return jgetattr(c, v, ja_strndup(c, args[0].u.s, args[0].n));
    }
    if (!strcmp(f, "wordcount")) {
        jv s = str_of(c, v);
        return jv_int((int64_t)do_split(c, s, jv_none(), -1, 0).u.l->n);
    }
    if (!strcmp(f, "center")) {
        int64_t w = nargs > 0 ? to_int_arg(c, args[0], "center") : 80;
        jv s = str_of(c, v);
        int64_t len = (int64_t)jutf8_len(s.u.s, s.n);
        if (w > 100000) jfail(c, "center width too large");
        if (w <= len) return s;
        int64_t marg = w - len, left = marg / 2 + (marg & w & 1);
        jbuf b = {0};
        for (int64_t i = 0; i < left; i++) jbuf_putc(c, &b, ' ');
        jbuf_put(c, &b, s.u.s, s.n);
        for (int64_t i = 0; i < marg - left; i++) jbuf_putc(c, &b, ' ');
        return mkstr(&b);
    }
    if (!strcmp(f, "batch")) {
        static const char *const n[] = { "linecount", "fill_with", NULL };
        bind(c, "batch", n, p, 2, args, nargs, kw, kwv, nkw);
        int64_t k = to_int_arg(c, p[0], "batch");
        if (k <= 0) jfail(c, "batch size must be positive");
        jv seq = jv_iter_items(c, v);
        jv out = jv_list_new(c, 0), cur = jv_list_new(c, 0);
        for (size_t i = 0; i < seq.u.l->n; i++) {
            jlist_push(c, cur.u.l, seq.u.l->v[i]);
            if ((int64_t)cur.u.l->n == k) { jlist_push(c, out.u.l, cur); cur = jv_list_new(c, 0); }
        }
        if (cur.u.l->n) {
            if (given(p[1])) while ((int64_t)cur.u.l->n < k) jlist_push(c, cur.u.l, p[1]);
            jlist_push(c, out.u.l, cur);
        }
        return out;
    }
    jfail(c, "No filter named '%s' found.", f);
}

/* ---- methods --------------------------------------------------------------------------- */
static const char *const str_methods[] = {
    "strip", "lstrip", "rstrip", "split", "rsplit", "splitlines", "startswith", "endswith", "replace",
    "upper", "lower", "title", "capitalize", "find", "rfind", "count", "format", "join", "isdigit",
    "isalpha", "isalnum", "isspace", "islower", "isupper", "index", NULL
};
static const char *const dict_methods[] = { "get", "items", "keys", "values", NULL };
static const char *const dict_unsafe[] = { "pop", "popitem", "setdefault", "update", "clear", "copy", NULL };
static const char *const list_methods[] = { "count", "index", NULL };
static const char *const list_unsafe[] = { "append", "pop", "insert", "extend", "remove", "clear", "sort", "reverse", "copy", NULL };

static int in_names(const char *const *names, const char *n) {
    for (int i = 0; names[i]; i++) if (!strcmp(names[i], n)) return 1;
    return 0;
}

int jmethod_exists(jv self, const char *name, int *unsafe) {
    *unsafe = 0;
    if (self.t == JV_STR) return in_names(str_methods, name);
    if (self.t == JV_DICT) {
        if (in_names(dict_methods, name)) return 1;
        if (in_names(dict_unsafe, name)) { *unsafe = 1; return 1; }
        return 0;
    }
    if (self.t == JV_LIST) {
        if (in_names(list_methods, name)) return 1;
        if (in_names(list_unsafe, name)) { *unsafe = 1; return 1; }
    }
    return 0;
}

static int str_all(jv s, int (*pred)(uint32_t)) {
    if (!s.n) return 0;
    size_t pos = 0;
    while (pos < s.n) if (!pred((uint32_t)jutf8_decode(s.u.s, s.n, &pos))) return 0;
    return 1;
}
static int p_digit(uint32_t c) { return c >= '0' && c <= '9'; }
static int p_alpha(uint32_t c) { return (c < 0x80 && ((c | 32) >= 'a' && (c | 32) <= 'z')) || (c >= 0x80 && cp_cased(c)); }
static int p_alnum(uint32_t c) { return p_digit(c) || p_alpha(c); }
static int p_space(uint32_t c) { return jis_py_space(c); }

static int64_t find_cp(jv s, jv sub, int from_right) {
    const char *hit = NULL;
    if (!from_right) hit = find_sub(s.u.s, s.n, sub.u.s, sub.n);
    else if (sub.n <= s.n)
        for (size_t i = s.n - sub.n + 1; i-- > 0;) if (!memcmp(s.u.s + i, sub.u.s, sub.n)) { hit = s.u.s + i; break; }
    if (!hit) return -1;
    return (int64_t)jutf8_len(s.u.s, (size_t)(hit - s.u.s));
}

jv jmethod_call(jctx *c, jv self, const char *m, jv *args, int nargs, const char **kw, jv *kwv, int nkw) {
    jv p[4];
    char what[64];
    snprintf(what, sizeof what, "%s.%s", jv_type_name(self), m);
    jstep(c, 1);
    if (self.t == JV_STR) {
        jv s = self;
        if (!strcmp(m, "strip") || !strcmp(m, "lstrip") || !strcmp(m, "rstrip")) {
            static const char *const n[] = { "chars", NULL };
            bind(c, what, n, p, 1, args, nargs, kw, kwv, nkw);
            return do_strip(c, s, p[0], m[0] == 'l' ? 1 : m[0] == 'r' ? 2 : 3);
        }
        if (!strcmp(m, "split") || !strcmp(m, "rsplit")) {
            static const char *const n[] = { "sep", "maxsplit", NULL };
            bind(c, what, n, p, 2, args, nargs, kw, kwv, nkw);
            return do_split(c, s, p[0], given(p[1]) ? to_int_arg(c, p[1], what) : -1, m[0] == 'r');
        }
        if (!strcmp(m, "splitlines")) return do_splitlines(c, s);
        if (!strcmp(m, "startswith") || !strcmp(m, "endswith")) {
            static const char *const n[] = { "prefix", "start", "end", NULL };
            bind(c, what, n, p, 3, args, nargs, kw, kwv, nkw);
            if (!given(p[0])) jfail(c, "%s() takes at least 1 argument (0 given)", m);
            jv sub = s;
            if (given(p[1]) || given(p[2])) {
                jv none = jv_none();
                jv st = given(p[1]) ? p[1] : none, en = given(p[2]) ? p[2] : none;
                /* slice in code points like Python */
                int64_t n2 = (int64_t)jutf8_len(s.u.s, s.n);
                int64_t a = st.t == JV_NONE ? 0 : to_int_arg(c, st, what), b = en.t == JV_NONE ? n2 : to_int_arg(c, en, what);
                if (a < 0) { a += n2; if (a < 0) a = 0; } if (a > n2) return jv_bool(0);
                if (b < 0) { b += n2; if (b < 0) b = 0; } if (b > n2) b = n2;
                if (b < a) b = a;
                size_t oa = jutf8_offset(s.u.s, s.n, (size_t)a), ob = jutf8_offset(s.u.s, s.n, (size_t)b);
                sub = jv_str_ref(s.u.s + oa, ob - oa);
            }
            return jv_bool(prefix_match(c, sub, p[0], m[0] == 'e'));
        }
        if (!strcmp(m, "replace")) {
            static const char *const n[] = { "old", "new", "count", NULL };
            bind(c, what, n, p, 3, args, nargs, kw, kwv, nkw);
            if (!given(p[0]) || !given(p[1])) jfail(c, "replace expected at least 2 arguments");
            return do_replace(c, s, p[0], p[1], given(p[2]) ? to_int_arg(c, p[2], what) : -1);
        }
        if (nargs == 0 && nkw == 0) {
            if (!strcmp(m, "upper")) return map_case(c, s, 0);
            if (!strcmp(m, "lower")) return map_case(c, s, 1);
            if (!strcmp(m, "title")) return map_case(c, s, 2);
            if (!strcmp(m, "capitalize")) return map_case(c, s, 3);
            if (!strcmp(m, "isdigit")) return jv_bool(str_all(s, p_digit));
            if (!strcmp(m, "isalpha")) return jv_bool(str_all(s, p_alpha));
            if (!strcmp(m, "isalnum")) return jv_bool(str_all(s, p_alnum));
            if (!strcmp(m, "isspace")) return jv_bool(str_all(s, p_space));
            if (!strcmp(m, "islower") || !strcmp(m, "isupper")) {
                size_t pos = 0; int cased = 0;
                while (pos < s.n) {
                    uint32_t cp = (uint32_t)jutf8_decode(s.u.s, s.n, &pos);
                    if (m[2] == 'l' ? cp_is_upper(cp) : cp_is_lower(cp)) return jv_bool(0);
                    if (cp_cased(cp)) cased = 1;
                }
                return jv_bool(cased);
            }
        }
        if (!strcmp(m, "find") || !strcmp(m, "rfind") || !strcmp(m, "index") || !strcmp(m, "count")) {
            if (nargs != 1 || nkw) jfail(c, "%s() takes exactly one argument (start/end are not supported)", m);
            need_str(c, args[0], what);
            if (m[0] == 'c') return jv_int(count_sub(s, args[0]));
            int64_t r = find_cp(s, args[0], m[0] == 'r');
            if (m[0] == 'i' && r < 0) jfail(c, "substring not found");
            return jv_int(r);
        }
        if (!strcmp(m, "format")) return do_format(c, s, args, nargs, kw, kwv, nkw);
        if (!strcmp(m, "join")) {
            if (nargs != 1 || nkw) jfail(c, "join() takes exactly one argument");
            jv seq = jv_iter_items(c, args[0]);
            jbuf b = {0};
            for (size_t i = 0; i < seq.u.l->n; i++) {
                if (seq.u.l->v[i].t != JV_STR)
                    jfail(c, "sequence item %zu: expected str instance, %s found", i, jv_type_name(seq.u.l->v[i]));
                if (i) jbuf_put(c, &b, s.u.s, s.n);
                jbuf_put(c, &b, seq.u.l->v[i].u.s, seq.u.l->v[i].n);
            }
            return mkstr(&b);
        }
        jfail(c, "%s() takes no arguments", m);
    }
    if (self.t == JV_DICT) {
        jdict *d = self.u.d;
        if (!strcmp(m, "get")) {
            if (nkw || nargs < 1 || nargs > 2) jfail(c, "get expected 1 or 2 arguments, got %d", nargs);
            jv *v = jdict_get(d, args[0]);
            return v ? *v : nargs > 1 ? args[1] : jv_none();
        }
        if (nargs || nkw) jfail(c, "%s() takes no arguments", m);
        if (!strcmp(m, "items")) return items_of(c, self);
        jv out = jv_list_new(c, d->n);
        for (size_t i = 0; i < d->n; i++) jlist_push(c, out.u.l, m[0] == 'k' ? d->k[i] : d->v[i]);
        return out;
    }
    if (self.t == JV_LIST) {
        if (nargs != 1 || nkw) jfail(c, "%s() takes exactly one argument", m);
        jlist *l = self.u.l;
        int64_t k = 0;
        for (size_t i = 0; i < l->n; i++)
            if (jv_equal(l->v[i], args[0])) { if (m[0] == 'i') return jv_int((int64_t)i); k++; }
        if (m[0] == 'i') jfail(c, "list.index(x): x not in list");
        return jv_int(k);
    }
    jfail(c, "'%s' object has no attribute '%s'", jv_type_name(self), m);
}

/* ---- globals --------------------------------------------------------------------------- */
jv jglobal_call(jctx *c, jfunc *f, jv *args, int nargs, const char **kw, jv *kwv, int nkw) {
    switch (f->kind) {
    case JF_RANGE: {
        if (nkw) jfail(c, "range() takes no keyword arguments");
        if (nargs < 1 || nargs > 3) jfail(c, "range expected 1 to 3 arguments, got %d", nargs);
        int64_t a = 0, b, st = 1;
        if (nargs == 1) b = to_int_arg(c, args[0], "range");
        else { a = to_int_arg(c, args[0], "range"); b = to_int_arg(c, args[1], "range"); }
        if (nargs == 3) st = to_int_arg(c, args[2], "range");
        if (st == 0) jfail(c, "range() arg 3 must not be zero");
        double cnt = st > 0 ? ((double)b - (double)a) / (double)st : ((double)a - (double)b) / (double)-st;
        if (cnt > 100000)
            jfail(c, "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
        jv out = jv_list_new(c, cnt > 0 ? (size_t)ceil(cnt) : 0);
        for (int64_t i = a; st > 0 ? i < b : i > b; i += st) jlist_push(c, out.u.l, jv_int(i));
        return out;
    }
    case JF_NAMESPACE: case JF_DICT: {
        jv d = jv_dict_new(c, (size_t)nkw);
        if (nargs > 1) jfail(c, "%s expected at most 1 positional argument, got %d", f->name, nargs);
        if (nargs == 1) {
            if (args[0].t == JV_DICT || args[0].t == JV_NS)
                for (size_t i = 0; i < args[0].u.d->n; i++) jdict_set(c, d.u.d, args[0].u.d->k[i], args[0].u.d->v[i]);
            else if (args[0].t == JV_LIST) {
                for (size_t i = 0; i < args[0].u.l->n; i++) {
                    jv pr = args[0].u.l->v[i];
                    if (pr.t != JV_LIST || pr.u.l->n != 2) jfail(c, "dictionary update sequence element #%zu has wrong length", i);
                    jdict_set(c, d.u.d, pr.u.l->v[0], pr.u.l->v[1]);
                }
            } else jfail(c, "'%s' object is not iterable", jv_type_name(args[0]));
        }
        for (int k = 0; k < nkw; k++) jdict_set(c, d.u.d, jv_cstr(c, kw[k]), kwv[k]);
        if (f->kind == JF_NAMESPACE) {
            for (size_t i = 0; i < d.u.d->n; i++)
                if (d.u.d->k[i].t == JV_STR && d.u.d->k[i].n && d.u.d->k[i].u.s[0] == '_')
                    jfail(c, "Chat templates cannot store underscore-prefixed attributes on a namespace, but got '%.*s'. "
                             "Please rename the attribute.", (int)d.u.d->k[i].n, d.u.d->k[i].u.s);
            d.t = JV_NS;
        }
        return d;
    }
    case JF_RAISE: {
        jv msg = nargs > 0 ? args[0] : nkw > 0 ? kwv[0] : jv_none();
        jv s = jv_stringify(c, msg);
        jfail(c, "%.*s", (int)s.n, s.u.s);
    }
    case JF_STRFTIME: {
        if (nargs != 1 || args[0].t != JV_STR) jfail(c, "strftime_now() expects one format string");
        time_t t;
        struct tm tmv;
        if (c->now == INT64_MIN) { t = time(NULL); localtime_r(&t, &tmv); }
        else { t = (time_t)c->now; gmtime_r(&t, &tmv); }
        char *fmt = ja_strndup(c, args[0].u.s, args[0].n);
        if (!fmt[0]) return jv_str_ref("", 0);
        char buf[1024];
        size_t k = strftime(buf, sizeof buf, fmt, &tmv);
        if (k == 0) jfail(c, "strftime_now: format '%s' produced nothing or more than 1 KiB", fmt);
        return jv_str(c, buf, k);
    }
    case JF_LOOP_CYCLE: {
        if (nargs < 1) jfail(c, "no items for cycling given");
        return args[f->self.u.i % nargs];
    }
    default: jfail(c, "'%s' is not callable", f->name);
    }
}
