#!/bin/bash
# shmem_symrun.sh — symrun's failure handling, run as a child:
#
#   shmem_symrun.sh SYMRUN CHILD NPES
#
# A PE that aborts, exits non-zero, is SIGKILLed, exits 0 without finalizing,
# dies before shmem_init, or hangs past --timeout; shmem_global_exit; SIGTERM
# to symrun itself; bad arguments (usage + exit 2); --tag-output;
# --max-restarts. Every case must end in seconds with the right status and
# message, leave no process behind and leave /dev/shm as it was. Also: every
# symmetric memory file is mode 0600.
set -u
NAME=shmem_symrun
SYMRUN=$1
CHILD=$2
N=$3
. "$(dirname "$0")/shmem_lib.sh"
V=$((N - 1)) # the victim PE
echo "$NAME: $N PEs, symrun $SYMRUN"

# ---- a clean job ----
run_case ok 0 10 -n "$N" "$CHILD" ok "$TOKEN"
expect_out "^PE [0-9]+ of $N: ok$" "$N"
run_case modes 0 10 -n "$N" "$CHILD" modes "$TOKEN"
expect_out "all mode 0600" "$N"

# A PE that finalizes and exits at once while the others still run is fine,
# however fast symrun notices its exit (several times: it was a race).
for i in 1 2 3; do
    run_case "linger $i" 0 10 -n "$N" "$CHILD" linger "$TOKEN"
done

# ---- a PE fails: symrun ends the rest within a second or so ----
others="ending the other $V PE"
[ "$N" -gt 1 ] || others=""
run_case abort 134 5 -n "$N" "$CHILD" abort "$TOKEN"
expect_err "^symrun: PE $V \(pid [0-9]+\) was killed by signal 6 \(Aborted\)"
[ -z "$others" ] || expect_err "$others"

run_case exit3 3 5 -n "$N" "$CHILD" exit3 "$TOKEN"
expect_err "^symrun: PE $V \(pid [0-9]+\) exited with status 3"

run_case sigkill 137 5 -n "$N" "$CHILD" sigkill "$TOKEN"
expect_err "^symrun: PE $V \(pid [0-9]+\) was killed by signal 9 \(Killed\)"

run_case preinit_abort 134 5 -n "$N" "$CHILD" preinit_abort "$TOKEN"
expect_err "^symrun: PE $V \(pid [0-9]+\) was killed by signal 6"

if [ "$N" -gt 1 ]; then
    run_case exit0_nofinalize nonzero 5 -n "$N" "$CHILD" exit0_nofinalize "$TOKEN"
    expect_err "^symrun: PE $V \(pid [0-9]+\) exited with status 0 without calling shmem_finalize"
fi

run_case global_exit 5 5 -n "$N" "$CHILD" global_exit "$TOKEN"
expect_err "^symrun: PE $V .*shmem_global_exit\(5\)"

# ---- a hang: --timeout ends it ----
run_case timeout 124 6 -n "$N" --timeout 2 "$CHILD" hang "$TOKEN"
expect_err "^symrun: timeout: the job ran longer than 2 s; ending $N PE"
[ "$MS" -ge 1900 ] || fail "the 2 s timeout fired after $MS ms"

# ---- SIGTERM to symrun: passed to the PEs, everything ends ----
CASE=sigterm
CASES=$((CASES + 1))
CMDLINE="symrun -n $N $CHILD hang (SIGTERM after 1 s)"
t0=$(date +%s%N)
timeout -k 2 30 "$SYMRUN" -n "$N" "$CHILD" hang "$TOKEN" >"$OUT" 2>"$ERR" &
pid=$!
sleep 1
pkill -TERM -P "$pid"
wait "$pid"
RC=$?
MS=$((($(date +%s%N) - t0) / 1000000))
[ "$RC" -ne 0 ] || fail "symrun exited 0 after SIGTERM while its PEs hung"
[ "$RC" -ne 124 ] || fail "symrun did not end after SIGTERM (the safety timeout did)"
[ "$MS" -le 4000 ] || fail "took $MS ms after SIGTERM"
expect_err "received Terminated; passing it to the PEs"
sleep 0.2
left=$(ps -eo pid=,args= | grep -F -- "$TOKEN" | grep -v grep || true)
[ -z "$left" ] || fail "processes outlived symrun: $left"

# ---- --max-restarts: the job fails once, then succeeds ----
run_case restart 0 10 -n "$N" --max-restarts 2 "$CHILD" restart "$TOKEN"
expect_err "restarting the job \(restart 1 of 2\)"
expect_out "ok after restart 1" "$N"

# ---- --tag-output ----
run_case tag 0 10 -n "$N" --tag-output "$CHILD" tag "$TOKEN"
for pe in $(seq 0 $V); do
    expect_out "^\[PE $pe\] line (one|two|three) from $pe$" 3
    expect_out "^\[PE $pe\] partial from $pe$" 1
    expect_err "^\[PE $pe\] err from $pe$" 1
done
untagged=$(grep -cvE '^\[PE [0-9]+\] ' "$OUT")
[ "$untagged" -eq 0 ] || fail "$untagged stdout lines without a [PE n] tag"

# ---- bad arguments: a usage message and exit 2, nothing started ----
nonexec=$TMP/not-executable
echo 'echo hi' >"$nonexec"
chmod 644 "$nonexec"
bad_args() {
    local name=$1 why=$2
    shift 2
    run_case "$name" 2 3 "$@"
    expect_err "^usage: symrun -n N"
    expect_err "$why"
}
bad_args no_args "give the number of PEs"
bad_args n_zero "between 1 and" -n 0 "$CHILD" ok "$TOKEN"
bad_args n_negative "between 1 and" -n -3 "$CHILD" ok "$TOKEN"
bad_args n_word "is not a whole number" -n two "$CHILD" ok "$TOKEN"
bad_args n_missing_value "-n needs a value" -n
bad_args no_program "no program to run" -n "$N"
bad_args missing_program "does not exist" -n "$N" "$TMP/no-such-program"
bad_args not_in_path "was not found in PATH" -n "$N" no-such-program-$TOKEN
bad_args not_executable "is not executable" -n "$N" "$nonexec"
bad_args directory "is not executable" -n "$N" "$TMP"
bad_args bad_timeout "--timeout takes a positive number" -n "$N" --timeout -1 "$CHILD" ok
# no timeout in disguise, no wrap-around
bad_args timeout_nan "--timeout 'nan' is not a number of seconds" -n "$N" --timeout nan "$CHILD" ok
bad_args timeout_inf "--timeout 'inf' is not a number of seconds" -n "$N" --timeout inf "$CHILD" ok
bad_args restarts_wrap "--max-restarts '4294967295' is not a whole number between 0 and" \
    -n "$N" --max-restarts 4294967295 "$CHILD" ok
bad_args n_wrap "the number of PEs '4294967297' is not a whole number between 1 and 4096" \
    -n 4294967297 "$CHILD" ok
bad_args spare_alone "--spare starts the PEs of a restart ahead of time: give --max-restarts K too" \
    -n "$N" --spare "$CHILD" ok
bad_args unknown_option "unknown option '--frobnicate'" -n "$N" --frobnicate "$CHILD" ok

finish
