#!/bin/bash
# api_examples.sh — run the classic example programs and check what they print:
#
#   api_examples.sh SYMRUN EXAMPLES_DIR NPES
#
# ring (a token round the PEs with put + wait_until), pi (a sum reduction),
# circular_shift (puts into the right-hand neighbour) and alltoall. Each must
# exit 0, print exactly the expected lines, and never "WRONG".
set -u
SYMRUN=$1 DIR=$2 N=$3
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
FAILS=0
s=s; [ "$N" = 1 ] && s=""

# expect NAME REGEX COUNT: the output of NAME has COUNT lines matching REGEX
expect() {
    local got
    got=$(grep -cE -- "$2" "$TMP/$1.out")
    if [ "$got" -ne "$3" ]; then
        echo "FAIL [$1 on $N PE$s]: $got lines match /$2/, want $3"
        FAILS=$((FAILS + 1))
    fi
}

for ex in ring pi circular_shift alltoall; do
    timeout -k 2 60 "$SYMRUN" -n "$N" --timeout 50 "$DIR/$ex" >"$TMP/$ex.out" 2>"$TMP/$ex.err"
    rc=$?
    if [ "$rc" -ne 0 ]; then
        echo "FAIL [$ex on $N PE$s]: exit status $rc"
        sed 's/^/  stderr: /' "$TMP/$ex.err" | head -5
        FAILS=$((FAILS + 1))
    fi
    expect "$ex" "WRONG" 0
    sed "s/^/  $ex: /" "$TMP/$ex.out" | head -4
done

expect ring "^ring: the token went 10 times round $N PE$s: $((10 * N)) hops \(expected $((10 * N))\)$" 1
expect ring "." 1
expect pi "^pi: $N PE$s, 10000000 intervals: pi is approximately 3\.141592653589[0-9]*, error [0-9.]+e-[0-9]+$" 1
expect pi "." 1
expect circular_shift "." "$N"
expect alltoall "." "$N"
for ((p = 0; p < N; p++)); do
    l=$(((p + N - 1) % N))
    expect circular_shift "^circular_shift: PE $p got $((l * 100))\.\.$((l * 100 + 7)) from PE $l$" 1
    expect alltoall "^alltoall: PE $p received $N blocks of 4 elements, 0 wrong$" 1
done

if [ "$FAILS" -ne 0 ]; then
    echo "api_examples: FAIL ($FAILS problems on $N PE$s)"
    exit 1
fi
echo "api_examples: PASS (ring, pi, circular_shift, alltoall on $N PE$s)"
