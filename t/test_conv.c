/* test_conv.c: convolution, pooling, upsampling and reshape layers against an independent
 * float64 reference written with direct loops (no column matrices): outputs, and the fp32
 * gradients of every parameter against centred differences, in 1, 2 and 3 dimensions with
 * stride 1 and 2, "same" and "valid" padding and edge sizes; then the argument checks. */
#include "config.h"
#include "hpctrain.h"
#include "lib/tap.h"
#include "../lib/core/core.h"
#include "../lib/device/ops.h"
#include "../kernels/conv_math.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define B 3 /* batch */

enum { R_CONV, R_MAXPOOL, R_AVGPOOL, R_UP, R_DENSE };

/* A layer of a case: conv (ch out channels, window k, stride s, same or valid), pooling
 * (window k, stride s), upsampling (factor k) or dense (ch outputs); then act. */
struct spec {
    int kind, ch, k, s, same, act;
};

/* A shape: channels, D H W (1 along absent dimensions). */
struct rshape {
    int c, n[3];
};

struct tcase {
    const char *name;
    int dims, c0, size[3]; /* input: c0 channels, size of the dims spatial dimensions */
    int nl;
    struct spec l[4];
    int loss;
};

static const struct tcase cases[] = {
    {"1-d conv same s1 then valid s2",
     1,
     2,
     {7},
     3,
     {{R_CONV, 3, 3, 1, 1, HPCT_ACT_TANH},
      {R_CONV, 2, 3, 2, 0, HPCT_ACT_RELU},
      {R_DENSE, 3, 0, 0, 0, HPCT_ACT_IDENTITY}},
     HPCT_LOSS_MSE},
    {"2-d conv same, max pool 2/2",
     2,
     1,
     {5, 6},
     3,
     {{R_CONV, 3, 3, 1, 1, HPCT_ACT_GELU},
      {R_MAXPOOL, 0, 2, 2, 0, HPCT_ACT_IDENTITY},
      {R_DENSE, 3, 0, 0, 0, HPCT_ACT_IDENTITY}},
     HPCT_LOSS_MSE},
    {"2-d odd sizes, conv same s2, avg pool 2/1",
     2,
     2,
     {7, 5},
     3,
     {{R_CONV, 2, 3, 2, 1, HPCT_ACT_TANH},
      {R_AVGPOOL, 0, 2, 1, 0, HPCT_ACT_IDENTITY},
      {R_DENSE, 3, 0, 0, 0, HPCT_ACT_IDENTITY}},
     HPCT_LOSS_MSE},
    {"3-d conv same s1 then valid s2",
     3,
     1,
     {3, 4, 5},
     3,
     {{R_CONV, 2, 3, 1, 1, HPCT_ACT_TANH},
      {R_CONV, 2, 2, 2, 0, HPCT_ACT_IDENTITY},
      {R_DENSE, 3, 0, 0, 0, HPCT_ACT_IDENTITY}},
     HPCT_LOSS_MSE},
    {"2-d 1x1 input, kernel 3 same",
     2,
     3,
     {1, 1},
     2,
     {{R_CONV, 2, 3, 1, 1, HPCT_ACT_TANH}, {R_DENSE, 3, 0, 0, 0, HPCT_ACT_IDENTITY}},
     HPCT_LOSS_MSE},
    {"2-d kernel 5 wider than 2x3 input, same s2",
     2,
     1,
     {2, 3},
     2,
     {{R_CONV, 2, 5, 2, 1, HPCT_ACT_TANH}, {R_DENSE, 2, 0, 0, 0, HPCT_ACT_IDENTITY}},
     HPCT_LOSS_MSE},
    {"2-d overlapping max pool 3/2 with tanh",
     2,
     1,
     {6, 6},
     3,
     {{R_CONV, 2, 3, 1, 0, HPCT_ACT_IDENTITY},
      {R_MAXPOOL, 0, 3, 2, 0, HPCT_ACT_TANH},
      {R_DENSE, 3, 0, 0, 0, HPCT_ACT_IDENTITY}},
     HPCT_LOSS_MSE},
    {"2-d field to field: conv, upsample 2, conv",
     2,
     1,
     {3, 3},
     3,
     {{R_CONV, 2, 3, 1, 1, HPCT_ACT_TANH},
      {R_UP, 0, 2, 0, 0, HPCT_ACT_IDENTITY},
      {R_CONV, 1, 3, 1, 1, HPCT_ACT_IDENTITY}},
     HPCT_LOSS_MSE},
    {"3-d upsample 2 then avg pool 2/2",
     3,
     1,
     {2, 2, 2},
     4,
     {{R_CONV, 2, 3, 1, 1, HPCT_ACT_TANH},
      {R_UP, 0, 2, 0, 0, HPCT_ACT_IDENTITY},
      {R_AVGPOOL, 0, 2, 2, 0, HPCT_ACT_GELU},
      {R_DENSE, 2, 0, 0, 0, HPCT_ACT_IDENTITY}},
     HPCT_LOSS_MSE},
    {"1-d odd size, max pool 2/2 floors, softmax CE",
     1,
     1,
     {9},
     3,
     {{R_CONV, 2, 3, 1, 0, HPCT_ACT_TANH},
      {R_MAXPOOL, 0, 2, 2, 0, HPCT_ACT_IDENTITY},
      {R_DENSE, 3, 0, 0, 0, HPCT_ACT_IDENTITY}},
     HPCT_LOSS_SOFTMAX_CE},
};
#define NCASES ((int)(sizeof cases / sizeof *cases))

static double act_ref(int act, double z)
{
    switch (act) {
    case HPCT_ACT_RELU: return z > 0 ? z : 0;
    case HPCT_ACT_TANH: return tanh(z);
    case HPCT_ACT_GELU: return 0.5 * z * (1 + tanh(sqrt(2 / M_PI) * (z + 0.044715 * z * z * z)));
    default: return z;
    }
}

static int count(const struct rshape *s)
{
    return s->c * s->n[0] * s->n[1] * s->n[2];
}

/* Output size and leading padding of one dimension (TensorFlow's "same" convention). */
static int out_size(int in, int k, int s, int same, int *pad)
{
    *pad = 0;
    if (!same) return (in - k) / s + 1;
    int out = (in + s - 1) / s, total = (out - 1) * s + k - in;
    *pad = total > 0 ? total / 2 : 0;
    return out;
}

/* The shape after layer sp of a case of dims dimensions; kernel extents into kk. */
static struct rshape next_shape(const struct spec *sp, int dims, struct rshape in, int *pad,
                                int *kk)
{
    struct rshape o = in;
    for (int j = 0; j < 3; j++) pad[j] = 0, kk[j] = 1;
    if (sp->kind == R_DENSE) return (struct rshape){sp->ch, {1, 1, 1}};
    if (sp->kind == R_CONV) o.c = sp->ch;
    for (int j = 3 - dims; j < 3; j++) {
        kk[j] = sp->k;
        if (sp->kind == R_UP)
            o.n[j] = in.n[j] * sp->k;
        else
            o.n[j] = out_size(in.n[j], sp->k, sp->s, sp->kind == R_CONV && sp->same, &pad[j]);
    }
    return o;
}

/* x [c, D, H, W] at (ci, z, y, x), 0 outside. */
static double at(const double *x, const struct rshape *s, int ci, int z, int y, int xx)
{
    if (z < 0 || y < 0 || xx < 0 || z >= s->n[0] || y >= s->n[1] || xx >= s->n[2]) return 0;
    return x[((ci * s->n[0] + z) * s->n[1] + y) * s->n[2] + xx];
}

/* One sample through layer sp: out [count(o)] from in [count(i)]; parameters from *theta. */
static void layer_ref(const struct spec *sp, int dims, const struct rshape *i,
                      const struct rshape *o, const double *in, double *out, const double **theta)
{
    int pad[3], kk[3];
    next_shape(sp, dims, *i, pad, kk);
    const double *w = *theta;
    if (sp->kind == R_DENSE) {
        int nin = count(i);
        const double *b = w + sp->ch * nin;
        for (int q = 0; q < sp->ch; q++) {
            double s = b[q];
            for (int k = 0; k < nin; k++) s += w[q * nin + k] * in[k];
            out[q] = act_ref(sp->act, s);
        }
        *theta += sp->ch * nin + sp->ch;
        return;
    }
    int window = kk[0] * kk[1] * kk[2];
    const double *b = w + o->c * i->c * window;
    for (int co = 0; co < o->c; co++)
        for (int z = 0; z < o->n[0]; z++)
            for (int y = 0; y < o->n[1]; y++)
                for (int xx = 0; xx < o->n[2]; xx++) {
                    double acc = sp->kind == R_CONV ? b[co] : sp->kind == R_MAXPOOL ? -INFINITY : 0;
                    if (sp->kind == R_UP) {
                        acc = at(in, i, co, z / kk[0], y / kk[1], xx / kk[2]);
                    } else {
                        for (int ci = 0; ci < (sp->kind == R_CONV ? i->c : 1); ci++)
                            for (int a = 0; a < kk[0]; a++)
                                for (int bb = 0; bb < kk[1]; bb++)
                                    for (int c = 0; c < kk[2]; c++) {
                                        int zi = z * sp->s - pad[0] + a; /* z = 0 when absent */
                                        int yi = y * sp->s - pad[1] + bb;
                                        int xi = xx * sp->s - pad[2] + c;
                                        if (sp->kind == R_CONV) {
                                            acc += w[(((co * i->c + ci) * kk[0] + a) * kk[1] + bb) *
                                                         kk[2] +
                                                     c] *
                                                   at(in, i, ci, zi, yi, xi);
                                        } else {
                                            double v = at(in, i, co, zi, yi, xi);
                                            acc = sp->kind == R_MAXPOOL ? fmax(acc, v) : acc + v;
                                        }
                                    }
                        if (sp->kind == R_AVGPOOL) acc /= window;
                    }
                    out[((co * o->n[0] + z) * o->n[1] + y) * o->n[2] + xx] = act_ref(sp->act, acc);
                }
    if (sp->kind == R_CONV) *theta += o->c * i->c * window + o->c;
}

/* Float64 loss of case c with parameters theta; outputs of the last layer into last (or NULL). */
static double ref_loss(const struct tcase *c, const double *theta, const float *x, const void *t,
                       double *last)
{
    struct rshape s[5];
    s[0] = (struct rshape){c->c0, {1, 1, 1}};
    for (int j = 0; j < c->dims; j++) s[0].n[3 - c->dims + j] = c->size[j];
    int pad[3], kk[3], widest = count(&s[0]);
    for (int l = 0; l < c->nl; l++) {
        s[l + 1] = next_shape(&c->l[l], c->dims, s[l], pad, kk);
        widest = count(&s[l + 1]) > widest ? count(&s[l + 1]) : widest;
    }
    double *a = malloc(sizeof(double) * widest), *b = malloc(sizeof(double) * widest);
    int outs = count(&s[c->nl]);
    double total = 0;
    for (int n = 0; n < B; n++) {
        for (int k = 0; k < count(&s[0]); k++) a[k] = x[n * count(&s[0]) + k];
        const double *th = theta;
        for (int l = 0; l < c->nl; l++) {
            layer_ref(&c->l[l], c->dims, &s[l], &s[l + 1], a, b, &th);
            double *tmp = a;
            a = b, b = tmp;
        }
        if (last) memcpy(last + n * outs, a, sizeof(double) * outs);
        if (c->loss == HPCT_LOSS_MSE) {
            for (int o = 0; o < outs; o++) {
                double e = a[o] - ((const float *)t)[n * outs + o];
                total += e * e / (B * outs);
            }
        } else {
            double mx = a[0], sum = 0;
            for (int o = 1; o < outs; o++) mx = fmax(mx, a[o]);
            for (int o = 0; o < outs; o++) sum += exp(a[o] - mx);
            total += (log(sum) + mx - a[((const int32_t *)t)[n]]) / B;
        }
    }
    free(a);
    free(b);
    return total;
}

/* Build case c's model through the public calls. */
static hpct_status_t build_case(hpct_ctx_t ctx, const struct tcase *c, hpct_model_t *m)
{
    int in = c->c0;
    for (int j = 0; j < c->dims; j++) in *= c->size[j];
    hpct_status_t s = hpct_model_create(ctx, in, m);
    if (!s) s = hpct_model_add_reshape(*m, c->c0, c->dims, c->size);
    for (int l = 0; l < c->nl && !s; l++) {
        const struct spec *sp = &c->l[l];
        switch (sp->kind) {
        case R_CONV:
            s = hpct_model_add_conv(*m, sp->ch, sp->k, sp->s,
                                    sp->same ? HPCT_PAD_SAME : HPCT_PAD_VALID, sp->act,
                                    HPCT_INIT_XAVIER);
            break;
        case R_MAXPOOL: s = hpct_model_add_pool(*m, HPCT_POOL_MAX, sp->k, sp->s, sp->act); break;
        case R_AVGPOOL: s = hpct_model_add_pool(*m, HPCT_POOL_AVG, sp->k, sp->s, sp->act); break;
        case R_UP: s = hpct_model_add_upsample(*m, sp->k, sp->act); break;
        default: s = hpct_model_add_dense(*m, sp->ch, sp->act, HPCT_INIT_XAVIER);
        }
    }
    if (!s) s = hpct_model_set_loss(*m, c->loss);
    if (!s) s = hpct_model_build(*m, B);
    return s;
}

static void check_case(int ci)
{
    const struct tcase *c = &cases[ci];
    hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
    cfg.seed = 500 + (uint64_t)ci;
    hpct_ctx_t ctx;
    hpct_model_t m = NULL;
    hpct_params_t p;
    if (hpct_ctx_create(&cfg, &ctx)) tap_bail("context");
    hpct_status_t s = build_case(ctx, c, &m);
    if (s || hpct_model_params(m, &p))
        tap_bail("%s: build failed: %s", c->name, hpct_last_error(ctx));
    int in, outs;
    hpct_model_shape(m, &in, &outs);
    float *x = malloc(sizeof(float) * B * in), *tf = malloc(sizeof(float) * B * outs);
    int32_t tl[B];
    srand(ci + 7);
    for (int i = 0; i < B * in; i++) x[i] = (float)(2.0 * rand() / RAND_MAX - 1.0);
    for (int i = 0; i < B * outs; i++) tf[i] = (float)(2.0 * rand() / RAND_MAX - 1.0);
    for (int i = 0; i < B; i++) tl[i] = i % outs;
    const void *t = c->loss == HPCT_LOSS_MSE ? (const void *)tf : (const void *)tl;

    int nb;
    size_t total;
    hpct_params_size(p, &nb, &total);
    double *theta = malloc(sizeof(double) * total);
    size_t off = 0;
    for (int i = 0; i < nb; i++) {
        float *param;
        size_t n;
        const char *name;
        hpct_params_get(p, i, &name, &param, NULL, &n);
        if (strstr(name, "bias"))
            for (size_t k = 0; k < n; k++) param[k] = 0.1f * (float)((int)k % 3 - 1);
        for (size_t k = 0; k < n; k++) theta[off + k] = param[k];
        off += n;
    }

    /* Forward against the reference. */
    float *y = malloc(sizeof(float) * B * outs);
    double *yr = malloc(sizeof(double) * B * outs), worst = 0;
    s = hpct_model_forward(m, x, B, y);
    ref_loss(c, theta, x, t, yr);
    for (int i = 0; i < B * outs; i++) worst = fmax(worst, fabs(y[i] - yr[i]));
    tap_ok(!s && worst < 1e-5, "%s: %d outputs match the float64 reference (max error %.1e)",
           c->name, B * outs, worst);

    float lib_loss;
    s = hpct_model_loss_grad(m, x, t, B, 0, &lib_loss);
    double err2 = 0, ref2 = 0;
    worst = 0, off = 0;
    for (int i = 0; i < nb; i++) {
        float *grad;
        size_t n;
        hpct_params_get(p, i, NULL, NULL, &grad, &n);
        for (size_t k = 0; k < n; k++) {
            double keep = theta[off + k], h = 1e-6;
            theta[off + k] = keep + h;
            double up = ref_loss(c, theta, x, t, NULL);
            theta[off + k] = keep - h;
            double down = ref_loss(c, theta, x, t, NULL);
            theta[off + k] = keep;
            double num = (up - down) / (2 * h);
            err2 += (grad[k] - num) * (grad[k] - num);
            ref2 += num * num;
            worst = fmax(worst, fabs(grad[k] - num));
        }
        off += n;
    }
    double rel = sqrt(err2 / ref2);
    tap_ok(!s && rel < 1e-3,
           "%s: relative gradient error %.2e < 1e-3 over %zu parameters (max abs %.1e)", c->name,
           rel, total, worst);
    free(x), free(tf), free(y), free(yr), free(theta);
    hpct_model_destroy(m);
    hpct_ctx_destroy(ctx);
}

/* A call that must fail with status want and an error naming what. */
static void refused(hpct_ctx_t ctx, hpct_status_t got, hpct_status_t want, const char *what,
                    const char *desc)
{
    const char *e = hpct_last_error(ctx);
    tap_ok(got == want && e && strstr(e, what), "%s is refused naming \"%s\" (%d: %s)", desc, what,
           got, e ? e : "");
}

static void check_errors(void)
{
    hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
    hpct_ctx_t ctx;
    hpct_model_t m;
    if (hpct_ctx_create(&cfg, &ctx) || hpct_model_create(ctx, 12, &m)) tap_bail("model");
    refused(ctx, hpct_model_add_conv(m, 4, 3, 1, HPCT_PAD_SAME, HPCT_ACT_RELU, HPCT_INIT_AUTO),
            HPCT_ERR_INVALID_ARG, "hpct_model_add_reshape", "a convolution of flat inputs");
    int wrong[2] = {3, 5};
    refused(ctx, hpct_model_add_reshape(m, 1, 2, wrong), HPCT_ERR_INVALID_ARG,
            "holds 15 values per sample, its input 12", "a reshape that changes the count");
    int hw[2] = {3, 4};
    tap_ok(!hpct_model_add_reshape(m, 1, 2, hw), "reshape 12 -> [1, 3, 4]");
    refused(ctx, hpct_model_add_conv(m, 2, 4, 1, HPCT_PAD_VALID, HPCT_ACT_RELU, HPCT_INIT_AUTO),
            HPCT_ERR_INVALID_ARG, "kernel 4 is wider than its input (3)",
            "a valid kernel too wide");
    refused(ctx, hpct_model_add_pool(m, HPCT_POOL_MAX, 5, 1, HPCT_ACT_IDENTITY),
            HPCT_ERR_INVALID_ARG, "window 5 is wider than its input (3)", "a pool window too wide");
    refused(ctx, hpct_model_add_conv(m, 2, 3, 0, HPCT_PAD_SAME, HPCT_ACT_RELU, HPCT_INIT_AUTO),
            HPCT_ERR_INVALID_ARG, "stride 0", "stride 0");
    refused(ctx, hpct_model_add_upsample(m, 0, HPCT_ACT_IDENTITY), HPCT_ERR_INVALID_ARG, "factor 0",
            "upsampling by 0");
    tap_ok(!hpct_model_add_pool(m, HPCT_POOL_AVG, 2, 1, HPCT_ACT_IDENTITY), "avg pool 2/1");
    refused(ctx, hpct_model_build(m, 4), HPCT_ERR_STATE, "no layer with parameters",
            "a model without parameters");
    hpct_model_destroy(m);
    if (hpct_model_create(ctx, 784, &m)) tap_bail("model");
    int img[2] = {28, 28};
    hpct_status_t s = hpct_model_add_reshape(m, 1, 2, img);
    if (!s) s = hpct_model_add_conv(m, 8, 3, 1, HPCT_PAD_SAME, HPCT_ACT_RELU, HPCT_INIT_AUTO);
    if (!s) s = hpct_model_add_pool(m, HPCT_POOL_MAX, 2, 2, HPCT_ACT_IDENTITY);
    if (!s) s = hpct_model_add_conv(m, 16, 3, 2, HPCT_PAD_VALID, HPCT_ACT_RELU, HPCT_INIT_AUTO);
    if (!s) s = hpct_model_add_dense(m, 10, HPCT_ACT_IDENTITY, HPCT_INIT_AUTO);
    if (!s) s = hpct_model_build(m, 2);
    char d[512] = "";
    if (!s) s = hpct_model_describe(m, d, sizeof d);
    tap_is_str(d,
               "784-reshape[1x28x28]-conv2d/k3s1same[8x28x28](relu)-maxpool2s2[8x14x14](identity)"
               "-conv2d/k3s2valid[16x6x6](relu)-dense10(identity) softmax_ce",
               "the description gives every layer's kind, window and output shape (status %d)", s);
    int inputs, outputs;
    hpct_model_shape(m, &inputs, &outputs);
    tap_ok(inputs == 784 && outputs == 10, "shape 784 -> 10 (%d -> %d)", inputs, outputs);
    hpct_params_t p;
    int nb;
    size_t total;
    hpct_model_params(m, &p);
    hpct_params_size(p, &nb, &total);
    const char *name;
    size_t n;
    hpct_params_get(p, 2, &name, NULL, NULL, &n);
    tap_ok(nb == 6 && total == 8 * 9 + 8 + 16 * 8 * 9 + 16 + 10 * 576 + 10 &&
               !strcmp(name, "conv3.weight") && n == 16 * 8 * 9,
           "parameters named by layer: 6 sets, %zu values, the third %s [%zu]", total, name, n);
    hpct_model_destroy(m);
    hpct_ctx_destroy(ctx);
}

/* Geometry of a conv (kind HPCTI_GEOM_CONV) or window layer over in [3] with window k, stride s,
 * "same" padding when same; dims spatial dimensions (the others 1). */
static struct hpcti_geom geom(int kind, int c_in, int c_out, int dims, const int *in, int k, int s,
                              int same)
{
    struct hpcti_geom g = {.kind = kind, .c_in = c_in, .c_out = c_out};
    for (int j = 0; j < 3; j++) {
        int present = j >= 3 - dims;
        g.in[j] = present ? in[j] : 1, g.k[j] = present ? k : 1, g.s[j] = present ? s : 1;
        if (kind == HPCTI_GEOM_UPSAMPLE) {
            g.out[j] = g.in[j] * g.s[j];
            continue;
        }
        g.out[j] = out_size(g.in[j], g.k[j], g.s[j], same, &g.pad[j]);
    }
    return g;
}

/* The cpu backend's loops give the shared per-element formulas' bits (which the CUDA kernels
 * and the device double evaluate), for column matrices, their adjoint, pooling and
 * upsampling, on random data with ties. */
static void check_formulas(void)
{
    static const struct {
        int kind, c_in, c_out, dims, in[3], k, s, same;
    } gs[] = {
        {HPCTI_GEOM_CONV, 3, 4, 2, {1, 7, 6}, 3, 1, 1},
        {HPCTI_GEOM_CONV, 2, 3, 2, {1, 7, 5}, 3, 2, 1},
        {HPCTI_GEOM_CONV, 2, 2, 3, {4, 5, 3}, 3, 2, 0},
        {HPCTI_GEOM_CONV, 1, 2, 1, {1, 1, 9}, 5, 2, 1},
        {HPCTI_GEOM_CONV, 2, 2, 2, {1, 2, 3}, 5, 1, 1},
        {HPCTI_GEOM_CONV, 2, 3, 3, {3, 4, 5}, 3, 1, 1}, /* rows copied as runs, in depth */
        {HPCTI_GEOM_CONV, 1, 2, 1, {1, 1, 9}, 5, 1, 1},
        {HPCTI_GEOM_MAXPOOL, 3, 3, 2, {1, 7, 6}, 3, 2, 0},
        {HPCTI_GEOM_MAXPOOL, 2, 2, 2, {1, 7, 6}, 2, 2, 0},
        {HPCTI_GEOM_MAXPOOL, 2, 2, 2, {1, 6, 8}, 2, 2, 0}, /* even: no zeroing before it */
        {HPCTI_GEOM_AVGPOOL, 2, 2, 3, {4, 4, 5}, 2, 2, 0},
        {HPCTI_GEOM_UPSAMPLE, 2, 2, 2, {1, 3, 4}, 2, 2, 0},
    };
    hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
    hpct_ctx_t ctx;
    if (hpct_ctx_create(&cfg, &ctx)) tap_bail("context");
    const struct hpcti_ops *o = &hpcti_cpu_ops;
    enum { NB = 2 };
    for (size_t t = 0; t < sizeof gs / sizeof *gs; t++) {
        struct hpcti_geom g = geom(gs[t].kind, gs[t].c_in, gs[t].c_out, gs[t].dims, gs[t].in,
                                   gs[t].k, gs[t].s, gs[t].same);
        size_t nin = NB * (size_t)g.c_in * hpcti_geom_in_size(&g);
        size_t nout =
            NB * (size_t)(g.kind == HPCTI_GEOM_CONV ? hpcti_geom_col_rows(&g) : (size_t)g.c_out) *
            hpcti_geom_out_size(&g);
        float *x = malloc(sizeof(float) * nin), *dx = malloc(sizeof(float) * nin);
        float *want_in = malloc(sizeof(float) * nin), *y = malloc(sizeof(float) * nout);
        float *want_out = malloc(sizeof(float) * nout), *dy = malloc(sizeof(float) * nout);
        srand(100 + (unsigned)t);
        for (size_t i = 0; i < nin; i++) x[i] = (float)(rand() % 7) * 0.25f - 0.75f; /* ties */
        if (g.kind == HPCTI_GEOM_MAXPOOL) x[3] = x[nin / 2] = NAN; /* a NaN wins its windows */
        for (size_t i = 0; i < nout; i++) dy[i] = (float)(2.0 * rand() / RAND_MAX - 1.0);
        for (size_t i = 0; i < nin; i++) dx[i] = 12345.0f; /* an input the adjoint misses shows */
        int fwd_same, bwd_same;
        if (g.kind == HPCTI_GEOM_CONV) {
            hpct_status_t s = o->im2col(ctx, &g, x, y, NB);
            for (size_t e = 0; e < nout; e++) want_out[e] = hpcti_im2col_at(&g, x, e);
            fwd_same = !s && !memcmp(y, want_out, sizeof(float) * nout);
            s = o->col2im(ctx, &g, dy, dx, NB);
            for (size_t e = 0; e < nin; e++) want_in[e] = hpcti_col2im_at(&g, dy, e);
            bwd_same = !s && !memcmp(dx, want_in, sizeof(float) * nin);
        } else {
            hpct_status_t s = o->window_fwd(ctx, &g, x, y, NB);
            for (size_t e = 0; e < nout; e++) want_out[e] = hpcti_window_fwd_at(&g, x, e);
            fwd_same = !s && !memcmp(y, want_out, sizeof(float) * nout);
            s = o->window_bwd(ctx, &g, x, dy, dx, NB);
            for (size_t e = 0; e < nin; e++) want_in[e] = hpcti_window_bwd_at(&g, x, dy, e);
            bwd_same = !s && !memcmp(dx, want_in, sizeof(float) * nin);
        }
        tap_ok(
            fwd_same && bwd_same,
            "cpu loops give the shared formulas' bits: geometry %zu (kind %d, %d-d, k%d s%d %s), "
            "forward %d, backward %d",
            t, g.kind, gs[t].dims, gs[t].k, gs[t].s, gs[t].same ? "same" : "valid", fwd_same,
            bwd_same);
        free(x), free(dx), free(want_in), free(y), free(want_out), free(dy);
    }
    hpct_ctx_destroy(ctx);
}

/* The fused ReLU backward and bias gradient gives act_backward then channel_bias_grad's bits,
 * for more channels than it keeps lanes for at once and rows that are no multiple of 8. */
static void check_fused_bias_grad(void)
{
    enum { NB = 3, CH = 70, SP = 13, N = NB * CH * SP };
    hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
    hpct_ctx_t ctx;
    if (hpct_ctx_create(&cfg, &ctx)) tap_bail("context");
    const struct hpcti_ops *o = &hpcti_cpu_ops;
    static float z[N], dy[N], d1[N], d2[N];
    float db1[CH], db2[CH];
    srand(7);
    for (int i = 0; i < N; i++) {
        z[i] = (float)(rand() % 5) - 2.0f; /* zeros among them */
        dy[i] = (float)(2.0 * rand() / RAND_MAX - 1.0);
    }
    z[5] = NAN;
    for (int accumulate = 0; accumulate < 2; accumulate++) {
        memcpy(d1, dy, sizeof d1), memcpy(d2, dy, sizeof d2);
        for (int c = 0; c < CH; c++) db1[c] = db2[c] = 0.5f * (float)c;
        hpct_status_t s1 = o->act_backward(ctx, HPCTI_MATH_RELU, z, z, d1, d1, N);
        if (!s1) s1 = o->channel_bias_grad(ctx, d1, db1, NB, CH, SP, accumulate);
        hpct_status_t s2 =
            o->channel_act_bias_grad(ctx, HPCTI_MATH_RELU, z, z, d2, db2, NB, CH, SP, accumulate);
        int same = !s1 && !s2 && !memcmp(d1, d2, sizeof d1) && !memcmp(db1, db2, sizeof db1);
        tap_ok(same,
               "fused ReLU backward + bias gradient, %d channels, accumulate %d: the "
               "separate passes' bits",
               CH, accumulate);
    }
    hpct_ctx_destroy(ctx);
}

int main(void)
{
    tap_plan(2 * NCASES + 14 + 10 + 2);
    for (int i = 0; i < NCASES; i++) check_case(i);
    check_formulas();
    check_fused_bias_grad();
    check_errors();
    return tap_done();
}
