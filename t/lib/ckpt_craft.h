/* ckpt_craft.h: crafting checkpoint files with the HDF5 C API, as a buggy or hostile writer
 * would: values rewritten with their crc32c recomputed, datasets replaced by others of any
 * type, shape or storage (with the valid crc32c of their bytes), added or deleted. Header-only
 * (static functions) for t/test_ckpt_agree.c, t/test_ckpt_crafted.c and t/lib/ckpt_make.c.
 * Files are opened in the HDF5 1.8 format the library writes. Each returns 0 on success. */
#ifndef HPCT_CKPT_CRAFT_H
#define HPCT_CKPT_CRAFT_H

#include "hpctrain.h"

#include <hdf5.h>
#include <stdlib.h>
#include <string.h>

/* file opened for writing with the library's format bounds; -1 on failure. */
static inline hid_t craft_open(const char *file)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_V18);
    hid_t fid = H5Fopen(file, H5F_ACC_RDWR, fapl);
    H5Pclose(fapl);
    return fid;
}

/* The crc32c attribute of obj set to the CRC32C of n bytes at v (as the library computes). */
static inline int craft_set_crc(hid_t obj, const void *v, size_t n)
{
    uint32_t crc = hpct_crc32c(0, v, n);
    if (H5Aexists(obj, "crc32c") > 0 && H5Adelete(obj, "crc32c") < 0) return -1;
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(obj, "crc32c", H5T_STD_U32LE, sp, H5P_DEFAULT, H5P_DEFAULT);
    int rc = a < 0 || H5Awrite(a, H5T_NATIVE_UINT32, &crc) < 0;
    if (a >= 0) H5Aclose(a);
    H5Sclose(sp);
    return rc ? -1 : 0;
}

/* Overwrite dataset name of file with n bytes at v (its own type and size) and store the
 * crc32c of the new bytes: the checksums still pass. */
static inline int craft_value(const char *file, const char *name, const void *v, size_t n)
{
    hid_t fid = craft_open(file);
    hid_t d = fid < 0 ? -1 : H5Dopen2(fid, name, H5P_DEFAULT);
    hid_t t = d < 0 ? -1 : H5Dget_type(d);
    int rc =
        t < 0 || H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0 || craft_set_crc(d, v, n);
    if (t >= 0) H5Tclose(t);
    if (d >= 0) H5Dclose(d);
    return (fid >= 0 && H5Fclose(fid) < 0) || rc ? -1 : 0;
}

/* The int64 scalar dataset name of file set to v (crc32c recomputed). */
static inline int craft_i64(const char *file, const char *name, int64_t v)
{
    return craft_value(file, name, &v, sizeof v);
}

/* What craft_replace creates: file type and memory type, rank (0: scalar) and dims, the
 * bytes (NULL: never written, no storage allocated), whether it gets a valid crc32c of its n
 * bytes, and its creation properties (H5P_DEFAULT: contiguous). */
typedef struct craft_ds {
    hid_t ftype, mtype;
    int rank;
    hsize_t dims[2];
    const void *data;
    size_t bytes;
    int crc;
    hid_t dcpl;
} craft_ds_t;

/* Create dataset name in fid as c says (groups on the way are created). */
static inline int craft_create(hid_t fid, const char *name, const craft_ds_t *c)
{
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    hid_t sp = c->rank ? H5Screate_simple(c->rank, c->dims, NULL) : H5Screate(H5S_SCALAR);
    hid_t d = H5Dcreate2(fid, name, c->ftype, sp, lcpl, c->dcpl, H5P_DEFAULT);
    int rc = d < 0 ||
             (c->data && H5Dwrite(d, c->mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, c->data) < 0) ||
             (c->crc && craft_set_crc(d, c->data, c->bytes));
    if (d >= 0) H5Dclose(d);
    H5Sclose(sp);
    H5Pclose(lcpl);
    return rc ? -1 : 0;
}

/* Replace (or add) dataset name of file by the one c describes. */
static inline int craft_replace(const char *file, const char *name, const craft_ds_t *c)
{
    hid_t fid = craft_open(file);
    if (fid < 0) return -1;
    int rc = H5Lexists(fid, name, H5P_DEFAULT) > 0 && H5Ldelete(fid, name, H5P_DEFAULT) < 0;
    if (!rc) rc = craft_create(fid, name, c);
    return H5Fclose(fid) < 0 || rc ? -1 : 0;
}

/* Delete the link name (a dataset or a group) of file. */
static inline int craft_delete(const char *file, const char *name)
{
    hid_t fid = craft_open(file);
    if (fid < 0) return -1;
    int rc = H5Ldelete(fid, name, H5P_DEFAULT) < 0;
    return H5Fclose(fid) < 0 || rc ? -1 : 0;
}

/* Replace the attribute attr of object obj of file by a scalar of type t holding v (NULL:
 * delete it only). */
static inline int craft_attr_value(const char *file, const char *obj, const char *attr, hid_t t,
                                   const void *v)
{
    hid_t fid = craft_open(file);
    hid_t o = fid < 0 ? -1 : H5Oopen(fid, obj, H5P_DEFAULT);
    int rc = o < 0 || (H5Aexists(o, attr) > 0 && H5Adelete(o, attr) < 0);
    if (!rc && v) {
        hid_t sp = H5Screate(H5S_SCALAR);
        hid_t a = H5Acreate2(o, attr, t, sp, H5P_DEFAULT, H5P_DEFAULT);
        rc = a < 0 || H5Awrite(a, t, v) < 0;
        if (a >= 0) H5Aclose(a);
        H5Sclose(sp);
    }
    if (o >= 0) H5Oclose(o);
    return (fid >= 0 && H5Fclose(fid) < 0) || rc ? -1 : 0;
}

/* Read dataset name of file (count float32 elements at most) into out; its count, or -1. */
static inline long craft_read_f32(const char *file, const char *name, float *out, size_t max)
{
    hid_t fid = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t d = fid < 0 ? -1 : H5Dopen2(fid, name, H5P_DEFAULT);
    hid_t sp = d < 0 ? -1 : H5Dget_space(d);
    hssize_t n = sp < 0 ? -1 : H5Sget_simple_extent_npoints(sp);
    long got = n >= 0 && (size_t)n <= max &&
                       H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, out) >= 0
                   ? (long)n
                   : -1;
    if (sp >= 0) H5Sclose(sp);
    if (d >= 0) H5Dclose(d);
    if (fid >= 0) H5Fclose(fid);
    return got;
}

#endif
