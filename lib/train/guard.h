/* guard.h: the divergence guard of hpct_train and the in-situ session. It judges the loss of
 * every step (the mean over ranks, the same bits on every rank) against a limit that follows
 * its best running mean, keeps the newest checkpoint known good from retention, and words
 * the error that stops a run whose loss ran away. */
#ifndef HPCTI_GUARD_H
#define HPCTI_GUARD_H

#include "../core/core.h"

struct hpcti_guard {
    double factor;             /* limit over the best running mean; 0: the guard is off */
    long reports;              /* steps in a row above the limit that stop the run */
    double loss_ema, best_ema; /* running mean (0.1 per step) and its lowest; best < 0: none */
    double first_loss;         /* the first step's: a low best never makes noise fatal */
    double limit;              /* factor x best_ema, at least first_loss */
    double above_loss;         /* the last loss above the limit (or not finite) */
    long above;                /* steps in a row above the limit */
    long unconfirmed;          /* step of the newest checkpoint, whose loss the next step
                                  measures; -1: none */
    long good;                 /* newest checkpoint known good: retention keeps it; -1: none */
};

/* factor and reports as hpct_train_config_t's; ck (may be NULL) keeps no checkpoint from
 * retention until one is known good. HPCT_ERR_INVALID_ARG (fn named) for a bad pair. */
HPCTI_CHECK hpct_status_t hpcti_guard_init(struct hpcti_guard *g, hpct_ctx_t ctx, const char *fn,
                                           double factor, long reports, hpct_ckpt_t ck);
/* A checkpoint of step `step` was written or loaded: the next step's loss measures it. */
void hpcti_guard_saved(struct hpcti_guard *g, long step);
/* After step `done` with its agreed loss: 0 within the limit (the checkpoint of the step
 * before becomes the one retention keeps); 1 above it (no cadence save of this state); 2 the
 * run diverged (a loss that is not finite, or above for `reports` steps in a row). */
int hpcti_guard_watch(struct hpcti_guard *g, hpct_ckpt_t ck, long done, double loss);
/* What a diverged run leaves to resume from, into buf [n] (the same text on every rank). */
void hpcti_guard_newest(const struct hpcti_guard *g, char *buf, size_t n);
/* HPCT_ERR_LOSS_DIVERGED after step `done` with the detail (fn: the caller), marked as
 * every rank's when dist. */
hpct_status_t hpcti_guard_diverged(const struct hpcti_guard *g, hpct_ctx_t ctx, const char *fn,
                                   long done, int dist);

#endif
