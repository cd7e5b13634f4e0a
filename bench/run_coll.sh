#!/usr/bin/env bash
# run_coll.sh — the training collectives on this machine: symbench beside Open
# MPI's MPI_Allreduce and Gloo's all-reduce (ring and halving-doubling), same
# sizes (8 B .. 256 MiB, x2), same PE count, in one run, and the ratios.
#
#   bench/run_coll.sh [BUILD_DIR] [NPES]          (from the repository root)
#
# Open MPI runs on shared memory (btl vader) with its ranks bound to cores, as
# mpirun does by default; Gloo over its TCP transport on loopback (PyTorch's CPU
# backend has no shared-memory path). symbench runs twice: symmetric buffers
# (in place, the API's fast path, how symtrain reduces gradients) and private
# ones (out of place, what MPI_Allreduce is given). Each program is run ROUNDS
# times (default 2) alternating, and each row keeps its best, so a burst of load
# cannot land on one program only.
set -u
cd "$(dirname "$0")/.."
BUILD=${1:-build}
NP=${2:-2}
ROUNDS=${ROUNDS:-2}
MAX=${MAX:-268435456}
OUT=${OUTDIR:-$BUILD/bench-results/coll-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
mpicc -O2 bench/mpi_coll.c -o "$OUT/mpi_coll" || exit 1
have_gloo=0
if [ -f /usr/include/gloo/allreduce_ring.h ] && g++ -O2 bench/gloo_allreduce.cc -o "$OUT/gloo_allreduce" -lgloo -lpthread 2>"$OUT/gloo_build.log"; then
    have_gloo=1
else
    echo "# Gloo not found (apt-get install libgloo-dev): its columns are left out"
fi
export SYMTRAIN_SYMMETRIC_SIZE=$(( (2 * MAX >> 20) + 256 ))M
for ((r = 0; r < ROUNDS; r++)); do
    "$BUILD/symrun" -n "$NP" "$BUILD/symbench" allreduce -e "$MAX" -r 3 -i 2000 >"$OUT/sym.$r" 2>&1
    mpirun --allow-run-as-root --oversubscribe -np "$NP" --mca btl self,vader \
        "$OUT/mpi_coll" allreduce "$MAX" >"$OUT/mpi.$r" 2>&1
    if [ $have_gloo = 1 ]; then
        for a in ring hd; do
            rm -rf "$OUT/store" && mkdir -p "$OUT/store"
            "$BUILD/symrun" -n "$NP" --timeout 900 "$OUT/gloo_allreduce" "$a" "$OUT/store" "$MAX" \
                >"$OUT/gloo_$a.$r" 2>&1
        done
    fi
done

python3 - "$OUT" "$ROUNDS" "$have_gloo" "$NP" <<'PY'
import sys
out, rounds, have_gloo, np = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4]
def best(name, tcol, bcol):
    t, b = {}, {}
    for r in range(rounds):
        try:
            for line in open(f"{out}/{name}.{r}"):
                f = line.split()
                if not f or line.startswith('#'):
                    continue
                try:
                    s = int(f[0])
                    tv, bv = float(f[tcol]), float(f[bcol])
                except (ValueError, IndexError):
                    continue
                if s not in t or tv < t[s]:
                    t[s], b[s] = tv, bv
        except FileNotFoundError:
            pass
    return t, b
st, sb = best("sym", 2, 4)       # symmetric, in place
pt, pb = best("sym", 5, 7)       # private, out of place
mt, mb = best("mpi", 1, 3)
gr = best("gloo_ring", 1, 3) if have_gloo else ({}, {})
gh = best("gloo_hd", 1, 3) if have_gloo else ({}, {})
print(f"# all-reduce, float sum, {np} PEs; busbw in GB/s (nccl-tests definition); best of {rounds} rounds")
hdr = f"{'size':>10} {'sym_us':>9} {'sym_busbw':>9} {'priv_busbw':>10} {'MPI_us':>9} {'MPI_busbw':>9}"
if have_gloo:
    hdr += f" {'Gloo_busbw':>10}"
hdr += f" {'sym/MPI':>8} {'priv/MPI':>8}"
if have_gloo:
    hdr += f" {'sym/Gloo':>8}"
print(hdr)
for s in sorted(st):
    if s not in mt:
        continue
    g = max(gr[1].get(s, 0), gh[1].get(s, 0)) if have_gloo else 0
    line = f"{s:>10} {st[s]:>9.2f} {sb[s]:>9.3f} {pb.get(s, 0):>10.3f} {mt[s]:>9.2f} {mb[s]:>9.3f}"
    if have_gloo:
        line += f" {g:>10.3f}"
    line += f" {mt[s] / st[s]:>8.2f} {mt[s] / pt[s] if s in pt else 0:>8.2f}"
    if have_gloo:
        gt = min(gr[0].get(s, 1e30), gh[0].get(s, 1e30))
        line += f" {gt / st[s]:>8.2f}"
    print(line)
print("(ratios are time ratios: the baseline's time over ours, >1 = faster; equal to the busbw ratios)")
PY
echo "raw output: $OUT"
