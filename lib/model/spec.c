/* spec.c: a model's layers from text (hpctrain.conf(5)'s layers key): comma-separated items,
 *   reshape CxHxW | conv C [kK] [sS] [same|valid] [act] | maxpool W [sS] [act] |
 *   avgpool W [sS] [act] | upsample F [act] | dense N [act]
 * The last item's activation defaults to identity (it is the output layer), the others' to
 * the caller's. */
#include "layer.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPEC_WORDS 8

enum item_kind { IT_RESHAPE, IT_CONV, IT_MAXPOOL, IT_AVGPOOL, IT_UPSAMPLE, IT_DENSE };

/* One item: its kind, first number (channels, window, factor, width), kernel, stride, padding,
 * activation (-1: the default); reshape: channels and dims spatial sizes. */
struct item {
    enum item_kind kind;
    int n, k, s, padding, act, dims, shape[4];
};

static const char *const kinds[] = {"reshape", "conv", "maxpool", "avgpool", "upsample", "dense"};
static const char *const acts[] = {"identity", "relu", "tanh", "gelu"};

/* A whole positive decimal integer up to 2^24 (0: not one). */
static int positive(const char *w)
{
    if (!isdigit((unsigned char)*w)) return 0;
    char *end;
    errno = 0;
    long v = strtol(w, &end, 10);
    return *end || errno || v < 1 || v > (1 << 24) ? 0 : (int)v;
}

/* "CxHxW" (1 to 4 numbers) into it->shape; 0 on success. */
static int parse_shape(const char *w, struct item *it)
{
    int n = 0;
    char buf[64];
    if (strlen(w) >= sizeof buf) return -1;
    strcpy(buf, w);
    for (char *save = NULL, *p = strtok_r(buf, "x", &save); p; p = strtok_r(NULL, "x", &save)) {
        if (n == 4 || !(it->shape[n] = positive(p))) return -1;
        n++;
    }
    it->dims = n - 1;
    return n ? 0 : -1;
}

/* One optional word after the number: kK, sS, same, valid or an activation. */
static int parse_option(const char *w, struct item *it)
{
    for (int a = 0; a < 4; a++)
        if (!strcmp(w, acts[a]) && it->kind != IT_RESHAPE) return it->act = a, 0;
    if (it->kind == IT_CONV && !strcmp(w, "same")) return it->padding = HPCT_PAD_SAME, 0;
    if (it->kind == IT_CONV && !strcmp(w, "valid")) return it->padding = HPCT_PAD_VALID, 0;
    if (it->kind == IT_CONV && w[0] == 'k' && (it->k = positive(w + 1))) return 0;
    if ((it->kind == IT_CONV || it->kind == IT_MAXPOOL || it->kind == IT_AVGPOOL) && w[0] == 's' &&
        (it->s = positive(w + 1)))
        return 0;
    return -1;
}

/* Item text (NUL-terminated, blanks around) into *it; why [n] says what is wrong. */
static int parse_item(char *text, struct item *it, char *why, size_t n)
{
    char *w[SPEC_WORDS + 1], *save = NULL;
    int nw = 0;
    for (char *p = strtok_r(text, " \t", &save); p && nw <= SPEC_WORDS;
         p = strtok_r(NULL, " \t", &save))
        w[nw++] = p;
    if (nw == 0) return snprintf(why, n, "an empty item"), -1;
    if (nw > SPEC_WORDS) return snprintf(why, n, "more than %d words", SPEC_WORDS), -1;
    int kind = -1;
    for (int i = 0; i < 6; i++)
        if (!strcmp(w[0], kinds[i])) kind = i;
    if (kind < 0)
        return snprintf(why, n,
                        "'%s' is not a layer (reshape, conv, maxpool, avgpool, upsample, "
                        "dense)",
                        w[0]),
               -1;
    *it = (struct item){.kind = kind, .k = 3, .padding = HPCT_PAD_SAME, .act = -1};
    if (nw < 2 || (kind == IT_RESHAPE ? parse_shape(w[1], it) : !(it->n = positive(w[1]))))
        return snprintf(why, n, "%s needs %s", w[0],
                        kind == IT_RESHAPE    ? "a shape CxHxW (1 to 4 numbers joined by x)"
                        : kind == IT_CONV     ? "its number of channels"
                        : kind == IT_DENSE    ? "its width"
                        : kind == IT_UPSAMPLE ? "its factor"
                                              : "its window"),
               -1;
    it->s = kind == IT_MAXPOOL || kind == IT_AVGPOOL ? it->n : 1;
    for (int i = 2; i < nw; i++)
        if (parse_option(w[i], it))
            return snprintf(why, n, "'%s' is not an option of %s", w[i], w[0]), -1;
    return 0;
}

/* Add item it, its activation act when it gives none. */
static hpct_status_t add_item(hpct_model_t m, const struct item *it, hpct_activation_t act)
{
    hpct_activation_t a = it->act >= 0 ? (hpct_activation_t)it->act : act;
    switch (it->kind) {
    case IT_RESHAPE: return hpct_model_add_reshape(m, it->shape[0], it->dims, it->shape + 1);
    case IT_CONV:
        return hpct_model_add_conv(m, it->n, it->k, it->s, (hpct_padding_t)it->padding, a,
                                   HPCT_INIT_AUTO);
    case IT_MAXPOOL:
    case IT_AVGPOOL:
        return hpct_model_add_pool(m, it->kind == IT_MAXPOOL ? HPCT_POOL_MAX : HPCT_POOL_AVG, it->n,
                                   it->s, it->act >= 0 ? a : HPCT_ACT_IDENTITY);
    case IT_UPSAMPLE:
        return hpct_model_add_upsample(m, it->n, it->act >= 0 ? a : HPCT_ACT_IDENTITY);
    default: return hpct_model_add_dense(m, it->n, a, HPCT_INIT_AUTO);
    }
}

/* Walk spec's items: each parsed, then added to m when m is not NULL. Status, and the item's
 * problem in why [n] (the model's message is in the context's last error). */
static hpct_status_t walk(hpct_model_t m, const char *spec, hpct_activation_t act, char *why,
                          size_t n)
{
    size_t len = strlen(spec);
    char *copy = malloc(len + 1);
    if (!copy) return snprintf(why, n, "out of memory"), HPCT_ERR_NO_MEMORY;
    memcpy(copy, spec, len + 1);
    hpct_status_t s = HPCT_SUCCESS;
    int index = 1;
    for (char *item = copy, *next; !s && item; item = next, index++) {
        next = strchr(item, ',');
        if (next) *next++ = '\0';
        char text[256]; /* the item as written, for messages: blanks around it dropped */
        snprintf(text, sizeof text, "%s", item + strspn(item, " \t"));
        for (size_t e = strlen(text); e > 0 && (text[e - 1] == ' ' || text[e - 1] == '\t');)
            text[--e] = '\0';
        struct item it;
        char detail[200];
        if (parse_item(item, &it, detail, sizeof detail)) {
            snprintf(why, n, "item %d ('%.60s'): %s", index, text, detail);
            s = HPCT_ERR_INVALID_ARG;
        } else if (m && (s = add_item(m, &it, next ? act : HPCT_ACT_IDENTITY))) {
            snprintf(why, n, "item %d ('%.60s'): %s", index, text, hpct_last_error(m->ctx));
        }
    }
    free(copy);
    return s;
}

int hpcti_layers_check(const char *spec, char *why, size_t n)
{
    return walk(NULL, spec, HPCT_ACT_IDENTITY, why, n) ? -1 : 0;
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
    s = walk(m, spec, act, why, sizeof why);
    return s ? hpcti_error(m->ctx, s, "%s: %s", fn, why) : HPCT_SUCCESS;
}
