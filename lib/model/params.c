/* params.c: named (parameter, gradient) buffers, shared by built-in models and
 * bring-your-own-gradients callers. */
#include "params.h"
#include "../device/ops.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

hpct_status_t hpct_params_create(hpct_ctx_t ctx, hpct_params_t *out)
{
    if (!ctx) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(ctx);
    if (!out) return hpcti_error(ctx, HPCT_ERR_INVALID_ARG, "hpct_params_create: out is NULL");
    *out = hpcti_calloc(ctx, 1, sizeof **out, "a parameter set");
    if (!*out) return HPCT_ERR_NO_MEMORY;
    (*out)->ctx = ctx;
    return HPCT_SUCCESS;
}

void hpct_params_destroy(hpct_params_t p)
{
    if (!p) return;
    for (int i = 0; i < p->num; i++) free(p->bufs[i].name);
    free(p->bufs);
    free(p);
}

static int find_name(hpct_params_t p, const char *name)
{
    for (int i = 0; i < p->num; i++)
        if (strcmp(p->bufs[i].name, name) == 0) return i;
    return -1;
}

/* 1..HPCT_PARAM_NAME_MAX characters; '/'-separated parts non-empty and not "." or "..". */
static int name_ok(const char *name)
{
    if (!name || !*name || strlen(name) > HPCT_PARAM_NAME_MAX) return 0;
    for (const char *part = name;;) {
        size_t len = strcspn(part, "/");
        if (len == 0 || (len == 1 && part[0] == '.') || (len == 2 && !strncmp(part, "..", 2)))
            return 0;
        if (!part[len]) return 1;
        part += len + 1;
    }
}

/* Index of a registered name that is a '/'-prefix of name or has name as one, else -1. */
static int find_nesting(hpct_params_t p, const char *name)
{
    size_t n = strlen(name);
    for (int i = 0; i < p->num; i++) {
        const char *e = p->bufs[i].name;
        size_t m = strlen(e);
        if ((m < n && !strncmp(e, name, m) && name[m] == '/') ||
            (n < m && !strncmp(e, name, n) && e[n] == '/'))
            return i;
    }
    return -1;
}

/* 1 when [a, a + n) and [b, b + m) share a float (addresses compared as integers: host or
 * device memory alike). */
static int ranges_meet(const float *a, size_t n, const float *b, size_t m)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return x < y + m * sizeof(float) && y < x + n * sizeof(float);
}

/* The first registered buffer whose parameter or gradient memory meets param or grad [count],
 * or -1. */
static int overlapping(hpct_params_t p, const float *param, const float *grad, size_t count)
{
    for (int i = 0; i < p->num; i++) {
        const struct hpcti_param_buf *b = &p->bufs[i];
        if (ranges_meet(param, count, b->param, b->count) ||
            ranges_meet(param, count, b->grad, b->count) ||
            ranges_meet(grad, count, b->param, b->count) ||
            ranges_meet(grad, count, b->grad, b->count))
            return i;
    }
    return -1;
}

hpct_status_t hpct_params_register(hpct_params_t p, const char *name, float *param, float *grad,
                                   size_t count)
{
    if (!p) return HPCT_ERR_INVALID_ARG;
    hpct_ctx_t ctx = p->ctx;
    hpcti_clear_error(ctx);
    if (p->users)
        return hpcti_error(ctx, HPCT_ERR_STATE,
                           "hpct_params_register: '%s': an optimizer already uses this set; "
                           "register every buffer before hpct_optimizer_create",
                           name ? name : "(null)");
    if (!name_ok(name))
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                           "hpct_params_register: the name '%s' must have 1 to %d characters; "
                           "'/' may only separate non-empty parts other than '.' and '..' (it "
                           "names a dataset in checkpoints)",
                           name ? name : "(null)", HPCT_PARAM_NAME_MAX);
    int clash = find_nesting(p, name);
    if (clash >= 0)
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                           "hpct_params_register: '%s' and '%s' cannot both be registered (one "
                           "would be a group holding the other in checkpoints)",
                           name, p->bufs[clash].name);
    if (!param || !grad)
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                           "hpct_params_register: parameter '%s' has a NULL %s buffer", name,
                           param ? "gradient" : "parameter");
    if (count == 0)
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                           "hpct_params_register: parameter '%s' has zero elements", name);
    if (param == grad)
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                           "hpct_params_register: parameter '%s' uses one buffer for both the "
                           "parameter and its gradient",
                           name);
    if (find_name(p, name) >= 0)
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                           "hpct_params_register: a parameter named '%s' is already registered",
                           name);
    if (count > HPCTI_MAX_FLOATS - p->total)
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                           "hpct_params_register: parameter '%s' has %zu elements; the set may "
                           "hold at most 2^40 in all (it holds %zu)",
                           name, count, p->total);
    int shared = overlapping(p, param, grad, count);
    if (shared >= 0)
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                           "hpct_params_register: the buffers of '%s' overlap those of '%s' (one "
                           "memory registered twice would be averaged and stepped twice)",
                           name, p->bufs[shared].name);
    if (p->num == p->cap) {
        int cap = p->cap ? 2 * p->cap : 8;
        struct hpcti_param_buf *bufs = realloc(p->bufs, sizeof *bufs * (size_t)cap);
        if (!bufs)
            return hpcti_error(ctx, HPCT_ERR_NO_MEMORY, "cannot grow the parameter set to %d", cap);
        p->bufs = bufs;
        p->cap = cap;
    }
    char *copy = strdup(name);
    if (!copy) return hpcti_error(ctx, HPCT_ERR_NO_MEMORY, "cannot copy parameter name '%s'", name);
    p->bufs[p->num++] = (struct hpcti_param_buf){copy, param, grad, count};
    p->total += count;
    return HPCT_SUCCESS;
}

hpct_status_t hpct_params_size(hpct_params_t p, int *num_buffers, size_t *total_count)
{
    if (!p) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(p->ctx);
    if (num_buffers) *num_buffers = p->num;
    if (total_count) *total_count = p->total;
    return HPCT_SUCCESS;
}

hpct_status_t hpct_params_get(hpct_params_t p, int i, const char **name, float **param,
                              float **grad, size_t *count)
{
    if (!p) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(p->ctx);
    if (i < 0 || i >= p->num)
        return hpcti_error(p->ctx, HPCT_ERR_NOT_FOUND,
                           "hpct_params_get: index %d is outside [0, %d)", i, p->num);
    if (name) *name = p->bufs[i].name;
    if (param) *param = p->bufs[i].param;
    if (grad) *grad = p->bufs[i].grad;
    if (count) *count = p->bufs[i].count;
    return HPCT_SUCCESS;
}

hpct_status_t hpct_params_scale_grads(hpct_params_t p, float factor)
{
    if (!p) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(p->ctx);
    if (!isfinite(factor))
        return hpcti_error(p->ctx, HPCT_ERR_INVALID_ARG,
                           "hpct_params_scale_grads: the factor is not finite");
    hpct_status_t s = HPCT_SUCCESS;
    for (int i = 0; i < p->num && !s; i++)
        s = p->ctx->ops->scale(p->ctx, p->bufs[i].grad, factor, p->bufs[i].count);
    return s;
}

hpct_status_t hpct_params_zero_grads(hpct_params_t p)
{
    return hpct_params_scale_grads(p, 0.0f);
}

hpct_status_t hpcti_params_nonfinite_grad(hpct_params_t p, int *bad)
{
    *bad = -1;
    hpct_status_t s = HPCT_SUCCESS;
    for (int i = 0; i < p->num && !s && *bad < 0; i++) {
        int finite = 1;
        s = p->ctx->ops->all_finite(p->ctx, p->bufs[i].grad, p->bufs[i].count, &finite);
        if (!s && !finite) *bad = i;
    }
    return s;
}

hpct_status_t hpct_params_grad_norm(hpct_params_t p, double *norm)
{
    if (!p) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(p->ctx);
    if (!norm)
        return hpcti_error(p->ctx, HPCT_ERR_INVALID_ARG, "hpct_params_grad_norm: norm is NULL");
    double total = 0.0;
    hpct_status_t s = HPCT_SUCCESS;
    for (int i = 0; i < p->num && !s; i++) {
        double part = 0.0;
        s = p->ctx->ops->sumsq(p->ctx, p->bufs[i].grad, p->bufs[i].count, &part);
        total += part;
    }
    *norm = s ? NAN : sqrt(total);
    return s;
}
