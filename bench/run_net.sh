#!/usr/bin/env bash
# run_net.sh — across hosts: symbench over libfabric's tcp provider beside Open
# MPI over TCP, between the same two network-namespace hosts, in one run.
#
#   bench/run_net.sh [BUILD_DIR]          (root; from the repository root)
#   PASSES=3 PROVIDER=name OUTDIR=dir     (optional)
#
# Two namespaces joined by a bridge (tests/netns.sh), one PE each. symtrain's
# PEs start through the env bootstrap; Open MPI's through mpirun with an agent
# that starts its daemon in the other namespace instead of ssh. Both are kept
# off shared memory and unbound (two processes on two cores). symtrain uses the
# provider it picks by default (libfabric 1.17: net, its native RDM endpoint
# over TCP), or PROVIDER=name (e.g. PROVIDER="tcp;ofi_rxm"). Measured:
#   put   symbench put latency (putmem + quiet) and bandwidth (putmem_nbi
#         window + quiet) beside MPI_Put (+ MPI_Win_flush; window + flush,
#         osc pt2pt), 1 B .. 16 MiB; both wait for the target to have the data;
#   allreduce  symbench allreduce (float, symmetric buffers) beside
#         MPI_Allreduce, 8 B .. 64 MiB;
# PASSES times (default 3), symtrain and MPI in turn, so that both meet the
# same spells of noise; the tables keep each one's best pass per size, with
# the ratio ours / MPI.
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
passes=${PASSES:-3}
for ((p = 1; p <= passes; p++)); do
    sym "$OUT/sym_pingpong.$p.txt" pingpong --no-bind --iters 1000 --reps 3
    mpi "$OUT/mpi_pingpong.$p.txt" "$OUT/mpi_baseline" pingpong --iters 1000 --reps 3
    [ $p = 1 ] && grep -m1 "fabric: provider" "$OUT/sym_pingpong.1.txt"
    sym "$OUT/sym_put.$p.txt" put --no-bind --max-size 16M --iters 1000 --iters-large 20 --reps 3
    mpi "$OUT/mpi_put.$p.txt" "$OUT/mpi_baseline" put --max-size 16M --iters 1000 --iters-large 20 --reps 3
    sym "$OUT/sym_allreduce.$p.txt" allreduce -e 64M -f 2 -r 3 -i 300 --symmetric
    mpi "$OUT/mpi_allreduce.$p.txt" "$OUT/mpi_coll" allreduce $((64 << 20))
done

python3 - "$OUT" "$passes" <<'PY'
import sys
out, passes = sys.argv[1], int(sys.argv[2])
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
def best(name, marker, col, pick):
    """Each size's best over the passes (pick: max for bandwidth, min for time)."""
    rows = {}
    for p in range(1, passes + 1):
        for s, v in table(f"{out}/{name}.{p}.txt", marker, col).items():
            rows[s] = pick(rows[s], v) if s in rows else v
    return rows
sp = best("sym_put", "bandwidth", 1, max)
mp = best("mpi_put", "bandwidth", 1, max)
sl = best("sym_put", "latency", 1, min)
ml = best("mpi_put", "latency", 1, min)
spp = best("sym_pingpong", "pingpong", 1, min)
mpp = best("mpi_pingpong", "pingpong", 1, min)
spp, mpp = next(iter(spp.values()), float('nan')), next(iter(mpp.values()), float('nan'))
print(f"\n# best of {passes} passes each")
print(f"\n# ping-pong, one way: symbench {spp:.2f} us, MPI {mpp:.2f} us, ratio MPI/ours {mpp / spp:.2f}")
print("\n# put latency, us (put + quiet / MPI_Put + MPI_Win_flush), ratio MPI/ours")
print(f"{'size':>10} {'symtrain':>10} {'MPI':>10} {'ratio':>7}")
for s in sorted(sl):
    if s in ml and s in (1, 8, 64, 512, 4096, 65536, 1 << 20, 16 << 20):
        print(f"{s:>10} {sl[s]:>10.1f} {ml[s]:>10.1f} {ml[s] / sl[s]:>7.2f}")
print("\n# put bandwidth, GB/s: symbench vs MPI_Put (Open MPI, TCP)")
print(f"{'size':>10} {'symtrain':>10} {'MPI':>10} {'ratio':>7}")
for s in sorted(sp):
    if s in mp:
        r = sp[s] / mp[s] if mp[s] > 0 else float('inf')
        print(f"{s:>10} {sp[s]:>10.4f} {mp[s]:>10.4f} {r:>7.2f}")
sa = best("sym_allreduce", "symbench allreduce", 4, max)
ma = best("mpi_allreduce", "MPI allreduce", 3, max)
st = best("sym_allreduce", "symbench allreduce", 2, min)
mt = best("mpi_allreduce", "MPI allreduce", 1, min)
print("\n# all-reduce (float, 2 PEs): time and busbw; symbench vs MPI_Allreduce")
print(f"{'size':>10} {'sym_us':>10} {'MPI_us':>10} {'sym_busbw':>10} {'MPI_busbw':>10} {'ratio':>7}")
for s in sorted(sa):
    if s in ma:
        r = mt[s] / st[s]
        print(f"{s:>10} {st[s]:>10.1f} {mt[s]:>10.1f} {sa[s]:>10.4f} {ma[s]:>10.4f} {r:>7.2f}")
PY
echo "raw output: $OUT"
