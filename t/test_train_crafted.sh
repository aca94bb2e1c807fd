#!/bin/sh
# A crafted newest checkpoint beside a good older one, end to end through `hpctrain train`
# and `hpctrain ckpt verify` (issue 37; t/test_ckpt_agree judges 783 such files through the
# library). A run stopped at step 50 leaves checkpoints of steps 40 and 50 (42 steps per
# epoch: the cursor of step 50 is epoch 1, step 8). The file of step 50 is rewritten with
# its checksums recomputed (t/lib/ckpt_make):
#  - a file that breaks the format (a data cursor contradicting its step, an optimizer step
#    other than the step, a missing or mistyped dataset, a NaN parameter, a 2^40-element
#    extra): verify exits 3 naming it; the resume skips it naming the file and the dataset,
#    moves it aside to .rejected and resumes from step 40, ending bit-identical to an
#    uninterrupted run;
#  - a sound file of other settings (global batch 7, this run's is 48): verify passes; the
#    resume stops with exit 2 naming both values, the file stays where it was.
. "${top_srcdir:-.}/t/lib/train_lib.sh"
need_tool
make_data
make="$top_builddir/t/lib/ckpt_make"
[ -x "$make" ] || { echo "1..0 # SKIP $make is not built"; exit 0; }
echo "1..23"
CK="--checkpoint-every-steps 20 --checkpoint-keep 3"

train 1 "$work/ref" "$work/ref.out"
ref=$(params_hash "$work/ref.out")
[ $rc = 0 ] && [ -n "$ref" ]; ok $? "uninterrupted run exits 0 (params hash $ref)"
HPCT_TEST_RAISE_AT_STEP=50 train 1 "$work/base" "$work/base.out" $CK
[ $rc = 75 ] && [ -f "$(ckpt_file "$work/base" 50)" ] && [ -f "$(ckpt_file "$work/base" 40)" ]
ok $? "a run stopped after step 50 (exit $rc) leaves checkpoints of steps 40 and 50"

# (The crafted file is $file: train_lib.sh's train sets $f.)
# craft FILE CRAFTS: CRAFTS is ';'-separated "COMMAND DATASET [ARGS]" of t/lib/ckpt_make.
craft() {
    echo "$2" | tr ';' '\n' | while read -r cmd rest; do
        # shellcheck disable=SC2086
        [ -z "$cmd" ] || "$make" "$cmd" "$1" $rest >/dev/null || echo "# ckpt_make $cmd failed"
    done
}

# corrupt TAG WHAT CRAFTS: step 50 crafted (craft): verify refuses it naming WHAT, the resume
# falls back to step 40 naming the file and WHAT and sets the file aside.
corrupt() {
    tag=$1 what=$2
    d="$work/$tag"
    cp -r "$work/base" "$d"
    file=$(ckpt_file "$d" 50)
    craft "$file" "$3"
    "$TOOL" ckpt verify "$file" >"$d.verify" 2>&1
    v=$?
    train 1 "$d" "$d.out" $CK
    h=$(params_hash "$d.out")
    [ $v = 3 ] && grep -q -- "$what" "$d.verify" && [ $rc = 0 ] && [ "$(resumed_step "$d.out")" = 40 ] &&
        grep "^hpctrain: skipped 1 corrupt" "$d.out" | grep -q -- "$file.*$what" &&
        [ -f "$file.rejected" ] && [ ! -f "$file.rejected.1" ] && [ "$h" = "$ref" ]
    ok $? "$tag: verify exits $v; resume skips it naming '$what' ($(grep -m1 '^hpctrain: skipped' "$d.out" | sed 's/.*ckpt-000000000050.h5: //' | cut -c1-110)), sets it aside, resumes from 40, ends bit-identical (exit $rc)"
    [ $rc = 0 ] || show "$d.out"
}

corrupt cursor-epoch-7 "meta/cursor_epoch is 7 but meta/epoch is 1" "set meta/cursor_epoch 7"
corrupt cursor-epoch-1000 "meta/cursor_epoch is 1000" "set meta/cursor_epoch 1000"
corrupt epoch-and-cursor-7 "meta/cursor_step 8) is at step 302" \
    "set meta/epoch 7; set meta/cursor_epoch 7"
corrupt cursor-step-0 "meta/step is 50 but the data cursor" "set meta/cursor_step 0"
corrupt cursor-step-1000 "meta/cursor_step is 1000, outside \[0, 42)" "set meta/cursor_step 1000"
corrupt optimizer-step "optimizer/step is 49 but meta/step is 50" "set optimizer/step 49"
corrupt slots "optimizer/slots is -1" "set optimizer/slots -1"
corrupt serial-missing "has no dataset meta/serial" "delete meta/serial"
corrupt serial-float "dataset meta/serial is float64 scalar; the format has int64 scalar" \
    "float meta/serial"
corrupt rng-3 "dataset rng/state is uint64 \[3\]" "words rng/state 3"
corrupt step-1x1 "dataset meta/step has rank 2" "shape meta/step"
corrupt params-nan "dataset params/x holds a NaN" "add params/x 1 nan"
corrupt extra-huge "dataset extra/junk claims 1099511627776 elements" "add extra/junk huge 0"

# A sound checkpoint of another global batch: a settings error naming both, nothing moved.
cp -r "$work/base" "$work/batch"
file=$(ckpt_file "$work/batch" 50)
"$make" set "$file" meta/global_batch 7 >/dev/null
"$TOOL" ckpt verify "$file" >"$work/batch.verify" 2>&1
v=$?
train 1 "$work/batch" "$work/batch.out" $CK
[ $v = 0 ] && [ $rc = 2 ] &&
    grep -q "checkpoint $file was saved with global batch 7 (meta/global_batch), this run uses 48" "$work/batch.out" &&
    [ -f "$file" ] && [ ! -f "$file.rejected" ] && [ -z "$(resumed_step "$work/batch.out")" ]
ok $? "global_batch 7: verify passes (exit $v), the resume stops with exit $rc naming 7 and 48, the file stays"
show "$work/batch.out" 2

# ... and another number of steps per epoch with a cursor that fits it (a sound file of
# another data set): the same.
cp -r "$work/base" "$work/spe"
file=$(ckpt_file "$work/spe" 50)
craft "$file" "set meta/steps_per_epoch 25; set meta/epoch 2; set meta/cursor_epoch 2; set meta/cursor_step 0"
"$TOOL" ckpt verify "$file" >"$work/spe.verify" 2>&1
v=$?
train 1 "$work/spe" "$work/spe.out" $CK
[ $v = 0 ] && [ $rc = 2 ] &&
    grep -q "checkpoint $file was saved with 25 steps per epoch (meta/steps_per_epoch), this run has 42" "$work/spe.out" &&
    [ -f "$file" ] && [ ! -f "$file.rejected" ]
ok $? "25 steps per epoch with a cursor that fits: verify passes (exit $v), the resume stops with exit $rc naming 25 and 42"

# Every file checked by the same validator on the way in: the good directory verifies, and
# resuming from it is the uninterrupted run.
"$TOOL" ckpt verify --all "$work/base" >"$work/base.verify" 2>&1
[ $? = 0 ] && [ "$(grep -c ': ok (step' "$work/base.verify")" = 3 ]
ok $? "the untouched directory verifies (steps 20, 40 and 50)"
cp -r "$work/base" "$work/good"
train 1 "$work/good" "$work/good.out" $CK
[ $rc = 0 ] && [ "$(resumed_step "$work/good.out")" = 50 ] && [ "$(params_hash "$work/good.out")" = "$ref" ]
ok $? "resumed from the untouched step 50: exit $rc, bit-identical to the uninterrupted run"

# A checkpoint written before /meta/steps_per_epoch existed (deleted here) still resumes;
# one whose cursor does not fit this run's epochs is a settings error, not a corrupt file.
cp -r "$work/base" "$work/old"
file=$(ckpt_file "$work/old" 50)
"$make" delete "$file" meta/steps_per_epoch >/dev/null
"$TOOL" ckpt verify "$file" >"$work/old.verify" 2>&1
v=$?
train 1 "$work/old" "$work/old.out" $CK
[ $v = 0 ] && [ $rc = 0 ] && [ "$(resumed_step "$work/old.out")" = 50 ] && [ "$(params_hash "$work/old.out")" = "$ref" ]
ok $? "no meta/steps_per_epoch (an older file): verify passes, resumes from 50, bit-identical (exit $rc)"
cp -r "$work/base" "$work/old2"
file=$(ckpt_file "$work/old2" 50)
craft "$file" "delete meta/steps_per_epoch; set meta/cursor_step 9"
train 1 "$work/old2" "$work/old2.out" $CK
[ $rc = 2 ] && grep -q "has no meta/steps_per_epoch (written before 0.2) and its data cursor does not fit this run's 42 steps per epoch" "$work/old2.out" &&
    [ -f "$file" ]
ok $? "an older file whose cursor does not fit the run's epochs: exit $rc, a settings error naming it, the file stays"
show "$work/old2.out" 1

# A good run leaves files that verify, each one recording its steps per epoch.
"$TOOL" ckpt info "$(ckpt_file "$work/good" 84)" >"$work/info" 2>&1
grep -q 'meta/steps_per_epoch = 42$' "$work/info"
ok $? "the final checkpoint records meta/steps_per_epoch = 42"
"$TOOL" ckpt verify --all "$work/good" >"$work/good.verify" 2>&1
ok $? "every checkpoint the resumed run wrote verifies"
