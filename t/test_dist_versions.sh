#!/bin/sh
# test_dist_versions.sh: hpct_init agrees on the versions of libhpctrain, MPI and HDF5 across
# the ranks, under `mpirun -np 2 hpctrain train` (its training manifest does not exist: a run
# that gets past hpct_init stops when it opens the data, exit 3). The test hook
# HPCT_TEST_FAKE_VERSION=RANK:TEXT makes rank RANK report TEXT as its library version.
#  (a) the same versions: logged at info level on both ranks, the run gets past hpct_init;
#  (b) rank 1 faked: every rank refuses (exit 1), naming rank 1, rank 0, their hosts and
#      both versions, and the setting that allows it;
#  (c) HPCT_ALLOW_VERSION_MISMATCH=1 on every rank: rank 0 warns once, the run goes on;
#  (d) the setting on rank 0 only (MPMD): still refused (every rank must allow it).
. "${top_srcdir:-.}/t/lib/tap.sh"
: "${top_builddir:=.}"
: "${MPIRUN:=mpirun}"
TOOL="$top_builddir/tools/hpctrain"
[ -x "$TOOL" ] || skip_all "$TOOL is not built"
command -v "$MPIRUN" >/dev/null 2>&1 || skip_all "no mpirun (configure found none)"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
export HPCT_TEST_HOOKS=1
unset HPCT_LOG_LEVEL HPCT_ALLOW_VERSION_MISMATCH HPCT_TEST_FAKE_VERSION HPCT_RANKS_PER_NODE
work=$(mktemp -d "${TMPDIR:-/tmp}/hpct-versions.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
args="train --train-manifest $work/none/manifest.txt --checkpoint-dir $work/ckpt"
version=$("$TOOL" --version | sed -n "s/^hpctrain //p") # the linked library's
host=$(hostname)
fake="libhpctrain 0.0.9-test"

# run OUT [ENV=VALUE...]: the trainer at W = 2 with the extra environment; sets rc.
run() {
    out=$1; shift
    env "$@" timeout -s KILL 60 "$MPIRUN" --oversubscribe -np 2 "$TOOL" $args >"$out" 2>&1
    rc=$?
}
show() { sed 's/^/#   /' "$1" | head -n 20; }

plan 8

run "$work/same" HPCT_LOG_LEVEL=3
n=$(grep -c "versions: libhpctrain $version; .*; HDF5 [0-9.]*: the same on all 2 ranks" "$work/same")
is "$n" 2 "the same versions: each rank logs them at info level" || show "$work/same"
[ "$rc" = 3 ] && grep -q "could not open the dataset" "$work/same"
ok $? "... and the run gets past hpct_init (exit $rc: the missing manifest)" || show "$work/same"

run "$work/fake" "HPCT_TEST_FAKE_VERSION=1:$fake"
want="hpct_init: the ranks run different versions: libhpctrain: rank 1 (host $host) has '$fake' where rank 0 (host $host) has 'libhpctrain $version'"
[ "$rc" = 1 ] && [ "$(grep -cF "$want" "$work/fake")" = 2 ]
ok $? "rank 1 faked: both ranks refuse (exit $rc), naming the ranks, hosts and versions" ||
    show "$work/fake"
grep -q "set HPCT_ALLOW_VERSION_MISMATCH=1 to run anyway" "$work/fake"
ok $? "... and the setting that allows it" || show "$work/fake"
grep -q "could not open the dataset" "$work/fake"
[ $? -ne 0 ]
ok $? "... before the run gets further" || show "$work/fake"

run "$work/allowed" "HPCT_TEST_FAKE_VERSION=1:$fake" HPCT_ALLOW_VERSION_MISMATCH=1 HPCT_LOG_LEVEL=2
n=$(grep -c "warning: hpct_init: the ranks run different versions: libhpctrain: rank 1 .*(going on: HPCT_ALLOW_VERSION_MISMATCH=1)" "$work/allowed")
is "$n" 1 "HPCT_ALLOW_VERSION_MISMATCH=1: rank 0 warns once" || show "$work/allowed"
[ "$rc" = 3 ] && grep -q "could not open the dataset" "$work/allowed"
ok $? "... and the run goes on past hpct_init (exit $rc)" || show "$work/allowed"

HPCT_TEST_FAKE_VERSION="1:$fake" timeout -s KILL 60 "$MPIRUN" --oversubscribe \
    -np 1 env HPCT_ALLOW_VERSION_MISMATCH=1 "$TOOL" $args : -np 1 "$TOOL" $args >"$work/one" 2>&1
rc=$?
[ "$rc" = 1 ] && [ "$(grep -cF "$want" "$work/one")" = 2 ]
ok $? "the setting on rank 0 only: still refused on both ranks (exit $rc)" || show "$work/one"
done_testing
