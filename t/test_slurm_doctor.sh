#!/bin/sh
# test_slurm_doctor.sh: `hpctrain doctor` inside jobs of a private two-node Slurm cluster,
# started by srun --mpi=pmix, 2 ranks on 2 nodes:
# (a) the template (slurm/hpctrain.sbatch) with HPCT_PREFLIGHT=1, submitted with
#     --no-requeue: the preflight names the job that cannot be requeued, with the #SBATCH line
#     to add (a WARN), finds the template's --signal=B:USR1@120 in its #SBATCH lines, and the
#     job goes on to train and completes;
# (b) the same with checkpoint_dir under a regular file: the preflight FAILs naming it and
#     the job ends with exit code 1 before any training;
# (c) a plain batch script with no --signal: the signal row WARNs with the #SBATCH line; with
#     SBATCH_SIGNAL=USR2@30 it names a signal the trainer does not catch, and --strict makes
#     that exit 1.
. "${top_srcdir:-.}/t/lib/tap.sh"
template="${top_srcdir:-.}/slurm/hpctrain.sbatch"
[ -f "$template" ] || skip_all "cannot find slurm/hpctrain.sbatch"
tool="${top_builddir:-.}/tools/hpctrain"
[ -x "$tool" ] || skip_all "tools/hpctrain is not built"
tool="$(cd "$(dirname "$tool")" && pwd)/hpctrain"
template="$(cd "$(dirname "$template")" && pwd)/hpctrain.sbatch"
. "${top_srcdir:-.}/t/slurm/setup.sh"

plan 14
cluster_start
need_pmix

. "${top_srcdir:-.}/t/lib/train_data.sh"
train_csv "$work/data.csv"
"$tool" shard -o "$work/data" "$work/data.csv" >"$work/shard.out" 2>&1 ||
    { diag "hpctrain shard failed:"; sed 's/^/# /' "$work/shard.out"; }
train_conf "$work/train.conf" "$work/data/manifest.txt"
: >"$work/afile"

unset HPCT_TEST_RAISE_AT_STEP HPCT_TEST_STOP_AT_STEP HPCT_TEST_STEP_DELAY_MS HPCT_LOG_LEVEL \
    HPCT_CKPT_TEST_STOP_AT HPCT_RANKS_PER_NODE HPCT_JOB_END_TIME HPCT_TEST_SLOW_RANK \
    HPCT_TEST_FAKE_VERSION SBATCH_SIGNAL
HPCT_CONFIG=$work/train.conf HPCT_TRAIN=$tool HPCT_MAX_RESTARTS=0 HPCT_PREFLIGHT=1
OMPI_MCA_btl=self,tcp OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export HPCT_CONFIG HPCT_TRAIN HPCT_MAX_RESTARTS HPCT_PREFLIGHT OMPI_MCA_btl OMPI_ALLOW_RUN_AS_ROOT \
    OMPI_ALLOW_RUN_AS_ROOT_CONFIRM

# submit NAME SBATCH-OPTIONS... -- SCRIPT ARGS...: one job of 2 ranks on 2 nodes, output in
# $work/NAME.out; prints the job id.
submit() {
    name=$1; shift
    timeout 10 sbatch --parsable -N 2 --ntasks-per-node=1 --cpus-per-task=1 -t 5 -J "hpct-$name" \
        -D "$work" -o "$work/$name.out" "$@" 2>"$work/sbatch.err"
}
# row NAME CHECK: the row of CHECK in the job's output as "RESULT DETAIL".
row() { sed -n "s/^$2  *\\(ok\\|WARN\\|FAIL\\)  */\\1 /p" "$work/$1.out"; }

# (a)
job=$(submit pre --no-requeue "$template" --epochs 1 --checkpoint-dir "$work/pre.ck")
ok $? "sbatch --no-requeue hpctrain.sbatch with HPCT_PREFLIGHT=1 (job ${job:-none})" ||
    sed 's/^/# /' "$work/sbatch.err"
wait_for 120 ended "$job"
ok $? "the job ends" || show_job "$job" pre
row pre "slurm requeue" | grep -q "^WARN job $job cannot be requeued (Requeue=0): .*; add: #SBATCH --requeue$"
ok $? "the preflight names the job that cannot be requeued, with the #SBATCH line" ||
    show_job "$job" pre
row pre "slurm signal" | grep -q "^ok job $job: --signal=B:USR1@120 (the batch script's #SBATCH lines): SIGUSR1 120 s before the time limit"
ok $? "... finds the template's --signal=B:USR1@120 in its #SBATCH lines" || show_job "$job" pre
row pre "ranks per node" | grep -q "^ok 2 rank(s) on 2 node(s)" &&
    row pre "fabric: links" | grep -q "^ok 1 MiB exchange between node 0 (host .*) and node 1 (host .*): "
ok $? "... sees 2 ranks on 2 nodes (PMIx) and measures the link between them" || show_job "$job" pre
grep -q "^hpctrain doctor: .* 0 FAIL; exit 0$" "$work/pre.out"
is "$? $(job_field "$job" 'JobState|ExitCode')" "0 JobState=COMPLETED ExitCode=0:0 " \
    "... exits 0 (a WARN only), and the job trains and COMPLETES" || show_job "$job" pre
grep -q "^hpctrain: done: " "$work/pre.out"
ok $? "... the trainer's done line follows the table" || show_job "$job" pre

# (b)
job=$(submit bad "$template" --epochs 1 --checkpoint-dir "$work/afile/ck")
ok $? "the template with checkpoint_dir under a regular file (job ${job:-none})" ||
    sed 's/^/# /' "$work/sbatch.err"
wait_for 120 ended "$job"
row bad "checkpoint dir" | grep -qF "FAIL checkpoint_dir $work/afile/ck: $work/afile is not a directory" &&
    grep -q "hpctrain doctor exited 1: not training" "$work/bad.out"
ok $? "the preflight FAILs naming checkpoint_dir, and the template stops" || show_job "$job" bad
is "$(job_field "$job" 'JobState|ExitCode')" "JobState=FAILED ExitCode=1:0 " \
    "the job FAILs with exit code 1" || show_job "$job" bad
! grep -q "^epoch \|^hpctrain: done" "$work/bad.out"
ok $? "... without training" || show_job "$job" bad

# (c)
cat >"$work/plain.sh" <<JOB
#!/bin/sh
srun --mpi=pmix "$tool" doctor --config "$work/train.conf" --no-fabric --checkpoint-dir "$work/c.ck"
echo "doctor exit \$?"
SBATCH_SIGNAL=USR2@30 srun --mpi=pmix "$tool" doctor --config "$work/train.conf" --no-fabric \
    --checkpoint-dir "$work/c.ck" --strict
echo "strict doctor exit \$?"
JOB
job=$(submit plain "$work/plain.sh")
wait_for 120 ended "$job"
row plain "slurm signal" | head -n 1 |
    grep -q "^WARN job $job: no --signal in its batch script's #SBATCH lines nor in SBATCH_SIGNAL: .*; add: #SBATCH --signal=B:USR1@120$" &&
    grep -q "^doctor exit 0$" "$work/plain.out"
ok $? "a plain script without --signal: the signal row WARNs with the #SBATCH line, exit 0" ||
    show_job "$job" plain
row plain "slurm signal" | sed -n 2p |
    grep -q "^WARN job $job: --signal=USR2@30 (SBATCH_SIGNAL) sends a signal the trainer does not catch" &&
    grep -q "^strict doctor exit 1$" "$work/plain.out"
ok $? "SBATCH_SIGNAL=USR2@30: named as a signal the trainer does not catch; --strict exits 1" ||
    show_job "$job" plain
done_testing
