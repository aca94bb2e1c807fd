/* byog.c: bring-your-own-gradients. The caller owns its parameters and computes
 * their gradients itself (here: least squares, w . x ~ y); libhpctrain steps AdamW.
 * Build: cc byog.c $(pkg-config --static --cflags --libs hpctrain) */
#include <hpctrain.h>

#include <math.h>
#include <stdio.h>

#define N 64 /* samples */
#define D 3  /* features */

#define CHECK(call)                                                                                \
    do {                                                                                           \
        hpct_status_t s_ = (call);                                                                 \
        if (s_ != HPCT_SUCCESS) {                                                                  \
            fprintf(stderr, "%s: %s (%s)\n", #call, hpct_strerror(s_), hpct_last_error(ctx));      \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

int main(void)
{
    const float truth[D] = {1.5f, -2.0f, 0.25f};
    float x[N][D], y[N];
    for (int i = 0; i < N; i++) {
        y[i] = 0.0f;
        for (int j = 0; j < D; j++) {
            x[i][j] = sinf(0.37f * (float)((i + 1) * (j + 2))); /* deterministic inputs */
            y[i] += truth[j] * x[i][j];
        }
    }
    float w[D] = {0}, dw[D]; /* the caller's parameters and gradients */

    hpct_ctx_t ctx = NULL;
    CHECK(hpct_ctx_create(NULL, &ctx));
    hpct_params_t params;
    CHECK(hpct_params_create(ctx, &params));
    CHECK(hpct_params_register(params, "w", w, dw, D));
    hpct_optim_config_t ocfg = HPCT_OPTIM_CONFIG_INITIALIZER;
    ocfg.kind = HPCT_OPT_ADAMW;
    ocfg.lr = 0.05f;
    hpct_optimizer_t opt;
    CHECK(hpct_optimizer_create(params, &ocfg, &opt));

    for (int step = 0; step < 2000; step++) {
        for (int j = 0; j < D; j++) dw[j] = 0.0f;
        for (int i = 0; i < N; i++) { /* d/dw of mean (w.x - y)^2 */
            float e = -y[i];
            for (int j = 0; j < D; j++) e += w[j] * x[i][j];
            for (int j = 0; j < D; j++) dw[j] += 2.0f * e * x[i][j] / N;
        }
        CHECK(hpct_optimizer_step(opt));
    }
    float err = 0.0f;
    for (int j = 0; j < D; j++) err = fmaxf(err, fabsf(w[j] - truth[j]));
    printf("byog: w = (%.4f, %.4f, %.4f), max error %.2g\n", w[0], w[1], w[2], err);

    hpct_optimizer_destroy(opt);
    hpct_params_destroy(params);
    hpct_ctx_destroy(ctx);
    return err < 1e-2f ? 0 : 1;
}
