/* kernels.h: C launch wrappers for the CUDA kernels in kernels/ (elementwise.cu, reduce.cu,
 * conv.cu), used by lib/device/cuda.c. Every pointer is device memory; launches go to the default
 * stream of the calling thread's current device. Each wrapper returns the cudaError_t of its launch
 * (0 when it was queued). */
#ifndef HPCTI_KERNELS_H
#define HPCTI_KERNELS_H

#include "gpu_logic.h" /* launch geometry and HPCTI_K_MAX_BLOCKS */

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Reductions write one double per block into scratch[0 .. HPCTI_K_MAX_BLOCKS) and the
 * final value into scratch[HPCTI_K_MAX_BLOCKS]; scratch holds HPCTI_K_SCRATCH doubles. */
#define HPCTI_K_SCRATCH (HPCTI_K_MAX_BLOCKS + 1)

/* z [rows, cols] += bias [cols]; y = act(z). */
int hpcti_k_bias_act(int act, float *z, const float *bias, float *y, int rows, int cols);
/* dz = dy * act'(z, y), n elements (dz may alias dy). */
int hpcti_k_act_backward(int act, const float *z, const float *y, const float *dy, float *dz,
                         size_t n);
/* db [cols] (=, or += when accumulate) column sums of dz [rows, cols]. */
int hpcti_k_bias_grad(const float *dz, float *db, int rows, int cols, int accumulate);
/* x *= alpha, n elements (alpha 0 is handled by the caller with a memset). */
int hpcti_k_scale(float *x, float alpha, size_t n);
/* The same on stream (a cudaStream_t), for NCCL's stream (lib/comm/avg/nccl_node.c). */
int hpcti_k_scale_on(float *x, float alpha, size_t n, void *stream);
/* On stream: own [n] = (sum over r = 0 .. nranks - 1, in that order, of (r == me ? own :
 * slots + (r < me ? r : r - 1) n)) times inv, fp32 (the host engine's owner sum, reduce.c:
 * first term copied, the others added one by one, then scaled; no fused multiply-add). */
int hpcti_k_rank_sum_on(float *own, const float *slots, int nranks, int me, size_t n, float inv,
                        void *stream);
/* SGD update (hpcti_sgd_update) over n elements; v may be NULL. */
int hpcti_k_sgd(float *p, const float *g, float *v, size_t n, float lr, float mu, int nesterov,
                float wd, float gscale);
/* AdamW update (hpcti_adamw_update) over n elements. */
int hpcti_k_adamw(float *p, const float *g, float *m, float *v, size_t n, float lr, float b1,
                  float b2, float eps, float wd, float c1, float c2, float gscale);

/* Convolution layers (conv.cu; geometry and math: conv_math.h; shapes as the ops table's
 * im2col, col2im, channel_bias_act, channel_bias_grad, window_fwd and window_bwd). */
struct hpcti_geom;
int hpcti_k_im2col(const struct hpcti_geom *g, const float *x, float *col, int batch);
int hpcti_k_col2im(const struct hpcti_geom *g, const float *dcol, float *dx, int batch);
int hpcti_k_channel_bias_act(int act, float *z, const float *bias, float *y, int batch,
                             int channels, size_t spatial);
int hpcti_k_channel_bias_grad(const float *dz, float *db, int batch, int channels, size_t spatial,
                              int accumulate);
int hpcti_k_window_fwd(const struct hpcti_geom *g, const float *x, float *y, int batch);
int hpcti_k_window_bwd(const struct hpcti_geom *g, const float *x, const float *dy, float *dx,
                       int batch);

/* scratch[HPCTI_K_MAX_BLOCKS] = summed loss; dlogits = scale (softmax - onehot). */
int hpcti_k_softmax_xent(const float *logits, const int32_t *labels, float *dlogits, int rows,
                         int cols, float scale, double *scratch);
/* scratch[HPCTI_K_MAX_BLOCKS] = rows whose first argmax equals the label. */
int hpcti_k_count_correct(const float *logits, const int32_t *labels, int rows, int cols,
                          double *scratch);
/* scratch[HPCTI_K_MAX_BLOCKS] = sum (out - t)^2; dout = scale 2 (out - t). */
int hpcti_k_mse(const float *out, const float *targets, float *dout, size_t n, float scale,
                double *scratch);
/* scratch[HPCTI_K_MAX_BLOCKS] = sum x^2 (double). */
int hpcti_k_sumsq(const float *x, size_t n, double *scratch);
/* scratch[HPCTI_K_MAX_BLOCKS] = number of non-finite elements. */
int hpcti_k_count_nonfinite(const float *x, size_t n, double *scratch);

#ifdef __cplusplus
}
#endif
#endif
