/* The cost model and the window choice (window.h). */
#include "window.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

double spec_expected(double a, int k) {
    double e = 1, p = 1;
    for (int i = 0; i < k; i++) { p *= a; e += p; }
    return e;
}

int spec_choose(const spec_costs *c, double a, int kmax, double *gain) {
    if (kmax > SPEC_WIN_COLS - 1) kmax = SPEC_WIN_COLS - 1;
    if (a < 0) a = 0;
    if (a > 1) a = 1;
    int best = 0;
    double best_g = 1.0;
    for (int k = 1; k <= kmax; k++) {
        double cost = c->c[k + 1] + k * c->draft;
        double g = cost > 0 ? spec_expected(a, k) / cost : 0;
        if (g > best_g) { best_g = g; best = k; }
    }
    if (best_g < 1.0 + SPEC_MARGIN) { best = 0; best_g = 1.0; }
    if (gain) *gain = best_g;
    return best;
}

int spec_costs_parse(const char *s, spec_costs *out) {
    memset(out, 0, sizeof *out);
    out->c[1] = 1;
    int T = 2;
    const char *p = s;
    while (*p && T <= SPEC_WIN_COLS) {
        char *end;
        double v = strtod(p, &end);
        if (end == p || !(v >= out->c[T - 1]) || v > 1e6) return -1;
        out->c[T++] = v;
        p = end;
        if (*p == ',') p++;
        else if (*p) return -1;
    }
    if (*p || T == 2) return -1;
    for (; T <= SPEC_WIN_COLS; T++) out->c[T] = out->c[T - 1] + (out->c[T - 1] - out->c[T - 2]);
    return 0;
}

double spec_rate_value(const spec_rate *r) {
    return (r->kept + SPEC_PRIOR_A * SPEC_PRIOR_W) / (r->kept + r->missed + SPEC_PRIOR_W);
}

void spec_rate_update(spec_rate *r, int drafted, int kept) {
    if (drafted <= 0) return;
    r->kept = r->kept * SPEC_DECAY + kept;
    r->missed = r->missed * SPEC_DECAY + (kept < drafted);
}

void spec_ctl_init(spec_ctl *c, const spec_costs *prior) {
    memset(c, 0, sizeof *c);
    if (prior) c->prior = *prior;
    else {   /* a CPU-like table: the weights read once, each column adds a fifth of a step */
        for (int T = 1; T <= SPEC_WIN_COLS; T++) c->prior.c[T] = 1 + 0.2 * (T - 1);
    }
    c->prior.c[1] = 1;
    spec_ctl_new_request(c);
}

void spec_ctl_new_request(spec_ctl *c) {
    memset(c->rate, 0, sizeof c->rate);
    c->pause = c->pause_len = 0;
    c->shadow = -1;
    c->shadow_pos = -1;
}

static void ema_log(double *l, int *n, double seconds) {
    if (!(seconds > 0)) return;
    double x = log(seconds);
    if (*n == 0) *l = x;
    else {
        /* one preempted pass (a loaded machine) moves the average by at most a factor 2 */
        if (x > *l + 0.693) x = *l + 0.693;
        if (x < *l - 0.693) x = *l - 0.693;
        *l += SPEC_EMA_W * (x - *l);
    }
    (*n)++;
}

void spec_ctl_time(spec_ctl *c, int T, double seconds) {
    if (T < 1 || T > SPEC_WIN_COLS || c->given) return;
    ema_log(&c->lt[T], &c->nt[T], seconds);
}

void spec_ctl_time_draft(spec_ctl *c, int n, double seconds) {
    if (n <= 0) return;
    ema_log(&c->ld, &c->nd, seconds / n);
}

void spec_ctl_costs(const spec_ctl *c, spec_costs *out) {
    *out = c->prior;
    out->c[1] = 1;
    if (c->nt[1] < SPEC_MIN_N) return;
    double meas[SPEC_WIN_COLS + 1] = { 0 };
    for (int T = 2; T <= SPEC_WIN_COLS; T++)
        if (c->nt[T] >= SPEC_MIN_N) meas[T] = exp(c->lt[T] - c->lt[1]);
    for (int T = 2; T <= SPEC_WIN_COLS; T++) {
        if (meas[T] > 0) { out->c[T] = meas[T]; continue; }
        int near = 0;   /* the nearest timed T: its measured / prior ratio scales the prior */
        for (int d = 1; d < SPEC_WIN_COLS && !near; d++) {
            if (T - d >= 2 && meas[T - d] > 0) near = T - d;
            else if (T + d <= SPEC_WIN_COLS && meas[T + d] > 0) near = T + d;
        }
        if (near) out->c[T] = c->prior.c[T] * meas[near] / c->prior.c[near];
    }
    /* a window is never cheaper than a plain step, nor than a narrower window (timing noise) */
    for (int T = 2; T <= SPEC_WIN_COLS; T++)
        if (out->c[T] < out->c[T - 1]) out->c[T] = out->c[T - 1];
    if (c->nd >= SPEC_MIN_N) out->draft = exp(c->ld - c->lt[1]);
}
