/* test_gradcheck.c: the library's fp32 gradients against centred differences of an
 * independent float64 reference, for every activation and loss. */
#include "hpctrain.h"
#include "lib/tap.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define B 5                               /* batch */
static const int widths[] = {6, 7, 5, 4}; /* input 6 -> 7 -> 5 -> 4 outputs */
#define NL 3

static double act_ref(int act, double z)
{
    switch (act) {
    case HPCT_ACT_RELU: return z > 0 ? z : 0;
    case HPCT_ACT_TANH: return tanh(z);
    case HPCT_ACT_GELU: return 0.5 * z * (1 + tanh(sqrt(2 / M_PI) * (z + 0.044715 * z * z * z)));
    default: return z;
    }
}

/* Float64 loss of the model with parameters theta (W0 b0 W1 b1 ... as in the flat set). */
static double ref_loss(const double *theta, const float *x, const void *t, int act, int loss)
{
    double a[B][8], z[B][8];
    for (int i = 0; i < B; i++)
        for (int j = 0; j < widths[0]; j++) a[i][j] = x[i * widths[0] + j];
    for (int l = 0; l < NL; l++) {
        int in = widths[l], out = widths[l + 1];
        const double *w = theta, *b = theta + in * out;
        theta += in * out + out;
        for (int i = 0; i < B; i++)
            for (int o = 0; o < out; o++) {
                double s = b[o];
                for (int k = 0; k < in; k++) s += w[o * in + k] * a[i][k];
                z[i][o] = l == NL - 1 ? s : act_ref(act, s); /* last layer is identity */
            }
        memcpy(a, z, sizeof a);
    }
    int outs = widths[NL];
    double total = 0;
    for (int i = 0; i < B; i++) {
        if (loss == HPCT_LOSS_MSE) {
            for (int o = 0; o < outs; o++) {
                double e = a[i][o] - ((const float *)t)[i * outs + o];
                total += e * e / (B * outs);
            }
        } else {
            double mx = a[i][0], s = 0;
            for (int o = 1; o < outs; o++) mx = fmax(mx, a[i][o]);
            for (int o = 0; o < outs; o++) s += exp(a[i][o] - mx);
            total += (log(s) + mx - a[i][((const int32_t *)t)[i]]) / B;
        }
    }
    return total;
}

static const char *act_names[] = {"identity", "relu", "tanh", "gelu"};

static void check(int act, int loss)
{
    const char *lname = loss == HPCT_LOSS_MSE ? "mse" : "softmax-ce";
    hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
    cfg.seed = 1000 + act * 10 + loss;
    hpct_ctx_t ctx;
    hpct_model_t m;
    hpct_params_t p;
    hpct_ctx_create(&cfg, &ctx);
    hpct_model_create(ctx, widths[0], &m);
    for (int l = 0; l < NL; l++)
        hpct_model_add_dense(m, widths[l + 1], l == NL - 1 ? HPCT_ACT_IDENTITY : act,
                             HPCT_INIT_XAVIER);
    hpct_model_set_loss(m, loss);
    if (hpct_model_build(m, B) || hpct_model_params(m, &p)) tap_bail("model build failed");

    float x[B * 6], tf[B * 4];
    int32_t tl[B];
    srand(act * 2 + loss + 1);
    for (int i = 0; i < B * 6; i++) x[i] = (float)(2.0 * rand() / RAND_MAX - 1.0);
    for (int i = 0; i < B * 4; i++) tf[i] = (float)(2.0 * rand() / RAND_MAX - 1.0);
    for (int i = 0; i < B; i++) tl[i] = i % 4;
    const void *t = loss == HPCT_LOSS_MSE ? (const void *)tf : (const void *)tl;

    /* Give biases non-zero values so their gradients are exercised off the origin. */
    int nb;
    size_t total;
    hpct_params_size(p, &nb, &total);
    double *theta = malloc(sizeof(double) * total);
    size_t off = 0;
    for (int i = 0; i < nb; i++) {
        float *param;
        size_t n;
        const char *name;
        hpct_params_get(p, i, &name, &param, NULL, &n);
        if (strstr(name, "bias"))
            for (size_t k = 0; k < n; k++) param[k] = 0.1f * (float)((int)k % 3 - 1);
        for (size_t k = 0; k < n; k++) theta[off + k] = param[k];
        off += n;
    }

    float lib_loss;
    hpct_status_t s = hpct_model_loss_grad(m, x, t, B, 0, &lib_loss);
    tap_within(lib_loss, ref_loss(theta, x, t, act, loss), 1e-5 * (1 + fabs(lib_loss)),
               "%s/%s: loss matches the float64 reference (status %d)", act_names[act], lname, s);

    /* Centred differences in float64 (h = 1e-6) against the library's fp32 gradients. */
    double err2 = 0, ref2 = 0, worst = 0;
    off = 0;
    for (int i = 0; i < nb; i++) {
        float *grad;
        size_t n;
        hpct_params_get(p, i, NULL, NULL, &grad, &n);
        for (size_t k = 0; k < n; k++) {
            double keep = theta[off + k], h = 1e-6;
            theta[off + k] = keep + h;
            double up = ref_loss(theta, x, t, act, loss);
            theta[off + k] = keep - h;
            double down = ref_loss(theta, x, t, act, loss);
            theta[off + k] = keep;
            double num = (up - down) / (2 * h);
            err2 += (grad[k] - num) * (grad[k] - num);
            ref2 += num * num;
            worst = fmax(worst, fabs(grad[k] - num));
        }
        off += n;
    }
    double rel = sqrt(err2 / ref2);
    tap_ok(rel < 1e-3,
           "%s/%s: relative gradient error %.2e < 1e-3 over %zu parameters (max abs %.1e)",
           act_names[act], lname, rel, total, worst);

    /* accumulate = 1 adds a second copy of the same gradients. */
    float *g0;
    size_t n0;
    hpct_params_get(p, 0, NULL, NULL, &g0, &n0);
    float before = g0[1];
    hpct_model_loss_grad(m, x, t, B, 1, &lib_loss);
    tap_within(g0[1], 2 * before, 1e-6 * (1 + fabs(before)), "%s/%s: accumulate adds gradients",
               act_names[act], lname);
    free(theta);
    hpct_model_destroy(m);
    hpct_ctx_destroy(ctx);
}

int main(void)
{
    tap_plan(4 * 2 * 3);
    for (int act = HPCT_ACT_IDENTITY; act <= HPCT_ACT_GELU; act++) {
        check(act, HPCT_LOSS_SOFTMAX_CE);
        check(act, HPCT_LOSS_MSE);
    }
    return tap_done();
}
