// conv.cu: column matrices, per-channel bias, pooling and upsampling for the convolution
// layers. One thread per output element; the per-element math comes from conv_math.h, shared
// with the cpu backend, so both compute the same values in the same order.
#include "conv_math.h"
#include "kernels.h"

#include <cuda_runtime.h>

namespace
{

constexpr int kThreads = HPCTI_K_THREADS;

unsigned blocks_for(size_t n)
{
    return hpcti_grid_blocks(n, kThreads, HPCTI_K_MAX_GRID_BLOCKS);
}

__global__ void im2col_kernel(hpcti_geom g, const float *x, float *col, size_t n)
{
    for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < n;
         e += (size_t)gridDim.x * blockDim.x)
        col[e] = hpcti_im2col_at(&g, x, e);
}

__global__ void col2im_kernel(hpcti_geom g, const float *dcol, float *dx, size_t n)
{
    for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < n;
         e += (size_t)gridDim.x * blockDim.x)
        dx[e] = hpcti_col2im_at(&g, dcol, e);
}

__global__ void channel_bias_act_kernel(int act, float *z, const float *bias, float *y, size_t n,
                                        int channels, size_t spatial)
{
    for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < n;
         e += (size_t)gridDim.x * blockDim.x) {
        if (bias) z[e] += bias[hpcti_channel_of(e, channels, spatial)];
        y[e] = hpcti_act_fwd(act, z[e]);
    }
}

// One thread per channel adds its values in the cpu backend's order (samples, then positions).
__global__ void channel_bias_grad_kernel(const float *dz, float *db, int batch, int channels,
                                         size_t spatial, int accumulate)
{
    size_t c = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (c >= (size_t)channels) return;
    float sum = hpcti_channel_grad(dz, (int)c, batch, channels, spatial);
    db[c] = accumulate ? db[c] + sum : sum;
}

__global__ void window_fwd_kernel(hpcti_geom g, const float *x, float *y, size_t n)
{
    for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < n;
         e += (size_t)gridDim.x * blockDim.x)
        y[e] = hpcti_window_fwd_at(&g, x, e);
}

__global__ void window_bwd_kernel(hpcti_geom g, const float *x, const float *dy, float *dx,
                                  size_t n)
{
    for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < n;
         e += (size_t)gridDim.x * blockDim.x)
        dx[e] = hpcti_window_bwd_at(&g, x, dy, e);
}

} // namespace

extern "C" int hpcti_k_im2col(void *stream, const struct hpcti_geom *g, const float *x, float *col,
                              int batch)
{
    size_t n = (size_t)(batch > 0 ? batch : 0) * hpcti_geom_col_rows(g) * hpcti_geom_out_size(g);
    if (n == 0) return 0;
    im2col_kernel<<<blocks_for(n), kThreads, 0, (cudaStream_t)stream>>>(*g, x, col, n);
    return (int)cudaGetLastError();
}

extern "C" int hpcti_k_col2im(void *stream, const struct hpcti_geom *g, const float *dcol,
                              float *dx, int batch)
{
    size_t n = (size_t)(batch > 0 ? batch : 0) * (size_t)g->c_in * hpcti_geom_in_size(g);
    if (n == 0) return 0;
    col2im_kernel<<<blocks_for(n), kThreads, 0, (cudaStream_t)stream>>>(*g, dcol, dx, n);
    return (int)cudaGetLastError();
}

extern "C" int hpcti_k_channel_bias_act(void *stream, int act, float *z, const float *bias,
                                        float *y, int batch, int channels, size_t spatial)
{
    size_t n = (size_t)(batch > 0 ? batch : 0) * (size_t)(channels > 0 ? channels : 0) * spatial;
    if (n == 0) return 0;
    channel_bias_act_kernel<<<blocks_for(n), kThreads, 0, (cudaStream_t)stream>>>(
        act, z, bias, y, n, channels, spatial);
    return (int)cudaGetLastError();
}

extern "C" int hpcti_k_channel_bias_grad(void *stream, const float *dz, float *db, int batch,
                                         int channels, size_t spatial, int accumulate)
{
    if (channels <= 0) return 0;
    channel_bias_grad_kernel<<<hpcti_grid_blocks((size_t)channels, kThreads, 0x7fffffffu), kThreads,
                               0, (cudaStream_t)stream>>>(dz, db, batch, channels, spatial,
                                                          accumulate);
    return (int)cudaGetLastError();
}

extern "C" int hpcti_k_window_fwd(void *stream, const struct hpcti_geom *g, const float *x,
                                  float *y, int batch)
{
    size_t n = (size_t)(batch > 0 ? batch : 0) * (size_t)g->c_out * hpcti_geom_out_size(g);
    if (n == 0) return 0;
    window_fwd_kernel<<<blocks_for(n), kThreads, 0, (cudaStream_t)stream>>>(*g, x, y, n);
    return (int)cudaGetLastError();
}

extern "C" int hpcti_k_window_bwd(void *stream, const struct hpcti_geom *g, const float *x,
                                  const float *dy, float *dx, int batch)
{
    size_t n = (size_t)(batch > 0 ? batch : 0) * (size_t)g->c_in * hpcti_geom_in_size(g);
    if (n == 0) return 0;
    window_bwd_kernel<<<blocks_for(n), kThreads, 0, (cudaStream_t)stream>>>(*g, x, dy, dx, n);
    return (int)cudaGetLastError();
}
