/* kernels.h: C launch wrappers for the CUDA kernels in kernels/ (elementwise.cu, reduce.cu,
 * conv.cu), used by lib/device/cuda.c and lib/comm/avg/nccl_node.c. Every pointer is device
 * memory; each wrapper launches on stream (a cudaStream_t; NULL: the legacy default stream) of the
 * calling thread's current device and returns the cudaError_t of its launch (0 when it was
 * queued). */
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
int hpcti_k_bias_act(void *stream, int act, float *z, const float *bias, float *y, int rows,
                     int cols);
/* dz = dy * act'(z, y), n elements (dz may alias dy). */
int hpcti_k_act_backward(void *stream, int act, const float *z, const float *y, const float *dy,
                         float *dz, size_t n);
/* db [cols] (=, or += when accumulate) column sums of dz [rows, cols]. */
int hpcti_k_bias_grad(void *stream, const float *dz, float *db, int rows, int cols, int accumulate);
/* x *= alpha, n elements (alpha 0 is handled by the caller with a memset). */
int hpcti_k_scale(void *stream, float *x, float alpha, size_t n);
/* own [n] = (sum over r = 0 .. nranks - 1, in that order, of (r == me ? own :
 * slots + (r < me ? r : r - 1) n)) times inv, fp32 (the host engine's owner sum, reduce.c:
 * first term copied, the others added one by one, then scaled; no fused multiply-add). */
int hpcti_k_rank_sum(void *stream, float *own, const float *slots, int nranks, int me, size_t n,
                     float inv);
/* SGD update (hpcti_sgd_update) over n elements; v may be NULL. */
int hpcti_k_sgd(void *stream, float *p, const float *g, float *v, size_t n, float lr, float mu,
                int nesterov, float wd, float gscale);
/* AdamW update (hpcti_adamw_update) over n elements. */
int hpcti_k_adamw(void *stream, float *p, const float *g, float *m, float *v, size_t n, float lr,
                  float b1, float b2, float eps, float wd, float c1, float c2, float gscale);

/* The fused step's update (lib/model/fused.c): the same updates, with the scalars that change
 * from step to step read from device memory when the kernel runs (sc [HPCTI_SC_COUNT] floats,
 * hpct_math.h), and nothing written unless *gate is nonzero. */
int hpcti_k_sgd_gated(void *stream, float *p, const float *g, float *v, size_t n, const float *sc,
                      const int *gate, float mu, int nesterov, float wd);
int hpcti_k_adamw_gated(void *stream, float *p, const float *g, float *m, float *v, size_t n,
                        const float *sc, const int *gate, float b1, float b2, float eps, float wd);
/* The fused step's verdict (hpcti_step_gate of hpct_math.h) from results [1 + sums] (device):
 * results[0] the loss sum; with clip > 0 the gradient buffers' sums of squares in buffer order,
 * else (sums 1) their non-finite count, or (sums 0) no check. *gate = 1 when the update may
 * run; sc[HPCTI_SC_GSCALE] the gradient scale. One thread. */
int hpcti_k_step_gate(void *stream, const double *results, int sums, float clip, float *sc,
                      int *gate);

/* Convolution layers (conv.cu; geometry and math: conv_math.h; shapes as the ops table's
 * im2col, col2im, channel_bias_act, channel_bias_grad, window_fwd and window_bwd). */
struct hpcti_geom;
int hpcti_k_im2col(void *stream, const struct hpcti_geom *g, const float *x, float *col, int batch);
int hpcti_k_col2im(void *stream, const struct hpcti_geom *g, const float *dcol, float *dx,
                   int batch);
int hpcti_k_channel_bias_act(void *stream, int act, float *z, const float *bias, float *y,
                             int batch, int channels, size_t spatial);
int hpcti_k_channel_bias_grad(void *stream, const float *dz, float *db, int batch, int channels,
                              size_t spatial, int accumulate);
int hpcti_k_window_fwd(void *stream, const struct hpcti_geom *g, const float *x, float *y,
                       int batch);
int hpcti_k_window_bwd(void *stream, const struct hpcti_geom *g, const float *x, const float *dy,
                       float *dx, int batch);

/* scratch[HPCTI_K_MAX_BLOCKS] = summed loss; dlogits = scale (softmax - onehot). */
int hpcti_k_softmax_xent(void *stream, const float *logits, const int32_t *labels, float *dlogits,
                         int rows, int cols, float scale, double *scratch);
/* scratch[HPCTI_K_MAX_BLOCKS] = rows whose first argmax equals the label. */
int hpcti_k_count_correct(void *stream, const float *logits, const int32_t *labels, int rows,
                          int cols, double *scratch);
/* scratch[HPCTI_K_MAX_BLOCKS] = sum (out - t)^2; dout = scale 2 (out - t). */
int hpcti_k_mse(void *stream, const float *out, const float *targets, float *dout, size_t n,
                float scale, double *scratch);
/* scratch[HPCTI_K_MAX_BLOCKS] = sum x^2 (double). */
int hpcti_k_sumsq(void *stream, const float *x, size_t n, double *scratch);
/* scratch[HPCTI_K_MAX_BLOCKS] = number of non-finite elements. */
int hpcti_k_count_nonfinite(void *stream, const float *x, size_t n, double *scratch);

#ifdef __cplusplus
}
#endif
#endif
