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

#endif
