/* h5safe.c: refuse HDF5 objects that would read bytes from outside the file (h5safe.h). */
#include "config.h"
#include "h5safe.h"

#include <stdio.h>
#include <string.h>

int hpcti_h5_hard_path(hid_t loc, const char *path, char *bad, size_t n)
{
    char part[512];
    for (const char *slash = path;; slash++) {
        slash = strchr(slash, '/');
        size_t len = slash ? (size_t)(slash - path) : strlen(path);
        if (len >= sizeof part) return -1;
        memcpy(part, path, len);
        part[len] = '\0';
        if (len > 0) {
            htri_t e = H5Lexists(loc, part, H5P_DEFAULT);
            if (e <= 0) return e < 0 ? -1 : 0;
            H5L_info_t info;
            if (H5Lget_info(loc, part, &info, H5P_DEFAULT) < 0) return -1;
            if (info.type != H5L_TYPE_HARD) {
                snprintf(bad, n, "%s", part);
                return -2;
            }
        }
        if (!slash) return 1;
    }
}

const char *hpcti_h5_foreign_storage(hid_t dset)
{
    hid_t dcpl = H5Dget_create_plist(dset);
    if (dcpl < 0) return "a dataset whose storage cannot be read";
    const char *why = NULL;
    if (H5Pget_external_count(dcpl) != 0)
        why = "stored in external raw files";
    else if (H5Pget_layout(dcpl) == H5D_VIRTUAL)
        why = "a virtual dataset (its data lives in other files)";
    H5Pclose(dcpl);
    return why;
}

/* Keep the most specific message of the HDF5 error stack. A system error's description
 * ("file write failed: time = ..., errno = 28, error message = 'No space left on device', ...")
 * is shortened to its summary and the strerror text. */
static herr_t deepest(unsigned n, const H5E_error2_t *e, void *buf)
{
    const char *desc = e->desc ? e->desc : "?";
    const char *sys = strstr(desc, "error message = '");
    const char *cut = strstr(desc, ": time =");
    if (!cut) cut = strstr(desc, ": name ="); /* "unable to open file: name = '...', errno" */
    if (sys && cut) {
        sys += strlen("error message = '");
        const char *end = strchr(sys, '\'');
        snprintf(buf, 400, "%.*s: %.*s", (int)(cut - desc), desc,
                 (int)(end ? end - sys : (long)strlen(sys)), sys);
    } else {
        snprintf(buf, 400, "%s: %s", e->func_name ? e->func_name : "?", desc);
    }
    return 1; /* the first one walking upward is the most specific */
}

const char *hpcti_h5_detail(char buf[400])
{
    buf[0] = '\0';
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, deepest, buf);
    H5Eclear2(H5E_DEFAULT);
    return buf[0] ? buf : "no HDF5 detail";
}
