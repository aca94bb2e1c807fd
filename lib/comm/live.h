/* live.h: lib/comm's liveness answers for the folders above it (runtime/live.h). */
#ifndef HPCTI_COMM_LIVE_H
#define HPCTI_COMM_LIVE_H

#include "runtime/live.h"

#endif
