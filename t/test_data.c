/* test_data.c: the reader's contract on real shard files: the shuffle is deterministic and a
 * permutation; for W = 1..4 the ranks' slices put together are the single-rank global batch
 * (resident and streaming reads, with and without prefetch); every sample of an epoch is
 * seen once; the cursor resumes exactly, also at another world size. */
#include "config.h"
#include "../lib/data/reader.h"
#include "lib/data_util.h"
#include "hpctrain.h"
#include "lib/tap.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FEATURES     5
#define GLOBAL_BATCH 24
#define EPOCHS       2

static hpct_ctx_t ctx;
static char manifest[512], manifest_u8[512], manifest_z[512];
static const uint64_t shard_rows[3] = {97, 130, 73}; /* 300 samples, 12 full batches of 24 */

static void make_files(const char *dir)
{
    const char *names[3] = {"a.h5", "b.h5", "c.h5"}, *u8[1] = {"u8.h5"}, *z[1] = {"z.h5"};
    char path[512];
    uint64_t first = 0;
    for (int i = 0; i < 3; i++) {
        tdu_shard_t s = tdu_shard(shard_rows[i], first, FEATURES, i == 1 ? 0 : 16);
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (tdu_write_shard(path, &s)) tap_bail("cannot write %s", path);
        first += shard_rows[i];
    }
    tdu_shard_t s = tdu_shard(200, 0, FEATURES, 32);
    s.input_type = H5T_NATIVE_UINT8;
    snprintf(path, sizeof path, "%s/u8.h5", dir);
    if (tdu_write_shard(path, &s)) tap_bail("cannot write %s", path);
    s = tdu_shard(200, 0, FEATURES, 32);
    s.deflate = 1;
    snprintf(path, sizeof path, "%s/z.h5", dir);
    if (tdu_write_shard(path, &s)) tap_bail("cannot write %s", path);
    if (tdu_write_manifest(dir, "train.manifest", 3, names, "float32", FEATURES) ||
        tdu_write_manifest(dir, "u8.manifest", 1, u8, "uint8", FEATURES) ||
        tdu_write_manifest(dir, "z.manifest", 1, z, "float32", FEATURES))
        tap_bail("cannot write manifests in %s", dir);
    snprintf(manifest, sizeof manifest, "%s/train.manifest", dir);
    snprintf(manifest_u8, sizeof manifest_u8, "%s/u8.manifest", dir);
    snprintf(manifest_z, sizeof manifest_z, "%s/z.manifest", dir);
}

static void test_permutation(void)
{
    enum { N = 1000 };
    static uint64_t a[N], b[N], c[N];
    int seen[N] = {0}, is_perm = 1;
    hpct_data_permutation(7, 3, N, a);
    hpct_data_permutation(7, 3, N, b);
    hpct_data_permutation(7, 4, N, c);
    for (int i = 0; i < N; i++) is_perm &= a[i] < N && !seen[a[i]]++;
    tap_ok(is_perm, "permutation(7, 3, 1000) holds every index once");
    tap_ok(!memcmp(a, b, sizeof a), "same (seed, epoch) gives the same permutation");
    tap_ok(memcmp(a, c, sizeof a) != 0, "another epoch gives another permutation");
    hpct_data_permutation(8, 3, N, c);
    tap_ok(memcmp(a, c, sizeof a) != 0, "another seed gives another permutation");
}

/* The expected global batch (epoch, step): sample indices from the contract. */
static void expected_batch(long epoch, long step, int shuffle, uint64_t *idx)
{
    static uint64_t perm[300];
    hpct_data_permutation(42, epoch, 300, perm);
    for (int i = 0; i < GLOBAL_BATCH; i++)
        idx[i] = shuffle ? perm[step * GLOBAL_BATCH + i] : (uint64_t)(step * GLOBAL_BATCH + i);
}

/* Rows hold g, g+1, ... and target g: check that row j of a slice is sample g. */
static int row_is(const float *x, const int32_t *y, int j, uint64_t g)
{
    for (int k = 0; k < FEATURES; k++)
        if (x[j * FEATURES + k] != (float)(g + (uint64_t)k)) return 0;
    return y[j] == (int32_t)g;
}

static hpct_dataset_t open_ds(const char *path, size_t budget, int depth, int shuffle)
{
    hpct_data_config_t cfg = HPCT_DATA_CONFIG_INITIALIZER;
    cfg.memory_budget_bytes = budget;
    cfg.prefetch_depth = depth;
    cfg.shuffle = shuffle;
    hpct_dataset_t ds = NULL;
    hpct_status_t s = hpct_dataset_open(ctx, path, &cfg, &ds);
    if (s) tap_diag("open %s: %s: %s", path, hpct_strerror(s), hpct_last_error(ctx));
    return ds;
}

/* W ranks (W handles in this process) read EPOCHS epochs; every global batch must match the
 * contract and every sample of an epoch must appear once. */
static void test_world(int world, size_t budget, int depth, int shuffle, const char *mode)
{
    hpct_dataset_t ds[4] = {0};
    int ok = 1, once = 1;
    long steps = 0;
    for (int r = 0; r < world; r++) {
        ds[r] = open_ds(manifest, budget, depth, shuffle);
        ok &= ds[r] && !hpct_dataset_partition(ds[r], r, world, GLOBAL_BATCH);
    }
    if (ok) hpct_dataset_steps_per_epoch(ds[0], &steps);
    ok &= steps == 12;
    int local = GLOBAL_BATCH / world;
    for (long e = 0; ok && e < EPOCHS; e++) {
        int seen[300] = {0};
        for (long s = 0; ok && s < steps; s++) {
            uint64_t idx[GLOBAL_BATCH];
            expected_batch(e, s, shuffle, idx);
            for (int r = 0; ok && r < world; r++) {
                const float *x;
                const void *y;
                ok &= !hpct_dataset_next(ds[r], &x, &y);
                for (int j = 0; ok && j < local; j++) {
                    uint64_t g = idx[r * local + j];
                    ok &= row_is(x, y, j, g);
                    once &= !seen[g]++;
                }
            }
        }
        int count = 0;
        for (int i = 0; i < 300; i++) count += seen[i];
        once &= count == steps * GLOBAL_BATCH;
    }
    tap_ok(ok, "%s, W=%d, prefetch %d%s: slices form the contract's global batches", mode, world,
           depth, shuffle ? "" : ", no shuffle");
    tap_ok(ok && once, "%s, W=%d, prefetch %d: each sample at most once per epoch, %d per epoch",
           mode, world, depth, 12 * GLOBAL_BATCH);
    for (int r = 0; r < world; r++) hpct_dataset_close(ds[r]);
}

/* Read `count` global batches at world size W into out [count, GLOBAL_BATCH] (sample ids). */
static int read_ids(hpct_dataset_t *ds, int world, int count, int32_t *out)
{
    int local = GLOBAL_BATCH / world;
    for (int b = 0; b < count; b++)
        for (int r = 0; r < world; r++) {
            const float *x;
            const void *y;
            if (hpct_dataset_next(ds[r], &x, &y)) return -1;
            memcpy(out + b * GLOBAL_BATCH + r * local, y, (size_t)local * sizeof(int32_t));
        }
    return 0;
}

/* Uninterrupted W=2 run of 20 batches vs. 7 batches, cursor saved, then resumed at W=2 and
 * at W=3 (crossing the epoch boundary at 12). */
static void test_resume(int depth)
{
    int32_t straight[20 * GLOBAL_BATCH], resumed[20 * GLOBAL_BATCH];
    hpct_dataset_t ds[3] = {0};
    for (int r = 0; r < 2; r++) {
        ds[r] = open_ds(manifest, 0, depth, 1);
        if (ds[r]) hpct_dataset_partition(ds[r], r, 2, GLOBAL_BATCH);
    }
    int ok = ds[0] && ds[1] && !read_ids(ds, 2, 20, straight);
    for (int r = 0; r < 2; r++) hpct_dataset_partition(ds[r], r, 2, GLOBAL_BATCH);
    ok = ok && !read_ids(ds, 2, 7, resumed);
    long epoch = -1, step = -1;
    if (ok) hpct_dataset_get_cursor(ds[0], &epoch, &step);
    tap_ok(ok && epoch == 0 && step == 7, "cursor after 7 batches is (0, 7), got (%ld, %ld)", epoch,
           step);
    for (int r = 0; r < 2; r++) hpct_dataset_close(ds[r]);
    for (int world = 2; world <= 3; world++) {
        for (int r = 0; r < world; r++) {
            ds[r] = open_ds(manifest, (size_t)1 << 30, depth, 1);
            ok &= ds[r] && !hpct_dataset_partition(ds[r], r, world, GLOBAL_BATCH) &&
                  !hpct_dataset_set_cursor(ds[r], epoch, step);
        }
        ok = ok && !read_ids(ds, world, 13, resumed + 7 * GLOBAL_BATCH);
        tap_ok(ok && !memcmp(straight, resumed, sizeof straight),
               "prefetch %d: resumed at (0, 7) with W=%d reads what the uninterrupted run read",
               depth, world);
        long e2, s2;
        hpct_dataset_get_cursor(ds[0], &e2, &s2);
        tap_ok(e2 == 1 && s2 == 8, "cursor after 20 batches is (1, 8), got (%ld, %ld)", e2, s2);
        for (int r = 0; r < world; r++) hpct_dataset_close(ds[r]);
    }
}

static void test_conversion(void)
{
    hpct_dataset_t ds = open_ds(manifest_u8, (size_t)1 << 30, 0, 0), dz;
    int ok = ds && !hpct_dataset_partition(ds, 0, 1, 200);
    const float *x;
    const void *y;
    ok = ok && !hpct_dataset_next(ds, &x, &y);
    for (int j = 0; ok && j < 200; j++)
        ok &= x[j * FEATURES + 1] == (float)((j + 1) & 0xff) && ((const int32_t *)y)[j] == j;
    tap_ok(ok, "uint8 inputs are served as float32 values, labels as int32");
    hpct_dataset_close(ds);
    ds = open_ds(manifest_u8, 0, 1, 0);
    ok = ds && !hpct_dataset_partition(ds, 0, 1, 100) && !hpct_dataset_next(ds, &x, &y) &&
         !hpct_dataset_next(ds, &x, &y) && x[0] == (float)100 && x[FEATURES * 99 + 4] == 203 % 256;
    tap_ok(ok, "uint8 inputs converted when streaming too");
    hpct_dataset_close(ds);
    dz = open_ds(manifest_z, (size_t)1 << 30, 2, 1);
    ok = dz && !hpct_dataset_partition(dz, 0, 1, 50) && !hpct_dataset_next(dz, &x, &y);
    tap_ok(ok && row_is(x, y, 0, (uint64_t)((const int32_t *)y)[0]),
           "deflate+shuffle shards load when they fit the memory budget");
    hpct_dataset_close(dz);
    hpct_data_config_t cfg = HPCT_DATA_CONFIG_INITIALIZER;
    cfg.memory_budget_bytes = 0;
    hpct_status_t s = hpct_dataset_open(ctx, manifest_z, &cfg, &dz);
    tap_ok(s == HPCT_ERR_UNSUPPORTED && strstr(hpct_last_error(ctx), "z.h5") &&
               strstr(hpct_last_error(ctx), "/inputs"),
           "a compressed shard that must be streamed is refused, naming file and dataset");
}

/* Bytes counted as read by one shuffled streaming epoch at W = 1 (prefetch thread off);
 * *mapped: whether the reader copied from the mapped files, in the page cache (white box). */
static uint64_t epoch_bytes_read(int *mapped)
{
    hpct_dataset_t ds = open_ds(manifest, 0, 0, 1);
    hpct_data_stats_t before = {.version = HPCT_DATA_STATS_VERSION}, after = before;
    int ok =
        ds && !hpct_dataset_partition(ds, 0, 1, GLOBAL_BATCH) && !hpct_dataset_stats(ds, &before);
    for (int s = 0; ok && s < 12; s++) ok = !hpct_dataset_next(ds, NULL, NULL);
    ok = ok && !hpct_dataset_stats(ds, &after);
    *mapped = ds ? ds->mapped && ds->hot : -1;
    hpct_dataset_close(ds);
    return ok ? after.bytes_read - before.bytes_read : 0;
}

/* Streaming copies shuffled rows out of the shards' mappings by default, and reads them with
 * sorted, coalesced preadv under HPCT_STREAM_MMAP=0: the same batches, and the same bytes
 * counted as read (288 x 5 float32 inputs and int32 labels an epoch: with 5 features the
 * labels are streamed too, not held). */
static void test_stream_paths(void)
{
    int was_mapped[2];
    uint64_t mapped = epoch_bytes_read(&was_mapped[0]);
    setenv("HPCT_STREAM_MMAP", "0", 1);
    test_world(1, 0, 0, 1, "streaming, preadv");
    test_world(3, 0, 2, 1, "streaming, preadv");
    uint64_t preadv = epoch_bytes_read(&was_mapped[1]);
    unsetenv("HPCT_STREAM_MMAP");
    uint64_t want = 12 * GLOBAL_BATCH * (FEATURES * sizeof(float) + sizeof(int32_t));
    tap_ok(was_mapped[0] == 1 && mapped == want,
           "mapped streaming counts the bytes it copies: %llu in an epoch, want %llu",
           (unsigned long long)mapped, (unsigned long long)want);
    tap_ok(was_mapped[1] == 0 && preadv == want,
           "preadv streaming counts the bytes it reads: %llu in an epoch, want %llu",
           (unsigned long long)preadv, (unsigned long long)want);
}

/* When the prefetch thread holds the next batch but does not run (here it sleeps 20 ms after
 * claiming each batch, white box: as if the scheduler had taken its CPU), the caller builds
 * that batch itself in the spare slot instead of waiting: every batch must still be the
 * contract's, and the caller must have built some of those the thread held (ds->steals). */
static void test_stalled_thread(void)
{
    setenv("HPCT_PREFETCH_THREAD", "1", 1);
    hpct_dataset_t ds = open_ds(manifest, 0, 2, 1);
    if (ds) ds->test_thread_stall_s = 0.02; /* before partition starts the thread */
    int ok = ds && !hpct_dataset_partition(ds, 0, 1, GLOBAL_BATCH) && ds->running;
    /* let the thread claim the first batch (then it stalls), or the caller would build them all */
    for (int claimed = 0, i = 0; ok && !claimed && i < 5000; i++) {
        pthread_mutex_lock(&ds->mu);
        claimed = ds->slots[0].state != HPCTI_SLOT_FREE;
        pthread_mutex_unlock(&ds->mu);
        if (!claimed) usleep(1000);
    }
    double t0 = hpcti_now();
    for (long e = 0; ok && e < 2; e++)
        for (long st = 0; ok && st < 12; st++) {
            uint64_t idx[GLOBAL_BATCH];
            const float *x;
            const void *y;
            expected_batch(e, st, 1, idx);
            ok = !hpct_dataset_next(ds, &x, &y);
            for (int j = 0; ok && j < GLOBAL_BATCH; j++) ok = row_is(x, y, j, idx[j]);
        }
    double took = hpcti_now() - t0;
    long steals = ds ? ds->steals : 0;
    hpct_dataset_close(ds);
    unsetenv("HPCT_PREFETCH_THREAD");
    tap_ok(ok, "prefetch thread stalled 20 ms per batch: 2 epochs of the contract's batches");
    tap_ok(ok && steals > 0,
           "the caller built %ld of the batches the stalled thread held (24 batches in %.0f ms)",
           steals, took * 1e3);
}

/* A new folder sub with shards a.h5, b.h5, c.h5 (shard_rows, chunks of 16 rows) and their
 * manifest m.manifest, each a copy of its own for a test that changes files; 1 when done. */
static int three_shards(const char *sub)
{
    const char *names[3] = {"a.h5", "b.h5", "c.h5"};
    char path[700];
    uint64_t first = 0;
    int ok = !mkdir(sub, 0700);
    for (int i = 0; ok && i < 3; i++) {
        tdu_shard_t sh = tdu_shard(shard_rows[i], first, FEATURES, 16);
        snprintf(path, sizeof path, "%s/%s", sub, names[i]);
        ok = !tdu_write_shard(path, &sh);
        first += shard_rows[i];
    }
    return ok && !tdu_write_manifest(sub, "m.manifest", 3, names, "float32", FEATURES);
}

/* A shard file truncated while the dataset streams from its mapping (rewritten in place during
 * the job): the copy that touches the lost pages fails with HPCT_ERR_CHECKSUM naming the file, on
 * the caller's thread (depth 0) and on the prefetch thread (depth 2), instead of SIGBUS
 * killing the process. Each case writes its own copy of the files. */
static void test_shrunk_shard(const char *dir, int depth)
{
    char sub[600], path[700];
    snprintf(sub, sizeof sub, "%s/shrink%d", dir, depth);
    int ok = three_shards(sub);
    snprintf(path, sizeof path, "%s/m.manifest", sub);
    if (depth) setenv("HPCT_PREFETCH_THREAD", "1", 1);
    hpct_dataset_t ds = ok ? open_ds(path, 0, depth, 1) : NULL;
    ok = ds && !hpct_dataset_partition(ds, 0, 1, GLOBAL_BATCH) &&
         !hpct_dataset_next(ds, NULL, NULL) && ds->mapped && ds->hot; /* the epoch's cache check */
    snprintf(path, sizeof path, "%s/b.h5", sub);
    ok = ok && !truncate(path, 0);
    hpct_status_t s = HPCT_SUCCESS;
    for (int st = 0; ok && s == HPCT_SUCCESS && st < 12; st++)
        s = hpct_dataset_next(ds, NULL, NULL);
    const char *msg = hpct_last_error(ctx);
    /* with the thread, the caller may build a batch itself after the thread's fault turned
     * the mapped copies off: then preadv reports the short file */
    int named = strstr(msg, "shrank") || (depth && strstr(msg, "end of file"));
    tap_ok(ok && s == HPCT_ERR_CHECKSUM && strstr(msg, path) && named,
           "a shard truncated under its mapping (prefetch depth %d): %s: %s", depth,
           hpct_strerror(s), msg);
    hpct_dataset_close(ds);
    unsetenv("HPCT_PREFETCH_THREAD");
}

/* Read one epoch (12 batches of 24) from the cursor (0, 0) into x [12 * 24 * FEATURES]. */
static hpct_status_t read_epoch0(hpct_dataset_t ds, float *x)
{
    int32_t y[GLOBAL_BATCH];
    hpct_status_t s = hpct_dataset_set_cursor(ds, 0, 0);
    for (int st = 0; !s && st < 12; st++)
        s = hpct_dataset_next_into(ds, x + (size_t)st * GLOBAL_BATCH * FEATURES, y);
    return s;
}

/* A shard changed while a run streams it: replaced by rename (a new file under its name),
 * the run keeps reading the file it opened, batch for batch the same; rewritten in place
 * (the same size, other values: what a second "hpctrain shard -o" into the same folder
 * does), the next epoch fails with HPCT_ERR_CHECKSUM naming the file, and every batch
 * after it. */
static void test_rewritten_shard(const char *dir, int depth)
{
    char sub[600], path[700], tmp[700];
    snprintf(sub, sizeof sub, "%s/rewrite%d", dir, depth);
    int ok = three_shards(sub);
    snprintf(path, sizeof path, "%s/m.manifest", sub);
    if (depth) setenv("HPCT_PREFETCH_THREAD", "1", 1);
    hpct_dataset_t ds = ok ? open_ds(path, 0, depth, 1) : NULL;
    size_t floats = (size_t)12 * GLOBAL_BATCH * FEATURES;
    float *before = calloc(floats, sizeof *before), *after = calloc(floats, sizeof *after);
    ok = ds && before && after && !hpct_dataset_partition(ds, 0, 1, GLOBAL_BATCH) &&
         !read_epoch0(ds, before);
    /* c.h5 replaced by rename: a new file with other values */
    tdu_shard_t other = tdu_shard(shard_rows[2], 5000, FEATURES, 16);
    snprintf(tmp, sizeof tmp, "%s/c.h5.new", sub);
    snprintf(path, sizeof path, "%s/c.h5", sub);
    int replaced = ok && !tdu_write_shard(tmp, &other) && !rename(tmp, path);
    hpct_status_t s = replaced ? read_epoch0(ds, after) : HPCT_ERR_IO;
    tap_ok(replaced && s == HPCT_SUCCESS && !memcmp(before, after, floats * sizeof *before),
           "a shard replaced by rename during the run (prefetch depth %d): the run reads the file "
           "it opened, batch for batch the same (%s)",
           depth, s ? hpct_last_error(ctx) : "ok");
    /* a.h5 rewritten in place, the same size */
    other = tdu_shard(shard_rows[0], 7000, FEATURES, 16);
    snprintf(path, sizeof path, "%s/a.h5", sub);
    int rewritten = ok && !tdu_write_shard(path, &other);
    s = rewritten ? read_epoch0(ds, after) : HPCT_SUCCESS;
    const char *msg = hpct_last_error(ctx);
    tap_ok(rewritten && s == HPCT_ERR_CHECKSUM && strstr(msg, path) &&
               strstr(msg, "modified while"),
           "a shard rewritten in place during the run (prefetch depth %d): %s: %s", depth,
           hpct_strerror(s), msg);
    s = rewritten ? read_epoch0(ds, after) : HPCT_SUCCESS;
    tap_ok(s == HPCT_ERR_CHECKSUM, "and every batch after it fails too (%s)", hpct_strerror(s));
    free(before), free(after);
    hpct_dataset_close(ds);
    unsetenv("HPCT_PREFETCH_THREAD");
}

static void test_partition_errors(void)
{
    hpct_dataset_t ds = open_ds(manifest, 0, 0, 1);
    float in[FEATURES];
    int32_t tg[1];
    tap_ok(hpct_dataset_next_into(ds, in, tg) == HPCT_ERR_STATE,
           "next before partition is a state error");
    hpct_status_t s = hpct_dataset_partition(ds, 0, 3, 32);
    tap_ok(s == HPCT_ERR_INVALID_ARG && strstr(hpct_last_error(ctx), "multiple of the world"),
           "global batch 32 on 3 ranks is refused: %s", hpct_last_error(ctx));
    tap_ok(hpct_dataset_partition(ds, 3, 3, 24) == HPCT_ERR_INVALID_ARG, "rank 3 of 3 is refused");
    tap_ok(hpct_dataset_partition(ds, 0, 1, 301) == HPCT_ERR_INVALID_ARG,
           "a global batch above the sample count is refused");
    hpct_dataset_partition(ds, 0, 2, 24);
    float copy_x[12 * FEATURES];
    int32_t copy_y[12];
    const float *x;
    const void *y;
    int same = !hpct_dataset_next_into(ds, copy_x, copy_y) && !hpct_dataset_set_cursor(ds, 0, 0) &&
               !hpct_dataset_next(ds, &x, &y) && !memcmp(x, copy_x, sizeof copy_x) &&
               !memcmp(y, copy_y, sizeof copy_y);
    tap_ok(same, "next_into copies what next returns for the same cursor");
    tap_ok(hpct_dataset_set_cursor(ds, 0, 12) == HPCT_ERR_INVALID_ARG,
           "a cursor step past the epoch is refused");
    size_t n = 0;
    int f = 0, w = 0;
    hpct_dtype_t t = HPCT_DTYPE_FLOAT32;
    hpct_dataset_info(ds, &n, &f, &w, &t);
    tap_ok(n == 300 && f == FEATURES && w == 1 && t == HPCT_DTYPE_INT32,
           "info: 300 samples, 5 features, int32 labels");
    hpct_dataset_close(ds);
}

int main(void)
{
    tap_plan(4 + 2 * 4 * 4 + 2 * 5 + 4 + 6 + 2 + 2 + 6 + 7);
    if (hpct_ctx_create(NULL, &ctx)) tap_bail("no context");
    const char *dir = tdu_tmpdir();
    if (!dir) tap_bail("no temporary directory");
    make_files(dir);
    test_permutation();
    const size_t resident = (size_t)1 << 30, streaming = 0;
    for (int w = 1; w <= 4; w++) {
        test_world(w, resident, 0, 1, "resident");
        test_world(w, resident, 2, 1, "resident");
        test_world(w, streaming, 0, 1, "streaming");
        test_world(w, streaming, 3, w == 2 ? 0 : 1, "streaming");
    }
    test_resume(0);
    test_resume(2);
    test_conversion();
    test_stream_paths();
    test_stalled_thread();
    test_shrunk_shard(dir, 0);
    test_shrunk_shard(dir, 2);
    test_rewritten_shard(dir, 0);
    test_rewritten_shard(dir, 2);
    test_partition_errors();
    hpct_ctx_destroy(ctx);
    tdu_cleanup();
    return tap_done();
}
