/* list.c: the public listing of a checkpoint directory (hpct_ckpt_list_*): the same files,
 * in the same newest-first order, that hpct_ckpt_load_latest tries. No HDF5 here. */
#include "ckpt.h"

#include <stdlib.h>
#include <string.h>

struct hpct_ckpt_list {
    hpct_ctx_t ctx;
    char **paths; /* [num] "dir/name", newest (highest step) first */
    int num;
};

void hpct_ckpt_list_close(hpct_ckpt_list_t list)
{
    if (!list) return;
    for (int i = 0; i < list->num; i++) free(list->paths[i]);
    free(list->paths);
    free(list);
}

/* list->paths [n] = dir/names[i]; HPCT_ERR_NO_MEMORY (recorded) when one cannot be made. */
static hpct_status_t join_all(struct hpct_ckpt_list *list, const char *dir, char **names, int n)
{
    list->paths = hpcti_calloc(list->ctx, (size_t)n, sizeof *list->paths, "a checkpoint list");
    if (!list->paths) return HPCT_ERR_NO_MEMORY;
    for (; list->num < n; list->num++) {
        char path[HPCTI_CKPT_PATH_MAX];
        hpcti_ck_join(path, dir, names[list->num]);
        if (!(list->paths[list->num] = strdup(path)))
            return hpcti_error(list->ctx, HPCT_ERR_NO_MEMORY,
                               "cannot allocate the path of checkpoint %s", path);
    }
    return HPCT_SUCCESS;
}

hpct_status_t hpct_ckpt_list_open(hpct_ctx_t ctx, const char *dir, hpct_ckpt_list_t *out)
{
    if (!ctx) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(ctx);
    if (!out || !dir || !*dir)
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG, "hpct_ckpt_list_open: %s is NULL or empty",
                           out ? "dir" : "list");
    *out = NULL;
    char **names;
    int n;
    hpcti_ckerr_t err = {0, ""};
    hpct_status_t s = hpcti_ck_list(dir, &names, &n, &err);
    if (s) return hpcti_error(ctx, s, "%s", err.msg);
    struct hpct_ckpt_list *list = hpcti_calloc(ctx, 1, sizeof *list, "a checkpoint list");
    if (list) {
        list->ctx = ctx;
        s = join_all(list, dir, names, n);
    }
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    if (!list) return HPCT_ERR_NO_MEMORY;
    if (s) {
        hpct_ckpt_list_close(list);
        return s;
    }
    *out = list;
    return HPCT_SUCCESS;
}

hpct_status_t hpct_ckpt_list_size(hpct_ckpt_list_t list, int *n)
{
    if (!list) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(list->ctx);
    if (!n) return hpcti_error(list->ctx, HPCT_ERR_INVALID_ARG, "hpct_ckpt_list_size: n is NULL");
    *n = list->num;
    return HPCT_SUCCESS;
}

hpct_status_t hpct_ckpt_list_path(hpct_ckpt_list_t list, int i, const char **path)
{
    if (!list) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(list->ctx);
    if (!path)
        return hpcti_error(list->ctx, HPCT_ERR_INVALID_ARG, "hpct_ckpt_list_path: path is NULL");
    if (i < 0 || i >= list->num)
        return hpcti_error(list->ctx, HPCT_ERR_INVALID_ARG,
                           "hpct_ckpt_list_path: index %d is outside [0, %d)", i, list->num);
    *path = list->paths[i];
    return HPCT_SUCCESS;
}
