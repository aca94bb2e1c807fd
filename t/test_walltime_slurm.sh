#!/bin/sh
# test_walltime_slurm.sh: hpct_walltime_remaining learns a Slurm job's end time through
# libslurm inside a real job (the private loopback cluster of t/slurm/cluster.sh), falls
# back to HPCT_JOB_END_TIME, and reports "not found" outside a job.
. "${top_srcdir:-.}/t/lib/tap.sh"
probe=${top_builddir:-.}/t/lib/walltime_probe
grep -q '^#define HPCT_HAVE_SLURM 1' "${top_builddir:-.}/config.h" 2>/dev/null ||
    skip_all "built without libslurm (configure --with-slurm, Debian libslurm-dev)"
[ -x "$probe" ] || skip_all "t/lib/walltime_probe is not built (make check builds it)"
. "${top_srcdir:-.}/t/slurm/setup.sh"
unset HPCT_JOB_END_TIME

plan 4
cluster_start

# remaining OUT: the seconds from a "remaining N" line, or nothing.
remaining() { printf '%s\n' "$1" | sed -n 's/^remaining \([0-9-]*\)$/\1/p'; }

out=$(timeout 60 srun --mpi=none -N 1 -n 1 -t 7 "$probe" 2>&1)
left=$(remaining "$out")
[ -n "$left" ] && [ "$left" -gt 300 ] && [ "$left" -le 420 ]
ok $? "inside a 7-minute job libslurm gives the end time: ${left:-?} s left" || diag "$out"

out=$(HPCT_JOB_END_TIME=$(($(date +%s) + 1000)) timeout 60 srun --mpi=none -N 1 -n 1 -t 7 "$probe" 2>&1)
left=$(remaining "$out")
[ -n "$left" ] && [ "$left" -gt 900 ] && [ "$left" -le 1000 ]
ok $? "HPCT_JOB_END_TIME overrides Slurm: ${left:-?} s left" || diag "$out"

out=$(env -u SLURM_JOB_ID timeout 30 "$probe" 2>&1)
case $out in
none\ -8*) r=0 ;;
*) r=1 ;;
esac
ok $r "outside a job: not found ($out)"
done_testing
