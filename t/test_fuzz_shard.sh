#!/bin/sh
# Fuzz the IDX, .npy and CSV readers of hpctrain shard (tools/inputs.c) for a few seconds each
# with libFuzzer + ASan/UBSan (t/fuzz/inputs_fuzz.c, one build per format) from the seeds in
# t/fuzz/corpus-idx, corpus-npy and corpus-csv (plain and gzip-compressed files).
. "${top_srcdir:-.}/t/lib/tap.sh"
. "${top_srcdir:-.}/t/lib/fuzz_lib.sh"
src=${top_srcdir:-.}
bld=${top_builddir:-.}
fuzz_init
plan 9
n=1
for fmt in idx npy csv; do
    fuzz_build "${fmt}_fuzz" -DFUZZ_FORMAT=$n -I"$bld" -I"$bld/include" -I"$src/include" \
        -I"$src/tools" -I"$src/t/fuzz" "$src/t/fuzz/inputs_fuzz.c" "$src/tools/inputs.c" \
        "$src/tools/array.c" "$src/tools/error.c" -lz
    fuzz_run "$fmt" "$fuzz_work/${fmt}_fuzz" "$src/t/fuzz/corpus-$fmt"
    n=$((n + 1))
done
done_testing
