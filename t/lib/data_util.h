/* data_util.h: real HDF5 shards and manifests for the lib/data tests. */
#ifndef HPCT_DATA_UTIL_H
#define HPCT_DATA_UTIL_H

#include <hdf5.h>
#include <stdint.h>

/* What one test shard holds. Inputs row i (global index g = first + i) is
 * g, g + 1, ..., g + features - 1 (as the input type); target i is g (int32). */
typedef struct tdu_shard {
    uint64_t rows, first;
    int features;
    hid_t input_type;        /* 0: H5T_NATIVE_FLOAT */
    int chunk_rows;          /* 0: contiguous */
    int deflate;             /* 1: shuffle + deflate (needs chunk_rows) */
    const char *inputs_name; /* NULL: "inputs"; "" omits the dataset */
    const char *targets_name;
    long target_rows; /* -1: same as rows */
    long nan_row;     /* -1: none; else this row's feature 0 is NaN */
} tdu_shard_t;

/* A spec with the defaults above. */
tdu_shard_t tdu_shard(uint64_t rows, uint64_t first, int features, int chunk_rows);
/* Write the shard file; 0 on success. */
int tdu_write_shard(const char *path, const tdu_shard_t *spec);
/* Write dir/name listing files (relative to dir), with their sizes and checksums, declaring
 * inputs as in_type with `features` values and targets int32 scalar. 0 on success. */
int tdu_write_manifest(const char *dir, const char *name, int count, const char *const *files,
                       const char *in_type, int features);
/* A fresh directory under $TMPDIR (or /tmp); removed by tdu_cleanup. */
const char *tdu_tmpdir(void);
void tdu_cleanup(void);

#endif
