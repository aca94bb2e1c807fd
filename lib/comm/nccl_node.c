/* nccl_node.c: NCCL communicator over a node's MPI ranks and the GPU hierarchical allreduce
 * (reduce-scatter in the node, MPI across nodes through host memory, all-gather in the node). */
#include "config.h"
#include "nccl_node.h"
#include "../device/ops.h"

#include <cuda_runtime.h>
#include <limits.h>
/* The NCCL library's header; it declares f() prototypes. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop
#include <stdlib.h>

struct hpcti_nccl {
    hpct_ctx_t ctx;
    MPI_Comm node; /* private duplicate of the node communicator */
    int node_rank, node_size;
    ncclComm_t comm;
    cudaStream_t stream;    /* blocking stream: ordered after the default stream's kernels */
    float *padded;          /* [shard * node_size] device, used when count is not a multiple */
    float *shard;           /* [shard] device */
    float *host;            /* [shard] pinned host staging */
    size_t shard_cap;       /* elements the three buffers hold per shard */
    MPI_Comm checked_cross; /* cross communicator whose node sizes were checked */
};

static hpct_status_t nccl_fail(hpcti_nccl_t *nc, const char *what, ncclResult_t r)
{
    return hpcti_error(nc->ctx, HPCT_ERR_COMM, "nccl: %s on node rank %d of %d: %s", what,
                       nc->node_rank, nc->node_size, ncclGetErrorString(r));
}

static hpct_status_t cuda_fail(hpcti_nccl_t *nc, const char *what, cudaError_t e)
{
    return hpcti_error(nc->ctx, HPCT_ERR_COMM, "nccl: %s on node rank %d of %d: %s", what,
                       nc->node_rank, nc->node_size, cudaGetErrorString(e));
}

static hpct_status_t mpi_fail(hpcti_nccl_t *nc, const char *what, int err)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(err, msg, &len) != MPI_SUCCESS) len = 0;
    msg[len] = '\0';
    return hpcti_error(nc->ctx, HPCT_ERR_COMM, "nccl: %s on node rank %d of %d: %s", what,
                       nc->node_rank, nc->node_size, msg);
}

/* Node rank 0 makes the unique id and sends it (with its status) to the node; all join. */
static hpct_status_t join_node(hpcti_nccl_t *nc)
{
    struct {
        int ok;
        ncclUniqueId id;
    } msg = {1, {{0}}};
    ncclResult_t r = ncclSuccess;
    if (nc->node_rank == 0 && (r = ncclGetUniqueId(&msg.id)) != ncclSuccess) msg.ok = 0;
    int err = MPI_Bcast(&msg, (int)sizeof msg, MPI_BYTE, 0, nc->node);
    if (err != MPI_SUCCESS) return mpi_fail(nc, "MPI_Bcast of the NCCL unique id", err);
    if (!msg.ok)
        return nc->node_rank == 0
                   ? nccl_fail(nc, "ncclGetUniqueId", r)
                   : hpcti_error(nc->ctx, HPCT_ERR_COMM,
                                 "nccl: node rank 0 could not make an NCCL unique id "
                                 "(seen on node rank %d)",
                                 nc->node_rank);
    r = ncclCommInitRank(&nc->comm, nc->node_size, msg.id, nc->node_rank);
    if (r != ncclSuccess) {
        nc->comm = NULL;
        return nccl_fail(nc, "ncclCommInitRank", r);
    }
    return HPCT_SUCCESS;
}

hpct_status_t hpcti_nccl_create(hpct_ctx_t ctx, MPI_Comm node_comm, hpcti_nccl_t **out)
{
    if (!ctx) return HPCT_ERR_INVALID_ARG;
    if (!out) return hpcti_error(ctx, HPCT_ERR_INVALID_ARG, "hpcti_nccl_create: out is NULL");
    *out = NULL;
    if (ctx->ops != &hpcti_cuda_ops)
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                           "hpcti_nccl_create: the context uses the %s backend, NCCL needs cuda",
                           ctx->ops->name);
    if (node_comm == MPI_COMM_NULL)
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                           "hpcti_nccl_create: node_comm is MPI_COMM_NULL");
    hpcti_nccl_t *nc = hpcti_calloc(ctx, 1, sizeof *nc, "an NCCL communicator");
    if (!nc) return HPCT_ERR_NO_MEMORY;
    nc->ctx = ctx;
    nc->node = MPI_COMM_NULL;
    nc->checked_cross = MPI_COMM_NULL;
    hpct_status_t s = HPCT_SUCCESS;
    int err = MPI_Comm_dup(node_comm, &nc->node);
    if (err != MPI_SUCCESS) {
        nc->node = MPI_COMM_NULL;
        s = mpi_fail(nc, "MPI_Comm_dup of the node communicator", err);
    }
    if (!s) {
        MPI_Comm_rank(nc->node, &nc->node_rank);
        MPI_Comm_size(nc->node, &nc->node_size);
        cudaError_t e = cudaStreamCreate(&nc->stream);
        if (e != cudaSuccess) {
            nc->stream = NULL;
            s = cuda_fail(nc, "cudaStreamCreate", e);
        }
    }
    /* The node agrees on local success first, so no rank waits for one that gave up. */
    int ok = !s, all_ok = 0;
    err = MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, node_comm);
    if (!s && err != MPI_SUCCESS) s = mpi_fail(nc, "MPI_Allreduce of the setup status", err);
    if (!s && !all_ok)
        s = hpcti_error(ctx, HPCT_ERR_COMM,
                        "nccl: another rank of the node failed to set up "
                        "(seen on node rank %d)",
                        nc->node_rank);
    if (!s) s = join_node(nc);
    if (s) {
        hpcti_nccl_destroy(nc);
        return s;
    }
    hpcti_log(ctx, HPCT_LOG_INFO, "nccl: node rank %d of %d joined", nc->node_rank, nc->node_size);
    *out = nc;
    return HPCT_SUCCESS;
}

static void free_buffers(hpcti_nccl_t *nc)
{
    cudaFree(nc->padded);
    cudaFree(nc->shard);
    cudaFreeHost(nc->host);
    nc->padded = nc->shard = nc->host = NULL;
    nc->shard_cap = 0;
}

void hpcti_nccl_destroy(hpcti_nccl_t *nc)
{
    if (!nc) return;
    if (nc->stream) cudaStreamSynchronize(nc->stream);
    if (nc->comm) ncclCommDestroy(nc->comm);
    free_buffers(nc);
    if (nc->stream) cudaStreamDestroy(nc->stream);
    if (nc->node != MPI_COMM_NULL) MPI_Comm_free(&nc->node);
    free(nc);
}

/* Make the staging buffers hold shard elements per rank (grows, never shrinks). */
static hpct_status_t ensure_buffers(hpcti_nccl_t *nc, size_t shard)
{
    if (shard <= nc->shard_cap) return HPCT_SUCCESS;
    free_buffers(nc);
    size_t bytes = sizeof(float) * shard;
    cudaError_t e = cudaMalloc((void **)&nc->padded, bytes * (size_t)nc->node_size);
    if (e == cudaSuccess) e = cudaMalloc((void **)&nc->shard, bytes);
    if (e == cudaSuccess) e = cudaMallocHost((void **)&nc->host, bytes);
    if (e != cudaSuccess) {
        free_buffers(nc);
        return hpcti_error(
            nc->ctx, HPCT_ERR_NO_MEMORY,
            "nccl: cannot allocate staging for %zu floats per shard on node rank %d: %s", shard,
            nc->node_rank, cudaGetErrorString(e));
    }
    nc->shard_cap = shard;
    return HPCT_SUCCESS;
}

/* Once per cross communicator: every node must hold node_size ranks, else the shards of
 * different nodes would not line up. The verdict is shared inside the node so all ranks agree. */
static hpct_status_t check_node_sizes(hpcti_nccl_t *nc, MPI_Comm cross)
{
    if (cross == MPI_COMM_NULL || cross == nc->checked_cross) return HPCT_SUCCESS;
    int mine[2] = {nc->node_size, -nc->node_size}, all[2], bad, any_bad;
    int err = MPI_Allreduce(mine, all, 2, MPI_INT, MPI_MAX, cross);
    if (err != MPI_SUCCESS) return mpi_fail(nc, "MPI_Allreduce of the node sizes", err);
    bad = all[0] != nc->node_size || -all[1] != nc->node_size;
    err = MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, nc->node);
    if (err != MPI_SUCCESS) return mpi_fail(nc, "MPI_Allreduce of the node-size check", err);
    if (any_bad)
        return hpcti_error(nc->ctx, HPCT_ERR_COMM,
                           "nccl: nodes hold different numbers of ranks (this node %d, others "
                           "between %d and %d); the hierarchical allreduce needs equal nodes",
                           nc->node_size, -all[1], all[0]);
    nc->checked_cross = cross;
    return HPCT_SUCCESS;
}

/* Cross-node part on the host: sum this rank's shard over cross, then divide by world_size. */
static hpct_status_t cross_node_mean(hpcti_nccl_t *nc, size_t shard, MPI_Comm cross, int world_size)
{
    cudaError_t e = cudaMemcpyAsync(nc->host, nc->shard, sizeof(float) * shard,
                                    cudaMemcpyDeviceToHost, nc->stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(nc->stream);
    if (e != cudaSuccess) return cuda_fail(nc, "copying the reduced shard to the host", e);
    if (cross != MPI_COMM_NULL) {
        int err = MPI_Allreduce(MPI_IN_PLACE, nc->host, (int)shard, MPI_FLOAT, MPI_SUM, cross);
        if (err != MPI_SUCCESS) return mpi_fail(nc, "MPI_Allreduce of the shard across nodes", err);
    }
    float n = (float)world_size;
    for (size_t i = 0; i < shard; i++) nc->host[i] /= n;
    e = cudaMemcpyAsync(nc->shard, nc->host, sizeof(float) * shard, cudaMemcpyHostToDevice,
                        nc->stream);
    return e == cudaSuccess ? HPCT_SUCCESS : cuda_fail(nc, "copying the averaged shard back", e);
}

static hpct_status_t check_args(hpcti_nccl_t *nc, const float *buf, size_t count, int world_size)
{
    const char *why = NULL;
    if (!buf && count)
        why = "buf is NULL";
    else if (world_size < nc->node_size)
        why = "world_size is smaller than the node size";
    else if ((count + (size_t)nc->node_size - 1) / (size_t)nc->node_size > INT_MAX)
        why = "count / node size exceeds INT_MAX (MPI count)";
    if (!why) return HPCT_SUCCESS;
    return hpcti_error(
        nc->ctx, HPCT_ERR_INVALID_ARG,
        "hpcti_nccl_hier_allreduce_mean: %s (count %zu, world_size %d, node rank %d of %d)", why,
        count, world_size, nc->node_rank, nc->node_size);
}

hpct_status_t hpcti_nccl_hier_allreduce_mean(hpcti_nccl_t *nc, float *buf, size_t count,
                                             MPI_Comm cross_comm, int world_size)
{
    if (!nc) return HPCT_ERR_INVALID_ARG;
    hpct_status_t s = check_args(nc, buf, count, world_size);
    if (!s) s = check_node_sizes(nc, cross_comm);
    if (s || count == 0) return s;
    size_t shard = (count + (size_t)nc->node_size - 1) / (size_t)nc->node_size;
    size_t total = shard * (size_t)nc->node_size;
    if ((s = ensure_buffers(nc, shard))) return s;
    /* full [total]: buf itself when count divides evenly, else a zero-padded copy. */
    float *full = buf;
    cudaError_t e = cudaSuccess;
    if (total != count) {
        full = nc->padded;
        e = cudaMemcpyAsync(full, buf, sizeof(float) * count, cudaMemcpyDeviceToDevice, nc->stream);
        if (e == cudaSuccess)
            e = cudaMemsetAsync(full + count, 0, sizeof(float) * (total - count), nc->stream);
        if (e != cudaSuccess) return cuda_fail(nc, "padding the gradient buffer", e);
    }
    ncclResult_t r =
        ncclReduceScatter(full, nc->shard, shard, ncclFloat, ncclSum, nc->comm, nc->stream);
    if (r != ncclSuccess) return nccl_fail(nc, "ncclReduceScatter", r);
    if ((s = cross_node_mean(nc, shard, cross_comm, world_size))) return s;
    r = ncclAllGather(nc->shard, full, shard, ncclFloat, nc->comm, nc->stream);
    if (r != ncclSuccess) return nccl_fail(nc, "ncclAllGather", r);
    if (full != buf)
        e = cudaMemcpyAsync(buf, full, sizeof(float) * count, cudaMemcpyDeviceToDevice, nc->stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(nc->stream);
    return e == cudaSuccess ? HPCT_SUCCESS : cuda_fail(nc, "finishing the allreduce", e);
}
