#!/bin/sh
# A torn or corrupt newest checkpoint: a run stopped at step 50 leaves checkpoints of steps
# 40 and 50 (checkpoint_every_steps = 20). A flipped byte inside /params/dense0.weight of the
# newest, or the newest cut to half its size, is rejected with a message naming the file
# (and, for the flipped byte, the dataset); the run resumes from step 40 and ends with the
# uninterrupted run's parameters (bit-identical).
. "${top_srcdir:-.}/t/lib/train_lib.sh"
need_tool
make_data
echo "1..9"
CK="--checkpoint-every-steps 20 --checkpoint-keep 3"

train 1 "$work/ref" "$work/ref.out"
ref=$(params_hash "$work/ref.out")
[ $rc = 0 ] && [ -n "$ref" ]; ok $? "uninterrupted run exits 0 (params hash $ref)"

HPCT_TEST_RAISE_AT_STEP=50 train 1 "$work/base" "$work/base.out" $CK
new=$(ckpt_file "$work/base" 50)
[ $rc = 75 ] && [ -f "$new" ] && [ -f "$(ckpt_file "$work/base" 40)" ]
ok $? "a run stopped after step 50 (exit $rc) leaves checkpoints of steps 40 and 50"

# resume_past DIR WHAT PATTERN: resume in DIR, whose newest checkpoint is WHAT.
resume_past() {
    HPCT_LOG_LEVEL=2 train 1 "$1" "$1.out" $CK
    grep -q "^hpctrain: skipped 1 corrupt or torn checkpoint" "$1.out" &&
        grep "rejected" "$1.out" | grep -q -- "$3"
    ok $? "$2: the tool says it skipped it, the warning names it ($(grep -m1 rejected "$1.out" | cut -c1-160))"
    h=$(params_hash "$1.out")
    [ $rc = 0 ] && [ "$(resumed_step "$1.out")" = 40 ] && [ "$h" = "$ref" ]
    ok $? "$2: resumed from step 40, exit $rc, params hash ${h:-none} equals the uninterrupted run's"
    [ $rc = 0 ] || show "$1.out"
}

cp -r "$work/base" "$work/flip"
f=$(ckpt_file "$work/flip" 50)
off=$(h5dump -p -H -d /params/dense0.weight "$f" 2>/dev/null | sed -n 's/^ *OFFSET \([0-9]*\)$/\1/p')
if [ -n "$off" ]; then
    at=$((off + 100))
    byte=$(od -An -tu1 -j $at -N1 "$f" | tr -d ' ')
    printf "$(printf '\\%03o' $(((byte + 1) % 256)))" | dd of="$f" bs=1 seek=$at conv=notrunc 2>/dev/null
    cp -r "$work/flip" "$work/flip0"
    resume_past "$work/flip" "one byte flipped in /params/dense0.weight of step 50" "ckpt-000000000050.h5.*dense0.weight"
    # At the default log level: one line on stdout naming the file and the reason.
    train 1 "$work/flip0" "$work/flip0.out" $CK
    [ $rc = 0 ] && [ "$(grep -c "^hpctrain: skipped 1 corrupt or torn checkpoint(s): checkpoint $work/flip0/ckpt-000000000050.h5: dataset params/dense0.weight fails its checksum" "$work/flip0.out")" = 1 ]
    ok $? "default log level: one line names the skipped file and why ($(grep -m1 '^hpctrain: skipped' "$work/flip0.out" | cut -c1-160))" "$work/flip0.out"
else
    skip 1 "no h5dump (Debian package hdf5-tools) to find the dataset's offset"
    skip 2 "no h5dump"
fi

cp -r "$work/base" "$work/cut"
f=$(ckpt_file "$work/cut" 50)
truncate -s $(($(wc -c <"$f") / 2)) "$f"
resume_past "$work/cut" "the checkpoint of step 50 cut to half its size" "ckpt-000000000050.h5"

# Every checkpoint corrupt: never a silent fresh start over them (issue 14). The run stops
# with exit 3 naming the directory, each file is set aside as NAME.rejected (nothing of them
# is overwritten or deleted), and the next run starts afresh.
cp -r "$work/base" "$work/all"
for f in "$work/all"/ckpt-*.h5; do truncate -s 100 "$f"; done
n=$(ls "$work/all" | grep -c '^ckpt-.*\.h5$')
train 1 "$work/all" "$work/all.out" $CK
[ $rc = 3 ] && grep -q "every checkpoint in $work/all failed verification, nothing was loaded" "$work/all.out" &&
    [ "$(ls "$work/all" | grep -c '^ckpt-.*\.h5\.rejected$')" = "$n" ] &&
    [ "$(ls "$work/all" | grep -c '^ckpt-.*\.h5$')" = 0 ]
ok $? "all $n checkpoints corrupt: exit $rc, named, every file set aside as .rejected" "$work/all.out"
train 1 "$work/all" "$work/all2.out" $CK
[ $rc = 0 ] && [ -z "$(resumed_step "$work/all2.out")" ] && [ "$(ls "$work/all" | grep -c '\.rejected$')" = "$n" ]
ok $? "the next run starts afresh (exit $rc) and leaves the .rejected files alone"
