#!/bin/sh
# Fuzz the settings parser of hpctrain.conf(5) (lib/train/settings.c) for a few seconds with
# libFuzzer + ASan/UBSan (t/fuzz/config_fuzz.c) from the seeds in t/fuzz/corpus-config.
. "${top_srcdir:-.}/t/lib/tap.sh"
. "${top_srcdir:-.}/t/lib/fuzz_lib.sh"
src=${top_srcdir:-.}
fuzz_init
plan 3
fuzz_build config_fuzz -I"$src/include" -I"${top_builddir:-.}/include" -I"$src/t/fuzz" \
    "$src/t/fuzz/config_fuzz.c" "$src/lib/train/settings.c" "$src/lib/model/spec_parse.c" -lm
fuzz_run config "$fuzz_work/config_fuzz" "$src/t/fuzz/corpus-config" -max_len=4096
done_testing
