#!/bin/sh
# Run t/test_data_mpi on 2 real MPI ranks (mpirun --oversubscribe), bounded to 120 s.
build=${top_builddir:-.}
if [ -z "${MPIRUN:-}" ]; then echo "1..0 # SKIP no mpirun found by configure"; exit 0; fi
exec timeout 120 $MPIRUN --oversubscribe -np 2 "$build/t/test_data_mpi"
