#!/bin/sh
# hpctrain shard end to end: Fashion-MNIST (IDX, gzip and plain), .npy and CSV inputs become
# shards + manifest that the reader serves to two ranks; --index rebuilds the same manifest;
# usage errors exit 2, bad data exits 3: among them a FIFO input (refused at once, not read),
# .npy format versions other than 1.0-3.0 and malformed .npy header dicts (issue 37, 11).
build=${top_builddir:-.}
tool="$build/tools/hpctrain"
check="$build/t/lib/data_check"
fm=/usr/share/datasets/fashion-mnist
work=$(mktemp -d "${TMPDIR:-/tmp}/hpct-shard.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
. "${top_srcdir:-.}/t/lib/tap.sh"
status() { "$@" >"$work/out" 2>&1; echo $?; }

plan 42
"$tool" --version | grep -q '^hpctrain [0-9]' ; ok $? "hpctrain --version"
[ "$(status "$tool" frobnicate)" = 2 ]; ok $? "unknown command exits 2"
[ "$(status "$tool" shard "$fm/train-images-idx3-ubyte.gz")" = 2 ] && grep -q -- '-o' "$work/out"
ok $? "shard without -o exits 2 and says so"

# A gzip IDX file with three bytes overwritten inside its (stored, incompressible) data: zlib
# reports a data error, which must reach the message intact (it was printed after gzclose
# had freed it: garbage, or a heap-use-after-free under ASan).
{ printf '\0\0\10\3\0\0\141\250\0\0\0\2\0\0\0\2'; head -c 100000 /dev/urandom; } >"$work/bad-idx3-ubyte"
{ printf '\0\0\10\1\0\0\141\250'; head -c 25000 /dev/zero; } >"$work/lab-idx1-ubyte"
gzip "$work/bad-idx3-ubyte" && printf 'XYZ' | dd of="$work/bad-idx3-ubyte.gz" bs=1 seek=50000 conv=notrunc 2>/dev/null
[ "$(status "$tool" shard -o "$work/x" "$work/bad-idx3-ubyte.gz" "$work/lab-idx1-ubyte")" = 3 ] &&
    grep -q "^hpctrain shard: error: $work/bad-idx3-ubyte.gz: corrupt gzip data near byte offset [0-9]*: .*\(incorrect\|invalid\)" "$work/out"
ok $? "a corrupt gzip IDX file exits 3 with zlib's message ($(head -c 200 "$work/out" | tr -c '[:print:]' '?'))"

if [ ! -r "$fm/train-images-idx3-ubyte.gz" ]; then
    skip 7 "no Fashion-MNIST (Debian package dataset-fashion-mnist)"
else
    rc=$(status "$tool" shard -o "$work/fm" -n 4 --scale 0.00392156862745098 \
        "$fm/train-images-idx3-ubyte.gz" "$fm/train-labels-idx1-ubyte.gz")
    [ "$rc" = 0 ] && [ "$(grep -c '^shard 15000 ' "$work/fm/manifest.txt")" = 4 ]
    ok $? "Fashion-MNIST train -> 4 shards of 15000 samples"
    grep -q '^inputs float32 28,28$' "$work/fm/manifest.txt" && grep -q '^targets int32 scalar$' "$work/fm/manifest.txt"
    ok $? "manifest records float32 [28,28] inputs and int32 labels"
    "$check" "$work/fm/manifest.txt" 60000 200 10 0 1 >"$work/check" 2>&1 &&
        grep -q 'hist 6000 6000 6000 6000 6000 6000 6000 6000 6000 6000$' "$work/check"
    ok $? "two ranks read one epoch: 6000 of each class, inputs in [0, 1] ($(cat "$work/check"))"
    rc=$(status "$tool" shard --index -o "$work/fm/again.txt" "$work/fm"/shard-0000*.h5)
    [ "$rc" = 0 ] && diff "$work/fm/manifest.txt" "$work/fm/again.txt" >/dev/null
    ok $? "--index on the shards writes the same manifest"
    gunzip -c "$fm/t10k-images-idx3-ubyte.gz" >"$work/t10k-images-idx3-ubyte"
    gunzip -c "$fm/t10k-labels-idx1-ubyte.gz" >"$work/t10k-labels-idx1-ubyte"
    "$tool" shard -o "$work/gz" "$fm/t10k-images-idx3-ubyte.gz" "$fm/t10k-labels-idx1-ubyte.gz" >/dev/null &&
        "$tool" shard -o "$work/plain" "$work/t10k-images-idx3-ubyte" "$work/t10k-labels-idx1-ubyte" >/dev/null &&
        diff "$work/gz/manifest.txt" "$work/plain/manifest.txt" >/dev/null
    ok $? "plain and gzip IDX give byte-identical shards"
    [ "$(status "$tool" shard -o "$work/x" "$fm/train-images-idx3-ubyte.gz" "$fm/t10k-labels-idx1-ubyte.gz")" = 3 ] &&
        grep -q '60000 samples' "$work/out"
    ok $? "inputs and labels with different counts exit 3 naming both"
    head -c 100000 "$fm/train-images-idx3-ubyte.gz" >"$work/cut-idx3-ubyte.gz"
    [ "$(status "$tool" shard -o "$work/x" "$work/cut-idx3-ubyte.gz" "$fm/train-labels-idx1-ubyte.gz")" = 3 ] &&
        grep -q 'cut-idx3-ubyte.gz' "$work/out"
    ok $? "a truncated gzip IDX file exits 3 naming it"
fi

# .npy: uint8 [6, 2, 3] inputs and int64 labels, written byte by byte.
python3 - "$work" <<'PY'
import struct, sys
def npy(path, descr, shape, payload, dict=None, version=b'\x01\x00'):
    hdr = dict or "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape)
    hdr += ' ' * (63 - (10 + len(hdr)) % 64) + '\n'
    open(path, 'wb').write(b'\x93NUMPY' + version + struct.pack('<H', len(hdr)) + hdr.encode() + payload)
npy(sys.argv[1] + '/v9.npy', '|u1', '(6, 2, 3)', bytes(range(36)), version=b'\x09\x00')
npy(sys.argv[1] + '/quote.npy', '', '', bytes(range(36)),
    "{'descr': '|u1', 'fortran_order: False, 'shape': (6, 2, 3), }")
npy(sys.argv[1] + '/brace.npy', '', '', bytes(range(36)),
    "{'descr': '|u1', 'fortran_order': False, 'shape': (6, 2, 3), ")
npy(sys.argv[1] + '/nokey.npy', '', '', bytes(range(36)), "{'descr': '|u1', 'shape': (6, 2, 3), }")
npy(sys.argv[1] + '/x.npy', '|u1', '(6, 2, 3)', bytes(range(36)))
npy(sys.argv[1] + '/y.npy', '<i8', '(6,)', struct.pack('<6q', 0, 1, 2, 0, 1, 2))
npy(sys.argv[1] + '/ybig.npy', '<i8', '(6,)', struct.pack('<6q', 0, 1, 2, 1 << 40, 1, 2))
with open(sys.argv[1] + '/inf.csv', 'w') as f:
    f.write('1,2,0\n3,1e400,1\n')
with open(sys.argv[1] + '/d.csv', 'w') as f:
    f.write('a,b,label\n')
    for i in range(8): f.write('%d,%d,%d\n' % (i, 2 * i, i % 4))
PY
rc=$(status "$tool" shard -o "$work/npy" -n 2 --scale 0.5 "$work/x.npy" "$work/y.npy")
[ "$rc" = 0 ] && "$check" "$work/npy/manifest.txt" 6 2 3 0 17.5 >"$work/check" 2>&1 &&
    grep -q 'features 6 .*hist 2 2 2$' "$work/check"
ok $? ".npy uint8 inputs (scaled) and int64 labels -> 2 shards read back ($(cat "$work/check"))"
rc=$(status "$tool" shard -o "$work/csv" --skip-header "$work/d.csv")
[ "$rc" = 0 ] && grep -q '^inputs float32 2$' "$work/csv/manifest.txt" &&
    "$check" "$work/csv/manifest.txt" 8 4 4 0 14 >/dev/null 2>&1
ok $? "CSV with a header and a label column -> shard read back"
printf '1,2\n3\n' >"$work/ragged.csv"
[ "$(status "$tool" shard -o "$work/x" "$work/ragged.csv")" = 3 ] && grep -q 'ragged.csv line 2' "$work/out"
ok $? "a ragged CSV exits 3 naming the file and line"
mkdir "$work/elsewhere"
[ "$(status "$tool" shard --index -o "$work/elsewhere/m.txt" "$work/npy/shard-00000.h5")" = 3 ] &&
    grep -q 'outside' "$work/out"
ok $? "--index refuses a shard outside the manifest's directory"
# An IDX header whose dims multiply past 2^64 (65536^4 uint8 values, no data) must not
# wrap around to "0 bytes expected, 0 bytes present".
printf '\000\000\010\004\000\001\000\000\000\001\000\000\000\001\000\000\000\001\000\000' >"$work/huge.idx"
[ "$(status "$tool" shard -o "$work/x" --format idx "$work/huge.idx" "$work/huge.idx")" = 3 ] &&
    grep -q 'huge.idx: IDX header promises' "$work/out"
ok $? "an IDX header with dims overflowing 64 bits exits 3 naming the file"

# Narrowing, non-finite values and aliases (issue 14): refused naming what is wrong.
[ "$(status "$tool" shard -o "$work/x" "$work/x.npy" "$work/ybig.npy")" = 3 ] &&
    grep -q "ybig.npy: label 3 (sample 3) does not fit int32" "$work/out"
ok $? "an int64 label of 2^40 exits 3 naming the file and label (was stored as 0)"
[ "$(status "$tool" shard -o "$work/x" --scale nan "$work/x.npy" "$work/y.npy")" = 2 ] &&
    grep -q "bad value 'nan' for option --scale" "$work/out"
ok $? "--scale nan exits 2 naming the option"
[ "$(status "$tool" shard -o "$work/x" "$work/inf.csv")" = 3 ] &&
    grep -q "inf.csv: sample 1, input 1 is inf" "$work/out"
ok $? "a CSV value 1e400 (inf as float32) exits 3 naming the sample and input"
[ "$(status "$tool" shard -o "$work/x" -n -1 "$work/x.npy" "$work/y.npy")" = 2 ] &&
    grep -q "bad value '-1' for option --shards" "$work/out"
ok $? "-n -1 names the option (--shards), not the value"
{ printf '\0\0\10\1\0\0\0\2'; printf 'abcd'; } >"$work/long-idx1-ubyte"
[ "$(status "$tool" shard -o "$work/x" --format idx "$work/long-idx1-ubyte" "$work/long-idx1-ubyte")" = 3 ] &&
    grep -q "long-idx1-ubyte: IDX header promises 2 data bytes, file has 4 (trailing bytes after the data)" "$work/out"
ok $? "an IDX file with trailing bytes says so (not 'truncated?')"
# gzip (issue 14): members back to back are one file (gzip(1) reads them so); anything else
# after the last member (junk, zero padding) is refused naming the file and its byte offset
# (zlib's gzread skipped it without a word).
{ printf '\0\0\10\1\0\0\0\4'; } | gzip -c >"$work/two-idx1-ubyte.gz"
printf 'abcd' | gzip -c >>"$work/two-idx1-ubyte.gz"
printf '\0\0\10\2\0\0\0\4\0\0\0\2' | gzip -c >"$work/two-idx2-ubyte.gz"
printf '01234567' | gzip -c >>"$work/two-idx2-ubyte.gz"
[ "$(status "$tool" shard -o "$work/two" --format idx "$work/two-idx2-ubyte.gz" "$work/two-idx1-ubyte.gz")" = 0 ] &&
    grep -q '^shard 4 ' "$work/two/manifest.txt"
ok $? "IDX files in two gzip members each (header, then data) are read whole"
printf '\0\0\10\1\0\0\0\4abcd' | gzip -c >"$work/junk-idx1-ubyte.gz"
size=$(wc -c <"$work/junk-idx1-ubyte.gz" | tr -d ' ')
printf 'JUNK!' >>"$work/junk-idx1-ubyte.gz"
[ "$(status "$tool" shard -o "$work/x" --format idx "$work/junk-idx1-ubyte.gz" "$work/junk-idx1-ubyte.gz")" = 3 ] &&
    grep -q "junk-idx1-ubyte.gz: 5 bytes of junk after the gzip stream at byte offset $size " "$work/out"
ok $? "5 bytes of junk after a gzip IDX file exit 3 naming the file and offset $size"
printf '\0\0\10\1\0\0\0\4abcd' | gzip -c >"$work/pad-idx1-ubyte.gz"
head -c 512 /dev/zero >>"$work/pad-idx1-ubyte.gz"
[ "$(status "$tool" shard -o "$work/x" --format idx "$work/pad-idx1-ubyte.gz" "$work/pad-idx1-ubyte.gz")" = 3 ] &&
    grep -q "pad-idx1-ubyte.gz: 512 bytes of junk after the gzip stream at byte offset $size " "$work/out"
ok $? "zero padding after a gzip stream is refused too"
printf '1,2,3\n4,5,6\n' | gzip -c >"$work/junk.csv.gz"
printf 'x' >>"$work/junk.csv.gz"
[ "$(status "$tool" shard -o "$work/x" "$work/junk.csv.gz")" = 3 ] &&
    grep -q "junk.csv.gz: 1 bytes of junk after the gzip stream at byte offset" "$work/out"
ok $? "junk after a gzip CSV file is refused naming it"
# A missing option value must not swallow the next option (issue 14; getopt took '--scale'
# as the output directory): a value given as the next word may not start with "--" in any
# subcommand; --opt=VALUE passes such a value.
[ "$(status "$tool" shard --output --scale 2 "$work/x.npy" "$work/y.npy")" = 2 ] &&
    grep -q "^hpctrain shard: error: --output needs a value (the next word, '--scale', is an option" "$work/out" &&
    [ ! -e "$work/--scale" ] && [ ! -e ./--scale ]
ok $? "shard --output --scale 2: exit 2, '--output needs a value'"
[ "$(status "$tool" shard -o "$work/--odd" --prefix=--p "$work/x.npy" "$work/y.npy")" = 0 ] &&
    [ -f "$work/--odd/--p-00000.h5" ]
ok $? "shard --prefix=--p: a value that starts with -- is taken in the --opt=VALUE form"
[ "$(status "$tool" train --metrics-file --log-level 2)" = 2 ] &&
    grep -q "option '--metrics-file' needs a value (the next word, '--log-level', is an option" "$work/out"
ok $? "train --metrics-file --log-level 2: exit 2, '--metrics-file' needs a value"
[ "$(status "$tool" report -o --no-plots "$work")" = 2 ] &&
    grep -q "^hpctrain report: error: -o needs a value" "$work/out"
ok $? "report -o --no-plots: exit 2, '-o needs a value'"
[ "$(status "$tool" trace merge -o --x "$work/none.json")" = 2 ] &&
    grep -q "^hpctrain trace: error: -o needs a value" "$work/out" && [ ! -e ./--x ]
ok $? "trace merge -o --x: exit 2, '-o needs a value'"
# The same shard listed twice under two names (./ and a symbolic link): refused at open.
cp "$work/npy/manifest.txt" "$work/npy/alias.txt"
sed -n 's|^shard \([^ ]* [^ ]* [^ ]*\) shard-00000.h5$|shard \1 ./shard-00000.h5|p' "$work/npy/manifest.txt" >>"$work/npy/alias.txt"
ln -s shard-00001.h5 "$work/npy/link.h5"
sed -n 's|^shard \([^ ]* [^ ]* [^ ]*\) shard-00001.h5$|shard \1 link.h5|p' "$work/npy/manifest.txt" >"$work/npy/link-line"
grep -v '^shard' "$work/npy/manifest.txt" >"$work/npy/link.txt"
grep '^shard .* shard-00001.h5$' "$work/npy/manifest.txt" >>"$work/npy/link.txt"
cat "$work/npy/link-line" >>"$work/npy/link.txt"
"$check" "$work/npy/alias.txt" 6 2 3 0 17.5 >"$work/out" 2>&1
rc1=$?
grep -q "name the same shard file ('shard-00000.h5' and './shard-00000.h5')" "$work/out"
r1=$?
"$check" "$work/npy/link.txt" 6 2 3 0 17.5 >"$work/out2" 2>&1
[ $rc1 != 0 ] && [ $r1 = 0 ] && grep -q "name the same shard file ('shard-00001.h5' and 'link.h5')" "$work/out2"
ok $? "a manifest naming one shard twice (./ and a symbolic link) is refused, naming both lines"

# Inputs that are not regular files are refused before anything reads them (issue 37, 11):
# a FIFO with no writer used to block the converter forever.
mkfifo "$work/f.csv"
rc=$(status timeout -s KILL 20 "$tool" shard -o "$work/fifo" "$work/f.csv")
[ "$rc" = 3 ] && grep -q "f.csv: not a regular file (a FIFO)" "$work/out"
ok $? "a FIFO input exits 3 at once, naming it (exit $rc)" || sed 's/^/#   /' "$work/out"
mkdir "$work/dir.csv"
[ "$(status "$tool" shard -o "$work/dir" "$work/dir.csv")" = 3 ] &&
    grep -q "not a regular file (a directory)" "$work/out"
ok $? "a directory given as input exits 3, naming it"
# .npy: only format versions 1.0, 2.0 and 3.0; one header dict with the three keys, each
# quoted, its quotes and brackets balanced.
npy_refused() { # FILE NEEDLE DESCRIPTION
    rc=$(status "$tool" shard -o "$work/bad" "$work/$1" "$work/y.npy")
    [ "$rc" = 3 ] && grep -q "$1: $2" "$work/out"
    ok $? "$3 (exit $rc)" || sed 's/^/#   /' "$work/out"
}
npy_refused v9.npy ".npy format version 9.0 is not supported" ".npy major version 9 exits 3, naming it"
npy_refused quote.npy "malformed .npy header: unknown key 'fortran_order: False, '" \
    "a .npy header with an unbalanced key quote exits 3"
npy_refused brace.npy "malformed .npy header: unbalanced braces" "a .npy header dict left open exits 3"
npy_refused nokey.npy "malformed .npy header: key 'fortran_order' is missing" \
    "a .npy header without fortran_order exits 3"

# trace merge refuses a rank file that is empty, junk or a placeholder without events (it used
# to write a merged file with that rank missing, "0 line(s) skipped", exit 0).
printf '{"traceEvents":[\n{"ph":"M","pid":0,"name":"process_name","args":{"name":"rank 0 (h)"}},\n{"ph":"X","pid":0,"tid":0,"name":"step","ts":1.5,"dur":2.0,"args":{"step":1}}\n],"displayTimeUnit":"ms"}\n' >"$work/tl0.json"
: >"$work/tl-empty.json"
printf 'hello\nworld\n' >"$work/tl-junk.json"
echo '{"traceEvents":[]}' >"$work/tl-none.json"
[ "$(status "$tool" trace merge -o "$work/m.json" "$work/tl0.json")" = 0 ] &&
    grep -q '2 events of 1 file' "$work/out" && python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$work/m.json"
ok $? "trace merge of a good rank file: exit 0, 2 events, valid JSON"
refused=0
for f in empty:'is empty' junk:'is not a timeline' none:'holds no whole event'; do
    rm -f "$work/m.json"
    [ "$(status "$tool" trace merge -o "$work/m.json" "$work/tl0.json" "$work/tl-${f%%:*}.json")" = 3 ] &&
        grep -q "^hpctrain trace: error: $work/tl-${f%%:*}.json ${f#*:}" "$work/out" &&
        [ ! -e "$work/m.json" ] || { refused=1; cat "$work/out"; }
done
ok $refused "trace merge refuses an empty, a junk and an event-less rank file, naming it (exit 3, no OUT)"

# Red team rerun (issue 37): targets a loss cannot use, labels float32 cannot hold, and an
# output that is an input are refused before anything is written.
printf '0.5,0.25,1\n0.5,0.75,nan\n' >"$work/nanlab.csv"
[ "$(status "$tool" shard -o "$work/nl" "$work/nanlab.csv")" = 3 ] &&
    grep -q "nanlab.csv: sample 1, target 0 is nan: targets must be finite" "$work/out" && [ ! -e "$work/nl" ]
ok $? "a NaN label exits 3 naming sample 1, nothing written (it was written, and training later stopped as 'diverged')"
printf '0.1,0.2,3\n0.3,0.4,16777219\n' >"$work/biglab.csv"
[ "$(status "$tool" shard -o "$work/bl" "$work/biglab.csv")" = 3 ] &&
    grep -q "biglab.csv: sample 1: the label 16777220 is beyond 2^24" "$work/out"
ok $? "a label above 2^24 exits 3 (float32 read 16777219 as 16777220 and it was stored so)"
mkdir -p "$work/same" && printf '0.1,0.2,1\n0.3,0.4,2\n' >"$work/same/data.csv"
before=$(cksum <"$work/same/data.csv")
[ "$(status "$tool" shard -o "$work/same" --manifest data.csv "$work/same/data.csv")" = 2 ] &&
    grep -q "the output $work/same/data.csv is the input $work/same/data.csv" "$work/out" &&
    [ "$(cksum <"$work/same/data.csv")" = "$before" ]
ok $? "--manifest naming the input exits 2 and leaves the input as it was (it was overwritten, exit 0)"
done_testing
