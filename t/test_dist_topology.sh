#!/bin/sh
# Bootstrap and topology: the source used (pmix under mpirun, single for ./prog, the
# Open MPI and Slurm variable fallbacks, the HPCT_RANKS_PER_NODE override) and the sizes
# of the node and cross-node communicators.
. "${top_srcdir:-.}/t/lib/dist_lib.sh"
need_mpi
echo "1..9"
case_ok "plain ./prog: single process" timeout -s KILL 60 "$PROG" topo single 1 1 1 0
case_ok "Slurm variables without a launcher: slurm-env, node from SLURM_NODEID" \
    timeout -s KILL 60 env SLURM_NODEID=3 SLURM_PROCID=0 SLURM_NTASKS=1 SLURM_LOCALID=0 SLURM_JOB_ID=4242 "$PROG" topo slurm-env 1 1 1 0
grep -q "bootstrap: source slurm-env.*job 4242" "$tmpdir/out"
ok $? "the source and the Slurm job id are logged at info level"
case_ok "Open MPI variables without PMIx: openmpi-env, nodes from MPI shared memory" \
    timeout -s KILL 60 env OMPI_COMM_WORLD_LOCAL_RANK=0 OMPI_COMM_WORLD_LOCAL_SIZE=1 "$PROG" topo openmpi-env 1 1 1 0
case_ok "mpirun -np 2: PMIx node ids, one node of 2" mpi 2 -- topo pmix 1 2 1 0
case_ok "mpirun -np 4, 2 ranks per virtual node: node comm 2, cross comm 2, hierarchical" mpi 4 HPCT_RANKS_PER_NODE=2 -- topo override 2 2 2 1
case_ok "mpirun -np 2, 1 rank per virtual node: 2 nodes, cross comm 2, flat" mpi 2 HPCT_RANKS_PER_NODE=1 -- topo override 2 1 2 0
case_ok "mpirun -np 3, 2 ranks per virtual node: unequal nodes fall back to flat" mpi 3 HPCT_RANKS_PER_NODE=2 -- topo override 2 -1 -1 0
case_ok "mpirun -np 4, 3 ranks per virtual node: unequal nodes (3+1), flat" mpi 4 HPCT_RANKS_PER_NODE=3 -- topo override 2 -1 -1 0
