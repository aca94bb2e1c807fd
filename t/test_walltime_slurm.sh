#!/bin/sh
# test_walltime_slurm.sh: hpct_walltime_remaining learns a Slurm job's end time through
# libslurm inside a real job (a private munged, slurmctld and slurmd on loopback), falls
# back to HPCT_JOB_END_TIME, and reports "not found" outside a job. Daemons are stopped by
# their pid files when the test ends.
probe=${top_builddir:-.}/t/walltime_probe
grep -q '^#define HPCT_HAVE_SLURM 1' ${top_builddir:-.}/config.h 2>/dev/null ||
    { echo "1..0 # SKIP built without libslurm (configure --with-slurm, Debian libslurm-dev)"; exit 0; }
for p in munged slurmctld slurmd srun; do
    command -v $p >/dev/null 2>&1 || [ -x /usr/sbin/$p ] ||
        { echo "1..0 # SKIP $p is not installed (Debian slurm-wlm, munge)"; exit 0; }
done
[ "$(id -u)" = 0 ] || { echo "1..0 # SKIP needs root to run munged as munge and slurmd"; exit 0; }
[ -r /etc/munge/munge.key ] || { echo "1..0 # SKIP no /etc/munge/munge.key"; exit 0; }

S=$(mktemp -d /tmp/hpct-wt-slurm.XXXXXX)
cleanup() {
    for f in slurmd-w1.pid slurmctld.pid munged.pid; do
        [ -s "$S/$f" ] && kill "$(cat "$S/$f")" 2>/dev/null
    done
    sleep 1
    rm -rf "$S"
}
trap cleanup EXIT INT TERM
chmod 0755 "$S"
mkdir -p "$S/munge" "$S/state" "$S/spool" "$S/log"
chown munge: "$S/munge" && chmod 0755 "$S/munge"
host=$(hostname)
cat > "$S/slurm.conf" <<CONF
ClusterName=hpctwt
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=17927
SlurmdPort=17928
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$S/munge/munge.sock
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool/%n
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd-%n.pid
SlurmctldLogFile=$S/log/slurmctld.log
SlurmdLogFile=$S/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SlurmdParameters=config_overrides
MpiDefault=none
ReturnToService=2
SelectType=select/cons_tres
NodeName=w1 NodeHostname=$host NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=wt Nodes=w1 Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$S/slurm.conf"
runuser -u munge -- /usr/sbin/munged -S "$S/munge/munge.sock" --pid-file "$S/munge/munged.pid" \
    --seed-file "$S/munge/seed" 2>"$S/log/munged.err" || { echo "1..0 # SKIP munged does not start: $(cat "$S/log/munged.err")"; exit 0; }
cp "$S/munge/munged.pid" "$S/munged.pid"
slurmctld && slurmd -N w1 || { echo "1..0 # SKIP slurmctld/slurmd do not start"; exit 0; }
i=0
until sinfo -h -o %t 2>/dev/null | grep -q idle; do
    i=$((i + 1)); [ $i -gt 50 ] && { echo "1..0 # SKIP the test cluster did not come up in 10 s"; exit 0; }
    sleep 0.2
done

echo 1..3
out=$(timeout 60 srun -t 7 "$probe" 2>&1)
left=$(echo "$out" | sed -n 's/^remaining \([0-9-]*\)$/\1/p')
if [ -n "$left" ] && [ "$left" -gt 300 ] && [ "$left" -le 420 ]; then
    echo "ok 1 - inside a 7-minute job libslurm gives the end time: $left s left"
else
    echo "not ok 1 - inside a 7-minute job: '$out'"
fi
out=$(HPCT_JOB_END_TIME=$(( $(date +%s) + 1000 )) timeout 60 srun -t 7 "$probe" 2>&1)
left=$(echo "$out" | sed -n 's/^remaining \([0-9-]*\)$/\1/p')
if [ -n "$left" ] && [ "$left" -gt 900 ] && [ "$left" -le 1000 ]; then
    echo "ok 2 - HPCT_JOB_END_TIME overrides Slurm: $left s left"
else
    echo "not ok 2 - HPCT_JOB_END_TIME inside a job: '$out'"
fi
out=$(env -u SLURM_JOB_ID timeout 30 "$probe" 2>&1)
case $out in
none\ -8*) echo "ok 3 - outside a job: not found ($out)" ;;
*) echo "not ok 3 - outside a job: '$out'" ;;
esac
