/* bench_util.h: small helpers shared by the benchmarks in bench/. */
#ifndef HPCT_BENCH_UTIL_H
#define HPCT_BENCH_UTIL_H

#include <stdlib.h>
#include <time.h>

/* Monotonic wall clock in seconds. */
static inline double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* n floats of deterministic pseudo-random values in [0, scale). */
static inline float *filled(size_t n, float scale)
{
    float *p = malloc(n * sizeof *p);
    for (size_t i = 0; p && i < n; i++) p[i] = scale * (float)((i * 2654435761u) % 1000) / 1000.0f;
    return p;
}

#endif
