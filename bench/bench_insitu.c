/* bench_insitu.c: one training step through hpct_insitu_step against the same work through
 * the C calls alone (hpct_model_loss_grad, hpct_params_average_grads when distributed,
 * hpct_optimizer_step), on the 784-512-512-10 ReLU MLP at batch 128 per rank, in one run:
 * blocks of reps alternate A B B A so that drift hits both sides alike. Reports the time per
 * step of each, their ratio (target <= 1.02), and two figures robust to bursts of load from
 * other processes on a shared machine: the median of the per-pair ratios and the ratio of
 * the fastest blocks of each side. A second comparison on a 16-float bring-your-own set
 * (hpct_insitu_step_grads against hpct_params_average_grads + hpct_optimizer_step) shows
 * the fixed cost the session adds per step (its agreement), free of the model's compute.
 *   bench/bench_insitu                    one process, a local context (hpct_ctx_create)
 *   mpirun -np 2 bench/bench_insitu mpi   distributed (hpct_init), timed on rank 0
 * Run with OPENBLAS_NUM_THREADS=1 (the program also asks for one thread). */
#include <hpctrain.h>

#include <stdio.h>
#include <string.h>
#include "bench_util.h"

#define BATCH  128
#define BLOCKS 40 /* blocks per side */
#define TINY   16 /* floats of the bring-your-own set that isolates the per-step overhead */

struct bench {
    hpct_ctx_t ctx;
    hpct_model_t model;
    hpct_params_t params;
    hpct_optimizer_t opt;
    hpct_insitu_t session;
    hpct_params_t tiny; /* TINY floats, own gradients */
    hpct_optimizer_t tiny_opt;
    hpct_insitu_t tiny_session;
    float tiny_w[TINY], tiny_g[TINY];
    int dist, rank, world;
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
    b->dist = dist, b->world = 1;
    if (dist ? hpct_init(&cfg, &b->ctx) : hpct_ctx_create(&cfg, &b->ctx)) return 1;
    hpct_topology_t topo = HPCT_TOPOLOGY_INITIALIZER;
    if (dist && !hpct_topology(b->ctx, &topo)) b->rank = topo.rank, b->world = topo.size;
    hpct_optim_config_t oc = HPCT_OPTIM_CONFIG_INITIALIZER;
    oc.lr = 0.05f;
    oc.momentum = 0.9f;
    hpct_insitu_config_t ic = HPCT_INSITU_CONFIG_INITIALIZER;
    ic.catch_signals = 0; /* two sessions in one process */
    hpct_model_create(b->ctx, 784, &b->model);
    hpct_model_add_dense(b->model, 512, HPCT_ACT_RELU, HPCT_INIT_AUTO);
    hpct_model_add_dense(b->model, 512, HPCT_ACT_RELU, HPCT_INIT_AUTO);
    hpct_model_add_dense(b->model, 10, HPCT_ACT_IDENTITY, HPCT_INIT_AUTO);
    if (hpct_model_build(b->model, BATCH) || hpct_model_params(b->model, &b->params) ||
        hpct_optimizer_create(b->params, &oc, &b->opt) ||
        hpct_insitu_create(b->model, NULL, b->opt, NULL, &ic, &b->session) ||
        hpct_insitu_start(b->session, NULL) || hpct_params_create(b->ctx, &b->tiny) ||
        hpct_params_register(b->tiny, "w", b->tiny_w, b->tiny_g, TINY) ||
        hpct_optimizer_create(b->tiny, &oc, &b->tiny_opt) ||
        hpct_insitu_create(NULL, b->tiny, b->tiny_opt, NULL, &ic, &b->tiny_session) ||
        hpct_insitu_start(b->tiny_session, NULL))
        return fail(b, "setup");
    b->x = filled((size_t)BATCH * 784, 1.0f);
    for (int i = 0; i < BATCH; i++) b->y[i] = i % 10;
    return 0;
}

static void teardown(struct bench *b)
{
    hpct_insitu_destroy(b->session);
    hpct_insitu_destroy(b->tiny_session);
    hpct_optimizer_destroy(b->opt);
    hpct_optimizer_destroy(b->tiny_opt);
    hpct_params_destroy(b->tiny);
    hpct_model_destroy(b->model);
    free(b->x);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One step of each side of each comparison; nonzero on failure. */
static int mlp_insitu(struct bench *b)
{
    return hpct_insitu_step(b->session, b->x, b->y, BATCH, NULL) ? fail(b, "insitu step") : 0;
}

static int mlp_plain(struct bench *b)
{
    float loss;
    if (hpct_model_loss_grad(b->model, b->x, b->y, BATCH, 0, &loss) ||
        (b->dist && hpct_params_average_grads(b->params)) || hpct_optimizer_step(b->opt))
        return fail(b, "plain step");
    return 0;
}

static int tiny_insitu(struct bench *b)
{
    return hpct_insitu_step_grads(b->tiny_session, BATCH, 1.0f, NULL) ? fail(b, "tiny step") : 0;
}

static int tiny_plain(struct bench *b)
{
    if ((b->dist && hpct_params_average_grads(b->tiny)) || hpct_optimizer_step(b->tiny_opt))
        return fail(b, "tiny plain step");
    return 0;
}

typedef int (*step_fn)(struct bench *);

/* BLOCKS blocks of reps steps per side, alternating A B, B A, ...; prints the figures. */
static int compare(struct bench *b, const char *what, step_fn insitu, step_fn plain, int reps,
                   const char *plain_name)
{
    double total[2] = {0, 0}, best[2] = {1e30, 1e30}, ratio[BLOCKS];
    for (int i = 0; i < reps; i++) /* warm-up */
        if (insitu(b) || plain(b)) return 1;
    for (int k = 0; k < BLOCKS; k++) {
        double t[2]; /* in-situ, plain */
        for (int n = 0; n < 2; n++) {
            int side = (n + k) % 2;
            double t0 = now();
            for (int i = 0; i < reps; i++)
                if ((side ? plain : insitu)(b)) return 1;
            t[side] = now() - t0;
        }
        for (int side = 0; side < 2; side++) {
            total[side] += t[side];
            best[side] = t[side] < best[side] ? t[side] : best[side];
        }
        ratio[k] = t[0] / t[1];
    }
    qsort(ratio, BLOCKS, sizeof *ratio, cmp_double);
    if (b->rank) return 0;
    int steps = BLOCKS * reps, tiny = insitu == tiny_insitu;
    double unit = tiny ? 1e6 : 1e3; /* us or ms per step */
    const char *u = tiny ? "us" : "ms";
    printf("%s: %d steps per side in alternating blocks of %d\n", what, steps, reps);
    printf("  hpct_insitu_step%-18s %9.3f %s per step\n", tiny ? "_grads:" : ":",
           unit * total[0] / steps, u);
    printf("  %-34s %9.3f %s per step\n", plain_name, unit * total[1] / steps, u);
    printf("  fastest blocks:                    %9.3f / %.3f %s per step\n", unit * best[0] / reps,
           unit * best[1] / reps, u);
    if (tiny) {
        printf("  added per step (fastest blocks):   %9.3f us\n", 1e6 * (best[0] - best[1]) / reps);
        return 0;
    }
    printf("  ratio in-situ / plain calls:       %9.3f  (target <= 1.02)\n", total[0] / total[1]);
    printf("  median of %d block-pair ratios:    %9.3f  (min %.3f, max %.3f)\n", BLOCKS,
           0.5 * (ratio[BLOCKS / 2 - 1] + ratio[BLOCKS / 2]), ratio[0], ratio[BLOCKS - 1]);
    printf("  ratio of the fastest blocks:       %9.3f\n", best[0] / best[1]);
    return 0;
}

int main(int argc, char **argv)
{
    struct bench b;
    memset(&b, 0, sizeof b);
    if (setup(&b, argc > 1 && !strcmp(argv[1], "mpi"))) return 1;
    if (!b.rank)
        printf("bench_insitu: %d rank%s (%s), SGD momentum, 1 thread\n", b.world,
               b.world > 1 ? "s" : "", b.dist ? "hpct_init" : "hpct_ctx_create");
    int rc = compare(&b, "784-512-512-10 ReLU MLP, batch 128 per rank", mlp_insitu, mlp_plain, 5,
                     b.dist ? "loss_grad + average_grads + step:" : "loss_grad + optimizer_step:");
    if (!rc)
        rc = compare(&b, "per-step overhead alone: own gradients, 16 floats", tiny_insitu,
                     tiny_plain, 200,
                     b.dist ? "average_grads + optimizer_step:" : "optimizer_step:");
    teardown(&b);
    if (b.dist) return hpct_finalize(b.ctx) || rc ? 1 : 0;
    hpct_ctx_destroy(b.ctx);
    return rc;
}
