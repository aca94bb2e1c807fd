/* walltime_probe.c: prints "remaining <seconds>" from hpct_walltime_remaining, or
 * "none <status>" (used by t/test_walltime_slurm.sh inside and outside a Slurm job). */
#include "hpctrain.h"

#include <stdio.h>

int main(void)
{
    hpct_ctx_t ctx;
    if (hpct_ctx_create(NULL, &ctx)) return 2;
    double left = 0;
    hpct_status_t s = hpct_walltime_remaining(ctx, &left);
    if (s)
        printf("none %d %s\n", s, hpct_last_error(ctx));
    else
        printf("remaining %.0f\n", left);
    hpct_ctx_destroy(ctx);
    return 0;
}
