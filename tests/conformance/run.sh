#!/bin/bash
# run.sh — build programs written the way outside OpenSHMEM suites and
# benchmarks are written (tests/conformance/*.c) with the build tree's symcc,
# as an outside user would, and run them under symrun.
#
#   run.sh build BUILD_DIR OUT_DIR     compile every program and variant
#   run.sh run   BUILD_DIR OUT_DIR N   run each one that takes N PEs
#
# Each source says in its header comment:
#   @variants A ; B ...   extra compiler flags per build (default: one build);
#                         "@rc N" inside a variant: the exit status it must end with
#   @npes 2 4             the PE counts it runs at
# Every build uses -O2 -Wall -Wextra -Werror (our headers must not make an
# outside program warn). A run passes when it exits with the expected status,
# prints a PASS / Passed line, and prints no FAIL / Failed / WRONG.
set -u
mode=$1 BUILD=$2 OUT=$3
SRC=$(cd "$(dirname "$0")" && pwd)
SYMCC=$BUILD/symcc
SYMRUN=$BUILD/symrun
FAILS=0

fail() {
    echo "FAIL $*"
    FAILS=$((FAILS + 1))
}

field() { # field FILE TAG: the text after @TAG on its line
    grep -m1 "@$2" "$1" | sed "s/.*@$2//; s/\*\/.*//"
}

if [ "$mode" = build ]; then
    [ -x "$SYMCC" ] || { echo "FAIL: $SYMCC is missing (build the project first)"; exit 1; }
    rm -rf "$OUT"
    mkdir -p "$OUT"
    : >"$OUT/manifest"
    for src in "$SRC"/*.c; do
        name=$(basename "$src" .c)
        variants=$(field "$src" variants)
        npes=$(field "$src" npes)
        [ -n "$npes" ] || npes="2 4"
        k=0
        IFS=';' read -ra vs <<<"${variants:- }"
        for v in "${vs[@]}"; do
            rc=0
            if [[ "$v" =~ @rc[[:space:]]+([0-9]+) ]]; then
                rc=${BASH_REMATCH[1]}
                v=${v//@rc ${rc}/}
            fi
            exe="$OUT/$name.$k"
            # shellcheck disable=SC2086 # the variant's flags are words
            if ! "$SYMCC" -O2 -Wall -Wextra -Werror $v "$src" -o "$exe" >"$exe.log" 2>&1; then
                fail "[$name $v]: symcc could not build it:"
                sed 's/^/  /' "$exe.log" | head -20
            else
                echo "$exe|$rc|$npes|$name$v" >>"$OUT/manifest"
                echo "built $name $v"
            fi
            k=$((k + 1))
        done
    done
    # The way autotools builds: compile, then link the object, in two steps.
    if "$SYMCC" -O2 -c "$SRC/uh_rma.c" -o "$OUT/two_step.o" &&
        "$SYMCC" "$OUT/two_step.o" -o "$OUT/two_step"; then
        echo "$OUT/two_step|0|2 4|uh_rma (compiled and linked in two steps)" >>"$OUT/manifest"
        echo "built uh_rma in two steps"
    else
        fail "[two-step build]: symcc -c then symcc prog.o failed"
    fi
    "$SYMCC" -showme "$SRC/uh_rma.c" | grep -q -- "-lsymshmem" || fail "[symcc -showme]: no -lsymshmem"
    # The installed tree's symcc too (headers such as mpp/shmem.h must be installed).
    if cmake --install "$BUILD" --prefix "$OUT/prefix" >"$OUT/install.log" 2>&1 &&
        "$OUT/prefix/bin/symcc" -O2 -Wall -Wextra -Werror "$SRC/uh_rma.c" -o "$OUT/installed"; then
        echo "$OUT/installed|0|2 4|uh_rma (built with the installed symcc)" >>"$OUT/manifest"
        echo "built uh_rma with the installed symcc"
    else
        fail "[installed symcc]: could not install or build uh_rma.c"
        tail -5 "$OUT/install.log"
    fi
    [ "$FAILS" -eq 0 ] || { echo "conformance build: FAIL ($FAILS)"; exit 1; }
    echo "conformance build: PASS ($(wc -l <"$OUT/manifest") programs)"
    exit 0
fi

N=$4
[ -f "$OUT/manifest" ] || { echo "FAIL: $OUT/manifest is missing (run.sh build first)"; exit 1; }
ran=0
while IFS='|' read -r exe rc npes what; do
    case " $npes " in *" $N "*) ;; *) continue ;; esac
    ran=$((ran + 1))
    t0=$(date +%s%N)
    timeout -k 2 90 "$SYMRUN" -n "$N" --timeout 60 "$exe" >"$exe.out.$N" 2>"$exe.err.$N"
    got=$?
    ms=$((($(date +%s%N) - t0) / 1000000))
    why=""
    [ "$got" -eq "$rc" ] || why="exit status $got, want $rc"
    [ -z "$why" ] && ! grep -qE "PASS|Passed" "$exe.out.$N" && why="no PASS line"
    [ -z "$why" ] && grep -qE "FAIL|Failed|WRONG" "$exe.out.$N" && why="it reported a failure"
    if [ -n "$why" ]; then
        fail "[$what on $N PEs]: $why ($ms ms)"
        sed 's/^/  stdout: /' "$exe.out.$N" | grep -E "FAIL|Failed|WRONG|PASS" | head -10
        sed 's/^/  stderr: /' "$exe.err.$N" | head -10
    else
        echo "ok   [$what on $N PEs] $ms ms: $(grep -E "PASS|Passed" "$exe.out.$N" | tail -1)"
    fi
done <"$OUT/manifest"
[ "$ran" -gt 0 ] || fail "no program runs on $N PEs"
if [ "$FAILS" -ne 0 ]; then
    echo "conformance on $N PEs: FAIL ($FAILS of $ran)"
    exit 1
fi
echo "conformance on $N PEs: PASS ($ran programs)"
