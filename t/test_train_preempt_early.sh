#!/bin/sh
# SIGTERM or SIGUSR1 during start-up (issue 37 (6)): hpctrain train at W = 2, signalled as
# soon as a rank's start-up has begun, before or while MPI_Init, the runtime's probe, the data,
# the model and the resume run, must exit 75 (the sbatch template requeues only 75): not 143
# or 138 (killed; the handlers used to be installed only after hpct_init). A signal before the
# first step stops the run there with nothing to save; a checkpoint already in the directory
# stays. "Start-up has begun" is read from /proc: the rank runs hpctrain and has a signal
# handler (SigCgt): the tool's own now, which it installs first; Open MPI's (SIGSEGV...) in
# MPI_Init before. A signal before that, in the dynamic loader, can only kill the process.
. "${top_srcdir:-.}/t/lib/train_lib.sh"
need_tool
need_mpi
make_data
export HPCT_TEST_HOOKS=1 HPCT_TEST_STEP_DELAY_MS=20 # 84 steps take > 1.7 s: never done first
# The runtime's timed probe is one of the phases a signal may land in (t/t.mk pins a table).
export HPCT_ALLREDUCE_ALGO=auto

# started PIDFILE: 0 once that rank runs hpctrain with a signal handler installed.
started() {
    p=$(cat "$1" 2>/dev/null) && [ -n "$p" ] || return 1
    case "$(readlink "/proc/$p/exe" 2>/dev/null)" in */hpctrain) ;; *) return 1 ;; esac
    cgt=$(sed -n 's/^SigCgt:[[:space:]]*//p' "/proc/$p/status" 2>/dev/null)
    [ -n "$cgt" ] && [ $((0x${cgt#????????} & 0x7fffffff)) -ne 0 ] # signals 1-31
}

# job DIR OUT: hpctrain train at W = 2 in the background, checkpoints in DIR, output to OUT;
# each rank's pid goes to OUT.pid.R and its own exit status to OUT.rc.R. The ranks' statuses
# are read, not mpirun's: on a non-zero exit mpirun spends 2 s tearing the job down.
job() {
    rm -f "$2".pid.* "$2".rc.*
    timeout -s KILL $RUN_LIMIT "$MPIRUN" --oversubscribe -np 2 sh -c \
        '"$@" & echo $! >"$0.pid.$OMPI_COMM_WORLD_RANK"; wait $!; echo $? >"$0.rc.$OMPI_COMM_WORLD_RANK"' \
        "$2" "$TOOL" train --config "$work/train.conf" --checkpoint-dir "$1" >"$2" 2>&1 &
    bg=$!
}
# job_wait OUT: wait for the job; rc = the ranks' exit statuses, "75 75" when both exited 75.
job_wait() {
    wait "$bg"
    reap "$1"
    rc=$(cat "$1.rc.0" "$1.rc.1" 2>/dev/null | tr '\n' ' ')
    rc=${rc% }
}

# wait_started OUT RANKS...: until each rank of the job writing OUT has started (20 s at most).
wait_started() {
    out=$1; shift
    i=0
    for r in "$@"; do
        until started "$out.pid.$r"; do
            i=$((i + 1))
            [ $i -lt 4000 ] || return 1
        done
    done
}

# A checkpoint of step 5 to start some trials from (it must stay as it is).
HPCT_TEST_RAISE_AT_STEP=5 job "$work/prep" "$work/prep.out"
job_wait "$work/prep.out"
prep=$(ckpt_file "$work/prep" 5)
[ "$rc" = "75 75" ] && [ -f "$prep" ] || { echo "1..0 # SKIP could not prepare a checkpoint of step 5 (exit $rc)"; exit 0; }
rm -rf "$work/prep"/*.tmp-* "$work/prep/.hpctrain.lock"
prep_sum=$(cksum <"$prep")

# trial N DELAY SIGNAL FROM RANKS...: a run (FROM: fresh, or a copy of the step-5 directory)
# signalled DELAY seconds after RANKS started; one TAP point.
trial() {
    n=$1 delay=$2 sig=$3 from=$4; shift 4
    d="$work/t$n"
    [ "$from" = fresh ] || cp -r "$work/prep" "$d"
    job "$d" "$d.out"
    if wait_started "$d.out" "$@"; then
        sleep "$delay"
        for r in "$@"; do signal "$sig" "$d.out" "$r"; done
    fi
    job_wait "$d.out"
    line=$(grep '^hpctrain: stopped by signal' "$d.out")
    s=$(stop_step "$d.out")
    case "$line" in
    *"before step 1: nothing trained"*) [ "$from" = fresh ] && [ -z "$(ls "$d"/ckpt-*.h5 2>/dev/null)" ] ;;
    *"before step 6: nothing trained"*) [ "$from" = step5 ] && [ "$(ls "$d"/ckpt-*.h5)" = "$(ckpt_file "$d" 5)" ] ;;
    *"after step"*) [ -n "$s" ] && [ -f "$(ckpt_file "$d" "$s")" ] ;;
    *) false ;;
    esac
    nothing_lost=$?
    kept=0
    [ "$from" = fresh ] || [ "$(cksum <"$(ckpt_file "$d" 5)")" = "$prep_sum" ] || kept=1
    [ "$rc" = "75 75" ] && [ $nothing_lost = 0 ] && [ $kept = 0 ]
    ok $? "SIG$sig to rank(s) $* ${delay}s into start-up ($from): both ranks exit 75 (got $rc); ${line#hpctrain: }" ||
        show "$d.out" 8
}

plan 8
trial 1 0 TERM fresh 0 1
trial 2 0.02 TERM fresh 0 1
trial 3 0.05 TERM step5 0 1
trial 4 0.1 TERM fresh 0 1
trial 5 0.2 TERM step5 0 1
trial 6 0.3 TERM fresh 1
trial 7 0 USR1 step5 0
trial 8 0.45 USR1 fresh 0 1
done_testing
