/* mlp_xor.c: the smallest complete use of libhpctrain's built-in models.
 * Trains a 2-16-2 tanh MLP on XOR with SGD and prints the final accuracy.
 * Build: cc mlp_xor.c $(pkg-config --static --cflags --libs hpctrain) */
#include <hpctrain.h>

#include <stdio.h>

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
    const float x[4][2] = {{0, 0}, {0, 1}, {1, 0}, {1, 1}}; /* (4, 2) inputs */
    const int32_t y[4] = {0, 1, 1, 0};                      /* (4) class labels */
    hpct_ctx_t ctx = NULL;
    hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
    cfg.seed = 7;
    CHECK(hpct_ctx_create(&cfg, &ctx));

    hpct_model_t model;
    CHECK(hpct_model_create(ctx, 2, &model));
    CHECK(hpct_model_add_dense(model, 16, HPCT_ACT_TANH, HPCT_INIT_AUTO));
    CHECK(hpct_model_add_dense(model, 2, HPCT_ACT_IDENTITY, HPCT_INIT_AUTO));
    CHECK(hpct_model_build(model, 4));

    hpct_params_t params;
    hpct_optimizer_t opt;
    hpct_optim_config_t ocfg = HPCT_OPTIM_CONFIG_INITIALIZER;
    ocfg.lr = 0.5f;
    ocfg.momentum = 0.9f;
    CHECK(hpct_model_params(model, &params));
    CHECK(hpct_optimizer_create(params, &ocfg, &opt));

    float loss = 0.0f;
    for (int step = 0; step < 300; step++) {
        CHECK(hpct_model_loss_grad(model, &x[0][0], y, 4, 0, &loss));
        CHECK(hpct_optimizer_step(opt));
    }
    double eval_loss, acc;
    CHECK(hpct_model_evaluate(model, &x[0][0], y, 4, &eval_loss, &acc));
    printf("xor: loss %.4f accuracy %.2f\n", eval_loss, acc);

    hpct_optimizer_destroy(opt);
    hpct_model_destroy(model);
    hpct_ctx_destroy(ctx);
    return acc == 1.0 ? 0 : 1;
}
