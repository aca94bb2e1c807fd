#!/bin/sh
# A rank-local failure in a training step ends the step on every rank at once (deadline
# 60 s, checked within 2 s), with the same status and the failing rank named (issue 14
# item 3): a NaN input to hpct_model_loss_grad on the last rank only, and hpct_train where
# one rank's batch holds a NaN sample. Before, the other ranks waited out the deadline in
# the gradient averaging. And a SIGTERM caught on the last rank only stops hpct_train on
# every rank, after which a late SIGTERM kills no rank (the ranks that caught nothing had
# restored the default action: exit 143 instead of 75). W = 2 and W = 3.
. "${top_srcdir:-.}/t/lib/dist_lib.sh"
need_mpi
plan 4
for np in 2 3; do
    mkdir -p "$tmpdir/w$np"
    case_ok "W=$np: one rank's bad batch ends the step on every rank within 2 s, naming it" \
        timeout -s KILL 120 "$MPIRUN" --oversubscribe -np $np "$PROG" badstep "$tmpdir/w$np"
done
# A signal caught on one rank stops every rank; a late SIGTERM then kills none of them.
for np in 2 3; do
    mkdir -p "$tmpdir/late$np"
    case_ok "W=$np: SIGTERM on the last rank stops hpct_train everywhere; a late SIGTERM after uninstall is ignored on every rank" \
        timeout -s KILL 120 "$MPIRUN" --oversubscribe -np $np "$PROG" lateterm "$tmpdir/late$np"
done
done_testing
