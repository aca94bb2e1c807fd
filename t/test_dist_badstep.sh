#!/bin/sh
# A rank-local failure in a training step ends the step on every rank at once (deadline
# 60 s, checked within 2 s), with the same status and the failing rank named (issue 14
# item 3): a NaN input to hpct_model_loss_grad on the last rank only, and hpct_train where
# one rank's batch holds a NaN sample. Before, the other ranks waited out the deadline in
# the gradient averaging. W = 2 and W = 3.
. "${top_srcdir:-.}/t/lib/dist_lib.sh"
need_mpi
plan 2
for np in 2 3; do
    mkdir -p "$tmpdir/w$np"
    case_ok "W=$np: one rank's bad batch ends the step on every rank within 2 s, naming it" \
        timeout -s KILL 120 "$MPIRUN" --oversubscribe -np $np "$PROG" badstep "$tmpdir/w$np"
done
done_testing
