/* model.h: library-internal view of parameter sets (not installed). */
#ifndef HPCT_MODEL_INTERNAL_H
#define HPCT_MODEL_INTERNAL_H

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
    size_t total; /* sum of counts */
    int users;    /* optimizers over this set: registering then would outgrow their state */
};

/* Gradient-averaging hooks of built-in models (installed by lib/comm): backward() calls
 * ready once a layer's gradients grad [count] are final (last layer first; total is the
 * model's parameter count), and hpct_model_loss_grad calls done after backward. */
typedef hpct_status_t (*hpcti_grad_ready_fn)(hpct_ctx_t ctx, int layer, int num_layers, float *grad,
                                             size_t count, size_t total);
typedef hpct_status_t (*hpcti_grads_done_fn)(hpct_ctx_t ctx);
/* Install the hooks (NULL, NULL removes them). */
void hpcti_model_set_grad_hooks(hpct_model_t m, hpcti_grad_ready_fn ready,
                                hpcti_grads_done_fn done);

/* The parameter set an optimizer updates (NULL for NULL). */
hpct_params_t hpcti_optimizer_params(hpct_optimizer_t opt);

/* The loss a built model applies (for callers that feed it targets). */
hpct_loss_t hpcti_model_loss(hpct_model_t m);

#endif
