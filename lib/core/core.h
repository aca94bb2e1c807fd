/* core.h: library-internal context, errors, logging and RNG (not installed). */
#ifndef HPCTI_CORE_H
#define HPCTI_CORE_H

#include "hpctrain.h"

#include <stdarg.h>

/* On internal calls that return a status: ignoring it is a compile error (-Werror=unused-result
 * in configure's warning flags), so every status reaches the caller. */
#define HPCTI_CHECK __attribute__((warn_unused_result))

struct hpcti_ops;

/* xoshiro256** generator: 4 words of state, never all zero. */
typedef struct hpcti_rng {
    uint64_t s[HPCT_RNG_STATE_WORDS];
} hpcti_rng_t;

/* A layer above core keeps its per-context state in a slot of the context (as MPI caches
 * attributes on a communicator): it owns one key, made at its first use, and alone knows the
 * type behind its slot; core holds the pointer only (doc/hacking.md, "core does not name").
 * The key's storage is a static of that layer, zero-initialised. */
typedef struct hpcti_slot_key {
    int plus1; /* the slot's index + 1; 0: not made yet */
} hpcti_slot_key_t;
#define HPCTI_CTX_SLOTS 4 /* comm's runtime, obs's timeline, data's communicators; one spare */

struct hpct_ctx {
    hpct_config_t cfg;
    const struct hpcti_ops *ops; /* backend chosen by cfg.backend (attached by lib/device) */
    hpcti_rng_t rng;
    void *backend; /* backend-private state (cuda: device, cuBLAS handle); NULL for cpu */
    char last_error[1024];
    int error_shared;    /* 1: last_error was agreed across the ranks (hpcti_mark_error_shared) */
    double created_unix; /* Unix seconds when the context was made (restart latency) */
    int local_rank, local_size;  /* this rank on its node, from hpct_init's bootstrap and node
                                    communicator (local_size 0: unknown, hpct_ctx_create) */
    void *slot[HPCTI_CTX_SLOTS]; /* the upper layers' state (hpcti_ctx_get); NULL: none */
    long lost_metrics;           /* metrics records not written (hpct_output_losses) */
    long lost_timeline;          /* timeline rewrites that failed */
    char first_loss[1500];       /* what the first of them said; "" when none */
};

/* The pointer ctx keeps in key's slot; NULL when unset (or every slot is taken). */
void *hpcti_ctx_get(const struct hpct_ctx *ctx, hpcti_slot_key_t *key);
/* Keep p in key's slot of ctx (NULL clears it), making the key at its first use; owner names
 * the layer in the HPCT_ERR_INTERNAL error when every slot is taken. */
HPCTI_CHECK hpct_status_t hpcti_ctx_put(hpct_ctx_t ctx, hpcti_slot_key_t *key, void *p,
                                        const char *owner);

/* A context with cfg (NULL: the defaults) checked and copied and its RNG seeded, but no
 * backend yet: hpct_ctx_create (lib/device) attaches one. *out is NULL on failure. */
HPCTI_CHECK hpct_status_t hpcti_ctx_alloc(const hpct_config_t *cfg, hpct_ctx_t *out);

/* The most floats one buffer, parameter set or average may hold (2^40: 4 TiB), so that every
 * size computed from a count (bytes, per-rank blocks, scratch) stays far from overflowing. */
#define HPCTI_MAX_FLOATS ((size_t)1 << 40)
/* Free a context made by hpcti_ctx_alloc (its backend already finalized); NULL is accepted. */
void hpcti_ctx_free(hpct_ctx_t ctx);

/* The value of test-hook variable name, or NULL unless HPCT_TEST_HOOKS=1 is set as well
 * (testhook.c): test behaviour is never reachable from a plain user environment. */
const char *hpcti_test_hook(const char *name);

/* The error just recorded is every rank's (agreed, naming the failing rank). */
void hpcti_mark_error_shared(hpct_ctx_t ctx);
/* Record a detailed error on ctx (printf format), log it, and return status. */
hpct_status_t hpcti_error(hpct_ctx_t ctx, hpct_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Write one log line to stderr when ctx's log level is at least level. */
void hpcti_log(hpct_ctx_t ctx, hpct_log_level_t level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Keep detail as this thread's last failed hpct_init, for hpct_last_error(NULL) ("": none). */
void hpcti_set_init_error(const char *detail);
/* Forget the previous error detail (called at the start of public calls). */
void hpcti_clear_error(hpct_ctx_t ctx);

/* Seed a generator from one 64-bit seed (splitmix64 expansion). */
void hpcti_rng_seed(hpcti_rng_t *rng, uint64_t seed);
/* Next raw 64-bit output. */
uint64_t hpcti_rng_next(hpcti_rng_t *rng);
/* Uniform double in [0, 1) with 53 random bits. */
double hpcti_rng_uniform(hpcti_rng_t *rng);
/* Standard normal deviate (Box-Muller, no cached spare, so state stays 4 words). */
double hpcti_rng_normal(hpcti_rng_t *rng);
/* Mix a seed with a stream id into a new well-spread seed. */
uint64_t hpcti_seed_mix(uint64_t seed, uint64_t stream);

/* Monotonic wall clock in seconds (deadlines, cadence, timers). */
double hpcti_now(void);

/* CPUs in this process's affinity mask (the online ones where it cannot be read); *online,
 * when not NULL: the online CPUs (sysconf, -1 if unknown). A mask with every online CPU
 * means the launcher did not bind the process. */
int hpcti_cpus_usable(long *online);

/* One pause of a polling wait after idle seconds in which nothing it waits for has moved:
 * a spin-loop hint while idle < spin, then sched_yield up to 1 s, then a 50 us sleep, after
 * 10 s a 1 ms sleep (poll.c). */
void hpcti_backoff(double idle, double spin);

/* Debian's HDF5 is not thread-safe: every HDF5 call of the library (data, checkpoints) runs
 * between these, so a background checkpoint writer and a dataset open never overlap. The
 * lock also switches HDF5's automatic error printing off on the calling thread (and the
 * unlock puts the caller's setting back): no HDF5 diagnostics reach stderr. */
void hpcti_hdf5_lock(void);
void hpcti_hdf5_unlock(void);

/* Checked allocation helpers that record HPCT_ERR_NO_MEMORY on ctx. */
void *hpcti_calloc(hpct_ctx_t ctx, size_t count, size_t size, const char *what);

/* ---- The registry of environment settings (tunables.c) ---------------------------------- */

/* How a setting's value is read: 0 or 1; a decimal integer; a byte count (integer, optional
 * K, M, G or T suffix: powers of 1024); a real number; one word of a list (any case); text
 * its owner parses (HPCT_ALLREDUCE_ALGO). */
typedef enum {
    HPCTI_TUN_FLAG,
    HPCTI_TUN_LONG,
    HPCTI_TUN_BYTES,
    HPCTI_TUN_REAL,
    HPCTI_TUN_CHOICE,
    HPCTI_TUN_TEXT
} hpcti_tun_kind_t;

/* One setting: name, kind, default (text), range [min, max] of numbers or the words of a
 * choice (space-separated), whether the ranks must agree on it, what it accepts and does. */
typedef struct hpcti_tunable {
    const char *name;
    hpcti_tun_kind_t kind;
    const char *def;
    double min, max;
    const char *words;
    int agree;
    const char *accepted, *help;
} hpcti_tunable_t;

/* The registry: *count entries, in the order hpctrain info lists them. */
const hpcti_tunable_t *hpcti_tunables(int *count);
/* The entry of name, or NULL when name is not registered. */
const hpcti_tunable_t *hpcti_tunable_find(const char *name);
/* The value set in the environment, or NULL when unset or empty ('' means the default). */
const char *hpcti_tunable_value(const char *name);
/* Check value against entry t (text kinds: accepted); 0 when it is valid, else -1 with
 * "NAME is 'VALUE': use ACCEPTED" in why. */
int hpcti_tunable_parse(const hpcti_tunable_t *t, const char *value, double *number, int *index,
                        char *why, size_t len);
/* Check every registered setting that is set (not the text kinds); the first bad one fails
 * with HPCT_ERR_INVALID_ARG and its message in ctx's error (prefix, e.g. "hpct_init: ") and
 * in detail (either may be NULL); each set one is logged at info level on ctx. */
HPCTI_CHECK hpct_status_t hpcti_tunables_check(hpct_ctx_t ctx, const char *prefix, char *detail,
                                               size_t len);
/* Typed readers for the owners. Each returns HPCT_SUCCESS with *set = 0 and the output
 * untouched when the variable is unset or empty, *set = 1 and the value when it is valid,
 * and HPCT_ERR_INVALID_ARG with ctx's error naming variable, value and range otherwise
 * (ctx may be NULL). A flag gives 0 or 1, a choice the index of its word. */
HPCTI_CHECK hpct_status_t hpcti_tunable_flag(hpct_ctx_t ctx, const char *name, int *on, int *set);
HPCTI_CHECK hpct_status_t hpcti_tunable_long(hpct_ctx_t ctx, const char *name, long *v, int *set);
HPCTI_CHECK hpct_status_t hpcti_tunable_real(hpct_ctx_t ctx, const char *name, double *v, int *set);
HPCTI_CHECK hpct_status_t hpcti_tunable_choice(hpct_ctx_t ctx, const char *name, int *index,
                                               int *set);

#endif
