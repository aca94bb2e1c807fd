/* collective.c: the life of a collective operation on a context's distributed state
 * (hpcti_dist_of): its start with arrival tokens (hpcti_op_begin), deadline-bounded waits
 * (hpcti_wait_reqs, hpcti_red_wait) and its end (hpcti_op_end).
 *
 * Every collective operation begins with an arrival exchange: each rank posts a receive
 * from, and sends its operation number to, each of its token partners (rank +- 2^k, about
 * 2 log2 W ranks; every rank up to W = 5) on a private communicator (16-byte messages, sent
 * eagerly); equal numbers between partners mean every rank is at the same operation.
 * Waiting polls the data requests and the tokens (MPI_Test, then yields and short sleeps)
 * against cfg.collective_timeout_s, counted from the start of the operation. On expiry, the
 * partners whose token has not arrived are missing; so are the other ranks whose answer to
 * the liveness check (live.c, asked at half the deadline) shows an earlier operation. */
#include "runtime.h"
#include "live.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOKEN_TAG      7301
#define SPIN_S         20e-6 /* seconds of a wait spent spinning (of 0, 5 and 20 us, best at 4 KiB) */
#define SPIN_MAX_BYTES ((size_t)32 << 10) /* averages of more do not spin (hpcti_op_averages) */
#define LIVE_IDLE_S    1e-3 /* seconds a wait sees nothing move before it answers liveness pings */

static hpcti_slot_key_t dist_slot; /* comm's slot of every context */

struct hpcti_dist *hpcti_dist(const struct hpct_ctx *ctx)
{
    return hpcti_ctx_get(ctx, &dist_slot);
}

hpct_status_t hpcti_dist_attach(hpct_ctx_t ctx, struct hpcti_dist *d)
{
    return hpcti_ctx_put(ctx, &dist_slot, d, "hpct_init");
}

struct hpcti_dist *hpcti_dist_of(hpct_ctx_t ctx, const char *fn)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    if (d) return d;
    hpcti_error(ctx, HPCT_ERR_STATE,
                "%s: the context has no distributed runtime (create it with hpct_init or "
                "hpct_init_comm, not hpct_ctx_create)",
                fn);
    return NULL;
}

double hpcti_dist_ready_unix(hpct_ctx_t ctx)
{
    const struct hpcti_dist *d = hpcti_dist(ctx);
    return d ? d->ready_unix : 0.0;
}

void hpcti_dist_set_step(hpct_ctx_t ctx, long step)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    if (d) d->step_now = step;
}

/* 1 when every request in r [n] has completed (completed ones become MPI_REQUEST_NULL); an
 * MPI error is kept in d->mpi_error (the waits report it instead of waiting on). */
static int test_all(struct hpcti_dist *d, MPI_Request *r, int n)
{
    int all = 1;
    for (int i = 0; i < n; i++) {
        if (r[i] == MPI_REQUEST_NULL) continue;
        int flag = 0, rc = MPI_Test(&r[i], &flag, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS && !d->mpi_error) d->mpi_error = rc;
        if (!flag)
            all = 0;
        else
            d->moves++;
    }
    return all;
}

/* The operation in progress cannot complete on this rank (an MPI error, a failed phase): the
 * context is broken, as after a timeout, and every later collective says why. */
static hpct_status_t op_failed(hpct_ctx_t ctx, hpct_status_t s, const char *why)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    snprintf(d->broken_why, sizeof d->broken_why, "'%s' failed: %.200s", d->op_name, why);
    d->broken = 1;
    d->in_op = 0;
    return s;
}

hpct_status_t hpcti_mpi_failed(hpct_ctx_t ctx, int rc, const char *what)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) snprintf(msg, sizeof msg, "code %d", rc);
    hpcti_error(ctx, HPCT_ERR_COMM, "%s: %s failed on rank %d of %d: MPI error %d (%s)",
                d->op_name ? d->op_name : "collective", what, d->rank, d->size, rc, msg);
    return d->in_op ? op_failed(ctx, HPCT_ERR_COMM, ctx->last_error) : HPCT_ERR_COMM;
}

/* A collective from a thread other than hpct_init's where MPI allows only that one. */
static hpct_status_t other_thread(hpct_ctx_t ctx, const char *name)
{
    int level = hpcti_dist(ctx)->thread_level;
    return hpcti_error(ctx, HPCT_ERR_STATE,
                       "%s: called from a thread other than the one that called hpct_init, but "
                       "MPI was initialised with %s; a context may move between threads only "
                       "under MPI_THREAD_SERIALIZED or above (hpct_init asks for it when it "
                       "initialises MPI; a caller that initialises MPI must ask for it)",
                       name,
                       level == MPI_THREAD_SINGLE ? "MPI_THREAD_SINGLE" : "MPI_THREAD_FUNNELED");
}

static hpct_status_t op_start(hpct_ctx_t ctx, const char *name, int max_red, size_t total,
                              int tokens)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    /* Collectives on a context run one at a time: one still open here was left by an error
     * return midway, and its exchanges may still be in flight. */
    if (d->in_op && !d->broken)
        op_failed(ctx, HPCT_ERR_STATE, "it ended with an error before completing");
    if (d->thread_level < MPI_THREAD_SERIALIZED && !pthread_equal(pthread_self(), d->init_thread))
        return other_thread(ctx, name);
    if (d->broken)
        return hpcti_error(ctx, HPCT_ERR_STATE,
                           "%s: an earlier collective on this context %s; its exchanges may "
                           "still be in flight: end the job with hpct_abort_job",
                           name, d->broken_why[0] ? d->broken_why : "timed out");
    hpct_status_t s = d->work.reserve(ctx, max_red, total); /* the engine's room */
    if (s) return s;
    d->op_name = name;
    d->tok_out[0] = ++d->op_seq;
    d->tok_out[1] = d->step_now > 0 ? (uint64_t)d->step_now : 0;
    d->op_start = hpcti_now();
    d->spin_s = SPIN_S;
    d->in_op = 1;
    d->op_tokens = tokens;
    d->mpi_error = MPI_SUCCESS;
    hpcti_live_op_start(d);
    int rc = MPI_SUCCESS, np = d->npartners;
    for (int i = 0; i < np; i++) {
        int p = d->partner[i];
        d->tok_req[i] = d->tok_req[np + i] = MPI_REQUEST_NULL;
        if (!tokens || rc != MPI_SUCCESS) continue;
        rc = MPI_Irecv(&d->tok_in[2 * i], 2, MPI_UINT64_T, p, TOKEN_TAG, d->ctl, &d->tok_req[i]);
        if (rc == MPI_SUCCESS)
            rc = MPI_Isend(d->tok_out, 2, MPI_UINT64_T, p, TOKEN_TAG, d->ctl, &d->tok_req[np + i]);
    }
    if (d->op_seq == d->test_stop_op) raise(SIGSTOP); /* stopped outside a wait, in the op */
    return rc == MPI_SUCCESS ? HPCT_SUCCESS : hpcti_mpi_failed(ctx, rc, "posting arrival tokens");
}

int hpcti_token_partners(int rank, int size, int *out)
{
    int n = 0;
    for (long step = 1; step < size && n + 2 <= HPCTI_MAX_PARTNERS; step *= 2) {
        int cand[2] = {(int)((rank + step) % size), (int)((rank - step % size + size) % size)};
        for (int c = 0; c < 2; c++) {
            int i = n;
            if (cand[c] == rank) continue;
            while (i > 0 && out[i - 1] > cand[c]) i--; /* insertion into the sorted list */
            if (i > 0 && out[i - 1] == cand[c]) continue;
            memmove(out + i + 1, out + i, (size_t)(n - i) * sizeof *out);
            out[i] = cand[c], n++;
        }
    }
    return n;
}

int hpcti_partner_index(const struct hpcti_dist *d, int p)
{
    int lo = 0, hi = d->npartners - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (d->partner[mid] == p) return mid;
        if (d->partner[mid] < p)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

hpct_status_t hpcti_op_begin(hpct_ctx_t ctx, const char *name, int max_red, size_t total)
{
    return op_start(ctx, name, max_red, total, 1);
}

/* Whether this host's ranks outnumber the CPUs they share: the launcher's count of ranks on
 * the host (PMIx, Open MPI) above the CPUs of this rank's affinity mask, when the mask holds
 * every online CPU (ranks not bound; bound ranks are taken to have CPUs of their own, and an
 * unknown count to fit). */
void hpcti_wait_setup(hpct_ctx_t ctx)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    long online;
    int cpus = hpcti_cpus_usable(&online);
    d->crowded = online > 0 && d->boot.local_size > cpus && cpus >= online;
    if (d->crowded)
        hpcti_log(ctx, HPCT_LOG_INFO,
                  "waits: %d ranks share this host's %d CPUs: averages of more than %zu KiB "
                  "yield the CPU at once instead of spinning first",
                  d->boot.local_size, cpus, SPIN_MAX_BYTES >> 10);
}

/* Where ranks outnumber CPUs, an average of more than SPIN_MAX_BYTES waits for its peers'
 * copies and sums, which need a CPU that a spinning rank holds (64 KiB at W = 4 on 2x2
 * virtual nodes, 2 CPUs: 0.81x -> 1.10x MPI_Allreduce, medians of 5 alternated runs), so
 * its waits yield at once. Shorter averages (4-16 KiB were faster spinning there too),
 * agreements, and every wait where each rank has a CPU (W = 2 on 2 CPUs: yielding at
 * once cost 64 KiB averages in place 7 %) keep SPIN_S. */
void hpcti_op_averages(hpct_ctx_t ctx, size_t floats)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    d->spin_s = d->crowded && floats > SPIN_MAX_BYTES / sizeof(float) ? 0.0 : SPIN_S;
}

hpct_status_t hpcti_op_begin_window(hpct_ctx_t ctx, const char *name, int max_red, size_t total)
{
    return op_start(ctx, name, max_red, total, 0);
}

/* What a wait is waiting for. */
struct goal {
    MPI_Request *reqs;
    int n;
    int red; /* a reduction index, or -1 */
    int all; /* 1: every reduction and the tokens too */
    /* node-window counters: *flags[i] >= want for i < nflags (world[i] is whose; flags[i][1]
     * is the operation number its owner is in) */
    uint64_t *const *flags;
    const int *world;
    int nflags;
    uint64_t want;
};

/* 1 when the node-window counter at f has reached want (acquire: the writer's data before
 * its release store is visible after this load). */
static int flag_reached(uint64_t *f, uint64_t want)
{
    return atomic_load_explicit((_Atomic uint64_t *)f, memory_order_acquire) >= want;
}

/* Ranks whose node-window counter is behind, as "2,3" into out [cap]; returns their count.
 * absent: only those still at an earlier operation than op (they did not arrive), else
 * only those in op (they stopped inside it). */
static int flags_behind(const struct goal *g, uint64_t op, int absent, char *out, size_t cap)
{
    size_t len = 0;
    int count = 0;
    out[0] = 0;
    for (int i = 0; i < g->nflags; i++) {
        if (flag_reached(g->flags[i], g->want)) continue;
        uint64_t at =
            atomic_load_explicit((_Atomic uint64_t *)&g->flags[i][1], memory_order_relaxed);
        if ((at < op) != absent) continue;
        len = hpcti_rank_list_add(out, cap, len, count++, g->world[i]);
    }
    return count;
}

/* Whether rank p has entered the operation in progress: 1 yes, 0 no, -1 not known (not a
 * token partner, and no answer to this operation's liveness check). */
static int arrived(const struct hpcti_dist *d, int p)
{
    int i = hpcti_partner_index(d, p);
    if (i >= 0) return d->tok_req[i] == MPI_REQUEST_NULL;
    uint64_t op, step;
    if (!hpcti_live_answer_of(d, p, &op, &step)) return -1;
    return op >= d->op_seq;
}

/* What the missing rank p did last into out [cap]: from a partner's token of the last
 * completed operation, the operation it entered and its step; from another rank's answer to
 * the liveness check, the operation it was at. */
static size_t last_seen(const struct hpcti_dist *d, int p, char *out, size_t cap)
{
    int i = hpcti_partner_index(d, p), n;
    uint64_t op, step;
    if (i < 0 && hpcti_live_answer_of(d, p, &op, &step))
        n = snprintf(out, cap, "rank %d answered from operation #%llu", p, (unsigned long long)op);
    else if (i < 0 || (op = d->tok_last[2 * i], step = d->tok_last[2 * i + 1], op == 0))
        return (size_t)snprintf(out, cap, "rank %d: no collective completed yet", p);
    else
        n = snprintf(out, cap, "rank %d entered '%s' (#%llu)", p,
                     d->last_op_name ? d->last_op_name : "?", (unsigned long long)op);
    if (step && n > 0 && (size_t)n < cap)
        n += snprintf(out + n, cap - (size_t)n, " in step %llu", (unsigned long long)step);
    return n > 0 ? (size_t)n : 0;
}

/* This rank did not run for most of the deadline (stopped or descheduled): its peers time
 * out on it, and it does not blame them. */
static hpct_status_t self_stopped(hpct_ctx_t ctx, double gap)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    return hpcti_error(ctx, HPCT_ERR_TIMEOUT,
                       "%s (operation #%llu): this rank (%d of %d, on %s) did not run for %.1f s "
                       "of the %g s deadline (it was stopped, e.g. by SIGSTOP, or descheduled); "
                       "the other ranks time out on it; end the job with hpct_abort_job(ctx, "
                       "HPCT_EXIT_HANG)",
                       d->op_name, (unsigned long long)d->op_seq, d->rank, d->size,
                       d->boot.hostname, gap, d->deadline_s);
}

/* Ranks that arrived (or whose arrival is not known here: not token partners), then
 * answered no liveness check for half the deadline: stopped. */
static hpct_status_t stopped_inside(hpct_ctx_t ctx, const char *ranks, int count, int known)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    return hpcti_error(
        ctx, HPCT_ERR_TIMEOUT,
        "%s (operation #%llu): rank%s %s of %d stopped%s did not complete it within %g s and "
        "answered no liveness check for %.1f s (stopped, e.g. by SIGSTOP, or outside the library "
        "that long, e.g. after an error of its own; seen by rank %d on %s); end the job with "
        "hpct_abort_job(ctx, HPCT_EXIT_HANG)",
        d->op_name, (unsigned long long)d->op_seq, count > 1 ? "s" : "", ranks, d->size,
        known ? " during it: arrived," : ":", d->deadline_s, hpcti_live_quiet_s(d, hpcti_now()),
        d->rank, d->boot.hostname);
}

/* Ranks that did not arrive but answer liveness checks (waiting in an earlier operation for
 * a stopped rank), as "2,3" into out [cap]; returns their count. After a liveness ask. */
static int missing_alive(const struct hpcti_dist *d, char *out, size_t cap)
{
    size_t len = 0;
    int count = 0;
    out[0] = 0;
    for (int p = 0; p < d->size; p++)
        if (p != d->rank && arrived(d, p) == 0 && !d->live.silent[p])
            len = hpcti_rank_list_add(out, cap, len, count++, p);
    return count;
}

/* Some ranks did not arrive: the silent ones stopped, the others (alive) wait for them. */
static hpct_status_t stopped_elsewhere(hpct_ctx_t ctx, const char *silent, int nsilent,
                                       const char *alive, const char *last)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    return hpcti_error(
        ctx, HPCT_ERR_TIMEOUT,
        "%s (operation #%llu): rank%s %s of %d stopped: no arrival within %g s and no answer to "
        "a liveness check for %.1f s (rank%s %s did not arrive either but answer: waiting in an "
        "earlier operation; seen by rank %d on %s%s); end the job with hpct_abort_job(ctx, "
        "HPCT_EXIT_HANG)",
        d->op_name, (unsigned long long)d->op_seq, nsilent > 1 ? "s" : "", silent, d->size,
        d->deadline_s, hpcti_live_quiet_s(d, hpcti_now()), strchr(alive, ',') ? "s" : "", alive,
        d->rank, d->boot.hostname, last);
}

/* The ranks known not to have arrived (a partner's token has not come, another rank answered
 * from an earlier operation), as "2,3" into out [cap], and what the first few did last into
 * last [lcap]; returns their count. */
static int tokens_missing(const struct hpcti_dist *d, char *out, size_t cap, char *last,
                          size_t lcap)
{
    size_t len = 0, ll = 0;
    int count = 0;
    out[0] = last[0] = 0;
    for (int p = 0; p < d->size; p++) {
        if (p == d->rank || arrived(d, p) != 0) continue;
        len = hpcti_rank_list_add(out, cap, len, count, p);
        if (count < 4 && ll < lcap - 100) {
            ll += (size_t)snprintf(last + ll, lcap - ll, "%s", count ? "; " : "; last seen: ");
            ll += last_seen(d, p, last + ll, lcap - ll);
        }
        count++;
    }
    return count;
}

/* 1 when every silent rank is known to have arrived (a token partner whose token came). */
static int silent_arrived(const struct hpcti_dist *d)
{
    for (int p = 0; p < d->size; p++)
        if (p != d->rank && d->live.silent[p] && arrived(d, p) != 1) return 0;
    return 1;
}

/* The HPCT_ERR_TIMEOUT detail, first that applies: this rank itself did not run; ranks that
 * have not arrived (tokens, liveness answers, or the node window's counters), with those that
 * answer no liveness check; ranks stopped inside the node window; ranks that arrived and
 * then stopped answering; else all arrived and it did not complete. */
static hpct_status_t timed_out(hpct_ctx_t ctx, const struct goal *g)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    char missing[512] = "", last[400] = "", silent[512] = "", quiet[600] = "";
    int count = tokens_missing(d, missing, sizeof missing, last, sizeof last);
    d->broken = 1;
    d->in_op = 0;
    snprintf(d->broken_why, sizeof d->broken_why, "'%s' timed out", d->op_name);
    double gap = hpcti_live_self_gap(d);
    int nsilent = hpcti_live_silent(d, silent, sizeof silent);
    hpcti_live_found(d, gap <= 0.5 * d->deadline_s && nsilent > 0);
    if (gap > 0.5 * d->deadline_s) return self_stopped(ctx, gap);
    if (nsilent)
        snprintf(quiet, sizeof quiet, "; no answer to a liveness check for %.1f s from rank%s %s",
                 hpcti_live_quiet_s(d, hpcti_now()), nsilent > 1 ? "s" : "", silent);
    char alive[512];
    if (count && nsilent && missing_alive(d, alive, sizeof alive))
        return stopped_elsewhere(ctx, silent, nsilent, alive, last);
    if (!count) count = flags_behind(g, d->op_seq, 1, missing, sizeof missing);
    if (count)
        return hpcti_error(
            ctx, HPCT_ERR_TIMEOUT,
            "%s (operation #%llu): rank%s %s of %d did not arrive within %g s (seen by rank %d on "
            "%s%s%s); end the job with hpct_abort_job(ctx, HPCT_EXIT_HANG)",
            d->op_name, (unsigned long long)d->op_seq, count > 1 ? "s" : "", missing, d->size,
            d->deadline_s, d->rank, d->boot.hostname, last, quiet);
    int behind = flags_behind(g, d->op_seq, 0, missing, sizeof missing);
    if (behind)
        return hpcti_error(
            ctx, HPCT_ERR_TIMEOUT,
            "%s (operation #%llu): rank%s %s of %d stopped inside the node's shared-window "
            "exchange: not at its step %llu within %g s (seen by rank %d on %s); end the job with "
            "hpct_abort_job(ctx, HPCT_EXIT_HANG)",
            d->op_name, (unsigned long long)d->op_seq, behind > 1 ? "s" : "", missing, d->size,
            (unsigned long long)g->want, d->deadline_s, d->rank, d->boot.hostname);
    if (nsilent) return stopped_inside(ctx, silent, nsilent, silent_arrived(d));
    return hpcti_error(ctx, HPCT_ERR_TIMEOUT,
                       "%s (operation #%llu): all %d ranks arrived but it did not complete within "
                       "%g s (%s; seen by rank %d on %s); end the job with "
                       "hpct_abort_job(ctx, HPCT_EXIT_HANG)",
                       d->op_name, (unsigned long long)d->op_seq, d->size, d->deadline_s,
                       hpcti_live_asked_s(d, hpcti_now()) > 0.0
                           ? "every rank still answers liveness checks: the exchange itself stalled"
                           : "a rank stopped during it",
                       d->rank, d->boot.hostname);
}

static int goal_met(struct hpcti_dist *d, struct goal *g)
{
    int tokens = test_all(d, d->tok_req, 2 * d->npartners);
    if (!test_all(d, g->reqs, g->n)) return 0;
    if (g->red >= 0 && !d->work.done(d, g->red)) return 0;
    for (int i = 0; i < g->nflags; i++)
        if (!flag_reached(g->flags[i], g->want)) return 0;
    if (!g->all) return 1;
    if (!d->work.done(d, -1)) return 0;
    return tokens;
}

static hpct_status_t wait_for(hpct_ctx_t ctx, struct goal *g)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    double t0 = hpcti_now(), idle0 = t0; /* idle0: when this wait last saw something move */
    double polled = t0;                  /* the last poll (a long gap: this rank stopped) */
    unsigned long seen = d->moves;
    hpcti_live_wait_begins(d, t0);
    for (;;) {
        hpct_status_t s = d->work.progress(ctx);
        if (s) return d->in_op ? op_failed(ctx, s, ctx->last_error) : s;
        int met = goal_met(d, g);
        if (d->mpi_error) return hpcti_mpi_failed(ctx, d->mpi_error, "testing its requests");
        if (met) break;
        double t = hpcti_now();
        if (t - idle0 > LIVE_IDLE_S) /* a wait that moves needs no liveness checks */
            hpcti_live_poll(d, t, &polled);
        else
            polled = t;
        if (t - d->op_start > d->deadline_s) return timed_out(ctx, g);
        if (d->moves != seen) seen = d->moves, idle0 = t;
        hpcti_backoff(t - idle0, d->spin_s); /* lib/core/poll.c */
    }
    double t1 = hpcti_now();
    hpcti_live_wait_ends(d, t1);
    d->wait_s += t1 - t0;
    return HPCT_SUCCESS;
}

hpct_status_t hpcti_wait_reqs(hpct_ctx_t ctx, MPI_Request *reqs, int n)
{
    struct goal g = {reqs, n, -1, 0, NULL, NULL, 0, 0};
    return wait_for(ctx, &g);
}

hpct_status_t hpcti_wait_flags(hpct_ctx_t ctx, uint64_t *const *flags, const int *world, int n,
                               uint64_t want)
{
    struct goal g = {NULL, 0, -1, 0, flags, world, n, want};
    return wait_for(ctx, &g);
}

hpct_status_t hpcti_red_wait(hpct_ctx_t ctx, int id)
{
    struct goal g = {NULL, 0, id, 0, NULL, NULL, 0, 0};
    return wait_for(ctx, &g);
}

hpct_status_t hpcti_op_timed_out(hpct_ctx_t ctx, const char *where)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    struct goal g = {NULL, 0, -1, 0, NULL, NULL, 0, 0};
    test_all(d, d->tok_req, 2 * d->npartners); /* arrived tokens are not named as missing */
    timed_out(ctx, &g);
    char detail[sizeof ctx->last_error];
    snprintf(detail, sizeof detail, "%s", ctx->last_error);
    return hpcti_error(ctx, HPCT_ERR_TIMEOUT, "%s [while waiting in %s]", detail, where);
}

hpct_status_t hpcti_op_end(hpct_ctx_t ctx, MPI_Request *reqs, int n)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    struct goal g = {reqs, n, -1, 1, NULL, NULL, 0, 0};
    hpct_status_t s = wait_for(ctx, &g);
    if (s) return s;
    d->in_op = 0;
    d->ops++;
    for (int i = 0; i < d->npartners; i++)
        if (d->op_tokens && d->tok_in[2 * i] != d->tok_out[0])
            return hpcti_error(ctx, HPCT_ERR_COMM,
                               "%s: rank %d is at collective operation #%llu while rank %d is at "
                               "#%llu (ranks called collectives in different orders)",
                               d->op_name, d->partner[i], (unsigned long long)d->tok_in[2 * i],
                               d->rank, (unsigned long long)d->tok_out[0]);
    if (d->op_tokens) {
        memcpy(d->tok_last, d->tok_in, 2 * (size_t)d->npartners * sizeof *d->tok_in);
        d->last_op_name = d->op_name;
    }
    return HPCT_SUCCESS;
}
