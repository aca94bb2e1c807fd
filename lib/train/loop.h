/* loop.h: the pieces around a training step that hpct_train (train.c) and the in-situ
 * session (insitu.c) share: where the context runs, step-boundary reasons and their
 * agreement, resume from the newest checkpoint, saves on the writer rank. */
#ifndef HPCTI_LOOP_H
#define HPCTI_LOOP_H

#include "../core/core.h"
#include "../ckpt/ckpt.h"
#include "../model/model.h"
#include "../model/params.h"

/* This context's rank and world size; 1 when it has a distributed runtime, else 0 (one
 * process: rank 0 of 1). */
int hpcti_loop_where(hpct_ctx_t ctx, int *rank, int *world);

/* Step-boundary reasons, one long each (0 or 1), agreed across ranks with an integer MAX. */
enum { HPCTI_DUE_SAVE = 0, HPCTI_DUE_WALLTIME = 1, HPCTI_DUE_SIGNAL = 2, HPCTI_DUE_N = 3 };
/* flags [HPCTI_DUE_N] = this rank's reasons after `done` steps: ck's cadence (steps or
 * seconds), walltime margin and caught signals; only a caught signal when ck is NULL. */
void hpcti_loop_due(hpct_ckpt_t ck, long done, long *flags);
/* hpct_train's agreement after each step, one operation: flags [HPCTI_DUE_N] become their MAX
 * over ranks, losses [world] every rank's loss of the step, and (times not NULL) times [world]
 * every rank's busy time, both in rank order. Collective when distributed. */
HPCTI_CHECK hpct_status_t hpcti_loop_agree_step(hpct_ctx_t ctx, long *flags, double loss,
                                                double *losses, double busy, double *times);
/* After the agreement: 1 when the flags stop the run after step `done` (logged), else 0.
 * *signo = the signal to report: this rank's, SIGTERM when only another rank caught one,
 * 0 when the walltime margin stops the run. */
int hpcti_loop_stop(hpct_ctx_t ctx, const long *flags, long done, int *signo);

/* Load the newest valid checkpoint on every rank when resume and ck are set. *found is the
 * same on every rank (agreed: an error names the rank when ranks differ, or when they loaded
 * different steps, and a load error on one rank is every rank's). Without a checkpoint the
 * replicas become rank 0's. fn names the caller in errors. Collective when distributed. */
HPCTI_CHECK hpct_status_t hpcti_loop_load(hpct_ctx_t ctx, const char *fn, hpct_ckpt_t ck, hpct_params_t params,
                              hpct_optimizer_t opt, int resume, hpct_ckpt_meta_t *meta, int *found);
/* After a load: opt continues from meta's step, and (distributed) the replicas must agree. */
HPCTI_CHECK hpct_status_t hpcti_loop_adopt(hpct_ctx_t ctx, const char *fn, hpct_params_t params,
                               hpct_optimizer_t opt, const hpct_ckpt_meta_t *meta);

/* Save params, opt and meta (its step set from opt) when rank is ck's writer rank; wait: until
 * the file is durable. Other ranks note the save (their cadence clocks restart). *wrote = 1
 * when this rank wrote. ck NULL: nothing. */
HPCTI_CHECK hpct_status_t hpcti_loop_save(hpct_ckpt_t ck, int rank, hpct_params_t params, hpct_optimizer_t opt,
                              hpct_ckpt_meta_t *meta, int wait, int *wrote);

#endif
