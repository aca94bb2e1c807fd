#!/bin/sh
# Fuzz the manifest parser for a few seconds with libFuzzer (clang -fsanitize=fuzzer) from
# the seed corpus in t/fuzz/corpus. SKIPs, saying why, where clang or libFuzzer is missing.
src=${top_srcdir:-.}
seconds=${HPCT_FUZZ_SECONDS:-2}
cc=
for c in ${CLANG:-} clang clang-16 clang-15 clang-14; do
    if command -v "$c" >/dev/null 2>&1; then cc=$c; break; fi
done
if [ -z "$cc" ]; then
    echo "1..0 # SKIP no clang on PATH (install clang to build the libFuzzer harness)"
    exit 0
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/hpct-fuzz.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
if ! "$cc" -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -I"$src/lib/data" "$src/t/fuzz/manifest_fuzz.c" "$src/lib/data/manifest.c" \
    -o "$work/fuzz" >"$work/build.log" 2>&1; then
    echo "1..0 # SKIP $cc cannot build with -fsanitize=fuzzer: $(head -c 200 "$work/build.log" | tr '\n' ' ')"
    exit 0
fi
echo "1..3"
echo "ok 1 - libFuzzer harness built with $cc"
mkdir "$work/corpus"
if "$work/fuzz" -runs=0 "$src/t/fuzz/corpus" >"$work/seeds.log" 2>&1; then
    echo "ok 2 - every seed input passes the harness"
else
    echo "not ok 2 - a seed input fails the harness"; sed 's/^/# /' "$work/seeds.log" | tail -20
fi
# -max_total_time bounds the run; timeout(1) guards against a hang in libFuzzer itself.
if timeout $((seconds + 60)) "$work/fuzz" -max_total_time="$seconds" -timeout=5 \
    -rss_limit_mb=1024 -max_len=4096 "$work/corpus" "$src/t/fuzz/corpus" >"$work/fuzz.log" 2>&1; then
    echo "ok 3 - ${seconds}s of fuzzing found no crash, leak or UB ($(grep -o 'Done [0-9]* runs' "$work/fuzz.log"))"
else
    echo "not ok 3 - the fuzzer found a problem"; sed 's/^/# /' "$work/fuzz.log" | tail -30
fi
