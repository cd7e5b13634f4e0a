#!/usr/bin/env bash
# net_hosts.sh — run a symshmem program across several hosts on this machine.
#
#   net_hosts.sh HOSTS PES_PER_HOST PROGRAM [ARGS...]
#
# Each host is a network namespace with one veth into a private bridge (in its
# own "switch" namespace), address 10.231.0.N/24. The PEs start through the env
# bootstrap (RANK, WORLD_SIZE, MASTER_ADDR = host 0, SYMTRAIN_JOB_TOKEN) with
# the provider in $NET_PROVIDER (default tcp; libfabric's own name, e.g. net):
# PEs of one host share memory, PEs of different hosts talk
# through libfabric over the veths. The namespaces are removed on exit, also on
# failure or interruption. Exits 77 (SKIP) where namespaces cannot be made,
# 1 (FAIL) for that under CI=true (tests/netns.sh).
set -u
provider=${NET_PROVIDER:-tcp}
if ! fi_info -p "$provider" -t FI_EP_RDM >/dev/null 2>&1 && command -v fi_info >/dev/null; then
    # tcp is in every libfabric: without it nothing here tests the fabric
    if [ "$provider" = tcp ] && [ "${CI:-}" = true ]; then
        echo "FAIL: CI=true, but libfabric offers no tcp RDM endpoint here"
        exit 1
    fi
    echo "SKIP: libfabric offers no RDM endpoint of provider $provider here"
    exit 77
fi
hosts=$1 pph=$2
shift 2
prog=$1

. "$(dirname "$0")/netns.sh"
NETNS_TAG="sy$$"
netns_up "$hosts"
rc=$?
[ $rc = 0 ] || exit $rc
tag=$NETNS_TAG
trap 'exit 130' INT TERM

world=$((hosts * pph))
token=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
logdir=$(mktemp -d)
pids=()
for ((h = 0; h < hosts; h++)); do
    for ((l = 0; l < pph; l++)); do
        rank=$((h * pph + l))
        ip netns exec "${tag}h$h" env RANK=$rank WORLD_SIZE=$world LOCAL_RANK=$l \
            LOCAL_WORLD_SIZE=$pph MASTER_ADDR=10.231.0.1 MASTER_PORT=29500 \
            SYMTRAIN_JOB_TOKEN="$token" SYMTRAIN_OFI_PROVIDER="$provider" FI_TCP_IFACE="${tag}a$h" \
            FI_NET_IFACE="${tag}a$h" \
            SYMTRAIN_BOOT_TIMEOUT=60 timeout 300 "$@" >"$logdir/$rank.out" 2>&1 &
        pids+=($!)
    done
done
fail=0
for ((r = 0; r < world; r++)); do
    if ! wait "${pids[$r]}"; then
        echo "rank $r failed"
        fail=1
    fi
done
for ((r = 0; r < world; r++)); do
    sed "s/^/[host $((r / pph)) rank $r] /" "$logdir/$r.out"
done
rm -rf "$logdir"
if [ $fail = 0 ]; then echo "net_hosts: $(basename "$prog") passed on $hosts hosts x $pph PEs"; fi
exit $fail
