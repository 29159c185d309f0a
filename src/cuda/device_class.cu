/* Device classification: read the GPU once (compute capability, SMs, memory, L2) and pick the
 * kernel variants for its generation from a small table. Every choice can be overridden
 * through the switch registry (STRATA_CUDA_MATVEC, STRATA_CUDA_ATTN; docs/KERNELS.md). Every
 * variant gives the same bits (the attention's chunked order does not depend on how many CTAs
 * reduce the chunks). */
#include "cuda_internal.h"
#include "cuda_common.cuh"
extern "C" {
#include "core/env.h"
extern "C" int canon_serial;   /* STRATA_CANON (src/quant/canon.c) */
}

extern "C" int cuda_moe_r4_env(void) {
    const int64_t v = env_int(ENV_CUDA_MOE_R4);
    return v == 2 ? 2 : v == 1 || v == 3 ? 1 : 0;   /* 3 (the staged forms, deleted) runs as 1 */
}

/* One row per generation, first match wins. `runs`: this build's code runs there (the
 * Makefile generates sm_90 machine code plus compute_90 PTX, which the driver compiles for
 * newer chips; older ones cannot run it). */
typedef struct {
    int major_min, major_max;
    const char *gen;
    int runs;
    int coop;            /* 256-weight formats: 8 lanes per super-block (8) or one lane (0) */
    int pdl;             /* programmatic dependent launch (griddepcontrol needs sm_90) */
    int decode;          /* decode variants (CUDA_DEC_* bits, same bits) where they measured faster */
    int attn_tc;         /* the tensor-core attention order by default (its own bits, not the CPU's) */
    const char *why;
} class_row;
static const class_row k_class_table[] = {
    { 9, 9, "hopper", 1, 8, 2, CUDA_DEC_IQ3 | CUDA_DEC_IQ4 | CUDA_DEC_Q2_WORD | CUDA_DEC_Q6_SWAR, 1,
      "coop8 measured 2-3.6x the one-lane kernel at T=1 on the H200; PDL hides launch gaps, early for passes of <= 8 "
      "columns (one server client +3.3 %, MoE decode at 4,096 +5 %, wide passes unchanged); decode variants IQ3/IQ4/Q2_0 "
      "measured 4-19 % faster per MoE FFN block, IQ2 not faster (2026-12-02); Q6_K with aligned loads at T=1: matvec "
      "0.79x the time, 1.5B decode +1.0-2.2 % (2026-12-03); the tensor-core attention order faster on every measured "
      "row (decode at depth 16 +3-9 %, at 4,096 +16-32 %, prompts of 512 +12-18 %, of 4,096 2.0-2.5x; 2026-12-04; "
      "docs/BENCHMARKS.md)" },
    { 10, 99, "blackwell", 1, 8, 1, 0, 0, "sm_90 PTX compiled by the driver; coop8 and PDL as on Hopper (not measured here); the CPU's attention order (the tensor-core order not measured there)" },
    { 0, 8, "pre-hopper", 0, 0, 0, 0, 0, "this build has sm_90 code only (make CUDA_ARCH=...)" },
};

static cuda_device_class g_class;
static int g_class_state;   /* 0 not read, 1 read, -1 no device */

extern "C" const cuda_device_class *cuda_device_class_get(void) {
    if (g_class_state) return g_class_state > 0 ? &g_class : NULL;
    cudaDeviceProp p;
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n <= 0 || cudaGetDeviceProperties(&p, 0) != cudaSuccess) {
        cudaGetLastError();
        g_class_state = -1;
        return NULL;
    }
    cuda_device_class *c = &g_class;
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%.95s", p.name);
    c->major = p.major; c->minor = p.minor; c->sms = p.multiProcessorCount;
    c->mem_bytes = p.totalGlobalMem; c->l2_bytes = p.l2CacheSize;
    const class_row *r = &k_class_table[sizeof k_class_table / sizeof k_class_table[0] - 1];
    for (size_t i = 0; i < sizeof k_class_table / sizeof k_class_table[0]; i++)
        if (p.major >= k_class_table[i].major_min && p.major <= k_class_table[i].major_max) { r = &k_class_table[i]; break; }
    c->gen = r->gen; c->supported = r->runs; c->why = r->why; c->table_coop = r->coop; c->table_pdl = r->pdl;
    c->table_decode = r->decode; c->table_attn_tc = r->attn_tc;
    g_class_state = 1;
    return c;
}

/* the one reading of the SM count (the matmul's split, the attention's chunks per column) */
extern "C" int cuda_sm_count(void) {
    const cuda_device_class *c = cuda_device_class_get();
    return c && c->sms > 0 ? c->sms : 0;
}

/* a decode-variant switch: auto (the table's bits of `mask`), 1 / on (all of them), else none */
static int dec_switch(const char *s, int table, int mask) {
    if (!strcmp(s, "auto")) return table & mask;
    return !strcmp(s, "1") || !strcmp(s, "on") ? mask : 0;
}

/* The variants for a backend created now: the table's, unless a switch says otherwise (read
 * at each creation, so tests can flip them with env_reset_cache). */
extern "C" void cuda_device_choose(cuda_variants *v) {
    const cuda_device_class *c = cuda_device_class_get();
    const char *mv = env_str(ENV_CUDA_MATVEC), *at = env_str(ENV_CUDA_ATTN);
    v->matvec_coop = c ? c->table_coop : 8;
    v->matvec_from = "table";
    if (!strcmp(mv, "coop")) { v->matvec_coop = 8; v->matvec_from = "STRATA_CUDA_MATVEC"; }
    else if (!strcmp(mv, "lane")) { v->matvec_coop = 0; v->matvec_from = "STRATA_CUDA_MATVEC"; }
    /* attention: the chunks in parallel on every class; serial: one CTA per head (the same bits) */
    v->attn_serial = !strcmp(at, "serial");
    v->attn_from = !strcmp(at, "auto") ? "table" : "STRATA_CUDA_ATTN";
    const char *pd = env_str(ENV_CUDA_PDL);
    v->pdl = c ? c->table_pdl : 0;
    v->pdl_from = "table";
    if (!strcmp(pd, "on") || !strcmp(pd, "1")) { v->pdl = c && c->major >= 9; v->pdl_from = "STRATA_CUDA_PDL"; }
    else if (!strcmp(pd, "off") || !strcmp(pd, "0")) { v->pdl = 0; v->pdl_from = "STRATA_CUDA_PDL"; }
    else if (!strcmp(pd, "early") || !strcmp(pd, "2")) { v->pdl = c && c->major >= 9 ? 2 : 0; v->pdl_from = "STRATA_CUDA_PDL"; }
    v->pdl_early_T = (int)env_int(ENV_CUDA_PDL_EARLY_T);
    /* decode variants (issue 20, same bits): the table's where "auto", else what the switch says
     * (docs/KERNELS.md, "Decode variants"); the routing stays serial unless asked */
    const int td = c ? c->table_decode : 0;
    v->decode = dec_switch(env_str(ENV_IQ_DECODE_FAST), td, CUDA_DEC_IQ_FAST) |
                dec_switch(env_str(ENV_Q2_WORD_EXPAND), td, CUDA_DEC_Q2_WORD) |
                dec_switch(env_str(ENV_Q6_SWAR), td, CUDA_DEC_Q6_SWAR);
    v->decode_from = !strcmp(env_str(ENV_IQ_DECODE_FAST), "auto") && !strcmp(env_str(ENV_Q2_WORD_EXPAND), "auto") &&
                     !strcmp(env_str(ENV_Q6_SWAR), "auto") ? "table" : "switches";
    v->route_parallel = !strcmp(env_str(ENV_CUDA_ROUTE), "parallel");
    v->moe_fast = env_int(ENV_CUDA_MOE_FAST) & CUDA_MOE_FAST_ALL;
    v->moe_r4 = cuda_moe_r4_env();
    v->mv_split = env_int(ENV_CUDA_MV_SPLIT);
    if (v->mv_split < 0) v->mv_split = 0;
    v->mv_kq = (int)env_int(ENV_CUDA_MV_KQ);
    if (v->mv_kq != 1 && v->mv_kq != 2 && v->mv_kq != 3 && v->mv_kq != 4 && v->mv_kq != 8) v->mv_kq = 0;
    v->mv_kqi = (int)env_int(ENV_CUDA_MV_KQI);
    {   /* the kernel choice (1, 2, 3, 4, 8) + 16: the sign masks by ALU */
        const int k = v->mv_kqi & 15;
        v->mv_kqi = k != 1 && k != 2 && k != 3 && k != 4 && k != 8 ? 0 : k | (v->mv_kqi & 16);
    }
    v->norm_warp = env_int(ENV_CUDA_NORM_WARP) != 0;
    v->prefetch = (int)env_int(ENV_CUDA_PREFETCH) & (CUDA_PF_ROWS | CUDA_PF_DOWN | CUDA_PF_NORMW);
    /* the attention order (bits differ between the two: docs/KERNELS.md, "The tensor-core
     * attention order"): the table's where auto, else what the switch says */
    const char *tc = env_str(ENV_CUDA_ATTN_TC);
    v->attn_tc = c ? c->table_attn_tc : 0;
    v->attn_tc_from = "table";
    if (!strcmp(tc, "1") || !strcmp(tc, "on")) { v->attn_tc = 1; v->attn_tc_from = "STRATA_CUDA_ATTN_TC"; }
    else if (!strcmp(tc, "0") || !strcmp(tc, "off")) { v->attn_tc = 0; v->attn_tc_from = "STRATA_CUDA_ATTN_TC"; }
}

/* STRATA_CANON (canon_serial, read at startup; tests may change it) into the files' device
 * constants; never during a graph capture */
extern "C" void cuda_canon_apply(void) {
    cuda_canon_set_matvec(canon_serial);
    cuda_canon_set_moe(canon_serial);
}

extern "C" void cuda_variants_apply(const cuda_variants *v) {
    cuda_matvec_set_coop(v->matvec_coop);
    cuda_set_pdl(v->pdl, v->pdl_early_T);
    cuda_matvec_set_decode(v->decode);
    cuda_moe_set_route(v->route_parallel);
    cuda_moe_set_fast(v->moe_fast);
    cuda_moe_set_r4(v->moe_r4);
    cuda_matvec_set_split(v->mv_split);
    cuda_matvec_set_kq(v->mv_kq);
    cuda_matvec_set_kqi(v->mv_kqi);
    cuda_prefetch_set_matvec(v->prefetch);
    cuda_prefetch_set_moe(v->prefetch);
    cuda_prefetch_set_ops(v->prefetch);
    cuda_ops_set_norm_warp(v->norm_warp);
    cuda_canon_apply();   /* STRATA_CANON (quant_canon.h) */
}

extern "C" int cuda_device_class_describe(char *out, size_t cap) {
    const cuda_device_class *c = cuda_device_class_get();
    if (!c) { snprintf(out, cap, "no CUDA device"); return -1; }
    cuda_variants v;
    cuda_device_choose(&v);
    snprintf(out, cap,
             "%s, sm_%d%d, %d SMs, %.1f GiB, L2 %d MiB; class %s%s; matvec of 256-weight formats: %s (%s); "
             "attention: %s (%s), order: %s (%s); dependent launch: %s (%s); decode variants:%s%s%s%s%s%s (%s); MoE routing: %s; MoE folds:%s%s%s%s%s%s%s%s%s%s%s%s%s%s%s%s%s; MoE R4 copies: %s; split rows: %s; Q4_K / Q5_K one-column kernel: %s; IQ2_XXS / IQ3_XXS / IQ2_XS / IQ3_S one-column kernel: %s%s; L2 prefetch:%s%s%s%s",
             c->name, c->major, c->minor, c->sms, (double)c->mem_bytes / (1 << 30), c->l2_bytes >> 20, c->gen,
             c->supported ? "" : " (this build has no code for it)", v.matvec_coop == 8 ? "coop8" : "one lane per block",
             v.matvec_from, v.attn_serial ? "serial chunks" : "parallel chunks", v.attn_from,
             v.attn_tc ? "tensor cores (the GPU's own bits)" : "the CPU's (bit-identical)", v.attn_tc_from, v.pdl == 2 ? "early" : v.pdl ? "on" : "off", v.pdl_from,
             v.decode ? "" : " none", v.decode & CUDA_DEC_IQ2 ? " iq2" : "", v.decode & CUDA_DEC_IQ3 ? " iq3" : "", v.decode & CUDA_DEC_IQ4 ? " iq4" : "", v.decode & CUDA_DEC_Q2_WORD ? " q2-word" : "",
             v.decode & CUDA_DEC_Q6_SWAR ? " q6-swar" : "", v.decode_from, v.route_parallel ? "parallel" : "serial",
             v.moe_fast ? "" : " none", v.moe_fast & CUDA_MOE_FAST_ROUTE1 ? " route1" : "",
             v.moe_fast & CUDA_MOE_FAST_COMBINE ? " combine" : "", v.moe_fast & CUDA_MOE_FAST_DOWN4 ? " down4" : "",
             v.moe_fast & CUDA_MOE_FAST_SMEM ? " smem-tables" : "",
             v.moe_fast & CUDA_MOE_FAST_ROUTER_CTA ? " router-cta" : "", v.moe_fast & CUDA_MOE_FAST_NGK ? " group-count" : "", v.moe_fast & CUDA_MOE_FAST_NORM ? " norm-in-router" : "", v.moe_fast & CUDA_MOE_FAST_SALU ? " signs-by-alu" : "",
             v.moe_fast & CUDA_MOE_FAST_GROUP ? " grouping-by-ranges" : "", v.moe_fast & CUDA_MOE_FAST_WIDE ? " wide-side-by-side" : "",
             v.moe_fast & CUDA_MOE_FAST_PAIR ? " gate-up-pair" : "", v.moe_fast & CUDA_MOE_FAST_DROWS ? " down-rows-side-by-side" : "",
             v.moe_fast & CUDA_MOE_FAST_PAIRX ? " pairs-iq4xs-iq2xs-iq2s-iq3s" : "", v.moe_fast & CUDA_MOE_FAST_PAIRQ2 ? " lane-pair" : "",
             v.moe_fast & CUDA_MOE_FAST_DLANE ? " down-lane-rows" : "", v.moe_fast & CUDA_MOE_FAST_GRP ? " down-row-a-group" : "", v.moe_r4 == 2 ? "on (gate/up unbounded)" : v.moe_r4 ? "on" : "off", v.mv_split ? "from 24 blocks" : "off",
             v.mv_kq == 1 ? "kqp (one wave, pipelined)" : v.mv_kq == 2 ? "kqp, gate/up pairs by kqs" :
             v.mv_kq == 3 ? "by shape (kqs / kqp / kq1)" : v.mv_kq == 4 ? "kq1, 4 lanes a block" : v.mv_kq == 8 ? "kq1, 8 lanes a block" : "cooperative",
             (v.mv_kqi & 15) == 1 ? "kqp" : (v.mv_kqi & 15) == 2 ? "kqp, pairs by kqs" : (v.mv_kqi & 15) == 3 ? "by shape" : v.mv_kqi ? "kq1" : "cooperative",
             v.mv_kqi & 16 ? ", signs by ALU" : "",
             v.prefetch ? "" : " none", v.prefetch & CUDA_PF_ROWS ? " rows" : "", v.prefetch & CUDA_PF_DOWN ? " experts' down" : "",
             v.prefetch & CUDA_PF_NORMW ? " norm weights" : "");
    return 0;
}
