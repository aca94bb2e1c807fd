# setup.sh: common start of the Slurm tests (source it after tap.sh; POSIX sh).
# Skips the test with the reason when no cluster can start here, otherwise starts a private
# cluster in a temporary folder, points SLURM_CONF at it, and stops it (every daemon, by pid)
# on exit, whatever way the test ends. Sets: cluster_sh (the script), work (a scratch folder
# for the test's files), tmp (their parent, removed on exit). Defines: cluster_start,
# need_pmix, sq, sctl, state_of, state_is, ended, job_field, out_has, show_job, nodes_idle,
# release (each described where it is defined).
cluster_sh="${top_srcdir:-.}/t/slurm/cluster.sh"
[ -f "$cluster_sh" ] || skip_all "cannot find t/slurm/cluster.sh (top_srcdir='${top_srcdir:-}')"

# Variables from a Slurm job this test may itself run in would confuse srun and sbatch.
for v in $(env | sed -n 's/^\(SLURM_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
# Jobs average as a site's do: from the timed probe (t/t.mk pins a table for the other tests).
HPCT_ALLREDUCE_ALGO=auto
export HPCT_ALLREDUCE_ALGO

why=$(sh "$cluster_sh" check) || skip_all "no Slurm test cluster here: $why"

# Short path under /tmp: munge and PMIx put Unix sockets in it (108-byte limit), and the
# user munge must be able to reach it.
tmp=$(mktemp -d "${HPCT_SLURM_TMPDIR:-/tmp}/hpct-slurm.XXXXXX") || skip_all "mktemp failed"
chmod 711 "$tmp"
work="$tmp/work"
mkdir "$work"
cluster_stop() {
    sh "$cluster_sh" stop "$tmp/cluster" 2>&1 | sed 's/^/# /'
    # HPCT_SLURM_KEEP=DIR keeps the daemons' logs and the test's files for a post-mortem.
    keep=${HPCT_SLURM_KEEP:+$HPCT_SLURM_KEEP/$(basename "$0" .sh)}
    [ -n "$keep" ] && mkdir -p "$keep" && cp -r "$tmp/cluster/log" "$work" "$keep/" 2>/dev/null
    rm -rf "$tmp"
}
trap 'cluster_stop' EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

# cluster_start: start the cluster or fail the whole test with the daemons' log tails.
cluster_start() {
    t0=$(date +%s)
    if ! sh "$cluster_sh" start "$tmp/cluster" 2>"$work/start.err"; then
        echo "not ok 1 - the loopback Slurm cluster starts"
        sed 's/^/# /' "$work/start.err"
        exit 1
    fi
    eval "$(sh "$cluster_sh" env "$tmp/cluster")"
    ok 0 "the loopback Slurm cluster starts (n1, n2 idle after $(($(date +%s) - t0)) s)"
}

# need_pmix: after cluster_start, skip the rest of the plan when Slurm has no PMIx plugin.
need_pmix() {
    srun --mpi=list 2>&1 | grep -q pmix && return 0
    skip $((tap_planned - tap_n)) "Slurm has no PMIx plugin here (srun --mpi=list)"
    done_testing
    exit
}

# Every client command gets a deadline: with the controller gone each would retry for long.
sq() { timeout 10 squeue "$@"; }
sctl() { timeout 10 scontrol "$@"; }

# state_of JOB: its state as squeue shows it (RUNNING, PENDING, ...; empty once it is gone).
state_of() { sq -h -j "$1" -o %T 2>/dev/null; }
state_is() { [ "$(state_of "$1")" = "$2" ]; }
# ended JOB: the job has left the queue's running states (squeue shows it until MinJobAge).
ended() {
    case "$(sctl show job "$1" 2>/dev/null | tr ' ' '\n' | sed -n 's/^JobState=//p')" in
    COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY) return 0 ;;
    esac
    return 1
}
# job_field JOB 'A|B': "A=... B=... " from the job's record, in scontrol's order.
job_field() { sctl show job "$1" 2>/dev/null | tr ' ' '\n' | grep -E "^($2)=" | tr '\n' ' '; }
# out_has NAME PATTERN: the job output $work/NAME.out has a line matching PATTERN.
out_has() { grep -q "$2" "$work/$1.out" 2>/dev/null; }
# show_job JOB NAME: the job's record, the end of $work/NAME.out (without the progress lines
# of hpctrain train) and the daemons' last log lines about the job, as TAP diagnostics.
show_job() {
    sctl show job "$1" 2>&1 | sed 's/^/# /'
    [ -f "$work/$2.out" ] && grep -v '^epoch ' "$work/$2.out" | tail -n 30 | sed "s|^|# $2.out: |"
    for log in "$tmp"/cluster/log/slurmctld.log "$tmp"/cluster/log/slurmd-*.log; do
        [ -f "$log" ] && grep -F "$1" "$log" | tail -n 15 | sed "s|^|# $(basename "$log"): |"
    done
}

# nodes_idle: no node is still allocated or completing (sinfo lists only "idle").
# sinfo failing (busy controller, timeout) is "not known idle", never "idle".
nodes_idle() {
    ni_states=$(timeout 10 sinfo -h -o %T 2>/dev/null) && [ -n "$ni_states" ] &&
        [ -z "$(printf '%s\n' "$ni_states" | grep -v -x idle)" ]
}
# release JOB: start a requeued (PENDING, BeginTime) job now. Wait first until both nodes
# have finished cleaning up the previous run and one more second has passed: slurmd revokes
# the old credential of the job id with one-second resolution, and a restart within that
# second can be refused, failing the job before its script runs.
release() {
    wait_for 30 nodes_idle
    sleep 2
    sctl update JobId="$1" StartTime=now
}
