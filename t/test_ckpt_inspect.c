/* test_ckpt_inspect.c: the inspection API on real checkpoint files: versions, metadata and
 * the dataset list of a saved training state (nested names, optimizer slots, extras), values
 * read raw and converted, a flipped byte found in the right dataset without failing the rest,
 * damaged /meta reported yet the rest filled, clear errors for missing, empty, garbage,
 * truncated and foreign HDF5 files, no crash on a sweep of damaged copies, and the listing
 * of a checkpoint directory (newest first, other files ignored, missing and empty
 * directories). */
#include "config.h"
#include "lib/ckpt_util.h"

#include <fcntl.h>
#include <hdf5.h>
#include <sys/stat.h>
#include <time.h>

static const size_t counts[] = {100, 37, 64, 5};

/* Save one checkpoint of step 30 with extras into dir; returns its path in out. */
static void save_one(state_t *st, const char *dir, char *out, size_t n)
{
    static double f64[3] = {1.5, -2.25, 1e300};
    static int32_t i32 = -7;
    static uint8_t u8[5] = {1, 2, 3, 250, 0};
    hpct_ckpt_config_t c = HPCT_CKPT_CONFIG_INITIALIZER;
    c.directory = dir;
    c.config_hash = 0xfeedface01020304ULL;
    hpct_ckpt_t ck;
    if (hpct_ckpt_open(st->ctx, &c, &ck)) tap_bail("open: %s", hpct_last_error(st->ctx));
    if (hpct_ckpt_add_array(ck, "f64", HPCT_CKPT_F64, f64, 3) ||
        hpct_ckpt_add_scalar(ck, "grp/i32", HPCT_CKPT_I32, &i32) ||
        hpct_ckpt_add_array(ck, "u8", HPCT_CKPT_U8, u8, 5))
        tap_bail("extras: %s", hpct_last_error(st->ctx));
    hpct_ckpt_meta_t m = HPCT_CKPT_META_INITIALIZER;
    m.step = 30;
    m.epoch = 3;
    m.cursor_epoch = 3;
    m.cursor_step = 4;
    m.world_size = 8;
    m.global_batch = 512;
    m.model = "inspect test model";
    hpct_optimizer_set_step(st->opt, 30); /* a load refuses optimizer/step != meta/step */
    if (hpct_ckpt_save(ck, st->params, st->opt, &m)) tap_bail("save: %s", hpct_last_error(st->ctx));
    const char *p;
    hpct_ckpt_last_path(ck, &p);
    snprintf(out, n, "%s", p);
    hpct_ckpt_close(ck);
}

static void copy_file(const char *from, const char *to, off_t max_bytes)
{
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    if (!in || !out) tap_bail("cannot copy %s to %s", from, to);
    char buf[4096];
    size_t got;
    off_t done = 0;
    while (done < max_bytes && (got = fread(buf, 1, sizeof buf, in)) > 0) {
        if ((off_t)got > max_bytes - done) got = (size_t)(max_bytes - done);
        fwrite(buf, 1, got, out);
        done += (off_t)got;
    }
    fclose(in);
    fclose(out);
}

static void xor_byte(const char *file, off_t at)
{
    int fd = open(file, O_RDWR);
    unsigned char b;
    if (fd < 0 || pread(fd, &b, 1, at) != 1) tap_bail("cannot read %s", file);
    b ^= 0x10;
    if (pwrite(fd, &b, 1, at) != 1) tap_bail("cannot write %s", file);
    close(fd);
}

/* Byte offset of the middle of dataset's data. */
static off_t data_offset(const char *file, const char *dataset)
{
    hid_t f = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t d = H5Dopen2(f, dataset, H5P_DEFAULT);
    off_t at = (off_t)(H5Dget_offset(d) + H5Dget_storage_size(d) / 2);
    H5Dclose(d);
    H5Fclose(f);
    return at;
}

static void test_listing(state_t *st, const char *path)
{
    hpct_ckpt_file_t f;
    tap_ok(hpct_ckpt_file_open(st->ctx, path, &f) == HPCT_SUCCESS, "inspect a fresh checkpoint");
    int schema, n, bad = 0;
    const char *lib;
    hpct_ckpt_file_versions(f, &schema, &lib);
    tap_ok(schema == 1 && !strcmp(lib, HPCT_VERSION_STRING), "schema 1, library %s", lib);
    hpct_ckpt_meta_t m = HPCT_CKPT_META_INITIALIZER;
    hpct_status_t s = hpct_ckpt_file_meta(f, &m);
    tap_ok(s == 0 && m.step == 30 && m.epoch == 3 && m.cursor_epoch == 3 && m.cursor_step == 4 &&
               m.world_size == 8 && m.global_batch == 512 &&
               m.config_hash == 0xfeedface01020304ULL && !strcmp(m.model, "inspect test model") &&
               m.saved_at > 1e9 && m.saved_at <= (double)time(NULL) + 1 && !strcmp(m.path, path),
           "metadata: step, epoch, cursor, world size, batch, hash, model, saved_at, path");
    hpct_ckpt_file_num_datasets(f, &n);
    /* 10 meta + rng + 2 optimizer scalars + 4 params + 2 slots x 4 + 3 extras */
    tap_is_int(n, 28, "28 datasets listed");
    const char *prev = "";
    int sorted = 1;
    for (int i = 0; i < n; i++) {
        const char *name;
        hpct_ckpt_file_dataset(f, i, &name, NULL, NULL, NULL);
        sorted &= strcmp(prev, name) < 0;
        prev = name;
        bad += hpct_ckpt_file_verify(f, i) != HPCT_SUCCESS;
    }
    tap_ok(sorted && bad == 0, "sorted by name, every checksum verifies");
    int i;
    hpct_ckpt_dtype_t t;
    size_t count;
    int scalar;
    s = hpct_ckpt_file_find(f, "/optimizer/slot1/layer1/w", &i);
    hpct_ckpt_file_dataset(f, i, NULL, &t, &count, &scalar);
    tap_ok(s == 0 && t == HPCT_CKPT_F32 && count == 37 && !scalar,
           "optimizer/slot1/layer1/w: float32 [37] (nested groups)");
    hpct_ckpt_file_find(f, "meta/config_hash", &i);
    hpct_ckpt_file_dataset(f, i, NULL, &t, &count, &scalar);
    tap_ok(t == HPCT_CKPT_U64 && count == 1 && scalar, "meta/config_hash: uint64 scalar");
    hpct_ckpt_file_find(f, "meta/model", &i);
    hpct_ckpt_file_dataset(f, i, NULL, &t, &count, &scalar);
    tap_ok(t == HPCT_CKPT_STRING && count == strlen("inspect test model") + 1,
           "meta/model: a string of its bytes with the NUL");
    tap_ok(hpct_ckpt_file_find(f, "params/nothing", &i) == HPCT_ERR_NOT_FOUND &&
               strstr(hpct_last_error(st->ctx), path),
           "an unknown dataset is HPCT_ERR_NOT_FOUND naming the file");

    float raw[64];
    double conv[64];
    s = hpct_ckpt_file_read(f, "params/dense2.weight", HPCT_CKPT_F32, raw, 64);
    int same = s == 0 && !memcmp(raw, st->p[2], sizeof raw);
    s = hpct_ckpt_file_read(f, "params/dense2.weight", HPCT_CKPT_F64, conv, 64);
    for (int k = 0; k < 64; k++) same &= conv[k] == (double)st->p[2][k];
    tap_ok(s == 0 && same, "params/dense2.weight reads back bit-identically, raw and as double");
    double v[5];
    int32_t i32;
    s = hpct_ckpt_file_read(f, "extra/grp/i32", HPCT_CKPT_I32, &i32, 1);
    s |= hpct_ckpt_file_read(f, "extra/u8", HPCT_CKPT_F64, v, 5);
    tap_ok(s == 0 && i32 == -7 && v[3] == 250.0, "extras: int32 scalar raw, uint8 as double");
    tap_ok(hpct_ckpt_file_read(f, "extra/f64", HPCT_CKPT_F64, v, 2) == HPCT_ERR_INVALID_ARG &&
               hpct_ckpt_file_read(f, "meta/model", HPCT_CKPT_F64, v, 19) == HPCT_ERR_INVALID_ARG,
           "a wrong count or a string as double is HPCT_ERR_INVALID_ARG");
    hpct_ckpt_file_close(f);
}

static void test_flipped(state_t *st, const char *good, const char *dir)
{
    char bad[4300];
    snprintf(bad, sizeof bad, "%s/flipped.h5", dir);
    copy_file(good, bad, (off_t)1 << 40);
    xor_byte(bad, data_offset(bad, "params/dense2.weight"));
    hpct_ckpt_file_t f;
    hpct_status_t s = hpct_ckpt_file_open(st->ctx, bad, &f);
    tap_ok(s == HPCT_SUCCESS, "a flipped data byte still inspects (post-mortem)");
    if (s) tap_bail("%s", hpct_last_error(st->ctx));
    int n, i, failing = 0;
    hpct_ckpt_file_num_datasets(f, &n);
    hpct_ckpt_file_find(f, "params/dense2.weight", &i);
    for (int k = 0; k < n; k++) failing += hpct_ckpt_file_verify(f, k) != HPCT_SUCCESS;
    s = hpct_ckpt_file_verify(f, i);
    const char *why = hpct_last_error(st->ctx);
    tap_ok(failing == 1 && s == HPCT_ERR_CHECKSUM && strstr(why, bad) &&
               strstr(why, "params/dense2.weight"),
           "only params/dense2.weight fails, HPCT_ERR_CHECKSUM naming file and dataset");
    tap_diag("%s", why);
    float vals[64];
    s = hpct_ckpt_file_read(f, "params/dense2.weight", HPCT_CKPT_F32, vals, 64);
    int ndiff = 0;
    for (int k = 0; k < 64; k++) ndiff += memcmp(&vals[k], &st->p[2][k], 4) != 0;
    tap_ok(s == HPCT_ERR_CHECKSUM && ndiff == 1, "read: HPCT_ERR_CHECKSUM, values still filled");
    hpct_ckpt_file_close(f);

    /* A damaged /meta/step: meta reports it, the other fields are still there. */
    copy_file(good, bad, (off_t)1 << 40);
    xor_byte(bad, data_offset(bad, "meta/step"));
    hpct_ckpt_file_open(st->ctx, bad, &f);
    hpct_ckpt_meta_t m = HPCT_CKPT_META_INITIALIZER;
    s = hpct_ckpt_file_meta(f, &m);
    tap_ok(s == HPCT_ERR_CHECKSUM && strstr(hpct_last_error(st->ctx), "meta/step") && m.step == 0 &&
               m.epoch == 3 && !strcmp(m.model, "inspect test model"),
           "damaged meta/step: meta says so and fills the rest");
    hpct_ckpt_file_close(f);
}

/* path fails to inspect with status want and a message naming it; no handle. */
static void expect_fail(state_t *st, const char *path, hpct_status_t want, const char *what)
{
    hpct_ckpt_file_t f = (hpct_ckpt_file_t)1;
    hpct_status_t s = hpct_ckpt_file_open(st->ctx, path, &f);
    tap_ok(s == want && f == NULL && strstr(hpct_last_error(st->ctx), path), "%s: %s", what,
           hpct_strerror(want));
    tap_diag("%s", hpct_last_error(st->ctx));
}

static void test_bad_files(state_t *st, const char *good, const char *dir)
{
    char p[4300];
    struct stat sb;
    stat(good, &sb);
    snprintf(p, sizeof p, "%s/missing.h5", dir);
    expect_fail(st, p, HPCT_ERR_NOT_FOUND, "a missing file");
    expect_fail(st, dir, HPCT_ERR_IO, "a directory");
    snprintf(p, sizeof p, "%s/empty.h5", dir);
    copy_file(good, p, 0);
    expect_fail(st, p, HPCT_ERR_FORMAT, "an empty file");
    snprintf(p, sizeof p, "%s/garbage.h5", dir);
    FILE *g = fopen(p, "wb");
    for (int i = 0; i < 5000; i++) fputc((i * 7919) % 251, g);
    fclose(g);
    expect_fail(st, p, HPCT_ERR_FORMAT, "a garbage file");
    snprintf(p, sizeof p, "%s/half.h5", dir);
    copy_file(good, p, sb.st_size / 2);
    expect_fail(st, p, HPCT_ERR_CHECKSUM, "a file truncated to half");
    snprintf(p, sizeof p, "%s/foreign.h5", dir);
    hid_t f = H5Fcreate(p, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    H5Fclose(f);
    expect_fail(st, p, HPCT_ERR_FORMAT, "an HDF5 file that is no checkpoint");
    tap_ok(hpct_ckpt_file_open(st->ctx, NULL, NULL) == HPCT_ERR_INVALID_ARG,
           "NULL arguments are HPCT_ERR_INVALID_ARG");
    hpct_ckpt_file_t stale = (hpct_ckpt_file_t)&f; /* any non-NULL value */
    tap_ok(hpct_ckpt_file_open(st->ctx, "", &stale) == HPCT_ERR_INVALID_ARG && stale == NULL,
           "an empty path is HPCT_ERR_INVALID_ARG and the handle is set to NULL");
}

/* Damaged copies, every 5th byte flipped in turn and 64 truncations: every call returns
 * (the writer's checksummed HDF5 headers keep HDF5 from decoding damaged metadata). */
static void test_sweep(state_t *st, const char *good, const char *dir)
{
    struct stat sb;
    stat(good, &sb);
    char p[4300];
    snprintf(p, sizeof p, "%s/sweep.h5", dir);
    int opened = 0, failed_clearly = 0, total = 0, unnoticed = 0, flips = (int)(sb.st_size / 5);
    for (int k = 0; k < flips + 64; k++) {
        off_t at = k < flips ? (off_t)k * 5 : (off_t)((double)sb.st_size * (k - flips) / 64);
        copy_file(good, p, k < flips ? sb.st_size : at);
        if (k < flips) xor_byte(p, at);
        hpct_ckpt_file_t f;
        total++;
        if (hpct_ckpt_file_open(st->ctx, p, &f) == HPCT_SUCCESS) {
            opened++;
            int n, bad = 0;
            hpct_ckpt_meta_t m = HPCT_CKPT_META_INITIALIZER;
            bad += hpct_ckpt_file_meta(f, &m) != HPCT_SUCCESS;
            hpct_ckpt_file_num_datasets(f, &n);
            for (int i = 0; i < n; i++) bad += hpct_ckpt_file_verify(f, i) != HPCT_SUCCESS;
            if (!bad && n == 28) unnoticed++;
            hpct_ckpt_file_close(f);
        } else if (strstr(hpct_last_error(st->ctx), p)) {
            failed_clearly++;
        } else {
            tap_diag("damage at byte %lld: %s", (long long)at, hpct_last_error(st->ctx));
        }
    }
    tap_ok(opened + failed_clearly == total,
           "%d damaged copies: each inspects or fails naming the file (%d opened)", total, opened);
    tap_diag("%d flips changed nothing the reader checks (e.g. free space in metadata blocks)",
             unnoticed);
}

/* Checkpoints of steps 10, 200 and 30 (saved in that order) beside a file that is none. */
static void test_dir_listing(state_t *st, const char *dir)
{
    char sub[4200], other[4300], want[3][4300];
    snprintf(sub, sizeof sub, "%s/list", dir);
    hpct_ckpt_config_t c = HPCT_CKPT_CONFIG_INITIALIZER;
    c.directory = sub;
    c.keep_last = 5;
    hpct_ckpt_t ck;
    if (hpct_ckpt_open(st->ctx, &c, &ck)) tap_bail("open: %s", hpct_last_error(st->ctx));
    static const long steps[3] = {10, 200, 30};
    for (int i = 0; i < 3; i++) {
        hpct_ckpt_meta_t m = HPCT_CKPT_META_INITIALIZER;
        m.step = steps[i];
        hpct_optimizer_set_step(st->opt, steps[i]);
        if (hpct_ckpt_save(ck, st->params, st->opt, &m))
            tap_bail("save: %s", hpct_last_error(st->ctx));
    }
    hpct_ckpt_close(ck);
    snprintf(other, sizeof other, "%s/notes.txt", sub);
    FILE *f = fopen(other, "w");
    if (!f) tap_bail("cannot create %s", other);
    fclose(f);
    static const long newest_first[3] = {200, 30, 10};
    for (int i = 0; i < 3; i++)
        snprintf(want[i], sizeof want[i], "%s/ckpt-%012ld.h5", sub, newest_first[i]);

    hpct_ckpt_list_t list = NULL;
    int n = -1, in_order = 1;
    tap_is_int(hpct_ckpt_list_open(st->ctx, sub, &list), HPCT_SUCCESS, "list a directory: %s",
               hpct_last_error(st->ctx));
    hpct_ckpt_list_size(list, &n);
    tap_is_int(n, 3, "three checkpoints listed, notes.txt ignored");
    for (int i = 0; i < 3 && n == 3; i++) {
        const char *path = NULL;
        in_order &= !hpct_ckpt_list_path(list, i, &path) && !strcmp(path, want[i]);
    }
    tap_ok(n == 3 && in_order, "newest (highest step) first, as dir/name: %s ...", want[0]);
    const char *path;
    tap_is_int(hpct_ckpt_list_path(list, 3, &path), HPCT_ERR_INVALID_ARG,
               "index past the end -> invalid argument");
    hpct_ckpt_list_close(list);

    snprintf(other, sizeof other, "%s/empty", dir);
    mkdir(other, 0700);
    n = -1;
    if (!hpct_ckpt_list_open(st->ctx, other, &list)) hpct_ckpt_list_size(list, &n);
    hpct_ckpt_list_close(list);
    tap_is_int(n, 0, "an empty directory lists no checkpoint");
    snprintf(other, sizeof other, "%s/missing", dir);
    hpct_status_t s = hpct_ckpt_list_open(st->ctx, other, &list);
    tap_ok(s == HPCT_ERR_NOT_FOUND && !list && strstr(hpct_last_error(st->ctx), other),
           "a missing directory -> not found naming it: %s", hpct_last_error(st->ctx));
}

int main(void)
{
    tap_plan(31);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* the test's own HDF5 calls stay quiet */
    char dir[4096], path[4200];
    make_tmpdir(dir, sizeof dir, "inspect");
    state_t st;
    st_create(&st, 4, counts, HPCT_OPT_ADAMW);
    st_fill(&st, 3, 2);
    save_one(&st, dir, path, sizeof path);
    test_listing(&st, path);
    test_flipped(&st, path, dir);
    test_bad_files(&st, path, dir);
    test_sweep(&st, path, dir);
    test_dir_listing(&st, dir);
    st_destroy(&st);
    remove_tree(dir);
    return tap_done();
}
