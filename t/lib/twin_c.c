/* twin_c.c: the C half of the Fortran/C twin test (t/test_fortran_twin.sh); fortran_twin.F90
 * does exactly the same through the Fortran module, and the parameters must be bit-identical.
 *   twin_c manual OUT            30 steps of a 16-32(tanh)-4 MLP on batches made in memory
 *   twin_c cnn OUT               the same 30 steps of a small CNN (cnn() below)
 *   twin_c train OUT MANIFEST    hpct_train for 20 steps on sharded HDF5 data
 * Every rank runs it (mpirun); rank 0 writes the parameters (raw fp32, in buffer order) to OUT. */
#include <hpctrain.h>

#include <stdio.h>
#include <string.h>

#define FEATURES     16
#define CLASSES      4
#define GLOBAL_BATCH 24
#define STEPS        30

#define CHECK(call)                                                                                \
    do {                                                                                           \
        hpct_status_t s_ = (call);                                                                 \
        if (s_ != HPCT_SUCCESS) {                                                                  \
            fprintf(stderr, "%s: %s (%s)\n", #call, hpct_strerror(s_), hpct_last_error(ctx));      \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

/* Sample i, feature f of the in-memory data: integer arithmetic and one fp32 division, so
 * Fortran computes the same bits. */
static float feature(int i, int f)
{
    return (float)(((i + 1) * (f + 3) * 7919) % 2001 - 1000) / 1000.0f;
}

static int32_t label(int i)
{
    return (i * 31 + 7) % CLASSES;
}

static int write_params(hpct_ctx_t ctx, hpct_params_t params, const char *out)
{
    int n;
    CHECK(hpct_params_size(params, &n, NULL));
    FILE *f = fopen(out, "wb");
    if (!f) return 1;
    for (int i = 0; i < n; i++) {
        float *p;
        size_t count;
        CHECK(hpct_params_get(params, i, NULL, &p, NULL, &count));
        fwrite(p, sizeof *p, count, f);
    }
    return fclose(f) != 0;
}

/* The features as a 1x4x4 image: conv 6 k3 same (tanh) [6x4x4], max pool 2 [6x2x2], upsample 2
 * [6x4x4], conv 4 k2 s2 valid (relu) [4x2x2], average pool 2/1 [4x1x1], dense CLASSES: both
 * paddings, strides 1 and 2, both poolings, He and Xavier initialisation. */
static int cnn(hpct_ctx_t ctx, hpct_model_t model)
{
    const int hw[2] = {4, 4};
    CHECK(hpct_model_add_reshape(model, 1, 2, hw));
    CHECK(hpct_model_add_conv(model, 6, 3, 1, HPCT_PAD_SAME, HPCT_ACT_TANH, HPCT_INIT_AUTO));
    CHECK(hpct_model_add_pool(model, HPCT_POOL_MAX, 2, 2, HPCT_ACT_IDENTITY));
    CHECK(hpct_model_add_upsample(model, 2, HPCT_ACT_IDENTITY));
    CHECK(hpct_model_add_conv(model, 4, 2, 2, HPCT_PAD_VALID, HPCT_ACT_RELU, HPCT_INIT_AUTO));
    CHECK(hpct_model_add_pool(model, HPCT_POOL_AVG, 2, 1, HPCT_ACT_IDENTITY));
    return 0;
}

static int build(hpct_ctx_t ctx, int max_batch, int conv, hpct_model_t *model,
                 hpct_optimizer_t *opt)
{
    CHECK(hpct_model_create(ctx, FEATURES, model));
    if (conv && cnn(ctx, *model)) return 1;
    if (!conv) CHECK(hpct_model_add_dense(*model, 32, HPCT_ACT_TANH, HPCT_INIT_AUTO));
    CHECK(hpct_model_add_dense(*model, CLASSES, HPCT_ACT_IDENTITY, HPCT_INIT_AUTO));
    CHECK(hpct_model_build(*model, max_batch));
    hpct_params_t params;
    CHECK(hpct_model_params(*model, &params));
    hpct_optim_config_t oc = HPCT_OPTIM_CONFIG_INITIALIZER;
    oc.lr = 0.1f;
    oc.momentum = 0.9f;
    oc.weight_decay = 1e-4f;
    CHECK(hpct_optimizer_create(params, &oc, opt));
    return 0;
}

static int manual(hpct_ctx_t ctx, hpct_params_t params, hpct_model_t model, hpct_optimizer_t opt)
{
    int local, offset;
    CHECK(hpct_batch_split(ctx, GLOBAL_BATCH, &local, &offset));
    float x[GLOBAL_BATCH][FEATURES]; /* [local, features] */
    int32_t y[GLOBAL_BATCH];
    for (int s = 0; s < STEPS; s++) {
        for (int k = 0; k < local; k++) {
            int i = (s * GLOBAL_BATCH + offset + k) % 256;
            for (int f = 0; f < FEATURES; f++) x[k][f] = feature(i, f);
            y[k] = label(i);
        }
        float loss;
        CHECK(hpct_model_loss_grad(model, &x[0][0], y, local, 0, &loss));
        CHECK(hpct_params_average_grads(params));
        CHECK(hpct_optimizer_step(opt));
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3 || (strcmp(argv[1], "train") == 0 && argc < 4)) {
        fprintf(stderr, "usage: twin_c manual|cnn|train OUT [MANIFEST]\n");
        return 2;
    }
    int train = strcmp(argv[1], "train") == 0, conv = strcmp(argv[1], "cnn") == 0;
    hpct_ctx_t ctx = NULL;
    hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
    cfg.seed = 11;
    cfg.collective_timeout_s = 60;
    CHECK(hpct_init(&cfg, &ctx));
    hpct_topology_t topo = HPCT_TOPOLOGY_INITIALIZER;
    CHECK(hpct_topology(ctx, &topo));
    hpct_model_t model;
    hpct_optimizer_t opt;
    hpct_params_t params;
    if (build(ctx, train ? 48 / topo.size : GLOBAL_BATCH, conv, &model, &opt)) return 1;
    CHECK(hpct_model_params(model, &params));
    if (train) {
        hpct_dataset_t ds;
        CHECK(hpct_dataset_open(ctx, argv[3], NULL, &ds));
        hpct_train_config_t tc = HPCT_TRAIN_CONFIG_INITIALIZER;
        tc.global_batch = 48;
        tc.max_steps = 20;
        tc.log_interval = 0;
        hpct_train_result_t res;
        CHECK(hpct_train(model, opt, ds, NULL, &tc, &res));
        hpct_dataset_close(ds);
    } else if (manual(ctx, params, model, opt)) {
        return 1;
    }
    if (topo.rank == 0 && write_params(ctx, params, argv[2])) return 1;
    hpct_optimizer_destroy(opt);
    hpct_model_destroy(model);
    CHECK(hpct_finalize(ctx));
    return 0;
}
