/* test_errors.c: every error path of the public API returns its documented code and a
 * detail that names what is wrong; nothing is changed by a failed call. */
#include "config.h"
#include "hpctrain.h"
#include "lib/tap.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static hpct_ctx_t ctx;

/* The call returned want and the context's detail mentions every word of needle. */
static void expect(hpct_status_t got, hpct_status_t want, const char *needle, const char *what)
{
    const char *detail = hpct_last_error(ctx);
    int ok = got == want && (!needle || strstr(detail, needle));
    tap_ok(ok, "%s -> %s", what, hpct_strerror(want));
    if (!ok)
        tap_diag("got %d (%s), detail '%s', wanted detail containing '%s'", got, hpct_strerror(got),
                 detail, needle ? needle : "");
}

static void optim_field(const char *field, hpct_optim_config_t c, hpct_params_t set)
{
    hpct_optimizer_t opt = (hpct_optimizer_t)1;
    char what[96];
    snprintf(what, sizeof what, "optimizer config with bad %s", field);
    expect(hpct_optimizer_create(set, &c, &opt), HPCT_ERR_INVALID_ARG, field, what);
}

int main(void)
{
    tap_plan(52);
    hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
    hpct_ctx_t bad = (hpct_ctx_t)1;

    /* Contexts. */
    tap_is_int(hpct_ctx_create(&cfg, NULL), HPCT_ERR_INVALID_ARG, "ctx_create with NULL out");
    cfg.version = 0;
    tap_is_int(hpct_ctx_create(&cfg, &bad), HPCT_ERR_INVALID_ARG, "config version 0 is refused");
    tap_ok(bad == NULL, "a failed ctx_create sets the handle to NULL");
    cfg = (hpct_config_t)HPCT_CONFIG_INITIALIZER;
    cfg.backend = (hpct_backend_t)7;
    tap_is_int(hpct_ctx_create(&cfg, &bad), HPCT_ERR_INVALID_ARG, "unknown backend is refused");
    cfg = (hpct_config_t)HPCT_CONFIG_INITIALIZER;
    cfg.num_threads = -1;
    tap_is_int(hpct_ctx_create(&cfg, &bad), HPCT_ERR_INVALID_ARG,
               "negative num_threads is refused");
    const double timeouts[] = {NAN, -1.0, 0.0, INFINITY};
    for (int i = 0; i < 4; i++) {
        cfg = (hpct_config_t)HPCT_CONFIG_INITIALIZER;
        cfg.collective_timeout_s = timeouts[i];
        tap_is_int(hpct_ctx_create(&cfg, &bad), HPCT_ERR_INVALID_ARG,
                   "collective_timeout_s %g is refused", timeouts[i]);
    }
    cfg = (hpct_config_t)HPCT_CONFIG_INITIALIZER;
    cfg.fusion_bytes = 0;
    tap_is_int(hpct_ctx_create(&cfg, &bad), HPCT_ERR_INVALID_ARG, "fusion_bytes 0 is refused");
#ifndef HPCT_HAVE_CUDA
    cfg = (hpct_config_t)HPCT_CONFIG_INITIALIZER;
    cfg.backend = HPCT_BACKEND_CUDA;
    tap_is_int(hpct_ctx_create(&cfg, &bad), HPCT_ERR_UNSUPPORTED,
               "cuda backend in a CPU-only build");
#else
    tap_skip(1, "this build has the cuda backend; its errors need a GPU to test");
#endif
    tap_ok(strstr(hpct_last_error(NULL), "no context (NULL handle): the context or handle passed "
                                         "was never created, or its creation failed") != NULL,
           "last_error(NULL) is safe and says what is wrong");
    /* A context or session never created (issue 37, finding 12): HPCT_ERR_INVALID_ARG, as
     * documented for a NULL handle, and nothing written. */
    hpct_model_t never = (hpct_model_t)1;
    tap_is_int(hpct_model_create(NULL, 4, &never), HPCT_ERR_INVALID_ARG,
               "model_create on a context never created");
    tap_ok(never == (hpct_model_t)1, "... leaves the handle untouched");
    float xs[4] = {0}, ys[1] = {0}, loss = 7.0f;
    tap_is_int(hpct_insitu_step(NULL, xs, ys, 1, &loss), HPCT_ERR_INVALID_ARG,
               "insitu_step on a session never created");
    tap_ok(loss == 7.0f, "... leaves the loss untouched");
    tap_is_int(hpct_ctx_create(NULL, &ctx), HPCT_SUCCESS, "default context");
    uint64_t zero[4] = {0, 0, 0, 0};
    expect(hpct_rng_set_state(ctx, zero), HPCT_ERR_INVALID_ARG, "all-zero", "all-zero RNG state");

    /* Parameter sets. */
    hpct_params_t set;
    hpct_params_create(ctx, &set);
    float p[4] = {1, 2, 3, 4}, g[4] = {0};
    expect(hpct_params_register(set, "", p, g, 4), HPCT_ERR_INVALID_ARG, "1 to 200", "empty name");
    expect(hpct_params_register(set, "w", NULL, g, 4), HPCT_ERR_INVALID_ARG,
           "'w' has a NULL parameter", "NULL parameter buffer");
    expect(hpct_params_register(set, "w", p, g, 0), HPCT_ERR_INVALID_ARG, "zero elements",
           "zero count");
    expect(hpct_params_register(set, "w", p, p, 4), HPCT_ERR_INVALID_ARG, "one buffer",
           "aliased grad");
    hpct_params_register(set, "w", p, g, 4);
    expect(hpct_params_register(set, "w", p + 1, g + 1, 1), HPCT_ERR_INVALID_ARG,
           "already registered", "duplicate name");
    expect(hpct_params_register(set, "layer//w", p + 1, g + 1, 1), HPCT_ERR_INVALID_ARG,
           "non-empty parts", "an empty part between two '/'");
    expect(hpct_params_register(set, "w/bias", p + 1, g + 1, 1), HPCT_ERR_INVALID_ARG,
           "'w/bias' and 'w' cannot both be registered", "a name nested under another");
    float q[2] = {0}, gq[2] = {0};
    expect(hpct_params_register(set, "v", p + 1, gq, 2), HPCT_ERR_INVALID_ARG,
           "overlap those of 'w'", "memory of 'w' registered again under another name");
    expect(hpct_params_register(set, "v", q, gq, (size_t)-1), HPCT_ERR_INVALID_ARG, "2^40",
           "SIZE_MAX elements");
    char long_name[HPCT_PARAM_NAME_MAX + 2];
    memset(long_name, 'x', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    expect(hpct_params_register(set, long_name, p + 1, g + 1, 1), HPCT_ERR_INVALID_ARG,
           "1 to 200 characters", "a name over HPCT_PARAM_NAME_MAX");
    expect(hpct_params_get(set, 5, NULL, NULL, NULL, NULL), HPCT_ERR_NOT_FOUND, "index 5",
           "buffer index out of range");
    expect(hpct_params_scale_grads(set, NAN), HPCT_ERR_INVALID_ARG, "not finite", "NaN scale");
    tap_is_int(hpct_params_register(NULL, "x", p, g, 1), HPCT_ERR_INVALID_ARG, "NULL set");

    /* Optimizers: each bad field is named. */
    hpct_optim_config_t oc = HPCT_OPTIM_CONFIG_INITIALIZER, c;
    c = oc, c.lr = 0;
    optim_field("lr", c, set);
    c = oc, c.momentum = 1.0f;
    optim_field("momentum", c, set);
    c = oc, c.nesterov = 1;
    optim_field("nesterov", c, set);
    c = oc, c.kind = HPCT_OPT_ADAMW, c.beta2 = 1.5f;
    optim_field("beta2", c, set);
    c = oc, c.eps = 0;
    optim_field("eps", c, set);
    c = oc, c.schedule = HPCT_SCHED_STEP, c.gamma = 0;
    optim_field("gamma", c, set);
    c = oc, c.min_lr = 1.0f;
    optim_field("min_lr", c, set);
    c = oc, c.clip_norm = -1;
    optim_field("clip_norm", c, set);
    hpct_params_t empty;
    hpct_optimizer_t opt;
    hpct_params_create(ctx, &empty);
    expect(hpct_optimizer_create(empty, &oc, &opt), HPCT_ERR_STATE, "empty",
           "optimizer over an empty set");
    hpct_params_destroy(empty);

    /* A non-finite gradient with clipping on: refused, parameters untouched. */
    c = oc, c.clip_norm = 1.0f;
    hpct_optimizer_create(set, &c, &opt);
    g[2] = INFINITY;
    expect(hpct_optimizer_step(opt), HPCT_ERR_NONFINITE, "gradient norm",
           "Inf gradient with clipping");
    float extra_p = 0, extra_g = 0;
    expect(hpct_params_register(set, "late", &extra_p, &extra_g, 1), HPCT_ERR_STATE,
           "an optimizer already uses this set", "register after hpct_optimizer_create");
    tap_ok(p[0] == 1 && p[1] == 2 && p[2] == 3 && p[3] == 4,
           "parameters unchanged after the refusal");
    hpct_optimizer_destroy(opt);

    /* Models. */
    hpct_model_t m;
    expect(hpct_model_create(ctx, 0, &m), HPCT_ERR_INVALID_ARG, "input_features is 0",
           "zero inputs");
    hpct_model_create(ctx, 3, &m);
    expect(hpct_model_build(m, 4), HPCT_ERR_STATE, "no layers", "build without layers");
    expect(hpct_model_add_dense(m, 4, (hpct_activation_t)9, HPCT_INIT_AUTO), HPCT_ERR_INVALID_ARG,
           "activation", "unknown activation");
    hpct_model_add_dense(m, 2, HPCT_ACT_RELU, HPCT_INIT_AUTO);
    float x[6] = {1, 2, 3, 4, 5, 6}, out[4];
    int32_t y[2] = {0, 2};
    expect(hpct_model_forward(m, x, 2, out), HPCT_ERR_STATE, "build the model first",
           "forward before build");
    expect(hpct_model_build(m, 0), HPCT_ERR_INVALID_ARG, "max_batch is 0", "zero max_batch");
    hpct_model_build(m, 2);
    expect(hpct_model_add_dense(m, 2, HPCT_ACT_RELU, HPCT_INIT_AUTO), HPCT_ERR_STATE,
           "already built", "add a layer after build");
    expect(hpct_model_loss_grad(m, x, y, 3, 0, NULL), HPCT_ERR_INVALID_ARG, "batch is 3",
           "batch over max_batch");
    expect(hpct_model_loss_grad(m, x, y, 2, 0, NULL), HPCT_ERR_INVALID_ARG, "label 2 of sample 1",
           "label out of range");
    x[0] = NAN, y[1] = 1;
    expect(hpct_model_loss_grad(m, x, y, 2, 0, NULL), HPCT_ERR_NONFINITE, "loss is", "NaN input");
    hpct_model_destroy(m);
    hpct_params_destroy(set);
    hpct_ctx_destroy(ctx);
    return tap_done();
}
