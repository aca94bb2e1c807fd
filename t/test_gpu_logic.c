/* test_gpu_logic.c: the CUDA backend's host-side logic (kernels/gpu_logic.h), on the CPU:
 * - GEMM argument mapping: for every transpose pair and non-square shapes (k = 0 and 1
 *   included), the column-major call the cuda backend makes (operands swapped), evaluated by
 *   a plain column-major reference sgemm, equals a row-major reference product; and the
 *   row-major call the cpu backend makes, through the real cblas_sgemm, equals it too;
 * - launch geometry: at least one block, never above the cap, and blocks x per_block covers n
 *   or the grid-stride loop does (n = 0, 1, the cap's edges, 2^24, 2^40);
 * - NCCL staging: shard x node size covers count with less than one shard of padding;
 * - the overlapped device average across nodes (hpcti_dq_*): shards packed back to back in the
 *   staging within the bound reserved at the start, chunks that cover each shard, reduction
 *   indices in order, and cross-node phases started in queue order whatever order the
 *   layers' copies reach the host (so every node numbers its reductions alike);
 * - the CUDA-aware MPI choice (HPCT_CUDA_AWARE_MPI, MPIX_Query_cuda_support's answer);
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

/* Layers of random sizes (0, 1, multiples of the node size and not) queued on nodes of 1 .. 8
 * ranks with small chunks: the staging and reductions stay within the bounds reserved at the
 * start, shards lie back to back, chunks cover each shard exactly. */
static void test_queue_layout(void)
{
    enum { LAYERS = 12 };
    struct hpcti_dq_item it[LAYERS];
    int bad_pack = 0, bad_bound = 0, bad_chunks = 0, bad_red = 0;
    srand(7);
    for (int trial = 0; trial < 400; trial++) {
        int ns = 1 + trial % 8, layers = 1 + rand() % LAYERS;
        size_t max_chunk = 1 + (size_t)(rand() % 9), total = 0, used = 0;
        for (int l = 0; l < layers; l++) {
            size_t count = trial % 5 == 0 ? (size_t)(rand() % 3) : (size_t)(rand() % 200);
            total += count;
            used = hpcti_dq_add(it, l, count, ns, max_chunk);
            bad_pack += it[l].host_off != (l ? it[l - 1].host_off + it[l - 1].shard : 0);
            bad_pack +=
                it[l].shard != hpcti_nccl_shard(count, ns) || it[l].phase != HPCTI_DQ_QUEUED;
            bad_red += it[l].red0 != (l ? it[l - 1].red0 + it[l - 1].nred : 0);
            size_t covered = 0;
            for (int k = 0; k < it[l].nred; k++) {
                size_t off, len = hpcti_dq_chunk_len(it[l].shard, max_chunk, k, &off);
                bad_chunks += off != covered || len == 0 || len > max_chunk;
                covered += len;
            }
            size_t off;
            bad_chunks += covered != it[l].shard;
            bad_chunks += hpcti_dq_chunk_len(it[l].shard, max_chunk, it[l].nred, &off) != 0;
        }
        bad_bound += used > hpcti_dq_staging_bound(total, layers, ns);
        bad_bound += it[layers - 1].red0 + it[layers - 1].nred >
                     hpcti_dq_reductions_bound(total, layers, ns, max_chunk);
    }
    tap_ok(!bad_pack, "queued layers' shards lie back to back in the staging (%d wrong)", bad_pack);
    tap_ok(!bad_bound,
           "staging and reductions stay within the bounds reserved at the start (%d over)",
           bad_bound);
    tap_ok(!bad_chunks, "chunks of at most max_chunk floats cover every shard exactly (%d wrong)",
           bad_chunks);
    tap_ok(!bad_red, "reduction indices follow queue order (%d wrong)", bad_red);
    tap_is_int(hpcti_dq_chunks(((size_t)1 << 28) * 3 + 1, (size_t)1 << 28), 4,
               "a shard of 3 x 2^28 + 1 floats is 4 reductions of at most 2^28");
}

/* Copies reach the host in a random order; a host that starts only hpcti_dq_next_cross's item
 * starts them in queue order and numbers the reductions red0 .. as every other node does. */
static void test_queue_order(void)
{
    enum { LAYERS = 9 };
    struct hpcti_dq_item it[LAYERS];
    int bad = 0, stuck = 0;
    srand(11);
    for (int trial = 0; trial < 200; trial++) {
        int arrived[LAYERS] = {0}, order[LAYERS], next_red = 0, started = 0;
        for (int l = 0; l < LAYERS; l++) {
            hpcti_dq_add(it, l, (size_t)(rand() % 50), 3, 4);
            order[l] = l;
        }
        for (int l = LAYERS - 1; l > 0; l--) { /* a random arrival order */
            int j = rand() % (l + 1), t = order[l];
            order[l] = order[j], order[j] = t;
        }
        for (int a = 0; a < LAYERS; a++) {
            arrived[order[a]] = 1;
            for (int i; (i = hpcti_dq_next_cross(it, LAYERS)) >= 0 && arrived[i];) {
                bad += i != started++ || it[i].red0 != next_red;
                next_red += it[i].nred;
                it[i].phase = HPCTI_DQ_CROSS;
            }
        }
        stuck += started != LAYERS || hpcti_dq_next_cross(it, LAYERS) != -1;
    }
    tap_ok(!bad, "cross-node phases start in queue order whatever the arrival order (%d wrong)",
           bad);
    tap_ok(!stuck, "every layer's cross-node phase starts once all have arrived (%d stuck)", stuck);
}

/* Block b of count floats over p nodes, as lib/comm/runtime/runtime.h splits them (the
 * reference). */
static size_t ref_block_len(size_t count, int p, int b)
{
    return count / (size_t)p + ((size_t)b < count % (size_t)p);
}

/* CUDA-aware slots: each layer's (cross size - 1) received blocks lie back to back after the
 * previous layer's, never beyond the bound reserved at the start, for every cross rank. */
static void test_queue_slots(void)
{
    enum { LAYERS = 12 };
    struct hpcti_dq_item it[LAYERS];
    int bad_pack = 0, bad_bound = 0;
    srand(13);
    for (int trial = 0; trial < 400; trial++) {
        int ns = 1 + trial % 8, cs = 2 + rand() % 7, me = rand() % cs, layers = 1 + rand() % LAYERS;
        size_t total = 0, used = 0;
        for (int l = 0; l < layers; l++) {
            size_t count = trial % 5 == 0 ? (size_t)(rand() % 3) : (size_t)(rand() % 300);
            total += count;
            hpcti_dq_add(it, l, count, ns, 4);
            size_t mine = ref_block_len(it[l].shard, cs, me);
            used = hpcti_dq_add_slots(it, l, mine, cs);
            bad_pack += it[l].slot_off != (l ? it[l - 1].slot_off + it[l - 1].slots : 0);
            bad_pack += it[l].slots != (size_t)(cs - 1) * mine;
        }
        bad_bound += used > hpcti_dq_slots_bound(total, layers, ns, cs);
    }
    tap_ok(!bad_pack, "received blocks of queued layers lie back to back in the slots (%d wrong)",
           bad_pack);
    tap_ok(!bad_bound, "slots stay within the bound reserved at the start (%d over)", bad_bound);
    tap_is_int((int)hpcti_dq_slots_bound(1000, 3, 4, 1), 0, "one node needs no slots");
}

/* CUDA-aware phases: exchanges complete and sums finish in a random order; a host that posts
 * only hpcti_dq_first_at's item posts each kind of exchange in queue order (so messages of one
 * tag match across nodes) and every layer reaches CROSSED. */
static void test_queue_device_order(void)
{
    enum { LAYERS = 7 };
    struct hpcti_dq_item it[LAYERS];
    int bad = 0, stuck = 0;
    srand(17);
    for (int trial = 0; trial < 300; trial++) {
        int posted_rs = 0, posted_ag = 0;
        for (int l = 0; l < LAYERS; l++) hpcti_dq_add(it, l, (size_t)(1 + rand() % 50), 2, 8);
        for (int round = 0; round < 4000; round++) {
            int i = hpcti_dq_first_at(it, LAYERS, HPCTI_DQ_QUEUED);
            if (i >= 0 && rand() % 2) { /* its mark fired: post the reduce-scatter exchange */
                bad += i != posted_rs++;
                it[i].phase = HPCTI_DQ_CROSS;
            }
            int j = rand() % LAYERS; /* any layer's exchange may complete first */
            if (it[j].phase == HPCTI_DQ_CROSS || it[j].phase == HPCTI_DQ_SHARING) it[j].phase++;
            i = hpcti_dq_first_at(it, LAYERS, HPCTI_DQ_SUMMED);
            if (i >= 0 && rand() % 2) { /* its sum finished: post the all-gather exchange */
                bad += i != posted_ag++;
                it[i].phase = HPCTI_DQ_SHARING;
            }
        }
        for (int l = 0; l < LAYERS; l++) stuck += it[l].phase != HPCTI_DQ_CROSSED;
    }
    tap_ok(!bad, "CUDA-aware exchanges are posted in queue order, each kind (%d wrong)", bad);
    tap_ok(!stuck, "every layer's CUDA-aware cross-node phase completes (%d stuck)", stuck);
    struct hpcti_dq_item two[2];
    hpcti_dq_add(two, 0, 10, 2, 8), hpcti_dq_add(two, 1, 10, 2, 8);
    two[0].phase = HPCTI_DQ_CROSS, two[1].phase = HPCTI_DQ_SUMMED;
    tap_is_int(hpcti_dq_first_at(two, 2, HPCTI_DQ_SUMMED), -1,
               "a layer whose sum is done waits to post while an earlier one is still summing");
}

/* HPCT_CUDA_AWARE_MPI and MPIX_Query_cuda_support's answer (-1: no query). */
static void test_cuda_aware_choice(void)
{
    tap_ok(hpcti_cuda_aware_choice(NULL, 1) == 1 && hpcti_cuda_aware_choice("", 1) == 1 &&
               hpcti_cuda_aware_choice(NULL, 0) == 0 && hpcti_cuda_aware_choice(NULL, -1) == 0,
           "unset: the MPI's own answer decides; an MPI without the query stages");
    tap_ok(hpcti_cuda_aware_choice("0", 1) == 0 && hpcti_cuda_aware_choice("1", 0) == 1 &&
               hpcti_cuda_aware_choice("1", -1) == 1,
           "HPCT_CUDA_AWARE_MPI=0 forces staging, =1 forces device pointers");
    tap_ok(hpcti_cuda_aware_choice("yes", 1) == -1 && hpcti_cuda_aware_choice("10", 1) == -1 &&
               hpcti_cuda_aware_choice("01", 0) == -1,
           "any other value is refused (yes, 10, 01)");
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
    tap_plan(23 + 4 + 2 + 5 + 2 + 3 + 3 + 3 + 8);
    test_gemm_map();
    test_grid();
    test_nccl_sizes();
    test_queue_layout();
    test_queue_order();
    test_queue_slots();
    test_queue_device_order();
    test_cuda_aware_choice();
    test_device_selection();
    return tap_done();
}
