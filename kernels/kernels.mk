# kernels: CUDA sources (built with --with-cuda) and the element-wise math they share with
# the cpu backend (kernels/hpct_math.h, always used).
lib_libhpctrain_a_SOURCES += kernels/hpct_math.h kernels/conv_math.h kernels/gpu_logic.h

# Always distributed, so a tarball can be configured --with-cuda.
EXTRA_DIST += kernels/kernels.h kernels/elementwise.cu kernels/reduce.cu kernels/conv.cu

if HPCT_CUDA
if !HPCT_CUDA_DOUBLE
# nvcc compiles the kernels; -MD-style dependency tracking is replaced by explicit header deps.
SUFFIXES += .cu
.cu.o:
	$(AM_V_CC)$(NVCC) $(NVCC_ARCH_FLAGS) $(NVCCFLAGS) -I$(top_srcdir)/kernels -I$(top_srcdir)/include \
		-I$(top_builddir) $(CUDA_CFLAGS) -c -o $@ $<

lib_libhpctrain_a_SOURCES += kernels/kernels.h kernels/elementwise.cu kernels/reduce.cu \
	kernels/conv.cu
kernels/elementwise.$(OBJEXT) kernels/reduce.$(OBJEXT) kernels/conv.$(OBJEXT): \
	$(srcdir)/kernels/kernels.h $(srcdir)/kernels/hpct_math.h $(srcdir)/kernels/conv_math.h
endif
endif
