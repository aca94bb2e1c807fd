/* grads.h: gradient buffers (grads.c) of hpct_alloc_grads and of built-in models. */
#ifndef HPCTI_GRADS_H
#define HPCTI_GRADS_H

#include "avg.h"

/* Gradient buffers (grads.c): a zeroed buffer of count floats, in a shared window where the
 * node window is set up (collective over the context's ranks, an operation named fn); give
 * it back (local); free them all at teardown (collective as hpcti_node_win_free). */
HPCTI_CHECK hpct_status_t hpcti_grads_alloc(hpct_ctx_t ctx, const char *fn, size_t count,
                                            float **out);
void hpcti_grads_release(hpct_ctx_t ctx, float *buf);
/* The gradient buffer in use whose memory starts at buf, or NULL. */
struct hpcti_grads *hpcti_grads_lent(const struct hpcti_dist *d, const float *buf);
void hpcti_grads_free_all(struct hpcti_dist *d, int collective);

#endif
