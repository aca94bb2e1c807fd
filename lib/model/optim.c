/* optim.c: SGD and AdamW over a parameter set, LR schedules, global-norm clipping. */
#include "params.h"
#include "../device/ops.h"
#include "../../kernels/hpct_math.h"

#include <math.h>
#include <stdlib.h>

struct hpct_optimizer {
    hpct_params_t params;
    hpct_optim_config_t cfg;
    long step;    /* updates applied so far */
    int slots;    /* state buffers per parameter buffer */
    float *state; /* [slots, params->total], device memory */
};

/* The first field of cfg that is out of range, or NULL. */
static const char *bad_field(const hpct_optim_config_t *c)
{
    if (c->version < 1 || c->version > HPCT_OPTIM_CONFIG_VERSION)
        return "version (start from HPCT_OPTIM_CONFIG_INITIALIZER)";
    if (c->kind != HPCT_OPT_SGD && c->kind != HPCT_OPT_ADAMW) return "kind";
    if (!(c->lr > 0.0f) || !isfinite(c->lr)) return "lr (must be finite and > 0)";
    if (!(c->momentum >= 0.0f && c->momentum < 1.0f)) return "momentum (must be in [0, 1))";
    if (c->nesterov && !(c->kind == HPCT_OPT_SGD && c->momentum > 0.0f))
        return "nesterov (needs SGD with momentum > 0)";
    if (!(c->weight_decay >= 0.0f) || !isfinite(c->weight_decay))
        return "weight_decay (must be >= 0)";
    if (!(c->beta1 >= 0.0f && c->beta1 < 1.0f)) return "beta1 (must be in [0, 1))";
    if (!(c->beta2 >= 0.0f && c->beta2 < 1.0f)) return "beta2 (must be in [0, 1))";
    if (!(c->eps > 0.0f)) return "eps (must be > 0)";
    if (!(c->clip_norm >= 0.0f) || !isfinite(c->clip_norm)) return "clip_norm (must be >= 0)";
    if (c->schedule < HPCT_SCHED_CONSTANT || c->schedule > HPCT_SCHED_COSINE) return "schedule";
    if (c->warmup_steps < 0) return "warmup_steps (must be >= 0)";
    if (c->step_size < 1) return "step_size (must be >= 1)";
    if (!(c->gamma > 0.0f && c->gamma <= 1.0f)) return "gamma (must be in (0, 1])";
    if (c->total_steps < 1) return "total_steps (must be >= 1)";
    if (!(c->min_lr >= 0.0f && c->min_lr <= c->lr)) return "min_lr (must be in [0, lr])";
    return NULL;
}

hpct_status_t hpct_optimizer_create(hpct_params_t params, const hpct_optim_config_t *cfg,
                                    hpct_optimizer_t *out)
{
    if (!params) return HPCT_ERR_INVALID_ARG;
    hpct_ctx_t ctx = params->ctx;
    hpcti_clear_error(ctx);
    if (!cfg || !out)
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG, "hpct_optimizer_create: %s is NULL",
                           cfg ? "out" : "cfg");
    *out = NULL;
    const char *bad = bad_field(cfg);
    if (bad)
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                           "hpct_optimizer_create: bad hpct_optim_config_t.%s", bad);
    if (params->num == 0)
        return hpcti_error(ctx, HPCT_ERR_STATE,
                           "hpct_optimizer_create: the parameter set is empty");
    hpct_optimizer_t o = hpcti_calloc(ctx, 1, sizeof *o, "an optimizer");
    if (!o) return HPCT_ERR_NO_MEMORY;
    o->params = params;
    o->cfg = *cfg;
    params->users++;
    o->slots = cfg->kind == HPCT_OPT_ADAMW ? 2 : (cfg->momentum > 0.0f ? 1 : 0);
    if (o->slots) {
        o->state = ctx->ops->alloc(ctx, sizeof(float) * params->total * (size_t)o->slots);
        if (!o->state) {
            params->users--;
            free(o);
            return HPCT_ERR_NO_MEMORY;
        }
    }
    *out = o;
    return HPCT_SUCCESS;
}

void hpct_optimizer_destroy(hpct_optimizer_t o)
{
    if (!o) return;
    o->params->users--;
    o->params->ctx->ops->free(o->params->ctx, o->state);
    free(o);
}

/* The schedule's learning rate at a 0-based step. */
static float schedule_lr(const hpct_optim_config_t *c, long step)
{
    if (c->warmup_steps > 0 && step < c->warmup_steps)
        return c->lr * (float)(step + 1) / (float)c->warmup_steps;
    long s = step - c->warmup_steps;
    switch (c->schedule) {
    case HPCT_SCHED_STEP: return c->lr * powf(c->gamma, (float)(s / c->step_size));
    case HPCT_SCHED_COSINE:
        if (s >= c->total_steps) return c->min_lr;
        return c->min_lr +
               0.5f * (c->lr - c->min_lr) * (1.0f + (float)cos(M_PI * (double)s / c->total_steps));
    default: return c->lr;
    }
}

/* Slot k of buffer i's state, or NULL when the optimizer keeps none. */
static float *state_of(hpct_optimizer_t o, int i, int k)
{
    if (k >= o->slots) return NULL;
    size_t off = 0;
    for (int j = 0; j < i; j++) off += o->params->bufs[j].count;
    return o->state + (size_t)k * o->params->total + off;
}

/* Factor that brings the global gradient norm down to clip_norm (1 when not clipping). */
static hpct_status_t clip_scale(hpct_optimizer_t o, float *gscale)
{
    *gscale = 1.0f;
    if (o->cfg.clip_norm <= 0.0f) return HPCT_SUCCESS;
    double norm;
    hpct_status_t s = hpct_params_grad_norm(o->params, &norm);
    if (s) return s;
    if (!isfinite(norm))
        return hpcti_error(o->params->ctx, HPCT_ERR_NONFINITE,
                           "hpct_optimizer_step: the gradient norm is %g at step %ld; parameters "
                           "were not updated",
                           norm, o->step);
    *gscale = hpcti_clip_factor(norm, o->cfg.clip_norm);
    return HPCT_SUCCESS;
}

/* The bias corrections of update step (0-based): c1 = 1 - b1^(step+1), c2 = 1 - b2^(step+1). */
static void corrections(const hpct_optim_config_t *c, long step, float *c1, float *c2)
{
    *c1 = 1.0f - powf(c->beta1, (float)(step + 1));
    *c2 = 1.0f - powf(c->beta2, (float)(step + 1));
}

/* Update buffer i with scalars lr, c1, c2, gscale: the kernels of hpct_optimizer_step. */
static hpct_status_t update(hpct_optimizer_t o, int i, float lr, float c1, float c2, float gscale)
{
    hpct_ctx_t ctx = o->params->ctx;
    const hpct_optim_config_t *c = &o->cfg;
    struct hpcti_param_buf *b = &o->params->bufs[i];
    if (c->kind == HPCT_OPT_ADAMW)
        return ctx->ops->adamw(ctx, b->param, b->grad, state_of(o, i, 0), state_of(o, i, 1),
                               b->count, lr, c->beta1, c->beta2, c->eps, c->weight_decay, c1, c2,
                               gscale);
    return ctx->ops->sgd(ctx, b->param, b->grad, state_of(o, i, 0), b->count, lr, c->momentum,
                         c->nesterov, c->weight_decay, gscale);
}

/* The same update, gated, its scalars read from sc (device) when it runs. */
static hpct_status_t update_gated(hpct_optimizer_t o, int i, const float *sc, const int *gate)
{
    hpct_ctx_t ctx = o->params->ctx;
    const hpct_optim_config_t *c = &o->cfg;
    struct hpcti_param_buf *b = &o->params->bufs[i];
    if (c->kind == HPCT_OPT_ADAMW)
        return ctx->ops->adamw_gated(ctx, b->param, b->grad, state_of(o, i, 0), state_of(o, i, 1),
                                     b->count, sc, gate, c->beta1, c->beta2, c->eps,
                                     c->weight_decay);
    return ctx->ops->sgd_gated(ctx, b->param, b->grad, state_of(o, i, 0), b->count, sc, gate,
                               c->momentum, c->nesterov, c->weight_decay);
}

void hpcti_optimizer_scalars(hpct_optimizer_t o, float *sc)
{
    sc[HPCTI_SC_LR] = schedule_lr(&o->cfg, o->step);
    corrections(&o->cfg, o->step, &sc[HPCTI_SC_C1], &sc[HPCTI_SC_C2]);
    sc[HPCTI_SC_GSCALE] = 1.0f;
}

hpct_status_t hpcti_optimizer_record_update(hpct_optimizer_t o, const float *sc, const int *gate)
{
    hpct_status_t s = HPCT_SUCCESS;
    for (int i = 0; i < o->params->num && !s; i++) s = update_gated(o, i, sc, gate);
    return s;
}

void hpcti_optimizer_advance(hpct_optimizer_t o)
{
    o->step++;
}

void hpcti_optimizer_mark(hpct_optimizer_t o, struct hpcti_optimizer_mark *mark)
{
    mark->opt = o, mark->state = o->state, mark->cfg = o->cfg;
}

hpct_status_t hpct_optimizer_step(hpct_optimizer_t o)
{
    if (!o) return HPCT_ERR_INVALID_ARG;
    hpct_ctx_t ctx = o->params->ctx;
    hpcti_clear_error(ctx);
    float gscale;
    hpct_status_t s = clip_scale(o, &gscale);
    if (s) return s;
    float lr = schedule_lr(&o->cfg, o->step), c1, c2;
    corrections(&o->cfg, o->step, &c1, &c2);
    for (int i = 0; i < o->params->num && !s; i++) s = update(o, i, lr, c1, c2, gscale);
    if (!s) s = ctx->ops->sync(ctx); /* a failed update kernel surfaces in this step */
    if (s) return s;
    o->step++;
    return HPCT_SUCCESS;
}

hpct_status_t hpct_optimizer_lr_at(hpct_optimizer_t o, long step, float *lr)
{
    if (!o) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(o->params->ctx);
    if (!lr || step < 0)
        return hpcti_error(o->params->ctx, HPCT_ERR_INVALID_ARG, "hpct_optimizer_lr_at: %s",
                           lr ? "step is negative" : "lr is NULL");
    *lr = schedule_lr(&o->cfg, step);
    return HPCT_SUCCESS;
}

hpct_params_t hpcti_optimizer_params(hpct_optimizer_t o)
{
    return o ? o->params : NULL;
}

float hpcti_optimizer_clip(hpct_optimizer_t o)
{
    return o ? o->cfg.clip_norm : 0.0f;
}

hpct_status_t hpct_optimizer_get_step(hpct_optimizer_t o, long *step)
{
    if (!o) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(o->params->ctx);
    if (!step)
        return hpcti_error(o->params->ctx, HPCT_ERR_INVALID_ARG,
                           "hpct_optimizer_get_step: step is NULL");
    *step = o->step;
    return HPCT_SUCCESS;
}

hpct_status_t hpct_optimizer_set_step(hpct_optimizer_t o, long step)
{
    if (!o) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(o->params->ctx);
    if (step < 0)
        return hpcti_error(o->params->ctx, HPCT_ERR_INVALID_ARG,
                           "hpct_optimizer_set_step: step is %ld, must be >= 0", step);
    o->step = step;
    return HPCT_SUCCESS;
}

hpct_status_t hpct_optimizer_state_slots(hpct_optimizer_t o, int *slots)
{
    if (!o) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(o->params->ctx);
    if (!slots)
        return hpcti_error(o->params->ctx, HPCT_ERR_INVALID_ARG,
                           "hpct_optimizer_state_slots: slots is NULL");
    *slots = o->slots;
    return HPCT_SUCCESS;
}

hpct_status_t hpct_optimizer_state(hpct_optimizer_t o, int i, int k, float **state, size_t *count)
{
    if (!o) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(o->params->ctx);
    if (i < 0 || i >= o->params->num || k < 0 || k >= o->slots)
        return hpcti_error(o->params->ctx, HPCT_ERR_NOT_FOUND,
                           "hpct_optimizer_state: buffer %d slot %d does not exist (%d buffers, %d "
                           "slots)",
                           i, k, o->params->num, o->slots);
    if (state) *state = state_of(o, i, k);
    if (count) *count = o->params->bufs[i].count;
    return HPCT_SUCCESS;
}
