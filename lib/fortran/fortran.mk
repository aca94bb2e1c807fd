# lib/fortran: the Fortran module "hpctrain" and the library's CMake package. The module is
# built when configure found an MPI Fortran compiler with mpi_f08 (conditional HPCT_FORTRAN,
# m4/hpct_fortran.m4); the Fortran examples, benchmark and tests are in their own folders'
# fragments and use HPCT_FMOD, defined here.

# Every Fortran compile writes and reads modules in the build tree's lib/fortran (compiles
# run in the top build directory): hpctrain.mod for consumers, tapf.mod for the tests.
# hpctrain.F90 includes hpctrain_version.inc, which configure writes into the build tree's
# lib/fortran (from its .in, with AC_INIT's version).
AM_FCFLAGS = $(FC_MODOUT)lib/fortran $(FC_MODINC)lib/fortran -Ilib/fortran $(HPCT_WARN_FCFLAGS)
CLEANFILES += lib/fortran/*.$(FC_MODEXT)

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
lib/fortran/hpctrain.$(OBJEXT): lib/fortran/hpctrain_version.inc

else
HPCT_FORTRAN_BUILT = no
endif

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
