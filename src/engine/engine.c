/* The engine API (include/strata.h): model loading, sessions, generation, stats. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <pthread.h>
#include "engine.h"
#include "core/env.h"
#include "core/util.h"
#include "tokenizer/tokenizer.h"
#include "template/jinja.h"
#include "spec/spec.h"
#include "spec/suffix.h"
#include "chat_builtin.h"
#include "quant/quant.h"

/* A speculative window: the token and its drafts (STRATA_MAX_DRAFT + 1). */
#define SPEC_MAX_WINDOW (STRATA_MAX_DRAFT + 1)
/* The columns of one pass of strata_sessions_step_spec: every column's logits (or pick) come
 * back, so the head's cap. */
#define STEP_MAX_COLS FWD_MAX_LOGITS

strata_model_params strata_model_default_params(void) {
    strata_model_params p;
    memset(&p, 0, sizeof p);
    p.device = STRATA_DEVICE_AUTO;
    return p;
}

strata_sampler_params strata_sampler_default_params(void) {
    strata_sampler_params p = { 0.0f, 0, 1.0f, 0.0f, 1.0f, 64, 0 };
    return p;
}

strata_session_params strata_session_default_params(void) {
    strata_session_params p;
    memset(&p, 0, sizeof p);
    p.sampler = strata_sampler_default_params();
    return p;
}

void strata_free(void *p) { st_free(p); }

/* Touch every page of the weights so the first token does not pay for page faults, and so
 * the load progress bar reflects real work. */
static void prefault_weights(const gguf_file *f, const strata_model_params *p) {
    const uint8_t *base = f->base + f->data_offset;
    uint64_t n = f->size - f->data_offset, step = 1u << 22;
    volatile uint8_t sink = 0;
    madvise((void *)((uintptr_t)f->base & ~(uintptr_t)4095), f->size, MADV_WILLNEED);
    for (uint64_t off = 0; off < n; off += step) {
        uint64_t end = off + step < n ? off + step : n;
        for (uint64_t i = off; i < end; i += 4096) sink ^= base[i];
        if (p->progress) p->progress((float)end / (float)n, p->progress_user);
    }
    (void)sink;
}

/* ---- device selection (src/model/devices.c) ---------------------------------------------
 * auto: the GPU when this build has one, a GPU is present and the model can run there; else
 * the CPU. cuda: the same conditions, but a failing one is an error that says which. The
 * weights are uploaded once there (progress through p->progress); out of GPU memory names the
 * tensor. */
static int select_device(const strata_model_params *p, strata_model *m, char *err, size_t errlen) {
    int req = p->device == STRATA_DEVICE_CPU ? BACKEND_DEVICE_CPU
            : p->device == STRATA_DEVICE_CUDA ? BACKEND_DEVICE_CUDA : -1;
    char e[512];
    int d = backend_device_pick(req, &m->hp, &m->w, m->exact, p->progress, p->progress_user, e, sizeof e);
    if (d < 0) { snprintf(err, errlen, "%s: %s", p->path, e); return -1; }
    m->device = d == BACKEND_DEVICE_CUDA ? STRATA_DEVICE_CUDA : STRATA_DEVICE_CPU;
    return 0;
}

int strata_model_load(const strata_model_params *p, strata_model **out, char *err, size_t errlen) {
    *out = NULL;
    double t0 = now_seconds();
    if (!p->path || !*p->path) { snprintf(err, errlen, "no model path given (use -m MODEL.gguf)"); return -1; }
    if (p->device == STRATA_DEVICE_CUDA && *backend_gpu_unbuilt()) {
        snprintf(err, errlen, "%s: --device cuda: %s", p->path, backend_gpu_unbuilt());
        return -1;
    }
    strata_model *m = st_calloc(1, sizeof *m);
    if (!m) { snprintf(err, errlen, "out of memory"); return -1; }
    if (gguf_open(p->path, &m->gguf, err, errlen) != 0) goto fail;
    if (tokenizer_load_gguf(m->gguf, &m->tok, err, errlen) != 0) goto fail;
    gguf_str s;
    if (p->chat_template) {   /* --chat-template: replaces the file's and the built-in one */
        if (!(m->chat_template = st_strdup(p->chat_template))) { snprintf(err, errlen, "out of memory"); goto fail; }
    } else if (gguf_get_str(m->gguf, "tokenizer.chat_template", &s) == 0) {
        m->chat_template = st_malloc(s.len + 1);
        if (!m->chat_template) { snprintf(err, errlen, "out of memory"); goto fail; }
        gguf_str_copy(s, m->chat_template, s.len + 1);
    }
    if (gguf_get_str(m->gguf, "general.name", &s) == 0) {
        m->name = st_malloc(s.len + 1);
        if (m->name) gguf_str_copy(s, m->name, s.len + 1);
    }
    if (!m->chat_template && gguf_get_str(m->gguf, "general.architecture", &s) == 0) {
        char arch[32];
        const char *bt = chat_builtin_template(gguf_str_copy(s, arch, sizeof arch));
        if (bt && !(m->chat_template = st_strdup(bt))) { snprintf(err, errlen, "out of memory"); goto fail; }
    }
    m->vocab_only = p->vocab_only;
    if (!p->vocab_only) {
        if (model_bind(m->gguf, &m->hp, &m->w, err, errlen) != 0) goto fail;
        if (tokenizer_n_vocab(m->tok) > m->hp.n_vocab) {
            snprintf(err, errlen, "%s: the tokenizer has %d tokens but token_embd.weight has %d rows", p->path,
                     tokenizer_n_vocab(m->tok), m->hp.n_vocab);
            goto fail;
        }
        m->exact = p->exact || env_bool(ENV_EXACT);
        m->n_threads = p->n_threads > 0 ? p->n_threads : (int)env_int(ENV_THREADS);
        if (m->n_threads <= 0) m->n_threads = cpu_count();
        m->tp = threadpool_create(m->n_threads);
        if (!m->tp) { snprintf(err, errlen, "cannot start %d threads", m->n_threads); goto fail; }
        if (select_device(p, m, err, errlen) != 0) goto fail;
        if (m->device == STRATA_DEVICE_CPU) prefault_weights(m->gguf, p);
    }
    m->t_load = now_seconds() - t0;
    *out = m;
    return 0;
fail:
    strata_model_free(m);
    return -1;
}

void strata_model_free(strata_model *m) {
    if (!m) return;
    threadpool_free(m->tp);
    if (m->device == STRATA_DEVICE_CUDA) backend_device_release(BACKEND_DEVICE_CUDA, &m->hp, &m->w);
    model_weights_free(&m->w);
    tokenizer_free(m->tok);
    gguf_close(m->gguf);
    st_free(m->chat_template);
    st_free(m->name);
    st_free(m);
}

void strata_model_get_info(const strata_model *m, strata_model_info *info) {
    memset(info, 0, sizeof *info);
    const hparams *hp = &m->hp;
    info->arch = m->vocab_only ? "" : arch_name(hp->arch);
    info->name = m->name ? m->name : "";
    info->n_layers = hp->n_layers; info->n_embd = hp->n_embd; info->n_heads = hp->n_heads;
    info->n_kv_heads = hp->n_kv_heads; info->head_dim = hp->head_dim; info->n_ff = hp->n_ff;
    info->n_vocab = m->vocab_only ? tokenizer_n_vocab(m->tok) : hp->n_vocab;
    info->n_ctx_train = hp->n_ctx_train;
    info->n_experts = hp->n_experts; info->n_experts_used = hp->n_experts_used;
    for (uint64_t i = 0; i < m->gguf->n_tensors; i++) {
        const gguf_tensor *t = &m->gguf->tensors[i];
        uint64_t ne = 1;
        for (int d = 0; d < t->n_dims; d++) ne *= (uint64_t)t->ne[d];
        info->n_params += ne;
    }
    info->weight_bytes = m->vocab_only ? 0 : model_weight_bytes_per_token(hp, &m->w);
    info->has_chat_template = m->chat_template != NULL;
    info->device = m->device == STRATA_DEVICE_CUDA ? "cuda" : "cpu";
    info->n_threads = m->n_threads;
}

const char *strata_model_chat_template(const strata_model *m) { return m->chat_template; }

/* ---- tokenizer ------------------------------------------------------------------------ */
int strata_n_vocab(const strata_model *m) { return m->vocab_only ? tokenizer_n_vocab(m->tok) : m->hp.n_vocab; }
int strata_token_bos(const strata_model *m) { return tokenizer_bos(m->tok); }
int strata_token_eos(const strata_model *m) { return tokenizer_eos(m->tok); }
int strata_token_is_eog(const strata_model *m, int32_t id) { return tokenizer_is_eog(m->tok, id); }

int strata_tokenize(const strata_model *m, const char *text, size_t len, int add_bos, int parse_special,
                    int32_t *ids, int cap) {
    int bos = tokenizer_bos(m->tok);
    if (add_bos && parse_special && bos >= 0) {
        /* a chat template that writes the BOS text itself (Gemma's {{ bos_token }}) must not
         * get a second BOS */
        size_t bl;
        const char *bt = tokenizer_token_bytes(m->tok, bos, &bl);
        if (bt && bl > 0 && len >= bl && !memcmp(text, bt, bl)) add_bos = 0;
    }
    return tokenizer_encode(m->tok, text, len, add_bos && tokenizer_add_bos(m->tok), parse_special, ids, cap);
}

const char *strata_token_text(const strata_model *m, int32_t id, size_t *len) {
    return tokenizer_token_bytes(m->tok, id, len);
}

int strata_detokenize(const strata_model *m, const int32_t *ids, int n, char *out, int cap) {
    int w = 0;
    for (int i = 0; i < n; i++) {
        size_t len;
        const char *b = tokenizer_token_bytes(m->tok, ids[i], &len);
        if (!b) continue;
        for (size_t j = 0; j < len; j++, w++)
            if (w < cap) out[w] = b[j];
    }
    if (w < cap) out[w] = 0;
    return w;
}

/* ---- chat formatting ---------------------------------------------------------------- */
static char *json_escape_dup(const char *s) {
    size_t n = strlen(s), cap = n * 6 + 3, w = 0;
    char *o = st_malloc(cap);
    if (!o) return NULL;
    o[w++] = '"';
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') { o[w++] = '\\'; o[w++] = (char)*p; }
        else if (*p == '\n') { o[w++] = '\\'; o[w++] = 'n'; }
        else if (*p == '\r') { o[w++] = '\\'; o[w++] = 'r'; }
        else if (*p == '\t') { o[w++] = '\\'; o[w++] = 't'; }
        else if (*p < 0x20) w += (size_t)snprintf(o + w, cap - w, "\\u%04x", *p);
        else o[w++] = (char)*p;
    }
    o[w++] = '"'; o[w] = 0;
    return o;
}

static char *messages_to_json(const strata_chat_msg *msgs, int n) {
    size_t cap = 16, w = 0;
    for (int i = 0; i < n; i++) cap += strlen(msgs[i].role) * 6 + strlen(msgs[i].content) * 6 + 40;
    char *o = st_malloc(cap);
    if (!o) return NULL;
    o[w++] = '[';
    for (int i = 0; i < n; i++) {
        char *r = json_escape_dup(msgs[i].role), *c = json_escape_dup(msgs[i].content);
        if (!r || !c) { st_free(r); st_free(c); st_free(o); return NULL; }
        w += (size_t)snprintf(o + w, cap - w, "%s{\"role\": %s, \"content\": %s}", i ? ", " : "", r, c);
        st_free(r); st_free(c);
    }
    o[w++] = ']'; o[w] = 0;
    return o;
}

/* Message content is text: the text of a control token inside it ("<|im_end|>") must not
 * become that token, or a client could forge turns of other roles. Before rendering, a marker
 * (a Unicode noncharacter U+FDD0..U+FDEF that occurs nowhere in the messages, the template or
 * the extra variables) is put before every control token's text in the content; after
 * rendering the markers are taken out and their offsets become breaks that the tokenizer
 * respects (tokenizer_encode_breaks: no control token may cover one): those tokens are
 * encoded as plain text, in context, and only the template's own markers are special. The
 * marker is not whitespace and sits next to the token's text, so what templates do to
 * content (trim, split on a tag) is unchanged, and it never splits a UTF-8 character. */
#define CHAT_MARKER_LEN 3
/* Templates that print a string through Python's repr or tojson(ensure_ascii=True) write the
 * marker as the six characters "\ufddX": those are taken out too, so the candidate must not
 * occur in either spelling (any case) in what is rendered. */
static int chat_marker_in(const char *s, const char *mk, const char *esc) {
    return s && (strstr(s, mk) || strcasestr(s, esc + 1));
}
static int chat_pick_marker(const char *tmpl, const strata_chat_msg *msgs, int n, const char *const *texts, int n_texts,
                            char mk[CHAT_MARKER_LEN + 1]) {
    for (int c = 0xFDD0; c <= 0xFDEF; c++) {
        mk[0] = (char)0xEF; mk[1] = (char)(0xB7); mk[2] = (char)(0x80 | (c & 0x3F)); mk[3] = 0;
        char esc[8];
        snprintf(esc, sizeof esc, "\\u%04x", c);
        int used = chat_marker_in(tmpl, mk, esc);
        for (int i = 0; i < n_texts && !used; i++) used = chat_marker_in(texts[i], mk, esc);
        for (int i = 0; i < n && !used; i++) used = chat_marker_in(msgs[i].content, mk, esc) || chat_marker_in(msgs[i].role, mk, esc);
        if (!used) return 0;
    }
    return -1;
}

static char *chat_mark_content(const strata_model *m, const char *c, const char *mk) {
    size_t n = strlen(c), extra = 0;
    for (size_t i = 0; i < n; i++) if (tokenizer_special_len(m->tok, c + i, n - i)) extra += CHAT_MARKER_LEN;
    char *o = st_malloc(n + extra + 1);
    if (!o) return NULL;
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        if (tokenizer_special_len(m->tok, c + i, n - i)) { memcpy(o + w, mk, CHAT_MARKER_LEN); w += CHAT_MARKER_LEN; }
        o[w++] = c[i];
    }
    o[w] = 0;
    return o;
}

/* Render msgs with the model's template; with mk, control-token text in content is marked. */
static char *chat_render(const strata_model *m, const strata_chat_msg *msgs, int n, int add_generation_prompt,
                         const char *extra_json, const char *mk, char *err, size_t errlen) {
    if (!m->chat_template) {
        snprintf(err, errlen, "the model has no chat template (tokenizer.chat_template) and strata has no built-in "
                              "one for its architecture: use a plain prompt (completions)");
        return NULL;
    }
    strata_chat_msg *marked = NULL;
    if (mk) {
        marked = st_calloc((size_t)(n > 0 ? n : 1), sizeof *marked);
        int ok = marked != NULL;
        for (int i = 0; ok && i < n; i++) {
            marked[i].role = msgs[i].role;
            ok = (marked[i].content = chat_mark_content(m, msgs[i].content, mk)) != NULL;
        }
        if (!ok) {
            for (int i = 0; marked && i < n; i++) st_free((char *)marked[i].content);
            st_free(marked);
            snprintf(err, errlen, "out of memory");
            return NULL;
        }
        msgs = marked;
    }
    char *mj = messages_to_json(msgs, n);
    for (int i = 0; marked && i < n; i++) st_free((char *)marked[i].content);
    st_free(marked);
    if (!mj) { snprintf(err, errlen, "out of memory"); return NULL; }
    size_t bl = 0, el = 0;
    int bos = tokenizer_bos(m->tok), eos = tokenizer_eos(m->tok);
    const char *bt = bos >= 0 ? tokenizer_token_bytes(m->tok, bos, &bl) : NULL;
    const char *et = eos >= 0 ? tokenizer_token_bytes(m->tok, eos, &el) : NULL;
    char bos_s[256] = "", eos_s[256] = "";
    if (bt && bl < sizeof bos_s) { memcpy(bos_s, bt, bl); bos_s[bl] = 0; }
    if (et && el < sizeof eos_s) { memcpy(eos_s, et, el); eos_s[el] = 0; }
    char *r = jinja_render_chat(m->chat_template, mj, NULL, add_generation_prompt, bos_s, eos_s, extra_json, err, errlen);
    st_free(mj);
    return r;
}

char *strata_chat_format(const strata_model *m, const strata_chat_msg *msgs, int n, int add_generation_prompt,
                         const char *extra_json, char *err, size_t errlen) {
    return chat_render(m, msgs, n, add_generation_prompt, extra_json, NULL, err, errlen);
}

/* The rendered prompt r (taken over) with its markers mk (raw or escaped "\ufddX") taken
 * out, tokenized with a break at each: control-token text that followed a marker is text. */
static int chat_encode_marked(const strata_model *m, char *r, const char *mk, int32_t **ids, char **text, char *err,
                              size_t errlen) {
    char esc[8];
    snprintf(esc, sizeof esc, "\\u%04x", 0xFDC0 | ((unsigned char)mk[2] & 0x3F));
    size_t len = strlen(r), w = 0, nb = 0;
    for (const char *p = r; (p = strstr(p, mk)) != NULL; p += CHAT_MARKER_LEN) nb++;
    for (const char *p = r; (p = strstr(p, esc)) != NULL; p += 6) nb++;
    size_t *breaks = st_malloc((nb ? nb : 1) * sizeof *breaks);
    if (!breaks) { st_free(r); snprintf(err, errlen, "out of memory"); return -1; }
    nb = 0;
    for (size_t i = 0; i < len;) {
        if (i + CHAT_MARKER_LEN <= len && !memcmp(r + i, mk, CHAT_MARKER_LEN)) { breaks[nb++] = w; i += CHAT_MARKER_LEN; continue; }
        if (i + 6 <= len && !memcmp(r + i, esc, 6)) { breaks[nb++] = w; i += 6; continue; }
        r[w++] = r[i++];
    }
    r[w] = 0;
    len = w;
    /* BOS as strata_tokenize adds it: not when the template wrote the BOS text itself */
    int add_bos = tokenizer_add_bos(m->tok), bos = tokenizer_bos(m->tok);
    if (add_bos && bos >= 0) {
        size_t bl;
        const char *bt = tokenizer_token_bytes(m->tok, bos, &bl);
        if (bt && bl > 0 && len >= bl && !memcmp(r, bt, bl) && !(nb && breaks[0] < bl)) add_bos = 0;
    }
    int cap = (int)(len < 100000000 ? len : 100000000) + 8;
    int32_t *v = st_malloc((size_t)cap * sizeof *v);
    int got = v ? tokenizer_encode_breaks(m->tok, r, len, add_bos, 1, breaks, (int)nb, v, cap) : -1;
    if (got > cap) {   /* more tokens than bytes + 8: not expected, but allowed */
        int32_t *bigger = st_realloc(v, (size_t)got * sizeof *v);
        if (bigger) { v = bigger; got = tokenizer_encode_breaks(m->tok, r, len, add_bos, 1, breaks, (int)nb, v, got); }
        else got = -1;
    }
    st_free(breaks);
    if (got < 0) { st_free(v); st_free(r); snprintf(err, errlen, "out of memory"); return -1; }
    *ids = v;
    if (text) *text = r;
    else st_free(r);
    return got;
}

int strata_chat_tokenize(const strata_model *m, const strata_chat_msg *msgs, int n, int add_generation_prompt,
                         const char *extra_json, int32_t **ids, char **text, char *err, size_t errlen) {
    *ids = NULL;
    if (text) *text = NULL;
    char mk[CHAT_MARKER_LEN + 1] = "";
    if (m->chat_template && chat_pick_marker(m->chat_template, msgs, n, &extra_json, 1, mk)) {
        snprintf(err, errlen, "the messages use every Unicode noncharacter U+FDD0..U+FDEF");
        return -1;
    }
    char *r = chat_render(m, msgs, n, add_generation_prompt, extra_json, mk, err, errlen);
    if (!r) return -1;
    return chat_encode_marked(m, r, mk, ids, text, err, errlen);
}

/* A JSON text with the marker put before every control token's text inside its strings (keys
 * too: a tool's parameter names are the client's): each such string is decoded and written
 * again, everything else is copied byte for byte (numbers keep their spelling). */
static char *json_mark_strings(const strata_model *m, const char *json, const char *mk) {
    size_t n = strlen(json), cap = n + 1, w = 0;
    char *o = st_malloc(cap);
    char *dec = st_malloc(n + 1);   /* a decoded string is never longer than its JSON spelling */
    if (!o || !dec) { st_free(o); st_free(dec); return NULL; }
#define PUT(ch) do { if (w + 1 >= cap) { char *g_ = st_realloc(o, cap * 2); if (!g_) goto oom; o = g_; cap *= 2; } \
                     o[w++] = (char)(ch); } while (0)
    for (size_t i = 0; i < n;) {
        if (json[i] != '"') { PUT(json[i]); i++; continue; }
        /* a string token: decode it */
        size_t j = i + 1, d = 0;
        int ok = 1;
        while (j < n && json[j] != '"') {
            unsigned char ch = (unsigned char)json[j];
            if (ch != '\\') { dec[d++] = (char)ch; j++; continue; }
            if (j + 1 >= n) { ok = 0; break; }
            char e = json[j + 1];
            j += 2;
            switch (e) {
            case '"': dec[d++] = '"'; break;
            case '\\': dec[d++] = '\\'; break;
            case '/': dec[d++] = '/'; break;
            case 'b': dec[d++] = '\b'; break;
            case 'f': dec[d++] = '\f'; break;
            case 'n': dec[d++] = '\n'; break;
            case 'r': dec[d++] = '\r'; break;
            case 't': dec[d++] = '\t'; break;
            case 'u': {
                unsigned cp = 0;
                int k;
                for (k = 0; k < 4 && j + (size_t)k < n; k++) {
                    char h = json[j + (size_t)k];
                    cp = cp * 16 + (unsigned)(h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10
                                              : h >= 'A' && h <= 'F' ? h - 'A' + 10 : 99);
                    if (cp > 0xFFFF) break;
                }
                if (k < 4 || cp > 0xFFFF) { ok = 0; break; }
                j += 4;
                if (cp >= 0xD800 && cp < 0xDC00 && j + 6 <= n && json[j] == '\\' && json[j + 1] == 'u') {
                    unsigned lo = (unsigned)strtoul((char[5]){ json[j + 2], json[j + 3], json[j + 4], json[j + 5], 0 }, NULL, 16);
                    if (lo >= 0xDC00 && lo < 0xE000) { cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00); j += 6; }
                }
                /* UTF-8 (a lone surrogate as its 3 bytes: the template's parser refuses it anyway) */
                if (cp < 0x80) dec[d++] = (char)cp;
                else if (cp < 0x800) { dec[d++] = (char)(0xC0 | cp >> 6); dec[d++] = (char)(0x80 | (cp & 0x3F)); }
                else if (cp < 0x10000) { dec[d++] = (char)(0xE0 | cp >> 12); dec[d++] = (char)(0x80 | ((cp >> 6) & 0x3F));
                                         dec[d++] = (char)(0x80 | (cp & 0x3F)); }
                else { dec[d++] = (char)(0xF0 | cp >> 18); dec[d++] = (char)(0x80 | ((cp >> 12) & 0x3F));
                       dec[d++] = (char)(0x80 | ((cp >> 6) & 0x3F)); dec[d++] = (char)(0x80 | (cp & 0x3F)); }
                break;
            }
            default: ok = 0;
            }
            if (!ok) break;
        }
        size_t end = j < n ? j + 1 : n;   /* past the closing quote */
        int special = 0;
        for (size_t k = 0; ok && k < d && !special; k++) special = tokenizer_special_len(m->tok, dec + k, d - k) > 0;
        if (!ok || !special) {   /* as it was */
            for (size_t k = i; k < end; k++) PUT(json[k]);
            i = end;
            continue;
        }
        PUT('"');
        for (size_t k = 0; k < d; k++) {
            if (tokenizer_special_len(m->tok, dec + k, d - k)) for (int q = 0; q < CHAT_MARKER_LEN; q++) PUT(mk[q]);
            unsigned char ch = (unsigned char)dec[k];
            if (ch == '"' || ch == '\\') { PUT('\\'); PUT(ch); }
            else if (ch < 0x20) {
                char u[8];
                snprintf(u, sizeof u, "\\u%04x", ch);
                for (int q = 0; u[q]; q++) PUT(u[q]);
            } else PUT(ch);
        }
        PUT('"');
        i = end;
    }
#undef PUT
    o[w] = 0;
    st_free(dec);
    return o;
oom:
    st_free(o);
    st_free(dec);
    return NULL;
}

char *strata_chat_format_json(const strata_model *m, const char *template_src, const char *messages_json,
                              const char *tools_json, int add_generation_prompt, const char *extra_json,
                              char *err, size_t errlen) {
    const char *tmpl = template_src ? template_src : m->chat_template;
    if (!tmpl) { snprintf(err, errlen, "the model has no chat template (tokenizer.chat_template)"); return NULL; }
    size_t bl = 0, el = 0;
    int bos = tokenizer_bos(m->tok), eos = tokenizer_eos(m->tok);
    const char *bt = bos >= 0 ? tokenizer_token_bytes(m->tok, bos, &bl) : NULL;
    const char *et = eos >= 0 ? tokenizer_token_bytes(m->tok, eos, &el) : NULL;
    char bos_s[256] = "", eos_s[256] = "";
    if (bt && bl < sizeof bos_s) { memcpy(bos_s, bt, bl); bos_s[bl] = 0; }
    if (et && el < sizeof eos_s) { memcpy(eos_s, et, el); eos_s[el] = 0; }
    return jinja_render_chat(tmpl, messages_json, tools_json, add_generation_prompt, bos_s, eos_s, extra_json, err, errlen);
}

int strata_chat_tokenize_json(const strata_model *m, const char *template_src, const char *messages_json,
                              const char *tools_json, int add_generation_prompt, const char *extra_json, int32_t **ids,
                              char **text, char *err, size_t errlen) {
    *ids = NULL;
    if (text) *text = NULL;
    const char *tmpl = template_src ? template_src : m->chat_template;
    if (!tmpl) { snprintf(err, errlen, "the model has no chat template (tokenizer.chat_template)"); return -1; }
    if (!messages_json) { snprintf(err, errlen, "no messages"); return -1; }
    char mk[CHAT_MARKER_LEN + 1];
    const char *texts[3] = { messages_json, tools_json, extra_json };
    if (chat_pick_marker(tmpl, NULL, 0, texts, 3, mk)) {
        snprintf(err, errlen, "the messages use every Unicode noncharacter U+FDD0..U+FDEF");
        return -1;
    }
    char *mm = json_mark_strings(m, messages_json, mk), *mt = tools_json ? json_mark_strings(m, tools_json, mk) : NULL;
    if (!mm || (tools_json && !mt)) { st_free(mm); st_free(mt); snprintf(err, errlen, "out of memory"); return -1; }
    char *r = strata_chat_format_json(m, tmpl, mm, mt, add_generation_prompt, extra_json, err, errlen);
    st_free(mm);
    st_free(mt);
    if (!r) return -1;
    return chat_encode_marked(m, r, mk, ids, text, err, errlen);
}

/* ---- sessions ------------------------------------------------------------------------ */
int strata_session_pos(const strata_session *s) { return s->pos; }
int strata_session_n_ctx(const strata_session *s) { return s->n_ctx; }
size_t strata_session_kv_bytes(const strata_session *s, size_t *per_position) {
    if (s->be->ops->kv_bytes) return s->be->ops->kv_bytes(s->be, per_position);
    const hparams *hp = &s->m->hp;
    size_t pp = 2 * (size_t)hp->n_layers * hp->n_kv_heads * hp->head_dim * sizeof(uint16_t);
    if (per_position) *per_position = pp;
    return pp * (size_t)s->n_ctx;
}
const int32_t *strata_session_history(const strata_session *s) { return s->history; }

int strata_session_rewind(strata_session *s, int pos) {
    if (pos < 0 || pos > s->pos) return -1;
    /* sliding-window layers keep only a ring of recent rows: a deeper rollback would need
     * rows that were overwritten; the caller must start over (strata_session_reset) */
    if (s->pos - pos > s->be->ops->max_rewind(s->be)) return -1;
    if (pos < s->pos) s->have_logits = 0;
    if (pos < s->sfx_n) s->sfx_n = -1;   /* the drafter holds tokens that are gone */
    s->pos = pos;   /* cache rows >= pos are overwritten before they are read again */
    return 0;
}

int strata_session_copy_prefix(strata_session *dst, const strata_session *src, int n) {
    if (!dst || !src || dst == src || dst->m != src->m || n < 0 || n > src->pos || n > dst->n_ctx ||
        dst->be->ops != src->be->ops || !dst->be->ops->kv_copy ||
        src->pos - n > src->be->ops->max_rewind(src->be))   /* a ring that overwrote rows below n */
        return -1;
    if (dst->be->ops->kv_copy(dst->be, src->be, n) != 0) { strata_session_reset(dst); return -1; }   /* rows may be half copied */
    strata_session_reset(dst);
    memcpy(dst->history, src->history, (size_t)n * sizeof(int32_t));
    dst->pos = n;
    return 0;
}

static void spec_start(strata_session *s);

strata_session *strata_session_new(strata_model *m, const strata_session_params *p, char *err, size_t errlen) {
    if (m->vocab_only) { snprintf(err, errlen, "the model was loaded vocabulary-only"); return NULL; }
    strata_session *s = st_calloc(1, sizeof *s);
    if (!s) { snprintf(err, errlen, "out of memory"); return NULL; }
    s->m = m;
    s->p = *p;
    s->n_ctx = p->n_ctx > 0 ? p->n_ctx : (m->hp.n_ctx_train < 4096 ? m->hp.n_ctx_train : 4096);
    if (p->kv_type != STRATA_KV_F16 && p->kv_type != STRATA_KV_INT8) { snprintf(err, errlen, "unknown KV cache type %d", p->kv_type); goto fail; }
    s->be = backend_new(m->device == STRATA_DEVICE_CUDA ? BACKEND_DEVICE_CUDA : BACKEND_DEVICE_CPU, &m->hp, &m->w,
                        s->n_ctx, m->tp, m->exact, p->kv_type == STRATA_KV_INT8, err, errlen);
    if (!s->be) goto fail;
    if (sampler_init(&s->smp, &p->sampler, m->hp.n_vocab) != 0) { snprintf(err, errlen, "out of memory"); goto fail; }
    s->history = st_malloc((size_t)s->n_ctx * sizeof(int32_t));
    s->last_logits = st_malloc((size_t)m->hp.n_vocab * sizeof(float));
    s->probs = st_malloc((size_t)m->hp.n_vocab * sizeof(float));
    if (!s->history || !s->last_logits || !s->probs) { snprintf(err, errlen, "out of memory"); goto fail; }
    if (s->p.spec_draft < 0 || s->p.spec_draft > SPEC_MAX_WINDOW - 1) {
        snprintf(err, errlen, "speculative drafts per step must be 0..%d (got %d)", SPEC_MAX_WINDOW - 1, s->p.spec_draft);
        goto fail;
    }
    if (s->p.spec_min_match <= 0) s->p.spec_min_match = 2;
    if (s->p.spec_draft > 0 && !(s->sfx = suffix_drafter_new())) { snprintf(err, errlen, "out of memory"); goto fail; }
    s->sfx_n = -1;
    spec_start(s);
    s->st.t_load = m->t_load;
    s->st.weight_bytes_per_token = model_weight_bytes_per_token(&m->hp, &m->w);
    return s;
fail:
    strata_session_free(s);
    return NULL;
}

void strata_session_free(strata_session *s) {
    if (!s) return;
    if (s->be) s->be->ops->free(s->be);
    sampler_free(&s->smp);
    st_free(s->history);
    st_free(s->last_logits);
    st_free(s->probs);
    suffix_drafter_free(s->sfx);
    strata_session_free(s->draft);
    st_free(s);
}

void strata_session_reset(strata_session *s) {
    s->pos = 0;
    s->have_logits = 0;
    s->sfx_n = -1;
    spec_ctl_new_request(&s->spec);
    double tl = s->st.t_load;
    uint64_t wb = s->st.weight_bytes_per_token;
    memset(&s->st, 0, sizeof s->st);
    s->st.t_load = tl;
    s->st.weight_bytes_per_token = wb;
}

void strata_session_set_sampler(strata_session *s, const strata_sampler_params *p) {
    s->p.sampler = *p;
    sampler_set_params(&s->smp, p);
}

const float *session_logits(strata_session *s) { return s->be->ops->logits(s->be); }

int session_forward(strata_session *s, const int32_t *ids, int T, int logits_from) {
    if (s->pos + T > s->n_ctx) return -1;
    if (forward(s->be, &s->m->hp, ids, T, s->pos, logits_from) != 0) return -1;
    memcpy(s->history + s->pos, ids, (size_t)T * sizeof(int32_t));
    s->pos += T;
    if (env_bool(ENV_LOGITS_HASH) && T > logits_from)
        fprintf(stderr, "[logits pos %d fnv %016llx]\n", s->pos - 1,
                (unsigned long long)fnv1a64(session_logits(s) + (size_t)(T - 1 - logits_from) * s->m->hp.n_vocab,
                                            (size_t)s->m->hp.n_vocab * sizeof(float)));
    return 0;
}

int strata_session_eval(strata_session *s, const int32_t *ids, int n) {
    if (n <= 0) return n == 0 ? 0 : -1;
    if (s->pos + n > s->n_ctx) return -1;
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= s->m->hp.n_vocab) return -1;
    for (int i = 0; i < n; i += FWD_MAX_T) {
        int T = n - i < FWD_MAX_T ? n - i : FWD_MAX_T;
        int last_chunk = i + T == n;
        if (session_forward(s, ids + i, T, last_chunk ? T - 1 : T) != 0) return -1;
    }
    memcpy(s->last_logits, session_logits(s), (size_t)s->m->hp.n_vocab * sizeof(float));
    s->have_logits = 1;
    return 0;
}

int strata_sessions_step(strata_session *const *ss, const int32_t *ids, int n) {
    return strata_sessions_step_spec(ss, ids, NULL, n, NULL, NULL, NULL);
}

/* ---- speculative steps of several sessions (the server) ---------------------------------- */
static int draft_model_propose(strata_session *d, const int32_t *toks, int n, int k, int32_t *out);
static int32_t choose_token(strata_session *s, const float *logits, int hist_len);

/* Make the suffix drafter hold exactly history[0..pos) (rebuilt after a rewind into it). */
static void spec_sync_drafter(strata_session *s) {
    if (s->sfx_n < 0 || s->sfx_n > s->pos || s->sfx_n != suffix_drafter_len(s->sfx)) {
        suffix_drafter_reset(s->sfx);
        s->sfx_n = 0;
        spec_ctl_new_request(&s->spec);   /* a new context: acceptance starts over */
    }
    for (; s->sfx_n < s->pos; s->sfx_n++) suffix_drafter_push(s->sfx, s->history[s->sfx_n]);
}

/* Up to k drafts after `id` (the token this step appends; not in the cache yet). */
static int spec_draft_after(strata_session *s, int32_t id, int k, int32_t *out) {
    if (s->draft) {
        s->history[s->pos] = id;   /* draft context = history + id */
        return draft_model_propose(s->draft, s->history, s->pos + 1, k, out);
    }
    spec_sync_drafter(s);
    suffix_drafter_push(s->sfx, id);   /* id becomes history[pos] in this step's pass */
    s->sfx_n++;
    return suffix_drafter_draft(s->sfx, s->p.spec_min_match, k, out);
}

/* How many drafts this step may propose at most: the caller's cap, the verify window, the
 * context. */
static int spec_budget(strata_session *s, int cap) {
    int k = cap;
    if (k > STRATA_MAX_DRAFT) k = STRATA_MAX_DRAFT;
    if (k > SPEC_WIN_COLS - 1) k = SPEC_WIN_COLS - 1;
    if (k > s->n_ctx - s->pos - 2) k = s->n_ctx - s->pos - 2;
    return k > 0 ? k : 0;
}

/* STRATA_SPEC_WINDOW=fixed: every step drafts what the drafter has, up to the cap (the
 * reference the cost model is measured against). */
static int spec_fixed(void) { return !strcmp(env_str(ENV_SPEC_WINDOW), "fixed"); }

/* This step's drafts after `id` (at most cap): the window the cost model picks, 0 for a plain
 * step. The suffix drafter costs nothing, so it always proposes: the proposal is cut to the
 * length that maximises expected tokens per second, and one that no window verifies is kept
 * as a shadow, checked against the token that comes (acceptance keeps being measured while
 * speculation pauses). A draft model costs steps: when no window pays, one draft is probed
 * after a pause that doubles (4, 8, .. 64 steps) while windows keep not paying. */
static int spec_window(strata_session *s, int32_t id, int cap, int32_t *out) {
    spec_ctl *c = &s->spec;
    if (c->shadow_pos == s->pos && c->shadow >= 0) spec_rate_update(&c->rate[SPEC_SRC_SUFFIX], 1, c->shadow == id);
    c->shadow_pos = -1;
    if ((cap = spec_budget(s, cap)) <= 0) return 0;
    const int fixed = spec_fixed();
    spec_costs cost;
    spec_ctl_costs(c, &cost);
    if (s->draft) {
        int k = cap;
        if (!fixed) {
            if (c->pause > 0) { c->pause--; return 0; }
            k = spec_choose(&cost, spec_rate_value(&c->rate[SPEC_SRC_MODEL]), cap, NULL);
            if (k == 0) {   /* a probe now, then a pause */
                k = 1;
                c->pause_len = c->pause_len ? (c->pause_len * 2 < 64 ? c->pause_len * 2 : 64) : 4;
                c->pause = c->pause_len;
            } else c->pause_len = 0;
        }
        double t0 = now_seconds();
        int nd = spec_draft_after(s, id, k, out);
        spec_ctl_time_draft(c, nd, now_seconds() - t0);
        return nd;
    }
    int nd = spec_draft_after(s, id, cap, out);
    if (nd == 0 || fixed) return nd;
    int k = spec_choose(&cost, spec_rate_value(&c->rate[SPEC_SRC_SUFFIX]), nd, NULL);
    if (k == 0) { c->shadow = out[0]; c->shadow_pos = s->pos + 1; }
    return k;
}

/* Does a greedy window of T columns go through the backend's verify step (CUDA: forward +
 * each column's argmax as one graph replay, only the ids come back)? Plain greedy sessions
 * only (no grammar mask, no repetition penalty: the argmax of each row is the choice), and not
 * with STRATA_CUDA_VERIFY_GRAPH=0 (the eager pass, the logits to the host). */
static int verify_on_device(const strata_session *s, int T) {
    return T >= 2 && T <= FWD_INIT_T && s->be->ops->verify_step && s->smp.p.temperature <= 0 &&
           s->smp.p.repeat_penalty == 1.0f && !s->smp.mask && env_bool(ENV_CUDA_VERIFY_GRAPH);
}

/* Time passes of 1, 2, 4 and 8 columns on the session's backend at its position (then
 * dropped: the rows are overwritten before they are read), the fastest of two after a
 * warm-up each; the other widths interpolated. A plain step is what the decode loop runs: the
 * backend's decode step where it has one. */
static int spec_calibrate(strata_session *s, spec_costs *out) {
    const int pos = s->pos, V = s->m->hp.n_vocab;
    if (pos + SPEC_WIN_COLS + 2 > s->n_ctx || s->be->ops->max_rewind(s->be) < SPEC_WIN_COLS) return -1;
    int32_t ids[SPEC_WIN_COLS];
    for (int i = 0; i < SPEC_WIN_COLS; i++) ids[i] = (int32_t)((1000 + 7919u * (unsigned)i) % (unsigned)V);
    static const int Ts[] = { 1, 2, 4, 8 };
    double best[SPEC_WIN_COLS + 1] = { 0 };
    for (int rep = 0; rep < 3; rep++)
        for (int t = 0; t < 4; t++) {
            int T = Ts[t];
            double t0 = now_seconds();
            if (T == 1 && s->be->ops->decode_step) {
                if (s->be->ops->decode_step(s->be, ids[0], pos, NULL) < 0) return -1;
            } else if (verify_on_device(s, T)) {   /* the verify the windows will run (rep 0 captures its graph) */
                int32_t picks[SPEC_WIN_COLS];
                if (s->be->ops->verify_step(s->be, ids, T, pos, picks) < 0) return -1;
            } else {
                if (forward(s->be, &s->m->hp, ids, T, pos, 0) != 0) return -1;
                const float *lg = s->be->ops->logits(s->be);
                volatile int32_t sink = 0;
                for (int r = 0; r < T; r++) sink ^= sample_argmax(lg + (size_t)r * V, V);   /* the verification */
                (void)sink;
            }
            double dt = now_seconds() - t0;
            if (rep > 0 && (best[T] == 0 || dt < best[T])) best[T] = dt;   /* rep 0: warm-up */
        }
    s->have_logits = 0;
    memset(out, 0, sizeof *out);
    out->c[1] = 1;
    for (int T = 2; T <= SPEC_WIN_COLS; T++) {
        int lo = T <= 2 ? 1 : T <= 4 ? 2 : 4, hi = T <= 2 ? 2 : T <= 4 ? 4 : 8;
        double y = best[lo] + (best[hi] - best[lo]) * (T - lo) / (hi - lo);
        out->c[T] = y / best[1];
        if (out->c[T] < out->c[T - 1]) out->c[T] = out->c[T - 1];
    }
    return 0;
}

/* The session's controller: the verify costs of STRATA_SPEC_COSTS (then final: passes are not
 * re-timed, so the windows do not depend on the machine's load), else those the model's first
 * speculating session timed (spec_calibrate, once per model, then followed by the timings of
 * every pass), else the built-in table. */
static pthread_mutex_t spec_prior_lock = PTHREAD_MUTEX_INITIALIZER;
static void spec_start(strata_session *s) {
    spec_costs prior;
    int have = s->p.spec_draft > 0 && !spec_fixed(), given = 0;
    if (have) {
        const char *e = env_str(ENV_SPEC_COSTS);
        if (*e) have = given = spec_costs_parse(e, &prior) == 0;
        else {
            strata_model *m = s->m;
            pthread_mutex_lock(&spec_prior_lock);
            if (!m->spec_prior_ok && spec_calibrate(s, &m->spec_prior) == 0) m->spec_prior_ok = 1;
            if ((have = m->spec_prior_ok)) prior = m->spec_prior;
            pthread_mutex_unlock(&spec_prior_lock);
        }
    }
    spec_ctl_init(&s->spec, have ? &prior : NULL);
    s->spec.given = given;
}

/* The window win[0..T) through the backend's verify step at the session's position (a plain
 * greedy session, verify_on_device): the rows are in the cache and the history, the drafts
 * kept as spec_verify keeps them (each row's argmax against the next draft), *next = the token
 * after them. Returns the drafts kept, or -1 (the session is unchanged); *captured: the step
 * also captured its graph (its time is left out of the cost model). */
static int spec_verify_picks(strata_session *s, const int32_t *win, int T, int pos0, const int32_t *picks, int32_t *next);
static int spec_verify_device(strata_session *s, const int32_t *win, int T, int32_t *next, int *captured) {
    int32_t picks[SPEC_WIN_COLS];
    const int pos0 = s->pos;
    if (T > SPEC_WIN_COLS || pos0 + T > s->n_ctx) return -1;
    int r = s->be->ops->verify_step(s->be, win, T, pos0, picks);
    if (r < 0) return -1;
    *captured = r == 1;
    memcpy(s->history + pos0, win, (size_t)T * sizeof(int32_t));
    s->pos += T;
    return spec_verify_picks(s, win, T, pos0, picks, next);
}

/* A window of nd drafts at pos0 kept j of them: the statistics, the source's acceptance, and
 * the rejected rows dropped from the cache. */
static void spec_commit(strata_session *s, int nd, int j, int pos0) {
    if (nd <= 0) return;
    s->st.n_drafted += nd;
    s->st.n_accepted += j;
    s->st.n_windows++;
    spec_rate_update(&s->spec.rate[s->draft ? SPEC_SRC_MODEL : SPEC_SRC_SUFFIX], nd, j);
    strata_session_rewind(s, pos0 + 1 + j);   /* within the window: the drafter keeps its tokens */
}

/* spec_verify for a plain greedy session whose rows' argmax the backend picked (picks[r]); the
 * logits stay on the device, so the session has none afterwards. Returns the drafts kept;
 * *next = the token after them. */
static int spec_verify_picks(strata_session *s, const int32_t *win, int T, int pos0, const int32_t *picks, int32_t *next) {
    int j = 0;
    while (j < T - 1 && picks[j] == win[1 + j]) j++;
    spec_commit(s, T - 1, j, pos0);
    s->have_logits = 0;
    *next = picks[j];
    return j;
}

/* The session's window win[0..T) was just evaluated at pos0..; its logits rows are `rows`.
 * Keep win[0] and the longest run of drafts the sampler accepts (greedy: equal to the choice
 * at that row; sampling: the speculative-sampling rule), drop the rest, leave the logits after
 * the last kept token as the session's, update the statistics and the adaptive length.
 * Returns the number of drafts kept; *next gets the token that replaces the first rejected
 * draft, or -1 when every draft was kept (the next token is then sampled from the session's
 * logits). The one verification of the CLI's loop and the server's steps. */
static int spec_verify(strata_session *s, const int32_t *win, int T, int pos0, const float *rows, int32_t *next) {
    const int V = s->m->hp.n_vocab, nd = T - 1;
    const int greedy = s->smp.p.temperature <= 0;
    int j = 0;
    int32_t rep = -1;
    for (; j < nd; j++) {
        const float *lg = rows + (size_t)j * V;
        const int hist = pos0 + 1 + j;   /* the history the repetition penalty sees at this row */
        if (greedy) {
            int32_t t = s->smp.p.repeat_penalty == 1.0f ? sample_argmax(lg, V) : choose_token(s, lg, hist);
            if (t != win[1 + j]) { rep = t; break; }
        } else {
            sampler_dist(&s->smp, lg, s->history, hist, s->probs);
            double u1 = sampler_uniform(&s->smp), u2 = sampler_uniform(&s->smp);
            if (!spec_accept_sampled(s->probs, NULL, V, win[1 + j], u1, u2, &rep)) break;
            rep = -1;
        }
    }
    spec_commit(s, nd, j, pos0);
    memcpy(s->last_logits, rows + (size_t)j * V, (size_t)V * sizeof(float));
    s->have_logits = 1;
    if (next) *next = rep;
    return j;
}

int strata_sessions_step_spec(strata_session *const *ss, const int32_t *ids, const int *max_draft, int n,
                              int32_t *accepted, int *n_accepted, int32_t *next) {
    if (n <= 0) return n == 0 ? 0 : -1;
    strata_model *m = ss[0]->m;
    for (int i = 0; i < n; i++) {
        if (ss[i]->m != m || ss[i]->pos + 1 > ss[i]->n_ctx || ids[i] < 0 || ids[i] >= m->hp.n_vocab) return -1;
        for (int j = 0; j < i; j++)
            if (ss[j] == ss[i]) return -1;
    }
    const int V = m->hp.n_vocab;
    /* drafts fill the columns the passes have spare */
    int spare = (n + STEP_MAX_COLS - 1) / STEP_MAX_COLS * STEP_MAX_COLS - n;
    int32_t win_buf[SPEC_MAX_WINDOW];
    /* windows: session i's tokens are win[i][0..T[i]) (one heap block: n can be large) */
    int32_t (*win)[SPEC_MAX_WINDOW] = st_malloc((size_t)n * sizeof *win);
    int *T = st_malloc((size_t)n * sizeof *T);
    if (!win || !T) { st_free(win); st_free(T); return -1; }
    for (int i = 0; i < n; i++) {
        strata_session *s = ss[i];
        win[i][0] = ids[i];
        T[i] = 1;
        if (n_accepted) n_accepted[i] = 0;
        if (next) next[i] = -1;
        int k = max_draft && s->p.spec_draft > 0 && s->smp.p.temperature <= 0 && !s->smp.mask ? max_draft[i] : 0;
        if (k > SPEC_MAX_WINDOW - 1) k = SPEC_MAX_WINDOW - 1;
        if (k <= 0) continue;
        int nd = spec_window(s, ids[i], k < spare ? k : spare, win_buf);
        memcpy(&win[i][1], win_buf, (size_t)nd * sizeof(int32_t));
        T[i] += nd;
        spare -= nd;
    }
    int rc = 0, timed = 1;
    strata_session *s0 = ss[0];
    double t_pass = now_seconds();   /* a lone session's pass is timed for its cost model */
    if (n == 1 && next && T[0] == 1 && s0->be->ops->decode_step && s0->smp.p.temperature <= 0 &&
        s0->smp.p.repeat_penalty == 1.0f && !(max_draft && max_draft[0] < 0) && !s0->smp.mask) {
        /* one session, greedy, no drafts: the backend's decode step (on the GPU forward + argmax
         * as one graph replay, only the id returns; the bits of the eager pass: same kernels) */
        int32_t nx = s0->be->ops->decode_step(s0->be, win[0][0], s0->pos, NULL);
        if (nx < 0) rc = -1;
        else {
            s0->history[s0->pos++] = win[0][0];
            s0->have_logits = 0;
            next[0] = nx;
        }
    } else if (n == 1 && next && T[0] > 1 && verify_on_device(s0, T[0]) && !(max_draft && max_draft[0] < 0)) {
        /* one session, greedy, a window of drafts: the backend's verify step (on the GPU one
         * graph replay, only the T argmax ids return; the kernels of the eager pass) */
        int captured = 0;
        int j = spec_verify_device(s0, win[0], T[0], &next[0], &captured);
        if (j < 0) rc = -1;
        else {
            if (accepted) memcpy(accepted, &win[0][1], (size_t)j * sizeof(int32_t));
            if (n_accepted) n_accepted[0] = j;
            timed = !captured;
        }
    } else {
        /* passes of up to STEP_MAX_COLS columns; a window that would overflow the pass keeps only
         * the drafts that fit (the passes are the ones the undrafted tokens need anyway) */
        for (int i0 = 0; i0 < n && !rc;) {
            fwd_seq g[STEP_MAX_COLS];
            int32_t cols[STEP_MAX_COLS];
            int ng = 0, used = 0, i1 = i0;
            for (; i1 < n && used < STEP_MAX_COLS; i1++) {
                if (T[i1] > STEP_MAX_COLS - used) T[i1] = STEP_MAX_COLS - used;
                memcpy(cols + used, win[i1], (size_t)T[i1] * sizeof(int32_t));
                g[ng++] = (fwd_seq){ ss[i1]->be->kv, ss[i1]->pos, T[i1] };
                used += T[i1];
            }
            /* the pass runs on one session's backend (its activation buffers; the longest
             * context's, so its scratch covers every sequence); each sequence's attention reads
             * and writes its own session's KV cache. Every pass ends with the head's read-back,
             * so the other sessions' backends never see a pass in flight. */
            backend *pb = ss[i0]->be;
            for (int i = i0 + 1, best = ss[i0]->n_ctx; i < i1; i++)
                if (ss[i]->n_ctx > best) { best = ss[i]->n_ctx; pb = ss[i]->be; }
            fwd_batch fb = { used, ng, g };
            /* every session of the pass plain greedy, none needing its logits on the host: the
             * backend picks each row's argmax (on the GPU only the ids come back) */
            int use_picks = next && pb->ops->head_argmax;
            for (int i = i0; i < i1 && use_picks; i++)
                if (!(ss[i]->smp.p.temperature <= 0 && ss[i]->smp.p.repeat_penalty == 1.0f && !(max_draft && max_draft[i] < 0) &&
                      !ss[i]->smp.mask))
                    use_picks = 0;
            int32_t picks[STEP_MAX_COLS];
            if ((use_picks ? forward_batch_picks(pb, &m->hp, cols, &fb, picks) : forward_batch(pb, &m->hp, cols, &fb, 0)) != 0) {
                rc = -1;
                break;
            }
            const float *lg = use_picks ? NULL : pb->ops->logits(pb);
            for (int i = i0, row = 0; i < i1; row += T[i], i++) {
                strata_session *s = ss[i];
                int pos0 = s->pos;
                memcpy(s->history + pos0, win[i], (size_t)T[i] * sizeof(int32_t));
                s->pos += T[i];
                int j = use_picks ? spec_verify_picks(s, win[i], T[i], pos0, picks + row, &next[i])
                                  : spec_verify(s, win[i], T[i], pos0, lg + (size_t)row * V, NULL);
                if (accepted) memcpy(accepted + (size_t)i * STRATA_MAX_DRAFT, &win[i][1], (size_t)j * sizeof(int32_t));
                if (n_accepted) n_accepted[i] = j;
            }
            i0 = i1;
        }
    }
    if (n == 1 && !rc && timed && s0->p.spec_draft > 0) spec_ctl_time(&s0->spec, T[0], now_seconds() - t_pass);
    st_free(win);
    st_free(T);
    return rc;
}

const float *strata_session_logits(const strata_session *s) { return s->have_logits ? s->last_logits : NULL; }

int32_t strata_session_sample(strata_session *s) {
    if (!s->have_logits) return -1;
    return sampler_sample(&s->smp, s->last_logits, s->history, s->pos);
}

int strata_session_set_draft_model(strata_session *s, strata_model *draft, char *err, size_t errlen) {
    if (s->p.spec_draft <= 0) { snprintf(err, errlen, "set spec_draft > 0 to use a draft model"); return -1; }
    if (strata_n_vocab(draft) != strata_n_vocab(s->m)) {
        snprintf(err, errlen, "the draft model's vocabulary (%d) differs from the model's (%d)", strata_n_vocab(draft),
                 strata_n_vocab(s->m));
        return -1;
    }
    for (int32_t id = 0; id < tokenizer_n_vocab(s->m->tok) && id < tokenizer_n_vocab(draft->tok); id += 97) {
        size_t a, b;
        const char *x = tokenizer_token_bytes(s->m->tok, id, &a), *y = tokenizer_token_bytes(draft->tok, id, &b);
        if (a != b || (a && memcmp(x, y, a))) {
            snprintf(err, errlen, "the draft model's token %d differs from the model's: not the same vocabulary", id);
            return -1;
        }
    }
    strata_session_params dp = strata_session_default_params();
    dp.n_ctx = s->n_ctx;
    strata_session *d = strata_session_new(draft, &dp, err, errlen);
    if (!d) return -1;
    strata_session_free(s->draft);
    s->draft = d;
    return 0;
}

/* Bring the draft session to hold exactly toks[0..n) and draft k tokens greedily. */
static int draft_model_propose(strata_session *d, const int32_t *toks, int n, int k, int32_t *out) {
    int keep = 0;
    while (keep < d->pos && keep < n - 1 && d->history[keep] == toks[keep]) keep++;
    strata_session_rewind(d, keep);
    if (strata_session_eval(d, toks + keep, n - keep) != 0) return 0;
    int nd = 0;
    while (nd < k && d->pos < d->n_ctx - 1) {
        out[nd] = sample_argmax(d->last_logits, d->m->hp.n_vocab);
        if (strata_session_eval(d, &out[nd], 1) != 0) break;
        nd++;
    }
    return nd;
}

/* Choose the token at window row r: greedy argmax, or a draw from the sampler's distribution.
 * The history the repetition penalty sees is the session's, up to that row's position. */
static int32_t choose_token(strata_session *s, const float *logits, int hist_len) {
    return sampler_sample(&s->smp, logits, s->history, hist_len);
}

static void *mask_prepare_main(void *arg) {
    strata_session *s = arg;
    (void)s->mask_prepare(s->smp.mask_user);
    return NULL;
}

/* The CLI's loop: the prompt, then one step per window (a single column when speculation is
 * off or paused): drafts, one pass, verification; the same spec_budget / spec_draft_after /
 * spec_verify as the server's steps. */
int strata_generate(strata_session *s, const int32_t *prompt, int n_prompt, int max_tokens,
                    strata_token_cb on_token, void *user) {
    double t0 = now_seconds();
    if (strata_session_eval(s, prompt, n_prompt) != 0) return -1;
    double t1 = now_seconds();
    s->st.n_prompt += n_prompt;
    s->st.t_prompt += t1 - t0;
    const int spec = s->p.spec_draft;
    const int greedy = s->smp.p.temperature <= 0;
    if (s->sfx) {   /* the drafter sees the whole context: prompt and history */
        suffix_drafter_reset(s->sfx);
        for (int i = 0; i < s->pos; i++) suffix_drafter_push(s->sfx, s->history[i]);
        s->sfx_n = s->pos;
    }
    spec_ctl_new_request(&s->spec);
    int n = 0, stop = 0;
    int32_t id = strata_session_sample(s);
    while (!stop && id >= 0) {
        /* emit id (sampled, not yet in the cache) */
        n++;
        s->st.n_gen++;
        if ((on_token && on_token(id, user)) || strata_token_is_eog(s->m, id) || n >= max_tokens ||
            s->pos >= s->n_ctx - 1)
            break;
        /* the drafts after id that the cost model finds worth verifying (often none) */
        int32_t win[SPEC_MAX_WINDOW];
        win[0] = id;
        int nd = spec && !s->smp.mask ? spec_window(s, id, max_tokens - n - 1, win + 1) : 0;   /* a grammar: no drafts */
        double t_pass = now_seconds();
        /* a step without drafts on a backend with a decode step (CUDA): the whole step
         * (forward + argmax, or the sampler's draw with src/sample's rules and RNG stream) runs
         * on the device and only the next id comes back; the host logits are not updated.
         * Plain greedy with or without speculation (so the steps speculation pauses cost a plain
         * step, not an eager pass); a sampler when speculation is off (STRATA_CUDA_SAMPLE=0:
         * logits to the host, the CPU sampler). */
        int plain_greedy = greedy && s->smp.p.repeat_penalty == 1.0f;
        if (nd == 0 && s->smp.mask && s->mask_device && plain_greedy && s->be->ops->decode_step_masked) {
            /* a mask and greedy: the step on the device all the same, its argmax under the mask */
            int32_t nx = s->be->ops->decode_step_masked(s->be, id, s->pos, s->mask_prepare, s->smp.mask_user);
            if (nx < 0) break;
            s->history[s->pos++] = id;
            s->have_logits = 0;
            id = nx;
            s->st.n_mask_device++;
            continue;
        }
        if (nd == 0 && s->be->ops->decode_step && !s->smp.mask && (plain_greedy || (!spec && env_bool(ENV_CUDA_SAMPLE)))) {
            backend_sampling bs = { &s->smp.p, s->smp.rng, s->history };
            int32_t nx = s->be->ops->decode_step(s->be, id, s->pos, plain_greedy ? NULL : &bs);
            if (nx < 0) break;
            s->history[s->pos++] = id;
            s->have_logits = 0;
            id = nx;
            if (spec) spec_ctl_time(&s->spec, 1, now_seconds() - t_pass);
            continue;
        }
        /* evaluate the window in one pass, verify: on the device for plain greedy where the
         * backend has a verify step (CUDA: one graph replay, the T argmax ids back), else the
         * eager pass with the logits on the host; with a mask, the next one is prepared on a
         * helper thread meanwhile (no drafts then: the window is id alone, and the matcher has
         * taken id in on_token) */
        int T = 1 + nd, pos0 = s->pos, j, captured = 0;
        int32_t next = -1;
        if (verify_on_device(s, T)) {
            if ((j = spec_verify_device(s, win, T, &next, &captured)) < 0) break;
        } else {
            pthread_t helper;
            int helper_on = s->smp.mask && s->mask_overlap && nd == 0 &&
                            pthread_create(&helper, NULL, mask_prepare_main, s) == 0;
            int frc = session_forward(s, win, T, 0);
            if (helper_on) {
                pthread_join(helper, NULL);
                s->st.n_mask_overlap++;
            }
            if (frc != 0) break;
            j = spec_verify(s, win, T, pos0, session_logits(s), &next);
        }
        if (spec && !captured) spec_ctl_time(&s->spec, T, now_seconds() - t_pass);
        /* win[0..j] stay in the cache (id and the accepted drafts): emit the drafts */
        for (int a = 0; a < j; a++) {
            int32_t t = win[1 + a];
            n++;
            s->st.n_gen++;
            if ((on_token && on_token(t, user)) || strata_token_is_eog(s->m, t) || n >= max_tokens) {
                strata_session_rewind(s, pos0 + 1 + a);   /* t itself is emitted, not evaluated */
                stop = 1;
                break;
            }
        }
        if (stop) break;
        id = next >= 0 ? next : strata_session_sample(s);
    }
    s->st.t_gen += now_seconds() - t1;
    return n;
}

void strata_session_get_stats(const strata_session *s, strata_stats *st) {
    *st = s->st;
    st->prompt_tps = st->t_prompt > 0 ? st->n_prompt / st->t_prompt : 0;
    /* the first generated token comes from the prompt's logits: decode rate counts passes */
    st->gen_tps = st->t_gen > 0 && st->n_gen > 1 ? (st->n_gen - 1) / st->t_gen : 0;
}

/* ---- a prompt chunk inside the decode passes (the server's per-step token budget) --------- */
int strata_sessions_step_prefill(strata_session *const *ss, const int32_t *ids, int n, strata_session *p,
                                 const int32_t *pids, int pn, int want_logits) {
    if (!p) return -1;
    return strata_sessions_step_prefill_multi(ss, ids, n, &p, &pids, &pn, &want_logits, 1);
}

/* Several prompts' chunks in the decode passes. Columns of a pass: the prompts' tokens that
 * need no logits (each chunk in order, one sequence each; a chunk that ends its prompt with
 * want_logits without its last token), then those last tokens (one column each, the same
 * sequence continued: its KV rows of the pass are stored before its attention reads them),
 * then the decoding sessions' tokens; the head runs from the first last-token column on. */
int strata_sessions_step_prefill_multi(strata_session *const *ss, const int32_t *ids, int n, strata_session *const *ps,
                                       const int32_t *const *pids, const int *pns, const int *want_logits, int np) {
    if (n < 0 || np < 1 || np > FWD_MAX_LOGITS - 1) return -1;
    strata_model *m = ps[0]->m;
    const int V = m->hp.n_vocab;
    for (int j = 0; j < np; j++) {
        strata_session *p = ps[j];
        if (!p || p->m != m || pns[j] < 1 || p->pos + pns[j] > p->n_ctx) return -1;
        for (int i = 0; i < pns[j]; i++)
            if (pids[j][i] < 0 || pids[j][i] >= V) return -1;
        for (int k = 0; k < j; k++)
            if (ps[k] == p) return -1;
    }
    for (int i = 0; i < n; i++) {
        if (ss[i]->m != m || ss[i]->pos + 1 > ss[i]->n_ctx || ids[i] < 0 || ids[i] >= V) return -1;
        for (int j = 0; j < np; j++)
            if (ss[i] == ps[j]) return -1;
        for (int j = 0; j < i; j++)
            if (ss[j] == ss[i]) return -1;
    }
    int done[FWD_MAX_LOGITS];   /* tokens of prompt j gone in so far */
    for (int j = 0; j < np; j++) done[j] = 0;
    /* every pass runs on one backend: the longest context's (its scratch covers every
     * sequence), the first decoding session's among equals, else the first prompt's. The decode
     * passes run on that one too, so a backend already grown to wide passes and many logits rows
     * keeps serving: a prompt's backend is new to wide passes at most steps of a burst, and
     * growing it waits for the device and allocates. The same bits on any backend. */
    backend *pb = NULL;
    int best = 0;
    for (int i = 0; i < n; i++)
        if (!pb || ss[i]->n_ctx > best) { best = ss[i]->n_ctx; pb = ss[i]->be; }
    for (int j = 0; j < np; j++)
        if (!pb || ps[j]->n_ctx > best) { best = ps[j]->n_ctx; pb = ps[j]->be; }
    int pj = 0, di = 0;         /* the next prompt with tokens left, the next decoding session */
    int in_flight = 0;          /* the last pass returned no logits: its KV writes may be running */
    while (pj < np || di < n) {
        fwd_seq g[FWD_MAX_T];
        int32_t cols[FWD_MAX_T];
        int fin[FWD_MAX_LOGITS], take[FWD_MAX_LOGITS], who[FWD_MAX_LOGITS];
        int nw = 0, nfin = 0;
        /* decoding columns first reserved, then prompt columns fill the pass */
        int nd = n - di < FWD_MAX_LOGITS - 1 ? n - di : FWD_MAX_LOGITS - 1;
        int room = FWD_MAX_T - nd;
        for (int j = pj; j < np && room > 0; j++) {
            int left = pns[j] - done[j], t = left < room ? left : room;
            if (left == 0) continue;   /* all in already (a pass before took it whole) */
            int ends = t == left && want_logits[j];
            if (ends && nfin + nd >= FWD_MAX_LOGITS) {   /* no logits row left in this pass: all but the last token */
                if (t < 2) break;
                t--;
                ends = 0;
            }
            who[nw] = j; take[nw] = t; fin[nw] = ends; nw++;
            nfin += ends;
            room -= t;
        }
        int ng = 0, used = 0;
        for (int w = 0; w < nw; w++) {   /* the prompts' columns without logits */
            strata_session *p = ps[who[w]];
            int c = take[w] - fin[w];
            if (c > 0) {
                memcpy(cols + used, pids[who[w]] + done[who[w]], (size_t)c * sizeof(int32_t));
                g[ng++] = (fwd_seq){ p->be->kv, p->pos, c };
                used += c;
            }
        }
        const int from = used;
        for (int w = 0; w < nw; w++) {   /* the last tokens of the prompts that end here */
            if (!fin[w]) continue;
            strata_session *p = ps[who[w]];
            cols[used++] = pids[who[w]][done[who[w]] + take[w] - 1];
            g[ng++] = (fwd_seq){ p->be->kv, p->pos + take[w] - 1, 1 };
        }
        const int i0 = di;
        for (; di < i0 + nd; di++) {
            cols[used++] = ids[di];
            g[ng++] = (fwd_seq){ ss[di]->be->kv, ss[di]->pos, 1 };
        }
        fwd_batch fb = { used, ng, g };
        if (forward_batch(pb, &m->hp, cols, &fb, from) != 0) return -1;
        const float *lg = used > from ? pb->ops->logits(pb) : NULL;
        in_flight = used == from;
        int row = 0;
        for (int w = 0; w < nw; w++) {
            strata_session *p = ps[who[w]];
            const int j = who[w];
            memcpy(p->history + p->pos, pids[j] + done[j], (size_t)take[w] * sizeof(int32_t));
            p->pos += take[w];
            done[j] += take[w];
            p->have_logits = fin[w];
            if (fin[w]) memcpy(p->last_logits, lg + (size_t)row++ * V, (size_t)V * sizeof(float));
        }
        for (int i = i0; i < di; i++, row++) {
            strata_session *s = ss[i];
            s->history[s->pos++] = ids[i];
            memcpy(s->last_logits, lg + (size_t)row * V, (size_t)V * sizeof(float));
            s->have_logits = 1;
        }
        while (pj < np && done[pj] == pns[pj]) pj++;
        if (nw == 0 && nd == 0) return -1;   /* no progress (cannot happen: a pass always takes a column) */
    }
    /* a last pass without logits wrote KV rows of sessions that may next run on their own
     * backends (streams): it is done before this returns */
    if (in_flight && pb->ops->sync) pb->ops->sync(pb);
    return 0;
}

/* ---- constrained sampling (issue 22): the mask hook of src/sample ------------------------- */
void strata_session_set_logits_mask(strata_session *s, strata_logits_mask fn, void *user) {
    s->smp.mask = fn;
    s->smp.mask_user = user;
    s->mask_prepare = NULL;   /* it belonged to the previous user */
    s->mask_overlap = s->mask_device = 0;
}

void strata_session_set_logits_mask_prepare(strata_session *s, strata_logits_mask_prepare fn, int modes) {
    s->mask_prepare = fn;
    if (modes < 0) {
        const char *ov = env_str(ENV_GRAMMAR_OVERLAP);
        int overlap = !strcmp(ov, "auto") ? s->m->device == STRATA_DEVICE_CUDA : env_bool(ENV_GRAMMAR_OVERLAP);
        modes = (overlap ? STRATA_MASK_OVERLAP : 0) | (env_bool(ENV_CUDA_MASK_ARGMAX) ? STRATA_MASK_DEVICE : 0);
    }
    s->mask_overlap = fn && (modes & STRATA_MASK_OVERLAP);
    s->mask_device = fn && (modes & STRATA_MASK_DEVICE);
}

int strata_token_is_control(const strata_model *m, int32_t id) {
    return tokenizer_token_type(m->tok, id) == TOKEN_TYPE_CONTROL;
}

void strata_env_print(void *file) { env_print((FILE *)file); }

int strata_cuda_describe(char *out, size_t cap) { return backend_gpu_describe(out, cap); }

/* ---- streaming decode: the tokenizer's detok over the public state layout ---------------- */
_Static_assert(sizeof(strata_detok) == sizeof(detok_state), "strata_detok mirrors detok_state");

void strata_detok_init(strata_detok *d) { detok_init((detok_state *)d); }

int strata_detok_push(const strata_model *m, strata_detok *d, int32_t id, char *out, int cap) {
    return detok_push(m->tok, (detok_state *)d, id, out, cap);
}

int strata_detok_flush(strata_detok *d, char *out, int cap) { return detok_flush((detok_state *)d, out, cap); }
