/* h5shard.h: what the reader and the manifest writer learn about one shard from HDF5
 * (lib/data internal). */
#ifndef HPCTI_H5SHARD_H
#define HPCTI_H5SHARD_H

#include "../core/core.h"
#include "data.h"

#include <hdf5.h>

/* Where one array's rows live in the shard file, for pread(2) streaming. */
typedef struct hpcti_rows_src {
    uint64_t row_bytes;  /* bytes per sample as stored */
    uint64_t chunk_rows; /* rows per chunk; 0 when contiguous */
    uint64_t base;       /* contiguous: file offset of row 0 */
    uint64_t num_chunks;
    uint64_t *chunk_addr; /* chunked: file offset of chunk k (rows k*chunk_rows ...) */
} hpcti_rows_src_t;

/* One shard as the reader uses it. */
typedef struct hpcti_shard {
    char *path;               /* manifest directory + entry path */
    uint64_t first;           /* global index of its row 0 */
    uint64_t count;           /* rows */
    int fd;                   /* open for streaming; -1 otherwise */
    const unsigned char *map; /* streaming: the file mapped read-only (NULL: preadv only) */
    size_t map_bytes;         /* its length: the file's size at open */
    long long size0;          /* streaming: fstat's size and mtime (ns) when fd was opened */
    long long mtime0_ns;
    hpcti_rows_src_t in, tg;
} hpcti_shard_t;

/* What to check a shard against and where its rows go. */
typedef struct hpcti_shard_job {
    const char *manifest; /* for messages */
    const hpcti_shard_entry_t *entry;
    const hpcti_layout_t *inputs, *targets;
    const char *inputs_name, *targets_name;
    float *resident_inputs; /* non-NULL: read all rows here, [count, features] */
    void *resident_targets; /* [count, target width], int32 or float32 */
    int targets_int;        /* 1: int32 targets */
} hpcti_shard_job_t;

/* Open sh->path with HDF5, check both datasets against the manifest, then either load the
 * rows (resident) or record their file offsets (streaming). Caller's thread only: this is
 * the one place lib/data calls HDF5. */
HPCTI_CHECK hpct_status_t hpcti_shard_inspect(hpct_ctx_t ctx, const hpcti_shard_job_t *job,
                                              hpcti_shard_t *sh);
void hpcti_shard_release(hpcti_shard_t *sh);
/* The layouts and sample counts of datasets inputs_name and targets_name of the shard file at
 * path, for a manifest (hpct_manifest_add_shard). Errors name path and dataset. */
HPCTI_CHECK hpct_status_t hpcti_shard_describe(hpct_ctx_t ctx, const char *path,
                                               const char *inputs_name, const char *targets_name,
                                               hpcti_layout_t *inputs, hpcti_layout_t *targets,
                                               uint64_t *n_inputs, uint64_t *n_targets);
/* The shard element type of an HDF5 datatype (hpcti_type_t), or -1 when it is none of ours;
 * *little_endian tells its byte order. */
int hpcti_h5_shard_type(hid_t type, int *little_endian);

#endif
