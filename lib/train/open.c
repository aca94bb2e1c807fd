/* open.c: an in-situ session in one call (hpct_insitu_open): the settings of hpctrain.conf(5)
 * make the context, the model, the optimizer and schedule, the checkpoints and the evaluation
 * data that the long form makes in about 15 calls; the session owns them, hpct_insitu_close
 * frees them. */
#include "insitu.h"
#include "settings.h"
#include "../comm/agree.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char fn[] = "hpct_insitu_open";

/* What the settings made, and the strings the session's configuration points into. */
struct opened {
    struct {
        hpct_ctx_t ctx;
        hpct_model_t model;
        hpct_optimizer_t opt;
        hpct_ckpt_t ck;
        hpct_dataset_t eval;
        int rank;               /* in the context: rank 0 prints progress */
        hpct_signals_t signals; /* installed before MPI_Init, when open initialised MPI */
    } own;
    hpct_settings_t set;
    char metrics[HPCT_SETTINGS_PATH_MAX + 32], timeline[HPCT_SETTINGS_PATH_MAX + 32];
};

/* "key = value" items of overrides, separated by ';' or newlines, applied in order. */
static hpct_status_t apply_overrides(hpct_settings_t *set, const char *overrides)
{
    char item[HPCT_SETTINGS_PATH_MAX + 128], where[64];
    int n = 0;
    for (const char *p = overrides; p && *p;) {
        size_t len = strcspn(p, ";\n");
        snprintf(where, sizeof where, "overrides item %d", ++n);
        if (len >= sizeof item) {
            snprintf(item, sizeof item, "%s: longer than %zu characters", where, sizeof item - 1);
            hpcti_set_init_error(item);
            return HPCT_ERR_INVALID_ARG;
        }
        memcpy(item, p, len), item[len] = '\0';
        p += len + (p[len] != '\0');
        char *key, *value;
        hpct_status_t s = hpcti_settings_split(item, where, &key, &value);
        if (!s && key) s = hpct_settings_set(set, key, value, where);
        if (s) return s;
    }
    return HPCT_SUCCESS;
}

/* Defaults, the file (NULL or "": none), the overrides; checked for an in-situ session. */
static hpct_status_t read_settings(hpct_settings_t *set, const char *path, const char *overrides)
{
    hpct_status_t s = hpct_settings_defaults(set);
    if (!s && path && path[0]) s = hpct_settings_read_file(set, path);
    if (!s) s = apply_overrides(set, overrides);
    if (!s) s = hpct_settings_check(set, HPCT_SETTINGS_INSITU);
    return s;
}

/* The context's configuration from the settings; no log (the caller reports failures, as
 * hpctrain does). */
static hpct_config_t context_config(const hpct_settings_t *set)
{
    hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
    cfg.seed = (uint64_t)set->seed;
    cfg.num_threads = (int)set->threads;
    cfg.backend = strcmp(set->backend, "cuda") ? HPCT_BACKEND_CPU : HPCT_BACKEND_CUDA;
    cfg.consistency_interval = set->consistency_interval;
    cfg.collective_timeout_s = set->collective_timeout;
    return cfg;
}

static hpct_activation_t activation_of(const char *name)
{
    return !strcmp(name, "relu")   ? HPCT_ACT_RELU
           : !strcmp(name, "tanh") ? HPCT_ACT_TANH
           : !strcmp(name, "gelu") ? HPCT_ACT_GELU
                                   : HPCT_ACT_IDENTITY;
}

/* inputs -> the layers key's layers, or hidden widths (activation) -> outputs (identity), for
 * local batches up to global_batch rows. */
static hpct_status_t build_model(struct opened *o)
{
    const hpct_settings_t *c = &o->set;
    int ce = !strcmp(c->loss, "softmax_ce");
    hpct_status_t s = hpct_model_create(o->own.ctx, (int)c->inputs, &o->own.model);
    if (!s && c->layers[0]) {
        s = hpct_model_add_layers(o->own.model, c->layers, activation_of(c->activation));
        int outputs = 0;
        if (!s) hpct_model_shape(o->own.model, NULL, &outputs);
        if (!s && outputs != c->outputs)
            s = hpcti_error(o->own.ctx, HPCT_ERR_INVALID_ARG,
                            "layers: the last layer gives %d values per sample, outputs is %ld",
                            outputs, c->outputs);
    }
    for (int i = 0; !s && !c->layers[0] && i < c->num_hidden; i++)
        s = hpct_model_add_dense(o->own.model, c->hidden[i], activation_of(c->activation),
                                 HPCT_INIT_AUTO);
    if (!s && !c->layers[0])
        s = hpct_model_add_dense(o->own.model, (int)c->outputs, HPCT_ACT_IDENTITY, HPCT_INIT_AUTO);
    if (!s) s = hpct_model_set_loss(o->own.model, ce ? HPCT_LOSS_SOFTMAX_CE : HPCT_LOSS_MSE);
    if (!s) s = hpct_model_build(o->own.model, (int)c->global_batch);
    return s;
}

static hpct_status_t make_optimizer(struct opened *o)
{
    const hpct_settings_t *c = &o->set;
    hpct_optim_config_t oc = HPCT_OPTIM_CONFIG_INITIALIZER;
    oc.kind = !strcmp(c->optimizer, "adamw") ? HPCT_OPT_ADAMW : HPCT_OPT_SGD;
    oc.lr = (float)c->lr, oc.momentum = (float)c->momentum, oc.nesterov = c->nesterov;
    oc.weight_decay = (float)c->weight_decay, oc.beta1 = (float)c->beta1;
    oc.beta2 = (float)c->beta2, oc.eps = (float)c->eps, oc.clip_norm = (float)c->clip_norm;
    oc.schedule = !strcmp(c->schedule, "step")     ? HPCT_SCHED_STEP
                  : !strcmp(c->schedule, "cosine") ? HPCT_SCHED_COSINE
                                                   : HPCT_SCHED_CONSTANT;
    oc.warmup_steps = c->warmup_steps, oc.step_size = c->step_size, oc.gamma = (float)c->gamma;
    oc.total_steps = c->total_steps > 0 ? c->total_steps : 1;
    oc.min_lr = (float)c->min_lr;
    hpct_params_t params;
    hpct_status_t s = hpct_model_params(o->own.model, &params);
    return s ? s : hpct_optimizer_create(params, &oc, &o->own.opt);
}

/* The checkpoint directory: cadence, retention, the walltime margin (asked by rank 0), the
 * settings' hash as its config_hash. */
static hpct_status_t open_checkpoints(struct opened *o, unsigned flags, int rank)
{
    const hpct_settings_t *c = &o->set;
    hpct_ckpt_config_t kc = HPCT_CKPT_CONFIG_INITIALIZER;
    kc.directory = c->checkpoint_dir;
    kc.keep_last = (int)c->checkpoint_keep;
    kc.keep_every = (int)c->checkpoint_keep_every;
    kc.every_steps = c->checkpoint_every_steps;
    kc.every_seconds = c->checkpoint_every_seconds;
    kc.async = c->checkpoint_async;
    kc.allow_config_change = (flags & HPCT_INSITU_ALLOW_SETTINGS_CHANGE) != 0;
    kc.config_hash = hpct_settings_hash(c);
    kc.walltime_margin = rank == 0 ? c->walltime_margin : 0.0;
    return hpct_ckpt_open(o->own.ctx, &kc, &o->own.ck);
}

/* metrics_file / timeline_file: "none" off, "auto" in the checkpoint directory, else the
 * value, into buf [n]. */
static const char *output_path(const char *value, const char *dir, const char *leaf, char *buf,
                               size_t n)
{
    if (!strcmp(value, "none")) return "";
    if (strcmp(value, "auto")) return value;
    snprintf(buf, n, "%s/%s", dir, leaf);
    return buf;
}

/* Rank 0's progress line every log_interval steps, on standard output. */
static void print_progress(const hpct_progress_t *p, void *arg)
{
    if (*(const int *)arg != 0) return;
    printf("hpctrain: step %ld loss %.6f lr %.4g samples/s %.0f comm %.1f%%\n", p->step, p->loss,
           p->lr, p->samples_per_s, 100.0 * p->comm_share);
    fflush(stdout);
}

static hpct_insitu_config_t session_config(struct opened *o, const int *rank)
{
    const hpct_settings_t *c = &o->set;
    hpct_insitu_config_t ic = HPCT_INSITU_CONFIG_INITIALIZER;
    ic.resume = !strcmp(c->resume, "auto");
    ic.log_interval = c->log_interval;
    ic.progress = print_progress, ic.progress_arg = (void *)rank;
    ic.metrics_path = output_path(c->metrics_file, c->checkpoint_dir, "metrics.jsonl", o->metrics,
                                  sizeof o->metrics);
    ic.straggler_threshold = c->straggler_threshold;
    ic.timeline_path = output_path(c->timeline_file, c->checkpoint_dir, "timeline", o->timeline,
                                   sizeof o->timeline);
    ic.timeline_steps = c->timeline_steps, ic.timeline_first = c->timeline_first;
    ic.eval_data = o->own.eval;
    ic.eval_interval = c->eval_every_steps;
    ic.divergence_factor = c->divergence_factor, ic.divergence_reports = c->divergence_reports;
    ic.catch_signals = o->own.signals == NULL; /* else open installed them: their flag holds */
    return ic;
}

/* Everything after the context: model, optimizer, checkpoints, evaluation data, session. */
static hpct_status_t build(struct opened *o, unsigned flags, hpct_insitu_t *session)
{
    hpct_topology_t topo = HPCT_TOPOLOGY_INITIALIZER;
    hpct_status_t s = hpct_topology(o->own.ctx, &topo);
    if (!s) s = build_model(o);
    if (!s) s = make_optimizer(o);
    if (!s) s = open_checkpoints(o, flags, topo.rank);
    if (!s && o->set.eval_manifest[0]) { /* closed last-in, first-out by free_opened */
        hpct_data_config_t dc = HPCT_DATA_CONFIG_INITIALIZER;
        dc.seed = (uint64_t)o->set.seed, dc.shuffle = 0;
        dc.memory_budget_bytes = (size_t)o->set.data_memory_mib << 20;
        s = hpct_dataset_open(o->own.ctx, o->set.eval_manifest, &dc, &o->own.eval);
    }
    o->own.rank = topo.rank;
    hpct_insitu_config_t ic = session_config(o, &o->own.rank);
    if (!s) s = hpct_insitu_create(o->own.model, NULL, o->own.opt, o->own.ck, &ic, session);
    return s;
}

/* The context on the caller's communicator; without MPI yet (HPCT_COMM_WORLD only): the
 * preemption handlers first, then hpct_init (MPI_Init, MPI_COMM_WORLD; hpct_finalize ends
 * MPI). */
static hpct_status_t start_context(struct opened *o, const hpct_config_t *cfg, int fortran_comm)
{
    int up = 0, down = 0;
    MPI_Initialized(&up);
    MPI_Finalized(&down);
    if (down) {
        hpcti_set_init_error("hpct_insitu_open: MPI is finalized already (by this program, or "
                             "by the hpct_insitu_close of a session that initialised it)");
        return HPCT_ERR_STATE;
    }
    if (up)
        return hpct_init_comm(
            cfg, fortran_comm == HPCT_COMM_WORLD ? (int)MPI_Comm_c2f(MPI_COMM_WORLD) : fortran_comm,
            &o->own.ctx);
    if (fortran_comm != HPCT_COMM_WORLD) {
        hpcti_set_init_error("hpct_insitu_open: MPI is not initialised: call MPI_Init first, or "
                             "pass HPCT_COMM_WORLD (Fortran: no comm) to have it initialised "
                             "here and finalised by hpct_insitu_close");
        return HPCT_ERR_STATE;
    }
    hpct_status_t s = hpct_signals_install(NULL, NULL, 0, &o->own.signals);
    if (s == HPCT_ERR_STATE) s = HPCT_SUCCESS; /* the program installed them: its flag holds */
    return s ? s : hpct_init(cfg, &o->own.ctx);
}

/* The settings' status of every rank: an error of every rank (the same file) keeps its own
 * message, as hpctrain prints it; an error of some ranks names the first of them. */
static hpct_status_t agree_settings(hpct_ctx_t ctx, hpct_status_t mine, const char *detail)
{
    long all_failed = mine != HPCT_SUCCESS;
    hpct_status_t s = hpcti_agree(ctx, fn, &all_failed, 1, MPI_MIN);
    if (s || !all_failed) return s ? s : hpcti_agree_status(ctx, fn, mine, detail);
    hpcti_error(ctx, mine, "%s", detail);
    hpcti_mark_error_shared(ctx);
    return mine;
}

/* Free what o holds; the context last. */
static void free_opened(void *arg)
{
    struct opened *o = arg;
    if (!o) return;
    hpct_dataset_close(o->own.eval);
    if (o->own.ck) (void)hpct_ckpt_close(o->own.ck);
    hpct_optimizer_destroy(o->own.opt);
    hpct_model_destroy(o->own.model);
    if (o->own.ctx) (void)hpct_finalize(o->own.ctx); /* MPI_Finalize if open initialised MPI */
    hpct_signals_uninstall(o->own.signals);          /* after: a late signal is ignored */
    free(o);
}

/* A failure of open: the detail (agreed over the ranks where the context got that far) into
 * hpct_last_error(NULL), everything made so far freed. */
static hpct_status_t give_up(struct opened *o, hpct_status_t s)
{
    if (o && o->own.ctx) hpcti_set_init_error(hpct_last_error(o->own.ctx));
    free_opened(o);
    return s;
}

hpct_status_t hpct_insitu_open(int fortran_comm, const char *settings, const char *overrides,
                               unsigned flags, hpct_insitu_t *session)
{
    if (!session) {
        hpcti_set_init_error("hpct_insitu_open: session is NULL");
        return HPCT_ERR_INVALID_ARG;
    }
    *session = NULL;
    struct opened *o = calloc(1, sizeof *o);
    if (!o) return HPCT_ERR_NO_MEMORY;
    char detail[1200] = "";
    hpct_status_t mine = read_settings(&o->set, settings, overrides); /* this rank's */
    if (mine) snprintf(detail, sizeof detail, "%s", hpct_last_error(NULL));
    hpct_config_t cfg = context_config(&o->set);
    hpct_status_t s = start_context(o, &cfg, fortran_comm);
    if (s) return give_up(o, s); /* its detail is in hpct_last_error(NULL) already */
    /* every rank read its own copy of the file: one rank's error is every rank's */
    s = agree_settings(o->own.ctx, mine, detail);
    if (!s) {
        s = build(o, flags, session);
        if (!(s && hpct_last_error_shared(o->own.ctx))) /* not agreed by the failing call */
            s = hpcti_agree_status(o->own.ctx, fn, s, hpct_last_error(o->own.ctx));
    }
    if (s) {
        hpct_insitu_destroy(*session);
        *session = NULL;
        return give_up(o, s);
    }
    hpcti_insitu_own(*session, o, free_opened);
    return HPCT_SUCCESS;
}

hpct_status_t hpct_insitu_close(hpct_insitu_t session)
{
    if (!session) return HPCT_SUCCESS;
    hpct_status_t s = hpcti_insitu_finished(session) ? HPCT_SUCCESS : hpct_insitu_finish(session);
    if (s) hpcti_set_init_error(hpct_insitu_last_error(session)); /* outlives it */
    hpct_insitu_destroy(session);
    return s;
}
