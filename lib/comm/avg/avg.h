/* avg.h: the averaging engine of lib/comm (avg/): its state, d->avg of a context's runtime,
 * and the size classes that pick an algorithm. The engine lies on the runtime
 * (../runtime/runtime.h) and is never included by it. One header per part: reduce.h (point-to-
 * point and MPI reductions, wire formats), node_win.h (the node window), grads.h (gradient
 * buffers), algo.h (the algorithm per size, host averages), device_avg.h (device buffers:
 * NCCL inside the node), vsum.h (sum kernels). */
#ifndef HPCTI_AVG_H
#define HPCTI_AVG_H

#include "config.h" /* HPCT_HAVE_NCCL: every includer must see the same struct hpcti_avg */
#include "../runtime/runtime.h"
#ifdef HPCT_HAVE_NCCL
#include "nccl_node.h" /* device buffers: NCCL inside the node, MPI across */
#endif

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

/* The engine's state of a context (d->avg), made by hpcti_avg_attach at hpct_init. */
struct hpcti_avg {
    int transport;               /* HPCT_TRANSPORT_* */
    struct hpcti_node_win *nwin; /* set: the node-local phase goes through the shared window */
    struct hpcti_grads *grads;   /* gradient buffers handed out (grads.c) */
    uint64_t grads_made;         /* gradient buffers allocated so far */
    size_t fusion_floats;        /* fusion slot size in elements */
    int tag_space;               /* tags 1000 .. 1000 + tag_space - 1 carry reductions */
    int tree_min;       /* ranks of a cross-node (flat: job) phase from which it goes by rounds */
    int tree_whole_min; /* the same for a phase in which every rank sums the whole vector */
    /* the algorithm per size class of host averages, the same on every rank (algo.c) */
    struct hpcti_algo_table algo;
    /* the reductions of the operation in progress (reduce.c) */
    struct hpcti_reduction *red;
    int nred, cap_red;
    char *scratch; /* shards, counts, wire copies of the current operation */
    size_t scratch_cap, scratch_used;
#ifdef HPCT_SIM
    struct hpcti_sim_pay sim_pay; /* the SMPI build's payload slices (lib/core/sim.h) */
#endif
    float *fusion; /* [fusion_cap]: two fusion slots */
    size_t fusion_cap;
    int fusion_shared; /* 1: fusion is a buffer of hpcti_grads_alloc (averaged in place) */
    float *stage;      /* [stage_cap] pinned host staging of device averages (ops->alloc_host) */
    size_t stage_cap;
    float *dev_fusion; /* [dev_fusion_cap] device fusion slot of device gradients (ops->alloc) */
    size_t dev_fusion_cap;
    void *dev_queue; /* device_avg.c: layers of the overlapped device average across nodes */
#ifdef HPCT_HAVE_NCCL
    hpcti_nccl_t *nccl; /* node-local NCCL communicator (cuda contexts whose node phase it
                           takes: made by hpct_init, NULL otherwise) */
#endif
};

/* hpct_init, as soon as the runtime's state d exists: d->avg (zeroed) and d->work, the
 * engine's part in every operation; HPCT_ERR_NO_MEMORY when d->avg cannot be allocated. */
HPCTI_CHECK hpct_status_t hpcti_avg_attach(struct hpcti_dist *d);

#endif
