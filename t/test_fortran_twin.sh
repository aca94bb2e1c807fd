#!/bin/sh
# test_fortran_twin.sh: Fortran and C give bit-identical parameters for the same seed, data
# and steps: t/lib/fortran_twin (through the module, batches as x(features, batch)) against
# t/lib/twin_c (the C API, [batch][features]), at W = 1 and 2, on batches made in memory with
# hpct_model_loss_grad + hpct_params_average_grads + hpct_optimizer_step (an MLP, and a CNN
# built with the reshape, conv, pool and upsample wrappers), and with hpct_train on sharded
# HDF5 data.
. "${top_srcdir:-.}/t/lib/fortran_lib.sh"
need_fortran
need_mpi
make_data
plan 7
for w in 1 2; do
    for mode in manual cnn train; do
        run "$work/c.$mode.$w.log" mpi "$w" "$builddir/t/lib/twin_c" "$mode" "$work/c.$mode.$w" \
            "$work/data/manifest.txt"
        rc_c=$rc
        run "$work/f.$mode.$w.log" mpi "$w" "$builddir/t/lib/fortran_twin" "$mode" "$work/f.$mode.$w" \
            "$work/data/manifest.txt"
        [ "$rc_c" = 0 ] && [ "$rc" = 0 ] && [ -s "$work/c.$mode.$w" ] &&
            cmp "$work/c.$mode.$w" "$work/f.$mode.$w" >"$work/cmp" 2>&1
        ok $? "W=$w, $mode: Fortran and C parameters are bit-identical ($(wc -c <"$work/c.$mode.$w" 2>/dev/null || echo 0) bytes)" ||
            { show "$work/c.$mode.$w.log"; show "$work/f.$mode.$w.log"; show "$work/cmp"; }
    done
done
# Not vacuous: the two ways of training reach different parameters.
! cmp -s "$work/f.manual.1" "$work/f.train.1"
ok $? "the in-memory and the hpct_train runs end with different parameters"
done_testing
