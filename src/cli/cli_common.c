#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cli_common.h"
#include "core/env.h"
#include "engine/chat_builtin.h"
#include "core/util.h"

/* ---- the option table --------------------------------------------------------------------- */
#define ALL (~0u)
static const cli_option options[] = {
    { OPT_HELP,     ALL,          "-h,--help",               NULL,  0,  0, 0, "this help (on stdout)" },
    { OPT_VERSION,  ALL,          "--version",               NULL,  0,  0, 0, "print the version and exit" },
    { OPT_MODEL,    CMD_MODEL | CMD_TOKENIZE | CMD_INFO, "-m,--model", "PATH", 's', 0, 0,
      "GGUF model (default: the cached SmolLM2-135M-Instruct.Q4_1.gguf)" },
    { OPT_PROMPT,   CMD_RUN,      "-p,--prompt",             "TEXT", 's', 0, 0, "the prompt" },
    { OPT_FILE,     CMD_RUN | CMD_TOKENIZE, "-f,--file",     "FILE", 's', 0, 0, "read the prompt / text from FILE ('-': standard input)" },
    { OPT_SYSTEM,   CMD_GEN,      "-sys,--system-prompt,--system", "TEXT", 's', 0, 0, "system message (chat template)" },
    { OPT_N_PREDICT, CMD_GEN,     "-n,--n-predict,--max-tokens", "N", 'i', -1, 1e9,
      "tokens to generate at most (default 256; -1: until the context is full; 0: none)" },
    { OPT_THREADS,  CMD_MODEL,    "-t,--threads",            "N",   'i', 0, 1024, "CPU threads (default: STRATA_THREADS or all cores)" },
    { OPT_CTX,      CMD_RUN | CMD_CHAT | CMD_SERVE | CMD_INFO, "-c,--ctx-size,--ctx", "N", 'i', 0, 1 << 24,
      "context length in tokens (default 0: min(training context, 4096); serve: per slot)" },
    { OPT_TEMP,     CMD_GEN,      "--temp,--temperature",    "T",   'f', 0, 100, "sampling temperature (default 0.8; 0: greedy)" },
    { OPT_TOP_K,    CMD_GEN,      "--top-k",                 "K",   'i', 0, 1e9, "keep the K most likely tokens (default 40; 0: off)" },
    { OPT_TOP_P,    CMD_GEN,      "--top-p",                 "P",   'f', 0, 1, "nucleus sampling (default 0.95; 1: off)" },
    { OPT_MIN_P,    CMD_GEN,      "--min-p",                 "P",   'f', 0, 1, "drop tokens below P times the top one (default 0.05; 0: off)" },
    { OPT_REPEAT_PENALTY, CMD_GEN, "--repeat-penalty",       "R",   'f', 0.01, 100, "repetition penalty (default 1: off)" },
    { OPT_REPEAT_LAST_N, CMD_GEN, "--repeat-last-n",         "N",   'i', 0, 1e9, "tokens the penalty looks back over" },
    { OPT_SEED,     CMD_GEN,      "-s,--seed",               "S",   'i', -1, 9.2e18, "sampling seed (default -1: random)" },
    { OPT_STOP,     CMD_GEN,      "--stop",                  "STR", 's', 0, 0, "stop before STR (up to 8 times)" },
    { OPT_SPEC,     CMD_MODEL & ~CMD_BENCH, "--spec,--draft-max", "N", 'i', 0, STRATA_MAX_DRAFT,
      "speculative decoding: up to N (<= 7) drafted tokens per step from the context\n"
      "(suffix matching) or --draft-model, as many as pay off by measured cost and\n"
      "acceptance (STRATA_SPEC_WINDOW); greedy output is unchanged (0: off)" },
    { OPT_DRAFT,    CMD_GEN,      "-md,--model-draft,--draft-model", "PATH", 's', 0, 0, "draft model of the same vocabulary for --spec" },
    { OPT_KV,       CMD_MODEL,    "--kv",       "T",   's', 0, 0,
      "KV cache: f16 (default) or int8 (0.56x the memory, other bits)" },
    { OPT_GRAMMAR,  CMD_RUN,      "--grammar",               "GBNF", 's', 0, 0, "constrain the output to a GBNF grammar (@FILE: read it from FILE)" },
    { OPT_JSON_SCHEMA, CMD_RUN,   "--json-schema",           "SCHEMA", 's', 0, 0, "constrain the output to JSON of a JSON Schema (@FILE: read it from FILE)" },
    { OPT_CHAT,     CMD_RUN,      "--chat",             NULL,  0,  0, 0, "format the prompt with the model's chat template" },
    { OPT_EXACT,    CMD_GEN | CMD_BENCH, "--exact",          NULL,  0,  0, 0, "reference mode: dequantized weights, f32 activations" },
    { OPT_NO_STATS, CMD_RUN,      "--no-stats",              NULL,  0,  0, 0, "no tok/s line on stderr" },
    { OPT_DEVICE,   CMD_MODEL,    "--device",                "D",   's', 0, 0, "cpu, cuda or auto (default auto: CUDA when the build and the GPU allow)" },
    { OPT_NGL,      CMD_MODEL,    "-ngl,--n-gpu-layers,--gpu-layers", "N", 'i', -1, 1e9,
      "layers on the GPU, as llama.cpp counts them. strata puts all layers\non the GPU or none: 0 runs on the CPU (--device cpu); any other N\n(-1, 99: all) offloads every layer (--device auto: when there is a GPU)" },
    { OPT_HOST,     CMD_SERVE,    "--host",                  "ADDR", 's', 0, 0, "address to listen on (default 127.0.0.1; 0.0.0.0 or :: for all)" },
    { OPT_PORT,     CMD_SERVE,    "--port",                  "N",   'i', 0, 65535, "port (default 8080; 0 picks a free one, printed at start)" },
    { OPT_PARALLEL, CMD_SERVE,    "-np,--parallel",          "N",   'i', 1, 256, "requests generating at the same time (slots, default 1)" },
    { OPT_QUEUE,    CMD_SERVE,    "--queue",                 "N",   'i', 0, 100000, "requests that may wait for a slot; more get 429 (default 16)" },
    { OPT_API_KEY,  CMD_SERVE,    "--api-key",               "KEY", 's', 0, 0, "require 'Authorization: Bearer KEY' or 'X-Api-Key: KEY'" },
    { OPT_CORS,     CMD_SERVE,    "--cors",                  "ORIGIN", 's', 0, 0, "send Access-Control-Allow-Origin: ORIGIN (e.g. '*')" },
    { OPT_MAX_BODY, CMD_SERVE,    "--max-body",              "N",   'i', 1024, 1 << 30, "largest request body in bytes (default 8388608)" },
    { OPT_MAX_CONN, CMD_SERVE,    "--max-conn",              "N",   'i', 1, 100000, "open connections at most; more are closed at once (default 512)" },
    { OPT_MAX_CONN_PER_IP, CMD_SERVE, "--max-conn-per-ip",   "N",   'i', 0, 100000, "open connections from one address at most (default 64; 0: no cap)" },
    { OPT_HEADER_TIMEOUT, CMD_SERVE, "--header-timeout",     "S",   'i', 1, 3600, "seconds a connection has to send a request's headers (default 10)" },
    { OPT_STEP_TOKENS, CMD_SERVE, "--step-tokens",           "N",   'i', 1, 4096,
      "token columns of one decode step while a prompt is read beside\nstreaming slots: theirs, the rest the prompt's (default 8;\n1024 on CUDA)" },
    { OPT_VERBOSE,  CMD_SERVE,    "-v,--verbose",            NULL,  0,  0, 0, "a log line per request on stderr" },
    { OPT_LOG_FORMAT, CMD_SERVE,  "--log-format",            "F",   's', 0, 0, "request log as text or json (json implies -v)" },
    { OPT_CHAT_TEMPLATE, CMD_SERVE | CMD_GEN, "--chat-template",       "FILE|NAME", 's', 0, 0,
      "chat template instead of the model's: a Jinja file, or a\nbuilt-in one by name: " CHAT_BUILTIN_NAMES },
    { OPT_PP,       CMD_BENCH,    "--pp",                    "N",   'i', 0, 1 << 20, "prompt tokens (default 128)" },
    { OPT_TG,       CMD_BENCH,    "--tg",                    "N",   'i', 1, 1 << 20, "decoded tokens (default 64)" },
    { OPT_DEPTH,    CMD_BENCH,    "-d,--depth",              "D[,D...]", 's', 0, 0,
      "positions already in the cache when the tests run, up to 16 depths (default 0; as llama-bench -d)" },
    { OPT_REPS,     CMD_BENCH,    "--reps",                  "R",   'i', 1, 32, "repetitions; the median is reported (default 3)" },
    { OPT_PIECES,   CMD_TOKENIZE, "--pieces",                NULL,  0,  0, 0, "one token per line: id, tab, its text (\\n, \\t, \\xNN escaped)" },
    { OPT_NO_BOS,   CMD_TOKENIZE, "--no-bos",                NULL,  0,  0, 0, "do not prepend BOS even when the model asks for it" },
    { OPT_NO_SPECIAL, CMD_TOKENIZE, "--no-special",          NULL,  0,  0, 0, "\"<|im_start|>\" and the like in the text stay plain text" },
};
#define N_OPTIONS ((int)(sizeof options / sizeof options[0]))

const cli_option *cli_options(int *n) { *n = N_OPTIONS; return options; }

/* does the comma-separated list `names` hold `a` (exactly, a of length alen)? */
static int has_name(const char *names, const char *a, size_t alen) {
    for (const char *p = names; *p;) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == alen && !memcmp(p, a, l)) return 1;
        if (!e) break;
        p = e + 1;
    }
    return 0;
}

void cli_print_version(FILE *f) {
    fprintf(f, "strata %s (%s build, %s)\n", STRATA_VERSION,
#ifdef STRATA_HAVE_CUDA
            "CPU + CUDA",
#else
            "CPU",
#endif
            __DATE__);
}

int cli_usage_error(const char *name, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "strata %s: %s (strata %s --help lists the options)\n", name, msg, name);
    return CLI_USAGE;
}

void cli_help(FILE *f, const cli_command *c) {
    fprintf(f, "usage: strata %s %s\n\n%s\noptions:\n", c->name, c->synopsis, c->about);
    for (int i = 0; i < N_OPTIONS; i++) {
        const cli_option *op = &options[i];
        if (!(op->cmds & c->bit)) continue;
        char left[96];
        int n = snprintf(left, sizeof left, "  ");
        /* short spellings (one dash) first, then long ones, as given */
        for (int pass = 0; pass < 2; pass++)
            for (const char *p = op->names; *p;) {
                const char *e = strchr(p, ',');
                int l = e ? (int)(e - p) : (int)strlen(p);
                int is_long = p[1] == '-';
                if (is_long == pass && n < (int)sizeof left)
                    n += snprintf(left + n, sizeof left - (size_t)n, "%s%.*s", n > 2 ? ", " : "", l, p);
                if (!e) break;
                p = e + 1;
            }
        if (op->arg && n < (int)sizeof left) snprintf(left + n, sizeof left - (size_t)n, " %s", op->arg);
        const char *h = op->help;
        if (strlen(left) > 30) fprintf(f, "%s\n%32s", left, "");
        else fprintf(f, "%-32s", left);
        for (;;) {   /* continuation lines line up under the first */
            const char *e = strchr(h, '\n');
            if (!e) { fprintf(f, "%s\n", h); break; }
            fprintf(f, "%.*s\n%32s", (int)(e - h), h, "");
            h = e + 1;
        }
    }
}

static void opts_defaults(cli_opts *o) {
    memset(o, 0, sizeof *o);
    o->model = env_default_model_path();
    o->n_predict = 256;
    o->device = STRATA_DEVICE_AUTO;
    o->n_gpu_layers = -2;
    o->sp = strata_sampler_default_params();
    o->sp.temperature = 0.8f; o->sp.top_k = 40; o->sp.top_p = 0.95f; o->sp.min_p = 0.05f;
    o->show_stats = 1;
    o->port = -1; o->queue = -1;
    o->max_conn = -1; o->max_conn_per_ip = -1; o->header_timeout = -1;
    o->pp = 128; o->tg = 64; o->reps = 3; o->n_depth = 1;
}

/* Store one parsed option. v: the value text, d: its number ('i' and 'f'). 0, or an exit code. */
static int cli_apply(const cli_command *c, cli_opts *o, const cli_option *op, const char *spelled,
                     const char *v, double d) {
    switch (op->id) {
    case OPT_HELP: cli_help(stdout, c); return CLI_OK;
    case OPT_VERSION: cli_print_version(stdout); return CLI_OK;
    case OPT_MODEL: o->model = v; break;
    case OPT_PROMPT: o->prompt = v; break;
    case OPT_FILE: o->prompt_file = v; break;
    case OPT_SYSTEM: o->system = v; break;
    case OPT_N_PREDICT: o->n_predict = (int)d; break;
    case OPT_THREADS: o->n_threads = (int)d; break;
    case OPT_CTX:
        if (d > 0 && d < 16) return cli_usage_error(c->name, "%s %s: the context needs at least 16 tokens (0: the default)", spelled, v);
        o->n_ctx = (int)d; break;
    case OPT_TEMP: o->sp.temperature = (float)d; break;
    case OPT_TOP_K: o->sp.top_k = (int)d; break;
    case OPT_TOP_P: o->sp.top_p = (float)d; break;
    case OPT_MIN_P: o->sp.min_p = (float)d; break;
    case OPT_REPEAT_PENALTY: o->sp.repeat_penalty = (float)d; break;
    case OPT_REPEAT_LAST_N: o->sp.repeat_last_n = (int)d; break;
    case OPT_SEED:
        if (d < 0) { o->seed_set = 0; break; }
        o->sp.seed = (uint64_t)strtoull(v, NULL, 10); o->seed_set = 1; break;
    case OPT_STOP:
        if (o->n_stops == 8) return cli_usage_error(c->name, "at most 8 %s strings", spelled);
        o->stops[o->n_stops++] = v; break;
    case OPT_SPEC: o->spec = (int)d; break;
    case OPT_DRAFT: o->draft_model = v; break;
    case OPT_KV:
        if (!strcmp(v, "f16")) o->kv_type = STRATA_KV_F16;
        else if (!strcmp(v, "int8")) o->kv_type = STRATA_KV_INT8;
        else return cli_usage_error(c->name, "%s must be f16 or int8, got '%s'", spelled, v);
        break;
    case OPT_CHAT: o->chat = 1; break;
    case OPT_EXACT: o->exact = 1; break;
    case OPT_NO_STATS: o->show_stats = 0; break;
    case OPT_DEVICE:
        if (!strcmp(v, "cpu")) o->device = STRATA_DEVICE_CPU;
        else if (!strcmp(v, "cuda") || !strcmp(v, "gpu")) o->device = STRATA_DEVICE_CUDA;
        else if (!strcmp(v, "auto")) o->device = STRATA_DEVICE_AUTO;
        else return cli_usage_error(c->name, "%s must be cpu, cuda or auto, got '%s'", spelled, v);
        break;
    case OPT_NGL:   /* all layers or none: 0 is the CPU, anything else the GPU when there is one */
        o->n_gpu_layers = (int)d;
        if (d == 0) o->device = STRATA_DEVICE_CPU;
        else if (o->device == STRATA_DEVICE_CPU) o->device = STRATA_DEVICE_AUTO;
        break;
    case OPT_HOST: o->host = v; break;
    case OPT_PORT: o->port = (int)d; break;
    case OPT_PARALLEL: o->parallel = (int)d; break;
    case OPT_QUEUE: o->queue = (int)d; break;
    case OPT_STEP_TOKENS: o->step_tokens = (int)d; break;
    case OPT_API_KEY:
        if (!*v) return cli_usage_error(c->name, "%s is empty", spelled);
        o->api_key = v; break;
    case OPT_CORS: o->cors = v; break;
    case OPT_MAX_BODY: o->max_body = (long)d; break;
    case OPT_MAX_CONN: o->max_conn = (int)d; break;
    case OPT_MAX_CONN_PER_IP: o->max_conn_per_ip = (int)d; break;
    case OPT_HEADER_TIMEOUT: o->header_timeout = (int)d; break;
    case OPT_GRAMMAR: o->grammar = v; break;
    case OPT_JSON_SCHEMA: o->json_schema = v; break;
    case OPT_VERBOSE: o->verbose = 1; break;
    case OPT_LOG_FORMAT:
        if (!strcmp(v, "json")) { o->log_json = 1; o->verbose = 1; }
        else if (!strcmp(v, "text")) o->log_json = 0;
        else return cli_usage_error(c->name, "%s must be text or json, got '%s'", spelled, v);
        break;
    case OPT_CHAT_TEMPLATE: o->chat_template = v; break;
    case OPT_PP: o->pp = (int)d; break;
    case OPT_TG: o->tg = (int)d; break;
    case OPT_REPS: o->reps = (int)d; break;
    case OPT_DEPTH: {
        int n = 0;
        for (const char *p = v; ; p++) {
            char *end;
            long x = strtol(p, &end, 10);
            if (end == p || x < 0 || x > (1 << 24) || n == 16 || (*end && *end != ','))
                return cli_usage_error(c->name, "%s takes up to 16 depths 0..16777216 separated by commas, got '%s'",
                                       spelled, v);
            o->depth[n++] = (int)x;
            p = end;
            if (!*p) break;
        }
        for (int i = 1; i < n; i++)   /* ascending: each fill extends the previous one */
            for (int j = i; j > 0 && o->depth[j] < o->depth[j - 1]; j--) {
                int t = o->depth[j]; o->depth[j] = o->depth[j - 1]; o->depth[j - 1] = t;
            }
        o->n_depth = n;
        break;
    }
    case OPT_PIECES: o->pieces = 1; break;
    case OPT_NO_BOS: o->no_bos = 1; break;
    case OPT_NO_SPECIAL: o->no_special = 1; break;
    }
    return -1;
}

/* Check a value against the row's kind and range, then store it. */
static int apply_value(const cli_command *c, cli_opts *o, const cli_option *op, const char *spelled, const char *v) {
    double d = 0;
    if (op->kind == 'i' || op->kind == 'f') {
        char *end;
        errno = 0;
        d = op->kind == 'i' ? (double)strtoll(v, &end, 10) : strtod(v, &end);
        int bad = end == v || *end || errno || d != d || d < op->lo || d > op->hi;
        if (bad && op->kind == 'i')
            return cli_usage_error(c->name, "%s: '%s' is not an integer in %lld..%lld", spelled, v,
                                   (long long)op->lo, (long long)op->hi);
        if (bad) return cli_usage_error(c->name, "%s: '%s' is not a number in %g..%g", spelled, v, op->lo, op->hi);
    }
    return cli_apply(c, o, op, spelled, v, d);
}

int cli_set_option(const cli_command *c, cli_opts *o, const char *name, const char *value) {
    char spelled[64];
    snprintf(spelled, sizeof spelled, "--%s", name);
    for (int k = 0; k < N_OPTIONS; k++)
        if ((options[k].cmds & c->bit) && options[k].kind && has_name(options[k].names, spelled, strlen(spelled))) {
            if (!value || !*value) { fprintf(stderr, "%s needs a value (%s)\n", spelled, options[k].arg); return CLI_USAGE; }
            int rc = apply_value(c, o, &options[k], spelled, value);
            if (rc < 0 && options[k].id == OPT_SEED && !o->seed_set)
                o->sp.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
            return rc;
        }
    fprintf(stderr, "no option --%s takes a value here\n", name);
    return CLI_USAGE;
}

int cli_parse(const cli_command *c, int argc, char **argv, cli_opts *o) {
    opts_defaults(o);
    int only_args = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (only_args || a[0] != '-' || !a[1]) {   /* positional ("-" alone is one too) */
            if (o->n_args >= c->max_args || o->n_args >= 64)
                return cli_usage_error(c->name, "unexpected argument '%s'", a);
            o->args[o->n_args++] = a;
            continue;
        }
        if (!strcmp(a, "--")) { only_args = 1; continue; }
        /* --name=value */
        const char *eq = a[1] == '-' ? strchr(a, '=') : NULL;
        size_t alen = eq ? (size_t)(eq - a) : strlen(a);
        const cli_option *op = NULL;
        int elsewhere = 0;
        for (int k = 0; k < N_OPTIONS; k++)
            if (has_name(options[k].names, a, alen)) {
                if (options[k].cmds & c->bit) { op = &options[k]; break; }
                elsewhere = 1;
            }
        char spelled[64];
        snprintf(spelled, sizeof spelled, "%.*s", (int)(alen < 60 ? alen : 60), a);
        if (!op) return elsewhere ? cli_usage_error(c->name, "%s is not an option of %s", spelled, c->name)
                                  : cli_usage_error(c->name, "unknown option '%s'", spelled);
        const char *v = NULL;
        if (op->kind) {
            if (eq) v = eq + 1;
            else if (i + 1 < argc) v = argv[++i];
            else return cli_usage_error(c->name, "%s needs a value (%s)", spelled, op->arg);
        } else if (eq) return cli_usage_error(c->name, "%s takes no value", spelled);
        int rc = apply_value(c, o, op, spelled, v);
        if (rc >= 0) return rc;
    }
    if (!o->seed_set) o->sp.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    if (o->chat_template) {   /* a file when one exists by that name, else a built-in name */
        const char *bt = chat_builtin_by_name(o->chat_template);
        if (access(o->chat_template, F_OK) == 0 || !bt) {
            if (access(o->chat_template, F_OK) != 0)
                return cli_usage_error(c->name, "--chat-template '%s' is neither a file nor a built-in name (%s)",
                                       o->chat_template, CHAT_BUILTIN_NAMES);
            o->chat_template_text = cli_read_file(o->chat_template, NULL);
            if (!o->chat_template_text) return CLI_ERR;
        } else if (!(o->chat_template_text = st_strdup(bt))) return CLI_ERR;
    }
    if (c->bit & (CMD_MODEL | CMD_TOKENIZE | CMD_INFO)) {   /* -m org/repo:QUANT */
        const char *path = cli_resolve_model(o->model);
        if (!path) return CLI_ERR;
        o->model = path;
    }
    return -1;
}

void cli_warn_ctx(const strata_model *m, int n_ctx) {
    strata_model_info info;
    strata_model_get_info(m, &info);
    if (n_ctx > 0 && info.n_ctx_train > 0 && n_ctx > info.n_ctx_train)
        fprintf(stderr, "strata: warning: a context of %d tokens exceeds the %d this model was trained on; "
                        "output past %d tokens may degrade\n", n_ctx, info.n_ctx_train, info.n_ctx_train);
}

static void progress_bar(float f, void *user) {
    int *last = user;
    int pct = (int)(f * 100.0f);
    if (pct == *last) return;
    *last = pct;
    int w = 40, fill = (int)(f * w);
    fprintf(stderr, "\rloading [");
    for (int i = 0; i < w; i++) fputc(i < fill ? '#' : ' ', stderr);
    fprintf(stderr, "] %3d%%", pct);
    if (pct >= 100) fputc('\n', stderr);
    fflush(stderr);
}

strata_model *cli_load_model(const cli_opts *o) {
    strata_model_params mp = strata_model_default_params();
    mp.path = o->model;
    mp.n_threads = o->n_threads;
    mp.exact = o->exact;
    mp.device = o->device;
    mp.chat_template = o->chat_template_text;
    int last = -1;
    if (isatty(2)) { mp.progress = progress_bar; mp.progress_user = &last; }
    strata_model *m;
    char err[512];
    if (access(o->model, F_OK) != 0) {
        fprintf(stderr, "strata: model file %s does not exist%s\n", o->model,
                !strcmp(o->model, env_default_model_path()) ? " (run `make model` to fetch the default model, or pass -m MODEL.gguf)" : "");
        return NULL;
    }
    if (strata_model_load(&mp, &m, err, sizeof err) != 0) {
        fprintf(stderr, "strata: %s\n", err);
        return NULL;
    }
    cli_warn_ctx(m, o->n_ctx);
    strata_model_info in;
    strata_model_get_info(m, &in);
    if (o->n_gpu_layers > 0 && o->n_gpu_layers < in.n_layers)
        fprintf(stderr, "strata: -ngl %d: layers cannot be split between the CPU and the GPU yet; all %d layers run on "
                        "the %s\n", o->n_gpu_layers, in.n_layers, in.device ? in.device : "cpu");
    return m;
}

char *cli_read_file(const char *path, size_t *len) {
    int is_stdin = !strcmp(path, "-");
    FILE *f = is_stdin ? stdin : fopen(path, "rb");
    if (!f) { fprintf(stderr, "strata: cannot open %s\n", path); return NULL; }
    size_t cap = 4096, n = 0;
    char *buf = st_malloc(cap);
    for (;;) {
        if (!buf) { if (!is_stdin) fclose(f); fprintf(stderr, "strata: out of memory reading %s\n", path); return NULL; }
        n += fread(buf + n, 1, cap - n - 1, f);
        if (n < cap - 1) break;
        char *nb = st_realloc(buf, cap * 2);
        if (!nb) st_free(buf);
        buf = nb; cap *= 2;
    }
    if (!is_stdin) fclose(f);
    buf[n] = 0;
    if (len) *len = n;
    return buf;
}
