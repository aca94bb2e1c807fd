// elementwise.cu: bias + activation, activation backward, bias gradient, scale and the
// optimizer updates. The math itself comes from hpct_math.h, shared with the cpu backend.
#include "hpct_math.h"
#include "kernels.h"

#include <cuda_runtime.h>

namespace
{

constexpr int kThreads = HPCTI_K_THREADS;

// Blocks for a grid-stride loop over n elements: at least 1, capped (each thread then loops).
unsigned blocks_for(size_t n)
{
    return hpcti_grid_blocks(n, kThreads, HPCTI_K_MAX_GRID_BLOCKS);
}

__global__ void bias_act_kernel(int act, float *z, const float *bias, float *y, size_t total,
                                int cols)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
         i += (size_t)gridDim.x * blockDim.x) {
        float v = z[i] + bias[i % (size_t)cols];
        z[i] = v;
        y[i] = hpcti_act_fwd(act, v);
    }
}

__global__ void act_backward_kernel(int act, const float *z, const float *y, const float *dy,
                                    float *dz, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        // ReLU selects rather than multiplies, exactly as the cpu backend does.
        if (act == HPCTI_MATH_RELU)
            dz[i] = z[i] > 0.0f ? dy[i] : 0.0f;
        else
            dz[i] = dy[i] * hpcti_act_deriv(act, z[i], y[i]);
    }
}

// One thread per column walks the rows in order (the cpu backend's summation order).
__global__ void bias_grad_kernel(const float *dz, float *db, int rows, int cols, int accumulate)
{
    size_t c = blockIdx.x * (size_t)blockDim.x + threadIdx.x; // never wraps near INT_MAX
    if (c >= (size_t)cols) return;
    float sum = accumulate ? db[c] : 0.0f;
    for (int r = 0; r < rows; r++) sum += dz[(size_t)r * cols + c];
    db[c] = sum;
}

__global__ void scale_kernel(float *x, float alpha, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        x[i] *= alpha;
}

// The host engine's owner sum (reduce.c, sum_phase): acc = term 0, acc += term r in rank
// order, acc *= inv; no product feeds an addition, so nvcc contracts nothing into an FMA.
__global__ void rank_sum_kernel(float *own, const float *slots, int nranks, int me, size_t n,
                                float inv)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float acc = 0.0f;
        for (int r = 0; r < nranks; r++) {
            float term = r == me ? own[i] : slots[(size_t)(r < me ? r : r - 1) * n + i];
            acc = r == 0 ? term : acc + term;
        }
        own[i] = acc * inv;
    }
}

__global__ void sgd_kernel(float *p, const float *g, float *v, size_t n, float lr, float mu,
                           int nesterov, float wd, float gscale)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        hpcti_sgd_update(p + i, v ? v + i : nullptr, gscale * g[i], lr, mu, v ? nesterov : 0, wd);
}

__global__ void adamw_kernel(float *p, const float *g, float *m, float *v, size_t n, float lr,
                             float b1, float b2, float eps, float wd, float c1, float c2,
                             float gscale)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        hpcti_adamw_update(p + i, m + i, v + i, gscale * g[i], lr, b1, b2, eps, wd, c1, c2);
}

} // namespace

extern "C" int hpcti_k_bias_act(int act, float *z, const float *bias, float *y, int rows, int cols)
{
    if (rows <= 0 || cols <= 0) return 0; // as the cpu loops: nothing to do
    size_t total = (size_t)rows * (size_t)cols;
    bias_act_kernel<<<blocks_for(total), kThreads>>>(act, z, bias, y, total, cols);
    return (int)cudaGetLastError();
}

extern "C" int hpcti_k_act_backward(int act, const float *z, const float *y, const float *dy,
                                    float *dz, size_t n)
{
    if (n == 0) return 0;
    act_backward_kernel<<<blocks_for(n), kThreads>>>(act, z, y, dy, dz, n);
    return (int)cudaGetLastError();
}

extern "C" int hpcti_k_bias_grad(const float *dz, float *db, int rows, int cols, int accumulate)
{
    if (cols <= 0) return 0;
    // one thread per column: cols / 256 blocks stay far below the 2^31 - 1 grid limit
    bias_grad_kernel<<<hpcti_grid_blocks((size_t)cols, kThreads, 0x7fffffffu), kThreads>>>(
        dz, db, rows, cols, accumulate);
    return (int)cudaGetLastError();
}

extern "C" int hpcti_k_scale(float *x, float alpha, size_t n)
{
    if (n == 0) return 0;
    scale_kernel<<<blocks_for(n), kThreads>>>(x, alpha, n);
    return (int)cudaGetLastError();
}

extern "C" int hpcti_k_scale_on(float *x, float alpha, size_t n, void *stream)
{
    if (n == 0) return 0;
    scale_kernel<<<blocks_for(n), kThreads, 0, (cudaStream_t)stream>>>(x, alpha, n);
    return (int)cudaGetLastError();
}

extern "C" int hpcti_k_rank_sum_on(float *own, const float *slots, int nranks, int me, size_t n,
                                   float inv, void *stream)
{
    if (n == 0) return 0;
    rank_sum_kernel<<<blocks_for(n), kThreads, 0, (cudaStream_t)stream>>>(own, slots, nranks, me,
                                                                         n, inv);
    return (int)cudaGetLastError();
}

extern "C" int hpcti_k_sgd(float *p, const float *g, float *v, size_t n, float lr, float mu,
                           int nesterov, float wd, float gscale)
{
    if (n == 0) return 0;
    sgd_kernel<<<blocks_for(n), kThreads>>>(p, g, v, n, lr, mu, nesterov, wd, gscale);
    return (int)cudaGetLastError();
}

extern "C" int hpcti_k_adamw(float *p, const float *g, float *m, float *v, size_t n, float lr,
                             float b1, float b2, float eps, float wd, float c1, float c2,
                             float gscale)
{
    if (n == 0) return 0;
    adamw_kernel<<<blocks_for(n), kThreads>>>(p, g, m, v, n, lr, b1, b2, eps, wd, c1, c2, gscale);
    return (int)cudaGetLastError();
}
