/* double.h: internals of the device double (t/double), a CPU-executed stand-in for the CUDA
 * runtime, cuBLAS and NCCL calls of libhpctrain, so that a tree configured --with-cuda-double
 * runs the real cuda backend and NCCL averaging code without a GPU. Test builds only.
 *
 * Memory: a device allocation is host memory mapped twice: the address handed out is mapped
 * PROT_NONE, so host code that dereferences it faults (reported with a backtrace); the double's
 * own work reaches it through the second, writable mapping (dd_dev). Pinned host memory is
 * ordinary memory, recorded so that copies know what they were given.
 * Streams: each stream is a worker thread running its queue in order, each task after a
 * seeded random delay (CUDA_DOUBLE_SEED, CUDA_DOUBLE_MAX_DELAY_US). The legacy default stream
 * runs nothing until the host forces it (a synchronisation, a blocking copy, an event query
 * or wait), so work ordered only by accident is seen out of order.
 * Errors in queued work are sticky, as on a GPU: reported once on stderr, returned by every
 * later synchronising call. */
#ifndef CUDA_DOUBLE_H
#define CUDA_DOUBLE_H

#include "include/cuda_runtime.h"

#include <stddef.h>

/* A queued task: fn(arg) on a stream's worker; arg is copied (at most DD_ARG_BYTES). */
#define DD_ARG_BYTES 160
typedef void (*dd_fn)(void *arg);
void dd_enqueue(cudaStream_t s, const char *what, dd_fn fn, const void *arg, size_t bytes);
/* The same for a task that runs even after a sticky error (it checks dd_sticky itself). */
void dd_enqueue_always(cudaStream_t s, const char *what, dd_fn fn, const void *arg, size_t bytes);

/* The stream a call names: NULL (0) is the legacy default stream. */
cudaStream_t dd_stream(cudaStream_t s);
/* Run the default stream's queued work and wait for stream s's queue to drain. */
cudaError_t dd_drain(cudaStream_t s);
/* Let the default stream run what is queued so far. */
void dd_release_default(void);

/* The writable view of [p, p + bytes) in device memory, or NULL after reporting (as a sticky
 * cudaErrorIllegalAddress) that p is not device memory of that extent; what names the user. */
void *dd_dev(const void *p, size_t bytes, const char *what);
/* 1 when p lies in a live device allocation, 2 in pinned host memory, 0 elsewhere. */
int dd_kind(const void *p);
/* Record the first asynchronous error (printed with its detail); later syncs return it. */
void dd_fail(cudaError_t e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A per-call error, as CUDA's invalid-argument errors are: said on stderr, not sticky. */
void dd_report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* 0 after reporting when [p, p + bytes) starts in pinned memory and runs past it; else 1. */
int dd_pinned_fits(const void *p, size_t bytes);
cudaError_t dd_sticky(void);
/* A call that needs a current device (call names it): device 0 if the thread has none. */
void dd_context(const char *call);
/* The double's first use: environment, fault handler. Idempotent. */
void dd_start(void);
/* Stream capture (graph.c). 1 when the task (fn, arg) queued on s was recorded into s's
 * capture instead of run; 0 to queue it (a thread that captures and queues on another stream
 * invalidates its capture). */
int dd_capture_take(cudaStream_t s, const char *what, dd_fn fn, const void *arg, size_t bytes,
                    int always);
/* A call CUDA forbids on a thread that captures (call names it): invalidates the capture and
 * returns cudaErrorStreamCaptureUnsupported; cudaSuccess on any other thread. */
cudaError_t dd_capture_forbids(const char *call);
/* 1 when stream s is being captured; dd_capture_invalidate says why its capture fails. */
int dd_capturing(cudaStream_t s);
void dd_capture_invalidate(cudaStream_t s, const char *why);
/* Seeded pseudo-random number for stream s's next delay (per-stream sequence). */
unsigned dd_rand(unsigned *state);
/* Environment integer or def. */
long dd_env(const char *name, long def);

#endif
