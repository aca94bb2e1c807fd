#!/bin/sh
# test_doctor.sh: `hpctrain doctor` under mpirun (and alone), each planted fault named in its
# row, and the exit status (0: ok or WARN, 1: a FAIL or, with --strict, a WARN):
#  (a) healthy, W = 2 with the tests' settings: every row ok, exit 0, in seconds; alone too;
#  (b) rank 1 with another library version (HPCT_TEST_FAKE_VERSION): hpct_init refuses it, one
#      FAIL row names both ranks, hosts and versions; allowed (HPCT_ALLOW_VERSION_MISMATCH=1):
#      a WARN row, exit 0, and exit 1 with --strict;
#  (c) rank 1 started with other settings (MPMD): the settings hash row FAILs naming rank 1;
#  (d) a slowed rank (HPCT_TEST_SLOW_RANK=R,MS sleeps before each timed repetition): at W = 3
#      on three virtual nodes its node is named by the links row, at W = 4 on two virtual
#      nodes of two by the nodes row, and no other node is named;
#  (e) two ranks bound to one CPU, and to overlapping CPU sets (taskset): the CPU binding row
#      names them (2+ CPUs only);
#  (f) checkpoint_dir under a regular file, and on a read-only tmpfs: FAIL with the reason; a
#      checkpoint that takes longer to write than walltime_margin: FAIL;
#  (g) checkpoint_dir on a full 1 MiB tmpfs: FAIL (no space), and on an empty one too small
#      for checkpoint_keep + 1 checkpoints of a larger model: the room row FAILs with sizes.
# The tmpfs cases need root (mount); elsewhere they are skipped with the reason.
. "${top_srcdir:-.}/t/lib/train_lib.sh"
need_tool
need_mpi
# No fork agent (t/t.mk) and no grace after a rank's non-zero exit: the doctor orders its own
# output (doc/hacking.md, "Tests"). After a usage error or a failed hpct_init the ranks above
# 0 wait 2 s for rank 0 to print, which t/lib/exit_hold would wait out; after the checks rank
# 0 prints its table before MPI_Finalize, which Open MPI 4.1 ends with a fence of every rank.
unset OMPI_MCA_orte_fork_agent
export OMPI_MCA_odls_base_sigkill_timeout=0
for v in $(env | sed -n 's/^\(SLURM_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
unset HPCT_TEST_FAKE_VERSION HPCT_ALLOW_VERSION_MISMATCH HPCT_RANKS_PER_NODE SBATCH_SIGNAL
export HPCT_TEST_HOOKS=1
mounts=
trap 'for m in $mounts; do umount "$m" 2>/dev/null; done; kill_leftovers; rm -rf "$work"' EXIT
make_data
TOOL="$(cd "$(dirname "$TOOL")" && pwd)/$(basename "$TOOL")" # the tests run in $work
host=$(hostname)
version=$("$TOOL" --version | sed -n "s/^hpctrain //p") # the linked library's

# doctor OUT W [mpirun options] -- [doctor options]: the doctor at W ranks (W = 1: alone) with
# the tests' settings; sets rc.
doctor() {
    out=$1 w=$2; shift 2
    opts=
    while [ "$1" != "--" ]; do opts="$opts $1"; shift; done
    shift
    if [ "$w" = 1 ]; then
        timeout -s KILL 60 "$TOOL" doctor --config "$work/train.conf" "$@" >"$out" 2>&1
    else
        timeout -s KILL 90 "$MPIRUN" --oversubscribe -np "$w" $opts "$TOOL" doctor \
            --config "$work/train.conf" "$@" >"$out" 2>&1
    fi
    rc=$?
}
# row OUT CHECK: the row of CHECK as "RESULT DETAIL" (the table's padding taken out).
row() { sed -n "s/^$2  *\(ok\|WARN\|FAIL\)  */\1 /p" "$1"; }
show() { sed 's/^/#   /' "$1" | head -n 30; }
# small_fs DIR OPTIONS: a tmpfs mounted on DIR; fails (why in $why) where mounting is refused.
small_fs() {
    mkdir -p "$1"
    why=$(mount -t tmpfs -o "$2" tmpfs "$1" 2>&1) || return 1
    mounts="$1 $mounts"
}

plan 19
cd "$work" || exit 1

# (a)
t0=$(date +%s)
doctor "$work/ok" 2 -- --checkpoint-dir "$work/ckpt"
took=$(($(date +%s) - t0))
[ "$rc" = 0 ] && grep -q "^hpctrain doctor: [0-9]* checks: [0-9]* ok, 0 WARN, 0 FAIL; exit 0$" "$work/ok"
ok $? "healthy at W = 2: every row ok, exit $rc, in $took s" || show "$work/ok"
for c in libhpctrain "MPI library" HDF5 PMIx BLAS "settings hash" "ranks per node" \
    "CPU binding" "fabric: nodes" "fabric: links" "checkpoint dir" "checkpoint room" \
    "checkpoint time" slurm; do
    row "$work/ok" "$c" | grep -q '^ok ' || { missing="${missing:-}[$c]"; }
done
is "${missing:-}" "" "... with a row for versions, placement, fabric, storage and Slurm" || show "$work/ok"
[ ! -e "$work/ckpt" ] && [ -z "$(find "$work" -name '.hpctrain-doctor-*')" ]
ok $? "... and the checkpoint directory it created for the test is gone again"
doctor "$work/one" 1 --
[ "$rc" = 0 ] && row "$work/one" fabric | grep -q "^ok one rank: nothing to measure"
ok $? "alone: exit $rc, nothing to measure between ranks" || show "$work/one"

# (b)
fake="libhpctrain 0.0.9-test"
HPCT_TEST_FAKE_VERSION="1:$fake" doctor "$work/fake" 2 --
want="hpct_init failed: invalid argument: hpct_init: the ranks run different versions: libhpctrain: rank 1 (host $host) has '$fake' where rank 0 (host $host) has 'libhpctrain $version'"
[ "$rc" = 1 ] && row "$work/fake" runtime | grep -qF "FAIL $want"
ok $? "rank 1 on another library version: hpct_init refuses it, one FAIL row names it (exit $rc)" ||
    show "$work/fake"
HPCT_TEST_FAKE_VERSION="1:$fake" HPCT_ALLOW_VERSION_MISMATCH=1 doctor "$work/allowed" 2 -- --no-fabric
[ "$rc" = 0 ] && row "$work/allowed" libhpctrain | grep -qF "WARN libhpctrain: rank 1 (host $host) has '$fake' where rank 0 (host $host) has 'libhpctrain $version' (allowed: HPCT_ALLOW_VERSION_MISMATCH=1)"
ok $? "allowed: a WARN row naming rank 1 and both versions, exit $rc" || show "$work/allowed"
HPCT_TEST_FAKE_VERSION="1:$fake" HPCT_ALLOW_VERSION_MISMATCH=1 doctor "$work/strict" 2 -- \
    --no-fabric --strict
is "$rc" 1 "... exit 1 with --strict"

# (c)
timeout -s KILL 90 "$MPIRUN" --oversubscribe -np 1 "$TOOL" doctor --config "$work/train.conf" \
    --no-fabric : -np 1 "$TOOL" doctor --config "$work/train.conf" --no-fabric --lr 0.2 \
    >"$work/settings" 2>&1
rc=$?
[ "$rc" = 1 ] && row "$work/settings" "settings hash" |
    grep -q "^FAIL settings hash: rank 1 (host $host) has '0x[0-9a-f]*' where rank 0 (host $host) has '0x[0-9a-f]*'"
ok $? "rank 1 with lr = 0.2: the settings hash row FAILs naming rank 1 (exit $rc)" ||
    show "$work/settings"

# (d)
HPCT_RANKS_PER_NODE=1 HPCT_TEST_SLOW_RANK=1,200 doctor "$work/slow3" 3 --
r=$(row "$work/slow3" "fabric: links")
case $r in
"WARN node 1 (host $host, rank 1): its fastest link "*) ! echo "$r" | grep -q "node [02] (" ;;
*) false ;;
esac
ok $? "a slowed rank 1 at W = 3 (3 nodes): the links row names node 1, rank 1 only (exit $rc)" ||
    show "$work/slow3"
HPCT_RANKS_PER_NODE=2 HPCT_TEST_SLOW_RANK=3,200 doctor "$work/slow4" 4 --
r=$(row "$work/slow4" "fabric: nodes")
case $r in
"WARN node 1 (host $host, ranks 2-3) "*) ! echo "$r" | grep -q "node 0 (" ;;
*) false ;;
esac
ok $? "a slowed rank 3 at W = 4 (2 nodes of 2): the nodes row names node 1, ranks 2-3 (exit $rc)" ||
    show "$work/slow4"
is "$rc" 0 "... a WARN: exit 0"

# (e)
if [ "$(getconf _NPROCESSORS_ONLN)" -ge 2 ] && command -v taskset >/dev/null 2>&1; then
    doctor "$work/bind" 2 --bind-to none taskset -c 0 -- --no-fabric
    row "$work/bind" "CPU binding" |
        grep -q "^WARN ranks 0,1 on host $host share the 1 CPU(s) 0: more ranks than CPUs; "
    ok $? "two ranks bound to CPU 0: the binding row names ranks 0 and 1 and CPU 0" ||
        show "$work/bind"
    printf '#!/bin/sh\n[ "$OMPI_COMM_WORLD_RANK" = 0 ] && exec taskset -c 0 "$@"\n%s\n' \
        'exec taskset -c 0-1 "$@"' >"$work/cpus.sh"
    chmod +x "$work/cpus.sh"
    doctor "$work/overlap" 2 --bind-to none "$work/cpus.sh" -- --no-fabric
    row "$work/overlap" "CPU binding" | grep -q "^WARN ranks 0 and 1 on host $host are bound to overlapping CPUs: 0 (rank 0: 0; rank 1: 0-1); "
    ok $? "rank 0 on CPU 0, rank 1 on CPUs 0-1: the binding row names the overlap" ||
        show "$work/overlap"
else
    skip 2 "needs 2 or more CPUs and taskset"
fi

# (f)
: >"$work/afile"
doctor "$work/notdir" 1 -- --checkpoint-dir "$work/afile/ckpt"
[ "$rc" = 1 ] && row "$work/notdir" "checkpoint dir" | grep -qF "FAIL checkpoint_dir $work/afile/ckpt: $work/afile is not a directory"
ok $? "checkpoint_dir under a regular file: FAIL naming it (exit $rc)" || show "$work/notdir"
if small_fs "$work/ro" ro,size=1m; then
    doctor "$work/readonly" 2 -- --no-fabric --checkpoint-dir "$work/ro"
    [ "$rc" = 1 ] && row "$work/readonly" "checkpoint dir" | grep -qF "FAIL checkpoint_dir $work/ro: creating a file in $work/ro failed: Read-only file system"
    ok $? "checkpoint_dir on a read-only file system: FAIL naming it (exit $rc)" || show "$work/readonly"
else
    skip 1 "mount -t tmpfs -o ro is not permitted here: $why"
fi

doctor "$work/slowdisk" 1 -- --no-fabric --checkpoint-dir "$work/ck" --hidden 2048,2048 \
    --walltime-margin 0.001
[ "$rc" = 1 ] && row "$work/slowdisk" "checkpoint time" |
    grep -q "^FAIL .*: a checkpoint of 32.4 MiB takes .*walltime_margin 0.001 s: longer than walltime_margin"
ok $? "a 32 MiB checkpoint against walltime_margin = 1 ms: the time row FAILs (exit $rc)" ||
    show "$work/slowdisk"

# (g)
if small_fs "$work/full" size=1m && small_fs "$work/small" size=1m; then
    dd if=/dev/zero of="$work/full/fill" bs=64k count=16 >/dev/null 2>&1
    doctor "$work/isfull" 2 -- --no-fabric --checkpoint-dir "$work/full"
    [ "$rc" = 1 ] && row "$work/isfull" "checkpoint dir" | grep -qF "FAIL checkpoint_dir $work/full: writing a test file in $work/full failed: No space left on device" &&
        row "$work/isfull" "checkpoint room" | grep -q "^FAIL $work/full has 0 KiB free"
    ok $? "checkpoint_dir on a full tmpfs: the write and the room FAIL (exit $rc)" || show "$work/isfull"
    doctor "$work/toosmall" 2 -- --no-fabric --checkpoint-dir "$work/small" --hidden 512,512
    [ "$rc" = 1 ] && row "$work/toosmall" "checkpoint dir" | grep -q '^ok ' &&
        row "$work/toosmall" "checkpoint room" | grep -q "^FAIL $work/small has 1.0 MiB free, but checkpoint_keep = 3 checkpoints plus the one being written take 8.6 MiB (2.1 MiB each: 273412 parameters, sgd: 1 state slot(s))"
    ok $? "1 MiB free for 4 checkpoints of 2.1 MiB: the room row FAILs with the sizes (exit $rc)" ||
        show "$work/toosmall"
    [ -z "$(ls -A "$work/small")" ]
    ok $? "... and the test file is gone"
else
    skip 3 "mount -t tmpfs is not permitted here: $why"
fi
done_testing
