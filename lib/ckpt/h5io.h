/* h5io.h: HDF5 helpers of lib/ckpt shared by the writer (h5io.c), its file driver (h5sink.c),
 * the one pass that reads a checkpoint (scan.c) and the inspection API (inspect.c).
 * Library-internal; only the files that include it include HDF5. */
#ifndef HPCTI_CKPT_H5IO_H
#define HPCTI_CKPT_H5IO_H

#include "ckpt.h"

#include <hdf5.h>

/* Kept for the callers: hpcti_hdf5_lock itself now saves and restores HDF5's printing. */
typedef struct hpcti_h5_quiet {
    H5E_auto2_t func;
    void *data;
} hpcti_h5_quiet_t;

/* What the checkpoint writer's file driver saw go wrong (h5sink.c): HDF5 itself is never
 * told, so it cannot fail half way through a flush or a close. */
typedef struct hpcti_ck_sink {
    int open_err;     /* errno of a failed create, 0: none */
    int err;          /* errno of the first failed write, truncate or close, 0: none */
    long long offset; /* where that write went, bytes from the start of the file */
    size_t bytes;     /* its size */
} hpcti_ck_sink_t;

/* A file access list whose driver writes like HDF5's sec2 driver but records failures in
 * *sink (cleared here) instead of returning them; -1 when HDF5 refuses it. */
hid_t hpcti_ck_sink_fapl(hpcti_ck_sink_t *sink);

/* Take the process-wide HDF5 lock (which switches HDF5's error printing off). */
void hpcti_ck_h5_enter(hpcti_h5_quiet_t *q);
/* Clear the error stack, restore the printing and release the lock. */
void hpcti_ck_h5_leave(const hpcti_h5_quiet_t *q);

/* hpcti_h5_detail (core/h5safe.h): the most specific message of HDF5's error stack. */

/* What an attribute or dataset must be before the library reads it (class, size, rank). */
typedef struct hpcti_h5_want {
    H5T_class_t cls; /* H5T_INTEGER, H5T_FLOAT or H5T_STRING (fixed-length only) */
    size_t size;     /* bytes per element: exactly this, or at most this when up_to */
    int up_to;       /* 1: size is a maximum (fixed-length strings) */
    int max_rank;    /* 0: scalar only; 1: scalar or one-dimensional */
    long long count; /* elements; -1: any */
} hpcti_h5_want_t;

/* NULL when type and space are what want says, else what is wrong (in why). Call it before
 * every H5Aread and H5Dread: a larger or differently shaped object overflows the buffer. */
const char *hpcti_ck_h5_check(hid_t type, hid_t space, const hpcti_h5_want_t *want, char why[160]);

/* Attribute attr of obj (objname for messages) checked against want, then read as mtype into
 * buf; HPCTI_READ_CORRUPT with err naming file, object and attribute when it is missing,
 * unreadable or not what want says. */
HPCTI_CHECK hpcti_read_t hpcti_ck_read_attr(hid_t obj, const char *objname, const char *attr,
                                            const hpcti_h5_want_t *want, hid_t mtype, void *buf,
                                            const char *file, hpcti_ckerr_t *err);

/* Native memory type of an item type (hpct_ckpt_dtype_t, HPCTI_CK_U64; not HPCTI_CK_STR). */
hid_t hpcti_ck_mem_type(int dtype);

/* Compare the dataset's crc32c attribute with computed, the CRC32C of its bytes. On failure
 * err names file and dataset: HPCT_ERR_CHECKSUM for a mismatch or an unreadable attribute. */
HPCTI_CHECK hpcti_read_t hpcti_ck_check_crc(hid_t dset, const char *dataset, uint32_t computed,
                                            const char *file, hpcti_ckerr_t *err);

/* Open checkpoint path read-only into *fid, or say what it is instead, naming it: not a
 * readable HDF5 file (no signature at its start: damaged or not HDF5), the pre-1.8 format
 * (superblock version 0 or 1, which the library never writes: refused before HDF5 parses
 * it), a damaged HDF5 file (HDF5 cannot open it), or a valid HDF5 file that is not a
 * libhpctrain checkpoint (no schema_version attribute on /). *fid is closed on failure. */
HPCTI_CHECK hpcti_read_t hpcti_ck_h5_open(const char *path, hid_t *fid, hpcti_ckerr_t *err);
/* Root attribute schema_version into *schema; HPCTI_READ_CORRUPT (err set) if unreadable. */
HPCTI_CHECK hpcti_read_t hpcti_ck_read_schema(hid_t fid, const char *file, int *schema,
                                              hpcti_ckerr_t *err);

#endif
