/* avg.c: the averaging engine's state of a context and its part in the runtime's operations. */
#include "avg.h"
#include "reduce.h"

#include <stdlib.h>

hpct_status_t hpcti_avg_attach(struct hpcti_dist *d)
{
    d->avg = calloc(1, sizeof *d->avg);
    if (!d->avg) return HPCT_ERR_NO_MEMORY;
    d->avg->tree_min = hpcti_red_tree_min(0);
    d->avg->tree_whole_min = hpcti_red_tree_min(1);
    d->work.reserve = hpcti_red_reserve;
    d->work.progress = hpcti_red_progress;
    d->work.done = hpcti_red_done;
    return HPCT_SUCCESS;
}
