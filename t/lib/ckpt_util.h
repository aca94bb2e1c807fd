/* ckpt_util.h: a small bring-your-own-gradients training state for the checkpoint tests:
 * named parameter buffers, an AdamW or SGD optimizer over them, and helpers to fill,
 * compare, read a whole checkpoint file and clean up. Header-only (static functions) so each
 * test stays one program (t/fuzz/ckpt_fuzz.c uses it too). */
#ifndef HPCT_CKPT_UTIL_H
#define HPCT_CKPT_UTIL_H

#include "hpctrain.h"
#include "tap.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ST_MAX_BUFS 8

typedef struct state {
    hpct_ctx_t ctx;
    hpct_params_t params;
    hpct_optimizer_t opt;
    int nbufs;
    size_t counts[ST_MAX_BUFS];
    float *p[ST_MAX_BUFS], *g[ST_MAX_BUFS];
} state_t;

/* nbufs buffers of counts[i] floats named "layer<i>/w" (nested HDF5 groups), and an optimizer. */
static inline void st_create(state_t *st, int nbufs, const size_t *counts,
                             hpct_optimizer_kind_t kind)
{
    memset(st, 0, sizeof *st);
    hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
    if (hpct_ctx_create(&cfg, &st->ctx)) tap_bail("cannot create a context");
    if (hpct_params_create(st->ctx, &st->params)) tap_bail("cannot create a parameter set");
    st->nbufs = nbufs;
    for (int i = 0; i < nbufs; i++) {
        char name[32];
        snprintf(name, sizeof name, i % 2 ? "layer%d/w" : "dense%d.weight", i);
        st->counts[i] = counts[i];
        st->p[i] = calloc(counts[i], sizeof(float));
        st->g[i] = calloc(counts[i], sizeof(float));
        if (!st->p[i] || !st->g[i]) tap_bail("out of memory");
        if (hpct_params_register(st->params, name, st->p[i], st->g[i], counts[i]))
            tap_bail("register %s: %s", name, hpct_last_error(st->ctx));
    }
    hpct_optim_config_t oc = HPCT_OPTIM_CONFIG_INITIALIZER;
    oc.kind = kind;
    oc.momentum = 0.9f;
    if (hpct_optimizer_create(st->params, &oc, &st->opt))
        tap_bail("optimizer: %s", hpct_last_error(st->ctx));
}

static inline void st_destroy(state_t *st)
{
    hpct_optimizer_destroy(st->opt);
    hpct_params_destroy(st->params);
    for (int i = 0; i < st->nbufs; i++) free(st->p[i]), free(st->g[i]);
    hpct_ctx_destroy(st->ctx);
}

/* Deterministic content from a seed: parameters, gradients, `steps` optimizer steps. */
static inline void st_fill(state_t *st, unsigned seed, int steps)
{
    uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 1;
    for (int i = 0; i < st->nbufs; i++)
        for (size_t j = 0; j < st->counts[i]; j++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            st->p[i][j] = (float)((double)(x >> 11) * 0x1.0p-53 - 0.5);
            st->g[i][j] = (float)((double)(x & 0xffff) / 65536.0 - 0.5);
        }
    hpct_optimizer_set_step(st->opt, 0);
    for (int k = 0; k < steps; k++) hpct_optimizer_step(st->opt);
    uint64_t rng[HPCT_RNG_STATE_WORDS] = {seed + 1, seed * 3 + 7, 11, 13};
    hpct_rng_set_state(st->ctx, rng);
}

/* Scramble everything (what a load must overwrite). */
static inline void st_scramble(state_t *st)
{
    int slots = 0;
    hpct_optimizer_state_slots(st->opt, &slots);
    for (int i = 0; i < st->nbufs; i++) {
        memset(st->p[i], 0x55, st->counts[i] * sizeof(float));
        for (int k = 0; k < slots; k++) {
            float *s;
            size_t n;
            hpct_optimizer_state(st->opt, i, k, &s, &n);
            memset(s, 0x66, n * sizeof(float));
        }
    }
    hpct_optimizer_set_step(st->opt, 12345);
    uint64_t rng[HPCT_RNG_STATE_WORDS] = {1, 2, 3, 4};
    hpct_rng_set_state(st->ctx, rng);
}

/* Bit-identical parameters, optimizer slots, optimizer step and RNG state. */
static inline int st_equal(state_t *a, state_t *b)
{
    int slots = 0, sb = 0;
    hpct_optimizer_state_slots(a->opt, &slots);
    hpct_optimizer_state_slots(b->opt, &sb);
    if (a->nbufs != b->nbufs || slots != sb) return 0;
    for (int i = 0; i < a->nbufs; i++) {
        if (memcmp(a->p[i], b->p[i], a->counts[i] * sizeof(float))) return 0;
        for (int k = 0; k < slots; k++) {
            float *x, *y;
            size_t n;
            hpct_optimizer_state(a->opt, i, k, &x, &n);
            hpct_optimizer_state(b->opt, i, k, &y, &n);
            if (memcmp(x, y, n * sizeof(float))) return 0;
        }
    }
    long sa_, sb_;
    hpct_optimizer_get_step(a->opt, &sa_);
    hpct_optimizer_get_step(b->opt, &sb_);
    uint64_t ra[4], rb[4];
    hpct_rng_get_state(a->ctx, ra);
    hpct_rng_get_state(b->ctx, rb);
    return sa_ == sb_ && memcmp(ra, rb, sizeof ra) == 0;
}

/* A fresh directory under TMPDIR (or /tmp). */
/* A checkpoint handle on dir with default settings (async 0/1); bails out on failure. */
static inline hpct_ckpt_t st_open_ck(state_t *st, const char *dir, int async)
{
    hpct_ckpt_config_t c = HPCT_CKPT_CONFIG_INITIALIZER;
    c.directory = dir;
    c.async = async;
    hpct_ckpt_t ck = NULL;
    if (hpct_ckpt_open(st->ctx, &c, &ck)) tap_bail("open %s: %s", dir, hpct_last_error(st->ctx));
    return ck;
}

static inline void make_tmpdir(char *out, size_t n, const char *tag)
{
    const char *base = getenv("TMPDIR");
    snprintf(out, n, "%s/hpct-%s-XXXXXX", base && *base ? base : "/tmp", tag);
    if (!mkdtemp(out)) tap_bail("mkdtemp %s failed", out);
}

/* rm -rf dir (one level of subdirectories is enough for these tests). */
static inline void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char path[4096];
        if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path) continue;
        if (unlink(path) < 0) remove_tree(path);
    }
    closedir(d);
    rmdir(dir);
}

/* Open a checkpoint file: versions, meta, each dataset verified and (up to max_count) read. */
static inline void ckpt_read_file(hpct_ctx_t ctx, const char *path, size_t max_count)
{
    hpct_ckpt_file_t f = NULL;
    if (hpct_ckpt_file_open(ctx, path, &f)) return;
    int n = 0, schema;
    const char *lib;
    hpct_ckpt_meta_t m = HPCT_CKPT_META_INITIALIZER;
    hpct_ckpt_file_versions(f, &schema, &lib);
    hpct_ckpt_file_meta(f, &m);
    hpct_ckpt_file_num_datasets(f, &n);
    for (int i = 0; i < n; i++) {
        const char *name;
        size_t count;
        hpct_ckpt_file_verify(f, i);
        if (hpct_ckpt_file_dataset(f, i, &name, NULL, &count, NULL) || count > max_count) continue;
        double *buf = malloc((count ? count : 1) * sizeof *buf);
        if (buf) hpct_ckpt_file_read(f, name, HPCT_CKPT_F64, buf, count);
        free(buf);
    }
    hpct_ckpt_file_close(f);
}

/* Number of entries in dir whose name contains needle. */
static inline int count_entries(const char *dir, const char *needle)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (!d) return -1;
    struct dirent *e;
    while ((e = readdir(d))) n += strstr(e->d_name, needle) != NULL;
    closedir(d);
    return n;
}

#endif
