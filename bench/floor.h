/* floor.h: yardsticks for the averaging benchmarks, measured on the machine they run on.
 * Neither is one of the library's paths; they bound what any path could reach.
 * - shared-memory floor: the least memory work of averaging n floats over ranks that share
 *   memory. Each rank's buffer lives in one MPI-3 shared window; rank l sums block l of every
 *   rank's buffer in place into its own (no copy in, no staging), then copies the others'
 *   summed blocks out of their owners' buffers; two barriers per chunk of 1 MiB of the buffer
 *   (the library's window chunk: the summed blocks are still in cache when copied out;
 *   HPCT_BENCH_FLOOR_CHUNK=bytes changes it, 0 = the whole buffer at once).
 * - read floor: the reads from the peers' memory that any average in place needs, and only
 *   them: rank r reads blocks r and p of every peer p's buffer (the sum of its own block reads
 *   the first, the copy out of the result the second: 2 (W - 1) / W * n floats in all, the
 *   wire floor's volume), folding them with XOR (no writes, no sums, no barrier); MPI time /
 *   read floor is the most any average in place could reach against MPI_Allreduce here.
 * - wire floor: the least data any allreduce of n floats moves per rank, 2 (W - 1) / W * n
 *   floats out and as many in, exchanged with the ring neighbours in messages of 1 MiB, two
 *   each way at a time (over loopback TCP faster than one message or many at once;
 *   HPCT_BENCH_WIRE_PIECE=bytes and HPCT_BENCH_WIRE_IN_FLIGHT=1..64 change them). */
#ifndef HPCT_BENCH_FLOOR_H
#define HPCT_BENCH_FLOOR_H

#include <mpi.h>
#include <stddef.h>

struct shm_floor;

/* A window of n floats per rank of comm, or NULL (collectively) when the ranks of comm do
 * not all share memory or the window cannot be allocated. */
struct shm_floor *shm_floor_create(MPI_Comm comm, size_t n);

/* This rank's buffer [n] (in the window). */
float *shm_floor_buf(struct shm_floor *f);

/* Average the first n floats (at most the window's) of every rank's buffer in place
 * (collective over comm). */
void shm_floor_average(struct shm_floor *f, size_t n);

/* The read floor of the first n floats (no synchronisation; the buffers are only read). */
void shm_floor_read(struct shm_floor *f, size_t n);

/* 1 when an average of rank-dependent values gives every rank the mean within fp32
 * rounding (collective; the buffers are overwritten). */
int shm_floor_correct(struct shm_floor *f);

void shm_floor_free(struct shm_floor *f);

/* One exchange of the wire floor's volume for n floats with the ring neighbours in comm;
 * scratch holds 2 * 2 (W - 1) / W * n floats (wire_floor_scratch). */
void wire_floor_exchange(MPI_Comm comm, float *scratch, size_t n);
size_t wire_floor_scratch(MPI_Comm comm, size_t n);

#endif
