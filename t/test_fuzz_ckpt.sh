#!/bin/sh
# Fuzz the checkpoint loader (lib/ckpt) for a few seconds with libFuzzer + ASan/UBSan
# (t/fuzz/ckpt_fuzz.c) from real checkpoints made by the library (t/fuzz/corpus-ckpt, written
# by t/lib/ckpt_make). lib/ckpt and lib/core are compiled again with clang and the fuzzer's
# instrumentation; the rest of the library comes from the built lib/libhpctrain.a. Leak
# detection is off: HDF5 keeps its caches to exit (and the harness keeps its model). (t/test_ckpt_mutate runs the plain,
# compiler-independent mutation test.)
. "${top_srcdir:-.}/t/lib/tap.sh"
. "${top_srcdir:-.}/t/lib/fuzz_lib.sh"
src=${top_srcdir:-.}
bld=${top_builddir:-.}
fuzz_init
cd "$bld" || exit 1
# The build's own flags, as make expands them here (paths relative to the build directory;
# the make running this test must not leak its flags or directory messages into the query).
flags=$(printf 'fuzz-flags:\n\t@echo $(AM_CPPFLAGS)\n\t@echo $(HPCT_LIBS) $(ZLIB_LIBS) $(LIBS)\n' |
    env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s --no-print-directory -f Makefile -f - \
        fuzz-flags 2>/dev/null)
cppflags=$(echo "$flags" | sed -n 1p)
libs=$(echo "$flags" | sed -n 2p)
[ -n "$libs" ] && [ -f lib/libhpctrain.a ] || skip_all "no built lib/libhpctrain.a in $bld"
plan 3
# shellcheck disable=SC2086
fuzz_build ckpt_fuzz $cppflags "$src/t/fuzz/ckpt_fuzz.c" "$src"/lib/ckpt/*.c "$src"/lib/core/*.c \
    $libs
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
export ASAN_OPTIONS
fuzz_run ckpt "$fuzz_work/ckpt_fuzz" "$src/t/fuzz/corpus-ckpt" -max_len=16384
done_testing
