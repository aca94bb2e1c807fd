/* bench_gpu.c: GPU validation benchmark, built only --with-cuda. For the 784-512-512-10 ReLU
 * MLP at batch 128 and 1024, one run times: a training step (loss_grad + SGD momentum step) on
 * the cuda backend, the same step on the cpu backend, and the step's GEMMs alone in cuBLAS.
 * Prints ms/step on both, the speed-up, and GEMM time / GPU step time.
 * Usage: bench/bench_gpu [reps]   (OPENBLAS_NUM_THREADS sets the CPU side's threads) */
#include <hpctrain.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "bench_util.h"

static const int widths[] = {784, 512, 512, 10};

/* Seconds per training step of the MLP on backend, averaged over reps after a warm-up. */
static double time_steps(hpct_backend_t backend, int batch, int reps, const float *x,
                         const int32_t *y)
{
    hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
    cfg.backend = backend;
    hpct_ctx_t ctx;
    hpct_model_t m;
    hpct_params_t p;
    hpct_optimizer_t opt;
    hpct_optim_config_t oc = HPCT_OPTIM_CONFIG_INITIALIZER;
    oc.lr = 0.05f;
    oc.momentum = 0.9f;
    if (hpct_ctx_create(&cfg, &ctx)) return -1;
    hpct_model_create(ctx, widths[0], &m);
    for (int l = 1; l < 4; l++)
        hpct_model_add_dense(m, widths[l], l < 3 ? HPCT_ACT_RELU : HPCT_ACT_IDENTITY,
                             HPCT_INIT_AUTO);
    if (hpct_model_build(m, batch) || hpct_model_params(m, &p) ||
        hpct_optimizer_create(p, &oc, &opt)) {
        fprintf(stderr, "setup: %s\n", hpct_last_error(ctx));
        return -1;
    }
    float loss;
    for (int i = 0; i < 10; i++)
        hpct_model_loss_grad(m, x, y, batch, 0, &loss), hpct_optimizer_step(opt);
    cudaDeviceSynchronize();
    double t0 = now();
    for (int i = 0; i < reps; i++) {
        hpct_model_loss_grad(m, x, y, batch, 0, &loss); /* waits for the loss on the host */
        hpct_optimizer_step(opt);
    }
    cudaDeviceSynchronize();
    double t = (now() - t0) / reps;
    hpct_optimizer_destroy(opt);
    hpct_model_destroy(m);
    hpct_ctx_destroy(ctx);
    return t;
}

/* Row-major C [m, n] = op(A) op(B) through column-major cuBLAS (operands swapped). */
static void gemm(cublasHandle_t h, int ta, int tb, int m, int n, int k, const float *a,
                 const float *b, float *c)
{
    const float one = 1.0f, zero = 0.0f;
    cublasSgemm(h, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &one, b,
                tb ? k : n, a, ta ? m : k, &zero, c, n);
}

static float *dev_floats(size_t n)
{
    float *d = NULL;
    if (cudaMalloc((void **)&d, n * sizeof *d) != cudaSuccess) return NULL;
    cudaMemset(d, 0, n * sizeof *d);
    return d;
}

/* Seconds for the GEMMs of one step alone: forward x W^T, backward dW = dz^T a and da = dz W. */
static double time_gemms(int batch, int reps)
{
    cublasHandle_t h;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return -1;
    float *w[3], *a[4], *dz[3], *dw[3], *da = dev_floats((size_t)batch * 512);
    a[0] = dev_floats((size_t)batch * 784);
    for (int l = 0; l < 3; l++) {
        w[l] = dev_floats((size_t)widths[l] * widths[l + 1]);
        dw[l] = dev_floats((size_t)widths[l] * widths[l + 1]);
        a[l + 1] = dev_floats((size_t)batch * widths[l + 1]);
        dz[l] = dev_floats((size_t)batch * widths[l + 1]);
    }
    double t = 0;
    for (int pass = 0; pass < 2; pass++) { /* pass 0 warms up */
        cudaDeviceSynchronize();
        double t0 = now();
        for (int i = 0; i < (pass ? reps : 10); i++) {
            for (int l = 0; l < 3; l++)
                gemm(h, 0, 1, batch, widths[l + 1], widths[l], a[l], w[l], a[l + 1]);
            for (int l = 2; l >= 0; l--) {
                gemm(h, 1, 0, widths[l + 1], widths[l], batch, dz[l], a[l], dw[l]);
                if (l) gemm(h, 0, 0, batch, widths[l], widths[l + 1], dz[l], w[l], da);
            }
        }
        cudaDeviceSynchronize();
        t = (now() - t0) / reps;
    }
    for (int l = 0; l < 3; l++)
        cudaFree(w[l]), cudaFree(dw[l]), cudaFree(a[l + 1]), cudaFree(dz[l]);
    cudaFree(a[0]), cudaFree(da);
    cublasDestroy(h);
    return t;
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 200;
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
        fprintf(stderr, "bench_gpu: no CUDA device: %s\n",
                e != cudaSuccess ? cudaGetErrorString(e) : "device count is 0");
        return 1;
    }
    if (reps < 1) reps = 1;
    printf("784-512-512-10 ReLU MLP, SGD momentum, %d steps per figure\n", reps);
    printf("%6s %12s %12s %9s %14s %10s\n", "batch", "gpu ms/step", "cpu ms/step", "speed-up",
           "gemm ms/step", "gemm/step");
    static const int batches[] = {128, 1024};
    for (int i = 0; i < 2; i++) {
        int batch = batches[i];
        float *x = filled((size_t)batch * 784, 1.0f);
        int32_t *y = malloc(sizeof *y * (size_t)batch);
        for (int j = 0; j < batch; j++) y[j] = j % 10;
        double g = time_steps(HPCT_BACKEND_CUDA, batch, reps, x, y);
        double c = time_steps(HPCT_BACKEND_CPU, batch, reps / 10 > 0 ? reps / 10 : 1, x, y);
        double k = time_gemms(batch, reps);
        if (g < 0 || c < 0 || k < 0) {
            fprintf(stderr, "bench_gpu: setup failed at batch %d\n", batch);
            return 1;
        }
        printf("%6d %12.3f %12.3f %8.1fx %14.3f %10.2f\n", batch, g * 1e3, c * 1e3, c / g, k * 1e3,
               k / g);
        free(x);
        free(y);
    }
    return 0;
}
