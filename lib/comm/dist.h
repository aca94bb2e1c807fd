/* dist.h: what lib/comm gives the folders above it (ckpt, train) and its own top files: the
 * distributed runtime (runtime/runtime.h) and the averaging engine. */
#ifndef HPCTI_COMM_DIST_H
#define HPCTI_COMM_DIST_H

#include "runtime/runtime.h"

#endif
