/* timeline.c: the opt-in per-rank timeline, in the Chrome trace event format that Perfetto and
 * chrome://tracing load: {"traceEvents":[ ... ]}. Spans are formatted as they end into the
 * buffer of the current step; the buffers form a ring (or a window of steps), so the memory
 * and the file stay bounded however long the run. The file is rewritten whole through a
 * temporary file and a rename: a kill at any instant leaves the previous complete file. */
#include "obs.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct slot {
    long step; /* -1: empty */
    char *buf;
    size_t len, cap;
};

struct hpcti_timeline {
    pthread_mutex_t mu;
    char path[1100], tmp[1110], host[64];
    int rank;
    long steps, first;  /* ring size / window length; window start (<= 0: ring) */
    struct slot *slots; /* [steps] */
    struct slot *cur;   /* the slot spans go to; NULL: not recording */
    long step;          /* current step; 0 before the first */
    double step_t0;
    long long offset_ns; /* realtime - monotonic clock, nanoseconds */
    long since_flush;
};

hpct_status_t hpcti_timeline_open(hpct_ctx_t ctx, const char *prefix, int rank, const char *host,
                                  long steps, long first)
{
    if (steps <= 0 || steps > 1000000)
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                           "timeline: the number of steps kept is %ld, must be in [1, 1000000]",
                           steps);
    struct hpcti_timeline *t = hpcti_calloc(ctx, 1, sizeof *t, "the timeline");
    if (!t) return HPCT_ERR_NO_MEMORY;
    t->slots = hpcti_calloc(ctx, (size_t)steps, sizeof *t->slots, "the timeline ring");
    if (!t->slots) {
        free(t);
        return HPCT_ERR_NO_MEMORY;
    }
    for (long i = 0; i < steps; i++) t->slots[i].step = -1;
    snprintf(t->path, sizeof t->path, "%s-rank%d.json", prefix, rank);
    snprintf(t->tmp, sizeof t->tmp, "%s.tmp", t->path);
    snprintf(t->host, sizeof t->host, "%s", host ? host : "");
    t->rank = rank, t->steps = steps, t->first = first;
    struct timespec rt, mt;
    clock_gettime(CLOCK_REALTIME, &rt);
    clock_gettime(CLOCK_MONOTONIC, &mt);
    t->offset_ns = ((long long)rt.tv_sec - (long long)mt.tv_sec) * 1000000000LL +
                   ((long long)rt.tv_nsec - (long long)mt.tv_nsec);
    FILE *f = fopen(t->path, "w"); /* fail now, naming the file, rather than at the end */
    if (!f) {
        free(t->slots);
        free(t);
        return hpcti_error(ctx, HPCT_ERR_IO, "timeline: cannot write %s", prefix);
    }
    fputs("{\"traceEvents\":[]}\n", f);
    fclose(f);
    pthread_mutex_init(&t->mu, NULL);
    ctx->timeline = t;
    return HPCT_SUCCESS;
}

static int recording(const struct hpcti_timeline *t, long step)
{
    return t->first <= 0 || (step >= t->first && step < t->first + t->steps);
}

/* Append text [n] to slot s (dropped when memory runs out: the timeline is best effort). */
static void append(struct slot *s, const char *text, size_t n)
{
    if (s->len + n > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 4096;
        while (cap < s->len + n) cap *= 2;
        char *b = realloc(s->buf, cap);
        if (!b) return;
        s->buf = b, s->cap = cap;
    }
    memcpy(s->buf + s->len, text, n);
    s->len += n;
}

/* One "X" event line into the current slot (t->mu held). */
static void event(struct hpcti_timeline *t, int tid, const char *name, const char *cat, double t0,
                  double t1, const char *args)
{
    if (!t->cur) return;
    char line[768];
    /* microseconds with 3 decimals, formatted from integer nanoseconds (cheaper than %f) */
    long long ts = t->offset_ns + (long long)(t0 * 1e9), dur = (long long)((t1 - t0) * 1e9);
    if (dur < 0) dur = 0;
    int n = snprintf(line, sizeof line,
                     "{\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"name\":\"%s\",\"cat\":\"%s\","
                     "\"ts\":%lld.%03lld,\"dur\":%lld.%03lld,\"args\":{\"step\":%ld%s%s}},\n",
                     t->rank, tid, name, cat, ts / 1000, ts % 1000, dur / 1000, dur % 1000, t->step,
                     args && args[0] ? "," : "", args ? args : "");
    if (n > 0 && (size_t)n < sizeof line) append(t->cur, line, (size_t)n);
}

void hpcti_tl_span(hpct_ctx_t ctx, int tid, const char *name, const char *cat, double t0, double t1,
                   const char *fmt, ...)
{
    struct hpcti_timeline *t = ctx->timeline;
    if (!t) return;
    char args[512] = "";
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(args, sizeof args, fmt, ap);
        va_end(ap);
    }
    pthread_mutex_lock(&t->mu);
    event(t, tid, name, cat, t0, t1, args);
    pthread_mutex_unlock(&t->mu);
}

static int by_step(const void *a, const void *b)
{
    const struct slot *x = *(struct slot *const *)a, *y = *(struct slot *const *)b;
    return (x->step > y->step) - (x->step < y->step);
}

/* Rewrite the file: metadata, the kept steps in order, then a closing metadata event (t->mu
 * held). Written to a temporary name and renamed over the file. */
static void flush(struct hpcti_timeline *t)
{
    FILE *f = fopen(t->tmp, "w");
    if (!f) return;
    fprintf(f,
            "{\"traceEvents\":[\n{\"ph\":\"M\",\"pid\":%d,\"name\":\"process_name\","
            "\"args\":{\"name\":\"rank %d (%s)\"}},\n"
            "{\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"name\":\"thread_name\","
            "\"args\":{\"name\":\"training\"}},\n"
            "{\"ph\":\"M\",\"pid\":%d,\"tid\":1,\"name\":\"thread_name\","
            "\"args\":{\"name\":\"checkpoint writer\"}},\n",
            t->rank, t->rank, t->host, t->rank, t->rank);
    struct slot **order = malloc((size_t)t->steps * sizeof *order);
    long n = 0;
    for (long i = 0; order && i < t->steps; i++)
        if (t->slots[i].step >= 0) order[n++] = &t->slots[i];
    if (order) qsort(order, (size_t)n, sizeof *order, by_step);
    for (long i = 0; i < n; i++)
        if (order[i]->len) fwrite(order[i]->buf, 1, order[i]->len, f);
    free(order);
    fprintf(f,
            "{\"ph\":\"M\",\"pid\":%d,\"name\":\"process_sort_index\","
            "\"args\":{\"sort_index\":%d}}\n],\"displayTimeUnit\":\"ms\"}\n",
            t->rank, t->rank);
    int bad = ferror(f);
    if (fclose(f) || bad || rename(t->tmp, t->path)) unlink(t->tmp);
    t->since_flush = 0;
}

/* End the current step's span (t->mu held). */
static void end_step(struct hpcti_timeline *t, double now)
{
    if (t->cur && t->step > 0) event(t, 0, "step", "step", t->step_t0, now, NULL);
}

void hpcti_tl_step(hpct_ctx_t ctx, long step)
{
    struct hpcti_timeline *t = ctx->timeline;
    if (!t) return;
    double now = hpcti_now();
    pthread_mutex_lock(&t->mu);
    end_step(t, now);
    int was = t->cur != NULL;
    if (was && ++t->since_flush >= t->steps) flush(t);
    t->step = step, t->step_t0 = now, t->cur = NULL;
    if (recording(t, step)) {
        struct slot *s = &t->slots[step % t->steps];
        s->step = step, s->len = 0;
        t->cur = s;
    } else if (was)
        flush(t); /* the window just ended */
    pthread_mutex_unlock(&t->mu);
}

void hpcti_timeline_close(hpct_ctx_t ctx)
{
    struct hpcti_timeline *t = ctx->timeline;
    if (!t) return;
    pthread_mutex_lock(&t->mu);
    end_step(t, hpcti_now());
    flush(t);
    ctx->timeline = NULL;
    pthread_mutex_unlock(&t->mu);
    pthread_mutex_destroy(&t->mu);
    for (long i = 0; i < t->steps; i++) free(t->slots[i].buf);
    free(t->slots);
    free(t);
}
