#!/bin/sh
# A rank slowed on purpose is named while the job runs: with the test-only hook
# HPCT_TEST_SLOW_RANK=1,15 rank 1 of 2 sleeps 15 ms in every step of hpct_train. Rank 0 must
# log "straggler: rank 1 on host H ..." (HPCT_LOG_LEVEL=2) and write a straggler record naming
# rank 1 and its host; the step records name rank 1 as the slowest. The per-rank step times
# come from the gather in the step-boundary agreement (doc/metrics.md).
. "${top_srcdir:-.}/t/lib/train_lib.sh"
need_tool
need_mpi
command -v python3 >/dev/null 2>&1 || { echo "1..0 # SKIP no python3 (the test reads JSON with it)"; exit 0; }
make_data
echo "1..4"
host=$(hostname)

d="$work/slow"
HPCT_LOG_LEVEL=2 HPCT_TEST_SLOW_RANK=1,15 train 2 "$d" "$d.out" --log-interval 4 --epochs 1
[ $rc = 0 ]; ok $? "2 ranks, rank 1 sleeping 15 ms per step: exit $rc"
[ $rc = 0 ] || show "$d.out"
line=$(grep -m1 'straggler: rank' "$d.out")
case "$line" in *"straggler: rank 1 on host $host is "*"% slower than the median of the other ranks"*) true ;; *) false ;; esac
ok $? "rank 0 logs the warning naming rank 1 and host $host: ${line:-none}"
facts=$(python3 - "$d/metrics.jsonl" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
s = [r for r in recs if r["type"] == "straggler"]
steps = [r for r in recs if r["type"] == "step"]
print(s[0]["rank"], s[0]["host"], s[0]["slower_by"] > 0.2 if s else "none")
print(sum(r["slowest_rank"] == 1 for r in steps), len(steps))
PY
)
set -- $facts
[ "$1" = 1 ] && [ "$2" = "$host" ] && [ "$3" = True ]
ok $? "the metrics file has a straggler record for rank 1 on $host, more than 20% above the median ($1 $2 $3)"
[ -n "$4" ] && [ "$4" -ge $(($5 * 3 / 4)) ]
ok $? "rank 1 is the slowest rank in $4 of $5 step reports (at least 3/4)"
