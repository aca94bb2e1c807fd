/* test_data_bad.c: every bad input the reader must refuse, on real files made here; each
 * error has the right status and a message naming the file and (where one is involved) the
 * dataset. Nothing crashes or reads out of bounds (run it under valgrind/ASan to see). */
#include "config.h"
#include "lib/data_util.h"
#include "hpctrain.h"
#include "lib/tap.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static hpct_ctx_t ctx;
static const char *dir;

static const char *at(const char *name)
{
    static char paths[4][512];
    static int next;
    char *p = paths[next++ % 4];
    snprintf(p, 512, "%s/%s", dir, name);
    return p;
}

static void write_text(const char *name, const char *text)
{
    FILE *f = fopen(at(name), "w");
    if (!f || fputs(text, f) < 0 || fclose(f)) tap_bail("cannot write %s", name);
}

static void shard(const char *name, tdu_shard_t s)
{
    if (tdu_write_shard(at(name), &s)) tap_bail("cannot write shard %s", name);
}

static void manifest(const char *name, int count, const char *const *files)
{
    if (tdu_write_manifest(dir, name, count, files, "float32", 5))
        tap_bail("cannot write manifest %s", name);
}

/* Open manifest with checksum mode cs; expect status want and every needle in the detail. */
static void expect_open(const char *mname, hpct_checksum_mode_t cs, hpct_status_t want,
                        const char *what, ...)
{
    hpct_data_config_t cfg = HPCT_DATA_CONFIG_INITIALIZER;
    cfg.checksum = cs;
    hpct_dataset_t ds = NULL;
    hpct_status_t got = hpct_dataset_open(ctx, at(mname), &cfg, &ds);
    const char *detail = hpct_last_error(ctx);
    int ok = got == want && !ds;
    va_list ap;
    va_start(ap, what);
    for (const char *needle; (needle = va_arg(ap, const char *));) ok &= !!strstr(detail, needle);
    va_end(ap);
    tap_ok(ok, "%s -> %s", what, hpct_strerror(want));
    if (!ok) tap_diag("got %d (%s): '%s'", got, hpct_strerror(got), detail);
    hpct_dataset_close(ds);
}

static void test_files(void)
{
    const char *good[2] = {"g0.h5", "g1.h5"};
    shard("g0.h5", tdu_shard(40, 0, 5, 8));
    shard("g1.h5", tdu_shard(40, 40, 5, 0));
    manifest("good.m", 2, good);
    expect_open("none.m", HPCT_CHECKSUM_FULL, HPCT_ERR_NOT_FOUND, "missing manifest", "none.m",
                NULL);

    const char *gone[1] = {"gone.h5"};
    shard("gone.h5", tdu_shard(10, 0, 5, 0));
    manifest("gone.m", 1, gone);
    unlink(at("gone.h5"));
    expect_open("gone.m", HPCT_CHECKSUM_OFF, HPCT_ERR_NOT_FOUND, "missing shard file", "gone.h5",
                "gone.m", NULL);

    tdu_shard_t s = tdu_shard(10, 0, 5, 0);
    s.targets_name = "";
    shard("notg.h5", s);
    const char *notg[2] = {"g0.h5", "notg.h5"};
    manifest("notg.m", 2, notg);
    expect_open("notg.m", HPCT_CHECKSUM_FULL, HPCT_ERR_NOT_FOUND, "missing dataset /targets",
                "notg.h5", "/targets", NULL);

    s = tdu_shard(10, 0, 5, 0);
    s.target_rows = 9;
    shard("counts.h5", s);
    const char *counts[1] = {"counts.h5"};
    manifest("counts.m", 1, counts);
    expect_open("counts.m", HPCT_CHECKSUM_FULL, HPCT_ERR_FORMAT,
                "/inputs and /targets counts differ", "counts.h5", "/", "samples", NULL);

    shard("wide.h5", tdu_shard(10, 40, 6, 0));
    const char *wide[2] = {"g0.h5", "wide.h5"};
    manifest("wide.m", 2, wide);
    expect_open("wide.m", HPCT_CHECKSUM_FULL, HPCT_ERR_FORMAT, "shape differs between shards",
                "wide.h5", "/inputs", "shape", NULL);

    s = tdu_shard(10, 40, 5, 0);
    s.input_type = H5T_NATIVE_UINT8;
    shard("u8.h5", s);
    const char *mixed[2] = {"g0.h5", "u8.h5"};
    manifest("mixed.m", 2, mixed);
    expect_open("mixed.m", HPCT_CHECKSUM_FULL, HPCT_ERR_FORMAT, "dtype differs between shards",
                "u8.h5", "/inputs", "uint8", "float32", NULL);

    /* /inputs read from elsewhere (past the manifest's hash of the shard file): refused. */
    const char *linked[2] = {"soft.h5", "ext.h5"};
    for (int i = 0; i < 2; i++) {
        shard(linked[i], tdu_shard(40, 0, 5, 0));
        hid_t fid = H5Fopen(at(linked[i]), H5F_ACC_RDWR, H5P_DEFAULT);
        int bad = fid < 0;
        if (!bad && i == 0) /* soft.h5: /targets moved to /hidden, a soft link in its place */
            bad = H5Lmove(fid, "targets", fid, "hidden", H5P_DEFAULT, H5P_DEFAULT) < 0 ||
                  H5Lcreate_soft("/hidden", fid, "targets", H5P_DEFAULT, H5P_DEFAULT) < 0;
        if (!bad && i == 1) /* ext.h5: /inputs is g1.h5's /inputs */
            bad = H5Ldelete(fid, "inputs", H5P_DEFAULT) < 0 ||
                  H5Lcreate_external(at("g1.h5"), "/inputs", fid, "inputs", H5P_DEFAULT,
                                     H5P_DEFAULT) < 0;
        if (fid < 0 || H5Fclose(fid) < 0 || bad) tap_bail("cannot craft %s", linked[i]);
        const char *one[1] = {linked[i]};
        manifest(i ? "ext.m" : "soft.m", 1, one);
    }
    /* soft.h5 keeps its own /inputs but /targets is a soft link to /hidden */
    expect_open("soft.m", HPCT_CHECKSUM_FULL, HPCT_ERR_FORMAT, "/targets a soft link: refused",
                "soft.h5", "/targets", "soft or external link", NULL);
    expect_open("ext.m", HPCT_CHECKSUM_FULL, HPCT_ERR_FORMAT,
                "/inputs an external link into another shard: refused", "ext.h5", "/inputs",
                "soft or external link", NULL);

    shard("empty.h5", tdu_shard(0, 0, 5, 0));
    const char *empty[2] = {"g0.h5", "empty.h5"};
    manifest("empty.m", 2, empty);
    expect_open("empty.m", HPCT_CHECKSUM_FULL, HPCT_ERR_FORMAT, "empty shard (0 rows in file)",
                "empty.h5", "/inputs", "empty", NULL);
}

/* Copy g0.h5 to name and damage it: truncate to half, or flip one byte in the data. */
static void damaged(const char *name, int truncate_it)
{
    shard(name, tdu_shard(40, 0, 5, 8));
    const char *files[1] = {name};
    char m[64];
    snprintf(m, sizeof m, "%s.m", name);
    manifest(m, 1, files);
    FILE *f = fopen(at(name), "r+b");
    if (!f || fseek(f, 0, SEEK_END)) tap_bail("cannot damage %s", name);
    long size = ftell(f);
    if (truncate_it) {
        fclose(f);
        if (truncate(at(name), size / 2)) tap_bail("cannot truncate %s", name);
        return;
    }
    int c;
    fseek(f, size - 100, SEEK_SET); /* the last rows of /targets' data */
    c = fgetc(f);
    fseek(f, size - 100, SEEK_SET);
    fputc(c ^ 0x10, f);
    fclose(f);
}

static void test_damage(void)
{
    damaged("trunc.h5", 1);
    expect_open("trunc.h5.m", HPCT_CHECKSUM_FULL, HPCT_ERR_CHECKSUM, "truncated file (full)",
                "trunc.h5", "bytes", NULL);
    expect_open("trunc.h5.m", HPCT_CHECKSUM_SIZE, HPCT_ERR_CHECKSUM, "truncated file (size)",
                "trunc.h5", NULL);
    expect_open("trunc.h5.m", HPCT_CHECKSUM_OFF, HPCT_ERR_FORMAT,
                "truncated file (checksums off): HDF5 refuses it, no crash", "trunc.h5", NULL);
    damaged("flip.h5", 0);
    expect_open("flip.h5.m", HPCT_CHECKSUM_FULL, HPCT_ERR_CHECKSUM, "flipped byte", "flip.h5",
                "checksum", NULL);
}

static void expect_manifest(const char *text, const char *what, const char *needle)
{
    write_text("bad.m", text);
    expect_open("bad.m", HPCT_CHECKSUM_OFF, HPCT_ERR_FORMAT, what, "bad.m", needle, NULL);
}

static void test_manifests(void)
{
    const char *head = "hpctrain-manifest 1\ninputs float32 5\ntargets int32 scalar\n";
    char text[1024];
    expect_manifest("", "empty manifest", "empty");
    expect_manifest("hello world\n", "bad syntax: no header", "line 1");
    expect_manifest("hpctrain-manifest 9\n", "bad syntax: unknown version", "version");
    snprintf(text, sizeof text, "%sshard 40 1 0123456789abcdef g0.h5 extra\n", head);
    expect_manifest(text, "bad syntax: extra field", "line 4");
    snprintf(text, sizeof text, "%sshard forty 1 0123456789abcdef g0.h5\n", head);
    expect_manifest(text, "bad syntax: sample count not a number", "forty");
    snprintf(text, sizeof text, "%sshard 40 1 xyz g0.h5\n", head);
    expect_manifest(text, "bad syntax: bad checksum", "checksum");
    expect_manifest("hpctrain-manifest 1\ninputs float32 5\ninputs float32 5\n",
                    "duplicate inputs line", "duplicate");
    snprintf(text, sizeof text,
             "%sshard 40 1 0123456789abcdef g0.h5\nshard 40 1 "
             "0123456789abcdef g0.h5\n",
             head);
    expect_manifest(text, "duplicate shard entry", "duplicate shard");
    expect_manifest("hpctrain-manifest 1\ninputs float32 5\nshard 40 1 0123456789abcdef g0.h5\n",
                    "absent targets line", "targets");
    expect_manifest(head, "absent shard entries", "no 'shard'");
    snprintf(text, sizeof text, "%sshard 0 1 0123456789abcdef g0.h5\n", head);
    expect_manifest(text, "empty shard in the manifest", "empty shard");
    /* claims no file of that size can hold, refused before anything is sized from them */
    snprintf(text, sizeof text, "%sshard 4294967296 100000 0123456789abcdef g0.h5\n", head);
    expect_manifest(text, "2^32 samples in a 100 kB shard", "line 4: shard 'g0.h5' claims");
    snprintf(text, sizeof text, "%sshard 1099511627775 100000 0123456789abcdef g0.h5\n", head);
    expect_manifest(text, "2^40 - 1 samples in a 100 kB shard", "line 4: shard 'g0.h5' claims");
    const char *escapes[] = {"../g0.h5", "/etc/passwd", "sub/../../g0.h5", ".."};
    for (int i = 0; i < 4; i++) {
        snprintf(text, sizeof text, "%sshard 40 1 0123456789abcdef %s\n", head, escapes[i]);
        char what[80];
        snprintf(what, sizeof what, "path escaping the directory: %s", escapes[i]);
        expect_manifest(text, what, "escapes");
    }
}

/* Read every batch of one epoch; count the batches and check none holds a NaN. */
static int read_epoch(hpct_dataset_t ds, long steps, int local, long *skipped)
{
    long e0, s0, e, s;
    hpct_dataset_get_cursor(ds, &e0, &s0);
    for (int b = 0; b < 100; b++) {
        const float *x;
        const void *y;
        if (hpct_dataset_next(ds, &x, &y)) return -1;
        for (int j = 0; j < local * 5; j++)
            if (x[j] != x[j]) return -1;
        hpct_dataset_get_cursor(ds, &e, &s);
        if (e > e0) {
            hpct_dataset_skipped(ds, skipped);
            return b + 1;
        }
    }
    (void)steps;
    return -1;
}

static void test_nonfinite(void)
{
    tdu_shard_t s = tdu_shard(40, 40, 5, 8);
    s.nan_row = 13; /* global sample 53 */
    shard("nan.h5", s);
    const char *files[2] = {"g0.h5", "nan.h5"};
    manifest("nan.m", 2, files);
    hpct_data_config_t cfg = HPCT_DATA_CONFIG_INITIALIZER;
    cfg.shuffle = 0;
    hpct_dataset_t ds = NULL;
    int ok =
        !hpct_dataset_open(ctx, at("nan.m"), &cfg, &ds) && !hpct_dataset_partition(ds, 0, 1, 10);
    hpct_status_t st = HPCT_SUCCESS;
    for (int b = 0; ok && b < 8 && !st; b++) st = hpct_dataset_next(ds, NULL, NULL);
    long e, step;
    hpct_dataset_get_cursor(ds, &e, &step);
    tap_ok(st == HPCT_ERR_NONFINITE && strstr(hpct_last_error(ctx), "nan.h5") &&
               strstr(hpct_last_error(ctx), "/inputs") && strstr(hpct_last_error(ctx), "13") &&
               step == 5,
           "NaN input, policy error: batch 5 fails naming file, dataset and sample");
    if (st != HPCT_ERR_NONFINITE || step != 5)
        tap_diag("status %d step %ld: %s", st, step, hpct_last_error(ctx));
    tap_ok(hpct_dataset_next(ds, NULL, NULL) == HPCT_ERR_NONFINITE,
           "the failing batch fails again (the cursor did not move past it)");
    hpct_dataset_close(ds);

    cfg.nonfinite = HPCT_NONFINITE_SKIP;
    cfg.shuffle = 1;
    long counts[2] = {0, 0}, skipped[2] = {0, 0};
    for (int w = 1; w <= 2; w++) {
        hpct_dataset_t r0 = NULL;
        cfg.memory_budget_bytes = w == 1 ? (size_t)1 << 30 : 0; /* resident, then streamed */
        ok = !hpct_dataset_open(ctx, at("nan.m"), &cfg, &r0) &&
             !hpct_dataset_partition(r0, w - 1, w, 10);
        counts[w - 1] = ok ? read_epoch(r0, 8, 10 / w, &skipped[w - 1]) : -1;
        hpct_dataset_close(r0);
    }
    tap_ok(counts[0] == 7 && skipped[0] == 1,
           "NaN input, policy skip: 7 of 8 batches served, 1 skipped (got %ld, %ld)", counts[0],
           skipped[0]);
    tap_ok(counts[1] == 7 && skipped[1] == 1,
           "the same batch is skipped at W=2 while streaming (got %ld, %ld)", counts[1],
           skipped[1]);
}

int main(void)
{
    tap_plan(9 + 4 + 15 + 2 + 4 + 1);
    if (hpct_ctx_create(NULL, &ctx)) tap_bail("no context");
    if (!(dir = tdu_tmpdir())) tap_bail("no temporary directory");
    test_files();
    test_damage();
    test_manifests();
    test_nonfinite();
    hpct_data_config_t cfg = HPCT_DATA_CONFIG_INITIALIZER;
    cfg.version = 0;
    hpct_dataset_t ds = NULL;
    tap_ok(hpct_dataset_open(ctx, at("good.m"), &cfg, &ds) == HPCT_ERR_INVALID_ARG &&
               strstr(hpct_last_error(ctx), "version"),
           "a config without a version is refused");
    hpct_ctx_destroy(ctx);
    tdu_cleanup();
    return tap_done();
}
