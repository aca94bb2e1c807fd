# lib/device: the backend ops table, the cpu backend (CBLAS) and the cuda backend (cuBLAS;
# its kernels are built by kernels/kernels.mk).
lib_libhpctrain_a_SOURCES += lib/device/ops.h lib/device/ops.c lib/device/cpu.c

# CUDA headers for lib/device/*.c (empty in a build without --with-cuda).
AM_CPPFLAGS += $(CUDA_CFLAGS)

# Always distributed, so a tarball can be configured --with-cuda.
EXTRA_DIST += lib/device/cuda.c

if HPCT_CUDA
lib_libhpctrain_a_SOURCES += lib/device/cuda.c
endif
