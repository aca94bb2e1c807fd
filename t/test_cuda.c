/* test_cuda.c: the cuda backend against the cpu backend: every op of the ops table on random
 * data, then whole models (loss, gradients, optimizer steps) on both backends from one seed.
 * Skips without --with-cuda, or when no CUDA device can be used (with the CUDA reason).
 *
 * Tolerances (absolute unless said): gemm 1e-4 (k <= 53) and 2e-3 (k = 784); element-wise
 * ops and activations 2e-6 relative (tanhf/expf differ by a few ulps between host and
 * device); double-precision reductions 1e-9 relative (summation order only); counts and
 * finiteness exact; models 1e-4 relative on losses and 1e-4 on parameters after 10 steps.
 * Also: reductions over n = 2^24 and 2^24 + 3 (past the block cap: grid-stride loops),
 * softmax over 100,003 rows, the CUDA-aware cross-node sum (bit for bit against the host
 * engine's), and a faulting kernel surfacing as HPCT_ERR_DEVICE.
 * Convolution layers: im2col, col2im, window_fwd/bwd and channel_bias_grad bit for bit (both
 * backends run kernels/conv_math.h's formulas in one order), channel_bias_act 2e-6 relative,
 * on geometries made by the model's own layer code (1-d, 2-d, 3-d; strides 1, 2, 3; same and
 * valid; max pooling with ties and a NaN); a CNN on both backends (outputs, loss, gradients
 * 1e-4; 5 SGD steps 1e-4; device-resident inputs bit for bit); a conv kernel given host
 * memory faulting, in a child process. */
#include "config.h"
#include "hpctrain.h"
#include "lib/tap.h"

#ifndef HPCT_HAVE_CUDA
int main(void)
{
    tap_skip_all("built without --with-cuda");
}
#else
#include "../lib/core/core.h"
#include "../lib/device/ops.h"
#include "../kernels/kernels.h"
#include "../lib/model/layer.h"

#include <errno.h>
#include <math.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const struct hpcti_ops *cpu = &hpcti_cpu_ops, *gpu = &hpcti_cuda_ops;
static hpct_ctx_t cctx, gctx; /* cpu and cuda contexts */
static uint64_t lcg = 12345;

static float uniform(float lo, float hi)
{
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (hi - lo) * (float)((lcg >> 40) & 0xffffff) / 16777216.0f;
}

static float *rand_host(size_t n, float lo, float hi)
{
    float *p = malloc(sizeof *p * (n ? n : 1));
    for (size_t i = 0; i < n; i++) p[i] = uniform(lo, hi);
    return p;
}

/* A device copy of host [n]. */
static void *dev_copy(const void *host, size_t bytes)
{
    void *d = gpu->alloc(gctx, bytes);
    if (!d) tap_bail("cuda alloc of %zu bytes: %s", bytes, hpct_last_error(gctx));
    gpu->to_device(gctx, d, host, bytes);
    return d;
}

/* Largest |got - want| / max(1, |want|) between a device array and a host array. */
static double max_rel_diff(const float *dev, const float *want, size_t n)
{
    float *got = malloc(sizeof *got * (n ? n : 1));
    gpu->to_host(gctx, got, dev, sizeof *got * n);
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - want[i]) / fmax(1.0, fabs(want[i]));
        if (!(d <= worst)) worst = d; /* NaN sticks */
    }
    free(got);
    return worst;
}

/* The value-returning ops, NaN (or -1) after a failure so the comparison fails. */
static double xent(const struct hpcti_ops *o, hpct_ctx_t c, const float *x, const int32_t *lab,
                   float *dx, int rows, int cols, float scale)
{
    double v = NAN;
    if (o->softmax_xent(c, x, lab, dx, rows, cols, scale, &v)) tap_diag("%s", hpct_last_error(c));
    return v;
}

static long correct(const struct hpcti_ops *o, hpct_ctx_t c, const float *x, const int32_t *lab,
                    int rows, int cols)
{
    long v = -1;
    if (o->count_correct(c, x, lab, rows, cols, &v)) tap_diag("%s", hpct_last_error(c));
    return v;
}

static double mse(const struct hpcti_ops *o, hpct_ctx_t c, const float *out, const float *t,
                  float *d, size_t n, float scale)
{
    double v = NAN;
    if (o->mse(c, out, t, d, n, scale, &v)) tap_diag("%s", hpct_last_error(c));
    return v;
}

static double sumsq(const struct hpcti_ops *o, hpct_ctx_t c, const float *x, size_t n)
{
    double v = NAN;
    if (o->sumsq(c, x, n, &v)) tap_diag("%s", hpct_last_error(c));
    return v;
}

static int finite_on(const struct hpcti_ops *o, hpct_ctx_t c, const float *x, size_t n)
{
    int v = -1;
    if (o->all_finite(c, x, n, &v)) tap_diag("%s", hpct_last_error(c));
    return v;
}

static double rel(double got, double want)
{
    return fabs(got - want) / fmax(1e-30, fabs(want));
}

static void test_memory(void)
{
    size_t n = 1000;
    float *d = gpu->alloc(gctx, n * sizeof(float)), *zeros = calloc(n, sizeof(float));
    tap_ok(d && max_rel_diff(d, zeros, n) == 0, "alloc returns zero-filled device memory");
    float *h = rand_host(n, -1, 1);
    gpu->to_device(gctx, d, h, n * sizeof(float));
    tap_ok(max_rel_diff(d, h, n) == 0, "to_device then to_host round-trips exactly");
    gpu->free(gctx, d);
    free(zeros);
    free(h);
}

/* A failed cudaMallocHost that is not a shortage of memory is a device error, named (the
 * double can make it fail so; a GPU cannot be asked to). */
static void test_pinned_failure(void)
{
#ifdef HPCT_CUDA_DOUBLE
    setenv("CUDA_DOUBLE_FAIL_MALLOC_HOST", "1", 1);
    void *p = gpu->alloc_host(gctx, 64);
    unsetenv("CUDA_DOUBLE_FAIL_MALLOC_HOST");
    tap_ok(!p && strstr(hpct_last_error(gctx), "cudaMallocHost on CUDA device") &&
               !strstr(hpct_last_error(gctx), "bytes failed"),
           "cudaMallocHost failing for another reason than memory is a device error: %s",
           hpct_last_error(gctx));
    if (p) gpu->free_host(gctx, p);
#else
    tap_skip(1, "only the device double can make cudaMallocHost fail for another reason");
#endif
}

static void check_gemm(int ta, int tb, int m, int n, int k, float beta, double tol)
{
    float alpha = 0.7f;
    float *a = rand_host((size_t)m * k, -1, 1), *b = rand_host((size_t)k * n, -1, 1);
    float *c = rand_host((size_t)m * n, -1, 1);
    float *da = dev_copy(a, sizeof(float) * m * k), *db = dev_copy(b, sizeof(float) * k * n);
    float *dc = dev_copy(c, sizeof(float) * m * n);
    cpu->gemm(cctx, ta, tb, m, n, k, alpha, a, b, beta, c);
    gpu->gemm(gctx, ta, tb, m, n, k, alpha, da, db, beta, dc);
    double d = max_rel_diff(dc, c, (size_t)m * n);
    tap_ok(d <= tol, "gemm ta=%d tb=%d [%d x %d x %d] beta=%g: max diff %.2e <= %.0e", ta, tb, m, n,
           k, beta, d, tol);
    gpu->free(gctx, da), gpu->free(gctx, db), gpu->free(gctx, dc);
    free(a), free(b), free(c);
}

static void test_gemm(void)
{
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            check_gemm(ta, tb, 37, 29, 53, 0.0f, 1e-4);
            check_gemm(ta, tb, 37, 29, 53, 0.5f, 1e-4);
        }
    check_gemm(0, 1, 128, 512, 784, 0.0f, 2e-3); /* the MLP's first layer */
}

static void test_activations(void)
{
    static const char *names[] = {"identity", "relu", "tanh", "gelu"};
    int rows = 33, cols = 70;
    size_t n = (size_t)rows * cols;
    for (int act = 0; act < 4; act++) {
        float *z = rand_host(n, -3, 3), *bias = rand_host((size_t)cols, -1, 1),
              *y = rand_host(n, 0, 0);
        float *dz = dev_copy(z, n * 4), *db = dev_copy(bias, (size_t)cols * 4),
              *dy = dev_copy(y, n * 4);
        float *gy = act ? dy : dz; /* identity: y aliases z, as the model does */
        cpu->bias_act(cctx, act, z, bias, act ? y : z, rows, cols);
        gpu->bias_act(gctx, act, dz, db, gy, rows, cols);
        double d = fmax(max_rel_diff(dz, z, n), max_rel_diff(gy, act ? y : z, n));
        tap_ok(d <= 2e-6, "bias_act %s [%d, %d]: max diff %.2e", names[act], rows, cols, d);

        float *up = rand_host(n, -1, 1), *out = rand_host(n, 0, 0);
        float *dup = dev_copy(up, n * 4);
        cpu->act_backward(cctx, act, z, act ? y : z, up, out, n);
        gpu->act_backward(gctx, act, dz, gy, dup, dup, n); /* in place, as the model calls it */
        d = max_rel_diff(dup, out, n);
        tap_ok(d <= 2e-6, "act_backward %s (dz aliases dy): max diff %.2e", names[act], d);
        gpu->free(gctx, dz), gpu->free(gctx, db), gpu->free(gctx, dy), gpu->free(gctx, dup);
        free(z), free(bias), free(y), free(up), free(out);
    }
}

static void test_bias_grad(void)
{
    int rows = 300, cols = 45;
    float *g = rand_host((size_t)rows * cols, -1, 1), *b = rand_host((size_t)cols, -1, 1);
    float *dg = dev_copy(g, sizeof(float) * rows * cols),
          *dbias = dev_copy(b, sizeof(float) * cols);
    for (int acc = 1; acc >= 0; acc--) {
        cpu->bias_grad(cctx, g, b, rows, cols, acc);
        gpu->bias_grad(gctx, dg, dbias, rows, cols, acc);
        double d = max_rel_diff(dbias, b, (size_t)cols);
        tap_ok(d <= 1e-6, "bias_grad accumulate=%d [%d, %d]: max diff %.2e", acc, rows, cols, d);
    }
    gpu->free(gctx, dg), gpu->free(gctx, dbias);
    free(g), free(b);
}

static void check_softmax(int rows, int cols, float spread)
{
    size_t n = (size_t)rows * cols;
    float *x = rand_host(n, -spread, spread), *dx = rand_host(n, 0, 0);
    int32_t *lab = malloc(sizeof *lab * (size_t)rows);
    for (int r = 0; r < rows; r++) lab[r] = (int32_t)(uniform(0, 1) * cols) % cols;
    float *gx = dev_copy(x, n * 4), *gdx = dev_copy(dx, n * 4);
    int32_t *glab = dev_copy(lab, sizeof *lab * (size_t)rows);
    double want = xent(cpu, cctx, x, lab, dx, rows, cols, 0.25f);
    double got = xent(gpu, gctx, gx, glab, gdx, rows, cols, 0.25f);
    tap_ok(rel(got, want) <= 1e-9, "softmax_xent loss [%d, %d], logits +-%g: %.10g vs %.10g", rows,
           cols, spread, got, want);
    double d = max_rel_diff(gdx, dx, n);
    tap_ok(d <= 2e-6, "softmax_xent dlogits [%d, %d]: max diff %.2e", rows, cols, d);

    /* Integer logits make ties; the first maximum must win on both backends. */
    for (size_t i = 0; i < n; i++) x[i] = floorf(x[i] / spread * 3);
    gpu->to_device(gctx, gx, x, n * 4);
    long cw = correct(cpu, cctx, x, lab, rows, cols);
    tap_is_int(correct(gpu, gctx, gx, glab, rows, cols), cw, "count_correct [%d, %d] with ties",
               rows, cols);
    gpu->free(gctx, gx), gpu->free(gctx, gdx), gpu->free(gctx, glab);
    free(x), free(dx), free(lab);
}

static void test_reductions(void)
{
    check_softmax(200, 10, 5);
    check_softmax(7, 1000, 40);

    size_t n = 100003;
    float *o = rand_host(n, -2, 2), *t = rand_host(n, -2, 2), *d = rand_host(n, 0, 0);
    float *go = dev_copy(o, n * 4), *gt = dev_copy(t, n * 4), *gd = dev_copy(d, n * 4);
    double want = mse(cpu, cctx, o, t, d, n, 1.0f / (float)n);
    double got = mse(gpu, gctx, go, gt, gd, n, 1.0f / (float)n);
    tap_ok(rel(got, want) <= 1e-9, "mse sum over %zu: %.12g vs %.12g", n, got, want);
    double diff = max_rel_diff(gd, d, n);
    tap_ok(diff <= 2e-6, "mse dout: max diff %.2e", diff);

    want = sumsq(cpu, cctx, o, n);
    got = sumsq(gpu, gctx, go, n);
    tap_ok(rel(got, want) <= 1e-9, "sumsq over %zu: %.12g vs %.12g", n, got, want);
    tap_ok(sumsq(gpu, gctx, go, 0) == 0.0, "sumsq of 0 elements is 0");

    tap_is_int(finite_on(gpu, gctx, go, n), 1, "all_finite on finite data");
    tap_is_int(finite_on(gpu, gctx, go, 0), 1, "all_finite on 0 elements");
    float nan = NAN, inf = -INFINITY;
    gpu->to_device(gctx, go + n - 1, &nan, 4);
    tap_is_int(finite_on(gpu, gctx, go, n), 0, "all_finite sees a NaN in the last element");
    gpu->to_device(gctx, go + n - 1, &o[n - 1], 4);
    gpu->to_device(gctx, go + 17, &inf, 4);
    tap_is_int(finite_on(gpu, gctx, go, n), 0, "all_finite sees -Inf");

    gpu->to_device(gctx, go + 17, &o[17], 4); /* undo the -Inf */
    cpu->scale(cctx, o, -0.37f, n);
    gpu->scale(gctx, go, -0.37f, n);
    diff = max_rel_diff(go, o, n);
    tap_ok(diff <= 2e-6, "scale by -0.37: max diff %.2e", diff);
    gpu->to_device(gctx, go + 5, &nan, 4);
    gpu->scale(gctx, go, 0.0f, n);
    memset(o, 0, n * 4);
    tap_ok(max_rel_diff(go, o, n) == 0, "scale by 0 clears everything, NaN included");
    gpu->free(gctx, go), gpu->free(gctx, gt), gpu->free(gctx, gd);
    free(o), free(t), free(d);
}

static void test_optimizers(void)
{
    size_t n = 5000;
    float *p = rand_host(n, -1, 1), *g = rand_host(n, -1, 1), *v = rand_host(n, 0, 0);
    float *m = rand_host(n, 0, 0);
    float *gp = dev_copy(p, n * 4), *gg = dev_copy(g, n * 4), *gv = dev_copy(v, n * 4);
    float *gm = dev_copy(m, n * 4);
    for (int step = 0; step < 3; step++) {
        cpu->sgd(cctx, p, g, v, n, 0.1f, 0.9f, 1, 1e-2f, 0.5f);
        gpu->sgd(gctx, gp, gg, gv, n, 0.1f, 0.9f, 1, 1e-2f, 0.5f);
    }
    double d = fmax(max_rel_diff(gp, p, n), max_rel_diff(gv, v, n));
    tap_ok(d <= 2e-6, "sgd nesterov momentum + weight decay, 3 steps: max diff %.2e", d);
    cpu->sgd(cctx, p, g, NULL, n, 0.1f, 0.9f, 1, 0.0f, 1.0f);
    gpu->sgd(gctx, gp, gg, NULL, n, 0.1f, 0.9f, 1, 0.0f, 1.0f);
    d = max_rel_diff(gp, p, n);
    tap_ok(d <= 2e-6, "sgd without a momentum buffer (v NULL): max diff %.2e", d);
    for (int t = 1; t <= 3; t++) {
        float c1 = 1 - powf(0.9f, (float)t), c2 = 1 - powf(0.999f, (float)t);
        cpu->adamw(cctx, p, g, m, v, n, 1e-2f, 0.9f, 0.999f, 1e-8f, 0.01f, c1, c2, 0.5f);
        gpu->adamw(gctx, gp, gg, gm, gv, n, 1e-2f, 0.9f, 0.999f, 1e-8f, 0.01f, c1, c2, 0.5f);
    }
    d = fmax(max_rel_diff(gp, p, n), fmax(max_rel_diff(gm, m, n), max_rel_diff(gv, v, n)));
    tap_ok(d <= 2e-6, "adamw, 3 steps (p, m, v): max diff %.2e", d);
    gpu->free(gctx, gp), gpu->free(gctx, gg), gpu->free(gctx, gv), gpu->free(gctx, gm);
    free(p), free(g), free(v), free(m);
}

/* Sizes past the reductions' block cap (1024 blocks x 256 threads = 2^18 per pass), so every
 * thread's grid-stride loop runs many times; and a softmax over more rows than one pass. */
static void test_large(void)
{
    size_t sizes[] = {(size_t)1 << 24, ((size_t)1 << 24) + 3};
    for (int i = 0; i < 2; i++) {
        size_t n = sizes[i];
        float *x = rand_host(n, -1, 1), *t = rand_host(n, -1, 1), *d = malloc(n * 4);
        float *gx = dev_copy(x, n * 4), *gt = dev_copy(t, n * 4), *gd = gpu->alloc(gctx, n * 4);
        double want = sumsq(cpu, cctx, x, n), got = sumsq(gpu, gctx, gx, n);
        tap_ok(rel(got, want) <= 1e-9, "sumsq over n = %zu: %.12g vs %.12g", n, got, want);
        want = mse(cpu, cctx, x, t, d, n, 1.0f / (float)n);
        got = mse(gpu, gctx, gx, gt, gd, n, 1.0f / (float)n);
        tap_ok(rel(got, want) <= 1e-9, "mse over n = %zu: %.12g vs %.12g", n, got, want);
        float nan = NAN;
        gpu->to_device(gctx, gx + n - 1, &nan, 4);
        tap_is_int(finite_on(gpu, gctx, gx, n), 0, "all_finite sees a NaN at element %zu of %zu",
                   n - 1, n);
        gpu->free(gctx, gx), gpu->free(gctx, gt), gpu->free(gctx, gd);
        free(x), free(t), free(d);
    }
    check_softmax(100003, 10, 8); /* 100,003 rows: 8 warps x 1024 blocks, then strided */
}

/* The CUDA-aware cross-node sum (hpcti_k_rank_sum) against the host engine's owner sum
 * (reduce.c: first term copied, the others added in rank order, then times 1/W): the same
 * bits, for 3 nodes with this rank second, over n = 100,003 (grid-stride). */
static void test_rank_sum(void)
{
    enum { NODES = 3, ME = 1 };
    size_t n = 100003;
    float *own = rand_host(n, -4, 4), *slots = rand_host(2 * n, -4, 4), *want = malloc(n * 4);
    float inv = 1.0f / 6.0f;
    for (size_t i = 0; i < n; i++) {
        float acc = slots[i]; /* rank 0's term, then mine, then rank 2's */
        acc += own[i];
        acc += slots[n + i];
        want[i] = acc * inv;
    }
    float *gown = dev_copy(own, n * 4), *gslots = dev_copy(slots, 2 * n * 4);
    int err = hpcti_k_rank_sum(NULL, gown, gslots, NODES, ME, n, inv);
    gpu->to_host(gctx, own, gown, n * 4);
    tap_ok(!err && !memcmp(own, want, n * 4),
           "rank_sum_kernel (3 nodes, n = 100,003) = the host engine's rank-order sum, bit for "
           "bit");
    gpu->free(gctx, gown), gpu->free(gctx, gslots);
    free(own), free(slots), free(want);
}

/* A kernel that faults (a bogus device address) surfaces as HPCT_ERR_DEVICE naming the CUDA
 * call, and the evaluation that follows fails instead of returning a count. Last: the fault
 * leaves the CUDA context unusable. */
static void test_forced_failure(hpct_model_t gm, const float *x, const void *t)
{
    hpct_status_t s = gpu->scale(gctx, (float *)(uintptr_t)0x1000, 2.0f, 1 << 20);
    if (!s) s = gpu->sync(gctx);
    tap_is_int(s, HPCT_ERR_DEVICE, "a faulting kernel surfaces as HPCT_ERR_DEVICE");
    tap_ok(strstr(hpct_last_error(gctx), "cuda") != NULL,
           "the detail names the failing CUDA call: %s", hpct_last_error(gctx));
    double loss, acc;
    tap_ok(hpct_model_evaluate(gm, x, t, 8, &loss, &acc) != HPCT_SUCCESS,
           "hpct_model_evaluate after a device fault returns an error, not a count");
    float *z = gpu->alloc(gctx, 64); /* NULL now: the CUDA context is unusable */
    s = gpu->bias_act(gctx, 1, z, z, z, 4, 4);
    tap_ok(s == HPCT_ERR_DEVICE && strstr(hpct_last_error(gctx), "failed"),
           "a kernel launch after the fault returns HPCT_ERR_DEVICE naming the failing call "
           "(cudaSetDevice or the launch): %s",
           hpct_last_error(gctx));
}

/* A model on one backend: 12 inputs, gelu/tanh/relu hidden layers, 5 outputs. */
static hpct_model_t make_model(hpct_ctx_t ctx, hpct_loss_t loss, int batch)
{
    hpct_model_t m;
    if (hpct_model_create(ctx, 12, &m) ||
        hpct_model_add_dense(m, 32, HPCT_ACT_GELU, HPCT_INIT_AUTO) ||
        hpct_model_add_dense(m, 16, HPCT_ACT_TANH, HPCT_INIT_AUTO) ||
        hpct_model_add_dense(m, 24, HPCT_ACT_RELU, HPCT_INIT_AUTO) ||
        hpct_model_add_dense(m, 5, HPCT_ACT_IDENTITY, HPCT_INIT_AUTO) ||
        hpct_model_set_loss(m, loss) || hpct_model_build(m, batch))
        tap_bail("model setup: %s", hpct_last_error(ctx));
    return m;
}

/* Largest difference between the parameters of a cpu and a cuda model. */
static double param_diff(hpct_model_t cm, hpct_model_t gm)
{
    hpct_params_t cp, gp;
    hpct_model_params(cm, &cp);
    hpct_model_params(gm, &gp);
    int nb;
    size_t total;
    hpct_params_size(cp, &nb, &total);
    double worst = 0;
    for (int i = 0; i < nb; i++) {
        float *cpar, *gpar, *cg, *gg;
        size_t n;
        const char *name;
        hpct_params_get(cp, i, &name, &cpar, &cg, &n);
        hpct_params_get(gp, i, &name, &gpar, &gg, &n);
        worst = fmax(worst, max_rel_diff(gpar, cpar, n));
    }
    return worst;
}

/* Train both backends 10 steps from one seed; compare losses, norms and parameters. */
static void check_training(hpct_loss_t loss, hpct_optimizer_kind_t kind, const char *what)
{
    enum { BATCH = 64, STEPS = 10 };
    hpct_model_t cm = make_model(cctx, loss, BATCH), gm = make_model(gctx, loss, BATCH);
    tap_ok(param_diff(cm, gm) == 0, "%s: same seed, identical initial weights", what);
    hpct_optim_config_t oc = HPCT_OPTIM_CONFIG_INITIALIZER;
    oc.kind = kind;
    oc.lr = kind == HPCT_OPT_SGD ? 0.05f : 3e-3f;
    oc.momentum = 0.9f;
    oc.eps = 1e-3f; /* keeps AdamW from amplifying rounding in near-zero gradients */
    oc.clip_norm = 5.0f;
    hpct_params_t cp, gp;
    hpct_optimizer_t co, go;
    hpct_model_params(cm, &cp), hpct_model_params(gm, &gp);
    if (hpct_optimizer_create(cp, &oc, &co) || hpct_optimizer_create(gp, &oc, &go))
        tap_bail("optimizer setup failed");
    float *x = rand_host((size_t)BATCH * 12, -2, 2), *ty = rand_host((size_t)BATCH * 5, -1, 1);
    int32_t labels[BATCH];
    for (int i = 0; i < BATCH; i++)
        labels[i] = (int32_t)(fabsf(x[i * 12]) * 2.4f + (x[i * 12 + 1] > 0)) % 5;
    const void *t = loss == HPCT_LOSS_MSE ? (const void *)ty : (const void *)labels;
    double worst_loss = 0, worst_norm = 0;
    float first = 0, last = 0;
    for (int s = 0; s < STEPS; s++) {
        float lc, lg;
        double nc, ng;
        if (hpct_model_loss_grad(cm, x, t, BATCH, 0, &lc) ||
            hpct_model_loss_grad(gm, x, t, BATCH, 0, &lg))
            tap_bail("loss_grad: %s / %s", hpct_last_error(cctx), hpct_last_error(gctx));
        hpct_params_grad_norm(cp, &nc), hpct_params_grad_norm(gp, &ng);
        worst_loss = fmax(worst_loss, rel(lg, lc));
        worst_norm = fmax(worst_norm, rel(ng, nc));
        hpct_optimizer_step(co), hpct_optimizer_step(go);
        if (s == 0) first = lc;
        last = lc;
    }
    tap_ok(worst_loss <= 1e-4 && last < first,
           "%s: losses agree over %d steps (worst %.2e; %g -> %g)", what, STEPS, worst_loss, first,
           last);
    tap_ok(worst_norm <= 1e-4, "%s: gradient norms agree (worst %.2e)", what, worst_norm);
    double d = param_diff(cm, gm);
    tap_ok(d <= 1e-4, "%s: parameters agree after %d steps (max diff %.2e)", what, STEPS, d);
    double cl, ca, gl, ga;
    hpct_model_evaluate(cm, x, t, BATCH, &cl, &ca);
    hpct_model_evaluate(gm, x, t, BATCH, &gl, &ga);
    tap_ok(rel(gl, cl) <= 1e-4 && ga == ca,
           "%s: evaluate agrees (loss %g vs %g, accuracy %g vs %g)", what, gl, cl, ga, ca);
    hpct_optimizer_destroy(co), hpct_optimizer_destroy(go);
    hpct_model_destroy(cm), hpct_model_destroy(gm);
    free(x), free(ty);
}

/* Every gradient of m copied to the host, back to back [total]. */
static float *grads_host(hpct_model_t m)
{
    hpct_params_t p;
    int nb;
    size_t total, off = 0;
    hpct_model_params(m, &p);
    hpct_params_size(p, &nb, &total);
    float *h = malloc(total * sizeof *h);
    for (int i = 0; i < nb; i++) {
        float *par, *grad;
        size_t n;
        const char *name;
        hpct_params_get(p, i, &name, &par, &grad, &n);
        if (gpu->to_host(gctx, h + off, grad, n * sizeof *h)) tap_bail("%s", hpct_last_error(gctx));
        off += n;
    }
    return h;
}

/* Inputs and targets in device memory are read in place (issue 33): the loss, every gradient,
 * the evaluation and the forward output are bit for bit those of the same arrays on the host.
 * Under the device double a host read of device memory is a fault naming it; on a GPU it
 * would read garbage or fault. A device label outside the classes is refused, named. */
static void test_device_arrays(hpct_loss_t loss, const char *what)
{
    enum { BATCH = 24, OUT = 5 };
    hpct_model_t m = make_model(gctx, loss, BATCH);
    float *x = rand_host((size_t)BATCH * 12, -2, 2), *ty = rand_host((size_t)BATCH * OUT, -1, 1);
    int32_t labels[BATCH];
    for (int i = 0; i < BATCH; i++) labels[i] = (int32_t)(i * 7 % OUT);
    int ce = loss == HPCT_LOSS_SOFTMAX_CE;
    const void *t = ce ? (const void *)labels : (const void *)ty;
    size_t tbytes = ce ? sizeof labels : sizeof(float) * BATCH * OUT;
    float *dx = dev_copy(x, sizeof(float) * BATCH * 12);
    void *dt = dev_copy(t, tbytes);
    tap_ok(gpu->is_device(gctx, dx) && !gpu->is_device(gctx, x) && !cpu->is_device(cctx, x),
           "%s: cudaPointerGetAttributes tells device memory from host memory", what);
    float lh = 0, ld = -1;
    if (hpct_model_loss_grad(m, x, t, BATCH, 0, &lh)) tap_bail("%s", hpct_last_error(gctx));
    float *gh = grads_host(m);
    hpct_status_t s = hpct_model_loss_grad(m, dx, dt, BATCH, 0, &ld);
    float *gd = grads_host(m);
    hpct_params_t p;
    int nb;
    size_t total;
    hpct_model_params(m, &p), hpct_params_size(p, &nb, &total);
    tap_ok(s == HPCT_SUCCESS && memcmp(&lh, &ld, sizeof lh) == 0 &&
               memcmp(gh, gd, total * sizeof *gh) == 0,
           "%s: x and targets in device memory: the loss (%g) and %zu gradients bit for bit", what,
           (double)ld, total);
    double el[2], ea[2];
    s = hpct_model_evaluate(m, x, t, BATCH, &el[0], &ea[0]);
    if (!s) s = hpct_model_evaluate(m, dx, dt, BATCH, &el[1], &ea[1]);
    tap_ok(s == HPCT_SUCCESS && el[0] == el[1] && ea[0] == ea[1],
           "%s: hpct_model_evaluate of device arrays: the same loss and accuracy (%s)", what,
           s ? hpct_last_error(gctx) : "ok");
    float outh[BATCH * OUT], outd[BATCH * OUT];
    float *dout = gpu->alloc(gctx, sizeof outd);
    s = hpct_model_forward(m, x, BATCH, outh);
    if (!s) s = hpct_model_forward(m, dx, BATCH, dout);
    if (!s) s = gpu->to_host(gctx, outd, dout, sizeof outd);
    tap_ok(s == HPCT_SUCCESS && memcmp(outh, outd, sizeof outh) == 0,
           "%s: hpct_model_forward from and into device memory: the same outputs", what);
    if (ce) {
        labels[3] = 7;
        gpu->to_device(gctx, dt, labels, sizeof labels);
        s = hpct_model_loss_grad(m, dx, dt, BATCH, 0, &ld);
        tap_ok(s == HPCT_ERR_INVALID_ARG && strstr(hpct_last_error(gctx), "label 7 of sample 3"),
               "%s: a device label outside the classes is refused, named: %s", what,
               hpct_last_error(gctx));
    }
    gpu->free(gctx, dout), gpu->free(gctx, dx), gpu->free(gctx, dt);
    free(gh), free(gd), free(x), free(ty);
    hpct_model_destroy(m);
}

/* Convolution layers (issue 32): the six ops they add to the ops table, cuda against cpu, on
 * the geometries lib/model/layers.c computes; then one CNN trained on both backends. */

/* A layer after a reshape of the inputs to [c, size...]: kind HPCTI_GEOM_*, out channels ch
 * (conv), kernel, window or factor k, stride s, "same" padding (conv); ties: integer inputs
 * (equal maxima) with one NaN. */
struct geom_case {
    const char *name;
    int dims, c, size[3];
    int kind, ch, k, s, same, ties;
};

static const struct geom_case conv_cases[] = {
    {"1-d conv same s1", 1, 2, {7}, HPCTI_GEOM_CONV, 3, 3, 1, 1, 0},
    {"1-d conv valid s2", 1, 3, {9}, HPCTI_GEOM_CONV, 2, 3, 2, 0, 0},
    {"2-d conv same s2, odd sizes", 2, 2, {7, 5}, HPCTI_GEOM_CONV, 3, 3, 2, 1, 0},
    {"2-d conv valid s1", 2, 3, {6, 6}, HPCTI_GEOM_CONV, 4, 3, 1, 0, 0},
    {"2-d conv kernel 5 over a 2x3 input, same s2", 2, 1, {2, 3}, HPCTI_GEOM_CONV, 2, 5, 2, 1, 0},
    {"3-d conv same s1", 3, 2, {3, 4, 5}, HPCTI_GEOM_CONV, 2, 3, 1, 1, 0},
    {"3-d conv valid s2", 3, 1, {5, 4, 6}, HPCTI_GEOM_CONV, 2, 2, 2, 0, 0},
};

static const struct geom_case window_cases[] = {
    {"1-d max pool 2/2, odd size", 1, 2, {9}, HPCTI_GEOM_MAXPOOL, 0, 2, 2, 0, 0},
    {"2-d max pool 3/2 overlapping, ties, a NaN", 2, 2, {7, 6}, HPCTI_GEOM_MAXPOOL, 0, 3, 2, 0, 1},
    {"2-d max pool 2/3 (gaps between windows)", 2, 1, {8, 7}, HPCTI_GEOM_MAXPOOL, 0, 2, 3, 0, 0},
    {"3-d max pool 2/2, ties, a NaN", 3, 2, {4, 4, 5}, HPCTI_GEOM_MAXPOOL, 0, 2, 2, 0, 1},
    {"2-d avg pool 2/1", 2, 3, {5, 6}, HPCTI_GEOM_AVGPOOL, 0, 2, 1, 0, 0},
    {"3-d avg pool 2/2", 3, 2, {4, 4, 5}, HPCTI_GEOM_AVGPOOL, 0, 2, 2, 0, 0},
    {"1-d upsample 3", 1, 2, {5}, HPCTI_GEOM_UPSAMPLE, 0, 3, 0, 0, 0},
    {"2-d upsample 2", 2, 2, {3, 4}, HPCTI_GEOM_UPSAMPLE, 0, 2, 0, 0, 0},
    {"3-d upsample 2", 3, 1, {2, 2, 3}, HPCTI_GEOM_UPSAMPLE, 0, 2, 0, 0, 0},
};

#define NCONV   ((int)(sizeof conv_cases / sizeof *conv_cases))
#define NWINDOW ((int)(sizeof window_cases / sizeof *window_cases))

/* The geometry of gc's layer as hpct_model_add_conv, _pool or _upsample compute it (a cpu
 * model of reshape and that layer, not built), so the ops see what a model passes them. */
static struct hpcti_geom model_geom(const struct geom_case *gc)
{
    int features = gc->c;
    for (int j = 0; j < gc->dims; j++) features *= gc->size[j];
    hpct_model_t m;
    hpct_status_t s = hpct_model_create(cctx, features, &m);
    if (!s) s = hpct_model_add_reshape(m, gc->c, gc->dims, gc->size);
    if (!s && gc->kind == HPCTI_GEOM_CONV)
        s = hpct_model_add_conv(m, gc->ch, gc->k, gc->s, gc->same ? HPCT_PAD_SAME : HPCT_PAD_VALID,
                                HPCT_ACT_IDENTITY, HPCT_INIT_AUTO);
    else if (!s && gc->kind == HPCTI_GEOM_UPSAMPLE)
        s = hpct_model_add_upsample(m, gc->k, HPCT_ACT_IDENTITY);
    else if (!s)
        s = hpct_model_add_pool(m, gc->kind == HPCTI_GEOM_MAXPOOL ? HPCT_POOL_MAX : HPCT_POOL_AVG,
                                gc->k, gc->s, HPCT_ACT_IDENTITY);
    if (s) tap_bail("%s: %s", gc->name, hpct_last_error(cctx));
    struct hpcti_geom g = m->layers[1].g;
    hpct_model_destroy(m);
    return g;
}

/* "CxDxHxW" of the last dims sizes, into buf [64]. */
static const char *shape_text(char *buf, int c, const int *size, int dims)
{
    int used = snprintf(buf, 64, "%d", c);
    for (int j = 3 - dims; j < 3; j++)
        used += snprintf(buf + used, 64 - (size_t)used, "x%d", size[j]);
    return buf;
}

/* Elements of a device array whose bits differ from host want's (all of them when the copy
 * fails: a fault of the double surfaces there). */
static size_t bits_differ(const float *dev, const float *want, size_t n)
{
    float *got = malloc(sizeof *got * (n ? n : 1));
    size_t bad = 0;
    if (gpu->to_host(gctx, got, dev, sizeof *got * n)) {
        tap_diag("%s", hpct_last_error(gctx));
        bad = n ? n : 1;
    } else {
        for (size_t i = 0; i < n; i++) bad += memcmp(&got[i], &want[i], sizeof *got) != 0;
    }
    free(got);
    return bad;
}

/* The column matrix and its adjoint: both backends run conv_math.h's formulas in one order,
 * so the bits must agree. Outputs start as noise: an element left unwritten shows. Device
 * buffers are exactly their tensors' size, so the double names any access past them. */
static void check_columns(const struct geom_case *gc)
{
    enum { BATCH = 3 };
    struct hpcti_geom g = model_geom(gc);
    size_t nx = (size_t)BATCH * g.c_in * hpcti_geom_in_size(&g);
    size_t ncol = (size_t)BATCH * hpcti_geom_col_rows(&g) * hpcti_geom_out_size(&g);
    float *x = rand_host(nx, -1, 1), *col = rand_host(ncol, -9, 9);
    float *gx = dev_copy(x, nx * 4), *gcol = dev_copy(col, ncol * 4);
    char in[64], out[64];
    shape_text(in, g.c_in, g.in, gc->dims), shape_text(out, g.c_out, g.out, gc->dims);
    hpct_status_t s = cpu->im2col(cctx, &g, x, col, BATCH);
    if (!s) s = gpu->im2col(gctx, &g, gx, gcol, BATCH);
    size_t bad = s ? ncol : bits_differ(gcol, col, ncol);
    tap_ok(bad == 0, "im2col, %s (%s -> %s, pad %d): the same bits (%zu of %zu differ)", gc->name,
           in, out, g.pad[2], bad, ncol);

    float *dcol = rand_host(ncol, -1, 1), *dx = rand_host(nx, -9, 9);
    gpu->to_device(gctx, gcol, dcol, ncol * 4);
    gpu->to_device(gctx, gx, dx, nx * 4);
    s = cpu->col2im(cctx, &g, dcol, dx, BATCH);
    if (!s) s = gpu->col2im(gctx, &g, gcol, gx, BATCH);
    bad = s ? nx : bits_differ(gx, dx, nx);
    tap_ok(bad == 0, "col2im, %s: the same bits (%zu of %zu differ)", gc->name, bad, nx);
    gpu->free(gctx, gx), gpu->free(gctx, gcol);
    free(x), free(col), free(dcol), free(dx);
}

/* Pooling or upsampling forward and backward: the same bits. With ties, inputs are integers
 * (equal maxima in most windows: the first must win on both) and one is NaN (its windows'
 * outputs are NaN and their gradient goes to it). */
static void check_window(const struct geom_case *gc)
{
    enum { BATCH = 3 };
    struct hpcti_geom g = model_geom(gc);
    size_t nx = (size_t)BATCH * g.c_in * hpcti_geom_in_size(&g);
    size_t ny = (size_t)BATCH * g.c_out * hpcti_geom_out_size(&g);
    float *x = rand_host(nx, -3, 3), *y = rand_host(ny, -9, 9);
    if (gc->ties) {
        for (size_t i = 0; i < nx; i++) x[i] = floorf(x[i]);
        x[nx / 2 + 1] = NAN;
    }
    float *gx = dev_copy(x, nx * 4), *gy = dev_copy(y, ny * 4);
    char in[64], out[64];
    shape_text(in, g.c_in, g.in, gc->dims), shape_text(out, g.c_out, g.out, gc->dims);
    hpct_status_t s = cpu->window_fwd(cctx, &g, x, y, BATCH);
    if (!s) s = gpu->window_fwd(gctx, &g, gx, gy, BATCH);
    size_t bad = s ? ny : bits_differ(gy, y, ny), nans = 0;
    for (size_t i = 0; i < ny; i++) nans += y[i] != y[i];
    tap_ok(bad == 0 && (nans > 0) == (gc->ties != 0),
           "window_fwd, %s (%s -> %s): the same bits (%zu of %zu differ; %zu outputs NaN)",
           gc->name, in, out, bad, ny, nans);

    float *dy = rand_host(ny, -1, 1), *dx = rand_host(nx, -9, 9);
    float *gdy = dev_copy(dy, ny * 4), *gdx = dev_copy(dx, nx * 4);
    s = cpu->window_bwd(cctx, &g, x, dy, dx, BATCH);
    if (!s) s = gpu->window_bwd(gctx, &g, gx, gdy, gdx, BATCH);
    bad = s ? nx : bits_differ(gdx, dx, nx);
    tap_ok(bad == 0, "window_bwd, %s: the same bits (%zu of %zu differ)", gc->name, bad, nx);
    gpu->free(gctx, gx), gpu->free(gctx, gy), gpu->free(gctx, gdy), gpu->free(gctx, gdx);
    free(x), free(y), free(dy), free(dx);
}

/* z [batch, channels, spatial] += bias [channels] (bias NULL: none), y = act(z); identity
 * writes y over z, as the models do. tanh and GELU use tanhf: a few ulp apart on a GPU. */
static void check_channel_bias_act(int act, int with_bias, int batch, int channels, size_t spatial)
{
    static const char *names[] = {"identity", "relu", "tanh", "gelu"};
    size_t n = (size_t)batch * channels * spatial;
    float *z = rand_host(n, -3, 3), *y = rand_host(n, -9, 9);
    float *bias = rand_host((size_t)channels, -1, 1);
    float *gz = dev_copy(z, n * 4), *gy = dev_copy(y, n * 4);
    float *gb = dev_copy(bias, (size_t)channels * 4);
    hpct_status_t s = cpu->channel_bias_act(cctx, act, z, with_bias ? bias : NULL, act ? y : z,
                                            batch, channels, spatial);
    if (!s)
        s = gpu->channel_bias_act(gctx, act, gz, with_bias ? gb : NULL, act ? gy : gz, batch,
                                  channels, spatial);
    double d = s ? INFINITY : max_rel_diff(gz, z, n);
    if (act && !s) d = fmax(d, max_rel_diff(gy, y, n));
    tap_ok(d <= 2e-6, "channel_bias_act %s, %s [%d, %d, %zu]: max diff %.2e", names[act],
           with_bias ? "with bias" : "bias NULL", batch, channels, spatial, d);
    gpu->free(gctx, gz), gpu->free(gctx, gy), gpu->free(gctx, gb);
    free(z), free(y), free(bias);
}

/* Channel sums of dz in the cpu backend's order (samples, then positions): the same bits. */
static void check_channel_bias_grad(int batch, int channels, size_t spatial)
{
    size_t n = (size_t)batch * channels * spatial;
    float *dz = rand_host(n, -1, 1), *db = rand_host((size_t)channels, -1, 1);
    float *gdz = dev_copy(dz, n * 4), *gdb = dev_copy(db, (size_t)channels * 4);
    for (int acc = 1; acc >= 0; acc--) {
        hpct_status_t s = cpu->channel_bias_grad(cctx, dz, db, batch, channels, spatial, acc);
        if (!s) s = gpu->channel_bias_grad(gctx, gdz, gdb, batch, channels, spatial, acc);
        size_t bad = s ? (size_t)channels : bits_differ(gdb, db, (size_t)channels);
        tap_ok(bad == 0,
               "channel_bias_grad accumulate=%d [%d, %d, %zu]: the same bits (%zu of %d differ)",
               acc, batch, channels, spatial, bad, channels);
    }
    gpu->free(gctx, gdz), gpu->free(gctx, gdb);
    free(dz), free(db);
}

static void test_conv_ops(void)
{
    for (int i = 0; i < NCONV; i++) check_columns(&conv_cases[i]);
    for (int i = 0; i < NWINDOW; i++) check_window(&window_cases[i]);
    for (int act = 0; act < 4; act++) check_channel_bias_act(act, 1, 4, 6, 35);
    for (int act = 1; act < 4; act++) check_channel_bias_act(act, 0, 4, 1, 150); /* pooling */
    check_channel_bias_grad(3, 300, 7); /* more channels than one block of threads */
    check_channel_bias_grad(4, 5, 1000);
}

enum { CNN_IN = 2 * 16 * 16, CNN_OUT = 5 };

/* The CNN of the whole-model checks on one backend, softmax CE: [2, 16, 16] -> conv 4 k3 s1
 * same relu [4, 16, 16] -> max pool 2/2 [4, 8, 8] -> conv 6 k3 s2 valid tanh [6, 3, 3] ->
 * upsample 2 [6, 6, 6] -> avg pool 2/1 gelu [6, 5, 5] -> dense 5. */
static hpct_model_t make_cnn(hpct_ctx_t ctx, int batch)
{
    static const int hw[2] = {16, 16};
    hpct_model_t m;
    if (hpct_model_create(ctx, CNN_IN, &m) || hpct_model_add_reshape(m, 2, 2, hw) ||
        hpct_model_add_conv(m, 4, 3, 1, HPCT_PAD_SAME, HPCT_ACT_RELU, HPCT_INIT_AUTO) ||
        hpct_model_add_pool(m, HPCT_POOL_MAX, 2, 2, HPCT_ACT_IDENTITY) ||
        hpct_model_add_conv(m, 6, 3, 2, HPCT_PAD_VALID, HPCT_ACT_TANH, HPCT_INIT_AUTO) ||
        hpct_model_add_upsample(m, 2, HPCT_ACT_IDENTITY) ||
        hpct_model_add_pool(m, HPCT_POOL_AVG, 2, 1, HPCT_ACT_GELU) ||
        hpct_model_add_dense(m, CNN_OUT, HPCT_ACT_IDENTITY, HPCT_INIT_AUTO) ||
        hpct_model_set_loss(m, HPCT_LOSS_SOFTMAX_CE) || hpct_model_build(m, batch))
        tap_bail("CNN setup: %s", hpct_last_error(ctx));
    return m;
}

/* Gradient buffer i of the cpu model and of the cuda model: the largest difference. */
static double grad_diff(hpct_model_t cm, hpct_model_t gm, int i, const char **name, size_t *n)
{
    hpct_params_t cp, gp;
    float *cpar, *gpar, *cg, *gg;
    hpct_model_params(cm, &cp), hpct_model_params(gm, &gp);
    hpct_params_get(cp, i, name, &cpar, &cg, n);
    hpct_params_get(gp, i, name, &gpar, &gg, n);
    return max_rel_diff(gg, cg, *n);
}

/* Loss and gradients of one batch on both backends; bails when either fails. */
static void cnn_loss_grad(hpct_model_t cm, hpct_model_t gm, const float *x, const int32_t *t,
                          int batch, int accumulate, float *lc, float *lg)
{
    if (hpct_model_loss_grad(cm, x, t, batch, accumulate, lc) ||
        hpct_model_loss_grad(gm, x, t, batch, accumulate, lg))
        tap_bail("CNN loss_grad: %s / %s", hpct_last_error(cctx), hpct_last_error(gctx));
}

/* The CNN from one seed on both backends: outputs, loss, every gradient (tolerances of the
 * GEMMs with small k, 1e-4), 5 SGD steps; then device-resident inputs on the cuda one. */
static void test_cnn(void)
{
    enum { BATCH = 8, STEPS = 5 };
    hpct_model_t cm = make_cnn(cctx, BATCH), gm = make_cnn(gctx, BATCH);
    char desc[256];
    hpct_model_describe(cm, desc, sizeof desc);
    tap_ok(param_diff(cm, gm) == 0, "CNN %s: same seed, identical initial weights", desc);
    float *x = rand_host((size_t)BATCH * CNN_IN, -1, 1);
    int32_t labels[BATCH];
    for (int i = 0; i < BATCH; i++) labels[i] = (int32_t)(i * 3 % CNN_OUT);
    float outc[BATCH * CNN_OUT], outg[BATCH * CNN_OUT];
    if (hpct_model_forward(cm, x, BATCH, outc) || hpct_model_forward(gm, x, BATCH, outg))
        tap_bail("CNN forward: %s / %s", hpct_last_error(cctx), hpct_last_error(gctx));
    double d = 0;
    for (int i = 0; i < BATCH * CNN_OUT; i++)
        d = fmax(d, fabs((double)outg[i] - outc[i]) / fmax(1.0, fabs(outc[i])));
    tap_ok(d <= 1e-4, "CNN forward: the %d outputs agree (max diff %.2e)", BATCH * CNN_OUT, d);

    float lc, lg;
    cnn_loss_grad(cm, gm, x, labels, BATCH, 0, &lc, &lg);
    tap_ok(rel(lg, lc) <= 1e-4, "CNN loss_grad: the loss agrees (%g vs %g)", lg, lc);
    hpct_params_t cp;
    int nb;
    size_t total, n;
    const char *name;
    hpct_model_params(cm, &cp), hpct_params_size(cp, &nb, &total);
    for (int i = 0; i < nb; i++) {
        d = grad_diff(cm, gm, i, &name, &n);
        tap_ok(d <= 1e-4, "CNN loss_grad: %s's gradient (%zu values) agrees (max diff %.2e)", name,
               n, d);
    }
    cnn_loss_grad(cm, gm, x, labels, BATCH, 1, &lc, &lg);
    d = 0;
    for (int i = 0; i < nb; i++) d = fmax(d, grad_diff(cm, gm, i, &name, &n));
    tap_ok(d <= 1e-4, "CNN loss_grad accumulate=1: the %zu summed gradients agree (max diff %.2e)",
           total, d);

    hpct_optim_config_t oc = HPCT_OPTIM_CONFIG_INITIALIZER;
    oc.kind = HPCT_OPT_SGD;
    oc.lr = 0.05f;
    oc.momentum = 0.9f;
    hpct_params_t gp;
    hpct_optimizer_t co, go;
    hpct_model_params(gm, &gp);
    if (hpct_optimizer_create(cp, &oc, &co) || hpct_optimizer_create(gp, &oc, &go))
        tap_bail("CNN optimizer setup failed");
    double worst = 0;
    float first = 0, last = 0;
    for (int s = 0; s < STEPS; s++) {
        cnn_loss_grad(cm, gm, x, labels, BATCH, 0, &lc, &lg);
        worst = fmax(worst, rel(lg, lc));
        if (hpct_optimizer_step(co) || hpct_optimizer_step(go))
            tap_bail("CNN optimizer step: %s / %s", hpct_last_error(cctx), hpct_last_error(gctx));
        if (s == 0) first = lc;
        last = lc;
    }
    tap_ok(worst <= 1e-4, "CNN, %d SGD steps: the losses agree (worst %.2e; %g -> %g)", STEPS,
           worst, first, last);
    d = param_diff(cm, gm);
    tap_ok(d <= 1e-4, "CNN, %d SGD steps: the parameters agree (max diff %.2e)", STEPS, d);

    /* Device-resident inputs and labels, read in place: the same bits as host ones. */
    float *dx = dev_copy(x, sizeof(float) * BATCH * CNN_IN);
    int32_t *dl = dev_copy(labels, sizeof labels);
    float lh = 0, ld = -1;
    if (hpct_model_loss_grad(gm, x, labels, BATCH, 0, &lh)) tap_bail("%s", hpct_last_error(gctx));
    float *gh = grads_host(gm);
    hpct_status_t s = hpct_model_loss_grad(gm, dx, dl, BATCH, 0, &ld);
    float *gd = grads_host(gm);
    tap_ok(s == HPCT_SUCCESS && memcmp(&lh, &ld, sizeof lh) == 0 &&
               memcmp(gh, gd, total * sizeof *gh) == 0,
           "CNN, inputs and labels in device memory: the loss (%g) and %zu gradients bit for bit",
           (double)ld, total);
    double el[2] = {0, 1}, ea[2] = {0, 1};
    s = hpct_model_evaluate(gm, x, labels, BATCH, &el[0], &ea[0]);
    if (!s) s = hpct_model_evaluate(gm, dx, dl, BATCH, &el[1], &ea[1]);
    tap_ok(s == HPCT_SUCCESS && el[0] == el[1] && ea[0] == ea[1],
           "CNN, hpct_model_evaluate of device arrays: the same loss and accuracy (%s)",
           s ? hpct_last_error(gctx) : "ok");
    float *dout = gpu->alloc(gctx, sizeof outg);
    s = hpct_model_forward(gm, x, BATCH, outc);
    if (!s) s = hpct_model_forward(gm, dx, BATCH, dout);
    if (!s) s = gpu->to_host(gctx, outg, dout, sizeof outg);
    tap_ok(s == HPCT_SUCCESS && memcmp(outc, outg, sizeof outc) == 0,
           "CNN, hpct_model_forward from and into device memory: the same outputs");
    gpu->free(gctx, dout), gpu->free(gctx, dx), gpu->free(gctx, dl);
    hpct_optimizer_destroy(co), hpct_optimizer_destroy(go);
    hpct_model_destroy(cm), hpct_model_destroy(gm);
    free(gh), free(gd), free(x);
}

/* The child of test_conv_fault (this program run with --conv-fault): on a fresh cuda context,
 * im2col given host memory as its input x; prints the launch's and the next sync's status
 * and the library's error. The double names the kernel and the argument on stderr. A GPU is
 * given an address mapped nowhere instead, since HMM can let it read host memory. */
static int conv_fault_child(void)
{
    hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
    cfg.backend = HPCT_BACKEND_CUDA;
    cfg.device = -1;
    if (hpct_ctx_create(NULL, &cctx) || hpct_ctx_create(&cfg, &gctx)) {
        printf("conv-fault: no context\n");
        return 1;
    }
    struct hpcti_geom g = model_geom(&conv_cases[2]);
    size_t nx = 3 * (size_t)g.c_in * hpcti_geom_in_size(&g);
    size_t ncol = 3 * hpcti_geom_col_rows(&g) * hpcti_geom_out_size(&g);
#ifdef HPCT_CUDA_DOUBLE
    const float *x = rand_host(nx, -1, 1);
#else
    const float *x = (const float *)(uintptr_t)0x1000;
    (void)nx;
#endif
    float *col = gpu->alloc(gctx, ncol * sizeof(float));
    hpct_status_t launch = col ? gpu->im2col(gctx, &g, x, col, 3) : HPCT_ERR_NO_MEMORY;
    printf("conv-fault: launch %d\n", (int)launch);
    hpct_status_t sync = gpu->sync(gctx);
    printf("conv-fault: sync %d %s\n", (int)sync, hpct_last_error(gctx));
    fflush(stdout);
    return 0;
}

/* A conv kernel handed host memory where device memory belongs faults; the fault is checked
 * in a child process, since it leaves the CUDA context unusable. */
static void test_conv_fault(void)
{
    extern char **environ;
    char out[16384];
    size_t len = 0;
    int fd[2], status = -1;
    pid_t pid;
    char *argv[] = {"/proc/self/exe", "--conv-fault", NULL};
    posix_spawn_file_actions_t fa;
    fflush(stdout);
    if (pipe(fd)) tap_bail("pipe: %s", strerror(errno));
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
    posix_spawn_file_actions_adddup2(&fa, fd[1], 2);
    posix_spawn_file_actions_addclose(&fa, fd[0]);
    posix_spawn_file_actions_addclose(&fa, fd[1]);
    int e = posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fd[1]);
    if (e) tap_bail("posix_spawn of this test: %s", strerror(e));
    for (ssize_t r; len < sizeof out - 1 && (r = read(fd[0], out + len, sizeof out - 1 - len)) > 0;)
        len += (size_t)r;
    out[len] = '\0';
    close(fd[0]);
    waitpid(pid, &status, 0);
    const char *sync = strstr(out, "conv-fault: sync ");
    int code = sync ? atoi(sync + strlen("conv-fault: sync ")) : -1;
    tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0 && strstr(out, "conv-fault: launch 0") &&
               code == HPCT_ERR_DEVICE && strstr(sync, "cudaDeviceSynchronize"),
           "im2col_kernel given host memory: launched, then HPCT_ERR_DEVICE at the next sync "
           "naming the CUDA call: %.*s",
           sync ? (int)strcspn(sync, "\n") : 0, sync ? sync : "");
#ifdef HPCT_CUDA_DOUBLE
    const char *report = strstr(out, "im2col_kernel x: ");
    tap_ok(report && strstr(report, "is host memory, not device memory"),
           "the double's report names the kernel and its argument: %.*s",
           report ? (int)strcspn(report, "\n") : 0, report ? report : "");
#else
    tap_skip(1, "only the device double names the faulting kernel and argument");
#endif
    if (!sync) tap_diag("the child said: %s", out);
}

/* The reason no CUDA context can be made, or NULL when one can. */
static const char *cuda_unusable(void)
{
    static char why[sizeof cctx->last_error];
    if (hpcti_cuda_ops.init(cctx) == HPCT_SUCCESS) {
        hpcti_cuda_ops.finalize(cctx);
        return NULL;
    }
    memcpy(why, cctx->last_error, sizeof why);
    hpcti_clear_error(cctx);
    return why;
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "--conv-fault")) return conv_fault_child();
    if (hpct_ctx_create(NULL, &cctx)) tap_bail("cpu context");
    const char *why = cuda_unusable();
    if (why) tap_skip_all("no CUDA device: %s", why);
    tap_plan(135);
#ifdef HPCT_CUDA_DOUBLE
    tap_prefix("[device double, not a GPU] "); /* t/double: the CPU runs the cuda backend */
#endif
    hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
    cfg.backend = HPCT_BACKEND_CUDA;
    cfg.device = 9999;
    hpct_ctx_t bad;
    tap_is_int(hpct_ctx_create(&cfg, &bad), HPCT_ERR_INVALID_ARG, "device 9999 is refused");
    cfg.device = -1;
    if (hpct_ctx_create(&cfg, &gctx)) tap_bail("cuda context failed after the probe worked");
    test_memory();                                                           /* 2 */
    test_pinned_failure();                                                   /* 1 */
    test_gemm();                                                             /* 9 */
    test_activations();                                                      /* 8 */
    test_bias_grad();                                                        /* 2 */
    test_reductions();                                                       /* 16 */
    test_optimizers();                                                       /* 3 */
    check_training(HPCT_LOSS_SOFTMAX_CE, HPCT_OPT_SGD, "CE + SGD momentum"); /* 5 */
    check_training(HPCT_LOSS_MSE, HPCT_OPT_ADAMW, "MSE + AdamW");            /* 5 */
    test_large();                                                            /* 9 */
    test_rank_sum();                                                         /* 1 */
    test_device_arrays(HPCT_LOSS_SOFTMAX_CE, "CE");                          /* 5 */
    test_device_arrays(HPCT_LOSS_MSE, "MSE");                                /* 4 */
    test_conv_ops();                                                         /* 43 */
    test_cnn();                                                              /* 15 */
    hpct_model_t gm = make_model(gctx, HPCT_LOSS_SOFTMAX_CE, 8);
    float *x = rand_host(8 * 12, -1, 1);
    int32_t labels[8] = {0, 1, 2, 3, 4, 0, 1, 2};
    if (getenv("HPCT_TEST_NO_FAULT")) { /* under compute-sanitizer: the fault would be reported */
        tap_skip(2, "HPCT_TEST_NO_FAULT is set");
        tap_skip(4, "HPCT_TEST_NO_FAULT is set");
    } else {
        test_conv_fault();                  /* 2 */
        test_forced_failure(gm, x, labels); /* 4 */
    }
    free(x);
    hpct_model_destroy(gm);
    hpct_ctx_destroy(gctx);
    hpct_ctx_destroy(cctx);
    return tap_done();
}
#endif
