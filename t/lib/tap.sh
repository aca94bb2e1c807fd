# tap.sh: TAP helpers for the shell tests in t/ (source it; POSIX sh).
#   plan N | skip_all REASON | ok STATUS DESC [FILE] | is GOT WANT DESC | diag TEXT... | skip N REASON
#   wait_for SECONDS CMD...   run CMD every 0.25 s until it succeeds or SECONDS pass
#   running PID               the process exists and has not exited (a zombie has)
#   none_alive PREFIX         no pid recorded in a file PREFIX.<rank> is running
#   need_fortran              skip the whole test in a build without the Fortran module
#   done_testing              exit status: 0 when every planned test ran and passed
tap_n=0
tap_failed=0
tap_planned=0

plan() { tap_planned=$1; echo "1..$1"; }
skip_all() { echo "1..0 # SKIP $*"; exit 0; }
diag() { printf '%s\n' "$@" | sed 's/^/# /'; }

# need_fortran: skip the whole test in a build without the Fortran module (HPCT_FORTRAN, set
# by make check from configure's result: t/t.mk).
need_fortran() {
    [ "${HPCT_FORTRAN:-}" = yes ] ||
        skip_all "the Fortran module is not built (configure: --disable-fortran, or no MPI Fortran compiler with mpi_f08)"
}

# ok STATUS DESC [FILE]: pass when STATUS is 0 (use: cmd; ok $? "desc"); on failure FILE,
# if given, is shown as diagnostics. Returns STATUS's verdict, so "ok ... || diag ..." works.
ok() {
    tap_n=$((tap_n + 1))
    if [ "$1" -eq 0 ]; then echo "ok $tap_n - $2"; return 0; fi
    echo "not ok $tap_n - $2"; tap_failed=$((tap_failed + 1))
    [ -n "${3:-}" ] && [ -r "$3" ] && sed 's/^/# /' "$3"
    return 1
}

# is GOT WANT DESC: pass when the strings are equal; print both otherwise.
is() {
    [ "$1" = "$2" ]; ok $? "$3" && return 0
    diag "got:  '$1'" "want: '$2'"; return 1
}

# skip N REASON: N test points skipped for REASON.
skip() {
    i=0
    while [ $i -lt "$1" ]; do tap_n=$((tap_n + 1)); echo "ok $tap_n # SKIP $2"; i=$((i + 1)); done
}

# wait_for SECONDS CMD...: run CMD every 0.25 s until it succeeds (0) or SECONDS pass (1).
wait_for() {
    wf_deadline=$(($(date +%s) + $1)); shift
    until "$@"; do
        [ "$(date +%s)" -lt "$wf_deadline" ] || return 1
        sleep 0.25
    done
}

# running PID: 0 while process PID exists and has not exited. A zombie (exited, not yet
# collected) has ended: a rank orphaned by an aborting mpirun stays one until init collects
# it, which takes up to 2 s in some containers.
running() {
    kill -0 "$1" 2>/dev/null || return 1
    [ "$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)" != Z ]
}

# none_alive PREFIX: 0 when no pid recorded in PREFIX.<rank> is still running.
none_alive() {
    for f in "$1".*; do [ -f "$f" ] && running "$(cat "$f")" && return 1; done
    return 0
}

# done_testing: the exit status of the test: 0 when every planned point ran and passed.
done_testing() {
    if [ "$tap_n" -ne "$tap_planned" ]; then
        diag "planned $tap_planned tests but ran $tap_n"; return 1
    fi
    [ "$tap_failed" -eq 0 ]
}
