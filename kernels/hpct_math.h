/* hpct_math.h: element-wise formulas shared by the cpu backend and the CUDA kernels.
 * Every function is a pure scalar formula so the CPU tests cover the GPU math too. */
#ifndef HPCT_MATH_H
#define HPCT_MATH_H

#include <math.h>

#ifdef __CUDACC__
#define HPCT_HD __host__ __device__ static inline
#else
#define HPCT_HD static inline
#endif

/* Activation codes, equal to hpct_activation_t. */
#define HPCT_MATH_IDENTITY 0
#define HPCT_MATH_RELU     1
#define HPCT_MATH_TANH     2
#define HPCT_MATH_GELU     3

/* GELU, tanh approximation: 0.5 z (1 + tanh(sqrt(2/pi) (z + 0.044715 z^3))). */
#define HPCT_GELU_K0 0.7978845608028654f
#define HPCT_GELU_K1 0.044715f

HPCT_HD float hpct_act_fwd(int act, float z)
{
    switch (act) {
    case HPCT_MATH_RELU: return z < 0.0f ? 0.0f : z; /* NaN passes through */
    case HPCT_MATH_TANH: return tanhf(z);
    case HPCT_MATH_GELU: {
        float u = HPCT_GELU_K0 * (z + HPCT_GELU_K1 * z * z * z);
        return 0.5f * z * (1.0f + tanhf(u));
    }
    default: return z;
    }
}

/* d act(z) / dz, given the pre-activation z and the output y = act(z). */
HPCT_HD float hpct_act_deriv(int act, float z, float y)
{
    switch (act) {
    case HPCT_MATH_RELU: return z > 0.0f ? 1.0f : 0.0f;
    case HPCT_MATH_TANH: return 1.0f - y * y;
    case HPCT_MATH_GELU: {
        float u = HPCT_GELU_K0 * (z + HPCT_GELU_K1 * z * z * z);
        float t = tanhf(u);
        float du = HPCT_GELU_K0 * (1.0f + 3.0f * HPCT_GELU_K1 * z * z);
        return 0.5f * (1.0f + t) + 0.5f * z * (1.0f - t * t) * du;
    }
    default: return 1.0f;
    }
}

/* SGD with momentum buffer v and L2 weight decay wd (PyTorch's convention:
 * g' = g + wd p; v = mu v + g'; step = nesterov ? g' + mu v : v; p -= lr step). */
HPCT_HD void hpct_sgd_update(float *p, float *v, float g, float lr, float mu, int nesterov,
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
HPCT_HD void hpct_adamw_update(float *p, float *m, float *v, float g, float lr, float b1, float b2,
                               float eps, float wd, float c1, float c2)
{
    *m = b1 * *m + (1.0f - b1) * g;
    *v = b2 * *v + (1.0f - b2) * g * g;
    float mhat = *m / c1;
    float vhat = *v / c2;
    *p -= lr * (mhat / (sqrtf(vhat) + eps) + wd * *p);
}

#endif
