/* bench_ckpt_many.c: a checkpoint with many small datasets (issue 14: `hpctrain ckpt verify`
 * took more than 60 s on 20,000). Saves one checkpoint of N parameters of 4 floats each (N
 * datasets under params/, in the compact link storage the library writes) and loads it back
 * (hpct_ckpt_load_latest, as resume does), then times the inspector as `hpctrain ckpt verify` and
 * `ckpt info` use it: hpct_ckpt_file_open (lists, reads and checks every dataset),
 * hpct_ckpt_file_verify of each, and hpct_ckpt_file_find of each name (as `ckpt diff` does). The
 * baseline is the same run with a smaller N: the time per dataset should stay flat as N grows
 * (linear), not grow with N (quadratic). Saving is itself quadratic in HDF5's compact link storage
 * (about 75 s for 4000 links on the build machine, against 0.1 s in dense storage): large N takes
 * long to set up. Usage: bench/bench_ckpt_many [N...]   (default 1000 2000 4000; files in $TMPDIR,
 * removed unless HPCT_BENCH_KEEP=1, which prints each file's path to time `hpctrain ckpt` on it) */
#include <hpctrain.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bench_util.h"

static void die(const char *what, hpct_ctx_t ctx)
{
    fprintf(stderr, "bench_ckpt_many: %s: %s\n", what, ctx ? hpct_last_error(ctx) : "");
    exit(1);
}

/* Save one checkpoint of n parameters [4] into dir (its path into path), then load it back
 * as resume does: seconds of the save, and of the load into *load. */
static double save(hpct_ctx_t ctx, int n, const char *dir, char *path, size_t len, double *load)
{
    hpct_params_t params;
    if (hpct_params_create(ctx, &params)) die("params", ctx);
    float *p = calloc((size_t)n * 4, sizeof *p), *g = calloc((size_t)n * 4, sizeof *g);
    if (!p || !g) die("out of memory", NULL);
    for (int i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "w%06d", i);
        for (int k = 0; k < 4; k++) p[4 * i + k] = 0.25f * (float)k;
        if (hpct_params_register(params, name, p + 4 * i, g + 4 * i, 4)) die("register", ctx);
    }
    hpct_optim_config_t oc = HPCT_OPTIM_CONFIG_INITIALIZER; /* SGD without momentum: no state */
    oc.momentum = 0;
    hpct_optimizer_t opt;
    if (hpct_optimizer_create(params, &oc, &opt)) die("optimizer", ctx);
    hpct_ckpt_config_t c = HPCT_CKPT_CONFIG_INITIALIZER;
    c.directory = dir;
    hpct_ckpt_t ck;
    if (hpct_ckpt_open(ctx, &c, &ck)) die("open", ctx);
    hpct_ckpt_meta_t m = HPCT_CKPT_META_INITIALIZER;
    m.step = 1;
    m.model = "many";
    hpct_optimizer_set_step(opt, 1); /* a load refuses optimizer/step != meta/step */
    double t0 = now();
    if (hpct_ckpt_save(ck, params, opt, &m)) die("save", ctx);
    double t = now() - t0;
    const char *last = NULL;
    if (hpct_ckpt_last_path(ck, &last) || !last) die("last path", ctx);
    snprintf(path, len, "%s", last);
    t0 = now();
    if (hpct_ckpt_load_latest(ck, params, opt, &m) || m.step != 1) die("load", ctx);
    *load = now() - t0;
    hpct_ckpt_close(ck);
    hpct_optimizer_destroy(opt);
    hpct_params_destroy(params);
    free(p), free(g);
    return t;
}

/* Open, verify every dataset, find every name: seconds of each part. */
static void inspect(hpct_ctx_t ctx, const char *path, double t[3], int *datasets)
{
    hpct_ckpt_file_t f;
    double t0 = now();
    if (hpct_ckpt_file_open(ctx, path, &f)) die("file open", ctx);
    t[0] = now() - t0;
    int n = 0, bad = 0;
    hpct_ckpt_file_num_datasets(f, &n);
    t0 = now();
    for (int i = 0; i < n; i++) bad += hpct_ckpt_file_verify(f, i) != 0;
    t[1] = now() - t0;
    t0 = now();
    for (int i = 0; i < n; i++) {
        const char *name;
        int at = -1;
        hpct_ckpt_file_dataset(f, i, &name, NULL, NULL, NULL);
        if (hpct_ckpt_file_find(f, name, &at) || at != i) die("find", ctx);
    }
    t[2] = now() - t0;
    if (bad) die("a dataset failed verification", NULL);
    *datasets = n;
    hpct_ckpt_file_close(f);
}

int main(int argc, char **argv)
{
    int sizes[16] = {1000, 2000, 4000}, count = argc > 1 ? 0 : 3;
    int keep = getenv("HPCT_BENCH_KEEP") && !strcmp(getenv("HPCT_BENCH_KEEP"), "1");
    for (int i = 1; i < argc && count < 16; i++) sizes[count++] = atoi(argv[i]);
    hpct_ctx_t ctx;
    if (hpct_ctx_create(NULL, &ctx)) die("context", NULL);
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    printf("%8s %9s %9s %10s %10s %10s %10s %14s\n", "datasets", "save s", "load s", "open s",
           "verify s", "find s", "total s", "us/dataset");
    for (int k = 0; k < count; k++) {
        char dir[4096], path[4400];
        snprintf(dir, sizeof dir, "%s/hpct-many.XXXXXX", tmp);
        if (!mkdtemp(dir)) die("mkdtemp", NULL);
        double tl = 0, ts = save(ctx, sizes[k], dir, path, sizeof path, &tl), t[3];
        int n = 0;
        inspect(ctx, path, t, &n);
        double total = t[0] + t[1] + t[2];
        printf("%8d %9.3f %9.3f %10.3f %10.3f %10.3f %10.3f %14.1f\n", n, ts, tl, t[0], t[1], t[2],
               total, 1e6 * total / n);
        fflush(stdout);
        char cmd[4200];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (keep)
            printf("kept %s\n", path);
        else if (system(cmd))
            fprintf(stderr, "bench_ckpt_many: could not remove %s\n", dir);
    }
    hpct_ctx_destroy(ctx);
    return 0;
}
