#!/bin/sh
# Cross-node phases in rounds of pairwise exchanges (recursive halving and doubling,
# lib/comm/avg/reduce.c), forced from 2 ranks by the test hook HPCT_TEST_TREE_MIN (16 by
# default; 16 for whole-vector steps): powers of two and not (extra ranks folded in and out), flat across virtual
# nodes and hierarchical, through every algorithm, the node window's whole-vector cross
# step and overlapped training: exact means, within fp32 rounding of the fp64 mean,
# bit-identical on every rank, and shm, p2p and allgather bit for bit the same; the choice
# is logged, and below the threshold the exchange stays direct.
. "${top_srcdir:-.}/t/lib/dist_lib.sh"
need_mpi
plan 16
T="HPCT_TEST_TREE_MIN=2"

# logged WHAT N: hpct_init named the cross-node exchange WHAT over N ranks.
logged() {
    case $1 in
    rounds) grep -q "cross-node exchange over $2 ranks: rounds (halving, doubling), whole-vector steps in rounds (rounds of pairwise exchanges from 2 and 2 ranks)" "$tmpdir/out" ;;
    direct) grep -q "cross-node exchange over $2 ranks: direct, whole-vector steps direct (rounds of pairwise exchanges from 128 and 16 ranks)" "$tmpdir/out" ;;
    esac
}

case_ok "W=3, uneven virtual nodes (2+1): flat rounds, one rank folded" \
    mpi 3 HPCT_RANKS_PER_NODE=2 $T -- allreduce
case_ok "W=4, virtual nodes of 1: flat rounds over a power of two" \
    mpi 4 HPCT_RANKS_PER_NODE=1 $T -- allreduce
case_ok "W=6, 3 virtual nodes of 2: hierarchical, three nodes in rounds" \
    mpi 6 HPCT_RANKS_PER_NODE=2 $T -- allreduce
for c in "3 2:uneven virtual nodes (2+1):3" "5 1:virtual nodes of 1:5" \
    "6 2:3 virtual nodes of 2 (hierarchical):3" "4 2:2x2 (hierarchical):2"; do
    np=${c%% *} rpn=${c#* } rpn=${rpn%%:*} what=${c#*:} what=${what%:*} span=${c##*:}
    case_ok "W=$np, $what: every algorithm, shm = p2p = allgather bit for bit" \
        mpi $np HPCT_RANKS_PER_NODE=$rpn $T -- algo
    logged rounds $span; ok $? "W=$np, $what: rounds over $span ranks logged"
done
case_ok "W=9, 3x3, HPCT_NODE_SMALL_BYTES=40000: whole cross-node step in rounds = p2p" \
    mpi 9 HPCT_RANKS_PER_NODE=3 HPCT_NODE_SMALL_BYTES=40000 HPCT_ALLREDUCE_ALGO=shm $T -- nodewin
case_ok "W=6, 3x2: window average with its cross-node block in rounds = p2p" \
    mpi 6 HPCT_RANKS_PER_NODE=2 HPCT_ALLREDUCE_ALGO=shm $T -- nodewin
case_ok "W=5, virtual nodes of 1: overlapped training, replicas bit-identical" \
    mpi 5 HPCT_RANKS_PER_NODE=1 $T -- replicas
case_ok "W=4, virtual nodes of 1, without the hook: every algorithm" \
    mpi 4 HPCT_RANKS_PER_NODE=1 -- algo
logged direct 4; ok $? "W=4, 4x1, default: below 16 ranks the exchanges stay direct (logged)"
