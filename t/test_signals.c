/* test_signals.c: preemption signals set the flag (raised, sent by another process, twice in
 * a row, during an asynchronous checkpoint write), the old handlers come back on uninstall,
 * a training process sent SIGTERM writes a durable checkpoint and exits cleanly, and a run
 * preempted after step k and resumed ends bit-identical to an uninterrupted one; handlers
 * installed before any context exists, and a signal caught before an install stays pending
 * through it. */
#include "config.h"
#include "lib/ckpt_util.h"

#include <signal.h>
#include <sys/wait.h>
#include <math.h>
#include <time.h>

#define EXIT_PREEMPTED 75 /* what the test "trainer" exits with after its checkpoint */

static volatile sig_atomic_t old_handler_calls;
static void old_handler(int signo)
{
    (void)signo;
    old_handler_calls++;
}

/* Poll the flag for up to 5 s (a signal from another process arrives asynchronously). */
static int wait_pending(int want_count)
{
    int count = 0;
    for (int i = 0; i < 500; i++) {
        hpct_signals_pending(NULL, &count);
        if (count >= want_count) return 1;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return 0;
}

static void test_flag(hpct_ctx_t ctx)
{
    hpct_signals_t h = NULL, h2 = NULL;
    tap_is_int(hpct_signals_install(ctx, NULL, 0, &h), HPCT_SUCCESS, "install SIGTERM+SIGUSR1");
    tap_is_int(hpct_signals_install(ctx, NULL, 0, &h2), HPCT_ERR_STATE,
               "a second install is refused");
    int signo = -1, count = -1;
    tap_ok(!hpct_signals_pending(&signo, &count) && signo == 0 && count == 0, "nothing pending");
    raise(SIGTERM);
    tap_ok(hpct_signals_pending(&signo, &count) && signo == SIGTERM && count == 1,
           "raise(SIGTERM) sets the flag and the process lives");
    raise(SIGTERM);
    raise(SIGUSR1);
    hpct_signals_pending(&signo, &count);
    tap_ok(signo == SIGTERM && count == 3, "twice more: the first signal is kept, count is 3");
    hpct_signals_clear();
    pid_t pid = fork();
    if (pid == 0) {
        kill(getppid(), SIGUSR1);
        _exit(0);
    }
    waitpid(pid, NULL, 0);
    tap_ok(wait_pending(1) && hpct_signals_pending(&signo, NULL) && signo == SIGUSR1,
           "SIGUSR1 from another process sets the flag");
    hpct_signals_clear();
    hpct_signals_uninstall(h);
}

static void test_restore(hpct_ctx_t ctx)
{
    struct sigaction sa, cur;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = old_handler;
    sigaction(SIGUSR2, &sa, NULL);
    int mine[] = {SIGUSR2};
    hpct_signals_t h = NULL;
    hpct_signals_install(ctx, mine, 1, &h);
    raise(SIGUSR2);
    tap_ok(hpct_signals_pending(NULL, NULL) && old_handler_calls == 0,
           "a configured list (SIGUSR2) is caught by the library");
    hpct_signals_clear(); /* nothing pending: uninstall restores the old handler */
    hpct_signals_uninstall(h);
    raise(SIGUSR2);
    sigaction(SIGUSR2, NULL, &cur);
    tap_ok(old_handler_calls == 1 && !hpct_signals_pending(NULL, NULL) &&
               cur.sa_handler == old_handler,
           "uninstall restores the previous handler");
    int bad[] = {SIGKILL};
    tap_is_int(hpct_signals_install(ctx, bad, 1, &h), HPCT_ERR_INVALID_ARG, "SIGKILL is refused");
}

/* A program installs the handlers before hpct_init (no context yet: issue 37 (6)); a signal
 * caught then survives uninstall and a later install (the in-situ session's), so the first
 * step boundary still sees it. */
static void test_before_init(void)
{
    hpct_signals_t h = NULL, again = NULL;
    tap_is_int(hpct_signals_install(NULL, NULL, 0, &h), HPCT_SUCCESS,
               "install with a NULL context (before hpct_init)");
    raise(SIGTERM);
    hpct_signals_uninstall(h); /* pending: the signals are now ignored, not reset */
    int signo = 0, ok = hpct_signals_install(NULL, NULL, 0, &again) == HPCT_SUCCESS;
    tap_ok(ok && hpct_signals_pending(&signo, NULL) && signo == SIGTERM,
           "a SIGTERM caught before an install is still pending after it");
    hpct_signals_clear();
    hpct_signals_uninstall(again); /* back to what the first uninstall left: ignored */
    signal(SIGTERM, SIG_DFL);
    signal(SIGUSR1, SIG_DFL);
}

/* In a child: install, optionally catch one SIGTERM, uninstall, then SIGTERM again. Its wait
 * status: exit 0 when the second signal was survived. */
static int late_sigterm(hpct_ctx_t ctx, int caught_first)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) tap_bail("fork failed");
    if (pid == 0) {
        hpct_signals_t h = NULL;
        if (hpct_signals_install(ctx, NULL, 0, &h)) _exit(3);
        if (caught_first) raise(SIGTERM);
        hpct_signals_uninstall(h);
        raise(SIGTERM);
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return status;
}

/* A process that caught a preemption and is shutting down survives a second SIGTERM after
 * uninstall (it used to die of it: exit 143 instead of 75, its buffered output lost); one
 * that caught none gets its old (default) disposition back. */
static void test_late_signal(hpct_ctx_t ctx)
{
    int st = late_sigterm(ctx, 1);
    tap_ok(WIFEXITED(st) && WEXITSTATUS(st) == 0,
           "after a caught SIGTERM, uninstall ignores a second one (the shutdown goes on)");
    st = late_sigterm(ctx, 0);
    tap_ok(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM,
           "with nothing caught, uninstall restores the default: SIGTERM terminates");
}

/* Signals while the background writer works: the write completes and loads intact. */
static void test_async_write(const char *base)
{
    size_t counts[] = {2u << 20, 1u << 20}; /* 12 MiB with the optimizer slot */
    state_t a, got;
    st_create(&a, 2, counts, HPCT_OPT_SGD);
    st_create(&got, 2, counts, HPCT_OPT_SGD);
    st_fill(&a, 4, 2);
    char dir[512];
    snprintf(dir, sizeof dir, "%s/async", base);
    hpct_signals_t h = NULL;
    hpct_signals_install(a.ctx, NULL, 0, &h);
    hpct_ckpt_config_t c = HPCT_CKPT_CONFIG_INITIALIZER;
    c.directory = dir;
    c.async = 1;
    hpct_ckpt_t ck = NULL;
    hpct_ckpt_open(a.ctx, &c, &ck);
    hpct_ckpt_meta_t m = HPCT_CKPT_META_INITIALIZER;
    m.step = 9;
    hpct_optimizer_set_step(a.opt, 9); /* a load refuses optimizer/step != meta/step */
    hpct_status_t s = hpct_ckpt_save(ck, a.params, a.opt, &m);
    pid_t pid = fork();
    if (pid == 0) {
        kill(getppid(), SIGTERM);
        kill(getppid(), SIGTERM);
        _exit(0);
    }
    raise(SIGUSR1);
    waitpid(pid, NULL, 0);
    int due = 0;
    hpct_ckpt_due(ck, 9, &due);
    if (!s) s = hpct_ckpt_wait(ck);
    int signo = 0;
    hpct_signals_pending(&signo, NULL);
    tap_ok(s == HPCT_SUCCESS && signo != 0 && (due & HPCT_CKPT_DUE_SIGNAL),
           "signals during an async write: flag set, hpct_ckpt_due says SIGNAL, write succeeds");
    hpct_ckpt_close(ck);
    hpct_signals_uninstall(h);
    hpct_signals_clear();
    c.async = 0;
    hpct_ckpt_open(got.ctx, &c, &ck);
    s = hpct_ckpt_load_latest(ck, got.params, got.opt, &m);
    tap_ok(s == HPCT_SUCCESS && m.step == 9 && st_equal(&got, &a),
           "the checkpoint written under signals loads bit-identically");
    hpct_ckpt_close(ck);
    st_destroy(&a);
    st_destroy(&got);
}

/* A "trainer": steps until the flag is set, then saves, waits, exits EXIT_PREEMPTED. */
static void trainer(const char *dir, int async, int ready_fd)
{
    size_t counts[] = {100000, 1000};
    state_t a;
    st_create(&a, 2, counts, HPCT_OPT_ADAMW);
    st_fill(&a, 6, 1);
    hpct_optimizer_set_step(a.opt, 0); /* optimizer step == loop step */
    hpct_signals_t h = NULL;
    hpct_ckpt_config_t c = HPCT_CKPT_CONFIG_INITIALIZER;
    c.directory = dir;
    c.async = async;
    c.every_steps = 50;
    hpct_ckpt_t ck = NULL;
    if (hpct_signals_install(a.ctx, NULL, 0, &h) || hpct_ckpt_open(a.ctx, &c, &ck)) _exit(3);
    if (write(ready_fd, "r", 1) != 1) _exit(3);
    for (long step = 1; step < 100000000; step++) {
        hpct_optimizer_step(a.opt); /* the "training" */
        int due = 0;
        hpct_ckpt_due(ck, step, &due);
        if (!due) continue;
        hpct_ckpt_meta_t m = HPCT_CKPT_META_INITIALIZER;
        m.step = step;
        if (hpct_ckpt_save(ck, a.params, a.opt, &m)) _exit(4);
        if (due & HPCT_CKPT_DUE_SIGNAL) {
            _exit(hpct_ckpt_close(ck) == HPCT_SUCCESS ? EXIT_PREEMPTED : 5);
        }
    }
    _exit(6);
}

static void test_preempted_process(const char *base, int async, int twice)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/trainer%d%d", base, async, twice);
    int fds[2];
    if (pipe(fds)) tap_bail("pipe failed");
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) trainer(dir, async, fds[1]);
    char r;
    if (read(fds[0], &r, 1) != 1) tap_bail("the trainer did not start");
    close(fds[0]);
    close(fds[1]);
    struct timespec ts = {0, 150 * 1000 * 1000}; /* let it train and save a few times */
    nanosleep(&ts, NULL);
    kill(pid, SIGTERM);
    if (twice) kill(pid, SIGTERM);
    int status = 0;
    waitpid(pid, &status, 0);
    state_t got;
    size_t counts[] = {100000, 1000};
    st_create(&got, 2, counts, HPCT_OPT_ADAMW);
    hpct_ckpt_config_t c = HPCT_CKPT_CONFIG_INITIALIZER;
    c.directory = dir;
    hpct_ckpt_t ck = NULL;
    hpct_ckpt_open(got.ctx, &c, &ck);
    hpct_ckpt_meta_t m = HPCT_CKPT_META_INITIALIZER;
    hpct_status_t s = hpct_ckpt_load_latest(ck, got.params, got.opt, &m);
    long opt_step = -1;
    hpct_optimizer_get_step(got.opt, &opt_step);
    tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == EXIT_PREEMPTED && s == HPCT_SUCCESS &&
               opt_step == m.step,
           "%s trainer sent SIGTERM%s: exit %d, checkpoint of its last step (%ld) loads",
           async ? "async" : "sync", twice ? " twice" : "",
           WIFEXITED(status) ? WEXITSTATUS(status) : -1, m.step);
    hpct_ckpt_close(ck);
    st_destroy(&got);
}

/* ---- exact resume: SIGTERM at step >= k, resume, same final state as without it ---- */

#define RESUME_STEPS 300
static const size_t resume_counts[] = {20000, 300};

/* Deterministic "gradients" from the parameters and the step (what data at that step gives). */
static void fake_grads(state_t *st, long step)
{
    for (int i = 0; i < st->nbufs; i++)
        for (size_t j = 0; j < st->counts[i]; j++)
            st->g[i][j] = sinf(3.0f * st->p[i][j] + 0.01f * (float)step) * 0.1f;
}

static void resume_state(state_t *st)
{
    size_t n[] = {resume_counts[0], resume_counts[1]};
    memset(st, 0, sizeof *st);
    hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
    hpct_ctx_create(&cfg, &st->ctx);
    hpct_params_create(st->ctx, &st->params);
    st->nbufs = 2;
    for (int i = 0; i < 2; i++) {
        st->counts[i] = n[i];
        st->p[i] = calloc(n[i], sizeof(float));
        st->g[i] = calloc(n[i], sizeof(float));
        for (size_t j = 0; j < n[i]; j++) st->p[i][j] = (float)((j * 7919) % 1000) * 1e-3f - 0.5f;
        hpct_params_register(st->params, i ? "b" : "w", st->p[i], st->g[i], n[i]);
    }
    hpct_optim_config_t oc = HPCT_OPTIM_CONFIG_INITIALIZER;
    oc.kind = HPCT_OPT_ADAMW;
    oc.lr = 0.01f;
    oc.weight_decay = 0.01f;
    oc.schedule = HPCT_SCHED_COSINE;
    oc.warmup_steps = 20;
    oc.total_steps = RESUME_STEPS;
    hpct_optimizer_create(st->params, &oc, &st->opt);
}

/* Train from step `from` to RESUME_STEPS; with ck, stop after a signal (returns the step). */
static long train(state_t *st, long from, hpct_ckpt_t ck, int report_fd, long report_at)
{
    for (long step = from; step < RESUME_STEPS; step++) {
        fake_grads(st, step);
        hpct_optimizer_step(st->opt);
        long done = step + 1;
        if (done == report_at && write(report_fd, "k", 1) != 1) _exit(7);
        /* wait (at most 30 s) for the parent's SIGTERM, so that a busy machine cannot let this
         * child run to the end before the signal comes (a flake seen under load) */
        for (int ms = 0; done == report_at && !hpct_signals_pending(NULL, NULL) && ms < 30000; ms++)
            usleep(1000);
        int due = 0;
        if (!ck || hpct_ckpt_due(ck, done, &due) || !due) continue;
        hpct_ckpt_meta_t m = HPCT_CKPT_META_INITIALIZER;
        m.step = done;
        if (hpct_ckpt_save(ck, st->params, st->opt, &m)) _exit(4);
        if (due & HPCT_CKPT_DUE_SIGNAL) return done;
    }
    return RESUME_STEPS;
}

static void test_exact_resume(const char *base, long k)
{
    state_t ref, run;
    resume_state(&ref);
    train(&ref, 0, NULL, -1, -1);
    char dir[512];
    snprintf(dir, sizeof dir, "%s/resume%ld", base, k);
    int fds[2];
    if (pipe(fds)) tap_bail("pipe failed");
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        state_t st;
        resume_state(&st);
        hpct_signals_t h;
        hpct_ckpt_config_t c = HPCT_CKPT_CONFIG_INITIALIZER;
        c.directory = dir;
        c.async = 1;
        c.every_steps = 37;
        hpct_ckpt_t ck;
        if (hpct_signals_install(st.ctx, NULL, 0, &h) || hpct_ckpt_open(st.ctx, &c, &ck)) _exit(3);
        long stopped = train(&st, 0, ck, fds[1], k);
        _exit(hpct_ckpt_close(ck) ? 5 : stopped < RESUME_STEPS ? EXIT_PREEMPTED : 0);
    }
    char r;
    if (read(fds[0], &r, 1) == 1) kill(pid, SIGTERM);
    int status = 0;
    waitpid(pid, &status, 0);
    close(fds[0]);
    close(fds[1]);
    resume_state(&run);
    hpct_ckpt_config_t c = HPCT_CKPT_CONFIG_INITIALIZER;
    c.directory = dir;
    hpct_ckpt_t ck;
    hpct_ckpt_open(run.ctx, &c, &ck);
    hpct_ckpt_meta_t m = HPCT_CKPT_META_INITIALIZER;
    hpct_status_t s = hpct_ckpt_load_latest(ck, run.params, run.opt, &m);
    hpct_ckpt_close(ck);
    if (!s) train(&run, m.step, NULL, -1, -1);
    tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == EXIT_PREEMPTED && !s && m.step >= k &&
               m.step < RESUME_STEPS && st_equal(&run, &ref),
           "SIGTERM after step %ld, saved at %ld, resumed: final AdamW state bit-identical to the "
           "uninterrupted run",
           k, m.step);
    st_destroy(&ref);
    st_destroy(&run);
}

int main(void)
{
    tap_plan(19);
    alarm(120);
    hpct_ctx_t ctx;
    hpct_ctx_create(NULL, &ctx);
    char base[256];
    make_tmpdir(base, sizeof base, "cksig");
    test_flag(ctx);
    test_restore(ctx);
    test_before_init();
    test_late_signal(ctx);
    test_async_write(base);
    test_preempted_process(base, 0, 0);
    test_preempted_process(base, 1, 1);
    test_exact_resume(base, 38); /* just after the async save of step 37 started */
    test_exact_resume(base, 150);
    hpct_ctx_destroy(ctx);
    remove_tree(base);
    return tap_done();
}
