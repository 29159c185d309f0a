/* Every float input (2^32 bit patterns) through src/cpu/expf_avx2.c's variant that
 * expf_avx2_mode() chose, against the host's expf: the count of inputs whose bits differ.
 *   make NVCC= build/libstrata.a
 *   cc -O2 -ffp-contract=off -fno-math-errno -pthread -D_GNU_SOURCE -Iinclude -Isrc -o build/expf_check \
 *      bench/expf_check.c build/libstrata.a -lm -lpthread -lmicrohttpd -ljansson
 *   build/expf_check            (about a minute on one core) */
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <math.h>
#include "cpu/kernels.h"
#include "core/util.h"

int main(void) {
    if (!cpu_has_avx2_fma()) { printf("no AVX2/FMA\n"); return 0; }
    const int mode = expf_avx2_mode();
    printf("expf_avx2_mode: %d (%s)\n", mode, mode == 1 ? "the FMA build" : mode == 0 ? "the plain build" : "no match");
    if (mode < 0) return 1;
    enum { B = 1 << 16 };
    static float x[B], y[B];
    uint64_t bad = 0, bad_le0 = 0, n = 0;
    for (uint64_t u0 = 0; u0 < (1ull << 32); u0 += B) {
        for (int i = 0; i < B; i++) { uint32_t u = (uint32_t)(u0 + i); memcpy(&x[i], &u, 4); }
        expf_avx2_variant(x, y, B, mode);
        for (int i = 0; i < B; i++) {
            const float r = expf(x[i]);
            if (memcmp(&r, &y[i], 4)) {
                if (bad < 5) printf("differs: x = %a: %a vs expf's %a\n", x[i], y[i], r);
                bad++;
                bad_le0 += x[i] <= 0.0f;
            }
        }
        n += B;
    }
    printf("%llu inputs, %llu differ (%llu of them <= 0)\n", (unsigned long long)n, (unsigned long long)bad,
           (unsigned long long)bad_le0);
    return bad != 0;
}
