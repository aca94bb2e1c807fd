#!/bin/sh
# Resume at a different world size: the global batch and the sample order do not depend on
# the number of ranks, so a run saved at W = 1 (stopped at step 30) and resumed at W = 2, and
# one saved at W = 2 (stopped at step 50) and resumed at W = 1, follow the uninterrupted W = 1
# run's per-step loss curve. Tolerance: 1e-4 relative per step (fp32; only the order of the
# batch-mean and gradient sums differs between W = 1 and W = 2).
. "${top_srcdir:-.}/t/lib/train_lib.sh"
need_tool
need_mpi
make_data
echo "1..5"
TOL=1e-4

train 1 "$work/ref" "$work/ref.out"
[ $rc = 0 ] && [ "$(losses "$work/ref.out" | wc -l)" = $TOTAL_STEPS ]
ok $? "W=1: uninterrupted run exits 0 with $TOTAL_STEPS per-step losses"

# across FROM TO K: stop at W = FROM after step K, resume at W = TO.
across() {
    d="$work/w$1to$2"
    HPCT_TEST_RAISE_AT_STEP=$3 train "$1" "$d" "$d.stop"
    [ $rc = 75 ] && [ "$(stop_step "$d.stop")" = "$3" ] && [ -f "$(ckpt_file "$d" "$3")" ]
    ok $? "W=$1: stopped with exit 75 (got $rc) after step $3, checkpoint written"
    [ $rc = 75 ] || show "$d.stop"
    train "$2" "$d" "$d.resume"
    [ $rc = 0 ] && [ "$(resumed_step "$d.resume")" = "$3" ] && close_curves "$work/ref.out" "$d.stop" "$d.resume"
    ok $? "saved at W=$1, resumed at W=$2 from step $3: exit $rc, loss curve within $TOL of the W=1 run"
    [ $rc = 0 ] || show "$d.resume"
}
across 1 2 30
across 2 1 50
