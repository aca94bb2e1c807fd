/* nccl_node.c: a non-blocking NCCL communicator over a node's ranks and the node-local
 * halves of the hierarchical average of device buffers (reduce-scatter into a pinned host
 * shard, all-gather from it), every wait bounded by a deadline. */
#include "config.h"
#include "nccl_node.h"
#include "../../device/ops.h"
#include "../../../kernels/kernels.h"

#include <cuda_runtime.h>
#include <limits.h>
#include <stddef.h>
/* The NCCL library's header; it declares f() prototypes. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct hpcti_nccl {
    hpct_ctx_t ctx;
    int node_rank, node_size;
    int device;          /* the backend's CUDA device, made current by every entry (any thread) */
    ncclComm_t comm;     /* non-blocking; NULL once aborted */
    cudaStream_t stream; /* NCCL's stream, ordered after the default stream by ready */
    cudaStream_t side;  /* the overlapped CUDA-aware cross-node sums (hpcti_nccl_rank_sum_marked) */
    cudaEvent_t ready;  /* recorded on the default stream before each reduce-scatter */
    float *padded;      /* [padded_cap * node_size] device, made when count is not a multiple */
    float *shard;       /* [shard_cap] device */
    size_t shard_cap;   /* elements shard holds */
    size_t padded_cap;  /* shard elements padded holds per node rank (0: none yet) */
    double deadline;    /* of the enqueue calls (hpcti_nccl_set_deadline) */
    cudaEvent_t *marks; /* [nmarks] hpcti_nccl_mark's events on the stream */
    int nmarks;
};

static hpct_status_t nccl_fail(hpcti_nccl_t *nc, const char *what, ncclResult_t r)
{
    const char *last = ncclGetLastError(nc->comm); /* NULL comm: this thread's last error */
    return hpcti_error(nc->ctx, HPCT_ERR_DEVICE, "nccl: %s on node rank %d of %d failed: %s%s%s",
                       what, nc->node_rank, nc->node_size, ncclGetErrorString(r),
                       last && *last ? ": " : "", last ? last : "");
}

static hpct_status_t cuda_fail(hpcti_nccl_t *nc, const char *what, cudaError_t e)
{
    return hpcti_error(nc->ctx, HPCT_ERR_DEVICE, "nccl: %s on node rank %d of %d failed: %s", what,
                       nc->node_rank, nc->node_size, cudaGetErrorString(e));
}

/* Polite polling: yield the core for the first 50 ms of a wait, then sleep 50 us. */
static void backoff(double waited)
{
    if (waited < 0.05) {
        sched_yield();
        return;
    }
    struct timespec ts = {0, 50000};
    nanosleep(&ts, NULL);
}

void hpcti_nccl_set_deadline(hpcti_nccl_t *nc, double deadline)
{
    nc->deadline = deadline;
}

int hpcti_nccl_usable(const hpcti_nccl_t *nc)
{
    return nc && nc->comm;
}

/* The deadline passed during what: abort the communicator, *timed_out = 1. */
static hpct_status_t expire(hpcti_nccl_t *nc, const char *what, int *timed_out)
{
    ncclCommAbort(nc->comm);
    nc->comm = NULL;
    *timed_out = 1;
    return hpcti_error(nc->ctx, HPCT_ERR_TIMEOUT,
                       "nccl: %s did not complete on node rank %d of %d before the deadline; the "
                       "NCCL communicator was aborted",
                       what, nc->node_rank, nc->node_size);
}

/* Poll the communicator's state until it leaves ncclInProgress or deadline passes (then
 * *timed_out = 1 and the communicator is aborted). */
static hpct_status_t settle(hpcti_nccl_t *nc, const char *what, double deadline, int *timed_out)
{
    double t0 = hpcti_now();
    for (;;) {
        ncclResult_t state = ncclInProgress;
        ncclResult_t r = ncclCommGetAsyncError(nc->comm, &state);
        if (r != ncclSuccess) state = r;
        if (state == ncclSuccess) return HPCT_SUCCESS;
        if (state != ncclInProgress) {
            hpct_status_t s = nccl_fail(nc, what, state);
            ncclCommAbort(nc->comm);
            nc->comm = NULL;
            return s;
        }
        if (hpcti_now() > deadline) return expire(nc, what, timed_out);
        backoff(hpcti_now() - t0);
    }
}

/* Make the communicator's device current on the calling thread: the library may be called from
 * any thread, and streams, events, kernels and NCCL's calls belong to that device. */
static hpct_status_t on_device(hpcti_nccl_t *nc)
{
    cudaError_t e = cudaSetDevice(nc->device);
    return e == cudaSuccess ? HPCT_SUCCESS : cuda_fail(nc, "cudaSetDevice", e);
}

/* The device (the backend's: its sync binds the thread to it), the stream and the ordering
 * event. */
static hpct_status_t local_setup(hpcti_nccl_t *nc)
{
    hpct_status_t s = nc->ctx->ops->sync(nc->ctx);
    if (s) return s;
    cudaError_t e = cudaGetDevice(&nc->device);
    if (e != cudaSuccess) return cuda_fail(nc, "cudaGetDevice", e);
    e = cudaStreamCreateWithFlags(&nc->stream, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
        nc->stream = NULL;
        return cuda_fail(nc, "cudaStreamCreateWithFlags", e);
    }
    if ((e = cudaEventCreateWithFlags(&nc->ready, cudaEventDisableTiming)) != cudaSuccess) {
        nc->ready = NULL;
        return cuda_fail(nc, "cudaEventCreateWithFlags", e);
    }
    if ((e = cudaStreamCreateWithFlags(&nc->side, cudaStreamNonBlocking)) != cudaSuccess) {
        nc->side = NULL;
        return cuda_fail(nc, "cudaStreamCreateWithFlags (side stream)", e);
    }
    return HPCT_SUCCESS;
}

hpct_status_t hpcti_nccl_open(hpct_ctx_t ctx, int node_rank, int node_size, hpcti_nccl_t **out)
{
    *out = NULL;
    if (ctx->ops != &hpcti_cuda_ops)
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                           "hpcti_nccl_open: the context uses the %s backend, NCCL needs cuda",
                           ctx->ops->name);
    hpcti_nccl_t *nc = hpcti_calloc(ctx, 1, sizeof *nc, "an NCCL communicator");
    if (!nc) return HPCT_ERR_NO_MEMORY;
    nc->ctx = ctx;
    nc->node_rank = node_rank, nc->node_size = node_size;
    nc->device = -1; /* until local_setup learns it */
    hpct_status_t s = local_setup(nc);
    if (s) {
        hpcti_nccl_abort(nc);
        return s;
    }
    *out = nc;
    return HPCT_SUCCESS;
}

hpct_status_t hpcti_nccl_unique_id(hpcti_nccl_t *nc, unsigned char id[HPCTI_NCCL_ID_BYTES])
{
    ncclUniqueId uid;
    ncclResult_t r = ncclGetUniqueId(&uid);
    if (r != ncclSuccess) return nccl_fail(nc, "ncclGetUniqueId", r);
    memcpy(id, &uid, sizeof uid);
    return HPCT_SUCCESS;
}

hpct_status_t hpcti_nccl_join(hpcti_nccl_t *nc, const unsigned char id[HPCTI_NCCL_ID_BYTES],
                              double deadline)
{
    ncclUniqueId uid;
    memcpy(&uid, id, sizeof uid);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0; /* every wait is ours, bounded by the deadline */
    nc->deadline = deadline;
    hpct_status_t s = on_device(nc); /* NCCL binds the communicator to the current device */
    if (s) return s;
    nc->comm = NULL;
    ncclResult_t r = ncclCommInitRankConfig(&nc->comm, nc->node_size, uid, nc->node_rank, &config);
    if (r != ncclSuccess && r != ncclInProgress) { /* named first, then any handle it left */
        s = nccl_fail(nc, "ncclCommInitRankConfig", r);
        if (nc->comm) ncclCommAbort(nc->comm);
        nc->comm = NULL;
        return s;
    }
    int timed_out = 0;
    s = settle(nc, "ncclCommInitRankConfig", deadline, &timed_out);
    if (!s)
        hpcti_log(nc->ctx, HPCT_LOG_INFO, "nccl: node rank %d of %d joined", nc->node_rank,
                  nc->node_size);
    return s;
}

/* The communicator's device made current for teardown, whatever cudaSetDevice says; none
 * where local_setup failed before it learnt the device. */
static void bind_for_teardown(hpcti_nccl_t *nc)
{
    if (nc->device >= 0) (void)cudaSetDevice(nc->device);
}

static void free_buffers(hpcti_nccl_t *nc)
{
    cudaFree(nc->padded);
    cudaFree(nc->shard);
    nc->padded = nc->shard = NULL;
    nc->shard_cap = nc->padded_cap = 0;
}

/* Stream, events and buffers (the NCCL communicator is gone). */
static void release(hpcti_nccl_t *nc)
{
    bind_for_teardown(nc);
    if (nc->stream) cudaStreamSynchronize(nc->stream);
    if (nc->side) cudaStreamSynchronize(nc->side);
    free_buffers(nc);
    if (nc->ready) cudaEventDestroy(nc->ready);
    for (int i = 0; i < nc->nmarks; i++) cudaEventDestroy(nc->marks[i]);
    free(nc->marks);
    if (nc->side) cudaStreamDestroy(nc->side);
    if (nc->stream) cudaStreamDestroy(nc->stream);
    free(nc);
}

void hpcti_nccl_abort(hpcti_nccl_t *nc)
{
    if (!nc) return;
    bind_for_teardown(nc);
    if (nc->comm) ncclCommAbort(nc->comm);
    nc->comm = NULL;
    release(nc); /* synchronises the stream: the aborted kernels return */
}

void hpcti_nccl_destroy(hpcti_nccl_t *nc, double deadline)
{
    if (!nc) return;
    bind_for_teardown(nc);
    if (nc->comm) { /* flush, bounded; a peer that never finalizes gets the abort */
        int timed_out = 0;
        ncclResult_t r = ncclCommFinalize(nc->comm);
        if ((r == ncclSuccess || r == ncclInProgress) &&
            settle(nc, "ncclCommFinalize", deadline, &timed_out) == HPCT_SUCCESS)
            ncclCommDestroy(nc->comm);
        else if (nc->comm)
            ncclCommAbort(nc->comm);
        nc->comm = NULL;
    }
    release(nc);
}

/* Make the device buffers hold shard elements per rank, and the padded copy too when padded
 * (grows, never shrinks; a buffer whose count is a multiple of the node size needs none). The
 * old buffers are idle once the stream's queued work is done: a wait bounded by the enqueue
 * deadline (the queued collectives need their peers, so cudaStreamSynchronize could wait for
 * ever). */
static hpct_status_t ensure_buffers(hpcti_nccl_t *nc, size_t shard, int padded)
{
    size_t want_shard = shard > nc->shard_cap ? shard : nc->shard_cap;
    size_t want_padded = padded && shard > nc->padded_cap ? shard : nc->padded_cap;
    if (want_shard == nc->shard_cap && want_padded == nc->padded_cap) return HPCT_SUCCESS;
    int timed_out = 0;
    hpct_status_t s = nc->shard_cap ? hpcti_nccl_wait(nc, nc->deadline, &timed_out) : HPCT_SUCCESS;
    if (s) return s;
    free_buffers(nc);
    cudaError_t e = cudaMalloc((void **)&nc->shard, sizeof(float) * want_shard);
    if (e == cudaSuccess && want_padded)
        e = cudaMalloc((void **)&nc->padded, sizeof(float) * want_padded * (size_t)nc->node_size);
    if (e != cudaSuccess) {
        free_buffers(nc);
        return hpcti_error(
            nc->ctx, HPCT_ERR_NO_MEMORY,
            "nccl: cannot allocate device staging for %zu floats per shard on node rank %d: %s",
            want_shard, nc->node_rank, cudaGetErrorString(e));
    }
    nc->shard_cap = want_shard, nc->padded_cap = want_padded;
    return HPCT_SUCCESS;
}

/* A started NCCL call: ncclSuccess goes on; ncclInProgress (a non-blocking communicator still
 * enqueueing, e.g. connecting at its first collective) is polled until it is enqueued, as NCCL
 * requires before the next call, at most until the deadline; others fail. */
static hpct_status_t started(hpcti_nccl_t *nc, const char *call, ncclResult_t r)
{
    int timed_out = 0;
    if (r == ncclInProgress) return settle(nc, call, nc->deadline, &timed_out);
    return r == ncclSuccess ? HPCT_SUCCESS : nccl_fail(nc, call, r);
}

static hpct_status_t check_usable(hpcti_nccl_t *nc, size_t count)
{
    hpct_status_t s = on_device(nc);
    if (s) return s;
    if (!nc->comm)
        return hpcti_error(nc->ctx, HPCT_ERR_STATE,
                           "nccl: the communicator of node rank %d was aborted after an error",
                           nc->node_rank);
    if (hpcti_nccl_shard(count, nc->node_size) > (size_t)INT_MAX)
        return hpcti_error(nc->ctx, HPCT_ERR_INVALID_ARG,
                           "nccl: %zu floats / node size %d exceeds INT_MAX per shard", count,
                           nc->node_size);
    return ensure_buffers(nc, hpcti_nccl_shard(count, nc->node_size),
                          hpcti_nccl_padding(count, nc->node_size) != 0);
}

/* Enqueue: NCCL's stream after the default stream's kernels (a CUDA event), the padded copy
 * when count is not a multiple of the node size, ncclReduceScatter into nc->shard. */
static hpct_status_t enqueue_reduce_scatter(hpcti_nccl_t *nc, const float *buf, size_t count)
{
    size_t shard = hpcti_nccl_shard(count, nc->node_size);
    size_t padded = hpcti_nccl_padding(count, nc->node_size);
    cudaError_t e = cudaEventRecord(nc->ready, 0);
    if (e == cudaSuccess) e = cudaStreamWaitEvent(nc->stream, nc->ready, 0);
    if (e != cudaSuccess) return cuda_fail(nc, "ordering NCCL after the default stream", e);
    const float *full = buf; /* [shard * node_size]: buf itself, or a zero-padded copy */
    if (padded) {
        e = cudaMemcpyAsync(nc->padded, buf, sizeof(float) * count, cudaMemcpyDeviceToDevice,
                            nc->stream);
        if (e == cudaSuccess)
            e = cudaMemsetAsync(nc->padded + count, 0, sizeof(float) * (padded - count),
                                nc->stream);
        if (e != cudaSuccess) return cuda_fail(nc, "padding the buffer (cudaMemcpyAsync)", e);
        full = nc->padded;
    }
    return started(
        nc, "ncclReduceScatter",
        ncclReduceScatter(full, nc->shard, shard, ncclFloat, ncclSum, nc->comm, nc->stream));
}

/* Enqueue: ncclAllGather of nc->shard into buf [count] (through the padded copy). */
static hpct_status_t enqueue_all_gather(hpcti_nccl_t *nc, float *buf, size_t count)
{
    size_t shard = hpcti_nccl_shard(count, nc->node_size);
    size_t padded = hpcti_nccl_padding(count, nc->node_size);
    float *full = padded ? nc->padded : buf;
    hpct_status_t s =
        started(nc, "ncclAllGather",
                ncclAllGather(nc->shard, full, shard, ncclFloat, nc->comm, nc->stream));
    if (s || !padded) return s;
    cudaError_t e =
        cudaMemcpyAsync(buf, full, sizeof(float) * count, cudaMemcpyDeviceToDevice, nc->stream);
    return e == cudaSuccess ? HPCT_SUCCESS : cuda_fail(nc, "cudaMemcpyAsync of the result", e);
}

hpct_status_t hpcti_nccl_reduce_scatter(hpcti_nccl_t *nc, const float *buf, size_t count,
                                        float *host_shard)
{
    hpct_status_t s = check_usable(nc, count);
    if (!s && count) s = enqueue_reduce_scatter(nc, buf, count);
    if (s || count == 0 || !host_shard) return s;
    size_t shard = hpcti_nccl_shard(count, nc->node_size);
    cudaError_t e = cudaMemcpyAsync(host_shard, nc->shard, sizeof(float) * shard, cudaMemcpyDefault,
                                    nc->stream); /* pinned host or device */
    return e == cudaSuccess ? HPCT_SUCCESS : cuda_fail(nc, "cudaMemcpyAsync of the shard", e);
}

hpct_status_t hpcti_nccl_node_mean(hpcti_nccl_t *nc, float *buf, size_t count, float inv)
{
    hpct_status_t s = check_usable(nc, count);
    if (!s && count) s = enqueue_reduce_scatter(nc, buf, count);
    if (s || count == 0) return s;
    size_t shard = hpcti_nccl_shard(count, nc->node_size);
    int err = hpcti_k_scale(nc->stream, nc->shard, inv, shard);
    if (err != cudaSuccess) return cuda_fail(nc, "scale_kernel launch", (cudaError_t)err);
    return enqueue_all_gather(nc, buf, count);
}

hpct_status_t hpcti_nccl_all_gather(hpcti_nccl_t *nc, float *buf, size_t count,
                                    const float *host_shard)
{
    hpct_status_t s = check_usable(nc, count);
    if (s || count == 0) return s;
    size_t shard = hpcti_nccl_shard(count, nc->node_size);
    cudaError_t e = host_shard ? cudaMemcpyAsync(nc->shard, host_shard, sizeof(float) * shard,
                                                 cudaMemcpyDefault, nc->stream) /* host or device */
                               : cudaSuccess;
    if (e != cudaSuccess) return cuda_fail(nc, "cudaMemcpyAsync of the averaged shard", e);
    return enqueue_all_gather(nc, buf, count);
}

hpct_status_t hpcti_nccl_wait(hpcti_nccl_t *nc, double deadline, int *timed_out)
{
    *timed_out = 0;
    if (!nc->comm) return check_usable(nc, 0);
    hpct_status_t s = on_device(nc);
    if (!s) s = settle(nc, "enqueueing an NCCL collective", deadline, timed_out);
    double t0 = hpcti_now();
    while (!s) {
        cudaError_t e = cudaStreamQuery(nc->stream);
        if (e == cudaSuccess) return HPCT_SUCCESS;
        if (e != cudaErrorNotReady) return cuda_fail(nc, "the NCCL stream (cudaStreamQuery)", e);
        ncclResult_t state = ncclSuccess, r = ncclCommGetAsyncError(nc->comm, &state);
        if (r != ncclSuccess || (state != ncclSuccess && state != ncclInProgress))
            s = settle(nc, "an NCCL collective", deadline, timed_out); /* names it, aborts */
        else if (hpcti_now() > deadline)
            s = expire(nc, "an NCCL collective", timed_out);
        else
            backoff(hpcti_now() - t0);
    }
    return s;
}

/* Event i of the pool (created on first use; handles survive the array's growth). */
static hpct_status_t mark_event(hpcti_nccl_t *nc, int i, cudaEvent_t *ev)
{
    if (i >= nc->nmarks) {
        cudaEvent_t *m = realloc(nc->marks, sizeof *m * (size_t)(i + 1));
        if (!m) return hpcti_error(nc->ctx, HPCT_ERR_NO_MEMORY, "nccl: %d stream marks", i + 1);
        nc->marks = m;
        for (; nc->nmarks <= i; nc->nmarks++) {
            cudaError_t e = cudaEventCreateWithFlags(&m[nc->nmarks], cudaEventDisableTiming);
            if (e != cudaSuccess) return cuda_fail(nc, "cudaEventCreateWithFlags (stream mark)", e);
        }
    }
    *ev = nc->marks[i];
    return HPCT_SUCCESS;
}

hpct_status_t hpcti_nccl_mark(hpcti_nccl_t *nc, int i)
{
    cudaEvent_t ev = NULL;
    hpct_status_t s = i < 0 ? HPCT_ERR_INTERNAL : on_device(nc);
    if (!s) s = mark_event(nc, i, &ev);
    if (s) return s;
    cudaError_t e = cudaEventRecord(ev, nc->stream);
    return e == cudaSuccess ? HPCT_SUCCESS : cuda_fail(nc, "cudaEventRecord (stream mark)", e);
}

hpct_status_t hpcti_nccl_marked(hpcti_nccl_t *nc, int i, int *fired)
{
    *fired = 0;
    if (i < 0 || i >= nc->nmarks)
        return hpcti_error(nc->ctx, HPCT_ERR_INTERNAL, "nccl: stream mark %d was never recorded",
                           i);
    cudaError_t e = cudaEventQuery(nc->marks[i]);
    if (e == cudaSuccess) *fired = 1;
    return e == cudaSuccess || e == cudaErrorNotReady
               ? HPCT_SUCCESS
               : cuda_fail(nc, "cudaEventQuery (stream mark)", e);
}

hpct_status_t hpcti_nccl_wait_mark(hpcti_nccl_t *nc, int i, double deadline, int *timed_out)
{
    *timed_out = 0;
    if (!nc->comm) return check_usable(nc, 0);
    double t0 = hpcti_now();
    for (;;) {
        int fired = 0;
        hpct_status_t s = hpcti_nccl_marked(nc, i, &fired);
        if (s || fired) return s;
        ncclResult_t state = ncclSuccess, r = ncclCommGetAsyncError(nc->comm, &state);
        if (r != ncclSuccess || (state != ncclSuccess && state != ncclInProgress))
            return settle(nc, "an NCCL collective", deadline, timed_out); /* names it, aborts */
        if (hpcti_now() > deadline) return expire(nc, "an NCCL collective", timed_out);
        backoff(hpcti_now() - t0);
    }
}

/* The unique id travels as HPCTI_NCCL_ID_BYTES opaque bytes. */
_Static_assert(sizeof(ncclUniqueId) == HPCTI_NCCL_ID_BYTES, "ncclUniqueId is not 128 bytes");

float *hpcti_nccl_device_shard(const hpcti_nccl_t *nc)
{
    return nc->shard;
}

hpct_status_t hpcti_nccl_rank_sum(hpcti_nccl_t *nc, float *own, const float *slots, int nranks,
                                  int me, size_t n, float inv)
{
    hpct_status_t s = on_device(nc);
    if (s) return s;
    int err = hpcti_k_rank_sum(nc->stream, own, slots, nranks, me, n, inv);
    return err == cudaSuccess ? HPCT_SUCCESS
                              : cuda_fail(nc, "rank_sum_kernel launch", (cudaError_t)err);
}

hpct_status_t hpcti_nccl_rank_sum_marked(hpcti_nccl_t *nc, float *own, const float *slots,
                                         int nranks, int me, size_t n, float inv, int mark)
{
    cudaEvent_t ev = NULL;
    hpct_status_t s = mark < 0 ? HPCT_ERR_INTERNAL : on_device(nc);
    if (!s) s = mark_event(nc, mark, &ev);
    if (s) return s;
    int err = hpcti_k_rank_sum(nc->side, own, slots, nranks, me, n, inv);
    if (err != cudaSuccess)
        return cuda_fail(nc, "rank_sum_kernel launch (side stream)", (cudaError_t)err);
    cudaError_t e = cudaEventRecord(ev, nc->side);
    return e == cudaSuccess ? HPCT_SUCCESS : cuda_fail(nc, "cudaEventRecord (side stream mark)", e);
}
