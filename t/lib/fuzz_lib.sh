# fuzz_lib.sh: build and briefly run libFuzzer harnesses (t/fuzz/*.c) in make check; source it
# after tap.sh. Skips the whole test, saying why, where clang or libFuzzer is missing.
#   fuzz_init                  find clang, make $fuzz_work, probe -fsanitize=fuzzer
#   fuzz_build OUT ARGS...     clang -fsanitize=fuzzer,address,undefined ARGS -o $fuzz_work/OUT
#   fuzz_run NAME BIN CORPUS   two test points: every seed passes; HPCT_FUZZ_SECONDS (2) of
#                              fuzzing from CORPUS find nothing (crash, leak, UB, timeout)
# Long runs (doc/reliability.md): HPCT_FUZZ_SECONDS=3600 make check TESTS=t/test_fuzz_x.sh.
fuzz_seconds=${HPCT_FUZZ_SECONDS:-2}
fuzz_flags="-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all"

fuzz_init() {
    fuzz_cc=
    for c in ${CLANG:-} clang clang-16 clang-15 clang-14; do
        if command -v "$c" >/dev/null 2>&1; then fuzz_cc=$c; break; fi
    done
    [ -n "$fuzz_cc" ] || skip_all "no clang on PATH (install clang to build the libFuzzer harnesses)"
    fuzz_work=$(mktemp -d "${TMPDIR:-/tmp}/hpct-fuzz.XXXXXX") || exit 1
    trap 'rm -rf "$fuzz_work"' EXIT
    printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return (int)n * 0 + !d; }\n' \
        >"$fuzz_work/probe.c"
    # shellcheck disable=SC2086
    "$fuzz_cc" $fuzz_flags "$fuzz_work/probe.c" -o "$fuzz_work/probe" >"$fuzz_work/probe.log" 2>&1 ||
        skip_all "$fuzz_cc cannot link with -fsanitize=fuzzer (libclang-rt-dev missing?): $(head -c 200 "$fuzz_work/probe.log" | tr '\n' ' ')"
}

# fuzz_build OUT ARGS...: one test point; the build log is shown when it fails. A harness is
# kept in $(top_builddir)/t/fuzz-cache (make clean removes it) under a key of the compiler's
# version, the flags, the arguments, the sources as preprocessed and every file named among
# the arguments: a rerun with nothing changed reuses it.
fuzz_build() {
    fb_out=$1; shift
    fb_cache="${top_builddir:-.}/t/fuzz-cache"
    # shellcheck disable=SC2086
    fb_key=$({
        "$fuzz_cc" --version
        echo "$fuzz_flags $*"
        "$fuzz_cc" $fuzz_flags "$@" -E 2>/dev/null || echo "preprocessing failed: $$"
        for a in "$@"; do [ -f "$a" ] && cat "$a"; done
    } | sha256sum | cut -c1-16)
    if [ -x "$fb_cache/$fb_out-$fb_key" ]; then
        cp "$fb_cache/$fb_out-$fb_key" "$fuzz_work/$fb_out"
        ok $? "$fb_out: libFuzzer harness built with $fuzz_cc (unchanged: from t/fuzz-cache)"
        return
    fi
    # shellcheck disable=SC2086
    "$fuzz_cc" $fuzz_flags "$@" -o "$fuzz_work/$fb_out" >"$fuzz_work/$fb_out.build.log" 2>&1
    ok $? "$fb_out: libFuzzer harness built with $fuzz_cc" "$fuzz_work/$fb_out.build.log" &&
        mkdir -p "$fb_cache" && rm -f "$fb_cache/$fb_out"-* &&
        cp "$fuzz_work/$fb_out" "$fb_cache/$fb_out-$fb_key.tmp" &&
        mv "$fb_cache/$fb_out-$fb_key.tmp" "$fb_cache/$fb_out-$fb_key"
}

# fuzz_run NAME BIN CORPUS [LIBFUZZER-ARGS...]: two test points (seeds, then fuzzing).
fuzz_run() {
    fr_name=$1 fr_bin=$2 fr_corpus=$3; shift 3
    if [ ! -x "$fr_bin" ]; then
        skip 2 "$fr_name: the harness did not build"; return
    fi
    "$fr_bin" -runs=0 "$@" -artifact_prefix="$fuzz_work/$fr_name-" "$fr_corpus" \
        >"$fuzz_work/$fr_name.seeds.log" 2>&1
    ok $? "$fr_name: every seed input in $(basename "$fr_corpus") passes" || \
        tail -30 "$fuzz_work/$fr_name.seeds.log" | sed 's/^/# /'
    mkdir -p "$fuzz_work/$fr_name.corpus"
    # -max_total_time bounds the run; timeout(1) guards against a hang in libFuzzer itself.
    # -close_fd_mask=3: the readers' own messages go nowhere; libFuzzer's and the
    # sanitizers' reports still reach the log.
    timeout $((fuzz_seconds + 120)) "$fr_bin" -max_total_time="$fuzz_seconds" -timeout=10 \
        -rss_limit_mb=2048 -max_len=8192 -close_fd_mask=3 "$@" \
        -artifact_prefix="$fuzz_work/$fr_name-" "$fuzz_work/$fr_name.corpus" "$fr_corpus" \
        >"$fuzz_work/$fr_name.fuzz.log" 2>&1
    fr_rc=$?
    ok $fr_rc "$fr_name: ${fuzz_seconds}s of fuzzing found no crash, leak, hang or UB ($(grep -o 'Done [0-9]* runs' "$fuzz_work/$fr_name.fuzz.log"))" || {
        tail -40 "$fuzz_work/$fr_name.fuzz.log" | sed 's/^/# /'
        for a in "$fuzz_work/$fr_name"-*; do
            [ -f "$a" ] && diag "input that fails ($(basename "$a"), base64):" && base64 "$a" | head -20 | sed 's/^/# /'
        done
    }
}
