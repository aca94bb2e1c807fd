#!/bin/sh
# Mirrored replicas at W = 1..4: broadcast aligns differently seeded replicas, 100 steps
# with overlapped averaging stay bit-identical (checked every 10 steps and at the end),
# fused bucket averaging equals MPI_Allreduce / W, micro-batch accumulation equals one
# batch, a perturbed replica is named by the consistency check, B % W != 0 is an error.
# The fusion slots and the overlapped layers take the algorithm of their size class
# (HPCT_ALLREDUCE_ALGO): through the node window (shm) they give the point-to-point path's
# bits (the same parameter and fused-gradient hashes); forced mpi and a table mixing all
# three keep the replicas identical.
. "${top_srcdir:-.}/t/lib/dist_lib.sh"
need_mpi
echo "1..14"
case_ok "W=1" mpi 1 -- replicas
case_ok "W=2, two virtual nodes" mpi 2 HPCT_RANKS_PER_NODE=1 -- replicas
case_ok "W=3, one node" mpi 3 -- replicas
case_ok "W=4, two virtual nodes of 2 (hierarchical)" mpi 4 HPCT_RANKS_PER_NODE=2 -- replicas

# hashes: the parameter hash after 100 steps and the fused gradients' hash of the last case.
hashes() {
    sed -n 's/.*(hash \([0-9a-f]*\)).*/\1/p; s/.*(gradient hash \([0-9a-f]*\)).*/\1/p' "$tmpdir/out" | tr '\n' ' '
}
for c in "3:one node" "4 HPCT_RANKS_PER_NODE=2:two virtual nodes of 2"; do
    args=${c%%:*} what=${c#*:}
    np=${args%% *}
    envs=
    [ "$args" != "$np" ] && envs=${args#* }
    case_ok "W=$np, $what, p2p everywhere" mpi $np $envs HPCT_ALLREDUCE_ALGO=p2p -- replicas
    p2p=$(hashes)
    case_ok "W=$np, $what, window (shm) for fusion slots and layers" \
        mpi $np $envs HPCT_ALLREDUCE_ALGO=shm -- replicas
    shm=$(hashes)
    echo "# p2p: $p2p; shm: $shm"
    [ -n "$p2p" ] && [ "$p2p" = "$shm" ]
    ok $? "W=$np, $what: the window gives the p2p path's parameters and fused gradients bit for bit"
    case_ok "W=$np, $what, mpi for every size" mpi $np $envs HPCT_ALLREDUCE_ALGO=mpi -- replicas
    case_ok "W=$np, $what, a table mixing allgather, mpi, shm and p2p by layer size" \
        mpi $np $envs HPCT_ALLREDUCE_ALGO=0:allgather,1K:mpi,2K:shm,4K:p2p -- replicas
done
