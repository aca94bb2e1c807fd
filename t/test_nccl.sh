#!/bin/sh
# test_nccl.sh: the GPU hierarchical allreduce on 2 MPI ranks (t/test_nccl prints the TAP).
builddir=${top_builddir:-.}
if ! grep -q '^#define HPCT_HAVE_NCCL 1' "$builddir/config.h"; then
    echo "1..0 # SKIP built without --with-nccl"
    exit 0
fi
if [ -z "$MPIRUN" ]; then
    echo "1..0 # SKIP no mpirun found by configure"
    exit 0
fi
exec timeout 120 $MPIRUN --oversubscribe -np 2 "$builddir/t/test_nccl"
