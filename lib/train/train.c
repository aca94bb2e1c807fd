/* train.c: the synchronous data-parallel step loop: data -> forward/backward -> averaged
 * gradients -> optimizer -> checkpoints, with agreement across ranks at every step boundary. */
#include "guard.h"
#include "loop.h"
#include "observe.h"
#include "../comm/agree.h"
#include "../comm/dist.h"
#include "../comm/live.h"
#include "../data/reader.h"

#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* One rank on a backend that records steps (cuda), one micro-batch: every step is the fused
 * step of lib/model/fused.c, and the next step's batch is read and staged while the device runs
 * this one. held: that batch is read (staged when status is 0; the next step returns status and
 * detail otherwise); epoch, step: the data cursor before it was read, where the trained state
 * continues; moved: the dataset's cursor has been ahead of the trained steps. */
struct ahead {
    int on, held, moved;
    hpct_status_t status;
    char detail[sizeof((struct hpct_ctx *)0)->last_error];
    long epoch, step;
};

struct loop {
    hpct_ctx_t ctx;
    hpct_model_t model;
    hpct_params_t params;
    hpct_optimizer_t opt;
    hpct_dataset_t ds;
    hpct_ckpt_t ck;
    const hpct_train_config_t *cfg;
    hpct_train_result_t *res;
    int rank, world, dist; /* dist: the context has a distributed runtime */
    int local_batch, micro_batch, features, target_width;
    hpct_dtype_t target_dtype;
    long steps_per_epoch, total_steps;
    long cursor_epoch, cursor_step; /* data cursor that continues from the last completed step */
    char model_desc[256];
    /* progress since the last report */
    double report_t0, loss_sum, data_wait0, comm_wait0, ckpt_wait0;
    long loss_n, report_step0;
    /* what the run leaves behind (observe.h) */
    struct hpcti_observer obs;
    hpct_progress_t last; /* the report waiting for the step times of the next boundary */
    double last_ckpt_share;
    int reported;
    long evaluated_at; /* step of the last evaluation; -1: none */
    /* the divergence guard (cfg->divergence_factor) on every step's loss, the mean over ranks */
    double *losses; /* [world] every rank's loss of the last step, agreed */
    struct hpcti_guard guard;
    int slow_rank;        /* test hook HPCT_TEST_SLOW_RANK=rank,ms: that rank sleeps ms ... */
    struct timespec slow; /* ... in every step (a straggler made on purpose) */
    uint64_t exchange0;   /* store exchange bytes at the last report */
    long at;              /* the step being run (1-based) */
    struct ahead ahead;
};

/* Real-valued figures [n] (loss, accuracy) become their mean over ranks. Decisions never go
 * through here: they are integer agreements (loop.h). */
static hpct_status_t mean_over_ranks(struct loop *L, float *values, int n)
{
    if (!L->dist) return HPCT_SUCCESS;
    return hpct_allreduce_mean(L->ctx, values, (size_t)n);
}

static double comm_wait_s(struct loop *L)
{
    double wait = 0.0;
    long ops;
    if (L->dist) hpct_comm_stats(L->ctx, &wait, &ops);
    return wait;
}

/* The data must be what the model reads: as many features as inputs, and the targets its loss
 * expects: int32 labels [n] for softmax cross-entropy, fp32 [n, outputs] for MSE (anything
 * else would be read out of bounds). */
static hpct_status_t check_data(hpct_ctx_t ctx, hpct_model_t model, hpct_dataset_t ds,
                                const char *fn)
{
    int inputs, outputs, features, width;
    hpct_dtype_t dtype;
    hpct_status_t s = hpct_model_shape(model, &inputs, &outputs);
    if (!s) s = hpct_dataset_info(ds, NULL, &features, &width, &dtype);
    if (s) return s;
    if (features != inputs)
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                           "%s: the data has %d input features per sample but the model takes %d",
                           fn, features, inputs);
    if (hpcti_model_loss(model) == HPCT_LOSS_SOFTMAX_CE &&
        (dtype != HPCT_DTYPE_INT32 || width != 1))
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                           "%s: softmax cross-entropy needs one integer class label per sample, "
                           "but the dataset's targets are %s [N, %d]",
                           fn, dtype == HPCT_DTYPE_INT32 ? "int32" : "float32", width);
    if (hpcti_model_loss(model) == HPCT_LOSS_MSE &&
        (dtype != HPCT_DTYPE_FLOAT32 || width != outputs))
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                           "%s: MSE needs float32 targets [N, %d] (the model's outputs), but the "
                           "dataset's targets are %s [N, %d]",
                           fn, outputs, dtype == HPCT_DTYPE_INT32 ? "int32" : "float32", width);
    return HPCT_SUCCESS;
}

/* Rank, world size, this rank's batch shape and the length of the run. */
static hpct_status_t setup(struct loop *L)
{
    const hpct_train_config_t *c = L->cfg;
    L->dist = hpcti_loop_where(L->ctx, &L->rank, &L->world);
    if (c->global_batch <= 0 || c->micro_batches <= 0 || c->epochs <= 0 || c->max_steps < 0)
        return hpcti_error(L->ctx, HPCT_ERR_INVALID_ARG,
                           "hpct_train: global_batch (%d), micro_batches (%d) and epochs (%ld) "
                           "must be > 0 and max_steps (%ld) >= 0",
                           c->global_batch, c->micro_batches, c->epochs, c->max_steps);
    if (c->micro_batches > c->global_batch || c->global_batch % c->micro_batches ||
        (c->global_batch / c->micro_batches) % L->world)
        return hpcti_error(L->ctx, HPCT_ERR_INVALID_ARG,
                           "hpct_train: global batch %d does not split into %d ranks x %d "
                           "micro-batches",
                           c->global_batch, L->world, c->micro_batches);
    L->local_batch = c->global_batch / L->world;
    L->micro_batch = L->local_batch / c->micro_batches;
    hpct_status_t s;
    if ((s = hpct_model_params(L->model, &L->params)) ||
        (s = hpct_model_describe(L->model, L->model_desc, sizeof L->model_desc)) ||
        (s = check_data(L->ctx, L->model, L->ds, "hpct_train")) ||
        (c->eval_data && /* before training, not after it (L->cfg: defaults filled in) */
         (s = check_data(L->ctx, L->model, c->eval_data, "hpct_train (eval_data)"))) ||
        (s = hpct_dataset_info(L->ds, NULL, &L->features, &L->target_width, &L->target_dtype)))
        return s;
    if ((s = hpct_dataset_partition(L->ds, L->rank, L->world, c->global_batch)) ||
        (s = hpct_dataset_steps_per_epoch(L->ds, &L->steps_per_epoch)))
        return s;
    L->total_steps = c->epochs * L->steps_per_epoch;
    if (c->max_steps > 0 && c->max_steps < L->total_steps) L->total_steps = c->max_steps;
    L->ahead.on = L->world == 1 && c->micro_batches == 1 && hpcti_fused_applies(L->model, L->opt);
    L->losses = hpcti_calloc(L->ctx, (size_t)L->world, sizeof *L->losses, "the step losses");
    return L->losses ? HPCT_SUCCESS : HPCT_ERR_NO_MEMORY;
}

/* The checkpoints record this run's steps per epoch when its step count and data cursor
 * agree (step = epoch x steps per epoch + cursor step: a run from step 0, or resumed from
 * its checkpoints); a caller's optimizer that arrives at another step records none. */
static void record_epochs(struct loop *L)
{
    long done = 0, epoch, cursor, at;
    hpct_optimizer_get_step(L->opt, &done);
    hpct_dataset_get_cursor(L->ds, &epoch, &cursor);
    int fits = !__builtin_mul_overflow(epoch, L->steps_per_epoch, &at) && at + cursor == done;
    hpcti_ckpt_set_run(L->ck, L->cfg->global_batch, fits ? L->steps_per_epoch : 0);
}

/* Load the newest valid checkpoint on every rank, or make the replicas equal to rank 0's.
 * The loader refuses a checkpoint of another global batch or another number of steps per
 * epoch as a settings mismatch (hpcti_ckpt_set_run). */
static hpct_status_t resume(struct loop *L)
{
    hpct_ckpt_meta_t meta = HPCT_CKPT_META_INITIALIZER;
    int found;
    L->res->resumed_from = -1;
    hpcti_ckpt_set_run(L->ck, L->cfg->global_batch, L->steps_per_epoch);
    double t0 = hpcti_now();
    hpct_status_t s = hpcti_loop_load(L->ctx, "hpct_train", L->ck, L->params, L->opt,
                                      L->cfg->resume, &meta, &found);
    if (!s) hpcti_obs_resume(&L->obs, L->ck, found, &meta, hpcti_now() - t0);
    if (!s && !found) record_epochs(L);
    if (s || !found) return s;
    if ((s = hpct_dataset_set_cursor(L->ds, meta.cursor_epoch, meta.cursor_step))) {
        char why[sizeof L->ctx->last_error]; /* say which checkpoint holds the bad cursor */
        snprintf(why, sizeof why, "%s", L->ctx->last_error);
        return hpcti_error(L->ctx, s,
                           "hpct_train: checkpoint %s: its data cursor (epoch %ld, "
                           "step %ld) does not fit this dataset: %.600s",
                           meta.path, meta.cursor_epoch, meta.cursor_step, why);
    }
    if ((s = hpcti_loop_adopt(L->ctx, "hpct_train", L->params, L->opt, &meta))) return s;
    record_epochs(L);
    L->res->resumed_from = meta.step;
    hpcti_guard_saved(&L->guard, meta.step); /* the first step's loss measures it */
    L->res->rejected_checkpoints = meta.rejected;
    hpcti_log(L->ctx, HPCT_LOG_INFO, "resumed from %s at step %ld (saved by %d ranks)", meta.path,
              meta.step, meta.world_size);
    return HPCT_SUCCESS;
}

/* Save on the writer rank; cursor is the data position the saved state continues from. */
static hpct_status_t save(struct loop *L, long cursor_epoch, long cursor_step, int wait)
{
    hpct_ckpt_meta_t meta = HPCT_CKPT_META_INITIALIZER;
    meta.epoch = cursor_epoch;
    meta.cursor_epoch = cursor_epoch;
    meta.cursor_step = cursor_step;
    meta.world_size = L->world;
    meta.global_batch = L->cfg->global_batch;
    meta.model = L->model_desc;
    double t0 = hpcti_now();
    int wrote;
    hpct_status_t s = hpcti_loop_save(L->ck, L->rank, L->params, L->opt, &meta, wait, &wrote);
    double block = hpcti_now() - t0;
    hpcti_obs_wait(&L->obs, block);
    if (L->ck && L->rank == hpcti_ckpt_writer_rank(L->ck)) L->res->ckpt_wait_s += block;
    if (wrote) {
        L->res->checkpoints++;
        hpcti_obs_saved(&L->obs, L->ck, meta.step, t0, block);
    }
    if (!s && L->ck) hpcti_guard_saved(&L->guard, meta.step); /* every rank: saves are agreed */
    return s;
}

/* A failure of this rank alone before the step's averaging (its batch, an earlier
 * micro-batch): take part in the agreement the other ranks reach in hpct_model_loss_grad,
 * so they stop at once with this rank named instead of waiting out the deadline. */
static hpct_status_t rank_failed(struct loop *L, hpct_status_t s)
{
    if (!L->dist) return s;
    char mine[sizeof L->ctx->last_error];
    snprintf(mine, sizeof mine, "%s", L->ctx->last_error);
    int shared = L->ctx->error_shared;
    hpct_status_t on = hpct_model_set_grad_averaging(L->model, 1); /* clears the detail */
    snprintf(L->ctx->last_error, sizeof L->ctx->last_error, "%s", mine);
    L->ctx->error_shared = shared;
    return on ? s : hpcti_model_join_failure(L->model, s); /* cannot join: keep our own */
}

/* The next batch from the dataset, the wait for it counted as data wait (and a timeline span). */
static hpct_status_t next_batch(struct loop *L, const float **x, const void **t)
{
    double t0 = hpcti_now();
    hpct_status_t s = hpct_dataset_next(L->ds, x, t);
    double got = hpcti_now();
    L->res->data_wait_s += got - t0;
    if (hpcti_timeline_is_open(L->ctx))
        hpcti_tl_span(L->ctx, 0, "data_wait", "data", t0, got, NULL);
    return s;
}

/* defer_copy checkpoints: wait until the writer has copied the state the update changes. */
static hpct_status_t before_update(struct loop *L)
{
    if (!L->ck) return HPCT_SUCCESS;
    double t1 = hpcti_now();
    hpct_status_t s = hpct_ckpt_before_update(L->ck);
    L->res->ckpt_wait_s += hpcti_now() - t1;
    return s;
}

/* The optimizer's step: a non-finite gradient norm (the same on every rank) is a divergence
 * when divergence_factor is on. */
static hpct_status_t optimizer_step(struct loop *L)
{
    hpct_status_t s = hpct_optimizer_step(L->opt);
    return s == HPCT_ERR_NONFINITE && L->cfg->divergence_factor > 0 ? HPCT_ERR_LOSS_DIVERGED : s;
}

/* The data cursor the trained state continues from: before the batch read ahead, if any. */
static void trained_cursor(struct loop *L, long *epoch, long *step)
{
    if (L->ahead.held) {
        *epoch = L->ahead.epoch, *step = L->ahead.step;
        return;
    }
    hpct_dataset_get_cursor(L->ds, epoch, step);
}

/* The fused step's ahead callback: the next step's batch, read and staged while the device
 * runs this one (none after the run's last step). */
static void read_ahead(void *arg)
{
    struct loop *L = arg;
    const float *x;
    const void *t;
    if (L->at >= L->total_steps) return;
    hpct_dataset_get_cursor(L->ds, &L->ahead.epoch, &L->ahead.step);
    L->ahead.status = hpct_dataset_next(L->ds, &x, &t);
    if (L->ahead.status) {
        snprintf(L->ahead.detail, sizeof L->ahead.detail, "%s", L->ctx->last_error);
        hpcti_clear_error(L->ctx); /* the error of the next step, not of this one */
    } else {
        hpcti_fused_stage_next(L->model, x, t, L->local_batch);
    }
    L->ahead.held = L->ahead.moved = 1;
}

/* The batch of this step: read ahead by the step before, or read now. *x NULL: staged ahead. */
static hpct_status_t fused_batch(struct loop *L, const float **x, const void **t)
{
    *x = NULL, *t = NULL;
    if (L->ahead.held) {
        L->ahead.held = 0;
        hpct_status_t s = L->ahead.status;
        if (s) snprintf(L->ctx->last_error, sizeof L->ctx->last_error, "%s", L->ahead.detail);
        return s;
    }
    return next_batch(L, x, t);
}

/* One optimizer step as the fused step: its batch, the step, and when the step's verdict
 * refused the update (a non-finite norm when clipping), the optimizer's own step, which then
 * names the reason. hpct_train checks no gradient otherwise (as its steps always did). */
static hpct_status_t fused_step(struct loop *L, float *loss)
{
    struct hpcti_fused_io io = {NULL, NULL, L->local_batch, 0, read_ahead, L};
    int updated = 0;
    hpct_status_t s = fused_batch(L, &io.x, &io.t);
    if (!s) s = before_update(L); /* the fused step changes the state */
    if (!s) s = hpcti_fused_step(L->model, L->opt, "hpct_model_loss_grad", &io, loss, &updated);
    if (!s && !updated) s = optimizer_step(L);
    return s;
}

/* One optimizer step: next batch, micro-batches (averaging on the last), update. */
static hpct_status_t step(struct loop *L, float *loss)
{
    const float *x;
    const void *t;
    *loss = 0.0f;
    if (L->rank == L->slow_rank) nanosleep(&L->slow, NULL);
    hpcti_model_step_begins(L->model);
    if (L->ahead.on) return fused_step(L, loss);
    hpct_status_t s = next_batch(L, &x, &t);
    if (s) return rank_failed(L, s);
    size_t tsize = L->target_dtype == HPCT_DTYPE_INT32 ? sizeof(int32_t) : sizeof(float);
    double total = 0.0;
    int micro = L->cfg->micro_batches;
    for (int k = 0; k < micro && !s; k++) {
        float l = 0.0f;
        const char *tk = (const char *)t + (size_t)k * L->micro_batch * L->target_width * tsize;
        if (L->dist) s = hpct_model_set_grad_averaging(L->model, k == micro - 1);
        if (s) break; /* never train unaveraged replicas */
        s = hpct_model_loss_grad(L->model, x + (size_t)k * L->micro_batch * L->features, tk,
                                 L->micro_batch, k > 0, &l);
        if (s) s = rank_failed(L, s); /* no-op once the step's agreement has run */
        total += l;
    }
    if (!s && micro > 1) s = hpct_params_scale_grads(L->params, 1.0f / (float)micro);
    if (!s) s = before_update(L); /* the writer copied the state while this step ran */
    double t2 = hpcti_tl_now(L->ctx);
    if (!s) s = optimizer_step(L);
    if (t2 > 0) hpcti_tl_span(L->ctx, 0, "optimizer", "compute", t2, hpcti_now(), NULL);
    *loss = (float)(total / micro);
    return s;
}

/* The loss of the last step that every rank agreed on: the mean of losses [world], summed in
 * rank order (the same bits on every rank). */
static double step_loss(const struct loop *L)
{
    double total = 0.0;
    for (int r = 0; r < L->world; r++) total += L->losses[r];
    return total / L->world;
}

/* Step `at` found a loss or gradient norm that is not finite (on some rank: the detail in the
 * context is the agreed one) and did not update the state: every rank stops. */
static hpct_status_t nonfinite(struct loop *L, long at)
{
    char detail[sizeof L->ctx->last_error], where[300];
    snprintf(detail, sizeof detail, "%s", L->ctx->last_error);
    hpcti_guard_newest(&L->guard, where, sizeof where);
    hpcti_error(L->ctx, HPCT_ERR_LOSS_DIVERGED,
                "hpct_train: training diverged at step %ld: %.600s; no checkpoint of this state "
                "was saved; %s",
                at, detail, where);
    if (L->dist) hpcti_mark_error_shared(L->ctx); /* every rank reached it with these values */
    return HPCT_ERR_LOSS_DIVERGED;
}

/* Mean loss over ranks since the last report, then the progress callback. */
static hpct_status_t report(struct loop *L, long done)
{
    float mean = L->loss_n ? (float)(L->loss_sum / (double)L->loss_n) : 0.0f;
    hpct_status_t s = mean_over_ranks(L, &mean, 1);
    if (s) return s;
    double t = hpcti_now(), dt = t - L->report_t0;
    long steps = done - L->report_step0;
    hpct_progress_t p;
    memset(&p, 0, sizeof p);
    p.epoch = done > 0 ? (done - 1) / L->steps_per_epoch : 0; /* epoch of the last step */
    p.step = done;
    p.steps_per_epoch = L->steps_per_epoch;
    p.total_steps = L->total_steps;
    p.loss = mean;
    float lr = 0.0f;
    hpct_optimizer_lr_at(L->opt, done > 0 ? done - 1 : 0, &lr);
    p.lr = lr;
    p.samples_per_s = dt > 0 ? (double)steps * L->cfg->global_batch / dt : 0.0;
    p.data_wait_share = dt > 0 ? (L->res->data_wait_s - L->data_wait0) / dt : 0.0;
    p.comm_share = dt > 0 ? (comm_wait_s(L) - L->comm_wait0) / dt : 0.0;
    p.eta_s = steps > 0 ? dt / (double)steps * (double)(L->total_steps - done) : 0.0;
    hpct_data_stats_t ds;
    if (!hpct_dataset_stats(L->ds, &ds)) {
        p.data_epoch_bytes_read = (double)ds.epoch_bytes_read;
        p.data_resident_bytes = (double)ds.resident_bytes;
        p.data_node_resident_bytes = (double)ds.node_resident_bytes;
        p.data_exchange_bytes = (double)(ds.exchange_bytes - L->exchange0);
        L->exchange0 = ds.exchange_bytes;
    }
    L->res->final_loss = mean;
    if (L->cfg->progress) L->cfg->progress(&p, L->cfg->progress_arg);
    L->last = p, L->reported = 1;
    L->last_ckpt_share = dt > 0 ? (L->res->ckpt_wait_s - L->ckpt_wait0) / dt : 0.0;
    L->report_t0 = t, L->report_step0 = done, L->loss_sum = 0.0, L->loss_n = 0;
    L->data_wait0 = L->res->data_wait_s, L->comm_wait0 = comm_wait_s(L);
    L->ckpt_wait0 = L->res->ckpt_wait_s;
    return HPCT_SUCCESS;
}

/* The agreement of a boundary; after a report it also gathers every rank's step time, and
 * the report's metrics record follows (observe.h). */
static hpct_status_t agree(struct loop *L, long done, float loss, long *flags)
{
    double t0 = hpcti_now(), comm = comm_wait_s(L);
    int gather = L->reported && L->obs.gather;
    double busy = gather ? hpcti_obs_busy(&L->obs, done, comm) : 0.0;
    hpct_status_t s =
        hpcti_loop_agree_step(L->ctx, flags, loss, L->losses, busy, gather ? L->obs.times : NULL);
    double t1 = hpcti_now();
    hpcti_obs_wait(&L->obs, t1 - t0);
    if (hpcti_timeline_is_open(L->ctx))
        hpcti_tl_span(L->ctx, 0, "agreement", "sync", t0, t1, "\"step_times\":%d", gather);
    if (s || !L->reported) return s;
    double norm = 0.0;
    if (L->obs.m) hpct_params_grad_norm(L->params, &norm);
    hpcti_obs_step(&L->obs, &L->last, norm, L->last_ckpt_share);
    if (gather) hpcti_obs_interval_reset(&L->obs, done, comm);
    L->reported = 0;
    return HPCT_SUCCESS;
}

/* Agree on checkpoint/stop reasons and the loss across ranks after `done` steps; the guard
 * judges the loss; save if any rank asks (a cadence save only within the loss limit). */
static hpct_status_t boundary(struct loop *L, long done, float loss, int *stop)
{
    long flags[HPCTI_DUE_N];
    hpcti_loop_due(L->ck, done, flags);
    hpct_status_t s = agree(L, done, loss, flags);
    hpcti_obs_poll_ckpt(&L->obs, L->ck);
    hpcti_ckpt_trace(L->ck);
    if (s) return s;
    int guard = hpcti_guard_watch(&L->guard, L->ck, done, step_loss(L));
    if (guard == 2) return hpcti_guard_diverged(&L->guard, L->ctx, "hpct_train", done, L->dist);
    *stop = hpcti_loop_stop(L->ctx, flags, done, &L->res->stop_signal);
    if (!*stop && (!flags[HPCTI_DUE_SAVE] || guard)) return HPCT_SUCCESS; /* no save above it */
    long epoch, cursor;
    trained_cursor(L, &epoch, &cursor);
    return save(L, epoch, cursor, *stop);
}

/* Evaluate on cfg.eval_data after `done` steps (every rank), record and report it. */
static hpct_status_t evaluate(struct loop *L, long done)
{
    double loss = 0.0, acc = 0.0, t0 = hpcti_now();
    long n = 0;
    hpct_status_t s = hpct_evaluate(L->model, L->cfg->eval_data, &loss, &acc, &n);
    double dt = hpcti_now() - t0;
    hpcti_obs_wait(&L->obs, dt);
    if (s) return s;
    L->evaluated_at = done;
    hpcti_obs_eval(&L->obs, done, loss, acc, n, dt);
    if (L->cfg->evaluated) L->cfg->evaluated(done, loss, acc, n, L->cfg->progress_arg);
    return HPCT_SUCCESS;
}

static int eval_due(const struct loop *L, long done)
{
    long k = L->cfg->eval_interval;
    return L->cfg->eval_data && k > 0 && done % k == 0 && done != L->evaluated_at;
}

/* A rank hung: keep the state of the last completed step, then report the hang. The hang
 * may strike inside a step (the update not applied) or after it (report, boundary): the
 * cursor recorded after each completed step matches the optimizer's step in both cases.
 * The writer saves and says so; the others wait for that (hpcti_live_await_writer) so that
 * their end of the job does not cut the save short. */
static hpct_status_t emergency(struct loop *L, hpct_status_t why)
{
    char detail[sizeof L->ctx->last_error];
    snprintf(detail, sizeof detail, "%s", L->ctx->last_error);
    if (L->ck && L->rank == hpcti_ckpt_writer_rank(L->ck)) {
        hpct_status_t s = save(L, L->cursor_epoch, L->cursor_step, 1);
        hpcti_log(L->ctx, HPCT_LOG_ERROR, "emergency checkpoint of the last completed step: %s",
                  s ? hpct_last_error(L->ctx) : "written");
        hpcti_live_saved_notice(L->ctx);
    }
    char after[240] = "";
    if (L->ck) hpcti_live_await_writer(L->ctx, hpcti_ckpt_writer_rank(L->ck), after, sizeof after);
    return hpcti_error(L->ctx, why, "%s%s", detail, after);
}

/* The last report of a run (after its last boundary): its step times get an agreement of
 * their own (no flags are acted on). */
static hpct_status_t final_times(struct loop *L, long done)
{
    long flags[HPCTI_DUE_N] = {0};
    return agree(L, done, 0.0f, flags);
}

/* A signal caught before the first step (during the program's start-up, when it installed
 * the handlers first, or during resume) stops the run before that step, on every rank: the
 * state is the loaded checkpoint's or the seed's, so nothing is lost and nothing is saved. */
static hpct_status_t stop_before_first(struct loop *L, long done, int *stop)
{
    long flags[HPCTI_DUE_N] = {0};
    flags[HPCTI_DUE_SIGNAL] = hpct_signals_pending(NULL, NULL);
    hpct_status_t s = hpcti_loop_agree_step(L->ctx, flags, 0.0, L->losses, 0.0, NULL);
    if (!s) *stop = hpcti_loop_stop(L->ctx, flags, done, &L->res->stop_signal);
    return s;
}

/* A run stopped by its loss or by a non-finite input: when a streamed shard changed under it
 * (rewritten within the epoch, before the next epoch's check), that is the cause to report,
 * as bad data, not the loss. Every rank sees the same files, so the same verdict. */
static hpct_status_t data_changed(struct loop *L, hpct_status_t s)
{
    char why[700];
    if (!hpcti_dataset_files_changed(L->ds, why, sizeof why)) return s;
    char detail[sizeof L->ctx->last_error];
    snprintf(detail, sizeof detail, "%s", L->ctx->last_error);
    return hpcti_error(L->ctx, HPCT_ERR_CHECKSUM, "%s (what stopped the run: %.300s)", why, detail);
}

static hpct_status_t run(struct loop *L)
{
    long done = 0;
    hpct_optimizer_get_step(L->opt, &done);
    L->report_t0 = hpcti_now(), L->report_step0 = done;
    hpcti_obs_interval_reset(&L->obs, done, comm_wait_s(L));
    hpct_dataset_get_cursor(L->ds, &L->cursor_epoch, &L->cursor_step);
    int stop = 0;
    hpct_status_t s = done < L->total_steps ? stop_before_first(L, done, &stop) : HPCT_SUCCESS;
    while (!s && !stop && done < L->total_steps) {
        float loss;
        hpcti_tl_step(L->ctx, done + 1);
        hpcti_dist_set_step(L->ctx, done + 1);
        L->at = done + 1;
        s = step(L, &loss);
        if (s == HPCT_ERR_LOSS_DIVERGED) s = nonfinite(L, done + 1);
        if (s) break;
        done++;
        hpcti_obs_first_step(&L->obs, done);
        trained_cursor(L, &L->cursor_epoch, &L->cursor_step);
        L->loss_sum += loss, L->loss_n++;
        if (L->dist && (s = hpct_params_check_replicas_at(L->params, done))) break;
        if (L->cfg->log_interval > 0 &&
            (done % L->cfg->log_interval == 0 || done == L->total_steps))
            if ((s = report(L, done))) break;
        s = boundary(L, done, loss, &stop);
        if (!s && !stop && eval_due(L, done)) s = evaluate(L, done);
    }
    L->res->steps = done;
    if (s == HPCT_ERR_TIMEOUT) return emergency(L, s);
    if (s) return s;
    if (stop && done < L->total_steps) return HPCT_PREEMPTED;
    if (L->loss_n && (s = report(L, done))) return s;
    if (L->guard.above) /* ended above its limit: no final save */
        return hpcti_guard_diverged(&L->guard, L->ctx, "hpct_train", done, L->dist);
    if (L->reported && (s = final_times(L, done))) return s;
    if (L->cfg->eval_data && done != L->evaluated_at && (s = evaluate(L, done))) return s;
    if (stop) { /* the signal came with the last step: done, and its checkpoint is written */
        L->res->stop_signal = 0;
        return HPCT_SUCCESS;
    }
    long epoch, cursor;
    trained_cursor(L, &epoch, &cursor);
    s = save(L, epoch, cursor, 1);
    hpcti_obs_poll_ckpt(&L->obs, L->ck);
    return s;
}

/* The observer (metrics file, straggler rule), the run_start record and the test hook. */
static hpct_status_t observe(struct loop *L)
{
    const hpct_train_config_t *c = L->cfg;
    if (c->eval_interval < 0 || c->straggler_threshold < 0)
        return hpcti_error(L->ctx, HPCT_ERR_INVALID_ARG,
                           "hpct_train: eval_interval (%ld) and straggler_threshold (%g) must be "
                           ">= 0",
                           c->eval_interval, c->straggler_threshold);
    L->evaluated_at = -1, L->slow_rank = -1;
    const char *slow = hpcti_test_hook("HPCT_TEST_SLOW_RANK");
    long ms = 0;
    if (slow && sscanf(slow, "%d,%ld", &L->slow_rank, &ms) == 2 && ms > 0)
        L->slow = (struct timespec){ms / 1000, ms % 1000 * 1000000L};
    else
        L->slow_rank = -1;
    hpct_status_t s =
        hpcti_obs_open(&L->obs, L->ctx, "hpct_train", c->metrics_path, c->straggler_threshold);
    if (!s && c->timeline_path && c->timeline_path[0]) {
        hpct_topology_t t = HPCT_TOPOLOGY_INITIALIZER;
        if (L->dist) hpct_topology(L->ctx, &t);
        s = hpcti_timeline_open(L->ctx, c->timeline_path, L->rank, t.hostname, c->timeline_steps,
                                c->timeline_first);
        if (L->dist) s = hpcti_agree_status(L->ctx, "hpct_train", s, L->ctx->last_error);
    }
    if (s) return s;
    hpcti_obs_run_start(&L->obs, "hpct_train", L->ck, L->model_desc, c->global_batch,
                        L->total_steps);
    return HPCT_SUCCESS;
}

/* The stop record: done, signal, walltime or error with its detail. */
static void record_stop(struct loop *L, hpct_status_t s, const char *detail)
{
    if (s == HPCT_SUCCESS)
        hpcti_obs_stop(&L->obs, "done", L->res->steps, 0, NULL);
    else if (s == HPCT_PREEMPTED && L->res->stop_signal)
        hpcti_obs_stop(&L->obs, "signal", L->res->steps, L->res->stop_signal, NULL);
    else if (s == HPCT_PREEMPTED)
        hpcti_obs_stop(&L->obs, "walltime", L->res->steps, 0, NULL);
    else
        hpcti_obs_stop(&L->obs, "error", L->res->steps, s, detail);
}

hpct_status_t hpct_train(hpct_model_t model, hpct_optimizer_t opt, hpct_dataset_t ds,
                         hpct_ckpt_t ck, const hpct_train_config_t *cfg, hpct_train_result_t *res)
{
    hpct_params_t params;
    if (!model || hpct_model_params(model, &params)) return HPCT_ERR_INVALID_ARG;
    hpct_ctx_t ctx = params->ctx;
    hpcti_clear_error(ctx);
    if (!opt || !ds || !cfg || !res)
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG, "hpct_train: %s is NULL",
                           !opt   ? "opt"
                           : !ds  ? "ds"
                           : !cfg ? "cfg"
                                  : "res");
    if (cfg->version < 1 || cfg->version > HPCT_TRAIN_CONFIG_VERSION)
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                           "hpct_train: hpct_train_config_t.version is %u (start from "
                           "HPCT_TRAIN_CONFIG_INITIALIZER)",
                           cfg->version);
    memset(res, 0, sizeof *res);
    res->resumed_from = -1; /* until a checkpoint is loaded (a failure before says none) */
    hpct_train_config_t c = HPCT_TRAIN_CONFIG_INITIALIZER; /* version 1: the defaults after */
    memcpy(&c, cfg,
           cfg->version >= 3   ? sizeof c
           : cfg->version == 2 ? offsetof(hpct_train_config_t, divergence_factor)
                               : offsetof(hpct_train_config_t, metrics_path));
    struct hpcti_guard guard;
    hpct_status_t s =
        hpcti_guard_init(&guard, ctx, "hpct_train", c.divergence_factor, c.divergence_reports, ck);
    if (s) return s;
    struct loop L = {.ctx = ctx,
                     .model = model,
                     .opt = opt,
                     .ds = ds,
                     .ck = ck,
                     .cfg = &c,
                     .res = res,
                     .guard = guard};
    double t0 = hpcti_now(), comm0 = 0.0;
    hpcti_model_set_nonfinite_loss(model, c.divergence_factor > 0 ? HPCT_ERR_LOSS_DIVERGED : 0);
    s = setup(&L);
    if (!s) s = observe(&L);
    if (!s) comm0 = comm_wait_s(&L);
    if (!s) s = resume(&L);
    if (!s) s = run(&L);
    if (s == HPCT_ERR_LOSS_DIVERGED || s == HPCT_ERR_NONFINITE) s = data_changed(&L, s);
    char detail[sizeof ctx->last_error]; /* the bookkeeping calls below clear it */
    snprintf(detail, sizeof detail, "%s", ctx->last_error);
    int shared = ctx->error_shared;
    if (L.ahead.moved) /* the caller's next batch: the one after the last completed step */
        hpct_dataset_set_cursor(ds, L.cursor_epoch, L.cursor_step);
    record_stop(&L, s, detail);
    hpcti_obs_close(&L.obs);
    hpcti_timeline_close(ctx);
    if (L.dist) hpct_model_set_grad_averaging(model, 0);
    hpcti_model_set_nonfinite_loss(model, 0);
    hpcti_ckpt_protect(ck, -1);
    free(L.losses);
    hpct_dataset_skipped(ds, &res->skipped_batches);
    res->wall_s = hpcti_now() - t0;
    res->comm_wait_s = comm_wait_s(&L) - comm0;
    if (s) snprintf(ctx->last_error, sizeof ctx->last_error, "%s", detail);
    if (s) ctx->error_shared = shared;
    return s;
}

/* Largest global batch that divides n, is a multiple of world and gives <= 4096 per rank. */
static int eval_batch(size_t n, int world)
{
    for (long per = 4096; per >= 1; per--)
        if ((size_t)(per * world) <= n && n % (size_t)(per * world) == 0) return (int)(per * world);
    long per = (long)(n / (size_t)world);
    return (int)((per > 4096 ? 4096 : per) * world);
}

hpct_status_t hpct_evaluate(hpct_model_t model, hpct_dataset_t ds, double *loss, double *accuracy,
                            long *samples)
{
    hpct_params_t params;
    if (!model || hpct_model_params(model, &params)) return HPCT_ERR_INVALID_ARG;
    struct loop L = {.ctx = params->ctx, .model = model, .ds = ds};
    hpcti_clear_error(L.ctx);
    if (!ds) return hpcti_error(L.ctx, HPCT_ERR_INVALID_ARG, "hpct_evaluate: ds is NULL");
    L.dist = hpcti_loop_where(L.ctx, &L.rank, &L.world);
    size_t n;
    long steps;
    hpct_status_t s = check_data(L.ctx, model, ds, "hpct_evaluate");
    if (!s) s = hpct_dataset_info(ds, &n, NULL, NULL, NULL);
    if (s) return s;
    int gb = eval_batch(n, L.world);
    if (gb <= 0)
        return hpcti_error(L.ctx, HPCT_ERR_INVALID_ARG,
                           "hpct_evaluate: %zu samples are fewer than the %d ranks", n, L.world);
    if ((s = hpct_dataset_partition(ds, L.rank, L.world, gb)) ||
        (s = hpct_dataset_steps_per_epoch(ds, &steps)))
        return s;
    double sums[2] = {0.0, 0.0};
    for (long i = 0; i < steps && !s; i++) {
        const float *x;
        const void *t;
        double l, a;
        s = hpct_dataset_next(ds, &x, &t);
        if (!s) s = hpct_model_evaluate(model, x, t, (size_t)(gb / L.world), &l, &a);
        sums[0] += l, sums[1] += a;
    }
    if (s) return s;
    /* Every rank evaluated the same number of samples: the mean of means is the mean. */
    float means[2] = {(float)(sums[0] / (double)steps), (float)(sums[1] / (double)steps)};
    if ((s = mean_over_ranks(&L, means, 2))) return s;
    if (loss) *loss = means[0];
    if (accuracy) *accuracy = means[1];
    if (samples) *samples = steps * gb;
    return HPCT_SUCCESS;
}
