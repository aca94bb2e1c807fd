# lib/data: sharded HDF5 datasets: manifest, checksums, conversions, shard layout, reader,
# and the public shard and manifest writers.
lib_libhpctrain_a_SOURCES += lib/data/data.h lib/data/manifest.c lib/data/checksum.c \
	lib/data/convert.c lib/data/h5shard.h lib/data/h5shard.c lib/data/reader.h \
	lib/data/reader.c lib/data/mapguard.h lib/data/mapguard.c lib/data/dataset.c lib/data/comms.h lib/data/comms.c lib/data/store.c lib/data/shard_writer.c lib/data/manifest_writer.c
