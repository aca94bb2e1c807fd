/* mpi_prog.c: what the multi-rank test programs share (see mpi_prog.h). */
#include "mpi_prog.h"

#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

int world_rank, world_size, failures;

hpct_ctx_t mpi_start(const hpct_config_t *cfg)
{
    hpct_ctx_t ctx;
    hpct_status_t s = hpct_init(cfg, &ctx);
    if (s) {
        fprintf(stderr, "hpct_init failed: %s\n", hpct_strerror(s));
        exit(2);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    return ctx;
}

void check(int cond, const char *fmt, ...)
{
    int all = cond ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all) failures++;
    if (world_rank != 0) return;
    char msg[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    printf("%s W=%d: %s\n", all ? "PASS" : "FAIL", world_size, msg);
    fflush(stdout);
}

void toy_data(float *x, int32_t *y, int n, unsigned long long seed)
{
    unsigned long long st = seed * 2654435761ull + 1;
    for (int i = 0; i < n * TOY_FEATURES; i++) {
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)((st >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f;
    }
    for (int i = 0; i < n; i++) {
        float best = -1e30f;
        for (int c = 0; c < TOY_CLASSES; c++) {
            float v = 0;
            for (int f = 0; f < TOY_FEATURES; f++)
                v += x[i * TOY_FEATURES + f] * (float)(((f * 7 + c * 3) % 5) - 2);
            if (v > best) best = v, y[i] = c;
        }
    }
}
