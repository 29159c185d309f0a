/* Device classification (src/cuda/device_class.cu): the GPU is read once (compute capability,
 * SMs, memory, L2), its generation's table row picks the kernel variants, and the switches
 * override each choice; a backend created under each choice gives the same greedy ids (the
 * table only picks among variants with the same bits). */
#include "test.h"
#include <stdint.h>
#include <unistd.h>
#include "strata.h"
#include "core/env.h"
#include "model/synth.h"
#include "quant/blocks.h"
#include "cuda/cuda_backend.h"

static void set_env(const char *name, const char *v) {
    if (v) setenv(name, v, 1); else unsetenv(name);
    env_reset_cache();
}

static void test_class(void) {
    const cuda_device_class *c = cuda_device_class_get();
    CHECK(c != NULL);
    if (!c) return;
    printf("class: %s sm_%d%d, %d SMs, %.1f GiB, L2 %d MiB -> %s (%s)\n", c->name, c->major, c->minor, c->sms,
           c->mem_bytes / 1073741824.0, c->l2_bytes >> 20, c->gen, c->why);
    CHECK(c->sms > 0 && c->mem_bytes > ((size_t)1 << 30) && c->l2_bytes > 0 && c->major > 0);
    CHECK(c->supported == (c->major >= 9));
    if (c->major == 9) { CHECK_STR(c->gen, "hopper"); CHECK_EQ_INT(c->table_coop, 8); }
    cuda_variants v;
    set_env("STRATA_CUDA_MATVEC", NULL); set_env("STRATA_CUDA_ATTN", NULL);
    cuda_device_choose(&v);
    CHECK_EQ_INT(v.matvec_coop, c->table_coop);
    CHECK_STR(v.matvec_from, "table");
    CHECK_EQ_INT(v.attn_serial, 0);   /* the table: the attention's chunks in parallel */
    CHECK_STR(v.attn_from, "table");
    set_env("STRATA_CUDA_MATVEC", "lane"); set_env("STRATA_CUDA_ATTN", "serial");
    cuda_device_choose(&v);
    CHECK_EQ_INT(v.matvec_coop, 0);
    CHECK_STR(v.matvec_from, "STRATA_CUDA_MATVEC");
    CHECK_EQ_INT(v.attn_serial, 1);
    CHECK_STR(v.attn_from, "STRATA_CUDA_ATTN");
    set_env("STRATA_CUDA_MATVEC", "coop"); set_env("STRATA_CUDA_ATTN", "parallel");
    cuda_device_choose(&v);
    CHECK_EQ_INT(v.matvec_coop, 8);
    CHECK_EQ_INT(v.attn_serial, 0);
    char d[512];
    CHECK(strata_cuda_describe(d, sizeof d) == 0);
    printf("strata_cuda_describe: %s\n", d);
    CHECK(strstr(d, "class ") && strstr(d, "coop8 (STRATA_CUDA_MATVEC)") && strstr(d, "parallel chunks (STRATA_CUDA_ATTN)"));
    set_env("STRATA_CUDA_MATVEC", NULL); set_env("STRATA_CUDA_ATTN", NULL);
    /* the attention order: the table's (Hopper: the tensor-core order) unless the switch says */
    set_env("STRATA_CUDA_ATTN_TC", NULL);
    cuda_device_choose(&v);
    CHECK_EQ_INT(v.attn_tc, c->table_attn_tc);
    CHECK_STR(v.attn_tc_from, "table");
    if (c->major == 9) CHECK_EQ_INT(c->table_attn_tc, 1);
    set_env("STRATA_CUDA_ATTN_TC", "0");
    cuda_device_choose(&v);
    CHECK_EQ_INT(v.attn_tc, 0);
    CHECK_STR(v.attn_tc_from, "STRATA_CUDA_ATTN_TC");
    CHECK(strata_cuda_describe(d, sizeof d) == 0);
    CHECK(strstr(d, "order: the CPU's (bit-identical) (STRATA_CUDA_ATTN_TC)") != NULL);
    set_env("STRATA_CUDA_ATTN_TC", "1");
    cuda_device_choose(&v);
    CHECK_EQ_INT(v.attn_tc, 1);
    set_env("STRATA_CUDA_ATTN_TC", NULL);
}

typedef struct { int32_t ids[64]; int n; } tok_list;
static int collect(int32_t id, void *user) {
    tok_list *l = user;
    if (l->n < 64) l->ids[l->n++] = id;
    return 0;
}

/* greedy ids of a K-quant model with the matvec variant forced each way */
static void test_variants_same_ids(void) {
    const char *path = "/tmp/strata-gpu-device.gguf";
    synth_params p;
    synth_default_params(&p, ARCH_LLAMA);
    p.n_layers = 3; p.n_embd = 512; p.n_ff = 1024; p.n_heads = 8; p.n_kv_heads = 2; p.head_dim = 64;
    p.n_vocab = 4000; p.n_ctx = 512;
    p.type_attn = TYPE_Q4_K; p.type_ffn = TYPE_IQ3_S; p.type_output = TYPE_Q6_K; p.type_embd = TYPE_Q4_K;
    p.tokenizer_path = "builtin"; p.seed = 21; p.n_threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    char err[512];
    CHECKF(synth_write(&p, path, err, sizeof err) == 0, "synth: %s", err);
    strata_model_params mp = strata_model_default_params();
    mp.path = path; mp.device = STRATA_DEVICE_CUDA;
    strata_model *m = NULL;
    CHECKF(strata_model_load(&mp, &m, err, sizeof err) == 0, "load: %s", err);
    if (!m) return;
    static const char *mv[3] = { "auto", "lane", "coop" };
    tok_list t[3];
    int32_t prompt[12];
    for (int i = 0; i < 12; i++) prompt[i] = 5 + 311 * i % 3900;
    for (int i = 0; i < 3; i++) {
        set_env("STRATA_CUDA_MATVEC", mv[i]);
        strata_session_params sp = strata_session_default_params();
        sp.n_ctx = 256;
        strata_session *s = strata_session_new(m, &sp, err, sizeof err);
        CHECK(s != NULL);
        t[i].n = 0;
        if (s) strata_generate(s, prompt, 12, 40, collect, &t[i]);
        strata_session_free(s);
    }
    set_env("STRATA_CUDA_MATVEC", NULL);
    CHECK(t[0].n == 40);
    for (int i = 1; i < 3; i++)
        CHECKF(t[i].n == t[0].n && !memcmp(t[i].ids, t[0].ids, sizeof(int32_t) * (size_t)t[0].n),
               "STRATA_CUDA_MATVEC=%s: greedy ids differ from the table's choice", mv[i]);
    printf("greedy ids identical under STRATA_CUDA_MATVEC=auto, lane, coop (%d tokens)\n", t[0].n);
    strata_model_free(m);
    unlink(path);
}

int main(void) {
    if (cuda_device_count() <= 0) SKIP_ALL("no-device", "no CUDA device");
    RUN(test_class);
    RUN(test_variants_same_ids);
    TEST_DONE();
}
