/* mpi_prog.h: what the multi-rank test programs (t/lib/dist_prog, t/lib/insitu_prog) share:
 * their start, the PASS/FAIL lines that t/lib/dist_lib.sh turns into TAP points, and a toy
 * classification problem. */
#ifndef HPCTI_T_MPI_PROG_H
#define HPCTI_T_MPI_PROG_H

#include "hpctrain.h"

/* Features and classes of the toy problem. */
#define TOY_FEATURES 16
#define TOY_CLASSES  4

/* This process's rank and the size of MPI_COMM_WORLD (set by mpi_start), and the number of
 * failed checks so far. */
extern int world_rank, world_size, failures;

/* hpct_init(cfg) (MPI_Init included), then world_rank and world_size; exits 2 on failure. */
hpct_ctx_t mpi_start(const hpct_config_t *cfg);

/* Collective over MPI_COMM_WORLD: passes when cond holds on every rank; rank 0 prints
 * "PASS W=n: message" or "FAIL W=n: message" (printf format). */
void check(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* n rows x [n, TOY_FEATURES] ~ U(-1, 1) and labels y [n] = argmax of a fixed linear map
 * into TOY_CLASSES classes, from a seed. */
void toy_data(float *x, int32_t *y, int n, unsigned long long seed);

#endif
