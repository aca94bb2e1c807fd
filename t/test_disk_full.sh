#!/bin/sh
# A checkpoint directory on a file system that fills up (issue 37 (4)): a real tmpfs of a few
# KiB, mounted for the test (root only; it skips elsewhere). Each run saves every 2 steps
# until a save meets ENOSPC; it must then end cleanly: no crash (HDF5 used to be handed a
# file id again after its failed close: exit 139), the failed save named with its file and
# "No space left on device", no temporary file left behind, and every checkpoint written
# before it intact.
#   (a) the in-situ session (t/lib/insitu_prog sim) at W = 2 with two writers (one
#       directory per rank, both on one 100 KiB tmpfs); the program exits 3 on the error;
#   (b) the same with one writer (rank 0, shared directory) on 48 KiB: rank 1 reports the
#       agreed error too;
#   (c) hpctrain train at W = 2 on 64 KiB: exit 1 (an I/O failure, not 3 "bad data");
#   (d) the metrics file alone on 8 KiB (issue 37, finding 9): the record that meets ENOSPC
#       is taken back whole (the file ends on a newline, every line a whole record), the
#       failure is said once at HPCT_LOG_ERROR naming the file, and `hpctrain report` names
#       a file cut inside a record (line and byte offset);
#   (e) the same at the tool's default log level: hpctrain train says the loss once itself;
#   (f) the timeline on a full 8 KiB tmpfs: the failed rewrites are said once, naming the file
#       and ENOSPC, training completes and the file stays valid JSON; a timeline_file prefix
#       in a directory that does not exist fails at the start naming the file and the reason.
. "${top_srcdir:-.}/t/lib/train_lib.sh"
PROG="$top_builddir/t/lib/insitu_prog"
need_tool
need_mpi
[ -x "$PROG" ] || skip_all "$PROG is not built"
[ "$(id -u)" = 0 ] || skip_all "needs root to mount a small tmpfs"
mounts=
trap 'for m in $mounts; do umount "$m" 2>/dev/null; done; kill_leftovers; rm -rf "$work"' EXIT
# small_fs DIR SIZE: a tmpfs of SIZE mounted on DIR (skip the whole test when not allowed).
small_fs() {
    mkdir -p "$1"
    why=$(mount -t tmpfs -o "size=$2" tmpfs "$1" 2>&1) ||
        skip_all "mount -t tmpfs -o size=$2 is not permitted here: $why"
    mounts="$1 $mounts"
}
small_fs "$work/probe" 4k
make_data
plan 20
ENOSPC="No space left on device"

# clean DESC OUT DIR...: the three points every case shares: the failed save is named with its
# file and ENOSPC in OUT; no temporary file in DIR...; every checkpoint there verifies.
clean() {
    desc=$1 out=$2; shift 2
    grep -q "checkpoint.*\.tmp-.*$ENOSPC" "$out"
    ok $? "$desc: the error names the checkpoint file and '$ENOSPC'" || show "$out"
    left=$(find "$@" -name '*.tmp-*' | wc -l)
    is "$left" 0 "$desc: no temporary file left behind"
    bad= n=0
    for d in "$@"; do
        for f in "$d"/ckpt-*.h5; do
            [ -f "$f" ] || continue
            n=$((n + 1))
            "$TOOL" ckpt verify "$f" >"$work/verify.out" 2>&1 || bad="$bad $f"
        done
    done
    [ $n -gt 0 ] && [ -z "$bad" ]
    ok $? "$desc: the $n checkpoint(s) written before verify intact${bad:+ (bad:$bad)}"
}

insitu() {
    timeout -s KILL $RUN_LIMIT "$MPIRUN" --oversubscribe -np 2 "$PROG" "$@"
}

# (a) two writers
small_fs "$work/a" 100k
insitu sim "$work/a/ck" 400 0 1 2 local >"$work/a.out" 2>&1
rc=$?
[ $rc = 3 ] && [ "$(grep -c "^rank [01]: .*$ENOSPC" "$work/a.out")" = 2 ]
ok $? "in situ, two writers, 100 KiB: both ranks report the failed save, exit 3 (got $rc)" ||
    show "$work/a.out" 12
clean "in situ, two writers" "$work/a.out" "$work/a/ck/rank0" "$work/a/ck/rank1"

# (b) one writer
small_fs "$work/b" 48k
insitu sim "$work/b/ck" 400 0 1 2 shared >"$work/b.out" 2>&1
rc=$?
[ $rc = 3 ] && grep -q "^rank 0: .*$ENOSPC" "$work/b.out" && grep -q "^rank 1: .*$ENOSPC" "$work/b.out"
ok $? "in situ, one writer, 48 KiB: rank 0 and rank 1 report the failed save, exit 3 (got $rc)" ||
    show "$work/b.out" 12
clean "in situ, one writer" "$work/b.out" "$work/b/ck"

# (c) hpctrain train
small_fs "$work/c" 64k
train 2 "$work/c/ck" "$work/c.out" --checkpoint-every-steps 2 --checkpoint-keep 50 --log-interval 0
[ $rc = 1 ] && grep -q "^hpctrain train: rank 0: .*I/O error: .*$ENOSPC" "$work/c.out" &&
    grep -q "^hpctrain train: an I/O failure .*not bad input" "$work/c.out"
ok $? "hpctrain train, 64 KiB: an I/O failure on rank 0, said so, exit 1 (got $rc)" ||
    show "$work/c.out" 12
clean "hpctrain train" "$work/c.out" "$work/c/ck"

# (d) metrics file on 8 KiB, checkpoints elsewhere
small_fs "$work/d" 8k
HPCT_LOG_LEVEL=1 train 1 "$work/d-ck" "$work/d.out" --metrics-file "$work/d/m.jsonl" \
    --log-interval 1 --checkpoint-every-steps 0
m="$work/d/m.jsonl"
[ -s "$m" ] && [ "$(tail -c 1 "$m" | od -An -c | tr -d ' ')" = '\n' ] &&
    [ "$("$TOOL" report --no-plots "$m" 2>&1 | sed -n 's/.*lines, \([0-9]*\) skipped.*/\1/p')" = 0 ]
ok $? "metrics on a full disk: the file ends on a whole record, none unreadable ($(wc -c <"$m") bytes)" ||
    show "$work/d.out" 12
n=$(grep -c "metrics file $m: cannot append a record at byte [0-9]*: $ENOSPC" "$work/d.out")
is "$n" 1 "the first lost record is said once at HPCT_LOG_ERROR, naming the file, offset, ENOSPC"
head -c 1000 "$m" >"$work/cut.jsonl"
"$TOOL" report --no-plots "$work/cut.jsonl" >"$work/cut.out" 2>&1
grep -q "warning: the metrics file is truncated: its last line (line [0-9]*, from byte [0-9]*) ends inside a record" \
    "$work/cut.out"
ok $? "hpctrain report names a metrics file cut inside a record, with line and byte offset" ||
    show "$work/cut.out"
grep -q "^hpctrain: done" "$work/d.out"
ok $? "the run itself completes (losing metrics records does not stop training)" || show "$work/d.out"

# (e) the default log level (none): the tool says it, once
small_fs "$work/e" 8k
train 1 "$work/e-ck" "$work/e.out" --metrics-file "$work/e/m.jsonl" --log-interval 1 \
    --checkpoint-every-steps 0
n=$(grep -c "^hpctrain train: rank 0: warning: [1-9][0-9]* metrics record(s) and 0 timeline rewrite(s) could not be written; the first: metrics file $work/e/m.jsonl: cannot append a record at byte [0-9]*: $ENOSPC" "$work/e.out")
[ "$n" = 1 ] && [ $rc = 0 ] && [ "$(grep -c "$ENOSPC" "$work/e.out")" = 1 ]
ok $? "default log level: hpctrain train says the lost metrics records once, exit 0 (got $n, rc $rc)" ||
    show "$work/e.out" 12

# (f) the timeline on a full disk, and in a directory that does not exist
small_fs "$work/f" 8k
train 1 "$work/f-ck" "$work/f.out" --timeline-file "$work/f/tl" --timeline-steps 5 \
    --metrics-file none --checkpoint-every-steps 0
tl="$work/f/tl-rank0.json"
n=$(grep -c "^hpctrain train: rank 0: warning: 0 metrics record(s) and [1-9][0-9]* timeline rewrite(s) could not be written; the first: timeline file $tl: cannot rewrite it: $ENOSPC" "$work/f.out")
[ "$n" = 1 ] && [ "$(grep -c "$ENOSPC" "$work/f.out")" = 1 ]
ok $? "a timeline on a full disk: the failed rewrites are said once, naming the file (got $n)" ||
    show "$work/f.out" 12
[ $rc = 0 ] && grep -q "^hpctrain: done" "$work/f.out" && ls "$work/f" >"$work/f.ls" &&
    [ "$(cat "$work/f.ls")" = tl-rank0.json ] &&
    python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$tl"
ok $? "training completes, no temporary file is left, the timeline is valid JSON (rc $rc)" ||
    show "$work/f.out" 12
train 1 "$work/g-ck" "$work/g.out" --timeline-file "$work/nodir/tl" --checkpoint-every-steps 0
n=$(grep -c "timeline: cannot write $work/nodir/tl-rank0.json: No such file or directory" "$work/g.out")
[ "$n" = 1 ] && [ $rc = 1 ]
ok $? "a timeline prefix in a missing directory: exit 1, the file and the reason said once (got $n, rc $rc)" ||
    show "$work/g.out" 12
done_testing
