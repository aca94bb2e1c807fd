/* comms.h: the communicators lib/data's sample store uses, handed down by lib/comm at
 * hpct_init (not installed). */
#ifndef HPCTI_DATA_COMMS_H
#define HPCTI_DATA_COMMS_H

#include "../core/core.h"

/* As MPI Fortran handles (MPI_Comm_c2f), so that data names no comm type: lib/comm makes
 * them (dups of its own, for the store only) and frees them at hpct_finalize. */
typedef struct hpcti_data_comms {
    int valid;
    int world, node; /* MPI_Fint: the job, and the ranks of this rank's node */
    int rank, size;  /* in world */
    int local_rank, local_size, node_id, num_nodes;
    int uniform;              /* 1: every node holds local_size ranks */
    double node_memory_bytes; /* the smallest node's physical memory: AUTO choices agree */
    double deadline_s;        /* cfg.collective_timeout_s: bound of every store collective */
} hpcti_data_comms_t;

/* ctx's stores use c from now on (NULL: none); c stays lib/comm's, which keeps it alive until
 * it calls this again with NULL. */
HPCTI_CHECK hpct_status_t hpcti_data_use_comms(hpct_ctx_t ctx, const hpcti_data_comms_t *c);
/* The communicators of ctx's stores; one with valid 0 when there are none (hpct_ctx_create). */
const hpcti_data_comms_t *hpcti_data_comms(const struct hpct_ctx *ctx);

#endif
