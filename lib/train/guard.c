/* guard.c: the divergence guard (guard.h). */
#include "guard.h"
#include "../ckpt/ckpt.h"

#include <math.h>
#include <stdio.h>

hpct_status_t hpcti_guard_init(struct hpcti_guard *g, hpct_ctx_t ctx, const char *fn, double factor,
                               long reports, hpct_ckpt_t ck)
{
    *g = (struct hpcti_guard){
        .factor = factor, .reports = reports, .best_ema = -1.0, .unconfirmed = -1, .good = -1};
    if (!(factor >= 0) || (factor > 0 && reports < 1))
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                           "%s: divergence_factor (%g) must be >= 0 and divergence_reports (%ld) "
                           ">= 1",
                           fn, factor, reports);
    hpcti_ckpt_protect(ck, -1); /* until a checkpoint is known good */
    return HPCT_SUCCESS;
}

void hpcti_guard_saved(struct hpcti_guard *g, long step)
{
    g->unconfirmed = step;
}

int hpcti_guard_watch(struct hpcti_guard *g, hpct_ckpt_t ck, long done, double loss)
{
    if (g->factor <= 0) return 0;
    if (!isfinite(loss)) return g->above_loss = loss, 2;
    if (g->best_ema < 0) g->first_loss = g->loss_ema = g->best_ema = loss; /* the baseline */
    g->loss_ema = 0.9 * g->loss_ema + 0.1 * loss;
    g->best_ema = fmin(g->best_ema, g->loss_ema);
    g->limit = fmax(g->factor * g->best_ema, g->first_loss);
    int above = g->best_ema > 0 && loss > g->limit && g->loss_ema > g->limit;
    g->above = above ? g->above + 1 : 0;
    if (above) {
        g->above_loss = loss;
        return g->above >= g->reports ? 2 : 1;
    }
    if (g->unconfirmed == done - 1) { /* the checkpoint this loss measured is good */
        g->good = g->unconfirmed;
        hpcti_ckpt_protect(ck, g->good);
    }
    return 0;
}

void hpcti_guard_newest(const struct hpcti_guard *g, char *buf, size_t n)
{
    if (g->good >= 0 && g->unconfirmed > g->good)
        snprintf(buf, n,
                 "the last good checkpoint is of step %ld; the newer one of step %ld holds the "
                 "state whose loss was above the limit (move it aside to resume from step %ld)",
                 g->good, g->unconfirmed, g->good);
    else if (g->good >= 0)
        snprintf(buf, n, "the newest checkpoint, of step %ld, is the last good one", g->good);
    else if (g->unconfirmed >= 0)
        snprintf(buf, n, "the newest checkpoint is of step %ld, not known good", g->unconfirmed);
    else
        snprintf(buf, n, "no checkpoint was written");
}

hpct_status_t hpcti_guard_diverged(const struct hpcti_guard *g, hpct_ctx_t ctx, const char *fn,
                                   long done, int dist)
{
    char where[300];
    hpcti_guard_newest(g, where, sizeof where);
    if (!isfinite(g->above_loss))
        hpcti_error(ctx, HPCT_ERR_LOSS_DIVERGED,
                    "%s: training diverged at step %ld: its loss is %g (mean over ranks); no "
                    "checkpoint of this state was saved; %s",
                    fn, done, g->above_loss, where);
    else
        hpcti_error(ctx, HPCT_ERR_LOSS_DIVERGED,
                    "%s: training diverged after step %ld: its loss %g (mean over ranks) is above "
                    "its limit %g (%g x its best running mean %g, and at least the first step's "
                    "%g) for %ld step(s) in a row (divergence_factor, divergence_reports); no "
                    "checkpoint of this state was saved; %s",
                    fn, done, g->above_loss, g->limit, g->factor, g->best_ema, g->first_loss,
                    g->above, where);
    if (dist) hpcti_mark_error_shared(ctx);
    return HPCT_ERR_LOSS_DIVERGED;
}
