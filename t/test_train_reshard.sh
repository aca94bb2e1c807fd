#!/bin/sh
# A dataset rewritten while a run reads it (doc/reliability.md): a 2-rank hpctrain train
# streaming its samples from the shard files (data_memory_mib = 0; checkpoints every 20
# steps; rank 1 slowed to 20 ms per step) is running when "hpctrain shard -o" writes
# other samples into the same folder (in place: the same file names). The run must stop with
# exit 3 (bad data) within a few seconds, every rank naming a shard file that changed, not
# train on a mix of old and new samples to the end; the checkpoints written before the
# change stay and verify; a run on the rewritten folder then starts from its own checks
# (the manifest now describes the new files).
. "${top_srcdir:-.}/t/lib/train_lib.sh"
need_tool
need_mpi
make_data
echo "1..4"

cat >>"$work/train.conf" <<CONF
checkpoint_every_steps = 20
checkpoint_keep = 100
data_memory_mib = 0
data_store = off
CONF
HPCT_TEST_SLOW_RANK=1,20 train_bg 2 "$work/ck" "$work/run.out" --epochs 60 --log_interval 10
wait_for_step "$work/run.out" 100
# other samples: the same shapes, another awk seed, inputs 1000 times larger, so that a batch
# read from the new bytes within the epoch makes the loss diverge before the next epoch's
# check: the run must still say that the data changed (exit 3), not that it diverged (4)
sed 's/srand(7)/srand(11)/; s/x = 2 \* rand() - 1/x = 2000 * rand() - 1000/' \
    "${top_srcdir:-.}/t/lib/train_data.sh" >"$work/other.sh"
. "$work/other.sh"
train_csv "$work/other.csv"
"$TOOL" shard -o "$work/data" "$work/other.csv" >"$work/shard.out" 2>&1
changed=$(date +%s)
train_wait "$work/run.out"
echo "# the run ended with exit $rc $(($(date +%s) - changed)) s after the rewrite"
grep -q "what stopped the run" "$work/run.out" && echo "# (the loss diverged on the new bytes first)"
last=$(sed -n 's/^epoch [0-9]* step \([0-9]*\)\/.*/\1/p' "$work/run.out" | tail -n 1)
[ "$rc" = 3 ] && [ "${last:-0}" -lt 2520 ]
ok $? "the run stops with exit 3 (got $rc) at step ${last:-?} of 2520, not at the end" ||
    show "$work/run.out" 8
n=$(grep -c "rank [01]: .*shard $work/data/shard-0000[0-9].h5 \(was modified while this run read it\|dataset /[a-z]*: the file shrank while it was read\)" "$work/run.out")
[ "$n" -ge 1 ]
ok $? "a shard file that changed is named ($n message(s))" || show "$work/run.out" 6
bad=0 count=0
for f in "$work"/ck/ckpt-*.h5; do
    [ -f "$f" ] || continue
    count=$((count + 1))
    "$TOOL" ckpt verify "$f" >/dev/null 2>&1 || bad=$((bad + 1))
done
[ "$count" -ge 5 ] && [ "$bad" = 0 ]
ok $? "the $count checkpoint(s) written before the change stay and verify ($bad bad)"
train 2 "$work/fresh" "$work/fresh.out" --epochs 1
[ "$rc" = 0 ]
ok $? "a new run on the rewritten folder trains (exit $rc)" || show "$work/fresh.out" 6
