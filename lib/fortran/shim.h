/* shim.h: the C helpers that the Fortran module "hpctrain" calls beside the public API
 * (library-internal, not installed; lib/fortran/hpctrain.F90 declares them with bind(C)). */
#ifndef HPCTI_FORTRAN_SHIM_H
#define HPCTI_FORTRAN_SHIM_H

#include "hpctrain.h"

/* Record an error the Fortran layer found (msg NUL-terminated) on ctx, so that
 * hpct_last_error(ctx) reports it like the library's own; returns status. */
hpct_status_t hpcti_f_error(hpct_ctx_t ctx, hpct_status_t status, const char *msg);
/* Input and output widths and the loss (hpct_loss_t) of a model, for the wrappers' shape
 * and target-type checks before C reads a Fortran array. */
hpct_status_t hpcti_f_model_io(hpct_model_t model, int *inputs, int *outputs, int *loss);
/* Samples per rank of the dataset's partition (0 before hpct_dataset_partition). */
hpct_status_t hpcti_f_dataset_local_batch(hpct_dataset_t ds, int *local_batch);
/* A collective call whose wrapper refused it with status (its detail recorded by
 * hpcti_f_error) joins the agreement its peers' call makes, so every rank fails at once naming
 * this one, instead of the peers waiting out the collective deadline: hpct_model_loss_grad
 * with gradient averaging on, and hpct_insitu_step. Return the agreed status. */
hpct_status_t hpcti_f_loss_grad_refused(hpct_model_t model, hpct_status_t status);
hpct_status_t hpcti_f_insitu_refused(hpct_insitu_t session, hpct_status_t status);
/* hpct_insitu_add_block refused by the wrapper: joins the other ranks' agreement. */
hpct_status_t hpcti_f_block_refused(hpct_insitu_t session, hpct_status_t status);
/* This process's rank in fortran_comm where MPI runs (has_comm), else in the job from the
 * launcher's environment (Open MPI, PMIx, Slurm, MPICH); -1 when none says. */
int hpcti_f_rank(int fortran_comm, int has_comm);
/* The session's context, for the wrappers' error reports. */
void *hpcti_f_insitu_ctx(hpct_insitu_t session);
/* The session's built-in model (NULL: none), for the wrappers' shape checks. */
void *hpcti_f_insitu_model(hpct_insitu_t session);

#endif
