# lib/data: sharded HDF5 datasets: manifest, checksums, conversions, shard layout, reader.
lib_libhpctrain_a_SOURCES += lib/data/data.h lib/data/manifest.c lib/data/checksum.c \
	lib/data/convert.c lib/data/h5shard.h lib/data/h5shard.c lib/data/reader.h \
	lib/data/reader.c lib/data/dataset.c
