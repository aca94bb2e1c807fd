/* dataset.c: hpct_dataset_open/close/partition/cursor: manifest checks, checksums before
 * HDF5 parses a shard, the resident-or-streaming choice, and the skip-policy scan. */
#include "reader.h"
#include "comms.h"
#include "mapguard.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_MANIFEST_BYTES (64u << 20)
#define MAX_PREFETCH       64

static hpct_status_t check_data_config(hpct_ctx_t ctx, const hpct_data_config_t *c)
{
    const char *why = NULL;
    if (c->version < 1 || c->version > HPCT_DATA_CONFIG_VERSION)
        why = "version is not a known version (start from HPCT_DATA_CONFIG_INITIALIZER)";
    else if (!c->inputs_name || !*c->inputs_name || !c->targets_name || !*c->targets_name)
        why = "inputs_name and targets_name must be non-empty dataset names";
    else if (hpcti_dataset_name_problem(c->inputs_name) ||
             hpcti_dataset_name_problem(c->targets_name))
        why = hpcti_dataset_name_problem(c->inputs_name)
                  ? "inputs_name is not a usable dataset name (1-255 bytes, components split by "
                    "single slashes, no '.' or '..', no control characters)"
                  : "targets_name is not a usable dataset name (1-255 bytes, components split "
                    "by single slashes, no '.' or '..', no control characters)";
    else if (c->checksum < HPCT_CHECKSUM_FULL || c->checksum > HPCT_CHECKSUM_OFF)
        why = "checksum must be HPCT_CHECKSUM_FULL, _SIZE or _OFF";
    else if (c->nonfinite != HPCT_NONFINITE_ERROR && c->nonfinite != HPCT_NONFINITE_SKIP)
        why = "nonfinite must be HPCT_NONFINITE_ERROR or HPCT_NONFINITE_SKIP";
    else if (c->prefetch_depth < 0 || c->prefetch_depth > MAX_PREFETCH)
        why = "prefetch_depth must be between 0 and 64";
    else if (c->version >= 2 && (c->store < HPCT_STORE_AUTO || c->store > HPCT_STORE_NODE))
        why = "store must be HPCT_STORE_AUTO, _OFF, _JOB or _NODE";
    if (!why) return HPCT_SUCCESS;
    return hpcti_error(ctx, HPCT_ERR_INVALID_ARG, "hpct_data_config_t.%s", why);
}

/* Read and parse the manifest file into ds->man. */
static hpct_status_t load_manifest(hpct_dataset_t ds)
{
    const char *path = ds->manifest_path;
    FILE *f = fopen(path, "rb");
    if (!f)
        return hpcti_error(ds->ctx, errno == ENOENT ? HPCT_ERR_NOT_FOUND : HPCT_ERR_IO,
                           "manifest %s: %s", path, strerror(errno));
    char *text = malloc(MAX_MANIFEST_BYTES);
    size_t len = text ? fread(text, 1, MAX_MANIFEST_BYTES, f) : 0;
    int too_big = text && len == MAX_MANIFEST_BYTES, bad = ferror(f);
    fclose(f);
    if (!text) return hpcti_error(ds->ctx, HPCT_ERR_NO_MEMORY, "manifest %s: no memory", path);
    hpct_status_t s = HPCT_SUCCESS;
    char err[600];
    if (bad)
        s = hpcti_error(ds->ctx, HPCT_ERR_IO, "manifest %s: read error", path);
    else if (too_big)
        s = hpcti_error(ds->ctx, HPCT_ERR_FORMAT, "manifest %s: larger than 64 MiB", path);
    else if (hpcti_manifest_parse(text, len, &ds->man, err, sizeof err))
        s = hpcti_error(ds->ctx, HPCT_ERR_FORMAT, "manifest %s: %s", path, err);
    free(text);
    return s;
}

/* Shard paths are relative to the manifest's directory. */
static char *join_dir(const char *manifest, const char *rel)
{
    const char *slash = strrchr(manifest, '/');
    size_t dir = slash ? (size_t)(slash - manifest) + 1 : 0;
    char *p = malloc(dir + strlen(rel) + 1);
    if (!p) return NULL;
    memcpy(p, manifest, dir);
    strcpy(p + dir, rel);
    return p;
}

/* Existence, size and (FULL) content hash of one shard, before HDF5 sees it. */
static hpct_status_t verify_shard(hpct_dataset_t ds, const hpcti_shard_entry_t *e, const char *path,
                                  hpct_checksum_mode_t mode)
{
    struct stat st;
    if (stat(path, &st))
        return hpcti_error(ds->ctx, errno == ENOENT ? HPCT_ERR_NOT_FOUND : HPCT_ERR_IO,
                           "shard %s (manifest %s line %d): %s", path, ds->manifest_path, e->line,
                           strerror(errno));
    if (!S_ISREG(st.st_mode))
        return hpcti_error(ds->ctx, HPCT_ERR_FORMAT,
                           "shard %s (manifest %s line %d) is not a "
                           "regular file",
                           path, ds->manifest_path, e->line);
    if (mode == HPCT_CHECKSUM_OFF) return HPCT_SUCCESS;
    if ((uint64_t)st.st_size != e->bytes)
        return hpcti_error(ds->ctx, HPCT_ERR_CHECKSUM,
                           "shard %s: %llu bytes, manifest %s line %d says %llu (truncated or "
                           "replaced?); not opened",
                           path, (unsigned long long)st.st_size, ds->manifest_path, e->line,
                           (unsigned long long)e->bytes);
    if (mode == HPCT_CHECKSUM_SIZE) return HPCT_SUCCESS;
    uint64_t sum, bytes;
    if (hpcti_checksum_file(path, &sum, &bytes))
        return hpcti_error(ds->ctx, HPCT_ERR_IO, "shard %s: %s", path, strerror(errno));
    ds->hashed_bytes += bytes;
    if (sum != e->checksum || bytes != e->bytes)
        return hpcti_error(ds->ctx, HPCT_ERR_CHECKSUM,
                           "shard %s: checksum %016llx, manifest %s line %d says %016llx "
                           "(corrupt file); not opened",
                           path, (unsigned long long)sum, ds->manifest_path, e->line,
                           (unsigned long long)e->checksum);
    return HPCT_SUCCESS;
}

/* Memory for the resident inputs, in transparent huge pages where the kernel allows:
 * shuffled reads touch a new 4 KiB page per sample, and huge pages spare the TLB misses. */
static float *alloc_resident(hpct_ctx_t ctx, size_t bytes)
{
    const size_t huge = (size_t)2 << 20;
    size_t rounded = (bytes + huge - 1) / huge * huge;
    void *p = NULL;
    if (posix_memalign(&p, huge, rounded ? rounded : huge)) {
        hpcti_error(ctx, HPCT_ERR_NO_MEMORY, "cannot allocate %zu bytes for dataset inputs", bytes);
        return NULL;
    }
    madvise(p, rounded, MADV_HUGEPAGE); /* advice only: failure is harmless */
    return p;                           /* HDF5 fills every row at open */
}

/* The store mode asked for: HPCT_DATA_STORE when set, else cfg.store; -1 for a bad value. */
static int requested_store(hpct_dataset_t ds)
{
    static const int modes[] = {HPCT_STORE_AUTO, HPCT_STORE_OFF, HPCT_STORE_JOB, HPCT_STORE_NODE};
    int word = 0, set = 0;
    if (hpcti_tunable_choice(ds->ctx, "HPCT_DATA_STORE", &word, &set)) return -1;
    return set ? modes[word] : (int)ds->cfg.store;
}

/* The reader's flags, checked at open (HPCT_STREAM_MMAP, HPCT_PREFETCH_THREAD): a bad value
 * fails hpct_dataset_open naming it; later reads find them valid. */
static hpct_status_t check_flags(hpct_ctx_t ctx)
{
    int on, set;
    hpct_status_t s = hpcti_tunable_flag(ctx, "HPCT_STREAM_MMAP", &on, &set);
    return s ? s : hpcti_tunable_flag(ctx, "HPCT_PREFETCH_THREAD", &on, &set);
}

/* Flag name's value, or fallback when it is unset (or bad: check_flags refused it). */
static int flag_or(hpct_ctx_t ctx, const char *name, int fallback)
{
    int on = fallback, set = 0;
    return hpcti_tunable_flag(ctx, name, &on, &set) ? fallback : on;
}

/* Store or not, from the request, the set's size, the world and the node's memory. */
static int choose_store(hpct_dataset_t ds, int want, double bytes)
{
    const hpcti_data_comms_t *c = hpcti_data_comms(ds->ctx);
    if (want == HPCT_STORE_OFF || !c->valid) return HPCT_STORE_OFF;
    if (want == HPCT_STORE_NODE && (!c->uniform || ds->n > INT_MAX)) {
        hpcti_log(ds->ctx, HPCT_LOG_WARN,
                  "dataset %s: the node store needs nodes of equal rank counts (and < 2^31 "
                  "samples); using the job store",
                  ds->manifest_path);
        return HPCT_STORE_JOB;
    }
    if (want != HPCT_STORE_AUTO) return want;
    double budget = (double)ds->cfg.memory_budget_bytes;
    double node = c->node_memory_bytes; /* the same on every rank */
    int copies_too_big = node > 0 && bytes * c->local_size > node / 2;
    if (c->size < 2 || (bytes <= budget && !copies_too_big)) return HPCT_STORE_OFF;
    if (node > 0 && bytes <= node / 2 && c->uniform && ds->n <= INT_MAX) return HPCT_STORE_NODE;
    return bytes / c->size <= budget ? HPCT_STORE_JOB : HPCT_STORE_OFF;
}

/* Totals from the manifest: samples, values per sample, and whether it all fits memory. */
static hpct_status_t plan_sizes(hpct_dataset_t ds)
{
    ds->features = hpcti_layout_count(&ds->man.inputs);
    ds->twidth = hpcti_layout_count(&ds->man.targets);
    ds->targets_int = !hpcti_type_is_float(ds->man.targets.type);
    ds->n = 0;
    for (int i = 0; i < ds->man.num_shards; i++) ds->n += ds->man.shards[i].samples;
    double bytes = (double)ds->n * (double)(ds->features + ds->twidth) * 4.0;
    ds->store_mode = choose_store(ds, ds->store_mode, bytes);
    if (ds->store_mode == HPCT_STORE_JOB || ds->store_mode == HPCT_STORE_NODE) {
        const hpcti_data_comms_t *c = hpcti_data_comms(ds->ctx);
        hpcti_log(ds->ctx, HPCT_LOG_INFO,
                  "dataset %s: %llu samples, %.1f MiB as fp32, %s store: each of %d ranks "
                  "reads about 1/%d; %s (node %d holds %d ranks)",
                  ds->manifest_path, (unsigned long long)ds->n, bytes / 1048576.0,
                  ds->store_mode == HPCT_STORE_JOB ? "job" : "node", c->size, c->size,
                  ds->store_mode == HPCT_STORE_JOB ? "each rank holds its part"
                                                   : "each node holds the set in a shared window",
                  c->node_id, c->local_size);
        return HPCT_SUCCESS; /* streaming layout at open; store.c loads the block */
    }
    ds->resident = bytes <= (double)ds->cfg.memory_budget_bytes;
    /* Streaming holds the targets when they are at most 1/8 of the inputs (class labels):
     * a shuffled batch then costs one read per run of inputs rows, not two. */
    int hold_targets = !ds->resident && ds->twidth * 8 <= ds->features;
    hpcti_log(ds->ctx, HPCT_LOG_INFO, "dataset %s: %llu samples, %.1f MiB as fp32, %s",
              ds->manifest_path, (unsigned long long)ds->n, bytes / 1048576.0,
              ds->resident   ? "loaded into memory"
              : hold_targets ? "inputs streamed, targets held in memory"
                             : "streamed");
    ds->resident_bytes = ds->resident   ? ds->n * (ds->features + ds->twidth) * 4
                         : hold_targets ? ds->n * ds->twidth * 4
                                        : 0;
    const hpcti_data_comms_t *c = hpcti_data_comms(ds->ctx);
    int node_ranks = c->valid ? c->local_size : 1;
    ds->node_resident_bytes = ds->resident_bytes * (uint64_t)node_ranks; /* a copy per rank */
    if (!ds->resident && !hold_targets) return HPCT_SUCCESS;
    if (ds->resident)
        ds->res_inputs = alloc_resident(ds->ctx, ds->n * ds->features * sizeof(float));
    ds->res_targets = hpcti_calloc(ds->ctx, ds->n, ds->twidth * 4, "dataset targets");
    return (ds->res_inputs || !ds->resident) && ds->res_targets ? HPCT_SUCCESS : HPCT_ERR_NO_MEMORY;
}

/* The checksum mode for the shard whose first sample is first: in store mode one rank, the
 * owner of that sample, hashes the shard (the job hashes each shard once), the others
 * compare its size; they agree on the result before any rank parses a shard. */
static hpct_checksum_mode_t checksum_mode(hpct_dataset_t ds, uint64_t first, uint64_t count)
{
    if (ds->store_mode == HPCT_STORE_OFF || ds->cfg.checksum != HPCT_CHECKSUM_FULL)
        return ds->cfg.checksum;
    const hpcti_data_comms_t *c = hpcti_data_comms(ds->ctx);
    uint64_t lo, hi;
    hpcti_store_block(ds->n, c->size, c->rank, &lo, &hi);
    (void)count;
    return first >= lo && first < hi ? HPCT_CHECKSUM_FULL : HPCT_CHECKSUM_SIZE;
}

/* Stored bytes per sample that HDF5 loads at open: inputs and targets when resident, the
 * targets when only they are held. */
static uint64_t loaded_row_bytes(const hpct_dataset_t ds)
{
    uint64_t in = hpcti_layout_count(&ds->man.inputs) * hpcti_type_size(ds->man.inputs.type);
    uint64_t tg = hpcti_layout_count(&ds->man.targets) * hpcti_type_size(ds->man.targets.type);
    return (ds->resident ? in : 0) + (ds->res_targets ? tg : 0);
}

/* Two manifest lines must not name one file under two names ("./s.h5", a symbolic link):
 * its samples would count twice. ids [2 n] = (device, inode) of the shards so far. */
static hpct_status_t check_alias(hpct_dataset_t ds, uint64_t *ids, int i)
{
    struct stat st;
    if (stat(ds->shards[i].path, &st)) return HPCT_SUCCESS; /* verify_shard names the error */
    ids[2 * i] = (uint64_t)st.st_dev, ids[2 * i + 1] = (uint64_t)st.st_ino;
    for (int j = 0; j < i; j++)
        if (ids[2 * j] == ids[2 * i] && ids[2 * j + 1] == ids[2 * i + 1])
            return hpcti_error(ds->ctx, HPCT_ERR_FORMAT,
                               "manifest %s lines %d and %d name the same shard file ('%s' and "
                               "'%s'): its samples would count twice",
                               ds->manifest_path, ds->man.shards[j].line, ds->man.shards[i].line,
                               ds->man.shards[j].path, ds->man.shards[i].path);
    return HPCT_SUCCESS;
}

/* Verify, then open with HDF5, every shard in manifest order. */
static hpct_status_t verify_shards(hpct_dataset_t ds)
{
    ds->shards = hpcti_calloc(ds->ctx, (size_t)ds->man.num_shards, sizeof *ds->shards, "shards");
    if (!ds->shards) return HPCT_ERR_NO_MEMORY;
    uint64_t *ids = hpcti_calloc(ds->ctx, (size_t)ds->man.num_shards, 2 * sizeof *ids, "ids");
    if (!ids) return HPCT_ERR_NO_MEMORY;
    uint64_t first = 0;
    for (int i = 0; i < ds->man.num_shards; i++) {
        const hpcti_shard_entry_t *e = &ds->man.shards[i];
        hpcti_shard_t *sh = &ds->shards[i];
        ds->num_shards = i + 1; /* so that close releases this one even if it fails */
        sh->fd = -1;
        sh->first = first, sh->count = e->samples;
        sh->path = join_dir(ds->manifest_path, e->path);
        hpct_status_t s = sh->path ? check_alias(ds, ids, i)
                                   : hpcti_error(ds->ctx, HPCT_ERR_NO_MEMORY, "shard path");
        if (!s) s = verify_shard(ds, e, sh->path, checksum_mode(ds, first, e->samples));
        if (s) {
            free(ids);
            return s;
        }
        first += e->samples;
    }
    free(ids);
    return HPCT_SUCCESS;
}

/* Map one shard file read-only; 0, or -1 with errno set. Shuffled access gets MADV_RANDOM:
 * a page fault then reads only the pages of the row, not the read-around window. */
static int map_shard(hpct_dataset_t ds, hpcti_shard_t *sh)
{
    struct stat st;
    if (fstat(sh->fd, &st)) return -1;
    if (st.st_size <= 0 || (uint64_t)st.st_size > SIZE_MAX) return errno = EINVAL, -1;
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, sh->fd, 0);
    if (map == MAP_FAILED) return -1;
    if (ds->cfg.shuffle) madvise(map, (size_t)st.st_size, MADV_RANDOM); /* advice only */
    sh->map = map, sh->map_bytes = (size_t)st.st_size;
    return 0;
}

/* Streaming: map every shard file, so that a batch copies its rows out of the page cache with
 * no system call (reader.c); the stores' bulk reads use preadv. All or none: when one shard
 * cannot be mapped (address space, vm.max_map_count), the others are unmapped again and every
 * batch is read with sorted, coalesced preadv, as with HPCT_STREAM_MMAP=0. */
static void map_shards(hpct_dataset_t ds)
{
    ds->mapped = !ds->resident && ds->store_mode == HPCT_STORE_OFF &&
                 flag_or(ds->ctx, "HPCT_STREAM_MMAP", 1);
    if (ds->mapped && hpcti_mapguard_acquire()) { /* a shrunk file must not kill the process */
        hpcti_log(ds->ctx, HPCT_LOG_INFO, "dataset %s: cannot install the SIGBUS guard (%s)",
                  ds->manifest_path, strerror(errno));
        ds->mapped = 0;
    }
    ds->guarded = ds->mapped;
    for (int i = 0; ds->mapped && i < ds->man.num_shards; i++)
        if (map_shard(ds, &ds->shards[i])) {
            hpcti_log(ds->ctx, HPCT_LOG_INFO, "dataset %s: cannot map shard %s (%s)",
                      ds->manifest_path, ds->shards[i].path, strerror(errno));
            ds->mapped = 0;
        }
    for (int i = 0; !ds->mapped && i < ds->man.num_shards; i++)
        if (ds->shards[i].map) {
            munmap((void *)ds->shards[i].map, ds->shards[i].map_bytes);
            ds->shards[i].map = NULL, ds->shards[i].map_bytes = 0;
        }
    ds->hot = hpcti_mapped_hot(ds); /* checked again at each epoch (reader.c, assign) */
    ds->hot_epoch = ds->files_epoch = -1;
    if (!ds->resident && ds->store_mode == HPCT_STORE_OFF)
        hpcti_log(ds->ctx, HPCT_LOG_INFO, "dataset %s: streaming %s", ds->manifest_path,
                  ds->mapped ? "from the mapped shard files while they are in the page cache, "
                               "else (and runs of 64 KiB and more) with preadv"
                             : "with sorted, coalesced preadv");
}

/* Open every verified shard with HDF5: check it, load (resident) or locate (streaming) rows. */
static hpct_status_t inspect_shards(hpct_dataset_t ds)
{
    for (int i = 0; i < ds->man.num_shards; i++) {
        const hpcti_shard_entry_t *e = &ds->man.shards[i];
        hpcti_shard_t *sh = &ds->shards[i];
        uint64_t first = sh->first;
        hpcti_shard_job_t job = {ds->manifest_path,
                                 e,
                                 &ds->man.inputs,
                                 &ds->man.targets,
                                 ds->names[0],
                                 ds->names[1],
                                 NULL,
                                 NULL,
                                 ds->targets_int};
        if (ds->resident) job.resident_inputs = ds->res_inputs + first * ds->features;
        if (ds->res_targets)
            job.resident_targets = (unsigned char *)ds->res_targets + first * ds->twidth * 4;
        hpct_status_t s = hpcti_shard_inspect(ds->ctx, &job, sh);
        if (s) return s;
        ds->bytes_read += e->samples * loaded_row_bytes(ds); /* HDF5 read them at open */
        if (!ds->resident && (sh->fd = open(sh->path, O_RDONLY | O_CLOEXEC)) < 0)
            return hpcti_error(ds->ctx, HPCT_ERR_IO, "shard %s: %s", sh->path, strerror(errno));
        if (!ds->resident) hpcti_shard_stamp(sh->fd, &sh->size0, &sh->mtime0_ns);
    }
    map_shards(ds);
    return HPCT_SUCCESS;
}

/* HPCT_NONFINITE_SKIP: mark every sample holding a NaN/Inf once, so every rank skips the
 * same global batches whatever the world size. Streams each shard once when not resident. */
static hpct_status_t scan_nonfinite(hpct_dataset_t ds)
{
    enum { BLOCK = 256 };
    ds->bad = hpcti_calloc(ds->ctx, (size_t)(ds->n / 8 + 1), 1, "non-finite sample map");
    float *in = hpcti_calloc(ds->ctx, BLOCK, ds->features * sizeof(float), "scan buffer");
    void *tg = hpcti_calloc(ds->ctx, BLOCK, ds->twidth * 4, "scan buffer");
    unsigned char *scratch =
        hpcti_calloc(ds->ctx, BLOCK, ds->features * 8 + ds->twidth * 8, "scan buffer");
    uint64_t idx[BLOCK];
    char err[768];
    hpct_status_t s = ds->bad && in && tg && scratch ? HPCT_SUCCESS : HPCT_ERR_NO_MEMORY;
    for (uint64_t g = 0; !s && g < ds->n; g += BLOCK) {
        size_t count = ds->n - g < BLOCK ? (size_t)(ds->n - g) : BLOCK;
        for (size_t j = 0; j < count; j++) idx[j] = g + j;
        const float *x = in;
        if (ds->resident)
            x = ds->res_inputs + g * ds->features;
        else if ((s = hpcti_load_samples(ds, idx, count, in, tg, scratch, err, sizeof err)))
            s = hpcti_error(ds->ctx, s, "%s", err);
        for (size_t j = 0; !s && j < count; j++)
            for (size_t k = 0; k < ds->features; k++)
                if (!isfinite(x[j * ds->features + k])) {
                    ds->bad[(g + j) / 8] |= (unsigned char)(1u << ((g + j) % 8));
                    break;
                }
    }
    free(in), free(tg), free(scratch);
    return s;
}

/* With a context from hpct_init at W > 1 the open is collective in every mode: the ranks
 * agree after checking the manifest and the shard files (so that no rank parses a shard that
 * another found missing or corrupt, and a rank that failed before choosing the mode meets the
 * others), then again at the end; a failure on one rank fails the open on all, naming the
 * rank and its error (the first failing rank's), within the collective deadline. */
static hpct_status_t open_all(hpct_dataset_t ds)
{
    hpct_status_t s = load_manifest(ds);
    if (!s) s = plan_sizes(ds);
    int store = ds->store_mode == HPCT_STORE_JOB || ds->store_mode == HPCT_STORE_NODE;
    const hpcti_data_comms_t *c = hpcti_data_comms(ds->ctx);
    int agree = c->valid && c->size > 1;
    if (!s) s = verify_shards(ds);
    if ((store || agree) && (s = hpcti_store_agree(ds, s))) return s; /* on every rank alike */
    if (!s) s = inspect_shards(ds);
    if (!s && !store && ds->cfg.nonfinite == HPCT_NONFINITE_SKIP) s = scan_nonfinite(ds);
    if (store) return hpcti_store_open(ds, s); /* collective: agrees even on failure */
    return agree ? hpcti_store_agree(ds, s) : s;
}

hpct_status_t hpct_dataset_open(hpct_ctx_t ctx, const char *manifest_path,
                                const hpct_data_config_t *cfg, hpct_dataset_t *out)
{
    static const hpct_data_config_t defaults = HPCT_DATA_CONFIG_INITIALIZER;
    if (!ctx || !manifest_path || !out) return HPCT_ERR_INVALID_ARG;
    *out = NULL;
    hpcti_clear_error(ctx);
    if (!cfg) cfg = &defaults;
    hpct_status_t s = check_data_config(ctx, cfg);
    if (s) return s;
    hpct_dataset_t ds = hpcti_calloc(ctx, 1, sizeof *ds, "dataset");
    if (!ds) return HPCT_ERR_NO_MEMORY;
    ds->ctx = ctx;
    if (cfg->version >= 2) {
        ds->cfg = *cfg;
    } else { /* a version 1 struct ends before store */
        memcpy(&ds->cfg, cfg, offsetof(hpct_data_config_t, store));
        ds->cfg.store = HPCT_STORE_AUTO;
    }
    ds->cfg.version = HPCT_DATA_CONFIG_VERSION;
    ds->store_mode = requested_store(ds);
    if ((ds->store_mode == HPCT_STORE_JOB || ds->store_mode == HPCT_STORE_NODE) &&
        !hpcti_data_comms(ctx)->valid) {
        hpcti_log(ctx, HPCT_LOG_WARN,
                  "dataset %s: a store needs a context from hpct_init; reading without it",
                  manifest_path);
        ds->store_mode = HPCT_STORE_OFF;
    }
    ds->held = -1;
    ds->perm_epoch = -1;
    pthread_mutex_init(&ds->mu, NULL);
    pthread_cond_init(&ds->cv, NULL);
    ds->manifest_path = strdup(manifest_path);
    ds->names[0] = strdup(cfg->inputs_name);
    ds->names[1] = strdup(cfg->targets_name);
    if (ds->store_mode < 0)
        s = HPCT_ERR_INVALID_ARG; /* requested_store named the variable */
    else if ((s = check_flags(ctx)) != HPCT_SUCCESS)
        ;
    else if (!ds->manifest_path || !ds->names[0] || !ds->names[1])
        s = hpcti_error(ctx, HPCT_ERR_NO_MEMORY, "dataset %s: no memory", manifest_path);
    else
        s = open_all(ds);
    if (s) {
        hpct_dataset_close(ds);
        return s;
    }
    ds->cfg.inputs_name = ds->names[0];
    ds->cfg.targets_name = ds->names[1];
    *out = ds;
    return HPCT_SUCCESS;
}

static void free_slots(hpct_dataset_t ds)
{
    for (int i = 0; ds->slots && i <= ds->num_slots; i++) { /* the ring and the spare */
        free(ds->slots[i].inputs);
        free(ds->slots[i].targets);
        free(ds->slots[i].scratch);
        free(ds->slots[i].idx);
    }
    free(ds->slots);
    ds->slots = NULL;
    ds->num_slots = 0;
}

void hpct_dataset_close(hpct_dataset_t ds)
{
    if (!ds) return;
    hpcti_reader_stop(ds);
    hpcti_store_free(ds);
    free_slots(ds);
    for (int i = 0; i < ds->num_shards; i++) hpcti_shard_release(&ds->shards[i]);
    if (ds->guarded) hpcti_mapguard_release();
    free(ds->shards);
    hpcti_manifest_free(&ds->man);
    free(ds->res_inputs), free(ds->res_targets), free(ds->bad), free(ds->perm);
    free(ds->batch_idx), free(ds->manifest_path), free(ds->names[0]), free(ds->names[1]);
    pthread_mutex_destroy(&ds->mu);
    pthread_cond_destroy(&ds->cv);
    free(ds);
}

hpct_status_t hpct_dataset_info(hpct_dataset_t ds, size_t *num_samples, int *input_features,
                                int *target_width, hpct_dtype_t *target_dtype)
{
    if (!ds) return HPCT_ERR_INVALID_ARG;
    if (num_samples) *num_samples = (size_t)ds->n;
    if (input_features) *input_features = (int)ds->features;
    if (target_width) *target_width = (int)ds->twidth;
    if (target_dtype) *target_dtype = ds->targets_int ? HPCT_DTYPE_INT32 : HPCT_DTYPE_FLOAT32;
    return HPCT_SUCCESS;
}

/* CPUs this rank may count on: its affinity mask, shared by the ranks of its node when the
 * mask is the whole machine (ranks not bound). */
static double cpus_per_rank(hpct_dataset_t ds)
{
    long online;
    double mine = hpcti_cpus_usable(&online);
    const hpcti_data_comms_t *c = hpcti_data_comms(ds->ctx);
    if (c->valid && c->local_size > 1 && mine >= (double)online) mine /= c->local_size;
    return mine;
}

/* The prefetch thread copies from the page cache or memory: CPU work, which only overlaps
 * the caller's step when the rank has a second CPU for it (bench_reader --wait: with 2 CPUs
 * it hides shuffled streaming, 37% -> 2% of a 1 ms step waiting; pinned to 1 CPU it waits
 * 36% against 33% without the thread). */
int hpcti_prefetch_rule(hpct_dataset_t ds)
{
    if (ds->cfg.prefetch_depth == 0 || ds->store_mode == HPCT_STORE_JOB) return 0;
    const char *env = hpcti_tunable_value("HPCT_PREFETCH_THREAD");
    double cpus = cpus_per_rank(ds);
    int use = flag_or(ds->ctx, "HPCT_PREFETCH_THREAD", cpus >= 2.0);
    hpcti_log(ds->ctx, HPCT_LOG_INFO, "dataset %s: prefetch thread %s (%.1f CPUs per rank%s)",
              ds->manifest_path, use ? "on" : "off", cpus,
              env && *env ? ", set by HPCT_PREFETCH_THREAD" : "");
    return use;
}

/* Slots for depth batches in flight plus the one the caller holds, and with prefetch the spare
 * one the caller fills when the thread is not running (reader.c, take_slot). */
static hpct_status_t alloc_slots(hpct_dataset_t ds)
{
    free_slots(ds);
    int n = ds->cfg.prefetch_depth + 1;
    ds->slots = hpcti_calloc(ds->ctx, (size_t)n + 1, sizeof *ds->slots, "prefetch slots");
    if (!ds->slots) return HPCT_ERR_NO_MEMORY;
    ds->num_slots = n;
    size_t lb = (size_t)ds->local_batch;
    size_t raw = (ds->features > ds->twidth ? ds->features : ds->twidth) * 8;
    for (int i = 0; i < n + (ds->cfg.prefetch_depth > 0); i++) {
        hpcti_slot_t *sl = &ds->slots[i];
        sl->inputs = hpcti_calloc(ds->ctx, lb, ds->features * sizeof(float), "batch inputs");
        sl->targets = hpcti_calloc(ds->ctx, lb, ds->twidth * 4, "batch targets");
        sl->scratch = hpcti_calloc(ds->ctx, lb, raw, "batch scratch");
        sl->idx = hpcti_calloc(ds->ctx, lb, sizeof(uint64_t), "batch indices");
        if (!sl->inputs || !sl->targets || !sl->scratch || !sl->idx) return HPCT_ERR_NO_MEMORY;
    }
    return HPCT_SUCCESS;
}

hpct_status_t hpct_dataset_partition(hpct_dataset_t ds, int rank, int world_size, int global_batch)
{
    if (!ds) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(ds->ctx);
    if (world_size < 1 || rank < 0 || rank >= world_size)
        return hpcti_error(ds->ctx, HPCT_ERR_INVALID_ARG,
                           "dataset %s: rank %d is not in [0, world size %d)", ds->manifest_path,
                           rank, world_size);
    if (global_batch < 1 || global_batch % world_size || (uint64_t)global_batch > ds->n)
        return hpcti_error(ds->ctx, HPCT_ERR_INVALID_ARG,
                           "dataset %s: global batch %d must be a multiple of the world size %d "
                           "and at most the %llu samples",
                           ds->manifest_path, global_batch, world_size, (unsigned long long)ds->n);
    hpcti_reader_stop(ds);
    ds->rank = rank, ds->world = world_size;
    ds->global_batch = global_batch;
    ds->local_batch = global_batch / world_size;
    ds->steps = (long)(ds->n / (uint64_t)global_batch);
    ds->epoch = ds->step = ds->skipped = 0;
    free(ds->batch_idx);
    ds->batch_idx = hpcti_calloc(ds->ctx, (size_t)global_batch, sizeof(uint64_t), "batch indices");
    if (ds->cfg.shuffle && !ds->perm)
        ds->perm = hpcti_calloc(ds->ctx, (size_t)ds->n, sizeof(uint64_t), "epoch permutation");
    if (!ds->batch_idx || (ds->cfg.shuffle && !ds->perm)) {
        ds->global_batch = 0; /* unpartitioned: next() refuses until a partition succeeds */
        return HPCT_ERR_NO_MEMORY;
    }
    hpct_status_t s = alloc_slots(ds);
    if (!s && ds->store_mode == HPCT_STORE_JOB) s = hpcti_store_partition(ds);
    ds->threaded = hpcti_prefetch_rule(ds);
    if (s) {
        ds->global_batch = 0;
        return s;
    }
    return hpcti_reader_restart(ds);
}

hpct_status_t hpct_dataset_steps_per_epoch(hpct_dataset_t ds, long *steps)
{
    if (!ds || !steps) return HPCT_ERR_INVALID_ARG;
    if (!ds->global_batch)
        return hpcti_error(ds->ctx, HPCT_ERR_STATE, "dataset %s: not partitioned yet",
                           ds->manifest_path);
    *steps = ds->steps;
    return HPCT_SUCCESS;
}

hpct_status_t hpct_dataset_get_cursor(hpct_dataset_t ds, long *epoch, long *step)
{
    if (!ds || !epoch || !step) return HPCT_ERR_INVALID_ARG;
    *epoch = ds->epoch, *step = ds->step;
    return HPCT_SUCCESS;
}

hpct_status_t hpct_dataset_set_cursor(hpct_dataset_t ds, long epoch, long step)
{
    if (!ds) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(ds->ctx);
    if (!ds->global_batch)
        return hpcti_error(ds->ctx, HPCT_ERR_STATE,
                           "dataset %s: call hpct_dataset_partition before setting the cursor",
                           ds->manifest_path);
    if (epoch < 0 || step < 0 || step >= ds->steps)
        return hpcti_error(ds->ctx, HPCT_ERR_INVALID_ARG,
                           "dataset %s: cursor (epoch %ld, step %ld) out of range (%ld steps per "
                           "epoch)",
                           ds->manifest_path, epoch, step, ds->steps);
    hpcti_reader_stop(ds);
    ds->epoch = epoch, ds->step = step;
    ds->files_epoch = -1; /* the shard files are checked again at the new position */
    return hpcti_reader_restart(ds);
}

hpct_status_t hpct_dataset_skipped(hpct_dataset_t ds, long *count)
{
    if (!ds || !count) return HPCT_ERR_INVALID_ARG;
    *count = ds->skipped;
    return HPCT_SUCCESS;
}

hpct_status_t hpct_dataset_stats(hpct_dataset_t ds, hpct_data_stats_t *stats)
{
    if (!ds || !stats) return HPCT_ERR_INVALID_ARG;
    memset(stats, 0, sizeof *stats);
    stats->version = HPCT_DATA_STATS_VERSION;
    stats->store = ds->store_mode == HPCT_STORE_AUTO ? HPCT_STORE_OFF : ds->store_mode;
    stats->bytes_read = __atomic_load_n(&ds->bytes_read, __ATOMIC_RELAXED);
    stats->epoch_bytes_read = stats->bytes_read - ds->epoch_bytes0;
    stats->hashed_bytes = ds->hashed_bytes;
    stats->resident_bytes = ds->resident_bytes;
    stats->node_resident_bytes = ds->node_resident_bytes;
    stats->exchange_bytes = ds->exchange_bytes;
    return HPCT_SUCCESS;
}
