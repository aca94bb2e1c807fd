/* reduce.h: averages by point-to-point exchanges (reduce.c: reduce-scatter and allgather,
 * flat or hierarchical) or by one MPI_Iallreduce, inside an operation of the runtime; the
 * 16-bit wire formats (wire.c). */
#ifndef HPCTI_REDUCE_H
#define HPCTI_REDUCE_H

#include "avg.h"

/* One phase of an average on one communicator: a direct reduce-scatter or allgather of a
 * vector (every rank exchanges blocks with every other rank point-to-point at once), or,
 * from d->avg->tree_min (tree_whole_min) ranks, a whole average of it in rounds of pairwise
 * exchanges (recursive halving and doubling, reduce.c). */
struct hpcti_phase {
    MPI_Comm comm;
    int size, me; /* of comm */
    void *vec;    /* [count] wire elements, split into size blocks */
    size_t count;
    int gather; /* 0: reduce-scatter (own block = sum in rank order), 1: allgather,
                 * HPCTI_WHOLE: every rank sums the whole vector in rank order */
    int scale;  /* reduce-scatter only: multiply the own block by 1/world size */
    int tree;   /* 1: rounds of pairwise exchanges (gather 0: halving then doubling; WHOLE:
                 * every round adds the partner's whole vector), the vector averaged whole */
};

#define HPCTI_WHOLE 2

/* One in-flight average of buf [n] over all ranks: up to 4 phases (node reduce-scatter,
 * cross reduce-scatter, cross allgather, node allgather; a tree phase in place of the
 * cross pair), or 2 on the flat path (or one tree phase). */
struct hpcti_reduction {
    float *buf; /* [n] host fp32, averaged in place */
    size_t n;
    int index;         /* position in the operation: part of every message tag */
    void *wire;        /* [n] 16-bit copy when the transport is reduced, else buf */
    void *slots;       /* receive blocks of the current phase: [(size - 1) * block] */
    MPI_Request *reqs; /* [2 hpcti_direct_span] sends and receives of the current phase */
    int nreq;
    struct hpcti_phase phase[4];
    int nphase, cur; /* cur == nphase: done */
    int round;       /* of a tree phase: the exchange in flight */
    int mpi;         /* 1: one MPI_Iallreduce (reqs[0]) of the fp32 sum, then times 1/W */
    double t0;       /* timeline: when it started (0: no timeline) */
};

/* Start averaging buf [n] inside the current op; returns its index in *id. */
HPCTI_CHECK hpct_status_t hpcti_red_start(hpct_ctx_t ctx, float *buf, size_t n, int *id);
/* Advance every reduction of the current op as far as it can go without blocking. Best
 * effort, called between other work: an error here surfaces again in hpcti_red_wait. */
hpct_status_t hpcti_red_progress(hpct_ctx_t ctx);
/* The same as one MPI_Iallreduce(MPI_SUM) of buf [n] (n <= HPCTI_MAX_CHUNK) on the job's
 * communicator, then times 1/W when it completes (HPCTI_ALGO_MPI). */
HPCTI_CHECK hpct_status_t hpcti_red_start_mpi(hpct_ctx_t ctx, float *buf, size_t n, int *id);
/* Start averaging buf [n] with every rank receiving every peer's whole buffer and summing
 * all of it in rank order (per level on the hierarchical path): the bits of
 * hpcti_red_start in one round per level, n times the peers' count of scratch
 * (hpcti_allgather_scratch) (HPCTI_ALGO_ALLGATHER). */
HPCTI_CHECK hpct_status_t hpcti_red_start_allgather(hpct_ctx_t ctx, float *buf, size_t n, int *id);
size_t hpcti_allgather_scratch(const struct hpcti_dist *d, size_t n);
/* 1 when the cross-node phases (or, on the flat path across nodes, the job's) go by rounds
 * of pairwise exchanges: from d->avg->tree_min ranks on that communicator (whole: the
 * phases in which every rank sums the whole vector, from tree_whole_min). */
int hpcti_cross_tree(const struct hpcti_dist *d, int whole);
/* tree_min (whole: tree_whole_min) of a new context: 128 (16), or HPCT_TEST_TREE_MIN under
 * HPCT_TEST_HOOKS=1 for both. */
int hpcti_red_tree_min(int whole);
/* Start averaging buf [n] (one rank's block) over the cross-node communicator only; whole:
 * in one round, every rank receiving every peer's buf and summing all of it (the owner's
 * operations: the same bits; (cross size - 1) n floats of scratch). */
HPCTI_CHECK hpct_status_t hpcti_red_start_cross(hpct_ctx_t ctx, float *buf, size_t n, int whole,
                                                int *id);
/* The engine's hooks in the runtime's operations (d->work): room for max_red reductions
 * covering total elements, and whether reduction id (< 0: every one) is done. */
HPCTI_CHECK hpct_status_t hpcti_red_reserve(hpct_ctx_t ctx, int max_red, size_t total);
int hpcti_red_done(const struct hpcti_dist *d, int id);

/* fp32 <-> 16-bit wire formats (HPCT_TRANSPORT_BF16 / _FP16). */
void hpcti_to_wire(int transport, const float *x, uint16_t *w, size_t n);
void hpcti_from_wire(int transport, const uint16_t *w, float *x, size_t n);

#endif
