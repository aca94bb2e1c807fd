/* store.c: the distributed sample store (HPCT_STORE_JOB). At open each rank of the job reads
 * its block [lo, hi) of the samples (N split over W in contiguous blocks, hpcti_store_block)
 * once, with the streaming reader's coalesced preadv (runs of whole chunks), and keeps it in
 * memory: the job holds the set once and reads each byte once. Each step the ranks exchange
 * the rows of the global batch with one MPI_Ialltoallv on the store's own communicator: rank
 * p sends rank q the rows of q's slice that p owns, in slice order. The exchange of the next
 * batch is posted when the current one is handed out, so it progresses while the caller
 * computes; MPI runs FUNNELED, so all of it happens on the caller's thread (no prefetch
 * thread in this mode). Every wait polls against the collective deadline; open agrees on
 * success with an integer reduction and names the first failing rank and its error. */
#include "reader.h"
#include "comms.h"
#include "../core/sim.h" /* the SMPI build's polls */

#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Seconds a wait polls MPI without sleeping: the exchange's rendezvous steps progress only
 * inside MPI calls, so sleeping early stretches every step by the sleeps. */
#define SPIN_S 2e-3

struct hpcti_store {
    MPI_Comm comm; /* dup of the data world communicator: this dataset's exchanges only */
    int rank, size;
    double deadline_s;
    uint64_t lo, hi;            /* owned samples [lo, hi) */
    size_t in_row, tg_row;      /* bytes per row: fp32 inputs, int32/fp32 targets */
    float *inputs;              /* [hi - lo, features] */
    unsigned char *targets;     /* [hi - lo, tg_row] */
    MPI_Win win;                /* node store: the window holding the set; else MPI_WIN_NULL */
    float *set_inputs;          /* node store: [n, features] in the window */
    unsigned char *set_targets; /* node store: [n, tg_row] in the window */
    int posted;                 /* an exchange is in flight for (epoch, step) */
    long epoch, step, skipped;
    int *scount, *sdispl, *rcount, *rdispl; /* [size] bytes */
    unsigned char *sendbuf;                 /* [global batch, in_row + tg_row] */
    unsigned char *recvbuf;                 /* [local batch, in_row + tg_row] */
    uint64_t *mine;                         /* [local batch] this rank's slice of the batch */
    struct batch_head *heads;               /* [2 size]: sent to, received from each rank */
    MPI_Request req;
    hpct_status_t failed; /* non-zero: a wait failed or timed out; every call reports it */
    char err[768];
};

/* What ranks tell each other before an exchange: the batch and the bytes of the segment,
 * so that ranks at different cursors are caught before mismatched counts reach MPI. */
struct batch_head {
    int64_t epoch, step, bytes;
};

/* Owner of global sample g when n samples are split over p ranks in contiguous blocks. */
static int owner_of(uint64_t n, int p, uint64_t g)
{
    uint64_t q = n / (uint64_t)p, r = n % (uint64_t)p;
    if (g < r * (q + 1)) return (int)(g / (q + 1));
    return (int)(r + (g - r * (q + 1)) / q);
}

void hpcti_store_block(uint64_t n, int p, int b, uint64_t *lo, uint64_t *hi)
{
    uint64_t q = n / (uint64_t)p, r = n % (uint64_t)p;
    *lo = (uint64_t)b * q + ((uint64_t)b < r ? (uint64_t)b : r);
    *hi = *lo + q + ((uint64_t)b < r);
}

/* Who waits: at open, the caller's thread, with nothing else to do; a batch's exchange, maybe
 * the prefetch thread, beside the caller's compute. */
enum waiter { AT_OPEN, PER_BATCH };

/* One pause between polls. At open, hpcti_backoff (yield up to 1 s): without single-copy a
 * node store's gather moves only while both ranks poll (W = 2 on two virtual nodes, 0.5 GiB:
 * open 0.62-0.68 s with 20 us sleeps after 2 ms, 0.40-0.42 s). Per batch, as before, sleep
 * 20 us after SPIN_S: the prefetch thread's waits would otherwise yield for up to 1 s on a
 * CPU that may be the computing thread's SMT sibling (on 2 cores without SMT, yielding there
 * too measured the same). */
static void pause_wait(enum waiter who, double waited, long spins)
{
    if (who == AT_OPEN) {
        hpcti_backoff(waited, SPIN_S);
    } else if (waited > SPIN_S) {
        struct timespec ts = {0, 20000}; /* 20 us */
        nanosleep(&ts, NULL);
    } else if (spins % 64 == 63) {
        sched_yield();
    }
}

/* Poll req until it completes or deadline_s passes since start. */
static hpct_status_t wait_bounded(hpct_ctx_t ctx, MPI_Request *req, double deadline_s,
                                  const char *what, const char *manifest, enum waiter who)
{
    double start = hpcti_now();
    for (long spins = 0;; spins++) {
        int done = 0;
        if (MPI_Test(req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            return hpcti_error(ctx, HPCT_ERR_COMM, "dataset %s: %s failed in MPI", manifest, what);
        if (done) return HPCT_SUCCESS;
        double waited = hpcti_now() - start;
        if (waited > deadline_s)
            return hpcti_error(ctx, HPCT_ERR_TIMEOUT,
                               "dataset %s: %s missed the collective deadline of %.1f s (a rank "
                               "did not arrive)",
                               manifest, what, deadline_s);
        pause_wait(who, waited, spins);
    }
}

/* Read this rank's block into memory, 256 rows (sequential, so whole-chunk preadv) a time. */
static hpct_status_t load_block(hpct_dataset_t ds, struct hpcti_store *st)
{
    uint64_t count = st->hi - st->lo;
    if (st->win == MPI_WIN_NULL) { /* job store: private memory; node store: the window */
        st->inputs = hpcti_calloc(ds->ctx, count ? count : 1, st->in_row, "store inputs");
        st->targets = hpcti_calloc(ds->ctx, count ? count : 1, st->tg_row, "store targets");
    }
    size_t raw = (ds->features > ds->twidth ? ds->features : ds->twidth) * 8;
    unsigned char *scratch = hpcti_calloc(ds->ctx, HPCTI_MAX_IOV, raw, "store scratch");
    hpct_status_t s = st->inputs && st->targets && scratch ? HPCT_SUCCESS : HPCT_ERR_NO_MEMORY;
    uint64_t idx[HPCTI_MAX_IOV];
    char err[768];
    for (uint64_t g = st->lo; !s && g < st->hi; g += HPCTI_MAX_IOV) {
        size_t n = st->hi - g < HPCTI_MAX_IOV ? (size_t)(st->hi - g) : HPCTI_MAX_IOV;
        for (size_t j = 0; j < n; j++) idx[j] = g + j;
        s = hpcti_load_samples(ds, idx, n, st->inputs + (g - st->lo) * ds->features,
                               st->targets + (g - st->lo) * st->tg_row, scratch, err, sizeof err);
        if (s) s = hpcti_error(ds->ctx, s, "%s", err);
    }
    free(scratch);
    return s;
}

/* Agree at open: every rank learns the lowest failing rank, its status and its error, and
 * that all chose the same mode. A failure ends the open on every rank with that status and
 * one detail naming the rank, marked as shared (printed once). want: this rank's status (its
 * detail in ctx). */
static hpct_status_t agree_open(hpct_dataset_t ds, MPI_Comm comm, int rank, int size,
                                double deadline_s, hpct_status_t want)
{
    int mine[3] = {want ? rank : size, ds->store_mode, -ds->store_mode}, all[3];
    struct {
        int status;     /* the failing rank's hpct_status_t */
        char msg[1020]; /* its detail */
    } failed = {(int)want, ""};
    snprintf(failed.msg, sizeof failed.msg, "%s", want ? hpct_last_error(ds->ctx) : "");
    MPI_Request req;
    if (MPI_Iallreduce(mine, all, 3, MPI_INT, MPI_MIN, comm, &req) != MPI_SUCCESS)
        return hpcti_error(ds->ctx, HPCT_ERR_COMM, "dataset %s: store open agreement failed",
                           ds->manifest_path);
    hpct_status_t s = wait_bounded(ds->ctx, &req, deadline_s, "the store's open agreement",
                                   ds->manifest_path, AT_OPEN);
    if (s) return s;
    /* a rank that failed before the mode was chosen holds the mode asked for: errors first */
    if (all[0] == size && all[1] != -all[2])
        return hpcti_error(ds->ctx, HPCT_ERR_INVALID_ARG,
                           "dataset %s: ranks chose different store modes (set HPCT_DATA_STORE "
                           "the same on every rank)",
                           ds->manifest_path);
    if (all[0] == size) return HPCT_SUCCESS;
    if (MPI_Ibcast(&failed, sizeof failed, MPI_BYTE, all[0], comm, &req) != MPI_SUCCESS)
        return hpcti_error(ds->ctx, HPCT_ERR_COMM, "dataset %s: store error broadcast failed",
                           ds->manifest_path);
    s = wait_bounded(ds->ctx, &req, deadline_s, "the store's error broadcast", ds->manifest_path,
                     AT_OPEN);
    if (s) return s;
    failed.msg[sizeof failed.msg - 1] = '\0';
    int store = ds->store_mode == HPCT_STORE_JOB || ds->store_mode == HPCT_STORE_NODE;
    s = hpcti_error(ds->ctx, failed.status < 0 ? (hpct_status_t)failed.status : HPCT_ERR_IO,
                    "rank %d of %d could not open %s: %s", all[0], size,
                    store ? "its part of the store" : "the dataset", failed.msg);
    hpcti_mark_error_shared(ds->ctx);
    return s;
}

/* HPCT_NONFINITE_SKIP: mark the non-finite samples of this block, then OR the maps of all
 * ranks, so that every rank skips the same global batches. */
static hpct_status_t scan_block(hpct_dataset_t ds, struct hpcti_store *st)
{
    size_t bytes = (size_t)(ds->n / 8 + 1);
    ds->bad = hpcti_calloc(ds->ctx, bytes, 1, "non-finite sample map");
    if (!ds->bad) return HPCT_ERR_NO_MEMORY;
    for (uint64_t g = st->lo; g < st->hi; g++)
        for (size_t k = 0; k < ds->features; k++)
            if (!isfinite(st->inputs[(g - st->lo) * ds->features + k])) {
                ds->bad[g / 8] |= (unsigned char)(1u << (g % 8));
                break;
            }
    if (bytes > INT_MAX)
        return hpcti_error(ds->ctx, HPCT_ERR_UNSUPPORTED,
                           "dataset %s: too many samples for the store's non-finite map",
                           ds->manifest_path);
    MPI_Request req;
    if (MPI_Iallreduce(MPI_IN_PLACE, ds->bad, (int)bytes, MPI_UNSIGNED_CHAR, MPI_BOR, st->comm,
                       &req) != MPI_SUCCESS)
        return hpcti_error(ds->ctx, HPCT_ERR_COMM, "dataset %s: store non-finite map failed",
                           ds->manifest_path);
    return wait_bounded(ds->ctx, &req, st->deadline_s, "the store's non-finite map",
                        ds->manifest_path, AT_OPEN);
}

/* Sum of v over the ranks of this rank's node (deadline-bounded). */
static hpct_status_t node_total(hpct_dataset_t ds, const hpcti_data_comms_t *c, uint64_t v,
                                uint64_t *sum)
{
    MPI_Request req;
    if (MPI_Iallreduce(&v, sum, 1, MPI_UINT64_T, MPI_SUM, MPI_Comm_f2c(c->node), &req) !=
        MPI_SUCCESS)
        return hpcti_error(ds->ctx, HPCT_ERR_COMM, "dataset %s: store node total failed",
                           ds->manifest_path);
    return wait_bounded(ds->ctx, &req, c->deadline_s, "the store's node total", ds->manifest_path,
                        AT_OPEN);
}

/* The node store's window: the set [n] laid out as inputs [n, features] fp32 then targets
 * [n, tg_row], split in contiguous byte shares over the node's ranks (MPI-3 shared memory:
 * contiguous by default), each local rank allocating its share. Collective over the node. */
static hpct_status_t node_window(hpct_dataset_t ds, struct hpcti_store *st,
                                 const hpcti_data_comms_t *c)
{
    uint64_t total = ds->n * (st->in_row + st->tg_row), lo, hi;
    hpcti_store_block(total, c->local_size, c->local_rank, &lo, &hi);
    void *mine = NULL, *base = NULL;
    MPI_Comm node = MPI_Comm_f2c(c->node);
    if (MPI_Win_allocate_shared((MPI_Aint)(hi - lo), 1, MPI_INFO_NULL, node, &mine, &st->win) !=
        MPI_SUCCESS) {
        st->win = MPI_WIN_NULL;
        return hpcti_error(ds->ctx, HPCT_ERR_NO_MEMORY,
                           "dataset %s: node store: cannot allocate a shared window of %llu bytes "
                           "on node %d",
                           ds->manifest_path, (unsigned long long)(hi - lo), c->node_id);
    }
    MPI_Aint size = 0;
    int unit;
    for (int r = 0; r < c->local_size && !size; r++) /* the first rank with a share */
        MPI_Win_shared_query(st->win, r, &size, &unit, &base);
    MPI_Win_lock_all(MPI_MODE_NOCHECK, st->win);
    st->set_inputs = base;
    st->set_targets = (unsigned char *)base + ds->n * st->in_row;
    st->inputs = st->set_inputs + st->lo * ds->features; /* this rank's block, read below */
    st->targets = st->set_targets + st->lo * st->tg_row;
    ds->resident_bytes = hi - lo;
    ds->node_resident_bytes = total;
    return HPCT_SUCCESS;
}

/* Every node gets the blocks the other nodes read: local rank l gathers the blocks of the
 * ranks of local rank l on every node (equal nodes: each block reaches each node once). */
static hpct_status_t share_across_nodes(hpct_dataset_t ds, struct hpcti_store *st,
                                        const hpcti_data_comms_t *c)
{
    MPI_Comm world = MPI_Comm_f2c(c->world), cross;
    if (MPI_Comm_split(world, c->local_rank, c->rank, &cross) != MPI_SUCCESS)
        return hpcti_error(ds->ctx, HPCT_ERR_COMM, "dataset %s: node store: split failed",
                           ds->manifest_path);
    int members, *world_of = NULL, *count = NULL, *displ = NULL;
    MPI_Comm_size(cross, &members);
    world_of = calloc((size_t)members * 3, sizeof(int));
    hpct_status_t s = world_of ? HPCT_SUCCESS : HPCT_ERR_NO_MEMORY;
    MPI_Request req;
    if (!s &&
        MPI_Iallgather(&c->rank, 1, MPI_INT, world_of, 1, MPI_INT, cross, &req) != MPI_SUCCESS)
        s = HPCT_ERR_COMM;
    if (!s)
        s = wait_bounded(ds->ctx, &req, st->deadline_s, "the node store's member list",
                         ds->manifest_path, AT_OPEN);
    if (!s) {
        count = world_of + members, displ = count + members;
        for (int m = 0; m < members; m++) {
            uint64_t lo, hi;
            hpcti_store_block(ds->n, c->size, world_of[m], &lo, &hi);
            count[m] = (int)(hi - lo), displ[m] = (int)lo;
        }
    }
    MPI_Datatype row[2];
    MPI_Type_contiguous((int)st->in_row, MPI_BYTE, &row[0]);
    MPI_Type_contiguous((int)st->tg_row, MPI_BYTE, &row[1]);
    MPI_Type_commit(&row[0]), MPI_Type_commit(&row[1]);
    void *dst[2] = {st->set_inputs, st->set_targets};
    for (int a = 0; a < 2 && !s; a++) {
        if (MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, dst[a], count, displ, row[a], cross,
                            &req) != MPI_SUCCESS)
            s = hpcti_error(ds->ctx, HPCT_ERR_COMM, "dataset %s: node store: gather failed",
                            ds->manifest_path);
        else
            s = wait_bounded(ds->ctx, &req, st->deadline_s, "the node store's gather across nodes",
                             ds->manifest_path, AT_OPEN);
    }
    MPI_Type_free(&row[0]), MPI_Type_free(&row[1]);
    free(world_of);
    if (s == HPCT_ERR_NO_MEMORY || s == HPCT_ERR_COMM)
        hpcti_error(ds->ctx, s, "dataset %s: node store: exchange across nodes failed",
                    ds->manifest_path);
    MPI_Comm_free(&cross);
    return s;
}

/* Node store after the open agreed: window, own block, agreement, gather, node barrier; then
 * the dataset reads the window as resident memory (no MPI per step). */
static hpct_status_t node_open(hpct_dataset_t ds, struct hpcti_store *st,
                               const hpcti_data_comms_t *c)
{
    MPI_Comm world = MPI_Comm_f2c(c->world);
    hpct_status_t s = node_window(ds, st, c);
    if (!s) s = load_block(ds, st);
    s = agree_open(ds, world, c->rank, c->size, c->deadline_s, s);
    if (!s && c->num_nodes > 1) s = share_across_nodes(ds, st, c);
    if (s) return s;
    MPI_Win_sync(st->win);
    MPI_Request req;
    if (MPI_Ibarrier(MPI_Comm_f2c(c->node), &req) != MPI_SUCCESS)
        return hpcti_error(ds->ctx, HPCT_ERR_COMM, "dataset %s: node store barrier failed",
                           ds->manifest_path);
    s = wait_bounded(ds->ctx, &req, st->deadline_s, "the node store's barrier", ds->manifest_path,
                     AT_OPEN);
    if (s) return s;
    MPI_Win_sync(st->win);
    ds->res_inputs = st->set_inputs;
    ds->res_targets = st->set_targets;
    ds->resident = 1;
    return HPCT_SUCCESS;
}

hpct_status_t hpcti_store_agree(hpct_dataset_t ds, hpct_status_t mine)
{
    const hpcti_data_comms_t *c = hpcti_data_comms(ds->ctx);
    return agree_open(ds, MPI_Comm_f2c(c->world), c->rank, c->size, c->deadline_s, mine);
}

hpct_status_t hpcti_store_open(hpct_dataset_t ds, hpct_status_t so_far)
{
    const hpcti_data_comms_t *c = hpcti_data_comms(ds->ctx);
    MPI_Comm world = MPI_Comm_f2c(c->world);
    int node = ds->store_mode == HPCT_STORE_NODE;
    hpct_status_t s = so_far;
    struct hpcti_store *st = NULL;
    if (!s && !(st = hpcti_calloc(ds->ctx, 1, sizeof *st, "store"))) s = HPCT_ERR_NO_MEMORY;
    if (st) {
        ds->store = st;
        st->comm = MPI_COMM_NULL;
        st->win = MPI_WIN_NULL;
        st->rank = c->rank, st->size = c->size, st->deadline_s = c->deadline_s;
        st->in_row = ds->features * sizeof(float), st->tg_row = ds->twidth * 4;
        hpcti_store_block(ds->n, c->size, c->rank, &st->lo, &st->hi);
        if (!node) s = load_block(ds, st);
    }
    s = agree_open(ds, world, c->rank, c->size, c->deadline_s, s);
    if (!s && node) s = node_open(ds, st, c);
    if (s) return s;
    if (MPI_Comm_dup(world, &st->comm) != MPI_SUCCESS)
        return hpcti_error(ds->ctx, HPCT_ERR_COMM, "dataset %s: MPI_Comm_dup for the store failed",
                           ds->manifest_path);
    if (ds->cfg.nonfinite == HPCT_NONFINITE_SKIP && (s = scan_block(ds, st))) return s;
    if (!node) {
        ds->resident_bytes = (st->hi - st->lo) * (st->in_row + st->tg_row);
        if ((s = node_total(ds, c, ds->resident_bytes, &ds->node_resident_bytes))) return s;
    }
    hpcti_log(ds->ctx, HPCT_LOG_INFO,
              "dataset %s: %s store: rank %d of %d read samples [%llu, %llu) (%.1f MiB) and holds "
              "%.1f MiB; its node holds %.1f MiB",
              ds->manifest_path, node ? "node" : "job", st->rank, st->size,
              (unsigned long long)st->lo, (unsigned long long)st->hi,
              (double)ds->bytes_read / 1048576.0, (double)ds->resident_bytes / 1048576.0,
              (double)ds->node_resident_bytes / 1048576.0);
    return HPCT_SUCCESS;
}

/* Buffers for a partition: counts [size], send [global batch rows], receive [local rows]. */
hpct_status_t hpcti_store_partition(hpct_dataset_t ds)
{
    struct hpcti_store *st = ds->store;
    hpct_status_t s = hpcti_store_drain(ds);
    if (s) return s;
    if (ds->rank != st->rank || ds->world != st->size)
        return hpcti_error(ds->ctx, HPCT_ERR_INVALID_ARG,
                           "dataset %s: store mode needs the partition of the context (rank %d of "
                           "%d), not rank %d of %d",
                           ds->manifest_path, st->rank, st->size, ds->rank, ds->world);
    size_t row = st->in_row + st->tg_row;
    if ((double)ds->global_batch * (double)row > (double)INT_MAX)
        return hpcti_error(ds->ctx, HPCT_ERR_UNSUPPORTED,
                           "dataset %s: a global batch of %d rows of %zu bytes exceeds the MPI "
                           "count limit of the store exchange",
                           ds->manifest_path, ds->global_batch, row);
    free(st->scount), free(st->sendbuf), free(st->recvbuf), free(st->mine);
    st->mine = hpcti_calloc(ds->ctx, (size_t)ds->local_batch, sizeof(uint64_t), "store slice");
    st->scount = hpcti_calloc(ds->ctx, 4 * (size_t)st->size, sizeof(int), "store counts");
    st->sendbuf = hpcti_calloc(ds->ctx, (size_t)ds->global_batch, row, "store send buffer");
    st->recvbuf = hpcti_calloc(ds->ctx, (size_t)ds->local_batch, row, "store receive buffer");
    free(st->heads);
    st->heads = hpcti_calloc(ds->ctx, 2 * (size_t)st->size, sizeof *st->heads, "store heads");
    if (!st->heads) return HPCT_ERR_NO_MEMORY;
    if (!st->mine || !st->scount || !st->sendbuf || !st->recvbuf) return HPCT_ERR_NO_MEMORY;
    st->sdispl = st->scount + st->size;
    st->rcount = st->sdispl + st->size;
    st->rdispl = st->rcount + st->size;
    st->failed = HPCT_SUCCESS;
    return HPCT_SUCCESS;
}

/* Exchange the batch heads (a small Ialltoall, bounded) and check that every rank is at this
 * rank's batch and sends the bytes this rank expects: the data exchange then matches. */
static hpct_status_t check_heads(hpct_dataset_t ds, struct hpcti_store *st)
{
    struct batch_head *in = st->heads + st->size;
    MPI_Request req;
    if (MPI_Ialltoall(st->heads, 3, MPI_INT64_T, in, 3, MPI_INT64_T, st->comm, &req) != MPI_SUCCESS)
        return hpcti_error(ds->ctx, HPCT_ERR_COMM, "dataset %s: the store exchange failed to start",
                           ds->manifest_path);
    hpct_status_t s = wait_bounded(ds->ctx, &req, st->deadline_s, "the store exchange's heads",
                                   ds->manifest_path, PER_BATCH);
    for (int p = 0; !s && p < st->size; p++) {
        if (in[p].epoch != st->epoch || in[p].step != st->step)
            return hpcti_error(ds->ctx, HPCT_ERR_STATE,
                               "dataset %s: rank %d is at batch (epoch %lld, step %lld) while rank "
                               "%d expects (epoch %ld, step %ld): in store mode every rank must "
                               "read and set the cursor alike",
                               ds->manifest_path, p, (long long)in[p].epoch, (long long)in[p].step,
                               st->rank, st->epoch, st->step);
        if (in[p].bytes != st->rcount[p])
            return hpcti_error(ds->ctx, HPCT_ERR_INTERNAL,
                               "dataset %s: rank %d sends %lld bytes, rank %d expects %d",
                               ds->manifest_path, p, (long long)in[p].bytes, st->rank,
                               st->rcount[p]);
    }
    return s;
}

/* Pack the rows this rank owns for every consumer and post the exchange of batch (pe, ps),
 * skipping bad batches as produce() does; advances (pe, ps) past it. */
static hpct_status_t post(hpct_dataset_t ds)
{
    struct hpcti_store *st = ds->store;
    st->skipped = 0;
    for (;;) {
        hpcti_batch_indices(ds, ds->pe, ds->ps);
        if (!hpcti_batch_is_bad(ds)) break;
        hpcti_advance(&ds->pe, &ds->ps, ds->steps);
        if (++st->skipped >= ds->steps)
            return hpcti_error(ds->ctx, HPCT_ERR_NONFINITE,
                               "every global batch of an epoch of %s holds a non-finite input in "
                               "/%s; nothing left to train on",
                               ds->manifest_path, ds->names[0]);
    }
    st->epoch = ds->pe, st->step = ds->ps;
    memcpy(st->mine, ds->batch_idx + (size_t)st->rank * (size_t)ds->local_batch,
           (size_t)ds->local_batch * sizeof(uint64_t));
    size_t row = st->in_row + st->tg_row, lb = (size_t)ds->local_batch, off = 0;
    memset(st->rcount, 0, (size_t)st->size * sizeof(int));
    for (int q = 0; q < st->size; q++) { /* consumer q takes slice [q lb, (q+1) lb) */
        st->sdispl[q] = (int)off;
        for (size_t j = q * lb; j < (q + 1) * lb; j++) {
            uint64_t g = ds->batch_idx[j];
            int p = owner_of(ds->n, st->size, g);
            if (q == st->rank) st->rcount[p] += (int)row;
            if (p != st->rank) continue;
            memcpy(st->sendbuf + off, st->inputs + (g - st->lo) * ds->features, st->in_row);
            memcpy(st->sendbuf + off + st->in_row, st->targets + (g - st->lo) * st->tg_row,
                   st->tg_row);
            off += row;
        }
        st->scount[q] = (int)off - st->sdispl[q];
        st->heads[q] = (struct batch_head){st->epoch, st->step, st->scount[q]};
        if (q != st->rank) ds->exchange_bytes += (uint64_t)st->scount[q];
    }
    for (int p = 0, at = 0; p < st->size; p++) st->rdispl[p] = at, at += st->rcount[p];
    hpcti_advance(&ds->pe, &ds->ps, ds->steps);
    hpct_status_t s = check_heads(ds, st);
    if (s) return s;
    if (MPI_Ialltoallv(st->sendbuf, st->scount, st->sdispl, MPI_BYTE, st->recvbuf, st->rcount,
                       st->rdispl, MPI_BYTE, st->comm, &st->req) != MPI_SUCCESS)
        return hpcti_error(ds->ctx, HPCT_ERR_COMM, "dataset %s: the store exchange failed to start",
                           ds->manifest_path);
    st->posted = 1;
    return HPCT_SUCCESS;
}

/* Wait for the posted exchange and place the received rows in slice order into slot. */
static hpct_status_t complete(hpct_dataset_t ds, hpcti_slot_t *slot)
{
    struct hpcti_store *st = ds->store;
    hpct_status_t s = wait_bounded(ds->ctx, &st->req, st->deadline_s, "the store exchange",
                                   ds->manifest_path, PER_BATCH);
    st->posted = 0;
    if (s) return s;
    size_t row = st->in_row + st->tg_row, lb = (size_t)ds->local_batch;
    const uint64_t *local = st->mine;
    int *next = st->scount; /* reused: read position in each owner's segment */
    for (int p = 0; p < st->size; p++) next[p] = st->rdispl[p];
    for (size_t j = 0; j < lb; j++) {
        int p = owner_of(ds->n, st->size, local[j]);
        const unsigned char *r = st->recvbuf + next[p];
        next[p] += (int)row;
        memcpy((unsigned char *)slot->inputs + j * st->in_row, r, st->in_row);
        memcpy((unsigned char *)slot->targets + j * st->tg_row, r + st->in_row, st->tg_row);
    }
    slot->epoch = st->epoch, slot->step = st->step, slot->skipped = st->skipped;
    return HPCT_SUCCESS;
}

hpct_status_t hpcti_store_next(hpct_dataset_t ds, hpcti_slot_t *slot)
{
    struct hpcti_store *st = ds->store;
    if (st->failed) return hpcti_error(ds->ctx, st->failed, "%s", st->err);
    hpct_status_t s = st->posted ? HPCT_SUCCESS : post(ds);
    if (!s) s = complete(ds, slot);
    if (!s) s = post(ds); /* the next batch travels while the caller computes */
    if (s) {
        st->failed = s;
        snprintf(st->err, sizeof st->err, "%s", hpct_last_error(ds->ctx));
    }
    return s;
}

hpct_status_t hpcti_store_drain(hpct_dataset_t ds)
{
    struct hpcti_store *st = ds->store;
    if (!st || !st->posted) return HPCT_SUCCESS;
    st->posted = 0;
    if (st->failed) return HPCT_SUCCESS; /* a timed-out request cannot be waited for again */
    return wait_bounded(ds->ctx, &st->req, st->deadline_s, "the store exchange", ds->manifest_path,
                        PER_BATCH);
}

void hpcti_store_reset(hpct_dataset_t ds)
{
    struct hpcti_store *st = ds->store;
    if (!st) return;
    ds->pe = ds->epoch, ds->ps = ds->step;
    st->failed = HPCT_SUCCESS;
}

void hpcti_store_fail(hpct_dataset_t ds, hpct_status_t s)
{
    ds->store->failed = s;
    snprintf(ds->store->err, sizeof ds->store->err, "%s", hpct_last_error(ds->ctx));
}

void hpcti_store_free(hpct_dataset_t ds)
{
    struct hpcti_store *st = ds->store;
    if (!st) return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && !st->failed) {
        hpcti_store_drain(ds);
        if (st->comm != MPI_COMM_NULL) MPI_Comm_free(&st->comm);
    }
    if (st->win != MPI_WIN_NULL) { /* collective over the node, as the open was */
        if (!finalized) {
            MPI_Win_unlock_all(st->win);
            MPI_Win_free(&st->win);
        }
        ds->res_inputs = NULL, ds->res_targets = NULL; /* the window's memory, not malloc's */
        st->inputs = NULL, st->targets = NULL;
    }
    free(st->inputs), free(st->targets), free(st->scount), free(st->sendbuf), free(st->recvbuf);
    free(st->mine), free(st->heads);
    free(st);
    ds->store = NULL;
}
