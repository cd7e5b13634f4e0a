# shmem_lib.sh — helpers for the driver scripts that run symrun as a child
# (tests/shmem_symrun.sh, tests/shmem_misuse.sh, tests/api_misuse.sh).
# Sourced, not run.
#
# run_case NAME WANT_RC MAX_SECONDS [symrun args...]
#   runs symrun with the arguments under a safety timeout, and records:
#   RC (its exit status), MS (elapsed milliseconds), OUT and ERR (files).
#   WANT_RC is a number or "nonzero". It fails the case when the status is
#   wrong, when it took longer than MAX_SECONDS, when a process carrying
#   $TOKEN outlived it, or when /dev/shm changed.
# expect_err NAME REGEX [COUNT]  stderr has a line matching REGEX (COUNT lines)
# expect_out NAME REGEX [COUNT]  the same for stdout
# finish                         prints the summary, exits 1 on any failure
# survivors                      processes carrying $TOKEN still alive
#
# /dev/shm: when this shell may make a private mount namespace (root), each
# symrun runs with a fresh, empty tmpfs on /dev/shm, so that other jobs on the
# machine cannot disturb the before/after comparison; otherwise the machine's
# /dev/shm is compared.

FAILS=0
CASES=0
TMP=$(mktemp -d)
OUT=$TMP/out
ERR=$TMP/err
TOKEN="symtest-$$-$RANDOM"
trap 'rm -rf "$TMP"' EXIT

PRIVATE_SHM=0
if [ "$(id -u)" = 0 ] && unshare -m sh -c 'mount -t tmpfs -o size=64m tmpfs /dev/shm' 2>/dev/null; then
    PRIVATE_SHM=1
fi

# survivors: the processes carrying $TOKEN still alive after the kernel has had
# half a second to reap them (empty when none).
survivors() {
    local left=""
    for _ in 1 2 3 4 5; do
        left=$(ps -eo pid=,args= | grep -F -- "$TOKEN" | grep -v grep || true)
        [ -z "$left" ] && break
        sleep 0.1
    done
    echo "$left"
}

fail() {
    echo "FAIL [$CASE]: $*"
    echo "  command: $CMDLINE"
    echo "  exit status $RC after ${MS} ms"
    sed 's/^/  stderr: /' "$ERR" | head -20
    sed 's/^/  stdout: /' "$OUT" | head -10
    FAILS=$((FAILS + 1))
}

shm_listing() { ls -la --time-style=+ /dev/shm 2>/dev/null | tail -n +2 | sort; }

# The symrun command, in a private /dev/shm when possible; prints the listing
# of /dev/shm after it ends on fd 3.
run_symrun() {
    if [ "$PRIVATE_SHM" = 1 ]; then
        unshare -m sh -c 'mount -t tmpfs -o size=64m tmpfs /dev/shm || exit 99
            ls -la --time-style=+ /dev/shm | tail -n +2 | sort > "$0.before"
            "$@"; rc=$?
            ls -la --time-style=+ /dev/shm | tail -n +2 | sort > "$0.after"
            exit $rc' "$TMP/shm" timeout -k 2 60 "$SYMRUN" "$@"
    else
        shm_listing > "$TMP/shm.before"
        timeout -k 2 60 "$SYMRUN" "$@"
        local rc=$?
        shm_listing > "$TMP/shm.after"
        return $rc
    fi
}

run_case() {
    CASE=$1
    local want=$2 max=$3
    shift 3
    CASES=$((CASES + 1))
    CMDLINE="symrun $*"
    local t0 t1
    t0=$(date +%s%N)
    run_symrun "$@" >"$OUT" 2>"$ERR"
    RC=$?
    t1=$(date +%s%N)
    MS=$(((t1 - t0) / 1000000))
    if [ "$want" = nonzero ]; then
        [ "$RC" -ne 0 ] || fail "symrun exited 0, want non-zero"
    else
        [ "$RC" -eq "$want" ] || fail "symrun exited $RC, want $want"
    fi
    [ "$RC" -ne 124 ] || [ "$want" = 124 ] || fail "the safety timeout ended symrun (a hang)"
    [ "$MS" -le $((max * 1000)) ] || fail "took $MS ms, more than ${max} s"
    if ! cmp -s "$TMP/shm.before" "$TMP/shm.after"; then
        fail "/dev/shm changed: $(diff "$TMP/shm.before" "$TMP/shm.after" | grep '^[<>]' | tr '\n' ' ')"
    fi
    # No PE may outlive symrun.
    local left
    left=$(survivors)
    [ -z "$left" ] || fail "processes outlived symrun: $left"
}

# expect_in FILE NAME REGEX [COUNT]
expect_in() {
    local file=$1 what=$2 re=$3 count=${4:-}
    local n
    n=$(grep -cE -- "$re" "$file")
    if [ -n "$count" ]; then
        [ "$n" -eq "$count" ] || fail "$what: $n lines match /$re/, want $count"
    else
        [ "$n" -ge 1 ] || fail "$what: no line matches /$re/"
    fi
}
expect_err() { expect_in "$ERR" stderr "$@"; }
expect_out() { expect_in "$OUT" stdout "$@"; }

finish() {
    local where="the machine's /dev/shm"
    [ "$PRIVATE_SHM" = 1 ] && where="a private /dev/shm per run"
    if [ "$FAILS" -ne 0 ]; then
        echo "$NAME: FAIL ($FAILS of $CASES cases; /dev/shm checked in $where)"
        exit 1
    fi
    echo "$NAME: PASS ($CASES cases; /dev/shm checked in $where)"
    exit 0
}
