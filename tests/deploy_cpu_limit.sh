#!/usr/bin/env bash
# deploy_cpu_limit.sh — a container's CPU limit (the cgroup's CPU quota, as a
# Kubernetes `resources.limits.cpu` sets) caps the BLAS threads per PE: in a
# cgroup allowed one CPU, `symtrain train` uses 1 thread where it otherwise
# uses one per core. Needs root and a writable cgroup hierarchy (v1 or v2);
# SKIPs (77) elsewhere, and where the machine has a single core.
#   deploy_cpu_limit.sh SYMTRAIN
set -u
symtrain=$1
cores=$(nproc --all)
[ "$cores" -ge 2 ] || { echo "SKIP: one core: a 1-CPU limit changes nothing"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "SKIP: making a cgroup needs root"; exit 77; }
cg=""
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then # v2
    cg=/sys/fs/cgroup/symtrain-test-$$
    mkdir "$cg" 2>/dev/null && echo "100000 100000" >"$cg/cpu.max" 2>/dev/null || cg=""
elif [ -d /sys/fs/cgroup/cpu ]; then # v1
    cg=/sys/fs/cgroup/cpu/symtrain-test-$$
    mkdir "$cg" 2>/dev/null && echo 100000 >"$cg/cpu.cfs_period_us" &&
        echo 100000 >"$cg/cpu.cfs_quota_us" 2>/dev/null || cg=""
fi
[ -n "$cg" ] || { echo "SKIP: cannot make a cgroup with a CPU quota here"; exit 77; }
tmp=$(mktemp -d)
trap 'rmdir "$cg" 2>/dev/null; rm -rf "$tmp"' EXIT
job=(train --generated --train-samples 128 --test-samples 64 --steps 2 --batch 16)
fails=0
# outside the cgroup: a thread per core
(cd "$tmp" && "$symtrain" "${job[@]}") >"$tmp/free.out" 2>&1
grep -q "1 PE x $cores BLAS threads" "$tmp/free.out" ||
    { echo "FAIL: without a limit, want $cores BLAS threads:"; cat "$tmp/free.out"; fails=1; }
# inside: the process joins the cgroup, then becomes symtrain
(cd "$tmp" && sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$cg" "$symtrain" "${job[@]}") \
    >"$tmp/limited.out" 2>&1
grep -q "1 PE x 1 BLAS thread " "$tmp/limited.out" ||
    { echo "FAIL: with a 1-CPU quota, want 1 BLAS thread:"; cat "$tmp/limited.out"; fails=1; }
[ $fails = 0 ] && echo "PASS: $cores BLAS threads without a limit, 1 under a 1-CPU quota"
exit $fails
