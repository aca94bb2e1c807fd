/* test_ckpt_crafted.c: checkpoints whose attributes have the wrong rank, size or class,
 * crafted with the HDF5 C API from a real checkpoint: an array crc32c on a dataset, an
 * array, 8-byte or string schema_version, an array or variable-length library_version.
 * hpct_ckpt_load_latest must skip such a file as corrupt (naming file and attribute) and
 * resume from the previous one; hpct_ckpt_file_open must fail or flag it. Before the
 * class/size/rank checks these overflowed fixed-size buffers (stack smashing, crashes).
 * And parameters that read another file's bytes (soft and external links, external raw
 * storage): refused, where they used to load step 10's weights as step 20's. (The crafted
 * values, types and shapes of every dataset are in t/test_ckpt_agree.c.) */
#include "config.h"
#include "lib/ckpt_craft.h"
#include "lib/ckpt_util.h"

#include <hdf5.h>
#include <math.h>
#include <sys/stat.h>

#define BIG 4096 /* elements of a crafted array attribute: far beyond any fixed buffer */

static const size_t counts[] = {50, 20};

/* One checkpoint per step listed, in dir; the path of the last into out. */
static void save_steps(state_t *st, const char *dir, char *out, size_t n)
{
    hpct_ckpt_t ck = st_open_ck(st, dir, 0);
    for (long step = 10; step <= 20; step += 10) {
        st_fill(st, (unsigned)step, 1);
        hpct_ckpt_meta_t m = HPCT_CKPT_META_INITIALIZER;
        m.step = step;
        m.model = "crafted";
        hpct_optimizer_set_step(st->opt, step); /* a load refuses optimizer/step != meta/step */
        if (hpct_ckpt_save(ck, st->params, st->opt, &m))
            tap_bail("save: %s", hpct_last_error(st->ctx));
    }
    const char *p;
    hpct_ckpt_last_path(ck, &p);
    snprintf(out, n, "%s", p);
    hpct_ckpt_close(ck);
}

/* Replace attribute name of object obj in file by one of type t with dims[rank] elements
 * (rank 0: scalar), every byte of the value 0x41. Returns 0 on success. */
static int craft_attr(const char *file, const char *obj, const char *name, hid_t t, int rank,
                      hsize_t n)
{
    hid_t fid = H5Fopen(file, H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t o = fid < 0 ? -1 : H5Oopen(fid, obj, H5P_DEFAULT);
    if (o < 0 || H5Adelete(o, name) < 0) return -1;
    hsize_t dims[1] = {n};
    hid_t space = rank ? H5Screate_simple(1, dims, NULL) : H5Screate(H5S_SCALAR);
    size_t bytes = (size_t)n * (H5Tis_variable_str(t) > 0 ? sizeof(char *) : H5Tget_size(t));
    char *v = malloc(bytes + 1);
    memset(v, 0x41, bytes);
    const char *vs = v;
    v[bytes] = '\0';
    hid_t a = H5Acreate2(o, name, t, space, H5P_DEFAULT, H5P_DEFAULT);
    int rc = a < 0 || H5Awrite(a, t, H5Tis_variable_str(t) > 0 ? (const void *)&vs : v) < 0;
    if (a >= 0) H5Aclose(a);
    free(v);
    H5Sclose(space);
    H5Oclose(o);
    return H5Fclose(fid) < 0 || rc ? -1 : 0;
}

static hid_t string_type(size_t size)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, size);
    return t;
}

/* Resume in dir whose newest file was crafted: skipped as corrupt, the reason naming file
 * and attribute, the state of step 10 loaded. */
static void expect_skipped(state_t *st, const char *dir, const char *file, const char *attr,
                           const char *what)
{
    hpct_ckpt_t ck = st_open_ck(st, dir, 0);
    st_scramble(st);
    hpct_ckpt_meta_t m = HPCT_CKPT_META_INITIALIZER;
    hpct_status_t s = hpct_ckpt_load_latest(ck, st->params, st->opt, &m);
    char e[1100];
    const char *why = NULL;
    snprintf(e, sizeof e, "%s", hpct_last_error(st->ctx)); /* the next call clears it */
    hpct_ckpt_rejected(ck, &why);
    /* set aside as FILE.rejected (never overwritten or deleted); put back for the inspector */
    char moved[4400];
    snprintf(moved, sizeof moved, "%s.rejected", file);
    int aside = access(file, F_OK) != 0 && rename(moved, file) == 0;
    tap_ok(s == HPCT_SUCCESS && m.rejected == 1 && m.step == 10 && strstr(e, file) &&
               strstr(e, attr) && why && strcmp(why, e) == 0 && aside,
           "%s: load skips the file as corrupt, naming file and %s (also in hpct_ckpt_rejected), "
           "moves it aside to .rejected, resumes at step 10 (%s)",
           what, attr, e);
    hpct_ckpt_close(ck);
}

/* Inspection of the crafted file: fails naming the file, or flags the dataset. */
static void expect_inspect_flags(state_t *st, const char *file, const char *dataset,
                                 const char *attr, const char *what)
{
    hpct_ckpt_file_t f = NULL;
    hpct_status_t s = hpct_ckpt_file_open(st->ctx, file, &f);
    int flagged = 0;
    const char *e = hpct_last_error(st->ctx);
    if (s)
        flagged = !f && strstr(e, file) && strstr(e, attr);
    else if (dataset) {
        int i = -1;
        flagged = !hpct_ckpt_file_find(f, dataset, &i) && hpct_ckpt_file_verify(f, i) != 0 &&
                  strstr(hpct_last_error(st->ctx), attr) && strstr(hpct_last_error(st->ctx), file);
        e = hpct_last_error(st->ctx);
    } else {
        const char *lib = NULL;
        hpct_ckpt_file_versions(f, NULL, &lib);
        flagged = lib && strchr(lib, 'A') == NULL; /* never the crafted bytes */
        e = lib ? lib : "(null)";
    }
    tap_ok(flagged, "%s: hpct_ckpt_file_open fails or flags it (%s: %s)", what,
           s ? "failed" : "opened", e);
    hpct_ckpt_file_close(f);
}

/* One case: a fresh directory with checkpoints of steps 10 and 20, step 20 crafted. */
static void one_case(state_t *st, const char *base, const char *tag, const char *obj,
                     const char *attr, hid_t t, int rank, hsize_t n, int load_skips,
                     const char *flag_dataset)
{
    char dir[4200], file[4300];
    snprintf(dir, sizeof dir, "%s/%s", base, tag);
    if (mkdir(dir, 0700)) tap_bail("mkdir %s", dir);
    save_steps(st, dir, file, sizeof file);
    int crafted = craft_attr(file, obj, attr, t, rank, n) == 0;
    tap_ok(crafted, "%s: attribute %s of %s replaced in %s", tag, attr, obj, file);
    if (load_skips) expect_skipped(st, dir, file, attr, tag);
    expect_inspect_flags(st, file, flag_dataset, attr, tag);
}

/* The serial stored in meta/serial of file; -1 when it cannot be read. */
static long long file_serial(state_t *st, const char *file)
{
    hpct_ckpt_file_t f;
    int64_t v = -1;
    if (hpct_ckpt_file_open(st->ctx, file, &f)) return -1;
    if (hpct_ckpt_file_read(f, "meta/serial", HPCT_CKPT_I64, &v, 1)) v = -1;
    hpct_ckpt_file_close(f);
    return v;
}

/* A latest pointer whose serial is at or past LONG_MAX: the next save must not overflow
 * (it counted on from there); the pointer is ignored and the files are counted instead,
 * so after the two checkpoints of save_steps the next one is serial 3. */
static void latest_case(state_t *st, const char *base, const char *tag, const char *serial)
{
    char dir[4200], file[4300], latest[4300];
    snprintf(dir, sizeof dir, "%s/%s", base, tag);
    if (mkdir(dir, 0700)) tap_bail("mkdir %s", dir);
    save_steps(st, dir, file, sizeof file);
    snprintf(latest, sizeof latest, "%s/latest", dir);
    FILE *l = fopen(latest, "w");
    if (!l) tap_bail("cannot write %s", latest);
    fprintf(l, "ckpt-000000000020.h5\nserial %s\n", serial);
    fclose(l);
    hpct_ckpt_t ck = st_open_ck(st, dir, 0);
    hpct_ckpt_meta_t m = HPCT_CKPT_META_INITIALIZER;
    m.step = 30;
    hpct_optimizer_set_step(st->opt, 30);
    hpct_status_t s = hpct_ckpt_save(ck, st->params, st->opt, &m);
    const char *p = "";
    hpct_ckpt_last_path(ck, &p);
    long long got = s ? -1 : file_serial(st, p);
    tap_ok(s == HPCT_SUCCESS && got == 3, "latest with serial %s: the next save has serial %lld",
           serial, got);
    hpct_ckpt_close(ck);
}

/* A FIFO named like the newest checkpoint, then one named latest: resume skips the first
 * as not a regular file (naming it) and saves past the second; alarm() turns the old hang
 * into a failure (SIGALRM ends the test). */
static void fifo_case(state_t *st, const char *base)
{
    char dir[4200], file[4300], fifo[4300];
    snprintf(dir, sizeof dir, "%s/fifo", base);
    if (mkdir(dir, 0700)) tap_bail("mkdir %s", dir);
    save_steps(st, dir, file, sizeof file);
    snprintf(fifo, sizeof fifo, "%s/ckpt-000000000099.h5", dir);
    if (mkfifo(fifo, 0600)) tap_bail("mkfifo %s", fifo);
    alarm(60);
    hpct_ckpt_t ck = st_open_ck(st, dir, 0);
    hpct_ckpt_meta_t m = HPCT_CKPT_META_INITIALIZER;
    hpct_status_t s = hpct_ckpt_load_latest(ck, st->params, st->opt, &m);
    const char *e = hpct_last_error(st->ctx);
    tap_ok(s == HPCT_SUCCESS && m.rejected == 1 && m.step == 20 && strstr(e, fifo) &&
               strstr(e, "not a regular file"),
           "a FIFO named %s: resume skips it, naming it, and loads step 20 (%s)", fifo, e);
    unlink(fifo);
    snprintf(fifo, sizeof fifo, "%s/latest", dir);
    unlink(fifo);
    if (mkfifo(fifo, 0600)) tap_bail("mkfifo %s", fifo);
    m.step = 30;
    hpct_optimizer_set_step(st->opt, 30);
    s = hpct_ckpt_save(ck, st->params, st->opt, &m);
    struct stat sb;
    tap_ok(s == HPCT_SUCCESS && stat(fifo, &sb) == 0 && S_ISREG(sb.st_mode),
           "a FIFO named latest: the save does not block and replaces it with a pointer file");
    alarm(0);
    hpct_ckpt_close(ck);
}

/* Make params/dense0.weight of file (step 20) read the bytes of the same dataset in older
 * (step 10), with its valid crc32c: through a soft link to a copy inside file ("soft"), an
 * external link into older ("external"), or a dataset whose raw data is stored in a file
 * beside it ("extstore"). Returns 0 on success. */
static int craft_link(const char *file, const char *older, const char *mode)
{
    const char *w = "params/dense0.weight";
    hid_t fid = H5Fopen(file, H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t old = H5Fopen(older, H5F_ACC_RDONLY, H5P_DEFAULT);
    int rc = fid < 0 || old < 0 || H5Ldelete(fid, w, H5P_DEFAULT) < 0;
    if (!rc && !strcmp(mode, "soft"))
        rc = H5Ocopy(old, w, fid, "shadow", H5P_DEFAULT, H5P_DEFAULT) < 0 ||
             H5Lcreate_soft("/shadow", fid, w, H5P_DEFAULT, H5P_DEFAULT) < 0;
    else if (!rc && !strcmp(mode, "external"))
        rc = H5Lcreate_external(older, w, fid, w, H5P_DEFAULT, H5P_DEFAULT) < 0;
    else if (!rc) {
        char raw[4400];
        snprintf(raw, sizeof raw, "%s.raw", file);
        float v[50];
        uint32_t crc = 0;
        hid_t src = H5Dopen2(old, w, H5P_DEFAULT), a = H5Aopen(src, "crc32c", H5P_DEFAULT);
        rc = H5Dread(src, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0 ||
             H5Aread(a, H5T_NATIVE_UINT32, &crc) < 0;
        H5Aclose(a), H5Dclose(src);
        hsize_t n = 50;
        hid_t space = H5Screate_simple(1, &n, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
        H5Pset_external(dcpl, raw, 0, sizeof v);
        hid_t d = H5Dcreate2(fid, w, H5T_IEEE_F32LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        hid_t cs = H5Screate(H5S_SCALAR);
        a = d < 0 ? -1 : H5Acreate2(d, "crc32c", H5T_STD_U32LE, cs, H5P_DEFAULT, H5P_DEFAULT);
        rc = rc || a < 0 || H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0 ||
             H5Awrite(a, H5T_NATIVE_UINT32, &crc) < 0;
        if (a >= 0) H5Aclose(a);
        if (d >= 0) H5Dclose(d);
        H5Sclose(cs), H5Sclose(space), H5Pclose(dcpl);
    }
    if (old >= 0) H5Fclose(old);
    return (fid >= 0 && H5Fclose(fid) < 0) || rc ? -1 : 0;
}

/* A checkpoint whose parameter reads another file's or object's bytes (with their valid
 * checksum): resume refuses it (before, it loaded step 10's weights as step 20's), and the
 * inspector flags it. */
static void link_case(state_t *st, const char *base, const char *mode)
{
    char dir[4200], file[4300], older[4300];
    snprintf(dir, sizeof dir, "%s/link-%s", base, mode);
    if (mkdir(dir, 0700)) tap_bail("mkdir %s", dir);
    save_steps(st, dir, file, sizeof file);
    snprintf(older, sizeof older, "%s/ckpt-000000000010.h5", dir);
    tap_ok(craft_link(file, older, mode) == 0, "link-%s: params/dense0.weight of %s crafted", mode,
           file);
    const char *what = strcmp(mode, "extstore") ? "link" : "external raw files";
    expect_skipped(st, dir, file, what, mode);
    expect_inspect_flags(st, file, "params/dense0.weight", what, mode);
}

/* A step-20 checkpoint whose dataset name holds v (checksum recomputed): resume skips it
 * naming file and dataset, and `hpctrain ckpt verify`'s calls (file_meta or the dataset's
 * verdict) refuse it too. */
static void value_case(state_t *st, const char *base, const char *tag, const char *name,
                       const void *v, size_t n)
{
    char dir[4200], file[4300];
    snprintf(dir, sizeof dir, "%s/value-%s", base, tag);
    if (mkdir(dir, 0700)) tap_bail("mkdir %s", dir);
    save_steps(st, dir, file, sizeof file);
    if (craft_value(file, name, v, n)) tap_bail("cannot craft %s in %s", name, file);
    expect_skipped(st, dir, file, name, tag);
    hpct_ckpt_file_t f = NULL;
    int refused = 0;
    if (!hpct_ckpt_file_open(st->ctx, file, &f)) {
        hpct_ckpt_meta_t m = HPCT_CKPT_META_INITIALIZER;
        int i = -1;
        refused = hpct_ckpt_file_meta(f, &m) != HPCT_SUCCESS ||
                  (!hpct_ckpt_file_find(f, name, &i) && hpct_ckpt_file_verify(f, i) != 0);
    }
    tap_ok(refused && strstr(hpct_last_error(st->ctx), name),
           "%s: the inspector refuses it as well (%s)", tag, hpct_last_error(st->ctx));
    hpct_ckpt_file_close(f);
}

/* Replace file by a small HDF5 file of its own (one dataset): in the oldest format HDF5
 * writes (superblock version 0, HDF5's default) when old, else in the 1.8 format; with a
 * schema_version attribute when tagged. */
static int craft_foreign(const char *file, int old, int tagged)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_libver_bounds(fapl, old ? H5F_LIBVER_EARLIEST : H5F_LIBVER_V18, H5F_LIBVER_LATEST);
    hid_t f = H5Fcreate(file, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    H5Pclose(fapl);
    if (f < 0) return -1;
    hsize_t n = 3;
    hid_t space = H5Screate_simple(1, &n, NULL), one = H5Screate(H5S_SCALAR);
    hid_t d = H5Dcreate2(f, "x", H5T_STD_I32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    const int32_t v[3] = {1, 2, 3}, schema = 1;
    herr_t rc = H5Dwrite(d, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
    if (tagged) {
        hid_t a = H5Acreate2(f, "schema_version", H5T_STD_I32LE, one, H5P_DEFAULT, H5P_DEFAULT);
        if (a < 0 || H5Awrite(a, H5T_NATIVE_INT32, &schema) < 0) rc = -1;
        if (a >= 0) H5Aclose(a);
    }
    H5Dclose(d), H5Sclose(space), H5Sclose(one);
    return H5Fclose(f) < 0 || rc < 0 ? -1 : 0;
}

/* Flip bit of byte at offset in file. */
static int flip_byte(const char *file, long offset, int bit)
{
    FILE *f = fopen(file, "r+b");
    if (!f) return -1;
    int c = fseek(f, offset, SEEK_SET) == 0 ? fgetc(f) : EOF;
    int rc = c == EOF || fseek(f, offset, SEEK_SET) || fputc(c ^ bit, f) == EOF ? -1 : 0;
    return fclose(f) || rc ? -1 : 0;
}

/* Step 20 made unreadable as HDF5 or replaced by a foreign HDF5 file: resume skips it with
 * a message that says which (issue 14: a flipped superblock byte was "not a libhpctrain
 * checkpoint"), and so does the inspector. */
static void damaged_case(state_t *st, const char *base, const char *tag, const char *says)
{
    char dir[4200], file[4300];
    snprintf(dir, sizeof dir, "%s/%s", base, tag);
    if (mkdir(dir, 0700)) tap_bail("mkdir %s", dir);
    save_steps(st, dir, file, sizeof file);
    int rc = !strcmp(tag, "signature")    ? flip_byte(file, 1, 0x20)
             : !strcmp(tag, "superblock") ? flip_byte(file, 9, 0x01)
             : !strcmp(tag, "old-format") ? craft_foreign(file, 1, 1)
                                          : craft_foreign(file, 0, 0);
    tap_ok(rc == 0, "%s: step 20 crafted (%s)", tag, file);
    expect_skipped(st, dir, file, says, tag);
    expect_inspect_flags(st, file, NULL, says, tag);
}

int main(void)
{
    tap_plan(35 + 2 * 9 + 3 * 4);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    char base[4096];
    make_tmpdir(base, sizeof base, "crafted");
    state_t st;
    st_create(&st, 2, counts, HPCT_OPT_ADAMW);
    hid_t s255 = string_type(255), s1k = string_type(1000), vstr = string_type(H5T_VARIABLE);
    hid_t s4 = string_type(4);
    const char *w = "params/dense0.weight";
    one_case(&st, base, "crc-array", w, "crc32c", H5T_STD_U32LE, 1, BIG, 1, w);
    one_case(&st, base, "crc-u64", w, "crc32c", H5T_STD_U64LE, 0, 1, 1, w);
    one_case(&st, base, "crc-string", w, "crc32c", s4, 0, 1, 1, w);
    one_case(&st, base, "schema-array", "/", "schema_version", H5T_STD_I32LE, 1, BIG, 1, NULL);
    one_case(&st, base, "schema-i64", "/", "schema_version", H5T_STD_I64LE, 0, 1, 1, NULL);
    one_case(&st, base, "libver-array", "/", "library_version", s255, 1, 64, 0, NULL);
    one_case(&st, base, "libver-long", "/", "library_version", s1k, 0, 1, 0, NULL);
    one_case(&st, base, "libver-vlen", "/", "library_version", vstr, 0, 1, 0, NULL);
    latest_case(&st, base, "latest-max", "9223372036854775807");
    latest_case(&st, base, "latest-huge", "99999999999999999999999");
    latest_case(&st, base, "latest-negative", "-5");
    fifo_case(&st, base);
    link_case(&st, base, "soft");
    link_case(&st, base, "external");
    link_case(&st, base, "extstore");
    int64_t minus5 = -5, huge = (int64_t)1 << 62, zero = 0, fifteen = 15;
    uint64_t rng0[HPCT_RNG_STATE_WORDS] = {0};
    float nan50[50];
    for (int k = 0; k < 50; k++) nan50[k] = k == 17 ? NAN : 0.5f;
    value_case(&st, base, "step-negative", "meta/step", &minus5, 8);
    value_case(&st, base, "step-not-name", "meta/step", &fifteen, 8);
    value_case(&st, base, "cursor-epoch-2^62", "meta/cursor_epoch", &huge, 8);
    value_case(&st, base, "world-negative", "meta/world_size", &minus5, 8);
    value_case(&st, base, "world-zero", "meta/world_size", &zero, 8);
    value_case(&st, base, "batch-negative", "meta/global_batch", &minus5, 8);
    value_case(&st, base, "rng-zero", "rng/state", rng0, sizeof rng0);
    value_case(&st, base, "optstep-negative", "optimizer/step", &minus5, 8);
    value_case(&st, base, "param-nan", "params/dense0.weight", nan50, sizeof nan50);
    damaged_case(&st, base, "signature", "is not a readable HDF5 file (damaged, or not HDF5");
    damaged_case(&st, base, "superblock", "is not a readable HDF5 file (damaged: HDF5 cannot open");
    damaged_case(&st, base, "foreign", "is a valid HDF5 file but not a libhpctrain checkpoint");
    damaged_case(&st, base, "old-format", "in the pre-1.8 format (superblock version 0");
    H5Tclose(s255), H5Tclose(s1k), H5Tclose(vstr), H5Tclose(s4);
    st_destroy(&st);
    remove_tree(base);
    return tap_done();
}
