/* live.h: liveness checks inside collective operations (live.c): who stopped, this rank's own
 * stop, and the word from the writer that the emergency checkpoint is saved. */
#ifndef HPCTI_LIVE_H
#define HPCTI_LIVE_H

#include "../../core/core.h"

#include <stddef.h>

struct hpcti_dist;

/* hpct_init: the standing receive of pings (the per-rank tables come with the first ping). */
HPCTI_CHECK hpct_status_t hpcti_live_setup(hpct_ctx_t ctx);
/* End the pending requests (cancel: MPI still usable) and free what setup made (ok = 0, a
 * broken runtime: kept, as pending requests may still write into it). */
void hpcti_live_release(struct hpcti_dist *d, int cancel, int ok);
/* Start of an operation: forget the last one's findings. */
void hpcti_live_op_start(struct hpcti_dist *d);
/* A wait of the operation begins at now (hpcti_now): the time since this rank last took part
 * (the start, the previous wait's end) counts as a gap, so a rank stopped between two waits,
 * in its own computation, knows it when it wakes. */
void hpcti_live_wait_begins(struct hpcti_dist *d, double now);
/* A wait of the operation ended at now: this rank took part until then. */
void hpcti_live_wait_ends(struct hpcti_dist *d, double now);
/* One poll of a wait at time now (*prev: the last poll's time, updated): answer pings, ask
 * the peers once the operation is half a deadline old, collect their answers. */
void hpcti_live_poll(struct hpcti_dist *d, double now, double *prev);
/* Answer the pings that have arrived (from any wait, also outside an operation). */
void hpcti_live_answer(struct hpcti_dist *d);
/* The ranks asked in this operation that have not answered (or only later than a quarter of
 * the deadline), as "2,3" into out [cap]; returns their count. */
int hpcti_live_silent(const struct hpcti_dist *d, char *out, size_t cap);
/* 1 when rank p answered this operation's liveness check (late or not), with the operation
 * number it was at (or had last completed) and its step; else 0. */
int hpcti_live_answer_of(const struct hpcti_dist *d, int p, uint64_t *op, uint64_t *step);
/* Seconds since this operation asked its peers (0 when it has not). */
double hpcti_live_asked_s(const struct hpcti_dist *d, double now);
/* Seconds the silent ranks went unheard since the ask: the shortest of them (0: not asked). */
double hpcti_live_quiet_s(const struct hpcti_dist *d, double now);
/* The longest gap between two polls of this operation's waits, or before one of its waits,
 * above a quarter of the deadline (this process did not run, or not in the library), or 0. */
double hpcti_live_self_gap(const struct hpcti_dist *d);
/* A timeout named the silent ranks as stopped (found = 1) or not. */
void hpcti_live_found(struct hpcti_dist *d, int found);
/* 1 when the last timeout on ctx found rank stopped (it answered no liveness check). */
int hpcti_live_rank_stopped(hpct_ctx_t ctx, int rank);
/* The writer, after its emergency checkpoint: tell every other rank it is saved. */
void hpcti_live_saved_notice(hpct_ctx_t ctx);
/* A rank other than writer after a timeout: wait up to one deadline for that word from
 * writer (not at all when the writer was found stopped); what went wrong, if anything, as
 * "; ..." into out [cap] for the error detail ("" on the writer and when the word came). */
void hpcti_live_await_writer(hpct_ctx_t ctx, int writer, char *out, size_t cap);

#endif
