/* inspect.c: one checkpoint file read without a model or optimizer (hpct_ckpt_file_*):
 * versions, /meta, every dataset with its type, size and verdict, and the values of one
 * dataset. Written for post-mortems: a damaged dataset is listed with its verdict, never
 * trusted and never allowed to crash the reader. The file is read by the same pass as resume
 * reads it (scan.c) and hpct_ckpt_file_meta gives the same verdict as resume (validate.c). */
#include "scan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct hpct_ckpt_file {
    hpct_ctx_t ctx;
    hpcti_ck_scan_t scan; /* path, versions, every dataset (sorted by name) and its verdict */
};

/* ---- opening ---------------------------------------------------------------------------- */

void hpct_ckpt_file_close(hpct_ckpt_file_t f)
{
    if (!f) return;
    hpcti_ck_scan_free(&f->scan);
    free(f);
}

hpct_status_t hpct_ckpt_file_open(hpct_ctx_t ctx, const char *path, hpct_ckpt_file_t *out)
{
    if (!ctx) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(ctx);
    if (out) *out = NULL; /* on every failure, as the header says */
    if (!out || !path || !*path)
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG, "hpct_ckpt_file_open: %s is NULL or empty",
                           out ? "path" : "file");
    if (strlen(path) >= HPCTI_CKPT_PATH_MAX)
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG, "hpct_ckpt_file_open: path too long");
    struct hpct_ckpt_file *f = hpcti_calloc(ctx, 1, sizeof *f, "a checkpoint inspection handle");
    if (!f) return HPCT_ERR_NO_MEMORY;
    f->ctx = ctx;
    snprintf(f->scan.path, sizeof f->scan.path, "%s", path);
    hpcti_ckerr_t err = {0, ""};
    hpct_status_t s = hpcti_ck_scan(&f->scan, &err);
    if (s) {
        hpct_ckpt_file_close(f);
        return hpcti_error(ctx, s, "%s", err.msg);
    }
    *out = f;
    return HPCT_SUCCESS;
}

/* ---- accessors ------------------------------------------------------------------------ */

hpct_status_t hpct_ckpt_file_versions(hpct_ckpt_file_t f, int *schema, const char **library)
{
    if (!f) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(f->ctx);
    if (schema) *schema = f->scan.schema;
    if (library) *library = f->scan.library;
    return HPCT_SUCCESS;
}

hpct_status_t hpct_ckpt_file_num_datasets(hpct_ckpt_file_t f, int *n)
{
    if (!f) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(f->ctx);
    if (!n)
        return hpcti_error(f->ctx, HPCT_ERR_INVALID_ARG, "hpct_ckpt_file_num_datasets: n is NULL");
    *n = f->scan.num;
    return HPCT_SUCCESS;
}

static hpct_status_t check_index(hpct_ckpt_file_t f, int i, const char *fn)
{
    if (i >= 0 && i < f->scan.num) return HPCT_SUCCESS;
    return hpcti_error(f->ctx, HPCT_ERR_INVALID_ARG,
                       "%s: dataset index %d of checkpoint %s is outside [0, %d)", fn, i,
                       f->scan.path, f->scan.num);
}

hpct_status_t hpct_ckpt_file_dataset(hpct_ckpt_file_t f, int i, const char **name,
                                     hpct_ckpt_dtype_t *dtype, size_t *count, int *scalar)
{
    if (!f) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(f->ctx);
    hpct_status_t s = check_index(f, i, "hpct_ckpt_file_dataset");
    if (s) return s;
    const hpcti_ck_ds_t *d = &f->scan.ds[i];
    if (name) *name = d->name;
    if (dtype) *dtype = d->dtype;
    if (count) *count = d->count;
    if (scalar) *scalar = d->rank == 0;
    return HPCT_SUCCESS;
}

/* Index of dataset name in the scan (sorted by name), or -1. */
static int find(hpct_ckpt_file_t f, const char *name)
{
    const hpcti_ck_ds_t *hit = hpcti_ck_scan_find(&f->scan, name);
    return hit ? (int)(hit - f->scan.ds) : -1;
}

hpct_status_t hpct_ckpt_file_find(hpct_ckpt_file_t f, const char *name, int *index)
{
    if (!f) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(f->ctx);
    if (!index)
        return hpcti_error(f->ctx, HPCT_ERR_INVALID_ARG, "hpct_ckpt_file_find: index is NULL");
    *index = find(f, name);
    if (*index >= 0) return HPCT_SUCCESS;
    return hpcti_error(f->ctx, HPCT_ERR_NOT_FOUND, "checkpoint %s has no dataset %s", f->scan.path,
                       name ? name : "(NULL)");
}

hpct_status_t hpct_ckpt_file_verify(hpct_ckpt_file_t f, int i)
{
    if (!f) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(f->ctx);
    hpct_status_t s = check_index(f, i, "hpct_ckpt_file_verify");
    const hpcti_ck_ds_t *d = s ? NULL : &f->scan.ds[i];
    if (!d || !d->verdict) return s;
    return hpcti_error(f->ctx, d->verdict, "%s", d->detail ? d->detail : "damaged dataset");
}

/* ---- metadata ---------------------------------------------------------------------- */

/* The verified bytes of /meta/<field> when it has the expected type and one element. */
static const void *meta_value(hpct_ckpt_file_t f, const char *field, hpct_ckpt_dtype_t dtype,
                              hpct_status_t *first, char *why, size_t why_size)
{
    char name[64];
    snprintf(name, sizeof name, "meta/%s", field);
    int i = find(f, name);
    const hpcti_ck_ds_t *d = i < 0 ? NULL : &f->scan.ds[i];
    const char *problem = NULL;
    if (!d)
        problem = "is missing";
    else if (d->verdict)
        problem = d->detail;
    else if (d->dtype != dtype || (dtype != HPCT_CKPT_STRING && d->count != 1) || !d->kept)
        problem = "has an unexpected type or size";
    if (!problem) return d->kept;
    if (!*first) {
        *first = d && d->verdict ? d->verdict : HPCT_ERR_FORMAT;
        if (d && d->verdict)
            snprintf(why, why_size, "%s", problem);
        else
            snprintf(why, why_size, "checkpoint %.900s: dataset %s %s", f->scan.path, name,
                     problem);
    }
    return NULL;
}

hpct_status_t hpct_ckpt_file_meta(hpct_ckpt_file_t f, hpct_ckpt_meta_t *meta)
{
    if (!f) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(f->ctx);
    if (!meta)
        return hpcti_error(f->ctx, HPCT_ERR_INVALID_ARG, "hpct_ckpt_file_meta: meta is NULL");
    hpct_ckpt_meta_t m = HPCT_CKPT_META_INITIALIZER;
    hpct_status_t first = HPCT_SUCCESS;
    char why[1024] = "";
    const int64_t *v;
    const void *p;
#define META_I64(field, dest)                                                                      \
    if ((v = meta_value(f, field, HPCT_CKPT_I64, &first, why, sizeof why))) dest = *v
    META_I64("step", m.step);
    META_I64("epoch", m.epoch);
    META_I64("cursor_epoch", m.cursor_epoch);
    META_I64("cursor_step", m.cursor_step);
    META_I64("world_size", m.world_size);
    META_I64("global_batch", m.global_batch);
#undef META_I64
    if ((p = meta_value(f, "config_hash", HPCT_CKPT_U64, &first, why, sizeof why)))
        memcpy(&m.config_hash, p, sizeof m.config_hash);
    if ((p = meta_value(f, "saved_at", HPCT_CKPT_F64, &first, why, sizeof why)))
        memcpy(&m.saved_at, p, sizeof m.saved_at);
    int i = find(f, "meta/model");
    if ((p = meta_value(f, "model", HPCT_CKPT_STRING, &first, why, sizeof why)) &&
        memchr(p, '\0', f->scan.ds[i].count))
        m.model = p;
    m.path = f->scan.path;
    *meta = m;
    if (first) return hpcti_error(f->ctx, first, "%s", why);
    hpcti_ckerr_t err = {0, ""}; /* the whole file, as resume judges it */
    return hpcti_ck_validate(&f->scan, &err) ? hpcti_error(f->ctx, err.status, "%s", err.msg)
                                             : HPCT_SUCCESS;
}

/* ---- values ------------------------------------------------------------------------- */

/* Element k of raw bytes of dtype as a double. */
static double as_double(const void *raw, hpct_ckpt_dtype_t dtype, size_t k)
{
    switch (dtype) {
    case HPCT_CKPT_F32: return ((const float *)raw)[k];
    case HPCT_CKPT_F64: return ((const double *)raw)[k];
    case HPCT_CKPT_I32: return ((const int32_t *)raw)[k];
    case HPCT_CKPT_I64: return (double)((const int64_t *)raw)[k];
    case HPCT_CKPT_U64: return (double)((const uint64_t *)raw)[k];
    default: return ((const unsigned char *)raw)[k];
    }
}

static void convert(const void *raw, const hpcti_ck_ds_t *d, hpct_ckpt_dtype_t as, void *out)
{
    if (as == d->dtype) {
        memcpy(out, raw, d->count * d->elsize);
        return;
    }
    for (size_t k = 0; k < d->count; k++) {
        double x = as_double(raw, d->dtype, k);
        if (as == HPCT_CKPT_F64)
            ((double *)out)[k] = x;
        else
            ((float *)out)[k] = (float)x;
    }
}

/* HDF5 part of hpct_ckpt_file_read: open the file again, load, convert. */
static hpct_status_t read_values(hpct_ckpt_file_t f, const hpcti_ck_ds_t *d, hpct_ckpt_dtype_t as,
                                 void *out, hpcti_ckerr_t *err)
{
    hid_t fid;
    if (hpcti_ck_h5_open(f->scan.path, &fid, err)) return err->status;
    void *raw;
    hpcti_read_t r = hpcti_ck_scan_reread(fid, &f->scan, d, &raw, err);
    H5Fclose(fid);
    if (raw) convert(raw, d, as, out);
    free(raw);
    return r == HPCTI_READ_OK ? HPCT_SUCCESS : err->status;
}

hpct_status_t hpct_ckpt_file_read(hpct_ckpt_file_t f, const char *name, hpct_ckpt_dtype_t as,
                                  void *out, size_t count)
{
    if (!f) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(f->ctx);
    int i = find(f, name);
    if (i < 0)
        return hpcti_error(f->ctx, HPCT_ERR_NOT_FOUND, "checkpoint %s has no dataset %s",
                           f->scan.path, name ? name : "(NULL)");
    const hpcti_ck_ds_t *d = &f->scan.ds[i];
    if (!out || count != d->count)
        return hpcti_error(f->ctx, HPCT_ERR_INVALID_ARG,
                           "hpct_ckpt_file_read: dataset %s of checkpoint %s holds %zu elements, "
                           "asked for %zu%s",
                           d->name, f->scan.path, d->count, count, out ? "" : " into NULL");
    int numeric = d->dtype != HPCT_CKPT_STRING && d->dtype != HPCT_CKPT_OTHER;
    if (as != d->dtype && !(numeric && (as == HPCT_CKPT_F64 || as == HPCT_CKPT_F32)))
        return hpcti_error(f->ctx, HPCT_ERR_INVALID_ARG,
                           "hpct_ckpt_file_read: dataset %s of checkpoint %s cannot be read as "
                           "dtype %d (only as itself, or F64/F32 when numeric)",
                           d->name, f->scan.path, (int)as);
    hpcti_ckerr_t err = {0, ""};
    hpcti_h5_quiet_t q;
    hpcti_ck_h5_enter(&q);
    hpct_status_t s = read_values(f, d, as, out, &err);
    hpcti_ck_h5_leave(&q);
    return s ? hpcti_error(f->ctx, s, "%s", err.msg) : HPCT_SUCCESS;
}
