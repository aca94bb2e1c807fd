# lib/device: the backend ops table, the cpu backend (CBLAS) and the cuda backend (cuBLAS;
# its kernels are built by kernels/kernels.mk), and the node-local NCCL piece.
lib_libhpctrain_a_SOURCES += lib/device/ops.h lib/device/ops.c lib/device/cpu.c

# CUDA/NCCL headers for lib/device/*.c (both are empty in a build without --with-cuda).
AM_CPPFLAGS += $(CUDA_CFLAGS) $(NCCL_CFLAGS)

# Always distributed, so a tarball can be configured --with-cuda.
EXTRA_DIST += lib/device/cuda.c lib/device/nccl.c lib/device/nccl.h

if HPCT_CUDA
lib_libhpctrain_a_SOURCES += lib/device/cuda.c
endif
if HPCT_NCCL
lib_libhpctrain_a_SOURCES += lib/device/nccl.c lib/device/nccl.h
endif
