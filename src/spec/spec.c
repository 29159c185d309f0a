#include "spec.h"

int32_t spec_draw(const float *p, int n, double u) {
    double tot = 0;
    for (int i = 0; i < n; i++) tot += p[i];
    double cum = 0, target = u * tot;
    int32_t last = -1;
    for (int i = 0; i < n; i++) {
        if (p[i] <= 0) continue;
        cum += p[i];
        last = i;
        if (target < cum) return i;
    }
    return last >= 0 ? last : 0;
}

int spec_accept_sampled(const float *p, const float *q, int n, int32_t d, double u1, double u2, int32_t *replacement) {
    double pd = d >= 0 && d < n ? p[d] : 0, qd = q ? (d >= 0 && d < n ? q[d] : 0) : 1.0;
    if (qd > 0 && u1 * qd < pd) return 1;   /* accept with probability min(1, p/q) */
    /* residual: max(0, p - q), walked without materializing it */
    double tot = 0;
    for (int i = 0; i < n; i++) {
        double r = p[i] - (q ? q[i] : (i == d ? 1.0 : 0.0));
        if (r > 0) tot += r;
    }
    if (tot <= 0) { *replacement = spec_draw(p, n, u2); return 0; }
    double target = u2 * tot, cum = 0;
    int32_t last = 0;
    for (int i = 0; i < n; i++) {
        double r = p[i] - (q ? q[i] : (i == d ? 1.0 : 0.0));
        if (r <= 0) continue;
        cum += r;
        last = i;
        if (target < cum) { *replacement = i; return 0; }
    }
    *replacement = last;
    return 0;
}
