/* ckpt_fuzz.c: libFuzzer harness for the checkpoint loader (lib/ckpt). Each input is written
 * as the only checkpoint file of a directory, then inspected (hpct_ckpt_file_open, every
 * dataset verified and read, meta with the validator's verdict, versions) and resumed from
 * (hpct_ckpt_load_latest into the 4-8-3 MLP and SGD optimizer of t/lib/ckpt_make, with its
 * run's global batch and steps per epoch, so the settings checks run too; ckpt_make wrote
 * the seeds in t/fuzz/corpus-ckpt, some crafted). Any status is fine, but no HDF5 object may
 * stay open; ASan/UBSan catch memory errors and UB in the library. Run by t/test_fuzz_ckpt.sh,
 * built from lib/ckpt and lib/core with clang. */
#include "../lib/ckpt_util.h"
#include "../../lib/ckpt/ckpt.h"

#include <dirent.h>
#include <hdf5.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static hpct_ctx_t ctx;
static hpct_params_t params;
static hpct_optimizer_t opt;
static hpct_ckpt_t ck;
static char dir[256], file[300];

static void remove_dir(void)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[600];
    while (d && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    if (d) closedir(d);
    rmdir(dir);
}

static void clean_up(void)
{
    hpct_ckpt_close(ck);
    remove_dir();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
    hpct_model_t model;
    if (hpct_ctx_create(&cfg, &ctx) || hpct_model_create(ctx, 4, &model) ||
        hpct_model_add_dense(model, 8, HPCT_ACT_RELU, 0) ||
        hpct_model_add_dense(model, 3, HPCT_ACT_IDENTITY, 0) || hpct_model_build(model, 12) ||
        hpct_model_params(model, &params))
        abort();
    hpct_optim_config_t oc = HPCT_OPTIM_CONFIG_INITIALIZER;
    oc.momentum = 0.9f;
    if (hpct_optimizer_create(params, &oc, &opt)) abort();
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/hpct-ckfuzz.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) abort();
    snprintf(file, sizeof file, "%s/ckpt-000000000003.h5", dir);
    hpct_ckpt_config_t cc = HPCT_CKPT_CONFIG_INITIALIZER;
    cc.directory = dir;
    cc.async = 0;
    cc.config_hash = 0x5eed5eed12345678ULL; /* as t/lib/ckpt_make saves */
    if (hpct_ckpt_open(ctx, &cc, &ck)) abort();
    hpcti_ckpt_set_run(ck, 12, 10); /* ckpt_make's global batch and steps per epoch */
    atexit(clean_up);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* the directory holds the lock file and this input only (a rejected file may be moved) */
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[600];
    while (d && (e = readdir(d)))
        if (strncmp(e->d_name, "ckpt-", 5) == 0 || strcmp(e->d_name, "latest") == 0) {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    if (d) closedir(d);
    FILE *f = fopen(file, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f)) abort();
    ckpt_read_file(ctx, file, 1u << 16); /* every dataset verified and read; any status is fine */
    hpct_ckpt_meta_t m = HPCT_CKPT_META_INITIALIZER;
    hpct_ckpt_load_latest(ck, params, opt, &m);
    /* every HDF5 file, group, dataset and attribute opened on the way is closed again */
    if (H5Fget_obj_count((hid_t)H5F_OBJ_ALL, H5F_OBJ_ALL) != 0) __builtin_trap();
    return 0;
}
