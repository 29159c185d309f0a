/* The sampler on the GPU (sample.cu): src/sample's sampler_sample as one kernel, so a decode
 * step can end in a token id on the device (graph replay) and only that id returns.
 * C++ linkage, included by the .cu files only; the C interface is cuda_backend.h. */
#ifndef STRATA_CUDA_SAMPLE_H
#define STRATA_CUDA_SAMPLE_H
#include <cuda_runtime.h>
#include <stdint.h>

/* Device copy of strata_sampler_params (the fields the draw reads). */
typedef struct cuda_sample_params {
    float temperature, top_p, min_p, repeat_penalty;
    int top_k, repeat_last_n, pad[2];
} cuda_sample_params;

/* What a step hands back: the token and the RNG state after the draw (xoshiro256**, the
 * CPU sampler's generator). The kernel reads rng at the start and writes it back. */
typedef struct cuda_sample_io {
    int32_t token, pad;
    uint64_t rng[4];
} cuda_sample_io;

/* dst (a cuda_sample_params) from a strata_sampler_params (C linkage, defined in sample.cu) */
struct strata_sampler_params;
extern "C" void cuda_sample_params_set(void *dst, const struct strata_sampler_params *sp);

/* Bytes of device scratch the sampler needs for a vocabulary of n_vocab. */
size_t cuda_sample_scratch_bytes(int n_vocab);

/* Draw one token from logits[n_vocab] (device) exactly as sampler_sample(s, logits, hist,
 * n_hist) does on the CPU (docs/KERNELS.md, "Sampling"). hist: device token history.
 * d_pos NULL: the history is hist[0 .. n_hist). d_pos set (graph decode): the token being
 * evaluated, ids[0], is first stored at hist[*d_pos], the history is hist[0 .. *d_pos + 1),
 * and after the draw ids[0] = token and *d_pos += 1. io->token gets the token; io->rng is
 * advanced by one draw when temperature > 0 (as the CPU's). sort = 0 leaves out the candidate
 * sort: only for parameters with temperature <= 0 (the draw then takes the argmax and reads no
 * keys). 0 / -1. */
int cuda_sample(const float *logits, int n_vocab, const cuda_sample_params *d_params, int32_t *hist, int n_hist,
                int32_t *ids, int *d_pos, cuda_sample_io *io, void *scratch, int sort, cudaStream_t st);
#endif
