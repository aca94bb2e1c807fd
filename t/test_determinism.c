/* test_determinism.c: same seed, bit-identical weights after 100 steps; other seed, other weights.
 */
#include "hpctrain.h"
#include "lib/tap.h"

#include <stdlib.h>
#include <string.h>

#define IN    20
#define BATCH 16

/* Train a 20-32-32-5 GELU/ReLU MLP for 100 AdamW steps; return a copy of all parameters. */
static float *train(uint64_t seed, size_t *count)
{
    hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
    cfg.seed = seed;
    hpct_ctx_t ctx;
    hpct_model_t m;
    hpct_params_t p;
    hpct_optimizer_t opt;
    hpct_optim_config_t oc = HPCT_OPTIM_CONFIG_INITIALIZER;
    oc.kind = HPCT_OPT_ADAMW;
    oc.lr = 1e-3f;
    oc.weight_decay = 0.01f;
    oc.schedule = HPCT_SCHED_COSINE;
    oc.warmup_steps = 10;
    oc.total_steps = 90;
    oc.clip_norm = 1.0f;
    hpct_ctx_create(&cfg, &ctx);
    hpct_model_create(ctx, IN, &m);
    hpct_model_add_dense(m, 32, HPCT_ACT_GELU, HPCT_INIT_AUTO);
    hpct_model_add_dense(m, 32, HPCT_ACT_RELU, HPCT_INIT_AUTO);
    hpct_model_add_dense(m, 5, HPCT_ACT_IDENTITY, HPCT_INIT_AUTO);
    if (hpct_model_build(m, BATCH) || hpct_model_params(m, &p) ||
        hpct_optimizer_create(p, &oc, &opt))
        tap_bail("setup failed: %s", hpct_last_error(ctx));
    float x[BATCH * IN];
    int32_t y[BATCH];
    for (int step = 0; step < 100; step++) {
        for (int i = 0; i < BATCH * IN; i++)
            x[i] = (float)((i * 7919 + step * 104729) % 1000) / 500.0f - 1.0f;
        for (int i = 0; i < BATCH; i++) y[i] = (i + step) % 5;
        float loss;
        if (hpct_model_loss_grad(m, x, y, BATCH, 0, &loss) || hpct_optimizer_step(opt))
            tap_bail("step %d failed: %s", step, hpct_last_error(ctx));
    }
    int nb;
    hpct_params_size(p, &nb, count);
    float *copy = malloc(sizeof(float) * *count), *dst = copy;
    for (int i = 0; i < nb; i++) {
        float *param;
        size_t n;
        hpct_params_get(p, i, NULL, &param, NULL, &n);
        memcpy(dst, param, sizeof(float) * n);
        dst += n;
    }
    hpct_optimizer_destroy(opt);
    hpct_model_destroy(m);
    hpct_ctx_destroy(ctx);
    return copy;
}

int main(void)
{
    tap_plan(3);
    size_t na, nb, nc;
    float *a = train(2024, &na), *b = train(2024, &nb), *c = train(2025, &nc);
    tap_ok(na == nb && na == nc && na > 0, "three runs have %zu parameters each", na);
    tap_ok(memcmp(a, b, sizeof(float) * na) == 0,
           "same seed: bit-identical weights after 100 steps");
    size_t differing = 0;
    for (size_t i = 0; i < na; i++) differing += a[i] != c[i];
    tap_ok(differing > na / 2, "different seed: %zu of %zu weights differ", differing, na);
    free(a), free(b), free(c);
    return tap_done();
}
