/* fused.c: one training step of a built model and its optimizer as one recorded sequence of
 * device work (the in-situ step and hpct_train of one rank on the cuda backend): the host
 * inputs' copy from pinned staging, forward, loss, backward, the gradients' check (their
 * non-finite count, or their sums of squares when the optimizer clips), the verdict on the
 * device, the update gated on it, the results to pinned host memory; then one wait. The first time
 * a shape is seen the sequence runs as it is recorded; the second time it is captured as a CUDA
 * graph, which is replayed from then on (ops->rec_begin and the graph ops, lib/device/ops.h).
 * Captured or not, the same kernels run in the same order on the same buffers: the same bits. A
 * caller that knows its next batch (hpct_train) stages it into the other of two pinned slots while
 * the device runs the step (hpcti_fused_stage_next, from the step's ahead callback). */
#include "layer.h"
#include "params.h"
#include "../device/ops.h"
#include "../obs/obs.h"
#include "../../kernels/hpct_math.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Shapes kept captured at once (the least recently used goes first): a caller alternating two
 * arrays needs 2, one whose batch cycles through 8 sizes 8. */
#define GRAPHS 8

/* What a captured step depends on besides the values in its buffers. */
struct key {
    int batch;
    int slot;          /* the pinned staging slot of host inputs */
    const void *x, *t; /* the caller's arrays when read in place (device memory), else NULL */
    unsigned long layout;
    struct hpcti_optimizer_mark opt;
};

struct entry {
    struct key key;
    void *graph;        /* NULL: seen once, or its capture failed */
    int failed;         /* the capture failed: this shape stays uncaptured */
    unsigned long used; /* the clock when last used (the least recent goes first) */
};

struct hpcti_fused {
    float *x_pin[2]; /* [max_batch, inputs] pinned staging of host inputs, two slots */
    void *t_pin[2];  /* [max_batch] labels or [max_batch, outputs] targets, pinned */
    int slot;        /* the slot host inputs are staged in (the other: the next batch's) */
    int next_batch;  /* > 0: hpcti_fused_stage_next staged a batch of that size in 1 - slot */
    float *sc_pin;   /* [HPCTI_SC_COUNT] the next update's scalars (pinned) ... */
    float *sc_dev;   /* ... and on the device, where the gate adds the gradient scale */
    int *gate_dev;   /* the verdict: 1 when the update runs */
    double *res_dev; /* [1 + sums]: the loss sum, then the gradients' check (device) */
    double *res_pin; /* the same, copied back (pinned) */
    int res_slots;   /* 1 + the parameter buffers (at least 2) */
    int capture;     /* HPCT_CUDA_GRAPH */
    struct entry graphs[GRAPHS];
    unsigned long clock;
    struct hpcti_fused_stats stats;
};

int hpcti_fused_applies(hpct_model_t m, hpct_optimizer_t o)
{
    hpct_params_t p = hpcti_optimizer_params(o);
    return m && m->max_batch && m->ctx->ops->rec_begin && !m->grad_ready && p == m->params &&
           p->total == m->num_params;
}

void hpcti_fused_stats(hpct_model_t m, struct hpcti_fused_stats *stats)
{
    static const struct hpcti_fused_stats none;
    *stats = m && m->fused ? m->fused->stats : none;
}

void hpcti_fused_free(hpct_model_t m)
{
    struct hpcti_fused *f = m->fused;
    if (!f) return;
    const struct hpcti_ops *ops = m->ctx->ops;
    if (f->stats.queued + f->stats.replayed)
        hpcti_log(m->ctx, HPCT_LOG_INFO,
                  "fused step: %ld steps, %ld of them replayed CUDA graphs (%ld captured)",
                  f->stats.queued + f->stats.replayed, f->stats.replayed, f->stats.captured);
    for (int i = 0; i < GRAPHS; i++) ops->graph_free(m->ctx, f->graphs[i].graph);
    for (int i = 0; i < 2; i++)
        ops->free_host(m->ctx, f->x_pin[i]), ops->free_host(m->ctx, f->t_pin[i]);
    ops->free_host(m->ctx, f->sc_pin);
    ops->free_host(m->ctx, f->res_pin);
    ops->free(m->ctx, f->sc_dev);
    ops->free(m->ctx, f->gate_dev);
    ops->free(m->ctx, f->res_dev);
    free(f);
    m->fused = NULL;
}

/* The staging and result buffers, made at the first fused step. */
static hpct_status_t make_fused(hpct_model_t m)
{
    hpct_ctx_t ctx = m->ctx;
    const struct hpcti_ops *ops = ctx->ops;
    struct hpcti_fused *f = hpcti_calloc(ctx, 1, sizeof *f, "the fused step's state");
    if (!f) return HPCT_ERR_NO_MEMORY;
    m->fused = f;
    int on = 1, set = 0;
    hpct_status_t s = hpcti_tunable_flag(ctx, "HPCT_CUDA_GRAPH", &on, &set);
    if (s) {
        hpcti_fused_free(m);
        return s;
    }
    f->capture = on;
    f->res_slots = 1 + (m->params->num > 1 ? m->params->num : 1);
    for (int i = 0; i < 2; i++) {
        f->x_pin[i] = ops->alloc_host(ctx, sizeof(float) * (size_t)m->max_batch * m->inputs);
        f->t_pin[i] = ops->alloc_host(ctx, hpcti_target_bytes(m, m->max_batch));
    }
    f->sc_pin = ops->alloc_host(ctx, sizeof(float) * HPCTI_SC_COUNT);
    f->res_pin = ops->alloc_host(ctx, sizeof(double) * (size_t)f->res_slots);
    f->sc_dev = ops->alloc(ctx, sizeof(float) * HPCTI_SC_COUNT);
    f->gate_dev = ops->alloc(ctx, sizeof(int));
    f->res_dev = ops->alloc(ctx, sizeof(double) * (size_t)f->res_slots);
    if (!f->x_pin[0] || !f->t_pin[0] || !f->x_pin[1] || !f->t_pin[1] || !f->sc_pin || !f->res_pin ||
        !f->sc_dev || !f->gate_dev || !f->res_dev) {
        hpcti_fused_free(m); /* the error names the allocation; the next step tries again */
        return HPCT_ERR_NO_MEMORY;
    }
    hpcti_log(ctx, HPCT_LOG_INFO, "fused step on the %s backend, CUDA graphs %s", ops->name,
              on ? "on" : "off (HPCT_CUDA_GRAPH=0)");
    return HPCT_SUCCESS;
}

/* Where the step reads its inputs and targets: in place (device memory) or the staging slot. */
struct inputs {
    const float *x;
    const void *t;
    int x_staged, t_staged, slot;
};

/* The results of the gradients' check after the loss's (hpcti_step_gate's sums): with
 * clipping one sum of squares a buffer, else with check_grads one non-finite count, else none. */
static int check_sums(hpct_model_t m, float clip, int check_grads)
{
    return clip > 0.0f ? m->params->num : check_grads ? 1 : 0;
}

/* The gradients' check of check_sums: each buffer's sum of squares (as hpct_params_grad_norm),
 * or the non-finite count of them all (flat, back to back), into the slots after the loss. */
static hpct_status_t record_check(hpct_model_t m, float clip, int sums)
{
    hpct_ctx_t ctx = m->ctx;
    double unused;
    int finite;
    if (sums == 0) return HPCT_SUCCESS;
    if (clip <= 0.0f) return ctx->ops->all_finite(ctx, m->flat_grads, m->num_params, &finite);
    hpct_status_t s = HPCT_SUCCESS;
    for (int i = 0; i < m->params->num && !s; i++)
        s = ctx->ops->sumsq(ctx, m->params->bufs[i].grad, m->params->bufs[i].count, &unused);
    return s;
}

/* The step's device work, in order, on the current recording. */
static hpct_status_t record_step(hpct_model_t m, hpct_optimizer_t o, const struct inputs *in,
                                 const struct hpcti_fused_io *io)
{
    hpct_ctx_t ctx = m->ctx;
    const struct hpcti_ops *ops = ctx->ops;
    struct hpcti_fused *f = m->fused;
    const float *y;
    double unused;
    int batch = io->batch;
    float clip = hpcti_optimizer_clip(o);
    int sums = check_sums(m, clip, io->check_grads);
    hpct_status_t s = HPCT_SUCCESS;
    if (in->x_staged)
        s = ops->to_device(ctx, m->x_dev, f->x_pin[in->slot],
                           sizeof(float) * (size_t)batch * m->inputs);
    if (!s && in->t_staged)
        s = ops->to_device(ctx, m->targets_dev, f->t_pin[in->slot], hpcti_target_bytes(m, batch));
    if (!s) s = ops->to_device(ctx, f->sc_dev, f->sc_pin, sizeof(float) * HPCTI_SC_COUNT);
    if (!s) s = hpcti_forward(m, in->x, batch, &y);
    if (!s) s = hpcti_batch_loss(m, y, in->t, batch, m->grad_a[0], &unused); /* slot 0 */
    if (!s) s = hpcti_backward(m, batch, 0);
    if (!s) s = record_check(m, clip, sums);
    if (!s) s = ops->step_gate(ctx, f->res_dev, sums, clip, f->sc_dev, f->gate_dev);
    if (!s) s = hpcti_optimizer_record_update(o, f->sc_dev, f->gate_dev);
    if (!s) s = ops->to_host(ctx, f->res_pin, f->res_dev, sizeof(double) * (size_t)(1 + sums));
    return s;
}

/* Run the step once as it is recorded (no graph). */
static hpct_status_t run_queued(hpct_model_t m, hpct_optimizer_t o, const struct inputs *in,
                                const struct hpcti_fused_io *io)
{
    hpct_ctx_t ctx = m->ctx;
    m->fused->stats.queued++;
    hpct_status_t s = ctx->ops->rec_begin(ctx, m->fused->res_dev, m->fused->res_slots, 0);
    if (s) return s;
    s = record_step(m, o, in, io);
    hpct_status_t end = ctx->ops->rec_end(ctx, NULL);
    return s ? s : end;
}

/* Capture the step into e->graph; a failure leaves e uncaptured for good (logged; the step
 * then runs queued: nothing of a capture has run). */
static void capture(hpct_model_t m, hpct_optimizer_t o, const struct inputs *in,
                    const struct hpcti_fused_io *io, struct entry *e)
{
    hpct_ctx_t ctx = m->ctx;
    hpct_status_t s = ctx->ops->rec_begin(ctx, m->fused->res_dev, m->fused->res_slots, 1);
    if (!s) {
        s = record_step(m, o, in, io);
        hpct_status_t end = ctx->ops->rec_end(ctx, s ? NULL : &e->graph);
        if (!s) s = end;
    }
    if (s) {
        e->failed = 1, e->graph = NULL;
        hpcti_log(ctx, HPCT_LOG_WARN,
                  "fused step: batch %d not captured as a CUDA graph (%s); it runs uncaptured",
                  io->batch, hpct_last_error(ctx));
        hpcti_clear_error(ctx);
        return;
    }
    m->fused->stats.captured++;
    hpcti_log(ctx, HPCT_LOG_INFO,
              "fused step: batch %d captured as a CUDA graph (inputs %s, "
              "targets %s)",
              io->batch, in->x_staged ? "staged" : "in place",
              in->t_staged ? "staged" : "in place");
}

static int same_key(const struct key *a, const struct key *b)
{
    return !memcmp(a, b, sizeof *a);
}

/* The entry of key k, made (in the least recently used place) when it is new: *fresh 1. */
static struct entry *entry_of(hpct_model_t m, const struct key *k, int *fresh)
{
    struct hpcti_fused *f = m->fused;
    struct entry *old = &f->graphs[0];
    *fresh = 0;
    for (int i = 0; i < GRAPHS; i++) {
        struct entry *e = &f->graphs[i];
        if (e->used && same_key(&e->key, k)) return e;
        if (e->used < old->used) old = e;
    }
    m->ctx->ops->graph_free(m->ctx, old->graph);
    memset(old, 0, sizeof *old);
    old->key = *k;
    *fresh = 1;
    return old;
}

/* The step's device work: replayed, captured then replayed, or queued (first sight of a
 * shape, graphs off, a timeline recording per-layer spans, or a failed capture). */
static hpct_status_t run(hpct_model_t m, hpct_optimizer_t o, const struct inputs *in,
                         const struct hpcti_fused_io *io)
{
    struct hpcti_fused *f = m->fused;
    hpct_ctx_t ctx = m->ctx;
    if (!f->capture || hpcti_timeline_is_open(ctx)) return run_queued(m, o, in, io);
    struct key k;
    memset(&k, 0, sizeof k); /* the padding too: keys are compared whole */
    k.batch = io->batch, k.slot = in->slot, k.layout = m->layout;
    k.x = in->x_staged ? NULL : in->x;
    k.t = in->t_staged ? NULL : in->t;
    hpcti_optimizer_mark(o, &k.opt);
    int fresh;
    struct entry *e = entry_of(m, &k, &fresh);
    e->used = ++f->clock;
    if (!fresh && !e->graph && !e->failed) capture(m, o, in, io, e);
    if (!e->graph) return run_queued(m, o, in, io);
    f->stats.replayed++;
    return ctx->ops->graph_launch(ctx, e->graph);
}

/* Inputs read in place when they are device memory, else copied into the pinned staging; x
 * NULL: the batch hpcti_fused_stage_next staged (its slot becomes the current one). */
static struct inputs stage(hpct_model_t m, const float *x, const void *t, int batch)
{
    struct hpcti_fused *f = m->fused;
    if (!x) {
        f->slot = 1 - f->slot, f->next_batch = 0;
        return (struct inputs){m->x_dev, m->targets_dev, 1, 1, f->slot};
    }
    struct inputs in = {x, t, !hpcti_on_device(m, x), !hpcti_on_device(m, t), f->slot};
    f->next_batch = 0; /* a batch staged ahead and not taken is dropped */
    if (in.x_staged) {
        memcpy(f->x_pin[f->slot], x, sizeof(float) * (size_t)batch * m->inputs);
        in.x = m->x_dev;
    }
    if (in.t_staged) {
        memcpy(f->t_pin[f->slot], t, hpcti_target_bytes(m, batch));
        in.t = m->targets_dev;
    }
    return in;
}

void hpcti_fused_stage_next(hpct_model_t m, const float *x, const void *t, int batch)
{
    struct hpcti_fused *f = m->fused;
    if (!f || batch <= 0 || batch > m->max_batch) return; /* the next step stages it itself */
    memcpy(f->x_pin[1 - f->slot], x, sizeof(float) * (size_t)batch * m->inputs);
    memcpy(f->t_pin[1 - f->slot], t, hpcti_target_bytes(m, batch));
    f->next_batch = batch;
}

/* The argument checks: of the caller's arrays, or of the batch staged ahead (host memory). */
static hpct_status_t check(hpct_model_t m, const char *fn, const struct hpcti_fused_io *io)
{
    struct hpcti_fused *f = m->fused;
    if (io->x) return hpcti_check_inputs(m, fn, io->x, io->t, io->batch);
    if (!f || f->next_batch != io->batch)
        return hpcti_error(m->ctx, HPCT_ERR_INTERNAL, "%s: no batch of %d was staged ahead", fn,
                           io->batch);
    return hpcti_check_inputs(m, fn, f->x_pin[1 - f->slot], f->t_pin[1 - f->slot], io->batch);
}

hpct_status_t hpcti_fused_step(hpct_model_t m, hpct_optimizer_t o, const char *fn,
                               const struct hpcti_fused_io *io, float *loss, int *updated)
{
    hpct_ctx_t ctx = m->ctx;
    *updated = 0;
    hpct_status_t s = !m->fused ? make_fused(m) : HPCT_SUCCESS;
    if (!s) s = check(m, fn, io);
    if (s) return s;
    struct hpcti_fused *f = m->fused;
    struct inputs in = stage(m, io->x, io->t, io->batch);
    hpcti_optimizer_scalars(o, f->sc_pin);
    double t0 = hpcti_tl_now(ctx);
    s = run(m, o, &in, io);
    if (!s && io->ahead) io->ahead(io->arg); /* while the device runs the step */
    if (!s) s = ctx->ops->sync(ctx); /* the results, the gradients and the update are final */
    if (t0 > 0) hpcti_tl_span(ctx, 0, "fused step", "compute", t0, hpcti_now(), NULL);
    if (s) return s;
    double l = hpcti_mean_loss(m, f->res_pin[0], io->batch);
    if (!isfinite(l))
        return hpcti_error(ctx, m->nonfinite_loss ? m->nonfinite_loss : HPCT_ERR_NONFINITE,
                           "%s: the loss is %g; the parameters were not updated", fn, l);
    float gscale, clip = hpcti_optimizer_clip(o);
    *updated = hpcti_step_gate(f->res_pin, check_sums(m, clip, io->check_grads), clip, &gscale);
    if (*updated) hpcti_optimizer_advance(o);
    *loss = (float)l;
    return HPCT_SUCCESS;
}
