/* spec.c: hpct_model_add_layers, the items of a layers description (spec_parse.c) added to a
 * model. The last item's activation defaults to identity (it is the output layer), the
 * others' to the caller's. */
#include "layer.h"
#include "spec.h"

#include <stdio.h>

struct adding {
    hpct_model_t m;
    hpct_activation_t act;
};

/* Add item it (last: the output layer), its activation the default when it gives none; on a
 * refusal the model's message into why [n]. */
static int add_item(void *arg, const struct hpcti_spec_item *it, int last, char *why, size_t n)
{
    struct adding *ad = arg;
    hpct_model_t m = ad->m;
    hpct_activation_t dflt = last ? HPCT_ACT_IDENTITY : ad->act;
    hpct_activation_t a = it->act >= 0 ? (hpct_activation_t)it->act : dflt;
    hpct_activation_t window_act = it->act >= 0 ? a : HPCT_ACT_IDENTITY;
    hpct_status_t s;
    switch (it->kind) {
    case HPCTI_IT_RESHAPE:
        s = hpct_model_add_reshape(m, it->shape[0], it->dims, it->shape + 1);
        break;
    case HPCTI_IT_CONV:
        s = hpct_model_add_conv(m, it->n, it->k, it->s, (hpct_padding_t)it->padding, a,
                                HPCT_INIT_AUTO);
        break;
    case HPCTI_IT_MAXPOOL:
    case HPCTI_IT_AVGPOOL:
        s = hpct_model_add_pool(m, it->kind == HPCTI_IT_MAXPOOL ? HPCT_POOL_MAX : HPCT_POOL_AVG,
                                it->n, it->s, window_act);
        break;
    case HPCTI_IT_UPSAMPLE: s = hpct_model_add_upsample(m, it->n, window_act); break;
    default: s = hpct_model_add_dense(m, it->n, a, HPCT_INIT_AUTO);
    }
    if (s) snprintf(why, n, "%s", hpct_last_error(m->ctx));
    return s;
}

hpct_status_t hpct_model_add_layers(hpct_model_t m, const char *spec, hpct_activation_t act)
{
    static const char fn[] = "hpct_model_add_layers";
    if (!m) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(m->ctx);
    if (!spec || !*spec) return hpcti_error(m->ctx, HPCT_ERR_INVALID_ARG, "%s: no layers", fn);
    hpct_status_t s = hpcti_check_act_init(m, fn, act, HPCT_INIT_AUTO);
    if (s) return s;
    char why[512];
    struct adding ad = {m, act};
    s = hpcti_spec_walk(spec, add_item, &ad, why, sizeof why);
    return s ? hpcti_error(m->ctx, s, "%s: %s", fn, why) : HPCT_SUCCESS;
}
