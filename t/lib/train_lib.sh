# train_lib.sh: helpers sourced by t/test_train_*.sh (TAP producers), end-to-end tests of
# `hpctrain train` with real processes and real signals.
# A synthetic dataset: 2048 samples x 16 features in [-1, 1), 4 classes given by the signs of
# the sums of the first and the last 8 features (learnable by a small MLP). With global
# batch 48 (divisible by 1, 2 and 3 ranks) an epoch is 42 steps; 2 epochs are 84 steps.
: "${top_builddir:=.}"
. "${top_srcdir:-.}/t/lib/train_data.sh"
: "${MPIRUN:=mpirun}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
unset HPCT_TEST_RAISE_AT_STEP HPCT_TEST_STOP_AT_STEP HPCT_TEST_STEP_DELAY_MS HPCT_LOG_LEVEL HPCT_TEST_SLOW_RANK \
    HPCT_CKPT_TEST_STOP_AT
TOOL="$top_builddir/tools/hpctrain"
TOTAL_STEPS=84
RUN_LIMIT=90 # seconds; every hpctrain run is SIGKILLed after this
work=$(mktemp -d "${TMPDIR:-/tmp}/hpct-train.XXXXXX") || exit 1
trap 'kill_leftovers; rm -rf "$work"' EXIT

. "${top_srcdir:-.}/t/lib/tap.sh"
need_tool() { [ -x "$TOOL" ] || { echo "1..0 # SKIP $TOOL is not built"; exit 0; }; }
need_mpi() { command -v "$MPIRUN" >/dev/null 2>&1 || { echo "1..0 # SKIP no mpirun (configure found none)"; exit 0; }; }

# The dataset and a settings file (no time-based checkpoints, no Slurm query).
make_data() {
    train_csv "$work/data.csv" &&
        "$TOOL" shard -o "$work/data" "$work/data.csv" >/dev/null || { echo "1..0 # SKIP hpctrain shard failed"; exit 0; }
    train_conf "$work/train.conf" "$work/data/manifest.txt"
}

# train W DIR OUT [ARGS...]: hpctrain train at W ranks (W = 1: no mpirun) with checkpoints in
# DIR; stdout and stderr to OUT; each rank's pid in OUT.pid.<rank>. Sets rc.
train() {
    w=$1 dir=$2 out=$3; shift 3
    rm -f "$out".pid.*
    if [ "$w" = 1 ]; then
        timeout -s KILL $RUN_LIMIT sh -c 'echo $$ >"$0.pid.0"; exec "$@"' "$out" \
            "$TOOL" train --config "$work/train.conf" --checkpoint-dir "$dir" "$@" >"$out" 2>&1
    else
        timeout -s KILL $RUN_LIMIT "$MPIRUN" --oversubscribe -np "$w" \
            sh -c 'echo $$ >"$0.pid.$OMPI_COMM_WORLD_RANK"; exec "$@"' "$out" \
            "$TOOL" train --config "$work/train.conf" --checkpoint-dir "$dir" "$@" >"$out" 2>&1
    fi
    rc=$?
    echo $rc >"$out.rc"
    reap "$out"
}

# train_bg W DIR OUT [ARGS...]: as train, in the background; wait with train_wait.
train_bg() {
    train "$@" &
    bg=$!
}
train_wait() { wait "$bg"; train_rc "$1"; }
# train_rc OUT: rc from the exit status train wrote for OUT (255: none), for jobs waited for
# otherwise (several train_bg jobs at once).
train_rc() { rc=$(cat "$1.rc" 2>/dev/null || echo 255); }
# signal SIG OUT RANK: send SIG to that rank's process of the job writing OUT.
signal() { kill -"$1" "$(cat "$2.pid.$3")"; }

# Give a finished job's rank processes 10 s to go, then SIGKILL what is left (our pids only).
reap() {
    for f in "$1".pid.*; do
        [ -f "$f" ] || continue
        p=$(cat "$f")
        i=0
        while running "$p" && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
        running "$p" && { echo "# killing leftover rank process $p"; kill -KILL "$p" 2>/dev/null; }
        echo "$p" >>"$work/all-pids"
    done
}
kill_leftovers() {
    [ -f "$work/all-pids" ] || return 0
    while read -r p; do kill -0 "$p" 2>/dev/null && kill -KILL "$p" 2>/dev/null; done <"$work/all-pids"
}

# wait_for_step OUT K [PREFIX]: until OUT shows a progress line of step >= K (at most 60 s);
# PREFIX: a sed pattern before each line (a time stamp), empty by default.
wait_for_step() {
    i=0
    while [ $i -lt 600 ]; do
        s=$(sed -n "s/^${3:-}epoch [0-9]* step \([0-9]*\)\/.*/\1/p" "$1" 2>/dev/null | tail -n 1)
        [ -n "$s" ] && [ "$s" -ge "$2" ] && return 0
        sleep 0.1
        i=$((i + 1))
    done
    return 1
}

# The state letter of a process (T: stopped).
proc_state() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1; }
params_hash() { sed -n 's/^hpctrain: params hash //p' "$1"; }
stop_step() { sed -n 's/^hpctrain: stopped by signal [0-9]* after step \([0-9]*\);.*/\1/p' "$1"; }
resumed_step() { sed -n 's/^hpctrain: resumed from the checkpoint of step \([0-9]*\)$/\1/p' "$1"; }
ckpt_file() { printf '%s/ckpt-%012d.h5' "$1" "$2"; }
# The per-step loss curve "step loss" from the progress lines.
losses() { sed -n 's/^epoch [0-9]* step \([0-9]*\)\/[0-9]* loss \([^ ]*\) .*/\1 \2/p' "$@"; }

# close_curves REF RUN...: the runs' losses together cover steps 1..${STEPS:-TOTAL_STEPS}, each
# within $TOL relative of REF's loss at that step; prints the largest difference.
close_curves() {
    losses "$1" >"$work/want"; shift
    losses "$@" | awk -v tol="$TOL" -v total="${STEPS:-$TOTAL_STEPS}" '
        NR == FNR { want[$1] = $2; next }
        { d = $2 - want[$1]; if (d < 0) d = -d; r = d / (want[$1] > 0 ? want[$1] : 1);
          if (r > worst) worst = r; if (r > tol || !($1 in want)) bad++; seen[$1] = 1 }
        END { for (s = 1; s <= total; s++) if (!(s in seen)) bad++;
              printf "# largest relative loss difference %.3g over %d steps\n", worst, total;
              exit bad > 0 }' "$work/want" -
}
# /params of a checkpoint as h5dump prints it, without the file name line.
params_dump() { h5dump -g /params "$1" 2>&1 | sed 1d; }
# Echo a file's last lines as TAP diagnostics.
show() { tail -n "${2:-6}" "$1" | sed 's/^/#   /'; }
