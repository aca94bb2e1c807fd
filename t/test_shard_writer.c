/* test_shard_writer.c: the public shard and manifest writers (hpct_shard_*, hpct_manifest_*)
 * on real files: shards written here are listed in a manifest that the reader then serves
 * back value for value; the same arrays give the same bytes; shards written by other code
 * (uint8 inputs) are indexed with their own dtype; bad arguments, mismatched or foreign
 * shards, duplicates and unwritable manifests fail with a status and a message naming them. */
#include "config.h"
#include "lib/data_util.h"
#include "hpctrain.h"
#include "lib/tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

/* Inputs [rows, 2, 3] = 10 g + j and int32 targets [rows] = g for global rows first.. */
static hpct_status_t write_shard(const char *path, uint64_t first, uint64_t rows, long chunk)
{
    float x[8 * 6];
    int32_t y[8];
    for (uint64_t i = 0; i < rows; i++) {
        for (int j = 0; j < 6; j++)
            x[i * 6 + (uint64_t)j] = (float)(10 * (first + i) + (uint64_t)j);
        y[i] = (int32_t)(first + i);
    }
    hpct_shard_config_t cfg = HPCT_SHARD_CONFIG_INITIALIZER;
    cfg.chunk_rows = chunk;
    hpct_shard_writer_t w = NULL;
    const uint64_t xd[3] = {rows, 2, 3}, yd[1] = {rows};
    hpct_status_t s = hpct_shard_create(ctx, path, &cfg, &w);
    if (!s) s = hpct_shard_write(w, "inputs", HPCT_DTYPE_FLOAT32, 3, xd, x);
    if (!s) s = hpct_shard_write(w, "targets", HPCT_DTYPE_INT32, 1, yd, y);
    hpct_status_t c = hpct_shard_close(w);
    return s ? s : c;
}

static char *slurp(const char *path, long *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *len = ftell(f);
    rewind(f);
    char *buf = malloc((size_t)*len + 1);
    if (buf && fread(buf, 1, (size_t)*len, f) != (size_t)*len) free(buf), buf = NULL;
    if (buf) buf[*len] = '\0';
    fclose(f);
    return buf;
}

static int has_error(hpct_status_t got, hpct_status_t want, const char *needle)
{
    return got == want && strstr(hpct_last_error(ctx), needle) != NULL;
}

static void test_round_trip(void)
{
    tap_is_int(write_shard(at("a.h5"), 0, 5, 2), HPCT_SUCCESS, "shard a: 5 samples, chunks of 2");
    tap_is_int(write_shard(at("b.h5"), 5, 3, 0), HPCT_SUCCESS, "shard b: 3 samples, default chunk");
    hpct_manifest_t m;
    hpct_status_t s = hpct_manifest_create(ctx, at("m.txt"), NULL, NULL, &m);
    if (!s) s = hpct_manifest_add_shard(m, at("a.h5"));
    if (!s) s = hpct_manifest_add_shard(m, at("b.h5"));
    if (!s) s = hpct_manifest_write(m);
    hpct_manifest_destroy(m);
    tap_is_int(s, HPCT_SUCCESS, "manifest of a and b written: %s", hpct_last_error(ctx));
    long len = 0;
    char *text = slurp(at("m.txt"), &len);
    tap_ok(text && strstr(text, "\ninputs float32 2,3\n") &&
               strstr(text, "\ntargets int32 scalar\n") && strstr(text, " a.h5\n") &&
               strstr(text, "shard 3 "),
           "the manifest records float32 [2,3] inputs, int32 labels and paths relative to it");
    free(text);

    hpct_data_config_t dc = HPCT_DATA_CONFIG_INITIALIZER;
    dc.shuffle = 0;
    hpct_dataset_t ds;
    const float *x = NULL;
    const void *y = NULL;
    s = hpct_dataset_open(ctx, at("m.txt"), &dc, &ds);
    if (!s) s = hpct_dataset_partition(ds, 0, 1, 8);
    if (!s) s = hpct_dataset_next(ds, &x, &y);
    int same = !s;
    for (int g = 0; same && g < 8; g++) {
        same &= ((const int32_t *)y)[g] == g;
        for (int j = 0; j < 6; j++) same &= x[g * 6 + j] == (float)(10 * g + j);
    }
    if (!s) hpct_dataset_close(ds);
    tap_ok(same, "the reader serves all 8 samples back unchanged: %s", hpct_last_error(ctx));

    write_shard(at("a2.h5"), 0, 5, 2);
    char *a = slurp(at("a.h5"), &len);
    long len2 = 0;
    char *a2 = slurp(at("a2.h5"), &len2);
    tap_ok(a && a2 && len == len2 && !memcmp(a, a2, (size_t)len),
           "the same arrays give the same bytes (%ld)", len);
    free(a), free(a2);
}

static void test_bad_writes(void)
{
    hpct_shard_config_t cfg = HPCT_SHARD_CONFIG_INITIALIZER;
    hpct_shard_writer_t w = NULL;
    cfg.deflate = 10;
    tap_ok(
        has_error(hpct_shard_create(ctx, at("c.h5"), &cfg, &w), HPCT_ERR_INVALID_ARG, "deflate") &&
            !w,
        "deflate 10 -> invalid argument naming the setting");
    tap_ok(has_error(hpct_shard_create(ctx, at("no/such/dir.h5"), NULL, &w), HPCT_ERR_IO,
                     "no/such/dir.h5"),
           "an uncreatable shard -> I/O error naming it: %s", hpct_last_error(ctx));
    float x[4] = {0};
    const uint64_t zero[2] = {2, 0}, ok[2] = {2, 2};
    if (hpct_shard_create(ctx, at("c.h5"), NULL, &w)) tap_bail("create: %s", hpct_last_error(ctx));
    tap_ok(has_error(hpct_shard_write(w, "inputs", (hpct_dtype_t)7, 2, ok, x), HPCT_ERR_INVALID_ARG,
                     "/inputs"),
           "an unknown dtype -> invalid argument naming the dataset: %s", hpct_last_error(ctx));
    tap_ok(has_error(hpct_shard_write(w, "inputs", HPCT_DTYPE_FLOAT32, 2, zero, x),
                     HPCT_ERR_INVALID_ARG, "dims[1] is 0"),
           "a zero dimension -> invalid argument: %s", hpct_last_error(ctx));
    tap_ok(
        has_error(hpct_shard_write(w, "inputs", HPCT_DTYPE_FLOAT32, HPCT_SHARD_MAX_RANK + 1, ok, x),
                  HPCT_ERR_INVALID_ARG, "rank"),
        "rank %d -> invalid argument", HPCT_SHARD_MAX_RANK + 1);
    tap_is_int(hpct_shard_write(w, "inputs", HPCT_DTYPE_FLOAT32, 2, ok, x), HPCT_SUCCESS,
               "a good write after the refusals");
    tap_ok(
        has_error(hpct_shard_write(w, "inputs", HPCT_DTYPE_FLOAT32, 2, ok, x), HPCT_ERR_IO, "c.h5"),
        "writing /inputs twice -> I/O error naming the shard: %s", hpct_last_error(ctx));
    tap_is_int(hpct_shard_close(w), HPCT_SUCCESS, "close");
}

static void test_bad_shards(void)
{
    tdu_shard_t u8 = tdu_shard(4, 0, 6, 0);
    u8.input_type = H5T_NATIVE_UCHAR;
    if (tdu_write_shard(at("u8.h5"), &u8)) tap_bail("cannot write u8.h5");
    hpct_manifest_t m;
    if (hpct_manifest_create(ctx, at("bad.txt"), NULL, NULL, &m)) tap_bail("manifest");
    tap_is_int(hpct_manifest_add_shard(m, at("u8.h5")), HPCT_SUCCESS,
               "a shard written by other code (uint8 inputs)");
    tap_ok(has_error(hpct_manifest_add_shard(m, at("a.h5")), HPCT_ERR_FORMAT, "a.h5: dtype"),
           "a shard of another layout -> format error naming it: %s", hpct_last_error(ctx));
    tap_ok(has_error(hpct_manifest_add_shard(m, at("u8.h5")), HPCT_ERR_INVALID_ARG, "listed twice"),
           "the same shard twice -> invalid argument: %s", hpct_last_error(ctx));
    tap_ok(has_error(hpct_manifest_add_shard(m, at("none.h5")), HPCT_ERR_FORMAT, "none.h5"),
           "a missing file -> format error naming it: %s", hpct_last_error(ctx));
    FILE *f = fopen(at("text.h5"), "w");
    if (!f || fputs("not HDF5\n", f) < 0 || fclose(f)) tap_bail("cannot write text.h5");
    tap_ok(has_error(hpct_manifest_add_shard(m, at("text.h5")), HPCT_ERR_FORMAT, "text.h5"),
           "a file that is not HDF5 -> format error naming it");
    if (hpct_manifest_write(m)) tap_bail("write: %s", hpct_last_error(ctx));
    hpct_manifest_destroy(m);
    long len = 0;
    char *text = slurp(at("bad.txt"), &len);
    tap_ok(text && strstr(text, "\ninputs uint8 6\n") && !strstr(text, "a.h5"),
           "the manifest keeps the uint8 layout and only the shard that was accepted");
    free(text);

    mkdir(at("sub"), 0700);
    if (hpct_manifest_create(ctx, at("sub/m.txt"), NULL, NULL, &m)) tap_bail("manifest");
    tap_ok(has_error(hpct_manifest_add_shard(m, at("a.h5")), HPCT_ERR_INVALID_ARG, "outside"),
           "a shard outside the manifest's directory -> invalid argument: %s",
           hpct_last_error(ctx));
    hpct_manifest_destroy(m);
    if (hpct_manifest_create(ctx, at("sub/m2.txt"), "X", NULL, &m)) tap_bail("manifest");
    write_shard(at("sub/a.h5"), 0, 5, 2);
    tap_ok(has_error(hpct_manifest_add_shard(m, at("sub/a.h5")), HPCT_ERR_NOT_FOUND, "/X"),
           "a shard without the inputs dataset -> not found naming it: %s", hpct_last_error(ctx));
    hpct_manifest_destroy(m);
    if (hpct_manifest_create(ctx, at("gone/m.txt"), NULL, NULL, &m)) tap_bail("manifest");
    tap_ok(has_error(hpct_manifest_write(m), HPCT_ERR_IO, "gone/m.txt"),
           "a manifest in a missing directory -> I/O error naming it: %s", hpct_last_error(ctx));
    hpct_manifest_destroy(m);
}

static void test_paths(void)
{
    static const char *const good[] = {"a.h5", "sub/b-00001.h5"};
    static const char *const bad[] = {"", "/abs.h5", "../up.h5", "a/../b.h5", "a b.h5", "a\\b"};
    int right = 1;
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        right &= hpct_manifest_check_path(good[i]) == HPCT_SUCCESS;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        right &= hpct_manifest_check_path(bad[i]) == HPCT_ERR_INVALID_ARG;
    tap_ok(right && hpct_manifest_check_path(NULL) == HPCT_ERR_INVALID_ARG,
           "manifest paths: relative and printable pass; empty, absolute, '..', blanks fail");
}

int main(void)
{
    tap_plan(24);
    if (hpct_ctx_create(NULL, &ctx)) tap_bail("cannot create a context");
    if (!(dir = tdu_tmpdir())) tap_bail("no temporary directory");
    test_round_trip();
    test_bad_writes();
    test_bad_shards();
    test_paths();
    hpct_ctx_destroy(ctx);
    tdu_cleanup();
    return tap_done();
}
