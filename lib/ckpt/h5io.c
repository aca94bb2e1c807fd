/* h5io.c: one checkpoint file in HDF5: its datasets written (with a crc32c attribute each),
 * flushed and fsync'd; and the helpers that read it back (the signature check before HDF5
 * opens it, attributes checked before they are read, checksums), used by scan.c. Every HDF5
 * call here runs under hpcti_hdf5_lock with HDF5's automatic error printing switched off;
 * errors become detail strings. The commit around the writing is in commit.c. */
#include "h5io.h"
#include "../core/h5safe.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void hpcti_ck_h5_enter(hpcti_h5_quiet_t *q)
{
    (void)q;
    hpcti_hdf5_lock(); /* which also switches HDF5's printing off */
}

void hpcti_ck_h5_leave(const hpcti_h5_quiet_t *q)
{
    (void)q;
    H5Eclear2(H5E_DEFAULT);
    hpcti_hdf5_unlock();
}

/* HDF5 types in the file (little-endian, fixed) and in memory (native) for an item type. */
static hid_t file_type(int dtype)
{
    switch (dtype) {
    case HPCT_CKPT_F32: return H5T_IEEE_F32LE;
    case HPCT_CKPT_F64: return H5T_IEEE_F64LE;
    case HPCT_CKPT_I32: return H5T_STD_I32LE;
    case HPCT_CKPT_I64: return H5T_STD_I64LE;
    case HPCTI_CK_U64: return H5T_STD_U64LE;
    default: return H5T_STD_U8LE;
    }
}

hid_t hpcti_ck_mem_type(int dtype)
{
    switch (dtype) {
    case HPCT_CKPT_F32: return H5T_NATIVE_FLOAT;
    case HPCT_CKPT_F64: return H5T_NATIVE_DOUBLE;
    case HPCT_CKPT_I32: return H5T_NATIVE_INT32;
    case HPCT_CKPT_I64: return H5T_NATIVE_INT64;
    case HPCTI_CK_U64: return H5T_NATIVE_UINT64;
    default: return H5T_NATIVE_UINT8;
    }
}

/* ---- checking before reading ------------------------------------------------------ */

static const char *class_name(H5T_class_t c)
{
    switch (c) {
    case H5T_INTEGER: return "integer";
    case H5T_FLOAT: return "float";
    case H5T_STRING: return "string";
    default: return "other";
    }
}

const char *hpcti_ck_h5_check(hid_t type, hid_t space, const hpcti_h5_want_t *want, char why[160])
{
    if (type < 0 || space < 0) return snprintf(why, 160, "unreadable type or dataspace"), why;
    H5T_class_t cls = H5Tget_class(type);
    size_t size = H5Tget_size(type);
    int rank = H5Sget_simple_extent_ndims(space);
    hssize_t n = H5Sget_simple_extent_npoints(space);
    int vlen = cls == H5T_STRING && H5Tis_variable_str(type) != 0;
    int size_ok = want->up_to ? size >= 1 && size <= want->size : size == want->size;
    if (cls == want->cls && !vlen && size_ok && rank >= 0 && rank <= want->max_rank && n >= 0 &&
        (want->count < 0 || n == want->count))
        return NULL;
    char count[48] = "";
    if (want->count >= 0) snprintf(count, sizeof count, ", %lld element(s)", want->count);
    snprintf(why, 160,
             "is %s%s of %zu bytes, rank %d, %lld element(s); expected %s of %s%zu bytes, %s%s",
             vlen ? "variable-length " : "", class_name(cls), size, rank, (long long)n,
             class_name(want->cls), want->up_to ? "at most " : "", want->size,
             want->max_rank ? "scalar or 1-D" : "a scalar", count);
    return why;
}

hpcti_read_t hpcti_ck_read_attr(hid_t obj, const char *objname, const char *attr,
                                const hpcti_h5_want_t *want, hid_t mtype, void *buf,
                                const char *file, hpcti_ckerr_t *err)
{
    char h5[400], why[160];
    hid_t a = H5Aopen(obj, attr, H5P_DEFAULT);
    if (a < 0) {
        hpcti_ckerr_set(err, HPCT_ERR_CHECKSUM, "checkpoint %s: cannot open attribute %s of %s: %s",
                        file, attr, objname, hpcti_h5_detail(h5));
        return HPCTI_READ_CORRUPT;
    }
    hid_t type = H5Aget_type(a), space = H5Aget_space(a);
    const char *bad = hpcti_ck_h5_check(type, space, want, why);
    herr_t rc = bad ? -1 : H5Aread(a, mtype, buf);
    if (bad)
        hpcti_ckerr_set(err, HPCT_ERR_FORMAT, "checkpoint %s: attribute %s of %s %s", file, attr,
                        objname, bad);
    else if (rc < 0)
        hpcti_ckerr_set(err, HPCT_ERR_CHECKSUM, "checkpoint %s: cannot read attribute %s of %s: %s",
                        file, attr, objname, hpcti_h5_detail(h5));
    if (type >= 0) H5Tclose(type);
    if (space >= 0) H5Sclose(space);
    H5Aclose(a);
    return rc < 0 ? HPCTI_READ_CORRUPT : HPCTI_READ_OK;
}

/* ---- writing ----------------------------------------------------------------- */

static herr_t write_attr(hid_t obj, const char *name, hid_t ftype, hid_t mtype, const void *v)
{
    hid_t space = H5Screate(H5S_SCALAR);
    hid_t attr = H5Acreate2(obj, name, ftype, space, H5P_DEFAULT, H5P_DEFAULT);
    herr_t rc = attr < 0 ? -1 : H5Awrite(attr, mtype, v);
    if (attr >= 0) H5Aclose(attr);
    H5Sclose(space);
    return rc;
}

static herr_t write_string_attr(hid_t obj, const char *name, const char *value)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, strlen(value) + 1);
    herr_t rc = write_attr(obj, name, t, t, value);
    H5Tclose(t);
    return rc;
}

/* The model description is a fixed-length string dataset (readable by h5dump and h5py). */
static hid_t string_type(size_t bytes)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, bytes ? bytes : 1);
    return t;
}

/* One dataset with its crc32c attribute; contiguous, never pre-filled. */
static hpct_status_t write_item(hid_t fid, hid_t lcpl, hid_t dcpl, const hpcti_ckitem_t *it,
                                const char *path, hpcti_ckerr_t *err)
{
    int str = it->dtype == HPCTI_CK_STR;
    hsize_t dims[1] = {it->count};
    hid_t space = it->scalar ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, dims, NULL);
    hid_t ft = str ? string_type(it->count) : file_type(it->dtype);
    hid_t mt = str ? ft : hpcti_ck_mem_type(it->dtype);
    hid_t dset = H5Dcreate2(fid, it->path, ft, space, lcpl, dcpl, H5P_DEFAULT);
    herr_t rc = dset < 0 ? -1 : H5Dwrite(dset, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, it->data);
    uint32_t crc = hpct_crc32c(0, it->data, it->count * hpcti_ck_elsize(it->dtype));
    if (rc >= 0) rc = write_attr(dset, "crc32c", H5T_STD_U32LE, H5T_NATIVE_UINT32, &crc);
    hpct_status_t s = HPCT_SUCCESS;
    char h5[400];
    if (rc < 0) /* before any other HDF5 call clears the error stack */
        s = hpcti_ckerr_set(err, HPCT_ERR_IO, "cannot write dataset %s of checkpoint %s: %s",
                            it->path, path, hpcti_h5_detail(h5));
    if (dset >= 0) H5Dclose(dset);
    if (str) H5Tclose(ft);
    H5Sclose(space);
    return s;
}

static hpct_status_t write_root_attrs(hid_t fid, int schema, const char *path,
                                      hpcti_ckerr_t *err)
{
    herr_t rc = write_attr(fid, "schema_version", H5T_STD_I32LE, H5T_NATIVE_INT, &schema);
    if (rc >= 0) rc = write_string_attr(fid, "library_version", HPCT_VERSION_STRING);
    if (rc >= 0) rc = write_string_attr(fid, "format", "libhpctrain checkpoint");
    if (rc >= 0) return HPCT_SUCCESS;
    char h5[400];
    return hpcti_ckerr_set(err, HPCT_ERR_IO, "cannot write the attributes of checkpoint %s: %s",
                           path, hpcti_h5_detail(h5));
}

/* The first write the file driver saw fail (h5sink.c), as the save's error. */
static hpct_status_t sink_failed(const hpcti_ck_sink_t *sink, const char *path, hpcti_ckerr_t *err)
{
    return hpcti_ckerr_set(err, HPCT_ERR_IO,
                           "cannot write checkpoint %s: %s (%zu bytes at byte %lld)", path,
                           strerror(sink->err), sink->bytes, sink->offset);
}

/* Flush HDF5's buffers and fsync the file through HDF5's own descriptor. */
static hpct_status_t flush_and_sync(hid_t fid, const hpcti_ck_sink_t *sink, const char *path,
                                    hpcti_ckerr_t *err)
{
    char h5[400];
    if (H5Fflush(fid, H5F_SCOPE_GLOBAL) < 0)
        return hpcti_ckerr_set(err, HPCT_ERR_IO, "cannot flush checkpoint %s: %s", path,
                               hpcti_h5_detail(h5));
    if (sink->err) return sink_failed(sink, path, err);
    int *fd = NULL;
    if (H5Fget_vfd_handle(fid, H5P_DEFAULT, (void **)&fd) < 0 || !fd)
        return hpcti_ckerr_set(err, HPCT_ERR_IO, "cannot get the descriptor of checkpoint %s: %s",
                               path, hpcti_h5_detail(h5));
    int rc;
    do rc = fsync(*fd);
    while (rc < 0 && errno == EINTR);
    if (rc < 0)
        return hpcti_ckerr_set(err, HPCT_ERR_IO, "cannot fsync checkpoint %s: %s", path,
                               strerror(errno));
    return HPCT_SUCCESS;
}

/* Links directly in group (items whose path is group/NAME) and their mean name length, as
 * HDF5's estimate for sizing the group's object header. */
static void estimate_links(const hpcti_snapshot_t *snap, const char *group, unsigned *links,
                           unsigned *name_len)
{
    size_t n = 0, chars = 0, g = strlen(group);
    for (int i = 0; i < snap->num; i++) {
        const char *p = snap->items[i].path;
        if (!strncmp(p, group, g) && p[g] == '/' && !strchr(p + g + 1, '/'))
            n++, chars += strlen(p + g + 1);
    }
    *links = (unsigned)(n + 4 < 65535 ? n + 4 : 65535); /* + a few subgroups */
    *name_len = (unsigned)(n ? chars / n + 1 : 8);
}

/* Create the groups above every item (params/, meta/, ...) with compact link storage:
 * links then live in the checksummed v2 object header, never in an unchecksummed
 * fractal heap that a damaged file could make HDF5 decode as garbage. The header is sized
 * for the group's links up front (H5Pset_est_link_info): grown one link at a time, HDF5
 * took 75 s to insert 4000 links (quadratic), 0.3 s sized. */
static hpct_status_t make_groups(hid_t fid, const hpcti_snapshot_t *snap, const char *path,
                                 hpcti_ckerr_t *err)
{
    hid_t gcpl = H5Pcreate(H5P_GROUP_CREATE);
    H5Pset_link_phase_change(gcpl, 65535, 65535);
    hpct_status_t s = HPCT_SUCCESS;
    char group[sizeof snap->items[0].path], h5[400];
    for (int i = 0; i < snap->num && !s; i++) {
        snprintf(group, sizeof group, "%s", snap->items[i].path);
        for (char *slash = strchr(group, '/'); slash && !s; slash = strchr(slash + 1, '/')) {
            *slash = '\0';
            if (H5Lexists(fid, group, H5P_DEFAULT) <= 0) {
                unsigned links, name_len;
                estimate_links(snap, group, &links, &name_len);
                H5Pset_est_link_info(gcpl, links, name_len);
                hid_t g = H5Gcreate2(fid, group, H5P_DEFAULT, gcpl, H5P_DEFAULT);
                if (g < 0)
                    s = hpcti_ckerr_set(err, HPCT_ERR_IO,
                                        "cannot create group %s in checkpoint %s: %s", group, path,
                                        hpcti_h5_detail(h5));
                else
                    H5Gclose(g);
            }
            *slash = '/';
        }
    }
    H5Pclose(gcpl);
    return s;
}

/* Every item; stops at the first failed write (the rest would only be dropped). */
static hpct_status_t write_items(hid_t fid, const hpcti_ckdir_t *d, const hpcti_snapshot_t *snap,
                                 const hpcti_ck_sink_t *sink, const char *path, hpcti_ckerr_t *err)
{
    hpct_status_t gs = make_groups(fid, snap, path, err);
    if (gs) return gs;
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER);
    hpct_status_t s = HPCT_SUCCESS;
    for (int i = 0; i < snap->num && !s && !sink->err; i++) {
        s = write_item(fid, lcpl, dcpl, &snap->items[i], path, err);
        if (i == snap->num / 2) hpcti_ck_stop_if(d, HPCTI_STAGE_HALF);
    }
    H5Pclose(dcpl);
    H5Pclose(lcpl);
    return s;
}

/* Whole file at path: create, attributes, datasets, flush, fsync, close. Every write goes
 * through the sink driver, so HDF5 never sees one fail and the file is closed exactly once
 * (HDF5 1.10 cannot close a file after a failed flush, nor use its id after a failed close:
 * h5sink.c); a failure is reported from the sink afterwards. */
static hpct_status_t write_file(const hpcti_ckdir_t *d, const hpcti_snapshot_t *snap,
                                const char *path, hpcti_ckerr_t *err)
{
    char h5[400];
    hpcti_ck_sink_t sink;
    hid_t fapl = hpcti_ck_sink_fapl(&sink);
    if (fapl < 0)
        return hpcti_ckerr_set(err, HPCT_ERR_INTERNAL,
                               "cannot set up the HDF5 file driver for checkpoint %s: %s", path,
                               hpcti_h5_detail(h5));
    /* The 1.8 file format: superblock v2 and object headers v2 carry checksums, so a damaged
     * header is refused by HDF5 instead of being decoded (HDF5 1.10 can crash decoding a
     * damaged v1 header). Readable by HDF5 >= 1.8 and h5py. */
    H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_V18);
    hid_t fcpl = H5Pcreate(H5P_FILE_CREATE); /* root group: compact links too */
    H5Pset_link_phase_change(fcpl, 65535, 65535);
    hid_t fid = H5Fcreate(path, H5F_ACC_TRUNC, fcpl, fapl);
    H5Pclose(fcpl);
    H5Pclose(fapl);
    if (fid < 0)
        return hpcti_ckerr_set(err, HPCT_ERR_IO, "cannot create checkpoint file %s: %s", path,
                               sink.open_err ? strerror(sink.open_err) : hpcti_h5_detail(h5));
    hpcti_ck_stop_if(d, HPCTI_STAGE_CREATED);
    hpct_status_t s = write_root_attrs(fid, snap->schema ? snap->schema : 1, path, err);
    if (!s) s = write_items(fid, d, snap, &sink, path, err);
    if (!s) s = flush_and_sync(fid, &sink, path, err);
    /* fid is not used again, whatever H5Fclose returns. A failed write is the cause of any
     * error after it; a failed close is a failed write. */
    herr_t closed = H5Fclose(fid);
    if (sink.err) return sink_failed(&sink, path, err);
    if (closed < 0 && !s)
        s = hpcti_ckerr_set(err, HPCT_ERR_IO, "cannot close checkpoint %s: %s", path,
                            hpcti_h5_detail(h5));
    return s;
}

hpct_status_t hpcti_ck_write_file(const hpcti_ckdir_t *d, const hpcti_snapshot_t *snap,
                                  const char *path, hpcti_ckerr_t *err)
{
    hpcti_h5_quiet_t q;
    hpcti_ck_h5_enter(&q);
    hpct_status_t s = write_file(d, snap, path, err);
    hpcti_ck_h5_leave(&q);
    return s;
}

/* ---- reading ----------------------------------------------------------------------- */

hpcti_read_t hpcti_ck_check_crc(hid_t dset, const char *dataset, uint32_t computed,
                                const char *file, hpcti_ckerr_t *err)
{
    static const hpcti_h5_want_t scalar_u32 = {H5T_INTEGER, 4, 0, 0, 1};
    uint32_t stored = 0;
    if (hpcti_ck_read_attr(dset, dataset, "crc32c", &scalar_u32, H5T_NATIVE_UINT32, &stored, file,
                           err))
        return HPCTI_READ_CORRUPT;
    if (stored == computed) return HPCTI_READ_OK;
    hpcti_ckerr_set(err, HPCT_ERR_CHECKSUM,
                    "checkpoint %s: dataset %s fails its checksum (stored crc32c %08x, "
                    "computed %08x)",
                    file, dataset, (unsigned)stored, (unsigned)computed);
    return HPCTI_READ_CORRUPT;
}

hpcti_read_t hpcti_ck_read_schema(hid_t fid, const char *file, int *schema, hpcti_ckerr_t *err)
{
    static const hpcti_h5_want_t scalar_i32 = {H5T_INTEGER, 4, 0, 0, 1};
    int32_t v = -1;
    hpcti_read_t r = hpcti_ck_read_attr(fid, "/", "schema_version", &scalar_i32, H5T_NATIVE_INT32,
                                        &v, file, err);
    *schema = r == HPCTI_READ_OK ? (int)v : -1;
    return r;
}

/* The first bytes of an HDF5 file written by this library: the signature, then the
 * superblock version (2 with the 1.8 format bounds of write_file; 3 is the 1.10 format). */
static const unsigned char h5_signature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};

/* Signature and superblock version of path, read without HDF5; HPCTI_READ_OK when HDF5 may
 * parse it. The library writes no user block, so the signature must be at offset 0. */
static hpcti_read_t precheck_h5(const char *path, hpcti_ckerr_t *err)
{
    unsigned char head[9];
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    ssize_t got = fd < 0 ? -1 : pread(fd, head, sizeof head, 0);
    int saved = errno;
    struct stat st;
    long long bytes = fd >= 0 && fstat(fd, &st) == 0 ? (long long)st.st_size : -1;
    if (fd >= 0) close(fd);
    if (got < 0) {
        hpcti_ckerr_set(err, HPCT_ERR_IO, "checkpoint %s cannot be read: %s", path,
                        strerror(saved));
    } else if (got < (ssize_t)sizeof head || memcmp(head, h5_signature, 8) != 0) {
        hpcti_ckerr_set(err, HPCT_ERR_FORMAT,
                        "checkpoint %s is not a readable HDF5 file (damaged, or not HDF5: no "
                        "HDF5 signature at its start; %lld bytes)",
                        path, bytes);
    } else if (head[8] < 2) {
        hpcti_ckerr_set(err, HPCT_ERR_FORMAT,
                        "checkpoint %s is an HDF5 file in the pre-1.8 format (superblock "
                        "version %d), which libhpctrain never writes, so not one of its "
                        "checkpoints (written by another program?): refused before HDF5 "
                        "parses it (that format has no metadata checksums)",
                        path, head[8]);
    } else if (head[8] > 3) {
        hpcti_ckerr_set(err, HPCT_ERR_CHECKSUM,
                        "checkpoint %s is not a readable HDF5 file (damaged: superblock version "
                        "%d is not one HDF5 knows)",
                        path, head[8]);
    } else {
        return HPCTI_READ_OK;
    }
    return HPCTI_READ_CORRUPT;
}

hpcti_read_t hpcti_ck_h5_open(const char *path, hid_t *fid, hpcti_ckerr_t *err)
{
    char h5[400];
    *fid = -1;
    if (precheck_h5(path, err)) return HPCTI_READ_CORRUPT;
    *fid = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (*fid < 0) {
        hpcti_ckerr_set(err, HPCT_ERR_CHECKSUM,
                        "checkpoint %s is not a readable HDF5 file (damaged: HDF5 cannot open "
                        "it): %s",
                        path, hpcti_h5_detail(h5));
        return HPCTI_READ_CORRUPT;
    }
    htri_t ours = H5Aexists(*fid, "schema_version");
    if (ours > 0) return HPCTI_READ_OK;
    if (ours == 0)
        hpcti_ckerr_set(err, HPCT_ERR_FORMAT,
                        "checkpoint %s is a valid HDF5 file but not a libhpctrain checkpoint "
                        "(no schema_version attribute on /)",
                        path);
    else
        hpcti_ckerr_set(err, HPCT_ERR_CHECKSUM,
                        "checkpoint %s: HDF5 cannot list the attributes of / (damaged?): %s", path,
                        hpcti_h5_detail(h5));
    H5Fclose(*fid);
    *fid = -1;
    return HPCTI_READ_CORRUPT;
}
