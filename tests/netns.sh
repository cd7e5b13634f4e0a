# netns.sh — sourced by tests and benchmarks that need several hosts on this
# machine: netns_up N makes N network namespaces ${NETNS_TAG}h0.. joined by a
# bridge in ${NETNS_TAG}sw, host i at 10.231.0.(i+1)/24 on interface
# ${NETNS_TAG}a<i>; netns_down removes them (also registered as the EXIT trap).
# netns_up returns 77 (SKIP) where namespaces cannot be made; under CI (CI=true,
# set by the CI runner, which runs as root) that is a failure instead (1), so a
# CI machine that cannot make them does not pass without testing the fabric.
NETNS_TAG=${NETNS_TAG:-sy$$}
netns_list=()

# netns_skip WHY: SKIP (77), or FAIL (1) under CI.
netns_skip() {
    if [ "${CI:-}" = true ]; then
        echo "FAIL: CI=true, but $1: the multi-host tests must run in CI"
        return 1
    fi
    echo "SKIP: $1"
    return 77
}

netns_down() {
    for ns in "${netns_list[@]}"; do ip netns del "$ns" 2>/dev/null; done
    netns_list=()
}

netns_up() {
    local hosts=$1 h ns
    if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null 2>&1; then
        netns_skip "several hosts need network namespaces (root and iproute2)"
        return
    fi
    trap netns_down EXIT
    if ! ip netns add "${NETNS_TAG}sw" 2>/dev/null; then
        netns_skip "cannot create network namespaces here"
        return
    fi
    netns_list+=("${NETNS_TAG}sw")
    ip -n "${NETNS_TAG}sw" link add br0 type bridge && ip -n "${NETNS_TAG}sw" link set br0 up || return 1
    for ((h = 0; h < hosts; h++)); do
        ns="${NETNS_TAG}h$h"
        ip netns add "$ns" || return 1
        netns_list+=("$ns")
        ip link add "${NETNS_TAG}a$h" type veth peer name "${NETNS_TAG}b$h" || return 1
        ip link set "${NETNS_TAG}a$h" netns "$ns"
        ip link set "${NETNS_TAG}b$h" netns "${NETNS_TAG}sw"
        ip -n "${NETNS_TAG}sw" link set "${NETNS_TAG}b$h" master br0 up
        ip -n "$ns" addr add "10.231.0.$((h + 1))/24" dev "${NETNS_TAG}a$h"
        ip -n "$ns" link set "${NETNS_TAG}a$h" up
        ip -n "$ns" link set lo up
    done
}
