# lib/core: context, configuration, status strings, version, logging, RNG, clock, usable CPUs,
# polling back-off, HDF5 lock, the test-hook gate, HDF5 link and storage checks, the registry
# of environment settings.
lib_libhpctrain_a_SOURCES += lib/core/core.h lib/core/sim.h lib/core/ctx.c lib/core/rng.c lib/core/status.c \
	lib/core/version.c lib/core/hdf5_lock.c lib/core/clock.c lib/core/cpus.c lib/core/poll.c \
	lib/core/testhook.c lib/core/h5safe.h lib/core/h5safe.c \
	lib/core/tunables.c
