dnl HPCT_CHECK_SLURM: --with-slurm (default: when libslurm-dev is installed): the job's end
dnl time for walltime checkpoints; HPCT_HAVE_SLURM and hpct_slurm=yes|no.
AC_DEFUN([HPCT_CHECK_SLURM], [
    AC_ARG_WITH([slurm], [AS_HELP_STRING([--with-slurm], [ask libslurm for the job's end time (default: when libslurm-dev is installed; HPCT_JOB_END_TIME works either way)])],
        [], [with_slurm=check])
    hpct_slurm=no
    if test "$with_slurm" != no; then
        AC_CHECK_HEADER([slurm/slurm.h], [AC_SEARCH_LIBS([slurm_get_end_time], [slurm], [hpct_slurm=yes])])
        if test "$hpct_slurm" = yes; then
            AC_DEFINE([HPCT_HAVE_SLURM], [1], [Define to 1 to ask libslurm for the job's end time.])
        elif test "$with_slurm" = yes; then
            AC_MSG_ERROR([Slurm: cannot find slurm/slurm.h and -lslurm. Install the Debian package libslurm-dev.])
        fi
    fi
])
