# lib/comm: communicators, deadline-bounded collectives, hierarchical averaging, replicas.
lib_libhpctrain_a_SOURCES += lib/comm/dist.h lib/comm/dist.c lib/comm/collective.c \
	lib/comm/reduce.c lib/comm/wire.c lib/comm/replicas.c
