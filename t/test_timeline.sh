#!/bin/sh
# The opt-in per-rank timeline of `hpctrain train` (timeline_file) at 2 ranks:
# (a) each rank's file parses as JSON and holds, for every step of its window, the spans of
#     the step, data wait, forward and backward of every layer, the reductions (bytes and
#     algorithm), the optimizer and the step-boundary agreement; checkpoint snapshot, write
#     and commit spans appear; no span has a negative duration; every span of the training
#     thread lies inside its step's span; with overlap (the default) a reduction starts
#     before the backward pass of the step has ended;
# (b) the ring keeps only the last timeline_steps steps; a window [first, first + steps - 1]
#     keeps exactly those;
# (c) a rank killed with SIGKILL mid-run leaves a file that still parses;
# (d) hpctrain trace merge gives one JSON file with a process per rank.
. "${top_srcdir:-.}/t/lib/train_lib.sh"
need_tool
need_mpi
command -v python3 >/dev/null 2>&1 || { echo "1..0 # SKIP no python3 (the test reads JSON with it)"; exit 0; }
make_data
echo "1..9"
LAYERS=2 # hidden = 32: dense 0 and dense 1

# check.py FILE: "steps S..." then the problems found, one per line ("ok" when none).
# Times are read as decimals: a float holds epoch microseconds (about 1.8e15) only to 0.25 us,
# which made a span that ends within that of its step's end look outside it.
cat >"$work/check.py" <<'EOF'
import json, sys
from decimal import Decimal
ev = json.load(open(sys.argv[1]), parse_float=Decimal)["traceEvents"]
x = [e for e in ev if e["ph"] == "X"]
layers = int(sys.argv[2])
steps = sorted({e["args"]["step"] for e in x if e["name"] == "step"})
print("steps", " ".join(map(str, steps)))
bad = []
need = ["step", "data_wait", "optimizer", "agreement", "allreduce"]
need += ["forward %d" % l for l in range(layers)] + ["backward %d" % l for l in range(layers)]
for s in steps:
    mine = [e for e in x if e["args"]["step"] == s and e["tid"] == 0]
    names = {e["name"] for e in mine}
    missing = [n for n in need if n not in names]
    if missing:
        bad.append("step %d lacks %s" % (s, missing))
    st = [e for e in mine if e["name"] == "step"][0]
    for e in mine:
        if e["ts"] < st["ts"] or e["ts"] + e["dur"] > st["ts"] + st["dur"] + Decimal("0.002"):
            bad.append("step %d: %s outside its step" % (s, e["name"]))
    red = [e for e in mine if e["name"] == "allreduce"]
    bwd_end = max(e["ts"] + e["dur"] for e in mine if e["name"].startswith("backward"))
    if red and min(e["ts"] for e in red) >= bwd_end:
        bad.append("step %d: no reduction starts during backward" % s)
    if any("bytes" not in e["args"] or "algorithm" not in e["args"] for e in red):
        bad.append("step %d: a reduction without bytes or algorithm" % s)
if any(e["dur"] < 0 for e in x):
    bad.append("negative duration")
ck = {e["name"] for e in x if e["cat"] == "checkpoint"}
print("ckpt", " ".join(sorted(ck)))
print("\n".join(bad[:5]) if bad else "ok")
EOF

d="$work/tl"
train 2 "$d" "$d.out" --timeline-file auto --timeline-steps 12 --checkpoint-every-steps 10 --checkpoint-async 1
[ $rc = 0 ] && [ -f "$d/timeline-rank0.json" ] && [ -f "$d/timeline-rank1.json" ]
ok $? "(a) 2 ranks with timeline_file = auto: exit $rc, one file per rank"
[ $rc = 0 ] || show "$d.out"
for r in 0 1; do
    out=$(python3 "$work/check.py" "$d/timeline-rank$r.json" $LAYERS 2>&1)
    steps=$(echo "$out" | sed -n 's/^steps //p')
    verdict=$(echo "$out" | sed '1,2d')
    [ "$steps" = "$(seq -s ' ' 73 84)" ] && [ "$verdict" = ok ]
    ok $? "(a, b) rank $r: parses; the ring holds steps 73..84 ($steps); every span present and inside its step, reductions overlap backward: $verdict"
done
ck=$(python3 "$work/check.py" "$d/timeline-rank0.json" $LAYERS | sed -n 's/^ckpt //p')
is "$ck" "ckpt_commit ckpt_snapshot ckpt_write" "(a) rank 0 has checkpoint snapshot, write and commit spans"

d="$work/win"
train 2 "$d" "$d.out" --timeline-file "$work/win/tl" --timeline-steps 5 --timeline-first 20
steps=$(python3 "$work/check.py" "$work/win/tl-rank1.json" $LAYERS | sed -n 's/^steps //p')
[ $rc = 0 ] && [ "$steps" = "20 21 22 23 24" ]
ok $? "(b) timeline_first = 20, timeline_steps = 5: exactly steps 20..24 ($steps), exit $rc"

# (c) SIGKILL of rank 0 in the middle of the run, with the file rewritten every 3 steps
d="$work/kill"
HPCT_TEST_STEP_DELAY_MS=20 train_bg 2 "$d" "$d.out" --timeline-file auto --timeline-steps 3
wait_for_step "$d.out" 30 && kill -KILL "$(cat "$d.out.pid.0")"
train_wait "$d.out"
python3 -m json.tool "$d/timeline-rank0.json" >/dev/null 2>&1 && python3 -m json.tool "$d/timeline-rank1.json" >/dev/null 2>&1
ok $? "(c) after SIGKILL of rank 0 mid-run (exit $rc), both ranks' files parse as JSON"
ls "$d"/*.tmp >/dev/null 2>&1 && diag "a temporary file was left: $(ls "$d"/*.tmp)"

# (d) merge
"$TOOL" trace merge -o "$work/merged.json" "$work/tl/timeline-rank0.json" "$work/tl/timeline-rank1.json" >"$work/merge.out" 2>&1
r=$?
pids=$(python3 -c "import json,sys; print(sorted({e['pid'] for e in json.load(open(sys.argv[1]))['traceEvents']}))" "$work/merged.json" 2>&1)
[ $r = 0 ] && [ "$pids" = "[0, 1]" ]
ok $? "(d) hpctrain trace merge: exit $r, one JSON file with processes $pids"
cp "$work/tl/timeline-rank0.json" "$work/in0.json"
before=$(cksum <"$work/in0.json")
"$TOOL" trace merge -o "$work/in0.json" "$work/in0.json" "$work/tl/timeline-rank1.json" >"$work/merge0.out" 2>&1
r=$?
[ $r = 2 ] && grep -q "is also the input" "$work/merge0.out" && [ "$(cksum <"$work/in0.json")" = "$before" ]
ok $? "(d) -o naming one of the inputs: exit $r (2), that input kept (it was emptied, then removed)"
printf '{"ph":"X","pid":1,"tid":0,"name":"cut' >>"$work/tl/timeline-rank1.json"
"$TOOL" trace merge -o "$work/merged2.json" "$work/tl/timeline-rank0.json" "$work/tl/timeline-rank1.json" >"$work/merge2.out" 2>&1
r=$?
python3 -m json.tool "$work/merged2.json" >/dev/null 2>&1 && grep -q '(1 line(s) skipped)' "$work/merge2.out"
ok $? "(d) a file cut in the middle of an event: merge exits $r, skips that line, the result parses"
