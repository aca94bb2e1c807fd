dnl HPCT_CUDA_ARCH: --with-cuda-arch=LIST (default "80;90"): the GPU architectures the kernels
dnl are built for, as NVCC_ARCH_FLAGS. Each compute capability N (digits, optionally with a
dnl suffix such as 90a) gives -gencode arch=compute_N,code=sm_N (machine code, no JIT at start-up);
dnl the last one also embeds its PTX (code=compute_N) so newer GPUs can JIT it. "native" builds
dnl for the GPUs of the build machine (nvcc -arch=native). hpct_cuda_arch holds the list.
AC_DEFUN([HPCT_CUDA_ARCH], [
    AC_ARG_WITH([cuda-arch], [AS_HELP_STRING([--with-cuda-arch=LIST], [GPU architectures for the CUDA kernels: compute capabilities separated by ';' or ',' (e.g. "80;90"), or native (default: 80;90)])],
        [], [with_cuda_arch="80;90"])
    hpct_cuda_arch=$with_cuda_arch
    NVCC_ARCH_FLAGS=
    case $hpct_cuda_arch in
    native) NVCC_ARCH_FLAGS="-arch=native" ;;
    yes|no|"") AC_MSG_ERROR([--with-cuda-arch needs a list such as "80;90", or native]) ;;
    *)
        hpct_last=
        for hpct_a in `echo "$hpct_cuda_arch" | tr ';,' '  '`; do
            case $hpct_a in
            @<:@1-9@:>@@<:@0-9@:>@|@<:@1-9@:>@@<:@0-9@:>@@<:@0-9@:>@|@<:@1-9@:>@@<:@0-9@:>@@<:@af@:>@|@<:@1-9@:>@@<:@0-9@:>@@<:@0-9@:>@@<:@af@:>@) ;;
            *) AC_MSG_ERROR([--with-cuda-arch: "$hpct_a" is not a compute capability such as 80 or 90a (list: $hpct_cuda_arch)]) ;;
            esac
            NVCC_ARCH_FLAGS="$NVCC_ARCH_FLAGS -gencode arch=compute_$hpct_a[,]code=sm_$hpct_a"
            hpct_last=$hpct_a
        done
        test -n "$hpct_last" || AC_MSG_ERROR([--with-cuda-arch: the list is empty])
        NVCC_ARCH_FLAGS="$NVCC_ARCH_FLAGS -gencode arch=compute_$hpct_last[,]code=compute_$hpct_last"
        ;;
    esac
    AC_SUBST([NVCC_ARCH_FLAGS])
])

dnl HPCT_CHECK_CUDA: --with-cuda[=DIR] (off unless asked): NVCC, CUDA_CFLAGS/CUDA_LIBS,
dnl HPCT_HAVE_CUDA, the HPCT_CUDA conditional and hpct_cuda=yes|no.
AC_DEFUN([HPCT_CHECK_CUDA], [
    AC_ARG_WITH([cuda], [AS_HELP_STRING([--with-cuda@<:@=DIR@:>@], [build the CUDA backend (cuBLAS + kernels/); DIR defaults to /usr/local/cuda])],
        [], [with_cuda=no])
    AC_ARG_WITH([cuda-double], [AS_HELP_STRING([--with-cuda-double], [TEST TREES ONLY: build the cuda backend and the NCCL averaging against the device double of t/double, which runs them on the CPU (no GPU, CUDA toolkit or NCCL needed); such a tree refuses make install])],
        [], [with_cuda_double=no])
    hpct_cuda=no
    hpct_cuda_double=no
    if test "$with_cuda_double" != no; then
        test "$with_cuda" = no || AC_MSG_ERROR([--with-cuda-double replaces the CUDA toolkit: drop --with-cuda])
        dnl The double's headers stand in for the toolkit's; its code is compiled into the library.
        CUDA_CFLAGS='-I$(top_srcdir)/t/double/include'
        CUDA_LIBS=
        AC_DEFINE([HPCT_HAVE_CUDA], [1], [Define to 1 to build the CUDA backend.])
        AC_DEFINE([HPCT_CUDA_DOUBLE], [1], [Define to 1 when the CUDA runtime, cuBLAS and NCCL are the test double of t/double.])
        hpct_cuda=yes
        hpct_cuda_double=yes
    elif test "$with_cuda" != no; then
        test "$with_cuda" = yes && with_cuda=/usr/local/cuda
        AC_PATH_PROG([NVCC], [nvcc], [], [$with_cuda/bin])
        test -n "$NVCC" || AC_MSG_ERROR([CUDA: no nvcc in $with_cuda/bin. Install the CUDA toolkit or pass --with-cuda=DIR.])
        dnl nvcc-compiled objects need the C++ runtime (static-init guards) when a C compiler links.
        HPCT_DEP_FLAGS([CUDA], [$with_cuda], [-lcublas -lcudart -lstdc++])
        HPCT_DEP_CHECK([CUDA], [cublas_v2.h], [cublasCreate_v2], [cuda-toolkit])
        AC_DEFINE([HPCT_HAVE_CUDA], [1], [Define to 1 to build the CUDA backend.])
        hpct_cuda=yes
    fi
    AC_ARG_VAR([NVCC], [CUDA compiler])
    AC_ARG_VAR([NVCCFLAGS], [flags for nvcc (default: -O3 -std=c++17)])
    test -n "$NVCCFLAGS" || NVCCFLAGS="-O3 -std=c++17"
    HPCT_CUDA_ARCH
    test "$hpct_cuda" = yes || { hpct_cuda_arch=; NVCC_ARCH_FLAGS=; }
    test "$hpct_cuda_double" = no || { hpct_cuda_arch="none (device double)"; NVCC_ARCH_FLAGS=; }
    AM_CONDITIONAL([HPCT_CUDA], [test "$hpct_cuda" = yes])
    AM_CONDITIONAL([HPCT_CUDA_DOUBLE], [test "$hpct_cuda_double" = yes])
    AC_SUBST([CUDA_CFLAGS])
    AC_SUBST([CUDA_LIBS])
])

dnl HPCT_CHECK_NCCL: --with-nccl[=DIR] (needs --with-cuda): NCCL_CFLAGS/NCCL_LIBS,
dnl HPCT_HAVE_NCCL, the HPCT_NCCL conditional and hpct_nccl=yes|no.
AC_DEFUN([HPCT_CHECK_NCCL], [
    AC_ARG_WITH([nccl], [AS_HELP_STRING([--with-nccl@<:@=DIR@:>@], [use NCCL inside a node (needs --with-cuda); DIR defaults to the CUDA prefix])],
        [], [with_nccl=no])
    hpct_nccl=no
    if test "$hpct_cuda_double" = yes; then
        NCCL_CFLAGS="$CUDA_CFLAGS"
        NCCL_LIBS=
        AC_DEFINE([HPCT_HAVE_NCCL], [1], [Define to 1 to use NCCL for node-local reductions.])
        hpct_nccl="yes (device double)"
    elif test "$with_nccl" != no; then
        test "$hpct_cuda" = yes || AC_MSG_ERROR([NCCL: --with-nccl needs --with-cuda.])
        test "$with_nccl" = yes && with_nccl=$with_cuda
        HPCT_DEP_FLAGS([NCCL], [$with_nccl], [-lnccl])
        NCCL_CFLAGS="$NCCL_CFLAGS $CUDA_CFLAGS"
        HPCT_DEP_CHECK([NCCL], [nccl.h], [ncclGetVersion], [libnccl-dev])
        AC_DEFINE([HPCT_HAVE_NCCL], [1], [Define to 1 to use NCCL for node-local reductions.])
        hpct_nccl=yes
    fi
    AM_CONDITIONAL([HPCT_NCCL], [test "$hpct_nccl" != no])
    AC_SUBST([NCCL_CFLAGS])
    AC_SUBST([NCCL_LIBS])
])

dnl HPCT_CHECK_CUDA_AWARE_MPI (after HPCT_CHECK_MPI and HPCT_CHECK_NCCL): with NCCL, whether
dnl the MPI can say at run time that it takes device pointers (Open MPI's mpi-ext.h and
dnl MPIX_Query_cuda_support): HPCT_HAVE_MPIX_CUDA_QUERY, and hpct_cuda_mpi for the summary
dnl (the compile-time MPIX_CUDA_AWARE_SUPPORT too). The run-time answer decides (device_avg.c);
dnl HPCT_CUDA_AWARE_MPI=0|1 overrides it.
AC_DEFUN([HPCT_CHECK_CUDA_AWARE_MPI], [
    hpct_cuda_mpi=no
    if test "$hpct_nccl" != no; then
        hpct_save_CPPFLAGS="$CPPFLAGS"; hpct_save_LIBS="$LIBS"
        CPPFLAGS="$CPPFLAGS $MPI_CFLAGS"; LIBS="$MPI_LIBS $LIBS"
        AC_MSG_CHECKING([whether MPI has MPIX_Query_cuda_support (mpi-ext.h)])
        AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>
#include <mpi-ext.h>]], [[return MPIX_Query_cuda_support();]])],
            [AC_MSG_RESULT([yes])
             AC_DEFINE([HPCT_HAVE_MPIX_CUDA_QUERY], [1],
                 [Define to 1 when mpi-ext.h declares MPIX_Query_cuda_support (CUDA-aware MPI query).])
             AC_COMPUTE_INT([hpct_cuda_mpi_built], [MPIX_CUDA_AWARE_SUPPORT],
                 [[#include <mpi.h>
#include <mpi-ext.h>]], [hpct_cuda_mpi_built=unknown])
             hpct_cuda_mpi="query at run time (MPIX_CUDA_AWARE_SUPPORT=$hpct_cuda_mpi_built)"],
            [AC_MSG_RESULT([no])
             hpct_cuda_mpi="no query: staged unless HPCT_CUDA_AWARE_MPI=1"])
        CPPFLAGS="$hpct_save_CPPFLAGS"; LIBS="$hpct_save_LIBS"
    fi
])
