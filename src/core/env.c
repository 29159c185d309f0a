#include "env.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct { const char *name; env_kind kind; const char *def; const char *doc; } env_def;

static const env_def env_defs[ENV_COUNT] = {
#define X(id, name, kind, def, doc) [id] = { name, kind, def, doc },
#include "env_list.h"
#undef X
};

static struct { int loaded; int set; const char *str; long num; } env_cache[ENV_COUNT];
static pthread_mutex_t env_lock = PTHREAD_MUTEX_INITIALIZER;

static long env_parse_num(env_kind kind, const char *s) {
    if (kind == ENV_BOOL) {
        return !strcmp(s, "1") || !strcasecmp(s, "true") || !strcasecmp(s, "yes") || !strcasecmp(s, "on");
    }
    return strtol(s, NULL, 0);
}

static void env_load(env_id id) {
    pthread_mutex_lock(&env_lock);
    if (!env_cache[id].loaded) {
        const char *v = getenv(env_defs[id].name);
        env_cache[id].set = v != NULL;
        env_cache[id].str = v ? v : env_defs[id].def;
        env_cache[id].num = env_parse_num(env_defs[id].kind, env_cache[id].str);
        __atomic_store_n(&env_cache[id].loaded, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&env_lock);
}

static inline void env_ensure(env_id id) {
    if (!__atomic_load_n(&env_cache[id].loaded, __ATOMIC_ACQUIRE)) env_load(id);
}

int env_bool(env_id id) { env_ensure(id); return env_cache[id].num != 0; }
long env_int(env_id id) { env_ensure(id); return env_cache[id].num; }
const char *env_str(env_id id) { env_ensure(id); return env_cache[id].str; }
int env_is_set(env_id id) { env_ensure(id); return env_cache[id].set; }

void env_reset_cache(void) {
    pthread_mutex_lock(&env_lock);
    memset(env_cache, 0, sizeof env_cache);
    pthread_mutex_unlock(&env_lock);
}

int env_find(const char *name) {
    for (int i = 0; i < ENV_COUNT; i++)
        if (!strcmp(env_defs[i].name, name)) return i;
    return -1;
}

/* text from column `indent` on, words moved to the next line past `width` columns (a word longer
 * than a line stands alone on its own) */
static void env_wrap(FILE *f, const char *text, int indent, int width) {
    int col = 0;
    const char *p = text;
    while (*p) {
        while (*p == ' ') p++;
        if (!*p) break;
        int n = 0;
        while (p[n] && p[n] != ' ') n++;
        if (col > 0 && col + 1 + n > width) { fputc('\n', f); col = 0; }
        if (col == 0) { fprintf(f, "%*s", indent, ""); col = indent; }
        else { fputc(' ', f); col++; }
        fwrite(p, 1, (size_t)n, f);
        col += n;
        p += n;
    }
    fputc('\n', f);
}

void env_print_one(FILE *f, int id) {
    static const char *kinds[] = { "bool", "int", "string" };
    if (id < 0 || id >= ENV_COUNT) return;
    const char *cur = env_str((env_id)id);
    fprintf(f, "%-24s %-6s default=%-6s %s%s\n", env_defs[id].name, kinds[env_defs[id].kind], env_defs[id].def,
            env_is_set((env_id)id) ? "set=" : "", env_is_set((env_id)id) ? cur : "");
    env_wrap(f, env_defs[id].doc, 4, ENV_PRINT_WIDTH);
}

void env_print(FILE *f) {
    for (int i = 0; i < ENV_COUNT; i++) env_print_one(f, i);
}

static char cache_dir_buf[4096], model_path_buf[4200];
static pthread_once_t cache_dir_once = PTHREAD_ONCE_INIT;
static void cache_dir_init(void) {
    const char *s = env_str(ENV_CACHE_DIR), *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
    if (*s) snprintf(cache_dir_buf, sizeof cache_dir_buf, "%s", s);
    else if (x && *x) snprintf(cache_dir_buf, sizeof cache_dir_buf, "%s/strata", x);
    else snprintf(cache_dir_buf, sizeof cache_dir_buf, "%s/.cache/strata", h && *h ? h : ".");
    snprintf(model_path_buf, sizeof model_path_buf, "%s/SmolLM2-135M-Instruct.Q4_1.gguf", cache_dir_buf);
}
const char *env_cache_dir(void) { pthread_once(&cache_dir_once, cache_dir_init); return cache_dir_buf; }
const char *env_default_model_path(void) { pthread_once(&cache_dir_once, cache_dir_init); return model_path_buf; }
