#!/bin/sh
# Mirrored replicas at W = 1..4: broadcast aligns differently seeded replicas, 100 steps
# with overlapped averaging stay bit-identical (checked every 10 steps and at the end),
# fused bucket averaging equals MPI_Allreduce / W, micro-batch accumulation equals one
# batch, a perturbed replica is named by the consistency check, B % W != 0 is an error.
. "${top_srcdir:-.}/t/lib/dist_lib.sh"
need_mpi
echo "1..4"
case_ok "W=1" mpi 1 -- replicas
case_ok "W=2, two virtual nodes" mpi 2 HPCT_RANKS_PER_NODE=1 -- replicas
case_ok "W=3, one node" mpi 3 -- replicas
case_ok "W=4, two virtual nodes of 2 (hierarchical)" mpi 4 HPCT_RANKS_PER_NODE=2 -- replicas
