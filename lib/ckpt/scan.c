/* scan.c: one pass over a checkpoint file (scan.h). Every link of the file is listed once
 * (H5Literate, objects opened by address); every dataset's element type, rank, size and
 * storage are checked before anything is allocated for it (a dataset that claims more bytes
 * than the whole file is refused unread); its bytes are read once, into the sink's buffer or
 * in bounded pieces, their CRC32C compared with its crc32c attribute and, where the format
 * wants finite values, checked for NaN and Inf. A damaged dataset is listed with its verdict,
 * never trusted. HDF5 runs under the process-wide lock with its error printing off; every
 * message names file and dataset. */
#include "scan.h"
#include "../core/h5safe.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_DEPTH   32         /* group nesting followed (guards against link cycles) */
#define STRING_MAX  65536      /* bytes of one fixed-length string element */
#define PIECE_BYTES (1u << 22) /* a dataset nobody keeps is read 4 MiB at a time */

/* ---- types ------------------------------------------------------------------------------ */

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

/* The native memory type to read d as (a string: its own file type); close it after. */
static hid_t mem_type(hid_t dset, const hpcti_ck_ds_t *d)
{
    if (d->dtype == HPCT_CKPT_STRING) return H5Dget_type(dset);
    return H5Tcopy(hpcti_ck_mem_type(d->dtype == HPCT_CKPT_U64 ? HPCTI_CK_U64 : (int)d->dtype));
}

static hpcti_read_t fail(hpcti_ckerr_t *err, hpct_status_t s, const char *file, const char *what,
                         const char *name)
{
    char h5[400];
    hpcti_ckerr_set(err, s, "checkpoint %s: %s %s: %s", file, what, name, hpcti_h5_detail(h5));
    return HPCTI_READ_CORRUPT;
}

/* ---- one dataset: checks before reading ------------------------------------------------- */

/* Shape and type of an open dataset into d; 0, or -1 when its header is unreadable. */
static int describe(hid_t dset, hpcti_ck_ds_t *d)
{
    hid_t space = H5Dget_space(dset), type = H5Dget_type(dset);
    hssize_t n = space < 0 ? -1 : H5Sget_simple_extent_npoints(space);
    int rank = space < 0 ? -1 : H5Sget_simple_extent_ndims(space);
    d->dtype = type >= 0 ? classify(type, &d->elsize) : HPCT_CKPT_OTHER;
    if (space >= 0) H5Sclose(space);
    if (type >= 0) H5Tclose(type);
    if (n < 0 || rank < 0 || type < 0) return -1;
    d->count = (size_t)n;
    d->rank = rank;
    H5T_class_t cls = d->dtype == HPCT_CKPT_STRING                             ? H5T_STRING
                      : d->dtype == HPCT_CKPT_F32 || d->dtype == HPCT_CKPT_F64 ? H5T_FLOAT
                                                                               : H5T_INTEGER;
    d->h5 = (hpcti_h5_want_t){cls, d->elsize, 0, rank, (long long)n};
    if (d->dtype == HPCT_CKPT_STRING) { /* a fixed-length string: count its bytes */
        d->count *= d->elsize;
        d->elsize = 1;
    }
    return 0;
}

/* Bytes of d's data: its elements times their size; 0 with *over set when that overflows. */
static size_t data_bytes(const hpcti_ck_ds_t *d, int *over)
{
    size_t bytes = d->count * d->elsize;
    *over = d->count && bytes / d->count != d->elsize;
    return *over ? 0 : bytes;
}

/* Where d's bytes are: in this file, contiguous or compact, all of them within its size. */
static hpcti_read_t check_storage(hid_t dset, const hpcti_ck_scan_t *s, const hpcti_ck_ds_t *d,
                                  size_t bytes, hpcti_ckerr_t *err)
{
    const char *foreign = hpcti_h5_foreign_storage(dset);
    hid_t dcpl = foreign ? -1 : H5Dget_create_plist(dset);
    H5D_layout_t layout = dcpl < 0 ? H5D_LAYOUT_ERROR : H5Pget_layout(dcpl);
    if (dcpl >= 0) H5Pclose(dcpl);
    haddr_t at = layout == H5D_CONTIGUOUS ? H5Dget_offset(dset) : HADDR_UNDEF;
    hsize_t stored = foreign ? 0 : H5Dget_storage_size(dset);
    H5Eclear2(H5E_DEFAULT);
    if (foreign)
        hpcti_ckerr_set(err, HPCT_ERR_CHECKSUM, "checkpoint %s: dataset %s is %s: refused", s->path,
                        d->name, foreign);
    else if (layout != H5D_CONTIGUOUS && layout != H5D_COMPACT)
        hpcti_ckerr_set(err, HPCT_ERR_CHECKSUM,
                        "checkpoint %s: dataset %s is not stored contiguous (chunked or "
                        "filtered; the format has none): refused",
                        s->path, d->name);
    else if (stored != bytes || (layout == H5D_CONTIGUOUS && bytes &&
                                 (at == HADDR_UNDEF || at + bytes > (haddr_t)s->file_bytes)))
        hpcti_ckerr_set(err, HPCT_ERR_CHECKSUM,
                        "checkpoint %s: dataset %s stores %llu bytes for its %zu bytes of data, "
                        "not all within the file (%lld bytes): truncated or corrupt",
                        s->path, d->name, (unsigned long long)stored, bytes, s->file_bytes);
    else
        return HPCTI_READ_OK;
    return HPCTI_READ_CORRUPT;
}

/* Everything that must hold before d is read: a type the library writes, rank 0 or 1,
 * strings of bounded size, and no more bytes than the file has (a dataset claiming 2^40
 * elements is refused here, before any allocation). */
static hpcti_read_t check_before_read(hid_t dset, const hpcti_ck_scan_t *s, const hpcti_ck_ds_t *d,
                                      hpcti_ckerr_t *err)
{
    int over;
    size_t bytes = data_bytes(d, &over);
    if (d->dtype == HPCT_CKPT_OTHER)
        hpcti_ckerr_set(err, HPCT_ERR_FORMAT,
                        "checkpoint %s: dataset %s has an element type this library does not "
                        "write (%zu bytes per element; compound, variable-length or other)",
                        s->path, d->name, d->elsize);
    else if (d->rank > 1)
        hpcti_ckerr_set(err, HPCT_ERR_FORMAT,
                        "checkpoint %s: dataset %s has rank %d; the format has scalars and "
                        "one-dimensional datasets only",
                        s->path, d->name, d->rank);
    else if (d->dtype == HPCT_CKPT_STRING && d->h5.size > STRING_MAX)
        hpcti_ckerr_set(err, HPCT_ERR_FORMAT,
                        "checkpoint %s: dataset %s holds strings of %zu bytes, more than %d",
                        s->path, d->name, d->h5.size, STRING_MAX);
    else if (over || (long long)bytes > s->file_bytes)
        hpcti_ckerr_set(err, HPCT_ERR_CHECKSUM,
                        "checkpoint %s: dataset %s claims %zu elements of %zu bytes, more than "
                        "the whole file (%lld bytes): truncated or corrupt",
                        s->path, d->name, d->count, d->elsize, s->file_bytes);
    else
        return check_storage(dset, s, d, bytes, err);
    return HPCTI_READ_CORRUPT;
}

/* ---- one dataset: reading and verifying ---------------------------------------------------- */

/* HDF5 elements [first, first + n) of d (rank 1; rank 0: the one element) into buf. */
static herr_t read_part(hid_t dset, hid_t mtype, const hpcti_ck_ds_t *d, size_t first, size_t n,
                        void *buf)
{
    if (first == 0 && n == (size_t)d->h5.count)
        return H5Dread(dset, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
    hid_t fspace = H5Dget_space(dset);
    hsize_t start = first, cnt = n;
    hid_t mspace = H5Screate_simple(1, &cnt, NULL);
    herr_t rc = fspace < 0 || mspace < 0 ||
                        H5Sselect_hyperslab(fspace, H5S_SELECT_SET, &start, NULL, &cnt, NULL) < 0
                    ? -1
                    : H5Dread(dset, mtype, mspace, fspace, H5P_DEFAULT, buf);
    if (mspace >= 0) H5Sclose(mspace);
    if (fspace >= 0) H5Sclose(fspace);
    return rc;
}

/* What reading d gave: the CRC32C of its bytes, its first NaN or Inf where the format wants
 * finite values (-1: none), and its whole bytes when they fitted in one piece. */
typedef struct read_result {
    uint32_t crc;
    long long bad_at;
    void *whole; /* malloc'ed by read_bytes, or NULL */
} read_result_t;

/* Read d whole into into (the sink's buffer) or, into NULL, in pieces of at most
 * PIECE_BYTES through a buffer of its own. */
static hpcti_read_t read_bytes(hid_t dset, const hpcti_ck_scan_t *s, const hpcti_ck_ds_t *d,
                               void *into, read_result_t *out, hpcti_ckerr_t *err)
{
    size_t n = (size_t)d->h5.count, el = d->h5.size; /* HDF5 elements and their bytes */
    size_t per = into || n * el <= PIECE_BYTES ? n : PIECE_BYTES / el;
    int finite = hpcti_ck_must_be_finite(d->name, d->dtype);
    void *buf = into ? into : malloc(per && el ? per * el : 1);
    hid_t mtype = mem_type(dset, d);
    hpcti_read_t r = HPCTI_READ_OK;
    out->crc = 0, out->bad_at = -1, out->whole = NULL;
    if (!buf || mtype < 0)
        r = buf ? fail(err, HPCT_ERR_CHECKSUM, s->path, "cannot read the type of dataset", d->name)
                : (hpcti_ckerr_set(err, HPCT_ERR_NO_MEMORY,
                                   "checkpoint %s: cannot allocate %zu bytes for dataset %s",
                                   s->path, per * el, d->name),
                   HPCTI_READ_CORRUPT);
    for (size_t first = 0; r == HPCTI_READ_OK && first < n; first += per) {
        size_t m = n - first < per ? n - first : per;
        if (read_part(dset, mtype, d, first, m, buf) < 0) {
            r = fail(err, HPCT_ERR_CHECKSUM, s->path, "cannot read dataset", d->name);
            break;
        }
        out->crc = hpct_crc32c(out->crc, buf, m * el);
        long long k = finite ? hpcti_ck_first_nonfinite(buf, d->dtype, m) : -1;
        if (k >= 0 && out->bad_at < 0) out->bad_at = (long long)first + k;
    }
    if (mtype >= 0) H5Tclose(mtype);
    if (!into && r == HPCTI_READ_OK && per >= n)
        out->whole = buf;
    else if (!into)
        free(buf);
    return r;
}

/* The scalars and small arrays the validator reads: meta/, rng/, optimizer/step, /slots. */
static int kept_name(const char *name)
{
    return !strncmp(name, "meta/", 5) || !strncmp(name, "rng/", 4) ||
           !strcmp(name, "optimizer/step") || !strcmp(name, "optimizer/slots");
}

/* Read d (checked before) once, verify its checksum and finiteness, keep it when small. */
static hpcti_read_t verify(hid_t dset, hpcti_ck_scan_t *s, hpcti_ck_ds_t *d, hpcti_ckerr_t *err)
{
    void *into = s->sink ? s->sink(s->sink_arg, d) : NULL;
    read_result_t got;
    hpcti_read_t r = read_bytes(dset, s, d, into, &got, err);
    if (r == HPCTI_READ_OK) r = hpcti_ck_check_crc(dset, d->name, got.crc, s->path, err);
    if (r == HPCTI_READ_OK && got.bad_at >= 0) {
        hpcti_ckerr_set(err, HPCT_ERR_NONFINITE,
                        "checkpoint %s: dataset %s holds a NaN or Inf (element %lld): the run "
                        "that saved it had diverged",
                        s->path, d->name, got.bad_at);
        r = HPCTI_READ_CORRUPT;
    }
    d->sunk = into;
    size_t bytes = d->count * d->elsize;
    if (r == HPCTI_READ_OK && kept_name(d->name) && bytes <= HPCTI_CK_KEEP_BYTES) {
        if (into && (got.whole = malloc(bytes ? bytes : 1))) memcpy(got.whole, into, bytes);
        d->kept = got.whole, got.whole = NULL;
    }
    free(got.whole);
    return r;
}

/* ---- listing ------------------------------------------------------------------------------ */

static hpcti_ck_ds_t *add_dataset(hpcti_ck_scan_t *s, const char *name)
{
    if (s->num == s->cap) {
        int cap = s->cap ? 2 * s->cap : 64;
        hpcti_ck_ds_t *grown = realloc(s->ds, sizeof *grown * (size_t)cap);
        if (!grown) return NULL;
        s->ds = grown;
        s->cap = cap;
    }
    hpcti_ck_ds_t *d = &s->ds[s->num];
    memset(d, 0, sizeof *d);
    if (!(d->name = strdup(name))) return NULL;
    s->num++;
    return d;
}

static hpct_status_t set_detail(hpcti_ck_ds_t *d, const hpcti_ckerr_t *err)
{
    d->verdict = err->status;
    d->detail = strdup(err->msg);
    return d->detail ? HPCT_SUCCESS : HPCT_ERR_NO_MEMORY;
}

/* Describe, check and verify dataset `name` (open as dset). */
static hpct_status_t examine(hpcti_ck_scan_t *s, hid_t dset, const char *name)
{
    hpcti_ck_ds_t *d = add_dataset(s, name);
    if (!d) return HPCT_ERR_NO_MEMORY;
    hpcti_ckerr_t err = {0, ""};
    hpcti_read_t r = describe(dset, d) < 0 ? fail(&err, HPCT_ERR_CHECKSUM, s->path,
                                                  "cannot read the header of dataset", name)
                                           : check_before_read(dset, s, d, &err);
    if (r == HPCTI_READ_OK) r = verify(dset, s, d, &err);
    if (err.status == HPCT_ERR_NO_MEMORY) return HPCT_ERR_NO_MEMORY; /* not the file's fault */
    return r == HPCTI_READ_OK ? HPCT_SUCCESS : set_detail(d, &err);
}

/* Record an object that cannot be opened or listed as a damaged entry. */
static hpct_status_t damaged(hpcti_ck_scan_t *s, const char *name, const char *what)
{
    hpcti_ck_ds_t *d = add_dataset(s, name);
    if (!d) return HPCT_ERR_NO_MEMORY;
    d->dtype = HPCT_CKPT_OTHER;
    hpcti_ckerr_t err = {0, ""};
    fail(&err, HPCT_ERR_CHECKSUM, s->path, what, name);
    return set_detail(d, &err);
}

/* Record an object the library will not follow or read (why: "is a soft link ..."). */
static hpct_status_t refused(hpcti_ck_scan_t *s, const char *name, const char *why)
{
    hpcti_ck_ds_t *d = add_dataset(s, name);
    if (!d) return HPCT_ERR_NO_MEMORY;
    d->dtype = HPCT_CKPT_OTHER;
    hpcti_ckerr_t err = {0, ""};
    hpcti_ckerr_set(&err, HPCT_ERR_CHECKSUM, "checkpoint %s: %s %s: refused", s->path, name, why);
    return set_detail(d, &err);
}

static hpct_status_t walk(hpcti_ck_scan_t *s, hid_t group, const char *prefix, int depth);

/* State of one group's H5Literate (walk). */
typedef struct walk_state {
    hpcti_ck_scan_t *s;
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
    hpcti_ck_scan_t *s = w->s;
    char name[600];
    snprintf(name, sizeof name, "%s%s%s", w->prefix, *w->prefix ? "/" : "", link);
    if (strlen(link) >= 256) {
        w->status = damaged(s, name, "link name longer than 255 bytes");
        return w->status ? -1 : 0;
    }
    if (info->type != H5L_TYPE_HARD) {
        w->status =
            refused(s, name, "is a soft or external link (a checkpoint holds its data itself)");
        return w->status ? -1 : 0;
    }
    hid_t obj = H5Oopen_by_addr(group, info->u.address);
    if (obj < 0) {
        w->status = damaged(s, name, "cannot open object");
        return w->status ? -1 : 0;
    }
    H5I_type_t kind = H5Iget_type(obj);
    if (kind == H5I_GROUP)
        w->status = w->depth < MAX_DEPTH
                        ? walk(s, obj, name, w->depth + 1)
                        : damaged(s, name, "groups nested too deep (a link cycle?) at");
    else if (kind == H5I_DATASET)
        w->status = examine(s, obj, name);
    H5Oclose(obj);
    return w->status || s->num >= HPCTI_CK_MAX_DATASETS ? 1 : 0;
}

/* Every link of group once, in name order (one pass: HDF5 sorts a compact group's links
 * once per iteration, where a lookup by index sorted them again for every link). */
static hpct_status_t walk(hpcti_ck_scan_t *s, hid_t group, const char *prefix, int depth)
{
    walk_state_t w = {s, prefix, depth, HPCT_SUCCESS};
    hsize_t next = 0;
    herr_t rc = H5Literate(group, H5_INDEX_NAME, H5_ITER_INC, &next, visit, &w);
    if (w.status) return w.status;
    if (rc < 0) return damaged(s, *prefix ? prefix : "/", "cannot list group");
    return HPCT_SUCCESS;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const hpcti_ck_ds_t *)a)->name, ((const hpcti_ck_ds_t *)b)->name);
}

/* ---- the file ------------------------------------------------------------------------------ */

/* The root attribute library_version (a scalar fixed-length string); "" when it is missing
 * or anything else (informational: the file stays readable). */
static void read_library_version(hpcti_ck_scan_t *s, hid_t fid)
{
    char buf[256] = "";
    const hpcti_h5_want_t want = {H5T_STRING, sizeof buf - 1, 1, 0, 1};
    hid_t mtype = H5Tcopy(H5T_C_S1); /* NUL-padded to the whole buffer but its last byte */
    H5Tset_size(mtype, sizeof buf - 1);
    hpcti_ckerr_t err = {0, ""};
    if (hpcti_ck_read_attr(fid, "/", "library_version", &want, mtype, buf, s->path, &err))
        buf[0] = '\0';
    buf[sizeof buf - 1] = '\0';
    snprintf(s->library, sizeof s->library, "%s", buf);
    H5Tclose(mtype);
}

/* Everything that needs HDF5: signature, open, schema, listing. */
static hpct_status_t open_h5(hpcti_ck_scan_t *s, hpcti_ckerr_t *err)
{
    hid_t fid;
    if (hpcti_ck_h5_open(s->path, &fid, err)) return err->status;
    hpct_status_t st = HPCT_SUCCESS;
    if (hpcti_ck_read_schema(fid, s->path, &s->schema, err)) st = err->status;
    if (!st) read_library_version(s, fid);
    if (!st && (st = walk(s, fid, "", 0)))
        hpcti_ckerr_set(err, st, "checkpoint %s: out of memory listing its datasets", s->path);
    H5Fclose(fid);
    if (!st && s->num > 1) qsort(s->ds, (size_t)s->num, sizeof *s->ds, by_name);
    return st;
}

/* The path names a readable regular file (a FIFO must not block); its size into s. */
static hpct_status_t check_file(hpcti_ck_scan_t *s, hpcti_ckerr_t *err)
{
    struct stat st;
    int fd = open(s->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return hpcti_ckerr_set(err, errno == ENOENT ? HPCT_ERR_NOT_FOUND : HPCT_ERR_IO,
                               "cannot open checkpoint %s: %s", s->path, strerror(errno));
    int rc = fstat(fd, &st);
    close(fd);
    if (rc < 0 || !S_ISREG(st.st_mode))
        return hpcti_ckerr_set(err, HPCT_ERR_IO, "checkpoint %s is not a regular file", s->path);
    s->file_bytes = (long long)st.st_size;
    return HPCT_SUCCESS;
}

hpct_status_t hpcti_ck_scan(hpcti_ck_scan_t *s, hpcti_ckerr_t *err)
{
    s->schema = -1;
    s->library[0] = '\0';
    s->ds = NULL;
    s->num = s->cap = 0;
    hpct_status_t st = check_file(s, err);
    if (st) return st;
    hpcti_h5_quiet_t q;
    hpcti_ck_h5_enter(&q);
    st = open_h5(s, err);
    hpcti_ck_h5_leave(&q);
    return st;
}

void hpcti_ck_scan_free(hpcti_ck_scan_t *s)
{
    for (int i = 0; i < s->num; i++) {
        free(s->ds[i].name);
        free(s->ds[i].detail);
        free(s->ds[i].kept);
    }
    free(s->ds);
    s->ds = NULL;
    s->num = s->cap = 0;
}

const hpcti_ck_ds_t *hpcti_ck_scan_find(const hpcti_ck_scan_t *s, const char *name)
{
    while (name && *name == '/') name++;
    if (!name || s->num == 0) return NULL;
    const hpcti_ck_ds_t key = {.name = (char *)name};
    return bsearch(&key, s->ds, (size_t)s->num, sizeof *s->ds, by_name);
}

/* d read whole from the open dataset (checked before) into a new buffer *buf; verified. */
static hpcti_read_t reread_open(hid_t dset, const hpcti_ck_scan_t *s, const hpcti_ck_ds_t *d,
                                void **buf, hpcti_ckerr_t *err)
{
    /* The file may have changed since it was scanned: read only what still has the class,
     * size and shape the buffer is sized for. */
    hid_t ftype = H5Dget_type(dset), space = H5Dget_space(dset);
    char why[160];
    const char *bad = hpcti_ck_h5_check(ftype, space, &d->h5, why);
    if (ftype >= 0) H5Tclose(ftype);
    if (space >= 0) H5Sclose(space);
    if (bad) {
        hpcti_ckerr_set(err, HPCT_ERR_CHECKSUM,
                        "checkpoint %s: dataset %s %s (changed since it was opened?)", s->path,
                        d->name, bad);
        return HPCTI_READ_CORRUPT;
    }
    hpcti_read_t r = check_before_read(dset, s, d, err);
    size_t bytes = d->count * d->elsize;
    void *data = r == HPCTI_READ_OK ? malloc(bytes ? bytes : 1) : NULL;
    read_result_t got;
    if (r == HPCTI_READ_OK && !data)
        r = (hpcti_ckerr_set(err, HPCT_ERR_NO_MEMORY,
                             "checkpoint %s: cannot allocate %zu bytes for dataset %s", s->path,
                             bytes, d->name),
             HPCTI_READ_CORRUPT);
    else if (r == HPCTI_READ_OK && (r = read_bytes(dset, s, d, data, &got, err)) == HPCTI_READ_OK)
        *buf = data, data = NULL, r = hpcti_ck_check_crc(dset, d->name, got.crc, s->path, err);
    free(data);
    return r;
}

hpcti_read_t hpcti_ck_scan_reread(hid_t fid, const hpcti_ck_scan_t *s, const hpcti_ck_ds_t *d,
                                  void **buf, hpcti_ckerr_t *err)
{
    *buf = NULL;
    if (d->dtype == HPCT_CKPT_OTHER && d->verdict)
        return hpcti_ckerr_set(err, d->verdict, "%s", d->detail ? d->detail : "damaged"),
               HPCTI_READ_CORRUPT;
    hid_t dset = H5Dopen2(fid, d->name, H5P_DEFAULT);
    if (dset < 0) return fail(err, HPCT_ERR_CHECKSUM, s->path, "cannot open dataset", d->name);
    hpcti_read_t r = reread_open(dset, s, d, buf, err);
    H5Dclose(dset);
    return r;
}
