/* test_cuda_graph.c: the fused in-situ step of one rank on the cuda backend (issue 33,
 * lib/model/fused.c) and the CUDA graphs it captures. An in-situ session on the cuda backend
 * against the same steps through the public calls (hpct_model_loss_grad, then
 * hpct_optimizer_step): parameters and losses bit for bit, with graphs on (captured the second
 * time a shape comes, replayed after) and off (HPCT_CUDA_GRAPH=0: the same sequence, never
 * captured); batch sizes that change mid-run (one graph each); a learning rate that changes
 * every step (read from device memory by the replayed update) with AdamW and clipping; inputs
 * read in place from two alternating device arrays; a non-finite loss and non-finite gradients
 * refused with the parameters untouched, from a replayed graph too; the backend's recording
 * rules (no waits, pinned host memory only, results within their slots); a captured copy reads
 * pinned memory as it is at each replay; a wait inside a capture invalidates it. Skips without the
 * cuda backend or a device. */
#include "config.h"
#include "hpctrain.h"
#include "lib/tap.h"

#ifndef HPCT_HAVE_CUDA
int main(void)
{
    tap_skip_all("built without --with-cuda");
}
#else
#include "../lib/core/core.h"
#include "../lib/device/ops.h"
#include "../lib/model/model.h"

#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { IN = 12, OUT = 5, MAXB = 8 };

static hpct_ctx_t gctx;
static const struct hpcti_ops *gpu = &hpcti_cuda_ops;

/* A model of the cuda context: IN inputs, tanh and relu hidden layers, OUT outputs. */
static hpct_model_t make_model(hpct_loss_t loss, int outputs)
{
    hpct_model_t m;
    if (hpct_model_create(gctx, IN, &m) ||
        hpct_model_add_dense(m, 16, HPCT_ACT_TANH, HPCT_INIT_AUTO) ||
        hpct_model_add_dense(m, 12, HPCT_ACT_RELU, HPCT_INIT_AUTO) ||
        hpct_model_add_dense(m, outputs, HPCT_ACT_IDENTITY, HPCT_INIT_AUTO) ||
        hpct_model_set_loss(m, loss) || hpct_model_build(m, MAXB))
        tap_bail("model setup: %s", hpct_last_error(gctx));
    return m;
}

static hpct_optimizer_t make_opt(hpct_model_t m, const hpct_optim_config_t *oc)
{
    hpct_params_t p;
    hpct_optimizer_t o;
    if (hpct_model_params(m, &p) || hpct_optimizer_create(p, oc, &o))
        tap_bail("optimizer setup: %s", hpct_last_error(gctx));
    return o;
}

/* A started in-situ session of m and o (no signal handlers: the test runs no job). */
static hpct_insitu_t start_session(hpct_model_t m, hpct_optimizer_t o)
{
    hpct_insitu_config_t ic = HPCT_INSITU_CONFIG_INITIALIZER;
    ic.catch_signals = 0;
    hpct_insitu_t s;
    if (hpct_insitu_create(m, NULL, o, NULL, &ic, &s) || hpct_insitu_start(s, NULL))
        tap_bail("session: %s", hpct_last_error(gctx));
    return s;
}

/* FNV-1a of every parameter of m (copied from the device). */
static uint64_t params_hash(hpct_model_t m)
{
    hpct_params_t p;
    int nb;
    size_t total;
    hpct_model_params(m, &p), hpct_params_size(p, &nb, &total);
    uint64_t h = 0xcbf29ce484222325ull;
    for (int i = 0; i < nb; i++) {
        float *par, *grad;
        size_t n;
        const char *name;
        hpct_params_get(p, i, &name, &par, &grad, &n);
        unsigned char *host = malloc(n * sizeof(float));
        if (gpu->to_host(gctx, host, par, n * sizeof(float))) tap_bail("%s", hpct_last_error(gctx));
        for (size_t k = 0; k < n * sizeof(float); k++) h = (h ^ host[k]) * 0x100000001b3ull;
        free(host);
    }
    return h;
}

/* The batch of step s (from 0): b rows of x [b, IN] in [-2, 2], labels in [0, OUT) and MSE
 * targets [b, outputs] in [-1, 1], the same for every run. */
struct batch {
    int b;
    float x[MAXB * IN], y[MAXB * OUT];
    int32_t labels[MAXB];
};

static void make_batch(struct batch *bt, int step, int b, int outputs)
{
    uint64_t r = 0x9e3779b97f4a7c15ull * (uint64_t)(step + 1);
    bt->b = b;
    for (int i = 0; i < b * IN; i++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        bt->x[i] = (float)((r >> 40) / (double)(1 << 24)) * 4.0f - 2.0f;
    }
    for (int i = 0; i < b * outputs; i++) bt->y[i] = sinf(bt->x[i] * 1.7f + (float)i);
    for (int i = 0; i < b; i++) bt->labels[i] = (int32_t)((i * 3 + step) % OUT);
}

static const void *targets_of(const struct batch *bt, hpct_loss_t loss)
{
    return loss == HPCT_LOSS_MSE ? (const void *)bt->y : (const void *)bt->labels;
}

/* One run: steps of sizes sizes[s % nsizes], through an in-situ session (session 1) or the
 * public calls (0); losses[s] the step's loss; returns the parameters' hash. Inputs from the
 * host, or (device 1) from two device copies used in turn. */
struct run {
    hpct_loss_t loss;
    const hpct_optim_config_t *oc;
    int steps, nsizes;
    const int *sizes;
    int session, device;
    float losses[64];
    struct hpcti_fused_stats stats;
};

static uint64_t train(struct run *r)
{
    hpct_model_t m = make_model(r->loss, OUT);
    hpct_optimizer_t o = make_opt(m, r->oc);
    hpct_insitu_t s = r->session ? start_session(m, o) : NULL;
    void *dx[2] = {NULL, NULL}, *dt[2] = {NULL, NULL};
    for (int k = 0; k < 2 && r->device; k++) {
        dx[k] = gpu->alloc(gctx, sizeof(float) * MAXB * IN);
        dt[k] = gpu->alloc(gctx, sizeof(float) * MAXB * OUT);
    }
    for (int step = 0; step < r->steps; step++) {
        struct batch bt;
        make_batch(&bt, step, r->sizes[step % r->nsizes], OUT);
        const float *x = bt.x;
        const void *t = targets_of(&bt, r->loss);
        if (r->device) {
            int k = step % 2;
            gpu->to_device(gctx, dx[k], x, sizeof(float) * (size_t)bt.b * IN);
            gpu->to_device(gctx, dt[k], t,
                           r->loss == HPCT_LOSS_MSE ? sizeof bt.y : sizeof bt.labels);
            x = dx[k], t = dt[k];
        }
        float l = NAN;
        hpct_status_t st;
        if (r->session) {
            st = hpct_insitu_step(s, x, t, bt.b, &l);
        } else {
            st = hpct_model_loss_grad(m, x, t, bt.b, 0, &l);
            if (!st) st = hpct_optimizer_step(o);
            l = (float)((double)l * bt.b / bt.b); /* as the session's global mean */
        }
        if (st) tap_bail("step %d: %s", step, hpct_last_error(gctx));
        r->losses[step] = l;
    }
    hpcti_fused_stats(m, &r->stats);
    uint64_t h = params_hash(m);
    for (int k = 0; k < 2; k++) gpu->free(gctx, dx[k]), gpu->free(gctx, dt[k]);
    hpct_insitu_destroy(s);
    hpct_optimizer_destroy(o);
    hpct_model_destroy(m);
    return h;
}

static int same_losses(const struct run *a, const struct run *b)
{
    return memcmp(a->losses, b->losses, sizeof(float) * (size_t)a->steps) == 0;
}

/* The session against the public calls, graphs on, and (off) with HPCT_CUDA_GRAPH=0. */
static void check_against_calls(hpct_loss_t loss, const hpct_optim_config_t *oc, const int *sizes,
                                int nsizes, const char *what)
{
    struct run calls = {loss, oc, 30, nsizes, sizes, 0, 0, {0}, {0}};
    struct run on = calls, off = calls;
    on.session = off.session = 1;
    uint64_t hc = train(&calls), hon = train(&on);
    setenv("HPCT_CUDA_GRAPH", "0", 1);
    uint64_t hoff = train(&off);
    unsetenv("HPCT_CUDA_GRAPH");
    tap_ok(hon == hc && same_losses(&on, &calls),
           "%s: 30 fused steps, graphs on: parameters (%016llx) and every loss bit for bit those "
           "of hpct_model_loss_grad + hpct_optimizer_step (%016llx)",
           what, (unsigned long long)hon, (unsigned long long)hc);
    tap_ok(on.stats.captured == nsizes && on.stats.queued == nsizes &&
               on.stats.replayed == 30 - nsizes,
           "%s: %d batch sizes: each seen once uncaptured, then captured and replayed (%ld "
           "queued, %ld captured, %ld replayed)",
           what, nsizes, on.stats.queued, on.stats.captured, on.stats.replayed);
    tap_ok(hoff == hc && same_losses(&off, &calls) && off.stats.captured == 0 &&
               off.stats.replayed == 0 && off.stats.queued == 30,
           "%s: HPCT_CUDA_GRAPH=0: never captured, the same bits (%016llx)", what,
           (unsigned long long)hoff);
}

/* Inputs in two device arrays used in turn: read in place, one graph for each. */
static void test_device_inputs(const hpct_optim_config_t *oc)
{
    static const int eight[] = {8};
    struct run host = {HPCT_LOSS_MSE, oc, 20, 1, eight, 1, 0, {0}, {0}}, dev = host;
    dev.device = 1;
    uint64_t hh = train(&host), hd = train(&dev);
    tap_ok(hd == hh && same_losses(&dev, &host) && dev.stats.captured == 2 &&
               dev.stats.replayed == 18,
           "x and targets in two device arrays used in turn: read in place, one graph each (%ld "
           "captured, %ld replayed), the same bits as from host arrays (%016llx)",
           dev.stats.captured, dev.stats.replayed, (unsigned long long)hd);
}

/* A step of session s that should be refused: its status and message, and the parameters'
 * hash and the optimizer's step count before and after it; the fused steps' stats after it. */
struct refusal {
    hpct_status_t status;
    char msg[sizeof gctx->last_error];
    uint64_t hash_before, hash_after;
    long step_before, step_after;
    struct hpcti_fused_stats stats;
};

static void refused_step(hpct_insitu_t s, hpct_model_t m, hpct_optimizer_t o, const float *x,
                         const void *t, int n, struct refusal *r)
{
    r->hash_before = params_hash(m);
    r->step_before = r->step_after = -1;
    hpct_optimizer_get_step(o, &r->step_before);
    r->status = hpct_insitu_step(s, x, t, n, NULL);
    snprintf(r->msg, sizeof r->msg, "%s", hpct_last_error(gctx));
    hpct_optimizer_get_step(o, &r->step_after);
    r->hash_after = params_hash(m);
    hpcti_fused_stats(m, &r->stats);
}

/* A non-finite loss (NaN in x), from a replayed graph: refused, parameters and the optimizer's
 * step count untouched; the next step trains. */
static void test_nonfinite_loss(const hpct_optim_config_t *oc)
{
    hpct_model_t m = make_model(HPCT_LOSS_SOFTMAX_CE, OUT);
    hpct_optimizer_t o = make_opt(m, oc);
    hpct_insitu_t s = start_session(m, o);
    struct batch bt;
    hpct_status_t st = HPCT_SUCCESS;
    for (int step = 0; step < 3 && !st; step++) {
        make_batch(&bt, step, 6, OUT);
        st = hpct_insitu_step(s, bt.x, bt.labels, 6, NULL);
    }
    struct refusal r;
    bt.x[7] = NAN;
    refused_step(s, m, o, bt.x, bt.labels, 6, &r);
    tap_ok(!st && r.status == HPCT_ERR_NONFINITE && strstr(r.msg, "the loss is nan") &&
               r.hash_after == r.hash_before && r.step_after == r.step_before &&
               r.stats.replayed == 3,
           "a NaN input in a replayed graph: HPCT_ERR_NONFINITE, parameters and step count "
           "(%ld) untouched: %s",
           r.step_after, r.msg);
    bt.x[7] = 0.5f;
    long after_step = -1;
    st = hpct_insitu_step(s, bt.x, bt.labels, 6, NULL);
    hpct_optimizer_get_step(o, &after_step);
    tap_ok(st == HPCT_SUCCESS && after_step == r.step_before + 1 && params_hash(m) != r.hash_before,
           "the next step trains (step %ld)", after_step);
    hpct_insitu_destroy(s), hpct_optimizer_destroy(o), hpct_model_destroy(m);
}

/* Gradients that are not finite under a finite loss (an MSE target of 3e38: d loss / d output
 * overflows to -Inf), from a replayed graph: the gate keeps the update from running, the
 * session's own check names the reason; without clipping the buffer, with it the norm. */
static void test_nonfinite_grads(int clip)
{
    hpct_model_t m = make_model(HPCT_LOSS_MSE, 1);
    hpct_optim_config_t oc = HPCT_OPTIM_CONFIG_INITIALIZER;
    oc.lr = 0.01f, oc.momentum = 0.9f, oc.clip_norm = clip ? 1.0f : 0.0f;
    hpct_optimizer_t o = make_opt(m, &oc);
    hpct_insitu_t s = start_session(m, o);
    struct batch bt;
    make_batch(&bt, 0, 1, 1);
    hpct_status_t st = HPCT_SUCCESS;
    for (int step = 0; step < 2 && !st; step++) st = hpct_insitu_step(s, bt.x, bt.y, 1, NULL);
    struct refusal r;
    bt.y[0] = 3e38f;
    refused_step(s, m, o, bt.x, bt.y, 1, &r);
    const char *want = clip ? "the gradient norm is" : "holds NaN or Inf";
    tap_ok(!st && r.status == HPCT_ERR_NONFINITE && strstr(r.msg, want) &&
               r.hash_after == r.hash_before && r.step_after == r.step_before &&
               r.stats.replayed == 2,
           "%s: gradients not finite under a finite loss in a replayed graph: refused, nothing "
           "updated: %s",
           clip ? "clip_norm 1" : "no clipping", r.msg);
    hpct_insitu_destroy(s), hpct_optimizer_destroy(o), hpct_model_destroy(m);
}

/* The backend's rules inside a recording: no wait for the device, pinned host memory only. */
static void test_recording_rules(void)
{
    double *res = gpu->alloc(gctx, 4 * sizeof(double));
    float *dev = gpu->alloc(gctx, 64 * sizeof(float)), host[64] = {0};
    hpct_status_t s = gpu->rec_begin(gctx, res, 4, 1);
    hpct_status_t wait = s ? s : gpu->sync(gctx);
    gpu->rec_end(gctx, NULL);
    tap_ok(!s && wait == HPCT_ERR_STATE && strstr(hpct_last_error(gctx), "inside a recorded step"),
           "a wait for the device inside a recording is refused: %s", hpct_last_error(gctx));
    s = gpu->rec_begin(gctx, res, 4, 0);
    hpct_status_t copy = s ? s : gpu->to_device(gctx, dev, host, sizeof host);
    gpu->rec_end(gctx, NULL);
    tap_ok(!s && copy == HPCT_ERR_INVALID_ARG && strstr(hpct_last_error(gctx), "not pinned"),
           "a recorded copy from pageable host memory is refused: %s", hpct_last_error(gctx));
    double sum;
    s = gpu->rec_begin(gctx, res, 1, 0);
    hpct_status_t first = s ? s : gpu->sumsq(gctx, dev, 64, &sum);
    hpct_status_t second = first ? first : gpu->sumsq(gctx, dev, 64, &sum);
    gpu->rec_end(gctx, NULL);
    tap_ok(!s && !first && second == HPCT_ERR_INTERNAL &&
               strstr(hpct_last_error(gctx), "room for 1"),
           "a reduction past the recording's result slots is refused, not written: %s",
           hpct_last_error(gctx));
    gpu->sync(gctx);
    gpu->free(gctx, dev), gpu->free(gctx, res);
}

/* What the fused step relies on of CUDA: a captured copy from pinned memory reads it as it is
 * when the graph runs, not as it was at the capture; a wait inside a capture invalidates it. */
static void test_graph_semantics(void)
{
    float *pin = gpu->alloc_host(gctx, 16 * sizeof(float)), got[16];
    float *dev = gpu->alloc(gctx, 16 * sizeof(float));
    double *res = gpu->alloc(gctx, 2 * sizeof(double));
    void *graph = NULL;
    for (int i = 0; i < 16; i++) pin[i] = 1.0f;
    hpct_status_t s = gpu->rec_begin(gctx, res, 2, 1);
    if (!s) s = gpu->to_device(gctx, dev, pin, 16 * sizeof(float));
    hpct_status_t end = gpu->rec_end(gctx, s ? NULL : &graph);
    int ok = !s && !end && graph;
    for (int round = 2; round <= 3 && ok; round++) {
        for (int i = 0; i < 16; i++) pin[i] = (float)(round * 10 + i);
        ok = !gpu->graph_launch(gctx, graph) && !gpu->sync(gctx) &&
             !gpu->to_host(gctx, got, dev, sizeof got) && got[0] == round * 10 &&
             got[15] == round * 10 + 15;
    }
    tap_ok(ok, "a replayed graph's copy reads the pinned memory as it is at each replay (%s)",
           s || end ? hpct_last_error(gctx) : "ok");
    gpu->graph_free(gctx, graph);
    cudaStream_t st;
    cudaGraph_t g = NULL;
    cudaError_t e = cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
    if (!e) e = cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal);
    cudaError_t inside = e ? e : cudaDeviceSynchronize();
    cudaError_t ended = cudaStreamEndCapture(st, &g);
    (void)cudaGetLastError();
    tap_ok(!e && inside == cudaErrorStreamCaptureUnsupported &&
               ended == cudaErrorStreamCaptureInvalidated && !g,
           "cudaDeviceSynchronize inside a capture fails and invalidates it (%s, then %s)",
           cudaGetErrorName(inside), cudaGetErrorName(ended));
    if (g) cudaGraphDestroy(g);
    cudaStreamDestroy(st);
    gpu->free_host(gctx, pin), gpu->free(gctx, dev), gpu->free(gctx, res);
}

/* The reason no CUDA context can be made (the backend's own words), or NULL when one can. */
static const char *cuda_unusable(void)
{
    static char why[sizeof gctx->last_error];
    hpct_ctx_t probe;
    if (hpct_ctx_create(NULL, &probe)) return "no cpu context for the probe";
    if (hpcti_cuda_ops.init(probe) == HPCT_SUCCESS) {
        hpcti_cuda_ops.finalize(probe);
        hpct_ctx_destroy(probe);
        return NULL;
    }
    snprintf(why, sizeof why, "%s", hpct_last_error(probe));
    hpct_ctx_destroy(probe);
    return why;
}

int main(void)
{
    const char *why = cuda_unusable();
    if (why) tap_skip_all("no CUDA device: %s", why);
    hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
    cfg.backend = HPCT_BACKEND_CUDA;
    cfg.seed = 11;
    if (hpct_ctx_create(&cfg, &gctx)) tap_bail("cuda context failed after the probe worked");
    tap_plan(16);
#ifdef HPCT_CUDA_DOUBLE
    tap_prefix("[device double, not a GPU] "); /* t/double: the CPU runs the cuda backend */
#endif
    unsetenv("HPCT_CUDA_GRAPH");
    hpct_optim_config_t sgd = HPCT_OPTIM_CONFIG_INITIALIZER;
    sgd.lr = 0.05f, sgd.momentum = 0.9f, sgd.nesterov = 1, sgd.weight_decay = 1e-3f;
    hpct_optim_config_t adamw = HPCT_OPTIM_CONFIG_INITIALIZER;
    adamw.kind = HPCT_OPT_ADAMW, adamw.lr = 3e-3f, adamw.clip_norm = 0.3f;
    adamw.schedule = HPCT_SCHED_COSINE, adamw.warmup_steps = 4, adamw.total_steps = 30;
    static const int two[] = {8, 5}, three[] = {3, 8, 1};
    check_against_calls(HPCT_LOSS_SOFTMAX_CE, &sgd, two, 2, "CE + SGD nesterov"); /* 3 */
    check_against_calls(HPCT_LOSS_MSE, &adamw, three, 3,
                        "MSE + AdamW, clip_norm, warmup + cosine"); /* 3 */
    test_device_inputs(&sgd);                                       /* 1 */
    test_nonfinite_loss(&sgd);                                      /* 2 */
    test_nonfinite_grads(0);                                        /* 1 */
    test_nonfinite_grads(1);                                        /* 1 */
    test_recording_rules();                                         /* 3 */
    test_graph_semantics();                                         /* 2 */
    hpct_ctx_destroy(gctx);
    return tap_done();
}
#endif
