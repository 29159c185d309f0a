/* STRATA_Q6_PLANAR on the GPU (issue 20, item 3; docs/KERNELS.md, "The planar Q6_K head"): the upload
 * makes a Q6_K output head's planar copy (src/quant/q6p.h) beside its upload, in the weight's dev_r4, and
 * a one-column pass of the head reads that copy by matvec_kqp_kernel<KQ_Q6P>: the same bits as the
 * Q6_K kernels. C linkage (the GPU tests call it). */
#ifndef STRATA_Q6P_CUDA_H
#define STRATA_Q6P_CUDA_H
#ifdef __cplusplus
extern "C" {
#endif
int cuda_q6p_env(void);                          /* STRATA_Q6_PLANAR: 1 the upload makes the copy, 0 not */
void cuda_matvec_set_q6p(int on);                /* 1 (default): one-column passes read a copy where one exists */
unsigned long cuda_matvec_q6p_launches(void);    /* host side, as cuda_matvec_kq_launches */
void cuda_matvec_q6p_init(void);                 /* once, by the upload that makes a copy */
#ifdef __cplusplus
/* the launch (CUDA translation units): g's W[] the planar rows (row_bytes q6p_row_bytes(n_in)), T = 1; -1
 * where it does not apply (nothing launched: the caller runs the Q6_K kernels on the original rows) */
struct mv_group;
int cuda_matvec_q6p_group(const struct mv_group *g, int64_t n_in, const void *act, int T, cudaStream_t st);
}
#endif
#endif
