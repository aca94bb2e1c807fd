/* test_nccl.c: mirrored GPU replicas through the public calls, under mpirun (run by
 * t/test_nccl.sh in several layouts: one node of 2 ranks, 2 virtual nodes of 1, 2 virtual
 * nodes of 2). Every check is agreed over all ranks (t/lib/mpi_prog: PASS/FAIL lines).
 *   test_nccl probe   prints the number of visible CUDA devices, or "none: reason"
 *   test_nccl badenv  hpct_init must refuse HPCT_CUDA_AWARE_MPI set to neither 0 nor 1
 *   test_nccl run     hpct_init on the cuda backend, then:
 *     - hpct_allreduce_mean on host floats (host memory on a cuda context);
 *     - hpct_allreduce_mean_device on device buffers of 0 .. 2^20 + 3 floats: rank r gives
 *       r + i / 1024, the mean (W - 1) / 2 + i / 1024 is exact in fp32; identical bits;
 *     - registered device buffers (fusion buckets and in-place ones) averaged, broadcast,
 *       hashed and checked (a planted difference is HPCT_ERR_DIVERGED);
 *     - a built-in model's device gradients averaged inside hpct_model_loss_grad (overlapped
 *       with backward when NCCL takes the node phase, on one node or several) equal the mean
 *       of the per-rank gradients, identical on every rank, and the same bits as
 *       hpct_params_average_grads after backward; hpct_comm_stats counts. */
#include "config.h"
#include "hpctrain.h"
#include "lib/mpi_prog.h"

#include <stdio.h>
#include <string.h>

#ifndef HPCT_HAVE_NCCL
int main(void)
{
    printf("none: built without --with-nccl\n");
    return 0;
}
#else
#include <cuda_runtime.h>
#include <math.h>
#include <mpi.h>
#include <pthread.h>
#include <stdlib.h>

/* 1 when x [n] (host) is bitwise the same on every rank. */
static int identical(const float *x, size_t n)
{
    unsigned long long h = 1469598103934665603ull, lo, hi;
    const unsigned char *b = (const unsigned char *)x;
    for (size_t i = 0; i < n * sizeof *x; i++) h = (h ^ b[i]) * 1099511628211ull;
    MPI_Allreduce(&h, &lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&h, &hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    return lo == hi;
}

static float *dev_floats(const float *host, size_t n)
{
    float *d = NULL;
    if (cudaMalloc((void **)&d, sizeof *d * (n ? n : 1)) != cudaSuccess) return NULL;
    cudaMemcpy(d, host, sizeof *d * n, cudaMemcpyHostToDevice);
    return d;
}

static void fill(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) x[i] = (float)world_rank + (float)(i % 4096) / 1024.0f;
}

/* Largest |x[i] - expected mean| over x [n] (host). */
static double mean_error(const float *x, size_t n)
{
    double worst = 0;
    for (size_t i = 0; i < n; i++)
        worst = fmax(worst, fabs(x[i] - ((world_size - 1) / 2.0 + (double)(i % 4096) / 1024.0)));
    return worst;
}

static void device_means(hpct_ctx_t ctx)
{
    static const size_t sizes[] = {0, 1, 7, 1000, 12345, ((size_t)1 << 20) + 3};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        size_t n = sizes[k];
        float *h = malloc(sizeof *h * (n ? n : 1)), *d;
        fill(h, n);
        d = dev_floats(h, n);
        hpct_status_t s = d ? hpct_allreduce_mean_device(ctx, d, n) : HPCT_ERR_NO_MEMORY;
        check(s == HPCT_SUCCESS, "allreduce_mean_device of %zu floats (%s)", n,
              s ? hpct_last_error(ctx) : "ok");
        if (d) cudaMemcpy(h, d, sizeof *h * n, cudaMemcpyDeviceToHost);
        check(!s && mean_error(h, n) <= 1e-6, "%zu floats: exact mean (worst %g)", n,
              mean_error(h, n));
        check(identical(h, n), "%zu floats: bit-identical on every rank", n);
        cudaFree(d);
        free(h);
    }
}

/* A device average of 12345 floats from a thread that never made a CUDA device current (the
 * library must bind it: from this thread CUDA would otherwise use device 0). */
struct thread_job {
    hpct_ctx_t ctx;
    float *d;
    hpct_status_t s;
};

static void *device_mean_on_thread(void *arg)
{
    struct thread_job *j = arg;
    j->s = hpct_allreduce_mean_device(j->ctx, j->d, 12345);
    return NULL;
}

static void device_mean_from_thread(hpct_ctx_t ctx)
{
    enum { N = 12345 };
    float *h = malloc(sizeof *h * N);
    fill(h, N);
    struct thread_job j = {.ctx = ctx, .d = dev_floats(h, N), .s = HPCT_ERR_NO_MEMORY};
    pthread_t t;
    if (j.d && pthread_create(&t, NULL, device_mean_on_thread, &j) == 0) pthread_join(t, NULL);
    if (j.d) cudaMemcpy(h, j.d, sizeof *h * N, cudaMemcpyDeviceToHost);
    check(!j.s && mean_error(h, N) <= 1e-6 && identical(h, N),
          "a device average from a second thread: exact, the same bits on every rank (%s)",
          j.s ? hpct_last_error(ctx) : "ok");
    cudaFree(j.d);
    free(h);
}

/* Three device buffers: two small ones share a 4 KiB fusion bucket, one is reduced in place. */
static void device_params(hpct_ctx_t ctx)
{
    static const size_t counts[] = {100, 37, 5000};
    float *param[3], *grad[3], *h = malloc(sizeof *h * 5000);
    hpct_params_t p;
    hpct_status_t s = hpct_params_create(ctx, &p);
    for (int i = 0; i < 3; i++) {
        fill(h, counts[i]);
        grad[i] = dev_floats(h, counts[i]);
        for (size_t j = 0; j < counts[i]; j++) h[j] = (float)(world_rank * 1000 + i);
        param[i] = dev_floats(h, counts[i]);
        char name[16];
        snprintf(name, sizeof name, "b%d", i);
        if (!s) s = hpct_params_register(p, name, param[i], grad[i], counts[i]);
    }
    if (!s) s = hpct_params_average_grads(p);
    check(!s, "hpct_params_average_grads on device buffers (%s)", s ? hpct_last_error(ctx) : "ok");
    double worst = 0;
    for (int i = 0; i < 3; i++) {
        cudaMemcpy(h, grad[i], sizeof *h * counts[i], cudaMemcpyDeviceToHost);
        worst = fmax(worst, mean_error(h, counts[i]));
    }
    check(worst <= 1e-6, "fused and in-place device gradients hold the mean (worst %g)", worst);
    s = hpct_params_broadcast(p, world_size - 1);
    cudaMemcpy(h, param[2], sizeof *h * counts[2], cudaMemcpyDeviceToHost);
    check(!s && h[0] == (float)((world_size - 1) * 1000 + 2),
          "hpct_params_broadcast from the last rank on device buffers");
    check(hpct_params_check_replicas(p) == HPCT_SUCCESS, "replicas agree after the broadcast");
    if (world_rank == world_size - 1 && world_size > 1) {
        float bump = 0.5f;
        cudaMemcpy(param[1] + 3, &bump, sizeof bump, cudaMemcpyHostToDevice);
    }
    s = hpct_params_check_replicas(p);
    check(world_size == 1 || s == HPCT_ERR_DIVERGED,
          "a planted difference in device memory is HPCT_ERR_DIVERGED (%s)", hpct_last_error(ctx));
    hpct_params_destroy(p);
    for (int i = 0; i < 3; i++) cudaFree(param[i]), cudaFree(grad[i]);
    free(h);
}

/* A copy of the model's gradients in host memory (hpct_params_get gives device pointers). */
static float *grads_of(hpct_model_t m, size_t *total)
{
    hpct_params_t p;
    int nb;
    hpct_model_params(m, &p);
    hpct_params_size(p, &nb, total);
    float *h = malloc(sizeof *h * *total), *param, *grad;
    size_t off = 0, n;
    const char *name;
    for (int i = 0; i < nb; i++, off += n) {
        hpct_params_get(p, i, &name, &param, &grad, &n);
        cudaMemcpy(h + off, grad, sizeof *h * n, cudaMemcpyDeviceToHost);
    }
    return h;
}

/* The gradients averaged during backward (avg [total], overlapped per layer when NCCL takes
 * the node phase) against the same per-rank gradients averaged afterwards by
 * hpct_params_average_grads (whole buffers and fusion buckets, not overlapped): every element
 * goes through the same operations, so with at most 2 ranks a node (NCCL's in-node sum of two
 * terms does not depend on its order) the bits are the same; with more, within 1e-6. */
static void same_bits_unoverlapped(hpct_ctx_t ctx, hpct_model_t m, const float *x, const int32_t *y,
                                   const float *avg, size_t total)
{
    hpct_topology_t topo = HPCT_TOPOLOGY_INITIALIZER;
    hpct_params_t p;
    float loss;
    hpct_status_t s = hpct_topology(ctx, &topo);
    if (!s) s = hpct_model_set_grad_averaging(m, 0);
    if (!s) s = hpct_model_loss_grad(m, x, y, 32, 0, &loss);
    if (!s) s = hpct_model_params(m, &p);
    if (!s) s = hpct_params_average_grads(p);
    check(!s, "the same gradients averaged after backward (%s)", s ? hpct_last_error(ctx) : "ok");
    float *late = grads_of(m, &total);
    size_t differ = 0;
    double worst = 0;
    for (size_t i = 0; i < total; i++) {
        differ += memcmp(&late[i], &avg[i], sizeof *avg) != 0;
        worst = fmax(worst, fabs(late[i] - avg[i]) / fmax(1.0, fabs(late[i])));
    }
    if (topo.local_size <= 2)
        check(differ == 0,
              "node of %d: averaged during backward = after it, bit for bit (%zu of "
              "%zu differ)",
              topo.local_size, differ, total);
    else
        check(worst <= 1e-6, "node of %d: averaged during backward ~ after it (worst %g)",
              topo.local_size, worst);
    free(late);
}

static void *destroy_model(void *m)
{
    hpct_model_destroy(m);
    return NULL;
}

/* The model's device memory freed from a thread that never made a device current: the
 * library must free it on the context's device (under the device double with several
 * devices and CUDA_DOUBLE_STRICT_DEVICE=1, a free on device 0 instead is an error). */
static void destroy_on_thread(hpct_model_t m)
{
    pthread_t t;
    int made = pthread_create(&t, NULL, destroy_model, m) == 0;
    if (made) pthread_join(t, NULL);
    check(made && cudaGetLastError() == cudaSuccess,
          "a model destroyed from a second thread frees its memory on the context's device");
}

static void model_grads(hpct_ctx_t ctx)
{
    enum { BATCH = 32 };
    hpct_model_t m;
    hpct_status_t s = hpct_model_create(ctx, TOY_FEATURES, &m);
    if (!s) s = hpct_model_add_dense(m, 24, HPCT_ACT_RELU, HPCT_INIT_AUTO);
    if (!s) s = hpct_model_add_dense(m, TOY_CLASSES, HPCT_ACT_IDENTITY, HPCT_INIT_AUTO);
    if (!s) s = hpct_model_set_loss(m, HPCT_LOSS_SOFTMAX_CE);
    if (!s) s = hpct_model_build(m, BATCH);
    float x[BATCH * TOY_FEATURES], loss;
    int32_t y[BATCH];
    toy_data(x, y, BATCH, 100 + (unsigned long long)world_rank); /* different data per rank */
    if (!s) s = hpct_model_loss_grad(m, x, y, BATCH, 0, &loss);
    size_t total;
    float *mine = grads_of(m, &total);
    MPI_Allreduce(MPI_IN_PLACE, mine, (int)total, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    long ops0 = 0, ops1 = 0;
    hpct_comm_stats(ctx, NULL, &ops0);
    if (!s) s = hpct_model_set_grad_averaging(m, 1);
    if (!s) s = hpct_model_loss_grad(m, x, y, BATCH, 0, &loss);
    hpct_comm_stats(ctx, NULL, &ops1);
    check(!s, "hpct_model_loss_grad with device gradient averaging (%s)",
          s ? hpct_last_error(ctx) : "ok");
    float *avg = grads_of(m, &total);
    double worst = 0;
    for (size_t i = 0; i < total; i++)
        worst = fmax(worst, fabs(avg[i] - mine[i] / world_size) / fmax(1.0, fabs(mine[i])));
    check(worst <= 1e-5, "the model's device gradients are the mean over ranks (worst %g)", worst);
    check(identical(avg, total), "the averaged gradients are bit-identical on every rank");
    /* Two collective operations: the integer agreement on every rank's status before backward
     * (lib/model/model.c), then the average. */
    check(ops1 == ops0 + 2,
          "hpct_comm_stats counts the status agreement and the averaging operation (%ld -> %ld)",
          ops0, ops1);
    same_bits_unoverlapped(ctx, m, x, y, avg, total);
    free(mine), free(avg);
    destroy_on_thread(m);
}

static int run(void)
{
    hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
    cfg.backend = HPCT_BACKEND_CUDA;
    cfg.collective_timeout_s =
        getenv("TEST_NCCL_DEADLINE") ? atof(getenv("TEST_NCCL_DEADLINE")) : 60;
    cfg.fusion_bytes = 4096;
    cfg.log_level = HPCT_LOG_INFO; /* test_nccl.sh reads which averaging path was set up */
    hpct_ctx_t ctx = mpi_start(&cfg);
    float v = (float)world_rank; /* host memory on a cuda context: the train loop's figures */
    hpct_status_t s = hpct_allreduce_mean(ctx, &v, 1);
    check(!s && v == (float)(world_size - 1) / 2.0f, "hpct_allreduce_mean on a host float");
    device_means(ctx);
    device_mean_from_thread(ctx);
    device_params(ctx);
    model_grads(ctx);
    if (hpct_finalize(ctx)) failures++;
    return failures ? 1 : 0;
}

/* hpct_init with a value of HPCT_CUDA_AWARE_MPI that is neither 0 nor 1 must fail with
 * HPCT_ERR_INVALID_ARG on every rank (the log names the variable: test_nccl.sh checks it). */
static int bad_env(void)
{
    hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
    cfg.backend = HPCT_BACKEND_CUDA;
    cfg.collective_timeout_s = 60;
    cfg.log_level = HPCT_LOG_ERROR;
    hpct_ctx_t ctx = NULL;
    hpct_status_t s = hpct_init(&cfg, &ctx);
    printf("%s hpct_init with HPCT_CUDA_AWARE_MPI=%s: %s\n",
           s == HPCT_ERR_INVALID_ARG ? "PASS" : "FAIL", getenv("HPCT_CUDA_AWARE_MPI"),
           hpct_strerror(s));
    if (!s) hpct_finalize(ctx);
    return s == HPCT_ERR_INVALID_ARG ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "probe")) {
        int n = 0;
        cudaError_t e = cudaGetDeviceCount(&n);
        if (e != cudaSuccess || n == 0)
            printf("none: %s\n", e != cudaSuccess ? cudaGetErrorString(e) : "0 CUDA devices");
        else
            printf("%d\n", n);
        return 0;
    }
    if (argc == 2 && !strcmp(argv[1], "run")) return run();
    if (argc == 2 && !strcmp(argv[1], "badenv")) return bad_env();
    fprintf(stderr, "usage: test_nccl probe|run|badenv\n");
    return 2;
}
#endif
