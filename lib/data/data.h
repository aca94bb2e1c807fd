/* data.h: library-internal pieces of lib/data: manifest, checksum, shard access (not installed). */
#ifndef HPCTI_DATA_H
#define HPCTI_DATA_H

#include <stddef.h>
#include <stdint.h>

#define HPCTI_MAX_DIMS         8
#define HPCTI_MANIFEST_MAGIC   "hpctrain-manifest"
#define HPCTI_MANIFEST_VERSION 1

/* Element types a shard may store (names as written in manifests). */
typedef enum {
    HPCTI_U8,
    HPCTI_I8,
    HPCTI_U16,
    HPCTI_I16,
    HPCTI_U32,
    HPCTI_I32,
    HPCTI_U64,
    HPCTI_I64,
    HPCTI_F32,
    HPCTI_F64,
    HPCTI_NUM_TYPES
} hpcti_type_t;

/* One array layout: element type and per-sample dims (rank 0 = one scalar per sample). */
typedef struct hpcti_layout {
    hpcti_type_t type;
    int rank;
    uint64_t dims[HPCTI_MAX_DIMS];
} hpcti_layout_t;

typedef struct hpcti_shard_entry {
    uint64_t samples;  /* rows in this shard */
    uint64_t bytes;    /* file size */
    uint64_t checksum; /* hpcti_checksum of the whole file */
    char *path;        /* relative to the manifest's directory */
    int line;          /* manifest line, for messages */
} hpcti_shard_entry_t;

typedef struct hpcti_manifest {
    hpcti_layout_t inputs, targets;
    int num_shards;
    hpcti_shard_entry_t *shards;
} hpcti_manifest_t;

/* Parse manifest text (need not be NUL-terminated). On failure returns -1 and writes
 * "line N: reason" to err; *m is then empty. Uses libc only (fuzzed standalone). */
int hpcti_manifest_parse(const char *text, size_t len, hpcti_manifest_t *m, char *err,
                         size_t errlen);
/* Free what hpcti_manifest_parse allocated. */
void hpcti_manifest_free(hpcti_manifest_t *m);
/* Write m as manifest text to path atomically (temp file + rename); 0 or -1 (errno set). */
int hpcti_manifest_write(const hpcti_manifest_t *m, const char *path);
/* 1 when path is relative, non-empty, printable and without '..' components, else 0. */
int hpcti_manifest_path_is_safe(const char *path);
/* NULL when name is a usable HDF5 dataset name for shards (1 to HPCTI_MAX_DATASET_NAME
 * bytes, components split by single slashes, none empty, "." or "..", no control
 * characters), else why not. Checked before HDF5 sees the name. */
#define HPCTI_MAX_DATASET_NAME 255
const char *hpcti_dataset_name_problem(const char *name);
/* Element-type names and sizes. */
const char *hpcti_type_name(hpcti_type_t t);
size_t hpcti_type_size(hpcti_type_t t);
int hpcti_type_is_float(hpcti_type_t t);
/* Values per sample of a layout. */
uint64_t hpcti_layout_count(const hpcti_layout_t *l);

/* Seedable 64-bit checksum ("hpct64", doc/data-formats.md) of a buffer, streamed. */
typedef struct hpcti_hash {
    uint64_t lane[4];
    uint64_t total;
    unsigned char tail[32];
    size_t tail_len;
} hpcti_hash_t;
void hpcti_hash_init(hpcti_hash_t *h);
void hpcti_hash_update(hpcti_hash_t *h, const void *data, size_t len);
uint64_t hpcti_hash_final(const hpcti_hash_t *h);
/* Checksum of a whole file with read(2); 0, or -1 with errno set. */
int hpcti_checksum_file(const char *path, uint64_t *sum, uint64_t *bytes);

/* Convert count values of type t at src to float32 / int32 (lossy conversions truncate). */
void hpcti_convert_f32(hpcti_type_t t, const void *src, float *dst, size_t count);
void hpcti_convert_i32(hpcti_type_t t, const void *src, int32_t *dst, size_t count);

#endif
