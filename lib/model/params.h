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

#endif
