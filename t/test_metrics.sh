#!/bin/sh
# The metrics file of `hpctrain train` (doc/metrics.md) and `hpctrain report` on it:
# (a) a 2-rank run SIGTERM'd at step 21 and resumed leaves ONE file with two segments, the
#     checkpoint of the stop step, the resume from it, a restart record with its parts, and
#     step records 1..84 each exactly once (no gap, no duplicate); every line is JSON;
# (b) evaluations on a cadence (eval_every_steps) are recorded;
# (c) hpctrain report prints the segments and writes SVG plots that parse as XML and hold one
#     marker per step record with the recorded loss;
# (d) a torn last line (a crash mid-write) is skipped by the report, and the next segment
#     that appends starts on a line of its own;
# (e) metrics_file = none writes nothing; an unwritable path fails on every rank, naming it;
# (f) an asynchronous save's seconds end at its commit, not when the training thread sees it.
. "${top_srcdir:-.}/t/lib/train_lib.sh"
need_tool
need_mpi
command -v python3 >/dev/null 2>&1 || { echo "1..0 # SKIP no python3 (the test reads JSON with it)"; exit 0; }
make_data
echo "eval_manifest = $work/data/manifest.txt" >>"$work/train.conf"
echo "1..19"
CK="--checkpoint-every-steps 4 --checkpoint-async 1 --eval-every-steps 20"

# check.py FILE: prints facts about a metrics file, one "key value" per line.
cat >"$work/check.py" <<'EOF'
import json, sys
recs, bad = [], 0
for line in open(sys.argv[1]):
    try:
        recs.append(json.loads(line))
    except ValueError:
        bad += 1
print("bad", bad)
print("versions", sorted({r["v"] for r in recs}))
starts = [r for r in recs if r["type"] == "run_start"]
print("segments", [r["segment"] for r in starts])
stops = [(r["segment"], r["reason"], r["step"]) for r in recs if r["type"] == "stop"]
print("stops", " ".join("%d:%s:%d" % s for s in stops))
steps = [r["step"] for r in recs if r["type"] == "step"]
print("steps_unique", len(set(steps)) == len(steps))
print("steps_contiguous", steps == list(range(1, len(steps) + 1)))
print("last_step", steps[-1] if steps else -1)
print("ckpt_steps", " ".join(str(r["step"]) for r in recs if r["type"] == "checkpoint" and r["bytes"] > 0))
res = [r for r in recs if r["type"] == "resume"]
print("resume", " ".join("%d:%s" % (r["step"], r["path"]) for r in res))
rs = [r for r in recs if r["type"] == "restart" and "total_s" in r]
parts = ["queue_wait_s", "startup_s", "comm_setup_s", "setup_s", "ckpt_load_s", "first_step_s"]
print("restart", " ".join("%d:%s:%d" % (r["segment"], r["previous_stop"], all(p in r for p in parts)) for r in rs))
print("evals", " ".join(str(r["step"]) for r in recs if r["type"] == "eval"))
first = [r for r in recs if r["type"] == "step"][:1]
print("step_fields", all(k in first[0] for k in ["loss", "lr", "samples_per_s", "grad_norm", "data_share", "comm_share", "ckpt_share", "step_time_min_s", "step_time_median_s", "step_time_max_s", "slowest_rank", "slowest_host"]) if first else False)
print("losses", " ".join("%d=%.9g" % (r["step"], r["loss"]) for r in recs if r["type"] == "step"))
EOF
# fact FILE KEY: one fact of check.py's; check.py runs once for each content of FILE (a python
# start is 0.4 s on the 2-core VM, and the facts are asked 15 times of two contents).
fact() {
    sum=$(cksum <"$1" 2>/dev/null)
    if [ "$sum $1" != "$(cat "$work/facts.of" 2>/dev/null)" ]; then
        python3 "$work/check.py" "$1" >"$work/facts" && echo "$sum $1" >"$work/facts.of"
    fi
    sed -n "s/^$2 //p" "$work/facts"
}

# (e) and (f) below do not depend on (a)-(d): their runs go in the background now (they
# mostly wait: (f) sleeps 600 ms a step) and are checked at the end.
train 1 "$work/off" "$work/off.out" --metrics-file none &
train 2 "$work/bad" "$work/bad.out" --metrics-file "$work/no/such/dir/m.jsonl" &
HPCT_TEST_SLOW_RANK=0,600 train 1 "$work/async" "$work/async.out" --global-batch 512 --epochs 2 \
    --checkpoint-every-steps 2 --checkpoint-async 1 &

d="$work/run"
HPCT_TEST_RAISE_AT_STEP=21 train 2 "$d" "$d.stop" $CK
s=$(stop_step "$d.stop")
[ $rc = 75 ] && [ "$s" = 21 ]; ok $? "(a) SIGTERM at step 21 of 2 ranks: exit 75 (got $rc) after step ${s:-?}"
[ $rc = 75 ] || show "$d.stop"
train 2 "$d" "$d.resume" $CK
[ $rc = 0 ] && [ "$(resumed_step "$d.resume")" = 21 ]; ok $? "(a) the resumed run completes from step 21 (exit $rc)"
[ $rc = 0 ] || show "$d.resume"
m="$d/metrics.jsonl"
[ -f "$m" ] && [ "$(fact "$m" bad)" = 0 ] && [ "$(fact "$m" versions)" = "[1]" ]
ok $? "(a) one metrics file in the checkpoint directory; every line is a JSON object of schema 1 ($(wc -l <"$m" 2>/dev/null) lines)"
is "$(fact "$m" segments)" "[1, 2]" "(a) two segments: run_start records 1 and 2"
is "$(fact "$m" stops)" "1:signal:21 2:done:84" "(a) stop records: segment 1 by signal after step 21, segment 2 done at 84"
[ "$(fact "$m" steps_unique)" = True ] && [ "$(fact "$m" steps_contiguous)" = True ] && [ "$(fact "$m" last_step)" = 84 ]
ok $? "(a) step records 1..84 (log_interval 1), each exactly once across the two segments"
ck=$(fact "$m" ckpt_steps)
case " $ck " in *" 20 21 "*" 84 "*) true ;; *) false ;; esac
ok $? "(a) checkpoint records with their sizes for steps 20, 21 (the stop) and 84 among: $ck"
is "$(fact "$m" resume)" "21:$(ckpt_file "$d" 21)" "(a) the resume record names the checkpoint of step 21"
is "$(fact "$m" restart)" "2:signal:1" "(a) segment 2's restart record follows the signal stop and has every part of the restart latency"
is "$(fact "$m" evals)" "20 40 60 80 84" "(b) evaluations every 20 steps and at the end, in both segments"
is "$(fact "$m" step_fields)" True "(a) step records carry loss, lr, samples/s, grad norm, time shares and per-rank step times"

# (c) the report and its plots
"$TOOL" report "$d" >"$work/report.out" 2>&1
r=$?
grep -q '^  1 .*signal 15' "$work/report.out" && grep -q '^  2 .*done' "$work/report.out" &&
    grep -q '^evaluation: final at step 84' "$work/report.out"
g=$?
[ $r = 0 ] && [ $g = 0 ]; ok $? "(c) hpctrain report: exit $r, segment 1 stopped by signal 15, segment 2 done, final evaluation at step 84"
[ $r = 0 ] || show "$work/report.out" 20
cat >"$work/svg.py" <<'EOF'
import sys, xml.dom.minidom as X
svg, losses = sys.argv[1], dict(kv.split("=") for kv in sys.argv[2].split())
head = open(svg, "rb").read(100)
assert head.startswith(b"<?xml") and b"<svg" in head, "no SVG header"
doc = X.parse(svg)
for g in doc.getElementsByTagName("g"):
    if g.getAttribute("data-series") == "training loss":
        pts = {c.getAttribute("data-step"): float(c.getAttribute("data-value")) for c in g.getElementsByTagName("circle")}
        assert len(pts) == len(losses), "%d markers for %d steps" % (len(pts), len(losses))
        assert all(abs(pts[s] - float(v)) <= 1e-6 * abs(float(v)) for s, v in losses.items()), "a marker differs"
        print("ok", len(pts))
        break
else:
    print("no training-loss series")
EOF
out=$(python3 "$work/svg.py" "$d/loss.svg" "$(fact "$m" losses)" 2>&1)
is "$out" "ok 84" "(c) loss.svg: SVG header, parses as XML, one marker per step record with its loss"
python3 -c "import sys, xml.dom.minidom as X; [X.parse(f) for f in sys.argv[1:]]" "$d/throughput.svg" "$d/time_split.svg" &&
    grep -q 'data-series="samples/s"' "$d/throughput.svg" && [ "$(grep -c '<circle' "$d/throughput.svg")" -ge 84 ] &&
    [ "$(grep -c '<rect .*data-value' "$d/time_split.svg")" = 8 ]
ok $? "(c) throughput.svg (84 points) and time_split.svg (4 shares x 2 segments) parse as XML"

# (d) a torn last line: the report skips it; the next segment starts on its own line
printf '{"v":1,"type":"step","step":85,"lo' >>"$m"
"$TOOL" report --no-plots "$d" >"$work/torn.out" 2>&1
r=$?
[ $r = 0 ] && grep -q '(.* lines, 1 skipped as unreadable)' "$work/torn.out" && grep -q '^steps: 84 reported up to step 84' "$work/torn.out"
ok $? "(d) a torn last line: report exits $r, counts it as skipped and still reports steps up to 84"
train 2 "$d" "$d.again" $CK
[ $rc = 0 ] && [ "$(fact "$m" bad)" = 1 ] && [ "$(fact "$m" segments)" = "[1, 2, 3]" ]
ok $? "(d) a third run appends after the torn line: exit $rc, still one bad line, segments 1, 2, 3"

# (e) off switch and an unwritable path
wait
train_rc "$work/off.out"
[ ! -e "$work/off/metrics.jsonl" ] && ! ls "$work/off" | grep -q jsonl
ok $? "(e) metrics_file = none: no metrics file (exit $rc)"
train_rc "$work/bad.out"
[ $rc != 0 ] && grep -q "$work/no/such/dir/m.jsonl" "$work/bad.out"
ok $? "(e) an unwritable metrics path: exit $rc, the error names it"

# (f) an asynchronous save's "seconds" ends at its commit as the writer timed it, not when the
# training thread next looks (one 600 ms step later: HPCT_TEST_SLOW_RANK sleeps in each step)
d="$work/async"
train_rc "$d.out"
secs=$(python3 -c '
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
print(" ".join("%d:%.3f" % (x["step"], x["seconds"]) for x in r if x["type"] == "checkpoint" and x["step"] < 8))
' "$d/metrics.jsonl" 2>&1)
[ $rc = 0 ] && [ -n "$secs" ] && python3 -c '
import sys
v = [float(p.split(":")[1]) for p in sys.argv[1].split()]
sys.exit(0 if len(v) == 3 and all(0 < x < 0.6 for x in v) else 1)' "$secs"
ok $? "(f) 8 steps of 600 ms, async saves after steps 2, 4, 6: each record's seconds < 0.6 (step:seconds $secs; exit $rc)"
