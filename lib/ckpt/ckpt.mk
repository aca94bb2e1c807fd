# Automake fragment included by Makefile.am: checkpoints and preemption (lib/ckpt).
# Append with +=: lib_libhpctrain_a_SOURCES, C_TESTS/check_PROGRAMS/TESTS, EXTRA_DIST, ...
lib_libhpctrain_a_SOURCES += lib/ckpt/ckpt.h lib/ckpt/ckpt.c lib/ckpt/h5io.c \
	lib/ckpt/crc32c.c lib/ckpt/signals.c lib/ckpt/walltime.c \
	lib/ckpt/h5io.h lib/ckpt/inspect.c

CKPT_TESTS = t/test_ckpt_format t/test_ckpt_kill t/test_ckpt_disk t/test_signals
check_PROGRAMS += $(CKPT_TESTS)
TESTS += $(CKPT_TESTS)
t_test_ckpt_format_LDADD = $(TEST_LIBS)
t_test_ckpt_kill_LDADD = $(TEST_LIBS)
t_test_ckpt_disk_LDADD = $(TEST_LIBS)
t_test_signals_LDADD = $(TEST_LIBS)
EXTRA_DIST += t/ckpt_util.h doc/checkpoint-format.md

noinst_PROGRAMS += bench/bench_ckpt
bench_bench_ckpt_LDADD = $(HPCT_LIBS)

# Walltime under a real (private, loopback) Slurm cluster.
check_PROGRAMS += t/walltime_probe
t_walltime_probe_LDADD = $(HPCT_LIBS)
TESTS += t/test_walltime_slurm.sh
EXTRA_DIST += t/test_walltime_slurm.sh

# ---- hpctrain ckpt info|verify|diff (the program itself is defined in data.mk) ----
tools_hpctrain_SOURCES += tools/ckpt.c
check_PROGRAMS += t/ckpt_make t/test_ckpt_inspect
t_ckpt_make_LDADD = $(HPCT_LIBS)
t_test_ckpt_inspect_LDADD = $(TEST_LIBS)
TESTS += t/test_ckpt_inspect t/test_ckpt_tool.sh
EXTRA_DIST += t/test_ckpt_tool.sh
