// reduce.cu: the reductions whose results the host needs (loss sums, correct counts, sums of
// squares, finiteness). Two passes, no atomics, so a result does not depend on scheduling:
// each block writes its double partial to scratch[block], then one block adds the partials
// into scratch[HPCTI_K_MAX_BLOCKS].
#include "kernels.h"

#include <cfloat>
#include <cuda_runtime.h>

namespace
{

constexpr int kThreads = HPCTI_K_THREADS; // 8 warps per block
constexpr int kWarps = kThreads / 32;
constexpr unsigned kFull = 0xffffffffu;

__device__ double warp_sum(double v)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFull, v, o);
    return v;
}

// The largest value, skipping NaN the way the cpu backend's "x > m ? x : m" does.
__device__ float warp_max(float v)
{
    for (int o = 16; o > 0; o >>= 1) {
        float other = __shfl_xor_sync(kFull, v, o);
        v = other > v ? other : v;
    }
    return v;
}

// Sum of v over the block; the result is valid in thread 0. Call once per kernel.
__device__ double block_sum(double v)
{
    __shared__ double per_warp[32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_sum(v);
    if (lane == 0) per_warp[warp] = v;
    __syncthreads();
    int warps = (blockDim.x + 31) >> 5;
    v = threadIdx.x < warps ? per_warp[threadIdx.x] : 0.0;
    if (warp == 0) v = warp_sum(v);
    return v;
}

// Pass 2: scratch[HPCTI_K_MAX_BLOCKS] = sum of scratch[0 .. blocks).
__global__ void finish_kernel(double *scratch, int blocks)
{
    double v = threadIdx.x < blocks ? scratch[threadIdx.x] : 0.0;
    v = block_sum(v);
    if (threadIdx.x == 0) scratch[HPCTI_K_MAX_BLOCKS] = v;
}

// Blocks for n work items of per_block each: at least 1, at most HPCTI_K_MAX_BLOCKS.
int blocks_for(size_t n, size_t per_block)
{
    return (int)hpcti_grid_blocks(n, per_block, HPCTI_K_MAX_BLOCKS);
}

int finish(cudaStream_t stream, double *scratch, int blocks)
{
    finish_kernel<<<1, HPCTI_K_MAX_BLOCKS, 0, stream>>>(scratch, blocks);
    return (int)cudaGetLastError();
}

// One warp per row of logits [rows, cols]; same double-precision formula as the cpu backend.
__global__ void softmax_xent_kernel(const float *logits, const int32_t *labels, float *dlogits,
                                    int rows, int cols, float scale, double *scratch)
{
    int lane = threadIdx.x & 31;
    double loss = 0.0;
    // size_t: r + stride never wraps, whatever rows (an int) is
    for (size_t r = blockIdx.x * (size_t)kWarps + (threadIdx.x >> 5); r < (size_t)rows;
         r += (size_t)gridDim.x * kWarps) {
        const float *x = logits + (size_t)r * cols;
        float *d = dlogits + (size_t)r * cols;
        float mx = -FLT_MAX;
        for (int c = lane; c < cols; c += 32) mx = x[c] > mx ? x[c] : mx;
        mx = warp_max(mx);
        double sum = 0.0;
        for (int c = lane; c < cols; c += 32) sum += exp((double)(x[c] - mx));
        double log_sum = log(warp_sum(sum));
        int label = labels[r];
        if (lane == 0) loss += log_sum - (double)(x[label] - mx);
        for (int c = lane; c < cols; c += 32) {
            float v = scale * (float)(exp((double)(x[c] - mx) - log_sum));
            d[c] = c == label ? v - scale : v;
        }
    }
    loss = block_sum(loss);
    if (threadIdx.x == 0) scratch[blockIdx.x] = loss;
}

// One thread per row; the first maximum wins, as in the cpu backend.
__global__ void count_correct_kernel(const float *logits, const int32_t *labels, int rows, int cols,
                                     double *scratch)
{
    double correct = 0.0;
    for (size_t r = blockIdx.x * (size_t)blockDim.x + threadIdx.x; r < (size_t)rows;
         r += (size_t)gridDim.x * blockDim.x) {
        const float *x = logits + (size_t)r * cols;
        int best = 0;
        for (int c = 1; c < cols; c++) best = x[c] > x[best] ? c : best;
        correct += best == labels[r] ? 1.0 : 0.0;
    }
    correct = block_sum(correct);
    if (threadIdx.x == 0) scratch[blockIdx.x] = correct;
}

__global__ void mse_kernel(const float *out, const float *t, float *dout, size_t n, float scale,
                           double *scratch)
{
    double total = 0.0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float e = out[i] - t[i];
        total += (double)e * e;
        dout[i] = scale * 2.0f * e;
    }
    total = block_sum(total);
    if (threadIdx.x == 0) scratch[blockIdx.x] = total;
}

struct Square {
    __device__ double operator()(float v) const
    {
        return (double)v * v;
    }
};

struct NonFinite {
    __device__ double operator()(float v) const
    {
        return isfinite(v) ? 0.0 : 1.0;
    }
};

// Sum of term(x[i]) over this thread's grid-stride share of x [n], with four loads in flight
// per iteration: a read-only pass is bound by the loads outstanding, not by the double adds.
// Fixed order for a given n and grid: the same result on every run.
template <typename Term> __device__ double strided_sum(const float *x, size_t n, Term term)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    double a = 0.0, b = 0.0, c = 0.0, d = 0.0;
    for (; i + 3 * stride < n; i += 4 * stride) {
        float x0 = x[i], x1 = x[i + stride], x2 = x[i + 2 * stride], x3 = x[i + 3 * stride];
        a += term(x0), b += term(x1), c += term(x2), d += term(x3);
    }
    for (; i < n; i += stride) a += term(x[i]);
    return (a + b) + (c + d);
}

template <typename Term>
__global__ void strided_sum_kernel(const float *x, size_t n, double *scratch)
{
    double total = block_sum(strided_sum(x, n, Term()));
    if (threadIdx.x == 0) scratch[blockIdx.x] = total;
}

} // namespace

extern "C" int hpcti_k_softmax_xent(void *stream, const float *logits, const int32_t *labels,
                                    float *dlogits, int rows, int cols, float scale,
                                    double *scratch)
{
    int blocks = blocks_for((size_t)(rows > 0 ? rows : 0), kWarps);
    softmax_xent_kernel<<<blocks, kThreads, 0, (cudaStream_t)stream>>>(logits, labels, dlogits,
                                                                       rows, cols, scale, scratch);
    int err = (int)cudaGetLastError();
    return err ? err : finish((cudaStream_t)stream, scratch, blocks);
}

extern "C" int hpcti_k_count_correct(void *stream, const float *logits, const int32_t *labels,
                                     int rows, int cols, double *scratch)
{
    int blocks = blocks_for((size_t)(rows > 0 ? rows : 0), kThreads);
    count_correct_kernel<<<blocks, kThreads, 0, (cudaStream_t)stream>>>(logits, labels, rows, cols,
                                                                        scratch);
    int err = (int)cudaGetLastError();
    return err ? err : finish((cudaStream_t)stream, scratch, blocks);
}

extern "C" int hpcti_k_mse(void *stream, const float *out, const float *targets, float *dout,
                           size_t n, float scale, double *scratch)
{
    int blocks = blocks_for(n, kThreads);
    mse_kernel<<<blocks, kThreads, 0, (cudaStream_t)stream>>>(out, targets, dout, n, scale,
                                                              scratch);
    int err = (int)cudaGetLastError();
    return err ? err : finish((cudaStream_t)stream, scratch, blocks);
}

extern "C" int hpcti_k_sumsq(void *stream, const float *x, size_t n, double *scratch)
{
    int blocks = blocks_for(n, kThreads);
    strided_sum_kernel<Square><<<blocks, kThreads, 0, (cudaStream_t)stream>>>(x, n, scratch);
    int err = (int)cudaGetLastError();
    return err ? err : finish((cudaStream_t)stream, scratch, blocks);
}

extern "C" int hpcti_k_count_nonfinite(void *stream, const float *x, size_t n, double *scratch)
{
    int blocks = blocks_for(n, kThreads);
    strided_sum_kernel<NonFinite><<<blocks, kThreads, 0, (cudaStream_t)stream>>>(x, n, scratch);
    int err = (int)cudaGetLastError();
    return err ? err : finish((cudaStream_t)stream, scratch, blocks);
}
