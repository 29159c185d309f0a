/* Chat templates: the C renderer against jinja2 (golden data from tools/gen_template_golden.py).
 *  1. every (template, conversation) pair of tests/data/template_cases/expected/ : output
 *     byte-identical to jinja2 with Hugging Face's settings; raise_exception cases fail with
 *     jinja2's exact message; other Python exceptions fail cleanly in C too;
 *  2. expression-language cases (expr_cases.json), rendered by jinja2 the same way;
 *  3. hand-written checks of Python semantics, limits and malformed input. */
#include "test.h"
#include "template/jinja.h"
#include "core/util.h"
#include "gguf/gguf.h"
#include <jansson.h>
#include <dirent.h>

static char data_dir[1024] = "tests/data";

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (fread(b, 1, (size_t)n, f) != (size_t)n) { free(b); fclose(f); return NULL; }
    b[n] = 0;
    fclose(f);
    return b;
}

static void show_diff(const char *what, const char *got, const char *want) {
    size_t i = 0;
    while (got[i] && got[i] == want[i]) i++;
    size_t from = i > 40 ? i - 40 : 0;
    fprintf(stderr, "  %s: first difference at byte %zu\n    got:  \"%.80s\"\n    want: \"%.80s\"\n", what, i,
            got + from, want + from);
}

static int64_t g_now;
static const char *g_bos, *g_eos;

/* ---- 1. templates x conversations -------------------------------------------------------- */
static void test_golden_templates(void) {
    char path[1400];
    snprintf(path, sizeof path, "%s/template_cases/expected", data_dir);
    DIR *dir = opendir(path);
    CHECKF(dir != NULL, "cannot open %s", path);
    if (!dir) return;
    char *names[128]; int nn = 0;
    struct dirent *de;
    while ((de = readdir(dir)) && nn < 128) {
        size_t l = strlen(de->d_name);
        if (l > 5 && !strcmp(de->d_name + l - 5, ".json")) names[nn++] = strdup(de->d_name);
    }
    closedir(dir);
    int ok_total = 0, ok_match = 0, raise_total = 0, raise_match = 0, err_total = 0, err_match = 0, ntmpl = 0;
    for (int t = 0; t < nn; t++) {
        char tname[256];
        snprintf(tname, sizeof tname, "%.*s", (int)(strlen(names[t]) - 5), names[t]);
        snprintf(path, sizeof path, "%s/templates/%s.jinja", data_dir, tname);
        char *src = slurp(path);
        REQUIRE(src != NULL, "missing template %s", path);
        snprintf(path, sizeof path, "%s/template_cases/expected/%s", data_dir, names[t]);
        json_error_t je;
        json_t *exp = json_load_file(path, 0, &je);
        REQUIRE(exp != NULL, "%s: %s", path, je.text);
        if (!src || !exp) { free(src); json_decref(exp); continue; }
        ntmpl++;
        const char *conv_name; json_t *want;
        int tmpl_ok = 0, tmpl_n = 0;
        json_object_foreach(exp, conv_name, want) {
            snprintf(path, sizeof path, "%s/template_cases/conv/%s.json", data_dir, conv_name);
            json_t *conv = json_load_file(path, 0, &je);
            REQUIRE(conv != NULL, "%s: %s", path, je.text);
            if (!conv) continue;
            char *msgs = json_dumps(json_object_get(conv, "messages"), JSON_COMPACT | JSON_PRESERVE_ORDER);
            json_t *tj = json_object_get(conv, "tools");
            char *tools = tj && !json_is_null(tj) ? json_dumps(tj, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
            json_t *vj = json_object_get(conv, "vars");
            char *vars = vj ? json_dumps(vj, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
            int agp = json_is_true(json_object_get(conv, "add_generation_prompt"));
            char err[2048];
            char *out = jinja_render_chat_at(src, msgs, tools, agp, g_bos, g_eos, vars, g_now, err, sizeof err);
            const char *kind = json_string_value(json_object_get(want, "expect"));
            int match = 0;
            tmpl_n++;
            if (!strcmp(kind, "ok")) {
                const char *w = json_string_value(json_object_get(want, "output"));
                ok_total++;
                match = out && !strcmp(out, w);
                ok_match += match;
                if (!match) {
                    fprintf(stderr, "FAIL %s x %s: ", tname, conv_name);
                    if (out) show_diff("output", out, w); else fprintf(stderr, "error: %s\n", err);
                }
            } else if (!strcmp(kind, "raise")) {
                const char *w = json_string_value(json_object_get(want, "message"));
                raise_total++;
                match = !out && !strcmp(err, w);
                raise_match += match;
                if (!match) fprintf(stderr, "FAIL %s x %s: want raise \"%s\", got %s \"%s\"\n", tname, conv_name, w,
                                    out ? "output" : "error", out ? out : err);
            } else {
                err_total++;
                match = !out && err[0];
                err_match += match;
                if (!match) fprintf(stderr, "FAIL %s x %s: jinja2 raised %s (%s); C rendered instead\n", tname, conv_name,
                                    json_string_value(json_object_get(want, "exception")),
                                    json_string_value(json_object_get(want, "message")));
            }
            tmpl_ok += match;
            CHECK(match);
            st_free(out);
            free(msgs); free(tools); free(vars);
            json_decref(conv);
        }
        fprintf(stderr, "  %-55s %2d/%2d\n", tname, tmpl_ok, tmpl_n);
        json_decref(exp);
        free(src);
    }
    for (int t = 0; t < nn; t++) free(names[t]);
    fprintf(stderr, "templates: %d; rendered pairs byte-identical: %d/%d; raise_exception messages identical: %d/%d; "
            "other jinja2 errors also failing in C: %d/%d\n", ntmpl, ok_match, ok_total, raise_match, raise_total,
            err_match, err_total);
    printf("template pairs matching jinja2: %d/%d\n", ok_match + raise_match + err_match, ok_total + raise_total + err_total);
    CHECK(ntmpl >= 22);
    CHECK(ok_total >= 300);
}

/* ---- 2. expression cases ------------------------------------------------------------------ */
static void test_expr_cases(void) {
    char path[1400];
    snprintf(path, sizeof path, "%s/template_cases/expr_cases.json", data_dir);
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    CHECKF(root != NULL, "%s: %s", path, je.text);
    if (!root) return;
    char *vars = json_dumps(json_object_get(root, "vars"), JSON_COMPACT | JSON_PRESERVE_ORDER);
    int64_t now = json_integer_value(json_object_get(root, "now"));
    size_t i; json_t *cs; int n = 0, good = 0;
    json_array_foreach(json_object_get(root, "cases"), i, cs) {
        const char *tmpl = json_string_value(json_object_get(cs, "template"));
        const char *kind = json_string_value(json_object_get(cs, "expect"));
        char err[1024];
        char *out = jinja_render(tmpl, vars, now, err, sizeof err);
        int match;
        if (!strcmp(kind, "ok")) {
            const char *w = json_string_value(json_object_get(cs, "output"));
            match = out && !strcmp(out, w);
            if (!match) { fprintf(stderr, "FAIL expr %zu: %s\n", i, tmpl); if (out) show_diff("output", out, w); else fprintf(stderr, "  error: %s\n", err); }
        } else if (!strcmp(kind, "raise")) {
            const char *w = json_string_value(json_object_get(cs, "message"));
            match = !out && !strcmp(err, w);
            if (!match) fprintf(stderr, "FAIL expr %zu: %s: want raise \"%s\" got \"%s\"\n", i, tmpl, w, out ? out : err);
        } else {
            match = !out && err[0];
            if (!match) fprintf(stderr, "FAIL expr %zu: %s: jinja2 raised \"%s\", C rendered \"%s\"\n", i, tmpl,
                                json_string_value(json_object_get(cs, "message")), out);
            else fprintf(stderr, "  expr %zu error as expected: C \"%s\" / jinja2 \"%s\"\n", i, err,
                         json_string_value(json_object_get(cs, "message")));
        }
        CHECK(match);
        n++; good += match;
        st_free(out);
    }
    fprintf(stderr, "expression cases matching jinja2: %d/%d\n", good, n);
    free(vars);
    json_decref(root);
}

/* ---- 3. hand-written semantics -------------------------------------------------------------- */
static char *R(const char *tmpl, const char *vars) {
    static char buf[4096];
    char err[512];
    char *out = jinja_render(tmpl, vars, 0, err, sizeof err);
    if (!out) { snprintf(buf, sizeof buf, "ERROR: %s", err); return buf; }
    snprintf(buf, sizeof buf, "%s", out);
    st_free(out);
    return buf;
}

static void test_semantics(void) {
    CHECK_STR(R("{{ 1.0 }} {{ 3 / 2 }} {{ 4 / 2 }} {{ 10 // 3 }} {{ -1 // 2 }}", NULL), "1.0 1.5 2.0 3 -1");
    CHECK_STR(R("{{ none }} {{ true }} {{ ['a', 1, none] }} {{ x }}", NULL), "None True ['a', 1, None] ");
    CHECK_STR(R("{{ {'a': 'b'}|tojson }} {{ ['é']|tojson }}", NULL), "{\"a\": \"b\"} [\"é\"]");
    CHECK_STR(R("{{ ' a  b '.split() }} {{ 'a-b-c'.split('-', 1) }}", NULL), "['a', 'b'] ['a', 'b-c']");
    CHECK_STR(R("{{ 'abc'[::-1] }} {{ [1,2,3][-2:] }}", NULL), "cba [2, 3]");
    CHECK_STR(R("{% for x in 'ab' %}{{ loop.index }}{{ x }}{% endfor %}", NULL), "1a2b");
    CHECK_STR(R("  {% if true %}\nx\n  {% endif %}\ny", NULL), "x\ny");            /* lstrip + trim */
    CHECK_STR(R("a\n", NULL), "a");                                                 /* trailing newline dropped */
    CHECK_STR(R("a\r\nb", NULL), "a\nb");
    CHECK_STR(R("{{ raise_exception('boom') }}", NULL), "ERROR: boom");
    CHECK_STR(R("{{ m.content }}", "{\"m\": {\"content\": \"hi\"}}"), "hi");
    CHECK_STR(R("{{ strftime_now('%d %b %Y') }}", NULL), "01 Jan 1970");          /* now = 0 */
    /* limits and malformed input: clean errors, never a crash */
    CHECK(!strncmp(R("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", NULL), "ERROR: maximum recursion", 24));
    CHECK(!strncmp(R("{% for i in range(100001) %}{% endfor %}", NULL), "ERROR: Range too big", 20));
    CHECK(!strncmp(R("{% set ns = namespace(s='xxxxxxxxxxxxxxxx') %}{% for i in range(100) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}", NULL), "ERROR: ", 7));
    {   /* 10^10 iterations: stopped by the step or memory limit */
        const char *r = R("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", NULL);
        CHECKF(!strncmp(r, "ERROR: template ", 16), "%s", r);
    }
    CHECK(!strncmp(R("{{ ((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((1", NULL), "ERROR: ", 7));
    const char *bad[] = { "{{", "{%", "{% if %}", "{% for %}", "{{ 'abc }}", "{% endif %}", "{{ a[ }}", "{{ } }}",
                          "{# x", "{% raw %}x", "{{ 1 + }}", "{% set %}", "{% macro %}", "{{ a.1.b(}}", "{%- -%}",
                          "{{ '\\x4' }}", "{% for x in y %}{% break %}", "{% break %}", "{{ x|nope }}", "{{ x is nope }}" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char err[256];
        char *out = jinja_render(bad[i], NULL, 0, err, sizeof err);
        CHECKF(out == NULL && err[0], "malformed template '%s' rendered", bad[i]);
        st_free(out);
    }
    /* allocation failure is an error, not a crash */
    for (long k = 1; k < 40; k += 3) {
        char err[256];
        st_alloc_fail_after(k);
        char *out = jinja_render("{% for m in messages %}{{ m.role }}{% endfor %}", "{\"messages\":[{\"role\":\"u\"}]}", 0, err, sizeof err);
        st_alloc_fail_after(0);
        CHECK(out == NULL || !strcmp(out, "u"));
        st_free(out);
    }
}

/* ---- 4. the model's own template and `strata template` ------------------------------------ */
static void test_model_and_cli(void) {
    const char *model = getenv("STRATA_MODEL"), *build = getenv("BUILD");
    char path[1400], err[512];
    snprintf(path, sizeof path, "%s/templates/smollm2.jinja", data_dir);
    char *want_src = slurp(path);
    CHECK(want_src != NULL);
    if (!model || !want_src) { free(want_src); SKIP("model", "no STRATA_MODEL: GGUF template check"); return; }
    gguf_file *g = NULL;
    if (gguf_open(model, &g, err, sizeof err) != 0) { fprintf(stderr, "  %s\n", err); free(want_src); return; }
    gguf_str s;
    CHECK_EQ_INT(gguf_get_str(g, "tokenizer.chat_template", &s), 0);
    CHECK(s.len == strlen(want_src) && !memcmp(s.ptr, want_src, s.len)); /* committed copy == the model's */
    gguf_close(g);
    /* the CLI renders the GGUF's template exactly as the golden output (no newline added) */
    char bin[1100];
    snprintf(bin, sizeof bin, "%s/strata", build ? build : "build");
    FILE *probe = fopen(bin, "rb");
    if (!probe) { SKIP("cli", "no %s: CLI check", bin); free(want_src); return; }
    fclose(probe);
    snprintf(path, sizeof path, "%s/template_cases/expected/smollm2.json", data_dir);
    json_t *exp = json_load_file(path, 0, NULL);
    const char *convs[] = { "multi_turn", "non_ascii", "no_generation_prompt" };
    for (int i = 0; i < 3; i++) {
        char cmd[4096];
        snprintf(cmd, sizeof cmd, "'%s' template '%s' --messages '%s/template_cases/conv/%s.json' --now 0", bin, model,
                 data_dir, convs[i]);
        FILE *p = popen(cmd, "r");
        CHECK(p != NULL);
        if (!p) continue;
        char *got = calloc(1, 1 << 20);
        size_t n = fread(got, 1, (1 << 20) - 1, p);
        got[n] = 0;
        CHECK_EQ_INT(pclose(p), 0);
        const char *want = json_string_value(json_object_get(json_object_get(exp, convs[i]), "output"));
        CHECKF(want && !strcmp(got, want), "strata template on %s x %s", model, convs[i]);
        free(got);
    }
    json_decref(exp);
    free(want_src);
}

int main(int argc, char **argv) {
    (void)argc;
    /* find tests/data from the repository root or next to this binary's source */
    FILE *probe = fopen("tests/data/template_cases/meta.json", "rb");
    if (probe) fclose(probe);
    else {
        const char *src = __FILE__;
        const char *slash = strrchr(src, '/');
        if (slash) snprintf(data_dir, sizeof data_dir, "%.*s/data", (int)(slash - src), src);
    }
    (void)argv;
    char path[1200];
    snprintf(path, sizeof path, "%s/template_cases/meta.json", data_dir);
    json_error_t je;
    json_t *meta = json_load_file(path, 0, &je);
    if (!meta) SKIP_ALL("golden", "no golden data at %s (run tools/gen_template_golden.py)", path);
    g_now = json_integer_value(json_object_get(meta, "now"));
    g_bos = json_string_value(json_object_get(meta, "bos_token"));
    g_eos = json_string_value(json_object_get(meta, "eos_token"));
    RUN(test_semantics);
    RUN(test_expr_cases);
    RUN(test_golden_templates);
    RUN(test_model_and_cli);
    json_decref(meta);
    TEST_DONE();
}
