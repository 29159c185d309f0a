/* End to end on synthetic models written here (src/model/synth.h: the same parameters give
 * the same bytes on any machine): greedy token ids on the GPU equal the CPU's for a few
 * prompts, the prompt's last logits agree (relative error <= 1e-3, same argmax), and on the
 * GPU itself the logits of a token do not depend on how it was evaluated (one 8-token pass,
 * token by token, graph or no graph, fused or unfused ops: the same bits).
 * The decode step's graph (the backend's decode_step: forward + argmax on the device, only the
 * id returns) is checked step by step past 256 positions: each id is the CPU's argmax after the
 * same tokens.
 * Models: the SmolLM2-135M shape with the real file's formats (Q4_1 blocks, Q8_0
 * embeddings/output), and two small ones that cover K-quant, IQ and other legacy formats. */
#include "test.h"
#include "gpu_order.h"
#include "rig.h"
#include "engine/engine.h"

static strata_session *session(strata_model *m) { return rig_session(m, 512); }
static void prompt_ids(int which, int n_vocab, int32_t *ids, int n) { rig_prompt_ids(0x1234567ull, which, n_vocab, ids, n); }

static double max_rel(const float *a, const float *b, int n) {
    double m = 0, r = 0;
    for (int i = 0; i < n; i++) { r = fmax(r, fabs(b[i])); m = fmax(m, fabs((double)a[i] - b[i])); }
    return r > 0 ? m / r : m;
}
static void graph_check(const char *label, strata_model *mc, strata_model *mg, int np, int n);
static void deep_check(const char *label, strata_model *mc, strata_model *mg, int np, int n);

static void run_model(const char *label, const char *path, int n_gen, int n_steps, int deep_np, int deep_n) {
    t_current = label;
    strata_model *mc = rig_load(path, STRATA_DEVICE_CPU), *mg = rig_load(path, STRATA_DEVICE_CUDA);
    CHECK(mc && mg);
    if (!mc || !mg) { strata_model_free(mc); strata_model_free(mg); return; }
    strata_model_info info;
    strata_model_get_info(mg, &info);
    CHECK_STR(info.device, "cuda");
    int V = strata_n_vocab(mc);
    static const int plen[3] = { 5, 19, 40 };
    double worst = 0;
    int close_calls = 0, steps = 0, diverged = 0, bit_steps = 0;
    int libm = rig_libm();
    for (int p = 0; p < 3; p++) {
        int32_t ids[64];
        prompt_ids(p, V, ids, plen[p]);
        strata_session *sc = session(mc), *sg = session(mg);
        CHECK(sc && sg);
        if (!sc || !sg) { strata_session_free(sc); strata_session_free(sg); continue; }
        /* teacher-forced: both evaluate the CPU's greedy ids; at every step the GPU logits must
         * agree within the bound, and the GPU's argmax must be the CPU's unless the CPU's own
         * top-1/top-2 margin is inside the measured difference (a close call) */
        CHECK(strata_session_eval(sc, ids, plen[p]) == 0 && strata_session_eval(sg, ids, plen[p]) == 0);
        int32_t cpu_ids[64];
        for (int step = 0; step < 32; step++) {
            const float *lc = strata_session_logits(sc), *lg = strata_session_logits(sg);
            CHECK(lc && lg);
            if (!lc || !lg) break;
            double e = max_rel(lg, lc, V), range = 0, mad = 0;
            float mxv = lc[0], mnv = lc[0];
            for (int i = 0; i < V; i++) { mxv = fmaxf(mxv, lc[i]); mnv = fminf(mnv, lc[i]); mad = fmax(mad, fabs((double)lg[i] - lc[i])); }
            range = mxv - mnv;
            if (e > worst) worst = e;
            CHECKF(mad <= 0.05 * range, "%s prompt %d step %d: max |gpu - cpu| %g > 5%% of the logit range %g", label, p,
                   step, mad, range);
            if (!memcmp(lc, lg, sizeof(float) * (size_t)V)) bit_steps++;
            int ac = argmax(lc, V), ag = argmax(lg, V);
            float second = -INFINITY;
            for (int i = 0; i < V; i++) if (i != ac && lc[i] > second) second = lc[i];
            steps++;
            if (ag != ac) {
                int close = lc[ac] - second <= 2 * mad;
                close_calls += close;
                CHECKF(close, "%s prompt %d step %d: argmax gpu %d cpu %d with cpu margin %g > 2 x max diff %g", label, p,
                       step, ag, ac, lc[ac] - second, mad);
            }
            cpu_ids[step] = ac;
            if (strata_session_eval(sc, &cpu_ids[step], 1) || strata_session_eval(sg, &cpu_ids[step], 1)) break;
        }
        /* free-running greedy through the engine (GPU: graph decode) */
        strata_session_reset(sc); strata_session_reset(sg);
        tok_list tc = { .n = 0 }, tg = { .n = 0 };
        strata_generate(sc, ids, plen[p], n_gen, collect, &tc);
        strata_generate(sg, ids, plen[p], n_gen, collect, &tg);
        int d = 0;
        while (d < tc.n && d < tg.n && tc.ids[d] == tg.ids[d]) d++;
        if (d < tc.n || d < tg.n) diverged++;
        if (libm) CHECKF(d == tc.n && tc.n == tg.n, "%s prompt %d: greedy ids GPU != CPU from step %d", label, p, d);
        printf("%-28s prompt %d (%2d tokens): greedy ids GPU == CPU for %d of %d steps\n", label, p, plen[p], d, tc.n);
        strata_session_free(sc);
        strata_session_free(sg);
    }
    printf("%-28s teacher-forced: %d steps, %d argmax differences (all close calls: CPU margin <= 2x the difference)\n",
           label, steps, close_calls);
    printf("%-28s logits bit-identical to the CPU at %d of %d teacher-forced steps (expf: %s)\n", label, bit_steps,
           steps, cuda_expf_mode());
    if (libm) CHECKF(bit_steps == steps, "%s: %d of %d steps bit-identical", label, bit_steps, steps);
    (void)diverged;
    printf("%-28s prompt logits: max rel err GPU vs CPU %.3g\n", label, worst);

    /* GPU batch invariance and variants: logits of the last prompt token, bit for bit */
    {
        int32_t ids[40];
        prompt_ids(2, V, ids, 40);
        float *ref = malloc(sizeof(float) * V);
        strata_session *s = session(mg);
        strata_session_eval(s, ids, 40);                 /* 8-token passes */
        memcpy(ref, strata_session_logits(s), sizeof(float) * V);
        strata_session_reset(s);
        for (int i = 0; i < 40; i++) strata_session_eval(s, ids + i, 1);   /* token by token */
        CHECKF(!memcmp(ref, strata_session_logits(s), sizeof(float) * V), "%s: T=8 vs T=1 logits differ", label);
        strata_session_free(s);
        set_env("STRATA_CUDA_FUSE", "0");
        s = session(mg);
        strata_session_eval(s, ids, 40);
        CHECKF(!memcmp(ref, strata_session_logits(s), sizeof(float) * V), "%s: fused vs unfused logits differ", label);
        strata_session_free(s);
        set_env("STRATA_CUDA_FUSE", "1");
        /* graph vs eager decode steps give the same ids */
        tok_list a = { .n = 0 }, b = { .n = 0 };
        s = session(mg);
        strata_generate(s, ids, 40, 24, collect, &a);
        strata_session_free(s);
        set_env("STRATA_CUDA_GRAPH", "0");
        s = session(mg);
        strata_generate(s, ids, 40, 24, collect, &b);
        strata_session_free(s);
        set_env("STRATA_CUDA_GRAPH", "1");
        CHECKF(a.n == b.n && !memcmp(a.ids, b.ids, sizeof(int32_t) * (size_t)a.n), "%s: graph vs eager ids differ", label);
        free(ref);
    }
    graph_check(label, mc, mg, plen[1], n_steps);
    if (deep_np > 0) deep_check(label, mc, mg, deep_np, deep_n);
    strata_model_free(mc);
    strata_model_free(mg);
}

/* n greedy decode steps on the GPU (the backend's decode_step, one graph replay each) after a
 * prompt of np tokens, against the CPU teacher-forced on the same tokens: each step's id must
 * be the CPU's argmax (past 256 positions: a second attention tile) */
static void graph_check(const char *label, strata_model *mc, strata_model *mg, int np, int n) {
    int V = strata_n_vocab(mg);
    int32_t prompt[64], *ids = malloc(sizeof(int32_t) * (size_t)(n + 1));
    prompt_ids(1, V, prompt, np);
    strata_session *sg = session(mg), *sc = session(mc);
    CHECK(ids && sg && sc && sg->be->ops->decode_step);
    if (!ids || !sg || !sc || !sg->be->ops->decode_step) goto out;
    CHECK(strata_session_eval(sg, prompt, np) == 0 && strata_session_eval(sc, prompt, np) == 0);
    ids[0] = argmax(strata_session_logits(sg), V);
    int steps = 0, equal = 0;
    for (int i = 0; i < n; i++) {
        int32_t nx = sg->be->ops->decode_step(sg->be, ids[i], np + i, NULL);
        if (nx < 0 || strata_session_eval(sc, &ids[i], 1)) break;
        steps++;
        equal += argmax(strata_session_logits(sc), V) == nx;
        ids[i + 1] = nx;
    }
    printf("%-28s graph decode steps: %d of %d, ids == CPU argmax at %d\n", label, steps, n, equal);
    CHECKF(steps == n && equal == n, "%s: graph steps vs CPU: %d of %d steps, %d ids equal", label, steps, n, equal);
out:
    strata_session_free(sg); strata_session_free(sc);
    free(ids);
}

/* Deep in the cache, several attention chunks of 256 positions: after an np-token prompt
 * (passes of many columns), the GPU's logits are the CPU's bit for bit (libm expf), the
 * attention's chunks walked by one CTA (STRATA_CUDA_ATTN=serial) give the same bits as in
 * parallel, and n graph decode steps from np + 3 (across the boundary at 768 from 700, at 4096
 * from 4090: the chunk path in the graph, the position read on the device) give the CPU's
 * argmax ids */
static void deep_check(const char *label, strata_model *mc, strata_model *mg, int np, int n) {
    const int V = strata_n_vocab(mg), n_ctx = (np + n + 64 + 255) / 256 * 256;
    int libm = rig_libm();
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)(np + n + 1));
    prompt_ids(3, V, ids, np);
    strata_session *sc = rig_session(mc, n_ctx), *sg = rig_session(mg, n_ctx);
    set_env("STRATA_CUDA_ATTN", "serial");
    strata_session *ss = rig_session(mg, n_ctx);
    set_env("STRATA_CUDA_ATTN", NULL);
    CHECK(ids && sc && sg && ss && sg->be->ops->decode_step);
    if (!ids || !sc || !sg || !ss || !sg->be->ops->decode_step) goto out;
    CHECK(strata_session_eval(sc, ids, np) == 0 && strata_session_eval(sg, ids, np) == 0 &&
          strata_session_eval(ss, ids, np) == 0);
    int same_cpu = 0, same_serial = 0, steps = 0;
    for (int i = 0; i < 4; i++) {   /* the prompt's last logits, then three teacher-forced steps */
        const float *lc = strata_session_logits(sc), *lg = strata_session_logits(sg), *ls = strata_session_logits(ss);
        if (!lc || !lg || !ls) break;
        same_cpu += !memcmp(lc, lg, sizeof(float) * (size_t)V);
        same_serial += !memcmp(ls, lg, sizeof(float) * (size_t)V);
        steps++;
        ids[np + i] = argmax(lc, V);
        if (i < 3 && (strata_session_eval(sc, &ids[np + i], 1) || strata_session_eval(sg, &ids[np + i], 1) ||
                      strata_session_eval(ss, &ids[np + i], 1)))
            break;
    }
    printf("%-28s at depth %d-%d: logits == CPU at %d of %d, serial == parallel chunks at %d\n", label, np, np + 3,
           same_cpu, steps, same_serial);
    CHECKF(steps == 4 && same_serial == 4, "%s: serial vs parallel attention chunks differ at depth", label);
    if (libm) CHECKF(same_cpu == 4, "%s: GPU logits differ from the CPU's at depth %d", label, np);
    /* graph decode steps from np + 3 */
    int pos = np + 3, equal = 0, gsteps = 0;
    int32_t cur = ids[np + 3];
    for (int i = 0; i < n; i++) {
        int32_t nx = sg->be->ops->decode_step(sg->be, cur, pos + i, NULL);
        if (nx < 0 || strata_session_eval(sc, &cur, 1)) break;
        gsteps++;
        equal += argmax(strata_session_logits(sc), V) == nx;
        cur = nx;
    }
    printf("%-28s graph decode steps at depth %d-%d: %d, ids == CPU argmax at %d\n", label, pos, pos + n, gsteps, equal);
    CHECKF(gsteps == n && equal == n, "%s: deep graph steps vs CPU: %d of %d, %d equal", label, gsteps, n, equal);
out:
    strata_session_free(sc); strata_session_free(sg); strata_session_free(ss);
    free(ids);
}

int main(void) {
    if (cuda_device_count() <= 0) SKIP_ALL("no-device", "no CUDA device");
    gpu_pin_cpu_order();   /* CPU-identity checks: the CPU's attention order (gpu_order.h) */
    const char *dir = "/tmp";
    char p1[256], p2[256], p3[256];
    snprintf(p1, sizeof p1, "%s/strata-gpu-smollm2-shape.gguf", dir);
    snprintf(p2, sizeof p2, "%s/strata-gpu-kquants.gguf", dir);
    snprintf(p3, sizeof p3, "%s/strata-gpu-iq.gguf", dir);
    CHECK(rig_model(p1, ARCH_LLAMA, 30, 576, 1536, 9, 3, 64, 49152, TYPE_Q4_1, TYPE_Q4_1, TYPE_Q8_0, TYPE_Q8_0, 7) == 0);
    CHECK(rig_model(p2, ARCH_LLAMA, 6, 512, 1536, 8, 2, 64, 8000, TYPE_Q4_K, TYPE_Q5_K, TYPE_Q6_K, TYPE_Q4_0, 7) == 0);
    CHECK(rig_model(p3, ARCH_LLAMA, 4, 512, 1024, 4, 4, 128, 6000, TYPE_IQ4_XS, TYPE_IQ3_S, TYPE_Q5_1, TYPE_F16, 7) == 0);
    run_model("smollm2-shape Q4_1/Q8_0", p1, 64, 260, 700, 80);
    run_model("Q4_K/Q5_K/Q6_K/Q4_0", p2, 48, 40, 4090, 12);   /* 6 layers: a 4k prompt on the CPU is cheap */
    run_model("IQ4_XS/IQ3_S/Q5_1/F16", p3, 48, 40, 0, 0);
    unlink(p1); unlink(p2); unlink(p3);
    TEST_DONE();
}
