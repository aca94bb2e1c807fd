/* spec_parse.c: the syntax of a model's layers as text (hpctrain.conf(5)'s layers key):
 * comma-separated items,
 *   reshape CxHxW | conv C [kK] [sS] [same|valid] [act] | maxpool W [sS] [act] |
 *   avgpool W [sS] [act] | upsample F [act] | dense N [act]
 * Plain C with no library calls, so the settings fuzzer builds it with settings.c alone;
 * spec.c adds the items to a model. */
#include "spec.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPEC_WORDS 8

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
static int parse_shape(const char *w, struct hpcti_spec_item *it)
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
static int parse_option(const char *w, struct hpcti_spec_item *it)
{
    for (int a = 0; a < 4; a++)
        if (!strcmp(w, acts[a]) && it->kind != HPCTI_IT_RESHAPE) return it->act = a, 0;
    if (it->kind == HPCTI_IT_CONV && !strcmp(w, "same")) return it->padding = HPCT_PAD_SAME, 0;
    if (it->kind == HPCTI_IT_CONV && !strcmp(w, "valid")) return it->padding = HPCT_PAD_VALID, 0;
    if (it->kind == HPCTI_IT_CONV && w[0] == 'k' && (it->k = positive(w + 1))) return 0;
    if ((it->kind == HPCTI_IT_CONV || it->kind == HPCTI_IT_MAXPOOL ||
         it->kind == HPCTI_IT_AVGPOOL) &&
        w[0] == 's' && (it->s = positive(w + 1)))
        return 0;
    return -1;
}

/* Item text (NUL-terminated, blanks around) into *it; why [n] says what is wrong. */
static int parse_item(char *text, struct hpcti_spec_item *it, char *why, size_t n)
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
    *it = (struct hpcti_spec_item){
        .kind = (enum hpcti_item_kind)kind, .k = 3, .padding = HPCT_PAD_SAME, .act = -1};
    if (nw < 2 || (kind == HPCTI_IT_RESHAPE ? parse_shape(w[1], it) : !(it->n = positive(w[1]))))
        return snprintf(why, n, "%s needs %s", w[0],
                        kind == HPCTI_IT_RESHAPE    ? "a shape CxHxW (1 to 4 numbers joined by x)"
                        : kind == HPCTI_IT_CONV     ? "its number of channels"
                        : kind == HPCTI_IT_DENSE    ? "its width"
                        : kind == HPCTI_IT_UPSAMPLE ? "its factor"
                                                    : "its window"),
               -1;
    it->s = kind == HPCTI_IT_MAXPOOL || kind == HPCTI_IT_AVGPOOL ? it->n : 1;
    for (int i = 2; i < nw; i++)
        if (parse_option(w[i], it))
            return snprintf(why, n, "'%s' is not an option of %s", w[i], w[0]), -1;
    return 0;
}

int hpcti_spec_walk(const char *spec, hpcti_spec_fn fn, void *arg, char *why, size_t n)
{
    size_t len = strlen(spec);
    char *copy = malloc(len + 1);
    if (!copy) return snprintf(why, n, "out of memory"), HPCT_ERR_NO_MEMORY;
    memcpy(copy, spec, len + 1);
    int s = 0, index = 1;
    for (char *item = copy, *next; !s && item; item = next, index++) {
        next = strchr(item, ',');
        if (next) *next++ = '\0';
        char text[256]; /* the item as written, for messages: blanks around it dropped */
        snprintf(text, sizeof text, "%s", item + strspn(item, " \t"));
        for (size_t e = strlen(text); e > 0 && (text[e - 1] == ' ' || text[e - 1] == '\t');)
            text[--e] = '\0';
        struct hpcti_spec_item it;
        char detail[200];
        if (parse_item(item, &it, detail, sizeof detail)) {
            snprintf(why, n, "item %d ('%.60s'): %s", index, text, detail);
            s = HPCT_ERR_INVALID_ARG;
        } else if (fn && (s = fn(arg, &it, !next, detail, sizeof detail))) {
            snprintf(why, n, "item %d ('%.60s'): %s", index, text, detail);
        }
    }
    free(copy);
    return s;
}

int hpcti_layers_check(const char *spec, char *why, size_t n)
{
    return hpcti_spec_walk(spec, NULL, NULL, why, n) ? -1 : 0;
}
