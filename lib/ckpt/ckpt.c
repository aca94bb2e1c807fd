/* ckpt.c: the checkpoint handle: configuration, cadence, the snapshot of a training state,
 * the background writer, and load with fall-back to the previous checkpoint. */
#include "scan.h"
#include "../obs/obs.h"
#include "../device/ops.h"
#include "../model/params.h"
#include "../model/model.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* A caller-registered array saved under /extra. */
struct ck_extra {
    char *name;
    int dtype, scalar;
    size_t count;
    void *data; /* host memory */
};

/* The scalar values of one checkpoint (what /meta, /rng and /optimizer's scalars point at). */
struct ck_scalars {
    int64_t step, epoch, cursor_epoch, cursor_step, world_size, global_batch, serial;
    int64_t steps_per_epoch, opt_step, opt_slots;
    uint64_t config_hash, rng[HPCT_RNG_STATE_WORDS];
    double saved_at;
};

struct hpct_ckpt {
    hpct_ctx_t ctx;
    hpct_ckpt_config_t cfg;
    hpcti_ckdir_t d;
    struct ck_extra *extras;
    int num_extras, cap_extras;
    hpcti_snapshot_t snap; /* layout of the checkpoint being written or read */
    struct ck_scalars sc;
    char *buf; /* host staging: async snapshot, device copies, load */
    size_t buf_bytes;
    long serial;          /* serial of the last checkpoint written; -1 before we know */
    long last_saved_step; /* -1 before the first save */
    long protect;         /* step retention keeps (hpcti_ckpt_protect); -1: none */
    double last_save;     /* monotonic seconds of the last save (or open) */
    double job_end;       /* Unix seconds of the job's end; NAN when unknown */
    int walltime_saved;   /* a save happened inside the walltime margin */
    char last_path[HPCTI_CKPT_PATH_MAX];
    char loaded_path[HPCTI_CKPT_PATH_MAX];
    char loaded_model[HPCTI_CKPT_MODEL_MAX];
    char run_model[HPCTI_CKPT_MODEL_MAX]; /* load: a layered run model's description */
    int run_schema;                       /* load: the schema the run's model writes */
    char rejected[1024];     /* files the last load skipped, with their reasons ("; "-separated) */
    long run_batch, run_spe; /* the run's global batch, steps per epoch (0: unknown) */
    hpcti_ckitem_t **byname; /* [snap.num] the items sorted by path (load) */
    /* background writer (async mode) */
    int has_thread, pending, quit;
    int copy_pending; /* defer_copy: the writer has not yet copied the caller's state */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    hpcti_ckerr_t werr; /* status and detail of the last background write */
    int lock_fd;        /* the directory lock (dirlock.c) on the writer rank, else -1 */
    char wpath[HPCTI_CKPT_PATH_MAX];
    /* timeline: the last background copy [2] and write [3] (monotonic s), not yet traced */
    double copy_t[2], write_t[3];
    long write_step;
    int untraced;
};

int hpcti_ckpt_writer_rank(hpct_ckpt_t ck)
{
    return ck->cfg.writer_rank;
}

uint64_t hpcti_ckpt_config_hash(hpct_ckpt_t ck)
{
    return ck->cfg.config_hash;
}

void hpcti_ckpt_note_save(hpct_ckpt_t ck, long step)
{
    ck->last_saved_step = step;
    ck->last_save = hpcti_now();
}

void hpcti_ckpt_protect(hpct_ckpt_t ck, long step)
{
    if (ck) ck->protect = step;
}

void hpcti_ckpt_set_run(hpct_ckpt_t ck, long global_batch, long steps_per_epoch)
{
    if (!ck) return;
    ck->run_batch = global_batch > 0 ? global_batch : 0;
    ck->run_spe = steps_per_epoch > 0 ? steps_per_epoch : 0;
}

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- configuration and directory ----------------------------------------------- */

static const char *bad_config(const hpct_ckpt_config_t *c)
{
    if (c->version < 1 || c->version > HPCT_CKPT_CONFIG_VERSION)
        return "version (start from HPCT_CKPT_CONFIG_INITIALIZER)";
    if (!c->directory || !*c->directory) return "directory (it is empty)";
    if (strlen(c->directory) > HPCTI_CKPT_PATH_MAX - 600) return "directory (path too long)";
    if (c->keep_last < 1) return "keep_last (must be >= 1)";
    if (c->keep_every < 0) return "keep_every (must be >= 0)";
    if (c->every_steps < 0) return "every_steps (must be >= 0)";
    if (!(c->every_seconds >= 0) || isinf(c->every_seconds))
        return "every_seconds (must be finite and >= 0)";
    if (c->async != 0 && c->async != 1) return "async (must be 0 or 1)";
    if (c->writer_rank < 0) return "writer_rank (must be >= 0)";
    if (!(c->walltime_margin >= 0)) return "walltime_margin (must be >= 0)";
    if (c->defer_copy != 0 && c->defer_copy != 1) return "defer_copy (must be 0 or 1)";
    return NULL;
}

/* mkdir -p with mode 0777 & ~umask, never world-writable. */
static hpct_status_t make_dirs(hpct_ctx_t ctx, const char *dir)
{
    char path[HPCTI_CKPT_PATH_MAX];
    snprintf(path, sizeof path, "%s", dir);
    for (char *p = path + 1;; p++) {
        char c = *p;
        if (c != '/' && c != '\0') continue;
        *p = '\0';
        if (mkdir(path, 0777) == 0) {
            struct stat st;
            if (stat(path, &st) == 0 && (st.st_mode & S_IWOTH)) chmod(path, st.st_mode & 07775);
        } else if (errno != EEXIST) {
            return hpcti_error(ctx, HPCT_ERR_IO, "cannot create checkpoint directory %s: %s", path,
                               strerror(errno));
        }
        *p = c;
        if (!c) break;
    }
    struct stat st;
    if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
        return hpcti_error(ctx, HPCT_ERR_IO, "checkpoint directory %s is not a directory", dir);
    return HPCT_SUCCESS;
}

/* ---- background writer --------------------------------------------------------- */

static hpct_status_t copy_staged(hpct_ckpt_t ck, int to_user);

/* defer_copy: take the snapshot on this thread, then release hpct_ckpt_before_update. */
static void copy_in_background(hpct_ckpt_t ck)
{
    double t0 = hpcti_now();
    copy_staged(ck, 0); /* deferred only on the cpu backend, whose copies cannot fail */
    pthread_mutex_lock(&ck->mu);
    ck->copy_t[0] = t0, ck->copy_t[1] = hpcti_now();
    ck->copy_pending = 0;
    pthread_cond_broadcast(&ck->cv);
    pthread_mutex_unlock(&ck->mu);
}

static void *writer_main(void *arg)
{
    hpct_ckpt_t ck = arg;
    pthread_mutex_lock(&ck->mu);
    for (;;) {
        while (!ck->pending && !ck->quit) pthread_cond_wait(&ck->cv, &ck->mu);
        if (!ck->pending) break;
        int copy = ck->copy_pending;
        if (!copy) ck->copy_t[0] = ck->copy_t[1] = 0.0;
        pthread_mutex_unlock(&ck->mu);
        if (copy) copy_in_background(ck);
        hpcti_ckerr_t err = {0, ""};
        char path[HPCTI_CKPT_PATH_MAX];
        double times[3];
        hpct_status_t s = hpcti_ck_write(&ck->d, &ck->snap, path, &err, times);
        pthread_mutex_lock(&ck->mu);
        memcpy(ck->write_t, times, sizeof times);
        ck->write_step = ck->snap.step, ck->untraced = 1;
        ck->werr = err;
        ck->werr.status = s;
        if (!s) snprintf(ck->wpath, sizeof ck->wpath, "%s", path);
        ck->pending = 0;
        pthread_cond_broadcast(&ck->cv);
    }
    pthread_mutex_unlock(&ck->mu);
    return NULL;
}

/* Start the writer with every signal blocked, so signals reach the training threads. */
static hpct_status_t start_writer(hpct_ckpt_t ck)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_mutex_init(&ck->mu, NULL);
    pthread_cond_init(&ck->cv, NULL);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&ck->thread, NULL, writer_main, ck);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc) {
        pthread_cond_destroy(&ck->cv);
        pthread_mutex_destroy(&ck->mu);
        return hpcti_error(ck->ctx, HPCT_ERR_NO_MEMORY,
                           "cannot start the checkpoint writer thread: %s", strerror(rc));
    }
    ck->has_thread = 1;
    return HPCT_SUCCESS;
}

/* The spans of one write: [3] begin, synced, committed (track 1 or 0). */
static void trace_write(hpct_ckpt_t ck, int tid, const double *t, long step)
{
    hpcti_tl_span(ck->ctx, tid, "ckpt_write", "checkpoint", t[0], t[1], "\"ckpt_step\":%ld", step);
    hpcti_tl_span(ck->ctx, tid, "ckpt_commit", "checkpoint", t[1], t[2], "\"ckpt_step\":%ld", step);
}

int hpcti_ckpt_write_done(hpct_ckpt_t ck, long *step, double *committed)
{
    if (!ck || !ck->has_thread) return 0;
    pthread_mutex_lock(&ck->mu);
    int done = ck->write_t[2] > 0 && !ck->pending;
    if (done) *step = ck->write_step, *committed = ck->write_t[2];
    pthread_mutex_unlock(&ck->mu);
    return done;
}

void hpcti_ckpt_trace(hpct_ckpt_t ck)
{
    if (!ck || !ck->has_thread || !hpcti_timeline_is_open(ck->ctx)) return;
    double c[2], w[3];
    long step;
    pthread_mutex_lock(&ck->mu);
    int todo = ck->untraced && !ck->pending;
    if (todo) {
        memcpy(c, ck->copy_t, sizeof c), memcpy(w, ck->write_t, sizeof w);
        step = ck->write_step, ck->untraced = 0;
    }
    pthread_mutex_unlock(&ck->mu);
    if (!todo) return;
    if (c[1] > 0)
        hpcti_tl_span(ck->ctx, 1, "ckpt_snapshot", "checkpoint", c[0], c[1], "\"ckpt_step\":%ld",
                      step);
    trace_write(ck, 1, w, step);
}

/* Wait for the write in flight; its failure becomes the context's error. */
static hpct_status_t drain(hpct_ckpt_t ck)
{
    if (!ck->has_thread) return HPCT_SUCCESS;
    pthread_mutex_lock(&ck->mu);
    while (ck->pending) pthread_cond_wait(&ck->cv, &ck->mu);
    hpcti_ckerr_t err = ck->werr;
    ck->werr.status = HPCT_SUCCESS;
    if (!err.status && ck->wpath[0]) snprintf(ck->last_path, sizeof ck->last_path, "%s", ck->wpath);
    pthread_mutex_unlock(&ck->mu);
    hpcti_ckpt_trace(ck);
    if (!err.status) return HPCT_SUCCESS;
    return hpcti_error(ck->ctx, err.status, "asynchronous checkpoint write failed: %s", err.msg);
}

/* ---- open / close / extras ------------------------------------------------------- */

hpct_status_t hpct_ckpt_open(hpct_ctx_t ctx, const hpct_ckpt_config_t *cfg, hpct_ckpt_t *out)
{
    if (!ctx) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(ctx);
    if (!out || !cfg)
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG, "hpct_ckpt_open: %s is NULL",
                           out ? "cfg" : "out");
    *out = NULL;
    const char *bad = bad_config(cfg);
    if (bad) return hpcti_error(ctx, HPCT_ERR_INVALID_ARG, "hpct_ckpt_config_t.%s", bad);
    hpct_status_t s = make_dirs(ctx, cfg->directory);
    if (s) return s;
    int lock_fd;
    if ((s = hpcti_ckpt_lock_dir(ctx, cfg->directory, cfg->writer_rank, &lock_fd))) return s;
    hpct_ckpt_t ck = hpcti_calloc(ctx, 1, sizeof *ck, "a checkpoint handle");
    if (!ck) {
        hpcti_ckpt_unlock_dir(lock_fd);
        return HPCT_ERR_NO_MEMORY;
    }
    ck->lock_fd = lock_fd;
    ck->ctx = ctx;
    ck->cfg = *cfg;
    ck->cfg.version = HPCT_CKPT_CONFIG_VERSION;
    snprintf(ck->d.dir, sizeof ck->d.dir, "%s", cfg->directory);
    ck->cfg.directory = ck->d.dir;
    ck->d.keep_last = cfg->keep_last;
    ck->d.keep_every = cfg->keep_every;
    ck->d.config_hash = cfg->config_hash;
    ck->d.stop_at = hpcti_stage_parse(hpcti_test_hook("HPCT_CKPT_TEST_STOP_AT"));
    ck->d.log_level = ctx->cfg.log_level;
    ck->serial = -1;
    ck->last_saved_step = -1;
    ck->protect = -1;
    ck->last_save = hpcti_now();
    ck->job_end = NAN;
    double end;
    s = cfg->walltime_margin > 0 ? hpcti_walltime_end(ctx, &end) : HPCT_ERR_NOT_FOUND;
    if (s == HPCT_SUCCESS) ck->job_end = end;
    if (s == HPCT_ERR_INVALID_ARG) { /* a malformed HPCT_JOB_END_TIME: say so, never ignore it */
        hpcti_ckpt_unlock_dir(ck->lock_fd);
        free(ck);
        return s;
    }
    hpcti_clear_error(ctx);
    if (cfg->async && (s = start_writer(ck))) {
        hpcti_ckpt_unlock_dir(ck->lock_fd);
        free(ck);
        return s;
    }
    hpcti_log(ctx, HPCT_LOG_INFO, "checkpoints in %s (keep %d, every %ld steps / %g s, %s)",
              ck->d.dir, cfg->keep_last, cfg->every_steps, cfg->every_seconds,
              cfg->async ? "asynchronous" : "synchronous");
    *out = ck;
    return HPCT_SUCCESS;
}

hpct_status_t hpct_ckpt_close(hpct_ckpt_t ck)
{
    if (!ck) return HPCT_SUCCESS;
    hpcti_clear_error(ck->ctx);
    hpct_status_t s = drain(ck);
    if (ck->has_thread) {
        pthread_mutex_lock(&ck->mu);
        ck->quit = 1;
        pthread_cond_broadcast(&ck->cv);
        pthread_mutex_unlock(&ck->mu);
        pthread_join(ck->thread, NULL);
        pthread_cond_destroy(&ck->cv);
        pthread_mutex_destroy(&ck->mu);
    }
    for (int i = 0; i < ck->num_extras; i++) free(ck->extras[i].name);
    free(ck->extras);
    free(ck->snap.items);
    free(ck->byname);
    free(ck->buf);
    hpcti_ckpt_unlock_dir(ck->lock_fd);
    free(ck);
    return s;
}

static hpct_status_t add_extra(hpct_ckpt_t ck, const char *name, hpct_ckpt_dtype_t dtype,
                               void *data, size_t count, int scalar)
{
    if (!ck) return HPCT_ERR_INVALID_ARG;
    hpct_ctx_t ctx = ck->ctx;
    hpcti_clear_error(ctx);
    if (!name || !*name || strlen(name) > 200 || name[0] == '/')
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                           "hpct_ckpt_add_array: the name must be 1-200 characters, not "
                           "starting with '/'");
    if (!data || count == 0)
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG, "hpct_ckpt_add_array: extra '%s' has %s",
                           name, data ? "zero elements" : "a NULL buffer");
    if (dtype < HPCT_CKPT_F32 || dtype > HPCT_CKPT_U8)
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                           "hpct_ckpt_add_array: extra '%s' has an "
                           "unknown dtype %d",
                           name, (int)dtype);
    for (int i = 0; i < ck->num_extras; i++)
        if (strcmp(ck->extras[i].name, name) == 0)
            return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                               "hpct_ckpt_add_array: an extra named '%s' is already registered",
                               name);
    if (ck->num_extras == ck->cap_extras) {
        int cap = ck->cap_extras ? 2 * ck->cap_extras : 8;
        struct ck_extra *grown = realloc(ck->extras, sizeof *grown * (size_t)cap);
        if (!grown)
            return hpcti_error(ctx, HPCT_ERR_NO_MEMORY, "cannot grow the extras to %d", cap);
        ck->extras = grown;
        ck->cap_extras = cap;
    }
    char *copy = strdup(name);
    if (!copy) return hpcti_error(ctx, HPCT_ERR_NO_MEMORY, "cannot copy extra name '%s'", name);
    ck->extras[ck->num_extras++] = (struct ck_extra){copy, (int)dtype, scalar, count, data};
    return HPCT_SUCCESS;
}

int hpcti_ckpt_extra_point(hpct_ckpt_t ck, const char *name, void *data)
{
    for (int i = 0; ck && i < ck->num_extras; i++)
        if (strcmp(ck->extras[i].name, name) == 0) {
            ck->extras[i].data = data;
            return 1;
        }
    return 0;
}

hpct_status_t hpct_ckpt_add_array(hpct_ckpt_t ck, const char *name, hpct_ckpt_dtype_t dtype,
                                  void *data, size_t count)
{
    return add_extra(ck, name, dtype, data, count, 0);
}

hpct_status_t hpct_ckpt_add_scalar(hpct_ckpt_t ck, const char *name, hpct_ckpt_dtype_t dtype,
                                   void *value)
{
    return add_extra(ck, name, dtype, value, 1, 1);
}

/* ---- cadence ------------------------------------------------------------------- */

hpct_status_t hpct_ckpt_due(hpct_ckpt_t ck, long step, int *due)
{
    if (!ck) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(ck->ctx);
    if (!due) return hpcti_error(ck->ctx, HPCT_ERR_INVALID_ARG, "hpct_ckpt_due: due is NULL");
    const hpct_ckpt_config_t *c = &ck->cfg;
    int d = 0;
    if (c->every_steps > 0 && step > 0 && step % c->every_steps == 0 && step != ck->last_saved_step)
        d |= HPCT_CKPT_DUE_STEPS;
    if (c->every_seconds > 0 && hpcti_now() - ck->last_save >= c->every_seconds)
        d |= HPCT_CKPT_DUE_SECONDS;
    if (!isnan(ck->job_end) && !ck->walltime_saved &&
        ck->job_end - wall_now() <= c->walltime_margin)
        d |= HPCT_CKPT_DUE_WALLTIME;
    if (hpct_signals_pending(NULL, NULL)) d |= HPCT_CKPT_DUE_SIGNAL;
    *due = d;
    return HPCT_SUCCESS;
}

/* ---- the snapshot layout --------------------------------------------------------- */

/* Items whose data live in ck->sc or ck->snap.model (never staged); with_spe: the run's
 * steps per epoch too (saves of a run that knows it; loads read it from the scan). */
static int add_scalars(hpct_ckpt_t ck, int with_opt, int with_spe)
{
    hpcti_snapshot_t *sn = &ck->snap;
    struct ck_scalars *v = &ck->sc;
    int rc = 0;
    rc |= hpcti_snap_add(sn, "meta", "step", HPCT_CKPT_I64, 1, 1, &v->step);
    rc |= hpcti_snap_add(sn, "meta", "epoch", HPCT_CKPT_I64, 1, 1, &v->epoch);
    rc |= hpcti_snap_add(sn, "meta", "cursor_epoch", HPCT_CKPT_I64, 1, 1, &v->cursor_epoch);
    rc |= hpcti_snap_add(sn, "meta", "cursor_step", HPCT_CKPT_I64, 1, 1, &v->cursor_step);
    rc |= hpcti_snap_add(sn, "meta", "world_size", HPCT_CKPT_I64, 1, 1, &v->world_size);
    rc |= hpcti_snap_add(sn, "meta", "global_batch", HPCT_CKPT_I64, 1, 1, &v->global_batch);
    rc |= hpcti_snap_add(sn, "meta", "serial", HPCT_CKPT_I64, 1, 1, &v->serial);
    rc |= hpcti_snap_add(sn, "meta", "config_hash", HPCTI_CK_U64, 1, 1, &v->config_hash);
    rc |= hpcti_snap_add(sn, "meta", "saved_at", HPCT_CKPT_F64, 1, 1, &v->saved_at);
    if (with_spe)
        rc |=
            hpcti_snap_add(sn, "meta", "steps_per_epoch", HPCT_CKPT_I64, 1, 1, &v->steps_per_epoch);
    rc |= hpcti_snap_add(sn, "rng", "state", HPCTI_CK_U64, 0, HPCT_RNG_STATE_WORDS, v->rng);
    if (with_opt) {
        rc |= hpcti_snap_add(sn, "optimizer", "step", HPCT_CKPT_I64, 1, 1, &v->opt_step);
        rc |= hpcti_snap_add(sn, "optimizer", "slots", HPCT_CKPT_I64, 1, 1, &v->opt_slots);
    }
    return rc;
}

/* Add one large item; staged items get their data pointer from assign_staging. */
static int add_big(hpct_ckpt_t ck, const char *prefix, const char *name, int dtype, int scalar,
                   size_t count, void *user, int on_device, int staged)
{
    if (hpcti_snap_add(&ck->snap, prefix, name, dtype, scalar, count, staged ? NULL : user))
        return HPCT_ERR_NO_MEMORY;
    hpcti_ckitem_t *it = &ck->snap.items[ck->snap.num - 1];
    it->user = staged ? user : NULL;
    it->on_device = on_device;
    return HPCT_SUCCESS;
}

/* Point every staged item into ck->buf (64-byte aligned slices), growing it as needed. */
static hpct_status_t assign_staging(hpct_ckpt_t ck)
{
    size_t total = 0;
    for (int i = 0; i < ck->snap.num; i++)
        if (ck->snap.items[i].user)
            total += (ck->snap.items[i].count * hpcti_ck_elsize(ck->snap.items[i].dtype) + 63) &
                     ~(size_t)63;
    if (total > ck->buf_bytes) {
        free(ck->buf);
        ck->buf = NULL;
        ck->buf_bytes = 0;
        if (posix_memalign((void **)&ck->buf, 64, total))
            return hpcti_error(ck->ctx, HPCT_ERR_NO_MEMORY,
                               "cannot allocate %zu bytes for the checkpoint snapshot", total);
        ck->buf_bytes = total;
    }
    size_t off = 0;
    for (int i = 0; i < ck->snap.num; i++) {
        hpcti_ckitem_t *it = &ck->snap.items[i];
        if (!it->user) continue;
        it->data = ck->buf + off;
        off += (it->count * hpcti_ck_elsize(it->dtype) + 63) & ~(size_t)63;
    }
    return HPCT_SUCCESS;
}

/* The full layout: scalars, params/<name>, optimizer/slot<k>/<name>, extra/<name>. With
 * staged = 0 (saves only) the big items point at the caller's (host) memory directly;
 * saving adds the run's steps per epoch when it is known. */
static hpct_status_t build_layout(hpct_ckpt_t ck, hpct_params_t params, hpct_optimizer_t opt,
                                  int slots, int staged, int saving)
{
    ck->snap.num = 0;
    int dev = ck->ctx->ops != &hpcti_cpu_ops;
    int rc = add_scalars(ck, opt != NULL, saving && ck->run_spe > 0);
    for (int i = 0; i < params->num && !rc; i++) {
        struct hpcti_param_buf *b = &params->bufs[i];
        rc = add_big(ck, "params", b->name, HPCT_CKPT_F32, 0, b->count, b->param, dev, staged);
    }
    for (int k = 0; k < slots && !rc; k++) {
        char prefix[32];
        snprintf(prefix, sizeof prefix, "optimizer/slot%d", k);
        for (int i = 0; i < params->num && !rc; i++) {
            float *state;
            size_t count;
            hpct_optimizer_state(opt, i, k, &state, &count);
            rc = add_big(ck, prefix, params->bufs[i].name, HPCT_CKPT_F32, 0, count, state, dev,
                         staged);
        }
    }
    for (int i = 0; i < ck->num_extras && !rc; i++) {
        struct ck_extra *e = &ck->extras[i];
        if (!e->data) /* a block array off the writer (lib/train/blocks.c) */
            return hpcti_error(ck->ctx, HPCT_ERR_STATE,
                               "extra '%s' is a block array: only the in-situ session saves it "
                               "(its writer gathers the blocks of every rank first)",
                               e->name);
        rc = add_big(ck, "extra", e->name, e->dtype, e->scalar, e->count, e->data, 0, staged);
    }
    if (rc) return hpcti_error(ck->ctx, HPCT_ERR_NO_MEMORY, "cannot grow the checkpoint layout");
    return staged ? assign_staging(ck) : HPCT_SUCCESS;
}

/* The model description as a string item (count includes the terminating NUL). */
static hpct_status_t add_model_item(hpct_ckpt_t ck)
{
    if (hpcti_snap_add(&ck->snap, "meta", "model", HPCTI_CK_STR, 1, strlen(ck->snap.model) + 1,
                       ck->snap.model))
        return hpcti_error(ck->ctx, HPCT_ERR_NO_MEMORY, "cannot grow the checkpoint layout");
    return HPCT_SUCCESS;
}

/* Staged items: copy the caller's memory in (save) or out (load). A failed device copy is
 * returned (never a snapshot of stale device data saved as current). */
static hpct_status_t copy_staged(hpct_ckpt_t ck, int to_user)
{
    const struct hpcti_ops *ops = ck->ctx->ops;
    hpct_status_t s = HPCT_SUCCESS;
    for (int i = 0; i < ck->snap.num && !s; i++) {
        hpcti_ckitem_t *it = &ck->snap.items[i];
        if (!it->user) continue;
        size_t bytes = it->count * hpcti_ck_elsize(it->dtype);
        if (it->on_device)
            s = to_user ? ops->to_device(ck->ctx, it->user, it->data, bytes)
                        : ops->to_host(ck->ctx, it->data, it->user, bytes);
        else
            to_user ? memcpy(it->user, it->data, bytes) : memcpy(it->data, it->user, bytes);
    }
    return s;
}

/* ---- save ---------------------------------------------------------------------- */

/* The schema params' checkpoints have: 2 for a model with layers other than dense, whose own
 * description then goes into model [n] (what /meta/model holds and a resume compares); else 1
 * and model unchanged. */
static hpct_status_t schema_of(hpct_ckpt_t ck, hpct_params_t params, const char *fn, int *schema,
                               char *model, size_t n)
{
    *schema = 1;
    if (!params || !hpcti_model_layered(params->model)) return HPCT_SUCCESS;
    *schema = 2;
    if (!hpct_model_describe(params->model, model, n)) return HPCT_SUCCESS;
    return hpcti_error(ck->ctx, HPCT_ERR_INVALID_ARG,
                       "%s: the model's description is longer than the %zu bytes a checkpoint "
                       "keeps",
                       fn, n - 1);
}

static hpct_status_t check_state_args(hpct_ckpt_t ck, hpct_params_t params, hpct_optimizer_t opt,
                                      const void *meta, const char *fn, int *slots)
{
    if (!params || !meta)
        return hpcti_error(ck->ctx, HPCT_ERR_INVALID_ARG, "%s: %s is NULL", fn,
                           params ? "meta" : "params");
    if (params->ctx != ck->ctx)
        return hpcti_error(ck->ctx, HPCT_ERR_INVALID_ARG, "%s: params belong to another context",
                           fn);
    *slots = 0;
    if (opt && hpct_optimizer_state_slots(opt, slots)) return HPCT_ERR_INVALID_ARG;
    return HPCT_SUCCESS;
}

static void fill_scalars(hpct_ckpt_t ck, hpct_optimizer_t opt, int slots, const hpct_ckpt_meta_t *m)
{
    struct ck_scalars *v = &ck->sc;
    v->step = m->step;
    v->epoch = m->epoch;
    v->cursor_epoch = m->cursor_epoch;
    v->cursor_step = m->cursor_step;
    v->world_size = m->world_size;
    v->global_batch = m->global_batch;
    v->serial = ck->serial;
    v->config_hash = ck->cfg.config_hash;
    v->saved_at = wall_now();
    long opt_step = 0;
    if (opt) hpct_optimizer_get_step(opt, &opt_step);
    v->opt_step = opt_step;
    v->opt_slots = slots;
    v->steps_per_epoch = ck->run_spe;
    hpct_rng_get_state(ck->ctx, v->rng);
}

/* The scalars of ck as validate.c checks them; with_opt: the optimizer's are there. */
static hpcti_ck_values_t values_of(const struct ck_scalars *sc, int with_opt, int with_spe)
{
    hpcti_ck_values_t v = {.step = sc->step,
                           .epoch = sc->epoch,
                           .cursor_epoch = sc->cursor_epoch,
                           .cursor_step = sc->cursor_step,
                           .world_size = sc->world_size,
                           .global_batch = sc->global_batch,
                           .serial = sc->serial,
                           .steps_per_epoch = sc->steps_per_epoch,
                           .opt_step = sc->opt_step,
                           .opt_slots = sc->opt_slots,
                           .has_spe = with_spe,
                           .has_opt_step = with_opt,
                           .has_slots = with_opt,
                           .has_rng = 1,
                           .saved_at = sc->saved_at};
    memcpy(v.rng, sc->rng, sizeof v.rng);
    return v;
}

/* A checkpoint a load would refuse is never written: the values about to be saved pass the
 * checks of validate.c (ranges, optimizer step = step, cursor against the step). */
static hpct_status_t check_saved_values(hpct_ckpt_t ck, int with_opt)
{
    hpcti_ck_values_t v = values_of(&ck->sc, with_opt, ck->run_spe > 0);
    char why[700];
    const char *bad = hpcti_ck_values_problem(&v, NULL, why, sizeof why);
    if (!bad) return HPCT_SUCCESS;
    return hpcti_error(ck->ctx, HPCT_ERR_INVALID_ARG,
                       "hpct_ckpt_save: the checkpoint of step %lld would not load, so it is not "
                       "written: %s",
                       (long long)ck->sc.step, bad);
}

hpct_status_t hpct_ckpt_save(hpct_ckpt_t ck, hpct_params_t params, hpct_optimizer_t opt,
                             const hpct_ckpt_meta_t *meta)
{
    if (!ck) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(ck->ctx);
    int slots;
    hpct_status_t s = check_state_args(ck, params, opt, meta, "hpct_ckpt_save", &slots);
    if (s || (s = drain(ck))) return s;
    if (ck->serial < 0) {
        hpcti_ck_clean_stale(ck->d.dir);
        ck->serial = hpcti_ck_last_serial(ck->d.dir, ck->d.log_level);
    }
    int staged = ck->has_thread || ck->ctx->ops != &hpcti_cpu_ops;
    snprintf(ck->snap.model, sizeof ck->snap.model, "%s", meta->model ? meta->model : "");
    if ((s = schema_of(ck, params, "hpct_ckpt_save", &ck->snap.schema, ck->snap.model,
                       sizeof ck->snap.model)))
        return s;
    if ((s = build_layout(ck, params, opt, slots, staged, 1)) || (s = add_model_item(ck))) return s;
    ck->serial++;
    fill_scalars(ck, opt, slots, meta);
    if ((s = check_saved_values(ck, opt != NULL))) {
        ck->serial--; /* nothing was queued under this serial */
        return s;
    }
    ck->snap.step = meta->step;
    ck->snap.serial = ck->serial;
    ck->snap.keep = ck->cfg.keep_every > 0 && ck->serial % ck->cfg.keep_every == 0;
    ck->snap.protect = ck->protect; /* the writer thread reads the snapshot, never ck->protect */
    int defer = ck->has_thread && ck->cfg.defer_copy && ck->ctx->ops == &hpcti_cpu_ops;
    double t0 = hpcti_tl_now(ck->ctx);
    if (staged && !defer && (s = copy_staged(ck, 0))) {
        ck->serial--; /* nothing was queued under this serial */
        return s;
    }
    if (staged && !defer && t0 > 0)
        hpcti_tl_span(ck->ctx, 0, "ckpt_snapshot", "checkpoint", t0, hpcti_now(),
                      "\"ckpt_step\":%ld", meta->step);
    ck->last_saved_step = meta->step;
    ck->last_save = hpcti_now();
    if (!isnan(ck->job_end) && ck->job_end - wall_now() <= ck->cfg.walltime_margin)
        ck->walltime_saved = 1;
    if (ck->has_thread) {
        pthread_mutex_lock(&ck->mu);
        ck->pending = 1;
        ck->copy_pending = defer;
        pthread_cond_broadcast(&ck->cv);
        pthread_mutex_unlock(&ck->mu);
        return HPCT_SUCCESS;
    }
    hpcti_ckerr_t err = {0, ""};
    char path[HPCTI_CKPT_PATH_MAX];
    double times[3];
    if ((s = hpcti_ck_write(&ck->d, &ck->snap, path, &err, times)))
        return hpcti_error(ck->ctx, s, "%s", err.msg);
    trace_write(ck, 0, times, meta->step);
    snprintf(ck->last_path, sizeof ck->last_path, "%s", path);
    hpcti_log(ck->ctx, HPCT_LOG_INFO, "checkpoint of step %ld written to %s", meta->step, path);
    return HPCT_SUCCESS;
}

hpct_status_t hpct_ckpt_before_update(hpct_ckpt_t ck)
{
    if (!ck) return HPCT_ERR_INVALID_ARG;
    if (!ck->has_thread) return HPCT_SUCCESS;
    pthread_mutex_lock(&ck->mu);
    while (ck->copy_pending) pthread_cond_wait(&ck->cv, &ck->mu);
    pthread_mutex_unlock(&ck->mu);
    return HPCT_SUCCESS;
}

hpct_status_t hpct_ckpt_wait(hpct_ckpt_t ck)
{
    if (!ck) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(ck->ctx);
    return drain(ck);
}

hpct_status_t hpct_ckpt_last_path(hpct_ckpt_t ck, const char **path)
{
    if (!ck) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(ck->ctx);
    if (!path)
        return hpcti_error(ck->ctx, HPCT_ERR_INVALID_ARG, "hpct_ckpt_last_path: path is NULL");
    if (ck->has_thread) {
        pthread_mutex_lock(&ck->mu);
        if (!ck->pending && !ck->werr.status && ck->wpath[0])
            snprintf(ck->last_path, sizeof ck->last_path, "%s", ck->wpath);
        pthread_mutex_unlock(&ck->mu);
    }
    *path = ck->last_path;
    return HPCT_SUCCESS;
}

hpct_status_t hpct_ckpt_rejected(hpct_ckpt_t ck, const char **detail)
{
    if (!ck) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(ck->ctx);
    if (!detail)
        return hpcti_error(ck->ctx, HPCT_ERR_INVALID_ARG, "hpct_ckpt_rejected: detail is NULL");
    *detail = ck->rejected;
    return HPCT_SUCCESS;
}

/* ---- load ---------------------------------------------------------------------- */

static int item_by_path(const void *a, const void *b)
{
    return strcmp((*(hpcti_ckitem_t *const *)a)->path, (*(hpcti_ckitem_t *const *)b)->path);
}

/* ck->byname [snap.num]: the snapshot's items sorted by path, for the scan's sink. */
static hpct_status_t index_items(hpct_ckpt_t ck)
{
    free(ck->byname);
    size_t n = (size_t)ck->snap.num;
    ck->byname = hpcti_calloc(ck->ctx, n ? n : 1, sizeof *ck->byname, "the checkpoint layout");
    if (!ck->byname) return HPCT_ERR_NO_MEMORY;
    for (size_t i = 0; i < n; i++) ck->byname[i] = &ck->snap.items[i];
    qsort(ck->byname, n, sizeof *ck->byname, item_by_path);
    return HPCT_SUCCESS;
}

/* The item the run loads from dataset path, or NULL. */
static hpcti_ckitem_t *find_item(hpct_ckpt_t ck, const char *path)
{
    hpcti_ckitem_t key, *kp = &key;
    if (strlen(path) >= sizeof key.path) return NULL; /* longer than any item's path */
    snprintf(key.path, sizeof key.path, "%s", path);
    hpcti_ckitem_t **hit =
        bsearch(&kp, ck->byname, (size_t)ck->snap.num, sizeof *ck->byname, item_by_path);
    return hit ? *hit : NULL;
}

/* The scan's sink (scan.h): the buffer of the item called d->name when the dataset has the
 * item's element type and count; else NULL (match_items reports the difference). */
static void *item_sink(void *arg, const hpcti_ck_ds_t *d)
{
    hpcti_ckitem_t *it = find_item(arg, d->name);
    if (!it) return NULL;
    int dtype = it->dtype == HPCTI_CK_U64 ? HPCT_CKPT_U64 : it->dtype;
    return dtype == (int)d->dtype && d->count == it->count ? it->data : NULL;
}

/* Every dataset the run asks for was read into its item (else a settings mismatch,
 * HPCT_ERR_INVALID_ARG: the model, optimizer or extras differ); the model description into
 * the snapshot. */
static hpcti_read_t match_items(hpct_ckpt_t ck, const hpcti_ck_scan_t *scan, hpcti_ckerr_t *err)
{
    for (int i = 0; i < ck->snap.num; i++) {
        const hpcti_ckitem_t *it = &ck->snap.items[i];
        const hpcti_ck_ds_t *d = hpcti_ck_scan_find(scan, it->path);
        if (d && d->sunk == it->data) continue;
        if (!d)
            hpcti_ckerr_set(err, HPCT_ERR_INVALID_ARG,
                            "checkpoint %s has no dataset %s (the model, optimizer or extras "
                            "differ)",
                            scan->path, it->path);
        else
            hpcti_ckerr_set(err, HPCT_ERR_INVALID_ARG,
                            "checkpoint %s: dataset %s holds %zu elements of %zu bytes, this run "
                            "has %zu of %zu (the model, optimizer or extras differ)",
                            scan->path, it->path, d->count, d->elsize, it->count,
                            hpcti_ck_elsize(it->dtype));
        return HPCTI_READ_MISMATCH;
    }
    const hpcti_ck_ds_t *m = hpcti_ck_scan_find(scan, "meta/model"); /* validated: kept */
    snprintf(ck->snap.model, sizeof ck->snap.model, "%.*s", (int)m->count, (const char *)m->kept);
    if (scan->schema < 2 || ck->run_schema < 2 || !strcmp(ck->snap.model, ck->run_model))
        return HPCTI_READ_OK;
    /* Layers of other strides, padding or pooling can have parameters of the same sizes. */
    hpcti_ckerr_set(err, HPCT_ERR_INVALID_ARG,
                    "checkpoint %s was saved by the model \"%s\", this run's is \"%s\" (a "
                    "model with convolution, pooling or upsampling layers resumes only into the "
                    "same layers)",
                    scan->path, ck->snap.model, ck->run_model);
    return HPCTI_READ_MISMATCH;
}

/* The file's steps per epoch against the run's (hpcti_ckpt_set_run); a file without one
 * (written before 0.2) must have a data cursor that fits the run's. */
static hpcti_read_t match_epochs(hpct_ckpt_t ck, const hpcti_ck_scan_t *scan, hpcti_ckerr_t *err)
{
    const hpcti_ck_ds_t *d = hpcti_ck_scan_find(scan, "meta/steps_per_epoch"); /* validated */
    int64_t spe = 0;
    if (d) memcpy(&spe, d->kept, sizeof spe);
    if (!ck->run_spe || spe == ck->run_spe) return HPCTI_READ_OK;
    if (d) {
        hpcti_ckerr_set(err, HPCT_ERR_INVALID_ARG,
                        "checkpoint %s was saved with %lld steps per epoch "
                        "(meta/steps_per_epoch), this run has %ld (the training data or the "
                        "global batch differ): the sample order would differ",
                        scan->path, (long long)spe, ck->run_spe);
        return HPCTI_READ_MISMATCH;
    }
    hpcti_ck_values_t v = values_of(&ck->sc, 0, 1);
    v.steps_per_epoch = ck->run_spe;
    char why[700];
    const char *bad = hpcti_ck_values_problem(&v, NULL, why, sizeof why);
    if (!bad) return HPCTI_READ_OK;
    hpcti_ckerr_set(err, HPCT_ERR_INVALID_ARG,
                    "checkpoint %s has no meta/steps_per_epoch (written before 0.2) and its data "
                    "cursor does not fit this run's %ld steps per epoch (the training data "
                    "differ?): %s",
                    scan->path, ck->run_spe, bad);
    return HPCTI_READ_MISMATCH;
}

/* The file's scalars against this run's settings: the configuration hash (unless
 * allow_config_change), the optimizer's state slots, the global batch and the steps per
 * epoch. A difference is a settings mismatch (HPCT_ERR_INVALID_ARG: stop, nothing moved),
 * never a corrupt file. */
static hpcti_read_t match_settings(hpct_ckpt_t ck, const hpcti_ck_scan_t *scan, int slots,
                                   hpct_optimizer_t opt, hpcti_ckerr_t *err)
{
    const struct ck_scalars *v = &ck->sc;
    if (v->config_hash != ck->cfg.config_hash && !ck->cfg.allow_config_change)
        hpcti_ckerr_set(err, HPCT_ERR_INVALID_ARG,
                        "checkpoint %s was saved with training configuration hash %016llx, this "
                        "run has %016llx; set hpct_ckpt_config_t.allow_config_change to load it "
                        "(hpctrain train --allow-config-change, hpct_insitu_open's "
                        "HPCT_INSITU_ALLOW_SETTINGS_CHANGE)",
                        scan->path, (unsigned long long)v->config_hash,
                        (unsigned long long)ck->cfg.config_hash);
    else if (opt && v->opt_slots != slots)
        hpcti_ckerr_set(err, HPCT_ERR_INVALID_ARG,
                        "checkpoint %s: dataset optimizer/slots is %lld, this optimizer has %d "
                        "state slots",
                        scan->path, (long long)v->opt_slots, slots);
    else if (ck->run_batch && v->global_batch != ck->run_batch)
        hpcti_ckerr_set(err, HPCT_ERR_INVALID_ARG,
                        "checkpoint %s was saved with global batch %lld (meta/global_batch), this "
                        "run uses %ld: the sample order would differ",
                        scan->path, (long long)v->global_batch, ck->run_batch);
    else
        return match_epochs(ck, scan, err);
    return HPCTI_READ_MISMATCH;
}

/* Judge the checkpoint at path for this run (the one pass of scan.c, the validator of
 * validate.c, then the run's layout and settings): HPCTI_READ_OK with its state in the
 * items' buffers, CORRUPT (fall back to an older file) or MISMATCH (stop), err saying why. */
static hpcti_read_t judge_file(hpct_ckpt_t ck, const char *path, hpct_optimizer_t opt, int slots,
                               hpcti_ckerr_t *err)
{
    hpcti_ck_scan_t *scan = calloc(1, sizeof *scan);
    if (!scan) {
        hpcti_ckerr_set(err, HPCT_ERR_NO_MEMORY, "cannot allocate the scan of checkpoint %s", path);
        return HPCTI_READ_MISMATCH;
    }
    scan->sink = item_sink, scan->sink_arg = ck;
    snprintf(scan->path, sizeof scan->path, "%s", path);
    hpct_status_t s = hpcti_ck_scan(scan, err);
    hpcti_read_t r = s == HPCT_ERR_NO_MEMORY ? HPCTI_READ_MISMATCH /* not the file's fault */
                     : s                     ? HPCTI_READ_CORRUPT
                                             : hpcti_ck_validate(scan, err);
    if (r == HPCTI_READ_OK) r = match_items(ck, scan, err);
    if (r == HPCTI_READ_OK) r = match_settings(ck, scan, slots, opt, err);
    hpcti_ck_scan_free(scan);
    free(scan);
    return r;
}

/* Copy a verified file's state into the caller's objects and meta. */
static hpct_status_t apply_loaded(hpct_ckpt_t ck, const char *path, hpct_optimizer_t opt,
                                  hpct_ckpt_meta_t *m)
{
    hpct_status_t s = copy_staged(ck, 1);
    if (s) return s;
    hpct_rng_set_state(ck->ctx, ck->sc.rng);
    if (opt) hpct_optimizer_set_step(opt, (long)ck->sc.opt_step);
    snprintf(ck->loaded_path, sizeof ck->loaded_path, "%s", path);
    snprintf(ck->loaded_model, sizeof ck->loaded_model, "%s", ck->snap.model);
    m->step = (long)ck->sc.step;
    m->epoch = (long)ck->sc.epoch;
    m->cursor_epoch = (long)ck->sc.cursor_epoch;
    m->cursor_step = (long)ck->sc.cursor_step;
    m->world_size = (int)ck->sc.world_size;
    m->global_batch = (long)ck->sc.global_batch;
    m->config_hash = ck->sc.config_hash;
    m->saved_at = ck->sc.saved_at;
    m->model = ck->loaded_model;
    m->path = ck->loaded_path;
    return HPCT_SUCCESS;
}

/* A file that failed verification is never overwritten (a later save of the same step) or
 * deleted (retention): the writer rank moves it aside to NAME.rejected (NAME.rejected.K when
 * that exists) and appends where to msg [n]. Other ranks only skip it. */
static void set_aside(hpct_ckpt_t ck, const char *path, char *msg, size_t n)
{
    if (!hpcti_ckpt_is_writer(ck->ctx, ck->cfg.writer_rank)) return;
    char to[HPCTI_CKPT_PATH_MAX + 32];
    snprintf(to, sizeof to, "%s.rejected", path);
    struct stat st;
    for (int k = 1; k < 1000 && lstat(to, &st) == 0; k++)
        snprintf(to, sizeof to, "%s.rejected.%d", path, k);
    size_t len = strlen(msg);
    const char *base = strrchr(to, '/');
    if (rename(path, to) == 0)
        snprintf(msg + len, n - len, " (moved aside to %.200s)", base ? base + 1 : to);
    else if (errno != ENOENT)
        snprintf(msg + len, n - len, " (could not be moved aside: %s)", strerror(errno));
}

/* Try the files newest first; corrupt ones are skipped with a warning and set aside; a
 * settings mismatch stops the load (an older file would not fit either). */
static hpct_status_t load_first_valid(hpct_ckpt_t ck, char **names, int n, hpct_optimizer_t opt,
                                      int slots, hpct_ckpt_meta_t *meta)
{
    char reasons[1024] = "";
    meta->rejected = 0;
    for (int i = 0; i < n; i++) {
        char path[HPCTI_CKPT_PATH_MAX];
        hpcti_ck_join(path, ck->d.dir, names[i]);
        hpcti_ckerr_t err = {0, ""};
        hpcti_read_t r = judge_file(ck, path, opt, slots, &err);
        if (r == HPCTI_READ_MISMATCH) return hpcti_error(ck->ctx, err.status, "%s", err.msg);
        if (r == HPCTI_READ_OK) {
            hpct_status_t s = apply_loaded(ck, path, opt, meta);
            if (s) return s;
            snprintf(ck->rejected, sizeof ck->rejected, "%s", reasons);
            if (meta->rejected) /* success, but say why newer files were skipped */
                snprintf(ck->ctx->last_error, sizeof ck->ctx->last_error, "%s", reasons);
            hpcti_log(ck->ctx, HPCT_LOG_INFO, "resumed from %s (step %ld)", path, meta->step);
            return HPCT_SUCCESS;
        }
        meta->rejected++;
        set_aside(ck, path, err.msg, sizeof err.msg);
        hpcti_log(ck->ctx, HPCT_LOG_WARN, "rejected %s; falling back to the previous one", err.msg);
        if (strlen(reasons) + strlen(err.msg) + 3 < sizeof reasons) {
            if (reasons[0]) strcat(reasons, "; ");
            strcat(reasons, err.msg);
        }
    }
    snprintf(ck->rejected, sizeof ck->rejected, "%s", reasons);
    if (n == 0) return hpcti_error(ck->ctx, HPCT_ERR_NOT_FOUND, "no checkpoint in %s", ck->d.dir);
    /* every file failed: never a silent fresh start over a run's checkpoints */
    return hpcti_error(ck->ctx, HPCT_ERR_CHECKSUM,
                       "every checkpoint in %s failed verification, nothing was loaded: %s",
                       ck->d.dir, reasons);
}

hpct_status_t hpct_ckpt_load_latest(hpct_ckpt_t ck, hpct_params_t params, hpct_optimizer_t opt,
                                    hpct_ckpt_meta_t *meta)
{
    if (!ck) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(ck->ctx);
    int slots;
    hpct_status_t s = check_state_args(ck, params, opt, meta, "hpct_ckpt_load_latest", &slots);
    if (s || (s = drain(ck))) return s;
    ck->rejected[0] = '\0';
    if ((s = schema_of(ck, params, "hpct_ckpt_load_latest", &ck->run_schema, ck->run_model,
                       sizeof ck->run_model)) ||
        (s = build_layout(ck, params, opt, slots, 1, 0)) || (s = index_items(ck)))
        return s;
    char **names;
    int n;
    hpcti_ckerr_t err = {0, ""};
    if ((s = hpcti_ck_list(ck->d.dir, &names, &n, &err)))
        return hpcti_error(ck->ctx, s, "%s", err.msg);
    s = load_first_valid(ck, names, n, opt, slots, meta);
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    return s;
}
