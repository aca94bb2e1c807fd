# Automake fragment included by Makefile.am: the Fortran module "hpctrain" (lib/fortran), the
# CMake package of the library, the Fortran examples, tests and benchmark.
# The module is built when configure found an MPI Fortran compiler with mpi_f08 (conditional
# HPCT_FORTRAN, m4/hpct_fortran.m4); the shell tests say SKIP otherwise.

# Every Fortran compile writes and reads modules in the build tree's lib/fortran (compiles
# run in the top build directory): hpctrain.mod for consumers, tapf.mod for the tests.
AM_FCFLAGS = $(FC_MODOUT)lib/fortran $(FC_MODINC)lib/fortran $(HPCT_WARN_FCFLAGS)
CLEANFILES += lib/fortran/*.$(FC_MODEXT)
AM_TESTS_ENVIRONMENT += HPCT_FORTRAN='$(HPCT_FORTRAN_BUILT)'; export HPCT_FORTRAN;
EXTRA_DIST += lib/fortran/fortran.mk doc/fortran.md

if HPCT_FORTRAN
HPCT_FORTRAN_BUILT = yes
# The module's objects go into libhpctrain.a itself: one library for C and Fortran consumers
# (a C program pulls none of them in; a Fortran one gets libgfortran from its compiler).
lib_libhpctrain_a_SOURCES += lib/fortran/hpctrain.F90 lib/fortran/shim.c lib/fortran/shim.h

# The .mod is a by-product of compiling hpctrain.F90; anything that says "use hpctrain"
# depends on it (below), so parallel and VPATH builds compile the module first. If the .mod
# went missing while the object stayed, remake the object.
HPCT_FMOD = lib/fortran/hpctrain.$(FC_MODEXT)
$(HPCT_FMOD): lib/fortran/hpctrain.$(OBJEXT)
	@test -f $@ || { rm -f lib/fortran/hpctrain.$(OBJEXT); \
		$(MAKE) $(AM_MAKEFLAGS) lib/fortran/hpctrain.$(OBJEXT); }
fmod_DATA = $(HPCT_FMOD)

# ---- examples and benchmark (built, not installed) ----
noinst_PROGRAMS += examples/fortran/mlp_shards examples/fortran/byog examples/fortran/heat_insitu \
	bench/bench_fortran
examples_fortran_mlp_shards_SOURCES = examples/fortran/mlp_shards.f90
examples_fortran_mlp_shards_LDADD = $(HPCT_LIBS)
examples_fortran_byog_SOURCES = examples/fortran/byog.f90
examples_fortran_byog_LDADD = $(HPCT_LIBS)
examples_fortran_heat_insitu_SOURCES = examples/fortran/heat_insitu.f90
examples_fortran_heat_insitu_LDADD = $(HPCT_LIBS)
bench_bench_fortran_SOURCES = bench/bench_fortran.F90 bench/bench_fortran_c.c
bench_bench_fortran_LDADD = $(HPCT_LIBS)
examples/fortran/mlp_shards.$(OBJEXT) examples/fortran/byog.$(OBJEXT) \
	examples/fortran/heat_insitu.$(OBJEXT) bench/bench_fortran.$(OBJEXT): $(HPCT_FMOD)

# ---- test programs (run by the shell tests below) ----
check_LIBRARIES += t/libtapf.a
t_libtapf_a_SOURCES = t/tapf.F90
HPCT_TAPF = lib/fortran/tapf.$(FC_MODEXT)
$(HPCT_TAPF): t/tapf.$(OBJEXT)
	@test -f $@ || { rm -f t/tapf.$(OBJEXT); $(MAKE) $(AM_MAKEFLAGS) t/tapf.$(OBJEXT); }
check_PROGRAMS += t/fortran_api t/fortran_mpi t/fortran_twin t/twin_c
t_fortran_api_SOURCES = t/fortran_api.F90 t/fortran_layout.c
t_fortran_api_LDADD = t/libtapf.a $(HPCT_LIBS)
t_fortran_mpi_SOURCES = t/fortran_mpi.F90
t_fortran_mpi_LDADD = $(HPCT_LIBS)
t_fortran_twin_SOURCES = t/fortran_twin.F90
t_fortran_twin_LDADD = $(HPCT_LIBS)
t_twin_c_SOURCES = t/twin_c.c
t_twin_c_LDADD = $(HPCT_LIBS)
t/fortran_api.$(OBJEXT): $(HPCT_FMOD) $(HPCT_TAPF)
t/fortran_mpi.$(OBJEXT) t/fortran_twin.$(OBJEXT): $(HPCT_FMOD)
else
HPCT_FORTRAN_BUILT = no
endif

# ---- tests: always listed; each says SKIP in a build without the module ----
# (t/test_fortran_install.sh and t/test_module.sh take turns at "make install" with a lock.)
DISTCLEANFILES += .hpct-install.lock
FORTRAN_TESTS = t/test_fortran_bindings.sh t/test_fortran_api.sh t/test_fortran_mpi.sh \
	t/test_fortran_twin.sh t/test_fortran_examples.sh t/test_fortran_install.sh
TESTS += $(FORTRAN_TESTS)
EXTRA_DIST += $(FORTRAN_TESTS) t/fortran_lib.sh t/fortran_consumer/CMakeLists.txt

# ---- CMake package: $(libdir)/cmake/hpctrain/hpctrainConfig.cmake (+ ConfigVersion) ----
# find_package(hpctrain) gives hpctrain::hpctrain (C) and, when the module is built,
# hpctrain::fortran. Made from the templates with make's fully expanded directories and
# remade by every "make" and "make install" (phony), as the modulefiles are (slurm/slurm.mk).
cmakeconfigdir = $(libdir)/cmake/hpctrain
hpct_cmake_files = lib/fortran/hpctrainConfig.cmake lib/fortran/hpctrainConfigVersion.cmake
cmakeconfig_DATA = $(hpct_cmake_files)
CLEANFILES += $(hpct_cmake_files)
EXTRA_DIST += lib/fortran/hpctrainConfig.cmake.in lib/fortran/hpctrainConfigVersion.cmake.in
.PHONY: $(hpct_cmake_files)

hpct_cmake_subst = sed -e 's|@VERSION[@]|$(VERSION)|g' -e 's|@prefix[@]|$(prefix)|g' \
	-e 's|@includedir[@]|$(includedir)|g' -e 's|@libdir[@]|$(libdir)|g' \
	-e 's|@fmoddir[@]|$(fmoddir)|g' -e 's|@FC_MODEXT[@]|$(FC_MODEXT)|g' \
	-e 's|@HPCT_FORTRAN[@]|$(HPCT_FORTRAN_BUILT)|g' \
	-e 's|@HPCT_PRIVATE_LIBS[@]|$(HPCT_PRIVATE_LIBS)|g' \
	-e 's|@HPCT_FC_MPI_FLAGS[@]|$(HPCT_FC_MPI_FLAGS)|g' \
	-e 's|@HPCT_FC_MPI_LIBS[@]|$(HPCT_FC_MPI_LIBS)|g'

lib/fortran/hpctrainConfig.cmake: $(srcdir)/lib/fortran/hpctrainConfig.cmake.in
	$(AM_V_GEN)$(MKDIR_P) lib/fortran && \
	$(hpct_cmake_subst) $(srcdir)/lib/fortran/hpctrainConfig.cmake.in > $@.tmp && mv $@.tmp $@

lib/fortran/hpctrainConfigVersion.cmake: $(srcdir)/lib/fortran/hpctrainConfigVersion.cmake.in
	$(AM_V_GEN)$(MKDIR_P) lib/fortran && \
	$(hpct_cmake_subst) $(srcdir)/lib/fortran/hpctrainConfigVersion.cmake.in > $@.tmp && mv $@.tmp $@
