#!/bin/sh
# FIFOs where hpctrain train expects regular files must not hang it: a FIFO as --config is
# refused naming the path; in the checkpoint directory, a FIFO named like the newest
# checkpoint is skipped as not a regular file (resume from the one before), and a FIFO named
# latest is ignored and replaced at the next save. Every run is bounded by timeout (the
# FIFOs used to block forever: exit 137 from timeout -s KILL).
. "${top_srcdir:-.}/t/lib/train_lib.sh"
need_tool
command -v mkfifo >/dev/null 2>&1 || skip_all "no mkfifo"
make_data
RUN_LIMIT=60
plan 4
CK="--checkpoint-every-steps 20 --checkpoint-keep 3"

mkfifo "$work/fifo.conf"
timeout -s KILL 20 "$TOOL" train --config "$work/fifo.conf" --checkpoint-dir "$work/c" >"$work/conf.out" 2>&1
rc=$?
[ $rc != 137 ] && [ $rc != 0 ] && grep -q "$work/fifo.conf.*not a regular file" "$work/conf.out"
ok $? "--config FIFO: refused naming the path, exit $rc ($(head -c 160 "$work/conf.out"))"

HPCT_TEST_RAISE_AT_STEP=50 train 1 "$work/base" "$work/base.out" $CK
[ $rc = 75 ] && [ -f "$(ckpt_file "$work/base" 50)" ]
ok $? "a run stopped after step 50 (exit $rc) leaves a checkpoint of step 50" "$work/base.out"

cp -r "$work/base" "$work/fifo"
mkfifo "$(ckpt_file "$work/fifo" 60)"
train 1 "$work/fifo" "$work/fifo.out" $CK
[ $rc = 0 ] && [ "$(resumed_step "$work/fifo.out")" = 50 ] &&
    [ "$(grep -c "^hpctrain: skipped 1 corrupt or torn checkpoint(s): checkpoint $work/fifo/ckpt-000000000060.h5 is not a regular file (moved aside to ckpt-000000000060.h5.rejected)$" "$work/fifo.out")" = 1 ] &&
    [ -p "$work/fifo/ckpt-000000000060.h5.rejected" ]
ok $? "a FIFO named ckpt-000000000060.h5: skipped, named with the reason at the default log level, moved aside (.rejected), resumed from step 50, exit $rc" "$work/fifo.out"

cp -r "$work/base" "$work/latest"
rm -f "$work/latest/latest" && mkfifo "$work/latest/latest"
train 1 "$work/latest" "$work/latest.out" $CK
[ $rc = 0 ] && [ "$(resumed_step "$work/latest.out")" = 50 ] && [ -f "$work/latest/latest" ] &&
    grep -q "^ckpt-000000000084.h5$" "$work/latest/latest"
ok $? "a FIFO named latest: resumed from step 50, saved on to the final step 84 replacing it, exit $rc" "$work/latest.out"
done_testing
