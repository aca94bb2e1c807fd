/* conv.c (device double): host twins of kernels/conv.cu's launch wrappers. Each is queued on
 * the default stream and runs conv_math.h's per-element formulas, as the kernels do, over the
 * writable views of its device pointers; a pointer that is not device memory of the extent the
 * kernel touches is reported as an illegal address. */
#include "double.h"
#include "../../kernels/conv_math.h"
#include "../../kernels/kernels.h"

#define F sizeof(float)

struct conv_arg {
    struct hpcti_geom g;
    int act, batch, channels, accumulate;
    size_t n, spatial;
    const float *a, *b; /* inputs */
    float *out, *out2;  /* outputs (out2: y of channel_bias_act) */
};

/* Elements of a layer's input [batch, c_in, in] and output [batch, c_out, out]. */
static size_t in_elems(const struct conv_arg *k)
{
    return (size_t)k->batch * (size_t)k->g.c_in * hpcti_geom_in_size(&k->g);
}

static size_t out_elems(const struct conv_arg *k)
{
    return (size_t)k->batch * (size_t)k->g.c_out * hpcti_geom_out_size(&k->g);
}

static size_t col_elems(const struct conv_arg *k)
{
    return (size_t)k->batch * hpcti_geom_col_rows(&k->g) * hpcti_geom_out_size(&k->g);
}

static void im2col_task(void *p)
{
    struct conv_arg *k = p;
    const float *x = dd_dev(k->a, F * in_elems(k), "im2col_kernel x");
    float *col = dd_dev(k->out, F * k->n, "im2col_kernel col");
    if (x && col)
        for (size_t e = 0; e < k->n; e++) col[e] = hpcti_im2col_at(&k->g, x, e);
}

static void col2im_task(void *p)
{
    struct conv_arg *k = p;
    const float *dcol = dd_dev(k->a, F * col_elems(k), "col2im_kernel dcol");
    float *dx = dd_dev(k->out, F * k->n, "col2im_kernel dx");
    if (dcol && dx)
        for (size_t e = 0; e < k->n; e++) dx[e] = hpcti_col2im_at(&k->g, dcol, e);
}

static void window_fwd_task(void *p)
{
    struct conv_arg *k = p;
    const float *x = dd_dev(k->a, F * in_elems(k), "window_fwd_kernel x");
    float *y = dd_dev(k->out, F * k->n, "window_fwd_kernel y");
    if (x && y)
        for (size_t e = 0; e < k->n; e++) y[e] = hpcti_window_fwd_at(&k->g, x, e);
}

static void window_bwd_task(void *p)
{
    struct conv_arg *k = p;
    const float *x = dd_dev(k->a, F * k->n, "window_bwd_kernel x");
    const float *dy = dd_dev(k->b, F * out_elems(k), "window_bwd_kernel dy");
    float *dx = dd_dev(k->out, F * k->n, "window_bwd_kernel dx");
    if (x && dy && dx)
        for (size_t e = 0; e < k->n; e++) dx[e] = hpcti_window_bwd_at(&k->g, x, dy, e);
}

static void channel_bias_act_task(void *p)
{
    struct conv_arg *k = p;
    float *z = dd_dev(k->out, F * k->n, "channel_bias_act_kernel z");
    float *y = dd_dev(k->out2, F * k->n, "channel_bias_act_kernel y");
    const float *bias =
        k->a ? dd_dev(k->a, F * (size_t)k->channels, "channel_bias_act bias") : NULL;
    if (!z || !y || (k->a && !bias)) return;
    for (size_t e = 0; e < k->n; e++) {
        if (bias) z[e] += bias[hpcti_channel_of(e, k->channels, k->spatial)];
        y[e] = hpcti_act_fwd(k->act, z[e]);
    }
}

static void channel_bias_grad_task(void *p)
{
    struct conv_arg *k = p;
    size_t n = (size_t)k->batch * (size_t)k->channels * k->spatial;
    const float *dz = n ? dd_dev(k->a, F * n, "channel_bias_grad_kernel dz") : NULL;
    float *db = dd_dev(k->out, F * (size_t)k->channels, "channel_bias_grad_kernel db");
    if ((n && !dz) || !db) return;
    for (int c = 0; c < k->channels; c++) {
        float sum = n ? hpcti_channel_grad(dz, c, k->batch, k->channels, k->spatial) : 0.0f;
        db[c] = k->accumulate ? db[c] + sum : sum;
    }
}

/* Queue task over n elements (none when n is 0), as a launch of kernel. */
static int launch(void *stream, const char *kernel, dd_fn task, struct conv_arg *k)
{
    if (k->n == 0) return 0;
    dd_enqueue((cudaStream_t)stream, kernel, task, k, sizeof *k);
    return (int)dd_sticky(); /* as cudaGetLastError after a launch */
}

int hpcti_k_im2col(void *stream, const struct hpcti_geom *g, const float *x, float *col, int batch)
{
    struct conv_arg k = {.g = *g, .batch = batch > 0 ? batch : 0, .a = x, .out = col};
    k.n = col_elems(&k);
    return launch(stream, "im2col_kernel", im2col_task, &k);
}

int hpcti_k_col2im(void *stream, const struct hpcti_geom *g, const float *dcol, float *dx,
                   int batch)
{
    struct conv_arg k = {.g = *g, .batch = batch > 0 ? batch : 0, .a = dcol, .out = dx};
    k.n = in_elems(&k);
    return launch(stream, "col2im_kernel", col2im_task, &k);
}

int hpcti_k_window_fwd(void *stream, const struct hpcti_geom *g, const float *x, float *y,
                       int batch)
{
    struct conv_arg k = {.g = *g, .batch = batch > 0 ? batch : 0, .a = x, .out = y};
    k.n = out_elems(&k);
    return launch(stream, "window_fwd_kernel", window_fwd_task, &k);
}

int hpcti_k_window_bwd(void *stream, const struct hpcti_geom *g, const float *x, const float *dy,
                       float *dx, int batch)
{
    struct conv_arg k = {.g = *g, .batch = batch > 0 ? batch : 0, .a = x, .b = dy, .out = dx};
    k.n = in_elems(&k);
    return launch(stream, "window_bwd_kernel", window_bwd_task, &k);
}

int hpcti_k_channel_bias_act(void *stream, int act, float *z, const float *bias, float *y,
                             int batch, int channels, size_t spatial)
{
    struct conv_arg k = {
        .act = act, .channels = channels, .spatial = spatial, .a = bias, .out = z, .out2 = y};
    k.n = (size_t)(batch > 0 ? batch : 0) * (size_t)(channels > 0 ? channels : 0) * spatial;
    return launch(stream, "channel_bias_act_kernel", channel_bias_act_task, &k);
}

int hpcti_k_channel_bias_grad(void *stream, const float *dz, float *db, int batch, int channels,
                              size_t spatial, int accumulate)
{
    struct conv_arg k = {.batch = batch > 0 ? batch : 0,
                         .channels = channels,
                         .spatial = spatial,
                         .accumulate = accumulate,
                         .a = dz,
                         .out = db};
    k.n = channels > 0 ? (size_t)channels : 0;
    return launch(stream, "channel_bias_grad_kernel", channel_bias_grad_task, &k);
}
