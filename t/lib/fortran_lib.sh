# fortran_lib.sh: helpers sourced by t/test_fortran_*.sh (TAP producers; POSIX sh), on top of
# t/lib/tap.sh (plan, ok, is, diag, skip, need_fortran, done_testing).
. "${top_srcdir:-.}/t/lib/tap.sh"
: "${top_builddir:=.}"
: "${MPIRUN:=mpirun}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
unset HPCT_LOG_LEVEL HPCT_JOB_END_TIME HPCT_RANKS_PER_NODE
srcdir=$(cd "${top_srcdir:-.}" && pwd)
builddir=$(cd "$top_builddir" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/hpct-fortran.XXXXXX") || skip_all "mktemp failed"
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

need_mpi() { command -v "$MPIRUN" >/dev/null 2>&1 || skip_all "no mpirun (configure found none)"; }

# make_data: the synthetic set of t/train_data.sh (2048 x 16, 4 classes) as shards in
# $work/data, and the same under the dataset names feats/labels in $work/named.
make_data() {
    . "$srcdir/t/lib/train_data.sh"
    train_csv "$work/data.csv" &&
        "$builddir/tools/hpctrain" shard -o "$work/data" "$work/data.csv" >/dev/null &&
        "$builddir/tools/hpctrain" shard --inputs-name feats --targets-name labels \
            -o "$work/named" "$work/data.csv" >/dev/null || skip_all "hpctrain shard failed"
}

# mpi NP PROG ARGS...: PROG under mpirun (NP ranks), SIGKILLed after 120 s.
mpi() {
    np=$1; shift
    timeout -s KILL 120 "$MPIRUN" --oversubscribe -np "$np" "$@"
}

# run OUT CMD...: CMD with stdout and stderr to OUT; sets rc.
run() {
    out=$1; shift
    "$@" >"$out" 2>&1
    rc=$?
}

# run_bg OUT CMD...: run OUT CMD... in the background, its exit status into OUT.rc (jobs that
# mostly wait run side by side; wait for them, then rc_of).
run_bg() {
    rb_out=$1; shift
    ("$@" >"$rb_out" 2>&1; echo $? >"$rb_out.rc") &
}
# rc_of OUT: rc from OUT.rc (255: none written).
rc_of() { rc=$(cat "$1.rc" 2>/dev/null || echo 255); }

# show FILE: the last lines of a log as TAP diagnostics.
show() { tail -n 25 "$1" | sed 's/^/#   /'; }
