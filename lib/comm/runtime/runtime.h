/* runtime.h: the distributed runtime of a context (lib/comm/runtime): communicators, the
 * deadline-bounded operation with its arrival tokens and waits, liveness. The averaging
 * engine (lib/comm/avg) builds on it; the runtime never includes the engine, and reaches the
 * engine's work inside an operation only through the hooks of struct hpcti_op_work. */
#ifndef HPCTI_RUNTIME_H
#define HPCTI_RUNTIME_H

#include "../../bootstrap/bootstrap.h"
#include "../../core/sim.h" /* the SMPI build's collectives */
#include "../../data/comms.h"

#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

struct hpcti_dist;
struct hpcti_avg; /* the averaging engine's state (lib/comm/avg/avg.h) */

/* The engine's part in every operation, set by hpcti_avg_attach at hpct_init: room for its
 * reductions when an operation begins (after the operation's own checks), and their
 * progress and completion while the operation waits. */
struct hpcti_op_work {
    /* room for max_red reductions covering total elements */
    hpct_status_t (*reserve)(hpct_ctx_t ctx, int max_red, size_t total);
    /* advance every reduction as far as it goes without blocking */
    hpct_status_t (*progress)(hpct_ctx_t ctx);
    /* 1 when reduction id of the operation is done (id < 0: every one) */
    int (*done)(const struct hpcti_dist *d, int id);
};

/* Liveness checks of the operation in progress (live.c). */
struct hpcti_live {
    MPI_Request ping_req;  /* the standing receive of a ping from any rank */
    uint64_t ping_in[2];   /* a ping: the asker's operation number and rank */
    MPI_Request *pong_req; /* [size] answers sent to each rank */
    uint64_t *pong_out;    /* [3 size] answers: the asker's operation echoed, this rank's, step */
    MPI_Request *ask_req;  /* [2 size] receives of answers from, then pings to, each rank */
    uint64_t *ask_in;      /* [3 size] answers received (as pong_out) */
    uint64_t ping_out[2];  /* this rank's ping: operation number, rank */
    unsigned char *silent; /* [size] 1: asked in this operation, no answer yet (or a late one) */
    double *heard_t;       /* [size] when each rank's answer came (hpcti_now; 0: not yet) */
    uint64_t asked_op;     /* the operation that asked (0: none) */
    double ask_t;          /* when it asked (hpcti_now) */
    double self_gap_s;     /* the longest gap between polls of this operation, if long */
    double ran_t;          /* when this rank last took part in it: its start, a wait's end */
    int found_stopped;     /* the last timeout named silent ranks as stopped */
    int ready;             /* set-up done: the requests above are valid */
};

/* The distributed runtime of a context, in comm's slot of it (hpcti_dist): core holds the
 * pointer only. */
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
    double ready_unix;         /* Unix seconds when hpct_init finished its communicators */
    long step_now;             /* the training step this rank is in (hpcti_dist_set_step; 0:
                                  none), sent with the arrival tokens for hang reports */
    struct hpcti_avg *avg;     /* the averaging engine's state (lib/comm/avg) */
    struct hpcti_op_work work; /* the engine's part in each operation */
    /* the operation in progress */
    const char *op_name;
    uint64_t op_seq;
    uint64_t tok_out[2]; /* this rank's arrival token: operation number, step_now */
    double op_start;
    double spin_s;       /* of each wait spent spinning before it yields (hpcti_op_averages) */
    int crowded;         /* 1: this host's ranks outnumber its CPUs (hpcti_wait_setup) */
    unsigned long moves; /* requests completed and phases finished so far (waits back off idle) */
    int in_op;
    int op_tokens;        /* 0: arrivals through the node window's counters (one node), no tokens */
    int npartners;        /* the ranks this one exchanges arrival tokens with (O(log size)) */
    int *partner;         /* [npartners] their ranks, ascending (hpcti_token_partners) */
    MPI_Request *tok_req; /* [2 npartners]: receives from, then sends to, each partner */
    uint64_t *tok_in;     /* [2 npartners] tokens received (operation number, step) */
    uint64_t *tok_last;   /* [2 npartners] each partner's token of the last completed operation */
    const char *last_op_name;      /* the name of the last completed operation with tokens */
    struct hpcti_live live;        /* liveness checks inside an operation (live.c) */
    uint64_t test_stop_op;         /* test hook HPCT_TEST_STOP_IN_OP=OP,RANK on that rank: it stops
                                      itself (SIGSTOP) once operation #OP has started (0: never) */
    double wait_s;                 /* seconds spent waiting for collectives */
    long ops;                      /* averaging operations */
    hpcti_data_comms_t data_comms; /* lent to lib/data's stores (hpcti_data_use_comms) */
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
/* The distributed state of ctx, kept in comm's slot of it; NULL for a context of
 * hpct_ctx_create (or once hpct_finalize has begun). */
struct hpcti_dist *hpcti_dist(const struct hpct_ctx *ctx);
/* Keep d as ctx's distributed state (NULL: none). */
HPCTI_CHECK hpct_status_t hpcti_dist_attach(hpct_ctx_t ctx, struct hpcti_dist *d);

/* When hpct_init finished ctx's communicators (Unix seconds), 0 for a context without a
 * distributed runtime (hpct_ctx_create): restart records time the start-up with it. */
double hpcti_dist_ready_unix(hpct_ctx_t ctx);

/* The training step this rank is in from now on (lib/train, before each step's collectives);
 * nothing for a context without a distributed runtime. */
void hpcti_dist_set_step(hpct_ctx_t ctx, long step);

/* Record MPI error rc of `what` in the operation in progress as HPCT_ERR_COMM (the MPI error
 * string, the rank); the context is then broken: later collectives fail saying why. */
HPCTI_CHECK hpct_status_t hpcti_mpi_failed(hpct_ctx_t ctx, int rc, const char *what);
/* The arrival-token partners of rank among size ranks: (rank +- 2^k) mod size for 2^k < size,
 * without rank and repeats, ascending, into out [HPCTI_MAX_PARTNERS]; returns their count.
 * Symmetric and connected, so that partners with equal operation numbers mean all ranks
 * agree; every other rank when size <= 5. */
#define HPCTI_MAX_PARTNERS 64
int hpcti_token_partners(int rank, int size, int *out);
/* The index of rank p in d->partner, or -1 when p is not a partner. */
int hpcti_partner_index(const struct hpcti_dist *d, int p);
/* Start a collective operation named name: arrival tokens to and from each token partner;
 * room for max_red reductions of the engine covering total elements (work.reserve). */
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
/* Poll reqs [n] (and the engine's reductions: work.progress) until they complete or the
 * deadline passes. */
HPCTI_CHECK hpct_status_t hpcti_wait_reqs(hpct_ctx_t ctx, MPI_Request *reqs, int n);

/* Wait (deadline-bounded) until the engine's reduction id is done (work.done). */
HPCTI_CHECK hpct_status_t hpcti_red_wait(hpct_ctx_t ctx, int id);
/* Wait (deadline-bounded) until every counter *flags[i] (i < n, in the node window) reaches
 * want; on expiry the ranks world[i] whose counter is behind are named. */
HPCTI_CHECK hpct_status_t hpcti_wait_flags(hpct_ctx_t ctx, uint64_t *const *flags, const int *world,
                                           int n, uint64_t want);

#endif
