/* stats.c: per-rank step times of a report interval: min, median, max, the slowest rank, and
 * the straggler rule (slower than the median by more than a threshold, several reports in a
 * row). Rank 0 runs it on the times gathered at the step-boundary agreement. */
#include "obs.h"

#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void hpcti_step_stats(const double *t, int n, double *scratch, struct hpcti_step_stats *out)
{
    memcpy(scratch, t, (size_t)n * sizeof *t);
    qsort(scratch, (size_t)n, sizeof *scratch, cmp_double);
    out->min = scratch[0], out->max = scratch[n - 1];
    out->median = n % 2 ? scratch[n / 2] : 0.5 * (scratch[n / 2 - 1] + scratch[n / 2]);
    out->slowest = 0;
    for (int r = 1; r < n; r++)
        if (t[r] > t[out->slowest]) out->slowest = r;
    int m = n - 1; /* the sorted times without one copy of the max: scratch [0, m) */
    out->others = m == 0  ? out->max
                  : m % 2 ? scratch[m / 2]
                          : 0.5 * (scratch[m / 2 - 1] + scratch[m / 2]);
}

void hpcti_straggler_init(struct hpcti_straggler *d, double threshold, int persist)
{
    d->threshold = threshold, d->persist = persist > 0 ? persist : 1;
    d->rank = -1, d->count = 0, d->warned = -1;
}

int hpcti_straggler_feed(struct hpcti_straggler *d, const struct hpcti_step_stats *st)
{
    int slow = d->threshold > 0 && st->max > st->others * (1.0 + d->threshold) &&
               st->max - st->others > HPCTI_STRAGGLER_MIN_S;
    if (!slow) {
        d->rank = -1, d->count = 0, d->warned = -1;
        return 0;
    }
    d->count = st->slowest == d->rank ? d->count + 1 : 1;
    d->rank = st->slowest;
    if (d->count < d->persist || d->warned == d->rank) return 0;
    d->warned = d->rank;
    return 1;
}
