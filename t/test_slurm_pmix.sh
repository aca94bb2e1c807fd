#!/bin/sh
# test_slurm_pmix.sh: on a private two-node Slurm cluster (two slurmd on loopback),
# "srun -N 2 -n 4 --mpi=pmix" starts 4 ranks whose PMIx data place 2 on each node:
# node ids {0, 1}, local ranks {0, 1} per node, local size 2. This is the topology the
# library's bootstrap reads to build its node and cross-node communicators.
. "${top_srcdir:-.}/t/lib/tap.sh"
probe="${top_builddir:-.}/t/lib/pmix_probe"
[ -x "$probe" ] || skip_all "t/lib/pmix_probe is not built (make check builds it)"
. "${top_srcdir:-.}/t/slurm/setup.sh"

plan 7
cluster_start
need_pmix

timeout 60 srun -N 2 -n 4 --ntasks-per-node=2 --mpi=pmix -t 1 "$probe" >"$work/out" 2>"$work/err"
rc=$?
ok $rc "srun -N 2 -n 4 --mpi=pmix t/lib/pmix_probe exits 0" || { diag "exit status $rc"; sed 's/^/# /' "$work/err"; }
diag "$(sort "$work/out")"

# field NAME: the values of NAME=... from every line, one a line, in rank order.
field() { sort -t= -k2n "$work/out" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
is "$(field rank | tr '\n' ' ')" "0 1 2 3 " "four ranks, 0 to 3, each printed once"
is "$(field nodeid | sort | uniq -c | awk '{ printf "%s:%s ", $2, $1 }')" "0:2 1:2 " \
    "PMIX_NODEID is 0 for two ranks and 1 for two ranks"
# Per node: the sorted local ranks ("node:0,1").
per_node=$(awk '{ split($2, n, "="); split($3, l, "="); print n[2], l[2] }' "$work/out" | sort |
    awk '{ s[$1] = s[$1] (s[$1] == "" ? "" : ",") $2 } END { for (k in s) print k ":" s[k] }' | sort |
    tr '\n' ' ')
is "$per_node" "0:0,1 1:0,1 " "PMIX_LOCAL_RANK is 0 and 1 on each node"
is "$(field local_size | sort -u | tr '\n' ' ')" "2 " "PMIX_LOCAL_SIZE is 2 everywhere"
# Block distribution: ranks 0,1 on the first node, 2,3 on the second.
is "$(sort -t= -k2n "$work/out" | awk '{ split($2, n, "="); printf "%s", n[2] }')" "0011" \
    "ranks are placed in blocks (0,1 on node 0; 2,3 on node 1)"
done_testing
