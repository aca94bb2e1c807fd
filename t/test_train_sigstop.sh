#!/bin/sh
# SIGSTOP of one rank in mid-run (doc/reliability.md): in a 3-rank job with
# collective_timeout = 5, rank K (0, 1, then 2) is stopped from outside with kill -STOP at a
# random moment 0-1.5 s after training reaches step 400 (the job would run for minutes).
# Per trial: the job ends with exit 124; every healthy rank that logged names rank K and no
# other rank (it did not arrive, or it stopped during the operation), within 1.2 x the
# deadline of the stop (each output line is time-stamped as it arrives); the stopped rank,
# if it printed, blames no peer; when K is the writer (rank 0) the healthy ranks say that
# there is no emergency checkpoint instead of waiting for one; no rank process is left.
. "${top_srcdir:-.}/t/lib/train_lib.sh"
need_tool
need_mpi
make_data
DEADLINE=5
# The library names the stopped rank at the deadline (5.0-5.1 s after the stop on an idle
# machine); SLACK covers the log line's trip through mpirun and a loaded 2-core machine's
# scheduling (one rank's line came 6.1 s after the stop under a load average of 5).
SLACK=1.5
echo "1..12"

# stamp: each line of stdin prefixed with the time it arrived (seconds, 1 ns resolution).
stamp() { while IFS= read -r l; do printf '%s %s\n' "$(date +%s.%N)" "$l"; done; }

# check_messages OUT K STOPPED_AT: the rules above for the messages in OUT; prints why not.
# A rank names the stopped one in its library error log line (HPCT_LOG_LEVEL=1), written at
# the deadline ("... seen by rank R ..."); its final "training (a rank hung) failed" line
# comes after the emergency checkpoint's coordination.
check_messages() {
    awk -v k="$2" -v t0="$3" -v limit="$(awk -v d=$DEADLINE -v s=$SLACK 'BEGIN { print 1.2 * d + s }')" '
        / hpctrain: error: .*collective deadline|hpctrain: error: .*\(operation #/ {
            if (match($0, /this rank \([0-9]+ of 3/)) {
                r = substr($0, RSTART + 11, RLENGTH - 16) + 0
                if (r != k) { print "# rank " r " says it was stopped itself"; bad++ }
                next
            }
            if (!match($0, /seen by rank [0-9]+/)) next
            r = substr($0, RSTART + 13, RLENGTH - 13) + 0
            if (r in first) next
            first[r] = 1
            named = ""
            if (match($0, /ranks? [0-9,]+ of 3 (did not arrive|stopped)/)) {
                named = substr($0, RSTART, RLENGTH); sub(/^ranks? /, "", named); sub(/ of 3.*/, "", named)
            }
            late = $1 - t0
            if (r == k) {
                if (named != "") { print "# the stopped rank " r " blames rank(s) " named; bad++ }
                next
            }
            healthy++
            printf "# rank %d named rank(s) %s %.2f s after the stop\n", r, named == "" ? "none" : named, late
            if (named != k) { print "#   expected rank " k ": " substr($0, 1, 400); bad++ }
            if (late > limit) { print "#   later than " limit " s"; bad++ }
        }
        / training \(a rank hung\) failed: / && k == 0 {
            if (match($0, /rank [0-9]+: training/) && substr($0, RSTART + 5, 1) + 0 != 0 &&
                $0 !~ /no emergency checkpoint: the writer \(rank 0\) is a rank that stopped/) {
                print "#   no word that the writer (rank 0) stopped: " substr($0, 1, 300); bad++ }
        }
        END { if (!healthy) { print "# no healthy rank logged a timeout"; bad++ }
              exit bad > 0 }' "$1"
}

# The trials overlap: trial k + 1 starts once rank k of trial k is stopped, so the three
# deadlines run out side by side, and at most one job trains at a time. Their checks follow
# in trial order.
for k in 0 1 2; do
    out="$work/stop$k.out" dir="$work/stop$k"
    rm -f "$out".pid.*
    ( HPCT_LOG_LEVEL=1 timeout -s KILL $RUN_LIMIT "$MPIRUN" --oversubscribe -np 3 -x HPCT_LOG_LEVEL \
        sh -c 'echo $$ >"$0.pid.$OMPI_COMM_WORLD_RANK"; exec "$@"' "$out" \
        "$TOOL" train --config "$work/train.conf" --checkpoint-dir "$dir" --epochs 5000 \
        --log_interval 200 --collective_timeout $DEADLINE 2>&1
      echo $? >"$out.rc"; date +%s.%N >"$out.end" ) | stamp >"$out" &
    job=$!
    if wait_for_step "$out" 400 "[0-9.]* "; then
        sleep "$(awk -v s="$k$$" 'BEGIN { srand(s); printf "%.2f", 1.5 * rand() }')"
        kill -STOP "$(cat "$out.pid.$k")"
        stopped=$(date +%s.%N)
    else
        stopped=0
    fi
    eval "job$k=\$job stopped$k=\$stopped"
done

for k in 0 1 2; do
    out="$work/stop$k.out" dir="$work/stop$k"
    eval "job=\$job$k stopped=\$stopped$k"
    wait "$job"
    train_rc "$out"
    end=$(cat "$out.end" 2>/dev/null || date +%s.%N)
    echo "# rank $k stopped; the job ended with exit $rc $(awk -v a="$end" -v b="$stopped" 'BEGIN { printf "%.2f", a - b }') s later (deadline $DEADLINE s)"
    [ "$stopped" != 0 ] && [ "$rc" = 124 ]
    ok $? "W=3, rank $k stopped by SIGSTOP in mid-run: the job ends with exit 124 (got $rc)" ||
        show "$out" 8
    check_messages "$out" "$k" "$stopped"
    ok $? "every healthy rank that logged names rank $k within 1.2 x the deadline (+ $SLACK s of output and scheduling); rank $k blames no peer"
    reap "$out"
    none_alive "$out.pid"; ok $? "no rank process of that job is left behind"
    left=$(ls "$dir" 2>/dev/null | grep -c '^ckpt-')
    if [ "$k" = 0 ]; then
        # the others do not wait a second deadline for a writer that cannot save
        awk -v a="$end" -v b="$stopped" -v d=$DEADLINE -v s=$SLACK 'BEGIN { exit !(a - b < 1.2 * d + 2 + s) }'
        ok $? "the writer stopped: the job ended within 1.2 x the deadline + $((2 + 1)).5 s of the stop (not after a second deadline)"
    else
        # no cadence in these settings: the one checkpoint is the emergency one
        [ "$left" = 1 ] && ! grep -q "did not confirm an emergency checkpoint" "$out"
        ok $? "the writer (rank 0) saved the emergency checkpoint before the job ended ($left file(s))" ||
            show "$out" 6
    fi
done
