/* status.c: status code strings and the library version. */
#include "core.h"

#include <pthread.h>
#include <time.h>

const char *hpct_strerror(hpct_status_t status)
{
    switch (status) {
    case HPCT_SUCCESS: return "success";
    case HPCT_PREEMPTED: return "preempted: stopped at a step boundary after a signal";
    case HPCT_ERR_INVALID_ARG: return "invalid argument";
    case HPCT_ERR_NO_MEMORY: return "out of memory";
    case HPCT_ERR_STATE: return "call made in the wrong state";
    case HPCT_ERR_UNSUPPORTED: return "not supported by this build";
    case HPCT_ERR_IO: return "I/O error";
    case HPCT_ERR_FORMAT: return "bad file or data format";
    case HPCT_ERR_CHECKSUM: return "checksum mismatch";
    case HPCT_ERR_NOT_FOUND: return "not found";
    case HPCT_ERR_NONFINITE: return "non-finite value (NaN or Inf)";
    case HPCT_ERR_COMM: return "communication error";
    case HPCT_ERR_TIMEOUT: return "collective deadline exceeded";
    case HPCT_ERR_DIVERGED: return "replicas diverged";
    case HPCT_ERR_INTERNAL: return "internal error in libhpctrain";
    default: return "unknown status code";
    }
}

void hpct_get_version(int *major, int *minor, int *patch)
{
    if (major) *major = HPCT_VERSION_MAJOR;
    if (minor) *minor = HPCT_VERSION_MINOR;
    if (patch) *patch = HPCT_VERSION_PATCH;
}

/* The one process-wide lock around HDF5 (see core.h). */
static pthread_mutex_t hdf5_mutex = PTHREAD_MUTEX_INITIALIZER;

void hpcti_hdf5_lock(void)
{
    pthread_mutex_lock(&hdf5_mutex);
}

void hpcti_hdf5_unlock(void)
{
    pthread_mutex_unlock(&hdf5_mutex);
}

double hpcti_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
