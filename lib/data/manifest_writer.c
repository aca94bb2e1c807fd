/* manifest_writer.c: the public manifest builder (hpct_manifest_*): each shard added is read
 * back (layouts through h5shard.c, then a checksum of the whole file) and recorded relative
 * to the manifest's directory; the text is written by hpcti_manifest_write (manifest.c). */
#include "h5shard.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct hpct_manifest {
    hpct_ctx_t ctx;
    char *path, *dir;                 /* the manifest file and its directory */
    char *inputs_name, *targets_name; /* datasets read from every shard */
    hpcti_manifest_t m;
    int cap; /* entries m.shards has room for */
};

void hpct_manifest_destroy(hpct_manifest_t mf)
{
    if (!mf) return;
    hpcti_manifest_free(&mf->m);
    free(mf->path), free(mf->dir), free(mf->inputs_name), free(mf->targets_name);
    free(mf);
}

/* The directory part of path: "." without a '/', "/" for a file at the root. */
static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return strdup(".");
    if (slash == path) return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

hpct_status_t hpct_manifest_create(hpct_ctx_t ctx, const char *path, const char *inputs_name,
                                   const char *targets_name, hpct_manifest_t *out)
{
    if (!ctx) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(ctx);
    if (!out || !path || !*path)
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG, "hpct_manifest_create: %s is NULL or empty",
                           out ? "path" : "manifest");
    *out = NULL;
    const char *names[2] = {inputs_name ? inputs_name : "inputs",
                            targets_name ? targets_name : "targets"};
    for (int i = 0; i < 2; i++) {
        const char *bad = hpcti_dataset_name_problem(names[i]);
        if (bad)
            return hpcti_error(
                ctx, HPCT_ERR_INVALID_ARG, "manifest %s: %s dataset name '%.300s%s': %s", path,
                i ? "targets" : "inputs", names[i], strlen(names[i]) > 300 ? "..." : "", bad);
    }
    struct hpct_manifest *mf = hpcti_calloc(ctx, 1, sizeof *mf, "a manifest");
    if (!mf) return HPCT_ERR_NO_MEMORY;
    mf->ctx = ctx;
    mf->path = strdup(path);
    mf->dir = dir_of(path);
    mf->inputs_name = strdup(inputs_name ? inputs_name : "inputs");
    mf->targets_name = strdup(targets_name ? targets_name : "targets");
    if (!mf->path || !mf->dir || !mf->inputs_name || !mf->targets_name) {
        hpct_manifest_destroy(mf);
        return hpcti_error(ctx, HPCT_ERR_NO_MEMORY, "cannot allocate manifest %s", path);
    }
    *out = mf;
    return HPCT_SUCCESS;
}

static int same_layout(const hpcti_layout_t *a, const hpcti_layout_t *b)
{
    if (a->type != b->type || a->rank != b->rank) return 0;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i]) return 0;
    return 1;
}

/* Path of file relative to dir (both resolved), or NULL when it lies outside dir. */
static char *relative_to(const char *dir, const char *file)
{
    char *d = realpath(dir, NULL), *f = realpath(file, NULL), *rel = NULL;
    size_t n = d ? strlen(d) : 0;
    if (d && f && !strncmp(d, f, n) && f[n] == '/') rel = strdup(f + n + 1);
    free(d), free(f);
    return rel;
}

/* layouts [2] (inputs, targets) of shard path: the same sample count in both, and the
 * first shard's layouts when there is one. */
static hpct_status_t check_layouts(hpct_manifest_t mf, const char *path, hpcti_layout_t *layouts,
                                   uint64_t *samples)
{
    uint64_t n_in = 0, n_tg = 0;
    hpct_status_t s = hpcti_shard_describe(mf->ctx, path, mf->inputs_name, mf->targets_name,
                                           &layouts[0], &layouts[1], &n_in, &n_tg);
    if (s) return s;
    if (n_in != n_tg)
        return hpcti_error(mf->ctx, HPCT_ERR_FORMAT, "%s: /%s has %llu samples but /%s has %llu",
                           path, mf->inputs_name, (unsigned long long)n_in, mf->targets_name,
                           (unsigned long long)n_tg);
    if (mf->m.num_shards &&
        (!same_layout(&layouts[0], &mf->m.inputs) || !same_layout(&layouts[1], &mf->m.targets)))
        return hpcti_error(mf->ctx, HPCT_ERR_FORMAT,
                           "%s: dtype or per-sample shape of /%s or /%s differs from the first "
                           "shard's",
                           path, mf->inputs_name, mf->targets_name);
    *samples = n_in;
    return HPCT_SUCCESS;
}

/* The entry's path relative to the manifest's directory: inside it, usable, not listed yet. */
static hpct_status_t entry_path(hpct_manifest_t mf, const char *path, char **rel)
{
    if (!(*rel = relative_to(mf->dir, path)))
        return hpcti_error(mf->ctx, HPCT_ERR_INVALID_ARG,
                           "%s lies outside the manifest's directory %s", path, mf->dir);
    if (!hpcti_manifest_path_is_safe(*rel))
        return hpcti_error(mf->ctx, HPCT_ERR_INVALID_ARG,
                           "%s: a manifest cannot name '%s' (blanks, control characters or "
                           "backslashes)",
                           path, *rel);
    for (int i = 0; i < mf->m.num_shards; i++)
        if (!strcmp(mf->m.shards[i].path, *rel))
            return hpcti_error(mf->ctx, HPCT_ERR_INVALID_ARG, "%s is listed twice", path);
    return HPCT_SUCCESS;
}

hpct_status_t hpct_manifest_add_shard(hpct_manifest_t mf, const char *path)
{
    if (!mf) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(mf->ctx);
    if (!path || !*path)
        return hpcti_error(mf->ctx, HPCT_ERR_INVALID_ARG,
                           "hpct_manifest_add_shard: shard_path is NULL or empty");
    if (mf->m.num_shards == mf->cap) {
        int cap = mf->cap ? 2 * mf->cap : 16;
        hpcti_shard_entry_t *grown = realloc(mf->m.shards, sizeof *grown * (size_t)cap);
        if (!grown)
            return hpcti_error(mf->ctx, HPCT_ERR_NO_MEMORY, "cannot grow manifest %s", mf->path);
        mf->m.shards = grown, mf->cap = cap;
    }
    hpcti_shard_entry_t e = {0};
    hpcti_layout_t layouts[2];
    hpct_status_t s = check_layouts(mf, path, layouts, &e.samples);
    if (!s) s = entry_path(mf, path, &e.path);
    if (!s && hpcti_checksum_file(path, &e.checksum, &e.bytes))
        s = hpcti_error(mf->ctx, HPCT_ERR_IO, "%s: %s", path, strerror(errno));
    if (s) {
        free(e.path);
        return s;
    }
    if (mf->m.num_shards == 0) mf->m.inputs = layouts[0], mf->m.targets = layouts[1];
    mf->m.shards[mf->m.num_shards++] = e;
    return HPCT_SUCCESS;
}

hpct_status_t hpct_manifest_write(hpct_manifest_t mf)
{
    if (!mf) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(mf->ctx);
    if (hpcti_manifest_write(&mf->m, mf->path))
        return hpcti_error(mf->ctx, HPCT_ERR_IO, "cannot write %s: %s", mf->path, strerror(errno));
    return HPCT_SUCCESS;
}

hpct_status_t hpct_manifest_check_path(const char *path)
{
    return hpcti_manifest_path_is_safe(path) ? HPCT_SUCCESS : HPCT_ERR_INVALID_ARG;
}
