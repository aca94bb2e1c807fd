/* device_avg.h: averages of buffers in the backend's memory (device_avg.c). */
#ifndef HPCTI_DEVICE_AVG_H
#define HPCTI_DEVICE_AVG_H

#include "avg.h"

/* Average buf [n] in the backend's memory as one operation named fn (device_avg.c): on cuda,
 * NCCL inside the node and MPI across (hierarchical), else staged through pinned host memory
 * and the host engine; on cpu, hpcti_host_allreduce_mean. */
HPCTI_CHECK hpct_status_t hpcti_device_allreduce_mean(hpct_ctx_t ctx, const char *fn, float *buf,
                                                      size_t n);
/* The same inside an operation already begun (room reserved: hpcti_device_reductions(n)
 * reductions and n elements); returns when buf holds the mean. */
HPCTI_CHECK hpct_status_t hpcti_device_average_in_op(hpct_ctx_t ctx, float *buf, size_t n);
/* 1 when device averages can be queued without waiting (NCCL in the node; across nodes the
 * host phase is progressed between enqueues), so backward overlaps them: open the operation
 * with hpcti_device_overlap_begin (room for layers buffers of total floats), enqueue each
 * buffer, then wait once (deadline-bounded) before hpcti_op_end. */
int hpcti_device_can_overlap(hpct_ctx_t ctx);
HPCTI_CHECK hpct_status_t hpcti_device_overlap_begin(hpct_ctx_t ctx, const char *name, int layers,
                                                     size_t total);
/* Free device_avg.c's state (hpct_finalize). */
void hpcti_device_avg_release(hpct_ctx_t ctx);
#ifdef HPCT_HAVE_NCCL
/* hpct_init, on every rank: the node's NCCL communicator (hpcti_nccl_open, node rank 0's
 * unique id and every rank's setup verdict exchanged in one deadline-bounded operation,
 * hpcti_nccl_join); on error *out is NULL and the detail is recorded. */
HPCTI_CHECK hpct_status_t hpcti_device_nccl_start(hpct_ctx_t ctx, hpcti_nccl_t **out);
#endif
HPCTI_CHECK hpct_status_t hpcti_device_average_enqueue(hpct_ctx_t ctx, float *buf, size_t n);
HPCTI_CHECK hpct_status_t hpcti_device_average_wait(hpct_ctx_t ctx);
/* Instead of the wait, where this rank stopped enqueueing early (backward failed with s): the
 * NCCL communicator, whose sequence is now short of the peers', is aborted (later averages
 * are staged); returns s. */
HPCTI_CHECK hpct_status_t hpcti_device_average_abandon(hpct_ctx_t ctx, hpct_status_t s);
int hpcti_device_reductions(size_t n);

#endif
