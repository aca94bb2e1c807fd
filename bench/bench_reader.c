/* bench_reader.c: the sharded reader against raw read(2) of the same files, in one run.
 *
 * usage: bench_reader [DIR] [GIB] [--keep] [--rounds R]
 *   Generates GIB (default 1.0) GiB of float32 samples (1024 features, int32 labels) as 8
 *   shards + manifest under DIR (default /tmp), then times, on one rank (W = 1, global
 *   batch 256, prefetch 2):
 *     raw      read(2) of every shard file, 1 MiB at a time, in manifest order
 *     seq      the reader, shuffle off, streaming (memory budget 0), prefetch thread by the
 *              default rule, then without it (prefetch_depth 0)
 *     shuffled the reader, shuffle on (training order), streaming: rows copied from the
 *              mapped files (the default), then with HPCT_STREAM_MMAP=0 (sorted, coalesced
 *              preadv), then mapped without the prefetch thread
 *     resident the reader, shuffle off and on, whole set loaded at open (budget 4 GiB)
 *   in R rounds (default 5), each round one epoch of every case with raw read(2) measured
 *   again right before each, so that load on a shared machine hits both sides of a ratio
 *   alike. Reports, per case, the median over the rounds of samples/s, MB/s and of the
 *   per-round ratio to raw, with the smallest and largest ratio. The page-cache state of the
 *   shard files (mincore) is printed before and after; nothing is dropped.
 *
 * usage: bench_reader --wait MANIFEST [STEP_MS] [BATCH] [STEPS] [DEPTH] [BUDGET_GIB]
 *   Time spent waiting in hpct_dataset_next while a stand-in training step busy-waits
 *   STEP_MS (default 10) per batch of BATCH (default 256) for STEPS (default 200) steps:
 *   the "time waiting for data" of the issue, as a percentage of step time; DEPTH and
 *   BUDGET_GIB set prefetch_depth and memory_budget_bytes (default: the initializer's).
 *
 * usage: mpirun -np W bench_reader --store DIR [GIB] [STEP_MS]
 *   (with HPCT_RANKS_PER_NODE for virtual nodes) Rank 0 writes the set as above; then, in one
 *   run: rank 0's raw read(2) of every shard (the baseline); the node store and the job store:
 *   open time, bytes read by all ranks / the set's file bytes, resident bytes per rank, an
 *   epoch of hpct_dataset_next with no compute (samples/s per rank), and the share of a
 *   STEP_MS (default 5) stand-in step spent waiting in hpct_dataset_next; and the same for
 *   per-rank streaming (HPCT_STORE_OFF, memory budget 0), the mode the store replaces. */
#include "config.h"
#include "hpctrain.h"

#include <fcntl.h>
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "bench_util.h"

#define FEATURES   1024
#define SHARDS     8
#define CHUNK_ROWS 256
#define BATCH      256
#define MAX_ROUNDS 64

static char dir[512];
static uint64_t per_shard;

static void shard_path(int k, char *buf, size_t len)
{
    snprintf(buf, len, "%s/bench-%02d.h5", dir, k);
}

/* One shard: inputs [per_shard, FEATURES] fp32 chunked by CHUNK_ROWS, targets int32. */
static int write_shard(int k, float *rows)
{
    char path[600];
    shard_path(k, path, sizeof path);
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hsize_t dims[2] = {per_shard, FEATURES}, chunk[2] = {CHUNK_ROWS, FEATURES};
    hid_t sp = H5Screate_simple(2, dims, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 2, chunk);
    hid_t d = H5Dcreate2(f, "inputs", H5T_NATIVE_FLOAT, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    hsize_t start[2] = {0, 0}, count[2] = {CHUNK_ROWS, FEATURES};
    hid_t mem = H5Screate_simple(2, count, NULL);
    int bad = f < 0 || d < 0;
    for (uint64_t r = 0; !bad && r < per_shard; r += CHUNK_ROWS) {
        for (size_t i = 0; i < (size_t)CHUNK_ROWS * FEATURES; i++)
            rows[i] = (float)((r + (uint64_t)k * per_shard) % 9973) * 1e-3f + (float)(i % 7);
        start[0] = r;
        H5Sselect_hyperslab(sp, H5S_SELECT_SET, start, NULL, count, NULL);
        bad = H5Dwrite(d, H5T_NATIVE_FLOAT, mem, sp, H5P_DEFAULT, rows) < 0;
    }
    H5Sclose(mem), H5Dclose(d), H5Sclose(sp);
    int32_t *labels = malloc(per_shard * sizeof *labels);
    for (uint64_t i = 0; i < per_shard; i++) labels[i] = (int32_t)(i % 10);
    hsize_t ldims[1] = {per_shard}, lchunk[1] = {per_shard < 65536 ? per_shard : 65536};
    sp = H5Screate_simple(1, ldims, NULL);
    H5Pset_chunk(dcpl, 1, lchunk);
    d = H5Dcreate2(f, "targets", H5T_NATIVE_INT32, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    bad |= d < 0 || H5Dwrite(d, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, labels) < 0;
    free(labels);
    H5Dclose(d), H5Sclose(sp), H5Pclose(dcpl);
    return H5Fclose(f) < 0 || bad ? -1 : 0;
}

/* The shards (written here with HDF5 directly, a chunk at a time) and their manifest (the
 * public manifest writer reads each shard's layout back and hashes it). */
static int generate(hpct_ctx_t ctx, double gib)
{
    uint64_t total = (uint64_t)(gib * 1073741824.0) / (FEATURES * 4);
    per_shard = (total / SHARDS + CHUNK_ROWS - 1) / CHUNK_ROWS * CHUNK_ROWS;
    float *rows = malloc((size_t)CHUNK_ROWS * FEATURES * sizeof *rows);
    char path[600];
    snprintf(path, sizeof path, "%s/bench.manifest", dir);
    hpct_manifest_t m = NULL;
    int rc = !rows || hpct_manifest_create(ctx, path, NULL, NULL, &m) ? -1 : 0;
    for (int k = 0; !rc && k < SHARDS; k++) {
        shard_path(k, path, sizeof path);
        if (write_shard(k, rows) || hpct_manifest_add_shard(m, path)) {
            fprintf(stderr, "bench_reader: cannot write %s %s\n", path, hpct_last_error(ctx));
            rc = -1;
        }
    }
    if (!rc && hpct_manifest_write(m)) {
        fprintf(stderr, "bench_reader: %s\n", hpct_last_error(ctx));
        rc = -1;
    }
    hpct_manifest_destroy(m);
    free(rows);
    return rc;
}

/* Percentage of the shard files' pages in the page cache. */
static double cached_percent(void)
{
    size_t in = 0, all = 0, page = (size_t)sysconf(_SC_PAGESIZE);
    for (int k = 0; k < SHARDS; k++) {
        char path[600];
        shard_path(k, path, sizeof path);
        int fd = open(path, O_RDONLY);
        struct stat st;
        if (fd < 0 || fstat(fd, &st)) continue;
        void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
        size_t pages = ((size_t)st.st_size + page - 1) / page;
        unsigned char *vec = malloc(pages);
        if (map != MAP_FAILED && vec && !mincore(map, (size_t)st.st_size, vec))
            for (size_t i = 0; i < pages; i++) in += vec[i] & 1;
        all += pages;
        free(vec);
        if (map != MAP_FAILED) munmap(map, (size_t)st.st_size);
        close(fd);
    }
    return all ? 100.0 * (double)in / (double)all : 0.0;
}

/* read(2) every shard file; returns bytes read. */
static double raw_read(void)
{
    enum { BUF = 1 << 20 };
    char *buf = malloc(BUF);
    double bytes = 0;
    for (int k = 0; k < SHARDS; k++) {
        char path[600];
        shard_path(k, path, sizeof path);
        int fd = open(path, O_RDONLY);
        ssize_t n;
        while (fd >= 0 && (n = read(fd, buf, BUF)) > 0) bytes += (double)n;
        if (fd >= 0) close(fd);
    }
    free(buf);
    return bytes;
}

typedef struct result {
    double seconds, open_seconds, samples, next_wait;
} result_t;

/* One epoch through the reader; next_wait is the time spent inside hpct_dataset_next. */
static int run_reader(hpct_ctx_t ctx, int shuffle, size_t budget, hpct_checksum_mode_t cs,
                      int depth, result_t *r)
{
    char path[600];
    snprintf(path, sizeof path, "%s/bench.manifest", dir);
    hpct_data_config_t cfg = HPCT_DATA_CONFIG_INITIALIZER;
    cfg.shuffle = shuffle;
    cfg.memory_budget_bytes = budget;
    cfg.checksum = cs;
    cfg.prefetch_depth = depth;
    hpct_dataset_t ds;
    double t0 = now();
    if (hpct_dataset_open(ctx, path, &cfg, &ds) || hpct_dataset_partition(ds, 0, 1, BATCH))
        return fprintf(stderr, "bench_reader: %s\n", hpct_last_error(ctx)), -1;
    double t1 = now();
    long steps;
    hpct_dataset_steps_per_epoch(ds, &steps);
    double sum = 0;
    for (long s = 0; s < steps; s++) {
        const float *x;
        const void *y;
        if (hpct_dataset_next(ds, &x, &y))
            return fprintf(stderr, "bench_reader: %s\n", hpct_last_error(ctx)), -1;
        sum += x[0]; /* touch the data */
    }
    double t2 = now();
    hpct_dataset_close(ds);
    *r = (result_t){t2 - t1, t1 - t0, (double)steps * BATCH, sum};
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(const double *v, int n)
{
    double t[MAX_ROUNDS];
    memcpy(t, v, (size_t)n * sizeof *t);
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

/* One case of the main benchmark: the reader's settings and its figures per round. */
typedef struct bench_case {
    const char *what;
    int shuffle, depth, preadv; /* preadv: HPCT_STREAM_MMAP=0 (sorted, coalesced preadv) */
    size_t budget;
    double sps[MAX_ROUNDS], ratio[MAX_ROUNDS], open_s;
} bench_case_t;

/* One epoch of case c and, right before it, raw read(2) of the same files: round r. */
static int measure_case(hpct_ctx_t ctx, bench_case_t *c, int r, double *raw_sps)
{
    double t0 = now();
    raw_read();
    double raw = (double)per_shard * SHARDS / (now() - t0);
    result_t res;
    if (c->preadv) setenv("HPCT_STREAM_MMAP", "0", 1);
    int bad = run_reader(ctx, c->shuffle, c->budget, HPCT_CHECKSUM_SIZE, c->depth, &res);
    unsetenv("HPCT_STREAM_MMAP");
    if (bad) return -1;
    c->sps[r] = res.samples / res.seconds;
    c->ratio[r] = c->sps[r] / raw;
    c->open_s = res.open_seconds;
    *raw_sps = raw;
    return 0;
}

static void report(const bench_case_t *c, int rounds)
{
    double lo = c->ratio[0], hi = c->ratio[0], sps = median(c->sps, rounds);
    for (int r = 1; r < rounds; r++) {
        lo = c->ratio[r] < lo ? c->ratio[r] : lo;
        hi = c->ratio[r] > hi ? c->ratio[r] : hi;
    }
    printf("%-28s %9.0f samples/s %7.0f MB/s  %5.2fx raw (%.2f-%.2f)  (open %.2f s)\n", c->what,
           sps, sps * (FEATURES * 4 + 4) / 1e6, median(c->ratio, rounds), lo, hi, c->open_s);
}

/* Busy-wait ms milliseconds (a stand-in for the forward/backward pass). */
static void spin(double ms)
{
    double until = now() + ms * 1e-3;
    while (now() < until) {
    }
}

static int wait_bench(const char *manifest, double step_ms, int batch, long steps, int depth,
                      double budget_gib)
{
    hpct_ctx_t ctx;
    hpct_dataset_t ds;
    hpct_data_config_t cfg = HPCT_DATA_CONFIG_INITIALIZER;
    cfg.checksum = HPCT_CHECKSUM_SIZE;
    if (depth >= 0) cfg.prefetch_depth = depth;
    if (budget_gib >= 0) cfg.memory_budget_bytes = (size_t)(budget_gib * 1073741824.0);
    if (hpct_ctx_create(NULL, &ctx)) return 1;
    if (hpct_dataset_open(ctx, manifest, &cfg, &ds) || hpct_dataset_partition(ds, 0, 1, batch))
        return fprintf(stderr, "bench_reader: %s\n", hpct_last_error(ctx)), 1;
    double waited = 0, t0 = now();
    for (long s = 0; s < steps; s++) {
        const float *x;
        const void *y;
        double t = now();
        if (hpct_dataset_next(ds, &x, &y))
            return fprintf(stderr, "bench_reader: %s\n", hpct_last_error(ctx)), 1;
        waited += now() - t;
        spin(step_ms);
    }
    double total = now() - t0;
    printf("%ld steps of %.1f ms, batch %d, prefetch %d, budget %.2f GiB: waited %.3f ms per step "
           "in hpct_dataset_next = %.2f%% of step time\n",
           steps, step_ms, batch, cfg.prefetch_depth,
           (double)cfg.memory_budget_bytes / 1073741824.0, 1e3 * waited / (double)steps,
           100.0 * waited / total);
    hpct_dataset_close(ds);
    hpct_ctx_destroy(ctx);
    return 0;
}

/* Bytes of the shard files. */
static double set_file_bytes(void)
{
    double total = 0;
    for (int k = 0; k < SHARDS; k++) {
        char path[600];
        struct stat st;
        shard_path(k, path, sizeof path);
        if (!stat(path, &st)) total += (double)st.st_size;
    }
    return total;
}

/* One mode of the store benchmark at this world size; rank 0 prints. */
static int store_mode_run(hpct_ctx_t ctx, int rank, int world, hpct_store_mode_t mode,
                          double step_ms, double raw_sps, double file_bytes)
{
    char path[600];
    snprintf(path, sizeof path, "%s/bench.manifest", dir);
    hpct_data_config_t cfg = HPCT_DATA_CONFIG_INITIALIZER;
    cfg.checksum = HPCT_CHECKSUM_SIZE;
    cfg.store = mode;
    cfg.memory_budget_bytes = 0; /* OFF: stream; JOB: the store holds its share regardless */
    hpct_dataset_t ds;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now();
    if (hpct_dataset_open(ctx, path, &cfg, &ds) || hpct_dataset_partition(ds, rank, world, BATCH))
        return fprintf(stderr, "bench_reader: rank %d: %s\n", rank, hpct_last_error(ctx)), -1;
    double open_s = now() - t0;
    long steps;
    hpct_dataset_steps_per_epoch(ds, &steps);
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = now();
    for (long s = 0; s < steps; s++)
        if (hpct_dataset_next(ds, NULL, NULL))
            return fprintf(stderr, "bench_reader: %s\n", hpct_last_error(ctx)), -1;
    double epoch_s = now() - t0, waited = 0;
    long wsteps = steps < 200 ? steps : 200;
    t0 = now();
    for (long s = 0; s < wsteps; s++) {
        double t = now();
        if (hpct_dataset_next(ds, NULL, NULL))
            return fprintf(stderr, "bench_reader: %s\n", hpct_last_error(ctx)), -1;
        waited += now() - t;
        spin(step_ms);
    }
    double wait_share = waited / (now() - t0);
    hpct_data_stats_t st;
    hpct_dataset_stats(ds, &st);
    double mine[4] = {(double)st.bytes_read, (double)st.exchange_bytes, open_s, wait_share};
    double sum[4], max[4];
    MPI_Reduce(mine, sum, 4, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(mine, max, 4, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    double sps = (double)steps * (BATCH / world) / epoch_s, min_sps = 0;
    MPI_Reduce(&sps, &min_sps, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        const char *name = mode == HPCT_STORE_JOB    ? "job store"
                           : mode == HPCT_STORE_NODE ? "node store"
                                                     : "streaming, each rank";
        printf("%-21s open %.2f s (slowest rank); read %.0f MB by all ranks = %.2fx the set's "
               "file bytes; rank 0 holds %.0f MB of samples (node %.0f MB)\n",
               name, max[2], sum[0] / 1e6, sum[0] / file_bytes, (double)st.resident_bytes / 1e6,
               (double)st.node_resident_bytes / 1e6);
        printf("%-21s epoch, no compute: %.0f samples/s per rank (slowest) = %.2fx raw; sent "
               "%.0f MB in all; a %.1f ms step waits %.2f%% (worst rank %.2f%%)\n",
               "", min_sps, min_sps / raw_sps, sum[1] / 1e6, step_ms, 100.0 * sum[3] / world,
               100.0 * max[3]);
    }
    hpct_dataset_close(ds);
    return 0;
}

/* The job store at W ranks against raw read(2) and per-rank streaming, in one run. */
static int store_bench(int argc, char **argv)
{
    double gib = argc > 3 ? atof(argv[3]) : 0.5, step_ms = argc > 4 ? atof(argv[4]) : 5.0;
    hpct_ctx_t ctx;
    if (hpct_init(NULL, &ctx)) return 1;
    hpct_topology_t topo = HPCT_TOPOLOGY_INITIALIZER;
    hpct_topology(ctx, &topo);
    snprintf(dir, sizeof dir, "%s/hpct-bench-store", argv[2]);
    int bad = 0;
    double raw_sps = 0, file_bytes = 0;
    if (topo.rank == 0) {
        mkdir(dir, 0777);
        bad = generate(ctx, gib);
        file_bytes = set_file_bytes();
        double t0 = now(), bytes = raw_read(), raw_s = now() - t0;
        raw_sps = (double)per_shard * SHARDS / raw_s;
        printf("W=%d on %d nodes, %.2f GiB set (%.0f MB of files); rank 0 raw read(2), 1 MiB: "
               "%.0f samples/s, %.0f MB/s\n",
               topo.size, topo.num_nodes, gib, file_bytes / 1e6, raw_sps, bytes / raw_s / 1e6);
    }
    MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Bcast(&raw_sps, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Bcast(&file_bytes, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (!bad)
        bad =
            store_mode_run(ctx, topo.rank, topo.size, HPCT_STORE_NODE, step_ms, raw_sps,
                           file_bytes) ||
            store_mode_run(ctx, topo.rank, topo.size, HPCT_STORE_JOB, step_ms, raw_sps,
                           file_bytes) ||
            store_mode_run(ctx, topo.rank, topo.size, HPCT_STORE_OFF, step_ms, raw_sps, file_bytes);
    if (topo.rank == 0)
        for (int k = 0; k < SHARDS; k++) {
            char path[600];
            shard_path(k, path, sizeof path);
            unlink(path);
        }
    if (topo.rank == 0) {
        char path[600];
        snprintf(path, sizeof path, "%s/bench.manifest", dir);
        unlink(path);
        rmdir(dir);
    }
    hpct_finalize(ctx);
    return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && !strcmp(argv[1], "--store")) return store_bench(argc, argv);
    if (argc >= 3 && !strcmp(argv[1], "--wait"))
        return wait_bench(argv[2], argc > 3 ? atof(argv[3]) : 10.0, argc > 4 ? atoi(argv[4]) : 256,
                          argc > 5 ? atol(argv[5]) : 200, argc > 6 ? atoi(argv[6]) : -1,
                          argc > 7 ? atof(argv[7]) : -1.0);
    double gib = 1.0;
    int keep = 0, pos = 0, rounds = 5;
    snprintf(dir, sizeof dir, "/tmp");
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--keep"))
            keep = 1;
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (pos++ == 0)
            snprintf(dir, sizeof dir, "%s", argv[i]);
        else
            gib = atof(argv[i]);
    }
    rounds = rounds < 1 ? 1 : rounds > MAX_ROUNDS / 8 ? MAX_ROUNDS / 8 : rounds;
    snprintf(dir + strlen(dir), sizeof dir - strlen(dir), "/hpct-bench-reader");
    mkdir(dir, 0777);
    hpct_ctx_t ctx;
    if (hpct_ctx_create(NULL, &ctx)) return 1;
    double t0 = now();
    if (generate(ctx, gib)) return 1;
    printf("generated %d shards x %llu samples x %d float32 (%.2f GiB of inputs) in %s in %.1f s\n",
           SHARDS, (unsigned long long)per_shard, FEATURES,
           (double)per_shard * SHARDS * FEATURES * 4 / 1073741824.0, dir, now() - t0);
    printf("page cache before: %.0f%% of shard bytes resident\n", cached_percent());
    const size_t stream = 0, resident = (size_t)4 << 30;
    bench_case_t cases[] = {
        {"reader sequential, stream", 0, 2, 0, stream, {0}, {0}, 0},
        {"  same, no prefetch thread", 0, 0, 0, stream, {0}, {0}, 0},
        {"reader shuffled, stream", 1, 2, 0, stream, {0}, {0}, 0},
        {"  same, preadv (no mmap)", 1, 2, 1, stream, {0}, {0}, 0},
        {"  same, no prefetch thread", 1, 0, 0, stream, {0}, {0}, 0},
        {"reader sequential, resident", 0, 2, 0, resident, {0}, {0}, 0},
        {"reader shuffled, resident", 1, 2, 0, resident, {0}, {0}, 0},
    };
    enum { NCASES = sizeof cases / sizeof cases[0] };
    _Static_assert(NCASES * (MAX_ROUNDS / 8) <= MAX_ROUNDS, "rounds are capped at MAX_ROUNDS / 8");
    double raw[NCASES * MAX_ROUNDS];
    for (int r = 0; r < rounds; r++)
        for (int c = 0; c < NCASES; c++)
            if (measure_case(ctx, &cases[c], r, &raw[r * NCASES + c])) return 1;
    double raw_sps = median(raw, rounds * NCASES); /* rounds * NCASES <= MAX_ROUNDS */
    printf("%d rounds, medians (ratio: per round against raw read(2) measured just before; "
           "smallest-largest)\n",
           rounds);
    printf("%-28s %9.0f samples/s %7.0f MB/s  1.00x raw\n", "raw read(2), 1 MiB", raw_sps,
           raw_sps * (FEATURES * 4 + 4) / 1e6);
    for (int c = 0; c < NCASES; c++) report(&cases[c], rounds);
    result_t r;
    if (run_reader(ctx, 1, stream, HPCT_CHECKSUM_FULL, 2, &r)) return 1;
    printf("open with full checksum verification: %.2f s (%.0f MB/s)\n", r.open_seconds,
           set_file_bytes() / r.open_seconds / 1e6);
    printf("page cache after: %.0f%%\n", cached_percent());
    hpct_ctx_destroy(ctx);
    if (!keep) {
        for (int k = 0; k < SHARDS; k++) {
            char path[600];
            shard_path(k, path, sizeof path);
            unlink(path);
        }
        char path[600];
        snprintf(path, sizeof path, "%s/bench.manifest", dir);
        unlink(path);
        rmdir(dir);
    }
    return 0;
}
