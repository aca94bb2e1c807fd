#!/bin/sh
# The reader's modes under real MPI jobs at W = 1..4, one node and two virtual nodes
# (t/lib/store_prog): every rank's slice is the contract's, bit for bit, across an epoch and
# after a cursor restore; the job store reads each byte once, holds ~N/W per rank, and a
# corrupt shard, or a shard missing on one rank only, fails its open on every rank, naming
# the file; a shard that differs on one rank only (job store; node store, two virtual nodes)
# fails on every rank naming the file and the rank.
. "${top_srcdir:-.}/t/lib/dist_lib.sh"
PROG="$top_builddir/t/lib/store_prog"
need_mpi
echo "1..31"
n=0
run() { # DESC NP ENV... -- MODE
    desc=$1; np=$2; shift 2
    n=$((n + 1))
    d="$tmpdir/set$n"
    mkdir -p "$d"
    envs=
    while [ "$1" != "--" ]; do envs="$envs $1"; shift; done
    shift
    case_ok "$desc" mpi "$np" $envs -- "$d" "$@"
}
for w in 1 2 3 4; do
    run "W=$w: streaming" $w -- stream
    run "W=$w: resident" $w -- resident
    run "W=$w: job store" $w -- job
    run "W=$w: node store" $w -- node
done
run "W=2: node store, two virtual nodes of 1 (gathered across nodes)" 2 HPCT_RANKS_PER_NODE=1 -- node
run "W=4: node store, two virtual nodes of 2" 4 HPCT_RANKS_PER_NODE=2 -- node
run "W=3: node store asked, unequal virtual nodes (2+1): job store instead" 3 HPCT_RANKS_PER_NODE=2 -- node
run "W=2: job store, two virtual nodes of 1" 2 HPCT_RANKS_PER_NODE=1 -- job
run "W=3: job store, unequal virtual nodes (2+1)" 3 HPCT_RANKS_PER_NODE=2 -- job
run "W=4: job store, two virtual nodes of 2, chosen by HPCT_DATA_STORE=job" 4 HPCT_RANKS_PER_NODE=2 HPCT_DATA_STORE=job -- env-job
run "W=4: streaming, two virtual nodes of 2" 4 HPCT_RANKS_PER_NODE=2 -- stream
run "W=4: each rank's resident set grows by about N/W at a job-store open, N when resident" 4 -- memory
run "W=3: job store, ranks at different cursors: the exchange fails on every rank, naming the batches" 3 -- mismatch
run "W=3: a corrupt shard fails the job store open on every rank, naming it" 3 -- corrupt
run "W=4: a corrupt shard fails the node store open on every rank (two virtual nodes), naming it" 4 HPCT_RANKS_PER_NODE=2 -- corrupt-node
run "W=2: streaming, a shard missing on one rank only fails the open on every rank, naming it" 2 -- missing-stream
run "W=2: job store, a shard missing on one rank only fails the open on every rank, naming it" 2 -- missing-job
run "W=3: job store, s3.h5 different on the last rank only fails on every rank, naming it and the rank" 3 -- differ-job
run "W=4: node store (two virtual nodes of 2), s3.h5 different on the last rank only fails on every rank, naming it and the rank" 4 HPCT_RANKS_PER_NODE=2 -- differ-node
