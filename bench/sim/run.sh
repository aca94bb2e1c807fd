#!/bin/sh
# run.sh W RPN KIND [sim_step arguments...]: one simulated run of build/sim_step on W ranks,
# RPN to a node, on platform KIND (platform.sh), e.g.
#   bench/sim/run.sh 1024 8 fat200 avg 16777216 5
#   HPCT_ALLREDUCE_ALGO=0:mpi SMPI_ALLREDUCE=rab bench/sim/run.sh 4096 64 fat400 avg 1048576 5
# The environment reaches every simulated rank (one process): HPCT_* settings apply to all.
# SMPI's collectives follow Open MPI's selection (smpi/coll-selector:ompi): SMPI's "default"
# ones post a receive from every rank and wait for all, and each completion walks the rank's
# mailbox (a W = 256 run went past 14 minutes; 133 s with this selector). SMPI_ALLREDUCE
# picks the MPI_Allreduce algorithm (default: ompi); HPCT_RANKS_PER_NODE tells the library the
# nodes (no PMIx here). Two settings keep SimGrid 3.32's own costs from growing as W^2
# (bench/sim/platforms.md): MPI_Bcast is binomial (SMPI_BCAST), since the ompi selector's
# "knomial" for small messages runs an allgather ring over the communicator the first time
# each communicator is used; and no send is detached (SMPI_DETACHED, bytes), since each
# detached send's completion walks a list of every detached send in flight in the job.
set -e
here=$(cd "$(dirname "$0")" && pwd)
W=$1 rpn=$2 kind=$3
shift 3
tmp=${TMPDIR:-/tmp}/hpct-sim.$$
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
nodes=$(( (W + rpn - 1) / rpn ))
sh "$here/platform.sh" "$kind" "$nodes" "$rpn" "$tmp/platform.xml"
i=0
while [ $i -lt "$nodes" ]; do
    echo "n$i:$rpn"
    i=$((i + 1))
done >"$tmp/hostfile"
export HPCT_RANKS_PER_NODE=$rpn OPENBLAS_NUM_THREADS=1
cd "$tmp" # smpirun leaves its unrolled hostfile in the current folder when a run fails
smpirun ${SMPI_WRAPPER:+-wrapper "$SMPI_WRAPPER"} -np "$W" -platform "$tmp/platform.xml" \
    -hostfile "$tmp/hostfile" \
    --cfg=smpi/host-speed:1Gf --cfg=smpi/privatization:no \
    --cfg=smpi/simulate-computation:no --cfg=smpi/test:1e-7 --cfg=smpi/iprobe:1e-7 \
    --cfg=smpi/grow-injected-times:no --cfg=smpi/wtime:0 --log=smpi_mpi.thresh:error \
    --log=xbt_cfg.thresh:warning \
    --cfg=smpi/coll-selector:ompi --cfg=smpi/allreduce:"${SMPI_ALLREDUCE:-ompi}" \
    --cfg=smpi/bcast:"${SMPI_BCAST:-binomial_tree}" \
    --cfg=smpi/send-is-detached-thresh:"${SMPI_DETACHED:-0}" \
    --cfg=smpi/display-timing:yes ${SMPI_FLAGS:-} \
    "$here/build/sim_step" "$@"
