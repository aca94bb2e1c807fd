/* sim.h: what differs in the SimGrid/SMPI build of the library (bench/sim/GNUmakefile compiles
 * every source with -DHPCT_SIM=1; the real build never defines it, and there this header is
 * a plain memcpy and a 0). Under SMPI every rank is a cooperatively scheduled actor of one
 * simulator process: time advances only inside MPI calls and SMPI's sleeps and executions,
 * and payloads whose contents do not matter to timing come from SMPI's shared malloc (one
 * copy for all ranks), so the library's copies and sums over them are charged to the
 * simulated host (at the memory bandwidth measured on the development machine,
 * bench/sim/platforms.md) instead of being done. */
#ifndef HPCTI_SIM_H
#define HPCTI_SIM_H

#ifdef HPCT_SIM
#include <mpi.h>       /* SMPI's: smpi_execute, and the MPI calls redefined below */
#include <smpi/smpi.h> /* SMPI_SHARED_MALLOC */
#include <time.h>

/* bytes per second of a host copy or sum's memory traffic: a 64 MiB memcpy here moved
 * 26-35 GB/s (read + write, best of 10, two runs; bench/sim/platforms.md) */
#define HPCTI_SIM_MEM_BPS 30e9
/* bytes of memory traffic this rank's host spends, in simulated time */
#define HPCTI_SIM_WORK(bytes) smpi_execute((double)(bytes) / HPCTI_SIM_MEM_BPS)
/* 1 in the SMPI build: hpcti_red_start_mpi sends from n floats of the operation's scratch
 * instead of MPI_IN_PLACE (SMPI 3.32 frees its in-place copy too early; reduce.c) */
#define HPCTI_SIM_IALLREDUCE_SCRATCH 1

/* Nonblocking collectives: SMPI 3.32's send every rank's vector to every other rank, whatever
 * smpi/allreduce says, and completing each message walks its mailbox, so a collective costs
 * the simulator O(W^2) a rank (W = 256 ran out of time; bench/sim/platforms.md). In this
 * build the library's are SMPI's blocking collectives, with the algorithms run.sh selects,
 * done at once and given a null request, which MPI_Test and MPI_Testall report complete. */
static inline int hpcti_sim_iallreduce(const void *send, void *recv, int n, MPI_Datatype type,
                                       MPI_Op op, MPI_Comm comm, MPI_Request *req)
{
    *req = MPI_REQUEST_NULL;
    return MPI_Allreduce(send, recv, n, type, op, comm);
}

static inline int hpcti_sim_iallgather(const void *send, int ns, MPI_Datatype ts, void *recv,
                                       int nr, MPI_Datatype tr, MPI_Comm comm, MPI_Request *req)
{
    *req = MPI_REQUEST_NULL;
    return MPI_Allgather(send, ns, ts, recv, nr, tr, comm);
}

static inline int hpcti_sim_ibcast(void *buf, int n, MPI_Datatype type, int root, MPI_Comm comm,
                                   MPI_Request *req)
{
    *req = MPI_REQUEST_NULL;
    return MPI_Bcast(buf, n, type, root, comm);
}

/* Polls: SMPI 3.32 keeps something of every request that MPI_Test or MPI_Testall completes,
 * and every later completion walks past it, so a run slows step by step (W = 64: 0.55 s of
 * real time a step over 10 steps, about 3 s by step 80; a bare SMPI program of Isend, Irecv
 * and a Testall loop shows the same, and none with MPI_Waitall; bench/results.md). In this
 * build a poll looks with MPI_Request_get_status, which completes nothing, and completes
 * with MPI_Wait or MPI_Waitall once the request is done: what MPI_Test and MPI_Testall do.
 * Each poll still costs the simulated 100 ns that run.sh gives a test (smpi/test). */
static inline void hpcti_sim_poll_cost(void)
{
    struct timespec cost = {0, 100}; /* smpicc makes nanosleep a sleep in simulated time */
    nanosleep(&cost, NULL);
}

static inline int hpcti_sim_test(MPI_Request *req, int *flag, MPI_Status *status)
{
    hpcti_sim_poll_cost();
    int rc = MPI_Request_get_status(*req, flag, status);
    return rc == MPI_SUCCESS && *flag ? MPI_Wait(req, status) : rc;
}

static inline int hpcti_sim_testall(int n, MPI_Request *reqs, int *flag, MPI_Status *statuses)
{
    hpcti_sim_poll_cost();
    *flag = 1;
    for (int i = 0; i < n && *flag; i++) {
        int rc = MPI_Request_get_status(reqs[i], flag, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) return rc;
    }
    return *flag ? MPI_Waitall(n, reqs, statuses) : MPI_SUCCESS;
}

#undef MPI_Iallreduce
#undef MPI_Iallgather
#undef MPI_Ibcast
#undef MPI_Test
#undef MPI_Testall
#define MPI_Iallreduce hpcti_sim_iallreduce
#define MPI_Iallgather hpcti_sim_iallgather
#define MPI_Ibcast     hpcti_sim_ibcast
#define MPI_Test       hpcti_sim_test
#define MPI_Testall    hpcti_sim_testall

/* Payload scratch of this build: the receive blocks and wire copies of an average, and the
 * node window's halves, come from SMPI's shared malloc (one copy of the bytes for every rank,
 * and SMPI copies nothing into it), since what is received into them and summed from them
 * does not matter to timing (resident memory per rank: bench/results.md, twenty-fourth
 * session). */
struct hpcti_sim_pay {
    char *buf; /* [cap] SMPI_SHARED_MALLOC */
    size_t cap, used;
};

/* Room for bytes of payload slices in this operation; 0 when SMPI cannot map it. */
static inline int hpcti_sim_pay_reserve(struct hpcti_sim_pay *p, size_t bytes)
{
    p->used = 0;
    if (bytes <= p->cap) return 1;
    if (p->buf) SMPI_SHARED_FREE(p->buf);
    p->buf = SMPI_SHARED_MALLOC(bytes);
    p->cap = p->buf ? bytes : 0;
    return p->buf != NULL;
}

/* A 64-byte aligned slice of the reserved room. */
static inline void *hpcti_sim_pay_take(struct hpcti_sim_pay *p, size_t bytes)
{
    size_t at = (p->used + 63) & ~(size_t)63;
    p->used = at + bytes;
    return p->buf + at;
}

static inline void hpcti_sim_pay_free(struct hpcti_sim_pay *p)
{
    if (p->buf) SMPI_SHARED_FREE(p->buf);
    p->buf = NULL, p->cap = 0, p->used = 0;
}
#else
#define HPCTI_SIM_IALLREDUCE_SCRATCH 0
#endif

#include <string.h>

/* memcpy of a gradient payload; in the SMPI build its memory traffic in simulated time. */
static inline void hpcti_copy_payload(void *dst, const void *src, size_t bytes)
{
#ifdef HPCT_SIM
    (void)dst, (void)src;
    HPCTI_SIM_WORK(2 * bytes);
#else
    memcpy(dst, src, bytes);
#endif
}

#endif
