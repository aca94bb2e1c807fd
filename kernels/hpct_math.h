/* hpct_math.h: element-wise formulas shared by the cpu backend and the CUDA kernels.
 * Every function is a pure scalar formula so the CPU tests cover the GPU math too.
 * Not installed: its names carry the library's internal prefix hpcti_/HPCTI_. */
#ifndef HPCTI_MATH_H
#define HPCTI_MATH_H

#include <math.h>

#ifdef __CUDACC__
#define HPCTI_HD __host__ __device__ static inline
#else
#define HPCTI_HD static inline
#endif

/* Activation codes, equal to hpct_activation_t. */
#define HPCTI_MATH_IDENTITY 0
#define HPCTI_MATH_RELU     1
#define HPCTI_MATH_TANH     2
#define HPCTI_MATH_GELU     3

/* GELU, tanh approximation: 0.5 z (1 + tanh(sqrt(2/pi) (z + 0.044715 z^3))). */
#define HPCTI_GELU_K0 0.7978845608028654f
#define HPCTI_GELU_K1 0.044715f

HPCTI_HD float hpcti_act_fwd(int act, float z)
{
    switch (act) {
    case HPCTI_MATH_RELU: return z < 0.0f ? 0.0f : z; /* NaN passes through */
    case HPCTI_MATH_TANH: return tanhf(z);
    case HPCTI_MATH_GELU: {
        float u = HPCTI_GELU_K0 * (z + HPCTI_GELU_K1 * z * z * z);
        return 0.5f * z * (1.0f + tanhf(u));
    }
    default: return z;
    }
}

/* d act(z) / dz, given the pre-activation z and the output y = act(z). */
HPCTI_HD float hpcti_act_deriv(int act, float z, float y)
{
    switch (act) {
    case HPCTI_MATH_RELU: return z > 0.0f ? 1.0f : 0.0f;
    case HPCTI_MATH_TANH: return 1.0f - y * y;
    case HPCTI_MATH_GELU: {
        float u = HPCTI_GELU_K0 * (z + HPCTI_GELU_K1 * z * z * z);
        float t = tanhf(u);
        float du = HPCTI_GELU_K0 * (1.0f + 3.0f * HPCTI_GELU_K1 * z * z);
        return 0.5f * (1.0f + t) + 0.5f * z * (1.0f - t * t) * du;
    }
    default: return 1.0f;
    }
}

/* SGD with momentum buffer v and L2 weight decay wd (PyTorch's convention:
 * g' = g + wd p; v = mu v + g'; step = nesterov ? g' + mu v : v; p -= lr step). */
HPCTI_HD void hpcti_sgd_update(float *p, float *v, float g, float lr, float mu, int nesterov,
                               float wd)
{
    float gw = g + wd * *p;
    float step = gw;
    if (v) {
        *v = mu * *v + gw;
        step = nesterov ? gw + mu * *v : *v;
    }
    *p -= lr * step;
}

/* AdamW (decoupled weight decay): m, v moments; c1 = 1 - beta1^t, c2 = 1 - beta2^t. */
HPCTI_HD void hpcti_adamw_update(float *p, float *m, float *v, float g, float lr, float b1,
                                 float b2, float eps, float wd, float c1, float c2)
{
    *m = b1 * *m + (1.0f - b1) * g;
    *v = b2 * *v + (1.0f - b2) * g * g;
    float mhat = *m / c1;
    float vhat = *v / c2;
    *p -= lr * (mhat / (sqrtf(vhat) + eps) + wd * *p);
}

/* The scalars of an update that change from step to step, in the device block the fused
 * step's gated updates read (kernels.h). */
#define HPCTI_SC_LR     0 /* learning rate of this step */
#define HPCTI_SC_C1     1 /* AdamW bias corrections 1 - b1^t and 1 - b2^t */
#define HPCTI_SC_C2     2
#define HPCTI_SC_GSCALE 3 /* gradient scale: 1, or the clipping factor (hpcti_step_gate) */
#define HPCTI_SC_COUNT  4

/* The global-norm clipping factor for a gradient norm (finite): 1 unless clip > 0 and the norm
 * is above it. The optimizer's host path and the fused step's gate (below) share it. */
HPCTI_HD float hpcti_clip_factor(double norm, float clip)
{
    return clip > 0.0f && norm > clip ? (float)(clip / (norm + 1e-6)) : 1.0f;
}

/* The fused step's verdict (lib/model/fused.c): 1 when its update may run. results[0] is the
 * loss sum, which must be finite; with clip > 0, results[1 .. sums] are the gradient buffers'
 * sums of squares in buffer order, whose norm must be finite (*gscale its clipping factor);
 * else with sums 1 results[1] is the gradients' non-finite count, which must be 0, and with
 * sums 0 the gradients are not checked (*gscale 1). The same decisions, in the same
 * arithmetic, as the host path: the loss check of hpct_model_loss_grad, the non-finite check
 * of the in-situ step, hpct_params_grad_norm and the optimizer's clip. */
HPCTI_HD int hpcti_step_gate(const double *results, int sums, float clip, float *gscale)
{
    *gscale = 1.0f;
    if (!isfinite(results[0])) return 0;
    if (clip <= 0.0f) return sums == 0 || results[1] == 0.0;
    double total = 0.0;
    for (int i = 0; i < sums; i++) total += results[1 + i];
    double norm = sqrt(total);
    if (!isfinite(norm)) return 0;
    *gscale = hpcti_clip_factor(norm, clip);
    return 1;
}

#endif
