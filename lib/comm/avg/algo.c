/* algo.c: which algorithm averages a host buffer of a given size: the node window (shm),
 * the point-to-point engine (p2p: reduce-scatter + allgather), its one-round form in which
 * every rank sums every peer's whole buffer (allgather: the same bits, for small buffers)
 * or one MPI_Iallreduce of the fp32 sum then times 1/W (mpi). A table of size classes, the same on
 * every rank, from HPCT_ALLREDUCE_ALGO
 * ("0:shm,256K:mpi,8M:shm": from each size in bytes up, that algorithm) or, when it is unset
 * or "auto", from a short timed probe at hpct_init: each candidate is timed at a few sizes
 * (rounds interleaved, each call after a barrier, its time the slowest rank's, the fastest
 * of each), rank 0 decides and the decisions reach every rank as integers (a
 * deadline-bounded SUM with zeros from the other ranks). The host averages that follow the
 * table (hpcti_host_allreduce_mean, hpcti_host_average: the probe's timed calls) are here too. */
#include "algo.h"
#include "node_win.h"
#include "reduce.h"
#include "../runtime/agree.h"
#include "../../obs/obs.h"
#include "../../core/sim.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[] = {"p2p", "shm", "mpi", "allgather", "shm/p2p"};
#define ENV "HPCT_ALLREDUCE_ALGO"

/* Probe sizes in bytes (a factor 4 apart: with 8, 64 KiB was decided by 32 KiB's timings,
 * and over TCP the path that won at 32 KiB was the slowest at 64 KiB), the rounds at each,
 * and the probe's time budget after which larger sizes keep the last decision. */
static const size_t probe_bytes[] = {(size_t)4 << 10,   (size_t)16 << 10, (size_t)64 << 10,
                                     (size_t)256 << 10, (size_t)1 << 20,  (size_t)4 << 20,
                                     (size_t)16 << 20};
static const int probe_rounds[] = {8, 8, 8, 6, 4, 3, 2};
#define PROBE_CLASSES  (sizeof probe_bytes / sizeof *probe_bytes)
#define PROBE_BUDGET_S 0.4 /* a class runs only if its bytes / the last one's x that time fits */
/* shm/p2p (one node) and p2p (several: plain point-to-point against the hierarchical window
 * path) beat the window's copying path unless that is faster by this factor: for ordinary
 * memory it copies the buffer through the window's halves, more memory than p2p touches,
 * which the probe finds in cache and a caller's own work between averages evicts. At 1 MiB
 * (W = 2) the probe timed the two within 20 % either way, and bench_allreduce, whose paths
 * run on buffers and contexts of their own, timed the copying path 3-27 % slower than p2p
 * in 50 of 50 runs (at 256 KiB faster in 48 of 50, where the probe had it 10-50 % ahead).
 * From 1 MiB only: below, the halves stay in cache and a tie is a tie (at W = 16 on 16 cores
 * the margin gave 16 KiB to shm/p2p on a tied probe, 52 us a call where the copying path
 * took 34, 0.68x MPI_Allreduce). At W = 4 on 2x2 virtual nodes (2 CPUs) the probe timed shm
 * and p2p at 1 MiB within 12 % either way, and bench_allreduce timed shm 25-45 % slower. */
#define COPY_MARGIN            1.1
#define COPY_MARGIN_MIN_FLOATS ((size_t)256 << 10)
/* allgather moves (peers) x the buffer: probed up to 256 KiB */
#define ALLGATHER_MAX_FLOATS ((size_t)64 << 10)

const char *hpcti_algo_name(int algo)
{
    return algo >= 0 && algo < HPCTI_ALGO_COUNT ? names[algo] : "?";
}

/* "16K" style: a multiple of 1 Gi, 1 Mi or 1 Ki bytes with its suffix, else plain bytes. */
static void format_bytes(unsigned long b, char *out, size_t cap)
{
    if (b && b % (1ul << 30) == 0)
        snprintf(out, cap, "%luG", b >> 30);
    else if (b && b % (1ul << 20) == 0)
        snprintf(out, cap, "%luM", b >> 20);
    else if (b && b % (1ul << 10) == 0)
        snprintf(out, cap, "%luK", b >> 10);
    else
        snprintf(out, cap, "%lu", b);
}

void hpcti_algo_format(const struct hpcti_algo_table *t, char *out, size_t cap)
{
    size_t len = 0;
    out[0] = 0;
    for (int i = 0; i < t->n && len + 40 < cap; i++) {
        char b[32];
        format_bytes(t->min_bytes[i], b, sizeof b);
        len += (size_t)snprintf(out + len, cap - len, "%s%s:%s", i ? "," : "", b,
                                hpcti_algo_name(t->algo[i]));
    }
}

static int algo_of_name(const char *s, size_t len)
{
    for (int a = 0; a < HPCTI_ALGO_COUNT; a++)
        if (strlen(names[a]) == len && !strncmp(s, names[a], len)) return a;
    return -1;
}

/* One "BYTES:NAME" entry at s (up to len) into *bytes and *algo; 0 when malformed. */
static int parse_entry(const char *s, size_t len, unsigned long *bytes, int *algo)
{
    const char *colon = memchr(s, ':', len);
    if (!colon || colon == s || !isdigit((unsigned char)s[0])) return 0;
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    int shift = *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
    if (shift) end++;
    if (end != colon || (shift && v > (~0ul >> shift))) return 0;
    *bytes = v << shift;
    *algo = algo_of_name(colon + 1, len - (size_t)(colon + 1 - s));
    return *algo >= 0;
}

/* HPCT_ALLREDUCE_ALGO into t: a name alone ("mpi": every size), or entries from 0 up in
 * increasing sizes; why [cap] says what is wrong (returns 0). */
static int parse_table(const char *v, struct hpcti_algo_table *t, char *why, size_t cap)
{
    t->n = 0;
    int one = algo_of_name(v, strlen(v));
    if (one >= 0) {
        t->min_bytes[0] = 0, t->algo[0] = one, t->n = 1;
        return 1;
    }
    for (const char *s = v; *s;) {
        size_t len = strcspn(s, ",");
        if (s[len] == ',' && !s[len + 1]) {
            snprintf(why, cap, "it ends with a comma");
            return 0;
        }
        if (t->n == HPCTI_ALGO_CLASSES) {
            snprintf(why, cap, "more than %d entries", HPCTI_ALGO_CLASSES);
            return 0;
        }
        if (!parse_entry(s, len, &t->min_bytes[t->n], &t->algo[t->n])) {
            snprintf(why, cap,
                     "entry %d ('%.*s') is not BYTES[K|M|G]:p2p|shm|mpi|allgather|shm/p2p",
                     t->n + 1, (int)(len > 40 ? 40 : len), s);
            return 0;
        }
        if (t->n == 0 ? t->min_bytes[0] != 0 : t->min_bytes[t->n] <= t->min_bytes[t->n - 1]) {
            snprintf(why, cap, "entry %d ('%.*s') %s", t->n + 1, (int)(len > 40 ? 40 : len), s,
                     t->n ? "does not start above the one before" : "must start at 0");
            return 0;
        }
        t->n++;
        s += len + (s[len] == ',');
    }
    if (t->n == 0) snprintf(why, cap, "it holds no entry");
    return t->n > 0;
}

int hpcti_algo_windowed(int algo)
{
    return algo == HPCTI_ALGO_SHM || algo == HPCTI_ALGO_SHM_P2P;
}

int hpcti_algo_for(const struct hpcti_dist *d, size_t n)
{
    if (d->size == 1 || d->avg->transport) return HPCTI_ALGO_P2P;
    size_t bytes = n * sizeof(float);
    int a = d->avg->algo.n ? d->avg->algo.algo[0] : HPCTI_ALGO_P2P;
    for (int i = 1; i < d->avg->algo.n && d->avg->algo.min_bytes[i] <= bytes; i++)
        a = d->avg->algo.algo[i];
    if (hpcti_algo_windowed(a) && !hpcti_node_win_takes(d, n)) a = HPCTI_ALGO_P2P;
    return a;
}

/* The library's own path for host buffers on this topology (the window where it is set up). */
static int own_path(const struct hpcti_dist *d)
{
    return d->avg->nwin ? HPCTI_ALGO_SHM : HPCTI_ALGO_P2P;
}

/* One timed average of buf [n] through algo (every rank calls it). A call's time is the
 * slowest rank's (a MAX agreement, in nanoseconds), as bench_allreduce times it: rank 0's own
 * time favoured allgather at W = 4 on 2x2 virtual nodes (2 CPUs), where rank 0 could finish
 * early. That agreement is also the barrier the next call starts after (a class's first
 * call, untimed, follows the agreement on the last class's decision, or hpct_init's on how
 * the table is chosen): without one rank 0's time depended on how far behind the previous
 * call left the peers, and over TCP the probe chose p2p where allgather was faster. The rule:
 * doc/distributed.md, "Algorithm per size"; measured: bench/results.md, "2026-11-26, 2-core
 * VM (slower)" and the seventh session. */
static hpct_status_t timed(hpct_ctx_t ctx, int algo, float *buf, size_t n, double *best)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    struct hpcti_algo_table saved = d->avg->algo;
    d->avg->algo.n = 1, d->avg->algo.min_bytes[0] = 0, d->avg->algo.algo[0] = algo;
    double t0 = hpcti_now();
    hpct_status_t s =
        hpcti_host_average(ctx, "hpct_init (algorithm probe)", buf, n, hpcti_algo_for(d, n));
    long ns = (long)((hpcti_now() - t0) * 1e9);
    d->avg->algo = saved;
    if (!s) s = hpcti_agree(ctx, "hpct_init (algorithm probe)", &ns, 1, MPI_MAX);
    if (!s && ns * 1e-9 < *best) *best = ns * 1e-9;
    return s;
}

/* 1 for the candidates that average ordinary memory without copying it through the window. */
static int point_to_point(int algo)
{
    return algo == HPCTI_ALGO_SHM_P2P || algo == HPCTI_ALGO_P2P;
}

int hpcti_algo_pick(const int *cand, const double *best, int nc, size_t n)
{
    int win = 0;
    double margin = n >= COPY_MARGIN_MIN_FLOATS ? COPY_MARGIN : 1.0;
    for (int c = 1; c < nc; c++) /* untimed candidates keep 1e30 */
        if (best[c] < best[win] * (point_to_point(cand[c]) ? margin : 1.0)) win = c;
    return win;
}

/* The fastest time (the slowest rank's) of every candidate at one size, rounds interleaved,
 * after one untimed call each (allocations, connections); the winner (hpcti_algo_pick) into
 * *win. */
static hpct_status_t probe_size(hpct_ctx_t ctx, const int *cand, int nc, float *buf, size_t n,
                                int rounds, double *best, int *win)
{
    hpct_status_t s = HPCT_SUCCESS;
    double ignore = 1e30;
    for (int c = 0; c < nc; c++) best[c] = 1e30;
    if (n > ALLGATHER_MAX_FLOATS && cand[nc - 1] == HPCTI_ALGO_ALLGATHER) nc--;
    for (int c = 0; c < nc && !s; c++) s = timed(ctx, cand[c], buf, n, &ignore);
    for (int r = 0; r < rounds && !s; r++)
        for (int c = 0; c < nc && !s; c++) s = timed(ctx, cand[c], buf, n, &best[c]);
    *win = hpcti_algo_pick(cand, best, nc, n);
    return s;
}

/* The table's entry for a class whose timed winner is algo: on one node where gradient
 * buffers can be averaged in place, p2p becomes shm/p2p (the probe times ordinary memory
 * only, and in place beats p2p: doc/distributed.md, "Algorithm per size"; measured:
 * bench/results.md, 2026-11-26, later). */
static int in_window(const struct hpcti_dist *d, int algo)
{
    int one_node = d->avg->nwin && d->cross_size == 1 && d->avg->nwin->in_place;
    return algo == HPCTI_ALGO_P2P && one_node ? HPCTI_ALGO_SHM_P2P : algo;
}

/* Rank 0's values v [n] reach every rank: SUM with zeros from the other ranks. */
static hpct_status_t from_rank0(hpct_ctx_t ctx, long *v, int n)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    if (d->rank != 0)
        for (int i = 0; i < n; i++) v[i] = 0;
    return hpcti_agree(ctx, "hpct_init (allreduce algorithm)", v, n, MPI_SUM);
}

/* Append algo from bytes up to t (merged with the entry before when the same). */
static void table_add(struct hpcti_algo_table *t, unsigned long bytes, int algo)
{
    if (t->n && t->algo[t->n - 1] == algo) return;
    t->min_bytes[t->n] = t->n ? bytes : 0;
    t->algo[t->n++] = algo;
}

/* The timed probe: candidates own path, p2p (when the window is the own path; on one node
 * timed as the shm/p2p it becomes in the table: a counter barrier, no arrival tokens), allgather,
 * and mpi at W <= 2 only: from W = 3 MPI's summation order differs from the rank order of
 * the others, and a choice made by timing must not change a run's bits (a requeued job
 * probes again and must resume bit-identically); a site table may still name mpi;
 * the class of probe size b reaches from b / 2 up (the first from 0); sizes above the
 * largest probed keep its decision. Rank 0's timings into detail [cap]. */
static hpct_status_t probe(hpct_ctx_t ctx, char *detail, size_t cap)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    int cand[4], nc = 0;
    cand[nc++] = own_path(d);
    if (cand[0] == HPCTI_ALGO_SHM) cand[nc++] = in_window(d, HPCTI_ALGO_P2P); /* as it runs */
    if (d->size <= 2) cand[nc++] = HPCTI_ALGO_MPI; /* a + b: the same bits as rank order */
    cand[nc++] = HPCTI_ALGO_ALLGATHER;             /* probed up to ALLGATHER_MAX_FLOATS */
    size_t nmax = probe_bytes[PROBE_CLASSES - 1] / sizeof(float);
    float *buf = hpcti_calloc(ctx, nmax, sizeof *buf, "the algorithm probe's buffer");
    if (!buf) return HPCT_ERR_NO_MEMORY;
    struct hpcti_algo_table t = {0};
    double t0 = hpcti_now(), best[4];
    size_t len = 0;
    hpct_status_t s = HPCT_SUCCESS;
    detail[0] = 0;
    for (size_t k = 0; k < PROBE_CLASSES && !s; k++) {
        size_t n = probe_bytes[k] / sizeof(float);
        int win = 0;
        double t_class = hpcti_now();
        s = probe_size(ctx, cand, nc, buf, n, probe_rounds[k], best, &win);
        double took = hpcti_now() - t_class,
               growth = k + 1 < PROBE_CLASSES ? (double)probe_bytes[k + 1] / probe_bytes[k]
                                              : 0.0; /* the next class's bytes / these */
        long v[2] = {in_window(d, cand[win]), hpcti_now() - t0 + growth * took < PROBE_BUDGET_S};
        if (!s) s = from_rank0(ctx, v, 2);
        if (s) break;
        table_add(&t, probe_bytes[k] / 2, (int)v[0]); /* class k: from half its size up */
        len += (size_t)snprintf(detail + len, cap - len, "%s%zuK:", k ? "; " : "",
                                probe_bytes[k] >> 10);
        for (int c = 0; c < nc && len + 64 < cap; c++)
            if (best[c] < 1e30)
                len += (size_t)snprintf(detail + len, cap - len, " %s %.0f us",
                                        hpcti_algo_name(cand[c]), best[c] * 1e6);
        if (!v[1]) break;
    }
    free(buf);
    if (!s) d->avg->algo = t;
    if (len + 32 < cap)
        snprintf(detail + len, cap - len, "; probe %.0f ms", (hpcti_now() - t0) * 1e3);
    return s;
}

/* Every registered setting, HPCT_ALLREDUCE_ALGO's table too: the first bad one fails with
 * "PREFIX NAME is 'VALUE': use ACCEPTED" on ctx (may be NULL) and in detail (may be NULL). */
hpct_status_t hpcti_env_check(hpct_ctx_t ctx, const char *prefix, char *detail, size_t len)
{
    hpct_status_t s = hpcti_tunables_check(ctx, prefix, detail, len);
    const char *v = hpcti_tunable_value(ENV);
    struct hpcti_algo_table t;
    char why[160] = "";
    if (s || !v || !strcmp(v, "auto") || parse_table(v, &t, why, sizeof why)) return s;
    const hpcti_tunable_t *e = hpcti_tunable_find(ENV);
    if (detail && len) snprintf(detail, len, "%s is '%s': %s; use %s", ENV, v, why, e->accepted);
    return hpcti_error(ctx, HPCT_ERR_INVALID_ARG, "%s%s is '%s': %s; use %s", prefix, ENV, v, why,
                       e->accepted);
}

hpct_status_t hpct_tunables_check(char *detail, size_t len)
{
    if (detail && len) detail[0] = '\0';
    return hpcti_env_check(NULL, "", detail, len);
}

/* Rank 0's table on every rank (a site's variable may differ between ranks). */
static hpct_status_t share_table(hpct_ctx_t ctx, struct hpcti_algo_table *t)
{
    long v[1 + 2 * HPCTI_ALGO_CLASSES] = {t->n};
    for (int i = 0; i < t->n; i++) v[1 + 2 * i] = (long)t->min_bytes[i], v[2 + 2 * i] = t->algo[i];
    hpct_status_t s = from_rank0(ctx, v, 1 + 2 * HPCTI_ALGO_CLASSES);
    t->n = (int)v[0];
    for (int i = 0; i < t->n; i++)
        t->min_bytes[i] = (unsigned long)v[1 + 2 * i], t->algo[i] = (int)v[2 + 2 * i];
    return s;
}

hpct_status_t hpcti_algo_setup(hpct_ctx_t ctx)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    const char *v = getenv(ENV);
    int auto_ = !v || !*v || !strcmp(v, "auto");
    char why[160] = "";
    struct hpcti_algo_table t = {0};
    /* {parsed, probing, -probing}: a MIN over ranks gives all parsed, all probe, none probes */
    long ok[3] = {auto_ || parse_table(v, &t, why, sizeof why), auto_, -auto_};
    if (!ok[0]) hpcti_error(ctx, HPCT_ERR_INVALID_ARG, "hpct_init: %s is '%s': %s", ENV, v, why);
    hpct_status_t s =
        d->size > 1 ? hpcti_agree(ctx, "hpct_init (" ENV ")", ok, 3, MPI_MIN) : HPCT_SUCCESS;
    if (s) return s;
    if (!ok[0])
        return why[0] ? HPCT_ERR_INVALID_ARG
                      : hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                                    "hpct_init: %s is malformed on another rank (see its error; "
                                    "seen by rank %d)",
                                    ENV, d->rank);
    if (ok[1] != -ok[2]) /* some ranks probe, others read a table: they would not match */
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                           "hpct_init: %s is '%s' on rank %d, but some ranks probe (unset or "
                           "auto) and others read a table: set the same value on every rank",
                           ENV, v ? v : "", d->rank);
    int span = d->hier ? d->cross_size : d->num_nodes > 1 ? d->size : 1;
    if (span > 1)
        hpcti_log(ctx, HPCT_LOG_INFO,
                  "cross-node exchange over %d ranks: %s, whole-vector steps %s (rounds of "
                  "pairwise exchanges from %d and %d ranks)",
                  span, hpcti_cross_tree(d, 0) ? "rounds (halving, doubling)" : "direct",
                  hpcti_cross_tree(d, 1) ? "in rounds" : "direct", d->avg->tree_min,
                  d->avg->tree_whole_min);
    d->avg->algo.n = 1, d->avg->algo.min_bytes[0] = 0, d->avg->algo.algo[0] = own_path(d);
    char table[400], detail[1024] = "";
    if (d->size == 1 || d->avg->transport) {
        hpcti_log(ctx, HPCT_LOG_INFO, "allreduce algorithm: %s (%s)", hpcti_algo_name(own_path(d)),
                  d->size == 1 ? "one rank" : "16-bit transport");
        return HPCT_SUCCESS;
    }
    if (!auto_) {
        if ((s = share_table(ctx, &t))) return s;
        d->avg->algo = t;
        for (int i = 0; i < t.n; i++)
            if (hpcti_algo_windowed(t.algo[i]) && !d->avg->nwin)
                hpcti_log(ctx, HPCT_LOG_INFO,
                          "allreduce algorithm: %s names %s, but the node reduction is "
                          "point-to-point (see above): p2p instead",
                          ENV, hpcti_algo_name(t.algo[i]));
    } else if ((s = probe(ctx, detail, sizeof detail)))
        return s;
    hpcti_algo_format(&d->avg->algo, table, sizeof table);
    hpcti_log(ctx, HPCT_LOG_INFO, "allreduce algorithm per size: %s=%s (%s%s%s)", ENV, table,
              auto_ ? "timed probe, the slowest rank's times" : "from " ENV,
              auto_ && d->rank == 0 ? ": " : "", auto_ && d->rank == 0 ? detail : "");
    return HPCT_SUCCESS;
}

/* The cross-node communicator's size of ctx. */
static int ctx_cross(hpct_ctx_t ctx)
{
    return hpcti_dist(ctx)->cross_size;
}

hpct_status_t hpcti_red_start_chunks(hpct_ctx_t ctx, float *buf, size_t n, int mpi, int *id)
{
    hpct_status_t s = HPCT_SUCCESS;
    for (size_t off = 0; off < n && !s; off += HPCTI_MAX_CHUNK) {
        size_t len = n - off < HPCTI_MAX_CHUNK ? n - off : HPCTI_MAX_CHUNK;
        s = mpi ? hpcti_red_start_mpi(ctx, buf + off, len, id)
                : hpcti_red_start(ctx, buf + off, len, id);
    }
    return s;
}

hpct_status_t hpcti_window_now(hpct_ctx_t ctx, float *buf, size_t n, int algo, int *id)
{
    double t0 = hpcti_tl_now(ctx);
    int ordinary = 0;
    hpct_status_t s = hpcti_node_win_allreduce(ctx, buf, n, algo == HPCTI_ALGO_SHM_P2P, &ordinary);
    if (!s && ordinary) return hpcti_red_start_chunks(ctx, buf, n, 0, id);
    if (t0 > 0 && !s)
        hpcti_tl_span(ctx, 0, "allreduce", "comm", t0, hpcti_now(),
                      "\"bytes\":%zu,\"algorithm\":\"window\",\"phases\":%d", n * sizeof(float),
                      ctx_cross(ctx) > 1 ? 2 : 1);
    return s;
}

hpct_status_t hpcti_red_start_sized(hpct_ctx_t ctx, float *buf, size_t n, int *id)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    int algo = hpcti_algo_for(d, n);
    *id = -1;
    if (hpcti_algo_windowed(algo)) return hpcti_window_now(ctx, buf, n, algo, id);
    if (algo == HPCTI_ALGO_MPI) return hpcti_red_start_mpi(ctx, buf, n, id);
    if (algo == HPCTI_ALGO_ALLGATHER) return hpcti_red_start_allgather(ctx, buf, n, id);
    return hpcti_red_start(ctx, buf, n, id);
}

/* In place through the window against the point-to-point engine, for gradient buffers across
 * several nodes: at W = 4 on 2x2 virtual nodes in place took about two thirds of p2p's time
 * at 1-16 MiB (doc/distributed.md, "Algorithm per size"; measured: bench/results.md,
 * 2026-11-27, ninth session). The table is probed on ordinary memory, which the window can
 * only copy. */
static int in_place_beats(const struct hpcti_dist *d, int algo, size_t n)
{
    return d->cross_size > 1 && d->avg->nwin && d->avg->nwin->in_place && n > d->avg->nwin->small &&
           hpcti_node_win_takes(d, n) && (algo == HPCTI_ALGO_P2P || algo == HPCTI_ALGO_ALLGATHER);
}

int hpcti_algo_grads_window(const struct hpcti_dist *d, size_t n)
{
    return in_place_beats(d, hpcti_algo_for(d, n), n);
}

int hpcti_algo_grads_upto(const struct hpcti_dist *d, size_t n)
{
    for (int i = 0; i < d->avg->algo.n; i++) {
        size_t lo = d->avg->algo.min_bytes[i] / sizeof(float); /* the class's sizes, up to n */
        size_t hi =
            i + 1 < d->avg->algo.n ? (d->avg->algo.min_bytes[i + 1] - 1) / sizeof(float) : n;
        hi = hi < n ? hi : n;
        if (lo <= hi && in_place_beats(d, d->avg->algo.algo[i], hi)) return 1;
    }
    return 0;
}

hpct_status_t hpcti_agree_in_window(hpct_ctx_t ctx, const char *fn, int held, int *all)
{
    long v = held;
    hpct_status_t s = hpcti_agree(ctx, fn, &v, 1, MPI_MIN);
    *all = !s && v == 1;
    return s;
}

hpct_status_t hpcti_red_start_grads(hpct_ctx_t ctx, float *buf, size_t n, int *id)
{
    *id = -1;
    if (hpcti_algo_grads_window(hpcti_dist(ctx), n))
        return hpcti_window_now(ctx, buf, n, HPCTI_ALGO_SHM, id);
    return hpcti_red_start_sized(ctx, buf, n, id);
}

int hpcti_algo_reductions_bound(const struct hpcti_dist *d, size_t total, int parts)
{
    /* window: ceil(n / chunk) per part, at most parts + total / chunk over all */
    return parts + (d->avg->nwin && total ? (int)(total / d->avg->nwin->chunk) + 1 : 0);
}

/* The largest buffer (floats) the table sends through allgather (0: none). */
static size_t allgather_limit(const struct hpcti_dist *d)
{
    size_t most = 0;
    for (int i = 0; i < d->avg->algo.n; i++)
        if (d->avg->algo.algo[i] == HPCTI_ALGO_ALLGATHER)
            most =
                i + 1 < d->avg->algo.n ? d->avg->algo.min_bytes[i + 1] / sizeof(float) : (size_t)-1;
    return most;
}

size_t hpcti_algo_scratch_bound(const struct hpcti_dist *d, size_t total, int parts)
{
    /* allgather: n x peers per part (hpcti_allgather_scratch), parts of at most the
     * table's allgather limit and of total in all; window: n + (cross size)
     * min(n, small) per part (hpcti_node_win_scratch), which also holds a part's last chunk's
     * whole cross-node step (a part has a small chunk or that, never both), and the whole
     * steps of the full chunks, which are at most those of total's */
    size_t ag = allgather_limit(d), room = total;
    size_t part = total < ag ? total : ag; /* all = min(parts x part, total), no overflow */
    size_t all = part && (size_t)parts > total / part ? total : (size_t)parts * part;
    if (ag) room += hpcti_allgather_scratch(d, all);
    if (!d->avg->nwin) return room;
    size_t small = total < d->avg->nwin->small ? total : d->avg->nwin->small;
    return room + (size_t)parts * small * (size_t)d->cross_size +
           hpcti_node_win_whole_room(d, total);
}

hpct_status_t hpcti_host_allreduce_mean(hpct_ctx_t ctx, const char *fn, float *buf, size_t n)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    int all = 0;
    hpct_status_t s = hpcti_algo_grads_window(d, n)
                          ? hpcti_agree_in_window(ctx, fn, hpcti_node_win_holds(d, buf, n), &all)
                          : HPCT_SUCCESS;
    return s ? s : hpcti_host_average(ctx, fn, buf, n, all ? HPCTI_ALGO_SHM : hpcti_algo_for(d, n));
}

hpct_status_t hpcti_host_average(hpct_ctx_t ctx, const char *fn, float *buf, size_t n, int algo)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    if (algo == HPCTI_ALGO_ALLGATHER) {
        int id;
        hpct_status_t s = n <= HPCTI_MAX_CHUNK
                              ? hpcti_op_begin(ctx, fn, 1, hpcti_allgather_scratch(d, n) + n)
                              : hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                                            "%s: %zu floats is above the allgather "
                                            "algorithm's %zu (HPCT_ALLREDUCE_ALGO)",
                                            fn, n, (size_t)HPCTI_MAX_CHUNK);
        if (!s) hpcti_op_averages(ctx, n);
        if (!s) s = hpcti_red_start_allgather(ctx, buf, n, &id);
        return s ? s : hpcti_op_end(ctx, NULL, 0);
    }
    int id;
    if (hpcti_algo_windowed(algo)) { /* the shared window (shm/p2p: maybe point-to-point) */
        int chunks = hpcti_node_win_chunks(d, n);
        size_t scratch = hpcti_node_win_scratch(d, n); /* >= n: room for p2p too */
        hpct_status_t ws = d->num_nodes == 1 && hpcti_node_win_ready(d, n)
                               ? hpcti_op_begin_window(ctx, fn, chunks, scratch)
                               : hpcti_op_begin(ctx, fn, chunks, scratch);
        if (!ws) hpcti_op_averages(ctx, n);
        if (!ws) ws = hpcti_window_now(ctx, buf, n, algo, &id);
        return ws ? ws : hpcti_op_end(ctx, NULL, 0);
    }
    /* p2p (n floats of scratch), or mpi: one MPI_Iallreduce per chunk, then times 1/W (no
     * scratch, but n floats in the SMPI build: lib/core/sim.h) */
    int chunks = (int)((n + HPCTI_MAX_CHUNK - 1) / HPCTI_MAX_CHUNK), mpi = algo == HPCTI_ALGO_MPI;
    hpct_status_t s = hpcti_op_begin(ctx, fn, chunks, mpi && !HPCTI_SIM_IALLREDUCE_SCRATCH ? 0 : n);
    if (!s) hpcti_op_averages(ctx, n);
    if (!s) s = hpcti_red_start_chunks(ctx, buf, n, mpi, &id);
    return s ? s : hpcti_op_end(ctx, NULL, 0);
}
