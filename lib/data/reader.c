/* reader.c: hpct_dataset_*: manifest-driven sharded reader, global shuffle, exact cursor,
 * prefetch thread. The shuffle contract is in include/hpctrain.h and doc/data-formats.md.
 *
 * Threading: HDF5 is called only from hpct_dataset_open (h5shard.c, caller's thread). The
 * prefetch thread copies rows from memory (resident mode) or pread(2)s them at offsets
 * HDF5 reported (streaming mode); it never enters HDF5, which is not thread-safe here. */
#include "reader.h"
#include "mapguard.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* ---- the permutation (contract) ---------------------------------------- */

/* Uniform integer in [0, bound) without modulo bias (multiply-shift with rejection). */
static uint64_t bounded(hpcti_rng_t *rng, uint64_t bound)
{
    unsigned __int128 m = (unsigned __int128)hpcti_rng_next(rng) * bound;
    uint64_t low = (uint64_t)m;
    if (low < bound) {
        uint64_t threshold = (0 - bound) % bound;
        while (low < threshold) {
            m = (unsigned __int128)hpcti_rng_next(rng) * bound;
            low = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}

hpct_status_t hpct_data_permutation(uint64_t seed, long epoch, size_t n, uint64_t *perm)
{
    if (!perm && n) return HPCT_ERR_INVALID_ARG;
    if (epoch < 0) return HPCT_ERR_INVALID_ARG;
    hpcti_rng_t rng;
    hpcti_rng_seed(&rng, hpcti_seed_mix(seed, (uint64_t)epoch));
    for (size_t i = 0; i < n; i++) perm[i] = i;
    for (size_t i = n; i > 1; i--) { /* Fisher-Yates, from the end */
        uint64_t j = bounded(&rng, i);
        uint64_t t = perm[i - 1];
        perm[i - 1] = perm[j];
        perm[j] = t;
    }
    return HPCT_SUCCESS;
}

/* ---- locating and reading rows --------------------------------------- */

/* Index of the shard holding global sample g (binary search on first). */
int hpcti_shard_of(const hpct_dataset_t ds, uint64_t g)
{
    int lo = 0, hi = ds->num_shards - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (ds->shards[mid].first <= g)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* Ask the cache for a whole row ahead of its copy: rows of a shuffled batch lie far apart,
 * so the hardware prefetcher only starts after a few misses per row. */
static inline void prefetch_row(const void *row, size_t bytes)
{
    const char *p = row;
    for (size_t off = 0; off < bytes; off += 64) __builtin_prefetch(p + off, 0, 0);
}

/* Resident mode: one copy per run of consecutive samples, from memory. */
static void copy_resident(hpct_dataset_t ds, const uint64_t *idx, size_t count, float *inputs,
                          unsigned char *tg)
{
    size_t in_row = ds->features * sizeof(float), tg_row = ds->twidth * 4;
    for (size_t j = 0; j < count;) {
        size_t run = 1;
        while (j + run < count && idx[j + run] == idx[j] + run) run++;
        if (j + run < count) prefetch_row(ds->res_inputs + idx[j + run] * ds->features, in_row);
        memcpy(inputs + j * ds->features, ds->res_inputs + idx[j] * ds->features, run * in_row);
        memcpy(tg + j * tg_row, (unsigned char *)ds->res_targets + idx[j] * tg_row, run * tg_row);
        j += run;
    }
}

/* File offset of row `row` of one array of a shard. */
static uint64_t row_offset(const hpcti_rows_src_t *src, uint64_t row)
{
    if (!src->chunk_rows) return src->base + row * src->row_bytes;
    return src->chunk_addr[row / src->chunk_rows] + (row % src->chunk_rows) * src->row_bytes;
}

/* One row to read: its shard, file offset and place in the batch. */
typedef struct row_req {
    uint32_t shard, pos;
    uint64_t off;
} row_req_t;

static int by_shard_then_offset(const void *a, const void *b)
{
    const row_req_t *x = a, *y = b;
    if (x->shard != y->shard) return x->shard < y->shard ? -1 : 1;
    return x->off < y->off ? -1 : x->off > y->off;
}

/* preadv exactly the bytes of iov[0..n) from off (a contiguous file range), or explain. */
static hpct_status_t readv_exact(hpct_dataset_t ds, const hpcti_shard_t *sh, const char *name,
                                 struct iovec *iov, int n, uint64_t off, char *err, size_t errlen)
{
    while (n > 0) {
        ssize_t got = preadv(sh->fd, iov, n, (off_t)off);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            snprintf(err, errlen, "shard %s dataset /%s: %s at byte %llu", sh->path, name,
                     strerror(errno), (unsigned long long)off);
            return HPCT_ERR_IO;
        }
        if (got == 0) { /* shorter than open verified: no longer that data */
            snprintf(err, errlen,
                     "shard %s dataset /%s: end of file at byte %llu (it was %lld bytes when the "
                     "dataset was opened: truncated or rewritten during the run?)",
                     sh->path, name, (unsigned long long)off, sh->size0);
            return HPCT_ERR_CHECKSUM;
        }
        __atomic_fetch_add(&ds->bytes_read, (uint64_t)got, __ATOMIC_RELAXED);
        off += (uint64_t)got;
        while (n > 0 && (size_t)got >= iov->iov_len) got -= (ssize_t)iov->iov_len, iov++, n--;
        if (n > 0) iov->iov_base = (char *)iov->iov_base + got, iov->iov_len -= (size_t)got;
    }
    return HPCT_SUCCESS;
}

/* Raw rows of samples idx[0..count) of one array (0 inputs, 1 targets) into raw, in batch
 * order, [count, row_bytes]: the requests are sorted by shard and file offset and each run of
 * adjacent rows becomes one preadv whose buffers are the rows' places in the batch. */
static hpct_status_t read_array(hpct_dataset_t ds, int array, const uint64_t *idx, size_t count,
                                unsigned char *raw, row_req_t *req, struct iovec *iov, char *err,
                                size_t errlen)
{
    for (size_t j = 0; j < count; j++) {
        int k = hpcti_shard_of(ds, idx[j]);
        const hpcti_shard_t *sh = &ds->shards[k];
        req[j] = (row_req_t){(uint32_t)k, (uint32_t)j,
                             row_offset(array ? &sh->tg : &sh->in, idx[j] - sh->first)};
    }
    size_t sorted = 1; /* sequential batches come sorted: skip the sort */
    while (sorted < count && by_shard_then_offset(&req[sorted - 1], &req[sorted]) <= 0) sorted++;
    if (sorted < count) qsort(req, count, sizeof *req, by_shard_then_offset);
    for (size_t j = 0; j < count;) {
        const hpcti_shard_t *sh = &ds->shards[req[j].shard];
        size_t rb = (size_t)(array ? sh->tg.row_bytes : sh->in.row_bytes);
        int n = 0;
        uint64_t start = req[j].off;
        do {
            unsigned char *to = raw + (size_t)req[j].pos * rb;
            if (n && (unsigned char *)iov[n - 1].iov_base + iov[n - 1].iov_len == to)
                iov[n - 1].iov_len += rb; /* adjacent in the file and in the batch */
            else
                iov[n++] = (struct iovec){to, rb};
            j++;
        } while (j < count && n < HPCTI_MAX_IOV && req[j].shard == req[j - 1].shard &&
                 req[j].off == req[j - 1].off + rb);
        hpct_status_t s = readv_exact(ds, sh, ds->names[array], iov, n, start, err, errlen);
        if (s) return s;
    }
    return HPCT_SUCCESS;
}

/* Runs of at least this many bytes are read with preadv, shorter ones copied from the mapping:
 * a sequential batch is one long run, as fast either way from a warm page cache, and preadv
 * keeps the kernel's read-ahead and I/O counters for it (measured with bench_reader). */
#define HPCTI_PREADV_RUN 65536

/* Ask for the first 512 bytes of a mapped row (sample g) ahead of its copy; the hardware
 * prefetcher follows the rest. Prefetching whole rows, or rows further ahead, measured no
 * better (bench_reader --wait, CPU time). */
static void prefetch_mapped(hpct_dataset_t ds, int array, uint64_t g, size_t rb)
{
    const hpcti_shard_t *sh = &ds->shards[hpcti_shard_of(ds, g)];
    uint64_t off = row_offset(array ? &sh->tg : &sh->in, g - sh->first);
    if (off + rb <= sh->map_bytes) prefetch_row(sh->map + off, rb < 512 ? rb : 512);
}

/* Rows of samples idx[0..count) of one array into raw [count, row_bytes], in batch order, from
 * the shards' mappings: one memcpy per run of rows adjacent in the batch and in the file, no
 * sort and no system call. A run of HPCTI_PREADV_RUN bytes or more (a sequential batch) is
 * read with preadv instead, and so is a row past the end of the mapping. *at: the shard being
 * copied from, for the fault path of copy_mapped. The bytes copied count as read. */
static hpct_status_t copy_runs(hpct_dataset_t ds, int array, const uint64_t *idx, size_t count,
                               unsigned char *raw, const hpcti_shard_t *volatile *at, char *err,
                               size_t errlen)
{
    uint64_t copied = 0;
    for (size_t j = 0; j < count;) {
        const hpcti_shard_t *sh = &ds->shards[hpcti_shard_of(ds, idx[j])];
        const hpcti_rows_src_t *src = array ? &sh->tg : &sh->in;
        size_t rb = (size_t)src->row_bytes, run = 1;
        uint64_t off = row_offset(src, idx[j] - sh->first);
        while (j + run < count && idx[j + run] == idx[j] + run &&
               idx[j + run] < sh->first + sh->count &&
               row_offset(src, idx[j + run] - sh->first) == off + run * rb)
            run++;
        size_t bytes = run * rb;
        if (bytes >= HPCTI_PREADV_RUN || off + bytes > sh->map_bytes) {
            struct iovec iov = {raw + j * rb, bytes};
            hpct_status_t s = readv_exact(ds, sh, ds->names[array], &iov, 1, off, err, errlen);
            if (s) return s;
        } else {
            if (j + run < count) prefetch_mapped(ds, array, idx[j + run], rb);
            *at = sh;
            memcpy(raw + j * rb, sh->map + off, bytes);
            copied += bytes;
        }
        j += run;
    }
    __atomic_fetch_add(&ds->bytes_read, copied, __ATOMIC_RELAXED);
    return HPCT_SUCCESS;
}

/* copy_runs inside a SIGBUS guard (mapguard.h): when a shard file shrank under its mapping
 * (rewritten in place during the job), the copy fails naming the file instead of the process
 * dying (HPCT_ERR_CHECKSUM: bad input, not a failing disk), and later batches go through
 * preadv, which reports the short file too. */
static hpct_status_t copy_mapped(hpct_dataset_t ds, int array, const uint64_t *idx, size_t count,
                                 unsigned char *raw, char *err, size_t errlen)
{
    const hpcti_shard_t *volatile at = NULL;
    sigjmp_buf jb;
    if (sigsetjmp(jb, 0)) {
        hpcti_mapguard_recover();
        __atomic_store_n(&ds->hot, 0, __ATOMIC_RELAXED);
        const hpcti_shard_t *sh = at;
        snprintf(err, errlen,
                 "shard %s dataset /%s: the file shrank while it was read (it was %zu bytes when "
                 "the dataset was opened: rewritten during the job?)",
                 sh ? sh->path : "?", ds->names[array], sh ? sh->map_bytes : (size_t)0);
        return HPCT_ERR_CHECKSUM; /* no longer the data open verified */
    }
    hpcti_mapguard_enter(&jb);
    hpct_status_t s = copy_runs(ds, array, idx, count, raw, &at, err, errlen);
    hpcti_mapguard_leave();
    return s;
}

int hpcti_mapped_hot(const hpct_dataset_t ds)
{
    enum { PROBES = 1024 }; /* pages looked at, spread over the shards by size */
    if (!ds->mapped) return 0;
    size_t page = (size_t)sysconf(_SC_PAGESIZE), total = 0, probes = 0, in = 0;
    for (int k = 0; k < ds->num_shards; k++) total += ds->shards[k].map_bytes;
    for (int k = 0; k < ds->num_shards && total; k++) {
        const hpcti_shard_t *sh = &ds->shards[k];
        size_t pages = (sh->map_bytes + page - 1) / page;
        size_t n = (size_t)((double)PROBES * (double)sh->map_bytes / (double)total) + 1;
        for (size_t i = 0; i < n && pages; i++) {
            unsigned char v = 0;
            size_t at = (i * pages / n) * page; /* page-aligned: the mapping starts on a page */
            if (!mincore((void *)(sh->map + at), 1, &v)) probes++, in += v & 1;
        }
    }
    return probes && in * 10 >= probes * 9;
}

/* Rows of one array into dst (fp32, or int32 when as_int), through scratch when the stored
 * type differs. */
static hpct_status_t stream_array(hpct_dataset_t ds, int array, const uint64_t *idx, size_t count,
                                  void *dst, unsigned char *scratch, char *err, size_t errlen)
{
    hpcti_type_t type = array ? ds->man.targets.type : ds->man.inputs.type;
    int as_int = array && ds->targets_int;
    int direct = type == (as_int ? HPCTI_I32 : HPCTI_F32);
    row_req_t req[HPCTI_MAX_IOV];
    struct iovec iov[HPCTI_MAX_IOV];
    size_t values = array ? ds->twidth : ds->features;
    for (size_t done = 0; done < count;) { /* HPCTI_MAX_IOV rows at a time */
        size_t part = count - done < HPCTI_MAX_IOV ? count - done : HPCTI_MAX_IOV;
        unsigned char *out = (unsigned char *)dst + done * values * 4;
        unsigned char *raw = direct ? out : scratch;
        hpct_status_t s = __atomic_load_n(&ds->hot, __ATOMIC_RELAXED)
                              ? copy_mapped(ds, array, idx + done, part, raw, err, errlen)
                              : read_array(ds, array, idx + done, part, raw, req, iov, err, errlen);
        if (s) return s;
        if (!direct && as_int)
            hpcti_convert_i32(type, raw, (int32_t *)(void *)out, part * values);
        else if (!direct)
            hpcti_convert_f32(type, raw, (float *)(void *)out, part * values);
        done += part;
    }
    return HPCT_SUCCESS;
}

/* Rows of samples idx[0..count) into inputs/targets: resident mode copies from memory;
 * streaming reads the inputs (and the targets unless they are held) with coalesced preadv. */
hpct_status_t hpcti_load_samples(hpct_dataset_t ds, const uint64_t *idx, size_t count,
                                 float *inputs, void *targets, unsigned char *scratch, char *err,
                                 size_t errlen)
{
    if (ds->resident) {
        copy_resident(ds, idx, count, inputs, targets);
        return HPCT_SUCCESS;
    }
    hpct_status_t s = stream_array(ds, 0, idx, count, inputs, scratch, err, errlen);
    if (s) return s;
    if (!ds->res_targets) return stream_array(ds, 1, idx, count, targets, scratch, err, errlen);
    size_t tg_row = ds->twidth * 4;
    for (size_t j = 0; j < count; j++)
        memcpy((unsigned char *)targets + j * tg_row,
               (unsigned char *)ds->res_targets + idx[j] * tg_row, tg_row);
    return HPCT_SUCCESS;
}

/* 1 when any of x[0..n) is NaN or Inf. A value is non-finite when its 8 exponent bits are
 * all set, i.e. when adding 1 to the exponent field carries into the sign bit. Branch-free
 * so the compiler vectorises it, cloned for AVX2/AVX-512 where the CPU has them: the check
 * then costs less than copying the batch. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
static int
any_nonfinite(const float *x, size_t n)
{
    const uint32_t *bits = (const uint32_t *)(const void *)x;
    uint32_t any = 0;
    for (size_t i = 0; i < n; i++) any |= (bits[i] & 0x7f800000u) + 0x00800000u;
    return (any & 0x80000000u) != 0;
}

/* First row (and its value *feature) of x [count, features] holding a NaN/Inf, or -1. */
static long first_nonfinite(const float *x, size_t count, size_t features, size_t *feature)
{
    if (!any_nonfinite(x, count * features)) return -1;
    for (size_t j = 0; j < count; j++)
        for (size_t k = 0; k < features; k++)
            if (!isfinite(x[j * features + k])) {
                *feature = k;
                return (long)j;
            }
    return -1;
}

/* ---- producing batches ------------------------------------------------ */

void hpcti_batch_indices(hpct_dataset_t ds, long epoch, long step)
{
    uint64_t start = (uint64_t)step * (uint64_t)ds->global_batch;
    if (!ds->cfg.shuffle) {
        for (int i = 0; i < ds->global_batch; i++) ds->batch_idx[i] = start + (uint64_t)i;
        return;
    }
    if (ds->perm_epoch != epoch) {
        hpct_data_permutation(ds->cfg.seed, epoch, ds->n, ds->perm);
        ds->perm_epoch = epoch;
    }
    memcpy(ds->batch_idx, ds->perm + start, (size_t)ds->global_batch * sizeof(uint64_t));
}

int hpcti_batch_is_bad(const hpct_dataset_t ds)
{
    if (!ds->bad) return 0;
    for (int i = 0; i < ds->global_batch; i++) {
        uint64_t g = ds->batch_idx[i];
        if (ds->bad[g / 8] & (1u << (g % 8))) return 1;
    }
    return 0;
}

void hpcti_advance(long *epoch, long *step, long steps)
{
    if (++*step == steps) *step = 0, ++*epoch;
}

/* Describe a non-finite input found at row j of the local batch. */
static void nonfinite_message(hpct_dataset_t ds, const uint64_t *local, long j, size_t k, char *err,
                              size_t errlen)
{
    const hpcti_shard_t *sh = &ds->shards[hpcti_shard_of(ds, local[j])];
    snprintf(err, errlen,
             "non-finite input in shard %s dataset /%s: sample %llu of the shard (global %llu), "
             "value %zu (nonfinite policy is error)",
             sh->path, ds->names[0], (unsigned long long)(local[j] - sh->first),
             (unsigned long long)local[j], k);
}

void hpcti_shard_stamp(int fd, long long *size, long long *mtime_ns)
{
    struct stat st;
    *size = *mtime_ns = -1;
    if (fstat(fd, &st)) return;
    *size = (long long)st.st_size;
    *mtime_ns = (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
}

/* Once an epoch: a streamed shard whose open file changed size or modification time since
 * the dataset was opened was rewritten in place during the run (a file replaced by rename
 * keeps the one this run opened, unchanged). 1 with the detail in err [errlen]. */
static int shard_changed(hpct_dataset_t ds, char *err, size_t errlen)
{
    for (int i = 0; i < ds->num_shards; i++) {
        const hpcti_shard_t *sh = &ds->shards[i];
        long long size, mtime;
        if (sh->fd < 0) continue;
        hpcti_shard_stamp(sh->fd, &size, &mtime);
        if (size == sh->size0 && mtime == sh->mtime0_ns) continue;
        snprintf(err, errlen,
                 "shard %s was modified while this run read it (%lld bytes, modified %.3f s "
                 "after the dataset was opened; it had %lld bytes): batches from it may mix old "
                 "and new samples; a dataset must not change during a run: restore it, or write "
                 "the new one elsewhere, and resume from the last checkpoint",
                 sh->path, size, (double)(mtime - sh->mtime0_ns) * 1e-9, sh->size0);
        return 1;
    }
    return 0;
}

int hpcti_dataset_files_changed(hpct_dataset_t ds, char *err, size_t errlen)
{
    return ds && !ds->resident && shard_changed(ds, err, errlen);
}

/* The next batch position (pe, ps) for slot, skipping bad batches, with this rank's indices
 * copied to slot->idx. Under ds->mu when the thread runs: it moves the shared producer. */
static void assign(hpct_dataset_t ds, hpcti_slot_t *slot)
{
    slot->skipped = 0;
    slot->status = HPCT_SUCCESS;
    slot->assign_failed = 0;
    for (;;) {
        hpcti_batch_indices(ds, ds->pe, ds->ps);
        if (!hpcti_batch_is_bad(ds)) break;
        hpcti_advance(&ds->pe, &ds->ps, ds->steps);
        if (++slot->skipped >= ds->steps) {
            slot->status = HPCT_ERR_NONFINITE;
            slot->assign_failed = 1;
            snprintf(slot->err, sizeof slot->err,
                     "every global batch of an epoch of %s holds a non-finite input in /%s; "
                     "nothing left to train on",
                     ds->manifest_path, ds->names[0]);
            return;
        }
    }
    slot->epoch = ds->pe, slot->step = ds->ps;
    if (ds->files_bad || ds->files_epoch != ds->pe) { /* once an epoch, and for good after */
        ds->files_epoch = ds->pe;
        ds->files_bad = shard_changed(ds, slot->err, sizeof slot->err);
        if (ds->files_bad) { /* no longer the data open verified: a checksum error */
            slot->status = HPCT_ERR_CHECKSUM;
            slot->assign_failed = 1;
            return;
        }
    }
    if (ds->mapped && ds->hot_epoch != ds->pe) { /* once an epoch: still in the page cache? */
        __atomic_store_n(&ds->hot, hpcti_mapped_hot(ds), __ATOMIC_RELAXED);
        ds->hot_epoch = ds->pe;
    }
    memcpy(slot->idx, ds->batch_idx + (size_t)ds->rank * (size_t)ds->local_batch,
           (size_t)ds->local_batch * sizeof(uint64_t));
    hpcti_advance(&ds->pe, &ds->ps, ds->steps);
}

/* The rows of slot->idx into the slot, checked for non-finite inputs. Needs no lock: the
 * slot belongs to whoever claimed it until it is READY. */
static void fill(hpct_dataset_t ds, hpcti_slot_t *slot)
{
    if (slot->status) return;
    size_t lb = (size_t)ds->local_batch, k = 0;
    slot->status = hpcti_load_samples(ds, slot->idx, lb, slot->inputs, slot->targets, slot->scratch,
                                      slot->err, sizeof slot->err);
    long j = slot->status || ds->cfg.nonfinite != HPCT_NONFINITE_ERROR
                 ? -1
                 : first_nonfinite(slot->inputs, lb, ds->features, &k);
    if (j >= 0) {
        slot->status = HPCT_ERR_NONFINITE;
        nonfinite_message(ds, slot->idx, j, k, slot->err, sizeof slot->err);
    }
}

/* Under ds->mu: take the slot at the tail of the ring for the next batch. */
static hpcti_slot_t *claim(hpct_dataset_t ds)
{
    hpcti_slot_t *slot = &ds->slots[ds->tail];
    slot->state = HPCTI_SLOT_FILLING;
    assign(ds, slot);
    ds->tail = (ds->tail + 1) % ds->num_slots;
    return slot;
}

/* CPU time of the calling thread, seconds: what a fill costs when it runs, whatever the
 * scheduler did meanwhile (a wall-clock figure would grow with the very stalls that
 * wait_or_steal is there to cut short). */
static double cpu_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Fill a claimed slot outside the lock, then publish it (or drop it: the consumer stole it). */
static void fill_and_publish(hpct_dataset_t ds, hpcti_slot_t *slot)
{
    pthread_mutex_unlock(&ds->mu);
    double t0 = cpu_seconds();
    fill(ds, slot);
    double took = cpu_seconds() - t0;
    pthread_mutex_lock(&ds->mu);
    ds->fill_s = ds->fill_s > 0 ? 0.875 * ds->fill_s + 0.125 * took : took;
    slot->state = slot->state == HPCTI_SLOT_STOLEN ? HPCTI_SLOT_FREE : HPCTI_SLOT_READY;
    pthread_cond_broadcast(&ds->cv);
}

/* Under ds->mu: the head slot is being filled by the thread and no slot is free. Wait for it
 * about twice the CPU time a batch takes to fill; then, if the thread has still not finished
 * (the scheduler has taken its CPU: a wait of a whole time slice), build the same batch in the
 * spare slot here and mark the head STOLEN. Returns the slot to hand out, or NULL to look
 * again. */
static hpcti_slot_t *wait_or_steal(hpct_dataset_t ds)
{
    hpcti_slot_t *head = &ds->slots[ds->head], *spare = &ds->slots[ds->num_slots];
    double patience = 2.0 * ds->fill_s + 50e-6; /* seconds */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until); /* the condition variable's clock */
    long ns = until.tv_nsec + (long)(patience * 1e9);
    until.tv_sec += ns / 1000000000L, until.tv_nsec = ns % 1000000000L;
    if (pthread_cond_timedwait(&ds->cv, &ds->mu, &until) != ETIMEDOUT ||
        head->state != HPCTI_SLOT_FILLING || head->assign_failed || !spare->inputs)
        return NULL;
    /* what assign() wrote under mu; status and err belong to the thread's fill */
    spare->epoch = head->epoch, spare->step = head->step, spare->skipped = head->skipped;
    spare->status = HPCT_SUCCESS;
    memcpy(spare->idx, head->idx, (size_t)ds->local_batch * sizeof *spare->idx);
    head->state = HPCTI_SLOT_STOLEN;
    ds->steals++;
    ds->head = (ds->head + 1) % ds->num_slots;
    pthread_mutex_unlock(&ds->mu);
    fill(ds, spare);
    pthread_mutex_lock(&ds->mu);
    return spare;
}

static void *prefetch_main(void *arg)
{
    hpct_dataset_t ds = arg;
    pthread_mutex_lock(&ds->mu);
    for (;;) {
        while (!ds->stop && ds->slots[ds->tail].state != HPCTI_SLOT_FREE)
            pthread_cond_wait(&ds->cv, &ds->mu);
        if (ds->stop) break;
        hpcti_slot_t *slot = claim(ds);
        if (ds->test_thread_stall_s > 0) { /* t/test_data.c: a thread that does not run */
            pthread_mutex_unlock(&ds->mu);
            long ns = (long)(ds->test_thread_stall_s * 1e9);
            struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
            nanosleep(&ts, NULL);
            pthread_mutex_lock(&ds->mu);
        }
        fill_and_publish(ds, slot);
        /* the consumer reports a failure and restarts us; a stolen slot (now FREE) it
         * built itself, and reports from its own copy */
        if (slot->status && slot->state != HPCTI_SLOT_FREE) break;
    }
    pthread_mutex_unlock(&ds->mu);
    return NULL;
}

void hpcti_reader_stop(hpct_dataset_t ds)
{
    if (!ds->running) return;
    pthread_mutex_lock(&ds->mu);
    ds->stop = 1;
    pthread_cond_broadcast(&ds->cv);
    pthread_mutex_unlock(&ds->mu);
    pthread_join(ds->thread, NULL);
    ds->running = 0;
}

/* Reset the ring and the producer to the consumer's cursor; start the thread if wanted. */
hpct_status_t hpcti_reader_restart(hpct_dataset_t ds)
{
    hpcti_reader_stop(ds);
    for (int i = 0; i < ds->num_slots; i++) ds->slots[i].state = HPCTI_SLOT_FREE;
    ds->head = ds->tail = 0;
    ds->held = -1;
    ds->pe = ds->epoch, ds->ps = ds->step;
    ds->stop = 0;
    if (ds->store_mode ==
        HPCT_STORE_JOB) { /* no thread: MPI runs FUNNELED; the store posts one batch ahead */
        hpct_status_t s = hpcti_store_drain(ds);
        hpcti_store_reset(ds);
        return s;
    }
    if (!ds->threaded) return HPCT_SUCCESS;
    if (pthread_create(&ds->thread, NULL, prefetch_main, ds))
        return hpcti_error(ds->ctx, HPCT_ERR_NO_MEMORY, "cannot start the prefetch thread for %s",
                           ds->manifest_path);
    ds->running = 1;
    return HPCT_SUCCESS;
}

/* Take the next ready slot (waiting for the prefetch thread), or build it here. */
static hpcti_slot_t *take_slot(hpct_dataset_t ds)
{
    if (!ds->threaded) {
        assign(ds, &ds->slots[0]);
        fill(ds, &ds->slots[0]);
        return &ds->slots[0];
    }
    pthread_mutex_lock(&ds->mu);
    if (ds->held >= 0) {
        ds->slots[ds->held].state = HPCTI_SLOT_FREE;
        ds->held = -1;
        pthread_cond_broadcast(&ds->cv);
    }
    /* While the next batch is not ready, fill the next free slot here (the head one when the
     * thread is behind or has no CPU now) rather than sleep until the thread is scheduled;
     * when every slot is claimed and the thread is on the head one, wait a little, then build
     * that batch here too (wait_or_steal). */
    hpcti_slot_t *slot = NULL;
    while (!slot && ds->slots[ds->head].state != HPCTI_SLOT_READY) {
        if (ds->slots[ds->tail].state == HPCTI_SLOT_FREE)
            fill_and_publish(ds, claim(ds));
        else if (ds->slots[ds->head].state == HPCTI_SLOT_FILLING)
            slot = wait_or_steal(ds);
        else
            pthread_cond_wait(&ds->cv, &ds->mu);
    }
    if (!slot) {
        slot = &ds->slots[ds->head];
        ds->head = (ds->head + 1) % ds->num_slots;
    }
    slot->state = HPCTI_SLOT_HELD;
    ds->held = (int)(slot - ds->slots); /* num_slots for the spare */
    pthread_mutex_unlock(&ds->mu);
    return slot;
}

/* The consumer cursor moves past slot; a new epoch restarts the epoch's read count. */
static void consumed(hpct_dataset_t ds, const hpcti_slot_t *slot)
{
    long before = ds->epoch;
    ds->skipped += slot->skipped;
    ds->epoch = slot->epoch, ds->step = slot->step;
    hpcti_advance(&ds->epoch, &ds->step, ds->steps);
    if (ds->epoch != before) ds->epoch_bytes0 = __atomic_load_n(&ds->bytes_read, __ATOMIC_RELAXED);
}

/* Store mode: the exchanged batch, checked for non-finite inputs like produce() does. */
static hpct_status_t store_next(hpct_dataset_t ds, const float **inputs, const void **targets)
{
    hpcti_slot_t *slot = &ds->slots[0];
    hpct_status_t s = hpcti_store_next(ds, slot);
    if (s) return s;
    size_t k = 0;
    long j = ds->cfg.nonfinite != HPCT_NONFINITE_ERROR
                 ? -1
                 : first_nonfinite(slot->inputs, (size_t)ds->local_batch, ds->features, &k);
    if (j >= 0) {
        const uint64_t *local = ds->batch_idx + (size_t)ds->rank * (size_t)ds->local_batch;
        hpcti_batch_indices(ds, slot->epoch, slot->step);
        nonfinite_message(ds, local, j, k, slot->err, sizeof slot->err);
        s = hpcti_error(ds->ctx, HPCT_ERR_NONFINITE, "%s", slot->err);
        hpcti_store_fail(ds, s); /* the next batch is already in flight: stop here */
        return s;
    }
    consumed(ds, slot);
    if (inputs) *inputs = slot->inputs;
    if (targets) *targets = slot->targets;
    return HPCT_SUCCESS;
}

hpct_status_t hpct_dataset_next(hpct_dataset_t ds, const float **inputs, const void **targets)
{
    if (!ds) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(ds->ctx);
    if (!ds->global_batch)
        return hpcti_error(ds->ctx, HPCT_ERR_STATE,
                           "dataset %s: call hpct_dataset_partition before hpct_dataset_next",
                           ds->manifest_path);
    if (ds->store_mode == HPCT_STORE_JOB) return store_next(ds, inputs, targets);
    if (ds->threaded && !ds->running) {
        hpct_status_t s = hpcti_reader_restart(ds);
        if (s) return s;
    }
    hpcti_slot_t *slot = take_slot(ds);
    if (slot->status) {
        hpct_status_t s = hpcti_error(ds->ctx, slot->status, "%s", slot->err);
        hpcti_reader_stop(ds); /* the next call retries from the same cursor */
        ds->pe = ds->epoch, ds->ps = ds->step;
        return s;
    }
    consumed(ds, slot);
    if (inputs) *inputs = slot->inputs;
    if (targets) *targets = slot->targets;
    return HPCT_SUCCESS;
}

hpct_status_t hpct_dataset_next_into(hpct_dataset_t ds, float *inputs, void *targets)
{
    const float *in;
    const void *tg;
    if (!ds || !inputs || !targets) return HPCT_ERR_INVALID_ARG;
    hpct_status_t s = hpct_dataset_next(ds, &in, &tg);
    if (s) return s;
    memcpy(inputs, in, (size_t)ds->local_batch * ds->features * sizeof(float));
    memcpy(targets, tg, (size_t)ds->local_batch * ds->twidth * 4);
    return HPCT_SUCCESS;
}
