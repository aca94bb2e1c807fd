/* insitu.h: what the Fortran module calls beside the in-situ session's public API. */
#ifndef HPCTI_INSITU_H
#define HPCTI_INSITU_H

#include "../core/core.h"

/* A step call fn refused with status before it reached the library (an argument check of the
 * Fortran wrappers, its detail in the context's last error): takes part in the step's
 * agreement with it, so every rank returns at once with this rank named, and nothing is
 * trained. Collective, as the step is; status unchanged when S is NULL or status is 0. */
HPCTI_CHECK hpct_status_t hpcti_insitu_refuse(hpct_insitu_t S, const char *fn,
                                              hpct_status_t status);

/* hpct_insitu_add_block refused by a Fortran wrapper's own check (its detail in the context's
 * last error): joins the first agreement of the other ranks' call, so every rank returns at
 * once with this rank named. Collective; status unchanged when S is NULL or status is 0. */
HPCTI_CHECK hpct_status_t hpcti_insitu_block_refuse(hpct_insitu_t S, hpct_status_t status);

/* Hand the session what hpct_insitu_open made for it: hpct_insitu_destroy calls
 * free_owned(owned) after freeing the session itself. */
void hpcti_insitu_own(hpct_insitu_t S, void *owned, void (*free_owned)(void *));
/* The session's built-in model; NULL for a bring-your-own-gradients session or NULL. */
hpct_model_t hpcti_insitu_model(hpct_insitu_t S);
/* The session's context; NULL for NULL. */
hpct_ctx_t hpcti_insitu_ctx(hpct_insitu_t S);
/* 1 when hpct_insitu_finish succeeded on S (hpct_insitu_close does not call it again). */
int hpcti_insitu_finished(hpct_insitu_t S);

#endif
