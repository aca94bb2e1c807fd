/* status.c: the static string of every status code. */
#include "core.h"

const char *hpct_strerror(hpct_status_t status)
{
    switch (status) {
    case HPCT_SUCCESS: return "success";
    case HPCT_PREEMPTED: return "preempted: stopped at a step boundary after a signal";
    case HPCT_ERR_INVALID_ARG: return "invalid argument";
    case HPCT_ERR_NO_MEMORY: return "out of memory";
    case HPCT_ERR_STATE: return "call made in the wrong state";
    case HPCT_ERR_UNSUPPORTED: return "not supported by this build";
    case HPCT_ERR_IO: return "I/O error";
    case HPCT_ERR_FORMAT: return "bad file or data format";
    case HPCT_ERR_CHECKSUM: return "checksum mismatch";
    case HPCT_ERR_NOT_FOUND: return "not found";
    case HPCT_ERR_NONFINITE: return "non-finite value (NaN or Inf)";
    case HPCT_ERR_COMM: return "communication error";
    case HPCT_ERR_TIMEOUT: return "collective deadline exceeded";
    case HPCT_ERR_DIVERGED: return "replicas diverged";
    case HPCT_ERR_INTERNAL: return "internal error in libhpctrain";
    case HPCT_ERR_DEVICE: return "a GPU (CUDA, cuBLAS or NCCL) call failed";
    case HPCT_ERR_BUSY: return "in use by another run";
    case HPCT_ERR_LOSS_DIVERGED: return "training diverged (the loss blew up)";
    default: return "unknown status code";
    }
}
