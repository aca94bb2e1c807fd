#!/bin/sh
# A context used from a thread other than hpct_init's (lib/comm/runtime/collective.c): where
# hpct_init initialised MPI (it asks for MPI_THREAD_SERIALIZED) an average from a second thread is
# correct; where the program initialised MPI with MPI_THREAD_FUNNELED the same call is refused
# with HPCT_ERR_STATE naming the level, and the first thread goes on; W = 2 and 3, with and
# without virtual nodes.
. "${top_srcdir:-.}/t/lib/dist_lib.sh"
need_mpi
plan 4
case_ok "W=2: an average from a second thread (MPI initialised by hpct_init)" mpi 2 -- thread lib
case_ok "W=3, virtual nodes of 1: the same" mpi 3 HPCT_RANKS_PER_NODE=1 -- thread lib
case_ok "W=2, MPI_THREAD_FUNNELED: refused from a second thread, naming the level" \
    mpi 2 -- thread funneled
case_ok "W=3, virtual nodes of 1, MPI_THREAD_FUNNELED: the same" \
    mpi 3 HPCT_RANKS_PER_NODE=1 -- thread funneled
done_testing
