#!/usr/bin/env bash
# net_store_flood.sh — strangers flood rank 0's store while a job starts.
#   net_store_flood.sh CHILD
# Rank 0 of CHILD (tests/net_boot_child.c) runs under a limit of 64 file
# descriptors. A stranger opens 80 connections to its store and holds them
# silent, then knocks 300 times more with a wrong proof of the token; rank 1
# starts meanwhile. The job must start and finish, at once (not after the
# silent ones time out), and rank 0 must sum up what it turned away in one line.
set -u
child=$1
log=$(mktemp -d)
trap 'kill $flood 2>/dev/null; rm -rf "$log"' EXIT
fails=0
port=$((20000 + RANDOM % 20000))
expect() { # expect WHAT CONDITION...
    local what=$1
    shift
    if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fails=$((fails + 1)); fi
}
common="WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port SYMTRAIN_BOOT_TIMEOUT=20
    SYMTRAIN_JOB_TOKEN=flood-$$"
(ulimit -n 64 && exec env $common RANK=0 timeout 40 "$child") >"$log/0" 2>&1 &
p0=$!
python3 - "$port" >"$log/flood" 2>&1 <<'PY' &
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
for i in $(seq 200); do grep -q holding "$log/flood" 2>/dev/null && break; sleep 0.05; done
expect "the stranger holds 80 connections" grep -q "holding 80" "$log/flood"
start=$SECONDS
env $common RANK=1 timeout 40 "$child" >"$log/1" 2>&1 &
p1=$!
wait $p0; rc0=$?
wait $p1; rc1=$?
took=$((SECONDS - start))
kill $flood 2>/dev/null
expect "both ranks start and finish" test "$rc0 $rc1" = "0 0"
expect "at once, not after the silent ones time out (took ${took} s)" test $took -lt 4
expect "rank 0 sums up what it turned away in one line" \
    test "$(grep -c "turned away" "$log/0")" = 1
expect "the line names the wrong proofs" grep -q "turned away [0-9]* connection(s) without the job token in [0-9.]* s ([0-9]* with a wrong proof, [0-9]* silent" "$log/0"
if [ $fails != 0 ]; then
    for f in "$log"/*; do sed "s|^|$(basename "$f"): |" "$f"; done
    echo "net_store_flood: $fails check(s) failed"
    exit 1
fi
echo "net_store_flood: all checks passed"
