/* inspect.c: one checkpoint file read without a model or optimizer (hpct_ckpt_file_*):
 * versions, /meta, every dataset with its type, size and checksum verdict, and the values of
 * one dataset. Written for post-mortems: a damaged dataset is listed with its verdict, never
 * trusted and never allowed to crash the reader. HDF5 runs under the process-wide lock with
 * its error printing off (hpcti_ck_h5_enter/leave); every message names file and dataset. */
#include "h5io.h"
#include "../core/h5safe.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_DEPTH    32      /* group nesting followed (guards against link cycles) */
#define MAX_DATASETS 1000000 /* datasets listed */
#define KEEP_BYTES   4096    /* /meta datasets up to this size keep their bytes */

typedef struct ck_dataset {
    char *name; /* "params/dense0.weight" */
    hpct_ckpt_dtype_t dtype;
    size_t count, elsize; /* elements, bytes per element */
    int scalar;
    hpcti_h5_want_t h5;    /* class, element size, rank and count in the file when described */
    hpct_status_t verdict; /* HPCT_SUCCESS or why it cannot be trusted */
    char *detail;          /* message for a failed verdict */
    void *kept;            /* the bytes of a small /meta dataset that verified */
} ck_dataset_t;

struct hpct_ckpt_file {
    hpct_ctx_t ctx;
    char path[HPCTI_CKPT_PATH_MAX];
    long long file_bytes;
    int schema;
    char library[64];
    ck_dataset_t *ds;
    int num, cap;
};

/* ---- types ---------------------------------------------------------------------------- */

/* Public dtype of an HDF5 file type (fixed-length strings count bytes). */
static hpct_ckpt_dtype_t classify(hid_t type, size_t *elsize)
{
    H5T_class_t cls = H5Tget_class(type);
    size_t size = H5Tget_size(type);
    *elsize = size;
    if (cls == H5T_FLOAT && size == 4) return HPCT_CKPT_F32;
    if (cls == H5T_FLOAT && size == 8) return HPCT_CKPT_F64;
    if (cls == H5T_STRING && H5Tis_variable_str(type) == 0) return HPCT_CKPT_STRING;
    if (cls != H5T_INTEGER) return HPCT_CKPT_OTHER;
    int sign = H5Tget_sign(type) != H5T_SGN_NONE;
    if (sign && size == 4) return HPCT_CKPT_I32;
    if (sign && size == 8) return HPCT_CKPT_I64;
    if (!sign && size == 1) return HPCT_CKPT_U8;
    if (!sign && size == 8) return HPCT_CKPT_U64;
    return HPCT_CKPT_OTHER;
}

/* The internal item type of a public dtype (for the native memory type). */
static int item_type(hpct_ckpt_dtype_t d)
{
    return d == HPCT_CKPT_U64 ? HPCTI_CK_U64 : (int)d;
}

/* ---- one dataset's bytes ------------------------------------------------------------- */

static hpcti_read_t fail(hpcti_ckerr_t *err, hpct_status_t s, const char *file, const char *what,
                         const char *name)
{
    char h5[400];
    hpcti_ckerr_set(err, s, "checkpoint %s: %s %s: %s", file, what, name, hpcti_h5_detail(h5));
    return HPCTI_READ_CORRUPT;
}

/* Read dataset d (open as dset) raw bytes (native, i.e. little-endian, or the string itself)
 * into a new buffer *buf and check its crc32c. *buf is set whenever the bytes could be read. */
static hpcti_read_t load_open(hid_t dset, const struct hpct_ckpt_file *f, const ck_dataset_t *d,
                              void **buf, hpcti_ckerr_t *err)
{
    *buf = NULL;
    if (d->dtype == HPCT_CKPT_OTHER) {
        hpcti_ckerr_set(err, HPCT_ERR_FORMAT,
                        "checkpoint %s: dataset %s has an element type this library does not "
                        "write (%zu bytes per element)",
                        f->path, d->name, d->elsize);
        return HPCTI_READ_CORRUPT;
    }
    size_t bytes = d->count * d->elsize;
    if (d->count && (bytes / d->count != d->elsize || (long long)bytes > f->file_bytes)) {
        hpcti_ckerr_set(err, HPCT_ERR_CHECKSUM,
                        "checkpoint %s: dataset %s claims %zu elements of %zu bytes, more than "
                        "the whole file (%lld bytes): truncated or corrupt",
                        f->path, d->name, d->count, d->elsize, f->file_bytes);
        return HPCTI_READ_CORRUPT;
    }
    const char *foreign = hpcti_h5_foreign_storage(dset);
    if (foreign) {
        hpcti_ckerr_set(err, HPCT_ERR_CHECKSUM, "checkpoint %s: dataset %s is %s: refused", f->path,
                        d->name, foreign);
        return HPCTI_READ_CORRUPT;
    }
    hid_t type = d->dtype == HPCT_CKPT_STRING ? H5Dget_type(dset)
                                              : H5Tcopy(hpcti_ck_mem_type(item_type(d->dtype)));
    /* The file may have changed since it was described (hpct_ckpt_file_read opens it again):
     * read only what still has the class, size and shape the buffer was sized for. */
    hid_t ftype = H5Dget_type(dset), space = H5Dget_space(dset);
    char why[160];
    const char *bad = hpcti_ck_h5_check(ftype, space, &d->h5, why);
    if (ftype >= 0) H5Tclose(ftype);
    if (space >= 0) H5Sclose(space);
    void *data = bad ? NULL : malloc(bytes ? bytes : 1);
    hpcti_read_t r = HPCTI_READ_OK;
    if (bad) {
        hpcti_ckerr_set(err, HPCT_ERR_CHECKSUM,
                        "checkpoint %s: dataset %s %s (changed since it "
                        "was opened?)",
                        f->path, d->name, bad);
        r = HPCTI_READ_CORRUPT;
    } else if (!data) {
        hpcti_ckerr_set(err, HPCT_ERR_NO_MEMORY,
                        "checkpoint %s: cannot allocate %zu bytes for dataset %s", f->path, bytes,
                        d->name);
        r = HPCTI_READ_CORRUPT;
    } else if (type < 0 || H5Dread(dset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0)
        r = fail(err, HPCT_ERR_CHECKSUM, f->path, "cannot read dataset", d->name);
    else
        *buf = data;
    if (r == HPCTI_READ_OK) r = hpcti_ck_verify_crc(dset, d->name, data, bytes, f->path, err);
    if (!*buf) free(data);
    if (type >= 0) H5Tclose(type);
    return r;
}

/* load_open of dataset d, found by its name in fid (hpct_ckpt_file_read). */
static hpcti_read_t load_raw(hid_t fid, const struct hpct_ckpt_file *f, const ck_dataset_t *d,
                             void **buf, hpcti_ckerr_t *err)
{
    *buf = NULL;
    hid_t dset = H5Dopen2(fid, d->name, H5P_DEFAULT);
    if (dset < 0) return fail(err, HPCT_ERR_CHECKSUM, f->path, "cannot open dataset", d->name);
    hpcti_read_t r = load_open(dset, f, d, buf, err);
    H5Dclose(dset);
    return r;
}

/* ---- listing ------------------------------------------------------------------------ */

static ck_dataset_t *add_dataset(struct hpct_ckpt_file *f, const char *name)
{
    if (f->num == f->cap) {
        int cap = f->cap ? 2 * f->cap : 64;
        ck_dataset_t *grown = realloc(f->ds, sizeof *grown * (size_t)cap);
        if (!grown) return NULL;
        f->ds = grown;
        f->cap = cap;
    }
    ck_dataset_t *d = &f->ds[f->num];
    memset(d, 0, sizeof *d);
    if (!(d->name = strdup(name))) return NULL;
    f->num++;
    return d;
}

static hpct_status_t set_detail(ck_dataset_t *d, const hpcti_ckerr_t *err)
{
    d->verdict = err->status;
    d->detail = strdup(err->msg);
    return d->detail ? HPCT_SUCCESS : HPCT_ERR_NO_MEMORY;
}

/* Shape and type of an open dataset into d; 0, or -1 when its header is unreadable. */
static int describe(hid_t dset, ck_dataset_t *d)
{
    hid_t space = H5Dget_space(dset), type = H5Dget_type(dset);
    hssize_t n = space < 0 ? -1 : H5Sget_simple_extent_npoints(space);
    int rank = space < 0 ? -1 : H5Sget_simple_extent_ndims(space);
    d->dtype = type >= 0 ? classify(type, &d->elsize) : HPCT_CKPT_OTHER;
    if (space >= 0) H5Sclose(space);
    if (type >= 0) H5Tclose(type);
    if (n < 0 || rank < 0 || type < 0) return -1;
    d->count = (size_t)n;
    d->scalar = rank == 0;
    d->h5 =
        (hpcti_h5_want_t){d->dtype == HPCT_CKPT_STRING                             ? H5T_STRING
                          : d->dtype == HPCT_CKPT_F32 || d->dtype == HPCT_CKPT_F64 ? H5T_FLOAT
                                                                                   : H5T_INTEGER,
                          d->elsize, 0, rank, (long long)n};
    if (d->dtype == HPCT_CKPT_STRING) { /* a scalar fixed-length string: count its bytes */
        d->count *= d->elsize;
        d->elsize = 1;
    }
    return 0;
}

/* Describe and verify dataset `name` (open as dset); keep small /meta bytes. */
static hpct_status_t examine(struct hpct_ckpt_file *f, hid_t fid, hid_t dset, const char *name)
{
    ck_dataset_t *d = add_dataset(f, name);
    if (!d) return HPCT_ERR_NO_MEMORY;
    hpcti_ckerr_t err = {0, ""};
    if (describe(dset, d) < 0) {
        fail(&err, HPCT_ERR_CHECKSUM, f->path, "cannot read the header of dataset", name);
        return set_detail(d, &err);
    }
    void *buf;
    (void)fid;
    hpcti_read_t r = load_open(dset, f, d, &buf, &err);
    long long k = -1;
    if (r == HPCTI_READ_OK && hpcti_ck_must_be_finite(name, d->dtype) &&
        (k = hpcti_ck_first_nonfinite(buf, d->dtype, d->count)) >= 0) {
        hpcti_ckerr_set(&err, HPCT_ERR_NONFINITE,
                        "checkpoint %s: dataset %s holds a NaN or Inf (element %lld): the run "
                        "that saved it had diverged",
                        f->path, name, k);
        r = HPCTI_READ_CORRUPT;
    }
    int keep =
        !strncmp(name, "meta/", 5) || !strcmp(name, "rng/state") || !strcmp(name, "optimizer/step");
    if (r == HPCTI_READ_OK && keep && d->count * d->elsize <= KEEP_BYTES)
        d->kept = buf;
    else
        free(buf);
    return r == HPCTI_READ_OK ? HPCT_SUCCESS : set_detail(d, &err);
}

/* Record an object that cannot be opened or listed as a damaged entry. */
static hpct_status_t damaged(struct hpct_ckpt_file *f, const char *name, const char *what)
{
    ck_dataset_t *d = add_dataset(f, name);
    if (!d) return HPCT_ERR_NO_MEMORY;
    d->dtype = HPCT_CKPT_OTHER;
    hpcti_ckerr_t err = {0, ""};
    fail(&err, HPCT_ERR_CHECKSUM, f->path, what, name);
    return set_detail(d, &err);
}

/* Record an object the library will not follow or read (why: "is a soft link ..."). */
static hpct_status_t refused(struct hpct_ckpt_file *f, const char *name, const char *why)
{
    ck_dataset_t *d = add_dataset(f, name);
    if (!d) return HPCT_ERR_NO_MEMORY;
    d->dtype = HPCT_CKPT_OTHER;
    hpcti_ckerr_t err = {0, ""};
    hpcti_ckerr_set(&err, HPCT_ERR_CHECKSUM, "checkpoint %s: %s %s: refused", f->path, name, why);
    return set_detail(d, &err);
}

static hpct_status_t walk(struct hpct_ckpt_file *f, hid_t fid, hid_t group, const char *prefix,
                          int depth);

/* State of one group's H5Literate (walk). */
typedef struct walk_state {
    struct hpct_ckpt_file *f;
    hid_t fid;
    const char *prefix;
    int depth;
    hpct_status_t status;
} walk_state_t;

/* One link of a group (H5Literate's operator): recurse into a group, examine a dataset, skip
 * anything else. The object is opened by the address in the link, not looked up by name
 * again (a by-name lookup scans the group's compact link storage: quadratic in total). */
static herr_t visit(hid_t group, const char *link, const H5L_info_t *info, void *arg)
{
    walk_state_t *w = arg;
    struct hpct_ckpt_file *f = w->f;
    char name[600];
    snprintf(name, sizeof name, "%s%s%s", w->prefix, *w->prefix ? "/" : "", link);
    if (strlen(link) >= 256) {
        w->status = damaged(f, name, "link name longer than 255 bytes");
        return w->status ? -1 : 0;
    }
    if (info->type != H5L_TYPE_HARD) {
        w->status =
            refused(f, name, "is a soft or external link (a checkpoint holds its data itself)");
        return w->status ? -1 : 0;
    }
    hid_t obj = H5Oopen_by_addr(group, info->u.address);
    if (obj < 0) {
        w->status = damaged(f, name, "cannot open object");
        return w->status ? -1 : 0;
    }
    H5I_type_t kind = H5Iget_type(obj);
    if (kind == H5I_GROUP)
        w->status = w->depth < MAX_DEPTH
                        ? walk(f, w->fid, obj, name, w->depth + 1)
                        : damaged(f, name, "groups nested too deep (a link cycle?) at");
    else if (kind == H5I_DATASET)
        w->status = examine(f, w->fid, obj, name);
    H5Oclose(obj);
    return w->status || f->num >= MAX_DATASETS ? 1 : 0;
}

/* Every link of group once, in name order (one pass: HDF5 sorts a compact group's links
 * once per iteration, where a lookup by index sorted them again for every link). */
static hpct_status_t walk(struct hpct_ckpt_file *f, hid_t fid, hid_t group, const char *prefix,
                          int depth)
{
    walk_state_t w = {f, fid, prefix, depth, HPCT_SUCCESS};
    hsize_t next = 0;
    herr_t rc = H5Literate(group, H5_INDEX_NAME, H5_ITER_INC, &next, visit, &w);
    if (w.status) return w.status;
    if (rc < 0) return damaged(f, *prefix ? prefix : "/", "cannot list group");
    return HPCT_SUCCESS;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const ck_dataset_t *)a)->name, ((const ck_dataset_t *)b)->name);
}

/* ---- opening ---------------------------------------------------------------------------- */

/* The root attribute library_version (a scalar fixed-length string); "" when it is missing
 * or anything else (informational: the file stays readable). */
static void read_library_version(struct hpct_ckpt_file *f, hid_t fid)
{
    char buf[256] = "";
    const hpcti_h5_want_t want = {H5T_STRING, sizeof buf - 1, 1, 0, 1};
    hid_t mtype = H5Tcopy(H5T_C_S1); /* NUL-padded to the whole buffer but its last byte */
    H5Tset_size(mtype, sizeof buf - 1);
    hpcti_ckerr_t err = {0, ""};
    if (hpcti_ck_read_attr(fid, "/", "library_version", &want, mtype, buf, f->path, &err))
        buf[0] = '\0';
    buf[sizeof buf - 1] = '\0';
    snprintf(f->library, sizeof f->library, "%s", buf);
    H5Tclose(mtype);
}

/* Everything that needs HDF5 while opening: signature, open, schema, listing. */
static hpct_status_t open_h5(struct hpct_ckpt_file *f, hpcti_ckerr_t *err)
{
    hid_t fid;
    if (hpcti_ck_h5_open(f->path, &fid, err)) return err->status;
    hpct_status_t s = HPCT_SUCCESS;
    if (hpcti_ck_read_schema(fid, f->path, &f->schema, err)) s = err->status;
    if (!s) read_library_version(f, fid);
    if (!s && (s = walk(f, fid, fid, "", 0)))
        hpcti_ckerr_set(err, s, "checkpoint %s: out of memory listing its datasets", f->path);
    H5Fclose(fid);
    if (!s && f->num > 1) qsort(f->ds, (size_t)f->num, sizeof *f->ds, by_name);
    return s;
}

/* The path names a readable regular file; its size into f->file_bytes. */
static hpct_status_t check_file(hpct_ctx_t ctx, struct hpct_ckpt_file *f)
{
    struct stat st;
    int fd = open(f->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO must not block */
    if (fd < 0)
        return hpcti_error(ctx, errno == ENOENT ? HPCT_ERR_NOT_FOUND : HPCT_ERR_IO,
                           "cannot open checkpoint %s: %s", f->path, strerror(errno));
    int rc = fstat(fd, &st);
    close(fd);
    if (rc < 0 || !S_ISREG(st.st_mode))
        return hpcti_error(ctx, HPCT_ERR_IO, "checkpoint %s is not a regular file", f->path);
    f->file_bytes = (long long)st.st_size;
    return HPCT_SUCCESS;
}

void hpct_ckpt_file_close(hpct_ckpt_file_t f)
{
    if (!f) return;
    for (int i = 0; i < f->num; i++) {
        free(f->ds[i].name);
        free(f->ds[i].detail);
        free(f->ds[i].kept);
    }
    free(f->ds);
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
    f->schema = -1;
    snprintf(f->path, sizeof f->path, "%s", path);
    hpct_status_t s = check_file(ctx, f);
    if (s) {
        hpct_ckpt_file_close(f);
        return s;
    }
    hpcti_ckerr_t err = {0, ""};
    hpcti_h5_quiet_t q;
    hpcti_ck_h5_enter(&q);
    s = open_h5(f, &err);
    hpcti_ck_h5_leave(&q);
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
    if (schema) *schema = f->schema;
    if (library) *library = f->library;
    return HPCT_SUCCESS;
}

hpct_status_t hpct_ckpt_file_num_datasets(hpct_ckpt_file_t f, int *n)
{
    if (!f) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(f->ctx);
    if (!n)
        return hpcti_error(f->ctx, HPCT_ERR_INVALID_ARG, "hpct_ckpt_file_num_datasets: n is NULL");
    *n = f->num;
    return HPCT_SUCCESS;
}

static hpct_status_t check_index(hpct_ckpt_file_t f, int i, const char *fn)
{
    if (i >= 0 && i < f->num) return HPCT_SUCCESS;
    return hpcti_error(f->ctx, HPCT_ERR_INVALID_ARG,
                       "%s: dataset index %d of checkpoint %s is "
                       "outside [0, %d)",
                       fn, i, f->path, f->num);
}

hpct_status_t hpct_ckpt_file_dataset(hpct_ckpt_file_t f, int i, const char **name,
                                     hpct_ckpt_dtype_t *dtype, size_t *count, int *scalar)
{
    if (!f) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(f->ctx);
    hpct_status_t s = check_index(f, i, "hpct_ckpt_file_dataset");
    if (s) return s;
    const ck_dataset_t *d = &f->ds[i];
    if (name) *name = d->name;
    if (dtype) *dtype = d->dtype;
    if (count) *count = d->count;
    if (scalar) *scalar = d->scalar;
    return HPCT_SUCCESS;
}

/* Index of dataset name in f->ds (sorted by name when the file was opened), or -1. */
static int find(hpct_ckpt_file_t f, const char *name)
{
    while (name && *name == '/') name++;
    if (!name || f->num == 0) return -1;
    const ck_dataset_t key = {.name = (char *)name};
    const ck_dataset_t *hit = bsearch(&key, f->ds, (size_t)f->num, sizeof *f->ds, by_name);
    return hit ? (int)(hit - f->ds) : -1;
}

hpct_status_t hpct_ckpt_file_find(hpct_ckpt_file_t f, const char *name, int *index)
{
    if (!f) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(f->ctx);
    if (!index)
        return hpcti_error(f->ctx, HPCT_ERR_INVALID_ARG, "hpct_ckpt_file_find: index is NULL");
    *index = find(f, name);
    if (*index >= 0) return HPCT_SUCCESS;
    return hpcti_error(f->ctx, HPCT_ERR_NOT_FOUND, "checkpoint %s has no dataset %s", f->path,
                       name ? name : "(NULL)");
}

hpct_status_t hpct_ckpt_file_verify(hpct_ckpt_file_t f, int i)
{
    if (!f) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(f->ctx);
    hpct_status_t s = check_index(f, i, "hpct_ckpt_file_verify");
    if (s || !f->ds[i].verdict) return s;
    return hpcti_error(f->ctx, f->ds[i].verdict, "%s",
                       f->ds[i].detail ? f->ds[i].detail : "damaged dataset");
}

/* ---- metadata ---------------------------------------------------------------------- */

/* The verified bytes of /meta/<field> when it has the expected type and one element. */
static const void *meta_value(hpct_ckpt_file_t f, const char *field, hpct_ckpt_dtype_t dtype,
                              hpct_status_t *first, char *why, size_t why_size)
{
    char name[64];
    snprintf(name, sizeof name, "meta/%s", field);
    int i = find(f, name);
    const ck_dataset_t *d = i < 0 ? NULL : &f->ds[i];
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
            snprintf(why, why_size, "checkpoint %.900s: dataset %s %s", f->path, name, problem);
    }
    return NULL;
}

/* The checks resume makes on the values (validate.c), on what the file holds. */
static const char *values_problem(hpct_ckpt_file_t f, const hpct_ckpt_meta_t *m, char *why,
                                  size_t n)
{
    hpcti_ck_values_t v = {.step = m->step,
                           .epoch = m->epoch,
                           .cursor_epoch = m->cursor_epoch,
                           .cursor_step = m->cursor_step,
                           .world_size = m->world_size,
                           .global_batch = m->global_batch,
                           .saved_at = m->saved_at};
    int i = find(f, "meta/serial");
    if (i >= 0 && f->ds[i].kept && f->ds[i].dtype == HPCT_CKPT_I64 && f->ds[i].count == 1)
        memcpy(&v.serial, f->ds[i].kept, sizeof v.serial);
    i = find(f, "optimizer/step");
    v.has_opt_step =
        i >= 0 && f->ds[i].kept && f->ds[i].dtype == HPCT_CKPT_I64 && f->ds[i].count == 1;
    if (v.has_opt_step) memcpy(&v.opt_step, f->ds[i].kept, sizeof v.opt_step);
    i = find(f, "rng/state");
    v.has_rng = i >= 0 && f->ds[i].kept && f->ds[i].dtype == HPCT_CKPT_U64 &&
                f->ds[i].count == HPCT_RNG_STATE_WORDS;
    if (v.has_rng) memcpy(v.rng, f->ds[i].kept, sizeof v.rng);
    return hpcti_ck_values_problem(&v, f->path, why, n);
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
        memchr(p, '\0', f->ds[i].count))
        m.model = p;
    m.path = f->path;
    *meta = m;
    if (first) return hpcti_error(f->ctx, first, "%s", why);
    const char *bad = values_problem(f, &m, why, sizeof why);
    return bad ? hpcti_error(f->ctx, HPCT_ERR_FORMAT, "checkpoint %s: %s", f->path, bad)
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

static void convert(const void *raw, const ck_dataset_t *d, hpct_ckpt_dtype_t as, void *out)
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
static hpct_status_t read_values(hpct_ckpt_file_t f, const ck_dataset_t *d, hpct_ckpt_dtype_t as,
                                 void *out, hpcti_ckerr_t *err)
{
    char h5[400];
    hid_t fid = H5Fopen(f->path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (fid < 0)
        return hpcti_ckerr_set(err, HPCT_ERR_CHECKSUM,
                               "checkpoint %s cannot be opened as HDF5 (truncated or corrupt): %s",
                               f->path, hpcti_h5_detail(h5));
    void *raw;
    hpcti_read_t r = load_raw(fid, f, d, &raw, err);
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
        return hpcti_error(f->ctx, HPCT_ERR_NOT_FOUND, "checkpoint %s has no dataset %s", f->path,
                           name ? name : "(NULL)");
    const ck_dataset_t *d = &f->ds[i];
    if (!out || count != d->count)
        return hpcti_error(f->ctx, HPCT_ERR_INVALID_ARG,
                           "hpct_ckpt_file_read: dataset %s of checkpoint %s holds %zu elements, "
                           "asked for %zu%s",
                           d->name, f->path, d->count, count, out ? "" : " into NULL");
    int numeric = d->dtype != HPCT_CKPT_STRING && d->dtype != HPCT_CKPT_OTHER;
    if (as != d->dtype && !(numeric && (as == HPCT_CKPT_F64 || as == HPCT_CKPT_F32)))
        return hpcti_error(f->ctx, HPCT_ERR_INVALID_ARG,
                           "hpct_ckpt_file_read: dataset %s of checkpoint %s cannot be read as "
                           "dtype %d (only as itself, or F64/F32 when numeric)",
                           d->name, f->path, (int)as);
    hpcti_ckerr_t err = {0, ""};
    hpcti_h5_quiet_t q;
    hpcti_ck_h5_enter(&q);
    hpct_status_t s = read_values(f, d, as, out, &err);
    hpcti_ck_h5_leave(&q);
    return s ? hpcti_error(f->ctx, s, "%s", err.msg) : HPCT_SUCCESS;
}

/* ---- deprecated names (0.1) ---------------------------------------------------------- */

hpct_status_t hpct_ckpt_inspect(hpct_ctx_t ctx, const char *path, hpct_ckpt_file_t *out)
{
    return hpct_ckpt_file_open(ctx, path, out);
}

void hpct_ckpt_inspect_close(hpct_ckpt_file_t f)
{
    hpct_ckpt_file_close(f);
}
