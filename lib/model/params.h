/* params.h: library-internal view of parameter sets (not installed): what an optimizer, the
 * averaging code (lib/comm) and checkpoints (lib/ckpt) read of an hpct_params_t. */
#ifndef HPCTI_PARAMS_H
#define HPCTI_PARAMS_H

#include "../core/core.h"

/* One registered (parameter, gradient) pair; both live where the backend keeps tensors. */
struct hpcti_param_buf {
    char *name;
    float *param; /* [count] */
    float *grad;  /* [count] */
    size_t count;
};

struct hpct_params {
    hpct_ctx_t ctx;
    struct hpcti_param_buf *bufs;
    int num, cap;
    size_t total;       /* sum of counts */
    int users;          /* optimizers over this set: registering then would outgrow their state */
    hpct_model_t model; /* the built-in model whose set this is (its gradients), or NULL */
};

/* The parameter set an optimizer updates (NULL for NULL). */
hpct_params_t hpcti_optimizer_params(hpct_optimizer_t opt);
/* The clip norm of opt (0: none, or opt NULL). With clip_norm > 0 its step reads every
 * gradient first and refuses a non-finite norm with HPCT_ERR_NONFINITE. */
float hpcti_optimizer_clip(hpct_optimizer_t opt);
/* The fused step's parts of an optimizer (lib/model/fused.c): the scalars of its next update
 * into sc [HPCTI_SC_COUNT] (lr, c1, c2; gscale 1); the update of every buffer, its scalars
 * read from sc (device) when it runs and nothing written unless *gate (device) is nonzero; a
 * step count advanced for an update the fused step made. */
void hpcti_optimizer_scalars(hpct_optimizer_t opt, float *sc);
HPCTI_CHECK hpct_status_t hpcti_optimizer_record_update(hpct_optimizer_t opt, const float *sc,
                                                        const int *gate);
void hpcti_optimizer_advance(hpct_optimizer_t opt);
/* What a recorded update depends on besides its scalars: the optimizer, its state and config. */
struct hpcti_optimizer_mark {
    hpct_optimizer_t opt;
    const float *state;
    hpct_optim_config_t cfg;
};
void hpcti_optimizer_mark(hpct_optimizer_t opt, struct hpcti_optimizer_mark *mark);
/* *bad = the index of the first buffer of p whose gradient holds a NaN or Inf, or -1 when
 * every gradient is finite: one read of every gradient. */
HPCTI_CHECK hpct_status_t hpcti_params_nonfinite_grad(hpct_params_t p, int *bad);

#endif
