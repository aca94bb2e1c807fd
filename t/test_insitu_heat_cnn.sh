#!/bin/sh
# test_insitu_heat_cnn.sh: examples/heat_cnn_insitu.c, a 2-D heat solver training a
# convolutional surrogate of its step in situ (hpct_insitu_open from
# examples/heat_cnn_insitu.conf, a field split into row blocks with halos):
#  - the field after 300 steps is the same at W = 1 and 2, and the surrogate's error falls;
#  - SIGTERM to both ranks at a random step of a W = 2 run: exit 75 with a checkpoint; that
#    checkpoint resumed at W = 2 ends bit-identical to the uninterrupted run (field, model,
#    optimizer: hpctrain ckpt diff --strict).
. "${top_srcdir:-.}/t/lib/dist_lib.sh"
PROG="$top_builddir/examples/heat_cnn_insitu"
need_mpi
plan 5
CONF="$(cd "${top_srcdir:-.}/examples" && pwd)/heat_cnn_insitu.conf"
TOOL="$top_builddir/tools/hpctrain"
STEPS=300

# heat OUT NP DIR [ARGS]: a run of STEPS steps on NP ranks, checkpoints in DIR; sets rc.
heat() {
    out=$1 np=$2 dir=$3; shift 3
    mpi "$np" -- --checkpoints "$dir" --settings "$CONF" --steps $STEPS "$@" >"$out" 2>&1
    rc=$?
}
checksum() { sed -n 's/^heat_cnn: done: [0-9]* steps, field checksum \([0-9a-f]*\)$/\1/p' "$1"; }
errors() { sed -n 's/^heat_cnn: step [0-9]* loss [^ ]* surrogate error \([^ ]*\)$/\1/p' "$1"; }

heat "$tmpdir/ref.out" 2 "$tmpdir/ref"
ref=$(checksum "$tmpdir/ref.out")
heat "$tmpdir/w1.out" 1 "$tmpdir/w1"
[ -n "$ref" ] && [ "$rc" = 0 ] && [ "$(checksum "$tmpdir/w1.out")" = "$ref" ]
ok $? "the field after $STEPS steps is the same at W = 1 and 2 (checksum ${ref:-none})" \
    "$tmpdir/ref.out"
first=$(errors "$tmpdir/ref.out" | head -n 1) last=$(errors "$tmpdir/ref.out" | tail -n 1)
[ -n "$first" ] && awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a / 2 && b < 0.2) }'
ok $? "the surrogate's error falls: $first at step 50, $last at step $STEPS" "$tmpdir/ref.out"

# SIGTERM to both ranks at a random moment after step 50 (the ranks stopped first, so both
# get it at the same step; 8 ms a step: HPCT_TEST_STEP_DELAY_MS, doc/insitu.md).
delay=$(awk 'BEGIN { srand(); printf "%.2f", rand() * 1.2 }')
HPCT_TEST_HOOKS=1 HPCT_TEST_STEP_DELAY_MS=8 heat "$tmpdir/sig.out" 2 "$tmpdir/sig" &
i=0
until grep -q '^heat_cnn: step 50 ' "$tmpdir/sig.out" 2>/dev/null || [ $i -ge 1500 ]; do
    sleep 0.02; i=$((i + 1))
done
sleep "$delay"
ranks=$(pgrep -f "^$PROG --checkpoints $tmpdir/sig " | tr '\n' ' ')
for p in $ranks; do kill -STOP "$p"; done
for p in $ranks; do kill -TERM "$p"; done
for p in $ranks; do kill -CONT "$p"; done
wait
step=$(sed -n 's/^heat_cnn: preempted after step \([0-9]*\); checkpoint written; exit 75$/\1/p' "$tmpdir/sig.out")
file=$(printf 'ckpt-%012d.h5' "${step:-0}")
[ "$(echo $ranks | wc -w)" = 2 ] && [ -n "$step" ] && [ "$step" -lt $STEPS ] &&
    [ -f "$tmpdir/sig/$file" ]
ok $? "SIGTERM to both ranks ${delay} s after step 50: stopped after step ${step:-?} with its checkpoint" \
    "$tmpdir/sig.out"
heat "$tmpdir/res.out" 2 "$tmpdir/sig"
[ "$rc" = 0 ] && grep -q "^heat_cnn: resumed at step ${step:-none} on 2 ranks\$" "$tmpdir/res.out" &&
    [ "$(checksum "$tmpdir/res.out")" = "$ref" ]
ok $? "resumed from step ${step:-?}: the field after $STEPS steps is the uninterrupted run's" \
    "$tmpdir/res.out"
"$TOOL" ckpt diff --strict "$tmpdir/ref" "$tmpdir/sig" >"$tmpdir/diff" 2>&1
ok $? "the final checkpoint (model, optimizer, RNG, field) equals the uninterrupted run's" \
    "$tmpdir/diff"
done_testing
