#!/bin/sh
# test_header.sh: include/hpctrain.h on its own: every ..._INITIALIZER fills its struct
# exactly (-Wextra -Werror: no missing or excess values) in C99 and, where a C++ compiler
# is installed, in C++98 and C++11 (the reason they are positional, not designated);
# HPCT_API_VERSION works in #if and the version is configure's; HPCT_DEPRECATED warns naming
# the successor; the 0.1 names removed before any release are not declared.
. "${top_srcdir:-.}/t/lib/tap.sh"
srcdir=$(cd "${top_srcdir:-.}" && pwd)
builddir=$(cd "${top_builddir:-.}" && pwd)
# hpctrain.h includes hpctrain_version.h, which configure writes into the build tree.
[ -f "$builddir/include/hpctrain_version.h" ] || skip_all "no configured build tree in '$builddir'"
version=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"$/\1/p' "$builddir/config.h")
inc="-I$srcdir/include -I$builddir/include"
cc=${CC:-cc}
cxx=${CXX:-$(command -v c++ || command -v g++ || command -v clang++ || echo c++)}
command -v "$cc" >/dev/null || skip_all "no C compiler '$cc'"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/hpct-header.XXXXXX") || skip_all "mktemp failed"
trap 'rm -rf "$tmp"' EXIT

plan 6

cat >"$tmp/inits.c" <<'EOF'
#include "hpctrain.h"
#if !(HPCT_API_VERSION >= HPCT_MAKE_VERSION(0, 2, 0) && HPCT_API_VERSION <= HPCT_VERSION)
#error "HPCT_API_VERSION is not usable in #if, or the guard of 0.2 calls does not hold"
#endif
#if HPCT_VERSION != HPCT_MAKE_VERSION(HPCT_VERSION_MAJOR, HPCT_VERSION_MINOR, HPCT_VERSION_PATCH)
#error "HPCT_VERSION does not pack HPCT_VERSION_MAJOR, _MINOR and _PATCH"
#endif
const char *version_string = HPCT_VERSION_STRING;
hpct_config_t a = HPCT_CONFIG_INITIALIZER;
hpct_optim_config_t b = HPCT_OPTIM_CONFIG_INITIALIZER;
hpct_data_config_t c = HPCT_DATA_CONFIG_INITIALIZER;
hpct_topology_t d = HPCT_TOPOLOGY_INITIALIZER;
hpct_ckpt_config_t e = HPCT_CKPT_CONFIG_INITIALIZER;
hpct_ckpt_meta_t f = HPCT_CKPT_META_INITIALIZER;
hpct_train_config_t g = HPCT_TRAIN_CONFIG_INITIALIZER;
hpct_shard_config_t h = HPCT_SHARD_CONFIG_INITIALIZER;
hpct_tunable_info_t i = HPCT_TUNABLE_INFO_INITIALIZER;
EOF
strict="-Wall -Wextra -Werror -pedantic $inc"

"$cc" -std=c99 $strict -c "$tmp/inits.c" -o "$tmp/c99.o" 2>"$tmp/c99.err"
ok $? "C99: every initializer fills its struct exactly, HPCT_API_VERSION works in #if" ||
    diag "$(cat "$tmp/c99.err")"

if command -v "$cxx" >/dev/null; then
    for std in c++98 c++11; do
        "$cxx" -x c++ -std=$std $strict -Wno-long-long -c "$tmp/inits.c" -o "$tmp/$std.o" \
            2>"$tmp/$std.err"
        ok $? "$std: the same initializers compile" || diag "$(cat "$tmp/$std.err")"
    done
else
    skip 2 "no C++ compiler '$cxx'"
fi

# The configured version, as the header spells it (AC_INIT's, through hpctrain_version.h).
printf '#include "hpctrain.h"\nHPCT_VERSION_STRING HPCT_VERSION_MAJOR HPCT_VERSION_MINOR HPCT_VERSION_PATCH\n' |
    "$cc" -E -P $inc -x c - 2>"$tmp/cpp.err" | tail -n 1 >"$tmp/cpp.out"
is "$(cat "$tmp/cpp.out")" "\"$version\" $(echo "$version" | tr . ' ')" \
    "the header's version is configure's ($version)"

cat >"$tmp/dep.c" <<'EOF'
#include "hpctrain.h"
int old_name(void) HPCT_DEPRECATED("new_name");
int new_name(void);
int use_old_name(void);
int use_old_name(void) { return old_name() + new_name(); }
EOF
"$cc" -std=c99 -Wall -Werror=deprecated-declarations $inc -c "$tmp/dep.c" -o "$tmp/dep.o" \
    2>"$tmp/dep.err"
rc=$?
[ $rc -ne 0 ] && grep -q 'deprecated.*use new_name' "$tmp/dep.err"
ok $? "HPCT_DEPRECATED(successor) warns, naming the successor" || diag "$(cat "$tmp/dep.err")"

# Removed before any release (0.1.0 was never released): naming one is an undeclared name.
declared=
for f in hpct_ckpt_inspect hpct_ckpt_inspect_close hpct_signal_pending hpct_signal_clear; do
    printf '#include "hpctrain.h"\nvoid (*p)(void) = (void (*)(void))%s;\n' "$f" >"$tmp/gone.c"
    "$cc" -std=c99 $inc -c "$tmp/gone.c" -o "$tmp/gone.o" 2>/dev/null && declared="$declared $f"
done
is "${declared# }" "" "the deprecated 0.1 names are no longer declared"

done_testing
