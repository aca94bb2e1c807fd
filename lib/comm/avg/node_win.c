/* node_win.c: the node-local phase of an average through an MPI-3 shared-memory window.
 *
 * The ranks of a node (the node communicator, when MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)
 * says they all share memory) allocate one window with MPI_Win_allocate_shared; each local
 * rank's segment holds an arrival counter and two halves of cap floats. A chunk of a buffer
 * is averaged as
 *   1. copy in: every rank copies its chunk into its half h;           counter barrier
 *   2. local rank l sums block l of every peer's half h in place (rank order 0..L-1, fp32,
 *      the same operations as the point-to-point owner sum, so the bits are the same), then
 *      the cross-node reduce-scatter and allgather of that block (reduce.c);  counter barrier
 *   3. copy out: every rank reads block b from local rank b's half h.
 * Chunks alternate halves, so the copy-in of chunk c + 1 cannot overwrite what a slower peer
 * still reads in step 3 of chunk c; the copy-in of chunk c + 2 into the same half comes after
 * the first barrier of chunk c + 1, which every peer reaches only after its step 3 of chunk c.
 *
 * Counter barrier and memory ordering: a rank makes its writes to the window (copy in, block
 * sum, blocks received from other nodes) visible with MPI_Win_sync (the MPI memory model's
 * processor-memory barrier for the unified shared-memory window, inside the passive-target
 * epoch opened by MPI_Win_lock_all at allocation), then stores its counter = epoch with a C11
 * release store. A waiter polls every peer's counter with acquire loads (collective.c,
 * hpcti_wait_flags: deadline-bounded, names the ranks that are behind) and then calls
 * MPI_Win_sync before reading peer data. Release-store / acquire-load on the same counter
 * orders everything the writer did before its store (its window writes, and also its reads of
 * peer halves) before everything the reader does after its load: that gives both
 * read-after-write (step 2 sees every copy-in; step 3 sees every block) and
 * write-after-read (nobody overwrites a half a peer still reads). Counters only grow and a
 * rank can be at most one barrier ahead of any peer, so ">= epoch" is exact. */
#include "node_win.h"
#include "reduce.h"
#include "vsum.h"
#include "../../core/sim.h"

#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define HEADER 128 /* bytes before a segment's data: the counter, padded */
/* 64-bit slots at the start of a segment: [0] arrival counter, [1] operation number,
 * [2], [3] the mode of the averages with even and odd numbers (mode_of) */
#define FLAG_SLOTS 4
#define SUM_CHUNK  2048 /* floats summed at a time: of 512 .. 8192, 2048 fastest at 1-4 MiB */
/* default chunk per rank on one node: measured best of 128 KiB .. 8 MiB for 1-16 MiB
 * buffers at W = 2 (bench_allreduce, HPCT_NODE_CHUNK_BYTES; doc/distributed.md, "Node-local
 * reduction through a shared window") */
#define CHUNK_BYTES ((size_t)1 << 20)
/* defaults of HPCT_NODE_SMALL_BYTES, measured with bench_allreduce (contexts forced to 16, 32
 * and 64 KiB in one run, both creation orders): on one node the two-barrier block path beat
 * one barrier from 32 KiB per rank; across nodes one barrier and one cross-node round still
 * won at 32 KiB and lost at 64 KiB (bench/results.md, 2026-11-24 (recorded)) */
#define SMALL_BYTES_ONE_NODE ((size_t)16 << 10)
#define SMALL_BYTES_NODES    ((size_t)32 << 10)
#define MIN_HALF             ((size_t)1 << 16) /* floats: smallest cap a fusion size can give */
#define MAX_HALF             ((size_t)1 << 28) /* floats: MPI counts are int */

/* A byte-count setting, or fallback when unset (a bad value: hpct_init refused it first). */
static long env_bytes(const char *name, long fallback)
{
    long v = fallback;
    int set;
    return hpcti_tunable_long(NULL, name, &v, &set) ? fallback : v;
}

/* Floats per chunk: HPCT_NODE_CHUNK_BYTES, else half the fusion buffer, on one node at
 * most CHUNK_BYTES; within [MIN_HALF, MAX_HALF]. With several nodes every chunk costs two
 * cross-node rounds besides its two barriers, so chunks stay large there. */
static size_t chunk_floats(const struct hpcti_dist *d)
{
    size_t h = d->avg->fusion_floats / 2, one_node = CHUNK_BYTES / sizeof(float);
    if (d->cross_size == 1 && h > one_node) h = one_node;
    long bytes = env_bytes("HPCT_NODE_CHUNK_BYTES", -1);
    if (bytes > 0) h = (size_t)bytes / sizeof(float);
    return h < MIN_HALF ? MIN_HALF : h > MAX_HALF ? MAX_HALF : h;
}

/* Chunks of at most this many floats are summed whole by every rank of the node:
 * HPCT_NODE_SMALL_BYTES, by default SMALL_BYTES_ONE_NODE on one node, else SMALL_BYTES_NODES. */
static size_t small_floats(const struct hpcti_dist *d)
{
    long fallback = d->cross_size == 1 ? SMALL_BYTES_ONE_NODE : SMALL_BYTES_NODES;
    return (size_t)env_bytes("HPCT_NODE_SMALL_BYTES", fallback) / sizeof(float);
}

static size_t half_max(const struct hpcti_dist *d)
{
    return d->avg->nwin->chunk;
}

/* Whether the cross-node step of a chunk of m floats on the block path sends this rank's
 * whole block to every cross-node peer in one round (every rank sums all of it: the owners'
 * operations, the same bits) rather than a reduce-scatter and an allgather of it: when the
 * blocks all peers send add up to at most the one-barrier size (latency, not bandwidth). */
static int cross_whole(const struct hpcti_dist *d, size_t m)
{
    size_t len = hpcti_block_len(m, d->local_size, 0);
    return d->cross_size > 1 && len * (size_t)(d->cross_size - 1) <= d->avg->nwin->small;
}

int hpcti_node_win_chunks(const struct hpcti_dist *d, size_t n)
{
    return (int)((n + half_max(d) - 1) / half_max(d));
}

/* Receive room (floats) beyond one block that the cross-node step of a chunk of m floats
 * takes: a whole step receives (cross size - 1) blocks, the reduce-scatter and a tree's
 * rounds one. */
static size_t whole_extra(const struct hpcti_dist *d, size_t m)
{
    if (d->cross_size < 3 || hpcti_cross_tree(d, 1) || !cross_whole(d, m)) return 0;
    return (size_t)(d->cross_size - 2) * hpcti_block_len(m, d->local_size, 0);
}

size_t hpcti_node_win_whole_room(const struct hpcti_dist *d, size_t n)
{
    size_t cap = half_max(d); /* n / cap full chunks, then the rest */
    return n / cap * whole_extra(d, cap) + whole_extra(d, n % cap);
}

size_t hpcti_node_win_scratch(const struct hpcti_dist *d, size_t n)
{
    /* small chunks take (cross size - 1) times their size (in tree rounds once): all
     * chunks, or at most one */
    const struct hpcti_node_win *w = d->avg->nwin;
    size_t small = w->small >= w->chunk ? n : n < w->small ? n : w->small;
    size_t peers = hpcti_cross_tree(d, 1) ? 2 : (size_t)d->cross_size;
    return n + small * peers + hpcti_node_win_whole_room(d, n);
}

int hpcti_node_win_takes(const struct hpcti_dist *d, size_t n)
{
    return d->avg->nwin && n && n <= d->avg->nwin->max_bytes / sizeof(float);
}

int hpcti_node_win_ready(const struct hpcti_dist *d, size_t n)
{
    return d->avg->nwin->cap >= (n < half_max(d) ? n : half_max(d));
}

/* Local rank p's half h [cap] in the window. */
static float *half_of(const struct hpcti_node_win *w, int p, int h)
{
#ifdef HPCT_SIM /* every rank's halves are one shared [2 cap] (lib/core/sim.h) */
    (void)p;
    return (float *)w->halves.buf + (size_t)h * w->cap;
#else
    return (float *)(w->seg[p] + HEADER) + (size_t)h * w->cap;
#endif
}

/* HPCT_NODE_REDUCE: 0 auto (default), 1 p2p, 2 shm; -1 for anything else (named on ctx). */
static int node_reduce_mode(hpct_ctx_t ctx)
{
    int word = 0, set;
    return hpcti_tunable_choice(ctx, "HPCT_NODE_REDUCE", &word, &set) ? -1 : word;
}

/* 1 when every rank of the node communicator is in this rank's MPI shared-memory domain
 * (collective over the node communicator). */
static int node_shares_memory(struct hpcti_dist *d)
{
    MPI_Comm shm;
    if (MPI_Comm_split_type(d->node_rs, MPI_COMM_TYPE_SHARED, d->local_rank, MPI_INFO_NULL, &shm) !=
        MPI_SUCCESS)
        return 0;
    int size = 0;
    MPI_Comm_size(shm, &size);
    MPI_Comm_free(&shm);
    return size == d->local_size;
}

/* Why this rank cannot use the window (NULL: it can); mode is node_reduce_mode(). */
static const char *unusable(const struct hpcti_dist *d, int mode, int shares)
{
    if (mode == 1) return "HPCT_NODE_REDUCE=p2p";
    if (d->local_size < 2) return "one rank per node";
    if (!d->hier && d->num_nodes > 1) return "nodes hold different numbers of ranks";
    if (d->avg->transport) return "16-bit gradient transport";
    if (!shares) return "the node's ranks do not all share memory (MPI_COMM_TYPE_SHARED)";
    return NULL;
}

/* Every rank learns whether all ranks can use the window and the smallest of every rank's
 * settings v [5] (usable, chunk floats, small floats, largest bytes, in place allowed):
 * deadline-bounded MIN. */
static hpct_status_t agree_all(hpct_ctx_t ctx, unsigned long *v)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    hpct_status_t s = hpcti_op_begin(ctx, "hpct_init (node window agreement)", 0, 0);
    if (s) return s;
    MPI_Request req;
    MPI_Iallreduce(MPI_IN_PLACE, v, 5, MPI_UNSIGNED_LONG, MPI_MIN, d->comm, &req);
    return hpcti_op_end(ctx, &req, 1);
}

/* HPCT_NODE_IN_PLACE: 0 turns in-place averages of gradient buffers off (1, unset: on). */
static unsigned long in_place_allowed(void)
{
    int on = 1, set;
    return hpcti_tunable_flag(NULL, "HPCT_NODE_IN_PLACE", &on, &set) || on;
}

/* HPCT_NODE_SHM_MAX_BYTES: larger averages take the point-to-point path (0, unset: none). */
static unsigned long max_bytes(void)
{
    long v = env_bytes("HPCT_NODE_SHM_MAX_BYTES", 0);
    return v > 0 ? (unsigned long)v : ULONG_MAX;
}

static hpct_status_t make_win_state(hpct_ctx_t ctx, const unsigned long *v)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    struct hpcti_node_win *w = calloc(1, sizeof *w);
    size_t L = (size_t)d->local_size;
    int *local = malloc(L * sizeof *local);
    if (w) {
        w->comm = MPI_COMM_NULL, w->win = MPI_WIN_NULL;
        w->seg = calloc(L, sizeof *w->seg);
        w->flag = calloc(L, sizeof *w->flag);
        w->world = calloc(L, sizeof *w->world);
        w->src = calloc(L, sizeof *w->src);
        w->dst = calloc(L, sizeof *w->dst);
    }
    d->avg->nwin = w;
    if (!w || !w->seg || !w->flag || !w->world || !w->src || !w->dst || !local) {
        free(local);
        return hpcti_error(ctx, HPCT_ERR_NO_MEMORY, "hpct_init: cannot allocate the node window");
    }
    if (MPI_Comm_dup(d->node_rs, &w->comm) != MPI_SUCCESS)
        return hpcti_error(ctx, HPCT_ERR_COMM,
                           "hpct_init: MPI_Comm_dup of the node communicator failed on rank %d",
                           d->rank);
    w->chunk = v[1], w->small = v[2], w->max_bytes = v[3], w->in_place = (int)v[4];
    MPI_Group node, world;
    MPI_Comm_group(w->comm, &node);
    MPI_Comm_group(d->comm, &world);
    for (int p = 0; p < d->local_size; p++) local[p] = p;
    MPI_Group_translate_ranks(node, d->local_size, local, world, w->world);
    MPI_Group_free(&node), MPI_Group_free(&world);
    free(local);
    return HPCT_SUCCESS;
}

hpct_status_t hpcti_node_win_setup(hpct_ctx_t ctx)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    int mode = node_reduce_mode(ctx);
    if (mode < 0) return HPCT_ERR_INVALID_ARG;
    int shares = d->local_size > 1 ? node_shares_memory(d) : 0;
    const char *why = unusable(d, mode, shares);
    unsigned long v[5] = {why == NULL, chunk_floats(d), small_floats(d), max_bytes(),
                          in_place_allowed()};
    hpct_status_t s = d->size > 1 ? agree_all(ctx, v) : HPCT_SUCCESS;
    if (s) return s;
    if (!v[0]) {
        hpcti_log(ctx, HPCT_LOG_INFO, "node reduction: point-to-point (%s)",
                  why ? why : "another node cannot use a shared window");
        return HPCT_SUCCESS;
    }
    s = make_win_state(ctx, v);
    if (!s)
        hpcti_log(ctx, HPCT_LOG_INFO,
                  "node reduction: MPI-3 shared-memory window over %d local ranks (chunks of %zu "
                  "floats, one barrier up to %zu, point-to-point above %lu bytes, gradient "
                  "buffers averaged in place: %s)",
                  d->local_size, d->avg->nwin->chunk, d->avg->nwin->small, v[3],
                  v[4] ? "yes" : "no");
    return s;
}

/* Deadline-bounded barrier on the node (MPI_Ibarrier polled by hpcti_wait_reqs). */
static hpct_status_t node_barrier(hpct_ctx_t ctx)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    MPI_Request req;
    if (MPI_Ibarrier(d->avg->nwin->comm, &req) != MPI_SUCCESS)
        return hpcti_error(ctx, HPCT_ERR_COMM, "%s: MPI_Ibarrier on the node failed on rank %d",
                           d->op_name, d->rank);
    return hpcti_wait_reqs(ctx, &req, 1);
}

static void drop_window(struct hpcti_node_win *w)
{
    if (w->win == MPI_WIN_NULL) return;
    MPI_Win_unlock_all(w->win);
    MPI_Win_free(&w->win);
    w->cap = 0;
}

/* A window of halves of cap floats: every local rank is at the barrier first (done with the
 * old window), counters start at 0 and are zeroed before anyone reads them. */
static hpct_status_t allocate(hpct_ctx_t ctx, size_t cap)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    struct hpcti_node_win *w = d->avg->nwin;
    hpct_status_t s = node_barrier(ctx);
    if (s) return s;
    drop_window(w);
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "alloc_shared_noncontig", "true");
    char *base;
    size_t data = 2 * cap * sizeof(float);
#ifdef HPCT_SIM /* the halves' bytes do not matter to timing: shared (lib/core/sim.h) */
    if (!hpcti_sim_pay_reserve(&w->halves, data))
        return hpcti_error(ctx, HPCT_ERR_NO_MEMORY, "%s: cannot map %zu shared bytes on rank %d",
                           d->op_name, data, d->rank);
    data = 0;
#endif
    int rc = MPI_Win_allocate_shared((MPI_Aint)(HEADER + data), 1, info, w->comm, &base, &w->win);
    MPI_Info_free(&info);
    if (rc != MPI_SUCCESS)
        return hpcti_error(ctx, HPCT_ERR_NO_MEMORY,
                           "%s: MPI_Win_allocate_shared of 2 x %zu floats failed on rank %d",
                           d->op_name, cap, d->rank);
    MPI_Win_set_errhandler(w->win, MPI_ERRORS_RETURN);
    MPI_Win_lock_all(MPI_MODE_NOCHECK, w->win);
    for (int p = 0; p < d->local_size; p++) {
        MPI_Aint bytes;
        int unit;
        MPI_Win_shared_query(w->win, p, &bytes, &unit, &w->seg[p]);
        w->flag[p] = (uint64_t *)w->seg[p];
    }
    atomic_store_explicit((_Atomic uint64_t *)&w->flag[d->local_rank][0], 0, memory_order_relaxed);
    for (int i = 1; i < FLAG_SLOTS; i++)
        atomic_store_explicit((_Atomic uint64_t *)&w->flag[d->local_rank][i], 0,
                              memory_order_relaxed);
    w->epoch = 0, w->half = 0, w->calls = 0;
    MPI_Win_sync(w->win);
    s = node_barrier(ctx);
    MPI_Win_sync(w->win);
    w->cap = cap;
    return s;
}

/* After a counter barrier: every peer's operation number is this operation's, or the next
 * one's (a peer that passed the last barrier of this operation may have started the next). */
static hpct_status_t same_operation(hpct_ctx_t ctx)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    struct hpcti_node_win *w = d->avg->nwin;
    for (int p = 0; p < d->local_size; p++) {
        uint64_t at =
            atomic_load_explicit((_Atomic uint64_t *)&w->flag[p][1], memory_order_relaxed);
        if (at == d->op_seq || at == d->op_seq + 1) continue;
        d->broken = 1, d->in_op = 0;
        return hpcti_error(ctx, HPCT_ERR_COMM,
                           "%s: rank %d is at collective operation #%llu while rank %d is at "
                           "#%llu (ranks called collectives in different orders); end the job "
                           "with hpct_abort_job",
                           d->op_name, w->world[p], (unsigned long long)at, d->rank,
                           (unsigned long long)d->op_seq);
    }
    return HPCT_SUCCESS;
}

/* The mode slot of this rank's latest average: a peer that has finished that average and
 * started the next writes the other slot, so after the average's first barrier every
 * peer's value in this slot is the one it published for the same average. */
static uint64_t *mode_slot(const struct hpcti_node_win *w, int p)
{
    return &w->flag[p][2 + (w->calls - 1) % 2];
}

/* After an average's first counter barrier: w->mixed = 1 unless every local rank averages
 * in the same mode (ordinary memory on all, or the same part of the same gradient buffer on
 * all). Every rank reads every mode, so all of the node reach the same answer; a mixed node
 * averages by copying on every rank (correct for any buffer), and says so once. */
static void same_mode(hpct_ctx_t ctx)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    struct hpcti_node_win *w = d->avg->nwin;
    uint64_t mine = *mode_slot(w, d->local_rank);
    w->check_mode = 0, w->mixed = 0;
    for (int p = 0; p < d->local_size && !w->mixed; p++) {
        uint64_t at =
            atomic_load_explicit((_Atomic uint64_t *)mode_slot(w, p), memory_order_relaxed);
        if (at == mine) continue;
        w->mixed = 1;
        if (w->warned_mixed++) break;
        hpcti_log(ctx, HPCT_LOG_WARN,
                  "%s: rank %d averages %s while rank %d of the same node averages %s: this "
                  "node averages by copying (pass the same part of the same hpct_alloc_grads "
                  "buffer on every rank to average in place); said once",
                  d->op_name, w->world[p], at ? "a part of a gradient buffer" : "ordinary memory",
                  d->rank, mine ? "a part of a gradient buffer" : "ordinary memory");
    }
}

/* Counter barrier of the node: publish my writes, wait until every peer has published. */
static hpct_status_t counter_barrier(hpct_ctx_t ctx)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    struct hpcti_node_win *w = d->avg->nwin;
    uint64_t *mine = w->flag[d->local_rank];
    w->epoch++;
    MPI_Win_sync(w->win);
    atomic_store_explicit((_Atomic uint64_t *)&mine[0], w->epoch, memory_order_release);
    hpct_status_t s = hpcti_wait_flags(ctx, w->flag, w->world, d->local_size, w->epoch);
    MPI_Win_sync(w->win);
    if (!s) s = same_operation(ctx);
    if (!s && w->check_mode) same_mode(ctx);
    return s;
}

/* Every out [k] [len] (k < nout) = sum over local ranks p = 0..L-1 of
 * w->src[p] [len], in rank order, times 1/W when no cross-node step follows. Sums SUM_CHUNK
 * floats at a time in a stack accumulator, so an output may be one of the sources. Same
 * fp32 operations as reduce.c's owner sum. Keep the copies out of the accumulator: GCC makes
 * them rep movs, which writes whole lines of the window without first reading them from the
 * peer core that last read them; one loop that adds and stores straight into the window
 * measured 2.3 times slower at 16 MiB (W = 2; bench/results.md, 2026-11-24 (recorded)).
 * L >= 2: the window is set up only with several ranks per node (unusable). */
static void sum_to(const struct hpcti_dist *d, size_t len, float *const *out, int nout)
{
    const struct hpcti_node_win *w = d->avg->nwin;
    int L = d->local_size, last = d->cross_size == 1;
    float acc[SUM_CHUNK], inv = 1.0f / (float)d->size;
#ifdef HPCT_SIM
    (void)acc, (void)inv, (void)last, (void)out;
    HPCTI_SIM_WORK((size_t)(L + nout) * len * sizeof *acc); /* L reads, nout writes */
    return;
#endif
    for (size_t i = 0; i < len; i += SUM_CHUNK) {
        size_t c = len - i < SUM_CHUNK ? len - i : SUM_CHUNK;
        memcpy(acc, w->src[0] + i, c * sizeof *acc);
        for (int p = 1; p < L - 1; p++) hpcti_vadd(acc, w->src[p] + i, c);
        if (last)
            hpcti_vadd_scale(acc, w->src[L - 1] + i, c, inv);
        else
            hpcti_vadd(acc, w->src[L - 1] + i, c);
        for (int k = 0; k < nout; k++) memcpy(out[k] + i, acc, c * sizeof *acc);
    }
}

/* sum_to out1 [len] and out2 [len] (unless NULL). */
static void sum_sources(const struct hpcti_dist *d, size_t len, float *out1, float *out2)
{
    float *out[2] = {out1, out2};
    sum_to(d, len, out, out2 ? 2 : 1);
}

/* Own block of half h = sum over local ranks 0..L-1 of their block (this rank's from its
 * own buffer buf [m], the others' from the window), scaled by 1/W when no cross-node step
 * follows; written to the window and, then, to buf too. */
static void sum_block(const struct hpcti_dist *d, int h, float *buf, size_t m)
{
    const struct hpcti_node_win *w = d->avg->nwin;
    int L = d->local_size, me = d->local_rank, last = d->cross_size == 1;
    size_t start = hpcti_block_start(m, L, me), len = hpcti_block_len(m, L, me);
    for (int p = 0; p < L; p++) w->src[p] = (p == me ? buf : half_of(w, p, h)) + start;
    sum_sources(d, len, half_of(w, me, h) + start, last ? buf + start : NULL);
}

/* Copy every block of buf [m] but this rank's own: into its own half h (to_win), or out of
 * each owner's half h. */
static void copy_blocks(const struct hpcti_dist *d, int h, float *buf, size_t m, int to_win)
{
    int L = d->local_size, me = d->local_rank;
    for (int b = 0; b < L; b++) {
        size_t start = hpcti_block_start(m, L, b), bytes = hpcti_block_len(m, L, b) * sizeof *buf;
        if (b == me) continue;
        if (to_win)
            hpcti_copy_payload(half_of(d->avg->nwin, me, h) + start, buf + start, bytes);
        else
            hpcti_copy_payload(buf + start, half_of(d->avg->nwin, b, h) + start, bytes);
    }
}

/* The rest of chunk, after every rank's copy in and a counter barrier. */
static hpct_status_t chunk_sum_and_copy_out(hpct_ctx_t ctx, float *buf, size_t m)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    struct hpcti_node_win *w = d->avg->nwin;
    int L = d->local_size, me = d->local_rank, h = w->half, id;
    size_t start = hpcti_block_start(m, L, me), len = hpcti_block_len(m, L, me);
    hpct_status_t s = HPCT_SUCCESS;
    sum_block(d, h, buf, m);
    if (d->cross_size > 1) {
        float *own = half_of(w, me, h) + start;
        s = hpcti_red_start_cross(ctx, own, len, cross_whole(d, m), &id);
        if (!s) s = hpcti_red_wait(ctx, id);
        if (!s) hpcti_copy_payload(buf + start, own, len * sizeof *buf);
    }
    if (!s) s = counter_barrier(ctx);
    if (s) return s;
    copy_blocks(d, h, buf, m, 0);
    w->half ^= 1;
    return HPCT_SUCCESS;
}

/* Average one chunk buf [m] (m <= cap) through half w->half. This rank's own block never
 * goes into the window on the way in (only its owner reads it), and comes back to buf from
 * the sum itself (or from the cross-node step), not through the copy out. On a mixed node
 * (same_mode) the ranks that meant to average in place copy in after the first barrier, so
 * every rank waits at one more barrier before any reads the window. */
static hpct_status_t chunk(hpct_ctx_t ctx, float *buf, size_t m)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    struct hpcti_node_win *w = d->avg->nwin;
    copy_blocks(d, w->half, buf, m, 1);
    hpct_status_t s = counter_barrier(ctx);
    if (!s && w->mixed) s = counter_barrier(ctx), w->mixed = 0;
    return s ? s : chunk_sum_and_copy_out(ctx, buf, m);
}

/* The whole chunk buf [m] = sum over local ranks 0..L-1 (its own from buf, the others from
 * their half h), scaled by 1/W on one node: every rank computes every element itself, in
 * rank order (the owner's operations, so every rank gets the owner's bits). */
static void sum_all(const struct hpcti_dist *d, int h, float *buf, size_t m)
{
    const struct hpcti_node_win *w = d->avg->nwin;
    for (int p = 0; p < d->local_size; p++) w->src[p] = p == d->local_rank ? buf : half_of(w, p, h);
    sum_sources(d, m, buf, NULL);
}

/* A small chunk: copy in, one counter barrier, every rank sums all of it (and, with several
 * nodes, exchanges its whole node sum with its cross-node peers in one round and sums
 * those: the owners' operations in their order). The next use of this half comes after
 * the next chunk's barrier, which every peer reaches only after its reads here, so one
 * barrier per chunk is enough. */
static hpct_status_t chunk_replicated(hpct_ctx_t ctx, float *buf, size_t m)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    struct hpcti_node_win *w = d->avg->nwin;
    int h = w->half;
    hpcti_copy_payload(half_of(w, d->local_rank, h), buf, m * sizeof *buf);
    hpct_status_t s = counter_barrier(ctx);
    if (s) return s;
    sum_all(d, h, buf, m);
    if (d->cross_size > 1) {
        int id;
        s = hpcti_red_start_cross(ctx, buf, m, 1, &id);
        if (!s) s = hpcti_red_wait(ctx, id);
    }
    w->half ^= 1;
    return s;
}

/* The gradient buffer whose window holds all of buf [n] here, and where (*off floats in). */
static const struct hpcti_grads *grads_holding(const struct hpcti_dist *d, const float *buf,
                                               size_t n, size_t *off)
{
    for (const struct hpcti_grads *g = d->avg->grads; g; g = g->next)
        if (g->win != MPI_WIN_NULL && buf >= g->buf && n <= g->count &&
            (size_t)(buf - g->buf) <= g->count - n) {
            *off = (size_t)(buf - g->buf);
            return g;
        }
    return NULL;
}

int hpcti_node_win_holds(const struct hpcti_dist *d, const float *buf, size_t n)
{
    size_t off;
    return d->avg->nwin && grads_holding(d, buf, n, &off) != NULL;
}

/* A counter barrier inside an in-place average: MPI_Win_sync of g's window too (the MPI
 * memory barrier of that window; counter_barrier syncs the node window), before the
 * counter is raised and after the peers' are seen. */
static hpct_status_t grads_barrier(hpct_ctx_t ctx, const struct hpcti_grads *g)
{
    MPI_Win_sync(g->win);
    hpct_status_t s = counter_barrier(ctx);
    MPI_Win_sync(g->win);
    return s;
}

/* Average floats [off, off + m) of g's buffers in place: local rank l sums its block of
 * every local rank's buffer and writes the sum into every local rank's buffer (with several
 * nodes: into its own, runs the cross-node step of that block as chunk does, then copies it
 * into the others'). Block l is read and written by rank l alone, so no barrier is needed
 * until the last chunk's (average_in_place). */
static hpct_status_t chunk_in_place(hpct_ctx_t ctx, const struct hpcti_grads *g, size_t off,
                                    size_t m)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    struct hpcti_node_win *w = d->avg->nwin;
    int L = d->local_size, me = d->local_rank, id;
    size_t start = hpcti_block_start(m, L, me), len = hpcti_block_len(m, L, me);
    float *own = g->buf + off + start;
    for (int p = 0; p < L; p++) w->src[p] = g->seg[p] + off + start;
    if (d->cross_size == 1) {
        for (int p = 0; p < L; p++) w->dst[p] = g->seg[p] + off + start;
        sum_to(d, len, w->dst, L);
        return HPCT_SUCCESS;
    }
    sum_sources(d, len, own, NULL);
    hpct_status_t s = hpcti_red_start_cross(ctx, own, len, cross_whole(d, m), &id);
    if (!s) s = hpcti_red_wait(ctx, id);
    for (int p = 0; p < L && !s; p++)
        if (p != me) hpcti_copy_payload(g->seg[p] + off + start, own, len * sizeof *own);
    return s;
}

/* The copying path for floats [from, n) of buf, chunk by chunk (from: a multiple of cap). */
static hpct_status_t average_copied(hpct_ctx_t ctx, float *buf, size_t n, size_t from)
{
    struct hpcti_node_win *w = hpcti_dist(ctx)->avg->nwin;
    hpct_status_t s = HPCT_SUCCESS;
    for (size_t at = from; at < n && !s; at += w->cap) {
        size_t m = n - at < w->cap ? n - at : w->cap;
        s = m <= w->small ? chunk_replicated(ctx, buf + at, m) : chunk(ctx, buf + at, m);
    }
    return s;
}

/* On a mixed node, a rank that meant to average buf [n] in place and has passed the first
 * barrier: the copying path, its first chunk copied in late (chunk's second barrier), the
 * rest as the ranks that copy from the start do. */
static hpct_status_t average_copied_late(hpct_ctx_t ctx, float *buf, size_t n)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    struct hpcti_node_win *w = d->avg->nwin;
    size_t m = n < w->cap ? n : w->cap;
    w->mixed = 0;
    copy_blocks(d, w->half, buf, m, 1);
    hpct_status_t s = counter_barrier(ctx);
    if (!s) s = chunk_sum_and_copy_out(ctx, buf, m);
    return s ? s : average_copied(ctx, buf, n, m);
}

/* Average g's floats [off, off + n) with no copy in: a counter barrier (every rank's input
 * written), then chunk_in_place per chunk (a small last chunk copied, chunk_replicated), then
 * a last barrier, so that no rank returns (and overwrites its buffer or reads its result)
 * while a peer still reads or writes it. The sums are sum_block's, so the bits are those of
 * the copying path. */
static hpct_status_t average_in_place(hpct_ctx_t ctx, const struct hpcti_grads *g, size_t off,
                                      size_t n)
{
    struct hpcti_node_win *w = hpcti_dist(ctx)->avg->nwin;
    hpct_status_t s = grads_barrier(ctx, g);
    if (!s && w->mixed) return average_copied_late(ctx, g->buf + off, n);
    if (!s && !w->told_in_place++)
        hpcti_log(ctx, HPCT_LOG_INFO,
                  "node reduction: averaging in place in a gradient buffer's shared window "
                  "(no copy into the window); said once");
    for (size_t c = 0; c < n && !s; c += w->cap) {
        size_t m = n - c < w->cap ? n - c : w->cap;
        /* a small last chunk as the copying path does it: the same cross-node exchange as a
         * node that copies (a mixed node, see average_copied_late) */
        s = m <= w->small ? chunk_replicated(ctx, g->buf + off + c, m)
                          : chunk_in_place(ctx, g, off + c, m);
    }
    return s ? s : grads_barrier(ctx, g);
}

/* The mode of an average, published beside the counter: 0 ordinary memory, else the
 * gradient buffer's id (bits 40..63) and the offset + 1 (bits 0..39). */
static uint64_t mode_of(const struct hpcti_grads *g, size_t off)
{
    return g ? g->id << 40 | (uint64_t)(off + 1) : 0;
}

/* With HPCT_ALLREDUCE_ALGO's shm/p2p on one node: a counter barrier at which every local
 * rank sees every mode (same_mode); 1 when all average ordinary memory (no rank in place:
 * the probe timed p2p faster than copying through the window), else 0 and the average goes
 * on through the window, the modes known (a mixed node copies, as after chunk's barrier). */
static int all_ordinary(hpct_ctx_t ctx, const struct hpcti_grads *g, hpct_status_t *s)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    struct hpcti_node_win *w = d->avg->nwin;
    *s = counter_barrier(ctx);
    if (*s || w->mixed || g) return 0;
    if (!w->told_ordinary++)
        hpcti_log(ctx, HPCT_LOG_INFO,
                  "node reduction: every local rank averages ordinary memory: point-to-point "
                  "(shm/p2p in the algorithm table); gradient buffers stay in the window; said "
                  "once");
    return 1;
}

hpct_status_t hpcti_node_win_allreduce(hpct_ctx_t ctx, float *buf, size_t n, int ordinary_p2p,
                                       int *ordinary)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    struct hpcti_node_win *w = d->avg->nwin;
    size_t need = n < half_max(d) ? n : half_max(d), off = 0;
    hpct_status_t s = w->cap >= need ? HPCT_SUCCESS : allocate(ctx, need);
    /* in place when buf lies in a gradient buffer's window and its first chunk is above
     * the one-barrier size: there a mixed node's copying ranks take chunk's path (see
     * average_copied_late) and a node that copies makes the same cross-node exchange (in
     * place would also win below: 16 KiB at W = 2, 2.7-3.4 us against 4.3-4.6 us one-barrier) */
    const struct hpcti_grads *g =
        w->in_place && need > w->small ? grads_holding(d, buf, n, &off) : NULL;
    if (g && (off >> 40 || g->id >> 24)) g = NULL;
    /* the operation this rank is in, beside its counter: who arrived (for a timeout) and
     * whether all are at the same operation (same_operation); the average's mode (same_mode) */
    atomic_store_explicit((_Atomic uint64_t *)&w->flag[d->local_rank][1], d->op_seq,
                          memory_order_relaxed);
    w->calls++;
    atomic_store_explicit((_Atomic uint64_t *)mode_slot(w, d->local_rank), mode_of(g, off),
                          memory_order_relaxed);
    w->check_mode = 1;
    *ordinary = 0;
    if (!s && ordinary_p2p && d->cross_size == 1 && (*ordinary = all_ordinary(ctx, g, &s)))
        return HPCT_SUCCESS;
    if (!s && g) return average_in_place(ctx, g, off, n);
    return s ? s : average_copied(ctx, buf, n, 0);
}

hpct_status_t hpcti_node_win_grads(hpct_ctx_t ctx, struct hpcti_grads *g)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    struct hpcti_node_win *w = d->avg->nwin;
    g->seg = calloc((size_t)d->local_size, sizeof *g->seg);
    if (!g->seg) return hpcti_error(ctx, HPCT_ERR_NO_MEMORY, "%s: out of memory", d->op_name);
    hpct_status_t s = node_barrier(ctx); /* every local rank is inside the call */
    if (s) return s;
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "alloc_shared_noncontig", "true");
#ifdef HPCT_SIM /* the buffer's bytes do not matter to timing: shared, below (lib/core/sim.h) */
    int rc = MPI_Win_allocate_shared((MPI_Aint)sizeof(float), sizeof(float), info, w->comm, &g->buf,
                                     &g->win);
#else
    int rc = MPI_Win_allocate_shared((MPI_Aint)((g->count ? g->count : 1) * sizeof(float)),
                                     sizeof(float), info, w->comm, &g->buf, &g->win);
#endif
    MPI_Info_free(&info);
    if (rc != MPI_SUCCESS) {
        g->win = MPI_WIN_NULL, g->buf = NULL;
        return hpcti_error(ctx, HPCT_ERR_NO_MEMORY,
                           "%s: MPI_Win_allocate_shared of %zu floats failed on rank %d",
                           d->op_name, g->count, d->rank);
    }
    MPI_Win_set_errhandler(g->win, MPI_ERRORS_RETURN);
    MPI_Win_lock_all(MPI_MODE_NOCHECK, g->win);
    for (int p = 0; p < d->local_size; p++) {
        MPI_Aint bytes;
        int unit;
        MPI_Win_shared_query(g->win, p, &bytes, &unit, &g->seg[p]);
    }
#ifdef HPCT_SIM /* every local rank's buffer is this rank's one shared copy */
    if (!(g->buf = SMPI_SHARED_MALLOC(g->count ? g->count * sizeof(float) : 1)))
        return hpcti_error(ctx, HPCT_ERR_NO_MEMORY, "%s: cannot map %zu shared floats on rank %d",
                           d->op_name, g->count, d->rank);
    for (int p = 0; p < d->local_size; p++) g->seg[p] = g->buf;
#else
    memset(g->buf, 0, g->count * sizeof(float));
#endif
    MPI_Win_sync(g->win);
    s = node_barrier(ctx);
    MPI_Win_sync(g->win);
    return s;
}

void hpcti_node_win_grads_free(struct hpcti_grads *g, int collective)
{
    if (collective && g->win != MPI_WIN_NULL) {
        MPI_Win_unlock_all(g->win);
        MPI_Win_free(&g->win);
    }
#ifdef HPCT_SIM /* seg: a window's buffer, shared in this build (ordinary ones are freed) */
    if (g->seg && g->buf) SMPI_SHARED_FREE(g->buf);
    if (g->seg) g->buf = NULL;
#endif
    free(g->seg);
    g->seg = NULL;
}

void hpcti_node_win_free(struct hpcti_dist *d, int collective)
{
    struct hpcti_node_win *w = d->avg->nwin;
    if (!w) return;
    if (collective) {
        drop_window(w);
        if (w->comm != MPI_COMM_NULL) MPI_Comm_free(&w->comm);
    }
#ifdef HPCT_SIM
    hpcti_sim_pay_free(&w->halves);
#endif
    free(w->seg), free(w->flag), free(w->world), free(w->src), free(w->dst), free(w);
    d->avg->nwin = NULL;
}
