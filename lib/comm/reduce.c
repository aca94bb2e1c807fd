/* reduce.c: the averaging state machine. Hierarchical path (nodes with equal rank counts):
 * reduce-scatter inside the node -> allreduce of this rank's shard across nodes (ranks with
 * the same local rank) -> scale by 1/size -> allgather inside the node. Otherwise one flat
 * allreduce. All steps are non-blocking, advanced by hpcti_red_progress. */
#include "dist.h"

#include <string.h>

/* A 64-byte aligned slice of the operation's scratch (reserved by hpcti_op_begin). */
static void *take(struct hpcti_dist *d, size_t bytes)
{
    size_t at = (d->scratch_used + 63) & ~(size_t)63;
    d->scratch_used = at + bytes;
    return d->scratch + at;
}

static size_t elem_size(const struct hpcti_dist *d)
{
    return d->transport ? 2 : 4;
}

static MPI_Datatype elem_type(const struct hpcti_dist *d)
{
    return d->transport ? MPI_UINT16_T : MPI_FLOAT;
}

static MPI_Op sum_op(const struct hpcti_dist *d)
{
    if (d->transport == HPCT_TRANSPORT_BF16) return d->op_bf16;
    return d->transport == HPCT_TRANSPORT_FP16 ? d->op_fp16 : MPI_SUM;
}

/* x [n] (wire format) *= 1/size, in fp32. */
static void scale_wire(struct hpcti_dist *d, void *x, size_t n)
{
    float inv = 1.0f / (float)d->size;
    if (!d->transport) {
        float *f = x;
        for (size_t i = 0; i < n; i++) f[i] *= inv;
        return;
    }
    uint16_t *w = x;
    float tmp[256];
    for (size_t i = 0; i < n; i += 256) {
        size_t m = n - i < 256 ? n - i : 256;
        hpcti_from_wire(d->transport, w + i, tmp, m);
        for (size_t j = 0; j < m; j++) tmp[j] *= inv;
        hpcti_to_wire(d->transport, tmp, w + i, m);
    }
}

static hpct_status_t mpi_failed(hpct_ctx_t ctx, int rc, const char *what)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    return hpcti_error(ctx, HPCT_ERR_COMM, "%s: %s failed on rank %d: %s", ctx->dist->op_name, what,
                       ctx->dist->rank, msg);
}

hpct_status_t hpcti_red_start(hpct_ctx_t ctx, float *buf, size_t n, int *id)
{
    struct hpcti_dist *d = ctx->dist;
    if (d->nred >= d->cap_red)
        return hpcti_error(ctx, HPCT_ERR_INTERNAL, "%s: more reductions than reserved (%d)", d->op_name, d->cap_red);
    struct hpcti_reduction *r = &d->red[d->nred];
    memset(r, 0, sizeof *r);
    r->buf = buf, r->n = n, r->req = MPI_REQUEST_NULL, r->wire = buf;
    if (d->transport) {
        r->wire = take(d, 2 * n);
        hpcti_to_wire(d->transport, buf, r->wire, n);
    }
    int L = d->local_size, lr = d->local_rank;
    MPI_Datatype t = elem_type(d);
    int rc;
    if (d->hier) {
        r->counts = take(d, sizeof(int) * (size_t)L);
        r->displs = take(d, sizeof(int) * (size_t)L);
        for (int i = 0, off = 0; i < L; i++) {
            r->counts[i] = (int)(n / (size_t)L + ((size_t)i < n % (size_t)L));
            r->displs[i] = off;
            off += r->counts[i];
        }
        r->shard = take(d, elem_size(d) * (size_t)r->counts[lr]);
        rc = MPI_Ireduce_scatter(r->wire, r->shard, r->counts, t, sum_op(d), d->node_rs, &r->req);
        r->stage = RED_SCATTER;
    } else {
        rc = MPI_Iallreduce(MPI_IN_PLACE, r->wire, (int)n, t, sum_op(d), d->comm, &r->req);
        r->stage = RED_FLAT;
    }
    if (rc != MPI_SUCCESS) return mpi_failed(ctx, rc, d->hier ? "MPI_Ireduce_scatter" : "MPI_Iallreduce");
    *id = d->nred++;
    return HPCT_SUCCESS;
}

/* Last step: the result back into fp32 buf. */
static void finish(struct hpcti_dist *d, struct hpcti_reduction *r)
{
    if (d->transport) hpcti_from_wire(d->transport, r->wire, r->buf, r->n);
    r->stage = RED_DONE;
}

/* Start the stage after r's current one (its request has completed). */
static hpct_status_t advance(hpct_ctx_t ctx, struct hpcti_reduction *r)
{
    struct hpcti_dist *d = ctx->dist;
    int rc = MPI_SUCCESS, mine = r->counts ? r->counts[d->local_rank] : 0;
    switch (r->stage) {
    case RED_SCATTER:
        r->stage = RED_CROSS;
        if (d->cross_size > 1)
            rc = MPI_Iallreduce(MPI_IN_PLACE, r->shard, mine, elem_type(d), sum_op(d), d->cross, &r->req);
        break;
    case RED_CROSS:
        scale_wire(d, r->shard, (size_t)mine);
        r->stage = RED_GATHER;
        rc = MPI_Iallgatherv(r->shard, mine, elem_type(d), r->wire, r->counts, r->displs,
                             elem_type(d), d->node_ag, &r->req);
        break;
    case RED_GATHER: finish(d, r); break;
    case RED_FLAT:
        scale_wire(d, r->wire, r->n);
        finish(d, r);
        break;
    default: break;
    }
    if (rc != MPI_SUCCESS) return mpi_failed(ctx, rc, r->stage == RED_CROSS ? "cross-node MPI_Iallreduce" : "node MPI_Iallgatherv");
    return HPCT_SUCCESS;
}

hpct_status_t hpcti_red_progress(hpct_ctx_t ctx)
{
    struct hpcti_dist *d = ctx->dist;
    for (int i = 0; i < d->nred; i++) {
        struct hpcti_reduction *r = &d->red[i];
        while (r->stage != RED_DONE) {
            if (r->req != MPI_REQUEST_NULL) {
                int flag = 0;
                MPI_Test(&r->req, &flag, MPI_STATUS_IGNORE);
                if (!flag) break;
            }
            /* Same start order on every communicator: never overtake the reduction before. */
            int starts = r->stage == RED_SCATTER || r->stage == RED_CROSS;
            if (i > 0 && starts && d->red[i - 1].stage <= r->stage) break;
            hpct_status_t s = advance(ctx, r);
            if (s) return s;
        }
    }
    return HPCT_SUCCESS;
}
