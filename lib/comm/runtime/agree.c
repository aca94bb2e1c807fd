/* agree.c: deadline-bounded agreement across ranks. Decisions (flags, statuses, batch sizes)
 * are integer reductions, exact at any world size: a float mean of 0/1 flags is not (with
 * W = 41 or 47, W * fl(1/W) < 1, so "every rank set it" reads as "not every rank"). Each
 * agreement is one operation of lib/comm/wait.c: arrival tokens, non-blocking MPI calls on
 * the context's communicator, one deadline, the missing ranks named on a timeout. */
#include "config.h"
#include "agree.h"
#include "runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DETAIL_BYTES 1024 /* the failing rank's error detail, as hpct_last_error holds it */

/* Post the parts of a onto d's communicator; reqs [4] receives the requests, *n their count. */
static hpct_status_t post(hpct_ctx_t ctx, const char *name, struct hpcti_agreement *a, MPI_Op op,
                          MPI_Request *reqs, int *n)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    int rc = MPI_SUCCESS;
    *n = 0;
    if (a->nmax > 0)
        rc = MPI_Iallreduce(MPI_IN_PLACE, a->max, a->nmax, MPI_LONG, op, d->comm, &reqs[(*n)++]);
    if (rc == MPI_SUCCESS && a->nsum > 0)
        rc = MPI_Iallreduce(MPI_IN_PLACE, a->sum, a->nsum, MPI_LONG, MPI_SUM, d->comm,
                            &reqs[(*n)++]);
    if (rc == MPI_SUCCESS && a->all)
        rc = MPI_Iallgather(&a->mine, 1, MPI_DOUBLE, a->all, 1, MPI_DOUBLE, d->comm, &reqs[(*n)++]);
    if (rc == MPI_SUCCESS && a->all2)
        rc = MPI_Iallgather(&a->mine2, 1, MPI_DOUBLE, a->all2, 1, MPI_DOUBLE, d->comm,
                            &reqs[(*n)++]);
    if (rc == MPI_SUCCESS) return HPCT_SUCCESS;
    if (*n > 0) reqs[--*n] = MPI_REQUEST_NULL; /* the failed call posted nothing */
    return hpcti_error(ctx, HPCT_ERR_COMM, "%s: a non-blocking MPI reduction failed (code %d)",
                       name, rc);
}

/* One operation: the max part reduced with op (MPI_MAX for hpcti_agree_all). */
static hpct_status_t agree_with(hpct_ctx_t ctx, const char *name, struct hpcti_agreement *a,
                                MPI_Op op)
{
    if (!hpcti_dist(ctx)) { /* one rank: its own values are the result */
        if (a->all) a->all[0] = a->mine;
        if (a->all2) a->all2[0] = a->mine2;
        return HPCT_SUCCESS;
    }
    MPI_Request reqs[4];
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
    struct hpcti_dist *d = hpcti_dist(ctx);
    int rank = d ? d->rank : 0, size = d ? d->size : 1;
    long code = status < -255 ? -HPCT_ERR_INTERNAL : -status;
    return (long)(size - rank) << 8 | code;
}

hpct_status_t hpcti_share_failure(hpct_ctx_t ctx, const char *name, long code, const char *mine)
{
    if (code <= 0) return HPCT_SUCCESS;
    struct hpcti_dist *d = hpcti_dist(ctx);
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

hpct_status_t hpcti_agree_hosts(hpct_ctx_t ctx, char *hosts, int width)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    char mine[256] = "";
    if (d)
        snprintf(mine, sizeof mine, "%s", d->boot.hostname);
    else if (gethostname(mine, sizeof mine - 1) != 0)
        snprintf(mine, sizeof mine, "unknown");
    char *send = hosts + (size_t)(d ? d->rank : 0) * (size_t)width;
    memset(send, 0, (size_t)width);
    snprintf(send, (size_t)width, "%s", mine);
    if (!d) return HPCT_SUCCESS;
    MPI_Request req = MPI_REQUEST_NULL;
    hpct_status_t s = hpcti_op_begin(ctx, "host name exchange", 0, 0);
    if (s) return s;
    int rc =
        MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, hosts, width, MPI_CHAR, d->comm, &req);
    s = hpcti_op_end(ctx, &req, rc == MPI_SUCCESS);
    if (!s && rc != MPI_SUCCESS)
        s = hpcti_error(ctx, HPCT_ERR_COMM, "host name exchange: MPI_Iallgather failed (code %d)",
                        rc);
    for (int r = 0; r < d->size; r++) hosts[(size_t)r * (size_t)width + (size_t)width - 1] = '\0';
    return s;
}

#define BLOCK_TAG 7305 /* on the control communicator (tokens 7301, liveness 7302-7304) */

/* Elements in rank r's block of table (0 when empty). */
static size_t block_elems(const long *row, int ndims)
{
    size_t n = 1;
    for (int k = 0; k < ndims; k++) n *= (size_t)row[ndims + k];
    return n;
}

/* The root's own block: mine [count] into global at its offsets (row-major). */
static void place_own(const void *mine, size_t elsize, int ndims, const long *gshape,
                      const long *row, void *global)
{
    long c0 = row[ndims], c1 = ndims > 1 ? row[ndims + 1] : 1, c2 = ndims > 2 ? row[ndims + 2] : 1;
    long g1 = ndims > 1 ? gshape[1] : 1, g2 = ndims > 2 ? gshape[2] : 1;
    long o1 = ndims > 1 ? row[1] : 0, o2 = ndims > 2 ? row[2] : 0;
    const char *src = mine;
    for (long i = 0; i < c0; i++)
        for (long j = 0; j < c1; j++) {
            size_t at =
                (((size_t)(row[0] + i) * (size_t)g1 + (size_t)(o1 + j)) * (size_t)g2 + (size_t)o2) *
                elsize;
            memcpy((char *)global + at, src, (size_t)c2 * elsize);
            src += (size_t)c2 * elsize;
        }
}

/* Post the root's receive of rank r's block as a subarray of global. */
static int recv_block(struct hpcti_dist *d, MPI_Datatype elem, int ndims, const long *gshape,
                      const long *row, void *global, int r, MPI_Request *req)
{
    int sizes[3], sub[3], starts[3];
    for (int k = 0; k < ndims; k++)
        sizes[k] = (int)gshape[k], starts[k] = (int)row[k], sub[k] = (int)row[ndims + k];
    MPI_Datatype t;
    int rc = MPI_Type_create_subarray(ndims, sizes, sub, starts, MPI_ORDER_C, elem, &t);
    if (rc == MPI_SUCCESS) rc = MPI_Type_commit(&t);
    if (rc == MPI_SUCCESS) rc = MPI_Irecv(global, 1, t, r, BLOCK_TAG, d->ctl, req);
    if (rc == MPI_SUCCESS) MPI_Type_free(&t); /* freed when the receive completes */
    return rc;
}

hpct_status_t hpcti_gather_blocks(hpct_ctx_t ctx, const char *name, const void *mine, size_t elsize,
                                  int ndims, const long *gshape, const long *table, void *global,
                                  int root)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    int rank = d ? d->rank : 0, size = d ? d->size : 1;
    const long *own = table + (size_t)rank * 2 * (size_t)ndims;
    if (rank == root && block_elems(own, ndims))
        place_own(mine, elsize, ndims, gshape, own, global);
    if (!d || size == 1) return HPCT_SUCCESS;
    MPI_Request *reqs = calloc((size_t)size, sizeof *reqs);
    if (!reqs) return hpcti_error(ctx, HPCT_ERR_NO_MEMORY, "%s: %d requests", name, size);
    MPI_Datatype elem;
    int rc = MPI_Type_contiguous((int)elsize, MPI_BYTE, &elem), n = 0;
    if (rc == MPI_SUCCESS) rc = MPI_Type_commit(&elem);
    hpct_status_t s = rc == MPI_SUCCESS ? hpcti_op_begin(ctx, name, 0, 0) : HPCT_ERR_COMM;
    if (s) {
        free(reqs);
        return s == HPCT_ERR_COMM ? hpcti_error(ctx, s, "%s: an MPI datatype failed", name) : s;
    }
    for (int r = 0; r < size && rc == MPI_SUCCESS; r++) {
        const long *row = table + (size_t)r * 2 * (size_t)ndims;
        size_t count = block_elems(row, ndims);
        if (!count || r == root || (rank != root && r != rank)) continue;
        if (rank == root)
            rc = recv_block(d, elem, ndims, gshape, row, global, r, &reqs[n++]);
        else
            rc = MPI_Isend(mine, (int)count, elem, root, BLOCK_TAG, d->ctl, &reqs[n++]);
    }
    s = hpcti_op_end(ctx, reqs, n);
    MPI_Type_free(&elem);
    if (!s && rc != MPI_SUCCESS) s = hpcti_mpi_failed(ctx, rc, "posting the block exchange");
    if (!d->broken) free(reqs); /* a broken runtime keeps what pending requests use */
    return s;
}
