/* RoPE's pair rotation on the device, shared by ops.cu / moe.cu (through ops_dev.cuh) and the
 * tensor-core attention's decode launch (attn_tc.cu), so every path rotates with the same
 * operations. */
#ifndef STRATA_ROPE_DEV_CUH
#define STRATA_ROPE_DEV_CUH

/* RoPE, cos/sin from the host table [pos][n_rot/2][2]: pairs (2i, 2i+1) (llama's GGUF
 * layout) or, with neox, (i, i + n_rot/2). */
static __device__ __forceinline__ void rope_pair(const float *v, int i, int n_rot, int neox, float c, float s, float *oa,
                                                 float *ob, int *ia_out, int *ib_out) {
    int ia = neox ? i : 2 * i, ib = neox ? i + n_rot / 2 : 2 * i + 1;
    float a = v[ia], b = v[ib];
    *oa = __fsub_rn(__fmul_rn(a, c), __fmul_rn(b, s));
    *ob = __fadd_rn(__fmul_rn(a, s), __fmul_rn(b, c));
    *ia_out = ia; *ib_out = ib;
}

#endif
