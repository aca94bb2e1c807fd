/* dist.h: what lib/comm gives the folders above it (ckpt, train) and its own top files: the
 * distributed runtime (runtime/runtime.h) and the averaging engine on it (avg/). */
#ifndef HPCTI_COMM_DIST_H
#define HPCTI_COMM_DIST_H

#include "runtime/runtime.h"
#include "avg/avg.h"
#include "avg/reduce.h"
#include "avg/node_win.h"
#include "avg/grads.h"
#include "avg/algo.h"
#include "avg/device_avg.h"

#endif
