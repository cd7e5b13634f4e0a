#!/usr/bin/env bash
# net_bootstrap.sh — the env (torchrun-style) bootstrap on loopback: a normal
# start, and every way it can go wrong. Each must end with a clear message
# within its timeout; none may hang.
#   net_bootstrap.sh CHILD
set -u
child=$1
fails=0
port=$((20000 + RANDOM % 20000))
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT

# launch NAME WORLD "RANKS" [VAR=VALUE...]: start the ranks given, in the
# background, each with its own log; extra variables apply to all of them.
launch() {
    local name=$1 world=$2 ranks=$3
    shift 3
    port=$((port + 1))
    pids=()
    for r in $ranks; do
        env RANK=$r WORLD_SIZE=$world MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
            SYMTRAIN_JOB_TOKEN=secret-$$ SYMTRAIN_BOOT_TIMEOUT=4 "$@" \
            timeout 30 "$child" >"$log/$name.$r" 2>&1 &
        pids+=($!)
    done
}
# finish: wait for the launched ranks; sets rc[r] per rank in launch order.
finish() {
    rcs=()
    for p in "${pids[@]}"; do
        wait "$p"
        rcs+=($?)
    done
}
expect() { # expect WHAT CONDITION...
    local what=$1
    shift
    if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fails=$((fails + 1)); fi
}
has() { grep -q -- "$2" "$log/$1"; }

# 1. three ranks start and finish
launch good 3 "0 1 2"
finish
expect "three ranks finish" test "${rcs[*]}" = "0 0 0"

# 2. strangers on the port change nothing: one sends junk, one claims rank 1
# without the token, one connects and says nothing; then the real rank 1 comes
launch stranger 2 "0"
sleep 0.5
(exec 3<>/dev/tcp/127.0.0.1/$port && head -c 100 /dev/urandom >&3 && sleep 0.3) 2>/dev/null
(exec 3<>/dev/tcp/127.0.0.1/$port && head -c 32 /dev/zero >&3 && printf '\012\000\000\000\010\000\000\000\001\000\000\000\002\000\000\000' >&3 && sleep 0.3) 2>/dev/null
(exec 3<>/dev/tcp/127.0.0.1/$port && sleep 2) 2>/dev/null &
silent=$!
env RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port SYMTRAIN_JOB_TOKEN=secret-$$ \
    SYMTRAIN_BOOT_TIMEOUT=4 timeout 30 "$child" >"$log/stranger.1" 2>&1 &
pids+=($!)
finish
wait $silent
expect "strangers without the token change nothing" test "${rcs[*]}" = "0 0"
expect "the store says it rejected them" has stranger.0 "rejected a connection that did not know the job token"

# 3. a rank with the wrong token is refused and says why; the job fails
launch token 2 "0"
env RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port SYMTRAIN_JOB_TOKEN=wrong \
    SYMTRAIN_BOOT_TIMEOUT=4 timeout 30 "$child" >"$log/token.1" 2>&1 &
pids+=($!)
start=$SECONDS
finish
expect "wrong token: both ranks fail" test "${rcs[0]}" != 0 -a "${rcs[1]}" != 0
expect "wrong token: it says so" has token.1 "SYMTRAIN_JOB_TOKEN differs from rank 0's"
expect "wrong token: rank 0 names the missing rank" has token.0 "never reached the job's store.*: 1"
expect "wrong token: within the timeout" test $((SECONDS - start)) -lt 15

# 4. a rank that never arrives is named, within the timeout
launch missing 3 "0 1"
start=$SECONDS
finish
expect "missing rank: the others fail" test "${rcs[*]}" != "0 0"
expect "missing rank: it is named" has missing.1 "never reached the job's store at 127.0.0.1:$port within 4 s (SYMTRAIN_BOOT_TIMEOUT): 2"
expect "missing rank: within the timeout" test $((SECONDS - start)) -lt 15

# 5. nothing at MASTER_ADDR:MASTER_PORT: the address is named
launch unreachable 2 "1"
finish
expect "unreachable store: fails" test "${rcs[0]}" != 0
expect "unreachable store: names the address" has unreachable.1 "cannot reach the job's store at 127.0.0.1:$port"

# 6. settings missing or wrong
launch noaddr 2 "0" MASTER_ADDR=
finish
expect "MASTER_ADDR unset: named" has noaddr.0 "MASTER_ADDR is not set"
launch notoken 2 "0" SYMTRAIN_JOB_TOKEN=
finish
expect "token unset: named" has notoken.0 "SYMTRAIN_JOB_TOKEN is not set"
launch badrank 2 "5"
finish
expect "RANK >= WORLD_SIZE: named" has badrank.5 "RANK=5 and WORLD_SIZE=2 do not fit"
# a rank or size past what an int holds: refused at once, not wrapped negative
# (a negative rank 0 never arrives, so rank 2^31 would wait out the timeout)
launch bigrank 2147483649 "2147483648"
start=$SECONDS
finish
expect "RANK >= 2^31: fails" test "${rcs[0]}" != 0
expect "RANK >= 2^31: named" has bigrank.2147483648 "RANK='2147483648' is not a whole number from 0 to 2147483646"
expect "RANK >= 2^31: at once" test $((SECONDS - start)) -lt 3
launch bigworld 4294967296 "0"
finish
expect "WORLD_SIZE >= 2^31: named" has bigworld.0 "WORLD_SIZE='4294967296' is not a whole number from 1 to 2147483647"

# 7. ranks that disagree on WORLD_SIZE, or on the heap size
launch world 2 "0"
env RANK=1 WORLD_SIZE=3 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port SYMTRAIN_JOB_TOKEN=secret-$$ \
    SYMTRAIN_BOOT_TIMEOUT=4 timeout 30 "$child" >"$log/world.1" 2>&1 &
pids+=($!)
finish
expect "WORLD_SIZE mismatch: both fail" test "${rcs[0]}" != 0 -a "${rcs[1]}" != 0
expect "WORLD_SIZE mismatch: said" has world.1 "says WORLD_SIZE=3 but rank 0 says 2"
launch heap 2 "0" SYMTRAIN_SYMMETRIC_SIZE=64M
env RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port SYMTRAIN_JOB_TOKEN=secret-$$ \
    SYMTRAIN_SYMMETRIC_SIZE=128M timeout 30 "$child" >"$log/heap.1" 2>&1 &
pids+=($!)
finish
expect "heap size mismatch: fails" test "${rcs[0]}" != 0 -a "${rcs[1]}" != 0
expect "heap size mismatch: said" grep -qh "symmetric heap sizes differ" "$log/heap.0" "$log/heap.1"

# 8. a rank killed after start-up: the others end within seconds
launch die 3 "0 1 2" NET_CHILD_DIE=1
start=$SECONDS
finish
expect "a killed rank ends the job" test "${rcs[0]}" != 0 -a "${rcs[2]}" != 0
expect "the others say which rank left" has die.0 "rank 1 disconnected from the job's store"
expect "within seconds" test $((SECONDS - start)) -lt 10

# 9. how waits behave over the fabric (SYMTRAIN_HOST_SIZE=1: each rank its own
# host): asked to sleep, they do and the job runs; a malformed value is named
launch sleepwait 2 "0 1" SYMTRAIN_HOST_SIZE=1 SYMTRAIN_WAIT=sleep SYMTRAIN_VERBOSE=1
finish
expect "SYMTRAIN_WAIT=sleep: runs" test "${rcs[*]}" = "0 0"
expect "SYMTRAIN_WAIT=sleep: said" has sleepwait.0 "waits sleep between polls"
launch badwait 2 "0 1" SYMTRAIN_HOST_SIZE=1 SYMTRAIN_WAIT=spin
finish
expect "SYMTRAIN_WAIT=spin: fails" test "${rcs[0]}" != 0 -a "${rcs[1]}" != 0
# the rank that reports first ends the job, so the others may not get to say it:
# the message must be in some rank's log, whichever
expect "SYMTRAIN_WAIT=spin: named" grep -qh "SYMTRAIN_WAIT='spin' is not one of auto, poll or sleep" \
    "$log/badwait.0" "$log/badwait.1"

if [ $fails != 0 ]; then
    for f in "$log"/*; do sed "s|^|$(basename "$f"): |" "$f"; done
    echo "net_bootstrap: $fails check(s) failed"
    exit 1
fi
echo "net_bootstrap: all checks passed"
