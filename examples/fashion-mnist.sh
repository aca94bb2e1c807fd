#!/bin/sh
# The main job: Fashion-MNIST (Debian package dataset-fashion-mnist) converted to HDF5 shards,
# the 784-512-512-10 MLP trained data-parallel on 2 ranks (srun inside a Slurm allocation,
# mpirun outside), checkpoints written, the final test accuracy printed. HPCT_DEMO_CONFIG
# names another settings file: examples/fashion-mnist-cnn.conf trains a convolutional network.
# Usage: examples/fashion-mnist.sh [BUILD_DIR] [WORK_DIR]   (defaults: . and ./demo)
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-.}" && pwd)
work=${2:-demo}
data=${HPCT_FASHION_MNIST:-/usr/share/datasets/fashion-mnist}
ranks=${HPCT_DEMO_RANKS:-2}
conf=${HPCT_DEMO_CONFIG:-$src/examples/fashion-mnist.conf}
conf=$(cd "$(dirname "$conf")" && pwd)/$(basename "$conf") # absolute: the job runs in $work
hpctrain="$build/tools/hpctrain"
mkdir -p "$work" && cd "$work"

for split in train:train t10k:test; do
    name=${split%%:*} out=fashion-mnist/${split##*:}
    if [ ! -f "$out/manifest.txt" ]; then
        mkdir -p "$out"
        "$hpctrain" shard -n 4 --scale 0.00392156862745098 -o "$out" \
            "$data/$name-images-idx3-ubyte.gz" "$data/$name-labels-idx1-ubyte.gz"
    fi
done

rm -rf checkpoints # a fresh run; hpctrain resumes from here when a job is requeued
if [ -n "${SLURM_JOB_ID:-}" ]; then
    srun --mpi=pmix -n "$ranks" "$hpctrain" train --config "$conf"
else
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
    mpirun --oversubscribe -np "$ranks" "$hpctrain" train --config "$conf"
fi
