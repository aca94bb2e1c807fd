#!/bin/sh
# test_doc_complete.sh: the documentation names everything the code offers, read from the
# sources (and from the built tool's --help):
#  - doc/hpctrain.3 has an entry (a .TP tag) naming every function include/hpctrain.h declares;
#  - every exit code of the hpctrain tool (TOOL_* of tools/tools.h, TRAIN_* of tools/train.c,
#    HPCT_EXIT_* of the header, which train exits with) is in the README's list, in
#    `hpctrain --help` and `hpctrain train --help`, in hpctrain(1) EXIT STATUS and in its
#    "Exit status of train" list;
#  - every long option of the subcommands (getopt tables and "--x" compared in tools/*.c) is
#    named in doc/hpctrain.1;
#  - every settings key lib/train/settings.c accepts has an entry in doc/hpctrain.conf.5;
#  - the man pages' .TH lines name the version of AC_INIT in configure.ac.
# (The HPCT_* variables of the man pages are checked by t/test_doc_env.sh.)
. "${top_srcdir:-.}/t/lib/tap.sh"
src=${top_srcdir:-.}
tool=${top_builddir:-.}/tools/hpctrain
for f in include/hpctrain.h tools/tools.h tools/train.c lib/train/settings.c doc/hpctrain.1 \
    doc/hpctrain.3 doc/hpctrain.conf.5 README configure.ac; do
    [ -f "$src/$f" ] || skip_all "$src/$f not found"
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/hpct-doccomplete.XXXXXX") || skip_all "mktemp failed"
trap 'rm -rf "$tmp"' EXIT
plan 9

# roff FILE: the man page as words: font escapes dropped, \- as -, quotes as blanks.
roff() { sed -e 's/\\f[BIRP]//g' -e 's/\\f([A-Z][A-Z]//g' -e 's/\\-/-/g' -e 's/"/ /g' "$1"; }
# tags FILE: the tag line of every .TP entry of a man page, as roff gives it.
tags() { roff "$1" | awk 'prev == ".TP" { print } { prev = $0 }'; }
# missing LIST WORDS: the names of file LIST (one a line) that file WORDS lacks, on one line.
missing() { sort -u "$1" | comm -23 - "$2" | tr '\n' ' ' | sed 's/ $//'; }

# 1. Functions: declarations start at column 0 ("hpct_status_t hpct_x(", "void hpct_x(", ...).
sed -n 's/^[a-z][a-z0-9_ ]*[ *]\(hpct_[a-z0-9_]*\)(.*/\1/p' "$src/include/hpctrain.h" |
    sort -u >"$tmp/functions"
tags "$src/doc/hpctrain.3" | grep -o 'hpct_[a-z0-9_]*' | sort -u >"$tmp/entries3"
n=$(wc -l <"$tmp/functions")
gone=$(missing "$tmp/functions" "$tmp/entries3")
[ "$n" -ge 80 ] && [ -z "$gone" ]
ok $? "hpctrain.3 has an entry naming each of the $n functions of hpctrain.h" ||
    diag "declarations found: $n; without an entry: $gone"

# 2-6. Exit codes: the tool's shared ones, train's own, and the library's hang exit.
{
    sed -n 's/^#define TOOL_[A-Z_]* *\([0-9][0-9]*\).*/\1/p' "$src/tools/tools.h"
    sed -n 's/^#define TRAIN_[A-Z_]* *\([0-9][0-9]*\).*/\1/p' "$src/tools/train.c"
    sed -n 's/^#define HPCT_EXIT_[A-Z_]* *\([0-9][0-9]*\).*/\1/p' "$src/include/hpctrain.h"
} | sort -un >"$tmp/codes"
codes=$(tr '\n' ' ' <"$tmp/codes" | sed 's/ $//')
# exit_list FILE: the paragraph of FILE that lists exit codes ("exit status:", "Exit codes:")
# up to the next blank line; code_words: each "N word" of it, as N.
exit_list() { awk 'tolower($0) ~ /exit (status|codes):/ { on = 1 } on && /^[ \t]*$/ { exit } on' "$1"; }
code_words() { grep -o '\(^\|[^0-9.]\)[0-9][0-9]* [a-z(]' | grep -o '[0-9][0-9]*' | sort -u; }
# has_codes FILE DESC: test point: the codes listed in FILE include every exit code.
has_codes() {
    gone=$(missing "$tmp/codes" "$1")
    [ "$(wc -l <"$tmp/codes")" -ge 6 ] && [ -z "$gone" ]
    ok $? "$2 names every exit code ($codes)" || diag "missing: ${gone:-(too few codes found)}"
}

exit_list "$src/README" | code_words >"$tmp/readme-codes"
has_codes "$tmp/readme-codes" "the README's list of exit codes"
if [ -x "$tool" ]; then
    "$tool" --help 2>&1 | exit_list /dev/stdin | code_words >"$tmp/help-codes"
    has_codes "$tmp/help-codes" "hpctrain --help"
    "$tool" train --help 2>&1 | exit_list /dev/stdin | code_words >"$tmp/train-codes"
    has_codes "$tmp/train-codes" "hpctrain train --help"
else
    skip 2 "$tool is not built"
fi
# hpctrain(1): EXIT STATUS (a paragraph) and "Exit status of train" (one .TP entry a code).
roff "$src/doc/hpctrain.1" | awk '/^\.S[HS] / { on = ($0 == ".SH EXIT STATUS") } on' |
    code_words >"$tmp/man-codes"
has_codes "$tmp/man-codes" "hpctrain.1 EXIT STATUS"
roff "$src/doc/hpctrain.1" | awk '/^\.S[HS] / { on = ($0 == ".SS Exit status of train") } on' |
    sed -n 's/^\.B \([0-9][0-9]*\)$/\1/p' | sort -u >"$tmp/man-train-codes"
has_codes "$tmp/man-train-codes" "hpctrain.1 \"Exit status of train\""

# 7. Long options: getopt tables ({"name", has_arg, ...}) and literals compared with strcmp.
{
    sed -n 's/.*{"\([a-z][a-z0-9-]*\)", [0-9], [0-9A-Za-z_]*, .*/\1/p' "$src"/tools/*.c
    grep -o 'strcmp([^,]*, *"--[a-z][a-z0-9-]*")' "$src"/tools/*.c | sed 's/.*"--\(.*\)")/\1/'
} | sort -u >"$tmp/options"
roff "$src/doc/hpctrain.1" | grep -o -- '--[a-z][a-z0-9-]*' | sed 's/^--//' | sort -u \
    >"$tmp/named-options"
n=$(wc -l <"$tmp/options")
gone=$(missing "$tmp/options" "$tmp/named-options")
[ "$n" -ge 15 ] && [ -z "$gone" ]
ok $? "hpctrain.1 names each of the $n long options of the subcommands" ||
    diag "options found: $n; not in hpctrain.1: $gone"

# 8. Settings keys: the rows of the keys[] table of lib/train/settings.c.
sed -n 's/^    {"\([a-z][a-z0-9_]*\)", K_[A-Z]*,.*/\1/p' "$src/lib/train/settings.c" | sort -u \
    >"$tmp/keys"
tags "$src/doc/hpctrain.conf.5" | tr -c 'a-z0-9_\n' ' ' | tr ' ' '\n' | sort -u >"$tmp/entries5"
n=$(wc -l <"$tmp/keys")
gone=$(missing "$tmp/keys" "$tmp/entries5")
[ "$n" -ge 30 ] && [ -z "$gone" ]
ok $? "hpctrain.conf.5 has an entry for each of the $n settings keys" ||
    diag "keys found: $n; without an entry: $gone"

# 9. The version of the man pages is configure's (AC_INIT's, the one version).
version=$(sed -n 's/^AC_INIT(\[[^]]*\], *\[\([0-9.]*\)\].*/\1/p' "$src/configure.ac")
bad=
for page in doc/hpctrain.1 doc/hpctrain.3 doc/hpctrain.conf.5; do
    grep -q "^\.TH .* \"libhpctrain $version\" " "$src/$page" || bad="$bad $page"
done
[ -n "$version" ] && [ -z "$bad" ]
ok $? "the man pages' .TH lines name libhpctrain ${version:-?} (AC_INIT's version)" ||
    diag "configure.ac's version: '${version}'; other .TH version in:$bad"
done_testing
