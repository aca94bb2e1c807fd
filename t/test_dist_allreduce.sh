#!/bin/sh
# hpct_allreduce_mean at W = 1..4, flat and hierarchical (virtual nodes): sizes 0, 1, 2, 7,
# 1001, 65537 and 4 Mi + 3 floats (16 MiB + 12 B), exact means, bit-identical results on every rank,
# random data against MPI_Allreduce, bf16/fp16 transport, and a subset communicator.
. "${top_srcdir:-.}/t/lib/dist_lib.sh"
need_mpi
echo "1..6"
case_ok "W=1" mpi 1 -- allreduce
case_ok "W=2, one node" mpi 2 -- allreduce
case_ok "W=2, two virtual nodes of 1" mpi 2 HPCT_RANKS_PER_NODE=1 -- allreduce
case_ok "W=3, one node" mpi 3 -- allreduce
case_ok "W=3, unequal virtual nodes (2+1)" mpi 3 HPCT_RANKS_PER_NODE=2 -- allreduce
case_ok "W=4, two virtual nodes of 2 (hierarchical)" mpi 4 HPCT_RANKS_PER_NODE=2 -- allreduce
