/* live.c: liveness checks inside a collective operation, so that a deadline names the rank
 * that stopped (SIGSTOP, a debugger, a frozen node) and not just "it did not complete".
 *
 * Arrival tokens show which token partners entered an operation; they cannot show who
 * stopped inside it. So a wait that has lasted half the deadline asks every other rank once (a
 * 16-byte ping on the control communicator) and every rank answers pings from inside its own
 * waits (a receive from any rank is kept posted from hpct_init on) with the operation it is
 * at, which tells the asker whether ranks that are not its partners arrived. A rank that has
 * answered nothing by the deadline is named as stopped. Pings are sent only by waits already
 * half a deadline long, so a healthy job sends none; a stalled job sends W - 1 per waiting
 * rank, once per operation. The tables for asking and answering every rank are made at the
 * first ask or ping, so a healthy job keeps none. An answer that comes later than a quarter
 * of the deadline after the ask counts as none: that rank did not run meanwhile (a stopped
 * rank that the launcher resumes to end the job answers late, and is still the one named).
 *
 * A rank also notices its own stop: a gap between two polls of one wait longer than a
 * quarter of the deadline means this process did not run (it was stopped or descheduled),
 * and its timeout says so instead of blaming a peer that was waiting for it.
 *
 * After a timeout the writer rank saves the last completed step (the emergency checkpoint)
 * and tells the others, which wait for that word before they end the job, unless the writer
 * is one of the ranks found stopped. */
#include "runtime.h"
#include "live.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PING_TAG  7302
#define PONG_TAG  7303
#define SAVED_TAG 7304
#define ASK_AT    0.5 /* of the deadline: when a wait asks its peers */
/* of the deadline: this long without running means a rank stopped (a gap between this rank's
 * polls; a peer's answer that late) */
#define NOT_RUN 0.25

/* Post the receive of the next ping from any rank. */
static void post_ping_recv(struct hpcti_dist *d)
{
    if (MPI_Irecv(d->live.ping_in, 2, MPI_UINT64_T, MPI_ANY_SOURCE, PING_TAG, d->ctl,
                  &d->live.ping_req) != MPI_SUCCESS)
        d->live.ping_req = MPI_REQUEST_NULL; /* this rank then answers nothing: named stopped */
}

hpct_status_t hpcti_live_setup(hpct_ctx_t ctx)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    struct hpcti_live *l = &d->live;
    l->ping_req = MPI_REQUEST_NULL;
    l->ready = 1;
    if (d->size > 1) post_ping_recv(d);
    return HPCT_SUCCESS;
}

/* The tables for answering every rank, made at the first ping (a healthy job gets none, so
 * it keeps no per-rank table); 0 when they cannot be made (the ping goes unanswered). */
static int answer_tables(struct hpcti_live *l, int size)
{
    if (l->pong_req) return 1;
    size_t n = (size_t)size;
    l->pong_out = calloc(3 * n, sizeof *l->pong_out);
    l->pong_req = l->pong_out ? malloc(n * sizeof *l->pong_req) : NULL;
    if (!l->pong_req) return free(l->pong_out), l->pong_out = NULL, 0;
    for (size_t p = 0; p < n; p++) l->pong_req[p] = MPI_REQUEST_NULL;
    return 1;
}

/* The tables for asking every rank, made at the first ask; 0 when they cannot be made (the
 * timeout then names ranks from the tokens alone). */
static int ask_tables(struct hpcti_live *l, int size)
{
    if (l->ask_req) return 1;
    size_t n = (size_t)size;
    l->ask_in = calloc(3 * n, sizeof *l->ask_in);
    l->silent = calloc(n, 1);
    l->heard_t = calloc(n, sizeof *l->heard_t);
    l->ask_req = l->ask_in && l->silent && l->heard_t ? malloc(2 * n * sizeof *l->ask_req) : NULL;
    if (!l->ask_req) {
        free(l->ask_in), free(l->silent), free(l->heard_t);
        l->ask_in = NULL, l->silent = NULL, l->heard_t = NULL;
        return 0;
    }
    for (size_t p = 0; p < 2 * n; p++) l->ask_req[p] = MPI_REQUEST_NULL;
    return 1;
}

/* 1 when request r is done (or null); errors count as done (the rank is then not trusted). */
static int done(MPI_Request *r)
{
    int flag = 1;
    if (*r != MPI_REQUEST_NULL && MPI_Test(r, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
        *r = MPI_REQUEST_NULL;
        return 1;
    }
    return flag;
}

void hpcti_live_answer(struct hpcti_dist *d)
{
    struct hpcti_live *l = &d->live;
    if (!l->ready) return;
    for (int k = 0; k < d->size && l->ping_req != MPI_REQUEST_NULL; k++) {
        int flag = 0;
        MPI_Status st;
        if (MPI_Test(&l->ping_req, &flag, &st) != MPI_SUCCESS || !flag) return;
        int p = st.MPI_SOURCE;
        if (p >= 0 && p < d->size && answer_tables(l, d->size) && done(&l->pong_req[p])) {
            uint64_t *out = &l->pong_out[3 * p];
            out[0] = l->ping_in[0]; /* the asker's operation number, echoed */
            out[1] = d->op_seq;     /* the operation this rank is at (or last completed) */
            out[2] = d->step_now > 0 ? (uint64_t)d->step_now : 0;
            if (MPI_Isend(out, 3, MPI_UINT64_T, p, PONG_TAG, d->ctl, &l->pong_req[p]) !=
                MPI_SUCCESS)
                l->pong_req[p] = MPI_REQUEST_NULL;
        }
        post_ping_recv(d);
    }
}

/* Ask every other rank once in this operation: a receive of its answer, then the ping. */
static void ask(struct hpcti_dist *d, double now)
{
    struct hpcti_live *l = &d->live;
    if (!ask_tables(l, d->size)) return;
    l->asked_op = d->op_seq;
    l->ask_t = now;
    l->ping_out[0] = d->op_seq;
    l->ping_out[1] = (uint64_t)d->rank;
    for (int p = 0; p < d->size; p++) {
        l->silent[p] = p != d->rank;
        l->heard_t[p] = 0.0;
        if (p == d->rank) continue;
        MPI_Request *rx = &l->ask_req[p], *tx = &l->ask_req[d->size + p];
        if (*rx == MPI_REQUEST_NULL &&
            MPI_Irecv(&l->ask_in[3 * p], 3, MPI_UINT64_T, p, PONG_TAG, d->ctl, rx) != MPI_SUCCESS)
            *rx = MPI_REQUEST_NULL;
        if (done(tx) &&
            MPI_Isend(l->ping_out, 2, MPI_UINT64_T, p, PING_TAG, d->ctl, tx) != MPI_SUCCESS)
            *tx = MPI_REQUEST_NULL;
    }
}

/* Answers received: a rank is heard once its answer echoes this operation's number (an
 * answer to an earlier operation's ping is dropped and the receive posted again); one that
 * came later than NOT_RUN of the deadline after the ask leaves the rank silent. */
static void collect(struct hpcti_dist *d, double now)
{
    struct hpcti_live *l = &d->live;
    for (int p = 0; p < d->size; p++) {
        MPI_Request *rx = &l->ask_req[p];
        if (p == d->rank || !l->silent[p] || l->heard_t[p] > 0.0 || *rx == MPI_REQUEST_NULL ||
            !done(rx))
            continue;
        if (l->ask_in[3 * p] == d->op_seq) {
            l->heard_t[p] = now;
            l->silent[p] = now - l->ask_t > NOT_RUN * d->deadline_s;
            continue;
        }
        if (MPI_Irecv(&l->ask_in[3 * p], 3, MPI_UINT64_T, p, PONG_TAG, d->ctl, rx) != MPI_SUCCESS)
            *rx = MPI_REQUEST_NULL;
    }
}

/* A gap of gap seconds in which this rank did not take part in the operation. */
static void note_gap(struct hpcti_dist *d, double gap)
{
    if (gap > NOT_RUN * d->deadline_s && gap > d->live.self_gap_s) d->live.self_gap_s = gap;
}

void hpcti_live_poll(struct hpcti_dist *d, double now, double *prev)
{
    struct hpcti_live *l = &d->live;
    note_gap(d, now - *prev);
    *prev = now;
    if (d->size < 2 || !l->ready) return;
    hpcti_live_answer(d);
    if (l->asked_op != d->op_seq && now - d->op_start > ASK_AT * d->deadline_s) ask(d, now);
    if (l->asked_op == d->op_seq) collect(d, now);
}

void hpcti_live_op_start(struct hpcti_dist *d)
{
    d->live.self_gap_s = 0.0;
    d->live.found_stopped = 0;
    d->live.ran_t = d->op_start;
}

void hpcti_live_wait_begins(struct hpcti_dist *d, double now)
{
    note_gap(d, now - d->live.ran_t);
}

void hpcti_live_wait_ends(struct hpcti_dist *d, double now)
{
    d->live.ran_t = now;
}

int hpcti_live_answer_of(const struct hpcti_dist *d, int p, uint64_t *op, uint64_t *step)
{
    const struct hpcti_live *l = &d->live;
    if (l->asked_op != d->op_seq || p == d->rank || l->heard_t[p] <= 0.0) return 0;
    *op = l->ask_in[3 * p + 1], *step = l->ask_in[3 * p + 2];
    return 1;
}

int hpcti_live_silent(const struct hpcti_dist *d, char *out, size_t cap)
{
    const struct hpcti_live *l = &d->live;
    size_t len = 0;
    int count = 0;
    out[0] = 0;
    if (l->asked_op != d->op_seq) return 0;
    for (int p = 0; p < d->size; p++) {
        if (!l->silent[p]) continue;
        len = hpcti_rank_list_add(out, cap, len, count++, p);
    }
    return count;
}

double hpcti_live_asked_s(const struct hpcti_dist *d, double now)
{
    return d->live.asked_op == d->op_seq ? now - d->live.ask_t : 0.0;
}

double hpcti_live_quiet_s(const struct hpcti_dist *d, double now)
{
    const struct hpcti_live *l = &d->live;
    double quiet = hpcti_live_asked_s(d, now);
    for (int p = 0; p < d->size && quiet > 0.0; p++)
        if (l->silent[p] && l->heard_t[p] > 0.0 && l->heard_t[p] - l->ask_t < quiet)
            quiet = l->heard_t[p] - l->ask_t;
    return quiet;
}

double hpcti_live_self_gap(const struct hpcti_dist *d)
{
    return d->live.self_gap_s;
}

int hpcti_live_rank_stopped(hpct_ctx_t ctx, int rank)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    return d && rank >= 0 && rank < d->size && d->live.found_stopped && d->live.silent &&
           d->live.silent[rank] != 0;
}

void hpcti_live_found(struct hpcti_dist *d, int found)
{
    d->live.found_stopped = found;
}

void hpcti_live_saved_notice(hpct_ctx_t ctx)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    if (!d || d->size < 2) return;
    static const uint64_t word = 1;
    for (int p = 0; p < d->size; p++) {
        MPI_Request r;
        if (p != d->rank &&
            MPI_Isend(&word, 1, MPI_UINT64_T, p, SAVED_TAG, d->ctl, &r) == MPI_SUCCESS)
            MPI_Request_free(&r); /* 8 bytes, sent eagerly; the job ends next */
    }
}

/* Wait up to one deadline for the writer's word (answering pings meanwhile); 1 when it came. */
static int saved_word(struct hpcti_dist *d, int writer)
{
    uint64_t word = 0;
    MPI_Request r;
    if (MPI_Irecv(&word, 1, MPI_UINT64_T, writer, SAVED_TAG, d->ctl, &r) != MPI_SUCCESS) return 0;
    double t0 = hpcti_now();
    for (;;) {
        int flag = 0;
        if (MPI_Test(&r, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) return 0;
        if (flag) return 1;
        hpcti_live_answer(d);
        double waited = hpcti_now() - t0;
        if (waited > d->deadline_s) {
            if (MPI_Cancel(&r) == MPI_SUCCESS) MPI_Wait(&r, MPI_STATUS_IGNORE);
            return 0;
        }
        hpcti_backoff(waited, 0.0);
    }
}

void hpcti_live_await_writer(hpct_ctx_t ctx, int writer, char *out, size_t cap)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    out[0] = 0;
    if (!d || writer < 0 || writer >= d->size || writer == d->rank) return;
    if (hpcti_live_rank_stopped(ctx, writer))
        snprintf(out, cap,
                 "; no emergency checkpoint: the writer (rank %d) is a rank that stopped, so the "
                 "newest checkpoint in the directory is the last state kept",
                 writer);
    else if (!saved_word(d, writer))
        snprintf(out, cap,
                 "; the writer (rank %d) did not confirm an emergency checkpoint within %g s",
                 writer, d->deadline_s);
}

void hpcti_live_release(struct hpcti_dist *d, int cancel, int ok)
{
    struct hpcti_live *l = &d->live;
    if (!l->ready) { /* set-up failed or never ran: no request was posted */
        free(l->pong_req), free(l->pong_out), free(l->ask_req), free(l->ask_in), free(l->silent),
            free(l->heard_t);
        memset(l, 0, sizeof *l);
        return;
    }
    if (cancel) {
        if (l->ping_req != MPI_REQUEST_NULL && MPI_Cancel(&l->ping_req) == MPI_SUCCESS)
            MPI_Wait(&l->ping_req, MPI_STATUS_IGNORE);
        for (int p = 0; l->ask_req && p < d->size; p++)
            if (l->ask_req[p] != MPI_REQUEST_NULL && MPI_Cancel(&l->ask_req[p]) == MPI_SUCCESS)
                MPI_Wait(&l->ask_req[p], MPI_STATUS_IGNORE);
        for (int p = 0; p < d->size; p++) {
            if (l->ask_req && l->ask_req[d->size + p] != MPI_REQUEST_NULL)
                MPI_Request_free(&l->ask_req[d->size + p]);
            if (l->pong_req && l->pong_req[p] != MPI_REQUEST_NULL)
                MPI_Request_free(&l->pong_req[p]);
        }
    }
    /* a broken runtime keeps the buffers its pending requests may still write (as dist.c) */
    if (!ok) return;
    free(l->pong_req), free(l->pong_out), free(l->ask_req), free(l->ask_in), free(l->silent),
        free(l->heard_t);
    memset(l, 0, sizeof *l);
}
