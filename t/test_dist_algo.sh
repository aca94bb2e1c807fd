#!/bin/sh
# The algorithm per size class (lib/comm/avg/algo.c): HPCT_ALLREDUCE_ALGO forcing mpi, shm, p2p
# and allgather, a table mixing them, and the timed probe (variable unset), at W = 1..4 with and
# without virtual nodes and with uneven nodes: every average within fp32 rounding of the
# fp64 mean and bit-identical on every rank; forced shm, p2p and allgather give the point-to-point
# path's bits, forced mpi the bits of MPI_Iallreduce / W; the probe's table is logged at
# info level; malformed values fail hpct_init on every rank with the variable named; from
# W = 3 the probe neither times nor picks mpi (its bits differ from the rank-order paths');
# shm/p2p sends ordinary memory point-to-point on one node (logged), is shm across nodes;
# ranks summing with different instruction sets (HPCT_VECTOR_ISA) give the same bits, and
# an unknown set on one rank fails hpct_init on every rank, named in its log.
. "${top_srcdir:-.}/t/lib/dist_lib.sh"
need_mpi
plan 36
# The CPUs the ranks see (unbound under --oversubscribe when they outnumber them).
cpus=$(nproc 2>/dev/null || echo 0)
online=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 0)

# logged: the probe's or the table's decision, and the malformed values named.
logged() {
    grep -q "allreduce algorithm per size: HPCT_ALLREDUCE_ALGO=0:[a-z0-9]*.*(timed probe, the slowest rank.s times: 4K:" "$tmpdir/out" &&
        grep -q "allreduce algorithm per size: HPCT_ALLREDUCE_ALGO=0:allgather,1K:mpi,64K:shm,1M:p2p (from HPCT_ALLREDUCE_ALGO)" "$tmpdir/out" &&
        grep -q "hpct_init: HPCT_ALLREDUCE_ALGO is '0:mpi,4X:shm': entry 2 ('4X:shm') is not BYTES\[K|M|G\]:p2p|shm|mpi" "$tmpdir/out" &&
        grep -q "hpct_init: HPCT_ALLREDUCE_ALGO is '16K:mpi': entry 1 ('16K:mpi') must start at 0" "$tmpdir/out" &&
        grep -q "hpct_init: HPCT_VECTOR_ISA is 'sse9': use auto, avx512f, avx2 or baseline\|hpct_init: HPCT_VECTOR_ISA is 'sse9': use auto or baseline" "$tmpdir/out"
}

case_ok "W=1" mpi 1 -- algo
grep -q "allreduce algorithm: shm (one rank)\|allreduce algorithm: p2p (one rank)" "$tmpdir/out"
ok $? "W=1: logged: one rank"
for c in "2:one node" "2 HPCT_RANKS_PER_NODE=1:two virtual nodes of 1" "3:one node" \
    "3 HPCT_RANKS_PER_NODE=2:uneven virtual nodes (2+1)" "4:one node" \
    "4 HPCT_RANKS_PER_NODE=2:two virtual nodes of 2 (hierarchical)"; do
    args=${c%%:*} what=${c#*:}
    np=${args%% *}
    envs=
    [ "$args" != "$np" ] && envs=${args#* }
    case_ok "W=$np, $what: every algorithm correct" mpi $np $envs -- algo
    logged; ok $? "W=$np, $what: probe and table logged, malformed values named"
    if [ "$np" -ge 3 ]; then
        probed=$(sed -n 's/.*HPCT_ALLREDUCE_ALGO=\([^ ]*\) (timed probe, the slowest rank.s times: \(.*\)/\1 \2/p' "$tmpdir/out" | head -n 1)
        case $probed in
        "") ok 1 "W=$np, $what: the probe's line is logged" ;;
        *mpi*) ok 1 "W=$np, $what: the probe left mpi out: $probed" ;;
        *) ok 0 "W=$np, $what: the probe left mpi out (W >= 3)" ;;
        esac
    fi
    # lib/comm/runtime/collective.c: the waits rule is logged exactly where the ranks outnumber
    # the CPUs
    if [ "$cpus" = "$online" ] && [ "$np" -gt "$cpus" ]; then
        grep -q "waits: $np ranks share this host's $cpus CPUs: averages of more than 32 KiB yield" "$tmpdir/out"
    else
        ! grep -q "waits:" "$tmpdir/out"
    fi
    ok $? "W=$np, $what: the waits rule is logged if and only if $np ranks outnumber $cpus CPUs"
    told=$(grep -c "every local rank averages ordinary memory: point-to-point" "$tmpdir/out")
    case $what in
    one\ node) [ "$told" -ge "$np" ]
        ok $? "W=$np, $what: shm/p2p sends ordinary memory point-to-point (logged by $told ranks)" ;;
    *) [ "$told" = 0 ]
        ok $? "W=$np, $what: shm/p2p is shm across nodes (no rank logs point-to-point)" ;;
    esac
    case $what in
    uneven* | *two\ virtual\ nodes\ of\ 1*)
        grep -q "names shm, but the node reduction is point-to-point" "$tmpdir/out" &&
            grep -q "names shm/p2p, but the node reduction is point-to-point" "$tmpdir/out"
        ok $? "W=$np, $what: shm and shm/p2p fall back to p2p (logged, named)" ;;
    *) grep -q "but the node reduction is point-to-point" "$tmpdir/out"; [ $? -ne 0 ]
        ok $? "W=$np, $what: shm not refused" ;;
    esac
done
done_testing
