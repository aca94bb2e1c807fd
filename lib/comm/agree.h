/* agree.h: deadline-bounded agreement across the ranks of a context: integer reductions for
 * decisions (flags, statuses, counts), and the failing rank's error detail shared with all. */
#ifndef HPCTI_AGREE_H
#define HPCTI_AGREE_H

#include "../core/core.h"

#include <mpi.h>

/* values [n] (host longs) become op (MPI_MAX, MPI_MIN, MPI_SUM, ...) over every rank: one
 * collective bounded by the collective deadline (HPCT_ERR_TIMEOUT names the missing ranks).
 * A context without a distributed runtime keeps its own values (one rank). */
HPCTI_CHECK hpct_status_t hpcti_agree(hpct_ctx_t ctx, const char *name, long *values, int n, MPI_Op op);

/* Everything one step of a loop agrees on, in one deadline-bounded operation. */
struct hpcti_agreement {
    long *max; /* [nmax] this rank's values in, their maximum over ranks out */
    int nmax;
    long *sum; /* [nsum] this rank's values in, their sum over ranks out */
    int nsum;
    double mine; /* this rank's real value (e.g. a loss sum) ... */
    double *all; /* ... gathered into all [ranks] in rank order; NULL: nothing gathered */
};
HPCTI_CHECK hpct_status_t hpcti_agree_all(hpct_ctx_t ctx, const char *name, struct hpcti_agreement *a);

/* A failure code of this rank for a MAX agreement: 0 on success, else larger for lower ranks,
 * so the maximum names the lowest failing rank and carries its (negative) status. */
long hpcti_fail_code(hpct_ctx_t ctx, hpct_status_t status);
/* After a MAX agreement on fail codes: 0 gives HPCT_SUCCESS; otherwise the failing rank's
 * detail (mine on that rank, 1 KiB) is broadcast and every rank returns its status with the
 * detail "<name>: rank R of W failed: <detail>". Collective when code != 0. */
HPCTI_CHECK hpct_status_t hpcti_share_failure(hpct_ctx_t ctx, const char *name, long code, const char *mine);
/* hpcti_fail_code, a MAX agreement and hpcti_share_failure: every rank returns the lowest
 * failing rank's status and detail (mine on this rank), or HPCT_SUCCESS. Collective. */
HPCTI_CHECK hpct_status_t hpcti_agree_status(hpct_ctx_t ctx, const char *name, hpct_status_t status,
                                 const char *mine);

#endif
