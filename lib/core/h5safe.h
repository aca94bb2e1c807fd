/* h5safe.h: checks before the library reads an HDF5 object it did not write itself
 * (checkpoints, shards): every link on the way must be a hard link inside the file, and
 * the data must be stored in the file. Soft and external links, external raw storage and
 * virtual datasets would make a checksummed file read another file's bytes. */
#ifndef HPCTI_H5SAFE_H
#define HPCTI_H5SAFE_H

#include <hdf5.h>

/* Walk path ("a/b/c") from loc: 1 when every component is a hard link, 0 when one does not
 * exist, -1 when HDF5 fails or the path is too long, -2 when a component is a soft or
 * external link (*bad [n] gets that component's path). */
int hpcti_h5_hard_path(hid_t loc, const char *path, char *bad, size_t n);

/* NULL when the dataset's bytes are stored in its own file, else why not ("stored in
 * external raw files", "a virtual dataset"). */
const char *hpcti_h5_foreign_storage(hid_t dset);

/* The most specific message of the calling thread's HDF5 error stack (then cleared), into
 * buf; "no HDF5 detail" when it is empty. Call it under hpcti_hdf5_lock, right after the
 * call that failed. */
const char *hpcti_h5_detail(char buf[400]);

#endif
