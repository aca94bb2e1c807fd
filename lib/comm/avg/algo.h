/* algo.h: the algorithm per size class of host averages (algo.c): the set-up that agrees on
 * the table, the averages that follow it, and the environment check. */
#ifndef HPCTI_ALGO_H
#define HPCTI_ALGO_H

#include "avg.h"

/* Start averaging buf [n] inside the current op by the algorithm of its size class: mpi and
 * p2p start a reduction (*id, waited for with hpcti_red_wait or hpcti_op_end); shm
 * averages through the node window before it returns (*id = -1), and so does shm/p2p
 * unless every local rank passed ordinary memory (then p2p, *id). The op must have room
 * for it: hpcti_algo_reductions_bound and hpcti_algo_scratch_bound of n in one part. */
HPCTI_CHECK hpct_status_t hpcti_red_start_sized(hpct_ctx_t ctx, float *buf, size_t n, int *id);
/* Start the reductions of buf [n], one per HPCTI_MAX_CHUNK floats (MPI counts are int):
 * point-to-point, or with mpi one MPI_Iallreduce each (*id: the last one's). */
HPCTI_CHECK hpct_status_t hpcti_red_start_chunks(hpct_ctx_t ctx, float *buf, size_t n, int mpi,
                                                 int *id);
/* Average buf [n] through the node window now (algo shm or shm/p2p), with its timeline span;
 * under shm/p2p, ordinary memory on every local rank of one node starts point-to-point
 * reductions instead (hpcti_red_start_chunks). */
HPCTI_CHECK hpct_status_t hpcti_window_now(hpct_ctx_t ctx, float *buf, size_t n, int algo, int *id);
/* hpcti_red_start_sized for a buffer that every rank averages in a gradient buffer (the
 * caller knows it of every rank, or agreed it): where several nodes share the window, in
 * place applies (above the one-barrier size) and the table sends the class point-to-point
 * (p2p, allgather), through the node window in place instead. The same bits. */
HPCTI_CHECK hpct_status_t hpcti_red_start_grads(hpct_ctx_t ctx, float *buf, size_t n, int *id);
/* 1 when hpcti_red_start_grads of n floats goes through the window where the table does not;
 * hpcti_algo_grads_upto: of some size up to n floats. */
int hpcti_algo_grads_window(const struct hpcti_dist *d, size_t n);
int hpcti_algo_grads_upto(const struct hpcti_dist *d, size_t n);
/* *all = 1 when held (this rank's buffers lie in gradient buffers) holds on every rank: an
 * integer MIN agreement, an operation named fn. */
HPCTI_CHECK hpct_status_t hpcti_agree_in_window(hpct_ctx_t ctx, const char *fn, int held, int *all);
/* 1 for the algorithms that go through the node window (shm, shm/p2p). */
int hpcti_algo_windowed(int algo);
/* Room for hpcti_red_start_sized of up to parts buffers of total floats in all. */
int hpcti_algo_reductions_bound(const struct hpcti_dist *d, size_t total, int parts);
size_t hpcti_algo_scratch_bound(const struct hpcti_dist *d, size_t total, int parts);

/* Algorithm per size (algo.c): agree on HPCT_ALLREDUCE_ALGO or probe, at start-up (after
 * hpcti_node_win_setup); the algorithm for an average of n floats on this context; names. */
HPCTI_CHECK hpct_status_t hpcti_algo_setup(hpct_ctx_t ctx);
int hpcti_algo_for(const struct hpcti_dist *d, size_t n);
/* The probe's winner at a class of n floats: the index into cand [nc] of the fastest time in
 * best [nc] (seconds; 1e30: not timed), the first candidate (the library's own path) on a
 * tie; shm/p2p keeps a class of 1 MiB or more unless another is over 10 % faster. */
int hpcti_algo_pick(const int *cand, const double *best, int nc, size_t n);
const char *hpcti_algo_name(int algo);
void hpcti_algo_format(const struct hpcti_algo_table *t, char *out, size_t cap);

/* Average host buf [n] over all ranks as one operation named fn (hpct_allreduce_mean): by
 * the algorithm of its size class, or through the window in place where every rank's buf
 * lies in a gradient buffer and hpcti_algo_grads_window holds (agreed first). */
HPCTI_CHECK hpct_status_t hpcti_host_allreduce_mean(hpct_ctx_t ctx, const char *fn, float *buf,
                                                    size_t n);
/* The same by algorithm algo, with no agreement (the probe's timed calls). */
HPCTI_CHECK hpct_status_t hpcti_host_average(hpct_ctx_t ctx, const char *fn, float *buf, size_t n,
                                             int algo);
/* Check every environment setting of the registry (lib/core/tunables.c) and
 * HPCT_ALLREDUCE_ALGO's grammar: the first bad one fails with HPCT_ERR_INVALID_ARG, named
 * with its value and accepted values on ctx (may be NULL; prefix before it) and in detail. */
HPCTI_CHECK hpct_status_t hpcti_env_check(hpct_ctx_t ctx, const char *prefix, char *detail,
                                          size_t len);

#endif
