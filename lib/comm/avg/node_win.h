/* node_win.h: the node's MPI-3 shared-memory window (node_win.c): averages through it, and
 * the shared windows of gradient buffers that it averages in place. */
#ifndef HPCTI_NODE_WIN_H
#define HPCTI_NODE_WIN_H

#include "avg.h"

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
#ifdef HPCT_SIM
    struct hpcti_sim_pay halves; /* the SMPI build's halves: shared, not in the window */
#endif
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

/* 1 when a gradient buffer's shared window holds all of buf [n] (node_win.c). */
int hpcti_node_win_holds(const struct hpcti_dist *d, const float *buf, size_t n);
#endif
