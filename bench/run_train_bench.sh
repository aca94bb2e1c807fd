#!/bin/sh
# run_train_bench.sh: both sides of the Fashion-MNIST training benchmark in one run.
#   sh bench/run_train_bench.sh [BUILDDIR] [DATADIR] [W]
# libhpctrain (bench/bench_train under mpirun, W = 1 and W (default 2); at W also the copying
# overlap (copy), blocking, no-averaging, floor modes (floor, wire, read), the library's
# in-place average alone after each backward (alone), one barrier per step (sync), one pass
# rewriting the gradients (touch), and sync, read and touch together (least: bench_train.c),
# to measure how much communication the overlap hides, what in-place averages save, and what
# averaging and synchrony cost cores that all compute) against PyTorch DDP with gloo
# (bench/ddp_baseline.py, W = 1 and W; $PYTHON, default /usr/bin/python3), then the ratios.
# libhpctrain's epochs run three times (the modes at W in rotated orders); each mode's fastest
# epoch counts.
# RUNS=N (default 1) repeats the whole comparison N times and ends with each figure's median
# and range over the runs (the figures of one run move by several points on a shared VM).
# Both sides multiply through the same OpenBLAS, on the kernels that fit the CPU
# (bench/blas_kernels.sh: OPENBLAS_CORETYPE set where OpenBLAS does not know the model; a
# value already set is kept).
set -u
build=${1:-.}
data=${2:-/usr/share/datasets/fashion-mnist}
w=${3:-2}
python=${PYTHON:-/usr/bin/python3}
here=$(cd "$(dirname "$0")" && pwd)
runs=${RUNS:-1}
if [ "$runs" -gt 1 ]; then
    all=$(mktemp /tmp/hpct-train-bench-runs.XXXXXX)
    trap 'rm -f "$all"' EXIT
    i=1
    while [ $i -le "$runs" ]; do
        echo "==== run $i of $runs"
        RUNS=1 sh "$here/run_train_bench.sh" "$build" "$data" "$w" | tee -a "$all"
        i=$((i + 1))
    done
    echo
    echo "medians over $runs runs (min .. max):"
    for key in ddp scaling overlap blocking copy alone sync read touch least floor wire; do
        sed -n "s/^figures:.* $key \(-\{0,1\}[0-9][0-9.]*\)\( .*\)\{0,1\}$/\1/p" "$all" | sort -n |
            awk -v key="$key" '{ v[NR] = $1 } END { if (NR) printf "  %-8s %s (%s .. %s)\n", key,
                NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2, v[1], v[NR] }'
    done
    echo "  (ddp: W=$w / PyTorch DDP samples/s, x; scaling W=1 -> W=$w, %; the others: epoch against no averaging, %)"
    exit 0
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
. "$(dirname "$0")/blas_kernels.sh"
fit_blas_kernels
out=$(mktemp /tmp/hpct-train-bench.XXXXXX)
trap 'rm -f "$out"' EXIT
run() { echo "\$ $*" >&2; timeout -s KILL 900 "$@" | tee -a "$out"; }
run mpirun --oversubscribe -np 1 "$build/bench/bench_train" "$data" overlap,overlap,overlap
run mpirun --oversubscribe -np "$w" "$build/bench/bench_train" "$data" \
    overlap,copy,blocking,none,floor,wire,alone,sync,read,touch,least,least,touch,read,sync,alone,wire,floor,none,blocking,copy,overlap,none,least,alone,read,touch,sync,wire,overlap,copy,floor,blocking
run $python "$here/ddp_baseline.py" 1 "$data"
run $python "$here/ddp_baseline.py" "$w" "$data"
awk -v w="$w" '
function at(n, mode) { return $1 == "hpctrain" && $2 == "W=" n && $3 == "mode=" mode }
function ddp(n) { return $1 == "pytorch-ddp" && $2 == "W=" n }
function pct(t) { return t > 0 ? sprintf("%.1f", 100 * (t - tno) / tno) : "-" }
function signed(t) { return t > 0 ? sprintf("%+.1f%%", 100 * (t - tno) / tno) : "-" }
at(1, "overlap") { if ($5 > h1) h1 = $5 }
at(w, "overlap") { if ($5 > h2) { h2 = $5; tov = $7 }; ha = $11 }
at(w, "blocking") { if (!tbl || $7 < tbl) tbl = $7 }
at(w, "copy") { if (!tcp || $7 < tcp) tcp = $7 }
at(w, "none") { if (!tno || $7 < tno) tno = $7 }
at(w, "floor") { if (!tfl || $7 < tfl) tfl = $7 }
at(w, "wire") { if (!twi || $7 < twi) twi = $7 }
at(w, "alone") { if (!tal || $7 < tal) tal = $7 }
at(w, "sync") { if (!tsy || $7 < tsy) tsy = $7 }
at(w, "read") { if (!trd || $7 < trd) trd = $7 }
at(w, "touch") { if (!tto || $7 < tto) tto = $7 }
at(w, "least") { if (!tle || $7 < tle) tle = $7 }
ddp(1) { p1 = $5 }
ddp(w) { p2 = $5; pa = $11 }
END {
    printf "\nW=%d hpctrain / PyTorch DDP samples/s: %.2fx (target >= 2.0x)\n", w, h2 / p2
    printf "scaling efficiency W=1 -> W=%d: hpctrain %.0f%%, PyTorch %.0f%% (target >= 85%%)\n", w, 100 * h2 / (w * h1), 100 * p2 / (w * p1)
    printf "test accuracy after 1 epoch at W=%d: hpctrain %.4f, PyTorch %.4f (difference %.2f points, target <= 1)\n", w, ha, pa, 100 * (ha - pa)
    if (tno > 0) printf "averaging cost at W=%d (epoch against no averaging %.3f s): overlap %s (target <= 5%%), blocking %s; floors: shared-memory %s, wire %s\n", w, tno, signed(tov), signed(tbl), signed(tfl), signed(twi)
    if (tno > 0 && tal > 0) printf "one in-place average of the gradient size alone after each backward (mode alone: no overlap, not the model gradients) %s\n", signed(tal)
    if (tno > 0 && tsy > 0) printf "one MPI_Barrier after each backward (mode sync: keeping the ranks in step, no data) %s\n", signed(tsy)
    if (tno > 0 && trd > 0) printf "that barrier and the read floor of the gradients (mode read: less than any in-place average costs) %s\n", signed(trd)
    if (tno > 0 && tto > 0) printf "one pass rewriting every gradient in place (mode touch: no peers, no barrier) %s\n", signed(tto)
    if (tno > 0 && tle > 0) printf "the barrier, the read floor and that pass (mode least: the least work of an average that hands the mean back in the gradients) %s\n", signed(tle)
    if (tno > 0 && tcp > 0) printf "overlap with in-place averages %s, with copying averages (HPCT_NODE_IN_PLACE=0) %s\n", signed(tov), signed(tcp)
    if (tbl > tno) printf "communication hidden by overlap: %.0f%% (epoch: blocking %.2f s, overlap %.2f s, no averaging %.2f s)\n", 100 * (tbl - tov) / (tbl - tno), tbl, tov, tno
    if (tno > 0) printf "figures: ddp %.2f scaling %.0f overlap %s blocking %s copy %s alone %s sync %s read %s touch %s least %s floor %s wire %s\n", h2 / p2, 100 * h2 / (w * h1), pct(tov), pct(tbl), pct(tcp), pct(tal), pct(tsy), pct(trd), pct(tto), pct(tle), pct(tfl), pct(twi)
}' "$out"
