/* dist_prog.c: the multi-rank checks that t/test_dist_*.sh run under mpirun.
 * Every check is agreed over all ranks (logical AND); rank 0 prints "PASS desc" or
 * "FAIL desc" lines and every rank exits 1 when any check failed.
 *   dist_prog topo SOURCE NODES LOCAL_SIZE CROSS_SIZE HIER
 *   dist_prog allreduce        sizes 0, 1, odd, 32 MiB; bf16/fp16; subset communicator
 *   dist_prog replicas         broadcast, 100 bit-identical steps, perturbation, batch split
 *   dist_prog curve FILE       training loss curve of a fixed global problem into FILE
 *   dist_prog hang SECONDS PIDFILE   the last rank SIGSTOPs itself; the others time out
 *   dist_prog nodewin          the path HPCT_NODE_REDUCE selects against the p2p path: bits
 *   dist_prog nodewin_hang SECONDS PIDFILE   the last rank stops inside the node exchange
 *   dist_prog algo             each HPCT_ALLREDUCE_ALGO (forced, a table, the probe): exact
 *                              means, the same bits everywhere; malformed values refused;
 *                              HPCT_VECTOR_ISA differing between ranks: the same bits
 *   dist_prog opfail SECONDS   a reduction fails midway on rank 1 (test hook)
 *   dist_prog badstep DIR      one rank's bad batch ends the step on every rank at once
 *   dist_prog lateterm DIR     a signal caught on the last rank stops hpct_train everywhere;
 *                              a late SIGTERM after hpct_signals_uninstall is ignored
 *   dist_prog grads WINDOW [ALGO]   hpct_alloc_grads buffers averaged in place (WINDOW 1: the
 *                              node window is set up; ALGO: HPCT_ALLREDUCE_ALGO, shm unless set)
 *   dist_prog grads_hang SECONDS PIDFILE   the last rank stops inside an in-place average */
#include "hpctrain.h"
#include "mpi_prog.h"
#include "data_util.h"

#include <math.h>
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static const char *source_names[] = {"single", "pmix", "openmpi-env", "slurm-env", "override"};

static int run_topo(char **argv)
{
    hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
    cfg.log_level = HPCT_LOG_INFO;
    hpct_ctx_t ctx = mpi_start(&cfg);
    hpct_topology_t t = HPCT_TOPOLOGY_INITIALIZER;
    check(hpct_topology(ctx, &t) == HPCT_SUCCESS, "hpct_topology succeeds");
    check(strcmp(source_names[t.source], argv[2]) == 0, "source is %s (rank 0 got %s)", argv[2],
          source_names[t.source]);
    check(t.rank == world_rank && t.size == world_size, "rank and size match MPI_COMM_WORLD");
    check(t.num_nodes == atoi(argv[3]), "%s nodes (rank 0 sees %d)", argv[3], t.num_nodes);
    int want_local = atoi(argv[4]);
    check(want_local < 0 || t.node_comm_size == want_local,
          "node communicator size %d (rank 0 sees %d)", want_local, t.node_comm_size);
    check(t.local_size == t.node_comm_size && t.local_rank >= 0 && t.local_rank < t.local_size,
          "local rank inside the node");
    int want_cross = atoi(argv[5]);
    check(want_cross < 0 || t.cross_comm_size == want_cross,
          "cross-node communicator size %d (rank 0 sees %d)", want_cross, t.cross_comm_size);
    check(t.hierarchical == atoi(argv[6]), "hierarchical path %s (rank 0: %d)", argv[6],
          t.hierarchical);
    check(t.hostname[0] && t.job_id[0], "hostname '%s' and job id '%s' are set", t.hostname,
          t.job_id);
    /* node ids: a rank's node id must agree with every rank sharing its node communicator */
    int ids[2] = {t.node_id, -t.node_id};
    MPI_Allreduce(MPI_IN_PLACE, ids, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    check(-ids[1] == 0 && ids[0] == t.num_nodes - 1, "node ids span [0, %d)", t.num_nodes);
    return hpct_finalize(ctx) == HPCT_SUCCESS && !failures ? 0 : 1;
}

/* Mean over ranks of (rank + 1) * (i % 13 + 1) is (i % 13 + 1) (W + 1) / 2. */
static void fill(float *x, size_t n, int rank)
{
    for (size_t i = 0; i < n; i++) x[i] = (float)((rank + 1) * (int)(i % 13 + 1));
}

static double max_rel_error(const float *x, size_t n, int size)
{
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double want = (double)(i % 13 + 1) * (size + 1) / 2.0;
        double e = fabs(x[i] - want) / want;
        worst = e > worst ? e : worst;
    }
    return worst;
}

/* 1 when x [n] is bitwise the same on every rank of comm. */
static int identical(const float *x, size_t n, MPI_Comm comm)
{
    /* FNV-1a over the bits, two floats (one 64-bit word) at a time */
    unsigned long long h = 1469598103934665603ull, w;
    size_t i = 0;
    for (; i + 2 <= n; i += 2) memcpy(&w, x + i, sizeof w), h = (h ^ w) * 1099511628211ull;
    if (i < n) {
        uint32_t last;
        memcpy(&last, x + i, sizeof last);
        h = (h ^ last) * 1099511628211ull;
    }
    unsigned long long lo = h, hi = h;
    MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, comm);
    MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, comm);
    return lo == hi;
}

/* The largest size the cases average: 16 MiB + 12 bytes, past the timed probe's largest class
 * (16 MiB: lib/comm/avg/algo.c) and many window chunks at any fusion size, with a ragged
 * last chunk. */
#define BIG_FLOATS (((size_t)4 << 20) + 3)

/* Scratch buffer slot (0 or 1) of at least n floats, kept and reused for the program's life:
 * sizes up to BIG_FLOATS follow each other, and fresh pages for each (faulted in) were most
 * of these programs' time in a VM. */
static float *scratch(int slot, size_t n)
{
    static float *buf[2];
    static size_t cap[2];
    if (n > cap[slot]) {
        free(buf[slot]);
        buf[slot] = malloc(n * sizeof(float));
        cap[slot] = buf[slot] ? n : 0;
    }
    return buf[slot];
}

static void allreduce_sizes(hpct_ctx_t ctx, const char *label, double tol)
{
    static const size_t sizes[] = {0, 1, 2, 7, 1001, 65537, BIG_FLOATS};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        size_t n = sizes[k];
        if (tol > 1e-5 && n > 100000) continue; /* reduced precision: small sizes are enough */
        float *x = scratch(0, n ? n : 1);
        fill(x, n, world_rank);
        hpct_status_t s = hpct_allreduce_mean(ctx, n ? x : NULL, n);
        check(s == HPCT_SUCCESS, "%s: allreduce of %zu floats succeeds (%s)", label, n,
              hpct_last_error(ctx));
        double worst = max_rel_error(x, n, world_size);
        check(worst <= tol, "%s: %zu floats: mean within %g (worst %g)", label, n, tol, worst);
        check(identical(x, n, MPI_COMM_WORLD), "%s: %zu floats: bit-identical on every rank", label,
              n);
    }
}

/* Random values against MPI_Allreduce(MPI_SUM) / size. */
static void allreduce_random(hpct_ctx_t ctx)
{
    size_t n = 100003;
    float *x = malloc(n * sizeof *x), *ref = malloc(n * sizeof *ref);
    srand(17 + (unsigned)world_rank);
    for (size_t i = 0; i < n; i++) x[i] = ref[i] = (float)rand() / RAND_MAX - 0.5f;
    MPI_Allreduce(MPI_IN_PLACE, ref, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    float *dev = malloc(n * sizeof *dev); /* the cpu backend's "device" memory is host memory */
    memcpy(dev, x, n * sizeof *dev);
    hpct_allreduce_mean(ctx, x, n);
    double worst = 0;
    for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs(x[i] - ref[i] / world_size));
    check(worst <= 1e-6, "random fp32 values agree with MPI_Allreduce / W within 1e-6 (worst %g)",
          worst);
    hpct_status_t s = hpct_allreduce_mean_device(ctx, dev, n);
    check(s == HPCT_SUCCESS && !memcmp(dev, x, n * sizeof *dev),
          "hpct_allreduce_mean_device on the cpu backend: the same bits as hpct_allreduce_mean");
    long ops0 = 0, ops1 = 0;
    hpct_comm_stats(ctx, NULL, &ops0);
    s = hpct_allreduce_mean_device(ctx, NULL, 0);
    hpct_comm_stats(ctx, NULL, &ops1);
    check(s == HPCT_SUCCESS && ops1 == ops0 + 1,
          "hpct_allreduce_mean_device of 0 floats is one counted operation");
    check(hpct_allreduce_mean_device(ctx, NULL, 5) == HPCT_ERR_INVALID_ARG,
          "hpct_allreduce_mean_device refuses a NULL buffer of 5 floats");
    free(x), free(ref), free(dev);
}

/* hpct_init_comm on the even world ranks (a subset of MPI_COMM_WORLD). */
static void subset_comm(void)
{
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_rank, &half);
    int ok = 1;
    if (world_rank % 2 == 0) {
        hpct_ctx_t ctx;
        hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
        ok = hpct_init_comm(&cfg, (int)MPI_Comm_c2f(half), &ctx) == HPCT_SUCCESS;
        hpct_topology_t t = HPCT_TOPOLOGY_INITIALIZER;
        ok = ok && hpct_topology(ctx, &t) == HPCT_SUCCESS && t.size == (world_size + 1) / 2 &&
             t.rank == world_rank / 2;
        float v = (float)world_rank; /* mean of 0, 2, 4, ... */
        ok = ok && hpct_allreduce_mean(ctx, &v, 1) == HPCT_SUCCESS;
        ok = ok && fabsf(v - (float)((world_size + 1) / 2 - 1)) < 1e-6f;
        ok = hpct_finalize(ctx) == HPCT_SUCCESS && ok;
    }
    check(ok, "hpct_init_comm on the %d even ranks: topology and mean of the subset",
          (world_size + 1) / 2);
    MPI_Comm_free(&half);
}

/* An average on ctx from a new thread: status and the mean of v = rank over 16 floats. */
struct thread_job {
    hpct_ctx_t ctx;
    hpct_status_t s;
    float v[16];
};

static void *average_on_thread(void *arg)
{
    struct thread_job *j = arg;
    for (int i = 0; i < 16; i++) j->v[i] = (float)world_rank;
    j->s = hpct_allreduce_mean(j->ctx, j->v, 16);
    return NULL;
}

static hpct_status_t average_from_thread(hpct_ctx_t ctx, float *mean)
{
    struct thread_job j = {.ctx = ctx};
    pthread_t t;
    if (pthread_create(&t, NULL, average_on_thread, &j)) return HPCT_ERR_INTERNAL;
    pthread_join(t, NULL);
    *mean = j.v[15];
    return j.s;
}

/* thread LEVEL: a context used from a second thread (the first is idle meanwhile). LEVEL
 * "lib": hpct_init initialises MPI (it asks for MPI_THREAD_SERIALIZED), so the average works
 * there; "funneled": the program initialises MPI with MPI_THREAD_FUNNELED and calls
 * hpct_init_comm, and the same call is refused with HPCT_ERR_STATE naming the level. */
static int run_thread(const char *level)
{
    hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
    cfg.log_level = HPCT_LOG_ERROR;
    hpct_ctx_t ctx = NULL;
    int funneled = !strcmp(level, "funneled"), provided = 0;
    if (funneled) {
        MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
        MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
        MPI_Comm_size(MPI_COMM_WORLD, &world_size);
        if (hpct_init_comm(&cfg, (int)MPI_Comm_c2f(MPI_COMM_WORLD), &ctx)) return 2;
    } else {
        ctx = mpi_start(&cfg);
    }
    float mean = -1;
    hpct_status_t s = average_from_thread(ctx, &mean);
    float want = (float)(world_size - 1) / 2.0f;
    if (funneled && provided < MPI_THREAD_SERIALIZED)
        check(s == HPCT_ERR_STATE && strstr(hpct_last_error(ctx), "MPI_THREAD_FUNNELED"),
              "MPI_THREAD_FUNNELED: an average from a second thread is refused (%s)",
              hpct_last_error(ctx));
    else
        check(!s && mean == want, "an average from a second thread: %g (want %g; %s)", mean, want,
              s ? hpct_last_error(ctx) : "ok");
    s = hpct_allreduce_mean(ctx, &mean, 1); /* the first thread still can */
    check(!s, "the thread that called hpct_init averages afterwards (%s)",
          s ? hpct_last_error(ctx) : "ok");
    hpct_finalize(ctx);
    if (funneled) MPI_Finalize();
    return failures ? 1 : 0;
}

static int run_allreduce(void)
{
    hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
    hpct_ctx_t ctx = mpi_start(&cfg);
    hpct_topology_t t = HPCT_TOPOLOGY_INITIALIZER;
    hpct_topology(ctx, &t);
    if (world_rank == 0)
        printf("# nodes %d, node comm %d, cross comm %d, %s\n", t.num_nodes, t.node_comm_size,
               t.cross_comm_size, t.hierarchical ? "hierarchical" : "flat");
    float w = 0;
    check(hpct_allreduce_mean(ctx, &w, (size_t)-1) == HPCT_ERR_INVALID_ARG &&
              strstr(hpct_last_error(ctx), "2^40"),
          "hpct_allreduce_mean of SIZE_MAX floats is refused before any size is computed");
    allreduce_sizes(ctx, "fp32", 1e-6);
    allreduce_random(ctx);
    cfg.grad_transport = HPCT_TRANSPORT_BF16;
    hpct_ctx_t bf = mpi_start(&cfg);
    allreduce_sizes(bf, "bf16 transport", 1e-2);
    cfg.grad_transport = HPCT_TRANSPORT_FP16;
    hpct_ctx_t hf = mpi_start(&cfg);
    allreduce_sizes(hf, "fp16 transport", 1e-3);
    hpct_finalize(hf), hpct_finalize(bf);
    subset_comm();
    long ops;
    hpct_comm_stats(ctx, NULL, &ops);
    check(ops >= 8, "hpct_comm_stats counts the operations (%ld)", ops);
    return hpct_finalize(ctx) == HPCT_SUCCESS && !failures ? 0 : 1;
}

#define FEATURES TOY_FEATURES
#define CLASSES  TOY_CLASSES

static hpct_model_t make_model(hpct_ctx_t ctx, int max_batch, hpct_params_t *p)
{
    hpct_model_t m;
    hpct_model_create(ctx, FEATURES, &m);
    hpct_model_add_dense(m, 32, HPCT_ACT_RELU, HPCT_INIT_AUTO);
    hpct_model_add_dense(m, 32, HPCT_ACT_TANH, HPCT_INIT_AUTO);
    hpct_model_add_dense(m, CLASSES, HPCT_ACT_IDENTITY, HPCT_INIT_AUTO);
    hpct_model_build(m, max_batch);
    hpct_model_params(m, p);
    return m;
}

static hpct_optimizer_t make_sgd(hpct_params_t p, float lr)
{
    hpct_optim_config_t oc = HPCT_OPTIM_CONFIG_INITIALIZER;
    oc.lr = lr;
    oc.momentum = 0.9f;
    hpct_optimizer_t opt;
    hpct_optimizer_create(p, &oc, &opt);
    return opt;
}

/* Copy every gradient of p into out [total]. */
static void copy_grads(hpct_params_t p, float *out)
{
    int nb;
    hpct_params_size(p, &nb, NULL);
    for (int i = 0; i < nb; i++) {
        float *g;
        size_t n;
        hpct_params_get(p, i, NULL, NULL, &g, &n);
        memcpy(out, g, n * sizeof *g);
        out += n;
    }
}

static double max_diff(const float *a, const float *b, size_t n)
{
    double worst = 0;
    for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs((double)a[i] - b[i]));
    return worst;
}

/* Gradients from hpct_params_average_grads (fused buckets) against MPI_Allreduce / W. */
static void check_fused(hpct_model_t m, hpct_params_t p, const float *x, const int32_t *y, int b,
                        size_t total)
{
    float *want = malloc(total * sizeof *want), *got = malloc(total * sizeof *got);
    hpct_model_loss_grad(m, x, y, b, 0, NULL);
    copy_grads(p, want);
    MPI_Allreduce(MPI_IN_PLACE, want, (int)total, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    for (size_t i = 0; i < total; i++) want[i] /= (float)world_size;
    hpct_status_t s = hpct_params_average_grads(p);
    copy_grads(p, got);
    unsigned long long h = 1469598103934665603ull; /* the shell compares it across runs */
    const unsigned char *bytes = (const unsigned char *)got;
    for (size_t i = 0; i < total * sizeof *got; i++) h = (h ^ bytes[i]) * 1099511628211ull;
    check(s == HPCT_SUCCESS && max_diff(got, want, total) <= 1e-6 &&
              identical(got, total, MPI_COMM_WORLD),
          "fused average_grads (128-float buckets) equals MPI_Allreduce / W (max diff %g), the "
          "same on every rank (gradient hash %016llx)",
          max_diff(got, want, total), h);
    free(want), free(got);
}

/* Two half micro-batches (averaging only on the last, then scale 1/2) = the full batch. */
static void check_accumulation(hpct_model_t m, hpct_params_t p, const float *x, const int32_t *y,
                               int b, size_t total)
{
    float *full = malloc(total * sizeof *full), *acc = malloc(total * sizeof *acc);
    hpct_model_set_grad_averaging(m, 1);
    hpct_model_loss_grad(m, x, y, b, 0, NULL);
    copy_grads(p, full);
    hpct_model_set_grad_averaging(m, 0);
    hpct_model_loss_grad(m, x, y, b / 2, 0, NULL);
    hpct_model_set_grad_averaging(m, 1);
    hpct_model_loss_grad(m, x + (b / 2) * FEATURES, y + b / 2, b / 2, 1, NULL);
    hpct_params_scale_grads(p, 0.5f);
    copy_grads(p, acc);
    check(max_diff(full, acc, total) <= 1e-5,
          "two accumulated micro-batches equal one averaged batch (max diff %g)",
          max_diff(full, acc, total));
    hpct_model_set_grad_averaging(m, 0);
    free(full), free(acc);
}

static int run_replicas(void)
{
    hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
    cfg.fusion_bytes = 512;
    cfg.consistency_interval = 10;
    MPI_Init(NULL, NULL); /* the caller owns MPI here; the library must not finalize it */
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    cfg.seed = 100 + (uint64_t)world_rank; /* different seeds: only the broadcast aligns them */
    hpct_ctx_t ctx = mpi_start(&cfg);
    int b, off;
    check(hpct_batch_split(ctx, 16 * world_size, &b, &off) == HPCT_SUCCESS && b == 16 &&
              off == 16 * world_rank,
          "global batch %d splits into 16 per rank", 16 * world_size);
    if (world_size > 1) {
        hpct_status_t s = hpct_batch_split(ctx, 16 * world_size + 1, &b, &off);
        check(s == HPCT_ERR_INVALID_ARG && strstr(hpct_last_error(ctx), "world size"),
              "global batch %d %% %d != 0 is a clear error: %s", 16 * world_size + 1, world_size,
              hpct_last_error(ctx));
    }
    hpct_params_t p;
    hpct_model_t m = make_model(ctx, 16, &p);
    size_t total;
    hpct_params_size(p, NULL, &total);
    uint64_t h;
    hpct_params_hash(p, &h);
    unsigned long long lo = h, hi = h;
    MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    check(world_size == 1 || lo != hi, "different seeds give different initial replicas");
    check(hpct_params_broadcast(p, 0) == HPCT_SUCCESS &&
              hpct_params_check_replicas(p) == HPCT_SUCCESS,
          "after hpct_params_broadcast the replicas are identical");

    int n = 16 * 8 * world_size;
    float *x = malloc((size_t)n * FEATURES * sizeof *x);
    int32_t *y = malloc((size_t)n * sizeof *y);
    toy_data(x, y, n, 5);
    hpct_optimizer_t opt = make_sgd(p, 0.05f);
    hpct_model_set_grad_averaging(m, 1);
    int bad_steps = 0, bad_checks = 0;
    for (int step = 0; step < 100; step++) {
        int first = (step % 8) * 16 * world_size + off;
        bad_steps += hpct_model_loss_grad(m, x + (size_t)first * FEATURES, y + first, 16, 0,
                                          NULL) != HPCT_SUCCESS;
        hpct_optimizer_step(opt);
        bad_checks += hpct_params_check_replicas_at(p, step + 1) != HPCT_SUCCESS;
    }
    check(bad_steps == 0 && bad_checks == 0,
          "100 steps with overlapped averaging, consistency checked every 10: %d failed steps, %d "
          "failed checks",
          bad_steps, bad_checks);
    hpct_params_hash(p, &h);
    lo = hi = h;
    MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    check(lo == hi, "replicas are bit-identical after 100 steps (hash %016llx)", lo);
    hpct_model_set_grad_averaging(m, 0);
    check_fused(m, p, x + (size_t)off * FEATURES, y + off, 16, total);
    check_accumulation(m, p, x + (size_t)off * FEATURES, y + off, 16, total);

    float *w;
    hpct_params_get(p, 2, NULL, &w, NULL, NULL);
    if (world_rank == world_size - 1 && world_size > 1) w[3] += 1e-3f;
    hpct_status_t s = hpct_params_check_replicas(p);
    char want[64];
    snprintf(want, sizeof want, "rank %d diverged", world_size - 1);
    if (world_size > 1)
        check(s == HPCT_ERR_DIVERGED && strstr(hpct_last_error(ctx), want),
              "a perturbed replica on rank %d is caught: %s", world_size - 1, hpct_last_error(ctx));
    else
        check(s == HPCT_SUCCESS, "one rank: the consistency check passes");
    hpct_optimizer_destroy(opt);
    hpct_model_destroy(m);
    free(x), free(y);
    int ok = hpct_finalize(ctx) == HPCT_SUCCESS;
    int finalized = 1;
    MPI_Finalized(&finalized);
    check(ok && !finalized, "hpct_finalize leaves the caller's MPI running");
    MPI_Finalize();
    return failures ? 1 : 0;
}

/* The same global problem at any W: global batch 64, 60 steps; rank 0 writes the loss. */
static int run_curve(const char *path)
{
    hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
    cfg.seed = 7;
    hpct_ctx_t ctx = mpi_start(&cfg);
    int b, off;
    if (hpct_batch_split(ctx, 64, &b, &off)) return 2;
    hpct_params_t p;
    hpct_model_t m = make_model(ctx, b, &p);
    hpct_params_broadcast(p, 0);
    int n = 1024;
    float *x = malloc((size_t)n * FEATURES * sizeof *x);
    int32_t *y = malloc((size_t)n * sizeof *y);
    toy_data(x, y, n, 11);
    hpct_optimizer_t opt = make_sgd(p, 0.1f);
    hpct_model_set_grad_averaging(m, 1);
    FILE *f = world_rank == 0 ? fopen(path, "w") : NULL;
    int bad = 0;
    for (int step = 0; step < 60; step++) {
        int first = (step * 64) % n + off;
        float loss = 0;
        bad += hpct_model_loss_grad(m, x + (size_t)first * FEATURES, y + first, b, 0, &loss) != 0;
        hpct_optimizer_step(opt);
        bad += hpct_allreduce_mean(ctx, &loss, 1) != 0; /* global batch loss */
        if (f) fprintf(f, "%d %.9g\n", step, loss);
    }
    if (f) fclose(f);
    check(bad == 0, "60 training steps with averaging succeed");
    hpct_optimizer_destroy(opt);
    hpct_model_destroy(m);
    free(x), free(y);
    return hpct_finalize(ctx) == HPCT_SUCCESS && !failures ? 0 : 1;
}

/* The last rank stops itself (SIGSTOP) before the second collective; the others must get
 * HPCT_ERR_TIMEOUT naming it, then end the job with HPCT_EXIT_HANG. The others wait for
 * each other (a barrier without the stopped rank) between reporting and aborting, so the
 * first to abort cannot kill a peer before that peer has printed its report. */
static int run_hang(double seconds, const char *pidfile)
{
    hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
    cfg.collective_timeout_s = seconds;
    hpct_ctx_t ctx = mpi_start(&cfg);
    MPI_Comm alive;
    MPI_Comm_split(MPI_COMM_WORLD, world_rank == world_size - 1 ? MPI_UNDEFINED : 0, world_rank,
                   &alive);
    char name[512];
    snprintf(name, sizeof name, "%s.%d", pidfile, world_rank);
    FILE *f = fopen(name, "w");
    if (f) fprintf(f, "%ld\n", (long)getpid()), fclose(f);
    float v[1000];
    fill(v, 1000, world_rank);
    if (hpct_allreduce_mean(ctx, v, 1000)) return 5;
    if (world_rank == world_size - 1) {
        raise(SIGSTOP);
        return 6; /* only if someone continues us */
    }
    hpct_status_t s = hpct_allreduce_mean(ctx, v, 1000);
    fprintf(stderr, "rank %d: status %d (%s): %s\n", world_rank, s, hpct_strerror(s),
            hpct_last_error(ctx));
    MPI_Barrier(alive);
    if (s == HPCT_ERR_TIMEOUT) hpct_abort_job(ctx, HPCT_EXIT_HANG);
    return 4;
}

/* A reduction that fails midway on rank 1 (test hook HPCT_TEST_COMM_FAIL_RANK=1, a failed
 * MPI_Isend): rank 1 gets HPCT_ERR_COMM naming the MPI error at once, the others
 * HPCT_ERR_TIMEOUT within the deadline; the next collective then fails on every rank with
 * HPCT_ERR_STATE saying why (never "still in progress"). Prints one line per rank. */
static int run_opfail(double seconds)
{
    hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
    cfg.collective_timeout_s = seconds;
    hpct_ctx_t ctx = mpi_start(&cfg);
    float v[4096];
    fill(v, 4096, world_rank);
    hpct_status_t first = hpct_allreduce_mean(ctx, v, 4096);
    char why[1100];
    snprintf(why, sizeof why, "%s", hpct_last_error(ctx));
    hpct_status_t second = hpct_allreduce_mean(ctx, v, 4096);
    printf("rank %d: first %d (%s) | second %d (%s)\n", world_rank, first, why, second,
           hpct_last_error(ctx));
    fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);
    hpct_abort_job(ctx, 3); /* peers' exchanges may still be in flight */
    return 4;
}

/* The slowest rank's seconds since t0, and whether every rank holds the same status. */
static double slowest_since(double t0, hpct_status_t s, int *same)
{
    double took = MPI_Wtime() - t0;
    int lo = s, hi = s;
    MPI_Allreduce(MPI_IN_PLACE, &took, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    *same = lo == hi;
    return took;
}

/* A 5-16-64 classifier on ctx, its parameters broadcast from rank 0 (into *p); NULL on error. */
static hpct_model_t small_model(hpct_ctx_t ctx, hpct_params_t *p)
{
    hpct_model_t m;
    if (hpct_model_create(ctx, 5, &m)) return NULL;
    hpct_model_add_dense(m, 16, HPCT_ACT_TANH, HPCT_INIT_AUTO);
    hpct_model_add_dense(m, 64, HPCT_ACT_IDENTITY, HPCT_INIT_AUTO);
    if (hpct_model_build(m, 64) || hpct_model_params(m, p) || hpct_params_broadcast(*p, 0)) {
        hpct_model_destroy(m);
        return NULL;
    }
    return m;
}

/* 64 samples of 5 features in DIR/s.h5 (row nan_row's first feature NaN; -1: none), written
 * by rank 0, and the dataset of their manifest DIR/m.txt opened on every rank (*ds). */
static hpct_status_t small_data(hpct_ctx_t ctx, const char *dir, long nan_row, hpct_dataset_t *ds)
{
    if (world_rank == 0) {
        tdu_shard_t sh = tdu_shard(64, 0, 5, 0);
        sh.nan_row = nan_row;
        char shard[600];
        snprintf(shard, sizeof shard, "%s/s.h5", dir);
        const char *files[1] = {"s.h5"};
        if (tdu_write_shard(shard, &sh) || tdu_write_manifest(dir, "m.txt", 1, files, "float32", 5))
            return HPCT_ERR_IO;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    char manifest[600];
    snprintf(manifest, sizeof manifest, "%s/m.txt", dir);
    hpct_data_config_t dc = HPCT_DATA_CONFIG_INITIALIZER;
    return hpct_dataset_open(ctx, manifest, &dc, ds);
}

/* A rank-local failure in a step with averaging, deadline 60 s: (a) hpct_model_loss_grad
 * with a NaN input on the last rank only; (b) hpct_train where one rank's batch holds a NaN
 * sample (nonfinite = error). Every rank must return the same status within 2 s, naming
 * the failing rank, the error marked shared. */
static int run_badstep(const char *dir)
{
    hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
    cfg.collective_timeout_s = 60;
    hpct_ctx_t ctx = mpi_start(&cfg);
    hpct_params_t p;
    hpct_model_t m = small_model(ctx, &p);
    if (!m) return 2;
    float x[8 * 5];
    int32_t y[8];
    for (int i = 0; i < 40; i++) x[i] = (float)(i % 7) * 0.1f;
    for (int i = 0; i < 8; i++) y[i] = i;
    if (world_rank == world_size - 1) x[3] = NAN;
    hpct_model_set_grad_averaging(m, 1);
    double t0 = MPI_Wtime();
    float loss;
    hpct_status_t s = hpct_model_loss_grad(m, x, y, 8, 0, &loss);
    int same;
    double took = slowest_since(t0, s, &same);
    char want[64];
    snprintf(want, sizeof want, "rank %d of %d failed", world_size - 1, world_size);
    check(s == HPCT_ERR_NONFINITE && same && took < 2.0 && strstr(hpct_last_error(ctx), want) &&
              strstr(hpct_last_error(ctx), "the loss is nan") && hpct_last_error_shared(ctx),
          "loss_grad, NaN input on rank %d only: every rank returns HPCT_ERR_NONFINITE within "
          "%.3f s, naming it (\"%s\")",
          world_size - 1, took, hpct_last_error(ctx));
    /* A bad size or pointer on one rank (issue 37, finding 5): its argument check joins the
     * agreement too. */
    int last = world_rank == world_size - 1;
    t0 = MPI_Wtime();
    s = hpct_model_loss_grad(m, last ? NULL : x, y, last ? 0 : 8, 0, &loss);
    took = slowest_since(t0, s, &same);
    check(s == HPCT_ERR_INVALID_ARG && same && took < 2.0 && strstr(hpct_last_error(ctx), want) &&
              strstr(hpct_last_error(ctx), "inputs are NULL"),
          "loss_grad, NULL inputs on rank %d only: every rank returns HPCT_ERR_INVALID_ARG within "
          "%.3f s, naming it (\"%s\")",
          world_size - 1, took, hpct_last_error(ctx));
    hpct_model_set_grad_averaging(m, 0);

    hpct_dataset_t ds;
    hpct_optim_config_t oc = HPCT_OPTIM_CONFIG_INITIALIZER;
    hpct_optimizer_t opt;
    if (small_data(ctx, dir, 37, &ds) || hpct_optimizer_create(p, &oc, &opt)) return 2;
    hpct_train_config_t tc = HPCT_TRAIN_CONFIG_INITIALIZER;
    tc.global_batch = 4 * world_size; /* splits at any W */
    tc.epochs = 1;
    tc.log_interval = 0;
    hpct_train_result_t res;
    t0 = MPI_Wtime();
    s = hpct_train(m, opt, ds, NULL, &tc, &res);
    took = slowest_since(t0, s, &same);
    check(s == HPCT_ERR_NONFINITE && same && took < 2.0 && strstr(hpct_last_error(ctx), "failed") &&
              hpct_last_error_shared(ctx),
          "hpct_train, a NaN sample in one rank's batch: every rank returns HPCT_ERR_NONFINITE "
          "within %.3f s, the failing rank named (\"%s\")",
          took, hpct_last_error(ctx));
    hpct_optimizer_destroy(opt);
    hpct_dataset_close(ds);
    hpct_model_destroy(m);
    return hpct_finalize(ctx) == HPCT_SUCCESS && !failures ? 0 : 1;
}

/* hpct_train's progress callback: the last rank raises SIGTERM at step 2. */
static void raise_on_last(const hpct_progress_t *pr, void *arg)
{
    (void)arg;
    if (pr->step == 2 && world_rank == world_size - 1) raise(SIGTERM);
}

/* A preemption signal caught on the last rank only stops hpct_train on every rank (its
 * step-boundary agreement). Then every rank uninstalls the handlers and gets a late SIGTERM
 * of the same preemption: ignored (SIG_IGN), not the default action, on the ranks that caught
 * nothing too, so their shutdown is not killed (exit 143 instead of 75). */
static int run_lateterm(const char *dir)
{
    hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
    cfg.collective_timeout_s = 60;
    hpct_ctx_t ctx = mpi_start(&cfg);
    hpct_signals_t sig;
    hpct_params_t p;
    hpct_model_t m = small_model(ctx, &p);
    hpct_dataset_t ds;
    hpct_optim_config_t oc = HPCT_OPTIM_CONFIG_INITIALIZER;
    hpct_optimizer_t opt;
    if (!m || hpct_signals_install(ctx, NULL, 0, &sig) || small_data(ctx, dir, -1, &ds) ||
        hpct_optimizer_create(p, &oc, &opt))
        return 2;
    hpct_train_config_t tc = HPCT_TRAIN_CONFIG_INITIALIZER;
    tc.global_batch = 4 * world_size;
    tc.epochs = 1;
    tc.log_interval = 1;
    tc.progress = raise_on_last;
    hpct_train_result_t res;
    hpct_status_t s = hpct_train(m, opt, ds, NULL, &tc, &res);
    check(s == HPCT_PREEMPTED && res.stop_signal == SIGTERM,
          "a SIGTERM caught on rank %d only stops hpct_train on every rank (status %d, signal %d)",
          world_size - 1, s, res.stop_signal);
    hpct_signals_uninstall(sig);
    struct sigaction now;
    sigaction(SIGTERM, NULL, &now);
    check(now.sa_handler == SIG_IGN,
          "after hpct_signals_uninstall SIGTERM is ignored on every rank, also where none was "
          "caught");
    raise(SIGTERM); /* the late signal: a rank it killed would end the job with a signal */
    hpct_optimizer_destroy(opt);
    hpct_dataset_close(ds);
    hpct_model_destroy(m);
    return hpct_finalize(ctx) == HPCT_SUCCESS && !failures ? 0 : 1;
}

/* A stream of random values of mixed magnitudes (so the summation order shows in the bits). */
struct rng {
    unsigned long long st;
    unsigned e;      /* exponent index of the next value: (i + seed) % 17 */
    float scale[17]; /* 2^-8 .. 2^8: products by them are exact, as ldexpf */
};

static void rng_init(struct rng *g, unsigned seed)
{
    g->st = seed * 2654435761ull + 12345;
    g->e = seed % 17;
    for (int e = 0; e < 17; e++) g->scale[e] = ldexpf(1.0f, e - 8);
}

/* The stream's next n values into x [n]. */
static void rng_fill(struct rng *g, float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        g->st = g->st * 6364136223846793005ull + 1442695040888963407ull;
        float u = (float)((double)(g->st >> 11) * (1.0 / 9007199254740992.0) - 0.5);
        x[i] = u * g->scale[g->e]; /* exponents differ across ranks */
        g->e = g->e == 16 ? 0 : g->e + 1;
    }
}

/* The first n values of the stream of seed into x [n]. */
static void fill_random(float *x, size_t n, unsigned seed)
{
    struct rng g;
    rng_init(&g, seed);
    rng_fill(&g, x, n);
}

/* One size through ctx (the path under test) and ref (point-to-point): the same bits, and
 * the same on every rank. */
static void nodewin_size(hpct_ctx_t ctx, hpct_ctx_t ref, const char *label, size_t n)
{
    float *x = scratch(0, n ? n : 1), *y = scratch(1, n ? n : 1);
    fill_random(x, n, 31u * (unsigned)world_rank + (unsigned)n);
    memcpy(y, x, n * sizeof *x);
    hpct_status_t s = hpct_allreduce_mean(ctx, n ? x : NULL, n);
    hpct_status_t t = hpct_allreduce_mean(ref, n ? y : NULL, n);
    check(s == HPCT_SUCCESS && t == HPCT_SUCCESS, "%s: %zu floats: both paths succeed (%s)", label,
          n, s ? hpct_last_error(ctx) : hpct_last_error(ref));
    check(memcmp(x, y, n * sizeof *x) == 0, "%s: %zu floats: bit-identical to the p2p path", label,
          n);
    check(identical(x, n, MPI_COMM_WORLD), "%s: %zu floats: bit-identical on every rank", label, n);
}

/* The path HPCT_NODE_REDUCE selects (logged at info level) against a context forced to the
 * point-to-point path; a third context with a 4 KiB fusion size (64 Ki-float window halves)
 * grows its window and splits 65537 floats and more into chunks. */
static int run_nodewin(void)
{
    static const size_t sizes[] = {0, 1, 7, 12289, 65537, BIG_FLOATS, 7, 1001};
    const char *mode = getenv("HPCT_NODE_REDUCE");
    char saved[16];
    snprintf(saved, sizeof saved, "%s", mode ? mode : "auto");
    hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
    cfg.log_level = HPCT_LOG_INFO;
    hpct_ctx_t ctx = mpi_start(&cfg);
    size_t fusion = cfg.fusion_bytes;
    cfg.fusion_bytes = 4096;
    hpct_ctx_t small = mpi_start(&cfg);
    cfg.log_level = HPCT_LOG_NONE;
    cfg.fusion_bytes = fusion;
    setenv("HPCT_NODE_REDUCE", "p2p", 1);
    setenv("HPCT_ALLREDUCE_ALGO", "p2p", 1);
    hpct_ctx_t ref = mpi_start(&cfg);
    unsetenv("HPCT_ALLREDUCE_ALGO");
    setenv("HPCT_NODE_REDUCE", saved, 1);
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        nodewin_size(ctx, ref, saved, sizes[k]);
        nodewin_size(small, ref, "4 KiB fusion", sizes[k]);
    }
    int ok = hpct_finalize(ref) == HPCT_SUCCESS;
    ok = hpct_finalize(small) == HPCT_SUCCESS && ok;
    check(ok, "hpct_finalize of the p2p and 4 KiB-fusion contexts");
    return hpct_finalize(ctx) == HPCT_SUCCESS && !failures ? 0 : 1; /* MPI_Finalize */
}

/* The worst error of the mean x [n] against the fp64 mean of every rank's input (rank r's:
 * the stream of seed mul r + add, regenerated here block by block), in units of fp32
 * rounding: per element, the sum of W terms, the scale and its product, (W + 2) 2^-24 of
 * the mean magnitude. */
static double worst_of_fp64_mean(const float *x, size_t n, unsigned mul, unsigned add)
{
    enum { BLOCK = 4096 };
    struct rng *g = malloc((size_t)world_size * sizeof *g);
    float v[BLOCK];
    double sum[BLOCK], mag[BLOCK], worst = 0;
    for (int r = 0; r < world_size; r++) rng_init(&g[r], mul * (unsigned)r + add);
    for (size_t at = 0; at < n; at += BLOCK) {
        size_t b = n - at < BLOCK ? n - at : BLOCK;
        memset(sum, 0, sizeof sum), memset(mag, 0, sizeof mag);
        for (int r = 0; r < world_size; r++) {
            rng_fill(&g[r], v, b);
            for (size_t i = 0; i < b; i++) sum[i] += v[i], mag[i] += fabs(v[i]);
        }
        for (size_t i = 0; i < b; i++) {
            double tol = (world_size + 2) * ldexp(mag[i] / world_size, -24) + 1e-44;
            double e = fabs(x[at + i] - sum[i] / world_size) / tol;
            worst = e > worst ? e : worst;
        }
    }
    free(g);
    return worst;
}

/* One size through ctx: a mean within fp32 rounding of the fp64 mean (per element: the sum
 * of W terms, the scale and its product, (W + 2) 2^-24 of the mean magnitude), the same
 * bits on every rank, and, with ref, the bits of ref's average (a context forced to p2p),
 * or with mpi, the bits of MPI_Iallreduce(MPI_SUM) times 1/W. */
static void algo_size(hpct_ctx_t ctx, const char *label, size_t n, hpct_ctx_t ref, int mpi)
{
    size_t m = n ? n : 1;
    float *x = scratch(0, m), *y = scratch(1, m);
    fill_random(x, n, 7u * (unsigned)world_rank + (unsigned)n);
    memcpy(y, x, n * sizeof *x);
    hpct_status_t s = hpct_allreduce_mean(ctx, n ? x : NULL, n);
    check(s == HPCT_SUCCESS, "%s: %zu floats: succeeds (%s)", label, n, hpct_last_error(ctx));
    double worst = worst_of_fp64_mean(x, n, 7u, (unsigned)n);
    check(worst <= 1.0, "%s: %zu floats: within fp32 rounding of the fp64 mean (worst %.2f of it)",
          label, n, worst);
    check(identical(x, n, MPI_COMM_WORLD), "%s: %zu floats: bit-identical on every rank", label, n);
    if (ref) {
        s = hpct_allreduce_mean(ref, n ? y : NULL, n);
        check(s == HPCT_SUCCESS && !memcmp(x, y, n * sizeof *x),
              "%s: %zu floats: the bits of the point-to-point path", label, n);
    }
    if (mpi && n) {
        MPI_Request r;
        MPI_Iallreduce(MPI_IN_PLACE, y, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        float inv = 1.0f / (float)world_size;
        for (size_t i = 0; i < n; i++) y[i] *= inv;
        check(!memcmp(x, y, n * sizeof *x), "%s: %zu floats: the bits of MPI_Iallreduce / W", label,
              n);
    }
}

/* hpct_init with HPCT_ALLREDUCE_ALGO=value (NULL: unset) and cfg; NULL when it failed. */
static hpct_ctx_t init_algo(const char *value, const hpct_config_t *cfg, hpct_status_t *s)
{
    hpct_ctx_t ctx = NULL;
    if (value)
        setenv("HPCT_ALLREDUCE_ALGO", value, 1);
    else
        unsetenv("HPCT_ALLREDUCE_ALGO");
    *s = hpct_init(cfg, &ctx);
    return *s ? NULL : ctx;
}

/* The reference context: point-to-point inside the node and across (the first context, so
 * it initialises MPI); sets world_rank and world_size. */
static hpct_ctx_t reference_ctx(const hpct_config_t *cfg)
{
    hpct_status_t s;
    setenv("HPCT_NODE_REDUCE", "p2p", 1);
    hpct_ctx_t ref = init_algo("p2p", cfg, &s);
    unsetenv("HPCT_NODE_REDUCE");
    if (!ref) return NULL;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    return ref;
}

static void fused_adjacent(hpct_ctx_t ctx);

/* x [n] averaged through a new context forced to algo, rank 0 summing with the baseline
 * kernels and the others with isa ("auto": the widest); the context is then finalized. */
static void average_with_sets(const hpct_config_t *cfg, const char *algo, const char *isa, float *x,
                              size_t n)
{
    hpct_status_t s;
    setenv("HPCT_VECTOR_ISA", world_rank ? isa : "baseline", 1);
    hpct_ctx_t ctx = init_algo(algo, cfg, &s);
    unsetenv("HPCT_VECTOR_ISA");
    check(ctx != NULL, "%s, HPCT_VECTOR_ISA=baseline on rank 0, %s elsewhere: hpct_init (%s)", algo,
          isa, hpct_strerror(s));
    if (!ctx) return;
    s = hpct_allreduce_mean(ctx, x, n);
    check(s == HPCT_SUCCESS, "%s, baseline sums on rank 0, %s elsewhere: average (%s)", algo, isa,
          hpct_last_error(ctx));
    hpct_finalize(ctx);
}

/* HPCT_VECTOR_ISA (lib/comm/avg/vsum.h): ranks summing with different instruction sets give
 * every rank the bits of the widest set on all ranks, through the window (one rank sums each
 * block) and through allgather (every rank sums everything itself); a set unknown on the
 * last rank fails hpct_init on every rank. */
static void vector_sets(const hpct_config_t *cfg)
{
    static const char *const algos[] = {"shm", "allgather"};
    size_t n = 65537;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    hpct_status_t s;
    for (int a = 0; a < 2; a++) {
        fill_random(x, n, 11u * (unsigned)world_rank + 5u);
        memcpy(y, x, n * sizeof *x);
        average_with_sets(cfg, algos[a], "auto", x, n);
        check(identical(x, n, MPI_COMM_WORLD),
              "%s, baseline sums on rank 0, the widest elsewhere: bit-identical on every rank",
              algos[a]);
        hpct_ctx_t ctx = init_algo(algos[a], cfg, &s);
        s = ctx ? hpct_allreduce_mean(ctx, y, n) : s;
        check(s == HPCT_SUCCESS && !memcmp(x, y, n * sizeof *x),
              "%s, baseline sums on rank 0: the bits of the widest set on every rank", algos[a]);
        if (ctx) hpct_finalize(ctx);
    }
    if (world_rank == world_size - 1) setenv("HPCT_VECTOR_ISA", "sse9", 1);
    hpct_ctx_t ctx = init_algo("shm", cfg, &s);
    unsetenv("HPCT_VECTOR_ISA");
    check(!ctx && s == HPCT_ERR_INVALID_ARG,
          "HPCT_VECTOR_ISA=sse9 on the last rank: hpct_init fails with HPCT_ERR_INVALID_ARG on "
          "every rank (%s)",
          hpct_strerror(s));
    if (ctx) hpct_finalize(ctx);
    free(x), free(y);
}

/* Every algorithm forced through HPCT_ALLREDUCE_ALGO, a table that mixes them, the timed
 * probe, each against the fp64 mean (and p2p or MPI_Iallreduce bits where forced: shm, p2p,
 * allgather and shm/p2p sum in rank order); then
 * malformed values: hpct_init fails on every rank naming the variable. */
static int run_algo(void)
{
    static const size_t sizes[] = {0, 1, 7, 1001, 65537, (size_t)1 << 20, BIG_FLOATS};
    static const char *const algos[] = {"mpi",
                                        "shm",
                                        "p2p",
                                        "allgather",
                                        "shm/p2p",
                                        "0:allgather,1K:mpi,64K:shm,1M:p2p",
                                        "0:shm,64K:shm/p2p",
                                        NULL};
    /* the bits each must give: m MPI_Iallreduce / W, p the point-to-point path, - unchecked */
    static const char bits[] = "mpppp-p-";
    static const char *const bad[] = {"fast",         "16K:mpi", "0:mpi,0:shm",
                                      "0:mpi,4X:shm", "0:mpi,",  "0:nccl"};
    hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
    hpct_status_t s;
    hpct_ctx_t ref = reference_ctx(&cfg);
    if (!ref) return 2;
    cfg.log_level = HPCT_LOG_INFO;
    for (size_t a = 0; a < sizeof algos / sizeof *algos; a++) {
        const char *label = algos[a] ? algos[a] : "auto (probe)";
        hpct_ctx_t ctx = init_algo(algos[a], &cfg, &s);
        check(ctx != NULL, "%s: hpct_init succeeds (%s)", label, hpct_strerror(s));
        if (!ctx) continue;
        int same = bits[a] == 'p', mpi = bits[a] == 'm';
        for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++)
            algo_size(ctx, label, sizes[k], same ? ref : NULL, mpi);
        if (same) fused_adjacent(ctx); /* default fusion: 1 MiB buckets where they stay in flight */
        check(hpct_finalize(ctx) == HPCT_SUCCESS, "%s: hpct_finalize", label);
    }
    cfg.log_level = HPCT_LOG_ERROR; /* the detail, naming the variable, for the shell test */
    if (world_size > 1) vector_sets(&cfg);
    for (size_t b = 0; b < sizeof bad / sizeof *bad; b++) {
        hpct_ctx_t ctx = init_algo(bad[b], &cfg, &s);
        check(!ctx && s == HPCT_ERR_INVALID_ARG,
              "HPCT_ALLREDUCE_ALGO='%s': hpct_init fails with HPCT_ERR_INVALID_ARG (%s)", bad[b],
              hpct_strerror(s));
        if (ctx) hpct_finalize(ctx);
    }
    if (world_size > 1) { /* rank 0 probes, the others read a table: refused everywhere */
        hpct_ctx_t ctx = init_algo(world_rank ? "shm" : NULL, &cfg, &s);
        check(!ctx && s == HPCT_ERR_INVALID_ARG,
              "HPCT_ALLREDUCE_ALGO unset on rank 0, 'shm' elsewhere: hpct_init fails with "
              "HPCT_ERR_INVALID_ARG on every rank (%s)",
              hpct_strerror(s));
        if (ctx) hpct_finalize(ctx);
    }
    return hpct_finalize(ref) == HPCT_SUCCESS && !failures ? 0 : 1; /* MPI_Finalize */
}

/* buf [n] of an hpct_alloc_grads buffer through ctx (the window where it is set up; set, when
 * not NULL: by hpct_params_average_grads of a set whose gradients are all of buf) against
 * a copy through ref (forced p2p): the same bits on every rank and the bits of the
 * point-to-point path (whose means algo_size checks against fp64 in test_dist_algo.sh). */
static void grads_size(hpct_ctx_t ctx, hpct_ctx_t ref, const char *label, float *buf, size_t n,
                       hpct_params_t set)
{
    size_t m = n ? n : 1;
    float *x = scratch(0, m);
    fill_random(x, n, 11u * (unsigned)world_rank + (unsigned)n);
    memcpy(buf, x, n * sizeof *x);
    hpct_status_t s = set ? hpct_params_average_grads(set) : hpct_allreduce_mean(ctx, buf, n);
    check(s == HPCT_SUCCESS, "%s: %zu floats in place: succeeds (%s)", label, n,
          hpct_last_error(ctx));
    fill_random(x, n, 11u * (unsigned)world_rank + (unsigned)n);
    s = hpct_allreduce_mean(ref, x, n);
    check(s == HPCT_SUCCESS && !memcmp(x, buf, n * sizeof *x),
          "%s: %zu floats in place: the bits of the point-to-point path", label, n);
    check(identical(buf, n, MPI_COMM_WORLD), "%s: %zu floats in place: bit-identical on every rank",
          label, n);
}

/* A set of K tensors of 1..2000 floats carved back to back from one hpct_alloc_grads buffer
 * (a gap of one float after every 100th, so the adjacent runs end there and at each
 * bucket's end: fusion_bytes 64 KiB), averaged by hpct_params_average_grads where they lie,
 * against the same values in K separate allocations (packed into the fusion slots): the same
 * bits, on every rank, and the mean within a few ulps of MPI_Allreduce / W. */
static void fused_adjacent(hpct_ctx_t ctx)
{
    enum { K = 300 };
    size_t count[K], total = 0, off = 0;
    for (int i = 0; i < K; i++) count[i] = 1 + (size_t)(i * 7919) % 2000, total += count[i] + 1;
    float *shared = NULL, *sep[K], *params = calloc(total, sizeof *params);
    float *want = malloc(total * sizeof *want), *got = malloc(total * sizeof *got);
    hpct_params_t a = NULL, b = NULL;
    hpct_status_t s = hpct_alloc_grads(ctx, total, &shared);
    if (!s) s = hpct_params_create(ctx, &a);
    if (!s) s = hpct_params_create(ctx, &b);
    for (int i = 0; i < K && !s; i++) {
        char name[32];
        snprintf(name, sizeof name, "t%d", i);
        sep[i] = malloc(count[i] * sizeof(float));
        fill_random(shared + off, count[i], 97u * (unsigned)world_rank + (unsigned)i);
        memcpy(sep[i], shared + off, count[i] * sizeof(float));
        s = hpct_params_register(a, name, params + off, shared + off, count[i]);
        if (!s) s = hpct_params_register(b, name, params + off, sep[i], count[i]);
        off += count[i] + (i % 100 == 99);
    }
    check(s == HPCT_SUCCESS, "fused: %d tensors registered twice (%s)", K, hpct_last_error(ctx));
    if (s) return;
    copy_grads(b, want);
    size_t n;
    hpct_params_size(b, NULL, &n);
    MPI_Allreduce(MPI_IN_PLACE, want, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    for (size_t i = 0; i < n; i++) want[i] /= (float)world_size;
    s = hpct_params_average_grads(a);
    hpct_status_t s2 = hpct_params_average_grads(b);
    copy_grads(a, got);
    float *packed = malloc(n * sizeof *packed);
    copy_grads(b, packed);
    check(s == HPCT_SUCCESS && s2 == HPCT_SUCCESS && !memcmp(got, packed, n * sizeof *got),
          "fused: %zu floats in %d adjacent tensors averaged where they lie = the same tensors "
          "packed, bit for bit (%s)",
          n, K, hpct_last_error(ctx));
    /* values up to 128 in magnitude: 1e-4 is a few fp32 ulps of the largest */
    check(max_diff(got, want, n) <= 1e-4 && identical(got, n, MPI_COMM_WORLD),
          "fused adjacent tensors: within 1e-4 of MPI_Allreduce / W (max diff %g), bit-identical "
          "on every rank",
          max_diff(got, want, n));
    for (int i = 0; i < K; i++) free(sep[i]);
    hpct_params_destroy(a), hpct_params_destroy(b);
    hpct_free_grads(ctx, shared);
    free(params), free(want), free(got), free(packed);
}

/* hpct_alloc_grads is agreed: different counts on different ranks are refused on every rank
 * (the context stays usable); a buffer given back on rank 0 alone is not handed out again
 * (the next buffer of that count is new on every rank, as its window is collective). */
static void grads_agreement(hpct_ctx_t ctx)
{
    float *x = NULL, *k = NULL, *again = NULL;
    hpct_status_t s = hpct_alloc_grads(ctx, 100 + (size_t)world_rank, &x);
    check(world_size == 1 ? s == HPCT_SUCCESS
                          : s == HPCT_ERR_INVALID_ARG && !x &&
                                strstr(hpct_last_error(ctx), "ask for different counts"),
          "hpct_alloc_grads of 100 + rank floats: %s on every rank (%s)",
          world_size == 1 ? "succeeds" : "HPCT_ERR_INVALID_ARG", hpct_last_error(ctx));
    hpct_free_grads(ctx, x);
    /* A count that only the last rank gets wrong (0): refused on every rank, within 10 s
     * (not at the collective deadline), and the next agreed call works. */
    double t0 = MPI_Wtime();
    s = hpct_alloc_grads(ctx, world_rank == world_size - 1 ? 0 : 100, &x);
    double took = MPI_Wtime() - t0;
    check(s == HPCT_ERR_INVALID_ARG && !x && took < 10,
          "hpct_alloc_grads of 0 floats on the last rank only: HPCT_ERR_INVALID_ARG on every "
          "rank in %.2f s (status %d: %s)", took, (int)s, hpct_last_error(ctx));
    hpct_free_grads(ctx, x), x = NULL;
    s = hpct_alloc_grads(ctx, 100, &x);
    check(s == HPCT_SUCCESS && x, "then hpct_alloc_grads of 100 floats on every rank (%s)",
          hpct_last_error(ctx));
    hpct_free_grads(ctx, x);
    s = hpct_alloc_grads(ctx, 4096, &k);
    if (world_rank == 0) hpct_free_grads(ctx, k);
    if (!s) s = hpct_alloc_grads(ctx, 4096, &again);
    check(s == HPCT_SUCCESS && again && (world_size == 1) == (again == k),
          "a buffer given back on rank 0 only: the next one is %s (%s)",
          world_size == 1 ? "the same" : "new on every rank", hpct_last_error(ctx));
}

/* A built-in model's gradients move into the node window (the gradient pointer of
 * hpct_params_get changes) at its set's first hpct_params_broadcast or, without one, its
 * first hpct_params_average_grads, where the window averages in place, and only there; the
 * averages through the pointers taken after the move give the mean, bit-identical on every
 * rank. */
static void model_grads_move(hpct_ctx_t ctx, int in_place)
{
    static const char *const first_call[] = {"hpct_params_broadcast", "hpct_params_average_grads"};
    for (int k = 0; k < 2; k++) {
        hpct_params_t p;
        hpct_model_t m = make_model(ctx, 4, &p);
        float *before, *moved, *g;
        size_t n;
        int nb, same = 1;
        hpct_params_get(p, 0, NULL, NULL, &before, NULL);
        hpct_status_t s = k ? hpct_params_average_grads(p) : hpct_params_broadcast(p, 0);
        hpct_params_get(p, 0, NULL, NULL, &moved, NULL);
        check(s == HPCT_SUCCESS && (moved != before) == in_place,
              "a built-in model's first call, %s: its gradients %s the node window (%s)",
              first_call[k], in_place ? "move into" : "stay out of", hpct_last_error(ctx));
        hpct_params_size(p, &nb, NULL);
        for (int i = 0; i < nb; i++)
            hpct_params_get(p, i, NULL, NULL, &g, &n), fill(g, n, world_rank);
        s = hpct_params_average_grads(p);
        double worst = 0;
        for (int i = 0; i < nb; i++) {
            hpct_params_get(p, i, NULL, NULL, &g, &n);
            worst = fmax(worst, max_rel_error(g, n, world_size));
            same &= identical(g, n, MPI_COMM_WORLD);
        }
        hpct_params_get(p, 0, NULL, NULL, &g, NULL);
        check(s == HPCT_SUCCESS && g == moved && worst <= 1e-6 && same,
              "after %s: the gradients stay put, their average is the mean (max relative error "
              "%g), bit-identical on every rank",
              first_call[k], worst);
        hpct_model_destroy(m);
    }
}

/* hpct_alloc_grads buffers averaged in place through a context forced to algo (shm or
 * shm/p2p: the window): whole buffers and a part, the bits of p2p; a built-in model's
 * gradients moved into the window (model_grads_move); a buffer given back is handed out
 * again zeroed; bad arguments refused; with the window, a rank passing ordinary memory while
 * the others pass the buffer: its node averages by copying, the same bits. window: 0 where
 * the node window is not set up, 1 where it averages in place, 2 where it is set up with
 * in-place averages off (HPCT_NODE_IN_PLACE=0). */
static int run_grads(int window, const char *algo)
{
    static const size_t sizes[] = {1, 7, 65537, (size_t)1 << 20, BIG_FLOATS};
    hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
    hpct_status_t s;
    hpct_ctx_t ref = reference_ctx(&cfg);
    if (!ref) return 2;
    cfg.log_level = HPCT_LOG_INFO;
    cfg.fusion_bytes = 64 << 10;
    hpct_ctx_t ctx = init_algo(algo, &cfg, &s);
    check(ctx != NULL, "hpct_init with HPCT_ALLREDUCE_ALGO=%s (%s)", algo, hpct_strerror(s));
    if (!ctx) return 1;
    fused_adjacent(ctx);
    model_grads_move(ctx, window == 1);
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        float *g = NULL;
        s = hpct_alloc_grads(ctx, sizes[k], &g);
        check(s == HPCT_SUCCESS && g, "hpct_alloc_grads of %zu floats (%s)", sizes[k],
              hpct_last_error(ctx));
        if (!g) continue;
        grads_size(ctx, ref, "whole buffer", g, sizes[k], NULL);
        if (sizes[k] > 1000)
            grads_size(ctx, ref, "a part at float 3", g + 3, sizes[k] - 1000, NULL);
        check(hpct_free_grads(ctx, g) == HPCT_SUCCESS, "hpct_free_grads");
        float *again = NULL;
        s = hpct_alloc_grads(ctx, sizes[k], &again);
        int zero = again != NULL;
        for (size_t i = 0; zero && i < sizes[k]; i++) zero = again[i] == 0.0f;
        check(s == HPCT_SUCCESS && again == g && zero,
              "%zu floats given back: handed out again, zeroed", sizes[k]);
        hpct_free_grads(ctx, again);
    }
    float *none = NULL, x = 0;
    check(hpct_alloc_grads(ctx, 0, &none) == HPCT_ERR_INVALID_ARG && !none &&
              strstr(hpct_last_error(ctx), "count is 0"),
          "hpct_alloc_grads of 0 floats: HPCT_ERR_INVALID_ARG naming count (%s)",
          hpct_last_error(ctx));
    check(hpct_free_grads(ctx, &x) == HPCT_ERR_INVALID_ARG,
          "hpct_free_grads of ordinary memory: HPCT_ERR_INVALID_ARG (%s)", hpct_last_error(ctx));
    if (window) { /* rank 0 averages ordinary memory, the others the shared buffer */
        size_t n = 65537;
        float *g = NULL, *plain = calloc(n, sizeof *plain);
        s = hpct_alloc_grads(ctx, n, &g);
        check(s == HPCT_SUCCESS && g && plain, "hpct_alloc_grads of %zu floats (%s)", n,
              hpct_last_error(ctx));
        for (int k = 0; g && plain && k < 2; k++) /* twice: the node goes on copying */
            grads_size(ctx, ref, "ordinary memory on rank 0, the buffer elsewhere",
                       world_rank ? g : plain, n, NULL);
        if (g) hpct_free_grads(ctx, g);
        free(plain);
    }
    grads_agreement(ctx);
    check(hpct_finalize(ctx) == HPCT_SUCCESS, "hpct_finalize");
    return hpct_finalize(ref) == HPCT_SUCCESS && !failures ? 0 : 1; /* MPI_Finalize */
}

/* 100,001 floats in one hpct_alloc_grads buffer (rank 0: ordinary memory when mixed),
 * averaged on a context with HPCT_ALLREDUCE_ALGO=algo by hpct_allreduce_mean (direct) or as a
 * set of three gradients carved back to back from it (hpct_params_average_grads), against
 * the reference context (grads_size). The shell reads the log to tell which path it took
 * (through the window in place or not). */
static int run_gradset(const char *algo, int mixed, int direct)
{
    static const size_t counts[] = {40000, 30000, 30001};
    const size_t total = 100001;
    hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
    hpct_status_t s;
    hpct_ctx_t ref = reference_ctx(&cfg);
    if (!ref) return 2;
    cfg.log_level = HPCT_LOG_INFO;
    hpct_ctx_t ctx = init_algo(algo, &cfg, &s);
    check(ctx != NULL, "hpct_init with HPCT_ALLREDUCE_ALGO=%s (%s)", algo, hpct_strerror(s));
    if (!ctx) return 1;
    float *g = NULL, *plain = calloc(total, sizeof *plain), *w = calloc(total, sizeof *w);
    check(hpct_alloc_grads(ctx, total, &g) == HPCT_SUCCESS && plain && w,
          "hpct_alloc_grads of %zu floats (%s)", total, hpct_last_error(ctx));
    float *grads = mixed && world_rank == 0 ? plain : g;
    hpct_params_t p = NULL;
    s = hpct_params_create(ctx, &p);
    size_t off = 0;
    for (int i = 0; i < 3 && !s; off += counts[i++]) {
        char name[16];
        snprintf(name, sizeof name, "t%d", i);
        s = hpct_params_register(p, name, w + off, grads + off, counts[i]);
    }
    check(s == HPCT_SUCCESS, "a set of three gradients carved from one buffer (%s)",
          hpct_last_error(ctx));
    char label[96];
    snprintf(label, sizeof label, "a gradient buffer%s averaged %s",
             mixed ? " (ordinary memory on rank 0)" : "",
             direct ? "whole" : "as a set of three carved from it");
    if (g && plain && w && !s) grads_size(ctx, ref, label, grads, total, direct ? NULL : p);
    hpct_params_destroy(p);
    hpct_free_grads(ctx, g);
    free(plain), free(w);
    check(hpct_finalize(ctx) == HPCT_SUCCESS, "hpct_finalize");
    return hpct_finalize(ref) == HPCT_SUCCESS && !failures ? 0 : 1; /* MPI_Finalize */
}

static void stop_self(int sig)
{
    (void)sig;
    raise(SIGSTOP);
}

/* The last rank stops inside an average through the node window, whose deadline is
 * seconds; the others must get HPCT_ERR_TIMEOUT naming it, then end the job with
 * HPCT_EXIT_HANG. grads 0: ordinary memory, made unreadable, so the library's copy into the
 * window stops it (after its arrival token is sent); grads 1: an hpct_alloc_grads buffer
 * averaged in place, its own segment made unreadable in its own mapping, so its block sum
 * (after the first barrier) stops it. */
static int run_stop_inside(double seconds, const char *pidfile, int grads)
{
    hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
    cfg.collective_timeout_s = seconds;
    hpct_ctx_t ctx = mpi_start(&cfg);
    MPI_Comm alive;
    int last = world_rank == world_size - 1;
    MPI_Comm_split(MPI_COMM_WORLD, last ? MPI_UNDEFINED : 0, world_rank, &alive);
    char name[512];
    snprintf(name, sizeof name, "%s.%d", pidfile, world_rank);
    FILE *f = fopen(name, "w");
    if (f) fprintf(f, "%ld\n", (long)getpid()), fclose(f);
    size_t n = grads ? (size_t)1 << 18 : (size_t)1 << 14, page = (size_t)sysconf(_SC_PAGESIZE);
    float *v = NULL;
    if (grads && hpct_alloc_grads(ctx, n, &v)) return 7;
    if (!grads) {
        v = mmap(NULL, n * sizeof *v, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (v == MAP_FAILED) return 7;
    }
    fill(v, n, world_rank);
    if (hpct_allreduce_mean(ctx, v, n)) return 5;
    if (last) {
        uintptr_t lo = grads ? ((uintptr_t)v + page - 1) / page * page : (uintptr_t)v;
        signal(SIGSEGV, stop_self);
        mprotect((void *)lo, n * sizeof *v - (grads ? page : 0), PROT_NONE);
        hpct_allreduce_mean(ctx, v, n);
        return 6; /* only if someone continues us */
    }
    hpct_status_t s = hpct_allreduce_mean(ctx, v, n);
    fprintf(stderr, "rank %d: status %d (%s): %s\n", world_rank, s, hpct_strerror(s),
            hpct_last_error(ctx));
    MPI_Barrier(alive);
    if (s == HPCT_ERR_TIMEOUT) hpct_abort_job(ctx, HPCT_EXIT_HANG);
    return 4;
}

int main(int argc, char **argv)
{
    if (argc < 2) return 2;
    if (!strcmp(argv[1], "topo") && argc == 7) return run_topo(argv);
    if (!strcmp(argv[1], "allreduce")) return run_allreduce();
    if (!strcmp(argv[1], "thread") && argc == 3) return run_thread(argv[2]);
    if (!strcmp(argv[1], "replicas")) return run_replicas();
    if (!strcmp(argv[1], "opfail") && argc == 3) return run_opfail(atof(argv[2]));
    if (!strcmp(argv[1], "badstep") && argc == 3) return run_badstep(argv[2]);
    if (!strcmp(argv[1], "lateterm") && argc == 3) return run_lateterm(argv[2]);
    if (!strcmp(argv[1], "curve") && argc == 3) return run_curve(argv[2]);
    if (!strcmp(argv[1], "hang") && argc == 4) return run_hang(atof(argv[2]), argv[3]);
    if (!strcmp(argv[1], "nodewin")) return run_nodewin();
    if (!strcmp(argv[1], "algo")) return run_algo();
    if (!strcmp(argv[1], "grads") && (argc == 3 || argc == 4))
        return run_grads(atoi(argv[2]), argc == 4 ? argv[3] : "shm");
    if ((!strcmp(argv[1], "gradset") || !strcmp(argv[1], "gradbuf")) && (argc == 3 || argc == 4))
        return run_gradset(argv[2], argc == 4 && !strcmp(argv[3], "mixed"),
                           !strcmp(argv[1], "gradbuf"));
    if (!strcmp(argv[1], "grads_hang") && argc == 4)
        return run_stop_inside(atof(argv[2]), argv[3], 1);
    if (!strcmp(argv[1], "nodewin_hang") && argc == 4)
        return run_stop_inside(atof(argv[2]), argv[3], 0);
    fprintf(stderr, "usage: see the comment at the top of t/dist_prog.c\n");
    return 2;
}
