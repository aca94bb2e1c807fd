#!/bin/sh
# test_module.sh: "make install" into a temporary prefix, then in fresh shells with Debian's
# Lmod: "module use PREFIX/share/modulefiles; module load hpctrain" with the Lmod (.lua)
# modulefile and, separately, with the Tcl one; check HPCTRAIN_ROOT, PATH, MANPATH,
# PKG_CONFIG_PATH and CMAKE_PREFIX_PATH, find hpctrain(3) with man, and build and run
# examples/mlp_xor.c as an outside program with pkg-config --static.
. "${top_srcdir:-.}/t/lib/tap.sh"
lmod_init=/usr/share/lmod/lmod/init/bash
[ -f "$lmod_init" ] || skip_all "Lmod is not installed (Debian package lmod)"
command -v bash >/dev/null || skip_all "no bash (Lmod's init script needs it)"
command -v pkg-config >/dev/null || skip_all "no pkg-config"
srcdir=$(cd "${top_srcdir:-.}" && pwd)
builddir=$(cd "${top_builddir:-.}" && pwd)
[ -f "$builddir/Makefile" ] && [ -f "$builddir/config.h" ] || skip_all "no configured build tree in '$builddir'"
version=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"$/\1/p' "$builddir/config.h")

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hpct-module.XXXXXX") || skip_all "mktemp failed"
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
prefix="$tmp/prefix"

plan 20

# The test's own make: drop the jobserver of the "make check" that runs it; one "make install"
# at a time in this build tree (t/test_fortran_install.sh takes the same lock).
lock=
command -v flock >/dev/null && lock="flock $builddir/.hpct-install.lock"
(cd "$builddir" && $lock env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL ${MAKE:-make} install prefix="$prefix") \
    >"$tmp/install.log" 2>&1
ok $? "make install prefix=<temporary folder>" || tail -n 20 "$tmp/install.log" | sed 's/^/# /'

missing=
for f in lib/libhpctrain.a include/hpctrain.h include/hpctrain_version.h lib/pkgconfig/hpctrain.pc \
    share/man/man3/hpctrain.3 "share/modulefiles/hpctrain/$version" \
    "share/modulefiles/hpctrain/$version.lua" \
    share/libhpctrain/slurm/hpctrain.sbatch share/libhpctrain/slurm/README.site; do
    [ -f "$prefix/$f" ] || missing="$missing $f"
done
is "$missing" "" "installed: library, headers, .pc, man page, both modulefiles, sbatch template, site notes"

# load MODULEPATH-DIR TAG: in a fresh bash with nothing but Lmod, load hpctrain and write
# the environment to TAG.env; then build and run mlp_xor as an outside program (TAG.build).
load() {
    mkdir -p "$tmp/home"
    env -i HOME="$tmp/home" PATH=/usr/local/bin:/usr/bin:/bin TERM=dumb \
        bash --noprofile --norc -c '
        . "$1" || exit 2
        module use "$2" || exit 3
        module load hpctrain || exit 4
        env > "$3.env"
        man -w 3 hpctrain > "$3.man" 2>&1
        flags=$(pkg-config --define-prefix --static --cflags --libs hpctrain) &&
            cc -o "$3.xor" "$4/examples/mlp_xor.c" $flags && "$3.xor"
        ' sh "$lmod_init" "$1" "$tmp/$2" "$srcdir" >"$tmp/$2.build" 2>&1
}
# var TAG NAME: the value of NAME in TAG.env.
var() { sed -n "s/^$2=//p" "$tmp/$1.env"; }

check_env() {
    is "$(var "$1" HPCTRAIN_ROOT)" "$prefix" "$2: HPCTRAIN_ROOT is the prefix"
    is "$(var "$1" PATH | cut -d: -f1)" "$prefix/bin" "$2: PATH starts with PREFIX/bin"
    case ":$(var "$1" MANPATH):" in *":$prefix/share/man:"*) r=0 ;; *) r=1 ;; esac
    ok $r "$2: MANPATH has PREFIX/share/man" || diag "MANPATH=$(var "$1" MANPATH)"
    is "$(var "$1" PKG_CONFIG_PATH | cut -d: -f1)" "$prefix/lib/pkgconfig" \
        "$2: PKG_CONFIG_PATH starts with PREFIX/lib/pkgconfig"
    is "$(var "$1" CMAKE_PREFIX_PATH | cut -d: -f1)" "$prefix" "$2: CMAKE_PREFIX_PATH starts with PREFIX"
    if command -v man >/dev/null; then
        is "$(cat "$tmp/$1.man")" "$prefix/share/man/man3/hpctrain.3" "$2: man -w 3 hpctrain finds the installed page"
    else
        skip 1 "no man command here (Debian package man-db)"
    fi
    grep -q '^xor: .* accuracy 1.00$' "$tmp/$1.build"
    ok $? "$2: examples/mlp_xor.c builds with pkg-config --static and reaches accuracy 1.00" ||
        sed 's/^/# /' "$tmp/$1.build"
}

# Lmod picks VERSION.lua over the Tcl file VERSION when a folder holds both.
load "$prefix/share/modulefiles" lua
ok $? "Lmod: module use PREFIX/share/modulefiles; module load hpctrain" || sed 's/^/# /' "$tmp/lua.build"
is "$(var lua _LMFILES_)" "$prefix/share/modulefiles/hpctrain/$version.lua" "Lmod loaded the .lua modulefile"
check_env lua "Lmod (.lua)"

# The Tcl modulefile alone in a folder of its own. Debian's environment-modules conflicts
# with lmod, so Lmod's Tcl front end (tcl2lua through tclsh) interprets it here.
diag "environment-modules cannot be installed next to lmod on Debian 12: Lmod interprets the Tcl file"
mkdir -p "$tmp/tclmods/hpctrain"
cp "$prefix/share/modulefiles/hpctrain/$version" "$tmp/tclmods/hpctrain/$version"
load "$tmp/tclmods" tcl
ok $? "Lmod: module load hpctrain from the Tcl modulefile" || sed 's/^/# /' "$tmp/tcl.build"
is "$(var tcl _LMFILES_)" "$tmp/tclmods/hpctrain/$version" "Lmod loaded the Tcl modulefile"
check_env tcl "Tcl"
done_testing
