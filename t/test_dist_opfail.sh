#!/bin/sh
# A collective that fails midway on one rank (test hook HPCT_TEST_COMM_FAIL_RANK=1: rank 1's
# exchange fails as a failed MPI_Isend would, under MPI_ERRORS_RETURN): rank 1 returns
# HPCT_ERR_COMM at once with the MPI error, rank 0 HPCT_ERR_TIMEOUT at the 3 s deadline (its
# peer arrived, then stopped exchanging); the next collective fails on both with HPCT_ERR_STATE saying which earlier
# collective broke the context, never "still in progress" (before: the context stayed "in
# operation" and every later call said only that).
. "${top_srcdir:-.}/t/lib/dist_lib.sh"
need_mpi
plan 4
# HPCT_ALLREDUCE_ALGO=p2p: the point-to-point path at every size, and no timed probe in
# hpct_init (its exchanges would meet the injected failure first).
HPCT_TEST_COMM_FAIL_RANK=1 HPCT_NODE_REDUCE=p2p HPCT_ALLREDUCE_ALGO=p2p timeout -s KILL 60 \
    "$MPIRUN" --oversubscribe -x HPCT_TEST_COMM_FAIL_RANK -x HPCT_NODE_REDUCE -x HPCT_TEST_HOOKS \
    -x HPCT_ALLREDUCE_ALGO \
    -np 2 "$PROG" opfail 3 >"$tmpdir/out" 2>&1
rc=$?
grep '^rank' "$tmpdir/out" | sed 's/^/# /'
[ $rc = 3 ]
ok $? "the job ends through hpct_abort_job (exit 3, got $rc)"
grep -q "^rank 1: first -10 (hpct_allreduce_mean: posting a point-to-point exchange failed on rank 1 of 2: MPI error" "$tmpdir/out"
ok $? "rank 1: HPCT_ERR_COMM at once, naming the operation, the rank and the MPI error"
grep -q "^rank 0: first -11 (hpct_allreduce_mean .*within 3 s" "$tmpdir/out"
ok $? "rank 0: HPCT_ERR_TIMEOUT at the 3 s deadline (rank 1 arrived, then stopped taking part)"
n=$(grep -c "second -3 (hpct_allreduce_mean: an earlier collective on this context '.*' \(failed\|timed out\)" "$tmpdir/out")
[ "$n" = 2 ] && ! grep -q "still in progress" "$tmpdir/out"
ok $? "the next collective: HPCT_ERR_STATE on both ranks saying which collective broke the context ($n of 2)"
done_testing
