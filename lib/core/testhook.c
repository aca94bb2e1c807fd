/* testhook.c: the one gate of the library's test hooks (HPCT_CKPT_TEST_STOP_AT,
 * HPCT_TEST_STEP_DELAY_MS, ...). A hook variable counts only when HPCT_TEST_HOOKS=1 is set
 * too, so a user's environment cannot stop or slow a production run by accident: make check
 * sets both, nothing else should. */
#include "config.h"
#include "core.h"

#include <stdlib.h>
#include <string.h>

const char *hpcti_test_hook(const char *name)
{
    const char *gate = getenv("HPCT_TEST_HOOKS");
    if (!gate || strcmp(gate, "1") != 0) return NULL;
    return getenv(name);
}
