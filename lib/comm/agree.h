/* agree.h: lib/comm's integer agreements for the folders above it (runtime/agree.h). */
#ifndef HPCTI_COMM_AGREE_H
#define HPCTI_COMM_AGREE_H

#include "runtime/agree.h"

#endif
