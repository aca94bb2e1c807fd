#!/bin/sh
# test_slurm_insitu.sh: the in-situ example's batch script (examples/fortran/heat_insitu.sbatch,
# which sources slurm/requeue.sh) on a private two-node Slurm cluster, 2 ranks, one per
# node, started by srun --mpi=pmix:
# (a) an uninterrupted job runs examples/fortran/heat_insitu to the end: COMPLETED 0:0, its
#     "heat: done:" line and its final checkpoint (the field of both ranks gathered);
# (b) a second job is requeued with "scontrol requeue" after its report of step 100: the
#     program checkpoints simulation and surrogate on SIGTERM and exits 75, the script leaves
#     the requeue to Slurm, the job returns to PENDING, starts again (StartTime=now),
#     resumes at that step and COMPLETES with Restarts=1; its field checksum equals
#     (a)'s, and "hpctrain ckpt diff --strict" finds the final checkpoints equal.
# The program needs about 1 ms a step: job (b) sleeps 6 ms after each (the library's test
# hook HPCT_TEST_STEP_DELAY_MS, doc/insitu.md) so that the requeue comes mid-run (400 steps
# take 2.4 s or more; the requeue follows the report of step 100). The two jobs run one after
# the other: two jobs at once on the two virtual nodes of one host can crash in MPI_Init.
# Open MPI's shared-memory BTL can crash in MPI_Comm_dup when two slurmd share one host:
# the jobs use OMPI_MCA_btl=self,tcp (see slurm/README.site).
. "${top_srcdir:-.}/t/lib/tap.sh"
need_fortran
script="${top_srcdir:-.}/examples/fortran/heat_insitu.sbatch"
[ -f "$script" ] || skip_all "cannot find examples/fortran/heat_insitu.sbatch"
heat="${top_builddir:-.}/examples/fortran/heat_insitu"
[ -x "$heat" ] || skip_all "examples/fortran/heat_insitu is not built"
tool="${top_builddir:-.}/tools/hpctrain"
[ -x "$tool" ] || skip_all "tools/hpctrain is not built"
script="$(cd "$(dirname "$script")" && pwd)/heat_insitu.sbatch"
heat="$(cd "$(dirname "$heat")" && pwd)/heat_insitu"
tool="$(cd "$(dirname "$tool")" && pwd)/hpctrain"
slurm_dir="$(cd "${top_srcdir:-.}/slurm" && pwd)"
. "${top_srcdir:-.}/t/slurm/setup.sh"

plan 16
cluster_start
need_pmix

STEPS=400
# What the script reads, and what reaches the ranks (sbatch exports the environment).
unset HPCT_TEST_RAISE_AT_STEP HPCT_TEST_STOP_AT_STEP HPCT_TEST_STEP_DELAY_MS HPCT_LOG_LEVEL \
    HPCT_CKPT_TEST_STOP_AT HPCT_RANKS_PER_NODE HPCT_JOB_END_TIME HPCTRAIN_ROOT HEAT_CHECKPOINTS
HEAT_PROGRAM=$heat HPCT_SLURM_DIR=$slurm_dir HPCT_MAX_RESTARTS=2
HEAT_SETTINGS=$(cd "${top_srcdir:-.}/examples/fortran" && pwd)/heat_insitu.conf
OMPI_MCA_btl=self,tcp OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export HEAT_PROGRAM HEAT_SETTINGS HPCT_SLURM_DIR HPCT_MAX_RESTARTS OMPI_MCA_btl OMPI_ALLOW_RUN_AS_ROOT \
    OMPI_ALLOW_RUN_AS_ROOT_CONFIRM

# submit NAME: sbatch the script for 2 ranks on 2 nodes, checkpoints in $work/NAME.ck,
# output in $work/NAME.out; prints the job id.
submit() {
    HEAT_CHECKPOINTS=$work/$1.ck timeout 10 sbatch --parsable -N 2 --ntasks-per-node=1 -t 5 \
        -J "heat-$1" -D "$work" -o "$work/$1.out" "$script" --steps $STEPS --report 50 \
        2>"$work/sbatch.err"
}
# last_step NAME: the step of the newest report in the job's output.
last_step() { sed -n 's/^heat: step \([0-9]*\) t .*/\1/p' "$work/$1.out" 2>/dev/null | tail -n 1; }
at_step() { s=$(last_step "$1"); [ -n "$s" ] && [ "$s" -ge "$2" ]; }
done_line() { sed -n 's/^heat: done: //p' "$work/$1.out"; }
# ckpt NAME STEP: the job's checkpoint file of STEP (rank 0 writes the gathered field).
ckpt() { printf '%s/%s.ck/ckpt-%012d.h5' "$work" "$1" "$2"; }

# (a): the uninterrupted job.
t0=$(date +%s)
ref=$(submit ref)
ok $? "sbatch heat_insitu.sbatch -N 2 --ntasks-per-node=1 (job ${ref:-none})" || sed 's/^/# /' "$work/sbatch.err"
wait_for 60 ended "$ref"
ok $? "the uninterrupted job ends within 60 s ($(($(date +%s) - t0)) s)" || show_job "$ref" ref
is "$(job_field "$ref" 'JobState|ExitCode')" "JobState=COMPLETED ExitCode=0:0 " \
    "it COMPLETES with exit code 0:0" || show_job "$ref" ref
ref_done=$(done_line ref)
diag "heat: done: $ref_done"
case $ref_done in
"$STEPS steps, t "*", field checksum "*) r=0 ;;
*) r=1 ;;
esac
[ $r = 0 ] && [ -f "$(ckpt ref $STEPS)" ]
ok $? "the program reports $STEPS steps done and leaves its final checkpoint" ||
    show_job "$ref" ref

# (b): the same run, a fresh checkpoint directory, 6 ms a step; requeued mid-run.
t0=$(date +%s)
job=$(HPCT_TEST_STEP_DELAY_MS=6 submit req)
ok $? "a second job with the same arguments (job ${job:-none})" || sed 's/^/# /' "$work/sbatch.err"
wait_for 60 at_step req 100
ok $? "it runs (report of step $(last_step req))" || show_job "$job" req
sctl requeue "$job"
ok $? "scontrol requeue $job after the report of step $(last_step req)"
wait_for 30 state_is "$job" PENDING
ok $? "the job is PENDING again (reason: $(sq -h -j "$job" -o %r 2>/dev/null))" || show_job "$job" req
stop=$(sed -n 's/^heat: preempted after step \([0-9]*\); checkpoint written; exit 75$/\1/p' "$work/req.out")
diag "$(grep -E '^heat: preempted|^heat_insitu.sbatch: .*(SIGTERM|status)' "$work/req.out" | tr '\n' ' ')"
[ -n "$stop" ] && [ "$stop" -lt $STEPS ] && [ -f "$(ckpt req "$stop")" ]
ok $? "the program checkpointed the field of both ranks on SIGTERM after step ${stop:-?} and exited 75" ||
    show_job "$job" req
out_has req "^heat_insitu.sbatch: job $job: program checkpointed after SIGTERM; Slurm requeues or cancels the job itself\$"
ok $? "the script left the requeue to Slurm (no second requeue)" || show_job "$job" req

release "$job"
wait_for 60 ended "$job"
ok $? "released with StartTime=now, the job runs again and ends ($(($(date +%s) - t0)) s for job b)" ||
    show_job "$job" req
is "$(job_field "$job" 'JobState|Restarts|ExitCode')" "JobState=COMPLETED Restarts=1 ExitCode=0:0 " \
    "it COMPLETES after one restart, exit code 0:0" || show_job "$job" req
resumed=$(sed -n 's/^heat: resumed at step \([0-9]*\) (t .*/\1/p' "$work/req.out")
[ -n "$resumed" ] && [ "$resumed" = "${stop:-none}" ]
ok $? "the second run resumed at step ${resumed:-none} (the SIGTERM checkpoint: ${stop:-none})" ||
    show_job "$job" req
[ -n "$ref_done" ] && [ "$(done_line req)" = "$ref_done" ]
ok $? "its \"heat: done:\" line (the field's checksum) equals the uninterrupted job's" ||
    diag "requeued: $(done_line req)" "reference: $ref_done"

timeout 30 "$tool" ckpt diff --strict "$(ckpt ref $STEPS)" "$(ckpt req $STEPS)" >"$work/diff" 2>&1
ok $? "hpctrain ckpt diff --strict: the final checkpoint (model, optimizer, field) equals (a)'s" ||
    sed 's/^/# /' "$work/diff"
done_testing
