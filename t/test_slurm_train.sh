#!/bin/sh
# test_slurm_train.sh: the real trainer through the real template (slurm/hpctrain.sbatch) on
# a private two-node Slurm cluster, 4 ranks, 2 per node, started by srun --mpi=pmix:
# (a) rank 0's start line shows the two-level allreduce: topology from PMIx, node comm 2,
#     cross-node comm 2, hierarchical on;
# (b) an uninterrupted job completes (exit 0) with a final checkpoint;
# (c) a second job is requeued mid-run with "scontrol requeue": the trainer checkpoints on
#     SIGTERM, the job returns to PENDING, starts again (scontrol update StartTime=now),
#     resumes from that checkpoint and completes; its final checkpoint is bit-identical to
#     (b)'s ("hpctrain ckpt diff --strict") and the params hashes match.
# Open MPI's shared-memory BTL can crash in MPI_Comm_dup when two slurmd share one host:
# the jobs use OMPI_MCA_btl=self,tcp (see slurm/README.site).
. "${top_srcdir:-.}/t/lib/tap.sh"
template="${top_srcdir:-.}/slurm/hpctrain.sbatch"
[ -f "$template" ] || skip_all "cannot find slurm/hpctrain.sbatch"
tool="${top_builddir:-.}/tools/hpctrain"
[ -x "$tool" ] || skip_all "tools/hpctrain is not built"
tool="$(cd "$(dirname "$tool")" && pwd)/hpctrain"
template="$(cd "$(dirname "$template")" && pwd)/hpctrain.sbatch"
. "${top_srcdir:-.}/t/slurm/setup.sh"

plan 16
cluster_start
need_pmix

# The data and settings of t/lib/train_data.sh: 2048 samples x 16 features, 4 classes, global
# batch 48 (12 per rank): 42 steps an epoch, 84 in all; here also a checkpoint every 10 steps.
TOTAL=84
. "${top_srcdir:-.}/t/lib/train_data.sh"
train_csv "$work/data.csv"
"$tool" shard -o "$work/data" "$work/data.csv" >"$work/shard.out" 2>&1 ||
    { diag "hpctrain shard failed:"; sed 's/^/# /' "$work/shard.out"; }
train_conf "$work/train.conf" "$work/data/manifest.txt"
echo "checkpoint_every_steps = 10" >>"$work/train.conf"

# What the template reads, and what reaches the ranks (sbatch exports the environment).
unset HPCT_TEST_RAISE_AT_STEP HPCT_TEST_STOP_AT_STEP HPCT_TEST_STEP_DELAY_MS HPCT_LOG_LEVEL \
    HPCT_CKPT_TEST_STOP_AT HPCT_RANKS_PER_NODE HPCT_JOB_END_TIME
HPCT_CONFIG=$work/train.conf HPCT_TRAIN=$tool HPCT_MAX_RESTARTS=2
OMPI_MCA_btl=self,tcp OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export HPCT_CONFIG HPCT_TRAIN HPCT_MAX_RESTARTS OMPI_MCA_btl OMPI_ALLOW_RUN_AS_ROOT \
    OMPI_ALLOW_RUN_AS_ROOT_CONFIRM

# submit NAME: sbatch the template for 4 ranks on 2 nodes, checkpoints in $work/NAME.ck,
# output in $work/NAME.out; prints the job id.
submit() {
    timeout 10 sbatch --parsable -N 2 --ntasks-per-node=2 --cpus-per-task=1 -t 5 -J "hpct-$1" \
        -D "$work" -o "$work/$1.out" "$template" --checkpoint-dir "$work/$1.ck" 2>"$work/sbatch.err"
}
# last_step NAME: the step of the newest progress line in the job's output.
last_step() { sed -n 's/^epoch [0-9]* step \([0-9]*\)\/.*/\1/p' "$work/$1.out" 2>/dev/null | tail -n 1; }
at_step() { s=$(last_step "$1"); [ -n "$s" ] && [ "$s" -ge "$2" ]; }
params_hash() { sed -n 's/^hpctrain: params hash //p' "$work/$1.out"; }
final_ckpt() { printf '%s/%s.ck/ckpt-%012d.h5' "$work" "$1" "$TOTAL"; }

# (a), (b): the uninterrupted job.
t0=$(date +%s)
ref=$(submit ref)
ok $? "sbatch hpctrain.sbatch -N 2 --ntasks-per-node=2 (job ${ref:-none})" || sed 's/^/# /' "$work/sbatch.err"
wait_for 90 ended "$ref"
ok $? "the uninterrupted job ends within 90 s ($(($(date +%s) - t0)) s)" || show_job "$ref" ref
is "$(job_field "$ref" 'JobState|ExitCode')" "JobState=COMPLETED ExitCode=0:0 " \
    "it COMPLETES with exit code 0:0" || show_job "$ref" ref
start_line=$(grep '^hpctrain: .*rank(s) on .*node(s)' "$work/ref.out" | head -n 1)
diag "$start_line"
case $start_line in
"hpctrain: 4 rank(s) on 2 node(s) (topology from pmix); node comm 2, cross-node comm 2, hierarchical on;"*) r=0 ;;
*) r=1 ;;
esac
ok $r "rank 0's start line: 4 ranks on 2 nodes, topology from pmix, node comm 2, cross-node comm 2, hierarchical on"
[ -f "$(final_ckpt ref)" ] && out_has ref "^hpctrain: done: $TOTAL steps, .*checkpoint $(final_ckpt ref)\$"
ok $? "the trainer reports $TOTAL steps done and leaves the final checkpoint ckpt-$(printf %012d $TOTAL).h5" ||
    show_job "$ref" ref
ref_hash=$(params_hash ref)

# (c): the same settings, a fresh checkpoint directory, 40 ms a step (84 steps take 3.4 s or
# more: time enough to requeue it after step 15); requeued mid-run. It runs after (b): two
# jobs at once on the two virtual nodes of one host can crash in MPI_Init.
t0=$(date +%s)
job=$(HPCT_TEST_STEP_DELAY_MS=40 submit req)
ok $? "a second job with the same settings (job ${job:-none})" || sed 's/^/# /' "$work/sbatch.err"
wait_for 60 at_step req 15
ok $? "it trains (progress line of step $(last_step req))" || show_job "$job" req
sctl requeue "$job"
ok $? "scontrol requeue $job after step $(last_step req)"
wait_for 30 state_is "$job" PENDING
ok $? "the job is PENDING again (reason: $(sq -h -j "$job" -o %r 2>/dev/null))" || show_job "$job" req
stop=$(sed -n 's/^hpctrain: stopped by signal 15 after step \([0-9]*\); checkpoint written.*/\1/p' "$work/req.out")
diag "trainer: $(grep -E '^hpctrain: stopped|^hpctrain.sbatch: .*(SIGTERM|status)' "$work/req.out" | tr '\n' ' ')"
[ -n "$stop" ] && [ -f "$(printf '%s/req.ck/ckpt-%012d.h5' "$work" "$stop")" ]
ok $? "the trainer checkpointed on SIGTERM after step ${stop:-?}" || show_job "$job" req

release "$job"
wait_for 90 ended "$job"
ok $? "released with StartTime=now, the job runs again and ends ($(($(date +%s) - t0)) s for job c)" ||
    show_job "$job" req
is "$(job_field "$job" 'JobState|Restarts|ExitCode')" "JobState=COMPLETED Restarts=1 ExitCode=0:0 " \
    "it COMPLETES after one restart, exit code 0:0" || show_job "$job" req
resumed=$(sed -n 's/^hpctrain: resumed from the checkpoint of step \([0-9]*\)$/\1/p' "$work/req.out")
[ -n "$resumed" ] && [ "$resumed" = "${stop:-none}" ]
ok $? "the second run resumed from the checkpoint of step ${resumed:-none} (the SIGTERM checkpoint: ${stop:-none})"

out=$(timeout 30 "$tool" ckpt diff --strict "$(final_ckpt ref)" "$(final_ckpt req)" 2>&1)
ok $? "hpctrain ckpt diff --strict: the final checkpoints of (b) and (c) are bit-identical" ||
    diag "$out"
[ -n "$ref_hash" ] && [ "$(params_hash req)" = "$ref_hash" ]
ok $? "the params hashes match (${ref_hash:-none} and $(params_hash req | tr '\n' ' '))"
done_testing
