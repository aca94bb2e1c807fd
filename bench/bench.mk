# bench: benchmarks against named baselines (built, run by hand or by bench/run_all.sh;
# see the comment at the top of each file).
noinst_PROGRAMS += bench/bench_step bench/bench_reader bench/bench_allreduce bench/bench_train \
	bench/bench_ckpt
bench_bench_step_LDADD = $(HPCT_LIBS)
bench_bench_reader_LDADD = $(HPCT_LIBS)
bench_bench_allreduce_LDADD = $(HPCT_LIBS)
bench_bench_train_LDADD = $(HPCT_LIBS)
bench_bench_ckpt_LDADD = $(HPCT_LIBS)
EXTRA_DIST += bench/bench_util.h bench/run_all.sh bench/ddp_baseline.py bench/run_train_bench.sh \
	bench/bench_gpu.c

if HPCT_CUDA
noinst_PROGRAMS += bench/bench_gpu
bench_bench_gpu_LDADD = $(HPCT_LIBS)
endif
