/* observe.h: what hpct_train and the in-situ session record about a run (doc/metrics.md):
 * the metrics file on rank 0 (run start with the restart latency, resume, checkpoints, step
 * reports with per-rank step times, evaluations, stragglers, stop) and the straggler warning. */
#ifndef HPCTI_OBSERVE_H
#define HPCTI_OBSERVE_H

#include "../core/core.h"
#include "../obs/obs.h"

#define HPCTI_HOST_WIDTH 64 /* bytes per host name in the exchanged table */

struct hpcti_observer {
    hpct_ctx_t ctx;
    struct hpcti_metrics *m; /* rank 0 with a metrics path; NULL elsewhere */
    struct hpcti_metrics_past past;
    int rank, world, dist;
    int gather;    /* 1: per-rank step times are gathered at report boundaries */
    char *hosts;   /* [world][HPCTI_HOST_WIDTH] host of each rank (when gather) */
    double *times; /* [world] busy seconds per step of each rank, last report interval */
    double *scratch;
    struct hpcti_straggler strag;
    /* restart latency of this segment: Unix seconds */
    double t_begin, t_loaded, t_loaded_mono;
    int first_step_done;
    /* this rank's busy time since the last report: wall minus time waiting for other ranks
     * (collectives, checkpoints, evaluations) */
    double interval_t0, comm0, waits, waits0;
    long interval_step0;
    /* saves whose commit is awaited (rank 0 as the writer): the one in flight and the newest */
    char ckpt_seen[1024];
    struct {
        long step;
        double t0, block_s;
    } ckpt[2];
    int ckpt_pending;
};

/* Collective. path: the metrics file (NULL/"": none), opened on rank 0 (an error there is
 * every rank's, naming the path); threshold: the straggler rule (0: off). Host names are
 * exchanged when either is on. fn names the caller in errors. */
hpct_status_t hpcti_obs_open(struct hpcti_observer *o, hpct_ctx_t ctx, const char *fn,
                             const char *path, double threshold);
void hpcti_obs_close(struct hpcti_observer *o);

/* Records of rank 0 (nothing elsewhere or without a file). */
/* run_start: api ("hpct_train", "insitu"), ck (may be NULL) for the config hash, model. */
void hpcti_obs_run_start(struct hpcti_observer *o, const char *api, hpct_ckpt_t ck,
                         const char *model, long global_batch, long total_steps);
/* resume: after the load (found or not); meta is the loaded one when found. */
void hpcti_obs_resume(struct hpcti_observer *o, hpct_ckpt_t ck, int found,
                      const hpct_ckpt_meta_t *meta, double load_s);
/* A save of step started at monotonic t0 and blocked the loop for block_s; the checkpoint
 * record follows once its commit is seen (hpcti_obs_poll_ckpt). */
void hpcti_obs_saved(struct hpcti_observer *o, hpct_ckpt_t ck, long step, double t0,
                     double block_s);
/* Write the checkpoint record when the pending save's file is committed. */
void hpcti_obs_poll_ckpt(struct hpcti_observer *o, hpct_ckpt_t ck);
/* The first step of this segment completed at step: the restart record. */
void hpcti_obs_first_step(struct hpcti_observer *o, long step);
/* evaluation results after step; seconds it took. */
void hpcti_obs_eval(struct hpcti_observer *o, long step, double loss, double accuracy, long samples,
                    double seconds);
/* stop: reason "done", "signal", "walltime", "error"; signo or status; message. */
void hpcti_obs_stop(struct hpcti_observer *o, const char *reason, long step, int code,
                    const char *message);

/* Time this rank spent waiting for others (agreements, saves, evaluations), seconds. */
static inline void hpcti_obs_wait(struct hpcti_observer *o, double seconds)
{
    o->waits += seconds;
}
/* This rank's busy seconds per step since the last report at step `done`, given its
 * communication wait so far (hpct_comm_stats): the value the boundary gathers. */
double hpcti_obs_busy(const struct hpcti_observer *o, long done, double comm_wait);
/* After the gather into o->times: start the next interval. */
void hpcti_obs_interval_reset(struct hpcti_observer *o, long done, double comm_wait);
/* The step record of a report, with o->times (when gathered): min/median/max, slowest rank
 * and host, and the straggler rule (warning at HPCT_LOG_WARN + straggler record). */
void hpcti_obs_step(struct hpcti_observer *o, const hpct_progress_t *p, double grad_norm,
                    double ckpt_share);

#endif
