#!/usr/bin/env bash
# net_ci.sh — where several hosts cannot be made (no network namespaces), the
# multi-host tests SKIP, except under CI (CI=true, set by the CI runner): there
# they FAIL, so a CI machine cannot pass without testing the fabric.
#   net_ci.sh PROGRAM
# Runs tests/net_hosts.sh (and so tests/netns.sh) with an `ip` that cannot
# create namespaces first on PATH, with CI unset, CI=false and CI=true.
set -u
prog=$1
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
printf '#!/bin/sh\necho "ip: cannot create namespaces (stub)" >&2\nexit 1\n' >"$tmp/ip"
chmod +x "$tmp/ip"

# case NAME WANT_RC WANT_REGEX CI_VALUE ("unset" to leave it out)
case_() {
    local name=$1 want=$2 re=$3 ci=$4 out rc
    if [ "$ci" = unset ]; then
        out=$(env -u CI PATH="$tmp:$PATH" bash "$here/net_hosts.sh" 2 1 "$prog" 2>&1)
    else
        out=$(env CI="$ci" PATH="$tmp:$PATH" bash "$here/net_hosts.sh" 2 1 "$prog" 2>&1)
    fi
    rc=$?
    [ "$rc" = "$want" ] || fail "$name: net_hosts.sh exited $rc, want $want: $out"
    echo "$out" | grep -qE "$re" || fail "$name: output lacks /$re/: $out"
    [ "$rc" != "$want" ] || echo "ok   $name: exit $rc"
}
case_ "no CI: SKIP" 77 '^SKIP: cannot create network namespaces' unset
case_ "CI=false: SKIP" 77 '^SKIP: cannot create network namespaces' false
case_ "CI=true: FAIL" 1 '^FAIL: CI=true, but cannot create network namespaces' true

if [ "$fails" -ne 0 ]; then
    echo "net_ci: FAIL ($fails)"
    exit 1
fi
echo "net_ci: PASS"
