/* cpu.c: the cpu backend: CBLAS sgemm plus plain loops the compiler vectorises. */
#include "config.h"
#include "../../kernels/gpu_logic.h"
#include "ops.h"
#include "../../kernels/hpct_math.h"
#include "../../kernels/conv_math.h"

#include <cblas.h>
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#if defined(HAVE_OPENBLAS_GET_CORENAME) && defined(__x86_64__)
/* OpenBLAS x86_64 cores whose kernels use no AVX2 (Intel to Sandy Bridge, AMD to Excavator,
 * whose sgemm is Piledriver's, VIA Nano): on a CPU that has it, OpenBLAS did not know the model
 * (Debian 12's 0.3.21 runs Prescott's SSE3 sgemm on Emerald Rapids: the training benchmark's
 * epoch 3.5 times longer than with OPENBLAS_CORETYPE=SkylakeX). The same list is in
 * bench/run_train_bench.sh. */
static const char *const pre_avx2[] = {"prescott",  "core2",        "penryn",      "dunnington",
                                       "nehalem",   "sandybridge",  "atom",        "athlon",
                                       "opteron",   "opteron_sse3", "barcelona",   "bobcat",
                                       "bulldozer", "piledriver",   "steamroller", "excavator",
                                       "nano",      "generic",      "unknown"};

/* OpenBLAS x86_64 cores whose sgemm uses AVX2 but not AVX-512 (an older OpenBLAS's guess, or
 * an OPENBLAS_CORETYPE a site set): on an AVX-512 CPU (the 2-core Zen 4 VM) SkylakeX's kernels
 * did the Fashion-MNIST CNN's conv products 1.44 times faster (bench/results.md, sixteenth). */
static const char *const avx2_only[] = {"haswell", "zen"};

static int listed(const char *core, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strcasecmp(core, list[i])) return 1;
    return 0;
}

/* Log OpenBLAS's kernels; warn when they are older than the CPU, naming the fix. */
static void check_blas_kernels(hpct_ctx_t ctx)
{
    const char *core = openblas_get_corename(), *forced = getenv("OPENBLAS_CORETYPE");
    if (!core) return;
    hpcti_log(ctx, HPCT_LOG_INFO, "cpu backend: OpenBLAS runs its %s kernels", core);
    if (!__builtin_cpu_supports("avx2")) return;
    int avx512 = __builtin_cpu_supports("avx512f");
    int old = listed(core, pre_avx2, sizeof pre_avx2 / sizeof *pre_avx2);
    if (!old && !(avx512 && listed(core, avx2_only, sizeof avx2_only / sizeof *avx2_only))) return;
    int set = forced && *forced;
    hpcti_log(ctx, HPCT_LOG_WARN,
              "cpu backend: OpenBLAS runs its %s kernels, which leave this CPU's %s unused "
              "(%s%s): matrix products run %s slower; export OPENBLAS_CORETYPE=%s before the "
              "program starts",
              core, avx512 ? "AVX-512" : "AVX2",
              set ? "chosen by OPENBLAS_CORETYPE=" : "OpenBLAS does not know this CPU",
              set ? forced : "", old ? "several times" : "up to 1.4 times",
              avx512 ? "SkylakeX" : "Haswell");
}
#else
static void check_blas_kernels(hpct_ctx_t ctx) {}
#endif

void hpcti_cpu_blas_version(char *out, size_t len)
{
#ifdef HAVE_OPENBLAS_GET_CONFIG
    const char *config = openblas_get_config(); /* "OpenBLAS 0.3.21 DYNAMIC_ARCH ... Haswell" */
    snprintf(out, len, "%s", config ? config : "OpenBLAS");
    size_t n = strlen(out);
    while (n > 0 && out[n - 1] == ' ') out[--n] = '\0';
#else
    snprintf(out, len, "CBLAS (no version call)");
#endif
}

static hpct_status_t cpu_init(hpct_ctx_t ctx)
{
#ifdef HAVE_OPENBLAS_SET_NUM_THREADS
    if (ctx->cfg.num_threads > 0) openblas_set_num_threads(ctx->cfg.num_threads);
#endif
    check_blas_kernels(ctx);
    return HPCT_SUCCESS;
}

static void cpu_finalize(hpct_ctx_t ctx) {}

static void *cpu_alloc(hpct_ctx_t ctx, size_t bytes)
{
    /* 64-byte aligned for vector loads; rounded up as aligned_alloc requires. */
    size_t rounded = (bytes + 63) / 64 * 64;
    void *p = aligned_alloc(64, rounded ? rounded : 64);
    if (!p) {
        hpcti_error(ctx, HPCT_ERR_NO_MEMORY, "cpu backend: cannot allocate %zu bytes", bytes);
        return NULL;
    }
    memset(p, 0, rounded ? rounded : 64);
    return p;
}

static void cpu_free(hpct_ctx_t ctx, void *p)
{
    (void)ctx;
    free(p);
}

static void *cpu_alloc_host(hpct_ctx_t ctx, size_t bytes)
{
    return cpu_alloc(ctx, bytes);
}

static int cpu_is_device(hpct_ctx_t ctx, const void *p)
{
    (void)ctx, (void)p;
    return 0; /* every tensor is host memory */
}

static hpct_status_t cpu_copy(hpct_ctx_t ctx, void *dst, const void *src, size_t bytes)
{
    if (bytes && dst != src) memcpy(dst, src, bytes);
    return HPCT_SUCCESS;
}

static hpct_status_t cpu_gemm(hpct_ctx_t ctx, int ta, int tb, int m, int n, int k, float alpha,
                              const float *a, const float *b, float beta, float *c)
{
    struct hpcti_gemm_args g;
    if (!hpcti_gemm_map(ta, tb, m, n, k, &g)) return HPCT_SUCCESS; /* empty C */
    cblas_sgemm(CblasRowMajor, g.row.trans_a ? CblasTrans : CblasNoTrans,
                g.row.trans_b ? CblasTrans : CblasNoTrans, g.row.m, g.row.n, g.row.k, alpha, a,
                g.row.lda, b, g.row.ldb, beta, c, g.row.ldc);
    return HPCT_SUCCESS;
}

static hpct_status_t cpu_bias_act(hpct_ctx_t ctx, int act, float *z, const float *restrict bias,
                                  float *y, int rows, int cols)
{
    for (int r = 0; r < rows; r++) {
        float *zr = z + (size_t)r * cols, *yr = y + (size_t)r * cols;
        if (act == HPCTI_MATH_RELU) { /* the hot case: keep it branch-free */
            for (int c = 0; c < cols; c++) {
                float v = zr[c] + bias[c];
                zr[c] = v;
                yr[c] = v < 0.0f ? 0.0f : v; /* NaN passes through */
            }
        } else {
            for (int c = 0; c < cols; c++) {
                zr[c] += bias[c];
                yr[c] = hpcti_act_fwd(act, zr[c]);
            }
        }
    }
    return HPCT_SUCCESS;
}

static hpct_status_t cpu_act_backward(hpct_ctx_t ctx, int act, const float *restrict z,
                                      const float *restrict y, const float *dy, float *dz, size_t n)
{
    if (act == HPCTI_MATH_RELU && dz == dy) { /* in place (the model's case): one pointer */
        float *restrict d = dz;
        for (size_t i = 0; i < n; i++) d[i] = z[i] > 0.0f ? d[i] : 0.0f;
    } else if (act == HPCTI_MATH_RELU) {
        for (size_t i = 0; i < n; i++) dz[i] = z[i] > 0.0f ? dy[i] : 0.0f;
    } else {
        for (size_t i = 0; i < n; i++) dz[i] = dy[i] * hpcti_act_deriv(act, z[i], y[i]);
    }
    return HPCT_SUCCESS;
}

static hpct_status_t cpu_bias_grad(hpct_ctx_t ctx, const float *dz, float *db, int rows, int cols,
                                   int accumulate)
{
    if (!accumulate) memset(db, 0, sizeof(float) * (size_t)cols);
    for (int r = 0; r < rows; r++) {
        const float *row = dz + (size_t)r * cols;
        for (int c = 0; c < cols; c++) db[c] += row[c];
    }
    return HPCT_SUCCESS;
}

/* The output columns [*lo, *hi) whose input column xo s - pad + c lies in [0, in). */
static void inside(int c, int s, int pad, int in, int out, int *lo, int *hi)
{
    int first = pad - c > 0 ? (pad - c + s - 1) / s : 0; /* xo s >= pad - c */
    int last = in - 1 + pad - c >= 0 ? (in - 1 + pad - c) / s + 1 : 0;
    *lo = first < out ? first : out;
    *hi = last < *lo ? *lo : last < out ? last : out;
}

/* One row of a sample's column matrix (channel ci, kernel offset a b c): dst [P] from the
 * channel xc [D, H, W], zeros in the padding (the values of hpcti_im2col_at). */
static void im2col_row(const struct hpcti_geom *g, const float *xc, int a, int b, int c,
                       float *restrict dst)
{
    int lo, hi, s = g->s[2], ow = g->out[2];
    inside(c, s, g->pad[2], g->in[2], ow, &lo, &hi);
    for (int zo = 0; zo < g->out[0]; zo++)
        for (int yo = 0; yo < g->out[1]; yo++, dst += ow) {
            int zi = zo * g->s[0] - g->pad[0] + a, yi = yo * g->s[1] - g->pad[1] + b;
            if (zi < 0 || zi >= g->in[0] || yi < 0 || yi >= g->in[1]) {
                memset(dst, 0, sizeof(float) * (size_t)ow);
                continue;
            }
            const float *src = xc + ((size_t)zi * g->in[1] + yi) * g->in[2];
            int off = c - g->pad[2]; /* input column of output xo: xo s + off */
            for (int xo = 0; xo < lo; xo++) dst[xo] = 0.0f; /* the padding: a few at most */
            if (s == 1) /* rows of a few dozen: a loop, not a memcpy call each */
                for (int xo = lo; xo < hi; xo++) dst[xo] = src[xo + off];
            else
                for (int xo = lo; xo < hi; xo++) dst[xo] = src[xo * s + off];
            for (int xo = hi; xo < ow; xo++) dst[xo] = 0.0f;
        }
}

/* The run of a column-matrix row (kernel offset b, c) of a rows_are_runs geometry: output
 * columns [lo, hi) and output rows [ylo, yhi) read the input; empty when lo >= hi or ylo >= yhi. */
struct row_run {
    int lo, hi, ylo, yhi;
};

static struct row_run row_run_of(const struct hpcti_geom *g, int b, int c)
{
    struct row_run r;
    inside(c, 1, g->pad[2], g->in[2], g->out[2], &r.lo, &r.hi);
    inside(b, 1, g->pad[1], g->in[1], g->out[1], &r.ylo, &r.yhi);
    return r;
}

/* Zero the padding columns of the run's rows in plane [H, W] (row width ow), column by column
 * down the rows: strided stores, which GCC does not turn into a memset call a row. */
static void zero_run_padding(float *plane, int ow, struct row_run r)
{
    for (int xo = 0; xo < r.lo; xo++)
        for (int yo = r.ylo; yo < r.yhi; yo++) plane[(size_t)yo * ow + xo] = 0.0f;
    for (int xo = r.hi; xo < ow; xo++)
        for (int yo = r.ylo; yo < r.yhi; yo++) plane[(size_t)yo * ow + xo] = 0.0f;
}

/* im2col_row at stride 1 in H and W with output rows as wide as the input's ("same" padding):
 * the valid rows of a depth slice are one run of the input, copied at once, and the padding
 * columns the run brought in from neighbouring rows are then zeroed. */
static void im2col_row_run(const struct hpcti_geom *g, const float *xc, int a, int b, int c,
                           float *restrict dst)
{
    struct row_run r = row_run_of(g, b, c);
    int ow = g->out[2], off = c - g->pad[2];
    size_t plane = (size_t)g->out[1] * ow;
    for (int zo = 0; zo < g->out[0]; zo++, dst += plane) {
        int zi = zo * g->s[0] - g->pad[0] + a;
        if (zi < 0 || zi >= g->in[0] || r.lo >= r.hi || r.ylo >= r.yhi) {
            memset(dst, 0, sizeof(float) * plane);
            continue;
        }
        /* dst [first, last): rows ylo..yhi-1 from column lo of the first to hi of the last */
        size_t first = (size_t)r.ylo * ow + r.lo, last = (size_t)(r.yhi - 1) * ow + r.hi;
        const float *src = xc + ((size_t)zi * g->in[1] + r.ylo - g->pad[1] + b) * ow + r.lo + off;
        memset(dst, 0, sizeof(float) * first);
        memcpy(dst + first, src, sizeof(float) * (last - first));
        memset(dst + last, 0, sizeof(float) * (plane - last));
        zero_run_padding(dst, ow, r);
    }
}

/* The adjoint of im2col_row: dxc [D, H, W] += the row src [P] at the inputs it read. */
static void col2im_row(const struct hpcti_geom *g, const float *src, int a, int b, int c,
                       float *restrict dxc)
{
    int lo, hi, s = g->s[2], ow = g->out[2];
    inside(c, s, g->pad[2], g->in[2], ow, &lo, &hi);
    for (int zo = 0; zo < g->out[0]; zo++)
        for (int yo = 0; yo < g->out[1]; yo++, src += ow) {
            int zi = zo * g->s[0] - g->pad[0] + a, yi = yo * g->s[1] - g->pad[1] + b;
            if (zi < 0 || zi >= g->in[0] || yi < 0 || yi >= g->in[1]) continue;
            float *dst = dxc + ((size_t)zi * g->in[1] + yi) * g->in[2];
            int off = c - g->pad[2];
            if (s == 1)
                for (int xo = lo; xo < hi; xo++) dst[xo + off] += src[xo];
            else
                for (int xo = lo; xo < hi; xo++) dst[xo * s + off] += src[xo];
        }
}

/* col2im_row where im2col_row_run applies: the row's entries in the padding columns are zeroed
 * in src (scratch), then the valid rows are added as one run. The zeros change nothing: dxc
 * starts at +0, so it never holds -0 (a sum is -0 only when both terms are), and x + 0 is x. */
static void col2im_row_run(const struct hpcti_geom *g, float *restrict src, int a, int b, int c,
                           float *restrict dxc)
{
    struct row_run r = row_run_of(g, b, c);
    int ow = g->out[2], off = c - g->pad[2];
    size_t plane = (size_t)g->out[1] * ow;
    for (int zo = 0; zo < g->out[0]; zo++, src += plane) {
        int zi = zo * g->s[0] - g->pad[0] + a;
        if (zi < 0 || zi >= g->in[0] || r.lo >= r.hi || r.ylo >= r.yhi) continue;
        zero_run_padding(src, ow, r);
        size_t first = (size_t)r.ylo * ow + r.lo, n = (size_t)(r.yhi - 1) * ow + r.hi - first;
        float *dst = dxc + ((size_t)zi * g->in[1] + r.ylo - g->pad[1] + b) * ow + r.lo + off;
        const float *run = src + first;
        for (size_t t = 0; t < n; t++) dst[t] += run[t];
    }
}

/* 1 when the rows of g's column matrix are runs of its input: stride 1 in H and W, output rows
 * as wide as the input's ("same" padding). */
static int rows_are_runs(const struct hpcti_geom *g)
{
    return g->s[1] == 1 && g->s[2] == 1 && g->in[2] == g->out[2];
}

/* Row by row (channel, then kernel offset): the same values as hpcti_im2col_at. */
static hpct_status_t cpu_im2col(hpct_ctx_t ctx, const struct hpcti_geom *g, const float *x,
                                float *restrict col, int batch)
{
    size_t in = hpcti_geom_in_size(g), P = hpcti_geom_out_size(g);
    int runs = rows_are_runs(g);
    for (int n = 0; n < batch; n++)
        for (int ci = 0; ci < g->c_in; ci++) {
            const float *xc = x + ((size_t)n * g->c_in + ci) * in;
            for (int a = 0; a < g->k[0]; a++)
                for (int b = 0; b < g->k[1]; b++)
                    for (int c = 0; c < g->k[2]; c++, col += P)
                        if (runs)
                            im2col_row_run(g, xc, a, b, c, col);
                        else
                            im2col_row(g, xc, a, b, c, col);
        }
    return HPCT_SUCCESS;
}

/* Rows added in increasing order: each input gets its terms in hpcti_col2im_at's order (one
 * output position per row reads it), so the sums are the kernels' bit for bit. */
static hpct_status_t cpu_col2im(hpct_ctx_t ctx, const struct hpcti_geom *g, float *dcol,
                                float *restrict dx, int batch)
{
    size_t in = hpcti_geom_in_size(g), P = hpcti_geom_out_size(g);
    int runs = rows_are_runs(g);
    memset(dx, 0, sizeof(float) * (size_t)batch * (size_t)g->c_in * in);
    for (int n = 0; n < batch; n++)
        for (int ci = 0; ci < g->c_in; ci++) {
            float *dxc = dx + ((size_t)n * g->c_in + ci) * in;
            for (int a = 0; a < g->k[0]; a++)
                for (int b = 0; b < g->k[1]; b++)
                    for (int c = 0; c < g->k[2]; c++, dcol += P)
                        if (runs)
                            col2im_row_run(g, dcol, a, b, c, dxc);
                        else
                            col2im_row(g, dcol, a, b, c, dxc);
        }
    return HPCT_SUCCESS;
}

static hpct_status_t cpu_channel_bias_act(hpct_ctx_t ctx, int act, float *z, const float *bias,
                                          float *y, int batch, int channels, size_t spatial)
{
    for (size_t row = 0; row < (size_t)batch * (size_t)channels; row++) {
        float *zr = z + row * spatial, *yr = y + row * spatial;
        float b = bias ? bias[row % (size_t)channels] : 0.0f;
        if (bias && act == HPCTI_MATH_RELU && yr != zr) { /* the hot case: one pass */
            float *restrict zo = zr, *restrict yo = yr;
            for (size_t p = 0; p < spatial; p++) {
                float v = zo[p] + b;
                zo[p] = v;
                yo[p] = v < 0.0f ? 0.0f : v; /* NaN passes through */
            }
            continue;
        }
        if (bias)
            for (size_t p = 0; p < spatial; p++) zr[p] += b;
        if (act == HPCTI_MATH_RELU) /* branch-free, as cpu_bias_act */
            for (size_t p = 0; p < spatial; p++) yr[p] = zr[p] < 0.0f ? 0.0f : zr[p];
        else if (act != HPCTI_MATH_IDENTITY || yr != zr)
            for (size_t p = 0; p < spatial; p++) yr[p] = hpcti_act_fwd(act, zr[p]);
    }
    return HPCT_SUCCESS;
}

static hpct_status_t cpu_channel_bias_grad(hpct_ctx_t ctx, const float *dz, float *db, int batch,
                                           int channels, size_t spatial, int accumulate)
{
    for (int c = 0; c < channels; c++) {
        float sum = hpcti_channel_grad(dz, c, batch, channels, spatial);
        db[c] = accumulate ? db[c] + sum : sum;
    }
    return HPCT_SUCCESS;
}

/* Channels whose bias-gradient lanes cpu_channel_act_bias_grad keeps at a time. */
#define ACT_BIAS_GROUP 64

/* One row [spatial] of channel lanes: dr = dr relu'(zr) in place, added into lane p % 8. */
static void relu_bwd_lanes(const float *restrict zr, float *restrict dr, size_t spatial,
                           float lane[HPCTI_CHANNEL_LANES])
{
    size_t p = 0;
    for (; p + HPCTI_CHANNEL_LANES <= spatial; p += HPCTI_CHANNEL_LANES)
        for (int j = 0; j < HPCTI_CHANNEL_LANES; j++) {
            float v = zr[p + j] > 0.0f ? dr[p + j] : 0.0f;
            dr[p + j] = v;
            lane[j] += v;
        }
    for (int j = 0; p < spatial; p++, j++) {
        float v = zr[p] > 0.0f ? dr[p] : 0.0f;
        dr[p] = v;
        lane[j] += v;
    }
}

/* ReLU backward and the bias gradient in one pass in memory order, up to ACT_BIAS_GROUP
 * channels at a time; each channel's lanes add as hpcti_channel_grad's (position p into lane
 * p % 8, sample by sample), so db is channel_bias_grad's bit for bit. */
static hpct_status_t cpu_channel_act_bias_grad(hpct_ctx_t ctx, int act, const float *z,
                                               const float *y, float *dz, float *db, int batch,
                                               int channels, size_t spatial, int accumulate)
{
    if (act != HPCTI_MATH_RELU) {
        hpct_status_t s =
            cpu_act_backward(ctx, act, z, y, dz, dz, (size_t)batch * channels * spatial);
        return s ? s : cpu_channel_bias_grad(ctx, dz, db, batch, channels, spatial, accumulate);
    }
    for (int c0 = 0; c0 < channels; c0 += ACT_BIAS_GROUP) {
        int nc = channels - c0 < ACT_BIAS_GROUP ? channels - c0 : ACT_BIAS_GROUP;
        float lane[ACT_BIAS_GROUP][HPCTI_CHANNEL_LANES] = {{0.0f}};
        for (int n = 0; n < batch; n++)
            for (int c = 0; c < nc; c++) {
                size_t row = ((size_t)n * channels + c0 + c) * spatial;
                relu_bwd_lanes(z + row, dz + row, spatial, lane[c]);
            }
        for (int c = 0; c < nc; c++) {
            float sum = hpcti_channel_lanes_sum(lane[c]);
            db[c0 + c] = accumulate ? db[c0 + c] + sum : sum;
        }
    }
    return HPCT_SUCCESS;
}

/* One channel of pooling or upsampling: yc [out] from xc [in], windows walked in output order
 * with their origins stepped, not divided out (the values of hpcti_window_fwd_at). */
static void window_fwd_channel(const struct hpcti_geom *g, const float *xc, float *restrict yc)
{
    for (int zo = 0; zo < g->out[0]; zo++)
        for (int yo = 0; yo < g->out[1]; yo++)
            for (int xo = 0; xo < g->out[2]; xo++, yc++) {
                if (g->kind == HPCTI_GEOM_UPSAMPLE) {
                    *yc = xc[hpcti_upsample_source_at(g, zo, yo, xo)];
                    continue;
                }
                size_t o = hpcti_window_origin_at(g, zo, yo, xo);
                *yc = g->kind == HPCTI_GEOM_MAXPOOL ? xc[hpcti_pool_argmax_from(g, xc, o)]
                                                    : hpcti_pool_mean_from(g, xc, o);
            }
}

/* 1 for max pooling over 2 x 2 windows at stride 2 in one plane (the common case). */
static int maxpool_2x2(const struct hpcti_geom *g)
{
    return g->kind == HPCTI_GEOM_MAXPOOL && g->k[0] == 1 && g->k[1] == 2 && g->k[2] == 2 &&
           g->s[1] == 2 && g->s[2] == 2;
}

/* Index among 0..3 of the first maximum of a 2 x 2 window (v: its values in window order),
 * by hpcti_pool_argmax_from's rule (a NaN wins once reached and keeps winning). */
static inline int first_max4(const float v[4])
{
    int best = 0;
    if (v[0] != v[0] || v[1] != v[1] || v[2] != v[2] || v[3] != v[3]) { /* rare: a NaN */
        for (int j = 1; j < 4; j++)
            if (v[best] == v[best] && (v[j] > v[best] || v[j] != v[j])) best = j;
        return best;
    }
    float cur = v[0];
    for (int j = 1; j < 4; j++) { /* selects, not branches: which one wins is data */
        int take = v[j] > cur;
        best = take ? j : best;
        cur = take ? v[j] : cur;
    }
    return best;
}

/* One output row of maxpool_2x2's forward from input rows r0, r1 when none of their values is
 * a NaN (then each window's first maximum is the running "greater than" of its values in
 * window order, a select the compiler vectorises); 0, nothing written, when one is. */
static int maxpool_2x2_row(const float *restrict r0, const float *restrict r1, size_t ow,
                           float *restrict y)
{
    int nan = 0;
    for (size_t xo = 0; xo < ow; xo++) {
        float a = r0[2 * xo], b = r0[2 * xo + 1], c = r1[2 * xo], d = r1[2 * xo + 1];
        nan |= (a != a) | (b != b) | (c != c) | (d != d);
        float m = b > a ? b : a;
        m = c > m ? c : m;
        y[xo] = d > m ? d : m;
    }
    return !nan; /* y is rewritten by the exact rule when a NaN was seen */
}

/* One output row of maxpool_2x2's adjoint into input rows d0, d1 (dy at each window's first
 * maximum, 0 at the other three) when none of r0, r1's values is a NaN, by the same selects
 * as maxpool_2x2_row (vectorised); 0, nothing to trust, when one is. */
static int maxpool_2x2_row_bwd(const float *restrict r0, const float *restrict r1, size_t ow,
                               const float *restrict dy, float *restrict d0, float *restrict d1)
{
    int nan = 0;
    for (size_t xo = 0; xo < ow; xo++) {
        float a = r0[2 * xo], b = r0[2 * xo + 1], c = r1[2 * xo], d = r1[2 * xo + 1], g = dy[xo];
        nan |= (a != a) | (b != b) | (c != c) | (d != d);
        float m = b > a ? b : a, ga = b > a ? 0.0f : g, gb = b > a ? g : 0.0f; /* b takes over */
        int tc = c > m; /* c takes over (selects only: no control flow, so it vectorises) */
        m = tc ? c : m, ga = tc ? 0.0f : ga, gb = tc ? 0.0f : gb;
        float gc = tc ? g : 0.0f;
        int td = d > m; /* d takes over */
        d0[2 * xo] = td ? 0.0f : ga, d0[2 * xo + 1] = td ? 0.0f : gb;
        d1[2 * xo] = td ? 0.0f : gc, d1[2 * xo + 1] = td ? g : 0.0f;
    }
    return !nan; /* the rows are rewritten by the exact rule when a NaN was seen */
}

/* maxpool_2x2's forward (dx: NULL) or adjoint (dx = dy at each window's first maximum, 0 at
 * the other three) over one channel of D planes. */
static void maxpool_2x2_channel(const struct hpcti_geom *g, const float *xc, float *restrict yc,
                                const float *dyc, float *restrict dx)
{
    size_t iw = (size_t)g->in[2], ow = (size_t)g->out[2];
    for (int zo = 0; zo < g->out[0]; zo++)
        for (int yo = 0; yo < g->out[1]; yo++) {
            const float *r0 = xc + ((size_t)zo * g->in[1] + 2 * (size_t)yo) * iw, *r1 = r0 + iw;
            if (!dx && maxpool_2x2_row(r0, r1, ow, yc)) {
                yc += ow;
                continue;
            }
            if (dx && maxpool_2x2_row_bwd(r0, r1, ow, dyc, dx + (r0 - xc), dx + (r0 - xc) + iw)) {
                dyc += ow;
                continue;
            }
            for (size_t xo = 0; xo < ow; xo++) {
                float v[4] = {r0[2 * xo], r0[2 * xo + 1], r1[2 * xo], r1[2 * xo + 1]};
                int j = first_max4(v);
                if (!dx) {
                    *yc++ = v[j];
                    continue;
                }
                float d = *dyc++; /* windows do not overlap: each writes its four inputs */
                float *d0 = dx + (r0 - xc) + 2 * xo, *d1 = d0 + iw;
                d0[0] = j == 0 ? d : 0.0f, d0[1] = j == 1 ? d : 0.0f;
                d1[0] = j == 2 ? d : 0.0f, d1[1] = j == 3 ? d : 0.0f;
            }
        }
}

static hpct_status_t cpu_window_fwd(hpct_ctx_t ctx, const struct hpcti_geom *g, const float *x,
                                    float *restrict y, int batch)
{
    size_t P = hpcti_geom_out_size(g), in = hpcti_geom_in_size(g);
    int fast = maxpool_2x2(g);
    for (size_t nc = 0; nc < (size_t)batch * (size_t)g->c_out; nc++) {
        if (fast)
            maxpool_2x2_channel(g, x + nc * in, y + nc * P, NULL, NULL);
        else
            window_fwd_channel(g, x + nc * in, y + nc * P);
    }
    return HPCT_SUCCESS;
}

/* One channel's adjoint, output positions in increasing order, each adding its dy to the
 * inputs it read (max: its first maximum; average: its window, divided at the end): every
 * input gets its terms in hpcti_window_bwd_at's order, so the kernels' bits. */
static void window_bwd_channel(const struct hpcti_geom *g, const float *xc, const float *dyc,
                               float *restrict dxc)
{
    size_t in = hpcti_geom_in_size(g);
    if (maxpool_2x2(g)) { /* every input under a window is written; only the rest is zeroed */
        if (in != 4 * hpcti_geom_out_size(g)) memset(dxc, 0, sizeof(float) * in); /* odd sizes */
        maxpool_2x2_channel(g, xc, NULL, dyc, dxc);
        return;
    }
    memset(dxc, 0, sizeof(float) * in);
    for (int zo = 0; zo < g->out[0]; zo++)
        for (int yo = 0; yo < g->out[1]; yo++)
            for (int xo = 0; xo < g->out[2]; xo++, dyc++) {
                if (g->kind == HPCTI_GEOM_UPSAMPLE) {
                    dxc[hpcti_upsample_source_at(g, zo, yo, xo)] += *dyc;
                    continue;
                }
                size_t o = hpcti_window_origin_at(g, zo, yo, xo);
                if (g->kind == HPCTI_GEOM_MAXPOOL) {
                    dxc[hpcti_pool_argmax_from(g, xc, o)] += *dyc;
                    continue;
                }
                for (int a = 0; a < g->k[0]; a++)
                    for (int b = 0; b < g->k[1]; b++)
                        for (int c = 0; c < g->k[2]; c++)
                            dxc[o + ((size_t)a * g->in[1] + b) * g->in[2] + c] += *dyc;
            }
    if (g->kind == HPCTI_GEOM_AVGPOOL)
        for (size_t i = 0; i < in; i++) dxc[i] /= (float)hpcti_geom_window(g);
}

static hpct_status_t cpu_window_bwd(hpct_ctx_t ctx, const struct hpcti_geom *g, const float *x,
                                    const float *dy, float *restrict dx, int batch)
{
    size_t P = hpcti_geom_out_size(g), in = hpcti_geom_in_size(g);
    for (size_t nc = 0; nc < (size_t)batch * (size_t)g->c_in; nc++)
        window_bwd_channel(g, x + nc * in, dy + nc * P, dx + nc * in);
    return HPCT_SUCCESS;
}

static hpct_status_t cpu_softmax_xent(hpct_ctx_t ctx, const float *logits, const int32_t *labels,
                                      float *dlogits, int rows, int cols, float scale, double *loss)
{
    double total = 0.0;
    for (int r = 0; r < rows; r++) {
        const float *x = logits + (size_t)r * cols;
        float *d = dlogits + (size_t)r * cols;
        float mx = -FLT_MAX;
        for (int c = 0; c < cols; c++) mx = x[c] > mx ? x[c] : mx;
        double sum = 0.0;
        for (int c = 0; c < cols; c++) sum += exp((double)(x[c] - mx));
        double log_sum = log(sum);
        total += log_sum - (double)(x[labels[r]] - mx);
        for (int c = 0; c < cols; c++) d[c] = scale * (float)(exp((double)(x[c] - mx) - log_sum));
        d[labels[r]] -= scale;
    }
    *loss = total;
    return HPCT_SUCCESS;
}

static hpct_status_t cpu_count_correct(hpct_ctx_t ctx, const float *logits, const int32_t *labels,
                                       int rows, int cols, long *out)
{
    long correct = 0;
    for (int r = 0; r < rows; r++) {
        const float *x = logits + (size_t)r * cols;
        int best = 0;
        for (int c = 1; c < cols; c++) best = x[c] > x[best] ? c : best;
        correct += best == labels[r];
    }
    *out = correct;
    return HPCT_SUCCESS;
}

static hpct_status_t cpu_mse(hpct_ctx_t ctx, const float *out, const float *t, float *dout,
                             size_t n, float scale, double *sum)
{
    double total = 0.0;
    for (size_t i = 0; i < n; i++) {
        float e = out[i] - t[i];
        total += (double)e * e;
        dout[i] = scale * 2.0f * e;
    }
    *sum = total;
    return HPCT_SUCCESS;
}

/* Sum of squares in double, 8 independent partial sums (a fixed order: the same bits on every
 * run): one serial sum waits for each add, 8 let them pipeline and vectorise (270k floats:
 * 230 us -> 42 us; the gradient norm of every metrics report and of clip_norm). */
static hpct_status_t cpu_sumsq(hpct_ctx_t ctx, const float *x, size_t n, double *sum)
{
    double part[8] = {0.0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) part[k] += (double)x[i + k] * x[i + k];
    for (; i < n; i++) part[0] += (double)x[i] * x[i];
    *sum =
        ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
    return HPCT_SUCCESS;
}

static hpct_status_t cpu_scale(hpct_ctx_t ctx, float *x, float alpha, size_t n)
{
    if (alpha == 0.0f)
        memset(x, 0, sizeof(float) * n);
    else
        for (size_t i = 0; i < n; i++) x[i] *= alpha;
    return HPCT_SUCCESS;
}

static hpct_status_t cpu_all_finite(hpct_ctx_t ctx, const float *x, size_t n, int *finite)
{
    int ok = 1;
    for (size_t i = 0; i < n; i++) ok &= isfinite(x[i]) != 0;
    *finite = ok;
    return HPCT_SUCCESS;
}

static hpct_status_t cpu_sgd(hpct_ctx_t ctx, float *restrict p, const float *restrict g,
                             float *restrict v, size_t n, float lr, float mu, int nesterov,
                             float wd, float gscale)
{
    if (v) {
        for (size_t i = 0; i < n; i++)
            hpcti_sgd_update(p + i, v + i, gscale * g[i], lr, mu, nesterov, wd);
    } else {
        for (size_t i = 0; i < n; i++) hpcti_sgd_update(p + i, NULL, gscale * g[i], lr, mu, 0, wd);
    }
    return HPCT_SUCCESS;
}

static hpct_status_t cpu_adamw(hpct_ctx_t ctx, float *restrict p, const float *restrict g,
                               float *restrict m, float *restrict v, size_t n, float lr, float b1,
                               float b2, float eps, float wd, float c1, float c2, float gscale)
{
    for (size_t i = 0; i < n; i++)
        hpcti_adamw_update(p + i, m + i, v + i, gscale * g[i], lr, b1, b2, eps, wd, c1, c2);
    return HPCT_SUCCESS;
}

/* Host ops finish before they return. */
static hpct_status_t cpu_sync(hpct_ctx_t ctx)
{
    return HPCT_SUCCESS;
}

const struct hpcti_ops hpcti_cpu_ops = {
    .name = "cpu",
    .init = cpu_init,
    .finalize = cpu_finalize,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .alloc_host = cpu_alloc_host,
    .free_host = cpu_free,
    .is_device = cpu_is_device,
    .to_device = cpu_copy,
    .to_host = cpu_copy,
    .gemm = cpu_gemm,
    .bias_act = cpu_bias_act,
    .act_backward = cpu_act_backward,
    .bias_grad = cpu_bias_grad,
    .im2col = cpu_im2col,
    .col2im = cpu_col2im,
    .col_samples = 1,
    .channel_bias_act = cpu_channel_bias_act,
    .channel_bias_grad = cpu_channel_bias_grad,
    .channel_act_bias_grad = cpu_channel_act_bias_grad,
    .window_fwd = cpu_window_fwd,
    .window_bwd = cpu_window_bwd,
    .softmax_xent = cpu_softmax_xent,
    .count_correct = cpu_count_correct,
    .mse = cpu_mse,
    .sumsq = cpu_sumsq,
    .scale = cpu_scale,
    .all_finite = cpu_all_finite,
    .sgd = cpu_sgd,
    .adamw = cpu_adamw,
    .sync = cpu_sync,
};
