/* cuda.c: the cuda backend: tensors in GPU memory, GEMMs through cuBLAS, everything else
 * through the kernels in kernels/ (whose element-wise math is kernels/hpct_math.h). */
#include "config.h"
#include "ops.h"
#include "../../kernels/kernels.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdlib.h>

/* Per-context state, kept behind ctx->backend. init() makes the device current on the calling
 * thread; ops without a context (kernels, copies) run on that thread's current device, so
 * train on the thread that created the context. */
struct cuda_state {
    int device;          /* CUDA ordinal in use */
    cublasHandle_t blas; /* bound to device */
    double *scratch;     /* [HPCTI_K_SCRATCH] reduction partials and result (device) */
};

static struct cuda_state *state_of(hpct_ctx_t ctx)
{
    return ctx->backend;
}

/* Local rank from the launcher's environment (Open MPI, Slurm, PMIx), or 0. */
static int local_rank_from_env(void)
{
    static const char *vars[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "PMIX_LOCAL_RANK"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        char *end;
        if (!v || !*v) continue;
        long r = strtol(v, &end, 10);
        if (*end == '\0' && r >= 0 && r < 1000000) return (int)r;
    }
    return 0;
}

/* Choose the device: cfg.device if set, else the local rank modulo the device count. */
static hpct_status_t pick_device(hpct_ctx_t ctx, int *device)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0)
        return hpcti_error(ctx, HPCT_ERR_UNSUPPORTED, "cuda backend: no usable CUDA device (%s)",
                           e != cudaSuccess ? cudaGetErrorString(e) : "device count is 0");
    if (ctx->cfg.device >= count)
        return hpcti_error(
            ctx, HPCT_ERR_INVALID_ARG,
            "cuda backend: hpct_config_t.device is %d but only %d CUDA device(s) are "
            "visible (CUDA_VISIBLE_DEVICES=%s)",
            ctx->cfg.device, count,
            getenv("CUDA_VISIBLE_DEVICES") ? getenv("CUDA_VISIBLE_DEVICES") : "unset");
    *device = ctx->cfg.device >= 0 ? ctx->cfg.device : local_rank_from_env() % count;
    return HPCT_SUCCESS;
}

/* Bind the device, create the cuBLAS handle and the reduction scratch. */
static hpct_status_t open_device(hpct_ctx_t ctx, struct cuda_state *st)
{
    cudaError_t e = cudaSetDevice(st->device);
    if (e == cudaSuccess) e = cudaFree(NULL); /* forces the CUDA context into existence */
    if (e != cudaSuccess)
        return hpcti_error(ctx, HPCT_ERR_UNSUPPORTED, "cuda backend: cannot use CUDA device %d: %s",
                           st->device, cudaGetErrorString(e));
    cublasStatus_t b = cublasCreate(&st->blas);
    if (b != CUBLAS_STATUS_SUCCESS) {
        st->blas = NULL;
        return hpcti_error(ctx, HPCT_ERR_UNSUPPORTED,
                           "cuda backend: cannot create a cuBLAS handle on CUDA device %d: %s",
                           st->device, cublasGetStatusString(b));
    }
    cublasSetMathMode(st->blas, CUBLAS_DEFAULT_MATH); /* plain fp32, no TF32 */
    e = cudaMalloc((void **)&st->scratch, sizeof(double) * HPCTI_K_SCRATCH);
    if (e != cudaSuccess) {
        st->scratch = NULL;
        return hpcti_error(ctx, HPCT_ERR_NO_MEMORY,
                           "cuda backend: cannot allocate reduction scratch on CUDA device %d: %s",
                           st->device, cudaGetErrorString(e));
    }
    return HPCT_SUCCESS;
}

static void release(struct cuda_state *st)
{
    if (!st) return;
    if (st->blas) cublasDestroy(st->blas);
    cudaFree(st->scratch);
    free(st);
}

static hpct_status_t cuda_init(hpct_ctx_t ctx)
{
    struct cuda_state *st = hpcti_calloc(ctx, 1, sizeof *st, "cuda backend state");
    if (!st) return HPCT_ERR_NO_MEMORY;
    hpct_status_t s = pick_device(ctx, &st->device);
    if (!s) s = open_device(ctx, st);
    if (s) {
        release(st);
        return s;
    }
    ctx->backend = st;
    hpcti_log(ctx, HPCT_LOG_INFO, "cuda backend on CUDA device %d", st->device);
    return HPCT_SUCCESS;
}

static void cuda_finalize(hpct_ctx_t ctx)
{
    release(state_of(ctx));
    ctx->backend = NULL;
}

static void *cuda_alloc(hpct_ctx_t ctx, size_t bytes)
{
    void *p = NULL;
    size_t rounded = bytes ? bytes : 1;
    cudaError_t e = cudaMalloc(&p, rounded);
    if (e == cudaSuccess) e = cudaMemset(p, 0, rounded);
    if (e != cudaSuccess) {
        cudaFree(p);
        hpcti_error(ctx, HPCT_ERR_NO_MEMORY,
                    "cuda backend: cannot allocate %zu bytes on CUDA device %d: %s", bytes,
                    state_of(ctx)->device, cudaGetErrorString(e));
        return NULL;
    }
    return p;
}

static void cuda_free(void *dev)
{
    cudaFree(dev);
}

/* Host or device to device or host: UVA tells the direction. */
static void cuda_copy(void *dst, const void *src, size_t bytes)
{
    if (bytes && dst != src) cudaMemcpy(dst, src, bytes, cudaMemcpyDefault);
}

/* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands. */
static void cuda_gemm(hpct_ctx_t ctx, int ta, int tb, int m, int n, int k, float alpha,
                      const float *a, const float *b, float beta, float *c)
{
    if (m <= 0 || n <= 0) return;
    int lda = ta ? m : k, ldb = tb ? k : n;
    cublasStatus_t s = cublasSgemm(state_of(ctx)->blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                                   ta ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, b,
                                   ldb > 0 ? ldb : 1, a, lda > 0 ? lda : 1, &beta, c, n);
    if (s != CUBLAS_STATUS_SUCCESS)
        hpcti_error(ctx, HPCT_ERR_INTERNAL,
                    "cuda backend: cublasSgemm (%d x %d x %d) on CUDA device %d: %s", m, n, k,
                    state_of(ctx)->device, cublasGetStatusString(s));
}

static void cuda_bias_act(int act, float *z, const float *bias, float *y, int rows, int cols)
{
    hpcti_k_bias_act(act, z, bias, y, rows, cols);
}

static void cuda_act_backward(int act, const float *z, const float *y, const float *dy, float *dz,
                              size_t n)
{
    hpcti_k_act_backward(act, z, y, dy, dz, n);
}

static void cuda_bias_grad(const float *dz, float *db, int rows, int cols, int accumulate)
{
    hpcti_k_bias_grad(dz, db, rows, cols, accumulate);
}

/* Copy a reduction's result to the host (this waits for the kernels). NaN on failure, so
 * callers that check finiteness notice; the detail goes to ctx. */
static double fetch_result(hpct_ctx_t ctx, int launch_error, const char *what)
{
    struct cuda_state *st = state_of(ctx);
    double result = NAN;
    cudaError_t e = (cudaError_t)launch_error;
    if (e == cudaSuccess)
        e = cudaMemcpy(&result, st->scratch + HPCTI_K_MAX_BLOCKS, sizeof result,
                       cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) {
        hpcti_error(ctx, HPCT_ERR_INTERNAL, "cuda backend: %s on CUDA device %d failed: %s", what,
                    st->device, cudaGetErrorString(e));
        return NAN;
    }
    return result;
}

static double cuda_softmax_xent(hpct_ctx_t ctx, const float *logits, const int32_t *labels,
                                float *dlogits, int rows, int cols, float scale)
{
    int e =
        hpcti_k_softmax_xent(logits, labels, dlogits, rows, cols, scale, state_of(ctx)->scratch);
    return fetch_result(ctx, e, "softmax cross-entropy");
}

static long cuda_count_correct(hpct_ctx_t ctx, const float *logits, const int32_t *labels, int rows,
                               int cols)
{
    int e = hpcti_k_count_correct(logits, labels, rows, cols, state_of(ctx)->scratch);
    double n = fetch_result(ctx, e, "count of correct predictions");
    return isfinite(n) ? (long)n : -1;
}

static double cuda_mse(hpct_ctx_t ctx, const float *out, const float *targets, float *dout,
                       size_t n, float scale)
{
    int e = hpcti_k_mse(out, targets, dout, n, scale, state_of(ctx)->scratch);
    return fetch_result(ctx, e, "squared error");
}

static double cuda_sumsq(hpct_ctx_t ctx, const float *x, size_t n)
{
    return fetch_result(ctx, hpcti_k_sumsq(x, n, state_of(ctx)->scratch), "sum of squares");
}

static void cuda_scale(float *x, float alpha, size_t n)
{
    if (alpha == 0.0f)
        cudaMemset(x, 0, sizeof(float) * n);
    else
        hpcti_k_scale(x, alpha, n);
}

static int cuda_all_finite(hpct_ctx_t ctx, const float *x, size_t n)
{
    double bad = fetch_result(ctx, hpcti_k_count_nonfinite(x, n, state_of(ctx)->scratch),
                              "finiteness check");
    return bad == 0.0; /* NaN (a failed check) counts as not finite */
}

static void cuda_sgd(float *p, const float *g, float *v, size_t n, float lr, float mu, int nesterov,
                     float wd, float gscale)
{
    hpcti_k_sgd(p, g, v, n, lr, mu, nesterov, wd, gscale);
}

static void cuda_adamw(float *p, const float *g, float *m, float *v, size_t n, float lr, float b1,
                       float b2, float eps, float wd, float c1, float c2, float gscale)
{
    hpcti_k_adamw(p, g, m, v, n, lr, b1, b2, eps, wd, c1, c2, gscale);
}

const struct hpcti_ops hpcti_cuda_ops = {
    .name = "cuda",
    .init = cuda_init,
    .finalize = cuda_finalize,
    .alloc = cuda_alloc,
    .free = cuda_free,
    .to_device = cuda_copy,
    .to_host = cuda_copy,
    .gemm = cuda_gemm,
    .bias_act = cuda_bias_act,
    .act_backward = cuda_act_backward,
    .bias_grad = cuda_bias_grad,
    .softmax_xent = cuda_softmax_xent,
    .count_correct = cuda_count_correct,
    .mse = cuda_mse,
    .sumsq = cuda_sumsq,
    .scale = cuda_scale,
    .all_finite = cuda_all_finite,
    .sgd = cuda_sgd,
    .adamw = cuda_adamw,
};
