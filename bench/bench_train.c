/* bench_train.c: Fashion-MNIST throughput of synchronous data-parallel training.
 * 784-512-512-10 ReLU MLP, softmax cross-entropy, SGD lr 0.05 momentum 0.9, global batch
 * 256 split over the ranks, fp32, one BLAS thread per rank, data in memory, 1 epoch.
 *   mpirun -np W bench/bench_train [DIR] [MODES]
 * DIR defaults to /usr/share/datasets/fashion-mnist (IDX .gz files, read through gzip -dc).
 * MODES is a comma list, each mode a fresh model from the same seed trained 1 epoch:
 *   overlap   averaging started per layer inside backward (hpct_model_set_grad_averaging;
 *             where the node window is set up, the model's gradients move into a shared
 *             window and the per-layer averages run in place)
 *   copy      overlap on a second context made with HPCT_NODE_IN_PLACE=0 (the per-layer
 *             averages copy the gradients into the node window, as before in-place averages)
 *   blocking  hpct_params_average_grads after backward (no overlap; the model's gradients
 *             move into the node window at hpct_params_broadcast, as in overlap mode)
 *   none      no averaging (replicas drift; only to time the compute)
 *   floor     none plus the shared-memory floor's average per step (below)
 *   wire      none plus the wire floor's exchange per step (below)
 *   alone     none plus, after every backward, one hpct_allreduce_mean in place of an
 *             hpct_alloc_grads buffer of the gradient size (not the model's gradients): what
 *             the library's in-place average costs a step whose cores all compute
 *   sync      none plus, after every backward, one MPI_Barrier: what keeping the ranks in
 *             step costs (each step waits for the slowest rank), the least synchronisation
 *             any synchronous average needs
 *   read      sync plus the read floor of the gradient size (below)
 *   touch     none plus, after every backward, hpct_params_scale_grads(params, 1): one pass
 *             that reads and rewrites every gradient in place, with no peer and no barrier
 *   least     read plus touch: the least work of any average that hands the mean back in the
 *             gradient buffers (the peers' gradients read, every own gradient rewritten, the
 *             ranks kept in step), without its sums, its second barrier or the writes into
 *             the peers' lines
 * Prints samples/s, the test accuracy, the time spent waiting for communication and the share
 * of the epoch rank 0 spent on a CPU (getrusage: near 100 % means its core was never idle).
 * Mode floor (W > 1, every rank on one node) is none plus, after every backward, one
 * average of the model's gradient size through the shared-memory floor (floor.h, on a
 * buffer of its own): the least memory work any average needs per step, which no overlap
 * can hide when every core is computing; floor - none is what averaging must cost here.
 * Mode wire is none plus, every step, one exchange of the wire floor (floor.h) for the
 * gradient size: the least data any allreduce moves, by MPI's point-to-point path, no sums.
 * Mode read (one node) is sync plus, after the barrier, the read floor (floor.h) of the
 * gradient size: only the reads of the peers' memory that any average in place needs, of
 * buffers the peers did not write since (their lines may be in the shared cache, not dirty
 * in the peer's core as fresh gradients are): less than any synchronous in-place average
 * can cost a step whose cores all compute.
 * HPCT_FUSION_BYTES=N sets cfg.fusion_bytes (blocking mode). */
#include <hpctrain.h>

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "bench_util.h"
#include "floor.h"

#include <sys/resource.h>

#define GLOBAL_BATCH 256

static int rank, size;

/* The whole decompressed IDX file in memory (via gzip -dc), or NULL. */
static unsigned char *read_gz(const char *dir, const char *name, size_t *len)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "gzip -dc '%s/%s'", dir, name);
    FILE *f = popen(cmd, "r");
    if (!f) return NULL;
    size_t cap = 1 << 20, n = 0;
    unsigned char *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) buf = realloc(buf, cap *= 2);
    }
    if (pclose(f) != 0 || !buf) {
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

static unsigned be32(const unsigned char *p)
{
    return (unsigned)p[0] << 24 | (unsigned)p[1] << 16 | (unsigned)p[2] << 8 | p[3];
}

/* Images as floats in [0, 1] [n, 784] and labels [n]; returns n or 0. */
static int load(const char *dir, const char *images, const char *labels, float **x, int32_t **y)
{
    size_t li, ll;
    unsigned char *im = read_gz(dir, images, &li), *lb = read_gz(dir, labels, &ll);
    if (!im || !lb || li < 16 || ll < 8 || be32(im) != 2051 || be32(lb) != 2049) {
        fprintf(stderr, "cannot read %s/%s and %s (IDX .gz files)\n", dir, images, labels);
        return 0;
    }
    int n = (int)be32(im + 4);
    *x = malloc(sizeof **x * (size_t)n * 784);
    *y = malloc(sizeof **y * (size_t)n);
    for (size_t i = 0; i < (size_t)n * 784; i++) (*x)[i] = im[16 + i] / 255.0f;
    for (int i = 0; i < n; i++) (*y)[i] = lb[8 + i];
    free(im), free(lb);
    return n;
}

static void shuffle(int *perm, int n, unsigned long long seed)
{
    for (int i = 0; i < n; i++) perm[i] = i;
    for (int i = n - 1; i > 0; i--) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        int j = (int)((seed >> 33) % (unsigned long long)(i + 1));
        int t = perm[i];
        perm[i] = perm[j], perm[j] = t;
    }
}

struct data {
    float *x, *tx;
    int32_t *y, *ty;
    int n, tn;
};

/* CPU seconds (user + system) of this process so far. */
static double cpu_s(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + 1e-6 * (double)u.ru_utime.tv_usec +
           (double)u.ru_stime.tv_sec + 1e-6 * (double)u.ru_stime.tv_usec;
}

/* The benchmark's MLP (784-512-512-10), built for batches of up to max_batch. */
static hpct_model_t mlp(hpct_ctx_t ctx, int max_batch)
{
    hpct_model_t m;
    hpct_model_create(ctx, 784, &m);
    hpct_model_add_dense(m, 512, HPCT_ACT_RELU, HPCT_INIT_AUTO);
    hpct_model_add_dense(m, 512, HPCT_ACT_RELU, HPCT_INIT_AUTO);
    hpct_model_add_dense(m, 10, HPCT_ACT_IDENTITY, HPCT_INIT_AUTO);
    hpct_model_build(m, max_batch);
    return m;
}

/* Model gradient floats of the benchmark's MLP. */
static size_t grad_count(hpct_ctx_t ctx)
{
    hpct_model_t m = mlp(ctx, 1);
    hpct_params_t p;
    size_t n = 0;
    hpct_model_params(m, &p);
    hpct_params_size(p, NULL, &n);
    hpct_model_destroy(m);
    return n;
}

/* One epoch in mode; returns seconds of training (eval excluded); *cpu: rank 0's CPU seconds. */
static double epoch(hpct_ctx_t ctx, const struct data *d, const char *mode, double *acc,
                    double *wait, double *cpu, struct shm_floor *fl, float *wire, float *alone)
{
    int local, off;
    if (hpct_batch_split(ctx, GLOBAL_BATCH, &local, &off)) return -1;
    hpct_model_t m;
    hpct_params_t p;
    hpct_optimizer_t opt;
    hpct_optim_config_t oc = HPCT_OPTIM_CONFIG_INITIALIZER;
    oc.lr = 0.05f, oc.momentum = 0.9f;
    m = mlp(ctx, 1000);
    hpct_model_params(m, &p);
    hpct_params_broadcast(p, 0);
    hpct_optimizer_create(p, &oc, &opt);
    int overlap = !strcmp(mode, "overlap") || !strcmp(mode, "copy");
    int blocking = !strcmp(mode, "blocking"), sync = !strcmp(mode, "sync");
    int touch = !strcmp(mode, "touch") || !strcmp(mode, "least");
    int reading = fl && (!strcmp(mode, "read") || !strcmp(mode, "least"));
    size_t grads = 0;
    hpct_params_size(p, NULL, &grads);
    hpct_model_set_grad_averaging(m, overlap);
    int *perm = malloc(sizeof *perm * (size_t)d->n);
    shuffle(perm, d->n, 2024);
    float *xb = malloc(sizeof *xb * (size_t)local * 784);
    int32_t *yb = malloc(sizeof *yb * (size_t)local);
    double w0;
    hpct_comm_stats(ctx, &w0, NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now(), c0 = cpu_s();
    int steps = d->n / GLOBAL_BATCH;
    for (int s = 0; s < steps; s++) {
        for (int i = 0; i < local; i++) {
            int k = perm[s * GLOBAL_BATCH + off + i];
            memcpy(xb + (size_t)i * 784, d->x + (size_t)k * 784, 784 * sizeof *xb);
            yb[i] = d->y[k];
        }
        hpct_status_t st = hpct_model_loss_grad(m, xb, yb, local, 0, NULL);
        if (!st && blocking) st = hpct_params_average_grads(p);
        if (!st && touch) st = hpct_params_scale_grads(p, 1.0f);
        if (!st && fl && !reading) shm_floor_average(fl, grads);
        if (!st && wire) wire_floor_exchange(MPI_COMM_WORLD, wire, grads);
        if (!st && alone) st = hpct_allreduce_mean(ctx, alone, grads);
        if (!st && (sync || reading)) MPI_Barrier(MPI_COMM_WORLD);
        if (!st && reading) shm_floor_read(fl, grads);
        if (!st) st = hpct_optimizer_step(opt);
        if (st) {
            fprintf(stderr, "rank %d: step %d: %s\n", rank, s, hpct_last_error(ctx));
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    double t = now() - t0;
    *cpu = cpu_s() - c0;
    MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    hpct_comm_stats(ctx, wait, NULL);
    *wait -= w0;
    hpct_model_evaluate(m, d->tx, d->ty, (size_t)d->tn, NULL, acc);
    hpct_optimizer_destroy(opt);
    hpct_model_destroy(m);
    free(perm), free(xb), free(yb);
    return t;
}

/* A second context whose node window never averages in place (mode copy). */
static hpct_ctx_t copying_context(const hpct_config_t *cfg)
{
    hpct_ctx_t c = NULL;
    setenv("HPCT_NODE_IN_PLACE", "0", 1);
    if (hpct_init(cfg, &c)) c = NULL;
    unsetenv("HPCT_NODE_IN_PLACE");
    return c;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "/usr/share/datasets/fashion-mnist";
    char modes[256];
    snprintf(modes, sizeof modes, "%s", argc > 2 ? argv[2] : "overlap");
    hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
    cfg.num_threads = 1;
    cfg.fusion_bytes = (size_t)env_long("HPCT_FUSION_BYTES", (long)cfg.fusion_bytes, 0, 1L << 40);
    hpct_ctx_t ctx;
    if (hpct_init(&cfg, &ctx)) return 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    struct data d;
    d.n = load(dir, "train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", &d.x, &d.y);
    d.tn = load(dir, "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz", &d.tx, &d.ty);
    if (!d.n || !d.tn) MPI_Abort(MPI_COMM_WORLD, 2);
    size_t grads = grad_count(ctx);
    hpct_ctx_t copying = strstr(modes, "copy") ? copying_context(&cfg) : NULL;
    if (strstr(modes, "copy") && !copying) MPI_Abort(MPI_COMM_WORLD, 4);
    for (char *mode = strtok(modes, ","); mode; mode = strtok(NULL, ",")) {
        double acc = 0, wait = 0, cpu = 0;
        struct shm_floor *fl = NULL;
        int on_window = !strcmp(mode, "floor") || !strcmp(mode, "read") || !strcmp(mode, "least");
        if (on_window && !(fl = shm_floor_create(MPI_COMM_WORLD, grads))) {
            if (rank == 0)
                printf("hpctrain W=%d mode=%s: the ranks do not share memory\n", size, mode);
            continue;
        }
        if (fl && !shm_floor_correct(fl)) MPI_Abort(MPI_COMM_WORLD, 3);
        float *wire = NULL;
        if (!strcmp(mode, "wire"))
            wire = calloc(wire_floor_scratch(MPI_COMM_WORLD, grads) + 1, sizeof *wire);
        float *alone = NULL;
        if (!strcmp(mode, "alone") && hpct_alloc_grads(ctx, grads, &alone))
            MPI_Abort(MPI_COMM_WORLD, 5);
        hpct_ctx_t c = strcmp(mode, "copy") ? ctx : copying;
        double t = epoch(c, &d, mode, &acc, &wait, &cpu, fl, wire, alone);
        if (alone) hpct_free_grads(ctx, alone);
        shm_floor_free(fl);
        free(wire);
        int samples = d.n / GLOBAL_BATCH * GLOBAL_BATCH;
        if (rank == 0)
            printf("hpctrain W=%d mode=%-8s samples/s %8.0f  epoch %.3f s  test accuracy %.4f  "
                   "comm wait %.3f s  cpu %.0f%%\n",
                   size, mode, samples / t, t, acc, wait, 100.0 * cpu / t);
        fflush(stdout);
    }
    if (copying && hpct_finalize(copying)) return 1;
    return hpct_finalize(ctx) ? 1 : 0;
}
