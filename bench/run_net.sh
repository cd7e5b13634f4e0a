#!/usr/bin/env bash
# run_net.sh — across hosts: symbench over libfabric's tcp provider beside Open
# MPI over TCP, between the same two network-namespace hosts, in one run.
#
#   bench/run_net.sh [BUILD_DIR]          (root; from the repository root)
#
# Two namespaces joined by a bridge (tests/netns.sh), one PE each. symtrain's
# PEs start through the env bootstrap; Open MPI's through mpirun with an agent
# that starts its daemon in the other namespace instead of ssh. Both are kept
# off shared memory and unbound (two processes on two cores). symtrain uses the
# provider it picks by default (libfabric 1.17: net, its native RDM endpoint
# over TCP), or PROVIDER=name (e.g. PROVIDER="tcp;ofi_rxm"). Measured:
#   put   symbench put bandwidth (putmem_nbi window + quiet) beside MPI_Put
#         (window + MPI_Win_flush, osc pt2pt), 1 B .. 16 MiB;
#   allreduce  symbench allreduce (float, symmetric buffers) beside
#         MPI_Allreduce, 8 B .. 64 MiB;
# then a table of both with the ratio ours / MPI.
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${1:-build}
OUT=${OUTDIR:-$BUILD/bench-results/net-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
. tests/netns.sh
NETNS_TAG=syb$$
netns_up 2 || exit $?

mpicc -O2 bench/mpi_coll.c -o "$OUT/mpi_coll" && mpicc -O2 bench/mpi_baseline.c -o "$OUT/mpi_baseline" || exit 1
agent=$OUT/agent.sh
cat >"$agent" <<EOF
#!/bin/bash
# mpirun's remote agent: "agent [options] HOST CMD..." runs CMD in HOST's namespace
while [[ "\$1" == -* ]]; do shift; done
host=\$1; shift
case "\$host" in 10.231.0.1) ns=${NETNS_TAG}h0 ;; *) ns=${NETNS_TAG}h1 ;; esac
exec ip netns exec "\$ns" bash -c "\$*"
EOF
chmod +x "$agent"

token=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
# sym OUTFILE ARGS...: symbench on the two hosts (one port for both ranks).
sym() {
    local out=$1 port=$((29600 + RANDOM % 300))
    shift
    for h in 0 1; do
        ip netns exec "${NETNS_TAG}h$h" env RANK=$h WORLD_SIZE=2 MASTER_ADDR=10.231.0.1 \
            MASTER_PORT=$port SYMTRAIN_JOB_TOKEN="$token" SYMTRAIN_OFI_PROVIDER="${PROVIDER:-}" \
            FI_TCP_IFACE="${NETNS_TAG}a$h" FI_NET_IFACE="${NETNS_TAG}a$h" SYMTRAIN_VERBOSE=1 \
            SYMTRAIN_SYMMETRIC_SIZE=1G \
            timeout 600 "$BUILD/symbench" "$@" >"$out.$h" 2>&1 &
    done
    wait
    mv "$out.0" "$out"
    rm -f "$out.1"
}
mpi() { # mpi OUTFILE PROGRAM ARGS...
    local out=$1
    shift
    ip netns exec "${NETNS_TAG}h0" timeout 600 mpirun --allow-run-as-root --bind-to none -np 2 \
        --host 10.231.0.1,10.231.0.2 --mca plm_rsh_agent "$agent" --mca pml ob1 --mca osc pt2pt \
        --mca btl tcp,self --mca btl_tcp_if_include 10.231.0.0/24 \
        --mca oob_tcp_if_include 10.231.0.0/24 "$@" >"$out" 2>&1
}

echo "# machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); two namespace hosts over a veth bridge"
sym "$OUT/sym_pingpong.txt" pingpong --no-bind --iters 1000 --reps 3
mpi "$OUT/mpi_pingpong.txt" "$OUT/mpi_baseline" pingpong --iters 1000 --reps 3
grep -m1 "fabric: provider" "$OUT/sym_pingpong.txt"
sym "$OUT/sym_put.txt" put --no-bind --max-size 16M --iters 1000 --iters-large 20 --reps 3
mpi "$OUT/mpi_put.txt" "$OUT/mpi_baseline" put --max-size 16M --iters 1000 --iters-large 20 --reps 3
sym "$OUT/sym_allreduce.txt" allreduce -e 64M -f 2 -r 3 -i 300 --symmetric
mpi "$OUT/mpi_allreduce.txt" "$OUT/mpi_coll" allreduce $((64 << 20))

python3 - "$OUT" <<'PY'
import sys
out = sys.argv[1]
def table(path, marker, col):
    rows, on = {}, False
    for line in open(path):
        if line.startswith('#'):
            if marker in line:
                on = True
            elif 'size' not in line and 'bytes' not in line:  # column lines keep the table
                on = False
            continue
        f = line.split()
        if on and len(f) > col:
            try:
                rows[int(f[0])] = float(f[col])
            except ValueError:
                pass
    return rows
sp = table(f"{out}/sym_put.txt", "bandwidth", 1)
mp = table(f"{out}/mpi_put.txt", "bandwidth", 1)
def one(path, marker):
    r = table(path, marker, 1)
    return next(iter(r.values())) if r else float('nan')
sl, ml = one(f"{out}/sym_pingpong.txt", "pingpong"), one(f"{out}/mpi_pingpong.txt", "pingpong")
print(f"\n# ping-pong, one way: symbench {sl:.2f} us, MPI {ml:.2f} us, ratio MPI/ours {ml / sl:.2f}")
print("\n# put bandwidth, GB/s: symbench vs MPI_Put (Open MPI, TCP)")
print(f"{'size':>10} {'symtrain':>10} {'MPI':>10} {'ratio':>7}")
for s in sorted(sp):
    if s in mp:
        r = sp[s] / mp[s] if mp[s] > 0 else float('inf')
        print(f"{s:>10} {sp[s]:>10.4f} {mp[s]:>10.4f} {r:>7.2f}")
sa = table(f"{out}/sym_allreduce.txt", "symbench allreduce", 4)
ma = table(f"{out}/mpi_allreduce.txt", "MPI allreduce", 3)
st = table(f"{out}/sym_allreduce.txt", "symbench allreduce", 2)
mt = table(f"{out}/mpi_allreduce.txt", "MPI allreduce", 1)
print("\n# all-reduce (float, 2 PEs): time and busbw; symbench vs MPI_Allreduce")
print(f"{'size':>10} {'sym_us':>10} {'MPI_us':>10} {'sym_busbw':>10} {'MPI_busbw':>10} {'ratio':>7}")
for s in sorted(sa):
    if s in ma:
        r = mt[s] / st[s]
        print(f"{s:>10} {st[s]:>10.1f} {mt[s]:>10.1f} {sa[s]:>10.4f} {ma[s]:>10.4f} {r:>7.2f}")
PY
echo "raw output: $OUT"
