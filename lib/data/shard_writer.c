/* shard_writer.c: the public shard writer (hpct_shard_create/write/close): HDF5 files of
 * datasets [N, ...] chunked along N (doc/data-formats.md). Every HDF5 call runs under the
 * process-wide lock with HDF5's error printing off; failures are reported on the context. */
#include "data.h"
#include "../core/core.h"
#include "../core/h5safe.h"

#include <hdf5.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(HPCT_SHARD_MAX_RANK == HPCTI_MAX_DIMS + 1, "a shard dataset is [N, sample dims]");

#define ELEMENT_BYTES 4         /* both writable dtypes (float32, int32) */
#define CHUNK_BYTES   (1 << 20) /* default chunk: about this many bytes */

struct hpct_shard_writer {
    hpct_ctx_t ctx;
    hpct_shard_config_t cfg;
    hid_t file;
    char *path;
    char why[400]; /* HDF5's detail of the last failure */
};

static hpct_status_t check_config(hpct_ctx_t ctx, const hpct_shard_config_t *c)
{
    if (c->version < 1 || c->version > HPCT_SHARD_CONFIG_VERSION)
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                           "hpct_shard_config_t.version is %u, not a known version (start from "
                           "HPCT_SHARD_CONFIG_INITIALIZER)",
                           c->version);
    if (c->chunk_rows < 0)
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                           "hpct_shard_config_t.chunk_rows is %ld, must be >= 0", c->chunk_rows);
    if (c->deflate < 0 || c->deflate > 9)
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                           "hpct_shard_config_t.deflate is %d, must be 0 (none) to 9", c->deflate);
    return HPCT_SUCCESS;
}

hpct_status_t hpct_shard_create(hpct_ctx_t ctx, const char *path, const hpct_shard_config_t *cfg,
                                hpct_shard_writer_t *out)
{
    static const hpct_shard_config_t defaults = HPCT_SHARD_CONFIG_INITIALIZER;
    if (!ctx) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(ctx);
    if (!out || !path || !*path)
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG, "hpct_shard_create: %s is NULL or empty",
                           out ? "path" : "shard");
    *out = NULL;
    if (!cfg) cfg = &defaults;
    hpct_status_t s = check_config(ctx, cfg);
    if (s) return s;
    if (strlen(path) >= PATH_MAX) /* refused before HDF5 sees it */
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                           "cannot create shard %.200s...: its name is too long (%zu bytes; "
                           "PATH_MAX is %d)",
                           path, strlen(path), PATH_MAX);
    struct hpct_shard_writer *w = hpcti_calloc(ctx, 1, sizeof *w, "a shard writer");
    if (!w) return HPCT_ERR_NO_MEMORY;
    w->ctx = ctx, w->cfg = *cfg, w->file = -1;
    if (!(w->path = strdup(path))) {
        free(w);
        return hpcti_error(ctx, HPCT_ERR_NO_MEMORY, "cannot allocate the path of shard %s", path);
    }
    char why[400];
    hpcti_hdf5_lock();
    w->file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (w->file < 0) hpcti_h5_detail(why);
    hpcti_hdf5_unlock();
    if (w->file < 0) {
        free(w->path), free(w);
        return hpcti_error(ctx, HPCT_ERR_IO, "cannot create shard %s: %s", path, why);
    }
    *out = w;
    return HPCT_SUCCESS;
}

const char *hpcti_dataset_name_problem(const char *name)
{
    size_t len = name ? strlen(name) : 0;
    if (len == 0) return "it is empty";
    if (len > HPCTI_MAX_DATASET_NAME) return "it is longer than 255 bytes";
    for (const char *p = name; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f) return "it holds a control character";
    for (const char *part = name;;) {
        size_t n = strcspn(part, "/");
        if (n == 0) return "it has an empty component (a leading, trailing or double '/')";
        if ((n == 1 && part[0] == '.') || (n == 2 && part[0] == '.' && part[1] == '.'))
            return "it has a '.' or '..' component";
        if (!part[n]) return NULL;
        part += n + 1;
    }
}

/* Per-sample values of dims [rank] (the product of dims[1..]); 0 after recording why the
 * dims are unusable (a zero, or a size in bytes beyond 64 bits). */
static uint64_t sample_values(hpct_shard_writer_t w, const char *name, int rank,
                              const uint64_t *dims)
{
    uint64_t per = 1, bytes = ELEMENT_BYTES;
    for (int i = 0; i < rank; i++) {
        if (dims[i] == 0) {
            hpcti_error(w->ctx, HPCT_ERR_INVALID_ARG, "dataset /%s of shard %s: dims[%d] is 0",
                        name, w->path, i);
            return 0;
        }
        if ((i > 0 && __builtin_mul_overflow(per, dims[i], &per)) ||
            __builtin_mul_overflow(bytes, dims[i], &bytes)) {
            hpcti_error(w->ctx, HPCT_ERR_INVALID_ARG,
                        "dataset /%s of shard %s: its size in bytes overflows 64 bits", name,
                        w->path);
            return 0;
        }
    }
    return per;
}

/* Create dataset name [dims] chunked along N and write data; 0 or -1 (HDF5 failed). */
static int write_dataset(hpct_shard_writer_t w, const char *name, hid_t type, int rank,
                         const uint64_t *dims, uint64_t per, const void *data)
{
    hsize_t hdims[HPCT_SHARD_MAX_RANK], chunk[HPCT_SHARD_MAX_RANK];
    for (int i = 0; i < rank; i++) hdims[i] = chunk[i] = dims[i];
    uint64_t c =
        w->cfg.chunk_rows ? (uint64_t)w->cfg.chunk_rows : CHUNK_BYTES / (per * ELEMENT_BYTES) + 1;
    chunk[0] = c < dims[0] ? c : dims[0];
    hid_t space = H5Screate_simple(rank, hdims, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1); /* "a/b" makes group a */
    H5Pset_chunk(dcpl, rank, chunk);
    H5Pset_obj_track_times(dcpl, 0); /* no timestamps: the same input gives the same bytes */
    if (w->cfg.deflate) H5Pset_shuffle(dcpl), H5Pset_deflate(dcpl, (unsigned)w->cfg.deflate);
    hid_t d = H5Dcreate2(w->file, name, type, space, lcpl, dcpl, H5P_DEFAULT);
    int bad = d < 0 || H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0;
    if (bad) hpcti_h5_detail(w->why);
    if (d >= 0) H5Dclose(d);
    H5Pclose(lcpl), H5Pclose(dcpl), H5Sclose(space);
    return bad ? -1 : 0;
}

hpct_status_t hpct_shard_write(hpct_shard_writer_t w, const char *name, hpct_dtype_t dtype,
                               int rank, const uint64_t *dims, const void *data)
{
    if (!w) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(w->ctx);
    if (!name || !*name || !dims || !data)
        return hpcti_error(w->ctx, HPCT_ERR_INVALID_ARG,
                           "hpct_shard_write (shard %s): %s is NULL or empty", w->path,
                           !name || !*name ? "name"
                           : !dims         ? "dims"
                                           : "data");
    if (dtype != HPCT_DTYPE_FLOAT32 && dtype != HPCT_DTYPE_INT32)
        return hpcti_error(w->ctx, HPCT_ERR_INVALID_ARG,
                           "dataset /%s of shard %s: dtype %d is neither HPCT_DTYPE_FLOAT32 nor "
                           "HPCT_DTYPE_INT32",
                           name, w->path, (int)dtype);
    const char *bad_name = hpcti_dataset_name_problem(name);
    if (bad_name)
        return hpcti_error(w->ctx, HPCT_ERR_INVALID_ARG, "dataset name '%.300s%s' for shard %s: %s",
                           name, strlen(name) > 300 ? "..." : "", w->path, bad_name);
    if (rank < 1 || rank > HPCT_SHARD_MAX_RANK)
        return hpcti_error(w->ctx, HPCT_ERR_INVALID_ARG,
                           "dataset /%s of shard %s: rank %d is outside [1, %d]", name, w->path,
                           rank, HPCT_SHARD_MAX_RANK);
    uint64_t per = sample_values(w, name, rank, dims);
    if (!per) return HPCT_ERR_INVALID_ARG;
    hid_t type = dtype == HPCT_DTYPE_INT32 ? H5T_NATIVE_INT32 : H5T_NATIVE_FLOAT;
    int bad = 1;
    hpcti_hdf5_lock();
    bad = write_dataset(w, name, type, rank, dims, per, data);
    hpcti_hdf5_unlock();
    return bad ? hpcti_error(w->ctx, HPCT_ERR_IO, "cannot write dataset /%s of shard %s: %s", name,
                             w->path, w->why)
               : HPCT_SUCCESS;
}

hpct_status_t hpct_shard_close(hpct_shard_writer_t w)
{
    if (!w) return HPCT_SUCCESS;
    hpcti_clear_error(w->ctx);
    herr_t rc = -1;
    hpcti_hdf5_lock();
    rc = H5Fclose(w->file);
    if (rc < 0) hpcti_h5_detail(w->why);
    hpcti_hdf5_unlock();
    hpct_status_t s =
        rc < 0 ? hpcti_error(w->ctx, HPCT_ERR_IO, "cannot complete shard %s: %s", w->path, w->why)
               : HPCT_SUCCESS;
    free(w->path), free(w);
    return s;
}
