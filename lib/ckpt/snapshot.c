/* snapshot.c: the pieces a checkpoint is made of: items of a snapshot, their element sizes,
 * and error records filled away from the caller's thread. */
#include "ckpt.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

hpct_status_t hpcti_ckerr_set(hpcti_ckerr_t *err, hpct_status_t status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    err->status = status;
    return status;
}

size_t hpcti_ck_elsize(int dtype)
{
    switch (dtype) {
    case HPCT_CKPT_F32:
    case HPCT_CKPT_I32: return 4;
    case HPCT_CKPT_F64:
    case HPCT_CKPT_I64:
    case HPCTI_CK_U64: return 8;
    default: return 1; /* HPCT_CKPT_U8 */
    }
}

int hpcti_snap_add(hpcti_snapshot_t *snap, const char *prefix, const char *name, int dtype,
                   int scalar, size_t count, void *data)
{
    if (snap->num == snap->cap) {
        int cap = snap->cap ? 2 * snap->cap : 32;
        hpcti_ckitem_t *items = realloc(snap->items, sizeof *items * (size_t)cap);
        if (!items) return HPCT_ERR_NO_MEMORY;
        snap->items = items;
        snap->cap = cap;
    }
    hpcti_ckitem_t *it = &snap->items[snap->num++];
    snprintf(it->path, sizeof it->path, "%s/%s", prefix, name);
    it->dtype = dtype;
    it->scalar = scalar;
    it->count = count;
    it->data = data;
    it->user = NULL;
    it->on_device = 0;
    return HPCT_SUCCESS;
}
