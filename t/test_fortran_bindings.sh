#!/bin/sh
# test_fortran_bindings.sh: the Fortran module covers the public C API, checked from the
# sources (no build needed):
#  - every function declared in include/hpctrain.h has a BIND(C, name="hpct_...") interface
#    in lib/fortran/hpctrain.F90, and its Fortran wrapper (same name) is called by a Fortran
#    test (t/lib/*.F90), so "every wrapper is called at least once" holds;
#  - every integer constant of the header (#define HPCT_X n, enum HPCT_X = n) is a Fortran
#    parameter of the same value, and HPCT_VERSION_STRING is the same string (the version
#    comes from the files configure writes, include/hpctrain_version.h and
#    lib/fortran/hpctrain_version.inc, in a configured build tree; from their templates
#    otherwise);
#  - every config struct of the header is a BIND(C) type, every opaque handle a type.
. "${top_srcdir:-.}/t/lib/tap.sh"
src=${top_srcdir:-.}
bld=${top_builddir:-.}
header=$src/include/hpctrain.h
module=$src/lib/fortran/hpctrain.F90
[ -f "$header" ] && [ -f "$module" ] || skip_all "sources not found under '$src'"
hversion=$bld/include/hpctrain_version.h
mversion=$bld/lib/fortran/hpctrain_version.inc
[ -f "$hversion" ] && [ -f "$mversion" ] || {
    hversion=$src/include/hpctrain_version.h.in
    mversion=$src/lib/fortran/hpctrain_version.inc.in
}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/hpct-fbind.XXXXXX") || skip_all "mktemp failed"
trap 'rm -rf "$tmp"' EXIT

# Declarations start at column 0: "hpct_status_t hpct_x(", "const char *hpct_x(", ...
sed -n 's/^[a-z][a-z0-9_ ]*[ *]\(hpct_[a-z0-9_]*\)(.*/\1/p' "$header" | sort -u >"$tmp/functions"
# Fortran test sources without their comments.
cat "$src"/t/lib/*.F90 | sed 's/!.*//' >"$tmp/tests"

plan 6
n=$(wc -l <"$tmp/functions")
[ "$n" -ge 80 ]
ok $? "the header declares $n hpct_ functions" || diag "the declaration pattern found too few: check $0"

missing=
while read -r f; do
    grep -q "bind(C, name=\"$f\")" "$module" || missing="$missing $f"
done <"$tmp/functions"
is "${missing# }" "" "every one of the $n functions has a BIND(C) interface in the module"

uncalled=
while read -r f; do
    grep -Eq "(^|[^a-z0-9_])$f *\(" "$tmp/tests" || uncalled="$uncalled $f"
done <"$tmp/functions"
is "${uncalled# }" "" "every one of the $n wrappers is called by a Fortran test (t/lib/*.F90)"

# "NAME = value" pairs: enum members and #defines of the header, parameters of the module.
{
    grep -o 'HPCT_[A-Z0-9_]* = -\?[0-9]\+' "$header"
    sed -n 's/^#define \(HPCT_[A-Z0-9_]*\)[ \t]\+\(-\?[0-9]\+\)\([ \t].*\)\?$/\1 = \2/p' \
        "$header" "$hversion"
} | sort -u >"$tmp/constants"
cat "$module" "$mversion" | grep -o 'HPCT_[A-Z0-9_]* = -\?[0-9]\+' | sort -u >"$tmp/parameters"
nc=$(wc -l <"$tmp/constants")
wrong=$(comm -23 "$tmp/constants" "$tmp/parameters" | tr '\n' ';')
[ "$nc" -ge 60 ] && [ -z "$wrong" ]
ok $? "all $nc integer constants of the header are Fortran parameters of the same value" ||
    diag "missing or different: $wrong"

hs=$(sed -n 's/^#define HPCT_VERSION_STRING "\(.*\)"$/\1/p' "$hversion")
ms=$(sed -n 's/.*:: HPCT_VERSION_STRING = "\(.*\)"$/\1/p' "$mversion")
[ -n "$hs" ] && [ "$ms" = "$hs" ]
ok $? "HPCT_VERSION_STRING is the same string ('$hs' in C, '$ms' in Fortran)"

bad=
structs=$(awk '/^typedef struct hpct_[a-z_]* \{/ { s = 1 } s && /^\} hpct_[a-z_]*_t;/ { sub(/;$/, "", $2); print $2; s = 0 }' "$header")
[ -n "$structs" ] || bad="(no struct found)"
for t in $structs; do
    grep -q "type, bind(C), public :: $t\$" "$module" || bad="$bad $t(bind(C))"
done
for t in $(sed -n 's/^typedef struct hpct_[a-z_]* \*\(hpct_[a-z_]*_t\);$/\1/p' "$header"); do
    grep -q "type, public :: $t\$" "$module" || bad="$bad $t(handle)"
done
is "${bad# }" "" "every config struct is a BIND(C) type and every handle a Fortran type"
done_testing
