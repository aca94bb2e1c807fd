/* bench_fortran_c.c: the C side of bench/bench_fortran.F90: the same small training step
 * loop written in C against include/hpctrain.h, and the clock, so that the Fortran wrapper
 * overhead is measured against C in one process, on the same model and data. */
#include <hpctrain.h>

#include "bench_util.h"

double bench_now(void);
int bench_c_steps(hpct_model_t model, hpct_optimizer_t opt, const float *x, const int32_t *y,
                  int batch, long n);
int bench_c_calls(hpct_optimizer_t opt, long n);

/* Monotonic seconds (bench_util.h's clock). */
double bench_now(void)
{
    return now();
}

/* n steps of forward/backward on x [batch, features], labels y [batch], then the update. */
int bench_c_steps(hpct_model_t model, hpct_optimizer_t opt, const float *x, const int32_t *y,
                  int batch, long n)
{
    float loss;
    for (long i = 0; i < n; i++) {
        hpct_status_t s = hpct_model_loss_grad(model, x, y, batch, 0, &loss);
        if (!s) s = hpct_optimizer_step(opt);
        if (s) return s;
    }
    return HPCT_SUCCESS;
}

/* n calls of the cheapest call there is (the optimizer's step counter). */
int bench_c_calls(hpct_optimizer_t opt, long n)
{
    long step;
    for (long i = 0; i < n; i++)
        if (hpct_optimizer_get_step(opt, &step)) return HPCT_ERR_INTERNAL;
    return HPCT_SUCCESS;
}
