/* bench_util.h: small helpers shared by the benchmarks in bench/. */
#ifndef HPCT_BENCH_UTIL_H
#define HPCT_BENCH_UTIL_H

#include <errno.h>
#include <stdio.h>
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

/* The integer environment variable name, in [lo, hi]; dflt where it is unset or empty.
 * Anything else ends the program with a message naming it (every rank reads the same). */
static inline long env_long(const char *name, long dflt, long lo, long hi)
{
    const char *s = getenv(name);
    if (!s || !*s) return dflt;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < lo || v > hi) {
        fprintf(stderr, "%s is '%s': expected an integer from %ld to %ld\n", name, s, lo, hi);
        exit(2);
    }
    return v;
}

#endif
