/* bench_allreduce.c: hpct_allreduce_mean against a plain MPI_Allreduce(MPI_SUM) of the same
 * buffer, 4 KiB to 256 MiB, on the path HPCT_NODE_REDUCE selects (auto: the node's shared
 * window where it can be used) and on a second context forced to the point-to-point path
 * (HPCT_NODE_REDUCE=p2p), and 100 tensors totalling 10 MiB averaged fused
 * (hpct_params_average_grads) against one MPI_Allreduce per tensor. Both sides in one run:
 *   HPCT_RANKS_PER_NODE=2 mpirun --oversubscribe -np 4 bench/bench_allreduce [max_mib]
 * Times are the slowest rank's, median of the repetitions. HPCT_FUSION_BYTES=N sets
 * cfg.fusion_bytes for the fused case (default HPCT_CONFIG_INITIALIZER's). */
#include <hpctrain.h>

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "bench_util.h"

static int rank, size;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median over reps of the slowest rank's time of one call of fn. */
static double timed(void (*fn)(void *), void *arg, int reps)
{
    double t[64];
    fn(arg); /* warm-up */
    for (int r = 0; r < reps; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = now();
        fn(arg);
        t[r] = now() - t0;
        MPI_Allreduce(MPI_IN_PLACE, &t[r], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    return t[reps / 2];
}

struct job {
    hpct_ctx_t ctx;
    hpct_params_t params;
    float *buf;
    size_t n;
    float **tensors;
    size_t *counts;
    int num;
};

static void run_mpi(void *a)
{
    struct job *j = a;
    MPI_Allreduce(MPI_IN_PLACE, j->buf, (int)j->n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}

static void run_hpct(void *a)
{
    struct job *j = a;
    if (hpct_allreduce_mean(j->ctx, j->buf, j->n)) {
        fprintf(stderr, "rank %d: %s\n", rank, hpct_last_error(j->ctx));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

static void run_per_tensor(void *a)
{
    struct job *j = a;
    for (int i = 0; i < j->num; i++)
        MPI_Allreduce(MPI_IN_PLACE, j->tensors[i], (int)j->counts[i], MPI_FLOAT, MPI_SUM,
                      MPI_COMM_WORLD);
}

static void run_fused(void *a)
{
    struct job *j = a;
    if (hpct_params_average_grads(j->params)) MPI_Abort(MPI_COMM_WORLD, 1);
}

/* Times in us of MPI_Allreduce, hpct on ctx (selected path), hpct on p2p (forced p2p). */
static void sizes_table(hpct_ctx_t ctx, hpct_ctx_t p2p, size_t max_bytes)
{
    float *buf = malloc(max_bytes);
    for (size_t i = 0; i < max_bytes / 4; i++) buf[i] = 1e-3f * (float)(i % 101);
    if (rank == 0)
        printf("%10s %14s %12s %12s %9s %9s\n", "bytes", "MPI_Allreduce", "hpct p2p", "hpct auto",
               "p2p/MPI", "auto/MPI");
    for (size_t bytes = 4096; bytes <= max_bytes; bytes *= 4) {
        struct job j = {.ctx = ctx, .buf = buf, .n = bytes / 4}, jp = j;
        jp.ctx = p2p;
        int reps = bytes <= (1 << 20) ? 31 : bytes <= (16 << 20) ? 11 : 5;
        double tm = timed(run_mpi, &j, reps), tp = timed(run_hpct, &jp, reps);
        double th = timed(run_hpct, &j, reps);
        if (rank == 0)
            printf("%10zu %14.1f %12.1f %12.1f %8.2fx %8.2fx\n", bytes, tm * 1e6, tp * 1e6,
                   th * 1e6, tm / tp, tm / th);
        fflush(stdout);
    }
    free(buf);
}

/* 100 tensors of uneven sizes (1..10 units) totalling 10 MiB. */
static void fusion_table(hpct_ctx_t ctx)
{
    enum { NUM = 100 };
    size_t total = (size_t)10 << 18, units = 0; /* floats */
    for (int i = 0; i < NUM; i++) units += (size_t)(i % 10 + 1);
    struct job j = {.ctx = ctx, .num = NUM};
    j.tensors = calloc(NUM, sizeof *j.tensors);
    j.counts = calloc(NUM, sizeof *j.counts);
    hpct_params_create(ctx, &j.params);
    size_t sum = 0;
    for (int i = 0; i < NUM; i++) {
        j.counts[i] = i == NUM - 1 ? total - sum : total / units * (size_t)(i % 10 + 1);
        sum += j.counts[i];
        j.tensors[i] = calloc(j.counts[i], sizeof(float));
        float *param = calloc(j.counts[i], sizeof(float));
        char name[32];
        snprintf(name, sizeof name, "t%d", i);
        hpct_params_register(j.params, name, param, j.tensors[i], j.counts[i]);
    }
    double tp = timed(run_per_tensor, &j, 11), tf = timed(run_fused, &j, 11);
    if (rank == 0)
        printf("\n100 tensors, %zu bytes in all: per-tensor MPI_Allreduce %.1f us, fused hpct %.1f "
               "us, speedup %.2fx\n",
               sum * 4, tp * 1e6, tf * 1e6, tp / tf);
}

int main(int argc, char **argv)
{
    hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
    cfg.num_threads = 1;
    if (getenv("HPCT_FUSION_BYTES")) cfg.fusion_bytes = (size_t)atol(getenv("HPCT_FUSION_BYTES"));
    hpct_ctx_t ctx, p2p;
    if (hpct_init(&cfg, &ctx)) return 1;
    const char *mode = getenv("HPCT_NODE_REDUCE");
    char saved[16];
    snprintf(saved, sizeof saved, "%s", mode ? mode : "auto");
    setenv("HPCT_NODE_REDUCE", "p2p", 1);
    if (hpct_init(&cfg, &p2p)) return 1;
    setenv("HPCT_NODE_REDUCE", saved, 1);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    size_t max_mib = argc > 1 ? (size_t)atol(argv[1]) : 256;
    hpct_topology_t t = HPCT_TOPOLOGY_INITIALIZER;
    hpct_topology(ctx, &t);
    if (rank == 0)
        printf("W=%d, %d node(s) of %d, %s path, fusion buffer %zu bytes, HPCT_NODE_REDUCE=%s\n",
               size, t.num_nodes, t.local_size, t.hierarchical ? "hierarchical" : "flat",
               cfg.fusion_bytes, saved);
    sizes_table(ctx, p2p, max_mib << 20);
    fusion_table(ctx);
    hpct_finalize(p2p);
    return hpct_finalize(ctx) ? 1 : 0;
}
