/* h5shard.c: every HDF5 read of lib/data lives here (shards are written by shard_writer.c).
 *
 * Threading: Debian's serial HDF5 must not be entered from two threads at once. The reader
 * calls these functions only from hpct_dataset_open, on the caller's thread, before its
 * prefetch thread exists; the prefetch thread never calls HDF5 (it reads rows with pread(2)
 * at the offsets recorded here, or copies from memory). hpcti_hdf5_lock keeps these calls
 * apart from a background checkpoint writer. */
#include "h5shard.h"
#include "../core/h5safe.h"

#include <hdf5.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int hpcti_h5_shard_type(hid_t type, int *little_endian)
{
    H5T_class_t cls = H5Tget_class(type);
    size_t size = H5Tget_size(type);
    *little_endian = H5Tget_order(type) == H5T_ORDER_LE;
    if (cls == H5T_FLOAT) return size == 4 ? HPCTI_F32 : size == 8 ? HPCTI_F64 : -1;
    if (cls != H5T_INTEGER) return -1;
    int is_signed = H5Tget_sign(type) == H5T_SGN_2;
    switch (size) {
    case 1: return is_signed ? HPCTI_I8 : HPCTI_U8;
    case 2: return is_signed ? HPCTI_I16 : HPCTI_U16;
    case 4: return is_signed ? HPCTI_I32 : HPCTI_U32;
    case 8: return is_signed ? HPCTI_I64 : HPCTI_U64;
    default: return -1;
    }
}

static void dims_text(const hsize_t *d, int rank, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < rank && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%llu", i ? "," : "[",
                                 (unsigned long long)d[i]);
    if (used < len) snprintf(buf + used, len - used, rank ? "]" : "[]");
}

/* Check a dataset's dtype and shape ([count, manifest dims...]); returns its type. */
static hpct_status_t check_dataset(hpct_ctx_t ctx, const hpcti_shard_job_t *job, const char *path,
                                   const char *name, hid_t dset, const hpcti_layout_t *want,
                                   int *little_endian)
{
    hid_t type = H5Dget_type(dset), space = H5Dget_space(dset);
    int got = type < 0 ? -1 : hpcti_h5_shard_type(type, little_endian);
    int rank = space < 0 ? -1 : H5Sget_simple_extent_ndims(space);
    hsize_t dims[HPCTI_MAX_DIMS + 1] = {0};
    if (rank >= 1 && rank <= HPCTI_MAX_DIMS + 1) H5Sget_simple_extent_dims(space, dims, NULL);
    if (type >= 0) H5Tclose(type);
    if (space >= 0) H5Sclose(space);
    if (got != (int)want->type)
        return hpcti_error(ctx, HPCT_ERR_FORMAT,
                           "shard %s dataset /%s: dtype %s, but manifest %s says %s", path, name,
                           got < 0 ? "unsupported" : hpcti_type_name((hpcti_type_t)got),
                           job->manifest, hpcti_type_name(want->type));
    int same = rank == want->rank + 1;
    for (int i = 0; same && i < want->rank; i++) same = dims[i + 1] == want->dims[i];
    if (!same) {
        char text[160];
        dims_text(dims, rank > 0 && rank <= HPCTI_MAX_DIMS + 1 ? rank : 0, text, sizeof text);
        return hpcti_error(ctx, HPCT_ERR_FORMAT,
                           "shard %s dataset /%s: shape %s does not match [N, per-sample dims] "
                           "of manifest %s",
                           path, name, text, job->manifest);
    }
    if (dims[0] == 0)
        return hpcti_error(ctx, HPCT_ERR_FORMAT, "shard %s dataset /%s: empty shard (0 samples)",
                           path, name);
    if (dims[0] != job->entry->samples)
        return hpcti_error(ctx, HPCT_ERR_FORMAT,
                           "shard %s dataset /%s: %llu samples, manifest %s line %d says %llu",
                           path, name, (unsigned long long)dims[0], job->manifest, job->entry->line,
                           (unsigned long long)job->entry->samples);
    return HPCT_SUCCESS;
}

/* Record where each chunk of an unfiltered chunked dataset lies in the file. */
static hpct_status_t chunk_offsets(hpct_ctx_t ctx, const char *path, const char *name, hid_t dset,
                                   hid_t dcpl, const hpcti_layout_t *l, uint64_t rows,
                                   uint64_t file_bytes, hpcti_rows_src_t *src)
{
    hsize_t cdims[HPCTI_MAX_DIMS + 1];
    int crank = H5Pget_chunk(dcpl, HPCTI_MAX_DIMS + 1, cdims);
    int whole_rows = crank == l->rank + 1;
    for (int i = 0; whole_rows && i < l->rank; i++) whole_rows = cdims[i + 1] == l->dims[i];
    if (!whole_rows || H5Pget_nfilters(dcpl) != 0)
        return hpcti_error(ctx, HPCT_ERR_UNSUPPORTED,
                           "shard %s dataset /%s is compressed or not chunked by whole samples, "
                           "so it cannot be streamed; raise memory_budget_bytes to load it or "
                           "reshard without --deflate",
                           path, name);
    src->chunk_rows = cdims[0];
    src->num_chunks = (rows + cdims[0] - 1) / cdims[0];
    src->chunk_addr = hpcti_calloc(ctx, src->num_chunks, sizeof(uint64_t), "chunk offsets");
    if (!src->chunk_addr) return HPCT_ERR_NO_MEMORY;
    hsize_t n = 0;
    hid_t space = H5Dget_space(dset);
    if (H5Dget_num_chunks(dset, space, &n) < 0 || n != src->num_chunks) {
        H5Sclose(space);
        return hpcti_error(ctx, HPCT_ERR_FORMAT,
                           "shard %s dataset /%s: %llu chunks written, %llu expected", path, name,
                           (unsigned long long)n, (unsigned long long)src->num_chunks);
    }
    hpct_status_t s = HPCT_SUCCESS;
    uint64_t chunk_bytes = cdims[0] * src->row_bytes;
    for (hsize_t i = 0; i < n && !s; i++) {
        hsize_t off[HPCTI_MAX_DIMS + 1];
        unsigned mask;
        haddr_t addr;
        hsize_t size;
        if (H5Dget_chunk_info(dset, space, i, off, &mask, &addr, &size) < 0 || off[0] % cdims[0] ||
            off[0] >= rows || size != chunk_bytes || addr + size > file_bytes)
            s = hpcti_error(ctx, HPCT_ERR_FORMAT,
                            "shard %s dataset /%s: chunk %llu lies outside the file or has "
                            "the wrong size",
                            path, name, (unsigned long long)i);
        else
            src->chunk_addr[off[0] / cdims[0]] = addr;
    }
    H5Sclose(space);
    return s;
}

/* Fill src with the file offsets of a dataset's rows (streaming mode). */
static hpct_status_t row_offsets(hpct_ctx_t ctx, const char *path, const char *name, hid_t dset,
                                 const hpcti_layout_t *l, uint64_t rows, int little_endian,
                                 hpcti_rows_src_t *src)
{
    struct stat st;
    if (stat(path, &st)) return hpcti_error(ctx, HPCT_ERR_IO, "shard %s: cannot stat", path);
    if (!little_endian)
        return hpcti_error(ctx, HPCT_ERR_UNSUPPORTED,
                           "shard %s dataset /%s is big-endian; raise memory_budget_bytes to "
                           "load it (HDF5 converts) instead of streaming it",
                           path, name);
    src->row_bytes = hpcti_layout_count(l) * hpcti_type_size(l->type);
    hid_t dcpl = H5Dget_create_plist(dset);
    H5D_layout_t layout = H5Pget_layout(dcpl);
    hpct_status_t s = HPCT_SUCCESS;
    if (layout == H5D_CONTIGUOUS) {
        haddr_t addr = H5Dget_offset(dset);
        if (addr == HADDR_UNDEF || addr + rows * src->row_bytes > (uint64_t)st.st_size)
            s = hpcti_error(ctx, HPCT_ERR_FORMAT,
                            "shard %s dataset /%s: data lies outside the file (truncated?)", path,
                            name);
        src->base = addr;
    } else if (layout == H5D_CHUNKED) {
        s = chunk_offsets(ctx, path, name, dset, dcpl, l, rows, (uint64_t)st.st_size, src);
    } else {
        s = hpcti_error(ctx, HPCT_ERR_UNSUPPORTED,
                        "shard %s dataset /%s has compact layout; raise memory_budget_bytes", path,
                        name);
    }
    H5Pclose(dcpl);
    return s;
}

/* Dataset /name of shard path is a hard link in the file (dset < 0) or stores its bytes in
 * the file (dset >= 0): a soft or external link, external storage or a virtual dataset
 * would read another file's bytes past the manifest's checksum. */
static hpct_status_t check_in_file(hpct_ctx_t ctx, hid_t file, const char *path, const char *name,
                                   hid_t dset)
{
    if (dset >= 0) {
        const char *why = hpcti_h5_foreign_storage(dset);
        return why ? hpcti_error(ctx, HPCT_ERR_FORMAT, "shard %s: dataset /%s is %s: refused", path,
                                 name, why)
                   : HPCT_SUCCESS;
    }
    char link[256];
    int e = hpcti_h5_hard_path(file, name, link, sizeof link);
    if (e == -2)
        return hpcti_error(ctx, HPCT_ERR_FORMAT,
                           "shard %s: /%s is a soft or external link (a shard holds its data "
                           "itself): refused",
                           path, link);
    return e == 1 ? HPCT_SUCCESS
                  : hpcti_error(ctx, HPCT_ERR_NOT_FOUND, "shard %s has no dataset /%s", path, name);
}

/* Check one dataset and load (resident) or locate (streaming) its rows. */
static hpct_status_t one_dataset(hpct_ctx_t ctx, const hpcti_shard_job_t *job, hid_t file,
                                 const char *path, const char *name, const hpcti_layout_t *l,
                                 hid_t memtype, void *resident, hpcti_rows_src_t *src)
{
    hpct_status_t s = check_in_file(ctx, file, path, name, -1);
    if (s) return s;
    hid_t dset = H5Dopen2(file, name, H5P_DEFAULT);
    if (dset < 0)
        return hpcti_error(ctx, HPCT_ERR_FORMAT, "shard %s: /%s is not a readable dataset", path,
                           name);
    if ((s = check_in_file(ctx, file, path, name, dset))) {
        H5Dclose(dset);
        return s;
    }
    int little_endian = 1;
    s = check_dataset(ctx, job, path, name, dset, l, &little_endian);
    if (!s && resident && H5Dread(dset, memtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, resident) < 0)
        s = hpcti_error(ctx, HPCT_ERR_FORMAT,
                        "shard %s dataset /%s: HDF5 could not read the data (corrupt or "
                        "truncated file?)",
                        path, name);
    if (!s && !resident)
        s = row_offsets(ctx, path, name, dset, l, job->entry->samples, little_endian, src);
    H5Dclose(dset);
    return s;
}

static hpct_status_t inspect_file(hpct_ctx_t ctx, const hpcti_shard_job_t *job, hpcti_shard_t *sh)
{
    hid_t file = H5Fopen(sh->path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (file < 0)
        return hpcti_error(ctx, HPCT_ERR_FORMAT,
                           "shard %s (manifest %s line %d) is not a readable HDF5 file "
                           "(truncated or corrupt?)",
                           sh->path, job->manifest, job->entry->line);
    hid_t tg_type = job->targets_int ? H5T_NATIVE_INT32 : H5T_NATIVE_FLOAT;
    hpct_status_t s = one_dataset(ctx, job, file, sh->path, job->inputs_name, job->inputs,
                                  H5T_NATIVE_FLOAT, job->resident_inputs, &sh->in);
    if (!s)
        s = one_dataset(ctx, job, file, sh->path, job->targets_name, job->targets, tg_type,
                        job->resident_targets, &sh->tg);
    H5Fclose(file);
    return s;
}

hpct_status_t hpcti_shard_inspect(hpct_ctx_t ctx, const hpcti_shard_job_t *job, hpcti_shard_t *sh)
{
    hpct_status_t s = HPCT_ERR_INTERNAL;
    /* HDF5 would print its error stack on stderr: the library stays silent and reports
     * through hpct_last_error instead. */
    hpcti_hdf5_lock();
    H5E_BEGIN_TRY
    {
        s = inspect_file(ctx, job, sh);
    }
    H5E_END_TRY;
    hpcti_hdf5_unlock();
    return s;
}

void hpcti_shard_release(hpcti_shard_t *sh)
{
    if (sh->map) munmap((void *)sh->map, sh->map_bytes);
    if (sh->fd >= 0) close(sh->fd);
    free(sh->in.chunk_addr);
    free(sh->tg.chunk_addr);
    free(sh->path);
    memset(sh, 0, sizeof *sh);
    sh->fd = -1;
}

/* One dataset's layout (element type, per-sample dims) and row count, for a manifest. */
static hpct_status_t describe_dataset(hpct_ctx_t ctx, hid_t file, const char *path,
                                      const char *name, hpcti_layout_t *l, uint64_t *rows)
{
    hpct_status_t s = check_in_file(ctx, file, path, name, -1);
    if (s) return s;
    hid_t dset = H5Dopen2(file, name, H5P_DEFAULT);
    if (dset >= 0 && (s = check_in_file(ctx, file, path, name, dset))) {
        H5Dclose(dset);
        return s;
    }
    hid_t type = dset < 0 ? -1 : H5Dget_type(dset), space = dset < 0 ? -1 : H5Dget_space(dset);
    int le, t = type < 0 ? -1 : hpcti_h5_shard_type(type, &le);
    int rank = space < 0 ? -1 : H5Sget_simple_extent_ndims(space);
    hsize_t dims[HPCTI_MAX_DIMS + 1] = {0};
    if (rank >= 1 && rank <= HPCTI_MAX_DIMS + 1) H5Sget_simple_extent_dims(space, dims, NULL);
    if (type >= 0) H5Tclose(type);
    if (space >= 0) H5Sclose(space);
    if (dset >= 0) H5Dclose(dset);
    if (t < 0)
        return hpcti_error(ctx, HPCT_ERR_FORMAT, "%s dataset /%s: unsupported dtype", path, name);
    if (rank < 1 || rank > HPCTI_MAX_DIMS + 1)
        return hpcti_error(ctx, HPCT_ERR_FORMAT, "%s dataset /%s: rank %d not supported", path,
                           name, rank);
    if (dims[0] == 0)
        return hpcti_error(ctx, HPCT_ERR_FORMAT, "%s dataset /%s: empty shard", path, name);
    l->type = (hpcti_type_t)t, l->rank = rank - 1, *rows = dims[0];
    for (int i = 1; i < rank; i++) l->dims[i - 1] = dims[i];
    return HPCT_SUCCESS;
}

hpct_status_t hpcti_shard_describe(hpct_ctx_t ctx, const char *path, const char *inputs_name,
                                   const char *targets_name, hpcti_layout_t *inputs,
                                   hpcti_layout_t *targets, uint64_t *n_inputs, uint64_t *n_targets)
{
    hpct_status_t s = HPCT_ERR_INTERNAL;
    hpcti_hdf5_lock();
    H5E_BEGIN_TRY
    {
        hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
        if (file < 0) {
            s = hpcti_error(ctx, HPCT_ERR_FORMAT, "%s: not a readable HDF5 file", path);
        } else {
            s = describe_dataset(ctx, file, path, inputs_name, inputs, n_inputs);
            if (!s) s = describe_dataset(ctx, file, path, targets_name, targets, n_targets);
            H5Fclose(file);
        }
    }
    H5E_END_TRY;
    hpcti_hdf5_unlock();
    return s;
}
