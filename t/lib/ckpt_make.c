/* ckpt_make.c: real checkpoints for t/test_ckpt_tool.sh and t/test_train_crafted.sh, and
 * crafted ones (as a buggy or hostile writer would make them, checksums recomputed).
 *   ckpt_make save DIR [--ulp] [--deep] STEP...   train a tiny MLP (4-8-3, SGD with
 *       momentum) on a fixed batch and save a checkpoint after each listed step (10 steps
 *       per epoch); --ulp moves params/dense0.weight[5] up by one ulp just before the last
 *       save; --deep trains 4-8-8-3 instead (other shapes, one more layer).
 *   ckpt_make flip FILE DATASET          XOR one byte in the middle of DATASET's data.
 *   ckpt_make set FILE DATASET INT       the int64 scalar DATASET set to INT.
 *   ckpt_make float FILE DATASET         the int64 scalar DATASET made a float64 scalar.
 *   ckpt_make shape FILE DATASET         the int64 scalar DATASET made an int64 [1, 1].
 *   ckpt_make words FILE DATASET N       DATASET replaced by uint64 [N] (nonzero words).
 *   ckpt_make add FILE DATASET N X       a float32 [N] dataset of value X (nan, inf) added;
 *                                        N "huge": 2^40 elements, never written.
 *   ckpt_make delete FILE DATASET        DATASET deleted.
 * Exit status 0, or 1 with a message. */
#include "hpctrain.h"
#include "ckpt_craft.h"
#include "../../lib/ckpt/ckpt.h"

#include <fcntl.h>
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BATCH 12

static int fail(const char *what, hpct_ctx_t ctx)
{
    fprintf(stderr, "ckpt_make: %s: %s\n", what, ctx ? hpct_last_error(ctx) : "");
    return 1;
}

/* The fixed batch: x [BATCH, 4], labels [BATCH] in 0..2. */
static void make_batch(float *x, int32_t *y)
{
    for (int i = 0; i < BATCH; i++) {
        for (int j = 0; j < 4; j++) x[i * 4 + j] = (float)sin(0.7 * i + 1.3 * j);
        y[i] = i % 3;
    }
}

/* Move element k of the named parameter buffer up by one ulp. */
static int nudge(hpct_params_t params, const char *name, size_t k)
{
    int n;
    size_t total;
    hpct_params_size(params, &n, &total);
    for (int i = 0; i < n; i++) {
        const char *bn;
        float *p, *g;
        size_t count;
        hpct_params_get(params, i, &bn, &p, &g, &count);
        if (strcmp(bn, name) == 0 && k < count) {
            p[k] = nextafterf(p[k], INFINITY);
            return 0;
        }
    }
    return -1;
}

static int save_steps(const char *dir, int ulp, int deep, char **steps, int nsteps)
{
    hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
    hpct_ctx_t ctx;
    hpct_model_t model;
    hpct_params_t params;
    hpct_optimizer_t opt;
    hpct_ckpt_t ck;
    if (hpct_ctx_create(&cfg, &ctx)) return fail("context", NULL);
    if (hpct_model_create(ctx, 4, &model) || hpct_model_add_dense(model, 8, HPCT_ACT_RELU, 0) ||
        (deep && hpct_model_add_dense(model, 8, HPCT_ACT_RELU, 0)) ||
        hpct_model_add_dense(model, 3, HPCT_ACT_IDENTITY, 0) || hpct_model_build(model, BATCH) ||
        hpct_model_params(model, &params))
        return fail("model", ctx);
    hpct_optim_config_t oc = HPCT_OPTIM_CONFIG_INITIALIZER;
    oc.lr = 0.1f;
    oc.momentum = 0.9f;
    if (hpct_optimizer_create(params, &oc, &opt)) return fail("optimizer", ctx);
    hpct_ckpt_config_t cc = HPCT_CKPT_CONFIG_INITIALIZER;
    cc.directory = dir;
    cc.keep_last = 100;
    cc.config_hash = 0x5eed5eed12345678ULL;
    if (hpct_ckpt_open(ctx, &cc, &ck)) return fail("checkpoint directory", ctx);
    hpcti_ckpt_set_run(ck, BATCH, 10); /* /meta/steps_per_epoch, as hpct_train records it */
    float x[BATCH * 4], loss;
    int32_t y[BATCH];
    make_batch(x, y);
    long done = 0;
    for (int s = 0; s < nsteps; s++) {
        long target = strtol(steps[s], NULL, 10);
        for (; done < target; done++)
            if (hpct_model_loss_grad(model, x, y, BATCH, 0, &loss) || hpct_optimizer_step(opt))
                return fail("training step", ctx);
        if (ulp && s == nsteps - 1 && nudge(params, "dense0.weight", 5))
            return fail("no parameter dense0.weight", NULL);
        hpct_ckpt_meta_t m = HPCT_CKPT_META_INITIALIZER;
        m.step = done;
        m.epoch = done / 10;
        m.cursor_epoch = done / 10;
        m.cursor_step = done % 10;
        m.world_size = 2;
        m.global_batch = BATCH;
        m.model = deep ? "mlp 4-8(relu)-8(relu)-3 softmax-ce, sgd momentum 0.9"
                       : "mlp 4-8(relu)-3 softmax-ce, sgd momentum 0.9";
        if (hpct_ckpt_save(ck, params, opt, &m)) return fail("save", ctx);
    }
    hpct_ckpt_close(ck);
    hpct_optimizer_destroy(opt);
    hpct_model_destroy(model);
    hpct_ctx_destroy(ctx);
    return 0;
}

/* XOR 0x10 into the byte in the middle of dataset's (contiguous) data. */
static int flip(const char *file, const char *dataset)
{
    hid_t f = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t d = f < 0 ? -1 : H5Dopen2(f, dataset, H5P_DEFAULT);
    haddr_t off = d < 0 ? HADDR_UNDEF : H5Dget_offset(d);
    hsize_t bytes = d < 0 ? 0 : H5Dget_storage_size(d);
    if (d >= 0) H5Dclose(d);
    if (f >= 0) H5Fclose(f);
    if (off == HADDR_UNDEF || bytes == 0) return fail("no contiguous dataset to damage", NULL);
    int fd = open(file, O_RDWR);
    off_t at = (off_t)(off + bytes / 2);
    unsigned char byte;
    if (fd < 0 || pread(fd, &byte, 1, at) != 1) return fail("cannot read the file", NULL);
    byte ^= 0x10;
    int rc = pwrite(fd, &byte, 1, at) == 1 ? 0 : fail("cannot write the file", NULL);
    close(fd);
    if (!rc) printf("flipped byte %lld of %s (dataset %s)\n", (long long)at, file, dataset);
    return rc;
}

/* The int64 scalar dataset of file as a float64 scalar (float) or int64 [1, 1] (shape). */
static int reshape(const char *file, const char *dataset, int to_float)
{
    int64_t v = 0;
    hid_t f = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t d = f < 0 ? -1 : H5Dopen2(f, dataset, H5P_DEFAULT);
    int rc = d < 0 || H5Dread(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, &v) < 0;
    if (d >= 0) H5Dclose(d);
    if (f >= 0) H5Fclose(f);
    if (rc) return fail("no int64 dataset to reshape", NULL);
    double x = (double)v;
    craft_ds_t c = {H5T_STD_I64LE, H5T_NATIVE_INT64, 2, {1, 1}, &v, sizeof v, 1, H5P_DEFAULT};
    if (to_float)
        c = (craft_ds_t){H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 0, {0, 0}, &x, 8, 1, H5P_DEFAULT};
    return craft_replace(file, dataset, &c) ? fail("cannot reshape", NULL) : 0;
}

/* DATASET replaced by uint64 [n] of nonzero words, or (words < 0) a float32 [n] of x. */
static int replace_n(const char *file, const char *dataset, const char *n_arg, double x, int words)
{
    int huge = !strcmp(n_arg, "huge");
    hsize_t n = huge ? (hsize_t)1 << 40 : strtoull(n_arg, NULL, 10);
    if (!huge && (n < 1 || n > 64)) return fail("N must be 1 to 64, or huge", NULL);
    uint64_t w[64];
    float v[64];
    for (hsize_t k = 0; k < n && !huge; k++) w[k] = 0x9e3779b97f4a7c15ULL * (k + 1), v[k] = x;
    craft_ds_t c = {H5T_IEEE_F32LE,  H5T_NATIVE_FLOAT, 1, {n, 1},
                    huge ? NULL : v, huge ? 0 : 4 * n, 1, H5P_DEFAULT};
    if (words)
        c = (craft_ds_t){H5T_STD_U64LE, H5T_NATIVE_UINT64, 1, {n, 1}, w, 8 * n, 1, H5P_DEFAULT};
    return craft_replace(file, dataset, &c) ? fail("cannot write the dataset", NULL) : 0;
}

/* The crafting commands (usage at the top); -1 when argv is none of them. */
static int craft(int argc, char **argv)
{
    const char *cmd = argv[1], *file = argv[2], *dataset = argv[3];
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    if (argc == 5 && !strcmp(cmd, "set"))
        return craft_i64(file, dataset, strtoll(argv[4], NULL, 10)) ? fail("cannot set", NULL) : 0;
    if (argc == 4 && (!strcmp(cmd, "float") || !strcmp(cmd, "shape")))
        return reshape(file, dataset, cmd[0] == 'f');
    if (argc == 5 && !strcmp(cmd, "words")) return replace_n(file, dataset, argv[4], 0, 1);
    if (argc == 6 && !strcmp(cmd, "add"))
        return replace_n(file, dataset, argv[4], strtod(argv[5], NULL), 0);
    if (argc == 4 && !strcmp(cmd, "delete"))
        return craft_delete(file, dataset) ? fail("cannot delete", NULL) : 0;
    return -1;
}

int main(int argc, char **argv)
{
    if (argc >= 4 && strcmp(argv[1], "save") == 0) {
        int ulp = 0, deep = 0, i = 3;
        for (; i < argc && argv[i][0] == '-'; i++) {
            if (!strcmp(argv[i], "--ulp"))
                ulp = 1;
            else if (!strcmp(argv[i], "--deep"))
                deep = 1;
            else
                return fail("unknown option", NULL);
        }
        if (i == argc) return fail("no steps", NULL);
        return save_steps(argv[2], ulp, deep, argv + i, argc - i);
    }
    if (argc == 4 && strcmp(argv[1], "flip") == 0) return flip(argv[2], argv[3]);
    int rc = argc >= 4 ? craft(argc, argv) : -1;
    if (rc >= 0) return rc;
    fprintf(stderr, "usage: ckpt_make save DIR [--ulp] [--deep] STEP... | ckpt_make flip FILE "
                    "DATASET | ckpt_make set|float|shape|words|add|delete FILE DATASET ...\n");
    return 1;
}
