/* ops.h: the backend ops table. Model and optimizer code reach the hardware only
 * through these calls; pointers marked "dev" live where the backend keeps tensors.
 * Ops that need per-context backend state (the cuBLAS handle, reduction scratch) or can
 * fail on a device take the context first; the others run on the calling thread's device. */
#ifndef HPCTI_OPS_H
#define HPCTI_OPS_H

#include "../core/core.h"

struct hpcti_ops {
    const char *name;
    hpct_status_t (*init)(hpct_ctx_t ctx);
    void (*finalize)(hpct_ctx_t ctx);
    /* Zero-filled device memory; NULL on failure (error recorded on ctx). */
    void *(*alloc)(hpct_ctx_t ctx, size_t bytes);
    void (*free)(void *dev);
    void (*to_device)(void *dev, const void *host, size_t bytes);
    void (*to_host)(void *host, const void *dev, size_t bytes);
    /* Row-major C [m, n] = alpha op(A) op(B) + beta C; op(A) [m, k], op(B) [k, n]. */
    void (*gemm)(hpct_ctx_t ctx, int trans_a, int trans_b, int m, int n, int k, float alpha,
                 const float *a, const float *b, float beta, float *c);
    /* z [rows, cols] += bias [cols]; y = act(z) (y may alias z only for identity). */
    void (*bias_act)(int act, float *z, const float *bias, float *y, int rows, int cols);
    /* dz = dy * act'(z, y), n elements (dz may alias dy). */
    void (*act_backward)(int act, const float *z, const float *y, const float *dy, float *dz,
                         size_t n);
    /* db [cols] (=, or += when accumulate) column sums of dz [rows, cols]. */
    void (*bias_grad)(const float *dz, float *db, int rows, int cols, int accumulate);
    /* Softmax cross-entropy on logits [rows, cols] with labels [rows] (dev, checked in range):
     * returns the summed loss and writes dlogits = scale (softmax - onehot). */
    double (*softmax_xent)(hpct_ctx_t ctx, const float *logits, const int32_t *labels,
                           float *dlogits, int rows, int cols, float scale);
    /* Number of rows whose argmax equals the label. */
    long (*count_correct)(hpct_ctx_t ctx, const float *logits, const int32_t *labels, int rows,
                          int cols);
    /* Squared error: returns sum (out - t)^2 and writes dout = scale 2 (out - t), n elements. */
    double (*mse)(hpct_ctx_t ctx, const float *out, const float *targets, float *dout, size_t n,
                  float scale);
    /* Sum of squares in double precision. */
    double (*sumsq)(hpct_ctx_t ctx, const float *x, size_t n);
    /* x *= alpha; x = 0 when alpha is 0 (clears NaN too). */
    void (*scale)(float *x, float alpha, size_t n);
    /* 1 if every element is finite. */
    int (*all_finite)(hpct_ctx_t ctx, const float *x, size_t n);
    /* Optimizer updates over n elements (formulas in kernels/hpct_math.h); v may be NULL. */
    void (*sgd)(float *p, const float *g, float *v, size_t n, float lr, float mu, int nesterov,
                float wd, float gscale);
    void (*adamw)(float *p, const float *g, float *m, float *v, size_t n, float lr, float b1,
                  float b2, float eps, float wd, float c1, float c2, float gscale);
};

/* The table for a backend, or NULL when it was not built in. */
const struct hpcti_ops *hpcti_ops_lookup(hpct_backend_t backend);

extern const struct hpcti_ops hpcti_cpu_ops;
#ifdef HPCT_HAVE_CUDA
extern const struct hpcti_ops hpcti_cuda_ops;
#endif

#endif
