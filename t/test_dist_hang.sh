#!/bin/sh
# Hang detection: in a 3-rank job the last rank stops itself with SIGSTOP; the others must
# return HPCT_ERR_TIMEOUT within the 5 s deadline, name rank 2 and the operation, and end the
# job through hpct_abort_job with HPCT_EXIT_HANG (124). An outer SIGKILL timeout (90 s,
# exit 137) bounds the test; leftover processes are killed by their recorded pids.
. "${top_srcdir:-.}/t/lib/dist_lib.sh"
need_mpi
plan 4
pids="$tmpdir/pid"
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
