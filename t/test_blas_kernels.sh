#!/bin/sh
# The cpu backend names OpenBLAS's kernels (info) and warns when they leave the CPU's AVX2 or
# AVX-512 unused, naming OPENBLAS_CORETYPE: Debian 12's OpenBLAS 0.3.21 takes Emerald Rapids
# for a Prescott and runs SSE3 kernels, 3.5 times slower on the training benchmark
# (bench/results.md, 2026-11-26, third session); on an AVX-512 CPU, AVX2's Haswell kernels
# leave AVX-512 unused (the CNN's conv products 1.44x slower on a Zen 4; sixteenth session). Kernels forced
# through OPENBLAS_CORETYPE: Prescott warns, with the core that fits this CPU; Haswell warns
# on an AVX-512 CPU, naming SkylakeX, and not on an AVX2 one; SkylakeX does not warn. One-rank
# `hpctrain train` runs, which still train with either.
. "${top_srcdir:-.}/t/lib/train_lib.sh"
need_tool
grep -q '^#define HAVE_OPENBLAS_GET_CORENAME 1' "$top_builddir/config.h" ||
    { echo "1..0 # SKIP the BLAS is not OpenBLAS (no openblas_get_corename)"; exit 0; }
grep -qw avx2 /proc/cpuinfo 2>/dev/null ||
    { echo "1..0 # SKIP this CPU has no AVX2: every OpenBLAS kernel fits it"; exit 0; }
make_data
fits=Haswell
grep -qw avx512f /proc/cpuinfo && fits=SkylakeX
warning="OpenBLAS runs its Prescott kernels, which leave this CPU's"

run_with() {
    out="$work/$1.out"
    HPCT_LOG_LEVEL=3 OPENBLAS_CORETYPE=$1 train 1 "$work/ck-$1" "$out"
}

run_with Prescott
# Skips only when the library named other kernels; no line at all fails below.
core=$(sed -n 's/.*cpu backend: OpenBLAS runs its \([^ ]*\) kernels$/\1/p' "$work/Prescott.out" | head -1)
[ -n "$core" ] && [ "$core" != Prescott ] &&
    { echo "1..0 # SKIP OpenBLAS ignores OPENBLAS_CORETYPE (runs $core kernels: not a DYNAMIC_ARCH build)"; exit 0; }
cores=Haswell
[ $fits = SkylakeX ] && cores="Haswell SkylakeX"
plan $((1 + $(echo $cores | wc -w)))
[ $rc = 0 ] && grep -q "$warning" "$work/Prescott.out" &&
    grep -q "chosen by OPENBLAS_CORETYPE=Prescott.*export OPENBLAS_CORETYPE=$fits before" \
        "$work/Prescott.out"
ok $? "Prescott kernels on an AVX2 CPU: trains (exit $rc) and warns, naming OPENBLAS_CORETYPE=$fits"
[ $rc = 0 ] || show "$work/Prescott.out"
for core in $cores; do
    run_with $core
    if [ $core = Haswell ] && [ $fits = SkylakeX ]; then
        [ $rc = 0 ] && grep -q "OpenBLAS runs its $core kernels$" "$work/$core.out" &&
            grep -q "OpenBLAS runs its Haswell kernels, which leave this CPU's AVX-512 unused.*up to 1.4 times slower; export OPENBLAS_CORETYPE=SkylakeX before" \
                "$work/$core.out"
        ok $? "Haswell kernels on an AVX-512 CPU: trains (exit $rc), names them, warns naming SkylakeX"
    else
        [ $rc = 0 ] && grep -q "OpenBLAS runs its $core kernels$" "$work/$core.out" &&
            ! grep -q "leave this CPU's" "$work/$core.out"
        ok $? "$core kernels: trains (exit $rc), names them, no warning"
    fi
    [ $rc = 0 ] || show "$work/$core.out"
done
done_testing
