#!/bin/sh
# Resume at a world size where an fp32 mean of ones is below 1 (n * fl(1/n) < 1 for n = 41,
# the smallest such n; then 47, 55, ...): every cross-rank agreement is an integer
# reduction, so a run at W = 41 that wrote a checkpoint resumes from it (before, every rank
# reported "found a checkpoint but other ranks did not"). Oversubscribed on purpose, tiny
# data: 8 samples a rank and step; stopped by SIGTERM after step 3 (exit 75), then resumed
# to the end of the epoch. One such W is enough to catch the bug (W = 47 was a second one,
# 20 s more, no other path); each job of 41 ranks takes about 10 s here, 5 of them MPI_Init.
. "${top_srcdir:-.}/t/lib/train_lib.sh"
need_tool
need_mpi
make_data
RUN_LIMIT=150
echo "1..2"
for W in 41; do
    gb=$((8 * W)) d="$work/w$W"
    HPCT_TEST_RAISE_AT_STEP=3 train "$W" "$d" "$d.first" --global-batch $gb --collective-timeout 120
    [ $rc = 75 ] && [ -f "$(ckpt_file "$d" 3)" ]
    ok $? "W=$W: stopped by SIGTERM after step 3 (global batch $gb): exit 75 (got $rc), checkpoint of step 3"
    [ $rc = 75 ] || { grep -v "Epoll MOD" "$d.first" | tail -n 8 | sed "s/^/#   /"; }
    train "$W" "$d" "$d.second" --global-batch $gb --collective-timeout 120
    steps=$((2 * (2048 / gb))) # two epochs (train.conf)
    [ $rc = 0 ] && [ "$(resumed_step "$d.second")" = 3 ] && ! grep -q "other ranks did not" "$d.second" &&
        [ -f "$(ckpt_file "$d" $steps)" ]
    ok $? "W=$W: the second run resumes from step 3 on every rank and ends at step $steps (exit $rc)"
    [ $rc = 0 ] || { grep -v "Epoll MOD" "$d.second" | tail -n 8 | sed "s/^/#   /"; }
done
