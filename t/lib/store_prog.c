/* store_prog.c: the reader's modes under a real MPI job (run by t/test_data_store.sh).
 *
 * usage: store_prog DIR MODE   MODE: stream | resident | job | env-job | node | corrupt |
 *                                    corrupt-node | memory | mismatch | missing-stream |
 *                                    missing-job
 * Rank 0 writes 4 shards (1200 samples of 256 float32, row g = g, g+1, ...; target g) and a
 * manifest into DIR; every rank opens it in MODE and checks that its slice of each global
 * batch is the contract's, bit for bit, across an epoch boundary and after a cursor restore;
 * in job mode also that the job read each sample byte once (library counter, backed by
 * /proc/self/io rchar), that each rank holds its ~N/W block, and what was exchanged.
 * mismatch: job store, rank 0 at another cursor: every rank's next fails, naming the batches.
 * memory: on a 64 MiB set, each rank's VmRSS grows by about N/W at a job-store open and by
 * N at a resident one.
 * corrupt, corrupt-node: a flipped byte in the last shard must fail the job (node) store open
 * on every rank, naming the file.
 * missing-stream, missing-job: a shard missing from the last rank's copy of the set only must
 * fail the streaming (job store) open on every rank, naming the file. */
#include "config.h"
#include "../../lib/data/reader.h"
#include "data_util.h"
#include "hpctrain.h"
#include "mpi_prog.h"

#include <malloc.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FEATURES 256
#define SAMPLES  1200
#define BATCH    48 /* a multiple of 1, 2, 3 and 4: 25 steps per epoch */

static const uint64_t rows[4] = {300, 250, 350, 300};
static const int chunks[4] = {32, 0, 50, 64};

/* Rank 0 writes the shards and the manifest; 0 on success everywhere. */
static int write_set(const char *dir)
{
    int bad = 0;
    if (world_rank == 0) {
        const char *files[4] = {"s0.h5", "s1.h5", "s2.h5", "s3.h5"};
        uint64_t first = 0;
        for (int k = 0; k < 4 && !bad; k++) {
            char path[600];
            snprintf(path, sizeof path, "%s/%s", dir, files[k]);
            tdu_shard_t sh = tdu_shard(rows[k], first, FEATURES, chunks[k]);
            bad = tdu_write_shard(path, &sh);
            first += rows[k];
        }
        bad = bad || tdu_write_manifest(dir, "m", 4, files, "float32", FEATURES);
    }
    MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return bad;
}

/* rchar of /proc/self/io (bytes read through read-like calls), or -1. */
static long long rchar(void)
{
    FILE *f = fopen("/proc/self/io", "r");
    long long v = -1;
    char key[64];
    long long val;
    while (f && fscanf(f, "%63[^:]: %lld\n", key, &val) == 2)
        if (!strcmp(key, "rchar")) v = val;
    if (f) fclose(f);
    return v;
}

/* 1 when this rank's slice of batch (epoch, step) is the contract's, bit for bit. */
static int slice_is_contract(const float *x, const int32_t *y, long epoch, long step,
                             const uint64_t *perm)
{
    int lb = BATCH / world_size;
    for (int j = 0; j < lb; j++) {
        uint64_t g = perm[(size_t)step * BATCH + (size_t)world_rank * lb + (size_t)j];
        if (y[j] != (int32_t)g) return 0;
        for (int k = 0; k < FEATURES; k++) {
            float want = (float)(g + (uint64_t)k);
            if (memcmp(&x[(size_t)j * FEATURES + k], &want, sizeof want)) return 0;
        }
    }
    (void)epoch;
    return 1;
}

/* Read count batches from the cursor, checking each; 1 when all matched. */
static int read_checked(hpct_dataset_t ds, int count, long *epoch, long *step)
{
    static uint64_t perm[SAMPLES];
    long perm_epoch = -1;
    int good = 1;
    for (int b = 0; b < count && good; b++) {
        const float *x;
        const void *y;
        if (perm_epoch != *epoch) hpct_data_permutation(42, *epoch, SAMPLES, perm);
        perm_epoch = *epoch;
        good = !hpct_dataset_next(ds, &x, &y) && slice_is_contract(x, y, *epoch, *step, perm);
        if (++*step == SAMPLES / BATCH) *step = 0, ++*epoch;
    }
    return good;
}

/* Bytes of the four shard files of the small set. */
static long long set_file_bytes(const char *dir)
{
    long long total = 0;
    for (int k = 0; k < 4; k++) {
        char path[600];
        struct stat st;
        snprintf(path, sizeof path, "%s/s%d.h5", dir, k);
        if (!stat(path, &st)) total += (long long)st.st_size;
    }
    return total;
}

/* Store modes with full checksums: the job hashes each shard file once in all. */
static void hashed_once(hpct_ctx_t ctx, const char *dir, hpct_store_mode_t mode)
{
    char manifest[600];
    snprintf(manifest, sizeof manifest, "%s/m", dir);
    hpct_data_config_t cfg = HPCT_DATA_CONFIG_INITIALIZER;
    cfg.store = mode;
    hpct_dataset_t ds = NULL;
    hpct_data_stats_t st = {0};
    hpct_status_t s = hpct_dataset_open(ctx, manifest, &cfg, &ds);
    if (!s) s = hpct_dataset_stats(ds, &st);
    long long mine = (long long)st.hashed_bytes, all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    check(!s && all == set_file_bytes(dir),
          "%s store, full checksums: the job hashed %lld bytes for %lld bytes of shard files",
          mode == HPCT_STORE_JOB ? "job" : "node", all, set_file_bytes(dir));
    hpct_dataset_close(ds);
}

static int run_mode(hpct_ctx_t ctx, const char *dir, const char *mode)
{
    char manifest[600];
    snprintf(manifest, sizeof manifest, "%s/m", dir);
    hpct_data_config_t cfg = HPCT_DATA_CONFIG_INITIALIZER;
    cfg.checksum = HPCT_CHECKSUM_SIZE;
    const char *rpn = getenv("HPCT_RANKS_PER_NODE");
    int uniform = !rpn || world_size % atoi(rpn) == 0;
    int nodes = rpn ? (world_size + atoi(rpn) - 1) / atoi(rpn) : 1;
    int node = !strcmp(mode, "node") && uniform;
    int job = !strcmp(mode, "job") || !strcmp(mode, "env-job") || (!strcmp(mode, "node") && !node);
    int want = node ? HPCT_STORE_NODE : job ? HPCT_STORE_JOB : HPCT_STORE_OFF;
    cfg.memory_budget_bytes = !strcmp(mode, "resident") ? (size_t)1 << 30 : 0;
    cfg.store = !strcmp(mode, "job")    ? HPCT_STORE_JOB
                : !strcmp(mode, "node") ? HPCT_STORE_NODE
                                        : HPCT_STORE_AUTO;
    if (!strcmp(mode, "stream") || !strcmp(mode, "resident")) cfg.store = HPCT_STORE_OFF;
    hpct_dataset_t ds = NULL;
    long long r0 = rchar();
    hpct_status_t s = hpct_dataset_open(ctx, manifest, &cfg, &ds);
    long long r1 = rchar();
    if (!s) s = hpct_dataset_partition(ds, world_rank, world_size, BATCH);
    check(!s, "%s: open and partition (%s)", mode, s ? hpct_last_error(ctx) : "ok");
    if (s) return 1;
    check(ds->store_mode == want, "%s: store mode %d (off 1, job 2, node 3; nodes %s)", mode,
          ds->store_mode, uniform ? "equal" : "unequal");
    uint64_t row = FEATURES * 4 + 4, read = ds->bytes_read, all_read = 0;
    MPI_Allreduce(&read, &all_read, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (job || node) {
        uint64_t lo, hi;
        hpcti_store_block(SAMPLES, world_size, world_rank, &lo, &hi);
        check(all_read == SAMPLES * row,
              "%s: the job read each sample byte once at open (%llu bytes over all ranks, set "
              "%llu)",
              mode, (unsigned long long)all_read, (unsigned long long)(SAMPLES * row));
        long long delta = r1 - r0, all_delta = 0;
        MPI_Allreduce(&delta, &all_delta, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
        check(r0 < 0 ||
                  (delta >= (long long)read && all_delta < (long long)(SAMPLES * row) * 5 / 4),
              "%s: /proc/self/io rchar backs it: %lld bytes over all ranks (HDF5 metadata "
              "included) for a %llu-byte set",
              mode, all_delta, (unsigned long long)(SAMPLES * row));
        if (job)
            check(ds->resident_bytes == (hi - lo) * row &&
                      ds->resident_bytes <= (SAMPLES + world_size - 1) / world_size * row,
                  "%s: each rank holds its block of about N/W samples (%llu bytes here)", mode,
                  (unsigned long long)ds->resident_bytes);
    }
    hpct_data_stats_t stats;
    uint64_t held = hpct_dataset_stats(ds, &stats) ? 0 : stats.resident_bytes, node_held = 0;
    MPI_Allreduce(&held, &node_held, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    int one_node = !rpn;
    check((!one_node || stats.node_resident_bytes == node_held) && held == ds->resident_bytes &&
              (!node || (stats.node_resident_bytes == SAMPLES * row &&
                         node_held == (uint64_t)nodes * SAMPLES * row)) &&
              (job || node || held == (!strcmp(mode, "resident") ? SAMPLES * row : SAMPLES * 4)),
          "%s: hpct_dataset_stats: %llu sample bytes held on this rank, %llu on its node", mode,
          (unsigned long long)held, (unsigned long long)stats.node_resident_bytes);
    long epoch = 0, step = 0;
    int good = read_checked(ds, 30, &epoch, &step); /* across the epoch boundary */
    check(good, "%s: 30 batches from (0, 0) are the contract's, bit for bit", mode);
    if (job) {
        uint64_t sent = ds->exchange_bytes, all_sent = 0;
        MPI_Allreduce(&sent, &all_sent, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
        check(world_size > 1 ? all_sent > 0 && all_sent <= 32ull * BATCH * row : all_sent == 0,
              "%s: %llu sample bytes exchanged for 31 batches posted", mode,
              (unsigned long long)all_sent);
    }
    hpct_dataset_stats(ds, &stats);
    check(job || node ? stats.bytes_read == read && stats.epoch_bytes_read == 0 &&
                            (job || stats.exchange_bytes == 0)
                      : stats.bytes_read >= read,
          "%s: bytes read: %llu since open, %llu in epoch 1 (the store reads nothing after open)",
          mode, (unsigned long long)stats.bytes_read, (unsigned long long)stats.epoch_bytes_read);
    epoch = 0, step = 22; /* a cursor saved at any W: the batches depend on it alone */
    s = hpct_dataset_set_cursor(ds, epoch, step);
    good = !s && read_checked(ds, 6, &epoch, &step);
    check(good, "%s: restored at (0, 22), 6 batches across the epoch are the contract's", mode);
    hpct_dataset_close(ds);
    if (job || node) hashed_once(ctx, dir, want);
    return 0;
}

/* A flipped byte in the last shard: the ranks owning it detect it (full checksum), and the
 * open fails on every rank naming the file. */
static void corrupt(hpct_ctx_t ctx, const char *dir, hpct_store_mode_t mode)
{
    char path[600], manifest[600];
    snprintf(path, sizeof path, "%s/s3.h5", dir);
    snprintf(manifest, sizeof manifest, "%s/m", dir);
    if (world_rank == 0) {
        FILE *f = fopen(path, "r+b");
        if (f) {
            fseek(f, -100, SEEK_END);
            int c = fgetc(f);
            fseek(f, -100, SEEK_END);
            fputc(c ^ 0x5a, f);
            fclose(f);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    hpct_data_config_t cfg = HPCT_DATA_CONFIG_INITIALIZER;
    cfg.store = mode;
    hpct_dataset_t ds = NULL;
    hpct_status_t s = hpct_dataset_open(ctx, manifest, &cfg, &ds);
    check(s != HPCT_SUCCESS && !ds && strstr(hpct_last_error(ctx), "s3.h5"),
          "corrupt, %s store: the open fails on every rank naming the shard (rank %d: %s)",
          mode == HPCT_STORE_JOB ? "job" : "node", world_rank, hpct_last_error(ctx));
}

/* Each rank opens its own copy of the set (hard links in DIR/r<rank>); the last rank's copy
 * lacks s3.h5, as when staging to node-local storage failed on one node. The open fails on
 * every rank naming the file: on the others as "rank L of W could not open ..." from the
 * agreement, not a timeout (mpirun's 120 s limit would end a hang). */
static void missing_on_one(hpct_ctx_t ctx, const char *dir, hpct_store_mode_t mode)
{
    char own[600], from[700], to[700], manifest[700];
    int last = world_size - 1, bad = 0;
    snprintf(own, sizeof own, "%s/r%d", dir, world_rank);
    bad |= mkdir(own, 0777) != 0;
    const char *files[5] = {"m", "s0.h5", "s1.h5", "s2.h5", "s3.h5"};
    for (int k = 0; k < (world_rank == last ? 4 : 5); k++) {
        snprintf(from, sizeof from, "%s/%s", dir, files[k]);
        snprintf(to, sizeof to, "%s/%s", own, files[k]);
        bad |= link(from, to) != 0;
    }
    check(!bad, "missing: rank %d linked its copy of the set into %s", world_rank, own);
    snprintf(manifest, sizeof manifest, "%s/m", own);
    hpct_data_config_t cfg = HPCT_DATA_CONFIG_INITIALIZER;
    cfg.store = mode;
    cfg.memory_budget_bytes = 0; /* streaming when off */
    hpct_dataset_t ds = NULL;
    hpct_status_t s = hpct_dataset_open(ctx, manifest, &cfg, &ds);
    const char *err = hpct_last_error(ctx);
    char from_last[64];
    snprintf(from_last, sizeof from_last, "rank %d of %d", last, world_size);
    check(s != HPCT_SUCCESS && s != HPCT_ERR_TIMEOUT && !ds && strstr(err, "s3.h5") &&
              strstr(err, from_last) && hpct_last_error_shared(ctx),
          "missing, %s: s3.h5 missing on rank %d only fails the open on every rank naming it, "
          "one detail shared by all (rank %d: %s)",
          mode == HPCT_STORE_JOB ? "job store" : "streaming", last, world_rank, err);
    hpct_dataset_close(ds);
}

/* Ranks see different shard files: each rank opens its own copy of the set (hard links in
 * DIR/d<rank>), but the last rank's s3.h5 is a copy with one byte changed (a node-local
 * stage that went wrong on one node only; on one node in node-store mode with two virtual
 * nodes of 2). The open fails on every rank naming the file and the rank that saw it, not a
 * timeout and not batches of two different sets. */
static void differ_on_one(hpct_ctx_t ctx, const char *dir, hpct_store_mode_t mode)
{
    char own[600], from[700], to[700], manifest[700];
    int last = world_size - 1, bad = 0;
    snprintf(own, sizeof own, "%s/d%d", dir, world_rank);
    bad |= mkdir(own, 0777) != 0;
    const char *files[5] = {"m", "s0.h5", "s1.h5", "s2.h5", "s3.h5"};
    for (int k = 0; k < 5; k++) {
        snprintf(from, sizeof from, "%s/%s", dir, files[k]);
        snprintf(to, sizeof to, "%s/%s", own, files[k]);
        if (k < 4 || world_rank != last) {
            bad |= link(from, to) != 0;
            continue;
        }
        FILE *in = fopen(from, "rb"), *out = fopen(to, "w+b");
        bad |= !in || !out;
        char buf[4096];
        size_t n;
        while (in && out && (n = fread(buf, 1, sizeof buf, in)) > 0) bad |= fwrite(buf, 1, n, out) != n;
        if (in) fclose(in);
        if (out) {
            bad |= fseek(out, -100, SEEK_END) != 0;
            int c = fgetc(out);
            bad |= c == EOF || fseek(out, -100, SEEK_END) != 0 || fputc(c ^ 0x5a, out) == EOF;
            bad |= fclose(out) != 0;
        }
    }
    check(!bad, "differ: rank %d linked its copy of the set into %s", world_rank, own);
    MPI_Barrier(MPI_COMM_WORLD);
    snprintf(manifest, sizeof manifest, "%s/m", own);
    hpct_data_config_t cfg = HPCT_DATA_CONFIG_INITIALIZER;
    cfg.store = mode;
    hpct_dataset_t ds = NULL;
    hpct_status_t s = hpct_dataset_open(ctx, manifest, &cfg, &ds);
    if (!s) s = hpct_dataset_partition(ds, world_rank, world_size, BATCH);
    if (!s) s = hpct_dataset_next(ds, NULL, NULL);
    const char *err = hpct_last_error(ctx);
    char from_last[64];
    snprintf(from_last, sizeof from_last, "rank %d", last);
    check(s != HPCT_SUCCESS && s != HPCT_ERR_TIMEOUT && strstr(err, "s3.h5") &&
              strstr(err, from_last),
          "differ, %s store: s3.h5 different on rank %d only fails on every rank naming it "
          "and the rank (rank %d: status %d, %s)",
          mode == HPCT_STORE_JOB ? "job" : "node", last, world_rank, (int)s, err);
    hpct_dataset_close(ds);
}

/* Job store, ranks at different cursors (rank 0 at step 5, the others at 3): the exchange
 * fails on every rank naming the batches, within the deadline. */
static void mismatch(hpct_ctx_t ctx, const char *dir)
{
    char manifest[600];
    snprintf(manifest, sizeof manifest, "%s/m", dir);
    hpct_data_config_t cfg = HPCT_DATA_CONFIG_INITIALIZER;
    cfg.store = HPCT_STORE_JOB;
    hpct_dataset_t ds = NULL;
    hpct_status_t s = hpct_dataset_open(ctx, manifest, &cfg, &ds);
    if (!s) s = hpct_dataset_partition(ds, world_rank, world_size, BATCH);
    if (!s) s = hpct_dataset_set_cursor(ds, 0, world_rank == 0 ? 5 : 3);
    if (!s) s = hpct_dataset_next(ds, NULL, NULL);
    check(s != HPCT_SUCCESS && strstr(hpct_last_error(ctx), "expects"),
          "mismatch: ranks at different cursors fail the exchange on every rank (rank %d: %s)",
          world_rank, hpct_last_error(ctx));
    hpct_dataset_close(ds);
}

/* VmRSS of this process in bytes, or -1. */
static long long rss_bytes(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6)) kb = atoll(line + 6);
    if (f) fclose(f);
    return kb < 0 ? -1 : kb * 1024;
}

/* Memory: a 64 MiB set (16384 samples of 1024 float32); the growth of each rank's resident
 * set size over open + partition is about N/W in the job store and N when resident. */
static void memory(hpct_ctx_t ctx, const char *dir)
{
    enum { N = 16384, F = 1024 };
    char manifest[600];
    snprintf(manifest, sizeof manifest, "%s/big", dir);
    int bad = 0;
    if (world_rank == 0) {
        const char *files[4] = {"b0.h5", "b1.h5", "b2.h5", "b3.h5"};
        for (int k = 0; k < 4 && !bad; k++) {
            char path[600];
            snprintf(path, sizeof path, "%s/%s", dir, files[k]);
            tdu_shard_t sh = tdu_shard(N / 4, (uint64_t)k * (N / 4), F, 64);
            bad = tdu_write_shard(path, &sh);
        }
        bad = bad || tdu_write_manifest(dir, "big", 4, files, "float32", F);
    }
    MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
    check(!bad && rss_bytes() > 0, "memory: wrote a 64 MiB set; /proc/self/status readable");
    if (bad || rss_bytes() < 0) return;
    const hpct_store_mode_t modes[2] = {HPCT_STORE_JOB, HPCT_STORE_OFF};
    uint64_t row = F * 4 + 4, lo, hi;
    hpcti_store_block(N, world_size, world_rank, &lo, &hi);
    for (int m = 0; m < 2; m++) {
        hpct_data_config_t cfg = HPCT_DATA_CONFIG_INITIALIZER;
        cfg.checksum = HPCT_CHECKSUM_SIZE;
        cfg.store = modes[m];
        hpct_dataset_t ds = NULL;
        malloc_trim(0); /* freed heap pages (the writer's buffers) would hide the growth */
        long long before = rss_bytes();
        hpct_status_t s = hpct_dataset_open(ctx, manifest, &cfg, &ds);
        if (!s) s = hpct_dataset_partition(ds, world_rank, world_size, 64);
        long long grown = rss_bytes() - before;
        long long want = (long long)((m == 0 ? hi - lo : N) * row), slack = 16ll << 20;
        check(!s && grown >= want * 9 / 10 && grown <= want + slack,
              "memory, %s: the rank's resident set grew %.1f MiB at open for %.1f MiB of "
              "samples (N%s)",
              m == 0 ? "job store" : "resident", grown / 1048576.0, want / 1048576.0,
              m == 0 ? "/W" : "");
        hpct_dataset_close(ds);
    }
}

int main(int argc, char **argv)
{
    hpct_ctx_t ctx = mpi_start(NULL);
    if (argc != 3) {
        fprintf(stderr, "usage: store_prog DIR MODE\n");
        hpct_finalize(ctx);
        return 2;
    }
    check(!write_set(argv[1]), "wrote the shards");
    if (!strcmp(argv[2], "memory"))
        memory(ctx, argv[1]);
    else if (!strcmp(argv[2], "mismatch"))
        mismatch(ctx, argv[1]);
    else if (!strcmp(argv[2], "missing-stream") || !strcmp(argv[2], "missing-job"))
        missing_on_one(ctx, argv[1],
                       strcmp(argv[2], "missing-job") ? HPCT_STORE_OFF : HPCT_STORE_JOB);
    else if (!strcmp(argv[2], "differ-job") || !strcmp(argv[2], "differ-node"))
        differ_on_one(ctx, argv[1],
                      strcmp(argv[2], "differ-job") ? HPCT_STORE_NODE : HPCT_STORE_JOB);
    else if (!strcmp(argv[2], "corrupt") || !strcmp(argv[2], "corrupt-node"))
        corrupt(ctx, argv[1], strcmp(argv[2], "corrupt") ? HPCT_STORE_NODE : HPCT_STORE_JOB);
    else
        run_mode(ctx, argv[1], argv[2]);
    hpct_finalize(ctx);
    return failures ? 1 : 0;
}
