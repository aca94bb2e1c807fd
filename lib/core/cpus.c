/* cpus.c: the CPUs this process may run on, for rules that depend on spare cores. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "core.h"

#include <sched.h>
#include <unistd.h>

int hpcti_cpus_usable(long *online)
{
    cpu_set_t set;
    long on = sysconf(_SC_NPROCESSORS_ONLN);
    if (online) *online = on;
    return sched_getaffinity(0, sizeof set, &set) ? (int)on : CPU_COUNT(&set);
}
