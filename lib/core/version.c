/* version.c: the version of the library actually linked. */
#include "core.h"

void hpct_get_version(int *major, int *minor, int *patch)
{
    if (major) *major = HPCT_VERSION_MAJOR;
    if (minor) *minor = HPCT_VERSION_MINOR;
    if (patch) *patch = HPCT_VERSION_PATCH;
}

unsigned hpct_get_api_version(void)
{
    return HPCT_API_VERSION;
}
