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

#endif
