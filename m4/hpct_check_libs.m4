dnl Required libraries found through pkg-config (or --with-X=DIR): PMIx, HDF5, CBLAS; and zlib.

dnl HPCT_CHECK_PMIX: PMIX_CFLAGS/PMIX_LIBS.
AC_DEFUN([HPCT_CHECK_PMIX], [
    HPCT_DEP_PKG([PMIX], [pmix], [pmix], [-lpmix], [libpmix-dev],
        [PMIx installation prefix (default: pkg-config pmix)])
    HPCT_DEP_CHECK([PMIX], [pmix.h], [PMIx_Init], [libpmix-dev])
])

dnl HPCT_CHECK_HDF5: HDF5_CFLAGS/HDF5_LIBS (serial HDF5 first).
AC_DEFUN([HPCT_CHECK_HDF5], [
    HPCT_DEP_PKG([HDF5], [hdf5], [hdf5-serial hdf5], [-lhdf5], [libhdf5-dev],
        [HDF5 installation prefix (default: pkg-config hdf5-serial or hdf5)])
    HPCT_DEP_CHECK([HDF5], [hdf5.h], [H5open], [libhdf5-dev])
])

dnl HPCT_CHECK_BLAS: BLAS_CFLAGS/BLAS_LIBS for CBLAS, HAVE_OPENBLAS_SET_NUM_THREADS and
dnl HAVE_OPENBLAS_GET_CORENAME and HAVE_OPENBLAS_GET_CONFIG.
AC_DEFUN([HPCT_CHECK_BLAS], [
    HPCT_DEP_PKG([BLAS], [blas], [openblas], [-lopenblas], [libopenblas-dev],
        [CBLAS (OpenBLAS) installation prefix (default: pkg-config openblas)])
    HPCT_DEP_CHECK([BLAS], [cblas.h], [cblas_sgemm], [libopenblas-dev])
    hpct_save_LIBS="$LIBS"; LIBS="$BLAS_LIBS $LIBS"
    AC_CHECK_FUNCS([openblas_set_num_threads openblas_get_corename openblas_get_config])
    LIBS="$hpct_save_LIBS"
])

dnl HPCT_CHECK_ZLIB: ZLIB_LIBS (the hpctrain shard converter reads gzip inputs).
AC_DEFUN([HPCT_CHECK_ZLIB], [
    AC_CHECK_HEADER([zlib.h], [], [AC_MSG_ERROR([zlib: cannot find zlib.h. Install the Debian package zlib1g-dev.])])
    AC_CHECK_LIB([z], [gzopen], [ZLIB_LIBS=-lz], [AC_MSG_ERROR([zlib: cannot link gzopen with -lz. Install the Debian package zlib1g-dev.])])
    AC_SUBST([ZLIB_LIBS])
])
