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
};

#endif
