/* settings.h: what hpct_insitu_open (open.c) shares with the parser of hpctrain.conf(5)
 * (settings.c) beside the public hpct_settings_* calls. */
#ifndef HPCTI_SETTINGS_H
#define HPCTI_SETTINGS_H

#include "../core/core.h"

/* text as "key = value" (comments already cut): *key and *value point into it, the blanks
 * around both cut; both NULL for a blank text. HPCT_ERR_INVALID_ARG without '=', the message
 * naming where in hpct_last_error(NULL). */
HPCTI_CHECK hpct_status_t hpcti_settings_split(char *text, const char *where, char **key,
                                               char **value);

#endif
