/* test_gpu_logic.c: the CUDA backend's host-side logic (kernels/gpu_logic.h), on the CPU:
 * - GEMM argument mapping: for every transpose pair and non-square shapes (k = 0 and 1
 *   included), the column-major call the cuda backend makes (operands swapped), evaluated by
 *   a plain column-major reference sgemm, equals a row-major reference product; and the
 *   row-major call the cpu backend makes, through the real cblas_sgemm, equals it too;
 * - launch geometry: at least one block, never above the cap, and blocks x per_block covers n
 *   or the grid-stride loop does (n = 0, 1, the cap's edges, 2^24, 2^40);
 * - NCCL staging: shard x node size covers count with less than one shard of padding;
 * - device selection from the local rank, CUDA_VISIBLE_DEVICES' count, oversubscription,
 *   and the shared-GPU check. */
#include "config.h"
#include "../kernels/gpu_logic.h"
#include "lib/tap.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Element (i, j) of a row-major matrix [rows, ld] or of its transpose. */
static float row_at(const float *x, int ld, int trans, int i, int j)
{
    return trans ? x[(size_t)j * ld + i] : x[(size_t)i * ld + j];
}

/* Column-major element (i, j) of x with leading dimension ld, or of its transpose. */
static float col_at(const float *x, int ld, int trans, int i, int j)
{
    return trans ? x[(size_t)i * ld + j] : x[(size_t)j * ld + i];
}

/* What cublasSgemm computes: C [m, n] col-major = alpha op(A) op(B) + beta C. */
static void col_sgemm(const struct hpcti_gemm_call *g, float alpha, const float *a, const float *b,
                      float beta, float *c)
{
    for (int j = 0; j < g->n; j++)
        for (int i = 0; i < g->m; i++) {
            double s = 0;
            for (int p = 0; p < g->k; p++)
                s += (double)col_at(a, g->lda, g->trans_a, i, p) *
                     col_at(b, g->ldb, g->trans_b, p, j);
            float *cij = &c[(size_t)j * g->ldc + i];
            *cij = (float)(alpha * s + beta * *cij);
        }
}

/* The row-major product the ops table promises: C [m, n] = alpha op(A) op(B) + beta C. */
static void row_reference(int ta, int tb, int m, int n, int k, float alpha, const float *a,
                          const float *b, float beta, float *c)
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int p = 0; p < k; p++)
                s += (double)row_at(a, ta ? m : k, ta, i, p) * row_at(b, tb ? k : n, tb, p, j);
            c[(size_t)i * n + j] = (float)(alpha * s + beta * c[(size_t)i * n + j]);
        }
}

static float *randoms(size_t n, unsigned seed)
{
    float *x = malloc(sizeof *x * (n ? n : 1));
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = (float)(seed >> 8) / 16777216.0f - 0.5f;
    }
    return x;
}

static double max_diff(const float *x, const float *y, size_t n)
{
    double w = 0;
    for (size_t i = 0; i < n; i++) w = fmax(w, fabs((double)x[i] - y[i]));
    return w;
}

static void check_gemm(int ta, int tb, int m, int n, int k)
{
    float alpha = 0.75f, beta = 0.5f;
    float *a = randoms((size_t)m * k, 1), *b = randoms((size_t)k * n, 2);
    float *want = randoms((size_t)m * n, 3), *col = malloc(sizeof *col * m * n),
          *row = malloc(sizeof *row * m * n);
    memcpy(col, want, sizeof *col * m * n);
    memcpy(row, want, sizeof *row * m * n);
    row_reference(ta, tb, m, n, k, alpha, a, b, beta, want);
    struct hpcti_gemm_args g = {{0, 0, 0, 0, 0, 1, 1, 1}, {0, 0, 0, 0, 0, 1, 1, 1}};
    int call = hpcti_gemm_map(ta, tb, m, n, k, &g);
    col_sgemm(&g.col, alpha, b, a, beta, col); /* the cuda backend's operand order */
    cblas_sgemm(CblasRowMajor, g.row.trans_a ? CblasTrans : CblasNoTrans,
                g.row.trans_b ? CblasTrans : CblasNoTrans, g.row.m, g.row.n, g.row.k, alpha, a,
                g.row.lda, b, g.row.ldb, beta, row, g.row.ldc);
    double dc = max_diff(col, want, (size_t)m * n), dr = max_diff(row, want, (size_t)m * n);
    tap_ok(call && dc <= 1e-5 && dr <= 1e-5,
           "gemm ta=%d tb=%d [%d x %d x %d]: cuBLAS mapping %.1e, cblas mapping %.1e", ta, tb, m, n,
           k, dc, dr);
    free(a), free(b), free(want), free(col), free(row);
}

static void test_gemm_map(void)
{
    static const int shapes[][3] = {{3, 5, 7}, {17, 4, 9}, {1, 6, 2}, {5, 1, 3}, {4, 6, 1}};
    for (int t = 0; t < 4; t++)
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
            check_gemm(t >> 1, t & 1, shapes[s][0], shapes[s][1], shapes[s][2]);
    check_gemm(0, 0, 3, 4, 0); /* k = 0: C = beta C, leading dimensions still >= 1 */
    struct hpcti_gemm_args g;
    tap_ok(!hpcti_gemm_map(0, 0, 0, 5, 3, &g) && !hpcti_gemm_map(1, 1, 4, 0, 3, &g),
           "an empty C (m or n is 0) makes no call");
    hpcti_gemm_map(0, 1, 128, 512, 784, &g); /* the MLP's first layer: x [128, 784] W^T */
    tap_ok(g.col.trans_a == 1 && g.col.trans_b == 0 && g.col.m == 512 && g.col.n == 128 &&
               g.col.lda == 784 && g.col.ldb == 784 && g.col.ldc == 512,
           "x W^T maps to cublasSgemm(T, N, 512, 128, 784, W, 784, x, 784, C, 512)");
}

static void test_grid(void)
{
    static const size_t ns[] = {
        0, 1, 255, 256, 257, 262144, 262145, (size_t)1 << 24, (size_t)1 << 40};
    int bad = 0;
    for (size_t i = 0; i < sizeof ns / sizeof *ns; i++)
        for (int c = 0; c < 2; c++) {
            unsigned cap = c ? HPCTI_K_MAX_GRID_BLOCKS : HPCTI_K_MAX_BLOCKS;
            unsigned b = hpcti_grid_blocks(ns[i], HPCTI_K_THREADS, cap);
            int covers = (size_t)b * HPCTI_K_THREADS >= ns[i] || b == cap;
            bad += b < 1 || b > cap || !covers;
        }
    tap_ok(!bad, "grid blocks: >= 1, <= the cap, covering n or capped (grid-stride) (%d bad)", bad);
    tap_is_int((int)hpcti_grid_blocks((size_t)1 << 24, HPCTI_K_THREADS, HPCTI_K_MAX_BLOCKS),
               HPCTI_K_MAX_BLOCKS, "n = 2^24 reductions are capped at %d blocks (loops stride)",
               HPCTI_K_MAX_BLOCKS);
    tap_ok(HPCTI_K_MAX_GRID_BLOCKS <= 2147483647u && HPCTI_K_MAX_BLOCKS <= 1024 &&
               HPCTI_K_THREADS % 32 == 0,
           "caps within CUDA's limits (grid x <= 2^31 - 1; the finishing block <= 1024 threads)");
    tap_is_int((int)hpcti_grid_blocks(100003, 8, HPCTI_K_MAX_BLOCKS), HPCTI_K_MAX_BLOCKS,
               "softmax over 100,003 rows (8 rows a block) strides over 1024 blocks");
}

static void test_nccl_sizes(void)
{
    int bad = 0;
    for (size_t count = 0; count < 200; count++)
        for (int p = 1; p <= 9; p++) {
            size_t shard = hpcti_nccl_shard(count, p), pad = hpcti_nccl_padding(count, p);
            size_t total = shard * (size_t)p;
            bad += total < count || total >= count + (size_t)p;
            bad += pad ? pad != total : total != count;
        }
    tap_ok(!bad, "NCCL shards cover count with < node-size padding; padding only when needed");
    tap_ok(hpcti_nccl_shard(((size_t)1 << 33) + 1, 4) == ((size_t)1 << 31) + 1,
           "shard sizes do not overflow for 2^33 + 1 floats");
}

static void test_device_selection(void)
{
    int dev = -1;
    tap_ok(hpcti_select_device(-1, 3, 4, 4, 0, &dev) == HPCTI_DEVSEL_OK && dev == 3,
           "local rank 3 of 4 with 4 GPUs takes GPU 3");
    tap_is_int(hpcti_select_device(-1, 5, 8, 4, 0, &dev), HPCTI_DEVSEL_OVERSUBSCRIBED,
               "8 ranks on a node with 4 visible GPUs is refused");
    tap_ok(hpcti_select_device(-1, 5, 8, 4, 1, &dev) == HPCTI_DEVSEL_OK && dev == 1,
           "... unless sharing is allowed (local rank 5 -> GPU 1)");
    tap_ok(hpcti_select_device(-1, 2, 4, 1, 0, &dev) == HPCTI_DEVSEL_OK && dev == 0,
           "one visible GPU per rank (CUDA_VISIBLE_DEVICES set per task) is GPU 0, checked "
           "later by identity");
    tap_ok(hpcti_select_device(1, 0, 4, 2, 0, &dev) == HPCTI_DEVSEL_OK && dev == 1,
           "an explicit cfg.device wins");
    tap_is_int(hpcti_select_device(2, 0, 1, 2, 0, &dev), HPCTI_DEVSEL_OUT_OF_RANGE,
               "cfg.device beyond the visible GPUs is refused");
    tap_is_int(hpcti_select_device(-1, 0, 1, 0, 0, &dev), HPCTI_DEVSEL_NONE, "no GPU at all");
    uint64_t ids[] = {11, 22, 11, 33};
    tap_ok(hpcti_device_shared(ids, 4, 2) == 0 && hpcti_device_shared(ids, 4, 0) == 2 &&
               hpcti_device_shared(ids, 4, 3) == -1,
           "shared GPUs are found by identity, both ways; a GPU of its own is not shared");
}

int main(void)
{
    tap_plan(23 + 4 + 2 + 8);
    test_gemm_map();
    test_grid();
    test_nccl_sizes();
    test_device_selection();
    return tap_done();
}
