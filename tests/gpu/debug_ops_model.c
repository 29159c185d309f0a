/* Diagnostic (not a test): run the forward pass op by op on the CPU and the GPU backend over
 * a synthetic SmolLM2-shaped model, feeding both the CPU's inputs before every op, and print
 * each op's max relative difference (a bug shows as an outlier; ulps are ~1e-7).
 * Usage: debug_ops_model [n_tokens_per_pass] [n_passes] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <unistd.h>
#include "strata.h"
#include "engine/engine.h"
#include "model/synth.h"
#include "quant/blocks.h"
#include "cuda/cuda_backend.h"

static double rel(const float *a, const float *b, size_t n) {
    double m = 0, r = 0;
    for (size_t i = 0; i < n; i++) { r = fmax(r, fabs(b[i])); m = fmax(m, fabs((double)a[i] - b[i])); }
    return r > 0 ? m / r : m;
}

static strata_session *sg_, *sc_;
static int nosync;
/* copy the CPU's buffer into the GPU session's host buffer and its mirror */
static void sync_in(float *gbuf, const float *cbuf, size_t n) {
    if (nosync) return;
    memcpy(gbuf, cbuf, n * 4);
    backend_cuda_upload(sg_->be, gbuf, n * 4);
}
static double cmp(const char *what, int layer, float *gbuf, const float *cbuf, size_t n) {
    backend_cuda_download(sg_->be, gbuf, n * 4);
    double e = rel(gbuf, cbuf, n);
    if (layer < 2 || e > 1e-4 || nosync) printf("  layer %2d %-10s max rel diff %.3g\n", layer, what, e);
    return e;
}

int main(int argc, char **argv) {
    int T = argc > 1 ? atoi(argv[1]) : 8, passes = argc > 2 ? atoi(argv[2]) : 2;
    nosync = argc > 3 && !strcmp(argv[3], "nosync");
    synth_params p;
    synth_default_params(&p, ARCH_LLAMA);
    p.type_attn = TYPE_Q4_1; p.type_ffn = TYPE_Q4_1; p.type_output = TYPE_Q8_0; p.type_embd = TYPE_Q8_0;
    p.tokenizer_path = "builtin"; p.n_threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    char err[512];
    if (synth_write(&p, "/tmp/strata-dbg.gguf", err, sizeof err)) { printf("%s\n", err); return 1; }
    strata_model_params mp = strata_model_default_params();
    mp.path = "/tmp/strata-dbg.gguf";
    strata_model *mc, *mg;
    mp.device = STRATA_DEVICE_CPU;
    if (strata_model_load(&mp, &mc, err, sizeof err)) { printf("%s\n", err); return 1; }
    mp.device = STRATA_DEVICE_CUDA;
    if (strata_model_load(&mp, &mg, err, sizeof err)) { printf("%s\n", err); return 1; }
    strata_session_params sp = strata_session_default_params();
    sp.n_ctx = 256;
    sc_ = strata_session_new(mc, &sp, err, sizeof err);
    sg_ = strata_session_new(mg, &sp, err, sizeof err);
    fwd_state *C = &sc_->fwd, *G = &sg_->fwd;
    backend *bc = sc_->be, *bg = sg_->be;
    const hparams *hp = &mc->hp;
    const int E = hp->n_embd, H = hp->n_heads, KVH = hp->n_kv_heads, HD = hp->head_dim, F = hp->n_ff;
    for (int pass = 0; pass < passes; pass++) {
        int pos0 = pass * T;
        int32_t ids[8];
        for (int t = 0; t < T; t++) ids[t] = 50 + 97 * (pos0 + t);
        printf("pass %d (positions %d..%d)\n", pass, pos0, pos0 + T - 1);
        bc->ops->embed(bc, &mc->w.tok_embd, ids, T, C->x, 1.0f);
        bg->ops->embed(bg, &mg->w.tok_embd, ids, T, G->x, 1.0f);
        cmp("embed", 0, G->x, C->x, (size_t)T * E);
        for (int l = 0; l < hp->n_layers; l++) {
            const layer_weights *LC = &mc->w.layers[l], *LG = &mg->w.layers[l];
            sync_in(G->x, C->x, (size_t)T * E);
            bc->ops->rmsnorm(bc, C->x, &LC->attn_norm, C->xb, T, E, hp->rms_eps);
            bg->ops->rmsnorm(bg, G->x, &LG->attn_norm, G->xb, T, E, hp->rms_eps);
            cmp("attn_norm", l, G->xb, C->xb, (size_t)T * E);
            sync_in(G->xb, C->xb, (size_t)T * E);
            bc->ops->matvec(bc, &LC->wq, C->xb, T, C->q); bg->ops->matvec(bg, &LG->wq, G->xb, T, G->q);
            bc->ops->matvec(bc, &LC->wk, C->xb, T, C->k); bg->ops->matvec(bg, &LG->wk, G->xb, T, G->k);
            bc->ops->matvec(bc, &LC->wv, C->xb, T, C->v); bg->ops->matvec(bg, &LG->wv, G->xb, T, G->v);
            cmp("q", l, G->q, C->q, (size_t)T * H * HD);
            cmp("k", l, G->k, C->k, (size_t)T * KVH * HD);
            cmp("v", l, G->v, C->v, (size_t)T * KVH * HD);
            sync_in(G->q, C->q, (size_t)T * H * HD); sync_in(G->k, C->k, (size_t)T * KVH * HD);
            sync_in(G->v, C->v, (size_t)T * KVH * HD);
            bc->ops->rope(bc, C->q, T, H, HD, hp->n_rot, pos0, hp->rope_base, hp->rope_scale);
            bc->ops->rope(bc, C->k, T, KVH, HD, hp->n_rot, pos0, hp->rope_base, hp->rope_scale);
            bg->ops->rope(bg, G->q, T, H, HD, hp->n_rot, pos0, hp->rope_base, hp->rope_scale);
            bg->ops->rope(bg, G->k, T, KVH, HD, hp->n_rot, pos0, hp->rope_base, hp->rope_scale);
            bc->ops->attention(bc, l, C->q, C->k, C->v, T, pos0, hp->attn_scale, 0, C->att);
            bg->ops->attention(bg, l, G->q, G->k, G->v, T, pos0, hp->attn_scale, 0, G->att);
            cmp("rope q", l, G->q, C->q, (size_t)T * H * HD);
            cmp("rope k", l, G->k, C->k, (size_t)T * KVH * HD);
            cmp("attention", l, G->att, C->att, (size_t)T * H * HD);
            sync_in(G->att, C->att, (size_t)T * H * HD);
            bc->ops->matvec(bc, &LC->wo, C->att, T, C->xb); bg->ops->matvec(bg, &LG->wo, G->att, T, G->xb);
            bc->ops->add(bc, C->x, C->xb, T * E); bg->ops->add(bg, G->x, G->xb, T * E);
            cmp("wo", l, G->xb, C->xb, (size_t)T * E);
            cmp("x+attn", l, G->x, C->x, (size_t)T * E);
            sync_in(G->x, C->x, (size_t)T * E);
            bc->ops->rmsnorm(bc, C->x, &LC->ffn_norm, C->xb, T, E, hp->rms_eps);
            bg->ops->rmsnorm(bg, G->x, &LG->ffn_norm, G->xb, T, E, hp->rms_eps);
            cmp("ffn_norm", l, G->xb, C->xb, (size_t)T * E);
            sync_in(G->xb, C->xb, (size_t)T * E);
            bc->ops->matvec(bc, &LC->gate, C->xb, T, C->hb); bg->ops->matvec(bg, &LG->gate, G->xb, T, G->hb);
            bc->ops->matvec(bc, &LC->up, C->xb, T, C->hb2); bg->ops->matvec(bg, &LG->up, G->xb, T, G->hb2);
            bc->ops->swiglu(bc, C->hb, C->hb2, C->hb, T * F); bg->ops->swiglu(bg, G->hb, G->hb2, G->hb, T * F);
            cmp("up", l, G->hb2, C->hb2, (size_t)T * F);
            cmp("swiglu", l, G->hb, C->hb, (size_t)T * F);
            sync_in(G->hb, C->hb, (size_t)T * F);
            bc->ops->matvec(bc, &LC->down, C->hb, T, C->xb); bg->ops->matvec(bg, &LG->down, G->hb, T, G->xb);
            bc->ops->add(bc, C->x, C->xb, T * E); bg->ops->add(bg, G->x, G->xb, T * E);
            cmp("down", l, G->xb, C->xb, (size_t)T * E);
            cmp("x+ffn", l, G->x, C->x, (size_t)T * E);
        }
    }
    strata_session_free(sc_); strata_session_free(sg_);
    strata_model_free(mc); strata_model_free(mg);
    unlink("/tmp/strata-dbg.gguf");
    return 0;
}
