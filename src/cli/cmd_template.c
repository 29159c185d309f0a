/* strata template TEMPLATE.jinja|MODEL.gguf --messages CONV.json [--tools TOOLS.json]
 *   [--add-generation-prompt] [--var KEY=VALUE]... [--now EPOCH] [--bos TEXT] [--eos TEXT]
 * Renders a chat template exactly as transformers would and prints it with no newline added.
 * For a .gguf the template is tokenizer.chat_template and bos/eos are the texts of
 * tokenizer.ggml.bos_token_id / eos_token_id. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "cli.h"
#include "core/util.h"
#include "gguf/gguf.h"
#include "template/jinja.h"

static char *read_file(const char *path, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) { snprintf(err, errlen, "%s: cannot open", path); return NULL; }
    size_t cap = 1 << 16, n = 0;
    char *buf = st_malloc(cap);
    for (;;) {
        if (!buf) { fclose(f); snprintf(err, errlen, "%s: out of memory", path); return NULL; }
        size_t k = fread(buf + n, 1, cap - n - 1, f);
        n += k;
        if (n < cap - 1) break;
        if (cap > ((size_t)256 << 20)) { st_free(buf); fclose(f); snprintf(err, errlen, "%s: larger than 256 MiB", path); return NULL; }
        cap *= 2;
        char *nb = st_realloc(buf, cap);
        if (!nb) st_free(buf);
        buf = nb;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) { st_free(buf); snprintf(err, errlen, "%s: read error", path); return NULL; }
    buf[n] = 0;
    if (strlen(buf) != n) { st_free(buf); snprintf(err, errlen, "%s: contains a NUL byte", path); return NULL; }
    return buf;
}

static int ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

static char *gguf_token_text(const gguf_file *g, const char *id_key) {
    int64_t id;
    if (gguf_get_i64(g, id_key, &id) != 0) return NULL;
    uint64_t n; const void *data;
    if (gguf_get_arr(g, "tokenizer.ggml.tokens", GGUF_TYPE_STRING, &n, &data) != 0) return NULL;
    if (id < 0 || (uint64_t)id >= n) return NULL;
    const gguf_str *s = (const gguf_str *)data + id;
    char *out = st_malloc(s->len + 1);
    if (!out) return NULL;
    memcpy(out, s->ptr, s->len); out[s->len] = 0;
    return out;
}

static void usage(FILE *f) {
    fprintf(f,
        "usage: strata template TEMPLATE.jinja|MODEL.gguf --messages CONV.json [options]\n"
        "  --messages FILE            JSON array of {role, content, ...} messages, or an object\n"
        "                             {messages, tools, add_generation_prompt, vars}\n"
        "  --tools FILE               JSON array of tool definitions (the `tools` variable)\n"
        "  --add-generation-prompt    set add_generation_prompt = true\n"
        "  --var KEY=VALUE            extra variable; VALUE is JSON when it parses, else a string\n"
        "  --bos TEXT / --eos TEXT    bos_token / eos_token (default: from the GGUF, else empty)\n"
        "  --now EPOCH                clock for strftime_now (Unix seconds, UTC)\n"
        "Prints the rendered text exactly, with no newline added.\n");
}

int cmd_template(int argc, char **argv) {
    const char *src_path = NULL, *msgs_path = NULL, *tools_path = NULL, *bos_arg = NULL, *eos_arg = NULL;
    int agp = 0;
    int64_t now = JINJA_NOW_REAL;
    char err[1024] = {0};
    int rc = 1;
    json_t *vars = json_object();
    char *tmpl = NULL, *msgs = NULL, *tools = NULL, *bos = NULL, *eos = NULL, *extra = NULL, *out = NULL;
    gguf_file *g = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_next = i + 1 < argc;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); rc = 0; goto done; }
        else if (!strcmp(a, "--messages") && has_next) msgs_path = argv[++i];
        else if (!strcmp(a, "--tools") && has_next) tools_path = argv[++i];
        else if (!strcmp(a, "--add-generation-prompt")) agp = 1;
        else if (!strcmp(a, "--bos") && has_next) bos_arg = argv[++i];
        else if (!strcmp(a, "--eos") && has_next) eos_arg = argv[++i];
        else if (!strcmp(a, "--now") && has_next) {
            char *end; long long v = strtoll(argv[++i], &end, 10);
            if (*end) { fprintf(stderr, "strata template: --now expects Unix seconds, got '%s'\n", argv[i]); rc = 2; goto done; }
            now = v;
        } else if (!strcmp(a, "--var") && has_next) {
            const char *kv = argv[++i], *eq = strchr(kv, '=');
            if (!eq || eq == kv) { fprintf(stderr, "strata template: --var expects KEY=VALUE, got '%s'\n", kv); rc = 2; goto done; }
            char *key = st_strdup(kv);
            if (!key) goto done;
            key[eq - kv] = 0;
            json_t *v = json_loads(eq + 1, JSON_DECODE_ANY, NULL);
            if (!v) v = json_string(eq + 1);
            json_object_set_new(vars, key, v);
            st_free(key);
        } else if (a[0] == '-' && a[1]) { fprintf(stderr, "strata template: unknown or incomplete option '%s' (strata template --help lists the options)\n", a); rc = 2; goto done; }
        else if (!src_path) src_path = a;
        else { fprintf(stderr, "strata template: unexpected argument '%s' (strata template --help lists the options)\n", a); rc = 2; goto done; }
    }
    if (!src_path || !msgs_path) {
        fprintf(stderr, "strata template: give TEMPLATE.jinja|MODEL.gguf and --messages CONV.json (strata template --help)\n");
        rc = 2;
        goto done;
    }
    if (ends_with(src_path, ".gguf")) {
        if (gguf_open(src_path, &g, err, sizeof err) != 0) { fprintf(stderr, "strata template: %s\n", err); goto done; }
        gguf_str s;
        if (gguf_get_str(g, "tokenizer.chat_template", &s) != 0) {
            fprintf(stderr, "strata template: %s has no tokenizer.chat_template\n", src_path); goto done;
        }
        tmpl = st_malloc(s.len + 1);
        if (!tmpl) goto done;
        memcpy(tmpl, s.ptr, s.len); tmpl[s.len] = 0;
        bos = gguf_token_text(g, "tokenizer.ggml.bos_token_id");
        eos = gguf_token_text(g, "tokenizer.ggml.eos_token_id");
    } else if (!(tmpl = read_file(src_path, err, sizeof err))) { fprintf(stderr, "strata template: %s\n", err); goto done; }
    if (!(msgs = read_file(msgs_path, err, sizeof err))) { fprintf(stderr, "strata template: %s\n", err); goto done; }
    if (tools_path && !(tools = read_file(tools_path, err, sizeof err))) { fprintf(stderr, "strata template: %s\n", err); goto done; }
    {   /* --messages may also be a conversation object {"messages", "tools", "add_generation_prompt",
         * "vars"} (the format of tests/data/template_cases/conv/); command-line options win */
        json_t *conv = json_loads(msgs, JSON_DECODE_ANY, NULL);
        if (conv && json_is_object(conv) && json_is_array(json_object_get(conv, "messages"))) {
            char *m = json_dumps(json_object_get(conv, "messages"), JSON_COMPACT | JSON_PRESERVE_ORDER);
            json_t *tj = json_object_get(conv, "tools");
            if (!tools && tj && !json_is_null(tj)) {
                char *t = json_dumps(tj, JSON_COMPACT | JSON_PRESERVE_ORDER);
                tools = t ? st_strdup(t) : NULL;
                free(t);
            }
            if (!agp && json_is_true(json_object_get(conv, "add_generation_prompt"))) agp = 1;
            json_t *cv = json_object_get(conv, "vars");
            const char *k; json_t *v;
            if (json_is_object(cv))
                json_object_foreach(cv, k, v) if (!json_object_get(vars, k)) json_object_set(vars, k, v);
            st_free(msgs);
            msgs = m ? st_strdup(m) : NULL;
            free(m);
            if (!msgs) { json_decref(conv); goto done; }
        }
        json_decref(conv);
    }
    if (json_object_size(vars)) extra = json_dumps(vars, JSON_COMPACT | JSON_PRESERVE_ORDER);
    out = jinja_render_chat_at(tmpl, msgs, tools, agp, bos_arg ? bos_arg : bos ? bos : "",
                               eos_arg ? eos_arg : eos ? eos : "", extra, now, err, sizeof err);
    if (!out) { fprintf(stderr, "strata template: %s: %s\n", src_path, err); goto done; }
    fwrite(out, 1, strlen(out), stdout);
    fflush(stdout);
    rc = 0;
done:
    json_decref(vars);
    free(extra);
    st_free(tmpl); st_free(msgs); st_free(tools); st_free(bos); st_free(eos); st_free(out);
    if (g) gguf_close(g);
    return rc;
}
