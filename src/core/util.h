/* Small shared helpers: fp16/bf16 conversion, FNV-1a, monotonic time, checked arithmetic. */
#ifndef STRATA_UTIL_H
#define STRATA_UTIL_H
#include <stdint.h>
#include <stddef.h>
#include <string.h>

#if defined(__CUDACC__)
#define STRATA_HD __host__ __device__
#else
#define STRATA_HD
#endif

/* IEEE half -> float, exact for every input (subnormals, inf, NaN payload kept). */
static inline STRATA_HD float fp16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0) {
        if (man == 0) bits = sign;
        else { /* subnormal: normalize */
            int e = -1;
            do { man <<= 1; e++; } while (!(man & 0x400));
            man &= 0x3ff;
            bits = sign | ((uint32_t)(127 - 15 - e) << 23) | (man << 13);
        }
    } else if (exp == 31) bits = sign | 0x7f800000u | (man << 13);
    else bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
    float f; memcpy(&f, &bits, 4); return f;
}

/* float -> IEEE half, round to nearest even (as numpy's astype(float16)). */
static inline STRATA_HD uint16_t f32_to_fp16(float f) {
    uint32_t x; memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000;
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) return (uint16_t)(sign | 0x7c00 | (ax > 0x7f800000u ? 0x200 | ((ax >> 13) & 0x3ff) : 0));
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00); /* overflow to inf (>= 65520) */
    if (ax < 0x38800000u) { /* result subnormal or zero */
        if (ax < 0x33000000u) return (uint16_t)sign; /* < 2^-25: rounds to 0 */
        uint32_t e = ax >> 23, m = (ax & 0x7fffff) | 0x800000;
        uint32_t shift = 126 - e; /* 14 + (113 - e) */
        uint32_t r = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1))) r++;
        return (uint16_t)(sign | r);
    }
    uint32_t r = ((ax - 0x38000000u) >> 13);
    uint32_t rem = ax & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (r & 1))) r++;
    return (uint16_t)(sign | r);
}

static inline STRATA_HD float bf16_to_f32(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16; float f; memcpy(&f, &bits, 4); return f;
}
static inline STRATA_HD uint16_t f32_to_bf16(float f) {
    uint32_t x; memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 64); /* quiet NaN */
    return (uint16_t)((x + (0x7fff + ((x >> 16) & 1))) >> 16);
}

/* FNV-1a 64 over bytes: checksums of kernel outputs and logits. */
static inline uint64_t fnv1a64(const void *p, size_t n) {
    const uint8_t *b = (const uint8_t *)p; uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) { h ^= b[i]; h *= 0x100000001b3ull; }
    return h;
}

double now_seconds(void);           /* monotonic clock */
int    cpu_count(void);             /* online cores */
int    cpu_has_avx2_fma(void);      /* AVX2 + FMA + F16C */
int    cpu_has_avx_vnni(void);      /* AVX-VNNI (the VEX vpdpbusd; CPUID 7.1 EAX bit 4), with AVX2 */

/* Overflow-checked arithmetic: return 1 on overflow. */
static inline int mul_overflow_u64(uint64_t a, uint64_t b, uint64_t *r) { return __builtin_mul_overflow(a, b, r); }
static inline int add_overflow_u64(uint64_t a, uint64_t b, uint64_t *r) { return __builtin_add_overflow(a, b, r); }

/* Allocation hooks (fault injection in tests replaces them). Never abort. */
void *st_malloc(size_t n);
void *st_calloc(size_t n, size_t sz);
void *st_realloc(void *p, size_t n);
void  st_free(void *p);
char *st_strdup(const char *s);
/* Test hook: fail the k-th allocation from now (0: off). */
void  st_alloc_fail_after(long k);
/* Allocations left before the armed failure (0: it has happened, or none is armed): tells a
 * fault-injection loop whether its failure was met or tolerated. */
long  st_alloc_fail_pending(void);
/* Blocks allocated through st_malloc/st_calloc/st_realloc(NULL, ..) and not yet st_free'd
 * (a leak check for tests: take it before and after). */
long  st_alloc_live(void);
#endif
