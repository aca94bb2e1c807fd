# lib/comm: communicators, deadline-bounded collectives, integer agreement, hierarchical
# averaging, replicas, and the node-local NCCL collective for device buffers (--with-nccl).
lib_libhpctrain_a_SOURCES += lib/comm/dist.h lib/comm/dist.c lib/comm/collective.c \
	lib/comm/reduce.c lib/comm/wire.c lib/comm/replicas.c lib/comm/agree.h lib/comm/agree.c \
	lib/comm/node_win.c lib/comm/grads.c lib/comm/algo.c lib/comm/device_avg.c \
	lib/comm/vsum.h lib/comm/vsum.c lib/comm/live.h lib/comm/live.c lib/comm/versions.h \
	lib/comm/versions.c lib/comm/fabric.h lib/comm/fabric.c lib/comm/doctor.c

# NCCL headers for lib/comm/nccl_node.c (empty in a build without --with-nccl).
AM_CPPFLAGS += $(NCCL_CFLAGS)

# Always distributed, so a tarball can be configured --with-cuda --with-nccl.
EXTRA_DIST += lib/comm/nccl_node.c lib/comm/nccl_node.h

if HPCT_NCCL
lib_libhpctrain_a_SOURCES += lib/comm/nccl_node.c lib/comm/nccl_node.h
endif
