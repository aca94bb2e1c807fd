# t: TAP tests run by "make check" (Automake's tap-driver): unit tests, multi-rank tests under
# $(MPIRUN), end-to-end tests of the hpctrain program, and tests on a real loopback Slurm
# cluster. A test that cannot run here prints "1..0 # SKIP reason".
LOG_DRIVER = env AM_TAP_AWK='$(AWK)' $(SHELL) $(top_srcdir)/build-aux/tap-driver.sh
SH_LOG_DRIVER = $(LOG_DRIVER)
TEST_EXTENSIONS = .sh
# Open MPI: the components it selects on one host anyway (pml ob1, btl self and vader: see
# doc/hacking.md "Tests"), named so that no job start probes the others (UCX, OFI, PSM);
# a test that sets OMPI_MCA_btl itself (the Slurm tests: self,tcp) keeps its own.
# HPCT_ALLREDUCE_ALGO: one fixed table (the window below 1 MiB, point-to-point from there, as
# the probe's own margin rule has it): every job averages on the same path in every run and
# skips hpct_init's timed probe. The probe runs where it is the subject or a part of it
# (HPCT_ALLREDUCE_ALGO=auto): t/test_dist_algo.sh, the preempt-and-resume tests (a requeued
# job probes again and resumes bit-identically) and the Slurm tests (jobs as a site runs
# them). HPCT_ALLREDUCE_ALGO=auto make check probes in every test that names no table itself.
# t/lib/exit_hold runs each rank of an mpirun job (Open MPI's fork agent); a failed rank's
# agent does what mpirun's 2 s grace does (SIGTERM to the ranks still running after 1 s, the
# end after 2 s) but leaves once every rank has ended, so mpirun runs with no grace
# (odls_base_sigkill_timeout=0) and a failing job ends when its last rank does. A test whose
# subject is mpirun's own kill sets the grace back; test_doctor, whose ranks order their own
# output, runs without the agent (doc/hacking.md, "Tests").
AM_TESTS_ENVIRONMENT = OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
	OMPI_MCA_pml=ob1 OMPI_MCA_btl="$${OMPI_MCA_btl:-self,vader}" \
	OMPI_MCA_orte_fork_agent="$${OMPI_MCA_orte_fork_agent-$(abs_top_builddir)/t/lib/exit_hold}" \
	OMPI_MCA_odls_base_sigkill_timeout="$${OMPI_MCA_odls_base_sigkill_timeout:-0}" \
	OPENBLAS_NUM_THREADS=1 MPIRUN='$(MPIRUN)' top_srcdir='$(top_srcdir)' \
	top_builddir='$(top_builddir)' HPCT_FORTRAN='$(HPCT_FORTRAN_BUILT)' HPCT_TEST_HOOKS=1 \
	HPCT_ALLREDUCE_ALGO="$${HPCT_ALLREDUCE_ALGO:-0:shm,1M:p2p}"; \
	export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM OMPI_MCA_pml OMPI_MCA_btl \
	OMPI_MCA_orte_fork_agent OMPI_MCA_odls_base_sigkill_timeout \
	OPENBLAS_NUM_THREADS MPIRUN top_srcdir top_builddir HPCT_FORTRAN HPCT_TEST_HOOKS \
	HPCT_ALLREDUCE_ALGO;

# ---- helpers -------------------------------------------------------------------
check_LIBRARIES += t/lib/libtap.a t/lib/libdatatest.a t/lib/libmpiprog.a
t_lib_libtap_a_SOURCES = t/lib/tap.c t/lib/tap.h
t_lib_libdatatest_a_SOURCES = t/lib/data_util.c t/lib/data_util.h
t_lib_libmpiprog_a_SOURCES = t/lib/mpi_prog.c t/lib/mpi_prog.h
TEST_LIBS = t/lib/libtap.a $(HPCT_LIBS)
DATA_TEST_LIBS = t/lib/libdatatest.a $(TEST_LIBS)

# ---- the house: the include rule of doc/hacking.md (.ci/check-layering) ---------
TESTS += t/test_layering.sh
EXTRA_DIST += t/test_layering.sh
# The suite's fork agent for mpirun (AM_TESTS_ENVIRONMENT above) and its test.
check_PROGRAMS += t/lib/exit_hold
TESTS += t/test_exit_hold.sh
EXTRA_DIST += t/test_exit_hold.sh

# ---- core, model, optimizers ---------------------------------------------------
C_TESTS = t/test_core t/test_gradcheck t/test_conv t/test_optim t/test_determinism t/test_spirals \
	t/test_byog t/test_errors t/test_vsum t/test_algo_pick t/test_token_partners
check_PROGRAMS += $(C_TESTS)
TESTS += $(C_TESTS)
t_test_core_LDADD = $(TEST_LIBS)
t_test_gradcheck_LDADD = $(TEST_LIBS)
t_test_conv_LDADD = $(TEST_LIBS)
t_test_optim_LDADD = $(TEST_LIBS)
t_test_determinism_LDADD = $(TEST_LIBS)
t_test_spirals_LDADD = $(TEST_LIBS)
t_test_byog_LDADD = $(TEST_LIBS)
t_test_errors_LDADD = $(TEST_LIBS)
t_test_vsum_LDADD = $(TEST_LIBS)
t_test_algo_pick_LDADD = $(TEST_LIBS)
t_test_token_partners_LDADD = $(TEST_LIBS)
# The public header alone: initializers in C99 and C++, deprecated names, API version.
TESTS += t/test_header.sh
EXTRA_DIST += t/test_header.sh

# ---- GPU: always built; they skip without CUDA/NCCL or without a device ----------
check_PROGRAMS += t/test_cuda t/test_cuda_graph t/test_nccl t/test_gpu_logic
TESTS += t/test_cuda t/test_cuda_graph t/test_nccl.sh t/test_gpu_logic t/test_gpu_train.sh
t_test_cuda_LDADD = $(TEST_LIBS)
t_test_cuda_graph_LDADD = $(TEST_LIBS)
# the CUDA backend's host-side logic (kernels/gpu_logic.h): runs on the CPU in every build
t_test_gpu_logic_LDADD = $(TEST_LIBS)
t_test_nccl_LDADD = t/lib/libmpiprog.a $(TEST_LIBS)
EXTRA_DIST += t/test_nccl.sh t/test_gpu_train.sh

# ---- sharded datasets and the shard converter ------------------------------------
DATA_C_TESTS = t/test_data t/test_data_bad t/test_shard_writer t/test_h5_quiet
check_PROGRAMS += $(DATA_C_TESTS) t/lib/data_check t/test_data_mpi
TESTS += $(DATA_C_TESTS) t/test_shard_tool.sh t/test_fuzz_manifest.sh t/test_data_mpi.sh
t_test_data_LDADD = $(DATA_TEST_LIBS)
t_test_data_bad_LDADD = $(DATA_TEST_LIBS)
t_test_shard_writer_LDADD = $(DATA_TEST_LIBS)
t_test_h5_quiet_LDADD = $(DATA_TEST_LIBS)
t_lib_data_check_LDADD = $(TEST_LIBS)
t_test_data_mpi_LDADD = $(DATA_TEST_LIBS)
EXTRA_DIST += t/test_shard_tool.sh t/test_fuzz_manifest.sh t/test_data_mpi.sh \
	t/fuzz/manifest_fuzz.c t/fuzz/corpus/fashion.txt t/fuzz/corpus/nested.txt \
	t/fuzz/corpus/crlf.txt t/fuzz/corpus/escape.txt t/fuzz/corpus/duplicate.txt

# ---- fuzzers (libFuzzer + ASan/UBSan, clang): a few seconds each in make check, from the seed
# corpora under t/fuzz/corpus-<name>/ (directories: distributed whole); long runs in
# doc/reliability.md. Each SKIPs where clang or libFuzzer is missing.
FUZZ_TESTS = t/test_fuzz_config.sh t/test_fuzz_shard.sh t/test_fuzz_ckpt.sh
# the harnesses built, kept for the next run while their sources are unchanged (t/lib/fuzz_lib.sh)
clean-local:
	-rm -rf t/fuzz-cache
TESTS += $(FUZZ_TESTS)
EXTRA_DIST += $(FUZZ_TESTS) t/lib/fuzz_lib.sh t/fuzz/fuzz_file.h t/fuzz/config_fuzz.c \
	t/fuzz/inputs_fuzz.c t/fuzz/ckpt_fuzz.c t/fuzz/corpus-config t/fuzz/corpus-idx \
	t/fuzz/corpus-npy t/fuzz/corpus-csv t/fuzz/corpus-ckpt

# ---- distributed runtime: shell drivers run t/lib/dist_prog under $(MPIRUN) -----------
check_PROGRAMS += t/lib/dist_prog t/lib/store_prog
t_lib_dist_prog_LDADD = t/lib/libmpiprog.a t/lib/libdatatest.a $(TEST_LIBS)
t_lib_store_prog_LDADD = t/lib/libmpiprog.a $(DATA_TEST_LIBS)
TESTS += t/test_data_store.sh
EXTRA_DIST += t/test_data_store.sh
DIST_TESTS = t/test_dist_algo.sh t/test_dist_grads.sh t/test_dist_topology.sh \
	t/test_dist_allreduce.sh t/test_dist_replicas.sh t/test_dist_curve.sh t/test_dist_hang.sh \
	t/test_dist_nodewin.sh t/test_dist_opfail.sh t/test_dist_badstep.sh t/test_dist_thread.sh \
	t/test_dist_versions.sh t/test_dist_tree.sh
TESTS += t/test_slurm_train.sh $(DIST_TESTS)
EXTRA_DIST += $(DIST_TESTS) t/lib/dist_lib.sh

# ---- checkpoints, signals, inspection --------------------------------------------
CKPT_TESTS = t/test_ckpt_format t/test_ckpt_kill t/test_ckpt_disk t/test_signals \
	t/test_ckpt_inspect t/test_ckpt_crafted t/test_ckpt_lock t/test_ckpt_mutate \
	t/test_ckpt_agree
check_PROGRAMS += $(CKPT_TESTS) t/lib/ckpt_make
TESTS += $(CKPT_TESTS) t/test_ckpt_tool.sh
# A checkpoint directory on a tmpfs that fills up, in situ and under hpctrain train (root only).
TESTS += t/test_disk_full.sh
EXTRA_DIST += t/test_disk_full.sh
t_test_ckpt_format_LDADD = $(TEST_LIBS)
t_test_ckpt_kill_LDADD = $(TEST_LIBS)
t_test_ckpt_disk_LDADD = $(TEST_LIBS)
t_test_signals_LDADD = $(TEST_LIBS)
t_test_ckpt_inspect_LDADD = $(TEST_LIBS)
t_test_ckpt_crafted_LDADD = $(TEST_LIBS)
t_test_ckpt_lock_LDADD = $(TEST_LIBS)
t_test_ckpt_mutate_LDADD = $(TEST_LIBS)
t_test_ckpt_agree_LDADD = $(TEST_LIBS)
t_lib_ckpt_make_LDADD = $(HPCT_LIBS)
EXTRA_DIST += t/lib/ckpt_util.h t/lib/ckpt_craft.h t/test_ckpt_tool.sh

# ---- the training loop and hpctrain train: real processes, real signals ------------
check_PROGRAMS += t/test_train_config
TESTS += t/test_train_config
t_test_train_config_SOURCES = t/test_train_config.c
t_test_train_config_LDADD = $(TEST_LIBS)
TRAIN_TESTS = t/test_train_preempt_w2.sh t/test_train_preempt_w1.sh t/test_train_preempt_early.sh \
	t/test_train_worldsize.sh t/test_train_corrupt.sh t/test_train_hang.sh t/test_train_sigstop.sh t/test_train_settings.sh \
	t/test_train_cadence.sh \
	t/test_train_fifo.sh t/test_train_lock.sh t/test_train_worldsize_big.sh t/test_metrics.sh \
	t/test_straggler.sh t/test_timeline.sh t/test_train_worldsize_job.sh \
	t/test_train_worldsize_node.sh t/test_train_worldsize_odd.sh t/test_blas_kernels.sh \
	t/test_train_diverge.sh t/test_env_settings.sh t/test_train_crafted.sh t/test_train_reshard.sh \
	t/test_train_cnn.sh
TESTS += t/test_slurm_requeue.sh $(TRAIN_TESTS)
EXTRA_DIST += $(TRAIN_TESTS) t/lib/train_lib.sh t/lib/train_data.sh t/lib/train_preempt.sh

# ---- hpctrain doctor: a preflight at W = 1 to 4, each planted fault named (the tmpfs cases
# need root) ----
TESTS += t/test_slurm_sbatch.sh t/test_doctor.sh
EXTRA_DIST += t/test_doctor.sh

# ---- Slurm: a private two-node cluster on loopback, and the installed modulefiles ----
# t/lib/pmix_probe prints the PMIx rank, node id, local rank and local size of each task.
# t/test_slurm_insitu.sh runs the Fortran in-situ example (SKIP in a build without the module).
check_PROGRAMS += t/lib/pmix_probe t/lib/walltime_probe
t_lib_pmix_probe_LDADD = $(PMIX_LIBS)
t_lib_walltime_probe_LDADD = $(HPCT_LIBS)
SLURM_TESTS = t/test_slurm_pmix.sh t/test_slurm_requeue.sh t/test_slurm_sbatch.sh t/test_module.sh \
	t/test_slurm_train.sh t/test_walltime_slurm.sh t/test_slurm_insitu.sh t/test_slurm_doctor.sh
# Only the short ones are listed here: make -j2 check starts the tests in TESTS order, and
# the five long ones, which mostly wait on their daemons, are each listed just before a
# program that keeps both CPUs busy (several ranks on 2 cores) so that it takes the core a
# waiting Slurm test leaves: slurm_train before dist_algo, slurm_requeue before the train
# tests (preempt_w2 first), slurm_sbatch before doctor, slurm_insitu before insitu_dist,
# slurm_doctor before fortran_examples. Side by side they had left both cores idle for much
# of 40 s.
TESTS += t/test_slurm_pmix.sh t/test_walltime_slurm.sh t/test_module.sh
EXTRA_DIST += $(SLURM_TESTS) t/slurm/cluster.sh t/slurm/setup.sh t/lib/tap.sh

# ---- the in-situ session: one process, and 2, 3 and 41 ranks under mpirun ------------
check_PROGRAMS += t/test_insitu t/lib/insitu_prog
TESTS += t/test_slurm_insitu.sh t/test_insitu t/test_insitu_dist.sh t/test_insitu_preempt_split.sh t/test_insitu_burgers.sh t/test_insitu_heat_cnn.sh
t_test_insitu_LDADD = $(TEST_LIBS)
t_lib_insitu_prog_LDADD = t/lib/libmpiprog.a $(TEST_LIBS)
EXTRA_DIST += t/test_insitu_dist.sh t/test_insitu_preempt_split.sh t/test_insitu_burgers.sh t/test_insitu_heat_cnn.sh

# ---- Fortran: the module's bindings, wrappers, MPI use, C twin, examples, install routes ----
# Always listed; each says SKIP in a build without the module. (t/test_fortran_install.sh and
# t/test_module.sh take turns at "make install" with a lock.)
DISTCLEANFILES += .hpct-install.lock
FORTRAN_TESTS = t/test_fortran_examples.sh t/test_fortran_bindings.sh t/test_fortran_api.sh \
	t/test_fortran_mpi.sh t/test_fortran_twin.sh t/test_fortran_install.sh t/test_fortran_acc.sh
TESTS += t/test_slurm_doctor.sh $(FORTRAN_TESTS)
EXTRA_DIST += $(FORTRAN_TESTS) t/lib/fortran_lib.sh t/lib/fortran_consumer/CMakeLists.txt
if HPCT_FORTRAN
check_LIBRARIES += t/lib/libtapf.a
t_lib_libtapf_a_SOURCES = t/lib/tapf.F90
HPCT_TAPF = lib/fortran/tapf.$(FC_MODEXT)
$(HPCT_TAPF): t/lib/tapf.$(OBJEXT)
	@test -f $@ || { rm -f t/lib/tapf.$(OBJEXT); $(MAKE) $(AM_MAKEFLAGS) t/lib/tapf.$(OBJEXT); }
check_PROGRAMS += t/lib/fortran_api t/lib/fortran_mpi t/lib/fortran_twin t/lib/twin_c
t_lib_fortran_api_SOURCES = t/lib/fortran_api.F90 t/lib/fortran_layout.c
t_lib_fortran_api_LDADD = t/lib/libtapf.a $(HPCT_LIBS)
t_lib_fortran_mpi_SOURCES = t/lib/fortran_mpi.F90
t_lib_fortran_mpi_LDADD = $(HPCT_LIBS)
t_lib_fortran_twin_SOURCES = t/lib/fortran_twin.F90
t_lib_fortran_twin_LDADD = $(HPCT_LIBS)
t_lib_twin_c_SOURCES = t/lib/twin_c.c
t_lib_twin_c_LDADD = $(HPCT_LIBS)
t/lib/fortran_api.$(OBJEXT): $(HPCT_FMOD) $(HPCT_TAPF)
t/lib/fortran_mpi.$(OBJEXT) t/lib/fortran_twin.$(OBJEXT): $(HPCT_FMOD)
# the OpenACC form of doc/fortran.md (HPCT_OPENACC_FCFLAGS: configure's flag, or none: a skip)
check_PROGRAMS += t/lib/fortran_acc
t_lib_fortran_acc_SOURCES = t/lib/fortran_acc.F90
t_lib_fortran_acc_FCFLAGS = $(AM_FCFLAGS) $(HPCT_OPENACC_FCFLAGS)
t_lib_fortran_acc_LDFLAGS = $(HPCT_OPENACC_FCFLAGS)
t_lib_fortran_acc_LDADD = t/lib/libtapf.a $(HPCT_LIBS)
t/lib/t_lib_fortran_acc-fortran_acc.$(OBJEXT): $(HPCT_FMOD) $(HPCT_TAPF)
endif

# ---- environment settings: the man pages agree with the registry (lib/core/tunables.c) ----
TESTS += t/test_doc_env.sh
EXTRA_DIST += t/test_doc_env.sh
# ---- the docs name every public call, exit code, option and settings key; one version ----
TESTS += t/test_doc_complete.sh
EXTRA_DIST += t/test_doc_complete.sh

# ---- the Spack recipe in spack/ agrees with configure (Spack's own checks where one is installed) ----
TESTS += t/test_spack_recipe.sh
EXTRA_DIST += t/test_spack_recipe.sh

# ---- tiers: make check runs every test; make check-fast the ones to run after each change
# (about 60 s with -j2 on an idle 2-core machine); make check-long the rest: the programs
# that take 8 s or more each there (fuzzers, Slurm daemons, several MPI jobs, signals and
# deadlines). A new test is fast until it is listed here. make list-fast-tests prints the
# fast tier (.ci/run's distcheck). The benchmarks' smoke test is not in make check: it
# belongs to bench/, and make check-bench runs it (.ci/run does, once).
LONG_TESTS = t/test_train_preempt_w2.sh t/test_dist_algo.sh t/test_dist_grads.sh \
	t/test_slurm_train.sh t/test_train_hang.sh t/test_slurm_insitu.sh t/test_fuzz_shard.sh \
	t/test_train_preempt_early.sh t/test_train_diverge.sh \
	t/test_env_settings.sh t/test_train_worldsize_odd.sh t/test_train_sigstop.sh \
	t/test_doctor.sh t/test_slurm_doctor.sh t/test_insitu_burgers.sh t/test_dist_nodewin.sh \
	t/test_train_worldsize_big.sh t/test_insitu_dist.sh t/test_data_store.sh \
	t/test_fortran_examples.sh t/test_metrics.sh t/test_train_preempt_w1.sh \
	t/test_train_settings.sh t/test_fuzz_ckpt.sh t/test_slurm_sbatch.sh \
	t/test_dist_hang.sh t/test_fortran_install.sh t/test_insitu_preempt_split.sh \
	t/test_dist_replicas.sh t/test_ckpt_mutate t/test_train_crafted.sh \
	t/test_dist_allreduce.sh t/test_slurm_requeue.sh t/test_timeline.sh t/test_shard_tool.sh \
	t/test_fuzz_config.sh t/test_disk_full.sh t/test_fortran_mpi.sh t/test_train_lock.sh \
	t/test_fuzz_manifest.sh t/test_train_cnn.sh t/test_fortran_twin.sh t/test_train_reshard.sh \
	t/test_dist_versions.sh t/test_dist_tree.sh
list-fast-tests:
	@fast=; for t in $(TESTS); do case " $(LONG_TESTS) " in *" $$t "*) ;; \
	*) fast="$$fast $$t" ;; esac; done; echo $$fast
check-fast:
	@$(MAKE) $(AM_MAKEFLAGS) check TESTS="`$(MAKE) -s list-fast-tests`"
check-long:
	@$(MAKE) $(AM_MAKEFLAGS) check TESTS="$(LONG_TESTS)"
BENCH_TESTS = t/test_bench_smoke.sh
EXTRA_DIST += $(BENCH_TESTS)
check-bench:
	@$(MAKE) $(AM_MAKEFLAGS) check TESTS="$(BENCH_TESTS)"
.PHONY: list-fast-tests check-fast check-long check-bench
