# Automake fragment included by Makefile.am: sharded HDF5 datasets (lib/data, tools/ shard converter).
# Append with +=: lib_libhpctrain_a_SOURCES, C_TESTS/check_PROGRAMS/TESTS, EXTRA_DIST, ...
lib_libhpctrain_a_SOURCES += lib/data/data.h lib/data/manifest.c lib/data/checksum.c \
	lib/data/convert.c lib/data/h5shard.h lib/data/h5shard.c lib/data/reader.h \
	lib/data/reader.c lib/data/dataset.c

check_LIBRARIES += t/libdatatest.a
t_libdatatest_a_SOURCES = t/data_util.c t/data_util.h
DATA_TEST_LIBS = t/libdatatest.a $(TEST_LIBS)
DATA_C_TESTS = t/test_data t/test_data_bad
check_PROGRAMS += $(DATA_C_TESTS)
TESTS += $(DATA_C_TESTS)
t_test_data_LDADD = $(DATA_TEST_LIBS)
t_test_data_bad_LDADD = $(DATA_TEST_LIBS)

# ---- the installed hpctrain program (tools/): dispatcher + shard subcommand ----
bin_PROGRAMS = tools/hpctrain
tools_hpctrain_SOURCES = tools/hpctrain.c tools/tools.h tools/shard.c tools/inputs.c
tools_hpctrain_LDADD = $(HPCT_LIBS) $(ZLIB_LIBS)

# ---- shell tests: converter round trip, manifest fuzzing ----
TESTS += t/test_shard_tool.sh t/test_fuzz_manifest.sh
EXTRA_DIST += t/test_shard_tool.sh t/test_fuzz_manifest.sh t/fuzz/manifest_fuzz.c \
	t/fuzz/corpus/fashion.txt t/fuzz/corpus/nested.txt t/fuzz/corpus/crlf.txt \
	t/fuzz/corpus/escape.txt t/fuzz/corpus/duplicate.txt doc/data-formats.md
check_PROGRAMS += t/data_check
t_data_check_LDADD = $(TEST_LIBS)

# ---- benchmark (built, run by hand: bench/bench_reader [DIR] [GIB]) ----
noinst_PROGRAMS += bench/bench_reader
bench_bench_reader_LDADD = $(HPCT_LIBS)
dist_man_MANS += doc/hpctrain.1

# ---- 2 real MPI ranks read one manifest ----
check_PROGRAMS += t/test_data_mpi
t_test_data_mpi_LDADD = $(DATA_TEST_LIBS)
TESTS += t/test_data_mpi.sh
EXTRA_DIST += t/test_data_mpi.sh
