# dist_lib.sh: helpers sourced by t/test_dist_*.sh (TAP producers).
# Each case runs t/lib/dist_prog under a hard outer timeout and becomes one TAP point; the
# program's own PASS/FAIL lines are echoed as diagnostics.
: "${top_builddir:=.}"
: "${MPIRUN:=mpirun}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
PROG="$top_builddir/t/lib/dist_prog"
tmpdir=$(mktemp -d "${TMPDIR:-/tmp}/hpct-dist.XXXXXX")
trap 'rm -rf "$tmpdir"' EXIT
. "${top_srcdir:-.}/t/lib/tap.sh"

need_mpi() {
    command -v "$MPIRUN" >/dev/null 2>&1 || { echo "1..0 # SKIP no mpirun (configure found none)"; exit 0; }
    [ -x "$PROG" ] || { echo "1..0 # SKIP $PROG is not built"; exit 0; }
}

# mpi NP [ENV=VALUE ...] -- ARGS...: dist_prog under mpirun, killed after 120 s.
mpi() {
    np=$1; shift
    envs=
    while [ "$1" != "--" ]; do envs="$envs $1"; shift; done
    shift
    env $envs timeout -s KILL 120 "$MPIRUN" --oversubscribe -np "$np" "$PROG" "$@"
}

# case DESC CMD...: one TAP point, ok when CMD exits 0 and printed no FAIL line.
case_ok() {
    desc=$1; shift
    "$@" >"$tmpdir/out" 2>&1
    rc=$?
    sed -n 's/^\(PASS\|FAIL\|#\)/# &/p' "$tmpdir/out"
    [ $rc -eq 0 ] && ! grep -q '^FAIL' "$tmpdir/out"
    ok $? "$desc" && return 0
    diag "exit $rc"
    grep -v '^\(PASS\|#\)' "$tmpdir/out" | tail -n 20 | sed 's/^/#   /'
}

# reap PREFIX: for each rank pid recorded in PREFIX.<rank>, give Open MPI 10 s to end the
# process, then kill what is left (our own recorded pids only).
reap() {
    for f in "$1".*; do
        [ -f "$f" ] || continue
        p=$(cat "$f")
        i=0
        while running "$p" && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
        running "$p" && { echo "# killing leftover rank process $p"; kill -KILL "$p"; }
    done
}

# stop_start VAR=VALUE DIST_PROG_MODE: in the background, the last of 3 ranks stops (SIGSTOP)
# inside an average through the node window (VAR=VALUE exported to the job; deadline 5 s,
# outer bound 90 s). The job mostly waits out the deadline, so a test starts it first and
# runs its other cases meanwhile; stop_check then gives its two points.
stop_start() {
    (env "$1" timeout -s KILL 90 "$MPIRUN" --oversubscribe -np 3 -x "${1%%=*}" \
        "$PROG" "$2" 5 "$tmpdir/stop-pid" >"$tmpdir/stop-out" 2>&1
        echo $? >"$tmpdir/stop-rc") &
    stop_job=$!
}

# stop_check WHAT: waits for stop_start's job. Two points: ranks 0 and 1 got HPCT_ERR_TIMEOUT
# naming rank 2 and the job exited 124; no rank process is left behind.
stop_check() {
    wait "$stop_job"
    rc=$(cat "$tmpdir/stop-rc" 2>/dev/null || echo none)
    sed 's/^/# /' "$tmpdir/stop-out" | grep -v '^# *$' | head -n 4
    reap "$tmpdir/stop-pid"
    named="rank 2 of 3 stopped inside the node's shared-window exchange"
    [ "$rc" = 124 ] && grep -q "rank 0: status -11 .*$named" "$tmpdir/stop-out" &&
        grep -q "rank 1: status -11 .*$named" "$tmpdir/stop-out"
    ok $? "a rank stopped inside $1: HPCT_ERR_TIMEOUT names rank 2 on ranks 0 and 1, exit 124 (got $rc)"
    none_alive "$tmpdir/stop-pid"
    ok $? "no rank process is left behind"
}
