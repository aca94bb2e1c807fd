#!/bin/sh
# test_fortran_examples.sh: the Fortran examples run and do what they say.
#  - examples/fortran/byog: the decay fit from hand-computed gradients averaged over ranks
#    recovers its three parameters, as one process and at W = 2;
#  - examples/fortran/mlp_shards at W = 2 on sharded HDF5 data: trains to a test accuracy
#    above 0.9; stopped near the job's time limit (HPCT_JOB_END_TIME within the walltime
#    margin) and by SIGUSR1 (as Slurm's --signal sends it), it writes a checkpoint and exits
#    75; resumed, it ends with parameters bit-identical to the uninterrupted run's;
#  - examples/fortran/heat_insitu (the heat equation training a surrogate of its own step
#    in situ): the surrogate's error against the solver's next step falls; the field is the
#    same at W = 1, 2 and 3 (halo exchange); the writer checkpoints the whole field (the
#    slabs gathered: hpct_insitu_add_block) on the cadence; SIGTERM gives exit 75 and a
#    checkpoint; resumed at W = 2 it ends bit-identical, at W = 3 and 4 with the same field;
#    --help prints the usage and exits 0 without running; a relative error above 10 is
#    printed as a number, not *******; its settings file (hpct_insitu_open): an unknown key,
#    a bad value, a missing file and changed settings on resume end it with hpctrain
#    train's message and exit code 2, nothing trained.
# Runs that do not depend on each other run side by side (most of their time is job start-up,
# mpirun's pause after an exit 75 or 2, and waits); each point checks its own run's output.
. "${top_srcdir:-.}/t/lib/fortran_lib.sh"
need_fortran
need_mpi
make_data
plan 24
BYOG="$builddir/examples/fortran/byog"
MLP="$builddir/examples/fortran/mlp_shards"
HEAT="$builddir/examples/fortran/heat_insitu"
CONF="$srcdir/examples/fortran/heat_insitu.conf"
DATA="$work/data/manifest.txt"

run_bg "$work/byog1" timeout -s KILL 120 "$BYOG"
run_bg "$work/byog2" mpi 2 "$BYOG"
wait
rc_of "$work/byog1"
[ "$rc" = 0 ] && grep -q '^byog: 1 rank(s): a =  2.0000, k =  0.7000, c =  0.5000' "$work/byog1"
ok $? "byog, one process: recovers a = 2, k = 0.7, c = 0.5 (exit $rc)" || show "$work/byog1"
rc_of "$work/byog2"
[ "$rc" = 0 ] && grep -q '^byog: 2 rank(s): a =  2.0000, k =  0.7000, c =  0.5000' "$work/byog2"
ok $? "byog, W=2: the same fit from gradients averaged over the ranks (exit $rc)" || show "$work/byog2"

# mlp OUT DIR [ARGS]: mlp_shards at W = 2 for 40 epochs, checkpoints in DIR; sets rc.
mlp() {
    out=$1 dir=$2; shift 2
    run "$out" mpi 2 "$MLP" --classes 4 "$DATA" --test "$DATA" --checkpoints "$dir" --epochs 40 "$@"
    echo "$rc" >"$out.rc"
}
hash_of() { sed -n 's/^mlp_shards: done: .* params hash \([0-9A-F]*\)$/\1/p' "$1"; }

mlp "$work/ref" "$work/ck-ref" &
HPCT_JOB_END_TIME=$(($(date +%s) + 60)) mlp "$work/wall" "$work/ck-wall" &
wait
rc_of "$work/ref"
ref=$(hash_of "$work/ref")
acc=$(sed -n 's/^mlp_shards: test loss .* accuracy \([0-9.]*\) over 2048 samples$/\1/p' "$work/ref")
[ "$rc" = 0 ] && [ -n "$ref" ] && awk -v a="${acc:-0}" 'BEGIN { exit !(a > 0.9) }'
ok $? "mlp_shards W=2: 1680 steps, test accuracy ${acc:-?} > 0.9, params hash ${ref:-none}" || show "$work/ref"

rc_of "$work/wall"
[ "$rc" = 75 ] && grep -q "^mlp_shards: stopped after step 1: the job's time limit is near" "$work/wall" &&
    ls "$work/ck-wall"/ckpt-*.h5 >/dev/null 2>&1
ok $? "the job's end within the walltime margin: checkpoint after step 1 and exit 75 (got $rc)" ||
    show "$work/wall"
mlp "$work/wall2" "$work/ck-wall" & # beside the SIGUSR1 run below

# SIGUSR1 while it trains: stop both ranks (so the run cannot end first), signal, continue.
mlp "$work/sig" "$work/ck-sig" &
i=0 # poll every 20 ms for the first report (step 10), for at most 60 s
until grep -q '^epoch 1 step 10/' "$work/sig" 2>/dev/null || [ $i -ge 3000 ]; do sleep 0.02; i=$((i + 1)); done
ranks=$(pgrep -f "^$MLP --classes 4 $DATA --test $DATA --checkpoints $work/ck-sig" | tr '\n' ' ')
for p in $ranks; do kill -STOP "$p"; done
for p in $ranks; do kill -USR1 "$p"; done
for p in $ranks; do kill -CONT "$p"; done
wait
rc_of "$work/wall2"
[ "$rc" = 0 ] && grep -q '^mlp_shards: resumed from the checkpoint of step 1$' "$work/wall2"
ok $? "the requeued run resumes from step 1 (exit $rc)" || show "$work/wall2"
is "$(hash_of "$work/wall2")" "$ref" "its parameters are bit-identical to the uninterrupted run's"
rc=$(cat "$work/sig.rc")
[ "$rc" = 75 ] && [ "$(echo $ranks | wc -w)" = 2 ] &&
    grep -q '^mlp_shards: stopped by signal 10 after step [0-9]*; checkpoint written; exit 75$' "$work/sig"
ok $? "SIGUSR1 to both ranks (${ranks:-none found}): checkpoint and exit 75 (got $rc)" || show "$work/sig"
step=$(sed -n 's/^mlp_shards: stopped by signal 10 after step \([0-9]*\);.*/\1/p' "$work/sig")
mlp "$work/sig2" "$work/ck-sig"
[ "$rc" = 0 ] && grep -q "^mlp_shards: resumed from the checkpoint of step ${step:-none}\$" "$work/sig2"
ok $? "the requeued run resumes from step ${step:-?} (exit $rc)" || show "$work/sig2"
is "$(hash_of "$work/sig2")" "$ref" "its parameters are bit-identical to the uninterrupted run's"

# heat OUT DIR NP: heat_insitu (600 steps) on NP ranks, checkpoints in DIR; sets rc.
heat() {
    run "$1" mpi "$3" "$HEAT" --checkpoints "$2" --settings "$CONF"
    echo "$rc" >"$1.rc"
}
# error OUT STEP FIELD: field 11 (the rms error) or 16 (relative to the step) of the report of STEP.
error() { awk -v s="$2" '$1 == "heat:" && $2 == "step" && $3 == s { print $'"$3"' }' "$1" | tr -d ,; }
done_line() { sed -n 's/^heat: done: \(.*\)$/\1/p' "$1"; }

heat "$work/heat2" "$work/hk2" 2 &
heat "$work/heat1" "$work/hk1" 1 &
heat "$work/heat3" "$work/hk3" 3 &
wait
rc_of "$work/heat2"
a0=$(error "$work/heat2" 0 11) a1=$(error "$work/heat2" 600 11)
r0=$(error "$work/heat2" 0 16) r1=$(error "$work/heat2" 600 16)
[ "$rc" = 0 ] && awk -v a0="${a0:-0}" -v a1="${a1:-1}" -v r0="${r0:-0}" -v r1="${r1:-1}" \
    'BEGIN { exit !(a1 < a0 / 10 && r1 < r0 / 2) }'
ok $? "heat_insitu W=2: the surrogate's error against the solver falls: rms ${a0:-?} -> ${a1:-?}, relative to the step ${r0:-?} -> ${r1:-?}" ||
    show "$work/heat2"
ls "$work/hk2/ckpt-000000000500.h5" "$work/hk2/ckpt-000000000600.h5" >/dev/null 2>&1 &&
    "$builddir/tools/hpctrain" ckpt info "$work/hk2/ckpt-000000000600.h5" |
    grep -q 'float64 *4224  ok *extra/heat/u$'
ok $? "the writer saved the whole 66 x 64 field (the slabs gathered) on the cadence (step 500) and at the end (600)" ||
    ls -R "$work/hk2" | sed 's/^/#   /'
field() { done_line "$1" | sed -n 's/.*field checksum \([0-9A-F]*\)$/\1/p'; }
f2=$(field "$work/heat2")
[ -n "$f2" ] && [ "$(field "$work/heat1")" = "$f2" ] && [ "$(field "$work/heat3")" = "$f2" ]
ok $? "the field after 600 steps is the same at W = 1, 2 and 3 (checksum ${f2:-none}): the halo exchange is exact" ||
    { show "$work/heat1"; show "$work/heat3"; }

# SIGTERM to both ranks after the first report (stopped first, so the run cannot end before).
heat "$work/hsig" "$work/hks" 2 &
i=0
until grep -q '^heat: step 0 ' "$work/hsig" 2>/dev/null || [ $i -ge 3000 ]; do sleep 0.02; i=$((i + 1)); done
ranks=$(pgrep -f "^$HEAT --checkpoints $work/hks --settings" | tr '\n' ' ')
for p in $ranks; do kill -STOP "$p"; done
for p in $ranks; do kill -TERM "$p"; done
for p in $ranks; do kill -CONT "$p"; done
wait
rc=$(cat "$work/hsig.rc")
step=$(sed -n 's/^heat: preempted after step \([0-9]*\);.*/\1/p' "$work/hsig")
file=$(printf 'ckpt-%012d.h5' "${step:-0}")
[ "$rc" = 75 ] && [ -n "$step" ] && [ -f "$work/hks/$file" ]
ok $? "SIGTERM to both ranks (${ranks:-none found}): the field checkpointed at step ${step:-?}, exit 75 (got $rc)" ||
    show "$work/hsig"
cp -r "$work/hks" "$work/hks3" && cp -r "$work/hks" "$work/hks4" # resumed at W = 3 and 4 below
heat "$work/hres" "$work/hks" 2 &
heat "$work/hw3" "$work/hks3" 3 &
heat "$work/hw4" "$work/hks4" 4 &
wait
rc_of "$work/hres"
[ "$rc" = 0 ] && grep -q "^heat: resumed at step ${step:-none} " "$work/hres"
ok $? "the restarted run resumes at step ${step:-?} (exit $rc)" || show "$work/hres"
is "$(done_line "$work/hres")" "$(done_line "$work/heat2")" \
    "its final field and surrogate are bit-identical to the uninterrupted run's"
# The final checkpoints, compared by the tool: parameters, optimizer state, RNG and the
# simulation's state (the field u, t, n), bit for bit.
last=ckpt-000000000600.h5
"$builddir/tools/hpctrain" ckpt diff --strict "$work/hk2/$last" "$work/hks/$last" >"$work/diff0" 2>&1
ok $? "hpctrain ckpt diff --strict: the final checkpoint (model, optimizer, field) equals the uninterrupted run's" ||
    show "$work/diff0"
# The same checkpoint resumed on 3 and on 4 ranks: each rank takes its new slab of the field,
# which ends as the uninterrupted run's (the solver does not depend on the split; the
# surrogate's training does, as its batches do).
for w in 3 4; do
    rc_of "$work/hw$w"
    [ "$rc" = 0 ] && grep -q "^heat: resumed at step ${step:-none} " "$work/hw$w" &&
        [ "$(field "$work/hw$w")" = "$f2" ]
    ok $? "the W=2 checkpoint of step ${step:-?} resumed at W=$w: the field after 600 steps is the uninterrupted run's (checksum $(field "$work/hw$w"), exit $rc)" ||
        show "$work/hw$w"
done

# The runs below end at once (usage, 40 steps on a 4x4 grid, refused settings): together.
# --help used to be ignored (the pairs loop skipped a lone argument): the full run started.
mkdir "$work/hhelp" && run_bg "$work/hhelp.out" sh -c 'cd "$1" && shift && exec "$@"' sh \
    "$work/hhelp" timeout -s KILL 120 "$MPIRUN" --oversubscribe -np 2 "$HEAT" --help
# On a 4x4 grid the surrogate's error relative to the step passes 10 by step 40 (f7.5: *******).
run_bg "$work/hsmall" mpi 1 "$HEAT" --nx 4 --steps 40 --report 20 --checkpoints "$work/hksmall" \
    --settings "$CONF"
# The settings file: hpctrain train's message for it, exit 2, nothing trained or written.
# bad_run NAME TEXT: heat_insitu at W = 2 on a file of TEXT (NAME "missing": no file).
bad_run() {
    [ "$1" = missing ] || printf '%s\n' "$2" >"$work/$1.conf"
    run_bg "$work/$1.out" mpi 2 "$HEAT" --checkpoints "$work/hk-$1" --settings "$work/$1.conf"
}
bad_run unknown "$(sed 's/^hidden = /hiden = /' "$CONF")"
bad_run value "$(sed 's/^lr = .*/lr = fast/' "$CONF")"
bad_run missing ""
# the checkpoint of step ${step} (hks: W = 2, finished) under a changed learning rate
sed 's/^lr = .*/lr = 1e-3/' "$CONF" >"$work/changed.conf"
run_bg "$work/changed.out" mpi 2 "$HEAT" --checkpoints "$work/hks" --settings "$work/changed.conf"
wait
rc_of "$work/hhelp.out"
[ "$rc" = 0 ] && grep -q '^usage: heat_insitu .*--help' "$work/hhelp.out" &&
    ! grep -q '^heat: ' "$work/hhelp.out" && [ -z "$(ls "$work/hhelp")" ]
ok $? "heat_insitu --help at W=2: the usage, exit 0, nothing run or written (exit $rc)" ||
    show "$work/hhelp.out"
rc_of "$work/hsmall"
rel=$(error "$work/hsmall" 40 16)
[ "$rc" = 0 ] && ! grep -q '\*\*' "$work/hsmall" && awk -v r="${rel:-0}" 'BEGIN { exit !(r > 10) }'
ok $? "heat_insitu --nx 4: a relative error of ${rel:-?} (> 10) printed as a number, no ******* (exit $rc)" ||
    show "$work/hsmall"

# bad_settings NAME PATTERN: that run exited 2 with PATTERN on stderr, once.
bad_settings() {
    rc_of "$work/$1.out"
    [ "$rc" = 2 ] && [ "$(grep -c "^hpctrain: hpct_insitu_open failed: invalid argument: $2" "$work/$1.out")" = 1 ] &&
        ! grep -q '^heat: ' "$work/$1.out" && [ ! -e "$work/hk-$1" ]
    ok $? "settings: $1: exit 2, the message once, nothing run (exit $rc)" || show "$work/$1.out"
}
bad_settings unknown ".*unknown.conf:8: unknown setting 'hiden' (hpctrain train --print-config lists them)\$"
bad_settings value ".*value.conf:[0-9]*: lr = 'fast' must be a number in \[1e-12, 1e+06\]\$"
bad_settings missing ".*missing.conf: cannot open the config file: No such file or directory\$"
rc_of "$work/changed.out"
[ "$rc" = 2 ] && grep -q "^hpctrain: hpct_insitu_start failed: invalid argument: .*was saved with training configuration hash [0-9a-f]*, this run has [0-9a-f]*; .*HPCT_INSITU_ALLOW_SETTINGS_CHANGE" "$work/changed.out" &&
    ! grep -q '^heat: ' "$work/changed.out"
ok $? "settings changed on resume (lr): refused at start with the hash message, exit 2 (exit $rc)" ||
    show "$work/changed.out"
done_testing
