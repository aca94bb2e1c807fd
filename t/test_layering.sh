#!/bin/sh
# The include rule of doc/hacking.md (.ci/check-layering) on this source tree, and the checker
# itself: a copy of the tree with planted forbidden includes (upward, same level, kernels into
# lib/, a tool into lib/, an unknown folder, comm's runtime into its averaging engine, the
# engine into comm's top files) fails, naming each file and line.
src=${top_srcdir:-.}
checker="$src/.ci/check-layering"
work=$(mktemp -d "${TMPDIR:-/tmp}/hpct-layering.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
. "$src/t/lib/tap.sh"

plan 10
sh "$checker" "$src" >"$work/tree.out" 2>&1
ok $? "the source tree follows the layer rule ($(tail -n 1 "$work/tree.out"))" "$work/tree.out"

# A copy of the sources the checker reads, then one forbidden include per kind.
mkdir "$work/copy"
(cd "$src" && find lib kernels tools examples bench include -type f \
    \( -name '*.[ch]' -o -name '*.cu' \) | tar -cf - -T -) | tar -xf - -C "$work/copy" ||
    echo "# cannot copy the sources"
c="$work/copy"
# plant FILE LINE TEXT: insert TEXT as line LINE of FILE (appending when FILE is shorter)
plant() {
    awk -v at="$2" -v text="$3" 'NR == at { print text; done = 1 } { print }
        END { if (!done) print text }' "$c/$1" >"$work/planted" && mv "$work/planted" "$c/$1"
}
tools_lines=$(wc -l <"$c/tools/train.c")
plant lib/core/ctx.c 3 '#include "../device/ops.h"'
plant lib/data/manifest.c 1 '#include "../device/ops.h"'
plant kernels/kernels.h 2 '#  include "../lib/core/core.h"'
plant tools/train.c $((tools_lines + 1)) '#include "../lib/data/data.h"'
plant lib/comm/runtime/collective.c 12 '#include "../avg/reduce.h"'
plant lib/comm/avg/algo.c 12 '#include "../dist.h"'
mkdir "$c/lib/extra"
printf '/* a folder nobody placed */\n#include "../core/core.h"\n' >"$c/lib/extra/extra.c"

sh "$checker" "$c" >"$work/out" 2>&1
rc=$?
[ "$rc" = 1 ] && grep -q '^check-layering: 7 forbidden' "$work/out"
ok $? "seven planted includes: exit status 1 (got $rc) and a count of seven" "$work/out"
grep -qx 'lib/core/ctx.c:3: core may not include ../device/ops.h (device is above core)' "$work/out"
ok $? "upward: lib/core/ctx.c:3 named, device is above core" "$work/out"
grep -qx 'lib/data/manifest.c:1: data may not include ../device/ops.h (device is on the same level as data)' "$work/out"
ok $? "same level: lib/data/manifest.c:1 named, device and data are peers" "$work/out"
grep -q '^kernels/kernels.h:2: kernels may not include ../lib/core/core.h ' "$work/out"
ok $? "kernels into lib/: kernels/kernels.h:2 named" "$work/out"
grep -q "^tools/train.c:$((tools_lines + 1)): tools may not include ../lib/data/data.h (tools/, examples/ and bench/ include only hpctrain.h" "$work/out"
ok $? "a tool into lib/: tools/train.c:$((tools_lines + 1)) named" "$work/out"
grep -qx 'lib/comm/runtime/collective.c:12: comm/runtime may not include ../avg/reduce.h (comm/avg is above comm/runtime)' "$work/out"
ok $? "inside comm: the runtime may not include the averaging engine" "$work/out"
grep -qx 'lib/comm/avg/algo.c:12: comm/avg may not include ../dist.h (comm is above comm/avg)' "$work/out"
ok $? "inside comm: the averaging engine may not include comm's top files" "$work/out"
grep -q '^lib/extra/extra.c:2: extra may not include ../core/core.h (lib/extra is not in the layer table' "$work/out"
ok $? "an unknown lib/ folder must be placed in the table first" "$work/out"

sh "$checker" "$work/nothing" >"$work/out" 2>&1
[ $? = 2 ]
ok $? "a directory without sources: exit status 2" "$work/out"
done_testing
