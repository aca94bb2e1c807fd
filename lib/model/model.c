/* model.c: sequential models (dense, convolution, pooling, upsampling and reshape layers):
 * build, forward, backward, evaluation. */
#include "layer.h"
#include "params.h"
#include "../obs/obs.h"
#include "../device/ops.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void hpcti_model_set_grad_hooks(hpct_model_t m, hpcti_grad_ready_fn ready, hpcti_grads_done_fn done,
                                hpcti_grads_agree_fn agree)
{
    m->grad_ready = ready;
    m->grads_done = done;
    m->grads_agree = agree;
}

/* 1 when the backend keeps tensors in host memory (cpu). */
static int tensors_on_host(hpct_ctx_t ctx)
{
    return ctx->ops == &hpcti_cpu_ops;
}

hpct_status_t hpct_model_create(hpct_ctx_t ctx, int input_features, hpct_model_t *out)
{
    if (!ctx) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(ctx);
    if (!out) return hpcti_error(ctx, HPCT_ERR_INVALID_ARG, "hpct_model_create: out is NULL");
    *out = NULL;
    if (input_features <= 0)
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                           "hpct_model_create: input_features is %d, must be > 0", input_features);
    hpct_model_t m = hpcti_calloc(ctx, 1, sizeof *m, "a model");
    if (!m) return HPCT_ERR_NO_MEMORY;
    m->ctx = ctx;
    m->inputs = input_features;
    m->loss = HPCT_LOSS_SOFTMAX_CE;
    *out = m;
    return HPCT_SUCCESS;
}

/* Free the model's gradient memory flat: released to lib/comm if it lent it, else ops->free. */
static void give_back_grads(hpct_model_t m, float *flat)
{
    if (m->grads_release)
        m->grads_release(m->ctx, flat);
    else
        m->ctx->ops->free(m->ctx, flat);
}

void hpct_model_destroy(hpct_model_t m)
{
    if (!m) return;
    const struct hpcti_ops *ops = m->ctx->ops;
    hpcti_fused_free(m);
    for (int l = 0; l < m->num; l++) {
        struct hpcti_layer *d = &m->layers[l];
        if (d->kind == HPCTI_LAYER_RESHAPE) continue; /* z, y are views */
        ops->free(m->ctx, d->z);
        if (d->y != d->z) ops->free(m->ctx, d->y);
        ops->free(m->ctx, d->col);
    }
    ops->free(m->ctx, m->dcol);
    ops->free(m->ctx, m->flat_params);
    give_back_grads(m, m->flat_grads);
    ops->free(m->ctx, m->x_dev);
    ops->free(m->ctx, m->targets_dev);
    free(m->labels_host);
    ops->free(m->ctx, m->grad_a[0]);
    ops->free(m->ctx, m->grad_a[1]);
    hpct_params_destroy(m->params);
    free(m->layers);
    free(m);
}

float *hpcti_model_flat_grads(hpct_model_t m, size_t *count)
{
    *count = m->max_batch ? m->num_params : 0;
    return m->max_batch ? m->flat_grads : NULL;
}

void hpcti_model_move_grads(hpct_model_t m, float *flat, hpcti_grads_release_fn release)
{
    float *old = m->flat_grads;
    memcpy(flat, old, m->num_params * sizeof *flat);
    for (int l = 0; l < m->num; l++) {
        struct hpcti_layer *d = &m->layers[l];
        if (d->nw) d->dw = flat + (d->dw - old), d->db = flat + (d->db - old);
    }
    for (int i = 0; i < m->params->num; i++) {
        struct hpcti_param_buf *b = &m->params->bufs[i];
        if (b->grad >= old && b->grad < old + m->num_params) b->grad = flat + (b->grad - old);
    }
    give_back_grads(m, old);
    m->flat_grads = flat, m->grads_release = release;
    m->layout++;
}

struct hpcti_shape hpcti_model_tail(hpct_model_t m)
{
    if (m->num) return m->layers[m->num - 1].shape;
    return (struct hpcti_shape){.dims = 0, .c = m->inputs, .size = {1, 1, 1}};
}

hpct_status_t hpcti_check_act_init(hpct_model_t m, const char *fn, hpct_activation_t act,
                                   hpct_init_t init)
{
    if (act < HPCT_ACT_IDENTITY || act > HPCT_ACT_GELU)
        return hpcti_error(m->ctx, HPCT_ERR_INVALID_ARG, "%s: layer %d: unknown activation %d", fn,
                           m->num, (int)act);
    if (init < HPCT_INIT_AUTO || init > HPCT_INIT_XAVIER)
        return hpcti_error(m->ctx, HPCT_ERR_INVALID_ARG, "%s: layer %d: unknown initialisation %d",
                           fn, m->num, (int)init);
    return HPCT_SUCCESS;
}

hpct_status_t hpcti_model_append(hpct_model_t m, const char *fn, const struct hpcti_layer *d)
{
    if (m->num == m->cap) {
        int cap = m->cap ? 2 * m->cap : 4;
        struct hpcti_layer *layers = realloc(m->layers, sizeof *layers * (size_t)cap);
        if (!layers)
            return hpcti_error(m->ctx, HPCT_ERR_NO_MEMORY, "%s: cannot grow the layer list", fn);
        m->layers = layers;
        m->cap = cap;
    }
    m->layers[m->num++] = *d;
    return HPCT_SUCCESS;
}

hpct_status_t hpct_model_add_dense(hpct_model_t m, int out_features, hpct_activation_t act,
                                   hpct_init_t init)
{
    static const char fn[] = "hpct_model_add_dense";
    if (!m) return HPCT_ERR_INVALID_ARG;
    hpct_ctx_t ctx = m->ctx;
    hpcti_clear_error(ctx);
    if (m->max_batch) return hpcti_error(ctx, HPCT_ERR_STATE, "%s: the model is already built", fn);
    if (out_features <= 0)
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                           "%s: layer %d: out_features is %d, must be > 0", fn, m->num,
                           out_features);
    hpct_status_t s = hpcti_check_act_init(m, fn, act, init);
    if (s) return s;
    int width = m->num ? m->layers[m->num - 1].out : m->inputs; /* any shape, flattened */
    if ((long long)width * out_features > INT_MAX / 2)
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG, "%s: layer %d: %d x %d weights are too many",
                           fn, m->num, out_features, width);
    struct hpcti_layer d = {.kind = HPCTI_LAYER_DENSE,
                            .in = width,
                            .out = out_features,
                            .shape = {.dims = 0, .c = out_features, .size = {1, 1, 1}},
                            .act = act,
                            .init = init,
                            .nw = (size_t)out_features * width,
                            .nb = (size_t)out_features};
    return hpcti_model_append(m, fn, &d);
}

hpct_status_t hpct_model_set_loss(hpct_model_t m, hpct_loss_t loss)
{
    if (!m) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(m->ctx);
    if (loss != HPCT_LOSS_SOFTMAX_CE && loss != HPCT_LOSS_MSE)
        return hpcti_error(m->ctx, HPCT_ERR_INVALID_ARG, "hpct_model_set_loss: unknown loss %d",
                           (int)loss);
    m->loss = loss;
    return HPCT_SUCCESS;
}

/* Fill W of a layer with parameters on the host from its own seeded stream, then copy it
 * over. Fans: dense in and out; conv c_in k^dims and c_out k^dims. */
static hpct_status_t init_weights(hpct_model_t m, int l)
{
    struct hpcti_layer *d = &m->layers[l];
    size_t n = d->nw;
    double fan_in = (double)n / (double)d->nb, fan_out = (double)d->nb;
    if (d->kind == HPCTI_LAYER_CONV) fan_out *= hpcti_geom_window(&d->g);
    float *host = hpcti_calloc(m->ctx, n, sizeof *host, "initial weights");
    if (!host) return HPCT_ERR_NO_MEMORY;
    hpcti_rng_t rng;
    hpcti_rng_seed(&rng, hpcti_seed_mix(m->ctx->cfg.seed, (uint64_t)l + 1));
    hpct_init_t init = d->init;
    if (init == HPCT_INIT_AUTO)
        init =
            (d->act == HPCT_ACT_RELU || d->act == HPCT_ACT_GELU) ? HPCT_INIT_HE : HPCT_INIT_XAVIER;
    if (init == HPCT_INIT_HE) {
        double sd = sqrt(2.0 / fan_in);
        for (size_t i = 0; i < n; i++) host[i] = (float)(sd * hpcti_rng_normal(&rng));
    } else {
        double lim = sqrt(6.0 / (fan_in + fan_out));
        for (size_t i = 0; i < n; i++)
            host[i] = (float)(lim * (2.0 * hpcti_rng_uniform(&rng) - 1.0));
    }
    hpct_status_t s = m->ctx->ops->to_device(m->ctx, d->w, host, n * sizeof *host);
    free(host);
    return s;
}

static float *alloc_floats(hpct_model_t m, size_t n)
{
    return m->ctx->ops->alloc(m->ctx, n * sizeof(float));
}

/* Lay out W and b of every layer with parameters in the flat buffers and register them by
 * name ("dense<l>.weight", "conv<l>.bias", l counting every layer). */
static hpct_status_t place_params(hpct_model_t m)
{
    hpct_status_t s = hpct_params_create(m->ctx, &m->params);
    if (s) return s;
    m->params->model = m;
    size_t off = 0;
    for (int l = 0; l < m->num; l++) {
        struct hpcti_layer *d = &m->layers[l];
        if (!d->nw) continue;
        const char *kind = d->kind == HPCTI_LAYER_CONV ? "conv" : "dense";
        d->w = m->flat_params + off, d->dw = m->flat_grads + off;
        d->b = d->w + d->nw, d->db = d->dw + d->nw;
        off += d->nw + d->nb;
        char name[64];
        snprintf(name, sizeof name, "%s%d.weight", kind, l);
        if ((s = hpct_params_register(m->params, name, d->w, d->dw, d->nw))) return s;
        snprintf(name, sizeof name, "%s%d.bias", kind, l);
        if ((s = hpct_params_register(m->params, name, d->b, d->db, d->nb))) return s;
    }
    return HPCT_SUCCESS;
}

/* Elements of a conv layer's column matrix for samples samples; 0 on overflow. */
static size_t col_elements(const struct hpcti_layer *d, int samples)
{
    size_t n;
    if (__builtin_mul_overflow(hpcti_geom_col_rows(&d->g), hpcti_geom_out_size(&d->g), &n) ||
        __builtin_mul_overflow(n, (size_t)samples, &n) || n > SIZE_MAX / sizeof(float))
        return 0;
    return n;
}

/* A layer's activations (and column matrix) for max_batch samples; reshape has none. */
static hpct_status_t alloc_layer(hpct_model_t m, struct hpcti_layer *d, int max_batch, size_t *dcol)
{
    if (d->kind == HPCTI_LAYER_RESHAPE) return HPCT_SUCCESS;
    size_t n = (size_t)max_batch * d->out;
    d->z = alloc_floats(m, n);
    d->y = d->act == HPCT_ACT_IDENTITY ? d->z : alloc_floats(m, n);
    if (!d->z || !d->y) return HPCT_ERR_NO_MEMORY;
    if (d->kind != HPCTI_LAYER_CONV) return HPCT_SUCCESS;
    int samples = hpcti_conv_col_samples(m, max_batch);
    size_t cols = col_elements(d, samples);
    if (!cols)
        return hpcti_error(m->ctx, HPCT_ERR_INVALID_ARG,
                           "hpct_model_build: the column matrix of convolution layer %d for %d "
                           "samples is too large",
                           (int)(d - m->layers), samples);
    *dcol = cols > *dcol ? cols : *dcol;
    return (d->col = alloc_floats(m, cols)) ? HPCT_SUCCESS : HPCT_ERR_NO_MEMORY;
}

static hpct_status_t alloc_activations(hpct_model_t m, int max_batch)
{
    int widest = m->inputs;
    size_t dcol = 0;
    for (int l = 0; l < m->num; l++) {
        struct hpcti_layer *d = &m->layers[l];
        hpct_status_t s = alloc_layer(m, d, max_batch, &dcol);
        if (s) return s;
        widest = d->out > widest ? d->out : widest;
    }
    if (dcol && !(m->dcol = alloc_floats(m, dcol))) return HPCT_ERR_NO_MEMORY;
    int outputs = m->layers[m->num - 1].out;
    for (int i = 0; i < 2; i++)
        if (!(m->grad_a[i] = alloc_floats(m, (size_t)max_batch * widest)))
            return HPCT_ERR_NO_MEMORY;
    if (!tensors_on_host(m->ctx)) {
        m->x_dev = alloc_floats(m, (size_t)max_batch * m->inputs);
        m->targets_dev = alloc_floats(m, (size_t)max_batch * outputs);
        m->labels_host = malloc((size_t)max_batch * sizeof *m->labels_host);
        if (!m->x_dev || !m->targets_dev || !m->labels_host) return HPCT_ERR_NO_MEMORY;
    }
    return HPCT_SUCCESS;
}

hpct_status_t hpct_model_build(hpct_model_t m, int max_batch)
{
    if (!m) return HPCT_ERR_INVALID_ARG;
    hpct_ctx_t ctx = m->ctx;
    hpcti_clear_error(ctx);
    if (m->max_batch || m->num_params)
        return hpcti_error(ctx, HPCT_ERR_STATE, "hpct_model_build: %s",
                           m->max_batch
                               ? "already built"
                               : "an earlier build failed; destroy the model and start again");
    if (m->num == 0)
        return hpcti_error(ctx, HPCT_ERR_STATE, "hpct_model_build: the model has no layers");
    if (max_batch <= 0)
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                           "hpct_model_build: max_batch is %d, must be > 0", max_batch);
    for (int l = 0; l < m->num; l++) {
        m->num_params += m->layers[l].nw + m->layers[l].nb;
        m->param_layers += m->layers[l].nw > 0;
    }
    if (!m->param_layers)
        return hpcti_error(ctx, HPCT_ERR_STATE,
                           "hpct_model_build: the model has no layer with parameters (dense or "
                           "convolution)");
    m->flat_params = alloc_floats(m, m->num_params);
    m->flat_grads = alloc_floats(m, m->num_params);
    if (!m->flat_params || !m->flat_grads) return HPCT_ERR_NO_MEMORY; /* freed by destroy */
    hpct_status_t s = place_params(m);
    if (!s) s = alloc_activations(m, max_batch);
    for (int l = 0; l < m->num && !s; l++)
        if (m->layers[l].nw) s = init_weights(m, l);
    if (s) return s;
    m->max_batch = max_batch;
    hpcti_log(ctx, HPCT_LOG_INFO, "model built: %d layers, %zu parameters, max batch %d", m->num,
              m->num_params, max_batch);
    return HPCT_SUCCESS;
}

hpct_status_t hpct_model_params(hpct_model_t m, hpct_params_t *params)
{
    if (!m) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(m->ctx);
    if (!params) return hpcti_error(m->ctx, HPCT_ERR_INVALID_ARG, "hpct_model_params: out is NULL");
    if (!m->max_batch)
        return hpcti_error(m->ctx, HPCT_ERR_STATE, "hpct_model_params: build the model first");
    *params = m->params;
    return HPCT_SUCCESS;
}

hpct_status_t hpct_model_shape(hpct_model_t m, int *inputs, int *outputs)
{
    if (!m) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(m->ctx);
    if (inputs) *inputs = m->inputs;
    if (outputs) *outputs = m->num ? m->layers[m->num - 1].out : 0;
    return HPCT_SUCCESS;
}

int hpcti_model_layered(hpct_model_t m)
{
    for (int l = 0; m && l < m->num; l++)
        if (m->layers[l].kind != HPCTI_LAYER_DENSE) return 1;
    return 0;
}

hpct_loss_t hpcti_model_loss(hpct_model_t m)
{
    return m->loss;
}

hpct_status_t hpct_model_describe(hpct_model_t m, char *buf, size_t len)
{
    static const char *acts[] = {"identity", "relu", "tanh", "gelu"};
    if (!m) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(m->ctx);
    if (!buf || len == 0)
        return hpcti_error(m->ctx, HPCT_ERR_INVALID_ARG, "hpct_model_describe: empty buffer");
    int dense_only = !hpcti_model_layered(m); /* the description before other layers */
    size_t used = (size_t)snprintf(buf, len, dense_only ? "dense %d" : "%d", m->inputs);
    for (int l = 0; l < m->num && used < len; l++) {
        if (dense_only)
            used += (size_t)snprintf(buf + used, len - used, "-%d(%s)", m->layers[l].out,
                                     acts[m->layers[l].act]);
        else
            hpcti_layer_describe(&m->layers[l], buf, len, &used);
    }
    if (used < len)
        used += (size_t)snprintf(buf + used, len - used, " %s",
                                 m->loss == HPCT_LOSS_MSE ? "mse" : "softmax_ce");
    if (used >= len)
        return hpcti_error(m->ctx, HPCT_ERR_INVALID_ARG,
                           "hpct_model_describe: %zu bytes are too few for the description", len);
    return HPCT_SUCCESS;
}

/* Shared argument checks of the batch calls. */
static hpct_status_t check_batch(hpct_model_t m, const char *fn, const float *x, int batch)
{
    if (!m->max_batch) return hpcti_error(m->ctx, HPCT_ERR_STATE, "%s: build the model first", fn);
    if (!x) return hpcti_error(m->ctx, HPCT_ERR_INVALID_ARG, "%s: inputs are NULL", fn);
    if (batch <= 0 || batch > m->max_batch)
        return hpcti_error(m->ctx, HPCT_ERR_INVALID_ARG,
                           "%s: batch is %d, must be in [1, %d] (the max_batch given to build)", fn,
                           batch, m->max_batch);
    return HPCT_SUCCESS;
}

/* Class labels must index the output layer. */
static hpct_status_t check_labels(hpct_model_t m, const char *fn, const int32_t *labels, size_t n,
                                  size_t first)
{
    int classes = m->layers[m->num - 1].out;
    for (size_t i = 0; i < n; i++)
        if (labels[i] < 0 || labels[i] >= classes)
            return hpcti_error(m->ctx, HPCT_ERR_INVALID_ARG,
                               "%s: label %d of sample %zu is outside [0, %d)", fn, (int)labels[i],
                               first + i, classes);
    return HPCT_SUCCESS;
}

int hpcti_on_device(hpct_model_t m, const void *p)
{
    return !tensors_on_host(m->ctx) && m->ctx->ops->is_device(m->ctx, p);
}

/* check_labels for n labels in device memory (n <= max_batch), copied into labels_host. */
static hpct_status_t check_device_labels(hpct_model_t m, const char *fn, const int32_t *labels,
                                         size_t n, size_t first)
{
    hpct_status_t s = m->ctx->ops->to_host(m->ctx, m->labels_host, labels, n * sizeof *labels);
    return s ? s : check_labels(m, fn, m->labels_host, n, first);
}

/* Input pointer the backend can read into *xd: the caller's on the host (cpu) or the device
 * (cuda), else a staged copy. */
static hpct_status_t stage_inputs(hpct_model_t m, const float *x, int batch, const float **xd)
{
    *xd = x;
    if (tensors_on_host(m->ctx) || hpcti_on_device(m, x)) return HPCT_SUCCESS;
    *xd = m->x_dev;
    return m->ctx->ops->to_device(m->ctx, m->x_dev, x, sizeof(float) * (size_t)batch * m->inputs);
}

size_t hpcti_target_bytes(hpct_model_t m, int batch)
{
    size_t per = m->loss == HPCT_LOSS_MSE ? sizeof(float) * (size_t)m->layers[m->num - 1].out
                                          : sizeof(int32_t);
    return per * (size_t)batch;
}

static hpct_status_t stage_targets(hpct_model_t m, const void *t, int batch, const void **td)
{
    *td = t;
    if (tensors_on_host(m->ctx) || hpcti_on_device(m, t)) return HPCT_SUCCESS;
    *td = m->targets_dev;
    return m->ctx->ops->to_device(m->ctx, m->targets_dev, t, hpcti_target_bytes(m, batch));
}

/* The timeline span of layer l's forward or backward pass, begun at t0 (0: no timeline). */
static void layer_span(hpct_model_t m, const char *pass, int l, double t0)
{
    if (t0 <= 0) return;
    char name[32];
    snprintf(name, sizeof name, "%s %d", pass, l);
    hpcti_tl_span(m->ctx, 0, name, "compute", t0, hpcti_now(), "\"layer\":%d", l);
}

hpct_status_t hpcti_forward(hpct_model_t m, const float *x, int batch, const float **y)
{
    const struct hpcti_ops *ops = m->ctx->ops;
    const float *a = x;
    hpct_status_t s = HPCT_SUCCESS;
    for (int l = 0; l < m->num && !s; l++) {
        struct hpcti_layer *d = &m->layers[l];
        d->x = a;
        if (d->kind == HPCTI_LAYER_RESHAPE) continue;
        double t0 = hpcti_tl_now(m->ctx);
        if (d->kind == HPCTI_LAYER_DENSE) {
            s = ops->gemm(m->ctx, 0, 1, batch, d->out, d->in, 1.0f, a, d->w, 0.0f, d->z);
            if (!s) s = ops->bias_act(m->ctx, d->act, d->z, d->b, d->y, batch, d->out);
        } else {
            s = hpcti_spatial_forward(m, d, a, batch);
        }
        layer_span(m, "forward", l, t0);
        a = d->y;
    }
    *y = a;
    return s;
}

/* Staged inputs, then forward: *y = the last layer's output on the device. */
static hpct_status_t stage_forward(hpct_model_t m, const float *x, int batch, const float **xd,
                                   const float **y)
{
    hpct_status_t s = stage_inputs(m, x, batch, xd);
    return s ? s : hpcti_forward(m, *xd, batch, y);
}

double hpcti_mean_loss(hpct_model_t m, double sum, int batch)
{
    if (m->loss == HPCT_LOSS_MSE) return sum / ((double)batch * m->layers[m->num - 1].out);
    return sum / batch;
}

hpct_status_t hpcti_batch_loss(hpct_model_t m, const float *out, const void *t, int batch,
                               float *dout, double *loss)
{
    int cols = m->layers[m->num - 1].out;
    double sum = NAN;
    hpct_status_t s;
    if (m->loss == HPCT_LOSS_MSE) {
        size_t n = (size_t)batch * cols;
        s = m->ctx->ops->mse(m->ctx, out, t, dout, n, 1.0f / (float)n, &sum);
    } else {
        s = m->ctx->ops->softmax_xent(m->ctx, out, t, dout, batch, cols, 1.0f / (float)batch, &sum);
    }
    *loss = hpcti_mean_loss(m, sum, batch);
    return s;
}

/* A layer's parameter gradients from dz (d loss / d z [batch, out]): dense dW (+)= dz^T x,
 * db (+)= column sums of dz; conv dW in layers.c (its db came with dz); none for pooling and
 * upsampling. */
static hpct_status_t param_grads(hpct_model_t m, struct hpcti_layer *d, const float *dz, int batch,
                                 int accumulate)
{
    const struct hpcti_ops *ops = m->ctx->ops;
    if (d->kind == HPCTI_LAYER_CONV) return hpcti_conv_weight_grad(m, d, dz, batch, accumulate);
    if (d->kind != HPCTI_LAYER_DENSE) return HPCT_SUCCESS;
    hpct_status_t s = ops->gemm(m->ctx, 1, 0, d->out, d->in, batch, 1.0f, dz, d->x,
                                accumulate ? 1.0f : 0.0f, d->dw); /* dW [out, in] */
    return s ? s : ops->bias_grad(m->ctx, dz, d->db, batch, d->out, accumulate);
}

/* dx [batch, in] = d loss / d input of a layer from dz: dense dz W; the others in layers.c. */
static hpct_status_t input_grad(hpct_model_t m, struct hpcti_layer *d, const float *dz, float *dx,
                                int batch)
{
    if (d->kind != HPCTI_LAYER_DENSE) return hpcti_spatial_input_grad(m, d, dz, dx, batch);
    return m->ctx->ops->gemm(m->ctx, 0, 0, batch, d->in, d->out, 1.0f, dz, d->w, 0.0f, dx);
}

/* The first layer that computes (not a reshape): below it no layer needs d loss / d input. */
static int first_computing(hpct_model_t m)
{
    int l = 0;
    while (l < m->num - 1 && m->layers[l].kind == HPCTI_LAYER_RESHAPE) l++;
    return l;
}

hpct_status_t hpcti_backward(hpct_model_t m, int batch, int accumulate)
{
    int cur = 0, pl = m->param_layers, first = first_computing(m);
    hpct_status_t s = HPCT_SUCCESS;
    for (int l = m->num - 1; l >= first && !s; l--) {
        struct hpcti_layer *d = &m->layers[l];
        if (d->kind == HPCTI_LAYER_RESHAPE) continue; /* same values, same gradient */
        double t0 = hpcti_tl_now(m->ctx);
        float *dz = m->grad_a[cur], *dx = l > first ? m->grad_a[1 - cur] : NULL;
        if (d->kind == HPCTI_LAYER_CONV) /* dz and the bias gradient, fused */
            s = hpcti_conv_dz_bias_grad(m, d, dz, batch, accumulate);
        else if (d->act != HPCT_ACT_IDENTITY)
            s = m->ctx->ops->act_backward(m->ctx, d->act, d->z, d->y, dz, dz,
                                          (size_t)batch * d->out);
        if (!s) s = param_grads(m, d, dz, batch, accumulate);
        if (!s && d->nw && m->grad_ready && !m->hook_status) /* dW, db contiguous: average */
            m->hook_status =
                m->grad_ready(m->ctx, --pl, m->param_layers, d->dw, d->nw + d->nb, m->num_params);
        if (!s && dx) s = input_grad(m, d, dz, dx, batch);
        layer_span(m, "backward", l, t0);
        cur = 1 - cur;
    }
    return s;
}

hpct_status_t hpct_model_forward(hpct_model_t m, const float *x, int batch, float *out)
{
    if (!m) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(m->ctx);
    hpct_status_t s = check_batch(m, "hpct_model_forward", x, batch);
    if (s) return s;
    if (!out) return hpcti_error(m->ctx, HPCT_ERR_INVALID_ARG, "hpct_model_forward: out is NULL");
    const float *xd, *y;
    s = stage_forward(m, x, batch, &xd, &y);
    if (s) return s;
    return m->ctx->ops->to_host(m->ctx, out, y,
                                sizeof(float) * (size_t)batch * m->layers[m->num - 1].out);
}

void hpcti_model_step_begins(hpct_model_t m)
{
    if (m) m->agreed = 0;
}

void hpcti_model_set_nonfinite_loss(hpct_model_t m, hpct_status_t status)
{
    if (m) m->nonfinite_loss = status;
}

hpct_status_t hpcti_model_join_failure(hpct_model_t m, hpct_status_t s)
{
    if (!s || !m || !m->grads_agree || m->agreed) return s;
    m->agreed = 1;
    return m->grads_agree(m->ctx, s, "hpct_model_loss_grad");
}

hpct_status_t hpcti_model_refuse(hpct_model_t m, hpct_status_t s, const char *fn)
{
    if (!s || !m || !m->grad_ready || !m->grads_agree) return s;
    m->agreed = 1;
    return m->grads_agree(m->ctx, s, fn);
}

hpct_status_t hpcti_check_inputs(hpct_model_t m, const char *fn, const float *x,
                                 const void *targets, int batch)
{
    hpct_status_t s = check_batch(m, fn, x, batch);
    if (s) return s;
    if (!targets) return hpcti_error(m->ctx, HPCT_ERR_INVALID_ARG, "%s: targets are NULL", fn);
    if (m->loss != HPCT_LOSS_SOFTMAX_CE) return HPCT_SUCCESS;
    return hpcti_on_device(m, targets) ? check_device_labels(m, fn, targets, (size_t)batch, 0)
                                       : check_labels(m, fn, targets, (size_t)batch, 0);
}

/* Forward and loss of one batch: *l, *xd (staged inputs); a status of this rank alone. */
static hpct_status_t forward_loss(hpct_model_t m, const char *fn, const float *x,
                                  const void *targets, int batch, const float **xd, double *l)
{
    hpct_status_t s = hpcti_check_inputs(m, fn, x, targets, batch);
    if (s) return s;
    const float *y;
    const void *td;
    s = stage_forward(m, x, batch, xd, &y);
    if (!s) s = stage_targets(m, targets, batch, &td);
    if (!s) s = hpcti_batch_loss(m, y, td, batch, m->grad_a[0], l);
    if (!s && !isfinite(*l))
        s = hpcti_error(m->ctx, m->nonfinite_loss ? m->nonfinite_loss : HPCT_ERR_NONFINITE,
                        "%s: the loss is %g; gradients were not updated", fn, *l);
    return s;
}

hpct_status_t hpct_model_loss_grad(hpct_model_t m, const float *x, const void *targets, int batch,
                                   int accumulate, float *loss)
{
    static const char fn[] = "hpct_model_loss_grad";
    if (!m) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(m->ctx);
    const float *xd = NULL;
    double l = NAN;
    hpct_status_t s = forward_loss(m, fn, x, targets, batch, &xd, &l);
    if (m->grad_ready && m->grads_agree) { /* every rank's status before the averaging */
        m->agreed = 1;
        s = m->grads_agree(m->ctx, s, fn);
    }
    if (s) return s;
    s = hpcti_backward(m, batch, accumulate);
    if (m->grad_ready) { /* finish the averaging that backward started (or end its op) */
        hpct_status_t hook = m->hook_status;
        m->hook_status = HPCT_SUCCESS;
        hpct_status_t done = m->grads_done(m->ctx, s);
        if (!s) s = hook ? hook : done;
    }
    if (!s) s = m->ctx->ops->sync(m->ctx); /* the gradients are final when this returns */
    if (s) return s;
    if (loss) *loss = (float)l;
    return HPCT_SUCCESS;
}

hpct_status_t hpct_model_evaluate(hpct_model_t m, const float *x, const void *targets, size_t n,
                                  double *loss, double *accuracy)
{
    static const char fn[] = "hpct_model_evaluate";
    if (!m) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(m->ctx);
    hpct_status_t s = check_batch(m, fn, x, 1);
    if (s) return s;
    if (!targets || n == 0)
        return hpcti_error(m->ctx, HPCT_ERR_INVALID_ARG, "%s: %s", fn,
                           targets ? "n is 0" : "targets are NULL");
    int cols = m->layers[m->num - 1].out;
    int ce = m->loss == HPCT_LOSS_SOFTMAX_CE;
    int dev_labels = ce && hpcti_on_device(m, targets); /* checked a batch at a time below */
    if (ce && !dev_labels && (s = check_labels(m, fn, targets, n, 0))) return s;
    double total = 0.0;
    long correct = 0;
    for (size_t i = 0; i < n; i += (size_t)m->max_batch) {
        int b = (int)(n - i < (size_t)m->max_batch ? n - i : (size_t)m->max_batch);
        const void *t = ce ? (const void *)((const int32_t *)targets + i)
                           : (const void *)((const float *)targets + i * (size_t)cols);
        const float *xd, *y;
        const void *td;
        double l = 0.0;
        long c = 0;
        s = dev_labels ? check_device_labels(m, fn, t, (size_t)b, i) : HPCT_SUCCESS;
        if (!s) s = stage_forward(m, x + i * (size_t)m->inputs, b, &xd, &y);
        if (!s) s = stage_targets(m, t, b, &td);
        if (!s) s = hpcti_batch_loss(m, y, td, b, m->grad_a[0], &l);
        if (!s && ce) s = m->ctx->ops->count_correct(m->ctx, y, td, b, cols, &c);
        if (s) return s;
        total += l * b;
        correct += c;
    }
    if (loss) *loss = total / (double)n;
    if (accuracy) *accuracy = ce ? (double)correct / (double)n : -1.0;
    return HPCT_SUCCESS;
}
