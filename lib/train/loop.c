/* loop.c: what hpct_train and the in-situ session do around a step, in one place. Every
 * decision taken across ranks is an integer agreement (lib/comm/runtime/agree.c). */
#include "config.h"
#include "loop.h"
#include "../comm/agree.h"
#include "../comm/dist.h"

#include <signal.h>
#include <stdio.h>

int hpcti_loop_where(hpct_ctx_t ctx, int *rank, int *world)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    *rank = d ? d->rank : 0;
    *world = d ? d->size : 1;
    return d != NULL;
}

void hpcti_loop_due(hpct_ckpt_t ck, long done, long *flags)
{
    int due = 0;
    if (ck)
        hpct_ckpt_due(ck, done, &due);
    else if (hpct_signals_pending(NULL, NULL))
        due = HPCT_CKPT_DUE_SIGNAL;
    flags[HPCTI_DUE_SAVE] = (due & (HPCT_CKPT_DUE_STEPS | HPCT_CKPT_DUE_SECONDS)) != 0;
    flags[HPCTI_DUE_WALLTIME] = (due & HPCT_CKPT_DUE_WALLTIME) != 0;
    flags[HPCTI_DUE_SIGNAL] = (due & HPCT_CKPT_DUE_SIGNAL) != 0;
}

hpct_status_t hpcti_loop_agree_step(hpct_ctx_t ctx, long *flags, double loss, double *losses,
                                    double busy, double *times)
{
    struct hpcti_agreement a = {flags, HPCTI_DUE_N, NULL, 0, loss, losses, busy, times};
    return hpcti_agree_all(ctx,
                           times ? "step-boundary agreement (checkpoint, walltime, signal, loss, "
                                   "step times)"
                                 : "step-boundary agreement (checkpoint, walltime, signal, loss)",
                           &a);
}

int hpcti_loop_stop(hpct_ctx_t ctx, const long *flags, long done, int *signo)
{
    *signo = 0;
    if (!flags[HPCTI_DUE_WALLTIME] && !flags[HPCTI_DUE_SIGNAL]) return 0;
    if (flags[HPCTI_DUE_SIGNAL]) {
        hpct_signals_pending(signo, NULL);
        if (!*signo) *signo = SIGTERM, hpcti_signals_stopping(); /* caught on another rank */
    }
    hpcti_log(ctx, HPCT_LOG_INFO, "stopping after step %ld: %s", done,
              flags[HPCTI_DUE_SIGNAL] ? "preemption signal" : "walltime margin reached");
    return 1;
}

/* One agreement on [load failure, found, -found, step, -step] (MAX): a failure on any rank,
 * ranks that differ on whether they found a checkpoint, or on its step. */
static hpct_status_t agree_load(hpct_ctx_t ctx, const char *fn, hpct_status_t s, long step)
{
    char mine[sizeof ctx->last_error];
    snprintf(mine, sizeof mine, "%s", ctx->last_error);
    int rank, world, found = s == HPCT_SUCCESS;
    hpcti_loop_where(ctx, &rank, &world);
    long v[5] = {hpcti_fail_code(ctx, s == HPCT_ERR_NOT_FOUND ? HPCT_SUCCESS : s), found,
                 -(long)found, found ? step : -1, found ? -step : -1};
    hpct_status_t a = hpcti_agree(ctx, "checkpoint agreement at resume", v, 5, MPI_MAX);
    if (!a) a = hpcti_share_failure(ctx, fn, v[0], mine);
    if (a) return a;
    if (v[1] != -v[2])
        return hpcti_error(ctx, HPCT_ERR_STATE,
                           "%s: rank %d found %s checkpoint but other ranks did%s: is the "
                           "checkpoint directory shared by all nodes?",
                           fn, rank, found ? "a" : "no", found ? " not" : "");
    if (found && v[3] != -v[4])
        return hpcti_error(ctx, HPCT_ERR_STATE,
                           "%s: ranks loaded checkpoints of different steps (%ld to %ld; rank %d "
                           "has step %ld): each rank's directory must hold the same checkpoints",
                           fn, -v[4], v[3], rank, step);
    return HPCT_SUCCESS;
}

hpct_status_t hpcti_loop_load(hpct_ctx_t ctx, const char *fn, hpct_ckpt_t ck, hpct_params_t params,
                              hpct_optimizer_t opt, int resume, hpct_ckpt_meta_t *meta, int *found)
{
    int rank, world, dist = hpcti_loop_where(ctx, &rank, &world);
    hpct_status_t s = HPCT_ERR_NOT_FOUND;
    if (resume && ck) s = hpct_ckpt_load_latest(ck, params, opt, meta);
    *found = s == HPCT_SUCCESS;
    hpct_status_t a = agree_load(ctx, fn, s, meta->step);
    if (a) return a;
    if (!*found && dist) return hpct_params_broadcast(params, 0);
    return HPCT_SUCCESS;
}

hpct_status_t hpcti_loop_adopt(hpct_ctx_t ctx, const char *fn, hpct_params_t params,
                               hpct_optimizer_t opt, const hpct_ckpt_meta_t *meta)
{
    int rank, world, dist = hpcti_loop_where(ctx, &rank, &world);
    hpct_status_t s = hpct_optimizer_set_step(opt, meta->step);
    if (s) return s;
    if (dist && (s = hpct_params_check_replicas(params)))
        return hpcti_error(ctx, s, "%s: ranks loaded different checkpoints (%s)", fn,
                           hpct_last_error(ctx));
    return HPCT_SUCCESS;
}

hpct_status_t hpcti_loop_save(hpct_ckpt_t ck, int rank, hpct_params_t params, hpct_optimizer_t opt,
                              hpct_ckpt_meta_t *meta, int wait, int *wrote)
{
    *wrote = 0;
    if (!ck) return HPCT_SUCCESS;
    hpct_optimizer_get_step(opt, &meta->step);
    if (rank != hpcti_ckpt_writer_rank(ck)) {
        hpcti_ckpt_note_save(ck, meta->step);
        return HPCT_SUCCESS;
    }
    hpct_status_t s = hpct_ckpt_save(ck, params, opt, meta);
    if (!s && wait) s = hpct_ckpt_wait(ck);
    *wrote = !s;
    return s;
}
