#!/bin/sh
# test_insitu_burgers.sh: examples/burgers_insitu.c, the in-situ session in its short form
# (hpct_insitu_open from examples/burgers_insitu.conf, one block-decomposed field):
#  - the field after 300 steps is the same at W = 1, 2 and 3 (the solver does not depend on
#    the split);
#  - SIGTERM to both ranks at a random step of a W = 2 run: exit 75 with a checkpoint; that
#    checkpoint resumed at W = 2 ends bit-identical to the uninterrupted run (field, model,
#    optimizer: hpctrain ckpt diff --strict), and resumed at W = 3 and 4 ends with the same
#    field (the model resumes and trains on, on other batches);
#  - settings: an unknown key ends it with hpctrain train's message and exit 2; a changed
#    learning rate on resume is refused (exit 2) unless --allow-settings-change is given.
. "${top_srcdir:-.}/t/lib/dist_lib.sh"
PROG="$top_builddir/examples/burgers_insitu"
need_mpi
plan 11
CONF="$(cd "${top_srcdir:-.}/examples" && pwd)/burgers_insitu.conf"
TOOL="$top_builddir/tools/hpctrain"
STEPS=300

# burgers OUT NP DIR [ARGS]: a run of STEPS steps on NP ranks, checkpoints in DIR; sets rc.
burgers() {
    out=$1 np=$2 dir=$3; shift 3
    mpi "$np" -- --checkpoints "$dir" --settings "$CONF" --steps $STEPS "$@" >"$out" 2>&1
    rc=$?
}
checksum() { sed -n 's/^burgers: done: [0-9]* steps, field checksum \([0-9a-f]*\)$/\1/p' "$1"; }

burgers "$tmpdir/ref.out" 2 "$tmpdir/ref"
ref=$(checksum "$tmpdir/ref.out")
burgers "$tmpdir/w1.out" 1 "$tmpdir/w1"
rc1=$rc
burgers "$tmpdir/w3.out" 3 "$tmpdir/w3"
[ -n "$ref" ] && [ "$rc1" = 0 ] && [ "$rc" = 0 ] && [ "$(checksum "$tmpdir/w1.out")" = "$ref" ] &&
    [ "$(checksum "$tmpdir/w3.out")" = "$ref" ]
ok $? "the field after $STEPS steps is the same at W = 1, 2 and 3 (checksum ${ref:-none})" ||
    cat "$tmpdir/ref.out" "$tmpdir/w1.out" "$tmpdir/w3.out" | sed 's/^/#   /'

# SIGTERM to both ranks at a random moment after step 50 (the ranks stopped first, so both
# get it at the same step; 8 ms a step: HPCT_TEST_STEP_DELAY_MS, doc/insitu.md).
delay=$(awk 'BEGIN { srand(); printf "%.2f", rand() * 1.2 }')
HPCT_TEST_HOOKS=1 HPCT_TEST_STEP_DELAY_MS=8 \
    burgers "$tmpdir/sig.out" 2 "$tmpdir/sig" --report 50 &
i=0
until grep -q '^burgers: step 50 ' "$tmpdir/sig.out" 2>/dev/null || [ $i -ge 1500 ]; do
    sleep 0.02; i=$((i + 1))
done
sleep "$delay"
ranks=$(pgrep -f "^$PROG --checkpoints $tmpdir/sig " | tr '\n' ' ')
for p in $ranks; do kill -STOP "$p"; done
for p in $ranks; do kill -TERM "$p"; done
for p in $ranks; do kill -CONT "$p"; done
wait
step=$(sed -n 's/^burgers: preempted after step \([0-9]*\); checkpoint written; exit 75$/\1/p' "$tmpdir/sig.out")
file=$(printf 'ckpt-%012d.h5' "${step:-0}")
[ "$(echo $ranks | wc -w)" = 2 ] && [ -n "$step" ] && [ "$step" -lt $STEPS ] &&
    [ -f "$tmpdir/sig/$file" ] && [ "$(grep -c '^burgers: preempted' "$tmpdir/sig.out")" = 1 ]
ok $? "SIGTERM to both ranks ${delay} s after step 50: stopped after step ${step:-?} with its checkpoint" \
    "$tmpdir/sig.out"
cp -r "$tmpdir/sig" "$tmpdir/sig3" && cp -r "$tmpdir/sig" "$tmpdir/sig4"

for w in 2 3 4; do
    dir="$tmpdir/sig"
    [ $w = 2 ] || dir="$tmpdir/sig$w"
    burgers "$tmpdir/res$w.out" $w "$dir"
    [ "$rc" = 0 ] && grep -q "^burgers: resumed at step ${step:-none} on $w ranks\$" "$tmpdir/res$w.out" &&
        [ "$(checksum "$tmpdir/res$w.out")" = "$ref" ]
    ok $? "resumed at W = $w from step ${step:-?}: the field after $STEPS steps is the uninterrupted run's" \
        "$tmpdir/res$w.out"
done
"$TOOL" ckpt diff --strict "$tmpdir/ref" "$tmpdir/sig" >"$tmpdir/diff" 2>&1
ok $? "W = 2 -> 2: the final checkpoint (model, optimizer, RNG, field) equals the uninterrupted run's" \
    "$tmpdir/diff"
# the final checkpoints of the runs resumed at W = 3 and 4 against the uninterrupted one's
for w in 3 4; do
    "$TOOL" ckpt diff --strict "$tmpdir/ref" "$tmpdir/sig$w" >"$tmpdir/diff$w" 2>&1
    d=$?
    [ $d = 1 ] && grep -q '^extras: identical (2 datasets)$' "$tmpdir/diff$w" &&
        grep -q '^parameters: DIFFER' "$tmpdir/diff$w"
    ok $? "W = 2 -> $w: the final checkpoint holds the same field (extras identical); the model trained on other batches" \
        "$tmpdir/diff$w"
done

# The settings file.
sed 's/^hidden = /hiden = /' "$CONF" >"$tmpdir/unknown.conf"
mpi 2 -- --checkpoints "$tmpdir/unk" --settings "$tmpdir/unknown.conf" >"$tmpdir/unk.out" 2>&1
rc=$?
[ $rc = 2 ] && [ "$(grep -c "^burgers: opening the session failed: .*unknown.conf:8: unknown setting 'hiden' (hpctrain train --print-config lists them)\$" "$tmpdir/unk.out")" = 1 ] &&
    [ ! -e "$tmpdir/unk" ]
ok $? "an unknown key: hpctrain train's message once, exit 2, nothing written (exit $rc)" "$tmpdir/unk.out"
sed 's/^lr = .*/lr = 1e-3/' "$CONF" >"$tmpdir/changed.conf"
mpi 2 -- --checkpoints "$tmpdir/ref" --settings "$tmpdir/changed.conf" --steps $STEPS >"$tmpdir/ch.out" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "^burgers: starting failed: .*training configuration hash .*HPCT_INSITU_ALLOW_SETTINGS_CHANGE" "$tmpdir/ch.out"
ok $? "a changed learning rate on resume is refused at start, exit 2 (exit $rc)" "$tmpdir/ch.out"
mpi 2 -- --checkpoints "$tmpdir/ref" --settings "$tmpdir/changed.conf" --steps $((STEPS + 20)) \
    --allow-settings-change >"$tmpdir/al.out" 2>&1
rc=$?
[ $rc = 0 ] && grep -q "^burgers: resumed at step $STEPS on 2 ranks\$" "$tmpdir/al.out" &&
    grep -q "^burgers: done: $((STEPS + 20)) steps" "$tmpdir/al.out"
ok $? "with --allow-settings-change it resumes and trains on (exit $rc)" "$tmpdir/al.out"
done_testing
