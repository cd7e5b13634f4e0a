#!/usr/bin/env bash
# train_memstore_hosts.sh TEST SYMRUN SYMTRAIN — runs train_memstore_hosts
# (in-memory snapshots across hosts) on 3 network-namespace "hosts" made here
# (tests/netns.sh), named to it by NETNS_TAG; they are removed on exit, also
# on failure. Exits 77 (SKIP) where namespaces cannot be made or libfabric has
# no tcp endpoint, 1 (FAIL) for that under CI=true.
set -u
test=$1
shift
if command -v fi_info >/dev/null && ! fi_info -p tcp -t FI_EP_RDM >/dev/null 2>&1; then
    if [ "${CI:-}" = true ]; then
        echo "FAIL: CI=true, but libfabric offers no tcp RDM endpoint here"
        exit 1
    fi
    echo "SKIP: libfabric offers no tcp RDM endpoint here"
    exit 77
fi
. "$(dirname "$0")/netns.sh"
NETNS_TAG="sm$$"
netns_up 3
rc=$?
[ $rc = 0 ] || exit $rc
trap 'exit 130' INT TERM
NETNS_TAG=$NETNS_TAG "$test" "$@"
