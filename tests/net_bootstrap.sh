#!/usr/bin/env bash
# net_bootstrap.sh — the env (torchrun-style) bootstrap on loopback: a normal
# start, and every way it can go wrong. Each must end with a clear message
# within its timeout; none may hang. Among them the attacks of a stranger on
# the network: a flood of connections at the store, a sniffer and a forger on
# the path of the all-gather (PROXY, tests/net_wire_proxy.py).
#   net_bootstrap.sh CHILD PROXY
set -u
child=$1 proxy=$2
fails=0
port=$((20000 + RANDOM % 20000))
log=$(mktemp -d)
flood=
trap 'kill $flood 2>/dev/null; rm -rf "$log"' EXIT

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
expect "the store says it turned them away, in one line" test "$(grep -c "turned away [0-9]* connection(s) without the job token in [0-9.]* s (2 with a wrong proof" "$log/stranger.0")" = 1

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

# 10. a flood at the store: rank 0 may hold only 64 file descriptors; a
# stranger holds 80 connections silent, then knocks 300 times with a wrong
# proof; rank 1 starts meanwhile and must get in at once (not after the silent
# ones time out), and rank 0 sums up what it turned away in one line
port=$((port + 1))
common="WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port SYMTRAIN_BOOT_TIMEOUT=20
    SYMTRAIN_JOB_TOKEN=secret-$$"
(ulimit -n 64 && exec env $common RANK=0 timeout 40 "$child") >"$log/flood.0" 2>&1 &
pids=($!)
python3 - "$port" >"$log/flood.stranger" 2>&1 <<'PY' &
import socket, sys, time
port = int(sys.argv[1])
def conn():
    for _ in range(200):  # until rank 0 listens
        try:
            return socket.create_connection(("127.0.0.1", port))
        except OSError:
            time.sleep(0.05)
    raise SystemExit("rank 0's store never listened")
held = [conn() for _ in range(80)]
print("holding", len(held), flush=True)
for _ in range(300):
    s = conn()
    s.sendall(b"\0" * 32)
    s.close()
print("knocked", flush=True)
time.sleep(15)
PY
flood=$!
for i in $(seq 200); do grep -q knocked "$log/flood.stranger" 2>/dev/null && break; sleep 0.05; done
expect "flood: the stranger holds 80 connections and knocked 300 times" grep -q knocked "$log/flood.stranger"
start=$SECONDS
env $common RANK=1 timeout 40 "$child" >"$log/flood.1" 2>&1 &
pids+=($!)
finish
took=$((SECONDS - start))
kill $flood 2>/dev/null
expect "flood: both ranks start and finish" test "${rcs[*]}" = "0 0"
expect "flood: at once, not after the silent ones time out (took ${took} s)" test $took -lt 5
expect "flood: rank 0 sums up what it turned away in one line" \
    test "$(grep -c "turned away" "$log/flood.0")" = 1
expect "flood: the line counts the wrong proofs" grep -q "turned away [0-9]* connection(s) without the job token in [0-9.]* s (300 with a wrong proof, [0-9]* silent" "$log/flood.0"

# 11. the all-gather on the wire: two ranks, each its own host (the fabric's
# records are all-gathered), rank 1 through PROXY, which records every byte.
# The bytes hold neither the provider's name nor an endpoint address in
# clear; and when the proxy flips one bit of an all-gather reply, rank 1
# refuses it, saying so, and the whole job ends.
# through_proxy NAME [tamper]: rank 0 on the store's port, rank 1 through the proxy
through_proxy() {
    local name=$1 mode=${2:-}
    port=$((port + 2))
    python3 "$proxy" $((port + 1)) $port "$log/$name.wire" $mode >"$log/$name.proxy" 2>&1 &
    local pp=$!
    for i in $(seq 100); do grep -q listening "$log/$name.proxy" 2>/dev/null && break; sleep 0.05; done
    local common="WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 SYMTRAIN_BOOT_TIMEOUT=10 SYMTRAIN_HOST_SIZE=1
        SYMTRAIN_OFI_PROVIDER=tcp FI_TCP_IFACE=lo SYMTRAIN_JOB_TOKEN=secret-$$"
    pids=()
    env $common RANK=0 MASTER_PORT=$port timeout 30 "$child" >"$log/$name.0" 2>&1 &
    pids+=($!)
    env $common RANK=1 MASTER_PORT=$((port + 1)) timeout 30 "$child" >"$log/$name.1" 2>&1 &
    pids+=($!)
    finish
    kill $pp 2>/dev/null
    wait $pp 2>/dev/null
}
# in_clear FILE: the wire holds a provider record ("tcp;ofi_rxm", NUL-padded
# as the fabric's record pads it) or an IPv4 loopback socket address (family
# 2, a port, 127.0.0.1, 8 zeros: what the tcp provider names endpoints by)
in_clear() {
    python3 -c '
import re, sys
b = open(sys.argv[1], "rb").read()
sys.exit(0 if b"tcp;ofi_rxm\0" in b or re.search(rb"\x02\x00..\x7f\x00\x00\x01\x00{8}", b, re.S) else 1)' "$1"
}
if fi_info -p tcp -t FI_EP_RDM >/dev/null 2>&1; then
    through_proxy sniff
    expect "sniffed: through the proxy the job runs" test "${rcs[*]}" = "0 0"
    expect "sniffed: the proxy saw the traffic" test -s "$log/sniff.wire"
    expect "sniffed: no endpoint address or provider in clear on the wire" \
        eval "test -s $log/sniff.wire && ! in_clear $log/sniff.wire"
    through_proxy tamper tamper
    expect "tampered: the proxy altered an all-gather" grep -q tampered "$log/tamper.proxy"
    expect "tampered: both ranks fail" test "${rcs[0]}" != 0 -a "${rcs[1]}" != 0
    expect "tampered: rank 1 says the record does not authenticate" \
        grep -q "record in all-gather 0 from the job's store at 127.0.0.1:$((port + 1)) does not authenticate" "$log/tamper.1"
elif [ "${CI:-}" = true ]; then
    expect "CI=true: libfabric offers a tcp RDM endpoint" false
else
    echo "SKIP the all-gather on the wire: libfabric offers no tcp RDM endpoint here"
fi

if [ $fails != 0 ]; then
    for f in "$log"/*; do sed "s|^|$(basename "$f"): |" "$f"; done
    echo "net_bootstrap: $fails check(s) failed"
    exit 1
fi
echo "net_bootstrap: all checks passed"
