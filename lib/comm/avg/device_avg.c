/* device_avg.c: averaging of buffers in the backend's memory (the cuda backend's device
 * gradients), with the structure and guarantees of the host engine (reduce.c):
 *
 *   NCCL path (hpct_init made a node NCCL communicator: cuda, --with-nccl, more than one rank
 *   per node, equal nodes, one GPU per rank):
 *     1. ncclReduceScatter inside the node (nccl_node.c): local rank l holds the node's sum of
 *        shard l, copied into pinned host memory (one stream, ordered after the default
 *        stream's kernels by a CUDA event);
 *     2. the host engine's cross-node phases on that shard (hpcti_red_start_cross: reduce-
 *        scatter + allgather over the ranks with the same local rank, owner sums in rank
 *        order, times 1/W, cfg.grad_transport on the wire), or times 1/W alone on one node;
 *     3. the shard back to the device and ncclAllGather inside the node.
 *   Overlap with backward (built-in models, hpcti_device_average_enqueue): each layer's average
 *   is queued on NCCL's stream as backward produces it (after a CUDA event on the default
 *   stream). One node: reduce-scatter, scale, all-gather, all on the device. Several nodes:
 *   reduce-scatter and the shard's copy to its own place in the pinned staging, then a stream
 *   mark; the host starts the shard's cross-node phases once its mark has fired (checked
 *   between layers and while waiting), in queue order; once every layer is queued and a
 *   layer's cross-node phases are done, its copy back and all-gather are queued, in queue
 *   order (the bookkeeping: kernels/gpu_logic.h, hpcti_dq_*). With CUDA-aware MPI the shards
 *   are copied to device staging instead, and each layer's cross-node phase runs on the device
 *   (dq_step): once its mark fires, the reduce-scatter exchange is posted to MPI; once that
 *   completes, the rank-order sum (rank_sum_kernel, times 1/W) on a side stream and a mark;
 *   once that fires, the all-gather exchange; the copy back and ncclAllGather are queued only
 *   after it has completed. Each element goes through the same operations as on the path that
 *   is not overlapped (the same bits).
 *   Staged path (everything else: cpu-only MPI between single-GPU nodes, unequal nodes, shared
 *   GPUs, no NCCL): the buffer is copied into pinned host memory, averaged by the host engine
 *   (hierarchical or flat, exactly as on the cpu backend: the same bits) and copied back.
 *
 * Every average is part of one collective operation (hpcti_op_begin .. hpcti_op_end): arrival
 * tokens, the deadline (NCCL waits poll it too, then ncclCommAbort), hpct_comm_stats. */
#include "config.h"
#include "device_avg.h"
#include "algo.h"
#include "reduce.h"
#include "../../device/ops.h"
#include "../../../kernels/gpu_logic.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef HPCT_HAVE_MPIX_CUDA_QUERY
#include <mpi-ext.h> /* MPIX_Query_cuda_support */
#endif

/* Reductions an average of n floats needs inside an operation (chunks of HPCTI_MAX_CHUNK). */
int hpcti_device_reductions(size_t n)
{
    return n ? (int)((n + HPCTI_MAX_CHUNK - 1) / HPCTI_MAX_CHUNK) : 0;
}

/* Pinned host staging of n floats (grows, never shrinks; freed by hpct_finalize). */
static hpct_status_t stage_room(hpct_ctx_t ctx, size_t n)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    if (n <= d->avg->stage_cap) return HPCT_SUCCESS;
    ctx->ops->free_host(ctx, d->avg->stage);
    d->avg->stage = ctx->ops->alloc_host(ctx, (n ? n : 1) * sizeof(float));
    d->avg->stage_cap = d->avg->stage ? n : 0;
    return d->avg->stage ? HPCT_SUCCESS : HPCT_ERR_NO_MEMORY;
}

/* The host engine over host [n] in chunks, each waited for (deadline-bounded); cross: only the
 * cross-node phases of a node shard. */
static hpct_status_t host_average(hpct_ctx_t ctx, float *host, size_t n, int cross)
{
    hpct_status_t s = HPCT_SUCCESS;
    for (size_t off = 0; off < n && !s; off += HPCTI_MAX_CHUNK) {
        size_t len = n - off < HPCTI_MAX_CHUNK ? n - off : HPCTI_MAX_CHUNK;
        int id;
        s = cross ? hpcti_red_start_cross(ctx, host + off, len, 0, &id)
                  : hpcti_red_start(ctx, host + off, len, &id);
        if (!s) s = hpcti_red_wait(ctx, id);
    }
    return s;
}

/* Staged path: device -> pinned host -> host engine -> device. */
static hpct_status_t staged_average(hpct_ctx_t ctx, float *buf, size_t n)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    hpct_status_t s = stage_room(ctx, n);
    if (!s)
        s = ctx->ops->to_host(ctx, d->avg->stage, buf, sizeof(float) * n); /* waits for kernels */
    if (!s) s = host_average(ctx, d->avg->stage, n, 0);
    if (!s) s = ctx->ops->to_device(ctx, buf, d->avg->stage, sizeof(float) * n);
    return s;
}

#ifdef HPCT_HAVE_NCCL
/* Wait for the NCCL stream under the operation's deadline; a timeout names the operation. The
 * time waited counts in hpct_comm_stats, as the host engine's waits do. */
static hpct_status_t nccl_wait(hpct_ctx_t ctx, const char *call)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    int timed_out = 0;
    double t0 = hpcti_now();
    hpct_status_t s = hpcti_nccl_wait(d->avg->nccl, d->op_start + d->deadline_s, &timed_out);
    d->wait_s += hpcti_now() - t0;
    return timed_out ? hpcti_op_timed_out(ctx, call) : s;
}

/* Wait for stream mark `mark` the same way (call: the work it follows, for a timeout). */
static hpct_status_t mark_wait(hpct_ctx_t ctx, int mark, const char *call)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    int timed_out = 0;
    double t0 = hpcti_now();
    hpct_status_t s =
        hpcti_nccl_wait_mark(d->avg->nccl, mark, d->op_start + d->deadline_s, &timed_out);
    d->wait_s += hpcti_now() - t0;
    return timed_out ? hpcti_op_timed_out(ctx, call) : s;
}

/* An enqueue's status (the calls poll under the operation's deadline while NCCL is still
 * enqueueing); a timeout, the communicator aborted, names the operation. */
static hpct_status_t enqueued(hpct_ctx_t ctx, hpct_status_t s, const char *call)
{
    return s == HPCT_ERR_TIMEOUT ? hpcti_op_timed_out(ctx, call) : s;
}

static void set_deadline(hpct_ctx_t ctx)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    hpcti_nccl_set_deadline(d->avg->nccl, d->op_start + d->deadline_s);
}

/* The layers queued in the current overlapped operation across nodes (gpu_logic.h). */
struct hpcti_dev_queue {
    struct hpcti_dq_item *items; /* [cap] */
    float **bufs;                /* [cap] each item's device buffer */
    int n, cap;
    int device_mpi; /* 1: every rank's MPI takes device pointers (agreed at hpct_init) */
    float *slots;   /* [slots_cap] device: blocks received in the CUDA-aware cross phase */
    size_t slots_cap;
    float *dstage; /* [dstage_cap] device: the layers' shards, CUDA-aware overlapped path */
    size_t dstage_cap;
    MPI_Request *reqs; /* [reqs_cap] each item's exchange: 2 (cross size - 1) requests */
    size_t reqs_cap;
};

static hpct_status_t queue_room(hpct_ctx_t ctx, int layers)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    struct hpcti_dev_queue *q = d->avg->dev_queue;
    if (!q &&
        !(q = d->avg->dev_queue = hpcti_calloc(ctx, 1, sizeof *q, "the device average queue")))
        return HPCT_ERR_NO_MEMORY;
    q->n = 0;
    if (layers <= q->cap) return HPCT_SUCCESS;
    free(q->items), free(q->bufs);
    q->items = calloc((size_t)layers, sizeof *q->items);
    q->bufs = calloc((size_t)layers, sizeof *q->bufs);
    q->cap = q->items && q->bufs ? layers : 0;
    return q->cap
               ? HPCT_SUCCESS
               : hpcti_error(ctx, HPCT_ERR_NO_MEMORY, "device average queue of %d layers", layers);
}

/* Tags of the CUDA-aware cross-node phases on the cross communicator (the host engine's tags
 * start at 1000; an operation uses one kind or the other). */
enum { TAG_DEVICE_RS = 998, TAG_DEVICE_AG = 999 };

/* Device room for the blocks other nodes send (grows, never shrinks). */
static hpct_status_t device_slots(hpct_ctx_t ctx, size_t n, float **slots)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    struct hpcti_dev_queue *q = d->avg->dev_queue;
    if (n > q->slots_cap) {
        if (q->slots) ctx->ops->free(ctx, q->slots);
        q->slots = ctx->ops->alloc(ctx, sizeof(float) * n);
        q->slots_cap = q->slots ? n : 0;
        if (!q->slots) return HPCT_ERR_NO_MEMORY;
    }
    *slots = q->slots;
    return HPCT_SUCCESS;
}

/* Post one exchange of the cross phase with every other node into reqs [2 (cross size - 1)]
 * (unused ones MPI_REQUEST_NULL). Reduce-scatter: send cross rank p its block of the shard [n],
 * receive p's copy of this rank's block into slots (p < me ? p : p - 1); all-gather: send this
 * rank's block, receive p's block into its place. Messages of one tag match in posting order,
 * so every rank posts the exchanges of each kind in the same order. */
static hpct_status_t post_exchange(hpct_ctx_t ctx, float *shard, size_t n, float *slots, int gather,
                                   MPI_Request *reqs)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    int cs = d->cross_size, me = 0, nreq = 0, rc = MPI_SUCCESS;
    MPI_Comm_rank(d->cross, &me);
    size_t mine = hpcti_block_len(n, cs, me), at = hpcti_block_start(n, cs, me);
    for (int r = 0; r < 2 * (cs - 1); r++) reqs[r] = MPI_REQUEST_NULL;
    int tag = gather ? TAG_DEVICE_AG : TAG_DEVICE_RS;
    for (int p = 0; p < cs && rc == MPI_SUCCESS; p++) {
        if (p == me) continue;
        size_t start = hpcti_block_start(n, cs, p), len = hpcti_block_len(n, cs, p);
        float *recv = gather ? shard + start : slots + (size_t)(p < me ? p : p - 1) * mine;
        rc =
            MPI_Irecv(recv, (int)(gather ? len : mine), MPI_FLOAT, p, tag, d->cross, &reqs[nreq++]);
        if (rc == MPI_SUCCESS)
            rc = MPI_Isend(gather ? shard + at : shard + start, (int)(gather ? mine : len),
                           MPI_FLOAT, p, tag, d->cross, &reqs[nreq++]);
    }
    return rc == MPI_SUCCESS ? HPCT_SUCCESS
                             : hpcti_mpi_failed(ctx, rc, "posting a CUDA-aware cross exchange");
}

/* One exchange (post_exchange), waited for under the operation's deadline. */
static hpct_status_t device_exchange(hpct_ctx_t ctx, float *shard, size_t n, float *slots,
                                     int gather)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    size_t nreq = 2 * (size_t)(d->cross_size - 1);
    MPI_Request *reqs = hpcti_calloc(ctx, nreq ? nreq : 1, sizeof *reqs, "cross-node requests");
    if (!reqs) return HPCT_ERR_NO_MEMORY;
    hpct_status_t s = post_exchange(ctx, shard, n, slots, gather, reqs);
    if (!s) s = hpcti_wait_reqs(ctx, reqs, (int)nreq);
    free(reqs);
    return s;
}

/* CUDA-aware MPI: the host engine's cross-node phases on the device shard [n] (nothing
 * staged): reduce-scatter over the cross communicator (this rank's block summed over the
 * nodes in rank order, times 1/W: hpcti_nccl_rank_sum, the host's operations), allgather. */
static hpct_status_t device_cross(hpct_ctx_t ctx, float *shard, size_t n)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    int me = 0;
    MPI_Comm_rank(d->cross, &me);
    size_t mine = hpcti_block_len(n, d->cross_size, me);
    float *slots = NULL;
    hpct_status_t s = device_slots(ctx, (size_t)(d->cross_size - 1) * mine, &slots);
    if (!s) s = device_exchange(ctx, shard, n, slots, 0);
    if (!s)
        s = hpcti_nccl_rank_sum(d->avg->nccl, shard + hpcti_block_start(n, d->cross_size, me),
                                slots, d->cross_size, me, mine, 1.0f / (float)d->size);
    if (!s) s = nccl_wait(ctx, "the cross-node sum (rank_sum_kernel)");
    return s ? s : device_exchange(ctx, shard, n, slots, 1);
}

/* 1 when the cross-node phase passes device pointers to MPI (fp32 on the wire: the 16-bit
 * wire formats are converted on the host). */
static int device_mpi(const struct hpcti_dist *d)
{
    const struct hpcti_dev_queue *q = d->avg->dev_queue;
    return q && q->device_mpi && d->avg->transport == HPCT_TRANSPORT_FP32;
}

/* NCCL path (see the top of the file). One node: the shard is scaled on the device between
 * the two NCCL halves (times 1/W in fp32, as the host engine scales), no host round trip. */
static hpct_status_t nccl_average(hpct_ctx_t ctx, float *buf, size_t n)
{
    static const char one_node[] = "ncclReduceScatter + ncclAllGather (one node)";
    struct hpcti_dist *d = hpcti_dist(ctx);
    set_deadline(ctx);
    if (d->cross_size == 1) {
        hpct_status_t s = hpcti_nccl_node_mean(d->avg->nccl, buf, n, 1.0f / (float)d->size);
        s = enqueued(ctx, s, one_node);
        return s ? s : nccl_wait(ctx, one_node);
    }
    size_t shard = hpcti_nccl_shard(n, d->local_size);
    if (device_mpi(d)) { /* the shard stays on the device */
        hpct_status_t s = enqueued(ctx, hpcti_nccl_reduce_scatter(d->avg->nccl, buf, n, NULL),
                                   "ncclReduceScatter");
        if (!s) s = nccl_wait(ctx, "ncclReduceScatter");
        if (!s) s = device_cross(ctx, hpcti_nccl_device_shard(d->avg->nccl), shard);
        if (!s)
            s = enqueued(ctx, hpcti_nccl_all_gather(d->avg->nccl, buf, n, NULL), "ncclAllGather");
        return s ? s : nccl_wait(ctx, "ncclAllGather");
    }
    hpct_status_t s = stage_room(ctx, shard);
    if (!s)
        s = enqueued(ctx, hpcti_nccl_reduce_scatter(d->avg->nccl, buf, n, d->avg->stage),
                     "ncclReduceScatter");
    if (!s) s = nccl_wait(ctx, "ncclReduceScatter");
    if (!s) s = host_average(ctx, d->avg->stage, shard, 1); /* times 1/W in its reduce-scatter */
    if (!s)
        s = enqueued(ctx, hpcti_nccl_all_gather(d->avg->nccl, buf, n, d->avg->stage),
                     "ncclAllGather");
    if (!s) s = nccl_wait(ctx, "ncclAllGather");
    return s;
}
#endif

#ifdef HPCT_HAVE_NCCL
/* Start item i's cross-node phases: one reduction per chunk of its shard in the staging. */
static hpct_status_t start_cross(hpct_ctx_t ctx, int i)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    struct hpcti_dq_item *it = &((struct hpcti_dev_queue *)d->avg->dev_queue)->items[i];
    hpct_status_t s = HPCT_SUCCESS;
    for (int k = 0; k < it->nred && !s; k++) {
        size_t off, len = hpcti_dq_chunk_len(it->shard, HPCTI_MAX_CHUNK, k, &off);
        int id = -1;
        s = hpcti_red_start_cross(ctx, d->avg->stage + it->host_off + off, len, 0, &id);
        if (!s && id != it->red0 + k)
            s = hpcti_error(ctx, HPCT_ERR_INTERNAL, "%s: layer %d's reduction %d is #%d, not #%d",
                            d->op_name, i, k, id, it->red0 + k);
    }
    it->phase = HPCTI_DQ_CROSS;
    return s;
}

/* Without waiting: start the cross-node phases of the layers whose shards reached the host (in
 * queue order), then progress every reduction in flight. */
static hpct_status_t queue_progress(hpct_ctx_t ctx)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    struct hpcti_dev_queue *q = d->avg->dev_queue;
    hpct_status_t s = HPCT_SUCCESS;
    for (int i; !s && (i = hpcti_dq_next_cross(q->items, q->n)) >= 0;) {
        int fired = 0;
        s = hpcti_nccl_marked(d->avg->nccl, 2 * i, &fired);
        if (!fired) break;
        if (!s) s = start_cross(ctx, i);
    }
    return s ? s : hpcti_red_progress(ctx);
}

/* CUDA-aware overlapped path: item i's shard in the device staging and its requests. */
static float *dq_shard(struct hpcti_dev_queue *q, int i)
{
    return q->dstage + q->items[i].host_off;
}

static MPI_Request *dq_reqs(struct hpcti_dist *d, int i)
{
    struct hpcti_dev_queue *q = d->avg->dev_queue;
    return q->reqs + (size_t)i * 2 * (size_t)(d->cross_size - 1);
}

/* Whether item i's exchange has completed (MPI_Testall, no waiting). */
static hpct_status_t dq_tested(hpct_ctx_t ctx, int i, int *done)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    int rc = MPI_Testall(2 * (d->cross_size - 1), dq_reqs(d, i), done, MPI_STATUSES_IGNORE);
    return rc == MPI_SUCCESS ? HPCT_SUCCESS
                             : hpcti_mpi_failed(ctx, rc, "testing a CUDA-aware cross exchange");
}

/* The rank-order sum of item i's block (times 1/W) on the side stream, then mark 2i + 1: its
 * inputs are complete (the shard's copy: mark 2i fired; the slots: the exchange completed). */
static hpct_status_t dq_sum(hpct_ctx_t ctx, int i)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    struct hpcti_dev_queue *q = d->avg->dev_queue;
    struct hpcti_dq_item *it = &q->items[i];
    int me = 0;
    MPI_Comm_rank(d->cross, &me);
    return hpcti_nccl_rank_sum_marked(
        d->avg->nccl, dq_shard(q, i) + hpcti_block_start(it->shard, d->cross_size, me),
        q->slots + it->slot_off, d->cross_size, me, hpcti_block_len(it->shard, d->cross_size, me),
        1.0f / (float)d->size, 2 * i + 1);
}

/* Advance CUDA-aware item i one phase where nothing needs waiting for (*moved = 1 then). MPI
 * touches the device shard only after the stream mark of the work that fills it has fired, and
 * the exchanges of each kind are posted in queue order (hpcti_dq_first_at). */
static hpct_status_t dq_step(hpct_ctx_t ctx, int i, int *moved)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    struct hpcti_dev_queue *q = d->avg->dev_queue;
    struct hpcti_dq_item *it = &q->items[i];
    int ready = 0, ph = it->phase;
    hpct_status_t s = HPCT_SUCCESS;
    *moved = 0;
    if (ph == HPCTI_DQ_QUEUED || ph == HPCTI_DQ_SUMMED) {
        if (hpcti_dq_first_at(q->items, q->n, ph) != i) return HPCT_SUCCESS;
        s = hpcti_nccl_marked(d->avg->nccl, ph == HPCTI_DQ_QUEUED ? 2 * i : 2 * i + 1, &ready);
        if (!s && ready)
            s = post_exchange(ctx, dq_shard(q, i), it->shard, q->slots + it->slot_off,
                              ph == HPCTI_DQ_SUMMED, dq_reqs(d, i));
    } else if (ph == HPCTI_DQ_CROSS || ph == HPCTI_DQ_SHARING) {
        s = dq_tested(ctx, i, &ready);
        if (!s && ready && ph == HPCTI_DQ_CROSS) s = dq_sum(ctx, i);
    }
    if (!s && ready) it->phase++, *moved = 1;
    return s;
}

/* Every CUDA-aware item as far as it goes without waiting. */
static hpct_status_t dq_progress(hpct_ctx_t ctx)
{
    struct hpcti_dev_queue *q = hpcti_dist(ctx)->avg->dev_queue;
    hpct_status_t s = HPCT_SUCCESS;
    for (int moved = 1; moved && !s;) {
        moved = 0;
        for (int i = 0, m = 0; i < q->n && !s; i++, moved |= m) s = dq_step(ctx, i, &m);
    }
    return s;
}

/* CUDA-aware item i (every earlier one finished) until its device shard holds the average:
 * each wait deadline-bounded (stream marks: the NCCL communicator aborted on expiry). */
static hpct_status_t dq_finish(hpct_ctx_t ctx, int i)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    struct hpcti_dq_item *it = &((struct hpcti_dev_queue *)d->avg->dev_queue)->items[i];
    hpct_status_t s = HPCT_SUCCESS;
    while (!s && it->phase < HPCTI_DQ_CROSSED) {
        int ph = it->phase;
        s = dq_progress(ctx);
        if (s || it->phase != ph) continue;
        if (ph == HPCTI_DQ_CROSS || ph == HPCTI_DQ_SHARING) {
            s = hpcti_wait_reqs(ctx, dq_reqs(d, i), 2 * (d->cross_size - 1));
            continue;
        }
        s = ph == HPCTI_DQ_QUEUED ? mark_wait(ctx, 2 * i, "ncclReduceScatter (per layer)")
                                  : mark_wait(ctx, 2 * i + 1, "rank_sum_kernel (per layer)");
    }
    return s;
}

/* A failure while CUDA-aware exchanges of the queue are still posted (their receives write into
 * the device staging and slots, their messages pair with the peers'): the runtime is marked
 * broken, so no later collective runs beside them (it fails naming this one) and
 * hpct_finalize leaves MPI and its communicators alone. */
static hpct_status_t abandon_exchanges(hpct_ctx_t ctx, hpct_status_t s)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    struct hpcti_dev_queue *q = d->avg->dev_queue;
    if (!s || !q || d->broken || !device_mpi(d)) return s;
    for (int i = 0; i < q->n; i++) {
        if (q->items[i].phase != HPCTI_DQ_CROSS && q->items[i].phase != HPCTI_DQ_SHARING) continue;
        snprintf(d->broken_why, sizeof d->broken_why,
                 "'%s' failed with CUDA-aware exchanges in flight: %.200s", d->op_name,
                 ctx->last_error);
        d->broken = 1;
        d->in_op = 0;
        break;
    }
    return s;
}

/* Progress of the overlapped path, staged or CUDA-aware (device_mpi). */
static hpct_status_t overlap_progress(hpct_ctx_t ctx)
{
    return device_mpi(hpcti_dist(ctx)) ? dq_progress(ctx) : queue_progress(ctx);
}

/* Item n's place in the staging (pinned host, or device when CUDA-aware) and, CUDA-aware, in
 * the slots, checked against what overlap_begin reserved; *shard_copy: where its shard goes. */
static hpct_status_t queue_place(hpct_ctx_t ctx, size_t n, float **shard_copy)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    struct hpcti_dev_queue *q = d->avg->dev_queue;
    int dev = device_mpi(d), me = 0;
    size_t need = hpcti_dq_add(q->items, q->n, n, d->local_size, HPCTI_MAX_CHUNK);
    if (need > (dev ? q->dstage_cap : d->avg->stage_cap))
        return hpcti_error(ctx, HPCT_ERR_INTERNAL, "%s: staging of %zu floats, %zu reserved",
                           d->op_name, need, dev ? q->dstage_cap : d->avg->stage_cap);
    *shard_copy = (dev ? q->dstage : d->avg->stage) + q->items[q->n].host_off;
    if (!dev) return HPCT_SUCCESS;
    MPI_Comm_rank(d->cross, &me);
    size_t mine = hpcti_block_len(q->items[q->n].shard, d->cross_size, me);
    need = hpcti_dq_add_slots(q->items, q->n, mine, d->cross_size);
    if (need > q->slots_cap)
        return hpcti_error(ctx, HPCT_ERR_INTERNAL, "%s: slots of %zu floats, %zu reserved",
                           d->op_name, need, q->slots_cap);
    return HPCT_SUCCESS;
}

/* Queue buf [n]'s reduce-scatter and the copy of its shard into the staging, then mark 2n. */
static hpct_status_t queue_layer(hpct_ctx_t ctx, float *buf, size_t n)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    struct hpcti_dev_queue *q = d->avg->dev_queue;
    if (q->n >= q->cap)
        return hpcti_error(ctx, HPCT_ERR_INTERNAL, "%s: more layers than reserved (%d)", d->op_name,
                           q->cap);
    float *shard_copy = NULL;
    hpct_status_t s = queue_place(ctx, n, &shard_copy);
    q->bufs[q->n] = buf;
    if (!s)
        s = enqueued(ctx, hpcti_nccl_reduce_scatter(d->avg->nccl, buf, n, shard_copy),
                     "ncclReduceScatter (per layer)");
    if (!s) s = hpcti_nccl_mark(d->avg->nccl, 2 * q->n);
    if (!s) q->n++;
    return s ? s : overlap_progress(ctx);
}

/* Item i's shard on the host (its mark waited for, deadline-bounded), averaged across nodes. */
static hpct_status_t finish_cross(hpct_ctx_t ctx, int i)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    struct hpcti_dq_item *it = &((struct hpcti_dev_queue *)d->avg->dev_queue)->items[i];
    hpct_status_t s = HPCT_SUCCESS;
    if (it->phase == HPCTI_DQ_QUEUED) {
        s = mark_wait(ctx, 2 * i, "ncclReduceScatter (per layer)");
        if (!s) s = start_cross(ctx, i);
    }
    for (int k = 0; k < it->nred && !s; k++) s = hpcti_red_wait(ctx, it->red0 + k);
    return s;
}

/* A layer that could not be queued, a backward that failed midway or a failed wait leaves this
 * rank's NCCL sequence short of its peers': the communicator is aborted (later averages are
 * staged) rather than used for all-gathers that would pair with the peers' next
 * reduce-scatter. The peers' waits end at the deadline. */
static hpct_status_t give_up_nccl(hpct_ctx_t ctx, hpct_status_t s)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    if (!s || !d->avg->nccl) return s;
    hpcti_log(ctx, HPCT_LOG_WARN,
              "device averages: this rank's NCCL calls stopped short of its node peers' (%s); "
              "the NCCL communicator is aborted and later averages are staged",
              ctx->last_error);
    hpcti_nccl_abort(d->avg->nccl);
    d->avg->nccl = NULL;
    s = abandon_exchanges(ctx, s);
    if (d->avg->dev_queue) ((struct hpcti_dev_queue *)d->avg->dev_queue)->n = 0;
    return s;
}

/* After backward: in queue order, each layer's cross-node phases finished (the layers behind
 * it progressing meanwhile) and its copy back and all-gather queued; then NCCL's stream waited
 * for. Every reduce-scatter is queued by now, so every rank of the node queues the same NCCL
 * sequence. */
static hpct_status_t queue_finish(hpct_ctx_t ctx)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    struct hpcti_dev_queue *q = d->avg->dev_queue;
    hpct_status_t s = HPCT_SUCCESS;
    int dev = device_mpi(d);
    for (int i = 0; i < q->n && !s; i++) {
        struct hpcti_dq_item *it = &q->items[i];
        s = overlap_progress(ctx);
        if (!s) s = dev ? dq_finish(ctx, i) : finish_cross(ctx, i);
        float *avg = dev ? dq_shard(q, i) : d->avg->stage + it->host_off;
        if (!s)
            s = enqueued(ctx, hpcti_nccl_all_gather(d->avg->nccl, q->bufs[i], it->count, avg),
                         "ncclAllGather (per layer)");
        if (!s) it->phase = HPCTI_DQ_GATHERED;
    }
    if (s) return give_up_nccl(ctx, s); /* later all-gathers would pair with other calls */
    q->n = 0;
    return nccl_wait(ctx, "ncclAllGather (per layer)");
}
#endif

#ifdef HPCT_HAVE_NCCL
/* Whether this rank's MPI takes device pointers (hpcti_cuda_aware_choice): HPCT_CUDA_AWARE_MPI
 * decides when set, else Open MPI's MPIX_Query_cuda_support() at run time, else no. *why says
 * which. */
static hpct_status_t mpi_takes_device(hpct_ctx_t ctx, int *yes, const char **why)
{
    const char *env = hpcti_tunable_value("HPCT_CUDA_AWARE_MPI"); /* hpct_init checked it */
    int query = -1;
    *why = "this MPI has no MPIX_Query_cuda_support; HPCT_CUDA_AWARE_MPI=1 forces it";
#ifdef HPCT_HAVE_MPIX_CUDA_QUERY
    query = MPIX_Query_cuda_support();
    *why = query == 1 ? "MPIX_Query_cuda_support() = 1" : "MPIX_Query_cuda_support() = 0";
#endif
    *yes = hpcti_cuda_aware_choice(env, query);
    if (*yes == 1 && query == 0) { /* device pointers would crash inside this MPI */
        *yes = 0;
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                           "hpct_init: HPCT_CUDA_AWARE_MPI=1, but this MPI answers "
                           "MPIX_Query_cuda_support() = 0 (not CUDA-aware): passing it device "
                           "pointers would crash inside MPI; unset it or use 0");
    }
    if (env && *env) *why = *yes == 1 ? "HPCT_CUDA_AWARE_MPI=1" : "HPCT_CUDA_AWARE_MPI=0";
    if (*yes >= 0) return HPCT_SUCCESS;
    *yes = 0;
    return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                       "hpct_init: HPCT_CUDA_AWARE_MPI is '%s'; use 0 (stage device averages "
                       "through host memory) or 1 (pass device pointers to MPI)",
                       env);
}

/* In one deadline-bounded operation over all ranks (arrival tokens name a rank that never
 * came): node rank 0's unique id to the node (MPI_Ibcast), every rank's set-up verdict (the
 * node's minimum) and whether MPI takes device pointers (every rank's minimum: all or none). */
static hpct_status_t exchange_id(hpct_ctx_t ctx, unsigned char *id, int ok[2], int all_ok[2])
{
    static const char what[] = "hpct_init (NCCL unique id)";
    struct hpcti_dist *d = hpcti_dist(ctx);
    MPI_Request req[3] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    hpct_status_t s = hpcti_op_begin(ctx, what, 0, 0);
    int rc = MPI_SUCCESS;
    if (!s) rc = MPI_Iallreduce(&ok[0], &all_ok[0], 1, MPI_INT, MPI_MIN, d->node_rs, &req[0]);
    if (!s && rc == MPI_SUCCESS)
        rc = MPI_Iallreduce(&ok[1], &all_ok[1], 1, MPI_INT, MPI_MIN, d->comm, &req[1]);
    if (!s && rc == MPI_SUCCESS)
        rc = MPI_Ibcast(id, HPCTI_NCCL_ID_BYTES, MPI_BYTE, 0, d->node_rs, &req[2]);
    if (!s && rc != MPI_SUCCESS) s = hpcti_mpi_failed(ctx, rc, what);
    return s ? s : hpcti_op_end(ctx, req, 3);
}

static void log_cross_path(hpct_ctx_t ctx, int device, const char *why)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    if (d->cross_size < 2) return;
    if (device && d->avg->transport != HPCT_TRANSPORT_FP32)
        why = "grad_transport 16-bit: converted on the host";
    hpcti_log(ctx, HPCT_LOG_INFO,
              "device averages across nodes (overlapped with backward or not): %s (%s)",
              device_mpi(d) ? "CUDA-aware MPI, device pointers"
                            : "staged through pinned host memory",
              why);
}

/* Test hook HPCT_TEST_NCCL_FAIL_RANK=r (behind HPCT_TEST_HOOKS=1): NCCL's set-up fails on
 * rank r, as a failed ncclCommInitRank would (HPCT_ERR_DEVICE). */
static hpct_status_t planted_failure(hpct_ctx_t ctx)
{
    const char *v = hpcti_test_hook("HPCT_TEST_NCCL_FAIL_RANK");
    struct hpcti_dist *d = hpcti_dist(ctx);
    if (!v || atoi(v) != d->rank) return HPCT_SUCCESS;
    return hpcti_error(ctx, HPCT_ERR_DEVICE, "test hook: NCCL set-up failure planted on rank %d",
                       d->rank);
}

hpct_status_t hpcti_device_nccl_start(hpct_ctx_t ctx, hpcti_nccl_t **out)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    unsigned char id[HPCTI_NCCL_ID_BYTES] = {0};
    hpcti_nccl_t *nc = NULL;
    const char *why = "";
    int ok[2] = {0, 0}, all_ok[2] = {0, 0}; /* set up; MPI takes device pointers */
    *out = NULL;
    hpct_status_t s = queue_room(ctx, 0);
    if (!s) s = mpi_takes_device(ctx, &ok[1], &why);
    if (!s) s = planted_failure(ctx);
    if (!s) s = hpcti_nccl_open(ctx, d->local_rank, d->local_size, &nc);
    if (!s && d->local_rank == 0) s = hpcti_nccl_unique_id(nc, id);
    ok[0] = !s; /* every rank takes part, so none waits for one that gave up */
    hpct_status_t t = exchange_id(ctx, id, ok, all_ok);
    if (!s && !t && !all_ok[0])
        s = hpcti_error(ctx, HPCT_ERR_DEVICE,
                        "hpct_init: another rank of the node could not set up NCCL (seen by rank "
                        "%d, local rank %d)",
                        d->rank, d->local_rank);
    if (!s && !t) s = hpcti_nccl_join(nc, id, hpcti_now() + d->deadline_s);
    if (s || t) {
        hpcti_nccl_abort(nc);
        return s ? s : t;
    }
    ((struct hpcti_dev_queue *)d->avg->dev_queue)->device_mpi = all_ok[1];
    if (ok[1] && !all_ok[1]) why = "another rank's MPI does not take device pointers";
    log_cross_path(ctx, all_ok[1], why);
    *out = nc;
    return HPCT_SUCCESS;
}
#endif

void hpcti_device_avg_release(hpct_ctx_t ctx)
{
#ifdef HPCT_HAVE_NCCL
    struct hpcti_dist *d = hpcti_dist(ctx);
    struct hpcti_dev_queue *q = d->avg->dev_queue;
    /* A broken runtime may still have CUDA-aware receives posted into the device slots and
     * staging (abandon_exchanges; MPI is left alone then): those stay allocated to the end of
     * the process rather than be written after cudaFree. */
    if (q && q->slots && !d->broken) ctx->ops->free(ctx, q->slots);
    if (q && q->dstage && !d->broken) ctx->ops->free(ctx, q->dstage);
    if (q) free(q->items), free(q->bufs), free(q->reqs), free(q);
    d->avg->dev_queue = NULL;
#else
    (void)ctx;
#endif
}

int hpcti_device_can_overlap(hpct_ctx_t ctx)
{
#ifdef HPCT_HAVE_NCCL
    struct hpcti_dist *d = hpcti_dist(ctx);
    return d->size > 1 && hpcti_nccl_usable(d->avg->nccl);
#else
    (void)ctx;
    return 0;
#endif
}

#ifdef HPCT_HAVE_NCCL
/* CUDA-aware overlapped path: device staging of stage floats, slots [slots] and the requests of
 * layers items (each grows, never shrinks; the old buffers are idle: every operation ends with
 * its streams and requests complete, or aborts the communicator, whose release synchronises). */
static hpct_status_t device_room(hpct_ctx_t ctx, int layers, size_t stage, size_t slots)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    struct hpcti_dev_queue *q = d->avg->dev_queue;
    float *unused = NULL;
    size_t nreq = (size_t)layers * 2 * (size_t)(d->cross_size - 1);
    if (stage > q->dstage_cap) {
        if (q->dstage) ctx->ops->free(ctx, q->dstage);
        q->dstage = ctx->ops->alloc(ctx, sizeof(float) * (stage ? stage : 1));
        q->dstage_cap = q->dstage ? stage : 0;
        if (!q->dstage) return HPCT_ERR_NO_MEMORY;
    }
    if (nreq > q->reqs_cap) {
        free(q->reqs);
        q->reqs = calloc(nreq, sizeof *q->reqs);
        q->reqs_cap = q->reqs ? nreq : 0;
        if (!q->reqs) return hpcti_error(ctx, HPCT_ERR_NO_MEMORY, "%zu cross-node requests", nreq);
    }
    return device_slots(ctx, slots, &unused);
}
#endif

hpct_status_t hpcti_device_overlap_begin(hpct_ctx_t ctx, const char *name, int layers, size_t total)
{
#ifdef HPCT_HAVE_NCCL
    struct hpcti_dist *d = hpcti_dist(ctx);
    if (d->cross_size > 1 && device_mpi(d)) { /* no host reductions: MPI on device buffers */
        size_t stage = hpcti_dq_staging_bound(total, layers, d->local_size);
        hpct_status_t s = queue_room(ctx, layers);
        if (!s)
            s = device_room(ctx, layers, stage,
                            hpcti_dq_slots_bound(total, layers, d->local_size, d->cross_size));
        if (!s) s = hpcti_op_begin(ctx, name, 0, 0);
        if (!s) set_deadline(ctx);
        return s;
    }
    if (d->cross_size > 1) {
        size_t stage = hpcti_dq_staging_bound(total, layers, d->local_size);
        hpct_status_t s = queue_room(ctx, layers);
        if (!s) s = stage_room(ctx, stage); /* before any copy into it is queued */
        if (!s)
            s = hpcti_op_begin(
                ctx, name, hpcti_dq_reductions_bound(total, layers, d->local_size, HPCTI_MAX_CHUNK),
                stage);
        if (!s) set_deadline(ctx);
        return s;
    }
#endif
    (void)layers, (void)total;
    return hpcti_op_begin(ctx, name, 0, 0);
}

hpct_status_t hpcti_device_average_enqueue(hpct_ctx_t ctx, float *buf, size_t n)
{
#ifdef HPCT_HAVE_NCCL
    struct hpcti_dist *d = hpcti_dist(ctx);
    if (hpcti_device_can_overlap(ctx) && d->cross_size > 1)
        return give_up_nccl(ctx, queue_layer(ctx, buf, n));
    if (hpcti_device_can_overlap(ctx)) {
        set_deadline(ctx);
        return give_up_nccl(
            ctx, enqueued(ctx, hpcti_nccl_node_mean(d->avg->nccl, buf, n, 1.0f / (float)d->size),
                          "ncclReduceScatter + ncclAllGather (per layer, one node)"));
    }
#endif
    (void)buf, (void)n;
    return hpcti_error(ctx, HPCT_ERR_INTERNAL, "device averages cannot be queued here");
}

hpct_status_t hpcti_device_average_wait(hpct_ctx_t ctx)
{
#ifdef HPCT_HAVE_NCCL
    struct hpcti_dist *d = hpcti_dist(ctx);
    if (hpcti_device_can_overlap(ctx) && d->cross_size > 1) return queue_finish(ctx);
    if (hpcti_device_can_overlap(ctx))
        return nccl_wait(ctx, "ncclReduceScatter + ncclAllGather (per layer, one node)");
#endif
    (void)ctx;
    return HPCT_SUCCESS;
}

hpct_status_t hpcti_device_average_abandon(hpct_ctx_t ctx, hpct_status_t s)
{
#ifdef HPCT_HAVE_NCCL
    if (hpcti_device_can_overlap(ctx)) return give_up_nccl(ctx, s);
#endif
    (void)ctx;
    return s;
}

hpct_status_t hpcti_device_average_in_op(hpct_ctx_t ctx, float *buf, size_t n)
{
    if (n == 0 || hpcti_dist(ctx)->size == 1) return HPCT_SUCCESS;
#ifdef HPCT_HAVE_NCCL
    struct hpcti_dist *d = hpcti_dist(ctx);
    if (hpcti_nccl_usable(d->avg->nccl)) return nccl_average(ctx, buf, n);
#endif
    return staged_average(ctx, buf, n);
}

hpct_status_t hpcti_device_allreduce_mean(hpct_ctx_t ctx, const char *fn, float *buf, size_t n)
{
    if (ctx->ops == &hpcti_cpu_ops) return hpcti_host_allreduce_mean(ctx, fn, buf, n);
    hpct_status_t s = hpcti_op_begin(ctx, fn, hpcti_device_reductions(n), n);
    if (!s) s = hpcti_device_average_in_op(ctx, buf, n);
    return s ? s : hpcti_op_end(ctx, NULL, 0);
}
