#!/bin/sh
# The divergence guard at the default settings (issue 37): it watches every step's loss (the
# mean over ranks), not the progress reports. A good run leaves checkpoints of steps 20, 40
# and 42; the same run resumed with lr 1e5 (--allow-config-change) must stop with exit 4
# naming the step, the loss and its limit, at log_interval 50 (the default), 10, 5 and 0,
# and write nothing: the good checkpoints stay and the newest still loads bit for bit. A fresh
# run at lr 1e3 stops too. A loss that is not finite stops the run at the step it appears
# (exit 4), at W = 1 and 2. Retention keeps the newest checkpoint known good (its next step's
# loss was within the limit), even with checkpoint_keep = 1, when a checkpoint is written at
# the step before the loss rises, or by a preemption signal while the loss is above it.
. "${top_srcdir:-.}/t/lib/train_lib.sh"
need_tool
make_data
plan 13

# The default log_interval (50) and checkpoints every 20 steps.
sed '/^log_interval/d' "$work/train.conf" >"$work/conf.tmp"
echo "checkpoint_every_steps = 20" >>"$work/conf.tmp"
mv "$work/conf.tmp" "$work/train.conf"
# ckpts DIR: the steps of DIR's checkpoint files, on one line.
ckpts() { ls "$1" | sed -n 's/^ckpt-0*\([0-9][0-9]*\)\(-keep\)\{0,1\}\.h5$/\1/p' | sort -n | tr '\n' ' ' | sed 's/ $//'; }
latest_of() { head -n 1 "$1/latest" 2>/dev/null; }
STOPPED="training diverged after step [0-9]*: its loss [^ ]* (mean over ranks) is above its limit [^ ]*"

train 1 "$work/good" "$work/good.out" --epochs 1
good_hash=$(params_hash "$work/good.out")
[ $rc = 0 ] && [ "$(ckpts "$work/good")" = "20 40 42" ] && [ -n "$good_hash" ]
ok $? "a good run of 42 steps: exit $rc, checkpoints $(ckpts "$work/good")"

# 2-5: lr 1e5 after the good run, at each log_interval (default 50, and 10, 5, 0).
for li in default 10 5 0; do
    rm -rf "$work/dv"
    cp -r "$work/good" "$work/dv"
    opt=""
    [ $li = default ] || opt="--log-interval $li"
    train 1 "$work/dv" "$work/dv.out" --epochs 5 --lr 1e5 --allow-config-change $opt
    [ $rc = 4 ] && grep -q "$STOPPED" "$work/dv.out" &&
        [ "$(ckpts "$work/dv")" = "20 40 42" ] && [ "$(latest_of "$work/dv")" = ckpt-000000000042.h5 ]
    ok $? "lr 1e5 resumed from step 42, log_interval $li: exit $rc, checkpoints $(ckpts "$work/dv") (want 20 40 42)"
    [ $rc = 4 ] || show "$work/dv.out" 3
done
grep "training diverged" "$work/dv.out" | sed 's/^/#   /'

train 1 "$work/dv" "$work/load.out" --epochs 1
h=$(params_hash "$work/load.out")
[ $rc = 0 ] && grep -q "^hpctrain: nothing to train: the checkpoint of step 42" "$work/load.out" &&
    [ "$h" = "$good_hash" ] && "$TOOL" ckpt verify --all "$work/dv" >/dev/null 2>&1
ok $? "after it the checkpoint of step 42 loads, params hash ${h:-none} is the good run's ($good_hash); all verify"

train 1 "$work/fresh" "$work/fresh.out" --lr 1e3
[ $rc = 4 ] && grep -q "$STOPPED" "$work/fresh.out" && [ -z "$(ckpts "$work/fresh")" ]
ok $? "a fresh run at lr 1e3: exit $rc, no checkpoint written ($(ckpts "$work/fresh"))"
show "$work/fresh.out" 1

# 8-10: a loss that is not finite (relu, lr 1e5: the loss overflows), with divergence_reports
# 1000 so that only the non-finite loss can stop the run. Step K is the one after the last
# progress line; without the guard the same run fails at the same place as before (exit 3).
NAN="--activation relu --lr 1e5 --divergence-reports 1000 --log-interval 1"
train 1 "$work/nan" "$work/nan.out" $NAN
last=$(losses "$work/nan.out" | tail -n 1 | cut -d' ' -f1)
k=$((${last:-0} + 1))
[ $rc = 4 ] && [ "$last" -gt 1 ] && [ -z "$(ckpts "$work/nan")" ] &&
    grep -q "training diverged at step $k: .*the loss is -\{0,1\}nan" "$work/nan.out"
ok $? "a NaN loss at step $k: exit $rc, the run stops at that step, nothing written"
show "$work/nan.out" 1
train 1 "$work/nan0" "$work/nan0.out" $NAN --divergence-factor 0
last0=$(losses "$work/nan0.out" | tail -n 1 | cut -d' ' -f1)
[ $rc = 3 ] && [ "$last0" = "$last" ] && grep -q "non-finite value" "$work/nan0.out"
ok $? "the same with the guard off: fails at the same step ($((${last0:-0} + 1))) as non-finite, exit $rc"
if command -v "$MPIRUN" >/dev/null 2>&1; then
    train 2 "$work/nan2" "$work/nan2.out" $NAN
    n=$(grep -c "training diverged at step $k: .*the loss is -\{0,1\}nan" "$work/nan2.out")
    [ $rc = 4 ] && [ "$n" = 1 ] && [ -z "$(ckpts "$work/nan2")" ]
    ok $? "W=2: every rank stops at step $k, the error printed once (got $n), exit $rc"
    show "$work/nan2.out" 2
else
    skip 1 "no mpirun (configure found none)"
fi

# 11: a checkpoint at every step and checkpoint_keep = 1: the one of step 43 holds the state
# after the first update at lr 1e5; the loss of step 44 (of that state) is above the limit,
# so step 42 stays the newest known good and is kept beside it.
rm -rf "$work/lag"
cp -r "$work/good" "$work/lag"
train 1 "$work/lag" "$work/lag.out" --epochs 5 --lr 1e5 --allow-config-change \
    --checkpoint-every-steps 1 --checkpoint-keep 1
[ $rc = 4 ] && [ "$(ckpts "$work/lag")" = "42 43" ] &&
    grep -q "the last good checkpoint is of step 42" "$work/lag.out"
ok $? "checkpoint_keep 1, a checkpoint at every step: exit $rc, checkpoints $(ckpts "$work/lag") (want 42 43)"
show "$work/lag.out" 1

# 12: SIGTERM at step 45 while the loss is above its limit: the stop writes step 45 (the job
# is requeued), and retention with checkpoint_keep = 1 keeps step 42 beside it.
rm -rf "$work/sig"
cp -r "$work/good" "$work/sig"
HPCT_TEST_RAISE_AT_STEP=45 train 1 "$work/sig" "$work/sig.out" --epochs 5 --lr 1e5 \
    --allow-config-change --checkpoint-keep 1 --divergence-reports 1000 --log-interval 1
[ $rc = 75 ] && [ "$(ckpts "$work/sig")" = "42 45" ]
ok $? "SIGTERM at step 45 above the limit, checkpoint_keep 1: exit $rc, checkpoints $(ckpts "$work/sig") (want 42 45)"

# 13: the reporter's run at 2 ranks: every rank stops, the error printed once.
if command -v "$MPIRUN" >/dev/null 2>&1; then
    rm -rf "$work/dv2"
    cp -r "$work/good" "$work/dv2"
    train 2 "$work/dv2" "$work/dv2.out" --epochs 5 --lr 1e5 --allow-config-change
    n=$(grep -c "$STOPPED" "$work/dv2.out")
    [ $rc = 4 ] && [ "$n" = 1 ] && [ "$(ckpts "$work/dv2")" = "20 40 42" ]
    ok $? "W=2, lr 1e5 from step 42: exit $rc, printed once (got $n), checkpoints $(ckpts "$work/dv2")"
    show "$work/dv2.out" 1
else
    skip 1 "no mpirun (configure found none)"
fi
done_testing
