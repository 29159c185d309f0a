/* Speculation that pays: the cost model and the choice of the draft window.
 *
 * Costs are in plain steps: a verify pass of T columns (the token of this step and T - 1
 * drafts, with the verification of every row) takes c[T] times the time of one plain step
 * (c[1] = 1), and drafting one token takes `draft` plain steps (0 for the suffix drafter,
 * whose work is inside the pass's time; a draft model's step). The table comes from timed
 * passes on the session's device (spec_ctl_time: a calibration when the session starts and
 * every pass afterwards, a moving average of log-seconds per T, so the ratio follows the
 * context length and the machine's load).
 *
 * Acceptance: each draft source (suffix drafter, draft model) has a rate a, the probability
 * that a draft is kept given the one before it was, estimated from decayed counts of kept
 * drafts and of rejections over the request's windows (and, for the suffix drafter, from the
 * drafts it proposed while no window ran: checked against the token that came, at no cost).
 * A window of k drafts then emits E(k) = 1 + a + ... + a^k tokens (the drafts kept and the
 * token after them) for c[k+1] + k * draft steps; the window chosen maximises E(k) / cost(k),
 * and is 0 (a plain step) when no k beats 1 by the margin. */
#ifndef STRATA_SPEC_WINDOW_H
#define STRATA_SPEC_WINDOW_H
#include <stdint.h>

#define SPEC_WIN_COLS 8          /* verify windows of up to 8 columns: 7 drafts */
#define SPEC_MARGIN   0.02       /* a window must promise this much over a plain step */

enum { SPEC_SRC_SUFFIX = 0, SPEC_SRC_MODEL = 1, SPEC_SRC_N };

typedef struct spec_costs {
    double c[SPEC_WIN_COLS + 1];   /* c[T] for T = 1..8 (c[0] unused, c[1] = 1) */
    double draft;                  /* one drafted token (draft model), in plain steps */
} spec_costs;

/* Expected tokens a window of k drafts emits at acceptance rate a: 1 + a + ... + a^k. */
double spec_expected(double a, int k);
/* The draft count in 0..kmax (kmax <= 7) that maximises expected tokens per unit of time;
 * 0 unless the best window beats a plain step by SPEC_MARGIN. *gain (may be NULL): the
 * chosen window's E(k) / cost(k) (1 for 0). */
int spec_choose(const spec_costs *c, double a, int kmax, double *gain);
/* Parse "c2,c3,...,c8" (STRATA_SPEC_COSTS; fewer values: the last step's increment goes on).
 * 0, or -1 when it is not a list of increasing numbers >= 1. */
int spec_costs_parse(const char *s, spec_costs *out);

/* Acceptance rate of one source: decayed counts (SPEC_DECAY per window) with a prior of
 * SPEC_PRIOR_A worth SPEC_PRIOR_W observations. */
#define SPEC_DECAY   0.8
#define SPEC_PRIOR_A 0.5
#define SPEC_PRIOR_W 1.0
typedef struct spec_rate { double kept, missed; } spec_rate;
double spec_rate_value(const spec_rate *r);
/* A window of `drafted` drafts kept `kept` of them (kept < drafted: one rejection). */
void spec_rate_update(spec_rate *r, int drafted, int kept);

/* Timings: a new one weighs SPEC_EMA_W in the moving average of log-seconds (moving it by at
 * most a factor 2 before the weight: one preempted pass on a loaded machine), and a width is
 * used once it and the plain step were timed SPEC_MIN_N times each. */
#define SPEC_EMA_W   0.15
#define SPEC_MIN_N   3

/* The per-session controller. */
typedef struct spec_ctl {
    spec_costs prior;                /* calibrated at session start (or STRATA_SPEC_COSTS) */
    int given;                       /* 1: the prior is STRATA_SPEC_COSTS, the verify passes are
                                      *    not re-timed (the same windows on any machine load) */
    double lt[SPEC_WIN_COLS + 1];    /* moving average of log(seconds) of a pass of T columns */
    int nt[SPEC_WIN_COLS + 1];       /* passes timed per T */
    double ld; int nd;               /* the same for one drafted token (draft model) */
    spec_rate rate[SPEC_SRC_N];      /* this request's acceptance per source */
    int pause, pause_len;            /* draft model: plain steps before the next probe window */
    int32_t shadow;                  /* suffix draft for position shadow_pos that no window */
    int shadow_pos;                  /*   verified (-1: none): checked against the token that came */
} spec_ctl;

/* A new controller with this prior (NULL: the built-in CPU-like table). */
void spec_ctl_init(spec_ctl *c, const spec_costs *prior);
/* A new request: acceptance, pauses and shadow forgotten; the timings are kept. */
void spec_ctl_new_request(spec_ctl *c);
/* A pass of T columns took `seconds` (T = 1: a plain step); ignored when c->given. */
void spec_ctl_time(spec_ctl *c, int T, double seconds);
/* Drafting n tokens with a draft model took `seconds`. */
void spec_ctl_time_draft(spec_ctl *c, int n, double seconds);
/* The current cost table: measured ratios where both T and 1 were timed often enough, the
 * prior elsewhere (scaled by the measured / prior ratio of the nearest timed T). */
void spec_ctl_costs(const spec_ctl *c, spec_costs *out);
#endif
