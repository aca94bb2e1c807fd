# Automake fragment included by Makefile.am: sharded HDF5 datasets (lib/data, tools/ shard converter).
# Append with +=: lib_libhpctrain_a_SOURCES, C_TESTS/check_PROGRAMS/TESTS, EXTRA_DIST, ...
lib_libhpctrain_a_SOURCES += lib/data/data.h lib/data/manifest.c lib/data/checksum.c \
	lib/data/convert.c lib/data/h5shard.h lib/data/h5shard.c lib/data/reader.h \
	lib/data/reader.c lib/data/dataset.c
