/* mpi_check.h: the PASS/FAIL lines of the multi-rank test programs (t/lib/dist_prog,
 * t/lib/insitu_prog), which t/lib/dist_lib.sh turns into TAP points. */
#ifndef HPCTI_T_MPI_CHECK_H
#define HPCTI_T_MPI_CHECK_H

/* This process's rank and the size of MPI_COMM_WORLD (set by the program after MPI_Init),
 * and the number of failed checks so far. */
extern int world_rank, world_size, failures;

/* Collective over MPI_COMM_WORLD: passes when cond holds on every rank; rank 0 prints
 * "PASS W=n: message" or "FAIL W=n: message" (printf format). */
void check(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
