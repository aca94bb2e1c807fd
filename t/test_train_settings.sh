#!/bin/sh
# Bad settings of hpctrain train: an unknown key in the settings file (exit 2, naming the
# key, file and line), a bad value on the command line and in the environment (exit 2,
# naming the option or variable), a missing manifest file (exit 3, naming it), a global
# batch that does not split into micro-batches (exit 2), and a checkpoint saved with
# different settings (another lr): refused with exit 2 naming the checkpoint, loaded with
# --allow-config-change; a change of settings that are not hashed (cadence, logging) resumes;
# a run that fails before any checkpoint is loaded does not say "resumed from" (issue 37, 12).
. "${top_srcdir:-.}/t/lib/train_lib.sh"
need_tool
make_data
echo "1..23"

cp "$work/train.conf" "$work/typo.conf"
echo "hiden = 32" >>"$work/typo.conf"
line=$(wc -l <"$work/typo.conf")
"$TOOL" train --config "$work/typo.conf" --checkpoint-dir "$work/x" >"$work/out" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "typo.conf:$line: unknown setting 'hiden'" "$work/out"
ok $? "an unknown key in the settings file: exit $rc, names the file, line and key"
show "$work/out" 1

train 1 "$work/x" "$work/out" --lr abc
[ $rc = 2 ] && grep -q "option --lr: lr = 'abc'" "$work/out"
ok $? "--lr abc: exit $rc, names the option"
show "$work/out" 1

HPCT_MOMENTUM=2 train 1 "$work/x" "$work/out"
[ $rc = 2 ] && grep -q "environment HPCT_MOMENTUM: momentum = '2'" "$work/out"
ok $? "HPCT_MOMENTUM=2 (out of range): exit $rc, names the variable"
show "$work/out" 1

train 1 "$work/x" "$work/out" --train-manifest "$work/nothere/manifest.txt"
[ $rc = 3 ] && grep -q "nothere/manifest.txt" "$work/out"
ok $? "a missing manifest file: exit $rc, names it"
show "$work/out" 1

train 1 "$work/x" "$work/out" --global-batch 47 --micro-batches 2
[ $rc = 2 ] && grep -q "global_batch 47" "$work/out"
ok $? "global_batch 47 with micro_batches 2: exit $rc, names both"
show "$work/out" 1

HPCT_TEST_RAISE_AT_STEP=10 train 1 "$work/ck" "$work/stop.out"
train 1 "$work/ck" "$work/out" --lr 0.2
[ $rc = 2 ] && grep -q "checkpoint .*ckpt-000000000010.h5 was saved with training configuration hash" "$work/out" &&
    grep -q -- "--allow-config-change" "$work/out" && ! grep -q "^hpctrain: params hash" "$work/out"
ok $? "a checkpoint saved with lr 0.1 and a run with lr 0.2: refused, exit $rc, names the checkpoint"
show "$work/out" 2

cp -r "$work/ck" "$work/ck2"
train 1 "$work/ck2" "$work/out" --checkpoint-every-steps 7 --log-interval 5
[ $rc = 0 ] && [ "$(resumed_step "$work/out")" = 10 ]
ok $? "other checkpoint cadence and log interval (not hashed): resumes from step 10, exit $rc"

train 1 "$work/ck" "$work/out" --lr 0.2 --allow-config-change
[ $rc = 0 ] && [ "$(resumed_step "$work/out")" = 10 ] && [ -n "$(params_hash "$work/out")" ]
ok $? "with --allow-config-change it resumes from step 10 and completes: exit $rc"

train 1 "$work/x" "$work/out" --loss mse
[ $rc = 2 ] && grep -q "MSE needs float32 targets" "$work/out"
ok $? "loss = mse on integer class labels: refused before reading out of bounds, exit $rc"
show "$work/out" 1

# Strictness (issue 14): duplicate keys, a trailing comma or an empty list of widths, and
# malformed variables are refused naming what is wrong; unknown HPCT_* variables are named.
cp "$work/train.conf" "$work/dup.conf"
echo "lr = 0.2" >>"$work/dup.conf"
first=$(grep -n '^lr = ' "$work/train.conf" | head -n 1 | cut -d: -f1)
"$TOOL" train --config "$work/dup.conf" --checkpoint-dir "$work/x" >"$work/out" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "dup.conf:$(wc -l <"$work/dup.conf"): lr is set twice (first on line $first)" "$work/out"
ok $? "a key set twice in the settings file: exit $rc, names both lines"
show "$work/out" 1

bad=""
for v in "32," "" ",32" "32,,16" "32 16"; do
    train 1 "$work/x" "$work/out" --hidden "$v"
    [ $rc = 2 ] && grep -q "hidden = '$v' must be" "$work/out" || bad="$bad '$v':$rc"
done
[ -z "$bad" ]
ok $? "hidden = '32,', '', ',32', '32,,16', '32 16': each refused with exit 2${bad:+ (not:$bad)}"

HPCT_LOG_LEVEL=abc train 1 "$work/x" "$work/out"
[ $rc = 2 ] && grep -q "HPCT_LOG_LEVEL='abc' must be 0 (none) to 4 (debug)" "$work/out"
ok $? "HPCT_LOG_LEVEL=abc: exit $rc, names the variable"
show "$work/out" 1

bad=""
for v in abc inf 1e400 -5; do
    HPCT_JOB_END_TIME=$v train 1 "$work/x" "$work/out" --walltime-margin 60
    [ $rc = 2 ] && grep -q "HPCT_JOB_END_TIME is '$v': use a Unix time" "$work/out" || bad="$bad $v:$rc"
done
[ -z "$bad" ]
ok $? "HPCT_JOB_END_TIME=abc, inf, 1e400, -5 with a walltime margin: refused, exit 2${bad:+ (not:$bad)}"

HPCT_RANKS_PER_NODE=99999999999 train 1 "$work/x" "$work/out"
[ $rc = 2 ] && grep -q "HPCT_RANKS_PER_NODE is '99999999999': use an integer from 1 to" "$work/out"
ok $? "HPCT_RANKS_PER_NODE=99999999999: refused, exit $rc, naming the variable and the range"
show "$work/out" 1

HPCT_HIDEN=64 HPCT_EPOCHZ=3 train 1 "$work/x" "$work/out" --epochs 1
[ $rc = 0 ] && grep -q "warning: not hpctrain variables (a typo?): .*HPCT_HIDEN" "$work/out" &&
    grep -q "HPCT_EPOCHZ" "$work/out" && ! grep -q "HPCT_TEST_HOOKS" "$work/out"
ok $? "HPCT_HIDEN and HPCT_EPOCHZ (typos): the run goes on and names both in one warning"
show "$work/out" 2

# Errors printed once (issue 14): a settings error is the same on every rank, printed by
# rank 0 only; an error every rank agreed on (it names the failing rank) too.
if command -v "$MPIRUN" >/dev/null 2>&1; then
    train 4 "$work/x4" "$work/out" --lr abc
    n=$(grep -c "error: option --lr: lr = 'abc'" "$work/out")
    [ $rc != 0 ] && [ "$n" = 1 ]
    ok $? "W=4, --lr abc: the settings error is printed once (got $n), exit $rc"
    cp -r "$work/ck" "$work/ck4"
    train 2 "$work/ck4" "$work/out" --lr 0.3
    n=$(grep -c "training configuration hash" "$work/out")
    [ $rc = 2 ] && [ "$n" = 1 ] && grep -q "rank 0: training failed: .*rank 0 of 2 failed" "$work/out"
    ok $? "W=2, a checkpoint of other settings: the agreed error is printed once, by rank 0 (got $n), exit $rc"
    show "$work/out" 4
    train 4 "$work/x4m" "$work/out" --train-manifest "$work/none/manifest.txt"
    n=$(grep -c "opening the training data failed" "$work/out")
    [ $rc = 3 ] && [ "$n" = 1 ] && ! grep -q MPI_ABORT "$work/out" &&
        grep -q "rank 0: opening the training data failed: .*rank 0 of 4 could not open the dataset: .*$work/none/manifest.txt" "$work/out"
    ok $? "W=4, a missing manifest: the dataset open's agreed error is printed once, exit $rc"
    show "$work/out" 4
else
    skip 3 "no mpirun (configure found none)"
fi

# The divergence guard (issue 14 item 6): a run resumed from a good checkpoint with a learning
# rate that blows the loss up stops on every rank with exit 4, naming the step and the losses,
# and writes no checkpoint of the diverged state: the newest is still the good one (step 20).
# With the guard off (divergence_factor = 0) the same run goes to "done" with garbage.
HPCT_TEST_RAISE_AT_STEP=20 train 1 "$work/good" "$work/good.out"
cp -r "$work/good" "$work/good0"
train 1 "$work/good" "$work/out" --lr 1e5 --allow-config-change
latest=$(head -n 1 "$work/good/latest" 2>/dev/null)
[ $rc = 4 ] && grep -q "training diverged after step [0-9]*: its loss .* is above its limit .* (10 x its best running mean" "$work/out" &&
    [ "$latest" = "ckpt-000000000020.h5" ] && [ "$(ls "$work/good" | grep -c '^ckpt-.*\.h5$')" = 1 ]
ok $? "lr 1e5 after a good checkpoint of step 20: exit $rc, the divergence named, the newest checkpoint still step 20 ($latest)"
show "$work/out" 3
train 1 "$work/good0" "$work/out" --lr 1e5 --allow-config-change --divergence-factor 0
[ $rc = 0 ] && grep -q "^hpctrain: done: $TOTAL_STEPS steps" "$work/out"
ok $? "the same with divergence_factor = 0 (off): runs to the end, exit $rc"

# An evaluation set of the wrong width is refused before training, not after it (issue 14).
awk 'BEGIN { for (i = 0; i < 64; i++) print i % 3 * 0.1 "," i % 5 * 0.1 "," i % 7 * 0.1 "," i % 4 }' >"$work/eval3.csv"
"$TOOL" shard -o "$work/eval3" "$work/eval3.csv" >/dev/null 2>&1
train 1 "$work/e3" "$work/out" --eval-manifest "$work/eval3/manifest.txt"
[ $rc = 2 ] && grep -q "hpct_train (eval_data): the data has 3 input features per sample but the model takes 16" "$work/out" &&
    ! grep -q "^epoch " "$work/out"
ok $? "an eval manifest with 3 features for a 16-input model: refused before the first step, exit $rc"
show "$work/out" 2

# A checkpoint of another dataset size names the checkpoint and both numbers of steps per
# epoch (issue 14; issue 37: a settings error, exit 2, the file left in place).
head -n 512 "$work/data.csv" >"$work/small.csv"
"$TOOL" shard -o "$work/small" "$work/small.csv" >/dev/null 2>&1
HPCT_TEST_RAISE_AT_STEP=20 train 1 "$work/cur" "$work/cur.out"
train 1 "$work/cur" "$work/out" --train-manifest "$work/small/manifest.txt" --allow-config-change
[ $rc = 2 ] && grep -q "checkpoint $work/cur/ckpt-000000000020.h5 was saved with 42 steps per epoch (meta/steps_per_epoch), this run has 10" "$work/out" &&
    [ -f "$work/cur/ckpt-000000000020.h5" ]
ok $? "a smaller dataset (10 steps per epoch, the checkpoint's 42): refused naming the checkpoint and both, exit $rc"
show "$work/out" 2

# A failure before the resume (the metrics file cannot be opened) with no checkpoint: the
# tool used to add "resumed from the checkpoint of step 0".
train 1 "$work/nock" "$work/out" --metrics-file "$work/no/such/dir/m.jsonl"
[ $rc != 0 ] && grep -q "no/such/dir/m.jsonl" "$work/out" && ! grep -q "resumed from" "$work/out"
ok $? "a run that fails before loading anything does not claim a resume (exit $rc)"
show "$work/out" 3
