/* runtime.c (device double): streams as worker threads, events as positions in a stream's
 * queue, copies and fills as queued tasks, and the device queries. One device per process
 * ("cuda double"): CUDA_DOUBLE_DEVICES (default 1, at most 8) devices, each thread's current
 * device its own. A call that needs a device on a thread that never made one current makes
 * device 0 current, as CUDA does (creating a context there); with several devices that is
 * said on stderr, and with CUDA_DOUBLE_STRICT_DEVICE=1 it is a sticky error. */
#define _GNU_SOURCE
#include "double.h"

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct task {
    struct task *next;
    dd_fn fn;
    const char *what;
    int always; /* runs after a sticky error too */
    unsigned long long seq;
    unsigned char arg[DD_ARG_BYTES];
};

struct CUstream_st {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct task *head, *tail;
    unsigned long long queued, done, released; /* task numbers: last queued, run, allowed */
    int legacy;                                /* the legacy default stream: runs when released */
    int stop;
    unsigned rng;
    int id;
    struct CUstream_st *next_live;
};

struct CUevent_st {
    cudaStream_t stream; /* NULL until recorded */
    unsigned long long seq;
};

static struct CUstream_st legacy;
static struct CUstream_st *live; /* every stream, for cudaDeviceSynchronize */
static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;
static int next_id = 1;
static long max_delay_us;
static unsigned seed;

/* The task's random delay: up to max_delay_us, from the stream's own seeded sequence. */
static void delay(cudaStream_t s)
{
    if (max_delay_us <= 0) return;
    unsigned us = dd_rand(&s->rng) % (unsigned)(max_delay_us + 1);
    if (us < 20) {
        sched_yield();
        return;
    }
    struct timespec ts = {0, (long)us * 1000};
    nanosleep(&ts, NULL);
}

static void *worker(void *arg)
{
    cudaStream_t s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->stop && (!s->head || (s->legacy && s->head->seq > s->released)))
            pthread_cond_wait(&s->cv, &s->mu);
        if (!s->head) break; /* stopping with an empty queue */
        struct task *t = s->head;
        pthread_mutex_unlock(&s->mu);
        delay(s);
        if (t->always || dd_sticky() == cudaSuccess) t->fn(t->arg); /* else skipped, as on a GPU */
        pthread_mutex_lock(&s->mu);
        s->head = t->next;
        if (!s->head) s->tail = NULL;
        s->done = t->seq;
        free(t);
        pthread_cond_broadcast(&s->cv);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

static void start_stream(cudaStream_t s, int legacy_stream)
{
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    s->legacy = legacy_stream;
    pthread_mutex_lock(&live_mu);
    s->id = legacy_stream ? 0 : next_id++;
    s->next_live = live;
    live = s;
    pthread_mutex_unlock(&live_mu);
    s->rng = seed * 2654435761u + (unsigned)s->id * 40503u + 1u;
    pthread_create(&s->thread, NULL, worker, s);
}

/* The launcher's rank of this process (0 when none says): each rank's streams get their own
 * delay sequences, so ranks do not run in lock-step. */
static unsigned launcher_rank(void)
{
    static const char *vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
        if (getenv(vars[i])) return (unsigned)dd_env(vars[i], 0);
    return 0;
}

static void init_runtime(void)
{
    seed = (unsigned)dd_env("CUDA_DOUBLE_SEED", 1) * 1000003u + launcher_rank();
    max_delay_us = dd_env("CUDA_DOUBLE_MAX_DELAY_US", 200);
    start_stream(&legacy, 1);
}

cudaStream_t dd_stream(cudaStream_t s)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    dd_start();
    pthread_once(&once, init_runtime);
    return s ? s : &legacy;
}

static void enqueue(cudaStream_t s, const char *what, dd_fn fn, const void *arg, size_t bytes,
                    int always);

void dd_enqueue(cudaStream_t s, const char *what, dd_fn fn, const void *arg, size_t bytes)
{
    enqueue(s, what, fn, arg, bytes, 0);
}

void dd_enqueue_always(cudaStream_t s, const char *what, dd_fn fn, const void *arg, size_t bytes)
{
    enqueue(s, what, fn, arg, bytes, 1);
}

static void enqueue(cudaStream_t s, const char *what, dd_fn fn, const void *arg, size_t bytes,
                    int always)
{
    dd_context(what);
    s = dd_stream(s);
    if (dd_capture_take(s, what, fn, arg, bytes, always)) return; /* recorded, not run */
    struct task *t = calloc(1, sizeof *t);
    if (!t || bytes > DD_ARG_BYTES) {
        free(t);
        dd_fail(cudaErrorMemoryAllocation, "%s: cannot queue the task", what);
        return;
    }
    t->fn = fn, t->what = what, t->always = always;
    memcpy(t->arg, arg, bytes);
    pthread_mutex_lock(&s->mu);
    if (s->stop) { /* its worker is gone: the work would never run */
        pthread_mutex_unlock(&s->mu);
        free(t);
        dd_fail(cudaErrorInvalidResourceHandle, "%s on a destroyed stream", what);
        return;
    }
    t->seq = ++s->queued;
    if (s->tail)
        s->tail->next = t;
    else
        s->head = t;
    s->tail = t;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

/* Let the legacy stream run up to task number upto. */
static void release_to(unsigned long long upto)
{
    pthread_mutex_lock(&legacy.mu);
    if (upto > legacy.released) legacy.released = upto;
    pthread_cond_broadcast(&legacy.cv);
    pthread_mutex_unlock(&legacy.mu);
}

void dd_release_default(void)
{
    dd_stream(NULL);
    pthread_mutex_lock(&legacy.mu);
    unsigned long long q = legacy.queued;
    pthread_mutex_unlock(&legacy.mu);
    release_to(q);
}

/* Wait until stream s has run task number seq. */
static void wait_done(cudaStream_t s, unsigned long long seq)
{
    if (s == &legacy) release_to(seq);
    pthread_mutex_lock(&s->mu);
    while (s->done < seq) pthread_cond_wait(&s->cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
}

cudaError_t dd_drain(cudaStream_t s)
{
    s = dd_stream(s);
    pthread_mutex_lock(&s->mu);
    unsigned long long q = s->queued;
    pthread_mutex_unlock(&s->mu);
    wait_done(s, q);
    return dd_sticky();
}

/* ---- errors and device ------------------------------------------------------------------- */

const char *cudaGetErrorName(cudaError_t e)
{
    switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInitializationError: return "cudaErrorInitializationError";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorIllegalState: return "cudaErrorIllegalState";
    case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorStreamCaptureInvalidated: return "cudaErrorStreamCaptureInvalidated";
    case cudaErrorStreamCaptureWrongThread: return "cudaErrorStreamCaptureWrongThread";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    case cudaErrorIllegalAddress: return "cudaErrorIllegalAddress";
    case cudaErrorNotSupported: return "cudaErrorNotSupported";
    default: return "cudaErrorUnknown";
    }
}

const char *cudaGetErrorString(cudaError_t e)
{
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorMemoryAllocation: return "out of memory (cuda double)";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered (cuda double)";
    case cudaErrorNotReady: return "device not ready";
    default: return "error (cuda double; see its message on stderr)";
    }
}

/* A launch after a sticky error fails, as on a GPU whose context is unusable; the double
 * has no other launch errors (bad arguments surface when the task runs). */
cudaError_t cudaGetLastError(void)
{
    return dd_sticky();
}

static _Thread_local int current = -1; /* this thread's device; -1: never set */

static int devices(void)
{
    long n = dd_env("CUDA_DOUBLE_DEVICES", 1);
    return n < 1 ? 1 : n > 8 ? 8 : (int)n;
}

void dd_context(const char *call)
{
    if (current >= 0) return;
    current = 0;
    if (devices() == 1) return;
    if (dd_env("CUDA_DOUBLE_STRICT_DEVICE", 0) == 1)
        dd_fail(cudaErrorInvalidDevice,
                "%s on a thread that never made a device current: CUDA creates a context on "
                "device 0 here (CUDA_DOUBLE_STRICT_DEVICE)",
                call);
    else
        dd_report("%s on a thread that never made a device current: CUDA creates a context on "
                  "device 0 here",
                  call);
}

cudaError_t cudaGetDeviceCount(int *count)
{
    dd_stream(NULL);
    if (!count) return cudaErrorInvalidValue;
    *count = devices();
    return cudaSuccess;
}

/* Versions as CUDA numbers them (1000 major + 10 minor): a made-up 12.4 for both, so the
 * library's formatting is checked (hpct_doctor shows "CUDA driver 12.4"). */
cudaError_t cudaDriverGetVersion(int *version)
{
    if (!version) return cudaErrorInvalidValue;
    *version = 12040;
    return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *version)
{
    if (!version) return cudaErrorInvalidValue;
    *version = 12040;
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int device)
{
    dd_stream(NULL);
    if (device < 0 || device >= devices()) return cudaErrorInvalidDevice;
    current = device;
    return dd_sticky(); /* CUDA's may return an earlier asynchronous error */
}

cudaError_t cudaGetDevice(int *device)
{
    if (!device) return cudaErrorInvalidValue;
    dd_context("cudaGetDevice");
    *device = current;
    return cudaSuccess;
}

/* The "GPU" of one process; each process has its own (distinct UUIDs: pid), so ranks of one
 * node never share one. */
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device)
{
    if (!prop || device < 0 || device >= devices()) return cudaErrorInvalidDevice;
    memset(prop, 0, sizeof *prop);
    snprintf(prop->name, sizeof prop->name, "cuda double (CPU)");
    uint32_t pid = (uint32_t)getpid();
    memcpy(prop->uuid.bytes, "hpctdbl", 7);
    memcpy(prop->uuid.bytes + 8, &pid, sizeof pid);
    prop->uuid.bytes[12] = (char)device;
    prop->totalGlobalMem = (size_t)1 << 34;
    prop->major = 9, prop->minor = 0, prop->multiProcessorCount = 1;
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void)
{
    cudaError_t f = dd_capture_forbids("cudaDeviceSynchronize");
    if (f) return f;
    dd_stream(NULL);
    dd_context("cudaDeviceSynchronize");
    pthread_mutex_lock(&live_mu); /* streams are never freed: the list only grows */
    cudaStream_t first = live;
    pthread_mutex_unlock(&live_mu);
    for (cudaStream_t s = first; s; s = s->next_live) dd_drain(s);
    return dd_sticky();
}

/* ---- streams and events ------------------------------------------------------------------- */

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *out, unsigned flags)
{
    dd_stream(NULL);
    if (!out) return cudaErrorInvalidValue;
    if (!(flags & cudaStreamNonBlocking)) {
        dd_report("cudaStreamCreateWithFlags: blocking streams are not modelled by the double "
                  "(the library creates none)");
        return cudaErrorNotSupported;
    }
    cudaStream_t s = calloc(1, sizeof *s);
    if (!s) return cudaErrorMemoryAllocation;
    start_stream(s, 0);
    *out = s;
    return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t s)
{
    if (!s || s == &legacy) return cudaErrorInvalidResourceHandle;
    /* Returns at once, as CUDA's does: the worker runs what is queued, then ends. The stream
     * is never freed, so an event recorded on it stays valid, and cudaDeviceSynchronize still
     * waits for its queue. */
    pthread_mutex_lock(&s->mu);
    s->stop = 1;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_detach(s->thread);
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
    cudaError_t f = dd_capture_forbids("cudaStreamSynchronize");
    return f ? f : dd_drain(s);
}

/* Not ready while tasks are queued; a query lets the legacy stream run (as the GPU would,
 * eventually), but answers before it has. */
cudaError_t cudaStreamQuery(cudaStream_t s)
{
    cudaError_t f = dd_capture_forbids("cudaStreamQuery");
    if (f) return f;
    s = dd_stream(s);
    if (s == &legacy) dd_release_default();
    pthread_mutex_lock(&s->mu);
    int busy = s->done < s->queued;
    pthread_mutex_unlock(&s->mu);
    cudaError_t e = dd_sticky();
    return e ? e : busy ? cudaErrorNotReady : cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags)
{
    (void)flags;
    if (!e) return cudaErrorInvalidValue;
    *e = calloc(1, sizeof **e);
    return *e ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaEventDestroy(cudaEvent_t e)
{
    if (!e) return cudaErrorInvalidResourceHandle;
    free(e);
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
    if (!e) return cudaErrorInvalidResourceHandle;
    s = dd_stream(s);
    if (dd_capturing(s)) { /* a graph node in CUDA; the double records single streams only */
        dd_capture_invalidate(s, "cudaEventRecord on a captured stream (not modelled)");
        return cudaErrorStreamCaptureUnsupported;
    }
    pthread_mutex_lock(&s->mu);
    e->stream = s, e->seq = s->queued;
    pthread_mutex_unlock(&s->mu);
    return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t e)
{
    cudaError_t f = dd_capture_forbids("cudaEventQuery");
    if (f) return f;
    if (!e) return cudaErrorInvalidResourceHandle;
    if (!e->stream) return cudaSuccess; /* never recorded: complete, as CUDA says */
    if (e->stream == &legacy) release_to(e->seq);
    pthread_mutex_lock(&e->stream->mu);
    int fired = e->stream->done >= e->seq;
    pthread_mutex_unlock(&e->stream->mu);
    cudaError_t err = dd_sticky();
    return err ? err : fired ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaEventSynchronize(cudaEvent_t e)
{
    cudaError_t f = dd_capture_forbids("cudaEventSynchronize");
    if (f) return f;
    if (!e) return cudaErrorInvalidResourceHandle;
    if (e->stream) wait_done(e->stream, e->seq);
    return dd_sticky();
}

struct wait_arg {
    cudaStream_t on;
    unsigned long long seq;
};

static void wait_task(void *p)
{
    struct wait_arg *a = p;
    wait_done(a->on, a->seq);
}

/* Later work on s waits for e's position in its stream; an event of the legacy stream lets
 * that stream run up to it (the wait forces it). */
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags)
{
    (void)flags;
    if (!e) return cudaErrorInvalidResourceHandle;
    if (dd_capturing(dd_stream(s))) {
        dd_capture_invalidate(dd_stream(s), "cudaStreamWaitEvent on a captured stream (not "
                                            "modelled)");
        return cudaErrorStreamCaptureUnsupported;
    }
    if (!e->stream) return cudaSuccess;
    struct wait_arg a = {e->stream, e->seq};
    if (e->stream == &legacy) release_to(e->seq);
    dd_enqueue(s, "cudaStreamWaitEvent", wait_task, &a, sizeof a);
    return cudaSuccess;
}

/* ---- copies and fills --------------------------------------------------------------------- */

struct copy_arg {
    void *dst;
    const void *src;
    size_t bytes;
    int value;  /* fills */
    void *snap; /* a pageable source's bytes as they were at the call (freed by the task) */
};

/* Where a copy's end p really is: device memory through its alias, else p itself (pinned
 * memory checked against its allocation). */
static void *view(const void *p, size_t bytes, const char *what)
{
    int kind = dd_kind(p);
    if (kind == 1) return dd_dev(p, bytes, what);
    return kind == 2 && !dd_pinned_fits(p, bytes) ? NULL : (void *)p;
}

static void copy_task(void *p)
{
    struct copy_arg *a = p;
    void *d = view(a->dst, a->bytes, "cudaMemcpy destination");
    const void *s = a->snap ? a->snap : view(a->src, a->bytes, "cudaMemcpy source");
    if (d && s) memmove(d, s, a->bytes);
    free(a->snap);
}

static void fill_task(void *p)
{
    struct copy_arg *a = p;
    void *d = dd_dev(a->dst, a->bytes, "cudaMemset");
    if (d) memset(d, a->value, a->bytes);
}

/* The kind a copy claims against what its pointers are. */
static cudaError_t check_kind(const void *dst, const void *src, enum cudaMemcpyKind kind,
                              const char *call)
{
    int dd = dd_kind(dst) == 1, sd = dd_kind(src) == 1;
    int want_dd = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
    int want_sd = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
    if (kind == cudaMemcpyDefault || (dd == want_dd && sd == want_sd)) return cudaSuccess;
    dd_report("%s: kind %d but the destination is %s and the source %s", call, (int)kind,
              dd ? "device" : "host", sd ? "device" : "host");
    return cudaErrorInvalidValue;
}

/* Queue the copy on s. CUDA's rules for pageable host memory (kind 0): to the device, the
 * source is staged at the call (taken now); from the device, the call returns once the copy
 * is done. *waits = 1 when the caller must drain s (device to pageable host). */
static cudaError_t queue_copy(void *dst, const void *src, size_t bytes, cudaStream_t s, int *waits)
{
    int dk = dd_kind(dst), sk = dd_kind(src);
    struct copy_arg a = {dst, src, bytes, 0, NULL};
    *waits = dk == 0 && sk == 1;
    if (sk == 0 && dk == 1) {
        a.snap = malloc(bytes);
        if (!a.snap) return cudaErrorMemoryAllocation;
        memcpy(a.snap, src, bytes);
    }
    dd_enqueue(s, "cudaMemcpy", copy_task, &a, sizeof a);
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind,
                            cudaStream_t s)
{
    cudaError_t e = check_kind(dst, src, kind, "cudaMemcpyAsync");
    int waits = 0;
    if (!e && bytes && dd_capturing(dd_stream(s)) && (dd_kind(dst) == 0 || dd_kind(src) == 0)) {
        /* a graph's copy reads its host memory at each replay: pinned memory only */
        dd_capture_invalidate(dd_stream(s), "cudaMemcpyAsync of pageable host memory");
        return cudaErrorStreamCaptureUnsupported;
    }
    if (!e && bytes) e = queue_copy(dst, src, bytes, s, &waits);
    if (!e && waits) e = dd_drain(s);
    return e ? e : dd_sticky();
}

/* On the legacy stream, after its earlier work. Returns at once device to device, and from
 * pageable host memory once the source is staged; otherwise once the copy is done (CUDA's
 * "API synchronization behavior"). */
cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind)
{
    cudaError_t e = dd_capture_forbids("cudaMemcpy");
    if (e) return e;
    e = check_kind(dst, src, kind, "cudaMemcpy");
    int waits = 0, dk = dd_kind(dst), sk = dd_kind(src);
    if (e || !bytes) return e ? e : dd_sticky();
    if ((e = queue_copy(dst, src, bytes, NULL, &waits))) return e;
    int async = (dk == 1 && sk == 1) || (dk == 1 && sk == 0);
    return async ? dd_sticky() : dd_drain(NULL);
}

cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t s)
{
    if (!bytes) return cudaSuccess;
    if (dd_kind(p) != 1) {
        dd_report("cudaMemset: %p is not device memory", p);
        return cudaErrorInvalidValue;
    }
    struct copy_arg a = {p, NULL, bytes, value, NULL};
    dd_enqueue(s, "cudaMemset", fill_task, &a, sizeof a);
    return dd_sticky();
}

/* Asynchronous for device memory, as CUDA's: the caller must synchronise before relying on
 * it. */
cudaError_t cudaMemset(void *p, int value, size_t bytes)
{
    return cudaMemsetAsync(p, value, bytes, NULL);
}
