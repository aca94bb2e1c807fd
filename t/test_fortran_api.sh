#!/bin/sh
# test_fortran_api.sh: t/lib/fortran_api (TAP from Fortran) on one rank: every wrapper of the
# module, the layouts and defaults of its BIND(C) types against C, arrays in place,
# strings both ways, errors with ierr.
. "${top_srcdir:-.}/t/lib/fortran_lib.sh"
need_fortran
need_mpi
make_data
# hpct_walltime_remaining reads the job's end time from here (10 minutes ahead).
HPCT_JOB_END_TIME=$(($(date +%s) + 600)) mpi 1 "$builddir/t/lib/fortran_api" "$work/data/manifest.txt" \
    "$work/named/manifest.txt" "$work"
