/* ops.h: the backend ops table. Model and optimizer code reach the hardware only
 * through these calls; pointers marked "dev" live where the backend keeps tensors.
 * Ops that need per-context backend state (the cuBLAS handle, reduction scratch) or can
 * fail on a device take the context first; the others run on the calling thread's device. */
#ifndef HPCTI_OPS_H
#define HPCTI_OPS_H

#include "../core/core.h"

struct hpcti_geom; /* a convolution, pooling or upsampling layer's shape: kernels/conv_math.h */

struct hpcti_ops {
    const char *name;
    hpct_status_t (*init)(hpct_ctx_t ctx);
    void (*finalize)(hpct_ctx_t ctx);
    /* Zero-filled device memory, zero when it returns (no later stream or MPI transfer can
     * see it earlier); NULL on failure (error recorded on ctx). */
    void *(*alloc)(hpct_ctx_t ctx, size_t bytes);
    void (*free)(hpct_ctx_t ctx, void *dev); /* on ctx's device, from any thread */
    /* Host memory the device copies to and from at full speed (cuda: pinned), zero-filled;
     * NULL on failure (error recorded on ctx). For staging before MPI touches a buffer. */
    void *(*alloc_host)(hpct_ctx_t ctx, size_t bytes);
    void (*free_host)(hpct_ctx_t ctx, void *host);
    /* 1 when the kernels read p in place: memory of a device (cuda: device or managed memory,
     * by cudaPointerGetAttributes); 0 for host memory, and always on the cpu backend. */
    int (*is_device)(hpct_ctx_t ctx, const void *p);
    /* Every op below returns its status: a failed device call is named in ctx's error. */
    hpct_status_t (*to_device)(hpct_ctx_t ctx, void *dev, const void *host, size_t bytes);
    /* Waits for the device work that writes dev before copying. */
    hpct_status_t (*to_host)(hpct_ctx_t ctx, void *host, const void *dev, size_t bytes);
    /* Row-major C [m, n] = alpha op(A) op(B) + beta C; op(A) [m, k], op(B) [k, n]
     * (argument mapping: hpcti_gemm_map in gpu_logic.h, shared by both backends). */
    hpct_status_t (*gemm)(hpct_ctx_t ctx, int trans_a, int trans_b, int m, int n, int k,
                          float alpha, const float *a, const float *b, float beta, float *c);
    /* z [rows, cols] += bias [cols]; y = act(z) (y may alias z only for identity). */
    hpct_status_t (*bias_act)(hpct_ctx_t ctx, int act, float *z, const float *bias, float *y,
                              int rows, int cols);
    /* dz = dy * act'(z, y), n elements (dz may alias dy). */
    hpct_status_t (*act_backward)(hpct_ctx_t ctx, int act, const float *z, const float *y,
                                  const float *dy, float *dz, size_t n);
    /* db [cols] (=, or += when accumulate) column sums of dz [rows, cols]. */
    hpct_status_t (*bias_grad)(hpct_ctx_t ctx, const float *dz, float *db, int rows, int cols,
                               int accumulate);
    /* Convolution, pooling and upsampling over batch samples of geometry g (formulas:
     * kernels/conv_math.h). col [batch, c_in kd kh kw, P] = the column matrix of x [batch,
     * c_in, D, H, W]; dx = its adjoint applied to dcol (dx is written, not added to; dcol is
     * scratch: the cpu backend zeroes its entries that fall in the padding). */
    hpct_status_t (*im2col)(hpct_ctx_t ctx, const struct hpcti_geom *g, const float *x, float *col,
                            int batch);
    hpct_status_t (*col2im)(hpct_ctx_t ctx, const struct hpcti_geom *g, float *dcol, float *dx,
                            int batch);
    /* Samples whose column matrix the layers build at a time (0: the whole batch): the cpu
     * backend takes one, so that it stays in cache from im2col through the GEMMs and col2im. */
    int col_samples;
    /* z [batch, channels, spatial] += bias [channels] (none when bias is NULL); y = act(z)
     * (y may alias z only for identity). */
    hpct_status_t (*channel_bias_act)(hpct_ctx_t ctx, int act, float *z, const float *bias,
                                      float *y, int batch, int channels, size_t spatial);
    /* db [channels] (=, or += when accumulate) sums of dz [batch, channels, spatial]. */
    hpct_status_t (*channel_bias_grad)(hpct_ctx_t ctx, const float *dz, float *db, int batch,
                                       int channels, size_t spatial, int accumulate);
    /* Optional (NULL: act_backward, then channel_bias_grad): both in one pass, dz [batch,
     * channels, spatial] = dz act'(z, y) in place and db its channel sums, bit for bit theirs. */
    hpct_status_t (*channel_act_bias_grad)(hpct_ctx_t ctx, int act, const float *z, const float *y,
                                           float *dz, float *db, int batch, int channels,
                                           size_t spatial, int accumulate);
    /* Pooling or upsampling: y [batch, c, out] of x [batch, c, in]; dx (written) of dy. */
    hpct_status_t (*window_fwd)(hpct_ctx_t ctx, const struct hpcti_geom *g, const float *x,
                                float *y, int batch);
    hpct_status_t (*window_bwd)(hpct_ctx_t ctx, const struct hpcti_geom *g, const float *x,
                                const float *dy, float *dx, int batch);
    /* Softmax cross-entropy on logits [rows, cols] with labels [rows] (dev, checked in range):
     * *loss = the summed loss; dlogits = scale (softmax - onehot). */
    hpct_status_t (*softmax_xent)(hpct_ctx_t ctx, const float *logits, const int32_t *labels,
                                  float *dlogits, int rows, int cols, float scale, double *loss);
    /* *correct = number of rows whose argmax equals the label. */
    hpct_status_t (*count_correct)(hpct_ctx_t ctx, const float *logits, const int32_t *labels,
                                   int rows, int cols, long *correct);
    /* Squared error: *sum = sum (out - t)^2; dout = scale 2 (out - t), n elements. */
    hpct_status_t (*mse)(hpct_ctx_t ctx, const float *out, const float *targets, float *dout,
                         size_t n, float scale, double *sum);
    /* *sum = sum of squares in double precision. */
    hpct_status_t (*sumsq)(hpct_ctx_t ctx, const float *x, size_t n, double *sum);
    /* x *= alpha; x = 0 when alpha is 0 (clears NaN too). */
    hpct_status_t (*scale)(hpct_ctx_t ctx, float *x, float alpha, size_t n);
    /* *finite = 1 if every element is finite. */
    hpct_status_t (*all_finite)(hpct_ctx_t ctx, const float *x, size_t n, int *finite);
    /* Optimizer updates over n elements (formulas in kernels/hpct_math.h); v may be NULL. */
    hpct_status_t (*sgd)(hpct_ctx_t ctx, float *p, const float *g, float *v, size_t n, float lr,
                         float mu, int nesterov, float wd, float gscale);
    hpct_status_t (*adamw)(hpct_ctx_t ctx, float *p, const float *g, float *m, float *v, size_t n,
                           float lr, float b1, float b2, float eps, float wd, float c1, float c2,
                           float gscale);
    /* Wait until the device work queued so far is done; its first error (the failing call
     * named). Before a host read that depends on device work, and at the end of a step. */
    hpct_status_t (*sync)(hpct_ctx_t ctx);

    /* Recorded steps (cuda; NULL on cpu): lib/model/fused.c. Between rec_begin and rec_end the
     * ops above are queued and never waited for: each reduction puts its result in the next
     * of the slots of results (device doubles, in call order; one more is HPCT_ERR_INTERNAL)
     * instead of *out; to_device and to_host need pinned host memory (alloc_host) and return
     * at once; alloc, alloc_host and sync are refused. With capture, the ops are captured into
     * a graph instead of run: rec_end makes it executable in *graph (graph NULL: abandoned),
     * graph_launch queues it in order with the context's other work (wait with sync),
     * graph_free frees it. */
    hpct_status_t (*rec_begin)(hpct_ctx_t ctx, double *results, int slots, int capture);
    hpct_status_t (*rec_end)(hpct_ctx_t ctx, void **graph);
    hpct_status_t (*graph_launch)(hpct_ctx_t ctx, void *graph);
    void (*graph_free)(hpct_ctx_t ctx, void *graph);
    /* On the device (kernels/hpct_math.h hpcti_step_gate): *gate (device int) = whether the
     * update may run, from results [1 + sums]; sc [HPCTI_SC_GSCALE] its gradient scale. */
    hpct_status_t (*step_gate)(hpct_ctx_t ctx, const double *results, int sums, float clip,
                               float *sc, int *gate);
    /* sgd and adamw with lr, c1, c2 and gscale read from sc [HPCTI_SC_COUNT] (device) when
     * they run, and nothing written unless *gate (device) is nonzero. */
    hpct_status_t (*sgd_gated)(hpct_ctx_t ctx, float *p, const float *g, float *v, size_t n,
                               const float *sc, const int *gate, float mu, int nesterov, float wd);
    hpct_status_t (*adamw_gated)(hpct_ctx_t ctx, float *p, const float *g, float *m, float *v,
                                 size_t n, const float *sc, const int *gate, float b1, float b2,
                                 float eps, float wd);
};

/* A context with its backend's table but the backend not started (hpct_init binds it once the
 * node communicator gives the local rank); hpct_ctx_destroy frees it either way. */
HPCTI_CHECK hpct_status_t hpcti_ctx_create_unbound(const hpct_config_t *cfg, hpct_ctx_t *out);
/* Start the backend for local rank local_rank of local_size on the node (0, 0: unknown, the
 * launcher's environment is read); the cuda backend selects its device here. */
HPCTI_CHECK hpct_status_t hpcti_ctx_bind(hpct_ctx_t ctx, int local_rank, int local_size);
/* Nonzero when HPCT_ALLOW_GPU_SHARING allows several ranks of a node on one device. */
int hpcti_gpu_sharing_allowed(void);
/* A 64-bit identity of the context's device (cuda: its UUID folded; cpu: 0, never shared). */
HPCTI_CHECK hpct_status_t hpcti_device_identity(hpct_ctx_t ctx, uint64_t *id);

/* The libraries the backend computes with, for the version comparisons across ranks of
 * hpct_init and hpct_doctor (lib/comm/runtime/versions.c): "" where one does not apply. */
struct hpcti_device_versions {
    char blas[160];        /* the host BLAS: OpenBLAS's configuration string, or "CBLAS" */
    char cuda_driver[48];  /* cuda backend: "CUDA driver 12.4" */
    char cuda_runtime[48]; /* cuda backend: "CUDA runtime 12.4" */
    char cublas[48];       /* cuda backend: "cuBLAS 12.4.5" */
    int gpus_visible;      /* cuda backend: cudaGetDeviceCount (0 on cpu or on failure) */
};
void hpcti_device_versions(hpct_ctx_t ctx, struct hpcti_device_versions *v);
/* The cpu backend's part: the BLAS into out [len] (cpu.c). */
void hpcti_cpu_blas_version(char *out, size_t len);

/* The table for a backend, or NULL when it was not built in. */
const struct hpcti_ops *hpcti_ops_lookup(hpct_backend_t backend);

extern const struct hpcti_ops hpcti_cpu_ops;
#ifdef HPCT_HAVE_CUDA
extern const struct hpcti_ops hpcti_cuda_ops;
/* The cuda backend's hpcti_device_identity (cuda.c). */
HPCTI_CHECK hpct_status_t hpcti_cuda_identity(hpct_ctx_t ctx, uint64_t *id);
/* The cuda backend's part of hpcti_device_versions (cuda.c). */
void hpcti_cuda_versions(hpct_ctx_t ctx, struct hpcti_device_versions *v);
#endif

#endif
