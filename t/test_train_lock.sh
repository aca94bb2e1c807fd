#!/bin/sh
# Two hpctrain train runs on one checkpoint directory (a user mistake, or Slurm starting a
# job twice): the second fails at once, naming the directory and the first run's host and
# pid, and writes nothing; the first run goes on to its final checkpoint untouched. With the
# first run killed by SIGKILL, the next run takes the directory over and resumes.
. "${top_srcdir:-.}/t/lib/train_lib.sh"
need_tool
make_data
RUN_LIMIT=60
plan 5
CK="--checkpoint-every-steps 20"
host=$(hostname)
holder_pid() { sed -n 's/^host .* pid \([0-9]*\) job .*/\1/p' "$work/c/.hpctrain.lock" 2>/dev/null; }
has_holder() { [ -n "$(holder_pid)" ]; }

# The first run is stopped (SIGSTOP; it keeps its lock) while the second one tries, so the
# first cannot end before the second starts, however slowly a loaded machine starts it. A
# second run that waited for the lock would wait until RUN_LIMIT.
HPCT_TEST_STEP_DELAY_MS=50 train_bg 1 "$work/c" "$work/first.out" $CK
wait_for 30 has_holder
first=$(holder_pid)
kill -STOP "$first" 2>/dev/null
stopped=$?
t0=$(date +%s)
train 1 "$work/c" "$work/second.out" $CK
took=$(($(date +%s) - t0))
kill -CONT "$first" 2>/dev/null
[ "$stopped" = 0 ] && [ "$rc" != 0 ] && [ "$rc" != 137 ] && [ "$took" -le 30 ] &&
    grep -q "checkpoint directory $work/c is in use by another run (host $host pid $first job " "$work/second.out"
ok $? "a second run on the directory fails at once (exit $rc, $took s, first run stopped: $stopped) naming host $host and pid ${first:-?}" "$work/second.out"
grep -q "^hpctrain: resumed\|^epoch " "$work/second.out"
[ $? != 0 ]
ok $? "the second run neither resumed nor trained"
train_wait "$work/first.out"
[ "$rc" = 0 ] && [ -f "$(ckpt_file "$work/c" 84)" ]
ok $? "the first run ends normally with its final checkpoint (exit $rc)" "$work/first.out"

# A holder killed with SIGKILL leaves no stale lock: the next run resumes from its checkpoint.
HPCT_TEST_STEP_DELAY_MS=50 train_bg 1 "$work/k" "$work/killed.out" $CK
wait_for 30 test -f "$(ckpt_file "$work/k" 20)"
signal KILL "$work/killed.out" 0
train_wait "$work/killed.out"
[ "$rc" = 137 ]
ok $? "a run killed with SIGKILL after its checkpoint of step 20 (exit $rc)" "$work/killed.out"
train 1 "$work/k" "$work/after.out" $CK
[ "$rc" = 0 ] && [ "$(resumed_step "$work/after.out")" -ge 20 ]
ok $? "the next run takes the directory over and resumes from step $(resumed_step "$work/after.out") (exit $rc)" "$work/after.out"
done_testing
