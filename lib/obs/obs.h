/* obs.h: what a run leaves behind to be understood afterwards: the metrics file (one JSON
 * object per line, append-only, doc/metrics.md) and the per-rank step-time statistics that
 * name a straggler. Directly on core: every folder above may call it, as it calls logging. */
#ifndef HPCTI_OBS_H
#define HPCTI_OBS_H

#include "../core/core.h"

/* Schema version written in every record ("v"); doc/metrics.md documents each version. */
#define HPCTI_METRICS_SCHEMA 1
/* Longest record; a longer one is cut at a field boundary and marked "truncated":1. */
#define HPCTI_JLINE_MAX 4096

/* One JSON object being built: {"v":1,"type":"...","time":<unix s>, ...}. */
struct hpcti_jline {
    char buf[HPCTI_JLINE_MAX];
    size_t n;
    int full; /* a field did not fit: later fields are dropped */
};

/* Start a record of type (run_start, step, checkpoint, ...) stamped with the Unix time. */
void hpcti_jl_begin(struct hpcti_jline *j, const char *type);
/* Add "key":"value" (escaped; NULL writes null). */
void hpcti_jl_str(struct hpcti_jline *j, const char *key, const char *value);
/* Add "key":value for an integer. */
void hpcti_jl_long(struct hpcti_jline *j, const char *key, long value);
/* Add "key":value for a real (%.9g; NaN or Inf write null). */
void hpcti_jl_num(struct hpcti_jline *j, const char *key, double value);
/* Close the object and end the line ("}\n"). */
void hpcti_jl_end(struct hpcti_jline *j);

/* Seconds since the Unix epoch (real time: records of different processes compare). */
double hpcti_unix_now(void);

/* The metrics file of one process (the writer rank, rank 0). */
struct hpcti_metrics;
/* What the file already held when it was opened (earlier segments of a requeued run). */
struct hpcti_metrics_past {
    int segments;       /* run_start records found */
    long last_step;     /* highest "step" of a step record, -1 when none */
    double last_stop_t; /* time of the last stop record, 0 when none */
    char last_stop_reason[32];
};
/* Open path for appending (created 0666 & ~umask), read what earlier segments left (a torn
 * last line is ended first, so it stays one bad line). HPCT_ERR_IO naming path on failure. */
hpct_status_t hpcti_metrics_open(hpct_ctx_t ctx, const char *path, struct hpcti_metrics **m,
                                 struct hpcti_metrics_past *past);
/* Append the finished record j with one write(2) of the whole line (no stdio buffer: a crash
 * at any instant leaves whole lines, or one torn last line). A write that fails or is short
 * (a full disk) is taken back whole: the file is cut to the record's start. 0; -1 for the
 * first record lost, why [len] naming the file, the byte offset and the reason; -2 for any
 * later one (say it once). */
int hpcti_metrics_write(struct hpcti_metrics *m, const struct hpcti_jline *j, char *why,
                        size_t len);
/* Close and free; NULL is accepted. */
void hpcti_metrics_close(struct hpcti_metrics *m);

/* Per-rank step times of one report interval [world] and who is slowest. */
struct hpcti_step_stats {
    double min, median, max; /* seconds per step */
    double others;           /* median of the other ranks (without the slowest); max when alone */
    int slowest;             /* rank with the max (the lowest such rank) */
};
/* Statistics of t [n] (n >= 1); scratch [n] is overwritten. */
void hpcti_step_stats(const double *t, int n, double *scratch, struct hpcti_step_stats *out);

/* Straggler detector: a rank slower than the median of the other ranks by more than threshold
 * (a fraction) and by more than HPCTI_STRAGGLER_MIN_S per step (timer noise of very short steps is
 * not a straggler) in `persist` reports in a row. */
#define HPCTI_STRAGGLER_MIN_S 0.002
struct hpcti_straggler {
    double threshold;
    int persist;
    int rank, count; /* candidate and its consecutive reports */
    int warned;      /* rank warned about (-1: none) */
};
void hpcti_straggler_init(struct hpcti_straggler *d, double threshold, int persist);
/* Feed one report's statistics; 1 when st->slowest just became a persistent straggler
 * (warn now), else 0. A rank that recovers and slows again is reported again. */
int hpcti_straggler_feed(struct hpcti_straggler *d, const struct hpcti_step_stats *st);

/* Output lost that training survives (a metrics record, a timeline rewrite): the first loss of
 * the context is kept for hpct_output_losses and logged at HPCT_LOG_ERROR; the caller counts. */
void hpcti_note_loss(hpct_ctx_t ctx, const char *why);

/* ---- timeline (opt-in): per-rank Chrome trace event JSON --------------------------------- */

/* A timeline of the steps of one rank: spans ("X" events) in a ring of the last `steps` steps
 * (first <= 0) or of the window [first, first + steps - 1]. The file
 * <prefix>-rank<R>.json is rewritten whole (temporary file, then rename) every `steps` steps
 * and at close, so it is valid JSON at every instant, also after a kill. Kept in obs's slot
 * of ctx; every folder above may add spans. */
hpct_status_t hpcti_timeline_open(hpct_ctx_t ctx, const char *prefix, int rank, const char *host,
                                  long steps, long first);
/* Write the file a last time and detach; nothing when none is open. A failed rewrite is
 * counted in ctx->lost_timeline, the first one noted (hpcti_note_loss). */
void hpcti_timeline_close(hpct_ctx_t ctx);
/* Step `step` (the optimizer step being computed, 1-based) begins; the span of the previous
 * step ends here. */
void hpcti_tl_step(hpct_ctx_t ctx, long step);
/* 1 while a timeline is open on ctx. */
int hpcti_timeline_is_open(const struct hpct_ctx *ctx);
/* Now on the timeline's clock (monotonic seconds), or 0 when no timeline is open. */
static inline double hpcti_tl_now(hpct_ctx_t ctx)
{
    return hpcti_timeline_is_open(ctx) ? hpcti_now() : 0.0;
}
/* A span [t0, t1] (hpcti_tl_now) named name (its first 27 bytes are kept) in category cat on
 * track tid (0: the training thread, 1: the checkpoint writer, whose spans the training thread
 * adds once it sees them complete); fmt (may be NULL) formats the members of its "args" object
 * (e.g. "\"layer\":%d"). Nothing is formatted here: the values are kept and formatted when the
 * file is written, so cat, fmt and every %s argument must be static (string literals), and fmt
 * may use at most 6 conversions among %d %i %u %x (with no length, l, ll or z), %s and %g, with
 * no flags or widths (a span whose fmt has another is kept without those args members).
 * Called by the training thread only; nothing when off. */
void hpcti_tl_span(hpct_ctx_t ctx, int tid, const char *name, const char *cat, double t0, double t1,
                   const char *fmt, ...) __attribute__((format(printf, 7, 8)));

#endif
