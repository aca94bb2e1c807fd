/* agree.c: deadline-bounded agreement across ranks. Decisions (flags, statuses, batch sizes)
 * are integer reductions, exact at any world size: a float mean of 0/1 flags is not (with
 * W = 41 or 47, W * fl(1/W) < 1, so "every rank set it" reads as "not every rank"). Each
 * agreement is one operation of lib/comm/wait.c: arrival tokens, non-blocking MPI calls on
 * the context's communicator, one deadline, the missing ranks named on a timeout. */
#include "config.h"
#include "agree.h"
#include "dist.h"

#include <stdio.h>
#include <string.h>

#define DETAIL_BYTES 1024 /* the failing rank's error detail, as hpct_last_error holds it */

/* Post the parts of a onto d's communicator; reqs [3] receives the requests, *n their count. */
static hpct_status_t post(hpct_ctx_t ctx, const char *name, struct hpcti_agreement *a, MPI_Op op,
                          MPI_Request *reqs, int *n)
{
    struct hpcti_dist *d = ctx->dist;
    int rc = MPI_SUCCESS;
    *n = 0;
    if (a->nmax > 0)
        rc = MPI_Iallreduce(MPI_IN_PLACE, a->max, a->nmax, MPI_LONG, op, d->comm, &reqs[(*n)++]);
    if (rc == MPI_SUCCESS && a->nsum > 0)
        rc = MPI_Iallreduce(MPI_IN_PLACE, a->sum, a->nsum, MPI_LONG, MPI_SUM, d->comm,
                            &reqs[(*n)++]);
    if (rc == MPI_SUCCESS && a->all)
        rc = MPI_Iallgather(&a->mine, 1, MPI_DOUBLE, a->all, 1, MPI_DOUBLE, d->comm, &reqs[(*n)++]);
    if (rc == MPI_SUCCESS) return HPCT_SUCCESS;
    if (*n > 0) reqs[--*n] = MPI_REQUEST_NULL; /* the failed call posted nothing */
    return hpcti_error(ctx, HPCT_ERR_COMM, "%s: a non-blocking MPI reduction failed (code %d)",
                       name, rc);
}

/* One operation: the max part reduced with op (MPI_MAX for hpcti_agree_all). */
static hpct_status_t agree_with(hpct_ctx_t ctx, const char *name, struct hpcti_agreement *a,
                                MPI_Op op)
{
    if (!ctx->dist) { /* one rank: its own values are the result */
        if (a->all) a->all[0] = a->mine;
        return HPCT_SUCCESS;
    }
    MPI_Request reqs[3];
    int n;
    hpct_status_t s = hpcti_op_begin(ctx, name, 0, 0);
    if (s) return s;
    hpct_status_t posted = post(ctx, name, a, op, reqs, &n);
    s = hpcti_op_end(ctx, reqs, n); /* also after a failed post: the operation must end */
    return posted ? posted : s;
}

hpct_status_t hpcti_agree(hpct_ctx_t ctx, const char *name, long *values, int n, MPI_Op op)
{
    struct hpcti_agreement a = {.max = values, .nmax = n};
    return agree_with(ctx, name, &a, op);
}

hpct_status_t hpcti_agree_all(hpct_ctx_t ctx, const char *name, struct hpcti_agreement *a)
{
    return agree_with(ctx, name, a, MPI_MAX);
}

long hpcti_fail_code(hpct_ctx_t ctx, hpct_status_t status)
{
    if (status >= 0) return 0;
    struct hpcti_dist *d = ctx->dist;
    int rank = d ? d->rank : 0, size = d ? d->size : 1;
    long code = status < -255 ? -HPCT_ERR_INTERNAL : -status;
    return (long)(size - rank) << 8 | code;
}

hpct_status_t hpcti_share_failure(hpct_ctx_t ctx, const char *name, long code, const char *mine)
{
    if (code <= 0) return HPCT_SUCCESS;
    struct hpcti_dist *d = ctx->dist;
    int size = d ? d->size : 1, root = size - (int)(code >> 8);
    hpct_status_t status = -(hpct_status_t)(code & 255);
    char detail[DETAIL_BYTES];
    snprintf(detail, sizeof detail, "%s", mine && (!d || d->rank == root) ? mine : "");
    if (!d) return hpcti_error(ctx, status, "%s", detail[0] ? detail : hpct_strerror(status));
    MPI_Request req = MPI_REQUEST_NULL;
    hpct_status_t s = hpcti_op_begin(ctx, name, 0, 0);
    if (s) return s;
    if (MPI_Ibcast(detail, DETAIL_BYTES, MPI_CHAR, root, d->comm, &req) != MPI_SUCCESS)
        snprintf(detail, sizeof detail, "(its detail could not be broadcast)");
    if ((s = hpcti_op_end(ctx, &req, 1))) return s;
    detail[DETAIL_BYTES - 1] = '\0';
    hpcti_error(ctx, status, "%s: rank %d of %d failed: %.900s", name, root, size,
                detail[0] ? detail : hpct_strerror(status));
    hpcti_mark_error_shared(ctx);
    return status;
}

hpct_status_t hpcti_agree_status(hpct_ctx_t ctx, const char *name, hpct_status_t status,
                                 const char *mine)
{
    long code = hpcti_fail_code(ctx, status);
    hpct_status_t s = hpcti_agree(ctx, name, &code, 1, MPI_MAX);
    return s ? s : hpcti_share_failure(ctx, name, code, mine);
}
