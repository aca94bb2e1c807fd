/* floor.c: the shared-memory and wire floors of floor.h. */
#include "floor.h"
#include "bench_util.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SUM_FLOATS  2048 /* floats summed at a time in a stack accumulator (8 KiB, stays in L1) */
#define CHUNK_BYTES ((size_t)1 << 20) /* of each buffer averaged at a time (the library's) */
/* The wire floor's messages: pieces of 1 MiB, two each way at once. Moving 16.4 MB each way
 * between 2 ranks over loopback TCP took 4.7-4.8 ms against 6.4-6.7 ms in one message,
 * and 7.6 ms with 16 pieces at once; over shared memory the same as one message (1.6 ms;
 * bench/results.md, 2026-11-26, sixth session). */
#define WIRE_PIECE_BYTES   ((size_t)1 << 20)
#define WIRE_IN_FLIGHT     2
#define WIRE_MAX_IN_FLIGHT 64

struct shm_floor {
    MPI_Comm comm; /* dup of the caller's */
    MPI_Win win;
    int locked; /* inside MPI_Win_lock_all */
    int rank, size;
    size_t n, chunk; /* floats per buffer; per chunk averaged at a time (0: all at once) */
    float **buf;     /* [size]: every rank's buffer [n], mapped here */
    uint64_t sink;   /* the read floor's fold of what it read (kept: the reads stay) */
};

static int all_share_memory(MPI_Comm comm)
{
    MPI_Comm shared;
    int size, local, ok;
    MPI_Comm_size(comm, &size);
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared);
    MPI_Comm_size(shared, &local);
    MPI_Comm_free(&shared);
    ok = local == size;
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm);
    return ok;
}

struct shm_floor *shm_floor_create(MPI_Comm comm, size_t n)
{
    if (!all_share_memory(comm)) return NULL;
    struct shm_floor *f = calloc(1, sizeof *f);
    int ok = f != NULL;
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm);
    if (!ok) return free(f), NULL;
    f->win = MPI_WIN_NULL;
    MPI_Comm_dup(comm, &f->comm);
    MPI_Comm_rank(f->comm, &f->rank);
    MPI_Comm_size(f->comm, &f->size);
    f->n = n;
    f->chunk =
        (size_t)env_long("HPCT_BENCH_FLOOR_CHUNK", (long)CHUNK_BYTES, 0, 1L << 30) / sizeof(float);
    float *mine;
    MPI_Aint bytes = (MPI_Aint)((n ? n : 1) * sizeof(float));
    ok = MPI_Win_allocate_shared(bytes, sizeof(float), MPI_INFO_NULL, f->comm, &mine, &f->win) ==
         MPI_SUCCESS;
    f->buf = calloc((size_t)f->size, sizeof *f->buf);
    for (int p = 0; ok && f->buf && p < f->size; p++) {
        MPI_Aint got;
        int unit;
        ok = MPI_Win_shared_query(f->win, p, &got, &unit, &f->buf[p]) == MPI_SUCCESS;
    }
    ok = ok && f->buf;
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, f->comm);
    if (!ok) {
        shm_floor_free(f);
        return NULL;
    }
    MPI_Win_lock_all(MPI_MODE_NOCHECK, f->win);
    f->locked = 1;
    memset(mine, 0, (size_t)bytes);
    return f;
}

float *shm_floor_buf(struct shm_floor *f)
{
    return f->buf[f->rank];
}

/* Window memory barrier, then a barrier of the ranks, then the barrier again: every write
 * before it on any rank is seen by every read after it on any rank. */
static void sync_all(struct shm_floor *f)
{
    MPI_Win_sync(f->win);
    MPI_Barrier(f->comm);
    MPI_Win_sync(f->win);
}

/* First float of block b and its length when n floats are cut into size blocks. */
static void block(const struct shm_floor *f, size_t n, int b, size_t *start, size_t *len)
{
    size_t q = n / (size_t)f->size, r = n % (size_t)f->size, ub = (size_t)b;
    *start = ub * q + (ub < r ? ub : r);
    *len = q + (ub < r);
}

/* Own block = (sum over ranks 0..W-1 of their block) / W, written in place. */
static void sum_own_block(struct shm_floor *f, size_t off, size_t n)
{
    size_t start, len;
    block(f, n, f->rank, &start, &len);
    start += off;
    float acc[SUM_FLOATS], inv = 1.0f / (float)f->size;
    for (size_t i = start; i < start + len; i += SUM_FLOATS) {
        size_t c = start + len - i < SUM_FLOATS ? start + len - i : SUM_FLOATS;
        memcpy(acc, f->buf[0] + i, c * sizeof *acc);
        for (int p = 1; p < f->size; p++) {
            const float *x = f->buf[p] + i;
            for (size_t j = 0; j < c; j++) acc[j] += x[j];
        }
        for (size_t j = 0; j < c; j++) f->buf[f->rank][i + j] = acc[j] * inv;
    }
}

/* Average floats [off, off + n) of every buffer: sum this rank's block of that range, then
 * copy the others' summed blocks. */
static void average_range(struct shm_floor *f, size_t off, size_t n)
{
    sync_all(f); /* every input written; every peer done copying from the last average */
    sum_own_block(f, off, n);
    sync_all(f); /* every block summed */
    for (int b = 0; b < f->size; b++) {
        size_t start, len;
        block(f, n, b, &start, &len);
        if (b != f->rank)
            memcpy(f->buf[f->rank] + off + start, f->buf[b] + off + start, len * sizeof(float));
    }
}

void shm_floor_average(struct shm_floor *f, size_t n)
{
    if (n > f->n) n = f->n;
    size_t step = f->chunk ? f->chunk : n;
    for (size_t off = 0; off < n; off += step)
        average_range(f, off, n - off < step ? n - off : step);
}

/* The read floor reads with the widest vectors the CPU has, as the library's sums do
 * (lib/comm/avg/vsum.c), so that it stays a lower bound. */
#if defined(__x86_64__) && defined(__GLIBC__) && defined(__has_attribute) /* ifunc: glibc */
#if __has_attribute(target_clones)
#define WIDEST_VECTORS __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
#endif
#ifndef WIDEST_VECTORS
#define WIDEST_VECTORS
#endif

/* XOR of the 64-bit words of x [len floats] (the odd last float left out): reads, no writes. */
WIDEST_VECTORS static uint64_t fold(const float *x, size_t len)
{
    const uint64_t *w = (const uint64_t *)x;
    uint64_t acc = 0;
    for (size_t i = 0; i < len / 2; i++) acc ^= w[i];
    return acc;
}

void shm_floor_read(struct shm_floor *f, size_t n)
{
    if (n > f->n) n = f->n;
    uint64_t acc = 0;
    for (int p = 0; p < f->size; p++) {
        size_t a, alen, b, blen; /* block me (the sum reads it) and block p (the copy out) */
        if (p == f->rank) continue;
        block(f, n, f->rank, &a, &alen);
        block(f, n, p, &b, &blen);
        acc ^= fold(f->buf[p] + a, alen) ^ fold(f->buf[p] + b, blen);
    }
    f->sink ^= acc;
}

int shm_floor_correct(struct shm_floor *f)
{
    float *mine = shm_floor_buf(f);
    for (size_t i = 0; i < f->n; i++) mine[i] = (float)((i * 7 + (size_t)f->rank * 13) % 101);
    shm_floor_average(f, f->n);
    int ok = 1;
    for (size_t i = 0; i < f->n && ok; i++) {
        double mean = 0.0;
        for (int p = 0; p < f->size; p++) mean += (double)((i * 7 + (size_t)p * 13) % 101);
        mean /= f->size;
        ok = fabs(mine[i] - mean) <= 1e-5 * (1.0 + fabs(mean));
    }
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, f->comm);
    return ok;
}

void shm_floor_free(struct shm_floor *f)
{
    if (!f) return;
    if (f->locked) MPI_Win_unlock_all(f->win);
    if (f->win != MPI_WIN_NULL) MPI_Win_free(&f->win);
    MPI_Comm_free(&f->comm);
    free(f->buf);
    free(f);
}

size_t wire_floor_scratch(MPI_Comm comm, size_t n)
{
    int size;
    MPI_Comm_size(comm, &size);
    return 2 * (2 * (size_t)(size - 1) * n / (size_t)size);
}

/* The wire floor's pattern: floats per piece and pieces in flight each way (floor.h). */
static void wire_pattern(size_t *piece, int *in_flight)
{
    *piece = (size_t)env_long("HPCT_BENCH_WIRE_PIECE", (long)WIRE_PIECE_BYTES, 4, 1L << 30) /
             sizeof(float);
    *in_flight = (int)env_long("HPCT_BENCH_WIRE_IN_FLIGHT", WIRE_IN_FLIGHT, 1, WIRE_MAX_IN_FLIGHT);
}

/* One exchange of the wire floor's m floats each way, in pieces with at most in_flight each
 * way on the wire at once (the same tag: MPI keeps their order). */
void wire_floor_exchange(MPI_Comm comm, float *scratch, size_t n)
{
    int rank, size, in_flight;
    size_t piece;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    wire_pattern(&piece, &in_flight);
    size_t m = wire_floor_scratch(comm, n) / 2, pieces = (m + piece - 1) / piece;
    int to = (rank + 1) % size, from = (rank + size - 1) % size;
    MPI_Request req[2 * WIRE_MAX_IN_FLIGHT]; /* [2 slot]: receive, [2 slot + 1]: send */
    for (size_t i = 0; i < pieces + (size_t)in_flight; i++) {
        int slot = (int)(i % (size_t)in_flight);
        if (i >= (size_t)in_flight) MPI_Waitall(2, req + 2 * slot, MPI_STATUSES_IGNORE);
        if (i >= pieces) continue;
        size_t at = i * piece, len = m - at < piece ? m - at : piece;
        MPI_Irecv(scratch + m + at, (int)len, MPI_FLOAT, from, 0, comm, req + 2 * slot);
        MPI_Isend(scratch + at, (int)len, MPI_FLOAT, to, 0, comm, req + 2 * slot + 1);
    }
}
