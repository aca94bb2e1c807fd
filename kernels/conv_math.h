/* conv_math.h: per-element formulas of the convolution, pooling and upsampling layers, shared
 * by the cpu backend, the CUDA kernels and the device double, so the three compute the same
 * values in the same order (bit-identical). Tensors are channels-first per sample,
 * [C, D, H, W], with D = H = 1 below three and two spatial dimensions.
 * Not installed: its names carry the library's internal prefix hpcti_/HPCTI_. */
#ifndef HPCTI_CONV_MATH_H
#define HPCTI_CONV_MATH_H

#include "hpct_math.h"

#include <stddef.h>

/* Geometry kinds. */
#define HPCTI_GEOM_CONV     0
#define HPCTI_GEOM_MAXPOOL  1
#define HPCTI_GEOM_AVGPOOL  2
#define HPCTI_GEOM_UPSAMPLE 3

/* One layer's geometry per sample: spatial sizes, window, stride and leading padding per
 * dimension (index 0 = D, 1 = H, 2 = W; 1, 1, 0 along an absent dimension). Pooling keeps
 * the channels (c_in == c_out, no padding); upsampling has k = s = the factor. */
struct hpcti_geom {
    int kind;
    int c_in, c_out;
    int in[3], out[3];
    int k[3], s[3], pad[3];
};

HPCTI_HD size_t hpcti_geom_in_size(const struct hpcti_geom *g) /* spatial in, per channel */
{
    return (size_t)g->in[0] * g->in[1] * g->in[2];
}

HPCTI_HD size_t hpcti_geom_out_size(const struct hpcti_geom *g) /* spatial out, per channel */
{
    return (size_t)g->out[0] * g->out[1] * g->out[2];
}

HPCTI_HD int hpcti_geom_window(const struct hpcti_geom *g) /* kd kh kw */
{
    return g->k[0] * g->k[1] * g->k[2];
}

/* Rows of a convolution's column matrix per sample: c_in kd kh kw. */
HPCTI_HD size_t hpcti_geom_col_rows(const struct hpcti_geom *g)
{
    return (size_t)g->c_in * (size_t)hpcti_geom_window(g);
}

/* Output position p as coordinates zo, yo, xo. */
HPCTI_HD void hpcti_out_coords(const struct hpcti_geom *g, size_t p, int *zo, int *yo, int *xo)
{
    *xo = (int)(p % (size_t)g->out[2]), *yo = (int)(p / (size_t)g->out[2] % (size_t)g->out[1]);
    *zo = (int)(p / ((size_t)g->out[2] * g->out[1]));
}

/* Element e of the column matrix col [batch, c_in kd kh kw, P] (P = output positions) of
 * x [batch, c_in, D, H, W]: the input under kernel offset (a, b, c) of row r at output
 * position p, 0 in the padding. Row r = ((ci kd + a) kh + b) kw + c, p = (zo oh + yo) ow + xo,
 * so W [c_out, c_in kd kh kw] is PyTorch's weight layout. */
HPCTI_HD float hpcti_im2col_at(const struct hpcti_geom *g, const float *x, size_t e)
{
    size_t P = hpcti_geom_out_size(g), rows = hpcti_geom_col_rows(g);
    size_t p = e % P, r = (e / P) % rows, n = e / (P * rows);
    int c = (int)(r % (size_t)g->k[2]), b = (int)(r / (size_t)g->k[2] % (size_t)g->k[1]);
    int a = (int)(r / ((size_t)g->k[2] * g->k[1]) % (size_t)g->k[0]);
    size_t ci = r / (size_t)hpcti_geom_window(g);
    int zo, yo, xo;
    hpcti_out_coords(g, p, &zo, &yo, &xo);
    int zi = zo * g->s[0] - g->pad[0] + a, yi = yo * g->s[1] - g->pad[1] + b;
    int xi = xo * g->s[2] - g->pad[2] + c;
    if (zi < 0 || zi >= g->in[0] || yi < 0 || yi >= g->in[1] || xi < 0 || xi >= g->in[2])
        return 0.0f;
    size_t in = hpcti_geom_in_size(g);
    return x[(n * (size_t)g->c_in + ci) * in + ((size_t)zi * g->in[1] + yi) * g->in[2] + xi];
}

/* The output positions o along one dimension whose window (stride s, leading padding pad,
 * size k) covers input i: lo <= o < hi (possibly empty). */
HPCTI_HD void hpcti_covering(int i, int k, int s, int pad, int out, int *lo, int *hi)
{
    int top = i + pad; /* o s <= top and o s + k > top */
    int first = top - k + 1 > 0 ? (top - k + 1 + s - 1) / s : 0;
    int last = top / s + 1;
    *lo = first;
    *hi = last < out ? last : out;
}

/* Element e of dx [batch, c_in, D, H, W]: the sum, over the kernel offsets and output
 * positions that read input e, of dcol [batch, c_in kd kh kw, P], in the order of increasing
 * kernel offset (row of dcol; so of decreasing output position): the adjoint of
 * hpcti_im2col_at. The cpu backend adds row by row in the same order. */
HPCTI_HD float hpcti_col2im_at(const struct hpcti_geom *g, const float *dcol, size_t e)
{
    size_t in = hpcti_geom_in_size(g), P = hpcti_geom_out_size(g);
    size_t rows = hpcti_geom_col_rows(g);
    size_t i = e % in, ci = (e / in) % (size_t)g->c_in, n = e / (in * (size_t)g->c_in);
    int xi = (int)(i % (size_t)g->in[2]), yi = (int)(i / (size_t)g->in[2] % (size_t)g->in[1]);
    int zi = (int)(i / ((size_t)g->in[2] * g->in[1]));
    int lo[3], hi[3];
    hpcti_covering(zi, g->k[0], g->s[0], g->pad[0], g->out[0], &lo[0], &hi[0]);
    hpcti_covering(yi, g->k[1], g->s[1], g->pad[1], g->out[1], &lo[1], &hi[1]);
    hpcti_covering(xi, g->k[2], g->s[2], g->pad[2], g->out[2], &lo[2], &hi[2]);
    const float *base = dcol + n * rows * P;
    float sum = 0.0f;
    for (int zo = hi[0] - 1; zo >= lo[0]; zo--)
        for (int yo = hi[1] - 1; yo >= lo[1]; yo--)
            for (int xo = hi[2] - 1; xo >= lo[2]; xo--) {
                int a = zi + g->pad[0] - zo * g->s[0], b = yi + g->pad[1] - yo * g->s[1];
                int c = xi + g->pad[2] - xo * g->s[2];
                size_t r = ((ci * (size_t)g->k[0] + a) * g->k[1] + b) * g->k[2] + c;
                size_t p = ((size_t)zo * g->out[1] + yo) * g->out[2] + xo;
                sum += base[r * P + p];
            }
    return sum;
}

/* Offset within a channel of the first input of output (zo, yo, xo)'s window. */
HPCTI_HD size_t hpcti_window_origin_at(const struct hpcti_geom *g, int zo, int yo, int xo)
{
    return ((size_t)zo * g->s[0] * g->in[1] + (size_t)yo * g->s[1]) * g->in[2] +
           (size_t)xo * g->s[2];
}

/* The same for output position p. */
HPCTI_HD size_t hpcti_window_origin(const struct hpcti_geom *g, size_t p)
{
    int zo, yo, xo;
    hpcti_out_coords(g, p, &zo, &yo, &xo);
    return hpcti_window_origin_at(g, zo, yo, xo);
}

/* Pooling: index within the channel xc of the first maximum (NaN: the first NaN) of the
 * window starting at index o. */
HPCTI_HD size_t hpcti_pool_argmax_from(const struct hpcti_geom *g, const float *xc, size_t o)
{
    size_t best = o;
    for (int a = 0; a < g->k[0]; a++)
        for (int b = 0; b < g->k[1]; b++)
            for (int c = 0; c < g->k[2]; c++) {
                size_t j = o + ((size_t)a * g->in[1] + b) * g->in[2] + c;
                float v = xc[j], cur = xc[best];
                if (cur == cur && (v > cur || v != v)) best = j;
            }
    return best;
}

/* The same for output position p's window. */
HPCTI_HD size_t hpcti_pool_argmax(const struct hpcti_geom *g, const float *xc, size_t p)
{
    return hpcti_pool_argmax_from(g, xc, hpcti_window_origin(g, p));
}

/* Average pooling: the mean of the window starting at index o (added in window order). */
HPCTI_HD float hpcti_pool_mean_from(const struct hpcti_geom *g, const float *xc, size_t o)
{
    float sum = 0.0f;
    for (int a = 0; a < g->k[0]; a++)
        for (int b = 0; b < g->k[1]; b++)
            for (int c = 0; c < g->k[2]; c++)
                sum += xc[o + ((size_t)a * g->in[1] + b) * g->in[2] + c];
    return sum / (float)hpcti_geom_window(g);
}

/* Upsampling: index within the channel of the input that output (zo, yo, xo) repeats. */
HPCTI_HD size_t hpcti_upsample_source_at(const struct hpcti_geom *g, int zo, int yo, int xo)
{
    return ((size_t)(zo / g->s[0]) * g->in[1] + (size_t)(yo / g->s[1])) * g->in[2] +
           (size_t)(xo / g->s[2]);
}

/* The same for output position p. */
HPCTI_HD size_t hpcti_upsample_source(const struct hpcti_geom *g, size_t p)
{
    int zo, yo, xo;
    hpcti_out_coords(g, p, &zo, &yo, &xo);
    return hpcti_upsample_source_at(g, zo, yo, xo);
}

/* Element e of y [batch, c, out...] of pooling or upsampling x [batch, c, in...]. */
HPCTI_HD float hpcti_window_fwd_at(const struct hpcti_geom *g, const float *x, size_t e)
{
    size_t P = hpcti_geom_out_size(g), in = hpcti_geom_in_size(g);
    size_t p = e % P;
    const float *xc = x + (e / P) * in; /* this sample's channel */
    if (g->kind == HPCTI_GEOM_UPSAMPLE) return xc[hpcti_upsample_source(g, p)];
    if (g->kind == HPCTI_GEOM_MAXPOOL) return xc[hpcti_pool_argmax(g, xc, p)];
    return hpcti_pool_mean_from(g, xc, hpcti_window_origin(g, p));
}

/* Element e of dx [batch, c, in...], the adjoint of hpcti_window_fwd_at for dy [batch, c,
 * out...]: the output positions reading input e, in increasing order (max pooling: those
 * whose first maximum is e; upsampling: its factor^dims copies). */
HPCTI_HD float hpcti_window_bwd_at(const struct hpcti_geom *g, const float *x, const float *dy,
                                   size_t e)
{
    size_t P = hpcti_geom_out_size(g), in = hpcti_geom_in_size(g);
    size_t i = e % in;
    const float *xc = x + (e / in) * in, *dyc = dy + (e / in) * P;
    int xi = (int)(i % (size_t)g->in[2]), yi = (int)(i / (size_t)g->in[2] % (size_t)g->in[1]);
    int zi = (int)(i / ((size_t)g->in[2] * g->in[1]));
    int lo[3], hi[3];
    if (g->kind == HPCTI_GEOM_UPSAMPLE) {
        lo[0] = zi * g->s[0], lo[1] = yi * g->s[1], lo[2] = xi * g->s[2];
        hi[0] = lo[0] + g->s[0], hi[1] = lo[1] + g->s[1], hi[2] = lo[2] + g->s[2];
    } else {
        hpcti_covering(zi, g->k[0], g->s[0], 0, g->out[0], &lo[0], &hi[0]);
        hpcti_covering(yi, g->k[1], g->s[1], 0, g->out[1], &lo[1], &hi[1]);
        hpcti_covering(xi, g->k[2], g->s[2], 0, g->out[2], &lo[2], &hi[2]);
    }
    float sum = 0.0f;
    for (int zo = lo[0]; zo < hi[0]; zo++)
        for (int yo = lo[1]; yo < hi[1]; yo++)
            for (int xo = lo[2]; xo < hi[2]; xo++) {
                size_t p = ((size_t)zo * g->out[1] + yo) * g->out[2] + xo;
                if (g->kind != HPCTI_GEOM_MAXPOOL || hpcti_pool_argmax(g, xc, p) == i)
                    sum += dyc[p];
            }
    return g->kind == HPCTI_GEOM_AVGPOOL ? sum / (float)hpcti_geom_window(g) : sum;
}

/* Per-channel bias: element e of z [batch, channels, spatial] += bias[channel]. */
HPCTI_HD size_t hpcti_channel_of(size_t e, int channels, size_t spatial)
{
    return (e / spatial) % (size_t)channels;
}

/* Partial sums of hpcti_channel_grad: position p of a row adds into lane p % 8. */
#define HPCTI_CHANNEL_LANES 8

/* The lanes of hpcti_channel_grad added pairwise: its one order of the final sum. */
HPCTI_HD float hpcti_channel_lanes_sum(const float lane[HPCTI_CHANNEL_LANES])
{
    return ((lane[0] + lane[1]) + (lane[2] + lane[3])) +
           ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

/* db[c] = the sum of dz [batch, channels, spatial] over samples and positions, in float: each
 * of 8 lanes adds its positions (p % 8) sample by sample, then the lanes are added pairwise.
 * The cpu backend (vectorised), the kernels and the double add the same way. */
HPCTI_HD float hpcti_channel_grad(const float *dz, int c, int batch, int channels, size_t spatial)
{
    float lane[HPCTI_CHANNEL_LANES] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    for (int n = 0; n < batch; n++) {
        const float *row = dz + ((size_t)n * channels + c) * spatial;
        size_t p = 0;
        for (; p + HPCTI_CHANNEL_LANES <= spatial; p += HPCTI_CHANNEL_LANES)
            for (int j = 0; j < HPCTI_CHANNEL_LANES; j++) lane[j] += row[p + j];
        for (int j = 0; p < spatial; p++, j++) lane[j] += row[p];
    }
    return hpcti_channel_lanes_sum(lane);
}

#endif
