/* ctx.c: context state (config check, allocation), error detail, logging, RNG state, the
 * upper layers' slots.
 * The backend is attached by lib/device (hpct_ctx_create in lib/device/ops.c). */
#include "core.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *level_name(hpct_log_level_t level)
{
    static const char *names[] = {"", "error", "warning", "info", "debug"};
    return (level >= HPCT_LOG_ERROR && level <= HPCT_LOG_DEBUG) ? names[level] : "log";
}

static void vlog(hpct_log_level_t max, hpct_log_level_t level, const char *fmt, va_list ap)
{
    if (level > max) return;
    char line[1200];
    vsnprintf(line, sizeof line, fmt, ap);
    fprintf(stderr, "hpctrain: %s: %s\n", level_name(level), line);
}

void hpcti_log(hpct_ctx_t ctx, hpct_log_level_t level, const char *fmt, ...)
{
    if (!ctx) return;
    va_list ap;
    va_start(ap, fmt);
    vlog(ctx->cfg.log_level, level, fmt, ap);
    va_end(ap);
}

hpct_status_t hpcti_error(hpct_ctx_t ctx, hpct_status_t status, const char *fmt, ...)
{
    if (!ctx) return status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->last_error, sizeof ctx->last_error, fmt, ap);
    va_end(ap);
    ctx->error_shared = 0;
    /* "Not found" is often expected (no checkpoint yet): it is logged as info, not error. */
    hpcti_log(ctx, status == HPCT_ERR_NOT_FOUND ? HPCT_LOG_INFO : HPCT_LOG_ERROR, "%s (%s)",
              ctx->last_error, hpct_strerror(status));
    return status;
}

void hpcti_clear_error(hpct_ctx_t ctx)
{
    if (ctx) ctx->last_error[0] = '\0', ctx->error_shared = 0;
}

void hpcti_mark_error_shared(hpct_ctx_t ctx)
{
    if (ctx) ctx->error_shared = 1;
}

void *hpcti_calloc(hpct_ctx_t ctx, size_t count, size_t size, const char *what)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p)
        hpcti_error(ctx, HPCT_ERR_NO_MEMORY, "cannot allocate %zu x %zu bytes for %s", count, size,
                    what);
    return p;
}

/* The first numeric field out of its range, described with its value in buf; or NULL. */
static const char *numeric_problem(const hpct_config_t *cfg, char *buf, size_t len)
{
    if (!(cfg->collective_timeout_s > 0.0) || !isfinite(cfg->collective_timeout_s))
        snprintf(buf, len, "hpct_config_t.collective_timeout_s is %g, must be finite and > 0",
                 cfg->collective_timeout_s);
    else if (cfg->fusion_bytes < 4)
        snprintf(buf, len, "hpct_config_t.fusion_bytes is %zu, must hold at least one float",
                 cfg->fusion_bytes);
    else if (cfg->consistency_interval < 0)
        snprintf(buf, len, "hpct_config_t.consistency_interval is %ld, must be >= 0",
                 cfg->consistency_interval);
    else
        return NULL;
    return buf;
}

/* Reject a config the library cannot honour; the reason goes to stderr if logging is on. */
static hpct_status_t check_config(const hpct_config_t *cfg)
{
    const char *why = NULL;
    if (cfg->version < 1 || cfg->version > HPCT_CONFIG_VERSION)
        why = "hpct_config_t.version is not a known version (start from HPCT_CONFIG_INITIALIZER)";
    else if (cfg->backend != HPCT_BACKEND_CPU && cfg->backend != HPCT_BACKEND_CUDA)
        why = "hpct_config_t.backend must be HPCT_BACKEND_CPU or HPCT_BACKEND_CUDA";
    else if (cfg->log_level < HPCT_LOG_NONE || cfg->log_level > HPCT_LOG_DEBUG)
        why = "hpct_config_t.log_level must be between HPCT_LOG_NONE and HPCT_LOG_DEBUG";
    else if (cfg->num_threads < 0)
        why = "hpct_config_t.num_threads must be >= 0";
    char numeric[160];
    if (!why) why = numeric_problem(cfg, numeric, sizeof numeric);
    if (!why) return HPCT_SUCCESS;
    if (cfg->log_level >= HPCT_LOG_ERROR) fprintf(stderr, "hpctrain: error: %s\n", why);
    return HPCT_ERR_INVALID_ARG;
}

hpct_status_t hpcti_ctx_alloc(const hpct_config_t *cfg, hpct_ctx_t *out)
{
    static const hpct_config_t defaults = HPCT_CONFIG_INITIALIZER;
    if (!out) return HPCT_ERR_INVALID_ARG;
    *out = NULL;
    if (!cfg) cfg = &defaults;
    hpct_status_t s = check_config(cfg);
    if (s) return s;
    hpct_ctx_t ctx = calloc(1, sizeof *ctx);
    if (!ctx) return HPCT_ERR_NO_MEMORY;
    ctx->cfg = *cfg;
    ctx->cfg.version = HPCT_CONFIG_VERSION;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    ctx->created_unix = (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
    hpcti_rng_seed(&ctx->rng, cfg->seed);
    *out = ctx;
    return HPCT_SUCCESS;
}

void hpcti_ctx_free(hpct_ctx_t ctx)
{
    free(ctx);
}

/* The detail of this thread's last failed hpct_init or hpct_init_comm ("": none). */
static __thread char init_error[1024];

void hpcti_set_init_error(const char *detail)
{
    snprintf(init_error, sizeof init_error, "%s", detail ? detail : "");
}

const char *hpct_last_error(hpct_ctx_t ctx)
{
    return ctx             ? ctx->last_error
           : init_error[0] ? init_error
                           : "no context (NULL handle): the context or handle passed was never "
                             "created, or its creation failed";
}

int hpct_last_error_shared(hpct_ctx_t ctx)
{
    return ctx && ctx->last_error[0] && ctx->error_shared;
}

hpct_status_t hpct_rng_get_state(hpct_ctx_t ctx, uint64_t state[HPCT_RNG_STATE_WORDS])
{
    if (!ctx || !state)
        return ctx ? hpcti_error(ctx, HPCT_ERR_INVALID_ARG, "hpct_rng_get_state: state is NULL")
                   : HPCT_ERR_INVALID_ARG;
    memcpy(state, ctx->rng.s, sizeof ctx->rng.s);
    return HPCT_SUCCESS;
}

hpct_status_t hpct_rng_set_state(hpct_ctx_t ctx, const uint64_t state[HPCT_RNG_STATE_WORDS])
{
    if (!ctx) return HPCT_ERR_INVALID_ARG;
    if (!state) return hpcti_error(ctx, HPCT_ERR_INVALID_ARG, "hpct_rng_set_state: state is NULL");
    if (!(state[0] | state[1] | state[2] | state[3]))
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                           "hpct_rng_set_state: an all-zero state is invalid for xoshiro256**");
    memcpy(ctx->rng.s, state, sizeof ctx->rng.s);
    return HPCT_SUCCESS;
}

static pthread_mutex_t slot_keys_lock = PTHREAD_MUTEX_INITIALIZER;
static int slot_keys_made; /* keys handed out so far (under the lock) */

/* key's slot index, made at its first use; -1 when every slot is taken. */
static int slot_index(hpcti_slot_key_t *key)
{
    int v = __atomic_load_n(&key->plus1, __ATOMIC_ACQUIRE);
    if (v) return v - 1;
    pthread_mutex_lock(&slot_keys_lock);
    v = __atomic_load_n(&key->plus1, __ATOMIC_RELAXED);
    if (!v && slot_keys_made < HPCTI_CTX_SLOTS) {
        v = ++slot_keys_made;
        __atomic_store_n(&key->plus1, v, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&slot_keys_lock);
    return v - 1;
}

void *hpcti_ctx_get(const struct hpct_ctx *ctx, hpcti_slot_key_t *key)
{
    int i = slot_index(key);
    return i < 0 ? NULL : ctx->slot[i];
}

hpct_status_t hpcti_ctx_put(hpct_ctx_t ctx, hpcti_slot_key_t *key, void *p, const char *owner)
{
    int i = slot_index(key);
    if (i < 0)
        return hpcti_error(ctx, HPCT_ERR_INTERNAL,
                           "%s: every one of the context's %d slots is taken by other layers",
                           owner, HPCTI_CTX_SLOTS);
    ctx->slot[i] = p;
    return HPCT_SUCCESS;
}
