/* spec.h: the layers description's items (spec_parse.c, plain C) for hpct_model_add_layers
 * (spec.c) and the settings' check (lib/train/settings.c through model.h). */
#ifndef HPCTI_SPEC_H
#define HPCTI_SPEC_H

#include "hpctrain.h"

#include <stddef.h>

enum hpcti_item_kind {
    HPCTI_IT_RESHAPE,
    HPCTI_IT_CONV,
    HPCTI_IT_MAXPOOL,
    HPCTI_IT_AVGPOOL,
    HPCTI_IT_UPSAMPLE,
    HPCTI_IT_DENSE
};

/* One item: its kind, first number (channels, window, factor, width), kernel, stride, padding
 * (hpct_padding_t), activation (-1: the default); reshape: channels then dims spatial sizes
 * in shape. */
struct hpcti_spec_item {
    enum hpcti_item_kind kind;
    int n, k, s, padding, act, dims, shape[4];
};

/* Called for each parsed item (last: 1 for the final one); a nonzero status stops the walk,
 * with what is wrong in why [n]. */
typedef int (*hpcti_spec_fn)(void *arg, const struct hpcti_spec_item *it, int last, char *why,
                             size_t n);
/* Parse spec item by item, calling fn (NULL: syntax only). 0, or the status of the first
 * failure (HPCT_ERR_INVALID_ARG for bad syntax) with "item K ('text'): what" in why [n]. */
int hpcti_spec_walk(const char *spec, hpcti_spec_fn fn, void *arg, char *why, size_t n);
/* 0 when spec is a well-formed hpct_model_add_layers description (syntax only: shapes are
 * checked when the layers are added); else -1 and why [n] names the item and its problem. */
int hpcti_layers_check(const char *spec, char *why, size_t n);

#endif
