/* graph.c (device double): stream capture and CUDA graphs. While a stream is captured, the work
 * queued on it is recorded instead of run (each task with its arguments as they were at the
 * call); an instantiated graph, launched on a stream, queues those tasks there in order, so a
 * replay reads device and pinned memory as it is when it runs, with the pointers and scalars of
 * the capture, as a GPU does. Single-stream captures only (what libhpctrain records): an event
 * recorded or waited for on a captured stream invalidates the capture, as does, stricter than
 * CUDA, work the capturing thread queues on another stream (CUDA would run it at once, outside
 * the graph: a step that silently loses it). The calls CUDA forbids on a capturing thread
 * (synchronisations, cudaMalloc and cudaFree, synchronous copies) invalidate the capture and
 * fail with cudaErrorStreamCaptureUnsupported. */
#include "double.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct step {
    struct step *next;
    dd_fn fn;
    const char *what;
    int always;
    unsigned char arg[DD_ARG_BYTES];
};

/* A capture in progress, and what it made. */
struct CUgraph_st {
    struct step *head, *tail;
    size_t steps;
    cudaStream_t stream; /* the captured stream while capturing */
    int invalid;         /* why: said on stderr when it happened */
    struct CUgraph_st *next_live;
};

struct CUgraphExec_st {
    struct step *head;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct CUgraph_st *live;               /* captures in progress */
static _Thread_local struct CUgraph_st *mine; /* the one this thread began */

/* The capture of stream s, or NULL; called with mu held. */
static struct CUgraph_st *capture_of(cudaStream_t s)
{
    for (struct CUgraph_st *g = live; g; g = g->next_live)
        if (g->stream == s) return g;
    return NULL;
}

static void invalidate(struct CUgraph_st *g, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void invalidate(struct CUgraph_st *g, const char *fmt, ...)
{
    char why[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    g->invalid = 1;
    dd_report("stream capture invalidated: %s", why);
}

int dd_capturing(cudaStream_t s)
{
    pthread_mutex_lock(&mu);
    int on = capture_of(s) != NULL;
    pthread_mutex_unlock(&mu);
    return on;
}

void dd_capture_invalidate(cudaStream_t s, const char *why)
{
    pthread_mutex_lock(&mu);
    struct CUgraph_st *g = capture_of(s);
    if (g) invalidate(g, "%s", why);
    pthread_mutex_unlock(&mu);
}

int dd_capture_take(cudaStream_t s, const char *what, dd_fn fn, const void *arg, size_t bytes,
                    int always)
{
    pthread_mutex_lock(&mu);
    struct CUgraph_st *g = capture_of(s);
    if (!g) {
        if (mine && !mine->invalid)
            invalidate(mine, "%s queued on another stream by the thread that captures", what);
        pthread_mutex_unlock(&mu);
        return 0;
    }
    struct step *st = calloc(1, sizeof *st);
    if (!st || bytes > DD_ARG_BYTES) {
        free(st);
        invalidate(g, "%s: cannot record the task", what);
    } else {
        st->fn = fn, st->what = what, st->always = always;
        memcpy(st->arg, arg, bytes);
        if (g->tail)
            g->tail->next = st;
        else
            g->head = st;
        g->tail = st;
        g->steps++;
    }
    pthread_mutex_unlock(&mu);
    return 1;
}

cudaError_t dd_capture_forbids(const char *call)
{
    if (!mine) return cudaSuccess;
    pthread_mutex_lock(&mu);
    invalidate(mine, "%s on the capturing thread", call);
    pthread_mutex_unlock(&mu);
    return cudaErrorStreamCaptureUnsupported;
}

static void free_steps(struct step *st)
{
    while (st) {
        struct step *next = st->next;
        free(st);
        st = next;
    }
}

cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode mode)
{
    if (!s) {
        dd_report("cudaStreamBeginCapture: the legacy default stream cannot be captured");
        return cudaErrorStreamCaptureUnsupported;
    }
    if (mode != cudaStreamCaptureModeGlobal && mode != cudaStreamCaptureModeThreadLocal &&
        mode != cudaStreamCaptureModeRelaxed)
        return cudaErrorInvalidValue;
    dd_stream(s);
    pthread_mutex_lock(&mu);
    cudaError_t e = cudaSuccess;
    if (capture_of(s) || mine) {
        dd_report("cudaStreamBeginCapture: %s",
                  mine ? "this thread captures already" : "the stream is captured already");
        e = cudaErrorIllegalState;
    } else {
        struct CUgraph_st *g = calloc(1, sizeof *g);
        if (!g) {
            e = cudaErrorMemoryAllocation;
        } else {
            g->stream = s, g->next_live = live;
            live = mine = g;
        }
    }
    pthread_mutex_unlock(&mu);
    return e;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t s, enum cudaStreamCaptureStatus *status)
{
    if (!status) return cudaErrorInvalidValue;
    pthread_mutex_lock(&mu);
    struct CUgraph_st *g = s ? capture_of(s) : NULL;
    *status = !g           ? cudaStreamCaptureStatusNone
              : g->invalid ? cudaStreamCaptureStatusInvalidated
                           : cudaStreamCaptureStatusActive;
    pthread_mutex_unlock(&mu);
    return cudaSuccess;
}

/* Ends the capture of s: *graph the recorded work, or NULL and cudaErrorStreamCaptureInvalidated
 * when something invalidated it. */
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *graph)
{
    if (!graph) return cudaErrorInvalidValue;
    *graph = NULL;
    pthread_mutex_lock(&mu);
    struct CUgraph_st *g = capture_of(s);
    if (!g || g != mine) {
        pthread_mutex_unlock(&mu);
        dd_report("cudaStreamEndCapture: %s",
                  g ? "not the thread that began the capture" : "the stream is not captured");
        return g ? cudaErrorStreamCaptureWrongThread : cudaErrorIllegalState;
    }
    for (struct CUgraph_st **p = &live; *p; p = &(*p)->next_live)
        if (*p == g) {
            *p = g->next_live;
            break;
        }
    mine = NULL;
    g->stream = NULL, g->next_live = NULL;
    pthread_mutex_unlock(&mu);
    if (g->invalid) {
        cudaGraphDestroy(g);
        return cudaErrorStreamCaptureInvalidated;
    }
    *graph = g;
    return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t g)
{
    if (!g) return cudaErrorInvalidValue;
    free_steps(g->head);
    free(g);
    return cudaSuccess;
}

/* The executable graph: its own copy of the recorded steps. */
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t g, unsigned long long flags)
{
    if (!exec || !g || flags) return cudaErrorInvalidValue;
    struct CUgraphExec_st *x = calloc(1, sizeof *x);
    if (!x) return cudaErrorMemoryAllocation;
    struct step **tail = &x->head;
    for (struct step *st = g->head; st; st = st->next) {
        struct step *c = malloc(sizeof *c);
        if (!c) {
            cudaGraphExecDestroy(x);
            return cudaErrorMemoryAllocation;
        }
        *c = *st;
        c->next = NULL;
        *tail = c;
        tail = &c->next;
    }
    *exec = x;
    return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t x)
{
    if (!x) return cudaErrorInvalidValue;
    free_steps(x->head);
    free(x);
    return cudaSuccess;
}

/* The graph's work queued on s in the order it was captured. */
cudaError_t cudaGraphLaunch(cudaGraphExec_t x, cudaStream_t s)
{
    if (!x) return cudaErrorInvalidResourceHandle;
    cudaError_t e = dd_sticky();
    if (e) return e;
    for (struct step *st = x->head; st; st = st->next)
        if (st->always)
            dd_enqueue_always(s, st->what, st->fn, st->arg, sizeof st->arg);
        else
            dd_enqueue(s, st->what, st->fn, st->arg, sizeof st->arg);
    return dd_sticky();
}
