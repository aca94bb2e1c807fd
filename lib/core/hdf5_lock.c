/* hdf5_lock.c: the one process-wide lock around HDF5 (Debian's HDF5 is not thread-safe;
 * see core.h). */
#include "core.h"

#include <pthread.h>

static pthread_mutex_t hdf5_mutex = PTHREAD_MUTEX_INITIALIZER;

void hpcti_hdf5_lock(void)
{
    pthread_mutex_lock(&hdf5_mutex);
}

void hpcti_hdf5_unlock(void)
{
    pthread_mutex_unlock(&hdf5_mutex);
}
