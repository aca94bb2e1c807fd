/* bench_ckpt.c: checkpoints of about 100 MB (8 Mi fp32 parameters + AdamW's two moments),
 * in one run:
 *   1. synchronous hpct_ckpt_save against a raw write()+fsync() of the same bytes
 *      (target: checkpoint bandwidth >= 0.8x raw);
 *   2. asynchronous mode: the stall of hpct_ckpt_save at the step boundary against the
 *      synchronous save time (target <= 5%), with the snapshot copied at save and with
 *      defer_copy (the writer copies while the next step's forward/backward runs);
 *   3. SIGTERM to a training process -> durable checkpoint -> process exit (target <= 2 s).
 * Usage: bench/bench_ckpt [DIRECTORY]   (default $TMPDIR or /tmp; files are removed) */
#include <hpctrain.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "bench_util.h"

#define NBUFS   8
#define PER_BUF (1u << 20) /* floats per buffer: 8 Mi floats = 32 MiB of parameters */
#define REPS    5

typedef struct {
    hpct_ctx_t ctx;
    hpct_params_t params;
    hpct_optimizer_t opt;
    float *p[NBUFS], *g[NBUFS];
} model_t;

static void die(const char *what, hpct_ctx_t ctx)
{
    fprintf(stderr, "bench_ckpt: %s: %s\n", what, ctx ? hpct_last_error(ctx) : "");
    exit(1);
}

static void model_create(model_t *m)
{
    if (hpct_ctx_create(NULL, &m->ctx) || hpct_params_create(m->ctx, &m->params))
        die("setup", NULL);
    for (int i = 0; i < NBUFS; i++) {
        char name[32];
        snprintf(name, sizeof name, "block%d.weight", i);
        m->p[i] = malloc(PER_BUF * sizeof(float));
        m->g[i] = malloc(PER_BUF * sizeof(float));
        for (size_t j = 0; j < PER_BUF; j++) {
            m->p[i][j] = (float)((j * 2654435761u) % 1000) * 1e-3f;
            m->g[i][j] = (float)((j * 40503u) % 1000) * 1e-6f;
        }
        if (hpct_params_register(m->params, name, m->p[i], m->g[i], PER_BUF))
            die("register", m->ctx);
    }
    hpct_optim_config_t oc = HPCT_OPTIM_CONFIG_INITIALIZER;
    oc.kind = HPCT_OPT_ADAMW;
    if (hpct_optimizer_create(m->params, &oc, &m->opt)) die("optimizer", m->ctx);
    hpct_optimizer_step(m->opt); /* non-zero moments */
}

/* Total bytes a checkpoint holds (parameters and both moments). */
static size_t state_bytes(void)
{
    return (size_t)3 * NBUFS * PER_BUF * sizeof(float);
}

/* The raw baseline: the same buffers written to one file with write(), then fsync. */
static double raw_write(model_t *m, const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/raw.bin", dir);
    double t0 = now();
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    if (fd < 0) die("open raw file", NULL);
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < NBUFS; i++) {
            float *buf = m->p[i];
            size_t n;
            if (k) hpct_optimizer_state(m->opt, i, k - 1, &buf, &n);
            const char *c = (const char *)buf;
            size_t left = PER_BUF * sizeof(float);
            while (left) {
                ssize_t w = write(fd, c, left);
                if (w <= 0) die("raw write", NULL);
                c += w, left -= (size_t)w;
            }
        }
    if (fsync(fd)) die("raw fsync", NULL);
    close(fd);
    double t = now() - t0;
    unlink(path);
    return t;
}

/* async: 0 sync, 1 async (copy at save), 2 async with defer_copy. */
static hpct_ckpt_t open_ck(model_t *m, const char *dir, int async, int keep_last)
{
    hpct_ckpt_config_t c = HPCT_CKPT_CONFIG_INITIALIZER;
    c.directory = dir;
    c.keep_last = keep_last;
    c.async = async > 0;
    c.defer_copy = async == 2;
    hpct_ckpt_t ck;
    if (hpct_ckpt_open(m->ctx, &c, &ck)) die("open", m->ctx);
    return ck;
}

static double min_of(const double *x, int n)
{
    double best = x[0];
    for (int i = 1; i < n; i++) best = x[i] < best ? x[i] : best;
    return best;
}

/* Stand-in for the next step's forward and backward passes: reads gradients, leaves
 * parameters and optimizer state alone (2 passes over 32 MiB). */
static double next_step_work(model_t *m)
{
    double norm = 0, t0 = now();
    for (int k = 0; k < 2; k++) hpct_params_grad_norm(m->params, &norm);
    if (norm < 0) die("norm", m->ctx);
    return now() - t0;
}

/* defer_copy: stall = save() + hpct_ckpt_before_update() after the next step's work. */
static double deferred_stall(model_t *m, hpct_ckpt_t ck, long step, double *work)
{
    hpct_ckpt_meta_t meta = HPCT_CKPT_META_INITIALIZER;
    meta.step = step;
    hpct_optimizer_set_step(m->opt, step); /* a load refuses optimizer/step != meta/step */
    double t0 = now();
    if (hpct_ckpt_save(ck, m->params, m->opt, &meta)) die("deferred save", m->ctx);
    double stall = now() - t0;
    *work = next_step_work(m);
    t0 = now();
    hpct_ckpt_before_update(ck);
    stall += now() - t0;
    if (hpct_ckpt_wait(ck)) die("deferred wait", m->ctx);
    return stall;
}

/* Time one synchronous save into dir with the given retention. */
static double timed_sync_save(model_t *m, hpct_ckpt_t ck, long step)
{
    hpct_ckpt_meta_t meta = HPCT_CKPT_META_INITIALIZER;
    meta.step = step;
    hpct_optimizer_set_step(m->opt, step);
    double t0 = now();
    if (hpct_ckpt_save(ck, m->params, m->opt, &meta)) die("sync save", m->ctx);
    return now() - t0;
}

/* 1 and 2: raw, sync and async alternate REPS times; best of each is reported. The sync
 * saves go to a directory that keeps every file (the write alone) and to one with
 * keep_last 1 (the write plus retention's unlink of the previous 100 MB file). Every handle
 * has a directory of its own: hpct_ckpt_open locks its directory for one run, and a second
 * handle on it, in this process too, is refused (HPCT_ERR_BUSY). */
static void bench_write(model_t *m, const char *dir, double *sync_best)
{
    double raw[REPS], sync[REPS], sync_ret[REPS], stall[REPS], async_total[REPS];
    char keep_all[4200], keep_one[4200], async_dir[4200], defer_dir[4200];
    snprintf(keep_all, sizeof keep_all, "%s/all", dir);
    snprintf(keep_one, sizeof keep_one, "%s/one", dir);
    snprintf(async_dir, sizeof async_dir, "%s/async", dir);
    snprintf(defer_dir, sizeof defer_dir, "%s/defer", dir);
    hpct_ckpt_t cs = open_ck(m, keep_all, 0, 100), cr = open_ck(m, keep_one, 0, 1);
    hpct_ckpt_t ca = open_ck(m, async_dir, 1, 1), cd = open_ck(m, defer_dir, 2, 1);
    double dstall[REPS], work[REPS];
    hpct_ckpt_meta_t meta = HPCT_CKPT_META_INITIALIZER;
    sync_ret[0] = timed_sync_save(m, cr, 0); /* so that every timed save deletes one */
    for (int r = 0; r < REPS; r++) {
        raw[r] = raw_write(m, dir);
        sync[r] = timed_sync_save(m, cs, 10 * r + 1);
        sync_ret[r] = timed_sync_save(m, cr, 10 * r + 2);
        meta.step = 10 * r + 3;
        hpct_optimizer_set_step(m->opt, meta.step);
        double t0 = now();
        if (hpct_ckpt_save(ca, m->params, m->opt, &meta)) die("async save", m->ctx);
        stall[r] = now() - t0;
        if (hpct_ckpt_wait(ca)) die("async wait", m->ctx);
        async_total[r] = now() - t0;
        dstall[r] = deferred_stall(m, cd, 10 * r + 4, &work[r]);
    }
    hpct_ckpt_close(cd);
    hpct_ckpt_close(cs);
    hpct_ckpt_close(cr);
    hpct_ckpt_close(ca);
    double mb = state_bytes() / 1e6, rb = min_of(raw, REPS), sb = min_of(sync, REPS);
    double st = min_of(stall, REPS);
    printf("state: %.1f MB (%d buffers x %u floats, AdamW: params + 2 moments)\n", mb, NBUFS,
           PER_BUF);
    printf("raw write+fsync      : %7.1f ms  %7.1f MB/s   (best of %d)\n", rb * 1e3, mb / rb, REPS);
    printf("sync checkpoint      : %7.1f ms  %7.1f MB/s   ratio %.2fx raw (target >= 0.80)\n",
           sb * 1e3, mb / sb, rb / sb);
    double rt = min_of(sync_ret, REPS);
    printf("sync ckpt + retention: %7.1f ms  %7.1f MB/s   ratio %.2fx raw (unlinks the previous "
           "file)\n",
           rt * 1e3, mb / rt, rb / rt);
    printf("async stall at save  : %7.1f ms  = %.1f%% of the sync save (target <= 5%%); "
           "background write %.1f ms\n",
           st * 1e3, 100.0 * st / sb, min_of(async_total, REPS) * 1e3);
    double ds = min_of(dstall, REPS);
    printf("async, defer_copy    : %7.1f ms  = %.1f%% of the sync save (save + before_update "
           "after %.1f ms of next-step work)\n",
           ds * 1e3, 100.0 * ds / sb, min_of(work, REPS) * 1e3);
    *sync_best = sb;
}

/* 3: a training child saves and exits at the first step boundary after SIGTERM. */
static void trainer(const char *dir, int async, int ready_fd)
{
    model_t m;
    model_create(&m);
    hpct_signals_t h;
    hpct_ckpt_t ck = open_ck(&m, dir, async, 1);
    if (hpct_signals_install(m.ctx, NULL, 0, &h)) die("signals", m.ctx);
    if (write(ready_fd, "r", 1) != 1) _exit(3);
    for (long step = 1;; step++) {
        hpct_optimizer_step(m.opt); /* one AdamW step over 8 Mi parameters */
        int due = 0;
        hpct_ckpt_due(ck, step, &due);
        if (!(due & HPCT_CKPT_DUE_SIGNAL)) continue;
        hpct_ckpt_meta_t meta = HPCT_CKPT_META_INITIALIZER;
        meta.step = step;
        hpct_optimizer_set_step(m.opt, step);
        if (hpct_ckpt_save(ck, m.params, m.opt, &meta) || hpct_ckpt_close(ck)) _exit(4);
        _exit(75); /* preempted: the sbatch template requeues on this code */
    }
}

static void bench_sigterm(const char *dir, int async)
{
    int fds[2];
    if (pipe(fds)) die("pipe", NULL);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) trainer(dir, async, fds[1]);
    char r;
    if (read(fds[0], &r, 1) != 1) die("trainer start", NULL);
    struct timespec ts = {0, 300 * 1000 * 1000};
    nanosleep(&ts, NULL);
    double t0 = now();
    kill(pid, SIGTERM);
    int status;
    waitpid(pid, &status, 0);
    double t = now() - t0;
    close(fds[0]);
    close(fds[1]);
    printf(
        "SIGTERM -> durable checkpoint -> exit (%s): %7.1f ms, exit code %d (target <= 2000 ms)\n",
        async ? "async" : "sync ", t * 1e3, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

int main(int argc, char **argv)
{
    const char *base = argc > 1 ? argv[1] : (getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/hpct-bench-ckpt-%ld", base, (long)getpid());
    model_t m;
    model_create(&m);
    double sync_best;
    printf("bench_ckpt: directory %s\n", dir);
    bench_write(&m, dir, &sync_best);
    bench_sigterm(dir, 0);
    bench_sigterm(dir, 1);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) fprintf(stderr, "bench_ckpt: could not remove %s\n", dir);
    return 0;
}
