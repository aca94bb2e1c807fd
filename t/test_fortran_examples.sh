#!/bin/sh
# test_fortran_examples.sh: the Fortran examples run and do what they say.
#  - examples/fortran/byog: the decay fit from hand-computed gradients averaged over ranks
#    recovers its three parameters, as one process and at W = 2;
#  - examples/fortran/mlp_shards at W = 2 on sharded HDF5 data: trains to a test accuracy
#    above 0.9; stopped near the job's time limit (HPCT_JOB_END_TIME within the walltime
#    margin) and by SIGUSR1 (as Slurm's --signal sends it), it writes a checkpoint and exits
#    75; resumed, it ends with parameters bit-identical to the uninterrupted run's.
. "${top_srcdir:-.}/t/fortran_lib.sh"
need_fortran
need_mpi
make_data
plan 9
BYOG="$builddir/examples/fortran/byog"
MLP="$builddir/examples/fortran/mlp_shards"
DATA="$work/data/manifest.txt"

run "$work/byog1" timeout -s KILL 120 "$BYOG"
[ "$rc" = 0 ] && grep -q '^byog: 1 rank(s): a =  2.0000, k =  0.7000, c =  0.5000' "$work/byog1"
ok $? "byog, one process: recovers a = 2, k = 0.7, c = 0.5 (exit $rc)" || show "$work/byog1"
run "$work/byog2" mpi 2 "$BYOG"
[ "$rc" = 0 ] && grep -q '^byog: 2 rank(s): a =  2.0000, k =  0.7000, c =  0.5000' "$work/byog2"
ok $? "byog, W=2: the same fit from gradients averaged over the ranks (exit $rc)" || show "$work/byog2"

# mlp OUT DIR [ARGS]: mlp_shards at W = 2 for 40 epochs, checkpoints in DIR; sets rc.
mlp() {
    out=$1 dir=$2; shift 2
    run "$out" mpi 2 "$MLP" --classes 4 "$DATA" --test "$DATA" --checkpoints "$dir" --epochs 40 "$@"
    echo "$rc" >"$out.rc"
}
hash_of() { sed -n 's/^mlp_shards: done: .* params hash \([0-9A-F]*\)$/\1/p' "$1"; }

mlp "$work/ref" "$work/ck-ref"
ref=$(hash_of "$work/ref")
acc=$(sed -n 's/^mlp_shards: test loss .* accuracy \([0-9.]*\) over 2048 samples$/\1/p' "$work/ref")
[ "$rc" = 0 ] && [ -n "$ref" ] && awk -v a="${acc:-0}" 'BEGIN { exit !(a > 0.9) }'
ok $? "mlp_shards W=2: 1680 steps, test accuracy ${acc:-?} > 0.9, params hash ${ref:-none}" || show "$work/ref"

HPCT_JOB_END_TIME=$(($(date +%s) + 60)) mlp "$work/wall" "$work/ck-wall"
[ "$rc" = 75 ] && grep -q "^mlp_shards: stopped after step 1: the job's time limit is near" "$work/wall" &&
    ls "$work/ck-wall"/ckpt-*.h5 >/dev/null 2>&1
ok $? "the job's end within the walltime margin: checkpoint after step 1 and exit 75 (got $rc)" ||
    show "$work/wall"
mlp "$work/wall2" "$work/ck-wall"
[ "$rc" = 0 ] && grep -q '^mlp_shards: resumed from the checkpoint of step 1$' "$work/wall2"
ok $? "the requeued run resumes from step 1 (exit $rc)" || show "$work/wall2"
is "$(hash_of "$work/wall2")" "$ref" "its parameters are bit-identical to the uninterrupted run's"

# SIGUSR1 while it trains: stop both ranks (so the run cannot end first), signal, continue.
mlp "$work/sig" "$work/ck-sig" &
i=0 # poll every 20 ms for the first report (step 10), for at most 60 s
until grep -q '^epoch 1 step 10/' "$work/sig" 2>/dev/null || [ $i -ge 3000 ]; do sleep 0.02; i=$((i + 1)); done
ranks=$(pgrep -f "^$MLP --classes 4 $DATA --test $DATA --checkpoints $work/ck-sig" | tr '\n' ' ')
for p in $ranks; do kill -STOP "$p"; done
for p in $ranks; do kill -USR1 "$p"; done
for p in $ranks; do kill -CONT "$p"; done
wait
rc=$(cat "$work/sig.rc")
[ "$rc" = 75 ] && [ "$(echo $ranks | wc -w)" = 2 ] &&
    grep -q '^mlp_shards: stopped by signal 10 after step [0-9]*; checkpoint written; exit 75$' "$work/sig"
ok $? "SIGUSR1 to both ranks (${ranks:-none found}): checkpoint and exit 75 (got $rc)" || show "$work/sig"
step=$(sed -n 's/^mlp_shards: stopped by signal 10 after step \([0-9]*\);.*/\1/p' "$work/sig")
mlp "$work/sig2" "$work/ck-sig"
[ "$rc" = 0 ] && grep -q "^mlp_shards: resumed from the checkpoint of step ${step:-none}\$" "$work/sig2"
ok $? "the requeued run resumes from step ${step:-?} (exit $rc)" || show "$work/sig2"
is "$(hash_of "$work/sig2")" "$ref" "its parameters are bit-identical to the uninterrupted run's"
done_testing
