/* kernels.c (device double): host twins of the kernels/ launch wrappers (kernels.h). Each is
 * queued on the stream its wrapper uses and runs the same math (hpct_math.h) over the writable
 * views of its device pointers; a pointer that is not device memory of the extent the kernel
 * touches is reported as an illegal address. Reductions leave their result, in double, at
 * scratch[HPCTI_K_MAX_BLOCKS] as reduce.cu's second pass does. */
#include "double.h"
#include "../../kernels/hpct_math.h"
#include "../../kernels/kernels.h"

#include <float.h>
#include <math.h>
#include <string.h>

#define F sizeof(float)

/* ---- element-wise ------------------------------------------------------------------------ */

struct ew_arg {
    int act, rows, cols, accumulate, nranks, me, nesterov;
    size_t n;
    float *x, *y, *z, *w;
    const float *a, *b;
    float f[8]; /* scalars in the wrapper's order */
};

static void bias_act_task(void *p)
{
    struct ew_arg *k = p;
    size_t n = (size_t)k->rows * (size_t)k->cols;
    float *z = dd_dev(k->z, F * n, "bias_act_kernel z"), *y = dd_dev(k->y, F * n, "bias_act y");
    const float *bias = dd_dev(k->a, F * (size_t)k->cols, "bias_act_kernel bias");
    if (!z || !y || !bias) return;
    for (size_t i = 0; i < n; i++) {
        float v = z[i] + bias[i % (size_t)k->cols];
        z[i] = v;
        y[i] = hpcti_act_fwd(k->act, v);
    }
}

int hpcti_k_bias_act(void *stream, int act, float *z, const float *bias, float *y, int rows,
                     int cols)
{
    if (rows <= 0 || cols <= 0) return 0;
    struct ew_arg k = {.act = act, .rows = rows, .cols = cols, .z = z, .y = y, .a = bias};
    dd_enqueue((cudaStream_t)stream, "bias_act_kernel", bias_act_task, &k, sizeof k);
    return (int)dd_sticky(); /* as cudaGetLastError after a launch */
}

static void act_backward_task(void *p)
{
    struct ew_arg *k = p;
    const float *z = dd_dev(k->a, F * k->n, "act_backward_kernel z");
    const float *y = dd_dev(k->b, F * k->n, "act_backward_kernel y");
    const float *dy = dd_dev(k->x, F * k->n, "act_backward_kernel dy");
    float *dz = dd_dev(k->z, F * k->n, "act_backward_kernel dz");
    if (!z || !y || !dy || !dz) return;
    for (size_t i = 0; i < k->n; i++)
        dz[i] = k->act == HPCTI_MATH_RELU ? (z[i] > 0.0f ? dy[i] : 0.0f)
                                          : dy[i] * hpcti_act_deriv(k->act, z[i], y[i]);
}

int hpcti_k_act_backward(void *stream, int act, const float *z, const float *y, const float *dy,
                         float *dz, size_t n)
{
    if (n == 0) return 0;
    struct ew_arg k = {.act = act, .n = n, .a = z, .b = y, .x = (float *)dy, .z = dz};
    dd_enqueue((cudaStream_t)stream, "act_backward_kernel", act_backward_task, &k, sizeof k);
    return (int)dd_sticky(); /* as cudaGetLastError after a launch */
}

static void bias_grad_task(void *p)
{
    struct ew_arg *k = p;
    size_t rows = (size_t)(k->rows > 0 ? k->rows : 0);
    const float *dz = rows ? dd_dev(k->a, F * rows * (size_t)k->cols, "bias_grad_kernel dz") : NULL;
    float *db = dd_dev(k->z, F * (size_t)k->cols, "bias_grad_kernel db");
    if ((rows && !dz) || !db) return;
    for (int c = 0; c < k->cols; c++) { /* rows in order, one column at a time */
        float sum = k->accumulate ? db[c] : 0.0f;
        for (size_t r = 0; r < rows; r++) sum += dz[r * (size_t)k->cols + (size_t)c];
        db[c] = sum;
    }
}

int hpcti_k_bias_grad(void *stream, const float *dz, float *db, int rows, int cols, int accumulate)
{
    if (cols <= 0) return 0;
    struct ew_arg k = {.rows = rows, .cols = cols, .accumulate = accumulate, .a = dz, .z = db};
    dd_enqueue((cudaStream_t)stream, "bias_grad_kernel", bias_grad_task, &k, sizeof k);
    return (int)dd_sticky(); /* as cudaGetLastError after a launch */
}

static void scale_task(void *p)
{
    struct ew_arg *k = p;
    float *x = dd_dev(k->x, F * k->n, "scale_kernel");
    if (x)
        for (size_t i = 0; i < k->n; i++) x[i] *= k->f[0];
}

int hpcti_k_scale(void *stream, float *x, float alpha, size_t n)
{
    if (n == 0) return 0;
    struct ew_arg k = {.n = n, .x = x, .f = {alpha}};
    dd_enqueue((cudaStream_t)stream, "scale_kernel", scale_task, &k, sizeof k);
    return (int)dd_sticky(); /* as cudaGetLastError after a launch */
}

/* own [n] = (sum over ranks in order of own or slots[(r < me ? r : r - 1) * n]) * inv */
static void rank_sum_task(void *p)
{
    struct ew_arg *k = p;
    float *own = dd_dev(k->x, F * k->n, "rank_sum_kernel own");
    const float *slots =
        k->nranks > 1 ? dd_dev(k->a, F * k->n * (size_t)(k->nranks - 1), "rank_sum_kernel slots")
                      : NULL;
    if (!own || (k->nranks > 1 && !slots)) return;
    for (size_t i = 0; i < k->n; i++) {
        float acc = 0.0f;
        for (int r = 0; r < k->nranks; r++) {
            float term = r == k->me ? own[i] : slots[(size_t)(r < k->me ? r : r - 1) * k->n + i];
            acc = r == 0 ? term : acc + term;
        }
        own[i] = acc * k->f[0];
    }
}

int hpcti_k_rank_sum(void *stream, float *own, const float *slots, int nranks, int me, size_t n,
                     float inv)
{
    if (n == 0) return 0;
    struct ew_arg k = {.nranks = nranks, .me = me, .n = n, .x = own, .a = slots, .f = {inv}};
    dd_enqueue((cudaStream_t)stream, "rank_sum_kernel", rank_sum_task, &k, sizeof k);
    return (int)dd_sticky(); /* as cudaGetLastError after a launch */
}

static void sgd_task(void *p)
{
    struct ew_arg *k = p;
    float *w = dd_dev(k->x, F * k->n, "sgd_kernel p");
    const float *g = dd_dev(k->a, F * k->n, "sgd_kernel g");
    float *v = k->y ? dd_dev(k->y, F * k->n, "sgd_kernel v") : NULL;
    if (!w || !g || (k->y && !v)) return;
    for (size_t i = 0; i < k->n; i++)
        hpcti_sgd_update(w + i, v ? v + i : NULL, k->f[4] * g[i], k->f[0], k->f[1],
                         v ? k->nesterov : 0, k->f[2]);
}

int hpcti_k_sgd(void *stream, float *p, const float *g, float *v, size_t n, float lr, float mu,
                int nesterov, float wd, float gscale)
{
    if (n == 0) return 0;
    struct ew_arg k = {
        .n = n, .x = p, .a = g, .y = v, .nesterov = nesterov, .f = {lr, mu, wd, 0, gscale}};
    dd_enqueue((cudaStream_t)stream, "sgd_kernel", sgd_task, &k, sizeof k);
    return (int)dd_sticky(); /* as cudaGetLastError after a launch */
}

static void adamw_task(void *p)
{
    struct ew_arg *k = p;
    float *w = dd_dev(k->x, F * k->n, "adamw_kernel p");
    const float *g = dd_dev(k->a, F * k->n, "adamw_kernel g");
    float *m = dd_dev(k->y, F * k->n, "adamw_kernel m"), *v = dd_dev(k->z, F * k->n, "adamw v");
    if (!w || !g || !m || !v) return;
    for (size_t i = 0; i < k->n; i++)
        hpcti_adamw_update(w + i, m + i, v + i, k->f[7] * g[i], k->f[0], k->f[1], k->f[2], k->f[3],
                           k->f[4], k->f[5], k->f[6]);
}

int hpcti_k_adamw(void *stream, float *p, const float *g, float *m, float *v, size_t n, float lr,
                  float b1, float b2, float eps, float wd, float c1, float c2, float gscale)
{
    if (n == 0) return 0;
    struct ew_arg k = {
        .n = n, .x = p, .a = g, .y = m, .z = v, .f = {lr, b1, b2, eps, wd, c1, c2, gscale}};
    dd_enqueue((cudaStream_t)stream, "adamw_kernel", adamw_task, &k, sizeof k);
    return (int)dd_sticky(); /* as cudaGetLastError after a launch */
}

/* The gated updates of the fused step: scalars and gate read when the task runs, as the
 * kernels read them from device memory (a replayed graph sees their new values). */
struct gated_arg {
    float *p, *v, *m;
    const float *g, *sc;
    const int *gate;
    size_t n;
    int nesterov;
    float f[4]; /* SGD: mu, wd; AdamW: b1, b2, eps, wd */
};

/* The scalars [HPCTI_SC_COUNT] and the gate, or NULL (reported) when either is not device
 * memory. */
static const float *gate_open(const struct gated_arg *k, const char *kernel, int *open)
{
    const float *sc = dd_dev(k->sc, F * HPCTI_SC_COUNT, kernel);
    const int *gate = dd_dev(k->gate, sizeof(int), kernel);
    *open = sc && gate && *gate;
    return sc;
}

static void sgd_gated_task(void *p)
{
    struct gated_arg *k = p;
    int open;
    const float *sc = gate_open(k, "sgd_gated_kernel scalars", &open);
    if (!open) return;
    float *w = dd_dev(k->p, F * k->n, "sgd_gated_kernel p");
    const float *g = dd_dev(k->g, F * k->n, "sgd_gated_kernel g");
    float *v = k->v ? dd_dev(k->v, F * k->n, "sgd_gated_kernel v") : NULL;
    if (!w || !g || (k->v && !v)) return;
    for (size_t i = 0; i < k->n; i++)
        hpcti_sgd_update(w + i, v ? v + i : NULL, sc[HPCTI_SC_GSCALE] * g[i], sc[HPCTI_SC_LR],
                         k->f[0], v ? k->nesterov : 0, k->f[1]);
}

int hpcti_k_sgd_gated(void *stream, float *p, const float *g, float *v, size_t n, const float *sc,
                      const int *gate, float mu, int nesterov, float wd)
{
    if (n == 0) return 0;
    struct gated_arg k = {.p = p,
                          .v = v,
                          .g = g,
                          .sc = sc,
                          .gate = gate,
                          .n = n,
                          .nesterov = nesterov,
                          .f = {mu, wd}};
    dd_enqueue((cudaStream_t)stream, "sgd_gated_kernel", sgd_gated_task, &k, sizeof k);
    return (int)dd_sticky(); /* as cudaGetLastError after a launch */
}

static void adamw_gated_task(void *p)
{
    struct gated_arg *k = p;
    int open;
    const float *sc = gate_open(k, "adamw_gated_kernel scalars", &open);
    if (!open) return;
    float *w = dd_dev(k->p, F * k->n, "adamw_gated_kernel p");
    const float *g = dd_dev(k->g, F * k->n, "adamw_gated_kernel g");
    float *m = dd_dev(k->m, F * k->n, "adamw_gated_kernel m");
    float *v = dd_dev(k->v, F * k->n, "adamw_gated_kernel v");
    if (!w || !g || !m || !v) return;
    for (size_t i = 0; i < k->n; i++)
        hpcti_adamw_update(w + i, m + i, v + i, sc[HPCTI_SC_GSCALE] * g[i], sc[HPCTI_SC_LR],
                           k->f[0], k->f[1], k->f[2], k->f[3], sc[HPCTI_SC_C1], sc[HPCTI_SC_C2]);
}

int hpcti_k_adamw_gated(void *stream, float *p, const float *g, float *m, float *v, size_t n,
                        const float *sc, const int *gate, float b1, float b2, float eps, float wd)
{
    if (n == 0) return 0;
    struct gated_arg k = {
        .p = p, .v = v, .m = m, .g = g, .sc = sc, .gate = gate, .n = n, .f = {b1, b2, eps, wd}};
    dd_enqueue((cudaStream_t)stream, "adamw_gated_kernel", adamw_gated_task, &k, sizeof k);
    return (int)dd_sticky(); /* as cudaGetLastError after a launch */
}

struct gate_arg {
    const double *results;
    float *sc;
    int *gate;
    int sums;
    float clip;
};

static void step_gate_task(void *p)
{
    struct gate_arg *k = p;
    size_t n = (size_t)(1 + (k->sums > 1 ? k->sums : 1));
    const double *results = dd_dev(k->results, sizeof(double) * n, "step_gate_kernel results");
    float *sc = dd_dev(k->sc, F * HPCTI_SC_COUNT, "step_gate_kernel scalars");
    int *gate = dd_dev(k->gate, sizeof(int), "step_gate_kernel gate");
    if (!results || !sc || !gate) return;
    float gscale;
    *gate = hpcti_step_gate(results, k->sums, k->clip, &gscale);
    sc[HPCTI_SC_GSCALE] = gscale;
}

int hpcti_k_step_gate(void *stream, const double *results, int sums, float clip, float *sc,
                      int *gate)
{
    struct gate_arg k = {results, sc, gate, sums, clip};
    dd_enqueue((cudaStream_t)stream, "step_gate_kernel", step_gate_task, &k, sizeof k);
    return (int)dd_sticky(); /* as cudaGetLastError after a launch */
}

/* ---- reductions (result at scratch[HPCTI_K_MAX_BLOCKS]) ---------------------------------- */

struct red_arg {
    const float *x, *t;
    const int32_t *labels;
    float *d;
    double *scratch;
    size_t n;
    int rows, cols, kind;
    float scale;
};

enum { RED_XENT, RED_CORRECT, RED_MSE, RED_SUMSQ, RED_NONFINITE };

static double xent_rows(const struct red_arg *k, const float *x, const int32_t *lab, float *d)
{
    double loss = 0.0;
    for (size_t r = 0; r < (size_t)k->rows; r++) {
        const float *row = x + r * (size_t)k->cols;
        float *dr = d + r * (size_t)k->cols;
        float mx = -FLT_MAX;
        for (int c = 0; c < k->cols; c++) mx = row[c] > mx ? row[c] : mx;
        double sum = 0.0;
        for (int c = 0; c < k->cols; c++) sum += exp((double)(row[c] - mx));
        double log_sum = log(sum);
        loss += log_sum - (double)(row[lab[r]] - mx);
        for (int c = 0; c < k->cols; c++) {
            float v = k->scale * (float)(exp((double)(row[c] - mx) - log_sum));
            dr[c] = c == lab[r] ? v - k->scale : v;
        }
    }
    return loss;
}

static double correct_rows(const struct red_arg *k, const float *x, const int32_t *lab)
{
    double correct = 0.0;
    for (size_t r = 0; r < (size_t)k->rows; r++) {
        const float *row = x + r * (size_t)k->cols;
        int best = 0;
        for (int c = 1; c < k->cols; c++) best = row[c] > row[best] ? c : best;
        correct += best == lab[r] ? 1.0 : 0.0;
    }
    return correct;
}

static void reduce_task(void *p)
{
    struct red_arg *k = p;
    size_t cells = (size_t)(k->rows > 0 ? k->rows : 0) * (size_t)(k->cols > 0 ? k->cols : 0);
    size_t n = k->kind == RED_XENT || k->kind == RED_CORRECT ? cells : k->n;
    double *out = dd_dev(k->scratch, sizeof(double) * HPCTI_K_SCRATCH, "reduction scratch");
    const float *x = n ? dd_dev(k->x, F * n, "reduction input") : NULL;
    if (!out || (n && !x)) return;
    double v = 0.0;
    if (k->kind == RED_XENT || k->kind == RED_CORRECT) {
        const int32_t *lab = k->rows > 0 ? dd_dev(k->labels, 4 * (size_t)k->rows, "labels") : NULL;
        float *d = k->kind == RED_XENT && n ? dd_dev(k->d, F * n, "softmax_xent dlogits") : NULL;
        if (k->rows > 0 && (!lab || (k->kind == RED_XENT && n && !d))) return;
        if (n) v = k->kind == RED_XENT ? xent_rows(k, x, lab, d) : correct_rows(k, x, lab);
    } else if (k->kind == RED_MSE) {
        const float *t = n ? dd_dev(k->t, F * n, "mse targets") : NULL;
        float *d = n ? dd_dev(k->d, F * n, "mse dout") : NULL;
        if (n && (!t || !d)) return;
        for (size_t i = 0; i < n; i++) {
            float e = x[i] - t[i];
            v += (double)e * e;
            d[i] = k->scale * 2.0f * e;
        }
    } else {
        for (size_t i = 0; i < n; i++)
            v += k->kind == RED_SUMSQ ? (double)x[i] * x[i] : (isfinite(x[i]) ? 0.0 : 1.0);
    }
    out[HPCTI_K_MAX_BLOCKS] = v;
}

static int reduce(void *stream, struct red_arg k, const char *what)
{
    dd_enqueue((cudaStream_t)stream, what, reduce_task, &k, sizeof k);
    return (int)dd_sticky(); /* as cudaGetLastError after a launch */
}

int hpcti_k_softmax_xent(void *stream, const float *logits, const int32_t *labels, float *dlogits,
                         int rows, int cols, float scale, double *scratch)
{
    return reduce(stream,
                  (struct red_arg){.x = logits,
                                   .labels = labels,
                                   .d = dlogits,
                                   .scratch = scratch,
                                   .rows = rows,
                                   .cols = cols,
                                   .kind = RED_XENT,
                                   .scale = scale},
                  "softmax_xent_kernel");
}

int hpcti_k_count_correct(void *stream, const float *logits, const int32_t *labels, int rows,
                          int cols, double *scratch)
{
    return reduce(stream,
                  (struct red_arg){.x = logits,
                                   .labels = labels,
                                   .scratch = scratch,
                                   .rows = rows,
                                   .cols = cols,
                                   .kind = RED_CORRECT},
                  "count_correct_kernel");
}

int hpcti_k_mse(void *stream, const float *out, const float *targets, float *dout, size_t n,
                float scale, double *scratch)
{
    return reduce(stream,
                  (struct red_arg){.x = out,
                                   .t = targets,
                                   .d = dout,
                                   .scratch = scratch,
                                   .n = n,
                                   .kind = RED_MSE,
                                   .scale = scale},
                  "mse_kernel");
}

int hpcti_k_sumsq(void *stream, const float *x, size_t n, double *scratch)
{
    return reduce(stream, (struct red_arg){.x = x, .scratch = scratch, .n = n, .kind = RED_SUMSQ},
                  "sumsq_kernel");
}

int hpcti_k_count_nonfinite(void *stream, const float *x, size_t n, double *scratch)
{
    return reduce(stream,
                  (struct red_arg){.x = x, .scratch = scratch, .n = n, .kind = RED_NONFINITE},
                  "count_nonfinite_kernel");
}
