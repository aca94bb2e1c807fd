/* heat_cnn_insitu.c: a 2-D simulation that trains a convolutional surrogate of its own time
 * step while it runs.
 *
 * The heat equation with cooling and a moving source, u_t = kappa (u_xx + u_yy) - lambda u +
 * f(x, y, t), on a periodic n x n grid, explicit 5-point differences (time in units of the
 * grid's diffusion time h^2 / kappa, time step 0.2 of it); the rows are split into
 * blocks over the MPI ranks, with 2 halo rows above and below exchanged every step (the
 * field is the same at any number of ranks, bit for bit). The source f is a Gaussian blob
 * circling the domain, so the field keeps changing.
 *
 * Every step each rank cuts 16 random 12 x 12 patches of two channels, u and f, out of its
 * block and halo, and trains a small CNN (examples/heat_cnn_insitu.conf: two "valid" 3x3
 * convolutions, so an 8 x 8 output from a 12 x 12 input) to predict the solver's update
 * (u_next - u) / dt on the inner 8 x 8 points; the gradients are averaged over the ranks.
 * Every --report steps rank 0 prints the training loss and the surrogate's error on fresh
 * patches: the RMS of (predicted - solver's) next field over the RMS of the solver's change,
 * over every rank's patches.
 *
 * The field is registered as one global array (hpct_insitu_add_block): every checkpoint holds
 * it whole; SIGTERM or SIGUSR1 (Slurm's preemption) stops the run after the current step with
 * a checkpoint, exit 75; run it again to resume, at any number of ranks.
 *
 * Build: mpicc heat_cnn_insitu.c $(pkg-config --static --cflags --libs hpctrain) -lm
 * Run:   mpirun -np 2 ./heat_cnn_insitu [--settings FILE (heat_cnn_insitu.conf)] [--steps N
 *        (600)] [--checkpoints DIR (heat-cnn-ckpt)] [--size N (32)] [--report N (50)]
 * Exit:  0 done, 75 preempted (checkpoint written: run again to resume), 2 bad arguments or
 *        settings, 1 another error. */
#include <hpctrain.h>
#include <mpi.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { HALO = 2, PATCH = 8, IN = PATCH + 2 * HALO, BATCH = 16, EXIT_PREEMPTED = 75 };
enum { INPUTS = 2 * IN * IN, OUTPUTS = PATCH * PATCH };
static const double DT = 0.2, LAMBDA = 0.5, SIGMA = 0.08; /* SIGMA: of the unit square */

struct options {
    const char *settings, *checkpoints;
    long steps, size, report;
};

/* This rank's rows [first, first + count) of the n x n field: u [(count + 2 HALO) n], HALO
 * halo rows above and below its own. */
struct sim {
    int rank, ranks, up, down;
    long n, first, count;
    double h; /* grid spacing of the unit square */
    double *u, *next;
};

static int usage(const char *why)
{
    fprintf(stderr,
            "%s%susage: heat_cnn_insitu [--settings FILE] [--steps N] [--checkpoints DIR] "
            "[--size N] [--report N]\n",
            why ? why : "", why ? "\n" : "");
    return 2;
}

static int parse(int argc, char **argv, struct options *o)
{
    *o = (struct options){"heat_cnn_insitu.conf", "heat-cnn-ckpt", 600, 32, 50};
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) return usage(a);
        if (!strcmp(a, "--settings"))
            o->settings = v;
        else if (!strcmp(a, "--checkpoints"))
            o->checkpoints = v;
        else if (!strcmp(a, "--steps"))
            o->steps = atol(v);
        else if (!strcmp(a, "--size"))
            o->size = atol(v);
        else if (!strcmp(a, "--report"))
            o->report = atol(v);
        else
            return usage(a);
    }
    return o->steps > 0 && o->size >= IN && o->size <= 4096 && o->report > 0 ? 0
                                                                             : usage("bad number");
}

/* The source at grid point (row, col) at time t: a Gaussian of width SIGMA centred on a point
 * circling the middle of the unit square once every 400 steps; periodic distances. */
static double source(const struct sim *s, long row, long col, double t)
{
    double w = 2.0 * M_PI / (400.0 * DT);
    row = ((row % s->n) + s->n) % s->n, col = ((col % s->n) + s->n) % s->n;
    double cy = 0.5 + 0.25 * sin(w * t), cx = 0.5 + 0.25 * cos(w * t);
    double dy = fabs((double)row * s->h - cy), dx = fabs((double)col * s->h - cx);
    dy = dy > 0.5 ? 1.0 - dy : dy, dx = dx > 0.5 ? 1.0 - dx : dx;
    return exp(-(dx * dx + dy * dy) / (2.0 * SIGMA * SIGMA));
}

/* Blocks of rows (the first n % ranks get one more); u = 0 at t = 0. */
static int make_sim(struct sim *s, long n)
{
    MPI_Comm_rank(MPI_COMM_WORLD, &s->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &s->ranks);
    long base = n / s->ranks, extra = n % s->ranks;
    s->n = n;
    s->count = base + (s->rank < extra);
    s->first = s->rank * base + (s->rank < extra ? s->rank : extra);
    s->up = (s->rank + s->ranks - 1) % s->ranks, s->down = (s->rank + 1) % s->ranks;
    s->h = 1.0 / (double)n;
    if (s->count < PATCH) return 1; /* a patch's rows must fit in a block */
    s->u = calloc((size_t)(s->count + 2 * HALO) * (size_t)n, sizeof *s->u);
    s->next = calloc((size_t)(s->count + 2 * HALO) * (size_t)n, sizeof *s->next);
    return !s->u || !s->next;
}

/* u at local row r (0 .. count + 2 HALO) and any column (periodic). */
static double at(const struct sim *s, long r, long c)
{
    return s->u[r * s->n + ((c % s->n) + s->n) % s->n];
}

/* The HALO rows next to each neighbour's block (periodic in rows). */
static void exchange(struct sim *s)
{
    size_t rows = (size_t)HALO * (size_t)s->n;
    double *top = s->u + (size_t)HALO * s->n, *bottom = s->u + (size_t)s->count * s->n;
    MPI_Sendrecv(bottom, (int)rows, MPI_DOUBLE, s->down, 1, s->u, (int)rows, MPI_DOUBLE, s->up, 1,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Sendrecv(top, (int)rows, MPI_DOUBLE, s->up, 2, s->u + (size_t)(s->count + HALO) * s->n,
                 (int)rows, MPI_DOUBLE, s->down, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

/* The solver's update (u_next - u) / DT at local row r, column c, time t (the Laplacian in
 * grid units: kappa / h^2 is 1). */
static double rate(const struct sim *s, long r, long c, double t)
{
    double lap =
        at(s, r - 1, c) + at(s, r + 1, c) + at(s, r, c - 1) + at(s, r, c + 1) - 4.0 * at(s, r, c);
    return lap - LAMBDA * at(s, r, c) + source(s, s->first + r - HALO, c, t);
}

static void solver_step(struct sim *s, double t)
{
    for (long r = HALO; r < s->count + HALO; r++)
        for (long c = 0; c < s->n; c++) s->next[r * s->n + c] = at(s, r, c) + DT * rate(s, r, c, t);
    memcpy(s->u + (size_t)HALO * s->n, s->next + (size_t)HALO * s->n,
           sizeof *s->u * (size_t)s->count * (size_t)s->n);
}

/* BATCH random patches (a generator seeded by step, rank and salt: the same after a resume at
 * the same number of ranks): x [BATCH, 2, IN, IN] u and f, y [BATCH, PATCH, PATCH] the
 * solver's update (u_next - u) / DT on the inner points. */
static void make_batch(const struct sim *s, long step, uint64_t salt, float *x, float *y)
{
    uint64_t state = 0x9e3779b97f4a7c15ULL * (uint64_t)(step + 1) + (uint64_t)s->rank + salt;
    double t = (double)step * DT;
    for (int b = 0; b < BATCH; b++) {
        state ^= state << 13, state ^= state >> 7, state ^= state << 17;
        long r0 = (long)(state % (uint64_t)(s->count - PATCH + 1)); /* first inner row - HALO */
        long c0 = (long)((state >> 32) % (uint64_t)s->n);
        float *xu = x + (size_t)b * INPUTS, *xf = xu + IN * IN;
        for (long i = 0; i < IN; i++)
            for (long j = 0; j < IN; j++) {
                xu[i * IN + j] = (float)at(s, r0 + i, c0 + j);
                xf[i * IN + j] = (float)source(s, s->first + r0 + i - HALO, c0 + j, t);
            }
        for (long i = 0; i < PATCH; i++)
            for (long j = 0; j < PATCH; j++)
                y[(size_t)b * OUTPUTS + (size_t)(i * PATCH + j)] =
                    (float)rate(s, r0 + i + HALO, c0 + j + HALO, t);
    }
}

/* The surrogate's error on fresh patches of every rank: the RMS of its next field minus the
 * solver's over the RMS of the solver's change in the step (= of the updates); rank 0's. */
static double surrogate_error(hpct_insitu_t session, const struct sim *s, long step, float *x,
                              float *y, float *pred)
{
    make_batch(s, step, 0x5bd1e995ULL, x, y);
    double sums[2] = {0.0, 0.0}, all[2] = {0.0, 0.0};
    if (hpct_insitu_predict(session, x, BATCH, pred)) return NAN;
    for (int i = 0; i < BATCH * OUTPUTS; i++) {
        double d = (double)pred[i] - y[i];
        sums[0] += d * d, sums[1] += (double)y[i] * y[i];
    }
    MPI_Reduce(sums, all, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    return all[1] > 0.0 ? sqrt(all[0] / all[1]) : NAN;
}

/* FNV-1a over the bits of the whole field, gathered on rank 0 (the same at any W). */
static uint64_t field_checksum(const struct sim *s)
{
    int *counts = malloc(sizeof *counts * (size_t)s->ranks);
    int *offsets = malloc(sizeof *offsets * (size_t)s->ranks);
    double *all = s->rank == 0 ? malloc(sizeof *all * (size_t)(s->n * s->n)) : NULL;
    int mine = (int)(s->count * s->n);
    uint64_t h = 0xcbf29ce484222325ULL;
    MPI_Gather(&mine, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    for (int r = 0, at0 = 0; s->rank == 0 && r < s->ranks; at0 += counts[r++]) offsets[r] = at0;
    MPI_Gatherv(s->u + (size_t)HALO * s->n, mine, MPI_DOUBLE, all, counts, offsets, MPI_DOUBLE, 0,
                MPI_COMM_WORLD);
    for (long i = 0; all && i < s->n * s->n; i++) {
        const unsigned char *b = (const unsigned char *)&all[i];
        for (size_t j = 0; j < sizeof all[i]; j++) h = (h ^ b[j]) * 0x100000001b3ULL;
    }
    free(all), free(offsets), free(counts);
    return h;
}

/* A failed call: rank 0 says why (the failure is every rank's); the exit code. */
static int failed(hpct_insitu_t session, const char *what, hpct_status_t status, int rank)
{
    if (rank == 0)
        fprintf(stderr, "heat_cnn: %s failed: %s\n", what, hpct_insitu_last_error(session));
    return status == HPCT_ERR_INVALID_ARG ? 2 : 1;
}

static int run(hpct_insitu_t session, struct sim *s, const struct options *o)
{
    size_t global[2] = {(size_t)s->n, (size_t)s->n}, offset[2] = {(size_t)s->first, 0};
    size_t count[2] = {(size_t)s->count, (size_t)s->n};
    hpct_status_t st = hpct_insitu_add_block(session, "heat/u", HPCT_CKPT_F64,
                                             s->u + (size_t)HALO * s->n, 2, global, offset, count);
    if (st) return failed(session, "registering the field", st, s->rank);
    long step = 0;
    if ((st = hpct_insitu_start(session, &step))) return failed(session, "starting", st, s->rank);
    if (step > 0 && s->rank == 0)
        printf("heat_cnn: resumed at step %ld on %d ranks\n", step, s->ranks);
    float *x = malloc(sizeof *x * BATCH * INPUTS), *y = malloc(sizeof *y * BATCH * OUTPUTS);
    float *pred = malloc(sizeof *pred * BATCH * OUTPUTS), loss = 0.0f;
    int code = x && y && pred ? 0 : failed(session, "allocating batches", HPCT_ERR_NO_MEMORY, 0);
    while (!code && step < o->steps) {
        exchange(s);
        make_batch(s, step, 0, x, y);
        solver_step(s, (double)step * DT);
        step++; /* the field is final for this step: train */
        st = hpct_insitu_step(session, x, y, BATCH, &loss);
        if (st == HPCT_PREEMPTED) {
            if (s->rank == 0)
                printf("heat_cnn: preempted after step %ld; checkpoint written; exit %d\n", step,
                       EXIT_PREEMPTED);
            code = EXIT_PREEMPTED;
        } else if (st) {
            code = failed(session, "a training step", st, s->rank);
        } else if (step % o->report == 0) {
            exchange(s);
            double err = surrogate_error(session, s, step, x, y, pred);
            if (s->rank == 0)
                printf("heat_cnn: step %ld loss %.4e surrogate error %.4f\n", step, (double)loss,
                       err);
        }
    }
    free(x), free(y), free(pred);
    if (code) return code;
    uint64_t sum = field_checksum(s);
    if (s->rank == 0)
        printf("heat_cnn: done: %ld steps, field checksum %016llx\n", step,
               (unsigned long long)sum);
    return 0;
}

int main(int argc, char **argv)
{
    struct options o;
    char over[2048];
    int code = parse(argc, argv, &o);
    if (code) return code;
    snprintf(over, sizeof over, "checkpoint_dir = %s", o.checkpoints);
    hpct_insitu_t session;
    hpct_status_t st = hpct_insitu_open(HPCT_COMM_WORLD, o.settings, over, 0, &session);
    if (st) { /* MPI is down again: the launcher's rank says who prints */
        const char *r = getenv("OMPI_COMM_WORLD_RANK");
        if (!r) r = getenv("PMIX_RANK");
        return failed(NULL, "opening the session", st, r ? atoi(r) : 0);
    }
    struct sim s = {0};
    if (make_sim(&s, o.size)) {
        if (s.rank == 0)
            fprintf(stderr, "heat_cnn: %ld rows on %d ranks: each block needs %d rows at least\n",
                    o.size, s.ranks, PATCH);
        code = 2;
    } else {
        code = run(session, &s, &o);
    }
    fflush(stdout);
    st = hpct_insitu_close(session); /* the final checkpoint unless preempted; MPI_Finalize */
    if (st && !code) code = failed(NULL, "the final checkpoint", st, s.rank);
    free(s.u), free(s.next);
    return code;
}
