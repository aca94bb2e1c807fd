/* scan.h: one checkpoint file read once (scan.c): every link listed, every dataset's type,
 * shape and storage checked before it is read, its bytes read once and verified. The
 * inspector (inspect.c) and resume (ckpt.c) both build on a scan, and validate.c judges it,
 * so `hpctrain ckpt verify` and resume give one verdict. Library-internal. */
#ifndef HPCTI_CKPT_SCAN_H
#define HPCTI_CKPT_SCAN_H

#include "h5io.h"

#define HPCTI_CK_MAX_DATASETS 1000000 /* datasets listed; a file with more is corrupt */
#define HPCTI_CK_KEEP_BYTES   4096    /* meta/, rng/ and optimizer scalars kept up to this */

/* One dataset as the scan found it. */
typedef struct hpcti_ck_ds {
    char *name;              /* "params/dense0.weight" */
    hpct_ckpt_dtype_t dtype; /* HPCT_CKPT_OTHER: a type the library does not write */
    size_t count, elsize;    /* elements, bytes per element (strings: count bytes of 1) */
    int rank;                /* 0: scalar, 1: [count]; more is refused */
    hpcti_h5_want_t h5;      /* class, element size, rank and count in the file */
    hpct_status_t verdict;   /* HPCT_SUCCESS or why it cannot be trusted */
    char *detail;            /* message of a failed verdict */
    void *kept;              /* bytes of a small meta/, rng/ or optimizer/ scalar that verified */
    void *sunk;              /* the sink's buffer its bytes were read into, or NULL */
} hpcti_ck_ds_t;

/* Where the bytes of dataset d go: a buffer of d->count x d->elsize bytes of the caller
 * (resume: the staged parameters), or NULL to read them in pieces and keep nothing. */
typedef void *(*hpcti_ck_dest_t)(void *arg, const hpcti_ck_ds_t *d);

typedef struct hpcti_ck_scan {
    char path[HPCTI_CKPT_PATH_MAX];
    long long file_bytes;
    int schema;        /* root attribute schema_version; -1: unreadable */
    char library[64];  /* root attribute library_version; "" when absent */
    hpcti_ck_ds_t *ds; /* [num], sorted by name */
    int num, cap;
    hpcti_ck_dest_t sink; /* NULL: none */
    void *sink_arg;
} hpcti_ck_scan_t;

/* Scan s->path (set it, and the sink, before): HPCT_SUCCESS with every dataset listed and
 * judged, or the status of a file that cannot be read at all (HPCT_ERR_NOT_FOUND, _IO,
 * _FORMAT, _CHECKSUM; _NO_MEMORY) with err naming it. Takes the HDF5 lock. */
HPCTI_CHECK hpct_status_t hpcti_ck_scan(hpcti_ck_scan_t *s, hpcti_ckerr_t *err);
/* Free what a scan holds (s itself is the caller's). */
void hpcti_ck_scan_free(hpcti_ck_scan_t *s);
/* The dataset called name (a leading '/' is ignored), or NULL. */
const hpcti_ck_ds_t *hpcti_ck_scan_find(const hpcti_ck_scan_t *s, const char *name);
/* Dataset d of scan s read again from the open file fid into a new buffer *buf (raw bytes,
 * native little-endian, or the string itself) and verified; *buf is set whenever the bytes
 * could be read. Under the HDF5 lock (hpct_ckpt_file_read). */
HPCTI_CHECK hpcti_read_t hpcti_ck_scan_reread(hid_t fid, const hpcti_ck_scan_t *s,
                                              const hpcti_ck_ds_t *d, void **buf,
                                              hpcti_ckerr_t *err);

/* validate.c: HPCTI_READ_OK when the scanned file is a checkpoint resume may load on its
 * own: every dataset verified, the structure and the values as doc/checkpoint-format.md
 * says ("Loading and verification"); else HPCTI_READ_CORRUPT with err naming the file, the
 * dataset and the values that disagree. */
HPCTI_CHECK hpcti_read_t hpcti_ck_validate(const hpcti_ck_scan_t *s, hpcti_ckerr_t *err);

#endif
