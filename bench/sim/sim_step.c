/* sim_step.c: the step loop's communication of libhpctrain, run under SimGrid/SMPI (also
 * builds against a real MPI for the validation runs: make -C bench/sim real).
 *
 *   sim_step avg BYTES REPS [MPI_REPS]
 *                                  hpct_init, then REPS averages of a gradient set of BYTES
 *                                  (hpct_params_average_grads, the algorithm of
 *                                  HPCT_ALLREDUCE_ALGO), then MPI_REPS (default REPS; 0:
 *                                  none) MPI_Allreduce of the same floats (under SMPI: the
 *                                  smpi/allreduce algorithm, whose temporaries are real
 *                                  memory: about 2 BYTES a rank)
 *   sim_step step BYTES STEPS COMPUTE_S REPORT
 *                                  hpct_init, then an in-situ session (bring-your-own
 *                                  gradients, SGD) of STEPS steps over a set of BYTES, each
 *                                  step's compute replaced by COMPUTE_S seconds of simulated
 *                                  work, a progress report every REPORT steps; then the same
 *                                  session over a one-float set (the step agreement)
 *
 * Every time is simulated (MPI_Wtime under SMPI), taken on rank 0 between barriers; lines
 * are "key value" for bench/sim/run.sh. Memory per rank: the process's growth over hpct_init
 * and over the first average (all simulated ranks live in one process) divided by W, as heap
 * (mallinfo2: what was allocated) and as resident anonymous memory (what was touched). */
#include <hpctrain.h>

#include <malloc.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#ifdef HPCT_SIM /* GNUmakefile's smpicc build (SMPI's headers define no version macro) */
#include <smpi/smpi.h>
#define PAYLOAD_ALLOC(n) SMPI_SHARED_MALLOC(n) /* contents do not matter to timing */
#define PAYLOAD_FREE(p)  SMPI_SHARED_FREE(p)
#define COMPUTE(s)       smpi_execute(s)
#else
#include <time.h>
#define PAYLOAD_ALLOC(n) calloc(1, n)
#define PAYLOAD_FREE(p)  free(p)
static void COMPUTE(double s)
{
    double t0 = MPI_Wtime();
    while (MPI_Wtime() - t0 < s) {
    }
}
#endif

/* Globals are shared by every simulated rank (smpi/privatization:no): ask MPI each time. */
static int my(int what)
{
    int v;
    if (what)
        MPI_Comm_size(MPI_COMM_WORLD, &v);
    else
        MPI_Comm_rank(MPI_COMM_WORLD, &v);
    return v;
}
#define rank  my(0)
#define world my(1)

/* Heap bytes in use in this process (every simulated rank's under SMPI), on rank 0 only (the
 * only one that prints them): mallinfo2 walks the whole heap, and W ranks each walking it
 * took all of a W = 1,024 run's time. */
static double heap_bytes(void)
{
    if (rank != 0) return 0.0;
    struct mallinfo2 m = mallinfo2();
    return (double)m.uordblks + (double)m.hblkhd;
}

static void die(hpct_ctx_t ctx, const char *what, hpct_status_t s)
{
    fprintf(stderr, "rank %d: %s: %s (%s)\n", rank, what, hpct_strerror(s), hpct_last_error(ctx));
    MPI_Abort(MPI_COMM_WORLD, 2);
}

/* Resident anonymous bytes of this process (Anonymous: of /proc/self/smaps_rollup), on rank 0
 * only: memory that is really there, where mallinfo2 also counts mapped pages never touched
 * and misses SMPI's shared malloc. Under SMPI the process holds every simulated rank. */
static double anon_bytes(void)
{
    if (rank != 0) return 0.0;
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    char line[256];
    double kb = 0.0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "Anonymous: %lf kB", &kb) == 1) break;
    if (f) fclose(f);
    return kb * 1024.0;
}

/* Bytes per rank of a growth of this process's memory (under SMPI: of all W ranks). */
static double per_rank(double bytes)
{
#ifdef HPCT_SIM
    return bytes / world;
#else
    return bytes;
#endif
}

/* Seconds of this machine's clock (not the simulated one: the system call, which SMPI does
 * not intercept), and "real_s PHASE S" on stderr from rank 0: where the simulator's time goes. */
static double real_now(void)
{
    struct timespec ts;
    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void real_mark(const char *phase)
{
    static double last;
    double t = real_now();
    if (rank == 0 && last > 0.0) fprintf(stderr, "real_s %s %.1f\n", phase, t - last);
    if (rank == 0) last = t;
}

static double now_synced(void)
{
    MPI_Barrier(MPI_COMM_WORLD);
    return MPI_Wtime();
}

static hpct_ctx_t start(void)
{
    hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
    cfg.num_threads = 1;
    hpct_ctx_t ctx = NULL;
    double h0 = (MPI_Barrier(MPI_COMM_WORLD), heap_bytes()), a0 = anon_bytes();
    double t0 = now_synced();
    real_mark("start");
    hpct_status_t s = hpct_init_comm(&cfg, (int)MPI_Comm_c2f(MPI_COMM_WORLD), &ctx);
    if (s) die(ctx, "hpct_init_comm", s);
    double t1 = now_synced();
    real_mark("hpct_init");
    double h1 = heap_bytes(), a1 = anon_bytes();
    if (rank == 0) {
        printf("W %d\n", world);
        printf("init_s %.6f\n", t1 - t0);
        printf("init_heap_per_rank_bytes %.0f\n", per_rank(h1 - h0));
        printf("init_anon_per_rank_bytes %.0f\n", per_rank(a1 - a0));
    }
    return ctx;
}

/* A set of one registered buffer pair of n floats (payload memory). */
static hpct_params_t make_set(hpct_ctx_t ctx, size_t n, float **param, float **grad)
{
    hpct_params_t p;
    *param = PAYLOAD_ALLOC(n * sizeof(float));
    *grad = PAYLOAD_ALLOC(n * sizeof(float));
    hpct_status_t s = hpct_params_create(ctx, &p);
    if (!s) s = hpct_params_register(p, "w", *param, *grad, n);
    if (s) die(ctx, "make_set", s);
    return p;
}

static void run_avg(size_t bytes, int reps, int mpi_reps)
{
    hpct_ctx_t ctx = start();
    size_t n = bytes / sizeof(float);
    float *param, *grad;
    hpct_params_t p = make_set(ctx, n, &param, &grad);
    double h0 = (MPI_Barrier(MPI_COMM_WORLD), heap_bytes()), a0 = anon_bytes();
    hpct_status_t s = hpct_params_average_grads(p); /* warm-up: buffers, windows */
    if (s) die(ctx, "average", s);
    double h1 = (MPI_Barrier(MPI_COMM_WORLD), heap_bytes()), a1 = anon_bytes();
    double t0 = now_synced();
    real_mark("first average");
    for (int i = 0; i < reps && !s; i++) s = hpct_params_average_grads(p);
    if (s) die(ctx, "average", s);
    double t1 = now_synced();
    real_mark("averages");
    for (int i = 0; i < mpi_reps; i++)
        MPI_Allreduce(MPI_IN_PLACE, grad, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double t2 = now_synced();
    real_mark("MPI_Allreduce");
    if (rank == 0) {
        printf("bytes %zu\n", bytes);
        printf("avg_s %.9f\n", (t1 - t0) / reps);
        if (mpi_reps) printf("mpi_allreduce_s %.9f\n", (t2 - t1) / mpi_reps);
        printf("avg_heap_per_rank_bytes %.0f\n", per_rank(h1 - h0));
        printf("avg_anon_per_rank_bytes %.0f\n", per_rank(a1 - a0));
    }
    hpct_params_destroy(p);
    if ((s = hpct_finalize(ctx))) die(NULL, "hpct_finalize", s);
    real_mark("hpct_finalize");
    PAYLOAD_FREE(param), PAYLOAD_FREE(grad);
}

/* STEPS in-situ steps over a set of n floats; per-step simulated times into t [steps]. */
static double session(hpct_ctx_t ctx, size_t n, int steps, double compute, long report, double *t)
{
    float *param, *grad;
    hpct_params_t p = make_set(ctx, n, &param, &grad);
    hpct_optimizer_t opt;
    hpct_optim_config_t oc = HPCT_OPTIM_CONFIG_INITIALIZER;
    hpct_insitu_config_t ic = HPCT_INSITU_CONFIG_INITIALIZER;
    ic.resume = 0, ic.catch_signals = 0, ic.log_interval = report;
    hpct_insitu_t S;
    hpct_status_t s = hpct_optimizer_create(p, &oc, &opt);
    if (!s) s = hpct_insitu_create(NULL, p, opt, NULL, &ic, &S);
    if (!s) s = hpct_insitu_start(S, NULL);
    if (s) die(ctx, "session", s);
    double t0 = now_synced();
    real_mark("session start");
    for (int i = 0; i < steps && !s; i++) {
        double a = MPI_Wtime();
        COMPUTE(compute);
        s = hpct_insitu_step_grads(S, 1, 1.0f, NULL);
        t[i] = MPI_Wtime() - a - compute;
    }
    if (s) die(ctx, "step", s);
    double t1 = now_synced();
    real_mark("steps");
    if ((s = hpct_insitu_finish(S))) die(ctx, "finish", s);
    hpct_insitu_destroy(S);
    hpct_optimizer_destroy(opt);
    hpct_params_destroy(p);
    PAYLOAD_FREE(param), PAYLOAD_FREE(grad);
    return t1 - t0;
}

/* Mean of t over steps i (skipping the first, a warm-up) that are (or are not) report steps. */
static double mean_steps(const double *t, int steps, long report, int reports)
{
    double sum = 0.0;
    int k = 0;
    for (int i = 1; i < steps; i++) {
        int is_report = report > 0 && (i + 1) % report == 0;
        if (is_report != reports) continue;
        sum += t[i], k++;
    }
    return k ? sum / k : 0.0;
}

static void run_step(size_t bytes, int steps, double compute, long report)
{
    hpct_ctx_t ctx = start();
    double *t = calloc((size_t)steps, sizeof *t);
    double wall = session(ctx, bytes / sizeof(float), steps, compute, report, t);
    double plain = mean_steps(t, steps, report, 0), rep = mean_steps(t, steps, report, 1);
    double wall1 = session(ctx, 1, steps, 0.0, 0, t);
    double agree = mean_steps(t, steps, 0, 0);
    if (rank == 0) {
        printf("bytes %zu\n", bytes);
        printf("steps %d\n", steps);
        printf("compute_s %.6f\n", compute);
        printf("run_wall_s %.6f\n", wall);
        printf("step_comm_s %.9f\n", plain);
        printf("report_step_comm_s %.9f\n", rep);
        printf("tiny_step_s %.9f\n", agree);
        printf("tiny_run_wall_s %.6f\n", wall1);
    }
    free(t);
    hpct_status_t s = hpct_finalize(ctx);
    if (s) die(NULL, "hpct_finalize", s);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    if (argc >= 4 && !strcmp(argv[1], "avg"))
        run_avg((size_t)atof(argv[2]), atoi(argv[3]), argc >= 5 ? atoi(argv[4]) : atoi(argv[3]));
    else if (argc >= 6 && !strcmp(argv[1], "step"))
        run_step((size_t)atof(argv[2]), atoi(argv[3]), atof(argv[4]), atol(argv[5]));
    else if (rank == 0)
        fprintf(stderr, "usage: sim_step avg BYTES REPS [MPI_REPS] | step BYTES STEPS COMPUTE_S "
                        "REPORT\n");
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
