/* nccl_node.h: the node-local NCCL piece of the hierarchical allreduce on GPUs (built only with
 * --with-nccl, where config.h defines HPCT_HAVE_NCCL; not installed).
 *
 * Usage (one NCCL communicator per node communicator, on a context using the cuda backend):
 *
 *     hpcti_nccl_t *nc;
 *     s = hpcti_nccl_create(ctx, node_comm, &nc);                  // collective over node_comm
 *     s = hpcti_nccl_hier_allreduce_mean(nc, grads_dev, n, cross_comm, world_size);
 *     hpcti_nccl_destroy(nc);                                       // collective over node_comm
 *
 * node_comm: the MPI ranks of one node (each on its own GPU: the device the cuda backend of
 * ctx picked, which must be current on the calling thread). cross_comm: the ranks with the same
 * node rank on every node (MPI_COMM_NULL or a 1-rank communicator on a single node). Every node
 * must hold the same number of ranks (checked once per cross_comm, with an error on all ranks).
 */
#ifndef HPCTI_NCCL_NODE_H
#define HPCTI_NCCL_NODE_H

#include "../core/core.h"

#include <mpi.h>

/* An NCCL communicator over one node's ranks plus its stream and staging buffers. */
typedef struct hpcti_nccl hpcti_nccl_t;

/* Collective over node_comm: node rank 0 makes an NCCL unique id, MPI_Bcast sends it, every
 * rank joins with ncclCommInitRank. ctx must use the cuda backend. On error *out is NULL and
 * the detail (MPI or NCCL error string, node rank) is recorded on ctx. Local setup failures
 * are agreed over the node first; a rank whose ncclCommInitRank itself fails can still leave
 * the others waiting inside NCCL (NCCL's own timeouts apply). */
hpct_status_t hpcti_nccl_create(hpct_ctx_t ctx, MPI_Comm node_comm, hpcti_nccl_t **out);

/* Collective over the node: free the NCCL communicator, stream and buffers; NULL is accepted. */
void hpcti_nccl_destroy(hpcti_nccl_t *nc);

/* buf [count] fp32 on the device becomes the mean over all world_size ranks of every rank's buf:
 * ncclReduceScatter inside the node (count padded with zeros to a multiple of the node size)
 * -> MPI_Allreduce(SUM) of this rank's shard over cross_comm, staged through pinned host memory
 * (no CUDA-aware MPI needed) and divided by world_size -> ncclAllGather inside the node.
 * Collective over the node and cross_comm with the same count everywhere; count 0 returns at
 * once. Staging buffers grow on the first call with a larger count, never on later ones.
 * Returns when buf holds the result. Errors: HPCT_ERR_INVALID_ARG (bad argument),
 * HPCT_ERR_COMM (NCCL or MPI failed, or node sizes differ), HPCT_ERR_NO_MEMORY. */
hpct_status_t hpcti_nccl_hier_allreduce_mean(hpcti_nccl_t *nc, float *buf, size_t count,
                                             MPI_Comm cross_comm, int world_size);

#endif
