/* fabric.h: hpct_doctor's fabric measurement (fabric.c): a timed allreduce inside each node
 * and timed exchanges between the nodes' first ranks, every rank given every result. */
#ifndef HPCTI_FABRIC_H
#define HPCTI_FABRIC_H

#include "../../core/core.h"

/* Nodes up to this many have every pair of them measured; more, only the ring of neighbours. */
#define HPCTI_FABRIC_ALL_PAIRS 16

struct hpcti_fabric {
    int nodes;      /* the context's nodes */
    int *leader;    /* [nodes] each node's first rank (local rank 0) */
    int *ranks;     /* [nodes] ranks on each node */
    int *node_of;   /* [ranks of the context] each rank's node */
    double *node_s; /* [nodes] seconds of one allreduce: each rank's median of the reps, the
                       slowest rank's of them; 0: a node of one rank */
    int links;      /* node pairs measured */
    int *link_a;    /* [links] the pair's nodes, link_a < link_b */
    int *link_b;
    double *link_s; /* [links] seconds of one exchange: the slower end's median of the reps */
    size_t bytes;   /* of each allreduce and exchange */
    int reps;       /* timed repetitions of each */
};

/* Measure: reps timed allreduces of bytes (after one untimed) on each node's communicator,
 * concurrently; then, in rounds where each node takes part in one pair at most, reps timed
 * exchanges of bytes both ways between the first ranks of each pair of nodes (all pairs up to
 * HPCTI_FABRIC_ALL_PAIRS nodes, else the ring); then every rank's times, gathered to all. Each
 * phase is one deadline-bounded operation. Test hook HPCT_TEST_SLOW_RANK=RANK,MS: that rank
 * sleeps MS milliseconds before each timed repetition it takes part in. Collective. */
HPCTI_CHECK hpct_status_t hpcti_fabric_measure(hpct_ctx_t ctx, size_t bytes, int reps,
                                               struct hpcti_fabric *f);
void hpcti_fabric_free(struct hpcti_fabric *f);

/* The median of x [n] (n > 0; the mean of the middle two for even n); x is left sorted. */
double hpcti_median(double *x, int n);

#endif
