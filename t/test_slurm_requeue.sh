#!/bin/sh
# test_slurm_requeue.sh: the requeue path the sbatch template relies on, on a private
# Slurm cluster: a job submitted with --requeue gets SIGTERM from "scontrol requeue",
# returns to PENDING, starts again (after "scontrol update StartTime=now", which skips
# the two-minute BeginTime hold) with SLURM_RESTART_COUNT=1, and then completes.
. "${top_srcdir:-.}/t/lib/tap.sh"
. "${top_srcdir:-.}/t/slurm/setup.sh"

plan 11
cluster_start

# The job: log its start and restart count, log SIGTERM and exit 143 on it, otherwise
# wait (at most 60 s) for the test to create the file "finish".
cat > "$work/job.sh" <<'JOB'
#!/bin/sh
log=$1; finish=$2
echo "start restart=${SLURM_RESTART_COUNT:-0}" >> "$log"
trap 'echo "TERM restart=${SLURM_RESTART_COUNT:-0}" >> "$log"; exit 143' TERM
i=0
while [ $i -lt 300 ] && [ ! -e "$finish" ]; do sleep 0.2; i=$((i + 1)); done
echo "done restart=${SLURM_RESTART_COUNT:-0}" >> "$log"
JOB
log="$work/log"

job=$(timeout 10 sbatch --parsable --requeue -N 1 -n 1 -t 2 -J hpct-requeue -D "$work" \
    -o "$work/job.out" "$work/job.sh" "$log" "$work/finish" 2>"$work/sbatch.err")
ok $? "sbatch --requeue accepts the job (id ${job:-none})" || sed 's/^/# /' "$work/sbatch.err"

in_log() { grep -qx "$1" "$log" 2>/dev/null; }
show() { sctl show job "$job" 2>&1 | sed 's/^/# /'; [ -f "$log" ] && sed 's/^/# log: /' "$log"; }

wait_for 30 in_log "start restart=0"
ok $? "the job runs with SLURM_RESTART_COUNT unset or 0" || show

sctl requeue "$job"
ok $? "scontrol requeue $job"

wait_for 20 in_log "TERM restart=0"
ok $? "the job's SIGTERM trap ran on requeue" || show

wait_for 30 state_is "$job" PENDING
ok $? "the job is PENDING again (reason: $(sq -h -j "$job" -o %r 2>/dev/null))" || show

release "$job"
ok $? "scontrol update JobId=$job StartTime=now"

wait_for 30 in_log "start restart=1"
ok $? "the job runs again with SLURM_RESTART_COUNT=1" || show

touch "$work/finish"
wait_for 30 in_log "done restart=1"
ok $? "the restarted job finishes its work" || show

wait_for 30 sh -c "timeout 10 scontrol show job $job 2>/dev/null | grep -q 'JobState=COMPLETED'"
ok $? "the job ends COMPLETED" || show
is "$(sctl show job "$job" 2>/dev/null | tr ' ' '\n' | grep -E '^(Restarts|ExitCode)=' | tr '\n' ' ')" \
    "Restarts=1 ExitCode=0:0 " "scontrol shows Restarts=1 and exit code 0:0"
done_testing
