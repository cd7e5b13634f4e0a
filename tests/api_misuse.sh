#!/bin/bash
# api_misuse.sh — misuse of the team, context, lock and active-set calls ends
# the job at once with one message naming the PE, the call and the cause:
#
#   api_misuse.sh SYMRUN CHILD NPES
#
# The last PE misuses the API while the others wait in a barrier (so a check
# made after a synchronisation would hang: every check must come first). A
# collective on SHMEM_TEAM_INVALID returns non-zero as the standard says, and
# is reported once; the child then ends the job with shmem_global_exit(3).
# symrun must exit non-zero within seconds, stderr must hold exactly one
# runtime line "<program>: PE <n>: <call>: <cause>" (the program is CHILD), and
# no PE may outlive it.
set -u
SYMRUN=$1 CHILD=$2 N=$3
V=$((N - 1))
PROG=$(basename "$CHILD")
. "$(dirname "$0")/shmem_lib.sh" # TMP, TOKEN, FAILS, CASES, survivors
echo "api_misuse: $N PEs"

# misuse MODE CALL CAUSE-REGEX
misuse() {
    local mode=$1 call=$2 cause=$3
    CASES=$((CASES + 1))
    local t0 t1 rc
    t0=$(date +%s%N)
    timeout -k 2 30 "$SYMRUN" -n "$N" --timeout 20 "$CHILD" "$mode" "$TOKEN" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    t1=$(date +%s%N)
    local ms=$(((t1 - t0) / 1000000)) why=""
    [ "$rc" -ne 0 ] || why="symrun exited 0"
    [ "$rc" -ne 124 ] || why="a hang: the safety timeout ended symrun"
    [ -z "$why" ] && [ "$ms" -gt 10000 ] && why="took $ms ms"
    local re="^$PROG: PE $V: $call: $cause"
    [ -z "$why" ] && [ "$(grep -cE -- "$re" "$TMP/err")" -ne 1 ] && why="no line matches /$re/"
    [ -z "$why" ] && [ "$(grep -c "^$PROG:" "$TMP/err")" -ne 1 ] && why="not exactly one runtime message"
    [ -z "$why" ] && grep -q "returned instead of ending the job" "$TMP/out" && why="the call returned"
    [ -z "$why" ] && grep -q "killed by signal" "$TMP/err" && why="a PE crashed"
    local left
    left=$(survivors)
    [ -z "$why" ] && [ -n "$left" ] && why="processes outlived symrun: $left"
    if [ -n "$why" ]; then
        echo "FAIL [$mode]: $why (exit status $rc after $ms ms)"
        sed 's/^/  stderr: /' "$TMP/err" | head -10
        sed 's/^/  stdout: /' "$TMP/out" | head -5
        FAILS=$((FAILS + 1))
    else
        echo "ok   [$mode] $(grep "^$PROG:" "$TMP/err" | cut -c1-150)"
    fi
}

SET="\(PE_start 0, logPE_stride"
if [ "$N" -gt 1 ]; then
    misuse aset_not_member shmem_barrier "PE $V is not in the active set $SET 0, PE_size $V\): only the set's PEs may call"
else
    misuse aset_not_member shmem_barrier "the active set $SET 0, PE_size 0\) does not fit in 1 PEs?"
fi
misuse aset_too_big shmem_fcollect32 "the active set $SET 0, PE_size $((N + 1))\) does not fit in $N PEs?"
misuse aset_bad_stride shmem_collect64 "the active set $SET -1, PE_size $N\) does not fit"
misuse aset_bad_root shmem_broadcast64 "PE_root $N is out of range: it is an index into the active set, which has $N PEs? \(0 \.\. $V\)"
misuse toall_negative shmem_long_sum_to_all "nreduce -1 is negative"
misuse toall_private shmem_long_max_to_all "source \(0x[0-9a-f]+, 8 bytes\) is not symmetric"
misuse ctx_invalid shmem_ctx_long_p "the context is SHMEM_CTX_INVALID"
misuse ctx_team_pe shmem_ctx_long_atomic_inc "PE $N is out of range: the team has $N PEs? \(0 \.\. $V\)"
misuse ctx_destroy_default shmem_ctx_destroy "SHMEM_CTX_DEFAULT cannot be destroyed"
misuse team_destroy_world shmem_team_destroy "SHMEM_TEAM_WORLD and SHMEM_TEAM_SHARED cannot be destroyed"
misuse team_bcast_root shmem_long_broadcast "PE $N is out of range: the team has $N PEs?"
misuse team_reduce_private shmem_long_sum_reduce "address 0x[0-9a-f]+ \(for PE $V\) is not symmetric"
misuse null_team shmem_long_sum_reduce "the team is SHMEM_TEAM_INVALID \(this PE is not in the team, or the split that made it failed\): nothing done, non-zero returned"
misuse lock_private shmem_set_lock "the lock at 0x[0-9a-f]+ is not symmetric"
misuse clear_lock_private shmem_clear_lock "the lock at 0x[0-9a-f]+ is not symmetric"
misuse test_lock_private shmem_test_lock "the lock at 0x[0-9a-f]+ is not symmetric"

if [ "$FAILS" -ne 0 ]; then
    echo "api_misuse: FAIL ($FAILS of $CASES cases)"
    exit 1
fi
echo "api_misuse: PASS ($CASES cases)"
