/* comms.c: the store's communicators, kept in data's slot of the context. */
#include "comms.h"

static hpcti_slot_key_t comms_slot; /* data's slot of every context */

hpct_status_t hpcti_data_use_comms(hpct_ctx_t ctx, const hpcti_data_comms_t *c)
{
    return hpcti_ctx_put(ctx, &comms_slot, (void *)c, "hpct_init (the data store)");
}

const hpcti_data_comms_t *hpcti_data_comms(const struct hpct_ctx *ctx)
{
    static const hpcti_data_comms_t none; /* valid 0 */
    const hpcti_data_comms_t *c = hpcti_ctx_get(ctx, &comms_slot);
    return c ? c : &none;
}
