# bench: benchmarks against named baselines (built, run by hand or by bench/run_all.sh;
# see the comment at the top of each file).
noinst_PROGRAMS += bench/bench_step bench/bench_reader bench/bench_allreduce bench/bench_train \
	bench/bench_ckpt bench/bench_insitu bench/bench_obs bench/bench_ckpt_many bench/bench_conv
bench_bench_step_LDADD = $(HPCT_LIBS)
bench_bench_reader_LDADD = $(HPCT_LIBS)
bench_bench_allreduce_SOURCES = bench/bench_allreduce.c bench/floor.c bench/floor.h
bench_bench_allreduce_LDADD = $(HPCT_LIBS)
bench_bench_train_SOURCES = bench/bench_train.c bench/floor.c bench/floor.h
bench_bench_train_LDADD = $(HPCT_LIBS)
bench_bench_ckpt_LDADD = $(HPCT_LIBS)
bench_bench_insitu_LDADD = $(HPCT_LIBS)
bench_bench_obs_LDADD = $(HPCT_LIBS)
bench_bench_ckpt_many_LDADD = $(HPCT_LIBS)
bench_bench_conv_LDADD = $(HPCT_LIBS)
EXTRA_DIST += bench/bench_util.h bench/run_all.sh bench/ddp_baseline.py bench/run_train_bench.sh \
	bench/cnn_baseline.py bench/run_cnn_bench.sh bench/blas_kernels.sh \
	bench/bench_gpu.c bench/gpu_validate.sh bench/gpu_bundle.sh bench/torch_gpu_baseline.py \
	bench/results.md
# bench/sim: the SimGrid/SMPI build and its driver (its own GNUmakefile, never part of make)
EXTRA_DIST += bench/sim/GNUmakefile bench/sim/sim_step.c bench/sim/run.sh bench/sim/platform.sh \
	bench/sim/platforms.md bench/sim/check-real-build.sh

if HPCT_CUDA
if !HPCT_CUDA_DOUBLE
noinst_PROGRAMS += bench/bench_gpu
bench_bench_gpu_LDADD = $(HPCT_LIBS)
endif
endif

if HPCT_FORTRAN
noinst_PROGRAMS += bench/bench_fortran
bench_bench_fortran_SOURCES = bench/bench_fortran.F90 bench/bench_fortran_c.c
bench_bench_fortran_LDADD = $(HPCT_LIBS)
bench/bench_fortran.$(OBJEXT): $(HPCT_FMOD)
endif
