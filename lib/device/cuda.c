/* cuda.c: the cuda backend: tensors in GPU memory, GEMMs through cuBLAS, everything else
 * through the kernels in kernels/ (whose element-wise math is kernels/hpct_math.h). */
#include "config.h"
#include "ops.h"
#include "../../kernels/kernels.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Per-context state, kept behind ctx->backend. init() makes the device current on the calling
 * thread; ops without a context (kernels, copies) run on that thread's current device, so
 * train on the thread that created the context. */
struct cuda_state {
    int device;          /* CUDA ordinal in use */
    cublasHandle_t blas; /* bound to device */
    double *scratch;     /* [HPCTI_K_SCRATCH] reduction partials and result (device) */
    /* A recording (rec_begin .. rec_end): REC_OFF, REC_QUEUED (run, not waited for) or
     * REC_CAPTURED (captured into a graph on the capture stream, not run). */
    int recording;
    double *results;      /* the recording's reduction results, one double each (device) */
    int slots, max_slots; /* reductions recorded so far, and room for */
    cudaStream_t capture; /* non-blocking stream captures are made on (first capture) */
    void *workspace;      /* [WORKSPACE_BYTES] cuBLAS workspace of captured products */
};

enum { REC_OFF, REC_QUEUED, REC_CAPTURED };

/* cuBLAS's workspace in captured products, so that a graph's GEMMs allocate nothing: cuBLAS
 * advises 32 MiB on Hopper, 4 MiB before. */
#define WORKSPACE_BYTES ((size_t)32 << 20)

static struct cuda_state *state_of(hpct_ctx_t ctx)
{
    return ctx->backend;
}

/* The stream the context's work goes to: the legacy default stream, or the capture stream
 * while a graph is captured. */
static void *stream_of(hpct_ctx_t ctx)
{
    struct cuda_state *st = state_of(ctx);
    return st->recording == REC_CAPTURED ? (void *)st->capture : NULL;
}

/* Local rank from the launcher's environment (Open MPI, MPICH/Intel MPI, MVAPICH, Slurm, PMIx),
 * or 0: only for a context made by hpct_ctx_create (hpct_init passes the bootstrap's). */
static int local_rank_from_env(void)
{
    static const char *vars[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                                 "MV2_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "PMIX_LOCAL_RANK"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        char *end;
        if (!v || !*v) continue;
        long r = strtol(v, &end, 10);
        if (*end == '\0' && r >= 0 && r < 1000000) return (int)r;
    }
    return 0;
}

static const char *visible_devices(void)
{
    const char *v = getenv("CUDA_VISIBLE_DEVICES");
    return v ? v : "unset";
}

/* Choose the device (hpcti_select_device): the local rank from hpct_init's bootstrap, or from
 * the launcher's environment for a context made by hpct_ctx_create. */
static hpct_status_t pick_device(hpct_ctx_t ctx, int *device)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) count = 0;
    int local_rank = ctx->local_size > 0 ? ctx->local_rank : local_rank_from_env();
    int local_size = ctx->local_size > 0 ? ctx->local_size : 1;
    int share = hpcti_gpu_sharing_allowed();
    switch (hpcti_select_device(ctx->cfg.device, local_rank, local_size, count, share, device)) {
    case HPCTI_DEVSEL_OK: return HPCT_SUCCESS;
    case HPCTI_DEVSEL_OUT_OF_RANGE:
        return hpcti_error(
            ctx, HPCT_ERR_INVALID_ARG,
            "cuda backend: hpct_config_t.device is %d but only %d CUDA device(s) are "
            "visible (CUDA_VISIBLE_DEVICES=%s)",
            ctx->cfg.device, count, visible_devices());
    case HPCTI_DEVSEL_OVERSUBSCRIBED:
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                           "cuda backend: %d ranks on this node but only %d CUDA devices are "
                           "visible (CUDA_VISIBLE_DEVICES=%s); start one rank per GPU, or set "
                           "HPCT_ALLOW_GPU_SHARING=1 to let ranks share devices",
                           local_size, count, visible_devices());
    default:
        return hpcti_error(ctx, HPCT_ERR_UNSUPPORTED,
                           "cuda backend: no usable CUDA device (cudaGetDeviceCount: %s; "
                           "CUDA_VISIBLE_DEVICES=%s)",
                           e != cudaSuccess ? cudaGetErrorString(e) : "0 devices",
                           visible_devices());
    }
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
    b = cublasSetMathMode(st->blas, CUBLAS_DEFAULT_MATH); /* plain fp32, no TF32 */
    if (b != CUBLAS_STATUS_SUCCESS)
        return hpcti_error(ctx, HPCT_ERR_DEVICE,
                           "cuda backend: cublasSetMathMode on CUDA device %d failed: %s",
                           st->device, cublasGetStatusString(b));
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
    if (st->blas || st->scratch) { /* on its device, not device 0 from an unbound thread */
        cudaSetDevice(st->device);
        if (st->blas) cublasDestroy(st->blas);
        cudaFree(st->scratch);
        cudaFree(st->workspace);
        if (st->capture) cudaStreamDestroy(st->capture);
    }
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

/* The failing CUDA call, named, as the context's error. */
static hpct_status_t cuda_fail(hpct_ctx_t ctx, const char *call, cudaError_t e)
{
    return hpcti_error(ctx, HPCT_ERR_DEVICE, "cuda backend: %s on CUDA device %d failed: %s (%s)",
                       call, state_of(ctx)->device, cudaGetErrorString(e), cudaGetErrorName(e));
}

/* What a recording cannot hold (an allocation, a wait: they would run at capture, not at each
 * replay, or break the capture): HPCT_ERR_STATE naming it; 0 outside a recording. */
static hpct_status_t refused_while_recording(hpct_ctx_t ctx, const char *what)
{
    if (!state_of(ctx) || state_of(ctx)->recording == REC_OFF) return HPCT_SUCCESS;
    return hpcti_error(ctx, HPCT_ERR_STATE, "cuda backend: %s inside a recorded step", what);
}

/* Zeroed device memory. cudaMemset returns before the fill is done, and neither a stream
 * of NCCL's nor a CUDA-aware MPI receive is ordered after it, so the fill is waited for. Only
 * an allocation failure is HPCT_ERR_NO_MEMORY; another error (an earlier kernel's fault
 * surfacing here) is HPCT_ERR_DEVICE. */
static void *cuda_alloc(hpct_ctx_t ctx, size_t bytes)
{
    if (refused_while_recording(ctx, "an allocation of device memory")) return NULL;
    void *p = NULL;
    size_t rounded = bytes ? bytes : 1;
    const char *call = "cudaSetDevice";
    cudaError_t e = cudaSetDevice(state_of(ctx)->device); /* any library thread */
    if (e == cudaSuccess) call = "cudaMalloc", e = cudaMalloc(&p, rounded);
    if (e == cudaSuccess) call = "cudaMemset", e = cudaMemset(p, 0, rounded);
    if (e == cudaSuccess) call = "cudaStreamSynchronize", e = cudaStreamSynchronize(0);
    if (e == cudaSuccess) return p;
    cudaFree(p);
    if (e == cudaErrorMemoryAllocation)
        hpcti_error(ctx, HPCT_ERR_NO_MEMORY,
                    "cuda backend: cannot allocate %zu bytes on CUDA device %d: %s", bytes,
                    state_of(ctx)->device, cudaGetErrorString(e));
    else
        cuda_fail(ctx, call, e);
    return NULL;
}

/* cudaFree and cudaFreeHost on the context's device: from a thread that never made it current,
 * CUDA would otherwise create a context on device 0 first. */
static void cuda_free(hpct_ctx_t ctx, void *dev)
{
    if (!dev) return;
    if (state_of(ctx)) cudaSetDevice(state_of(ctx)->device);
    cudaFree(dev);
}

/* Pinned (page-locked) host memory: DMA without a bounce, and MPI may read it at once. */
static void *cuda_alloc_host(hpct_ctx_t ctx, size_t bytes)
{
    if (refused_while_recording(ctx, "an allocation of pinned memory")) return NULL;
    void *p = NULL;
    size_t rounded = bytes ? bytes : 1;
    const char *call = "cudaSetDevice";
    cudaError_t e = cudaSetDevice(state_of(ctx)->device);
    if (e == cudaSuccess) call = "cudaMallocHost", e = cudaMallocHost(&p, rounded);
    if (e == cudaErrorMemoryAllocation) {
        hpcti_error(ctx, HPCT_ERR_NO_MEMORY, "cuda backend: cudaMallocHost of %zu bytes failed: %s",
                    bytes, cudaGetErrorString(e));
        return NULL;
    }
    if (e != cudaSuccess) {
        cuda_fail(ctx, call, e); /* HPCT_ERR_DEVICE: not a shortage of memory */
        return NULL;
    }
    memset(p, 0, rounded);
    return p;
}

static void cuda_free_host(hpct_ctx_t ctx, void *host)
{
    if (!host) return;
    if (state_of(ctx)) cudaSetDevice(state_of(ctx)->device);
    cudaFreeHost(host);
}

/* Make the context's device current on the calling thread (any library thread may call). */
static hpct_status_t bind_thread(hpct_ctx_t ctx)
{
    cudaError_t e = cudaSetDevice(state_of(ctx)->device);
    return e == cudaSuccess ? HPCT_SUCCESS : cuda_fail(ctx, "cudaSetDevice", e);
}

/* A kernel launch wrapper's cudaError_t (0: queued) as a status naming the kernel. */
static hpct_status_t launched(hpct_ctx_t ctx, const char *kernel, int err)
{
    return err == cudaSuccess ? HPCT_SUCCESS : cuda_fail(ctx, kernel, (cudaError_t)err);
}

/* Host or device to device or host: UVA tells the direction. cudaMemcpy on the legacy
 * default stream waits for the kernels queued before it, so a device-to-host copy returns
 * current data, and an error of an earlier kernel surfaces here. */
/* Device or managed memory (read by the kernels in place); host memory, registered or not,
 * is 0. A pointer the runtime does not know (older CUDA: cudaErrorInvalidValue for plain host
 * memory) is host memory, and the error it leaves is cleared. */
static int cuda_is_device(hpct_ctx_t ctx, const void *p)
{
    struct cudaPointerAttributes a;
    if (!p || bind_thread(ctx)) return 0;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

/* Inside a recording the copy is queued, not waited for, on the recording's stream: its host
 * end must be pinned memory (a captured copy reads or writes it at every replay). Checked when
 * the recording runs uncaptured, as every shape's first step does with the buffers its capture
 * then uses: no query then runs on the capturing thread. */
static hpct_status_t recorded_copy(hpct_ctx_t ctx, void *dst, const void *src, size_t bytes)
{
    struct cudaPointerAttributes a;
    const void *sides[2] = {dst, src};
    for (int i = 0; i < 2 && state_of(ctx)->recording == REC_QUEUED; i++)
        if (cudaPointerGetAttributes(&a, sides[i]) != cudaSuccess ||
            a.type == cudaMemoryTypeUnregistered) {
            (void)cudaGetLastError();
            return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                               "cuda backend: a recorded copy's %s (%p) is not pinned or device "
                               "memory",
                               i ? "source" : "destination", sides[i]);
        }
    cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_of(ctx));
    return e == cudaSuccess ? HPCT_SUCCESS : cuda_fail(ctx, "cudaMemcpyAsync", e);
}

static hpct_status_t cuda_copy(hpct_ctx_t ctx, void *dst, const void *src, size_t bytes)
{
    if (!bytes || dst == src) return HPCT_SUCCESS;
    hpct_status_t s = bind_thread(ctx);
    if (s) return s;
    if (state_of(ctx)->recording != REC_OFF) return recorded_copy(ctx, dst, src, bytes);
    cudaError_t e = cudaMemcpy(dst, src, bytes, cudaMemcpyDefault);
    return e == cudaSuccess ? HPCT_SUCCESS : cuda_fail(ctx, "cudaMemcpy", e);
}

/* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T (hpcti_gemm_map). */
static hpct_status_t cuda_gemm(hpct_ctx_t ctx, int ta, int tb, int m, int n, int k, float alpha,
                               const float *a, const float *b, float beta, float *c)
{
    struct hpcti_gemm_args g;
    if (!hpcti_gemm_map(ta, tb, m, n, k, &g)) return HPCT_SUCCESS;
    hpct_status_t s = bind_thread(ctx);
    if (s) return s;
    cublasStatus_t st =
        cublasSgemm(state_of(ctx)->blas, g.col.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                    g.col.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, g.col.m, g.col.n, g.col.k, &alpha, b,
                    g.col.lda, a, g.col.ldb, &beta, c, g.col.ldc);
    if (st == CUBLAS_STATUS_SUCCESS) return HPCT_SUCCESS;
    return hpcti_error(ctx, HPCT_ERR_DEVICE,
                       "cuda backend: cublasSgemm (%d x %d x %d, trans %d%d) on CUDA device %d "
                       "failed: %s",
                       m, n, k, ta, tb, state_of(ctx)->device, cublasGetStatusString(st));
}

static hpct_status_t cuda_bias_act(hpct_ctx_t ctx, int act, float *z, const float *bias, float *y,
                                   int rows, int cols)
{
    hpct_status_t s = bind_thread(ctx);
    return s ? s
             : launched(ctx, "bias_act_kernel launch",
                        hpcti_k_bias_act(stream_of(ctx), act, z, bias, y, rows, cols));
}

static hpct_status_t cuda_act_backward(hpct_ctx_t ctx, int act, const float *z, const float *y,
                                       const float *dy, float *dz, size_t n)
{
    hpct_status_t s = bind_thread(ctx);
    return s ? s
             : launched(ctx, "act_backward_kernel launch",
                        hpcti_k_act_backward(stream_of(ctx), act, z, y, dy, dz, n));
}

static hpct_status_t cuda_bias_grad(hpct_ctx_t ctx, const float *dz, float *db, int rows, int cols,
                                    int accumulate)
{
    hpct_status_t s = bind_thread(ctx);
    return s ? s
             : launched(ctx, "bias_grad_kernel launch",
                        hpcti_k_bias_grad(stream_of(ctx), dz, db, rows, cols, accumulate));
}

static hpct_status_t cuda_im2col(hpct_ctx_t ctx, const struct hpcti_geom *g, const float *x,
                                 float *col, int batch)
{
    hpct_status_t s = bind_thread(ctx);
    return s ? s
             : launched(ctx, "im2col_kernel launch",
                        hpcti_k_im2col(stream_of(ctx), g, x, col, batch));
}

static hpct_status_t cuda_col2im(hpct_ctx_t ctx, const struct hpcti_geom *g, float *dcol, float *dx,
                                 int batch)
{
    hpct_status_t s = bind_thread(ctx);
    return s ? s
             : launched(ctx, "col2im_kernel launch",
                        hpcti_k_col2im(stream_of(ctx), g, dcol, dx, batch));
}

static hpct_status_t cuda_channel_bias_act(hpct_ctx_t ctx, int act, float *z, const float *bias,
                                           float *y, int batch, int channels, size_t spatial)
{
    hpct_status_t s = bind_thread(ctx);
    return s ? s
             : launched(ctx, "channel_bias_act_kernel launch",
                        hpcti_k_channel_bias_act(stream_of(ctx), act, z, bias, y, batch, channels,
                                                 spatial));
}

static hpct_status_t cuda_channel_bias_grad(hpct_ctx_t ctx, const float *dz, float *db, int batch,
                                            int channels, size_t spatial, int accumulate)
{
    hpct_status_t s = bind_thread(ctx);
    return s ? s
             : launched(ctx, "channel_bias_grad_kernel launch",
                        hpcti_k_channel_bias_grad(stream_of(ctx), dz, db, batch, channels, spatial,
                                                  accumulate));
}

static hpct_status_t cuda_window_fwd(hpct_ctx_t ctx, const struct hpcti_geom *g, const float *x,
                                     float *y, int batch)
{
    hpct_status_t s = bind_thread(ctx);
    return s ? s
             : launched(ctx, "window_fwd_kernel launch",
                        hpcti_k_window_fwd(stream_of(ctx), g, x, y, batch));
}

static hpct_status_t cuda_window_bwd(hpct_ctx_t ctx, const struct hpcti_geom *g, const float *x,
                                     const float *dy, float *dx, int batch)
{
    hpct_status_t s = bind_thread(ctx);
    return s ? s
             : launched(ctx, "window_bwd_kernel launch",
                        hpcti_k_window_bwd(stream_of(ctx), g, x, dy, dx, batch));
}

/* Copy a reduction's result to the host (this waits for the kernels); the launch error of
 * either pass, or the copy's (an earlier kernel's fault surfaces here), named. Inside a
 * recording the result goes to the recording's next slot instead (*out is NaN). */
static hpct_status_t fetch_result(hpct_ctx_t ctx, int launch_error, const char *what, double *out)
{
    struct cuda_state *st = state_of(ctx);
    *out = NAN;
    if (launch_error != cudaSuccess) return cuda_fail(ctx, what, (cudaError_t)launch_error);
    if (st->recording != REC_OFF) { /* the result to its slot; the host reads it later */
        if (st->slots == st->max_slots)
            return hpcti_error(ctx, HPCT_ERR_INTERNAL,
                               "cuda backend: %s: a recorded step has room for %d results", what,
                               st->max_slots);
        cudaError_t e = cudaMemcpyAsync(st->results + st->slots++, st->scratch + HPCTI_K_MAX_BLOCKS,
                                        sizeof *out, cudaMemcpyDeviceToDevice, stream_of(ctx));
        return e == cudaSuccess ? HPCT_SUCCESS : cuda_fail(ctx, "cudaMemcpyAsync of a result", e);
    }
    cudaError_t e =
        cudaMemcpy(out, st->scratch + HPCTI_K_MAX_BLOCKS, sizeof *out, cudaMemcpyDeviceToHost);
    if (e == cudaSuccess) return HPCT_SUCCESS;
    *out = NAN;
    return cuda_fail(ctx, "cudaMemcpy of a reduction result", e);
}

static hpct_status_t cuda_softmax_xent(hpct_ctx_t ctx, const float *logits, const int32_t *labels,
                                       float *dlogits, int rows, int cols, float scale,
                                       double *loss)
{
    hpct_status_t s = bind_thread(ctx);
    if (s) return s;
    int e = hpcti_k_softmax_xent(stream_of(ctx), logits, labels, dlogits, rows, cols, scale,
                                 state_of(ctx)->scratch);
    return fetch_result(ctx, e, "softmax_xent_kernel launch", loss);
}

static hpct_status_t cuda_count_correct(hpct_ctx_t ctx, const float *logits, const int32_t *labels,
                                        int rows, int cols, long *correct)
{
    hpct_status_t s = bind_thread(ctx);
    if (s) return s;
    double n;
    int e =
        hpcti_k_count_correct(stream_of(ctx), logits, labels, rows, cols, state_of(ctx)->scratch);
    s = fetch_result(ctx, e, "count_correct_kernel launch", &n);
    *correct = s ? 0 : (long)n;
    return s;
}

static hpct_status_t cuda_mse(hpct_ctx_t ctx, const float *out, const float *targets, float *dout,
                              size_t n, float scale, double *sum)
{
    hpct_status_t s = bind_thread(ctx);
    if (s) return s;
    int e = hpcti_k_mse(stream_of(ctx), out, targets, dout, n, scale, state_of(ctx)->scratch);
    return fetch_result(ctx, e, "mse_kernel launch", sum);
}

static hpct_status_t cuda_sumsq(hpct_ctx_t ctx, const float *x, size_t n, double *sum)
{
    hpct_status_t s = bind_thread(ctx);
    if (s) return s;
    return fetch_result(ctx, hpcti_k_sumsq(stream_of(ctx), x, n, state_of(ctx)->scratch),
                        "sum-of-squares kernel launch", sum);
}

static hpct_status_t cuda_scale(hpct_ctx_t ctx, float *x, float alpha, size_t n)
{
    hpct_status_t s = bind_thread(ctx);
    if (s || n == 0) return s;
    if (alpha != 0.0f)
        return launched(ctx, "scale_kernel launch", hpcti_k_scale(stream_of(ctx), x, alpha, n));
    cudaError_t e = cudaMemsetAsync(x, 0, sizeof(float) * n, stream_of(ctx));
    return e == cudaSuccess ? HPCT_SUCCESS : cuda_fail(ctx, "cudaMemsetAsync", e);
}

static hpct_status_t cuda_all_finite(hpct_ctx_t ctx, const float *x, size_t n, int *finite)
{
    hpct_status_t s = bind_thread(ctx);
    if (s) return s;
    double bad;
    s = fetch_result(ctx, hpcti_k_count_nonfinite(stream_of(ctx), x, n, state_of(ctx)->scratch),
                     "non-finite count kernel launch", &bad);
    *finite = !s && bad == 0.0;
    return s;
}

static hpct_status_t cuda_sgd(hpct_ctx_t ctx, float *p, const float *g, float *v, size_t n,
                              float lr, float mu, int nesterov, float wd, float gscale)
{
    hpct_status_t s = bind_thread(ctx);
    return s ? s
             : launched(ctx, "sgd_kernel launch",
                        hpcti_k_sgd(stream_of(ctx), p, g, v, n, lr, mu, nesterov, wd, gscale));
}

static hpct_status_t cuda_adamw(hpct_ctx_t ctx, float *p, const float *g, float *m, float *v,
                                size_t n, float lr, float b1, float b2, float eps, float wd,
                                float c1, float c2, float gscale)
{
    hpct_status_t s = bind_thread(ctx);
    return s ? s
             : launched(ctx, "adamw_kernel launch",
                        hpcti_k_adamw(stream_of(ctx), p, g, m, v, n, lr, b1, b2, eps, wd, c1, c2,
                                      gscale));
}

static hpct_status_t cuda_sgd_gated(hpct_ctx_t ctx, float *p, const float *g, float *v, size_t n,
                                    const float *sc, const int *gate, float mu, int nesterov,
                                    float wd)
{
    hpct_status_t s = bind_thread(ctx);
    return s ? s
             : launched(ctx, "sgd_gated_kernel launch",
                        hpcti_k_sgd_gated(stream_of(ctx), p, g, v, n, sc, gate, mu, nesterov, wd));
}

static hpct_status_t cuda_adamw_gated(hpct_ctx_t ctx, float *p, const float *g, float *m, float *v,
                                      size_t n, const float *sc, const int *gate, float b1,
                                      float b2, float eps, float wd)
{
    hpct_status_t s = bind_thread(ctx);
    return s ? s
             : launched(
                   ctx, "adamw_gated_kernel launch",
                   hpcti_k_adamw_gated(stream_of(ctx), p, g, m, v, n, sc, gate, b1, b2, eps, wd));
}

static hpct_status_t cuda_step_gate(hpct_ctx_t ctx, const double *results, int sums, float clip,
                                    float *sc, int *gate)
{
    hpct_status_t s = bind_thread(ctx);
    return s ? s
             : launched(ctx, "step_gate_kernel launch",
                        hpcti_k_step_gate(stream_of(ctx), results, sums, clip, sc, gate));
}

/* The capture stream and the products' workspace, made at the first capture. */
static hpct_status_t capture_resources(hpct_ctx_t ctx, struct cuda_state *st)
{
    cudaError_t e = cudaSuccess;
    if (!st->capture) e = cudaStreamCreateWithFlags(&st->capture, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
        st->capture = NULL;
        return cuda_fail(ctx, "cudaStreamCreateWithFlags", e);
    }
    if (!st->workspace && (e = cudaMalloc(&st->workspace, WORKSPACE_BYTES)) != cudaSuccess) {
        st->workspace = NULL;
        return cuda_fail(ctx, "cudaMalloc of the cuBLAS workspace", e);
    }
    return HPCT_SUCCESS;
}

/* cuBLAS on the capture stream with its own workspace, or back on the legacy stream (which
 * also gives back cuBLAS's own workspace). */
static hpct_status_t blas_on(hpct_ctx_t ctx, struct cuda_state *st, int capture)
{
    cublasStatus_t b = cublasSetStream(st->blas, capture ? st->capture : NULL);
    if (b == CUBLAS_STATUS_SUCCESS && capture)
        b = cublasSetWorkspace(st->blas, st->workspace, WORKSPACE_BYTES);
    if (b == CUBLAS_STATUS_SUCCESS) return HPCT_SUCCESS;
    return hpcti_error(
        ctx, HPCT_ERR_DEVICE, "cuda backend: cublasSetStream%s on CUDA device %d failed: %s",
        capture ? " or cublasSetWorkspace" : "", st->device, cublasGetStatusString(b));
}

static hpct_status_t cuda_rec_end(hpct_ctx_t ctx, void **graph);

/* Begin a recording: later ops are queued without waits (capture 0), or captured into a graph
 * (capture 1); each reduction's result goes to results [slot] (device, slots of them), in call
 * order. */
static hpct_status_t cuda_rec_begin(hpct_ctx_t ctx, double *results, int slots, int capture)
{
    struct cuda_state *st = state_of(ctx);
    hpct_status_t s = refused_while_recording(ctx, "a recording");
    if (!s) s = bind_thread(ctx);
    if (!s && capture) s = capture_resources(ctx, st);
    if (s) return s;
    if (capture) {
        /* thread-local: the library's other threads (checkpoint writer, prefetch) and the
         * caller's keep their CUDA calls; the capture stream is non-blocking, so the legacy
         * stream's work never joins the capture */
        cudaError_t e = cudaStreamBeginCapture(st->capture, cudaStreamCaptureModeThreadLocal);
        if (e != cudaSuccess) return cuda_fail(ctx, "cudaStreamBeginCapture", e);
    }
    st->recording = capture ? REC_CAPTURED : REC_QUEUED;
    st->results = results, st->slots = 0, st->max_slots = slots;
    if (capture && (s = blas_on(ctx, st, 1))) cuda_rec_end(ctx, NULL); /* keeps s */
    return s;
}

/* End the recording; a capture becomes an executable graph in *graph (NULL: abandoned). */
static hpct_status_t cuda_rec_end(hpct_ctx_t ctx, void **graph)
{
    struct cuda_state *st = state_of(ctx);
    int captured = st->recording == REC_CAPTURED;
    if (graph) *graph = NULL;
    st->recording = REC_OFF;
    if (!captured) return HPCT_SUCCESS;
    hpct_status_t s = blas_on(ctx, st, 0);
    cudaGraph_t g = NULL;
    cudaGraphExec_t exec = NULL;
    cudaError_t e = cudaStreamEndCapture(st->capture, &g);
    if (e != cudaSuccess) (void)cudaGetLastError(); /* an invalidated capture is not sticky */
    if (graph && !s && e != cudaSuccess) s = cuda_fail(ctx, "cudaStreamEndCapture", e);
    if (graph && !s && (e = cudaGraphInstantiate(&exec, g, 0)) != cudaSuccess)
        s = cuda_fail(ctx, "cudaGraphInstantiate", e);
    if (g) cudaGraphDestroy(g);
    if (graph && !s) *graph = exec;
    return graph ? s : HPCT_SUCCESS; /* abandoned: the caller's error stands */
}

/* Queue the graph on the legacy stream (ordered with every other call of the context's). */
static hpct_status_t cuda_graph_launch(hpct_ctx_t ctx, void *graph)
{
    hpct_status_t s = bind_thread(ctx);
    if (s) return s;
    cudaError_t e = cudaGraphLaunch((cudaGraphExec_t)graph, NULL);
    return e == cudaSuccess ? HPCT_SUCCESS : cuda_fail(ctx, "cudaGraphLaunch", e);
}

static void cuda_graph_free(hpct_ctx_t ctx, void *graph)
{
    if (!graph) return;
    if (state_of(ctx)) cudaSetDevice(state_of(ctx)->device);
    cudaGraphExecDestroy((cudaGraphExec_t)graph);
}

/* Wait for the device: the first asynchronous error of the kernels queued so far. */
static hpct_status_t cuda_sync(hpct_ctx_t ctx)
{
    hpct_status_t s = refused_while_recording(ctx, "a wait for the device");
    if (!s) s = bind_thread(ctx);
    if (s) return s;
    cudaError_t e = cudaDeviceSynchronize();
    return e == cudaSuccess ? HPCT_SUCCESS : cuda_fail(ctx, "cudaDeviceSynchronize", e);
}

/* The device's UUID folded to 64 bits (FNV-1a): equal on two ranks when they share a GPU. */
hpct_status_t hpcti_cuda_identity(hpct_ctx_t ctx, uint64_t *id)
{
    struct cudaDeviceProp prop;
    cudaError_t e = cudaGetDeviceProperties(&prop, state_of(ctx)->device);
    if (e != cudaSuccess) return cuda_fail(ctx, "cudaGetDeviceProperties", e);
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < sizeof prop.uuid.bytes; i++)
        h = (h ^ (unsigned char)prop.uuid.bytes[i]) * 0x100000001b3ull;
    *id = h;
    return HPCT_SUCCESS;
}

/* A CUDA version number (1000 major + 10 minor) as "NAME M.m", or "NAME unknown (why)". */
static void cuda_version_text(char *out, size_t len, const char *name, cudaError_t e, int v)
{
    if (e != cudaSuccess)
        snprintf(out, len, "%s unknown (%s)", name, cudaGetErrorName(e));
    else
        snprintf(out, len, "%s %d.%d", name, v / 1000, v % 1000 / 10);
}

void hpcti_cuda_versions(hpct_ctx_t ctx, struct hpcti_device_versions *v)
{
    int driver = 0, runtime = 0, blas = 0, count = 0;
    cudaError_t e = cudaDriverGetVersion(&driver); /* before driver is read: its own statement */
    cuda_version_text(v->cuda_driver, sizeof v->cuda_driver, "CUDA driver", e, driver);
    e = cudaRuntimeGetVersion(&runtime);
    cuda_version_text(v->cuda_runtime, sizeof v->cuda_runtime, "CUDA runtime", e, runtime);
    struct cuda_state *st = state_of(ctx);
    /* cuBLAS numbers its versions major 10000 + minor 100 + patch (CUBLAS_VERSION) */
    if (st && st->blas && cublasGetVersion(st->blas, &blas) == CUBLAS_STATUS_SUCCESS)
        snprintf(v->cublas, sizeof v->cublas, "cuBLAS %d.%d.%d", blas / 10000, blas / 100 % 100,
                 blas % 100);
    else
        snprintf(v->cublas, sizeof v->cublas, "cuBLAS unknown");
    v->gpus_visible = cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

const struct hpcti_ops hpcti_cuda_ops = {
    .name = "cuda",
    .init = cuda_init,
    .finalize = cuda_finalize,
    .alloc = cuda_alloc,
    .free = cuda_free,
    .alloc_host = cuda_alloc_host,
    .free_host = cuda_free_host,
    .is_device = cuda_is_device,
    .to_device = cuda_copy,
    .to_host = cuda_copy,
    .gemm = cuda_gemm,
    .bias_act = cuda_bias_act,
    .act_backward = cuda_act_backward,
    .bias_grad = cuda_bias_grad,
    .im2col = cuda_im2col,
    .col2im = cuda_col2im,
    .channel_bias_act = cuda_channel_bias_act,
    .channel_bias_grad = cuda_channel_bias_grad,
    .window_fwd = cuda_window_fwd,
    .window_bwd = cuda_window_bwd,
    .softmax_xent = cuda_softmax_xent,
    .count_correct = cuda_count_correct,
    .mse = cuda_mse,
    .sumsq = cuda_sumsq,
    .scale = cuda_scale,
    .all_finite = cuda_all_finite,
    .sgd = cuda_sgd,
    .adamw = cuda_adamw,
    .sync = cuda_sync,
    .rec_begin = cuda_rec_begin,
    .rec_end = cuda_rec_end,
    .graph_launch = cuda_graph_launch,
    .graph_free = cuda_graph_free,
    .step_gate = cuda_step_gate,
    .sgd_gated = cuda_sgd_gated,
    .adamw_gated = cuda_adamw_gated,
};
