/* h5io.h: HDF5 helpers of lib/ckpt shared by the writer/loader (h5io.c) and the inspection
 * API (inspect.c). Library-internal; only these two files include HDF5. */
#ifndef HPCTI_CKPT_H5IO_H
#define HPCTI_CKPT_H5IO_H

#include "ckpt.h"

#include <hdf5.h>

/* HDF5's automatic error printing as it was before hpcti_ck_h5_enter. */
typedef struct hpcti_h5_quiet {
    H5E_auto2_t func;
    void *data;
} hpcti_h5_quiet_t;

/* Take the process-wide HDF5 lock and switch HDF5's error printing off. */
void hpcti_ck_h5_enter(hpcti_h5_quiet_t *q);
/* Clear the error stack, restore the printing and release the lock. */
void hpcti_ck_h5_leave(const hpcti_h5_quiet_t *q);

/* The most specific message of HDF5's error stack (then cleared), into buf. */
const char *hpcti_ck_h5_detail(char buf[400]);

/* Native memory type of an item type (hpct_ckpt_dtype_t, HPCTI_CK_U64; not HPCTI_CK_STR). */
hid_t hpcti_ck_mem_type(int dtype);

/* Compare the dataset's crc32c attribute with the CRC32C of bytes at data. On failure err
 * names file and dataset: HPCT_ERR_CHECKSUM for a mismatch or an unreadable attribute. */
hpcti_read_t hpcti_ck_verify_crc(hid_t dset, const char *dataset, const void *data, size_t bytes,
                                 const char *file, hpcti_ckerr_t *err);

/* Root attribute schema_version into *schema; HPCTI_READ_CORRUPT (err set) if unreadable. */
hpcti_read_t hpcti_ck_read_schema(hid_t fid, const char *file, int *schema, hpcti_ckerr_t *err);

#endif
