/* gpu_logic.h: the host-side logic of the CUDA backend as pure functions, shared by both
 * backends and unit-tested on the CPU (t/test_gpu_logic.c): GEMM argument mapping (cblas
 * row-major vs cuBLAS column-major), launch geometry, NCCL staging sizes, device selection.
 * C and C++ (nvcc) alike; no CUDA types. Not installed: internal prefix hpcti_/HPCTI_. */
#ifndef HPCTI_GPU_LOGIC_H
#define HPCTI_GPU_LOGIC_H

#include <stddef.h>
#include <stdint.h>

/* One sgemm call as the BLAS sees it: C [m, n] = op(first) op(second), leading dimensions in
 * the call's own storage order (row-major for cblas, column-major for cuBLAS). */
struct hpcti_gemm_call {
    int trans_a, trans_b; /* 1: transpose the first / second operand */
    int m, n, k;
    int lda, ldb, ldc; /* of the first operand, the second operand and C; each >= 1 */
};

/* A row-major product C [m, n] = op(A) [m, k] op(B) [k, n] (A, B, C contiguous) as
 * row: cblas_sgemm(CblasRowMajor, ...) with operands (A, B), and
 * col: cublasSgemm (column-major) with operands (B, A): row-major C is column-major C^T,
 *      and C^T = op(B)^T op(A)^T, so the operands swap and m, n swap.
 * Returns 0 when C is empty (m or n <= 0: no call), else 1. */
struct hpcti_gemm_args {
    struct hpcti_gemm_call row, col;
};

static inline int hpcti_ld_at_least_1(int ld)
{
    return ld > 0 ? ld : 1;
}

static inline int hpcti_gemm_map(int ta, int tb, int m, int n, int k, struct hpcti_gemm_args *g)
{
    if (m <= 0 || n <= 0) return 0;
    int lda = hpcti_ld_at_least_1(ta ? m : k); /* A stored [m, k], or [k, m] when transposed */
    int ldb = hpcti_ld_at_least_1(tb ? k : n); /* B stored [k, n], or [n, k] when transposed */
    int ldc = hpcti_ld_at_least_1(n);
    g->row = (struct hpcti_gemm_call){ta != 0, tb != 0, m, n, k < 0 ? 0 : k, lda, ldb, ldc};
    g->col = (struct hpcti_gemm_call){tb != 0, ta != 0, n, m, k < 0 ? 0 : k, ldb, lda, ldc};
    return 1;
}

/* Launch geometry of a grid-stride loop over n items, per_block items a block: at least 1
 * block, at most cap (the loop then strides). cap must be <= 2^31 - 1 (the x-dimension limit). */
static inline unsigned hpcti_grid_blocks(size_t n, size_t per_block, unsigned cap)
{
    size_t b = (n + per_block - 1) / per_block;
    if (b < 1) b = 1;
    if (b > cap) b = cap;
    return (unsigned)b;
}

/* Threads of every element-wise and reduction block; most blocks of a reduction's first pass
 * (its partials fit one finishing block), and of an element-wise grid. */
#define HPCTI_K_THREADS         256
#define HPCTI_K_MAX_BLOCKS      1024
#define HPCTI_K_MAX_GRID_BLOCKS 1048560u

/* NCCL's reduce-scatter needs count to be shard * node_size: the shard per node rank. */
static inline size_t hpcti_nccl_shard(size_t count, int node_size)
{
    return node_size > 0 ? (count + (size_t)node_size - 1) / (size_t)node_size : 0;
}

/* Elements of the zero-padded copy the reduce-scatter reads (0: buf itself is used). */
static inline size_t hpcti_nccl_padding(size_t count, int node_size)
{
    size_t total = hpcti_nccl_shard(count, node_size) * (size_t)node_size;
    return total == count ? 0 : total;
}

/* The overlapped device average across nodes (lib/comm/avg/device_avg.c): each layer (or bucket)
 * queued as backward produces it goes through these phases, in this order:
 *   QUEUED    ncclReduceScatter and the copy of this rank's shard to the staging (pinned host
 *             memory, or device memory when MPI is CUDA-aware) are on NCCL's stream, followed by
 *             a CUDA event (stream mark 2i);
 *   CROSS     that event has fired: the cross-node phase of the shard was started. Staged: the
 *             host engine's reductions (one per chunk of at most max_chunk floats). CUDA-aware:
 *             the reduce-scatter exchange of the device shard's blocks was posted to MPI;
 *   SUMMED    (CUDA-aware) that exchange completed: the rank-order sum of this rank's block
 *             (times 1/W) is on a side stream, followed by stream mark 2i + 1;
 *   SHARING   (CUDA-aware) mark 2i + 1 has fired: the all-gather exchange was posted;
 *   CROSSED   (CUDA-aware) that exchange completed: the device shard holds the average;
 *   GATHERED  the cross-node phase is done: the shard's copy back and ncclAllGather are on
 *             NCCL's stream.
 * Ordering rules that keep every rank's collectives in the same order: the postings of each
 * kind start in queue order (hpcti_dq_first_at: the reductions' indices, hence MPI tags, agree
 * across nodes; the exchanges' messages of one tag match in posting order), and all-gathers
 * are enqueued in queue order once every reduce-scatter is queued (NCCL sees the same sequence
 * on every rank of the node). */
enum {
    HPCTI_DQ_QUEUED = 0,
    HPCTI_DQ_CROSS,
    HPCTI_DQ_SUMMED,
    HPCTI_DQ_SHARING,
    HPCTI_DQ_CROSSED,
    HPCTI_DQ_GATHERED
};

struct hpcti_dq_item {
    size_t count;    /* floats of the device buffer */
    size_t shard;    /* floats of this rank's shard (hpcti_nccl_shard) */
    size_t host_off; /* where the shard lies in the pinned host staging */
    int red0, nred;  /* its cross-node reductions: indices red0 .. red0 + nred - 1 */
    int phase;       /* HPCTI_DQ_* */
    size_t slot_off; /* CUDA-aware: where its blocks from the other nodes lie in the slots */
    size_t slots;    /* CUDA-aware: (cross size - 1) x this rank's block of the shard */
};

/* Reductions (chunks of at most max_chunk floats) a shard of n floats needs. */
static inline int hpcti_dq_chunks(size_t n, size_t max_chunk)
{
    return n && max_chunk ? (int)((n + max_chunk - 1) / max_chunk) : 0;
}

/* Chunk k of a shard of n floats: its first float and length. */
static inline size_t hpcti_dq_chunk_len(size_t n, size_t max_chunk, int k, size_t *off)
{
    *off = (size_t)k * max_chunk;
    return *off >= n ? 0 : (n - *off < max_chunk ? n - *off : max_chunk);
}

/* Append items[n] for a buffer of count floats on a node of node_size ranks: its shard lies
 * after items[n - 1]'s in the staging. Returns the staging floats items [0, n] need. */
static inline size_t hpcti_dq_add(struct hpcti_dq_item *items, int n, size_t count, int node_size,
                                  size_t max_chunk)
{
    struct hpcti_dq_item *it = &items[n];
    it->count = count;
    it->shard = hpcti_nccl_shard(count, node_size);
    it->host_off = n ? items[n - 1].host_off + items[n - 1].shard : 0;
    it->red0 = n ? items[n - 1].red0 + items[n - 1].nred : 0;
    it->nred = hpcti_dq_chunks(it->shard, max_chunk);
    it->phase = HPCTI_DQ_QUEUED;
    it->slot_off = it->slots = 0;
    return it->host_off + it->shard;
}

/* Upper bounds for an operation of at most layers buffers holding total floats on a node of
 * node_size ranks: staging floats (every shard rounds up by less than one float a rank) and
 * reductions (every buffer's last chunk may be partial). */
static inline size_t hpcti_dq_staging_bound(size_t total, int layers, int node_size)
{
    return hpcti_nccl_shard(total, node_size) + (size_t)(layers > 0 ? layers : 0);
}

static inline int hpcti_dq_reductions_bound(size_t total, int layers, int node_size,
                                            size_t max_chunk)
{
    return hpcti_dq_chunks(hpcti_dq_staging_bound(total, layers, node_size), max_chunk) +
           (layers > 0 ? layers : 0);
}

/* The item that may leave phase next where that step must follow queue order: the first item
 * not past phase, when it is at phase (every earlier item is past it), else -1. */
static inline int hpcti_dq_first_at(const struct hpcti_dq_item *items, int n, int phase)
{
    for (int i = 0; i < n; i++)
        if (items[i].phase <= phase) return items[i].phase == phase ? i : -1;
    return -1;
}

/* The item whose cross-node phase may start next (the first still QUEUED, every earlier one
 * started), or -1. */
static inline int hpcti_dq_next_cross(const struct hpcti_dq_item *items, int n)
{
    return hpcti_dq_first_at(items, n, HPCTI_DQ_QUEUED);
}

/* CUDA-aware: item n (added by hpcti_dq_add), whose block of the shard is mine floats, receives
 * cross_size - 1 blocks of mine floats, in the device slots after item n - 1's. Returns the slot
 * floats items [0, n] need. */
static inline size_t hpcti_dq_add_slots(struct hpcti_dq_item *items, int n, size_t mine,
                                        int cross_size)
{
    struct hpcti_dq_item *it = &items[n];
    it->slot_off = n ? items[n - 1].slot_off + items[n - 1].slots : 0;
    it->slots = (size_t)(cross_size > 1 ? cross_size - 1 : 0) * mine;
    return it->slot_off + it->slots;
}

/* Upper bound of the slots of an operation (hpcti_dq_staging_bound's arguments): a block is at
 * most ceil(shard / cross_size), and the shards sum to at most the staging bound. */
static inline size_t hpcti_dq_slots_bound(size_t total, int layers, int node_size, int cross_size)
{
    if (cross_size < 2) return 0;
    size_t shards = hpcti_dq_staging_bound(total, layers, node_size);
    return (size_t)(cross_size - 1) *
           (shards / (size_t)cross_size + (size_t)(layers > 0 ? layers : 0));
}

/* Whether the cross-node phase passes device pointers to MPI (hpct_init, per rank; the ranks
 * then agree on the minimum): env is HPCT_CUDA_AWARE_MPI (NULL or "" when unset), query the
 * answer of Open MPI's MPIX_Query_cuda_support() (-1 when this MPI has no such query). Returns
 * 1 (device pointers), 0 (staged through pinned host memory), or -1 when env is set to
 * anything but "0" or "1" (an error naming the variable). */
static inline int hpcti_cuda_aware_choice(const char *env, int query)
{
    if (env && env[0]) return (env[0] == '0' || env[0] == '1') && !env[1] ? env[0] - '0' : -1;
    return query == 1;
}

/* Device selection outcome. */
enum {
    HPCTI_DEVSEL_OK = 0,
    HPCTI_DEVSEL_NONE,          /* no visible device */
    HPCTI_DEVSEL_OUT_OF_RANGE,  /* cfg device >= visible devices */
    HPCTI_DEVSEL_OVERSUBSCRIBED /* more ranks on the node than visible devices, sharing not allowed
                                 */
};

/* The CUDA ordinal (among the visible devices, CUDA_VISIBLE_DEVICES applied) of a rank:
 * cfg_device when >= 0, else local_rank modulo the visible count. local_size ranks on the node
 * and fewer visible devices is refused unless allow_share, or visible is 1 (a launcher that
 * gives each rank its own device through CUDA_VISIBLE_DEVICES: the node-wide check of device
 * identities, hpcti_device_shared, then decides). */
static inline int hpcti_select_device(int cfg_device, int local_rank, int local_size, int visible,
                                      int allow_share, int *device)
{
    if (visible <= 0) return HPCTI_DEVSEL_NONE;
    if (cfg_device >= visible) return HPCTI_DEVSEL_OUT_OF_RANGE;
    if (cfg_device >= 0) {
        *device = cfg_device;
        return HPCTI_DEVSEL_OK;
    }
    if (local_size > visible && visible > 1 && !allow_share) return HPCTI_DEVSEL_OVERSUBSCRIBED;
    *device = (local_rank < 0 ? 0 : local_rank) % visible;
    return HPCTI_DEVSEL_OK;
}

/* The lowest other local rank whose device identity ids[r] equals ids[me], or -1 (ids [n]). */
static inline int hpcti_device_shared(const uint64_t *ids, int n, int me)
{
    for (int r = 0; r < n; r++)
        if (r != me && ids[r] == ids[me]) return r;
    return -1;
}

#endif
