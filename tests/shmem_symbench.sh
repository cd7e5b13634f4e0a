#!/bin/bash
# shmem_symbench.sh — symbench runs every test and prints well-formed tables:
#
#   shmem_symbench.sh SYMRUN SYMBENCH NPES
#
# Each table has a title, a "# size <measure>" line and rows of a size and a
# positive number; a short run (few iterations, sizes up to 64 KiB) keeps it
# quick. The numbers themselves are not judged here (docs/performance.md).
set -u
SYMRUN=$1
SYMBENCH=$2
N=$3
out=$(timeout -k 2 120 "$SYMRUN" -n "$N" "$SYMBENCH" all --iters 200 --iters-large 4 --reps 3 \
    --max-size 64K 2>&1)
rc=$?
fails=0
fail() {
    echo "FAIL: $*"
    fails=$((fails + 1))
}
[ "$rc" -eq 0 ] || fail "symbench all exited $rc"
want="put:latency put:bandwidth get:latency get:bandwidth atomic:latency barrier:latency memcpy:bandwidth"
[ "$N" -ge 2 ] && want="pingpong:latency $want"
for t in $want; do
    test=${t%%:*} measure=${t##*:}
    col=latency_us
    [ "$measure" = bandwidth ] && col=bandwidth_GBs
    # the rows of this table: from its title to the next comment line
    rows=$(printf '%s\n' "$out" | awk -v t="# symbench $test $measure:" -v c="# size $col" '
        index($0, t) == 1 { on = 1; getline; if ($0 != c) { print "BADHEADER " $0; exit } next }
        on && /^#/ { exit }
        on { print }')
    case "$rows" in BADHEADER*) fail "$test $measure: column line is not '# size $col'"; continue ;; esac
    n=$(printf '%s\n' "$rows" | grep -c .)
    expect=1
    [ "$test" = put ] || [ "$test" = get ] || [ "$test" = memcpy ] && expect=17 # 1 B .. 64 KiB
    [ "$n" -eq "$expect" ] || fail "$test $measure: $n rows, want $expect"
    bad=$(printf '%s\n' "$rows" | awk 'NF != 2 || $1 !~ /^[0-9]+$/ || !($2 + 0 > 0)' | head -3)
    [ -z "$bad" ] || fail "$test $measure: malformed rows: $bad"
done
if [ "$fails" -ne 0 ]; then
    printf '%s\n' "$out" | sed 's/^/  | /'
    echo "shmem_symbench: FAIL"
    exit 1
fi
echo "shmem_symbench: PASS ($(printf '%s\n' "$out" | grep -c '^# symbench') tables)"
