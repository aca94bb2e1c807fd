/* test_spirals.c: a small MLP learns the two-spirals problem (not linearly separable). */
#include "hpctrain.h"
#include "lib/tap.h"

#include <math.h>
#include <stdlib.h>

#define N      400 /* points, half per spiral */
#define BATCH  40
#define EPOCHS 300

/* Two interleaved spirals of 1.5 turns, labels 0 and 1. */
static void make_spirals(float *x, int32_t *y)
{
    for (int i = 0; i < N; i++) {
        int cls = i % 2;
        double t = 0.25 + 3.0 * M_PI * (i / 2) / (N / 2); /* angle along the arm */
        double r = t / (3.0 * M_PI);
        double sign = cls ? -1.0 : 1.0;
        x[2 * i] = (float)(sign * r * cos(t));
        x[2 * i + 1] = (float)(sign * r * sin(t));
        y[i] = cls;
    }
}

int main(void)
{
    tap_plan(4);
    static float x[N * 2];
    static int32_t y[N];
    make_spirals(x, y);

    hpct_ctx_t ctx;
    hpct_model_t m;
    hpct_params_t p;
    hpct_optimizer_t opt;
    hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
    cfg.seed = 3;
    hpct_ctx_create(&cfg, &ctx);
    hpct_model_create(ctx, 2, &m);
    /* He scale on the first layer: Xavier's small weights with zero biases leave every
     * first-layer boundary near the origin and training stalls (PyTorch behaves alike). */
    hpct_model_add_dense(m, 64, HPCT_ACT_TANH, HPCT_INIT_HE);
    hpct_model_add_dense(m, 64, HPCT_ACT_TANH, HPCT_INIT_AUTO);
    hpct_model_add_dense(m, 2, HPCT_ACT_IDENTITY, HPCT_INIT_AUTO);
    tap_is_int(hpct_model_build(m, BATCH), HPCT_SUCCESS, "2-64-64-2 tanh model builds");
    hpct_optim_config_t oc = HPCT_OPTIM_CONFIG_INITIALIZER;
    oc.kind = HPCT_OPT_ADAMW;
    oc.lr = 0.01f;
    oc.schedule = HPCT_SCHED_COSINE;
    oc.warmup_steps = 50;
    oc.total_steps = EPOCHS * (N / BATCH) - 50;
    hpct_model_params(m, &p);
    hpct_optimizer_create(p, &oc, &opt);

    double loss0, acc0, loss, acc;
    hpct_model_evaluate(m, x, y, N, &loss0, &acc0);
    /* A fixed permutation per epoch from a local LCG keeps the test deterministic. */
    int order[N];
    for (int i = 0; i < N; i++) order[i] = i;
    uint32_t lcg = 12345;
    float bx[BATCH * 2];
    int32_t by[BATCH];
    int failed = 0;
    for (int e = 0; e < EPOCHS && !failed; e++) {
        for (int i = N - 1; i > 0; i--) {
            lcg = lcg * 1664525u + 1013904223u;
            int j = (int)(lcg % (uint32_t)(i + 1)), t = order[i];
            order[i] = order[j], order[j] = t;
        }
        for (int b = 0; b < N / BATCH && !failed; b++) {
            for (int k = 0; k < BATCH; k++) {
                int s = order[b * BATCH + k];
                bx[2 * k] = x[2 * s], bx[2 * k + 1] = x[2 * s + 1], by[k] = y[s];
            }
            float l;
            failed = hpct_model_loss_grad(m, bx, by, BATCH, 0, &l) || hpct_optimizer_step(opt);
        }
    }
    tap_ok(!failed, "%d epochs of training ran without error", EPOCHS);
    hpct_model_evaluate(m, x, y, N, &loss, &acc);
    tap_diag("before: loss %.4f accuracy %.3f; after: loss %.4f accuracy %.3f", loss0, acc0, loss,
             acc);
    tap_ok(loss < 0.25 * loss0, "loss fell from %.3f to %.3f (< 1/4)", loss0, loss);
    tap_ok(acc >= 0.97, "two-spirals training accuracy %.3f >= 0.97", acc);
    hpct_optimizer_destroy(opt);
    hpct_model_destroy(m);
    hpct_ctx_destroy(ctx);
    return tap_done();
}
