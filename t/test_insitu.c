/* test_insitu.c: the in-situ session in one process (no distributed runtime): a step through
 * hpct_insitu_step (built-in model) or hpct_insitu_step_grads (own gradients) gives the same
 * bits as the plain calls; argument errors are named; a non-finite input changes nothing;
 * progress reports; a raised SIGTERM stops after its step with a checkpoint that a new
 * session resumes (parameters, optimizer and a registered simulation array); signals the
 * caller installed are used as they are; evaluation on a cadence (config version 3); a
 * non-finite gradient is refused with nothing changed; a finished session takes no step and
 * no second finish (issue 37 (8)). */
#include "lib/ckpt_util.h"

#include <math.h>
#include <signal.h>

#define FEATURES 12
#define CLASSES  3
#define MAXB     8

/* x [n, FEATURES] in [-1, 1), labels [n] from a fixed rule; xorshift from seed. */
static void make_batch(float *x, int32_t *y, int n, uint64_t seed)
{
    uint64_t s = seed * 0x9e3779b97f4a7c15ULL + 7;
    for (int i = 0; i < n * FEATURES; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        x[i] = (float)((double)(s >> 11) * 0x1.0p-52 - 1.0);
    }
    for (int i = 0; i < n; i++) y[i] = (x[i * FEATURES] > 0) + (x[i * FEATURES + 1] > 0.5f);
}

static hpct_ctx_t new_ctx(void)
{
    hpct_config_t c = HPCT_CONFIG_INITIALIZER;
    c.seed = 9;
    hpct_ctx_t ctx;
    if (hpct_ctx_create(&c, &ctx)) tap_bail("cannot create a context");
    return ctx;
}

static hpct_model_t new_model(hpct_ctx_t ctx)
{
    hpct_model_t m;
    if (hpct_model_create(ctx, FEATURES, &m) ||
        hpct_model_add_dense(m, 16, HPCT_ACT_TANH, HPCT_INIT_AUTO) ||
        hpct_model_add_dense(m, CLASSES, HPCT_ACT_IDENTITY, HPCT_INIT_AUTO) ||
        hpct_model_build(m, MAXB))
        tap_bail("cannot build the model: %s", hpct_last_error(ctx));
    return m;
}

static hpct_optimizer_t new_opt(hpct_params_t p)
{
    hpct_optim_config_t oc = HPCT_OPTIM_CONFIG_INITIALIZER;
    oc.kind = HPCT_OPT_ADAMW;
    oc.lr = 0.01f;
    oc.weight_decay = 0.01f;
    hpct_optimizer_t o;
    if (hpct_optimizer_create(p, &oc, &o)) tap_bail("cannot create the optimizer");
    return o;
}

/* A model on ctx, its parameter set in *p and an optimizer over it in *o. */
static hpct_model_t new_trainable(hpct_ctx_t ctx, hpct_params_t *p, hpct_optimizer_t *o)
{
    hpct_model_t m = new_model(ctx);
    hpct_model_params(m, p);
    *o = new_opt(*p);
    return m;
}

/* 1 when both sets hold the same parameter bits. */
static int same_params(hpct_params_t a, hpct_params_t b)
{
    int na, nb;
    hpct_params_size(a, &na, NULL);
    hpct_params_size(b, &nb, NULL);
    for (int i = 0; i < na && na == nb; i++) {
        float *pa, *pb;
        size_t ca, cb;
        hpct_params_get(a, i, NULL, &pa, NULL, &ca);
        hpct_params_get(b, i, NULL, &pb, NULL, &cb);
        if (ca != cb || memcmp(pa, pb, ca * sizeof *pa)) return 0;
    }
    return na == nb;
}

/* A one-model session with defaults but for ck and signals. */
static hpct_insitu_t new_session(hpct_model_t m, hpct_optimizer_t o, hpct_ckpt_t ck, int sig)
{
    hpct_insitu_config_t c = HPCT_INSITU_CONFIG_INITIALIZER;
    c.catch_signals = sig;
    hpct_insitu_t s;
    if (hpct_insitu_create(m, NULL, o, ck, &c, &s)) tap_bail("cannot create a session");
    return s;
}

/* 30 steps of batches 1..8 through the session and through the plain calls. */
static void test_same_bits(void)
{
    hpct_ctx_t ca = new_ctx(), cb = new_ctx();
    hpct_params_t pa, pb;
    hpct_optimizer_t oa, ob;
    hpct_model_t ma = new_trainable(ca, &pa, &oa), mb = new_trainable(cb, &pb, &ob);
    hpct_insitu_t s = new_session(ma, oa, NULL, 0);
    long step = -1;
    tap_ok(hpct_insitu_start(s, &step) == HPCT_SUCCESS && step == 0,
           "start without a checkpoint: step 0");
    float x[MAXB * FEATURES];
    int32_t y[MAXB];
    int bad = 0, loss_differs = 0;
    for (int k = 0; k < 30; k++) {
        int b = 1 + k % MAXB;
        make_batch(x, y, b, (uint64_t)k);
        float la = NAN, lb = NAN;
        bad += hpct_insitu_step(s, x, y, b, &la) != HPCT_SUCCESS;
        bad += hpct_model_loss_grad(mb, x, y, b, 0, &lb) != HPCT_SUCCESS;
        bad += hpct_optimizer_step(ob) != HPCT_SUCCESS;
        loss_differs += memcmp(&la, &lb, sizeof la) != 0;
    }
    tap_ok(bad == 0 && same_params(pa, pb),
           "30 steps (batches 1..8) through hpct_insitu_step: parameters bit-identical to "
           "hpct_model_loss_grad + hpct_optimizer_step (%d failed calls)",
           bad);
    tap_is_int(loss_differs, 0, "the loss it returns is the model's batch loss, bit for bit");
    hpct_progress_t p;
    memset(&p, 0, sizeof p);
    hpct_status_t st = hpct_insitu_progress(s, &p);
    tap_ok(st == HPCT_SUCCESS && p.step == 30, "progress counts 30 steps (got %ld)", p.step);
    hpct_insitu_destroy(s);
    hpct_optimizer_destroy(oa), hpct_optimizer_destroy(ob);
    hpct_model_destroy(ma), hpct_model_destroy(mb);
    hpct_ctx_destroy(ca), hpct_ctx_destroy(cb);
}

/* Own gradients: g = w - t (a quadratic), through hpct_insitu_step_grads and directly. */
static void test_byog(void)
{
    enum { N = 37 };
    hpct_ctx_t ctx = new_ctx();
    float wa[N], ga[N], wb[N], gb[N];
    for (int i = 0; i < N; i++) wa[i] = wb[i] = (float)i / N;
    hpct_params_t pa, pb;
    hpct_params_create(ctx, &pa);
    hpct_params_create(ctx, &pb);
    hpct_params_register(pa, "field/w", wa, ga, N);
    hpct_params_register(pb, "field/w", wb, gb, N);
    hpct_optimizer_t oa = new_opt(pa), ob = new_opt(pb);
    hpct_insitu_t s;
    hpct_insitu_config_t c = HPCT_INSITU_CONFIG_INITIALIZER;
    c.catch_signals = 0;
    tap_is_int(hpct_insitu_create(NULL, pa, oa, NULL, &c, &s), HPCT_SUCCESS,
               "a session over a bring-your-own-gradients set");
    hpct_insitu_start(s, NULL);
    int bad = 0;
    for (int k = 0; k < 20; k++) {
        for (int i = 0; i < N; i++) ga[i] = wa[i] - 0.25f * (float)(i % 5), gb[i] = ga[i];
        float l = NAN;
        bad += hpct_insitu_step_grads(s, 4, 0.5f * (float)k, &l) != HPCT_SUCCESS || l != 0.5f * k;
        bad += hpct_optimizer_step(ob) != HPCT_SUCCESS;
    }
    tap_ok(bad == 0 && memcmp(wa, wb, sizeof wa) == 0,
           "20 steps through hpct_insitu_step_grads: bit-identical to hpct_optimizer_step, "
           "loss passed through (%d failures)",
           bad);
    float l;
    hpct_status_t st = hpct_insitu_step_grads(s, 0, 0.0f, &l);
    tap_ok(st == HPCT_ERR_INVALID_ARG && strstr(hpct_last_error(ctx), "local_batch is 0 on all"),
           "local_batch 0 on every rank is an error: %s", hpct_last_error(ctx));
    st = hpct_insitu_step_grads(s, 3, NAN, &l);
    tap_ok(st == HPCT_ERR_NONFINITE && strstr(hpct_last_error(ctx), "local_loss is nan"),
           "a NaN local loss is refused: %s", hpct_last_error(ctx));
    st = hpct_insitu_step(s, wa, ga, 1, &l);
    tap_ok(st == HPCT_ERR_STATE && strstr(hpct_last_error(ctx), "hpct_insitu_step_grads"),
           "hpct_insitu_step without a model points to step_grads: %s", hpct_last_error(ctx));
    hpct_insitu_destroy(s);
    hpct_optimizer_destroy(oa), hpct_optimizer_destroy(ob);
    hpct_params_destroy(pa), hpct_params_destroy(pb);
    hpct_ctx_destroy(ctx);
}

static void expect_error(hpct_status_t got, hpct_status_t want, hpct_ctx_t ctx, const char *needle,
                         const char *what)
{
    const char *msg = hpct_last_error(ctx);
    tap_ok(got == want && strstr(msg, needle), "%s: status %d (want %d), \"%s\"", what, got, want,
           msg);
}

/* A bring-your-own-gradients set "field/w" over w, g [n] (w = i / n), SGD with momentum,
 * clipping at clip (0: none), and a started session over it without checkpoints. */
static hpct_insitu_t byog_session(hpct_ctx_t ctx, float *w, float *g, int n, float clip,
                                  hpct_params_t *p, hpct_optimizer_t *o)
{
    for (int i = 0; i < n; i++) w[i] = (float)i / (float)n, g[i] = 0.0f;
    hpct_optim_config_t oc = HPCT_OPTIM_CONFIG_INITIALIZER;
    oc.lr = 0.1f, oc.momentum = 0.9f, oc.clip_norm = clip;
    hpct_insitu_config_t c = HPCT_INSITU_CONFIG_INITIALIZER;
    c.catch_signals = 0;
    hpct_insitu_t s;
    if (hpct_params_create(ctx, p) || hpct_params_register(*p, "field/w", w, g, (size_t)n) ||
        hpct_optimizer_create(*p, &oc, o) || hpct_insitu_create(NULL, *p, *o, NULL, &c, &s) ||
        hpct_insitu_start(s, NULL))
        tap_bail("cannot start a byog session: %s", hpct_last_error(ctx));
    return s;
}

/* Gradients g [n] of the quadratic 0.5 |w - 0.25|^2. */
static void quadratic(const float *w, float *g, int n)
{
    for (int i = 0; i < n; i++) g[i] = w[i] - 0.25f;
}

/* An Inf, then a NaN, in one gradient: refused with HPCT_ERR_NONFINITE naming the buffer (or
 * the norm, when the optimizer clips), parameters, optimizer and step count unchanged; the
 * next finite step trains. Used to apply them silently (w became -inf, then NaN). */
static void test_nonfinite_grads(float clip)
{
    enum { N = 37 };
    hpct_ctx_t ctx = new_ctx();
    float w[N], g[N], before[N];
    hpct_params_t p;
    hpct_optimizer_t o;
    hpct_insitu_t s = byog_session(ctx, w, g, N, clip, &p, &o);
    quadratic(w, g, N);
    int ok = hpct_insitu_step_grads(s, 4, 1.0f, NULL) == HPCT_SUCCESS;
    memcpy(before, w, sizeof w);
    const char *needle = clip > 0 ? "gradient norm is inf" : "averaged gradient of 'field/w'";
    const float spoil[2] = {-INFINITY, NAN};
    for (int k = 0; k < 2; k++) {
        quadratic(w, g, N);
        g[11] = spoil[k];
        ok &= hpct_insitu_step_grads(s, 4, 1.0f, NULL) == HPCT_ERR_NONFINITE;
        ok &= strstr(hpct_last_error(ctx), clip > 0 && k ? "gradient norm is nan" : needle) != 0;
        tap_diag("%s", hpct_last_error(ctx));
    }
    long step = -1;
    hpct_progress_t pr;
    hpct_optimizer_get_step(o, &step);
    hpct_insitu_progress(s, &pr);
    tap_ok(ok && memcmp(before, w, sizeof w) == 0 && step == 1 && pr.step == 1,
           "clip_norm %g: an -Inf and a NaN gradient are refused with HPCT_ERR_NONFINITE naming "
           "%s; parameters, optimizer step (%ld) and step count (%ld) unchanged",
           (double)clip, clip > 0 ? "the norm" : "the buffer", step, pr.step);
    quadratic(w, g, N);
    ok = hpct_insitu_step_grads(s, 4, 1.0f, NULL) == HPCT_SUCCESS;
    int finite = 1;
    for (int i = 0; i < N; i++) finite &= isfinite(w[i]) != 0;
    tap_ok(ok && finite && memcmp(before, w, sizeof w) != 0,
           "clip_norm %g: the next finite step trains", (double)clip);
    hpct_insitu_destroy(s);
    hpct_optimizer_destroy(o);
    hpct_params_destroy(p);
    hpct_ctx_destroy(ctx);
}

/* After hpct_insitu_finish a step is refused and changes nothing, and so is a second finish;
 * both used to succeed (the step trained past the session's final checkpoint). */
static void test_finish(void)
{
    enum { N = 19 };
    hpct_ctx_t ctx = new_ctx();
    float w[N], g[N], before[N];
    hpct_params_t p;
    hpct_optimizer_t o;
    hpct_insitu_t s = byog_session(ctx, w, g, N, 0.0f, &p, &o);
    quadratic(w, g, N);
    hpct_insitu_step_grads(s, 4, 1.0f, NULL);
    tap_is_int(hpct_insitu_finish(s), HPCT_SUCCESS, "finish after one step");
    memcpy(before, w, sizeof w);
    quadratic(w, g, N);
    expect_error(hpct_insitu_step_grads(s, 4, 1.0f, NULL), HPCT_ERR_STATE, ctx,
                 "the session is finished (hpct_insitu_finish after step 1)",
                 "a step after finish is refused");
    tap_ok(memcmp(before, w, sizeof w) == 0, "and the parameters are unchanged");
    expect_error(hpct_insitu_finish(s), HPCT_ERR_STATE, ctx,
                 "hpct_insitu_finish: the session is already finished (after step 1",
                 "a second finish is refused");
    hpct_insitu_destroy(s);
    hpct_optimizer_destroy(o);
    hpct_params_destroy(p);
    hpct_ctx_destroy(ctx);
}

/* The divergence guard (hpct_insitu_config_t version 4, factor 2, 2 reports), checkpoints
 * on every step: a loss of 1 for 5 steps, then 100 twice. The first 100 is above the limit:
 * no cadence save of that state; the second stops the session with HPCT_ERR_LOSS_DIVERGED,
 * naming the step and the last good checkpoint (4: step 6's loss measured the state saved
 * at 5); a step after it is refused, and finish saves nothing of that state. */
static void test_divergence(void)
{
    enum { N = 5 };
    char dir[] = "/tmp/hpct-insitu-guard-XXXXXX", path[96];
    if (!mkdtemp(dir)) tap_bail("mkdtemp failed");
    hpct_ctx_t ctx = new_ctx();
    float w[N] = {0}, g[N] = {0};
    hpct_params_t p;
    hpct_optimizer_t o;
    hpct_optim_config_t oc = HPCT_OPTIM_CONFIG_INITIALIZER;
    hpct_ckpt_config_t cc = HPCT_CKPT_CONFIG_INITIALIZER;
    cc.directory = dir, cc.every_steps = 1, cc.keep_last = 10, cc.async = 0;
    hpct_insitu_config_t c = HPCT_INSITU_CONFIG_INITIALIZER;
    c.catch_signals = 0, c.divergence_factor = 2.0, c.divergence_reports = 2;
    hpct_ckpt_t ck;
    hpct_insitu_t s;
    if (hpct_params_create(ctx, &p) || hpct_params_register(p, "w", w, g, N) ||
        hpct_optimizer_create(p, &oc, &o) || hpct_ckpt_open(ctx, &cc, &ck) ||
        hpct_insitu_create(NULL, p, o, ck, &c, &s) || hpct_insitu_start(s, NULL))
        tap_bail("cannot start a session with the guard: %s", hpct_last_error(ctx));
    int ok = 1;
    for (int k = 0; k < 5; k++) ok &= hpct_insitu_step_grads(s, 4, 1.0f, NULL) == HPCT_SUCCESS;
    ok &= hpct_insitu_step_grads(s, 4, 100.0f, NULL) == HPCT_SUCCESS; /* above, once */
    snprintf(path, sizeof path, "%s/ckpt-%012d.h5", dir, 6);
    tap_ok(ok && access(path, F_OK) != 0,
           "guard: 5 steps at loss 1 then one at 100 train; the cadence save of step 6 (above "
           "the limit) is skipped");
    expect_error(hpct_insitu_step_grads(s, 4, 100.0f, NULL), HPCT_ERR_LOSS_DIVERGED, ctx,
                 "training diverged after step 7: its loss 100 (mean over ranks) is above its "
                 "limit",
                 "guard: the second step at 100 stops the session");
    /* step 6's loss measured the state of checkpoint 5: above the limit, so 4 is the good one */
    tap_ok(strstr(hpct_last_error(ctx), "the last good checkpoint is of step 4; the newer one of "
                                        "step 5 holds the state whose loss was above") != NULL,
           "guard: the message names the last good checkpoint: %s", hpct_last_error(ctx));
    expect_error(hpct_insitu_step_grads(s, 4, 1.0f, NULL), HPCT_ERR_STATE, ctx,
                 "the divergence guard stopped the session after step 7",
                 "guard: a step after it is refused");
    hpct_status_t f = hpct_insitu_finish(s);
    snprintf(path, sizeof path, "%s/ckpt-%012d.h5", dir, 7);
    tap_ok(f == HPCT_ERR_LOSS_DIVERGED && access(path, F_OK) != 0,
           "guard: finish returns HPCT_ERR_LOSS_DIVERGED (%d) and saves nothing of that state", f);
    hpct_insitu_destroy(s);
    hpct_ckpt_close(ck);
    hpct_optimizer_destroy(o);
    hpct_params_destroy(p);
    hpct_ctx_destroy(ctx);
}

/* hpct_insitu_open's overrides (here: one process, MPI initialised and finalized by the
 * call): an item without '=' is refused naming the item, as a file line is; a second open is
 * refused since MPI is finalized. Last in main: MPI is finalized after it. */
static void test_open_overrides(void)
{
    hpct_insitu_t s = NULL;
    hpct_status_t st = hpct_insitu_open(HPCT_COMM_WORLD, NULL, "inputs = 2 ; lr", 0, &s);
    tap_ok(st == HPCT_ERR_INVALID_ARG && !s &&
               !strcmp(hpct_insitu_last_error(NULL),
                       "overrides item 2: expected 'key = value', got 'lr'"),
           "open: an override without '=' is refused naming it: %s", hpct_insitu_last_error(NULL));
    st = hpct_insitu_open(HPCT_COMM_WORLD, NULL, "inputs = 2; outputs = 1", 0, &s);
    tap_ok(st == HPCT_ERR_STATE && !s &&
               strstr(hpct_insitu_last_error(NULL), "MPI is finalized already"),
           "open: a second call after MPI was finalized is refused: %s",
           hpct_insitu_last_error(NULL));
}

static void test_arguments(void)
{
    hpct_ctx_t ctx = new_ctx(), other = new_ctx();
    hpct_params_t p, p2;
    hpct_optimizer_t o, o2;
    hpct_model_t m = new_trainable(ctx, &p, &o), m2 = new_trainable(other, &p2, &o2);
    hpct_insitu_t s = NULL;
    hpct_insitu_config_t c = HPCT_INSITU_CONFIG_INITIALIZER;
    tap_is_int(hpct_insitu_create(NULL, NULL, NULL, NULL, &c, &s), HPCT_ERR_INVALID_ARG,
               "no model, params or optimizer: HPCT_ERR_INVALID_ARG");
    expect_error(hpct_insitu_create(m, NULL, o, NULL, &c, NULL), HPCT_ERR_INVALID_ARG, ctx,
                 "session is NULL", "session NULL");
    expect_error(hpct_insitu_create(m, NULL, NULL, NULL, &c, &s), HPCT_ERR_INVALID_ARG, ctx,
                 "opt is NULL", "opt NULL");
    expect_error(hpct_insitu_create(m, NULL, o2, NULL, &c, &s), HPCT_ERR_INVALID_ARG, ctx,
                 "another parameter set", "an optimizer over another model");
    expect_error(hpct_insitu_create(m, p2, o, NULL, &c, &s), HPCT_ERR_INVALID_ARG, ctx,
                 "params must be NULL", "params that are not the model's");
    c.version = 0;
    expect_error(hpct_insitu_create(m, NULL, o, NULL, &c, &s), HPCT_ERR_INVALID_ARG, ctx,
                 "version is 0", "config version 0");
    c.version = HPCT_INSITU_CONFIG_VERSION + 1;
    expect_error(hpct_insitu_create(m, NULL, o, NULL, &c, &s), HPCT_ERR_INVALID_ARG, ctx,
                 "HPCT_INSITU_CONFIG_INITIALIZER", "config version from the future");
    c.version = HPCT_INSITU_CONFIG_VERSION;
    c.log_interval = -1;
    expect_error(hpct_insitu_create(m, NULL, o, NULL, &c, &s), HPCT_ERR_INVALID_ARG, ctx,
                 "log_interval is -1", "negative log_interval");
    tap_ok(s == NULL, "no session comes back from a failed create");
    tap_is_int(hpct_insitu_create(m, NULL, o, NULL, NULL, &s), HPCT_SUCCESS,
               "cfg NULL means the defaults");
    float x[MAXB * FEATURES];
    int32_t y[MAXB];
    make_batch(x, y, MAXB, 1);
    expect_error(hpct_insitu_step(s, x, y, 2, NULL), HPCT_ERR_STATE, ctx, "hpct_insitu_start",
                 "a step before start");
    hpct_insitu_start(s, NULL);
    expect_error(hpct_insitu_start(s, NULL), HPCT_ERR_STATE, ctx, "already started",
                 "a second start");
    expect_error(hpct_insitu_step(s, x, y, -3, NULL), HPCT_ERR_INVALID_ARG, ctx,
                 "local_batch is -3", "negative local_batch");
    expect_error(hpct_insitu_step(s, NULL, y, 2, NULL), HPCT_ERR_INVALID_ARG, ctx, "x is NULL",
                 "x NULL");
    expect_error(hpct_insitu_step(s, x, NULL, 2, NULL), HPCT_ERR_INVALID_ARG, ctx,
                 "targets are NULL", "targets NULL");
    expect_error(hpct_insitu_step(s, x, y, MAXB + 1, NULL), HPCT_ERR_INVALID_ARG, ctx, "max_batch",
                 "a batch beyond the model's max_batch");
    y[1] = CLASSES;
    expect_error(hpct_insitu_step(s, x, y, 2, NULL), HPCT_ERR_INVALID_ARG, ctx, "label 3",
                 "a label outside the classes");
    y[1] = 0;
    size_t total;
    hpct_params_size(p, NULL, &total);
    float *before = malloc(total * sizeof *before), *w;
    hpct_params_get(p, 0, NULL, &w, NULL, NULL);
    memcpy(before, w, 16 * FEATURES * sizeof *w);
    x[5] = NAN;
    expect_error(hpct_insitu_step(s, x, y, 2, NULL), HPCT_ERR_NONFINITE, ctx, "nan",
                 "a NaN input: non-finite loss");
    tap_ok(memcmp(before, w, 16 * FEATURES * sizeof *w) == 0,
           "after the failed step the parameters are unchanged");
    hpct_progress_t pr;
    tap_ok(hpct_insitu_progress(s, &pr) == HPCT_SUCCESS && pr.step == 0,
           "failed steps are not counted");
    expect_error(hpct_insitu_progress(s, NULL), HPCT_ERR_INVALID_ARG, ctx, "progress is NULL",
                 "progress NULL");
    tap_ok(hpct_insitu_step(NULL, x, y, 2, NULL) == HPCT_ERR_INVALID_ARG &&
               hpct_insitu_step_grads(NULL, 1, 0, NULL) == HPCT_ERR_INVALID_ARG &&
               hpct_insitu_start(NULL, NULL) == HPCT_ERR_INVALID_ARG &&
               hpct_insitu_finish(NULL) == HPCT_ERR_INVALID_ARG,
           "a NULL session: HPCT_ERR_INVALID_ARG everywhere");
    hpct_insitu_destroy(NULL);
    free(before);
    hpct_insitu_destroy(s);
    hpct_optimizer_destroy(o), hpct_optimizer_destroy(o2);
    hpct_model_destroy(m), hpct_model_destroy(m2);
    hpct_ctx_destroy(ctx), hpct_ctx_destroy(other);
}

struct seen {
    int calls;
    long last_step;
    double loss;
};

static void on_progress(const hpct_progress_t *p, void *arg)
{
    struct seen *s = arg;
    s->calls++, s->last_step = p->step, s->loss = p->loss;
}

/* Reports every 5 steps: the mean of the losses returned since the last one. */
static void test_progress(void)
{
    hpct_ctx_t ctx = new_ctx();
    hpct_params_t p;
    hpct_optimizer_t o;
    hpct_model_t m = new_trainable(ctx, &p, &o);
    struct seen seen = {0, 0, 0};
    hpct_insitu_config_t c = HPCT_INSITU_CONFIG_INITIALIZER;
    c.catch_signals = 0, c.log_interval = 5, c.progress = on_progress, c.progress_arg = &seen;
    hpct_insitu_t s;
    hpct_insitu_create(m, NULL, o, NULL, &c, &s);
    hpct_insitu_start(s, NULL);
    float x[MAXB * FEATURES];
    int32_t y[MAXB];
    double sum = 0;
    for (int k = 0; k < 12; k++) {
        float l;
        make_batch(x, y, MAXB, (uint64_t)k + 100);
        hpct_insitu_step(s, x, y, MAXB, &l);
        sum += k >= 5 && k < 10 ? l : 0;
    }
    tap_ok(seen.calls == 2 && seen.last_step == 10, "two reports in 12 steps (got %d, at %ld)",
           seen.calls, seen.last_step);
    tap_within(seen.loss, sum / 5, 1e-6, "the report's loss is the mean of steps 6..10");
    hpct_insitu_destroy(s);
    hpct_optimizer_destroy(o);
    hpct_model_destroy(m);
    hpct_ctx_destroy(ctx);
}

/* The "simulation": a field advanced once per step from itself and the model's first
 * weight (state that the checkpoint holds), before the step that trains on it. */
static void advance(double *field, int n, hpct_params_t p, long step)
{
    float *w;
    hpct_params_get(p, 0, NULL, &w, NULL, NULL);
    for (int i = 0; i < n; i++) field[i] = 0.5 * field[i] + w[0] * (i + 1) + 1e-3 * (double)step;
}

/* Up to `steps` steps of simulation + training with a checkpoint every 4 steps in dir; SIGTERM
 * raised before step stop_at (0: never). Returns the steps done; *last the final status. */
static long run_sim(const char *dir, int steps, int stop_at, double *field, int n,
                    hpct_params_t *out_p, hpct_ctx_t *out_ctx, hpct_model_t *out_m,
                    hpct_optimizer_t *out_o, hpct_status_t *last)
{
    hpct_ctx_t ctx = new_ctx();
    hpct_params_t p;
    hpct_optimizer_t o;
    hpct_model_t m = new_trainable(ctx, &p, &o);
    hpct_ckpt_config_t cc = HPCT_CKPT_CONFIG_INITIALIZER;
    cc.directory = dir;
    cc.every_steps = 4;
    hpct_ckpt_t ck;
    if (hpct_ckpt_open(ctx, &cc, &ck)) tap_bail("open %s: %s", dir, hpct_last_error(ctx));
    long sim_step = 0;
    hpct_ckpt_add_array(ck, "sim/field", HPCT_CKPT_F64, field, (size_t)n);
    hpct_ckpt_add_scalar(ck, "sim/step", HPCT_CKPT_I64, &sim_step);
    hpct_insitu_t s = new_session(m, o, ck, 1);
    long done = 0;
    hpct_status_t st = hpct_insitu_start(s, &done);
    if (st || done != sim_step) tap_bail("start: %s", hpct_last_error(ctx));
    float x[MAXB * FEATURES];
    int32_t y[MAXB];
    while (!st && done < steps) {
        advance(field, n, p, ++sim_step);
        int b = 1 + (int)(sim_step * 5 % MAXB);
        make_batch(x, y, b, (uint64_t)sim_step + 1000);
        x[0] = (float)field[0];
        if (sim_step == stop_at) raise(SIGTERM);
        st = hpct_insitu_step(s, x, y, b, NULL);
        if (st >= 0) done++;
    }
    if (!st) st = hpct_insitu_finish(s);
    *last = st;
    hpct_insitu_destroy(s);
    hpct_ckpt_close(ck);
    *out_p = p, *out_ctx = ctx, *out_m = m, *out_o = o;
    return done;
}

static void free_run(hpct_ctx_t ctx, hpct_model_t m, hpct_optimizer_t o)
{
    hpct_optimizer_destroy(o);
    hpct_model_destroy(m);
    hpct_ctx_destroy(ctx);
}

static void test_preempt_resume(void)
{
    enum { N = 6, STEPS = 14, STOP = 6 };
    char da[4096], db[4096];
    make_tmpdir(da, sizeof da, "insitu-a");
    make_tmpdir(db, sizeof db, "insitu-b");
    double fa[N] = {0}, fb[N] = {0};
    hpct_params_t pa, pb;
    hpct_ctx_t ca, cb;
    hpct_model_t ma, mb;
    hpct_optimizer_t oa, ob;
    hpct_status_t st;
    long done = run_sim(da, STEPS, 0, fa, N, &pa, &ca, &ma, &oa, &st);
    tap_ok(st == HPCT_SUCCESS && done == STEPS, "uninterrupted: %d steps and finish succeed",
           STEPS);
    tap_is_int(count_entries(da, ".h5"), 3,
               "cadence every 4 steps: checkpoints of steps 8, 12 and the final 14 kept (keep 3)");
    done = run_sim(db, STEPS, STOP, fb, N, &pb, &cb, &mb, &ob, &st);
    tap_ok(st == HPCT_PREEMPTED && done == STOP,
           "SIGTERM raised before step %d: HPCT_PREEMPTED after it (status %d, %ld steps)", STOP,
           st, done);
    tap_ok(hpct_signals_pending(NULL, NULL), "the signal stays pending for the caller to see");
    hpct_signals_clear();
    tap_ok(count_entries(db, "000000000006") == 1, "the checkpoint of step %d exists", STOP);
    free_run(cb, mb, ob);
    memset(fb, 0x7f, sizeof fb); /* what the load must overwrite */
    done = run_sim(db, STEPS, 0, fb, N, &pb, &cb, &mb, &ob, &st);
    tap_ok(st == HPCT_SUCCESS && done == STEPS, "the resumed run completes %d steps", STEPS);
    tap_ok(same_params(pa, pb), "parameters bit-identical to the uninterrupted run's");
    tap_ok(memcmp(fa, fb, sizeof fa) == 0,
           "the registered simulation field is bit-identical too (%.17g vs %.17g)", fa[N - 1],
           fb[N - 1]);
    free_run(ca, ma, oa);
    free_run(cb, mb, ob);
    remove_tree(da);
    remove_tree(db);
}

/* Handlers the caller installed stay theirs: the session reads the flag they set. */
static void test_caller_signals(void)
{
    hpct_ctx_t ctx = new_ctx();
    hpct_signals_t mine;
    hpct_signals_install(ctx, NULL, 0, &mine);
    hpct_params_t p;
    hpct_optimizer_t o;
    hpct_model_t m = new_trainable(ctx, &p, &o);
    hpct_insitu_t s;
    tap_is_int(hpct_insitu_create(m, NULL, o, NULL, NULL, &s), HPCT_SUCCESS,
               "catch_signals with handlers already installed by the caller: accepted");
    hpct_insitu_start(s, NULL);
    float x[MAXB * FEATURES];
    int32_t y[MAXB];
    make_batch(x, y, MAXB, 3);
    raise(SIGUSR1);
    tap_is_int(hpct_insitu_step(s, x, y, MAXB, NULL), HPCT_PREEMPTED,
               "SIGUSR1 through the caller's handlers: HPCT_PREEMPTED (no checkpoint handle)");
    hpct_insitu_destroy(s);
    hpct_signals_t again;
    tap_is_int(hpct_signals_install(ctx, NULL, 0, &again), HPCT_ERR_STATE,
               "destroy left the caller's installation in place");
    hpct_signals_uninstall(mine);
    hpct_signals_clear();
    hpct_optimizer_destroy(o);
    hpct_model_destroy(m);
    hpct_ctx_destroy(ctx);
}

/* n samples of the fixed rule as one shard and its manifest in dir; the opened dataset
 * (file order). */
static hpct_dataset_t eval_set(hpct_ctx_t ctx, const char *dir, int n)
{
    char shard[4200], manifest[4200];
    snprintf(shard, sizeof shard, "%s/eval.h5", dir);
    snprintf(manifest, sizeof manifest, "%s/eval.txt", dir);
    float *x = malloc(sizeof *x * (size_t)n * FEATURES);
    int32_t *y = malloc(sizeof *y * (size_t)n);
    make_batch(x, y, n, 77);
    uint64_t xd[2] = {(uint64_t)n, FEATURES}, yd[1] = {(uint64_t)n};
    hpct_shard_writer_t w;
    hpct_manifest_t m;
    hpct_status_t s = hpct_shard_create(ctx, shard, NULL, &w);
    if (!s) s = hpct_shard_write(w, "inputs", HPCT_DTYPE_FLOAT32, 2, xd, x);
    if (!s) s = hpct_shard_write(w, "targets", HPCT_DTYPE_INT32, 1, yd, y);
    if (!s) s = hpct_shard_close(w);
    if (!s) s = hpct_manifest_create(ctx, manifest, NULL, NULL, &m);
    if (!s) s = hpct_manifest_add_shard(m, shard);
    if (!s) s = hpct_manifest_write(m);
    if (s) tap_bail("cannot write the evaluation data: %s", hpct_last_error(ctx));
    hpct_manifest_destroy(m);
    free(x), free(y);
    hpct_data_config_t dc = HPCT_DATA_CONFIG_INITIALIZER;
    dc.shuffle = 0;
    hpct_dataset_t ds;
    if (hpct_dataset_open(ctx, manifest, &dc, &ds)) tap_bail("open %s", manifest);
    return ds;
}

struct evals {
    int calls;
    long steps[8];
    double loss;
};

static void on_eval(long step, double loss, double accuracy, long samples, void *arg)
{
    struct evals *e = arg;
    if (e->calls < 8) e->steps[e->calls] = step;
    e->calls++, e->loss = loss;
    (void)accuracy, (void)samples;
}

/* The number of lines of path holding needle. */
static int lines_with(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    char line[8192];
    int n = 0;
    while (f && fgets(line, sizeof line, f)) n += strstr(line, needle) != NULL;
    if (f) fclose(f);
    return n;
}

/* eval_data every 4 steps: evaluations after steps 4 and 8 and in finish (10), each reported
 * and recorded; the last result is hpct_evaluate's of the final parameters; a session without a
 * model cannot have eval_data. */
static void test_eval_cadence(void)
{
    char dir[4096], metrics[4200];
    make_tmpdir(dir, sizeof dir, "insitu-eval");
    snprintf(metrics, sizeof metrics, "%s/metrics.jsonl", dir);
    hpct_ctx_t ctx = new_ctx();
    hpct_params_t p;
    hpct_optimizer_t o;
    hpct_model_t m = new_trainable(ctx, &p, &o);
    hpct_dataset_t ds = eval_set(ctx, dir, 40);
    struct evals seen = {0, {0}, 0.0};
    hpct_insitu_config_t c = HPCT_INSITU_CONFIG_INITIALIZER;
    c.catch_signals = 0, c.eval_data = ds, c.eval_interval = 4, c.evaluated = on_eval;
    c.progress_arg = &seen, c.metrics_path = metrics;
    hpct_insitu_t s;
    hpct_status_t st = hpct_insitu_create(m, NULL, o, NULL, &c, &s);
    if (!st) st = hpct_insitu_start(s, NULL);
    float x[MAXB * FEATURES];
    int32_t y[MAXB];
    for (int k = 0; k < 10 && !st; k++) {
        make_batch(x, y, MAXB, (uint64_t)k + 300);
        st = hpct_insitu_step(s, x, y, MAXB, NULL);
    }
    if (!st) st = hpct_insitu_finish(s);
    tap_ok(st == HPCT_SUCCESS && seen.calls == 3 && seen.steps[0] == 4 && seen.steps[1] == 8 &&
               seen.steps[2] == 10,
           "eval_interval 4 over 10 steps: evaluated after steps 4, 8 and in finish at 10 (status "
           "%d, %d calls: %ld %ld %ld)",
           st, seen.calls, seen.steps[0], seen.steps[1], seen.steps[2]);
    double loss = -1.0;
    hpct_evaluate(m, ds, &loss, NULL, NULL);
    tap_ok(loss == seen.loss,
           "the last result is hpct_evaluate's of the final parameters (%.9g vs "
           "%.9g)",
           seen.loss, loss);
    hpct_insitu_destroy(s);
    tap_is_int(lines_with(metrics, "\"type\":\"eval\""), 3,
               "three eval records in the metrics file");
    hpct_params_t own;
    hpct_params_create(ctx, &own);
    static float w[4], g[4];
    hpct_params_register(own, "w", w, g, 4);
    hpct_optimizer_t oo = new_opt(own);
    st = hpct_insitu_create(NULL, own, oo, NULL, &c, &s);
    tap_ok(st == HPCT_ERR_INVALID_ARG && strstr(hpct_last_error(ctx), "eval_data"),
           "own gradients with eval_data: HPCT_ERR_INVALID_ARG naming eval_data (%s)",
           hpct_last_error(ctx));
    hpct_optimizer_destroy(oo);
    hpct_params_destroy(own);
    hpct_dataset_close(ds);
    hpct_optimizer_destroy(o);
    hpct_model_destroy(m);
    hpct_ctx_destroy(ctx);
    remove_tree(dir);
}

int main(void)
{
    tap_plan(63);
    test_same_bits();
    test_byog();
    test_nonfinite_grads(0.0f);
    test_nonfinite_grads(10.0f);
    test_finish();
    test_divergence();
    test_arguments();
    test_progress();
    test_preempt_resume();
    test_caller_signals();
    test_eval_cadence();
    test_open_overrides();
    return tap_done();
}
