#!/bin/sh
# test_fortran_acc.sh: t/lib/fortran_acc on one rank: the in-situ step called inside an
# OpenACC host_data use_device region (doc/fortran.md, "Arrays in device memory") ends with
# the parameters of the same steps fed host arrays. Without an accelerator the OpenACC runtime
# runs on the host, so this checks the recipe through the module, not device memory read in
# place. Skips without the module or without an OpenACC flag for the compiler.
. "${top_srcdir:-.}/t/lib/fortran_lib.sh"
need_fortran
need_mpi
"$builddir/t/lib/fortran_acc"
