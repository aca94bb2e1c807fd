#!/bin/sh
# The averaging benchmarks and their yardsticks (bench/bench_allreduce, bench/bench_train,
# bench/floor.c) run to the end: bench_allreduce up to 1 MiB at W = 2 on one node, W = 3
# (uneven blocks) and W = 2 on two virtual nodes over TCP, each printing a row per size and
# both fusion lines with the floor of their layout; bench_train's floor, read, least and wire
# modes at W = 2 (no averaging plus a yardstick per step; least rewrites every gradient with
# itself times 1) train the same bits, so they print the same test accuracy. Timings are not
# checked (bench/results.md has the figures).
. "${top_srcdir:-.}/t/lib/tap.sh"
: "${top_builddir:=.}"
: "${MPIRUN:=mpirun}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
command -v "$MPIRUN" >/dev/null 2>&1 || skip_all "no mpirun (configure found none)"
allreduce="$top_builddir/bench/bench_allreduce"
train="$top_builddir/bench/bench_train"
[ -x "$allreduce" ] && [ -x "$train" ] || skip_all "the benchmarks are not built"
work=$(mktemp -d "${TMPDIR:-/tmp}/hpct-bench-smoke.XXXXXX")
trap 'rm -rf "$work"' EXIT
plan 4

# allreduce DESC FLOOR NP [mpirun options...]: bench_allreduce 1 (MiB) under a hard timeout;
# ok when it exits 0, prints the 5 rows of 4 KiB .. 1 MiB with finite times and both fusion
# lines naming FLOOR ("shared-memory" or "wire").
allreduce() {
    desc=$1 floor=$2 np=$3; shift 3
    out="$work/allreduce-$np.out"
    timeout -s KILL 120 "$MPIRUN" --oversubscribe "$@" -np "$np" "$allreduce" 1 >"$out" 2>&1
    rc=$?
    rows=$(awk '$1 ~ /^(4096|16384|65536|262144|1048576)$/ && $2 + 0 > 0 && $3 + 0 > 0' "$out" | wc -l)
    fused=$(grep -c "tensors.*$floor floor of the total" "$out")
    [ $rc = 0 ] && [ "$rows" = 5 ] && [ "$fused" = 2 ] && ! grep -qiw 'nan\|inf' "$out"
    ok $? "$desc: exit $rc, $rows of 5 size rows, $fused of 2 fusion lines with the $floor floor" ||
        tail -n 20 "$out" | sed 's/^/#   /'
}

allreduce "bench_allreduce, W = 2, one node" shared-memory 2
allreduce "bench_allreduce, W = 3, one node" shared-memory 3
allreduce "bench_allreduce, W = 2, two virtual nodes over TCP" wire 2 \
    --mca btl self,tcp -x HPCT_RANKS_PER_NODE=1

data=/usr/share/datasets/fashion-mnist
if [ -r "$data/train-images-idx3-ubyte.gz" ]; then
    out="$work/train.out"
    timeout -s KILL 300 "$MPIRUN" --oversubscribe -np 2 "$train" "$data" floor,read,least,wire >"$out" 2>&1
    rc=$?
    modes=$(grep -c '^hpctrain W=2 mode=\(floor\|read\|least\|wire\) ' "$out")
    accs=$(sed -n 's/^hpctrain W=2 mode=.*test accuracy \([0-9.]*\).*/\1/p' "$out" | sort -u | wc -l)
    [ $rc = 0 ] && [ "$modes" = 4 ] && [ "$accs" = 1 ]
    ok $? "bench_train floor, read, least and wire at W = 2: exit $rc, $modes of 4 modes, $accs test accuracy (want 1)" ||
        tail -n 20 "$out" | sed 's/^/#   /'
else
    skip 1 "no Fashion-MNIST in $data (Debian package dataset-fashion-mnist)"
fi
done_testing
