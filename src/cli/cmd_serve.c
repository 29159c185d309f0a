/* strata serve: OpenAI-compatible HTTP server (src/server). Parses options, then srv_run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pwd.h>
#include <unistd.h>
#include "cli.h"
#include "core/env.h"
#include "server/server.h"

static void serve_usage(FILE *f) {
    fprintf(f,
        "usage: strata serve [-m MODEL] [options]\n\n"
        "  -m, --model PATH     GGUF model (default: the cached SmolLM2-135M-Instruct.Q4_1.gguf)\n"
        "      --host ADDR      address to listen on (default 127.0.0.1; 0.0.0.0 or :: for all)\n"
        "      --port N         port (default 8080; 0 picks a free one, printed at start)\n"
        "      --parallel N     requests generating at the same time (slots, default 1)\n"
        "      --ctx N          context per slot in tokens (default: min(training context, 4096))\n"
        "      --queue N        requests that may wait for a slot; more get 429 (default 16)\n"
        "      --api-key KEY    require 'Authorization: Bearer KEY' or 'X-Api-Key: KEY'\n"
        "      --cors ORIGIN    send Access-Control-Allow-Origin: ORIGIN (e.g. '*')\n"
        "      --max-body N     largest request body in bytes (default 8388608)\n"
        "      --max-conn N     open connections at most; more are closed at once (default 512)\n"
        "      --max-conn-per-ip N  open connections from one address at most (default 64; 0: no cap)\n"
        "      --header-timeout S  seconds a connection has to send a request's headers (default 10)\n"
        "  -t, --threads N      worker threads (default: STRATA_THREADS or all cores)\n"
        "      --device D       cpu, cuda or auto (default auto: CUDA when the build and the GPU allow)\n"
        "      --spec N         speculative decoding for greedy requests: up to N (<= 7) drafted tokens\n"
        "                       per step from the context (suffix matching); 0 turns it off\n"
        "      --kv T           KV cache: f16 (default) or int8 (CPU: 0.56x the memory, other bits)\n"
        "      --chat-template FILE  a Jinja chat template to use instead of the model's own (e.g. one\n"
        "                       that renders tools, for tool calls)\n\n"
        "Endpoints: POST /v1/chat/completions, /v1/completions, /tokenize, /detokenize;\n"
        "GET /v1/models, /health, /metrics, / (chat page). See docs/SERVER.md.\n");
}

static int parse_int(const char *opt, const char *v, long lo, long hi, long *out) {
    char *end;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || !*v || *end || x < lo || x > hi) {
        fprintf(stderr, "strata serve: %s needs an integer in %ld..%ld, got '%s'\n", opt, lo, hi, v ? v : "");
        return -1;
    }
    *out = x;
    return 0;
}

int cmd_serve(int argc, char **argv) {
    srv_options o = srv_default_options();
    static char default_model[4096];
    const char *cache = env_str(ENV_CACHE_DIR);
    if (cache[0]) snprintf(default_model, sizeof default_model, "%s/SmolLM2-135M-Instruct.Q4_1.gguf", cache);
    else {
        /* the home directory from the password database (getenv is for src/core/env.c only) */
        struct passwd *pw = getpwuid(getuid());
        if (pw && pw->pw_dir)
            snprintf(default_model, sizeof default_model, "%s/.cache/strata/SmolLM2-135M-Instruct.Q4_1.gguf", pw->pw_dir);
    }
    o.model_path = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        long x;
#define NEEDS_VALUE() do { if (!v) { fprintf(stderr, "strata serve: %s needs a value\n", a); return 2; } i++; } while (0)
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { serve_usage(stdout); return 0; }
        else if (!strcmp(a, "-m") || !strcmp(a, "--model")) { NEEDS_VALUE(); o.model_path = v; }
        else if (!strcmp(a, "--host")) { NEEDS_VALUE(); o.host = v; }
        else if (!strcmp(a, "--port")) { NEEDS_VALUE(); if (parse_int(a, v, 0, 65535, &x)) return 2; o.port = (int)x; }
        else if (!strcmp(a, "--parallel") || !strcmp(a, "-np")) { NEEDS_VALUE(); if (parse_int(a, v, 1, 256, &x)) return 2; o.parallel = (int)x; }
        else if (!strcmp(a, "--ctx") || !strcmp(a, "-c")) { NEEDS_VALUE(); if (parse_int(a, v, 0, 1 << 24, &x)) return 2; o.n_ctx = (int)x; }
        else if (!strcmp(a, "--queue")) { NEEDS_VALUE(); if (parse_int(a, v, 0, 100000, &x)) return 2; o.queue = (int)x; }
        else if (!strcmp(a, "--api-key")) { NEEDS_VALUE(); if (!*v) { fprintf(stderr, "strata serve: --api-key is empty\n"); return 2; } o.api_key = v; }
        else if (!strcmp(a, "--cors")) { NEEDS_VALUE(); o.cors = v; }
        else if (!strcmp(a, "--max-body")) { NEEDS_VALUE(); if (parse_int(a, v, 1024, 1L << 30, &x)) return 2; o.max_body = (size_t)x; }
        else if (!strcmp(a, "--max-conn")) { NEEDS_VALUE(); if (parse_int(a, v, 1, 100000, &x)) return 2; o.max_conn = (int)x; }
        else if (!strcmp(a, "--max-conn-per-ip")) { NEEDS_VALUE(); if (parse_int(a, v, 0, 100000, &x)) return 2; o.max_conn_per_ip = (int)x; }
        else if (!strcmp(a, "--header-timeout")) { NEEDS_VALUE(); if (parse_int(a, v, 1, 3600, &x)) return 2; o.header_timeout = (int)x; }
        else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) { NEEDS_VALUE(); if (parse_int(a, v, 0, 1024, &x)) return 2; o.n_threads = (int)x; }
        else if (!strcmp(a, "--chat-template")) { NEEDS_VALUE(); o.chat_template_file = v; }
        else if (!strcmp(a, "--spec")) { NEEDS_VALUE(); if (parse_int(a, v, 0, STRATA_MAX_DRAFT, &x)) return 2; o.spec = (int)x; }
        else if (!strcmp(a, "--kv")) {
            NEEDS_VALUE();
            if (!strcmp(v, "f16")) o.kv_type = STRATA_KV_F16;
            else if (!strcmp(v, "int8")) o.kv_type = STRATA_KV_INT8;
            else { fprintf(stderr, "strata serve: --kv must be f16 or int8\n"); return 2; }
        }
        else if (!strcmp(a, "--device")) {
            NEEDS_VALUE();
            if (!strcmp(v, "cpu")) o.device = STRATA_DEVICE_CPU;
            else if (!strcmp(v, "cuda")) o.device = STRATA_DEVICE_CUDA;
            else if (!strcmp(v, "auto")) o.device = STRATA_DEVICE_AUTO;
            else { fprintf(stderr, "strata serve: --device must be cpu, cuda or auto, got '%s'\n", v); return 2; }
        }
        else { fprintf(stderr, "strata serve: unknown option '%s'\n\n", a); serve_usage(stderr); return 2; }
#undef NEEDS_VALUE
    }
    if (!o.model_path) {
        if (!default_model[0]) {
            fprintf(stderr, "strata serve: no model: give -m MODEL.gguf (or set STRATA_CACHE_DIR to where "
                            "SmolLM2-135M-Instruct.Q4_1.gguf lives; `make model` fetches it)\n");
            return 2;
        }
        o.model_path = default_model;
    }
    return srv_run(&o);
}
