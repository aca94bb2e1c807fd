#!/bin/sh
# Gradient buffers that the ranks of a node share (hpct_alloc_grads): averaged in place
# through the node window (no copy into the window), whole and in part, sizes 1 to 4 Mi
# + 3 floats, they give the point-to-point path's bits on every rank at W = 1..4 with and
# without virtual nodes; where the window is not set up (one rank per node, uneven nodes)
# they are ordinary memory; a buffer given back is handed out again zeroed; where rank 0
# passes ordinary memory and the others the buffer, its node averages by copying (the same
# bits, a warning once); HPCT_NODE_IN_PLACE=0 on one rank turns in place off on all; a rank
# that stops inside an in-place average is named in HPCT_ERR_TIMEOUT. A built-in model's
# gradients move into the window at the first broadcast or average of its set where the
# window averages in place (and only there), and average to the mean there. With shm/p2p in the
# table (ordinary memory point-to-point on one node) the same holds: gradient buffers are
# still averaged in place, a mixed node still copies. Gradient buffers (whole, or a set
# carved from one) go through the window in place across nodes where the table says p2p, if
# every rank's do.
. "${top_srcdir:-.}/t/lib/dist_lib.sh"
need_mpi
plan 26
stop_start HPCT_ALLREDUCE_ALGO=shm grads_hang # checked last (stop_check)

case_ok "W=1: ordinary memory, averages are copies" mpi 1 -- grads 0
case_ok "W=2, one node: in place = p2p bit for bit" mpi 2 -- grads 1
case_ok "W=3, one node: in place = p2p bit for bit" mpi 3 -- grads 1
case_ok "W=4, two virtual nodes of 2 (hierarchical): in place = p2p bit for bit" \
    mpi 4 HPCT_RANKS_PER_NODE=2 -- grads 1
n=$(grep -c "averaging in place in a gradient buffer's shared window" "$tmpdir/out")
[ "$n" = 4 ]
ok $? "W=4: every rank logs that it averaged in place (4 ranks, got $n)"
n=$(grep -c "this node averages by copying" "$tmpdir/out")
grep -q "rank 0 averages ordinary memory while rank 1 of the same node averages a part of a gradient buffer: this node averages by copying" "$tmpdir/out" &&
    [ "$n" = 2 ]
ok $? "W=4: ordinary memory on rank 0 warns once on each rank of its node only (2 warnings, got $n)"
case_ok "W=2, one node, HPCT_ALLREDUCE_ALGO=shm/p2p: in place = p2p bit for bit" \
    mpi 2 -- grads 1 shm/p2p
grep -q "averaging in place in a gradient buffer's shared window" "$tmpdir/out" &&
    grep -q "rank 0 averages ordinary memory while rank 1 of the same node averages a part of a gradient buffer: this node averages by copying" "$tmpdir/out"
ok $? "W=2, shm/p2p: gradient buffers averaged in place, the mixed node copies (both logged)"
case_ok "W=4, two virtual nodes of 2, HPCT_ALLREDUCE_ALGO=shm/p2p: in place = p2p bit for bit" \
    mpi 4 HPCT_RANKS_PER_NODE=2 -- grads 1 shm/p2p
case_ok "W=3, uneven virtual nodes (2+1): ordinary memory, = p2p" \
    mpi 3 HPCT_RANKS_PER_NODE=2 -- grads 0
case_ok "W=2, virtual nodes of 1: ordinary memory, = p2p" mpi 2 HPCT_RANKS_PER_NODE=1 -- grads 0
! grep -q "averaging in place" "$tmpdir/out"
ok $? "W=2, virtual nodes of 1: no rank logs an in-place average"
case_ok "W=2, HPCT_NODE_IN_PLACE=0 on rank 1 only: every average copies, = p2p" \
    timeout -s KILL 120 "$MPIRUN" --oversubscribe -np 2 \
    sh -c '[ "$OMPI_COMM_WORLD_RANK" = 1 ] && export HPCT_NODE_IN_PLACE=0; exec "$0" "$@"' "$PROG" grads 2
grep -q "gradient buffers averaged in place: no" "$tmpdir/out" && ! grep -q "averaging in place\|averages by copying" "$tmpdir/out"
ok $? "W=2, HPCT_NODE_IN_PLACE=0 on one rank: agreed off (logged), no in-place average, no mixed node"

# A set carved from one gradient buffer (hpct_params_average_grads), and a whole gradient
# buffer (hpct_allreduce_mean): across nodes, where the table sends its size point-to-point,
# it goes through the window in place when every rank's lies in gradient buffers, and
# point-to-point otherwise; the bits never change.
in_place_logs() { grep -c "averaging in place in a gradient buffer's shared window" "$tmpdir/out"; }
for c in "gradset:a gradient-buffer set" "gradbuf:a whole gradient buffer"; do
    mode=${c%%:*} what=${c#*:}
    case_ok "W=4 on 2x2, HPCT_ALLREDUCE_ALGO=p2p: $what = p2p bit for bit" \
        mpi 4 HPCT_RANKS_PER_NODE=2 -- $mode p2p
    n=$(in_place_logs)
    [ "$n" = 4 ]
    ok $? "W=4 on 2x2, p2p in the table: $what went through the window in place (4 ranks, got $n)"
    case_ok "W=4 on 2x2, p2p, $what, ordinary memory on rank 0: = p2p bit for bit" \
        mpi 4 HPCT_RANKS_PER_NODE=2 -- $mode p2p mixed
    n=$(in_place_logs)
    [ "$n" = 0 ]
    ok $? "W=4 on 2x2, $what, ordinary on one rank: every rank stays point-to-point (got $n in-place logs)"
done
case_ok "W=2, one node, p2p: = p2p bit for bit" mpi 2 -- gradset p2p
n=$(in_place_logs)
[ "$n" = 0 ]
ok $? "W=2, one node, p2p in the table: followed as it is (got $n in-place logs)"

stop_check "an in-place average"
done_testing
