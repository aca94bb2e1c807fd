# lib/ckpt: HDF5 checkpoints (atomic commit, retention, inspection), signals, walltime.
lib_libhpctrain_a_SOURCES += lib/ckpt/ckpt.h lib/ckpt/ckpt.c lib/ckpt/h5io.c \
	lib/ckpt/crc32c.c lib/ckpt/signals.c lib/ckpt/walltime.c \
	lib/ckpt/h5io.h lib/ckpt/inspect.c
