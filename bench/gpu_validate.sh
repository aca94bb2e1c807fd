#!/bin/sh
# gpu_validate.sh: validate the GPU path on a machine with a GPU, in one command:
#
#     bench/gpu_validate.sh [OUTDIR]
#
# Needs: the CUDA toolkit with cuBLAS and NCCL (CUDA_HOME, default /usr/local/cuda: nvcc,
# include/nccl.h, lib64/libnccl.so), an NVIDIA driver and GPU, and the project's other
# dependencies from Debian packages installed beforehand (the list is .ci/debian-packages:
# autoconf automake libtool pkg-config libopenmpi-dev openmpi-bin libpmix-dev libhdf5-dev
# libopenblas-dev gfortran ...). compute-sanitizer (part of the toolkit) is used when present.
# Nothing is downloaded. OUTDIR (default ./gpu-validate-DATE) receives the build, the logs and
# summary.txt, the one file to read: one line per check, PASS/FAIL/SKIP/MISS, figures with
# their targets (doc/gpu.md says what each means).
#
# HPCT_GPU_BUILD=DIR skips step 1 and validates a tree already built elsewhere (configured
# --with-cuda --with-nccl, then "make check TESTS="), e.g. on a login node when the GPU nodes
# have no compilers or development packages: the tests run as programs, not through make.
# HPCT_GPU_STEP_TIMEOUT (seconds, default 900) bounds every test, sanitizer and training run.
#
# Steps: 1. build the committed tree with --with-cuda --with-nccl (architectures
# HPCT_CUDA_ARCH, default "80;90"; "native" for this GPU), nvcc and compiler warnings as errors;
# 2. the GPU tests: t/test_cuda (every kernel and a full training step against the cpu
# backend, stated tolerances per op), t/test_nccl.sh (1 node of 2 ranks with NCCL, 2 nodes of
# 1 staged, 2 nodes of 2 and of 4 with the average overlapping backward, CUDA-aware MPI on and
# forced off), t/test_gpu_logic; 3. compute-sanitizer memcheck and racecheck on
# t/test_cuda; 4. hpctrain train at 2 ranks on the GPU (replica hashes compared every step)
# whose loss curve follows the same run on the cpu backend; 5. bench/bench_gpu step, kernels,
# allreduce. Exit status 0 when every correctness check passed (a MISS of a performance target
# is reported in the summary but does not fail the run).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$PWD/gpu-validate-$(date +%Y%m%d-%H%M%S)}
cuda=${CUDA_HOME:-/usr/local/cuda}
arch=${HPCT_CUDA_ARCH:-80;90}
jobs=$(nproc 2>/dev/null || echo 4)
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
summary=$out/summary.txt
: >"$summary"
failed=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
export PATH="$cuda/bin:$PATH"

say() { echo "$*" | tee -a "$summary"; }
result() { # STATUS WHAT [DETAIL]
    say "$1 $2${3:+ ($3)}"
    [ "$1" = FAIL ] && failed=1
    return 0
}

say "# gpu_validate $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
say "# source $top ($(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo 'no git'))"
if command -v nvidia-smi >/dev/null 2>&1; then
    say "# GPUs: $(nvidia-smi -L 2>&1 | tr '\n' ';')"
else
    say "# GPUs: nvidia-smi not found"
fi
say "# driver: $(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)"
say "# nvcc: $(nvcc --version 2>/dev/null | tail -1)"

# ---- 1. build -----------------------------------------------------------------------------
step_timeout=${HPCT_GPU_STEP_TIMEOUT:-900}

# The committed tree into $out/src, built with warnings as errors; b is the tree.
build_here() {
    src=$out/src
    rm -rf "$src" && mkdir -p "$src"
    if git -C "$top" rev-parse HEAD >/dev/null 2>&1; then
        git -C "$top" archive --format=tar HEAD | tar -xf - -C "$src"
    else
        (cd "$top" && tar --exclude='./_build*' -cf - .) | tar -xf - -C "$src"
    fi
    strict_c="-g -O2 -Werror -Wno-error=deprecated-declarations"
    strict_nv="-O3 -std=c++17 -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror"
    (cd "$src" && ./autogen.sh && ./configure --with-cuda="$cuda" --with-nccl \
        --with-cuda-arch="$arch" && make -j"$jobs" CFLAGS="$strict_c" NVCCFLAGS="$strict_nv" &&
        make -j"$jobs" CFLAGS="$strict_c" NVCCFLAGS="$strict_nv" check TESTS=) \
        >"$out/build.log" 2>&1
    if [ $? -ne 0 ]; then
        result FAIL "build --with-cuda --with-nccl --with-cuda-arch=$arch" "see $out/build.log"
        exit 1
    fi
    result PASS "build --with-cuda --with-nccl --with-cuda-arch=$arch, warnings as errors" \
        "$(grep 'CUDA archs' "$out/build.log" | sed 's/^ *//')"
    b=$src
}

# HPCT_GPU_BUILD: a tree built elsewhere, used as it is; b is the tree.
use_prebuilt() {
    b=$(cd "$HPCT_GPU_BUILD" && pwd) || exit 2
    if ! grep -q '^#define HPCT_HAVE_CUDA 1' "$b/config.h" 2>/dev/null ||
        [ ! -x "$b/t/test_cuda" ]; then
        result FAIL "HPCT_GPU_BUILD=$b" "not a tree built --with-cuda, then make check TESTS="
        exit 1
    fi
    result PASS "prebuilt tree $b (HPCT_GPU_BUILD; not rebuilt here)" \
        "CUDA archs: $(sed -n 's/^NVCC_ARCH_FLAGS = //p' "$b/Makefile")"
}

if [ -n "${HPCT_GPU_BUILD:-}" ]; then use_prebuilt; else build_here; fi
mpirun=$(sed -n 's/^MPIRUN = //p' "$b/Makefile" 2>/dev/null)
mpirun=${MPIRUN:-${mpirun:-mpirun}}
say "# MPI: $mpirun ($("$mpirun" --version 2>&1 | head -1))"

# ---- 2. GPU tests ---------------------------------------------------------------------------
for t in t/test_gpu_logic t/test_cuda t/test_nccl.sh; do
    # As make check runs them (t/t.mk's AM_TESTS_ENVIRONMENT), without make: a prebuilt
    # tree's dependency files name headers that the GPU node may not have.
    log=$out/$(basename "${t%.sh}").log
    (cd "$b" && env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
        OPENBLAS_NUM_THREADS=1 MPIRUN="$mpirun" top_srcdir=. top_builddir=. HPCT_TEST_HOOKS=1 \
        timeout -s KILL "$step_timeout" "./$t") >"$log" 2>&1
    rc=$?
    pass=$(grep -c '^ok' "$log" 2>/dev/null)
    notok=$(grep -c '^not ok' "$log" 2>/dev/null)
    skip=$(grep -c '# SKIP' "$log" 2>/dev/null)
    plan=$(sed -n 's/^1\.\.\([0-9][0-9]*\).*/\1/p' "$log" 2>/dev/null | head -1)
    # A crash, a kill or a bail-out after the plan is a failure, as make check's TAP driver says.
    if [ "$rc" -ne 0 ] || grep -q '^Bail out!' "$log" 2>/dev/null || [ -z "$plan" ] ||
        [ "$((pass + notok))" -ne "$plan" ]; then
        result FAIL "$t" "exit $rc, $notok failed, $((pass + notok)) of ${plan:-no plan} run; see $out/$(basename "$log")"
    elif [ "$plan" -eq 0 ]; then
        result SKIP "$t" "$(grep '^1\.\.0' "$log")"
    else
        result PASS "$t" "$pass points, $skip skipped"
    fi
done
grep -h '^ok.*\(gemm\|softmax\|sumsq\|mse\|losses agree\|parameters agree\)' \
    "$out/test_cuda.log" 2>/dev/null | sed 's/^/#   /' >>"$summary"

# ---- 3. compute-sanitizer -------------------------------------------------------------------
if grep -q '^1\.\.0' "$out/test_cuda.log" 2>/dev/null; then
    result SKIP "compute-sanitizer" "t/test_cuda skipped: $(grep '^1\.\.0' "$out/test_cuda.log")"
elif command -v compute-sanitizer >/dev/null 2>&1; then
    for tool in memcheck racecheck; do
        HPCT_TEST_NO_FAULT=1 timeout -s KILL "$step_timeout" compute-sanitizer --tool $tool \
            --error-exitcode 99 "$b/t/test_cuda" >"$out/sanitizer-$tool.log" 2>&1
        rc=$?
        errs=$(grep -h 'ERROR SUMMARY' "$out/sanitizer-$tool.log" | tail -1)
        if [ $rc -eq 0 ]; then
            result PASS "compute-sanitizer $tool t/test_cuda" "$errs"
        else
            result FAIL "compute-sanitizer $tool t/test_cuda" "exit $rc, $errs"
        fi
    done
else
    result SKIP "compute-sanitizer" "not found in PATH ($cuda/bin)"
fi

# ---- 4. hpctrain train on the GPU against the cpu backend -----------------------------------
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
work=$out/train
mkdir -p "$work"
. "$b/t/lib/train_data.sh"
train_csv "$work/data.csv" && "$b/tools/hpctrain" shard -o "$work/data" "$work/data.csv" \
    >"$work/shard.log" 2>&1
conf() { # BACKEND
    cat <<EOF
train_manifest = $work/data/manifest.txt
hidden = 256,256
activation = relu
outputs = 4
lr = 0.05
momentum = 0.9
global_batch = 64
epochs = 3
log_interval = 1
checkpoint_every_seconds = 0
walltime_margin = 0
collective_timeout = 120
consistency_interval = 1
resume = never
backend = $1
EOF
}
# 2 ranks on one node share NCCL only with 2 GPUs; with 1 GPU, two virtual nodes of 1 rank.
layout=HPCT_RANKS_PER_NODE=2
[ "${gpus:-0}" -ge 2 ] || layout=HPCT_RANKS_PER_NODE=1
for be in cpu cuda; do
    conf $be >"$work/$be.conf"
    env $layout timeout "$step_timeout" "$mpirun" -np 2 "$b/tools/hpctrain" train \
        --config "$work/$be.conf" --checkpoint-dir "$work/ck-$be" >"$work/$be.log" 2>&1
    echo $? >"$work/$be.rc"
done
if [ "$(cat "$work/cuda.rc")" != 0 ]; then
    result FAIL "hpctrain train, 2 ranks on the GPU ($layout, replica hash every step)" \
        "exit $(cat "$work/cuda.rc"); see $work/cuda.log"
else
    result PASS "hpctrain train, 2 ranks on the GPU ($layout): replicas identical at every step"
    # Loss curves: relative difference per logged step (tolerance 2e-3: fp32 sums in another
    # order on each backend, compounded over 96 steps of SGD).
    worst=$(awk '/^epoch .* loss / { for (i = 1; i < NF; i++) if ($i == "loss") v = $(i + 1);
                 if (FILENAME ~ /cpu.log$/) c[++n] = v; else g[++m] = v }
             END { w = (n == m && n > 0) ? 0 : 1e9
                   for (i = 1; i <= n && i <= m; i++) { d = c[i] - g[i]; if (d < 0) d = -d
                       d /= (c[i] > 1e-6 ? c[i] : 1e-6); if (d > w) w = d }
                   printf "%.3g", w }' "$work/cpu.log" "$work/cuda.log")
    if [ "$(cat "$work/cpu.rc")" != 0 ]; then
        result FAIL "GPU loss curve follows the cpu run" \
            "the cpu reference run failed: exit $(cat "$work/cpu.rc"); see $work/cpu.log"
    elif awk "BEGIN { exit !($worst <= 2e-3) }"; then
        result PASS "GPU loss curve follows the cpu run" "worst relative difference $worst <= 2e-3"
    else
        result FAIL "GPU loss curve follows the cpu run" "worst relative difference $worst > 2e-3"
    fi
fi

# ---- 5. timings ------------------------------------------------------------------------------
say "# timings (targets in doc/gpu.md; each pair measured in one run)"
timeout "$step_timeout" "$b/bench/bench_gpu" step 200 >"$out/bench-step.log" 2>&1 ||
    result FAIL "bench_gpu step" "see $out/bench-step.log"
timeout "$step_timeout" "$b/bench/bench_gpu" kernels >"$out/bench-kernels.log" 2>&1 ||
    result FAIL "bench_gpu kernels" "see $out/bench-kernels.log"
if [ "${gpus:-0}" -ge 2 ]; then
    timeout "$step_timeout" "$mpirun" -np 2 "$b/bench/bench_gpu" allreduce 20 \
        >"$out/bench-allreduce.log" 2>&1 ||
        result FAIL "bench_gpu allreduce" "see $out/bench-allreduce.log"
else
    result SKIP "bench_gpu allreduce" "needs 2 GPUs, $gpus found"
fi
cat "$out"/bench-*.log 2>/dev/null | grep -v '^FIGURE' | sed 's/^/#   /' >>"$summary"
cat "$out"/bench-*.log 2>/dev/null | grep '^FIGURE' | sed 's/^FIGURE //' |
    awk '{ st = $NF; if (st != "PASS" && st != "MISS") st = "INFO"; $NF = ($NF == st) ? "" : $NF;
           print st " " $0 }' >>"$summary"

say "# result: $([ $failed -eq 0 ] && echo 'every correctness check passed' || echo 'FAILURES above')"
echo "summary: $summary"
exit $failed
