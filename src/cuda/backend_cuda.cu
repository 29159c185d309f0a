/* The CUDA backend: the blocks of src/model/backend.h as launch sequences, weight upload, and
 * the decode step as a CUDA graph.
 *
 * Every buffer a pass touches lives in device memory and belongs to the backend: the
 * activations (fwd_buffer_sizes for the widest pass seen: cuda_reserve), the quantized activation rows, the KV
 * cache, the logits; only token ids go in and logits (into pinned host memory) or one token id
 * come out.
 *
 * Each block is written out as the kernels it launches, the fused ones chosen where they
 * apply; every fused form computes the bits of the separate ops (STRATA_CUDA_FUSE=0 launches
 * the separate ops instead; the e2e test compares both with the CPU):
 *   RMSNorm + activation quantization   a layer input is normalized and quantized for the
 *                                       matvec that reads it in one launch
 *   q, k, v matvecs                     one launch over the concatenated rows (same input)
 *   q norm + k norm                     one launch
 *   RoPE + KV store (+ attention)       one launch; at T = 1 inside the attention
 *   attention + quantization for wo     the attention writes wo's activation rows
 *   gate, up matvecs + SwiGLU           one launch (the warp of row r computes both dots); at
 *                                       T = 1 it also writes h quantized for down
 *   matvec + residual add               the add is the matvec's epilogue (wo, down)
 *   MoE combine + residual add          likewise
 * Within a block, `act_state` says what the quantized activation buffer holds, so a second
 * matvec of the same input and format reuses it.
 *
 * Graph decode (decode_step): forward(T = 1) + argmax (or the device sampler) is captured
 * once; in that capture every kernel reads the position (d_pos) and the token (d_ids) from
 * device memory, the attention grid spans n_ctx, and the draw writes the next token into
 * d_ids and advances d_pos, so replaying the graph is the whole step.
 *
 * Graph verify (verify_step): a greedy speculative window of T = 1..8 columns, forward(T) +
 * an argmax per column, is captured the same way, one graph per T, its ids and position read
 * from device memory (d_vin), so one graph serves every position; only the T ids come back. */
#include "cuda_internal.h"
#include "cuda_common.cuh"
#include "expf_host.cuh"
#include "dev_alloc.cuh"
#include "sample_cuda.h"
#include <cuda_profiler_api.h>
#include <math.h>
#include <stdlib.h>
extern "C" {
#include "core/env.h"
#include "core/util.h"
#include "model/forward.h"
#include "model/attn_order.h"
#include "quant/r4.h"
#include "quant/q6p.h"
}
#include "q6p_cuda.h"
#include <unistd.h>

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
        cuda_attnp_expf_init(&t, mode))
        return -1;
    g_expf_mode = mode;
    if (mode < 0)
        fprintf(stderr, "strata: CUDA backend: this host's expf is not the algorithm the GPU reproduces; SwiGLU, "
                        "GeGLU and attention use CUDA's expf (results differ from the CPU by ulps)\n");
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

/* STRATA_CUDA_MOE_R4 at 1 or 2 (cuda_moe_r4_env; 3 runs as 1): an IQ2_XXS / IQ3_XXS expert tensor's R4 copy (src/quant/r4.h) beside its
 * upload, repacked on the host's cores into *buf (grown as needed) and copied up; skipped (dev_r4 stays NULL, the kernels keep
 * the format's path) when the copy would leave less than 2 GiB of the GPU free or an allocation fails. -1: a row did
 * not repack (not a valid row of the format) or the copy failed. The upload decides for the whole model first
 * (r4_budget_ok). */
static int r4_eligible(const weight *x) { return x->n_expert > 1 && r4_supported(x->type) && x->n_in % 256 == 0; }
static size_t r4_copy_bytes(const weight *x) { return r4_row_bytes(x->n_in) * (size_t)(x->n_out * x->n_expert); }
/* all of a model's R4 copies or none: made only where the weights (wbytes), every copy and a reserve for the KV
 * cache and the scratch (an eighth of the GPU, at least 2 GiB) fit in the free memory before the upload, so the
 * copies never take the memory a later tensor or the context needs (a 12 GB model with 17 GB of copies on a 24 GB
 * card: no copies) */
static int r4_budget_ok(const named_weight *list, int n, uint64_t wbytes) {
    uint64_t need = wbytes;
    for (int i = 0; i < n; i++)
        if (r4_eligible(list[i].w)) need += r4_copy_bytes(list[i].w);
    size_t fr = 0, tot = 0;
    if (cudaMemGetInfo(&fr, &tot) != cudaSuccess) { cudaGetLastError(); return 0; }
    return r4_budget_fits(fr, tot, need);
}
/* a repacked copy of bytes fits beside what is loaded: at least 2 GiB of the GPU stay free after it */
static int dev_copy_room(size_t bytes) {
    size_t fr = 0, tot = 0;
    if (cudaMemGetInfo(&fr, &tot) != cudaSuccess) { cudaGetLastError(); return 0; }
    return fr >= bytes + ((size_t)2 << 30);
}
/* a weight's repacked copy (host bytes h) into a new device allocation, x->dev_r4: 0 done or skipped (the allocation
 * failed: dev_r4 stays NULL, the kernels keep the original rows), -1 the copy to the GPU failed (nothing kept) */
static int dev_copy_put(weight *x, const void *h, size_t bytes) {
    void *d = NULL;
    if (cuda_dev_malloc(&d, bytes) != cudaSuccess) { cudaGetLastError(); return 0; }
    if (cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice) != cudaSuccess) { cudaGetLastError(); cuda_dev_free(d); return -1; }
    x->dev_r4 = d;
    return 0;
}
static int upload_r4(weight *x, uint8_t **buf, size_t *cap) {
    const int64_t rows = x->n_out * x->n_expert;
    const size_t bytes = r4_copy_bytes(x);
    if (!dev_copy_room(bytes)) return 0;
    if (*cap < bytes) {
        uint8_t *nb = (uint8_t *)st_realloc(*buf, bytes);
        if (!nb) return 0;
        *buf = nb; *cap = bytes;
    }
    long nt = sysconf(_SC_NPROCESSORS_ONLN);
    if (r4_repack_rows(x->type, x->data, *buf, rows, x->n_in, nt > 0 ? (int)nt : 1)) return -1;
    return dev_copy_put(x, *buf, bytes);
}

/* STRATA_Q6_PLANAR (q6p_cuda.h): the output head's planar copy (src/quant/q6p.h) beside its upload, in
 * dev_r4 (the field holds a weight's repacked copy for the one-column kernels: R4 for IQ experts, planes
 * for a Q6_K head); a tied head (the embedding's bytes) gets one too, the embedding keeps its rows. Skipped
 * (dev_r4 stays NULL, the head keeps the Q6_K kernels) where the copy would leave less than 2 GiB free or an
 * allocation fails; -1 (err written) when the copy to the GPU fails. */
static int upload_q6p(weight *x, char *err, size_t errlen) {
    if (x->type != TYPE_Q6_K || x->n_expert > 1 || x->n_in % QK_K || x->dev_r4) return 0;
    const size_t bytes = q6p_row_bytes(x->n_in) * (size_t)x->n_out;
    if (!dev_copy_room(bytes)) return 0;
    uint8_t *h = (uint8_t *)st_malloc(bytes);
    if (!h) return 0;
    int rc = q6p_repack_rows(x->data, h, x->n_out, x->n_in) ? 0 : dev_copy_put(x, h, bytes);
    st_free(h);
    if (rc) {
        snprintf(err, errlen, "the planar copy of the output head (STRATA_Q6_PLANAR) to the GPU failed");
        return -1;
    }
    if (x->dev_r4) cuda_matvec_q6p_init();
    return 0;
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
    const int r4 = cuda_moe_r4_env() != 0 && r4_budget_ok(list, n, total);
    uint8_t *r4buf = NULL;
    size_t r4cap = 0;
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
        if (r4 && r4_eligible(x) && upload_r4(x, &r4buf, &r4cap)) {
            snprintf(err, errlen, "the R4 copy of %s (STRATA_CUDA_MOE_R4) failed: %s", list[i].name,
                     cudaGetErrorString(cudaGetLastError()));
            st_free(r4buf);
            st_free(list);
            cuda_weights_free(hp, w);
            return -1;
        }
        done += x->nbytes;
        if (progress) progress(total ? (float)done / (float)total : 1.0f, user);
    }
    if (w->output.data == w->tok_embd.data) w->output.dev = w->tok_embd.dev;
    st_free(r4buf);
    st_free(list);
    if (cuda_q6p_env() && upload_q6p(&w->output, err, errlen)) {
        cuda_weights_free(hp, w);
        return -1;
    }
    return 0;
}

/* Frees without allocating (a free path that needs memory leaks when memory is short): the
 * weights list_weights names, walked in slices of a stack array. */
extern "C" void cuda_weights_free(const hparams *hp, model_weights *w) {
    cuda_dev_free(w->output.dev_r4); w->output.dev_r4 = NULL;   /* a tied head's planar copy is not in the list */
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
        for (int i = 0; i < n; i++) {
            cuda_dev_free(list[i].w->dev); list[i].w->dev = NULL;
            cuda_dev_free(list[i].w->dev_r4); list[i].w->dev_r4 = NULL;
        }
    }
}

/* ---- the backend state ---------------------------------------------------------------------- */
typedef struct cuda_kv {
    void **kc, **vc;            /* per layer, device: [n_ctx] rows of row_bytes */
    int n_ctx;
    int kv8;                    /* 0: f16 rows of kv_dim values; 1: int8, kv_dim / 32 act_q8_0 blocks (the CPU's
                                   int8 cache byte for byte; cuda_internal.h) */
    size_t row_bytes;           /* one position's K (or V) row of one layer */
} cuda_kv;

typedef struct {
    hparams hp;
    const model_weights *w;
    int n_ctx;
    cudaStream_t st;
    size_t kv_dim;
    cuda_kv kv;                 /* this backend's own cache (backend.kv points here) */
    float *rope_global, *rope_local;   /* device: [n_ctx][n_rot/2][cos, sin] */
    /* activations, device: cap_T columns each (fwd_buffer_sizes), grown by cuda_reserve */
    fwd_sizes sz;
    int cap_T;
    float *x, *xb, *q, *k, *v, *att, *hb, *hb2, *moe_out, *logits;
    float *h_logits;            /* pinned host: the rows head() read back */
    void *act;                  /* device: cap_T quantized activation rows */
    void *act2;                 /* the same size; the T = 1 gate/up writes h's rows here, then the two swap */
    size_t act_cap;
    float *att_partial;         /* device scratch of the attention */
    float *att_tc_part;         /* STRATA_CUDA_ATTN_TC: the split launch's partials (attn_tc.cu) */
    int attn_tc;                /* the tensor-core order (cuda_device_choose: the table, STRATA_CUDA_ATTN_TC) */
    int attn_tc_dec;            /* STRATA_CUDA_ATTN_TC_DEC bits: its decode launches (same bits) */
    int twice;                  /* STRATA_CUDA_TWICE (an instrument): CUDA_TWICE_NORM and _QKV here */
    int nn_layer;               /* CUDA_MOE_FAST_NEXTNORM: the layer (n_layers: the head) whose input norm the
                                   last MoE down launch of this pass wrote into xb / act (one column); -1 none */
    int attn_tc_kv8;            /* STRATA_CUDA_ATTN_TC_KV8: int8 caches take the order too */
    int *att_counters;          /* device: [FWD_MAX_T][n_heads] split counters of the attention */
    int *argmax_scratch;        /* device: partials + counter of the argmax */
    float *mm_ws;               /* device: the split matmul's partials (CUDA_MM_WS_FLOATS, mm.cu) */
    /* the column table of a pass over several sequences (cuda_cols): per column its position,
     * per layer and column its sequence's K/V cache; uploaded by the embed block */
    int *d_cpos;                /* device [FWD_MAX_T] */
    void **d_ckv;               /* device [n_layers][2][FWD_MAX_T]: K then V pointers */
    void **h_ckv;               /* host staging of the same */
    int cols_kv8;               /* the format of the table's caches (one per pass: cols_on needs them equal) */
    int h_cpos[FWD_MAX_T];
    int cols_on;                /* the pass in flight uses the table */
    int cols_max_pos;           /* the table's largest position (how many chunks the attention spans) */
    float *embd_f32;            /* device: dequantized embeddings when their format has no device dequantizer */
    int32_t *d_ids;             /* device: token ids of the pass [FWD_MAX_T] */
    int *d_pos;                 /* device: position of token 0 (graph mode) */
    int32_t *h_token;           /* pinned host: the token id the greedy graph returns */
    int32_t *d_picks, *h_picks; /* device / pinned host [FWD_MAX_T]: head_argmax's ids */
    /* the device sampler (sample.cu) */
    int32_t *d_hist;            /* device: token history [n_ctx] (repetition penalty) */
    cuda_sample_params *d_sparams;
    cuda_sample_io *d_sio, *h_sio;   /* device / pinned host: token + RNG state of the last draw */
    void *samp_scratch;         /* device: cuda_sample_scratch_bytes(n_vocab) */
    cuda_sample_params sparams; /* what d_sparams holds (sparams_known) */
    int sparams_known, hist_len;       /* d_hist holds history[0..hist_len) */
    /* Mixture-of-Experts scratch (moe.cu) */
    float *moe_logits;          /* [CUDA_MOE_COLS][X] */
    void *moe_act_r;            /* router activations when the router weight is quantized */
    cuda_moe moe_bufs;          /* act_pairs, groups, pair_of, wts, h, act_h, y */
    /* wide passes' MoE (STRATA_CUDA_MOE_MM = N > 0: passes of at least N tokens): buffers for
     * FWD_MAX_T tokens, made at first use */
    cuda_moe_wide moe_wide;     /* m: logits [FWD_MAX_T][X], act_pairs .. y for FWD_MAX_T * k pairs */
    int moe_wide_state;         /* 0 not tried, 1 allocated, -1 unavailable (slices) */
    int moe_wide_min;           /* STRATA_CUDA_MOE_MM: the narrowest pass that takes the wide path */
    int moe_mv_max;             /* STRATA_CUDA_MOE_MV: the widest pass whose wide path runs chunks */
    int moe_mv_chunk;           /* STRATA_CUDA_MOE_MV_CHUNK: 2, 4 or 8 pairs a chunk, 0 auto */
    int moe_router_tg;          /* STRATA_CUDA_MOE_ROUTER_TG: tokens per CTA of the wide router */
    /* graphs: [0] greedy (argmax), [1] sampler at temperature 0 (penalty + argmax: no sort),
     * [2] sampler */
    /* decode step graphs [kind][class]: kind 0 argmax, 1 greedy sampler, 2 sampler, 3 forward only;
     * class 0 while the step's positions lie within the first chunk of the attention order (its
     * attention launch never reaches the chunk path, so it may keep the exact path's V tile:
     * STRATA_CUDA_ATTN_VPRE), 1 past it */
    cudaGraphExec_t graph[4][2];
    int graph_ok[4][2];
    uint32_t *d_mask;           /* device: the allowed tokens of a masked step (n_vocab bits), at first use */
    /* the greedy verify windows (cuda_verify_step): vgraph[T] holds a window of T columns; its
     * ids and position come from d_vin (uploaded from pinned h_vin before each replay), its
     * argmax ids go through d_picks to pinned h_picks */
    cudaGraphExec_t vgraph[FWD_INIT_T + 1][2];   /* [T][class], classes as graph's */
    int vgraph_ok[FWD_INIT_T + 1][2];
    int32_t *d_vin, *h_vin;     /* device / pinned host [FWD_INIT_T + 1]: the window's ids, then its position */
    long verify_counts[3];      /* captures, graph replays, eager windows (tests: backend_cuda_verify_counts) */
    int dev_pos_known, dev_pos, dev_tok;   /* what d_pos / d_ids hold after the last step */
    int capturing;              /* the kernels read d_pos / d_ids */
    int fuse;                   /* STRATA_CUDA_FUSE */
    int attn_serial;            /* STRATA_CUDA_ATTN=serial: one CTA walks a head's chunks (same bits) */
    int att_cols;               /* columns per launch of the attention's chunk path (STRATA_CUDA_ATT_COLS) */
    int attn_qtile;             /* STRATA_CUDA_ATTN_QTILE: wide passes' attention in query tiles (2: also the
                                 * sequences of more than 8 columns inside passes of several) */
    int failed;
} cuda_be;

static inline cuda_be *CB(backend *be) { return (cuda_be *)be->impl; }

static void be_fail(cuda_be *c, const char *what) {
    if (!c->failed) fprintf(stderr, "strata: CUDA backend: %s (%s)\n", what, cuda_last_error());
    c->failed = 1;
}

/* The attention's scratch covers c->att_cols columns per launch (STRATA_CUDA_ATT_COLS, at least
 * ATT_COLS); a wider pass launches in slices when the kernel needs the scratch (a column
 * attending over more than one chunk of 256). */
#define ATT_COLS 8

static void graphs_drop(cuda_be *c) {
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 2; k++)
            if (c->graph_ok[i][k]) { cudaGraphExecDestroy(c->graph[i][k]); c->graph_ok[i][k] = 0; }
    for (int i = 0; i <= FWD_INIT_T; i++)
        for (int k = 0; k < 2; k++)
            if (c->vgraph_ok[i][k]) { cudaGraphExecDestroy(c->vgraph[i][k]); c->vgraph_ok[i][k] = 0; }
}

/* The activation buffers for T columns and the logits for n_logits rows (fwd_buffer_sizes),
 * grown when a wider pass or a head of more rows comes: contents kept (a test may have set x),
 * the captured step graphs dropped (they hold the old pointers; the next step captures again). */
static int cuda_reserve(cuda_be *c, int T, int n_logits, char *err, size_t errlen) {
    if (T <= c->cap_T && (size_t)n_logits * c->hp.n_vocab <= c->sz.logits) return 0;
    if (c->capturing) { snprintf(err, errlen, "a wider pass while a graph is captured"); return -1; }
    const hparams *hp = &c->hp;
    if (T < c->cap_T) T = c->cap_T;
    fwd_sizes nz, lz;
    fwd_buffer_sizes(hp, T, &nz);
    /* the logits: the rows a head call asks for (a prompt's passes ask for one) */
    fwd_buffer_sizes(hp, n_logits, &lz);
    nz.logits = lz.logits > c->sz.logits ? lz.logits : c->sz.logits;
    int64_t n_max = hp->n_embd;
    int64_t cand[] = { (int64_t)hp->n_heads * hp->head_dim, hp->n_ff, hp->n_ff_exp };
    for (int i = 0; i < 3; i++) if (cand[i] > n_max) n_max = cand[i];
    /* the quantized activation rows: the largest n_in of any matvec, T rows, worst format */
    size_t act_cap = (size_t)T * ((size_t)n_max * 4 + 64);
    float **bufs[] = { &c->x, &c->xb, &c->q, &c->k, &c->v, &c->att, &c->hb, &c->hb2, &c->moe_out, &c->logits };
    size_t ns[] = { nz.x, nz.xb, nz.q, nz.k, nz.v, nz.att, nz.hb, nz.hb2, nz.moe_out, nz.logits };
    size_t os[] = { c->sz.x, c->sz.xb, c->sz.q, c->sz.k, c->sz.v, c->sz.att, c->sz.hb, c->sz.hb2, c->sz.moe_out, c->sz.logits };
    const char *names[] = { "the activation buffers (x)", "the activation buffers (xb)", "the activation buffers (q)",
                            "the activation buffers (k)", "the activation buffers (v)", "the activation buffers (att)",
                            "the activation buffers (hb)", "the activation buffers (hb2)",
                            "the activation buffers (moe_out)", "the activation buffers (logits)" };
    const int NB = (int)(sizeof ns / sizeof ns[0]);
    float *nb[16] = { 0 };
    void *nact = NULL, *nact2 = NULL;
    float *nhl = NULL;
    if (c->st && CU_CHECK(cudaStreamSynchronize(c->st))) { snprintf(err, errlen, "%s", cuda_last_error()); return -1; }
    /* a buffer is replaced only when it grows */
    const int grow_cols = T > c->cap_T;
    int bad = 0;
    for (int i = 0; i < NB && !bad; i++)
        if (ns[i] > os[i] && (grow_cols || i == NB - 1) &&
            cuda_dev_alloc_named((void **)&nb[i], ns[i] * sizeof(float), names[i], err, errlen))
            bad = 1;
    if (!bad && grow_cols && (cuda_dev_alloc_named(&nact, act_cap, "the quantized activation buffer", err, errlen) ||
                              cuda_dev_alloc_named(&nact2, act_cap, "the second quantized activation buffer", err, errlen)))
        bad = 1;
    if (!bad && nz.logits > c->sz.logits && cuda_pinned_malloc((void **)&nhl, nz.logits * sizeof(float)) != cudaSuccess) {
        snprintf(err, errlen, "not enough pinned host memory for the logits read-back buffer");
        bad = 1;
    }
    if (bad) {
        for (int i = 0; i < NB; i++) cuda_dev_free(nb[i]);
        cuda_dev_free(nact); cuda_dev_free(nact2);
        return -1;
    }
    graphs_drop(c);
    for (int i = 0; i < NB; i++) {
        if (!nb[i]) continue;
        if (*bufs[i] && os[i] && CU_CHECK(cudaMemcpy(nb[i], *bufs[i], os[i] * sizeof(float), cudaMemcpyDeviceToDevice)))
            bad = 1;
        cuda_dev_free(*bufs[i]);
        *bufs[i] = nb[i];
    }
    if (nact) {
        cuda_dev_free(c->act); cuda_dev_free(c->act2);
        c->act = nact; c->act2 = nact2; c->act_cap = act_cap;
    }
    if (nhl) { cuda_pinned_free(c->h_logits); c->h_logits = nhl; }
    c->sz = nz;
    c->cap_T = T;
    if (bad) { snprintf(err, errlen, "%s", cuda_last_error()); return -1; }
    return 0;
}

/* the head's n rows of logits (grown here: outside a graph capture, which asks for one) */
static int logits_ok(cuda_be *c, int n) {
    char err[256];
    if (n > FWD_MAX_LOGITS) { be_fail(c, "a head of more than FWD_MAX_LOGITS rows"); return 0; }
    /* growing: at least twice the rows held (8, 16, 32, 64), so a server's rows growing one a
     * step do not wait for the device and allocate at every step */
    const int held = (int)(c->sz.logits / (size_t)c->hp.n_vocab);
    int want = n;
    if (n > held) {
        const int dbl = 2 * held < FWD_MAX_LOGITS ? 2 * held : FWD_MAX_LOGITS;
        if (want < dbl) want = dbl;
    }
    if (cuda_reserve(c, c->cap_T, want, err, sizeof err) == 0) return 1;
    fprintf(stderr, "strata: CUDA backend: logits of %d rows: %s\n", n, err);
    be_fail(c, "logits buffer");
    return 0;
}

/* a block of a pass wider than the buffers (only embed grows them) */
static int cols_ok(cuda_be *c, int T) {
    if (T <= c->cap_T) return 1;
    be_fail(c, "a block of a pass wider than its embed");
    return 0;
}

/* ---- matvec launches ------------------------------------------------------------------------- */
/* What the quantized activation buffer c->act holds (rows of src, n values, T rows, format fmt),
 * known within one block. */
typedef struct { const float *src; int64_t n; int T, fmt; } act_state;
static const act_state ACT_NONE = { NULL, 0, 0, -1 };

static int act_fmt_of(const weight *W) {
    int af = -1;
    if (!W->data || cuda_type_info(W->type, NULL, &af, NULL)) return -1;
    return af;
}

/* c->act := x (T rows of n) in format af, unless it holds that already */
static int ensure_act(cuda_be *c, act_state *as, const float *x, int64_t n, int T, int af) {
    if (as->src == x && as->n == n && as->T == T && as->fmt == af) return 0;
    if (cuda_act_row_bytes(af, n) * T > c->act_cap) { be_fail(c, "matvec: activation buffer too small"); return -1; }
    if (cuda_act_quantize(af, x, n, T, c->act, c->st)) { be_fail(c, "activation quantization"); return -1; }
    as->src = x; as->n = n; as->T = T; as->fmt = af;
    return 0;
}

/* The mv_group of n weights of one format and n_in that read x: y[i] = W[i] x (+= into add[i]). */
static int mv_group_make(cuda_be *c, mv_group *g, const weight *const *W, float *const *y, float *const *add, int n) {
    int blck, af, bs;
    memset(g, 0, sizeof *g);
    if (cuda_type_info(W[0]->type, &blck, &af, &bs)) { be_fail(c, "matvec: weight type without a CUDA kernel"); return -1; }
    g->row_bytes = (size_t)(W[0]->n_in / blck) * (size_t)bs;
    for (int i = 0; i < n; i++) {
        if (!W[i]->dev) { be_fail(c, "matvec: weight not on the device"); return -1; }
        g->W[i] = (const uint8_t *)W[i]->dev; g->y[i] = y[i]; g->add_to[i] = add ? add[i] : NULL;
        g->n_out[i] = W[i]->n_out;
        g->row_start[i + 1] = g->row_start[i] + (int)W[i]->n_out;
    }
    g->n = n;
    g->ws = c->mm_ws; g->ws_floats = c->mm_ws ? CUDA_MM_WS_FLOATS : 0;
    return af;
}

/* One launch: the n weights (same format and n_in) over x's T rows. */
static void mv_launch(cuda_be *c, act_state *as, const weight *const *W, float *const *y, float *const *add, int n,
                      const float *x, int T) {
    mv_group g;
    int af = mv_group_make(c, &g, W, y, add, n);
    if (af < 0 || ensure_act(c, as, x, W[0]->n_in, T, af)) return;
    if (n == 1 && T == 1 && W[0]->dev_r4 && W[0]->type == TYPE_Q6_K && W[0]->n_expert <= 1) {
        /* STRATA_Q6_PLANAR: the head's planar copy (upload_q6p) where the launch takes it */
        mv_group p = g;
        p.W[0] = (const uint8_t *)W[0]->dev_r4;
        p.row_bytes = q6p_row_bytes(W[0]->n_in);
        if (cuda_matvec_q6p_group(&p, W[0]->n_in, c->act, T, c->st) == 0) return;
    }
    if (cuda_matvec_group(W[0]->type, &g, W[0]->n_in, c->act, T, c->st)) be_fail(c, "matvec launch");
}

/* y = W x (+ into add when add is set); one weight */
static void mv1(cuda_be *c, act_state *as, const weight *W, const float *x, int T, float *y, float *add) {
    mv_launch(c, as, &W, &y, add ? &add : NULL, 1, x, T);
}

/* Weights that read the same x, in order: consecutive ones of one format share a launch (up to
 * three; STRATA_CUDA_FUSE=0: one each). */
static void mv_many(cuda_be *c, act_state *as, const weight *const *W, float *const *y, int n, const float *x, int T) {
    for (int i = 0; i < n;) {
        int j = i + 1;
        while (c->fuse && j < n && j - i < 3 && W[j]->type == W[i]->type && W[j]->n_in == W[i]->n_in) j++;
        mv_launch(c, as, W + i, y + i, NULL, j - i, x, T);
        i = j;
    }
}

/* y = rmsnorm(x) * w over rows of n; with `next` (the matvec that reads y) quantized for it in
 * the same launch when its format has int8 activations. */
static void norm_for(cuda_be *c, act_state *as, const float *x, const weight *w, float *y, int rows, int n,
                     const weight *next) {
    *as = ACT_NONE;
    int af = c->fuse && next ? act_fmt_of(next) : -1;
    if (af >= 0 && af != ACT_F32 && cuda_act_row_bytes(af, n) && cuda_act_row_bytes(af, n) * rows <= c->act_cap) {
        /* STRATA_CUDA_TWICE bit 32 (an instrument): a column's launch twice (x -> y, act: idempotent) */
        for (int rep = 0; rep < (rows == 1 && (c->twice & CUDA_TWICE_NORM) ? 2 : 1); rep++)
            if (cuda_rmsnorm_quant(x, (const float *)w->dev, y, rows, n, c->hp.rms_eps, c->act, af, c->st))
                be_fail(c, "rmsnorm");
        as->src = y; as->n = n; as->T = rows; as->fmt = af;
        return;
    }
    if (cuda_rmsnorm(x, (const float *)w->dev, y, rows, n, c->hp.rms_eps, c->st)) be_fail(c, "rmsnorm");
}

/* CUDA_MOE_FAST_NEXTNORM: the input norm of consumer `who` (a layer's attention, n_layers: the head),
 * where the previous MoE down launch wrote it (blk_ffn, moe_next_norm_here): xb and act's Q8_K row
 * of the one column. 1: as says so and no norm is launched; 0: norm_for as before. Either way the
 * mark is spent. */
static int nn_take(cuda_be *c, int who, act_state *as, int rows, int n) {
    const int hit = c->nn_layer == who && rows == 1;
    c->nn_layer = -1;
    if (!hit) return 0;
    as->src = c->xb; as->n = n; as->T = 1; as->fmt = ACT_Q8_K;
    return 1;
}

/* ---- the blocks ------------------------------------------------------------------------------ */
/* STRATA_CUDA_PROFILE=W,N: the N-th eager pass of at least W columns runs between
 * cudaProfilerStart and cudaProfilerStop (ncu --profile-from-start off profiles that pass's
 * kernels alone; docs/BENCHMARKS.md). The pass ends at its head, or at the next pass's embed. */
static int prof_w = -1, prof_n, prof_on;
static void prof_stop(cuda_be *c) {
    if (!prof_on) return;
    cudaStreamSynchronize(c->st);
    cudaProfilerStop();
    prof_on = 0;
}
static void prof_pass(cuda_be *c, int T) {
    if (prof_w < 0) {
        prof_w = 0;
        const char *v = env_str(ENV_CUDA_PROFILE);
        if (v && *v && sscanf(v, "%d,%d", &prof_w, &prof_n) != 2) prof_w = 0;
    }
    prof_stop(c);
    if (prof_w > 0 && T >= prof_w && prof_n > 0 && --prof_n == 0) {
        cudaStreamSynchronize(c->st);
        cudaProfilerStart();
        prof_on = 1;
    }
}

static void blk_embed(backend *be, const int32_t *ids, const fwd_batch *b) {
    cuda_be *c = CB(be);
    c->nn_layer = -1;
    if (!c->capturing) { prof_pass(c, b->T); cuda_pdl_pass(b->T, c->st); }
    const weight *te = &c->w->tok_embd;
    if (b->T > c->cap_T) {
        char err[256];
        if (cuda_reserve(c, b->T, 0, err, sizeof err)) {
            fprintf(stderr, "strata: CUDA backend: a %d-column pass: %s\n", b->T, err);
            be_fail(c, "activation buffers");
            return;
        }
    }
    /* several sequences: one column table for the pass, so each layer's RoPE + KV store and
     * attention are one launch each for all of them */
    c->cols_on = 0;
    c->cols_max_pos = 0;
    int one_fmt = 1;   /* one launch serves caches of one format (mixed: a launch per sequence) */
    for (int s = 1; s < b->n_seq; s++)
        one_fmt &= ((const cuda_kv *)b->seq[s].kv)->kv8 == ((const cuda_kv *)b->seq[0].kv)->kv8;
    if (b->n_seq > 1 && !c->capturing && c->fuse && one_fmt) {
        c->cols_kv8 = ((const cuda_kv *)b->seq[0].kv)->kv8;
        const int L = c->hp.n_layers;
        for (int s = 0, t = 0; s < b->n_seq; s++) {
            const cuda_kv *kv = (const cuda_kv *)b->seq[s].kv;
            for (int i = 0; i < b->seq[s].n; i++, t++) {
                c->h_cpos[t] = b->seq[s].pos0 + i;
                if (c->h_cpos[t] > c->cols_max_pos) c->cols_max_pos = c->h_cpos[t];
                for (int l = 0; l < L; l++) {
                    c->h_ckv[((size_t)l * 2) * FWD_MAX_T + t] = kv->kc[l];
                    c->h_ckv[((size_t)l * 2 + 1) * FWD_MAX_T + t] = kv->vc[l];
                }
            }
        }
        if (CU_CHECK(cudaMemcpyAsync(c->d_cpos, c->h_cpos, sizeof c->h_cpos, cudaMemcpyHostToDevice, c->st)) ||
            CU_CHECK(cudaMemcpyAsync(c->d_ckv, c->h_ckv, (size_t)L * 2 * FWD_MAX_T * sizeof(void *),
                                     cudaMemcpyHostToDevice, c->st))) {
            be_fail(c, "column table");
            return;
        }
        c->cols_on = 1;
    }
    if (!c->capturing) {
        if (CU_CHECK(cudaMemcpyAsync(c->d_ids, ids, (size_t)b->T * sizeof(int32_t), cudaMemcpyHostToDevice, c->st))) {
            be_fail(c, "ids");
            return;
        }
        c->dev_pos_known = 0;
    }
    /* formats without a device dequantizer use the f32 copy made at creation */
    const void *table = te->dev;
    int type = te->type;
    if (!cuda_embed_supported(type)) { table = c->embd_f32; type = TYPE_F32; }
    if (!table || cuda_embed(table, type, te->n_in, c->d_ids, b->T, c->x, c->hp.embd_scale, c->st)) be_fail(c, "embed");
}

/* the tensor-core order for a cache of this format: STRATA_CUDA_ATTN_TC (the device table), and
 * for an int8 cache STRATA_CUDA_ATTN_TC_KV8 */
static int attn_tc_on(const cuda_be *c, int head_dim, int kv8) {
    return c->attn_tc && (!kv8 || c->attn_tc_kv8) && cuda_attention_tc_ok(head_dim);
}

/* Does sequence S's attention at layer l take the tensor-core decode launch (T = 1, RoPE and the KV
 * store folded in)? ml: the largest last position the launch is sized for (a graph's launch reads
 * the position on the device: the step recorded within the first chunk is replayed only there). */
static int attn_tc_dec_here(cuda_be *c, const fwd_seq *S, int *ml_out) {
    const hparams *hp = &c->hp;
    const cuda_kv *kv = (const cuda_kv *)S->kv;
    const int *dp = c->capturing ? c->d_pos : NULL;
    const int ml = dp ? (S->pos0 + S->n <= ATTN_CHUNK && kv->n_ctx > ATTN_CHUNK ? ATTN_CHUNK - 1 : kv->n_ctx - 1)
                      : S->pos0 + S->n - 1;
    if (ml_out) *ml_out = ml;
    return attn_tc_on(c, hp->head_dim, kv->kv8) && c->fuse && S->n == 1 &&
           cuda_attention_tc_dec_ok(hp->n_heads, hp->n_kv_heads, hp->head_dim, ml, c->attn_tc_dec, c->att_tc_part != NULL);
}

/* STRATA_CUDA_ATTN_TC_DEC bit 512: the q / k head norms of a one-column pass inside the decode
 * launch (the same rows by the same operations: norm_row_warp) instead of their own launch */
static int attn_norms_in_dec(cuda_be *c, const layer_weights *L, const fwd_batch *b, int dec) {
    return (c->attn_tc_dec & 512) && b->T == 1 && b->n_seq == 1 && L->q_norm.data && L->k_norm.data &&
           c->hp.head_dim <= 256 && dec;
}

/* STRATA_CUDA_ATTN_TC_DEC bit 1024: wo's act_q8_K rows written by the one-launch decode instead of
 * their own quantization launch, where a CTA's G heads hold exactly one 256-value block (bit 2048:
 * also several). Measured 2026-12-06 (H100): the 1.5B shape (4 x 64 values a CTA: one block) +1.9 %,
 * the 48-layer MoE (8 x 128: four blocks at the tail of each of 4 CTAs) -0.8 % */
static int attn_actk_in_dec(cuda_be *c, const fwd_batch *b, int dec, int ml) {
    const hparams *hp = &c->hp;
    const int gv = hp->n_heads / hp->n_kv_heads * hp->head_dim;
    return (c->attn_tc_dec & 1024) && b->T == 1 && b->n_seq == 1 && gv % 256 == 0 && (gv == 256 || (c->attn_tc_dec & 2048)) &&
           dec && !cuda_attention_tc_dec_split(ml);
}

/* RoPE, KV store and attention of one sequence's columns [t0, t0 + n); norms: the decode launch takes
 * the q / k head norms (attn_norms_in_dec said so and blk_attn launched none) */
static void attn_seq(cuda_be *c, int l, const fwd_seq *S, int t0, int af_o, int norms) {
    const hparams *hp = &c->hp;
    const layer_weights *L = &c->w->layers[l];
    const int H = hp->n_heads, KVH = hp->n_kv_heads, HD = hp->head_dim, T = S->n;
    cuda_kv *kv = (cuda_kv *)S->kv;
    if (kv->n_ctx > c->n_ctx) { be_fail(c, "a sequence's KV cache is longer than the pass backend's scratch"); return; }
    void *kc = kv->kc[l], *vc = kv->vc[l];
    const int kv8 = kv->kv8;
    float *q = c->q + (size_t)t0 * H * HD, *k = c->k + (size_t)t0 * KVH * HD, *v = c->v + (size_t)t0 * KVH * HD;
    float *out = c->att + (size_t)t0 * H * HD;
    void *act = af_o >= 0 ? (uint8_t *)c->act + (size_t)t0 * cuda_act_row_bytes(af_o, (int64_t)H * HD) : NULL;
    const int *dp = c->capturing ? c->d_pos : NULL;
    const float *cs = L->sliding ? c->rope_local : c->rope_global;
    const float scale = hp->attn_scale;
    const int window = L->sliding ? hp->sliding_window : 0;
    /* STRATA_CUDA_ATTN_TC: the tensor-core order (attn_tc.cu) for every width */
    const int tc = attn_tc_on(c, HD, kv8);
    /* T = 1: RoPE and the KV store inside the attention kernel (the tensor-core order: its
     * decode launches, STRATA_CUDA_ATTN_TC_DEC: below 256 positions one, deeper a CTA per chunk
     * and the merge launch); ml: the largest last position (attn_tc_dec_here) */
    int ml;
    const int tc_dec = attn_tc_dec_here(c, S, &ml);
    const int folded = c->fuse && T == 1 && (!tc || tc_dec);
    cuda_rope_fold fold = { k, v, cs, cs, hp->n_rot, hp->rope_neox };
    if (!folded) {
        if (c->fuse) {
            if (cuda_rope_qk_store(q, k, v, kc, vc, kv8, T, H, KVH, HD, hp->n_rot, hp->rope_neox, S->pos0, dp, cs, cs, c->st))
                be_fail(c, "rope + kv store");
        } else if (cuda_rope(q, T, H, HD, hp->n_rot, hp->rope_neox, S->pos0, dp, cs, c->st) ||
                   cuda_rope(k, T, KVH, HD, hp->n_rot, hp->rope_neox, S->pos0, dp, cs, c->st) ||
                   cuda_kv_store(k, v, kc, vc, kv8, T, (int)c->kv_dim, S->pos0, dp, c->st))
            be_fail(c, "rope, kv store");
    }
    if (tc_dec) {
        if (cuda_attention_tc_dec(q, k, v, kc, vc, kv8, H, KVH, HD, S->pos0, dp, ml, scale, window, cs, hp->n_rot,
                                  hp->rope_neox, kv->n_ctx, c->att_tc_part, out, act, af_o,
                                  norms ? (const float *)L->q_norm.dev : NULL, norms ? (const float *)L->k_norm.dev : NULL,
                                  hp->rms_eps, c->attn_tc_dec, c->st))
            be_fail(c, "attention (tensor cores, decode)");
        return;
    }
    if (tc) {
        if (cuda_attention_tc(q, kc, vc, kv8, T, H, KVH, HD, S->pos0, dp, ml, scale, window, kv->n_ctx, c->att_tc_part, out, act,
                              af_o, c->attn_tc_dec & 52, c->st))
            be_fail(c, "attention (tensor cores)");
        return;
    }
    /* a wide pass: query tiles sharing the K and V tiles (attn_prompt.cu, the same bits) */
    if (!folded && !dp && c->attn_qtile && cuda_attention_qtile_ok(T, HD, S->pos0, window)) {
        if (cuda_attention_qtile(q, kc, vc, kv8, T, H, KVH, HD, S->pos0, scale, window, out, act, af_o, c->st))
            be_fail(c, "attention (query tiles)");
        return;
    }
    /* the scratch holds c->att_cols columns: slices of that when a column spans several chunks */
    const int step = cuda_attention_uses_scratch(ml, window) ? c->att_cols : T;
    const size_t arb = af_o >= 0 ? cuda_act_row_bytes(af_o, (int64_t)H * HD) : 0;
    int rc = 0;
    for (int t0 = 0; t0 < T && !rc; t0 += step) {
        const int n = T - t0 < step ? T - t0 : step;
        const size_t qo = (size_t)t0 * H * HD;
        void *a = act ? (uint8_t *)act + (size_t)t0 * arb : NULL;
        rc = cuda_attention(q + qo, kc, vc, kv8, n, H, KVH, HD, S->pos0 + t0, dp, dp ? ml : -1, scale, window, kv->n_ctx, c->att_partial,
                            c->att_counters, out + qo, a, af_o, folded ? &fold : NULL, NULL, c->attn_serial, c->st);
    }
    if (rc) be_fail(c, "attention");
}

static void blk_attn(backend *be, int l, const fwd_batch *b) {
    cuda_be *c = CB(be);
    const hparams *hp = &c->hp;
    const layer_weights *L = &c->w->layers[l];
    const int T = b->T, E = hp->n_embd, H = hp->n_heads, KVH = hp->n_kv_heads, HD = hp->head_dim;
    act_state as;
    if (!cols_ok(c, T)) return;
    if (!nn_take(c, l, &as, T, E)) norm_for(c, &as, c->x, &L->attn_norm, c->xb, T, E, &L->wq);
    const weight *qkv[3] = { &L->wq, &L->wk, &L->wv };
    float *y[3] = { c->q, c->k, c->v };
    /* STRATA_CUDA_TWICE bit 64 (an instrument): a column's q / k / v launch twice (xb -> q, k, v: idempotent) */
    for (int rep = 0; rep < (T == 1 && (c->twice & CUDA_TWICE_QKV) ? 2 : 1); rep++) mv_many(c, &as, qkv, y, 3, c->xb, T);
    /* per-head q and k norms (qwen3, gemma3): one launch for both, or (bit 512) inside the decode launch */
    /* a one-column pass of one sequence: does its attention take the decode launch (ml: its sizing)? */
    int ml = 0;
    const int dec = b->T == 1 && b->n_seq == 1 && attn_tc_dec_here(c, &b->seq[0], &ml);
    const int norms_dec = attn_norms_in_dec(c, L, b, dec);
    if (norms_dec) {
        /* none here: attn_seq's decode launch norms the rows it reads */
    } else if (c->fuse && L->q_norm.data && L->k_norm.data) {
        if (cuda_rmsnorm2(c->q, (const float *)L->q_norm.dev, c->q, T * H, c->k, (const float *)L->k_norm.dev, c->k,
                          T * KVH, HD, hp->rms_eps, c->st))
            be_fail(c, "q/k rmsnorm");
    } else {
        if (L->q_norm.data && cuda_rmsnorm(c->q, (const float *)L->q_norm.dev, c->q, T * H, HD, hp->rms_eps, c->st))
            be_fail(c, "q rmsnorm");
        if (L->k_norm.data && cuda_rmsnorm(c->k, (const float *)L->k_norm.dev, c->k, T * KVH, HD, hp->rms_eps, c->st))
            be_fail(c, "k rmsnorm");
    }
    /* the attention writes wo's activation rows too when wo's blocks fit in a head */
    int af_o = c->fuse ? act_fmt_of(&L->wo) : -1;
    if (!((af_o == ACT_Q8_0 || af_o == ACT_Q8_1 || (af_o == ACT_Q8_2 && HD % 64 == 0) ||
           (af_o == ACT_Q8_K && attn_actk_in_dec(c, b, dec, ml))) && HD % 32 == 0 &&
          cuda_act_row_bytes(af_o, (int64_t)H * HD) * T <= c->act_cap))
        af_o = -1;
    if (c->cols_on && b->n_seq > 1) {
        /* several sequences, one launch each: the column table gives every column its position
         * and its sequence's cache (the same kernels, so the same bits as a pass per sequence) */
        for (int s = 0; s < b->n_seq; s++)
            if (((const cuda_kv *)b->seq[s].kv)->n_ctx > c->n_ctx) { be_fail(c, "a sequence's KV cache is longer than the pass backend's scratch"); return; }
        cuda_cols cols = { c->d_cpos, c->d_ckv + (size_t)l * 2 * FWD_MAX_T, c->d_ckv + ((size_t)l * 2 + 1) * FWD_MAX_T };
        const float *cs = L->sliding ? c->rope_local : c->rope_global;
        const int window = L->sliding ? hp->sliding_window : 0;
        int rc = cuda_rope_qk_store_cols(c->q, c->k, c->v, NULL, NULL, c->cols_kv8, T, H, KVH, HD, hp->n_rot, hp->rope_neox, 0, NULL, cs,
                                         cs, &cols, c->st);
        const int step = cuda_attention_uses_scratch(c->cols_max_pos, window) ? c->att_cols : T;
        const size_t arb = af_o >= 0 ? cuda_act_row_bytes(af_o, (int64_t)H * HD) : 0;
        /* STRATA_CUDA_ATTN_TC: each sequence's columns by the tensor-core launch (its bits do not
         * depend on the launch's other rows, so a launch per sequence gives a pass's bits) */
        const int tc = attn_tc_on(c, HD, c->cols_kv8);
        for (int s = 0, t0 = 0; tc && s < b->n_seq && !rc; t0 += b->seq[s].n, s++) {
            const fwd_seq *S = &b->seq[s];
            const cuda_kv *kv = (const cuda_kv *)S->kv;
            const size_t qo = (size_t)t0 * H * HD;
            rc = cuda_attention_tc(c->q + qo, kv->kc[l], kv->vc[l], kv->kv8, S->n, H, KVH, HD, S->pos0, NULL, -1, hp->attn_scale, window,
                                   kv->n_ctx, c->att_tc_part, c->att + qo, af_o >= 0 ? (uint8_t *)c->act + (size_t)t0 * arb : NULL,
                                   af_o, c->attn_tc_dec & 52, c->st);
        }
        /* a sequence of more than 8 columns (a prompt's chunk riding in the pass) takes the
         * query tiles sharing K/V loads (attn_prompt.cu), as a pass of its own would; the
         * columns between such sequences take the column kernel, a run at a time. The same bits
         * either way (docs/KERNELS.md), so which path a column takes changes nothing. */
        int run0 = 0;
        for (int s = 0, t0 = 0; !tc && s <= b->n_seq && !rc; s++) {
            const fwd_seq *S = s < b->n_seq ? &b->seq[s] : NULL;
            const cuda_kv *kv = S ? (const cuda_kv *)S->kv : NULL;
            const int tile = S && c->attn_qtile >= 2 && cuda_attention_qtile_ok(S->n, HD, S->pos0, window) &&
                             !(kv->kv8 && HD % 32);
            if (!S || tile)   /* the run of column-kernel columns [run0, t0) */
                for (int a = run0; a < t0 && !rc; a += step) {
                    const int n = t0 - a < step ? t0 - a : step;
                    const size_t qo = (size_t)a * H * HD;
                    cuda_cols sl = { cols.pos + a, cols.kc + a, cols.vc + a };
                    rc = cuda_attention(c->q + qo, NULL, NULL, c->cols_kv8, n, H, KVH, HD, 0, NULL, c->cols_max_pos, hp->attn_scale,
                                        window, c->n_ctx, c->att_partial, c->att_counters, c->att + qo,
                                        af_o >= 0 ? (uint8_t *)c->act + (size_t)a * arb : NULL, af_o, NULL, &sl, c->attn_serial,
                                        c->st);
                }
            if (!S) break;
            if (tile) {
                const size_t qo = (size_t)t0 * H * HD;
                rc = cuda_attention_qtile(c->q + qo, kv->kc[l], kv->vc[l], kv->kv8, S->n, H, KVH, HD, S->pos0, hp->attn_scale,
                                          window, c->att + qo, af_o >= 0 ? (uint8_t *)c->act + (size_t)t0 * arb : NULL, af_o, c->st);
                run0 = t0 + S->n;
            }
            t0 += S->n;
        }
        if (rc) be_fail(c, "rope + kv store + attention (several sequences)");
    } else
        for (int s = 0, t0 = 0; s < b->n_seq; t0 += b->seq[s].n, s++) attn_seq(c, l, &b->seq[s], t0, af_o, norms_dec);
    as = ACT_NONE;
    if (af_o >= 0) { as.src = c->att; as.n = (int64_t)H * HD; as.T = T; as.fmt = af_o; }
    if (L->post_attn_norm.data || !c->fuse) {                   /* (gemma3) xb = norm(wo att); x += xb */
        mv1(c, &as, &L->wo, c->att, T, c->xb, NULL);
        if (L->post_attn_norm.data &&
            cuda_rmsnorm(c->xb, (const float *)L->post_attn_norm.dev, c->xb, T, E, hp->rms_eps, c->st))
            be_fail(c, "post-attention rmsnorm");
        if (cuda_add(c->x, c->xb, T * E, c->st)) be_fail(c, "add");
    } else
        mv1(c, &as, &L->wo, c->att, T, c->xb, c->x);               /* x += wo att: the add as the epilogue */
}

/* Mixture-of-Experts FFN of xb (normed, in as) into moe_out: the router matvec (or the routing
 * kernel's fused F32 router), then moe.cu's routing, grouped gate/up and down; the combine
 * (with the residual add into add_to when set) follows. A pass wider than CUDA_MOE_COLS runs in
 * slices of that many tokens (a token's result never depends on the others of its slice). */
/* The wide path's buffers (FWD_MAX_T tokens), once: 1, or 0 when the path is off
 * (STRATA_CUDA_MOE_MM=0, formats without the grouped matmul, no memory: the slices run). */
static_assert(FWD_MAX_T <= CUDA_MOE_WIDE_MAX_T, "the wide MoE path's bound");
static int moe_wide_ready(cuda_be *c, const weight *G, const weight *D, int raf, int gaf) {
    if (c->moe_wide_state) return c->moe_wide_state > 0;
    c->moe_wide_state = -1;
    const hparams *hp = &c->hp;
    const int64_t E = G->n_in, F = G->n_out;
    int daf;
    const int mm_on = c->moe_wide_min > 0 && cuda_moe_wide_ok(G->type, D->type, E, F), mv_on = c->moe_mv_max > CUDA_MOE_COLS;
    if ((!mm_on && !mv_on) || (raf != ACT_F32 && raf != gaf) || cuda_type_info(D->type, NULL, &daf, NULL))
        return 0;
    const size_t P = (size_t)FWD_MAX_T * (size_t)hp->n_experts_used, X = (size_t)hp->n_experts;
    const size_t maxt = (size_t)cuda_moe_wide_max_tiles((int)P, (int)X);
    const size_t maxg = (size_t)cuda_moe_wide_max_groups((int)P, (int)X, 2);   /* the smallest chunks; >= X */
    cuda_moe_wide *w = &c->moe_wide;
    char err[256];
    void *lg = NULL;
    if (cudaStreamSynchronize(c->st) != cudaSuccess ||
        cuda_dev_alloc_named(&lg, (size_t)FWD_MAX_T * X * sizeof(float), "the wide MoE router logits", err, sizeof err) ||
        cuda_dev_alloc_named(&w->m.act_pairs, P * cuda_act_row_bytes(gaf, E), "the wide MoE pair rows", err, sizeof err) ||
        cuda_dev_alloc_named((void **)&w->m.groups, (1 + MOE_GROUP_INTS * maxg) * sizeof(int), "the wide MoE groups", err, sizeof err) ||
        cuda_dev_alloc_named((void **)&w->m.pair_of, P * sizeof(int), "the wide MoE pair map", err, sizeof err) ||
        cuda_dev_alloc_named((void **)&w->m.wts, P * sizeof(float), "the wide MoE weights", err, sizeof err) ||
        cuda_dev_alloc_named((void **)&w->m.h, P * (size_t)F * sizeof(float), "the wide MoE gate / h rows", err, sizeof err) ||
        cuda_dev_alloc_named((void **)&w->hu, P * (size_t)F * sizeof(float), "the wide MoE up rows", err, sizeof err) ||
        cuda_dev_alloc_named(&w->m.act_h, P * cuda_act_row_bytes(daf, F), "the wide MoE h activations", err, sizeof err) ||
        cuda_dev_alloc_named((void **)&w->m.y, P * (size_t)E * sizeof(float), "the wide MoE down rows", err, sizeof err) ||
        cuda_dev_alloc_named((void **)&w->sel, P * sizeof(int), "the wide MoE selections", err, sizeof err) ||
        cuda_dev_alloc_named((void **)&w->tiles, (1 + 2 * maxt + P) * sizeof(int), "the wide MoE tiles", err, sizeof err)) {
        w->m.logits = (const float *)lg;
        fprintf(stderr, "strata: the wide MoE path is off (%s); slices of %d tokens run\n", err, CUDA_MOE_COLS);
        return 0;   /* what was allocated is freed with the backend */
    }
    w->m.logits = (const float *)lg;
    c->moe_wide_state = 1;
    return 1;
}

/* All T tokens of a wide pass at once (STRATA_CUDA_MOE_MV = M: T <= M, else STRATA_CUDA_MOE_MM = N:
 * T >= N): the router over T, the routing, then each expert's pairs in chunks of 4 or 8
 * (STRATA_CUDA_MOE_MV_CHUNK) through the grouped decode kernels (T <= M) or as the grouped
 * tensor-core matmuls of moe.cu; the combine.
 * 0, or -1 when it did not run. */
static int moe_run_wide(cuda_be *c, const weight *R, const weight *G, const weight *U, const weight *D, int T,
                        int raf, int gaf, float *add_to) {
    if (T <= CUDA_MOE_COLS || T > FWD_MAX_T) return -1;
    const int mv = T <= c->moe_mv_max;
    if ((!mv && (c->moe_wide_min <= 0 || T < c->moe_wide_min)) || !moe_wide_ready(c, G, D, raf, gaf) ||
        (!mv && !cuda_moe_wide_ok(G->type, D->type, G->n_in, G->n_out)))   /* cuda_mm_set(0) since (tests, A/B) */
        return -1;
    const int64_t E = G->n_in;
    cuda_moe_wide w = c->moe_wide;
    /* an F32 router of a fusable width runs in moe.cu (moe_router_wide_kernel: all T tokens in one
     * launch), others here as the matvec in slices (STRATA_CUDA_FUSE=0: always here) */
    const int wide_router = c->fuse && cuda_moe_router_fusable(R->type, E);
    if (!wide_router) {
        mv_group g;
        float *ly = (float *)w.m.logits;
        if (mv_group_make(c, &g, &R, &ly, NULL, 1) < 0) return 0;   /* failed: be_fail was called */
        const void *ract = raf == ACT_F32 ? (const void *)c->xb : c->act;   /* raf == gaf: the experts' rows */
        if (cuda_matvec_group(R->type, &g, E, ract, T, c->st)) { be_fail(c, "moe router (wide)"); return 0; }
    }
    w.m.X = (int)R->n_out; w.m.k = c->hp.n_experts_used; w.m.T = T; w.m.E = E; w.m.F = G->n_out;
    w.m.type_gu = G->type; w.m.type_down = D->type;
    w.m.gate = G->dev; w.m.up = U->dev; w.m.down = D->dev;
    w.m.act_x = c->act; w.m.out = c->moe_out;
    w.m.router_f32 = wide_router ? (const float *)R->dev : NULL; w.m.x_f32 = c->xb;
    /* chunks: auto = 4 pairs while the pass averages at most 2 pairs an expert (H200, 48-layer
     * Qwen3-30B-A3B shape: 16 tokens 754 -> 830 tok/s with 4 instead of 8; 64 tokens 1,405 /
     * 1,438 in the engine, 1,682 / 1,590 in the server: 8 kept there), else 8 */
    const int chunk = c->moe_mv_chunk ? c->moe_mv_chunk : T * c->hp.n_experts_used <= 2 * (int)R->n_out ? 4 : CUDA_MOE_COLS;
    w.mv = mv ? chunk : 0;
    w.router_tg = c->moe_router_tg;
    if (cuda_moe_experts_wide(&w, c->st)) { be_fail(c, "moe experts (wide)"); return 0; }
    if (cuda_moe_combine(&w.m, add_to, c->st)) be_fail(c, "moe combine (wide)");
    return 0;
}

/* `norm`: the ffn norm's weight when the router launch takes the norm (CUDA_MOE_FAST_NORM, blk_ffn
 * decided by moe_norm_here), else NULL */
static void moe_run(cuda_be *c, act_state *as, const layer_weights *L, int T, float *add_to, const weight *norm,
                    const weight *nnorm) {
    const weight *R = &L->gate_inp, *G = &L->gate_exps, *U = &L->up_exps, *D = &L->down_exps;
    const int X = (int)R->n_out, k = c->hp.n_experts_used;
    const int64_t E = G->n_in, F = G->n_out;
    int rb, raf, rbs, gaf;
    if (!c->moe_logits || !R->dev || !G->dev || !U->dev || !D->dev || G->type != U->type || X != c->hp.n_experts ||
        cuda_type_info(R->type, &rb, &raf, &rbs) || cuda_type_info(G->type, NULL, &gaf, NULL) ||
        !cuda_type_supported(D->type) || R->n_in != E || E % rb) {
        be_fail(c, "moe: unsupported expert layout or types (gate and up must share a format)");
        return;
    }
    /* router logits [n][X]: an F32 router of a supported width runs inside the routing kernel
     * (STRATA_CUDA_FUSE=0: its own matvec) */
    const int fused_router = c->fuse && cuda_moe_router_fusable(R->type, E);
    /* x in the experts' activation format (usually already there: the ffn norm quantized it) */
    if (ensure_act(c, as, c->xb, E, T, gaf)) return;
    if (moe_run_wide(c, R, G, U, D, T, raf, gaf, add_to) == 0) return;
    const size_t gab = cuda_act_row_bytes(gaf, E);
    for (int t0 = 0; t0 < T && !c->failed; t0 += CUDA_MOE_COLS) {
        const int n = T - t0 < CUDA_MOE_COLS ? T - t0 : CUDA_MOE_COLS;
        const float *xb = c->xb + (size_t)t0 * E;
        if (!fused_router) {
            const void *ract = xb;                   /* F32 / F16 / BF16 routers read the f32 rows */
            if (raf != ACT_F32) {
                if (raf == gaf) ract = (const uint8_t *)c->act + (size_t)t0 * gab;
                else if (cuda_act_quantize(raf, xb, E, n, c->moe_act_r, c->st)) { be_fail(c, "moe router activations"); return; }
                else ract = c->moe_act_r;
            }
            mv_group g;
            float *ly = c->moe_logits;
            if (mv_group_make(c, &g, &R, &ly, NULL, 1) < 0) return;
            if (cuda_matvec_group(R->type, &g, E, ract, n, c->st)) { be_fail(c, "moe router"); return; }
        }
        cuda_moe m = c->moe_bufs;
        m.X = X; m.k = k; m.T = n; m.E = E; m.F = F;
        m.type_gu = G->type; m.type_down = D->type;
        m.gate = G->dev; m.up = U->dev; m.down = D->dev;
        m.gate_r4 = G->dev_r4; m.up_r4 = U->dev_r4; m.down_r4 = D->dev_r4;
        m.logits = c->moe_logits; m.act_x = (const uint8_t *)c->act + (size_t)t0 * gab; m.out = c->moe_out + (size_t)t0 * E;
        m.router_f32 = fused_router ? (const float *)R->dev : NULL;
        m.x_f32 = xb;
        if (norm && fused_router && T == 1) {   /* blk_ffn skipped norm_for: the router launch writes xb and act */
            m.norm_x = c->x; m.norm_w = (const float *)norm->dev; m.norm_eps = c->hp.rms_eps;
        }
        if (nnorm && T == 1) {   /* blk_ffn's moe_next_norm_here: the next norm by the down launch */
            m.nn_w = (const float *)nnorm->dev; m.nn_y = c->xb; m.nn_act = c->act; m.nn_eps = c->hp.rms_eps;
        }
        if (cuda_moe_block(&m, add_to ? add_to + (size_t)t0 * E : NULL, c->st)) be_fail(c, "moe experts");
    }
}

/* T = 1 MoE: does the router launch take the ffn norm (CUDA_MOE_FAST_NORM)? Only where norm_for
 * would launch rmsnorm_q256_kernel (Q8_K activations for the experts, fused launches on) and
 * moe_run the F32 router inside the routing launch. */
static int moe_norm_here(cuda_be *c, const layer_weights *L, int T, int E) {
    const weight *R = &L->gate_inp;
    return T == 1 && c->fuse && R->dev && L->ffn_norm.dev && act_fmt_of(&L->gate_exps) == ACT_Q8_K &&
           cuda_act_row_bytes(ACT_Q8_K, E) <= c->act_cap && !(c->twice & CUDA_TWICE_NORM) &&
           cuda_moe_norm_fusable(R->type, E, (int)R->n_out, ACT_Q8_K, c->x, c->xb, R->dev) && (int)R->n_out == c->hp.n_experts;
}

/* T = 1 MoE (CUDA_MOE_FAST_NEXTNORM): the norm weight of what reads x after layer l's FFN (layer l + 1's
 * attention norm, or the output norm before the head) when the down launch can compute it: where
 * norm_for would launch rmsnorm_q256_kernel for that consumer (its weight quantizes to Q8_K, fused
 * launches on) and the combine adds into x in the down kernel (add_here); else NULL. */
static const weight *moe_next_norm_here(cuda_be *c, int l, int T, int E, int add_here) {
    if (T != 1 || !c->fuse || !add_here || (c->twice & CUDA_TWICE_NORM)) return NULL;
    const int last = l + 1 >= c->hp.n_layers;
    const weight *nw = last ? &c->w->output_norm : &c->w->layers[l + 1].attn_norm;
    const weight *nx = last ? &c->w->output : &c->w->layers[l + 1].wq;
    if (!nw->dev || !nx->dev || act_fmt_of(nx) != ACT_Q8_K || cuda_act_row_bytes(ACT_Q8_K, E) > c->act_cap ||
        !cuda_moe_next_norm_ok(E, c->x, c->xb))
        return NULL;
    return nw;
}

static void blk_ffn(backend *be, int l, const fwd_batch *b) {
    cuda_be *c = CB(be);
    const hparams *hp = &c->hp;
    const layer_weights *L = &c->w->layers[l];
    const int T = b->T, E = hp->n_embd;
    act_state as;
    if (!cols_ok(c, T)) return;
    const int post = L->post_ffn_norm.data != NULL;
    if (L->gate_inp.data) {                                      /* Mixture-of-Experts */
        const int nf = moe_norm_here(c, L, T, E);
        if (nf) {   /* the router launch computes the norm and quantizes it (CUDA_MOE_FAST_NORM) */
            as.src = c->xb; as.n = E; as.T = 1; as.fmt = ACT_Q8_K;
        } else
            norm_for(c, &as, c->x, &L->ffn_norm, c->xb, T, E, &L->gate_exps);
        const int add_here = c->fuse && !post;                   /* the combine adds into x itself */
        const weight *nn = moe_next_norm_here(c, l, T, E, add_here);
        moe_run(c, &as, L, T, add_here ? c->x : NULL, nf ? &L->ffn_norm : NULL, nn);
        if (nn && !c->failed) c->nn_layer = l + 1;
        if (!add_here) {
            if (post && cuda_rmsnorm(c->moe_out, (const float *)L->post_ffn_norm.dev, c->moe_out, T, E, hp->rms_eps, c->st))
                be_fail(c, "post-ffn rmsnorm");
            if (cuda_add(c->x, c->moe_out, T * E, c->st)) be_fail(c, "add");
        }
        return;
    }
    const int F = hp->n_ff;
    norm_for(c, &as, c->x, &L->ffn_norm, c->xb, T, E, &L->gate);
    const weight *gu[2] = { &L->gate, &L->up };
    float *y[2] = { c->hb, c->hb2 };
    /* the fused gate/up + SwiGLU launch is a matvec: a wide pass that has the tensor-core
     * matmul runs gate and up as one matmul launch, then the SwiGLU (same bits) */
    const int pair = c->fuse && L->gate.type == L->up.type && L->gate.n_in == L->up.n_in && L->gate.n_out == L->up.n_out &&
                     !(T > 8 && cuda_mm_supported(L->gate.type, L->gate.n_in));
    if (!hp->ffn_gelu && pair) {
        /* gate, up and SwiGLU in one launch into hb */
        mv_group g;
        int af = mv_group_make(c, &g, gu, y, NULL, 2);
        if (af < 0 || ensure_act(c, &as, c->xb, E, T, af)) return;
        g.swiglu = 1; g.swiglu_out = c->hb;
        const int afd = T == 1 ? act_fmt_of(&L->down) : -1;
        if (afd >= 0 && cuda_matvec_swiglu_q32_ok(L->gate.type, afd, F) && cuda_act_row_bytes(afd, F) <= c->act_cap) {
            /* T = 1: h quantized for down in the same launch, into the second buffer, which then
             * becomes the current one */
            if (cuda_matvec_swiglu_q32(L->gate.type, &g, E, c->act, c->act2, afd, c->st)) be_fail(c, "gate/up");
            void *t = c->act; c->act = c->act2; c->act2 = t;
            as.src = c->hb; as.n = F; as.T = 1; as.fmt = afd;
        } else {
            if (cuda_matvec_group(L->gate.type, &g, E, c->act, T, c->st)) be_fail(c, "gate/up");
            as = ACT_NONE;
        }
    } else {
        mv_many(c, &as, gu, y, 2, c->xb, T);
        int rc = hp->ffn_gelu ? cuda_geglu(c->hb, c->hb2, c->hb, T * F, c->st) : cuda_swiglu(c->hb, c->hb2, c->hb, T * F, c->st);
        if (rc) be_fail(c, "gated activation");
    }
    if (post || !c->fuse) {                                      /* (gemma3) xb = norm(down h); x += xb */
        mv1(c, &as, &L->down, c->hb, T, c->xb, NULL);
        if (post && cuda_rmsnorm(c->xb, (const float *)L->post_ffn_norm.dev, c->xb, T, E, hp->rms_eps, c->st))
            be_fail(c, "post-ffn rmsnorm");
        if (cuda_add(c->x, c->xb, T * E, c->st)) be_fail(c, "add");
    } else
        mv1(c, &as, &L->down, c->hb, T, c->xb, c->x);             /* x += down h: the add as the epilogue */
}

/* logits of columns from..T-1 into c->logits (device); read back into h_logits unless a graph
 * is being captured */
static int blk_head(backend *be, const fwd_batch *b, int from) {
    cuda_be *c = CB(be);
    const int E = c->hp.n_embd, n = b->T - from, V = c->hp.n_vocab;
    act_state as;
    if (!cols_ok(c, b->T) || !logits_ok(c, n)) return -1;
    if (from || !nn_take(c, c->hp.n_layers, &as, n, E))
        norm_for(c, &as, c->x + (size_t)from * E, &c->w->output_norm, c->xb, n, E, &c->w->output);
    mv1(c, &as, &c->w->output, c->xb, n, c->logits, NULL);
    if (c->capturing) return c->failed ? -1 : 0;
    prof_stop(c);
    if (CU_CHECK(cudaMemcpyAsync(c->h_logits, c->logits, (size_t)n * V * sizeof(float), cudaMemcpyDeviceToHost, c->st)) ||
        CU_CHECK(cudaStreamSynchronize(c->st)))
        be_fail(c, "logits read-back");
    return c->failed ? -1 : 0;
}

/* the head, then each row's argmax on the device; only the ids come back. From this many rows
 * on, one launch with a CTA per row (cuda_argmax_rows) instead of a 48-CTA launch per row. */
#define ARGMAX_ROWS_MIN 4
static int blk_head_argmax(backend *be, const fwd_batch *b, int from, int32_t *ids) {
    cuda_be *c = CB(be);
    const int E = c->hp.n_embd, n = b->T - from, V = c->hp.n_vocab;
    act_state as;
    if (!cols_ok(c, b->T) || !logits_ok(c, n)) return -1;
    if (from || !nn_take(c, c->hp.n_layers, &as, n, E))
        norm_for(c, &as, c->x + (size_t)from * E, &c->w->output_norm, c->xb, n, E, &c->w->output);
    mv1(c, &as, &c->w->output, c->xb, n, c->logits, NULL);
    if (n >= ARGMAX_ROWS_MIN) {   /* a pass of several rows: one launch, a CTA per row */
        if (cuda_argmax_rows(c->logits, V, n, c->d_picks, c->st)) be_fail(c, "argmax");
    } else
        for (int r = 0; r < n && !c->failed; r++)
            if (cuda_argmax(c->logits + (size_t)r * V, V, c->d_picks + r, NULL, c->argmax_scratch, c->st)) be_fail(c, "argmax");
    prof_stop(c);
    if (c->failed ||
        CU_CHECK(cudaMemcpyAsync(c->h_picks, c->d_picks, (size_t)n * sizeof(int32_t), cudaMemcpyDeviceToHost, c->st)) ||
        CU_CHECK(cudaStreamSynchronize(c->st))) {
        be_fail(c, "argmax read-back");
        return -1;
    }
    memcpy(ids, c->h_picks, (size_t)n * sizeof(int32_t));
    return 0;
}

static const float *cuda_logits_host(backend *be) { return CB(be)->h_logits; }
static void cuda_sync_be(backend *be) {
    cuda_be *c = CB(be);
    if (CU_CHECK(cudaStreamSynchronize(c->st))) be_fail(c, "stream synchronize");
}
/* x[from .. T) to x[0 .. T - from) through xb (the rows may overlap; xb is free after the
 * attention block and holds T rows of at least n_embd) */
static void cuda_keep_cols(backend *be, int from, int T) {
    cuda_be *c = CB(be);
    const size_t bytes = sizeof(float) * (size_t)(T - from) * (size_t)c->hp.n_embd;
    if (!cols_ok(c, T)) return;
    if (CU_CHECK(cudaMemcpyAsync(c->xb, c->x + (size_t)from * c->hp.n_embd, bytes, cudaMemcpyDeviceToDevice, c->st)) ||
        CU_CHECK(cudaMemcpyAsync(c->x, c->xb, bytes, cudaMemcpyDeviceToDevice, c->st)))
        be_fail(c, "keep columns");
}
static int cuda_max_rewind(const backend *be) { (void)be; return 1 << 30; }   /* every position is kept */

/* ---- a step as a CUDA graph: captured at first use, then replayed ----------------------------
 * rec(be, arg) enqueues the step's kernels on c->st with c->capturing set (the kernels read
 * their inputs from device memory, so a replay takes the inputs uploaded before it). With
 * STRATA_CUDA_GRAPH on (the default) the first call captures rec's launches into a graph and
 * instantiates it into *exec (*ok = 1), and every call launches *exec; with it off rec launches
 * the kernels one by one. sync: wait for the step (0: return once launched; the caller
 * synchronizes). On an error the backend fails with `what` and -1 returns; else 1 when this
 * call captured the graph, 0 when not. counts (NULL: none): captures, replays, eager steps. */
typedef int (*step_recorder)(backend *be, const void *arg);
static int graph_step(backend *be, cudaGraphExec_t *exec, int *ok, step_recorder rec, const void *arg, int sync,
                      const char *what, long *counts) {
    cuda_be *c = CB(be);
    const int graph = env_bool(ENV_CUDA_GRAPH);
    int rc = 0, captured = 0;
    cuda_pdl_pass(1, c->st);   /* a step or a verify window: at most FWD_INIT_T columns */
    c->capturing = 1;
    if (!graph) {   /* eager: STRATA_CUDA_PROFILE counts the step as a pass of one column */
        prof_pass(c, 1);
        rc = rec(be, arg);
        prof_stop(c);
    }
    else if (!*ok) {
        cudaGraph_t g;
        if (CU_CHECK(cudaStreamBeginCapture(c->st, cudaStreamCaptureModeThreadLocal))) rc = -1;
        else {
            int r1 = rec(be, arg);
            int r2 = CU_CHECK(cudaStreamEndCapture(c->st, &g));
            rc = r1 || r2 ? -1 : 0;
            if (!rc) {
                rc = CU_CHECK(cudaGraphInstantiate(exec, g, 0));
                if (!rc) { *ok = 1; captured = 1; if (counts) counts[0]++; }
            }
            if (!r2) cudaGraphDestroy(g);
        }
    }
    c->capturing = 0;
    if (!rc && graph) {
        rc = CU_CHECK(cudaGraphLaunch(*exec, c->st));
        if (!rc && counts) counts[1]++;
    } else if (!rc && counts) counts[2]++;
    if (rc || (sync && CU_CHECK(cudaStreamSynchronize(c->st)))) { be_fail(c, what); return -1; }
    return captured;
}

/* ---- the decode step: forward(T = 1) and the draw, one graph ---------------------------------- */
/* The step the graph holds: forward(T = 1) on d_ids / d_pos, then the draw writes the next id
 * into d_ids and advances d_pos, and the id (greedy) or the sampler's io goes to pinned host
 * memory. kind: 0 greedy, 1 sampler without the candidate sort (temperature 0), 2 sampler. */
static int record_step(backend *be, int32_t id, int pos, int kind) {
    cuda_be *c = CB(be);
    if (forward(be, &c->hp, &id, 1, pos, 0) != 0) return -1;
    if (kind == 3) return c->failed ? -1 : 0;   /* the masked step: its argmax follows the graph */
    int rc = kind == 0
        ? cuda_argmax(c->logits, c->hp.n_vocab, c->d_ids, c->d_pos, c->argmax_scratch, c->st) ||
              CU_CHECK(cudaMemcpyAsync(c->h_token, c->d_ids, sizeof(int32_t), cudaMemcpyDeviceToHost, c->st))
        : cuda_sample(c->logits, c->hp.n_vocab, c->d_sparams, c->d_hist, 0, c->d_ids, c->d_pos, c->d_sio,
                      c->samp_scratch, kind == 2, c->st) ||
              CU_CHECK(cudaMemcpyAsync(c->h_sio, c->d_sio, sizeof(cuda_sample_io), cudaMemcpyDeviceToHost, c->st));
    return rc || c->failed ? -1 : 0;
}

struct step_arg { int32_t id; int pos, kind; };
static int record_step_cb(backend *be, const void *arg) {
    const step_arg *a = (const step_arg *)arg;
    return record_step(be, a->id, a->pos, a->kind);
}

/* Replay (capturing at first use) the step graph `kind`; STRATA_CUDA_GRAPH=0 launches the same
 * kernels one by one (they still read d_pos / d_ids). sync 0: return once launched (the caller
 * synchronizes; on an error the backend has failed). */
static int launch_step(backend *be, int32_t id, int pos, int kind, int sync) {
    cuda_be *c = CB(be);
    const step_arg a = { id, pos, kind };
    const int cls = pos + 1 > ATTN_CHUNK;   /* attn_seq sizes the recorded launch from the same positions */
    return graph_step(be, &c->graph[kind][cls], &c->graph_ok[kind][cls], record_step_cb, &a, sync, "decode step", NULL) < 0
               ? -1 : 0;
}

static int run_step(backend *be, int32_t id, int pos, int kind) { return launch_step(be, id, pos, kind, 1); }

/* d_ids / d_pos must hold a greedy step's token and position (after a greedy step they do). */
static int greedy_input(cuda_be *c, int32_t id, int pos) {
    if (c->dev_pos_known && c->dev_pos == pos && c->dev_tok == id) return 0;
    int32_t hv[2] = { id, pos };
    if (CU_CHECK(cudaMemcpyAsync(c->d_ids, &hv[0], sizeof(int32_t), cudaMemcpyHostToDevice, c->st)) ||
        CU_CHECK(cudaMemcpyAsync(c->d_pos, &hv[1], sizeof(int), cudaMemcpyHostToDevice, c->st)) ||
        CU_CHECK(cudaStreamSynchronize(c->st)))
        return -1;
    return 0;
}

static int32_t cuda_decode_step(backend *be, int32_t id, int pos, const backend_sampling *smp) {
    cuda_be *c = CB(be);
    if (pos < 0 || pos >= c->n_ctx || id < 0 || id >= c->hp.n_vocab || c->failed) return -1;
    if (!smp) {
        /* d_ids / d_pos must hold this step's token and position */
        if (greedy_input(c, id, pos)) return -1;
        if (run_step(be, id, pos, 0)) return -1;
        c->dev_pos_known = 1; c->dev_pos = pos + 1; c->dev_tok = c->h_token[0];
        return c->h_token[0];
    }
    if (!smp->p || !smp->rng || (pos && !smp->history)) return -1;
    cuda_sample_params dp;
    cuda_sample_params_set(&dp, smp->p);
    /* the device must hold this step's token and position, history[0..pos), the parameters and
     * the RNG state; after a sampled step it holds them already (one graph launch, no upload) */
    int up = 0;
    if (!(c->dev_pos_known && c->dev_pos == pos && c->dev_tok == id && c->hist_len == pos)) {
        int32_t hv[2] = { id, pos };
        if (CU_CHECK(cudaMemcpyAsync(c->d_ids, &hv[0], sizeof(int32_t), cudaMemcpyHostToDevice, c->st)) ||
            CU_CHECK(cudaMemcpyAsync(c->d_pos, &hv[1], sizeof(int), cudaMemcpyHostToDevice, c->st)) ||
            (pos > 0 && CU_CHECK(cudaMemcpyAsync(c->d_hist, smp->history, (size_t)pos * sizeof(int32_t),
                                                 cudaMemcpyHostToDevice, c->st))))
            return -1;
        up = 1;
    }
    if (!c->sparams_known || memcmp(&dp, &c->sparams, sizeof dp)) {
        if (CU_CHECK(cudaMemcpyAsync(c->d_sparams, &dp, sizeof dp, cudaMemcpyHostToDevice, c->st))) return -1;
        c->sparams = dp; c->sparams_known = 1; up = 1;
    }
    cuda_sample_io io;
    if (memcmp(c->h_sio->rng, smp->rng, sizeof io.rng)) {
        memset(&io, 0, sizeof io);
        memcpy(io.rng, smp->rng, sizeof io.rng);
        if (CU_CHECK(cudaMemcpyAsync(c->d_sio, &io, sizeof io, cudaMemcpyHostToDevice, c->st))) return -1;
        up = 1;
    }
    if (up && CU_CHECK(cudaStreamSynchronize(c->st))) return -1;
    /* temperature 0 (greedy with a repetition penalty): the graph without the candidate sort */
    if (run_step(be, id, pos, dp.temperature > 0.0f ? 2 : 1)) return -1;
    memcpy(smp->rng, c->h_sio->rng, sizeof io.rng);
    c->dev_pos_known = 1; c->dev_pos = pos + 1; c->dev_tok = c->h_sio->token; c->hist_len = pos + 1;
    return c->h_sio->token;
}

/* ---- the greedy verify window: forward(T) and each column's argmax, one graph per T ----------
 * The window the graph holds: forward(T) on the ids and the position in d_vin (every kernel
 * reads them there while capturing, as the decode step's read d_ids / d_pos: RoPE, the KV store
 * and the attention take column t's position as d_pos[0] + t, and the attention's grid spans
 * n_ctx), the head of the T columns, an argmax per column into d_picks (the kernel of the
 * decode step and head_argmax: sample_argmax's rule) and the T ids into pinned h_picks. A
 * window of T <= ATT_COLS columns is one attention launch per layer, so d_pos[0] + t is every
 * column's position (a wider pass would slice the columns). The decode step's d_ids / d_pos
 * are left as they are (dev_pos_known stays true). */
static_assert(FWD_INIT_T <= ATT_COLS, "a verify window is one attention launch per layer");
static int record_verify(backend *be, const int32_t *ids, int T, int pos) {
    cuda_be *c = CB(be);
    const int E = c->hp.n_embd, V = c->hp.n_vocab;
    int32_t *ids_step = c->d_ids;
    int *pos_step = c->d_pos;
    c->d_ids = c->d_vin;
    c->d_pos = c->d_vin + FWD_INIT_T;
    int rc = forward(be, &c->hp, ids, T, pos, T);   /* logits_from = T: the layers, no head */
    c->d_ids = ids_step;
    c->d_pos = pos_step;
    if (rc || c->failed) return -1;
    act_state as;   /* the head: blk_head's launches for columns 0 .. T-1 */
    norm_for(c, &as, c->x, &c->w->output_norm, c->xb, T, E, &c->w->output);
    mv1(c, &as, &c->w->output, c->xb, T, c->logits, NULL);
    for (int r = 0; r < T && !c->failed; r++)
        if (cuda_argmax(c->logits + (size_t)r * V, V, c->d_picks + r, NULL, c->argmax_scratch, c->st)) be_fail(c, "argmax");
    if (c->failed ||
        CU_CHECK(cudaMemcpyAsync(c->h_picks, c->d_picks, (size_t)T * sizeof(int32_t), cudaMemcpyDeviceToHost, c->st)))
        return -1;
    return 0;
}

struct verify_arg { const int32_t *ids; int T, pos; };
static int record_verify_cb(backend *be, const void *arg) {
    const verify_arg *a = (const verify_arg *)arg;
    return record_verify(be, a->ids, a->T, a->pos);
}

/* Upload the window (one copy: ids and position), replay vgraph[T] (captured at the first
 * window of T columns), wait for the ids. STRATA_CUDA_GRAPH=0 launches the same kernels one by
 * one (still reading d_vin). */
static int cuda_verify_step(backend *be, const int32_t *ids, int T, int pos, int32_t *out_ids) {
    cuda_be *c = CB(be);
    if (!ids || !out_ids || T < 1 || T > FWD_INIT_T || pos < 0 || pos + T > c->n_ctx || c->failed) return -1;
    for (int t = 0; t < T; t++)
        if (ids[t] < 0 || ids[t] >= c->hp.n_vocab) return -1;
    if (!logits_ok(c, T)) return -1;   /* T rows of logits: grown (dropping the graphs) before any capture */
    memcpy(c->h_vin, ids, (size_t)T * sizeof(int32_t));
    c->h_vin[FWD_INIT_T] = pos;
    if (CU_CHECK(cudaMemcpyAsync(c->d_vin, c->h_vin, (FWD_INIT_T + 1) * sizeof(int32_t), cudaMemcpyHostToDevice, c->st))) {
        be_fail(c, "verify window upload");
        return -1;
    }
    const verify_arg a = { ids, T, pos };
    const int cls = pos + T > ATTN_CHUNK;
    const int captured = graph_step(be, &c->vgraph[T][cls], &c->vgraph_ok[T][cls], record_verify_cb, &a, 1, "verify step",
                                    c->verify_counts);
    if (captured < 0) return -1;
    memcpy(out_ids, c->h_picks, (size_t)T * sizeof(int32_t));
    return captured;
}

extern "C" void backend_cuda_verify_counts(const backend *be, long *captures, long *replays, long *eager) {
    const cuda_be *c = (const cuda_be *)be->impl;
    if (captures) *captures = c->verify_counts[0];
    if (replays) *replays = c->verify_counts[1];
    if (eager) *eager = c->verify_counts[2];
}

/* A greedy step under a mask (backend_ops.decode_step_masked): the forward graph (kind 3) is
 * launched, the mask computed on the host while it runs, uploaded behind it on the stream, and
 * the argmax skips the tokens it forbids (then the token comes back as in the greedy graph). */
static int32_t cuda_decode_step_masked(backend *be, int32_t id, int pos, const uint8_t *(*mask)(void *), void *user) {
    cuda_be *c = CB(be);
    if (pos < 0 || pos >= c->n_ctx || id < 0 || id >= c->hp.n_vocab || c->failed || !mask) return -1;
    const size_t mbytes = ((size_t)c->hp.n_vocab + 7) / 8;
    if (!c->d_mask) {
        char err[128];
        if (cuda_dev_alloc_named((void **)&c->d_mask, (mbytes + 3) / 4 * 4, "the token mask", err, sizeof err)) {
            fprintf(stderr, "strata: %s\n", err);
            return -1;
        }
    }
    if (greedy_input(c, id, pos)) return -1;
    c->dev_pos_known = 0;
    if (launch_step(be, id, pos, 3, 0)) return -1;
    const uint8_t *bits = mask(user);   /* on the host, while the device runs the forward pass */
    if (!bits || CU_CHECK(cudaMemcpyAsync(c->d_mask, bits, mbytes, cudaMemcpyHostToDevice, c->st)) ||
        cuda_argmax_masked(c->logits, c->hp.n_vocab, c->d_mask, c->d_ids, c->d_pos, c->argmax_scratch, c->st) ||
        CU_CHECK(cudaMemcpyAsync(c->h_token, c->d_ids, sizeof(int32_t), cudaMemcpyDeviceToHost, c->st)) ||
        CU_CHECK(cudaStreamSynchronize(c->st))) {
        cudaStreamSynchronize(c->st);
        if (bits) be_fail(c, "masked decode step");
        return -1;
    }
    c->dev_pos_known = 1; c->dev_pos = pos + 1; c->dev_tok = c->h_token[0];
    return c->h_token[0];
}

/* Rows 0 .. n-1 of every layer's K and V, device to device on dst's stream (both backends are
 * idle between passes: every pass ends with its read-back). d_hist no longer matches dst's
 * history, so the sampler's graph uploads it again. */
static int cuda_kv_copy(backend *dst, const backend *src, int n) {
    cuda_be *d = CB(dst);
    const cuda_be *s = (const cuda_be *)src->impl;
    if (dst == src || n < 0 || n > d->n_ctx || n > s->n_ctx || d->kv_dim != s->kv_dim || d->kv.kv8 != s->kv.kv8 ||
        d->failed)
        return -1;
    size_t bytes = (size_t)n * d->kv.row_bytes;
    for (int l = 0; l < d->hp.n_layers && bytes; l++)
        if (CU_CHECK(cudaMemcpyAsync(d->kv.kc[l], s->kv.kc[l], bytes, cudaMemcpyDeviceToDevice, d->st)) ||
            CU_CHECK(cudaMemcpyAsync(d->kv.vc[l], s->kv.vc[l], bytes, cudaMemcpyDeviceToDevice, d->st)))
            return -1;
    if (CU_CHECK(cudaStreamSynchronize(d->st))) { be_fail(d, "KV copy"); return -1; }
    d->hist_len = 0;
    d->dev_pos_known = 0;
    return 0;
}

/* every layer keeps every position (no ring on the GPU): n_ctx rows of K and of V per layer */
static size_t cuda_kv_bytes(const backend *be, size_t *per_pos) {
    const cuda_be *c = (const cuda_be *)be->impl;
    const size_t pp = 2 * (size_t)c->hp.n_layers * c->kv.row_bytes;
    if (per_pos) *per_pos = pp;
    return pp * (size_t)c->kv.n_ctx;
}

static void cuda_free_be(backend *be);

static const backend_ops cuda_ops = {
    "cuda", blk_embed, blk_attn, blk_ffn, blk_head, cuda_logits_host, blk_head_argmax, cuda_decode_step, cuda_max_rewind,
    cuda_free_be, cuda_kv_copy, cuda_kv_bytes,
    cuda_verify_step,
    cuda_decode_step_masked,
    cuda_sync_be,
    cuda_keep_cols,
};

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

extern "C" backend *backend_cuda_new(const hparams *hp, const model_weights *w, int n_ctx, int kv_int8, char *err,
                                     size_t errlen) {
    if (kv_int8 && hp->head_dim % 32) {
        snprintf(err, errlen, "the int8 KV cache needs head_dim %% 32 == 0 (this model: %d)", hp->head_dim);
        return NULL;
    }
    backend *be = (backend *)st_calloc(1, sizeof *be);
    cuda_be *c = (cuda_be *)st_calloc(1, sizeof *c);
    if (!be || !c) { st_free(be); st_free(c); snprintf(err, errlen, "out of memory"); return NULL; }
    be->ops = &cuda_ops; be->impl = c; be->kv = &c->kv;
    c->hp = *hp; c->w = w; c->n_ctx = n_ctx;
    c->fuse = env_bool(ENV_CUDA_FUSE);
    c->moe_wide_min = (int)env_int(ENV_CUDA_MOE_MM);
    c->moe_mv_max = (int)env_int(ENV_CUDA_MOE_MV);
    c->moe_mv_chunk = (int)env_int(ENV_CUDA_MOE_MV_CHUNK);
    if (c->moe_mv_chunk != 2 && c->moe_mv_chunk != 4 && c->moe_mv_chunk != 8) c->moe_mv_chunk = 0;
    c->moe_router_tg = (int)env_int(ENV_CUDA_MOE_ROUTER_TG);
    c->attn_qtile = (int)env_int(ENV_CUDA_ATTN_QTILE);
    c->attn_tc_dec = (int)env_int(ENV_CUDA_ATTN_TC_DEC) & 3903;   /* bits 1..32, 256, 512, 1024, 2048; bits 4, 16 also pick the split path's merge */
    c->attn_tc_kv8 = env_bool(ENV_CUDA_ATTN_TC_KV8);
    c->twice = (int)env_int(ENV_CUDA_TWICE);   /* an instrument (cuda_backend.h) */
    cuda_moe_set_twice(c->twice);
    cuda_attention_tc_set_twice(c->twice);
    {   /* kernel variants: the device class table, or the switches (device_class.cu) */
        cuda_variants var;
        cuda_device_choose(&var);
        c->attn_serial = var.attn_serial;
        c->attn_tc = var.attn_tc;   /* the tensor-core order: the table's (Hopper) or STRATA_CUDA_ATTN_TC */
        cuda_variants_apply(&var);   /* matvec kernel, dependent launch, decode variants, routing */
    }
    c->kv_dim = (size_t)hp->n_kv_heads * hp->head_dim;
    c->kv.n_ctx = n_ctx;
    c->kv.kv8 = kv_int8 ? 1 : 0;
    c->kv.row_bytes = kv_int8 ? c->kv_dim / 32 * sizeof(act_q8_0) : c->kv_dim * sizeof(uint16_t);
    c->kv.kc = (void **)st_calloc((size_t)hp->n_layers, sizeof(void *));
    c->kv.vc = (void **)st_calloc((size_t)hp->n_layers, sizeof(void *));
    if (!c->kv.kc || !c->kv.vc) { snprintf(err, errlen, "out of memory"); cuda_free_be(be); return NULL; }
    if (cuda_tables_init() || cuda_mm_tables_init() || expf_init() || CU_CHECK(cudaStreamCreateWithFlags(&c->st, cudaStreamNonBlocking))) goto cuda_fail;
    {
        size_t kv_bytes = (size_t)n_ctx * c->kv.row_bytes;
        for (int l = 0; l < hp->n_layers; l++)
            if (cuda_dev_malloc(&c->kv.kc[l], kv_bytes) != cudaSuccess ||
                cuda_dev_malloc(&c->kv.vc[l], kv_bytes) != cudaSuccess) {
                size_t fr = 0, tot = 0;
                cudaMemGetInfo(&fr, &tot);
                snprintf(err, errlen, "not enough GPU memory for the KV cache of %d positions (%.1f MiB; %.1f MiB free): use a smaller --ctx",
                         n_ctx, 2.0 * hp->n_layers * kv_bytes / 1048576.0, fr / 1048576.0);
                cuda_free_be(be);
                return NULL;
            }
        /* activations for FWD_INIT_T columns (fwd_buffer_sizes: the formula every backend uses);
         * a wider pass grows them (cuda_reserve) */
        if (cuda_reserve(c, FWD_INIT_T, FWD_INIT_T, err, errlen)) goto fail;
        {   /* STRATA_CUDA_ATT_COLS: ATT_COLS .. FWD_MAX_T */
            const long ac = env_int(ENV_CUDA_ATT_COLS);
            c->att_cols = ac < ATT_COLS ? ATT_COLS : ac > FWD_MAX_T ? FWD_MAX_T : (int)ac;
        }
        size_t att = cuda_attention_scratch_floats(c->att_cols, hp->n_heads, hp->head_dim, n_ctx);
        /* every allocation names itself when it does not fit (dev_alloc.cu; issue 9's test walks them);
         * the tensor-core order's partials only when it is on (a sequence whose cache it serves
         * without them takes its loop launch: the same bits) */
        const size_t tcb = cuda_attention_tc_scratch_floats(hp->n_heads, hp->head_dim, n_ctx) * sizeof(float);
        if (c->attn_tc && cuda_attention_tc_ok(hp->head_dim) &&
            cuda_dev_alloc_named((void **)&c->att_tc_part, tcb, "the tensor-core attention's partials", err, errlen))
            goto fail;
        if (cuda_dev_alloc_named((void **)&c->att_partial, att * sizeof(float), "the attention scratch", err, errlen) ||
            cuda_dev_alloc_named((void **)&c->d_ids, FWD_MAX_T * sizeof(int32_t), "the token ids", err, errlen) ||
            cuda_dev_alloc_named((void **)&c->d_pos, sizeof(int), "the decode position", err, errlen) ||
            cuda_dev_alloc_named((void **)&c->att_counters, FWD_MAX_T * hp->n_heads * sizeof(int),
                                 "the attention counters", err, errlen) ||
            cuda_dev_alloc_named((void **)&c->argmax_scratch, cuda_argmax_scratch_ints() * sizeof(int),
                                 "the argmax scratch", err, errlen) ||
            cuda_dev_alloc_named((void **)&c->mm_ws, CUDA_MM_WS_FLOATS * sizeof(float), "the split matmul partials", err, errlen) ||
            cuda_dev_alloc_named((void **)&c->d_cpos, FWD_MAX_T * sizeof(int), "the column positions", err, errlen) ||
            cuda_dev_alloc_named((void **)&c->d_picks, FWD_MAX_LOGITS * sizeof(int32_t), "the picked ids", err, errlen) ||
            cuda_dev_alloc_named((void **)&c->d_vin, (FWD_INIT_T + 1) * sizeof(int32_t), "the verify window's ids", err,
                                 errlen) ||
            cuda_dev_alloc_named((void **)&c->d_ckv, (size_t)hp->n_layers * 2 * FWD_MAX_T * sizeof(void *),
                                 "the column KV table", err, errlen) ||
            cuda_dev_alloc_named((void **)&c->d_hist, (size_t)n_ctx * sizeof(int32_t), "the sampler's token history", err,
                                 errlen) ||
            cuda_dev_alloc_named((void **)&c->d_sparams, sizeof(cuda_sample_params), "the sampler parameters", err, errlen) ||
            cuda_dev_alloc_named((void **)&c->d_sio, sizeof(cuda_sample_io), "the sampler state", err, errlen) ||
            cuda_dev_alloc_named(&c->samp_scratch, cuda_sample_scratch_bytes(hp->n_vocab), "the sampler scratch", err,
                                 errlen))
            goto fail;
        if (cuda_pinned_malloc((void **)&c->h_token, sizeof(int32_t)) != cudaSuccess ||
            cuda_pinned_malloc((void **)&c->h_sio, sizeof(cuda_sample_io)) != cudaSuccess ||
            cuda_pinned_malloc((void **)&c->h_picks, FWD_MAX_LOGITS * sizeof(int32_t)) != cudaSuccess ||
            cuda_pinned_malloc((void **)&c->h_vin, (FWD_INIT_T + 1) * sizeof(int32_t)) != cudaSuccess) {
            snprintf(err, errlen, "not enough pinned host memory for the read-back buffers");
            goto fail;
        }
        memset(c->h_sio, 0, sizeof *c->h_sio);
        memset(c->h_vin, 0, (FWD_INIT_T + 1) * sizeof(int32_t));
        if (!(c->h_ckv = (void **)st_calloc((size_t)hp->n_layers * 2 * FWD_MAX_T, sizeof(void *)))) {
            snprintf(err, errlen, "out of memory");
            goto fail;
        }
        if (CU_CHECK(cudaMemset(c->att_counters, 0, FWD_MAX_T * hp->n_heads * sizeof(int))) ||
            CU_CHECK(cudaMemset(c->argmax_scratch, 0, cuda_argmax_scratch_ints() * sizeof(int))) ||
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
            /* MoE scratch: P = CUDA_MOE_COLS * k pairs; activation rows sized for the widest format (f32) */
            size_t P = (size_t)CUDA_MOE_COLS * (size_t)hp->n_experts_used, E = (size_t)hp->n_embd, F = (size_t)hp->n_ff_exp;
            cuda_moe *b = &c->moe_bufs;
            if (cuda_dev_alloc_named((void **)&c->moe_logits, (size_t)CUDA_MOE_COLS * (size_t)hp->n_experts * sizeof(float),
                                     "the MoE router logits", err, errlen) ||
                cuda_dev_alloc_named(&c->moe_act_r, (size_t)CUDA_MOE_COLS * (E * 4 + 64), "the MoE router activations", err, errlen) ||
                cuda_dev_alloc_named(&b->act_pairs, P * (E * 4 + 64), "the MoE expert activations", err, errlen) ||
                cuda_dev_alloc_named((void **)&b->groups, (1 + MOE_GROUP_INTS * P) * sizeof(int), "the MoE expert groups", err, errlen) ||
                cuda_dev_alloc_named((void **)&b->pair_of, P * sizeof(int), "the MoE pair index", err, errlen) ||
                cuda_dev_alloc_named((void **)&b->wts, P * sizeof(float), "the MoE routing weights", err, errlen) ||
                cuda_dev_alloc_named((void **)&b->h, P * F * sizeof(float), "the MoE hidden rows", err, errlen) ||
                cuda_dev_alloc_named(&b->act_h, P * (F * 4 + 64), "the MoE hidden activations", err, errlen) ||
                cuda_dev_alloc_named((void **)&b->y, P * E * sizeof(float), "the MoE expert outputs", err, errlen) ||
                cuda_dev_alloc_named((void **)&b->counter, CUDA_MOE_COUNTERS * sizeof(unsigned), "the MoE launch counters", err, errlen))
                goto fail;
            if (CU_CHECK(cudaMemset(b->counter, 0, CUDA_MOE_COUNTERS * sizeof(unsigned)))) goto cuda_fail;
        }
        if (rope_table_upload(hp, n_ctx, hp->rope_base, &c->rope_global, "the RoPE table", err, errlen) ||
            rope_table_upload(hp, n_ctx, hp->rope_base_local, &c->rope_local, "the local RoPE table", err, errlen))
            goto fail;
    }
    return be;
cuda_fail:
    snprintf(err, errlen, "CUDA backend set-up failed: %s", cuda_last_error());
fail:
    cuda_free_be(be);
    return NULL;
}

static void cuda_free_be(backend *be) {
    if (!be) return;
    cuda_be *c = CB(be);
    if (c) {
        if (c->st) cudaStreamSynchronize(c->st);
        graphs_drop(c);
        cuda_dev_free(c->d_mask);
        for (int l = 0; c->kv.kc && l < c->hp.n_layers; l++) cuda_dev_free(c->kv.kc[l]);
        for (int l = 0; c->kv.vc && l < c->hp.n_layers; l++) cuda_dev_free(c->kv.vc[l]);
        st_free(c->kv.kc); st_free(c->kv.vc);
        float *bufs[] = { c->x, c->xb, c->q, c->k, c->v, c->att, c->hb, c->hb2, c->moe_out, c->logits };
        for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) cuda_dev_free(bufs[i]);
        cuda_dev_free(c->rope_global); cuda_dev_free(c->rope_local); cuda_dev_free(c->att_partial); cuda_dev_free(c->att_tc_part); cuda_dev_free(c->act);
        cuda_dev_free(c->act2);
        cuda_dev_free(c->d_ids); cuda_dev_free(c->d_pos); cuda_dev_free(c->embd_f32); cuda_dev_free(c->att_counters);
        cuda_dev_free(c->argmax_scratch); cuda_dev_free(c->mm_ws);
        cuda_dev_free(c->d_cpos); cuda_dev_free(c->d_ckv); st_free(c->h_ckv);
        cuda_dev_free(c->d_hist); cuda_dev_free(c->d_sparams); cuda_dev_free(c->d_sio); cuda_dev_free(c->samp_scratch);
        cuda_pinned_free(c->h_token); cuda_pinned_free(c->h_sio); cuda_pinned_free(c->h_logits);
        cuda_pinned_free(c->h_picks); cuda_dev_free(c->d_picks);
        cuda_pinned_free(c->h_vin); cuda_dev_free(c->d_vin);
        cuda_dev_free(c->moe_logits); cuda_dev_free(c->moe_act_r); cuda_dev_free(c->moe_bufs.act_pairs);
        cuda_dev_free(c->moe_bufs.groups); cuda_dev_free(c->moe_bufs.pair_of); cuda_dev_free(c->moe_bufs.wts);
        cuda_dev_free(c->moe_bufs.h); cuda_dev_free(c->moe_bufs.act_h); cuda_dev_free(c->moe_bufs.y); cuda_dev_free(c->moe_bufs.counter);
        cuda_moe_wide *mw = &c->moe_wide;
        cuda_dev_free((void *)mw->m.logits); cuda_dev_free(mw->m.act_pairs); cuda_dev_free(mw->m.groups);
        cuda_dev_free(mw->m.pair_of); cuda_dev_free(mw->m.wts); cuda_dev_free(mw->m.h); cuda_dev_free(mw->m.act_h);
        cuda_dev_free(mw->m.y); cuda_dev_free(mw->hu); cuda_dev_free(mw->sel); cuda_dev_free(mw->tiles);
        if (c->st) cudaStreamDestroy(c->st);
        st_free(c);
    }
    st_free(be);
}

/* ---- test access to the residual stream -------------------------------------------------- */
extern "C" int backend_cuda_x_io(backend *be, float *host, int T, int to_device) {
    cuda_be *c = CB(be);
    size_t bytes = (size_t)T * c->hp.n_embd * sizeof(float);
    if (T < 1 || T > c->cap_T) return -1;
    int rc = to_device ? CU_CHECK(cudaMemcpyAsync(c->x, host, bytes, cudaMemcpyHostToDevice, c->st))
                       : CU_CHECK(cudaMemcpyAsync(host, c->x, bytes, cudaMemcpyDeviceToHost, c->st));
    return rc || CU_CHECK(cudaStreamSynchronize(c->st)) || c->failed ? -1 : 0;
}

/* ---- test access to the KV cache: rows p0 .. p0 + n - 1 of a layer's K (which = 0) or V -------- */
extern "C" int backend_cuda_kv_read(const backend *be, int layer, int which, int p0, int n, void *host, size_t *row_bytes) {
    const cuda_be *c = (const cuda_be *)be->impl;
    *row_bytes = c->kv.row_bytes;
    if (layer < 0 || layer >= c->hp.n_layers || p0 < 0 || n < 0 || p0 + n > c->kv.n_ctx) return -1;
    const uint8_t *src = (const uint8_t *)(which ? c->kv.vc[layer] : c->kv.kc[layer]) + (size_t)p0 * c->kv.row_bytes;
    return CU_CHECK(cudaStreamSynchronize(c->st)) || CU_CHECK(cudaMemcpy(host, src, (size_t)n * c->kv.row_bytes, cudaMemcpyDeviceToHost))
               ? -1 : 0;
}

/* ---- the op kernels alone, on device pointers (tests/gpu/test_gpu_ops.c) ---------------------- */
static int test_sync(int rc) { return rc || CU_CHECK(cudaDeviceSynchronize()) ? -1 : 0; }
extern "C" int cuda_test_rmsnorm(const float *x, const float *w, float *y, int rows, int n, float eps) {
    return test_sync(cuda_rmsnorm(x, w, y, rows, n, eps, 0));
}
/* the per-head pair (rows1 of x1, rows2 of x2, in place or not) by the launch STRATA_CUDA_NORM_WARP
 * picks: warp 1 a warp a row (n <= 256), 0 a CTA a row; the switch is left as the variants set it */
extern "C" int cuda_test_rmsnorm2(const float *x1, const float *w1, float *y1, int rows1, const float *x2, const float *w2,
                                  float *y2, int rows2, int n, float eps, int warp) {
    cuda_variants v;
    cuda_device_choose(&v);
    cuda_ops_set_norm_warp(warp);
    const int rc = test_sync(cuda_rmsnorm2(x1, w1, y1, rows1, x2, w2, y2, rows2, n, eps, 0));
    cuda_ops_set_norm_warp(v.norm_warp);
    return rc;
}
extern "C" int cuda_test_rope(float *x, int T, int n_heads, int head_dim, int n_rot, int neox, int pos0, float base,
                              float scale) {
    hparams hp;
    memset(&hp, 0, sizeof hp);
    hp.n_rot = n_rot; hp.rope_scale = scale;
    float *cs = NULL;
    char err[256];
    if (rope_table_upload(&hp, pos0 + T, base, &cs, "a RoPE table", err, sizeof err)) return -1;
    int rc = test_sync(cuda_rope(x, T, n_heads, head_dim, n_rot, neox, pos0, NULL, cs, 0));
    cuda_dev_free(cs);
    return rc;
}
extern "C" int cuda_test_add(float *x, const float *y, int n) { return test_sync(cuda_add(x, y, n, 0)); }
extern "C" int cuda_test_swiglu(const float *g, const float *u, float *out, int n) {
    return expf_init() ? -1 : test_sync(cuda_swiglu(g, u, out, n, 0));
}
extern "C" int cuda_test_geglu(const float *g, const float *u, float *out, int n) {
    return expf_init() ? -1 : test_sync(cuda_geglu(g, u, out, n, 0));   /* expf_ref's mode, as SwiGLU's */
}
extern "C" int cuda_test_attention_kv(const float *q, const float *k, const float *v, void *kc, void *vc, int kv8, int T,
                                      int n_heads, int n_kv_heads, int head_dim, int pos0, float scale, int window, int n_ctx,
                                      int serial, int dev_pos, float *out, long *partials) {
    float *scratch = NULL;
    int *counters = NULL, *d_pos = NULL;
    const size_t sf = cuda_attention_scratch_floats(T, n_heads, head_dim, n_ctx);
    if (expf_init() || cuda_dev_malloc((void **)&scratch, sf * sizeof(float)) ||
        cuda_dev_malloc((void **)&counters, (size_t)T * n_heads * sizeof(int)) ||
        cuda_dev_malloc((void **)&d_pos, sizeof(int)) ||
        CU_CHECK(cudaMemset(counters, 0, (size_t)T * n_heads * sizeof(int))) ||
        CU_CHECK(cudaMemset(scratch, 0xff, sf * sizeof(float))) ||
        CU_CHECK(cudaMemcpy(d_pos, &pos0, sizeof(int), cudaMemcpyHostToDevice))) {
        cuda_dev_free(scratch); cuda_dev_free(counters); cuda_dev_free(d_pos);
        return -1;
    }
    int rc = cuda_kv_store(k, v, kc, vc, kv8, T, n_kv_heads * head_dim, pos0, NULL, 0) ||
             cuda_attention(q, kc, vc, kv8, T, n_heads, n_kv_heads, head_dim, pos0, dev_pos ? d_pos : NULL, -1, scale, window,
                            n_ctx, scratch, counters, out, NULL, -1, NULL, NULL, serial, 0);
    rc = test_sync(rc);
    if (!rc && partials) {
        uint32_t *h = (uint32_t *)st_malloc(sf * sizeof(float));
        if (!h || CU_CHECK(cudaMemcpy(h, scratch, sf * sizeof(float), cudaMemcpyDeviceToHost))) rc = -1;
        long w = 0;
        for (size_t i = 0; h && i < sf; i++) w += h[i] != 0xffffffffu;
        *partials = w;
        st_free(h);
    }
    cuda_dev_free(scratch); cuda_dev_free(counters); cuda_dev_free(d_pos);
    return rc;
}
extern "C" int cuda_test_attention_ex(const float *q, const float *k, const float *v, uint16_t *kc, uint16_t *vc, int T,
                                      int n_heads, int n_kv_heads, int head_dim, int pos0, float scale, int window, int n_ctx,
                                      int serial, int dev_pos, float *out, long *partials) {
    return cuda_test_attention_kv(q, k, v, kc, vc, 0, T, n_heads, n_kv_heads, head_dim, pos0, scale, window, n_ctx, serial,
                                  dev_pos, out, partials);
}
extern "C" int cuda_test_attention(const float *q, const float *k, const float *v, uint16_t *kc, uint16_t *vc, int T,
                                   int n_heads, int n_kv_heads, int head_dim, int pos0, float scale, int window, int n_ctx,
                                   int serial, float *out) {
    return cuda_test_attention_ex(q, k, v, kc, vc, T, n_heads, n_kv_heads, head_dim, pos0, scale, window, n_ctx, serial, 0,
                                  out, NULL);
}
extern "C" int cuda_test_argmax_rows(const float *x, int n, int rows, int32_t *ids) {
    int32_t *d = NULL;
    int rc = cuda_dev_malloc((void **)&d, (size_t)rows * sizeof(int32_t)) || test_sync(cuda_argmax_rows(x, n, rows, d, 0)) ||
             CU_CHECK(cudaMemcpy(ids, d, (size_t)rows * sizeof(int32_t), cudaMemcpyDeviceToHost));
    cuda_dev_free(d);
    return rc ? -1 : 0;
}

extern "C" int32_t cuda_test_argmax(const float *x, int n) {
    int32_t *d = NULL, h = -1;
    int *scratch = NULL;
    if (cuda_dev_malloc((void **)&d, sizeof(int32_t)) ||
        cuda_dev_malloc((void **)&scratch, cuda_argmax_scratch_ints() * sizeof(int)) ||
        CU_CHECK(cudaMemset(scratch, 0, cuda_argmax_scratch_ints() * sizeof(int))) ||
        test_sync(cuda_argmax(x, n, d, NULL, scratch, 0)) || CU_CHECK(cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost)))
        h = -1;
    cuda_dev_free(d); cuda_dev_free(scratch);
    return h;
}
