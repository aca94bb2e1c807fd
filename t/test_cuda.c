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
 * engine's), and a faulting kernel surfacing as HPCT_ERR_DEVICE. */
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

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

/* The CUDA-aware cross-node sum (hpcti_k_rank_sum_on) against the host engine's owner sum
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
    int err = hpcti_k_rank_sum_on(gown, gslots, NODES, ME, n, inv, NULL);
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

int main(void)
{
    if (hpct_ctx_create(NULL, &cctx)) tap_bail("cpu context");
    const char *why = cuda_unusable();
    if (why) tap_skip_all("no CUDA device: %s", why);
    tap_plan(75);
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
    hpct_model_t gm = make_model(gctx, HPCT_LOSS_SOFTMAX_CE, 8);
    float *x = rand_host(8 * 12, -1, 1);
    int32_t labels[8] = {0, 1, 2, 3, 4, 0, 1, 2};
    if (getenv("HPCT_TEST_NO_FAULT")) /* under compute-sanitizer: the fault would be reported */
        tap_skip(4, "HPCT_TEST_NO_FAULT is set");
    else
        test_forced_failure(gm, x, labels); /* 4 */
    free(x);
    hpct_model_destroy(gm);
    hpct_ctx_destroy(gctx);
    hpct_ctx_destroy(cctx);
    return tap_done();
}
#endif
