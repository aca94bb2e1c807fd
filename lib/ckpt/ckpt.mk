# lib/ckpt: HDF5 checkpoints (snapshot, HDF5 file I/O and the writer's file driver, atomic
# commit, retention, the one pass that reads a file and the validator resume and inspection
# share, inspection, the public directory listing, the one-run directory lock), signals,
# walltime.
lib_libhpctrain_a_SOURCES += lib/ckpt/ckpt.h lib/ckpt/ckpt.c lib/ckpt/snapshot.c \
	lib/ckpt/h5io.h lib/ckpt/h5io.c lib/ckpt/h5sink.c lib/ckpt/commit.c lib/ckpt/retention.c \
	lib/ckpt/inspect.c lib/ckpt/list.c lib/ckpt/crc32c.c lib/ckpt/signals.c lib/ckpt/walltime.c \
	lib/ckpt/dirlock.c lib/ckpt/scan.h lib/ckpt/scan.c lib/ckpt/validate.c
