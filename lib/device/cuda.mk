# Automake fragment included by Makefile.am: the CUDA backend (lib/device/cuda.c, kernels/*.cu),
# the node-local NCCL piece (lib/device/nccl.c), the GPU test and the GPU benchmark.

# CUDA/NCCL headers for lib/device/*.c (both are empty in a build without --with-cuda).
AM_CPPFLAGS += $(CUDA_CFLAGS) $(NCCL_CFLAGS)

# Always distributed, so a tarball can be configured --with-cuda.
EXTRA_DIST += kernels/kernels.h kernels/elementwise.cu kernels/reduce.cu lib/device/cuda.c \
	lib/device/nccl.c lib/device/nccl.h bench/bench_gpu.c

if HPCT_CUDA
# nvcc compiles the kernels; -MD-style dependency tracking is replaced by explicit header deps.
SUFFIXES = .cu
.cu.o:
	$(AM_V_CC)$(NVCC) $(NVCCFLAGS) -I$(top_srcdir)/kernels -I$(top_srcdir)/include \
		-I$(top_builddir) $(CUDA_CFLAGS) -c -o $@ $<

lib_libhpctrain_a_SOURCES += lib/device/cuda.c kernels/kernels.h kernels/elementwise.cu \
	kernels/reduce.cu
kernels/elementwise.$(OBJEXT) kernels/reduce.$(OBJEXT): $(srcdir)/kernels/kernels.h \
	$(srcdir)/kernels/hpct_math.h

noinst_PROGRAMS += bench/bench_gpu
bench_bench_gpu_LDADD = $(HPCT_LIBS)
endif

if HPCT_NCCL
lib_libhpctrain_a_SOURCES += lib/device/nccl.c lib/device/nccl.h
endif

# The GPU test is always built: it skips without CUDA or without a device.
check_PROGRAMS += t/test_cuda
TESTS += t/test_cuda
t_test_cuda_LDADD = $(TEST_LIBS)

# The NCCL allreduce under mpirun: the script skips without --with-nccl, the program without GPUs.
check_PROGRAMS += t/test_nccl
t_test_nccl_LDADD = $(TEST_LIBS)
TESTS += t/test_nccl.sh
EXTRA_DIST += t/test_nccl.sh
