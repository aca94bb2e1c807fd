#!/bin/sh
# The node-local phase through an MPI-3 shared-memory window (HPCT_NODE_REDUCE=shm|auto)
# against the point-to-point path (HPCT_NODE_REDUCE=p2p): sizes 0, 1, 7, 12289, 65537, 4 Mi
# + 3 floats (and chunked through 64 Ki-float window halves; mixed with p2p averages above
# HPCT_NODE_SHM_MAX_BYTES; 12289 floats on 2x2 and 3x3 virtual nodes: blocks whose
# cross-node step is one whole round), bit-identical to the p2p sums and on
# every rank, at W = 1..4 with and without virtual nodes; uneven nodes fall back to p2p
# (logged); a rank that stops inside the window exchange is named in HPCT_ERR_TIMEOUT.
. "${top_srcdir:-.}/t/lib/dist_lib.sh"
need_mpi
plan 24
# Every size through the window where it is set up (HPCT_ALLREDUCE_ALGO=shm), not what the
# timed probe in hpct_init would pick: these cases test the window path itself.
HPCT_ALLREDUCE_ALGO=shm
export HPCT_ALLREDUCE_ALGO
stop_start HPCT_NODE_REDUCE=shm nodewin_hang # checked last (stop_check)

# path WANT: the library logged the node reduction WANT ("shm" or the p2p reason) in the
# last case's output.
path() {
    case $1 in
    shm) grep -q 'node reduction: MPI-3 shared-memory window' "$tmpdir/out" ;;
    *) grep -q "node reduction: point-to-point ($1)" "$tmpdir/out" &&
        ! grep -q 'node reduction: MPI-3' "$tmpdir/out" ;;
    esac
}

case_ok "W=1: shm requested" mpi 1 HPCT_NODE_REDUCE=shm -- nodewin
path "one rank per node"; ok $? "W=1: logged: point-to-point (one rank per node)"
case_ok "W=2, one node: shm = p2p bit for bit" mpi 2 HPCT_NODE_REDUCE=shm -- nodewin
path shm; ok $? "W=2: the shared window was used (logged)"
grep -q 'one barrier up to 4096,' "$tmpdir/out"
ok $? "W=2, one node: one barrier up to 16 KiB per rank by default (4096 floats, logged)"
case_ok "W=3, one node: shm = p2p bit for bit" mpi 3 HPCT_NODE_REDUCE=shm -- nodewin
path shm; ok $? "W=3: the shared window was used (logged)"
case_ok "W=4, one node, auto: = p2p bit for bit" mpi 4 -- nodewin
path shm; ok $? "W=4, auto: the shared window was used (logged)"
case_ok "W=4, two virtual nodes of 2 (hierarchical): shm = p2p bit for bit" \
    mpi 4 HPCT_RANKS_PER_NODE=2 HPCT_NODE_REDUCE=shm -- nodewin
path shm; ok $? "W=4, 2x2: the shared window was used (logged)"
grep -q 'one barrier up to 8192,' "$tmpdir/out"
ok $? "W=4, 2x2: one barrier up to 32 KiB per rank by default with several nodes (logged)"
case_ok "W=4, 2x2, every chunk small (one barrier, whole-vector cross step), 64 KiB chunks" \
    mpi 4 HPCT_RANKS_PER_NODE=2 HPCT_NODE_SMALL_BYTES=1048576 HPCT_NODE_CHUNK_BYTES=262144 -- nodewin
path shm; ok $? "W=4, 2x2, small chunks: the shared window was used (logged)"
case_ok "W=9, 3x3, HPCT_NODE_SMALL_BYTES=40000: whole cross-node step of three nodes = p2p bit for bit" \
    mpi 9 HPCT_RANKS_PER_NODE=3 HPCT_NODE_SMALL_BYTES=40000 -- nodewin
case_ok "W=3, one node, HPCT_NODE_SHM_MAX_BYTES=262144: window and p2p averages mixed" \
    mpi 3 HPCT_NODE_SHM_MAX_BYTES=262144 -- nodewin
grep -q 'point-to-point above 262144 bytes' "$tmpdir/out"
ok $? "W=3: logged: point-to-point above 262144 bytes"
case_ok "W=4, 2x2, HPCT_NODE_SHM_MAX_BYTES=262144: window and p2p averages mixed" \
    mpi 4 HPCT_RANKS_PER_NODE=2 HPCT_NODE_SHM_MAX_BYTES=262144 -- nodewin
case_ok "W=3, uneven virtual nodes (2+1): falls back" \
    mpi 3 HPCT_RANKS_PER_NODE=2 HPCT_NODE_REDUCE=shm -- nodewin
path "nodes hold different numbers of ranks"; ok $? "W=3, 2+1: logged: point-to-point (uneven)"
case_ok "W=2, virtual nodes of 1: falls back" \
    mpi 2 HPCT_RANKS_PER_NODE=1 HPCT_NODE_REDUCE=shm -- nodewin
path "one rank per node"; ok $? "W=2, 1+1: logged: point-to-point (one rank per node)"

stop_check "the window exchange"
done_testing
