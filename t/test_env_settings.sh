#!/bin/sh
# Every HPCT_* setting of the library (issue 37 finding 13): each registered variable (from
# `hpctrain info --names`) set to '', -1, abc, 1e99, nan and 99999999999999999999, and to
# one valid sample. '' means unset (the default) and is accepted; every other junk value is
# refused by `hpctrain info --check` (the check hpct_init makes first) with exit 2 and one
# line naming the variable, the value and the accepted values that `hpctrain info` lists.
# Then a few end to end under `mpirun -np 2 hpctrain train`: refused with exit 2, printed
# once; and a valid run names no library variable as a typo.
. "${top_srcdir:-.}/t/lib/train_lib.sh"
need_tool
echo "1..7"
# The defaults as a user sees them: no table from t/t.mk's environment.
unset HPCT_ALLREDUCE_ALGO

# One valid value per setting; a new setting without one fails the test below.
sample() {
    case $1 in
    HPCT_ALLOW_GPU_SHARING) echo 1 ;; HPCT_ALLOW_VERSION_MISMATCH) echo 1 ;;
    HPCT_ALLREDUCE_ALGO) echo 0:mpi,64K:p2p ;;
    HPCT_CKPT_LOCK) echo off ;; HPCT_CUDA_AWARE_MPI) echo 0 ;; HPCT_CUDA_GRAPH) echo 0 ;;
    HPCT_DATA_STORE) echo off ;;
    HPCT_JOB_END_TIME) echo 2000000000.5 ;; HPCT_NCCL) echo auto ;; HPCT_NCCL_SOLO) echo 0 ;;
    HPCT_NODE_CHUNK_BYTES) echo 1M ;; HPCT_NODE_IN_PLACE) echo 0 ;; HPCT_NODE_REDUCE) echo P2P ;;
    HPCT_NODE_SHM_MAX_BYTES) echo 0 ;; HPCT_NODE_SMALL_BYTES) echo 16384 ;;
    HPCT_PREFETCH_THREAD) echo 1 ;; HPCT_RANKS_PER_NODE) echo 2 ;; HPCT_STREAM_MMAP) echo 0 ;;
    HPCT_VECTOR_ISA) echo baseline ;; *) return 1 ;;
    esac
}

"$TOOL" info >"$work/info" 2>&1 && "$TOOL" info --names >"$work/names" 2>&1
n=$(wc -l <"$work/names")
[ "$n" -ge 17 ] && [ "$(grep -c '^HPCT_[A-Z0-9_]* = .* (default)$' "$work/info")" = "$n" ] &&
    [ "$(grep -c '^    accepted: ' "$work/info")" = "$n" ]
ok $? "hpctrain info lists $n settings, each with its value, source and accepted values"
show "$work/info" 6

# accepted NAME: the accepted values hpctrain info lists for NAME.
accepted() {
    awk -v n="$1" '$1 == n { f = 1; next } f { sub(/^    accepted: /, ""); sub(/; the same on every rank$/, ""); print; exit }' "$work/info"
}

bad="" nosample="" cases=0
while read -r name; do
    sample "$name" >/dev/null || nosample="$nosample $name"
    want=$(accepted "$name")
    for v in '' -1 abc 1e99 nan 99999999999999999999 "$(sample "$name")"; do
        cases=$((cases + 1))
        env "$name=$v" "$TOOL" info --check >"$work/out" 2>"$work/err"
        rc=$?
        if [ -z "$v" ] || [ "$v" = "$(sample "$name")" ]; then
            [ $rc = 0 ] && [ ! -s "$work/err" ] || bad="$bad $name='$v'(refused)"
        else
            [ $rc = 2 ] && [ "$(wc -l <"$work/err")" = 1 ] &&
                grep -qF "$name is '$v'" "$work/err" && grep -qF "use $want" "$work/err" ||
                bad="$bad $name='$v'(rc=$rc)"
        fi
    done
done <"$work/names"
[ -z "$bad" ]
ok $? "$cases cases: '' and each sample accepted, every junk value refused naming the variable, the value and the accepted values${bad:+ (wrong:$bad)}"
is "${nosample# }" "" "every setting has a valid sample in this test"

HPCT_NODE_REDUCE=shm HPCT_VECTOR_ISA=AVX9 "$TOOL" info --check >"$work/out" 2>&1
[ $? = 2 ] && grep -q "HPCT_VECTOR_ISA is 'AVX9': use auto, avx512f, avx2 or baseline" "$work/out"
ok $? "two settings set, the bad one named"
show "$work/out" 1

need_mpi
make_data
# mpirun -np 2 hpctrain train with each of a few junk values: exit 2, the detail once. The
# four jobs run at the same time (each is mostly mpirun's start and its pause after exit 2).
bad="" i=0 junk="HPCT_JOB_END_TIME=abc HPCT_NODE_SHM_MAX_BYTES=-1 HPCT_NODE_IN_PLACE=nan
    HPCT_ALLREDUCE_ALGO=1e99"
for nv in $junk; do
    i=$((i + 1))
    (export "$nv"; train 2 "$work/x$i" "$work/out$i") &
done
wait
i=0
for nv in $junk; do
    i=$((i + 1))
    train_rc "$work/out$i"
    [ $rc = 2 ] && [ "$(grep -c "error: ${nv%%=*} is '${nv#*=}': .*use " "$work/out$i")" = 1 ] &&
        [ "$(grep -c "error" "$work/out$i")" = 1 ] || bad="$bad $nv:$rc"
done
[ -z "$bad" ]
ok $? "mpirun -np 2 hpctrain train refuses 4 junk values, exit 2, each printed once${bad:+ (not:$bad)}"
show "$work/out4" 2

HPCT_LOG_LEVEL=0 HPCT_RANKS_PER_NODE=1 HPCT_STREAM_MMAP=0 HPCT_CUDA_AWARE_MPI=0 \
    HPCT_NODE_REDUCE=p2p train 2 "$work/x" "$work/out" --epochs 1
[ $rc = 0 ] && ! grep -q "a typo" "$work/out"
ok $? "a 2-rank run with valid library settings: exit $rc, none called a typo"
show "$work/out" 3

HPCT_NODE_REDUKE=p2p train 1 "$work/y" "$work/out" --epochs 1
[ $rc = 0 ] && grep -q "not hpctrain variables (a typo?): HPCT_NODE_REDUKE" "$work/out"
ok $? "HPCT_NODE_REDUKE (a typo the old HPCT_NODE_* wildcard hid) is named"
show "$work/out" 2
