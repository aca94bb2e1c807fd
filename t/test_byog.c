/* test_byog.c: bring-your-own-gradients: caller-owned buffers, grad helpers, optimizer state. */
#include "hpctrain.h"
#include "lib/tap.h"

#include <math.h>
#include <string.h>

int main(void)
{
    tap_plan(13);
    hpct_ctx_t ctx;
    hpct_ctx_create(NULL, &ctx);
    float a[3] = {1, 2, 3}, ga[3] = {0.5f, -1, 2};
    float b[2] = {-1, 4}, gb[2] = {2, 0};
    hpct_params_t set;
    tap_is_int(hpct_params_create(ctx, &set), HPCT_SUCCESS, "create an empty set");
    tap_is_int(hpct_params_register(set, "layer.a", a, ga, 3), HPCT_SUCCESS, "register a (3)");
    tap_is_int(hpct_params_register(set, "layer.b", b, gb, 2), HPCT_SUCCESS, "register b (2)");
    int nb;
    size_t total;
    hpct_params_size(set, &nb, &total);
    tap_ok(nb == 2 && total == 5, "two buffers, five elements (got %d, %zu)", nb, total);
    const char *name;
    float *pp, *gp;
    size_t n;
    hpct_params_get(set, 1, &name, &pp, &gp, &n);
    tap_ok(strcmp(name, "layer.b") == 0 && pp == b && gp == gb && n == 2,
           "get returns the caller's own buffers by index");

    double norm;
    hpct_params_grad_norm(set, &norm);
    tap_within(norm, sqrt(0.25 + 1 + 4 + 4), 1e-9, "global gradient norm");
    hpct_params_scale_grads(set, 0.5f);
    tap_ok(ga[2] == 1.0f && gb[0] == 1.0f, "scale_grads halves every gradient");

    hpct_optim_config_t oc = HPCT_OPTIM_CONFIG_INITIALIZER;
    oc.lr = 1.0f;
    oc.momentum = 0.5f;
    hpct_optimizer_t opt;
    tap_is_int(hpct_optimizer_create(set, &oc, &opt), HPCT_SUCCESS,
               "SGD over the caller's buffers");
    hpct_optimizer_step(opt);
    tap_ok(a[0] == 0.75f && a[2] == 2.0f && b[0] == -2.0f && b[1] == 4.0f,
           "one step moved every parameter by -lr * grad");
    int slots;
    float *v;
    hpct_optimizer_state_slots(opt, &slots);
    hpct_optimizer_state(opt, 1, 0, &v, &n);
    tap_ok(slots == 1 && n == 2 && v[0] == 1.0f, "momentum state of b is readable (slots %d)",
           slots);
    long step;
    hpct_optimizer_get_step(opt, &step);
    tap_is_int(step, 1, "the optimizer counts its steps");

    hpct_params_zero_grads(set);
    tap_ok(ga[0] == 0 && ga[1] == 0 && ga[2] == 0 && gb[0] == 0 && gb[1] == 0,
           "zero_grads clears all");
    hpct_optimizer_step(opt); /* zero gradient: momentum alone moves b[0] by -0.5 */
    tap_ok(b[0] == -2.5f, "momentum carries on with a zero gradient (b0 = %g)", b[0]);
    hpct_optimizer_destroy(opt);
    hpct_params_destroy(set);
    hpct_ctx_destroy(ctx);
    return tap_done();
}
