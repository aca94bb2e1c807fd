#!/bin/sh
# platform.sh KIND NODES RPN OUT.xml: write a SimGrid platform of NODES hosts of RPN cores.
#   KIND fat100 | fat200 | fat400: a two-level fat tree with full bisection (16 hosts per leaf
#        switch, 16 up-links from each leaf), each host on a 100, 200 or 400 Gb/s link;
#   KIND dragonfly: groups of 4 chassis x 4 routers x 4 hosts (64 hosts a group), 200 Gb/s
#        host and router links, 2 links between groups, 1 inside a chassis (groups as needed);
#   KIND local: this machine (validation): one host, RPN cores (figures in platforms.md).
# The figures and their sources are in bench/sim/platforms.md.
kind=$1 nodes=$2 rpn=$3 out=$4
speed=1Gf          # = smpi/host-speed in run.sh: measured compute is injected 1:1
lat=0.5us          # per link: switch hop + cable (platforms.md)
loop_bw=20GBps     # ranks of one host: shared-memory copy bandwidth
loop_lat=0.3us
case $kind in
fat100) bw=12.5GBps ;;
fat200) bw=25GBps ;;
fat400) bw=50GBps ;;
dragonfly) bw=25GBps ;;
local) bw=8GBps loop_bw=8GBps loop_lat=0.4us ;;
*) echo "platform.sh: unknown kind $kind" >&2; exit 2 ;;
esac
case $kind in
fat*)
    if [ "$nodes" -le 16 ]; then topo="FAT_TREE" params="1;$nodes;1;1"
    else
        leaves=$(( (nodes + 15) / 16 )) nodes=$(( leaves * 16 ))
        topo="FAT_TREE" params="2;16,$leaves;1,16;1,1"
    fi ;;
dragonfly)
    groups=$(( (nodes + 63) / 64 )) nodes=$(( groups * 64 ))
    topo="DRAGONFLY" params="$groups,2;4,1;4,1;4" ;;
local) topo="FLAT" params="" ;;
esac
{
    echo '<?xml version="1.0"?>'
    echo '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">'
    echo '<platform version="4.1">'
    echo "  <cluster id=\"c\" prefix=\"n\" suffix=\"\" radical=\"0-$((nodes - 1))\" speed=\"$speed\"" \
        "core=\"$rpn\" bw=\"$bw\" lat=\"$lat\" loopback_bw=\"$loop_bw\" loopback_lat=\"$loop_lat\"" \
        "sharing_policy=\"SPLITDUPLEX\"" \
        "$( [ -n "$params" ] && echo "topology=\"$topo\" topo_parameters=\"$params\"")/>"
    echo '</platform>'
} >"$out"
