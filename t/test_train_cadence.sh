#!/bin/sh
# Time-based checkpoint cadence at W = 2: only rank 0 writes, yet every rank must agree when
# the next save is due. 84 steps of at least 50 ms each with checkpoint_every_seconds = 1 may
# save about once a second; a rank whose clock never restarts would ask for a save at every
# step after the first second (the bound below is half the steps).
. "${top_srcdir:-.}/t/lib/train_lib.sh"
need_tool
need_mpi
make_data
echo "1..2"

HPCT_TEST_STEP_DELAY_MS=50 train 2 "$work/ck" "$work/out" --checkpoint-every-seconds 1 \
    --checkpoint-keep 1000 --checkpoint-async 0
[ $rc = 0 ] && [ -n "$(params_hash "$work/out")" ]
ok $? "W=2 run with checkpoint_every_seconds = 1 completes: exit $rc"
show "$work/out" 3
saves=$(ls "$work/ck" | grep -c '^ckpt-.*\.h5$')
[ "$saves" -ge 2 ] && [ "$saves" -le $((TOTAL_STEPS / 2)) ]
ok $? "$saves checkpoints for $TOTAL_STEPS steps: time-based saves agreed across ranks (2..$((TOTAL_STEPS / 2)))"
