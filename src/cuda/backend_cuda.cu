/* The CUDA backend: backend_ops on the GPU, weight upload, greedy decode as a CUDA graph.
 *
 * Pointers: forward() passes fwd_state's host buffers; each op maps a host pointer inside a
 * registered range (backend_cuda_mirror / backend_cuda_bind_fwd) to the same offset of its
 * device mirror. Only token ids go in and logits (or one token id) come out.
 *
 * Fusion without touching forward(): ops are deferred just enough to merge neighbours that
 * the forward pass always issues together, and every merged form computes the same bits
 * as the separate ops (STRATA_CUDA_FUSE=0 runs them one by one; the e2e test compares):
 *   rmsnorm + activation quantization   the norm of a layer input knows (from the weight
 *                                       it normalizes with) which matvec format comes next
 *   q, k, v matvecs                     one launch over the concatenated rows (same input)
 *   gate, up matvecs + SwiGLU           one launch; the warp of row r computes both dots
 *   matvec + residual add               the add becomes the matvec's epilogue
 * A pending matvec group is flushed by any op that cannot join it.
 *
 * Graph decode: backend_cuda_decode_greedy captures forward(T = 1) + argmax once; in that
 * capture every kernel reads the position (d_pos) and the token (d_ids) from device memory,
 * the attention grid spans n_ctx, and the argmax writes the next token into d_ids and
 * advances d_pos, so replaying the graph is the whole step. */
#include "cuda_internal.h"
#include "cuda_common.cuh"
#include "expf_host.cuh"
#include "dev_alloc.cuh"
#include "sample_cuda.h"
#include <math.h>
#include <stdlib.h>
extern "C" {
#include "core/env.h"
#include "core/util.h"
}

/* ---- errors ------------------------------------------------------------------------------- */
static char g_cuda_err[256];
void cuda_record_error(const char *what, cudaError_t e, const char *file, int line) {
    if (g_cuda_err[0]) return;   /* keep the first: later ones are usually consequences */
    snprintf(g_cuda_err, sizeof g_cuda_err, "CUDA error in %s (%s:%d): %s", what, file, line, cudaGetErrorString(e));
}
extern "C" const char *cuda_last_error(void) { return g_cuda_err[0] ? g_cuda_err : "no CUDA error"; }

/* ---- expf with the host libm's bits (expf_host.cuh), chosen once per process --------------- */
static int g_expf_mode = -2;   /* -2: not chosen yet; 1 FMA variant, 0 plain, -1 CUDA expf */
static int expf_init(void) {
    if (g_expf_mode != -2) return 0;
    expf_table t;
    expf_table_make(&t);
    int mode = expf_host_select(&t);
    if (cuda_ops_expf_init(&t, mode) || cuda_matvec_expf_init(&t, mode) || cuda_moe_expf_init(&t, mode) ||
        cuda_persist_expf_init(&t, mode))
        return -1;
    g_expf_mode = mode;
    if (mode < 0)
        fprintf(stderr, "strata: CUDA backend: this host's expf is not the algorithm the GPU reproduces; SwiGLU and "
                        "attention use CUDA's expf (results differ from the CPU by ulps)\n");
    return 0;
}
extern "C" const char *cuda_expf_mode(void) {
    return g_expf_mode == 1 ? "libm bits (FMA variant)" : g_expf_mode == 0 ? "libm bits (plain variant)"
         : g_expf_mode == -1 ? "CUDA expf (host libm not matched)" : "not chosen";
}

/* ---- device ------------------------------------------------------------------------------- */
extern "C" int cuda_device_count(void) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) { cudaGetLastError(); return 0; }
    return n;
}

extern "C" int cuda_device_describe(char *out, size_t cap) {
    cudaDeviceProp p;
    if (cuda_device_count() <= 0 || cudaGetDeviceProperties(&p, 0) != cudaSuccess) {
        snprintf(out, cap, "no CUDA device");
        return -1;
    }
    snprintf(out, cap, "%s, sm_%d%d, %d SMs, %.1f GiB, L2 %d MiB", p.name, p.major, p.minor, p.multiProcessorCount,
             (double)p.totalGlobalMem / (1 << 30), p.l2CacheSize >> 20);
    return 0;
}

extern "C" int cuda_sm_count(void) {
    int n = 0;
    if (cuda_device_count() <= 0 || cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, 0) != cudaSuccess) return 0;
    return n;
}

extern "C" void *cuda_malloc(size_t bytes) {
    void *p = NULL;
    if (CU_CHECK(cudaMalloc(&p, bytes ? bytes : 1))) return NULL;
    return p;
}
extern "C" void cuda_free(void *p) { if (p) cudaFree(p); }
extern "C" int cuda_memcpy_h2d(void *dst, const void *src, size_t n) { return CU_CHECK(cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice)); }
extern "C" int cuda_memcpy_d2h(void *dst, const void *src, size_t n) { return CU_CHECK(cudaMemcpy(dst, src, n, cudaMemcpyDeviceToHost)); }
extern "C" int cuda_memcpy_d2d(void *dst, const void *src, size_t n) { return CU_CHECK(cudaMemcpy(dst, src, n, cudaMemcpyDeviceToDevice)); }
extern "C" int cuda_synchronize(void) { return CU_CHECK(cudaDeviceSynchronize()); }

extern "C" double cuda_time_ms(void (*fn)(void *), void *user, int reps) {
    cudaEvent_t a, b;
    cudaEventCreate(&a); cudaEventCreate(&b);
    cudaEventRecord(a, 0);
    for (int i = 0; i < reps; i++) fn(user);
    cudaEventRecord(b, 0);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    cudaEventDestroy(a); cudaEventDestroy(b);
    return ms;
}

/* ---- weights ------------------------------------------------------------------------------ */
typedef struct { char name[64]; weight *w; } named_weight;

/* Every weight of the model with its GGUF name; the tied output is listed once. */
static int list_weights(const hparams *hp, model_weights *w, named_weight *out, int cap) {
    int n = 0;
#define ADD(W, ...) do { if ((W)->data && n < cap) { snprintf(out[n].name, sizeof out[n].name, __VA_ARGS__); out[n].w = (W); n++; } } while (0)
    ADD(&w->tok_embd, "token_embd.weight");
    ADD(&w->output_norm, "output_norm.weight");
    if (w->output.data != w->tok_embd.data) ADD(&w->output, "output.weight");
    for (int l = 0; l < hp->n_layers; l++) {
        layer_weights *L = &w->layers[l];
        ADD(&L->attn_norm, "blk.%d.attn_norm.weight", l); ADD(&L->wq, "blk.%d.attn_q.weight", l);
        ADD(&L->wk, "blk.%d.attn_k.weight", l); ADD(&L->wv, "blk.%d.attn_v.weight", l);
        ADD(&L->wo, "blk.%d.attn_output.weight", l); ADD(&L->q_norm, "blk.%d.attn_q_norm.weight", l);
        ADD(&L->k_norm, "blk.%d.attn_k_norm.weight", l);
        ADD(&L->post_attn_norm, "blk.%d.post_attention_norm.weight", l);
        ADD(&L->post_ffn_norm, "blk.%d.post_ffw_norm.weight", l);
        ADD(&L->ffn_norm, "blk.%d.ffn_norm.weight", l); ADD(&L->gate, "blk.%d.ffn_gate.weight", l);
        ADD(&L->up, "blk.%d.ffn_up.weight", l); ADD(&L->down, "blk.%d.ffn_down.weight", l);
        ADD(&L->gate_inp, "blk.%d.ffn_gate_inp.weight", l); ADD(&L->gate_exps, "blk.%d.ffn_gate_exps.weight", l);
        ADD(&L->up_exps, "blk.%d.ffn_up_exps.weight", l); ADD(&L->down_exps, "blk.%d.ffn_down_exps.weight", l);
    }
#undef ADD
    return n;
}

extern "C" int cuda_weights_upload(const hparams *hp, model_weights *w, void (*progress)(float, void *), void *user,
                                   char *err, size_t errlen) {
    int cap = 3 + 17 * hp->n_layers;
    named_weight *list = (named_weight *)st_malloc((size_t)cap * sizeof *list);
    if (!list) { snprintf(err, errlen, "out of memory"); return -1; }
    int n = list_weights(hp, w, list, cap);
    uint64_t total = 0, done = 0;
    for (int i = 0; i < n; i++) total += list[i].w->nbytes;
    if (cuda_tables_init()) { snprintf(err, errlen, "%s", cuda_last_error()); st_free(list); return -1; }
    for (int i = 0; i < n; i++) {
        weight *x = list[i].w;
        void *d = NULL;
        if (cuda_dev_malloc(&d, x->nbytes) != cudaSuccess) {
            size_t fr = 0, tot = 0;
            cudaMemGetInfo(&fr, &tot);
            snprintf(err, errlen,
                     "not enough GPU memory for %s (%s, %.1f MiB): %.1f MiB of %.1f MiB of weights were uploaded, "
                     "the GPU has %.1f MiB free of %.1f MiB; use --device cpu or a smaller model",
                     list[i].name, quant_type_name(x->type), x->nbytes / 1048576.0, done / 1048576.0, total / 1048576.0,
                     fr / 1048576.0, tot / 1048576.0);
            st_free(list);
            cuda_weights_free(hp, w);
            return -1;
        }
        if (cudaMemcpy(d, x->data, x->nbytes, cudaMemcpyHostToDevice) != cudaSuccess) {
            snprintf(err, errlen, "copying %s to the GPU failed: %s", list[i].name, cudaGetErrorString(cudaGetLastError()));
            cuda_dev_free(d);
            st_free(list);
            cuda_weights_free(hp, w);
            return -1;
        }
        x->dev = d;
        done += x->nbytes;
        if (progress) progress(total ? (float)done / (float)total : 1.0f, user);
    }
    if (w->output.data == w->tok_embd.data) w->output.dev = w->tok_embd.dev;
    st_free(list);
    return 0;
}

/* Frees without allocating (a free path that needs memory leaks when memory is short): the
 * weights list_weights names, walked in slices of a stack array. */
extern "C" void cuda_weights_free(const hparams *hp, model_weights *w) {
    if (w->output.data == w->tok_embd.data) w->output.dev = NULL;
    hparams one = *hp;
    model_weights part = *w;
    named_weight list[3 + 17];
    for (int l = -1; l < hp->n_layers; l++) {
        /* l = -1: the global weights; then layer l alone (a one-layer view of the model) */
        one.n_layers = l < 0 ? 0 : 1;
        part.layers = l < 0 ? NULL : &w->layers[l];
        if (l >= 0) { part.tok_embd.data = NULL; part.output_norm.data = NULL; part.output.data = NULL; }
        int n = list_weights(&one, l < 0 ? w : &part, list, 3 + 17);   /* pointers into *w either way */
        for (int i = 0; i < n; i++) { cuda_dev_free(list[i].w->dev); list[i].w->dev = NULL; }
    }
}

/* ---- the backend state ---------------------------------------------------------------------- */
#define MAX_MIRRORS 16
typedef struct { char *host; size_t bytes; char *dev; } mirror;

typedef struct { float *x; int T, n_heads, head_dim, n_rot, pos0; const float *table; } pending_rope;
typedef struct { const float *x; const float *w; float *y; int rows, n; float eps; } pending_norm;

typedef struct {
    hparams hp;
    const model_weights *w;
    int n_ctx;
    cudaStream_t st;
    size_t kv_dim;
    uint16_t **kc, **vc;        /* per layer, device: [n_ctx][kv_dim] f16 */
    float *rope_global, *rope_local;   /* device: [n_ctx][n_rot/2][cos, sin] */
    float *att_partial;         /* device scratch of the split-KV attention */
    void *act;                  /* device: FWD_MAX_T quantized activation rows */
    void *act2;                 /* device: the same size; the fused gate/up writes h's rows here, then the two swap */
    size_t act_cap;
    int32_t *d_ids;             /* device: token ids of the pass [FWD_MAX_T] */
    int *d_pos;                 /* device: position of token 0 (graph mode) */
    int32_t *h_token;           /* pinned host: the token id the graph returns */
    /* the device sampler (sample.cu): sampled decode steps as one graph */
    int32_t *d_hist;            /* device: token history [n_ctx] (repetition penalty) */
    cuda_sample_params *d_sparams;
    cuda_sample_io *d_sio, *h_sio;   /* device / pinned host: token + RNG state of the last draw */
    void *samp_scratch;         /* device: cuda_sample_scratch_bytes(n_vocab) */
    cuda_sample_params sparams; /* what d_sparams holds (sparams_known) */
    int sparams_known, hist_len;       /* d_hist holds history[0..hist_len) */
    cudaGraphExec_t sgraph[2];  /* [0] temperature 0 (penalty + argmax: no sort), [1] sampling */
    int sgraph_ok[2];
    mirror mirrors[MAX_MIRRORS];
    int n_mirrors;
    const float *logits_host;   /* fwd.logits: matvec into it is read back (eager) */
    size_t logits_bytes;
    int readback;               /* 0 while decoding greedily on the device */
    int capturing;              /* ops read d_pos / d_ids */
    int fuse;
    /* act cache: what the act buffer holds (source device pointer, n, T, format) */
    const float *act_src; int64_t act_n; int act_T; int act_fmt;
    /* pending matvec group */
    mv_group pend;
    int pend_type, pend_T;
    int64_t pend_n_in;
    const float *pend_x;
    /* graph */
    cudaGraphExec_t graph;
    int graph_ok;
    int dev_pos_known, dev_pos, dev_tok;   /* what d_pos / d_ids hold after the last step */
    pending_rope ropes[2];      /* deferred q and k ropes */
    int n_ropes;
    int attn_split;             /* STRATA_CUDA_ATTN=split: the split-KV variant (not bit-exact) */
    int *att_counters;          /* device: [FWD_MAX_T][n_heads] split counters of the attention */
    int *argmax_scratch;        /* device: partials + counter of the argmax */
    float *embd_f32;            /* device: dequantized embeddings when their format has no device dequantizer */
    /* Mixture-of-Experts (moe.cu): device scratch, and the combine deferred to fuse the
     * residual add that forward() issues next */
    float *moe_logits;          /* [FWD_MAX_T][X] */
    void *moe_act_r;            /* router activations when the router weight is quantized */
    cuda_moe moe_bufs;          /* act_pairs, groups, pair_of, wts, h, act_h, y */
    cuda_moe moe_pend;          /* the pending combine (moe_pend_on) */
    pending_norm pnorm;         /* a q norm waiting for its k norm (one launch) */
    int pnorm_on;
    int moe_pend_on;
    int res_pending;            /* the pending group is a T = 1 matvec + residual add, waiting to
                                   see whether the next op normalizes its x (norm epilogue) */
    float *moe_res_add;         /* non-NULL: the pending combine (T = 1) adds into this x, likewise */
    unsigned *mv_counter;       /* device: the norm epilogue's last-CTA counter (zeroed, left zeroed) */
    int norm_fold;              /* STRATA_CUDA_NORM_FOLD: the epilogue's threads per CTA; 0 = off */
    long n_norm_fold;           /* norm epilogues launched (tests check the switch took effect) */
    /* the persistent decode step (persist.cu): 0 not tried yet, 1 ready, -1 not for this model */
    int persist;
    persist_args pa;
    int p_grid;
    persist_layer *p_layers;    /* device: the layer table */
    float *p_scratch;           /* device: every layer's own activations */
    unsigned *p_bar;            /* device: the grid barrier */
    int failed;
} cuda_be;

static inline cuda_be *CB(backend *be) { return (cuda_be *)be->impl; }

static void be_fail(cuda_be *c, const char *what) {
    if (!c->failed) fprintf(stderr, "strata: CUDA backend: %s (%s)\n", what, cuda_last_error());
    c->failed = 1;
}

/* host pointer -> device pointer of its mirror */
static float *dev_of(cuda_be *c, const void *host) {
    const char *h = (const char *)host;
    for (int i = 0; i < c->n_mirrors; i++) {
        mirror *m = &c->mirrors[i];
        if (h >= m->host && h < m->host + m->bytes) return (float *)(m->dev + (h - m->host));
    }
    be_fail(c, "an op got a host pointer that no mirror covers");
    return NULL;
}

/* ---- pending matvec group ------------------------------------------------------------------ */
/* launch the pending matvec group */
static void flush_mv(cuda_be *c) {
    c->res_pending = 0;
    if (!c->pend.n) return;
    if (cuda_matvec_group(c->pend_type, &c->pend, c->pend_n_in, c->act, c->pend_T, c->st)) be_fail(c, "matvec launch");
    memset(&c->pend, 0, sizeof c->pend);
}
static void flush_ropes(cuda_be *c);
/* launch everything deferred (an op that reads or writes anything calls this first) */
static void flush_moe(cuda_be *c) {
    if (!c->moe_pend_on) return;
    c->moe_pend_on = 0;
    float *add = c->moe_res_add;
    c->moe_res_add = NULL;
    if (cuda_moe_combine(&c->moe_pend, add, c->st)) be_fail(c, "moe combine");
}
static void flush_norm(cuda_be *c) {
    if (!c->pnorm_on) return;
    c->pnorm_on = 0;
    if (cuda_rmsnorm(c->pnorm.x, c->pnorm.w, c->pnorm.y, c->pnorm.rows, c->pnorm.n, c->pnorm.eps, c->st)) be_fail(c, "rmsnorm");
}
static void flush(cuda_be *c) {
    flush_norm(c);
    flush_mv(c);
    if (c->n_ropes) flush_ropes(c);
    flush_moe(c);
}

static void act_invalidate(cuda_be *c) { c->act_src = NULL; }

/* Norm weight -> activation format of the matvec that reads its output (layer inputs). */
static int act_fmt_after_norm(cuda_be *c, const weight *nw) {
    const model_weights *w = c->w;
    int af = -1;
    const weight *next = NULL;
    if (nw->data && nw->data == w->output_norm.data) next = &w->output;
    for (int l = 0; w->layers && l < c->hp.n_layers && !next; l++) {
        const layer_weights *L = &w->layers[l];
        if (nw->data == L->attn_norm.data) next = &L->wq;
        else if (nw->data == L->ffn_norm.data && L->gate.data) next = &L->gate;
        else if (nw->data == L->ffn_norm.data && L->gate_exps.data) next = &L->gate_exps;
    }
    if (next && cuda_type_info(next->type, NULL, &af, NULL) == 0 && af != ACT_F32) return af;
    return -1;
}

/* ---- ops ------------------------------------------------------------------------------------ */
static void op_embed(backend *be, const weight *te, const int32_t *ids, int T, float *x, float scale) {
    cuda_be *c = CB(be);
    flush(c); act_invalidate(c);
    float *dx = dev_of(c, x);
    if (!dx) return;
    if (!c->capturing) {
        if (CU_CHECK(cudaMemcpyAsync(c->d_ids, ids, (size_t)T * sizeof(int32_t), cudaMemcpyHostToDevice, c->st))) { be_fail(c, "ids"); return; }
        c->dev_pos_known = 0;
    }
    /* formats without a device dequantizer use the f32 copy made at creation */
    const void *table = te->dev;
    int type = te->type;
    if (!cuda_embed_supported(type)) { table = c->embd_f32; type = TYPE_F32; }
    if (!table || cuda_embed(table, type, te->n_in, c->d_ids, T, dx, scale, c->st)) be_fail(c, "embed");
}

static int ranges_overlap(const float *a, size_t na, const float *b, size_t nb) {
    return a < b + nb && b < a + na;
}

/* Is w a per-head q norm (qwen3, gemma3)? Its k norm follows at once: the two share a launch. */
static int is_q_norm(cuda_be *c, const weight *w) {
    for (int l = 0; c->w->layers && l < c->hp.n_layers; l++)
        if (w->data && w->data == c->w->layers[l].q_norm.data) return 1;
    return 0;
}

static void op_rmsnorm(backend *be, const float *x, const weight *w, float *y, int rows, int n, float eps) {
    cuda_be *c = CB(be);
    float *dx = dev_of(c, x), *dy = dev_of(c, y);
    if (!dx || !dy) return;
    if (c->moe_pend_on && c->moe_res_add == dx && rows == 1 && (int64_t)n == c->moe_pend.E && !c->pend.n &&
        !ranges_overlap(dy, (size_t)n, dx, (size_t)n)) {
        /* the pending MoE combine + residual add's last CTA normalizes x (as below) */
        const int af = act_fmt_after_norm(c, w);
        const int aligned = (uintptr_t)dx % 16 == 0 && (uintptr_t)dy % 16 == 0;
        if (af >= 0 && cuda_act_row_bytes(af, n) && cuda_act_row_bytes(af, n) <= c->act_cap && n % 32 == 0 &&
            n <= NORM_FOLD_MAX && (af != ACT_Q8_K || aligned)) {
            c->moe_pend_on = 0;
            c->moe_res_add = NULL;
            flush(c);
            if (cuda_moe_combine_norm(&c->moe_pend, dx, (const float *)w->dev, dy, c->act, af, eps, c->mv_counter,
                                      c->norm_fold, c->st))
                be_fail(c, "moe combine + norm");
            c->n_norm_fold++;
            c->act_src = dy; c->act_n = n; c->act_T = 1; c->act_fmt = af;
            return;
        }
    }
    if (c->res_pending && c->pend.n == 1 && c->pend.add_to[0] == dx && rows == 1 && (int64_t)n == c->pend.n_out[0] &&
        !ranges_overlap(dy, (size_t)n, dx, (size_t)n)) {
        /* the pending matvec + residual add's last CTA normalizes x and quantizes it for the
         * next matvec (matvec.cu, NORM epilogue): one launch less */
        const int af = act_fmt_after_norm(c, w);
        /* act_q8_K: the sum order of rmsnorm_q256_kernel, which op_rmsnorm picks for aligned rows */
        const int aligned = (uintptr_t)dx % 16 == 0 && (uintptr_t)dy % 16 == 0;
        if (af >= 0 && cuda_act_row_bytes(af, n) && cuda_act_row_bytes(af, n) <= c->act_cap && n % 32 == 0 &&
            n <= NORM_FOLD_MAX && (af != ACT_Q8_K || aligned)) {
            mv_group *g = &c->pend;
            g->norm_w = (const float *)w->dev; g->norm_y = dy; g->norm_act = (uint8_t *)c->act; g->norm_fmt = af;
            g->norm_eps = eps; g->counter = c->mv_counter; g->norm_threads = c->norm_fold;
            flush(c);
            c->n_norm_fold++;
            c->act_src = dy; c->act_n = n; c->act_T = 1; c->act_fmt = af;
            return;
        }
    }
    pending_norm *pn = &c->pnorm;
    if (c->pnorm_on && pn->n == n && pn->eps == eps && !ranges_overlap(dx, (size_t)rows * n, pn->y, (size_t)pn->rows * n) &&
        !ranges_overlap(dy, (size_t)rows * n, pn->x, (size_t)pn->rows * n) && !c->pend.n && !c->n_ropes && !c->moe_pend_on) {
        c->pnorm_on = 0;
        if (cuda_rmsnorm2(pn->x, pn->w, pn->y, pn->rows, dx, (const float *)w->dev, dy, rows, n, eps, c->st)) be_fail(c, "rmsnorm");
        act_invalidate(c);
        return;
    }
    flush(c); act_invalidate(c);
    if (c->fuse && is_q_norm(c, w)) {
        pending_norm q = { dx, (const float *)w->dev, dy, rows, n, eps };
        c->pnorm = q;
        c->pnorm_on = 1;
        return;
    }
    int af = c->fuse && rows <= FWD_MAX_T ? act_fmt_after_norm(c, w) : -1;
    if (af >= 0 && cuda_act_row_bytes(af, n) && cuda_act_row_bytes(af, n) * rows <= c->act_cap) {
        if (cuda_rmsnorm_quant(dx, (const float *)w->dev, dy, rows, n, eps, c->act, af, c->st)) be_fail(c, "rmsnorm");
        c->act_src = dy; c->act_n = n; c->act_T = rows; c->act_fmt = af;
        return;
    }
    if (cuda_rmsnorm(dx, (const float *)w->dev, dy, rows, n, eps, c->st)) be_fail(c, "rmsnorm");
}

static void op_matvec(backend *be, const weight *W, const float *x, int T, float *y) {
    cuda_be *c = CB(be);
    float *dx = dev_of(c, x), *dy = dev_of(c, y);
    if (!dx || !dy) return;
    int blck, af, bs;
    if (cuda_type_info(W->type, &blck, &af, &bs) || !W->dev) { be_fail(c, "matvec: weight type without a CUDA kernel"); return; }
    int64_t n_in = W->n_in, n_out = W->n_out;
    /* can it join the pending group? (same input, format, shape class; output not an input) */
    int join = c->fuse && c->pend.n > 0 && c->pend.n < 3 && c->pend_type == W->type && c->pend_n_in == n_in &&
               c->pend_T == T && c->pend_x == dx && !ranges_overlap(dy, (size_t)T * n_out, dx, (size_t)T * n_in);
    if (!join) flush(c);
    if (!(c->act_src == dx && c->act_n == n_in && c->act_T == T && c->act_fmt == af)) {
        if (cuda_act_row_bytes(af, n_in) * T > c->act_cap) { be_fail(c, "matvec: activation buffer too small"); return; }
        if (cuda_act_quantize(af, dx, n_in, T, c->act, c->st)) { be_fail(c, "activation quantization"); return; }
        c->act_src = dx; c->act_n = n_in; c->act_T = T; c->act_fmt = af;
    }
    mv_group *g = &c->pend;
    if (!g->n) {
        c->pend_type = W->type; c->pend_n_in = n_in; c->pend_T = T; c->pend_x = dx;
        g->row_bytes = (size_t)(n_in / blck) * (size_t)bs;
        g->row_start[0] = 0;
    }
    int i = g->n++;
    g->W[i] = (const uint8_t *)W->dev; g->y[i] = dy; g->add_to[i] = NULL; g->n_out[i] = n_out;
    g->row_start[i + 1] = g->row_start[i] + (int)n_out;
    /* the output overwrote the cached activations' source? */
    if (c->act_src && ranges_overlap(dy, (size_t)T * n_out, c->act_src, (size_t)c->act_T * c->act_n))
        act_invalidate(c);
    if (!c->fuse) flush(c);
    /* logits: read back in eager mode */
    if (c->readback && c->logits_host && (const char *)y >= (const char *)c->logits_host &&
        (const char *)y < (const char *)c->logits_host + c->logits_bytes && !c->capturing) {
        flush(c);
        if (CU_CHECK(cudaMemcpyAsync(y, dy, (size_t)T * n_out * sizeof(float), cudaMemcpyDeviceToHost, c->st)) ||
            CU_CHECK(cudaStreamSynchronize(c->st)))
            be_fail(c, "logits read-back");
    }
}

static float *rope_table(cuda_be *c, float base) { return base == c->hp.rope_base ? c->rope_global : c->rope_local; }

static void rope_launch(cuda_be *c, const pending_rope *r) {
    if (cuda_rope(r->x, r->T, r->n_heads, r->head_dim, r->n_rot, c->hp.rope_neox, r->pos0, c->capturing ? c->d_pos : NULL,
                  r->table, c->st))
        be_fail(c, "rope");
}
static void flush_ropes(cuda_be *c) {
    for (int i = 0; i < c->n_ropes; i++) rope_launch(c, &c->ropes[i]);
    c->n_ropes = 0;
}

/* Deferred (fused with the KV store at attention when it is q's and k's rope). */
static void op_rope(backend *be, float *x, int T, int n_heads, int head_dim, int n_rot, int pos0, float base, float scale) {
    cuda_be *c = CB(be);
    (void)scale;   /* the tables are built with hp.rope_scale, the value forward() passes */
    flush_norm(c); flush_mv(c); act_invalidate(c);
    float *dx = dev_of(c, x);
    if (!dx) return;
    pending_rope r = { dx, T, n_heads, head_dim, n_rot, pos0, rope_table(c, base) };
    if (!c->fuse || c->n_ropes == 2) { flush_ropes(c); rope_launch(c, &r); return; }
    c->ropes[c->n_ropes++] = r;
}

static void op_attention(backend *be, int layer, const float *q, const float *k, const float *v, int T, int pos0,
                         float scale, int window, float *out) {
    cuda_be *c = CB(be);
    flush_norm(c); flush_mv(c); act_invalidate(c);
    float *dq = dev_of(c, q), *dk = dev_of(c, k), *dv = dev_of(c, v), *dout = dev_of(c, out);
    if (!dq || !dk || !dv || !dout) return;
    const int *dp = c->capturing ? c->d_pos : NULL;
    const hparams *hp = &c->hp;
    pending_rope *rq = &c->ropes[0], *rk = &c->ropes[1];
    cuda_rope_fold fold = { dk, dv, rq->table, rk->table, rq->n_rot, hp->rope_neox };
    int folded = 0;
    if (c->n_ropes == 2 && rq->x == dq && rk->x == dk && rq->T == T && rk->T == T && rq->pos0 == pos0 &&
        rk->pos0 == pos0 && rq->n_heads == hp->n_heads && rk->n_heads == hp->n_kv_heads && rq->n_rot == rk->n_rot) {
        /* T = 1 with the exact attention: RoPE and the KV store inside the attention kernel */
        folded = c->fuse && T == 1 && !c->attn_split;
        if (!folded &&
            cuda_rope_qk_store(dq, dk, dv, c->kc[layer], c->vc[layer], T, hp->n_heads, hp->n_kv_heads, hp->head_dim,
                               rq->n_rot, hp->rope_neox, pos0, dp, rq->table, rk->table, c->st))
            be_fail(c, "rope + kv store");
        c->n_ropes = 0;
    } else {
        flush_ropes(c);
        if (cuda_kv_store(dk, dv, c->kc[layer], c->vc[layer], T, (int)c->kv_dim, pos0, dp, c->st)) be_fail(c, "kv store");
    }
    /* quantize the output for wo inside the attention kernel when its blocks fit in a head */
    int af = -1;
    const weight *wo = c->w->layers ? &c->w->layers[layer].wo : NULL;
    if (c->fuse && wo && wo->data && cuda_type_info(wo->type, NULL, &af, NULL) == 0 &&
        (af == ACT_Q8_0 || af == ACT_Q8_1 || (af == ACT_Q8_2 && hp->head_dim % 64 == 0)) && hp->head_dim % 32 == 0 &&
        cuda_act_row_bytes(af, (int64_t)hp->n_heads * hp->head_dim) * T <= c->act_cap) {
    } else af = -1;
    int rc = c->attn_split
        ? cuda_attention(dq, c->kc[layer], c->vc[layer], T, hp->n_heads, hp->n_kv_heads, hp->head_dim, pos0, dp, scale,
                         window, c->n_ctx, c->att_partial, c->att_counters, dout, af >= 0 ? c->act : NULL, af, c->st)
        : cuda_attention_exact(dq, c->kc[layer], c->vc[layer], T, hp->n_heads, hp->n_kv_heads, hp->head_dim, pos0, dp,
                               scale, window, c->n_ctx, c->att_partial, dout, af >= 0 ? c->act : NULL, af,
                               folded ? &fold : NULL, c->st);
    if (rc) be_fail(c, "attention");
    if (af >= 0) { c->act_src = dout; c->act_n = (int64_t)hp->n_heads * hp->head_dim; c->act_T = T; c->act_fmt = af; }
}

/* the activation format of the down projection that reads the output of gate weight gw */
static int down_act_fmt(cuda_be *c, const void *gw) {
    int af = -1;
    for (int l = 0; c->w->layers && l < c->hp.n_layers; l++)
        if (c->w->layers[l].gate.dev == gw && c->w->layers[l].down.data) {
            if (cuda_type_info(c->w->layers[l].down.type, NULL, &af, NULL)) af = -1;
            break;
        }
    return af;
}

static void op_swiglu(backend *be, const float *gate, const float *up, float *out, int n) {
    cuda_be *c = CB(be);
    float *dg = dev_of(c, gate), *du = dev_of(c, up), *dout = dev_of(c, out);
    if (!dg || !du || !dout) return;
    mv_group *g = &c->pend;
    if (c->fuse && g->n == 2 && g->y[0] == dg && g->y[1] == du && g->n_out[0] == g->n_out[1] &&
        (int64_t)n == c->pend_T * g->n_out[0]) {
        g->swiglu = 1; g->swiglu_out = dout;
        const int afd = c->pend_T == 1 ? down_act_fmt(c, g->W[0]) : -1;
        if (afd >= 0 && cuda_matvec_swiglu_q32_ok(c->pend_type, afd, g->n_out[0]) &&
            cuda_act_row_bytes(afd, g->n_out[0]) <= c->act_cap) {
            /* T = 1: h quantized for down in the same launch, into the second buffer, which
             * then becomes the current one (down finds it in the act cache) */
            flush_norm(c);
            if (cuda_matvec_swiglu_q32(c->pend_type, g, c->pend_n_in, c->act, c->act2, afd, c->st)) be_fail(c, "gate/up");
            const int64_t F = g->n_out[0];
            memset(&c->pend, 0, sizeof c->pend);
            flush(c);
            void *t = c->act; c->act = c->act2; c->act2 = t;
            c->act_src = dout; c->act_n = F; c->act_T = 1; c->act_fmt = afd;
            return;
        }
        flush(c);
        act_invalidate(c);
        return;
    }
    flush(c); act_invalidate(c);
    if (cuda_swiglu(dg, du, dout, n, c->st)) be_fail(c, "swiglu");
}

static void op_add(backend *be, float *x, const float *y, int n) {
    cuda_be *c = CB(be);
    float *dx = dev_of(c, x), *dy = dev_of(c, y);
    if (!dx || !dy) return;
    if (c->moe_pend_on && c->moe_pend.out == dy && (int64_t)n == c->moe_pend.T * c->moe_pend.E && dx != dy &&
        !c->moe_res_add && c->moe_pend.T == 1 && c->mv_counter && c->norm_fold) {
        /* T = 1: the combine + residual stays pending one op longer (an RMSNorm of x next
         * becomes its epilogue; any other op launches it as it is: flush_moe) */
        c->moe_res_add = dx;
        act_invalidate(c);
        return;
    }
    if (c->moe_pend_on && c->moe_pend.out == dy && (int64_t)n == c->moe_pend.T * c->moe_pend.E && dx != dy) {
        /* the MoE combine with the residual add as its epilogue */
        c->moe_pend_on = 0;
        flush(c);
        if (cuda_moe_combine(&c->moe_pend, dx, c->st)) be_fail(c, "moe combine");
        act_invalidate(c);
        return;
    }
    mv_group *g = &c->pend;
    if (c->fuse && g->n == 1 && !g->swiglu && g->y[0] == dy && (int64_t)n == c->pend_T * g->n_out[0] &&
        !ranges_overlap(dx, (size_t)n, c->pend_x, (size_t)c->pend_T * c->pend_n_in)) {
        g->add_to[0] = dx;
        act_invalidate(c);
        /* T = 1: left pending one op longer; an RMSNorm of x next becomes its epilogue */
        if (c->pend_T == 1 && c->mv_counter && c->norm_fold) { c->res_pending = 1; return; }
        flush(c);
        return;
    }
    flush(c); act_invalidate(c);
    if (cuda_add(dx, dy, n, c->st)) be_fail(c, "add");
}

static void op_geglu(backend *be, const float *gate, const float *up, float *out, int n) {
    cuda_be *c = CB(be);
    flush(c); act_invalidate(c);
    float *dg = dev_of(c, gate), *du = dev_of(c, up), *dout = dev_of(c, out);
    if (!dg || !du || !dout) return;
    if (cuda_geglu(dg, du, dout, n, c->st)) be_fail(c, "geglu");
}

/* Mixture-of-Experts FFN: the router matvec (the matvec kernels), then moe.cu's routing and
 * grouped expert kernels, all from device memory (graph-capturable); the combine waits for
 * the residual add that follows it (op_add). */
static void op_moe_ffn(backend *be, const layer_weights *L, int k, const float *x, int T, float *out) {
    cuda_be *c = CB(be);
    flush(c);
    float *dx = dev_of(c, x), *dout = dev_of(c, out);
    if (!dx || !dout) return;
    const weight *R = &L->gate_inp, *G = &L->gate_exps, *U = &L->up_exps, *D = &L->down_exps;
    const int X = (int)R->n_out;
    const int64_t E = G->n_in, F = G->n_out;
    int rb, raf, rbs, gaf;
    if (!c->moe_logits || !R->dev || !G->dev || !U->dev || !D->dev || G->type != U->type || X != c->hp.n_experts ||
        k > c->hp.n_experts_used || T > FWD_MAX_T || cuda_type_info(R->type, &rb, &raf, &rbs) ||
        cuda_type_info(G->type, NULL, &gaf, NULL) || !cuda_type_supported(D->type) || R->n_in != E || E % rb) {
        be_fail(c, "moe: unsupported expert layout or types (gate and up must share a format)");
        return;
    }
    /* router logits [T][X]: an F32 router of a supported width runs inside the routing kernel
     * (STRATA_CUDA_FUSE=0: its own matvec) */
    int fused_router = c->fuse && cuda_moe_router_fusable(R->type, E);
    const void *ract = dx;                       /* F32 / F16 / BF16 routers read the f32 rows */
    if (!fused_router && raf != ACT_F32) {
        if (c->act_src == dx && c->act_n == E && c->act_T == T && c->act_fmt == raf) ract = c->act;
        else if (cuda_act_quantize(raf, dx, E, T, c->moe_act_r, c->st)) { be_fail(c, "moe router activations"); return; }
        else ract = c->moe_act_r;
    }
    mv_group g;
    memset(&g, 0, sizeof g);
    g.n = 1; g.W[0] = (const uint8_t *)R->dev; g.y[0] = c->moe_logits; g.n_out[0] = X;
    g.row_start[1] = X; g.row_bytes = (size_t)(E / rb) * (size_t)rbs;
    if (!fused_router && cuda_matvec_group(R->type, &g, E, ract, T, c->st)) { be_fail(c, "moe router"); return; }
    /* x in the experts' activation format (usually already there: the ffn norm quantized it) */
    if (!(c->act_src == dx && c->act_n == E && c->act_T == T && c->act_fmt == gaf)) {
        if (cuda_act_row_bytes(gaf, E) * T > c->act_cap || cuda_act_quantize(gaf, dx, E, T, c->act, c->st)) {
            be_fail(c, "moe activations");
            return;
        }
        c->act_src = dx; c->act_n = E; c->act_T = T; c->act_fmt = gaf;
    }
    cuda_moe m = c->moe_bufs;
    m.X = X; m.k = k; m.T = T; m.E = E; m.F = F;
    m.type_gu = G->type; m.type_down = D->type;
    m.gate = G->dev; m.up = U->dev; m.down = D->dev;
    m.logits = c->moe_logits; m.act_x = c->act; m.out = dout;
    m.router_f32 = fused_router ? (const float *)R->dev : NULL;
    m.x_f32 = dx;
    if (cuda_moe_experts(&m, c->st)) { be_fail(c, "moe experts"); return; }
    c->moe_pend = m;
    c->moe_pend_on = 1;
    if (!c->fuse) flush(c);
}

/* Filled at first use; ops this backend lacks stay NULL, and forward() refuses models that
 * need them. */
static backend_ops cuda_ops;
static void cuda_ops_init(void) {
    cuda_ops.name = "cuda";
    cuda_ops.embed = op_embed; cuda_ops.rmsnorm = op_rmsnorm; cuda_ops.matvec = op_matvec;
    cuda_ops.rope = op_rope; cuda_ops.attention = op_attention; cuda_ops.swiglu = op_swiglu;
    cuda_ops.add = op_add; cuda_ops.geglu = op_geglu; cuda_ops.moe_ffn = op_moe_ffn;
}

/* ---- creation ------------------------------------------------------------------------------ */
static int rope_table_upload(const hparams *hp, int n_ctx, float base, float **out, const char *what, char *err,
                             size_t errlen) {
    int half = hp->n_rot / 2;
    size_t nf = (size_t)n_ctx * half * 2;
    float *h = (float *)st_malloc(nf * sizeof(float));
    if (!h) { snprintf(err, errlen, "out of memory"); return -1; }
    /* exactly the CPU backend's computation: inv = 1 / base^(2i / n_rot) in double, then
     * p = (float)pos / scale, ang = p * inv (float), cosf / sinf */
    for (int i = 0; i < half; i++) {
        float inv = (float)(1.0 / pow((double)base, (2.0 * i) / hp->n_rot));
        for (int pos = 0; pos < n_ctx; pos++) {
            float p = (float)pos / hp->rope_scale;
            volatile float ang = p * inv;   /* one rounded product, as on the CPU */
            h[((size_t)pos * half + i) * 2] = cosf(ang);
            h[((size_t)pos * half + i) * 2 + 1] = sinf(ang);
        }
    }
    int rc = cuda_dev_alloc_named((void **)out, nf * sizeof(float), what, err, errlen);
    if (!rc && CU_CHECK(cudaMemcpy(*out, h, nf * sizeof(float), cudaMemcpyHostToDevice))) {
        snprintf(err, errlen, "CUDA backend set-up failed: %s", cuda_last_error());
        rc = -1;
    }
    st_free(h);
    return rc ? -1 : 0;
}

extern "C" backend *backend_cuda_new(const hparams *hp, const model_weights *w, int n_ctx, char *err, size_t errlen) {
    backend *be = (backend *)st_calloc(1, sizeof *be);
    cuda_be *c = (cuda_be *)st_calloc(1, sizeof *c);
    if (!be || !c) { st_free(be); st_free(c); snprintf(err, errlen, "out of memory"); return NULL; }
    cuda_ops_init();
    be->ops = &cuda_ops; be->impl = c;
    c->hp = *hp; c->w = w; c->n_ctx = n_ctx; c->readback = 1;
    c->fuse = env_bool(ENV_CUDA_FUSE);
    {   /* kernel variants: the device class table, or the switches (device_class.cu) */
        cuda_variants var;
        cuda_device_choose(&var);
        c->attn_split = var.attn_split;
        cuda_matvec_set_coop(var.matvec_coop);
        cuda_set_pdl(var.pdl);
        const int nft = atoi(env_str(ENV_CUDA_NORM_FOLD));
        c->norm_fold = nft == 128 || nft == 256 || nft == 512 || nft == 1024 ? nft : 0;
    }
    c->kv_dim = (size_t)hp->n_kv_heads * hp->head_dim;
    c->kc = (uint16_t **)st_calloc((size_t)hp->n_layers, sizeof(uint16_t *));
    c->vc = (uint16_t **)st_calloc((size_t)hp->n_layers, sizeof(uint16_t *));
    if (!c->kc || !c->vc) { snprintf(err, errlen, "out of memory"); backend_cuda_free(be); return NULL; }
    if (cuda_tables_init() || expf_init() || CU_CHECK(cudaStreamCreateWithFlags(&c->st, cudaStreamNonBlocking))) goto cuda_fail;
    {
        size_t kv_bytes = (size_t)n_ctx * c->kv_dim * sizeof(uint16_t);
        for (int l = 0; l < hp->n_layers; l++)
            if (cuda_dev_malloc((void **)&c->kc[l], kv_bytes) != cudaSuccess || cuda_dev_malloc((void **)&c->vc[l], kv_bytes) != cudaSuccess) {
                size_t fr = 0, tot = 0;
                cudaMemGetInfo(&fr, &tot);
                snprintf(err, errlen, "not enough GPU memory for the KV cache of %d positions (%.1f MiB; %.1f MiB free): use a smaller --ctx",
                         n_ctx, 2.0 * hp->n_layers * kv_bytes / 1048576.0, fr / 1048576.0);
                backend_cuda_free(be);
                return NULL;
            }
        /* activation buffer: the largest n_in of any matvec, FWD_MAX_T rows, worst format */
        int64_t n_max = hp->n_embd;
        int64_t cand[] = { (int64_t)hp->n_heads * hp->head_dim, hp->n_ff, hp->n_ff_exp };
        for (int i = 0; i < 3; i++) if (cand[i] > n_max) n_max = cand[i];
        c->act_cap = (size_t)FWD_MAX_T * ((size_t)n_max * 4 + 64);
        size_t att = cuda_attention_scratch_floats(FWD_MAX_T, hp->n_heads, hp->head_dim, n_ctx);
        /* every allocation names itself when it does not fit (dev_alloc.cu; issue 9's test walks them) */
        if (cuda_dev_alloc_named(&c->act, c->act_cap, "the quantized activation buffer", err, errlen) ||
            cuda_dev_alloc_named(&c->act2, c->act_cap, "the second quantized activation buffer", err, errlen) ||
            cuda_dev_alloc_named((void **)&c->att_partial, att * sizeof(float), "the attention scratch", err, errlen) ||
            cuda_dev_alloc_named((void **)&c->d_ids, FWD_MAX_T * sizeof(int32_t), "the token ids", err, errlen) ||
            cuda_dev_alloc_named((void **)&c->d_pos, sizeof(int), "the decode position", err, errlen) ||
            cuda_dev_alloc_named((void **)&c->att_counters, FWD_MAX_T * hp->n_heads * sizeof(int),
                                 "the attention counters", err, errlen) ||
            cuda_dev_alloc_named((void **)&c->argmax_scratch, cuda_argmax_scratch_ints() * sizeof(int),
                                 "the argmax scratch", err, errlen) ||
            cuda_dev_alloc_named((void **)&c->mv_counter, sizeof(unsigned), "the matvec epilogue counter", err, errlen) ||
            cuda_dev_alloc_named((void **)&c->d_hist, (size_t)n_ctx * sizeof(int32_t), "the sampler's token history", err,
                                 errlen) ||
            cuda_dev_alloc_named((void **)&c->d_sparams, sizeof(cuda_sample_params), "the sampler parameters", err, errlen) ||
            cuda_dev_alloc_named((void **)&c->d_sio, sizeof(cuda_sample_io), "the sampler state", err, errlen) ||
            cuda_dev_alloc_named(&c->samp_scratch, cuda_sample_scratch_bytes(hp->n_vocab), "the sampler scratch", err,
                                 errlen))
            goto fail;
        if (cuda_pinned_malloc((void **)&c->h_token, sizeof(int32_t)) != cudaSuccess ||
            cuda_pinned_malloc((void **)&c->h_sio, sizeof(cuda_sample_io)) != cudaSuccess) {
            snprintf(err, errlen, "not enough pinned host memory for the token read-back buffers");
            goto fail;
        }
        memset(c->h_sio, 0, sizeof *c->h_sio);
        if (CU_CHECK(cudaMemset(c->att_counters, 0, FWD_MAX_T * hp->n_heads * sizeof(int))) ||
            CU_CHECK(cudaMemset(c->argmax_scratch, 0, cuda_argmax_scratch_ints() * sizeof(int))) ||
            CU_CHECK(cudaMemset(c->mv_counter, 0, sizeof(unsigned))) ||
            CU_CHECK(cudaMemset(c->d_sio, 0, sizeof(cuda_sample_io))))
            goto cuda_fail;
        /* an embedding format without a device dequantizer: one f32 copy, dequantized here with
         * the reference (same bits as the CPU's embed) */
        if (w->tok_embd.data && !cuda_embed_supported(w->tok_embd.type)) {
            const quant_traits *qt = quant_traits_get(w->tok_embd.type);
            size_t rb = quant_row_bytes(w->tok_embd.type, w->tok_embd.n_in), rowf = (size_t)w->tok_embd.n_in * sizeof(float);
            float *tmp = (float *)st_malloc(rowf * 256);
            if (!qt || !tmp) { st_free(tmp); snprintf(err, errlen, "out of memory"); goto fail; }
            if (cuda_dev_alloc_named((void **)&c->embd_f32, rowf * (size_t)w->tok_embd.n_out, "the f32 copy of the embeddings",
                                     err, errlen)) { st_free(tmp); goto fail; }
            for (int64_t r0 = 0; r0 < w->tok_embd.n_out; r0 += 256) {
                int64_t nr = w->tok_embd.n_out - r0 < 256 ? w->tok_embd.n_out - r0 : 256;
                for (int64_t r = 0; r < nr; r++)
                    qt->dequant_row((const uint8_t *)w->tok_embd.data + (size_t)(r0 + r) * rb, tmp + (size_t)r * w->tok_embd.n_in, w->tok_embd.n_in);
                if (CU_CHECK(cudaMemcpy((char *)c->embd_f32 + (size_t)r0 * rowf, tmp, rowf * (size_t)nr, cudaMemcpyHostToDevice))) { st_free(tmp); goto cuda_fail; }
            }
            st_free(tmp);
        }
        if (hp->n_experts > 0) {
            /* MoE scratch: P = FWD_MAX_T * k pairs; activation rows sized for the widest format (f32) */
            size_t P = (size_t)FWD_MAX_T * (size_t)hp->n_experts_used, E = (size_t)hp->n_embd, F = (size_t)hp->n_ff_exp;
            cuda_moe *b = &c->moe_bufs;
            if (cuda_dev_alloc_named((void **)&c->moe_logits, (size_t)FWD_MAX_T * (size_t)hp->n_experts * sizeof(float),
                                     "the MoE router logits", err, errlen) ||
                cuda_dev_alloc_named(&c->moe_act_r, (size_t)FWD_MAX_T * (E * 4 + 64), "the MoE router activations", err, errlen) ||
                cuda_dev_alloc_named(&b->act_pairs, P * (E * 4 + 64), "the MoE expert activations", err, errlen) ||
                cuda_dev_alloc_named((void **)&b->groups, (1 + MOE_GROUP_INTS * P) * sizeof(int), "the MoE expert groups", err, errlen) ||
                cuda_dev_alloc_named((void **)&b->pair_of, P * sizeof(int), "the MoE pair index", err, errlen) ||
                cuda_dev_alloc_named((void **)&b->wts, P * sizeof(float), "the MoE routing weights", err, errlen) ||
                cuda_dev_alloc_named((void **)&b->h, P * F * sizeof(float), "the MoE hidden rows", err, errlen) ||
                cuda_dev_alloc_named(&b->act_h, P * (F * 4 + 64), "the MoE hidden activations", err, errlen) ||
                cuda_dev_alloc_named((void **)&b->y, P * E * sizeof(float), "the MoE expert outputs", err, errlen) ||
                cuda_dev_alloc_named((void **)&b->counter, sizeof(unsigned), "the MoE router counter", err, errlen))
                goto fail;
            if (CU_CHECK(cudaMemset(b->counter, 0, sizeof(unsigned)))) goto cuda_fail;
        }
        if (rope_table_upload(hp, n_ctx, hp->rope_base, &c->rope_global, "the RoPE table", err, errlen) ||
            rope_table_upload(hp, n_ctx, hp->rope_base_local, &c->rope_local, "the local RoPE table", err, errlen))
            goto fail;
    }
    return be;
cuda_fail:
    snprintf(err, errlen, "CUDA backend set-up failed: %s", cuda_last_error());
fail:
    backend_cuda_free(be);
    return NULL;
}

extern "C" void backend_cuda_free(backend *be) {
    if (!be) return;
    cuda_be *c = CB(be);
    if (c) {
        if (c->st) cudaStreamSynchronize(c->st);
        if (c->graph_ok) cudaGraphExecDestroy(c->graph);
        for (int i = 0; i < 2; i++)
            if (c->sgraph_ok[i]) cudaGraphExecDestroy(c->sgraph[i]);
        for (int l = 0; c->kc && l < c->hp.n_layers; l++) cuda_dev_free(c->kc[l]);
        for (int l = 0; c->vc && l < c->hp.n_layers; l++) cuda_dev_free(c->vc[l]);
        st_free(c->kc); st_free(c->vc);
        cuda_dev_free(c->rope_global); cuda_dev_free(c->rope_local); cuda_dev_free(c->att_partial); cuda_dev_free(c->act);
        cuda_dev_free(c->act2);
        cuda_dev_free(c->d_ids); cuda_dev_free(c->d_pos); cuda_dev_free(c->embd_f32); cuda_dev_free(c->att_counters);
        cuda_dev_free(c->argmax_scratch); cuda_dev_free(c->mv_counter);
        cuda_dev_free(c->d_hist); cuda_dev_free(c->d_sparams); cuda_dev_free(c->d_sio); cuda_dev_free(c->samp_scratch);
        cuda_pinned_free(c->h_token); cuda_pinned_free(c->h_sio);
        cuda_dev_free(c->moe_logits); cuda_dev_free(c->moe_act_r); cuda_dev_free(c->moe_bufs.act_pairs);
        cuda_dev_free(c->moe_bufs.groups); cuda_dev_free(c->moe_bufs.pair_of); cuda_dev_free(c->moe_bufs.wts);
        cuda_dev_free(c->moe_bufs.h); cuda_dev_free(c->moe_bufs.act_h); cuda_dev_free(c->moe_bufs.y); cuda_dev_free(c->moe_bufs.counter);
        cuda_dev_free(c->p_layers); cuda_dev_free(c->p_scratch); cuda_dev_free(c->p_bar);
        for (int i = 0; i < c->n_mirrors; i++) cuda_dev_free(c->mirrors[i].dev);
        if (c->st) cudaStreamDestroy(c->st);
        st_free(c);
    }
    st_free(be);
}

extern "C" int backend_cuda_mirror(backend *be, void *host, size_t bytes) {
    cuda_be *c = CB(be);
    if (c->n_mirrors >= MAX_MIRRORS) return -1;
    mirror *m = &c->mirrors[c->n_mirrors];
    if (cuda_dev_malloc((void **)&m->dev, bytes) != cudaSuccess) return -1;
    cudaMemset(m->dev, 0, bytes);
    m->host = (char *)host; m->bytes = bytes;
    c->n_mirrors++;
    return 0;
}

extern "C" int backend_cuda_bind_fwd(backend *be, fwd_state *f, char *err, size_t errlen) {
    const hparams *hp = f->hp;
    size_t T = FWD_MAX_T, E = (size_t)hp->n_embd, Q = (size_t)hp->n_heads * hp->head_dim;
    size_t KV = (size_t)hp->n_kv_heads * hp->head_dim;
    size_t F = (size_t)(hp->n_ff > hp->n_ff_exp ? hp->n_ff : hp->n_ff_exp);
    if (!F) F = 1;
    /* the sizes fwd_init allocates (src/model/forward.c) */
    struct { void *p; size_t n; } b[] = {
        { f->x, T * E }, { f->xb, T * (E > Q ? E : Q) }, { f->q, T * Q }, { f->k, T * KV }, { f->v, T * KV },
        { f->att, T * Q }, { f->hb, T * F }, { f->hb2, T * F }, { f->logits, T * (size_t)hp->n_vocab },
        { f->moe_out, T * E },
    };
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++)
        if (b[i].p && backend_cuda_mirror(be, b[i].p, b[i].n * sizeof(float))) {
            snprintf(err, errlen, "not enough GPU memory for the activation buffers of the forward pass (buffer %d: %.2f MiB)",
                     (int)i, b[i].n * sizeof(float) / 1048576.0);
            return -1;
        }
    CB(be)->logits_host = f->logits;
    CB(be)->logits_bytes = T * (size_t)hp->n_vocab * sizeof(float);
    return 0;
}

static mirror *find_mirror(cuda_be *c, const void *host, size_t bytes) {
    for (int i = 0; i < c->n_mirrors; i++) {
        mirror *m = &c->mirrors[i];
        if ((const char *)host >= m->host && (const char *)host + bytes <= m->host + m->bytes) return m;
    }
    return NULL;
}

extern "C" int backend_cuda_upload(backend *be, const void *host, size_t bytes) {
    cuda_be *c = CB(be);
    flush(c); act_invalidate(c);
    mirror *m = find_mirror(c, host, bytes);
    if (!m) return -1;
    return CU_CHECK(cudaMemcpyAsync(m->dev + ((const char *)host - m->host), host, bytes, cudaMemcpyHostToDevice, c->st)) ||
           CU_CHECK(cudaStreamSynchronize(c->st)) ? -1 : 0;
}

extern "C" int backend_cuda_download(backend *be, void *host, size_t bytes) {
    cuda_be *c = CB(be);
    flush(c);
    mirror *m = find_mirror(c, host, bytes);
    if (!m) return -1;
    return CU_CHECK(cudaMemcpyAsync(host, m->dev + ((const char *)host - m->host), bytes, cudaMemcpyDeviceToHost, c->st)) ||
           CU_CHECK(cudaStreamSynchronize(c->st)) ? -1 : 0;
}

extern "C" int backend_cuda_sync(backend *be, char *err, size_t errlen) {
    cuda_be *c = CB(be);
    flush(c);
    if (CU_CHECK(cudaStreamSynchronize(c->st)) || c->failed) {
        snprintf(err, errlen, "%s", cuda_last_error());
        return -1;
    }
    return 0;
}

extern "C" int32_t backend_cuda_argmax(backend *be, fwd_state *f, int row) {
    cuda_be *c = CB(be);
    flush(c);
    float *dl = dev_of(c, f->logits + (size_t)row * f->hp->n_vocab);
    if (!dl || cuda_argmax(dl, f->hp->n_vocab, c->d_ids, NULL, c->argmax_scratch, c->st) ||
        CU_CHECK(cudaMemcpyAsync(c->h_token, c->d_ids, sizeof(int32_t), cudaMemcpyDeviceToHost, c->st)) ||
        CU_CHECK(cudaStreamSynchronize(c->st)) || c->failed)
        return -1;
    c->dev_pos_known = 0;
    return c->h_token[0];
}

/* ---- the persistent decode step (persist.cu) ------------------------------------------------ */
/* one matvec's fields; -1 when the persistent kernel has no row kernel for it */
static int persist_mv(const weight *W, int64_t n_in, int *t, int *co, int *af, int *blk, size_t *rb) {
    int b, a, bs;
    if (!W->dev || W->n_in != n_in || !cuda_persist_type_ok(W->type) || cuda_type_info(W->type, &b, &a, &bs) || n_in % b)
        return -1;
    *t = W->type; *af = a; *blk = b; *rb = (size_t)(n_in / b) * (size_t)bs;
    *co = cuda_matvec_coop_for(W->type, W->dev, *rb);   /* the per-op kernels' choice (speed only) */
    return 0;
}

/* Can this model's T = 1 step run as the persistent kernel? (Called before a graph capture:
 * it allocates and copies.) Dense llama-style layers only (no
 * MoE, per-head or sandwich norms, sliding windows, GELU), the exact attention and the fused
 * ops whose bits the kernel reproduces; the layer table and buffers are made at first use. */
static int persist_ready(cuda_be *c, fwd_state *f) {
    if (c->persist) return c->persist > 0;
    c->persist = -1;
    const char *sw = env_str(ENV_CUDA_PERSIST);
    int per_sm = !strcmp(sw, "on") ? 2 : (sw[0] >= '1' && sw[0] <= '4' && !sw[1]) ? sw[0] - '0' : 0;
    const hparams *hp = &c->hp;
    const model_weights *w = c->w;
    if (!per_sm || !c->fuse || c->attn_split || hp->n_experts > 0 || hp->ffn_gelu || !w->layers || hp->n_layers < 1 ||
        hp->head_dim % 2 || hp->head_dim > 256 || hp->n_kv_heads < 1 || hp->n_heads % hp->n_kv_heads ||
        hp->n_rot > hp->head_dim || hp->n_rot % 2)
        return 0;
    const int L = hp->n_layers, E = hp->n_embd, HD = hp->head_dim, Q = hp->n_heads * HD, KV = hp->n_kv_heads * HD;
    const int F = hp->n_ff;
    if (E % 32 || Q % 32 || F % 32 || F < 1) return 0;
    persist_layer *pl = (persist_layer *)st_calloc((size_t)L, sizeof *pl);
    if (!pl) return 0;
    /* per layer: q, k, v, att, h, x_mid, x_out, each rounded up to 32 floats (own cache lines) */
    size_t r32[7] = { (size_t)Q, (size_t)KV, (size_t)KV, (size_t)Q, (size_t)F, (size_t)E, (size_t)E };
    size_t per_layer = 0;
    for (int i = 0; i < 7; i++) { r32[i] = (r32[i] + 31) & ~(size_t)31; per_layer += r32[i]; }
    int ok = 1;
    for (int l = 0; l < L && ok; l++) {
        const layer_weights *Lw = &w->layers[l];
        persist_layer *P = &pl[l];
        int t2, c2, a2, b2, t3, c3, a3, b3;
        size_t r2, r3;
        ok = !Lw->q_norm.data && !Lw->k_norm.data && !Lw->post_attn_norm.data && !Lw->post_ffn_norm.data &&
             !Lw->sliding && !Lw->gate_inp.data && Lw->attn_norm.dev && Lw->attn_norm.type == TYPE_F32 &&
             Lw->ffn_norm.dev && Lw->ffn_norm.type == TYPE_F32 && Lw->wq.n_out == Q && Lw->wk.n_out == KV &&
             Lw->wv.n_out == KV && Lw->wo.n_out == E && Lw->gate.n_out == F && Lw->up.n_out == F && Lw->down.n_out == E &&
             !persist_mv(&Lw->wq, E, &P->t_qkv, &P->c_qkv, &P->af_qkv, &P->blk_qkv, &P->rb_qkv) &&
             !persist_mv(&Lw->wk, E, &t2, &c2, &a2, &b2, &r2) && !persist_mv(&Lw->wv, E, &t3, &c3, &a3, &b3, &r3) &&
             t2 == P->t_qkv && t3 == P->t_qkv && c2 == P->c_qkv && c3 == P->c_qkv &&
             !persist_mv(&Lw->wo, Q, &P->t_o, &P->c_o, &P->af_o, &P->blk_o, &P->rb_o) &&
             !persist_mv(&Lw->gate, E, &P->t_gu, &P->c_gu, &P->af_gu, &P->blk_gu, &P->rb_gu) &&
             !persist_mv(&Lw->up, E, &t2, &c2, &a2, &b2, &r2) && t2 == P->t_gu && c2 == P->c_gu &&
             !persist_mv(&Lw->down, F, &P->t_down, &P->c_down, &P->af_down, &P->blk_down, &P->rb_down);
        if (!ok) break;
        P->attn_norm = (const float *)Lw->attn_norm.dev; P->ffn_norm = (const float *)Lw->ffn_norm.dev;
        P->wq = (const uint8_t *)Lw->wq.dev; P->wk = (const uint8_t *)Lw->wk.dev; P->wv = (const uint8_t *)Lw->wv.dev;
        P->wo = (const uint8_t *)Lw->wo.dev; P->gate = (const uint8_t *)Lw->gate.dev; P->up = (const uint8_t *)Lw->up.dev;
        P->down = (const uint8_t *)Lw->down.dev;
        P->kc = c->kc[l]; P->vc = c->vc[l];
    }
    int n_max = E > Q ? E : Q;
    if (F > n_max) n_max = F;
    size_t smem = cuda_persist_smem(n_max, HD, c->n_ctx);
    int occ = ok && smem <= 200 * 1024 ? cuda_persist_occupancy(smem) : 0;
    int sms = 0;
    float *x_dev = dev_of(c, f->x);
    if (occ < 1 || !x_dev || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) != cudaSuccess || sms < 1) {
        cudaGetLastError();
        st_free(pl);
        return 0;
    }
    if (cuda_dev_malloc((void **)&c->p_scratch, per_layer * L * sizeof(float)) != cudaSuccess ||
        cuda_dev_malloc((void **)&c->p_layers, (size_t)L * sizeof *pl) != cudaSuccess ||
        cuda_dev_malloc((void **)&c->p_bar, 64 * sizeof(unsigned)) != cudaSuccess || cuda_persist_tables_init()) {
        cuda_dev_free(c->p_scratch); cuda_dev_free(c->p_layers); cuda_dev_free(c->p_bar);
        c->p_scratch = NULL; c->p_layers = NULL; c->p_bar = NULL;
        st_free(pl);
        return 0;
    }
    for (int l = 0; l < L; l++) {
        float *b = c->p_scratch + per_layer * l;
        persist_layer *P = &pl[l];
        P->q = b; b += r32[0];
        P->k = b; b += r32[1];
        P->v = b; b += r32[2];
        P->att = b; b += r32[3];
        P->h = b; b += r32[4];
        P->x_mid = b; b += r32[5];
        P->x_out = l + 1 < L ? b : x_dev;   /* the last layer's output is forward()'s x */
    }
    int rc = CU_CHECK(cudaMemcpy(c->p_layers, pl, (size_t)L * sizeof *pl, cudaMemcpyHostToDevice)) ||
             CU_CHECK(cudaMemset(c->p_bar, 0, 64 * sizeof(unsigned)));
    st_free(pl);
    if (rc) return 0;
    persist_args *a = &c->pa;
    memset(a, 0, sizeof *a);
    a->layers = c->p_layers; a->n_layers = L; a->E = E; a->H = hp->n_heads; a->KVH = hp->n_kv_heads; a->HD = HD;
    a->n_rot = hp->n_rot; a->neox = hp->rope_neox; a->F = F; a->n_max = n_max; a->eps = hp->rms_eps;
    a->scale = hp->attn_scale; a->x0 = x_dev; a->d_pos = c->d_pos; a->rope_cs = c->rope_global; a->bar = c->p_bar;
    a->smem = smem;
    a->prefetch = env_bool(ENV_CUDA_PERSIST_PREFETCH);
    c->p_grid = sms * (occ < per_sm ? occ : per_sm);
    c->persist = 1;
    return 1;
}

/* forward(T = 1) for the decode step: the persistent kernel between the embedding and the
 * output head when the model allows it (the same bits), else forward() op by op */
static int record_forward_step(cuda_be *c, fwd_state *f, int32_t id, int pos) {
    if (c->persist <= 0) return forward(f, &id, 1, pos, 0);   /* persist_ready ran before the capture */
    backend *be = f->be;
    const model_weights *w = c->w;
    const hparams *hp = &c->hp;
    cuda_ops.embed(be, &w->tok_embd, &id, 1, f->x, hp->embd_scale);
    flush(c); act_invalidate(c);
    if (cuda_persist_launch(&c->pa, c->p_grid, c->st)) { be_fail(c, "persistent decode kernel"); return -1; }
    cuda_ops.rmsnorm(be, f->x, &w->output_norm, f->xb, 1, hp->n_embd, hp->rms_eps);
    cuda_ops.matvec(be, &w->output, f->xb, 1, f->logits);
    return c->failed ? -1 : 0;
}

/* The step that the graph holds: forward(T = 1) on d_ids/d_pos, argmax into d_ids, pos += 1,
 * the new id copied to pinned host memory. */
static int record_step(cuda_be *c, fwd_state *f, int32_t id, int pos) {
    if (record_forward_step(c, f, id, pos) != 0) return -1;
    flush(c);
    float *dl = dev_of(c, f->logits);
    if (!dl || cuda_argmax(dl, f->hp->n_vocab, c->d_ids, c->d_pos, c->argmax_scratch, c->st) ||
        CU_CHECK(cudaMemcpyAsync(c->h_token, c->d_ids, sizeof(int32_t), cudaMemcpyDeviceToHost, c->st)))
        return -1;
    return c->failed ? -1 : 0;
}

extern "C" int32_t backend_cuda_decode_greedy(backend *be, fwd_state *f, int32_t id, int pos) {
    cuda_be *c = CB(be);
    if (pos < 0 || pos >= c->n_ctx || id < 0 || id >= c->hp.n_vocab || c->failed) return -1;
    flush(c); act_invalidate(c);
    /* d_ids / d_pos must hold this step's token and position */
    if (!(c->dev_pos_known && c->dev_pos == pos && c->dev_tok == id)) {
        int32_t hv[2] = { id, pos };
        if (CU_CHECK(cudaMemcpyAsync(c->d_ids, &hv[0], sizeof(int32_t), cudaMemcpyHostToDevice, c->st)) ||
            CU_CHECK(cudaMemcpyAsync(c->d_pos, &hv[1], sizeof(int), cudaMemcpyHostToDevice, c->st)) ||
            CU_CHECK(cudaStreamSynchronize(c->st)))
            return -1;
    }
    persist_ready(c, f);
    c->readback = 0;
    int rc = 0;
    if (!env_bool(ENV_CUDA_GRAPH)) {
        /* the same kernels, launched one by one (they still read d_pos / d_ids) */
        c->capturing = 1;
        rc = record_step(c, f, id, pos);
        c->capturing = 0;
    } else {
        if (!c->graph_ok) {
            cudaGraph_t g;
            c->capturing = 1;
            if (CU_CHECK(cudaStreamBeginCapture(c->st, cudaStreamCaptureModeThreadLocal))) rc = -1;
            else {
                int r1 = record_step(c, f, id, pos);
                int r2 = CU_CHECK(cudaStreamEndCapture(c->st, &g));
                rc = r1 || r2 ? -1 : 0;
                if (!rc) {
                    rc = CU_CHECK(cudaGraphInstantiate(&c->graph, g, 0));
                    cudaGraphDestroy(g);
                    if (!rc) c->graph_ok = 1;
                }
            }
            c->capturing = 0;
            memset(&c->pend, 0, sizeof c->pend);
            c->res_pending = 0;
            c->moe_pend_on = 0;
            c->moe_res_add = NULL;
            c->pnorm_on = 0;
            act_invalidate(c);
        }
        if (!rc) rc = CU_CHECK(cudaGraphLaunch(c->graph, c->st));
    }
    c->readback = 1;
    if (rc || CU_CHECK(cudaStreamSynchronize(c->st))) { be_fail(c, "greedy decode step"); return -1; }
    c->dev_pos_known = 1; c->dev_pos = pos + 1; c->dev_tok = c->h_token[0];
    return c->h_token[0];
}

extern "C" int backend_cuda_persist_state(backend *be) { return CB(be)->persist; }
extern "C" long backend_cuda_norm_folds(backend *be) { return CB(be)->n_norm_fold; }

/* ---- sampled decode: forward + the device sampler, one graph ------------------------------- */
static int record_sample_step(cuda_be *c, fwd_state *f, int32_t id, int pos, int sort) {
    if (record_forward_step(c, f, id, pos) != 0) return -1;
    flush(c);
    float *dl = dev_of(c, f->logits);
    if (!dl ||
        cuda_sample(dl, f->hp->n_vocab, c->d_sparams, c->d_hist, 0, c->d_ids, c->d_pos, c->d_sio, c->samp_scratch, sort,
                    c->st) ||
        CU_CHECK(cudaMemcpyAsync(c->h_sio, c->d_sio, sizeof(cuda_sample_io), cudaMemcpyDeviceToHost, c->st)))
        return -1;
    return c->failed ? -1 : 0;
}

extern "C" int32_t backend_cuda_decode_sample(backend *be, fwd_state *f, int32_t id, int pos,
                                              const struct strata_sampler_params *sp, uint64_t rng[4],
                                              const int32_t *history) {
    cuda_be *c = CB(be);
    if (pos < 0 || pos >= c->n_ctx || id < 0 || id >= c->hp.n_vocab || c->failed || !sp || !rng || (pos && !history))
        return -1;
    flush(c); act_invalidate(c);
    cuda_sample_params dp;
    cuda_sample_params_set(&dp, sp);
    /* the device must hold this step's token and position, history[0..pos), the parameters and
     * the RNG state; after a sampled step it holds them already (one graph launch, no upload) */
    int up = 0;
    if (!(c->dev_pos_known && c->dev_pos == pos && c->dev_tok == id && c->hist_len == pos)) {
        int32_t hv[2] = { id, pos };
        if (CU_CHECK(cudaMemcpyAsync(c->d_ids, &hv[0], sizeof(int32_t), cudaMemcpyHostToDevice, c->st)) ||
            CU_CHECK(cudaMemcpyAsync(c->d_pos, &hv[1], sizeof(int), cudaMemcpyHostToDevice, c->st)) ||
            (pos > 0 &&
             CU_CHECK(cudaMemcpyAsync(c->d_hist, history, (size_t)pos * sizeof(int32_t), cudaMemcpyHostToDevice, c->st))))
            return -1;
        up = 1;
    }
    if (!c->sparams_known || memcmp(&dp, &c->sparams, sizeof dp)) {
        if (CU_CHECK(cudaMemcpyAsync(c->d_sparams, &dp, sizeof dp, cudaMemcpyHostToDevice, c->st))) return -1;
        c->sparams = dp; c->sparams_known = 1; up = 1;
    }
    cuda_sample_io io;
    if (memcmp(c->h_sio->rng, rng, sizeof io.rng)) {
        memset(&io, 0, sizeof io);
        memcpy(io.rng, rng, sizeof io.rng);
        if (CU_CHECK(cudaMemcpyAsync(c->d_sio, &io, sizeof io, cudaMemcpyHostToDevice, c->st))) return -1;
        up = 1;
    }
    if (up && CU_CHECK(cudaStreamSynchronize(c->st))) return -1;
    persist_ready(c, f);
    /* temperature 0 (greedy with a repetition penalty): the graph without the candidate sort */
    const int gi = dp.temperature > 0.0f;
    c->readback = 0;
    int rc = 0;
    if (!env_bool(ENV_CUDA_GRAPH)) {
        c->capturing = 1;
        rc = record_sample_step(c, f, id, pos, gi);
        c->capturing = 0;
    } else {
        if (!c->sgraph_ok[gi]) {
            cudaGraph_t g;
            c->capturing = 1;
            if (CU_CHECK(cudaStreamBeginCapture(c->st, cudaStreamCaptureModeThreadLocal))) rc = -1;
            else {
                int r1 = record_sample_step(c, f, id, pos, gi);
                int r2 = CU_CHECK(cudaStreamEndCapture(c->st, &g));
                rc = r1 || r2 ? -1 : 0;
                if (!rc) {
                    rc = CU_CHECK(cudaGraphInstantiate(&c->sgraph[gi], g, 0));
                    cudaGraphDestroy(g);
                    if (!rc) c->sgraph_ok[gi] = 1;
                }
            }
            c->capturing = 0;
            memset(&c->pend, 0, sizeof c->pend);
            c->res_pending = 0;
            act_invalidate(c);
        }
        if (!rc) rc = CU_CHECK(cudaGraphLaunch(c->sgraph[gi], c->st));
    }
    c->readback = 1;
    if (rc || CU_CHECK(cudaStreamSynchronize(c->st))) { be_fail(c, "sampled decode step"); return -1; }
    memcpy(rng, c->h_sio->rng, sizeof io.rng);
    c->dev_pos_known = 1; c->dev_pos = pos + 1; c->dev_tok = c->h_sio->token; c->hist_len = pos + 1;
    return c->h_sio->token;
}
