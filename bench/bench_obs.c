/* bench_obs.c: what watching a run costs (issue 11). hpct_train of a 784-256-256-10 ReLU MLP
 * (softmax CE, SGD, global batch 256, one BLAS thread per rank, no checkpoints) on synthetic
 * data, in four modes, each a fresh model from the same seed:
 *   off       no metrics file, no straggler detection, no timeline (the baseline)
 *   metrics   the metrics file at the default cadence (log_interval 50) with straggler
 *             detection (per-rank step times gathered at every report)
 *   timeline  the per-rank timeline (ring of 100 steps, rewritten every 100 steps)
 *   both      metrics and timeline
 * The modes run in interleaved rounds (off, metrics, timeline, both, off, ...) so that a
 * busy machine slows them alike; each mode's figure is its median training time over the
 * rounds (max over ranks), its fastest round, and its median CPU time (both less sensitive to
 * other load on the machine); each cost is against "off" from the same run.
 *   [mpirun -np W] bench/bench_obs [SCRATCH] [ROUNDS] [STEPS]     (defaults: /tmp 5 400) */
#include <hpctrain.h>

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "bench_util.h"

#define N_SAMPLES    16384
#define FEATURES     784
#define CLASSES      10
#define GLOBAL_BATCH 256
#define MAX_ROUNDS   32

enum { OFF, METRICS, TIMELINE, BOTH, MODES };
static const char *mode_name[MODES] = {"off", "metrics", "timeline", "both"};

static int rank, size;

static void die(hpct_ctx_t ctx, const char *what, hpct_status_t s)
{
    fprintf(stderr, "bench_obs: rank %d: %s: %s: %s\n", rank, what, hpct_strerror(s),
            ctx ? hpct_last_error(ctx) : "");
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* Rank 0 writes one shard of N_SAMPLES synthetic samples and its manifest into dir. */
static void write_data(hpct_ctx_t ctx, const char *dir, char *manifest, size_t len)
{
    char shard[1100];
    snprintf(shard, sizeof shard, "%s/obs-shard.h5", dir);
    snprintf(manifest, len, "%s/obs-manifest.txt", dir);
    if (rank != 0) return;
    float *x = filled((size_t)N_SAMPLES * FEATURES, 1.0f);
    int32_t *y = malloc(sizeof *y * N_SAMPLES);
    for (int i = 0; i < N_SAMPLES; i++) y[i] = (int32_t)((unsigned)i * 2654435761u % CLASSES);
    uint64_t xd[2] = {N_SAMPLES, FEATURES}, yd[1] = {N_SAMPLES};
    hpct_shard_writer_t w;
    hpct_manifest_t m;
    hpct_status_t s = hpct_shard_create(ctx, shard, NULL, &w);
    if (!s) s = hpct_shard_write(w, "inputs", HPCT_DTYPE_FLOAT32, 2, xd, x);
    if (!s) s = hpct_shard_write(w, "targets", HPCT_DTYPE_INT32, 1, yd, y);
    if (!s) s = hpct_shard_close(w);
    if (!s) s = hpct_manifest_create(ctx, manifest, NULL, NULL, &m);
    if (!s) s = hpct_manifest_add_shard(m, shard);
    if (!s) s = hpct_manifest_write(m);
    if (s) die(ctx, "writing the synthetic data", s);
    hpct_manifest_destroy(m);
    free(x), free(y);
}

/* CPU seconds this process has used (all its threads). */
static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One training run of `steps` steps in mode; its wall seconds (max over ranks) and *cpu its
 * CPU seconds (summed over ranks: less sensitive than wall time to other jobs on the node,
 * though ranks that poll while waiting for a descheduled peer add to it). */
static double run(hpct_ctx_t ctx, hpct_dataset_t ds, int mode, long steps, const char *dir,
                  double *cpu)
{
    hpct_model_t model;
    hpct_params_t params;
    hpct_optimizer_t opt;
    hpct_optim_config_t oc = HPCT_OPTIM_CONFIG_INITIALIZER;
    oc.lr = 0.05f, oc.momentum = 0.9f;
    hpct_status_t s = hpct_model_create(ctx, FEATURES, &model);
    if (!s) s = hpct_model_add_dense(model, 256, HPCT_ACT_RELU, HPCT_INIT_AUTO);
    if (!s) s = hpct_model_add_dense(model, 256, HPCT_ACT_RELU, HPCT_INIT_AUTO);
    if (!s) s = hpct_model_add_dense(model, CLASSES, HPCT_ACT_IDENTITY, HPCT_INIT_AUTO);
    if (!s) s = hpct_model_build(model, GLOBAL_BATCH / size);
    if (!s) s = hpct_model_params(model, &params);
    if (!s) s = hpct_optimizer_create(params, &oc, &opt);
    if (s) die(ctx, "building the model", s);
    char metrics[1024], timeline[1024];
    snprintf(metrics, sizeof metrics, "%s/obs-metrics.jsonl", dir);
    snprintf(timeline, sizeof timeline, "%s/obs-timeline", dir);
    hpct_train_config_t tc = HPCT_TRAIN_CONFIG_INITIALIZER;
    tc.global_batch = GLOBAL_BATCH, tc.epochs = 1000, tc.max_steps = steps, tc.resume = 0;
    tc.straggler_threshold = mode == METRICS || mode == BOTH ? 0.2 : 0.0;
    tc.metrics_path = mode == METRICS || mode == BOTH ? metrics : NULL;
    tc.timeline_path = mode == TIMELINE || mode == BOTH ? timeline : NULL;
    hpct_train_result_t res;
    MPI_Barrier(MPI_COMM_WORLD);
    double c0 = cpu_now();
    if ((s = hpct_train(model, opt, ds, NULL, &tc, &res))) die(ctx, "training", s);
    double wall = res.wall_s, used = cpu_now() - c0;
    MPI_Allreduce(MPI_IN_PLACE, &wall, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&used, cpu, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    hpct_optimizer_destroy(opt);
    hpct_model_destroy(model);
    return wall;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int main(int argc, char **argv)
{
    const char *scratch = argc > 1 ? argv[1] : "/tmp";
    int rounds = argc > 2 ? atoi(argv[2]) : 5;
    long steps = argc > 3 ? atol(argv[3]) : 400;
    if (rounds < 1 || rounds > MAX_ROUNDS || steps < 1) {
        fprintf(stderr, "usage: bench_obs [SCRATCH] [ROUNDS 1..%d] [STEPS]\n", MAX_ROUNDS);
        return 2;
    }
    hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
    cfg.num_threads = 1;
    hpct_ctx_t ctx;
    hpct_status_t s = hpct_init(&cfg, &ctx);
    if (s) {
        fprintf(stderr, "bench_obs: hpct_init: %s\n", hpct_strerror(s));
        return 1;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char dir[1024], manifest[1100];
    snprintf(dir, sizeof dir, "%s/hpct-bench-obs", scratch);
    if (rank == 0 && access(dir, F_OK) != 0 && mkdir(dir, 0777)) die(ctx, dir, HPCT_ERR_IO);
    write_data(ctx, dir, manifest, sizeof manifest);
    MPI_Barrier(MPI_COMM_WORLD);
    hpct_data_config_t dc = HPCT_DATA_CONFIG_INITIALIZER;
    hpct_dataset_t ds;
    if ((s = hpct_dataset_open(ctx, manifest, &dc, &ds))) die(ctx, "opening the data", s);
    double t[MODES][MAX_ROUNDS], c[MODES][MAX_ROUNDS], warm;
    run(ctx, ds, OFF, steps / 4 + 1, dir, &warm); /* warm-up: caches, BLAS buffers */
    for (int r = 0; r < rounds; r++)
        for (int m = 0; m < MODES; m++) t[m][r] = run(ctx, ds, m, steps, dir, &c[m][r]);
    if (rank == 0) {
        printf("bench_obs: %d rank(s), %ld steps of global batch %d per run, median of %d "
               "interleaved rounds\n",
               size, steps, GLOBAL_BATCH, rounds);
        double med[MODES], best[MODES], cpu[MODES];
        for (int m = 0; m < MODES; m++)
            med[m] = median(t[m], rounds), best[m] = t[m][0], cpu[m] = median(c[m], rounds);
        printf("  %-9s %9s %8s %9s %8s %9s %8s\n", "mode", "median s", "cost", "fastest", "cost",
               "CPU s", "cost");
        for (int m = 0; m < MODES; m++)
            printf("  %-9s %9.3f %7.2f%% %9.3f %7.2f%% %9.3f %7.2f%%\n", mode_name[m], med[m],
                   100.0 * (med[m] - med[OFF]) / med[OFF], best[m],
                   100.0 * (best[m] - best[OFF]) / best[OFF], cpu[m],
                   100.0 * (cpu[m] - cpu[OFF]) / cpu[OFF]);
        printf("  (median wall s over rounds, fastest round, median CPU s summed over ranks; "
               "%.3f ms per step off)\n",
               1e3 * med[OFF] / steps);
        printf("  targets: metrics <= 0.5%%, timeline <= 3%% (against off, this run)\n");
    }
    hpct_dataset_close(ds);
    hpct_finalize(ctx);
    return 0;
}
