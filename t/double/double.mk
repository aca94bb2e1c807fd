# t/double: the device double (CUDA runtime, cuBLAS and NCCL executed on the CPU). Built into
# the library of a tree configured --with-cuda-double only, a test tree that refuses make
# install; never part of an installed library.
DOUBLE_SOURCES = t/double/double.h t/double/memory.c t/double/runtime.c t/double/cublas.c \
	t/double/kernels.c t/double/conv.c t/double/graph.c t/double/nccl.c t/double/mpi.c t/double/include/cuda_runtime.h \
	t/double/include/cublas_v2.h t/double/include/nccl.h
EXTRA_DIST += $(DOUBLE_SOURCES) t/double/double.mk

if HPCT_CUDA_DOUBLE
lib_libhpctrain_a_SOURCES += $(DOUBLE_SOURCES)

# Every install target (not only the -local hooks, which run after the others): nothing of
# such a tree reaches a prefix, with or without make -k.
install-exec-local install-data-local install-binPROGRAMS install-libLIBRARIES \
install-includeHEADERS install-pkgconfigDATA install-cmakeconfigDATA install-fmodDATA \
install-modulefileDATA install-dist_hpctslurmDATA install-man1 install-man3 install-man5: \
refuse-install-double
refuse-install-double:
	@echo "this tree is configured --with-cuda-double: its library holds the CPU device double" >&2
	@echo "of t/double and is for tests only; configure --with-cuda (or neither) to install" >&2
	@exit 1
endif
.PHONY: refuse-install-double
