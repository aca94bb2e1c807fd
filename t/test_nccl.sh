#!/bin/sh
# test_nccl.sh: mirrored GPU replicas (t/test_nccl run) through hpct_init and the public calls,
# in four layouts: one node of 2 ranks (NCCL only), 2 virtual nodes of 1 rank (device
# averages staged through host memory), 2 virtual nodes of 2 and of 4 (NCCL in the node, MPI
# across; the built-in model's averages overlap backward in every layout with NCCL).
# Skips without --with-nccl, mpirun or a CUDA device; layouts that need 2 GPUs skip with 1.
. "${top_srcdir:-.}/t/lib/tap.sh"
builddir=${top_builddir:-.}
prog=$builddir/t/test_nccl
grep -q '^#define HPCT_HAVE_NCCL 1' "$builddir/config.h" || skip_all "built without --with-nccl"
[ -n "$MPIRUN" ] || skip_all "no mpirun found by configure"
[ -x "$prog" ] || skip_all "$prog is not built"
# Under the device double (configure --with-cuda-double) every process has a CPU "GPU" of
# its own, so every layout runs, each under several seeds of the double's stream timing, and
# every point says it ran on the double, not on a GPU.
tag= seeds=0
if grep -q '^#define HPCT_CUDA_DOUBLE 1' "$builddir/config.h"; then
    devices=64 tag="[device double, not a GPU] " seeds=${CUDA_DOUBLE_SEEDS:-1 2}
else
    devices=$("$prog" probe)
fi
case $devices in [1-9]*) ;; *) skip_all "no CUDA device ($devices)" ;; esac
# More ranks than cores needs --oversubscribe with Open MPI; other MPIs do not know the flag.
oversub=
"$MPIRUN" --version 2>&1 | grep -q 'Open MPI' && oversub=--oversubscribe
tmp=$(mktemp -d "${TMPDIR:-/tmp}/hpct-nccl.XXXXXX") || skip_all "mktemp failed"
trap 'rm -rf "$tmp"' EXIT

# The library's info log says which path hpct_init set up: NCCL's communicator joined ("nccl:
# node rank 0 of N joined") or device averages staged through host memory.
nccl_seen='nccl: node rank 0 of [0-9]* joined'
staged_seen='device averages: staged through host memory'

# run_once SEED NP PATH-SEEN ENV...: one run of the layout; 0 when it passed on that path.
run_once() {
    seed=$1 np=$2 seen=$3
    shift 3
    env CUDA_DOUBLE_SEED="$seed" "$@" timeout -s KILL 300 "$MPIRUN" $oversub -np "$np" \
        "$prog" run >"$tmp/out" 2>&1
    rc=$?
    sed -n 's/^\(PASS\|FAIL\)/# &/p' "$tmp/out"
    # How the cross-node phase was done (gpu_validate.sh's CUDA-aware row reads it).
    grep -m1 'device averages across nodes' "$tmp/out" | sed 's/^.*device averages/# device averages/'
    path=0
    grep -q "$seen" "$tmp/out" || path=1
    [ $rc -eq 0 ] && ! grep -q '^FAIL' "$tmp/out" && [ $path -eq 0 ] && return 0
    diag "exit $rc${tag:+, double seed $seed}"
    [ $path -eq 0 ] || diag "the log does not say '$seen': another path ran"
    grep -v '^PASS' "$tmp/out" | tail -n 20 | sed 's/^/#   /'
    return 1
}

layout() { # DESC NP GPUS-NEEDED PATH-SEEN ENV...
    desc=$1 np=$2 need=$3 seen=$4
    shift 4
    if [ "$devices" -lt "$need" ]; then
        skip 1 "$desc: needs $need GPUs, $devices visible"
        return
    fi
    failed=0
    for seed in $seeds; do run_once "$seed" "$np" "$seen" "$@" || failed=1; done
    ok $failed "$tag$desc${tag:+ (seeds $seeds)}"
}

plan 16
# (under the double: two devices, rank 1 on device 1, and a thread touching device 0 by default
# is an error, so the frees from a second thread must make the context's device current)
layout "W=2, one node (NCCL reduce-scatter + all-gather)" 2 2 "$nccl_seen" HPCT_RANKS_PER_NODE=2 \
    CUDA_DOUBLE_DEVICES=2 CUDA_DOUBLE_STRICT_DEVICE=1
layout "W=2, two virtual nodes of 1 (staged through pinned host memory)" 2 1 "$staged_seen" \
    HPCT_RANKS_PER_NODE=1
# HPCT_NCCL_SOLO=1: every virtual node of one rank makes an NCCL communicator of one rank, so
# one GPU runs NCCL's set-up, stream marks, the overlapped cross-node queue and teardown.
layout "W=2, two virtual nodes of 1, HPCT_NCCL_SOLO=1 (NCCL nranks=1, MPI across)" 2 1 \
    "$nccl_seen" HPCT_RANKS_PER_NODE=1 HPCT_NCCL_SOLO=1
layout "W=3, three virtual nodes of 1, HPCT_NCCL_SOLO=1, HPCT_CUDA_AWARE_MPI=0" 3 1 \
    "$nccl_seen" HPCT_RANKS_PER_NODE=1 HPCT_NCCL_SOLO=1 HPCT_CUDA_AWARE_MPI=0
layout "W=4, two virtual nodes of 2 (NCCL in the node, MPI across)" 4 2 "$nccl_seen" \
    HPCT_RANKS_PER_NODE=2
layout "W=8, two virtual nodes of 4 (NCCL in the node, MPI across)" 8 4 "$nccl_seen" \
    HPCT_RANKS_PER_NODE=4
# The same as W=4 with the cross-node phase forced through pinned host memory (where the MPI is
# CUDA-aware, the layout above passed device pointers, in the averages overlapped with backward
# and in the whole-buffer ones: both sides are then covered).
# The CUDA-aware cross-node phase: under the double, which then plays a CUDA-aware MPI; on a
# GPU machine the W=4 layout above takes it when the MPI is CUDA-aware.
if [ -n "$tag" ]; then
    layout "W=4, two virtual nodes of 2, CUDA-aware MPI (device pointers across nodes)" 4 2 \
        'CUDA-aware MPI, device pointers' HPCT_RANKS_PER_NODE=2 CUDA_DOUBLE_CUDA_AWARE=1
else
    skip 1 "W=4, CUDA-aware MPI forced: only under the device double (a real MPI decides)"
fi
layout "W=4, two virtual nodes of 2, HPCT_CUDA_AWARE_MPI=0 (staged)" 4 2 "$nccl_seen" \
    HPCT_RANKS_PER_NODE=2 HPCT_CUDA_AWARE_MPI=0
if [ "$devices" -lt 2 ]; then
    skip 1 "HPCT_CUDA_AWARE_MPI=maybe: needs 2 GPUs, $devices visible"
else
    env HPCT_RANKS_PER_NODE=2 HPCT_CUDA_AWARE_MPI=maybe timeout -s KILL 300 \
        "$MPIRUN" $oversub -np 2 "$prog" badenv >"$tmp/out" 2>&1
    grep -q "HPCT_CUDA_AWARE_MPI is 'maybe'" "$tmp/out" && ! grep -q '^FAIL' "$tmp/out"
    ok $? "${tag}HPCT_CUDA_AWARE_MPI=maybe: hpct_init refuses it, naming the variable" ||
        sed 's/^/#   /' "$tmp/out" | tail -n 20
fi
# A value of HPCT_NCCL_SOLO other than 0 or 1 is refused by name (one GPU is enough).
env HPCT_RANKS_PER_NODE=1 HPCT_NCCL_SOLO=yes timeout -s KILL 120 \
    "$MPIRUN" $oversub -np 2 "$prog" run >"$tmp/out" 2>&1
rc=$?
[ $rc -ne 0 ] && grep -q "HPCT_NCCL_SOLO is 'yes'" "$tmp/out"
ok $? "${tag}HPCT_NCCL_SOLO=yes: hpct_init refuses it, naming the variable (exit $rc)" ||
    tail -n 20 "$tmp/out" | sed 's/^/#   /'
# A failed NCCL set-up (planted on rank 1): under HPCT_NCCL=auto every rank stages instead,
# with one warning naming the rank; under HPCT_NCCL=1 hpct_init fails on every rank.
env HPCT_RANKS_PER_NODE=1 HPCT_NCCL_SOLO=1 HPCT_TEST_HOOKS=1 HPCT_TEST_NCCL_FAIL_RANK=1 \
    timeout -s KILL 120 "$MPIRUN" $oversub -np 2 "$prog" run >"$tmp/out" 2>&1
rc=$?
[ $rc -eq 0 ] && ! grep -q '^FAIL' "$tmp/out" &&
    grep -q 'NCCL could not be set up (first on rank 1' "$tmp/out"
ok $? "${tag}NCCL set-up fails on rank 1, HPCT_NCCL=auto: every rank stages instead, one warning" ||
    tail -n 20 "$tmp/out" | sed 's/^/#   /'
env HPCT_RANKS_PER_NODE=1 HPCT_NCCL_SOLO=1 HPCT_NCCL=1 HPCT_TEST_HOOKS=1 \
    HPCT_TEST_NCCL_FAIL_RANK=1 timeout -s KILL 120 "$MPIRUN" $oversub -np 2 "$prog" run \
    >"$tmp/out" 2>&1
rc=$?
[ $rc -ne 0 ] && grep -q 'rank 1 could not join the node.s NCCL communicator' "$tmp/out"
ok $? "${tag}NCCL set-up fails on rank 1, HPCT_NCCL=1: hpct_init fails, naming rank 1 (exit $rc)" ||
    tail -n 20 "$tmp/out" | sed 's/^/#   /'
# Faults injected into NCCL by the double (W=2, one node, deadline 3 s): collective #3 never
# completes on rank 1, then fails there; the deadline aborts the communicator and is named,
# the failure is named with NCCL's words, and the job ends (no rank waits for ever).
fault() { # VARIABLE=VALUE PATTERN DESC
    if [ -z "$tag" ]; then
        skip 1 "$3: needs the device double (faults injected into NCCL)"
        return
    fi
    env HPCT_RANKS_PER_NODE=2 "$1" TEST_NCCL_DEADLINE=3 timeout -s KILL 120 \
        "$MPIRUN" $oversub -np 2 "$prog" run >"$tmp/out" 2>&1
    rc=$?
    [ $rc -ne 0 ] && [ $rc -ne 137 ] && grep -q "$2" "$tmp/out"
    ok $? "$tag$3 (exit $rc)" || tail -n 20 "$tmp/out" | sed 's/^/#   /'
}
fault CUDA_DOUBLE_NCCL_HANG=1:3 \
    'did not complete on node rank [01] of 2 before the deadline; the NCCL communicator was aborted' \
    "an NCCL collective that never completes on rank 1: the deadline aborts it, named"
fault CUDA_DOUBLE_NCCL_FAIL=1:0 \
    'ncclCommInitRankConfig on node rank 1 of 2 failed: unhandled system error (nccl double): bootstrap failed' \
    "ncclCommInitRankConfig fails at once on rank 1: named with NCCL's last error, handle aborted"
fault CUDA_DOUBLE_NCCL_FAIL=1:3 \
    'on node rank 1 of 2 failed: unhandled system error (nccl double): collective #3 failed' \
    "an NCCL collective that fails on rank 1: its error is named and the job ends"
# HPCT_CUDA_AWARE_MPI=1 on an MPI that answers "not CUDA-aware" is refused by name (it would
# crash inside MPI); on a CUDA-aware MPI the run passes device pointers and succeeds.
env HPCT_RANKS_PER_NODE=1 HPCT_NCCL_SOLO=1 HPCT_CUDA_AWARE_MPI=1 timeout -s KILL 120 \
    "$MPIRUN" $oversub -np 2 "$prog" run >"$tmp/out" 2>&1
rc=$?
if grep -q 'HPCT_CUDA_AWARE_MPI=1, but this MPI answers' "$tmp/out"; then
    [ $rc -ne 0 ]
else
    [ $rc -eq 0 ] && grep -q 'CUDA-aware MPI, device pointers' "$tmp/out"
fi
ok $? "${tag}HPCT_CUDA_AWARE_MPI=1: refused on an MPI that is not CUDA-aware, used on one that is" ||
    tail -n 20 "$tmp/out" | sed 's/^/#   /'
done_testing
