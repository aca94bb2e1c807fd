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

// The update loops, one body each for the plain kernel and the gated one, so that both
// compile to the same arithmetic (the fused step is bit for bit the uncaptured one).
__device__ void sgd_body(float *p, const float *g, float *v, size_t n, float lr, float mu,
                         int nesterov, float wd, float gscale)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        hpcti_sgd_update(p + i, v ? v + i : nullptr, gscale * g[i], lr, mu, v ? nesterov : 0, wd);
}

__device__ void adamw_body(float *p, const float *g, float *m, float *v, size_t n, float lr,
                           float b1, float b2, float eps, float wd, float c1, float c2,
                           float gscale)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        hpcti_adamw_update(p + i, m + i, v + i, gscale * g[i], lr, b1, b2, eps, wd, c1, c2);
}

__global__ void sgd_kernel(float *p, const float *g, float *v, size_t n, float lr, float mu,
                           int nesterov, float wd, float gscale)
{
    sgd_body(p, g, v, n, lr, mu, nesterov, wd, gscale);
}

__global__ void adamw_kernel(float *p, const float *g, float *m, float *v, size_t n, float lr,
                             float b1, float b2, float eps, float wd, float c1, float c2,
                             float gscale)
{
    adamw_body(p, g, m, v, n, lr, b1, b2, eps, wd, c1, c2, gscale);
}

// sc [HPCTI_SC_COUNT] and gate are read when the kernel runs (a replayed graph's new values).
__global__ void sgd_gated_kernel(float *p, const float *g, float *v, size_t n, const float *sc,
                                 const int *gate, float mu, int nesterov, float wd)
{
    if (*gate) sgd_body(p, g, v, n, sc[HPCTI_SC_LR], mu, nesterov, wd, sc[HPCTI_SC_GSCALE]);
}

__global__ void adamw_gated_kernel(float *p, const float *g, float *m, float *v, size_t n,
                                   const float *sc, const int *gate, float b1, float b2, float eps,
                                   float wd)
{
    if (*gate)
        adamw_body(p, g, m, v, n, sc[HPCTI_SC_LR], b1, b2, eps, wd, sc[HPCTI_SC_C1],
                   sc[HPCTI_SC_C2], sc[HPCTI_SC_GSCALE]);
}

__global__ void step_gate_kernel(const double *results, int sums, float clip, float *sc, int *gate)
{
    float gscale;
    *gate = hpcti_step_gate(results, sums, clip, &gscale);
    sc[HPCTI_SC_GSCALE] = gscale;
}

// Launches on the caller's stream (NULL: the legacy default stream).
cudaStream_t on(void *stream)
{
    return (cudaStream_t)stream;
}

} // namespace

extern "C" int hpcti_k_bias_act(void *stream, int act, float *z, const float *bias, float *y,
                                int rows, int cols)
{
    if (rows <= 0 || cols <= 0) return 0; // as the cpu loops: nothing to do
    size_t total = (size_t)rows * (size_t)cols;
    bias_act_kernel<<<blocks_for(total), kThreads, 0, on(stream)>>>(act, z, bias, y, total, cols);
    return (int)cudaGetLastError();
}

extern "C" int hpcti_k_act_backward(void *stream, int act, const float *z, const float *y,
                                    const float *dy, float *dz, size_t n)
{
    if (n == 0) return 0;
    act_backward_kernel<<<blocks_for(n), kThreads, 0, on(stream)>>>(act, z, y, dy, dz, n);
    return (int)cudaGetLastError();
}

extern "C" int hpcti_k_bias_grad(void *stream, const float *dz, float *db, int rows, int cols,
                                 int accumulate)
{
    if (cols <= 0) return 0;
    // one thread per column: cols / 256 blocks stay far below the 2^31 - 1 grid limit
    bias_grad_kernel<<<hpcti_grid_blocks((size_t)cols, kThreads, 0x7fffffffu), kThreads, 0,
                       on(stream)>>>(dz, db, rows, cols, accumulate);
    return (int)cudaGetLastError();
}

extern "C" int hpcti_k_scale(void *stream, float *x, float alpha, size_t n)
{
    if (n == 0) return 0;
    scale_kernel<<<blocks_for(n), kThreads, 0, on(stream)>>>(x, alpha, n);
    return (int)cudaGetLastError();
}

extern "C" int hpcti_k_rank_sum(void *stream, float *own, const float *slots, int nranks, int me,
                                size_t n, float inv)
{
    if (n == 0) return 0;
    rank_sum_kernel<<<blocks_for(n), kThreads, 0, on(stream)>>>(own, slots, nranks, me, n, inv);
    return (int)cudaGetLastError();
}

extern "C" int hpcti_k_sgd(void *stream, float *p, const float *g, float *v, size_t n, float lr,
                           float mu, int nesterov, float wd, float gscale)
{
    if (n == 0) return 0;
    sgd_kernel<<<blocks_for(n), kThreads, 0, on(stream)>>>(p, g, v, n, lr, mu, nesterov, wd,
                                                           gscale);
    return (int)cudaGetLastError();
}

extern "C" int hpcti_k_adamw(void *stream, float *p, const float *g, float *m, float *v, size_t n,
                             float lr, float b1, float b2, float eps, float wd, float c1, float c2,
                             float gscale)
{
    if (n == 0) return 0;
    adamw_kernel<<<blocks_for(n), kThreads, 0, on(stream)>>>(p, g, m, v, n, lr, b1, b2, eps, wd, c1,
                                                             c2, gscale);
    return (int)cudaGetLastError();
}

extern "C" int hpcti_k_sgd_gated(void *stream, float *p, const float *g, float *v, size_t n,
                                 const float *sc, const int *gate, float mu, int nesterov, float wd)
{
    if (n == 0) return 0;
    sgd_gated_kernel<<<blocks_for(n), kThreads, 0, on(stream)>>>(p, g, v, n, sc, gate, mu, nesterov,
                                                                 wd);
    return (int)cudaGetLastError();
}

extern "C" int hpcti_k_adamw_gated(void *stream, float *p, const float *g, float *m, float *v,
                                   size_t n, const float *sc, const int *gate, float b1, float b2,
                                   float eps, float wd)
{
    if (n == 0) return 0;
    adamw_gated_kernel<<<blocks_for(n), kThreads, 0, on(stream)>>>(p, g, m, v, n, sc, gate, b1, b2,
                                                                   eps, wd);
    return (int)cudaGetLastError();
}

extern "C" int hpcti_k_step_gate(void *stream, const double *results, int sums, float clip,
                                 float *sc, int *gate)
{
    step_gate_kernel<<<1, 1, 0, on(stream)>>>(results, sums, clip, sc, gate);
    return (int)cudaGetLastError();
}
