/* hdf5_lock.c: the one process-wide lock around HDF5 (Debian's HDF5 is not thread-safe;
 * see core.h). */
#include "core.h"

#include <hdf5.h>
#include <pthread.h>

static pthread_mutex_t hdf5_mutex = PTHREAD_MUTEX_INITIALIZER;
/* The caller's automatic error printing, put back by hpcti_hdf5_unlock (guarded by the
 * mutex; the lock is never nested). */
static H5E_auto2_t saved_func;
static void *saved_data;

void hpcti_hdf5_lock(void)
{
    pthread_mutex_lock(&hdf5_mutex);
    /* HDF5 prints its error stack on stderr by default; the library reports through
     * hpct_last_error instead. The switch is per thread in a thread-safe HDF5, so it is
     * set here, on the thread that is about to call HDF5 (the checkpoint writer thread too). */
    if (H5Eget_auto2(H5E_DEFAULT, &saved_func, &saved_data) < 0)
        saved_func = NULL, saved_data = NULL;
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

void hpcti_hdf5_unlock(void)
{
    H5Eset_auto2(H5E_DEFAULT, saved_func, saved_data);
    pthread_mutex_unlock(&hdf5_mutex);
}
