/* Allocation failures on the CUDA path (issue 9): every device (and pinned host) allocation of
 * weight upload and backend creation is made to fail in turn (cuda_alloc_fail_after, the
 * device twin of st_alloc_fail_after), then every host allocation of the same load. Each
 * failure must give a clean error naming what did not fit, no crash, and nothing leaked: the
 * GPU's free memory (cudaMemGetInfo) returns to its value before the attempt, and the live
 * counts of host blocks (st_alloc_live) and device blocks (cuda_alloc_live) are unchanged.
 * The model: IQ4_XS embeddings (no device dequantizer: the f32 copy path), Q4_K/Q6_K weights,
 * an untied output, so every allocation site of upload and creation is on the walk. */
#include "test.h"
#include <stdint.h>
#include <unistd.h>
#include "strata.h"
#include "core/util.h"
#include "model/synth.h"
#include "quant/blocks.h"
#include "cuda/cuda_backend.h"

static const char *path = "/tmp/strata-gpu-faults.gguf";

/* load + session + one token on the GPU; returns 0 on success, -1 with err set */
static int attempt(char *err, size_t errlen, int *stage) {
    strata_model_params mp = strata_model_default_params();
    mp.path = path; mp.device = STRATA_DEVICE_CUDA; mp.n_threads = 1;
    strata_model *m = NULL;
    *stage = 0;
    if (strata_model_load(&mp, &m, err, errlen) != 0) return -1;
    *stage = 1;
    strata_session_params sp = strata_session_default_params();
    sp.n_ctx = 256;
    strata_session *s = strata_session_new(m, &sp, err, errlen);
    int rc = -1;
    if (s) {
        *stage = 2;
        int32_t ids[3] = { 5, 77, 300 };
        rc = strata_session_eval(s, ids, 3);
        if (rc) snprintf(err, errlen, "eval failed");
    }
    strata_session_free(s);
    strata_model_free(m);
    return rc;
}

typedef struct { size_t free_mem; long host_live, dev_live; } snapshot;
static snapshot snap(void) {
    snapshot s;
    size_t tot = 0;
    s.free_mem = 0;
    cuda_mem_free(&s.free_mem, &tot);
    s.host_live = st_alloc_live();
    s.dev_live = cuda_alloc_live();
    return s;
}

static void check_clean(const char *what, long k, snapshot a) {
    snapshot b = snap();
    CHECKF(b.free_mem == a.free_mem, "%s %ld: GPU free memory %zu before, %zu after (%+lld bytes)", what, k, a.free_mem,
           b.free_mem, (long long)b.free_mem - (long long)a.free_mem);
    CHECKF(b.host_live == a.host_live, "%s %ld: host blocks %ld before, %ld after", what, k, a.host_live, b.host_live);
    CHECKF(b.dev_live == a.dev_live, "%s %ld: device blocks %ld before, %ld after", what, k, a.dev_live, b.dev_live);
}

static void test_device_walk(void) {
    char err[512];
    int stage;
    snapshot s0 = snap();
    int sites = 0, upload_sites = 0, backend_sites = 0, bind_sites = 0;
    for (long k = 1; k < 10000; k++) {
        cuda_alloc_fail_after(k);
        err[0] = 0;
        int rc = attempt(err, sizeof err, &stage);
        long pending = cuda_alloc_fail_pending();
        cuda_alloc_fail_after(0);
        check_clean("device allocation", k, s0);
        if (pending > 0) {   /* fewer than k allocations: the walk is complete */
            CHECKF(rc == 0, "no failure injected, yet the attempt failed: %s", err);
            printf("device allocations: %d sites (%d weight upload, %d backend creation, %d activation buffers), "
                   "each a clean error; free memory, host and device blocks back to their start values\n",
                   sites, upload_sites, backend_sites, bind_sites);
            break;
        }
        sites++;
        CHECKF(rc != 0, "device allocation %ld failed but the attempt succeeded", k);
        CHECKF(strstr(err, "not enough") && strstr(err, "memory for"), "device allocation %ld: message '%s'", k, err);
        if (stage == 0) upload_sites++;
        else if (strstr(err, "activation buffers")) bind_sites++;
        else backend_sites++;
        if (k <= 3 || stage > 0) printf("  site %ld: %s\n", k, err);
    }
    CHECK(upload_sites > 10 && backend_sites >= 10 && bind_sites >= 1);
}

static void test_host_walk(void) {
    char err[512];
    int stage;
    snapshot s0 = snap();
    int sites = 0, failed_clean = 0, tolerated = 0;
    for (long k = 1; k < 100000; k++) {
        st_alloc_fail_after(k);
        err[0] = 0;
        int rc = attempt(err, sizeof err, &stage);
        long pending = st_alloc_fail_pending();
        st_alloc_fail_after(0);
        check_clean("host allocation", k, s0);
        if (pending > 0) {
            CHECKF(rc == 0, "no failure injected, yet the attempt failed: %s", err);
            break;
        }
        sites++;
        if (rc != 0) {
            failed_clean++;
            CHECKF(err[0] != 0, "host allocation %ld: failed without a message", k);
        } else
            tolerated++;   /* an optional allocation (e.g. the model name) may fail harmlessly */
    }
    printf("host allocations on the CUDA path: %d sites (%d failed with a message, %d tolerated), nothing leaked\n",
           sites, failed_clean, tolerated);
    CHECK(sites > 20);
}

int main(void) {
    if (cuda_device_count() <= 0) SKIP_ALL("no-device", "no CUDA device");
    synth_params p;
    synth_default_params(&p, ARCH_LLAMA);
    p.n_layers = 3; p.n_embd = 256; p.n_ff = 512; p.n_heads = 4; p.n_kv_heads = 2; p.head_dim = 64;
    p.n_vocab = 1024; p.n_ctx = 512;
    p.type_attn = TYPE_Q4_K; p.type_ffn = TYPE_Q6_K; p.type_output = TYPE_Q8_0; p.type_embd = TYPE_IQ4_XS;
    p.tokenizer_path = "builtin"; p.seed = 3; p.n_threads = 1;
    char err[512];
    if (synth_write(&p, path, err, sizeof err) != 0) { fprintf(stderr, "synth: %s\n", err); CHECK(0); TEST_DONE(); }
    /* warm-up: the CUDA context, module loading and every kernel of a load + eval cycle, so
     * later attempts start from a settled free-memory value */
    int stage;
    CHECKF(attempt(err, sizeof err, &stage) == 0, "warm-up: %s", err);
    CHECKF(attempt(err, sizeof err, &stage) == 0, "warm-up: %s", err);
    RUN(test_device_walk);
    RUN(test_host_walk);
    unlink(path);
    TEST_DONE();
}
