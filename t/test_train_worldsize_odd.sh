#!/bin/sh
# Resume at W = 3, 5 and 7 after a SIGTERM in mid-run at W = 2. Global batch 210 (divisible
# by 2, 3, 5 and 7): 9 steps an epoch, 18 in all. For each new W: a W = 2 run slowed to
# 60 ms a step gets kill -TERM on rank 1 from outside after step 4 and exits 75 with the
# checkpoint of its step; resumed at W from it, the run
#   - follows the uninterrupted run at W: every step's loss within 1e-4 relative (the steps
#     before the stop were summed at W = 2, as in t/test_train_worldsize.sh);
#   - is bit-identical (params hash) to a second resume at W from the same checkpoint that is
#     itself stopped by SIGTERM at step 14 and resumed at W again (doc/reliability.md: a
#     resumed run is bit-identical to an uninterrupted one at the same world size).
. "${top_srcdir:-.}/t/lib/train_lib.sh"
need_tool
need_mpi
make_data
echo "1..12"
TOL=1e-4 GB="--global-batch 210" STEPS=18

for W in 3 5 7; do
    train "$W" "$work/ref$W" "$work/ref$W.out" $GB
    [ $rc = 0 ] && [ "$(losses "$work/ref$W.out" | wc -l)" = $STEPS ]
    ok $? "W=$W: uninterrupted run exits 0 (got $rc) with $STEPS per-step losses"
    [ $rc = 0 ] || show "$work/ref$W.out"

    d="$work/w2to$W"
    HPCT_TEST_STEP_DELAY_MS=60 train_bg 2 "$d" "$d.stop" $GB
    wait_for_step "$d.stop" 4 && signal TERM "$d.stop" 1
    train_wait "$d.stop"
    s=$(stop_step "$d.stop")
    [ $rc = 75 ] && [ -n "$s" ] && [ "$s" -lt $STEPS ] && [ -f "$(ckpt_file "$d" "$s")" ]
    ok $? "W=2: kill -TERM of rank 1 mid-run: exit 75 (got $rc) after step ${s:-?}, its checkpoint exists"
    [ $rc = 75 ] || show "$d.stop"

    # A copy of the checkpoint directory for the second, interrupted resume.
    cp -r "$d" "$d.b"
    train "$W" "$d" "$d.resume" $GB
    h=$(params_hash "$d.resume")
    [ $rc = 0 ] && [ "$(resumed_step "$d.resume")" = "$s" ] && [ -n "$h" ] &&
        close_curves "$work/ref$W.out" "$d.stop" "$d.resume"
    ok $? "saved at W=2, resumed at W=$W from step ${s:-?}: exit $rc, loss curve within $TOL of the uninterrupted W=$W run"
    [ $rc = 0 ] || show "$d.resume"

    HPCT_TEST_RAISE_AT_STEP=14 train "$W" "$d.b" "$d.b.stop" $GB
    rc1=$rc s1=$(stop_step "$d.b.stop")
    train "$W" "$d.b" "$d.b.resume" $GB
    h2=$(params_hash "$d.b.resume")
    [ $rc1 = 75 ] && [ "$s1" = 14 ] && [ $rc = 0 ] && [ "$(resumed_step "$d.b.resume")" = 14 ] &&
        [ -n "$h2" ] && [ "$h2" = "$h" ]
    ok $? "W=$W: the same resume stopped at step 14 (exit $rc1) and resumed at W=$W (exit $rc): params hash ${h2:-none} equals ${h:-none}"
    [ $rc = 0 ] || show "$d.b.resume"
done
