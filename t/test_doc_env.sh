#!/bin/sh
# test_doc_env.sh: the man pages' ENVIRONMENT sections agree with the library's registry of
# settings (`hpctrain info --names`, lib/core/tunables.c): doc/hpctrain.3 describes every
# registered variable (a ".B NAME" entry) and names no HPCT_ variable that is not
# registered; doc/hpctrain.1 names no HPCT_ variable that is neither registered nor the
# tool's own (HPCT_LOG_LEVEL, HPCT_KEY, HPCT_CONFIG, HPCT_TRAIN, HPCT_MAX_RESTARTS,
# HPCT_PREFLIGHT).
. "${top_srcdir:-.}/t/lib/tap.sh"
src=${top_srcdir:-.}
tool=${top_builddir:-.}/tools/hpctrain
[ -x "$tool" ] || skip_all "$tool is not built"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/hpct-docenv.XXXXXX") || skip_all "mktemp failed"
trap 'rm -rf "$tmp"' EXIT
plan 4

"$tool" info --names | sort -u >"$tmp/registry"
[ "$(wc -l <"$tmp/registry")" -ge 17 ]
ok $? "hpctrain info --names lists $(wc -l <"$tmp/registry") settings"

# section FILE: the ENVIRONMENT section of a man page, without the next section.
section() { awk '/^\.SH / { on = ($2 == "ENVIRONMENT") } on' "$1"; }

section "$src/doc/hpctrain.3" | sed -n 's/^\.B \(HPCT_[A-Z0-9_]*\)$/\1/p' | sort -u >"$tmp/entries"
missing=$(comm -23 "$tmp/registry" "$tmp/entries" | tr '\n' ' ')
is "${missing% }" "" "hpctrain.3 ENVIRONMENT has an entry for every registered setting"

section "$src/doc/hpctrain.3" | grep -o 'HPCT_[A-Z0-9_]*' | sort -u >"$tmp/named3"
extra=$(comm -23 "$tmp/named3" "$tmp/registry" | grep -v '^HPCT_ERR_' | tr '\n' ' ')
is "${extra% }" "" "hpctrain.3 ENVIRONMENT names no unregistered HPCT_ variable"

printf '%s\n' HPCT_LOG_LEVEL HPCT_ HPCT_EPOCHS HPCT_CONFIG HPCT_TRAIN HPCT_MAX_RESTARTS HPCT_PREFLIGHT \
    >>"$tmp/registry"
sort -u -o "$tmp/known" "$tmp/registry"
section "$src/doc/hpctrain.1" | grep -o 'HPCT_[A-Z0-9_]*' | sort -u >"$tmp/named1"
extra=$(comm -23 "$tmp/named1" "$tmp/known" | tr '\n' ' ')
is "${extra% }" "" "hpctrain.1 ENVIRONMENT names only registered or the tool's own variables"
