#!/bin/bash
# shmem_symrun_output.sh — when a PE fails, what the PEs said reaches the user:
#
#   shmem_symrun_output.sh SYMRUN CHILD NPES
#
# symrun gives the other PEs a moment to end by themselves (they often saw
# the same error) and lets every PE's output drain before it ends them, so a
# PE's explanation is never cut off; each case runs many times, since losing
# it was a race (about 1 run in 8). A usage error (exit status 2) is said
# once, plainly, not as a crash.
#   explain   the last PE prints 200 lines to stderr and exits 1; the others
#             wait in a barrier
#   explain0  PE 0 prints them (a little late) and exits 1; the others exit 1
#             at once
set -u
NAME=shmem_symrun_output
SYMRUN=$1
CHILD=$2
N=$3
RUNS=${RUNS:-30}
. "$(dirname "$0")/shmem_lib.sh"
V=$((N - 1))
echo "$NAME: $N PEs, $RUNS runs per case, symrun $SYMRUN"

# explained NAME PE TAG: the whole explanation of PE arrived (TAG: the
# --tag-output prefix of its lines, or empty)
explained() {
    local pe=$2 tag=$3
    expect_err "^${tag}PE $pe: explanation line +[0-9]+: " 200
    expect_err "^${tag}END OF EXPLANATION from PE $pe$" 1
}

for i in $(seq "$RUNS"); do
    run_case "explain $i" 1 5 -n "$N" "$CHILD" explain "$TOKEN"
    explained "explain $i" "$V" ""
    expect_err "^symrun: PE $V \(pid [0-9]+\) exited with status 1" 1
    [ "$N" -eq 1 ] || expect_err "ending the other $V PE" 1
done
for i in $(seq "$RUNS"); do
    run_case "explain0 $i" 1 5 -n "$N" "$CHILD" explain0 "$TOKEN"
    explained "explain0 $i" 0 ""
    expect_err "^symrun: PE [0-9]+ \(pid [0-9]+\) exited with status 1" 1
done
for i in $(seq $((RUNS / 3))); do
    run_case "explain --tag-output $i" 1 5 -n "$N" --tag-output "$CHILD" explain "$TOKEN"
    explained "explain --tag-output $i" "$V" "\[PE $V\] "
    run_case "explain0 --tag-output $i" 1 5 -n "$N" --tag-output "$CHILD" explain0 "$TOKEN"
    explained "explain0 --tag-output $i" 0 "\[PE 0\] "
done

# a usage error: the program's usage, then one plain line from symrun
for i in 1 2 3; do
    run_case "usage $i" 2 5 -n "$N" "$CHILD" usage "$TOKEN"
    expect_err "^usage: shmem_symrun_child" 1
    expect_err "^symrun: " 1
    expect_err "^symrun: PE [0-9]+ exited with status 2 \(a usage error\)" 1
done

finish
