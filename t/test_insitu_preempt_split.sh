#!/bin/sh
# How a preemption ends a job whose ranks do not all train (doc/insitu.md, "When the job is
# preempted"): t/lib/insitu_prog split at W = 4 under mpirun, where world ranks 0 and 2
# train on a communicator of their own and ranks 1 and 3 only simulate; every rank installs
# the signal handlers first and the program agrees on stopping over the world. The signal
# goes to every rank (what srun and Slurm do), to mpirun, or to one simulating rank only.
# Each case: mpirun's exit status is the one the table in doc/insitu.md gives, a checkpoint
# is written, and both training ranks stopped after the same step.
. "${top_srcdir:-.}/t/lib/dist_lib.sh"
PROG="$top_builddir/t/lib/insitu_prog"
need_mpi
# mpirun's own kill after its SIGTERM is part of the subject: its default grace, as a site has
# it (t/t.mk sets none for the suite).
export OMPI_MCA_odls_base_sigkill_timeout=1
plan 10

# start SIG WHO: one case, in the background: the job, the signal a second after the program
# started, and mpirun's exit status into $tmpdir/SIG-WHO.rc. The five cases run at the same
# time, each with its own files; check reads them in order.
start() {
    sig=$1 who=$2
    c="$tmpdir/$sig-$who"
    (timeout -s KILL 120 sh -c 'echo $$ >"$0"; exec "$@"' "$c.mpirun.pid" \
        "$MPIRUN" --oversubscribe -np 4 \
        sh -c 'echo $$ >"$0.$OMPI_COMM_WORLD_RANK"; exec "$@"' "$c.pid" \
        "$PROG" split "$c" 100000 >"$c.out" 2>&1 &
    job=$!
    i=0
    while ! grep -q '^SPLIT started' "$c.out" 2>/dev/null && [ $i -lt 300 ]; do
        sleep 0.1
        i=$((i + 1))
    done
    sleep 1
    case $who in
    mpirun) kill -s "$sig" "$(cat "$c.mpirun.pid")" ;;
    ranks) kill -s "$sig" $(cat "$c".pid.*) ;;
    rank1) kill -s "$sig" "$(cat "$c.pid.1")" ;;
    esac
    wait $job
    echo $? >"$c.rc") &
}

# check SIG WHO WANT: the two TAP points of a case.
check() {
    sig=$1 who=$2 want=$3
    d="$tmpdir/$sig-$who" out="$tmpdir/$sig-$who.out"
    rc=$(cat "$d.rc" 2>/dev/null || echo none)
    steps=$(sed -n 's/^SPLIT rank [02]: preempted after step \([0-9]*\) .*/\1/p' "$out" | sort -u)
    n=$(ls "$d" 2>/dev/null | grep -c '^ckpt-')
    [ "$rc" = "$want" ]
    ok $? "SIG$sig to $who: mpirun exits $want (got $rc)" || tail -n 8 "$out" | sed 's/^/#   /'
    [ "$n" -ge 1 ] && [ -n "$steps" ] && [ "$(echo "$steps" | wc -l)" = 1 ] &&
        [ -f "$d/ckpt-$(printf %012d "$steps").h5" ]
    ok $? "SIG$sig to $who: both training ranks stopped after step ${steps:-?} and its checkpoint is written" ||
        grep '^SPLIT' "$out" | sed 's/^/#   /'
}
cases="TERM:ranks:75 USR1:ranks:75 USR1:mpirun:75 TERM:rank1:75 TERM:mpirun:1"
for c in $cases; do start $(echo "$c" | tr : ' '); done
wait
# Open MPI 4.1: mpirun that receives SIGTERM passes it to the ranks (which checkpoint and
# exit 75), then ends the job itself with status 1 (the last case).
for c in $cases; do check $(echo "$c" | tr : ' '); done
