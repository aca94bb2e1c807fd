/* clock.c: the library's one monotonic clock (collective deadlines, checkpoint cadence,
 * training timers). */
#include "core.h"

#include <time.h>

double hpcti_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
