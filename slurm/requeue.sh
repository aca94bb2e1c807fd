# requeue.sh: the checkpoint-and-requeue logic of the sbatch templates (hpctrain.sbatch,
# examples/fortran/heat_insitu.sbatch), sourced by them (bash). One function:
#
#   hpct_run_requeue LABEL CMD...
#
# runs CMD (an srun line) in the background, forwards SIGUSR1 and SIGTERM to it, and when
# it exits 75 (EX_TEMPFAIL: "checkpoint written, requeue me") runs
# "scontrol requeue $SLURM_JOB_ID" while SLURM_RESTART_COUNT < HPCT_MAX_RESTARTS [5].
# Its exit status is the job's. How each way of ending is handled:
#   - CMD exits 0: done.
#   - time limit near: Slurm sends SIGUSR1 to the batch shell (--signal=B:USR1@120); it is
#     forwarded to srun, which forwards it to every rank; the program writes a checkpoint
#     at the next step boundary and exits 75; the job is requeued (bounded, see above).
#   - preemption or "scontrol requeue" by someone else: Slurm sends SIGTERM to the batch
#     shell and to every rank, waits KillWait seconds (site setting, often 30 s), then
#     SIGKILL, and requeues the job itself; the program checkpoints on SIGTERM. The SIGTERM
#     is forwarded and the job is not requeued a second time.
#   - scancel: SIGTERM as above; no requeue.
#   - any other exit status (usage, data, hang/fault): no requeue; the job fails with it.
# Why B:USR1 and a trap, not --signal=USR1@120 (which signals the ranks directly): with B:
# the batch script learns of the coming limit too, can log it, and is the one place that
# decides whether to requeue. The catch: bash runs a trap only between commands, so srun
# runs in the background and the script waits for it in a loop.

HPCT_EX_PREEMPTED=75

hpct_say() { echo "$hpct_label: job ${SLURM_JOB_ID:-?}: $*"; }

# Forward signal $1 to the background srun.
hpct_forward() {
    hpct_signalled=1
    hpct_say "got SIG$1, forwarding it to the ranks"
    [ -n "$hpct_srun_pid" ] && kill -s "$1" "$hpct_srun_pid" 2>/dev/null
}

hpct_run_requeue() {
    hpct_label=$1
    shift
    local max_restarts=${HPCT_MAX_RESTARTS:-5} restart=${SLURM_RESTART_COUNT:-0} rc
    hpct_srun_pid=
    hpct_signalled=0  # a trapped signal interrupted "wait"
    hpct_terminated=0 # SIGTERM: Slurm is requeueing or cancelling the job itself
    hpct_say "run $((restart + 1)) (restart $restart of at most $max_restarts) on" \
        "${SLURM_JOB_NUM_NODES:-?} nodes (${SLURM_JOB_NODELIST:-?}), ${SLURM_NTASKS:-?} ranks"
    trap 'hpct_forward USR1' USR1
    trap 'hpct_terminated=1; hpct_forward TERM' TERM
    "$@" &
    hpct_srun_pid=$!
    # "wait" returns early (status > 128) when a trapped signal arrives; wait again until
    # srun itself has ended (bash keeps its exit status).
    while :; do
        hpct_signalled=0
        wait "$hpct_srun_pid"
        rc=$?
        [ "$hpct_signalled" -eq 1 ] || break
    done
    hpct_srun_pid=
    if [ "$rc" -ne "$HPCT_EX_PREEMPTED" ]; then
        hpct_say "program exited with status $rc"
        return "$rc"
    fi
    if [ "$hpct_terminated" -eq 1 ]; then
        hpct_say "program checkpointed after SIGTERM; Slurm requeues or cancels the job itself"
        return "$rc"
    fi
    if [ "$restart" -ge "$max_restarts" ]; then
        hpct_say "program was preempted, but the job has been requeued $restart times" \
            "(HPCT_MAX_RESTARTS=$max_restarts): not requeueing"
        return "$rc"
    fi
    hpct_say "program was preempted and checkpointed: requeueing (restart $((restart + 1)))"
    # Slurm ends this script (SIGTERM) while it requeues the job.
    trap 'exit 0' TERM
    scontrol requeue "$SLURM_JOB_ID" || {
        hpct_say "scontrol requeue $SLURM_JOB_ID failed"
        return "$rc"
    }
    return 0
}
