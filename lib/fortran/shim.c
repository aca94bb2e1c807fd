/* shim.c: the few C-side helpers of the Fortran module (see shim.h). */
#include "shim.h"

#include "../core/core.h"
#include "../data/reader.h"
#include "../model/model.h"
#include "../train/insitu.h"

#include <limits.h>
#include <mpi.h>
#include <stdlib.h>

hpct_status_t hpcti_f_error(hpct_ctx_t ctx, hpct_status_t status, const char *msg)
{
    if (!ctx) return status;
    return hpcti_error(ctx, status, "%s", msg ? msg : "");
}

hpct_status_t hpcti_f_model_io(hpct_model_t model, int *inputs, int *outputs, int *loss)
{
    hpct_status_t s = hpct_model_shape(model, inputs, outputs);
    if (s) return s;
    *loss = (int)hpcti_model_loss(model);
    return HPCT_SUCCESS;
}

hpct_status_t hpcti_f_dataset_local_batch(hpct_dataset_t ds, int *local_batch)
{
    if (!ds || !local_batch) return HPCT_ERR_INVALID_ARG;
    *local_batch = ds->local_batch;
    return HPCT_SUCCESS;
}

hpct_status_t hpcti_f_loss_grad_refused(hpct_model_t model, hpct_status_t status)
{
    return hpcti_model_refuse(model, status, "hpct_model_loss_grad");
}

hpct_status_t hpcti_f_insitu_refused(hpct_insitu_t session, hpct_status_t status)
{
    return hpcti_insitu_refuse(session, "hpct_insitu_step", status);
}

int hpcti_f_rank(int fortran_comm, int has_comm)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID",
                                       "PMI_RANK"};
    int up = 0, down = 0, rank = -1;
    MPI_Initialized(&up);
    MPI_Finalized(&down);
    if (has_comm && up && !down && MPI_Comm_rank(MPI_Comm_f2c(fortran_comm), &rank) == MPI_SUCCESS)
        return rank;
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        char *end;
        long r = v ? strtol(v, &end, 10) : -1;
        if (v && *v && !*end && r >= 0 && r <= INT_MAX) return (int)r;
    }
    return -1;
}

void *hpcti_f_insitu_ctx(hpct_insitu_t session)
{
    return hpcti_insitu_ctx(session);
}

void *hpcti_f_insitu_model(hpct_insitu_t session)
{
    return hpcti_insitu_model(session);
}

hpct_status_t hpcti_f_block_refused(hpct_insitu_t session, hpct_status_t status)
{
    return hpcti_insitu_block_refuse(session, status);
}
