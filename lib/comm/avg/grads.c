/* grads.c: gradient buffers that the ranks of a node share (hpct_alloc_grads, and the
 * gradients of built-in models that average through the node window). Where the node window
 * is set up each buffer is a shared window of its own (node_win.c), so an average of it
 * reads the peers' values in place instead of copying them into the window first; elsewhere
 * it is ordinary memory and averages as any buffer does. */
#include "grads.h"
#include "node_win.h"
#include "../runtime/agree.h"
#include <limits.h>

#include <stdlib.h>
#include <string.h>

/* A buffer given back with this count, or NULL. */
static struct hpcti_grads *given_back(struct hpcti_dist *d, size_t count)
{
    for (struct hpcti_grads *g = d->avg->grads; g; g = g->next)
        if (!g->in_use && g->count == count) return g;
    return NULL;
}

/* Every rank asks for the same count, and *reuse = 1 when every rank holds a buffer of that
 * count given back (the new window is collective, so all reuse or none does): one
 * deadline-bounded MIN agreement of {reusable, count, -count, first rank with an invalid
 * count}. count 0: this rank's count is invalid (it joins so that the others do not wait;
 * the caller reports its own error). */
static hpct_status_t agree_reuse(hpct_ctx_t ctx, const char *fn, size_t count, int *reuse)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    long v[4] = {count && given_back(d, count) != NULL, (long)count, -(long)count,
                 count ? LONG_MAX : (long)d->rank};
    hpct_status_t s = hpcti_agree(ctx, fn, v, 4, MPI_MIN);
    if (s) return s;
    if (!count) return HPCT_ERR_INVALID_ARG;
    if (v[3] != LONG_MAX)
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                           "%s: rank %ld of %d asked for an invalid count (0 or more than %zu "
                           "floats; rank %d: %zu); every rank must ask for the same",
                           fn, v[3], d->size, (size_t)HPCTI_MAX_CHUNK * 64, d->rank, count);
    if (v[1] != -v[2])
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                           "%s: the ranks ask for different counts (%ld to %ld floats; rank %d: "
                           "%zu); every rank must ask for the same",
                           fn, v[1], -v[2], d->rank, count);
    *reuse = (int)v[0];
    return HPCT_SUCCESS;
}

/* A new buffer of count floats: a shared window with the node window, else calloc. */
static hpct_status_t make(hpct_ctx_t ctx, size_t count, struct hpcti_grads **out)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    struct hpcti_grads *g = calloc(1, sizeof *g);
    if (!g) return hpcti_error(ctx, HPCT_ERR_NO_MEMORY, "%s: out of memory", d->op_name);
    g->count = count, g->win = MPI_WIN_NULL, g->id = ++d->avg->grads_made, g->in_use = 1;
    hpct_status_t s = HPCT_SUCCESS;
    if (d->avg->nwin)
        s = hpcti_node_win_grads(ctx, g);
    else if (!(g->buf = calloc(count ? count : 1, sizeof(float))))
        s = hpcti_error(ctx, HPCT_ERR_NO_MEMORY, "%s: cannot allocate %zu floats", d->op_name,
                        count);
    if (s) { /* the operation failed: its window (if any) is left to the process's end */
        hpcti_node_win_grads_free(g, 0);
        free(g);
        return s;
    }
    g->next = d->avg->grads, d->avg->grads = g;
    *out = g;
    return HPCT_SUCCESS;
}

hpct_status_t hpcti_grads_alloc(hpct_ctx_t ctx, const char *fn, size_t count, float **out)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    struct hpcti_grads *g = NULL;
    int reuse = 0;
    *out = NULL;
    hpct_status_t s = agree_reuse(ctx, fn, count, &reuse);
    if (s) return s;
    /* one operation over every rank: arrival tokens bound it by the deadline and name a
     * rank that does not call (the window's own barriers are node-wide) */
    s = hpcti_op_begin(ctx, fn, 0, 0);
    if (s) return s;
    if (reuse) {
        g = given_back(d, count);
        memset(g->buf, 0, count * sizeof(float));
        g->in_use = 1;
    } else {
        s = make(ctx, count, &g);
    }
    if (!s) s = hpcti_op_end(ctx, NULL, 0);
    if (!s)
        *out = g->buf;
    else if (g)
        g->in_use = 0;
    return s;
}

struct hpcti_grads *hpcti_grads_lent(const struct hpcti_dist *d, const float *buf)
{
    for (struct hpcti_grads *g = d ? d->avg->grads : NULL; g; g = g->next)
        if (g->buf == buf && g->in_use) return g;
    return NULL;
}

void hpcti_grads_release(hpct_ctx_t ctx, float *buf)
{
    struct hpcti_grads *g = hpcti_grads_lent(hpcti_dist(ctx), buf);
    if (g) g->in_use = 0;
}

void hpcti_grads_free_all(struct hpcti_dist *d, int collective)
{
    while (d->avg->grads) {
        struct hpcti_grads *g = d->avg->grads;
        d->avg->grads = g->next;
        if (g->win == MPI_WIN_NULL) free(g->buf);
        hpcti_node_win_grads_free(g, collective);
        free(g);
    }
}

hpct_status_t hpct_alloc_grads(hpct_ctx_t ctx, size_t count, float **grads)
{
    static const char fn[] = "hpct_alloc_grads";
    if (!ctx) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(ctx);
    if (!grads) return hpcti_error(ctx, HPCT_ERR_INVALID_ARG, "%s: grads (the result) is NULL", fn);
    *grads = NULL;
    if (!count || count > HPCTI_MAX_CHUNK * 64) {
        if (hpcti_dist(ctx)) { /* join the agreement the other ranks are in (count 0: invalid) */
            int reuse = 0;
            (void)agree_reuse(ctx, fn, 0, &reuse);
        }
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG, "%s: count is %zu, must be 1..%zu", fn, count,
                           HPCTI_MAX_CHUNK * 64);
    }
    if (!hpcti_dist_of(ctx, fn)) return HPCT_ERR_STATE;
    return hpcti_grads_alloc(ctx, fn, count, grads);
}

hpct_status_t hpct_free_grads(hpct_ctx_t ctx, float *grads)
{
    static const char fn[] = "hpct_free_grads";
    if (!ctx) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(ctx);
    if (!grads) return HPCT_SUCCESS;
    struct hpcti_dist *d = hpcti_dist_of(ctx, fn);
    if (!d) return HPCT_ERR_STATE;
    struct hpcti_grads *g = hpcti_grads_lent(d, grads);
    if (g) {
        g->in_use = 0;
        return HPCT_SUCCESS;
    }
    return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                       "%s: %p is not a buffer of hpct_alloc_grads in use on this context", fn,
                       (void *)grads);
}
