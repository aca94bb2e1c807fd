#!/bin/sh
# A convolution model (the layers key) trained by hpctrain train end to end: on the tests'
# synthetic data (16 features given the shape [1, 4, 4]), conv -> max pool -> conv -> dense.
# At W = 2 and 4 every step's replicas are compared (consistency_interval = 1) and must stay
# bit-identical; a run stopped by SIGTERM and resumed ends with the parameters of the run that
# was not stopped; its checkpoints are schema 2 (an MLP's stay 1) and a resume into other
# layers with parameters of the same sizes is refused; bad layers values are named.
. "${top_srcdir:-.}/t/lib/train_lib.sh"
need_tool
need_mpi
make_data
echo "1..11"

cat >>"$work/train.conf" <<CONF
layers = reshape 1x4x4, conv 4 k3, maxpool 2, conv 6 k2 s1 valid tanh, dense 4
consistency_interval = 1
checkpoint_every_steps = 20
CONF

train 2 "$work/w2" "$work/w2.out"
hash2=$(params_hash "$work/w2.out")
first=$(losses "$work/w2.out" | head -n 1 | cut -d' ' -f2)
final=$(losses "$work/w2.out" | tail -n 1 | cut -d' ' -f2)
[ "$rc" = 0 ] && [ -n "$hash2" ] && awk -v a="$first" -v b="$final" 'BEGIN { exit !(b < a / 2) }'
ok $? "W = 2: 84 steps with every replica compared each step (exit $rc), loss $first -> $final" ||
    show "$work/w2.out"
grep -q "conv2d/k3s1same\[4x4x4\](tanh)-maxpool2s2\[4x2x2\](identity)-conv2d/k2s1valid\[6x1x1\](tanh)-dense4(identity)" "$work/w2.out"
ok $? "the model line describes every layer" || show "$work/w2.out" 3

train 4 "$work/w4" "$work/w4.out"
hash4=$(params_hash "$work/w4.out")
[ "$rc" = 0 ] && [ -n "$hash4" ]
ok $? "W = 4: replicas bit-identical at every step (exit $rc, params hash $hash4)" ||
    show "$work/w4.out"

# SIGTERM at step 30 (rank 1 raises it), then a resume of the same job.
HPCT_TEST_HOOKS=1 HPCT_TEST_RAISE_AT_STEP=30,1 train 2 "$work/stop" "$work/stop1.out"
rc1=$rc s=$(stop_step "$work/stop1.out")
train 2 "$work/stop" "$work/stop2.out"
hashr=$(params_hash "$work/stop2.out")
[ "$rc1" = 75 ] && [ -n "$s" ] && [ "$(resumed_step "$work/stop2.out")" = "$s" ] &&
    [ "$rc" = 0 ] && [ "$hashr" = "$hash2" ]
ok $? "stopped by SIGTERM after step ${s:-?} (exit $rc1), resumed (exit $rc): params hash $hashr, the unstopped run's $hash2" ||
    { show "$work/stop1.out" 3; show "$work/stop2.out" 3; }

ck=$(ckpt_file "$work/w2" 84)
h5dump -a /schema_version "$ck" 2>/dev/null | grep -q "(0): 2$"
ok $? "its checkpoints are schema 2" || h5dump -a /schema_version "$ck" 2>&1 | sed 's/^/#   /'
"$TOOL" ckpt verify "$ck" >"$work/verify.out" 2>&1
ok $? "hpctrain ckpt verify accepts it" || show "$work/verify.out" 3

# An MLP's checkpoints stay schema 1, readable by libraries before schema 2.
sed '/^layers = /d; /^consistency_interval/d' "$work/train.conf" >"$work/mlp.conf"
timeout -s KILL $RUN_LIMIT "$TOOL" train --config "$work/mlp.conf" --checkpoint-dir "$work/mlp" \
    --epochs 1 >"$work/mlp.out" 2>&1
h5dump -a /schema_version "$(ckpt_file "$work/mlp" 42)" 2>/dev/null | grep -q "(0): 1$"
ok $? "an MLP's checkpoints stay schema 1" || show "$work/mlp.out" 3

# Average instead of max pooling: the same parameter sizes, another model.
sed 's/maxpool 2/avgpool 2/' "$work/train.conf" >"$work/avg.conf"
cp -r "$work/w2" "$work/avg"
rm -f "$work/avg/.hpctrain.lock"
timeout -s KILL $RUN_LIMIT "$TOOL" train --config "$work/avg.conf" --checkpoint-dir "$work/avg" \
    --epochs 3 >"$work/avg.out" 2>&1
arc=$?
[ "$arc" != 0 ] && grep -q "resumes only into the same layers" "$work/avg.out"
ok $? "a resume into avgpool from a maxpool checkpoint is refused (exit $arc)" ||
    show "$work/avg.out" 4

sed 's/^layers = .*/layers = reshape 1x4x4, conv 4 q3, dense 4/' "$work/train.conf" >"$work/bad.conf"
"$TOOL" train --config "$work/bad.conf" --checkpoint-dir "$work/bad" >"$work/bad.out" 2>&1
brc=$?
[ "$brc" = 2 ] && grep -q "layers: item 2 ('conv 4 q3'): 'q3' is not an option of conv" "$work/bad.out"
ok $? "a bad layers item is named (exit $brc)" || show "$work/bad.out" 3

sed 's/^layers = .*/layers = reshape 1x4x4, conv 4 k3, dense 5/' "$work/train.conf" >"$work/wide.conf"
"$TOOL" train --config "$work/wide.conf" --checkpoint-dir "$work/wide" >"$work/wide.out" 2>&1
wrc=$?
[ "$wrc" = 2 ] && grep -q "the last layer gives 5 values per sample, but outputs (classes) is 4" "$work/wide.out"
ok $? "a last layer wider than outputs is refused (exit $wrc)" || show "$work/wide.out" 3

"$TOOL" train --config "${top_srcdir:-.}/examples/fashion-mnist-cnn.conf" --print-config \
    >"$work/example.out" 2>&1 &&
    grep -q "^layers = reshape 1x28x28, conv 32 k3, maxpool 2, conv 64 k3" "$work/example.out"
ok $? "examples/fashion-mnist-cnn.conf reads" || show "$work/example.out" 3
