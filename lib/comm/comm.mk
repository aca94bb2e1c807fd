# lib/comm: the distributed runtime (runtime/: communicators, deadline-bounded collectives,
# integer agreement, liveness, versions, doctor) below the averaging engine (avg/: node window,
# point-to-point and MPI reductions, algorithm per size, sum kernels, gradient buffers, device
# averages and the node-local NCCL collective for --with-nccl); the top files start and end a
# distributed context and hold the parameter-set calls.
lib_libhpctrain_a_SOURCES += lib/comm/runtime/runtime.h lib/comm/runtime/collective.c \
	lib/comm/runtime/agree.h lib/comm/runtime/agree.c lib/comm/runtime/live.h \
	lib/comm/runtime/live.c lib/comm/runtime/versions.h lib/comm/runtime/versions.c \
	lib/comm/runtime/fabric.h lib/comm/runtime/fabric.c lib/comm/runtime/doctor.c

lib_libhpctrain_a_SOURCES += lib/comm/avg/reduce.c lib/comm/avg/wire.c lib/comm/avg/vsum.h \
	lib/comm/avg/vsum.c lib/comm/avg/node_win.c lib/comm/avg/grads.c lib/comm/avg/algo.c \
	lib/comm/avg/device_avg.c lib/comm/avg/avg.h lib/comm/avg/avg.c \
	lib/comm/avg/reduce.h lib/comm/avg/node_win.h lib/comm/avg/grads.h lib/comm/avg/algo.h \
	lib/comm/avg/device_avg.h

lib_libhpctrain_a_SOURCES += lib/comm/dist.h lib/comm/agree.h lib/comm/live.h \
	lib/comm/dist.c lib/comm/replicas.c

# NCCL headers for lib/comm/avg/nccl_node.c (empty in a build without --with-nccl).
AM_CPPFLAGS += $(NCCL_CFLAGS)

# Always distributed, so a tarball can be configured --with-cuda --with-nccl.
EXTRA_DIST += lib/comm/avg/nccl_node.c lib/comm/avg/nccl_node.h

if HPCT_NCCL
lib_libhpctrain_a_SOURCES += lib/comm/avg/nccl_node.c lib/comm/avg/nccl_node.h
endif
