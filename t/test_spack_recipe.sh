#!/bin/sh
# test_spack_recipe.sh: the Spack recipe in spack/ (README, "Installing with Spack") agrees
# with the tree: the repository layout, package.py compiles, every configure option and
# variable it passes is one configure knows, its version is configure's, and the example
# sources its stand-alone tests build exist. Where a Spack is installed (spack on PATH, or
# SPACK_ROOT), Spack itself loads the recipe (spack info) and audits it; else that point
# skips. (The install and "spack test run" themselves need a whole Spack set-up: README.)
. "${top_srcdir:-.}/t/lib/tap.sh"
srcdir=$(cd "${top_srcdir:-.}" && pwd)
repo=$srcdir/spack
pkg=$repo/packages/libhpctrain/package.py
python=$(command -v python3 || command -v python) || skip_all "no python3 to read the recipe"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/hpct-spack.XXXXXX") || skip_all "mktemp failed"
trap 'rm -rf "$tmp"' EXIT

plan 6

# 1. Layout of a Spack v0.2x package repository: repo.yaml with a namespace, and
# packages/<name>/package.py whose class is the name Spack derives from the folder.
{
    grep -Eq '^repo:' "$repo/repo.yaml" &&
        grep -Eq '^  namespace: *hpctrain *$' "$repo/repo.yaml" &&
        grep -Eq '^class Libhpctrain\(AutotoolsPackage, CudaPackage\):' "$pkg"
} >"$tmp/layout.err" 2>&1
ok $? "spack/repo.yaml names the namespace hpctrain; packages/libhpctrain/package.py has class Libhpctrain" ||
    diag "$(cat "$tmp/layout.err")"

# 2. Python accepts the recipe (compiled into the scratch folder: the source tree may be
# read-only, as under make distcheck).
"$python" -c 'import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True)' \
    "$pkg" "$tmp/package.pyc" >"$tmp/compile.err" 2>&1
ok $? "package.py compiles" "$tmp/compile.err"

# 3. Every option and variable the recipe hands configure is in configure --help.
(cd "$tmp" && sh "$srcdir/configure" --help) >"$tmp/help.txt" 2>&1
"$python" - "$pkg" "$tmp/help.txt" >"$tmp/options.err" 2>&1 <<'EOF'
import re, sys
recipe = open(sys.argv[1]).read()
known = open(sys.argv[2]).read()
asked = set(re.findall(r'--((?:with|without|enable|disable)-[a-z0-9-]+)', recipe))
asked |= {"with-" + v for v in re.findall(r'with_or_without\("([a-z0-9-]+)"', recipe)}
asked |= {"enable-" + v for v in re.findall(r'enable_or_disable\("([a-z0-9-]+)"', recipe)}
bad = []
for opt in sorted(asked):
    kind, name = opt.split("-", 1)
    # configure --help lists one spelling of each: --with-X or --without-X, --enable-X or
    # --disable-X.
    pair = {"with": "without", "without": "with", "enable": "disable", "disable": "enable"}[kind]
    if not re.search(r'--(%s|%s)-%s\b' % (kind, pair, re.escape(name)), known):
        bad.append("--" + opt)
for var in sorted(set(re.findall(r'"([A-Z][A-Z0-9_]*)=', recipe)) |
               set(re.findall(r'f"([A-Z][A-Z0-9_]*)=', recipe))):
    if not re.search(r'^  %s\s' % var, known, re.M):
        bad.append(var + "=")
if not asked:
    bad.append("(no configure option found in the recipe)")
print("asked of configure:", " ".join(sorted("--" + o for o in asked)))
if bad:
    print("configure --help does not know:", " ".join(bad))
    sys.exit(1)
EOF
ok $? "every configure option and variable in package.py is in configure --help" "$tmp/options.err"

# 4. The recipe names this tree's version (configure's AC_INIT).
version=$(cd "$tmp" && sh "$srcdir/configure" --version | sed -n '1s/^libhpctrain configure //p')
[ -n "$version" ] && grep -q "version(\"$version\")" "$pkg"
ok $? "package.py has version(\"$version\"), configure's version" ||
    diag "versions in package.py: $(grep -o 'version("[^"]*"' "$pkg" | tr '\n' ' ')"

# 5. The sources the stand-alone tests build are in the tree (and so in the tarball).
missing=
for f in $(sed -n 's/^ *test_sources = \[\(.*\)\]/\1/p' "$pkg" | tr -d '",'); do
    [ -f "$srcdir/$f" ] || missing="$missing $f"
done
[ -n "$(sed -n 's/^ *test_sources = \[\(.*\)\]/\1/p' "$pkg")" ] && [ -z "$missing" ]
ok $? "the example sources of the stand-alone tests exist" || diag "missing:${missing:- (no test_sources line)}"

# 6. Spack itself loads and audits the recipe, in a scratch configuration (no site or user
# configuration; Spack's own caches are kept, or the first run rebuilds its package index).
spack=$(command -v spack || { [ -n "${SPACK_ROOT:-}" ] && echo "$SPACK_ROOT/bin/spack"; })
if [ -n "$spack" ] && [ -x "$spack" ]; then
    mkdir -p "$tmp/scope" "$tmp/user"
    printf 'repos:\n- %s\n' "$repo" >"$tmp/scope/repos.yaml"
    env SPACK_DISABLE_LOCAL_CONFIG=1 SPACK_USER_CONFIG_PATH="$tmp/user" sh -c '
        "$1" -C "$2" info libhpctrain >"$3" &&
        grep -q "Build the Fortran module hpctrain" "$3" &&
        "$1" -C "$2" audit packages libhpctrain' sh "$spack" "$tmp/scope" "$tmp/info.txt" \
        >"$tmp/spack.out" 2>&1
    ok $? "spack info and spack audit packages accept libhpctrain ($spack)" "$tmp/spack.out"
else
    skip 1 "no Spack (spack on PATH or SPACK_ROOT)"
fi

done_testing
