#!/usr/bin/env bash
# net_attack.sh — a stranger attacks a running job's fabric data plane.
#   net_attack.sh VICTIM ATTACKER
# Two PEs of tests/net_victim.c start through the env bootstrap on loopback,
# each its own "host" (SYMTRAIN_HOST_SIZE=1), so they talk over the tcp
# provider. tests/net_attacker.c, plain libfabric, then reaches every fabric
# endpoint the PEs listen on (found with ss, as a port scan would) and tries to
# read their globals and write their heaps with the keys a stranger would
# guess, and sends them forged batches of puts (messages their CPUs apply).
# It must get nothing; each PE must say it dropped the forged messages; the
# job must finish with heap and globals intact.
set -u
victim=$1 attacker=$2
provider=tcp
if ! command -v fi_info >/dev/null || ! fi_info -p "$provider" -t FI_EP_RDM >/dev/null 2>&1; then
    if [ "${CI:-}" = true ]; then echo "FAIL: CI=true, but libfabric offers no tcp RDM endpoint"; exit 1; fi
    echo "SKIP: libfabric offers no tcp RDM endpoint here"
    exit 77
fi
if ! command -v ss >/dev/null; then
    if [ "${CI:-}" = true ]; then echo "FAIL: CI=true, but ss (iproute2) is missing"; exit 1; fi
    echo "SKIP: ss (iproute2) is needed to find the job's endpoints"
    exit 77
fi
log=$(mktemp -d)
trap 'kill ${pids[*]} 2>/dev/null; rm -rf "$log"' EXIT
port=$((20000 + RANDOM % 20000))
token=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
pids=()
for r in 0 1; do
    env RANK=$r WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port SYMTRAIN_JOB_TOKEN="$token" \
        SYMTRAIN_BOOT_TIMEOUT=20 SYMTRAIN_HOST_SIZE=1 SYMTRAIN_OFI_PROVIDER=$provider \
        FI_TCP_IFACE=lo NET_ATTACK_DONE="$log/done" timeout 60 "$victim" >"$log/pe$r" 2>&1 &
    pids+=($!)
done
fail=0
# both PEs up (their fabric endpoints exist once they say ready)
for i in $(seq 200); do
    grep -q ready "$log/pe0" 2>/dev/null && grep -q ready "$log/pe1" 2>/dev/null && break
    sleep 0.1
done
targets=()
for r in 0 1; do
    pid=$(sed -n 's/.*ready, pid \([0-9]*\).*/\1/p' "$log/pe$r")
    [ -n "$pid" ] || { echo "FAIL: PE $r never got ready"; fail=1; continue; }
    # every TCP port the PE listens on, but the job's store
    for a in $(ss -Htlnp | grep "pid=$pid," | awk '{print $4}'); do
        p=${a##*:}
        [ "$p" = "$port" ] && continue
        h=${a%:*}
        case $h in 127.*) ;; *) h=127.0.0.1 ;; esac
        targets+=("$h:$p")
    done
done
echo "net_attack: endpoints found: ${targets[*]:-none}"
[ ${#targets[@]} -gt 0 ] || { echo "FAIL: found no fabric endpoint to attack"; fail=1; }
if [ ${#targets[@]} -gt 0 ]; then
    timeout 120 "$attacker" "$provider" "${targets[@]}" >"$log/attacker" 2>&1
    arc=$?
    cat "$log/attacker"
    if [ $arc = 3 ]; then echo "FAIL: the stranger read or wrote the job's memory"; fail=1;
    elif [ $arc != 0 ]; then echo "FAIL: the attacker could not run (exit $arc)"; fail=1; fi
fi
touch "$log/done"
for r in 0 1; do
    wait "${pids[$r]}" || { echo "FAIL: PE $r failed"; fail=1; }
done
for r in 0 1; do sed "s/^/[PE $r] /" "$log/pe$r"; done
for r in 0 1; do
    grep -q "heap and globals intact" "$log/pe$r" || { echo "FAIL: PE $r did not finish intact"; fail=1; }
    grep -q "dropped [0-9]* fabric messages in all that did not carry this job's key" "$log/pe$r" ||
        { echo "FAIL: PE $r did not say it dropped the forged messages"; fail=1; }
done
[ $fail = 0 ] && echo "net_attack: the stranger got nothing and the job finished intact"
exit $fail
