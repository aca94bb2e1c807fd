/* dist.h: library-internal distributed state: communicators, deadlines, reductions. */
#ifndef HPCTI_DIST_H
#define HPCTI_DIST_H

#include "config.h" /* HPCT_HAVE_NCCL: every includer must see the same struct hpcti_dist */
#include "../../bootstrap/bootstrap.h"
#ifdef HPCT_HAVE_NCCL
#include "../avg/nccl_node.h" /* device buffers: NCCL inside the node, MPI across */
#endif

#include <mpi.h>
#include <pthread.h>
#include <stdio.h>

/* One phase of an average: a direct reduce-scatter or allgather of a vector on one
 * communicator (every rank exchanges blocks with every other rank point-to-point). */
struct hpcti_phase {
    MPI_Comm comm;
    int size, me; /* of comm */
    void *vec;    /* [count] wire elements, split into size blocks */
    size_t count;
    int gather; /* 0: reduce-scatter (own block = sum in rank order), 1: allgather,
                 * HPCTI_WHOLE: every rank sums the whole vector in rank order */
    int scale;  /* reduce-scatter only: multiply the own block by 1/world size */
};

#define HPCTI_WHOLE 2

/* One in-flight average of buf [n] over all ranks: up to 4 phases (node reduce-scatter,
 * cross reduce-scatter, cross allgather, node allgather), or 2 on the flat path. */
struct hpcti_reduction {
    float *buf; /* [n] host fp32, averaged in place */
    size_t n;
    int index;         /* position in the operation: part of every message tag */
    void *wire;        /* [n] 16-bit copy when the transport is reduced, else buf */
    void *slots;       /* receive blocks of the current phase: [(size - 1) * block] */
    MPI_Request *reqs; /* [2 world size] sends and receives of the current phase */
    int nreq;
    struct hpcti_phase phase[4];
    int nphase, cur; /* cur == nphase: done */
    int mpi;         /* 1: one MPI_Iallreduce (reqs[0]) of the fp32 sum, then times 1/W */
    double t0;       /* timeline: when it started (0: no timeline) */
};

/* The node's MPI-3 shared-memory window (node_win.c). Local rank p's segment starts at seg[p]:
 * [arrival counter, 64-bit, padded to 128 bytes][half 0: cap floats][half 1: cap floats]. */
struct hpcti_node_win {
    MPI_Comm comm;           /* dup of the node communicator: window collectives only */
    MPI_Win win;             /* MPI_WIN_NULL until the first use */
    size_t cap;              /* floats per half (0: no window yet) */
    size_t chunk;            /* most floats a chunk (and so a half) holds */
    size_t small;            /* chunks up to this many floats: one barrier, every rank sums all */
    unsigned long max_bytes; /* larger averages take the point-to-point path */
    char **seg;              /* [local_size] each local rank's segment */
    uint64_t **flag;         /* [local_size] each segment's arrival counter */
    int *world;              /* [local_size] world rank of each local rank */
    uint64_t epoch;          /* counter barriers passed on this window */
    int half;                /* half the next chunk uses */
    uint64_t calls;          /* averages through the window so far (their mode slots) */
    int check_mode;          /* 1: the next counter barrier is an average's first */
    int mixed;               /* 1: this average's modes differ on the node (copy) */
    int warned_mixed;        /* mixed averages so far (the warning is given once) */
    int told_in_place;       /* in-place averages so far (logged once) */
    int told_ordinary;       /* ordinary-memory averages sent point-to-point (logged once) */
    int in_place;            /* 0: HPCT_NODE_IN_PLACE=0 on some rank, always copy */
    const float **src;       /* [local_size] scratch: the sources of a block sum */
    float **dst;             /* [local_size] scratch: where an in-place block sum goes */
};

/* A gradient buffer of hpct_alloc_grads or of a built-in model (grads.c): in a shared
 * window of its own where the node window is set up (averages of it read the peers' values
 * in place: node_win.c), else ordinary memory. Kept until hpct_finalize; a buffer given
 * back is handed out again for the next request of the same count. */
struct hpcti_grads {
    float *buf;   /* [count] this rank's, zeroed when handed out */
    size_t count; /* floats */
    uint64_t id;  /* 1, 2, ... in allocation order: the same on every rank of a node */
    int in_use;   /* handed out */
    MPI_Win win;  /* MPI_WIN_NULL: ordinary memory */
    float **seg;  /* [local_size] every local rank's buffer (window only) */
    struct hpcti_grads *next;
};

/* Algorithms for averaging a host buffer (algo.c). SHM_P2P: the node window, except that on
 * one node an average of ordinary memory on every local rank goes point-to-point. */
enum {
    HPCTI_ALGO_P2P,
    HPCTI_ALGO_SHM,
    HPCTI_ALGO_MPI,
    HPCTI_ALGO_ALLGATHER,
    HPCTI_ALGO_SHM_P2P,
    HPCTI_ALGO_COUNT
};
#define HPCTI_ALGO_CLASSES 16

/* Size classes: from min_bytes[i] (increasing, the first 0) up, algo[i]. */
struct hpcti_algo_table {
    int n;
    unsigned long min_bytes[HPCTI_ALGO_CLASSES];
    int algo[HPCTI_ALGO_CLASSES];
};

/* Liveness checks of the operation in progress (live.c). */
struct hpcti_live {
    MPI_Request ping_req;  /* the standing receive of a ping from any rank */
    uint64_t ping_in[2];   /* a ping: the asker's operation number and rank */
    MPI_Request *pong_req; /* [size] answers sent to each rank */
    uint64_t *pong_out;    /* [size] the operation number each answer echoes */
    MPI_Request *ask_req;  /* [2 size] receives of answers from, then pings to, each rank */
    uint64_t *ask_in;      /* [size] answers received */
    uint64_t ping_out[2];  /* this rank's ping: operation number, rank */
    unsigned char *silent; /* [size] 1: asked in this operation, no answer yet */
    uint64_t asked_op;     /* the operation that asked (0: none) */
    double ask_t;          /* when it asked (hpcti_now) */
    double self_gap_s;     /* the longest gap between polls of this operation, if long */
    int found_stopped;     /* the last timeout named silent ranks as stopped */
    int ready;             /* set-up done: the requests above are valid */
};

/* The distributed runtime of a context: ctx->dist, which core holds as an opaque pointer. */
struct hpcti_dist {
    MPI_Comm comm;             /* dup of the caller's communicator (flat ops) */
    MPI_Comm ctl;              /* dup: arrival tokens only */
    MPI_Comm node_rs, node_ag; /* node-local: reduce-scatter, allgather */
    MPI_Comm cross;            /* ranks with the same local rank */
    int rank, size, local_rank, local_size, node_id, num_nodes, cross_size;
    int hier;              /* 1: reduce-scatter / cross allreduce / allgather */
    int owns_mpi;          /* 1: hpct_finalize calls MPI_Finalize */
    int thread_level;      /* MPI_Query_thread after hpct_init (MPI_THREAD_SINGLE ..) */
    pthread_t init_thread; /* the thread that called hpct_init */
    int broken; /* a collective timed out or failed midway: only hpct_abort_job is useful */
    char broken_why[256]; /* what broke it (the operation and its error) */
    int mpi_error;        /* first MPI error code seen while testing the operation's requests */
    hpct_topo_source_t source;
    struct hpcti_boot boot;
    double deadline_s;
    int transport;               /* HPCT_TRANSPORT_* */
    struct hpcti_node_win *nwin; /* set: the node-local phase goes through the shared window */
    struct hpcti_grads *grads;   /* gradient buffers handed out (grads.c) */
    uint64_t grads_made;         /* gradient buffers allocated so far */
    size_t fusion_floats;        /* fusion slot size in elements */
    int tag_space;               /* tags 1000 .. 1000 + tag_space - 1 carry reductions */
    /* the algorithm per size class of host averages, the same on every rank (algo.c) */
    struct hpcti_algo_table algo;
    /* the operation in progress */
    const char *op_name;
    uint64_t op_seq;
    uint64_t tok_out[2]; /* this rank's arrival token: operation number, ctx->step_now */
    double op_start;
    double spin_s;       /* of each wait spent spinning before it yields (hpcti_op_averages) */
    int crowded;         /* 1: this host's ranks outnumber its CPUs (hpcti_wait_setup) */
    unsigned long moves; /* requests completed and phases finished so far (waits back off idle) */
    int in_op;
    int op_tokens;        /* 0: arrivals through the node window's counters (one node), no tokens */
    MPI_Request *tok_req; /* [2 size]: receives from, then sends to, every rank */
    uint64_t *tok_in;     /* [2 size] tokens received (operation number, step) */
    uint64_t *tok_last;   /* [2 size] each rank's token of the last completed operation */
    const char *last_op_name; /* the name of the last completed operation with tokens */
    struct hpcti_live live;   /* liveness checks inside an operation (live.c) */
    struct hpcti_reduction *red;
    int nred, cap_red;
    char *scratch; /* shards, counts, wire copies of the current operation */
    size_t scratch_cap, scratch_used;
    float *fusion; /* [fusion_cap]: two fusion slots */
    size_t fusion_cap;
    int fusion_shared; /* 1: fusion is a buffer of hpcti_grads_alloc (averaged in place) */

    double wait_s; /* seconds spent waiting for collectives */
    long ops;      /* averaging operations */
    float *stage;  /* [stage_cap] pinned host staging of device averages (ops->alloc_host) */
    size_t stage_cap;
    float *dev_fusion; /* [dev_fusion_cap] device fusion slot of device gradients (ops->alloc) */
    size_t dev_fusion_cap;
    void *dev_queue; /* device_avg.c: layers of the overlapped device average across nodes */
#ifdef HPCT_HAVE_NCCL
    hpcti_nccl_t *nccl; /* node-local NCCL communicator (cuda contexts whose node phase it
                           takes: made by hpct_init, NULL otherwise) */
#endif
};

/* Elements per reduction: MPI counts are int. */
#define HPCTI_MAX_CHUNK ((size_t)1 << 28)

/* Block b of count elements split over p ranks: its first element and length. */
static inline size_t hpcti_block_start(size_t count, int p, int b)
{
    size_t q = count / (size_t)p, r = count % (size_t)p;
    return (size_t)b * q + ((size_t)b < r ? (size_t)b : r);
}

static inline size_t hpcti_block_len(size_t count, int p, int b)
{
    return count / (size_t)p + ((size_t)b < count % (size_t)p);
}

/* Append rank to the list "2,3" at out [cap] (len bytes so far, count ranks so far); returns
 * the new length. A full buffer keeps what fits. */
static inline size_t hpcti_rank_list_add(char *out, size_t cap, size_t len, int count, int rank)
{
    if (len >= cap - 16) return len;
    int n = snprintf(out + len, cap - len, "%s%d", count ? "," : "", rank);
    return n > 0 ? len + (size_t)n : len;
}

/* The distributed state of ctx, or NULL after recording HPCT_ERR_STATE for fn. */
struct hpcti_dist *hpcti_dist_of(hpct_ctx_t ctx, const char *fn);

/* Start a collective operation named name: arrival tokens to and from every rank; room for
 * max_red reductions covering total elements. */
/* Record MPI error rc of `what` in the operation in progress as HPCT_ERR_COMM (the MPI error
 * string, the rank); the context is then broken: later collectives fail saying why. */
HPCTI_CHECK hpct_status_t hpcti_mpi_failed(hpct_ctx_t ctx, int rc, const char *what);
HPCTI_CHECK hpct_status_t hpcti_op_begin(hpct_ctx_t ctx, const char *name, int max_red,
                                         size_t total);
/* The same without arrival tokens, for an operation of one node whose first step is a node
 * window counter barrier: the counters show who arrived, and the operation number each
 * rank stores beside its counter catches ranks at different operations. */
HPCTI_CHECK hpct_status_t hpcti_op_begin_window(hpct_ctx_t ctx, const char *name, int max_red,
                                                size_t total);
/* hpct_init: whether this host's ranks outnumber its CPUs (d->crowded; logged when they do). */
void hpcti_wait_setup(hpct_ctx_t ctx);
/* The operation in progress averages floats elements in all: where ranks outnumber CPUs and
 * that is above 32 KiB, its waits yield the CPU at once instead of spinning first. */
void hpcti_op_averages(hpct_ctx_t ctx, size_t floats);
/* Wait (deadline-bounded) for reqs [n] (may be 0) and the arrival tokens, then end the op. */
HPCTI_CHECK hpct_status_t hpcti_op_end(hpct_ctx_t ctx, MPI_Request *reqs, int n);
/* The current operation's deadline has passed outside MPI (an NCCL wait): mark the runtime
 * broken and record HPCT_ERR_TIMEOUT naming the operation and the ranks that did not arrive
 * (their arrival tokens), with where (e.g. "ncclAllGather") in the detail. */
HPCTI_CHECK hpct_status_t hpcti_op_timed_out(hpct_ctx_t ctx, const char *where);
/* Poll reqs [n] (and the reductions) until they complete or the deadline passes. */
HPCTI_CHECK hpct_status_t hpcti_wait_reqs(hpct_ctx_t ctx, MPI_Request *reqs, int n);

/* Start averaging buf [n] inside the current op; returns its index in *id. */
HPCTI_CHECK hpct_status_t hpcti_red_start(hpct_ctx_t ctx, float *buf, size_t n, int *id);
/* Advance every reduction of the current op as far as it can go without blocking. Best
 * effort, called between other work: an error here surfaces again in hpcti_red_wait. */
hpct_status_t hpcti_red_progress(hpct_ctx_t ctx);
/* Wait (deadline-bounded) until reduction id is done. */
HPCTI_CHECK hpct_status_t hpcti_red_wait(hpct_ctx_t ctx, int id);

/* The same as one MPI_Iallreduce(MPI_SUM) of buf [n] (n <= HPCTI_MAX_CHUNK) on the job's
 * communicator, then times 1/W when it completes (HPCTI_ALGO_MPI). */
HPCTI_CHECK hpct_status_t hpcti_red_start_mpi(hpct_ctx_t ctx, float *buf, size_t n, int *id);
/* Start averaging buf [n] with every rank receiving every peer's whole buffer and summing
 * all of it in rank order (per level on the hierarchical path): the bits of
 * hpcti_red_start in one round per level, n times the peers' count of scratch
 * (hpcti_allgather_scratch) (HPCTI_ALGO_ALLGATHER). */
HPCTI_CHECK hpct_status_t hpcti_red_start_allgather(hpct_ctx_t ctx, float *buf, size_t n, int *id);
size_t hpcti_allgather_scratch(const struct hpcti_dist *d, size_t n);
/* Start averaging buf [n] inside the current op by the algorithm of its size class: mpi and
 * p2p start a reduction (*id, waited for with hpcti_red_wait or hpcti_op_end); shm
 * averages through the node window before it returns (*id = -1), and so does shm/p2p
 * unless every local rank passed ordinary memory (then p2p, *id). The op must have room
 * for it: hpcti_algo_reductions_bound and hpcti_algo_scratch_bound of n in one part. */
HPCTI_CHECK hpct_status_t hpcti_red_start_sized(hpct_ctx_t ctx, float *buf, size_t n, int *id);
/* Start the reductions of buf [n], one per HPCTI_MAX_CHUNK floats (MPI counts are int):
 * point-to-point, or with mpi one MPI_Iallreduce each (*id: the last one's). */
HPCTI_CHECK hpct_status_t hpcti_red_start_chunks(hpct_ctx_t ctx, float *buf, size_t n, int mpi,
                                                 int *id);
/* Average buf [n] through the node window now (algo shm or shm/p2p), with its timeline span;
 * under shm/p2p, ordinary memory on every local rank of one node starts point-to-point
 * reductions instead (hpcti_red_start_chunks). */
HPCTI_CHECK hpct_status_t hpcti_window_now(hpct_ctx_t ctx, float *buf, size_t n, int algo, int *id);
/* hpcti_red_start_sized for a buffer that every rank averages in a gradient buffer (the
 * caller knows it of every rank, or agreed it): where several nodes share the window, in
 * place applies (above the one-barrier size) and the table sends the class point-to-point
 * (p2p, allgather), through the node window in place instead. The same bits. */
HPCTI_CHECK hpct_status_t hpcti_red_start_grads(hpct_ctx_t ctx, float *buf, size_t n, int *id);
/* 1 when hpcti_red_start_grads of n floats goes through the window where the table does not;
 * hpcti_algo_grads_upto: of some size up to n floats. */
int hpcti_algo_grads_window(const struct hpcti_dist *d, size_t n);
int hpcti_algo_grads_upto(const struct hpcti_dist *d, size_t n);
/* *all = 1 when held (this rank's buffers lie in gradient buffers) holds on every rank: an
 * integer MIN agreement, an operation named fn. */
HPCTI_CHECK hpct_status_t hpcti_agree_in_window(hpct_ctx_t ctx, const char *fn, int held, int *all);
/* 1 for the algorithms that go through the node window (shm, shm/p2p). */
int hpcti_algo_windowed(int algo);
/* Room for hpcti_red_start_sized of up to parts buffers of total floats in all. */
int hpcti_algo_reductions_bound(const struct hpcti_dist *d, size_t total, int parts);
size_t hpcti_algo_scratch_bound(const struct hpcti_dist *d, size_t total, int parts);

/* Start averaging buf [n] (one rank's block) over the cross-node communicator only; whole:
 * in one round, every rank receiving every peer's buf and summing all of it (the owner's
 * operations: the same bits; (cross size - 1) n floats of scratch). */
HPCTI_CHECK hpct_status_t hpcti_red_start_cross(hpct_ctx_t ctx, float *buf, size_t n, int whole,
                                                int *id);
/* Wait (deadline-bounded) until every counter *flags[i] (i < n, in the node window) reaches
 * want; on expiry the ranks world[i] whose counter is behind are named. */
HPCTI_CHECK hpct_status_t hpcti_wait_flags(hpct_ctx_t ctx, uint64_t *const *flags, const int *world,
                                           int n, uint64_t want);

/* Algorithm per size (algo.c): agree on HPCT_ALLREDUCE_ALGO or probe, at start-up (after
 * hpcti_node_win_setup); the algorithm for an average of n floats on this context; names. */
HPCTI_CHECK hpct_status_t hpcti_algo_setup(hpct_ctx_t ctx);
int hpcti_algo_for(const struct hpcti_dist *d, size_t n);
/* The probe's winner at a class of n floats: the index into cand [nc] of the fastest time in
 * best [nc] (seconds; 1e30: not timed), the first candidate (the library's own path) on a
 * tie; shm/p2p keeps a class of 1 MiB or more unless another is over 10 % faster. */
int hpcti_algo_pick(const int *cand, const double *best, int nc, size_t n);
const char *hpcti_algo_name(int algo);
void hpcti_algo_format(const struct hpcti_algo_table *t, char *out, size_t cap);

/* Node window (node_win.c): decide at start-up whether the node-local phase uses it. */
HPCTI_CHECK hpct_status_t hpcti_node_win_setup(hpct_ctx_t ctx);
/* Average host buf [n] through the node window (inside hpcti_op_begin / hpcti_op_end). With
 * ordinary_p2p on one node, after a first counter barrier: when every local rank averages
 * ordinary memory, nothing is averaged and *ordinary = 1 (the caller goes point-to-point). */
HPCTI_CHECK hpct_status_t hpcti_node_win_allreduce(hpct_ctx_t ctx, float *buf, size_t n,
                                                   int ordinary_p2p, int *ordinary);
/* Chunks hpcti_node_win_allreduce will need for n floats (reductions to reserve), and the
 * elements of scratch to reserve for them. */
int hpcti_node_win_chunks(const struct hpcti_dist *d, size_t n);
size_t hpcti_node_win_scratch(const struct hpcti_dist *d, size_t n);
/* Receive room (floats) beyond one block per chunk that the whole cross-node steps of an
 * average of n floats through the window take (0 with one or two nodes). */
size_t hpcti_node_win_whole_room(const struct hpcti_dist *d, size_t n);
/* 1 when an average of n floats goes through the window (set up, n > 0, not above
 * HPCT_NODE_SHM_MAX_BYTES). */
int hpcti_node_win_takes(const struct hpcti_dist *d, size_t n);
/* 1 when the window already holds chunks of an average of n floats (no allocation, whose
 * MPI_Ibarrier cannot tell who is missing: an operation that allocates keeps its tokens). */
int hpcti_node_win_ready(const struct hpcti_dist *d, size_t n);
/* Free the window state; with collective, also the window and its communicator (MPI calls
 * collective over the node: only while MPI runs and no collective timed out). */
void hpcti_node_win_free(struct hpcti_dist *d, int collective);
/* Give g a shared window of g->count floats per local rank (collective over the node, inside
 * an operation: deadline-bounded barriers around MPI_Win_allocate_shared); g->buf is this
 * rank's part, zeroed. */
HPCTI_CHECK hpct_status_t hpcti_node_win_grads(hpct_ctx_t ctx, struct hpcti_grads *g);
/* Free g's window (collective: MPI_Win_free over the node) or only the local state. */
void hpcti_node_win_grads_free(struct hpcti_grads *g, int collective);

/* Gradient buffers (grads.c): a zeroed buffer of count floats, in a shared window where the
 * node window is set up (collective over the context's ranks, an operation named fn); give
 * it back (local); free them all at teardown (collective as hpcti_node_win_free). */
HPCTI_CHECK hpct_status_t hpcti_grads_alloc(hpct_ctx_t ctx, const char *fn, size_t count,
                                            float **out);
void hpcti_grads_release(hpct_ctx_t ctx, float *buf);
/* 1 when a gradient buffer's shared window holds all of buf [n] (node_win.c). */
int hpcti_node_win_holds(const struct hpcti_dist *d, const float *buf, size_t n);
/* The gradient buffer in use whose memory starts at buf, or NULL. */
struct hpcti_grads *hpcti_grads_lent(const struct hpcti_dist *d, const float *buf);
void hpcti_grads_free_all(struct hpcti_dist *d, int collective);

/* Average host buf [n] over all ranks as one operation named fn (hpct_allreduce_mean): by
 * the algorithm of its size class, or through the window in place where every rank's buf
 * lies in a gradient buffer and hpcti_algo_grads_window holds (agreed first). */
HPCTI_CHECK hpct_status_t hpcti_host_allreduce_mean(hpct_ctx_t ctx, const char *fn, float *buf,
                                                    size_t n);
/* The same by algorithm algo, with no agreement (the probe's timed calls). */
HPCTI_CHECK hpct_status_t hpcti_host_average(hpct_ctx_t ctx, const char *fn, float *buf, size_t n,
                                             int algo);
/* Average buf [n] in the backend's memory as one operation named fn (device_avg.c): on cuda,
 * NCCL inside the node and MPI across (hierarchical), else staged through pinned host memory
 * and the host engine; on cpu, hpcti_host_allreduce_mean. */
HPCTI_CHECK hpct_status_t hpcti_device_allreduce_mean(hpct_ctx_t ctx, const char *fn, float *buf,
                                                      size_t n);
/* The same inside an operation already begun (room reserved: hpcti_device_reductions(n)
 * reductions and n elements); returns when buf holds the mean. */
HPCTI_CHECK hpct_status_t hpcti_device_average_in_op(hpct_ctx_t ctx, float *buf, size_t n);
/* 1 when device averages can be queued without waiting (NCCL in the node; across nodes the
 * host phase is progressed between enqueues), so backward overlaps them: open the operation
 * with hpcti_device_overlap_begin (room for layers buffers of total floats), enqueue each
 * buffer, then wait once (deadline-bounded) before hpcti_op_end. */
int hpcti_device_can_overlap(hpct_ctx_t ctx);
HPCTI_CHECK hpct_status_t hpcti_device_overlap_begin(hpct_ctx_t ctx, const char *name, int layers,
                                                     size_t total);
/* Free device_avg.c's state (hpct_finalize). */
void hpcti_device_avg_release(hpct_ctx_t ctx);
#ifdef HPCT_HAVE_NCCL
/* hpct_init, on every rank: the node's NCCL communicator (hpcti_nccl_open, node rank 0's
 * unique id and every rank's setup verdict exchanged in one deadline-bounded operation,
 * hpcti_nccl_join); on error *out is NULL and the detail is recorded. */
HPCTI_CHECK hpct_status_t hpcti_device_nccl_start(hpct_ctx_t ctx, hpcti_nccl_t **out);
#endif
HPCTI_CHECK hpct_status_t hpcti_device_average_enqueue(hpct_ctx_t ctx, float *buf, size_t n);
HPCTI_CHECK hpct_status_t hpcti_device_average_wait(hpct_ctx_t ctx);
/* Instead of the wait, where this rank stopped enqueueing early (backward failed with s): the
 * NCCL communicator, whose sequence is now short of the peers', is aborted (later averages
 * are staged); returns s. */
HPCTI_CHECK hpct_status_t hpcti_device_average_abandon(hpct_ctx_t ctx, hpct_status_t s);
int hpcti_device_reductions(size_t n);

/* fp32 <-> 16-bit wire formats (HPCT_TRANSPORT_BF16 / _FP16). */
void hpcti_to_wire(int transport, const float *x, uint16_t *w, size_t n);
void hpcti_from_wire(int transport, const uint16_t *w, float *x, size_t n);

/* Check every environment setting of the registry (lib/core/tunables.c) and
 * HPCT_ALLREDUCE_ALGO's grammar: the first bad one fails with HPCT_ERR_INVALID_ARG, named
 * with its value and accepted values on ctx (may be NULL; prefix before it) and in detail. */
HPCTI_CHECK hpct_status_t hpcti_env_check(hpct_ctx_t ctx, const char *prefix, char *detail,
                                          size_t len);

#endif
