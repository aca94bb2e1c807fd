# Automake fragment included by Makefile.am: the distributed runtime (lib/bootstrap, lib/comm).
lib_libhpctrain_a_SOURCES += lib/bootstrap/bootstrap.h lib/bootstrap/bootstrap.c \
	lib/comm/dist.h lib/comm/dist.c lib/comm/wait.c lib/comm/reduce.c lib/comm/wire.c \
	lib/comm/replicas.c lib/comm/agree.h lib/comm/agree.c

# Multi-rank tests: shell drivers run t/dist_prog under $(MPIRUN).
check_PROGRAMS += t/dist_prog
t_dist_prog_LDADD = $(TEST_LIBS)
DIST_TESTS = t/test_dist_topology.sh t/test_dist_allreduce.sh t/test_dist_replicas.sh \
	t/test_dist_curve.sh t/test_dist_hang.sh
TESTS += $(DIST_TESTS)
EXTRA_DIST += $(DIST_TESTS) t/dist_lib.sh

# Benchmarks (built, run by hand; see the comment at the top of each file).
noinst_PROGRAMS += bench/bench_allreduce bench/bench_train
bench_bench_allreduce_LDADD = $(HPCT_LIBS)
bench_bench_train_LDADD = $(HPCT_LIBS)
EXTRA_DIST += bench/ddp_baseline.py bench/run_train_bench.sh
EXTRA_DIST += doc/distributed.md
