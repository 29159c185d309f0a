/* Jinja evaluator: walks the AST with Python semantics as jinja2's sandbox applies them,
 * plus the public entry points of jinja.h.
 *
 * Scopes: the globals scope (range, namespace, dict, raise_exception, strftime_now) is the
 * parent of the variables scope, which is also where top-level `set` writes. Each for-loop
 * iteration, macro call, `with` and set-block body gets a fresh child scope, so assignments
 * there do not leak out (hence templates use namespace()); lookups walk the parents. */
#include "template/jinja.h"
#include "template/jinja_int.h"
#include "core/util.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *fmt_hint(jctx *c, const char *fmt, const char *a, const char *b);

/* ---- scopes ---------------------------------------------------------------------------- */
jscope *jscope_new(jctx *c, jscope *parent) {
    jscope *s = ja_alloc(c, sizeof(jscope));
    memset(s, 0, sizeof *s);
    s->parent = parent;
    return s;
}
/* A frame's scope: names jinja2 declares undefined at frame entry are set first. */
jscope *jscope_enter_frame(jctx *c, jscope *parent, const jnode *body) {
    jscope *s = jscope_new(c, parent);
    for (int i = 0; body && i < body->n_undef; i++)
        jdict_append(c, &s->vars, jv_str_ref(body->undef[i], strlen(body->undef[i])),
                     jv_undef(fmt_hint(c, "'%s' is undefined%s", body->undef[i], NULL)));
    return s;
}

jv jscope_lookup(jscope *sc, const char *name) {
    for (; sc; sc = sc->parent) {
        jv *v = jdict_gets(&sc->vars, name);
        if (v) return *v;
    }
    jv u = jv_undef(NULL);
    return u;
}
void jscope_set(jctx *c, jscope *sc, const char *name, jv v) {
    jv *p = jdict_gets(&sc->vars, name);
    if (p) *p = v;
    else jdict_append(c, &sc->vars, jv_str_ref(name, strlen(name)), v);
}

static const char *fmt_hint(jctx *c, const char *fmt, const char *a, const char *b) {
    size_t n = strlen(fmt) + strlen(a) + (b ? strlen(b) : 0) + 8;
    char *s = ja_alloc(c, n);
    snprintf(s, n, fmt, a, b ? b : "");
    return s;
}
/* jinja2's object_type_repr: "None", "dict object", "list object", ... */
static const char *obj_repr(jv v) {
    switch (v.t) {
    case JV_NONE: return "None";
    case JV_BOOL: return "bool object";
    case JV_INT: return "int object";
    case JV_FLOAT: return "float object";
    case JV_STR: return "str object";
    case JV_LIST: return v.flags & JV_F_TUPLE ? "tuple object" : "list object";
    case JV_DICT: return "dict object";
    case JV_NS: return "jinja2.utils.Namespace object";
    default: return "object";
    }
}
static jv undef_attr(jctx *c, jv obj, const char *name) {
    if (obj.t == JV_NONE) return jv_undef(fmt_hint(c, "'None' has no attribute '%s'%s", name, NULL));
    return jv_undef(fmt_hint(c, "'%s' has no attribute '%s'", obj_repr(obj), name));
}

#if defined(__GNUC__)
__attribute__((noreturn))
#endif
static void undefined_error(jctx *c, jv u) {
    if (u.flags & JV_F_UNSAFE) jfail(c, "%s", u.u.s);
    jfail(c, "%s", u.u.s ? u.u.s : "undefined value");
}

/* ---- attribute / item access (sandboxed) ---------------------------------------------- */
static jv bound_method(jctx *c, jv self, const char *name) {
    jfunc *f = ja_alloc(c, sizeof(jfunc));
    f->kind = JF_METHOD; f->name = name; f->self = self;
    jv v = {0}; v.t = JV_FUNC; v.u.fn = f;
    return v;
}
static jv method_or_undef(jctx *c, jv obj, const char *name, int *found) {
    int unsafe = 0;
    *found = 1;
    if (jmethod_exists(obj, name, &unsafe)) {
        if (unsafe) {
            jv u = jv_undef(fmt_hint(c, "access to attribute '%s' of '%s' object is unsafe.", name, jv_type_name(obj)));
            u.flags |= JV_F_UNSAFE;
            return u;
        }
        return bound_method(c, obj, ja_strndup(c, name, strlen(name)));
    }
    *found = 0;
    return jv_undef(NULL);
}

jv jgetattr(jctx *c, jv obj, const char *name) {
    if (obj.t == JV_UNDEF) undefined_error(c, obj);
    int found;
    if (obj.t == JV_NS) {
        jv *v = jdict_gets(obj.u.d, name);
        return v ? *v : undef_attr(c, obj, name);
    }
    jv m = method_or_undef(c, obj, name, &found);
    if (found) return m;
    if (obj.t == JV_DICT) {
        jv *v = jdict_gets(obj.u.d, name);
        if (v) return *v;
    }
    return undef_attr(c, obj, name);
}

static int64_t as_index(jv k, int *ok) {
    *ok = 1;
    if (k.t == JV_INT) return k.u.i;
    if (k.t == JV_BOOL) return k.u.b;
    *ok = 0;
    return 0;
}

jv jgetitem(jctx *c, jv obj, jv key) {
    if (obj.t == JV_UNDEF) undefined_error(c, obj);
    if (obj.t == JV_DICT || obj.t == JV_NS) {
        jv *v = jdict_get(obj.u.d, key);
        if (v) return *v;
    } else if (obj.t == JV_LIST || obj.t == JV_STR) {
        int ok; int64_t i = as_index(key, &ok);
        if (ok) {
            int64_t n = obj.t == JV_LIST ? (int64_t)obj.u.l->n : (int64_t)jutf8_len(obj.u.s, obj.n);
            if (i < 0) i += n;
            if (i >= 0 && i < n) {
                if (obj.t == JV_LIST) return obj.u.l->v[i];
                size_t a = jutf8_offset(obj.u.s, obj.n, (size_t)i), b = a;
                jutf8_decode(obj.u.s, obj.n, &b);
                return jv_str_ref(obj.u.s + a, b - a);
            }
            jbuf hb = {0};
            jbuf_printf(c, &hb, "%s has no element %lld", obj_repr(obj), (long long)key.u.i);
            return jv_undef(hb.p);
        }
    }
    if (key.t == JV_STR) {
        char *name = ja_strndup(c, key.u.s, key.n);
        if (obj.t != JV_NS) {
            int found;
            jv m = method_or_undef(c, obj, name, &found);
            if (found) return m;
        }
        return undef_attr(c, obj, name);
    }
    jbuf hb = {0};
    jbuf_printf(c, &hb, "%s has no element ", obj_repr(obj));
    jv_repr(c, &hb, key);
    return jv_undef(hb.p);
}

static int64_t slice_arg(jctx *c, jv v, int64_t dflt, int *given) {
    *given = 0;
    if (v.t == JV_NONE || v.t == JV_UNDEF) return dflt;
    int ok; int64_t i = as_index(v, &ok);
    if (!ok) jfail(c, "slice indices must be integers or None or have an __index__ method");
    *given = 1;
    return i;
}

static jv do_slice(jctx *c, jv obj, jv vs, jv ve, jv vstep) {
    if (obj.t == JV_UNDEF) undefined_error(c, obj);
    if (obj.t != JV_LIST && obj.t != JV_STR) jfail(c, "'%s' object is not subscriptable", jv_type_name(obj));
    int g;
    int64_t step = slice_arg(c, vstep, 1, &g);
    if (step == 0) jfail(c, "slice step cannot be zero");
    int64_t n = obj.t == JV_LIST ? (int64_t)obj.u.l->n : (int64_t)jutf8_len(obj.u.s, obj.n);
    int gs, ge;
    int64_t s = slice_arg(c, vs, 0, &gs), e = slice_arg(c, ve, 0, &ge);
    /* CPython PySlice_AdjustIndices */
    if (!gs) s = step < 0 ? n - 1 : 0;
    else { if (s < 0) { s += n; if (s < 0) s = step < 0 ? -1 : 0; } else if (s >= n) s = step < 0 ? n - 1 : n; }
    if (!ge) e = step < 0 ? -1 : n;
    else { if (e < 0) { e += n; if (e < 0) e = step < 0 ? -1 : 0; } else if (e >= n) e = step < 0 ? n - 1 : n; }
    if (obj.t == JV_LIST) {
        jv out = jv_list_new(c, 0);
        out.flags = obj.flags;
        for (int64_t i = s; step > 0 ? i < e : i > e; i += step) jlist_push(c, out.u.l, obj.u.l->v[i]);
        return out;
    }
    /* strings: index code points */
    size_t *offs = ja_alloc(c, (size_t)(n + 1) * sizeof(size_t));
    size_t pos = 0;
    for (int64_t i = 0; i < n; i++) { offs[i] = pos; jutf8_decode(obj.u.s, obj.n, &pos); }
    offs[n] = pos;
    if (step == 1) return e > s ? jv_str_ref(obj.u.s + offs[s], offs[e] - offs[s]) : jv_str_ref("", 0);
    jbuf b = {0};
    for (int64_t i = s; step > 0 ? i < e : i > e; i += step) jbuf_put(c, &b, obj.u.s + offs[i], offs[i + 1] - offs[i]);
    return jv_str_ref(b.p ? b.p : "", b.n);
}

/* ---- arithmetic ------------------------------------------------------------------------ */
static int is_num(jv v) { return v.t == JV_INT || v.t == JV_FLOAT || v.t == JV_BOOL; }
static double nf(jv v) { return v.t == JV_FLOAT ? v.u.f : v.t == JV_INT ? (double)v.u.i : (double)v.u.b; }
static int64_t ni(jv v) { return v.t == JV_INT ? v.u.i : v.u.b; }
static const char *opsym(int op) {
    static const char *const s[] = { "+", "-", "*", "/", "//", "%", "**", "~" };
    return op >= 0 && op <= OP_CONCAT ? s[op] : "?";
}

#if defined(__GNUC__)
__attribute__((noreturn))
#endif
static void bad_operands(jctx *c, int op, jv a, jv b) {
    if (op == OP_ADD && a.t == JV_STR)
        jfail(c, "can only concatenate str (not \"%s\") to str", jv_type_name(b));
    if (op == OP_ADD && a.t == JV_LIST)
        jfail(c, "can only concatenate %s (not \"%s\") to %s", jv_type_name(a), jv_type_name(b), jv_type_name(a));
    jfail(c, "unsupported operand type(s) for %s: '%s' and '%s'", op == OP_POW ? "** or pow()" : opsym(op),
          jv_type_name(a), jv_type_name(b));
}

static jv repeat(jctx *c, jv seq, int64_t k) {
    if (k < 0) k = 0;
    if (seq.t == JV_STR) {
        if (seq.n && (uint64_t)k > JINJA_OUTPUT_MAX / seq.n) jfail(c, "string repetition too large");
        jbuf b = {0};
        for (int64_t i = 0; i < k; i++) jbuf_put(c, &b, seq.u.s, seq.n);
        return jv_str_ref(b.p ? b.p : "", b.n);
    }
    if (seq.u.l->n && (uint64_t)k > 10000000ull / seq.u.l->n) jfail(c, "list repetition too large");
    jv out = jv_list_new(c, seq.u.l->n * (size_t)k);
    out.flags = seq.flags;
    for (int64_t i = 0; i < k; i++)
        for (size_t j = 0; j < seq.u.l->n; j++) jlist_push(c, out.u.l, seq.u.l->v[j]);
    return out;
}

static jv binop(jctx *c, int op, jv a, jv b) {
    if (op == OP_CONCAT) {
        jbuf buf = {0};
        jv_to_str(c, &buf, a); jv_to_str(c, &buf, b);
        return jv_str_ref(buf.p ? buf.p : "", buf.n);
    }
    if (a.t == JV_UNDEF) undefined_error(c, a);
    if (b.t == JV_UNDEF) undefined_error(c, b);
    if (is_num(a) && is_num(b)) {
        int fl = a.t == JV_FLOAT || b.t == JV_FLOAT;
        if (op == OP_DIV) {
            if (nf(b) == 0) jfail(c, "division by zero");
            return jv_float(nf(a) / nf(b));
        }
        if (fl) {
            double x = nf(a), y = nf(b);
            switch (op) {
            case OP_ADD: return jv_float(x + y);
            case OP_SUB: return jv_float(x - y);
            case OP_MUL: return jv_float(x * y);
            case OP_FLOORDIV: case OP_MOD: {
                if (y == 0) jfail(c, op == OP_MOD ? "float modulo" : "float floor division by zero");
                double m = fmod(x, y);
                if (m != 0 && ((y < 0) != (m < 0))) m += y;
                if (op == OP_MOD) return jv_float(m);
                return jv_float(floor((x - m) / y + 0.5) == (x - m) / y ? (x - m) / y : floor(x / y));
            }
            case OP_POW:
                if (x == 0 && y < 0) jfail(c, "0.0 cannot be raised to a negative power");
                return jv_float(pow(x, y));
            }
        } else {
            int64_t x = ni(a), y = ni(b), r;
            switch (op) {
            case OP_ADD: if (__builtin_add_overflow(x, y, &r)) jfail(c, "integer overflow"); return jv_int(r);
            case OP_SUB: if (__builtin_sub_overflow(x, y, &r)) jfail(c, "integer overflow"); return jv_int(r);
            case OP_MUL: if (__builtin_mul_overflow(x, y, &r)) jfail(c, "integer overflow"); return jv_int(r);
            case OP_FLOORDIV: case OP_MOD: {
                if (y == 0) jfail(c, "integer division or modulo by zero");
                if (x == INT64_MIN && y == -1) jfail(c, "integer overflow");
                int64_t q = x / y, m = x % y;
                if (m != 0 && ((m < 0) != (y < 0))) { m += y; q--; }
                return jv_int(op == OP_MOD ? m : q);
            }
            case OP_POW: {
                if (y < 0) {
                    if (x == 0) jfail(c, "0.0 cannot be raised to a negative power");
                    return jv_float(pow((double)x, (double)y));
                }
                int64_t res = 1, base = x;
                while (y) {
                    if (y & 1) { if (__builtin_mul_overflow(res, base, &res)) jfail(c, "integer overflow"); }
                    y >>= 1;
                    if (y && __builtin_mul_overflow(base, base, &base)) jfail(c, "integer overflow");
                }
                return jv_int(res);
            }
            }
        }
    }
    if (op == OP_ADD) {
        if (a.t == JV_STR && b.t == JV_STR) {
            jbuf buf = {0};
            jbuf_put(c, &buf, a.u.s, a.n); jbuf_put(c, &buf, b.u.s, b.n);
            return jv_str_ref(buf.p ? buf.p : "", buf.n);
        }
        if (a.t == JV_LIST && b.t == JV_LIST && (a.flags & JV_F_TUPLE) == (b.flags & JV_F_TUPLE)) {
            jv out = jv_list_new(c, a.u.l->n + b.u.l->n);
            out.flags = a.flags;
            for (size_t i = 0; i < a.u.l->n; i++) jlist_push(c, out.u.l, a.u.l->v[i]);
            for (size_t i = 0; i < b.u.l->n; i++) jlist_push(c, out.u.l, b.u.l->v[i]);
            return out;
        }
    }
    if (op == OP_MUL) {
        if ((a.t == JV_STR || a.t == JV_LIST) && (b.t == JV_INT || b.t == JV_BOOL)) return repeat(c, a, ni(b));
        if ((b.t == JV_STR || b.t == JV_LIST) && (a.t == JV_INT || a.t == JV_BOOL)) return repeat(c, b, ni(a));
    }
    if (op == OP_MOD && a.t == JV_STR) jfail(c, "printf-style string formatting (str %% value) is not supported");
    bad_operands(c, op, a, b);
}

static int contains(jctx *c, jv hay, jv needle) {
    switch (hay.t) {
    case JV_STR: {
        if (needle.t == JV_UNDEF) undefined_error(c, needle);
        if (needle.t != JV_STR) jfail(c, "'in <string>' requires string as left operand, not %s", jv_type_name(needle));
        if (!needle.n) return 1;
        if (needle.n > hay.n) return 0;
        for (size_t i = 0; i + needle.n <= hay.n; i++)
            if (!memcmp(hay.u.s + i, needle.u.s, needle.n)) return 1;
        return 0;
    }
    case JV_LIST:
        for (size_t i = 0; i < hay.u.l->n; i++) if (jv_equal(hay.u.l->v[i], needle)) return 1;
        return 0;
    case JV_DICT:
        if ((needle.t == JV_LIST && !(needle.flags & JV_F_TUPLE)) || needle.t == JV_DICT || needle.t == JV_NS)
            jfail(c, "unhashable type: '%s'", jv_type_name(needle));
        return jdict_get(hay.u.d, needle) != NULL;
    case JV_UNDEF: return 0;
    default: jfail(c, "argument of type '%s' is not iterable", jv_type_name(hay));
    }
}

/* ---- calls ----------------------------------------------------------------------------- */
typedef struct { jv *args; int n; const char **kw; jv *kwv; int nkw; } jargs;

static jargs eval_args(jctx *c, const jnode *e, jscope *sc, int extra_kw) {
    jargs a = {0};
    a.n = e->n_items;
    a.args = e->n_items ? ja_alloc(c, (size_t)e->n_items * sizeof(jv)) : NULL;
    for (int i = 0; i < e->n_items; i++) a.args[i] = jeval(c, e->items[i], sc);
    a.nkw = e->n_kw;
    a.kw = ja_alloc(c, (size_t)(e->n_kw + extra_kw + 1) * sizeof(char *));
    a.kwv = ja_alloc(c, (size_t)(e->n_kw + extra_kw + 1) * sizeof(jv));
    for (int i = 0; i < e->n_kw; i++) { a.kw[i] = e->kw[i]; a.kwv[i] = jeval(c, e->kwv[i], sc); }
    return a;
}

static jv call_macro(jctx *c, jmacro *m, jv *args, int nargs, const char **kw, jv *kwv, int nkw) {
    const jnode *def = m->def;
    if (++c->depth > JINJA_CALL_DEPTH_MAX)
        jfail(c, "maximum recursion depth exceeded (macro '%s' nested %d deep)", m->name ? m->name : "caller", JINJA_CALL_DEPTH_MAX);
    jstep(c, 1);
    jscope *sc = jscope_enter_frame(c, m->closure, def->body);
    jv varargs = jv_list_new(c, 0), kwargs = jv_dict_new(c, 0);
    varargs.flags |= JV_F_TUPLE;
    int np = def->n_kw;
    const char *mname = m->name ? m->name : "caller";
    if (nargs > np && !(def->recursive & JMACRO_USES_VARARGS))
        jfail(c, "macro '%s' takes not more than %d argument(s)", mname, np);
    char *given = ja_alloc(c, (size_t)np + 1);
    memset(given, 0, (size_t)np + 1);
    for (int i = 0; i < nargs; i++) {
        if (i < np) { jscope_set(c, sc, def->kw[i], args[i]); given[i] = 1; }
        else jlist_push(c, varargs.u.l, args[i]);
    }
    jv caller = jv_undef(NULL); int has_caller = 0;
    for (int k = 0; k < nkw; k++) {
        if (!strcmp(kw[k], "caller") && kwv[k].t == JV_MACRO) { caller = kwv[k]; has_caller = 1; continue; }
        int found = 0;
        for (int i = 0; i < np; i++)
            if (!strcmp(def->kw[i], kw[k])) {
                if (given[i]) jfail(c, "macro '%s' got multiple values for argument '%s'", m->name ? m->name : "caller", kw[k]);
                jscope_set(c, sc, def->kw[i], kwv[k]); given[i] = 1; found = 1;
            }
        if (!found) {
            if (!(def->recursive & JMACRO_USES_KWARGS)) jfail(c, "macro '%s' takes no keyword argument '%s'", mname, kw[k]);
            jdict_set(c, kwargs.u.d, jv_cstr(c, kw[k]), kwv[k]);
        }
    }
    for (int i = 0; i < np; i++) {
        if (given[i]) continue;
        if (def->kwv && def->kwv[i]) jscope_set(c, sc, def->kw[i], jeval(c, def->kwv[i], sc));
        else jscope_set(c, sc, def->kw[i], jv_undef(fmt_hint(c, "parameter '%s' was not provided%s", def->kw[i], NULL)));
    }
    jscope_set(c, sc, "varargs", varargs);
    jscope_set(c, sc, "kwargs", kwargs);
    if (has_caller) jscope_set(c, sc, "caller", caller);
    jbuf out = {0}, *saved = c->out;
    int saved_ctl = c->loop_ctl;
    c->out = &out;
    jrender_body(c, def->body, sc);
    c->out = saved;
    c->loop_ctl = saved_ctl;
    c->depth--;
    return jv_str_ref(out.p ? out.p : "", out.n);
}

jv jcall_value(jctx *c, jv fn, jv *args, int nargs, const char **kw, jv *kwv, int nkw) {
    switch (fn.t) {
    case JV_MACRO: return call_macro(c, fn.u.m, args, nargs, kw, kwv, nkw);
    case JV_FUNC:
        if (fn.u.fn->kind == JF_METHOD) return jmethod_call(c, fn.u.fn->self, fn.u.fn->name, args, nargs, kw, kwv, nkw);
        return jglobal_call(c, fn.u.fn, args, nargs, kw, kwv, nkw);
    case JV_UNDEF: undefined_error(c, fn);
    default: jfail(c, "'%s' object is not callable", jv_type_name(fn));
    }
}

static jv eval_call(jctx *c, const jnode *e, jscope *sc, jv *caller) {
    jargs a = eval_args(c, e, sc, caller ? 1 : 0);
    if (caller) { a.kw[a.nkw] = "caller"; a.kwv[a.nkw] = *caller; a.nkw++; }
    const jnode *f = e->a;
    if (f->kind == E_ATTR) { /* obj.method(...) without materializing the bound method */
        jv obj = jeval(c, f->a, sc);
        int unsafe = 0;
        if (obj.t != JV_UNDEF && obj.t != JV_NS && jmethod_exists(obj, f->name, &unsafe) && !unsafe)
            return jmethod_call(c, obj, f->name, a.args, a.n, a.kw, a.kwv, a.nkw);
        return jcall_value(c, jgetattr(c, obj, f->name), a.args, a.n, a.kw, a.kwv, a.nkw);
    }
    jv fn = jeval(c, f, sc);
    return jcall_value(c, fn, a.args, a.n, a.kw, a.kwv, a.nkw);
}

/* ---- expressions ----------------------------------------------------------------------- */
/* Every recursion of the evaluator passes here (jeval, apply_filters, jrender_body): the C
 * stack stays bounded whatever the template (a jfail longjmps out of the whole render, so
 * the count needs no unwinding). */
static void eval_enter(jctx *c, int line) {
    if (++c->eval_depth > JINJA_EVAL_DEPTH_MAX)
        jfail(c, "line %d: maximum recursion depth exceeded (evaluation nested %d deep)", line, JINJA_EVAL_DEPTH_MAX);
}

static jv apply_filters(jctx *c, const jnode *e, jv input, jscope *sc) {
    /* e: chain of E_FILTER nodes whose innermost operand is NULL (block filters) */
    eval_enter(c, e->line);
    jv v = !e->a ? input : e->a->kind == E_FILTER ? apply_filters(c, e->a, input, sc) : jeval(c, e->a, sc);
    jargs a = eval_args(c, e, sc, 0);
    jv r = jfilter_apply(c, e->name, v, a.args, a.n, a.kw, a.kwv, a.nkw, sc);
    c->eval_depth--;
    return r;
}

static jv jeval_node(jctx *c, const jnode *e, jscope *sc);

jv jeval(jctx *c, const jnode *e, jscope *sc) {
    eval_enter(c, e->line);
    jv v = jeval_node(c, e, sc);
    c->eval_depth--;
    return v;
}

static jv jeval_node(jctx *c, const jnode *e, jscope *sc) {
    switch (e->kind) {
    case E_CONST: return e->val;
    case E_NAME: {
        jv v = jscope_lookup(sc, e->name);
        if (v.t == JV_UNDEF && !v.u.s) v.u.s = fmt_hint(c, "'%s' is undefined%s", e->name, NULL);
        return v;
    }
    case E_LIST: case E_TUPLE: {
        jv l = jv_list_new(c, (size_t)e->n_items);
        if (e->kind == E_TUPLE) l.flags |= JV_F_TUPLE;
        for (int i = 0; i < e->n_items; i++) jlist_push(c, l.u.l, jeval(c, e->items[i], sc));
        return l;
    }
    case E_DICT: {
        jv d = jv_dict_new(c, (size_t)e->n_items / 2);
        for (int i = 0; i + 1 < e->n_items; i += 2) {
            jv k = jeval(c, e->items[i], sc);
            if (k.t == JV_LIST && !(k.flags & JV_F_TUPLE)) jfail(c, "unhashable type: 'list'");
            if (k.t == JV_DICT) jfail(c, "unhashable type: 'dict'");
            jdict_set(c, d.u.d, k, jeval(c, e->items[i + 1], sc));
        }
        return d;
    }
    case E_ATTR: return jgetattr(c, jeval(c, e->a, sc), e->name);
    case E_ITEM: {
        jv obj = jeval(c, e->a, sc);
        if (e->b->kind == E_SLICE) {
            const jnode *s = e->b;
            jv none = jv_none();
            return do_slice(c, obj, s->a ? jeval(c, s->a, sc) : none, s->b ? jeval(c, s->b, sc) : none,
                            s->c ? jeval(c, s->c, sc) : none);
        }
        return jgetitem(c, obj, jeval(c, e->b, sc));
    }
    case E_SLICE: jfail(c, "line %d: slice outside of a subscript", e->line);
    case E_CALL: return eval_call(c, e, sc, NULL);
    case E_FILTER: return apply_filters(c, e, jv_none(), sc);
    case E_TEST: {
        jv v = jeval(c, e->a, sc);
        jargs a = eval_args(c, e, sc, 0);
        int r = jtest_apply(c, e->name, v, a.args, a.n);
        return jv_bool(e->op ? !r : r);
    }
    case E_NEG: case E_POS: {
        jv v = jeval(c, e->a, sc);
        if (v.t == JV_UNDEF) undefined_error(c, v);
        if (v.t == JV_FLOAT) return jv_float(e->kind == E_NEG ? -v.u.f : v.u.f);
        if (v.t == JV_INT || v.t == JV_BOOL) {
            int64_t x = ni(v);
            if (e->kind == E_NEG && x == INT64_MIN) jfail(c, "integer overflow");
            return jv_int(e->kind == E_NEG ? -x : x);
        }
        jfail(c, "bad operand type for unary %c: '%s'", e->kind == E_NEG ? '-' : '+', jv_type_name(v));
    }
    case E_NOT: return jv_bool(!jv_truthy(jeval(c, e->a, sc)));
    case E_AND: { jv l = jeval(c, e->a, sc); return jv_truthy(l) ? jeval(c, e->b, sc) : l; }
    case E_OR: { jv l = jeval(c, e->a, sc); return jv_truthy(l) ? l : jeval(c, e->b, sc); }
    case E_BIN: {
        jv a = jeval(c, e->a, sc), b = jeval(c, e->b, sc);
        return binop(c, e->op, a, b);
    }
    case E_CMP: {
        jv l = jeval(c, e->items[0], sc);
        for (int i = 1; i < e->n_items; i++) {
            jv r = jeval(c, e->items[i], sc);
            int ok;
            switch (e->ops[i - 1]) {
            case OP_EQ: ok = jv_equal(l, r); break;
            case OP_NE: ok = !jv_equal(l, r); break;
            case OP_IN: ok = contains(c, r, l); break;
            case OP_NOTIN: ok = !contains(c, r, l); break;
            default: {
                if (l.t == JV_UNDEF) undefined_error(c, l);
                if (r.t == JV_UNDEF) undefined_error(c, r);
                static const char *const nm[] = { "<", "<=", ">", ">=" };
                int op = e->ops[i - 1];
                int k = jv_compare(c, l, r, nm[op - OP_LT]);
                ok = op == OP_LT ? k < 0 : op == OP_LE ? k <= 0 : op == OP_GT ? k > 0 : k >= 0;
            }
            }
            if (!ok) return jv_bool(0);
            l = r;
        }
        return jv_bool(1);
    }
    case E_COND:
        if (jv_truthy(jeval(c, e->b, sc))) return jeval(c, e->a, sc);
        return e->c ? jeval(c, e->c, sc) : jv_undef("the inline if-expression evaluated to false and no else section was defined.");
    case E_NSREF: jfail(c, "line %d: namespace reference outside of set", e->line);
    default: jfail(c, "line %d: not an expression", e->line);
    }
}

/* ---- statements ------------------------------------------------------------------------ */
static void assign(jctx *c, const jnode *target, jv v, jscope *sc) {
    if (target->kind == E_NAME) { jscope_set(c, sc, target->name, v); return; }
    if (target->kind == E_TUPLE) {
        jv items = jv_iter_items(c, v);
        size_t n = items.u.l->n, want = (size_t)target->n_items;
        if (n > want) jfail(c, "too many values to unpack (expected %zu)", want);
        if (n < want) jfail(c, "not enough values to unpack (expected %zu, got %zu)", want, n);
        for (size_t i = 0; i < n; i++) assign(c, target->items[i], items.u.l->v[i], sc);
        return;
    }
    if (target->kind == E_NSREF) {
        jv ns = jscope_lookup(sc, target->name);
        if (ns.t != JV_NS) jfail(c, "cannot assign attribute on non-namespace object");
        jv key = target->a->val;
        if (key.n && key.u.s[0] == '_')
            jfail(c, "Chat templates cannot store underscore-prefixed attributes on a namespace, but got '%.*s'. "
                     "Please rename the attribute.", (int)key.n, key.u.s);
        jdict_set(c, ns.u.d, key, v);
        return;
    }
    jfail(c, "line %d: can't assign to this expression", target->line);
}

static jv render_to_string(jctx *c, const jnode *body, jscope *sc) {
    jbuf out = {0}, *saved = c->out;
    c->out = &out;
    jrender_body(c, body, sc);
    c->out = saved;
    return jv_str_ref(out.p ? out.p : "", out.n);
}

static void render_for(jctx *c, const jnode *n, jscope *sc) {
    jv items = jv_iter_items(c, jeval(c, n->b, sc));
    jlist *src = items.u.l;
    if (n->c) { /* loop filter: `for x in y if cond` filters before loop.* are computed */
        jv kept = jv_list_new(c, src->n);
        for (size_t i = 0; i < src->n; i++) {
            jstep(c, 1);
            jscope *fs = jscope_new(c, sc);
            assign(c, n->a, src->v[i], fs);
            if (jv_truthy(jeval(c, n->c, fs))) jlist_push(c, kept.u.l, src->v[i]);
        }
        src = kept.u.l;
    }
    size_t len = src->n;
    if (!len) {
        if (n->else_body) jrender_body(c, n->else_body, jscope_enter_frame(c, sc, n->else_body));
        return;
    }
    int was_in_loop = c->in_loop;
    c->in_loop = 1;
    for (size_t i = 0; i < len; i++) {
        jstep(c, 1);
        jscope *it = jscope_enter_frame(c, sc, n->body);
        jv loop = jv_dict_new(c, 12);
        jdict *d = loop.u.d;
        jdict_append(c, d, jv_str_ref("index", 5), jv_int((int64_t)i + 1));
        jdict_append(c, d, jv_str_ref("index0", 6), jv_int((int64_t)i));
        jdict_append(c, d, jv_str_ref("revindex", 8), jv_int((int64_t)(len - i)));
        jdict_append(c, d, jv_str_ref("revindex0", 9), jv_int((int64_t)(len - i - 1)));
        jdict_append(c, d, jv_str_ref("first", 5), jv_bool(i == 0));
        jdict_append(c, d, jv_str_ref("last", 4), jv_bool(i == len - 1));
        jdict_append(c, d, jv_str_ref("length", 6), jv_int((int64_t)len));
        jdict_append(c, d, jv_str_ref("depth", 5), jv_int(1));
        jdict_append(c, d, jv_str_ref("depth0", 6), jv_int(0));
        jdict_append(c, d, jv_str_ref("previtem", 8), i ? src->v[i - 1] : jv_undef("there is no previous item"));
        jdict_append(c, d, jv_str_ref("nextitem", 8), i + 1 < len ? src->v[i + 1] : jv_undef("there is no next item"));
        jfunc *cy = ja_alloc(c, sizeof(jfunc));
        cy->kind = JF_LOOP_CYCLE; cy->name = "cycle"; cy->self = jv_int((int64_t)i);
        jv cyv = {0}; cyv.t = JV_FUNC; cyv.u.fn = cy;
        jdict_append(c, d, jv_str_ref("cycle", 5), cyv);
        loop.t = JV_NS; /* attribute access reads keys; templates cannot assign to it (not a namespace in set) */
        jscope_set(c, it, "loop", loop);
        assign(c, n->a, src->v[i], it);
        jrender_body(c, n->body, it);
        if (c->loop_ctl == 1) { c->loop_ctl = 0; break; }
        c->loop_ctl = 0;
    }
    c->in_loop = was_in_loop;
}

static void render_stmt(jctx *c, const jnode *n, jscope *sc) {
    switch (n->kind) {
    case N_TEXT: jbuf_put(c, c->out, n->val.u.s, n->val.n); return;
    case N_OUTPUT: jv_to_str(c, c->out, jeval(c, n->a, sc)); return;
    case N_BODY: jrender_body(c, n, sc); return;
    case N_IF:
        for (const jnode *x = n; x; ) {
            if (x->kind != N_IF) { jrender_body(c, x, sc); return; }
            if (jv_truthy(jeval(c, x->a, sc))) { jrender_body(c, x->b, sc); return; }
            x = x->c;
        }
        return;
    case N_FOR: render_for(c, n, sc); return;
    case N_SET: assign(c, n->a, jeval(c, n->b, sc), sc); return;
    case N_SETBLOCK: {
        jv v = render_to_string(c, n->body, jscope_enter_frame(c, sc, n->body));
        if (n->b) v = apply_filters(c, n->b, v, sc);
        assign(c, n->a, v, sc);
        return;
    }
    case N_MACRO: {
        jmacro *m = ja_alloc(c, sizeof(jmacro));
        m->def = n; m->closure = sc; m->name = n->name;
        jv v = {0}; v.t = JV_MACRO; v.u.m = m;
        jscope_set(c, sc, n->name, v);
        return;
    }
    case N_CALLBLOCK: {
        jmacro *m = ja_alloc(c, sizeof(jmacro));
        m->def = n; m->closure = sc; m->name = "caller";
        jv callerv = {0}; callerv.t = JV_MACRO; callerv.u.m = m;
        jv_to_str(c, c->out, eval_call(c, n->a, sc, &callerv));
        return;
    }
    case N_FILTERBLOCK: {
        jv v = render_to_string(c, n->body, jscope_enter_frame(c, sc, n->body));
        jv_to_str(c, c->out, apply_filters(c, n->b, v, sc));
        return;
    }
    case N_WITH: {
        jscope *ws = jscope_enter_frame(c, sc, n->body);
        for (int i = 0; i < n->n_items; i++) assign(c, n->items[i], jeval(c, n->kwv[i], sc), ws);
        jrender_body(c, n->body, ws);
        return;
    }
    case N_BREAK: c->loop_ctl = 1; return;
    case N_CONTINUE: c->loop_ctl = 2; return;
    default: jfail(c, "line %d: unknown statement", n->line);
    }
}

void jrender_body(jctx *c, const jnode *body, jscope *sc) {
    for (int i = 0; i < body->n_items; i++) {
        eval_enter(c, body->items[i]->line);
        render_stmt(c, body->items[i], sc);
        c->eval_depth--;
        if (c->loop_ctl) return;
    }
}

/* ---- entry points ---------------------------------------------------------------------- */
static jv mkfunc(jctx *c, int kind, const char *name) {
    jfunc *f = ja_alloc(c, sizeof(jfunc));
    f->kind = kind; f->name = name; f->self = jv_none();
    jv v = {0}; v.t = JV_FUNC; v.u.fn = f;
    return v;
}

typedef struct {
    const char *vars_json;          /* generic: object of variables */
    const char *messages_json, *tools_json, *bos, *eos, *extra_json;
    int add_generation_prompt, chat;
} render_req;

static char *render(const char *src, const render_req *rq, int64_t now, char *err, size_t errlen, int parse_only) {
    if (err && errlen) err[0] = 0;
    if (!src) { if (err && errlen) snprintf(err, errlen, "no template"); return NULL; }
    jctx *c = st_calloc(1, sizeof(jctx));
    if (!c) { if (err && errlen) snprintf(err, errlen, "out of memory"); return NULL; }
    char localerr[512];
    c->err = err && errlen ? err : localerr;
    c->errlen = err && errlen ? errlen : sizeof localerr;
    c->now = now;
    char *volatile result = NULL;
    if (setjmp(c->jb) == 0) {
        jlex(c, src);
        jnode *root = jparse(c);
        if (!parse_only) {
            jscope *g = jscope_new(c, NULL);
            jscope_set(c, g, "range", mkfunc(c, JF_RANGE, "range"));
            jscope_set(c, g, "namespace", mkfunc(c, JF_NAMESPACE, "namespace"));
            jscope_set(c, g, "dict", mkfunc(c, JF_DICT, "dict"));
            jscope_set(c, g, "raise_exception", mkfunc(c, JF_RAISE, "raise_exception"));
            jscope_set(c, g, "strftime_now", mkfunc(c, JF_STRFTIME, "strftime_now"));
            c->globals = g;
            jscope *vars = jscope_new(c, g);
            if (rq->chat) {
                jv msgs = jv_from_json_text(c, rq->messages_json ? rq->messages_json : "[]", "messages");
                if (msgs.t != JV_LIST) jfail(c, "messages: expected a JSON array of message objects");
                jscope_set(c, vars, "messages", msgs);
                jv tools = jv_none();
                if (rq->tools_json) {
                    tools = jv_from_json_text(c, rq->tools_json, "tools");
                    if (tools.t != JV_LIST && tools.t != JV_NONE) jfail(c, "tools: expected a JSON array");
                }
                jscope_set(c, vars, "tools", tools);
                jscope_set(c, vars, "add_generation_prompt", jv_bool(rq->add_generation_prompt));
                jscope_set(c, vars, "bos_token", jv_cstr(c, rq->bos ? rq->bos : ""));
                jscope_set(c, vars, "eos_token", jv_cstr(c, rq->eos ? rq->eos : ""));
            }
            const char *obj = rq->chat ? rq->extra_json : rq->vars_json;
            if (obj) {
                jv ex = jv_from_json_text(c, obj, rq->chat ? "extra variables" : "variables");
                if (ex.t != JV_DICT) jfail(c, "%s: expected a JSON object", rq->chat ? "extra variables" : "variables");
                for (size_t i = 0; i < ex.u.d->n; i++)
                    jscope_set(c, vars, ja_strndup(c, ex.u.d->k[i].u.s, ex.u.d->k[i].n), ex.u.d->v[i]);
            }
            jbuf out = {0};
            c->out = &out;
            /* the template's root frame sits above the variables, as jinja2's render locals */
            jrender_body(c, root, jscope_enter_frame(c, vars, root));
            result = st_malloc(out.n + 1);
            if (!result) jfail(c, "out of memory");
            if (out.n) memcpy(result, out.p, out.n);
            result[out.n] = 0;
        } else {
            result = st_malloc(1);
            if (result) result[0] = 0;
        }
    } else {
        result = NULL;
    }
    ja_free_all(&c->arena);
    st_free(c);
    return result;
}

char *jinja_render(const char *template_src, const char *vars_json, int64_t now, char *err, size_t errlen) {
    render_req rq = { .vars_json = vars_json };
    return render(template_src, &rq, now, err, errlen, 0);
}

char *jinja_render_chat_at(const char *template_src, const char *messages_json, const char *tools_json,
                           int add_generation_prompt, const char *bos_token, const char *eos_token,
                           const char *extra_vars_json, int64_t now, char *err, size_t errlen) {
    render_req rq = { .messages_json = messages_json, .tools_json = tools_json, .bos = bos_token,
                      .eos = eos_token, .extra_json = extra_vars_json,
                      .add_generation_prompt = add_generation_prompt, .chat = 1 };
    return render(template_src, &rq, now, err, errlen, 0);
}

char *jinja_render_chat(const char *template_src, const char *messages_json, const char *tools_json,
                        int add_generation_prompt, const char *bos_token, const char *eos_token,
                        const char *extra_vars_json, char *err, size_t errlen) {
    return jinja_render_chat_at(template_src, messages_json, tools_json, add_generation_prompt, bos_token,
                                eos_token, extra_vars_json, JINJA_NOW_REAL, err, errlen);
}

int jinja_check(const char *template_src, char *err, size_t errlen) {
    render_req rq = {0};
    char *r = render(template_src, &rq, JINJA_NOW_REAL, err, errlen, 1);
    if (!r) return -1;
    st_free(r);
    return 0;
}
