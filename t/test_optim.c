/* test_optim.c: optimizer updates, schedules and clipping against hand-computed values. */
#include "hpctrain.h"
#include "lib/tap.h"

#include <math.h>

static hpct_ctx_t ctx;

/* Two steps of cfg on one parameter p = 1 with gradient 0.5; returns p after each. */
static void two_steps(hpct_optim_config_t cfg, float out[2])
{
    float p = 1.0f, g = 0.5f;
    hpct_params_t set;
    hpct_optimizer_t opt;
    hpct_params_create(ctx, &set);
    hpct_params_register(set, "p", &p, &g, 1);
    if (hpct_optimizer_create(set, &cfg, &opt)) tap_bail("optimizer: %s", hpct_last_error(ctx));
    for (int i = 0; i < 2; i++) {
        hpct_optimizer_step(opt);
        out[i] = p;
    }
    hpct_optimizer_destroy(opt);
    hpct_params_destroy(set);
}

static float lr_at(hpct_optim_config_t cfg, long step)
{
    float p = 0, g = 0, lr = -1;
    hpct_params_t set;
    hpct_optimizer_t opt;
    hpct_params_create(ctx, &set);
    hpct_params_register(set, "p", &p, &g, 1);
    hpct_optimizer_create(set, &cfg, &opt);
    hpct_optimizer_lr_at(opt, step, &lr);
    hpct_optimizer_destroy(opt);
    hpct_params_destroy(set);
    return lr;
}

int main(void)
{
    tap_plan(22);
    hpct_ctx_create(NULL, &ctx);
    const double tol = 1e-6;
    float p[2];

    hpct_optim_config_t c = HPCT_OPTIM_CONFIG_INITIALIZER;
    c.lr = 0.1f;
    two_steps(c, p);
    tap_within(p[0], 0.95, tol, "plain SGD step 1: 1 - 0.1*0.5");
    tap_within(p[1], 0.90, tol, "plain SGD step 2");

    c.momentum = 0.9f;
    two_steps(c, p);
    tap_within(p[0], 0.95, tol, "momentum SGD step 1: v = 0.5");
    tap_within(p[1], 0.855, tol, "momentum SGD step 2: v = 0.95");

    c.nesterov = 1;
    two_steps(c, p);
    tap_within(p[0], 0.905, tol, "Nesterov step 1: g + mu v = 0.95");
    tap_within(p[1], 0.7695, tol, "Nesterov step 2: 0.5 + 0.9*0.95 = 1.355");

    c = (hpct_optim_config_t)HPCT_OPTIM_CONFIG_INITIALIZER;
    c.lr = 0.1f;
    c.weight_decay = 0.1f;
    two_steps(c, p);
    tap_within(p[0], 0.94, tol, "SGD weight decay: g' = 0.5 + 0.1*1");
    tap_within(p[1], 0.94 - 0.1 * (0.5 + 0.094), tol, "SGD weight decay step 2");

    c = (hpct_optim_config_t)HPCT_OPTIM_CONFIG_INITIALIZER;
    c.kind = HPCT_OPT_ADAMW;
    c.lr = 0.1f;
    c.weight_decay = 0.01f;
    two_steps(c, p);
    tap_within(p[0], 1 - 0.1 * (0.5 / (0.5 + 1e-8) + 0.01), 1e-5,
               "AdamW step 1: unit step plus decay");
    tap_within(p[1], p[0] - 0.1 * (0.5 / (0.5 + 1e-8) + 0.01 * p[0]), 1e-5, "AdamW step 2");

    /* Schedules: lr 1, linear warmup over 4 steps, then the named decay. */
    c = (hpct_optim_config_t)HPCT_OPTIM_CONFIG_INITIALIZER;
    c.lr = 1.0f;
    c.warmup_steps = 4;
    tap_within(lr_at(c, 0), 0.25, tol, "warmup step 0: lr/4");
    tap_within(lr_at(c, 2), 0.75, tol, "warmup step 2: 3 lr/4");
    tap_within(lr_at(c, 1000), 1.0, tol, "constant after warmup");
    c.schedule = HPCT_SCHED_STEP;
    c.step_size = 10;
    c.gamma = 0.5f;
    tap_within(lr_at(c, 4 + 9), 1.0, tol, "step schedule: unchanged before step_size");
    tap_within(lr_at(c, 4 + 10), 0.5, tol, "step schedule: halved at step_size");
    tap_within(lr_at(c, 4 + 25), 0.25, tol, "step schedule: quartered after 2 step_size");
    c.schedule = HPCT_SCHED_COSINE;
    c.total_steps = 100;
    c.min_lr = 0.0f;
    tap_within(lr_at(c, 4 + 25), 0.5 * (1 + cos(M_PI / 4)), 1e-6, "cosine at a quarter");
    tap_within(lr_at(c, 4 + 50), 0.5, 1e-6, "cosine at half way");
    c.min_lr = 0.1f;
    tap_within(lr_at(c, 4 + 100), 0.1, 1e-6, "cosine floor at total_steps");
    tap_within(lr_at(c, 4 + 500), 0.1, 1e-6, "cosine stays at the floor");

    /* Clipping: gradient (3, 4) has norm 5; clip to 1 scales it by 1/5. */
    float w[2] = {0, 0}, g[2] = {3, 4};
    hpct_params_t set;
    hpct_optimizer_t opt;
    hpct_params_create(ctx, &set);
    hpct_params_register(set, "w", w, g, 2);
    c = (hpct_optim_config_t)HPCT_OPTIM_CONFIG_INITIALIZER;
    c.lr = 1.0f;
    c.clip_norm = 1.0f;
    hpct_optimizer_create(set, &c, &opt);
    hpct_optimizer_step(opt);
    tap_ok(fabs(w[0] + 0.6) < 1e-5 && fabs(w[1] + 0.8) < 1e-5,
           "global-norm clipping to 1: w = (%.6f, %.6f), want (-0.6, -0.8)", w[0], w[1]);
    g[0] = 0.3f, g[1] = 0.4f;
    w[0] = w[1] = 0;
    hpct_optimizer_step(opt);
    tap_ok(fabs(w[0] + 0.3) < 1e-6 && fabs(w[1] + 0.4) < 1e-6,
           "a norm under the limit is not clipped: w = (%.6f, %.6f)", w[0], w[1]);
    hpct_optimizer_destroy(opt);
    hpct_params_destroy(set);
    hpct_ctx_destroy(ctx);
    return tap_done();
}
