#!/bin/sh
# Hang detection: in a 3-rank job the last rank stops itself with SIGSTOP; the others must
# return HPCT_ERR_TIMEOUT within the 5 s deadline, name rank 2 and the operation, and end the
# job through hpct_abort_job with HPCT_EXIT_HANG (124). Then the same at W = 8 on 8 virtual
# nodes (no node window, whose counters would show who arrived), where ranks 2 and 4 are not
# token partners of rank 7 (doc/distributed.md): they name it from the liveness check. An outer SIGKILL timeout (90 s, exit 137) bounds each job; leftover
# processes are killed by their recorded pids.
. "${top_srcdir:-.}/t/lib/dist_lib.sh"
need_mpi
plan 8
pids="$tmpdir/pid" pids8="$tmpdir/pid8"
# Both jobs mostly wait out the deadline: the W = 8 job runs in the background meanwhile
# (its checks come after the W = 3 job's).
(timeout -s KILL 90 "$MPIRUN" --oversubscribe -np 8 -x HPCT_RANKS_PER_NODE=1 "$PROG" hang 5 "$pids8" \
    >"$tmpdir/out8" 2>&1
    echo $? >"$tmpdir/rc8") &
job8=$!
start=$(date +%s)
timeout -s KILL 90 "$MPIRUN" --oversubscribe -np 3 "$PROG" hang 5 "$pids" >"$tmpdir/out" 2>&1
rc=$?
took=$(( $(date +%s) - start ))
sed 's/^/# /' "$tmpdir/out" | grep -v '^# *$' | head -n 12
reap "$pids"
echo "# mpirun exit status $rc after about $took s"
[ $rc -eq 124 ]
ok $? "the job ends with HPCT_EXIT_HANG (124), got $rc"
grep -q "rank 0: status -11 .*hpct_allreduce_mean.*rank 2 of 3 did not arrive within 5 s" "$tmpdir/out"
ok $? "rank 0 reports HPCT_ERR_TIMEOUT naming rank 2 and the operation"
grep -q "rank 1: status -11 .*rank 2 of 3 did not arrive" "$tmpdir/out"
ok $? "rank 1 reports the same missing rank"
none_alive "$pids"
ok $? "no rank process is left behind"

# W = 8: every healthy rank names rank 7 and no other; 2 and 4 (not its partners) included.
wait "$job8"
rc=$(cat "$tmpdir/rc8")
grep "status -11" "$tmpdir/out8" | sed 's/^/# /' | cut -c1-400
reap "$pids8"
[ $rc -eq 124 ]
ok $? "W = 8: the job ends with HPCT_EXIT_HANG (124), got $rc"
named=0
for r in 0 1 2 3 4 5 6; do
    grep -q "^rank $r: status -11 .*rank 7 of 8 \(did not arrive\|stopped\)" "$tmpdir/out8" &&
        ! grep "^rank $r: status -11" "$tmpdir/out8" | grep -q "ranks [0-9]*,[0-9]* of 8" &&
        named=$((named + 1))
done
[ $named -ge 6 ]
ok $? "W = 8: the healthy ranks that reported ($named of 7; one may be ended first by the abort) name rank 7 alone"
grep -q "^rank [24]: status -11 .*rank 7 of 8 stopped: did not complete it" "$tmpdir/out8"
ok $? "W = 8: rank 2 or 4, not token partners of rank 7, names it through the liveness check"
none_alive "$pids8"
ok $? "W = 8: no rank process is left behind"
