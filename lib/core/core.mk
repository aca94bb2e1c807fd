# lib/core: context, configuration, status codes and messages, logging, RNG, clock.
lib_libhpctrain_a_SOURCES += lib/core/core.h lib/core/ctx.c lib/core/rng.c lib/core/status.c
