/* agree.h: deadline-bounded agreement across the ranks of a context: integer reductions for
 * decisions (flags, statuses, counts), and the failing rank's error detail shared with all. */
#ifndef HPCTI_AGREE_H
#define HPCTI_AGREE_H

#include "../../core/core.h"

#include <mpi.h>

/* values [n] (host longs) become op (MPI_MAX, MPI_MIN, MPI_SUM, ...) over every rank: one
 * collective bounded by the collective deadline (HPCT_ERR_TIMEOUT names the missing ranks).
 * A context without a distributed runtime keeps its own values (one rank). */
HPCTI_CHECK hpct_status_t hpcti_agree(hpct_ctx_t ctx, const char *name, long *values, int n,
                                      MPI_Op op);

/* Everything one step of a loop agrees on, in one deadline-bounded operation. */
struct hpcti_agreement {
    long *max; /* [nmax] this rank's values in, their maximum over ranks out */
    int nmax;
    long *sum; /* [nsum] this rank's values in, their sum over ranks out */
    int nsum;
    double mine;  /* this rank's real value (e.g. a loss sum) ... */
    double *all;  /* ... gathered into all [ranks] in rank order; NULL: nothing gathered */
    double mine2; /* a second real value (e.g. a step time) ... */
    double *all2; /* ... gathered the same way; NULL: nothing gathered */
};
HPCTI_CHECK hpct_status_t hpcti_agree_all(hpct_ctx_t ctx, const char *name,
                                          struct hpcti_agreement *a);

/* A failure code of this rank for a MAX agreement: 0 on success, else larger for lower ranks,
 * so the maximum names the lowest failing rank and carries its (negative) status. */
long hpcti_fail_code(hpct_ctx_t ctx, hpct_status_t status);
/* After a MAX agreement on fail codes: 0 gives HPCT_SUCCESS; otherwise the failing rank's
 * detail (mine on that rank, 1 KiB) is broadcast and every rank returns its status with the
 * detail "<name>: rank R of W failed: <detail>". Collective when code != 0. */
HPCTI_CHECK hpct_status_t hpcti_share_failure(hpct_ctx_t ctx, const char *name, long code,
                                              const char *mine);
/* hpcti_fail_code, a MAX agreement and hpcti_share_failure: every rank returns the lowest
 * failing rank's status and detail (mine on this rank), or HPCT_SUCCESS. Collective. */
HPCTI_CHECK hpct_status_t hpcti_agree_status(hpct_ctx_t ctx, const char *name, hpct_status_t status,
                                             const char *mine);

/* hosts [ranks][width] = every rank's host name (cut to width - 1 bytes), in rank order: one
 * deadline-bounded allgather; one rank: its own. */
hpct_status_t hpcti_agree_hosts(hpct_ctx_t ctx, char *hosts, int width);

/* The blocks of a row-major array of ndims (1-3) dimensions of global size gshape [ndims],
 * one per rank (table [ranks][2 ndims]: offset then count per dimension; a count of 0 is an
 * empty block), gathered into global (elsize-byte elements) on rank root: each rank sends
 * mine, its block packed row-major. One deadline-bounded operation; one rank: a copy. */
HPCTI_CHECK hpct_status_t hpcti_gather_blocks(hpct_ctx_t ctx, const char *name, const void *mine,
                                              size_t elsize, int ndims, const long *gshape,
                                              const long *table, void *global, int root);

#endif
