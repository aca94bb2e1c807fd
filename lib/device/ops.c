/* ops.c: pick the ops table of a backend and attach it to a new context (the public
 * hpct_ctx_create lives here, not in lib/core, so that core knows nothing of backends). */
#include "config.h"
#include "ops.h"

#include <stdlib.h>
#include <string.h>

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

hpct_status_t hpcti_ctx_create_unbound(const hpct_config_t *cfg, hpct_ctx_t *out)
{
    if (!out) return HPCT_ERR_INVALID_ARG;
    *out = NULL;
    hpct_ctx_t ctx;
    hpct_status_t s = hpcti_ctx_alloc(cfg, &ctx);
    if (s) return s;
    ctx->ops = hpcti_ops_lookup(ctx->cfg.backend);
    if (!ctx->ops) {
        hpcti_log(ctx, HPCT_LOG_ERROR,
                  "the %s backend is not built into this library (configure --with-cuda)",
                  ctx->cfg.backend == HPCT_BACKEND_CUDA ? "cuda" : "requested");
        hpcti_ctx_free(ctx);
        return HPCT_ERR_UNSUPPORTED;
    }
    *out = ctx;
    return HPCT_SUCCESS;
}

hpct_status_t hpcti_ctx_bind(hpct_ctx_t ctx, int local_rank, int local_size)
{
    ctx->local_rank = local_rank, ctx->local_size = local_size;
    hpct_status_t s = ctx->ops->init(ctx);
    if (s) return s;
    hpcti_log(ctx, HPCT_LOG_INFO, "context ready: backend %s, seed %llu", ctx->ops->name,
              (unsigned long long)ctx->cfg.seed);
    return HPCT_SUCCESS;
}

hpct_status_t hpct_ctx_create(const hpct_config_t *cfg, hpct_ctx_t *out)
{
    hpct_status_t s = hpcti_ctx_create_unbound(cfg, out);
    if (s) return s;
    s = hpcti_ctx_bind(*out, 0, 0); /* local rank unknown: the launcher's environment */
    if (s) {
        hpcti_ctx_free(*out);
        *out = NULL;
    }
    return s;
}

int hpcti_gpu_sharing_allowed(void)
{
    int on = 0, set; /* hpct_init refused a bad value before this is asked */
    return !hpcti_tunable_flag(NULL, "HPCT_ALLOW_GPU_SHARING", &on, &set) && on;
}

hpct_status_t hpcti_device_identity(hpct_ctx_t ctx, uint64_t *id)
{
    *id = 0;
#ifdef HPCT_HAVE_CUDA
    if (ctx->ops == &hpcti_cuda_ops) return hpcti_cuda_identity(ctx, id);
#endif
    return HPCT_SUCCESS;
}

void hpcti_device_versions(hpct_ctx_t ctx, struct hpcti_device_versions *v)
{
    memset(v, 0, sizeof *v);
    hpcti_cpu_blas_version(v->blas, sizeof v->blas);
#ifdef HPCT_HAVE_CUDA
    if (ctx->ops == &hpcti_cuda_ops) hpcti_cuda_versions(ctx, v);
#else
    (void)ctx;
#endif
}

void hpct_ctx_destroy(hpct_ctx_t ctx)
{
    if (!ctx) return;
    ctx->ops->finalize(ctx);
    hpcti_ctx_free(ctx);
}
