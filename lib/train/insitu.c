/* insitu.c: training inside a simulation's own time loop. Each hpct_insitu_step is
 *   local gradients -> ONE agreement (status, batch sizes, loss sums, save/stop reasons)
 *   -> weighted average -> optimizer -> replica check -> save if due (and an agreement on
 *   its status) -> HPCT_PREEMPTED when a signal or the walltime margin stops the run.
 * The save/stop reasons are sampled before the step's averaging and acted on after its
 * update, so one agreement per step carries them and the error check together. */
#include "insitu.h"
#include "blocks.h"
#include "guard.h"
#include "loop.h"
#include "observe.h"
#include "../comm/agree.h"
#include "../comm/dist.h"
#include "../comm/live.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct hpct_insitu {
    hpct_ctx_t ctx;
    hpct_model_t model; /* NULL: bring-your-own gradients */
    hpct_params_t params;
    hpct_optimizer_t opt;
    hpct_ckpt_t ck; /* NULL: no checkpoints */
    hpct_insitu_config_t cfg;
    hpct_signals_t signals; /* installed by this session, or NULL */
    int rank, world, dist;
    int started;
    int finished;    /* 1: hpct_insitu_finish succeeded; 2: it failed (it may be retried) */
    long step;       /* optimizer steps completed */
    long last_saved; /* step of the newest checkpoint written or loaded; -1: none */
    long last_batch; /* global batch B of the last step (saved in the checkpoint meta) */
    double *losses;  /* [world] every rank's local_mean * local_batch of a step */
    char model_desc[256];
    /* progress since the last report (times are this rank's) */
    hpct_progress_t progress;
    double report_t0, inside_s, inside0, comm0, loss_sum;
    long loss_n, samples, report_step0;
    long test_delay_ms;         /* test hook HPCT_TEST_STEP_DELAY_MS: sleep after each step, ms */
    struct hpcti_observer obs;  /* metrics file and step times (observe.h), from start */
    int timeline;               /* 1: this session opened the context's timeline */
    double last_end;            /* monotonic time the last step call returned; 0: none yet */
    long evaluated_at;          /* step of the last evaluation; -1: none */
    struct hpcti_blocks blocks; /* arrays decomposed in blocks (hpct_insitu_add_block) */
    struct hpcti_guard guard;   /* the divergence guard (cfg.divergence_factor) */
    int diverged;               /* 1: the guard stopped the session (nothing more to train) */
    void *owned;                /* what hpct_insitu_open made (open.c), or NULL ... */
    void (*free_owned)(void *); /* ... and how to free it after the session */
};

static double comm_wait_s(hpct_insitu_t S)
{
    double wait = 0.0;
    if (S->dist) hpct_comm_stats(S->ctx, &wait, NULL);
    return wait;
}

/* ---- create / start / finish / destroy ------------------------------------------- */

/* The context errors go to: the model's, the set's or the optimizer's (NULL: none given). */
static hpct_ctx_t ctx_of(hpct_model_t model, hpct_params_t params, hpct_optimizer_t opt)
{
    hpct_params_t p = NULL;
    if (model) hpct_model_params(model, &p);
    if (!p) p = params ? params : hpcti_optimizer_params(opt);
    return p ? p->ctx : NULL;
}

static hpct_status_t check_create(hpct_ctx_t ctx, hpct_model_t model, hpct_params_t params,
                                  hpct_optimizer_t opt, const hpct_insitu_config_t *cfg)
{
    static const char fn[] = "hpct_insitu_create";
    hpct_params_t mp = NULL;
    if (!opt) return hpcti_error(ctx, HPCT_ERR_INVALID_ARG, "%s: opt is NULL", fn);
    if (model && hpct_model_params(model, &mp))
        return hpcti_error(ctx, HPCT_ERR_STATE, "%s: build the model first", fn);
    if (model && params && params != mp)
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                           "%s: params must be NULL or the model's own set when a model is given",
                           fn);
    if (hpcti_optimizer_params(opt) != (model ? mp : params))
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                           "%s: opt updates another parameter set than the session's %s", fn,
                           model ? "model" : "params");
    if (cfg->version < 1 || cfg->version > HPCT_INSITU_CONFIG_VERSION)
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                           "%s: hpct_insitu_config_t.version is %u (start from "
                           "HPCT_INSITU_CONFIG_INITIALIZER)",
                           fn, cfg->version);
    if (cfg->log_interval < 0)
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                           "%s: hpct_insitu_config_t.log_interval is %ld, must be >= 0", fn,
                           cfg->log_interval);
    if (cfg->version >= 3 && cfg->eval_interval < 0)
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                           "%s: hpct_insitu_config_t.eval_interval is %ld, must be >= 0", fn,
                           cfg->eval_interval);
    if (cfg->version >= 3 && cfg->eval_data && !model)
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                           "%s: hpct_insitu_config_t.eval_data needs a model to evaluate (this "
                           "session brings its own gradients)",
                           fn);
    return HPCT_SUCCESS;
}

/* SIGTERM and SIGUSR1, unless the process already installed them through the library: then
 * the flag they set is the one the session reads. */
static hpct_status_t catch_signals(hpct_insitu_t S)
{
    if (!S->cfg.catch_signals) return HPCT_SUCCESS;
    hpct_status_t s = hpct_signals_install(S->ctx, NULL, 0, &S->signals);
    if (s != HPCT_ERR_STATE) return s;
    hpcti_clear_error(S->ctx);
    hpcti_log(S->ctx, HPCT_LOG_INFO,
              "hpct_insitu_create: preemption signals are already installed; the session reads "
              "the flag they set");
    return HPCT_SUCCESS;
}

hpct_status_t hpct_insitu_create(hpct_model_t model, hpct_params_t params, hpct_optimizer_t opt,
                                 hpct_ckpt_t ck, const hpct_insitu_config_t *cfg,
                                 hpct_insitu_t *session)
{
    static const hpct_insitu_config_t defaults = HPCT_INSITU_CONFIG_INITIALIZER;
    hpct_ctx_t ctx = ctx_of(model, params, opt);
    if (!ctx) return HPCT_ERR_INVALID_ARG; /* no handle to tell anything to */
    hpcti_clear_error(ctx);
    if (!session)
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG, "hpct_insitu_create: session is NULL");
    *session = NULL;
    if (!cfg) cfg = &defaults;
    hpct_status_t s = check_create(ctx, model, params, opt, cfg);
    if (s) return s;
    hpct_insitu_t S = hpcti_calloc(ctx, 1, sizeof *S, "an in-situ session");
    if (!S) return HPCT_ERR_NO_MEMORY;
    *S = (struct hpct_insitu){.ctx = ctx, .model = model, .opt = opt, .ck = ck, .cfg = defaults};
    memcpy(&S->cfg, cfg,
           cfg->version >= 4   ? sizeof S->cfg
           : cfg->version == 3 ? offsetof(hpct_insitu_config_t, divergence_factor)
           : cfg->version == 2 ? offsetof(hpct_insitu_config_t, eval_data)
                               : offsetof(hpct_insitu_config_t, metrics_path));
    S->params = hpcti_optimizer_params(opt);
    S->dist = hpcti_loop_where(ctx, &S->rank, &S->world);
    S->last_saved = -1, S->evaluated_at = -1;
    const char *delay = hpcti_test_hook("HPCT_TEST_STEP_DELAY_MS");
    if (delay) S->test_delay_ms = atol(delay);
    snprintf(S->model_desc, sizeof S->model_desc, "byog");
    if (model) hpct_model_describe(model, S->model_desc, sizeof S->model_desc);
    /* the session averages after the local step: no averaging inside backward */
    if (model) hpct_model_set_grad_averaging(model, 0);
    S->losses = hpcti_calloc(ctx, (size_t)S->world, sizeof *S->losses, "the per-rank losses");
    s = S->losses ? hpcti_guard_init(&S->guard, ctx, "hpct_insitu_create", S->cfg.divergence_factor,
                                     S->cfg.divergence_reports, ck)
                  : HPCT_ERR_NO_MEMORY;
    if (!s) s = catch_signals(S);
    if (s) {
        hpct_insitu_destroy(S);
        return s;
    }
    *session = S;
    return HPCT_SUCCESS;
}

hpct_status_t hpct_insitu_start(hpct_insitu_t S, long *step)
{
    static const char fn[] = "hpct_insitu_start";
    if (!S) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(S->ctx);
    if (S->started)
        return hpcti_error(S->ctx, HPCT_ERR_STATE, "%s: the session is already started", fn);
    hpct_ckpt_meta_t meta = HPCT_CKPT_META_INITIALIZER;
    int found;
    hpcti_obs_close(&S->obs); /* a start that failed before may have opened it */
    hpct_status_t s =
        hpcti_obs_open(&S->obs, S->ctx, fn, S->cfg.metrics_path, S->cfg.straggler_threshold);
    if (s) return s;
    if (S->cfg.timeline_path && S->cfg.timeline_path[0] && !hpcti_timeline_is_open(S->ctx)) {
        hpct_topology_t t = HPCT_TOPOLOGY_INITIALIZER;
        if (S->dist) hpct_topology(S->ctx, &t);
        s = hpcti_timeline_open(S->ctx, S->cfg.timeline_path, S->rank, t.hostname,
                                S->cfg.timeline_steps, S->cfg.timeline_first);
        if (S->dist) s = hpcti_agree_status(S->ctx, fn, s, S->ctx->last_error);
        if (s) return s;
        S->timeline = 1;
    }
    hpcti_obs_run_start(&S->obs, "insitu", S->ck, S->model_desc, 0, 0);
    double t0 = hpcti_now();
    if (S->blocks.n && (s = hpcti_blocks_before_load(&S->blocks, S->ctx, S->ck))) return s;
    s = hpcti_loop_load(S->ctx, fn, S->ck, S->params, S->opt, S->cfg.resume, &meta, &found);
    if (S->blocks.n) {
        hpct_status_t b =
            hpcti_blocks_after_load(&S->blocks, S->ctx, S->ck, S->rank, !s && found, meta.path);
        if (!s) s = hpcti_agree_status(S->ctx, fn, b, S->ctx->last_error);
    }
    if (!s) hpcti_obs_resume(&S->obs, S->ck, found, &meta, hpcti_now() - t0);
    if (!s && found) s = hpcti_loop_adopt(S->ctx, fn, S->params, S->opt, &meta);
    if (s) return s;
    hpct_optimizer_get_step(S->opt, &S->step);
    if (found) {
        S->last_saved = S->step, S->last_batch = meta.global_batch;
        hpcti_guard_saved(&S->guard, S->step); /* the first step's loss measures it */
        hpcti_log(S->ctx, HPCT_LOG_INFO, "resumed from %s at step %ld (saved by %d ranks)",
                  meta.path, meta.step, meta.world_size);
    }
    S->started = 1;
    S->report_t0 = hpcti_now(), S->report_step0 = S->step, S->comm0 = comm_wait_s(S);
    hpcti_obs_interval_reset(&S->obs, S->step, S->comm0);
    if (step) *step = S->step;
    return HPCT_SUCCESS;
}

/* Save the state after the last step on the writer rank (wait: until durable), and let the
 * caller change the extras afterwards (the copy is taken before returning). */
static hpct_status_t save(hpct_insitu_t S, int wait)
{
    hpct_ckpt_meta_t meta = HPCT_CKPT_META_INITIALIZER;
    meta.epoch = 0, meta.cursor_epoch = 0, meta.cursor_step = S->step;
    meta.world_size = S->world;
    meta.global_batch = S->last_batch;
    meta.model = S->model_desc;
    int wrote;
    double t0 = hpcti_now();
    hpct_status_t s = hpcti_loop_save(S->ck, S->rank, S->params, S->opt, &meta, wait, &wrote);
    if (!s && wrote) s = hpct_ckpt_before_update(S->ck);
    hpcti_obs_wait(&S->obs, hpcti_now() - t0);
    if (!s && wrote) hpcti_obs_saved(&S->obs, S->ck, S->step, t0, hpcti_now() - t0);
    if (!s) S->last_saved = S->step;
    if (!s) hpcti_guard_saved(&S->guard, S->step);
    return s;
}

/* save (the writer gathers the block arrays first), then every rank learns its status (the
 * writer's error becomes every rank's). */
static hpct_status_t save_agreed(hpct_insitu_t S, const char *fn, int wait)
{
    hpct_status_t s = hpcti_blocks_gather(&S->blocks, S->ctx, S->ck, S->rank);
    if (!s) s = save(S, wait);
    return hpcti_agree_status(S->ctx, fn, s, S->ctx->last_error);
}

/* Evaluate on cfg.eval_data after the last step (every rank), record and report it. */
static hpct_status_t evaluate(hpct_insitu_t S)
{
    double loss = 0.0, acc = 0.0, t0 = hpcti_now();
    long n = 0;
    hpct_status_t s = hpct_evaluate(S->model, S->cfg.eval_data, &loss, &acc, &n);
    double dt = hpcti_now() - t0;
    hpcti_obs_wait(&S->obs, dt);
    if (s) return s;
    S->evaluated_at = S->step;
    hpcti_obs_eval(&S->obs, S->step, loss, acc, n, dt);
    if (S->cfg.evaluated) S->cfg.evaluated(S->step, loss, acc, n, S->cfg.progress_arg);
    return HPCT_SUCCESS;
}

/* An evaluation is due after the last step (every eval_interval steps). */
static int eval_due(const struct hpct_insitu *S)
{
    long k = S->cfg.eval_interval;
    return S->cfg.eval_data && k > 0 && S->step % k == 0 && S->step != S->evaluated_at;
}

hpct_status_t hpct_insitu_finish(hpct_insitu_t S)
{
    static const char fn[] = "hpct_insitu_finish";
    if (!S) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(S->ctx);
    if (!S->started) return HPCT_SUCCESS;
    if (S->finished == 1)
        return hpcti_error(S->ctx, HPCT_ERR_STATE,
                           "%s: the session is already finished (after step %ld, its final "
                           "checkpoint written)",
                           fn, S->step);
    hpct_status_t s = HPCT_SUCCESS;
    if (S->diverged) /* its state is the one not to save */
        s = hpcti_guard_diverged(&S->guard, S->ctx, fn, S->step, S->dist);
    else if (S->ck && S->last_saved != S->step)
        s = save_agreed(S, fn, 1);
    else if (S->ck) {
        s = S->rank == hpcti_ckpt_writer_rank(S->ck) ? hpct_ckpt_wait(S->ck) : 0;
        s = hpcti_agree_status(S->ctx, fn, s, S->ctx->last_error);
    }
    if (!s && S->cfg.eval_data && S->step != S->evaluated_at) s = evaluate(S);
    hpcti_obs_poll_ckpt(&S->obs, S->ck);
    hpcti_obs_stop(&S->obs, s ? "error" : "done", S->step, s, s ? S->ctx->last_error : NULL);
    S->finished = s ? 2 : 1;
    return s;
}

void hpct_insitu_destroy(hpct_insitu_t S)
{
    if (!S) return;
    hpct_signals_uninstall(S->signals);
    hpcti_obs_close(&S->obs);
    if (S->timeline) hpcti_timeline_close(S->ctx);
    hpcti_blocks_free(&S->blocks);
    free(S->losses);
    void *owned = S->owned;
    void (*free_owned)(void *) = S->free_owned;
    free(S);
    if (free_owned) free_owned(owned);
}

void hpcti_insitu_own(hpct_insitu_t S, void *owned, void (*free_owned)(void *))
{
    S->owned = owned, S->free_owned = free_owned;
}

int hpcti_insitu_finished(hpct_insitu_t S)
{
    return S && S->finished == 1;
}

hpct_model_t hpcti_insitu_model(hpct_insitu_t S)
{
    return S ? S->model : NULL;
}

hpct_ctx_t hpcti_insitu_ctx(hpct_insitu_t S)
{
    return S ? S->ctx : NULL;
}

const char *hpct_insitu_last_error(hpct_insitu_t S)
{
    return hpct_last_error(S ? S->ctx : NULL);
}

hpct_status_t hpct_insitu_predict(hpct_insitu_t S, const float *x, int batch, float *out)
{
    if (!S) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(S->ctx);
    if (!S->model)
        return hpcti_error(S->ctx, HPCT_ERR_STATE,
                           "hpct_insitu_predict: the session has no model (it brings its own "
                           "gradients)");
    return hpct_model_forward(S->model, x, batch, out);
}

hpct_status_t hpct_insitu_add_block(hpct_insitu_t S, const char *name, hpct_ckpt_dtype_t dtype,
                                    void *data, int ndims, const size_t *global_shape,
                                    const size_t *offset, const size_t *count)
{
    if (!S) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(S->ctx);
    if (S->started) /* the same on every rank: no agreement needed */
        return hpcti_error(S->ctx, HPCT_ERR_STATE,
                           "hpct_insitu_add_block: register block arrays before "
                           "hpct_insitu_start");
    return hpcti_blocks_add(&S->blocks, S->ctx, S->ck, S->rank, S->world, name, dtype, data, ndims,
                            global_shape, offset, count);
}

hpct_status_t hpcti_insitu_block_refuse(hpct_insitu_t S, hpct_status_t status)
{
    if (!S || !status) return status;
    if (S->started) return status; /* no collective then: every rank refuses alone */
    return hpcti_blocks_refuse(S->ctx, status);
}

/* ---- progress --------------------------------------------------------------------- */

/* Figures since the last report; the loss is the global one, the same on every rank. */
static void report(hpct_insitu_t S)
{
    double t = hpcti_now(), dt = t - S->report_t0, comm = comm_wait_s(S);
    long steps = S->step - S->report_step0;
    hpct_progress_t *p = &S->progress;
    memset(p, 0, sizeof *p);
    p->step = S->step;
    p->loss = S->loss_n ? S->loss_sum / (double)S->loss_n : 0.0;
    float lr = 0.0f;
    hpct_optimizer_lr_at(S->opt, S->step > 0 ? S->step - 1 : 0, &lr);
    p->lr = lr;
    if (dt > 0) {
        p->samples_per_s = (double)S->samples / dt;
        p->data_wait_share = 1.0 - (S->inside_s - S->inside0) / dt; /* the simulation's time */
        if (p->data_wait_share < 0) p->data_wait_share = 0;
        p->comm_share = (comm - S->comm0) / dt;
    }
    if (S->cfg.progress)
        S->cfg.progress(p, S->cfg.progress_arg);
    else if (S->rank == 0)
        hpcti_log(S->ctx, HPCT_LOG_INFO,
                  "in-situ step %ld: loss %.6g, lr %.4g, %.0f samples/s over %ld steps, "
                  "%.0f%% outside training, %.0f%% waiting for communication",
                  p->step, p->loss, p->lr, p->samples_per_s, steps, 100.0 * p->data_wait_share,
                  100.0 * p->comm_share);
    double norm = 0.0;
    if (S->obs.m) hpct_params_grad_norm(S->params, &norm);
    hpcti_obs_step(&S->obs, p, norm, 0.0);
    S->report_t0 = t, S->report_step0 = S->step, S->comm0 = comm, S->inside0 = S->inside_s;
    S->loss_sum = 0.0, S->loss_n = 0, S->samples = 0;
}

hpct_status_t hpct_insitu_progress(hpct_insitu_t S, hpct_progress_t *progress)
{
    if (!S) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(S->ctx);
    if (!progress)
        return hpcti_error(S->ctx, HPCT_ERR_INVALID_ARG, "hpct_insitu_progress: progress is NULL");
    *progress = S->progress;
    progress->step = S->step;
    return HPCT_SUCCESS;
}

/* ---- the step ---------------------------------------------------------------------- */

/* What one step brings to the agreement: this rank's status and detail, batch, loss sum. */
struct local {
    hpct_status_t status;
    char detail[sizeof((struct hpct_ctx *)0)->last_error];
    int batch;
    double loss_sum; /* local mean loss * batch */
    int updated;     /* the fused step averaged nothing (one rank) and made the update */
};

/* Argument checks shared by both kinds of step. */
static hpct_status_t check_step(hpct_insitu_t S, const char *fn, int local_batch)
{
    if (!S->started)
        return hpcti_error(S->ctx, HPCT_ERR_STATE, "%s: call hpct_insitu_start first", fn);
    if (S->finished)
        return hpcti_error(S->ctx, HPCT_ERR_STATE,
                           "%s: the session is finished (hpct_insitu_finish after step %ld): a "
                           "step now would train past its final checkpoint; create a new "
                           "session to train on",
                           fn, S->step);
    if (S->diverged)
        return hpcti_error(S->ctx, HPCT_ERR_STATE,
                           "%s: the divergence guard stopped the session after step %ld: its "
                           "state is not saved; run again to resume from the last good "
                           "checkpoint",
                           fn, S->step);
    if (local_batch < 0)
        return hpcti_error(S->ctx, HPCT_ERR_INVALID_ARG, "%s: local_batch is %d, must be >= 0", fn,
                           local_batch);
    return HPCT_SUCCESS;
}

/* Local gradients [params] *= local_batch * W / B, so that averaging over W ranks gives the
 * mean over the global batch B. */
static hpct_status_t weight_and_average(hpct_insitu_t S, int local_batch, long B)
{
    if (!S->dist) return HPCT_SUCCESS;
    float factor = (float)((double)local_batch * (double)S->world / (double)B);
    hpct_status_t s = factor == 1.0f ? HPCT_SUCCESS : hpct_params_scale_grads(S->params, factor);
    return s ? s : hpct_params_average_grads(S->params);
}

/* The averaged gradients [params] must be finite before the update, or one Inf turns every
 * parameter it reaches into Inf and then NaN. The average is computed once and copied to
 * every rank, so it is the same bits everywhere (the replica check relies on that too): this
 * local check gives every rank the same verdict without an agreement. With clip_norm the
 * optimizer's norm pass reads every gradient anyway and refuses a non-finite norm on every
 * rank, so there is no second pass; without it the check is one read of every gradient. */
static hpct_status_t check_finite(hpct_insitu_t S, const char *fn)
{
    int bad;
    if (hpcti_optimizer_clip(S->opt) > 0.0f) return HPCT_SUCCESS;
    hpct_status_t s = hpcti_params_nonfinite_grad(S->params, &bad);
    if (s || bad < 0) return s;
    const char *name = "";
    hpct_params_get(S->params, bad, &name, NULL, NULL, NULL);
    return hpcti_error(S->ctx, HPCT_ERR_NONFINITE,
                       "%s: the averaged gradient of '%s' holds NaN or Inf at step %ld: refused, "
                       "the parameters were not updated",
                       fn, name, S->step + 1);
}

/* The global mean loss: sum over ranks, in rank order (the same bits everywhere), over B. */
static float global_loss(hpct_insitu_t S, long B)
{
    double total = 0.0;
    for (int r = 0; r < S->world; r++) total += S->losses[r];
    return (float)(total / (double)B);
}

/* The state of the last completed step survives a hang (HPCT_ERR_TIMEOUT): the writer saves
 * it before the error goes back (the optimizer never ran on a half-averaged gradient) and
 * says so; the others wait for that before they return (hpcti_live_await_writer). */
static hpct_status_t emergency(hpct_insitu_t S, hpct_status_t why)
{
    char detail[sizeof S->ctx->last_error];
    snprintf(detail, sizeof detail, "%s", S->ctx->last_error);
    hpcti_obs_stop(&S->obs, "error", S->step, why, detail);
    char after[240] = "";
    if (S->ck && S->blocks.n) /* they would need every rank: the last checkpoint stays */
        snprintf(after, sizeof after,
                 "; no emergency checkpoint: the session's block arrays need every rank");
    else if (S->ck && S->rank == hpcti_ckpt_writer_rank(S->ck)) {
        if (S->last_saved != S->step) {
            hpct_status_t s = save(S, 1);
            hpcti_log(S->ctx, HPCT_LOG_ERROR, "emergency checkpoint of step %ld: %s", S->step,
                      s ? hpct_last_error(S->ctx) : "written");
        }
        hpcti_live_saved_notice(S->ctx);
    } else if (S->ck)
        hpcti_live_await_writer(S->ctx, hpcti_ckpt_writer_rank(S->ck), after, sizeof after);
    return hpcti_error(S->ctx, why, "%s%s", detail, after);
}

/* After the update: saves and stops the agreed flags [HPCTI_DUE_N] ask for; above (the
 * guard found the loss above its limit): no cadence save of this state. */
static hpct_status_t boundary(hpct_insitu_t S, const char *fn, const long *flags, int above)
{
    int signo;
    int stop = hpcti_loop_stop(S->ctx, flags, S->step, &signo);
    if (S->ck && (stop || (flags[HPCTI_DUE_SAVE] && !above))) {
        hpct_status_t s = save_agreed(S, fn, stop);
        if (s) return s;
    }
    hpcti_obs_poll_ckpt(&S->obs, S->ck);
    hpcti_ckpt_trace(S->ck);
    if (stop) hpcti_obs_stop(&S->obs, signo ? "signal" : "walltime", S->step, signo, NULL);
    return stop ? HPCT_PREEMPTED : HPCT_SUCCESS;
}

/* Everything after the local gradients: agreement, average, update, checks, saves. */
static hpct_status_t complete(hpct_insitu_t S, const char *fn, struct local *me, float *loss)
{
    long max[1 + HPCTI_DUE_N], sum[1] = {me->status ? 0 : me->batch};
    float l = 0.0f; /* the step's global mean loss */
    max[0] = hpcti_fail_code(S->ctx, me->status);
    hpcti_loop_due(S->ck, S->step + 1, max + 1); /* reasons to save or stop after this step */
    struct hpcti_agreement a = {max, 1 + HPCTI_DUE_N, sum, 1, me->loss_sum, S->losses, 0.0, NULL};
    int report_due = S->cfg.log_interval > 0 && (S->step + 1) % S->cfg.log_interval == 0;
    double t0 = hpcti_now(), comm = comm_wait_s(S);
    if (report_due && S->obs.gather) /* step times up to the last step, for the report */
        a.mine2 = hpcti_obs_busy(&S->obs, S->step, comm), a.all2 = S->obs.times;
    hpct_status_t s = hpcti_agree_all(S->ctx, "in-situ step agreement", &a);
    double t1 = hpcti_now();
    hpcti_obs_wait(&S->obs, t1 - t0);
    if (hpcti_timeline_is_open(S->ctx))
        hpcti_tl_span(S->ctx, 0, "agreement", "sync", t0, t1, "\"step_times\":%d", a.all2 != NULL);
    if (!s && a.all2) hpcti_obs_interval_reset(&S->obs, S->step, comm);
    if (!s && max[0]) return hpcti_share_failure(S->ctx, fn, max[0], me->detail);
    if (!s && sum[0] <= 0)
        return hpcti_error(S->ctx, HPCT_ERR_INVALID_ARG,
                           "%s: local_batch is 0 on all %d ranks: there is nothing to train on", fn,
                           S->world);
    if (!s && !me->updated) s = weight_and_average(S, me->batch, sum[0]);
    if (!s && !me->updated) s = check_finite(S, fn);
    double t2 = hpcti_tl_now(S->ctx);
    if (!s && !me->updated) s = hpct_optimizer_step(S->opt);
    if (t2 > 0) hpcti_tl_span(S->ctx, 0, "optimizer", "compute", t2, hpcti_now(), NULL);
    if (s == HPCT_ERR_NONFINITE && S->dist) hpcti_mark_error_shared(S->ctx); /* same verdict */
    if (!s) {
        hpct_optimizer_get_step(S->opt, &S->step);
        S->last_batch = sum[0];
        l = global_loss(S, sum[0]);
        if (loss) *loss = l;
        S->loss_sum += l, S->loss_n++, S->samples += sum[0];
        hpcti_obs_first_step(&S->obs, S->step);
        if (S->dist) s = hpct_params_check_replicas_at(S->params, S->step);
    }
    if (s == HPCT_ERR_TIMEOUT) return emergency(S, s);
    if (s) return s;
    if (S->cfg.log_interval > 0 && S->step % S->cfg.log_interval == 0) report(S);
    int guard = hpcti_guard_watch(&S->guard, S->ck, S->step, l);
    if (guard == 2) {
        S->diverged = 1;
        hpcti_obs_stop(&S->obs, "error", S->step, HPCT_ERR_LOSS_DIVERGED, NULL);
        return hpcti_guard_diverged(&S->guard, S->ctx, fn, S->step, S->dist);
    }
    s = boundary(S, fn, max + 1, guard);
    if (!s && eval_due(S)) s = evaluate(S);
    return s == HPCT_ERR_TIMEOUT ? emergency(S, s) : s;
}

/* Test hook (doc/insitu.md): a fast program made slow enough to be signalled mid-run. A
 * signal cuts the sleep short; the next step's agreement sees it. */
static void test_delay(const hpct_insitu_t S)
{
    struct timespec ts = {S->test_delay_ms / 1000, S->test_delay_ms % 1000 * 1000000L};
    if (S->test_delay_ms > 0) nanosleep(&ts, NULL);
}

/* Time inside the step calls, for the progress figures. */
static hpct_status_t timed(hpct_insitu_t S, const char *fn, struct local *me, float *loss,
                           double t0)
{
    if (me->status) snprintf(me->detail, sizeof me->detail, "%s", S->ctx->last_error);
    hpct_status_t s = complete(S, fn, me, loss);
    S->inside_s += hpcti_now() - t0;
    test_delay(S);
    S->last_end = hpcti_now();
    return s;
}

/* The timeline at the start of a step call at t0: the simulation's own time since the last
 * call returned (the in-situ data wait, inside the span of the step before), then the span
 * of the new step. */
static void timeline_begin(hpct_insitu_t S, double t0)
{
    if (hpcti_timeline_is_open(S->ctx) && S->last_end > 0)
        hpcti_tl_span(S->ctx, 0, "data_wait", "data", S->last_end, t0, NULL);
    hpcti_tl_step(S->ctx, S->step + 1);
}

/* What every step call does first: the timeline, the step number, a clean error, *me for
 * local_batch with check_step's status; returns the call's start time. */
static double begin_step(hpct_insitu_t S, const char *fn, int local_batch, struct local *me)
{
    double t0 = hpcti_now();
    timeline_begin(S, t0);
    hpcti_dist_set_step(S->ctx, S->step + 1);
    hpcti_clear_error(S->ctx);
    *me = (struct local){.batch = local_batch};
    me->status = check_step(S, fn, local_batch);
    return t0;
}

hpct_status_t hpct_insitu_step(hpct_insitu_t S, const float *x, const void *targets,
                               int local_batch, float *loss)
{
    static const char fn[] = "hpct_insitu_step";
    if (!S) return HPCT_ERR_INVALID_ARG;
    struct local me;
    double t0 = begin_step(S, fn, local_batch, &me);
    if (!me.status && !S->model)
        me.status = hpcti_error(S->ctx, HPCT_ERR_STATE,
                                "%s: the session has no model (bring-your-own gradients: call "
                                "hpct_insitu_step_grads)",
                                fn);
    if (!me.status && local_batch > 0 && (!x || !targets))
        me.status = hpcti_error(S->ctx, HPCT_ERR_INVALID_ARG, "%s: %s NULL with local_batch %d", fn,
                                !x ? "x is" : "targets are", local_batch);
    float l = 0.0f;
    struct hpcti_fused_io io = {x, targets, local_batch, 1, NULL, NULL};
    if (!me.status && local_batch > 0 && S->world == 1 && hpcti_fused_applies(S->model, S->opt))
        me.status = hpcti_fused_step(S->model, S->opt, fn, &io, &l, &me.updated);
    else if (!me.status && local_batch > 0)
        me.status = hpct_model_loss_grad(S->model, x, targets, local_batch, 0, &l);
    else if (!me.status)
        me.status = hpct_params_zero_grads(S->params);
    me.loss_sum = (double)l * local_batch;
    return timed(S, fn, &me, loss, t0);
}

hpct_status_t hpcti_insitu_refuse(hpct_insitu_t S, const char *fn, hpct_status_t status)
{
    if (!S || !status) return status;
    char detail[sizeof S->ctx->last_error];
    snprintf(detail, sizeof detail, "%s", S->ctx->last_error); /* begin_step clears it */
    struct local me;
    double t0 = begin_step(S, fn, 0, &me);
    if (!me.status) me.status = hpcti_error(S->ctx, status, "%s", detail);
    return timed(S, fn, &me, NULL, t0);
}

hpct_status_t hpct_insitu_step_grads(hpct_insitu_t S, int local_batch, float local_loss,
                                     float *loss)
{
    static const char fn[] = "hpct_insitu_step_grads";
    if (!S) return HPCT_ERR_INVALID_ARG;
    struct local me;
    double t0 = begin_step(S, fn, local_batch, &me);
    if (!me.status && local_batch > 0 && !isfinite(local_loss))
        me.status = hpcti_error(S->ctx, HPCT_ERR_NONFINITE,
                                "%s: local_loss is %g over %d samples; gradients were not averaged",
                                fn, (double)local_loss, local_batch);
    if (!me.status && local_batch == 0) me.status = hpct_params_zero_grads(S->params);
    me.loss_sum = local_batch > 0 ? (double)local_loss * local_batch : 0.0;
    return timed(S, fn, &me, loss, t0);
}
