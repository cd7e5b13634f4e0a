#!/usr/bin/env bash
# net_sniff.sh — what a sniffer, or an attacker on the path, gets from the env
# bootstrap's all-gather, which carries every PE's fabric address and memory
# keys.
#   net_sniff.sh CHILD PROXY
# Two ranks of CHILD (tests/net_boot_child.c) on loopback, each its own host
# (SYMTRAIN_HOST_SIZE=1: the fabric's records are all-gathered); rank 1
# reaches the store through PROXY (tests/net_wire_proxy.py), which records
# every byte. 1. The job runs, and the bytes hold neither the fabric provider's
# name nor an endpoint address in clear. 2. The proxy flips one bit of an
# all-gather reply: rank 1 refuses it, saying so, and the whole job ends.
set -u
child=$1 proxy=$2
if ! command -v fi_info >/dev/null || ! fi_info -p tcp -t FI_EP_RDM >/dev/null 2>&1; then
    if [ "${CI:-}" = true ]; then echo "FAIL: CI=true, but libfabric offers no tcp RDM endpoint"; exit 1; fi
    echo "SKIP: libfabric offers no tcp RDM endpoint here"
    exit 77
fi
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
fails=0
port=$((20000 + RANDOM % 20000))
expect() { # expect WHAT CONDITION...
    local what=$1
    shift
    if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fails=$((fails + 1)); fi
}

# run NAME [tamper]: rank 0 on the store's port, rank 1 through the proxy
run() {
    local name=$1 mode=${2:-}
    port=$((port + 2))
    python3 "$proxy" $((port + 1)) $port "$log/$name.wire" $mode >"$log/$name.proxy" 2>&1 &
    ppid=$!
    for i in $(seq 100); do grep -q listening "$log/$name.proxy" 2>/dev/null && break; sleep 0.05; done
    local common="WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 SYMTRAIN_BOOT_TIMEOUT=10 SYMTRAIN_HOST_SIZE=1
        SYMTRAIN_OFI_PROVIDER=tcp FI_TCP_IFACE=lo SYMTRAIN_JOB_TOKEN=sniff-$$"
    env $common RANK=0 MASTER_PORT=$port timeout 30 "$child" >"$log/$name.0" 2>&1 &
    p0=$!
    env $common RANK=1 MASTER_PORT=$((port + 1)) timeout 30 "$child" >"$log/$name.1" 2>&1 &
    p1=$!
    wait $p0; rc0=$?
    wait $p1; rc1=$?
    kill $ppid 2>/dev/null
    wait $ppid 2>/dev/null
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

run clear
expect "through the proxy: the job runs" test "$rc0 $rc1" = "0 0"
expect "the proxy saw the traffic" test -s "$log/clear.wire"
expect "no endpoint address or provider in clear on the wire" eval "test -s $log/clear.wire && ! in_clear $log/clear.wire"

run tamper tamper
expect "the proxy altered an all-gather" grep -q tampered "$log/tamper.proxy"
expect "tampered: rank 1 fails" test "$rc1" != 0
expect "tampered: rank 0 ends too" test "$rc0" != 0
expect "tampered: rank 1 says the record does not authenticate" \
    grep -q "record in all-gather 0 from the job's store at 127.0.0.1:$((port + 1)) does not authenticate" "$log/tamper.1"

if [ $fails != 0 ]; then
    for f in "$log"/*.[01] "$log"/*.proxy; do sed "s|^|$(basename "$f"): |" "$f"; done
    echo "net_sniff: $fails check(s) failed"
    exit 1
fi
echo "net_sniff: all checks passed"
