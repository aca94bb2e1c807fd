#!/bin/sh
# t/lib/exit_hold, the suite's fork agent for mpirun (t/t.mk), with mpirun's grace set to 0
# as the suite has it. Each rank is a shell script:
#  (a) without the agent, grace 0 loses a line that rank 0 prints 0.5 s after rank 1 failed
#      (why the agent exists);
#  (b) with it, the line is kept, mpirun's status is the first failure's, and the job ends
#      when its last rank does;
#  (c) as mpirun's own grace: a rank still running gets SIGTERM after 1 s (one without a
#      handler ends there) and is killed after 2 s, with the agent's message;
#  (d) a rank's signal reaches mpirun as that signal;
#  (e) a signal sent to mpirun (SIGUSR1, which it forwards) reaches each rank's program once;
#  (f) every job leaves no folder of marks behind.
. "${top_srcdir:-.}/t/lib/tap.sh"
: "${top_builddir:=.}"
: "${MPIRUN:=mpirun}"
command -v "$MPIRUN" >/dev/null 2>&1 || skip_all "no mpirun (configure found none)"
"$MPIRUN" --version 2>&1 | grep -q 'Open MPI' || skip_all "$MPIRUN is not Open MPI's"
AGENT="$(cd "$top_builddir/t/lib" && pwd)/exit_hold"
[ -x "$AGENT" ] || skip_all "$AGENT is not built"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_odls_base_sigkill_timeout=0
work=$(mktemp -d "${TMPDIR:-/tmp}/hpct-hold.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
export T_EXIT_HOLD_DIR="$work/marks"
mkdir "$work/marks"

# job OUT AGENT SCRIPT: SCRIPT on 2 ranks under AGENT ("" for none); sets rc and secs.
job() {
    out=$1 agent=$2; shift 2
    t0=$(date +%s)
    OMPI_MCA_orte_fork_agent=$agent timeout -s KILL 60 "$MPIRUN" --oversubscribe -np 2 \
        sh -c "$1" >"$out" 2>&1
    rc=$?
    secs=$(($(date +%s) - t0))
}
show() { sed 's/^/#   /' "$1" | head -n 20; }
# rank 1 fails at once; rank 0 prints 0.5 s later and fails with its own code
late='if [ $OMPI_COMM_WORLD_RANK = 1 ]; then exit 3; fi; sleep 0.5; echo "rank 0 late line"; exit 4'

plan 10

unset OMPI_MCA_orte_fork_agent
job "$work/none" "" "$late"
! grep -q "rank 0 late line" "$work/none"
ok $? "(a) no agent, grace 0: rank 0's line after rank 1's failure is lost (exit $rc)" ||
    show "$work/none"

job "$work/late" "$AGENT" "$late"
grep -q "rank 0 late line" "$work/late"
ok $? "(b) with the agent: rank 0's line is kept" || show "$work/late"
is "$rc" 3 "... and mpirun exits with the first failure's status"

# (c) marks in a folder of their own: rank 0, killed, leaves none, so rank 1's stays
T_EXIT_HOLD_DIR="$work"
job "$work/stuck" "$AGENT" 'if [ $OMPI_COMM_WORLD_RANK = 1 ]; then exit 3; fi
    trap "echo rank 0 got TERM" TERM; while :; do sleep 0.1; done'
[ "$rc" = 3 ] && [ "$secs" -lt 20 ] && grep -q "rank 0 got TERM" "$work/stuck" &&
    grep -q "exit_hold: rank 1: 1 of 2 ranks still run after 2 s" "$work/stuck"
ok $? "(c) a rank that ignores SIGTERM: it gets one, mpirun ends it (exit $rc after ${secs} s), the agent says so" ||
    show "$work/stuck"
T_EXIT_HOLD_DIR="$work/marks"
job "$work/term" "$AGENT" 'if [ $OMPI_COMM_WORLD_RANK = 1 ]; then exit 3; fi; sleep 50'
[ "$rc" = 3 ] && [ "$secs" -lt 10 ] && ! grep -q "exit_hold:" "$work/term"
ok $? "... one that does not: SIGTERM ends it (exit $rc after ${secs} s), no message" ||
    show "$work/term"

job "$work/segv" "$AGENT" 'if [ $OMPI_COMM_WORLD_RANK = 1 ]; then kill -SEGV $$; fi; exit 0'
grep -q "rank 1 .* exited on signal 11" "$work/segv" && [ "$rc" != 0 ]
ok $? "(d) a rank killed by SIGSEGV: mpirun reports signal 11 (exit $rc)" || show "$work/segv"

job "$work/ok" "$AGENT" 'exit 0'
[ "$rc" = 0 ]
ok $? "every rank exits 0: mpirun exits 0 (got $rc)" || show "$work/ok"

# (e) SIGUSR1 to mpirun, forwarded to the agents, which pass it to the programs: counted
OMPI_MCA_orte_fork_agent=$AGENT timeout -s KILL 60 sh -c 'echo $$ >"$0"; exec "$@"' \
    "$work/mpirun.pid" "$MPIRUN" --oversubscribe -np 2 sh -c \
    'n=0; trap "n=\$((n + 1))" USR1; touch "$0.$OMPI_COMM_WORLD_RANK"; i=0; while [ $i -lt 30 ]; do sleep 0.1; i=$((i + 1)); done; echo "rank $OMPI_COMM_WORLD_RANK: SIGUSR1 $n time(s)"' \
    "$work/up" >"$work/usr1" 2>&1 &
pid=$!
wait_for 30 test -f "$work/up.0" -a -f "$work/up.1"
kill -USR1 "$(cat "$work/mpirun.pid")"
wait $pid
rc=$?
[ "$rc" = 0 ] && [ "$(grep -c 'SIGUSR1 1 time(s)' "$work/usr1")" = 2 ]
ok $? "(e) SIGUSR1 to mpirun reaches each rank's program once (exit $rc)" || show "$work/usr1"

# (f) the marks: none left by the jobs above
left=$(ls "$work/marks")
is "$left" "" "(f) no folder of marks is left after the jobs"
job "$work/one" "$AGENT" 'exit 0'
is "$(ls "$work/marks")" "" "... nor after a job whose ranks all exit 0"
done_testing
