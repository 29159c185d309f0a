#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cli_common.h"
#include "core/env.h"
#include "core/util.h"

static int parse_num(const char *opt, const char *v, double lo, double hi, double *out) {
    char *end;
    if (!v) { fprintf(stderr, "strata: %s needs a value\n", opt); return -1; }
    double d = strtod(v, &end);
    if (end == v || *end || d < lo || d > hi) {
        fprintf(stderr, "strata: %s: '%s' is not a number in [%g, %g]\n", opt, v, lo, hi);
        return -1;
    }
    *out = d;
    return 0;
}

int cli_parse(int argc, char **argv, cli_opts *o, const char *usage) {
    memset(o, 0, sizeof *o);
    o->model = env_default_model_path();
    o->n_predict = 256;
    o->device = STRATA_DEVICE_AUTO;
    o->sp = strata_sampler_default_params();
    o->sp.temperature = 0.8f; o->sp.top_k = 40; o->sp.top_p = 0.95f; o->sp.min_p = 0.05f;
    o->show_stats = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        double d;
#define NUM(lo, hi) (parse_num(a, v, lo, hi, &d) ? -1 : (i++, 0))
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { fputs(usage, stdout); return 1; }
        else if (!strcmp(a, "-m") || !strcmp(a, "--model")) { if (!v) goto missing; o->model = v; i++; }
        else if (!strcmp(a, "-p") || !strcmp(a, "--prompt")) { if (!v) goto missing; o->prompt = v; i++; }
        else if (!strcmp(a, "-f") || !strcmp(a, "--file")) { if (!v) goto missing; o->prompt_file = v; i++; }
        else if (!strcmp(a, "--system")) { if (!v) goto missing; o->system = v; i++; }
        else if (!strcmp(a, "--stop")) {
            if (!v) goto missing;
            if (o->n_stops == 8) { fprintf(stderr, "strata: at most 8 --stop strings\n"); return -1; }
            o->stops[o->n_stops++] = v; i++;
        }
        else if (!strcmp(a, "-n") || !strcmp(a, "--n-predict")) { if (NUM(0, 1e9)) return -1; o->n_predict = (int)d; }
        else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) { if (NUM(1, 1024)) return -1; o->n_threads = (int)d; }
        else if (!strcmp(a, "-c") || !strcmp(a, "--ctx")) { if (NUM(16, 1 << 24)) return -1; o->n_ctx = (int)d; }
        else if (!strcmp(a, "--temp")) { if (NUM(0, 100)) return -1; o->sp.temperature = (float)d; }
        else if (!strcmp(a, "--top-k")) { if (NUM(0, 1e9)) return -1; o->sp.top_k = (int)d; }
        else if (!strcmp(a, "--top-p")) { if (NUM(0, 1)) return -1; o->sp.top_p = (float)d; }
        else if (!strcmp(a, "--min-p")) { if (NUM(0, 1)) return -1; o->sp.min_p = (float)d; }
        else if (!strcmp(a, "--repeat-penalty")) { if (NUM(0.01, 100)) return -1; o->sp.repeat_penalty = (float)d; }
        else if (!strcmp(a, "--repeat-last-n")) { if (NUM(0, 1e9)) return -1; o->sp.repeat_last_n = (int)d; }
        else if (!strcmp(a, "--seed")) { if (NUM(0, 1.8e19)) return -1; o->sp.seed = (uint64_t)d; o->seed_set = 1; }
        else if (!strcmp(a, "--spec")) { if (NUM(0, 7)) return -1; o->spec = (int)d; }
        else if (!strcmp(a, "--draft-model")) { if (!v) goto missing; o->draft_model = v; i++; }
        else if (!strcmp(a, "--grammar")) { if (!v) goto missing; o->grammar = v; i++; }
        else if (!strcmp(a, "--json-schema")) { if (!v) goto missing; o->json_schema = v; i++; }
        else if (!strcmp(a, "--kv")) {
            if (!v) goto missing;
            if (!strcmp(v, "f16")) o->kv_type = STRATA_KV_F16;
            else if (!strcmp(v, "int8")) o->kv_type = STRATA_KV_INT8;
            else { fprintf(stderr, "strata: --kv must be f16 or int8\n"); return -1; }
            i++;
        }
        else if (!strcmp(a, "--chat")) o->chat = 1;
        else if (!strcmp(a, "--exact")) o->exact = 1;
        else if (!strcmp(a, "--no-stats")) o->show_stats = 0;
        else if (!strcmp(a, "--device")) {
            if (!v) goto missing;
            if (!strcmp(v, "cpu")) o->device = STRATA_DEVICE_CPU;
            else if (!strcmp(v, "cuda")) o->device = STRATA_DEVICE_CUDA;
            else if (!strcmp(v, "auto")) o->device = STRATA_DEVICE_AUTO;
            else { fprintf(stderr, "strata: --device must be cpu, cuda or auto\n"); return -1; }
            i++;
        }
        else { fprintf(stderr, "strata: unknown option '%s' (see --help)\n", a); return -1; }
        continue;
missing:
        fprintf(stderr, "strata: %s needs a value\n", a);
        return -1;
#undef NUM
    }
    if (!o->seed_set) o->sp.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    return 0;
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
    return m;
}

char *cli_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) { fprintf(stderr, "strata: cannot open %s\n", path); return NULL; }
    size_t cap = 4096, n = 0;
    char *buf = st_malloc(cap);
    for (;;) {
        if (!buf) { fclose(f); fprintf(stderr, "strata: out of memory reading %s\n", path); return NULL; }
        n += fread(buf + n, 1, cap - n - 1, f);
        if (n < cap - 1) break;
        char *nb = st_realloc(buf, cap * 2);
        if (!nb) st_free(buf);
        buf = nb; cap *= 2;
    }
    fclose(f);
    buf[n] = 0;
    if (len) *len = n;
    return buf;
}
