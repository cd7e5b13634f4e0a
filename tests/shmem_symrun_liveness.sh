#!/bin/bash
# shmem_symrun_liveness.sh — a stopped or wedged PE never holds a job:
#
#   shmem_symrun_liveness.sh SYMRUN CHILD NPES
#
# --hang-timeout ends a job whose PE stopped (SIGSTOP) after shmem_init or
# before it, naming the PE; --max-restarts starts such a job again; PEs that
# only wait for each other are not hung (--timeout ends them); a second
# SIGTERM to symrun kills PEs that ignore the first. Each case ends in seconds
# with the right status, and no process outlives symrun (a stopped one
# included).
set -u
NAME=shmem_symrun_liveness
SYMRUN=$1
CHILD=$2
N=$3
. "$(dirname "$0")/shmem_lib.sh"
V=$((N - 1)) # the victim PE
echo "$NAME: $N PEs, symrun $SYMRUN"

# ---- a PE stops after shmem_init: named, the job ends with 124 ----
run_case stop 124 8 -n "$N" --hang-timeout 1.5 "$CHILD" stop "$TOKEN"
expect_err "^symrun: PE $V \(pid [0-9]+\) made no progress for 1.5 s \(--hang-timeout\): it is stopped" 1
[ "$MS" -ge 1400 ] || fail "the 1.5 s hang timeout fired after $MS ms"

# ---- before shmem_init: the others wait for it in the bootstrap ----
run_case preinit_stop 124 8 -n "$N" --hang-timeout 1.5 "$CHILD" preinit_stop "$TOKEN"
expect_err "^symrun: PE $V \(pid [0-9]+\) made no progress for 1.5 s" 1

# ---- --max-restarts covers a hang: stopped once, then the job runs ----
run_case restart 0 12 -n "$N" --hang-timeout 1.5 --max-restarts 1 "$CHILD" stop_once "$TOKEN"
expect_err "made no progress for 1.5 s" 1
expect_err "restarting the job \(restart 1 of 1\)" 1
expect_out "ok after restart 1" "$N"
run_case restart_gives_up 124 12 -n "$N" --hang-timeout 1 --max-restarts 1 "$CHILD" stop "$TOKEN"
expect_err "made no progress for 1 s" 2
expect_err "giving up after 1 restart$" 1

# ---- waiting is progress: PEs blocked on each other are not "hung" ----
run_case waiting 124 8 -n "$N" --hang-timeout 1 --timeout 3 "$CHILD" hang "$TOKEN"
expect_err "^symrun: timeout: the job ran longer than 3 s" 1
expect_err "made no progress" 0

# ---- signals: the second one kills PEs that ignore the first ----
CASE=second_sigterm
CASES=$((CASES + 1))
CMDLINE="symrun -n $N $CHILD ignore_term (SIGTERM twice)"
"$SYMRUN" -n "$N" "$CHILD" ignore_term "$TOKEN" >"$OUT" 2>"$ERR" &
pid=$!
(sleep 20 && kill -KILL "$pid") 2>/dev/null & # the safety net: symrun itself, signalled
watchdog=$!
sleep 1
kill -TERM "$pid"
sleep 1
kill -0 "$pid" 2>/dev/null || fail "symrun ended after one SIGTERM; the PEs ignore it"
t1=$(date +%s%N)
kill -TERM "$pid"
wait "$pid"
RC=$?
MS=$((($(date +%s%N) - t1) / 1000000))
kill "$watchdog" 2>/dev/null
[ "$RC" -eq 143 ] || fail "symrun exited $RC after a second SIGTERM, want 143"
[ "$MS" -le 2000 ] || fail "took $MS ms after the second SIGTERM"
expect_err "received Terminated; passing it to the PEs" 1
expect_err "received Terminated again; killing the PEs" 1
left=$(survivors)
[ -z "$left" ] || fail "processes outlived symrun: $left"

# ---- bad values: a usage message and exit 2 ----
for bad in nan inf -1 0 1e3 0x10 " 5" ""; do
    run_case "hang_timeout '$bad'" 2 3 -n "$N" --hang-timeout "$bad" "$CHILD" ok "$TOKEN"
    expect_err "^symrun: --hang-timeout '$bad' is not a number of seconds" 1
done

finish
