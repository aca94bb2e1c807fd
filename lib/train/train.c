/* train.c: the synchronous data-parallel step loop: data -> forward/backward -> averaged
 * gradients -> optimizer -> checkpoints, with agreement across ranks at every step boundary. */
#include "loop.h"

#include <stdio.h>
#include <string.h>

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
    double report_t0, loss_sum, data_wait0, comm_wait0;
    long loss_n, report_step0;
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
        (s = hpct_dataset_info(L->ds, NULL, &L->features, &L->target_width, &L->target_dtype)))
        return s;
    if ((s = hpct_dataset_partition(L->ds, L->rank, L->world, c->global_batch)) ||
        (s = hpct_dataset_steps_per_epoch(L->ds, &L->steps_per_epoch)))
        return s;
    L->total_steps = c->epochs * L->steps_per_epoch;
    if (c->max_steps > 0 && c->max_steps < L->total_steps) L->total_steps = c->max_steps;
    return HPCT_SUCCESS;
}

/* Load the newest valid checkpoint on every rank, or make the replicas equal to rank 0's. */
static hpct_status_t resume(struct loop *L)
{
    hpct_ckpt_meta_t meta = HPCT_CKPT_META_INITIALIZER;
    int found;
    L->res->resumed_from = -1;
    hpct_status_t s = hpcti_loop_load(L->ctx, "hpct_train", L->ck, L->params, L->opt,
                                      L->cfg->resume, &meta, &found);
    if (s || !found) return s;
    if (meta.global_batch != L->cfg->global_batch)
        return hpcti_error(L->ctx, HPCT_ERR_STATE,
                           "hpct_train: checkpoint %s was saved with global batch %ld, this run "
                           "uses %d: the sample order would differ",
                           meta.path, meta.global_batch, L->cfg->global_batch);
    if ((s = hpct_dataset_set_cursor(L->ds, meta.cursor_epoch, meta.cursor_step)) ||
        (s = hpcti_loop_adopt(L->ctx, "hpct_train", L->params, L->opt, &meta)))
        return s;
    L->res->resumed_from = meta.step;
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
    if (L->ck && L->rank == hpcti_ckpt_writer_rank(L->ck)) L->res->ckpt_wait_s += hpcti_now() - t0;
    if (wrote) L->res->checkpoints++;
    return s;
}

/* One optimizer step: next batch, micro-batches (averaging on the last), update. */
static hpct_status_t step(struct loop *L, float *loss)
{
    const float *x;
    const void *t;
    double t0 = hpcti_now();
    hpct_status_t s = hpct_dataset_next(L->ds, &x, &t);
    L->res->data_wait_s += hpcti_now() - t0;
    if (s) return s;
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
        total += l;
    }
    if (!s && micro > 1) s = hpct_params_scale_grads(L->params, 1.0f / (float)micro);
    /* defer_copy checkpoints: the writer copied the state while this step ran. */
    if (!s && L->ck) {
        double t1 = hpcti_now();
        s = hpct_ckpt_before_update(L->ck);
        L->res->ckpt_wait_s += hpcti_now() - t1;
    }
    if (!s) s = hpct_optimizer_step(L->opt);
    *loss = (float)(total / micro);
    return s;
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
    L->res->final_loss = mean;
    if (L->cfg->progress) L->cfg->progress(&p, L->cfg->progress_arg);
    L->report_t0 = t, L->report_step0 = done, L->loss_sum = 0.0, L->loss_n = 0;
    L->data_wait0 = L->res->data_wait_s, L->comm_wait0 = comm_wait_s(L);
    return HPCT_SUCCESS;
}

/* Agree on checkpoint/stop reasons across ranks after `done` steps; save if any rank asks. */
static hpct_status_t boundary(struct loop *L, long done, int *stop)
{
    long flags[HPCTI_DUE_N];
    hpcti_loop_due(L->ck, done, flags);
    hpct_status_t s = hpcti_loop_agree_due(L->ctx, flags);
    if (s) return s;
    *stop = hpcti_loop_stop(L->ctx, flags, done, &L->res->stop_signal);
    if (!*stop && !flags[HPCTI_DUE_SAVE]) return HPCT_SUCCESS;
    long epoch, cursor;
    hpct_dataset_get_cursor(L->ds, &epoch, &cursor);
    return save(L, epoch, cursor, *stop);
}

/* A rank hung: keep the state of the last completed step, then report the hang. The hang
 * may strike inside a step (the update not applied) or after it (report, boundary): the
 * cursor recorded after each completed step matches the optimizer's step in both cases. */
static hpct_status_t emergency(struct loop *L, hpct_status_t why)
{
    char detail[sizeof L->ctx->last_error];
    snprintf(detail, sizeof detail, "%s", L->ctx->last_error);
    if (L->ck && L->rank == hpcti_ckpt_writer_rank(L->ck)) {
        hpct_status_t s = save(L, L->cursor_epoch, L->cursor_step, 1);
        hpcti_log(L->ctx, HPCT_LOG_ERROR, "emergency checkpoint of the last completed step: %s",
                  s ? hpct_last_error(L->ctx) : "written");
    }
    return hpcti_error(L->ctx, why, "%s", detail);
}

static hpct_status_t run(struct loop *L)
{
    long done = 0;
    hpct_optimizer_get_step(L->opt, &done);
    L->report_t0 = hpcti_now(), L->report_step0 = done;
    hpct_dataset_get_cursor(L->ds, &L->cursor_epoch, &L->cursor_step);
    int stop = 0;
    hpct_status_t s = HPCT_SUCCESS;
    while (!s && !stop && done < L->total_steps) {
        float loss;
        s = step(L, &loss);
        if (s) break;
        done++;
        hpct_dataset_get_cursor(L->ds, &L->cursor_epoch, &L->cursor_step);
        L->loss_sum += loss, L->loss_n++;
        if (L->dist && (s = hpct_params_check_replicas_at(L->params, done))) break;
        if (L->cfg->log_interval > 0 &&
            (done % L->cfg->log_interval == 0 || done == L->total_steps))
            if ((s = report(L, done))) break;
        s = boundary(L, done, &stop);
    }
    L->res->steps = done;
    if (s == HPCT_ERR_TIMEOUT) return emergency(L, s);
    if (s) return s;
    if (stop && done < L->total_steps) return HPCT_PREEMPTED;
    if (L->loss_n && (s = report(L, done))) return s;
    if (stop) { /* the signal came with the last step: done, and its checkpoint is written */
        L->res->stop_signal = 0;
        return HPCT_SUCCESS;
    }
    long epoch, cursor;
    hpct_dataset_get_cursor(L->ds, &epoch, &cursor);
    return save(L, epoch, cursor, 1);
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
    struct loop L = {
        .ctx = ctx, .model = model, .opt = opt, .ds = ds, .ck = ck, .cfg = cfg, .res = res};
    double t0 = hpcti_now(), comm0 = 0.0;
    hpct_status_t s = setup(&L);
    if (!s) comm0 = comm_wait_s(&L);
    if (!s) s = resume(&L);
    if (!s) s = run(&L);
    char detail[sizeof ctx->last_error]; /* the bookkeeping calls below clear it */
    snprintf(detail, sizeof detail, "%s", ctx->last_error);
    int shared = ctx->error_shared;
    if (L.dist) hpct_model_set_grad_averaging(model, 0);
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
