#!/bin/sh
# check-real-build.sh: show that the HPCT_SIM hooks change nothing in the real build. Each
# library file that has one or includes lib/core/sim.h, and every file of lib/comm (which all
# see sim.h through runtime.h), is compiled twice with the real build's flags (configure's
# MPI/PMIx/HDF5/BLAS flags, -g -O3): as it is, and as it was at REV (default: the commit
# before the hooks, sim-hooks~ ... pass one), and the disassembly of both must be identical.
# usage: bench/sim/check-real-build.sh REV   (from a configured and built source tree)
set -e
rev=${1:?usage: check-real-build.sh REV}
cd "$(dirname "$0")/../.."
cf="-DHAVE_CONFIG_H -I. -I./include $(sed -n 's/^MPI_CFLAGS = //p' Makefile)"
cf="$cf $(sed -n 's/^PMIX_CFLAGS = //p' Makefile) $(sed -n 's/^HDF5_CFLAGS = //p' Makefile)"
cf="$cf $(sed -n 's/^BLAS_CFLAGS = //p' Makefile) -std=gnu11 -g -O3"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bad=0
for f in $( (git grep -l -e 'HPCT_SIM' -e 'HPCTI_SIM' -e 'core/sim\.h' -- 'lib/*.c'
    git ls-files 'lib/comm/*.c') |
    sort -u); do
    d=$(dirname "$f") b=$(basename "$f" .c)
    [ -f "$d/$b.o" ] || continue # not part of this configuration (nccl_node.c without CUDA)
    git show "$rev:$f" >"$d/$b.was.c"
    ${CC:-gcc} $cf -c "$f" -o "$tmp/now.o" && ${CC:-gcc} $cf -c "$d/$b.was.c" -o "$tmp/was.o" || bad=1
    rm -f "$d/$b.was.c"
    objdump -d --no-show-raw-insn "$tmp/now.o" | tail -n +3 >"$tmp/now.s"
    objdump -d --no-show-raw-insn "$tmp/was.o" | tail -n +3 >"$tmp/was.s"
    if cmp -s "$tmp/now.s" "$tmp/was.s"; then
        echo "$f: identical machine code ($(wc -l <"$tmp/now.s") lines of disassembly)"
    else
        echo "$f: the machine code differs from $rev" && bad=1
    fi
done
exit $bad
