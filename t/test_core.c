/* test_core.c: version, status strings, contexts and the RNG state. */
#include "hpctrain.h"
#include "lib/tap.h"
#include "../lib/core/core.h"

#include <string.h>

/* The upper layers' slots (core.h): a key per layer, made at its first use, a value per
 * context, and a key past HPCTI_CTX_SLOTS refused naming its owner. Makes every key of this
 * process, so it runs after nothing that uses comm, obs or data. */
static void slots(hpct_ctx_t a, hpct_ctx_t b)
{
    static hpcti_slot_key_t key[HPCTI_CTX_SLOTS + 1];
    int x = 1, y = 2, fresh = 1, put = 1;
    for (int k = 0; k < HPCTI_CTX_SLOTS; k++) fresh &= !hpcti_ctx_get(a, &key[k]);
    tap_ok(fresh, "a context's %d slots are empty until their layer fills them", HPCTI_CTX_SLOTS);
    for (int k = 0; k < HPCTI_CTX_SLOTS; k++)
        put &= !hpcti_ctx_put(a, &key[k], k % 2 ? &y : &x, "t");
    put &= !hpcti_ctx_put(b, &key[0], &y, "t");
    tap_ok(put && hpcti_ctx_get(a, &key[0]) == &x && hpcti_ctx_get(a, &key[1]) == &y &&
               hpcti_ctx_get(b, &key[0]) == &y && !hpcti_ctx_get(b, &key[1]),
           "each key has its own slot, and each context its own value");
    hpct_status_t s = hpcti_ctx_put(a, &key[HPCTI_CTX_SLOTS], &x, "the fifth layer");
    tap_ok(s == HPCT_ERR_INTERNAL && strstr(hpct_last_error(a), "the fifth layer") &&
               !hpcti_ctx_get(a, &key[HPCTI_CTX_SLOTS]),
           "a key past the slots is refused naming its layer: %s", hpct_last_error(a));
    tap_ok(!hpcti_ctx_put(a, &key[0], NULL, "t") && !hpcti_ctx_get(a, &key[0]) &&
               hpcti_ctx_get(b, &key[0]) == &y,
           "a slot set to NULL is empty again, on that context only");
}

int main(void)
{
    tap_plan(18);
    int major = -1, minor = -1, patch = -1;
    hpct_get_version(&major, &minor, &patch);
    tap_ok(major == HPCT_VERSION_MAJOR && minor == HPCT_VERSION_MINOR &&
               patch == HPCT_VERSION_PATCH,
           "runtime version %d.%d.%d matches the header", major, minor, patch);
    tap_is_int(HPCT_VERSION, (major << 16) | (minor << 8) | patch, "HPCT_VERSION packs the triple");
    unsigned api = hpct_get_api_version();
    tap_ok(api == HPCT_API_VERSION && api == (unsigned)HPCT_MAKE_VERSION(major, minor, 0),
           "runtime API version %06x is the header's and packs major.minor.0", api);
    tap_ok(HPCT_MAKE_VERSION(0, 2, 0) > HPCT_MAKE_VERSION(0, 1, 9) &&
               HPCT_MAKE_VERSION(1, 0, 0) > HPCT_MAKE_VERSION(0, 255, 255) &&
               HPCT_API_VERSION <= HPCT_VERSION,
           "versions compare as numbers; the API version ignores the patch");

    /* Every status code has its own message; unknown codes are named as such. */
    int distinct = 1;
    for (int a = HPCT_ERR_LOSS_DIVERGED; a <= HPCT_PREEMPTED; a++)
        for (int b = a + 1; b <= HPCT_PREEMPTED; b++)
            distinct &= strcmp(hpct_strerror(a), hpct_strerror(b)) != 0;
    tap_ok(distinct, "every status code has a distinct message");
    tap_is_str(hpct_strerror(-999), "unknown status code", "unknown codes are reported as unknown");
    tap_is_str(hpct_strerror(HPCT_SUCCESS), "success", "0 is success");

    hpct_ctx_t ctx = NULL;
    tap_is_int(hpct_ctx_create(NULL, &ctx), HPCT_SUCCESS, "a context with default config");
    tap_is_str(hpct_last_error(ctx), "", "a fresh context has no error detail");

    uint64_t st[HPCT_RNG_STATE_WORDS], back[HPCT_RNG_STATE_WORDS];
    tap_is_int(hpct_rng_get_state(ctx, st), HPCT_SUCCESS, "RNG state can be read");
    st[0] ^= 0x1234;
    tap_is_int(hpct_rng_set_state(ctx, st), HPCT_SUCCESS, "RNG state can be restored");
    hpct_rng_get_state(ctx, back);
    tap_ok(memcmp(st, back, sizeof st) == 0, "restored RNG state reads back unchanged");

    hpct_ctx_t other = NULL;
    hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
    cfg.seed = 43;
    hpct_ctx_create(&cfg, &other);
    hpct_rng_get_state(other, back);
    hpct_rng_get_state(ctx, st);
    tap_ok(memcmp(st, back, sizeof st) != 0, "different seeds give different RNG states");
    slots(ctx, other);
    hpct_ctx_destroy(other);
    hpct_ctx_destroy(ctx);
    hpct_ctx_destroy(NULL);
    tap_ok(1, "destroying NULL is a no-op");
    return tap_done();
}
