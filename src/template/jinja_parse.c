/* Jinja parser: tokens -> AST, following jinja2/parser.py's grammar and precedence:
 *   condexpr < or < and < not < compare (== != < <= > >= in, not in) < + - < ~ < * / // %
 *   < ** < unary - + < primary with postfix (.attr [item] (call)) and filters/tests (| is).
 * Unknown filters/tests fail at parse time as jinja2's compiler does, except inside `if`
 * blocks and conditional expressions ("soft" frames), where they fail only when evaluated. */
#include "template/jinja_int.h"
#include <string.h>

/* cur_macro: innermost macro/call block being parsed; its `recursive` field collects
 * JMACRO_USES_* bits for the names varargs/kwargs it references (jinja2 only accepts extra
 * arguments when the body uses them). */
typedef struct { jctx *c; int soft; int loop_depth; jnode *cur_macro; } parser;

static jtok *cur(parser *P) { return &P->c->toks[P->c->pos]; }
static jtok *peek(parser *P, int k) {
    size_t i = P->c->pos + (size_t)k;
    return &P->c->toks[i < P->c->ntok ? i : P->c->ntok - 1];
}
static void adv(parser *P) { if (P->c->pos + 1 < P->c->ntok) P->c->pos++; }
static int tok_is(jtok *t, int type, const char *s) {
    return t->type == type && (!s || (t->n == strlen(s) && !memcmp(t->s, s, t->n)));
}
static int is_op(parser *P, const char *s) { return tok_is(cur(P), T_OP, s); }
static int is_name(parser *P, const char *s) { return tok_is(cur(P), T_NAME, s); }
static const char *tok_desc(parser *P, jtok *t) {
    switch (t->type) {
    case T_EOF: return "end of template";
    case T_VAR_END: return "end of print statement";
    case T_BLOCK_END: return "end of statement block";
    case T_VAR_BEGIN: return "begin of print statement";
    case T_BLOCK_BEGIN: return "begin of statement block";
    case T_DATA: return "template data";
    default: return ja_strndup(P->c, t->s ? t->s : "", t->n > 40 ? 40 : t->n);
    }
}
#if defined(__GNUC__)
__attribute__((noreturn))
#endif
static void fail_unexpected(parser *P, const char *want) {
    jtok *t = cur(P);
    jfail(P->c, "line %d: expected %s, got '%s'", t->line, want, tok_desc(P, t));
}
static void expect_op(parser *P, const char *s) { if (!is_op(P, s)) fail_unexpected(P, s); adv(P); }
static void expect_name(parser *P, const char *s) { if (!is_name(P, s)) fail_unexpected(P, s); adv(P); }
static const char *take_name(parser *P) {
    if (cur(P)->type != T_NAME) fail_unexpected(P, "a name");
    const char *s = ja_strndup(P->c, cur(P)->s, cur(P)->n);
    adv(P);
    return s;
}

static jnode *mk(parser *P, int kind) {
    jnode *n = ja_alloc(P->c, sizeof(jnode));
    memset(n, 0, sizeof *n);
    n->kind = kind; n->line = cur(P)->line;
    return n;
}
typedef struct { jnode **v; int n, cap; } nvec;
static void nv_push(parser *P, nvec *v, jnode *x) {
    if (v->n == v->cap) {
        int cap = v->cap ? v->cap * 2 : 4;
        jnode **nn = ja_alloc(P->c, (size_t)cap * sizeof(jnode *));
        if (v->n) memcpy(nn, v->v, (size_t)v->n * sizeof(jnode *));
        v->v = nn; v->cap = cap;
    }
    v->v[v->n++] = x;
}
typedef struct { const char **v; int n, cap; } svec;
static void sv_push(parser *P, svec *v, const char *x) {
    if (v->n == v->cap) {
        int cap = v->cap ? v->cap * 2 : 4;
        const char **nn = ja_alloc(P->c, (size_t)cap * sizeof(char *));
        if (v->n) memcpy(nn, v->v, (size_t)v->n * sizeof(char *));
        v->v = nn; v->cap = cap;
    }
    v->v[v->n++] = x;
}

static void enter(parser *P) {
    if (++P->c->parse_depth > JINJA_PARSE_DEPTH_MAX)
        jfail(P->c, "line %d: template nested deeper than %d levels", cur(P)->line, JINJA_PARSE_DEPTH_MAX);
}
static void leave(parser *P) { P->c->parse_depth--; }

static jnode *parse_expression(parser *P, int with_condexpr);
static jnode *parse_tuple(parser *P, int simplified, int with_condexpr, const char *extra_end, int explicit_parens);
static jnode *parse_unary(parser *P, int with_filter);
static jnode *parse_primary(parser *P);
static jnode *parse_postfix(parser *P, jnode *node);
static jnode *parse_filter_expr(parser *P, jnode *node);

static jnode *parse_condexpr(parser *P);
static jnode *parse_and(parser *P);
static jnode *parse_or(parser *P) {
    enter(P);
    int chain = 0;
    jnode *l = parse_and(P);
    while (is_name(P, "or")) {
        adv(P); enter(P); chain++;
        jnode *n = mk(P, E_OR); n->a = l; n->b = parse_and(P); l = n;
    }
    P->c->parse_depth -= chain;
    leave(P);
    return l;
}
static jnode *parse_not(parser *P);
static jnode *parse_and(parser *P) {
    jnode *l = parse_not(P);
    int chain = 0;
    while (is_name(P, "and")) {
        adv(P); enter(P); chain++;
        jnode *n = mk(P, E_AND); n->a = l; n->b = parse_not(P); l = n;
    }
    P->c->parse_depth -= chain;
    return l;
}
static jnode *parse_math1(parser *P);
static jnode *parse_compare(parser *P) {
    jnode *first = parse_math1(P);
    nvec v = {0}; int ops[64]; int nops = 0;
    nv_push(P, &v, first);
    for (;;) {
        int op = -1;
        if (is_op(P, "==")) op = OP_EQ; else if (is_op(P, "!=")) op = OP_NE;
        else if (is_op(P, "<")) op = OP_LT; else if (is_op(P, "<=")) op = OP_LE;
        else if (is_op(P, ">")) op = OP_GT; else if (is_op(P, ">=")) op = OP_GE;
        else if (is_name(P, "in")) op = OP_IN;
        else if (is_name(P, "not") && tok_is(peek(P, 1), T_NAME, "in")) { adv(P); op = OP_NOTIN; }
        if (op < 0) break;
        if (nops == 64) jfail(P->c, "line %d: comparison chain too long", cur(P)->line);
        adv(P);
        ops[nops++] = op;
        nv_push(P, &v, parse_math1(P));
    }
    if (!nops) return first;
    jnode *n = mk(P, E_CMP);
    n->items = v.v; n->n_items = v.n;
    n->ops = ja_alloc(P->c, (size_t)nops * sizeof(int));
    memcpy(n->ops, ops, (size_t)nops * sizeof(int));
    return n;
}
static jnode *parse_not(parser *P) {
    if (is_name(P, "not")) {
        enter(P);
        adv(P);
        jnode *n = mk(P, E_NOT); n->a = parse_not(P);
        leave(P);
        return n;
    }
    return parse_compare(P);
}
static jnode *bin(parser *P, int op, jnode *a, jnode *b) {
    jnode *n = mk(P, E_BIN); n->op = op; n->a = a; n->b = b; return n;
}
static jnode *parse_pow(parser *P) {
    jnode *l = parse_unary(P, 1);
    int chain = 0;
    while (is_op(P, "**")) { adv(P); enter(P); chain++; l = bin(P, OP_POW, l, parse_unary(P, 1)); }
    P->c->parse_depth -= chain;
    return l;
}
static jnode *parse_math2(parser *P) {
    jnode *l = parse_pow(P);
    int chain = 0;
    for (;;) {
        int op = is_op(P, "*") ? OP_MUL : is_op(P, "/") ? OP_DIV : is_op(P, "//") ? OP_FLOORDIV :
                 is_op(P, "%") ? OP_MOD : -1;
        if (op < 0) break;
        adv(P); enter(P); chain++;
        l = bin(P, op, l, parse_pow(P));
    }
    P->c->parse_depth -= chain;
    return l;
}
static jnode *parse_concat(parser *P) {
    jnode *l = parse_math2(P);
    int chain = 0;
    while (is_op(P, "~")) { adv(P); enter(P); chain++; l = bin(P, OP_CONCAT, l, parse_math2(P)); }
    P->c->parse_depth -= chain;
    return l;
}
static jnode *parse_math1(parser *P) {
    jnode *l = parse_concat(P);
    int chain = 0;
    for (;;) {
        int op = is_op(P, "+") ? OP_ADD : is_op(P, "-") ? OP_SUB : -1;
        if (op < 0) break;
        adv(P); enter(P); chain++;
        l = bin(P, op, l, parse_concat(P));
    }
    P->c->parse_depth -= chain;
    return l;
}
static jnode *parse_unary(parser *P, int with_filter) {
    jnode *node;
    enter(P);
    if (is_op(P, "-")) { adv(P); node = mk(P, E_NEG); node->a = parse_unary(P, 0); }
    else if (is_op(P, "+")) { adv(P); node = mk(P, E_POS); node->a = parse_unary(P, 0); }
    else node = parse_primary(P);
    node = parse_postfix(P, node);
    if (with_filter) node = parse_filter_expr(P, node);
    leave(P);
    return node;
}
static jnode *parse_condexpr(parser *P) {
    jnode *e1 = parse_or(P);
    while (is_name(P, "if")) {
        int soft = P->soft; P->soft = 1;
        adv(P);
        jnode *n = mk(P, E_COND);
        n->b = parse_or(P);       /* condition */
        n->a = e1;                /* value when true */
        if (is_name(P, "else")) { adv(P); n->c = parse_condexpr(P); }
        P->soft = soft;
        e1 = n;
    }
    return e1;
}
static jnode *parse_expression(parser *P, int with_condexpr) {
    return with_condexpr ? parse_condexpr(P) : parse_or(P);
}

static jnode *const_node(parser *P, jv v) { jnode *n = mk(P, E_CONST); n->val = v; return n; }

static jnode *parse_primary(parser *P) {
    jtok *t = cur(P);
    enter(P);
    jnode *n;
    if (t->type == T_NAME) {
        if (tok_is(t, T_NAME, "true") || tok_is(t, T_NAME, "True")) n = const_node(P, jv_bool(1));
        else if (tok_is(t, T_NAME, "false") || tok_is(t, T_NAME, "False")) n = const_node(P, jv_bool(0));
        else if (tok_is(t, T_NAME, "none") || tok_is(t, T_NAME, "None")) n = const_node(P, jv_none());
        else {
            n = mk(P, E_NAME); n->name = ja_strndup(P->c, t->s, t->n);
            if (P->cur_macro && !strcmp(n->name, "varargs")) P->cur_macro->recursive |= JMACRO_USES_VARARGS;
            if (P->cur_macro && !strcmp(n->name, "kwargs")) P->cur_macro->recursive |= JMACRO_USES_KWARGS;
        }
        adv(P);
    } else if (t->type == T_STRING) {
        jbuf b = {0};
        while (cur(P)->type == T_STRING) { jbuf_put(P->c, &b, cur(P)->s, cur(P)->n); adv(P); }
        n = const_node(P, jv_str_ref(b.p ? b.p : "", b.n));
    } else if (t->type == T_INT) { n = const_node(P, jv_int(t->i)); adv(P); }
    else if (t->type == T_FLOAT) { n = const_node(P, jv_float(t->f)); adv(P); }
    else if (tok_is(t, T_OP, "(")) {
        adv(P);
        n = parse_tuple(P, 0, 1, NULL, 1);
        expect_op(P, ")");
    } else if (tok_is(t, T_OP, "[")) {
        adv(P);
        nvec v = {0};
        while (!is_op(P, "]")) {
            if (v.n) expect_op(P, ",");
            if (is_op(P, "]")) break;
            nv_push(P, &v, parse_expression(P, 1));
        }
        expect_op(P, "]");
        n = mk(P, E_LIST); n->items = v.v; n->n_items = v.n;
    } else if (tok_is(t, T_OP, "{")) {
        adv(P);
        nvec v = {0};
        while (!is_op(P, "}")) {
            if (v.n) expect_op(P, ",");
            if (is_op(P, "}")) break;
            nv_push(P, &v, parse_expression(P, 1));
            expect_op(P, ":");
            nv_push(P, &v, parse_expression(P, 1));
        }
        expect_op(P, "}");
        n = mk(P, E_DICT); n->items = v.v; n->n_items = v.n;
    } else {
        jfail(P->c, "line %d: unexpected '%s'", t->line, tok_desc(P, t));
    }
    leave(P);
    return n;
}

/* Tuple or single expression; `extra_end` names a keyword that ends it (for targets: "in"). */
static jnode *parse_tuple(parser *P, int simplified, int with_condexpr, const char *extra_end, int explicit_parens) {
    nvec v = {0};
    int is_tuple = 0;
    for (;;) {
        if (v.n) expect_op(P, ",");
        jtok *t = cur(P);
        if (t->type == T_VAR_END || t->type == T_BLOCK_END || tok_is(t, T_OP, ")") ||
            (extra_end && tok_is(t, T_NAME, extra_end)))
            break;
        nv_push(P, &v, simplified ? parse_primary(P) : parse_expression(P, with_condexpr));
        if (is_op(P, ",")) is_tuple = 1; else break;
    }
    if (!is_tuple) {
        if (v.n) return v.v[0];
        if (!explicit_parens) fail_unexpected(P, "an expression");
    }
    jnode *n = mk(P, E_TUPLE); n->items = v.v; n->n_items = v.n;
    return n;
}

static void parse_call_args(parser *P, jnode *n) {
    expect_op(P, "(");
    nvec args = {0}, kwv = {0}; svec kw = {0};
    while (!is_op(P, ")")) {
        if (args.n || kw.n) { expect_op(P, ","); if (is_op(P, ")")) break; }
        if (is_op(P, "*") || is_op(P, "**"))
            jfail(P->c, "line %d: *args / **kwargs in calls are not supported", cur(P)->line);
        if (cur(P)->type == T_NAME && tok_is(peek(P, 1), T_OP, "=")) {
            sv_push(P, &kw, take_name(P));
            adv(P);
            nv_push(P, &kwv, parse_expression(P, 1));
        } else {
            if (kw.n) jfail(P->c, "line %d: positional argument follows keyword argument", cur(P)->line);
            nv_push(P, &args, parse_expression(P, 1));
        }
    }
    expect_op(P, ")");
    n->items = args.v; n->n_items = args.n;
    n->kw = kw.v; n->kwv = kwv.v; n->n_kw = kw.n;
}

static jnode *parse_subscribed(parser *P) {
    jnode *parts[3] = { NULL, NULL, NULL };
    if (is_op(P, ":")) adv(P);
    else {
        jnode *e = parse_expression(P, 1);
        if (!is_op(P, ":")) return e;
        adv(P);
        parts[0] = e;
    }
    if (!is_op(P, ":") && !is_op(P, "]") && !is_op(P, ",")) parts[1] = parse_expression(P, 1);
    if (is_op(P, ":")) {
        adv(P);
        if (!is_op(P, "]") && !is_op(P, ",")) parts[2] = parse_expression(P, 1);
    }
    jnode *n = mk(P, E_SLICE);
    n->a = parts[0]; n->b = parts[1]; n->c = parts[2];
    return n;
}

static jnode *parse_postfix(parser *P, jnode *node) {
    int chain = 0;
    for (;; enter(P), chain++) {
        if (is_op(P, ".")) {
            adv(P);
            jtok *t = cur(P);
            if (t->type == T_NAME) {
                jnode *n = mk(P, E_ATTR); n->a = node; n->name = take_name(P); node = n;
            } else if (t->type == T_INT) {
                jnode *n = mk(P, E_ITEM); n->a = node; n->b = const_node(P, jv_int(t->i)); adv(P); node = n;
            } else fail_unexpected(P, "name or number");
        } else if (is_op(P, "[")) {
            adv(P);
            nvec v = {0};
            while (!is_op(P, "]")) {
                if (v.n) { expect_op(P, ","); if (is_op(P, "]")) break; }
                nv_push(P, &v, parse_subscribed(P));
            }
            expect_op(P, "]");
            if (!v.n) jfail(P->c, "line %d: empty subscript", cur(P)->line);
            jnode *n = mk(P, E_ITEM); n->a = node;
            if (v.n == 1) n->b = v.v[0];
            else { jnode *t = mk(P, E_TUPLE); t->items = v.v; t->n_items = v.n; n->b = t; }
            node = n;
        } else if (is_op(P, "(")) {
            jnode *n = mk(P, E_CALL); n->a = node;
            parse_call_args(P, n);
            node = n;
        } else break;
    }
    P->c->parse_depth -= chain;
    return node;
}

static const char *dotted_name(parser *P) {
    const char *nm = take_name(P);
    while (is_op(P, ".") && peek(P, 1)->type == T_NAME) {
        adv(P);
        const char *more = take_name(P);
        size_t a = strlen(nm), b = strlen(more);
        char *s = ja_alloc(P->c, a + b + 2);
        memcpy(s, nm, a); s[a] = '.'; memcpy(s + a + 1, more, b + 1);
        nm = s;
    }
    return nm;
}

static jnode *parse_filter(parser *P, jnode *node) {
    /* cur is after '|' */
    jnode *n = mk(P, E_FILTER);
    n->a = node;
    n->name = dotted_name(P);
    if (!jfilter_known(n->name) && !P->soft) jfail(P->c, "No filter named '%s'.", n->name);
    if (is_op(P, "(")) parse_call_args(P, n);
    return n;
}

static jnode *parse_test(parser *P, jnode *node) {
    adv(P); /* 'is' */
    int neg = 0;
    if (is_name(P, "not")) { adv(P); neg = 1; }
    jnode *n = mk(P, E_TEST);
    n->a = node; n->op = neg;
    n->name = dotted_name(P);
    if (!jtest_known(n->name) && !P->soft) jfail(P->c, "No test named '%s'.", n->name);
    jtok *t = cur(P);
    if (tok_is(t, T_OP, "(")) parse_call_args(P, n);
    else if ((t->type == T_NAME || t->type == T_STRING || t->type == T_INT || t->type == T_FLOAT ||
              tok_is(t, T_OP, "[") || tok_is(t, T_OP, "{")) &&
             !tok_is(t, T_NAME, "else") && !tok_is(t, T_NAME, "or") && !tok_is(t, T_NAME, "and")) {
        if (tok_is(t, T_NAME, "is")) jfail(P->c, "line %d: You cannot chain multiple tests with is", t->line);
        jnode *arg = parse_postfix(P, parse_primary(P));
        n->items = ja_alloc(P->c, sizeof(jnode *));
        n->items[0] = arg; n->n_items = 1;
    }
    return n;
}

static jnode *parse_filter_expr(parser *P, jnode *node) {
    int chain = 0;
    for (;; enter(P), chain++) {
        if (is_op(P, "|")) { adv(P); node = parse_filter(P, node); }
        else if (is_name(P, "is")) node = parse_test(P, node);
        else if (is_op(P, "(")) { jnode *n = mk(P, E_CALL); n->a = node; parse_call_args(P, n); node = n; }
        else break;
    }
    P->c->parse_depth -= chain;
    return node;
}

/* ---- statements ------------------------------------------------------------------------ */
static jnode *subparse(parser *P, const char *const *ends);

static int end_matches(parser *P, const char *const *ends) {
    if (!ends) return 0;
    for (int i = 0; ends[i]; i++) if (is_name(P, ends[i])) return 1;
    return 0;
}
static void expect_block_end(parser *P) {
    if (cur(P)->type != T_BLOCK_END) fail_unexpected(P, "end of statement block");
    adv(P);
}

static jnode *parse_assign_target(parser *P, int with_namespace, const char *extra_end) {
    if (with_namespace && cur(P)->type == T_NAME && tok_is(peek(P, 1), T_OP, ".")) {
        jnode *n = mk(P, E_NSREF);
        n->name = take_name(P);         /* namespace variable */
        adv(P);
        jnode *attr = mk(P, E_CONST);
        const char *a = take_name(P);
        attr->val = jv_str_ref(a, strlen(a));
        n->a = attr;
        return n;
    }
    jnode *t = parse_tuple(P, 1, 1, extra_end, 0);
    if (t->kind == E_NAME) return t;
    if (t->kind == E_TUPLE) {
        for (int i = 0; i < t->n_items; i++)
            if (t->items[i]->kind != E_NAME) jfail(P->c, "line %d: can't assign to this expression", t->line);
        return t;
    }
    jfail(P->c, "line %d: can't assign to this expression", t->line);
}

static void parse_signature(parser *P, jnode *n) {
    svec names = {0}; nvec defs = {0};
    expect_op(P, "(");
    while (!is_op(P, ")")) {
        if (names.n) expect_op(P, ",");
        sv_push(P, &names, take_name(P));
        if (is_op(P, "=")) { adv(P); nv_push(P, &defs, parse_expression(P, 1)); }
        else {
            nv_push(P, &defs, NULL);
        }
    }
    expect_op(P, ")");
    n->kw = names.v; n->kwv = defs.v; n->n_kw = names.n;
}

static jnode *parse_statement(parser *P) {
    jtok *t = cur(P);
    if (t->type != T_NAME) fail_unexpected(P, "a tag name");
    int line = t->line;
    jnode *n;
    int soft = P->soft;
    if (is_name(P, "for")) {
        adv(P);
        n = mk(P, N_FOR); n->line = line;
        n->a = parse_assign_target(P, 0, "in");
        expect_name(P, "in");
        n->b = parse_tuple(P, 0, 0, "recursive", 0);
        if (is_name(P, "if")) { adv(P); n->c = parse_expression(P, 1); }
        if (is_name(P, "recursive")) { adv(P); n->recursive = 1; }
        expect_block_end(P);
        P->soft = 0;
        P->loop_depth++;
        static const char *const e1[] = { "endfor", "else", NULL };
        n->body = subparse(P, e1);
        P->loop_depth--;
        if (is_name(P, "else")) {
            adv(P); expect_block_end(P);
            static const char *const e2[] = { "endfor", NULL };
            n->else_body = subparse(P, e2);
        }
        expect_name(P, "endfor");
    } else if (is_name(P, "if")) {
        adv(P);
        n = mk(P, N_IF); n->line = line;
        P->soft = 1;
        jnode *node = n;
        for (;;) {
            node->a = parse_tuple(P, 0, 0, NULL, 0);
            expect_block_end(P);
            static const char *const e[] = { "elif", "else", "endif", NULL };
            node->b = subparse(P, e);
            if (is_name(P, "elif")) {
                adv(P);
                jnode *el = mk(P, N_IF);
                node->c = el; node = el;
                continue;
            }
            if (is_name(P, "else")) {
                adv(P); expect_block_end(P);
                static const char *const e2[] = { "endif", NULL };
                node->c = subparse(P, e2);
            }
            break;
        }
        expect_name(P, "endif");
    } else if (is_name(P, "set")) {
        adv(P);
        jnode *target = parse_assign_target(P, 1, NULL);
        if (is_op(P, "=")) {
            adv(P);
            n = mk(P, N_SET); n->line = line;
            n->a = target;
            n->b = parse_tuple(P, 0, 1, NULL, 0);
        } else {
            n = mk(P, N_SETBLOCK); n->line = line;
            n->a = target;
            if (is_op(P, "|")) { adv(P); n->b = parse_filter(P, NULL); while (is_op(P, "|")) { adv(P); n->b = parse_filter(P, n->b); } }
            expect_block_end(P);
            P->soft = 0;
            static const char *const e[] = { "endset", NULL };
            n->body = subparse(P, e);
            expect_name(P, "endset");
        }
    } else if (is_name(P, "macro")) {
        adv(P);
        n = mk(P, N_MACRO); n->line = line;
        n->name = take_name(P);
        parse_signature(P, n);
        expect_block_end(P);
        P->soft = 0;
        int ld = P->loop_depth; P->loop_depth = 0;
        jnode *outer = P->cur_macro; P->cur_macro = n;
        static const char *const e[] = { "endmacro", NULL };
        n->body = subparse(P, e);
        P->loop_depth = ld; P->cur_macro = outer;
        expect_name(P, "endmacro");
        if (cur(P)->type == T_NAME) adv(P);
    } else if (is_name(P, "call")) {
        adv(P);
        n = mk(P, N_CALLBLOCK); n->line = line;
        if (is_op(P, "(")) parse_signature(P, n);
        n->a = parse_expression(P, 1);
        if (n->a->kind != E_CALL) jfail(P->c, "line %d: expected call", line);
        expect_block_end(P);
        P->soft = 0;
        int ld = P->loop_depth; P->loop_depth = 0;
        jnode *outer = P->cur_macro; P->cur_macro = n;
        static const char *const e[] = { "endcall", NULL };
        n->body = subparse(P, e);
        P->loop_depth = ld; P->cur_macro = outer;
        expect_name(P, "endcall");
    } else if (is_name(P, "filter")) {
        adv(P);
        n = mk(P, N_FILTERBLOCK); n->line = line;
        n->b = parse_filter(P, NULL);
        while (is_op(P, "|")) { adv(P); n->b = parse_filter(P, n->b); }
        expect_block_end(P);
        P->soft = 0;
        static const char *const e[] = { "endfilter", NULL };
        n->body = subparse(P, e);
        expect_name(P, "endfilter");
    } else if (is_name(P, "with")) {
        adv(P);
        n = mk(P, N_WITH); n->line = line;
        nvec targets = {0}, vals = {0};
        while (cur(P)->type != T_BLOCK_END) {
            if (targets.n) expect_op(P, ",");
            nv_push(P, &targets, parse_assign_target(P, 0, NULL));
            expect_op(P, "=");
            nv_push(P, &vals, parse_expression(P, 1));
        }
        n->items = targets.v; n->n_items = targets.n; n->kwv = vals.v;
        expect_block_end(P);
        P->soft = 0;
        static const char *const e[] = { "endwith", NULL };
        n->body = subparse(P, e);
        expect_name(P, "endwith");
    } else if (is_name(P, "generation")) {
        adv(P);
        expect_block_end(P);
        static const char *const e[] = { "endgeneration", NULL };
        n = subparse(P, e);
        expect_name(P, "endgeneration");
    } else if (is_name(P, "break") || is_name(P, "continue")) {
        n = mk(P, is_name(P, "break") ? N_BREAK : N_CONTINUE);
        if (!P->loop_depth) jfail(P->c, "line %d: '%s' outside of a loop", line, is_name(P, "break") ? "break" : "continue");
        adv(P);
    } else {
        jfail(P->c, "line %d: Encountered unknown tag '%s'.", line, tok_desc(P, t));
    }
    P->soft = soft;
    expect_block_end(P);
    return n;
}

static jnode *subparse(parser *P, const char *const *ends) {
    nvec body = {0};
    enter(P);
    for (;;) {
        jtok *t = cur(P);
        if (t->type == T_EOF) {
            if (ends) jfail(P->c, "line %d: unexpected end of template, expected '%s'", t->line, ends[0]);
            break;
        }
        if (t->type == T_DATA) {
            jnode *n = mk(P, N_TEXT);
            n->val = jv_str_ref(t->s, t->n);
            nv_push(P, &body, n);
            adv(P);
        } else if (t->type == T_VAR_BEGIN) {
            adv(P);
            jnode *n = mk(P, N_OUTPUT);
            n->a = parse_tuple(P, 0, 1, NULL, 0);
            if (cur(P)->type != T_VAR_END) fail_unexpected(P, "end of print statement");
            adv(P);
            nv_push(P, &body, n);
        } else if (t->type == T_BLOCK_BEGIN) {
            adv(P);
            if (end_matches(P, ends)) break;   /* the caller consumes the end tag */
            nv_push(P, &body, parse_statement(P));
        } else fail_unexpected(P, "template data or a tag");
    }
    leave(P);
    jnode *n = mk(P, N_BODY);
    n->items = body.v; n->n_items = body.n;
    return n;
}

/* ---- frame analysis (jinja2/idtracking.py) ---------------------------------------------
 * jinja2 compiles each frame (template root, loop body, loop else, macro, caller, with,
 * set/filter block) to Python locals. A name whose first reference in a frame is a store, and
 * that no enclosing frame references, starts out undefined in that frame, so child frames
 * reading it before the store see undefined rather than the template variable of that name.
 * A name first loaded, or first stored inside an if branch, resolves from the context. */
typedef struct { const char **name; char *kind; int n, cap; } refset; /* kind: L load, S store, P param */
typedef struct refchain { const refset *refs; const struct refchain *up; } refchain;

static int ref_find(const refset *r, const char *name) {
    for (int i = 0; i < r->n; i++) if (!strcmp(r->name[i], name)) return i;
    return -1;
}
static void ref_add(parser *P, refset *r, const char *name, char kind) {
    if (ref_find(r, name) >= 0) return;
    if (r->n == r->cap) {
        int cap = r->cap ? r->cap * 2 : 16;
        const char **nn = ja_alloc(P->c, (size_t)cap * sizeof(char *));
        char *nk = ja_alloc(P->c, (size_t)cap);
        if (r->n) { memcpy(nn, r->name, (size_t)r->n * sizeof(char *)); memcpy(nk, r->kind, (size_t)r->n); }
        r->name = nn; r->kind = nk; r->cap = cap;
    }
    r->name[r->n] = name; r->kind[r->n] = kind; r->n++;
}
static int chain_has(const refchain *ch, const char *name) {
    for (; ch; ch = ch->up) if (ref_find(ch->refs, name) >= 0) return 1;
    return 0;
}

static void an_expr(parser *P, refset *r, const jnode *e) {
    if (!e) return;
    if (e->kind == E_NAME) { ref_add(P, r, e->name, 'L'); return; }
    if (e->kind == E_NSREF) { ref_add(P, r, e->name, 'L'); return; }
    an_expr(P, r, e->a); an_expr(P, r, e->b); an_expr(P, r, e->c);
    for (int i = 0; i < e->n_items; i++) an_expr(P, r, e->items[i]);
    if (e->kwv) for (int i = 0; i < e->n_kw; i++) an_expr(P, r, e->kwv[i]);
}
static void an_store(parser *P, refset *r, const jnode *t, int in_branch) {
    if (t->kind == E_NAME) ref_add(P, r, t->name, in_branch ? 'L' : 'S');
    else if (t->kind == E_TUPLE) for (int i = 0; i < t->n_items; i++) an_store(P, r, t->items[i], in_branch);
    else if (t->kind == E_NSREF) ref_add(P, r, t->name, 'L');
}
/* references made at this frame's own level (child frames are skipped) */
static void an_stmts(parser *P, refset *r, const jnode *n, int in_branch) {
    if (!n) return;
    switch (n->kind) {
    case N_BODY: for (int i = 0; i < n->n_items; i++) an_stmts(P, r, n->items[i], in_branch); break;
    case N_OUTPUT: an_expr(P, r, n->a); break;
    case N_IF: an_expr(P, r, n->a); an_stmts(P, r, n->b, in_branch + 1); an_stmts(P, r, n->c, in_branch + 1); break;
    case N_FOR: an_expr(P, r, n->b); break;
    case N_SET: an_expr(P, r, n->b); an_store(P, r, n->a, in_branch); break;
    case N_SETBLOCK: an_expr(P, r, n->b); an_store(P, r, n->a, in_branch); break;
    case N_MACRO: ref_add(P, r, n->name, in_branch ? 'L' : 'S'); break;
    case N_CALLBLOCK: an_expr(P, r, n->a); break;
    case N_FILTERBLOCK: an_expr(P, r, n->b); break;
    case N_WITH: for (int i = 0; i < n->n_items; i++) an_expr(P, r, n->kwv[i]); break;
    default: break;
    }
}
static void an_frame(parser *P, jnode *body, const jnode *targets, const char *const *params, int nparams,
                     const refchain *up);
static void an_children(parser *P, const refchain *ch, const jnode *n) {
    if (!n) return;
    switch (n->kind) {
    case N_BODY: for (int i = 0; i < n->n_items; i++) an_children(P, ch, n->items[i]); break;
    case N_IF: an_children(P, ch, n->b); an_children(P, ch, n->c); break;
    case N_FOR: {
        static const char *const loopv[] = { "loop" };
        an_frame(P, n->body, n->a, loopv, 1, ch);
        if (n->else_body) an_frame(P, n->else_body, NULL, NULL, 0, ch);
        break;
    }
    case N_MACRO: case N_CALLBLOCK: {
        const char **params = ja_alloc(P->c, (size_t)(n->n_kw + 3) * sizeof(char *));
        for (int i = 0; i < n->n_kw; i++) params[i] = n->kw[i];
        params[n->n_kw] = "varargs"; params[n->n_kw + 1] = "kwargs"; params[n->n_kw + 2] = "caller";
        an_frame(P, n->body, NULL, params, n->n_kw + 3, ch);
        break;
    }
    case N_SETBLOCK: case N_FILTERBLOCK: an_frame(P, n->body, NULL, NULL, 0, ch); break;
    case N_WITH: {
        jnode tup = {0};
        tup.kind = E_TUPLE; tup.items = n->items; tup.n_items = n->n_items;
        an_frame(P, n->body, &tup, NULL, 0, ch);
        break;
    }
    default: break;
    }
}
static void add_params(parser *P, refset *r, const jnode *t) {
    if (!t) return;
    if (t->kind == E_NAME) ref_add(P, r, t->name, 'P');
    else if (t->kind == E_TUPLE) for (int i = 0; i < t->n_items; i++) add_params(P, r, t->items[i]);
}
static void an_frame(parser *P, jnode *body, const jnode *targets, const char *const *params, int nparams,
                     const refchain *up) {
    if (!body) return;
    enter(P);
    refset r = {0};
    add_params(P, &r, targets);
    for (int i = 0; i < nparams; i++) ref_add(P, &r, params[i], 'P');
    an_stmts(P, &r, body, 0);
    int k = 0;
    for (int i = 0; i < r.n; i++) if (r.kind[i] == 'S' && !chain_has(up, r.name[i])) k++;
    if (k) {
        body->undef = ja_alloc(P->c, (size_t)k * sizeof(char *));
        for (int i = 0; i < r.n; i++)
            if (r.kind[i] == 'S' && !chain_has(up, r.name[i])) body->undef[body->n_undef++] = r.name[i];
    }
    refchain ch = { &r, up };
    an_children(P, &ch, body);
    leave(P);
}

jnode *jparse(jctx *c) {
    parser P = { .c = c };
    jnode *root = subparse(&P, NULL);
    an_frame(&P, root, NULL, NULL, 0, NULL);
    return root;
}
