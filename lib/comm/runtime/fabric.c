/* fabric.c: hpct_doctor's fabric measurement. A training step's average is as fast as its
 * slowest node and link, so the doctor times the two kinds of transfer the hierarchical
 * average makes: an allreduce among the ranks of each node (all nodes at once, as in a
 * step), and an exchange between two nodes (their first ranks, both directions at once).
 * Pairs of nodes are measured in rounds in which no node takes part twice, so each pair has
 * its link to itself; every rank's times are then gathered to every rank, which compares
 * them against the job's medians (doctor.c). */
#include "config.h"
#include "fabric.h"
#include "runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LINK_TAG 901 /* below the reductions' tags (1000 and up) on the job's communicator */

double hpcti_median(double *x, int n)
{
    for (int i = 1; i < n; i++) /* insertion sort: n is a node or link count */
        for (int j = i; j > 0 && x[j - 1] > x[j]; j--) {
            double t = x[j];
            x[j] = x[j - 1], x[j - 1] = t;
        }
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

void hpcti_fabric_free(struct hpcti_fabric *f)
{
    free(f->leader), free(f->ranks), free(f->node_of), free(f->node_s);
    free(f->link_a), free(f->link_b), free(f->link_s);
    memset(f, 0, sizeof *f);
}

/* The test hook's sleep before a timed repetition (HPCT_TEST_SLOW_RANK=RANK,MS). */
struct slow {
    int rank;
    struct timespec pause;
};

static struct slow slow_hook(void)
{
    struct slow sl = {-1, {0, 0}};
    const char *v = hpcti_test_hook("HPCT_TEST_SLOW_RANK");
    long ms = 0;
    if (v && sscanf(v, "%d,%ld", &sl.rank, &ms) == 2 && ms > 0)
        sl.pause = (struct timespec){ms / 1000, ms % 1000 * 1000000L};
    else
        sl.rank = -1;
    return sl;
}

/* Every rank's node and local rank: each node's first rank and its rank count. */
static hpct_status_t learn_leaders(hpct_ctx_t ctx, struct hpcti_fabric *f)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    int mine[2] = {d->node_id, d->local_rank};
    int *all = hpcti_calloc(ctx, 2 * (size_t)d->size, sizeof *all, "node table");
    if (!all) return HPCT_ERR_NO_MEMORY;
    MPI_Request req = MPI_REQUEST_NULL;
    hpct_status_t s = hpcti_op_begin(ctx, "hpct_doctor (fabric: nodes)", 0, 0);
    int rc = MPI_SUCCESS;
    if (!s) rc = MPI_Iallgather(mine, 2, MPI_INT, all, 2, MPI_INT, d->comm, &req);
    if (!s) s = hpcti_op_end(ctx, &req, rc == MPI_SUCCESS);
    if (!s && rc != MPI_SUCCESS) s = hpcti_mpi_failed(ctx, rc, "MPI_Iallgather of the nodes");
    for (int r = 0; !s && r < d->size; r++) {
        int node = all[2 * r];
        f->node_of[r] = node;
        if (node < 0 || node >= f->nodes) continue;
        f->ranks[node]++;
        if (all[2 * r + 1] == 0) f->leader[node] = r;
    }
    free(all);
    return s;
}

/* The pairs of nodes to measure: every pair up to HPCTI_FABRIC_ALL_PAIRS nodes, else each
 * node and the next (the ring; one pair for two nodes). */
static hpct_status_t plan_links(hpct_ctx_t ctx, struct hpcti_fabric *f)
{
    int n = f->nodes, all = n <= HPCTI_FABRIC_ALL_PAIRS;
    int count = n < 2 ? 0 : all ? n * (n - 1) / 2 : n;
    f->link_a = hpcti_calloc(ctx, (size_t)count + 1, sizeof *f->link_a, "fabric links");
    f->link_b = hpcti_calloc(ctx, (size_t)count + 1, sizeof *f->link_b, "fabric links");
    f->link_s = hpcti_calloc(ctx, (size_t)count + 1, sizeof *f->link_s, "fabric links");
    if (!f->link_a || !f->link_b || !f->link_s) return HPCT_ERR_NO_MEMORY;
    for (int a = 0; all && a < n; a++)
        for (int b = a + 1; b < n; b++) f->link_a[f->links] = a, f->link_b[f->links++] = b;
    for (int a = 0; !all && a < n; a++) {
        int b = (a + 1) % n;
        f->link_a[f->links] = a < b ? a : b, f->link_b[f->links++] = a < b ? b : a;
    }
    return HPCT_SUCCESS;
}

/* round [links]: the round of each link, greedily, no node twice in a round; the count. */
static int schedule(const struct hpcti_fabric *f, int *round, int *busy)
{
    int rounds = 0, left = f->links;
    for (int l = 0; l < f->links; l++) round[l] = -1;
    while (left > 0) {
        memset(busy, 0, sizeof *busy * (size_t)f->nodes);
        for (int l = 0; l < f->links; l++) {
            if (round[l] >= 0 || busy[f->link_a[l]] || busy[f->link_b[l]]) continue;
            round[l] = rounds, busy[f->link_a[l]] = busy[f->link_b[l]] = 1, left--;
        }
        rounds++;
    }
    return rounds;
}

/* One timed repetition's start: the test hook's pause, then the clock. */
static double rep_start(const struct slow *sl, int rank, int timed)
{
    if (timed && rank == sl->rank) nanosleep(&sl->pause, NULL);
    return hpcti_now();
}

/* reps timed allreduces (after one untimed) of buf [2 n] on the node: the median time of one
 * into *t (reps [reps] scratch): a rank descheduled for one repetition does not count. */
static hpct_status_t time_node(hpct_ctx_t ctx, float *buf, size_t n, int reps,
                               const struct slow *sl, double *rep, double *t)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    hpct_status_t s = hpcti_op_begin(ctx, "hpct_doctor (fabric: allreduce in each node)", 0, 0);
    for (int k = 0; !s && d->local_size > 1 && k <= reps; k++) {
        double t0 = rep_start(sl, d->rank, k > 0);
        MPI_Request req = MPI_REQUEST_NULL;
        int rc = MPI_Iallreduce(buf, buf + n, (int)n, MPI_FLOAT, MPI_SUM, d->node_rs, &req);
        s = rc == MPI_SUCCESS ? hpcti_wait_reqs(ctx, &req, 1)
                              : hpcti_mpi_failed(ctx, rc, "MPI_Iallreduce in the node");
        if (k > 0) rep[k - 1] = hpcti_now() - t0;
    }
    if (!s && d->local_size > 1) *t = hpcti_median(rep, reps);
    return s ? s : hpcti_op_end(ctx, NULL, 0);
}

/* reps timed exchanges (after one untimed) of buf [n] both ways with rank peer (-1: none, this
 * rank only waits for the round to end): the median time of one into *t. */
static hpct_status_t time_link(hpct_ctx_t ctx, float *buf, size_t n, int reps, int peer,
                               const struct slow *sl, double *rep, double *t)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    hpct_status_t s = hpcti_op_begin(ctx, "hpct_doctor (fabric: exchange between nodes)", 0, 0);
    for (int k = 0; !s && peer >= 0 && k <= reps; k++) {
        double t0 = rep_start(sl, d->rank, k > 0);
        MPI_Request req[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
        int rc = MPI_Irecv(buf + n, (int)n, MPI_FLOAT, peer, LINK_TAG, d->comm, &req[0]);
        if (rc == MPI_SUCCESS)
            rc = MPI_Isend(buf, (int)n, MPI_FLOAT, peer, LINK_TAG, d->comm, &req[1]);
        s = rc == MPI_SUCCESS ? hpcti_wait_reqs(ctx, req, 2)
                              : hpcti_mpi_failed(ctx, rc, "posting an exchange between nodes");
        if (k > 0) rep[k - 1] = hpcti_now() - t0;
    }
    if (!s && peer >= 0) *t = hpcti_median(rep, reps);
    return s ? s : hpcti_op_end(ctx, NULL, 0);
}

/* This rank's partner in round r (-1: none), from the schedule. */
static int partner(const struct hpcti_fabric *f, const int *round, int r, int rank)
{
    for (int l = 0; l < f->links; l++) {
        if (round[l] != r) continue;
        int a = f->leader[f->link_a[l]], b = f->leader[f->link_b[l]];
        if (rank != a && rank != b) continue;
        return rank == a ? b : a;
    }
    return -1;
}

/* Every rank's times [1 + rounds] (node allreduce, then its exchange in each round) gathered
 * to all, folded into f: the slowest rank of each node, the slower end of each link. */
static hpct_status_t share_times(hpct_ctx_t ctx, struct hpcti_fabric *f, const double *mine,
                                 int rounds, const int *round)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    int w = 1 + rounds;
    double *all = hpcti_calloc(ctx, (size_t)d->size * (size_t)w, sizeof *all, "fabric times");
    if (!all) return HPCT_ERR_NO_MEMORY;
    MPI_Request req = MPI_REQUEST_NULL;
    hpct_status_t s = hpcti_op_begin(ctx, "hpct_doctor (fabric: times)", 0, 0);
    int rc = MPI_SUCCESS;
    if (!s) rc = MPI_Iallgather(mine, w, MPI_DOUBLE, all, w, MPI_DOUBLE, d->comm, &req);
    if (!s) s = hpcti_op_end(ctx, &req, rc == MPI_SUCCESS);
    if (!s && rc != MPI_SUCCESS) s = hpcti_mpi_failed(ctx, rc, "MPI_Iallgather of the times");
    for (int r = 0; !s && r < d->size; r++) {
        double t = all[(size_t)r * (size_t)w];
        int v = f->node_of[r];
        if (v >= 0 && v < f->nodes && f->ranks[v] > 1 && t > f->node_s[v]) f->node_s[v] = t;
    }
    for (int l = 0; !s && l < f->links; l++) {
        size_t a = (size_t)f->leader[f->link_a[l]], b = (size_t)f->leader[f->link_b[l]];
        double ta = all[a * (size_t)w + 1 + (size_t)round[l]];
        double tb = all[b * (size_t)w + 1 + (size_t)round[l]];
        f->link_s[l] = ta > tb ? ta : tb;
    }
    free(all);
    return s;
}

hpct_status_t hpcti_fabric_measure(hpct_ctx_t ctx, size_t bytes, int reps, struct hpcti_fabric *f)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    memset(f, 0, sizeof *f);
    f->nodes = d->num_nodes, f->bytes = bytes, f->reps = reps;
    f->leader = hpcti_calloc(ctx, (size_t)f->nodes, sizeof *f->leader, "fabric nodes");
    f->ranks = hpcti_calloc(ctx, (size_t)f->nodes, sizeof *f->ranks, "fabric nodes");
    f->node_s = hpcti_calloc(ctx, (size_t)f->nodes, sizeof *f->node_s, "fabric nodes");
    f->node_of = hpcti_calloc(ctx, (size_t)d->size, sizeof *f->node_of, "fabric nodes");
    size_t n = bytes / sizeof(float) ? bytes / sizeof(float) : 1;
    float *buf = hpcti_calloc(ctx, 2 * n, sizeof *buf, "fabric buffers");
    hpct_status_t s =
        f->leader && f->ranks && f->node_s && f->node_of && buf ? HPCT_SUCCESS : HPCT_ERR_NO_MEMORY;
    if (!s) s = learn_leaders(ctx, f);
    if (!s) s = plan_links(ctx, f);
    int *round = NULL, *busy = NULL, rounds = 0;
    double *mine = NULL;
    if (!s) {
        round = hpcti_calloc(ctx, (size_t)f->links + 1, sizeof *round, "fabric rounds");
        busy = hpcti_calloc(ctx, (size_t)f->nodes, sizeof *busy, "fabric rounds");
        if (!round || !busy) s = HPCT_ERR_NO_MEMORY;
    }
    if (!s) rounds = schedule(f, round, busy);
    if (!s) mine = hpcti_calloc(ctx, 1 + (size_t)rounds + (size_t)reps, sizeof *mine, "times");
    if (!s && !mine) s = HPCT_ERR_NO_MEMORY;
    double *rep = mine ? mine + 1 + rounds : NULL; /* [reps] */
    struct slow sl = slow_hook();
    for (size_t i = 0; !s && i < n; i++) buf[i] = (float)(i % 7);
    if (!s) s = time_node(ctx, buf, n, reps, &sl, rep, &mine[0]);
    for (int r = 0; !s && r < rounds; r++) {
        int peer = partner(f, round, r, d->rank);
        s = time_link(ctx, buf, n, reps, peer, &sl, rep, &mine[1 + r]);
    }
    if (!s) s = share_times(ctx, f, mine, rounds, round);
    free(buf), free(busy), free(mine), free(round);
    if (s) hpcti_fabric_free(f);
    return s;
}
