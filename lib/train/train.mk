# Automake fragment included by Makefile.am: the training loop (lib/train) and the hpctrain tool.
check_PROGRAMS += t/test_train_config
TESTS += t/test_train_config
t_test_train_config_SOURCES = t/test_train_config.c tools/train_config.c tools/train_config.h
t_test_train_config_LDADD = t/libtap.a
