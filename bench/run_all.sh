#!/bin/sh
# run_all.sh: every CPU benchmark in one go, each side by side with its baseline.
#   sh bench/run_all.sh [BUILDDIR] [SCRATCH]    (defaults: . and /tmp)
# Needs python3-torch for the PyTorch DDP baseline; run on an otherwise idle machine.
set -u
build=$(cd "${1:-.}" && pwd)
scratch=${2:-/tmp}
here=$(cd "$(dirname "$0")" && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
section() { printf '\n==== %s\n$ %s\n' "$1" "$2"; }

section "step vs GEMMs (issue 2)" "bench/bench_step"
"$build/bench/bench_step"

section "reader vs raw read(2) (issue 3)" "bench/bench_reader $scratch"
"$build/bench/bench_reader" "$scratch"
section "sample stores at W=4 on 2 virtual nodes vs raw read(2) (issue 12)" \
    "HPCT_RANKS_PER_NODE=2 mpirun -np 4 bench/bench_reader --store $scratch 0.5 5"
HPCT_RANKS_PER_NODE=2 mpirun --oversubscribe -x HPCT_RANKS_PER_NODE -np 4 "$build/bench/bench_reader" --store "$scratch" 0.5 5

section "allreduce vs MPI_Allreduce, W=2 (issues 4, 10)" "mpirun -np 2 bench/bench_allreduce 256"
mpirun --oversubscribe -np 2 "$build/bench/bench_allreduce" 256
section "allreduce vs MPI_Allreduce, W=4 on 2 virtual nodes (issues 4, 10)" \
    "HPCT_RANKS_PER_NODE=2 mpirun -np 4 bench/bench_allreduce 256"
HPCT_RANKS_PER_NODE=2 mpirun --oversubscribe -x HPCT_RANKS_PER_NODE -np 4 "$build/bench/bench_allreduce" 256
section "allreduce vs MPI_Allreduce, W=2 on 2 virtual nodes over TCP; fusion of 1,000 small tensors (issue 10)" \
    "HPCT_RANKS_PER_NODE=1 mpirun --mca btl self,tcp -np 2 bench/bench_allreduce 256"
HPCT_RANKS_PER_NODE=1 mpirun --oversubscribe --mca btl self,tcp -x HPCT_RANKS_PER_NODE -np 2 "$build/bench/bench_allreduce" 256
section "allreduce vs MPI_Allreduce, W=2 on 2 virtual nodes, shared memory without single-copy (issue 10)" \
    "HPCT_RANKS_PER_NODE=1 mpirun --mca btl_vader_single_copy_mechanism none -np 2 bench/bench_allreduce 256"
HPCT_RANKS_PER_NODE=1 mpirun --oversubscribe --mca btl_vader_single_copy_mechanism none -x HPCT_RANKS_PER_NODE -np 2 "$build/bench/bench_allreduce" 256

section "Fashion-MNIST training vs PyTorch DDP (issue 4)" "sh bench/run_train_bench.sh"
sh "$here/run_train_bench.sh" "$build"

section "in-situ step vs the plain C calls, one process (issue 9)" "bench/bench_insitu"
"$build/bench/bench_insitu"
section "in-situ step vs the plain C calls, W=2 (issue 9)" "mpirun -np 2 bench/bench_insitu mpi"
mpirun --oversubscribe -np 2 "$build/bench/bench_insitu" mpi

section "checkpoints vs raw write+fsync (issue 5)" "bench/bench_ckpt $scratch"
"$build/bench/bench_ckpt" "$scratch"

section "checkpoint share of the Fashion-MNIST main job (issue 5)" "examples/fashion-mnist.sh"
"$here/../examples/fashion-mnist.sh" "$build" "$scratch/hpct-bench-demo" | grep -E "^hpctrain"

section "metrics and timeline vs neither, W=2 (issue 11)" "mpirun -np 2 bench/bench_obs $scratch"
mpirun --oversubscribe -np 2 "$build/bench/bench_obs" "$scratch"
section "metrics and timeline in microseconds per step, tiny model, W=2 (issue 11)" \
    "mpirun -np 2 bench/bench_obs $scratch 15 20000 off,metrics,timeline tiny"
mpirun --oversubscribe -np 2 "$build/bench/bench_obs" "$scratch" 15 20000 off,metrics,timeline tiny

section "Fortran wrappers vs C, a small step (issue 9)" "bench/bench_fortran"
if [ -x "$build/bench/bench_fortran" ]; then
    "$build/bench/bench_fortran"
else
    echo "not built (configure found no MPI Fortran compiler with mpi_f08)"
fi
