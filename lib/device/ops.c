/* ops.c: pick the ops table of a backend. */
#include "config.h"
#include "ops.h"

const struct hpcti_ops *hpcti_ops_lookup(hpct_backend_t backend)
{
    switch (backend) {
    case HPCT_BACKEND_CPU: return &hpcti_cpu_ops;
#ifdef HPCT_HAVE_CUDA
    case HPCT_BACKEND_CUDA: return &hpcti_cuda_ops;
#endif
    default: return NULL;
    }
}
