/* Several sessions in one GPU pass (strata_sessions_step: a batch of sequences, each with its
 * own KV cache, through the CUDA blocks): every session's logits are the bits of the same
 * session stepped alone on the GPU and of the CPU's, whatever the other sessions in the pass
 * and however many passes the step needs (12 sessions: a pass of 8 and a pass of 4), for
 * several steps at different positions (up to 900 deep: several attention chunks per column);
 * then the speculative step with suffix drafts gives the
 * ids of plain greedy steps (the next ids picked on the device: head_argmax). Model: synthetic (src/model/synth.h), made here. */
#include "test.h"
#include "gpu_order.h"
#include "rig.h"
#include "quant/quant.h"

#define NS 12

static strata_session *session(strata_model *m, int spec) {
    strata_session_params sp = strata_session_default_params();
    sp.n_ctx = 1024; sp.spec_draft = spec;
    return rig_session_p(m, &sp);
}

int main(void) {
    if (cuda_device_count() <= 0) SKIP_ALL("no-device", "no CUDA device");
    gpu_pin_cpu_order();   /* CPU-identity checks: the CPU's attention order (gpu_order.h) */
    const char *path = "/tmp/strata-gpu-batch.gguf";
    synth_params p;
    synth_default_params(&p, ARCH_LLAMA);
    p.n_layers = 6; p.n_vocab = 8000; p.n_embd = 512; p.n_heads = 8; p.n_kv_heads = 2; p.head_dim = 64;
    p.type_attn = TYPE_Q4_1; p.type_ffn = TYPE_Q4_K; p.type_output = TYPE_Q8_0; p.type_embd = TYPE_Q8_0;
    p.seed = 5;
    CHECKF(rig_synth_write(&p, path) == 0, "synth %s", path);
    strata_model *mg = rig_load(path, STRATA_DEVICE_CUDA), *mc = rig_load(path, STRATA_DEVICE_CPU);
    CHECK(mg && mc);
    if (!mg || !mc) TEST_DONE();
    const int V = strata_n_vocab(mg);
    strata_session *bat[NS], *solo[NS], *cpu[NS];
    int ok = 1;
    for (int i = 0; i < NS && ok; i++) {
        bat[i] = session(mg, 0); solo[i] = session(mg, 0); cpu[i] = session(mc, 0);
        ok = bat[i] && solo[i] && cpu[i];
        if (!ok) break;
        static int32_t pr[1000];
        /* different positions per session; the last four deep in the cache, around and past
         * attention chunk boundaries (256 positions: 1 to 4 chunks, one crossed during the steps) */
        static const int deep[4] = { 250, 256, 600, 900 };
        int len = i < NS - 4 ? 3 + (i * 5) % 20 : deep[i - (NS - 4)];
        for (int t = 0; t < len; t++) pr[t] = (int32_t)(3 + (i * 977 + t * 131) % (V - 3));
        ok = !strata_session_eval(bat[i], pr, len) && !strata_session_eval(solo[i], pr, len) &&
             !strata_session_eval(cpu[i], pr, len);
    }
    CHECK(ok);
    if (!ok) TEST_DONE();
    int same_solo = 1, same_cpu = 1, steps = 0;
    for (int step = 0; step < 12; step++) {
        /* a different subset each step: all 12, then fewer (passes of 8 + 4, 8, 5, ...) */
        int n = step < 4 ? NS : NS - step;
        strata_session *sub[NS];
        int32_t next[NS];
        for (int i = 0; i < n; i++) {
            sub[i] = bat[i];
            next[i] = argmax(strata_session_logits(solo[i]), V);
            strata_session_eval(solo[i], &next[i], 1);
            strata_session_eval(cpu[i], &next[i], 1);
        }
        if (strata_sessions_step(sub, next, n)) { CHECK(0); break; }
        steps++;
        for (int i = 0; i < n; i++) {
            const float *lb = strata_session_logits(bat[i]);
            if (!lb || memcmp(lb, strata_session_logits(solo[i]), sizeof(float) * (size_t)V)) same_solo = 0;
            if (!lb || memcmp(lb, strata_session_logits(cpu[i]), sizeof(float) * (size_t)V)) same_cpu = 0;
        }
    }
    printf("%d steps of up to %d sessions in shared GPU passes: logits == alone on the GPU: %s, == CPU: %s\n", steps, NS,
           same_solo ? "yes" : "NO", same_cpu ? "yes" : "NO");
    CHECKF(steps == 12 && same_solo, "batched GPU logits differ from the same sessions alone");
    if (rig_libm()) CHECKF(same_cpu, "batched GPU logits differ from the CPU's");
    for (int i = 0; i < NS; i++) { strata_session_free(bat[i]); strata_session_free(solo[i]); strata_session_free(cpu[i]); }

    /* the speculative step (greedy, suffix drafts in the spare columns) on prompts that repeat,
     * 3 sessions: ids equal to plain greedy steps */
    strata_session *sp[3], *pl[3];
    int32_t cur[3], cur_pl[3];
    ok = 1;
    for (int i = 0; i < 3 && ok; i++) {
        sp[i] = session(mg, 4); pl[i] = session(mg, 0);
        ok = sp[i] && pl[i];
        if (!ok) break;
        int32_t pr[40];
        for (int t = 0; t < 40; t++) pr[t] = (int32_t)(3 + ((t % 10) * 37 + i * 11) % (V - 3));
        ok = !strata_session_eval(sp[i], pr, 40) && !strata_session_eval(pl[i], pr, 40);
        cur[i] = argmax(strata_session_logits(sp[i]), V);
        cur_pl[i] = argmax(strata_session_logits(pl[i]), V);
    }
    CHECK(ok);
    int32_t out_sp[3][96], out_pl[3][96];
    int n_sp[3] = { 0, 0, 0 }, drafted = 0, picked_on_device = 0;
    for (int i = 0; i < 3; i++) {   /* plain: 64 greedy tokens each */
        for (int t = 0; t < 64 && ok; t++) {
            out_pl[i][t] = cur_pl[i];
            ok = !strata_session_eval(pl[i], &cur_pl[i], 1);
            cur_pl[i] = argmax(strata_session_logits(pl[i]), V);
        }
    }
    for (int guard = 0; guard < 64 && ok; guard++) {
        int maxd[3] = { 4, 4, 4 }, nacc[3];
        int32_t acc[3 * STRATA_MAX_DRAFT], nx[3];
        for (int i = 0; i < 3; i++) if (n_sp[i] < 96) out_sp[i][n_sp[i]++] = cur[i];
        if (strata_sessions_step_spec(sp, cur, maxd, 3, acc, nacc, nx)) { ok = 0; break; }
        for (int i = 0; i < 3; i++) {
            drafted += nacc[i];
            for (int a = 0; a < nacc[i]; a++) if (n_sp[i] < 96) out_sp[i][n_sp[i]++] = acc[i * STRATA_MAX_DRAFT + a];
            /* plain greedy sessions: the engine picked the next id on the device (no host logits) */
            cur[i] = nx[i] >= 0 ? nx[i] : argmax(strata_session_logits(sp[i]), V);
            picked_on_device += nx[i] >= 0 && !strata_session_logits(sp[i]);
        }
        if (n_sp[0] >= 64 && n_sp[1] >= 64 && n_sp[2] >= 64) break;
    }
    int equal = ok;
    for (int i = 0; i < 3 && equal; i++) equal = n_sp[i] >= 64 && !memcmp(out_sp[i], out_pl[i], 64 * sizeof(int32_t));
    printf("speculative step, 3 sessions on the GPU: %d drafts accepted, %d ids picked on the device, ids == plain "
           "greedy: %s\n", drafted, picked_on_device, equal ? "yes" : "NO");
    CHECKF(equal, "speculative GPU steps changed the ids");
    CHECKF(picked_on_device > 0, "the greedy sessions' ids were not picked on the device");
    for (int i = 0; i < 3; i++) { strata_session_free(sp[i]); strata_session_free(pl[i]); }

    /* prompts' chunks inside decode passes (strata_sessions_step_prefill_multi, the server's
     * burst): chunks of more than 8 columns take the query-tile attention (attn_prompt.cu)
     * while the single columns beside them take the column kernel, in one pass; every prompt's
     * logits and every decoding session's are those of each alone on the GPU and on the CPU.
     * Step 1: prompts of 9 and 40 whole and 100 of the third; step 2: 560 more of it (510 columns
     * beside the 2 decoding sessions, then 50 alone); step 3: its last 40. */
    {
        enum { NPR = 3, MAXP = 700, ND = 2 };
        static int32_t prm[NPR][MAXP];
        const int len[NPR] = { 9, 40, 700 };
        const int chunks[3][NPR] = { { 9, 40, 100 }, { 0, 0, 560 }, { 0, 0, 40 } };
        strata_session *pg[NPR], *pr1[NPR], *pc[NPR], *dg[ND], *ds[ND], *dc[ND];
        int okp = 1, same_p = 1, same_d = 1, at[NPR] = { 0, 0, 0 };
        for (int j = 0; j < NPR; j++)
            for (int i = 0; i < len[j]; i++) prm[j][i] = (int32_t)(3 + (200 + 53 * i + 11 * j) % (V - 3));
        for (int j = 0; j < NPR && okp; j++) {
            pg[j] = session(mg, 0); pr1[j] = session(mg, 0); pc[j] = session(mc, 0);
            okp = pg[j] && pr1[j] && pc[j] && !strata_session_eval(pr1[j], prm[j], len[j]) &&
                  !strata_session_eval(pc[j], prm[j], len[j]);
        }
        for (int i = 0; i < ND && okp; i++) {
            const int32_t st3[3] = { 1 + 7 * i, 4093 % V, 198 + i };
            dg[i] = session(mg, 0); ds[i] = session(mg, 0); dc[i] = session(mc, 0);
            okp = dg[i] && ds[i] && dc[i] && !strata_session_eval(dg[i], st3, 3) && !strata_session_eval(ds[i], st3, 3) &&
                  !strata_session_eval(dc[i], st3, 3);
        }
        CHECK(okp);
        for (int stp = 0; stp < 3 && okp; stp++) {
            strata_session *ps[NPR];
            const int32_t *pids[NPR];
            int pns[NPR], want[NPR], np = 0;
            for (int j = 0; j < NPR; j++) {
                if (!chunks[stp][j]) continue;
                ps[np] = pg[j]; pids[np] = prm[j] + at[j]; pns[np] = chunks[stp][j];
                want[np] = at[j] + chunks[stp][j] == len[j];
                np++;
            }
            int32_t nx[ND];
            for (int i = 0; i < ND; i++) {
                nx[i] = argmax(strata_session_logits(ds[i]), V);
                strata_session_eval(ds[i], &nx[i], 1);
                strata_session_eval(dc[i], &nx[i], 1);
            }
            if (strata_sessions_step_prefill_multi(dg, nx, ND, ps, pids, pns, want, np)) { okp = 0; break; }
            for (int j = 0; j < NPR; j++) at[j] += chunks[stp][j];
            for (int i = 0; i < ND; i++) {
                const float *lb = strata_session_logits(dg[i]);
                if (!lb || memcmp(lb, strata_session_logits(ds[i]), sizeof(float) * (size_t)V)) same_d = 0;
                if (rig_libm() && (!lb || memcmp(lb, strata_session_logits(dc[i]), sizeof(float) * (size_t)V))) same_d = 0;
            }
        }
        for (int j = 0; j < NPR && okp; j++) {
            const float *lp = strata_session_logits(pg[j]);
            if (strata_session_pos(pg[j]) != len[j] || !lp || memcmp(lp, strata_session_logits(pr1[j]), sizeof(float) * (size_t)V))
                same_p = 0;
            if (rig_libm() && (!lp || memcmp(lp, strata_session_logits(pc[j]), sizeof(float) * (size_t)V))) same_p = 0;
        }
        printf("prompts of 9 / 40 / 700 in chunks beside 2 decoding sessions on the GPU: prompt logits == alone%s: %s, "
               "decoding logits: %s\n", rig_libm() ? " and == CPU" : "", same_p ? "yes" : "NO", same_d ? "yes" : "NO");
        CHECKF(okp && same_p, "prompts read inside decode passes give other logits than alone");
        CHECKF(okp && same_d, "decoding sessions' logits differ beside prompt chunks");
        for (int j = 0; j < NPR; j++) { strata_session_free(pg[j]); strata_session_free(pr1[j]); strata_session_free(pc[j]); }
        for (int i = 0; i < ND; i++) { strata_session_free(dg[i]); strata_session_free(ds[i]); strata_session_free(dc[i]); }
    }

    /* plain greedy sessions stepped together pick their ids on the device (head_argmax: from 4
     * rows one launch with a CTA per row): 1, 3, 4, 9 and 20 sessions, the ids == each session's
     * own argmax stepped alone, for 6 steps */
    {
        enum { NB = 20 };
        strata_session *bg[NB], *bs[NB];
        int32_t cb[NB];
        int okb = 1, same_b = 1, picked = 0;
        for (int i = 0; i < NB && okb; i++) {
            int32_t pr[8];
            for (int t = 0; t < 8; t++) pr[t] = (int32_t)(3 + (i * 613 + t * 97) % (V - 3));
            bg[i] = session(mg, 0); bs[i] = session(mg, 0);
            okb = bg[i] && bs[i] && !strata_session_eval(bg[i], pr, 8) && !strata_session_eval(bs[i], pr, 8);
            if (okb) cb[i] = argmax(strata_session_logits(bs[i]), V);
        }
        CHECK(okb);
        const int widths[5] = { 1, 3, 4, 9, 20 };
        for (int w = 0; w < 5 && okb; w++) {
            const int n = widths[w];
            for (int step = 0; step < 6 && okb; step++) {
                int md[NB], nacc[NB];
                int32_t acc[NB * STRATA_MAX_DRAFT], nx[NB], want[NB];
                for (int i = 0; i < n; i++) {
                    md[i] = 0;
                    strata_session_eval(bs[i], &cb[i], 1);
                    want[i] = argmax(strata_session_logits(bs[i]), V);
                }
                if (strata_sessions_step_spec(bg, cb, md, n, acc, nacc, nx)) { okb = 0; break; }
                for (int i = 0; i < n; i++) {
                    const int32_t got = nx[i] >= 0 ? nx[i] : argmax(strata_session_logits(bg[i]), V);
                    picked += nx[i] >= 0;
                    if (got != want[i]) same_b = 0;
                    cb[i] = want[i];
                }
            }
        }
        printf("plain greedy sessions in shared passes (1, 3, 4, 9, 20): %d ids picked on the device, ids == alone: %s\n",
               picked, same_b ? "yes" : "NO");
        CHECKF(okb && same_b, "ids picked on the device for a batch differ from each session's own argmax");
        CHECKF(picked > 0, "no id was picked on the device");
        for (int i = 0; i < NB; i++) { strata_session_free(bg[i]); strata_session_free(bs[i]); }
    }
    strata_model_free(mg); strata_model_free(mc);
    unlink(path);
    TEST_DONE();
}
