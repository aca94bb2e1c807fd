/* burgers_insitu.c: a simulation that trains a surrogate of its own time step while it runs.
 *
 * The 1-D viscous Burgers equation u_t + u u_x = nu u_xx on a periodic domain of n points,
 * explicit central differences, the points split into blocks over the MPI ranks with a halo
 * exchange every step (each point's update reads only its neighbours: the field is the same
 * at any number of ranks, bit for bit). Every step each rank takes 64 random points of its
 * block and trains a small MLP, averaged over the ranks, to predict the solver's update
 * there from u and its first and second differences. The surrogate, its optimizer and schedule and
 * the checkpoints come from a settings file (burgers_insitu.conf, hpctrain.conf(5)).
 *
 * The field is registered as one global array (hpct_insitu_add_block): every checkpoint
 * holds it whole, and a run restarted on another number of ranks resumes with each rank
 * reading its new block. SIGTERM or SIGUSR1 (Slurm's preemption) stops the run after the
 * current step with a checkpoint, exit 75; run it again to resume.
 *
 * Library calls: 6. hpct_insitu_open (first: it installs the SIGTERM/SIGUSR1 handlers, then
 * initialises MPI), hpct_insitu_add_block, hpct_insitu_start, hpct_insitu_step,
 * hpct_insitu_close (the final checkpoint; it finalises MPI), and hpct_insitu_last_error to
 * say why a call failed.
 *
 * Build: mpicc burgers_insitu.c $(pkg-config --static --cflags --libs hpctrain)
 * Run:   mpirun -np 2 ./burgers_insitu [--settings FILE (burgers_insitu.conf)] [--steps N
 *        (400)] [--checkpoints DIR (burgers-ckpt)] [--points N (256)] [--report N (100)]
 *        [--allow-settings-change]
 * Exit:  0 done, 75 preempted (checkpoint written: run again to resume), 2 bad arguments or
 *        settings (also: a checkpoint of other settings), 1 another error. */
#include <hpctrain.h>
#include <mpi.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { BATCH = 64, STENCIL = 3, EXIT_PREEMPTED = 75 };
static const double NU = 0.01; /* viscosity */

struct options {
    const char *settings, *checkpoints;
    long steps, points, report;
    int allow_change;
};

/* This rank's block: points [first, first + count) of the periodic field, u [count + 2] with
 * one halo point on each side. */
struct sim {
    int rank, ranks, left, right;
    long n, first, count;
    double h, dt;     /* grid spacing, time step (stable for |u| <= 1 and this nu) */
    double *u, *next; /* [count + 2] */
};

static int usage(const char *why)
{
    fprintf(stderr,
            "%s%susage: burgers_insitu [--settings FILE] [--steps N] [--checkpoints DIR] "
            "[--points N] [--report N] [--allow-settings-change]\n",
            why ? why : "", why ? "\n" : "");
    return 2;
}

static int parse(int argc, char **argv, struct options *o)
{
    *o = (struct options){"burgers_insitu.conf", "burgers-ckpt", 400, 256, 100, 0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--allow-settings-change")) {
            o->allow_change = 1;
            continue;
        }
        if (!v) return usage(a);
        i++;
        if (!strcmp(a, "--settings"))
            o->settings = v;
        else if (!strcmp(a, "--checkpoints"))
            o->checkpoints = v;
        else if (!strcmp(a, "--steps"))
            o->steps = atol(v);
        else if (!strcmp(a, "--points"))
            o->points = atol(v);
        else if (!strcmp(a, "--report"))
            o->report = atol(v);
        else
            return usage(a);
    }
    return o->steps > 0 && o->points >= 8 && o->report > 0 ? 0 : usage("bad number");
}

/* The block of every rank (uneven: the first n % ranks get one point more), and u at t = 0:
 * a sine wave, which steepens into a front that viscosity holds. */
static int make_sim(struct sim *s, long n)
{
    MPI_Comm_rank(MPI_COMM_WORLD, &s->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &s->ranks);
    long base = n / s->ranks, extra = n % s->ranks;
    s->n = n;
    s->count = base + (s->rank < extra);
    s->first = s->rank * base + (s->rank < extra ? s->rank : extra);
    s->left = (s->rank + s->ranks - 1) % s->ranks, s->right = (s->rank + 1) % s->ranks;
    s->h = 1.0 / (double)n;
    s->dt = 0.2 * s->h * s->h / NU < 0.5 * s->h ? 0.2 * s->h * s->h / NU : 0.5 * s->h;
    s->u = calloc((size_t)s->count + 2, sizeof *s->u);
    s->next = calloc((size_t)s->count + 2, sizeof *s->next);
    if (!s->u || !s->next) return 1;
    for (long i = 0; i < s->count; i++)
        s->u[i + 1] = sin(2.0 * M_PI * (double)(s->first + i) * s->h);
    return 0;
}

/* The neighbours' edge points into the halo (periodic). */
static void exchange(struct sim *s)
{
    MPI_Sendrecv(&s->u[s->count], 1, MPI_DOUBLE, s->right, 1, &s->u[0], 1, MPI_DOUBLE, s->left, 1,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Sendrecv(&s->u[1], 1, MPI_DOUBLE, s->left, 2, &s->u[s->count + 1], 1, MPI_DOUBLE, s->right,
                 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

/* The solver's update (u_next - u) / dt at local point i (1..count), from u's 3 values. */
static double rate(const struct sim *s, const double *w)
{
    double adv = w[1] * (w[2] - w[0]) / (2.0 * s->h);
    double dif = NU * (w[2] - 2.0 * w[1] + w[0]) / (s->h * s->h);
    return dif - adv;
}

static void solver_step(struct sim *s)
{
    for (long i = 1; i <= s->count; i++) s->next[i] = s->u[i] + s->dt * rate(s, &s->u[i - 1]);
}

/* BATCH random points of this block (a generator seeded by step and rank: the same points
 * after a resume at the same number of ranks): x [BATCH, 3] u there and its first and second
 * differences, scaled to order 1 (by 2 pi and (2 pi)^2, the wave's); y [BATCH] the solver's
 * update there divided by 10. */
static void make_batch(const struct sim *s, long step, float *x, float *y)
{
    uint64_t state = 0x9e3779b97f4a7c15ULL * (uint64_t)(step + 1) + (uint64_t)s->rank;
    const double k = 2.0 * M_PI;
    for (int b = 0; b < BATCH; b++) {
        state ^= state << 13, state ^= state >> 7, state ^= state << 17;
        const double *w = &s->u[state % (uint64_t)s->count]; /* u at i - 1, i, i + 1 */
        x[b * STENCIL + 0] = (float)w[1];
        x[b * STENCIL + 1] = (float)((w[2] - w[0]) / (2.0 * s->h) / k);
        x[b * STENCIL + 2] = (float)((w[2] - 2.0 * w[1] + w[0]) / (s->h * s->h) / (k * k));
        y[b] = (float)(rate(s, w) / 10.0);
    }
}

/* FNV-1a over the bits of the whole field, gathered on rank 0 (the same at any W). */
static uint64_t field_checksum(const struct sim *s)
{
    int *counts = malloc(sizeof *counts * (size_t)s->ranks);
    int *offsets = malloc(sizeof *offsets * (size_t)s->ranks);
    double *all = s->rank == 0 ? malloc(sizeof *all * (size_t)s->n) : NULL;
    int mine = (int)s->count;
    uint64_t h = 0xcbf29ce484222325ULL;
    MPI_Gather(&mine, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    for (int r = 0, at = 0; s->rank == 0 && r < s->ranks; at += counts[r++]) offsets[r] = at;
    MPI_Gatherv(&s->u[1], mine, MPI_DOUBLE, all, counts, offsets, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    for (long i = 0; all && i < s->n; i++) {
        const unsigned char *b = (const unsigned char *)&all[i];
        for (size_t j = 0; j < sizeof all[i]; j++) h = (h ^ b[j]) * 0x100000001b3ULL;
    }
    free(all), free(offsets), free(counts);
    return h;
}

/* The overrides of the settings from the command line: "key = value; ...". */
static void overrides(const struct options *o, char *buf, size_t n)
{
    snprintf(buf, n, "checkpoint_dir = %s; total_steps = %ld", o->checkpoints, o->steps);
}

/* A failed call: rank 0 says why (the failure is every rank's); the exit code. */
static int failed(hpct_insitu_t session, const char *what, hpct_status_t status, int rank)
{
    if (rank == 0)
        fprintf(stderr, "burgers: %s failed: %s\n", what, hpct_insitu_last_error(session));
    return status == HPCT_ERR_INVALID_ARG ? 2 : 1;
}

static int run(hpct_insitu_t session, struct sim *s, const struct options *o)
{
    size_t global = (size_t)s->n, offset = (size_t)s->first, count = (size_t)s->count;
    hpct_status_t st = hpct_insitu_add_block(session, "burgers/u", HPCT_CKPT_F64, &s->u[1], 1,
                                             &global, &offset, &count);
    if (st) return failed(session, "registering the field", st, s->rank);
    long step = 0; /* steps trained: one per time step */
    if ((st = hpct_insitu_start(session, &step))) return failed(session, "starting", st, s->rank);
    if (step > 0 && s->rank == 0)
        printf("burgers: resumed at step %ld on %d ranks\n", step, s->ranks);
    float x[BATCH * STENCIL], y[BATCH], loss = 0.0f;
    while (step < o->steps) {
        exchange(s);
        make_batch(s, step, x, y);
        solver_step(s);
        memcpy(&s->u[1], &s->next[1], sizeof *s->u * (size_t)s->count);
        step++; /* the field is final for this step: train */
        st = hpct_insitu_step(session, x, y, BATCH, &loss);
        if (st == HPCT_PREEMPTED) {
            if (s->rank == 0)
                printf("burgers: preempted after step %ld; checkpoint written; exit %d\n", step,
                       EXIT_PREEMPTED);
            return EXIT_PREEMPTED;
        }
        if (st) return failed(session, "a training step", st, s->rank);
        if (s->rank == 0 && step % o->report == 0)
            printf("burgers: step %ld loss %.6e\n", step, (double)loss);
    }
    uint64_t sum = field_checksum(s);
    if (s->rank == 0)
        printf("burgers: done: %ld steps, field checksum %016llx\n", step, (unsigned long long)sum);
    return 0;
}

int main(int argc, char **argv)
{
    struct options o;
    char over[2048];
    int code = parse(argc, argv, &o);
    if (code) return code;
    overrides(&o, over, sizeof over);
    hpct_insitu_t session;
    hpct_status_t st =
        hpct_insitu_open(HPCT_COMM_WORLD, o.settings, over,
                         o.allow_change ? HPCT_INSITU_ALLOW_SETTINGS_CHANGE : 0, &session);
    if (st) { /* MPI is down again: the launcher's rank says who prints */
        const char *r = getenv("OMPI_COMM_WORLD_RANK");
        if (!r) r = getenv("PMIX_RANK");
        return failed(NULL, "opening the session", st, r ? atoi(r) : 0);
    }
    struct sim s = {0};
    code = make_sim(&s, o.points) ? failed(session, "allocating the field", HPCT_ERR_NO_MEMORY, 0)
                                  : run(session, &s, &o);
    fflush(stdout);
    st = hpct_insitu_close(session); /* the final checkpoint unless preempted; MPI_Finalize */
    if (st && !code) code = failed(NULL, "the final checkpoint", st, s.rank);
    free(s.u), free(s.next);
    return code;
}
