dnl hpct_fortran.m4: configure checks of the Fortran module (lib/fortran), one macro.
dnl
dnl HPCT_CHECK_FORTRAN: --enable-fortran (default: check) / --disable-fortran.
dnl Finds the MPI Fortran wrapper (MPIFC: mpifort or mpif90; FC defaults to it), proves that
dnl "use mpi_f08" compiles, learns the module flags, and sets:
dnl   AM_CONDITIONAL HPCT_FORTRAN     the module, its tests and examples are built
dnl   hpct_fortran_summary            one line for the configure summary
dnl   FC_MODINC, FC_MODOUT, FC_MODEXT module search flag, module output flag, .mod extension
dnl   fmoddir                         where "make install" puts hpctrain.mod (--with-fmoddir)
dnl   HPCT_FC_MPI_FLAGS, HPCT_FC_MPI_LIBS  the wrapper's own compile and link flags, for
dnl                                   consumers that build without it (CMake's hpctrain::fortran)
dnl   HPCT_PC_FMOD_CFLAGS             -I${fmoddir} for hpctrain.pc, empty without the module
dnl   HPCT_WARN_FCFLAGS               warning flags for the Fortran sources (gfortran: -Wall)
dnl   HPCT_OPENACC_FCFLAGS            the compiler's OpenACC flag (-fopenacc, -acc) or empty
dnl --enable-fortran (explicitly) turns "not found" into an error.

dnl _HPCT_FC_PROBE: the options, the compiler to try (FC, else MPIFC), and whether it compiles at
dnl all (AC_PROG_FC stops configure when it cannot; hpct_fortran=probe when it can).
AC_DEFUN([_HPCT_FC_PROBE], [
AC_ARG_ENABLE([fortran],
    [AS_HELP_STRING([--disable-fortran],
        [do not build the Fortran module "hpctrain" (default: build it when an MPI Fortran compiler with mpi_f08 is found)])],
    [], [enable_fortran=check])
AC_ARG_WITH([fmoddir],
    [AS_HELP_STRING([--with-fmoddir=DIR], [install the Fortran .mod file in DIR (default: LIBDIR/hpctrain/fortran)])],
    [fmoddir=$withval], [fmoddir='${libdir}/hpctrain/fortran'])
AC_ARG_VAR([MPIFC], [MPI Fortran compiler wrapper (default: mpifort or mpif90 on PATH); FC defaults to it])
AC_SUBST([fmoddir])
hpct_fortran=no
hpct_fortran_why="disabled by --disable-fortran"
AS_IF([test "x$enable_fortran" != xno], [
    AS_IF([test -z "$MPIFC"], [AC_PATH_PROGS([MPIFC], [mpifort mpif90], [])])
    test -n "$FC" || FC=$MPIFC
    hpct_fortran_why="no MPI Fortran compiler (mpifort/mpif90; Debian packages gfortran libopenmpi-dev)"
    AS_IF([test -n "$FC"], [
        AC_MSG_CHECKING([whether $FC compiles a Fortran program])
        printf 'program conftest\nend program conftest\n' > conftest_fc.f90
        AS_IF([$FC -c conftest_fc.f90 -o conftest_fc.o >&AS_MESSAGE_LOG_FD 2>&1],
            [hpct_fortran=probe; AC_MSG_RESULT([yes])],
            [AC_MSG_RESULT([no]); hpct_fortran_why="$FC cannot compile Fortran"])
        rm -f conftest_fc.f90 conftest_fc.o
    ])
])
])

dnl _HPCT_PROG_FC: AC_PROG_FC only when the probe passed (required, so that the Fortran checks
dnl below find it expanded before them and autoconf does not hoist a second, unconditional one).
AC_DEFUN([_HPCT_PROG_FC], [
AC_REQUIRE([_HPCT_FC_PROBE])
AS_IF([test "$hpct_fortran" = probe], [AC_PROG_FC([mpifort mpif90 gfortran])])
])

AC_DEFUN([HPCT_CHECK_FORTRAN], [
AC_REQUIRE([_HPCT_PROG_FC])
AS_IF([test "$hpct_fortran" = probe], [
    AC_LANG_PUSH([Fortran])
    AC_FC_SRCEXT([f90])
    AC_FC_PP_SRCEXT([F90])
    AC_FC_MODULE_FLAG([], [hpct_fortran_why="cannot find the flag that names a module directory"])
    AC_FC_MODULE_OUTPUT_FLAG([], [hpct_fortran_why="cannot find the flag that places .mod files"])
    AC_FC_MODULE_EXTENSION
    AC_MSG_CHECKING([whether $FC compiles "use mpi_f08" with type(MPI_Comm)])
    AC_COMPILE_IFELSE([AC_LANG_SOURCE([[
program conftest
use mpi_f08, only: MPI_Comm, MPI_COMM_WORLD
implicit none
type(MPI_Comm) :: comm
comm = MPI_COMM_WORLD
print *, comm%MPI_VAL
end program conftest
]])], [AC_MSG_RESULT([yes])
        test -n "$FC_MODINC" && test -n "$FC_MODOUT" && test -n "$FC_MODEXT" && hpct_fortran=yes],
        [AC_MSG_RESULT([no]); hpct_fortran_why="$FC cannot compile \"use mpi_f08\" (an MPI with the Fortran 2008 bindings is needed)"])
    AC_LANG_POP([Fortran])
])
AS_IF([test "$hpct_fortran" != yes], [
    hpct_fortran=no
    AS_IF([test "x$enable_fortran" = xyes], [AC_MSG_ERROR([Fortran: $hpct_fortran_why. Install gfortran and libopenmpi-dev, set FC/MPIFC, or pass --disable-fortran.])])
])

dnl The wrapper's own flags (Open MPI: --showme; MPICH: -compile_info/-link_info without the
dnl compiler name), so that a CMake consumer can compile "use hpctrain" with plain gfortran.
HPCT_FC_MPI_FLAGS=
HPCT_FC_MPI_LIBS=
HPCT_PC_FMOD_CFLAGS=
HPCT_WARN_FCFLAGS=
AS_IF([test "$hpct_fortran" = yes], [
    dnl Warnings: on for gfortran, and the Fortran sources build warning-free too.
    AS_IF([$FC --version 2>&1 | grep -q 'GNU Fortran'], [HPCT_WARN_FCFLAGS=-Wall])
    hpct_fc_mpi=${MPIFC:-$FC}
    HPCT_FC_MPI_FLAGS=`$hpct_fc_mpi --showme:compile 2>/dev/null || $hpct_fc_mpi -compile_info 2>/dev/null | cut -d' ' -f2-`
    HPCT_FC_MPI_LIBS=`$hpct_fc_mpi --showme:link 2>/dev/null || $hpct_fc_mpi -link_info 2>/dev/null | cut -d' ' -f2-`
    HPCT_PC_FMOD_CFLAGS='-I${fmoddir}'
    hpct_fortran_summary="yes ($FC; module hpctrain.$FC_MODEXT installed in $fmoddir)"
], [
    hpct_fortran_summary="no ($hpct_fortran_why)"
])
dnl The flag that turns OpenACC on, for t/lib/fortran_acc (doc/fortran.md's host_data recipe):
dnl gfortran's -fopenacc or NVIDIA's -acc, the first that defines _OPENACC in a program with a
dnl data region; empty when neither does (that test then skips).
HPCT_OPENACC_FCFLAGS=
AS_IF([test "$hpct_fortran" = yes], [
    AC_LANG_PUSH([Fortran])
    hpct_save_FCFLAGS=$FCFLAGS
    for hpct_acc in -fopenacc -acc; do
        FCFLAGS="$hpct_save_FCFLAGS $hpct_acc"
        AC_MSG_CHECKING([whether $FC compiles OpenACC with $hpct_acc])
        AC_LINK_IFELSE([AC_LANG_SOURCE([[
program conftest
real :: x(4)
x = 1
#ifndef _OPENACC
choke me
#endif
!$acc data copyin(x)
!$acc host_data use_device(x)
!$acc end host_data
!$acc end data
end program conftest
]])], [AC_MSG_RESULT([yes]); HPCT_OPENACC_FCFLAGS=$hpct_acc], [AC_MSG_RESULT([no])])
        test -n "$HPCT_OPENACC_FCFLAGS" && break
    done
    FCFLAGS=$hpct_save_FCFLAGS
    AC_LANG_POP([Fortran])
])
AC_SUBST([HPCT_OPENACC_FCFLAGS])
AC_SUBST([HPCT_FC_MPI_FLAGS])
AC_SUBST([HPCT_FC_MPI_LIBS])
AC_SUBST([HPCT_PC_FMOD_CFLAGS])
AC_SUBST([HPCT_WARN_FCFLAGS])
AC_SUBST([FC_MODEXT])
AC_SUBST([FC_MODINC])
AC_SUBST([FC_MODOUT])
AM_CONDITIONAL([HPCT_FORTRAN], [test "$hpct_fortran" = yes])
])
