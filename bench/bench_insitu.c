/* bench_insitu.c: one training step through hpct_insitu_step against the same work through
 * the C calls alone (hpct_model_loss_grad, hpct_params_average_grads when distributed,
 * hpct_optimizer_step), on the 784-512-512-10 ReLU MLP at batch 128 per rank, in one run:
 * blocks of reps alternate A B B A so that drift hits both sides alike. Reports the time per
 * step of each, their ratio (target <= 1.02) and the median of the per-pair ratios (robust
 * to a burst of load from other processes on a shared machine).
 *   bench/bench_insitu                    one process, a local context (hpct_ctx_create)
 *   mpirun -np 2 bench/bench_insitu mpi   distributed (hpct_init), timed on rank 0
 * Run with OPENBLAS_NUM_THREADS=1 (the program also asks for one thread). */
#include <hpctrain.h>

#include <stdio.h>
#include <string.h>
#include "bench_util.h"

#define BATCH  128
#define BLOCKS 20 /* blocks per side */
#define REPS   10 /* steps per block */

struct bench {
    hpct_ctx_t ctx;
    hpct_model_t model;
    hpct_params_t params;
    hpct_optimizer_t opt;
    hpct_insitu_t session;
    int dist;
    float *x;
    int32_t y[BATCH];
};

static int fail(struct bench *b, const char *what)
{
    fprintf(stderr, "bench_insitu: %s: %s\n", what, hpct_last_error(b->ctx));
    return 1;
}

static int setup(struct bench *b, int dist)
{
    hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
    cfg.num_threads = 1;
    b->dist = dist;
    if (dist ? hpct_init(&cfg, &b->ctx) : hpct_ctx_create(&cfg, &b->ctx)) return 1;
    hpct_optim_config_t oc = HPCT_OPTIM_CONFIG_INITIALIZER;
    oc.lr = 0.05f;
    oc.momentum = 0.9f;
    hpct_insitu_config_t ic = HPCT_INSITU_CONFIG_INITIALIZER;
    hpct_model_create(b->ctx, 784, &b->model);
    hpct_model_add_dense(b->model, 512, HPCT_ACT_RELU, HPCT_INIT_AUTO);
    hpct_model_add_dense(b->model, 512, HPCT_ACT_RELU, HPCT_INIT_AUTO);
    hpct_model_add_dense(b->model, 10, HPCT_ACT_IDENTITY, HPCT_INIT_AUTO);
    if (hpct_model_build(b->model, BATCH) || hpct_model_params(b->model, &b->params) ||
        hpct_optimizer_create(b->params, &oc, &b->opt) ||
        hpct_insitu_create(b->model, NULL, b->opt, NULL, &ic, &b->session) ||
        hpct_insitu_start(b->session, NULL))
        return fail(b, "setup");
    b->x = filled((size_t)BATCH * 784, 1.0f);
    for (int i = 0; i < BATCH; i++) b->y[i] = i % 10;
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* REPS steps through the session. */
static int insitu_block(struct bench *b)
{
    for (int i = 0; i < REPS; i++)
        if (hpct_insitu_step(b->session, b->x, b->y, BATCH, NULL)) return fail(b, "insitu step");
    return 0;
}

/* REPS steps of the same work through the plain calls. */
static int plain_block(struct bench *b)
{
    float loss;
    for (int i = 0; i < REPS; i++)
        if (hpct_model_loss_grad(b->model, b->x, b->y, BATCH, 0, &loss) ||
            (b->dist && hpct_params_average_grads(b->params)) || hpct_optimizer_step(b->opt))
            return fail(b, "plain step");
    return 0;
}

int main(int argc, char **argv)
{
    struct bench b;
    memset(&b, 0, sizeof b);
    if (setup(&b, argc > 1 && !strcmp(argv[1], "mpi"))) return 1;
    hpct_topology_t topo = HPCT_TOPOLOGY_INITIALIZER;
    if (b.dist) hpct_topology(b.ctx, &topo);
    int world = b.dist ? topo.size : 1;
    if (insitu_block(&b) || plain_block(&b)) return 1; /* warm-up */
    double t_insitu = 0, t_plain = 0, ratio[BLOCKS];
    for (int k = 0; k < BLOCKS; k++) {
        int insitu_first = k % 2 == 0; /* A B, B A, ... */
        double t[2];                   /* in-situ, plain */
        for (int side = 0; side < 2; side++) {
            int is_insitu = side == 0 ? insitu_first : !insitu_first;
            double t0 = now();
            if (is_insitu ? insitu_block(&b) : plain_block(&b)) return 1;
            t[!is_insitu] = now() - t0;
        }
        t_insitu += t[0], t_plain += t[1], ratio[k] = t[0] / t[1];
    }
    qsort(ratio, BLOCKS, sizeof *ratio, cmp_double);
    int steps = BLOCKS * REPS;
    if (!b.dist || topo.rank == 0) {
        printf("bench_insitu: 784-512-512-10 ReLU MLP, batch %d per rank, %d rank%s (%s), "
               "SGD momentum, 1 thread, %d steps per side in alternating blocks of %d\n",
               BATCH, world, world > 1 ? "s" : "", b.dist ? "hpct_init" : "hpct_ctx_create", steps,
               REPS);
        printf("  hpct_insitu_step:                  %8.3f ms per step\n", 1e3 * t_insitu / steps);
        printf("  %-34s %8.3f ms per step\n",
               b.dist ? "loss_grad + average_grads + step:" : "loss_grad + optimizer_step:",
               1e3 * t_plain / steps);
        printf("  ratio in-situ / plain calls:       %8.3f  (target <= 1.02)\n",
               t_insitu / t_plain);
        printf("  median of %d block-pair ratios:    %8.3f  (min %.3f, max %.3f)\n", BLOCKS,
               0.5 * (ratio[BLOCKS / 2 - 1] + ratio[BLOCKS / 2]), ratio[0], ratio[BLOCKS - 1]);
    }
    hpct_insitu_destroy(b.session);
    hpct_optimizer_destroy(b.opt);
    hpct_model_destroy(b.model);
    free(b.x);
    if (b.dist) return hpct_finalize(b.ctx) ? 1 : 0;
    hpct_ctx_destroy(b.ctx);
    return 0;
}
