# Automake fragment included by Makefile.am: the training loop (lib/train) and the hpctrain tool.
lib_libhpctrain_a_SOURCES += lib/train/train.c lib/train/loop.h lib/train/loop.c lib/train/insitu.c
tools_hpctrain_SOURCES += tools/train.c tools/train_config.c tools/train_config.h
dist_man_MANS += doc/hpctrain.conf.5

check_PROGRAMS += t/test_train_config
TESTS += t/test_train_config
t_test_train_config_SOURCES = t/test_train_config.c tools/train_config.c tools/train_config.h
t_test_train_config_LDADD = t/libtap.a

# End-to-end tests of hpctrain train: real processes, real signals (t/train_lib.sh helpers).
TESTS += t/test_train_preempt_w1.sh t/test_train_preempt_w2.sh t/test_train_worldsize.sh \
	t/test_train_corrupt.sh t/test_train_hang.sh t/test_train_settings.sh t/test_train_cadence.sh
EXTRA_DIST += t/train_lib.sh t/train_data.sh t/train_preempt.sh t/test_train_preempt_w1.sh \
	t/test_train_preempt_w2.sh t/test_train_worldsize.sh t/test_train_corrupt.sh \
	t/test_train_hang.sh t/test_train_settings.sh t/test_train_cadence.sh

# The in-situ session: one process here, two ranks under mpirun in t/test_insitu_dist.sh.
check_PROGRAMS += t/test_insitu
TESTS += t/test_insitu
t_test_insitu_LDADD = $(TEST_LIBS)
check_PROGRAMS += t/insitu_prog
t_insitu_prog_LDADD = $(TEST_LIBS)
TESTS += t/test_insitu_dist.sh
EXTRA_DIST += t/test_insitu_dist.sh doc/insitu.md

# Benchmark (built, run by hand or by bench/run_all.sh): in-situ step against the plain calls.
noinst_PROGRAMS += bench/bench_insitu
bench_bench_insitu_LDADD = $(HPCT_LIBS)
