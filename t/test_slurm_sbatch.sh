#!/bin/sh
# test_slurm_sbatch.sh: slurm/hpctrain.sbatch on a private two-node Slurm cluster, with a
# small stand-in for "hpctrain train" that keeps the trainer's contract (exit 0 when done,
# 75 after SIGUSR1 or SIGTERM). Proves the template's own logic: 4 ranks on 2 nodes get the
# arguments and environment; the time-limit signal (SIGUSR1 to the batch shell, what
# --signal=B:USR1@120 sends) reaches every rank; exit 75 makes the script requeue the job
# itself; an outside "scontrol requeue" (SIGTERM) is not requeued twice; the restarted
# run sees SLURM_RESTART_COUNT; HPCT_MAX_RESTARTS stops the requeues.
. "${top_srcdir:-.}/t/lib/tap.sh"
template="${top_srcdir:-.}/slurm/hpctrain.sbatch"
[ -f "$template" ] || skip_all "cannot find slurm/hpctrain.sbatch"
. "${top_srcdir:-.}/t/slurm/setup.sh"

plan 22
cluster_start

# The stand-in trainer: one log per rank; waits (at most 60 s) for the file "finish".
cat > "$work/trainer.sh" <<'TRAINER'
#!/bin/sh
log="$WORK/rank$SLURM_PROCID.log"
echo "start restart=${SLURM_RESTART_COUNT:-0} node=$SLURM_NODEID args=$* omp=$OMP_NUM_THREADS locking=$HDF5_USE_FILE_LOCKING" >> "$log"
trap 'echo "USR1 restart=${SLURM_RESTART_COUNT:-0}" >> "$log"; exit 75' USR1
trap 'echo "TERM restart=${SLURM_RESTART_COUNT:-0}" >> "$log"; exit 75' TERM
i=0
while [ $i -lt 300 ] && [ ! -e "$WORK/finish" ]; do sleep 0.2; i=$((i + 1)); done
echo "done restart=${SLURM_RESTART_COUNT:-0}" >> "$log"
TRAINER
chmod +x "$work/trainer.sh"
WORK=$work HPCT_TRAIN=$work/trainer.sh HPCT_CONFIG=$work/train.conf
export WORK HPCT_TRAIN HPCT_CONFIG

# all_ranks N LINE: the four rank logs each hold LINE at least N times.
all_ranks() {
    for r in 0 1 2 3; do
        n=$(grep -cx "$2" "$work/rank$r.log" 2>/dev/null)
        [ "${n:-0}" -ge "$1" ] || return 1
    done
}
job_has() { grep -q "$1" "$work/job$job.out" 2>/dev/null; }
show() {
    sctl show job "$job" 2>&1 | sed 's/^/# /'
    for f in "$work/job$job.out" "$work"/rank*.log; do [ -f "$f" ] && sed "s|^|# ${f##*/}: |" "$f"; done
}
started() { all_ranks "$1" "start restart=$2 node=[01] args=train --config $work/train.conf --epochs 3 omp=1 locking=FALSE"; }

job=$(HPCT_MAX_RESTARTS=2 timeout 10 sbatch --parsable -N 2 --ntasks-per-node=2 --cpus-per-task=1 \
    -t 5 -D "$work" -o "$work/job%j.out" "$template" --epochs 3 2>"$work/sbatch.err")
ok $? "sbatch hpctrain.sbatch -N 2 --ntasks-per-node=2 (job ${job:-none})" || sed 's/^/# /' "$work/sbatch.err"

wait_for 30 started 1 0
ok $? "4 ranks start with the config, the extra arguments, 1 thread and HDF5 file locking off" || show
is "$(cat "$work"/rank*.log | sed -n 's/.*node=\([01]\).*/\1/p' | sort | tr -d '\n')" "0011" \
    "two ranks on each node"

timeout 10 scancel --batch --signal=USR1 "$job"
ok $? "SIGUSR1 to the batch shell (what --signal=B:USR1@120 sends near the time limit)"
wait_for 20 all_ranks 1 "USR1 restart=0"
ok $? "the batch shell forwarded SIGUSR1 to all 4 ranks" || show
wait_for 20 job_has "requeueing (restart 1)"
ok $? "on exit status 75 the script requeues the job itself" || show
wait_for 30 state_is "$job" PENDING
ok $? "the job is PENDING again" || show

release "$job"
ok $? "scontrol update StartTime=now"
wait_for 30 started 1 1
ok $? "the second run starts on all ranks with SLURM_RESTART_COUNT=1" || show

sctl requeue "$job"
ok $? "scontrol requeue from outside (preemption)"
wait_for 20 all_ranks 1 "TERM restart=1"
ok $? "all 4 ranks got SIGTERM" || show
wait_for 20 job_has "Slurm requeues or cancels the job itself"
ok $? "the script does not requeue a second time after SIGTERM" || show
wait_for 30 state_is "$job" PENDING
ok $? "the job is PENDING again" || show
release "$job"
wait_for 30 started 1 2
ok $? "the third run starts with SLURM_RESTART_COUNT=2" || show

touch "$work/finish"
wait_for 30 sh -c "timeout 10 scontrol show job $job 2>/dev/null | grep -q 'JobState=COMPLETED'"
ok $? "the trainer finishes (exit 0) and the job COMPLETES" || show
is "$(sctl show job "$job" 2>/dev/null | tr ' ' '\n' | grep -E '^(Restarts|ExitCode)=' | tr '\n' ' ')" \
    "Restarts=2 ExitCode=0:0 " "Restarts=2, exit code 0:0"
all_ranks 1 "done restart=2"
ok $? "all 4 ranks of the third run ended normally"

# A job with no restarts left: preempted, but not requeued; the job fails with status 75.
rm -f "$work/finish" "$work"/rank*.log
job=$(HPCT_MAX_RESTARTS=0 timeout 10 sbatch --parsable -N 2 --ntasks-per-node=2 --cpus-per-task=1 \
    -t 5 -D "$work" -o "$work/job%j.out" "$template" --epochs 3 2>"$work/sbatch.err")
ok $? "a second job with HPCT_MAX_RESTARTS=0 (job ${job:-none})" || sed 's/^/# /' "$work/sbatch.err"
wait_for 30 started 1 0 && timeout 10 scancel --batch --signal=USR1 "$job"
wait_for 30 sh -c "timeout 10 scontrol show job $job 2>/dev/null | grep -q 'JobState=FAILED'"
ok $? "preempted with no restarts left, the job ends FAILED" || show
job_has "not requeueing"
ok $? "the job's output says it is not requeueing" || show
is "$(sctl show job "$job" 2>/dev/null | tr ' ' '\n' | grep -E '^(Restarts|ExitCode)=' | tr '\n' ' ')" \
    "Restarts=0 ExitCode=75:0 " "Restarts=0, exit code 75:0 (EX_TEMPFAIL, preempted)"
done_testing
