/* bench_allreduce.c: hpct_allreduce_mean against a plain MPI_Allreduce(MPI_SUM) of the same
 * buffer, 4 KiB to 256 MiB (a factor 4 apart), on the algorithm per size the library chose
 * (HPCT_ALLREDUCE_ALGO as set, else the timed probe of hpct_init, whose table rank 0 logs),
 * on an ordinary buffer and in place on an hpct_alloc_grads buffer, and on contexts forced
 * to each algorithm (shm: the node window where it is set up, p2p, mpi: MPI_Iallreduce then
 * times 1/W, allgather up to 1 MiB); then fused averaging (hpct_params_average_grads) against
 * one MPI_Allreduce per tensor for 100 tensors totalling 10 MiB and for 1,000 tensors of
 * 1-64 KiB (log-uniform sizes, fixed seed), each tensor its own allocation and, again, the
 * tensors carved back to back from one hpct_alloc_grads buffer (averaged where they lie). Beside
 * them the floors of floor.h, measured in the same rounds: the shared-memory floor (the least
 * memory work of an average when one node holds every rank), the read floor (only the reads
 * from the peers' memory that an average in place needs) and the wire floor (the least data
 * any allreduce moves, in 1 MiB messages, two at a time); MPI time / floor is about the most
 * a path could reach against MPI_Allreduce here (over loopback TCP the wire floor is a
 * yardstick, not a bound: pipelined averages have beaten it). Both sides in one run, each
 * size's variants interleaved round by round: mpirun -np 2 bench/bench_allreduce [max_mib]
 *   HPCT_RANKS_PER_NODE=2 mpirun --oversubscribe -x HPCT_RANKS_PER_NODE -np 4 \
 *       bench/bench_allreduce
 *   HPCT_RANKS_PER_NODE=1 mpirun --mca btl self,tcp -x HPCT_RANKS_PER_NODE -np 2 \
 *       bench/bench_allreduce
 *   HPCT_RANKS_PER_NODE=1 mpirun --mca btl_vader_single_copy_mechanism none \
 *       -x HPCT_RANKS_PER_NODE -np 2 bench/bench_allreduce    (shared memory in fragments)
 * The context of the chosen table is created first (a context created after the others
 * measured slower in every column here). Times are the slowest rank's, median of the
 * rounds. HPCT_FUSION_BYTES=N sets cfg.fusion_bytes (default HPCT_CONFIG_INITIALIZER's). */
#include <hpctrain.h>

#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "bench_util.h"
#include "floor.h"

static int rank, size;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

struct job {
    hpct_ctx_t ctx;
    hpct_params_t params;
    float *buf;
    size_t n;
    float **tensors;
    size_t *counts;
    int num;
    struct shm_floor *floor; /* the shared-memory floor's window (floor.h), or NULL */
    float *scratch;          /* the wire floor's buffers */
};

/* Write the inputs of job j on this rank (untimed), as backward writes gradients just before
 * their average: every variant starts from inputs hot in this rank's cache, whatever ran
 * before it (a variant timed right after MPI_Allreduce measured up to 2x slower without). */
static void refill(struct job *j)
{
    float *in = j->floor ? shm_floor_buf(j->floor) : j->buf;
    for (size_t i = 0; in && i < j->n; i++) in[i] = 1e-3f * (float)(i % 101);
    for (int t = 0; t < j->num; t++)
        for (size_t i = 0; i < j->counts[t]; i++) j->tensors[t][i] = 1e-3f * (float)(i % 101);
}

/* Median over reps of the slowest rank's time of one call of each of fn[k](arg[k]), k < nf,
 * interleaved round by round, the order rotated every round (after one warm-up call each),
 * into med [nf]; each call's inputs rewritten just before it (refill). */
static void timed(void (*const *fn)(void *), struct job *const *arg, int nf, int reps, double *med)
{
    double t[16][64];
    if (reps > 64) reps = 64;
    for (int k = 0; k < nf; k++) fn[k](arg[k]);
    for (int r = 0; r < reps; r++)
        for (int i = 0, k = r % nf; i < nf; i++, k = (k + 1) % nf) { /* each first in turn */
            refill(arg[k]);
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = now();
            fn[k](arg[k]);
            t[k][r] = now() - t0;
            MPI_Allreduce(MPI_IN_PLACE, &t[k][r], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        }
    for (int k = 0; k < nf; k++) {
        qsort(t[k], (size_t)reps, sizeof *t[k], cmp_double);
        med[k] = t[k][reps / 2];
    }
}

static void run_mpi(void *a)
{
    struct job *j = a;
    MPI_Allreduce(MPI_IN_PLACE, j->buf, (int)j->n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}

static void run_hpct(void *a)
{
    struct job *j = a;
    if (hpct_allreduce_mean(j->ctx, j->buf, j->n)) {
        fprintf(stderr, "rank %d: %s\n", rank, hpct_last_error(j->ctx));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

static void run_per_tensor(void *a)
{
    struct job *j = a;
    for (int i = 0; i < j->num; i++)
        MPI_Allreduce(MPI_IN_PLACE, j->tensors[i], (int)j->counts[i], MPI_FLOAT, MPI_SUM,
                      MPI_COMM_WORLD);
}

static void run_fused(void *a)
{
    struct job *j = a;
    if (hpct_params_average_grads(j->params)) MPI_Abort(MPI_COMM_WORLD, 1);
}

static void run_shm_floor(void *a)
{
    struct job *j = a;
    shm_floor_average(j->floor, j->n);
}

static void run_read_floor(void *a)
{
    struct job *j = a;
    shm_floor_read(j->floor, j->n);
}

static void run_wire_floor(void *a)
{
    struct job *j = a;
    wire_floor_exchange(MPI_COMM_WORLD, j->scratch, j->n);
}

enum {
    MPI_V,
    CHOSEN_V,
    IN_PLACE_V,
    SHM_V,
    P2P_V,
    MPI_ALGO_V,
    ALLGATHER_V,
    FLOOR_V,
    READ_V,
    WIRE_V,
    NV
};

/* One row of the sizes table: the times in us of the variants that ran (on), the others
 * "-", then MPI time / chosen, / in place, / the best forced path, / the floor (the
 * shared-memory floor where the world shares memory, else the wire floor): the most any path
 * could reach, and / the read floor (where the world shares memory): the most an average in
 * place could reach. */
static void print_row(size_t bytes, const double *t, const int *on)
{
    if (rank != 0) return;
    printf("%10zu", bytes);
    for (int k = 0; k < NV; k++) {
        int w = k == MPI_V ? 13 : k == CHOSEN_V ? 11 : 9;
        if (on[k])
            printf(" %*.1f", w, t[k] * 1e6);
        else
            printf(" %*s", w, "-");
    }
    double best = 1e30, floor = on[FLOOR_V] ? t[FLOOR_V] : t[WIRE_V];
    for (int k = SHM_V; k <= ALLGATHER_V; k++)
        if (on[k] && t[k] < best) best = t[k];
    printf(" %10.2fx %11.2fx %8.2fx %9.2fx", t[0] / t[CHOSEN_V], t[0] / t[IN_PLACE_V], t[0] / best,
           t[0] / floor);
    if (on[READ_V])
        printf(" %8.2fx\n", t[0] / t[READ_V]);
    else
        printf(" %9s\n", "-");
    fflush(stdout);
}

/* Times in us of MPI_Allreduce, hpct on the chosen table (on an ordinary buffer and in
 * place on an hpct_alloc_grads buffer), hpct forced to each of forced [4] (shm, p2p, mpi,
 * allgather: up to 1 MiB), the shared-memory and read floors (when one node holds every
 * rank) and the wire floor (floor.h); ratios as print_row. */
static void sizes_table(hpct_ctx_t ctx, hpct_ctx_t *forced, size_t max_bytes, int one_node)
{
    float *buf = malloc(max_bytes), *grads = NULL;
    for (size_t i = 0; i < max_bytes / 4; i++) buf[i] = 1e-3f * (float)(i % 101);
    if (hpct_alloc_grads(ctx, max_bytes / 4, &grads)) MPI_Abort(MPI_COMM_WORLD, 3);
    float *scratch = malloc(wire_floor_scratch(MPI_COMM_WORLD, max_bytes / 4) * sizeof *scratch +
                            sizeof *scratch);
    struct shm_floor *fl = one_node ? shm_floor_create(MPI_COMM_WORLD, max_bytes / 4) : NULL;
    if (fl && !shm_floor_correct(fl)) {
        if (rank == 0) fprintf(stderr, "bench_allreduce: the shared-memory floor is wrong\n");
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    if (rank == 0)
        printf("%10s %13s %11s %9s %9s %9s %9s %9s %9s %9s %9s %11s %12s %9s %10s %9s\n", "bytes",
               "MPI_Allreduce", "hpct chosen", "in place", "shm", "p2p", "mpi", "allgather",
               "shm floor", "read", "wire", "chosen/MPI", "in place/MPI", "best/MPI", "floor/MPI",
               "read/MPI");
    for (size_t bytes = 4096; bytes <= max_bytes; bytes *= 4) {
        struct job j[NV];
        hpct_ctx_t c[NV] = {ctx,       ctx,       ctx,  forced[0], forced[1],
                            forced[2], forced[3], NULL, NULL,      NULL};
        void (*all[NV])(void *) = {run_mpi,        run_hpct,      run_hpct, run_hpct,
                                   run_hpct,       run_hpct,      run_hpct, run_shm_floor,
                                   run_read_floor, run_wire_floor};
        /* allgather (every peer's whole buffer) up to 1 MiB; the memory floors on one node */
        int on[NV] = {1, 1, 1, 1, 1, 1, bytes <= (1 << 20), fl != NULL, fl != NULL, 1};
        void (*fn[NV])(void *);
        struct job *arg[NV];
        int idx[NV], nf = 0;
        for (int k = 0; k < NV; k++) {
            j[k] = (struct job){.ctx = c[k],
                                .buf = k == IN_PLACE_V ? grads : buf,
                                .n = bytes / 4,
                                .floor = k == FLOOR_V || k == READ_V ? fl : NULL,
                                .scratch = scratch};
            if (on[k]) idx[nf] = k, fn[nf] = all[k], arg[nf] = &j[k], nf++;
        }
        int reps = bytes <= (1 << 20) ? 31 : bytes <= (16 << 20) ? 11 : 5;
        double got[NV], t[NV] = {0};
        timed(fn, arg, nf, reps, got);
        for (int i = 0; i < nf; i++) t[idx[i]] = got[i];
        print_row(bytes, t, on);
    }
    shm_floor_free(fl);
    hpct_free_grads(ctx, grads);
    free(scratch);
    free(buf);
}

/* Tensors [num] of counts [num] floats registered in a parameter set of ctx: each its own
 * allocation, or (base) back to back in base [sum of counts]. */
static void make_tensors(struct job *j, hpct_ctx_t ctx, const size_t *counts, int num, float *base)
{
    size_t off = 0;
    *j = (struct job){.ctx = ctx, .num = num};
    j->tensors = calloc((size_t)num, sizeof *j->tensors);
    j->counts = calloc((size_t)num, sizeof *j->counts);
    hpct_params_create(ctx, &j->params);
    for (int i = 0; i < num; i++) {
        j->counts[i] = counts[i];
        j->tensors[i] = base ? base + off : calloc(counts[i], sizeof(float));
        off += counts[i];
        float *param = calloc(counts[i], sizeof(float));
        char name[32];
        snprintf(name, sizeof name, "t%d", i);
        hpct_params_register(j->params, name, param, j->tensors[i], counts[i]);
    }
}

/* Fused hpct against one MPI_Allreduce per tensor, interleaved with the floor of any average
 * of the same total (the shared-memory floor when one node holds every rank, else the wire
 * floor; floor.h): per-tensor time / floor is the most any fusion could reach. */
static void fusion_case(hpct_ctx_t ctx, const char *what, const size_t *counts, int num, int reps,
                        int one_node)
{
    struct job j, carved, whole;
    size_t sum = 0;
    for (int i = 0; i < num; i++) sum += counts[i];
    float *grads = NULL;
    if (hpct_alloc_grads(ctx, sum, &grads)) MPI_Abort(MPI_COMM_WORLD, 5);
    make_tensors(&j, ctx, counts, num, NULL);
    make_tensors(&carved, ctx, counts, num, grads);
    whole = (struct job){.ctx = ctx, .n = sum}; /* the floor's own buffers, no input of its own */
    whole.floor = one_node ? shm_floor_create(MPI_COMM_WORLD, sum) : NULL;
    whole.scratch = calloc(wire_floor_scratch(MPI_COMM_WORLD, sum) + 1, sizeof(float));
    void (*fn[4])(void *) = {run_per_tensor, run_fused, run_fused,
                             whole.floor ? run_shm_floor : run_wire_floor};
    struct job *arg[4] = {&j, &j, &carved, &whole};
    double t[4];
    timed(fn, arg, 4, reps, t);
    if (rank == 0)
        printf("%s, %zu bytes in all: per-tensor MPI_Allreduce %.1f us, fused hpct %.1f us, "
               "speedup %.2fx; carved from one hpct_alloc_grads buffer %.1f us, %.2fx; %s floor "
               "of the total %.1f us: at most %.2fx\n",
               what, sum * 4, t[0] * 1e6, t[1] * 1e6, t[0] / t[1], t[2] * 1e6, t[0] / t[2],
               whole.floor ? "shared-memory" : "wire", t[3] * 1e6, t[0] / t[3]);
    fflush(stdout);
    shm_floor_free(whole.floor);
    free(whole.scratch);
}

/* 100 tensors of uneven sizes (1..10 units) totalling 10 MiB; 1,000 tensors of 1-64 KiB,
 * log-uniform (fixed seed). */
static void fusion_table(hpct_ctx_t ctx, int one_node)
{
    enum { FEW = 100, MANY = 1000 };
    size_t total = (size_t)10 << 18, units = 0, sum = 0, counts[MANY];
    for (int i = 0; i < FEW; i++) units += (size_t)(i % 10 + 1);
    for (int i = 0; i < FEW; i++) {
        counts[i] = i == FEW - 1 ? total - sum : total / units * (size_t)(i % 10 + 1);
        sum += counts[i];
    }
    printf(rank == 0 ? "\n" : "");
    fusion_case(ctx, "100 tensors", counts, FEW, 11, one_node);
    unsigned long long st = 12345;
    for (int i = 0; i < MANY; i++) { /* 2^10 .. 2^16 bytes, uniform in the exponent */
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        double u = (double)(st >> 11) * (1.0 / 9007199254740992.0);
        counts[i] = (size_t)(pow(2.0, 10.0 + 6.0 * u) / 4.0);
    }
    fusion_case(ctx, "1000 tensors of 1-64 KiB", counts, MANY, 11, one_node);
}

/* A context with HPCT_ALLREDUCE_ALGO=algo (the variable restored after). */
static hpct_ctx_t forced_ctx(const hpct_config_t *cfg, const char *algo)
{
    const char *was = getenv("HPCT_ALLREDUCE_ALGO");
    char saved[256];
    snprintf(saved, sizeof saved, "%s", was ? was : "");
    setenv("HPCT_ALLREDUCE_ALGO", algo, 1);
    hpct_ctx_t c;
    if (hpct_init(cfg, &c)) MPI_Abort(MPI_COMM_WORLD, 1);
    if (was)
        setenv("HPCT_ALLREDUCE_ALGO", saved, 1);
    else
        unsetenv("HPCT_ALLREDUCE_ALGO");
    return c;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
    cfg.num_threads = 1;
    cfg.fusion_bytes = (size_t)env_long("HPCT_FUSION_BYTES", (long)cfg.fusion_bytes, 0, 1L << 40);
    hpct_config_t chosen = cfg;
    if (rank == 0) chosen.log_level = HPCT_LOG_INFO; /* the chosen table, on stderr */
    hpct_ctx_t ctx;
    if (hpct_init(&chosen, &ctx)) return 1;
    fflush(stderr);
    hpct_ctx_t forced[4] = {forced_ctx(&cfg, "shm"), forced_ctx(&cfg, "p2p"),
                            forced_ctx(&cfg, "mpi"), forced_ctx(&cfg, "allgather")};
    size_t max_mib = argc > 1 ? (size_t)atol(argv[1]) : 256;
    hpct_topology_t t = HPCT_TOPOLOGY_INITIALIZER;
    hpct_topology(ctx, &t);
    if (rank == 0)
        printf("W=%d, %d node(s) of %d, %s path, fusion buffer %zu bytes, HPCT_NODE_REDUCE=%s\n",
               size, t.num_nodes, t.local_size, t.hierarchical ? "hierarchical" : "flat",
               cfg.fusion_bytes, getenv("HPCT_NODE_REDUCE") ? getenv("HPCT_NODE_REDUCE") : "auto");
    sizes_table(ctx, forced, max_mib << 20, t.num_nodes == 1);
    fusion_table(ctx, t.num_nodes == 1);
    for (int k = 0; k < 4; k++) hpct_finalize(forced[k]);
    int bad = hpct_finalize(ctx) != HPCT_SUCCESS;
    MPI_Finalize();
    return bad;
}
