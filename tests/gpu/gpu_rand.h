/* The GPU tests' random inputs: an xorshift64 stream from GPU_RAND_SEED (each test defines its
 * own before including this) and roughly Gaussian values (the sum of 4 uniforms) with occasional
 * 9x outliers, so the absolute maximum varies per quantization block. */
#ifndef STRATA_GPU_RAND_H
#define STRATA_GPU_RAND_H
#include <stdint.h>
#ifndef GPU_RAND_SEED
#error "define GPU_RAND_SEED before including gpu_rand.h"
#endif
static uint64_t rng_state = GPU_RAND_SEED;
static uint64_t rnd(void) {
    rng_state ^= rng_state << 13; rng_state ^= rng_state >> 7; rng_state ^= rng_state << 17;
    return rng_state;
}
static float rnd_val(void) {
    float s = 0;
    for (int i = 0; i < 4; i++) s += (float)(rnd() >> 40) / (float)(1 << 24) - 0.5f;
    if (rnd() % 61 == 0) s *= 9.0f;
    return s;
}
#endif
