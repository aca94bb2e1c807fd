dnl HPCT_CHECK_MPI: MPI_CFLAGS/MPI_LIBS from --with-mpi=DIR or the mpicc on PATH; MPIRUN.
AC_DEFUN([HPCT_CHECK_MPI], [
    AC_ARG_WITH([mpi], [AS_HELP_STRING([--with-mpi=DIR], [MPI installation prefix (default: the mpicc on PATH)])])
    AC_ARG_VAR([MPICC], [MPI C compiler wrapper used to learn MPI's flags])
    if test -n "$with_mpi" && test "$with_mpi" != yes; then
        HPCT_DEP_FLAGS([MPI], [$with_mpi], [-lmpi])
    else
        AC_PATH_PROGS([MPICC], [mpicc], [])
        test -n "$MPICC" || AC_MSG_ERROR([MPI: mpicc not found. Install the Debian packages libopenmpi-dev openmpi-bin or pass --with-mpi=DIR.])
        MPI_CFLAGS=`$MPICC --showme:compile 2>/dev/null || $MPICC -compile_info 2>/dev/null | cut -d' ' -f2-`
        MPI_LIBS=`$MPICC --showme:link 2>/dev/null || $MPICC -link_info 2>/dev/null | cut -d' ' -f2-`
    fi
    HPCT_DEP_CHECK([MPI], [mpi.h], [MPI_Init], [libopenmpi-dev])
    AC_SUBST([MPI_CFLAGS])
    AC_SUBST([MPI_LIBS])
    AC_PATH_PROGS([MPIRUN], [mpirun mpiexec], [])
])
