/* observe.c: the records of doc/metrics.md, written by rank 0, and the per-rank step times
 * that name a straggler (gathered by the step-boundary agreement, loop.c). */
#include "config.h"
#include "observe.h"
#include "loop.h"
#include "../comm/agree.h"
#include "../comm/dist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define STRAGGLER_REPORTS 3 /* reports in a row before a straggler is named */

/* Unix time this process started (/proc), or 0 when unknown. */
static double process_start_unix(void)
{
    FILE *f = fopen("/proc/self/stat", "r");
    char buf[1024];
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* the command name may hold blanks */
    unsigned long long start = 0;
    /* after ") ": state is field 3; starttime is field 22 */
    if (!p || sscanf(p + 2,
                     "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d "
                     "%*d %*d %llu",
                     &start) != 1)
        return 0.0;
    f = fopen("/proc/stat", "r");
    char line[256];
    double btime = 0.0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "btime %lf", &btime) == 1) break;
    if (f) fclose(f);
    long hz = sysconf(_SC_CLK_TCK);
    return btime > 0 && hz > 0 ? btime + (double)start / (double)hz : 0.0;
}

hpct_status_t hpcti_obs_open(struct hpcti_observer *o, hpct_ctx_t ctx, const char *fn,
                             const char *path, double threshold)
{
    memset(o, 0, sizeof *o);
    o->ctx = ctx;
    o->t_begin = hpcti_unix_now();
    o->dist = hpcti_loop_where(ctx, &o->rank, &o->world);
    o->past.last_step = -1;
    hpct_status_t s = HPCT_SUCCESS;
    if (path && path[0] && o->rank == 0) s = hpcti_metrics_open(ctx, path, &o->m, &o->past);
    if (o->dist) s = hpcti_agree_status(ctx, fn, s, ctx->last_error);
    if (s) return s;
    hpcti_straggler_init(&o->strag, threshold, STRAGGLER_REPORTS);
    o->gather = (path && path[0]) || threshold > 0;
    if (!o->gather) return HPCT_SUCCESS;
    o->hosts = hpcti_calloc(ctx, (size_t)o->world, HPCTI_HOST_WIDTH, "the host name table");
    o->times = hpcti_calloc(ctx, (size_t)o->world, 2 * sizeof(double), "the step times");
    if (!o->hosts || !o->times) s = HPCT_ERR_NO_MEMORY;
    if (o->dist) s = hpcti_agree_status(ctx, fn, s, ctx->last_error);
    if (!s) s = hpcti_agree_hosts(ctx, o->hosts, HPCTI_HOST_WIDTH);
    if (s) return s;
    o->scratch = o->times + o->world;
    return HPCT_SUCCESS;
}

void hpcti_obs_close(struct hpcti_observer *o)
{
    hpcti_metrics_close(o->m);
    free(o->hosts);
    free(o->times);
    o->m = NULL, o->hosts = NULL, o->times = NULL;
}

static void emit(struct hpcti_observer *o, struct hpcti_jline *j)
{
    char why[1200];
    hpcti_jl_end(j);
    int r = hpcti_metrics_write(o->m, j, why, sizeof why);
    if (r == 0) return;
    o->ctx->lost_metrics++;
    if (r == -1) hpcti_note_loss(o->ctx, why);
}

static const char *host_of(const struct hpcti_observer *o, int rank)
{
    return o->hosts && rank >= 0 && rank < o->world ? o->hosts + (size_t)rank * HPCTI_HOST_WIDTH
                                                    : "";
}

void hpcti_obs_run_start(struct hpcti_observer *o, const char *api, hpct_ckpt_t ck,
                         const char *model, long global_batch, long total_steps)
{
    if (!o->m) return;
    struct hpcti_jline j;
    char hash[24];
    snprintf(hash, sizeof hash, "0x%016llx",
             (unsigned long long)(ck ? hpcti_ckpt_config_hash(ck) : 0));
    hpcti_jl_begin(&j, "run_start");
    hpcti_jl_long(&j, "segment", o->past.segments + 1);
    hpcti_jl_str(&j, "api", api);
    hpcti_jl_str(&j, "library_version", HPCT_VERSION_STRING);
    hpcti_jl_str(&j, "config_hash", hash);
    hpcti_jl_long(&j, "world_size", o->world);
    hpct_topology_t t = HPCT_TOPOLOGY_INITIALIZER;
    if (o->dist && !hpct_topology(o->ctx, &t)) {
        hpcti_jl_long(&j, "nodes", t.num_nodes);
        hpcti_jl_long(&j, "ranks_per_node", t.local_size);
        hpcti_jl_long(&j, "hierarchical", t.hierarchical);
    } else
        hpcti_jl_long(&j, "nodes", 1);
    hpcti_jl_str(&j, "host", host_of(o, 0));
    const char *job = getenv("SLURM_JOB_ID"), *restarts = getenv("SLURM_RESTART_COUNT");
    hpcti_jl_str(&j, "slurm_job_id", job);
    hpcti_jl_long(&j, "slurm_restart_count", restarts ? atol(restarts) : 0);
    hpcti_jl_str(&j, "model", model);
    hpcti_jl_long(&j, "global_batch", global_batch);
    hpcti_jl_long(&j, "total_steps", total_steps);
    hpcti_jl_long(&j, "pid", (long)getpid());
    emit(o, &j);
}

void hpcti_obs_resume(struct hpcti_observer *o, hpct_ckpt_t ck, int found,
                      const hpct_ckpt_meta_t *meta, double load_s)
{
    o->t_loaded = hpcti_unix_now(), o->t_loaded_mono = hpcti_now();
    if (!o->m) return;
    const char *why = "";
    if (ck) hpct_ckpt_rejected(ck, &why);
    if (!found && !why[0]) return; /* a fresh start: nothing to say */
    struct hpcti_jline j;
    hpcti_jl_begin(&j, "resume");
    hpcti_jl_long(&j, "found", found);
    if (found) {
        hpcti_jl_str(&j, "path", meta->path);
        hpcti_jl_long(&j, "step", meta->step);
        hpcti_jl_long(&j, "saved_world_size", meta->world_size);
    }
    hpcti_jl_long(&j, "rejected", found ? meta->rejected : 0);
    hpcti_jl_str(&j, "rejected_detail", why);
    hpcti_jl_num(&j, "load_s", load_s);
    emit(o, &j);
}

void hpcti_obs_saved(struct hpcti_observer *o, hpct_ckpt_t ck, long step, double t0, double block_s)
{
    if (!o->m || !ck) return;
    if (o->ckpt_pending == 2) { /* cannot happen: a save drains the write before it */
        o->ckpt[0] = o->ckpt[1];
        o->ckpt_pending = 1;
    }
    o->ckpt[o->ckpt_pending].step = step, o->ckpt[o->ckpt_pending].t0 = t0;
    o->ckpt[o->ckpt_pending].block_s = block_s;
    o->ckpt_pending++;
    hpcti_obs_poll_ckpt(o, ck);
}

/* The committed file of step: path itself when it is that step's, else the file of the same
 * directory named after step (ckpt-<step>.h5 or ckpt-<step>-keep.h5) into out [len]. */
static void ckpt_file(const char *path, long step, char *out, size_t len)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    int dir = (int)(base - path);
    long committed = -1;
    if (sscanf(base, "ckpt-%ld", &committed) == 1 && committed == step) {
        snprintf(out, len, "%s", path);
        return;
    }
    struct stat st;
    snprintf(out, len, "%.*sckpt-%012ld.h5", dir, path, step);
    if (stat(out, &st)) snprintf(out, len, "%.*sckpt-%012ld-keep.h5", dir, path, step);
}

static void ckpt_record(struct hpcti_observer *o, hpct_ckpt_t ck, const char *path, int i)
{
    char file[1100];
    ckpt_file(path, o->ckpt[i].step, file, sizeof file);
    /* end: its commit as the background writer timed it, else now (when it is seen) */
    long wstep;
    double end = hpcti_now(), committed;
    if (hpcti_ckpt_write_done(ck, &wstep, &committed) && wstep == o->ckpt[i].step &&
        committed >= o->ckpt[i].t0)
        end = committed;
    struct stat st;
    struct hpcti_jline j;
    hpcti_jl_begin(&j, "checkpoint");
    hpcti_jl_long(&j, "step", o->ckpt[i].step);
    hpcti_jl_str(&j, "path", file);
    hpcti_jl_long(&j, "bytes", stat(file, &st) ? -1 : (long)st.st_size);
    hpcti_jl_num(&j, "seconds", end - o->ckpt[i].t0);
    hpcti_jl_num(&j, "blocking_s", o->ckpt[i].block_s);
    emit(o, &j);
}

void hpcti_obs_poll_ckpt(struct hpcti_observer *o, hpct_ckpt_t ck)
{
    if (!o->m || !ck || !o->ckpt_pending) return;
    char keep[sizeof o->ctx->last_error]; /* hpct_ckpt_last_path clears the error detail */
    snprintf(keep, sizeof keep, "%s", o->ctx->last_error);
    const char *path = "";
    hpct_ckpt_last_path(ck, &path);
    snprintf(o->ctx->last_error, sizeof o->ctx->last_error, "%s", keep);
    if (!path[0] || !strcmp(path, o->ckpt_seen)) return;
    snprintf(o->ckpt_seen, sizeof o->ckpt_seen, "%s", path);
    const char *base = strrchr(path, '/');
    long committed = -1;
    sscanf(base ? base + 1 : path, "ckpt-%ld", &committed);
    int n = 0; /* saves up to the committed step are written (writes happen in order) */
    while (n < o->ckpt_pending && o->ckpt[n].step <= committed) ckpt_record(o, ck, path, n++);
    for (int i = n; i < o->ckpt_pending; i++) o->ckpt[i - n] = o->ckpt[i];
    o->ckpt_pending -= n;
}

void hpcti_obs_first_step(struct hpcti_observer *o, long step)
{
    if (o->first_step_done) return;
    o->first_step_done = 1;
    if (!o->m) return;
    double now = hpcti_unix_now(), start = process_start_unix();
    double ctx0 = o->ctx->created_unix, comm = hpcti_dist_ready_unix(o->ctx);
    struct hpcti_jline j;
    hpcti_jl_begin(&j, "restart");
    hpcti_jl_long(&j, "segment", o->past.segments + 1);
    hpcti_jl_long(&j, "step", step);
    if (o->past.last_stop_t > 0) {
        hpcti_jl_str(&j, "previous_stop", o->past.last_stop_reason);
        hpcti_jl_num(&j, "total_s", now - o->past.last_stop_t);
        hpcti_jl_num(&j, "queue_wait_s", start > 0 ? start - o->past.last_stop_t : -1);
    }
    hpcti_jl_num(&j, "startup_s", start > 0 ? ctx0 - start : -1);
    hpcti_jl_num(&j, "comm_setup_s", comm > 0 ? comm - ctx0 : 0);
    hpcti_jl_num(&j, "setup_s", o->t_begin - (comm > 0 ? comm : ctx0));
    hpcti_jl_num(&j, "ckpt_load_s", o->t_loaded - o->t_begin);
    hpcti_jl_num(&j, "first_step_s", now - o->t_loaded);
    emit(o, &j);
}

void hpcti_obs_eval(struct hpcti_observer *o, long step, double loss, double accuracy, long samples,
                    double seconds)
{
    if (!o->m) return;
    struct hpcti_jline j;
    hpcti_jl_begin(&j, "eval");
    hpcti_jl_long(&j, "step", step);
    hpcti_jl_num(&j, "loss", loss);
    hpcti_jl_num(&j, "accuracy", accuracy);
    hpcti_jl_long(&j, "samples", samples);
    hpcti_jl_num(&j, "seconds", seconds);
    emit(o, &j);
}

void hpcti_obs_stop(struct hpcti_observer *o, const char *reason, long step, int code,
                    const char *message)
{
    if (!o->m) return;
    struct hpcti_jline j;
    hpcti_jl_begin(&j, "stop");
    hpcti_jl_long(&j, "segment", o->past.segments + 1);
    hpcti_jl_str(&j, "reason", reason);
    hpcti_jl_long(&j, "step", step);
    if (!strcmp(reason, "signal")) hpcti_jl_long(&j, "signal", code);
    if (!strcmp(reason, "error")) {
        hpcti_jl_long(&j, "status", code);
        hpcti_jl_str(&j, "status_name", hpct_strerror(code));
    }
    if (message && message[0]) hpcti_jl_str(&j, "message", message);
    emit(o, &j);
}

double hpcti_obs_busy(const struct hpcti_observer *o, long done, double comm_wait)
{
    long steps = done - o->interval_step0;
    double wall = hpcti_now() - o->interval_t0;
    double busy = wall - (comm_wait - o->comm0) - (o->waits - o->waits0);
    return steps > 0 && busy > 0 ? busy / (double)steps : 0.0;
}

void hpcti_obs_interval_reset(struct hpcti_observer *o, long done, double comm_wait)
{
    o->interval_t0 = hpcti_now(), o->interval_step0 = done;
    o->comm0 = comm_wait, o->waits0 = o->waits;
}

/* The straggler warning and its record (rank 0). */
static void straggler(struct hpcti_observer *o, long step, const struct hpcti_step_stats *st)
{
    /* the others' busy time can round to 0 (they only waited for this rank): 1 us floor */
    double over = st->max / (st->others > 1e-6 ? st->others : 1e-6) - 1.0;
    hpcti_log(o->ctx, HPCT_LOG_WARN,
              "straggler: rank %d on host %s is %.0f%% slower than the median of the other ranks "
              "(%.3f ms vs %.3f ms of busy time per step) in %d reports in a row, up to step %ld",
              st->slowest, host_of(o, st->slowest), 100.0 * over, 1e3 * st->max, 1e3 * st->others,
              o->strag.persist, step);
    if (!o->m) return;
    struct hpcti_jline j;
    hpcti_jl_begin(&j, "straggler");
    hpcti_jl_long(&j, "step", step);
    hpcti_jl_long(&j, "rank", st->slowest);
    hpcti_jl_str(&j, "host", host_of(o, st->slowest));
    hpcti_jl_num(&j, "step_time_s", st->max);
    hpcti_jl_num(&j, "median_s", st->others);
    hpcti_jl_num(&j, "slower_by", over);
    hpcti_jl_long(&j, "reports", o->strag.count);
    emit(o, &j);
}

void hpcti_obs_step(struct hpcti_observer *o, const hpct_progress_t *p, double grad_norm,
                    double ckpt_share)
{
    struct hpcti_step_stats st = {0, 0, 0, 0, 0};
    if (o->gather) hpcti_step_stats(o->times, o->world, o->scratch, &st);
    int warn = o->rank == 0 && o->gather && hpcti_straggler_feed(&o->strag, &st);
    if (o->m) {
        struct hpcti_jline j;
        hpcti_jl_begin(&j, "step");
        hpcti_jl_long(&j, "step", p->step);
        hpcti_jl_long(&j, "epoch", p->epoch);
        hpcti_jl_num(&j, "loss", p->loss);
        hpcti_jl_num(&j, "lr", p->lr);
        hpcti_jl_num(&j, "samples_per_s", p->samples_per_s);
        hpcti_jl_num(&j, "grad_norm", grad_norm);
        hpcti_jl_num(&j, "data_share", p->data_wait_share);
        hpcti_jl_num(&j, "comm_share", p->comm_share);
        hpcti_jl_num(&j, "ckpt_share", ckpt_share);
        hpcti_jl_num(&j, "step_time_min_s", st.min);
        hpcti_jl_num(&j, "step_time_median_s", st.median);
        hpcti_jl_num(&j, "step_time_max_s", st.max);
        hpcti_jl_long(&j, "slowest_rank", st.slowest);
        hpcti_jl_str(&j, "slowest_host", host_of(o, st.slowest));
        emit(o, &j);
    }
    if (warn) straggler(o, p->step, &st);
}
