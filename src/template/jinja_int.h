/* Internals of the Jinja interpreter shared by its files (lexer, parser, values, evaluator,
 * filters). Not for use outside src/template/.
 *
 * Memory: every value, AST node and temporary lives in one arena per render (jarena),
 * freed at once at the end, so values are shared freely without reference counts.
 * Errors: jfail() formats the message into the context and longjmps to the entry point;
 * only arena memory is live across a longjmp, so nothing leaks. */
#ifndef STRATA_JINJA_INT_H
#define STRATA_JINJA_INT_H
#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdarg.h>

/* ---- limits: turn runaway templates into errors ---------------------------------------- */
#define JINJA_ARENA_MAX      ((size_t)512 << 20) /* bytes of values + AST per render */
#define JINJA_OUTPUT_MAX     ((size_t)64 << 20)  /* bytes of rendered text */
#define JINJA_CALL_DEPTH_MAX 100                 /* nested macro/caller calls */
#define JINJA_PARSE_DEPTH_MAX 400                /* nested expressions/blocks in the source */
/* Nested evaluation (expressions and statements) summed over every active macro call: the
 * two limits above multiply (100 macro levels x 400 nested levels = 40000 C frames overflow
 * an 8 MiB stack; found by fuzz/fuzz_template), so the evaluator bounds their product too.
 * Python's jinja2 stops far earlier (RecursionError at ~1000 Python frames). */
#define JINJA_EVAL_DEPTH_MAX 1000
#define JINJA_STEPS_MAX      20000000LL          /* loop iterations + calls + filter element steps */

/* ---- arena --------------------------------------------------------------------------- */
typedef struct jblock { struct jblock *next; size_t used, cap; } jblock; /* data follows */
typedef struct jarena { jblock *head; size_t total; } jarena;

typedef struct jctx jctx;

/* ---- values -------------------------------------------------------------------------- */
typedef enum {
    JV_UNDEF, JV_NONE, JV_BOOL, JV_INT, JV_FLOAT, JV_STR, JV_LIST, JV_DICT, JV_NS,
    JV_MACRO, JV_FUNC
} jv_type;

/* Undefined flags: UNSAFE marks the sandbox's "unsafe attribute" undefined (calling it is a
 * SecurityError, as list.append in ImmutableSandboxedEnvironment). */
#define JV_F_UNSAFE 1
/* List flag: a Python tuple (prints with parentheses). */
#define JV_F_TUPLE 2

typedef struct jlist jlist;
typedef struct jdict jdict;
typedef struct jmacro jmacro;
typedef struct jfunc jfunc;

typedef struct jv {
    uint8_t t;        /* jv_type */
    uint8_t flags;
    size_t n;         /* JV_STR: byte length (UTF-8) */
    union {
        int b; int64_t i; double f;
        const char *s;      /* JV_STR bytes (not NUL-terminated); JV_UNDEF: hint or NULL */
        jlist *l; jdict *d; jmacro *m; jfunc *fn;
    } u;
} jv;

struct jlist { jv *v; size_t n, cap; };
struct jdict { jv *k, *v; size_t n, cap; };

typedef struct jscope { struct jscope *parent; jdict vars; } jscope;

struct jnode;
struct jmacro {
    const struct jnode *def;   /* N_MACRO node (or N_CALLBLOCK for a caller) */
    jscope *closure;           /* scope the macro was defined in (live) */
    const char *name;
};

/* Built-in callables: globals and bound methods. */
typedef enum {
    JF_RANGE, JF_NAMESPACE, JF_DICT, JF_RAISE, JF_STRFTIME, JF_METHOD, JF_LOOP_CYCLE
} jfunc_kind;
struct jfunc { int kind; const char *name; jv self; };

/* ---- AST ----------------------------------------------------------------------------- */
typedef enum {
    /* statements */
    N_TEXT, N_OUTPUT, N_IF, N_FOR, N_SET, N_SETBLOCK, N_MACRO, N_CALLBLOCK, N_FILTERBLOCK,
    N_BREAK, N_CONTINUE, N_BODY, N_WITH,
    /* expressions */
    E_CONST, E_NAME, E_LIST, E_TUPLE, E_DICT, E_ATTR, E_ITEM, E_SLICE, E_CALL, E_FILTER,
    E_TEST, E_NEG, E_POS, E_NOT, E_BIN, E_AND, E_OR, E_CMP, E_COND, E_NSREF
} jnode_kind;

typedef enum {
    OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_FLOORDIV, OP_MOD, OP_POW, OP_CONCAT,
    OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE, OP_IN, OP_NOTIN
} jop;

#define JMACRO_USES_VARARGS 1
#define JMACRO_USES_KWARGS 2

typedef struct jnode {
    int kind, line;
    int op;                    /* jop; E_TEST: 1 = negated; E_CMP: see ops */
    jv val;                    /* E_CONST */
    const char *name;          /* E_NAME, E_ATTR attribute, E_FILTER/E_TEST name, macro name */
    struct jnode *a, *b, *c;   /* operands; N_IF: a cond, b body, c else; N_FOR: a target, b iter, c filter */
    struct jnode **items; int n_items;     /* list/tuple/dict(k,v pairs)/call args/body */
    const char **kw; struct jnode **kwv; int n_kw; /* keyword args; macro params + defaults */
    struct jnode *body, *else_body;        /* N_FOR, N_MACRO, N_CALLBLOCK, ... */
    int *ops;                  /* E_CMP: n_items-1 operators */
    int recursive;             /* N_FOR: recursive loop; N_MACRO/N_CALLBLOCK: JMACRO_USES_* bits */
    /* N_BODY that is a frame (root, loop body/else, macro, caller, with, set/filter block):
     * names jinja2 declares undefined at frame entry (first referenced by a store in this
     * frame and unknown to every enclosing frame), see jscope_enter_frame(). */
    const char **undef; int n_undef;
} jnode;

/* ---- tokens -------------------------------------------------------------------------- */
typedef enum {
    T_DATA, T_VAR_BEGIN, T_VAR_END, T_BLOCK_BEGIN, T_BLOCK_END, T_NAME, T_STRING, T_INT,
    T_FLOAT, T_OP, T_EOF
} jtok_type;

typedef struct jtok {
    int type, line;
    const char *s; size_t n;   /* T_DATA/T_NAME/T_OP text, T_STRING decoded value */
    int64_t i; double f;
} jtok;

/* ---- render context ------------------------------------------------------------------ */
typedef struct jbuf { char *p; size_t n, cap; } jbuf;

struct jctx {
    jarena arena;
    jmp_buf jb;
    char *err; size_t errlen;
    /* parse state */
    jtok *toks; size_t ntok, pos;
    int parse_depth;
    /* eval state */
    jbuf *out;
    jscope *globals;
    int depth;                 /* macro call depth */
    int eval_depth;            /* nested jeval/render_stmt frames (JINJA_EVAL_DEPTH_MAX) */
    long long steps;
    int loop_ctl;              /* 0, 1 break, 2 continue */
    int in_loop;
    int64_t now;
    const char *tmpl_name;
};

/* arena + errors */
void *ja_alloc(jctx *c, size_t n);
char *ja_strndup(jctx *c, const char *s, size_t n);
void  ja_free_all(jarena *a);
#if defined(__GNUC__)
__attribute__((noreturn, format(printf, 2, 3)))
#endif
void jfail(jctx *c, const char *fmt, ...);
void jstep(jctx *c, long long n);

/* buffers (arena-backed) */
void jbuf_put(jctx *c, jbuf *b, const char *s, size_t n);
void jbuf_puts(jctx *c, jbuf *b, const char *s);
void jbuf_putc(jctx *c, jbuf *b, char ch);
void jbuf_printf(jctx *c, jbuf *b, const char *fmt, ...);

/* value constructors */
jv jv_undef(const char *hint);
jv jv_none(void);
jv jv_bool(int b);
jv jv_int(int64_t i);
jv jv_float(double f);
jv jv_str(jctx *c, const char *s, size_t n);   /* copies */
jv jv_str_ref(const char *s, size_t n);        /* no copy: s must outlive the render */
jv jv_cstr(jctx *c, const char *s);
jv jv_list_new(jctx *c, size_t cap);
jv jv_dict_new(jctx *c, size_t cap);
void jlist_push(jctx *c, jlist *l, jv v);
void jdict_set(jctx *c, jdict *d, jv k, jv v);        /* replaces an existing key */
void jdict_append(jctx *c, jdict *d, jv k, jv v);     /* caller knows the key is new */
jv  *jdict_get(const jdict *d, jv k);
jv  *jdict_gets(const jdict *d, const char *key);
jv jv_from_json_text(jctx *c, const char *json, const char *what);

/* semantics */
const char *jv_type_name(jv v);         /* Python type name: 'str', 'dict', 'NoneType', ... */
jv   jv_iter_items(jctx *c, jv v);      /* what iterating v yields, as a list: list items, dict keys,
                                           string characters; undefined: empty; else TypeError */
int  jv_truthy(jv v);
int  jv_equal(jv a, jv b);
int  jv_compare(jctx *c, jv a, jv b, const char *opname); /* <0, 0, >0; TypeError when unorderable */
int  jv_is_str(jv v, const char *s);
size_t jutf8_len(const char *s, size_t n);         /* code points */
size_t jutf8_offset(const char *s, size_t n, size_t cp); /* byte offset of code point cp */
int  jutf8_decode(const char *s, size_t n, size_t *pos); /* next code point; invalid byte -> itself */
void jutf8_put(jctx *c, jbuf *b, uint32_t cp);
int  jis_py_space(uint32_t cp);

/* printing */
void jv_to_str(jctx *c, jbuf *b, jv v);   /* Python str() */
void jv_repr(jctx *c, jbuf *b, jv v);     /* Python repr() */
jv   jv_stringify(jctx *c, jv v);         /* str() as a JV_STR */
void jv_fmt_float(char *buf, size_t cap, double f); /* Python repr of a float */
/* json.dumps(v, ensure_ascii=False, indent=indent (NULL: none), separators default) */
void jv_tojson(jctx *c, jbuf *b, jv v, const char *indent, const char *item_sep, const char *key_sep,
               int sort_keys, int level);

/* lexer / parser / evaluator */
void jlex(jctx *c, const char *src);
jnode *jparse(jctx *c);
void jrender_body(jctx *c, const jnode *body, jscope *sc);
jv jeval(jctx *c, const jnode *e, jscope *sc);
jv jcall_value(jctx *c, jv fn, jv *args, int nargs, const char **kw, jv *kwv, int nkw);
jv jgetattr(jctx *c, jv obj, const char *name);
jv jgetitem(jctx *c, jv obj, jv key);
jscope *jscope_new(jctx *c, jscope *parent);
jscope *jscope_enter_frame(jctx *c, jscope *parent, const jnode *body);
jv  jscope_lookup(jscope *sc, const char *name);
void jscope_set(jctx *c, jscope *sc, const char *name, jv v);

/* filters, tests, methods, globals (jinja_filters.c) */
int  jfilter_known(const char *name);
int  jtest_known(const char *name);
jv   jfilter_apply(jctx *c, const char *name, jv v, jv *args, int nargs, const char **kw, jv *kwv, int nkw,
                   jscope *sc);
int  jtest_apply(jctx *c, const char *name, jv v, jv *args, int nargs);
jv   jmethod_call(jctx *c, jv self, const char *name, jv *args, int nargs, const char **kw, jv *kwv, int nkw);
int  jmethod_exists(jv self, const char *name, int *unsafe);
jv   jglobal_call(jctx *c, jfunc *f, jv *args, int nargs, const char **kw, jv *kwv, int nkw);
#endif
