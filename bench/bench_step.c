/* bench_step.c: one training step of the 784-512-512-10 ReLU MLP at batch 128 against the
 * same GEMMs alone, in one run. Reports GEMM time / step time (target >= 0.85).
 * Run with OPENBLAS_NUM_THREADS=1 (the program also asks for one thread). */
#include <hpctrain.h>

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "bench_util.h"

#define BATCH 128
#define REPS  200
static const int widths[] = {784, 512, 512, 10};

static void gemm(int ta, int tb, int m, int n, int k, const float *a, const float *b, float *c)
{
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n,
                k, 1.0f, a, ta ? m : k, b, tb ? k : n, 0.0f, c, n);
}

/* The GEMMs of one step: forward x W^T per layer, backward dW = dz^T a and da = dz W. */
static void gemms_only(float **w, float **a, float **dz, float **dw, float *da)
{
    for (int l = 0; l < 3; l++) gemm(0, 1, BATCH, widths[l + 1], widths[l], a[l], w[l], a[l + 1]);
    for (int l = 2; l >= 0; l--) {
        gemm(1, 0, widths[l + 1], widths[l], BATCH, dz[l], a[l], dw[l]);
        if (l) gemm(0, 0, BATCH, widths[l], widths[l + 1], dz[l], w[l], da);
    }
}

int main(void)
{
    hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
    cfg.num_threads = 1;
    hpct_ctx_t ctx;
    hpct_model_t m;
    hpct_params_t p;
    hpct_optimizer_t opt;
    hpct_optim_config_t oc = HPCT_OPTIM_CONFIG_INITIALIZER;
    oc.lr = 0.05f;
    oc.momentum = 0.9f;
    if (hpct_ctx_create(&cfg, &ctx)) return 1;
    hpct_model_create(ctx, 784, &m);
    hpct_model_add_dense(m, 512, HPCT_ACT_RELU, HPCT_INIT_AUTO);
    hpct_model_add_dense(m, 512, HPCT_ACT_RELU, HPCT_INIT_AUTO);
    hpct_model_add_dense(m, 10, HPCT_ACT_IDENTITY, HPCT_INIT_AUTO);
    if (hpct_model_build(m, BATCH) || hpct_model_params(m, &p) ||
        hpct_optimizer_create(p, &oc, &opt)) {
        fprintf(stderr, "setup: %s\n", hpct_last_error(ctx));
        return 1;
    }
    float *x = filled((size_t)BATCH * 784, 1.0f);
    int32_t y[BATCH];
    for (int i = 0; i < BATCH; i++) y[i] = i % 10;

    float *w[3], *a[4], *dz[3], *dw[3], *da = filled((size_t)BATCH * 512, 0.01f);
    a[0] = x;
    for (int l = 0; l < 3; l++) {
        w[l] = filled((size_t)widths[l] * widths[l + 1], 0.01f);
        dw[l] = filled((size_t)widths[l] * widths[l + 1], 0.0f);
        a[l + 1] = filled((size_t)BATCH * widths[l + 1], 0.0f);
        dz[l] = filled((size_t)BATCH * widths[l + 1], 0.01f);
    }

    /* Warm up both, then alternate blocks so drift hits both sides alike. */
    float loss;
    for (int i = 0; i < 20; i++) {
        hpct_model_loss_grad(m, x, y, BATCH, 0, &loss);
        hpct_optimizer_step(opt);
        gemms_only(w, a, dz, dw, da);
    }
    double t_step = 0, t_gemm = 0;
    for (int block = 0; block < 4; block++) {
        double t0 = now();
        for (int i = 0; i < REPS / 4; i++) {
            if (hpct_model_loss_grad(m, x, y, BATCH, 0, &loss) || hpct_optimizer_step(opt)) {
                fprintf(stderr, "step: %s\n", hpct_last_error(ctx));
                return 1;
            }
        }
        double t1 = now();
        for (int i = 0; i < REPS / 4; i++) gemms_only(w, a, dz, dw, da);
        double t2 = now();
        t_step += t1 - t0, t_gemm += t2 - t1;
    }
    double flops = 0;
    for (int l = 0; l < 3; l++) flops += 2.0 * BATCH * widths[l] * widths[l + 1] * (l ? 3 : 2);
    printf("bench_step: 784-512-512-10 ReLU MLP, batch %d, SGD momentum, 1 thread, %d reps\n",
           BATCH, REPS);
    printf("  training step (forward+backward+update): %8.3f ms  (%.1f GFLOP/s)\n",
           1e3 * t_step / REPS, flops / (t_step / REPS) * 1e-9);
    printf("  the same GEMMs alone:                    %8.3f ms  (%.1f GFLOP/s)\n",
           1e3 * t_gemm / REPS, flops / (t_gemm / REPS) * 1e-9);
    printf("  GEMM time / step time:                   %8.3f  (target >= 0.85)\n", t_gemm / t_step);
    printf("  final loss %.4f\n", loss);
    hpct_optimizer_destroy(opt);
    hpct_model_destroy(m);
    hpct_ctx_destroy(ctx);
    return 0;
}
