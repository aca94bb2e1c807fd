/* nccl.c (device double): the NCCL calls of libhpctrain among the processes of one host,
 * through a POSIX shared-memory segment per communicator. A collective is a task on its
 * stream: in chunks, each rank writes its part into its slot, meets the others (a counter per
 * rank, polled, abort-aware), checks that every rank queued the same collective (kind, count,
 * sequence number: a mismatch is named and fails the communicator), reads, sums in rank order.
 * Creation is non-blocking: ncclInProgress until every rank has joined, and a few polls more.
 * Injected faults, for the library's error paths (environment of the rank's process):
 *   CUDA_DOUBLE_NCCL_FAIL=[R:]N  collective number N (from 1) fails (ncclSystemError, async);
 *                                N = 0: ncclCommInitRankConfig itself fails, synchronously,
 *                                leaving a handle to abort, as NCCL may
 *   CUDA_DOUBLE_NCCL_HANG=[R:]N  collective number N never completes until the comm is aborted
 * on every communicator rank, or on communicator rank R only. */
#define _GNU_SOURCE
#include "double.h"
#include "include/nccl.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_RANKS   64
#define SLOT_FLOATS ((size_t)1 << 18) /* 1 MiB a rank */

enum { OP_REDUCE_SCATTER = 1, OP_ALL_GATHER = 2 };

struct header { /* what rank r queued as its collective number seq */
    unsigned long long seq;
    int op;
    size_t count;
};

struct segment {
    atomic_int joined;
    atomic_ullong phase[MAX_RANKS]; /* rank r has reached its phase[r]-th meeting */
    struct header head[MAX_RANKS];
    float slots[]; /* [nranks][SLOT_FLOATS] */
};

struct ncclComm {
    int rank, nranks;
    char name[64];
    struct segment *seg;
    size_t seg_bytes;
    int joined, polls_after, finalizing;
    int blocking;      /* the config's: 0 makes calls answer ncclInProgress at times */
    int pending_polls; /* polls left before the last call's ncclInProgress clears */
    unsigned rng;      /* which collectives answer ncclInProgress (seeded) */
    atomic_int aborted;
    atomic_int state;          /* ncclResult_t: success, in progress, or the failure */
    unsigned long long queued; /* collectives queued (by the caller's thread) */
    atomic_ullong done;        /* the last one run (by the stream's worker) */
    unsigned long long phase;  /* this rank's meetings so far (its worker only) */
    long fail_at, hang_at;
    char last[512];
    pthread_mutex_t mu;
};

const char *ncclGetErrorString(ncclResult_t r)
{
    switch (r) {
    case ncclSuccess: return "no error";
    case ncclSystemError: return "unhandled system error (nccl double)";
    case ncclInternalError: return "internal error (nccl double)";
    case ncclInvalidArgument: return "invalid argument (nccl double)";
    case ncclInvalidUsage: return "invalid usage (nccl double)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result (nccl double)";
    }
}

static _Thread_local char thread_last[512]; /* the last error without a communicator */

const char *ncclGetLastError(ncclComm_t comm)
{
    return comm ? comm->last : thread_last;
}

/* NCCL 2.9 and later number versions major 10000 + minor 100 + patch: a made-up 2.21.5. */
ncclResult_t ncclGetVersion(int *version)
{
    if (!version) return ncclInvalidArgument;
    *version = 22105;
    return ncclSuccess;
}

/* The failure r with its message: the communicator's async state, and stderr. */
static void comm_fail(ncclComm_t c, ncclResult_t r, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void comm_fail(ncclComm_t c, ncclResult_t r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&c->mu);
    vsnprintf(c->last, sizeof c->last, fmt, ap);
    pthread_mutex_unlock(&c->mu);
    va_end(ap);
    atomic_store(&c->state, r);
    fprintf(stderr, "nccl double (pid %d, rank %d of %d): %s\n", (int)getpid(), c->rank, c->nranks,
            c->last);
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
    static atomic_int counter;
    if (!id) return ncclInvalidArgument;
    memset(id, 0, sizeof *id);
    snprintf(id->internal, sizeof id->internal, "/hpct-dbl-%d-%d-%ld", (int)getpid(),
             atomic_fetch_add(&counter, 1), (long)dd_rand(&(unsigned){(unsigned)getpid()}));
    return ncclSuccess;
}

static size_t segment_bytes(int nranks)
{
    return sizeof(struct segment) + sizeof(float) * SLOT_FLOATS * (size_t)nranks;
}

/* Rank 0 creates the segment; the others map it once it exists at its full size. 1 mapped,
 * 0 not yet, -1 failed. */
static int try_map(ncclComm_t c)
{
    int creator = c->rank == 0;
    int fd = shm_open(c->name, creator ? O_RDWR | O_CREAT | O_EXCL : O_RDWR, 0600);
    if (fd < 0) return creator ? -1 : 0;
    struct stat st;
    int sized = !creator || ftruncate(fd, (off_t)c->seg_bytes) == 0;
    if (!sized || fstat(fd, &st) || (size_t)st.st_size < c->seg_bytes) {
        close(fd);
        if (creator) shm_unlink(c->name); /* never leave a segment behind */
        return creator ? -1 : 0;
    }
    void *m = mmap(NULL, c->seg_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        if (creator) shm_unlink(c->name);
        return -1;
    }
    c->seg = m;
    atomic_fetch_add(&c->seg->joined, 1);
    return 1;
}

/* Creation's progress, made by the polling calls: in progress until every rank joined, then a
 * few polls more (CUDA_DOUBLE_INIT_POLLS, default 3), so the caller's polling loop runs. */
static void progress_join(ncclComm_t c)
{
    if (atomic_load(&c->state) != ncclInProgress || c->joined) return;
    if (!c->seg) {
        int m = try_map(c);
        if (m < 0) comm_fail(c, ncclSystemError, "cannot create or map %s", c->name);
        if (m <= 0) return;
    }
    if (atomic_load(&c->seg->joined) < c->nranks) return;
    if (c->rank == 0 && c->polls_after >= 0) shm_unlink(c->name); /* every rank has it mapped */
    if (c->polls_after-- > 0) return;
    c->joined = 1;
    atomic_store(&c->state, ncclSuccess);
}

/* An injected fault's collective number for communicator rank `rank` ([R:]N), or 0. */
static long fault_at(const char *name, int rank)
{
    const char *v = getenv(name), *colon = v ? strchr(v, ':') : NULL;
    if (!v) return 0;
    if (colon && atoi(v) != rank) return 0;
    return atol(colon ? colon + 1 : v);
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t *out, int nranks, ncclUniqueId id, int rank,
                                    ncclConfig_t *config)
{
    dd_stream(NULL);
    if (!out || nranks < 1 || nranks > MAX_RANKS || rank < 0 || rank >= nranks)
        return ncclInvalidArgument;
    ncclComm_t c = calloc(1, sizeof *c);
    if (!c) return ncclSystemError;
    c->rank = rank, c->nranks = nranks;
    memcpy(c->name, id.internal, sizeof c->name - 1);
    c->seg_bytes = segment_bytes(nranks);
    c->polls_after = (int)dd_env("CUDA_DOUBLE_INIT_POLLS", 3);
    c->blocking = !config || config->blocking;
    c->rng = (unsigned)dd_env("CUDA_DOUBLE_SEED", 1) * 2654435761u + (unsigned)rank;
    c->fail_at = fault_at("CUDA_DOUBLE_NCCL_FAIL", rank);
    c->hang_at = fault_at("CUDA_DOUBLE_NCCL_HANG", rank);
    pthread_mutex_init(&c->mu, NULL);
    atomic_store(&c->state, ncclInProgress);
    *out = c;
    const char *v = getenv("CUDA_DOUBLE_NCCL_FAIL"), *colon = v ? strchr(v, ':') : NULL;
    if (v && atol(colon ? colon + 1 : v) == 0 && (!colon || atoi(v) == rank)) {
        snprintf(thread_last, sizeof thread_last, "bootstrap failed (CUDA_DOUBLE_NCCL_FAIL)");
        snprintf(c->last, sizeof c->last, "%s", thread_last);
        atomic_store(&c->state, ncclSystemError);
        return ncclSystemError;
    }
    if (config && !config->blocking) return ncclInProgress;
    while (atomic_load(&c->state) == ncclInProgress) progress_join(c), sched_yield();
    return atomic_load(&c->state);
}

/* A sticky CUDA error fails the communicator, as NCCL reports its stream's faults. */
static void cuda_error_seen(ncclComm_t c)
{
    if (dd_sticky() != cudaSuccess && atomic_load(&c->state) == ncclSuccess)
        comm_fail(c, ncclUnhandledCudaError, "a CUDA error on the device: %s",
                  cudaGetErrorString(dd_sticky()));
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t c, ncclResult_t *state)
{
    if (!c || !state) return ncclInvalidArgument;
    progress_join(c);
    cuda_error_seen(c);
    if (c->pending_polls > 0 && atomic_load(&c->state) == ncclSuccess) {
        c->pending_polls--; /* the last call is still being enqueued */
        *state = ncclInProgress;
        return ncclSuccess;
    }
    ncclResult_t s = atomic_load(&c->state);
    if (s == ncclSuccess && c->finalizing && atomic_load(&c->done) < c->queued) s = ncclInProgress;
    *state = s;
    return ncclSuccess;
}

/* Every rank at meeting number phase, or the communicator aborted (0). */
static int meet(ncclComm_t c)
{
    unsigned long long want = ++c->phase;
    atomic_store(&c->seg->phase[c->rank], want);
    for (;;) {
        int all = 1;
        for (int r = 0; r < c->nranks && all; r++) all = atomic_load(&c->seg->phase[r]) >= want;
        if (all) return 1;
        if (atomic_load(&c->aborted)) return 0;
        sched_yield();
    }
}

/* After the first meeting of a collective: did every rank queue the same one? */
static int same_collective(ncclComm_t c)
{
    const struct header *mine = &c->seg->head[c->rank];
    static const char *names[] = {"?", "ncclReduceScatter", "ncclAllGather"};
    for (int r = 0; r < c->nranks; r++) {
        const struct header *h = &c->seg->head[r];
        if (h->seq == mine->seq && h->op == mine->op && h->count == mine->count) continue;
        comm_fail(c, ncclInvalidUsage,
                  "collectives queued in a different order: rank %d's collective #%llu is %s of "
                  "%zu, rank %d's #%llu is %s of %zu",
                  c->rank, mine->seq, names[mine->op], mine->count, r, h->seq,
                  names[h->op > 0 && h->op < 3 ? h->op : 0], h->count);
        return 0;
    }
    return 1;
}

struct coll_arg {
    ncclComm_t c;
    const float *send; /* device */
    float *recv;       /* device */
    size_t count;      /* per rank: reduce-scatter's recvcount, all-gather's sendcount */
    unsigned long long seq;
    int op;
};

/* One chunk [i0, i0 + len) of a reduce-scatter: every rank writes the chunk of each rank's
 * shard into its slot, then sums its own shard's chunk over ranks in order. */
static int reduce_scatter_chunk(ncclComm_t c, const float *send, float *recv, size_t count,
                                size_t i0, size_t len)
{
    float *mine = c->seg->slots + SLOT_FLOATS * (size_t)c->rank;
    for (int d = 0; d < c->nranks; d++)
        memcpy(mine + len * (size_t)d, send + count * d + i0, 4 * len);
    if (!meet(c)) return 0;
    for (size_t i = 0; i < len; i++) {
        float acc = 0.0f;
        for (int r = 0; r < c->nranks; r++) {
            float v = c->seg->slots[SLOT_FLOATS * (size_t)r + len * (size_t)c->rank + i];
            acc = r == 0 ? v : acc + v;
        }
        recv[i0 + i] = acc;
    }
    return meet(c);
}

static int all_gather_chunk(ncclComm_t c, const float *send, float *recv, size_t count, size_t i0,
                            size_t len)
{
    memcpy(c->seg->slots + SLOT_FLOATS * (size_t)c->rank, send + i0, 4 * len);
    if (!meet(c)) return 0;
    for (int r = 0; r < c->nranks; r++)
        memcpy(recv + count * (size_t)r + i0, c->seg->slots + SLOT_FLOATS * (size_t)r, 4 * len);
    return meet(c);
}

static void collective_task(void *p)
{
    struct coll_arg *a = p;
    ncclComm_t c = a->c;
    int rs = a->op == OP_REDUCE_SCATTER;
    size_t total = a->count * (size_t)c->nranks;
    cuda_error_seen(c); /* the task runs after a sticky error, to end in order */
    if (atomic_load(&c->state) != ncclSuccess) goto out;
    const float *send =
        a->count ? dd_dev(a->send, 4 * (rs ? total : a->count), "nccl double: send buffer") : NULL;
    float *recv =
        a->count ? dd_dev(a->recv, 4 * (rs ? a->count : total), "nccl double: receive buffer") : NULL;
    if (a->count && (!send || !recv)) goto out;
    if ((long)a->seq == c->hang_at)
        while (!atomic_load(&c->aborted)) sched_yield();
    if ((long)a->seq == c->fail_at) {
        comm_fail(c, ncclSystemError, "collective #%llu failed (CUDA_DOUBLE_NCCL_FAIL)", a->seq);
        goto out;
    }
    c->seg->head[c->rank] = (struct header){a->seq, a->op, a->count};
    if (!meet(c) || !same_collective(c)) goto out;
    if (!a->count && !meet(c)) goto out; /* no chunk meetings: keep the headers until read */
    size_t chunk = rs ? SLOT_FLOATS / (size_t)c->nranks : SLOT_FLOATS;
    for (size_t i0 = 0; i0 < a->count; i0 += chunk) {
        size_t len = a->count - i0 < chunk ? a->count - i0 : chunk;
        int ok = rs ? reduce_scatter_chunk(c, send, recv, a->count, i0, len)
                    : all_gather_chunk(c, send, recv, a->count, i0, len);
        if (!ok) break;
    }
out:
    atomic_store(&c->done, a->seq);
}

/* Checks, then the collective queued on the stream in this rank's issue order. */
static ncclResult_t enqueue(ncclComm_t c, int op, const void *send, void *recv, size_t count,
                            ncclDataType_t type, cudaStream_t stream, const char *call)
{
    if (!c) return ncclInvalidArgument;
    cuda_error_seen(c);
    if (c->pending_polls > 0) { /* NCCL: poll until the last call is enqueued first */
        comm_fail(c, ncclInvalidUsage,
                  "%s while the previous call was still in progress (ncclInProgress: poll "
                  "ncclCommGetAsyncError until it is not before the next call)",
                  call);
        return ncclInvalidUsage;
    }
    if (!c->joined || atomic_load(&c->aborted)) {
        comm_fail(c, ncclInvalidUsage, "%s on a communicator %s", call,
                  c->joined ? "that was aborted" : "whose creation has not completed");
        return ncclInvalidUsage;
    }
    if (type != ncclFloat) return ncclInvalidArgument;
    if (count && (dd_kind(send) != 1 || dd_kind(recv) != 1)) {
        comm_fail(c, ncclInvalidArgument, "%s: the %s buffer %p is host memory, not device memory",
                  call, dd_kind(send) != 1 ? "send" : "receive", dd_kind(send) != 1 ? send : recv);
        return ncclInvalidArgument;
    }
    struct coll_arg a = {c, send, recv, count, ++c->queued, op};
    dd_enqueue_always(stream, call, collective_task, &a, sizeof a);
    ncclResult_t s = atomic_load(&c->state);
    if (s != ncclSuccess) return s;
    /* non-blocking: the first collective (connecting) and a seeded quarter of the others are
     * still being enqueued when the call returns */
    if (!c->blocking && (a.seq == 1 || (dd_rand(&c->rng) & 3) == 0)) {
        c->pending_polls = (int)dd_env("CUDA_DOUBLE_INIT_POLLS", 3);
        if (c->pending_polls > 0) return ncclInProgress;
    }
    return ncclSuccess;
}

ncclResult_t ncclReduceScatter(const void *send, void *recv, size_t recvcount, ncclDataType_t type,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
    if (op != ncclSum) return ncclInvalidArgument;
    return enqueue(comm, OP_REDUCE_SCATTER, send, recv, recvcount, type, stream,
                   "ncclReduceScatter");
}

ncclResult_t ncclAllGather(const void *send, void *recv, size_t sendcount, ncclDataType_t type,
                           ncclComm_t comm, cudaStream_t stream)
{
    return enqueue(comm, OP_ALL_GATHER, send, recv, sendcount, type, stream, "ncclAllGather");
}

ncclResult_t ncclCommFinalize(ncclComm_t c)
{
    if (!c) return ncclInvalidArgument;
    c->finalizing = 1; /* in progress until the queued collectives have run */
    ncclResult_t s = atomic_load(&c->state);
    return s != ncclSuccess ? s : atomic_load(&c->done) < c->queued ? ncclInProgress : ncclSuccess;
}

static void release(ncclComm_t c)
{
    if (c->seg) munmap(c->seg, c->seg_bytes);
    if (!c->joined && c->rank == 0 && c->seg) shm_unlink(c->name); /* ENOENT if done already */
    pthread_mutex_destroy(&c->mu);
    free(c);
}

/* Destroy after its collectives completed (the library finalizes first). */
ncclResult_t ncclCommDestroy(ncclComm_t c)
{
    if (!c) return ncclInvalidArgument;
    while (atomic_load(&c->done) < c->queued && !atomic_load(&c->aborted))
        sched_yield(); /* NCCL's destroy waits for the queued operations */
    release(c);
    return ncclSuccess;
}

/* Queued collectives stop at their next meeting; the caller synchronises the stream (the
 * library does) before the memory goes. */
ncclResult_t ncclCommAbort(ncclComm_t c)
{
    if (!c) return ncclSuccess;
    atomic_store(&c->aborted, 1);
    cudaDeviceSynchronize(); /* the stream tasks see the flag and end */
    release(c);
    return ncclSuccess;
}
