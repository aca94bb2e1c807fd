/* insitu_prog.c: the multi-rank checks of the in-situ session that t/test_insitu_dist.sh runs
 * under mpirun. Checks are agreed over all ranks (logical AND); rank 0 prints "PASS desc" or
 * "FAIL desc" lines and every rank exits 1 when any check failed. HPCT_TEST_BACKEND=cuda
 * trains on the cuda backend; HPCT_LOG_LEVEL=0..4 sets the library's log level.
 *   insitu_prog same STEPS     different data per rank: bit-identical replicas and losses;
 *                              with INSITU_DEVICE_ARRAYS=1 (cuda backend) x and y are passed
 *                              in device memory, the same hash expected as from host arrays
 *   insitu_prog uneven STEPS   local batches 3 and 5 (and 3 and 0) against one process
 *                              training on the concatenated rows
 *   insitu_prog fail           an error on one rank (NaN input, bad label, negative batch)
 *                              ends the step on every rank at once, naming that rank
 *   insitu_prog sim DIR STEPS STOP_AT SIGRANK EVERY shared|local
 *                              a simulation that trains in situ with a checkpoint every EVERY
 *                              steps in DIR (shared: one directory, written by rank 0, for
 *                              state replicated on every rank; local: DIR/rank<r> written by
 *                              each rank, for rank-local state); rank SIGRANK raises SIGTERM
 *                              before step STOP_AT (0: never). Prints "RESULT ..." hashes of
 *                              the parameters and the simulation fields; exits 75 when
 *                              preempted, after checking that every rank stopped at once.
 *   insitu_prog blocks DIR STEPS STOP_AT EVERY
 *                              simulation state decomposed in blocks (hpct_insitu_add_block):
 *                              a 2-D float64 field split by rows and a 3-D float32 cube split
 *                              along its middle dimension, both advanced point by point from
 *                              their global indices (W-independent), saved every EVERY steps in
 *                              DIR; rank 0 raises SIGTERM before step STOP_AT (0: never). Any
 *                              W resumes any W's checkpoint. Prints "BLOCKS ..." with the step
 *                              and decomposition-independent hashes of both arrays; with
 *                              INSITU_BLOCKS_TRANSPOSED set the field registers as [7][10].
 *   insitu_prog blocks_bad     blocks that overlap, leave a gap, exceed the global shape or
 *                              disagree on it: refused on every rank, naming the rank(s)
 *   insitu_prog split DIR STEPS
 *                              a simulation whose even world ranks train on a communicator of
 *                              their own (hpct_init_comm) and whose odd ranks only simulate;
 *                              every rank installs the signal handlers first (NULL context),
 *                              and every step the world agrees (MPI_MAX) whether to stop: a
 *                              training rank after HPCT_PREEMPTED, a simulating one when a
 *                              signal is pending. Rank 0 prints "SPLIT ..." when it starts;
 *                              every rank exits 75 after a preemption, 0 after STEPS steps.
 *   insitu_prog agree          hpcti_agree (integer MAX/MIN/SUM), a failure's detail shared
 *                              by every rank, the found-checkpoint agreement at resume
 *   insitu_prog nonfinite      own gradients with an Inf or a NaN on the last rank only: every
 *                              rank refuses the averaged gradient with HPCT_ERR_NONFINITE
 *                              (no agreement needed: the average has the same bits
 *                              everywhere), nothing changes, the next step trains; without
 *                              and with clip_norm */
#include "config.h"
#include "hpctrain.h"
#include "mpi_prog.h"
#include "../../lib/comm/agree.h"
#include "../../lib/core/core.h"
#include "../../lib/device/ops.h"

#include <math.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define FEATURES       TOY_FEATURES
#define CLASSES        TOY_CLASSES
#define MAXB           8
#define EXIT_PREEMPTED 75

static hpct_ctx_t start(double timeout_s)
{
    hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
    cfg.seed = 5;
    cfg.collective_timeout_s = timeout_s;
    cfg.consistency_interval = 5;
    const char *be = getenv("HPCT_TEST_BACKEND"); /* t/test_gpu_train.sh: cuda */
    if (be && !strcmp(be, "cuda")) cfg.backend = HPCT_BACKEND_CUDA;
    const char *level = getenv("HPCT_LOG_LEVEL"); /* the library's log on stderr */
    if (level) cfg.log_level = (hpct_log_level_t)atoi(level);
    return mpi_start(&cfg);
}

static int finish(hpct_ctx_t ctx)
{
    int ok = hpct_finalize(ctx) == HPCT_SUCCESS;
    return ok && !failures ? 0 : 1;
}

static hpct_model_t make_model(hpct_ctx_t ctx, hpct_params_t *p)
{
    hpct_model_t m;
    hpct_model_create(ctx, FEATURES, &m);
    hpct_model_add_dense(m, 32, HPCT_ACT_RELU, HPCT_INIT_AUTO);
    hpct_model_add_dense(m, CLASSES, HPCT_ACT_IDENTITY, HPCT_INIT_AUTO);
    if (hpct_model_build(m, MAXB)) exit(2);
    hpct_model_params(m, p);
    return m;
}

static hpct_optimizer_t make_opt(hpct_params_t p)
{
    hpct_optim_config_t oc = HPCT_OPTIM_CONFIG_INITIALIZER;
    oc.lr = 0.05f;
    oc.momentum = 0.9f;
    hpct_optimizer_t opt;
    if (hpct_optimizer_create(p, &oc, &opt)) exit(2);
    return opt;
}

static hpct_insitu_t make_session(hpct_model_t m, hpct_optimizer_t o, hpct_ckpt_t ck)
{
    hpct_insitu_config_t c = HPCT_INSITU_CONFIG_INITIALIZER;
    c.metrics_path = getenv("INSITU_METRICS"); /* t/test_insitu_dist.sh: reports every 2 steps */
    if (c.metrics_path) c.log_interval = 2;
    c.timeline_path = getenv("INSITU_TIMELINE"); /* the last 4 steps */
    c.timeline_steps = 4;
    hpct_insitu_t s;
    if (hpct_insitu_create(m, NULL, o, ck, &c, &s)) exit(2);
    return s;
}

/* 1 when the 64-bit value is the same on every rank. */
static int same_everywhere(unsigned long long v)
{
    unsigned long long lo = v, hi = v;
    MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    return lo == hi;
}

static unsigned long long fnv(const void *data, size_t bytes)
{
    unsigned long long h = 1469598103934665603ull;
    const unsigned char *b = data;
    for (size_t i = 0; i < bytes; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static unsigned long long params_hash(hpct_params_t p)
{
    uint64_t h = 0;
    hpct_params_hash(p, &h);
    return (unsigned long long)h;
}

/* (a) Each rank trains on its own rows; the replicas and the returned loss stay identical. */
static int run_same(int steps)
{
    hpct_ctx_t ctx = start(60);
    hpct_params_t p;
    hpct_model_t m = make_model(ctx, &p);
    hpct_optimizer_t o = make_opt(p);
    hpct_insitu_t s = make_session(m, o, NULL);
    long step = -1;
    check(hpct_insitu_start(s, &step) == HPCT_SUCCESS && step == 0 &&
              same_everywhere(params_hash(p)),
          "start: step 0, rank 0's initial parameters everywhere");
    float x[MAXB * FEATURES];
    int32_t y[MAXB];
    /* device copies of x and y (INSITU_DEVICE_ARRAYS=1, cuda backend), passed in their place */
    const char *dev = getenv("INSITU_DEVICE_ARRAYS");
    int on_dev = dev && !strcmp(dev, "1");
    float *dx = on_dev ? ctx->ops->alloc(ctx, sizeof x) : NULL;
    int32_t *dy = on_dev ? ctx->ops->alloc(ctx, sizeof y) : NULL;
    check(!on_dev || (dx && dy && ctx->ops->is_device(ctx, dx)),
          "x and y in device memory (INSITU_DEVICE_ARRAYS=1)");
    int bad = 0, loss_differs = 0;
    for (int k = 0; k < steps; k++) {
        toy_data(x, y, MAXB, (unsigned long long)(k * world_size + world_rank));
        float loss = NAN;
        if (dx && dy &&
            (ctx->ops->to_device(ctx, dx, x, sizeof x) ||
             ctx->ops->to_device(ctx, dy, y, sizeof y)))
            bad++;
        bad += hpct_insitu_step(s, dx ? dx : x, dy ? (void *)dy : (void *)y, MAXB, &loss) !=
               HPCT_SUCCESS;
        unsigned int bits;
        memcpy(&bits, &loss, sizeof bits);
        loss_differs += !same_everywhere(bits);
    }
    check(bad == 0, "%d steps succeed on every rank (%d failed)", steps, bad);
    check(same_everywhere(params_hash(p)), "parameters bit-identical on every rank (hash %016llx)",
          params_hash(p));
    check(loss_differs == 0, "the returned global loss has the same bits on every rank");
    check(hpct_params_check_replicas(p) == HPCT_SUCCESS, "hpct_params_check_replicas agrees");
    if (dx) ctx->ops->free(ctx, dx);
    if (dy) ctx->ops->free(ctx, dy);
    hpct_insitu_destroy(s);
    hpct_optimizer_destroy(o);
    hpct_model_destroy(m);
    return finish(ctx);
}

/* Buffer i of set a in *pa and of set b in *pb; returns its length. */
static size_t buffer_pair(hpct_params_t a, hpct_params_t b, int i, float **pa, float **pb)
{
    size_t c;
    hpct_params_get(a, i, NULL, pa, NULL, &c);
    hpct_params_get(b, i, NULL, pb, NULL, NULL);
    return c;
}

/* Normwise relative difference max|a - b| / max|b| over every parameter. */
static double rel_diff(hpct_params_t a, hpct_params_t b)
{
    int n;
    double num = 0, den = 0;
    hpct_params_size(a, &n, NULL);
    for (int i = 0; i < n; i++) {
        float *pa, *pb;
        size_t c = buffer_pair(a, b, i, &pa, &pb);
        for (size_t j = 0; j < c; j++) {
            num = fmax(num, fabs((double)pa[j] - pb[j]));
            den = fmax(den, fabs((double)pb[j]));
        }
    }
    return den > 0 ? num / den : num;
}

static void copy_params(hpct_params_t from, hpct_params_t to)
{
    int n;
    hpct_params_size(from, &n, NULL);
    for (int i = 0; i < n; i++) {
        float *a, *b;
        size_t c = buffer_pair(from, to, i, &a, &b);
        memcpy(b, a, c * sizeof *a);
    }
}

/* (b) 2 ranks: rank 0 gives rows [0, 3) of each global batch of 8, rank 1 rows [3, 8), or
 * nothing every third step; a local (one-process) model trains on the same global rows. */
static int run_uneven(int steps)
{
    hpct_ctx_t ctx = start(60);
    if (world_size != 2) {
        check(0, "uneven needs 2 ranks");
        return finish(ctx);
    }
    hpct_params_t p, rp;
    hpct_model_t m = make_model(ctx, &p);
    hpct_optimizer_t o = make_opt(p);
    hpct_insitu_t s = make_session(m, o, NULL);
    hpct_insitu_start(s, NULL);
    hpct_config_t lc = HPCT_CONFIG_INITIALIZER;
    hpct_ctx_t local;
    hpct_ctx_create(&lc, &local);
    hpct_model_t ref = make_model(local, &rp);
    hpct_optimizer_t ro = make_opt(rp);
    copy_params(p, rp); /* the replicas start from rank 0's */
    float x[MAXB * FEATURES];
    int32_t y[MAXB];
    int bad = 0;
    double worst_loss = 0;
    for (int k = 0; k < steps; k++) {
        int zero = k % 3 == 2, global = zero ? 3 : MAXB;
        int first = world_rank == 0 ? 0 : 3, b = world_rank == 0 ? 3 : zero ? 0 : 5;
        toy_data(x, y, MAXB, 1000 + (unsigned long long)k);
        float loss = NAN, rloss = NAN;
        bad += hpct_insitu_step(s, x + first * FEATURES, y + first, b, &loss) != HPCT_SUCCESS;
        bad += hpct_model_loss_grad(ref, x, y, global, 0, &rloss) != HPCT_SUCCESS;
        bad += hpct_optimizer_step(ro) != HPCT_SUCCESS;
        worst_loss = fmax(worst_loss, fabs((double)loss - rloss) / fabs((double)rloss));
    }
    double d = rel_diff(p, rp);
    check(bad == 0, "%d steps with local batches 3 + 5 (every third 3 + 0) succeed", steps);
    check(d <= 1e-6,
          "parameters equal one process training on the concatenated rows (relative difference "
          "%.3g <= 1e-6)",
          d);
    check(worst_loss <= 1e-6, "the returned loss is the global batch mean (relative %.3g)",
          worst_loss);
    check(same_everywhere(params_hash(p)), "and bit-identical on both ranks");
    hpct_insitu_destroy(s);
    hpct_optimizer_destroy(o), hpct_optimizer_destroy(ro);
    hpct_model_destroy(m), hpct_model_destroy(ref);
    hpct_ctx_destroy(local);
    return finish(ctx);
}

/* One step in which rank `bad_rank` (-1: none) spoils its input with `how`; every rank's
 * status and the time it took are checked against want. */
enum spoil { NONE, NAN_INPUT, BAD_LABEL, NEG_BATCH, NULL_X };
static void failing_step(hpct_ctx_t ctx, hpct_insitu_t s, int k, const int *spoilt, int named,
                         hpct_status_t want, const char *needle, const char *what)
{
    float x[MAXB * FEATURES];
    int32_t y[MAXB];
    toy_data(x, y, MAXB, 500 + (unsigned long long)(k * world_size + world_rank));
    int b = MAXB;
    if (spoilt[world_rank] == NAN_INPUT) x[7] = NAN;
    if (spoilt[world_rank] == BAD_LABEL) y[2] = 99;
    if (spoilt[world_rank] == NEG_BATCH) b = -1;
    double t0 = MPI_Wtime();
    hpct_status_t st = hpct_insitu_step(s, spoilt[world_rank] == NULL_X ? NULL : x, y, b, NULL);
    double took = MPI_Wtime() - t0, slowest = took;
    MPI_Allreduce(MPI_IN_PLACE, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    char name[64];
    snprintf(name, sizeof name, "rank %d of %d failed", named, world_size);
    const char *msg = hpct_last_error(ctx);
    check(st == want, "%s: every rank returns %d (%s)", what, want, hpct_strerror(want));
    check(slowest < 2.0, "%s: every rank returned within %.3f s (deadline 60 s)", what, slowest);
    if (want != HPCT_SUCCESS) {
        check(strstr(msg, name) && strstr(msg, needle), "%s: rank 0 says \"%s\"", what, msg);
        check(hpct_last_error_shared(ctx) == 1,
              "%s: the error is marked shared (print it once) on every rank", what);
    }
}

/* (c) An error on one rank ends the step on all of them at once, with that rank named. */
static int run_fail(void)
{
    hpct_ctx_t ctx = start(60);
    hpct_params_t p;
    hpct_model_t m = make_model(ctx, &p);
    hpct_optimizer_t o = make_opt(p);
    hpct_insitu_t s = make_session(m, o, NULL);
    hpct_insitu_start(s, NULL);
    int last = world_size - 1;
    int *spoilt = calloc((size_t)world_size, sizeof *spoilt);
    failing_step(ctx, s, 0, spoilt, -1, HPCT_SUCCESS, "", "a good step");
    unsigned long long before = params_hash(p);
    spoilt[last] = NAN_INPUT;
    failing_step(ctx, s, 1, spoilt, last, HPCT_ERR_NONFINITE, "loss is nan",
                 "a NaN input on the last rank only");
    spoilt[last] = BAD_LABEL;
    failing_step(ctx, s, 2, spoilt, last, HPCT_ERR_INVALID_ARG, "label 99",
                 "a bad label on the last rank only");
    spoilt[last] = NEG_BATCH;
    failing_step(ctx, s, 3, spoilt, last, HPCT_ERR_INVALID_ARG, "local_batch is -1",
                 "a negative batch on the last rank only");
    spoilt[last] = NULL_X;
    failing_step(ctx, s, 3, spoilt, last, HPCT_ERR_INVALID_ARG, "x is NULL",
                 "x NULL on the last rank only");
    spoilt[0] = BAD_LABEL, spoilt[last] = NAN_INPUT;
    failing_step(ctx, s, 4, spoilt, 0, HPCT_ERR_INVALID_ARG, "label 99",
                 "errors on the first and the last rank: the lowest rank's wins");
    check(params_hash(p) == before && same_everywhere(params_hash(p)),
          "failed steps left the parameters untouched and identical");
    memset(spoilt, 0, sizeof *spoilt * (size_t)world_size);
    failing_step(ctx, s, 5, spoilt, -1, HPCT_SUCCESS, "", "the session goes on after them");
    hpct_progress_t pr;
    hpct_insitu_progress(s, &pr);
    check(pr.step == 2 && hpct_params_check_replicas(p) == HPCT_SUCCESS,
          "two steps counted (got %ld), replicas identical", pr.step);
    hpct_status_t bad = hpct_insitu_progress(s, NULL); /* a local call's own mistake */
    check(bad == HPCT_ERR_INVALID_ARG && hpct_last_error_shared(ctx) == 0,
          "an argument error of one rank's call is not marked shared (print it with the rank)");
    free(spoilt);
    hpct_insitu_destroy(s);
    hpct_optimizer_destroy(o);
    hpct_model_destroy(m);
    return finish(ctx);
}

/* The simulation's state: a field advanced before each step from itself, the model's first
 * weight and (local mode) the rank, so it depends on what the checkpoint holds. */
static void advance(hpct_ctx_t ctx, double *field, int n, hpct_params_t p, long step, int local)
{
    float *dev, w[64]; /* the first weights, copied from where the backend keeps them */
    hpct_params_get(p, 0, NULL, &dev, NULL, NULL);
    if (n > 64 || ctx->ops->to_host(ctx, w, dev, sizeof(float) * (size_t)n)) exit(2);
    for (int i = 0; i < n; i++)
        field[i] = 0.5 * field[i] + w[i] * (i + 1) + 1e-3 * (double)step +
                   (local ? 0.25 * world_rank : 0.0);
}

static hpct_ckpt_t open_ckpt(hpct_ctx_t ctx, const char *dir, long every, int local)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/rank%d", dir, world_rank);
    hpct_ckpt_config_t c = HPCT_CKPT_CONFIG_INITIALIZER;
    c.directory = local ? path : dir;
    c.writer_rank = local ? world_rank : 0;
    c.every_steps = every;
    c.keep_last = 20;
    c.async = 1;
    c.defer_copy = 1;
    hpct_ckpt_t ck;
    if (hpct_ckpt_open(ctx, &c, &ck)) {
        fprintf(stderr, "rank %d: %s\n", world_rank, hpct_last_error(ctx));
        exit(2);
    }
    return ck;
}

/* Free a simulation's session, checkpoint, optimizer and model, finalize, and its exit
 * status: finalize's failure, else 75 preempted, 3 another error, 0 done. */
static int end_sim(hpct_ctx_t ctx, hpct_insitu_t s, hpct_ckpt_t ck, hpct_optimizer_t o,
                   hpct_model_t m, hpct_status_t st)
{
    hpct_insitu_destroy(s);
    hpct_ckpt_close(ck);
    hpct_optimizer_destroy(o);
    hpct_model_destroy(m);
    int rc = finish(ctx);
    return rc ? rc : st == HPCT_PREEMPTED ? EXIT_PREEMPTED : st ? 3 : 0;
}

/* (d), (e) A simulation training in situ; see the comment at the top. */
static int run_sim(const char *dir, long steps, long stop_at, int sig_rank, long every, int local)
{
    enum { N = 24 };
    hpct_ctx_t ctx = start(60);
    hpct_params_t p;
    hpct_model_t m = make_model(ctx, &p);
    hpct_optimizer_t o = make_opt(p);
    hpct_ckpt_t ck = open_ckpt(ctx, dir, every, local);
    double field[N] = {0};
    long sim_step = 0;
    hpct_ckpt_add_array(ck, "sim/field", HPCT_CKPT_F64, field, N);
    hpct_ckpt_add_scalar(ck, "sim/step", HPCT_CKPT_I64, &sim_step);
    hpct_insitu_t s = make_session(m, o, ck);
    long done = -1;
    hpct_status_t st = hpct_insitu_start(s, &done);
    if (st || done != sim_step) {
        fprintf(stderr, "rank %d: start: %s (step %ld, sim %ld)\n", world_rank,
                hpct_last_error(ctx), done, sim_step);
        return 2;
    }
    if (world_rank == 0 && done) printf("RESUMED at step %ld\n", done);
    float x[MAXB * FEATURES];
    int32_t y[MAXB];
    while (!st && done < steps) {
        advance(ctx, field, N, p, ++sim_step, local);
        int b = 1 + (int)((sim_step * 5 + world_rank * 3) % MAXB);
        toy_data(x, y, b, (unsigned long long)(sim_step * 16 + world_rank));
        x[0] = (float)field[0];
        if (sim_step == stop_at && world_rank == sig_rank) raise(SIGTERM);
        st = hpct_insitu_step(s, x, y, b, NULL);
        if (st >= 0) done++;
    }
    if (!st) st = hpct_insitu_finish(s);
    if (st < 0) fprintf(stderr, "rank %d: %s\n", world_rank, hpct_last_error(ctx));
    long mine[2] = {st, done}, lo[2], hi[2];
    MPI_Allreduce(mine, lo, 2, MPI_LONG, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(mine, hi, 2, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    check(lo[0] == hi[0] && lo[1] == hi[1],
          "every rank ends with the same status (%ld..%ld) after the same step (%ld..%ld)", lo[0],
          hi[0], lo[1], hi[1]);
    unsigned long long fh = fnv(field, sizeof field), *all = calloc((size_t)world_size, 8);
    MPI_Gather(&fh, 1, MPI_UNSIGNED_LONG_LONG, all, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    if (world_rank == 0) {
        printf("RESULT status=%d steps=%ld params=%016llx fields=", st, done, params_hash(p));
        for (int r = 0; r < world_size; r++) printf("%s%016llx", r ? "," : "", all[r]);
        printf("\n");
        if (st == HPCT_PREEMPTED) printf("STOPPED after step %ld\n", done);
    }
    free(all);
    return end_sim(ctx, s, ck, o, m, st);
}

/* splitmix64: a well-mixed 64-bit hash of x. */
static unsigned long long mix64(unsigned long long x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* A hash of a distributed array that does not depend on its decomposition: the sum over
 * ranks and elements of mix64(global index, value bits). */
static unsigned long long spread_hash(unsigned long long mine)
{
    unsigned long long all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    return all;
}

/* Rows [lo, hi) of n split over W ranks, for rank r. */
static void split(size_t n, int r, size_t *lo, size_t *cnt)
{
    *lo = n * (size_t)r / (size_t)world_size;
    *cnt = n * (size_t)(r + 1) / (size_t)world_size - *lo;
}

/* (f) Block-decomposed simulation state resumed at another W; see the top. */
static int run_blocks(const char *dir, long steps, long stop_at, long every)
{
    enum { R = 10, C = 7, A = 3, B = 5, K = 4 };
    hpct_ctx_t ctx = start(60);
    hpct_params_t p;
    hpct_model_t m = make_model(ctx, &p);
    hpct_optimizer_t o = make_opt(p);
    hpct_ckpt_t ck = open_ckpt(ctx, dir, every, 0);
    size_t gf[2] = {R, C}, of[2] = {0, 0}, cf[2] = {0, C};
    size_t gc[3] = {A, B, K}, oc[3] = {0, 0, 0}, cc[3] = {A, 0, K};
    split(R, world_rank, &of[0], &cf[0]);
    split(B, world_rank, &oc[1], &cc[1]);
    double *field = calloc(R * C, sizeof *field); /* this rank's rows (at most all) */
    float *cube = calloc(A * B * K, sizeof *cube);
    long sim_step = 0;
    hpct_ckpt_add_scalar(ck, "sim/step", HPCT_CKPT_I64, &sim_step);
    hpct_insitu_t s = make_session(m, o, ck);
    size_t gt[2] = {C, R}, ot[2] = {0, 0}, ct[2] = {0, R}; /* the field transposed */
    split(C, world_rank, &ot[0], &ct[0]);
    int t = getenv("INSITU_BLOCKS_TRANSPOSED") != NULL;
    hpct_status_t st = hpct_insitu_add_block(s, "sim/field", HPCT_CKPT_F64, field, 2, t ? gt : gf,
                                             t ? ot : of, t ? ct : cf);
    if (!st) st = hpct_insitu_add_block(s, "sim/cube", HPCT_CKPT_F32, cube, 3, gc, oc, cc);
    long done = -1;
    if (!st) st = hpct_insitu_start(s, &done);
    if (st || done != sim_step) {
        fprintf(stderr, "rank %d: blocks start: %s (step %ld, sim %ld)\n", world_rank,
                hpct_last_error(ctx), done, sim_step);
        return 2;
    }
    if (world_rank == 0 && done) printf("RESUMED at step %ld on %d ranks\n", done, world_size);
    float x[MAXB * FEATURES];
    int32_t y[MAXB];
    while (!st && done < steps) {
        sim_step++;
        for (size_t i = 0; i < cf[0]; i++) /* u <- u/2 + f(global row, column, step) */
            for (size_t j = 0; j < C; j++)
                field[i * C + j] = 0.5 * field[i * C + j] + 0.25 * (double)(of[0] + i + 1) +
                                   1e-3 * (double)((j + 1) * (size_t)sim_step);
        for (size_t a = 0; a < A; a++)
            for (size_t b = 0; b < cc[1]; b++)
                for (size_t k = 0; k < K; k++) {
                    float *v = &cube[(a * cc[1] + b) * K + k];
                    *v = 0.75f * *v + (float)((a + 1) * (oc[1] + b + 2) + k) * 1e-2f;
                }
        int bsz = 1 + (int)((sim_step * 5 + world_rank * 3) % MAXB);
        toy_data(x, y, bsz, (unsigned long long)(sim_step * 16 + world_rank));
        if (sim_step == stop_at && world_rank == 0) raise(SIGTERM);
        st = hpct_insitu_step(s, x, y, bsz, NULL);
        if (st >= 0) done++;
    }
    if (!st) st = hpct_insitu_finish(s);
    if (st < 0) fprintf(stderr, "rank %d: %s\n", world_rank, hpct_last_error(ctx));
    unsigned long long hf = 0, hc = 0;
    for (size_t i = 0; i < cf[0] * C; i++) {
        unsigned long long bits;
        memcpy(&bits, &field[i], 8);
        hf += mix64(((of[0] * C + i) << 32) ^ bits);
    }
    for (size_t a = 0; a < A; a++)
        for (size_t b = 0; b < cc[1]; b++)
            for (size_t k = 0; k < K; k++) {
                uint32_t bits;
                memcpy(&bits, &cube[(a * cc[1] + b) * K + k], 4);
                hc += mix64(((((a * B) + oc[1] + b) * K + k) << 32) ^ bits);
            }
    hf = spread_hash(hf), hc = spread_hash(hc);
    if (world_rank == 0)
        printf("BLOCKS status=%d steps=%ld sim=%ld field=%016llx cube=%016llx\n", st, done,
               sim_step, hf, hc);
    free(field), free(cube);
    return end_sim(ctx, s, ck, o, m, st);
}

/* One registration of a 1-D block [off, off + cnt) of a global size g: refused on every rank
 * with HPCT_ERR_INVALID_ARG and a detail holding want. */
static void bad_block(hpct_ctx_t ctx, hpct_insitu_t s, const char *what, size_t g, size_t off,
                      size_t cnt, const char *want)
{
    float buf[16] = {0};
    size_t gs[1] = {g}, os[1] = {off}, cs[1] = {cnt};
    hpct_status_t st = hpct_insitu_add_block(s, "bad", HPCT_CKPT_F32, buf, 1, gs, os, cs);
    const char *msg = hpct_last_error(ctx);
    check(st == HPCT_ERR_INVALID_ARG && strstr(msg, want), "%s: refused naming '%s' (%s)", what,
          want, msg);
}

/* (g) Blocks that do not tile, on 3 ranks: each refused on every rank; then a good one. */
static int run_blocks_bad(const char *dir)
{
    hpct_ctx_t ctx = start(60);
    if (world_size != 3) return 2;
    hpct_params_t p;
    hpct_model_t m = make_model(ctx, &p);
    hpct_optimizer_t o = make_opt(p);
    hpct_ckpt_t ck = open_ckpt(ctx, dir, 0, 0);
    hpct_insitu_t s = make_session(m, o, ck);
    size_t lo[3] = {0, 4, 7}, n[3] = {4, 3, 3}; /* a good tiling of 10 */
    int r = world_rank;
    bad_block(ctx, s, "ranks 0 and 1 overlap", 10, r == 1 ? 3 : lo[r], r == 1 ? 4 : n[r],
              "the blocks of rank 0 ([0, 4)) and rank 1 ([3, 7)) overlap");
    bad_block(ctx, s, "a gap at index 3", 10, lo[r], r == 0 ? 3 : n[r],
              "cover 9 of the 10 elements");
    bad_block(ctx, s, "rank 2 beyond the global size", 10, lo[r], r == 2 ? 4 : n[r],
              "rank 2 of 3 failed: hpct_insitu_add_block: 'bad': the block [7, 11) exceeds");
    bad_block(ctx, s, "rank 1 with another global shape", r == 1 ? 11 : 10, lo[r], n[r],
              "rank 1 registers another name, dtype or global shape");
    float buf[4];
    size_t gs[1] = {10}, os[1] = {lo[r]}, cs[1] = {n[r]};
    hpct_status_t st = hpct_insitu_add_block(s, "good", HPCT_CKPT_F32, buf, 1, gs, os, cs);
    check(st == HPCT_SUCCESS, "then a tiling block array is registered (%s)",
          st ? hpct_last_error(ctx) : "ok");
    hpct_insitu_destroy(s);
    hpct_ckpt_close(ck);
    hpct_optimizer_destroy(o);
    hpct_model_destroy(m);
    return finish(ctx);
}

/* (h) Preemption of a job whose ranks do not all train; see the top. */
static int run_split(const char *dir, long steps)
{
    hpct_signals_t sig; /* first: a signal from now on stays pending */
    if (hpct_signals_install(NULL, NULL, 0, &sig)) return 2;
    MPI_Init(NULL, NULL);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    int trains = world_rank % 2 == 0;
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, trains, world_rank, &half);
    hpct_ctx_t ctx = NULL;
    hpct_model_t m = NULL;
    hpct_optimizer_t o = NULL;
    hpct_ckpt_t ck = NULL;
    hpct_insitu_t s = NULL;
    long done = 0;
    if (trains) {
        hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
        cfg.seed = 5;
        if (hpct_init_comm(&cfg, (int)MPI_Comm_c2f(half), &ctx)) return 2;
        hpct_params_t p;
        m = make_model(ctx, &p);
        o = make_opt(p);
        ck = open_ckpt(ctx, dir, 0, 0);
        s = make_session(m, o, ck);
        if (hpct_insitu_start(s, &done)) return 2;
    }
    if (world_rank == 0) {
        printf("SPLIT started at step %ld\n", done);
        fflush(stdout);
    }
    int stop = 0, rc = 0;
    float x[MAXB * FEATURES];
    int32_t y[MAXB];
    long k = done;
    for (; !stop && !rc && k < steps; k++) {
        int mine = 0; /* 1: a signal here, 2: the session stopped (saved), 3: failed */
        if (trains) {
            toy_data(x, y, 4, (unsigned long long)(k * 16 + world_rank));
            hpct_status_t st = hpct_insitu_step(s, x, y, 4, NULL);
            mine = st == HPCT_PREEMPTED ? 2 : st ? 3 : 0;
        } else {
            struct timespec ts = {0, 20 * 1000000L}; /* the simulation's work */
            nanosleep(&ts, NULL);
            mine = hpct_signals_pending(NULL, NULL);
        }
        int any = 0; /* the simulation's own agreement: MAX over the world */
        MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        /* a signal caught only where nothing trains: the training ranks take it too, and
         * their next step stops with its checkpoint */
        if (any == 1 && trains && !hpct_signals_pending(NULL, NULL)) raise(SIGTERM);
        stop = any == 2, rc = any == 3 ? 3 : 0;
    }
    if (trains && !stop && !rc && hpct_insitu_finish(s)) rc = 3;
    if (trains && (stop || rc)) {
        const char *path = "";
        hpct_ckpt_last_path(ck, &path);
        printf("SPLIT rank %d: %s after step %ld (%s)\n", world_rank, stop ? "preempted" : "failed",
               k, rc ? hpct_last_error(ctx) : path);
    }
    hpct_insitu_destroy(s);
    hpct_ckpt_close(ck);
    hpct_optimizer_destroy(o);
    hpct_model_destroy(m);
    if (ctx) hpct_finalize(ctx);
    MPI_Comm_free(&half);
    MPI_Finalize();
    hpct_signals_uninstall(sig); /* pending: SIG_IGN until the process ends */
    return rc ? rc : stop ? EXIT_PREEMPTED : 0;
}

/* Integer agreement: exact MAX/MIN/SUM at any W, a failure's detail shared, and the
 * found-checkpoint agreement of hpct_insitu_start (as hpct_train's, lib/train/loop.c).
 * The fp32 mean that train.c used before tested "every rank set the flag" as mean >= 1,
 * which fails where W * fl(1/W) < 1 (W = 41, 47; issue 14): MAX/MIN have no rounding. */
static int run_agree(const char *dir)
{
    hpct_ctx_t ctx = start(60);
    long v[4] = {world_rank, -world_rank, 1, world_rank == 1 ? 1 : 0};
    hpct_status_t s = hpcti_agree(ctx, "test MAX", v, 4, MPI_MAX);
    check(!s && v[0] == world_size - 1 && v[1] == 0 && v[2] == 1 && v[3] == (world_size > 1),
          "MAX: %ld %ld %ld %ld", v[0], v[1], v[2], v[3]);
    long w[2] = {1, world_rank + 1};
    s = hpcti_agree(ctx, "test MIN", w, 2, MPI_MIN);
    check(!s && w[0] == 1 && w[1] == 1, "MIN of a flag set on every rank is 1 (exact)");
    long u[2] = {1, world_rank};
    s = hpcti_agree(ctx, "test SUM", u, 2, MPI_SUM);
    check(!s && u[0] == world_size && u[1] == (long)world_size * (world_size - 1) / 2,
          "SUM: %ld ranks, rank sum %ld", u[0], u[1]);
    float mean = 1.0f;
    hpct_allreduce_mean(ctx, &mean, 1);
    if (world_rank == 0)
        printf("# for comparison: the fp32 mean of 1.0 over %d ranks is %.9g\n", world_size,
               (double)mean);
    int failing = world_size - 1;
    char mine[64];
    snprintf(mine, sizeof mine, "disk full on rank %d", world_rank);
    s = hpcti_agree_status(ctx, "test step", world_rank == failing ? HPCT_ERR_IO : HPCT_SUCCESS,
                           mine);
    char want[128];
    snprintf(want, sizeof want, "test step: rank %d of %d failed: disk full on rank %d", failing,
             world_size, failing);
    check(s == HPCT_ERR_IO && strstr(hpct_last_error(ctx), want),
          "a failure on rank %d only: every rank returns HPCT_ERR_IO, \"%s\"", failing,
          hpct_last_error(ctx));
    check(hpcti_agree_status(ctx, "test step", HPCT_SUCCESS, "") == HPCT_SUCCESS,
          "no failure: success everywhere");

    /* found-checkpoint agreement: shared directory (all find one), then one rank alone */
    hpct_params_t p;
    hpct_model_t m = make_model(ctx, &p);
    hpct_optimizer_t o = make_opt(p);
    char path[4096];
    snprintf(path, sizeof path, "%s/shared", dir);
    hpct_ckpt_config_t c = HPCT_CKPT_CONFIG_INITIALIZER;
    c.directory = path;
    hpct_ckpt_t ck;
    hpct_ckpt_open(ctx, &c, &ck);
    hpct_insitu_t ses = make_session(m, o, ck);
    long step = -1;
    hpct_insitu_start(ses, &step);
    float x[MAXB * FEATURES];
    int32_t y[MAXB];
    toy_data(x, y, MAXB, 77);
    hpct_insitu_step(ses, x, y, MAXB, NULL);
    s = hpct_insitu_finish(ses);
    hpct_insitu_destroy(ses);
    hpct_ckpt_close(ck);
    check(s == HPCT_SUCCESS, "a checkpoint of step 1 in a shared directory");
    hpct_ckpt_open(ctx, &c, &ck);
    ses = make_session(m, o, ck);
    s = hpct_insitu_start(ses, &step);
    check(s == HPCT_SUCCESS && step == 1, "every rank finds it: resumed at step %ld", step);
    hpct_insitu_destroy(ses);
    hpct_ckpt_close(ck);
    /* rank 1 points at the shared directory, the others at empty ones of their own */
    if (world_rank == 1)
        snprintf(path, sizeof path, "%s/shared", dir);
    else
        snprintf(path, sizeof path, "%s/empty%d", dir, world_rank);
    hpct_ckpt_open(ctx, &c, &ck);
    ses = make_session(m, o, ck);
    s = hpct_insitu_start(ses, &step);
    snprintf(want, sizeof want, "rank %d found %s", world_rank,
             world_rank == 1 ? "a checkpoint but other ranks did not"
                             : "no checkpoint but other ranks did:");
    check(s == HPCT_ERR_STATE && strstr(hpct_last_error(ctx), want),
          "only rank 1 finds one: HPCT_ERR_STATE on every rank: \"%s\"", hpct_last_error(ctx));
    hpct_insitu_destroy(ses);
    hpct_ckpt_close(ck);
    hpct_optimizer_destroy(o);
    hpct_model_destroy(m);
    return finish(ctx);
}

/* One byog step with gradients of 0.5 |w - c|^2, c = 0.1 (rank + 1); the last rank spoils
 * element 3 with bad unless bad is 0. Returns the status, the same on every rank. */
static hpct_status_t byog_step(hpct_insitu_t s, const float *w, float *g, int n, float bad)
{
    for (int i = 0; i < n; i++) g[i] = w[i] - 0.1f * (float)(world_rank + 1);
    if (bad != 0.0f && world_rank == world_size - 1) g[3] = bad;
    return hpct_insitu_step_grads(s, 4, 1.0f, NULL);
}

/* (f) A non-finite averaged gradient, with clip (0: the session's check; > 0: the
 * optimizer's norm pass) and without; see the comment at the top. */
static void nonfinite_case(hpct_ctx_t ctx, float clip)
{
    enum { N = 29 };
    float w[N], g[N];
    for (int i = 0; i < N; i++) w[i] = (float)i / N;
    hpct_params_t p;
    hpct_optimizer_t o;
    hpct_insitu_t s;
    hpct_optim_config_t oc = HPCT_OPTIM_CONFIG_INITIALIZER;
    oc.lr = 0.1f, oc.momentum = 0.9f, oc.clip_norm = clip;
    hpct_insitu_config_t c = HPCT_INSITU_CONFIG_INITIALIZER;
    c.catch_signals = 0;
    if (hpct_params_create(ctx, &p) || hpct_params_register(p, "field/w", w, g, N) ||
        hpct_optimizer_create(p, &oc, &o) || hpct_insitu_create(NULL, p, o, NULL, &c, &s) ||
        hpct_insitu_start(s, NULL))
        exit(2);
    int ok = byog_step(s, w, g, N, 0.0f) == HPCT_SUCCESS;
    unsigned long long before = params_hash(p);
    const float spoil[2] = {INFINITY, NAN};
    for (int k = 0; k < 2; k++) {
        hpct_status_t st = byog_step(s, w, g, N, spoil[k]);
        const char *msg = hpct_last_error(ctx);
        check(st == HPCT_ERR_NONFINITE && hpct_last_error_shared(ctx) == 1 &&
                  same_everywhere(fnv(msg, strlen(msg))) &&
                  strstr(msg, clip > 0 ? "gradient norm" : "averaged gradient of 'field/w'"),
              "clip_norm %g, %s on the last rank: HPCT_ERR_NONFINITE on every rank, the same "
              "shared message: %s",
              (double)clip, k ? "NaN" : "Inf", msg);
    }
    hpct_progress_t pr;
    hpct_insitu_progress(s, &pr);
    check(ok && params_hash(p) == before && same_everywhere(before) && pr.step == 1,
          "clip_norm %g: the refused steps changed nothing (step count %ld)", (double)clip,
          pr.step);
    ok = byog_step(s, w, g, N, 0.0f) == HPCT_SUCCESS;
    check(ok && params_hash(p) != before && hpct_params_check_replicas(p) == HPCT_SUCCESS,
          "clip_norm %g: the next finite step trains, replicas identical", (double)clip);
    hpct_insitu_destroy(s);
    hpct_optimizer_destroy(o);
    hpct_params_destroy(p);
}

static int run_nonfinite(void)
{
    hpct_ctx_t ctx = start(60);
    nonfinite_case(ctx, 0.0f);
    nonfinite_case(ctx, 10.0f);
    return finish(ctx);
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "same")) return run_same(atoi(argv[2]));
    if (argc == 3 && !strcmp(argv[1], "uneven")) return run_uneven(atoi(argv[2]));
    if (argc == 2 && !strcmp(argv[1], "fail")) return run_fail();
    if (argc == 8 && !strcmp(argv[1], "sim"))
        return run_sim(argv[2], atol(argv[3]), atol(argv[4]), atoi(argv[5]), atol(argv[6]),
                       !strcmp(argv[7], "local"));
    if (argc == 3 && !strcmp(argv[1], "agree")) return run_agree(argv[2]);
    if (argc == 6 && !strcmp(argv[1], "blocks"))
        return run_blocks(argv[2], atol(argv[3]), atol(argv[4]), atol(argv[5]));
    if (argc == 3 && !strcmp(argv[1], "blocks_bad")) return run_blocks_bad(argv[2]);
    if (argc == 4 && !strcmp(argv[1], "split")) return run_split(argv[2], atol(argv[3]));
    if (argc == 2 && !strcmp(argv[1], "nonfinite")) return run_nonfinite();
    fprintf(stderr, "usage: see the comment at the top of t/lib/insitu_prog.c\n");
    return 2;
}
