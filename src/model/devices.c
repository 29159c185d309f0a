/* Which backends this build has, and the choice between them: the one file that knows
 * whether the CUDA backend was compiled in (STRATA_HAVE_CUDA). The engine asks for a device
 * and a backend through src/model/backend.h and never sees CUDA. */
#include <stdio.h>
#include <string.h>
#include "backend.h"
#include "quant/quant.h"
#ifdef STRATA_HAVE_CUDA
#include "cuda/cuda_backend.h"
#endif

const char *backend_gpu_unbuilt(void) {
#ifdef STRATA_HAVE_CUDA
    return "";
#else
    return "this build has no CUDA backend (nvcc was not found when it was built)";
#endif
}

#ifdef STRATA_HAVE_CUDA
/* Why this model cannot run on the GPU, or NULL: every matvec format has a CUDA kernel, MoE
 * gate/up share a format, the router's limits hold, not exact mode. */
static const char *gpu_refusal(const hparams *hp, const model_weights *w, int exact, char *buf, size_t cap) {
    const cuda_device_class *dc = cuda_device_class_get();
    if (cuda_device_count() <= 0 || !dc) return "no CUDA GPU was found";
    if (!dc->supported) {
        snprintf(buf, cap, "the GPU (%s, sm_%d%d) has no code in this build (%s)", dc->name, dc->major, dc->minor, dc->why);
        return buf;
    }
    if (exact) return "exact mode (--exact) runs on the CPU only";
    const layer_weights *L = w->layers;
    for (int l = 0; l < hp->n_layers; l++) {
        const weight *ws[] = { &L[l].wq, &L[l].wk, &L[l].wv, &L[l].wo, &L[l].gate, &L[l].up, &L[l].down,
                               &L[l].gate_inp, &L[l].gate_exps, &L[l].up_exps, &L[l].down_exps };
        for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++)
            if (ws[i]->data && !cuda_type_supported(ws[i]->type)) {
                snprintf(buf, cap, "weight type %s has no CUDA kernel", quant_type_name(ws[i]->type));
                return buf;
            }
        if (L[l].gate_exps.data && L[l].gate_exps.type != L[l].up_exps.type)
            return "mixture-of-experts gate and up weights of different formats have no CUDA kernel";
    }
    if (hp->n_experts > (int)CUDA_MOE_MAX_EXPERTS || hp->n_experts_used > (int)CUDA_MOE_MAX_EXPERTS_USED)
        return "more experts (or experts per token) than the CUDA router handles";
    if (!cuda_type_supported(w->output.type)) {
        snprintf(buf, cap, "output weight type %s has no CUDA kernel", quant_type_name(w->output.type));
        return buf;
    }
    return NULL;
}
#endif

int backend_device_pick(int requested, const hparams *hp, model_weights *w, int exact,
                        void (*progress)(float, void *), void *user, char *err, size_t errlen) {
    if (requested == BACKEND_DEVICE_CPU) return BACKEND_DEVICE_CPU;
#ifdef STRATA_HAVE_CUDA
    char buf[256];
    const char *why = gpu_refusal(hp, w, exact, buf, sizeof buf);
    if (why) {
        if (requested == BACKEND_DEVICE_CUDA) { snprintf(err, errlen, "--device cuda: %s", why); return -1; }
        return BACKEND_DEVICE_CPU;
    }
    if (cuda_weights_upload(hp, w, progress, user, err, errlen) != 0) return -1;
    return BACKEND_DEVICE_CUDA;
#else
    (void)hp; (void)w; (void)exact; (void)progress; (void)user;
    if (requested == BACKEND_DEVICE_CUDA) { snprintf(err, errlen, "--device cuda: %s", backend_gpu_unbuilt()); return -1; }
    return BACKEND_DEVICE_CPU;
#endif
}

void backend_device_release(int device, const hparams *hp, model_weights *w) {
#ifdef STRATA_HAVE_CUDA
    if (device == BACKEND_DEVICE_CUDA) cuda_weights_free(hp, w);
#else
    (void)device; (void)hp; (void)w;
#endif
}

backend *backend_new(int device, const hparams *hp, const model_weights *w, int n_ctx, void *threadpool, int exact,
                     int kv_int8, char *err, size_t errlen) {
#ifdef STRATA_HAVE_CUDA
    if (device == BACKEND_DEVICE_CUDA) {
        return backend_cuda_new(hp, w, n_ctx, kv_int8, err, errlen);
    }
#endif
    if (device != BACKEND_DEVICE_CPU) { snprintf(err, errlen, "no backend for device %d in this build", device); return NULL; }
    return backend_cpu_new(hp, w, n_ctx, threadpool, exact, kv_int8, err, errlen);
}

int backend_gpu_describe(char *out, size_t cap) {
#ifdef STRATA_HAVE_CUDA
    return cuda_device_class_describe(out, cap);
#else
    snprintf(out, cap, "%s", backend_gpu_unbuilt());
    return -1;
#endif
}
