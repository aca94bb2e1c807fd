/* bench_obs.c: what watching a run costs (issue 11). hpct_train of a 784-256-256-10 ReLU MLP
 * (softmax CE, SGD, global batch 256, one BLAS thread per rank, no checkpoints; MODEL "tiny":
 * 16-16-16-4, global batch 32) on synthetic data, in the modes asked for (MODES, comma-separated;
 * "off" is the baseline and must be one): off       no metrics file, no straggler detection, no
 * timeline metrics   the metrics file at the default cadence (log_interval 50) with straggler
 *             detection (per-rank step times gathered at every report)
 *   timeline  the per-rank timeline (ring of 100 steps, rewritten every 100 steps)
 *   both      metrics and timeline
 * Each mode runs once per round, a fresh model from the same seed and fresh output files; the
 * order of the modes turns by one each round, so no mode always follows the same one. A busy
 * machine slows the runs of one round alike, so each cost is taken per round against "off"
 * of the same round (paired), and the table gives the median of those paired costs with
 * their quartiles and their whole range (min..max), the median time of each mode, and in how
 * many rounds the mode was slower than "off". Two figures per mode: the training time
 * (hpct_train's wall time, the max over ranks) and each rank's CPU time (CLOCK_PROCESS_
 * CPUTIME_ID around hpct_train: what the rank itself spent, less sensitive to other jobs than
 * wall time, though a rank that polls while it waits for a descheduled peer adds to it).
 * The load average (/proc/loadavg) at the start and the end says how quiet the machine was.
 * Each cost is also given in microseconds per step (median of the paired differences over
 * the steps of a run): with MODEL "tiny" (16-16-16-4, global batch 32: steps of tens of
 * microseconds) that absolute figure stands far above the noise, and divided by the step
 * time of a real run it gives that run's share.
 *   [mpirun -np W] bench/bench_obs [SCRATCH] [ROUNDS] [STEPS] [MODES] [MODEL]
 *   (defaults: /tmp 15 400 off,metrics,timeline mlp) */
#include <hpctrain.h>

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "bench_util.h"

#define N_SAMPLES  16384
#define MAX_ROUNDS 200
#define MAX_WORLD  1024

enum { OFF, METRICS, TIMELINE, BOTH, MODES };
static const char *mode_name[MODES] = {"off", "metrics", "timeline", "both"};

static int rank, size;
/* The model trained: "mlp" (the run to judge the targets on) or "tiny" (a step of a few
 * microseconds, so that what watching adds per step shows in absolute terms) */
static struct shape {
    const char *name;
    int features, hidden, classes, global_batch;
} shape = {"mlp", 784, 256, 10, 256};
static const struct shape tiny = {"tiny", 16, 16, 4, 32};
static int nmodes, modes[MODES]; /* the modes asked for; modes[0] is OFF */

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
    snprintf(shard, sizeof shard, "%s/obs-%s-shard.h5", dir, shape.name);
    snprintf(manifest, len, "%s/obs-%s-manifest.txt", dir, shape.name);
    if (rank != 0) return;
    float *x = filled((size_t)N_SAMPLES * shape.features, 1.0f);
    int32_t *y = malloc(sizeof *y * N_SAMPLES);
    for (int i = 0; i < N_SAMPLES; i++)
        y[i] = (int32_t)((unsigned)i * 2654435761u % (unsigned)shape.classes);
    uint64_t xd[2] = {N_SAMPLES, (uint64_t)shape.features}, yd[1] = {N_SAMPLES};
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

/* Remove what an earlier run left (each run starts without its files). */
static void remove_outputs(const char *metrics, const char *timeline)
{
    char path[1100];
    if (rank == 0) unlink(metrics);
    snprintf(path, sizeof path, "%s-rank%d.json", timeline, rank);
    unlink(path);
}

/* One training run of `steps` steps in mode; its wall seconds (max over ranks), and each
 * rank's CPU seconds into cpu [size] on rank 0. */
static double run(hpct_ctx_t ctx, hpct_dataset_t ds, int mode, long steps, const char *dir,
                  double *cpu)
{
    hpct_model_t model;
    hpct_params_t params;
    hpct_optimizer_t opt;
    hpct_optim_config_t oc = HPCT_OPTIM_CONFIG_INITIALIZER;
    oc.lr = 0.05f, oc.momentum = 0.9f;
    hpct_status_t s = hpct_model_create(ctx, shape.features, &model);
    if (!s) s = hpct_model_add_dense(model, shape.hidden, HPCT_ACT_RELU, HPCT_INIT_AUTO);
    if (!s) s = hpct_model_add_dense(model, shape.hidden, HPCT_ACT_RELU, HPCT_INIT_AUTO);
    if (!s) s = hpct_model_add_dense(model, shape.classes, HPCT_ACT_IDENTITY, HPCT_INIT_AUTO);
    if (!s) s = hpct_model_build(model, shape.global_batch / size);
    if (!s) s = hpct_model_params(model, &params);
    if (!s) s = hpct_optimizer_create(params, &oc, &opt);
    if (s) die(ctx, "building the model", s);
    char metrics[1024], timeline[1024];
    snprintf(metrics, sizeof metrics, "%s/obs-metrics.jsonl", dir);
    snprintf(timeline, sizeof timeline, "%s/obs-timeline", dir);
    remove_outputs(metrics, timeline);
    hpct_train_config_t tc = HPCT_TRAIN_CONFIG_INITIALIZER;
    tc.global_batch = shape.global_batch, tc.epochs = 1000, tc.max_steps = steps, tc.resume = 0;
    tc.straggler_threshold = mode == METRICS || mode == BOTH ? 0.2 : 0.0;
    tc.metrics_path = mode == METRICS || mode == BOTH ? metrics : NULL;
    tc.timeline_path = mode == TIMELINE || mode == BOTH ? timeline : NULL;
    hpct_train_result_t res;
    MPI_Barrier(MPI_COMM_WORLD);
    double c0 = cpu_now();
    if ((s = hpct_train(model, opt, ds, NULL, &tc, &res))) die(ctx, "training", s);
    double wall = res.wall_s, used = cpu_now() - c0;
    MPI_Allreduce(MPI_IN_PLACE, &wall, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Gather(&used, 1, MPI_DOUBLE, cpu, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    hpct_optimizer_destroy(opt);
    hpct_model_destroy(model);
    return wall;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The q-quantile (0..1) of v [n], sorted in place (linear between neighbours). */
static double quantile(double *v, int n, double q)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    double at = q * (n - 1);
    int i = (int)at;
    return i + 1 < n ? v[i] + (at - i) * (v[i + 1] - v[i]) : v[n - 1];
}

/* The three load averages, or -1 where /proc/loadavg cannot be read. */
static void loadavg(double l[3])
{
    l[0] = l[1] = l[2] = -1.0;
    FILE *f = fopen("/proc/loadavg", "r");
    if (!f) return;
    if (fscanf(f, "%lf %lf %lf", &l[0], &l[1], &l[2]) != 3) l[0] = l[1] = l[2] = -1.0;
    fclose(f);
}

/* One table: x [mode][round] seconds of runs of `steps` steps; each mode's median and its cost
 * against OFF, paired by round: median of the per-round costs (also in microseconds per step),
 * their quartiles and min..max, and the rounds slower than off. */
static void table(const char *what, double x[MODES][MAX_ROUNDS], int rounds, long steps)
{
    printf("  %s\n", what);
    printf("    %-9s %9s %9s %8s %19s %19s %7s\n", "mode", "median s", "cost", "us/step",
           "quartiles of cost", "min..max of cost", "slower");
    for (int k = 0; k < nmodes; k++) {
        int m = modes[k];
        double v[MAX_ROUNDS], d[MAX_ROUNDS], us[MAX_ROUNDS];
        int slower = 0;
        for (int r = 0; r < rounds; r++) {
            v[r] = x[m][r];
            d[r] = 100.0 * (x[m][r] - x[OFF][r]) / x[OFF][r];
            us[r] = 1e6 * (x[m][r] - x[OFF][r]) / (double)steps;
            slower += x[m][r] > x[OFF][r];
        }
        double med = quantile(v, rounds, 0.5);
        if (m == OFF) {
            printf("    %-9s %9.4f\n", mode_name[m], med);
            continue;
        }
        double q1 = quantile(d, rounds, 0.25), q2 = quantile(d, rounds, 0.5);
        double q3 = quantile(d, rounds, 0.75);
        char quart[40], range[40]; /* d is sorted now */
        snprintf(quart, sizeof quart, "%+.2f..%+.2f%%", q1, q3);
        snprintf(range, sizeof range, "%+.2f..%+.2f%%", d[0], d[rounds - 1]);
        printf("    %-9s %9.4f %+8.2f%% %+8.2f %19s %19s %3d/%-3d\n", mode_name[m], med, q2,
               quantile(us, rounds, 0.5), quart, range, slower, rounds);
    }
}

/* MODES "off,metrics,..." into modes[] (off first); 0 when it names an unknown mode or lacks off.
 */
static int parse_modes(const char *list)
{
    int has_off = 0;
    nmodes = 0;
    modes[nmodes++] = OFF;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        int m = 0;
        while (m < MODES && strcmp(w, mode_name[m])) m++;
        if (m == MODES) return 0;
        if (m == OFF) {
            has_off = 1;
            continue;
        }
        for (int k = 0; k < nmodes; k++)
            if (modes[k] == m) return 0;
        modes[nmodes++] = m;
    }
    return has_off;
}

int main(int argc, char **argv)
{
    const char *scratch = argc > 1 ? argv[1] : "/tmp";
    int rounds = argc > 2 ? atoi(argv[2]) : 15;
    long steps = argc > 3 ? atol(argv[3]) : 400;
    const char *list = argc > 4 ? argv[4] : "off,metrics,timeline";
    const char *model = argc > 5 ? argv[5] : "mlp";
    if (!strcmp(model, "tiny")) shape = tiny;
    if (rounds < 1 || rounds > MAX_ROUNDS || steps < 1 || !parse_modes(list) ||
        strcmp(model, shape.name)) {
        fprintf(stderr,
                "usage: bench_obs [SCRATCH] [ROUNDS 1..%d] [STEPS] [MODES: off and any of "
                "metrics,timeline,both, comma-separated] [MODEL: mlp or tiny]\n",
                MAX_ROUNDS);
        return 2;
    }
    double load0[3], load1[3];
    loadavg(load0);
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
    if (size > MAX_WORLD)
        die(ctx, "more ranks than this benchmark tabulates", HPCT_ERR_INVALID_ARG);
    char dir[1024], manifest[1100];
    snprintf(dir, sizeof dir, "%s/hpct-bench-obs", scratch);
    if (rank == 0 && access(dir, F_OK) != 0 && mkdir(dir, 0777)) die(ctx, dir, HPCT_ERR_IO);
    write_data(ctx, dir, manifest, sizeof manifest);
    MPI_Barrier(MPI_COMM_WORLD);
    hpct_data_config_t dc = HPCT_DATA_CONFIG_INITIALIZER;
    hpct_dataset_t ds;
    if ((s = hpct_dataset_open(ctx, manifest, &dc, &ds))) die(ctx, "opening the data", s);
    static double t[MODES][MAX_ROUNDS], c[MODES][MAX_ROUNDS][MAX_WORLD];
    double warm[MAX_WORLD];
    for (int k = 0; k < nmodes; k++) /* warm-up: caches, BLAS buffers, first files */
        run(ctx, ds, modes[k], steps / 4 + 1, dir, warm);
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < nmodes; k++) {
            int m = modes[(k + r) % nmodes];
            t[m][r] = run(ctx, ds, m, steps, dir, c[m][r]);
        }
    loadavg(load1);
    if (rank == 0) {
        printf("bench_obs: %d rank(s), model %s (%d-%d-%d-%d), %ld steps of global batch %d per "
               "run, %d rounds of %d modes (order turned each round); load average %.2f at the "
               "start, %.2f at the end\n",
               size, shape.name, shape.features, shape.hidden, shape.hidden, shape.classes, steps,
               shape.global_batch, rounds, nmodes, load0[0], load1[0]);
        table("training time (max over ranks); cost = this mode / off of the same round - 1", t,
              rounds, steps);
        static double x[MODES][MAX_ROUNDS];
        for (int q = 0; q < size && q < 8; q++) {
            for (int m = 0; m < MODES; m++)
                for (int r = 0; r < rounds; r++) x[m][r] = c[m][r][q];
            char what[64];
            snprintf(what, sizeof what, "CPU time of rank %d", q);
            table(what, x, rounds, steps);
        }
        if (size > 8) printf("  (CPU times of ranks 8 and above not shown)\n");
        double v[MAX_ROUNDS];
        for (int r = 0; r < rounds; r++) v[r] = t[OFF][r];
        printf("  %.3f ms per step off (median); targets: metrics <= 0.5%%, timeline <= 3%% "
               "(median cost)\n",
               1e3 * quantile(v, rounds, 0.5) / steps);
    }
    hpct_dataset_close(ds);
    hpct_finalize(ctx);
    return 0;
}
