#!/bin/sh
# A hang: in a 3-rank job with collective_timeout = 5, rank 2 stops itself with SIGSTOP
# after step 30. The job must end with exit code 124 (outer SIGKILL bound 90 s), rank 0 must
# have written an emergency checkpoint of step 30 (the last completed step), and a run
# resumed from it must end with the uninterrupted 3-rank run's parameters (bit-identical).
# When rank 0 (the writer) is the one that stops, the others end the job with 124 after
# their grace period; the job leaves no checkpoint, or only a good one of step 30 (rank 0
# woken by the SIGTERM of Open MPI's abort).
# The timeout names what the hung rank did last (its last collective and step, from the
# arrival tokens). No rank process may be left behind (leftovers are SIGKILLed by their
# recorded pids).
. "${top_srcdir:-.}/t/lib/train_lib.sh"
need_tool
need_mpi
make_data
echo "1..11"

train 3 "$work/ref" "$work/ref.out"
ref=$(params_hash "$work/ref.out")
[ $rc = 0 ] && [ -n "$ref" ]; ok $? "W=3: uninterrupted run exits 0 (params hash $ref)"

# The hung jobs (rank 2 stops, rank 0 stops, rank 2 stops inside an operation) mostly wait
# out their deadlines: the last two run in the background meanwhile (checked after the first).
(HPCT_TEST_STOP_AT_STEP=30,0 train 3 "$work/hang0" "$work/hang0.out" --collective-timeout 5) &
hang0=$!
# Rank 2 stops itself right after collective operation #300 (whichever that is: a step's)
# has started, outside its waits (the library's hook HPCT_TEST_STOP_IN_OP); Open MPI's abort
# wakes it (SIGCONT, SIGTERM) and its wait finds the deadline long past.
(HPCT_TEST_STOP_IN_OP=300,2 HPCT_LOG_LEVEL=1 train 3 "$work/hangop" "$work/hangop.out" \
    --collective-timeout 5) &
hangop=$!
start=$(date +%s)
HPCT_TEST_STOP_AT_STEP=30,2 train 3 "$work/hang" "$work/hang.out" --collective-timeout 5
echo "# the hung job ended with exit $rc after about $(($(date +%s) - start)) s (deadline 5 s)"
[ $rc = 124 ]; ok $? "W=3: rank 2 stopped after step 30: the job ends with exit 124 (got $rc)"
[ $rc = 124 ] || show "$work/hang.out" 12
grep -q "rank 0: training (a rank hung) failed: .*rank 2 of 3 did not arrive within 5 s" "$work/hang.out" &&
    [ -f "$(ckpt_file "$work/hang" 30)" ] && [ ! -f "$(ckpt_file "$work/hang" 31)" ]
ok $? "rank 0 names rank 2 and wrote the emergency checkpoint of step 30"
seen=$(grep -o "last seen: rank 2 entered '[^']*' (#[0-9]*) in step [0-9]*" "$work/hang.out" | head -n 1)
case "$seen" in *" in step 30") true ;; *) false ;; esac
ok $? "the timeout says what rank 2 did last, from its last arrival token: ${seen:-nothing}"
none_alive "$work/hang.out.pid"; ok $? "no rank process of the hung job is left behind"

train 3 "$work/hang" "$work/resume.out"
h=$(params_hash "$work/resume.out")
[ $rc = 0 ] && [ "$(resumed_step "$work/resume.out")" = 30 ] && [ "$h" = "$ref" ]
ok $? "W=3: resumed from the emergency checkpoint of step 30, exit $rc, params hash ${h:-none} equals the uninterrupted run's"
[ $rc = 0 ] || show "$work/resume.out"

wait "$hang0"
train_rc "$work/hang0.out"
# Ranks 1 and 2 each time out and print, then give rank 0 one more deadline and abort; on a
# loaded machine the first to abort can end the job before the other has printed, so either
# naming rank 0 is enough.
[ $rc = 124 ] && grep -q "rank [12]: training (a rank hung) failed: .*rank 0 of 3 did not arrive" "$work/hang0.out"
ok $? "W=3: rank 0 stopped after step 30: exit 124 (got $rc), rank 1 or 2 names rank 0" ||
    { show "$work/hang0.out" 12; ls "$work/hang0" 2>/dev/null | sed 's/^/# in the checkpoint directory: /'; }
# What that job left is good. Open MPI ends an aborted job with SIGCONT, SIGTERM, then
# SIGKILL: the stopped rank 0 may wake and take the preemption path before the SIGKILL,
# saving step 30 (replicas agree after every step, so that state is whole). So either no
# checkpoint, or only step 30's, from which a resumed run ends as the uninterrupted one.
left=$(ls "$work/hang0" 2>/dev/null | grep '^ckpt-' | tr '\n' ' ')
if [ -z "$left" ]; then
    ok 0 "the job left no checkpoint"
else
    train 3 "$work/hang0" "$work/resume0.out"
    h=$(params_hash "$work/resume0.out")
    [ "$left" = "$(basename "$(ckpt_file "$work/hang0" 30)") " ] && [ $rc = 0 ] &&
        [ "$(resumed_step "$work/resume0.out")" = 30 ] && [ "$h" = "$ref" ]
    ok $? "the job left only the checkpoint of step 30 (rank 0 woken by the abort's SIGTERM: $left); resumed from it, exit $rc, params hash ${h:-none} equals the uninterrupted run's" ||
        show "$work/resume0.out"
fi
none_alive "$work/hang0.out.pid"; ok $? "no rank process of that job is left behind"

# Before, the woken rank 2 measured its own stop only between polls of one wait, so it said
# "all 3 ranks arrived but it did not complete (a rank stopped during it)", or blamed ranks
# whose tokens it had not yet taken in; now the time since the operation's start counts too.
wait "$hangop"
train_rc "$work/hangop.out"
# (stopped, or did not arrive: its token may not have left before the stop; the first healthy
# rank to abort may end the job before the other has printed)
grep -q "rank [01]: training (a rank hung) failed: .*rank 2 of 3 \(stopped\|did not arrive\)" "$work/hangop.out"
[ $? = 0 ] && [ "$rc" = 124 ]
ok $? "W=3: rank 2 stopped inside operation #300, outside its waits: exit 124 (got $rc), rank 0 or 1 names rank 2" ||
    show "$work/hangop.out" 12
# Rank 2 has 1 s after the abort's SIGTERM before the SIGKILL: if it printed, every line of its
# own says it did not run, and none is a peer's verdict ("seen by rank 2").
self=$(grep -c "this rank (2 of 3, on [^)]*) did not run for" "$work/hangop.out")
blame=$(grep -c "seen by rank 2 " "$work/hangop.out")
echo "# rank 2 woke and said it did not run in $self line(s)"
[ "$blame" = 0 ]
ok $? "the woken rank 2 blames no peer ($blame line(s) seen by rank 2; $self saying it did not run)" ||
    grep "error" "$work/hangop.out" | sed 's/^/#   /' | cut -c1-300
