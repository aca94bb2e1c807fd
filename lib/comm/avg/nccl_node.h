/* nccl_node.h: the node-local NCCL pieces of the hierarchical average of device buffers
 * (built only with --with-nccl, where config.h defines HPCT_HAVE_NCCL; not installed).
 * lib/comm/device_avg.c drives them inside a collective operation:
 *
 *     hpcti_nccl_open(ctx, node_rank, node_size, &nc);          // at hpct_init, then the id
 *     hpcti_nccl_join(nc, id, deadline);                         // (hpcti_device_nccl_start)
 *     hpcti_nccl_reduce_scatter(nc, buf, n, host_shard);         // enqueue
 *     hpcti_nccl_wait(nc, deadline, &timed_out);                 // host_shard holds the node sum
 *     ... cross-node phases on host_shard (MPI, reduce.c) ...
 *     hpcti_nccl_all_gather(nc, buf, n, host_shard);             // enqueue
 *     hpcti_nccl_wait(nc, deadline, &timed_out);                 // buf holds the result
 *     hpcti_nccl_destroy(nc, deadline);                          // at hpct_finalize
 *
 * The communicator is non-blocking (ncclConfig_t.blocking = 0): no call waits inside NCCL;
 * hpcti_nccl_wait polls ncclCommGetAsyncError and the stream until the deadline, then aborts
 * the communicator (ncclCommAbort) so a dead peer never hangs the job. node_comm's ranks must
 * each hold their own GPU (the device the cuda backend of ctx selected); every call makes it
 * current on the calling thread first (cudaSetDevice), so any thread may call. */
#ifndef HPCTI_NCCL_NODE_H
#define HPCTI_NCCL_NODE_H

#include "../../core/core.h"

/* An NCCL communicator over one node's ranks plus its stream and staging buffers. */
typedef struct hpcti_nccl hpcti_nccl_t;

/* Joining a node's communicator, in three steps (lib/comm/device_avg.c,
 * hpcti_device_nccl_start, carries the id between them with a deadline-bounded MPI exchange):
 * hpcti_nccl_open makes this rank's stream and event (local; on error *out is NULL);
 * node rank 0 makes the unique id with hpcti_nccl_unique_id; every rank joins with it in
 * hpcti_nccl_join (non-blocking ncclCommInitRankConfig, polled until deadline, an absolute
 * hpcti_now() time). Errors name the failing call and the node rank; after one, the caller
 * aborts the communicator. */
#define HPCTI_NCCL_ID_BYTES 128 /* NCCL_UNIQUE_ID_BYTES */
HPCTI_CHECK hpct_status_t hpcti_nccl_open(hpct_ctx_t ctx, int node_rank, int node_size,
                                          hpcti_nccl_t **out);
HPCTI_CHECK hpct_status_t hpcti_nccl_unique_id(hpcti_nccl_t *nc,
                                               unsigned char id[HPCTI_NCCL_ID_BYTES]);
HPCTI_CHECK hpct_status_t hpcti_nccl_join(hpcti_nccl_t *nc,
                                          const unsigned char id[HPCTI_NCCL_ID_BYTES],
                                          double deadline);

/* Collective over the node: ncclCommFinalize (polled until deadline, else ncclCommAbort),
 * ncclCommDestroy, then the stream and buffers; NULL is accepted. */
void hpcti_nccl_destroy(hpcti_nccl_t *nc, double deadline);

/* Local, after a timeout or a failure: ncclCommAbort, then free everything. */
void hpcti_nccl_abort(hpcti_nccl_t *nc);

/* Enqueue, ordered after the work already queued on the default stream (a CUDA event):
 * ncclReduceScatter of buf [count] (device; zero-padded to hpcti_nccl_shard(count) x node size
 * when needed) into this rank's shard, then its copy into host_shard [shard] (pinned host, or
 * device memory: cudaMemcpyDefault; NULL: none, the shard stays on the device). */
HPCTI_CHECK hpct_status_t hpcti_nccl_reduce_scatter(hpcti_nccl_t *nc, const float *buf,
                                                    size_t count, float *host_shard);

/* Enqueue: host_shard [shard] (pinned host or device) to the device shard (NULL: the device
 * shard is already the result),
 * ncclAllGather of every rank's shard into buf [count] (through the padded copy when count is
 * not a multiple of the node size). */
HPCTI_CHECK hpct_status_t hpcti_nccl_all_gather(hpcti_nccl_t *nc, float *buf, size_t count,
                                                const float *host_shard);

/* One node (no cross-node phase): enqueue ncclReduceScatter of buf [count], this rank's shard
 * times inv on the device (fp32 multiply, as the host engine scales), ncclAllGather into buf:
 * no host round trip. */
HPCTI_CHECK hpct_status_t hpcti_nccl_node_mean(hpcti_nccl_t *nc, float *buf, size_t count,
                                               float inv);

/* Wait for the enqueued work: polls ncclCommGetAsyncError and cudaStreamQuery (yielding, then
 * sleeping 50 us) until it completes (HPCT_SUCCESS), fails (HPCT_ERR_DEVICE naming NCCL's or
 * CUDA's error; the communicator is aborted) or deadline passes (*timed_out = 1,
 * HPCT_ERR_TIMEOUT, the communicator aborted: the caller names the operation). */
HPCTI_CHECK hpct_status_t hpcti_nccl_wait(hpcti_nccl_t *nc, double deadline, int *timed_out);

/* The absolute deadline (hpcti_now() seconds) of the enqueue calls that follow: an NCCL call
 * returning ncclInProgress (still connecting, say) is polled until it is enqueued, at most
 * until then (then HPCT_ERR_TIMEOUT, the communicator aborted). */
void hpcti_nccl_set_deadline(hpcti_nccl_t *nc, double deadline);

/* Stream marks, for work queued piece by piece (the overlapped average across nodes): mark i
 * is a CUDA event recorded on NCCL's stream after the work enqueued so far (i >= 0; marks are
 * created on first use and reused by later operations). hpcti_nccl_marked sets *fired when it
 * has passed, without waiting; hpcti_nccl_wait_mark waits for it as hpcti_nccl_wait waits for
 * the whole stream (polled, deadline-bounded, the communicator aborted on failure or expiry). */
HPCTI_CHECK hpct_status_t hpcti_nccl_mark(hpcti_nccl_t *nc, int i);
HPCTI_CHECK hpct_status_t hpcti_nccl_marked(hpcti_nccl_t *nc, int i, int *fired);
HPCTI_CHECK hpct_status_t hpcti_nccl_wait_mark(hpcti_nccl_t *nc, int i, double deadline,
                                               int *timed_out);

/* CUDA-aware MPI (device_avg.c): hpcti_nccl_reduce_scatter and hpcti_nccl_all_gather with
 * host_shard NULL leave the shard on the device, at hpcti_nccl_device_shard(nc) [shard];
 * hpcti_nccl_rank_sum enqueues on NCCL's stream own[i] = (sum over ranks r = 0 .. nranks - 1
 * in that order of (r == me ? own : slots + (r < me ? r : r - 1) * n)[i]) * inv, the host
 * engine's owner sum in rank order (reduce.c), fp32, the same bits. */
float *hpcti_nccl_device_shard(const hpcti_nccl_t *nc);
HPCTI_CHECK hpct_status_t hpcti_nccl_rank_sum(hpcti_nccl_t *nc, float *own, const float *slots,
                                              int nranks, int me, size_t n, float inv);
/* The same sum on a side stream (not behind the reduce-scatters queued on NCCL's stream since),
 * followed by stream mark `mark` there (hpcti_nccl_marked / hpcti_nccl_wait_mark). The caller
 * launches it only once the inputs are complete: the shard's copy (its mark fired) and slots
 * (the MPI receives completed). */
HPCTI_CHECK hpct_status_t hpcti_nccl_rank_sum_marked(hpcti_nccl_t *nc, float *own,
                                                     const float *slots, int nranks, int me,
                                                     size_t n, float inv, int mark);

/* 1 while the communicator can be used (not aborted). */
int hpcti_nccl_usable(const hpcti_nccl_t *nc);

#endif
