#!/bin/sh
# test_gpu_train.sh: whole training runs on the cuda backend against the cpu backend.
# hpctrain train at W = 2 (one node: NCCL in the node; with one real GPU, two virtual nodes of
# one rank) and W = 4 (two virtual nodes of 2: NCCL in the node, MPI across; needs 2 GPUs or
# the double), the parameter hashes of all ranks compared after every step
# (consistency_interval = 1, so a run that logged every step and exited 0 compared them all),
# the loss of every step within 2e-3 (relative) of the cpu run at the same W (fp32 sums in
# another order on each backend); then the in-situ session (t/lib/insitu_prog same) at W = 2
# on the cuda backend: every step, bit-identical replicas and losses on every rank, and with x
# and y in device memory the same parameters as from host arrays; a convolutional model
# (the layers key: conv, max pool, conv, dense) at W = 2 and 4 as the first runs; and the
# in-situ session of one rank, whose fused step is captured as CUDA graphs: 100 steps over 8
# batch sizes equal to HPCT_CUDA_GRAPH=0's, and to a run stopped by SIGTERM and resumed; and
# hpctrain train at W = 1 (fused steps, the next batch staged ahead), against the cpu run and
# stopped and resumed.
# In a tree built --with-cuda-double every point says so and each cuda run repeats under the
# seeds in CUDA_DOUBLE_SEEDS (default 1 2). Skips without the cuda backend or a device.
. "${top_srcdir:-.}/t/lib/tap.sh"
. "${top_srcdir:-.}/t/lib/train_data.sh"
b=${top_builddir:-.}
grep -q '^#define HPCT_HAVE_CUDA 1' "$b/config.h" || skip_all "built without the cuda backend"
[ -n "${MPIRUN:-}" ] || skip_all "no mpirun found by configure"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
tag= seeds=0 devices=
if grep -q '^#define HPCT_CUDA_DOUBLE 1' "$b/config.h"; then
    tag="[device double, not a GPU] " seeds=${CUDA_DOUBLE_SEEDS:-1 2} devices=64
else
    devices=$("$b/t/test_nccl" probe 2>/dev/null)
fi
case $devices in [1-9]*) ;; *) skip_all "no CUDA device (${devices:-t/test_nccl probe failed})" ;; esac
oversub=
"$MPIRUN" --version 2>&1 | grep -q 'Open MPI' && oversub=--oversubscribe
tmp=$(mktemp -d "${TMPDIR:-/tmp}/hpct-gputrain.XXXXXX") || skip_all "mktemp failed"
trap 'rm -rf "$tmp"' EXIT

plan 15
train_csv "$tmp/data.csv"
timeout -s KILL 60 "$b/tools/hpctrain" shard -o "$tmp/ds" -n 4 "$tmp/data.csv" >"$tmp/shard.log" 2>&1
ok $? "${tag}hpctrain shard: the runs' data" "$tmp/shard.log"
train_conf "$tmp/base.conf" "$tmp/ds/manifest.txt"
printf 'consistency_interval = 1\nresume = never\n' >>"$tmp/base.conf"

# run NAME BACKEND NP ENV...: hpctrain train; NAME.log, exit status returned.
run() {
    name=$1 be=$2 np=$3
    shift 3
    env "$@" timeout -s KILL 120 "$MPIRUN" $oversub -np "$np" "$b/tools/hpctrain" train \
        --config "${conf:-$tmp/base.conf}" --backend "$be" --checkpoint-dir "$tmp/ck-$name" \
        >"$tmp/$name.log" 2>&1
}

# The losses of the logged steps, one a line.
losses() {
    awk '/^epoch .* loss / { for (i = 1; i < NF; i++) if ($i == "loss") print $(i + 1) }' "$1"
}

# follows CPU GPU: every step of GPU logged, its loss within 2e-3 of CPU's; says the worst.
follows() {
    losses "$1" >"$tmp/a" && losses "$2" >"$tmp/b"
    paste "$tmp/a" "$tmp/b" | awk -v n="$(wc -l <"$tmp/a")" '
        { d = $1 - $2; if (d < 0) d = -d; d /= ($1 > 1e-6 ? $1 : 1e-6); if (d > w) w = d; m++ }
        END { printf "# %d steps, worst relative difference %.3g\n", m, w
              exit !(m == n && m > 0 && w <= 2e-3) }'
}

# layout DESC NP GPUS ENV...: the cpu run, then the cuda run under each seed.
layout() {
    desc=$1 np=$2 need=$3
    shift 3
    if [ "$devices" -lt "$need" ]; then
        skip 1 "$desc: needs $need GPUs, $devices visible"
        return
    fi
    run "cpu$np" cpu "$np" "$@"
    rc=$?
    failed=0
    [ $rc -eq 0 ] || { failed=1; diag "the cpu run failed: exit $rc"; tail -n 5 "$tmp/cpu$np.log"; }
    for seed in $seeds; do
        [ $failed -eq 0 ] || break
        run "cuda$np" cuda "$np" CUDA_DOUBLE_SEED="$seed" HPCT_LOG_LEVEL=3 "$@"
        rc=$?
        # the library's info log names the backend each rank started
        used=$(grep -c 'cuda backend on CUDA device' "$tmp/cuda$np.log")
        case "$*" in *CUDA_DOUBLE_CUDA_AWARE=1*) # and the path: device pointers through MPI
            grep -q 'CUDA-aware MPI, device pointers' "$tmp/cuda$np.log" || used=0 ;;
        esac
        [ $rc -eq 0 ] && [ "$used" -eq "$np" ] && follows "$tmp/cpu$np.log" "$tmp/cuda$np.log" &&
            continue
        [ "$used" -eq "$np" ] || diag "$used of $np ranks said they started the cuda backend"
        failed=1
        diag "exit $rc${tag:+, double seed $seed}"
        tail -n 8 "$tmp/cuda$np.log" | sed 's/^/#   /'
    done
    ok $failed "$tag$desc: replicas equal after every step, losses follow the cpu run"
}

if [ "$devices" -ge 2 ]; then
    layout "hpctrain train W=2, one node (NCCL in the node)" 2 2 HPCT_RANKS_PER_NODE=2
else
    layout "hpctrain train W=2, two virtual nodes of 1 (staged)" 2 1 HPCT_RANKS_PER_NODE=1
fi
layout "hpctrain train W=4, two virtual nodes of 2 (NCCL in the node, MPI across)" 4 2 \
    HPCT_RANKS_PER_NODE=2
if [ -n "$tag" ]; then
    layout "hpctrain train W=4, 2x2, CUDA-aware MPI (the double's device pointers across nodes)" \
        4 2 HPCT_RANKS_PER_NODE=2 CUDA_DOUBLE_CUDA_AWARE=1
else
    skip 1 "hpctrain train W=4, CUDA-aware MPI forced: only under the device double"
fi
layout "hpctrain train W=2, two virtual nodes of 1, HPCT_NCCL_SOLO=1 (NCCL of one rank)" 2 1 \
    HPCT_RANKS_PER_NODE=1 HPCT_NCCL_SOLO=1 HPCT_NCCL=1

# hpctrain train at W = 1 on the cuda backend (issue 33): every step is the fused step, its
# graph captured once per pinned staging slot (2 captures, 82 replays in 84 steps), the next
# batch read and staged while the device runs a step; then a SIGTERM after step 30 (exit 75)
# and a resumed run end with the checkpoint of the uninterrupted run (ckpt diff --strict).
graphs_in() { sed -n 's/.*fused step: \([0-9]*\) steps, \([0-9]*\) of them replayed CUDA graphs (\([0-9]*\) captured).*/\1 \2 \3/p' "$1"; }
layout "hpctrain train W=1: the fused step (CUDA graphs, the next batch staged ahead)" 1 1
g1=$(graphs_in "$tmp/cuda1.log")
[ "$g1" = "84 82 2" ]
ok $? "${tag}hpctrain train W=1 on the cuda backend: 84 fused steps, 82 replayed from 2 graphs (${g1:-no fused-step line in the log})" ||
    tail -n 4 "$tmp/cuda1.log" | sed 's/^/#   /'
grep -v '^resume = never$' "$tmp/base.conf" >"$tmp/resume.conf"
w1() { # NAME DIR ENV...: hpctrain train W=1 on the cuda backend, checkpoints in $tmp/DIR
    name=$1 dir=$2
    shift 2
    env HPCT_LOG_LEVEL=3 CUDA_DOUBLE_SEED="${seeds%% *}" "$@" timeout -s KILL 120 "$MPIRUN" -np 1 \
        "$b/tools/hpctrain" train --config "$tmp/resume.conf" --backend cuda \
        --checkpoint-dir "$tmp/$dir" >"$tmp/$name.log" 2>&1
    echo "rc $?" >>"$tmp/$name.log"
}
w1 w1full w1full
w1 w1stop w1stop HPCT_TEST_RAISE_AT_STEP=30
"$b/tools/hpctrain" ckpt info "$tmp/w1stop" >"$tmp/w1stop.info" 2>&1
w1 w1resume w1stop
"$b/tools/hpctrain" ckpt diff --strict "$tmp/w1full" "$tmp/w1stop" >"$tmp/w1diff.log" 2>&1
diffrc=$?
grep -q '^rc 0$' "$tmp/w1full.log" && grep -q '^rc 75$' "$tmp/w1stop.log" &&
    grep -q '^rc 0$' "$tmp/w1resume.log" && grep -q 'resumed from .* at step 30' "$tmp/w1resume.log" &&
    grep -q '^step  *30$' "$tmp/w1stop.info" && grep -q '^data cursor  epoch 0, step 30$' "$tmp/w1stop.info" &&
    [ $diffrc -eq 0 ]
ok $? "${tag}hpctrain train W=1 fused, stopped after step 30 (cursor 30) and resumed: the final checkpoint equals the uninterrupted run's (ckpt diff --strict: exit $diffrc)" ||
    { grep -h '^rc\|resumed\|error' "$tmp/w1full.log" "$tmp/w1stop.log" "$tmp/w1resume.log" |
        sed 's/^/#   /'; grep -i 'step\|cursor' "$tmp/w1stop.info" | sed 's/^/#   /'; sed 's/^/#   /' "$tmp/w1diff.log" | head -n 5; }

# The same with a convolutional model (issue 32): the conv kernels, NCCL and the staging.
sed 's/^hidden = .*/layers = reshape 1x4x4, conv 4 k3, maxpool 2, conv 6 k2 s1 valid, dense 4/' \
    "$tmp/base.conf" >"$tmp/cnn.conf"
conf="$tmp/cnn.conf"
layout "hpctrain train W=2, a CNN (conv, max pool, conv, dense), two virtual nodes of 1" 2 1 \
    HPCT_RANKS_PER_NODE=1
layout "hpctrain train W=4, a CNN, two virtual nodes of 2 (NCCL in the node, MPI across)" 4 2 \
    HPCT_RANKS_PER_NODE=2
conf=

failed=0
per_node=1
[ "$devices" -ge 2 ] && per_node=2
for seed in $seeds; do
    env HPCT_TEST_BACKEND=cuda CUDA_DOUBLE_SEED="$seed" HPCT_RANKS_PER_NODE=$per_node \
        timeout -s KILL 120 \
        "$MPIRUN" $oversub -np 2 "$b/t/lib/insitu_prog" same 20 >"$tmp/insitu.log" 2>&1
    rc=$?
    sed -n 's/^\(PASS\|FAIL\)/# &/p' "$tmp/insitu.log"
    [ $rc -eq 0 ] && ! grep -q '^FAIL' "$tmp/insitu.log" && continue
    failed=1
    diag "exit $rc${tag:+, double seed $seed}"
    grep -v '^PASS' "$tmp/insitu.log" | tail -n 8 | sed 's/^/#   /'
done
ok $failed "${tag}in-situ session W=2 on the cuda backend: 20 steps, replicas bit-identical"

# The same session with x and y in device memory (issue 33): read in place, the parameters'
# hash after 20 steps equal to the host arrays' run.
seed=${seeds%% *}
hash_of() {
    sed -n 's/^PASS .*parameters bit-identical on every rank (hash \([0-9a-f]*\))$/\1/p' "$1"
}
for arrays in host device; do
    on=0
    [ $arrays = device ] && on=1
    env HPCT_TEST_BACKEND=cuda CUDA_DOUBLE_SEED="$seed" HPCT_RANKS_PER_NODE=$per_node \
        INSITU_DEVICE_ARRAYS=$on timeout -s KILL 120 \
        "$MPIRUN" $oversub -np 2 "$b/t/lib/insitu_prog" same 20 >"$tmp/insitu-$arrays.log" 2>&1
    echo "rc $?" >>"$tmp/insitu-$arrays.log"
done
h=$(hash_of "$tmp/insitu-host.log") d=$(hash_of "$tmp/insitu-device.log")
[ -n "$h" ] && [ "$h" = "$d" ] && ! grep -q '^FAIL' "$tmp/insitu-host.log" "$tmp/insitu-device.log" &&
    grep -q '^PASS .*x and y in device memory' "$tmp/insitu-device.log" &&
    grep -q '^rc 0$' "$tmp/insitu-host.log" && grep -q '^rc 0$' "$tmp/insitu-device.log"
ok $? "${tag}in-situ W=2, x and y in device memory: parameters after 20 steps equal the host arrays' (hash ${d:-none} vs ${h:-none})" ||
    grep -h '^FAIL\|^rc\|error' "$tmp/insitu-host.log" "$tmp/insitu-device.log" | tail -n 8 | sed 's/^/#   /'
# The in-situ session of one rank (issue 33): the fused step on the cuda backend, captured as
# CUDA graphs. t/lib/insitu_prog sim at W = 1 cycles its batch through all 8 sizes: each is
# first run uncaptured, then captured, then replayed (8 captures, 92 replays in 100 steps). The
# parameters after 100 steps: the same with HPCT_CUDA_GRAPH=0 (never captured), and after a
# SIGTERM at step 37 (exit 75, checkpoint) and a resumed run (new graphs) to step 100.
sim() { # NAME DIR STOP_AT ENV...: the run's log in $tmp/sim-NAME.log, its exit status last
    name=$1 dir=$2 stop=$3
    shift 3
    env HPCT_TEST_BACKEND=cuda HPCT_LOG_LEVEL=3 CUDA_DOUBLE_SEED="$seed" "$@" \
        timeout -s KILL 120 "$MPIRUN" -np 1 "$b/t/lib/insitu_prog" sim "$tmp/$dir" 100 "$stop" 0 \
        10 shared >"$tmp/sim-$name.log" 2>&1
    echo "rc $?" >>"$tmp/sim-$name.log"
}
params_of() { sed -n 's/^RESULT .*params=\([0-9a-f]*\).*/\1/p' "$tmp/sim-$1.log"; }
graphs_of() { graphs_in "$tmp/sim-$1.log"; }
sim on simon 0
sim off simoff 0 HPCT_CUDA_GRAPH=0
on=$(params_of on) off=$(params_of off)
[ -n "$on" ] && [ "$on" = "$off" ] && grep -q '^rc 0$' "$tmp/sim-on.log" &&
    grep -q '^rc 0$' "$tmp/sim-off.log" && [ "$(graphs_of on)" = "100 92 8" ] &&
    [ "$(graphs_of off)" = "100 0 0" ]
ok $? "${tag}in-situ W=1, 100 fused steps over 8 batch sizes: graphs ($(graphs_of on)) and HPCT_CUDA_GRAPH=0 ($(graphs_of off)) give the same parameters (${on:-none} vs ${off:-none})" ||
    grep -h 'RESULT\|^rc\|error\|fused' "$tmp/sim-on.log" "$tmp/sim-off.log" | tail -n 8 | sed 's/^/#   /'
sim stop simstop 37
grep -q '^STOPPED after step 37$' "$tmp/sim-stop.log" && grep -q '^rc 75$' "$tmp/sim-stop.log" &&
    [ "$(graphs_of stop)" = "37 29 8" ]
ok $? "${tag}in-situ W=1 with graphs: SIGTERM before step 37 stops after it with its checkpoint (exit 75; $(graphs_of stop))" ||
    tail -n 6 "$tmp/sim-stop.log" | sed 's/^/#   /'
sim resume simstop 0
res=$(params_of resume)
grep -q '^RESUMED at step 37$' "$tmp/sim-resume.log" && grep -q '^rc 0$' "$tmp/sim-resume.log" &&
    [ -n "$res" ] && [ "$res" = "$on" ] && [ "$(graphs_of resume)" = "63 55 8" ]
ok $? "${tag}in-situ W=1 resumed at step 37 with new graphs ($(graphs_of resume)): the parameters after step 100 equal the uninterrupted run's (${res:-none})" ||
    tail -n 6 "$tmp/sim-resume.log" | sed 's/^/#   /'
done_testing
