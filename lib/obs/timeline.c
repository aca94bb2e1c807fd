/* timeline.c: the opt-in per-rank timeline, in the Chrome trace event format that Perfetto and
 * chrome://tracing load: {"traceEvents":[ ... ]}. A span is recorded as it ends as one
 * fixed-size record (times, static name and category pointers, the raw values of its args)
 * in the array of the current step: nothing is formatted on the training path. The step
 * arrays form a ring (or a window of steps), so the memory and the file stay bounded however
 * long the run. The file is formatted whole and rewritten through a temporary file and a
 * rename: a kill at any instant leaves the previous complete file. */
#define _GNU_SOURCE /* renameat2 (RENAME_EXCHANGE) */
#include "obs.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NAME_BYTES 28 /* longest span name kept, with its terminating 0 */
#define ARGS_MAX   6  /* conversions in a span's args format */
/* Rewrites are at least this many times their own duration apart (at most ~1 % of the time) */
#define FLUSH_SPACING 100.0

/* A value captured from hpcti_tl_span's arguments, formatted when the file is written. */
union arg {
    long long i;
    unsigned long long u;
    double d;
    const char *s;
};

/* One span as recorded: fixed size, nothing formatted (112 bytes). */
struct span {
    double t0, t1;   /* monotonic seconds */
    const char *cat; /* static storage */
    const char *fmt; /* static storage; NULL: no args besides the step */
    union arg a[ARGS_MAX];
    int tid;
    char name[NAME_BYTES];
};

struct slot {
    long step; /* -1: empty */
    struct span *v;
    size_t n, cap;
};

/* The text of the file, built whole before it is written. */
struct text {
    char *b;
    size_t n, cap;
    int failed; /* out of memory: the file is not written this time */
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
    long since_flush;    /* steps since the last rewrite */
    double flush_end;    /* monotonic time the last rewrite ended */
    double flush_cost;   /* seconds the last rewrite took */
    struct text out;     /* kept between rewrites (no allocation once it has grown) */
};

static int write_file(const char *path, const char *text, size_t n);

static hpcti_slot_key_t timeline_slot; /* obs's slot of every context */

static struct hpcti_timeline *timeline_of(const struct hpct_ctx *ctx)
{
    return hpcti_ctx_get(ctx, &timeline_slot);
}

int hpcti_timeline_is_open(const struct hpct_ctx *ctx)
{
    return timeline_of(ctx) != NULL;
}

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
    /* Fail now, naming the file and why, rather than at the end. */
    static const char placeholder[] = "{\"traceEvents\":[]}\n";
    errno = 0;
    if (write_file(t->path, placeholder, sizeof placeholder - 1)) {
        int err = errno ? errno : EIO;
        free(t->slots);
        free(t);
        return hpcti_error(ctx, HPCT_ERR_IO, "timeline: cannot write %s-rank%d.json: %s", prefix,
                           rank, strerror(err));
    }
    hpct_status_t s = hpcti_ctx_put(ctx, &timeline_slot, t, "timeline");
    if (s) {
        free(t->slots);
        free(t);
        return s;
    }
    pthread_mutex_init(&t->mu, NULL);
    return HPCT_SUCCESS;
}

static int recording(const struct hpcti_timeline *t, long step)
{
    return t->first <= 0 || (step >= t->first && step < t->first + t->steps);
}

/* Room for one more span in s, or NULL when memory runs out (the timeline is best effort). */
static struct span *new_span(struct slot *s)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 32;
        struct span *v = realloc(s->v, cap * sizeof *v);
        if (!v) return NULL;
        s->v = v, s->cap = cap;
    }
    return &s->v[s->n++];
}

/* The next conversion of fmt at or after *p (its letter; *len: 0 int, 1 long, 2 long long,
 * 3 size_t); *p moves past it. '\0' when none is left; '?' for one not supported. */
static char next_conv(const char **p, int *len)
{
    const char *q = *p;
    while (*q && (q[0] != '%' || q[1] == '%')) q += q[0] == '%' ? 2 : 1;
    if (!*q) {
        *p = q;
        return '\0';
    }
    q++;
    *len = 0;
    if (*q == 'l')
        *len = q[1] == 'l' ? 2 : 1, q += *len;
    else if (*q == 'z')
        *len = 3, q++;
    *p = *q ? q + 1 : q;
    return *q && strchr("diuxsg", *q) ? *q : '?';
}

/* The values of fmt's conversions from ap into a [ARGS_MAX]; 0 when fmt has a conversion that
 * is not supported or more than ARGS_MAX of them. */
static int capture(const char *fmt, va_list ap, union arg *a)
{
    int len, n = 0;
    for (char c; (c = next_conv(&fmt, &len)); n++) {
        if (c == '?' || n == ARGS_MAX) return 0;
        if (c == 's')
            a[n].s = va_arg(ap, const char *);
        else if (c == 'g')
            a[n].d = va_arg(ap, double);
        else if (c == 'd' || c == 'i')
            a[n].i = len == 0   ? va_arg(ap, int)
                     : len == 1 ? va_arg(ap, long)
                     : len == 2 ? va_arg(ap, long long)
                                : (long long)va_arg(ap, ssize_t);
        else
            a[n].u = len == 0   ? va_arg(ap, unsigned)
                     : len == 1 ? va_arg(ap, unsigned long)
                     : len == 2 ? va_arg(ap, unsigned long long)
                                : va_arg(ap, size_t);
    }
    return 1;
}

void hpcti_tl_span(hpct_ctx_t ctx, int tid, const char *name, const char *cat, double t0, double t1,
                   const char *fmt, ...)
{
    struct hpcti_timeline *t = timeline_of(ctx);
    if (!t) return;
    pthread_mutex_lock(&t->mu);
    struct span *e = t->cur ? new_span(t->cur) : NULL;
    if (e) {
        e->t0 = t0, e->t1 = t1, e->cat = cat, e->tid = tid, e->fmt = fmt;
        size_t n = strnlen(name, NAME_BYTES - 1);
        memcpy(e->name, name, n);
        e->name[n] = '\0';
        if (fmt) {
            va_list ap;
            va_start(ap, fmt);
            if (!capture(fmt, ap, e->a)) e->fmt = NULL;
            va_end(ap);
        }
    }
    pthread_mutex_unlock(&t->mu);
}

/* ---- the file's text ---- */

static int grow(struct text *o, size_t more)
{
    if (o->n + more <= o->cap) return 1;
    size_t cap = o->cap ? o->cap : 1 << 16;
    while (cap < o->n + more) cap *= 2;
    char *b = realloc(o->b, cap);
    if (!b) {
        o->failed = 1;
        return 0;
    }
    o->b = b, o->cap = cap;
    return 1;
}

static void put(struct text *o, const char *s, size_t n)
{
    if (!grow(o, n)) return;
    memcpy(o->b + o->n, s, n);
    o->n += n;
}

static void puts_(struct text *o, const char *s)
{
    put(o, s, strlen(s));
}

/* v in decimal (no allocation, no locale). */
static void put_ull(struct text *o, unsigned long long v)
{
    char d[24];
    int n = 0;
    do d[sizeof d - 1 - n++] = (char)('0' + v % 10);
    while ((v /= 10) && n < (int)sizeof d);
    put(o, d + sizeof d - n, (size_t)n);
}

static void put_ll(struct text *o, long long v)
{
    if (v < 0) put(o, "-", 1);
    put_ull(o, v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v);
}

/* ns as microseconds with 3 decimals ("%lld.%03lld" of ns / 1000 and ns % 1000, ns >= 0) */
static void put_us(struct text *o, long long ns)
{
    char f[4] = {'.', (char)('0' + ns % 1000 / 100), (char)('0' + ns % 100 / 10),
                 (char)('0' + ns % 10)};
    put_ll(o, ns / 1000);
    put(o, f, 4);
}

/* fmt with the captured values a (the members of the span's "args" after "step"). */
static void put_args(struct text *o, const char *fmt, const union arg *a)
{
    int len, n = 0;
    for (const char *p = fmt; *p;) {
        if (p[0] != '%' || p[1] == '%') {
            put(o, p, 1);
            p += p[0] == '%' ? 2 : 1;
            continue;
        }
        char c = next_conv(&p, &len);
        if (c == 's')
            puts_(o, a[n].s ? a[n].s : "(null)");
        else if (c == 'd' || c == 'i')
            put_ll(o, a[n].i);
        else if (c == 'u')
            put_ull(o, a[n].u);
        else {
            char tmp[40];
            int k = c == 'x' ? snprintf(tmp, sizeof tmp, "%llx", a[n].u)
                             : snprintf(tmp, sizeof tmp, "%g", a[n].d);
            if (k > 0 && (size_t)k < sizeof tmp) put(o, tmp, (size_t)k);
        }
        n++;
    }
}

/* One "X" event line of span e of step. */
static void put_event(struct hpcti_timeline *t, struct text *o, const struct span *e, long step)
{
    long long ts = t->offset_ns + (long long)(e->t0 * 1e9),
              dur = (long long)((e->t1 - e->t0) * 1e9);
    if (dur < 0) dur = 0;
    puts_(o, "{\"ph\":\"X\",\"pid\":");
    put_ll(o, t->rank);
    puts_(o, ",\"tid\":");
    put_ll(o, e->tid);
    puts_(o, ",\"name\":\"");
    puts_(o, e->name);
    puts_(o, "\",\"cat\":\"");
    puts_(o, e->cat);
    puts_(o, "\",\"ts\":");
    put_us(o, ts);
    puts_(o, ",\"dur\":");
    put_us(o, dur);
    puts_(o, ",\"args\":{\"step\":");
    put_ll(o, step);
    if (e->fmt && e->fmt[0]) {
        put(o, ",", 1);
        put_args(o, e->fmt, e->a);
    }
    puts_(o, "}},\n");
}

static int by_step(const void *a, const void *b)
{
    const struct slot *x = *(struct slot *const *)a, *y = *(struct slot *const *)b;
    return (x->step > y->step) - (x->step < y->step);
}

/* The whole file into t->out: metadata, the kept steps in order, a closing metadata event. */
static void format(struct hpcti_timeline *t, struct slot **order, long n)
{
    struct text *o = &t->out;
    char head[768];
    o->n = 0, o->failed = 0;
    int len = snprintf(head, sizeof head,
                       "{\"traceEvents\":[\n{\"ph\":\"M\",\"pid\":%d,\"name\":\"process_name\","
                       "\"args\":{\"name\":\"rank %d (%s)\"}},\n"
                       "{\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"name\":\"thread_name\","
                       "\"args\":{\"name\":\"training\"}},\n"
                       "{\"ph\":\"M\",\"pid\":%d,\"tid\":1,\"name\":\"thread_name\","
                       "\"args\":{\"name\":\"checkpoint writer\"}},\n",
                       t->rank, t->rank, t->host, t->rank, t->rank);
    put(o, head, (size_t)len);
    for (long i = 0; i < n; i++)
        for (size_t k = 0; k < order[i]->n; k++) put_event(t, o, &order[i]->v[k], order[i]->step);
    len = snprintf(head, sizeof head,
                   "{\"ph\":\"M\",\"pid\":%d,\"name\":\"process_sort_index\","
                   "\"args\":{\"sort_index\":%d}}\n],\"displayTimeUnit\":\"ms\"}\n",
                   t->rank, t->rank);
    put(o, head, (size_t)len);
}

/* Write text [n] to path; 0, or -1 when it could not be written whole. */
static int write_file(const char *path, const char *text, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) return -1;
    while (n > 0) {
        ssize_t w = write(fd, text, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        text += w, n -= (size_t)w;
    }
    return close(fd) || n ? -1 : 0;
}

/* Put the file tmp in the place of path, atomically: a reader or a kill sees the old file or
 * the new one. Where the system can, the two are exchanged and the old one is removed: a
 * rename over an existing file makes ext4 (auto_da_alloc) start writing the new file out
 * inside rename(2), about 1 ms of the training thread per rewrite (measured: 1.4-1.6 ms wall
 * against 0.3 ms with the exchange, for 260 kB); the price is that after a crash of the node
 * itself (not of the process) the file may be empty. Falls back to rename(2) where the
 * exchange is not supported (EINVAL: NFS, Lustre) or the file is gone (ENOENT). */
static int replace(const char *tmp, const char *path)
{
#ifdef RENAME_EXCHANGE
    if (!renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_EXCHANGE)) {
        unlink(tmp); /* the old file, now under the temporary name */
        return 0;
    }
#endif
    return rename(tmp, path);
}

/* Rewrite the file (t->mu held): formatted whole, written to a temporary name with one
 * write, put in the file's place. 0, or an errno value when the file keeps its last version. */
static int write_now(struct hpcti_timeline *t)
{
    t->since_flush = 0;
    struct slot **order = malloc((size_t)t->steps * sizeof *order);
    if (!order) return ENOMEM;
    long n = 0;
    for (long i = 0; i < t->steps; i++)
        if (t->slots[i].step >= 0) order[n++] = &t->slots[i];
    qsort(order, (size_t)n, sizeof *order, by_step);
    format(t, order, n);
    free(order);
    if (t->out.failed) return ENOMEM;
    if (!write_file(t->tmp, t->out.b, t->out.n) && !replace(t->tmp, t->path)) return 0;
    int err = errno ? errno : EIO;
    unlink(t->tmp);
    return err;
}

/* write_now, timed; a failure is counted in ctx and the first one noted (t->mu held). */
static void flush(hpct_ctx_t ctx, struct hpcti_timeline *t)
{
    double t0 = hpcti_now();
    errno = 0;
    int err = write_now(t);
    t->flush_end = hpcti_now();
    t->flush_cost = t->flush_end - t0;
    if (!err || ctx->lost_timeline++) return;
    char why[sizeof t->path + 400];
    snprintf(why, sizeof why,
             "timeline file %s: cannot rewrite it: %s; it keeps its last whole version, and "
             "later rewrites are tried again",
             t->path, strerror(err));
    hpcti_note_loss(ctx, why);
}

/* A rewrite is due: timeline_steps steps since the last one, and at least FLUSH_SPACING times
 * the last one's duration (the rewrites take at most about 1 % of the time, however short the
 * steps). */
static int flush_due(const struct hpcti_timeline *t, double now)
{
    return t->since_flush >= t->steps && now - t->flush_end >= FLUSH_SPACING * t->flush_cost;
}

/* End the current step's span (t->mu held). */
static void end_step(struct hpcti_timeline *t, double now)
{
    if (!t->cur || t->step <= 0) return;
    struct span *e = new_span(t->cur);
    if (!e) return;
    e->t0 = t->step_t0, e->t1 = now, e->cat = "step", e->fmt = NULL, e->tid = 0;
    memcpy(e->name, "step", 5);
}

void hpcti_tl_step(hpct_ctx_t ctx, long step)
{
    struct hpcti_timeline *t = timeline_of(ctx);
    if (!t) return;
    double now = hpcti_now();
    pthread_mutex_lock(&t->mu);
    end_step(t, now);
    int was = t->cur != NULL;
    if (was && ++t->since_flush >= t->steps && flush_due(t, now)) flush(ctx, t);
    t->step = step, t->step_t0 = now, t->cur = NULL;
    if (recording(t, step)) {
        struct slot *s = &t->slots[step % t->steps];
        s->step = step, s->n = 0;
        t->cur = s;
    } else if (was)
        flush(ctx, t); /* the window just ended */
    pthread_mutex_unlock(&t->mu);
}

void hpcti_timeline_close(hpct_ctx_t ctx)
{
    struct hpcti_timeline *t = timeline_of(ctx);
    if (!t) return;
    pthread_mutex_lock(&t->mu);
    end_step(t, hpcti_now());
    flush(ctx, t);
    hpct_status_t s = hpcti_ctx_put(ctx, &timeline_slot, NULL, "timeline"); /* in use: no error */
    (void)s;
    pthread_mutex_unlock(&t->mu);
    pthread_mutex_destroy(&t->mu);
    for (long i = 0; i < t->steps; i++) free(t->slots[i].v);
    free(t->slots);
    free(t->out.b);
    free(t);
}
