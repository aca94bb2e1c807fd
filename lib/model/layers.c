/* layers.c: convolution, pooling, upsampling and reshape layers of built-in models: their
 * shapes, and their forward and backward passes through the backend's ops. */
#include "layer.h"
#include "../device/ops.h"

#include <limits.h>
#include <stdio.h>

/* Features of a shape: c times its spatial sizes (as long long: callers check the range). */
static long long shape_features(const struct hpcti_shape *s)
{
    return (long long)s->c * s->size[0] * s->size[1] * s->size[2];
}

/* The layer's geometry starts from input shape in; absent dimensions are 1 wide. */
static void geom_from(struct hpcti_geom *g, int kind, const struct hpcti_shape *in)
{
    *g = (struct hpcti_geom){.kind = kind, .c_in = in->c, .c_out = in->c};
    for (int j = 0; j < 3; j++) {
        g->in[j] = g->out[j] = in->size[j];
        g->k[j] = g->s[j] = 1;
    }
}

/* The checks every conv, pool and upsample call starts with: the model not built, its
 * incoming shape *in spatial (set by hpct_model_add_reshape or an earlier layer), act and init
 * known. Clears the context's error first. */
static hpct_status_t spatial_start(hpct_model_t m, const char *fn, hpct_activation_t act,
                                   hpct_init_t init, struct hpcti_shape *in)
{
    hpcti_clear_error(m->ctx);
    *in = hpcti_model_tail(m);
    if (m->max_batch)
        return hpcti_error(m->ctx, HPCT_ERR_STATE, "%s: the model is already built", fn);
    if (in->dims == 0)
        return hpcti_error(m->ctx, HPCT_ERR_INVALID_ARG,
                           "%s: layer %d: its input is %d flat features; give it a shape "
                           "[channels, D, H, W] first (hpct_model_add_reshape)",
                           fn, m->num, in->c);
    return hpcti_check_act_init(m, fn, act, init);
}

/* Append d, its output shape from its geometry (the input's dims spatial dimensions),
 * checking its width fits an int. */
static hpct_status_t append_shaped(hpct_model_t m, const char *fn, struct hpcti_layer *d,
                                   const struct hpcti_shape *in)
{
    struct hpcti_shape out = {
        .dims = in->dims, .c = d->g.c_out, .size = {d->g.out[0], d->g.out[1], d->g.out[2]}};
    long long f = shape_features(&out);
    if (f > INT_MAX / 2)
        return hpcti_error(m->ctx, HPCT_ERR_INVALID_ARG,
                           "%s: layer %d: %lld output features per sample are too many", fn, m->num,
                           f);
    d->shape = out, d->out = (int)f;
    d->in = (int)shape_features(in);
    return hpcti_model_append(m, fn, d);
}

hpct_status_t hpct_model_add_reshape(hpct_model_t m, int channels, int dims, const int *spatial)
{
    static const char fn[] = "hpct_model_add_reshape";
    if (!m) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(m->ctx);
    if (m->max_batch)
        return hpcti_error(m->ctx, HPCT_ERR_STATE, "%s: the model is already built", fn);
    if (dims < 0 || dims > 3 || (dims && !spatial) || channels <= 0)
        return hpcti_error(m->ctx, HPCT_ERR_INVALID_ARG,
                           "%s: layer %d: channels %d and %d spatial dimensions%s: channels must "
                           "be > 0 and dimensions 0 (flat) to 3",
                           fn, m->num, channels, dims, dims && !spatial ? " without sizes" : "");
    struct hpcti_shape in = hpcti_model_tail(m),
                       out = {.dims = dims, .c = channels, .size = {1, 1, 1}};
    for (int j = 0; j < dims; j++) {
        if (spatial[j] <= 0)
            return hpcti_error(m->ctx, HPCT_ERR_INVALID_ARG,
                               "%s: layer %d: spatial size %d is %d, must be > 0", fn, m->num, j,
                               spatial[j]);
        out.size[3 - dims + j] = spatial[j];
    }
    long long want = shape_features(&in), got = shape_features(&out);
    if (got != want)
        return hpcti_error(m->ctx, HPCT_ERR_INVALID_ARG,
                           "%s: layer %d: the new shape holds %lld values per sample, its input "
                           "%lld",
                           fn, m->num, got, want);
    struct hpcti_layer d = {
        .kind = HPCTI_LAYER_RESHAPE, .in = (int)want, .out = (int)want, .shape = out};
    return hpcti_model_append(m, fn, &d);
}

/* One dimension of a convolution: output size and leading padding ("same": ceil(in / s)
 * outputs, the padding split with the odd one after; "valid": windows inside the input). */
static int conv_dim(struct hpcti_geom *g, int j, int k, int s, hpct_padding_t padding)
{
    int in = g->in[j];
    g->k[j] = k, g->s[j] = s;
    if (padding == HPCT_PAD_SAME) {
        g->out[j] = (in + s - 1) / s;
        int total = (g->out[j] - 1) * s + k - in;
        g->pad[j] = total > 0 ? total / 2 : 0;
        return 1;
    }
    g->out[j] = in >= k ? (in - k) / s + 1 : 0;
    return in >= k;
}

hpct_status_t hpct_model_add_conv(hpct_model_t m, int out_channels, int kernel, int stride,
                                  hpct_padding_t padding, hpct_activation_t act, hpct_init_t init)
{
    static const char fn[] = "hpct_model_add_conv";
    if (!m) return HPCT_ERR_INVALID_ARG;
    struct hpcti_shape in;
    hpct_status_t s = spatial_start(m, fn, act, init, &in);
    if (s) return s;
    if (out_channels <= 0 || kernel <= 0 || stride <= 0 ||
        (padding != HPCT_PAD_SAME && padding != HPCT_PAD_VALID))
        return hpcti_error(m->ctx, HPCT_ERR_INVALID_ARG,
                           "%s: layer %d: out_channels %d, kernel %d, stride %d, padding %d: "
                           "each must be > 0 and padding HPCT_PAD_SAME or HPCT_PAD_VALID",
                           fn, m->num, out_channels, kernel, stride, (int)padding);
    struct hpcti_layer d = {.kind = HPCTI_LAYER_CONV, .act = act, .init = init, .padding = padding};
    geom_from(&d.g, HPCTI_GEOM_CONV, &in);
    d.g.c_out = out_channels;
    for (int j = 3 - in.dims; j < 3; j++)
        if (!conv_dim(&d.g, j, kernel, stride, padding))
            return hpcti_error(m->ctx, HPCT_ERR_INVALID_ARG,
                               "%s: layer %d: kernel %d is wider than its input (%d) with "
                               "\"valid\" padding",
                               fn, m->num, kernel, d.g.in[j]);
    size_t rows = hpcti_geom_col_rows(&d.g);
    if (rows > INT_MAX / 2 || (long long)rows * out_channels > INT_MAX / 2)
        return hpcti_error(m->ctx, HPCT_ERR_INVALID_ARG,
                           "%s: layer %d: %zu weights per output channel are too many", fn, m->num,
                           rows);
    d.nw = rows * (size_t)out_channels, d.nb = (size_t)out_channels;
    return append_shaped(m, fn, &d, &in);
}

hpct_status_t hpct_model_add_pool(hpct_model_t m, hpct_pool_t kind, int window, int stride,
                                  hpct_activation_t act)
{
    static const char fn[] = "hpct_model_add_pool";
    if (!m) return HPCT_ERR_INVALID_ARG;
    struct hpcti_shape in;
    hpct_status_t s = spatial_start(m, fn, act, HPCT_INIT_AUTO, &in);
    if (s) return s;
    if ((kind != HPCT_POOL_MAX && kind != HPCT_POOL_AVG) || window <= 0 || stride <= 0)
        return hpcti_error(m->ctx, HPCT_ERR_INVALID_ARG,
                           "%s: layer %d: kind %d, window %d, stride %d: kind must be "
                           "HPCT_POOL_MAX or HPCT_POOL_AVG, window and stride > 0",
                           fn, m->num, (int)kind, window, stride);
    struct hpcti_layer d = {.kind = HPCTI_LAYER_POOL, .act = act};
    geom_from(&d.g, kind == HPCT_POOL_MAX ? HPCTI_GEOM_MAXPOOL : HPCTI_GEOM_AVGPOOL, &in);
    for (int j = 3 - in.dims; j < 3; j++)
        if (!conv_dim(&d.g, j, window, stride, HPCT_PAD_VALID))
            return hpcti_error(m->ctx, HPCT_ERR_INVALID_ARG,
                               "%s: layer %d: window %d is wider than its input (%d)", fn, m->num,
                               window, d.g.in[j]);
    return append_shaped(m, fn, &d, &in);
}

hpct_status_t hpct_model_add_upsample(hpct_model_t m, int factor, hpct_activation_t act)
{
    static const char fn[] = "hpct_model_add_upsample";
    if (!m) return HPCT_ERR_INVALID_ARG;
    struct hpcti_shape in;
    hpct_status_t s = spatial_start(m, fn, act, HPCT_INIT_AUTO, &in);
    if (s) return s;
    if (factor <= 0 || factor > 64)
        return hpcti_error(m->ctx, HPCT_ERR_INVALID_ARG,
                           "%s: layer %d: factor %d, must be in [1, 64]", fn, m->num, factor);
    struct hpcti_layer d = {.kind = HPCTI_LAYER_UPSAMPLE, .act = act};
    geom_from(&d.g, HPCTI_GEOM_UPSAMPLE, &in);
    for (int j = 3 - in.dims; j < 3; j++) {
        if ((long long)d.g.in[j] * factor > INT_MAX / 2)
            return hpcti_error(m->ctx, HPCT_ERR_INVALID_ARG,
                               "%s: layer %d: %d times %d is too large", fn, m->num, d.g.in[j],
                               factor);
        d.g.k[j] = d.g.s[j] = factor, d.g.out[j] = d.g.in[j] * factor;
    }
    return append_shaped(m, fn, &d, &in);
}

/* Samples per column matrix for a batch: the backend's choice, at most the batch. */
int hpcti_conv_col_samples(const struct hpct_model *m, int batch)
{
    int per = m->ctx->ops->col_samples;
    return per > 0 && per < batch ? per : batch;
}

/* Samples in the chunk that starts at sample n0, cs a chunk. */
static int chunk_size(int n0, int batch, int cs)
{
    return batch - n0 < cs ? batch - n0 : cs;
}

/* Convolution forward, chunk by chunk: col = im2col(x of the chunk); z_n [c_out, P] = W col_n;
 * then the chunk's bias and activation while its z is in cache. */
static hpct_status_t conv_forward(hpct_model_t m, struct hpcti_layer *d, const float *x, int batch)
{
    const struct hpcti_ops *ops = m->ctx->ops;
    int P = (int)hpcti_geom_out_size(&d->g), rows = (int)hpcti_geom_col_rows(&d->g);
    int cs = hpcti_conv_col_samples(m, batch);
    hpct_status_t s = HPCT_SUCCESS;
    for (int n0 = 0; n0 < batch && !s; n0 += cs) {
        int nb = chunk_size(n0, batch, cs);
        size_t at = (size_t)n0 * d->out;
        s = ops->im2col(m->ctx, &d->g, x + (size_t)n0 * d->in, d->col, nb);
        for (int j = 0; j < nb && !s; j++)
            s = ops->gemm(m->ctx, 0, 0, d->g.c_out, P, rows, 1.0f, d->w,
                          d->col + (size_t)j * rows * P, 0.0f, d->z + at + (size_t)j * d->out);
        if (!s)
            s = ops->channel_bias_act(m->ctx, d->act, d->z + at, d->b, d->y + at, nb, d->g.c_out,
                                      (size_t)P);
    }
    return s;
}

hpct_status_t hpcti_spatial_forward(hpct_model_t m, struct hpcti_layer *d, const float *x,
                                    int batch)
{
    if (d->kind == HPCTI_LAYER_CONV) return conv_forward(m, d, x, batch);
    const struct hpcti_ops *ops = m->ctx->ops;
    hpct_status_t s = ops->window_fwd(m->ctx, &d->g, x, d->z, batch);
    if (!s && d->act != HPCT_ACT_IDENTITY) /* y = act(z), no bias */
        s = ops->channel_bias_act(m->ctx, d->act, d->z, NULL, d->y, batch, 1, (size_t)d->out);
    return s;
}

/* dz = dy act'(z) in place and db (=, or += when accumulate) its channel sums, in one pass
 * where the backend fuses them. */
hpct_status_t hpcti_conv_dz_bias_grad(hpct_model_t m, struct hpcti_layer *d, float *dz, int batch,
                                      int accumulate)
{
    const struct hpcti_ops *ops = m->ctx->ops;
    size_t P = hpcti_geom_out_size(&d->g);
    if (ops->channel_act_bias_grad && d->act != HPCT_ACT_IDENTITY)
        return ops->channel_act_bias_grad(m->ctx, d->act, d->z, d->y, dz, d->db, batch, d->g.c_out,
                                          P, accumulate);
    hpct_status_t s = HPCT_SUCCESS;
    if (d->act != HPCT_ACT_IDENTITY)
        s = ops->act_backward(m->ctx, d->act, d->z, d->y, dz, dz, (size_t)batch * d->out);
    return s ? s : ops->channel_bias_grad(m->ctx, dz, d->db, batch, d->g.c_out, P, accumulate);
}

/* dW (=, or += when accumulate) the sum over samples n of dz_n [c_out, P] col_n^T, in sample
 * order. The column matrix is built again chunk by chunk unless it holds the whole batch. */
hpct_status_t hpcti_conv_weight_grad(hpct_model_t m, struct hpcti_layer *d, const float *dz,
                                     int batch, int accumulate)
{
    const struct hpcti_ops *ops = m->ctx->ops;
    int P = (int)hpcti_geom_out_size(&d->g), rows = (int)hpcti_geom_col_rows(&d->g);
    int cs = hpcti_conv_col_samples(m, batch);
    hpct_status_t s = HPCT_SUCCESS;
    for (int n0 = 0; n0 < batch && !s; n0 += cs) {
        int nb = chunk_size(n0, batch, cs);
        if (cs < batch) s = ops->im2col(m->ctx, &d->g, d->x + (size_t)n0 * d->in, d->col, nb);
        for (int j = 0, n = n0; j < nb && !s; j++, n++)
            s = ops->gemm(m->ctx, 0, 1, d->g.c_out, rows, P, 1.0f, dz + (size_t)n * d->out,
                          d->col + (size_t)j * rows * P, accumulate || n ? 1.0f : 0.0f, d->dw);
    }
    return s;
}

/* Convolution: dcol_n = W^T dz_n, dx = col2im(dcol), chunk by chunk; pooling and upsampling:
 * their adjoint. */
hpct_status_t hpcti_spatial_input_grad(hpct_model_t m, struct hpcti_layer *d, const float *dz,
                                       float *dx, int batch)
{
    const struct hpcti_ops *ops = m->ctx->ops;
    if (d->kind != HPCTI_LAYER_CONV) return ops->window_bwd(m->ctx, &d->g, d->x, dz, dx, batch);
    int P = (int)hpcti_geom_out_size(&d->g), rows = (int)hpcti_geom_col_rows(&d->g);
    int cs = hpcti_conv_col_samples(m, batch);
    hpct_status_t s = HPCT_SUCCESS;
    for (int n0 = 0; n0 < batch && !s; n0 += cs) {
        int nb = chunk_size(n0, batch, cs);
        for (int j = 0, n = n0; j < nb && !s; j++, n++)
            s = ops->gemm(m->ctx, 1, 0, rows, P, d->g.c_out, 1.0f, d->w, dz + (size_t)n * d->out,
                          0.0f, m->dcol + (size_t)j * rows * P);
        if (!s) s = ops->col2im(m->ctx, &d->g, m->dcol, dx + (size_t)n0 * d->in, nb);
    }
    return s;
}

/* "CxDxHxW" of a shape's sizes. */
static size_t put_shape(char *buf, size_t len, const struct hpcti_shape *s)
{
    size_t used = (size_t)snprintf(buf, len, "%d", s->c);
    for (int j = 3 - s->dims; j < 3 && used < len; j++)
        used += (size_t)snprintf(buf + used, len - used, "x%d", s->size[j]);
    return used;
}

void hpcti_layer_describe(const struct hpcti_layer *d, char *buf, size_t len, size_t *used)
{
    static const char *acts[] = {"identity", "relu", "tanh", "gelu"};
    size_t u = *used;
    if (u >= len) return;
    switch (d->kind) {
    case HPCTI_LAYER_DENSE:
        *used = u + (size_t)snprintf(buf + u, len - u, "-dense%d(%s)", d->out, acts[d->act]);
        return;
    case HPCTI_LAYER_CONV:
        u += (size_t)snprintf(buf + u, len - u, "-conv%dd/k%ds%d%s", d->shape.dims, d->g.k[2],
                              d->g.s[2], d->padding == HPCT_PAD_SAME ? "same" : "valid");
        break;
    case HPCTI_LAYER_POOL:
        u +=
            (size_t)snprintf(buf + u, len - u, "-%spool%ds%d",
                             d->g.kind == HPCTI_GEOM_MAXPOOL ? "max" : "avg", d->g.k[2], d->g.s[2]);
        break;
    case HPCTI_LAYER_UPSAMPLE:
        u += (size_t)snprintf(buf + u, len - u, "-upsample%d", d->g.s[2]);
        break;
    case HPCTI_LAYER_RESHAPE: u += (size_t)snprintf(buf + u, len - u, "-reshape"); break;
    }
    if (u < len) {
        u += (size_t)snprintf(buf + u, len - u, "[");
        if (u < len) u += put_shape(buf + u, len - u, &d->shape);
    }
    if (u < len && d->kind != HPCTI_LAYER_RESHAPE)
        u += (size_t)snprintf(buf + u, len - u, "](%s)", acts[d->act]);
    else if (u < len)
        u += (size_t)snprintf(buf + u, len - u, "]");
    *used = u;
}
