/* validate.c: what a checkpoint's values must be once their checksums pass. A checksum only
 * says the bytes are the ones written; these checks say the values make sense, so resume
 * and `hpctrain ckpt verify` refuse the same files (a crafted or buggy writer's). */
#include "config.h"
#include "ckpt.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Largest step, epoch or cursor accepted: 10^15 (beyond any real run, far from overflow). */
#define VALUE_MAX 1000000000000000LL
/* Largest world size accepted (ranks). */
#define WORLD_MAX (1LL << 24)

/* The step in the file name (ckpt-<12 digits>[-keep].h5), or -1 for another name. */
static long long step_of_name(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    long long step;
    int used = 0;
    if (sscanf(base, "ckpt-%12lld%n", &step, &used) != 1 || used != 17) return -1;
    return !strcmp(base + used, ".h5") || !strcmp(base + used, "-keep.h5") ? step : -1;
}

static const char *out_of_range(const char *name, int64_t v, long long lo, long long hi, char *why,
                                size_t n)
{
    if (v >= lo && v <= hi) return NULL;
    snprintf(why, n, "%s is %lld, outside [%lld, %lld]", name, (long long)v, lo, hi);
    return why;
}

const char *hpcti_ck_values_problem(const hpcti_ck_values_t *v, const char *path, char *why,
                                    size_t n)
{
    const char *p;
    if ((p = out_of_range("meta/step", v->step, 0, VALUE_MAX, why, n)) ||
        (p = out_of_range("meta/epoch", v->epoch, 0, VALUE_MAX, why, n)) ||
        (p = out_of_range("meta/cursor_epoch", v->cursor_epoch, 0, VALUE_MAX, why, n)) ||
        (p = out_of_range("meta/cursor_step", v->cursor_step, 0, VALUE_MAX, why, n)) ||
        (p = out_of_range("meta/world_size", v->world_size, 1, WORLD_MAX, why, n)) ||
        (p = out_of_range("meta/global_batch", v->global_batch, 0, VALUE_MAX, why, n)) ||
        (p = out_of_range("meta/serial", v->serial, 0, HPCTI_CKPT_SERIAL_MAX, why, n)))
        return p;
    if (v->has_opt_step && (p = out_of_range("optimizer/step", v->opt_step, 0, VALUE_MAX, why, n)))
        return p;
    long long named = step_of_name(path);
    if (named >= 0 && named != v->step) {
        snprintf(why, n, "meta/step is %lld but the file name says step %lld", (long long)v->step,
                 named);
        return why;
    }
    if (!isfinite(v->saved_at) || v->saved_at < 0) {
        snprintf(why, n, "meta/saved_at is %g, not a time", v->saved_at);
        return why;
    }
    if (v->has_rng) {
        uint64_t any = 0;
        for (int i = 0; i < HPCT_RNG_STATE_WORDS; i++) any |= v->rng[i];
        if (!any) {
            snprintf(why, n, "rng/state is all zero (a generator that only ever returns 0)");
            return why;
        }
    }
    return NULL;
}

/* Index of the first non-finite element of data [count] of dtype (F32 or F64), or -1. */
long long hpcti_ck_first_nonfinite(const void *data, int dtype, size_t count)
{
    for (size_t k = 0; k < count; k++) {
        double x = dtype == HPCT_CKPT_F32 ? ((const float *)data)[k] : ((const double *)data)[k];
        if (!isfinite(x)) return (long long)k;
    }
    return -1;
}

int hpcti_ck_must_be_finite(const char *path, int dtype)
{
    return (dtype == HPCT_CKPT_F32 || dtype == HPCT_CKPT_F64) &&
           (!strncmp(path, "params/", 7) || !strncmp(path, "optimizer/", 10));
}
